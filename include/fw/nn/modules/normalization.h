// Normalisation modules: BatchNorm1d/2d/3d (running statistics as buffers), LayerNorm,
// GroupNorm, InstanceNorm1d/2d/3d, LocalResponseNorm, CrossMapLRN2d.
#pragma once
#include <optional>
#include <vector>

#include "fw/nn/functional.h"
#include "fw/nn/module.h"
#include "fw/nn/options.h"

namespace fw::nn {

// Options of BatchNorm: num_features, eps, momentum (nullopt: cumulative average), affine,
// track_running_stats.
struct BatchNormOptions {
  BatchNormOptions(int64_t num_features) : num_features_(num_features) {}
  FW_ARG(int64_t, num_features);
  FW_ARG(double, eps) = 1e-5;
  FW_ARG(std::optional<double>, momentum) = 0.1;
  FW_ARG(bool, affine) = true;
  FW_ARG(bool, track_running_stats) = true;
};
using BatchNorm1dOptions = BatchNormOptions;
using BatchNorm2dOptions = BatchNormOptions;
using BatchNorm3dOptions = BatchNormOptions;

// Options of LayerNorm: the trailing shape to normalise over, eps, elementwise_affine.
struct LayerNormOptions {
  LayerNormOptions(std::vector<int64_t> normalized_shape) : normalized_shape_(std::move(normalized_shape)) {}
  FW_ARG(std::vector<int64_t>, normalized_shape);
  FW_ARG(double, eps) = 1e-5;
  FW_ARG(bool, elementwise_affine) = true;
};

// Options of GroupNorm: num_groups, num_channels, eps, affine.
struct GroupNormOptions {
  GroupNormOptions(int64_t num_groups, int64_t num_channels) : num_groups_(num_groups), num_channels_(num_channels) {}
  FW_ARG(int64_t, num_groups);
  FW_ARG(int64_t, num_channels);
  FW_ARG(double, eps) = 1e-5;
  FW_ARG(bool, affine) = true;
};

// Batch normalisation over dim 1. Training: batch statistics, and running_mean/running_var
// (unbiased) updated with momentum and num_batches_tracked counted. Eval: running statistics.
template <size_t D, class Derived>
class BatchNormImplBase : public Cloneable<Derived> {
 public:
  explicit BatchNormImplBase(const BatchNormOptions& options_) : options(options_) {}
  void reset() override;
  // Zeroes running_mean and num_batches_tracked, fills running_var with ones.
  void reset_running_stats();
  // reset_running_stats(), then weight = 1 and bias = 0.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input);

  BatchNormOptions options;
  Tensor weight, bias;                                        // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;      // undefined unless track_running_stats

 private:
  void check_input_dim(const Tensor& input) const;
};

// Batch norm over (N, C) or (N, C, L) inputs.
class BatchNorm1dImpl : public BatchNormImplBase<1, BatchNorm1dImpl> {
 public:
  explicit BatchNorm1dImpl(int64_t num_features) : BatchNorm1dImpl(BatchNormOptions(num_features)) {}
  explicit BatchNorm1dImpl(const BatchNormOptions& options_) : BatchNormImplBase(options_) { reset(); }
};
FW_MODULE(BatchNorm1d);

// Batch norm over (N, C, H, W) inputs.
class BatchNorm2dImpl : public BatchNormImplBase<2, BatchNorm2dImpl> {
 public:
  explicit BatchNorm2dImpl(int64_t num_features) : BatchNorm2dImpl(BatchNormOptions(num_features)) {}
  explicit BatchNorm2dImpl(const BatchNormOptions& options_) : BatchNormImplBase(options_) { reset(); }
};
FW_MODULE(BatchNorm2d);

// Batch norm over (N, C, D, H, W) inputs.
class BatchNorm3dImpl : public BatchNormImplBase<3, BatchNorm3dImpl> {
 public:
  explicit BatchNorm3dImpl(int64_t num_features) : BatchNorm3dImpl(BatchNormOptions(num_features)) {}
  explicit BatchNorm3dImpl(const BatchNormOptions& options_) : BatchNormImplBase(options_) { reset(); }
};
FW_MODULE(BatchNorm3d);

extern template class BatchNormImplBase<1, BatchNorm1dImpl>;
extern template class BatchNormImplBase<2, BatchNorm2dImpl>;
extern template class BatchNormImplBase<3, BatchNorm3dImpl>;

// Normalises over the trailing normalized_shape dims; weight = 1, bias = 0 when elementwise_affine.
class LayerNormImpl : public Cloneable<LayerNormImpl> {
 public:
  LayerNormImpl(std::vector<int64_t> normalized_shape) : LayerNormImpl(LayerNormOptions(std::move(normalized_shape))) {}
  explicit LayerNormImpl(const LayerNormOptions& options_);
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input);

  LayerNormOptions options;
  Tensor weight, bias;
};
FW_MODULE(LayerNorm);

