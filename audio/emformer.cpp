// torchaudio.models' Emformer, RNNT (emformer_rnnt_model / emformer_rnnt_base) and RNNTBeamSearch
// (fw/audio/emformer.h). Module and parameter names follow torchaudio 0.13 so its state_dicts load
// unchanged; layers are built in torchaudio's order. Streaming state and beam search follow
// torchaudio's arithmetic step by step, including the float32 rounding of its hypothesis scores,
// so the same model gives the same hypotheses.
#include "fw/audio/emformer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "fw/nn/functional.h"
#include "fw/nn/init.h"

namespace fw::audio::models {

namespace {

bool tracing() { return fw::detail::g_traces_active.load(std::memory_order_relaxed) != 0; }

// A (0, B, D) tensor like `like` (torchaudio uses torch.empty(0), which torch.cat skips).
Tensor empty_rows(int64_t B, int64_t D, const Tensor& like) { return fw::zeros({0, B, D}, like.options()); }

void check_lengths(const char* op, const Tensor& lengths, int64_t batch) {
  FW_CHECK(lengths.dim() == 1 && lengths.size(0) == batch && !lengths.is_floating_point() && !lengths.is_complex() &&
               lengths.dtype() != kBool,
           op, " lengths must be a (B,) integer tensor with B = ", batch, ", got ", lengths.dtype(), " ",
           lengths.sizes());
}

// Lengths must lie in [0, frames]; reading them is skipped while fw::compile traces.
void check_length_values(const char* op, const Tensor& lengths, int64_t frames, const char* what) {
  if (tracing() || lengths.numel() == 0) return;
  const int64_t lo = lengths.min().item<int64_t>(), hi = lengths.max().item<int64_t>();
  FW_CHECK(lo >= 0 && hi <= frames, op, " lengths must lie in [0, ", frames, "] (the ", what, "), got values in [",
           lo, ", ", hi, "]");
}

nn::AnyModule activation_module(const char* op, const std::string& activation) {
  if (activation == "relu") return nn::AnyModule(nn::ReLU());
  if (activation == "gelu") return nn::AnyModule(nn::GELU());
  if (activation == "silu") return nn::AnyModule(nn::SiLU());
  fw::detail::throw_error(op, " unsupported activation \"", activation, "\" (relu, gelu or silu)");
}

// AvgPool1d(kernel = stride = segment_length, ceil_mode=True) over time of a (T, B, D) tensor: one
// mean per segment, the last over the frames it has.
Tensor segment_means(const Tensor& x, int64_t segment_length) {
  return fw::avg_pool1d(x.permute({1, 2, 0}), {segment_length}, {segment_length}, {0}, /*ceil_mode=*/true)
      .permute({2, 0, 1});
}

}  // namespace

namespace detail {

// ---- attention

EmformerAttentionImpl::EmformerAttentionImpl(int64_t input_dim, int64_t num_heads, double dropout,
                                             std::optional<double> weight_init_gain, bool tanh_on_mem,
                                             double negative_inf)
    : input_dim(input_dim),
      num_heads(num_heads),
      dropout(dropout),
      weight_init_gain(weight_init_gain),
      tanh_on_mem(tanh_on_mem),
      negative_inf(negative_inf) {
  FW_CHECK(input_dim > 0 && num_heads > 0 && input_dim % num_heads == 0, "[audio::models::Emformer] input_dim (",
           input_dim, ") must be a positive multiple of num_heads (", num_heads, ")");
  reset();
}

void EmformerAttentionImpl::reset() {
  emb_to_key_value = register_module("emb_to_key_value", nn::Linear(input_dim, 2 * input_dim));
  emb_to_query = register_module("emb_to_query", nn::Linear(input_dim, input_dim));
  out_proj = register_module("out_proj", nn::Linear(input_dim, input_dim));
  if (weight_init_gain && *weight_init_gain != 0) {
    NoGradGuard no_grad;
    nn::init::xavier_uniform_(emb_to_key_value->weight, *weight_init_gain);
    nn::init::xavier_uniform_(emb_to_query->weight, *weight_init_gain);
  }
}

std::tuple<Tensor, Tensor, Tensor, Tensor> EmformerAttentionImpl::forward_impl(
    const Tensor& utterance, const Tensor& lengths, const Tensor& right_context, const Tensor& summary,
    const Tensor& mems, const Tensor& attention_mask, const Tensor& left_context_key, const Tensor& left_context_val) {
  const int64_t B = utterance.size(1), D = input_dim, H = num_heads, hd = D / H;
  const int64_t R = right_context.size(0), S = summary.size(0), M = mems.size(0);
  const int64_t T = R + utterance.size(0) + S;
  Tensor query = emb_to_query->forward(fw::cat({right_context, utterance, summary}));
  auto kv = emb_to_key_value->forward(fw::cat({mems, right_context, utterance})).chunk(2, 2);
  Tensor key = kv[0], value = kv[1];
  // The key padding mask: key j of sequence b is masked when j >= lengths[b] + K - max(lengths)
  // (torchaudio's klengths; their maximum is always the key count K).
  Tensor max_length = lengths.max();
  if (left_context_key.defined()) {
    // The left context goes between the right context blocks and the utterance (torchaudio places it
    // after the first M + T - max(lengths) - S keys).
    const int64_t split = M + T - max_length.item<int64_t>() - S;
    key = fw::cat({key.slice(0, 0, split), left_context_key, key.slice(0, split)});
    value = fw::cat({value.slice(0, 0, split), left_context_val, value.slice(0, split)});
  }
  const int64_t K = key.size(0);
  auto heads = [&](const Tensor& t) { return t.contiguous().view({-1, B * H, hd}).transpose(0, 1); };
  const double scaling = std::pow(double(hd), -0.5);
  Tensor weights = fw::bmm(heads(query) * scaling, heads(key).transpose(1, 2));  // (B*H, T, K)
  Tensor w = weights.to(kFloat).masked_fill(attention_mask.unsqueeze(0), negative_inf);
  if (B != 1) {
    Tensor padding = fw::arange(K, lengths.options()).unsqueeze(0) >= (lengths - max_length + K).unsqueeze(1);
    w = w.view({B, H, T, K}).masked_fill(padding.unsqueeze(1).unsqueeze(2), negative_inf).view({B * H, T, K});
  }
  Tensor probs = fw::softmax(w, -1).to(weights.dtype());
  probs = fw::dropout(probs, dropout, is_training());
  Tensor attention = fw::bmm(probs, heads(value));
  attention = attention.transpose(0, 1).contiguous().view({T, B, D});
  Tensor out = out_proj->forward(attention);
  Tensor output = out.slice(0, 0, T - S), output_mems = out.slice(0, T - S);
  output_mems = tanh_on_mem ? fw::tanh(output_mems) : fw::clamp(output_mems, -10.0, 10.0);
  return {output, output_mems, key, value};
}

std::tuple<Tensor, Tensor> EmformerAttentionImpl::forward(const Tensor& utterance, const Tensor& lengths,
                                                          const Tensor& right_context, const Tensor& summary,
                                                          const Tensor& mems, const Tensor& attention_mask) {
  auto [output, output_mems, k, v] =
      forward_impl(utterance, lengths, right_context, summary, mems, attention_mask, Tensor(), Tensor());
  return {output, output_mems.slice(0, 0, std::max<int64_t>(output_mems.size(0) - 1, 0))};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> EmformerAttentionImpl::infer(const Tensor& utterance,
                                                                        const Tensor& lengths,
                                                                        const Tensor& right_context,
                                                                        const Tensor& summary, const Tensor& mems,
                                                                        const Tensor& left_context_key,
                                                                        const Tensor& left_context_val) {
  const int64_t R = right_context.size(0), M = mems.size(0);
  const int64_t rows = R + utterance.size(0) + summary.size(0);
  const int64_t cols = R + utterance.size(0) + M + left_context_key.size(0);
  // Only the summary row is kept from the memory (torchaudio masks mask[-1, :M]).
  Tensor mask = fw::zeros({rows, cols}, TensorOptions(kBool).device(utterance.device()));
  if (M > 0) mask.select(0, rows - 1).slice(0, 0, M).fill_(true);
  auto [output, output_mems, key, value] =
      forward_impl(utterance, lengths, right_context, summary, mems, mask, left_context_key, left_context_val);
  return {output, output_mems, key.slice(0, M + R), value.slice(0, M + R)};
}

// ---- layer

EmformerLayerImpl::EmformerLayerImpl(int64_t input_dim, int64_t num_heads, int64_t ffn_dim, int64_t segment_length,
                                     double dropout, std::string activation, int64_t left_context_length,
                                     int64_t max_memory_size, std::optional<double> weight_init_gain,
                                     bool tanh_on_mem, double negative_inf)
    : input_dim(input_dim),
      num_heads(num_heads),
      ffn_dim(ffn_dim),
      segment_length(segment_length),
      dropout(dropout),
      activation(std::move(activation)),
      left_context_length(left_context_length),
      max_memory_size(max_memory_size),
      weight_init_gain(weight_init_gain),
      tanh_on_mem(tanh_on_mem),
      negative_inf(negative_inf) {
  FW_CHECK(segment_length > 0 && left_context_length >= 0 && max_memory_size >= 0 && ffn_dim > 0,
           "[audio::models::Emformer] segment_length and ffn_dim must be positive and left_context_length, "
           "max_memory_size non-negative, got segment_length ", segment_length, ", ffn_dim ", ffn_dim,
           ", left_context_length ", left_context_length, ", max_memory_size ", max_memory_size);
  activation_module("[audio::models::Emformer]", this->activation);
  reset();
}

void EmformerLayerImpl::reset() {
  attention = register_module("attention", EmformerAttention(input_dim, num_heads, dropout, weight_init_gain,
                                                             tanh_on_mem, negative_inf));
  dropout_ = register_module("dropout", nn::Dropout(dropout));
  nn::Sequential ff;
  ff->push_back(nn::LayerNorm(nn::LayerNormOptions({input_dim})));
  ff->push_back(nn::Linear(input_dim, ffn_dim));
  ff->push_back(activation_module("[audio::models::Emformer]", activation));
  ff->push_back(nn::Dropout(dropout));
  ff->push_back(nn::Linear(ffn_dim, input_dim));
  ff->push_back(nn::Dropout(dropout));
  pos_ff = register_module("pos_ff", ff);
  layer_norm_input = register_module("layer_norm_input", nn::LayerNorm(nn::LayerNormOptions({input_dim})));
  layer_norm_output = register_module("layer_norm_output", nn::LayerNorm(nn::LayerNormOptions({input_dim})));
}

namespace {

// Pre-attention layer norm over [right context; utterance] -> (utterance, right context).
std::pair<Tensor, Tensor> pre_attention(EmformerLayerImpl& l, const Tensor& utterance, const Tensor& right_context) {
  Tensor n = l.layer_norm_input->forward(fw::cat({right_context, utterance}));
  const int64_t R = right_context.size(0);
  return {n.slice(0, R), n.slice(0, 0, R)};
}

// Residual, feed-forward and output layer norm -> (utterance, right context).
std::pair<Tensor, Tensor> post_attention(EmformerLayerImpl& l, const Tensor& rc_output, const Tensor& utterance,
                                         const Tensor& right_context) {
  Tensor r = l.dropout_->forward(rc_output) + fw::cat({right_context, utterance});
  r = l.pos_ff->forward(r) + r;
  r = l.layer_norm_output->forward(r);
  const int64_t R = right_context.size(0);
  return {r.slice(0, R), r.slice(0, 0, R)};
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> EmformerLayerImpl::forward(const Tensor& utterance, const Tensor& lengths,
                                                              const Tensor& right_context, const Tensor& mems,
                                                              const Tensor& attention_mask) {
  FW_CHECK(attention_mask.defined(), "[audio::models::Emformer] attention_mask must be given to forward");
  auto [ln_utterance, ln_right_context] = pre_attention(*this, utterance, right_context);
  Tensor summary = max_memory_size > 0 ? segment_means(ln_utterance, segment_length)
                                       : empty_rows(utterance.size(1), input_dim, utterance);
  auto [rc_output, output_mems] =
      attention->forward(ln_utterance, lengths, ln_right_context, summary, mems, attention_mask);
  auto [out_utterance, out_right_context] = post_attention(*this, rc_output, utterance, right_context);
  return {out_utterance, out_right_context, output_mems};
}

std::tuple<Tensor, Tensor, std::vector<Tensor>, Tensor> EmformerLayerImpl::infer(const Tensor& utterance,
                                                                                 const Tensor& lengths,
                                                                                 const Tensor& right_context,
                                                                                 const std::vector<Tensor>* state_in,
                                                                                 const Tensor& mems) {
  const char* op = "[audio::models::Emformer::infer]";
  const int64_t B = utterance.size(1), M = max_memory_size, L = left_context_length;
  std::vector<Tensor> state;
  if (state_in == nullptr) {
    auto o = utterance.options();
    state = {fw::zeros({M, B, input_dim}, o), fw::zeros({L, B, input_dim}, o), fw::zeros({L, B, input_dim}, o),
             fw::zeros({1, B}, o.dtype(kInt))};
  } else {
    state = *state_in;
    FW_CHECK(state.size() == 4 && state[0].defined() && state[1].defined() && state[2].defined() &&
                 state[3].defined(),
             op, " a layer's state must hold 4 tensors (memory, left-context keys, values, past length), got ",
             state.size());
    const std::vector<int64_t> want[3] = {{M, B, input_dim}, {L, B, input_dim}, {L, B, input_dim}};
    for (int i = 0; i < 3; i++)
      FW_CHECK(state[i].sizes().vec() == want[i], op, " state tensor ", i, " must be ", IntArrayRef(want[i]),
               ", got ", state[i].sizes());
    FW_CHECK(state[3].dim() == 2 && state[3].size(0) == 1 && state[3].size(1) == B && !state[3].is_floating_point(),
             op, " the past length must be a (1, ", B, ") integer tensor, got ", state[3].dtype(), " ",
             state[3].sizes());
  }
  // torchaudio reads the first sequence's past length for the whole batch.
  const int64_t past = state[3].numel() ? state[3][0][0].item<int64_t>() : 0;
  FW_CHECK(past >= 0, op, " the state's past length must be non-negative, got ", past);
  const int64_t past_lc = std::min(L, past);
  const int64_t past_mem = std::min(M, (past + segment_length - 1) / segment_length);
  Tensor pre_mems = state[0].slice(0, M - past_mem), lc_key = state[1].slice(0, L - past_lc),
         lc_val = state[2].slice(0, L - past_lc);

  auto [ln_utterance, ln_right_context] = pre_attention(*this, utterance, right_context);
  Tensor summary = M > 0 ? segment_means(ln_utterance, segment_length).slice(0, 0, 1)
                         : empty_rows(B, input_dim, utterance);
  auto [rc_output, output_mems, next_k, next_v] =
      attention->infer(ln_utterance, lengths, ln_right_context, summary, pre_mems, lc_key, lc_val);
  // The next state: memory gains this layer's input memory, the left context this segment's keys.
  if (M > 0) {
    Tensor m = fw::cat({state[0], mems});
    state[0] = m.slice(0, m.size(0) - M);
  }
  Tensor new_k = fw::cat({state[1], next_k}), new_v = fw::cat({state[2], next_v});
  state[1] = new_k.slice(0, new_k.size(0) - L);
  state[2] = new_v.slice(0, new_v.size(0) - L);
  state[3] = state[3] + utterance.size(0);
  auto [out_utterance, out_right_context] = post_attention(*this, rc_output, utterance, right_context);
  return {out_utterance, out_right_context, state, output_mems};
}

}  // namespace detail

// ---- Emformer

EmformerImpl::EmformerImpl(int64_t input_dim, int64_t num_heads, int64_t ffn_dim, int64_t num_layers,
                           int64_t segment_length, double dropout, std::string activation,
                           int64_t left_context_length, int64_t right_context_length, int64_t max_memory_size,
                           std::string weight_init_scale_strategy, bool tanh_on_mem, double negative_inf)
    : input_dim(input_dim),
      num_heads(num_heads),
      ffn_dim(ffn_dim),
      num_layers(num_layers),
      segment_length(segment_length),
      dropout(dropout),
      activation(std::move(activation)),
      left_context_length(left_context_length),
      right_context_length(right_context_length),
      max_memory_size(max_memory_size),
      weight_init_scale_strategy(std::move(weight_init_scale_strategy)),
      tanh_on_mem(tanh_on_mem),
      negative_inf(negative_inf) {
  const std::string& s = this->weight_init_scale_strategy;
  FW_CHECK(s.empty() || s == "depthwise" || s == "constant", "[audio::models::Emformer] weight_init_scale_strategy "
           "must be \"depthwise\", \"constant\" or \"\" (none), got \"", s, "\"");
  FW_CHECK(num_layers >= 0 && right_context_length >= 0, "[audio::models::Emformer] num_layers and "
           "right_context_length must be non-negative, got ", num_layers, " and ", right_context_length);
  reset();
}

void EmformerImpl::reset() {
  nn::ModuleList layers;
  for (int64_t i = 0; i < num_layers; i++) {
    std::optional<double> gain;
    if (weight_init_scale_strategy == "depthwise") gain = 1.0 / std::sqrt(double(i + 1));
    if (weight_init_scale_strategy == "constant") gain = 1.0 / std::sqrt(2.0);
    layers->push_back(detail::EmformerLayer(input_dim, num_heads, ffn_dim, segment_length, dropout, activation,
                                            left_context_length, max_memory_size, gain, tanh_on_mem,
                                            negative_inf));
  }
  emformer_layers = register_module("emformer_layers", layers);
}

namespace {

// torchaudio's block attention mask over [right context blocks; utterance; summaries] queries and
// [memories; right context blocks; utterance] keys: each segment's queries see their own right
// context block, the segment with left_context_length frames before it and up to max_memory_size
// previous memories; summaries see no memory. true = masked.
Tensor emformer_attention_mask(int64_t U, int64_t seg, int64_t rc, int64_t lc, int64_t max_mem, const Tensor& like) {
  const bool use_mem = max_mem > 0;
  const int64_t nseg = (U + seg - 1) / seg;
  const int64_t nmem = use_mem ? nseg - 1 : 0;
  const int64_t cols = nmem + rc * nseg + U;
  const int64_t rows = rc * nseg + U + (use_mem ? nseg : 0);
  // Built on the host (a constant under fw::compile), 1 = masked.
  std::vector<uint8_t> m(static_cast<size_t>(rows * cols), 1);
  auto open = [&](int64_t row, int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; c++) m[static_cast<size_t>(row * cols + c)] = 0;
  };
  // (row offset of each block kind)
  const int64_t q0 = rc * nseg, s0 = rc * nseg + U;
  for (int64_t i = 0; i < nseg; i++) {
    const int64_t m_start = std::max<int64_t>(i - max_mem, 0);
    const int64_t seg_start = std::max<int64_t>(i * seg - lc, 0), seg_end = std::min((i + 1) * seg, U);
    const int64_t rc_col = nmem + i * rc, u_col = nmem + rc * nseg;
    auto open_row = [&](int64_t row, bool memory) {
      if (memory && use_mem) open(row, m_start, i);
      open(row, rc_col, rc_col + rc);
      open(row, u_col + seg_start, u_col + seg_end);
    };
    for (int64_t r = 0; r < rc; r++) open_row(i * rc + r, true);
    for (int64_t r = i * seg; r < seg_end; r++) open_row(q0 + r, true);
    if (use_mem) open_row(s0 + i, false);
  }
  return fw::tensor(m, TensorOptions(kUInt8)).view({rows, cols}).to(TensorOptions(kBool).device(like.device()));
}

}  // namespace

std::tuple<Tensor, Tensor> EmformerImpl::forward(const Tensor& input_btd, const Tensor& lengths) {
  const char* op = "[audio::models::Emformer]";
  FW_CHECK(input_btd.dim() == 3 && input_btd.size(2) == input_dim && input_btd.size(1) > right_context_length, op,
           " input must be (B, T, ", input_dim, ") with T > right_context_length = ", right_context_length, ", got ",
           input_btd.sizes());
  check_lengths(op, lengths, input_btd.size(0));
  const int64_t T = input_btd.size(1), U = T - right_context_length, rc = right_context_length;
  check_length_values(op, lengths, T, "input frames");
  Tensor input = input_btd.permute({1, 0, 2});
  // The right context block of each segment: the rc frames after it (the last block ends the input).
  const int64_t nseg = (U + segment_length - 1) / segment_length;
  std::vector<Tensor> blocks;
  for (int64_t i = 0; i + 1 < nseg; i++) blocks.push_back(input.slice(0, (i + 1) * segment_length,
                                                                      (i + 1) * segment_length + rc));
  blocks.push_back(input.slice(0, T - rc));
  Tensor right_context = fw::cat(blocks);
  Tensor utterance = input.slice(0, 0, U);
  Tensor mask = emformer_attention_mask(U, segment_length, rc, left_context_length, max_memory_size, input);
  Tensor mems = max_memory_size > 0 ? segment_means(utterance, segment_length).slice(0, 0, nseg - 1)
                                    : empty_rows(input.size(1), input_dim, input);
  Tensor output = utterance;
  for (size_t i = 0; i < emformer_layers->size(); i++)
    std::tie(output, right_context, mems) =
        emformer_layers->ptr<detail::EmformerLayerImpl>(i)->forward(output, lengths, right_context, mems, mask);
  return {output.permute({1, 0, 2}), lengths};
}

std::tuple<Tensor, Tensor, StreamState> EmformerImpl::infer(const Tensor& input_btd, const Tensor& lengths,
                                                            const std::optional<StreamState>& states) {
  const char* op = "[audio::models::Emformer::infer]";
  FW_CHECK(input_btd.dim() == 3 && input_btd.size(2) == input_dim, op, " input must be (B, ",
           segment_length + right_context_length, ", ", input_dim, "), got ", input_btd.sizes());
  FW_CHECK(input_btd.size(1) == segment_length + right_context_length, op,
           " per configured segment_length and right_context_length, expected size of ",
           segment_length + right_context_length, " for dimension 1 of input, but got ", input_btd.size(1));
  check_lengths(op, lengths, input_btd.size(0));
  check_length_values(op, lengths, input_btd.size(1), "input frames");
  if (states)
    FW_CHECK(int64_t(states->size()) == num_layers, op, " states must hold one entry per layer (", num_layers,
             "), got ", states->size());
  Tensor input = input_btd.permute({1, 0, 2});
  const int64_t start = input.size(0) - right_context_length;
  Tensor right_context = input.slice(0, start), utterance = input.slice(0, 0, start);
  Tensor output_lengths = fw::clamp_min(lengths - right_context_length, 0);
  Tensor mems = max_memory_size > 0 ? segment_means(utterance, segment_length)
                                    : empty_rows(input.size(1), input_dim, input);
  Tensor output = utterance;
  StreamState out_states;
  for (size_t i = 0; i < emformer_layers->size(); i++) {
    std::vector<Tensor> st;
    std::tie(output, right_context, st, mems) = emformer_layers->ptr<detail::EmformerLayerImpl>(i)->infer(
        output, output_lengths, right_context, states ? &(*states)[i] : nullptr, mems);
    out_states.push_back(std::move(st));
  }
  return {output.permute({1, 0, 2}), output_lengths, out_states};
}

// ---- RNNT parts

namespace detail {

EmformerEncoderImpl::EmformerEncoderImpl(EmformerRNNTOptions options) : options(std::move(options)) {
  const auto& o = this->options;
  FW_CHECK(o.time_reduction_stride() > 0 && o.segment_length() % o.time_reduction_stride() == 0 &&
               o.right_context_length() % o.time_reduction_stride() == 0,
           "[audio::models::emformer_rnnt_model] segment_length (", o.segment_length(), ") and right_context_length (",
           o.right_context_length(), ") must be multiples of time_reduction_stride (", o.time_reduction_stride(),
           ")");
  reset();
}

void EmformerEncoderImpl::reset() {
  const auto& o = options;
  const int64_t stride = o.time_reduction_stride(), d = o.time_reduction_input_dim() * stride;
  input_linear = register_module(
      "input_linear", nn::Linear(nn::LinearOptions(o.input_dim(), o.time_reduction_input_dim()).bias(false)));
  transformer = register_module(
      "transformer", Emformer(d, o.transformer_num_heads(), o.transformer_ffn_dim(), o.transformer_num_layers(),
                              o.segment_length() / stride, o.transformer_dropout(), o.transformer_activation(),
                              o.transformer_left_context_length(), o.right_context_length() / stride,
                              o.transformer_max_memory_size(), o.transformer_weight_init_scale_strategy(),
                              o.transformer_tanh_on_mem()));
  output_linear = register_module("output_linear", nn::Linear(d, o.encoding_dim()));
  layer_norm = register_module("layer_norm", nn::LayerNorm(nn::LayerNormOptions({o.encoding_dim()})));
}

namespace {

// torchaudio's _TimeReduction: drops T % stride trailing frames and stacks stride frames into one.
std::tuple<Tensor, Tensor> time_reduction(const Tensor& input, const Tensor& lengths, int64_t stride) {
  const int64_t B = input.size(0), T = input.size(1), D = input.size(2), frames = T - T % stride;
  Tensor out = input.slice(1, 0, frames).reshape({B, frames / stride, D * stride}).contiguous();
  return {out, fw::div(lengths, stride, "trunc")};
}

void check_encoder_input(const char* op, const Tensor& input, const Tensor& lengths, int64_t input_dim) {
  FW_CHECK(input.dim() == 3 && input.size(2) == input_dim, op, " input must be (B, T, ", input_dim, "), got ",
           input.sizes());
  check_lengths(op, lengths, input.size(0));
}

}  // namespace

std::tuple<Tensor, Tensor> EmformerEncoderImpl::forward(const Tensor& input, const Tensor& lengths) {
  check_encoder_input("[audio::models::RNNT::transcribe]", input, lengths, options.input_dim());
  auto [x, l] = time_reduction(input_linear->forward(input), lengths, options.time_reduction_stride());
  auto [y, yl] = transformer->forward(x, l);
  return {layer_norm->forward(output_linear->forward(y)), yl};
}

std::tuple<Tensor, Tensor, StreamState> EmformerEncoderImpl::infer(const Tensor& input, const Tensor& lengths,
                                                                   const std::optional<StreamState>& states) {
  check_encoder_input("[audio::models::RNNT::transcribe_streaming]", input, lengths, options.input_dim());
  auto [x, l] = time_reduction(input_linear->forward(input), lengths, options.time_reduction_stride());
  auto [y, yl, st] = transformer->infer(x, l, states);
  return {layer_norm->forward(output_linear->forward(y)), yl, st};
}

CustomLSTMImpl::CustomLSTMImpl(int64_t input_dim, int64_t hidden_dim, bool layer_norm, double layer_norm_epsilon)
    : input_dim(input_dim), hidden_dim(hidden_dim), layer_norm(layer_norm), layer_norm_epsilon(layer_norm_epsilon) {
  reset();
}

void CustomLSTMImpl::reset() {
  x2g = register_module("x2g", nn::Linear(nn::LinearOptions(input_dim, 4 * hidden_dim).bias(!layer_norm)));
  p2g = register_module("p2g", nn::Linear(nn::LinearOptions(hidden_dim, 4 * hidden_dim).bias(false)));
  if (layer_norm) {
    c_norm = register_module("c_norm", nn::LayerNorm(nn::LayerNormOptions({hidden_dim}).eps(layer_norm_epsilon)));
    g_norm = register_module("g_norm",
                             nn::LayerNorm(nn::LayerNormOptions({4 * hidden_dim}).eps(layer_norm_epsilon)));
  }
}

std::tuple<Tensor, std::vector<Tensor>> CustomLSTMImpl::forward(const Tensor& input,
                                                                const std::vector<Tensor>* state) {
  const char* op = "[audio::models::RNNT] predictor LSTM:";
  const int64_t B = input.size(1);
  Tensor h, c;
  if (state == nullptr) {
    h = fw::zeros({B, hidden_dim}, input.options());
    c = fw::zeros({B, hidden_dim}, input.options());
  } else {
    FW_CHECK(state->size() == 2, op, " a layer's state must be [h, c], got ", state->size(), " tensors");
    h = (*state)[0];
    c = (*state)[1];
    auto ok = [&](const Tensor& t) { return t.defined() && t.dim() == 2 && t.size(0) == B && t.size(1) == hidden_dim; };
    FW_CHECK(ok(h) && ok(c), op, " h and c must be (", B, ", ", hidden_dim, "), got ",
             h.defined() ? h.sizes() : IntArrayRef(), " and ", c.defined() ? c.sizes() : IntArrayRef());
  }
  Tensor gated = x2g->forward(input);
  std::vector<Tensor> outputs;
  for (int64_t t = 0; t < gated.size(0); t++) {
    Tensor gates = gated[t] + p2g->forward(h);
    if (layer_norm) gates = g_norm->forward(gates);
    auto g = gates.chunk(4, 1);
    c = fw::sigmoid(g[1]) * c + fw::sigmoid(g[0]) * fw::tanh(g[2]);
    if (layer_norm) c = c_norm->forward(c);
    h = fw::sigmoid(g[3]) * fw::tanh(c);
    outputs.push_back(h);
  }
  Tensor output = outputs.empty() ? fw::zeros({0, B, hidden_dim}, input.options()) : fw::stack(outputs, 0);
  return {output, std::vector<Tensor>{h, c}};
}

}  // namespace detail

PredictorImpl::PredictorImpl(int64_t num_symbols, int64_t output_dim, int64_t symbol_embedding_dim,
                             int64_t num_lstm_layers, int64_t lstm_hidden_dim, bool lstm_layer_norm,
                             double lstm_layer_norm_epsilon, double lstm_dropout)
    : num_symbols(num_symbols),
      output_dim(output_dim),
      symbol_embedding_dim(symbol_embedding_dim),
      num_lstm_layers(num_lstm_layers),
      lstm_hidden_dim(lstm_hidden_dim),
      lstm_layer_norm(lstm_layer_norm),
      lstm_layer_norm_epsilon(lstm_layer_norm_epsilon),
      lstm_dropout(lstm_dropout) {
  FW_CHECK(num_symbols > 0 && output_dim > 0 && symbol_embedding_dim > 0 && num_lstm_layers >= 0 &&
               lstm_hidden_dim > 0,
           "[audio::models::RNNT] predictor sizes must be positive (num_symbols ", num_symbols, ", output_dim ",
           output_dim, ", symbol_embedding_dim ", symbol_embedding_dim, ", lstm_hidden_dim ", lstm_hidden_dim,
           ", num_lstm_layers ", num_lstm_layers, ")");
  reset();
}

void PredictorImpl::reset() {
  embedding = register_module("embedding", nn::Embedding(num_symbols, symbol_embedding_dim));
  input_layer_norm = register_module("input_layer_norm", nn::LayerNorm(nn::LayerNormOptions({symbol_embedding_dim})));
  nn::ModuleList layers;
  for (int64_t i = 0; i < num_lstm_layers; i++)
    layers->push_back(detail::CustomLSTM(i == 0 ? symbol_embedding_dim : lstm_hidden_dim, lstm_hidden_dim,
                                         lstm_layer_norm, lstm_layer_norm_epsilon));
  lstm_layers = register_module("lstm_layers", layers);
  dropout = register_module("dropout", nn::Dropout(lstm_dropout));
  linear = register_module("linear", nn::Linear(num_lstm_layers ? lstm_hidden_dim : symbol_embedding_dim, output_dim));
  output_layer_norm = register_module("output_layer_norm", nn::LayerNorm(nn::LayerNormOptions({output_dim})));
}

std::tuple<Tensor, Tensor, StreamState> PredictorImpl::forward(const Tensor& input, const Tensor& lengths,
                                                               const std::optional<StreamState>& state) {
  const char* op = "[audio::models::RNNT::predict]";
  FW_CHECK(input.dim() == 2 && !input.is_floating_point() && !input.is_complex() && input.dtype() != kBool, op,
           " targets must be a (B, U) integer tensor, got ", input.dtype(), " ", input.sizes());
  if (state)
    FW_CHECK(int64_t(state->size()) == num_lstm_layers, op, " state must hold one [h, c] per LSTM layer (",
             num_lstm_layers, "), got ", state->size());
  Tensor x = input_layer_norm->forward(embedding->forward(input.permute({1, 0})));
  StreamState state_out;
  for (size_t i = 0; i < lstm_layers->size(); i++) {
    auto [y, s] = lstm_layers->ptr<detail::CustomLSTMImpl>(i)->forward(x, state ? &(*state)[i] : nullptr);
    x = dropout->forward(y);
    state_out.push_back(std::move(s));
  }
  Tensor out = output_layer_norm->forward(linear->forward(x));
  return {out.permute({1, 0, 2}), lengths, state_out};
}

JoinerImpl::JoinerImpl(int64_t input_dim, int64_t output_dim, std::string activation)
    : input_dim(input_dim), output_dim(output_dim), activation(std::move(activation)) {
  FW_CHECK(this->activation == "relu" || this->activation == "tanh", "[audio::models::RNNT] unsupported joiner "
           "activation \"", this->activation, "\" (relu or tanh)");
  reset();
}

void JoinerImpl::reset() { linear = register_module("linear", nn::Linear(input_dim, output_dim)); }

std::tuple<Tensor, Tensor, Tensor> JoinerImpl::forward(const Tensor& source_encodings, const Tensor& source_lengths,
                                                       const Tensor& target_encodings, const Tensor& target_lengths) {
  FW_CHECK(source_encodings.dim() == 3 && target_encodings.dim() == 3 &&
               source_encodings.size(2) == input_dim && target_encodings.size(2) == input_dim,
           "[audio::models::RNNT::join] source and target encodings must be (B, T, ", input_dim, ") and (B, U, ",
           input_dim, "), got ", source_encodings.sizes(), " and ", target_encodings.sizes());
  Tensor joint = source_encodings.unsqueeze(2) + target_encodings.unsqueeze(1);
  joint = activation == "relu" ? fw::relu(joint) : fw::tanh(joint);
  return {linear->forward(joint), source_lengths, target_lengths};
}

// ---- RNNT

RNNTImpl::RNNTImpl(std::shared_ptr<nn::Module> transcriber_, Predictor predictor_, Joiner joiner_) {
  FW_CHECK(transcriber_ && dynamic_cast<Transcriber*>(transcriber_.get()) != nullptr,
           "[audio::models::RNNT] the transcriber must be a Module implementing fw::audio::models::Transcriber");
  FW_CHECK(predictor_ && joiner_, "[audio::models::RNNT] predictor and joiner must be given");
  transcriber = register_module("transcriber", std::move(transcriber_));
  predictor = register_module("predictor", std::move(predictor_));
  joiner = register_module("joiner", std::move(joiner_));
}

void RNNTImpl::reset() {
  // The parts are the options: reset() registers copies of them (clone() then copies the values).
  transcriber = register_module("transcriber", transcriber->clone());
  predictor = register_module("predictor", Predictor(std::dynamic_pointer_cast<PredictorImpl>(predictor->clone())));
  joiner = register_module("joiner", Joiner(std::dynamic_pointer_cast<JoinerImpl>(joiner->clone())));
}

Transcriber& RNNTImpl::transcriber_api() { return dynamic_cast<Transcriber&>(*transcriber); }

std::tuple<Tensor, Tensor, Tensor, StreamState> RNNTImpl::forward(const Tensor& sources,
                                                                  const Tensor& source_lengths,
                                                                  const Tensor& targets,
                                                                  const Tensor& target_lengths,
                                                                  const std::optional<StreamState>& predictor_state) {
  auto [src, src_len] = transcriber_api().transcribe(sources, source_lengths);
  auto [tgt, tgt_len, state] = predictor->forward(targets, target_lengths, predictor_state);
  auto [out, sl, tl] = joiner->forward(src, src_len, tgt, tgt_len);
  return {out, sl, tl, state};
}

std::tuple<Tensor, Tensor, StreamState> RNNTImpl::transcribe_streaming(const Tensor& sources,
                                                                       const Tensor& source_lengths,
                                                                       const std::optional<StreamState>& state) {
  return transcriber_api().transcribe_infer(sources, source_lengths, state);
}

std::tuple<Tensor, Tensor> RNNTImpl::transcribe(const Tensor& sources, const Tensor& source_lengths) {
  return transcriber_api().transcribe(sources, source_lengths);
}

std::tuple<Tensor, Tensor, StreamState> RNNTImpl::predict(const Tensor& targets, const Tensor& target_lengths,
                                                          const std::optional<StreamState>& state) {
  return predictor->forward(targets, target_lengths, state);
}

std::tuple<Tensor, Tensor, Tensor> RNNTImpl::join(const Tensor& source_encodings, const Tensor& source_lengths,
                                                  const Tensor& target_encodings, const Tensor& target_lengths) {
  return joiner->forward(source_encodings, source_lengths, target_encodings, target_lengths);
}

RNNT emformer_rnnt_model(const EmformerRNNTOptions& o) {
  auto encoder = std::make_shared<detail::EmformerEncoderImpl>(o);
  Predictor predictor(o.num_symbols(), o.encoding_dim(), o.symbol_embedding_dim(), o.num_lstm_layers(),
                      o.symbol_embedding_dim(), o.lstm_layer_norm(), o.lstm_layer_norm_epsilon(), o.lstm_dropout());
  Joiner joiner(o.encoding_dim(), o.num_symbols());
  return RNNT(std::static_pointer_cast<nn::Module>(encoder), predictor, joiner);
}

RNNT emformer_rnnt_base(int64_t num_symbols) {
  return emformer_rnnt_model(EmformerRNNTOptions().num_symbols(num_symbols));
}

// ---- beam search

namespace {

// torch.logaddexp on two float32 values (PyTorch's scalar formula).
float logaddexp_f32(float a, float b) {
  if (std::isinf(a) && a == b) return a;
  const float m = std::max(a, b);
  return m + std::log1p(std::exp(-std::abs(a - b)));
}

StreamState batch_state(const std::vector<Hypothesis>& hypos) {
  StreamState out;
  for (size_t i = 0; i < hypos[0].state.size(); i++) {
    std::vector<Tensor> comps;
    for (size_t j = 0; j < hypos[0].state[i].size(); j++) {
      std::vector<Tensor> parts;
      for (const auto& h : hypos) parts.push_back(h.state[i][j]);
      comps.push_back(fw::cat(parts));
    }
    out.push_back(std::move(comps));
  }
  return out;
}

StreamState slice_state(const StreamState& s, int64_t idx) {
  StreamState out;
  for (const auto& layer : s) {
    std::vector<Tensor> comps;
    for (const auto& t : layer) comps.push_back(t.slice(0, idx, idx + 1));
    out.push_back(std::move(comps));
  }
  return out;
}

// Indices sorting `keys` (as float32, the precision torchaudio's torch.tensor(list) gives them),
// descending or ascending; ties keep their order.
std::vector<size_t> order_by(const std::vector<double>& keys, bool descending) {
  std::vector<size_t> idx(keys.size());
  for (size_t i = 0; i < idx.size(); i++) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    const float x = float(keys[a]), y = float(keys[b]);
    return descending ? x > y : x < y;
  });
  return idx;
}

void check_search_input(const char* op, const Tensor& input, const Tensor& length, int64_t beam_width) {
  FW_CHECK(input.dim() == 2 || (input.dim() == 3 && input.size(0) == 1), op,
           " input must be of shape (T, D) or (1, T, D), got ", input.sizes());
  FW_CHECK(length.dim() == 0 || (length.dim() == 1 && length.size(0) == 1), op,
           " length must be of shape () or (1,), got ", length.sizes());
  FW_CHECK(beam_width > 0, op, " beam_width must be positive, got ", beam_width);
}

}  // namespace

RNNTBeamSearch::RNNTBeamSearch(RNNT model, int64_t blank, double temperature,
                               std::function<double(const Hypothesis&)> hypo_sort_key, int64_t step_max_tokens)
    : model(std::move(model)),
      blank(blank),
      temperature(temperature),
      hypo_sort_key(std::move(hypo_sort_key)),
      step_max_tokens(step_max_tokens) {
  FW_CHECK(this->model, "[audio::models::RNNTBeamSearch] model must be given");
  const int64_t V = this->model->joiner->output_dim;
  FW_CHECK(blank >= 0 && blank < V, "[audio::models::RNNTBeamSearch] blank must be a symbol in [0, ", V, "), got ",
           blank);
  FW_CHECK(temperature > 0, "[audio::models::RNNTBeamSearch] temperature must be positive, got ", temperature);
  FW_CHECK(step_max_tokens >= 0, "[audio::models::RNNTBeamSearch] step_max_tokens must be non-negative, got ",
           step_max_tokens);
  if (!this->hypo_sort_key)
    this->hypo_sort_key = [](const Hypothesis& h) { return h.score / double(h.tokens.size() + 1); };
}

std::vector<Hypothesis> RNNTBeamSearch::search(const Tensor& enc_out, const Hypothesis* hypo, int64_t beam_width) {
  NoGradGuard no_grad;
  auto& m = *model;
  const auto dev = enc_out.device();
  const TensorOptions longs = TensorOptions(kLong).device(dev);
  const int64_t V = m.joiner->output_dim;

  // The initial hypothesis: the blank, or the last token of the hypothesis the stream resumes from.
  std::vector<Hypothesis> b_hypos;
  {
    const int64_t token = hypo ? hypo->tokens.back() : blank;
    std::optional<StreamState> state;
    if (hypo) state = hypo->state;
    auto [pred_out, l, pred_state] =
        m.predict(fw::full({1, 1}, token, longs), fw::ones({1}, longs), state);
    b_hypos.push_back(Hypothesis{{token}, pred_out[0], pred_state, 0.0});
  }
  const int64_t steps = enc_out.size(1);
  for (int64_t t = 0; t < steps; t++) {
    std::vector<Hypothesis> a_hypos = std::move(b_hypos);
    b_hypos.clear();
    int64_t symbols = 0;
    const Tensor frame = enc_out.slice(1, t, t + 1);
    while (!a_hypos.empty()) {
      // Log-probabilities of the next token for each hypothesis: (n, V), float32.
      std::vector<Tensor> outs;
      for (const auto& h : a_hypos) outs.push_back(h.predictor_out);
      auto [joined, sl, tl] = m.join(frame, fw::ones({1}, longs), fw::stack(outs, 0),
                                     fw::ones({int64_t(a_hypos.size())}, longs));
      Tensor probs = fw::log_softmax(joined / temperature, 3).select(2, 0).select(1, 0).to(kFloat).to(kCPU).contiguous();
      const float* p = probs.data_ptr<float>();
      // Hypotheses that emit blank move to b_hypos (merging equal token sequences).
      for (size_t i = 0; i < a_hypos.size(); i++) {
        const float blank_score = float(a_hypos[i].score) + p[i * V + (V - 1)];
        float score = blank_score;
        // A hypothesis with the same tokens already in b_hypos merges into this one (torchaudio
        // keys hypotheses by their token sequence).
        auto same = std::find_if(b_hypos.begin(), b_hypos.end(),
                                 [&](const Hypothesis& h) { return h.tokens == a_hypos[i].tokens; });
        if (same != b_hypos.end()) {
          score = logaddexp_f32(float(same->score), blank_score);
          b_hypos.erase(same);
        }
        b_hypos.push_back(Hypothesis{a_hypos[i].tokens, a_hypos[i].predictor_out, a_hypos[i].state, score});
      }
      {
        std::vector<double> scores;
        for (const auto& h : b_hypos) scores.push_back(h.score);
        std::vector<Hypothesis> sorted;
        for (size_t j : order_by(scores, /*descending=*/false)) sorted.push_back(b_hypos[j]);
        b_hypos = std::move(sorted);
      }
      if (symbols == step_max_tokens) break;
      // The best non-blank extensions (torchaudio scores every token but the last symbol).
      const int64_t n = int64_t(a_hypos.size()), W = V - 1;
      std::vector<float> cand(size_t(n * W));
      for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < W; k++) cand[size_t(i * W + k)] = float(a_hypos[size_t(i)].score) + p[i * V + k];
      auto [best, best_idx] = fw::tensor(cand).topk(std::min<int64_t>(beam_width, n * W));
      const float* bs = best.data_ptr<float>();
      const int64_t* bi = best_idx.data_ptr<int64_t>();
      const double b_floor = int64_t(b_hypos.size()) < beam_width
                                 ? -std::numeric_limits<double>::infinity()
                                 : b_hypos[b_hypos.size() - size_t(beam_width)].score;
      std::vector<Hypothesis> base;
      std::vector<int64_t> tokens;
      std::vector<double> new_scores;
      for (int64_t i = 0; i < best.numel(); i++) {
        if (double(bs[i]) > b_floor) {
          base.push_back(a_hypos[size_t(bi[i] / W)]);
          tokens.push_back(bi[i] % W);
          new_scores.push_back(bs[i]);
        }
      }
      a_hypos.clear();
      if (!base.empty()) {
        auto [pred_out, l, pred_states] =
            m.predict(fw::tensor(tokens, longs).unsqueeze(1), fw::ones({int64_t(base.size())}, longs),
                      batch_state(base));
        for (size_t i = 0; i < base.size(); i++) {
          std::vector<int64_t> toks = base[i].tokens;
          toks.push_back(tokens[i]);
          a_hypos.push_back(Hypothesis{toks, pred_out[int64_t(i)], slice_state(pred_states, int64_t(i)),
                                       new_scores[i]});
        }
        symbols++;
      }
    }
    std::vector<double> keys;
    for (const auto& h : b_hypos) keys.push_back(hypo_sort_key(h));
    std::vector<Hypothesis> kept;
    const auto order = order_by(keys, /*descending=*/true);
    for (size_t j = 0; j < order.size() && int64_t(j) < beam_width; j++) kept.push_back(b_hypos[order[j]]);
    b_hypos = std::move(kept);
  }
  return b_hypos;
}

