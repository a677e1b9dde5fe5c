// Free functions in namespace fw, named and shaped as libtorch's torch:: functions.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "fw/tensor.h"

namespace fw {

// ---- creation
Tensor empty(IntArrayRef size, const TensorOptions& o = {});
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& o = {});
Tensor zeros(IntArrayRef size, const TensorOptions& o = {});
Tensor ones(IntArrayRef size, const TensorOptions& o = {});
Tensor full(IntArrayRef size, const Scalar& v, const TensorOptions& o = {});
Tensor empty_like(const Tensor& t, const TensorOptions& o = {});
Tensor zeros_like(const Tensor& t, const TensorOptions& o = {});
Tensor ones_like(const Tensor& t, const TensorOptions& o = {});
Tensor full_like(const Tensor& t, const Scalar& v, const TensorOptions& o = {});
Tensor rand_like(const Tensor& t, const TensorOptions& o = {});
Tensor randn_like(const Tensor& t, const TensorOptions& o = {});
Tensor arange(const Scalar& end, const TensorOptions& o = {});
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& o = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o = {});
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o = {});
Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base = 10.0,
                const TensorOptions& o = {});
Tensor eye(int64_t n, const TensorOptions& o = {});
Tensor eye(int64_t n, int64_t m, const TensorOptions& o = {});
Tensor scalar_tensor(const Scalar& v, const TensorOptions& o = {});
// Wraps memory the caller owns (no copy); the deleter, if given, runs when the last view dies.
Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& o = {});
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o = {});
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter,
                 const TensorOptions& o = {});

// Builds a tensor from nested braces: fw::tensor({{1, 2}, {3, 4}}). The dtype follows libtorch:
// int and int64 elements give Long, float and double the default dtype, others (uint8_t,
// int8_t, int16_t, bool, Half, BFloat16) their own; mixed elements promote. Integers are kept
// exactly (int64 values past 2^53 too).
class NestedList {
 public:
  NestedList(double v) : type_(kDouble) { vals_.emplace_back(v); }
  NestedList(float v) : type_(kFloat) { vals_.emplace_back(double(v)); }
  NestedList(Half v) : type_(kHalf) { vals_.emplace_back(v); }
  NestedList(BFloat16 v) : type_(kBFloat16) { vals_.emplace_back(v); }
  NestedList(int v) : type_(kInt) { vals_.emplace_back(v); }
  NestedList(int64_t v) : type_(kLong) { vals_.emplace_back(v); }
  NestedList(long long v) : type_(kLong) { vals_.emplace_back(int64_t(v)); }
  NestedList(int16_t v) : type_(kShort) { vals_.emplace_back(v); }
  NestedList(int8_t v) : type_(kChar) { vals_.emplace_back(v); }
  NestedList(uint8_t v) : type_(kByte) { vals_.emplace_back(v); }
  NestedList(bool v) : type_(kBool) { vals_.emplace_back(v); }
  NestedList(std::initializer_list<NestedList> l);
  const std::vector<Scalar>& values() const { return vals_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  ScalarType element_type() const { return type_; }  // the promoted type of the elements
  ScalarType inferred() const;                       // the tensor's dtype (libtorch's rule)

 private:
  std::vector<Scalar> vals_;
  std::vector<int64_t> shape_;
  ScalarType type_;
};
Tensor tensor(const NestedList& l, const TensorOptions& o = {});
// A 1-D tensor of the values (libtorch's tensor(ArrayRef<T>) and tensor(std::vector<T>)); the
// options' dtype, device and requires_grad apply.
// Without a dtype in the options, int and int64 values give Long and float and double ones the
// default dtype (libtorch's rule, as for braced lists).
ScalarType tensor_dtype_for(ScalarType element);
template <class T>
Tensor tensor(ArrayRef<T> v, const TensorOptions& o = {}) {
  auto src = empty({int64_t(v.size())}, TensorOptions(CppToType<T>::value));
  std::copy(v.begin(), v.end(), src.template data_ptr<T>());
  ScalarType want = o.has_dtype() ? o.dtype() : tensor_dtype_for(src.dtype());
  if (want == src.dtype() && o.device() == src.device()) return src.requires_grad_(o.requires_grad());
  return src.to(o.device(), want).requires_grad_(o.requires_grad());
}
template <class T, std::enable_if_t<!std::is_same_v<T, bool>, int> = 0>
Tensor tensor(const std::vector<T>& v, const TensorOptions& o = {}) {
  return tensor(ArrayRef<T>(v.data(), v.size()), o);
}
// std::vector<bool> packs bits and has no data(). (A template, so that braced lists still go to
// the NestedList overload.)
template <class V, std::enable_if_t<std::is_same_v<V, std::vector<bool>>, int> = 0>
Tensor tensor(const V& v, const TensorOptions& o = {}) {
  std::unique_ptr<bool[]> b(new bool[v.size() + 1]);
  std::copy(v.begin(), v.end(), b.get());
  return tensor(ArrayRef<bool>(b.get(), v.size()), o);
}

// ---- random (counter-based Philox; see core/random.cpp)
void manual_seed(uint64_t seed);
uint64_t initial_seed();
Tensor rand(IntArrayRef size, const TensorOptions& o = {});
Tensor randn(IntArrayRef size, const TensorOptions& o = {});
Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& o = kLong);
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& o = kLong);
Tensor randperm(int64_t n, const TensorOptions& o = kLong);
Tensor bernoulli(const Tensor& p);
Tensor bernoulli(const Tensor& t, double p);
Tensor normal(double mean, double std, IntArrayRef size, const TensorOptions& o = {});
Tensor normal(const Tensor& mean, const Tensor& std);
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement = false);
// The same draws from `gen` (Note [Generators] in fw/generator.h): nullopt or an undefined
// generator is the default one.
Tensor rand(IntArrayRef size, std::optional<Generator> gen, const TensorOptions& o = {});
Tensor randn(IntArrayRef size, std::optional<Generator> gen, const TensorOptions& o = {});
Tensor randint(int64_t high, IntArrayRef size, std::optional<Generator> gen, const TensorOptions& o = kLong);
Tensor randint(int64_t low, int64_t high, IntArrayRef size, std::optional<Generator> gen,
               const TensorOptions& o = kLong);
