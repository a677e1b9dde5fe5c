// torchaudio.models' Hybrid Demucs music source separation model (Défossez, 2021) as fw Modules:
// HDemucs and the factories hdemucs_low / hdemucs_medium / hdemucs_high, with torchaudio 0.13's
// constructor arguments, forward semantics and state_dict names, so a trained torchaudio
// state_dict loads unchanged:
//   namespace M = fw::audio::models;
//   M::HDemucs model = M::hdemucs_high({"drums", "bass", "other", "vocals"});
//   fw::load(*model, "hdemucs_high.pt");        // torch.save(model.state_dict(), ...)
//   model->eval();
//   Tensor sources = model(mixture);             // (B, 2, frames) -> (B, 4, 2, frames)
// The model runs a spectrogram branch (complex STFT bins as channels) and a waveform branch as two
// U-Nets that merge in their innermost layers; the two outputs are summed.
#pragma once
#include <string>
#include <vector>

#include "fw/nn/module.h"
#include "fw/nn/modules.h"

namespace fw::audio::models {

// HDemucs' constructor arguments beyond the source names, with torchaudio's defaults.
struct HDemucsOptions {
  FW_ARG(int64_t, audio_channels) = 2;   // channels of the mixture and of each source
  FW_ARG(int64_t, channels) = 48;        // hidden channels of the first layer
  FW_ARG(double, growth) = 2;            // channel growth per layer (int(growth * channels))
  FW_ARG(int64_t, nfft) = 4096;          // STFT size (hop nfft / 4)
  FW_ARG(int64_t, depth) = 6;            // encoder and decoder layers
  FW_ARG(double, freq_emb) = 0.2;        // weight of the frequency embedding after layer 0 (0: none)
  FW_ARG(double, emb_scale) = 10;        // the embedding's learning-rate scale
  FW_ARG(bool, emb_smooth) = true;       // smooth initial embedding (cumulative sum over frequencies)
  FW_ARG(int64_t, kernel_size) = 8;
  FW_ARG(int64_t, time_stride) = 2;      // stride of the time-only layers after the merge
  FW_ARG(int64_t, stride) = 4;
  FW_ARG(int64_t, context) = 1;          // decoder "rewrite" conv context
  FW_ARG(int64_t, context_enc) = 0;      // encoder "rewrite" conv context
  FW_ARG(int64_t, norm_starts) = 4;      // first layer with group norm
  FW_ARG(int64_t, norm_groups) = 4;
  FW_ARG(int64_t, dconv_depth) = 2;      // layers of each residual DConv branch (negative: undilated)
  FW_ARG(double, dconv_comp) = 4;        // channel compression inside the DConv branch
  FW_ARG(int64_t, dconv_attn) = 4;       // first layer whose DConv branch has local attention
  FW_ARG(int64_t, dconv_lstm) = 4;       // first layer whose DConv branch has a BLSTM
  FW_ARG(double, dconv_init) = 1e-4;     // initial LayerScale
};

namespace detail {

// torchaudio's _ScaledEmbedding: "embedding" (an Embedding whose weight is stored divided by
// `scale`); forward(indices) = embedding(indices) * scale.
class HDemucsScaledEmbeddingImpl : public nn::Cloneable<HDemucsScaledEmbeddingImpl> {
 public:
  HDemucsScaledEmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, double scale = 10.0, bool smooth = false);
  void reset() override;
  Tensor forward(const Tensor& indices);
  int64_t num_embeddings, embedding_dim;
  double scale;
  bool smooth;
  nn::Embedding embedding{nullptr};
};
FW_MODULE(HDemucsScaledEmbedding);

// torchaudio's _LayerScale: "scale" (channels); forward(x (B, C, T)) = scale[:, None] * x.
class HDemucsLayerScaleImpl : public nn::Cloneable<HDemucsLayerScaleImpl> {
 public:
  explicit HDemucsLayerScaleImpl(int64_t channels, double init = 0.0);
  void reset() override;
  Tensor forward(const Tensor& x);
  int64_t channels;
  double init;
  Tensor scale;
};
FW_MODULE(HDemucsLayerScale);

// torchaudio's _BLSTM: a bidirectional "lstm" with hidden size = input size and a "linear" back to
// it, plus the input when `skip`. forward(x (B, C, T)) -> (B, C, T); sequences longer than 200
// steps run as overlapping 200-step chunks (hop 100) whose centres are stitched back together.
class HDemucsBLSTMImpl : public nn::Cloneable<HDemucsBLSTMImpl> {
 public:
  explicit HDemucsBLSTMImpl(int64_t dim, int64_t layers = 1, bool skip = false);
  void reset() override;
  Tensor forward(const Tensor& x);
  int64_t dim, layers;
  bool skip;
  int64_t max_steps = 200;
  nn::LSTM lstm{nullptr};
  nn::Linear linear{nullptr};
};
FW_MODULE(HDemucsBLSTM);

// torchaudio's _LocalState: attention over time with a learned, query-dependent decay of the
// score with distance and no attention of a step to itself ("content", "query", "key",
// "query_decay", "proj", all 1x1 Conv1d). forward(x (B, C, T)) = x + proj(attention).
class HDemucsLocalStateImpl : public nn::Cloneable<HDemucsLocalStateImpl> {
 public:
  explicit HDemucsLocalStateImpl(int64_t channels, int64_t heads = 4, int64_t ndecay = 4);
  void reset() override;
  Tensor forward(const Tensor& x);
  int64_t channels, heads, ndecay;
  nn::Conv1d content{nullptr}, query{nullptr}, key{nullptr}, query_decay{nullptr}, proj{nullptr};
};
FW_MODULE(HDemucsLocalState);

// torchaudio's _DConv: "layers", each a Sequential of Conv1d(channels, hidden, 3, dilation 2^d),
// GroupNorm(1, hidden), GELU, [BLSTM], [LocalState], Conv1d(hidden, 2 channels, 1),
// GroupNorm(1, 2 channels), GLU, LayerScale; forward adds each layer's output to its input.
class HDemucsDConvImpl : public nn::Cloneable<HDemucsDConvImpl> {
 public:
  explicit HDemucsDConvImpl(int64_t channels, double compress = 4, int64_t depth = 2, double init = 1e-4,
                            std::string norm_type = "group_norm", bool attn = false, int64_t heads = 4,
                            int64_t ndecay = 4, bool lstm = false, int64_t kernel_size = 3);
  void reset() override;
  Tensor forward(const Tensor& x);
  int64_t channels;
  double compress;
  int64_t depth;
  double init;
  std::string norm_type;
  bool attn;
  int64_t heads, ndecay;
  bool lstm;
  int64_t kernel_size;
  nn::ModuleList layers{nullptr};
};
FW_MODULE(HDemucsDConv);

// torchaudio's _HEncLayer: "conv" (Conv2d over frequency with kernel (k, 1) when `freq`, else
// Conv1d over time), "norm1", then unless `empty`: GELU, "dconv", "rewrite" (1 + 2 context
// conv to 2 chout), "norm2", GLU. forward(x, inject) adds `inject` (the time branch) after the
// conv; a time layer first zero-pads the input to a multiple of the stride.
class HDemucsEncoderLayerImpl : public nn::Cloneable<HDemucsEncoderLayerImpl> {
 public:
  HDemucsEncoderLayerImpl(int64_t chin, int64_t chout, int64_t kernel_size = 8, int64_t stride = 4,
                          int64_t norm_groups = 4, bool empty = false, bool freq = true,
                          std::string norm_type = "group_norm", int64_t context = 0, bool dconv_lstm = false,
                          bool dconv_attn = false, int64_t dconv_depth = 2, double dconv_compress = 4,
                          double dconv_init = 1e-4, bool pad = true);
  void reset() override;
  Tensor forward(const Tensor& x, const Tensor& inject = {});
  int64_t chin, chout, kernel_size, stride, norm_groups;
  bool empty, freq;
  std::string norm_type;
  int64_t context;
  bool dconv_lstm, dconv_attn;
  int64_t dconv_depth;
  double dconv_compress, dconv_init;
  bool pad;
  nn::AnyModule conv, norm1, rewrite, norm2;  // Conv1d or Conv2d; GroupNorm or Identity
  HDemucsDConv dconv{nullptr};
};
FW_MODULE(HDemucsEncoderLayer);

// torchaudio's _HDecLayer: unless `empty`, adds the skip and applies "rewrite" + "norm1" + GLU;
// then "conv_tr" (transposed conv) + "norm2", crops the padding (time layers: to `length`) and
// applies GELU unless `last`. forward -> (output, the input of conv_tr).
class HDemucsDecoderLayerImpl : public nn::Cloneable<HDemucsDecoderLayerImpl> {
 public:
  HDemucsDecoderLayerImpl(int64_t chin, int64_t chout, bool last = false, int64_t kernel_size = 8,
                          int64_t stride = 4, int64_t norm_groups = 1, bool empty = false, bool freq = true,
                          std::string norm_type = "group_norm", int64_t context = 1, bool pad = true);
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& x, const Tensor& skip, int64_t length);
  int64_t chin, chout;
  bool last;
  int64_t kernel_size, stride, norm_groups;
  bool empty, freq;
  std::string norm_type;
  int64_t context;
  bool pad;
  int64_t padding = 0;
  nn::AnyModule conv_tr, norm2, rewrite, norm1;  // ConvTranspose1d/2d, Conv1d/2d; GroupNorm or Identity
};
FW_MODULE(HDemucsDecoderLayer);

}  // namespace detail

