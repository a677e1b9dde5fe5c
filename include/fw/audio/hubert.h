// torchaudio.models' HuBERT pre-training model (Hsu et al., 2021) as fw Modules:
// HuBERTPretrainModel and the factories hubert_pretrain_model / _base / _large / _xlarge, with
// torchaudio 0.13's arguments, forward semantics and state_dict names:
//   namespace M = fw::audio::models;
//   M::HuBERTPretrainModel model = M::hubert_pretrain_base();
//   auto [logit_m, logit_u, feature_pen] = model(waveforms, labels, lengths);
//   // logit_m (masked frames, num_classes + 1): column 0 is the frame's label, as
//   // torchaudio's hubert_loss expects (cross-entropy against target 0).
// The span masks are random (fw's generator; torch draws them from its own, so masks differ
// from torchaudio's for the same seed); forward_with_mask takes a given (B, frames) mask instead.
#pragma once
#include <optional>
#include <string>
#include <tuple>

#include "fw/audio/models.h"
#include "fw/nn/module.h"
#include "fw/nn/modules.h"

namespace fw::audio::models {

// hubert_pretrain_model's arguments beyond the wav2vec2 ones (the masking and logit defaults are
// hubert_pretrain_base's; the nested Wav2Vec2Options keep wav2vec2's, whose dropouts differ).
struct HuBERTPretrainOptions {
  FW_ARG(Wav2Vec2Options, wav2vec2) = {};
  FW_ARG(double, mask_prob) = 0.8;          // expected fraction of frames masked (spans overlap)
  FW_ARG(std::string, mask_selection) = "static";  // span lengths: static, uniform, normal, poisson
  FW_ARG(double, mask_other) = 0.0;         // second parameter of the span-length distribution
  FW_ARG(int64_t, mask_length) = 10;
  FW_ARG(bool, no_mask_overlap) = false;
  FW_ARG(int64_t, mask_min_space) = 1;      // gap between spans when no_mask_overlap
  FW_ARG(double, mask_channel_prob) = 0.0;  // the same over feature channels (zeroed)
  FW_ARG(std::string, mask_channel_selection) = "static";
  FW_ARG(double, mask_channel_other) = 0.0;
  FW_ARG(int64_t, mask_channel_length) = 10;
  FW_ARG(bool, no_mask_channel_overlap) = false;
  FW_ARG(int64_t, mask_channel_min_space) = 1;
  FW_ARG(bool, skip_masked) = false;        // no logits for masked frames
  FW_ARG(bool, skip_nomask) = false;        // no logits for unmasked frames
  FW_ARG(int64_t, num_classes) = 100;
  FW_ARG(int64_t, final_dim) = 256;
  FW_ARG(std::optional<double>, feature_grad_mult) = 0.1;  // in (0, 1): scales the extractor's gradient
};

namespace detail {

// torchaudio's _compute_mask_indices: random spans over each of `batch` rows of `frames`
// (num_mask = int(mask_prob * valid / mask_length + U[0, 1)), at least min_masks; span lengths
// per mask_type; with no_overlap, spans placed one by one in the free parts at least min_space
// apart), padded frames (padding_mask true) never masked, then every row cut down to the fewest
// masked frames of any row. Returns (batch, frames) bool. torchaudio 0.13 cannot run two of its
// options (its "poisson" lengths call torch.poisson wrongly; its no_overlap placement passes
// tensors to torch.randint after the first span); fw implements their evident meaning, Poisson
// (mask_length) lengths and fairseq's placement, and the tests compare those against patched
// torchaudio runs. "uniform" lengths are drawn from [mask_other, 2 mask_length]; mask_other must
// be integral (torch.randint rejects any float there).
Tensor compute_mask_indices(int64_t batch, int64_t frames, const Tensor& padding_mask, double mask_prob,
                            int64_t mask_length, const std::string& mask_type = "static", double mask_other = 0.0,
                            int64_t min_masks = 0, bool no_overlap = false, int64_t min_space = 0,
                            std::optional<Generator> gen = std::nullopt);

// torchaudio's MaskGenerator: "mask_embedding" (D) replaces the masked frames; channel masks
// zero whole channels. forward(x (B, T, D), padding_mask or undefined) -> (x, mask (B, T) or
// undefined when mask_prob is 0).
class HuBERTMaskGeneratorImpl : public nn::Cloneable<HuBERTMaskGeneratorImpl> {
 public:
  HuBERTMaskGeneratorImpl(int64_t encoder_embed_dim, const HuBERTPretrainOptions& options);
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& x, const Tensor& padding_mask);
  // The channel masks and the mask embedding for a given (B, T) time mask.
  Tensor apply(const Tensor& x, const Tensor& mask);
  int64_t encoder_embed_dim;
  HuBERTPretrainOptions options;
  Tensor mask_embedding;
};
FW_MODULE(HuBERTMaskGenerator);

// torchaudio's LogitGenerator: "label_embeddings" (num_classes, final_dim) and "final_proj"
// (Linear to final_dim). forward(x (B, T, D), labels (B, T), mask_m, mask_u) -> logits of the
// frames selected by each mask, (frames, num_classes + 1): cosine similarity / 0.1 with the
// frame's own label embedding in column 0 and every class after it, -inf where a class's
// embedding equals the label's (the label itself). Undefined when skipped.
class HuBERTLogitGeneratorImpl : public nn::Cloneable<HuBERTLogitGeneratorImpl> {
 public:
  HuBERTLogitGeneratorImpl(int64_t encoder_embed_dim, int64_t num_classes, int64_t final_dim, bool skip_masked,
                           bool skip_nomask);
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& x, const Tensor& labels, const Tensor& mask_m,
                                     const Tensor& mask_u);
  int64_t encoder_embed_dim, num_classes, final_dim;
  bool skip_masked, skip_nomask;
  Tensor label_embeddings;
  nn::Linear final_proj{nullptr};
};
FW_MODULE(HuBERTLogitGenerator);

}  // namespace detail

