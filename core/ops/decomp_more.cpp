// More linear algebra (include/fw/linalg_more.h): solve_triangular / triangular_solve,
// cholesky_solve / cholesky_inverse, lstsq, lu_factor / lu / lu_solve / lu_unpack, matrix_exp,
// eig / eigvals, and the composites multi_dot, cond, tensorinv, tensorsolve, diagonal, ger, vdot,
// diagflat, pdist, frobenius_norm, nuclear_norm, cross.
//
// Same scheme as Note [Linear algebra through Eigen] in core/ops/decomp.cpp: forwards run per
// matrix (Eigen, or the plain partial-pivoting LU below) in parallel over the batch, never throwing
// inside the parallel region; backwards are fw ops on saved inputs/outputs, so they are themselves
// differentiable. Formulas (real case):
//   solve_triangular (left): gB = solve_triangular(A^T, G, !upper), gA = -gB X^T restricted to the
//     triangle that was read (strictly, for unitriangular). The right-sided solve is the transposed
//     left one.
//   cholesky_solve: gB = cholesky_solve(G, L), gL = -(gB X^T + X gB^T) L (upper: -U (...)), over the
//     whole of L as PyTorch 1.13 (not restricted to the triangle).
//   lstsq: PyTorch's pinv-based backward: gA = pinv_backward(G B^T, pinv(A), A), gB = pinv(A)^T G.
//   lu_factor / lu: PyTorch's linalg_lu_backward (square, wide and tall):
//     square  gA = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T;
//     wide    gA = P L^-T [(tril(L^T gL - gU2 U2^T, -1) + triu(gU1 U1^T)) U1^-T, gU2];
//     tall    gA = P [L1^-T (tril(L1^T gL1, -1) + triu(gU U^T - L2^T gL2)); gL2] U^-T.
//   matrix_exp: the upper-right block of exp([[A^T, G], [0, A^T]]).
//   eig: PyTorch's linalg_eig_backward, V^-H (diag(gL) + (V^H gV - V^H V re(diag(V^H gV))) / conj(E)) V^H,
//     real part, with the complex solve done as a real 2n x 2n one.
#include <Eigen/Dense>
#include <unsupported/Eigen/MatrixFunctions>

#include <algorithm>
#include <cmath>
#include <complex>
#include <functional>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/ops/decomp_common.h"
#include "core/parallel.h"
#include "fw/autograd.h"
#include "fw/error.h"
#include "fw/linalg_more.h"
#include "fw/ops.h"
#include "fw/ops_extra.h"

namespace fw {
namespace {

using autograd::AutogradContext;
using autograd::variable_list;

// ---- helpers (the shared ones are in core/ops/decomp_common.h)
using namespace linalg_detail;

void check_same_dtype(const char* op, const Tensor& A, const Tensor& B, const char* a = "A", const char* b = "B") {
  FW_CHECK(A.dtype() == B.dtype(), "[", op, "] Expected ", a, " and ", b, " to have the same dtype, but found ", a,
           " of type ", dtype_name(A.dtype()), " and ", b, " of type ", dtype_name(B.dtype()), " instead");
}

int64_t prod(IntArrayRef s) {
  int64_t p = 1;
  for (int64_t v : s) p *= v;
  return p;
}

bool needs_grad(std::initializer_list<Tensor> ts) {
  if (!GradMode::is_enabled()) return false;
  for (const Tensor& t : ts)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

// ---- triangular solve

// X with A X = B for triangular A (*, n, n) and B (*, n, k) of the same batch shape.
Tensor tri_solve_impl(const Tensor& A0, const Tensor& B0, bool upper, bool unit) {
  Tensor A = A0.contiguous(), B = B0.contiguous();
  int64_t n = A.size(-1), k = B.size(-1), batch = batch_count(A);
  Tensor out = fw::empty(B.sizes(), B.options());
  if (batch == 0 || n == 0 || k == 0) return out.zero_();
  visit_real(A.dtype(), [&]<class T>() {
    const T* pa = A.data_ptr<T>();
    const T* pb = B.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for_each_matrix(batch, n, [&](int64_t i) {
      CMap<T> a(pa + i * n * n, n, n);
      ColMat<T> x = CMap<T>(pb + i * n * k, n, k);
      if (upper && unit) a.template triangularView<Eigen::UnitUpper>().solveInPlace(x);
      else if (upper) a.template triangularView<Eigen::Upper>().solveInPlace(x);
      else if (unit) a.template triangularView<Eigen::UnitLower>().solveInPlace(x);
      else a.template triangularView<Eigen::Lower>().solveInPlace(x);
      MMap<T>(po + i * n * k, n, k) = x;
    });
  });
  return out;
}

// The part of a matrix gradient that a triangular (unitriangular: strictly triangular) read sees.
Tensor tri_part(const Tensor& g, bool upper, bool unit) {
  return upper ? g.triu(unit ? 1 : 0) : g.tril(unit ? -1 : 0);
}

struct TriSolveFn : autograd::Function<TriSolveFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& A, const Tensor& B, bool upper, bool unit) {
    Tensor X = tri_solve_impl(A, B, upper, unit);
    ctx->saved_data["upper"] = upper;
    ctx->saved_data["unit"] = unit;
    ctx->save_for_backward({A, X});
    return X;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    const Tensor &A = s[0], &X = s[1];
    bool upper = ctx->saved_data["upper"].toBool(), unit = ctx->saved_data["unit"].toBool();
    Tensor gB = linalg::solve_triangular(mT(A), g[0], !upper, true, unit);
    Tensor gA = ctx->needs_input_grad(0) ? tri_part(-fw::matmul(gB, mT(X)), upper, unit) : Tensor();
    return {gA, ctx->needs_input_grad(1) ? gB : Tensor(), Tensor(), Tensor()};
  }
};

// ---- cholesky_solve

struct CholSolveFn : autograd::Function<CholSolveFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& B, const Tensor& L, bool upper) {
    Tensor X;
    {
      NoGradGuard ng;
      // (L L^T) X = B: L Y = B, L^T X = Y; (U^T U) X = B: U^T Y = B, U X = Y
      Tensor Y = tri_solve_impl(upper ? mT(L) : L, B, false, false);
      X = tri_solve_impl(upper ? L : mT(L), Y, true, false);
    }
    ctx->saved_data["upper"] = upper;
    ctx->save_for_backward({L, X});
    return X;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    const Tensor &L = s[0], &X = s[1];
    bool upper = ctx->saved_data["upper"].toBool();
    Tensor gB = cholesky_solve(g[0], L, upper);
    Tensor gL;
    if (ctx->needs_input_grad(1)) {
      Tensor common = fw::matmul(gB, mT(X));
      common = common + mT(common);
      gL = upper ? -fw::matmul(L, common) : -fw::matmul(common, L);
    }
    return {ctx->needs_input_grad(0) ? gB : Tensor(), gL, Tensor()};
  }
};

// ---- LU

// In-place partial-pivoting LU of a row-major m x n matrix as LAPACK's getf2: the pivot is the
// first entry of largest |value| in the column; piv 1-based. Returns the 1-based index of the first
// exactly-zero pivot (0 when none).
template <class T>
int64_t lu_inplace(T* a, int64_t m, int64_t n, int32_t* piv) {
  int64_t k = std::min(m, n), info = 0;
  for (int64_t j = 0; j < k; j++) {
    int64_t p = j;
    T best = std::abs(a[j * n + j]);
    for (int64_t i = j + 1; i < m; i++) {
      T v = std::abs(a[i * n + j]);
      if (v > best) {
        best = v;
        p = i;
      }
    }
    piv[j] = int32_t(p + 1);
    if (a[p * n + j] != T(0)) {
      if (p != j)
        for (int64_t c = 0; c < n; c++) std::swap(a[p * n + c], a[j * n + c]);
      T d = a[j * n + j];
      for (int64_t i = j + 1; i < m; i++) a[i * n + j] /= d;
    } else if (info == 0) {
      info = j + 1;
    }
    for (int64_t i = j + 1; i < m; i++) {
      T l = a[i * n + j];
      if (l == T(0)) continue;
      T* ri = a + i * n;
      const T* rj = a + j * n;
      for (int64_t c = j + 1; c < n; c++) ri[c] -= l * rj[c];
    }
  }
  return info;
}

