// fw::nn::functional: libtorch's torch::nn::functional (names, option structs and defaults)
// over fw's ops. `namespace F = fw::nn::functional;` then F::conv2d(x, w, F::Conv2dFuncOptions().padding(1)).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "fw/nn/options.h"
#include "fw/ops.h"
#include "fw/ops_extra.h"

namespace fw::nn::functional {

// ---- activations

// inplace: write the result into the input.
struct ReLUFuncOptions {
  ReLUFuncOptions(bool inplace = false) : inplace_(inplace) {}
  FW_ARG(bool, inplace);
};
using ReLU6FuncOptions = ReLUFuncOptions;
using SELUFuncOptions = ReLUFuncOptions;
struct GELUFuncOptions {
  FW_ARG(std::string, approximate) = "none";
};
struct LeakyReLUFuncOptions {
  FW_ARG(double, negative_slope) = 1e-2;
  FW_ARG(bool, inplace) = false;
};
struct ELUFuncOptions {
  FW_ARG(double, alpha) = 1.0;
  FW_ARG(bool, inplace) = false;
};
struct HardtanhFuncOptions {
  FW_ARG(double, min_val) = -1.0;
  FW_ARG(double, max_val) = 1.0;
  FW_ARG(bool, inplace) = false;
};
struct SoftplusFuncOptions {
  FW_ARG(double, beta) = 1.0;
  FW_ARG(double, threshold) = 20.0;
};

namespace detail {
inline Tensor maybe_inplace(Tensor x, const Tensor& y, bool inplace) { return inplace ? x.copy_(y) : y; }
}  // namespace detail

inline Tensor relu(Tensor x, const ReLUFuncOptions& o = {}) { return o.inplace() ? fw::relu_(x) : fw::relu(x); }
inline Tensor relu6(Tensor x, const ReLU6FuncOptions& o = {}) { return detail::maybe_inplace(x, fw::relu6(x), o.inplace()); }
inline Tensor selu(Tensor x, const SELUFuncOptions& o = {}) { return detail::maybe_inplace(x, fw::selu(x), o.inplace()); }
inline Tensor gelu(const Tensor& x, const GELUFuncOptions& o = {}) { return fw::gelu(x, o.approximate()); }
inline Tensor silu(const Tensor& x) { return fw::silu(x); }
inline Tensor mish(const Tensor& x) { return fw::mish(x); }
inline Tensor hardswish(const Tensor& x) { return fw::hardswish(x); }
inline Tensor hardsigmoid(const Tensor& x) { return fw::hardsigmoid(x); }
inline Tensor logsigmoid(const Tensor& x) { return fw::log_sigmoid(x); }
inline Tensor leaky_relu(Tensor x, const LeakyReLUFuncOptions& o = {}) {
  return detail::maybe_inplace(x, fw::leaky_relu(x, o.negative_slope()), o.inplace());
}
inline Tensor elu(Tensor x, const ELUFuncOptions& o = {}) {
  return detail::maybe_inplace(x, fw::elu(x, o.alpha()), o.inplace());
}
inline Tensor hardtanh(Tensor x, const HardtanhFuncOptions& o = {}) {
  return detail::maybe_inplace(x, fw::hardtanh(x, o.min_val(), o.max_val()), o.inplace());
}
inline Tensor softplus(const Tensor& x, const SoftplusFuncOptions& o = {}) {
  return fw::softplus(x, o.beta(), o.threshold());
}

// ---- more activations (libtorch's full set; nn/activation_extra.cpp builds them from
// differentiable fw ops, so first and higher derivatives come from those ops)

// HardshrinkFuncOptions(0.3) or HardshrinkFuncOptions().lambda(0.3); lambda defaults to 0.5.
struct HardshrinkFuncOptions {
  HardshrinkFuncOptions(double lambda = 0.5) : lambda_(lambda) {}
  FW_ARG(double, lambda);
};
struct SoftshrinkFuncOptions {
  SoftshrinkFuncOptions(double lambda = 0.5) : lambda_(lambda) {}
  FW_ARG(double, lambda);
};
struct CELUFuncOptions {
  FW_ARG(double, alpha) = 1.0;
  FW_ARG(bool, inplace) = false;
};
// Slopes for x < 0 drawn from U(lower, upper) when training, (lower + upper) / 2 otherwise.
struct RReLUFuncOptions {
  FW_ARG(double, lower) = 1.0 / 8.0;
  FW_ARG(double, upper) = 1.0 / 3.0;
  FW_ARG(bool, training) = false;
  FW_ARG(bool, inplace) = false;
};
struct GLUFuncOptions {
  GLUFuncOptions(int64_t dim = -1) : dim_(dim) {}
  FW_ARG(int64_t, dim);
};
// y = x where x > threshold, else value.
struct ThresholdFuncOptions {
  ThresholdFuncOptions(double threshold, double value) : threshold_(threshold), value_(value) {}
  FW_ARG(double, threshold);
  FW_ARG(double, value);
  FW_ARG(bool, inplace) = false;
};

// x where |x| > lambda, else 0.
Tensor hardshrink(const Tensor& x, const HardshrinkFuncOptions& o = {});
// x - lambda where x > lambda, x + lambda where x < -lambda, else 0 (lambda >= 0).
Tensor softshrink(const Tensor& x, const SoftshrinkFuncOptions& o = {});
// x / (1 + |x|).
Tensor softsign(const Tensor& x);
// x - tanh(x).
Tensor tanhshrink(const Tensor& x);
// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)); alpha != 0.
Tensor celu(Tensor x, const CELUFuncOptions& o = {});
// Randomized leaky ReLU (see RReLUFuncOptions); lower <= upper.
Tensor rrelu(Tensor x, const RReLUFuncOptions& o = {});
// a * sigmoid(b) where a, b are the two halves of x along o.dim() (its size must be even).
Tensor glu(const Tensor& x, const GLUFuncOptions& o = {});
// max(0, x) + weight * min(0, x); weight holds 1 value or one per channel (x's dim 1).
Tensor prelu(const Tensor& x, const Tensor& weight);
// x where x > o.threshold(), else o.value() (NaN stays NaN).
Tensor threshold(Tensor x, const ThresholdFuncOptions& o);

// ---- softmax

struct SoftmaxFuncOptions {
  SoftmaxFuncOptions(int64_t dim) : dim_(dim) {}
  FW_ARG(int64_t, dim);
  FW_ARG(std::optional<ScalarType>, dtype) = std::nullopt;
};
using LogSoftmaxFuncOptions = SoftmaxFuncOptions;
inline Tensor softmax(const Tensor& x, const SoftmaxFuncOptions& o) { return fw::softmax(x, o.dim(), o.dtype()); }
inline Tensor log_softmax(const Tensor& x, const LogSoftmaxFuncOptions& o) {
  return fw::log_softmax(x, o.dim(), o.dtype());
}
using SoftminFuncOptions = SoftmaxFuncOptions;
// softmax(-x) along o.dim().
inline Tensor softmin(const Tensor& x, const SoftminFuncOptions& o) { return fw::softmax(-x, o.dim(), o.dtype()); }

// ---- linear and convolution

inline Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b = {}) { return fw::linear(x, w, b); }
inline Tensor bilinear(const Tensor& input1, const Tensor& input2, const Tensor& weight, const Tensor& bias = {}) {
  return fw::bilinear(input1, input2, weight, bias);
}

