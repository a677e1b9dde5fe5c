// fw::data: datasets, samplers, collation and the DataLoader (batch counts, shuffling,
// determinism across num_workers, distributed shards, exception propagation, early destruction).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <thread>

#include "fw/data.h"
#include "fw/fw.h"

namespace D = fw::data;
using fw::Tensor;

namespace {

// data[i] = {i, 10 i} (float), target[i] = i (long).
D::datasets::LabeledTensorDataset make_dataset(int64_t n) {
  Tensor idx = fw::arange(n);
  Tensor data = fw::stack({idx.to(fw::kFloat), idx.to(fw::kFloat) * 10}, 1);
  return D::datasets::LabeledTensorDataset(data, idx);
}

template <class Loader>
std::vector<std::vector<int64_t>> collect_targets(Loader& loader) {
  std::vector<std::vector<int64_t>> out;
  for (auto& batch : loader) {
    std::vector<int64_t> b;
    for (int64_t i = 0; i < batch.target.size(0); ++i) b.push_back(batch.target[i].template item<int64_t>());
    out.push_back(b);
  }
  return out;
}

// A dataset whose get() throws for one index and can sleep to keep workers busy.
struct FlakyDataset : D::datasets::Dataset<FlakyDataset> {
  size_t n = 32, bad = 1000;
  int sleep_ms = 0;
  std::shared_ptr<std::atomic<int>> calls = std::make_shared<std::atomic<int>>(0);
  D::Example<> get(size_t i) override {
    ++*calls;
    if (sleep_ms) std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
    if (i == bad) throw std::runtime_error("bad example " + std::to_string(i));
    return {fw::full({2}, double(i)), fw::tensor(std::vector<int64_t>{int64_t(i)}).squeeze()};
  }
  std::optional<size_t> size() const override { return n; }
};

}  // namespace

