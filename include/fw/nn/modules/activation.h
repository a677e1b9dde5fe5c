// Activation modules: ReLU, ReLU6, GELU, SiLU, Sigmoid, Tanh, ELU, SELU, LeakyReLU, Hardtanh,
// Softplus, Mish, Softmax, LogSoftmax, and libtorch's others: Hardshrink, Softshrink, Softsign,
// Tanhshrink, CELU, RReLU, GLU, LogSigmoid, Threshold, Softmin, Softmax2d, PReLU (options shared
// with fw::nn::functional where libtorch shares them). libtorch has no Hardsigmoid/Hardswish
// modules, so neither has fw (the functionals exist). MultiheadAttention: multihead_attention.h.
#pragma once
#include "fw/nn/functional.h"
#include "fw/nn/module.h"

namespace fw::nn {

using ReLUOptions = functional::ReLUFuncOptions;
using ReLU6Options = functional::ReLU6FuncOptions;
using SELUOptions = functional::SELUFuncOptions;
using GELUOptions = functional::GELUFuncOptions;
using ELUOptions = functional::ELUFuncOptions;
using LeakyReLUOptions = functional::LeakyReLUFuncOptions;
using HardtanhOptions = functional::HardtanhFuncOptions;
using SoftplusOptions = functional::SoftplusFuncOptions;
using SoftmaxOptions = functional::SoftmaxFuncOptions;
using LogSoftmaxOptions = functional::LogSoftmaxFuncOptions;
using HardshrinkOptions = functional::HardshrinkFuncOptions;
using SoftshrinkOptions = functional::SoftshrinkFuncOptions;
using CELUOptions = functional::CELUFuncOptions;
using GLUOptions = functional::GLUFuncOptions;
using ThresholdOptions = functional::ThresholdFuncOptions;
using SoftminOptions = functional::SoftminFuncOptions;

// Options of RReLU: lower (1/8), upper (1/3), inplace; the module's train/eval mode picks
// random or mean slopes.
struct RReLUOptions {
  FW_ARG(double, lower) = 1.0 / 8.0;
  FW_ARG(double, upper) = 1.0 / 3.0;
  FW_ARG(bool, inplace) = false;
};
// Options of PReLU: num_parameters (1, or the number of channels), init (0.25, every slope's start).
struct PReLUOptions {
  FW_ARG(int64_t, num_parameters) = 1;
  FW_ARG(double, init) = 0.25;
};

// Declares NameImpl (stateless, Options with defaults, forward = functional::fn(x, options)) and Name.
#define FW_ACTIVATION_MODULE(Name, Options, fn)                                     \
  class Name##Impl : public Cloneable<Name##Impl> {                                 \
   public:                                                                          \
    explicit Name##Impl(const Options& options_ = {}) : options(options_) {}        \
    void reset() override {}                                                        \
    void pretty_print(std::ostream& stream) const override;                         \
    Tensor forward(Tensor input) { return functional::fn(input, options); }         \
    Options options;                                                                \
  };                                                                                \
  FW_MODULE(Name)

// Declares NameImpl without options (forward = fw::fn(x)) and Name.
#define FW_PLAIN_ACTIVATION_MODULE(Name, fn)                                        \
  class Name##Impl : public Cloneable<Name##Impl> {                                 \
   public:                                                                          \
    void reset() override {}                                                        \
    void pretty_print(std::ostream& stream) const override;                         \
    Tensor forward(const Tensor& input) { return fw::fn(input); }                   \
  };                                                                                \
  FW_MODULE(Name)

