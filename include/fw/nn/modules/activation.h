// Activation modules: ReLU, ReLU6, GELU, SiLU, Sigmoid, Tanh, ELU, SELU, LeakyReLU, Hardtanh,
// Softplus, Mish, Softmax, LogSoftmax (options shared with fw::nn::functional, as in libtorch).
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

}  // namespace fw::nn