template <size_t D>
struct ConvFuncOptions {
  using padding_t = std::variant<ExpandingArray<D>, enumtype::kValid, enumtype::kSame>;
  FW_ARG(Tensor, bias);
  FW_ARG(ExpandingArray<D>, stride) = 1;
  FW_ARG(padding_t, padding) = ExpandingArray<D>(0);
  FW_ARG(ExpandingArray<D>, dilation) = 1;
  FW_ARG(int64_t, groups) = 1;

 public:
  // Integer paddings: one value or one per spatial dim.
  auto padding(int64_t p) -> decltype(*this) { return padding(padding_t(ExpandingArray<D>(p))); }
  auto padding(std::initializer_list<int64_t> p) -> decltype(*this) { return padding(padding_t(ExpandingArray<D>(p))); }
};
using Conv1dFuncOptions = ConvFuncOptions<1>;
using Conv2dFuncOptions = ConvFuncOptions<2>;
using Conv3dFuncOptions = ConvFuncOptions<3>;

template <size_t D>
struct ConvTransposeFuncOptions {
  FW_ARG(Tensor, bias);
  FW_ARG(ExpandingArray<D>, stride) = 1;
  FW_ARG(ExpandingArray<D>, padding) = 0;
  FW_ARG(ExpandingArray<D>, output_padding) = 0;
  FW_ARG(int64_t, groups) = 1;
  FW_ARG(ExpandingArray<D>, dilation) = 1;
};
using ConvTranspose1dFuncOptions = ConvTransposeFuncOptions<1>;
using ConvTranspose2dFuncOptions = ConvTransposeFuncOptions<2>;
using ConvTranspose3dFuncOptions = ConvTransposeFuncOptions<3>;

namespace detail {
template <size_t D, class Fn>
Tensor conv(const Tensor& x, const Tensor& w, const ConvFuncOptions<D>& o, Fn int_padding) {
  if (auto* p = std::get_if<ExpandingArray<D>>(&o.padding())) return int_padding(IntArrayRef(*p));
  std::string mode = std::holds_alternative<enumtype::kSame>(o.padding()) ? "same" : "valid";
  return fw::detail::conv_padding_mode(int64_t(D), x, w, o.bias(), o.stride(), mode, o.dilation(), o.groups());
}
}  // namespace detail

inline Tensor conv1d(const Tensor& x, const Tensor& w, const Conv1dFuncOptions& o = {}) {
  return detail::conv<1>(x, w, o, [&](IntArrayRef p) { return fw::conv1d(x, w, o.bias(), o.stride(), p, o.dilation(), o.groups()); });
}
inline Tensor conv2d(const Tensor& x, const Tensor& w, const Conv2dFuncOptions& o = {}) {
  return detail::conv<2>(x, w, o, [&](IntArrayRef p) { return fw::conv2d(x, w, o.bias(), o.stride(), p, o.dilation(), o.groups()); });
}
inline Tensor conv3d(const Tensor& x, const Tensor& w, const Conv3dFuncOptions& o = {}) {
  return detail::conv<3>(x, w, o, [&](IntArrayRef p) { return fw::conv3d(x, w, o.bias(), o.stride(), p, o.dilation(), o.groups()); });
}
inline Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const ConvTranspose1dFuncOptions& o = {}) {
  return fw::conv_transpose1d(x, w, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(), o.dilation());
}
inline Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const ConvTranspose2dFuncOptions& o = {}) {
  return fw::conv_transpose2d(x, w, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(), o.dilation());
}
inline Tensor conv_transpose3d(const Tensor& x, const Tensor& w, const ConvTranspose3dFuncOptions& o = {}) {
  return fw::conv_transpose3d(x, w, o.bias(), o.stride(), o.padding(), o.output_padding(), o.groups(), o.dilation());
}

// ---- pooling

template <size_t D>
struct MaxPoolFuncOptions {
  MaxPoolFuncOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  FW_ARG(ExpandingArray<D>, kernel_size);
  FW_ARG(ExpandingArray<D>, stride);
  FW_ARG(ExpandingArray<D>, padding) = 0;
  FW_ARG(ExpandingArray<D>, dilation) = 1;
  FW_ARG(bool, ceil_mode) = false;
};
using MaxPool1dFuncOptions = MaxPoolFuncOptions<1>;
using MaxPool2dFuncOptions = MaxPoolFuncOptions<2>;
using MaxPool3dFuncOptions = MaxPoolFuncOptions<3>;

