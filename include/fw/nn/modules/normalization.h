// Normalisation modules: BatchNorm1d, BatchNorm2d (running statistics as buffers), LayerNorm,
// GroupNorm.
#pragma once
#include <optional>
#include <vector>

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

extern template class BatchNormImplBase<1, BatchNorm1dImpl>;
extern template class BatchNormImplBase<2, BatchNorm2dImpl>;

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

}  // namespace fw::nn