// (LU, pivots int32) of each matrix; info per matrix.
void lu_factor_impl(const Tensor& A, Tensor* LU, Tensor* piv, std::vector<int64_t>* info) {
  int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), batch = batch_count(A);
  *LU = A.contiguous().clone();
  *piv = fw::empty(with_tail(batch_shape(A), {k}), TensorOptions(kInt));
  info->assign(size_t(batch), 0);
  if (batch == 0 || k == 0) return;
  visit_real(A.dtype(), [&]<class T>() {
    T* pa = LU->data_ptr<T>();
    int32_t* pp = piv->data_ptr<int32_t>();
    for_each_matrix(batch, std::max(m, n), [&](int64_t i) {
      (*info)[size_t(i)] = lu_inplace<T>(pa + i * m * n, m, n, pp + i * k);
    });
  });
}

// The m x m permutation matrices P (A = P L U) of LAPACK pivots (*, k), as float of `options`.
Tensor pivots_to_P(const Tensor& piv0, int64_t m, const TensorOptions& options) {
  Tensor piv = piv0.to(kLong).contiguous();
  int64_t k = piv.size(-1), batch = piv.numel() / std::max<int64_t>(k, 1);
  Shape bs(piv.sizes().begin(), piv.sizes().end() - 1);
  if (k == 0) batch = prod(bs);
  Tensor P = fw::zeros(with_tail(bs, {m, m}), TensorOptions(kDouble));
  const int64_t* pp = piv.data_ptr<int64_t>();
  double* po = P.data_ptr<double>();
  std::vector<int64_t> perm(static_cast<size_t>(m));
  for (int64_t b = 0; b < batch; b++) {
    std::iota(perm.begin(), perm.end(), int64_t(0));
    for (int64_t j = 0; j < k; j++) {
      int64_t p = pp[b * k + j] - 1;
      FW_CHECK(p >= j && p < m, "[lu_unpack] pivots must be in [", j + 1, ", ", m, "] (1-based, as LAPACK), but got ",
               p + 1);
      std::swap(perm[size_t(j)], perm[size_t(p)]);
    }
    for (int64_t i = 0; i < m; i++) po[b * m * m + perm[size_t(i)] * m + i] = 1;
  }
  return P.to(options.dtype());
}

// L (*, m, k) unit lower and U (*, k, n) of a packed LU.
void unpack_LU(const Tensor& LU, Tensor* L, Tensor* U) {
  int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
  *L = LU.narrow(-1, 0, k).tril(-1) + fw::eye(m, k, LU.options());
  *U = LU.narrow(-2, 0, k).triu();
}

// PyTorch's linalg_lu_backward for A = P L U (gL, gU defined, of L's and U's shapes).
Tensor lu_backward(const Tensor& gL, const Tensor& gU, const Tensor& P, const Tensor& L, const Tensor& U) {
  int64_t m = L.size(-2), n = U.size(-1), k = std::min(m, n);
  if (m == n) {
    Tensor phi = fw::matmul(mT(L), gL).tril(-1) + fw::matmul(gU, mT(U)).triu();
    Tensor x = linalg::solve_triangular(mT(L), phi, true, true, true);
    x = linalg::solve_triangular(mT(U), x, false, false);
    return fw::matmul(P, x);
  }
  if (m < n) {
    Tensor U1 = U.narrow(-1, 0, k), U2 = U.narrow(-1, k, n - k);
    Tensor gU1 = gU.narrow(-1, 0, k), gU2 = gU.narrow(-1, k, n - k);
    Tensor phi = (fw::matmul(mT(L), gL) - fw::matmul(gU2, mT(U2))).tril(-1) + fw::matmul(gU1, mT(U1)).triu();
    Tensor x1 = linalg::solve_triangular(mT(U1), phi, false, false);
    Tensor x = fw::cat({x1, gU2}, -1);
    x = linalg::solve_triangular(mT(L), x, true, true, true);
    return fw::matmul(P, x);
  }
  Tensor L1 = L.narrow(-2, 0, k), L2 = L.narrow(-2, k, m - k);
  Tensor gL1 = gL.narrow(-2, 0, k), gL2 = gL.narrow(-2, k, m - k);
  Tensor phi = fw::matmul(mT(L1), gL1).tril(-1) + (fw::matmul(gU, mT(U)) - fw::matmul(mT(L2), gL2)).triu();
  Tensor x1 = linalg::solve_triangular(mT(L1), phi, true, true, true);
  Tensor x = fw::cat({x1, gL2}, -2);
  x = linalg::solve_triangular(mT(U), x, false, false);
  return fw::matmul(P, x);
}

struct LuFactorFn : autograd::Function<LuFactorFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& A) {
    Tensor LU, piv;
    std::vector<int64_t> info;
    lu_factor_impl(A, &LU, &piv, &info);
    Tensor code = info_tensor(info, batch_shape(A));
    ctx->mark_non_differentiable({piv, code});
    ctx->save_for_backward({LU, piv});
    return {LU, piv, code};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    const Tensor &LU = s[0], &piv = s[1];
    int64_t m = LU.size(-2), n = LU.size(-1), k = std::min(m, n);
    if (LU.numel() == 0) return {fw::zeros_like(LU)};
    Tensor L, U;
    unpack_LU(LU, &L, &U);
    Tensor P = pivots_to_P(piv, m, LU.options());
    Tensor gL = g[0].narrow(-1, 0, k).tril(-1), gU = g[0].narrow(-2, 0, k).triu();
    return {lu_backward(gL, gU, P, L, U)};
  }
};

// ---- LDL^T (Bunch-Kaufman)

// Note [LDL factorisation]
// linalg.ldl_factor(_ex) returns LAPACK sytrf's packed lower form (PyTorch 1.13 factors the lower
// triangle and zeroes the strict upper one): A = P L D L^T P^T with L unit lower and D symmetric
// block diagonal of 1x1 and 2x2 blocks. The unblocked Bunch-Kaufman recurrence below makes the
// pivot decisions of LAPACK's sytf2 (sytrf runs it for n up to its block size, 64; larger
// matrices go through the blocked panel routine, which decides the same way): with
// alpha = (1 + sqrt 17) / 8, column k keeps a 1x1 pivot when |a_kk| >= alpha * colmax, or when
// |a_kk| >= alpha * colmax * (colmax / rowmax); else row/column imax (the first largest entry below
// the diagonal) comes in as a 1x1 pivot when |a_imax,imax| >= alpha * rowmax, or as the second
// row of a 2x2 block. pivots (1-based): k' for a 1x1 block whose row was swapped with k', -k' on
// both rows of a 2x2 block whose second row was swapped with k'. info is the first k whose
// column was exactly zero (D singular); the factorisation goes on past it as LAPACK's does.
// ldl_solve is sytrs: the forward sweep through P, L and D's blocks, then back through L^T and P^T.
template <class T>
int64_t ldl_inplace(T* a, int64_t n, int32_t* piv) {
  auto A = [&](int64_t i, int64_t j) -> T& { return a[i * n + j]; };  // lower triangle: i >= j
  const T alpha = (T(1) + std::sqrt(T(17))) / T(8);
  int64_t info = 0;
  for (int64_t k = 0; k < n;) {
    int64_t kstep = 1, kp = k, imax = k;
    T absakk = std::abs(A(k, k)), colmax = 0;
    for (int64_t i = k + 1; i < n; i++)
      if (std::abs(A(i, k)) > colmax) colmax = std::abs(A(i, k)), imax = i;
    if (std::max(absakk, colmax) == T(0) || std::isnan(absakk)) {
      if (info == 0) info = k + 1;
      piv[k] = int32_t(k + 1);
      k++;
      continue;
    }
    if (absakk < alpha * colmax) {
      T rowmax = 0;
      for (int64_t j = k; j < imax; j++) rowmax = std::max(rowmax, std::abs(A(imax, j)));
      for (int64_t j = imax + 1; j < n; j++) rowmax = std::max(rowmax, std::abs(A(j, imax)));
      if (absakk >= alpha * colmax * (colmax / rowmax)) {
        kp = k;
      } else if (std::abs(A(imax, imax)) >= alpha * rowmax) {
        kp = imax;
      } else {
        kp = imax;
        kstep = 2;
      }
    }
    const int64_t kk = k + kstep - 1;
    if (kp != kk) {  // symmetric interchange of rows/columns kk and kp of the trailing block
      for (int64_t i = kp + 1; i < n; i++) std::swap(A(i, kk), A(i, kp));
      for (int64_t j = kk + 1; j < kp; j++) std::swap(A(j, kk), A(kp, j));
      std::swap(A(kk, kk), A(kp, kp));
      if (kstep == 2) std::swap(A(k + 1, k), A(kp, k));
    }
    if (kstep == 1) {
      if (k + 1 < n) {
        const T r1 = T(1) / A(k, k);
        for (int64_t j = k + 1; j < n; j++) {
          const T x = r1 * A(j, k);
          for (int64_t i = j; i < n; i++) A(i, j) -= A(i, k) * x;
        }
        for (int64_t i = k + 1; i < n; i++) A(i, k) *= r1;
      }
      piv[k] = int32_t(kp + 1);
    } else {
      if (k + 2 < n) {
        T d21 = A(k + 1, k);
        const T d11 = A(k + 1, k + 1) / d21, d22 = A(k, k) / d21;
        const T t = T(1) / (d11 * d22 - T(1));
        d21 = t / d21;
        for (int64_t j = k + 2; j < n; j++) {
          const T wk = d21 * (d11 * A(j, k) - A(j, k + 1));
          const T wkp1 = d21 * (d22 * A(j, k + 1) - A(j, k));
          for (int64_t i = j; i < n; i++) A(i, j) = A(i, j) - A(i, k) * wk - A(i, k + 1) * wkp1;
          A(j, k) = wk;
          A(j, k + 1) = wkp1;
        }
      }
      piv[k] = piv[k + 1] = -int32_t(kp + 1);
    }
    k += kstep;
  }
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = i + 1; j < n; j++) A(i, j) = 0;
  return info;
}

