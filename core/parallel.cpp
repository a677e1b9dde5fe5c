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
//
// Note [Sharing a hot OpenMP team]
// oneDNN's convolutions run on libgomp's team, whose workers spin after each region before they
// sleep: GOMP_SPINCOUNT, by default 300,000 pause instructions, ~24 ms on this EPYC (a pause takes
// ~80 ns), longer than the gaps between a CNN's convolutions. An fw op in such a gap (relu, a
// pool, a Linear's GEMM, an optimizer step) that woke this pool ran three busy threads on two
// cores: its own two and libgomp's spinning worker, which the scheduler time-slices in. libtorch
// never has this, since all its ops share the one team. So for 10 ms (hot_window_ns()) after fw
// last saw an OpenMP region end (a oneDNN call, note_openmp_region(), or one of these regions),
// run_tasks runs on the OpenMP team instead, its threads claiming tasks from the same counter,
// and this pool's workers stay asleep. Programs that never call oneDNN never take that path. With
// OMP_WAIT_POLICY=passive libgomp's workers sleep at once and the window is empty; with
// OMP_WAIT_POLICY=active they never sleep and the window never closes.
// On an oversubscribed machine the team is the worse choice: a region's end is a barrier, so a
// team member that is off the CPU holds up the caller, where this pool's caller takes over the
// tasks nobody has claimed. Two regions in a row on the team whose master, with no task left to
// claim, waited more than kLateJoinNs at the join for the others send the regions of the next
// 50 ms back to the pool, doubling up to 3 s while the team keeps being late, back to 50 ms after
// a region on time (one late region alone is forgiven: an interrupt can do that). Measured on
// W5's train step under load ~4 from other processes: 2.0-2.6 s with the pool, 2.6-3.5 s on the
// team without this back-off.
#include "core/parallel.h"

#include "fw/error.h"
#include "fw/parallel.h"

#include "core/profile.h"

#include <pthread.h>

#include <strings.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <limits>
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
// fw::get_thread_num(): this thread's slot in the region it is running tasks of (0 outside one).
// Slots go 0, 1, ... in the order participants claim their first task, so they stay below the
// region's task count and hence below get_num_threads(), whichever pool workers take part.
thread_local int t_thread_num = 0;
constexpr int kSpin = 4096;  // pause iterations (~20 ns each) before sleeping

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool env_is(const char* name, const char* value) {
  const char* e = std::getenv(name);
  return e && strcasecmp(e, value) == 0;
}

// How long libgomp's workers stay hot after a region (Note [Sharing a hot OpenMP team]).
int64_t hot_window_ns() {
  static const int64_t w = [] {
    if (env_is("OMP_WAIT_POLICY", "passive")) return int64_t(0);
    if (env_is("OMP_WAIT_POLICY", "active")) return std::numeric_limits<int64_t>::max() / 4;
    return int64_t(10'000'000);  // 10 ms: inside libgomp's default spin on fast-pause CPUs too
  }();
  return w;
}

std::atomic<int64_t> g_omp_hot_until{0};     // steady-clock ns; 0 = cold
std::atomic<int64_t> g_omp_backoff_until{0};  // no fw regions on the team before this
std::mutex g_omp_mu;                          // one fw region on the OpenMP team at a time
// A region whose master finished its tasks and then waited this long at the join for the rest of
// the team had a team member off the CPU: the machine is oversubscribed.
constexpr int64_t kLateJoinNs = 200'000;
constexpr int64_t kMinBackoffNs = 50'000'000, kMaxBackoffNs = 3'000'000'000;
std::atomic<int64_t> g_omp_backoff_ns{kMinBackoffNs};  // doubles while the team keeps being late
std::atomic<int> g_omp_strikes{0};  // late regions in a row; the second one backs off

}  // namespace

// Runs the tasks on the OpenMP team (its threads claim them from a counter, as the pool's do).
// Returns false when the team was late (see kLateJoinNs).
bool run_tasks_on_openmp(int n, void (*fn)(void*, int), void* ctx) {
  std::atomic<int> next{0};
  int64_t master_done = 0;
  const int nt = std::min(n, max_threads());
#pragma omp parallel num_threads(nt)
  {
    const bool outer = t_in_region;
    const int outer_num = t_thread_num;
    t_in_region = true;
    t_thread_num = omp_get_thread_num();
    for (int t; (t = next.fetch_add(1, std::memory_order_relaxed)) < n;) fn(ctx, t);
    t_in_region = outer;
    t_thread_num = outer_num;
    if (omp_get_thread_num() == 0) master_done = now_ns();
  }
  return now_ns() - master_done < kLateJoinNs;
}

