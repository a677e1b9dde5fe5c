// torchaudio.models' speech models as fw Modules: Conformer (and ConformerLayer), Wav2Letter,
// DeepSpeech, ConvTasNet, WaveRNN and Wav2Vec2Model (wav2vec 2.0 / HuBERT, with torchaudio's factory
// functions), with
// torchaudio 0.13's constructor arguments, forward semantics and parameter names, so a torchaudio
// state_dict loads as it is:
//   namespace M = fw::audio::models;
//   M::Conformer enc(/*input_dim=*/80, /*num_heads=*/4, /*ffn_dim=*/256, /*num_layers=*/4,
//                    /*depthwise_conv_kernel_size=*/31);
//   fw::load(enc, "conformer.pt");                       // torch.save(model.state_dict(), ...)
//   auto [y, y_lengths] = enc(features, lengths);        // (B, T, 80), (B,)
//   M::Wav2Vec2Model w2v = M::wav2vec2_base();            // fw::load(w2v, "wav2vec2_base.pt")
//   auto [feats, frames] = w2v(waveforms, lengths);      // (B, T/320, 768)
// Parameters are initialised as torchaudio's (PyTorch's default initialisers for each layer).
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "fw/nn/module.h"
#include "fw/nn/modules.h"

namespace fw::audio::models {

namespace detail {

// Conformer's feed-forward module: "sequential" = LayerNorm, Linear(D, hidden), SiLU, Dropout,
// Linear(hidden, D), Dropout. (*, D) -> (*, D).
class ConformerFeedForwardImpl : public nn::Cloneable<ConformerFeedForwardImpl> {
 public:
  ConformerFeedForwardImpl(int64_t input_dim, int64_t hidden_dim, double dropout = 0.0);
  void reset() override;
  Tensor forward(const Tensor& input);
  int64_t input_dim, hidden_dim;
  double dropout;
  nn::Sequential sequential{nullptr};
};
FW_MODULE(ConformerFeedForward);

// Conformer's convolution module: "layer_norm", then "sequential" = pointwise Conv1d(D, 2C), GLU,
// depthwise Conv1d(C, C, kernel, 'same' padding), BatchNorm1d(C) (GroupNorm(1, C) with
// use_group_norm), SiLU, pointwise Conv1d(C, D), Dropout. (B, T, D) -> (B, T, D).
class ConformerConvolutionImpl : public nn::Cloneable<ConformerConvolutionImpl> {
 public:
  ConformerConvolutionImpl(int64_t input_dim, int64_t num_channels, int64_t depthwise_kernel_size, double dropout = 0.0,
                           bool bias = false, bool use_group_norm = false);
  void reset() override;
  Tensor forward(const Tensor& input);
  int64_t input_dim, num_channels, depthwise_kernel_size;
  double dropout;
  bool bias, use_group_norm;
  nn::LayerNorm layer_norm{nullptr};
  nn::Sequential sequential{nullptr};
};
FW_MODULE(ConformerConvolution);

// DeepSpeech's fully connected layer: "fc" (Linear), then min(relu(x), relu_max_clip) and dropout.
class DeepSpeechFullyConnectedImpl : public nn::Cloneable<DeepSpeechFullyConnectedImpl> {
 public:
  DeepSpeechFullyConnectedImpl(int64_t n_feature, int64_t n_hidden, double dropout, int64_t relu_max_clip = 20);
  void reset() override;
  Tensor forward(const Tensor& x);
  int64_t n_feature, n_hidden;
  double dropout;
  int64_t relu_max_clip;
  nn::Linear fc{nullptr};
};
FW_MODULE(DeepSpeechFullyConnected);

}  // namespace detail

// torchaudio.models.conformer.ConformerLayer: half-step FFN, self-attention (key padding mask),
// convolution module (before the attention with convolution_first), half-step FFN, LayerNorm.
// forward takes (T, B, D) and an optional (B, T) bool key_padding_mask (true = padding).
class ConformerLayerImpl : public nn::Cloneable<ConformerLayerImpl> {
 public:
  ConformerLayerImpl(int64_t input_dim, int64_t ffn_dim, int64_t num_attention_heads,
                     int64_t depthwise_conv_kernel_size, double dropout = 0.0, bool use_group_norm = false,
                     bool convolution_first = false);
  void reset() override;
  Tensor forward(const Tensor& input, const Tensor& key_padding_mask = {});
  int64_t input_dim, ffn_dim, num_attention_heads, depthwise_conv_kernel_size;
  double dropout;
  bool use_group_norm, convolution_first;
  detail::ConformerFeedForward ffn1{nullptr}, ffn2{nullptr};
  nn::LayerNorm self_attn_layer_norm{nullptr}, final_layer_norm{nullptr};
  nn::MultiheadAttention self_attn{nullptr};
  nn::Dropout self_attn_dropout{nullptr};
  detail::ConformerConvolution conv_module{nullptr};
};
FW_MODULE(ConformerLayer);

// torchaudio.models.Conformer (Gulati et al., 2020): num_layers ConformerLayers
// ("conformer_layers"). forward(input (B, T, input_dim), lengths (B,) integer) -> (output
// (B, T, input_dim), lengths); frames at or past a sequence's length are masked out of the
// attention keys. depthwise_conv_kernel_size must be odd.
class ConformerImpl : public nn::Cloneable<ConformerImpl> {
 public:
  ConformerImpl(int64_t input_dim, int64_t num_heads, int64_t ffn_dim, int64_t num_layers,
                int64_t depthwise_conv_kernel_size, double dropout = 0.0, bool use_group_norm = false,
                bool convolution_first = false);
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& lengths);
  int64_t input_dim, num_heads, ffn_dim, num_layers, depthwise_conv_kernel_size;
  double dropout;
  bool use_group_norm, convolution_first;
  nn::ModuleList conformer_layers{nullptr};
};
FW_MODULE(Conformer);

