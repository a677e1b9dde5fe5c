// Note [AVX2 float32 GEMM]
// Hosts without AVX-512 (an AMD EPYC of family 25 model 1 served the 2026-12-06 afternoon
// session) had float32 products on Eigen's blocked GEMM, which ran at 61-66 GFLOP/s per thread
// against OpenBLAS's 83-85 on W1 (BENCHMARKS.md, "An AVX2-only host"). This is the same
// GotoBLAS/BLIS scheme as the AVX-512 kernel (Note [Native float32 GEMM] in gemm_f32.cpp), in
// its plainest form:
//  - Register tile: 6 rows x 16 columns of C in 12 ymm accumulators; per step of k, two loads of
//    packed B, six broadcasts of packed A and 12 FMAs (two FMA pipes, FMA latency 4-5: 12
//    independent chains keep both busy). Edge tiles go through a 6x16 scratch tile.
//  - Blocks of k of at most kKC steps. Per block: A is packed once into 6-row panels (in
//    parallel), then tasks of kNC columns each pack their slice of B into 16-column panels and
//    walk row blocks of kMC rows (A's slice stays in L2) and, inside, the slice's B panels (in
//    L1/L2). Tasks are claimed from a shared counter, several per thread, so a vCPU slowed by
//    the host takes fewer.
//  - beta and alpha apply when the first block of k stores a tile; later blocks accumulate; the
//    epilogue (gemm.h) runs on each tile after the last block, while it is in cache.
#include "core/ops/gemm_f32.h"

#if defined(FW_SGEMM_AVX2)
#include <immintrin.h>

#include <algorithm>
#include <vector>