Tensor randperm(int64_t n, std::optional<Generator> gen, const TensorOptions& o = kLong);
Tensor bernoulli(const Tensor& p, std::optional<Generator> gen);
Tensor bernoulli(const Tensor& t, double p, std::optional<Generator> gen);
Tensor normal(double mean, double std, IntArrayRef size, std::optional<Generator> gen, const TensorOptions& o = {});
Tensor normal(const Tensor& mean, const Tensor& std, std::optional<Generator> gen);
Tensor normal(const Tensor& mean, double std, std::optional<Generator> gen);
Tensor normal(double mean, const Tensor& std, std::optional<Generator> gen);
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, std::optional<Generator> gen);
Tensor poisson(const Tensor& rates, std::optional<Generator> gen);
Tensor binomial(const Tensor& count, const Tensor& prob, std::optional<Generator> gen);

// ---- views and shape
Tensor reshape(const Tensor& t, IntArrayRef size);
Tensor flatten(const Tensor& t, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor unflatten(const Tensor& t, int64_t dim, IntArrayRef sizes);
Tensor permute(const Tensor& t, IntArrayRef dims);
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1);
Tensor t(const Tensor& t);
Tensor squeeze(const Tensor& t);
Tensor squeeze(const Tensor& t, int64_t dim);
Tensor unsqueeze(const Tensor& t, int64_t dim);
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& t, int64_t dim, int64_t index);
Tensor as_strided(const Tensor& t, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> offset = std::nullopt);
std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split(const Tensor& t, IntArrayRef sizes, int64_t dim = 0);
std::vector<Tensor> unbind(const Tensor& t, int64_t dim = 0);
Tensor cat(TensorList ts, int64_t dim = 0);
Tensor concat(TensorList ts, int64_t dim = 0);
Tensor stack(TensorList ts, int64_t dim = 0);
Tensor hstack(TensorList ts);
Tensor vstack(TensorList ts);
Tensor flip(const Tensor& t, IntArrayRef dims);
Tensor roll(const Tensor& t, IntArrayRef shifts, IntArrayRef dims = {});
Tensor tile(const Tensor& t, IntArrayRef reps);
Tensor broadcast_to(const Tensor& t, IntArrayRef size);
std::vector<Tensor> broadcast_tensors(TensorList ts);
Tensor view_as_real(const Tensor& t);
Tensor view_as_complex(const Tensor& t);
Tensor complex(const Tensor& real, const Tensor& imag);
Tensor real(const Tensor& t);
Tensor imag(const Tensor& t);
Tensor polar(const Tensor& abs, const Tensor& angle);