template <size_t D>
struct AvgPoolFuncOptions {
  AvgPoolFuncOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  FW_ARG(ExpandingArray<D>, kernel_size);
  FW_ARG(ExpandingArray<D>, stride);
  FW_ARG(ExpandingArray<D>, padding) = 0;
  FW_ARG(bool, ceil_mode) = false;
  FW_ARG(bool, count_include_pad) = true;
  FW_ARG(std::optional<int64_t>, divisor_override) = std::nullopt;
};
using AvgPool1dFuncOptions = AvgPoolFuncOptions<1>;
using AvgPool2dFuncOptions = AvgPoolFuncOptions<2>;
using AvgPool3dFuncOptions = AvgPoolFuncOptions<3>;

// Options of the adaptive pools (avg and max): output_size; in 2d and 3d an element may be
// std::nullopt, keeping the input's size there (AdaptiveAvgPool2dOptions({std::nullopt, 2})).
template <size_t D>
struct AdaptivePoolFuncOptions {
  using size_type = std::conditional_t<D == 1, ExpandingArray<1>, ExpandingArrayWithOptionalElem<D>>;
  AdaptivePoolFuncOptions(size_type output_size) : output_size_(output_size) {}
  // The output sizes for input x.
  std::array<int64_t, D> sizes_for(const Tensor& x) const {
    if constexpr (D == 1) return *output_size_;
    else return output_size_.resolve(x.sizes());
  }
  FW_ARG(size_type, output_size);
};
template <size_t D>
using AdaptiveAvgPoolFuncOptions = AdaptivePoolFuncOptions<D>;
using AdaptiveAvgPool1dFuncOptions = AdaptiveAvgPoolFuncOptions<1>;
using AdaptiveAvgPool2dFuncOptions = AdaptiveAvgPoolFuncOptions<2>;
using AdaptiveAvgPool3dFuncOptions = AdaptiveAvgPoolFuncOptions<3>;

template <size_t D>
using AdaptiveMaxPoolFuncOptions = AdaptivePoolFuncOptions<D>;
using AdaptiveMaxPool1dFuncOptions = AdaptiveMaxPoolFuncOptions<1>;
using AdaptiveMaxPool2dFuncOptions = AdaptiveMaxPoolFuncOptions<2>;
using AdaptiveMaxPool3dFuncOptions = AdaptiveMaxPoolFuncOptions<3>;

// Options of max_unpool: the pool's kernel_size, stride (default kernel_size) and padding, and
// an optional output_size (D sizes, or D + 2 with batch and channels; each within one stride of
// the default (in - 1) * stride + kernel - 2 * padding).
template <size_t D>
struct MaxUnpoolFuncOptions {
  MaxUnpoolFuncOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size), stride_(kernel_size) {}
  FW_ARG(ExpandingArray<D>, kernel_size);
  FW_ARG(ExpandingArray<D>, stride);
  FW_ARG(ExpandingArray<D>, padding) = 0;
  FW_ARG(std::optional<std::vector<int64_t>>, output_size) = std::nullopt;
};
using MaxUnpool1dFuncOptions = MaxUnpoolFuncOptions<1>;
using MaxUnpool2dFuncOptions = MaxUnpoolFuncOptions<2>;
using MaxUnpool3dFuncOptions = MaxUnpoolFuncOptions<3>;

// Options of lp_pool: norm_type p, kernel_size, stride (default kernel_size), ceil_mode.
template <size_t D>
struct LPPoolFuncOptions {
  LPPoolFuncOptions(double norm_type, ExpandingArray<D> kernel_size)
      : norm_type_(norm_type), kernel_size_(kernel_size), stride_(kernel_size) {}
  FW_ARG(double, norm_type);
  FW_ARG(ExpandingArray<D>, kernel_size);
  FW_ARG(ExpandingArray<D>, stride);
  FW_ARG(bool, ceil_mode) = false;
};
using LPPool1dFuncOptions = LPPoolFuncOptions<1>;
using LPPool2dFuncOptions = LPPoolFuncOptions<2>;

// Options of fractional max pooling: kernel_size and either output_size or output_ratio (each
// output size is int(input size * ratio)); _random_samples, (N, C, D) in [0, 1], fixes the window
// placement (drawn with fw::rand in the input's dtype when undefined).
template <size_t D>
struct FractionalMaxPoolFuncOptions {
  FractionalMaxPoolFuncOptions(ExpandingArray<D> kernel_size) : kernel_size_(kernel_size) {}
  FW_ARG(ExpandingArray<D>, kernel_size);
  FW_ARG(std::optional<ExpandingArray<D>>, output_size) = std::nullopt;
  FW_ARG(std::optional<ExpandingArrayDouble<D>>, output_ratio) = std::nullopt;
  FW_ARG(Tensor, _random_samples) = Tensor();
};
using FractionalMaxPool2dFuncOptions = FractionalMaxPoolFuncOptions<2>;
using FractionalMaxPool3dFuncOptions = FractionalMaxPoolFuncOptions<3>;