// torchaudio.models.HDemucs. forward(mixture (B, audio_channels, frames)) -> separated sources
// (B, sources.size(), audio_channels, frames). Children: "freq_encoder", "freq_decoder",
// "time_encoder", "time_decoder" (ModuleLists) and "freq_emb" (when options.freq_emb() != 0).
// Any length of at least one frame works: where torchaudio's zero padding of very short inputs
// (under 1.25 hops) adds an STFT frame and torchaudio raises, fw drops that frame; every length
// torchaudio accepts gives torchaudio's result.
class HDemucsImpl : public nn::Cloneable<HDemucsImpl> {
 public:
  explicit HDemucsImpl(std::vector<std::string> sources, const HDemucsOptions& options = {});
  void reset() override;
  Tensor forward(const Tensor& input);
  std::vector<std::string> sources;
  HDemucsOptions options;
  int64_t hop_length = 0;
  nn::ModuleList freq_encoder{nullptr}, freq_decoder{nullptr}, time_encoder{nullptr}, time_decoder{nullptr};
  detail::HDemucsScaledEmbedding freq_emb{nullptr};

 private:
  Tensor spec(const Tensor& x) const;
  Tensor ispec(const Tensor& m, int64_t length) const;
  std::vector<detail::HDemucsEncoderLayer> fenc_, tenc_;
  std::vector<detail::HDemucsDecoderLayer> fdec_, tdec_;
};
FW_MODULE(HDemucs);

// torchaudio's factories: nfft 1024 / depth 5 (about 8 kHz), nfft 2048 / depth 6 (16-32 kHz),
// nfft 4096 / depth 6 (44.1-48 kHz).
HDemucs hdemucs_low(std::vector<std::string> sources);
HDemucs hdemucs_medium(std::vector<std::string> sources);
HDemucs hdemucs_high(std::vector<std::string> sources);

}  // namespace fw::audio::models
