// BatchNorm1d/2d, LayerNorm, GroupNorm, InstanceNorm1d/2d/3d, LocalResponseNorm, CrossMapLRN2d.
#include "fw/nn/modules/normalization.h"

#include "fw/nn/functional.h"
#include "fw/nn/init.h"
#include "nn/print_util.h"

namespace fw::nn {

namespace {

// BatchNorm and InstanceNorm hold the same state (libtorch's NormImplBase): affine weight and
// bias, and running statistics when track_running_stats.
template <class M>
void reset_norm_running_stats(M& m) {
  if (!m.options.track_running_stats()) return;
  NoGradGuard no_grad;
  m.running_mean.zero_();
  m.running_var.fill_(1);
  m.num_batches_tracked.zero_();
}

template <class M>
void reset_norm_parameters(M& m) {
  reset_norm_running_stats(m);
  if (m.options.affine()) {
    init::ones_(m.weight);
    init::zeros_(m.bias);
  }
}

template <class M>
void reset_norm_state(M& m, const char* kind, size_t d) {
  const int64_t c = m.options.num_features();
  FW_CHECK(c > 0, "[", kind, d, "d] num_features must be positive, got ", c);
  const bool affine = m.options.affine(), track = m.options.track_running_stats();
  m.weight = m.register_parameter("weight", affine ? fw::empty({c}) : Tensor(), affine);
  m.bias = m.register_parameter("bias", affine ? fw::empty({c}) : Tensor(), affine);
  m.running_mean = m.register_buffer("running_mean", track ? fw::zeros({c}) : Tensor());
  m.running_var = m.register_buffer("running_var", track ? fw::ones({c}) : Tensor());
  m.num_batches_tracked = m.register_buffer("num_batches_tracked", track ? fw::zeros({}, kLong) : Tensor());
  reset_norm_parameters(m);
}

}  // namespace

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::reset() {
  reset_norm_state(*this, "BatchNorm", D);
}

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::reset_running_stats() {
  reset_norm_running_stats(*this);
}

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::reset_parameters() {
  reset_norm_parameters(*this);
}

template <size_t D, class Derived>
void BatchNormImplBase<D, Derived>::check_input_dim(const Tensor& input) const {
  if constexpr (D == 1)
    FW_CHECK(input.dim() == 2 || input.dim() == 3, "[BatchNorm1d] expected 2D or 3D input (got ", input.dim(),
             "D input)");
  else
    FW_CHECK(input.dim() == int64_t(D) + 2, "[BatchNorm", D, "d] expected ", D + 2, "D input (got ", input.dim(),
             "D input)");
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
template class BatchNormImplBase<3, BatchNorm3dImpl>;

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
         << ", eps=" << options.eps() << ", elementwise_affine=" << options.elementwise_affine() << ")";
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

// ---- InstanceNorm

template <size_t D, class Derived>
void InstanceNormImpl<D, Derived>::reset() {
  reset_norm_state(*this, "InstanceNorm", D);
}

template <size_t D, class Derived>
void InstanceNormImpl<D, Derived>::reset_running_stats() {
  reset_norm_running_stats(*this);
}

template <size_t D, class Derived>
void InstanceNormImpl<D, Derived>::reset_parameters() {
  reset_norm_parameters(*this);
}

template <size_t D, class Derived>
void InstanceNormImpl<D, Derived>::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::InstanceNorm" << D << "d(" << options.num_features()
         << ", eps=" << options.eps() << ", momentum=" << options.momentum() << ", affine=" << options.affine()
         << ", track_running_stats=" << options.track_running_stats() << ")";
}

// An unbatched (C, *) input is normalised as a batch of one. As libtorch, eval mode without
// running statistics still uses the input's statistics, and num_batches_tracked is not counted.
template <size_t D, class Derived>
Tensor InstanceNormImpl<D, Derived>::forward(const Tensor& input) {
  const int64_t d = int64_t(D);
  FW_CHECK(input.dim() == d + 1 || input.dim() == d + 2, "[InstanceNorm", D, "d] expected ", d + 1, "D or ", d + 2,
           "D input (got ", input.dim(), "D input of size ", input.sizes(), ")");
  const bool unbatched = input.dim() == d + 1;
  Tensor x = unbatched ? input.unsqueeze(0) : input;
  if (options.affine() || options.track_running_stats())
    FW_CHECK(x.size(1) == options.num_features(), "[InstanceNorm", D, "d] expected input's size at dim=",
             unbatched ? 0 : 1, " to match num_features (", options.num_features(), "), but got: ", x.size(1),
             " (input of size ", input.sizes(), ")");
  Tensor y = functional::instance_norm(x, functional::InstanceNormFuncOptions()
                                              .running_mean(running_mean)
                                              .running_var(running_var)
                                              .weight(weight)
                                              .bias(bias)
                                              .use_input_stats(this->is_training() || !options.track_running_stats())
                                              .momentum(options.momentum())
                                              .eps(options.eps()));
  return unbatched ? y.squeeze(0) : y;
}

template class InstanceNormImpl<1, InstanceNorm1dImpl>;
template class InstanceNormImpl<2, InstanceNorm2dImpl>;
template class InstanceNormImpl<3, InstanceNorm3dImpl>;

// ---- LocalResponseNorm and CrossMapLRN2d

void LocalResponseNormImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::LocalResponseNorm(" << options.size() << ", alpha=" << options.alpha()
         << ", beta=" << options.beta() << ", k=" << options.k() << ")";
}

void CrossMapLRN2dImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::CrossMapLRN2d(" << options.size() << ", alpha=" << options.alpha()
         << ", beta=" << options.beta() << ", k=" << options.k() << ")";
}

// Note [CrossMapLRN2d window]
// PyTorch's CrossMapLRN2d (Lua Torch's SpatialCrossMapLRN) sums squares with a running window
// over channels, pre_pad = (size - 1) / 2 + 1: scale[0] = sum of sq[0 .. pre_pad - 1], then
// scale[c] = scale[c - 1] + sq[c + pre_pad - 1] (while in range) - sq[c - pre_pad] (only when
// c > pre_pad). Channel 0 is therefore never subtracted again. We build that recurrence as a
// (C, C) 0/1 matrix and apply it with matmul, so values match PyTorch exactly and the gradient is
// the true derivative of this forward.
Tensor CrossMapLRN2dImpl::forward(const Tensor& input) {
  FW_CHECK(input.dim() == 4, "[CrossMapLRN2d] Expected input to be 4D, got ", input.dim(), "D instead (input of size ",
           input.sizes(), ")");
  FW_CHECK(input.is_floating_point(), "[CrossMapLRN2d] expected a floating point input, got ",
           dtype_str(input.dtype()));
  FW_CHECK(options.size() > 0, "[CrossMapLRN2d] size must be positive, got ", options.size());
  const int64_t c = input.size(1), pre_pad = (options.size() - 1) / 2 + 1;
  std::vector<double> m(size_t(c * c), 0.0);
  for (int64_t j = 0; j < std::min(pre_pad, c); j++) m[size_t(j)] = 1;
  for (int64_t i = 1; i < c; i++) {
    for (int64_t j = 0; j < c; j++) m[size_t(i * c + j)] = m[size_t((i - 1) * c + j)];
    if (i < c - pre_pad + 1) m[size_t(i * c + i + pre_pad - 1)] += 1;
    if (i > pre_pad) m[size_t(i * c + i - pre_pad)] -= 1;
  }
  Tensor window = fw::tensor(m, kDouble).to(input.device(), input.dtype()).reshape({c, c});
  Tensor sums = fw::matmul((input * input).transpose(1, 3), window.t()).transpose(1, 3);
  Tensor scale = sums.mul(options.alpha() / double(options.size())).add(double(options.k()));
  return input * scale.pow(-options.beta());
}

}  // namespace fw::nn