// ---- pointwise
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor rsub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor rsub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Scalar& b);
// rounding_mode: nullopt (true division), "trunc" or "floor".
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string> rounding_mode);
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string> rounding_mode);
Tensor true_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, const Scalar& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Scalar& b);
Tensor remainder(const Scalar& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Scalar& b);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Scalar& b);
Tensor pow(const Scalar& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor fmax(const Tensor& a, const Tensor& b);
Tensor fmin(const Tensor& a, const Tensor& b);
Tensor hypot(const Tensor& a, const Tensor& b);
Tensor copysign(const Tensor& a, const Tensor& b);
Tensor copysign(const Tensor& a, const Scalar& b);
Tensor xlogy(const Tensor& a, const Tensor& b);
Tensor lerp(const Tensor& a, const Tensor& b, const Scalar& w);
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w);
Tensor addcmul(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& value = 1);
Tensor addcdiv(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& value = 1);
Tensor eq(const Tensor& a, const Tensor& b);
Tensor eq(const Tensor& a, const Scalar& b);
Tensor ne(const Tensor& a, const Tensor& b);
Tensor ne(const Tensor& a, const Scalar& b);
Tensor lt(const Tensor& a, const Tensor& b);
Tensor lt(const Tensor& a, const Scalar& b);
Tensor le(const Tensor& a, const Tensor& b);
Tensor le(const Tensor& a, const Scalar& b);
Tensor gt(const Tensor& a, const Tensor& b);
Tensor gt(const Tensor& a, const Scalar& b);
Tensor ge(const Tensor& a, const Tensor& b);
Tensor ge(const Tensor& a, const Scalar& b);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& a);
Tensor bitwise_and(const Tensor& a, const Tensor& b);
Tensor bitwise_or(const Tensor& a, const Tensor& b);
Tensor bitwise_xor(const Tensor& a, const Tensor& b);
Tensor bitwise_and(const Tensor& a, const Scalar& b);
Tensor bitwise_or(const Tensor& a, const Scalar& b);
Tensor bitwise_xor(const Tensor& a, const Scalar& b);
Tensor bitwise_not(const Tensor& a);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b);
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b);
Tensor clamp(const Tensor& t, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor clamp(const Tensor& t, const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt);
Tensor tril(const Tensor& t, int64_t diagonal = 0);
Tensor triu(const Tensor& t, int64_t diagonal = 0);
Tensor diagonal(const Tensor& t, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor diag(const Tensor& t, int64_t diagonal = 0);
Tensor trace(const Tensor& t);
Tensor repeat_interleave(const Tensor& t, int64_t repeats, std::optional<int64_t> dim = std::nullopt);
Tensor clamp_min(const Tensor& t, const Scalar& m);
Tensor clamp_max(const Tensor& t, const Scalar& m);
Tensor clamp_min(const Tensor& t, const Tensor& m);
Tensor clamp_max(const Tensor& t, const Tensor& m);
inline Tensor& clamp_(Tensor& t, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt) { return t.clamp_(min, max); }
inline Tensor& clamp_(Tensor& t, const std::optional<Tensor>& min, const std::optional<Tensor>& max = std::nullopt) {
  return t.clamp_(min, max);
}
inline Tensor& clamp_min_(Tensor& t, const Scalar& m) { return t.clamp_min_(m); }
inline Tensor& clamp_max_(Tensor& t, const Scalar& m) { return t.clamp_max_(m); }
inline Tensor& clamp_min_(Tensor& t, const Tensor& m) { return t.clamp_min_(m); }
inline Tensor& clamp_max_(Tensor& t, const Tensor& m) { return t.clamp_max_(m); }
Tensor clip(const Tensor& t, std::optional<Scalar> min, std::optional<Scalar> max = std::nullopt);
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Scalar& v);
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Tensor& v);