inline Tensor max_pool1d(const Tensor& x, const MaxPool1dFuncOptions& o) {
  return fw::max_pool1d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
inline Tensor max_pool2d(const Tensor& x, const MaxPool2dFuncOptions& o) {
  return fw::max_pool2d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
inline std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, const MaxPool1dFuncOptions& o) {
  return fw::max_pool1d_with_indices(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
inline std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, const MaxPool2dFuncOptions& o) {
  return fw::max_pool2d_with_indices(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
inline Tensor avg_pool1d(const Tensor& x, const AvgPool1dFuncOptions& o) {
  return fw::avg_pool1d(x, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad());
}
inline Tensor avg_pool2d(const Tensor& x, const AvgPool2dFuncOptions& o) {
  return fw::avg_pool2d(x, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                        o.divisor_override());
}
inline Tensor adaptive_avg_pool1d(const Tensor& x, const AdaptiveAvgPool1dFuncOptions& o) {
  return fw::adaptive_avg_pool1d(x, o.output_size());
}
inline Tensor adaptive_avg_pool2d(const Tensor& x, const AdaptiveAvgPool2dFuncOptions& o) {
  return fw::adaptive_avg_pool2d(x, o.sizes_for(x));
}
inline Tensor max_pool3d(const Tensor& x, const MaxPool3dFuncOptions& o) {
  return fw::max_pool3d(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
inline std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, const MaxPool3dFuncOptions& o) {
  return fw::max_pool3d_with_indices(x, o.kernel_size(), o.stride(), o.padding(), o.dilation(), o.ceil_mode());
}
inline Tensor avg_pool3d(const Tensor& x, const AvgPool3dFuncOptions& o) {
  return fw::avg_pool3d(x, o.kernel_size(), o.stride(), o.padding(), o.ceil_mode(), o.count_include_pad(),
                        o.divisor_override());
}
inline Tensor adaptive_avg_pool3d(const Tensor& x, const AdaptiveAvgPool3dFuncOptions& o) {
  return fw::adaptive_avg_pool3d(x, o.sizes_for(x));
}
inline std::tuple<Tensor, Tensor> adaptive_max_pool1d_with_indices(const Tensor& x,
                                                                   const AdaptiveMaxPool1dFuncOptions& o) {
  return fw::adaptive_max_pool1d(x, o.output_size());
}
inline std::tuple<Tensor, Tensor> adaptive_max_pool2d_with_indices(const Tensor& x,
                                                                   const AdaptiveMaxPool2dFuncOptions& o) {
  return fw::adaptive_max_pool2d(x, o.sizes_for(x));
}
inline std::tuple<Tensor, Tensor> adaptive_max_pool3d_with_indices(const Tensor& x,
                                                                   const AdaptiveMaxPool3dFuncOptions& o) {
  return fw::adaptive_max_pool3d(x, o.sizes_for(x));
}
inline Tensor adaptive_max_pool1d(const Tensor& x, const AdaptiveMaxPool1dFuncOptions& o) {
  return std::get<0>(fw::adaptive_max_pool1d(x, o.output_size()));
}
inline Tensor adaptive_max_pool2d(const Tensor& x, const AdaptiveMaxPool2dFuncOptions& o) {
  return std::get<0>(fw::adaptive_max_pool2d(x, o.sizes_for(x)));
}
inline Tensor adaptive_max_pool3d(const Tensor& x, const AdaptiveMaxPool3dFuncOptions& o) {
  return std::get<0>(fw::adaptive_max_pool3d(x, o.sizes_for(x)));
}
Tensor max_unpool1d(const Tensor& x, const Tensor& indices, const MaxUnpool1dFuncOptions& o);
Tensor max_unpool2d(const Tensor& x, const Tensor& indices, const MaxUnpool2dFuncOptions& o);
Tensor max_unpool3d(const Tensor& x, const Tensor& indices, const MaxUnpool3dFuncOptions& o);
std::tuple<Tensor, Tensor> fractional_max_pool2d_with_indices(const Tensor& x, const FractionalMaxPool2dFuncOptions& o);
std::tuple<Tensor, Tensor> fractional_max_pool3d_with_indices(const Tensor& x, const FractionalMaxPool3dFuncOptions& o);
inline Tensor fractional_max_pool2d(const Tensor& x, const FractionalMaxPool2dFuncOptions& o) {
  return std::get<0>(fractional_max_pool2d_with_indices(x, o));
}
inline Tensor fractional_max_pool3d(const Tensor& x, const FractionalMaxPool3dFuncOptions& o) {
  return std::get<0>(fractional_max_pool3d_with_indices(x, o));
}
// Power-average pooling: (sum over the window of x^p)^(1/p), as PyTorch's formula over avg_pool.
Tensor lp_pool1d(const Tensor& x, const LPPool1dFuncOptions& o);
Tensor lp_pool2d(const Tensor& x, const LPPool2dFuncOptions& o);

// ---- normalisation

struct LayerNormFuncOptions {
  LayerNormFuncOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  FW_ARG(std::vector<int64_t>, normalized_shape);
  FW_ARG(Tensor, weight);
  FW_ARG(Tensor, bias);
  FW_ARG(double, eps) = 1e-5;
};
struct GroupNormFuncOptions {
  GroupNormFuncOptions(int64_t num_groups) : num_groups_(num_groups) {}
  FW_ARG(int64_t, num_groups);
  FW_ARG(Tensor, weight);
  FW_ARG(Tensor, bias);
  FW_ARG(double, eps) = 1e-5;
};
struct BatchNormFuncOptions {
  FW_ARG(Tensor, weight);
  FW_ARG(Tensor, bias);
  FW_ARG(bool, training) = false;
  FW_ARG(std::optional<double>, momentum) = 0.1;
  FW_ARG(double, eps) = 1e-5;
};
struct InstanceNormFuncOptions {
  FW_ARG(Tensor, running_mean);
  FW_ARG(Tensor, running_var);
  FW_ARG(Tensor, weight);
  FW_ARG(Tensor, bias);
  FW_ARG(bool, use_input_stats) = true;
  FW_ARG(double, momentum) = 0.1;
  FW_ARG(double, eps) = 1e-5;
};
struct NormalizeFuncOptions {
  FW_ARG(double, p) = 2.0;
  FW_ARG(int64_t, dim) = 1;
  FW_ARG(double, eps) = 1e-12;
};

inline Tensor layer_norm(const Tensor& x, const LayerNormFuncOptions& o) {
  return fw::layer_norm(x, o.normalized_shape(), o.weight(), o.bias(), o.eps());
}
inline Tensor group_norm(const Tensor& x, const GroupNormFuncOptions& o) {
  return fw::group_norm(x, o.num_groups(), o.weight(), o.bias(), o.eps());
}
// Training needs more than one value per channel; momentum nullopt means a cumulative average,
// which fw does not track (it uses 0.1 like the modules' default).
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& o = {});
inline Tensor instance_norm(const Tensor& x, const InstanceNormFuncOptions& o = {}) {
  return fw::instance_norm(x, o.weight(), o.bias(), o.running_mean(), o.running_var(), o.use_input_stats(),
                           o.momentum(), o.eps());
}
// x / max(||x||_p over dim, eps).
inline Tensor normalize(const Tensor& x, const NormalizeFuncOptions& o = {}) {
  return x / fw::norm(x, o.p(), {o.dim()}, true).clamp_min(o.eps()).expand_as(x);
}
// libtorch's LocalResponseNormFuncOptions (= LocalResponseNormOptions): size, alpha 1e-4, beta 0.75, k 1.
struct LocalResponseNormFuncOptions {
  LocalResponseNormFuncOptions(int64_t size) : size_(size) {}
  FW_ARG(int64_t, size);
  FW_ARG(double, alpha) = 1e-4;
  FW_ARG(double, beta) = 0.75;
  FW_ARG(double, k) = 1.;
};
// x / (k + alpha * mean of x^2 over `size` neighbouring channels, zero-padded)^beta; (N, C, *) inputs.
Tensor local_response_norm(const Tensor& x, const LocalResponseNormFuncOptions& o);

// ---- dropout

struct DropoutFuncOptions {
  FW_ARG(double, p) = 0.5;
  FW_ARG(bool, training) = true;
  FW_ARG(bool, inplace) = false;
};
using Dropout2dFuncOptions = DropoutFuncOptions;
inline Tensor dropout(Tensor x, const DropoutFuncOptions& o = {}) {
  return detail::maybe_inplace(x, fw::dropout(x, o.p(), o.training()), o.inplace() && o.training());
}
// Zeroes whole channels of (N, C, H, W) or (C, H, W) inputs.
Tensor dropout2d(Tensor x, const Dropout2dFuncOptions& o = {});
using Dropout3dFuncOptions = DropoutFuncOptions;
// Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) inputs.
Tensor dropout3d(Tensor x, const Dropout3dFuncOptions& o = {});
// Options of alpha_dropout / feature_alpha_dropout: unlike dropout, training defaults to false (libtorch).
struct AlphaDropoutFuncOptions {
  FW_ARG(double, p) = 0.5;
  FW_ARG(bool, training) = false;
  FW_ARG(bool, inplace) = false;
};
using FeatureAlphaDropoutFuncOptions = AlphaDropoutFuncOptions;
// Dropout for SELU networks: dropped elements become -SELU's saturation value, then an affine map
// restores zero mean and unit variance.
Tensor alpha_dropout(Tensor x, const AlphaDropoutFuncOptions& o = {});
// alpha_dropout of whole channels of (N, C, *) inputs.
Tensor feature_alpha_dropout(Tensor x, const FeatureAlphaDropoutFuncOptions& o = {});

// ---- padding and resampling

struct PadFuncOptions {
  using mode_t = std::variant<enumtype::kConstant, enumtype::kReflect, enumtype::kReplicate, enumtype::kCircular>;
  PadFuncOptions(std::vector<int64_t> pad) : pad_(std::move(pad)) {}
  FW_ARG(std::vector<int64_t>, pad);
  FW_ARG(mode_t, mode) = enumtype::kConstant();
  FW_ARG(double, value) = 0;
};
inline Tensor pad(const Tensor& x, const PadFuncOptions& o) { return fw::pad(x, o.pad(), mode_name(o.mode()), o.value()); }

struct InterpolateFuncOptions {
  using mode_t = std::variant<enumtype::kNearest, enumtype::kLinear, enumtype::kBilinear, enumtype::kBicubic,
                              enumtype::kTrilinear, enumtype::kArea, enumtype::kNearestExact>;
  FW_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  FW_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  FW_ARG(mode_t, mode) = enumtype::kNearest();
  FW_ARG(std::optional<bool>, align_corners) = std::nullopt;
  FW_ARG(std::optional<bool>, recompute_scale_factor) = std::nullopt;
  FW_ARG(bool, antialias) = false;
};
// Modes nearest, nearest-exact and area (3-D to 5-D inputs), linear (3-D), bilinear and bicubic
// (4-D, also with antialias), trilinear (5-D).
Tensor interpolate(const Tensor& x, const InterpolateFuncOptions& o = {});
namespace detail {
// interpolate's path for what the resampling kernels do not cover (5-D inputs, bicubic, trilinear,
// nearest-exact, antialias); see Note [Separable interpolate]. `scales` are the source steps'
// scale factors.
Tensor interpolate_separable(const Tensor& x, const std::string& mode, IntArrayRef output_size,
                             const std::vector<std::optional<double>>& scales, bool align_corners,
                             bool antialias = false);
}  // namespace detail

// Samples input (N, C, H, W) or (N, C, D, H, W) at grid (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3), whose
// last dim holds (x, y[, z]) in [-1, 1]; modes bilinear (trilinear for 5-D), nearest and bicubic
// (4-D), padding zeros, border or reflection. See Note [grid_sample] in nn/layers_extra.cpp.
struct GridSampleFuncOptions {
  using mode_t = std::variant<enumtype::kBilinear, enumtype::kNearest, enumtype::kBicubic>;
  using padding_mode_t = std::variant<enumtype::kZeros, enumtype::kBorder, enumtype::kReflection>;
  FW_ARG(mode_t, mode) = enumtype::kBilinear();
  FW_ARG(padding_mode_t, padding_mode) = enumtype::kZeros();
  FW_ARG(std::optional<bool>, align_corners) = std::nullopt;
};
Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& o = {});
// The sampling grid of the affine maps theta (N, 2, 3) or (N, 3, 4) over an output of `size`
// (N, C, H, W) or (N, C, D, H, W): (N, H, W, 2) or (N, D, H, W, 3).
Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners = false);
// Gumbel-softmax samples of logits: softmax((logits + Gumbel noise) / tau); hard gives one-hot
// values with the soft sample's gradient (straight-through).
struct GumbelSoftmaxFuncOptions {
  FW_ARG(double, tau) = 1.0;
  FW_ARG(bool, hard) = false;
  FW_ARG(int64_t, dim) = -1;
};
Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& o = {});

// libtorch's PixelShuffleFuncOptions (= PixelShuffleOptions): upscale_factor.
struct PixelShuffleFuncOptions {
  PixelShuffleFuncOptions(int64_t upscale_factor) : upscale_factor_(upscale_factor) {}
  FW_ARG(int64_t, upscale_factor);
};
// libtorch's PixelUnshuffleFuncOptions (= PixelUnshuffleOptions): downscale_factor.
struct PixelUnshuffleFuncOptions {
  PixelUnshuffleFuncOptions(int64_t downscale_factor) : downscale_factor_(downscale_factor) {}
  FW_ARG(int64_t, downscale_factor);
};
// (*, C * r^2, H, W) -> (*, C, H * r, W * r), r = upscale_factor.
Tensor pixel_shuffle(const Tensor& x, const PixelShuffleFuncOptions& o);
// (*, C, H * r, W * r) -> (*, C * r^2, H, W), r = downscale_factor.
Tensor pixel_unshuffle(const Tensor& x, const PixelUnshuffleFuncOptions& o);

// libtorch's FoldFuncOptions (= FoldOptions): output_size, kernel_size, dilation 1, padding 0, stride 1.
struct FoldFuncOptions {
  FoldFuncOptions(ExpandingArray<2> output_size, ExpandingArray<2> kernel_size)
      : output_size_(output_size), kernel_size_(kernel_size) {}
  FW_ARG(ExpandingArray<2>, output_size);
  FW_ARG(ExpandingArray<2>, kernel_size);
  FW_ARG(ExpandingArray<2>, dilation) = 1;
  FW_ARG(ExpandingArray<2>, padding) = 0;
  FW_ARG(ExpandingArray<2>, stride) = 1;
};
// libtorch's UnfoldFuncOptions (= UnfoldOptions): kernel_size, dilation 1, padding 0, stride 1.
struct UnfoldFuncOptions {
  UnfoldFuncOptions(ExpandingArray<2> kernel_size) : kernel_size_(kernel_size) {}
  FW_ARG(ExpandingArray<2>, kernel_size);
  FW_ARG(ExpandingArray<2>, dilation) = 1;
  FW_ARG(ExpandingArray<2>, padding) = 0;
  FW_ARG(ExpandingArray<2>, stride) = 1;
};
// im2col: sliding blocks of (N, C, H, W) or (C, H, W) as columns, (N, C * kh * kw, L).
Tensor unfold(const Tensor& x, const UnfoldFuncOptions& o);
// col2im: sums columns (N, C * kh * kw, L) or (C * kh * kw, L) back into (N, C, output_size...).
Tensor fold(const Tensor& x, const FoldFuncOptions& o);

// ---- embeddings (implemented in nn/layers_extra.cpp; embedding in nn/layers.cpp)

// libtorch's EmbeddingFuncOptions: padding_idx (negative counts from the end; its row gets no
// gradient), max_norm (rows looked up are renormalised in place to at most this norm_type-norm),
// scale_grad_by_freq (each row's gradient divided by its count in the input), sparse (accepted;
// gradients are dense).
struct EmbeddingFuncOptions {
  FW_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  FW_ARG(std::optional<double>, max_norm) = std::nullopt;
  FW_ARG(double, norm_type) = 2.;
  FW_ARG(bool, scale_grad_by_freq) = false;
  FW_ARG(bool, sparse) = false;
};
// Rows of weight (V, D) at integer indices of any shape: (*) -> (*, D).
Tensor embedding(const Tensor& input, const Tensor& weight, const EmbeddingFuncOptions& o = {});

// One-hot encoding of int64 class indices: (*) -> (*, num_classes); -1 infers max + 1.
inline Tensor one_hot(const Tensor& t, int64_t num_classes = -1) { return fw::one_hot(t, num_classes); }

// libtorch's EmbeddingBagFuncOptions: offsets, max_norm, norm_type 2, scale_grad_by_freq, mode
// (kMean), sparse, per_sample_weights, include_last_offset, padding_idx.
struct EmbeddingBagFuncOptions {
  using mode_t = std::variant<enumtype::kSum, enumtype::kMean, enumtype::kMax>;
  FW_ARG(Tensor, offsets);
  FW_ARG(std::optional<double>, max_norm) = std::nullopt;
  FW_ARG(double, norm_type) = 2.;
  FW_ARG(bool, scale_grad_by_freq) = false;
  FW_ARG(mode_t, mode) = enumtype::kMean();
  FW_ARG(bool, sparse) = false;
  FW_ARG(Tensor, per_sample_weights);
  FW_ARG(bool, include_last_offset) = false;
  FW_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};
// Sums, averages or maxes rows of weight (V, D) over bags of indices: the rows of a 2-D input, or
// the segments of a 1-D input starting at `offsets`. Empty bags give zeros; padding_idx entries
// are left out of their bag. max_norm renormalises the looked-up rows of weight in place.
Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& o = {});

