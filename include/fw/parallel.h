// libtorch's intra-op parallelism helpers (at::parallel_for, at::parallel_reduce,
// at::get_thread_num) on fw's thread pool, for user kernels:
//   fw::parallel_for(0, n, 2048, [&](int64_t b, int64_t e) { for (auto i = b; i < e; i++) ...; });
// Regions split [begin, end) into at most get_num_threads() contiguous chunks of at least
// grain_size elements; a range of grain_size or fewer, one thread, or a call from inside a region
// runs on the calling thread. An exception thrown by a chunk is rethrown to the caller.
#pragma once
#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace fw {

int get_num_threads();
void set_num_threads(int n);
// The calling thread's slot in the parallel region it is running a chunk of: 0 <= slot <
// get_num_threads(); 0 outside regions. Suited to indexing per-thread scratch buffers.
int get_thread_num();
// True while the calling thread runs a chunk of a parallel region.
bool in_parallel_region();

namespace detail {
void parallel_for_erased(int64_t begin, int64_t end, int64_t grain_size,
                         const std::function<void(int64_t, int64_t)>& f);
}  // namespace detail

template <class F>
void parallel_for(int64_t begin, int64_t end, int64_t grain_size, const F& f) {
  if (begin >= end) return;
  detail::parallel_for_erased(begin, end, grain_size, std::function<void(int64_t, int64_t)>(std::cref(f)));
}

// f(b, e, ident) reduces one chunk; sf combines partial results. The chunks are combined in
// order (result = sf(...sf(sf(ident, r0), r1)..., rk)), so the result does not depend on which
// threads ran them.
template <class scalar_t, class F, class SF>
scalar_t parallel_reduce(int64_t begin, int64_t end, int64_t grain_size, const scalar_t ident, const F& f,
                         const SF& sf) {
  if (begin >= end) return ident;
  const int64_t n = end - begin, grain = std::max<int64_t>(grain_size, 1);
  const int64_t chunks = std::min<int64_t>(std::max(get_num_threads(), 1), (n + grain - 1) / grain);
  if (chunks <= 1 || in_parallel_region()) return f(begin, end, ident);
  const int64_t size = (n + chunks - 1) / chunks;
  struct Slot { scalar_t value; };  // not std::vector<bool>'s shared bits
  std::vector<Slot> partial(size_t(chunks), Slot{ident});
  parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
    for (int64_t c = c0; c < c1; c++)
      partial[size_t(c)].value = f(begin + c * size, std::min(end, begin + (c + 1) * size), ident);
  });
  scalar_t result = ident;
  for (const auto& r : partial) result = sf(result, r.value);
  return result;
}

}  // namespace fw
