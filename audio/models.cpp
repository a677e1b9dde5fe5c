// torchaudio.models' Conformer, Wav2Letter and DeepSpeech (fw/audio/models.h). Module and
// parameter names follow torchaudio's so its state_dicts load unchanged; each constructor builds
// its layers in torchaudio's order, so with the same generator seed the initial weights are drawn
// in the same sequence of initialiser calls.
#include "fw/audio/models.h"

#include <utility>

#include "fw/compat_fns.h"
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
      "self_attn",
      nn::MultiheadAttention(nn::MultiheadAttentionOptions(input_dim, num_attention_heads).dropout(dropout)));
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
  // torchaudio's padding mask: (B, max(lengths)) with true at frames >= the sequence's length; it
  // must span the input's frames. The check reads the lengths, so it is skipped while fw::compile
  // traces (reading them there would break the graph).
  const int64_t T = input.size(1);
  if (fw::detail::g_traces_active.load(std::memory_order_relaxed) == 0) {
    const int64_t max_length = lengths.numel() ? lengths.max().item<int64_t>() : 0;
    FW_CHECK(max_length == T, op, " max(lengths) = ", max_length, " must equal the input's ", T,
             " frames (the attention's key padding mask is that long)");
  }
  Tensor mask = fw::arange(T, lengths.options()).expand({lengths.size(0), T}) >= lengths.unsqueeze(1);
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
  FW_CHECK(x.dim() == 3 && x.size(1) == num_features, "[audio::models::Wav2Letter] input must be (B, ", num_features,
           ", time), got ", x.sizes());
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

// ---- wav2vec 2.0 / HuBERT

