#include "core/random.h"

#include <chrono>
#include <cstring>
#include <random>

#include "core/op.h"
#include "fw/generator.h"
#include "fw/ops.h"

namespace fw {

void GeneratorImpl::set_current_seed(uint64_t seed) {
  seed_.store(seed, std::memory_order_relaxed);
  offset_.store(0, std::memory_order_relaxed);
}

uint64_t GeneratorImpl::seed() {
  std::random_device rd;
  uint64_t s = (uint64_t(rd()) << 32) ^ rd() ^
               uint64_t(std::chrono::high_resolution_clock::now().time_since_epoch().count());
  set_current_seed(s);
  return s;
}

void GeneratorImpl::reserve(int64_t n, uint64_t* seed, uint64_t* offset) {
  *seed = seed_.load(std::memory_order_relaxed);
  *offset = offset_.fetch_add(uint64_t(n < 1 ? 1 : n), std::memory_order_relaxed);
}

uint64_t GeneratorImpl::random64() {
  uint64_t s, o;
  reserve(1, &s, &o);
  return detail::philox_u64(s, o);
}
uint32_t GeneratorImpl::random() { return uint32_t(random64() >> 32); }

std::shared_ptr<GeneratorImpl> GeneratorImpl::clone() const {
  auto g = std::make_shared<CPUGeneratorImpl>(current_seed());
  g->set_offset(get_offset());
  return g;
}

Tensor GeneratorImpl::get_state() const {
  Tensor t = empty({16}, kByte);
  uint64_t v[2] = {current_seed(), get_offset()};
  std::memcpy(t.data_ptr(), v, 16);  // fw runs on little-endian hosts only
  return t;
}

void GeneratorImpl::set_state(const Tensor& state) {
  FW_CHECK(state.defined() && state.dtype() == kByte && state.dim() == 1 && state.numel() == 16,
           "[Generator::set_state] expected the 16-byte uint8 state get_state() returns, got ",
           state.defined() ? dtype_str(state.dtype()) : "an undefined tensor", " of shape ",
           state.defined() ? state.sizes() : IntArrayRef());
  uint64_t v[2];
  std::memcpy(v, state.contiguous().data_ptr(), 16);
  seed_.store(v[0], std::memory_order_relaxed);
  offset_.store(v[1], std::memory_order_relaxed);
}

GeneratorImpl& Generator::impl() const {
  FW_CHECK(impl_ != nullptr, "[Generator] this generator is undefined (default-constructed)");
  return *impl_;
}
Tensor Generator::get_state() const { return impl().get_state(); }
void Generator::set_state(const Tensor& state) const { impl().set_state(state); }

void manual_seed(uint64_t seed) { detail::getDefaultCPUGenerator()->set_current_seed(seed); }
uint64_t initial_seed() { return detail::getDefaultCPUGenerator()->current_seed(); }

namespace detail {
namespace {
thread_local GeneratorImpl* t_generator = nullptr;
}

void throw_bad_generator() {
  throw_error("[Generator] expected a defined CPU generator (make_generator<CPUGeneratorImpl>(seed))");
}

const Generator& getDefaultCPUGenerator() {
  static const Generator g = make_generator<CPUGeneratorImpl>(default_rng_seed_val);
  return g;
}
Generator createCPUGenerator(uint64_t seed_val) { return make_generator<CPUGeneratorImpl>(seed_val); }

GeneratorImpl* current_generator() {
  return t_generator != nullptr ? t_generator : getDefaultCPUGenerator().unsafeGetGeneratorImpl();
}

GeneratorScope::GeneratorScope(const std::optional<Generator>& gen) {
  if (!gen.has_value() || !gen->defined()) return;
  GeneratorImpl* g = gen->unsafeGetGeneratorImpl();
  FW_CHECK(g->device().is_cpu(), "[Generator] expected a CPU generator, got one for ", g->device());
  if (g == getDefaultCPUGenerator().unsafeGetGeneratorImpl()) return;  // the trace records this stream
  if (void* tr = tls().tracer) {
    g_tracer->graph_break(tr, "random op with a generator", "draws from an explicit Generator run eagerly");
    tracer_ = tr;
    tls().tracer = nullptr;
  }
  prev_ = t_generator;
  t_generator = g;
  active_ = true;
}

GeneratorScope::~GeneratorScope() {
  if (!active_) return;
  t_generator = prev_;
  if (tracer_) tls().tracer = tracer_;
}

void philox_reserve(int64_t n, uint64_t* seed, uint64_t* offset) { current_generator()->reserve(n, seed, offset); }
}  // namespace detail
}  // namespace fw
