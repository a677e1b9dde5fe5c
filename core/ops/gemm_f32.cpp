// Note [Native float32 GEMM]
// A GotoBLAS/BLIS-style sgemm for AVX-512. Eigen's reached ~153-165 GFLOP/s on W1 here, against
// OpenBLAS's ~170 and a 230 GFLOP/s FMA ceiling (BENCHMARKS.md).
//  - Register tile: 14 rows x 32 columns of C in 28 zmm accumulators; per step of k, two zmm
//    loads of packed B, 14 broadcasts of packed A and 28 FMAs. Zen 4 retires one 512-bit FMA
//    per cycle, so loads have slack. Alone, with its data in L1/L2, the kernel runs at 96-98% of
//    the FMA peak. Edge tiles use the same kernel instantiated for 1..14 rows and one or two
//    vectors, with masked C loads/stores, so no FMA is spent on rows that do not exist.
//  - Packing: B into panels of kc x 32 (zero-padded columns), A into panels of kc x 14, per
//    block of at most kKC = 384 steps of k (blocks of equal depth: k = 784 is 2 x 392, not
//    384 + 384 + 16). Operands whose panel runs across their unit stride (row-major A,
//    transposed B) go through 16x16 register transposes; other strides element by element.
//  - An operand used only once is not packed: A when C has one column panel (n <= 32), B when
//    it has one row panel (m <= 14, row-major B). W4's 10-wide layer: 256x10x1024 ran at
//    37 GFLOP/s on one core with A packed, 64 read in place. Read in place, a row-major A goes
//    7 rows per kernel call: with a 4 KB row stride all rows fall in one set of the 8-way L1,
//    and 14 of them evicted each other (14 rows: 37 GFLOP/s, 7 rows: 64).
//  - Blocking: inside a block of k, a task walks its row panels and, for each, its column
//    panels: the A panel (21 KB) is reread from L1/L2, the task's B block (kKC x 256 floats,
//    384 KB) stays in the 1 MB L2; C is prefetched kCTail steps before the kernel ends (earlier,
//    the B stream evicts it again).
//  - Threads: A (and B unless it is row-major) is packed once, in parallel, into one buffer
//    from the caching allocator; then the participants of a second region claim C blocks from
//    a shared counter (about four per thread, so a core slowed by another process takes fewer).
//    Nothing waits on another task, so a pool that runs the tasks serially is still correct.
//
// Note [GEMM epilogues]
// gemm()'s epilogue (a bias of any broadcast, relu, a (gate > 0) mask; gemm.h) runs on each
// register tile right after the last block of k stored it: the tile (at most 14 x 32 floats) is
// still in L1, so it costs a few dozen vector loads and stores against the tile's 28 * kc FMAs,
// where a separate pass would read and write all of C through memory again. addmm uses it for its
// bias instead of copying the bias into C and accumulating onto it; fw::compile folds into it a
// relu that is a product's only user, and relu's backward mask on a product (Note [Epilogues in
// extern products] in codegen/cpp_backend.cpp).
//
// Note [Packing B on first use]
// A row-major B is not packed up front: the first tile to use a panel of B reads it in place,
// prefetching kCopyAhead rows ahead, and stores the packed copy as it goes, so the memory
// traffic of packing overlaps the FMAs instead of running as a pass of its own; later tiles use
// the copy. A per-panel state (unpacked / packing / packed) hands out that first use with one
// compare-exchange; a tile that finds the panel being packed by the other thread reads B in
// place too rather than wait. Measured on 256x784x1024 (W4's g W) with 2 threads, GFLOP per
// CPU-second, 6 interleaved rounds under load ~3.5: 86-93 packing first, 94-99 on first use.
#include "core/ops/gemm_f32.h"

#if defined(FW_SGEMM_AVX512)
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <memory>
#include <type_traits>
#include <utility>

#include "core/parallel.h"
#include "fw/storage.h"

// GCC 12 reports false maybe-uninitialized warnings inside its AVX-512 shuffle intrinsics.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace fw::detail {

namespace {

constexpr int kMR = 14;
constexpr int kNR = 32;
constexpr int64_t kKC = 384;      // deepest block of k
constexpr int64_t kNCPanels = 8;  // column panels per task block: kKC x 256 floats of B in L2
constexpr int64_t kTasksPerThread = 4;
constexpr int64_t kCTail = 24;     // steps of k before the end at which C is prefetched
constexpr int64_t kCopyAhead = 16;  // rows of B prefetched ahead while a kernel packs B
// Rows per kernel call when A is read in place from a row-major operand (Note [Native float32
// GEMM]: row strides of 4 KB put every row in the same 8-way L1 set).
constexpr int kDirectRows = 7;

inline __mmask16 lanes(int64_t n) { return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? 0 : __mmask16((1u << n) - 1); }

// In-register transpose of 8 rows of 8: r[i][j] becomes r[j][i].
inline void transpose8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int p = 0; p < 4; p++) {
    t[2 * p] = _mm256_unpacklo_ps(r[2 * p], r[2 * p + 1]);
    t[2 * p + 1] = _mm256_unpackhi_ps(r[2 * p], r[2 * p + 1]);
  }
  // u[4q + c]: 128-bit lane L holds rows 4q..4q+3 of column 4L + c.
  for (int q = 0; q < 2; q++) {
    u[4 * q + 0] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0x44);
    u[4 * q + 1] = _mm256_shuffle_ps(t[4 * q], t[4 * q + 2], 0xEE);
    u[4 * q + 2] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0x44);
    u[4 * q + 3] = _mm256_shuffle_ps(t[4 * q + 1], t[4 * q + 3], 0xEE);
  }
  for (int c = 0; c < 4; c++) {
    r[c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x20);
    r[4 + c] = _mm256_permute2f128_ps(u[c], u[4 + c], 0x31);
  }
}