#define FW_UNARY_FN(name) Tensor name(const Tensor& t); Tensor& name##_(Tensor& t);
FW_UNARY_FN(exp) FW_UNARY_FN(exp2) FW_UNARY_FN(expm1) FW_UNARY_FN(log) FW_UNARY_FN(log2)
FW_UNARY_FN(log10) FW_UNARY_FN(log1p) FW_UNARY_FN(sqrt) FW_UNARY_FN(rsqrt) FW_UNARY_FN(abs)
FW_UNARY_FN(neg) FW_UNARY_FN(sign) FW_UNARY_FN(floor) FW_UNARY_FN(ceil) FW_UNARY_FN(round)
FW_UNARY_FN(trunc) FW_UNARY_FN(frac) FW_UNARY_FN(reciprocal) FW_UNARY_FN(square) FW_UNARY_FN(sin)
FW_UNARY_FN(cos) FW_UNARY_FN(tan) FW_UNARY_FN(asin) FW_UNARY_FN(acos) FW_UNARY_FN(atan)
FW_UNARY_FN(sinh) FW_UNARY_FN(cosh) FW_UNARY_FN(tanh) FW_UNARY_FN(sigmoid) FW_UNARY_FN(erf)
FW_UNARY_FN(erfc) FW_UNARY_FN(relu) FW_UNARY_FN(lgamma) FW_UNARY_FN(digamma) FW_UNARY_FN(erfinv)
FW_UNARY_FN(asinh) FW_UNARY_FN(acosh) FW_UNARY_FN(atanh)
#undef FW_UNARY_FN
// The n-th derivative of digamma (n >= 0; polygamma(0, x) = digamma(x)).
Tensor polygamma(int64_t n, const Tensor& t);
Tensor absolute(const Tensor& t);
Tensor negative(const Tensor& t);
Tensor signbit(const Tensor& t);
Tensor logit(const Tensor& t, std::optional<double> eps = std::nullopt);
Tensor isnan(const Tensor& t);
Tensor isinf(const Tensor& t);
Tensor isfinite(const Tensor& t);
Tensor isposinf(const Tensor& t);
Tensor isneginf(const Tensor& t);
Tensor nan_to_num(const Tensor& t, std::optional<double> nan = std::nullopt,
                  std::optional<double> posinf = std::nullopt, std::optional<double> neginf = std::nullopt);
Tensor conj(const Tensor& t);
// conj materialised (fw's conj always is: there is no lazy conjugate bit).
inline Tensor conj_physical(const Tensor& t) { return conj(t); }
inline Tensor& conj_physical_(Tensor& t) { return t.conj_physical_(); }
Tensor angle(const Tensor& t);
// Activations exposed at top level as in libtorch.
Tensor gelu(const Tensor& t, const std::string& approximate = "none");
Tensor silu(const Tensor& t);
Tensor elu(const Tensor& t, const Scalar& alpha = 1.0, const Scalar& scale = 1, const Scalar& input_scale = 1);
Tensor selu(const Tensor& t);
Tensor leaky_relu(const Tensor& t, const Scalar& negative_slope = 0.01);
Tensor hardtanh(const Tensor& t, const Scalar& min_val = -1, const Scalar& max_val = 1);
Tensor softplus(const Tensor& t, const Scalar& beta = 1, const Scalar& threshold = 20);
Tensor mish(const Tensor& t);
Tensor hardsigmoid(const Tensor& t);
Tensor hardswish(const Tensor& t);
Tensor relu6(const Tensor& t);
Tensor log_sigmoid(const Tensor& t);

