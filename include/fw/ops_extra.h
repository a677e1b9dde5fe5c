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
#include "fw/special_fns.h"
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
// numpy-style histogram of all elements: (hist, bin_edges). `bins` equal bins over range (the
// data's min and max when absent; an empty range widens by 0.5 each way), or the given
// increasing edges; each bin holds [edge_i, edge_i+1), the last also its right edge; elements
// outside are ignored. weight: per-element weights (the input's shape and dtype) summed instead
// of counts; density: divided by the total and the bin widths.
std::tuple<Tensor, Tensor> histogram(const Tensor& t, int64_t bins = 100, std::optional<ArrayRef<double>> range = std::nullopt,
                                     const std::optional<Tensor>& weight = std::nullopt, bool density = false);
std::tuple<Tensor, Tensor> histogram(const Tensor& t, const Tensor& bins, const std::optional<Tensor>& weight = std::nullopt,
                                     bool density = false);
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
// y[..., o] = sum_ij x1[..., i] W[o, i, j] x2[..., j] + b[o] (torch.bilinear; nn::Bilinear's math).
// x1 and x2 share their leading dims; W is (out, in1, in2), b (out) or undefined.
Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias = {});
// softmax(q k^T * scale + mask) v over the last two dims (PyTorch 2's scaled_dot_product_attention):
// q (..., L, E), k (..., S, E), v (..., S, Ev), leading dims broadcast. scale defaults to
// 1/sqrt(E). A bool attn_mask keeps the positions where it is true (a row with none gives NaN, as
// PyTorch); a floating one is added to the scores. is_causal keeps key j <= query i (and excludes
// attn_mask). dropout_p drops attention weights (scaled by 1/(1-p)) from fw's generator.
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const Tensor& attn_mask = {}, double dropout_p = 0.0, bool is_causal = false,
                                    std::optional<double> scale = std::nullopt);
// torch.gradient: the derivative of the samples in t along each of `dim` (every dim when absent)
// by second-order central differences inside and first- or second-order (edge_order) one-sided
// differences at the ends, one tensor per dim. The spacing is 1, one Scalar for every dim, a Scalar
// per dim, or a 1-D tensor of coordinates per dim (non-uniform samples). Integral inputs give the
// default floating dtype. Each size along dim must be at least edge_order + 1.
std::vector<Tensor> gradient(const Tensor& t, const std::optional<Scalar>& spacing = std::nullopt,
                             std::optional<int64_t> dim = std::nullopt, int64_t edge_order = 1);
std::vector<Tensor> gradient(const Tensor& t, const Scalar& spacing, IntArrayRef dim, int64_t edge_order = 1);
std::vector<Tensor> gradient(const Tensor& t, IntArrayRef dim, int64_t edge_order = 1);
std::vector<Tensor> gradient(const Tensor& t, ArrayRef<Scalar> spacing, std::optional<int64_t> dim = std::nullopt,
                             int64_t edge_order = 1);
std::vector<Tensor> gradient(const Tensor& t, ArrayRef<Scalar> spacing, IntArrayRef dim, int64_t edge_order = 1);
std::vector<Tensor> gradient(const Tensor& t, TensorList spacing, std::optional<int64_t> dim = std::nullopt,
                             int64_t edge_order = 1);
std::vector<Tensor> gradient(const Tensor& t, TensorList spacing, IntArrayRef dim, int64_t edge_order = 1);
// The length-r combinations of a 1-D tensor's elements, one per row, in lexicographic order of
// positions (with_replacement allows repeats): shape [count, r]; r = 0 gives an empty 1-D tensor.
Tensor combinations(const Tensor& t, int64_t r = 2, bool with_replacement = false);
// (N, C, *) -> the same shape with channels reordered as (groups, C / groups) -> (C / groups, groups).
Tensor channel_shuffle(const Tensor& x, int64_t groups);
// (*, C r^2, H, W) -> (*, C, H r, W r) and back (torch::pixel_shuffle / pixel_unshuffle).
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor);
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor);
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
Tensor clone(const Tensor& t, std::optional<MemoryFormat> memory_format = std::nullopt);
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

