// More of libtorch's tensor functions, beyond the core op list (core/ops/extra.cpp): NaN-ignoring
// reductions, order statistics (kthvalue, quantile, cummax/cummin, logcumsumexp), searching and
// counting (searchsorted, bucketize, bincount, histc, unique*), shape helpers (meshgrid, kron,
// rot90, diag_embed, stacking) and statistics (cov, corrcoef, cdist). Differentiable ones are
// composites of differentiable ops, or a kernel that finds indices followed by a gather, so
// autograd and fw::compile see only existing primitives (an index kernel ends a compiled graph).
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "fw/ops.h"
#include "fw/tensor.h"

namespace fw {

// ---- reductions that ignore NaN (integer inputs: plain sum; nanmean needs floating point)
Tensor nansum(const Tensor& t, std::optional<ScalarType> dtype = std::nullopt);
Tensor nansum(const Tensor& t, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor nanmean(const Tensor& t, std::optional<ScalarType> dtype = std::nullopt);
Tensor nanmean(const Tensor& t, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
// (min, max) over all elements, or along dim.
std::tuple<Tensor, Tensor> aminmax(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);

// ---- order statistics
// The k-th smallest (1-based) along dim, with its index; NaN sorts last.
std::tuple<Tensor, Tensor> kthvalue(const Tensor& t, int64_t k, int64_t dim = -1, bool keepdim = false);
// Running maximum / minimum along dim with the index of the (last) extreme; NaN propagates.
std::tuple<Tensor, Tensor> cummax(const Tensor& t, int64_t dim);
std::tuple<Tensor, Tensor> cummin(const Tensor& t, int64_t dim);
// log(cumsum(exp(t))) along dim, computed without overflow.
Tensor logcumsumexp(const Tensor& t, int64_t dim);
// Quantiles q in [0, 1] over all elements or along dim; interpolation linear, lower, higher,
// nearest or midpoint. A 1-D q adds a leading dim. quantile gives NaN for a slice holding NaN;
// nanquantile ignores NaNs.
Tensor quantile(const Tensor& t, const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                const std::string& interpolation = "linear");
Tensor quantile(const Tensor& t, double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                const std::string& interpolation = "linear");
Tensor nanquantile(const Tensor& t, const Tensor& q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                   const std::string& interpolation = "linear");
Tensor nanquantile(const Tensor& t, double q, std::optional<int64_t> dim = std::nullopt, bool keepdim = false,
                   const std::string& interpolation = "linear");

// ---- searching and counting (not differentiable)
// Insertion indices of values into sorted_sequence (1-D, or with the values' leading dims);
// right (or side "right") takes the last position among equal elements; sorter sorts an unsorted
// sequence. NaN sorts last.
Tensor searchsorted(const Tensor& sorted_sequence, const Tensor& values, bool out_int32 = false, bool right = false,
                    std::optional<std::string> side = std::nullopt, const std::optional<Tensor>& sorter = std::nullopt);
Tensor searchsorted(const Tensor& sorted_sequence, const Scalar& value, bool out_int32 = false, bool right = false,
                    std::optional<std::string> side = std::nullopt, const std::optional<Tensor>& sorter = std::nullopt);
// Bucket index of each input element for the 1-D boundaries.
Tensor bucketize(const Tensor& input, const Tensor& boundaries, bool out_int32 = false, bool right = false);
Tensor bucketize(const Scalar& input, const Tensor& boundaries, bool out_int32 = false, bool right = false);
// Counts (or summed weights) of each value of a 1-D non-negative integer tensor.
Tensor bincount(const Tensor& t, const std::optional<Tensor>& weights = std::nullopt, int64_t minlength = 0);
// Histogram with `bins` equal bins over [min, max] (the data's range when min == max).
Tensor histc(const Tensor& t, int64_t bins = 100, const Scalar& min = 0, const Scalar& max = 0);
// Distinct elements (flattened): (values, inverse indices); _unique2 also returns counts. NaNs
// are distinct from each other, as in PyTorch.
std::tuple<Tensor, Tensor> _unique(const Tensor& t, bool sorted = true, bool return_inverse = false);
std::tuple<Tensor, Tensor, Tensor> _unique2(const Tensor& t, bool sorted = true, bool return_inverse = false,
                                            bool return_counts = false);
// Distinct slices along dim, sorted lexicographically.
std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& t, int64_t dim, bool sorted = true,
                                              bool return_inverse = false, bool return_counts = false);
// Collapses runs of equal consecutive elements (or slices along dim).
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& t, bool return_inverse = false,
                                                      bool return_counts = false,
                                                      std::optional<int64_t> dim = std::nullopt);
// Indices of the non-zero elements, (n, ndim) (= nonzero).
Tensor argwhere(const Tensor& t);

// ---- construction and shape
// Coordinate grids of 0-D/1-D tensors; indexing "ij" (matrix) or "xy" (Cartesian).
std::vector<Tensor> meshgrid(TensorList tensors, const std::string& indexing = "ij");
// Cartesian product of 1-D tensors as rows of a (n, len(tensors)) tensor.
Tensor cartesian_prod(TensorList tensors);
// Row and column indices (2, n) of the lower / upper triangle of a row x col matrix.
Tensor tril_indices(int64_t row, int64_t col, int64_t offset = 0, const TensorOptions& options = kLong);
Tensor triu_indices(int64_t row, int64_t col, int64_t offset = 0, const TensorOptions& options = kLong);
// Kronecker product.
Tensor kron(const Tensor& a, const Tensor& b);
// Rotation by k quarter turns in the plane of dims (from the first towards the second).
Tensor rot90(const Tensor& t, int64_t k = 1, IntArrayRef dims = {0, 1});
Tensor fliplr(const Tensor& t);
Tensor flipud(const Tensor& t);
Tensor atleast_1d(const Tensor& t);
Tensor atleast_2d(const Tensor& t);
Tensor atleast_3d(const Tensor& t);
Tensor dstack(TensorList ts);
Tensor column_stack(TensorList ts);
// Matrices whose (dim1, dim2) diagonal at offset holds t's last dim.
Tensor diag_embed(const Tensor& t, int64_t offset = 0, int64_t dim1 = -2, int64_t dim2 = -1);
// gather with broadcasting of the other dims (no dim: over the flattened tensor).
Tensor take_along_dim(const Tensor& t, const Tensor& indices, std::optional<int64_t> dim = std::nullopt);
// t with the masked positions (mask broadcast to t) filled by source's leading elements in order.
Tensor masked_scatter(const Tensor& t, const Tensor& mask, const Tensor& source);
// sign for real tensors; x / |x| (0 at 0) for complex ones.
Tensor sgn(const Tensor& t);
Tensor clone(const Tensor& t);
// log(exp(a) + exp(b)) and log2(2^a + 2^b), without overflow.
Tensor logaddexp(const Tensor& a, const Tensor& b);
Tensor logaddexp2(const Tensor& a, const Tensor& b);
// scatter with a reduction: out[index[i]] = reduce(self (if include_self), src[i] for every i
// scattered there); reduce is sum, prod, mean, amax or amin. Positions nothing is scattered to
// keep self. Integer mean rounds down, as PyTorch.
Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src,
                      const std::string& reduce, bool include_self = true);
