// torchaudio.models.Tacotron2 (see fw/audio/tacotron2.h). The module tree, and with it every
// state_dict name and shape, is torchaudio's; tests/audio/test_tacotron2.cpp checks names, outputs
// of forward and infer, and training against torchaudio.
#include "fw/audio/tacotron2.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "fw/fw.h"

namespace fw::audio::models {

namespace {

namespace F = nn::functional;

// torchaudio's _get_linear_layer / _get_conv1d_layer: default construction, then the weight
// re-drawn by xavier_uniform_ with the gain of `gain`.
nn::Linear xavier_linear(int64_t in, int64_t out, bool bias, double gain) {
  nn::Linear l(nn::LinearOptions(in, out).bias(bias));
  nn::init::xavier_uniform_(l->weight, gain);
  return l;
}
nn::Conv1d xavier_conv(int64_t in, int64_t out, int64_t k, bool bias, double gain) {
  nn::Conv1d c(nn::Conv1dOptions(in, out, k).padding((k - 1) / 2).bias(bias));
  nn::init::xavier_uniform_(c->weight, gain);
  return c;
}
const double kGainTanh = 5.0 / 3.0;
const double kGainRelu = std::sqrt(2.0);

// Sequential(conv, BatchNorm1d): the encoder's and postnet's layers.
nn::Sequential conv_bn(int64_t in, int64_t out, int64_t k, double gain) {
  return nn::Sequential(xavier_conv(in, out, k, true, gain), nn::BatchNorm1d(out));
}

void check_odd(const char* what, int64_t k) {
  FW_CHECK(k > 0 && k % 2 == 1, "[Tacotron2] ", what, " must be a positive odd number (same-length convolutions), got ",
           k);
}

// "int64 [2, 3]" (or "undefined") for error messages.
std::string describe(const Tensor& t) {
  if (!t.defined()) return "undefined";
  std::ostringstream os;
  os << dtype_str(t.scalar_type()) << " " << t.sizes();
  return os.str();
}

// True at the padded positions: (B, width), position t of row b padded when t >= lengths[b].
Tensor padding_mask(const Tensor& lengths, int64_t width) {
  return fw::arange(width, TensorOptions(kLong)).unsqueeze(0) >= lengths.to(kLong).unsqueeze(1);
}

// lengths: 1-D integer, one per batch row, each in [1, max_len].
void check_lengths(const char* op, const char* name, const Tensor& lengths, int64_t batch, int64_t max_len) {
  FW_CHECK(lengths.defined() && lengths.dim() == 1 && lengths.size(0) == batch && !lengths.is_floating_point() &&
               !lengths.is_complex() && lengths.scalar_type() != kBool,
           "[", op, "] ", name, " must be a 1-D integer tensor of ", batch, " lengths, got ", describe(lengths));
  if (batch == 0) return;
  const int64_t lo = lengths.min().item<int64_t>(), hi = lengths.max().item<int64_t>();
  FW_CHECK(lo >= 1 && hi <= max_len, "[", op, "] ", name, " must lie in [1, ", max_len, "], got values from ", lo,
           " to ", hi);
}

}  // namespace

namespace detail {

// ---- _Prenet

Tacotron2PrenetImpl::Tacotron2PrenetImpl(int64_t in_dim, std::vector<int64_t> out_sizes, double dropout)
    : in_dim(in_dim), out_sizes(std::move(out_sizes)), dropout(dropout) {
  FW_CHECK(dropout >= 0 && dropout <= 1, "[Tacotron2] prenet dropout must be in [0, 1], got ", dropout);
  reset();
}

void Tacotron2PrenetImpl::reset() {
  layers = register_module("layers", nn::ModuleList());
  int64_t in = in_dim;
  for (int64_t out : out_sizes) {
    layers->push_back(xavier_linear(in, out, false, 1.0));
    in = out;
  }
}

Tensor Tacotron2PrenetImpl::forward(const Tensor& x) {
  Tensor y = x;
  for (size_t i = 0; i < layers->size(); i++)
    y = F::dropout(fw::relu(layers[i]->as<nn::Linear>()->forward(y)), F::DropoutFuncOptions().p(dropout).training(true));
  return y;
}

// ---- _LocationLayer

Tacotron2LocationLayerImpl::Tacotron2LocationLayerImpl(int64_t n_filter, int64_t kernel_size, int64_t hidden_dim)
    : n_filter(n_filter), kernel_size(kernel_size), hidden_dim(hidden_dim) {
  check_odd("attention_location_kernel_size", kernel_size);
  reset();
}

void Tacotron2LocationLayerImpl::reset() {
  location_conv = register_module("location_conv", xavier_conv(2, n_filter, kernel_size, false, 1.0));
  location_dense = register_module("location_dense", xavier_linear(n_filter, hidden_dim, false, kGainTanh));
}

Tensor Tacotron2LocationLayerImpl::forward(const Tensor& weights_cat) {
  return location_dense(location_conv(weights_cat).transpose(1, 2));
}

// ---- _Attention

Tacotron2AttentionImpl::Tacotron2AttentionImpl(int64_t attention_rnn_dim, int64_t encoder_embedding_dim,
                                               int64_t attention_hidden_dim, int64_t location_n_filter,
                                               int64_t location_kernel_size)
    : attention_rnn_dim(attention_rnn_dim),
      encoder_embedding_dim(encoder_embedding_dim),
      attention_hidden_dim(attention_hidden_dim),
      location_n_filter(location_n_filter),
      location_kernel_size(location_kernel_size) {
  reset();
}

void Tacotron2AttentionImpl::reset() {
  query_layer = register_module("query_layer", xavier_linear(attention_rnn_dim, attention_hidden_dim, false, kGainTanh));
  memory_layer =
      register_module("memory_layer", xavier_linear(encoder_embedding_dim, attention_hidden_dim, false, kGainTanh));
  v = register_module("v", xavier_linear(attention_hidden_dim, 1, false, 1.0));
  location_layer = register_module(
      "location_layer", Tacotron2LocationLayer(location_n_filter, location_kernel_size, attention_hidden_dim));
}

std::tuple<Tensor, Tensor> Tacotron2AttentionImpl::forward(const Tensor& query, const Tensor& memory,
                                                           const Tensor& processed_memory, const Tensor& weights_cat,
                                                           const Tensor& mask) {
  Tensor pq = query_layer(query.unsqueeze(1));                                  // (B, 1, H)
  Tensor pa = location_layer(weights_cat);                                       // (B, L, H)
  Tensor energies = v(fw::tanh(pq + pa + processed_memory)).squeeze(2);         // (B, L)
  energies = energies.masked_fill(mask, -std::numeric_limits<double>::infinity());
  Tensor weights = fw::softmax(energies, 1);
  Tensor context = fw::bmm(weights.unsqueeze(1), memory).squeeze(1);            // (B, enc)
  return {context, weights};
}

// ---- _Encoder

Tacotron2EncoderImpl::Tacotron2EncoderImpl(int64_t embedding_dim, int64_t n_convolution, int64_t kernel_size)
    : embedding_dim(embedding_dim), n_convolution(n_convolution), kernel_size(kernel_size) {
  FW_CHECK(embedding_dim >= 2 && embedding_dim % 2 == 0,
           "[Tacotron2] encoder_embedding_dim must be even (the BLSTM has half of it per direction), got ",
           embedding_dim);
  FW_CHECK(n_convolution >= 0, "[Tacotron2] encoder_n_convolution must be non-negative, got ", n_convolution);
  check_odd("encoder_kernel_size", kernel_size);
  reset();
}

void Tacotron2EncoderImpl::reset() {
  convolutions = register_module("convolutions", nn::ModuleList());
  for (int64_t i = 0; i < n_convolution; i++)
    convolutions->push_back(conv_bn(embedding_dim, embedding_dim, kernel_size, kGainRelu));
  lstm = register_module("lstm", nn::LSTM(nn::LSTMOptions(embedding_dim, embedding_dim / 2)
                                              .num_layers(1)
                                              .batch_first(true)
                                              .bidirectional(true)));
}

Tensor Tacotron2EncoderImpl::forward(const Tensor& x, const Tensor& lengths) {
  FW_CHECK(x.dim() == 3 && x.size(1) == embedding_dim, "[Tacotron2] the encoder expects (batch, ", embedding_dim,
           ", time), got ", x.sizes());
  check_lengths("Tacotron2", "the token lengths", lengths, x.size(0), x.size(2));
  Tensor y = x;
  for (size_t i = 0; i < convolutions->size(); i++)
    y = F::dropout(fw::relu(convolutions[i]->as<nn::Sequential>()->forward(y)),
                   F::DropoutFuncOptions().p(0.5).training(is_training()));
  // Each sequence runs over its own steps only (torchaudio packs; it also requires the lengths
  // sorted, which fw does not).
  auto packed = nn::utils::rnn::pack_padded_sequence(y.transpose(1, 2), lengths.to(kLong), true, false);
  auto out = std::get<0>(lstm->forward_with_packed_input(packed));
  return std::get<0>(nn::utils::rnn::pad_packed_sequence(out, true));
}

// ---- _Postnet

Tacotron2PostnetImpl::Tacotron2PostnetImpl(int64_t n_mels, int64_t embedding_dim, int64_t kernel_size,
                                           int64_t n_convolution)
    : n_mels(n_mels), embedding_dim(embedding_dim), kernel_size(kernel_size), n_convolution(n_convolution) {
  FW_CHECK(n_convolution >= 1, "[Tacotron2] postnet_n_convolution must be at least 1, got ", n_convolution);
  check_odd("postnet_kernel_size", kernel_size);
  reset();
}

void Tacotron2PostnetImpl::reset() {
  convolutions = register_module("convolutions", nn::ModuleList());
  for (int64_t i = 0; i < n_convolution; i++) {
    const bool last = i == n_convolution - 1;
    convolutions->push_back(
        conv_bn(i == 0 ? n_mels : embedding_dim, last ? n_mels : embedding_dim, kernel_size, last ? 1.0 : kGainTanh));
  }
}

Tensor Tacotron2PostnetImpl::forward(const Tensor& x) {
  FW_CHECK(x.dim() == 3 && x.size(1) == n_mels, "[Tacotron2] the postnet expects (batch, ", n_mels, ", time), got ",
           x.sizes());
  Tensor y = x;
  for (size_t i = 0; i < convolutions->size(); i++) {
    y = convolutions[i]->as<nn::Sequential>()->forward(y);
    if (int64_t(i) + 1 < n_convolution) y = fw::tanh(y);
    y = F::dropout(y, F::DropoutFuncOptions().p(0.5).training(is_training()));
  }
  return y;
}

// ---- _Decoder

struct Tacotron2DecoderImpl::State {
  Tensor attention_hidden, attention_cell, decoder_hidden, decoder_cell;
  Tensor attention_weights, attention_weights_cum, attention_context, processed_memory;
};

Tacotron2DecoderImpl::Tacotron2DecoderImpl(const Tacotron2Options& options) : options(options) {
  const auto& o = options;
  FW_CHECK(o.n_mels() > 0 && o.n_frames_per_step() > 0 && o.encoder_embedding_dim() > 0 && o.decoder_rnn_dim() > 0 &&
               o.attention_rnn_dim() > 0 && o.attention_hidden_dim() > 0 && o.attention_location_n_filter() > 0 &&
               o.prenet_dim() > 0,
           "[Tacotron2] n_mels (", o.n_mels(), "), n_frames_per_step (", o.n_frames_per_step(),
           "), encoder_embedding_dim (", o.encoder_embedding_dim(), "), decoder_rnn_dim (", o.decoder_rnn_dim(),
           "), attention_rnn_dim (", o.attention_rnn_dim(), "), attention_hidden_dim (", o.attention_hidden_dim(),
           "), attention_location_n_filter (", o.attention_location_n_filter(), ") and prenet_dim (", o.prenet_dim(),
           ") must be positive");
  FW_CHECK(o.decoder_max_step() > 0, "[Tacotron2] decoder_max_step must be positive, got ", o.decoder_max_step());
  FW_CHECK(o.decoder_dropout() >= 0 && o.decoder_dropout() <= 1 && o.attention_dropout() >= 0 &&
               o.attention_dropout() <= 1,
           "[Tacotron2] decoder_dropout (", o.decoder_dropout(), ") and attention_dropout (", o.attention_dropout(),
           ") must be in [0, 1]");
  reset();
}

void Tacotron2DecoderImpl::reset() {
  const auto& o = options;
  const int64_t frame = o.n_mels() * o.n_frames_per_step(), enc = o.encoder_embedding_dim();
  prenet = register_module("prenet", Tacotron2Prenet(frame, std::vector<int64_t>{o.prenet_dim(), o.prenet_dim()},
                                                     o.prenet_dropout()));
  attention_rnn = register_module("attention_rnn", nn::LSTMCell(o.prenet_dim() + enc, o.attention_rnn_dim()));
  attention_layer = register_module(
      "attention_layer", Tacotron2Attention(o.attention_rnn_dim(), enc, o.attention_hidden_dim(),
                                            o.attention_location_n_filter(), o.attention_location_kernel_size()));
  decoder_rnn = register_module("decoder_rnn", nn::LSTMCell(o.attention_rnn_dim() + enc, o.decoder_rnn_dim()));
  linear_projection = register_module("linear_projection", xavier_linear(o.decoder_rnn_dim() + enc, frame, true, 1.0));
  gate_layer = register_module("gate_layer", xavier_linear(o.decoder_rnn_dim() + enc, 1, true, 1.0));
}

Tacotron2DecoderImpl::State Tacotron2DecoderImpl::initial_state(const Tensor& memory) {
  const int64_t B = memory.size(0), L = memory.size(1);
  auto opts = memory.options();
  State s;
  s.attention_hidden = fw::zeros({B, options.attention_rnn_dim()}, opts);
  s.attention_cell = fw::zeros({B, options.attention_rnn_dim()}, opts);
  s.decoder_hidden = fw::zeros({B, options.decoder_rnn_dim()}, opts);
  s.decoder_cell = fw::zeros({B, options.decoder_rnn_dim()}, opts);
  s.attention_weights = fw::zeros({B, L}, opts);
  s.attention_weights_cum = fw::zeros({B, L}, opts);
  s.attention_context = fw::zeros({B, options.encoder_embedding_dim()}, opts);
  s.processed_memory = attention_layer->memory_layer(memory);
  return s;
}

// One decoder step (torchaudio's _Decoder.decode): returns (frame (B, n_mels * n), gate (B, 1)).
std::tuple<Tensor, Tensor> Tacotron2DecoderImpl::step(const Tensor& prenet_out, State& s, const Tensor& memory,
                                                      const Tensor& mask) {
  const bool train = is_training();
  auto [ah, ac] = attention_rnn(fw::cat({prenet_out, s.attention_context}, -1),
                                std::make_tuple(s.attention_hidden, s.attention_cell));
  s.attention_cell = ac;
  s.attention_hidden = F::dropout(ah, F::DropoutFuncOptions().p(options.attention_dropout()).training(train));
  Tensor cat = fw::cat({s.attention_weights.unsqueeze(1), s.attention_weights_cum.unsqueeze(1)}, 1);
  auto [context, weights] = attention_layer(s.attention_hidden, memory, s.processed_memory, cat, mask);
  s.attention_weights = weights;
  s.attention_weights_cum = s.attention_weights_cum + weights;
  s.attention_context = context;
  auto [dh, dc] = decoder_rnn(fw::cat({s.attention_hidden, context}, -1),
                              std::make_tuple(s.decoder_hidden, s.decoder_cell));
  s.decoder_cell = dc;
  s.decoder_hidden = F::dropout(dh, F::DropoutFuncOptions().p(options.decoder_dropout()).training(train));
  Tensor hc = fw::cat({s.decoder_hidden, context}, 1);
  return {linear_projection(hc), gate_layer(hc)};
}

namespace {

void check_memory(const Tensor& memory, const Tensor& lengths, int64_t enc) {
  FW_CHECK(memory.dim() == 3 && memory.size(2) == enc && memory.size(1) > 0 && memory.is_floating_point(),
           "[Tacotron2] the decoder expects encoder outputs (batch, time >= 1, ", enc, ") of a floating dtype, got ",
           describe(memory));
  check_lengths("Tacotron2", "the memory lengths", lengths, memory.size(0), memory.size(1));
}

// Decoder outputs per step (steps, B, n * n_mels) -> (B, n_mels, steps * n).
Tensor frames_to_mel(const Tensor& steps, int64_t n_mels) {
  return steps.transpose(0, 1).reshape({steps.size(1), -1, n_mels}).transpose(1, 2);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> Tacotron2DecoderImpl::forward(const Tensor& memory, const Tensor& mel_specgram_truth,
                                                                 const Tensor& memory_lengths) {
  const int64_t n = options.n_frames_per_step(), n_mels = options.n_mels();
  check_memory(memory, memory_lengths, options.encoder_embedding_dim());
  const Tensor& target = mel_specgram_truth;
  FW_CHECK(target.dim() == 3 && target.size(0) == memory.size(0) && target.size(1) == n_mels && target.size(2) > 0 &&
               target.size(2) % n == 0,
           "[Tacotron2] the target mel spectrogram must be (", memory.size(0), ", ", n_mels,
           ", frames) with a positive multiple of n_frames_per_step (", n, ") frames, got ", target.sizes());
  const int64_t B = memory.size(0), steps = target.size(2) / n;
  // Teacher forcing: step t reads frame group t - 1 of the target (an all-zero frame first).
  Tensor inputs = target.to(memory.scalar_type()).transpose(1, 2).reshape({B, steps, n * n_mels}).transpose(0, 1);
  inputs = fw::cat({fw::zeros({1, B, n * n_mels}, memory.options()), inputs.narrow(0, 0, steps - 1)}, 0);
  inputs = prenet(inputs);
  Tensor mask = padding_mask(memory_lengths, memory.size(1));
  State s = initial_state(memory);
  std::vector<Tensor> mels, gates, aligns;
  for (int64_t t = 0; t < steps; t++) {
    auto [mel, gate] = step(inputs[t], s, memory, mask);
    mels.push_back(mel);
    gates.push_back(gate.squeeze(1));
    aligns.push_back(s.attention_weights);
  }
  return {frames_to_mel(fw::stack(mels), n_mels), fw::stack(gates, 1), fw::stack(aligns, 1)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> Tacotron2DecoderImpl::infer(const Tensor& memory,
                                                                       const Tensor& memory_lengths) {
  const int64_t n = options.n_frames_per_step(), n_mels = options.n_mels(), B = memory.size(0);
  check_memory(memory, memory_lengths, options.encoder_embedding_dim());
  Tensor mask = padding_mask(memory_lengths, memory.size(1));
  State s = initial_state(memory);
  Tensor input = fw::zeros({B, n * n_mels}, memory.options());
  Tensor lengths = fw::zeros({B}, TensorOptions(kInt));
  Tensor finished = fw::zeros({B}, TensorOptions(kBool));
  std::vector<Tensor> mels, gates, aligns;
  for (int64_t t = 0; t < options.decoder_max_step(); t++) {
    auto [mel, gate] = step(prenet(input), s, memory, mask);
    mels.push_back(mel);
    gates.push_back(gate.squeeze(1));
    aligns.push_back(s.attention_weights);
    lengths = lengths + finished.logical_not().to(kInt);
    finished = finished.logical_or(fw::sigmoid(gate.squeeze(1)) > options.gate_threshold());
    if (options.decoder_early_stopping() && finished.all().item<bool>()) break;
    input = mel;
  }
  if (int64_t(mels.size()) == options.decoder_max_step())
    // Once per process, as Python shows torchaudio's warnings.warn by default.
    TORCH_WARN_ONCE("[Tacotron2] Reached max decoder steps (", options.decoder_max_step(),
               "). The generated spectrogram might not cover the whole transcript.");
  return {frames_to_mel(fw::stack(mels), n_mels), lengths, fw::stack(gates, 1), fw::stack(aligns, 1)};
}

}  // namespace detail

// ---- Tacotron2

Tacotron2Impl::Tacotron2Impl(const Tacotron2Options& options) : options(options) {
  FW_CHECK(options.n_symbol() > 0, "[Tacotron2] n_symbol must be positive, got ", options.n_symbol());
  FW_CHECK(options.symbol_embedding_dim() == options.encoder_embedding_dim(),
           "[Tacotron2] symbol_embedding_dim (", options.symbol_embedding_dim(),
           ") must equal encoder_embedding_dim (", options.encoder_embedding_dim(),
           "): the encoder's convolutions read the token embeddings");
  FW_CHECK(options.postnet_embedding_dim() > 0, "[Tacotron2] postnet_embedding_dim must be positive, got ",
           options.postnet_embedding_dim());
  reset();
}

void Tacotron2Impl::reset() {
  const auto& o = options;
  embedding = register_module("embedding", nn::Embedding(o.n_symbol(), o.symbol_embedding_dim()));
  nn::init::xavier_uniform_(embedding->weight);
  encoder = register_module(
      "encoder", detail::Tacotron2Encoder(o.encoder_embedding_dim(), o.encoder_n_convolution(), o.encoder_kernel_size()));
  decoder = register_module("decoder", detail::Tacotron2Decoder(o));
  postnet = register_module("postnet", detail::Tacotron2Postnet(o.n_mels(), o.postnet_embedding_dim(),
                                                                o.postnet_kernel_size(), o.postnet_n_convolution()));
}

namespace {

void check_tokens(const Tensor& tokens, int64_t n_symbol) {
  FW_CHECK(tokens.defined() && tokens.dim() == 2 && tokens.size(1) > 0 && !tokens.is_floating_point() &&
               !tokens.is_complex() && tokens.scalar_type() != kBool,
           "[Tacotron2] tokens must be a (batch, length >= 1) integer tensor, got ", describe(tokens));
  if (tokens.numel() == 0) return;
  const int64_t lo = tokens.min().item<int64_t>(), hi = tokens.max().item<int64_t>();
  FW_CHECK(lo >= 0 && hi < n_symbol, "[Tacotron2] tokens must lie in [0, n_symbol = ", n_symbol, "), got values from ",
           lo, " to ", hi);
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor, Tensor> Tacotron2Impl::forward(const Tensor& tokens, const Tensor& token_lengths,
                                                                  const Tensor& mel_specgram,
                                                                  const Tensor& mel_specgram_lengths) {
  check_tokens(tokens, options.n_symbol());
  Tensor memory = encoder(embedding(tokens.to(kLong)).transpose(1, 2), token_lengths);
  auto [mel, gate, alignments] = decoder(memory, mel_specgram, token_lengths);
  Tensor post = mel + postnet(mel);
  if (options.mask_padding()) {
    const int64_t frames = mel.size(2);
    check_lengths("Tacotron2", "mel_specgram_lengths", mel_specgram_lengths, tokens.size(0), frames);
    Tensor pad = padding_mask(mel_specgram_lengths, frames);  // (B, frames)
    mel = mel.masked_fill(pad.unsqueeze(1), 0.0);
    post = post.masked_fill(pad.unsqueeze(1), 0.0);
    // A step is padding when its first frame is.
    gate = gate.masked_fill(pad.slice(1, 0, frames, options.n_frames_per_step()), 1e3);
  }
  return {mel, post, gate, alignments};
}

std::tuple<Tensor, Tensor, Tensor> Tacotron2Impl::infer(const Tensor& tokens, const std::optional<Tensor>& lengths) {
  check_tokens(tokens, options.n_symbol());
  Tensor len = lengths ? *lengths : fw::full({tokens.size(0)}, tokens.size(1), TensorOptions(kLong));
  Tensor memory = encoder(embedding(tokens.to(kLong)).transpose(1, 2), len);
  auto [mel, mel_lengths, gate, alignments] = decoder->infer(memory, len);
  Tensor post = mel + postnet(mel);
  if (options.n_frames_per_step() > 1) mel_lengths = mel_lengths * int(options.n_frames_per_step());
  return {post, mel_lengths, alignments};
}

}  // namespace fw::audio::models