// B (n x m, row-major) <- A^-1 B from ldl_inplace's LD and pivots.
template <class T>
void ldl_solve_inplace(const T* ld, const int32_t* piv, T* b, int64_t n, int64_t m) {
  auto A = [&](int64_t i, int64_t j) { return ld[i * n + j]; };
  auto row = [&](int64_t i) { return b + i * m; };
  auto swap_rows = [&](int64_t i, int64_t j) {
    if (i != j) std::swap_ranges(row(i), row(i) + m, row(j));
  };
  for (int64_t k = 0; k < n;) {  // L D Y = P^T B
    if (piv[k] > 0) {
      swap_rows(k, piv[k] - 1);
      for (int64_t i = k + 1; i < n; i++)
        for (int64_t c = 0; c < m; c++) row(i)[c] -= A(i, k) * row(k)[c];
      const T r = T(1) / A(k, k);
      for (int64_t c = 0; c < m; c++) row(k)[c] *= r;
      k++;
    } else {
      swap_rows(k + 1, -piv[k] - 1);
      for (int64_t i = k + 2; i < n; i++)
        for (int64_t c = 0; c < m; c++) row(i)[c] = row(i)[c] - A(i, k) * row(k)[c] - A(i, k + 1) * row(k + 1)[c];
      const T akm1k = A(k + 1, k), akm1 = A(k, k) / akm1k, ak = A(k + 1, k + 1) / akm1k;
      const T denom = akm1 * ak - T(1);
      for (int64_t c = 0; c < m; c++) {
        const T bkm1 = row(k)[c] / akm1k, bk = row(k + 1)[c] / akm1k;
        row(k)[c] = (ak * bkm1 - bk) / denom;
        row(k + 1)[c] = (akm1 * bk - bkm1) / denom;
      }
      k += 2;
    }
  }
  for (int64_t k = n - 1; k >= 0;) {  // L^T P^T X = Y
    const bool two = piv[k] < 0;
    for (int64_t q = two ? k - 1 : k; q <= k; q++)
      for (int64_t i = k + 1; i < n; i++)
        for (int64_t c = 0; c < m; c++) row(q)[c] -= A(i, q) * row(i)[c];
    swap_rows(k, (two ? -piv[k] : piv[k]) - 1);
    k -= two ? 2 : 1;
  }
}

// ---- lstsq

enum class Driver { gels, gelsy, gelsd, gelss };

// Note [gelsy's rank]: LAPACK's gelsy (PyTorch's default CPU driver) factors A P = Q R with
// column pivoting and takes the leading r columns while the incremental condition estimate of
// R[:r, :r] stays below 1 / rcond: each step updates estimates of the block's largest and
// smallest singular values (xLAIC1). The update is the 2x2 symmetric eigenproblem
//   diag(sest^2, 0) + [alpha; gamma] [alpha, gamma],   alpha = x . w,
// for x the current singular vector estimate, w the new column above the diagonal and gamma the
// diagonal entry; the new estimate is the square root of its largest (smallest) eigenvalue and
// [s x; c] the new vector, (s, c) its eigenvector. The solution is then the minimum-norm one of
// [R11 R12] y = (Q^T b)[:r], x = P y (the complete orthogonal factorisation gelsy applies).
struct IceStep {
  double est, s, c;
};
// One update of the largest (largest = true) or smallest singular value estimate.
IceStep ice_step(bool largest, double sest, double alpha, double gamma) {
  double t = std::max({std::abs(sest), std::abs(alpha), std::abs(gamma)});
  if (t == 0) return {0, largest ? 1.0 : 0.0, largest ? 0.0 : 1.0};
  double e = sest / t, al = alpha / t, g = gamma / t;  // scaled: no overflow in the squares
  double a = e * e + al * al, b = al * g, d = g * g;
  double h = (a - d) / 2, r = std::hypot(h, b);
  double lmax = (a + d) / 2 + r;
  // The eigenvector of the largest eigenvalue without cancellation; the other is orthogonal.
  double v0, v1;
  if (h >= 0) v0 = h + r, v1 = b;
  else v0 = b, v1 = r - h;
  double nv = std::hypot(v0, v1);
  if (nv == 0) v0 = 1, v1 = 0, nv = 1;
  v0 /= nv, v1 /= nv;
  if (largest) return {t * std::sqrt(lmax), v0, v1};
  // lmin = det / lmax = (e g)^2 / lmax: exact where the difference form cancels.
  double lmin = lmax > 0 ? (e * g) * (e * g) / lmax : 0;
  return {t * std::sqrt(lmin), -v1, v0};
}

template <class T>
int64_t gelsy_rank(const ColMat<T>& R, int64_t mn, double rcond) {
  if (mn == 0 || R(0, 0) == T(0)) return 0;
  std::vector<double> xmin(size_t(mn), 0), xmax(size_t(mn), 0);
  xmin[0] = xmax[0] = 1;
  double smax = std::abs(double(R(0, 0))), smin = smax;
  int64_t rank = 1;
  while (rank < mn) {
    double amin = 0, amax = 0;
    for (int64_t k = 0; k < rank; k++) {
      amin += xmin[size_t(k)] * double(R(k, rank));
      amax += xmax[size_t(k)] * double(R(k, rank));
    }
    double g = double(R(rank, rank));
    IceStep lo = ice_step(false, smin, amin, g), hi = ice_step(true, smax, amax, g);
    if (!(hi.est * rcond <= lo.est)) break;
    for (int64_t k = 0; k < rank; k++) xmin[size_t(k)] *= lo.s, xmax[size_t(k)] *= hi.s;
    xmin[size_t(rank)] = lo.c;
    xmax[size_t(rank)] = hi.c;
    smin = lo.est;
    smax = hi.est;
    rank++;
  }
  return rank;
}