// ---- losses (implemented in nn/loss.cpp from differentiable ops, so gradients come for free)

using loss_reduction_t = std::variant<enumtype::kNone, enumtype::kMean, enumtype::kSum>;

// Options holding only a reduction: MSELossFuncOptions(fw::kSum) as in libtorch.
struct ReductionLossFuncOptions {
  using reduction_t = loss_reduction_t;
  ReductionLossFuncOptions(reduction_t r = enumtype::kMean()) : reduction_(r) {}
  ReductionLossFuncOptions(enumtype::kNone r) : reduction_(r) {}
  ReductionLossFuncOptions(enumtype::kMean r) : reduction_(r) {}
  ReductionLossFuncOptions(enumtype::kSum r) : reduction_(r) {}
  FW_ARG(reduction_t, reduction);
};
using MSELossFuncOptions = ReductionLossFuncOptions;
using L1LossFuncOptions = ReductionLossFuncOptions;

struct NLLLossFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(Tensor, weight);
  FW_ARG(int64_t, ignore_index) = -100;
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
};
struct CrossEntropyFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(Tensor, weight);
  FW_ARG(int64_t, ignore_index) = -100;
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
  FW_ARG(double, label_smoothing) = 0.0;
};
struct SmoothL1LossFuncOptions {
  using reduction_t = loss_reduction_t;
  SmoothL1LossFuncOptions(reduction_t r = enumtype::kMean()) : reduction_(r) {}
  SmoothL1LossFuncOptions(enumtype::kNone r) : reduction_(r) {}
  SmoothL1LossFuncOptions(enumtype::kMean r) : reduction_(r) {}
  SmoothL1LossFuncOptions(enumtype::kSum r) : reduction_(r) {}
  FW_ARG(reduction_t, reduction);
  FW_ARG(double, beta) = 1.0;
};
struct HuberLossFuncOptions {
  using reduction_t = loss_reduction_t;
  HuberLossFuncOptions(reduction_t r = enumtype::kMean()) : reduction_(r) {}
  HuberLossFuncOptions(enumtype::kNone r) : reduction_(r) {}
  HuberLossFuncOptions(enumtype::kMean r) : reduction_(r) {}
  HuberLossFuncOptions(enumtype::kSum r) : reduction_(r) {}
  FW_ARG(reduction_t, reduction);
  FW_ARG(double, delta) = 1.0;
};
struct BinaryCrossEntropyFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(Tensor, weight);
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
};
struct BinaryCrossEntropyWithLogitsFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(Tensor, weight);
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
  FW_ARG(Tensor, pos_weight);
};
struct KLDivFuncOptions {
  using reduction_t = std::variant<enumtype::kNone, enumtype::kBatchMean, enumtype::kSum, enumtype::kMean>;
  KLDivFuncOptions(reduction_t r = enumtype::kMean()) : reduction_(r) {}
  KLDivFuncOptions(enumtype::kNone r) : reduction_(r) {}
  KLDivFuncOptions(enumtype::kBatchMean r) : reduction_(r) {}
  KLDivFuncOptions(enumtype::kSum r) : reduction_(r) {}
  KLDivFuncOptions(enumtype::kMean r) : reduction_(r) {}
  FW_ARG(reduction_t, reduction);
  FW_ARG(bool, log_target) = false;
};
struct CTCLossFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(int64_t, blank) = 0;
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
  FW_ARG(bool, zero_infinity) = false;
};

