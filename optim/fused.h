// Helpers of the optimizers' fused update kernels: each parameter is updated in one pass over
// contiguous float/double buffers (param, grad, state), split across threads for large tensors.
#pragma once
#include <cmath>

#include "core/parallel.h"
#include "fw/optim.h"

namespace fw::optim::detail {

// A parameter prepared for a fused update: `work` is the parameter itself when it is a contiguous
// float/double tensor, else a contiguous float copy written back by finish().
struct ParamWork {
  Tensor param, work, grad;
  void finish() {
    if (!work.is_same(param)) param.copy_(work);
  }
};

inline ParamWork prepare(const Tensor& p) {
  ScalarType dt = p.dtype() == kDouble ? kDouble : kFloat;
  Tensor work = p.is_contiguous() && p.dtype() == dt ? p : p.to(dt).contiguous();
  Tensor g = p.grad().to(dt).contiguous();
  FW_CHECK(g.numel() == work.numel(), "[optim] gradient of shape ", p.grad().sizes(), " does not match parameter ",
           p.sizes());
  return {p, work, g};
}

// A state buffer like `work` (contiguous, same dtype), created filled with `init` when undefined.
inline Tensor& ensure_state(Tensor& s, const Tensor& work, double init = 0) {
  if (!s.defined()) s = full_like(work, init);
  else if (!s.is_contiguous() || s.dtype() != work.dtype()) s = s.to(work.dtype()).contiguous();
  FW_CHECK(s.numel() == work.numel(), "[optim] state of shape ", s.sizes(), " does not match parameter ", work.sizes());
  return s;
}

template <class T>
T* ptr(const Tensor& t) {
  return t.defined() ? t.data_ptr<T>() : nullptr;
}

// Calls body.template operator()<T>() with T the work dtype's C++ type.
template <class F>
void visit_work(const Tensor& work, F&& body) {
  if (work.dtype() == kDouble) body.template operator()<double>();
  else body.template operator()<float>();
}

// body(i) for i in [0, n), in parallel chunks for large n.
// body(lo, hi) over [0, n) in parallel chunks (for loops the compiler should vectorise).
template <class F>
void for_each_range(int64_t n, const F& body) {
  fw::detail::parallel_for(0, n, fw::detail::kGrainSize / 4, body);
}

template <class F>
void for_each_index(int64_t n, const F& body) {
  fw::detail::parallel_for(0, n, fw::detail::kGrainSize / 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i++) body(i);
  });
}

}  // namespace fw::optim::detail
