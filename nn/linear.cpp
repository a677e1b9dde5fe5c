// Identity, Linear, Bilinear, Flatten, Unflatten.
#include "fw/nn/modules/linear.h"

#include <cmath>

#include "fw/nn/init.h"
#include "fw/ops_extra.h"
#include "nn/print_util.h"

namespace fw::nn {

void IdentityImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Identity()"; }
void FunctionalImpl::pretty_print(std::ostream& stream) const { stream << "fw::nn::Functional()"; }

LinearImpl::LinearImpl(const LinearOptions& options_) : options(options_) { reset(); }

void LinearImpl::reset() {
  FW_CHECK(options.in_features() >= 0 && options.out_features() >= 0,
           "[Linear] in_features and out_features must be non-negative, got ", options.in_features(), " and ",
           options.out_features());
  weight = register_parameter("weight", fw::empty({options.out_features(), options.in_features()}));
  bias = register_parameter("bias", options.bias() ? fw::empty({options.out_features()}) : Tensor(), options.bias());
  reset_parameters();
}

void LinearImpl::reset_parameters() {
  init::kaiming_uniform_(weight, std::sqrt(5.0));
  if (bias.defined()) {
    int64_t fan_in = options.in_features();
    double bound = fan_in > 0 ? 1.0 / std::sqrt(double(fan_in)) : 0.0;
    init::uniform_(bias, -bound, bound);
  }
}

void LinearImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::Linear(in_features=" << options.in_features()
         << ", out_features=" << options.out_features() << ", bias=" << options.bias() << ")";
}

Tensor LinearImpl::forward(const Tensor& input) { return fw::linear(input, weight, bias); }

BilinearImpl::BilinearImpl(const BilinearOptions& options_) : options(options_) { reset(); }

void BilinearImpl::reset() {
  weight = register_parameter(
      "weight", fw::empty({options.out_features(), options.in1_features(), options.in2_features()}));
  bias = register_parameter("bias", options.bias() ? fw::empty({options.out_features()}) : Tensor(), options.bias());
  reset_parameters();
}

void BilinearImpl::reset_parameters() {
  double bound = options.in1_features() > 0 ? 1.0 / std::sqrt(double(options.in1_features())) : 0.0;
  init::uniform_(weight, -bound, bound);
  if (bias.defined()) init::uniform_(bias, -bound, bound);
}

void BilinearImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::Bilinear(in1_features=" << options.in1_features()
         << ", in2_features=" << options.in2_features() << ", out_features=" << options.out_features()
         << ", bias=" << options.bias() << ")";
}

Tensor BilinearImpl::forward(const Tensor& input1, const Tensor& input2) {
  const int64_t in1 = options.in1_features(), in2 = options.in2_features();
  FW_CHECK(input1.dim() >= 1 && input1.size(-1) == in1, "[Bilinear] input1 must end in ", in1,
           " features, got shape ", input1.sizes());
  FW_CHECK(input2.dim() >= 1 && input2.size(-1) == in2, "[Bilinear] input2 must end in ", in2,
           " features, got shape ", input2.sizes());
  FW_CHECK(input1.sizes().slice(0, input1.dim() - 1).equals(input2.sizes().slice(0, input2.dim() - 1)),
           "[Bilinear] input1 and input2 must have the same leading dims, got ", input1.sizes(), " and ",
           input2.sizes());
  return fw::bilinear(input1, input2, weight, bias);
}

void FlattenImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::Flatten(start_dim=" << options.start_dim() << ", end_dim=" << options.end_dim() << ")";
}

void UnflattenImpl::pretty_print(std::ostream& stream) const {
  std::string sizes = detail::list(options.sizes());  // libtorch writes the sizes in braces: {2, 2}
  sizes.front() = '{';
  sizes.back() = '}';
  stream << "fw::nn::Unflatten(dim=" << options.dim() << ", unflattened_size=" << sizes << ")";
}

}  // namespace fw::nn
