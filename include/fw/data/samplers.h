// fw::data::samplers: index orders for a DataLoader (libtorch's torch::data::samplers, plus
// PyTorch's DistributedSampler). Shuffling uses a private seeded generator, never the global one.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace fw::data::samplers {

// Yields batches of indices; reset() starts a new epoch.
template <class BatchRequest = std::vector<size_t>>
class Sampler {
 public:
  using BatchRequestType = BatchRequest;
  virtual ~Sampler() = default;
  // Starts a new epoch, optionally over a dataset of a new size.
  virtual void reset(std::optional<size_t> new_size = std::nullopt) = 0;
  // Up to batch_size next indices, or nullopt when the epoch is exhausted.
  virtual std::optional<BatchRequest> next(size_t batch_size) = 0;
};

// Base for samplers that precompute the whole epoch's index list in reset().
class IndexListSampler : public Sampler<> {
 public:
  std::optional<std::vector<size_t>> next(size_t batch_size) override;
  // Indices of the current epoch, in order.
  const std::vector<size_t>& indices() const { return indices_; }
  size_t index() const { return pos_; }

 protected:
  std::vector<size_t> indices_;
  size_t pos_ = 0;
};

// 0, 1, ..., size-1.
class SequentialSampler : public IndexListSampler {
 public:
  explicit SequentialSampler(size_t size);
  void reset(std::optional<size_t> new_size = std::nullopt) override;

 private:
  size_t size_;
};

// A fresh permutation each epoch; epoch e's permutation depends only on (seed, e).
class RandomSampler : public IndexListSampler {
 public:
  explicit RandomSampler(size_t size, uint64_t seed = 0);
  void reset(std::optional<size_t> new_size = std::nullopt) override;

 private:
  size_t size_;
  uint64_t seed_;
  uint64_t epoch_ = 0;
};

// This rank's shard (PyTorch's DistributedSampler): the epoch's order (shuffled with seed + epoch
// when shuffle) is padded by wrap-around to a multiple of num_replicas, or truncated when
// drop_last, and rank takes every num_replicas-th index starting at rank.
class DistributedSampler : public IndexListSampler {
 public:
  DistributedSampler(size_t size, size_t num_replicas, size_t rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
  // Selects the epoch used for shuffling at the next reset() (as PyTorch's set_epoch).
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  // Examples per replica per epoch.
  size_t num_samples() const;

 private:
  size_t size_, num_replicas_, rank_;
  bool shuffle_, drop_last_;
  uint64_t seed_, epoch_ = 0;
};

// libtorch's distributed samplers. Each rank takes a contiguous block of local_sample_count()
// positions of the epoch's order: ceil(size / num_replicas) when allow_duplicates (the order is
// padded with indices from its start), floor(size / num_replicas) otherwise (the last indices
// are left out). set_epoch(e) selects the order of the next reset().
class DistributedSamplerBase : public IndexListSampler {
 public:
  DistributedSamplerBase(size_t size, size_t num_replicas, size_t rank, bool allow_duplicates);
  void set_epoch(size_t epoch) { epoch_ = epoch; }
  size_t epoch() const { return epoch_; }
  size_t local_sample_count() const;

 protected:
  size_t size_, num_replicas_, rank_;
  bool allow_duplicates_;
  size_t epoch_ = 0;
};

// The padded order 0..n-1 shuffled by std::shuffle with std::mt19937(epoch), as libtorch does
// (so with libstdc++ the order equals libtorch's).
class DistributedRandomSampler : public DistributedSamplerBase {
 public:
  DistributedRandomSampler(size_t size, size_t num_replicas = 1, size_t rank = 0, bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
};

// The order 0, 1, ..., wrapping around to 0 for the padding.
class DistributedSequentialSampler : public DistributedSamplerBase {
 public:
  DistributedSequentialSampler(size_t size, size_t num_replicas = 1, size_t rank = 0,
                               bool allow_duplicates = true);
  void reset(std::optional<size_t> new_size = std::nullopt) override;
};

// The request a StreamSampler hands a stream dataset: how many examples the next batch holds.
struct BatchSize {
  /* implicit */ BatchSize(size_t size = 0) : size_(size) {}
  size_t size() const noexcept { return size_; }
  operator size_t() const noexcept { return size_; }
  size_t size_;
};

// Batches for a StreamDataset: batch_size examples at a time until epoch_size were requested
// (the last batch holds the rest). reset(n) starts a new epoch, of n examples when given.
class StreamSampler : public Sampler<BatchSize> {
 public:
  explicit StreamSampler(size_t epoch_size) : epoch_size_(epoch_size) {}
  void reset(std::optional<size_t> new_size = std::nullopt) override {
    if (new_size) epoch_size_ = *new_size;
    served_ = 0;
  }
  std::optional<BatchSize> next(size_t batch_size) override {
    if (served_ >= epoch_size_) return std::nullopt;
    size_t n = std::min(batch_size, epoch_size_ - served_);
    served_ += n;
    return BatchSize(n);
  }

 private:
  size_t epoch_size_;
  size_t served_ = 0;
};

// A permutation of 0..n-1 from a generator seeded with `seed` (Fisher-Yates, portable).
std::vector<size_t> seeded_permutation(size_t n, uint64_t seed);

}  // namespace fw::data::samplers