// ---- reductions
Tensor sum(const Tensor& t, std::optional<ScalarType> dtype = std::nullopt);
Tensor sum(const Tensor& t, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& t, std::optional<ScalarType> dtype = std::nullopt);
Tensor mean(const Tensor& t, IntArrayRef dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor prod(const Tensor& t, std::optional<ScalarType> dtype = std::nullopt);
Tensor prod(const Tensor& t, int64_t dim, bool keepdim = false, std::optional<ScalarType> dtype = std::nullopt);
Tensor max(const Tensor& t);
std::tuple<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor min(const Tensor& t);
std::tuple<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor amax(const Tensor& t, IntArrayRef dim = {}, bool keepdim = false);
Tensor amin(const Tensor& t, IntArrayRef dim = {}, bool keepdim = false);
Tensor argmax(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor var(const Tensor& t, bool unbiased = true);
Tensor var(const Tensor& t, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
Tensor std(const Tensor& t, bool unbiased = true);
Tensor std(const Tensor& t, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
// fw::var(t, 1) / fw::std(t, 0) reduce along that dim, as in libtorch.
template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
Tensor var(const Tensor& t, I dim, bool unbiased = true, bool keepdim = false) {
  const int64_t d = dim;
  return var(t, IntArrayRef(&d, 1), unbiased, keepdim);
}
template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
Tensor std(const Tensor& t, I dim, bool unbiased = true, bool keepdim = false) {
  const int64_t d = dim;
  return std(t, IntArrayRef(&d, 1), unbiased, keepdim);
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& t, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
// libtorch's correction forms: the sum of squared deviations over (N - correction), N the number
// of reduced elements (a non-positive denominator gives inf or nan, as PyTorch); dim nullopt
// reduces everything and correction nullopt means 1.
Tensor var(const Tensor& t, OptionalIntArrayRef dim, std::optional<int64_t> correction, bool keepdim = false);
Tensor std(const Tensor& t, OptionalIntArrayRef dim, std::optional<int64_t> correction, bool keepdim = false);
std::tuple<Tensor, Tensor> var_mean(const Tensor& t, OptionalIntArrayRef dim, std::optional<int64_t> correction,
                                    bool keepdim = false);
std::tuple<Tensor, Tensor> std_mean(const Tensor& t, OptionalIntArrayRef dim, std::optional<int64_t> correction,
                                    bool keepdim = false);
std::tuple<Tensor, Tensor> std_mean(const Tensor& t, IntArrayRef dim, bool unbiased = true, bool keepdim = false);
Tensor logsumexp(const Tensor& t, IntArrayRef dim, bool keepdim = false);
Tensor norm(const Tensor& t, const Scalar& p = 2);
Tensor norm(const Tensor& t, std::optional<Scalar> p, IntArrayRef dim, bool keepdim = false);
Tensor all(const Tensor& t);
Tensor all(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& t);
Tensor any(const Tensor& t, int64_t dim, bool keepdim = false);
Tensor count_nonzero(const Tensor& t, std::optional<int64_t> dim = std::nullopt);
Tensor cumsum(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor cumprod(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
std::tuple<Tensor, Tensor> sort(const Tensor& t, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& t, int64_t dim = -1, bool descending = false);
// libtorch's forms with `stable` first. fw's sort is always stable, so the flag only documents
// intent.
std::tuple<Tensor, Tensor> sort(const Tensor& t, std::optional<bool> stable, int64_t dim = -1, bool descending = false);
Tensor argsort(const Tensor& t, bool stable, int64_t dim = -1, bool descending = false);
std::tuple<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
Tensor median(const Tensor& t);
std::tuple<Tensor, Tensor> median(const Tensor& t, int64_t dim, bool keepdim = false);
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
Tensor isclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false);
bool equal(const Tensor& a, const Tensor& b);

// ---- indexing
Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
Tensor index_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha = 1);
Tensor masked_select(const Tensor& t, const Tensor& mask);
Tensor nonzero(const Tensor& t);
std::vector<Tensor> where(const Tensor& cond);
Tensor take(const Tensor& t, const Tensor& index);
// Advanced indexing with libtorch's index lists (nullopt: a full slice); index_put is out of place.
Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices);
Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                 bool accumulate = false);
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1);
Tensor one_hot(const Tensor& t, int64_t num_classes = -1);

// ---- linear algebra
Tensor matmul(const Tensor& a, const Tensor& b);
Tensor mm(const Tensor& a, const Tensor& b);
Tensor bmm(const Tensor& a, const Tensor& b);
Tensor mv(const Tensor& a, const Tensor& v);
Tensor addmm(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta = 1, const Scalar& alpha = 1);
Tensor baddbmm(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta = 1, const Scalar& alpha = 1);
Tensor dot(const Tensor& a, const Tensor& b);
Tensor outer(const Tensor& a, const Tensor& b);
Tensor einsum(const std::string& eq, TensorList ts);
Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = {});

// ---- nn ops exposed at top level (libtorch names)
Tensor softmax(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype = std::nullopt);
// ATen's underscore forms; half_to_float takes a float16 input to a float32 result.
Tensor _softmax(const Tensor& t, int64_t dim, bool half_to_float);
Tensor _log_softmax(const Tensor& t, int64_t dim, bool half_to_float);
Tensor layer_norm(const Tensor& x, IntArrayRef normalized_shape, const Tensor& weight = {},
                  const Tensor& bias = {}, double eps = 1e-5, bool cudnn_enable = true);
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = {}, const Tensor& bias = {},
                  double eps = 1e-5, bool cudnn_enabled = true);
