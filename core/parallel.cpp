// Note [Thread pool]
// fw's kernels used to fork and join an OpenMP team per op. libgomp's workers spin at the join
// (OMP_WAIT_POLICY is read once, at load time, before fw could set it), and with another busy
// process on the machine a region costs a whole scheduler slice whenever one team member is
// descheduled: measured here, a MelSpectrogram of 60 s went from 25 ms on one thread to 90 ms on
// two. This pool avoids both failure modes:
//  - tasks are claimed from a shared counter, so the caller runs every task a late worker has not
//    picked up, and only waits for tasks already running;
//  - idle workers spin for ~50 us (back-to-back ops keep them hot), then sleep on a condition
//    variable.
// Eigen's GEMM and oneDNN keep their own OpenMP regions (one per call, not per elementwise op).
// After fork() the child gets a fresh pool (the parent's threads do not exist there).
#include "core/parallel.h"

#include <pthread.h>

#include <atomic>
#include <condition_variable>
#include <memory>
#include <thread>
#include <vector>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FW_PAUSE() _mm_pause()
#else
#define FW_PAUSE() std::this_thread::yield()
#endif

namespace fw::detail {

namespace {

thread_local bool t_in_region = false;
constexpr int kSpin = 4096;  // pause iterations (~20 ns each) before sleeping

struct Job {
  void (*fn)(void*, int) = nullptr;
  void* ctx = nullptr;
  int n = 0;
  std::atomic<int> next{0}, done{0};
};

class Pool {
 public:
  void run(int n, void (*fn)(void*, int), void* ctx) {
    std::unique_lock<std::mutex> owner(run_mu_, std::try_to_lock);
    if (!owner.owns_lock()) {  // another thread's region is running: don't oversubscribe
      serial(n, fn, ctx);
      return;
    }
    grow(n - 1);
    auto job = std::make_shared<Job>();
    job->fn = fn;
    job->ctx = ctx;
    job->n = n;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = job;
      gen_.store(gen_.load(std::memory_order_relaxed) + 1, std::memory_order_release);
    }
    start_.notify_all();
    work(*job);
    for (int i = 0; i < kSpin && job->done.load(std::memory_order_acquire) < n; i++) FW_PAUSE();
    if (job->done.load(std::memory_order_acquire) < n) {
      std::unique_lock<std::mutex> lock(mu_);
      finished_.wait(lock, [&] { return job->done.load(std::memory_order_acquire) == n; });
    }
  }

 private:
  static void serial(int n, void (*fn)(void*, int), void* ctx) {
    t_in_region = true;
    for (int t = 0; t < n; t++) fn(ctx, t);
    t_in_region = false;
  }
  // Claims and runs tasks until none are left; true if this participant finished the last one.
  static bool work(Job& j) {
    bool last = false;
    t_in_region = true;
    for (;;) {
      int t = j.next.fetch_add(1, std::memory_order_relaxed);
      if (t >= j.n) break;
      j.fn(j.ctx, t);
      if (j.done.fetch_add(1, std::memory_order_acq_rel) == j.n - 1) last = true;
    }
    t_in_region = false;
    return last;
  }
  void grow(int workers) {
    while (int(threads_) < workers) {
      std::thread([this] { loop(); }).detach();
      threads_++;
    }
  }
  void loop() {
    uint64_t seen = gen_.load(std::memory_order_acquire);
    for (;;) {
      for (int i = 0; i < kSpin && gen_.load(std::memory_order_acquire) == seen; i++) FW_PAUSE();
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        start_.wait(lock, [&] { return gen_.load(std::memory_order_relaxed) != seen; });
        seen = gen_.load(std::memory_order_relaxed);
        job = job_;
      }
      if (work(*job)) {
        std::lock_guard<std::mutex> lock(mu_);
        finished_.notify_all();
      }
    }
  }

  std::mutex run_mu_;  // held by the thread whose region is running
  std::mutex mu_;
  std::condition_variable start_, finished_;
  std::shared_ptr<Job> job_;  // guarded by mu_
  std::atomic<uint64_t> gen_{0};
  size_t threads_ = 0;  // guarded by run_mu_
};

// Leaked on purpose: detached workers may still be waiting on it during static destruction.
std::atomic<Pool*> g_pool{nullptr};
std::once_flag g_atfork_once;

Pool& pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p) return *p;
  static std::mutex init_mu;
  std::lock_guard<std::mutex> lock(init_mu);
  std::call_once(g_atfork_once, [] {
    pthread_atfork(nullptr, nullptr, [] { g_pool.store(nullptr, std::memory_order_release); });
  });
  p = g_pool.load(std::memory_order_acquire);
  if (!p) {
    p = new Pool();
    g_pool.store(p, std::memory_order_release);
  }
  return *p;
}

}  // namespace

bool in_parallel_region() { return t_in_region; }

void run_tasks(int n_tasks, void (*fn)(void*, int), void* ctx) {
  if (n_tasks <= 0) return;
  if (n_tasks == 1 || t_in_region) {
    bool outer = t_in_region;
    t_in_region = true;
    for (int t = 0; t < n_tasks; t++) fn(ctx, t);
    t_in_region = outer;
    return;
  }
  pool().run(n_tasks, fn, ctx);
}

}  // namespace fw::detail