// Note [Packing across the unit stride]
// Row-major A and transposed B are contiguous along k, but a packed panel holds, for each step
// of k, one element of each of 14 (A) or 32 (B) rows. Those rows are read 8 at a time, 8 steps
// of k per load, and turned with 8x8 transposes: with 16 or 32 rows in flight at a 4 KB stride
// they all share one set of the 8-way L1 and the copy ran at 10-14 GB/s; 8 rows at a time,
// 22 GB/s (1024 x 1024 floats, one core).
//
// dst[p * ldd + i] = src[i * lds + p] for i < rows (0 for rows <= i < 8), p < kc; lanes outside
// `keep` are not stored.
void pack_rows8(const float* src, int64_t lds, int64_t rows, int64_t kc, float* dst, int64_t ldd, __mmask8 keep) {
  for (int64_t p0 = 0; p0 < kc; p0 += 8) {
    const int64_t kr = std::min<int64_t>(8, kc - p0);
    const __mmask8 km = __mmask8(lanes(kr));
    __m256 r[8];
    for (int i = 0; i < 8; i++) r[i] = i < rows ? _mm256_maskz_loadu_ps(km, src + i * lds + p0) : _mm256_setzero_ps();
    transpose8(r);
    for (int64_t kk = 0; kk < kr; kk++) _mm256_mask_storeu_ps(dst + (p0 + kk) * ldd, keep, r[kk]);
  }
}

// B(k0 .. k0+kc, columns of panels jr0 .. jr1) into panels dst + jr * kc * 32 (dst[kc][32] each,
// zero past column n). Row-major B is copied a row of all the panels at a time: reading 256
// contiguous floats per row instead of 32 doubled the copy's speed (20 -> 40 GB/s).
void pack_b(const MatArg<float>& b, int64_t n, int64_t k0, int64_t kc, int64_t jr0, int64_t jr1, float* dst) {
  if (b.cs == 1) {
    for (int64_t p = 0; p < kc; p++) {
      const float* row = b.data + (k0 + p) * b.rs;
      for (int64_t jr = jr0; jr < jr1; jr++) {
        const int64_t j0 = jr * kNR;
        float* d = dst + (jr - jr0) * kc * kNR + p * kNR;
        _mm512_store_ps(d, _mm512_maskz_loadu_ps(lanes(n - j0), row + j0));
        _mm512_store_ps(d + 16, _mm512_maskz_loadu_ps(lanes(n - j0 - 16), row + j0 + 16));
      }
    }
    return;
  }
  for (int64_t jr = jr0; jr < jr1; jr++) {
    const int64_t j0 = jr * kNR, nr = std::min<int64_t>(kNR, n - j0);
    float* d = dst + (jr - jr0) * kc * kNR;
    if (b.rs == 1) {
      for (int g = 0; g < kNR / 8; g++)
        pack_rows8(b.data + k0 + (j0 + 8 * g) * b.cs, b.cs, std::clamp<int64_t>(nr - 8 * g, 0, 8), kc, d + 8 * g, kNR,
                   0xFF);
    } else {
      const float* src = b.data + k0 * b.rs + j0 * b.cs;
      for (int64_t p = 0; p < kc; p++)
        for (int64_t j = 0; j < kNR; j++) d[p * kNR + j] = j < nr ? src[p * b.rs + j * b.cs] : 0.f;
    }
  }
}

// A(i0 .. i0+mr, k0 .. k0+kc), mr <= 14, into dst[kc][14]; rows past mr are left unset (the
// kernel for mr rows never reads them).
void pack_a(const MatArg<float>& a, int64_t i0, int64_t mr, int64_t k0, int64_t kc, float* dst) {
  const float* src = a.data + i0 * a.rs + k0 * a.cs;
  if (a.rs == 1) {
    const __mmask16 mm = lanes(mr);
    for (int64_t p = 0; p < kc; p++) _mm512_mask_storeu_ps(dst + p * kMR, mm, _mm512_maskz_loadu_ps(mm, src + p * a.cs));
  } else if (a.cs == 1) {
    pack_rows8(src, a.rs, std::min<int64_t>(mr, 8), kc, dst, kMR, 0xFF);
    if (mr > 8) pack_rows8(src + 8 * a.rs, a.rs, mr - 8, kc, dst + 8, kMR, __mmask8(lanes(kMR - 8)));
  } else {
    for (int64_t p = 0; p < kc; p++)
      for (int64_t i = 0; i < mr; i++) dst[p * kMR + i] = src[i * a.rs + p * a.cs];
  }
}

// 16 (or the last cols - v < 16) elements p[j * stride] of an epilogue operand.
inline __m512 load_strided(const float* p, int64_t stride, int64_t n, __mmask16 mk) {
  if (stride == 1) return _mm512_maskz_loadu_ps(mk, p);
  if (stride == 0) return _mm512_set1_ps(*p);
  alignas(64) float g[16] = {};
  for (int64_t j = 0; j < std::min<int64_t>(16, n); j++) g[j] = p[j * stride];
  return _mm512_load_ps(g);
}