// Poisson samples with the given rates (non-negative), drawn from fw's generator.
Tensor poisson(const Tensor& rates);
// t with the slices at `index` along dim set to value.
Tensor index_fill(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value);

// ---- statistics and distances
// Covariance of the rows (variables) of a 1-D or 2-D tensor over its columns (observations).
Tensor cov(const Tensor& t, int64_t correction = 1, const std::optional<Tensor>& fweights = std::nullopt,
           const std::optional<Tensor>& aweights = std::nullopt);
Tensor corrcoef(const Tensor& t);
// p-norm distances between the rows of x1 (*, P, M) and x2 (*, R, M): (*, P, R). compute_mode
// 0 (default) uses the matrix-product form for p = 2 when P or R exceeds 25 and no gradient is
// needed, 1 always when no gradient is needed, 2 never.
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2, std::optional<int64_t> compute_mode = std::nullopt);

// ---- more composites
// Sorted along dim 0.
Tensor msort(const Tensor& t);
// Median ignoring NaNs (NaN only when all are NaN); the lower of the two middle values.
Tensor nanmedian(const Tensor& t);
std::tuple<Tensor, Tensor> nanmedian(const Tensor& t, int64_t dim, bool keepdim = false);
// n-th forward difference along dim, after concatenating prepend and append.
Tensor diff(const Tensor& t, int64_t n = 1, int64_t dim = -1, const std::optional<Tensor>& prepend = std::nullopt,
            const std::optional<Tensor>& append = std::nullopt);