// Solution, rank (int64) and singular values (gelsd / gelss) of each matrix.
void lstsq_impl(const Tensor& A0, const Tensor& B0, double rcond, Driver drv, Tensor* X, Tensor* rank, Tensor* sv) {
  Tensor A = A0.contiguous(), B = B0.contiguous();
  int64_t m = A.size(-2), n = A.size(-1), k = B.size(-1), mn = std::min(m, n), batch = batch_count(A);
  Shape bs = batch_shape(A);
  bool svd = drv == Driver::gelsd || drv == Driver::gelss;
  *X = fw::zeros(with_tail(bs, {n, k}), A.options());
  *rank = fw::zeros(bs, TensorOptions(kLong));
  *sv = svd ? fw::zeros(with_tail(bs, {mn}), A.options()) : fw::empty({0}, A.options());
  if (batch == 0 || mn == 0) return;
  visit_real(A.dtype(), [&]<class T>() {
    const T* pa = A.data_ptr<T>();
    const T* pb = B.data_ptr<T>();
    T* px = X->data_ptr<T>();
    T* ps = svd ? sv->data_ptr<T>() : nullptr;
    int64_t* pr = rank->data_ptr<int64_t>();
    for_each_matrix(batch, std::max(m, n), [&](int64_t i) {
      ColMat<T> a = CMap<T>(pa + i * m * n, m, n);
      ColMat<T> b = CMap<T>(pb + i * m * k, m, k);
      if (svd) {
        Eigen::BDCSVD<ColMat<T>> dec(a, Eigen::ComputeThinU | Eigen::ComputeThinV);
        auto s = dec.singularValues();
        T tol = T(rcond) * s(0);
        int64_t r = 0;
        Eigen::Matrix<T, Eigen::Dynamic, 1> inv_s(mn);
        for (int64_t j = 0; j < mn; j++) {
          bool keep = s(j) > tol;
          r += keep;
          inv_s(j) = keep ? T(1) / s(j) : T(0);
          ps[i * mn + j] = s(j);
        }
        pr[i] = r;
        ColMat<T> x = dec.matrixV() * (inv_s.asDiagonal() * (dec.matrixU().transpose() * b));
        MMap<T>(px + i * n * k, n, k) = x;
        return;
      }
      if (drv == Driver::gelsy) {  // Note [gelsy's rank]
        Eigen::ColPivHouseholderQR<ColMat<T>> qr(a);
        ColMat<T> R = qr.matrixR().template triangularView<Eigen::Upper>();
        int64_t r = gelsy_rank<T>(R, mn, rcond);
        pr[i] = r;
        ColMat<T> x = ColMat<T>::Zero(n, k);
        if (r > 0) {
          ColMat<T> c = (qr.householderQ().transpose() * b).topRows(r);
          // [R11 R12] = T^T Z^T from the QR of its transpose: y = Z T^-T c.
          ColMat<T> Mt = R.topRows(r).transpose();
          Eigen::HouseholderQR<ColMat<T>> z(Mt);
          ColMat<T> Tr = z.matrixQR().topRows(r).template triangularView<Eigen::Upper>();
          ColMat<T> u = Tr.transpose().template triangularView<Eigen::Lower>().solve(c);
          ColMat<T> full = ColMat<T>::Zero(n, k);
          full.topRows(r) = u;
          ColMat<T> y = z.householderQ() * full;
          x = qr.colsPermutation() * y;
        }
        MMap<T>(px + i * n * k, n, k) = x;
        return;
      }
      Eigen::CompleteOrthogonalDecomposition<ColMat<T>> cod(m, n);
      cod.setThreshold(T(0));
      cod.compute(a);
      pr[i] = cod.rank();
      ColMat<T> x = cod.solve(b);
      MMap<T>(px + i * n * k, n, k) = x;
    });
  });
}

bool svd_driver(Driver d) { return d == Driver::gelsd || d == Driver::gelss; }

// Attaches PyTorch's pinv-based lstsq backward to a precomputed solution X.
struct LstsqFn : autograd::Function<LstsqFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& A, const Tensor& B, const Tensor& X) {
    ctx->save_for_backward({A, B});
    return X.clone();
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    const Tensor &A = s[0], &B = s[1], &G = g[0];
    if (A.numel() == 0) return {fw::zeros_like(A), fw::zeros_like(B), Tensor()};
    Tensor P = linalg::pinv(A);
    Tensor gA, gB;
    if (ctx->needs_input_grad(0)) {
      // pinv_backward(G B^T, P, A)
      int64_t m = A.size(-2), n = A.size(-1);
      Tensor gP = fw::matmul(G, mT(B));
      Tensor PT = mT(P), gPT = mT(gP);
      Tensor t1 = -fw::matmul(PT, fw::matmul(gP, PT));
      Tensor t2 = fw::matmul(fw::eye(m, A.options()) - fw::matmul(A, P), fw::matmul(gPT, fw::matmul(P, PT)));
      Tensor t3 = fw::matmul(fw::matmul(PT, P), fw::matmul(gPT, fw::eye(n, A.options()) - fw::matmul(P, A)));
      gA = t1 + t2 + t3;
    }
    if (ctx->needs_input_grad(1)) gB = fw::matmul(mT(P), G);
    return {gA, gB, Tensor()};
  }
};

// ---- matrix_exp

Tensor matrix_exp_impl(const Tensor& A0) {
  Tensor A = A0.contiguous();
  int64_t n = A.size(-1), batch = batch_count(A);
  Tensor out = fw::empty(A.sizes(), A.options());
  if (batch == 0 || n == 0) return out;
  visit_real(A.dtype(), [&]<class T>() {
    const T* pa = A.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for_each_matrix(batch, n, [&](int64_t i) {
      ColMat<T> a = CMap<T>(pa + i * n * n, n, n);
      ColMat<T> e = a.exp();
      MMap<T>(po + i * n * n, n, n) = e;
    });
  });
  return out;
}

struct MatrixExpFn : autograd::Function<MatrixExpFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& A) {
    ctx->save_for_backward({A});
    return matrix_exp_impl(A);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    Tensor A = ctx->get_saved_variables()[0];
    int64_t n = A.size(-1);
    if (A.numel() == 0) return {fw::zeros_like(A)};
    Tensor AT = mT(A);
    Tensor G = g[0].expand(A.sizes());
    Tensor top = fw::cat({AT, G}, -1), bottom = fw::cat({fw::zeros_like(A), AT}, -1);
    Tensor E = linalg::matrix_exp(fw::cat({top, bottom}, -2));
    return {E.narrow(-2, 0, n).narrow(-1, n, n)};
  }
};

// ---- eig

// Eigenvalues (*, n) and, when want_v, eigenvectors (*, n, n) of each real matrix, complex.
void eig_impl(const Tensor& A0, bool want_v, Tensor* L, Tensor* V) {
  Tensor A = A0.contiguous();
  int64_t n = A.size(-1), batch = batch_count(A);
  ScalarType ct = to_complex_type(A.dtype());
  Shape bs = batch_shape(A);
  *L = fw::empty(with_tail(bs, {n}), TensorOptions(ct));
  *V = want_v ? fw::empty(A.sizes(), TensorOptions(ct)) : Tensor();
  if (batch == 0 || n == 0) return;
  std::vector<int64_t> info(size_t(batch), 0);
  visit_real(A.dtype(), [&]<class T>() {
    using C = std::complex<T>;
    const T* pa = A.data_ptr<T>();
    C* pl = L->data_ptr<C>();
    C* pv = want_v ? V->data_ptr<C>() : nullptr;
    for_each_matrix(batch, n, [&](int64_t i) {
      ColMat<T> a = CMap<T>(pa + i * n * n, n, n);
      Eigen::EigenSolver<ColMat<T>> es(a, want_v);
      if (es.info() != Eigen::Success) {
        info[size_t(i)] = 1;
        return;
      }
      auto w = es.eigenvalues();
      for (int64_t j = 0; j < n; j++) pl[i * n + j] = w(j);
      if (want_v) {
        ColMat<C> v = es.eigenvectors();
        Eigen::Map<RowMat<C>>(pv + i * n * n, n, n) = v;
      }
    });
  });
  raise_info("linalg.eig", info, A.dim() > 2, [](int64_t) {
    return std::string("The algorithm failed to converge because the input matrix is ill-conditioned or has too "
                       "many repeated eigenvalues.");
  });
}

// Z with M Z = R for complex M (*, n, n), R (*, n, k), as the real system [[Mr, -Mi], [Mi, Mr]].
Tensor complex_solve(const Tensor& M, const Tensor& R) {
  Tensor Mr = fw::real(M), Mi = fw::imag(M), Rr = fw::real(R), Ri = fw::imag(R);
  Tensor big = fw::cat({fw::cat({Mr, -Mi}, -1), fw::cat({Mi, Mr}, -1)}, -2);
  Tensor z = linalg::solve(big, fw::cat({Rr, Ri}, -2));
  int64_t n = M.size(-1);
  return fw::complex(z.narrow(-2, 0, n), z.narrow(-2, n, n));
}

Tensor mH(const Tensor& t) { return mT(t).conj(); }

struct EigFn : autograd::Function<EigFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& A) {
    Tensor L, V;
    eig_impl(A, true, &L, &V);
    ctx->set_materialize_grads(false);
    ctx->save_for_backward({L, V});
    return {L, V};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    Tensor L = s[0], V = s[1], gL = g[0], gV = g[1];
    if (!gL.defined() && !gV.defined()) return {Tensor()};
    Tensor VH = mH(V);
    if (!gV.defined()) return {fw::real(complex_solve(VH, gL.unsqueeze(-1) * VH))};
    Tensor VhgV = fw::matmul(VH, gV);
    Tensor d = VhgV.diagonal(0, -2, -1);
    {
      NoGradGuard ng;
      Tensor im = fw::imag(d).abs();
      FW_CHECK(!(im > 1e-2).any().item<bool>(),
               "[linalg.eig] linalg_eig_backward: The eigenvectors in the complex case are specified up to "
               "multiplication by e^{i phi}. The specified loss function depends on this quantity, so it is "
               "ill-defined.");
    }
    VhgV = VhgV - fw::matmul(VH, V * fw::real(d).unsqueeze(-2));
    int64_t n = L.size(-1);
    Tensor eye = fw::eye(n, TensorOptions(kBool));
    Tensor Lc = L.conj();
    Tensor E = Lc.unsqueeze(-2) - Lc.unsqueeze(-1);
    E = fw::where(eye, fw::ones_like(E), E);
    Tensor ret = VhgV / E;
    if (gL.defined()) ret = fw::where(eye, gL.unsqueeze(-2).expand_as(ret), ret);
    return {fw::real(complex_solve(VH, fw::matmul(ret, VH)))};
  }
};

}  // namespace

