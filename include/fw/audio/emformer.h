// torchaudio.models' streaming speech recognition models as fw Modules: Emformer (Shi et al.,
// 2021), the RNN transducer RNNT with its Emformer transcriber (emformer_rnnt_model,
// emformer_rnnt_base) and RNNTBeamSearch, with torchaudio 0.13's constructor arguments, forward /
// infer semantics and state_dict names:
//   namespace M = fw::audio::models;
//   M::RNNT model = M::emformer_rnnt_base(/*num_symbols=*/4097);
//   fw::load(*model, "emformer_rnnt.pt");                   // torch.save(model.state_dict(), ...)
//   auto [logits, src_len, tgt_len, state] = model(feats, feat_lengths, targets, target_lengths);
//   Tensor loss = fw::audio::functional::rnnt_loss(logits, targets.to(fw::kInt), src_len, tgt_len);
//   M::RNNTBeamSearch search(model, /*blank=*/4096);
//   auto hypos = search(features /* (T, 80) */, length, /*beam_width=*/10);   // best first
//   // streaming: one segment (segment_length + right_context_length frames) per call
//   auto [hyps, st] = search.infer(segment, seg_length, 10, state, hypo);
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "fw/nn/module.h"
#include "fw/nn/modules.h"

namespace fw::audio::models {

// A streaming state: one list of tensors per layer (torchaudio's List[List[Tensor]]). For an
// Emformer layer: memory (max_memory_size, B, D), left-context keys and values
// (left_context_length, B, D) and the frames processed so far (1, B) int32; for an LSTM layer of
// the RNNT predictor: h and c, (B, hidden).
using StreamState = std::vector<std::vector<Tensor>>;

namespace detail {

// Emformer's attention ("emb_to_key_value", "emb_to_query", "out_proj"). All tensors are
// time-major (T, B, D).
class EmformerAttentionImpl : public nn::Cloneable<EmformerAttentionImpl> {
 public:
  EmformerAttentionImpl(int64_t input_dim, int64_t num_heads, double dropout = 0.0,
                        std::optional<double> weight_init_gain = std::nullopt, bool tanh_on_mem = false,
                        double negative_inf = -1e8);
  void reset() override;
  // (output for right context and utterance, output memory without its last row).
  std::tuple<Tensor, Tensor> forward(const Tensor& utterance, const Tensor& lengths, const Tensor& right_context,
                                     const Tensor& summary, const Tensor& mems, const Tensor& attention_mask);
  // (output, output memory, keys and values to keep as left context).
  std::tuple<Tensor, Tensor, Tensor, Tensor> infer(const Tensor& utterance, const Tensor& lengths,
                                                   const Tensor& right_context, const Tensor& summary,
                                                   const Tensor& mems, const Tensor& left_context_key,
                                                   const Tensor& left_context_val);
  int64_t input_dim, num_heads;
  double dropout;
  std::optional<double> weight_init_gain;
  bool tanh_on_mem;
  double negative_inf;
  nn::Linear emb_to_key_value{nullptr}, emb_to_query{nullptr}, out_proj{nullptr};

 private:
  std::tuple<Tensor, Tensor, Tensor, Tensor> forward_impl(const Tensor& utterance, const Tensor& lengths,
                                                          const Tensor& right_context, const Tensor& summary,
                                                          const Tensor& mems, const Tensor& attention_mask,
                                                          const Tensor& left_context_key,
                                                          const Tensor& left_context_val);
};
FW_MODULE(EmformerAttention);

// One Emformer layer: "layer_norm_input", "attention", "dropout", "pos_ff" (LayerNorm, Linear,
// activation, Dropout, Linear, Dropout) and "layer_norm_output".
class EmformerLayerImpl : public nn::Cloneable<EmformerLayerImpl> {
 public:
  EmformerLayerImpl(int64_t input_dim, int64_t num_heads, int64_t ffn_dim, int64_t segment_length,
                    double dropout = 0.0, std::string activation = "relu", int64_t left_context_length = 0,
                    int64_t max_memory_size = 0, std::optional<double> weight_init_gain = std::nullopt,
                    bool tanh_on_mem = false, double negative_inf = -1e8);
  void reset() override;
  // (output utterance, output right context, output memory).
  std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& utterance, const Tensor& lengths,
                                             const Tensor& right_context, const Tensor& mems,
                                             const Tensor& attention_mask);
  // (output utterance, output right context, the layer's next state, output memory).
  std::tuple<Tensor, Tensor, std::vector<Tensor>, Tensor> infer(const Tensor& utterance, const Tensor& lengths,
                                                                const Tensor& right_context,
                                                                const std::vector<Tensor>* state, const Tensor& mems);
  int64_t input_dim, num_heads, ffn_dim, segment_length;
  double dropout;
  std::string activation;
  int64_t left_context_length, max_memory_size;
  std::optional<double> weight_init_gain;
  bool tanh_on_mem;
  double negative_inf;
  EmformerAttention attention{nullptr};
  nn::Dropout dropout_{nullptr};
  nn::Sequential pos_ff{nullptr};
  nn::LayerNorm layer_norm_input{nullptr}, layer_norm_output{nullptr};
};
FW_MODULE(EmformerLayer);

}  // namespace detail