// More libtorch spellings (core/ops/compat_ops.cpp).
// torch::max(a, b) / torch::min(a, b): the elementwise maximum / minimum.
Tensor max(const Tensor& a, const Tensor& b);
Tensor min(const Tensor& a, const Tensor& b);
// scatter with reduce "add" or "multiply": the indexed positions of t combined with src (or with
// value), as scatter_reduce with "sum" / "prod" and include_self.
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce);
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value, const std::string& reduce);
// t with slice index[i] along dim combined with source's slice i by reduce ("prod", "mean",
// "amax", "amin"); include_self false leaves t's own values out of the indexed slices.
Tensor index_reduce(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                    bool include_self = true);
std::vector<Tensor> unsafe_split(const Tensor& t, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> unsafe_split_with_sizes(const Tensor& t, IntArrayRef sizes, int64_t dim = 0);
std::vector<Tensor> unsafe_chunk(const Tensor& t, int64_t chunks, int64_t dim = 0);
Tensor matrix_power(const Tensor& t, int64_t n);
Tensor pinverse(const Tensor& t, double rcond = 1e-15);
// The QR decomposition: reduced (some) or complete Q and R.
std::tuple<Tensor, Tensor> qr(const Tensor& t, bool some = true);
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
// The same with numbers, which promote as wrapped scalars (1.0 with an int64 tensor gives the
// default float dtype, not float64).
ScalarType result_type(const Tensor& a, const Scalar& b);
ScalarType result_type(const Scalar& a, const Tensor& b);
ScalarType result_type(const Scalar& a, const Scalar& b);
bool can_cast(ScalarType from, ScalarType to);

// ---- more of libtorch's tensor functions (core/ops/extra_more.cpp)
// The most frequent value along dim (the smallest among equally frequent ones) and the index of
// its last occurrence.
std::tuple<Tensor, Tensor> mode(const Tensor& t, int64_t dim = -1, bool keepdim = false);
// p-norm of a - b.
Tensor dist(const Tensor& a, const Tensor& b, const Scalar& p = 2);
// Each slice along dim whose p-norm exceeds maxnorm, scaled to norm maxnorm.
Tensor renorm(const Tensor& t, const Scalar& p, int64_t dim, const Scalar& maxnorm);
// t = mantissa * 2^exponent with |mantissa| in [0.5, 1) (0 for 0); exponent is int32.
std::tuple<Tensor, Tensor> frexp(const Tensor& t);
// The next representable value after a towards b (not differentiable).
Tensor nextafter(const Tensor& a, const Tensor& b);
// True where the element has no imaginary part (everywhere for real dtypes).
Tensor isreal(const Tensor& t);
// a << b and a >> b (arithmetic) for integer tensors; shifts of the type's width or more (or
// negative) give 0, or -1 for a negative a shifted right.
Tensor bitwise_left_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_left_shift(const Tensor& a, const Scalar& b);
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b);
Tensor bitwise_right_shift(const Tensor& a, const Scalar& b);
Tensor bitwise_left_shift(const Scalar& a, const Tensor& b);
Tensor bitwise_right_shift(const Scalar& a, const Tensor& b);
// at::__lshift__ and friends (Tensor's methods of the same names).
Tensor __lshift__(const Tensor& a, const Tensor& b);
Tensor __lshift__(const Tensor& a, const Scalar& b);
Tensor __rshift__(const Tensor& a, const Tensor& b);
Tensor __rshift__(const Tensor& a, const Scalar& b);
Tensor __and__(const Tensor& a, const Tensor& b);
Tensor __and__(const Tensor& a, const Scalar& b);
Tensor __or__(const Tensor& a, const Tensor& b);
Tensor __or__(const Tensor& a, const Scalar& b);
Tensor __xor__(const Tensor& a, const Tensor& b);
Tensor __xor__(const Tensor& a, const Scalar& b);
// Splits into `sections` parts (the first size % sections one longer) or at the given indices.
std::vector<Tensor> tensor_split(const Tensor& t, int64_t sections, int64_t dim = 0);
std::vector<Tensor> tensor_split(const Tensor& t, IntArrayRef indices, int64_t dim = 0);
std::vector<Tensor> tensor_split(const Tensor& t, const Tensor& tensor_indices_or_sections, int64_t dim = 0);
// tensor_split along dim 1 (0 for 1-D), 0 and 2; an integer count must divide the size.
std::vector<Tensor> hsplit(const Tensor& t, int64_t sections);
std::vector<Tensor> hsplit(const Tensor& t, IntArrayRef indices);
std::vector<Tensor> vsplit(const Tensor& t, int64_t sections);
std::vector<Tensor> vsplit(const Tensor& t, IntArrayRef indices);
std::vector<Tensor> dsplit(const Tensor& t, int64_t sections);
std::vector<Tensor> dsplit(const Tensor& t, IntArrayRef indices);
// Moves dims source to positions destination, the others keeping their order.
Tensor movedim(const Tensor& t, IntArrayRef source, IntArrayRef destination);
Tensor movedim(const Tensor& t, int64_t source, int64_t destination);
Tensor moveaxis(const Tensor& t, IntArrayRef source, IntArrayRef destination);
Tensor moveaxis(const Tensor& t, int64_t source, int64_t destination);
Tensor swapaxes(const Tensor& t, int64_t d0, int64_t d1);
Tensor swapdims(const Tensor& t, int64_t d0, int64_t d1);
// t with the slices at `index` along dim replaced by source's slices (index_copy), or the
// flattened positions `index` set to (or, accumulate, incremented by) source's elements (put).
Tensor index_copy(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source);
Tensor put(const Tensor& t, const Tensor& index, const Tensor& source, bool accumulate = false);
// beta * t + alpha * sum_b b1[b] @ b2[b].
Tensor addbmm(const Tensor& t, const Tensor& b1, const Tensor& b2, const Scalar& beta = 1, const Scalar& alpha = 1);
// Non-zero counts over several dims (and an int overload, so count_nonzero(t, 1) picks one dim).
Tensor count_nonzero(const Tensor& t, IntArrayRef dims);
inline Tensor count_nonzero(const Tensor& t, int64_t dim) { return count_nonzero(t, std::optional<int64_t>(dim)); }
// Rounded to `decimals` decimal places (half to even, as round()).
Tensor round(const Tensor& t, int64_t decimals);
// Variance / standard deviation and mean over all elements.
std::tuple<Tensor, Tensor> var_mean(const Tensor& t);
std::tuple<Tensor, Tensor> std_mean(const Tensor& t);
template <class B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
std::tuple<Tensor, Tensor> var_mean(const Tensor& t, B unbiased) {
  return var_mean(t, IntArrayRef{}, unbiased, false);
}
template <class B, std::enable_if_t<std::is_same_v<B, bool>, int> = 0>
std::tuple<Tensor, Tensor> std_mean(const Tensor& t, B unbiased) {
  return std_mean(t, IntArrayRef{}, unbiased, false);
}
// Random integers in [low, high) with t's shape (and dtype unless options give one).
Tensor randint_like(const Tensor& t, int64_t high, const TensorOptions& options = {});
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, const TensorOptions& options = {});
// [start, end] with step (end included; deprecated in libtorch, kept for old programs).
Tensor range(const Scalar& start, const Scalar& end, const Scalar& step = 1, const TensorOptions& options = {});
// fw runs one pool; the inter-op thread count is recorded for libtorch programs that set it.
void set_num_interop_threads(int n);
int get_num_interop_threads();