TEST(Data, TensorDatasetAndStack) {
  auto ds = make_dataset(5);
  EXPECT_EQ(*ds.size(), 5u);
  auto e = ds.get(3);
  EXPECT_EQ(e.data.sizes().vec(), (std::vector<int64_t>{2}));
  EXPECT_EQ(e.data[1].item<float>(), 30.f);
  EXPECT_EQ(e.target.item<int64_t>(), 3);
  auto batch = D::transforms::Stack<>().apply_batch(ds.get_batch({4, 0}));
  EXPECT_EQ(batch.data.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(batch.target[0].item<int64_t>(), 4);
  EXPECT_THROW(ds.get(5), fw::Error);
  EXPECT_THROW(D::datasets::LabeledTensorDataset(fw::zeros({3, 2}), fw::zeros({4})), fw::Error);
  D::datasets::LabeledTensorDataset only_data(fw::zeros({3, 2}));
  auto b2 = D::transforms::Stack<>().apply_batch(only_data.get_batch({0, 1}));
  EXPECT_FALSE(b2.target.defined());
}

TEST(Data, BatchCountsAndDropLast) {
  auto ds = make_dataset(10);
  D::DataLoader loader(ds.map(D::transforms::Stack<>()), D::DataLoaderOptions().batch_size(3));
  auto b = collect_targets(loader);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0], (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(b[3], (std::vector<int64_t>{9}));
  D::DataLoader dropping(ds.map(D::transforms::Stack<>()), D::DataLoaderOptions().batch_size(3).drop_last(true));
  EXPECT_EQ(collect_targets(dropping).size(), 3u);
  // A second epoch restarts from the beginning.
  EXPECT_EQ(collect_targets(loader).size(), 4u);
  EXPECT_THROW(D::DataLoader(ds, D::DataLoaderOptions().batch_size(0)), fw::Error);
}

TEST(Data, ShuffleIsAPermutationAndSeeded) {
  auto ds = make_dataset(50);
  auto run = [&](uint64_t seed) {
    D::DataLoader loader(ds.map(D::transforms::Stack<>()),
                         D::DataLoaderOptions().batch_size(7).shuffle(true).seed(seed));
    auto e1 = collect_targets(loader), e2 = collect_targets(loader);
    return std::make_pair(e1, e2);
  };
  auto [a1, a2] = run(1);
  auto [b1, b2] = run(1);
  auto [c1, c2] = run(2);
  EXPECT_EQ(a1, b1);
  EXPECT_EQ(a2, b2);
  EXPECT_NE(a1, a2);  // epochs differ
  EXPECT_NE(a1, c1);  // seeds differ
  std::multiset<int64_t> seen;
  for (auto& b : a1) seen.insert(b.begin(), b.end());
  EXPECT_EQ(seen.size(), 50u);
  EXPECT_EQ(std::set<int64_t>(seen.begin(), seen.end()).size(), 50u);
}

TEST(Data, DeterministicAcrossNumWorkers) {
  auto ds = make_dataset(103);
  std::vector<std::vector<std::vector<int64_t>>> runs;
  for (size_t w : {0, 1, 2, 4}) {
    D::DataLoader loader(ds.map(D::transforms::Stack<>()),
                         D::DataLoaderOptions().batch_size(8).shuffle(true).seed(7).num_workers(w));
    runs.push_back(collect_targets(loader));
    auto again = collect_targets(loader);
    runs.push_back(again);
  }
  for (size_t i = 2; i < runs.size(); ++i) EXPECT_EQ(runs[i], runs[i % 2]) << i;
  // Data matches targets (the collated batch is consistent).
  D::DataLoader loader(ds.map(D::transforms::Stack<>()), D::DataLoaderOptions().batch_size(8).num_workers(2));
  for (auto& b : loader)
    EXPECT_TRUE(fw::equal(b.data.select(1, 0), b.target.to(fw::kFloat)));
}

TEST(Data, MakeDataLoaderWithMapStack) {
  auto ds = make_dataset(12).map(D::transforms::Stack<>());
  auto loader = D::make_data_loader<D::samplers::SequentialSampler>(
      std::move(ds), D::DataLoaderOptions(4).workers(2));
  int64_t expected = 0, batches = 0;
  for (auto& batch : *loader) {
    ++batches;
    for (int64_t i = 0; i < batch.target.size(0); ++i)
      EXPECT_EQ(batch.target[i].item<int64_t>(), expected++);
  }
  EXPECT_EQ(batches, 3);
  auto random = D::make_data_loader(make_dataset(12).map(D::transforms::Stack<>()), D::DataLoaderOptions(5).seed(3));
  int64_t total = 0;
  for (auto& batch : *random) total += batch.target.sum().item<int64_t>();
  EXPECT_EQ(total, 66);
}

TEST(Data, DistributedShardsDisjointAndCovering) {
  for (bool shuffle : {false, true}) {
    for (size_t n : {12, 13}) {
      for (bool drop_last : {false, true}) {
        std::set<size_t> all;
        size_t total = 0;
        for (size_t rank = 0; rank < 4; ++rank) {
          D::samplers::DistributedSampler s(n, 4, rank, shuffle, 5, drop_last);
          s.set_epoch(1);
          s.reset();
          EXPECT_EQ(s.indices().size(), s.num_samples());
          total += s.indices().size();
          all.insert(s.indices().begin(), s.indices().end());
        }
        if (n == 12 || drop_last) {
          EXPECT_EQ(all.size(), total) << "shards overlap n=" << n;  // disjoint
          EXPECT_EQ(total, drop_last ? n / 4 * 4 : n);
        } else {
          EXPECT_EQ(all.size(), n);  // padded by wrap-around: covering
          EXPECT_EQ(total, 16u);
        }
      }
    }
  }
  D::samplers::DistributedSampler s0(10, 2, 0, false);
  EXPECT_EQ(s0.indices(), (std::vector<size_t>{0, 2, 4, 6, 8}));
  D::samplers::DistributedSampler e0(20, 2, 1, true, 0), e1(20, 2, 1, true, 0);
  e1.set_epoch(3);
  e1.reset();
  EXPECT_NE(e0.indices(), e1.indices());
  EXPECT_THROW(D::samplers::DistributedSampler(10, 2, 2), fw::Error);
  // Used inside a loader.
  auto loader = D::make_data_loader(make_dataset(10).map(D::transforms::Stack<>()),
                                    D::samplers::DistributedSampler(10, 2, 1, false),
                                    D::DataLoaderOptions(2));
  EXPECT_EQ(collect_targets(*loader), (std::vector<std::vector<int64_t>>{{1, 3}, {5, 7}, {9}}));
}

TEST(Data, WorkerExceptionsPropagate) {
  for (size_t w : {0, 2}) {
    FlakyDataset ds;
    ds.bad = 13;
    D::DataLoader loader(ds.map(D::transforms::Stack<>()), D::DataLoaderOptions().batch_size(4).num_workers(w));
    int64_t batches = 0;
    try {
      for (auto& b : loader) {
        (void)b;
        ++batches;
      }
      ADD_FAILURE() << "no exception";
    } catch (const std::runtime_error& e) {
      EXPECT_STREQ(e.what(), "bad example 13");
    }
    EXPECT_EQ(batches, 3);  // batches before the failing one arrive in order
  }
}

TEST(Data, EarlyDestructionJoinsWorkers) {
  FlakyDataset ds;
  ds.n = 400;
  ds.sleep_ms = 2;
  auto calls = ds.calls;
  {
    D::DataLoader loader(ds.map(D::transforms::Stack<>()),
                         D::DataLoaderOptions().batch_size(4).num_workers(3).max_jobs(4));
    int seen = 0;
    for (auto& b : loader) {
      EXPECT_EQ(b.data.size(0), 4);
      if (++seen == 2) break;
    }
    // Abandon the epoch and start another: stale results are dropped.
    auto it = loader.begin();
    EXPECT_EQ(it->target[0].item<int64_t>(), 0);
  }
  int after = calls->load();
  EXPECT_LT(after, 100);  // bounded prefetch: nowhere near the whole epoch was fetched
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls->load(), after);  // all workers are gone
}

