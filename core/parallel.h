// parallel_for over an index range with a grain size, on OpenMP; exceptions cross the region.
#pragma once
#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <exception>

namespace fw::detail {

// Work smaller than this many elements stays on one thread (thread start-up costs ~1-2 us).
constexpr int64_t kGrainSize = 32768;

template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const F& f) {
  int64_t n = end - begin;
  if (n <= 0) return;
  int max_t = omp_get_max_threads();
  if (n <= grain || max_t == 1 || omp_in_parallel()) {
    f(begin, end);
    return;
  }
  int nt = int(std::min<int64_t>(max_t, (n + grain - 1) / grain));
  std::exception_ptr err;
#pragma omp parallel num_threads(nt)
  {
    int t = omp_get_thread_num(), nth = omp_get_num_threads();
    int64_t chunk = (n + nth - 1) / nth;
    int64_t b = begin + t * chunk, e = std::min(end, b + chunk);
    if (b < e) {
      try {
        f(b, e);
      } catch (...) {
#pragma omp critical(fw_parallel_error)
        if (!err) err = std::current_exception();
      }
    }
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace fw::detail
