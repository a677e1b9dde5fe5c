// Note [GEMM through Eigen]
// double, and float in builds without AVX2 (FW_NATIVE=OFF, or an older CPU), multiply through
// Eigen 3.4's blocked GEMM; float with AVX-512 runs fw's own kernel (Note [Native float32 GEMM] in
// gemm_f32.cpp), and with AVX2 its plainer sibling (Note [AVX2 float32 GEMM] in
// gemm_f32_avx2.cpp), except matrix-vector shapes, which stay on Eigen's GEMV. Eigen runs
// single-threaded here (EIGEN_DONT_PARALLELIZE): large products are split into row or column
// blocks on fw's thread pool (Note [Thread pool]), whose workers sleep instead of spinning when
// the machine is busy. Tensors are mapped, never copied, when one of their strides is 1: a
// row-major Map for unit column stride, a column-major Map for unit row stride (a transposed
// view). Eigen packs panels itself, so both layouts run at the same speed. The four layout pairs
// are instantiated once per dtype in this file only, keeping Eigen out of every other
// translation unit.
#include "core/ops/gemm.h"

#include "core/ops/gemm_f32.h"
#include "core/parallel.h"

// GCC 12 reports false maybe-uninitialized warnings inside Eigen's AVX-512 packet code.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define EIGEN_DONT_PARALLELIZE
#include <Eigen/Core>
#pragma GCC diagnostic pop
#include <algorithm>
#include <type_traits>
#include <vector>

namespace fw::detail {

namespace {

template <class T, int Order>
using ConstMap = Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Order>, 0, Eigen::OuterStride<>>;
template <class T>
using OutMap = Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>, 0, Eigen::OuterStride<>>;

template <class T, int OA, int OB>
void eigen_gemm(int64_t m, int64_t n, int64_t k, T alpha, const T* a, int64_t lda, const T* b, int64_t ldb, T beta,
                T* c, int64_t ldc) {
  ConstMap<T, OA> A(a, m, k, Eigen::OuterStride<>(lda));
  ConstMap<T, OB> B(b, k, n, Eigen::OuterStride<>(ldb));
  OutMap<T> C(c, m, n, Eigen::OuterStride<>(ldc));
  if (beta == T(0)) {
    if (alpha == T(1)) C.noalias() = A * B;
    else C.noalias() = (alpha * A) * B;
  } else {
    if (beta != T(1)) C *= beta;
    if (alpha == T(1)) C.noalias() += A * B;
    else C.noalias() += (alpha * A) * B;
  }
}

// Picks the storage order of an operand: 0 = row-major (unit column stride), 1 = column-major.
// -1 when neither stride is unit and the operand must be packed. ld receives the outer stride.
template <class T>
int layout_of(const MatArg<T>& x, int64_t rows, int64_t cols, int64_t& ld) {
  if (x.cs == 1 || cols == 1) {
    ld = rows == 1 ? cols : x.rs;
    return 0;
  }
  if (x.rs == 1 || rows == 1) {
    ld = cols == 1 ? rows : x.cs;
    return 1;
  }
  return -1;
}

template <class T>
void pack(MatArg<T>& x, int64_t rows, int64_t cols, std::vector<T>& buf) {
  buf.resize(size_t(rows * cols));
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) buf[size_t(i * cols + j)] = x.data[i * x.rs + j * x.cs];
  x = {buf.data(), cols, 1};
}

}  // namespace

template <class T>
void gemm(int64_t m, int64_t n, int64_t k, T alpha, MatArg<T> a, MatArg<T> b, T beta, T* c, int64_t ldc,
          const GemmEpilogue<T>& ep) {
  if (m == 0 || n == 0) return;
  if (k == 0 || alpha == T(0)) {
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == T(0) ? T(0) : beta * c[i * ldc + j];
    if (!ep.empty()) ep.apply(c, ldc, 0, m, 0, n);
    return;
  }
#if defined(FW_SGEMM_AVX512)
  // Matrix-vector products stay on Eigen's GEMV kernels, which read the matrix once.
  if constexpr (std::is_same_v<T, float>) {
    if (m > 1 && n > 1) return sgemm_avx512(m, n, k, alpha, a, b, beta, c, ldc, ep);
  }
#elif defined(FW_SGEMM_AVX2)
  // One row times a Linear's weight (both contiguous in k) takes the skinny kernel (Note [Skinny
  // float32 GEMM]); other matrix-vector products stay on Eigen's GEMV.
  if constexpr (std::is_same_v<T, float>) {
    if (n > 1 && (m > 1 || (a.cs == 1 && b.rs == 1))) return sgemm_avx2(m, n, k, alpha, a, b, beta, c, ldc, ep);
  }
#endif
  std::vector<T> abuf, bbuf;
  int64_t lda = 0, ldb = 0;
  int oa = layout_of(a, m, k, lda);
  if (oa < 0) oa = (pack(a, m, k, abuf), layout_of(a, m, k, lda));
  int ob = layout_of(b, k, n, ldb);
  if (ob < 0) ob = (pack(b, k, n, bbuf), layout_of(b, k, n, ldb));
  constexpr int R = Eigen::RowMajor, C = Eigen::ColMajor;
  // Rows [i0, i1) x columns [j0, j1) of C; A's rows and B's columns start at the block's corner.
  auto block = [&](int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
    const T* ap = a.data + (oa == 0 ? i0 * lda : i0);
    const T* bp = b.data + (ob == 0 ? j0 : j0 * ldb);
    T* cp = c + i0 * ldc + j0;
    const int64_t mm = i1 - i0, nn = j1 - j0;
    if (oa == 0 && ob == 0) eigen_gemm<T, R, R>(mm, nn, k, alpha, ap, lda, bp, ldb, beta, cp, ldc);
    else if (oa == 0) eigen_gemm<T, R, C>(mm, nn, k, alpha, ap, lda, bp, ldb, beta, cp, ldc);
    else if (ob == 0) eigen_gemm<T, C, R>(mm, nn, k, alpha, ap, lda, bp, ldb, beta, cp, ldc);
    else eigen_gemm<T, C, C>(mm, nn, k, alpha, ap, lda, bp, ldb, beta, cp, ldc);
    // Eigen has no epilogue hook: a second pass over the block, by the thread that just wrote it.
    if (!ep.empty()) ep.apply(c, ldc, i0, mm, j0, nn);
  };
  // Split the longer side of C into one block per thread, in multiples of 64 (Eigen's panels),
  // once the product is worth waking a worker for (~0.25 ms of work).
  const int64_t flops = m * n * k;
  const int nt = max_threads();
  if (nt == 1 || flops < (int64_t(1) << 21) || in_parallel_region()) {
    block(0, m, 0, n);
    return;
  }
  const bool rows = m >= n;
  const int64_t len = rows ? m : n;
  const int64_t step = std::max<int64_t>(64, ((len + nt - 1) / nt + 63) / 64 * 64);
  parallel_for(0, (len + step - 1) / step, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t bi = b0; bi < b1; bi++) {
      int64_t lo = bi * step, hi = std::min(len, lo + step);
      if (rows) block(lo, hi, 0, n);
      else block(0, m, lo, hi);
    }
  });
}

template void gemm<float>(int64_t, int64_t, int64_t, float, MatArg<float>, MatArg<float>, float, float*, int64_t,
                          const GemmEpilogue<float>&);
template void gemm<double>(int64_t, int64_t, int64_t, double, MatArg<double>, MatArg<double>, double, double*,
                           int64_t, const GemmEpilogue<double>&);

}  // namespace fw::detail