// Class-index targets (N) / (N, d1, ...) of int64, or class probabilities shaped like the input
// (N, C, d1, ...). 'mean' divides by the summed target weights (index targets) or by N*d1*...
Tensor cross_entropy(const Tensor& input, const Tensor& target, const CrossEntropyFuncOptions& o = {});
// input holds log-probabilities (N, C, d1, ...); out[n] = -weight[t] * input[n, t].
Tensor nll_loss(const Tensor& input, const Tensor& target, const NLLLossFuncOptions& o = {});
Tensor mse_loss(const Tensor& input, const Tensor& target, const MSELossFuncOptions& o = {});
Tensor l1_loss(const Tensor& input, const Tensor& target, const L1LossFuncOptions& o = {});
// beta, when given, overrides o.beta() (libtorch's extra argument).
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, const SmoothL1LossFuncOptions& o = {},
                      std::optional<double> beta = std::nullopt);
Tensor huber_loss(const Tensor& input, const Tensor& target, const HuberLossFuncOptions& o = {});
// input holds probabilities in [0, 1]; the logs are clamped at -100 as in PyTorch.
Tensor binary_cross_entropy(const Tensor& input, const Tensor& target, const BinaryCrossEntropyFuncOptions& o = {});
Tensor binary_cross_entropy_with_logits(const Tensor& input, const Tensor& target,
                                        const BinaryCrossEntropyWithLogitsFuncOptions& o = {});
