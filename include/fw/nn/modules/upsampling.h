// Upsample: libtorch's torch::nn::Upsample over functional::interpolate.
#pragma once
#include <optional>
#include <variant>
#include <vector>

#include "fw/nn/functional.h"
#include "fw/nn/module.h"

namespace fw::nn {

// Options of Upsample: size or scale_factor (one value, or one per spatial dim), mode (kNearest),
// align_corners (linear modes only).
struct UpsampleOptions {
  using mode_t = std::variant<enumtype::kNearest, enumtype::kLinear, enumtype::kBilinear, enumtype::kBicubic,
                              enumtype::kTrilinear>;
  FW_ARG(std::optional<std::vector<int64_t>>, size) = std::nullopt;
  FW_ARG(std::optional<std::vector<double>>, scale_factor) = std::nullopt;
  FW_ARG(mode_t, mode) = enumtype::kNearest();
  FW_ARG(std::optional<bool>, align_corners) = std::nullopt;
};

// Resamples (N, C, W), (N, C, H, W) or (N, C, D, H, W) inputs to `size` or by `scale_factor`.
class UpsampleImpl : public Cloneable<UpsampleImpl> {
 public:
  explicit UpsampleImpl(const UpsampleOptions& options_ = {}) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input);

  UpsampleOptions options;
};
FW_MODULE(Upsample);

}  // namespace fw::nn