// torchaudio.models.Wav2Letter (Collobert et al., 2016): input_type "waveform" (a strided conv
// front end, (B, num_features, time)), "power_spectrum" or "mfcc" ((B, num_features, frames));
// "acoustic_model" is the Sequential of convolutions and ReLUs. Returns log-probabilities
// (B, num_classes, frames') (log_softmax over classes).
class Wav2LetterImpl : public nn::Cloneable<Wav2LetterImpl> {
 public:
  explicit Wav2LetterImpl(int64_t num_classes = 40, std::string input_type = "waveform", int64_t num_features = 1);
  void reset() override;
  Tensor forward(const Tensor& x);
  int64_t num_classes;
  std::string input_type;
  int64_t num_features;
  nn::Sequential acoustic_model{nullptr};
};
FW_MODULE(Wav2Letter);

// torchaudio.models.DeepSpeech (Hannun et al., 2014): three clipped-ReLU (min(relu(x), 20))
// fully connected layers ("fc1".."fc3", each holding "fc"), a bidirectional ReLU RNN ("bi_rnn")
// whose directions are summed, "fc4" and the output Linear ("out"). forward(x (B, 1, T,
// n_feature)) -> (B, T, n_class) log-probabilities.
class DeepSpeechImpl : public nn::Cloneable<DeepSpeechImpl> {
 public:
  explicit DeepSpeechImpl(int64_t n_feature, int64_t n_hidden = 2048, int64_t n_class = 40, double dropout = 0.0);
  void reset() override;
  Tensor forward(const Tensor& x);
  int64_t n_feature, n_hidden, n_class;
  double dropout;
  detail::DeepSpeechFullyConnected fc1{nullptr}, fc2{nullptr}, fc3{nullptr}, fc4{nullptr};
  nn::RNN bi_rnn{nullptr};
  nn::Linear out{nullptr};
};
FW_MODULE(DeepSpeech);

// ---- Conv-TasNet (torchaudio.models.ConvTasNet)

namespace detail {

// A temporal-convolution block: "conv_layers" = Conv1d(io, hidden, 1), PReLU, GroupNorm(1, hidden,
// eps 1e-8), dilated depthwise Conv1d(hidden, kernel), PReLU, GroupNorm; then "res_out" (absent
// with no_residual) and "skip_out" (Conv1d(hidden, io, 1)). forward -> (residual or undefined, skip).
class ConvTasNetBlockImpl : public nn::Cloneable<ConvTasNetBlockImpl> {
 public:
  ConvTasNetBlockImpl(int64_t io_channels, int64_t hidden_channels, int64_t kernel_size, int64_t padding,
                      int64_t dilation = 1, bool no_residual = false);
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& input);
  int64_t io_channels, hidden_channels, kernel_size, padding, dilation;
  bool no_residual;
  nn::Sequential conv_layers{nullptr};
  nn::Conv1d res_out{nullptr}, skip_out{nullptr};
};
FW_MODULE(ConvTasNetBlock);