// The epilogue on rows x cols of C at (i0, j0) (a tile that was just stored, c pointing at it).
void tile_epilogue(const GemmEpilogue<float>& ep, float* c, int64_t ldc, int64_t i0, int64_t rows, int64_t j0,
                   int64_t cols) {
  const __m512 zero = _mm512_setzero_ps(), one = _mm512_set1_ps(1.f), scale = _mm512_set1_ps(ep.bias_scale);
  for (int64_t i = 0; i < rows; i++) {
    float* ci = c + i * ldc;
    const float* bi = ep.bias ? ep.bias + (i0 + i) * ep.rs + j0 * ep.cs : nullptr;
    const float* gi = ep.gate ? ep.gate + (i0 + i) * ep.grs + j0 * ep.gcs : nullptr;
    for (int64_t v = 0; v < cols; v += 16) {
      const __mmask16 mk = lanes(cols - v);
      __m512 x = _mm512_maskz_loadu_ps(mk, ci + v);
      if (bi) x = _mm512_fmadd_ps(scale, load_strided(bi + v * ep.cs, ep.cs, cols - v, mk), x);
      // x > 0 or NaN keeps x, else +0 (fn::Relu).
      if (ep.relu) x = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x, zero, _CMP_NLE_UQ), x);
      // x * 1 where gate > 0, else x * 0 (a product with a bool mask).
      if (gi) {
        const __m512 g = load_strided(gi + v * ep.gcs, ep.gcs, cols - v, mk);
        x = _mm512_mul_ps(x, _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(g, zero, _CMP_GT_OQ), one));
      }
      _mm512_mask_storeu_ps(ci + v, mk, x);
    }
  }
}

// A register tile's accumulators set to zero (both kernels).
template <int R, int NV>
inline void zero_tile(__m512 (&acc)[R][NV]) {
#pragma GCC unroll 14
  for (int i = 0; i < R; i++) {
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) acc[i][v] = _mm512_setzero_ps();
  }
}

// The end of a register tile, shared by the float32 and bfloat16 kernels: C's rows are prefetched
// a few dozen steps before the last (earlier, the B stream evicts them again), then C = alpha *
// acc + beta * C (beta == 0: C is not read), the last vector of each row under `last`.
template <int R, int NV>
inline void prefetch_rows(const float* c, int64_t ldc) {
#pragma GCC unroll 14
  for (int i = 0; i < R; i++) {
    _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc), _MM_HINT_T0);
    if (NV > 1) _mm_prefetch(reinterpret_cast<const char*>(c + i * ldc + 16), _MM_HINT_T0);
  }
}
template <int R, int NV>
inline void store_tile(const __m512 (&acc)[R][NV], float* c, int64_t ldc, __mmask16 last, float alpha, float beta) {
  const __m512 va = _mm512_set1_ps(alpha), vb = _mm512_set1_ps(beta);
#pragma GCC unroll 14
  for (int i = 0; i < R; i++) {
    float* ci = c + i * ldc;
#pragma GCC unroll 2
    for (int v = 0; v < NV; v++) {
      const __mmask16 mk = v == NV - 1 ? last : __mmask16(0xFFFF);
      __m512 r = _mm512_mul_ps(va, acc[i][v]);
      if (beta != 0.f) r = _mm512_fmadd_ps(vb, _mm512_maskz_loadu_ps(mk, ci + 16 * v), r);
      _mm512_mask_storeu_ps(ci + 16 * v, mk, r);
    }
  }
}

// C blocks (tasks) along m and n for mp row panels and np column panels on nt threads: blocks of
// at most kNCPanels column panels, about kTasksPerThread per thread.
void split_tasks(int64_t mp, int64_t np, int nt, int64_t& mb, int64_t& nb) {
  mb = 1;
  nb = (np + kNCPanels - 1) / kNCPanels;
  if (nt > 1) {
    const int64_t target = kTasksPerThread * nt;
    mb = std::clamp<int64_t>((target + nb - 1) / nb, 1, mp);
    if (mb * nb < target) nb = std::min<int64_t>(np, (target + mb - 1) / mb);
  }
}

// One register tile: C(R x 16*NV) = alpha * A B + beta * C (beta == 0: C is not read). A is a
// packed panel (element (i, p) at a[p * 14 + i]) or, for direct kernels, the operand itself
// (a[i * ars + p * acs]); B likewise a packed panel (b[p * 32 + j]) or a row-major operand
// (b[p * ldb + j]). The last vector of each row of C (and of direct B) is accessed under `last`.
struct Tile {
  const float* a;
  int64_t ars, acs;
  const float* b;
  int64_t ldb;
  float* c;
  int64_t ldc;
  int64_t kc;
  __mmask16 last;
  float alpha, beta;
  float* bcopy;  // kBCopy: where B's panel is stored as it is read
};
using Kernel = void (*)(const Tile&);

// How a kernel reads B: a packed panel, a row-major operand in place, or in place while storing
// the packed panel for the tiles that use it next (Note [Packing B on first use]).
enum BRead { kBPacked, kBDirect, kBCopy };

template <int R, int NV, bool kDirectA, int kB>
void micro_kernel(const Tile& t) {
  constexpr bool kDirectB = kB != kBPacked;
  const float* __restrict ap = t.a;
  const float* __restrict bp = t.b;
  float* __restrict bcopy = t.bcopy;
  const int64_t ars = kDirectA ? t.ars : 1, acs = kDirectA ? t.acs : kMR, ldb = kDirectB ? t.ldb : kNR;
  float* const c = t.c;
  const int64_t ldc = t.ldc, kc = t.kc;
  const __mmask16 last = t.last;
  const float alpha = t.alpha, beta = t.beta;
  __m512 acc[R][NV];
  zero_tile<R, NV>(acc);
  auto steps = [&](int64_t n) {
#pragma GCC unroll 2
    for (int64_t p = 0; p < n; p++) {
      __m512 bv[NV];
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++) {
        if (!kDirectB) bv[v] = _mm512_load_ps(bp + 16 * v);
        else if (v == NV - 1) bv[v] = _mm512_maskz_loadu_ps(last, bp + 16 * v);
        else bv[v] = _mm512_loadu_ps(bp + 16 * v);
        if (kB == kBCopy) _mm512_store_ps(bcopy + 16 * v, bv[v]);
      }
      if (kB == kBCopy) {
        _mm_prefetch(reinterpret_cast<const char*>(bp + kCopyAhead * ldb), _MM_HINT_T0);
        if (NV > 1) _mm_prefetch(reinterpret_cast<const char*>(bp + kCopyAhead * ldb + 16), _MM_HINT_T0);
      }
#pragma GCC unroll 14
      for (int i = 0; i < R; i++) {
        const __m512 av = _mm512_set1_ps(ap[i * ars]);
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) acc[i][v] = _mm512_fmadd_ps(av, bv[v], acc[i][v]);
      }
      ap += acs;
      bp += ldb;
      if (kB == kBCopy) bcopy += kNR;
    }
  };
  const int64_t tail = std::min<int64_t>(kc, kCTail);
  steps(kc - tail);
  prefetch_rows<R, NV>(c, ldc);
  steps(tail);
  store_tile<R, NV>(acc, c, ldc, last, alpha, beta);
}

