// torchaudio.models' Conformer, Wav2Letter and DeepSpeech (fw/audio/models.h). Module and
// parameter names follow torchaudio's so its state_dicts load unchanged; each constructor builds
// its layers in torchaudio's order, so with the same generator seed the initial weights are drawn
// in the same sequence of initialiser calls.
#include "fw/audio/models.h"

#include <utility>

#include "fw/nn/functional.h"

namespace fw::audio::models {

namespace F = fw::nn::functional;

namespace detail {

ConformerFeedForwardImpl::ConformerFeedForwardImpl(int64_t input_dim, int64_t hidden_dim, double dropout)
    : input_dim(input_dim), hidden_dim(hidden_dim), dropout(dropout) {
  reset();
}

void ConformerFeedForwardImpl::reset() {
  sequential = register_module(
      "sequential", nn::Sequential(nn::LayerNorm(nn::LayerNormOptions({input_dim})), nn::Linear(input_dim, hidden_dim),
                                   nn::SiLU(), nn::Dropout(dropout), nn::Linear(hidden_dim, input_dim),
                                   nn::Dropout(dropout)));
}

Tensor ConformerFeedForwardImpl::forward(const Tensor& input) { return sequential->forward(input); }

ConformerConvolutionImpl::ConformerConvolutionImpl(int64_t input_dim, int64_t num_channels,
                                                   int64_t depthwise_kernel_size, double dropout, bool bias,
                                                   bool use_group_norm)
    : input_dim(input_dim),
      num_channels(num_channels),
      depthwise_kernel_size(depthwise_kernel_size),
      dropout(dropout),
      bias(bias),
      use_group_norm(use_group_norm) {
  FW_CHECK(depthwise_kernel_size > 0 && (depthwise_kernel_size - 1) % 2 == 0,
           "[audio::models::Conformer] depthwise_kernel_size must be odd to achieve 'SAME' padding, got ",
           depthwise_kernel_size);
  reset();
}

void ConformerConvolutionImpl::reset() {
  layer_norm = register_module("layer_norm", nn::LayerNorm(nn::LayerNormOptions({input_dim})));
  nn::Sequential seq;
  seq->push_back(nn::Conv1d(nn::Conv1dOptions(input_dim, 2 * num_channels, 1).bias(bias)));
  seq->push_back(nn::GLU(nn::GLUOptions(1)));
  seq->push_back(nn::Conv1d(nn::Conv1dOptions(num_channels, num_channels, depthwise_kernel_size)
                                .padding((depthwise_kernel_size - 1) / 2)
                                .groups(num_channels)
                                .bias(bias)));
  if (use_group_norm)
    seq->push_back(nn::GroupNorm(nn::GroupNormOptions(1, num_channels)));
  else
    seq->push_back(nn::BatchNorm1d(num_channels));
  seq->push_back(nn::SiLU());
  seq->push_back(nn::Conv1d(nn::Conv1dOptions(num_channels, input_dim, 1).bias(bias)));
  seq->push_back(nn::Dropout(dropout));
  sequential = register_module("sequential", seq);
}

Tensor ConformerConvolutionImpl::forward(const Tensor& input) {
  FW_CHECK(input.dim() == 3 && input.size(-1) == input_dim, "[audio::models::Conformer] the convolution module "
           "takes (B, T, ", input_dim, "), got ", input.sizes());
  Tensor x = layer_norm->forward(input).transpose(1, 2);
  return sequential->forward(x).transpose(1, 2);
}

DeepSpeechFullyConnectedImpl::DeepSpeechFullyConnectedImpl(int64_t n_feature, int64_t n_hidden, double dropout,
                                                           int64_t relu_max_clip)
    : n_feature(n_feature), n_hidden(n_hidden), dropout(dropout), relu_max_clip(relu_max_clip) {
  reset();
}

void DeepSpeechFullyConnectedImpl::reset() { fc = register_module("fc", nn::Linear(n_feature, n_hidden)); }

Tensor DeepSpeechFullyConnectedImpl::forward(const Tensor& x) {
  Tensor y = fw::hardtanh(fw::relu(fc->forward(x)), 0, double(relu_max_clip));
  if (dropout != 0) y = fw::dropout(y, dropout, is_training());
  return y;
}

}  // namespace detail

ConformerLayerImpl::ConformerLayerImpl(int64_t input_dim, int64_t ffn_dim, int64_t num_attention_heads,
                                       int64_t depthwise_conv_kernel_size, double dropout, bool use_group_norm,
                                       bool convolution_first)
    : input_dim(input_dim),
      ffn_dim(ffn_dim),
      num_attention_heads(num_attention_heads),
      depthwise_conv_kernel_size(depthwise_conv_kernel_size),
      dropout(dropout),
      use_group_norm(use_group_norm),
      convolution_first(convolution_first) {
  reset();
}

void ConformerLayerImpl::reset() {
  ffn1 = register_module("ffn1", detail::ConformerFeedForward(input_dim, ffn_dim, dropout));
  self_attn_layer_norm = register_module("self_attn_layer_norm", nn::LayerNorm(nn::LayerNormOptions({input_dim})));
  self_attn = register_module(
      "self_attn", nn::MultiheadAttention(nn::MultiheadAttentionOptions(input_dim, num_attention_heads).dropout(dropout)));
  self_attn_dropout = register_module("self_attn_dropout", nn::Dropout(dropout));
  conv_module = register_module("conv_module", detail::ConformerConvolution(input_dim, input_dim,
                                                                            depthwise_conv_kernel_size, dropout,
                                                                            /*bias=*/true, use_group_norm));
  ffn2 = register_module("ffn2", detail::ConformerFeedForward(input_dim, ffn_dim, dropout));
  final_layer_norm = register_module("final_layer_norm", nn::LayerNorm(nn::LayerNormOptions({input_dim})));
}

Tensor ConformerLayerImpl::forward(const Tensor& input, const Tensor& key_padding_mask) {
  FW_CHECK(input.dim() == 3 && input.size(-1) == input_dim, "[audio::models::ConformerLayer] input must be (T, B, ",
           input_dim, "), got ", input.sizes());
  // The convolution module works on (B, T, D).
  auto convolution = [&](const Tensor& x) { return x + conv_module->forward(x.transpose(0, 1)).transpose(0, 1); };
  Tensor x = ffn1->forward(input) * 0.5 + input;
  if (convolution_first) x = convolution(x);
  Tensor residual = x;
  Tensor h = self_attn_layer_norm->forward(x);
  h = std::get<0>(self_attn->forward(h, h, h, key_padding_mask, /*need_weights=*/false));
  x = self_attn_dropout->forward(h) + residual;
  if (!convolution_first) x = convolution(x);
  x = ffn2->forward(x) * 0.5 + x;
  return final_layer_norm->forward(x);
}

ConformerImpl::ConformerImpl(int64_t input_dim, int64_t num_heads, int64_t ffn_dim, int64_t num_layers,
                             int64_t depthwise_conv_kernel_size, double dropout, bool use_group_norm,
                             bool convolution_first)
    : input_dim(input_dim),
      num_heads(num_heads),
      ffn_dim(ffn_dim),
      num_layers(num_layers),
      depthwise_conv_kernel_size(depthwise_conv_kernel_size),
      dropout(dropout),
      use_group_norm(use_group_norm),
      convolution_first(convolution_first) {
  FW_CHECK(num_layers >= 0, "[audio::models::Conformer] num_layers must be non-negative, got ", num_layers);
  reset();
}

void ConformerImpl::reset() {
  nn::ModuleList layers;
  for (int64_t i = 0; i < num_layers; i++)
    layers->push_back(ConformerLayer(input_dim, ffn_dim, num_heads, depthwise_conv_kernel_size, dropout,
                                     use_group_norm, convolution_first));
  conformer_layers = register_module("conformer_layers", layers);
}

std::tuple<Tensor, Tensor> ConformerImpl::forward(const Tensor& input, const Tensor& lengths) {
  const char* op = "[audio::models::Conformer]";
  FW_CHECK(input.dim() == 3 && input.size(-1) == input_dim, op, " input must be (B, T, ", input_dim, "), got ",
           input.sizes());
  FW_CHECK(lengths.dim() == 1 && lengths.size(0) == input.size(0) && !lengths.is_floating_point() &&
               !lengths.is_complex(),
           op, " lengths must be a (B,) integer tensor with B = ", input.size(0), ", got ", lengths.dtype(), " ",
           lengths.sizes());
  // torchaudio's padding mask: (B, max(lengths)) with true at frames >= the sequence's length.
  const int64_t max_length = lengths.numel() ? lengths.max().item<int64_t>() : 0;
  FW_CHECK(max_length == input.size(1), op, " max(lengths) = ", max_length, " must equal the input's ",
           input.size(1), " frames (the attention's key padding mask is that long)");
  Tensor mask = fw::arange(max_length, lengths.options()).expand({lengths.size(0), max_length}) >= lengths.unsqueeze(1);
  Tensor x = input.transpose(0, 1);
  for (size_t i = 0; i < conformer_layers->size(); i++)
    x = conformer_layers->ptr<ConformerLayerImpl>(i)->forward(x, mask);
  return {x.transpose(0, 1), lengths};
}

Wav2LetterImpl::Wav2LetterImpl(int64_t num_classes, std::string input_type, int64_t num_features)
    : num_classes(num_classes), input_type(std::move(input_type)), num_features(num_features) {
  FW_CHECK(this->input_type == "waveform" || this->input_type == "power_spectrum" || this->input_type == "mfcc",
           "[audio::models::Wav2Letter] input_type must be \"waveform\", \"power_spectrum\" or \"mfcc\", got \"",
           this->input_type, "\"");
  reset();
}

void Wav2LetterImpl::reset() {
  const bool waveform = input_type == "waveform";
  nn::Sequential acoustic;
  auto conv = [&](int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
    acoustic->push_back(nn::Conv1d(nn::Conv1dOptions(in, out, k).stride(stride).padding(pad)));
    acoustic->push_back(nn::ReLU(nn::ReLUOptions(true)));
  };
  // torchaudio builds the acoustic convolutions first and the waveform front end after them.
  conv(waveform ? 250 : num_features, 250, 48, 2, 23);
  for (int i = 0; i < 7; i++) conv(250, 250, 7, 1, 3);
  conv(250, 2000, 32, 1, 16);
  conv(2000, 2000, 1, 1, 0);
  conv(2000, num_classes, 1, 1, 0);
  if (waveform) {
    nn::Sequential front;
    front->push_back(nn::Conv1d(nn::Conv1dOptions(num_features, 250, 250).stride(160).padding(45)));
    front->push_back(nn::ReLU(nn::ReLUOptions(true)));
    acoustic_model = register_module("acoustic_model", nn::Sequential(front, acoustic));
  } else {
    acoustic_model = register_module("acoustic_model", acoustic);
  }
}

Tensor Wav2LetterImpl::forward(const Tensor& x) {
  FW_CHECK(x.dim() == 3 && x.size(1) == num_features, "[audio::models::Wav2Letter] input must be (B, ", num_features, ", time), got ", x.sizes());
  return fw::log_softmax(acoustic_model->forward(x), 1);
}

DeepSpeechImpl::DeepSpeechImpl(int64_t n_feature, int64_t n_hidden, int64_t n_class, double dropout)
    : n_feature(n_feature), n_hidden(n_hidden), n_class(n_class), dropout(dropout) {
  reset();
}

void DeepSpeechImpl::reset() {
  fc1 = register_module("fc1", detail::DeepSpeechFullyConnected(n_feature, n_hidden, dropout));
  fc2 = register_module("fc2", detail::DeepSpeechFullyConnected(n_hidden, n_hidden, dropout));
  fc3 = register_module("fc3", detail::DeepSpeechFullyConnected(n_hidden, n_hidden, dropout));
  bi_rnn = register_module(
      "bi_rnn", nn::RNN(nn::RNNOptions(n_hidden, n_hidden).nonlinearity(fw::kReLU).bidirectional(true)));
  fc4 = register_module("fc4", detail::DeepSpeechFullyConnected(n_hidden, n_hidden, dropout));
  out = register_module("out", nn::Linear(n_hidden, n_class));
}

Tensor DeepSpeechImpl::forward(const Tensor& x) {
  FW_CHECK(x.dim() == 4 && x.size(1) == 1 && x.size(3) == n_feature, "[audio::models::DeepSpeech] input must be "
           "(B, 1, T, ", n_feature, "), got ", x.sizes());
  Tensor h = fc3->forward(fc2->forward(fc1->forward(x)));
  h = h.squeeze(1).transpose(0, 1);  // (T, B, H)
  h = std::get<0>(bi_rnn->forward(h));
  h = h.slice(2, 0, n_hidden) + h.slice(2, n_hidden, 2 * n_hidden);
  h = out->forward(fc4->forward(h));
  return fw::log_softmax(h.permute({1, 0, 2}), 2);
}

}  // namespace fw::audio::models