// The mask generator: "input_norm", "input_conv", "conv_layers" (num_stacks x num_layers blocks,
// dilation 2^layer), "output_prelu", "output_conv", sigmoid or ReLU masks (B, sources, F, frames).
class ConvTasNetMaskGeneratorImpl : public nn::Cloneable<ConvTasNetMaskGeneratorImpl> {
 public:
  ConvTasNetMaskGeneratorImpl(int64_t input_dim, int64_t num_sources, int64_t kernel_size, int64_t num_feats,
                              int64_t num_hidden, int64_t num_layers, int64_t num_stacks, std::string msk_activate);
  void reset() override;
  Tensor forward(const Tensor& input);
  int64_t input_dim, num_sources, kernel_size, num_feats, num_hidden, num_layers, num_stacks;
  std::string msk_activate;
  int64_t receptive_field = 0;
  nn::GroupNorm input_norm{nullptr};
  nn::Conv1d input_conv{nullptr}, output_conv{nullptr};
  nn::ModuleList conv_layers{nullptr};
  nn::PReLU output_prelu{nullptr};
};
FW_MODULE(ConvTasNetMaskGenerator);

}  // namespace detail

// torchaudio.models.ConvTasNet (Luo & Mesgarani, 2019): a learned encoder ("encoder", Conv1d with
// stride kernel/2), the mask generator ("mask_generator") and a transposed-conv decoder
// ("decoder"). forward(input (B, 1, frames)) -> separated sources (B, num_sources, frames); the
// input is zero-padded to a whole number of strides and the padding cut from the output.
// msk_kernel_size must be 3 (torchaudio accepts others at construction but cannot run them).
class ConvTasNetImpl : public nn::Cloneable<ConvTasNetImpl> {
 public:
  explicit ConvTasNetImpl(int64_t num_sources = 2, int64_t enc_kernel_size = 16, int64_t enc_num_feats = 512,
                          int64_t msk_kernel_size = 3, int64_t msk_num_feats = 128, int64_t msk_num_hidden_feats = 512,
                          int64_t msk_num_layers = 8, int64_t msk_num_stacks = 3, std::string msk_activate = "sigmoid");
  void reset() override;
  Tensor forward(const Tensor& input);
  int64_t num_sources, enc_kernel_size, enc_num_feats, msk_kernel_size, msk_num_feats, msk_num_hidden_feats,
      msk_num_layers, msk_num_stacks;
  std::string msk_activate;
  nn::Conv1d encoder{nullptr};
  detail::ConvTasNetMaskGenerator mask_generator{nullptr};
  nn::ConvTranspose1d decoder{nullptr};
};
FW_MODULE(ConvTasNet);

// torchaudio.models.conv_tasnet_base: the paper's best configuration (ReLU masks).
ConvTasNet conv_tasnet_base(int64_t num_sources = 2);

// ---- WaveRNN (torchaudio.models.WaveRNN)

// torchaudio.models.wavernn.Stretch2d: repeats each (freq, time) cell freq_scale x time_scale times.
class Stretch2dImpl : public nn::Cloneable<Stretch2dImpl> {
 public:
  Stretch2dImpl(int64_t time_scale, int64_t freq_scale) : time_scale(time_scale), freq_scale(freq_scale) {}
  void reset() override {}
  Tensor forward(const Tensor& specgram);
  int64_t time_scale, freq_scale;
};
FW_MODULE(Stretch2d);

// torchaudio.models.wavernn.ResBlock: "resblock_model" = Conv1d(1x1, no bias), BatchNorm1d, ReLU,
// Conv1d(1x1, no bias), BatchNorm1d, plus the input.
class WaveRNNResBlockImpl : public nn::Cloneable<WaveRNNResBlockImpl> {
 public:
  explicit WaveRNNResBlockImpl(int64_t n_freq = 128);
  void reset() override;
  Tensor forward(const Tensor& specgram);
  int64_t n_freq;
  nn::Sequential resblock_model{nullptr};
};
FW_MODULE(WaveRNNResBlock);