// torchaudio.models.HuBERTPretrainModel: "wav2vec2" (a Wav2Vec2Model without aux),
// "mask_generator", "logit_generator". forward(waveforms (B, samples), labels (B, frames)
// integer, lengths (B,) or undefined) -> (logit_m, logit_u, feature_pen): the logits of the
// masked and of the unmasked valid frames (undefined when skipped) and the mean square of the
// extracted features (a penalty term). labels must have one entry per output frame.
// Initialised as torchaudio's hubert_pretrain_model does (He-normal extractor convs, N(0, 0.02)
// transformer Linears with zero biases, zero positional-conv bias).
class HuBERTPretrainModelImpl : public nn::Cloneable<HuBERTPretrainModelImpl> {
 public:
  explicit HuBERTPretrainModelImpl(HuBERTPretrainOptions options = {});
  void reset() override;
  std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& waveforms, const Tensor& labels,
                                             const Tensor& lengths = {});
  // The same with the (B, frames) time mask given (no random time spans; channel masks still
  // drawn when mask_channel_prob > 0).
  std::tuple<Tensor, Tensor, Tensor> forward_with_mask(const Tensor& waveforms, const Tensor& labels,
                                                       const Tensor& lengths, const Tensor& mask);
  HuBERTPretrainOptions options;
  Wav2Vec2Model wav2vec2{nullptr};
  detail::HuBERTMaskGenerator mask_generator{nullptr};
  detail::HuBERTLogitGenerator logit_generator{nullptr};

 private:
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& waveforms, const Tensor& labels, const Tensor& lengths,
                                         const Tensor* mask);
};
FW_MODULE(HuBERTPretrainModel);

// torchaudio's factories (the wav2vec2 part as hubert_base / _large / _xlarge, masks of 10
// frames, num_classes 100 / 500 / 500, final_dim 256 / 768 / 1024).
HuBERTPretrainModel hubert_pretrain_model(const HuBERTPretrainOptions& options);
HuBERTPretrainModel hubert_pretrain_base(double encoder_projection_dropout = 0.1,
                                         double encoder_attention_dropout = 0.1,
                                         double encoder_ff_interm_dropout = 0.0, double encoder_dropout = 0.1,
                                         double encoder_layer_drop = 0.05, double mask_prob = 0.8,
                                         double mask_channel_prob = 0.0, int64_t mask_channel_length = 10,
                                         std::optional<double> feature_grad_mult = 0.1, int64_t num_classes = 100);
HuBERTPretrainModel hubert_pretrain_large(double encoder_projection_dropout = 0.0,
                                          double encoder_attention_dropout = 0.0,
                                          double encoder_ff_interm_dropout = 0.0, double encoder_dropout = 0.0,
                                          double encoder_layer_drop = 0.0, double mask_prob = 0.8,
                                          double mask_channel_prob = 0.0, int64_t mask_channel_length = 10,
                                          std::optional<double> feature_grad_mult = std::nullopt);
HuBERTPretrainModel hubert_pretrain_xlarge(double encoder_projection_dropout = 0.0,
                                           double encoder_attention_dropout = 0.0,
                                           double encoder_ff_interm_dropout = 0.0, double encoder_dropout = 0.0,
                                           double encoder_layer_drop = 0.0, double mask_prob = 0.8,
                                           double mask_channel_prob = 0.0, int64_t mask_channel_length = 10,
                                           std::optional<double> feature_grad_mult = std::nullopt);

}  // namespace fw::audio::models
