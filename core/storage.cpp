// CPU caching allocator and StorageImpl.
//
// Note [CPU caching allocator]
// A fresh multi-megabyte malloc is served by mmap, and its first touch page-faults every 4 KiB
// page; on W2 (16M floats) that fault cost exceeded the arithmetic. Freed blocks are therefore
// kept in per-size-class free lists and handed out again. Sizes round up to 1/8 of their power
// of two (at most 12.5% slack) so shapes that differ slightly still share blocks. The cache is
// bounded (FW_CPU_CACHE_LIMIT_MB, default 4096); past it, blocks go back to the system.
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "core/op.h"
#include "fw/error.h"
#include "fw/storage.h"

namespace fw {
namespace detail {
namespace {

struct Cache {
  std::mutex mu;
  std::unordered_map<size_t, std::vector<void*>> free;
  size_t cached = 0;
  size_t limit;
  Cache() {
    const char* e = std::getenv("FW_CPU_CACHE_LIMIT_MB");
    limit = size_t(e ? std::atoll(e) : 4096) << 20;
  }
  ~Cache() { release_all(); }
  void release_all() {
    for (auto& [sz, v] : free)
      for (void* p : v) std::free(p);
    free.clear();
    cached = 0;
  }
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: storages may outlive static destruction
  return *c;
}

size_t round_size(size_t n) {
  if (n <= 512) return (n + 63) & ~size_t(63);
  size_t p = size_t(1) << (63 - __builtin_clzll(n));
  size_t g = p / 8;
  return (n + g - 1) / g * g;
}

}  // namespace

void* cpu_alloc(size_t nbytes) {
  if (nbytes == 0) nbytes = 1;
  size_t sz = round_size(nbytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lk(c.mu);
    auto it = c.free.find(sz);
    if (it != c.free.end() && !it->second.empty()) {
      void* p = it->second.back();
      it->second.pop_back();
      c.cached -= sz;
      return p;
    }
  }
  void* p = std::aligned_alloc(64, sz);
  if (!p) {
    cpu_allocator_empty_cache();
    p = std::aligned_alloc(64, sz);
  }
  FW_CHECK(p, "[alloc] out of memory allocating ", nbytes, " bytes on the CPU");
  return p;
}

void cpu_free(void* p, size_t nbytes) {
  if (!p) return;
  if (nbytes == 0) nbytes = 1;
  size_t sz = round_size(nbytes);
  Cache& c = cache();
  {
    std::lock_guard<std::mutex> lk(c.mu);
    if (c.cached + sz <= c.limit) {
      c.free[sz].push_back(p);
      c.cached += sz;
      return;
    }
  }
  std::free(p);
}

void cpu_allocator_empty_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lk(c.mu);
  c.release_all();
}

size_t cpu_allocator_cached_bytes() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lk(c.mu);
  return c.cached;
}

}  // namespace detail

namespace detail {
// On separate cache lines: data() reads the first everywhere, allocations during a trace bump the
// second.
alignas(64) std::atomic<int> g_traces_active{0};
alignas(64) std::atomic<uint64_t> g_storage_clock{0};
namespace {
uint64_t birth_stamp() {
  return g_traces_active.load(std::memory_order_relaxed) != 0 ? g_storage_clock.fetch_add(1, std::memory_order_relaxed) + 1
                                                               : 0;
}
}  // namespace
}  // namespace detail

StorageImpl::StorageImpl(size_t n, Device d) : nbytes(n), device(d), birth(detail::birth_stamp()) {
  FW_CHECK(d.is_cpu(), "[alloc] device ", d, " is not available in this build");
  data = detail::cpu_alloc(n);
  inference = detail::tls().inference_mode;
}

StorageImpl::StorageImpl(void* p, size_t n, Device d, std::function<void(void*)> del)
    : data(p), nbytes(n), device(d), birth(detail::birth_stamp()), deleter(std::move(del)) {
  if (!deleter) deleter = [](void*) {};
}

StorageImpl::~StorageImpl() {
  if (deleter) deleter(data);
  else detail::cpu_free(data, nbytes);
}

}  // namespace fw
