// Transformer layers as libtorch 1.13's C++ frontend has them: TransformerEncoderLayer,
// TransformerDecoderLayer, TransformerEncoder, TransformerDecoder and Transformer. Inputs are
// sequence-first, (S, N, E) sources and (T, N, E) targets; layers normalise after each residual
// (post-norm) with LayerNorm eps 1e-5, as libtorch's C++ layers do.
//   fw::nn::TransformerEncoder enc(fw::nn::TransformerEncoderOptions(
//       fw::nn::TransformerEncoderLayerOptions(64, 4).dim_feedforward(256), 3));
//   auto memory = enc(src, fw::nn::TransformerImpl::generate_square_subsequent_mask(src.size(0)));
#pragma once
#include <functional>
#include <variant>

#include "fw/nn/modules/container.h"
#include "fw/nn/init.h"
#include "fw/nn/modules/dropout.h"
#include "fw/nn/modules/linear.h"
#include "fw/nn/modules/multihead_attention.h"
#include "fw/nn/modules/normalization.h"

namespace fw {
namespace enumtype {
struct kGELU {
  static constexpr const char* name() { return "gelu"; }
  bool operator==(const kGELU&) const { return true; }
  bool operator!=(const kGELU&) const { return false; }
};
}  // namespace enumtype
inline constexpr enumtype::kGELU kGELU{};

namespace nn {

// The feed-forward activation: fw::kReLU, fw::kGELU or any Tensor -> Tensor function.
using activation_t = std::variant<enumtype::kReLU, enumtype::kGELU, std::function<Tensor(const Tensor&)>>;

// Options of TransformerEncoderLayer: d_model, nhead, dim_feedforward (2048), dropout (0.1),
// activation (fw::kReLU).
struct TransformerEncoderLayerOptions {
  TransformerEncoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  FW_ARG(int64_t, d_model);
  FW_ARG(int64_t, nhead);
  FW_ARG(int64_t, dim_feedforward) = 2048;
  FW_ARG(double, dropout) = 0.1;
  FW_ARG(activation_t, activation) = enumtype::kReLU();
};

// Self-attention then a two-layer feed-forward block, each added to its input and layer-normed:
//   x = norm1(src + dropout1(self_attn(src, src, src)));  out = norm2(x + dropout2(ff(x)))
// with ff(x) = linear2(dropout(activation(linear1(x)))).
class TransformerEncoderLayerImpl : public Cloneable<TransformerEncoderLayerImpl> {
 public:
  TransformerEncoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerEncoderLayerImpl(TransformerEncoderLayerOptions(d_model, nhead)) {}
  explicit TransformerEncoderLayerImpl(TransformerEncoderLayerOptions options_);
  // src (S, N, E); src_mask (S, S) or (N * nhead, S, S); src_key_padding_mask (N, S).
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {});
  void reset() override;
  void reset_parameters();

  TransformerEncoderLayerOptions options;
  MultiheadAttention self_attn = nullptr;
  Linear linear1 = nullptr;
  Dropout dropout = nullptr;
  Linear linear2 = nullptr;
  LayerNorm norm1 = nullptr;
  LayerNorm norm2 = nullptr;
  Dropout dropout1 = nullptr;
  Dropout dropout2 = nullptr;
};
FW_MODULE(TransformerEncoderLayer);

// Options of TransformerDecoderLayer: as the encoder layer's.
struct TransformerDecoderLayerOptions {
  TransformerDecoderLayerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  FW_ARG(int64_t, d_model);
  FW_ARG(int64_t, nhead);
  FW_ARG(int64_t, dim_feedforward) = 2048;
  FW_ARG(double, dropout) = 0.1;
  FW_ARG(activation_t, activation) = enumtype::kReLU();
};

// Self-attention over the target, attention to the encoder's memory, then the feed-forward block;
// each is added to its input and layer-normed (norm1, norm2, norm3).
class TransformerDecoderLayerImpl : public Cloneable<TransformerDecoderLayerImpl> {
 public:
  TransformerDecoderLayerImpl(int64_t d_model, int64_t nhead)
      : TransformerDecoderLayerImpl(TransformerDecoderLayerOptions(d_model, nhead)) {}
  explicit TransformerDecoderLayerImpl(TransformerDecoderLayerOptions options_);
  // tgt (T, N, E), memory (S, N, E); tgt_mask (T, T), memory_mask (T, S); padding masks (N, T)
  // and (N, S).
  Tensor forward(Tensor tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {});
  void reset() override;
  void reset_parameters();