// torchaudio.models.Emformer: "emformer_layers". forward(input (B, T, D), lengths (B,)) runs the
// whole utterance with block attention masks: T = utterance frames + right_context_length, lengths
// count the utterance frames; returns (output (B, T - right_context_length, D), lengths).
// infer(input (B, segment_length + right_context_length, D), lengths, states) runs one segment of a
// stream and returns (output (B, segment_length, D), lengths - right_context_length clamped at 0,
// the next states). weight_init_scale_strategy: "depthwise", "constant" or "" (none).
class EmformerImpl : public nn::Cloneable<EmformerImpl> {
 public:
  EmformerImpl(int64_t input_dim, int64_t num_heads, int64_t ffn_dim, int64_t num_layers, int64_t segment_length,
               double dropout = 0.0, std::string activation = "relu", int64_t left_context_length = 0,
               int64_t right_context_length = 0, int64_t max_memory_size = 0,
               std::string weight_init_scale_strategy = "depthwise", bool tanh_on_mem = false,
               double negative_inf = -1e8);
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& lengths);
  std::tuple<Tensor, Tensor, StreamState> infer(const Tensor& input, const Tensor& lengths,
                                                const std::optional<StreamState>& states = std::nullopt);
  int64_t input_dim, num_heads, ffn_dim, num_layers, segment_length;
  double dropout;
  std::string activation;
  int64_t left_context_length, right_context_length, max_memory_size;
  std::string weight_init_scale_strategy;
  bool tanh_on_mem;
  double negative_inf;
  nn::ModuleList emformer_layers{nullptr};
};
FW_MODULE(Emformer);

// The interface RNNT needs from its transcriber (torchaudio's _Transcriber): forward over whole
// utterances and infer over one streaming segment. Implement it on a Module to plug in another
// encoder.
class Transcriber {
 public:
  virtual ~Transcriber() = default;
  virtual std::tuple<Tensor, Tensor> transcribe(const Tensor& input, const Tensor& lengths) = 0;
  virtual std::tuple<Tensor, Tensor, StreamState> transcribe_infer(const Tensor& input, const Tensor& lengths,
                                                                   const std::optional<StreamState>& states) = 0;
};

// Options of emformer_rnnt_model (torchaudio's keyword arguments, same names).
struct EmformerRNNTOptions {
  FW_ARG(int64_t, input_dim) = 80;
  FW_ARG(int64_t, encoding_dim) = 1024;
  FW_ARG(int64_t, num_symbols) = 4097;
  FW_ARG(int64_t, segment_length) = 16;
  FW_ARG(int64_t, right_context_length) = 4;
  FW_ARG(int64_t, time_reduction_input_dim) = 128;
  FW_ARG(int64_t, time_reduction_stride) = 4;
  FW_ARG(int64_t, transformer_num_heads) = 8;
  FW_ARG(int64_t, transformer_ffn_dim) = 2048;
  FW_ARG(int64_t, transformer_num_layers) = 20;
  FW_ARG(double, transformer_dropout) = 0.1;
  FW_ARG(std::string, transformer_activation) = "gelu";
  FW_ARG(int64_t, transformer_left_context_length) = 30;
  FW_ARG(int64_t, transformer_max_memory_size) = 0;
  FW_ARG(std::string, transformer_weight_init_scale_strategy) = "depthwise";
  FW_ARG(bool, transformer_tanh_on_mem) = true;
  FW_ARG(int64_t, symbol_embedding_dim) = 512;
  FW_ARG(int64_t, num_lstm_layers) = 3;
  FW_ARG(bool, lstm_layer_norm) = true;
  FW_ARG(double, lstm_layer_norm_epsilon) = 1e-3;
  FW_ARG(double, lstm_dropout) = 0.3;
};