// torchaudio.models.wavernn.MelResNet: "melresnet_model" = Conv1d(n_freq, n_hidden, kernel, no bias),
// BatchNorm1d, ReLU, n_res_block ResBlocks, Conv1d(n_hidden, n_output, 1).
class WaveRNNMelResNetImpl : public nn::Cloneable<WaveRNNMelResNetImpl> {
 public:
  WaveRNNMelResNetImpl(int64_t n_res_block = 10, int64_t n_freq = 128, int64_t n_hidden = 128, int64_t n_output = 128,
                       int64_t kernel_size = 5);
  void reset() override;
  Tensor forward(const Tensor& specgram);
  int64_t n_res_block, n_freq, n_hidden, n_output, kernel_size;
  nn::Sequential melresnet_model{nullptr};
};
FW_MODULE(WaveRNNMelResNet);

// torchaudio.models.wavernn.UpsampleNetwork: "resnet" (MelResNet: "melresnet_model" = Conv1d(kernel,
// no bias), BatchNorm1d, ReLU, n_res_block ResBlocks, Conv1d(1x1)), "resnet_stretch", and
// "upsample_layers" (per scale: Stretch2d, Conv2d(1, 1, (1, 2 scale + 1)) initialised to the mean).
// forward(specgram (B, n_freq, T)) -> (upsampled (B, n_freq, (T - kernel + 1) * total_scale),
// resnet output (B, n_output, same)).
class WaveRNNUpsampleNetworkImpl : public nn::Cloneable<WaveRNNUpsampleNetworkImpl> {
 public:
  WaveRNNUpsampleNetworkImpl(std::vector<int64_t> upsample_scales, int64_t n_res_block = 10, int64_t n_freq = 128,
                             int64_t n_hidden = 128, int64_t n_output = 128, int64_t kernel_size = 5);
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& specgram);
  std::vector<int64_t> upsample_scales;
  int64_t n_res_block, n_freq, n_hidden, n_output, kernel_size, total_scale = 1, indent = 0;
  WaveRNNMelResNet resnet{nullptr};
  Stretch2d resnet_stretch{nullptr};
  nn::Sequential upsample_layers{nullptr};
};
FW_MODULE(WaveRNNUpsampleNetwork);

// torchaudio.models.WaveRNN (Kalchbrenner et al., 2018) with torchaudio's layout: "upsample",
// "fc", GRUs "rnn1" / "rnn2", "fc1".."fc3". forward(waveform (B, 1, T * hop_length), specgram
// (B, 1, n_freq, T + kernel_size - 1)) -> logits (B, 1, T * hop_length, n_classes); infer(specgram
// (B, n_freq, T), lengths) samples a waveform (B, 1, T * hop_length) in [-1, 1] one step at a time
// from the class posteriors (torch.multinomial's role, drawn from `generator` or fw's default).
// The product of upsample_scales must equal hop_length.
class WaveRNNImpl : public nn::Cloneable<WaveRNNImpl> {
 public:
  WaveRNNImpl(std::vector<int64_t> upsample_scales, int64_t n_classes, int64_t hop_length, int64_t n_res_block = 10,
              int64_t n_rnn = 512, int64_t n_fc = 512, int64_t kernel_size = 5, int64_t n_freq = 128,
              int64_t n_hidden = 128, int64_t n_output = 128);
  void reset() override;
  Tensor forward(const Tensor& waveform, const Tensor& specgram);
  std::tuple<Tensor, Tensor> infer(const Tensor& specgram, const Tensor& lengths = {},
                                   std::optional<Generator> generator = std::nullopt);
  std::vector<int64_t> upsample_scales;
  int64_t n_classes, hop_length, n_res_block, n_rnn, n_fc, kernel_size, n_freq, n_hidden, n_output, n_aux, n_bits;
  WaveRNNUpsampleNetwork upsample{nullptr};
  nn::Linear fc{nullptr}, fc1{nullptr}, fc2{nullptr}, fc3{nullptr};
  nn::GRU rnn1{nullptr}, rnn2{nullptr};
};
FW_MODULE(WaveRNN);

// ---- wav2vec 2.0 / HuBERT (torchaudio.models.Wav2Vec2Model and its factory functions)

