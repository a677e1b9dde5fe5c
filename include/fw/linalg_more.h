// More linear algebra with libtorch 1.13's names, signatures and semantics (core/ops/decomp_more.cpp):
// fw::linalg::{solve_triangular, lstsq, lu_factor, lu, lu_solve, matrix_exp, multi_dot, cond,
// tensorinv, tensorsolve, diagonal, eig, eigvals} and the torch:: functions fw::{triangular_solve,
// cholesky_solve, cholesky_inverse, lu_solve, lu_unpack, matrix_exp, ger, vdot, diagflat, pdist,
// frobenius_norm, nuclear_norm, cross}. CPU, float32 and float64 (eig: complex outputs), batched
// over leading dims with PyTorch's batch broadcasting; backwards are made of fw ops, so higher-order
// gradients work (Note [Linear algebra through Eigen] in core/ops/decomp.cpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "fw/linalg.h"

namespace fw {

namespace linalg {

// X with A X = B (left = false: X A = B) for triangular A (only its upper / lower triangle is read;
// unitriangular: its diagonal is taken as ones). A (*, n, n), B (*, n, k) (left) or (*, k, n);
// batch dims broadcast.
Tensor solve_triangular(const Tensor& A, const Tensor& B, bool upper, bool left = true, bool unitriangular = false);

// Least squares min ||A X - B|| (minimum-norm X for rank-deficient / wide A). driver: "gelsy"
// (default; rank-revealing QR), "gels" (QR, assumes full rank), "gelsd" / "gelss" (SVD). rcond
// (default eps * max(m, n)) sets the rank cut-off relative to the largest singular value / pivot.
// Returns (solution (*, n, k), residuals, rank, singular_values) as PyTorch 1.13: residuals
// (squared column norms of A X - B, (*, k)) only for m > n with a driver other than gelsy and (but
// for gels) every matrix of full rank, else empty; rank (int64, (*)) empty for gels;
// singular_values (*, min(m, n)) only for gelsd / gelss, else empty. B may be (*, m) (a vector per
// matrix, when B.dim() == A.dim() - 1). Only the solution is differentiable (PyTorch's pinv-based
// backward, exact for full-rank A).
std::tuple<Tensor, Tensor, Tensor, Tensor> lstsq(const Tensor& A, const Tensor& B,
                                                 std::optional<double> rcond = std::nullopt,
                                                 std::optional<std::string> driver = std::nullopt);

// Partial-pivoted LU of each (*, m, n) matrix as LAPACK's getrf: (LU packed (*, m, n), pivots
// (*, min(m, n)) int32, 1-based; row i was swapped with row pivots[i] - 1). Raises for an exactly
// singular U (as PyTorch's lu_factor). pivot = false is not implemented on the CPU (as PyTorch).
std::tuple<Tensor, Tensor> lu_factor(const Tensor& A, bool pivot = true);
// (LU, pivots, info): lu_factor without raising (check_errors = false); info (int32, shaped like the
// batch) is the 1-based index of the first zero diagonal entry of U, 0 when none.
std::tuple<Tensor, Tensor, Tensor> lu_factor_ex(const Tensor& A, bool pivot = true, bool check_errors = false);
// (P, L, U) with A = P L U, L (*, m, k) unit lower, U (*, k, n), k = min(m, n). Singular inputs are fine.
std::tuple<Tensor, Tensor, Tensor> lu(const Tensor& A, bool pivot = true);
// X with A X = B (adjoint: A^T X = B; left = false: X A = B / X A^T = B) from lu_factor's output.
Tensor lu_solve(const Tensor& LU, const Tensor& pivots, const Tensor& B, bool left = true, bool adjoint = false);

// LDL^T of each symmetric matrix with Bunch-Kaufman pivoting, in LAPACK sytrf's packed lower form
// (Note [LDL factorisation] in core/ops/decomp_more.cpp): (LD (*, n, n), pivots (*, n) int32, info
// (int32, the batch's shape): the first k with D[k-1, k-1] exactly zero, 0 when none). ldl_factor
// raises where ldl_factor_ex reports; ldl_solve solves A X = B from them (B (*, n, k), batch dims
// broadcast). Real matrices: hermitian changes nothing. Not differentiable (as PyTorch).
std::tuple<Tensor, Tensor, Tensor> ldl_factor_ex(const Tensor& A, bool hermitian = false, bool check_errors = false);
std::tuple<Tensor, Tensor> ldl_factor(const Tensor& A, bool hermitian = false);
Tensor ldl_solve(const Tensor& LD, const Tensor& pivots, const Tensor& B, bool hermitian = false);

// The first n columns of the product H_1 ... H_k of Householder reflectors H_i = I - tau_i v_i v_i^T,
// v_i = (0, ..., 0, 1, A[i+1:, i]) (LAPACK's orgqr; geqrf's packed output gives the Q of QR). A
// (*, m, n) with m >= n, tau (*, k) with k <= n and A's batch shape. Differentiable in A and tau.
Tensor householder_product(const Tensor& A, const Tensor& tau);

// exp of each square matrix (scaling and squaring with Pade approximants); backward through the
// exponential of the block matrix [[A^T, G], [0, A^T]] (PyTorch's), so it is twice differentiable.
Tensor matrix_exp(const Tensor& A);

// The product of the matrices, multiplied in the cheapest order; the first (last) may be 1-D (a row
// (column) vector, dropped from the result's shape).
Tensor multi_dot(TensorList tensors);

// Condition number: p absent / 2 / -2 from singular values (any m x n); "fro", "nuc", inf, -inf,
// 1, -1 as matrix_norm(A, p) * matrix_norm(inv(A), p) (square; inf for a singular matrix).
Tensor cond(const Tensor& A, const std::optional<Scalar>& p = std::nullopt);
Tensor cond(const Tensor& A, const std::string& p);
template <size_t N>
Tensor cond(const Tensor& A, const char (&p)[N]) {
  return cond(A, std::string(p));
}

// The inverse of A seen as a prod(shape[:ind]) x prod(shape[ind:]) matrix, shaped shape[ind:] + shape[:ind].
Tensor tensorinv(const Tensor& A, int64_t ind = 2);
// X with tensordot(A, X, X.dim()) = B (dims of A moved to the end first).
Tensor tensorsolve(const Tensor& A, const Tensor& B, OptionalIntArrayRef dims = std::nullopt);
// A.diagonal(offset, dim1, dim2) with linalg's defaults (the last two dims).
Tensor diagonal(const Tensor& A, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);
// Vandermonde matrices of the last dim: out[..., i, j] = x[..., i]^j for j < N (N = x.size(-1) by
// default, at least 2), in x's dtype (libtorch's linalg_vander).
Tensor vander(const Tensor& x, std::optional<int64_t> N = std::nullopt);
// sum(conj(x) * y) over dim after broadcasting; x and y of one dtype (libtorch's linalg_vecdot).
Tensor vecdot(const Tensor& x, const Tensor& y, int64_t dim = -1);

// (eigenvalues (*, n), eigenvectors (*, n, n) as columns of unit 2-norm) of each real square
// matrix, complex64 for float32 and complex128 for float64. Eigenvectors are fixed only up to a
// complex phase; the backward (PyTorch's linalg_eig_backward, real inputs) needs a loss that does
// not depend on that phase and raises otherwise.
std::tuple<Tensor, Tensor> eig(const Tensor& A);
// The eigenvalues of eig.
Tensor eigvals(const Tensor& A);

}  // namespace linalg

// torch.triangular_solve(b, A): (X, A cloned) with op(A) X = b, op(A) = A or A^T (transpose).
std::tuple<Tensor, Tensor> triangular_solve(const Tensor& b, const Tensor& A, bool upper = true,
                                            bool transpose = false, bool unitriangular = false);
// X with (L L^T) X = B (upper: (U^T U) X = B) from a Cholesky factor; batch dims broadcast.
Tensor cholesky_solve(const Tensor& B, const Tensor& L, bool upper = false);
// (L L^T)^-1 (upper: (U^T U)^-1) from a Cholesky factor.
Tensor cholesky_inverse(const Tensor& L, bool upper = false);
// torch.lu_solve(b, LU_data, LU_pivots) = linalg::lu_solve(LU_data, LU_pivots, b).
Tensor lu_solve(const Tensor& b, const Tensor& LU_data, const Tensor& LU_pivots);
// (P, L, U) from lu_factor's output (torch.lu_unpack).
std::tuple<Tensor, Tensor, Tensor> lu_unpack(const Tensor& LU_data, const Tensor& LU_pivots, bool unpack_data = true,
                                             bool unpack_pivots = true);
Tensor matrix_exp(const Tensor& A);
// torch.orgqr(A, tau) = linalg::householder_product(A, tau).
Tensor orgqr(const Tensor& A, const Tensor& tau);
// outer(a, b) of 1-D tensors.
Tensor ger(const Tensor& a, const Tensor& b);
// sum(conj(a) * b) of 1-D tensors of one dtype.
Tensor vdot(const Tensor& a, const Tensor& b);
// A 2-D matrix with t's flattened elements on diagonal `offset`.
Tensor diagflat(const Tensor& t, int64_t offset = 0);
// p-norm distances between the rows of a 2-D x: the (N (N - 1) / 2) entries above the diagonal of cdist(x, x), row-major.
Tensor pdist(const Tensor& x, double p = 2);
// sqrt(sum(t^2)) over all elements, or over dim (at most 2 dims; none: all).
Tensor frobenius_norm(const Tensor& t);
Tensor frobenius_norm(const Tensor& t, IntArrayRef dim, bool keepdim = false);
// Sum of the singular values of a 2-D t (or over the two dims).
Tensor nuclear_norm(const Tensor& t, bool keepdim = false);
Tensor nuclear_norm(const Tensor& t, IntArrayRef dim, bool keepdim = false);
// torch.cross: linalg::cross along dim; without dim, the first dim of input of size 3 (deprecated in
// PyTorch 1.13, which warns; fw does not).
Tensor cross(const Tensor& input, const Tensor& other, std::optional<int64_t> dim = std::nullopt);

}  // namespace fw
