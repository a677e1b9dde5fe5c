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

// In-register 8 x 8 transpose: r[i][p] becomes r[p][i].
inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 8; i += 4) {
    u[i] = _mm256_shuffle_ps(t[i], t[i + 2], 0x44);
    u[i + 1] = _mm256_shuffle_ps(t[i], t[i + 2], 0xEE);
    u[i + 2] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0x44);
    u[i + 3] = _mm256_shuffle_ps(t[i + 1], t[i + 3], 0xEE);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

// Columns [j0, j0 + 16) (zero past n) of B's rows [p0, p0 + kc), as kc rows of 16.
void pack_b(MatArg<float> b, int64_t n, int64_t j0, int64_t p0, int64_t kc, float* dst) {
  const int cols = int(std::min<int64_t>(kNR, n - j0));
  if (b.rs == 1 && b.cs != 1) {
    // B is a transposed row-major matrix (a Linear's weight): each column is contiguous in k.
    // Walking p across the 16 columns touched 16 lines per step, and with a row stride of 4 KiB
    // (a 1024-wide weight) they all fall in one L1 set and evicted each other on every step. Full
    // panels move as 8 x 8 blocks (eight 8-float loads along k, transposed in registers); the rest
    // column by column, so each source line is used whole before the next.
    int64_t p = 0;
    if (cols == kNR)
      for (; p + 8 <= kc; p += 8)
        for (int g = 0; g < 2; g++) {
          const float* src = b.data + p0 + p + (j0 + 8 * g) * b.cs;
          __m256 r[8];
          for (int i = 0; i < 8; i++) r[i] = _mm256_loadu_ps(src + i * b.cs);
          transpose8(r);
          for (int i = 0; i < 8; i++) _mm256_storeu_ps(dst + (p + i) * kNR + 8 * g, r[i]);
        }
    for (int j = 0; j < cols; j++) {
      const float* src = b.data + p0 + (j0 + j) * b.cs;
      for (int64_t q = p; q < kc; q++) dst[q * kNR + j] = src[q];
    }
    for (int j = cols; j < kNR; j++)
      for (int64_t q = 0; q < kc; q++) dst[q * kNR + j] = 0.0f;
    return;
  }
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

// Note [Skinny float32 GEMM]
// A product with few rows (a Linear on one streaming segment, an LSTM step over a beam, a joiner
// over a few hypotheses) reads all of B for a few FMAs per element: packing B costs as much as
// the product. When A's rows and B's columns are both contiguous in k (x @ W^T with a row-major
// weight, the Linear layout), each element of C is a dot product of two contiguous vectors: B is
// read once, in place, and A's rows stay in L1. Tiles of R rows x 4 columns keep 4R ymm
// accumulators over k; each element of C is summed in the same order on any thread count.
constexpr int64_t kSkinnyRows = 6;

template <int R>
void skinny_tile(int64_t k, const float* a, int64_t lda, const float* b, int64_t ldb, int cols, float out[R][4]) {
  __m256 acc[R][4];
  for (int r = 0; r < R; r++)
    for (int j = 0; j < 4; j++) acc[r][j] = _mm256_setzero_ps();
  const float* bj[4];
  for (int j = 0; j < 4; j++) bj[j] = b + (j < cols ? j : 0) * ldb;
  int64_t p = 0;
  for (; p + 8 <= k; p += 8) {
    __m256 av[R];
    for (int r = 0; r < R; r++) av[r] = _mm256_loadu_ps(a + r * lda + p);
    for (int j = 0; j < 4; j++) {
      const __m256 bv = _mm256_loadu_ps(bj[j] + p);
      for (int r = 0; r < R; r++) acc[r][j] = _mm256_fmadd_ps(av[r], bv, acc[r][j]);
    }
  }
  for (int r = 0; r < R; r++)
    for (int j = 0; j < 4; j++) {
      // Lanes summed pairwise, then the tail of k.
      const __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc[r][j]), _mm256_extractf128_ps(acc[r][j], 1));
      const __m128 q = _mm_add_ps(h, _mm_movehl_ps(h, h));
      float v = _mm_cvtss_f32(_mm_add_ss(q, _mm_shuffle_ps(q, q, 1)));
      for (int64_t t = p; t < k; t++) v += a[r * lda + t] * bj[j][t];
      out[r][j] = v;
    }
}

void sgemm_skinny(int64_t m, int64_t n, int64_t k, float alpha, MatArg<float> a, MatArg<float> b, float beta, float* c,
                  int64_t ldc, const GemmEpilogue<float>& ep) {
  constexpr int64_t kCols = 64;  // columns per task
  const int threads = m * n * k < (int64_t(1) << 21) || in_parallel_region() ? 1 : max_threads();
  claim_units(threads, (n + kCols - 1) / kCols, [&](int64_t t) {
    const int64_t j0 = t * kCols, j1 = std::min(n, j0 + kCols);
    for (int64_t j = j0; j < j1; j += 4) {
      const int cols = int(std::min<int64_t>(4, j1 - j));
      for (int64_t i = 0; i < m; i += 3) {
        const int rows = int(std::min<int64_t>(3, m - i));
        float out[3][4];
        const float* ap = a.data + i * a.rs;
        const float* bp = b.data + j * b.cs;
        if (rows == 3) skinny_tile<3>(k, ap, a.rs, bp, b.cs, cols, reinterpret_cast<float(*)[4]>(out));
        else if (rows == 2) skinny_tile<2>(k, ap, a.rs, bp, b.cs, cols, reinterpret_cast<float(*)[4]>(out));
        else skinny_tile<1>(k, ap, a.rs, bp, b.cs, cols, reinterpret_cast<float(*)[4]>(out));
        for (int r = 0; r < rows; r++)
          for (int q = 0; q < cols; q++) {
            float& dst = c[(i + r) * ldc + j + q];
            dst = beta != 0.0f ? alpha * out[r][q] + beta * dst : alpha * out[r][q];
          }
      }
    }
    if (!ep.empty()) ep.apply(c, ldc, 0, m, j0, j1 - j0);
  });
}

}  // namespace

void sgemm_avx2(int64_t m, int64_t n, int64_t k, float alpha, MatArg<float> a, MatArg<float> b, float beta, float* c,
                int64_t ldc, const GemmEpilogue<float>& ep) {
  if (m <= kSkinnyRows && a.cs == 1 && b.rs == 1) return sgemm_skinny(m, n, k, alpha, a, b, beta, c, ldc, ep);
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