// torchaudio.models.wav2vec2_model's arguments. extractor_conv_layer_config: (out_channels,
// kernel, stride) per feature-extractor conv; empty = wav2vec 2.0's [(512, 10, 5)] +
// [(512, 3, 2)] * 4 + [(512, 2, 2)] * 2.
using ConvLayerConfig = std::vector<std::tuple<int64_t, int64_t, int64_t>>;
struct Wav2Vec2Options {
  FW_ARG(std::string, extractor_mode) = "group_norm";  // or "layer_norm"
  FW_ARG(ConvLayerConfig, extractor_conv_layer_config) = {};
  FW_ARG(bool, extractor_conv_bias) = false;
  FW_ARG(int64_t, encoder_embed_dim) = 768;
  FW_ARG(double, encoder_projection_dropout) = 0.1;
  FW_ARG(int64_t, encoder_pos_conv_kernel) = 128;
  FW_ARG(int64_t, encoder_pos_conv_groups) = 16;
  FW_ARG(int64_t, encoder_num_layers) = 12;
  FW_ARG(int64_t, encoder_num_heads) = 12;
  FW_ARG(double, encoder_attention_dropout) = 0.1;
  FW_ARG(int64_t, encoder_ff_interm_features) = 3072;
  FW_ARG(double, encoder_ff_interm_dropout) = 0.1;
  FW_ARG(double, encoder_dropout) = 0.1;
  FW_ARG(bool, encoder_layer_norm_first) = false;
  FW_ARG(double, encoder_layer_drop) = 0.1;
  FW_ARG(std::optional<int64_t>, aux_num_out) = std::nullopt;
};

namespace detail {

// One feature-extractor block: "conv" (no padding), an optional "layer_norm" (GroupNorm with one
// group per channel, or LayerNorm over channels), GELU; lengths follow the convolution.
class Wav2Vec2ConvBlockImpl : public nn::Cloneable<Wav2Vec2ConvBlockImpl> {
 public:
  Wav2Vec2ConvBlockImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride, bool bias,
                        std::string norm);  // norm: "", "group_norm" or "layer_norm"
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& x, const Tensor& length);
  int64_t in_channels, out_channels, kernel_size, stride;
  bool bias;
  std::string norm;
  nn::Conv1d conv{nullptr};
  nn::GroupNorm group_norm{nullptr};  // registered as "layer_norm", as torchaudio names it
  nn::LayerNorm layer_norm{nullptr};
};
FW_MODULE(Wav2Vec2ConvBlock);

// The convolutional positional embedding's weight-normalised grouped conv ("conv": bias,
// weight_g (1, 1, K), weight_v (C, C / groups, K); weight = weight_g * weight_v / ||weight_v||
// with the norm over all but the kernel dim, as torch.nn.utils.weight_norm(conv, dim=2)).
class WeightNormConv1dImpl : public nn::Cloneable<WeightNormConv1dImpl> {
 public:
  WeightNormConv1dImpl(int64_t channels, int64_t kernel_size, int64_t groups);
  void reset() override;
  Tensor forward(const Tensor& x);
  int64_t channels, kernel_size, groups;
  Tensor bias, weight_g, weight_v;
};
FW_MODULE(WeightNormConv1d);

// wav2vec 2.0's self-attention ("k_proj", "v_proj", "q_proj", "out_proj") with an additive
// (B, 1, L, L) mask; (B, L, D) -> (B, L, D).
class Wav2Vec2SelfAttentionImpl : public nn::Cloneable<Wav2Vec2SelfAttentionImpl> {
 public:
  Wav2Vec2SelfAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout = 0.0);
  void reset() override;
  Tensor forward(const Tensor& x, const Tensor& attention_mask = {});
  int64_t embed_dim, num_heads, head_dim;
  double dropout;
  nn::Linear k_proj{nullptr}, v_proj{nullptr}, q_proj{nullptr}, out_proj{nullptr};
  nn::Dropout attn_dropout{nullptr};  // torchaudio's "dropout" (no parameters)
};
FW_MODULE(Wav2Vec2SelfAttention);