// Normalises (N, C, *) inputs over groups of C / num_groups channels; per-channel affine.
class GroupNormImpl : public Cloneable<GroupNormImpl> {
 public:
  GroupNormImpl(int64_t num_groups, int64_t num_channels) : GroupNormImpl(GroupNormOptions(num_groups, num_channels)) {}
  explicit GroupNormImpl(const GroupNormOptions& options_);
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input);

  GroupNormOptions options;
  Tensor weight, bias;
};
FW_MODULE(GroupNorm);

// Options of InstanceNorm: num_features, eps, momentum, affine (false), track_running_stats (false).
struct InstanceNormOptions {
  InstanceNormOptions(int64_t num_features) : num_features_(num_features) {}
  FW_ARG(int64_t, num_features);
  FW_ARG(double, eps) = 1e-5;
  FW_ARG(double, momentum) = 0.1;
  FW_ARG(bool, affine) = false;
  FW_ARG(bool, track_running_stats) = false;
};
using InstanceNorm1dOptions = InstanceNormOptions;
using InstanceNorm2dOptions = InstanceNormOptions;
using InstanceNorm3dOptions = InstanceNormOptions;

// Normalises each (sample, channel) over its D spatial dims; batched (N, C, *) or unbatched (C, *)
// inputs. With track_running_stats, training updates running_mean/running_var and eval uses them.
template <size_t D, class Derived>
class InstanceNormImpl : public Cloneable<Derived> {
 public:
  explicit InstanceNormImpl(const InstanceNormOptions& options_) : options(options_) {}
  void reset() override;
  // Zeroes running_mean and num_batches_tracked, fills running_var with ones.
  void reset_running_stats();
  // reset_running_stats(), then weight = 1 and bias = 0.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input);

  InstanceNormOptions options;
  Tensor weight, bias;                                        // undefined unless affine
  Tensor running_mean, running_var, num_batches_tracked;      // undefined unless track_running_stats
};

// Instance norm over (N, C, L) or unbatched (C, L) inputs.
class InstanceNorm1dImpl : public InstanceNormImpl<1, InstanceNorm1dImpl> {
 public:
  explicit InstanceNorm1dImpl(int64_t num_features) : InstanceNorm1dImpl(InstanceNormOptions(num_features)) {}
  explicit InstanceNorm1dImpl(const InstanceNormOptions& options_) : InstanceNormImpl(options_) { reset(); }
};
FW_MODULE(InstanceNorm1d);

// Instance norm over (N, C, H, W) or unbatched (C, H, W) inputs.
class InstanceNorm2dImpl : public InstanceNormImpl<2, InstanceNorm2dImpl> {
 public:
  explicit InstanceNorm2dImpl(int64_t num_features) : InstanceNorm2dImpl(InstanceNormOptions(num_features)) {}
  explicit InstanceNorm2dImpl(const InstanceNormOptions& options_) : InstanceNormImpl(options_) { reset(); }
};
FW_MODULE(InstanceNorm2d);

// Instance norm over (N, C, D, H, W) or unbatched (C, D, H, W) inputs.
class InstanceNorm3dImpl : public InstanceNormImpl<3, InstanceNorm3dImpl> {
 public:
  explicit InstanceNorm3dImpl(int64_t num_features) : InstanceNorm3dImpl(InstanceNormOptions(num_features)) {}
  explicit InstanceNorm3dImpl(const InstanceNormOptions& options_) : InstanceNormImpl(options_) { reset(); }
};
FW_MODULE(InstanceNorm3d);

extern template class InstanceNormImpl<1, InstanceNorm1dImpl>;
extern template class InstanceNormImpl<2, InstanceNorm2dImpl>;
extern template class InstanceNormImpl<3, InstanceNorm3dImpl>;

using LocalResponseNormOptions = functional::LocalResponseNormFuncOptions;

// functional::local_response_norm: normalisation across `size` neighbouring channels.
class LocalResponseNormImpl : public Cloneable<LocalResponseNormImpl> {
 public:
  explicit LocalResponseNormImpl(const LocalResponseNormOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return functional::local_response_norm(input, options); }

  LocalResponseNormOptions options;
};
FW_MODULE(LocalResponseNorm);

// Options of CrossMapLRN2d: size, alpha 1e-4, beta 0.75, k 1 (an integer, as in libtorch).
struct CrossMapLRN2dOptions {
  CrossMapLRN2dOptions(int64_t size) : size_(size) {}
  FW_ARG(int64_t, size);
  FW_ARG(double, alpha) = 1e-4;
  FW_ARG(double, beta) = 0.75;
  FW_ARG(int64_t, k) = 1;
};

// Lua Torch's SpatialCrossMapLRN on (N, C, H, W): x * (k + alpha / size * window sum of x^2)^-beta,
// with the legacy window (see Note [CrossMapLRN2d window]).
class CrossMapLRN2dImpl : public Cloneable<CrossMapLRN2dImpl> {
 public:
  CrossMapLRN2dImpl(int64_t size) : CrossMapLRN2dImpl(CrossMapLRN2dOptions(size)) {}
  explicit CrossMapLRN2dImpl(const CrossMapLRN2dOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input);

  CrossMapLRN2dOptions options;
};
FW_MODULE(CrossMapLRN2d);

}  // namespace fw::nn
