// Multi-head attention (functional and module), composed from differentiable fw ops.
#include "fw/nn/modules/multihead_attention.h"

#include <cmath>
#include <limits>

#include "fw/nn/init.h"

namespace fw::nn {

namespace functional {

namespace {

constexpr const char* kOp = "[multi_head_attention_forward] ";

// mask with one more column (zeros: "attend", or false) at the end of its last dim.
Tensor pad_column(const Tensor& mask) {
  if (!mask.defined()) return mask;
  std::vector<int64_t> shape(mask.sizes().begin(), mask.sizes().end());
  shape.back() = 1;
  return fw::cat({mask, fw::zeros(shape, mask.options())}, -1);
}

bool is_bool_mask(const Tensor& m, const char* name) {
  const bool b = m.dtype() == kBool || m.dtype() == kByte;
  FW_CHECK(b || m.is_floating_point(), kOp, "only bool and floating-point ", name, "s are supported, got ", m.dtype());
  return b;
}

// scores + mask (floating) or scores with -inf where mask is true (bool / uint8).
Tensor apply_mask(const Tensor& scores, const Tensor& mask, const char* name) {
  if (is_bool_mask(mask, name)) {
    Tensor m = mask.to(kBool);
    // In eager mode a mask with nothing set (a batch without padding) leaves the scores as they
    // are; the check reads the small mask, not the (N * heads, L, S) scores. While fw::compile
    // traces, reading the mask would break the graph, so the fill is always recorded.
    if (fw::detail::g_traces_active.load(std::memory_order_relaxed) == 0 && !m.any().item<bool>())
      return scores;
    return scores.masked_fill(m, -std::numeric_limits<double>::infinity());
  }
  return scores + mask.to(scores.dtype());
}

struct Projected {
  Tensor q, k, v;
};

// Note [MHA projections]
// libtorch picks a fused projection when query, key and value compare equal by value, which
// routes the gradient of key and value through query. fw always projects each input with its
// own slice of the weights: the same values, and every input gets its own gradient.
Projected project(const Tensor& query, const Tensor& key, const Tensor& value,
                  const MultiheadAttentionForwardFuncOptions& o) {
  const int64_t e = query.size(2);
  const Tensor& b = o.in_proj_bias();
  if (b.defined())
    FW_CHECK(b.dim() == 1 && b.size(0) == 3 * e, kOp, "in_proj_bias must have shape [", 3 * e, "], got ", b.sizes());
  auto bias = [&](int64_t i) { return b.defined() ? b.narrow(0, i * e, e) : Tensor(); };
  Tensor wq, wk, wv;
  if (!o.use_separate_proj_weight()) {
    const Tensor& w = o.in_proj_weight();
    FW_CHECK(w.defined() && w.dim() == 2 && w.size(0) == 3 * e && w.size(1) == e, kOp,
             "in_proj_weight must have shape [", 3 * e, ", ", e, "], got ",
             w.defined() ? w.sizes() : IntArrayRef());
    FW_CHECK(key.size(2) == e && value.size(2) == e, kOp, "key and value need embed_dim ", e,
             " features without separate projection weights, got key ", key.sizes(), " and value ", value.sizes());
    wq = w.narrow(0, 0, e);
    wk = w.narrow(0, e, e);
    wv = w.narrow(0, 2 * e, e);
  } else {
    auto check = [&](const Tensor& w, const Tensor& x, const char* wname, const char* xname) {
      FW_CHECK(w.defined() && w.dim() == 2 && w.size(0) == e && w.size(1) == x.size(2), kOp, wname,
               " must have shape [", e, ", ", x.size(2), "] for ", xname, " of shape ", x.sizes(), ", got ",
               w.defined() ? w.sizes() : IntArrayRef());
    };
    check(o.q_proj_weight(), query, "q_proj_weight", "query");
    check(o.k_proj_weight(), key, "k_proj_weight", "key");
    check(o.v_proj_weight(), value, "v_proj_weight", "value");
    wq = o.q_proj_weight();
    wk = o.k_proj_weight();
    wv = o.v_proj_weight();
  }
  return {fw::linear(query, wq, bias(0)), fw::linear(key, wk, bias(1)), fw::linear(value, wv, bias(2))};
}

// (len, N, E) -> (N * heads, len, head_dim).
Tensor split_heads(const Tensor& x, int64_t n_heads, int64_t head_dim) {
  return x.contiguous().view({x.size(0), x.size(1) * n_heads, head_dim}).transpose(0, 1);
}

// static_k / static_v replace the projected keys / values: (N * heads, S, head_dim).
Tensor take_static(const Tensor& s, const Tensor& projected, int64_t bh, int64_t head_dim, const char* name) {
  if (!s.defined()) return projected;
  FW_CHECK(s.dim() == 3 && s.size(0) == bh && s.size(2) == head_dim, kOp, name, " must have shape [", bh,
           ", S, ", head_dim, "], got ", s.sizes());
  return s;
}

}  // namespace

std::tuple<Tensor, Tensor> multi_head_attention_forward(const Tensor& query, const Tensor& key, const Tensor& value,
                                                        const MultiheadAttentionForwardFuncOptions& o) {
  FW_CHECK(query.defined() && key.defined() && value.defined(), kOp, "query, key and value must be defined");
  FW_CHECK(query.dim() == 3 && key.dim() == 3 && value.dim() == 3, kOp,
           "expected query (L, N, E), key (S, N, kdim) and value (S, N, vdim), got query ", query.sizes(), ", key ",
           key.sizes(), ", value ", value.sizes());
  const int64_t tgt_len = query.size(0), bsz = query.size(1), embed_dim = query.size(2);
  FW_CHECK(embed_dim == o.embed_dim_to_check(), kOp, "query has embed_dim ", embed_dim, " but embed_dim_to_check is ",
           o.embed_dim_to_check());
  FW_CHECK(key.size(0) == value.size(0) && key.size(1) == bsz && value.size(1) == bsz, kOp,
           "key and value must have the same length and query's batch size, got query ", query.sizes(), ", key ",
           key.sizes(), ", value ", value.sizes());
  const int64_t heads = o.num_heads();
  FW_CHECK(heads > 0 && embed_dim % heads == 0, kOp, "embed_dim must be divisible by num_heads (embed_dim ",
           embed_dim, ", num_heads ", heads, ")");
  const int64_t head_dim = embed_dim / heads, bh = bsz * heads;

  auto [q, k, v] = project(query, key, value, o);
  q = q * (1.0 / std::sqrt(double(head_dim)));

  Tensor attn_mask = o.attn_mask(), key_padding_mask = o.key_padding_mask();
  FW_CHECK(o.bias_k().defined() == o.bias_v().defined(), kOp, "bias_k and bias_v must be given together");
  if (o.bias_k().defined()) {
    FW_CHECK(!o.static_k().defined() && !o.static_v().defined(), kOp,
             "bias_k / bias_v cannot be added to static_k / static_v");
    for (const Tensor* b : {&o.bias_k(), &o.bias_v()})
      FW_CHECK(b->numel() == embed_dim, kOp, "bias_k and bias_v must hold embed_dim (", embed_dim,
               ") values, got shape ", b->sizes());
    k = fw::cat({k, o.bias_k().reshape({1, 1, embed_dim}).expand({1, bsz, embed_dim})});
    v = fw::cat({v, o.bias_v().reshape({1, 1, embed_dim}).expand({1, bsz, embed_dim})});
    attn_mask = pad_column(attn_mask);
    key_padding_mask = pad_column(key_padding_mask);
  }

  q = split_heads(q, heads, head_dim);
  k = take_static(o.static_k(), split_heads(k, heads, head_dim), bh, head_dim, "static_k");
  v = take_static(o.static_v(), split_heads(v, heads, head_dim), bh, head_dim, "static_v");
  FW_CHECK(k.size(1) == v.size(1), kOp, "keys and values differ in length (", k.size(1), " vs ", v.size(1), ")");

  if (o.add_zero_attn()) {
    k = fw::cat({k, fw::zeros({bh, 1, head_dim}, k.options())}, 1);
    v = fw::cat({v, fw::zeros({bh, 1, head_dim}, v.options())}, 1);
    attn_mask = pad_column(attn_mask);
    key_padding_mask = pad_column(key_padding_mask);
  }
  const int64_t src_len = k.size(1);

  Tensor scores = fw::bmm(q, k.transpose(1, 2));  // (N * heads, L, S)
  if (attn_mask.defined()) {
    const bool ok2 = attn_mask.dim() == 2 && attn_mask.size(0) == tgt_len && attn_mask.size(1) == src_len;
    const bool ok3 = attn_mask.dim() == 3 && attn_mask.size(0) == bh && attn_mask.size(1) == tgt_len &&
                     attn_mask.size(2) == src_len;
    FW_CHECK(ok2 || ok3, kOp, "attn_mask must have shape [", tgt_len, ", ", src_len, "] or [", bh, ", ", tgt_len,
             ", ", src_len, "] (with added bias/zero columns), got ", attn_mask.sizes());
    scores = apply_mask(scores, ok2 ? attn_mask.unsqueeze(0) : attn_mask, "attn_mask");
  }
  if (key_padding_mask.defined()) {
    FW_CHECK(key_padding_mask.dim() == 2 && key_padding_mask.size(0) == bsz && key_padding_mask.size(1) == src_len,
             kOp, "key_padding_mask must have shape [", bsz, ", ", src_len, "] (with added bias/zero columns), got ",
             key_padding_mask.sizes());
    scores = apply_mask(scores.view({bsz, heads, tgt_len, src_len}),
                        key_padding_mask.view({bsz, 1, 1, src_len}), "key_padding_mask")
                 .view({bh, tgt_len, src_len});
  }
  Tensor weights = fw::softmax(scores, -1);
  if (o.dropout_p() > 0) weights = fw::dropout(weights, o.dropout_p(), o.training());

  Tensor out = fw::bmm(weights, v).transpose(0, 1).contiguous().view({tgt_len, bsz, embed_dim});
  out = fw::linear(out, o.out_proj_weight(), o.out_proj_bias());
  if (!o.need_weights()) return {out, Tensor()};
  weights = weights.view({bsz, heads, tgt_len, src_len});
  if (o.average_attn_weights()) weights = fw::mean(weights, {1});
  return {out, weights};
}

}  // namespace functional

MultiheadAttentionImpl::MultiheadAttentionImpl(const MultiheadAttentionOptions& options_)
    : Cloneable("fw::nn::MultiheadAttention"), options(options_) {
  reset();
}

void MultiheadAttentionImpl::reset() {
  const int64_t e = options.embed_dim(), heads = options.num_heads();
  FW_CHECK(e > 0 && options.kdim() > 0 && options.vdim() > 0, "[MultiheadAttention] embed_dim, kdim and vdim must "
           "be positive, got ", e, ", ", options.kdim(), ", ", options.vdim());
  FW_CHECK(heads > 0, "[MultiheadAttention] num_heads must be greater than 0, got ", heads);
  FW_CHECK(e % heads == 0, "[MultiheadAttention] embed_dim must be divisible by num_heads (embed_dim ", e,
           ", num_heads ", heads, ")");
  head_dim = e / heads;
  _qkv_same_embed_dim = options.kdim() == e && options.vdim() == e;
  if (!_qkv_same_embed_dim) {
    q_proj_weight = register_parameter("q_proj_weight", fw::empty({e, e}));
    k_proj_weight = register_parameter("k_proj_weight", fw::empty({e, options.kdim()}));
    v_proj_weight = register_parameter("v_proj_weight", fw::empty({e, options.vdim()}));
    in_proj_weight = register_parameter("in_proj_weight", Tensor(), false);
  } else {
    in_proj_weight = register_parameter("in_proj_weight", fw::empty({3 * e, e}));
    q_proj_weight = register_parameter("q_proj_weight", Tensor(), false);
    k_proj_weight = register_parameter("k_proj_weight", Tensor(), false);
    v_proj_weight = register_parameter("v_proj_weight", Tensor(), false);
  }
  in_proj_bias = register_parameter("in_proj_bias", options.bias() ? fw::empty({3 * e}) : Tensor(), options.bias());
  out_proj = register_module("out_proj", Linear(LinearOptions(e, e).bias(options.bias())));
  if (options.add_bias_kv()) {
    bias_k = register_parameter("bias_k", fw::empty({1, 1, e}));
    bias_v = register_parameter("bias_v", fw::empty({1, 1, e}));
  } else {
    bias_k = Tensor();
    bias_v = Tensor();
  }
  _reset_parameters();
}

void MultiheadAttentionImpl::_reset_parameters() {
  if (_qkv_same_embed_dim) {
    init::xavier_uniform_(in_proj_weight);
  } else {
    init::xavier_uniform_(q_proj_weight);
    init::xavier_uniform_(k_proj_weight);
    init::xavier_uniform_(v_proj_weight);
  }
  if (in_proj_bias.defined()) {
    init::constant_(in_proj_bias, 0.0);
    init::constant_(out_proj->bias, 0.0);
  }
  if (bias_k.defined()) init::xavier_normal_(bias_k);
  if (bias_v.defined()) init::xavier_normal_(bias_v);
}

std::tuple<Tensor, Tensor> MultiheadAttentionImpl::forward(const Tensor& query, const Tensor& key,
                                                           const Tensor& value, const Tensor& key_padding_mask,
                                                           bool need_weights, const Tensor& attn_mask,
                                                           bool average_attn_weights) {
  auto o = functional::MultiheadAttentionForwardFuncOptions(options.embed_dim(), options.num_heads(), in_proj_weight,
                                                            in_proj_bias, bias_k, bias_v, options.add_zero_attn(),
                                                            options.dropout(), out_proj->weight, out_proj->bias)
               .training(is_training())
               .key_padding_mask(key_padding_mask)
               .need_weights(need_weights)
               .attn_mask(attn_mask)
               .average_attn_weights(average_attn_weights);
  if (!_qkv_same_embed_dim)
    o.use_separate_proj_weight(true).q_proj_weight(q_proj_weight).k_proj_weight(k_proj_weight).v_proj_weight(
        v_proj_weight);
  return functional::multi_head_attention_forward(query, key, value, o);
}

}  // namespace fw::nn