namespace {

struct Job {
  void (*fn)(void*, int) = nullptr;
  void* ctx = nullptr;
  int n = 0;
  std::atomic<int> next{0}, done{0}, slots{0};
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
    bool last = false, slotted = false;
    t_in_region = true;
    for (;;) {
      int t = j.next.fetch_add(1, std::memory_order_relaxed);
      if (t >= j.n) break;
      if (!slotted) t_thread_num = j.slots.fetch_add(1, std::memory_order_relaxed), slotted = true;
      j.fn(j.ctx, t);
      if (j.done.fetch_add(1, std::memory_order_acq_rel) == j.n - 1) last = true;
    }
    t_in_region = false;
    t_thread_num = 0;
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

// The child of a fork() starts with no pool and a cold OpenMP team.
void install_atfork() {
  std::call_once(g_atfork_once, [] {
    pthread_atfork(nullptr, nullptr, [] {
      g_pool.store(nullptr, std::memory_order_release);
      g_omp_hot_until.store(0, std::memory_order_relaxed);
    });
  });
}

Pool& pool() {
  Pool* p = g_pool.load(std::memory_order_acquire);
  if (p) return *p;
  static std::mutex init_mu;
  std::lock_guard<std::mutex> lock(init_mu);
  install_atfork();
  p = g_pool.load(std::memory_order_acquire);
  if (!p) {
    p = new Pool();
    g_pool.store(p, std::memory_order_release);
  }
  return *p;
}

}  // namespace

bool in_parallel_region() { return t_in_region; }
int thread_num() { return t_thread_num; }

void note_openmp_region() {
  const int64_t w = hot_window_ns();
  if (w <= 0) return;
  install_atfork();
  g_omp_hot_until.store(now_ns() + w, std::memory_order_relaxed);
}

void run_tasks(int n_tasks, void (*fn)(void*, int), void* ctx) {
  if (n_tasks <= 0) return;
  if (n_tasks == 1 || t_in_region) {
    bool outer = t_in_region;
    t_in_region = true;
    for (int t = 0; t < n_tasks; t++) fn(ctx, t);
    t_in_region = outer;
    return;
  }
  const int64_t now = now_ns();
  if (g_omp_hot_until.load(std::memory_order_relaxed) > now &&
      g_omp_backoff_until.load(std::memory_order_relaxed) <= now && !omp_in_parallel()) {
    std::unique_lock<std::mutex> lock(g_omp_mu, std::try_to_lock);
    if (lock.owns_lock()) {
      profile_event("pool", "regions on the OpenMP team");
      if (run_tasks_on_openmp(n_tasks, fn, ctx)) {
        g_omp_strikes.store(0, std::memory_order_relaxed);
        g_omp_backoff_ns.store(kMinBackoffNs, std::memory_order_relaxed);
      } else if (g_omp_strikes.fetch_add(1, std::memory_order_relaxed) + 1 >= 2) {
        profile_event("pool", "late OpenMP team: back-off");
        g_omp_strikes.store(0, std::memory_order_relaxed);
        const int64_t b = g_omp_backoff_ns.load(std::memory_order_relaxed);
        g_omp_backoff_until.store(now_ns() + b, std::memory_order_relaxed);
        g_omp_backoff_ns.store(std::min(2 * b, kMaxBackoffNs), std::memory_order_relaxed);
      } else {
        profile_event("pool", "late OpenMP team: first strike");
      }
      note_openmp_region();
      return;
    }
  }
  profile_event("pool", "regions on fw's pool");
  pool().run(n_tasks, fn, ctx);
}

}  // namespace fw::detail

namespace fw {

int get_thread_num() { return detail::thread_num(); }
bool in_parallel_region() { return detail::in_parallel_region(); }

namespace detail {
void parallel_for_erased(int64_t begin, int64_t end, int64_t grain_size,
                         const std::function<void(int64_t, int64_t)>& f) {
  FW_CHECK(grain_size >= 0, "[parallel_for] grain_size must be non-negative, got ", grain_size);
  parallel_for(begin, end, std::max<int64_t>(grain_size, 1), f);
}
}  // namespace detail

}  // namespace fw
