// Multi-head attention as libtorch's C++ frontend has it: functional::multi_head_attention_forward
// with MultiheadAttentionForwardFuncOptions, and the MultiheadAttention module. Inputs are
// sequence-first, (L, N, E) queries and (S, N, kdim) / (S, N, vdim) keys and values (libtorch's
// C++ module has no batch_first).
#pragma once
#include <tuple>

#include "fw/nn/functional.h"
#include "fw/nn/module.h"
#include "fw/nn/modules/linear.h"

namespace fw::nn {

// Options of MultiheadAttention: embed_dim, num_heads, dropout (0, on the attention weights),
// bias (true), add_bias_kv, add_zero_attn (false), kdim and vdim (default embed_dim).
struct MultiheadAttentionOptions {
  MultiheadAttentionOptions(int64_t embed_dim, int64_t num_heads)
      : embed_dim_(embed_dim), num_heads_(num_heads), kdim_(embed_dim), vdim_(embed_dim) {}
  FW_ARG(int64_t, embed_dim);
  FW_ARG(int64_t, num_heads);
  FW_ARG(double, dropout) = 0.0;
  FW_ARG(bool, bias) = true;
  FW_ARG(bool, add_bias_kv) = false;
  FW_ARG(bool, add_zero_attn) = false;
  FW_ARG(int64_t, kdim);
  FW_ARG(int64_t, vdim);
};

namespace functional {

// Arguments of multi_head_attention_forward beyond query, key and value (libtorch's fields and
// defaults). Masks: attn_mask (L, S) or (N * num_heads, L, S), key_padding_mask (N, S); a bool
// (or uint8) mask marks positions to leave out (true), a floating mask is added to the scores.
struct MultiheadAttentionForwardFuncOptions {
  MultiheadAttentionForwardFuncOptions(int64_t embed_dim_to_check, int64_t num_heads, Tensor in_proj_weight,
                                       Tensor in_proj_bias, Tensor bias_k, Tensor bias_v, bool add_zero_attn,
                                       double dropout_p, Tensor out_proj_weight, Tensor out_proj_bias)
      : embed_dim_to_check_(embed_dim_to_check),
        num_heads_(num_heads),
        in_proj_weight_(std::move(in_proj_weight)),
        in_proj_bias_(std::move(in_proj_bias)),
        bias_k_(std::move(bias_k)),
        bias_v_(std::move(bias_v)),
        add_zero_attn_(add_zero_attn),
        dropout_p_(dropout_p),
        out_proj_weight_(std::move(out_proj_weight)),
        out_proj_bias_(std::move(out_proj_bias)) {}
  FW_ARG(int64_t, embed_dim_to_check);
  FW_ARG(int64_t, num_heads);
  FW_ARG(Tensor, in_proj_weight);
  FW_ARG(Tensor, in_proj_bias);
  FW_ARG(Tensor, bias_k);
  FW_ARG(Tensor, bias_v);
  FW_ARG(bool, add_zero_attn);
  FW_ARG(double, dropout_p);
  FW_ARG(Tensor, out_proj_weight);
  FW_ARG(Tensor, out_proj_bias);
  FW_ARG(bool, training) = true;
  FW_ARG(Tensor, key_padding_mask);
  FW_ARG(bool, need_weights) = true;
  FW_ARG(Tensor, attn_mask);
  FW_ARG(bool, use_separate_proj_weight) = false;
  FW_ARG(Tensor, q_proj_weight);
  FW_ARG(Tensor, k_proj_weight);
  FW_ARG(Tensor, v_proj_weight);
  FW_ARG(Tensor, static_k);
  FW_ARG(Tensor, static_v);
  FW_ARG(bool, average_attn_weights) = true;
};

// Returns (output (L, N, E), weights): weights are (N, L, S) averaged over heads, (N, num_heads,
// L, S) without average_attn_weights, undefined without need_weights. S counts the bias_k and
// zero-attention columns when those are added.
std::tuple<Tensor, Tensor> multi_head_attention_forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                        const MultiheadAttentionForwardFuncOptions& options);

}  // namespace functional

// Multi-head attention with learnable projections: in_proj_weight (3E, E) (or q/k/v_proj_weight
// when kdim or vdim differ from E), in_proj_bias (3E), out_proj (Linear E -> E), bias_k and
// bias_v (1, 1, E) with add_bias_kv. Initialised as libtorch: xavier_uniform_ projections, zero
// biases, xavier_normal_ bias_k/bias_v, out_proj's weight as a Linear's.
class MultiheadAttentionImpl : public Cloneable<MultiheadAttentionImpl> {
 public:
  MultiheadAttentionImpl(int64_t embed_dim, int64_t num_heads)
      : MultiheadAttentionImpl(MultiheadAttentionOptions(embed_dim, num_heads)) {}
  explicit MultiheadAttentionImpl(const MultiheadAttentionOptions& options_);

  std::tuple<Tensor, Tensor> forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                     const Tensor& key_padding_mask = {}, bool need_weights = true,
                                     const Tensor& attn_mask = {}, bool average_attn_weights = true);
  void reset() override;
  // Re-initialises the parameters (see the class comment).
  void _reset_parameters();

  MultiheadAttentionOptions options;
  bool _qkv_same_embed_dim = true;
  Tensor in_proj_weight;
  Tensor in_proj_bias;
  Tensor bias_k;
  Tensor bias_v;
  Linear out_proj = nullptr;
  Tensor q_proj_weight;
  Tensor k_proj_weight;
  Tensor v_proj_weight;
  int64_t head_dim = 0;
};
FW_MODULE(MultiheadAttention);

}  // namespace fw::nn