namespace fw::detail {

namespace {

constexpr int kMR = 6;
constexpr int kNR = 16;
constexpr int64_t kKC = 256;
constexpr int64_t kMC = 72;   // rows per block: 72 x 256 floats of packed A (72 KB) in L2
constexpr int64_t kNC = 128;  // columns per task: 256 x 128 floats of packed B (128 KB) in L2

// acc = A panel (kc x 6) times B panel (kc x 16).
inline void kernel(int64_t kc, const float* ap, const float* bp, __m256 acc[kMR][2]) {
  for (int r = 0; r < kMR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_ps();
  for (int64_t p = 0; p < kc; p++) {
    const __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
    for (int r = 0; r < kMR; r++) {
      const __m256 a = _mm256_broadcast_ss(ap + r);
      acc[r][0] = _mm256_fmadd_ps(a, b0, acc[r][0]);
      acc[r][1] = _mm256_fmadd_ps(a, b1, acc[r][1]);
    }
    ap += kMR;
    bp += kNR;
  }
}

// Stores a tile (rows x cols of C at c): C = alpha * acc + beta * C on the first block of k
// (beta == 0 ignores C), C += alpha * acc on later ones.
inline void store(__m256 acc[kMR][2], float* c, int64_t ldc, int rows, int cols, float alpha, float beta, bool first) {
  const __m256 va = _mm256_set1_ps(alpha), vb = _mm256_set1_ps(beta);
  if (rows == kMR && cols == kNR) {
    for (int r = 0; r < kMR; r++) {
      float* cr = c + r * ldc;
      for (int h = 0; h < 2; h++) {
        __m256 v = _mm256_mul_ps(va, acc[r][h]);
        if (!first) v = _mm256_add_ps(v, _mm256_loadu_ps(cr + 8 * h));
        else if (beta != 0.0f) v = _mm256_fmadd_ps(vb, _mm256_loadu_ps(cr + 8 * h), v);
        _mm256_storeu_ps(cr + 8 * h, v);
      }
    }
    return;
  }
  alignas(32) float t[kMR][kNR];
  for (int r = 0; r < kMR; r++) {
    _mm256_store_ps(t[r], acc[r][0]);
    _mm256_store_ps(t[r] + 8, acc[r][1]);
  }
  for (int r = 0; r < rows; r++) {
    float* cr = c + r * ldc;
    for (int j = 0; j < cols; j++) {
      float v = alpha * t[r][j];
      if (!first) v += cr[j];
      else if (beta != 0.0f) v += beta * cr[j];
      cr[j] = v;
    }
  }
}

// Rows [i0, i0 + 6) (zero past m) of A's columns [p0, p0 + kc), as kc groups of 6.
void pack_a(MatArg<float> a, int64_t m, int64_t i0, int64_t p0, int64_t kc, float* dst) {
  const int rows = int(std::min<int64_t>(kMR, m - i0));
  for (int64_t p = 0; p < kc; p++) {
    const float* src = a.data + i0 * a.rs + (p0 + p) * a.cs;
    for (int r = 0; r < rows; r++) dst[p * kMR + r] = src[r * a.rs];
    for (int r = rows; r < kMR; r++) dst[p * kMR + r] = 0.0f;
  }
}

// Columns [j0, j0 + 16) (zero past n) of B's rows [p0, p0 + kc), as kc rows of 16.
void pack_b(MatArg<float> b, int64_t n, int64_t j0, int64_t p0, int64_t kc, float* dst) {
  const int cols = int(std::min<int64_t>(kNR, n - j0));
  for (int64_t p = 0; p < kc; p++) {
    const float* src = b.data + (p0 + p) * b.rs + j0 * b.cs;
    float* d = dst + p * kNR;
    if (b.cs == 1)
      for (int j = 0; j < cols; j++) d[j] = src[j];
    else
      for (int j = 0; j < cols; j++) d[j] = src[j * b.cs];
    for (int j = cols; j < kNR; j++) d[j] = 0.0f;
  }
}

}  // namespace

void sgemm_avx2(int64_t m, int64_t n, int64_t k, float alpha, MatArg<float> a, MatArg<float> b, float beta, float* c,
                int64_t ldc, const GemmEpilogue<float>& ep) {
  const int64_t mp = (m + kMR - 1) / kMR;  // row panels
  const int64_t flops = m * n * k;
  const int threads = flops < (int64_t(1) << 21) || in_parallel_region() ? 1 : max_threads();
  std::vector<float> apack(size_t(mp * kMR * std::min(k, kKC)));
  const int64_t col_tasks = (n + kNC - 1) / kNC;
  for (int64_t p0 = 0; p0 < k; p0 += kKC) {
    const int64_t kc = std::min(kKC, k - p0);
    const bool first = p0 == 0, last = p0 + kc == k;
    float* ap = apack.data();
    // A's panels for this block of k, 12 panels (72 rows) per task.
    const int64_t a_tasks = (mp + 11) / 12;
    claim_units(threads, a_tasks, [&](int64_t t) {
      for (int64_t ip = t * 12; ip < std::min(mp, t * 12 + 12); ip++) pack_a(a, m, ip * kMR, p0, kc, ap + ip * kMR * kc);
    });
    claim_units(threads, col_tasks, [&](int64_t t) {
      const int64_t j0 = t * kNC, j1 = std::min(n, j0 + kNC);
      const int64_t np = (j1 - j0 + kNR - 1) / kNR;
      thread_local std::vector<float> bpack;
      bpack.resize(size_t(np * kNR * kc));
      for (int64_t jp = 0; jp < np; jp++) pack_b(b, n, j0 + jp * kNR, p0, kc, bpack.data() + jp * kNR * kc);
      __m256 acc[kMR][2];
      for (int64_t ib = 0; ib < m; ib += kMC) {
        const int64_t ie = std::min(m, ib + kMC);
        for (int64_t jp = 0; jp < np; jp++) {
          const int64_t jj = j0 + jp * kNR;
          const int cols = int(std::min<int64_t>(kNR, n - jj));
          for (int64_t i = ib; i < ie; i += kMR) {
            const int rows = int(std::min<int64_t>(kMR, m - i));
            kernel(kc, ap + (i / kMR) * kMR * kc, bpack.data() + jp * kNR * kc, acc);
            store(acc, c + i * ldc + jj, ldc, rows, cols, alpha, beta, first);
            if (last && !ep.empty()) ep.apply(c, ldc, i, rows, jj, cols);
          }
        }
      }
    });
  }
}

}  // namespace fw::detail

#endif