std::vector<Hypothesis> RNNTBeamSearch::operator()(const Tensor& input, const Tensor& length, int64_t beam_width) {
  check_search_input("[audio::models::RNNTBeamSearch]", input, length, beam_width);
  NoGradGuard no_grad;
  Tensor x = input.dim() == 2 ? input.unsqueeze(0) : input;
  Tensor l = length.dim() == 0 ? length.unsqueeze(0) : length;
  auto [enc_out, enc_len] = model->transcribe(x, l);
  return search(enc_out, nullptr, beam_width);
}

std::tuple<std::vector<Hypothesis>, StreamState> RNNTBeamSearch::infer(const Tensor& input, const Tensor& length,
                                                                       int64_t beam_width,
                                                                       const std::optional<StreamState>& state,
                                                                       const Hypothesis* hypothesis) {
  check_search_input("[audio::models::RNNTBeamSearch::infer]", input, length, beam_width);
  if (hypothesis)
    FW_CHECK(!hypothesis->tokens.empty(), "[audio::models::RNNTBeamSearch::infer] the hypothesis to resume from has "
             "no tokens");
  NoGradGuard no_grad;
  Tensor x = input.dim() == 2 ? input.unsqueeze(0) : input;
  Tensor l = length.dim() == 0 ? length.unsqueeze(0) : length;
  auto [enc_out, enc_len, next_state] = model->transcribe_streaming(x, l, state);
  return {search(enc_out, hypothesis, beam_width), next_state};
}

}  // namespace fw::audio::models