// kKernels[direct A][BRead][rows - 1][vectors - 1]; kBCopy only with packed A.
template <bool DA, int B, int... I>
constexpr std::array<std::array<Kernel, 2>, kMR> kernel_rows(std::integer_sequence<int, I...>) {
  return {std::array<Kernel, 2>{&micro_kernel<I + 1, 1, DA, B>, &micro_kernel<I + 1, 2, DA, B>}...};
}
template <bool DA, int B>
constexpr auto kernel_rows() {
  return kernel_rows<DA, B>(std::make_integer_sequence<int, kMR>{});
}
using KernelRows = std::array<std::array<Kernel, 2>, kMR>;
constexpr std::array<std::array<KernelRows, 3>, 2> kKernels{
    {{{kernel_rows<false, kBPacked>(), kernel_rows<false, kBDirect>(), kernel_rows<false, kBCopy>()}},
     {{kernel_rows<true, kBPacked>(), kernel_rows<true, kBDirect>(), KernelRows{}}}}};

// One call's geometry. Packed panels live at fixed offsets of one buffer (B first, 64-byte
// aligned panels; then A). An operand used only once is read in place instead: A (with either
// unit stride) when C has a single column panel, B (row-major) when it has a single row panel.
struct Plan {
  int64_t m, n, k;
  float alpha, beta;
  MatArg<float> a, b;
  float* c;
  int64_t ldc;
  int64_t mp, np;  // row panels of 14, column panels of 32
  int64_t kc;      // depth of a block of k
  bool direct_a, direct_b;
  bool lazy_b;  // B row-major: packed by the first kernel that reads each panel
  float *bpack = nullptr, *apack = nullptr;
  std::atomic<uint8_t>* b_state = nullptr;  // lazy_b: per block of k and column panel
  enum : uint8_t { kUnpacked, kPacking, kPacked };
  int64_t mb = 1, nb = 1;  // C blocks (tasks) along m and n
  const GemmEpilogue<float>* ep = nullptr;  // null when empty

  Plan(int64_t m_, int64_t n_, int64_t k_, float alpha_, MatArg<float> a_, MatArg<float> b_, float beta_, float* c_,
       int64_t ldc_, int nt)
      : m(m_), n(n_), k(k_), alpha(alpha_), beta(beta_), a(a_), b(b_), c(c_), ldc(ldc_) {
    mp = (m + kMR - 1) / kMR;
    np = (n + kNR - 1) / kNR;
    const int64_t nkb = (k + kKC - 1) / kKC;
    kc = (k + nkb - 1) / nkb;
    direct_a = np == 1 && (a.cs == 1 || a.rs == 1);
    direct_b = mp == 1 && b.cs == 1;
    lazy_b = !direct_a && !direct_b && b.cs == 1;
    split_tasks(mp, np, nt, mb, nb);
  }
  size_t b_floats() const { return direct_b ? 0 : size_t(np * kNR * k); }
  size_t a_floats() const { return direct_a ? 0 : size_t(mp * kMR * k); }

  int64_t kc_at(int64_t k0) const { return std::min(kc, k - k0); }
  float* b_panel(int64_t k0, int64_t jr) const { return bpack + k0 * np * kNR + jr * kc_at(k0) * kNR; }
  float* a_panel(int64_t k0, int64_t ir) const { return apack + k0 * mp * kMR + ir * kc_at(k0) * kMR; }

  // Packing runs in units of one block of k and up to kNCPanels panels: B's units first.
  int64_t b_groups() const { return direct_b || lazy_b ? 0 : (np + kNCPanels - 1) / kNCPanels; }
  int64_t a_groups() const { return direct_a ? 0 : (mp + kNCPanels - 1) / kNCPanels; }
  int64_t pack_units() const { return (k + kc - 1) / kc * (b_groups() + a_groups()); }
  void pack_unit(int64_t u) const {
    const int64_t per_k = b_groups() + a_groups(), k0 = u / per_k * kc, g = u % per_k;
    const int64_t p0 = (g < b_groups() ? g : g - b_groups()) * kNCPanels;
    if (g < b_groups()) {
      pack_b(b, n, k0, kc_at(k0), p0, std::min(np, p0 + kNCPanels), b_panel(k0, p0));
      return;
    }
    for (int64_t ir = p0; ir < std::min(mp, p0 + kNCPanels); ir++)
      pack_a(a, ir * kMR, std::min<int64_t>(kMR, m - ir * kMR), k0, kc_at(k0), a_panel(k0, ir));
  }

  // Points tile.b at B's panel jr of the block of k at k0 and returns how the kernel reads it.
  // With lazy_b, the first tile to claim an unpacked panel packs it as it reads it; a tile
  // that finds the panel claimed but not yet packed reads B in place rather than wait.
  BRead b_source(int64_t k0, int64_t jr, Tile& tile) const {
    const float* in_place = b.data + k0 * b.rs + jr * kNR;
    if (direct_b) {
      tile.b = in_place;
      return kBDirect;
    }
    tile.b = b_panel(k0, jr);
    if (!lazy_b) return kBPacked;
    std::atomic<uint8_t>& st = b_state[k0 / kc * np + jr];
    uint8_t seen = st.load(std::memory_order_acquire);
    if (seen == kPacked) return kBPacked;
    tile.bcopy = b_panel(k0, jr);
    tile.b = in_place;
    return seen == kUnpacked && st.compare_exchange_strong(seen, kPacking, std::memory_order_relaxed) ? kBCopy
                                                                                                      : kBDirect;
  }

