// fw::data::DataLoader: batches of a dataset in sampler order, optionally fetched by worker
// threads with a bounded, order-preserving prefetch queue (libtorch's StatelessDataLoader).
#pragma once
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <exception>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "fw/data/datasets.h"
#include "fw/data/samplers.h"
#include "fw/data/transforms.h"
#include "fw/error.h"
#include "fw/nn/options.h"

namespace fw::data {

// Options of a DataLoader (libtorch's DataLoaderOptions plus shuffle/seed).
// DataLoaderOptions(64) converts implicitly, so make_data_loader(dataset, 64) works.
struct DataLoaderOptions {
  DataLoaderOptions() = default;
  DataLoaderOptions(size_t batch_size) : batch_size_(batch_size) {}
  FW_ARG(size_t, batch_size) = 1;
  // Shuffle with a RandomSampler seeded by seed() (ignored when a sampler is passed).
  FW_ARG(bool, shuffle) = false;
  // Drop the last batch if it is smaller than batch_size.
  FW_ARG(bool, drop_last) = false;
  // Worker threads; 0 fetches batches on the consumer's thread.
  FW_ARG(size_t, num_workers) = 0;
  // Most batches in flight at once; 0 means 2 * num_workers.
  FW_ARG(size_t, max_jobs) = 0;
  FW_ARG(uint64_t, seed) = 0;
  // With workers: the longest the consumer waits for the next batch before raising (the batch
  // stays in flight; the next call waits for it again). nullopt waits as long as it takes.
  FW_ARG(std::optional<std::chrono::milliseconds>, timeout) = std::nullopt;
  // Accepted for libtorch compatibility: fw always delivers batches in sampler order, which
  // satisfies both settings.
  FW_ARG(bool, enforce_ordering) = true;

 public:
  // libtorch's name for num_workers.
  DataLoaderOptions& workers(size_t n) { return num_workers(n); }
  size_t workers() const { return num_workers(); }
};

// The options a DataLoader runs with, as plain fields (libtorch's FullDataLoaderOptions):
// loader->options().batch_size. max_jobs is resolved (2 * workers when it was 0).
struct FullDataLoaderOptions {
  explicit FullDataLoaderOptions(const DataLoaderOptions& o)
      : batch_size(o.batch_size()),
        workers(o.num_workers()),
        max_jobs(o.max_jobs() == 0 ? 2 * o.num_workers() : o.max_jobs()),
        enforce_ordering(o.enforce_ordering()),
        drop_last(o.drop_last()),
        timeout(o.timeout()),
        shuffle(o.shuffle()),
        seed(o.seed()) {}
  size_t batch_size;
  size_t workers;
  size_t max_jobs;
  bool enforce_ordering;
  bool drop_last;
  std::optional<std::chrono::milliseconds> timeout;
  // fw's additions.
  bool shuffle;
  uint64_t seed;
};

// Iterates the batches of `DatasetT` (any BatchDataset) as get_batch returns them: a Dataset's
// batch is std::vector<Example<>>, a dataset mapped with transforms::Stack<>() yields one stacked
// Example<> (libtorch's semantics). See Note [DataLoader threads].
namespace detail {
// The sampler's request type for a dataset's: index lists for index datasets, BatchSize for
// stream datasets (whose get_batch takes a size_t).
template <class DatasetRequest>
struct SamplerRequest {
  using type = std::vector<size_t>;
};
template <>
struct SamplerRequest<size_t> {
  using type = samplers::BatchSize;
};
inline size_t request_size(const std::vector<size_t>& r) { return r.size(); }
inline size_t request_size(const samplers::BatchSize& r) { return r.size(); }
}  // namespace detail

namespace detail {
// What a data::Iterator pulls batches from.
template <class Batch>
struct BatchSource {
  virtual ~BatchSource() = default;
  virtual std::optional<Batch> next_batch() = 0;
};
}  // namespace detail

template <class DatasetT>
class DataLoader;

// libtorch's torch::data::Iterator<Batch>: the input iterator a loader's begin() returns, so a
// loop can spell its type (`for (data::Iterator<std::vector<Example<>>> it = loader->begin(); ...`).
template <class Batch>
class Iterator {
 public:
  using iterator_category = std::input_iterator_tag;
  using value_type = Batch;
  using difference_type = std::ptrdiff_t;
  using pointer = Batch*;
  using reference = Batch&;
  Iterator() = default;
  Batch& operator*() { return *batch_; }
  Batch* operator->() { return &*batch_; }
  Iterator& operator++() {
    batch_ = source_->next_batch();
    return *this;
  }
  // Iterators compare equal once both are exhausted.
  bool operator==(const Iterator& o) const { return !batch_ && !o.batch_; }
  bool operator!=(const Iterator& o) const { return !(*this == o); }