namespace fw::audio::models {

namespace detail {

Wav2Vec2ConvBlockImpl::Wav2Vec2ConvBlockImpl(int64_t in_channels, int64_t out_channels, int64_t kernel_size,
                                             int64_t stride, bool bias, std::string norm)
    : in_channels(in_channels),
      out_channels(out_channels),
      kernel_size(kernel_size),
      stride(stride),
      bias(bias),
      norm(std::move(norm)) {
  reset();
}

void Wav2Vec2ConvBlockImpl::reset() {
  conv = register_module("conv", nn::Conv1d(nn::Conv1dOptions(in_channels, out_channels, kernel_size)
                                                .stride(stride)
                                                .bias(bias)));
  if (norm == "group_norm")
    group_norm = register_module("layer_norm", nn::GroupNorm(nn::GroupNormOptions(out_channels, out_channels)));
  else if (norm == "layer_norm")
    layer_norm = register_module("layer_norm", nn::LayerNorm(nn::LayerNormOptions({out_channels})));
}

std::tuple<Tensor, Tensor> Wav2Vec2ConvBlockImpl::forward(const Tensor& x, const Tensor& length) {
  Tensor y = conv->forward(x);
  if (group_norm) y = group_norm->forward(y);
  if (layer_norm) y = layer_norm->forward(y.transpose(-2, -1)).transpose(-2, -1);  // over channels
  y = fw::gelu(y);
  Tensor l;
  if (length.defined())
    l = fw::clamp_min(fw::div(length - kernel_size, stride, "floor") + 1, 0);
  return {y, l};
}

WeightNormConv1dImpl::WeightNormConv1dImpl(int64_t channels, int64_t kernel_size, int64_t groups)
    : channels(channels), kernel_size(kernel_size), groups(groups) {
  FW_CHECK(channels > 0 && groups > 0 && channels % groups == 0, "[audio::models::Wav2Vec2Model] encoder_embed_dim ",
           channels, " must be a positive multiple of encoder_pos_conv_groups ", groups);
  FW_CHECK(kernel_size > 0, "[audio::models::Wav2Vec2Model] encoder_pos_conv_kernel must be positive, got ",
           kernel_size);
  reset();
}

void WeightNormConv1dImpl::reset() {
  // As torch: the conv's default initialisation, then weight_norm splits the weight into its
  // direction v and its norm g over the in-channel and out-channel dims (one per tap).
  nn::Conv1d conv(nn::Conv1dOptions(channels, channels, kernel_size).padding(kernel_size / 2).groups(groups));
  fw::NoGradGuard no_grad;
  bias = register_parameter("bias", conv->bias.detach().clone());
  weight_g = register_parameter("weight_g", fw::norm_except_dim(conv->weight, 2, 2).detach().clone());
  weight_v = register_parameter("weight_v", conv->weight.detach().clone());
}

Tensor WeightNormConv1dImpl::forward(const Tensor& x) {
  Tensor w = weight_v * (weight_g / fw::norm_except_dim(weight_v, 2, 2));
  return fw::conv1d(x, w, bias, 1, kernel_size / 2, 1, groups);
}

Wav2Vec2SelfAttentionImpl::Wav2Vec2SelfAttentionImpl(int64_t embed_dim, int64_t num_heads, double dropout)
    : embed_dim(embed_dim), num_heads(num_heads), head_dim(num_heads > 0 ? embed_dim / num_heads : 0),
      dropout(dropout) {
  FW_CHECK(num_heads > 0 && head_dim * num_heads == embed_dim, "[audio::models::Wav2Vec2Model] embed_dim (",
           embed_dim, ") is not divisible by num_heads (", num_heads, ")");
  reset();
}

void Wav2Vec2SelfAttentionImpl::reset() {
  attn_dropout = register_module("dropout", nn::Dropout(dropout));
  k_proj = register_module("k_proj", nn::Linear(embed_dim, embed_dim));
  v_proj = register_module("v_proj", nn::Linear(embed_dim, embed_dim));
  q_proj = register_module("q_proj", nn::Linear(embed_dim, embed_dim));
  out_proj = register_module("out_proj", nn::Linear(embed_dim, embed_dim));
}

Tensor Wav2Vec2SelfAttentionImpl::forward(const Tensor& x, const Tensor& attention_mask) {
  FW_CHECK(x.dim() == 3 && x.size(2) == embed_dim, "[audio::models::Wav2Vec2Model] the attention takes (batch, "
           "sequence, ", embed_dim, "), got ", x.sizes());
  const int64_t B = x.size(0), L = x.size(1);
  Tensor q = q_proj->forward(x).view({B, L, num_heads, head_dim}).transpose(2, 1);
  Tensor k = k_proj->forward(x).view({B, L, num_heads, head_dim}).permute({0, 2, 3, 1});
  Tensor v = v_proj->forward(x).view({B, L, num_heads, head_dim}).transpose(2, 1);
  Tensor w = fw::matmul(q * (1.0 / std::sqrt(double(head_dim))), k);
  if (attention_mask.defined()) w = w + attention_mask;
  w = w - std::get<0>(w.max(-1, true));
  w = attn_dropout->forward(fw::softmax(w, -1));
  Tensor out = fw::matmul(w, v).transpose(2, 1).reshape({B, L, embed_dim});
  return out_proj->forward(out);
}

Wav2Vec2FeedForwardImpl::Wav2Vec2FeedForwardImpl(const Wav2Vec2Options& options) : options(options) { reset(); }

void Wav2Vec2FeedForwardImpl::reset() {
  const int64_t D = options.encoder_embed_dim(), H = options.encoder_ff_interm_features();
  intermediate_dense = register_module("intermediate_dense", nn::Linear(D, H));
  intermediate_dropout = register_module("intermediate_dropout", nn::Dropout(options.encoder_ff_interm_dropout()));
  output_dense = register_module("output_dense", nn::Linear(H, D));
  output_dropout = register_module("output_dropout", nn::Dropout(options.encoder_dropout()));
}

Tensor Wav2Vec2FeedForwardImpl::forward(const Tensor& x) {
  Tensor h = intermediate_dropout->forward(fw::gelu(intermediate_dense->forward(x)));
  return output_dropout->forward(output_dense->forward(h));
}

Wav2Vec2EncoderLayerImpl::Wav2Vec2EncoderLayerImpl(const Wav2Vec2Options& options) : options(options) { reset(); }

void Wav2Vec2EncoderLayerImpl::reset() {
  const int64_t D = options.encoder_embed_dim();
  attention = register_module("attention", Wav2Vec2SelfAttention(D, options.encoder_num_heads(),
                                                                  options.encoder_attention_dropout()));
  dropout = register_module("dropout", nn::Dropout(options.encoder_dropout()));
  layer_norm = register_module("layer_norm", nn::LayerNorm(nn::LayerNormOptions({D})));
  feed_forward = register_module("feed_forward", Wav2Vec2FeedForward(options));
  final_layer_norm = register_module("final_layer_norm", nn::LayerNorm(nn::LayerNormOptions({D})));
}

Tensor Wav2Vec2EncoderLayerImpl::forward(const Tensor& x, const Tensor& attention_mask) {
  const bool pre_norm = options.encoder_layer_norm_first();
  Tensor h = attention->forward(pre_norm ? layer_norm->forward(x) : x, attention_mask);
  Tensor y = x + dropout->forward(h);
  if (pre_norm) return y + feed_forward->forward(final_layer_norm->forward(y));
  y = layer_norm->forward(y);
  return final_layer_norm->forward(y + feed_forward->forward(y));
}

Wav2Vec2FeatureExtractorImpl::Wav2Vec2FeatureExtractorImpl(const Wav2Vec2Options& options) : options(options) {
  reset();
}

void Wav2Vec2FeatureExtractorImpl::reset() {
  nn::ModuleList blocks;
  int64_t in = 1;
  const auto& config = options.extractor_conv_layer_config();
  for (size_t i = 0; i < config.size(); i++) {
    const auto [c, k, s] = config[i];
    const std::string norm = options.extractor_mode() == "layer_norm" ? "layer_norm" : (i == 0 ? "group_norm" : "");
    blocks->push_back(Wav2Vec2ConvBlock(in, c, k, s, options.extractor_conv_bias(), norm));
    in = c;
  }
  conv_layers = register_module("conv_layers", blocks);
}

std::tuple<Tensor, Tensor> Wav2Vec2FeatureExtractorImpl::forward(const Tensor& waveforms, const Tensor& lengths) {
  FW_CHECK(waveforms.dim() == 2, "[audio::models::Wav2Vec2Model] Expected the input Tensor to be 2D (batch, time), "
           "but received ", waveforms.sizes());
  Tensor x = waveforms.unsqueeze(1), l = lengths;  // (B, 1, T)
  for (size_t i = 0; i < conv_layers->size(); i++)
    std::tie(x, l) = conv_layers->ptr<Wav2Vec2ConvBlockImpl>(i)->forward(x, l);
  return {x.transpose(1, 2), l};  // (B, frames, C)
}

Wav2Vec2PosConvEmbeddingImpl::Wav2Vec2PosConvEmbeddingImpl(const Wav2Vec2Options& options) : options(options) {
  reset();
}

void Wav2Vec2PosConvEmbeddingImpl::reset() {
  conv = register_module("conv", WeightNormConv1d(options.encoder_embed_dim(), options.encoder_pos_conv_kernel(),
                                                  options.encoder_pos_conv_groups()));
}

Tensor Wav2Vec2PosConvEmbeddingImpl::forward(const Tensor& x) {
  Tensor y = conv->forward(x.transpose(-2, -1));
  if (options.encoder_pos_conv_kernel() % 2 == 0) y = y.slice(-1, 0, y.size(-1) - 1);
  return fw::gelu(y).transpose(-2, -1);
}

Wav2Vec2FeatureProjectionImpl::Wav2Vec2FeatureProjectionImpl(const Wav2Vec2Options& options) : options(options) {
  reset();
}

void Wav2Vec2FeatureProjectionImpl::reset() {
  const int64_t in = std::get<0>(options.extractor_conv_layer_config().back());
  layer_norm = register_module("layer_norm", nn::LayerNorm(nn::LayerNormOptions({in})));
  projection = register_module("projection", nn::Linear(in, options.encoder_embed_dim()));
  dropout = register_module("dropout", nn::Dropout(options.encoder_projection_dropout()));
}

Tensor Wav2Vec2FeatureProjectionImpl::forward(const Tensor& x) {
  return dropout->forward(projection->forward(layer_norm->forward(x)));
}

Wav2Vec2TransformerImpl::Wav2Vec2TransformerImpl(const Wav2Vec2Options& options) : options(options) { reset(); }

void Wav2Vec2TransformerImpl::reset() {
  pos_conv_embed = register_module("pos_conv_embed", Wav2Vec2PosConvEmbedding(options));
  layer_norm = register_module("layer_norm", nn::LayerNorm(nn::LayerNormOptions({options.encoder_embed_dim()})));
  dropout = register_module("dropout", nn::Dropout(options.encoder_dropout()));
  nn::ModuleList list;
  for (int64_t i = 0; i < options.encoder_num_layers(); i++) list->push_back(Wav2Vec2EncoderLayer(options));
  layers = register_module("layers", list);
}

Tensor Wav2Vec2TransformerImpl::preprocess(const Tensor& x) {
  Tensor y = x + pos_conv_embed->forward(x);
  if (!options.encoder_layer_norm_first()) y = layer_norm->forward(y);
  return dropout->forward(y);
}

Tensor Wav2Vec2TransformerImpl::forward(const Tensor& x, const Tensor& attention_mask) {
  Tensor y = preprocess(x);
  for (size_t i = 0; i < layers->size(); i++) {
    // LayerDrop: in training each layer is skipped with probability encoder_layer_drop.
    if (is_training() && fw::rand({1}).item<double>() <= options.encoder_layer_drop()) continue;
    y = layers->ptr<Wav2Vec2EncoderLayerImpl>(i)->forward(y, attention_mask);
  }
  if (options.encoder_layer_norm_first()) y = layer_norm->forward(y);
  return y;
}

std::vector<Tensor> Wav2Vec2TransformerImpl::get_intermediate_outputs(const Tensor& x, const Tensor& attention_mask,
                                                                      int64_t num_layers) {
  const int64_t n = int64_t(layers->size());
  FW_CHECK(num_layers == -1 || (num_layers > 0 && num_layers <= n),
           "[audio::models::Wav2Vec2Model] num_layers must be between [1, ", n, "] (or -1 for all), got ", num_layers);
  std::vector<Tensor> out;
  Tensor y = preprocess(x);
  for (int64_t i = 0; i < (num_layers == -1 ? n : num_layers); i++) {
    y = layers->ptr<Wav2Vec2EncoderLayerImpl>(size_t(i))->forward(y, attention_mask);
    out.push_back(y);
  }
  return out;
}

Wav2Vec2EncoderImpl::Wav2Vec2EncoderImpl(const Wav2Vec2Options& options) : options(options) { reset(); }

void Wav2Vec2EncoderImpl::reset() {
  feature_projection = register_module("feature_projection", Wav2Vec2FeatureProjection(options));
  transformer = register_module("transformer", Wav2Vec2Transformer(options));
}

std::tuple<Tensor, Tensor> Wav2Vec2EncoderImpl::preprocess(const Tensor& features, const Tensor& lengths) {
  Tensor x = feature_projection->forward(features), mask;
  if (lengths.defined()) {
    const int64_t B = x.size(0), T = x.size(1);
    Tensor pad = fw::arange(T, TensorOptions(kLong).device(lengths.device())).expand({B, T}) >= lengths.unsqueeze(1);
    x = x.masked_fill(pad.unsqueeze(-1), 0.0);
    mask = (pad.unsqueeze(1).unsqueeze(1).to(x.dtype()) * -10000.0).expand({B, 1, T, T});
  }
  return {x, mask};
}

Tensor Wav2Vec2EncoderImpl::forward(const Tensor& features, const Tensor& lengths) {
  auto [x, mask] = preprocess(features, lengths);
  return transformer->forward(x, mask);
}

std::vector<Tensor> Wav2Vec2EncoderImpl::extract_features(const Tensor& features, const Tensor& lengths,
                                                          int64_t num_layers) {
  auto [x, mask] = preprocess(features, lengths);
  return transformer->get_intermediate_outputs(x, mask, num_layers);
}

}  // namespace detail

Wav2Vec2ModelImpl::Wav2Vec2ModelImpl(Wav2Vec2Options options) : options(std::move(options)) {
  const std::string& mode = this->options.extractor_mode();
  FW_CHECK(mode == "group_norm" || mode == "layer_norm", "[audio::models::Wav2Vec2Model] extractor_mode must be "
           "\"group_norm\" or \"layer_norm\", got \"", mode, "\"");
  if (this->options.extractor_conv_layer_config().empty()) {
    ConvLayerConfig config = {{512, 10, 5}};
    for (int i = 0; i < 4; i++) config.emplace_back(512, 3, 2);
    for (int i = 0; i < 2; i++) config.emplace_back(512, 2, 2);
    this->options.extractor_conv_layer_config(config);
  }
  for (const auto& [c, k, s] : this->options.extractor_conv_layer_config())
    FW_CHECK(c > 0 && k > 0 && s > 0, "[audio::models::Wav2Vec2Model] extractor_conv_layer_config entries must be "
             "positive (out_channels, kernel, stride), got (", c, ", ", k, ", ", s, ")");
  FW_CHECK(this->options.encoder_num_layers() >= 0 && this->options.encoder_embed_dim() > 0 &&
               this->options.encoder_ff_interm_features() > 0,
           "[audio::models::Wav2Vec2Model] encoder_num_layers must be >= 0 and the encoder dims positive");
  FW_CHECK(!this->options.aux_num_out() || *this->options.aux_num_out() > 0,
           "[audio::models::Wav2Vec2Model] aux_num_out must be positive, got ",
           this->options.aux_num_out().value_or(0));
  reset();
}

void Wav2Vec2ModelImpl::reset() {
  feature_extractor = register_module("feature_extractor", detail::Wav2Vec2FeatureExtractor(options));
  encoder = register_module("encoder", detail::Wav2Vec2Encoder(options));
  aux = options.aux_num_out()
            ? register_module("aux", nn::Linear(options.encoder_embed_dim(), *options.aux_num_out()))
            : nn::Linear(nullptr);
}

std::tuple<Tensor, Tensor> Wav2Vec2ModelImpl::forward(const Tensor& waveforms, const Tensor& lengths) {
  if (lengths.defined())
    FW_CHECK(lengths.dim() == 1 && waveforms.dim() >= 1 && lengths.size(0) == waveforms.size(0) &&
                 !lengths.is_floating_point() && !lengths.is_complex(),
             "[audio::models::Wav2Vec2Model] lengths must be a (batch,) integer tensor with batch = ",
             waveforms.dim() ? waveforms.size(0) : 0, ", got ", lengths.dtype(), " ", lengths.sizes());
  auto [x, l] = feature_extractor->forward(waveforms, lengths);
  x = encoder->forward(x, l);
  if (aux) x = aux->forward(x);
  return {x, l};
}

std::tuple<std::vector<Tensor>, Tensor> Wav2Vec2ModelImpl::extract_features(const Tensor& waveforms,
                                                                            const Tensor& lengths,
                                                                            int64_t num_layers) {
  auto [x, l] = feature_extractor->forward(waveforms, lengths);
  return {encoder->extract_features(x, l, num_layers), l};
}

Wav2Vec2Model wav2vec2_model(const Wav2Vec2Options& options) { return Wav2Vec2Model(options); }

namespace {

Wav2Vec2Options preset(const std::string& mode, bool conv_bias, int64_t dim, int64_t layers, int64_t heads,
                       int64_t ff, bool layer_norm_first, double proj_drop, double attn_drop, double ff_drop,
                       double drop, double layer_drop, std::optional<int64_t> aux) {
  return Wav2Vec2Options()
      .extractor_mode(mode)
      .extractor_conv_bias(conv_bias)
      .encoder_embed_dim(dim)
      .encoder_projection_dropout(proj_drop)
      .encoder_pos_conv_kernel(128)
      .encoder_pos_conv_groups(16)
      .encoder_num_layers(layers)
      .encoder_num_heads(heads)
      .encoder_attention_dropout(attn_drop)
      .encoder_ff_interm_features(ff)
      .encoder_ff_interm_dropout(ff_drop)
      .encoder_dropout(drop)
      .encoder_layer_norm_first(layer_norm_first)
      .encoder_layer_drop(layer_drop)
      .aux_num_out(aux);
}

}  // namespace

Wav2Vec2Model wav2vec2_base(double p, double a, double f, double d, double l, std::optional<int64_t> aux) {
  return Wav2Vec2Model(preset("group_norm", false, 768, 12, 12, 3072, false, p, a, f, d, l, aux));
}
Wav2Vec2Model wav2vec2_large(double p, double a, double f, double d, double l, std::optional<int64_t> aux) {
  return Wav2Vec2Model(preset("group_norm", false, 1024, 24, 16, 4096, false, p, a, f, d, l, aux));
}
Wav2Vec2Model wav2vec2_large_lv60k(double p, double a, double f, double d, double l, std::optional<int64_t> aux) {
  return Wav2Vec2Model(preset("layer_norm", true, 1024, 24, 16, 4096, true, p, a, f, d, l, aux));
}
Wav2Vec2Model hubert_base(double p, double a, double f, double d, double l, std::optional<int64_t> aux) {
  return Wav2Vec2Model(preset("group_norm", false, 768, 12, 12, 3072, false, p, a, f, d, l, aux));
}
Wav2Vec2Model hubert_large(double p, double a, double f, double d, double l, std::optional<int64_t> aux) {
  return Wav2Vec2Model(preset("layer_norm", false, 1024, 24, 16, 4096, true, p, a, f, d, l, aux));
}
Wav2Vec2Model hubert_xlarge(double p, double a, double f, double d, double l, std::optional<int64_t> aux) {
  return Wav2Vec2Model(preset("layer_norm", false, 1280, 48, 16, 5120, true, p, a, f, d, l, aux));
}

}  // namespace fw::audio::models

