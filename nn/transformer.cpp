// Transformer encoder/decoder layers, stacks and the full model (libtorch 1.13's C++ frontend),
// composed from MultiheadAttention, Linear, Dropout and LayerNorm.
#include "fw/nn/modules/transformer.h"

#include <limits>

#include "fw/nn/init.h"

namespace fw::nn {

namespace {

Tensor activate(const activation_t& a, const Tensor& x) {
  if (std::holds_alternative<enumtype::kReLU>(a)) return fw::relu(x);
  if (std::holds_alternative<enumtype::kGELU>(a)) return fw::gelu(x);
  const auto& f = std::get<std::function<Tensor(const Tensor&)>>(a);
  FW_CHECK(static_cast<bool>(f), "[Transformer] the activation function is empty");
  return f(x);
}

void check_layer_options(const char* who, int64_t d_model, int64_t nhead, int64_t dim_feedforward, double dropout) {
  FW_CHECK(d_model > 0 && nhead > 0 && dim_feedforward > 0, "[", who,
           "] d_model, nhead and dim_feedforward must be positive, got ", d_model, ", ", nhead, ", ", dim_feedforward);
  FW_CHECK(d_model % nhead == 0, "[", who, "] d_model (", d_model, ") must be divisible by nhead (", nhead, ")");
  FW_CHECK(dropout >= 0 && dropout <= 1, "[", who, "] dropout must be in [0, 1], got ", dropout);
}

// (L, N, d_model) sequence-first input.
void check_input(const char* who, const char* name, const Tensor& t, int64_t d_model) {
  FW_CHECK(t.defined(), "[", who, "] ", name, " is undefined");
  FW_CHECK(t.dim() == 3 && t.size(2) == d_model, "[", who, "] ", name, " must be (sequence, batch, ", d_model,
           ") (sequence-first), got ", t.sizes());
}

// Self- or cross-attention output (weights not needed).
Tensor attend(MultiheadAttention& mha, const Tensor& q, const Tensor& kv, const Tensor& mask, const Tensor& kpm) {
  return std::get<0>(mha->forward(q, kv, kv, kpm, /*need_weights=*/false, mask));
}

LayerNorm make_norm(int64_t d_model) { return LayerNorm(LayerNormOptions({d_model})); }

}  // namespace

// ---- TransformerEncoderLayer

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(TransformerEncoderLayerOptions options_)
    : options(std::move(options_)) {
  reset();
}

void TransformerEncoderLayerImpl::reset() {
  const auto& o = options;
  check_layer_options("TransformerEncoderLayer", o.d_model(), o.nhead(), o.dim_feedforward(), o.dropout());
  // Registration order gives PyTorch's parameter names and order.
  self_attn = register_module(
      "self_attn", MultiheadAttention(MultiheadAttentionOptions(o.d_model(), o.nhead()).dropout(o.dropout())));
  linear1 = register_module("linear1", Linear(o.d_model(), o.dim_feedforward()));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2", Linear(o.dim_feedforward(), o.d_model()));
  norm1 = register_module("norm1", make_norm(o.d_model()));
  norm2 = register_module("norm2", make_norm(o.d_model()));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
}

void TransformerEncoderLayerImpl::reset_parameters() {
  self_attn->_reset_parameters();
  linear1->reset_parameters();
  linear2->reset_parameters();
  norm1->reset_parameters();
  norm2->reset_parameters();
}

Tensor TransformerEncoderLayerImpl::forward(const Tensor& src, const Tensor& src_mask,
                                            const Tensor& src_key_padding_mask) {
  check_input("TransformerEncoderLayer", "src", src, options.d_model());
  Tensor x = norm1(src + dropout1(attend(self_attn, src, src, src_mask, src_key_padding_mask)));
  Tensor ff = linear2(dropout(activate(options.activation(), linear1(x))));
  return norm2(x + dropout2(ff));
}

// ---- TransformerDecoderLayer

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(TransformerDecoderLayerOptions options_)
    : options(std::move(options_)) {
  reset();
}

void TransformerDecoderLayerImpl::reset() {
  const auto& o = options;
  check_layer_options("TransformerDecoderLayer", o.d_model(), o.nhead(), o.dim_feedforward(), o.dropout());
  auto mha = [&] { return MultiheadAttention(MultiheadAttentionOptions(o.d_model(), o.nhead()).dropout(o.dropout())); };
  self_attn = register_module("self_attn", mha());
  multihead_attn = register_module("multihead_attn", mha());
  linear1 = register_module("linear1", Linear(o.d_model(), o.dim_feedforward()));
  dropout = register_module("dropout", Dropout(o.dropout()));
  linear2 = register_module("linear2", Linear(o.dim_feedforward(), o.d_model()));
  norm1 = register_module("norm1", make_norm(o.d_model()));
  norm2 = register_module("norm2", make_norm(o.d_model()));
  norm3 = register_module("norm3", make_norm(o.d_model()));
  dropout1 = register_module("dropout1", Dropout(o.dropout()));
  dropout2 = register_module("dropout2", Dropout(o.dropout()));
  dropout3 = register_module("dropout3", Dropout(o.dropout()));
}

void TransformerDecoderLayerImpl::reset_parameters() {
  self_attn->_reset_parameters();
  multihead_attn->_reset_parameters();
  linear1->reset_parameters();
  linear2->reset_parameters();
  norm1->reset_parameters();
  norm2->reset_parameters();
  norm3->reset_parameters();
}

Tensor TransformerDecoderLayerImpl::forward(Tensor tgt, const Tensor& memory, const Tensor& tgt_mask,
                                            const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                            const Tensor& memory_key_padding_mask) {
  const char* who = "TransformerDecoderLayer";
  check_input(who, "tgt", tgt, options.d_model());
  check_input(who, "memory", memory, options.d_model());
  FW_CHECK(tgt.size(1) == memory.size(1), "[", who, "] tgt and memory must have the same batch size (dim 1), got ",
           tgt.sizes(), " and ", memory.sizes());
  tgt = norm1(tgt + dropout1(attend(self_attn, tgt, tgt, tgt_mask, tgt_key_padding_mask)));
  tgt = norm2(tgt + dropout2(attend(multihead_attn, tgt, memory, memory_mask, memory_key_padding_mask)));
  Tensor ff = linear2(dropout(activate(options.activation(), linear1(tgt))));
  return norm3(tgt + dropout3(ff));
}

// ---- TransformerEncoder / TransformerDecoder

namespace {

// num_layers deep copies of `layer` in a ModuleList, and a deep copy of the norm (if any),
// registered as "layers" and "norm".
template <class Layer>
void build_stack(Module& self, const char* who, const Layer& layer, int64_t num_layers, const AnyModule& norm_in,
                 ModuleList& layers, AnyModule& norm) {
  FW_CHECK(!layer.is_empty(), "[", who, "] the layer to copy is empty (nullptr)");
  FW_CHECK(num_layers >= 0, "[", who, "] num_layers must be non-negative, got ", num_layers);
  layers = self.register_module("layers", ModuleList());
  for (int64_t i = 0; i < num_layers; i++) layers->push_back(layer->clone());
  norm = norm_in.is_empty() ? AnyModule() : norm_in.clone();
  if (!norm.is_empty()) self.register_module("norm", norm.ptr());
}

// libtorch's reset_parameters for a stack: each layer's, and the norm replaced by a fresh copy of
// options.norm() (an AnyModule may hold any norm, so it is re-cloned rather than reset in place).
template <class LayerImpl>
void reset_stack(Module& self, const char* who, int64_t num_layers, const AnyModule& norm_in, ModuleList& layers,
                 AnyModule& norm) {
  FW_CHECK(layers->size() == size_t(num_layers), "[", who, "] should have ", num_layers, " layers, but got ",
           layers->size());
  for (size_t i = 0; i < layers->size(); i++) layers->at<LayerImpl>(i).reset_parameters();
  if (!norm.is_empty()) {
    self.unregister_module("norm");
    norm = AnyModule();
  }
  if (!norm_in.is_empty()) {
    norm = norm_in.clone();
    self.register_module("norm", norm.ptr());
  }
}

}  // namespace

TransformerEncoderImpl::TransformerEncoderImpl(TransformerEncoderOptions options_) : options(std::move(options_)) {
  reset();
}

void TransformerEncoderImpl::reset() {
  build_stack(*this, "TransformerEncoder", options.encoder_layer(), options.num_layers(), options.norm(), layers, norm);
}

void TransformerEncoderImpl::reset_parameters() {
  reset_stack<TransformerEncoderLayerImpl>(*this, "TransformerEncoder", options.num_layers(), options.norm(), layers, norm);
}

Tensor TransformerEncoderImpl::forward(const Tensor& src, const Tensor& src_mask, const Tensor& src_key_padding_mask) {
  Tensor out = src;
  for (size_t i = 0; i < layers->size(); i++)
    out = layers->at<TransformerEncoderLayerImpl>(i).forward(out, src_mask, src_key_padding_mask);
  return norm.is_empty() ? out : norm.forward(out);
}

TransformerDecoderImpl::TransformerDecoderImpl(TransformerDecoderOptions options_) : options(std::move(options_)) {
  reset();
}

void TransformerDecoderImpl::reset() {
  build_stack(*this, "TransformerDecoder", options.decoder_layer(), options.num_layers(), options.norm(), layers, norm);
}

void TransformerDecoderImpl::reset_parameters() {
  reset_stack<TransformerDecoderLayerImpl>(*this, "TransformerDecoder", options.num_layers(), options.norm(), layers, norm);
}

Tensor TransformerDecoderImpl::forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask,
                                       const Tensor& memory_mask, const Tensor& tgt_key_padding_mask,
                                       const Tensor& memory_key_padding_mask) {
  Tensor out = tgt;
  for (size_t i = 0; i < layers->size(); i++)
    out = layers->at<TransformerDecoderLayerImpl>(i).forward(out, memory, tgt_mask, memory_mask, tgt_key_padding_mask,
                                                             memory_key_padding_mask);
  return norm.is_empty() ? out : norm.forward(out);
}