// ---- public API

namespace linalg {

Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left, bool unitriangular) {
  const char* op = "linalg.solve_triangular";
  FW_CHECK(B.defined() && B.dim() >= 2, "[", op, "] The input tensor B must have at least 2 dimensions.");
  check_square(op, A);
  check_matrix(op, B, "B");
  check_same_dtype(op, A, B);
  int64_t n = A.size(-1);
  FW_CHECK((left ? B.size(-2) : B.size(-1)) == n, "[", op, "] Incompatible shapes of A and B for the equation ",
           left ? "AX = B (" : "XA = B (", A.size(-2), "x", n, " and ", B.size(-2), "x", B.size(-1), ")");
  if (!left) return mT(solve_triangular(mT(A), mT(B), !upper, true, unitriangular));
  Shape bs = broadcast_batch(op, batch_shape(A), batch_shape(B));
  Tensor Ae = A.expand(with_tail(bs, {n, n})), Be = B.expand(with_tail(bs, {n, B.size(-1)}));
  return TriSolveFn::apply(Ae, Be, upper, unitriangular);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> lstsq(const Tensor& A, const Tensor& B, std::optional<double> rcond,
                                                 std::optional<std::string> driver) {
  const char* op = "linalg.lstsq";
  check_matrix(op, A);
  FW_CHECK(B.defined() && B.dim() >= 1, "[", op, "] The input tensor B must have at least 1 dimension");
  check_same_dtype(op, A, B);
  int64_t diff = A.dim() - B.dim();
  FW_CHECK(diff == 0 || diff == 1, "[", op, "] input.dim() must be greater or equal to other.dim() and "
           "(input.dim() - other.dim()) <= 1, but got A of shape ", A.sizes(), " and B of shape ", B.sizes());
  Tensor B2 = diff ? B.unsqueeze(-1) : B;
  FW_CHECK(A.size(-2) == B2.size(-2), "[", op, "] ", diff ? "input.size(-2) should match other.size(-1)"
                                                          : "input.size(-2) should match other.size(-2)",
           " (A of shape ", A.sizes(), ", B of shape ", B.sizes(), ")");
  std::string dn = driver.value_or("gelsy");
  Driver drv;
  if (dn == "gels") drv = Driver::gels;
  else if (dn == "gelsy") drv = Driver::gelsy;
  else if (dn == "gelsd") drv = Driver::gelsd;
  else if (dn == "gelss") drv = Driver::gelss;
  else detail::throw_error("[", op, "] parameter `driver` should be one of (gels, gelsy, gelsd, gelss), but got ", dn);
  int64_t m = A.size(-2), n = A.size(-1), k = B2.size(-1);
  double eps = A.dtype() == kFloat ? double(std::numeric_limits<float>::epsilon())
                                   : std::numeric_limits<double>::epsilon();
  double rc = rcond.value_or(eps * double(std::max(m, n)));
  Shape bs = broadcast_batch(op, batch_shape(A), batch_shape(B2));
  Tensor Ae = A.expand(with_tail(bs, {m, n})), Be = B2.expand(with_tail(bs, {m, k}));
  Tensor X, rank, sv;
  lstsq_impl(Ae, Be, rc, drv, &X, &rank, &sv);
  Tensor residuals = fw::empty({0}, A.options());
  if (m > n && drv != Driver::gelsy) {
    bool full = drv == Driver::gels || rank.numel() == 0 || rank.eq(n).all().item<bool>();
    if (full) {
      NoGradGuard ng;
      Tensor r = fw::matmul(Ae.detach(), X) - Be.detach();
      residuals = (r * r).sum({-2});
    }
  }
  // rank and singular values describe A: A's batch shape, not the broadcast one (as PyTorch)
  rank = batch_of(rank, batch_shape(A), bs);
  if (svd_driver(drv)) sv = batch_of(sv, batch_shape(A), bs);
  if (drv == Driver::gels) rank = fw::empty({0}, TensorOptions(kLong));
  if (needs_grad({Ae, Be})) X = LstsqFn::apply(Ae, Be, X);
  if (diff) X = X.squeeze(-1);
  return {X, residuals, rank, sv};
}

std::tuple<Tensor, Tensor> lu_factor(const Tensor& A, bool pivot) {
  const char* op = "linalg.lu_factor";
  check_matrix(op, A);
  FW_CHECK(pivot, "[", op, "] LU without pivoting is not implemented on the CPU");
  auto r = LuFactorFn::apply(A);
  raise_info("torch.linalg.lu_factor", info_codes(r[2]), A.dim() > 2, [](int64_t i) {
    return "U[" + std::to_string(i) + "," + std::to_string(i) +
           "] is zero and using it on lu_solve would result in a division by zero. If you still want to "
           "perform the factorization, consider calling linalg.lu(A, pivot) or linalg.lu_factor_ex(A, pivot)";
  });
  return {r[0], r[1]};
}

std::tuple<Tensor, Tensor, Tensor> lu_factor_ex(const Tensor& A, bool pivot, bool check_errors) {
  const char* op = "linalg.lu_factor_ex";
  check_matrix(op, A);
  FW_CHECK(pivot, "[", op, "] LU without pivoting is not implemented on the CPU");
  if (check_errors) {
    auto [LU, piv] = lu_factor(A, pivot);
    return {LU, piv, fw::zeros(batch_shape(A), TensorOptions(kInt))};
  }
  auto r = LuFactorFn::apply(A);
  return {r[0], r[1], r[2]};
}

std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& A, bool pivot) {
  const char* op = "linalg.lu";
  check_matrix(op, A);
  FW_CHECK(pivot, "[", op, "] LU without pivoting is not implemented on the CPU");
  auto r = LuFactorFn::apply(A);
  return lu_unpack(r[0], r[1]);
}

Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left, bool adjoint) {
  const char* op = "linalg.lu_solve";
  FW_CHECK(B.defined() && B.dim() >= 2, "[", op, "] The input tensor B must have at least 2 dimensions.");
  check_square(op, LU, "LU");
  check_matrix(op, B, "B");
  check_same_dtype(op, LU, B, "LU", "B");
  FW_CHECK(pivots.defined() && (pivots.dtype() == kInt || pivots.dtype() == kLong), "[", op,
           "] pivots should be an int32 (or int64) tensor");
  Shape ps(LU.sizes().begin(), LU.sizes().end() - 1);
  FW_CHECK(pivots.sizes().equals(IntArrayRef(ps)), "[", op, "] Expected pivots of shape ", IntArrayRef(ps),
           " (LU.shape[:-1]), but got ", pivots.sizes());
  int64_t n = LU.size(-1);
  FW_CHECK((left ? B.size(-2) : B.size(-1)) == n, "[", op, "] Incompatible shapes of A and B for the equation ",
           left ? "AX = B (" : "XA = B (", n, "x", n, " and ", B.size(-2), "x", B.size(-1), ")");
  broadcast_batch(op, batch_shape(LU), batch_shape(B), "LU", "B");
  // X A = B <=> A^T X^T = B^T, X A^T = B <=> A X^T = B^T
  if (!left) return mT(lu_solve(LU, pivots, mT(B), true, !adjoint));
  Tensor P = pivots_to_P(pivots, n, LU.options());
  Tensor L = LU, U = LU;  // the triangles are read by solve_triangular
  if (!adjoint) {  // A = P L U: X = U^-1 L^-1 P^T B
    Tensor y = solve_triangular(L, fw::matmul(mT(P), B), false, true, true);
    return solve_triangular(U, y, true);
  }
  // A^T = U^T L^T P^T: X = P L^-T U^-T B
  Tensor y = solve_triangular(mT(U), B, false);
  y = solve_triangular(mT(L), y, true, true, true);
  return fw::matmul(P, y);
}

Tensor matrix_exp(const Tensor& A) {
  check_square("linalg.matrix_exp", A);
  return MatrixExpFn::apply(A);
}

namespace {
// Outputs of the LDL functions refuse a backward, as PyTorch's (no derivative is defined).
struct NoDerivativeFn : autograd::Function<NoDerivativeFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& out, const Tensor& in, const std::string& op) {
    ctx->saved_data["op"] = op;
    (void)in;
    return out;
  }
  static variable_list backward(AutogradContext* ctx, variable_list) {
    detail::throw_error("[", ctx->saved_data["op"].toStringRef(), "] the derivative is not implemented");
    return {};
  }
};
Tensor refuse_backward(const Tensor& out, const Tensor& in, const char* op) {
  if (!(GradMode::is_enabled() && in.requires_grad())) return out;
  return NoDerivativeFn::apply(out, in, std::string(op));
}

