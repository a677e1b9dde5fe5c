// BatchNorm1d/2d, LayerNorm, GroupNorm.
#include "fw/nn/modules/normalization.h"

#include "fw/nn/functional.h"
#include "fw/nn/init.h"
#include "nn/print_util.h"

namespace fw::nn {

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::reset() {
  const int64_t c = options.num_features();
  FW_CHECK(c > 0, "[BatchNorm", D, "d] num_features must be positive, got ", c);
  weight = this->register_parameter("weight", options.affine() ? fw::empty({c}) : Tensor(), options.affine());
  bias = this->register_parameter("bias", options.affine() ? fw::empty({c}) : Tensor(), options.affine());
  const bool track = options.track_running_stats();
  running_mean = this->register_buffer("running_mean", track ? fw::zeros({c}) : Tensor());
  running_var = this->register_buffer("running_var", track ? fw::ones({c}) : Tensor());
  num_batches_tracked = this->register_buffer("num_batches_tracked", track ? fw::zeros({}, kLong) : Tensor());
  reset_parameters();
}

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::reset_running_stats() {
  if (!options.track_running_stats()) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::reset_parameters() {
  reset_running_stats();
  if (options.affine()) {
    init::ones_(weight);
    init::zeros_(bias);
  }
}

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::check_input_dim(const Tensor& input) const {
  if constexpr (D == 1)
    FW_CHECK(input.dim() == 2 || input.dim() == 3, "[BatchNorm1d] expected 2D or 3D input (got ", input.dim(),
             "D input)");
  else
    FW_CHECK(input.dim() == 4, "[BatchNorm2d] expected 4D input (got ", input.dim(), "D input)");
  FW_CHECK(input.size(1) == options.num_features(), "[BatchNorm", D, "d] expected ", options.num_features(),
           " channels in dim 1, got input of shape ", input.sizes());
}

// Note [BatchNorm momentum]
// As PyTorch's _BatchNorm.forward: each training call counts num_batches_tracked; momentum
// nullopt averages all batches so far (factor 1 / num_batches_tracked). Without running stats
// the batch statistics are used in eval mode too.
template <size_t D, class Derived>
Tensor BatchNormImplBase<D, Derived>::forward(const Tensor& input) {
  check_input_dim(input);
  double factor = options.momentum().value_or(0.0);
  const bool training = this->is_training();
  if (training && options.track_running_stats()) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(1);
    if (!options.momentum()) factor = 1.0 / num_batches_tracked.item<double>();
  }
  const bool use_batch_stats = training || !running_mean.defined();
  const bool pass_stats = !training || options.track_running_stats();
  return functional::batch_norm(input, pass_stats ? running_mean : Tensor(), pass_stats ? running_var : Tensor(),
                                functional::BatchNormFuncOptions()
                                    .weight(weight)
                                    .bias(bias)
                                    .training(use_batch_stats)
                                    .momentum(factor)
                                    .eps(options.eps()));
}

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::BatchNorm" << D << "d(" << options.num_features() << ", eps=" << options.eps()
         << ", momentum=";
  if (options.momentum())
    stream << *options.momentum();
  else
    stream << "None";
  stream << ", affine=" << options.affine() << ", track_running_stats=" << options.track_running_stats() << ")";
}

template class BatchNormImplBase<1, BatchNorm1dImpl>;
template class BatchNormImplBase<2, BatchNorm2dImpl>;

LayerNormImpl::LayerNormImpl(const LayerNormOptions& options_) : options(options_) { reset(); }

void LayerNormImpl::reset() {
  const bool affine = options.elementwise_affine();
  weight = register_parameter("weight", affine ? fw::empty(options.normalized_shape()) : Tensor(), affine);
  bias = register_parameter("bias", affine ? fw::empty(options.normalized_shape()) : Tensor(), affine);
  reset_parameters();
}

void LayerNormImpl::reset_parameters() {
  if (!options.elementwise_affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

void LayerNormImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::LayerNorm(" << detail::list(options.normalized_shape())
         << ", elementwise_affine=" << options.elementwise_affine() << ", eps=" << options.eps() << ")";
}

Tensor LayerNormImpl::forward(const Tensor& input) {
  return fw::layer_norm(input, options.normalized_shape(), weight, bias, options.eps());
}

GroupNormImpl::GroupNormImpl(const GroupNormOptions& options_) : options(options_) { reset(); }

void GroupNormImpl::reset() {
  const int64_t g = options.num_groups(), c = options.num_channels();
  FW_CHECK(g > 0 && c % g == 0, "[GroupNorm] num_channels must be divisible by num_groups (got ", c, " and ", g, ")");
  weight = register_parameter("weight", options.affine() ? fw::empty({c}) : Tensor(), options.affine());
  bias = register_parameter("bias", options.affine() ? fw::empty({c}) : Tensor(), options.affine());
  reset_parameters();
}

void GroupNormImpl::reset_parameters() {
  if (!options.affine()) return;
  init::ones_(weight);
  init::zeros_(bias);
}

void GroupNormImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::GroupNorm(" << options.num_groups() << ", " << options.num_channels()
         << ", eps=" << options.eps() << ", affine=" << options.affine() << ")";
}

Tensor GroupNormImpl::forward(const Tensor& input) {
  return fw::group_norm(input, options.num_groups(), weight, bias, options.eps());
}

}  // namespace fw::nn