 private:
  template <class>
  friend class DataLoader;
  detail::BatchSource<Batch>* source_ = nullptr;
  std::optional<Batch> batch_;
};

template <class DatasetT>
class DataLoader : public detail::BatchSource<typename DatasetT::BatchType> {
 public:
  using BatchType = typename DatasetT::BatchType;
  using BatchRequestType = typename detail::SamplerRequest<typename DatasetT::BatchRequestType>::type;
  using SamplerType = samplers::Sampler<BatchRequestType>;

  // libtorch's data::Iterator<Batch> (begin() starts an epoch; iterators compare equal once
  // both are exhausted).
  using Iterator = data::Iterator<BatchType>;

  // Samples sequentially, or randomly (seeded) when options.shuffle().
  DataLoader(DatasetT dataset, DataLoaderOptions options = DataLoaderOptions())
      : DataLoader(dataset, make_default_sampler(dataset, options), options) {}
  DataLoader(DatasetT dataset, std::unique_ptr<SamplerType> sampler,
             DataLoaderOptions options)
      : dataset_(std::move(dataset)), sampler_(std::move(sampler)), options_(options) {
    FW_CHECK(options_.batch_size > 0, "[DataLoader] batch_size must be positive, got ",
             options_.batch_size);
    FW_CHECK(sampler_ != nullptr, "[DataLoader] sampler must not be null");
    for (size_t w = 0; w < options_.workers; ++w)
      workers_.emplace_back([this, ds = dataset_]() mutable { worker_loop(ds); });
  }
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;
  // Stops the workers (each finishes at most its current batch) and joins them.
  ~DataLoader() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      jobs_.clear();
    }
    jobs_cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

  // Starts a new epoch (resetting the sampler) and returns its first batch.
  Iterator begin() {
    start_epoch();
    Iterator it;
    it.source_ = this;
    it.batch_ = next();
    return it;
  }
  Iterator end() { return Iterator(); }
  // The options as plain fields: loader->options().batch_size (as libtorch).
  const FullDataLoaderOptions& options() const noexcept { return options_; }

 private:
  struct Job {
    uint64_t generation, seq;
    BatchRequestType indices;
  };
  struct Result {
    std::optional<BatchType> batch;
    std::exception_ptr error;
  };

  static std::unique_ptr<SamplerType> make_default_sampler(const DatasetT& dataset, const DataLoaderOptions& o) {
    if constexpr (std::is_same_v<BatchRequestType, samplers::BatchSize>) {
      (void)dataset;
      (void)o;
      ::fw::detail::throw_error("[DataLoader] a stream dataset needs a sampler: make_data_loader(dataset, "
                          "samplers::StreamSampler(epoch_size), options)");
    } else {
      auto size = dataset.size();
      FW_CHECK(size.has_value(), "[DataLoader] dataset must have a known size");
      if (o.shuffle()) return std::make_unique<samplers::RandomSampler>(*size, o.seed());
      return std::make_unique<samplers::SequentialSampler>(*size);
    }
  }

  BatchType fetch(DatasetT& ds, const BatchRequestType& request) { return ds.get_batch(request); }

  std::optional<BatchRequestType> next_indices() {
    auto b = sampler_->next(options_.batch_size);
    if (!b || detail::request_size(*b) == 0) return std::nullopt;
    if (options_.drop_last && detail::request_size(*b) < options_.batch_size) return std::nullopt;
    return b;
  }

