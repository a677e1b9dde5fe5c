// fw's own float32 GEMM (Note [Native float32 GEMM] in gemm_f32.cpp), used by gemm<float> when the
// build targets AVX-512; an AVX2 one (gemm_f32_avx2.cpp) when it targets AVX2 without AVX-512.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>

#include "core/ops/gemm.h"
#include "core/parallel.h"

namespace fw::detail {

// Runs body(unit) for units [0, n) on nt participants claiming them from a shared counter (the
// native kernels' tasks: a participant slowed by another process takes fewer).
template <class F>
void claim_units(int nt, int64_t n, const F& body) {
  if (nt <= 1 || n <= 1) {
    for (int64_t u = 0; u < n; u++) body(u);
    return;
  }
  struct Ctx {
    const F* body;
    int64_t n;
    std::atomic<int64_t> next{0};
  } ctx{&body, n};
  run_tasks(int(std::min<int64_t>(nt, n)), [](void* p, int) {
    Ctx& x = *static_cast<Ctx*>(p);
    for (int64_t u; (u = x.next.fetch_add(1, std::memory_order_relaxed)) < x.n;) (*x.body)(u);
  }, &ctx);
}

#if defined(__AVX512F__)
#define FW_SGEMM_AVX512 1
// C = alpha * A(MxK) B(KxN) + beta * C, then the epilogue (gemm.h); C row-major with leading
// dimension ldc, any strides for A and B. beta == 0 ignores C's old contents; alpha == 0 or k == 0
// reads neither A nor B.
// Multithreaded on fw's pool unless called inside a parallel region.
void sgemm_avx512(int64_t m, int64_t n, int64_t k, float alpha, MatArg<float> a, MatArg<float> b, float beta,
                  float* c, int64_t ldc, const GemmEpilogue<float>& ep = {});
#if defined(__AVX512BF16__)
#define FW_BGEMM_AVX512 1
// bfloat16 operands (their bits), float32 accumulation (Note [bfloat16 GEMM] in gemm_f32.cpp):
// C (float, ldc) = alpha * A B + beta * C, then the epilogue, as sgemm_avx512. When out is set,
// every finished tile of C is also rounded to bfloat16 (nearest even, as fw::BFloat16) into out
// (leading dimension ldo), while it is still in L1. With out set and beta == 0, c may be null
// (float32 C is then scratch, or not needed at all).
void bgemm_avx512(int64_t m, int64_t n, int64_t k, float alpha, MatArg<uint16_t> a, MatArg<uint16_t> b, float beta,
                  float* c, int64_t ldc, const GemmEpilogue<float>& ep, uint16_t* out, int64_t ldo);
#endif
#elif defined(__AVX2__) && defined(__FMA__)
#define FW_SGEMM_AVX2 1
// The same contract for AVX2 hosts (Note [AVX2 float32 GEMM] in gemm_f32_avx2.cpp).
void sgemm_avx2(int64_t m, int64_t n, int64_t k, float alpha, MatArg<float> a, MatArg<float> b, float beta, float* c,
                int64_t ldc, const GemmEpilogue<float>& ep = {});
#endif

}  // namespace fw::detail
