// Random number generators with libtorch's C++ interface.
//
// Note [Generators]
// Every random op draws from a Philox4x32-10 stream (core/random.h): value i of a draw is a pure
// function of the generator's (seed, counter), so results do not depend on the thread split. A
// generator is that pair: the seed, and the counter offset that each draw advances by the number
// of values it takes. fw::manual_seed seeds the default generator; a Generator made with
// make_generator<CPUGeneratorImpl>(seed) is an independent stream that only the calls given it
// advance. Copies of a Generator share the state (as libtorch's); clone() copies it.
//
// Ops take a generator as libtorch's do (`randn(size, gen)`, `x.normal_(0, 1, gen)`); nullopt or an
// undefined Generator means the default. Under fw::compile, a call with an explicit generator
// other than the default breaks the graph and runs eagerly, so its draws come from that generator
// exactly as in eager code.
//
// get_state() is a 16-byte uint8 tensor (seed and offset, little endian); set_state() accepts
// only that format (libtorch's CPU state is a Mersenne Twister's and is not interchangeable).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "fw/device.h"

namespace fw {

class Tensor;

constexpr uint64_t default_rng_seed_val = 67280421310721ull;

class GeneratorImpl {
 public:
  explicit GeneratorImpl(uint64_t seed = default_rng_seed_val, Device device = Device(kCPU))
      : seed_(seed), device_(device) {}
  virtual ~GeneratorImpl() = default;
  GeneratorImpl(const GeneratorImpl&) = delete;
  GeneratorImpl& operator=(const GeneratorImpl&) = delete;

  // Seeds the stream and rewinds it to its start.
  void set_current_seed(uint64_t seed);
  uint64_t current_seed() const { return seed_.load(std::memory_order_relaxed); }
  // Seeds the stream from a non-deterministic source and returns the seed.
  uint64_t seed();
  // The Philox counter: how many values the stream has handed out since it was seeded.
  void set_offset(uint64_t offset) { offset_.store(offset, std::memory_order_relaxed); }
  uint64_t get_offset() const { return offset_.load(std::memory_order_relaxed); }
  void set_philox_offset_per_thread(uint64_t offset) { set_offset(offset); }
  uint64_t philox_offset_per_thread() const { return get_offset(); }
  Tensor get_state() const;
  void set_state(const Tensor& state);
  Device device() const { return device_; }
  // The next raw 32 / 64 random bits of the stream (for hand-written kernels).
  uint32_t random();
  uint64_t random64();
  // Takes n values of the stream: their seed and first counter.
  void reserve(int64_t n, uint64_t* seed, uint64_t* offset);
  std::shared_ptr<GeneratorImpl> clone() const;
  static DeviceType device_type() { return kCPU; }

  // Held by callers that must see the state unchanged across several calls (as libtorch's).
  std::mutex mutex_;

 private:
  std::atomic<uint64_t> seed_;
  std::atomic<uint64_t> offset_{0};
  Device device_;
};

// libtorch's name for the CPU generator.
class CPUGeneratorImpl : public GeneratorImpl {
 public:
  explicit CPUGeneratorImpl(uint64_t seed_in = default_rng_seed_val) : GeneratorImpl(seed_in) {}
};

class Generator {
 public:
  Generator() = default;
  explicit Generator(std::shared_ptr<GeneratorImpl> impl) : impl_(std::move(impl)) {}
  bool defined() const { return bool(impl_); }
  GeneratorImpl* unsafeGetGeneratorImpl() const { return impl_.get(); }
  GeneratorImpl* operator->() const { return impl_.get(); }
  template <class T> T* get() const { return static_cast<T*>(impl_.get()); }
  std::mutex& mutex() const { return impl().mutex_; }
  void set_current_seed(uint64_t seed) const { impl().set_current_seed(seed); }
  uint64_t current_seed() const { return impl().current_seed(); }
  uint64_t seed() const { return impl().seed(); }
  void set_offset(uint64_t offset) const { impl().set_offset(offset); }
  uint64_t get_offset() const { return impl().get_offset(); }
  Tensor get_state() const;
  void set_state(const Tensor& state) const;
  Device device() const { return impl().device(); }
  Generator clone() const { return Generator(impl().clone()); }
  bool operator==(const Generator& o) const { return impl_ == o.impl_; }
  bool operator!=(const Generator& o) const { return impl_ != o.impl_; }

 private:
  GeneratorImpl& impl() const;
  std::shared_ptr<GeneratorImpl> impl_;
};

template <class Impl, class... Args>
Generator make_generator(Args&&... args) {
  return Generator(std::make_shared<Impl>(std::forward<Args>(args)...));
}

namespace detail {
[[noreturn]] void throw_bad_generator();
}
// The generator a `gen` argument names (raises for a generator of another device type).
template <class Impl>
Impl* check_generator(const std::optional<Generator>& gen);
template <class Impl>
Impl* get_generator_or_default(const std::optional<Generator>& gen, const Generator& default_gen) {
  return gen.has_value() && gen->defined() ? check_generator<Impl>(gen) : default_gen.get<Impl>();
}
template <class Impl>
Impl* check_generator(const std::optional<Generator>& gen) {
  Impl* p = gen.has_value() ? gen->get<Impl>() : nullptr;
  if (p == nullptr || p->device().type() != Impl::device_type()) detail::throw_bad_generator();
  return p;
}

namespace detail {
// The default generator (the one fw::manual_seed seeds).
const Generator& getDefaultCPUGenerator();
Generator createCPUGenerator(uint64_t seed_val = default_rng_seed_val);
// The generator random ops draw from on this thread: the one a GeneratorScope installed, or the
// default.
GeneratorImpl* current_generator();

// Installs `gen` (when given and defined) as this thread's generator for the scope. Under an
// active fw::compile trace a generator other than the default breaks the graph and the scope runs
// eagerly (Note [Generators]).
class GeneratorScope {
 public:
  explicit GeneratorScope(const std::optional<Generator>& gen);
  ~GeneratorScope();
  GeneratorScope(const GeneratorScope&) = delete;
  GeneratorScope& operator=(const GeneratorScope&) = delete;

 private:
  GeneratorImpl* prev_ = nullptr;
  void* tracer_ = nullptr;
  bool active_ = false;
};
}  // namespace detail

}  // namespace fw
