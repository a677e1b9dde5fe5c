// CPU autocast inside fw (Note [Autocast] in core/autocast.cpp; the API is fw/autocast.h).
#pragma once
#include <optional>
#include <tuple>
#include <utility>

#include "core/op.h"

namespace fw::detail {

// The ops whose float32 arguments autocast casts to bfloat16 (mm, addmm, bmm, baddbmm, conv2d).
bool autocasts_to_lower(OpId id);
// dispatch() for those ops while autocast is on: the arguments cast (parameters through the
// cache), then the op with autocast off.
Outs autocast_dispatch(OpId id, ArrayRef<Tensor> in, const OpAttrs& a);

// Turns autocast off on this thread for a scope (when `active`).
struct AutocastOff {
  bool prev;
  explicit AutocastOff(bool active = true) : prev(tls().autocast) {
    if (active) tls().autocast = false;
  }
  ~AutocastOff() { tls().autocast = prev; }
  AutocastOff(const AutocastOff&) = delete;
  AutocastOff& operator=(const AutocastOff&) = delete;
};

// t cast to bfloat16 when it is float32 or float16, through the cache for parameters (what
// autocast_dispatch does to each argument; matmul and linear cast first, as libtorch casts there).
Tensor autocast_down(const Tensor& t);

// Arguments of an op of the float32 list: bfloat16 tensors become float32, the rest pass.
Tensor autocast_up(const Tensor& t);
inline std::optional<Tensor> autocast_up(const std::optional<Tensor>& t) {
  return t ? std::optional<Tensor>(autocast_up(*t)) : std::nullopt;
}
template <class T>
const T& autocast_up(const T& x) {
  return x;
}

// An op of the float32 list: f on the arguments cast up, with autocast off inside (its composites
// run in float32, as libtorch redispatches below its autocast key). Used as
//   if (FW_UNLIKELY(tls().autocast)) return autocast_float32([](auto&&... a) { return op(a...); }, args...);
template <class F, class... A>
auto autocast_float32(F&& f, const A&... args) {
  auto cast = std::make_tuple(autocast_up(args)...);
  AutocastOff off;
  return std::apply(std::forward<F>(f), cast);
}

}  // namespace fw::detail