  // C block t: its row panels and column panels (even split), all of k.
  void compute_block(int64_t t) const {
    const int64_t bi = t / nb, bj = t % nb;
    const int64_t ir0 = bi * mp / mb, ir1 = (bi + 1) * mp / mb;
    const int64_t jr0 = bj * np / nb, jr1 = (bj + 1) * np / nb;
    Tile tile{nullptr, a.rs, a.cs, nullptr, b.rs, nullptr, ldc, 0, 0, alpha, beta, nullptr};
    for (int64_t k0 = 0; k0 < k; k0 += kc) {
      tile.kc = kc_at(k0);
      tile.beta = k0 == 0 ? beta : 1.f;
      for (int64_t ir = ir0; ir < ir1; ir++) {
        const int64_t rows = std::min<int64_t>(kMR, m - ir * kMR);
        tile.a = direct_a ? a.data + ir * kMR * a.rs + k0 * a.cs : a_panel(k0, ir);
        for (int64_t jr = jr0; jr < jr1; jr++) {
          const int64_t cols = std::min<int64_t>(kNR, n - jr * kNR);
          const size_t nv = cols > 16 ? 2 : 1;
          const BRead mode = b_source(k0, jr, tile);
          tile.c = c + ir * kMR * ldc + jr * kNR;
          tile.last = lanes(cols - 16 * int64_t(nv - 1));
          const KernelRows& kernels = kKernels[direct_a][mode];
          if (direct_a && a.cs == 1 && rows > kDirectRows) {  // never with lazy_b
            kernels[kDirectRows - 1][nv - 1](tile);
            Tile rest = tile;
            rest.a += kDirectRows * a.rs;
            rest.c += kDirectRows * ldc;
            kernels[size_t(rows - kDirectRows - 1)][nv - 1](rest);
          } else {
            kernels[size_t(rows - 1)][nv - 1](tile);
          }
          if (mode == kBCopy) b_state[k0 / kc * np + jr].store(kPacked, std::memory_order_release);
          if (ep && k0 + tile.kc >= k) tile_epilogue(*ep, tile.c, ldc, ir * kMR, rows, jr * kNR, cols);
        }
      }
    }
  }
};

struct Buffer {
  void* p;
  size_t bytes;
  explicit Buffer(size_t nbytes) : p(nbytes ? cpu_alloc(nbytes) : nullptr), bytes(nbytes) {}
  ~Buffer() {
    if (p) cpu_free(p, bytes);
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

}  // namespace

void sgemm_avx512(int64_t m, int64_t n, int64_t k, float alpha, MatArg<float> a, MatArg<float> b, float beta,
                  float* c, int64_t ldc, const GemmEpilogue<float>& ep) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0 || alpha == 0.f) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    if (!ep.empty()) ep.apply(c, ldc, 0, m, 0, n);
    return;
  }
  // Worth a second thread from ~2M multiply-adds (~20 us on one core).
  const int nt = (m * n * k < (int64_t(1) << 21) || in_parallel_region()) ? 1 : max_threads();
  Plan pl(m, n, k, alpha, a, b, beta, c, ldc, nt);
  if (!ep.empty()) pl.ep = &ep;
  Buffer buf((pl.b_floats() + pl.a_floats()) * sizeof(float));
  pl.bpack = static_cast<float*>(buf.p);
  pl.apack = pl.bpack + pl.b_floats();
  std::unique_ptr<std::atomic<uint8_t>[]> b_state;
  if (pl.lazy_b) {
    b_state.reset(new std::atomic<uint8_t>[size_t((k + pl.kc - 1) / pl.kc * pl.np)]());
    pl.b_state = b_state.get();
  }
  claim_units(nt, pl.pack_units(), [&](int64_t u) { pl.pack_unit(u); });
  claim_units(nt, pl.mb * pl.nb, [&](int64_t t) { pl.compute_block(t); });
}

#if defined(FW_BGEMM_AVX512)
// Note [bfloat16 GEMM]
// vdpbf16ps multiplies 16 pairs of bfloat16 and adds both products to 16 float32 lanes: 32
// multiply-adds per instruction at the rate of one 512-bit FMA (16), so the same 14 x 32 register
// tile as the float32 kernel runs twice the flops (a measured 234 against 117 GFLOP/s per Zen 4
// core in a register-only loop). The kernel steps k two at a time:
//  - packed B holds, for each pair of k (p, p+1) and each of 32 columns j, the 32-bit word
//    b(p, j) | b(p+1, j) << 16: two zmm per pair, the bytes per pair of one float32 step. Blocks
//    of kBKC = 1024 steps of k (a task's 8 panels: 512 KB of the 1 MB L2) hold W4's k = 784 and
//    1024 in one block (768, as sgemm's 384 steps in bytes: 392-402 GFLOP/s on its shapes with 2
//    threads; 1024: 408-435);
//  - packed A holds, for each pair, the word a(i, p) | a(i, p+1) << 16 of each of 14 rows, which
//    the kernel broadcasts;
//  - an odd k pads the last pair with a zero high half (a zero product whatever B holds there).
// Operands contiguous along k (row-major A, transposed B) already store each pair as one word,
// read in place and turned with the float kernel's 8x8 transposes; the other layouts widen 16
// bfloat16 of two rows to 32 bits and merge them. Accumulation is float32 from the first
// product (vdpbf16ps rounds each pair's sum to nearest even and treats denormal inputs as zero);
// C is float32, and the finished tile gets the float epilogue and, for bfloat16 results, is
// rounded to bfloat16 as fw::BFloat16 rounds (not with vcvtneps2bf16, which flushes denormals)
// while still in L1. A product with one block of k (k <= 1024) and beta == 0 needs no float32 C:
// its tiles are rounded in registers and stored as bfloat16 directly, or, with an epilogue, go
// through one tile-sized buffer on the stack.
namespace {

constexpr int64_t kBKC = 1024;  // deepest block of k (even): 512 pairs

inline __m512i widen16(const uint16_t* p, __mmask16 mk) {
  return _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, p));
}
inline __m512i pair_words(__m512i lo, __m512i hi) { return _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)); }