// input holds log-probabilities; target probabilities (or log-probabilities with log_target).
Tensor kl_div(const Tensor& input, const Tensor& target, const KLDivFuncOptions& o = {});
// Connectionist temporal classification. log_probs (T, N, C) or (T, C); targets (N, S) padded or
// 1-D concatenated; lengths are int tensors of N values. 'mean' divides each loss by its target
// length before averaging the batch.
Tensor ctc_loss(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                const Tensor& target_lengths, const CTCLossFuncOptions& o = {});

// ---- margin, embedding and likelihood losses (implemented in nn/loss_extra.cpp)

// libtorch's MarginRankingLossFuncOptions: margin (0), reduction.
struct MarginRankingLossFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(double, margin) = 0.0;
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
};
// libtorch's HingeEmbeddingLossFuncOptions: margin (1), reduction.
struct HingeEmbeddingLossFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(double, margin) = 1.0;
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
};
// Reduction only: SoftMarginLossFuncOptions(fw::kSum), MultilabelMarginLossFuncOptions(fw::kNone).
using SoftMarginLossFuncOptions = ReductionLossFuncOptions;
using MultilabelMarginLossFuncOptions = ReductionLossFuncOptions;
using MultiLabelMarginLossFuncOptions = ReductionLossFuncOptions;
// libtorch's MultilabelSoftMarginLossFuncOptions: weight (per class), reduction.
struct MultilabelSoftMarginLossFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(Tensor, weight);
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
};
using MultiLabelSoftMarginLossFuncOptions = MultilabelSoftMarginLossFuncOptions;
// libtorch's MultiMarginLossFuncOptions: p (1 or 2), margin (1), weight (per class), reduction.
struct MultiMarginLossFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(int64_t, p) = 1;
  FW_ARG(double, margin) = 1.0;
  FW_ARG(Tensor, weight);
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
};
// libtorch's CosineEmbeddingLossFuncOptions: margin (0), reduction.
struct CosineEmbeddingLossFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(double, margin) = 0.0;
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
};
// libtorch's TripletMarginLossFuncOptions: margin (1), p (2), eps (1e-6), swap (false), reduction.
struct TripletMarginLossFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(double, margin) = 1.0;
  FW_ARG(double, p) = 2.0;
  FW_ARG(double, eps) = 1e-6;
  FW_ARG(bool, swap) = false;
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
};
// libtorch's TripletMarginWithDistanceLossFuncOptions: distance_function (nullopt: pairwise_distance),
// margin (1), swap (false), reduction.
struct TripletMarginWithDistanceLossFuncOptions {
  using reduction_t = loss_reduction_t;
  using distance_function_t = std::function<Tensor(const Tensor&, const Tensor&)>;
  FW_ARG(std::optional<distance_function_t>, distance_function) = std::nullopt;
  FW_ARG(double, margin) = 1.0;
  FW_ARG(bool, swap) = false;
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
};
// libtorch's PoissonNLLLossFuncOptions: log_input (true), full (false), eps (1e-8), reduction.
struct PoissonNLLLossFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(bool, log_input) = true;
  FW_ARG(bool, full) = false;
  FW_ARG(double, eps) = 1e-8;
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
};
// torch.nn.functional.gaussian_nll_loss's options (no libtorch counterpart): full (false), eps (1e-6),
// reduction.
struct GaussianNLLLossFuncOptions {
  using reduction_t = loss_reduction_t;
  FW_ARG(bool, full) = false;
  FW_ARG(double, eps) = 1e-6;
  FW_ARG(reduction_t, reduction) = enumtype::kMean();
};

