// Linear-algebra decompositions and norms with libtorch's names, signatures and semantics
// (PyTorch 1.13): fw::linalg::{inv, det, slogdet, solve, cholesky, qr, eigh, eigvalsh, svd,
// svdvals, matrix_norm, vector_norm, norm, matrix_rank, pinv, matrix_power, cross} and the
// torch:: aliases fw::{inverse, det, slogdet, logdet, cholesky, svd}. CPU, float32 and float64,
// batched over leading dims ((*, n, n) or (*, m, n)); every differentiable one has a backward
// made of fw ops, so higher-order gradients work (Note [Linear algebra through Eigen] in
// core/ops/decomp.cpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "fw/ops.h"
#include "fw/optional_dims.h"
#include "fw/tensor.h"

namespace fw {

namespace linalg {

using fw::OptionalIntArrayRef;
inline Tensor matmul(const Tensor& a, const Tensor& b) { return fw::matmul(a, b); }

// Inverse of each square matrix; raises for a singular one.
Tensor inv(const Tensor& A);
// Determinant of each square matrix (0 for a singular one).
Tensor det(const Tensor& A);
// (sign, log|det|) of each square matrix; a singular one gives (0, -inf).
std::tuple<Tensor, Tensor> slogdet(const Tensor& A);
// X with A X = B (left = false: X A = B); B is (*, n, k) or, for left, a vector (*, n) (when B is 1-D
// or A.shape[:-1]); batch dims broadcast.
Tensor solve(const Tensor& A, const Tensor& B, bool left = true);
// Lower L with A = L L^T (upper: U with A = U^T U); reads only that triangle of A.
Tensor cholesky(const Tensor& A, bool upper = false);
// The *_ex forms return (result, info) and do not raise for a failed matrix (check_errors = false):
// info (int32, shaped like the batch) is 0 where the matrix went through, else LAPACK's code: the
// 1-based index of the first zero pivot of the LU (inv_ex, solve_ex) or the order of the first
// leading minor that is not positive-definite (cholesky_ex); that matrix's result is unspecified
// (inf / NaN). check_errors = true raises as inv / solve / cholesky do. Results are differentiable.
std::tuple<Tensor, Tensor> inv_ex(const Tensor& A, bool check_errors = false);
std::tuple<Tensor, Tensor> solve_ex(const Tensor& A, const Tensor& B, bool left = true, bool check_errors = false);
std::tuple<Tensor, Tensor> cholesky_ex(const Tensor& A, bool upper = false, bool check_errors = false);
// (Q, R) with A = Q R; mode "reduced" (Q: m x k, R: k x n), "complete" (Q: m x m) or "r" (Q empty).
std::tuple<Tensor, Tensor> qr(const Tensor& A, const std::string& mode = "reduced");
// (eigenvalues ascending, eigenvectors as columns) of each symmetric matrix, from its UPLO triangle.
std::tuple<Tensor, Tensor> eigh(const Tensor& A, const std::string& UPLO = "L");
// The eigenvalues of eigh.
Tensor eigvalsh(const Tensor& A, const std::string& UPLO = "L");
// (U, S, Vh) with A = U diag(S) Vh, S descending; full_matrices: U m x m and Vh n x n.
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices = true);
// The singular values of each matrix, descending.
Tensor svdvals(const Tensor& A);
// libtorch 1.13's forms with a driver (every caller passes one, it has no default): driver
// selects a cuSOLVER routine, so on the CPU anything but nullopt is an error, as in libtorch.
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices, std::optional<std::string_view> driver);
Tensor svdvals(const Tensor& A, std::optional<std::string_view> driver);
// Matrix norm over the two dims: ord "fro", "nuc", or 1, -1, 2, -2, inf, -inf.
Tensor matrix_norm(const Tensor& A, const Scalar& ord, IntArrayRef dim = {-2, -1}, bool keepdim = false,
                   std::optional<ScalarType> dtype = std::nullopt);
Tensor matrix_norm(const Tensor& A, const std::string& ord = "fro", IntArrayRef dim = {-2, -1}, bool keepdim = false,
                   std::optional<ScalarType> dtype = std::nullopt);
template <size_t N>
Tensor matrix_norm(const Tensor& A, const char (&ord)[N], IntArrayRef dim = {-2, -1}, bool keepdim = false,
                   std::optional<ScalarType> dtype = std::nullopt) {
  return matrix_norm(A, std::string(ord), dim, keepdim, dtype);
}
// Vector ord-norm over dim (all elements when absent).
Tensor vector_norm(const Tensor& x, const Scalar& ord = 2, OptionalIntArrayRef dim = std::nullopt, bool keepdim = false,
                   std::optional<ScalarType> dtype = std::nullopt);
// Vector norm, or matrix norm when ord is given and dim has 2 entries (or is absent for a 2-D input).
Tensor norm(const Tensor& A, const std::optional<Scalar>& ord = std::nullopt, OptionalIntArrayRef dim = std::nullopt,
            bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
// Matrix norm with a string ord ("fro", "nuc") over dim (a 2-D input's dims when absent).
Tensor norm(const Tensor& A, const std::string& ord, OptionalIntArrayRef dim = std::nullopt, bool keepdim = false,
            std::optional<ScalarType> dtype = std::nullopt);
// A string literal ord picks the string overload (not the Scalar one).
template <size_t N>
Tensor norm(const Tensor& A, const char (&ord)[N], OptionalIntArrayRef dim = std::nullopt, bool keepdim = false,
            std::optional<ScalarType> dtype = std::nullopt) {
  return norm(A, std::string(ord), std::move(dim), keepdim, dtype);
}
// Number of singular values (hermitian: |eigenvalues|) above max(atol, rtol * largest); int64.
Tensor matrix_rank(const Tensor& A, std::optional<double> atol = std::nullopt, std::optional<double> rtol = std::nullopt,
                   bool hermitian = false);
// Same with atol = tol, rtol = 0.
Tensor matrix_rank(const Tensor& A, double tol, bool hermitian = false);
// Same with a tensor of tolerances (atol = tol broadcast over the batch, rtol = 0).
Tensor matrix_rank(const Tensor& A, const Tensor& tol, bool hermitian);
// Moore-Penrose pseudo-inverse, singular values at or below max(atol, rtol * largest) dropped.
Tensor pinv(const Tensor& A, std::optional<double> atol = std::nullopt, std::optional<double> rtol = std::nullopt,
            bool hermitian = false);
// Same with atol = 0, rtol = rcond.
Tensor pinv(const Tensor& A, double rcond, bool hermitian = false);
// A^n for square A (n < 0: inv(A)^-n, n == 0: identity).
Tensor matrix_power(const Tensor& A, int64_t n);
// Cross product of 3-vectors along dim (inputs broadcast).
Tensor cross(const Tensor& input, const Tensor& other, int64_t dim = -1);

}  // namespace linalg

// torch:: aliases.
Tensor inverse(const Tensor& A);
Tensor det(const Tensor& A);
std::tuple<Tensor, Tensor> slogdet(const Tensor& A);
// log(det(A)): nan for a negative determinant, -inf for a singular matrix.
Tensor logdet(const Tensor& A);
Tensor cholesky(const Tensor& A, bool upper = false);
// (U, S, V) (V, not Vh); some: reduced; compute_uv false: U, V are zeros of m x m and n x n.
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool some = true, bool compute_uv = true);

}  // namespace fw