// "intermediate_dense", GELU, "intermediate_dropout", "output_dense", "output_dropout".
class Wav2Vec2FeedForwardImpl : public nn::Cloneable<Wav2Vec2FeedForwardImpl> {
 public:
  explicit Wav2Vec2FeedForwardImpl(const Wav2Vec2Options& options);
  void reset() override;
  Tensor forward(const Tensor& x);
  Wav2Vec2Options options;
  nn::Linear intermediate_dense{nullptr}, output_dense{nullptr};
  nn::Dropout intermediate_dropout{nullptr}, output_dropout{nullptr};
};
FW_MODULE(Wav2Vec2FeedForward);

// One transformer layer: "attention", "dropout", "layer_norm", "feed_forward",
// "final_layer_norm"; pre-LayerNorm with encoder_layer_norm_first, else post-LayerNorm.
class Wav2Vec2EncoderLayerImpl : public nn::Cloneable<Wav2Vec2EncoderLayerImpl> {
 public:
  explicit Wav2Vec2EncoderLayerImpl(const Wav2Vec2Options& options);
  void reset() override;
  Tensor forward(const Tensor& x, const Tensor& attention_mask = {});
  Wav2Vec2Options options;
  Wav2Vec2SelfAttention attention{nullptr};
  nn::Dropout dropout{nullptr};
  nn::LayerNorm layer_norm{nullptr}, final_layer_norm{nullptr};
  Wav2Vec2FeedForward feed_forward{nullptr};
};
FW_MODULE(Wav2Vec2EncoderLayer);

// "conv_layers": the conv blocks; (B, T) waveforms -> (B, frames, C) and frame lengths.
class Wav2Vec2FeatureExtractorImpl : public nn::Cloneable<Wav2Vec2FeatureExtractorImpl> {
 public:
  explicit Wav2Vec2FeatureExtractorImpl(const Wav2Vec2Options& options);
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& waveforms, const Tensor& lengths);
  Wav2Vec2Options options;
  nn::ModuleList conv_layers{nullptr};
};
FW_MODULE(Wav2Vec2FeatureExtractor);

// "conv" (WeightNormConv1d, 'same' padding; an even kernel drops the last frame), then GELU;
// (B, L, D) -> (B, L, D).
class Wav2Vec2PosConvEmbeddingImpl : public nn::Cloneable<Wav2Vec2PosConvEmbeddingImpl> {
 public:
  explicit Wav2Vec2PosConvEmbeddingImpl(const Wav2Vec2Options& options);
  void reset() override;
  Tensor forward(const Tensor& x);
  Wav2Vec2Options options;
  WeightNormConv1d conv{nullptr};
};
FW_MODULE(Wav2Vec2PosConvEmbedding);

// "layer_norm", "projection" (Linear to the embedding dim), "dropout".
class Wav2Vec2FeatureProjectionImpl : public nn::Cloneable<Wav2Vec2FeatureProjectionImpl> {
 public:
  explicit Wav2Vec2FeatureProjectionImpl(const Wav2Vec2Options& options);
  void reset() override;
  Tensor forward(const Tensor& x);
  Wav2Vec2Options options;
  nn::LayerNorm layer_norm{nullptr};
  nn::Linear projection{nullptr};
  nn::Dropout dropout{nullptr};
};
FW_MODULE(Wav2Vec2FeatureProjection);

// "pos_conv_embed", "layer_norm", "dropout", "layers". The LayerNorm comes before the layers when
// they are post-norm and after them when they are pre-norm (torchaudio's arrangement).
class Wav2Vec2TransformerImpl : public nn::Cloneable<Wav2Vec2TransformerImpl> {
 public:
  explicit Wav2Vec2TransformerImpl(const Wav2Vec2Options& options);
  void reset() override;
  Tensor forward(const Tensor& x, const Tensor& attention_mask = {});
  std::vector<Tensor> get_intermediate_outputs(const Tensor& x, const Tensor& attention_mask, int64_t num_layers);
  Wav2Vec2Options options;
  Wav2Vec2PosConvEmbedding pos_conv_embed{nullptr};
  nn::LayerNorm layer_norm{nullptr};
  nn::Dropout dropout{nullptr};
  nn::ModuleList layers{nullptr};

 private:
  Tensor preprocess(const Tensor& x);
};
FW_MODULE(Wav2Vec2Transformer);

