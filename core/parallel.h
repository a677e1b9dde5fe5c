// parallel_for over an index range with a grain size, on fw's thread pool; exceptions cross the
// region. See Note [Thread pool] in core/parallel.cpp.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>

namespace fw::detail {

// Work smaller than this many elements stays on one thread (waking a worker costs ~1-2 us).
constexpr int64_t kGrainSize = 32768;

// Runs fn(ctx, t) for every t in [0, n_tasks) on the calling thread and the pool's workers
// (each task exactly once, in any order, on any participant); returns when all have finished.
// fn must not throw. Calls from several threads at once run the later ones serially.
void run_tasks(int n_tasks, void (*fn)(void*, int), void* ctx);
// True while the calling thread runs a task of run_tasks (nested regions run serially).
bool in_parallel_region();
// The slot of the calling thread in the region it runs tasks of; 0 outside regions.
int thread_num();
// Tells run_tasks that an OpenMP parallel region (a oneDNN call) has just ended, so that libgomp's
// workers are spinning and fw's next regions run on that team (Note [Sharing a hot OpenMP team]).
void note_openmp_region();
// What run_tasks does while that team is hot: the tasks on the OpenMP team, claimed from a shared
// counter. False when a team member was late (off the CPU). Exposed for the tests.
bool run_tasks_on_openmp(int n_tasks, void (*fn)(void*, int), void* ctx);
// The thread count parallel regions use: fw::set_num_threads (process-wide, as libtorch's), else
// OMP_NUM_THREADS / the number of CPUs.
int max_threads();

template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
  if (n <= grain) {  // the common small case decides before reading the thread count
    f(begin, end);
    return;
  }
  const int max_t = max_threads();
  if (max_t == 1 || in_parallel_region()) {
    f(begin, end);
    return;
  }
  const int nt = int(std::min<int64_t>(max_t, (n + grain - 1) / grain));
  struct Ctx {
    const F* f;
    int64_t begin, end, chunk;
    std::mutex mu;
    std::exception_ptr err;
  } ctx{&f, begin, end, (n + nt - 1) / nt, {}, {}};
  run_tasks(nt, [](void* p, int t) {
    Ctx& c = *static_cast<Ctx*>(p);
    int64_t b = c.begin + t * c.chunk, e = std::min(c.end, b + c.chunk);
    if (b >= e) return;
    try {
      (*c.f)(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lock(c.mu);
      if (!c.err) c.err = std::current_exception();
    }
  }, &ctx);
  if (ctx.err) std::rethrow_exception(ctx.err);
}

}  // namespace fw::detail