// Trapezoid rule along dim with spacing dx or sample points x; cumulative_trapezoid keeps the
// running integral.
Tensor trapezoid(const Tensor& y, double dx = 1, int64_t dim = -1);
Tensor trapezoid(const Tensor& y, const Tensor& x, int64_t dim = -1);
Tensor trapz(const Tensor& y, double dx = 1, int64_t dim = -1);
Tensor trapz(const Tensor& y, const Tensor& x, int64_t dim = -1);
Tensor cumulative_trapezoid(const Tensor& y, double dx = 1, int64_t dim = -1);
Tensor cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim = -1);
// 0 where t < 0, values where t == 0, 1 where t > 0.
Tensor heaviside(const Tensor& t, const Tensor& values);
// Block-diagonal matrix of 0-D, 1-D or 2-D tensors.
Tensor block_diag(TensorList tensors);
// Vandermonde matrix of a 1-D x: columns x^(N-1), ..., x^0 (increasing: x^0 first).
Tensor vander(const Tensor& x, std::optional<int64_t> N = std::nullopt, bool increasing = false);
// Sum over the last dims of a and b (inner), over given dim pairs (tensordot).
Tensor inner(const Tensor& a, const Tensor& b);
Tensor tensordot(const Tensor& a, const Tensor& b, IntArrayRef dims_a, IntArrayRef dims_b);
// Products of a chain of matrices.
Tensor chain_matmul(TensorList matrices);
// beta * t + alpha * (mat @ vec) and beta * t + alpha * outer(v1, v2).
Tensor addmv(const Tensor& t, const Tensor& mat, const Tensor& vec, const Scalar& beta = 1, const Scalar& alpha = 1);
Tensor addr(const Tensor& t, const Tensor& v1, const Tensor& v2, const Scalar& beta = 1, const Scalar& alpha = 1);
// t * 2^other.
Tensor ldexp(const Tensor& t, const Tensor& other);
// pow in double precision (complex128 for complex).
Tensor float_power(const Tensor& t, const Tensor& exponent);
Tensor float_power(const Tensor& t, const Scalar& exponent);
// sin(pi x) / (pi x), 1 at 0.
Tensor sinc(const Tensor& t);
Tensor deg2rad(const Tensor& t);
Tensor rad2deg(const Tensor& t);
// Greatest common divisor / least common multiple of integer tensors (non-negative results).
Tensor gcd(const Tensor& a, const Tensor& b);
Tensor lcm(const Tensor& a, const Tensor& b);
// The dtype of a binary op's result, and whether `from` casts to `to` under PyTorch's rules.
ScalarType result_type(const Tensor& a, const Tensor& b);
bool can_cast(ScalarType from, ScalarType to);

// ---- torch::special (the functions fw has, under libtorch's names)
namespace special {
inline Tensor digamma(const Tensor& t) { return fw::digamma(t); }
inline Tensor psi(const Tensor& t) { return fw::digamma(t); }
inline Tensor polygamma(int64_t n, const Tensor& t) { return fw::polygamma(n, t); }
inline Tensor gammaln(const Tensor& t) { return fw::lgamma(t); }
inline Tensor erf(const Tensor& t) { return fw::erf(t); }
inline Tensor erfc(const Tensor& t) { return fw::erfc(t); }
inline Tensor erfinv(const Tensor& t) { return fw::erfinv(t); }
inline Tensor exp2(const Tensor& t) { return fw::exp2(t); }
inline Tensor expm1(const Tensor& t) { return fw::expm1(t); }
inline Tensor log1p(const Tensor& t) { return fw::log1p(t); }
inline Tensor expit(const Tensor& t) { return fw::sigmoid(t); }
inline Tensor logit(const Tensor& t, std::optional<double> eps = std::nullopt) { return fw::logit(t, eps); }
inline Tensor sinc(const Tensor& t) { return fw::sinc(t); }
inline Tensor round(const Tensor& t) { return fw::round(t); }
inline Tensor xlogy(const Tensor& a, const Tensor& b) { return fw::xlogy(a, b); }
inline Tensor logsumexp(const Tensor& t, IntArrayRef dim, bool keepdim = false) { return fw::logsumexp(t, dim, keepdim); }
inline Tensor softmax(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype = std::nullopt) {
  return fw::softmax(t, dim, dtype);
}
inline Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype = std::nullopt) {
  return fw::log_softmax(t, dim, dtype);
}
// a * log1p(b), 0 where a == 0 (unless b is NaN).
Tensor xlog1py(const Tensor& a, const Tensor& b);
// -x log x elementwise: 0 at 0, -inf below 0.
Tensor entr(const Tensor& t);
// The standard normal CDF, 0.5 erfc(-x / sqrt 2).
Tensor ndtr(const Tensor& t);
// The multivariate log-gamma of dimension p: sum_i lgamma(x - i/2) + p(p-1)/4 log(pi).
Tensor multigammaln(const Tensor& t, int64_t p);
}  // namespace special

// ---- libtorch spellings of existing functions
inline size_t elementSize(ScalarType t) { return element_size(t); }
namespace autograd {
using fw::GradMode;
}  // namespace autograd

}  // namespace fw