// Float lanes to bfloat16 bits: nearest even, NaN to 0x7fc0 (fw::BFloat16's conversion).
inline __m256i round_bf16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), _mm512_set1_epi32(0x7fc0));
  return _mm512_cvtepi32_epi16(r);
}

// dst[q * ldd + i] = the word src[i * lds + 2q .. 2q + 1] for i < rows (0 for rows <= i < 8),
// q < nq; lanes outside `keep` are not stored. Words are read at any 2-byte alignment.
void pack_pairs8(const uint16_t* src, int64_t lds, int64_t rows, int64_t nq, uint32_t* dst, int64_t ldd,
                 __mmask8 keep) {
  for (int64_t q0 = 0; q0 < nq; q0 += 8) {
    const int64_t qr = std::min<int64_t>(8, nq - q0);
    const __mmask8 km = __mmask8(lanes(qr));
    __m256 r[8];
    for (int i = 0; i < 8; i++)
      r[i] = i < rows ? _mm256_maskz_loadu_ps(km, src + i * lds + 2 * q0) : _mm256_setzero_ps();
    transpose8(r);
    for (int64_t qq = 0; qq < qr; qq++) _mm256_mask_storeu_ps(dst + (q0 + qq) * ldd, keep, r[qq]);
  }
}

// Element (r, p) of a strided bfloat16 operand, 0 outside rows x k.
inline uint32_t elem(const MatArg<uint16_t>& x, int64_t r, int64_t rows, int64_t p, int64_t pend) {
  return r < rows && p < pend ? x.data[r * x.rs + p * x.cs] : 0u;
}

// B(k0 .. k0+kc, columns of panels jr0 .. jr1) into panels of nq = ceil(kc / 2) pairs x 32 words
// (dst + (jr - jr0) * nq * 32), zero past column n and past k.
void pack_b_bf16(const MatArg<uint16_t>& b, int64_t n, int64_t k0, int64_t kc, int64_t jr0, int64_t jr1,
                 uint32_t* dst) {
  const int64_t nq = (kc + 1) / 2;
  if (b.cs == 1) {
    for (int64_t q = 0; q < nq; q++) {
      const uint16_t* r0 = b.data + (k0 + 2 * q) * b.rs;
      const bool two = 2 * q + 1 < kc;
      for (int64_t jr = jr0; jr < jr1; jr++) {
        uint32_t* d = dst + (jr - jr0) * nq * kNR + q * kNR;
        for (int h = 0; h < 2; h++) {
          const int64_t j = jr * kNR + 16 * h;
          const __mmask16 mk = lanes(n - j);
          const __m512i lo = widen16(r0 + j, mk);
          const __m512i hi = two ? widen16(r0 + b.rs + j, mk) : _mm512_setzero_si512();
          _mm512_store_si512(d + 16 * h, pair_words(lo, hi));
        }
      }
    }
    return;
  }
  for (int64_t jr = jr0; jr < jr1; jr++) {
    const int64_t j0 = jr * kNR, nr = std::min<int64_t>(kNR, n - j0);
    uint32_t* d = dst + (jr - jr0) * nq * kNR;
    if (b.rs == 1) {
      for (int g = 0; g < kNR / 8; g++)
        pack_pairs8(b.data + k0 + (j0 + 8 * g) * b.cs, b.cs, std::clamp<int64_t>(nr - 8 * g, 0, 8), kc / 2,
                    d + 8 * g, kNR, 0xFF);
      if (kc % 2)
        for (int64_t j = 0; j < kNR; j++) d[(nq - 1) * kNR + j] = elem(b, k0 + kc - 1, k0 + kc, j0 + j, n) ;
    } else {
      for (int64_t q = 0; q < nq; q++)
        for (int64_t j = 0; j < kNR; j++) {
          const int64_t p = k0 + 2 * q;
          d[q * kNR + j] = elem(b, p, k0 + kc, j0 + j, n) | elem(b, p + 1, k0 + kc, j0 + j, n) << 16;
        }
    }
  }
}

// A(i0 .. i0+mr, k0 .. k0+kc), mr <= 14, into dst[ceil(kc / 2)][14] words; rows past mr unset.
void pack_a_bf16(const MatArg<uint16_t>& a, int64_t i0, int64_t mr, int64_t k0, int64_t kc, uint32_t* dst) {
  const int64_t nq = (kc + 1) / 2;
  const uint16_t* src = a.data + i0 * a.rs + k0 * a.cs;
  if (a.rs == 1) {
    const __mmask16 mm = lanes(mr);
    for (int64_t q = 0; q < nq; q++) {
      const __m512i lo = widen16(src + 2 * q * a.cs, mm);
      const __m512i hi = 2 * q + 1 < kc ? widen16(src + (2 * q + 1) * a.cs, mm) : _mm512_setzero_si512();
      _mm512_mask_storeu_epi32(dst + q * kMR, mm, pair_words(lo, hi));
    }
  } else if (a.cs == 1) {
    pack_pairs8(src, a.rs, std::min<int64_t>(mr, 8), kc / 2, dst, kMR, 0xFF);
    if (mr > 8) pack_pairs8(src + 8 * a.rs, a.rs, mr - 8, kc / 2, dst + 8, kMR, __mmask8(lanes(kMR - 8)));
    if (kc % 2)
      for (int64_t i = 0; i < mr; i++) dst[(nq - 1) * kMR + i] = src[i * a.rs + kc - 1];
  } else {
    const MatArg<uint16_t> s{src, a.rs, a.cs};
    for (int64_t q = 0; q < nq; q++)
      for (int64_t i = 0; i < mr; i++) dst[q * kMR + i] = elem(s, i, mr, 2 * q, kc) | elem(s, i, mr, 2 * q + 1, kc) << 16;
  }
}

