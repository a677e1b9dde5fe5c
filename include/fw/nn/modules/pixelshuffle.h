// PixelShuffle / PixelUnshuffle: libtorch's sub-pixel rearrangements between channels and space;
// ChannelShuffle.
#pragma once
#include "fw/nn/functional.h"
#include "fw/nn/module.h"
#include "fw/ops_extra.h"

namespace fw::nn {

using PixelShuffleOptions = functional::PixelShuffleFuncOptions;
using PixelUnshuffleOptions = functional::PixelUnshuffleFuncOptions;

// (*, C * r^2, H, W) -> (*, C, H * r, W * r), r = upscale_factor.
class PixelShuffleImpl : public Cloneable<PixelShuffleImpl> {
 public:
  explicit PixelShuffleImpl(const PixelShuffleOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return functional::pixel_shuffle(input, options); }

  PixelShuffleOptions options;
};
FW_MODULE(PixelShuffle);

// (*, C, H * r, W * r) -> (*, C * r^2, H, W), r = downscale_factor.
class PixelUnshuffleImpl : public Cloneable<PixelUnshuffleImpl> {
 public:
  explicit PixelUnshuffleImpl(const PixelUnshuffleOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return functional::pixel_unshuffle(input, options); }

  PixelUnshuffleOptions options;
};
FW_MODULE(PixelUnshuffle);

// libtorch's ChannelShuffleOptions: groups.
struct ChannelShuffleOptions {
  ChannelShuffleOptions(int64_t groups) : groups_(groups) {}
  FW_ARG(int64_t, groups);
};

// fw::channel_shuffle as a module: (N, C, *) with channels regrouped (ShuffleNet).
class ChannelShuffleImpl : public Cloneable<ChannelShuffleImpl> {
 public:
  explicit ChannelShuffleImpl(const ChannelShuffleOptions& options_) : options(options_) {}
  void reset() override {}
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input) { return fw::channel_shuffle(input, options.groups()); }

  ChannelShuffleOptions options;
};
FW_MODULE(ChannelShuffle);

}  // namespace fw::nn