// ---- Conv-TasNet

namespace fw::audio::models {

namespace detail {

ConvTasNetBlockImpl::ConvTasNetBlockImpl(int64_t io_channels, int64_t hidden_channels, int64_t kernel_size,
                                         int64_t padding, int64_t dilation, bool no_residual)
    : io_channels(io_channels),
      hidden_channels(hidden_channels),
      kernel_size(kernel_size),
      padding(padding),
      dilation(dilation),
      no_residual(no_residual) {
  reset();
}

void ConvTasNetBlockImpl::reset() {
  conv_layers = register_module(
      "conv_layers",
      nn::Sequential(nn::Conv1d(nn::Conv1dOptions(io_channels, hidden_channels, 1)), nn::PReLU(),
                     nn::GroupNorm(nn::GroupNormOptions(1, hidden_channels).eps(1e-8)),
                     nn::Conv1d(nn::Conv1dOptions(hidden_channels, hidden_channels, kernel_size)
                                    .padding(padding)
                                    .dilation(dilation)
                                    .groups(hidden_channels)),
                     nn::PReLU(), nn::GroupNorm(nn::GroupNormOptions(1, hidden_channels).eps(1e-8))));
  res_out = no_residual ? nn::Conv1d(nullptr)
                        : register_module("res_out", nn::Conv1d(nn::Conv1dOptions(hidden_channels, io_channels, 1)));
  skip_out = register_module("skip_out", nn::Conv1d(nn::Conv1dOptions(hidden_channels, io_channels, 1)));
}

std::tuple<Tensor, Tensor> ConvTasNetBlockImpl::forward(const Tensor& input) {
  Tensor feature = conv_layers->forward(input);
  return {res_out ? res_out->forward(feature) : Tensor(), skip_out->forward(feature)};
}

ConvTasNetMaskGeneratorImpl::ConvTasNetMaskGeneratorImpl(int64_t input_dim, int64_t num_sources, int64_t kernel_size,
                                                         int64_t num_feats, int64_t num_hidden, int64_t num_layers,
                                                         int64_t num_stacks, std::string msk_activate)
    : input_dim(input_dim),
      num_sources(num_sources),
      kernel_size(kernel_size),
      num_feats(num_feats),
      num_hidden(num_hidden),
      num_layers(num_layers),
      num_stacks(num_stacks),
      msk_activate(std::move(msk_activate)) {
  FW_CHECK(this->msk_activate == "sigmoid" || this->msk_activate == "relu",
           "[audio::models::ConvTasNet] Unsupported activation ", this->msk_activate, " (sigmoid or relu)");
  FW_CHECK(num_layers > 0 && num_stacks > 0, "[audio::models::ConvTasNet] msk_num_layers and msk_num_stacks must be "
           "positive, got ", num_layers, " and ", num_stacks);
  // Each block pads by its dilation, which keeps the frame count only for kernel 3 (torchaudio
  // builds other sizes but fails in forward when the residual's length differs).
  FW_CHECK(kernel_size == 3, "[audio::models::ConvTasNet] msk_kernel_size must be 3 (the blocks pad by their "
           "dilation, which keeps the frame count only for kernel 3), got ", kernel_size);
  reset();
}

void ConvTasNetMaskGeneratorImpl::reset() {
  input_norm = register_module("input_norm", nn::GroupNorm(nn::GroupNormOptions(1, input_dim).eps(1e-8)));
  input_conv = register_module("input_conv", nn::Conv1d(nn::Conv1dOptions(input_dim, num_feats, 1)));
  nn::ModuleList blocks;
  receptive_field = 0;
  for (int64_t s = 0; s < num_stacks; s++)
    for (int64_t l = 0; l < num_layers; l++) {
      const int64_t multi = int64_t(1) << l;
      blocks->push_back(ConvTasNetBlock(num_feats, num_hidden, kernel_size, /*padding=*/multi, /*dilation=*/multi,
                                        /*no_residual=*/l == num_layers - 1 && s == num_stacks - 1));
      receptive_field += s == 0 && l == 0 ? kernel_size : (kernel_size - 1) * multi;
    }
  conv_layers = register_module("conv_layers", blocks);
  output_prelu = register_module("output_prelu", nn::PReLU());
  output_conv = register_module("output_conv", nn::Conv1d(nn::Conv1dOptions(num_feats, input_dim * num_sources, 1)));
}

Tensor ConvTasNetMaskGeneratorImpl::forward(const Tensor& input) {
  const int64_t batch = input.size(0);
  Tensor feats = input_conv->forward(input_norm->forward(input)), output;
  for (size_t i = 0; i < conv_layers->size(); i++) {
    auto [residual, skip] = conv_layers->ptr<ConvTasNetBlockImpl>(i)->forward(feats);
    if (residual.defined()) feats = feats + residual;
    output = output.defined() ? output + skip : skip;
  }
  output = output_conv->forward(output_prelu->forward(output));
  output = msk_activate == "sigmoid" ? fw::sigmoid(output) : fw::relu(output);
  return output.view({batch, num_sources, input_dim, -1});
}

}  // namespace detail

ConvTasNetImpl::ConvTasNetImpl(int64_t num_sources, int64_t enc_kernel_size, int64_t enc_num_feats,
                               int64_t msk_kernel_size, int64_t msk_num_feats, int64_t msk_num_hidden_feats,
                               int64_t msk_num_layers, int64_t msk_num_stacks, std::string msk_activate)
    : num_sources(num_sources),
      enc_kernel_size(enc_kernel_size),
      enc_num_feats(enc_num_feats),
      msk_kernel_size(msk_kernel_size),
      msk_num_feats(msk_num_feats),
      msk_num_hidden_feats(msk_num_hidden_feats),
      msk_num_layers(msk_num_layers),
      msk_num_stacks(msk_num_stacks),
      msk_activate(std::move(msk_activate)) {
  FW_CHECK(enc_kernel_size >= 2 && num_sources > 0, "[audio::models::ConvTasNet] enc_kernel_size must be >= 2 and "
           "num_sources positive, got ", enc_kernel_size, " and ", num_sources);
  reset();
}

void ConvTasNetImpl::reset() {
  const int64_t stride = enc_kernel_size / 2;
  encoder = register_module("encoder", nn::Conv1d(nn::Conv1dOptions(1, enc_num_feats, enc_kernel_size)
                                                      .stride(stride)
                                                      .padding(stride)
                                                      .bias(false)));
  mask_generator = register_module(
      "mask_generator", detail::ConvTasNetMaskGenerator(enc_num_feats, num_sources, msk_kernel_size, msk_num_feats,
                                                        msk_num_hidden_feats, msk_num_layers, msk_num_stacks,
                                                        msk_activate));
  decoder = register_module("decoder", nn::ConvTranspose1d(nn::ConvTranspose1dOptions(enc_num_feats, 1, enc_kernel_size)
                                                               .stride(stride)
                                                               .padding(stride)
                                                               .bias(false)));
}

Tensor ConvTasNetImpl::forward(const Tensor& input) {
  FW_CHECK(input.dim() == 3 && input.size(1) == 1, "[audio::models::ConvTasNet] Expected 3D tensor (batch, "
           "channel==1, frames). Found: ", input.sizes());
  // Pad to a whole number of strides (torchaudio's _align_num_frames_with_strides).
  const int64_t stride = enc_kernel_size / 2, is_odd = enc_kernel_size % 2, frames = input.size(2);
  const int64_t remaining = frames - (is_odd + (frames - is_odd) / stride * stride);
  const int64_t pads = remaining == 0 ? 0 : stride - remaining;
  Tensor padded = pads ? fw::cat({input, fw::zeros({input.size(0), 1, pads}, input.options())}, 2) : input;
  const int64_t batch = padded.size(0), padded_frames = padded.size(2);
  Tensor feats = encoder->forward(padded);                                  // (B, F, M)
  Tensor masked = mask_generator->forward(feats) * feats.unsqueeze(1);      // (B, S, F, M)
  masked = masked.view({batch * num_sources, enc_num_feats, -1});
  Tensor out = decoder->forward(masked).view({batch, num_sources, padded_frames});
  return pads ? out.slice(2, 0, padded_frames - pads) : out;
}

ConvTasNet conv_tasnet_base(int64_t num_sources) { return ConvTasNet(num_sources, 16, 512, 3, 128, 512, 8, 3, "relu"); }

}  // namespace fw::audio::models

