// Note [Autocast]
// CPU autocast as libtorch 1.13 has it (ATen's AutocastCPU key), at fw's dispatch door:
//  - dispatch() checks one thread-local flag (ThreadState::autocast). When it is set and the op
//    is one of the lower-precision list (mm, addmm, bmm, baddbmm, conv2d), autocast_dispatch casts
//    the float32 and float16 arguments to bfloat16 (float64 ones stay, as libtorch leaves them)
//    and runs the op once more with autocast off. Casting at the primitives gives libtorch's
//    result for its composites too (matmul, linear, einsum, attention, conv1d/3d through conv2d):
//    their products see bfloat16 arguments there as in libtorch, which runs a composite's ops
//    through its dispatcher again. Where libtorch has a kernel of its own that fw builds from
//    products (mv and so addmv, bilinear, LSTM and GRU), fw turns autocast off inside, so they stay
//    in their arguments' dtype as in libtorch; matmul and linear cast first, as libtorch casts at
//    them (their 1-D cases go through mv). tests/fixtures/gen_autocast.py checks 37 ops' dtypes.
//  - The float32 list (the losses, cdist, prod) is applied where those functions begin
//    (autocast_float32 in core/autocast.h): bfloat16 arguments are cast up and the function
//    runs with autocast off. Not covered: the linear-algebra functions of libtorch's float32 list
//    (inverse, cholesky, ...) and the 3-d pools, which run in a bfloat16 argument's dtype.
//  - The casts are ordinary differentiable ops, so gradients flow back to the float32 tensors,
//    and a trace (fw::compile) records them like any other op; captures guard on the flag.
//  - Cache: the bfloat16 copy of a float32 leaf that requires grad (a parameter) is kept until
//    clear_cache() (AutocastGuard clears it when the outermost region ends), so a weight used in
//    several products of a step is converted once. An entry is reused only while the source's
//    version and the grad mode are those it was made under: an optimizer step inside the region
//    recasts rather than return stale values, and a copy made under NoGradGuard (no history) is
//    not handed to a step that needs gradients. Traces do not use the cache (their casts must be
//    graph ops).
#include "core/autocast.h"

#include <unordered_map>

#include "fw/autocast.h"

namespace fw {
namespace detail {
namespace {

struct CastEntry {
  Tensor source;  // keeps the key's TensorImpl alive
  uint32_t version;
  bool grad;
  Tensor cast;
};
struct AutocastState {
  bool cache_enabled = true;
  int nesting = 0;
  ScalarType gpu_dtype = kHalf;  // only recorded (set_autocast_gpu_dtype)
  std::unordered_map<const TensorImpl*, CastEntry> cache;
};
AutocastState& state() {
  thread_local AutocastState s;
  return s;
}

bool eligible_for_lower(const Tensor& t) { return t.defined() && (t.dtype() == kFloat || t.dtype() == kHalf); }

}  // namespace

Tensor autocast_down(const Tensor& t) {
  if (!eligible_for_lower(t)) return t;
  AutocastState& s = state();
  const bool cacheable = s.cache_enabled && tls().tracer == nullptr && t.dtype() == kFloat && t.requires_grad() &&
                         t.is_leaf() && !t.impl()->view_base;
  if (!cacheable) return t.to(kBFloat16);
  const bool grad = tls().grad_enabled;
  auto it = s.cache.find(t.impl().get());
  if (it != s.cache.end() && it->second.version == t._version() && it->second.grad == grad) return it->second.cast;
  Tensor c = t.to(kBFloat16);
  s.cache[t.impl().get()] = CastEntry{t, t._version(), grad, c};
  return c;
}

bool autocasts_to_lower(OpId id) {
  switch (id) {
    case OpId::mm:
    case OpId::addmm:
    case OpId::bmm:
    case OpId::baddbmm:
    case OpId::conv2d: return true;
    default: return false;
  }
}

Outs autocast_dispatch(OpId id, ArrayRef<Tensor> in, const OpAttrs& a) {
  std::vector<Tensor> cast;
  cast.reserve(in.size());
  for (const Tensor& t : in) cast.push_back(autocast_down(t));
  AutocastOff off;
  return dispatch(id, cast, a);
}

Tensor autocast_up(const Tensor& t) {
  return t.defined() && (t.dtype() == kBFloat16 || t.dtype() == kHalf) ? t.to(kFloat) : t;
}

}  // namespace detail

namespace autocast {

bool is_cpu_enabled() { return detail::tls().autocast; }
void set_cpu_enabled(bool enabled) { detail::tls().autocast = enabled; }
ScalarType get_autocast_cpu_dtype() { return kBFloat16; }
void set_autocast_cpu_dtype(ScalarType dtype) {
  FW_CHECK(dtype == kBFloat16, "[autocast] set_autocast_cpu_dtype: CPU autocast supports only BFloat16 (as libtorch "
           "1.13), got ", dtype_name(dtype));
}
void clear_cache() { detail::state().cache.clear(); }
bool is_enabled() { return false; }
void set_enabled(bool enabled) {
  FW_CHECK(!enabled, "[autocast] set_enabled(true) turns on CUDA autocast, and fw has no CUDA tensors "
           "(fw::cuda::is_available() is false); CPU autocast is set_cpu_enabled(true) or fw::AutocastGuard");
}
ScalarType get_autocast_gpu_dtype() { return detail::state().gpu_dtype; }
void set_autocast_gpu_dtype(ScalarType dtype) {
  FW_CHECK(dtype == kHalf || dtype == kBFloat16, "[autocast] set_autocast_gpu_dtype: expected Half or BFloat16, got ",
           dtype_name(dtype));
  detail::state().gpu_dtype = dtype;
}
bool is_autocast_cache_enabled() { return detail::state().cache_enabled; }
void set_autocast_cache_enabled(bool enabled) { detail::state().cache_enabled = enabled; }
int increment_nesting() { return ++detail::state().nesting; }
int decrement_nesting() {
  int& n = detail::state().nesting;
  return n > 0 ? --n : 0;
}

}  // namespace autocast

AutocastGuard::AutocastGuard(bool enabled, ScalarType dtype, bool cache_enabled)
    : prev_enabled_(autocast::is_cpu_enabled()), prev_cache_(autocast::is_autocast_cache_enabled()) {
  if (enabled) autocast::set_autocast_cpu_dtype(dtype);
  autocast::set_cpu_enabled(enabled);
  autocast::set_autocast_cache_enabled(cache_enabled);
  autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (autocast::decrement_nesting() == 0) autocast::clear_cache();
  autocast::set_cpu_enabled(prev_enabled_);
  autocast::set_autocast_cache_enabled(prev_cache_);
}

}  // namespace fw
