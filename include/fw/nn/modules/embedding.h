// Embedding: a lookup table of num_embeddings vectors of size embedding_dim; EmbeddingBag: sums,
// means or maxes of bags of its rows.
#pragma once
#include <optional>

#include "fw/nn/functional.h"
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
  // A deep copy whose table is its own also when options._weight was given (Note [EmbeddingBag clone]).
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;

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

// How EmbeddingBag reduces a bag: fw::kSum, fw::kMean or fw::kMax.
using EmbeddingBagMode = functional::EmbeddingBagFuncOptions::mode_t;

// Options of EmbeddingBag: num_embeddings, embedding_dim, max_norm, norm_type, scale_grad_by_freq,
// mode (kMean), sparse (fw has no sparse gradients: true is rejected), _weight,
// include_last_offset, padding_idx (its row starts at zero and is left out of every bag).
struct EmbeddingBagOptions {
  EmbeddingBagOptions(int64_t num_embeddings, int64_t embedding_dim)
      : num_embeddings_(num_embeddings), embedding_dim_(embedding_dim) {}
  FW_ARG(int64_t, num_embeddings);
  FW_ARG(int64_t, embedding_dim);
  FW_ARG(std::optional<double>, max_norm) = std::nullopt;
  FW_ARG(double, norm_type) = 2.0;
  FW_ARG(bool, scale_grad_by_freq) = false;
  FW_ARG(EmbeddingBagMode, mode) = enumtype::kMean();
  FW_ARG(bool, sparse) = false;
  FW_ARG(Tensor, _weight);
  FW_ARG(bool, include_last_offset) = false;
  FW_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

// Options of EmbeddingBag::from_pretrained (freeze: the table does not require grad).
struct EmbeddingBagFromPretrainedOptions {
  FW_ARG(bool, freeze) = true;
  FW_ARG(std::optional<double>, max_norm) = std::nullopt;
  FW_ARG(double, norm_type) = 2.0;
  FW_ARG(bool, scale_grad_by_freq) = false;
  FW_ARG(EmbeddingBagMode, mode) = enumtype::kMean();
  FW_ARG(bool, sparse) = false;
  FW_ARG(bool, include_last_offset) = false;
  FW_ARG(std::optional<int64_t>, padding_idx) = std::nullopt;
};

// functional::embedding_bag over its `weight` (num_embeddings, embedding_dim): a 2-D input is a
// batch of equal bags (one per row), a 1-D input is cut into bags at `offsets`. (B, embedding_dim).
class EmbeddingBagImpl : public Cloneable<EmbeddingBagImpl> {
 public:
  EmbeddingBagImpl(int64_t num_embeddings, int64_t embedding_dim)
      : EmbeddingBagImpl(EmbeddingBagOptions(num_embeddings, embedding_dim)) {}
  explicit EmbeddingBagImpl(EmbeddingBagOptions options_);
  // A deep copy; a table given as _weight is copied too instead of shared.
  std::shared_ptr<Module> clone(const std::optional<Device>& device = std::nullopt) const override;
  void reset() override;
  // Samples N(0, 1) and zeroes the padding_idx row.
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;
  Tensor forward(const Tensor& input, const Tensor& offsets = {}, const Tensor& per_sample_weights = {});

  EmbeddingBagOptions options;
  Tensor weight;
};

// Holder of EmbeddingBagImpl, with from_pretrained.
class EmbeddingBag : public ModuleHolder<EmbeddingBagImpl> {
 public:
  using ModuleHolder<EmbeddingBagImpl>::ModuleHolder;
  using Impl [[maybe_unused]] = EmbeddingBagImpl;
  // An EmbeddingBag whose table is (a handle to) `embeddings` (2-D).
  static EmbeddingBag from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options = {});
};

}  // namespace fw::nn