  TransformerDecoderLayerOptions options;
  MultiheadAttention self_attn = nullptr;
  Dropout dropout1 = nullptr;
  LayerNorm norm1 = nullptr;
  MultiheadAttention multihead_attn = nullptr;
  Dropout dropout2 = nullptr;
  LayerNorm norm2 = nullptr;
  Linear linear1 = nullptr;
  Dropout dropout = nullptr;
  Linear linear2 = nullptr;
  Dropout dropout3 = nullptr;
  LayerNorm norm3 = nullptr;
};
FW_MODULE(TransformerDecoderLayer);

// Options of TransformerEncoder: the layer to copy num_layers times, and an optional final norm.
struct TransformerEncoderOptions {
  TransformerEncoderOptions(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : encoder_layer_(std::move(encoder_layer)), num_layers_(num_layers) {}
  TransformerEncoderOptions(const TransformerEncoderLayerOptions& encoder_layer_options, int64_t num_layers)
      : encoder_layer_(TransformerEncoderLayer(encoder_layer_options)), num_layers_(num_layers) {}
  FW_ARG(TransformerEncoderLayer, encoder_layer) = nullptr;
  FW_ARG(int64_t, num_layers);
  FW_ARG(AnyModule, norm);
};

// num_layers deep copies of encoder_layer (layers, a ModuleList) applied in turn, then norm.
// With no layers and no norm forward returns src (as PyTorch; libtorch 1.13 returns an undefined
// tensor). reset_parameters() resets each layer and replaces norm by a fresh copy of options.norm().
class TransformerEncoderImpl : public Cloneable<TransformerEncoderImpl> {
 public:
  TransformerEncoderImpl(TransformerEncoderLayer encoder_layer, int64_t num_layers)
      : TransformerEncoderImpl(TransformerEncoderOptions(std::move(encoder_layer), num_layers)) {}
  explicit TransformerEncoderImpl(TransformerEncoderOptions options_);
  Tensor forward(const Tensor& src, const Tensor& src_mask = {}, const Tensor& src_key_padding_mask = {});
  void reset() override;
  void reset_parameters();

  TransformerEncoderOptions options;
  ModuleList layers = nullptr;
  AnyModule norm;
};
FW_MODULE(TransformerEncoder);

// Options of TransformerDecoder: the layer to copy num_layers times, and an optional final norm.
struct TransformerDecoderOptions {
  TransformerDecoderOptions(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : decoder_layer_(std::move(decoder_layer)), num_layers_(num_layers) {}
  TransformerDecoderOptions(const TransformerDecoderLayerOptions& decoder_layer_options, int64_t num_layers)
      : decoder_layer_(TransformerDecoderLayer(decoder_layer_options)), num_layers_(num_layers) {}
  FW_ARG(TransformerDecoderLayer, decoder_layer) = nullptr;
  FW_ARG(int64_t, num_layers);
  FW_ARG(AnyModule, norm);
};

class TransformerDecoderImpl : public Cloneable<TransformerDecoderImpl> {
 public:
  TransformerDecoderImpl(TransformerDecoderLayer decoder_layer, int64_t num_layers)
      : TransformerDecoderImpl(TransformerDecoderOptions(std::move(decoder_layer), num_layers)) {}
  explicit TransformerDecoderImpl(TransformerDecoderOptions options_);
  Tensor forward(const Tensor& tgt, const Tensor& memory, const Tensor& tgt_mask = {}, const Tensor& memory_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {});
  void reset() override;
  void reset_parameters();

  TransformerDecoderOptions options;
  ModuleList layers = nullptr;
  AnyModule norm;
};
FW_MODULE(TransformerDecoder);

// Options of Transformer: d_model (512), nhead (8), num_encoder_layers (6), num_decoder_layers
// (6), dim_feedforward (2048), dropout (0.1), activation (fw::kReLU), and custom_encoder /
// custom_decoder to use instead of the built-in stacks. A custom encoder is called as
// forward(src, src_mask, src_key_padding_mask) and a custom decoder as forward(tgt, memory,
// tgt_mask, memory_mask, tgt_key_padding_mask, memory_key_padding_mask), all Tensors.
struct TransformerOptions {
  TransformerOptions() = default;
  TransformerOptions(int64_t d_model, int64_t nhead) : d_model_(d_model), nhead_(nhead) {}
  TransformerOptions(int64_t d_model, int64_t nhead, int64_t num_encoder_layers, int64_t num_decoder_layers)
      : d_model_(d_model),
        nhead_(nhead),
        num_encoder_layers_(num_encoder_layers),
        num_decoder_layers_(num_decoder_layers) {}
  FW_ARG(int64_t, d_model) = 512;
  FW_ARG(int64_t, nhead) = 8;
  FW_ARG(int64_t, num_encoder_layers) = 6;
  FW_ARG(int64_t, num_decoder_layers) = 6;
  FW_ARG(int64_t, dim_feedforward) = 2048;
  FW_ARG(double, dropout) = 0.1;
  FW_ARG(activation_t, activation) = enumtype::kReLU();
  FW_ARG(AnyModule, custom_encoder);
  FW_ARG(AnyModule, custom_decoder);
};

// The encoder-decoder model: memory = encoder(src), out = decoder(tgt, memory). Without custom
// modules both stacks end in a LayerNorm. reset_parameters() (also run by the constructor)
// re-initialises every parameter with more than one dim with xavier_uniform_, a custom module's
// included, as libtorch does.
class TransformerImpl : public Cloneable<TransformerImpl> {
 public:
  explicit TransformerImpl(TransformerOptions options_);
  Tensor forward(const Tensor& src, const Tensor& tgt, const Tensor& src_mask = {}, const Tensor& tgt_mask = {},
                 const Tensor& memory_mask = {}, const Tensor& src_key_padding_mask = {},
                 const Tensor& tgt_key_padding_mask = {}, const Tensor& memory_key_padding_mask = {});
  void reset() override;
  void reset_parameters();
  // A float (sz, sz) mask with -inf above the diagonal and 0 elsewhere: position i attends to
  // positions <= i.
  static Tensor generate_square_subsequent_mask(int64_t sz);

  TransformerOptions options;
  AnyModule encoder;
  AnyModule decoder;
};
FW_MODULE(Transformer);

}  // namespace nn
}  // namespace fw