TEST(Data, TimeoutRaisesAndTheBatchStillArrives) {
  FlakyDataset ds;
  ds.n = 8;
  ds.sleep_ms = 150;
  D::DataLoader loader(ds.map(D::transforms::Stack<>()), D::DataLoaderOptions()
                                                            .batch_size(4)
                                                            .num_workers(1)
                                                            .timeout(std::chrono::milliseconds(10)));
  EXPECT_EQ(loader.options().timeout->count(), 10);
  try {
    loader.begin();
    ADD_FAILURE() << "no timeout";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[DataLoader] Timeout in DataLoader queue while waiting for next batch "
                                         "(timeout was 10 ms)"), std::string::npos) << e.what();
  }
  // A generous timeout: every batch arrives, in order.
  D::DataLoader patient(ds.map(D::transforms::Stack<>()), D::DataLoaderOptions()
                                                             .batch_size(4)
                                                             .num_workers(2)
                                                             .timeout(std::chrono::milliseconds(20000)));
  std::vector<int64_t> firsts;
  for (auto& b : patient) firsts.push_back(b.target[0].item<int64_t>());
  EXPECT_EQ(firsts, (std::vector<int64_t>{0, 4}));
}

// ---- stream datasets (libtorch's StreamDataset + StreamSampler)
namespace {
// Hands out consecutive integers as examples {i, 2i}; get_batch(n) returns the next n.
struct CountingStream : fw::data::datasets::StreamDataset<CountingStream> {
  int64_t next = 0;
  std::vector<fw::data::Example<>> get_batch(size_t n) override {
    std::vector<fw::data::Example<>> batch;
    for (size_t i = 0; i < n; i++, next++)
      batch.push_back({fw::full({1}, double(next)), fw::full({1}, double(2 * next))});
    return batch;
  }
  std::optional<size_t> size() const override { return std::nullopt; }
};
}  // namespace

TEST(Data, StreamDatasetWithStreamSampler) {
  namespace data = fw::data;
  data::samplers::StreamSampler s(10);
  std::vector<size_t> sizes;
  while (auto b = s.next(4)) sizes.push_back(b->size());
  EXPECT_EQ(sizes, (std::vector<size_t>{4, 4, 2}));
  s.reset(3);
  EXPECT_EQ(s.next(4)->size(), 3u);
  EXPECT_FALSE(s.next(4).has_value());

  auto loader = data::make_data_loader(CountingStream().map(data::transforms::Stack<>()),
                                       data::samplers::StreamSampler(10), data::DataLoaderOptions(4));
  std::vector<int64_t> got;
  for (auto& batch : *loader) {
    EXPECT_TRUE(fw::equal(batch.target, batch.data * 2));
    for (int64_t i = 0; i < batch.data.size(0); i++) got.push_back(int64_t(batch.data[i][0].item<float>()));
  }
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  // A second epoch asks the (stateful) stream for the next 10.
  size_t batches = 0;
  for (auto& batch : *loader) batches += batch.data.size(0) > 0;
  EXPECT_EQ(batches, 3u);

  // drop_last drops the short batch; vector batches without Stack.
  auto plain = data::make_data_loader(CountingStream(), data::samplers::StreamSampler(10),
                                      data::DataLoaderOptions(4).drop_last(true));
  std::vector<size_t> lens;
  for (auto& batch : *plain) lens.push_back(batch.size());
  EXPECT_EQ(lens, (std::vector<size_t>{4, 4}));

  try {
    data::DataLoader<CountingStream> bad(CountingStream{});
    ADD_FAILURE() << "a stream dataset without a sampler was accepted";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[DataLoader] a stream dataset needs a sampler"), std::string::npos) << e.what();
  }
}