Tensor batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                  const Tensor& running_var, bool training, double momentum, double eps, bool cudnn_enabled = true);
Tensor instance_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, const Tensor& running_mean,
                     const Tensor& running_var, bool use_input_stats, double momentum, double eps,
                     bool cudnn_enabled = true);
Tensor dropout(const Tensor& x, double p, bool train);
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& b = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
// Convolution over (N, C, D, H, W) or (C, D, H, W) inputs with a (O, C / groups, KD, KH, KW)
// weight (one conv2d over depth-tap channels, Note [3-d convolutions] in core/ops/conv.cpp).
Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& b = {}, IntArrayRef stride = 1,
              IntArrayRef padding = 0, IntArrayRef dilation = 1, int64_t groups = 1);
namespace detail {
Tensor conv_padding_mode(int64_t spatial_dims, const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef stride,
                         const std::string& padding, IntArrayRef dilation, int64_t groups);
}
// conv1d/conv2d with padding "same" (stride 1; an odd total pads one more after the input) or
// "valid". A template so that a literal 0 still picks the integer-padding overload.
template <class S, std::enable_if_t<std::is_convertible_v<const S&, std::string>, int> = 0>
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef stride, const S& padding,
              IntArrayRef dilation = 1, int64_t groups = 1) {
  return detail::conv_padding_mode(1, x, w, b, stride, padding, dilation, groups);
}
template <class S, std::enable_if_t<std::is_convertible_v<const S&, std::string>, int> = 0>
Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef stride, const S& padding,
              IntArrayRef dilation = 1, int64_t groups = 1) {
  return detail::conv_padding_mode(2, x, w, b, stride, padding, dilation, groups);
}
template <class S, std::enable_if_t<std::is_convertible_v<const S&, std::string>, int> = 0>
Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef stride, const S& padding,
              IntArrayRef dilation = 1, int64_t groups = 1) {
  return detail::conv_padding_mode(3, x, w, b, stride, padding, dilation, groups);
}
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& b = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
// Weight (C_in, C_out / groups, KD, KH, KW).
Tensor conv_transpose3d(const Tensor& x, const Tensor& w, const Tensor& b = {}, IntArrayRef stride = 1,
                        IntArrayRef padding = 0, IntArrayRef output_padding = 0, int64_t groups = 1,
                        IntArrayRef dilation = 1);
Tensor max_pool1d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, IntArrayRef kernel, IntArrayRef stride = {},
                                                   IntArrayRef padding = 0, IntArrayRef dilation = 1,
                                                   bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntArrayRef kernel, IntArrayRef stride = {},
                                                   IntArrayRef padding = 0, IntArrayRef dilation = 1,
                                                   bool ceil_mode = false);
Tensor avg_pool1d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true);
Tensor avg_pool2d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool1d(const Tensor& x, IntArrayRef output_size);
Tensor adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size);
// 3-d pools over (N, C, D, H, W) or (C, D, H, W) inputs: the 2-d pool over every depth slice,
// then along depth (Note [3-d pooling] in core/ops/pool.cpp). Indices are flat in D * H * W.
Tensor max_pool3d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  IntArrayRef dilation = 1, bool ceil_mode = false);
std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, IntArrayRef kernel, IntArrayRef stride = {},
                                                   IntArrayRef padding = 0, IntArrayRef dilation = 1,
                                                   bool ceil_mode = false);
