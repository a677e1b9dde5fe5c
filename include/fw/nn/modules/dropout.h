// Dropout modules: active in training mode only.
#pragma once
#include "fw/nn/module.h"
#include "fw/nn/options.h"

namespace fw::nn {

// Options of Dropout/Dropout2d: p (the probability of zeroing, default 0.5), inplace.
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

}  // namespace fw::nn
