// Dropout modules: Dropout, Dropout2d, Dropout3d, AlphaDropout, FeatureAlphaDropout (active in
// training mode only).
#pragma once
#include "fw/nn/module.h"
#include "fw/nn/options.h"

namespace fw::nn {

// Options of the dropout modules: p (the probability of zeroing, default 0.5), inplace.
struct DropoutOptions {
  DropoutOptions(double p = 0.5) : p_(p) {}
  FW_ARG(double, p);
  FW_ARG(bool, inplace) = false;
};
using Dropout2dOptions = DropoutOptions;

// Zeroes each element with probability p and scales the rest by 1 / (1 - p) while training.
class DropoutImpl : public Cloneable<DropoutImpl> {
 public:
  explicit DropoutImpl(const DropoutOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(Tensor input);

  DropoutOptions options;
};
FW_MODULE(Dropout);

// Zeroes whole channels of (N, C, H, W) or (C, H, W) inputs while training.
class Dropout2dImpl : public Cloneable<Dropout2dImpl> {
 public:
  explicit Dropout2dImpl(const Dropout2dOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(Tensor input);

  Dropout2dOptions options;
};
FW_MODULE(Dropout2d);

using Dropout3dOptions = DropoutOptions;
using AlphaDropoutOptions = DropoutOptions;
using FeatureAlphaDropoutOptions = DropoutOptions;

// Zeroes whole channels of (N, C, D, H, W) or (C, D, H, W) inputs while training.
class Dropout3dImpl : public Cloneable<Dropout3dImpl> {
 public:
  explicit Dropout3dImpl(const Dropout3dOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(Tensor input);

  Dropout3dOptions options;
};
FW_MODULE(Dropout3d);

// functional::alpha_dropout while training (as libtorch, options.inplace is not applied).
class AlphaDropoutImpl : public Cloneable<AlphaDropoutImpl> {
 public:
  explicit AlphaDropoutImpl(const AlphaDropoutOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input);

  AlphaDropoutOptions options;
};
FW_MODULE(AlphaDropout);

// functional::feature_alpha_dropout while training (options.inplace is not applied).
class FeatureAlphaDropoutImpl : public Cloneable<FeatureAlphaDropoutImpl> {
 public:
  explicit FeatureAlphaDropoutImpl(const FeatureAlphaDropoutOptions& options_ = {});
  void reset() override;
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input);

  FeatureAlphaDropoutOptions options;
};
FW_MODULE(FeatureAlphaDropout);

}  // namespace fw::nn