Tensor avg_pool3d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride = {}, IntArrayRef padding = 0,
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor adaptive_avg_pool3d(const Tensor& x, IntArrayRef output_size);
// Max over adaptive windows (start floor(i * in / out), end ceil((i + 1) * in / out)), with the
// flat index of each maximum; NaN wins. (values, indices) as ATen's functions.
std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& x, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x, IntArrayRef output_size);
std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& x, IntArrayRef output_size);
// Inverse of max pooling: zeros of output_size (the 2 or 3 spatial sizes) with x's values at the
// flat indices of a max pool; stride and padding of the 3-d form are checked only, as in ATen.
Tensor max_unpool2d(const Tensor& x, const Tensor& indices, IntArrayRef output_size);
Tensor max_unpool3d(const Tensor& x, const Tensor& indices, IntArrayRef output_size, IntArrayRef stride,
                    IntArrayRef padding);
// Fractional max pooling with PyTorch's window placement (Note [Fractional max pooling]):
// random_samples is (N, C, 2) or (N, C, 3), one value in [0, 1] per batch, plane and dim (1 as N
// for unbatched input). Returns (values, flat indices within each input plane), as ATen.
std::tuple<Tensor, Tensor> fractional_max_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef output_size,
                                                 const Tensor& random_samples);
std::tuple<Tensor, Tensor> fractional_max_pool3d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef output_size,
                                                 const Tensor& random_samples);
// Resampling kernels behind nn::functional::interpolate; a given scale replaces in/out as the
// source step, as in libtorch. Inputs are (N, C, W) for 1d and (N, C, H, W) for 2d.
Tensor upsample_nearest1d(const Tensor& x, IntArrayRef output_size, std::optional<double> scale = std::nullopt);
Tensor upsample_nearest2d(const Tensor& x, IntArrayRef output_size, std::optional<double> scales_h = std::nullopt,
                          std::optional<double> scales_w = std::nullopt);
Tensor upsample_linear1d(const Tensor& x, IntArrayRef output_size, bool align_corners,
                         std::optional<double> scale = std::nullopt);
Tensor upsample_bilinear2d(const Tensor& x, IntArrayRef output_size, bool align_corners,
                           std::optional<double> scales_h = std::nullopt, std::optional<double> scales_w = std::nullopt);
// The native_* norms return (y, mean, rstd) (batch_norm: save_mean, save_invstd; empty in eval).
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& x, IntArrayRef normalized_shape,
                                                     const Tensor& weight, const Tensor& bias, double eps);
std::tuple<Tensor, Tensor, Tensor> native_group_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                                     int64_t n, int64_t c, int64_t hxw, int64_t group, double eps);
std::tuple<Tensor, Tensor, Tensor> native_batch_norm(const Tensor& x, const Tensor& weight, const Tensor& bias,
                                                     const Tensor& running_mean, const Tensor& running_var,
                                                     bool training, double momentum, double eps);
Tensor constant_pad_nd(const Tensor& x, IntArrayRef pad, const Scalar& value = 0);
// torch.nn.functional.pad: pad pairs from the last dim backwards; mode constant, reflect,
// replicate or circular (the last three pad 1-3 trailing dims and take no value).
Tensor pad(const Tensor& x, IntArrayRef pad, const std::string& mode = "constant", double value = 0);

// Context for no-grad regions (the engine arrives with the autograd work).
struct NoGradGuard {
  NoGradGuard();
  ~NoGradGuard();
  bool prev_;
};
struct AutoGradMode {
  explicit AutoGradMode(bool enabled);
  ~AutoGradMode();
  bool prev_;
};
bool is_grad_enabled();
void set_grad_enabled(bool enabled);
// libtorch's spelling of the same switch.
struct GradMode {
  static bool is_enabled() { return is_grad_enabled(); }
  static void set_enabled(bool enabled) { set_grad_enabled(enabled); }
};

// Threads used by CPU kernels (OpenMP).
void set_num_threads(int n);
int get_num_threads();

}  // namespace fw