struct BTile {
  const uint32_t* a;  // packed A panel: word (i, q) at a[q * 14 + i]
  const uint32_t* b;  // packed B panel: word (q, j) at b[q * 32 + j]
  float* c;
  int64_t ldc;
  int64_t nq;  // pairs of k
  __mmask16 last;
  float alpha, beta;
  uint16_t* out = nullptr;  // set: C = alpha * A B goes straight to out as bfloat16 (c unused)
  int64_t ldo = 0;
};
using BKernel = void (*)(const BTile&);

template <int R, int NV>
void bf16_kernel(const BTile& t) {
  const uint32_t* __restrict ap = t.a;
  const uint32_t* __restrict bp = t.b;
  float* const c = t.c;
  const int64_t ldc = t.ldc, nq = t.nq;
  const __mmask16 last = t.last;
  __m512 acc[R][NV];
  zero_tile<R, NV>(acc);
  auto steps = [&](int64_t n) {
#pragma GCC unroll 2
    for (int64_t q = 0; q < n; q++) {
      __m512bh bv[NV];
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++) bv[v] = (__m512bh)_mm512_load_si512(bp + 16 * v);
#pragma GCC unroll 14
      for (int i = 0; i < R; i++) {
        const __m512bh av = (__m512bh)_mm512_set1_epi32(int(ap[i]));
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) acc[i][v] = _mm512_dpbf16_ps(acc[i][v], av, bv[v]);
      }
      ap += kMR;
      bp += kNR;
    }
  };
  if (t.out) {  // one block of k and no epilogue: rounded in registers (BPlan::direct)
    steps(nq);
    const __m512 va = _mm512_set1_ps(t.alpha);
#pragma GCC unroll 14
    for (int i = 0; i < R; i++) {
#pragma GCC unroll 2
      for (int v = 0; v < NV; v++)
        _mm256_mask_storeu_epi16(t.out + i * t.ldo + 16 * v, v == NV - 1 ? last : __mmask16(0xFFFF),
                                 round_bf16(_mm512_mul_ps(va, acc[i][v])));
    }
    return;
  }
  const int64_t tail = std::min<int64_t>(nq, kCTail);
  steps(nq - tail);
  prefetch_rows<R, NV>(c, ldc);
  steps(tail);
  store_tile<R, NV>(acc, c, ldc, last, t.alpha, t.beta);
}

template <int... I>
constexpr std::array<std::array<BKernel, 2>, kMR> bf16_kernel_rows(std::integer_sequence<int, I...>) {
  return {std::array<BKernel, 2>{&bf16_kernel<I + 1, 1>, &bf16_kernel<I + 1, 2>}...};
}
constexpr std::array<std::array<BKernel, 2>, kMR> kBKernels = bf16_kernel_rows(std::make_integer_sequence<int, kMR>{});

// Rows x cols of float C at (i0, j0) rounded into out (ldo).
void round_tile(const float* c, int64_t ldc, uint16_t* out, int64_t ldo, int64_t rows, int64_t cols) {
  for (int64_t i = 0; i < rows; i++)
    for (int64_t v = 0; v < cols; v += 16) {
      const __mmask16 mk = lanes(cols - v);
      _mm256_mask_storeu_epi16(out + i * ldo + v, mk, round_bf16(_mm512_maskz_loadu_ps(mk, c + i * ldc + v)));
    }
}

// One call's geometry (as Plan, without the in-place variants: both operands are always packed).
struct BPlan {
  int64_t m, n, k;
  float alpha, beta;
  MatArg<uint16_t> a, b;
  float* c;
  int64_t ldc;
  uint16_t* out;
  int64_t ldo;
  const GemmEpilogue<float>* ep = nullptr;
  int64_t mp, np, kc;  // kc: elements of k per block, even
  int64_t mb = 1, nb = 1;
  // One block of k, beta == 0 and a bfloat16 result: tiles go to out rounded (from registers, or
  // through a tile on the stack for the epilogue), with no float32 C at all.
  bool direct = false;
  uint32_t *bpack = nullptr, *apack = nullptr;

  BPlan(int64_t m_, int64_t n_, int64_t k_, float alpha_, MatArg<uint16_t> a_, MatArg<uint16_t> b_, float beta_,
        float* c_, int64_t ldc_, uint16_t* out_, int64_t ldo_, int nt)
      : m(m_), n(n_), k(k_), alpha(alpha_), beta(beta_), a(a_), b(b_), c(c_), ldc(ldc_), out(out_), ldo(ldo_) {
    mp = (m + kMR - 1) / kMR;
    np = (n + kNR - 1) / kNR;
    const int64_t nkb = (k + kBKC - 1) / kBKC;
    kc = (k + nkb - 1) / nkb;
    kc += kc % 2;
    split_tasks(mp, np, nt, mb, nb);
    direct = out && beta == 0.f && nkb == 1;
  }
  int64_t pairs() const { return (k + 1) / 2; }
  size_t b_words() const { return size_t(np * kNR * pairs()); }
  size_t a_words() const { return size_t(mp * kMR * pairs()); }
  int64_t kc_at(int64_t k0) const { return std::min(kc, k - k0); }
  int64_t nq_at(int64_t k0) const { return (kc_at(k0) + 1) / 2; }
  uint32_t* b_panel(int64_t k0, int64_t jr) const { return bpack + k0 / 2 * np * kNR + jr * nq_at(k0) * kNR; }
  uint32_t* a_panel(int64_t k0, int64_t ir) const { return apack + k0 / 2 * mp * kMR + ir * nq_at(k0) * kMR; }

