// torchaudio's RNN Transducer loss (Graves 2012), torchaudio 0.13 semantics:
//   namespace F = fw::audio::functional;
//   // logits (batch, max_T, max_U + 1, classes) from the joiner; targets (batch, max_U);
//   // logit_lengths, target_lengths (batch); int32 as torchaudio (int64 accepted too)
//   Tensor loss = F::rnnt_loss(logits, targets, logit_lengths, target_lengths);
// The log-softmax over classes is fused in, as torchaudio's; blank < 0 counts from the last
// class (-1: the last one); clamp > 0 clamps each logit gradient to [-clamp, clamp]; reduction
// "none" (per-sequence costs), "mean" (over the batch) or "sum". logits must be float32 or
// float64 and span exactly max(logit_lengths) frames and max(target_lengths) + 1 label positions.
// Runs on the host (alpha/beta recursions in double), differentiable in logits; errors read
// "[audio::rnnt_loss] ..." and name the offending shapes, dtypes or values.
#pragma once
#include <string>

#include "fw/audio/transforms.h"
#include "fw/fw.h"

namespace fw::audio::functional {

Tensor rnnt_loss(const Tensor& logits, const Tensor& targets, const Tensor& logit_lengths, const Tensor& target_lengths,
                 int64_t blank = -1, double clamp = -1, const std::string& reduction = "mean");

}  // namespace fw::audio::functional

namespace fw::audio::transforms {

// torchaudio.transforms.RNNTLoss.
class RNNTLossImpl : public nn::Cloneable<RNNTLossImpl> {
 public:
  explicit RNNTLossImpl(int64_t blank = -1, double clamp = -1, std::string reduction = "mean")
      : blank(blank), clamp(clamp), reduction(std::move(reduction)) {}
  void reset() override {}
  Tensor forward(const Tensor& logits, const Tensor& targets, const Tensor& logit_lengths,
                 const Tensor& target_lengths) {
    return functional::rnnt_loss(logits, targets, logit_lengths, target_lengths, blank, clamp, reduction);
  }
  int64_t blank;
  double clamp;
  std::string reduction;
};
FW_MODULE(RNNTLoss);

}  // namespace fw::audio::transforms
