// Automatic mixed precision on the CPU (libtorch's at::autocast, CPU half; Note [Autocast] in
// core/autocast.cpp). While it is enabled on a thread, the products and convolutions (mm, addmm,
// bmm, baddbmm, and what is built on them: matmul, linear, einsum, conv1d/2d/3d, attention) cast
// their float32 arguments to bfloat16 and return bfloat16; the losses, cdist and prod cast
// bfloat16 arguments up to float32; every other op runs in the dtype of its inputs. As in
// libtorch 1.13, the only lower-precision dtype on the CPU is bfloat16.
#pragma once
#include "fw/dtype.h"

namespace fw::autocast {

bool is_cpu_enabled();
void set_cpu_enabled(bool enabled);
ScalarType get_autocast_cpu_dtype();
// Only kBFloat16 is accepted (an error names any other dtype).
void set_autocast_cpu_dtype(ScalarType dtype);
// The casts of float32 leaf tensors that require grad (parameters) are kept until clear_cache(),
// so a weight used by several ops in a step is converted once. fw also recasts a cached tensor that
// was written in place since (its version changed), where libtorch would return the stale copy.
void clear_cache();
bool is_autocast_cache_enabled();
void set_autocast_cache_enabled(bool enabled);
// Nesting depth of autocast regions on this thread (the Python context manager's bookkeeping).
int increment_nesting();
int decrement_nesting();

// libtorch's CUDA autocast switches, so that programs guarding them with cuda::is_available()
// compile: fw has no CUDA tensors, so is_enabled() is false, set_enabled(true) is an error naming
// set_cpu_enabled, and the GPU dtype (float16, as libtorch's default) only records a choice.
bool is_enabled();
void set_enabled(bool enabled);
ScalarType get_autocast_gpu_dtype();
void set_autocast_gpu_dtype(ScalarType dtype);

}  // namespace fw::autocast

namespace fw {

// Enables (or disables) CPU autocast for a scope, as `with torch.autocast("cpu", dtype=...,
// enabled=..., cache_enabled=...)`: restores the previous state on exit and clears the cast cache
// when the outermost region ends.
class AutocastGuard {
 public:
  explicit AutocastGuard(bool enabled = true, ScalarType dtype = kBFloat16, bool cache_enabled = true);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  bool prev_enabled_, prev_cache_;
};

}  // namespace fw
