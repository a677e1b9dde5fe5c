// torchaudio.models' Tacotron2 text-to-spectrogram model (Shen et al., 2018) as fw Modules, with
// torchaudio 0.13's constructor arguments, forward / infer semantics and state_dict names, so a
// trained torchaudio state_dict loads unchanged:
//   namespace M = fw::audio::models;
//   M::Tacotron2 model(M::Tacotron2Options().n_symbol(38));
//   fw::load(*model, "tacotron2.pt");                  // torch.save(model.state_dict(), ...)
//   model->eval();
//   auto [mel, mel_lengths, alignments] = model->infer(tokens, lengths);   // (B, n_mels, frames)
//   // training (teacher forcing): mel, mel_postnet, gate logits, alignments
//   auto [m, mp, gate, align] = model(tokens, token_lengths, mel_target, mel_lengths);
// As in torchaudio, the decoder's prenet drops half of its units in training and inference alike
// (Tacotron2's design: the randomness at inference improves the spectrogram); its probability is
// Tacotron2Options::prenet_dropout (an fw addition, default torchaudio's fixed 0.5), and the draws
// come from fw's generator (torch's stream differs). The other dropouts act in training only.
// Differences from torchaudio, on inputs torchaudio rejects: token lengths need not be sorted
// (torchaudio's encoder packs with enforce_sorted), teacher forcing accepts n_frames_per_step > 1
// (the target's frames grouped n at a time), and even kernel sizes, which make torchaudio's
// layers change the sequence length and fail later, are refused at construction.
#pragma once
#include <optional>
#include <tuple>

#include "fw/nn/module.h"
#include "fw/nn/modules.h"

namespace fw::audio::models {

// Tacotron2's constructor arguments, with torchaudio's defaults.
struct Tacotron2Options {
  FW_ARG(bool, mask_padding) = false;         // forward: zero the outputs past each target length
  FW_ARG(int64_t, n_mels) = 80;
  FW_ARG(int64_t, n_symbol) = 148;            // size of the token vocabulary
  FW_ARG(int64_t, n_frames_per_step) = 1;     // frames predicted per decoder step
  FW_ARG(int64_t, symbol_embedding_dim) = 512;  // must equal encoder_embedding_dim
  FW_ARG(int64_t, encoder_embedding_dim) = 512;
  FW_ARG(int64_t, encoder_n_convolution) = 3;
  FW_ARG(int64_t, encoder_kernel_size) = 5;
  FW_ARG(int64_t, decoder_rnn_dim) = 1024;
  FW_ARG(int64_t, decoder_max_step) = 2000;   // infer: at most this many decoder steps
  FW_ARG(double, decoder_dropout) = 0.1;      // on the decoder LSTM's output, training only
  FW_ARG(bool, decoder_early_stopping) = true;  // infer: stop once every sequence has ended
  FW_ARG(int64_t, attention_rnn_dim) = 1024;
  FW_ARG(int64_t, attention_hidden_dim) = 128;
  FW_ARG(int64_t, attention_location_n_filter) = 32;
  FW_ARG(int64_t, attention_location_kernel_size) = 31;
  FW_ARG(double, attention_dropout) = 0.1;    // on the attention LSTM's output, training only
  FW_ARG(int64_t, prenet_dim) = 256;
  FW_ARG(int64_t, postnet_n_convolution) = 5;
  FW_ARG(int64_t, postnet_kernel_size) = 5;
  FW_ARG(int64_t, postnet_embedding_dim) = 512;
  FW_ARG(double, gate_threshold) = 0.5;       // infer: a sequence ends when sigmoid(gate) exceeds it
  FW_ARG(double, prenet_dropout) = 0.5;       // fw addition: the prenet's dropout, always applied
};

namespace detail {

// torchaudio's _Prenet: "layers", Linear layers without bias; forward(x (..., in_dim)) applies
// relu and dropout(p) after each, in every mode.
class Tacotron2PrenetImpl : public nn::Cloneable<Tacotron2PrenetImpl> {
 public:
  Tacotron2PrenetImpl(int64_t in_dim, std::vector<int64_t> out_sizes, double dropout = 0.5);
  void reset() override;
  Tensor forward(const Tensor& x);
  int64_t in_dim;
  std::vector<int64_t> out_sizes;
  double dropout;
  nn::ModuleList layers{nullptr};
};
FW_MODULE(Tacotron2Prenet);

// torchaudio's _LocationLayer: "location_conv" (Conv1d(2, n_filter, kernel), no bias) and
// "location_dense" (Linear(n_filter, hidden), no bias); forward(weights_cat (B, 2, L)) -> (B, L, hidden).
class Tacotron2LocationLayerImpl : public nn::Cloneable<Tacotron2LocationLayerImpl> {
 public:
  Tacotron2LocationLayerImpl(int64_t n_filter, int64_t kernel_size, int64_t hidden_dim);
  void reset() override;
  Tensor forward(const Tensor& weights_cat);
  int64_t n_filter, kernel_size, hidden_dim;
  nn::Conv1d location_conv{nullptr};
  nn::Linear location_dense{nullptr};
};
FW_MODULE(Tacotron2LocationLayer);

// torchaudio's _Attention (location-sensitive attention): "query_layer", "memory_layer", "v"
// (Linear, no bias) and "location_layer". forward(query
// (B, attention_rnn_dim), memory (B, L, enc), processed_memory (B, L, hidden), weights_cat
// (B, 2, L), mask (B, L) true at padding) -> (context (B, enc), weights (B, L)).
class Tacotron2AttentionImpl : public nn::Cloneable<Tacotron2AttentionImpl> {
 public:
  Tacotron2AttentionImpl(int64_t attention_rnn_dim, int64_t encoder_embedding_dim, int64_t attention_hidden_dim,
                         int64_t location_n_filter, int64_t location_kernel_size);
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& memory, const Tensor& processed_memory,
                                     const Tensor& weights_cat, const Tensor& mask);
  int64_t attention_rnn_dim, encoder_embedding_dim, attention_hidden_dim, location_n_filter, location_kernel_size;
  nn::Linear query_layer{nullptr}, memory_layer{nullptr}, v{nullptr};
  Tacotron2LocationLayer location_layer{nullptr};
};
FW_MODULE(Tacotron2Attention);

// torchaudio's _Encoder: "convolutions" (Sequential(Conv1d, BatchNorm1d) each, then relu and
// dropout 0.5 in training) and a bidirectional "lstm" over the valid steps of each sequence.
// forward(x (B, enc, T), lengths (B)) -> (B, max(lengths), enc), zero past each length.
class Tacotron2EncoderImpl : public nn::Cloneable<Tacotron2EncoderImpl> {
 public:
  Tacotron2EncoderImpl(int64_t embedding_dim, int64_t n_convolution, int64_t kernel_size);
  void reset() override;
  Tensor forward(const Tensor& x, const Tensor& lengths);
  int64_t embedding_dim, n_convolution, kernel_size;
  nn::ModuleList convolutions{nullptr};
  nn::LSTM lstm{nullptr};
};
FW_MODULE(Tacotron2Encoder);

// torchaudio's _Postnet: "convolutions" (Sequential(Conv1d, BatchNorm1d) each; tanh after all
// but the last; dropout 0.5 in training). forward(x (B, n_mels, T)) -> (B, n_mels, T).
class Tacotron2PostnetImpl : public nn::Cloneable<Tacotron2PostnetImpl> {
 public:
  Tacotron2PostnetImpl(int64_t n_mels, int64_t embedding_dim, int64_t kernel_size, int64_t n_convolution);
  void reset() override;
  Tensor forward(const Tensor& x);
  int64_t n_mels, embedding_dim, kernel_size, n_convolution;
  nn::ModuleList convolutions{nullptr};
};
FW_MODULE(Tacotron2Postnet);

// torchaudio's _Decoder: "prenet", "attention_rnn" (LSTMCell), "attention_layer",
// "decoder_rnn" (LSTMCell), "linear_projection", "gate_layer".
class Tacotron2DecoderImpl : public nn::Cloneable<Tacotron2DecoderImpl> {
 public:
  explicit Tacotron2DecoderImpl(const Tacotron2Options& options);
  void reset() override;
  // Teacher forcing: memory (B, L, enc), target (B, n_mels, T), memory_lengths (B) ->
  // (mel (B, n_mels, T), gate logits (B, T / n_frames_per_step), alignments (B, T / n, L)).
  std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& memory, const Tensor& mel_specgram_truth,
                                             const Tensor& memory_lengths);
  // Free running from an all-zero frame until every sequence's gate fires (or decoder_max_step):
  // (mel (B, n_mels, steps * n), lengths (B) int32 in steps, gate logits (B, steps), alignments
  // (B, steps, L)). A sequence's length counts its steps up to and including the one whose gate
  // fired; later steps still run (batched) and stay in the output.
  std::tuple<Tensor, Tensor, Tensor, Tensor> infer(const Tensor& memory, const Tensor& memory_lengths);
  Tacotron2Options options;
  Tacotron2Prenet prenet{nullptr};
  nn::LSTMCell attention_rnn{nullptr}, decoder_rnn{nullptr};
  Tacotron2Attention attention_layer{nullptr};
  nn::Linear linear_projection{nullptr}, gate_layer{nullptr};