  int64_t b_groups() const { return (np + kNCPanels - 1) / kNCPanels; }
  int64_t a_groups() const { return (mp + kNCPanels - 1) / kNCPanels; }
  int64_t pack_units() const { return (k + kc - 1) / kc * (b_groups() + a_groups()); }
  void pack_unit(int64_t u) const {
    const int64_t per_k = b_groups() + a_groups(), k0 = u / per_k * kc, g = u % per_k;
    const int64_t p0 = (g < b_groups() ? g : g - b_groups()) * kNCPanels;
    if (g < b_groups()) {
      pack_b_bf16(b, n, k0, kc_at(k0), p0, std::min(np, p0 + kNCPanels), b_panel(k0, p0));
      return;
    }
    for (int64_t ir = p0; ir < std::min(mp, p0 + kNCPanels); ir++)
      pack_a_bf16(a, ir * kMR, std::min<int64_t>(kMR, m - ir * kMR), k0, kc_at(k0), a_panel(k0, ir));
  }

  void compute_block(int64_t t) const {
    const int64_t bi = t / nb, bj = t % nb;
    const int64_t ir0 = bi * mp / mb, ir1 = (bi + 1) * mp / mb;
    const int64_t jr0 = bj * np / nb, jr1 = (bj + 1) * np / nb;
    BTile tile{nullptr, nullptr, nullptr, ldc, 0, 0, alpha, beta};
    for (int64_t k0 = 0; k0 < k; k0 += kc) {
      tile.nq = nq_at(k0);
      tile.beta = k0 == 0 ? beta : 1.f;
      const bool final_block = k0 + kc >= k;
      for (int64_t ir = ir0; ir < ir1; ir++) {
        const int64_t rows = std::min<int64_t>(kMR, m - ir * kMR);
        tile.a = a_panel(k0, ir);
        for (int64_t jr = jr0; jr < jr1; jr++) {
          const int64_t cols = std::min<int64_t>(kNR, n - jr * kNR);
          const size_t nv = cols > 16 ? 2 : 1;
          tile.b = b_panel(k0, jr);
          tile.last = lanes(cols - 16 * int64_t(nv - 1));
          if (direct) {
            uint16_t* o = out + ir * kMR * ldo + jr * kNR;
            if (!ep) {
              tile.out = o;
              tile.ldo = ldo;
              kBKernels[size_t(rows - 1)][nv - 1](tile);
              continue;
            }
            // The epilogue needs the float tile: it goes through a buffer on the stack.
            alignas(64) float buf[kMR * kNR];
            BTile bt = tile;
            bt.c = buf;
            bt.ldc = kNR;
            kBKernels[size_t(rows - 1)][nv - 1](bt);
            tile_epilogue(*ep, buf, kNR, ir * kMR, rows, jr * kNR, cols);
            round_tile(buf, kNR, o, ldo, rows, cols);
            continue;
          }
          tile.c = c + ir * kMR * ldc + jr * kNR;
          kBKernels[size_t(rows - 1)][nv - 1](tile);
          if (!final_block) continue;
          if (ep) tile_epilogue(*ep, tile.c, ldc, ir * kMR, rows, jr * kNR, cols);
          if (out) round_tile(tile.c, ldc, out + ir * kMR * ldo + jr * kNR, ldo, rows, cols);
        }
      }
    }
  }
};

}  // namespace

void bgemm_avx512(int64_t m, int64_t n, int64_t k, float alpha, MatArg<uint16_t> a, MatArg<uint16_t> b, float beta,
                  float* c, int64_t ldc, const GemmEpilogue<float>& ep, uint16_t* out, int64_t ldo) {
  if (m <= 0 || n <= 0) return;
  std::unique_ptr<Buffer> cbuf;  // C when the caller gave none
  auto own_c = [&] {
    if (c) return;
    cbuf = std::make_unique<Buffer>(size_t(m * n) * sizeof(float));
    c = static_cast<float*>(cbuf->p);
    ldc = n;
  };
  if (k <= 0 || alpha == 0.f) {
    own_c();
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == 0.f ? 0.f : beta * c[i * ldc + j];
    if (!ep.empty()) ep.apply(c, ldc, 0, m, 0, n);
    if (out) round_tile(c, ldc, out, ldo, m, n);
    return;
  }
  const int nt = (m * n * k < (int64_t(1) << 22) || in_parallel_region()) ? 1 : max_threads();
  BPlan pl(m, n, k, alpha, a, b, beta, c, ldc, out, ldo, nt);
  if (!ep.empty()) pl.ep = &ep;
  if (!pl.direct) {
    own_c();
    pl.c = c;
    pl.ldc = ldc;
  }
  Buffer buf((pl.b_words() + pl.a_words()) * sizeof(uint32_t));
  pl.bpack = static_cast<uint32_t*>(buf.p);
  pl.apack = pl.bpack + pl.b_words();
  claim_units(nt, pl.pack_units(), [&](int64_t u) { pl.pack_unit(u); });
  claim_units(nt, pl.mb * pl.nb, [&](int64_t t) { pl.compute_block(t); });
}
#endif  // FW_BGEMM_AVX512

}  // namespace fw::detail

#pragma GCC diagnostic pop
#endif  // FW_SGEMM_AVX512