// Predicates and sizes as free functions (libtorch's torch::is_floating_point(t), ...).
inline bool is_floating_point(const Tensor& t) { return t.is_floating_point(); }
inline bool is_complex(const Tensor& t) { return t.is_complex(); }
inline bool is_nonzero(const Tensor& t) { return t.is_nonzero(); }
inline bool is_signed(const Tensor& t) { return t.is_signed(); }
inline int64_t numel(const Tensor& t) { return t.numel(); }
inline Tensor ravel(const Tensor& t) { return t.reshape({-1}); }
inline Tensor narrow_copy(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  return t.narrow_copy(dim, start, length);
}
// t summed over the dims that broadcasting `size` would expand (t must be expandable from size).
Tensor sum_to_size(const Tensor& t, IntArrayRef size);
// True where an element of `elements` occurs in test_elements (invert: where it does not).
Tensor isin(const Tensor& elements, const Tensor& test_elements, bool assume_unique = false, bool invert = false);
Tensor isin(const Tensor& elements, const Scalar& test_element, bool assume_unique = false, bool invert = false);
Tensor isin(const Scalar& element, const Tensor& test_elements, bool assume_unique = false, bool invert = false);
// Each element (or slice along dim) repeated repeats[i] times; repeat_interleave(repeats) gives
// the indices 0, 0, ..., 1, ... (repeats[i] copies of i).
Tensor repeat_interleave(const Tensor& t, const Tensor& repeats, std::optional<int64_t> dim = std::nullopt);
Tensor repeat_interleave(const Tensor& repeats);
// Samples of N(mean, std^2) with a tensor of means or of standard deviations.
Tensor normal(const Tensor& mean, double std = 1);
Tensor normal(double mean, const Tensor& std);
// Copies of t with src written into a slice / one index / a diagonal (differentiable).
Tensor select_scatter(const Tensor& t, const Tensor& src, int64_t dim, int64_t index);
Tensor slice_scatter(const Tensor& t, const Tensor& src, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
                     std::optional<int64_t> end = std::nullopt, int64_t step = 1);
