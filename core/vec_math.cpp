// Note [SLEEF loops]
// (erf, gelu, exp, sigmoid and silu are the exception: see the end of this file.)
// GCC does not vectorise std::exp/erf/tanh without -ffast-math, which would also break NaN
// handling. These loops call SLEEF's 1.0-ULP vector functions on full vectors and the scalar
// functor on the tail, so results stay within 1 ULP of the scalar path.
#include "core/vec_math.h"

#include <sleef.h>

namespace fw::detail {

#if defined(__AVX512F__)
#define FW_VW 16
using vf = __m512;
#define VLOAD _mm512_loadu_ps
#define VSTORE _mm512_storeu_ps
#define VSET1 _mm512_set1_ps
#define VADD _mm512_add_ps
#define VMUL _mm512_mul_ps
#define SL(f) Sleef_##f##f16_u10
#elif defined(__AVX2__)
#define FW_VW 8
using vf = __m256;
#define VLOAD _mm256_loadu_ps
#define VSTORE _mm256_storeu_ps
#define VSET1 _mm256_set1_ps
#define VADD _mm256_add_ps
#define VMUL _mm256_mul_ps
#define SL(f) Sleef_##f##f8_u10
#endif

template <class F, class V>
static inline void vec_map(const float* x, float* y, int64_t n, V v) {
  int64_t i = 0;
#ifdef FW_VW
  for (; i + FW_VW <= n; i += FW_VW) VSTORE(y + i, v(VLOAD(x + i)));
#endif
  F f;
  for (; i < n; i++) y[i] = f(x[i]);
}

#ifdef FW_VW
#define FW_VEC_DEF(F, body) \
  void VecF32<fn::F>::run(const float* x, float* y, int64_t n) { vec_map<fn::F>(x, y, n, [](vf a) { return body; }); }
#else
#define FW_VEC_DEF(F, body) \
  void VecF32<fn::F>::run(const float* x, float* y, int64_t n) { vec_map<fn::F>(x, y, n, 0); }
#endif

FW_VEC_DEF(Log, SL(log)(a))
FW_VEC_DEF(Tanh, SL(tanh)(a))
FW_VEC_DEF(Log10, SL(log10)(a))
FW_VEC_DEF(Log2, SL(log2)(a))
FW_VEC_DEF(Log1p, SL(log1p)(a))
FW_VEC_DEF(Expm1, SL(expm1)(a))
FW_VEC_DEF(Sin, SL(sin)(a))
FW_VEC_DEF(Cos, SL(cos)(a))
FW_VEC_DEF(GeluTanh,
           VMUL(VMUL(VSET1(0.5f), a),
                VADD(VSET1(1.f), SL(tanh)(VMUL(VSET1(0.79788456080286535588f),
                                               VADD(a, VMUL(VSET1(0.044715f), VMUL(a, VMUL(a, a)))))))))

}  // namespace fw::detail

namespace fw::detail {
// erf, gelu, exp, sigmoid and silu use fn::erf_f32 and fn::exp_f32 (core/functors.h), plain
// arithmetic the compiler vectorises: these loops and the scalar functors compute the same float
// operations.
#define FW_PLAIN_DEF(F) \
  void VecF32<fn::F>::run(const float* x, float* y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = fn::F{}(x[i]); }
FW_PLAIN_DEF(Erf)
FW_PLAIN_DEF(Gelu)
FW_PLAIN_DEF(Exp)
FW_PLAIN_DEF(Sigmoid)
FW_PLAIN_DEF(Silu)
#undef FW_PLAIN_DEF
}  // namespace fw::detail