namespace detail {

// RNNT's transcriber: "input_linear" (no bias), time reduction (stacks time_reduction_stride frames),
// "transformer" (Emformer), "output_linear", "layer_norm". (B, T, input_dim) -> (B, T / stride,
// encoding_dim).
class EmformerEncoderImpl : public nn::Cloneable<EmformerEncoderImpl>, public Transcriber {
 public:
  explicit EmformerEncoderImpl(EmformerRNNTOptions options);
  void reset() override;
  std::tuple<Tensor, Tensor> forward(const Tensor& input, const Tensor& lengths);
  std::tuple<Tensor, Tensor, StreamState> infer(const Tensor& input, const Tensor& lengths,
                                                const std::optional<StreamState>& states);
  std::tuple<Tensor, Tensor> transcribe(const Tensor& input, const Tensor& lengths) override {
    return forward(input, lengths);
  }
  std::tuple<Tensor, Tensor, StreamState> transcribe_infer(const Tensor& input, const Tensor& lengths,
                                                           const std::optional<StreamState>& states) override {
    return infer(input, lengths, states);
  }
  EmformerRNNTOptions options;
  nn::Linear input_linear{nullptr}, output_linear{nullptr};
  Emformer transformer{nullptr};
  nn::LayerNorm layer_norm{nullptr};
};
FW_MODULE(EmformerEncoder);

// The predictor's LSTM layer (torchaudio's _CustomLSTM): "x2g" (bias only without layer norm),
// "p2g", and with layer_norm "c_norm" and "g_norm". (T, B, input) -> (T, B, hidden), [h, c].
class CustomLSTMImpl : public nn::Cloneable<CustomLSTMImpl> {
 public:
  CustomLSTMImpl(int64_t input_dim, int64_t hidden_dim, bool layer_norm = false, double layer_norm_epsilon = 1e-5);
  void reset() override;
  std::tuple<Tensor, std::vector<Tensor>> forward(const Tensor& input, const std::vector<Tensor>* state);
  int64_t input_dim, hidden_dim;
  bool layer_norm;
  double layer_norm_epsilon;
  nn::Linear x2g{nullptr}, p2g{nullptr};
  nn::LayerNorm c_norm{nullptr}, g_norm{nullptr};
};
FW_MODULE(CustomLSTM);

}  // namespace detail

// RNNT's prediction network: "embedding", "input_layer_norm", "lstm_layers", "dropout", "linear",
// "output_layer_norm". forward(targets (B, U) integer, lengths (B,), state) -> (encodings (B, U,
// output_dim), lengths, the LSTMs' next state).
class PredictorImpl : public nn::Cloneable<PredictorImpl> {
 public:
  PredictorImpl(int64_t num_symbols, int64_t output_dim, int64_t symbol_embedding_dim, int64_t num_lstm_layers,
                int64_t lstm_hidden_dim, bool lstm_layer_norm = false, double lstm_layer_norm_epsilon = 1e-5,
                double lstm_dropout = 0.0);
  void reset() override;
  std::tuple<Tensor, Tensor, StreamState> forward(const Tensor& input, const Tensor& lengths,
                                                  const std::optional<StreamState>& state = std::nullopt);
  int64_t num_symbols, output_dim, symbol_embedding_dim, num_lstm_layers, lstm_hidden_dim;
  bool lstm_layer_norm;
  double lstm_layer_norm_epsilon, lstm_dropout;
  nn::Embedding embedding{nullptr};
  nn::LayerNorm input_layer_norm{nullptr}, output_layer_norm{nullptr};
  nn::ModuleList lstm_layers{nullptr};
  nn::Dropout dropout{nullptr};
  nn::Linear linear{nullptr};
};
FW_MODULE(Predictor);