Tensor diagonal_scatter(const Tensor& t, const Tensor& src, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);

// libtorch's NumPy-style aliases.
inline Tensor arccos(const Tensor& t) { return fw::acos(t); }
inline Tensor arcsin(const Tensor& t) { return fw::asin(t); }
inline Tensor arctan(const Tensor& t) { return fw::atan(t); }
inline Tensor arccosh(const Tensor& t) { return fw::acosh(t); }
inline Tensor arcsinh(const Tensor& t) { return fw::asinh(t); }
inline Tensor arctanh(const Tensor& t) { return fw::atanh(t); }
inline Tensor arctan2(const Tensor& a, const Tensor& b) { return fw::atan2(a, b); }
inline Tensor multiply(const Tensor& a, const Tensor& b) { return fw::mul(a, b); }
inline Tensor multiply(const Tensor& a, const Scalar& b) { return fw::mul(a, b); }
inline Tensor subtract(const Tensor& a, const Tensor& b, const Scalar& alpha = 1) { return fw::sub(a, b, alpha); }
inline Tensor subtract(const Tensor& a, const Scalar& b, const Scalar& alpha = 1) { return fw::sub(a, b, alpha); }
inline Tensor divide(const Tensor& a, const Tensor& b) { return fw::div(a, b); }
inline Tensor divide(const Tensor& a, const Scalar& b) { return fw::div(a, b); }
Tensor divide(const Tensor& a, const Tensor& b, std::optional<std::string> rounding_mode);
Tensor divide(const Tensor& a, const Scalar& b, std::optional<std::string> rounding_mode);
inline Tensor fix(const Tensor& t) { return fw::trunc(t); }
Tensor positive(const Tensor& t);
inline Tensor row_stack(TensorList ts) { return fw::vstack(ts); }
inline Tensor mvlgamma(const Tensor& t, int64_t p);

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
using fw::AutoGradMode;
using fw::GradMode;
}  // namespace autograd
inline Tensor mvlgamma(const Tensor& t, int64_t p) { return special::multigammaln(t, p); }

}  // namespace fw
