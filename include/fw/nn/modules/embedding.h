// Embedding: a lookup table of num_embeddings vectors of size embedding_dim.
#pragma once
#include <optional>

#include "fw/nn/module.h"
#include "fw/nn/options.h"

namespace fw::nn {

// Options of Embedding: num_embeddings, embedding_dim, padding_idx (its row starts at zero and
// gets no gradient), max_norm (rows looked up are renormalised in place to at most this
// norm_type-norm), _weight (use this table instead of sampling one from N(0, 1)).
struct EmbeddingOptions {
  EmbeddingOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  FW_ARG(int64_t, num_embeddings);
  FW_ARG(int64_t, embedding_dim);
  FW_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  FW_ARG(std::optional<double>, max_norm) = std::nullopt;
  FW_ARG(double, norm_type) = 2.0;
  FW_ARG(bool, scale_grad_by_freq) = false;
  FW_ARG(bool, sparse) = false;
  FW_ARG(Tensor, _weight);
};

// Options of Embedding::from_pretrained (freeze: the table does not require grad).
struct EmbeddingFromPretrainedOptions {
  FW_ARG(bool, freeze) = true;
  FW_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
  FW_ARG(std::optional<double>, max_norm) = std::nullopt;
  FW_ARG(double, norm_type) = 2.0;
  FW_ARG(bool, scale_grad_by_freq) = false;
  FW_ARG(bool, sparse) = false;
};

// Maps integer indices of any shape to rows of `weight`: (*) -> (*, embedding_dim).
class EmbeddingImpl : public Cloneable<EmbeddingImpl> {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingImpl(EmbeddingOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingImpl(EmbeddingOptions options_);
  void reset() override;
  // Samples N(0, 1) and zeroes the padding_idx row.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& indices);

  EmbeddingOptions options;
  Tensor weight;
};

// Holder of EmbeddingImpl, with from_pretrained.
class Embedding : public ModuleHolder<EmbeddingImpl> {
 public:
  using ModuleHolder<EmbeddingImpl>::ModuleHolder;
  using Impl [[maybe_unused]] = EmbeddingImpl;
  // An Embedding whose table is (a handle to) `embeddings` (2-D).
  static Embedding from_pretrained(const Tensor& embeddings, const EmbeddingFromPretrainedOptions& options = {});
};

}  // namespace fw::nn
