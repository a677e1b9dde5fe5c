// fw's own float32 GEMM (Note [Native float32 GEMM] in gemm_f32.cpp), used by gemm<float> when the
// build targets AVX-512; an AVX2 one (gemm_f32_avx2.cpp) when it targets AVX2 without AVX-512.
#pragma once
#include <cstdint>

#include "core/ops/gemm.h"

namespace fw::detail {

#if defined(__AVX512F__)
#define FW_SGEMM_AVX512 1
// C = alpha * A(MxK) B(KxN) + beta * C, then the epilogue (gemm.h); C row-major with leading
// dimension ldc, any strides for A and B. beta == 0 ignores C's old contents; alpha == 0 or k == 0
// reads neither A nor B.
// Multithreaded on fw's pool unless called inside a parallel region.
void sgemm_avx512(int64_t m, int64_t n, int64_t k, float alpha, MatArg<float> a, MatArg<float> b, float beta,
                  float* c, int64_t ldc, const GemmEpilogue<float>& ep = {});
#elif defined(__AVX2__) && defined(__FMA__)
#define FW_SGEMM_AVX2 1
// The same contract for AVX2 hosts (Note [AVX2 float32 GEMM] in gemm_f32_avx2.cpp).
void sgemm_avx2(int64_t m, int64_t n, int64_t k, float alpha, MatArg<float> a, MatArg<float> b, float beta, float* c,
                int64_t ldc, const GemmEpilogue<float>& ep = {});
#endif

}  // namespace fw::detail