// ldl_factor and ldl_factor_ex; raise_as: the op that raises for a singular D (none: report only).
std::tuple<Tensor, Tensor, Tensor> ldl_common(const Tensor& A, const char* raise_as) {
  const char* op = "linalg.ldl_factor_ex";
  int64_t n = A.size(-1), batch = batch_count(A);
  Tensor LD = A.detach().contiguous().clone();
  Tensor piv = fw::empty(with_tail(batch_shape(A), {n}), TensorOptions(kInt));
  std::vector<int64_t> info(size_t(batch), 0);
  if (n > 0)
    visit_real(A.dtype(), [&]<class T>() {
      T* pa = LD.data_ptr<T>();
      int32_t* pp = piv.data_ptr<int32_t>();
      for_each_matrix(batch, n, [&](int64_t i) { info[size_t(i)] = ldl_inplace<T>(pa + i * n * n, n, pp + i * n); });
    });
  if (raise_as)
    raise_info(raise_as, info, A.dim() > 2, [](int64_t k) {
      return "The factorization could not be completed: D[" + std::to_string(k - 1) + "," + std::to_string(k - 1) +
             "] is exactly zero, the matrix is singular (linalg.ldl_factor_ex reports it in info instead)";
    });
  return {refuse_backward(LD, A, op), piv, info_tensor(info, batch_shape(A))};
}
}  // namespace

// Real matrices: the symmetric and Hermitian factorisations are the same, so `hermitian` changes nothing.
std::tuple<Tensor, Tensor, Tensor> ldl_factor_ex(const Tensor& A, bool, bool check_errors) {
  check_square("linalg.ldl_factor_ex", A);
  return ldl_common(A, check_errors ? "linalg.ldl_factor_ex" : nullptr);
}

std::tuple<Tensor, Tensor> ldl_factor(const Tensor& A, bool) {
  check_square("linalg.ldl_factor", A);
  auto [LD, piv, info] = ldl_common(A, "linalg.ldl_factor");
  return {LD, piv};
}

Tensor ldl_solve(const Tensor& LD, const Tensor& pivots, const Tensor& B, bool hermitian) {
  const char* op = "linalg.ldl_solve";
  (void)hermitian;
  check_square(op, LD, "LD");
  FW_CHECK(B.defined() && B.dim() >= 2, "[", op, "] The input tensor B must have at least 2 dimensions, but it has shape ",
           B.defined() ? B.sizes() : IntArrayRef());
  check_same_dtype(op, LD, B, "LD", "B");
  FW_CHECK(pivots.defined() && (pivots.dtype() == kInt || pivots.dtype() == kLong), "[", op,
           "] pivots should be an int32 (or int64) tensor");
  Shape ps(LD.sizes().begin(), LD.sizes().end() - 1);
  FW_CHECK(pivots.sizes().equals(IntArrayRef(ps)), "[", op,
           "] Expected LD.shape[:-1] and pivots.shape to be the same, but got pivots with shape ", pivots.sizes(),
           " instead");
  int64_t n = LD.size(-1), k = B.size(-1);
  FW_CHECK(B.size(-2) == n, "[", op, "] Incompatible matrix sizes: each LD matrix is ", n, " by ", n,
           " but each B matrix is ", B.size(-2), " by ", k);
  Shape bs = broadcast_batch(op, batch_shape(LD), batch_shape(B), "LD", "B");
  Tensor L = LD.detach().expand(with_tail(bs, {n, n})).contiguous();
  Shape pbs = bs;
  pbs.push_back(n);
  Tensor P = pivots.to(kInt).expand(pbs).contiguous();
  Tensor X = B.detach().expand(with_tail(bs, {n, k})).contiguous().clone();
  int64_t batch = batch_count(L);
  // pivots come from the caller: every entry must name a row, and -p entries must pair up
  const int32_t* pp = P.data_ptr<int32_t>();
  for (int64_t b = 0; b < batch; b++)
    for (int64_t j = 0; j < n; j++) {
      int32_t p = pp[b * n + j];
      FW_CHECK(p != 0 && std::abs(int64_t(p)) <= n, "[", op, "] pivots must be in [-", n, ", -1] or [1, ", n,
               "] (1-based, as LAPACK's sytrf), but got ", p);
      if (p < 0) {
        FW_CHECK(j + 1 < n && pp[b * n + j + 1] == p, "[", op, "] a negative pivot (", p,
                 ") must be repeated on the next row, as sytrf's 2x2 blocks");
        j++;
      }
    }
  if (batch > 0 && n > 0 && k > 0)
    visit_real(LD.dtype(), [&]<class T>() {
      const T* pl = L.data_ptr<T>();
      T* px = X.data_ptr<T>();
      for_each_matrix(batch, n, [&](int64_t i) { ldl_solve_inplace<T>(pl + i * n * n, pp + i * n, px + i * n * k, n, k); });
    });
  return refuse_backward(refuse_backward(X, LD, op), B, op);
}

Tensor householder_product(const Tensor& A, const Tensor& tau) {
  const char* op = "linalg.householder_product";
  check_matrix(op, A, "input");
  FW_CHECK(tau.defined(), "[", op, "] tau is an undefined tensor");
  check_same_dtype(op, A, tau, "input", "tau");
  int64_t m = A.size(-2), n = A.size(-1);
  FW_CHECK(m >= n, "[", op, "] input.shape[-2] must be greater than or equal to input.shape[-1], but got input of shape ",
           A.sizes());
  FW_CHECK(tau.dim() == A.dim() - 1, "[", op, "] input.dim() must be greater than tau.dim() by 1, but got input of shape ",
           A.sizes(), " and tau of shape ", tau.sizes());
  int64_t k = tau.size(-1);
  FW_CHECK(k <= n, "[", op, "] input.shape[-1] must be greater than or equal to tau.shape[-1], but got input of shape ",
           A.sizes(), " and tau of shape ", tau.sizes());
  FW_CHECK(IntArrayRef(batch_shape(A)).equals(tau.sizes().slice(0, tau.dim() - 1)), "[", op,
           "] Expected batch dimensions of tau to be equal to input.shape[:-2], but got input of shape ", A.sizes(),
           " and tau of shape ", tau.sizes());
  // Q = H_1 (H_2 (... (H_k I[:, :n]))): each reflector costs one matrix-vector product and a
  // rank-one update, in fw ops so that A and tau get gradients.
  Tensor V = A.tril(-1) + fw::eye(m, n, A.options());  // v_i in column i
  Tensor Q = fw::eye(m, n, A.options()).expand(A.sizes()).clone();
  for (int64_t i = k - 1; i >= 0; i--) {
    Tensor v = V.narrow(-1, i, 1);                      // (*, m, 1)
    Tensor t = tau.narrow(-1, i, 1).unsqueeze(-1);     // (*, 1, 1)
    Q = Q - fw::matmul(v * t, fw::matmul(mT(v), Q));
  }
  // no reflectors: Q is I[:, :n], still an output of A and tau for autograd (as PyTorch's, with
  // zero gradients): add sums over empty slices, exact zeros whatever A holds
  if (k == 0) Q = Q + A.narrow(-1, 0, 0).sum({-1}, true) + tau.sum({-1}, true).unsqueeze(-1);
  return Q;
}