// max(0, x).
FW_ACTIVATION_MODULE(ReLU, ReLUOptions, relu);
// min(max(0, x), 6).
FW_ACTIVATION_MODULE(ReLU6, ReLU6Options, relu6);
// x * Phi(x) (approximate "tanh" available).
FW_ACTIVATION_MODULE(GELU, GELUOptions, gelu);
// Exponential linear unit.
FW_ACTIVATION_MODULE(ELU, ELUOptions, elu);
// Scaled ELU.
FW_ACTIVATION_MODULE(SELU, SELUOptions, selu);
// max(0, x) + negative_slope * min(0, x).
FW_ACTIVATION_MODULE(LeakyReLU, LeakyReLUOptions, leaky_relu);
// log(1 + exp(beta x)) / beta (linear above threshold).
FW_ACTIVATION_MODULE(Softplus, SoftplusOptions, softplus);
// x * sigmoid(x).
FW_PLAIN_ACTIVATION_MODULE(SiLU, silu);
// 1 / (1 + exp(-x)).
FW_PLAIN_ACTIVATION_MODULE(Sigmoid, sigmoid);
FW_PLAIN_ACTIVATION_MODULE(Tanh, tanh);
// x * tanh(softplus(x)).
FW_PLAIN_ACTIVATION_MODULE(Mish, mish);
// x * relu6(x + 3) / 6 and relu6(x + 3) / 6.
FW_PLAIN_ACTIVATION_MODULE(Hardswish, hardswish);
FW_PLAIN_ACTIVATION_MODULE(Hardsigmoid, hardsigmoid);
// x where |x| > lambda, else 0.
FW_ACTIVATION_MODULE(Hardshrink, HardshrinkOptions, hardshrink);
// x -+ lambda outside [-lambda, lambda], else 0.
FW_ACTIVATION_MODULE(Softshrink, SoftshrinkOptions, softshrink);
// max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).
FW_ACTIVATION_MODULE(CELU, CELUOptions, celu);
// First half of the input along dim times sigmoid of the second half.
FW_ACTIVATION_MODULE(GLU, GLUOptions, glu);
// x / (1 + |x|).
FW_PLAIN_ACTIVATION_MODULE(Softsign, nn::functional::softsign);
// x - tanh(x).
FW_PLAIN_ACTIVATION_MODULE(Tanhshrink, nn::functional::tanhshrink);
// log(sigmoid(x)).
FW_PLAIN_ACTIVATION_MODULE(LogSigmoid, log_sigmoid);

#undef FW_ACTIVATION_MODULE
#undef FW_PLAIN_ACTIVATION_MODULE

// clamp(x, min_val, max_val).
class HardtanhImpl : public Cloneable<HardtanhImpl> {
 public:
  explicit HardtanhImpl(const HardtanhOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(Tensor input) { return functional::hardtanh(input, options); }

  HardtanhOptions options;
};
FW_MODULE(Hardtanh);

// softmax along options.dim().
class SoftmaxImpl : public Cloneable<SoftmaxImpl> {
 public:
  explicit SoftmaxImpl(int64_t dim) : SoftmaxImpl(SoftmaxOptions(dim)) {}
  explicit SoftmaxImpl(const SoftmaxOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return fw::softmax(input, options.dim()); }

  SoftmaxOptions options;
};
FW_MODULE(Softmax);

// log_softmax along options.dim().
class LogSoftmaxImpl : public Cloneable<LogSoftmaxImpl> {
 public:
  explicit LogSoftmaxImpl(int64_t dim) : LogSoftmaxImpl(LogSoftmaxOptions(dim)) {}
  explicit LogSoftmaxImpl(const LogSoftmaxOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return fw::log_softmax(input, options.dim()); }

  LogSoftmaxOptions options;
};
FW_MODULE(LogSoftmax);

// softmin (softmax of -x) along options.dim().
class SoftminImpl : public Cloneable<SoftminImpl> {
 public:
  explicit SoftminImpl(int64_t dim) : SoftminImpl(SoftminOptions(dim)) {}
  explicit SoftminImpl(const SoftminOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return fw::softmax(-input, options.dim()); }

  SoftminOptions options;
};
FW_MODULE(Softmin);

// softmax over the channels (dim -3) of (N, C, H, W) or (C, H, W) inputs.
class Softmax2dImpl : public Cloneable<Softmax2dImpl> {
 public:
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input);
};
FW_MODULE(Softmax2d);

// y = x where x > threshold, else value.
class ThresholdImpl : public Cloneable<ThresholdImpl> {
 public:
  ThresholdImpl(double threshold, double value) : ThresholdImpl(ThresholdOptions(threshold, value)) {}
  explicit ThresholdImpl(const ThresholdOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(Tensor input) { return functional::threshold(input, options); }

  ThresholdOptions options;
};
FW_MODULE(Threshold);

// Leaky ReLU with slopes drawn from U(lower, upper) per element in training, (lower + upper) / 2 in eval.
class RReLUImpl : public Cloneable<RReLUImpl> {
 public:
  explicit RReLUImpl(const RReLUOptions& options_ = {}) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(Tensor input);

  RReLUOptions options;
};
FW_MODULE(RReLU);

// max(0, x) + weight * min(0, x) with a learnable `weight` of num_parameters slopes (one per
// channel, dim 1 of the input, when more than one).
class PReLUImpl : public Cloneable<PReLUImpl> {
 public:
  explicit PReLUImpl(const PReLUOptions& options_ = {});
  // (Re)creates weight, filled with options.init().
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return functional::prelu(input, weight); }

  PReLUOptions options;
  Tensor weight;
};
FW_MODULE(PReLU);

}  // namespace fw::nn