// RNNT's joint network: "linear" over activation(source (B, T, D)[:, :, None] + target (B, U,
// D)[:, None]); activation "relu" or "tanh". -> ((B, T, U, output_dim), source lengths, target
// lengths).
class JoinerImpl : public nn::Cloneable<JoinerImpl> {
 public:
  JoinerImpl(int64_t input_dim, int64_t output_dim, std::string activation = "relu");
  void reset() override;
  std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& source_encodings, const Tensor& source_lengths,
                                             const Tensor& target_encodings, const Tensor& target_lengths);
  int64_t input_dim, output_dim;
  std::string activation;
  nn::Linear linear{nullptr};
};
FW_MODULE(Joiner);

// torchaudio.models.RNNT: "transcriber", "predictor", "joiner". The transcriber is any Module
// implementing Transcriber (emformer_rnnt_model builds an EmformerEncoder).
// forward(sources (B, T, D), source_lengths, targets (B, U), target_lengths, predictor_state)
// -> (joint logits (B, T', U, num_symbols), source lengths, target lengths, predictor state).
class RNNTImpl : public nn::Cloneable<RNNTImpl> {
 public:
  RNNTImpl(std::shared_ptr<nn::Module> transcriber, Predictor predictor, Joiner joiner);
  void reset() override;
  std::tuple<Tensor, Tensor, Tensor, StreamState> forward(const Tensor& sources, const Tensor& source_lengths,
                                                          const Tensor& targets, const Tensor& target_lengths,
                                                          const std::optional<StreamState>& predictor_state =
                                                              std::nullopt);
  std::tuple<Tensor, Tensor, StreamState> transcribe_streaming(const Tensor& sources, const Tensor& source_lengths,
                                                               const std::optional<StreamState>& state);
  std::tuple<Tensor, Tensor> transcribe(const Tensor& sources, const Tensor& source_lengths);
  std::tuple<Tensor, Tensor, StreamState> predict(const Tensor& targets, const Tensor& target_lengths,
                                                  const std::optional<StreamState>& state);
  std::tuple<Tensor, Tensor, Tensor> join(const Tensor& source_encodings, const Tensor& source_lengths,
                                          const Tensor& target_encodings, const Tensor& target_lengths);
  std::shared_ptr<nn::Module> transcriber;
  Predictor predictor{nullptr};
  Joiner joiner{nullptr};

 private:
  Transcriber& transcriber_api();
};
FW_MODULE(RNNT);

RNNT emformer_rnnt_model(const EmformerRNNTOptions& options);
// torchaudio's emformer_rnnt_base: 80 mel features, 20 Emformer layers of 512 (128 x stride 4),
// segment 16 frames, right context 4, left context 30, encodings of 1024, 3 LSTM layers of 512.
RNNT emformer_rnnt_base(int64_t num_symbols);

// A beam search hypothesis (torchaudio's Hypothesis tuple): tokens (starting with the blank or the
// token a stream resumed from), the predictor's output for the last token (1, D), the predictor's
// state after it, and the log-probability score.
struct Hypothesis {
  std::vector<int64_t> tokens;
  Tensor predictor_out;
  StreamState state;
  double score = 0;
};

// torchaudio.models.RNNTBeamSearch over an RNNT (breadth-first, step_max_tokens emissions per
// frame). forward(input (T, D) or (1, T, D), length () or (1,), beam_width) -> the beam_width best
// hypotheses by hypo_sort_key (default score / (tokens + 1)), best first. infer runs one streaming
// segment from the transcriber's and the previous best hypothesis' state.
class RNNTBeamSearch {
 public:
  RNNTBeamSearch(RNNT model, int64_t blank, double temperature = 1.0,
                 std::function<double(const Hypothesis&)> hypo_sort_key = nullptr, int64_t step_max_tokens = 100);
  std::vector<Hypothesis> operator()(const Tensor& input, const Tensor& length, int64_t beam_width);
  std::tuple<std::vector<Hypothesis>, StreamState> infer(const Tensor& input, const Tensor& length,
                                                         int64_t beam_width,
                                                         const std::optional<StreamState>& state = std::nullopt,
                                                         const Hypothesis* hypothesis = nullptr);
  RNNT model;
  int64_t blank;
  double temperature;
  std::function<double(const Hypothesis&)> hypo_sort_key;
  int64_t step_max_tokens;

 private:
  std::vector<Hypothesis> search(const Tensor& enc_out, const Hypothesis* hypo, int64_t beam_width);
};

}  // namespace fw::audio::models