 private:
  struct State;
  State initial_state(const Tensor& memory);
  std::tuple<Tensor, Tensor> step(const Tensor& prenet_out, State& s, const Tensor& memory, const Tensor& mask);
};
FW_MODULE(Tacotron2Decoder);

}  // namespace detail

// torchaudio.models.Tacotron2. Children "embedding", "encoder", "decoder", "postnet".
class Tacotron2Impl : public nn::Cloneable<Tacotron2Impl> {
 public:
  explicit Tacotron2Impl(const Tacotron2Options& options = {});
  void reset() override;
  // Teacher forcing (training): tokens (B, L) integer, zero-padded past token_lengths (B);
  // mel_specgram (B, n_mels, T) the target, mel_specgram_lengths (B). Returns the mel spectrogram
  // before and after the postnet (B, n_mels, T), the gate logits (B, T) and the alignments
  // (B, T, max token length). With mask_padding, outputs past each target length are 0 (gate: 1000).
  std::tuple<Tensor, Tensor, Tensor, Tensor> forward(const Tensor& tokens, const Tensor& token_lengths,
                                                     const Tensor& mel_specgram, const Tensor& mel_specgram_lengths);
  // Inference: tokens (B, L), lengths (B) (default: all L). Returns the mel spectrogram after the
  // postnet (B, n_mels, frames), each sequence's length in frames (int32) and the alignments
  // (B, frames / n_frames_per_step, max length).
  std::tuple<Tensor, Tensor, Tensor> infer(const Tensor& tokens, const std::optional<Tensor>& lengths = std::nullopt);
  Tacotron2Options options;
  nn::Embedding embedding{nullptr};
  detail::Tacotron2Encoder encoder{nullptr};
  detail::Tacotron2Decoder decoder{nullptr};
  detail::Tacotron2Postnet postnet{nullptr};
};
FW_MODULE(Tacotron2);

}  // namespace fw::audio::models