// "feature_projection" and "transformer"; padded frames (at or past a sequence's length) are
// zeroed after the projection and get -10000 in the additive attention mask.
class Wav2Vec2EncoderImpl : public nn::Cloneable<Wav2Vec2EncoderImpl> {
 public:
  explicit Wav2Vec2EncoderImpl(const Wav2Vec2Options& options);
  void reset() override;
  Tensor forward(const Tensor& features, const Tensor& lengths = {});
  std::vector<Tensor> extract_features(const Tensor& features, const Tensor& lengths, int64_t num_layers);
  // torchaudio's _preprocess: the projection with padded frames zeroed, and the additive
  // attention mask (undefined without lengths). HuBERTPretrainModel masks between the two steps.
  std::tuple<Tensor, Tensor> preprocess(const Tensor& features, const Tensor& lengths);
  Wav2Vec2Options options;
  Wav2Vec2FeatureProjection feature_projection{nullptr};
  Wav2Vec2Transformer transformer{nullptr};
};
FW_MODULE(Wav2Vec2Encoder);

}  // namespace detail

// torchaudio.models.Wav2Vec2Model: "feature_extractor" (conv blocks over the raw waveform),
// "encoder" ("feature_projection", "transformer" with a convolutional positional embedding and
// the layers) and the optional "aux" Linear. forward(waveforms (B, T), lengths (B,) or undefined)
// -> (features (B, frames, D) or logits (B, frames, aux_num_out), frame lengths or undefined);
// frames past a sequence's length are zeroed after the projection and masked out of attention.
class Wav2Vec2ModelImpl : public nn::Cloneable<Wav2Vec2ModelImpl> {
 public:
  explicit Wav2Vec2ModelImpl(Wav2Vec2Options options = {});
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& waveforms, const Tensor& lengths = {});
  // The output of each transformer layer (the first num_layers; -1 = all), and the frame lengths.
  std::tuple<std::vector<Tensor>, Tensor> extract_features(const Tensor& waveforms, const Tensor& lengths = {},
                                                           int64_t num_layers = -1);
  Wav2Vec2Options options;
  detail::Wav2Vec2FeatureExtractor feature_extractor{nullptr};
  detail::Wav2Vec2Encoder encoder{nullptr};
  nn::Linear aux{nullptr};
};
FW_MODULE(Wav2Vec2Model);

// torchaudio's factory functions (same architectures and dropout defaults).
Wav2Vec2Model wav2vec2_model(const Wav2Vec2Options& options);
Wav2Vec2Model wav2vec2_base(double encoder_projection_dropout = 0.1, double encoder_attention_dropout = 0.1,
                            double encoder_ff_interm_dropout = 0.1, double encoder_dropout = 0.1,
                            double encoder_layer_drop = 0.1, std::optional<int64_t> aux_num_out = std::nullopt);
Wav2Vec2Model wav2vec2_large(double encoder_projection_dropout = 0.1, double encoder_attention_dropout = 0.1,
                             double encoder_ff_interm_dropout = 0.1, double encoder_dropout = 0.1,
                             double encoder_layer_drop = 0.1, std::optional<int64_t> aux_num_out = std::nullopt);
Wav2Vec2Model wav2vec2_large_lv60k(double encoder_projection_dropout = 0.1, double encoder_attention_dropout = 0.0,
                                   double encoder_ff_interm_dropout = 0.1, double encoder_dropout = 0.0,
                                   double encoder_layer_drop = 0.1, std::optional<int64_t> aux_num_out = std::nullopt);
Wav2Vec2Model hubert_base(double encoder_projection_dropout = 0.1, double encoder_attention_dropout = 0.1,
                          double encoder_ff_interm_dropout = 0.0, double encoder_dropout = 0.1,
                          double encoder_layer_drop = 0.05, std::optional<int64_t> aux_num_out = std::nullopt);
Wav2Vec2Model hubert_large(double encoder_projection_dropout = 0.0, double encoder_attention_dropout = 0.0,
                           double encoder_ff_interm_dropout = 0.0, double encoder_dropout = 0.0,
                           double encoder_layer_drop = 0.0, std::optional<int64_t> aux_num_out = std::nullopt);
Wav2Vec2Model hubert_xlarge(double encoder_projection_dropout = 0.0, double encoder_attention_dropout = 0.0,
                            double encoder_ff_interm_dropout = 0.0, double encoder_dropout = 0.0,
                            double encoder_layer_drop = 0.0, std::optional<int64_t> aux_num_out = std::nullopt);

}  // namespace fw::audio::models
