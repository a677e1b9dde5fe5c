// torchaudio.models' speech encoders as fw Modules: Conformer (and ConformerLayer), Wav2Letter and
// DeepSpeech, with torchaudio 0.13's constructor arguments, forward semantics and parameter names,
// so a torchaudio state_dict loads as it is:
//   namespace M = fw::audio::models;
//   M::Conformer enc(/*input_dim=*/80, /*num_heads=*/4, /*ffn_dim=*/256, /*num_layers=*/4,
//                    /*depthwise_conv_kernel_size=*/31);
//   fw::load(enc, "conformer.pt");                       // torch.save(model.state_dict(), ...)
//   auto [y, y_lengths] = enc(features, lengths);        // (B, T, 80), (B,)
// Parameters are initialised as torchaudio's (PyTorch's default initialisers for each layer).
#pragma once
#include <string>
#include <tuple>

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

}  // namespace fw::audio::models
