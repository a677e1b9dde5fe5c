// fw's thread pool (core/parallel.cpp): every index exactly once, nesting, exceptions, calls
// from several threads at once, thread-count changes, and a usable pool after fork().
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include <fw/fw.h>

#include "core/parallel.h"
#include "tests/expect_error.h"

using fw::detail::parallel_for;

namespace {
// Sum of f(i) over [0, n) through parallel_for with the given grain, plus a visit count check.
int64_t visit_all(int64_t n, int64_t grain) {
  std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
  std::atomic<int64_t> sum{0};
  parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
    int64_t local = 0;
    for (int64_t i = b; i < e; i++) {
      hits[size_t(i)]++;
      local += i;
    }
    sum += local;
  });
  for (auto& h : hits) EXPECT_EQ(h.load(), 1);
  return sum.load();
}
}  // namespace

TEST(ThreadPool, EveryIndexOnce) {
  for (int64_t n : {1, 2, 3, 100, 1000, 100001})
    for (int64_t grain : {1, 7, 1000})
      EXPECT_EQ(visit_all(n, grain), n * (n - 1) / 2) << n << " " << grain;
}

// A parallel region inside a parallel region runs serially in its caller's task.
static void expect_nested_regions_serial() {
  std::atomic<int64_t> total{0};
  parallel_for(0, 8, 1, [&](int64_t b, int64_t e) {
    EXPECT_TRUE(fw::detail::in_parallel_region());
    for (int64_t i = b; i < e; i++) parallel_for(0, 1000, 1, [&](int64_t x, int64_t y) { total += y - x; });
  });
  EXPECT_EQ(total.load(), 8000);
  EXPECT_FALSE(fw::detail::in_parallel_region());
}

TEST(ThreadPool, NestedRegionsRunSerially) {
  expect_nested_regions_serial();
}

TEST(ThreadPool, ExceptionsReachTheCaller) {
  EXPECT_THROW(parallel_for(0, 100, 1, [](int64_t b, int64_t) {
    if (b >= 50) throw std::runtime_error("task failed");
  }), std::runtime_error);
  // The pool still works afterwards, and a fw::Error from an op inside a region arrives intact.
  EXPECT_EQ(visit_all(10000, 10), 10000LL * 9999 / 2);
  EXPECT_THROW(fw::randn({4, 5}).mm(fw::randn({4, 5})), fw::Error);
}

TEST(ThreadPool, ConcurrentCallersAndThreadCounts) {
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; t++)
    ts.emplace_back([&] {
      for (int r = 0; r < 50; r++)
        if (visit_all(5000, 100) != 5000LL * 4999 / 2) bad++;
      fw::Tensor a = fw::ones({256, 256});
      if (fw::mm(a, a).sum().item<double>() != 256.0 * 256 * 256) bad++;
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  int before = fw::get_num_threads();
  fw::set_num_threads(3);
  EXPECT_EQ(visit_all(30000, 10), 30000LL * 29999 / 2);
  fw::set_num_threads(before);
}

// set_num_threads is process-wide, as libtorch's: other threads (a DataLoader worker, the pool's
// own workers inside a region) see the count the program set, not OpenMP's per-thread default.
TEST(ThreadPool, ThreadCountIsProcessWide) {
  const int saved = fw::get_num_threads();
  fw::set_num_threads(3);
  int seen = 0;
  std::thread([&] { seen = fw::get_num_threads(); }).join();
  EXPECT_EQ(seen, 3);
  std::atomic<int> bad{0};
  for (int rep = 0; rep < 200; ++rep)
    parallel_for(0, 3 * 4096, 4096, [&](int64_t, int64_t) {
      if (fw::get_thread_num() >= fw::get_num_threads()) bad++;
    });
  EXPECT_EQ(bad.load(), 0);
  EXPECT_ERROR(fw::set_num_threads(0), "expected a positive number of threads, got 0");
  fw::set_num_threads(saved);
}

TEST(ThreadPool, WorksAfterFork) {
  EXPECT_EQ(visit_all(10000, 10), 10000LL * 9999 / 2);  // the parent's pool exists
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::atomic<int64_t> sum{0};
    parallel_for(0, 10000, 10, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) sum += i;
    });
    _exit(sum.load() == 10000LL * 9999 / 2 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(ThreadPool, RegionsOnAHotOpenMpTeam) {
  // After an OpenMP region (a oneDNN call) fw's regions may run on the OpenMP team for a while
  // (Note [Sharing a hot OpenMP team]; whether they do depends on the machine's load, through the
  // back-off); the same guarantees hold on either side. First the team path itself.
  auto hot = [] { fw::detail::note_openmp_region(); };
  {
    constexpr int n = 37;
    std::vector<std::atomic<int>> hits(n);
    std::atomic<int> inside{0};
    struct Ctx {
      std::vector<std::atomic<int>>* hits;
      std::atomic<int>* inside;
    } ctx{&hits, &inside};
    fw::detail::run_tasks_on_openmp(n, [](void* p, int t) {
      auto& c = *static_cast<Ctx*>(p);
      (*c.hits)[size_t(t)]++;
      if (omp_in_parallel() && fw::detail::in_parallel_region()) (*c.inside)++;
    }, &ctx);
    for (auto& h : hits) EXPECT_EQ(h.load(), 1);
    if (fw::get_num_threads() > 1) EXPECT_EQ(inside.load(), n);
    EXPECT_FALSE(fw::detail::in_parallel_region());
  }
  for (int64_t n : {2, 3, 1000, 100001}) {
    hot();
    EXPECT_EQ(visit_all(n, 7), n * (n - 1) / 2) << n;
  }
  hot();
  expect_nested_regions_serial();
  hot();
  EXPECT_THROW(parallel_for(0, 100, 1, [](int64_t b, int64_t) {
    if (b >= 50) throw std::runtime_error("task failed");
  }), std::runtime_error);
  std::vector<std::thread> ts;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; t++)
    ts.emplace_back([&] {
      for (int r = 0; r < 50; r++) {
        hot();
        if (visit_all(5000, 100) != 5000LL * 4999 / 2) bad++;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
  // A child forked right after an OpenMP region starts cold, on its own pool.
  hot();
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::atomic<int64_t> sum{0};
    std::atomic<bool> in_omp{false};
    parallel_for(0, 10000, 10, [&](int64_t b, int64_t e) {
      if (omp_in_parallel()) in_omp = true;
      for (int64_t i = b; i < e; i++) sum += i;
    });
    _exit(sum.load() == 10000LL * 9999 / 2 && !in_omp ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