// ---- Transformer

TransformerImpl::TransformerImpl(TransformerOptions options_) : options(std::move(options_)) { reset(); }

void TransformerImpl::reset() {
  const auto& o = options;
  if (o.custom_encoder().is_empty()) {
    auto layer = TransformerEncoderLayerOptions(o.d_model(), o.nhead())
                     .dim_feedforward(o.dim_feedforward())
                     .dropout(o.dropout())
                     .activation(o.activation());
    encoder = AnyModule(TransformerEncoder(
        TransformerEncoderOptions(layer, o.num_encoder_layers()).norm(AnyModule(make_norm(o.d_model())))));
  } else {
    encoder = o.custom_encoder().clone();
  }
  register_module("encoder", encoder.ptr());
  if (o.custom_decoder().is_empty()) {
    auto layer = TransformerDecoderLayerOptions(o.d_model(), o.nhead())
                     .dim_feedforward(o.dim_feedforward())
                     .dropout(o.dropout())
                     .activation(o.activation());
    decoder = AnyModule(TransformerDecoder(
        TransformerDecoderOptions(layer, o.num_decoder_layers()).norm(AnyModule(make_norm(o.d_model())))));
  } else {
    decoder = o.custom_decoder().clone();
  }
  register_module("decoder", decoder.ptr());
  reset_parameters();
}

void TransformerImpl::reset_parameters() {
  for (auto& p : parameters())
    if (p.dim() > 1) init::xavier_uniform_(p);
}

Tensor TransformerImpl::forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask, const Tensor& tgt_mask,
                                const Tensor& memory_mask, const Tensor& src_key_padding_mask,
                                const Tensor& tgt_key_padding_mask, const Tensor& memory_key_padding_mask) {
  const char* who = "Transformer";
  check_input(who, "src", src, options.d_model());
  check_input(who, "tgt", tgt, options.d_model());
  FW_CHECK(src.size(1) == tgt.size(1), "[", who, "] src and tgt should have equal batch size (at dim 1), got ",
           src.sizes(), " and ", tgt.sizes());
  Tensor memory = encoder.forward<Tensor>(src, src_mask, src_key_padding_mask);
  return decoder.forward<Tensor>(tgt, memory, tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask);
}

Tensor TransformerImpl::generate_square_subsequent_mask(int64_t sz) {
  FW_CHECK(sz >= 0, "[Transformer] generate_square_subsequent_mask: sz must be non-negative, got ", sz);
  return fw::triu(fw::full({sz, sz}, -std::numeric_limits<double>::infinity()), 1);
}

}  // namespace fw::nn