Tensor multi_dot(TensorList tensors) {
  const char* op = "linalg.multi_dot";
  size_t n = tensors.size();
  FW_CHECK(n >= 2, "[", op, "] expected at least 2 tensors but got ", n);
  for (size_t i = 0; i < n; i++) FW_CHECK(tensors[i].defined(), "[", op, "] tensor ", i, " is undefined");
  int64_t d0 = tensors[0].dim(), dl = tensors[n - 1].dim();
  FW_CHECK(d0 == 1 || d0 == 2, "[", op, "] the first tensor must be 1D or 2D but got ", d0, "D");
  FW_CHECK(dl == 1 || dl == 2, "[", op, "] the last tensor must be 1D or 2D but got ", dl, "D");
  for (size_t i = 1; i + 1 < n; i++)
    FW_CHECK(tensors[i].dim() == 2, "[", op, "] tensor ", i, " must be 2D but got ", tensors[i].dim(), "D");
  for (size_t i = 1; i < n; i++)
    FW_CHECK(tensors[i].dtype() == tensors[0].dtype(), "[", op, "] all tensors must have be the same dtype but tensor 0 is ",
             dtype_name(tensors[0].dtype()), " and tensor ", i, " ", dtype_name(tensors[i].dtype()));
  std::vector<Tensor> mats(tensors.begin(), tensors.end());
  if (d0 == 1) mats[0] = mats[0].unsqueeze(0);
  if (dl == 1) mats[n - 1] = mats[n - 1].unsqueeze(-1);
  for (size_t i = 0; i + 1 < n; i++)
    FW_CHECK(mats[i].size(1) == mats[i + 1].size(0), "[", op, "] tensors ", i, " and ", i + 1, " with shapes ",
             tensors[i].sizes(), " and ", tensors[i + 1].sizes(), " cannot be multiplied");
  // Cheapest parenthesisation (the classic O(n^3) dynamic programme).
  std::vector<int64_t> p(n + 1);
  for (size_t i = 0; i < n; i++) p[i] = mats[i].size(0);
  p[n] = mats[n - 1].size(1);
  std::vector<std::vector<double>> cost(n, std::vector<double>(n, 0));
  std::vector<std::vector<size_t>> split(n, std::vector<size_t>(n, 0));
  for (size_t len = 1; len < n; len++)
    for (size_t i = 0; i + len < n; i++) {
      size_t j = i + len;
      cost[i][j] = std::numeric_limits<double>::infinity();
      for (size_t s = i; s < j; s++) {
        double c = cost[i][s] + cost[s + 1][j] + double(p[i]) * double(p[s + 1]) * double(p[j + 1]);
        if (c < cost[i][j]) {
          cost[i][j] = c;
          split[i][j] = s;
        }
      }
    }
  std::function<Tensor(size_t, size_t)> chain = [&](size_t i, size_t j) -> Tensor {
    if (i == j) return mats[i];
    return fw::mm(chain(i, split[i][j]), chain(split[i][j] + 1, j));
  };
  Tensor r = chain(0, n - 1);
  if (d0 == 1 && dl == 1) return r.reshape({});
  if (d0 == 1) return r.squeeze(0);
  if (dl == 1) return r.squeeze(-1);
  return r;
}

namespace {
Tensor cond_impl(const Tensor& A, bool svd_kind, double p2, const std::optional<std::string>& sp,
                 const std::optional<double>& np) {
  std::string pname = sp ? *sp : std::to_string(np.value_or(2.0));
  std::string opn = "linalg.cond(ord=" + (sp ? *sp : np ? (std::isinf(*np) ? (*np > 0 ? "inf" : "-inf")
                                                               : std::to_string(int64_t(*np)))
                                                         : std::string("None")) + ")";
  if (svd_kind) {
    check_matrix("linalg.cond", A);
    Tensor s = linalg::svdvals(A);
    int64_t k = s.size(-1);
    if (k == 0) return fw::zeros(batch_shape(A), A.options());
    Tensor smax = s.narrow(-1, 0, 1).squeeze(-1), smin = s.narrow(-1, k - 1, 1).squeeze(-1);
    return p2 > 0 ? smax / smin : smin / smax;
  }
  check_square(opn.c_str(), A);
  if (A.size(-1) == 0) return fw::zeros(batch_shape(A), A.options());
  Tensor singular;
  {
    NoGradGuard ng;
    Tensor LU, piv;
    std::vector<int64_t> info;
    lu_factor_impl(A.detach(), &LU, &piv, &info);
    singular = (LU.diagonal(0, -2, -1) == 0).any(-1);
  }
  Tensor mask = singular.unsqueeze(-1).unsqueeze(-1);
  Tensor safe = fw::where(mask, fw::eye(A.size(-1), A.options()), A);
  Tensor Ainv = linalg::inv(safe);
  Tensor r = sp ? linalg::matrix_norm(A, *sp) * linalg::matrix_norm(Ainv, *sp)
                : linalg::matrix_norm(A, Scalar(*np)) * linalg::matrix_norm(Ainv, Scalar(*np));
  return fw::where(singular, std::numeric_limits<double>::infinity(), r);
}
}  // namespace

Tensor cond(const Tensor& A, const std::optional<Scalar>& p) {
  if (!p.has_value()) return cond_impl(A, true, 2, std::nullopt, std::nullopt);
  double v = p->toDouble();
  if (v == 2 || v == -2) return cond_impl(A, true, v, std::nullopt, std::nullopt);
  FW_CHECK(std::abs(v) == 1 || std::isinf(v), "[linalg.cond] linalg.cond got an invalid norm type: ", v);
  return cond_impl(A, false, 0, std::nullopt, v);
}

Tensor cond(const Tensor& A, const std::string& p) {
  FW_CHECK(p == "fro" || p == "nuc", "[linalg.cond] linalg.cond got an invalid norm type: ", p);
  return cond_impl(A, false, 0, p, std::nullopt);
}

Tensor tensorinv(const Tensor& A, int64_t ind) {
  FW_CHECK(A.defined(), "[linalg.tensorinv] undefined input");
  FW_CHECK(ind > 0, "[linalg.tensorinv] Expected a strictly positive integer for 'ind', but got ", ind);
  FW_CHECK(ind <= A.dim(), "[linalg.tensorinv] ind (", ind, ") must be at most A.dim() (", A.dim(), ")");
  IntArrayRef s = A.sizes();
  Shape front(s.begin(), s.begin() + ind), back(s.begin() + ind, s.end());
  int64_t p1 = prod(front), p2 = prod(back);
  FW_CHECK(p1 == p2, "[linalg.tensorinv] Expected self to satisfy the requirement prod(self.shape[ind:]) == "
           "prod(self.shape[:ind]), but got ", p2, " != ", p1);
  Shape out = back;
  out.insert(out.end(), front.begin(), front.end());
  return linalg::inv(A.reshape({p1, p2})).reshape(out);
}

Tensor tensorsolve(const Tensor& A, const Tensor& B, OptionalIntArrayRef dims) {
  FW_CHECK(A.defined() && B.defined(), "[linalg.tensorsolve] undefined input");
  Tensor At = A;
  if (dims.has_value() && !dims->empty()) {
    int64_t nd = A.dim();
    std::vector<bool> moved(size_t(nd), false);
    Shape tail;
    for (int64_t d : dims.value()) {
      int64_t w = wrap_dim("linalg.tensorsolve", d, nd);
      FW_CHECK(!moved[size_t(w)], "[linalg.tensorsolve] repeated dim ", d, " in dims");
      moved[size_t(w)] = true;
      tail.push_back(w);
    }
    Shape perm;
    for (int64_t i = 0; i < nd; i++)
      if (!moved[size_t(i)]) perm.push_back(i);
    perm.insert(perm.end(), tail.begin(), tail.end());
    At = A.permute(perm);
  }
  FW_CHECK(At.dim() >= B.dim(), "[linalg.tensorsolve] A.dim() (", At.dim(), ") must be at least B.dim() (", B.dim(), ")");
  Shape res(At.sizes().begin() + B.dim(), At.sizes().end());
  int64_t rp = prod(res), bp = B.numel();
  FW_CHECK(rp == bp, "[linalg.tensorsolve] Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
           "prod(self.shape[:other.ndim]), but got ", rp, " != ", bp);
  return linalg::solve(At.reshape({bp, rp}), B.reshape({bp})).reshape(res);
}

Tensor vander(const Tensor& x, std::optional<int64_t> N) {
  FW_CHECK(x.defined() && x.dim() >= 1, "[linalg.vander] x must be at least 1-dimensional.");
  const int64_t n = N.value_or(x.size(-1));
  FW_CHECK(n > 1, "[linalg.vander] N must be greater than 1, got ", n);
  std::vector<int64_t> shape(x.sizes().begin(), x.sizes().end());
  shape.push_back(n - 1);
  Tensor powers = fw::cumprod(x.unsqueeze(-1).expand(shape), -1).to(x.dtype());
  shape.back() = 1;
  return fw::cat({fw::ones(shape, x.options()), powers}, -1);
}

Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim) {
  FW_CHECK(x.dtype() == y.dtype(), "[linalg.vecdot] Expected x and y to have the same dtype, but found x of type ",
           x.scalar_type(), " and y of type ", y.scalar_type(), " instead");
  return (x.conj() * y).sum({dim});
}

Tensor diagonal(const Tensor& A, int64_t offset, int64_t dim1, int64_t dim2) {
  FW_CHECK(A.defined() && A.dim() >= 2, "[linalg.diagonal] The input tensor A must have at least 2 dimensions.");
  return A.diagonal(offset, dim1, dim2);
}

std::tuple<Tensor, Tensor> eig(const Tensor& A) {
  check_square("linalg.eig", A);
  auto r = EigFn::apply(A);
  return {r[0], r[1]};
}

