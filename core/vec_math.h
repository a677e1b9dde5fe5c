// SLEEF-vectorised float32 loops for the transcendental functors (exp, log, tanh, erf, ...).
// VecF32<F>::value says whether functor F has one; run() maps n contiguous floats.
#pragma once
#include <cstdint>

#include "core/functors.h"

namespace fw::detail {

template <class F>
struct VecF32 {
  static constexpr bool value = false;
  static void run(const float*, float*, int64_t) {}
};

#define FW_VEC_DECL(F) \
  template <> struct VecF32<fn::F> { static constexpr bool value = true; static void run(const float* x, float* y, int64_t n); };
FW_VEC_DECL(Exp) FW_VEC_DECL(Log) FW_VEC_DECL(Tanh) FW_VEC_DECL(Sigmoid) FW_VEC_DECL(Erf)
FW_VEC_DECL(Gelu) FW_VEC_DECL(GeluTanh) FW_VEC_DECL(Silu)
FW_VEC_DECL(Log10) FW_VEC_DECL(Log2) FW_VEC_DECL(Log1p) FW_VEC_DECL(Expm1) FW_VEC_DECL(Sin) FW_VEC_DECL(Cos)
#undef FW_VEC_DECL

}  // namespace fw::detail