  void start_epoch() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++generation_;
      jobs_.clear();
      results_.clear();
    }
    next_seq_ = submitted_ = 0;
    sampler_done_ = false;
    sampler_->reset();
  }

  // Queues index batches until max_jobs are in flight or the sampler is exhausted.
  void schedule() {
    while (!sampler_done_ && submitted_ - next_seq_ < options_.max_jobs) {
      auto indices = next_indices();
      if (!indices) {
        sampler_done_ = true;
        break;
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        jobs_.push_back(Job{generation_, submitted_++, std::move(*indices)});
      }
      jobs_cv_.notify_one();
    }
  }

  std::optional<BatchType> next_batch() override { return next(); }

  std::optional<BatchType> next() {
    if (workers_.empty()) {
      auto indices = next_indices();
      if (!indices) return std::nullopt;
      return fetch(dataset_, *indices);
    }
    schedule();
    if (next_seq_ == submitted_) return std::nullopt;
    Result r;
    {
      std::unique_lock<std::mutex> lock(mu_);
      auto ready = [&] { return results_.count(next_seq_) > 0; };
      if (options_.timeout)
        FW_CHECK(results_cv_.wait_for(lock, *options_.timeout, ready), "[DataLoader] Timeout in DataLoader queue "
                 "while waiting for next batch (timeout was ", options_.timeout->count(), " ms)");
      else
        results_cv_.wait(lock, ready);
      auto it = results_.find(next_seq_);
      r = std::move(it->second);
      results_.erase(it);
    }
    ++next_seq_;
    schedule();
    if (r.error) std::rethrow_exception(r.error);
    return std::move(r.batch);
  }

  void worker_loop(DatasetT& ds) {
    for (;;) {
      Job job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        jobs_cv_.wait(lock, [&] { return stop_ || !jobs_.empty(); });
        if (stop_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      Result r;
      try {
        r.batch = fetch(ds, job.indices);
      } catch (...) {
        r.error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (job.generation != generation_) continue;
        results_.emplace(job.seq, std::move(r));
      }
      results_cv_.notify_all();
    }
  }

  // Note [DataLoader threads]: the sampler is only touched on the consumer's thread, which
  // numbers index batches and keeps at most max_jobs of them queued or in flight; workers (each
  // with its own copy of the dataset) fetch them in any order and the consumer takes results
  // strictly by number, so batch order (and hence determinism) does not depend on num_workers.
  // A worker's exception is stored with its batch and rethrown when that batch is consumed.
  // begin() bumps the generation, so results of an abandoned epoch are dropped on arrival.
  DatasetT dataset_;
  std::unique_ptr<SamplerType> sampler_;
  FullDataLoaderOptions options_;
  std::vector<std::thread> workers_;
  std::mutex mu_;
  std::condition_variable jobs_cv_, results_cv_;
  std::deque<Job> jobs_;
  std::map<uint64_t, Result> results_;
  uint64_t generation_ = 0, next_seq_ = 0, submitted_ = 0;
  bool sampler_done_ = false, stop_ = false;
};

// libtorch's names for the loader make_data_loader returns (fw has one loader class; the sampler
// is chosen at run time): std::unique_ptr<StatelessDataLoader<D, SequentialSampler>> holds it.
template <class DatasetT, class SamplerT = samplers::RandomSampler>
using StatelessDataLoader = DataLoader<DatasetT>;

template <class DatasetT>
DataLoader(DatasetT, DataLoaderOptions) -> DataLoader<DatasetT>;
template <class DatasetT>
DataLoader(DatasetT) -> DataLoader<DatasetT>;

// libtorch's make_data_loader: SamplerT over the dataset's size (RandomSampler uses options.seed).
// make_data_loader(ds, 64), make_data_loader<samplers::SequentialSampler>(ds, 64).
template <class SamplerT = samplers::RandomSampler, class DatasetT,
          std::enable_if_t<std::is_base_of_v<samplers::Sampler<>, SamplerT>, int> = 0>
std::unique_ptr<DataLoader<DatasetT>> make_data_loader(DatasetT dataset,
                                                       DataLoaderOptions options = DataLoaderOptions()) {
  auto size = dataset.size();
  FW_CHECK(size.has_value(), "[make_data_loader] dataset must have a known size");
  std::unique_ptr<samplers::Sampler<>> sampler;
  if constexpr (std::is_constructible_v<SamplerT, size_t, uint64_t>)
    sampler = std::make_unique<SamplerT>(*size, options.seed());
  else
    sampler = std::make_unique<SamplerT>(*size);
  return std::make_unique<DataLoader<DatasetT>>(std::move(dataset), std::move(sampler), options);
}

// make_data_loader with an explicit sampler: make_data_loader(ds, sampler, 64).
template <class DatasetT, class SamplerT,
          std::enable_if_t<std::is_base_of_v<samplers::Sampler<typename SamplerT::BatchRequestType>, SamplerT>,
                           int> = 0>
std::unique_ptr<DataLoader<DatasetT>> make_data_loader(DatasetT dataset, SamplerT sampler,
                                                       DataLoaderOptions options = DataLoaderOptions()) {
  return std::make_unique<DataLoader<DatasetT>>(
      std::move(dataset), std::make_unique<SamplerT>(std::move(sampler)), options);
}

}  // namespace fw::data