// ---- WaveRNN

namespace fw::audio::models {

Tensor Stretch2dImpl::forward(const Tensor& specgram) {
  return fw::repeat_interleave(fw::repeat_interleave(specgram, freq_scale, -2), time_scale, -1);
}

WaveRNNResBlockImpl::WaveRNNResBlockImpl(int64_t n_freq) : n_freq(n_freq) { reset(); }

void WaveRNNResBlockImpl::reset() {
  resblock_model = register_module(
      "resblock_model",
      nn::Sequential(nn::Conv1d(nn::Conv1dOptions(n_freq, n_freq, 1).bias(false)), nn::BatchNorm1d(n_freq),
                     nn::ReLU(nn::ReLUOptions(true)), nn::Conv1d(nn::Conv1dOptions(n_freq, n_freq, 1).bias(false)),
                     nn::BatchNorm1d(n_freq)));
}

Tensor WaveRNNResBlockImpl::forward(const Tensor& specgram) { return resblock_model->forward(specgram) + specgram; }

WaveRNNMelResNetImpl::WaveRNNMelResNetImpl(int64_t n_res_block, int64_t n_freq, int64_t n_hidden, int64_t n_output,
                                           int64_t kernel_size)
    : n_res_block(n_res_block), n_freq(n_freq), n_hidden(n_hidden), n_output(n_output), kernel_size(kernel_size) {
  reset();
}

void WaveRNNMelResNetImpl::reset() {
  nn::Sequential mel;
  mel->push_back(nn::Conv1d(nn::Conv1dOptions(n_freq, n_hidden, kernel_size).bias(false)));
  mel->push_back(nn::BatchNorm1d(n_hidden));
  mel->push_back(nn::ReLU(nn::ReLUOptions(true)));
  for (int64_t i = 0; i < n_res_block; i++) mel->push_back(WaveRNNResBlock(n_hidden));
  mel->push_back(nn::Conv1d(nn::Conv1dOptions(n_hidden, n_output, 1)));
  melresnet_model = register_module("melresnet_model", mel);
}

Tensor WaveRNNMelResNetImpl::forward(const Tensor& specgram) { return melresnet_model->forward(specgram); }

WaveRNNUpsampleNetworkImpl::WaveRNNUpsampleNetworkImpl(std::vector<int64_t> upsample_scales, int64_t n_res_block,
                                                       int64_t n_freq, int64_t n_hidden, int64_t n_output,
                                                       int64_t kernel_size)
    : upsample_scales(std::move(upsample_scales)),
      n_res_block(n_res_block),
      n_freq(n_freq),
      n_hidden(n_hidden),
      n_output(n_output),
      kernel_size(kernel_size) {
  for (int64_t s : this->upsample_scales)
    FW_CHECK(s > 0, "[audio::models::WaveRNN] upsample_scales must be positive, got ", s);
  FW_CHECK(kernel_size > 0 && n_res_block >= 0, "[audio::models::WaveRNN] kernel_size must be positive and "
           "n_res_block non-negative, got ", kernel_size, " and ", n_res_block);
  reset();
}

void WaveRNNUpsampleNetworkImpl::reset() {
  total_scale = 1;
  for (int64_t s : upsample_scales) total_scale *= s;
  indent = (kernel_size - 1) / 2 * total_scale;
  resnet = register_module("resnet", WaveRNNMelResNet(n_res_block, n_freq, n_hidden, n_output, kernel_size));
  resnet_stretch = register_module("resnet_stretch", Stretch2d(total_scale, 1));
  nn::Sequential up;
  for (int64_t s : upsample_scales) {
    up->push_back(Stretch2d(s, 1));
    nn::Conv2d conv(nn::Conv2dOptions(1, 1, {1, 2 * s + 1}).padding({0, s}).bias(false));
    fw::NoGradGuard no_grad;
    conv->weight.fill_(1.0 / double(2 * s + 1));
    up->push_back(conv);
  }
  upsample_layers = register_module("upsample_layers", up);
}

std::tuple<Tensor, Tensor> WaveRNNUpsampleNetworkImpl::forward(const Tensor& specgram) {
  FW_CHECK(specgram.dim() == 3 && specgram.size(1) == n_freq, "[audio::models::WaveRNN] specgram must be (B, ",
           n_freq, ", frames), got ", specgram.sizes());
  FW_CHECK(specgram.size(2) >= kernel_size, "[audio::models::WaveRNN] specgram has ", specgram.size(2),
           " frames, fewer than kernel_size ", kernel_size);
  Tensor res = resnet_stretch->forward(resnet->forward(specgram).unsqueeze(1)).squeeze(1);
  Tensor up = upsample_layers->forward(specgram.unsqueeze(1)).squeeze(1);
  up = up.slice(2, indent, up.size(2) - indent);
  return {up, res};
}

WaveRNNImpl::WaveRNNImpl(std::vector<int64_t> upsample_scales, int64_t n_classes, int64_t hop_length,
                         int64_t n_res_block, int64_t n_rnn, int64_t n_fc, int64_t kernel_size, int64_t n_freq,
                         int64_t n_hidden, int64_t n_output)
    : upsample_scales(std::move(upsample_scales)),
      n_classes(n_classes),
      hop_length(hop_length),
      n_res_block(n_res_block),
      n_rnn(n_rnn),
      n_fc(n_fc),
      kernel_size(kernel_size),
      n_freq(n_freq),
      n_hidden(n_hidden),
      n_output(n_output),
      n_aux(n_output / 4),
      n_bits(n_classes > 0 ? int64_t(std::log2(double(n_classes))) : 0) {
  int64_t total = 1;
  for (int64_t s : this->upsample_scales) total *= s;
  FW_CHECK(total == hop_length, "[audio::models::WaveRNN] Expected: total_scale == hop_length, but found ", total,
           " != ", hop_length);
  FW_CHECK(n_classes >= 2, "[audio::models::WaveRNN] n_classes must be at least 2, got ", n_classes);
  reset();
}

void WaveRNNImpl::reset() {
  upsample = register_module("upsample", WaveRNNUpsampleNetwork(upsample_scales, n_res_block, n_freq, n_hidden,
                                                                n_output, kernel_size));
  fc = register_module("fc", nn::Linear(n_freq + n_aux + 1, n_rnn));
  rnn1 = register_module("rnn1", nn::GRU(nn::GRUOptions(n_rnn, n_rnn).batch_first(true)));
  rnn2 = register_module("rnn2", nn::GRU(nn::GRUOptions(n_rnn + n_aux, n_rnn).batch_first(true)));
  fc1 = register_module("fc1", nn::Linear(n_rnn + n_aux, n_fc));
  fc2 = register_module("fc2", nn::Linear(n_fc + n_aux, n_fc));
  fc3 = register_module("fc3", nn::Linear(n_fc, n_classes));
}

Tensor WaveRNNImpl::forward(const Tensor& waveform, const Tensor& specgram) {
  const char* op = "[audio::models::WaveRNN]";
  FW_CHECK(waveform.dim() == 3 && waveform.size(1) == 1, op, " Require the input channel of waveform is 1 "
           "(waveform (B, 1, time)), got ", waveform.sizes());
  FW_CHECK(specgram.dim() == 4 && specgram.size(1) == 1, op, " Require the input channel of specgram is 1 "
           "(specgram (B, 1, n_freq, frames)), got ", specgram.sizes());
  Tensor w = waveform.squeeze(1);
  auto [spec, aux] = upsample->forward(specgram.squeeze(1));
  spec = spec.transpose(1, 2);
  aux = aux.transpose(1, 2);
  FW_CHECK(spec.size(1) == w.size(1), op, " waveform has ", w.size(1), " samples but the upsampled specgram has ",
           spec.size(1), " (frames - kernel_size + 1) * hop_length");
  auto a = [&](int64_t i) { return aux.slice(2, n_aux * i, n_aux * (i + 1)); };
  Tensor x = fc->forward(fw::cat({w.unsqueeze(-1), spec, a(0)}, -1));
  Tensor res = x;
  x = std::get<0>(rnn1->forward(x)) + res;
  res = x;
  x = std::get<0>(rnn2->forward(fw::cat({x, a(1)}, -1))) + res;
  x = fw::relu(fc1->forward(fw::cat({x, a(2)}, -1)));
  x = fw::relu(fc2->forward(fw::cat({x, a(3)}, -1)));
  return fc3->forward(x).unsqueeze(1);
}

std::tuple<Tensor, Tensor> WaveRNNImpl::infer(const Tensor& specgram, const Tensor& lengths,
                                              std::optional<Generator> generator) {
  FW_CHECK(specgram.dim() == 3 && specgram.size(1) == n_freq, "[audio::models::WaveRNN] infer takes specgram (B, ",
           n_freq, ", frames), got ", specgram.sizes());
  const int64_t pad = (kernel_size % 2 ? kernel_size - 1 : kernel_size) / 2;
  auto [spec, aux] = upsample->forward(fw::constant_pad_nd(specgram, {pad, pad}));
  Tensor out_lengths = lengths.defined() ? lengths * upsample->total_scale : Tensor();
  const int64_t B = spec.size(0), steps = spec.size(2);
  Tensor h1 = fw::zeros({1, B, n_rnn}, spec.options()), h2 = fw::zeros({1, B, n_rnn}, spec.options());
  Tensor x = fw::zeros({B, 1}, spec.options());
  std::vector<Tensor> output;
  output.reserve(size_t(steps));
  const double levels = std::pow(2.0, double(n_bits)) - 1.0;
  for (int64_t i = 0; i < steps; i++) {
    Tensor m_t = spec.select(2, i);
    auto a_t = [&](int64_t k) { return aux.slice(1, n_aux * k, n_aux * (k + 1)).select(2, i); };
    x = fc->forward(fw::cat({x, m_t, a_t(0)}, 1));
    h1 = std::get<1>(rnn1->forward(x.unsqueeze(1), h1));
    x = x + h1[0];
    h2 = std::get<1>(rnn2->forward(fw::cat({x, a_t(1)}, 1).unsqueeze(1), h2));
    x = x + h2[0];
    x = fw::relu(fc1->forward(fw::cat({x, a_t(2)}, 1)));
    x = fw::relu(fc2->forward(fw::cat({x, a_t(3)}, 1)));
    Tensor posterior = fw::softmax(fc3->forward(x), 1);
    x = fw::multinomial(posterior, 1, false, generator).to(spec.dtype());
    x = 2 * x / levels - 1.0;
    output.push_back(x);
  }
  Tensor wave = output.empty() ? fw::zeros({B, 1, 0}, spec.options()) : fw::stack(output).permute({1, 2, 0});
  return {wave, out_lengths};
}

}  // namespace fw::audio::models
