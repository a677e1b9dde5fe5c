// Sequential, random and distributed samplers.
#include "fw/data/samplers.h"

#include <algorithm>
#include <numeric>

#include "fw/error.h"

namespace fw::data::samplers {

std::vector<size_t> seeded_permutation(size_t n, uint64_t seed) {
  // Note [portable shuffle]: std::shuffle and std::uniform_int_distribution are
  // implementation-defined, so draw with mt19937_64 and a multiply-shift range reduction.
  std::mt19937_64 gen(seed);
  std::vector<size_t> p(n);
  std::iota(p.begin(), p.end(), size_t(0));
  for (size_t i = n; i > 1; --i) {
    auto j = size_t((static_cast<unsigned __int128>(gen()) * i) >> 64);
    std::swap(p[i - 1], p[j]);
  }
  return p;
}

std::optional<std::vector<size_t>> IndexListSampler::next(size_t batch_size) {
  if (pos_ >= indices_.size()) return std::nullopt;
  size_t n = std::min(batch_size, indices_.size() - pos_);
  std::vector<size_t> out(indices_.begin() + pos_, indices_.begin() + pos_ + n);
  pos_ += n;
  return out;
}

SequentialSampler::SequentialSampler(size_t size) : size_(size) { reset(); }

void SequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  indices_.resize(size_);
  std::iota(indices_.begin(), indices_.end(), size_t(0));
  pos_ = 0;
}

RandomSampler::RandomSampler(size_t size, uint64_t seed) : size_(size), seed_(seed) { reset(); }

static uint64_t mix_seed(uint64_t seed, uint64_t epoch) {
  return seed ^ (0x9E3779B97F4A7C15ull * (epoch + 1));
}

void RandomSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  indices_ = seeded_permutation(size_, mix_seed(seed_, epoch_++));
  pos_ = 0;
}

DistributedSampler::DistributedSampler(size_t size, size_t num_replicas, size_t rank,
                                       bool shuffle, uint64_t seed, bool drop_last)
    : size_(size), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle),
      drop_last_(drop_last), seed_(seed) {
  FW_CHECK(num_replicas > 0, "[DistributedSampler] num_replicas must be positive");
  FW_CHECK(rank < num_replicas, "[DistributedSampler] Invalid rank ", rank,
           ", rank should be in the interval [0, ", num_replicas - 1, "]");
  reset();
}

size_t DistributedSampler::num_samples() const {
  if (drop_last_) return size_ / num_replicas_;
  return (size_ + num_replicas_ - 1) / num_replicas_;
}

void DistributedSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  std::vector<size_t> order(size_);
  if (shuffle_) {
    order = seeded_permutation(size_, mix_seed(seed_, epoch_));
  } else {
    std::iota(order.begin(), order.end(), size_t(0));
  }
  size_t total = num_samples() * num_replicas_;
  for (size_t i = 0; order.size() < total && !order.empty(); ++i) order.push_back(order[i]);
  order.resize(total);
  indices_.clear();
  for (size_t i = rank_; i < total; i += num_replicas_) indices_.push_back(order[i]);
  pos_ = 0;
}

DistributedSamplerBase::DistributedSamplerBase(size_t size, size_t num_replicas, size_t rank, bool allow_duplicates)
    : size_(size), num_replicas_(num_replicas), rank_(rank), allow_duplicates_(allow_duplicates) {
  FW_CHECK(num_replicas > 0, "[DistributedSampler] num_replicas must be positive");
  FW_CHECK(rank < num_replicas, "[DistributedSampler] Invalid rank ", rank, ", rank should be in the interval [0, ",
           num_replicas - 1, "]");
}

size_t DistributedSamplerBase::local_sample_count() const {
  return allow_duplicates_ ? (size_ + num_replicas_ - 1) / num_replicas_ : size_ / num_replicas_;
}

// The epoch's order before this rank's block is cut out: 0..count-1 taken modulo size (the padding
// repeats the first indices).
static std::vector<size_t> padded_order(size_t size, size_t count) {
  std::vector<size_t> order(size == 0 ? 0 : count);
  for (size_t i = 0; i < order.size(); i++) order[i] = i % size;
  return order;
}

DistributedRandomSampler::DistributedRandomSampler(size_t size, size_t num_replicas, size_t rank,
                                                   bool allow_duplicates)
    : DistributedSamplerBase(size, num_replicas, rank, allow_duplicates) {
  reset();
}

void DistributedRandomSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  const size_t local = local_sample_count();
  std::vector<size_t> order = padded_order(size_, num_replicas_ == 1 ? size_ : local * num_replicas_);
  std::mt19937 gen(static_cast<std::mt19937::result_type>(epoch_));
  std::shuffle(order.begin(), order.end(), gen);
  const size_t begin = std::min(order.size(), rank_ * local), end = std::min(order.size(), begin + local);
  indices_.assign(order.begin() + std::ptrdiff_t(begin), order.begin() + std::ptrdiff_t(end));
  pos_ = 0;
}

DistributedSequentialSampler::DistributedSequentialSampler(size_t size, size_t num_replicas, size_t rank,
                                                           bool allow_duplicates)
    : DistributedSamplerBase(size, num_replicas, rank, allow_duplicates) {
  reset();
}

void DistributedSequentialSampler::reset(std::optional<size_t> new_size) {
  if (new_size) size_ = *new_size;
  const size_t local = local_sample_count(), begin = rank_ * local;
  indices_.clear();
  for (size_t i = begin; i < begin + local && size_ > 0; i++) indices_.push_back(i % size_);
  pos_ = 0;
}

}  // namespace fw::data::samplers