Tensor eigvals(const Tensor& A) {
  check_square("linalg.eigvals", A);
  if (!needs_grad({A})) {
    Tensor L, V;
    eig_impl(A, false, &L, &V);
    return L;
  }
  return std::get<0>(linalg::eig(A));
}

}  // namespace linalg

std::tuple<Tensor, Tensor> triangular_solve(const Tensor& b, const Tensor& A, bool upper, bool transpose,
                                            bool unitriangular) {
  const char* op = "triangular_solve";
  FW_CHECK(b.defined() && b.dim() >= 2, "[", op, "] b should have at least 2 dimensions, but has ",
           b.defined() ? b.dim() : 0, " dimensions instead");
  FW_CHECK(A.defined() && A.dim() >= 2, "[", op, "] A should have at least 2 dimensions, but has ",
           A.defined() ? A.dim() : 0, " dimensions instead");
  check_square(op, A);
  check_matrix(op, b, "b");
  check_same_dtype(op, b, A, "b", "A");
  Shape bs = broadcast_batch(op, batch_shape(b), batch_shape(A), "b", "A");
  int64_t n = A.size(-1);
  Tensor Ae = A.expand(with_tail(bs, {n, n}));
  Tensor X = linalg::solve_triangular(transpose ? mT(Ae) : Ae, b, upper != transpose, true, unitriangular);
  return {X, Ae.clone()};
}

Tensor cholesky_solve(const Tensor& B, const Tensor& L, bool upper) {
  const char* op = "cholesky_solve";
  FW_CHECK(B.defined() && B.dim() >= 2, "[", op, "] b should have at least 2 dimensions, but has ",
           B.defined() ? B.dim() : 0, " dimensions instead");
  FW_CHECK(L.defined() && L.dim() >= 2, "[", op, "] u should have at least 2 dimensions, but has ",
           L.defined() ? L.dim() : 0, " dimensions instead");
  check_square(op, L, "L");
  check_matrix(op, B, "B");
  check_same_dtype(op, B, L, "B", "L");
  int64_t n = L.size(-1);
  FW_CHECK(B.size(-2) == n, "[", op, "] Incompatible matrix sizes for cholesky_solve: each L matrix is ", n, " by ", n,
           " but each B matrix is ", B.size(-2), " by ", B.size(-1));
  Shape bs = broadcast_batch(op, batch_shape(B), batch_shape(L), "B", "L");
  return CholSolveFn::apply(B.expand(with_tail(bs, {n, B.size(-1)})), L.expand(with_tail(bs, {n, n})), upper);
}

Tensor cholesky_inverse(const Tensor& L, bool upper) {
  check_square("cholesky_inverse", L, "L");
  int64_t n = L.size(-1);
  return cholesky_solve(fw::eye(n, L.options()).expand(L.sizes()), L, upper);
}

Tensor lu_solve(const Tensor& b, const Tensor& LU_data, const Tensor& LU_pivots) {
  return linalg::lu_solve(LU_data, LU_pivots, b);
}

std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& LU_data, const Tensor& LU_pivots, bool unpack_data,
                                             bool unpack_pivots) {
  const char* op = "lu_unpack";
  check_matrix(op, LU_data, "LU_data");
  FW_CHECK(LU_pivots.defined() && (LU_pivots.dtype() == kInt || LU_pivots.dtype() == kLong), "[", op,
           "] LU_pivots is expected to be a contiguous tensor of torch.int32 dtype");
  int64_t m = LU_data.size(-2), n = LU_data.size(-1), k = std::min(m, n);
  Shape ps = with_tail(batch_shape(LU_data), {k});
  FW_CHECK(LU_pivots.sizes().equals(IntArrayRef(ps)), "[", op, "] Expected LU_pivots of shape ", IntArrayRef(ps),
           ", but got ", LU_pivots.sizes());
  Tensor P, L, U;
  if (unpack_data) unpack_LU(LU_data, &L, &U);
  else L = U = fw::empty({0}, LU_data.options());
  P = unpack_pivots ? pivots_to_P(LU_pivots, m, LU_data.options()) : fw::empty({0}, LU_data.options());
  return {P, L, U};
}

Tensor matrix_exp(const Tensor& A) { return linalg::matrix_exp(A); }
Tensor orgqr(const Tensor& A, const Tensor& tau) { return linalg::householder_product(A, tau); }

Tensor ger(const Tensor& a, const Tensor& b) {
  FW_CHECK(a.defined() && a.dim() == 1, "[ger] Expected 1-D argument self, but got ", a.defined() ? a.dim() : 0, "-D");
  FW_CHECK(b.defined() && b.dim() == 1, "[ger] Expected 1-D argument vec2, but got ", b.dim(), "-D");
  return fw::outer(a, b);
}

Tensor vdot(const Tensor& a, const Tensor& b) {
  FW_CHECK(a.defined() && b.defined() && a.dim() == 1 && b.dim() == 1, "[vdot] 1D tensors expected, but got ",
           a.defined() ? a.dim() : 0, "D and ", b.defined() ? b.dim() : 0, "D tensors");
  FW_CHECK(a.numel() == b.numel(), "[vdot] inconsistent tensor size, expected tensor [", a.numel(), "] and src [",
           b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ", b.numel(),
           " elements respectively");
  FW_CHECK(a.dtype() == b.dtype(), "[vdot] expected both vectors to have same dtype, but found ", dtype_name(a.dtype()),
           " and ", dtype_name(b.dtype()));
  if (a.is_complex()) return (a.conj() * b).sum();
  return fw::dot(a, b);
}

Tensor diagflat(const Tensor& t, int64_t offset) {
  FW_CHECK(t.defined(), "[diagflat] undefined input");
  return fw::diag(t.reshape({-1}), offset);
}

Tensor pdist(const Tensor& x, double p) {
  FW_CHECK(x.defined() && x.dim() == 2, "[pdist] pdist only supports 2D tensors, got: ", x.defined() ? x.dim() : 0, "D");
  FW_CHECK(x.is_floating_point(), "[pdist] pdist only supports floating-point dtypes");
  FW_CHECK(p >= 0, "[pdist] pdist only supports non-negative p values, got ", p);
  int64_t n = x.size(0);
  if (n <= 1) return fw::empty({0}, x.options());
  Tensor idx = fw::triu_indices(n, n, 1);
  Tensor d = x.index_select(0, idx.select(0, 0)) - x.index_select(0, idx.select(0, 1));
  return linalg::vector_norm(d, p, std::vector<int64_t>{1});
}

Tensor frobenius_norm(const Tensor& t) {
  FW_CHECK(t.defined() && t.is_floating_point(), "[frobenius_norm] Expected a floating point tensor");
  return linalg::vector_norm(t, 2);
}

Tensor frobenius_norm(const Tensor& t, IntArrayRef dim, bool keepdim) {
  FW_CHECK(t.defined() && t.is_floating_point(), "[frobenius_norm] Expected a floating point tensor");
  FW_CHECK(dim.size() <= 2, "[frobenius_norm] Expected at most 2 dimensions, but got ", dim.size(),
           " dimensions instead.");
  if (dim.empty()) return linalg::vector_norm(t, 2, std::nullopt, keepdim);
  return linalg::vector_norm(t, 2, std::vector<int64_t>(dim.begin(), dim.end()), keepdim);
}

Tensor nuclear_norm(const Tensor& t, bool keepdim) {
  FW_CHECK(t.defined() && t.dim() == 2, "[nuclear_norm] Expected a tensor with 2 dimensions, but got a tensor with ",
           t.defined() ? t.dim() : 0, " dimension", t.defined() && t.dim() == 1 ? "" : "s", " instead.");
  return linalg::matrix_norm(t, "nuc", {-2, -1}, keepdim);
}

Tensor nuclear_norm(const Tensor& t, IntArrayRef dim, bool keepdim) {
  FW_CHECK(dim.size() == 2, "[nuclear_norm] Expected dim to be a 2-tuple, but got ", dim.size(), " dims");
  return linalg::matrix_norm(t, "nuc", dim, keepdim);
}

Tensor cross(const Tensor& input, const Tensor& other, std::optional<int64_t> dim) {
  FW_CHECK(input.defined() && other.defined(), "[cross] undefined input");
  if (dim.has_value()) return linalg::cross(input, other, *dim);
  for (int64_t i = 0; i < input.dim(); i++)
    if (input.size(i) == 3) return linalg::cross(input, other, i);
  detail::throw_error("[cross] no dimension of size 3 in input (shape ", input.sizes(), ")");
  return Tensor();
}

}  // namespace fw
