#include "core/random.h"

#include <atomic>

#include "fw/ops.h"

namespace fw {
namespace {
std::atomic<uint64_t> g_seed{67280421310721ull};
std::atomic<uint64_t> g_offset{0};
}  // namespace

void manual_seed(uint64_t seed) {
  g_seed = seed;
  g_offset = 0;
}
uint64_t initial_seed() { return g_seed.load(); }

namespace detail {
void philox_reserve(int64_t n, uint64_t* seed, uint64_t* offset) {
  *seed = g_seed.load(std::memory_order_relaxed);
  *offset = g_offset.fetch_add(uint64_t(n < 1 ? 1 : n), std::memory_order_relaxed);
}
}  // namespace detail
}  // namespace fw