// max(0, -target * (input1 - input2) + margin); input1, input2 and target have one rank.
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                           const MarginRankingLossFuncOptions& o = {});
// input where target is 1, max(0, margin - input) where target is -1.
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, const HingeEmbeddingLossFuncOptions& o = {});
// log(1 + exp(-target * input)).
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, const SoftMarginLossFuncOptions& o = {});
// input (C) or (N, C); target int64 of the same shape holding class indices, ended by the first -1.
// Per sample: sum over target j and non-target i of max(0, 1 - (x[j] - x[i])), divided by C.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, const MultilabelMarginLossFuncOptions& o = {});
// -(y log sigmoid(x) + (1 - y) log sigmoid(-x)), times weight, averaged over the last (class) dim.
Tensor multilabel_soft_margin_loss(const Tensor& input, const Tensor& target,
                                   const MultilabelSoftMarginLossFuncOptions& o = {});
// input (C) or (N, C), target () or (N) class indices. Per sample: sum over i != y of
// weight[y] * max(0, margin - x[y] + x[i])^p, divided by C.
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, const MultiMarginLossFuncOptions& o = {});
// 1 - cos(x1, x2) where target is 1, max(0, cos(x1, x2) - margin) where it is -1; target () or (N)
// for inputs (D) or (N, D).
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target,
                             const CosineEmbeddingLossFuncOptions& o = {});
// max(0, margin + d(a, p) - d(a, n)) with d = pairwise_distance(p, eps); swap uses min(d(a, n), d(p, n)).
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                           const TripletMarginLossFuncOptions& o = {});
// As triplet_margin_loss with a caller's distance (default pairwise_distance).
Tensor triplet_margin_with_distance_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative,
                                         const TripletMarginWithDistanceLossFuncOptions& o = {});
// exp(input) - target * input (log_input) or input - target * log(input + eps); full adds the
// Stirling term target log target - target + log(2 pi target) / 2 where target > 1.
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, const PoissonNLLLossFuncOptions& o = {});
// (log(max(var, eps)) + (input - target)^2 / max(var, eps)) / 2 (+ log(2 pi) / 2 with full). var has
// input's shape, or input's shape with the last dim 1 or dropped; the clamp passes var's gradient
// through unchanged, as PyTorch's clamp under no_grad does.
Tensor gaussian_nll_loss(const Tensor& input, const Tensor& target, const Tensor& var,
                         const GaussianNLLLossFuncOptions& o = {});

}  // namespace fw::nn::functional

// ---- distances (implemented in nn/losses_toplevel.cpp from differentiable ops)

namespace fw::nn::functional {

// libtorch's CosineSimilarityFuncOptions (= CosineSimilarityOptions): dim 1, eps 1e-8.
struct CosineSimilarityFuncOptions {
  FW_ARG(int64_t, dim) = 1;
  FW_ARG(double, eps) = 1e-8;
};
// libtorch's PairwiseDistanceFuncOptions (= PairwiseDistanceOptions): p 2, eps 1e-6, keepdim false.
struct PairwiseDistanceFuncOptions {
  FW_ARG(double, p) = 2.0;
  FW_ARG(double, eps) = 1e-6;
  FW_ARG(bool, keepdim) = false;
};
// sum(x1 * x2) / sqrt(max(sum(x1^2) * sum(x2^2), eps^2)) along dim (x1, x2 broadcast).
Tensor cosine_similarity(const Tensor& x1, const Tensor& x2, const CosineSimilarityFuncOptions& o = {});
// ||x1 - x2 + eps||_p along the last dim.
Tensor pairwise_distance(const Tensor& x1, const Tensor& x2, const PairwiseDistanceFuncOptions& o = {});
// The p-norm distances between the rows of a 2-d input, upper triangle flattened (fw::pdist).
Tensor pdist(const Tensor& input, double p = 2.0);

}  // namespace fw::nn::functional
