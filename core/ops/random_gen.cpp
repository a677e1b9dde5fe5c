// Random ops that take a Generator (Note [Generators] in fw/generator.h): each installs the
// generator for the call and runs the generator-less op, so both draw the same way.
#include <limits>

#include "core/op.h"
#include "fw/fw.h"

namespace fw {
namespace {
// Runs f with `gen` installed as this thread's generator.
template <class F>
decltype(auto) with_generator(const std::optional<Generator>& gen, F&& f) {
  detail::GeneratorScope scope(gen);
  return f();
}
}  // namespace

Tensor rand(IntArrayRef size, std::optional<Generator> gen, const TensorOptions& o) {
  return with_generator(gen, [&]() -> decltype(auto) { return rand(size, o); });
}
Tensor randn(IntArrayRef size, std::optional<Generator> gen, const TensorOptions& o) {
  return with_generator(gen, [&]() -> decltype(auto) { return randn(size, o); });
}
Tensor randint(int64_t high, IntArrayRef size, std::optional<Generator> gen, const TensorOptions& o) {
  return with_generator(gen, [&]() -> decltype(auto) { return randint(high, size, o); });
}
Tensor randint(int64_t low, int64_t high, IntArrayRef size, std::optional<Generator> gen, const TensorOptions& o) {
  return with_generator(gen, [&]() -> decltype(auto) { return randint(low, high, size, o); });
}
Tensor randperm(int64_t n, std::optional<Generator> gen, const TensorOptions& o) {
  return with_generator(gen, [&]() -> decltype(auto) { return randperm(n, o); });
}
Tensor bernoulli(const Tensor& p, std::optional<Generator> gen) {
  return with_generator(gen, [&]() -> decltype(auto) { return bernoulli(p); });
}
Tensor bernoulli(const Tensor& t, double p, std::optional<Generator> gen) {
  return with_generator(gen, [&]() -> decltype(auto) { return bernoulli(t, p); });
}
Tensor normal(double mean, double std, IntArrayRef size, std::optional<Generator> gen, const TensorOptions& o) {
  return with_generator(gen, [&]() -> decltype(auto) { return normal(mean, std, size, o); });
}
Tensor normal(const Tensor& mean, const Tensor& std, std::optional<Generator> gen) {
  return with_generator(gen, [&]() -> decltype(auto) { return normal(mean, std); });
}
Tensor normal(const Tensor& mean, double std, std::optional<Generator> gen) {
  return with_generator(gen, [&]() -> decltype(auto) { return normal(mean, std); });
}
Tensor normal(double mean, const Tensor& std, std::optional<Generator> gen) {
  return with_generator(gen, [&]() -> decltype(auto) { return normal(mean, std); });
}
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement, std::optional<Generator> gen) {
  return with_generator(gen, [&]() -> decltype(auto) { return multinomial(probs, num_samples, replacement); });
}
Tensor poisson(const Tensor& rates, std::optional<Generator> gen) {
  return with_generator(gen, [&]() -> decltype(auto) { return poisson(rates); });
}
Tensor binomial(const Tensor& count, const Tensor& prob, std::optional<Generator> gen) {
  return with_generator(gen, [&]() -> decltype(auto) { return binomial(count, prob); });
}

Tensor& Tensor::uniform_(double from, double to, std::optional<Generator> gen) const {
  return with_generator(gen, [&]() -> decltype(auto) { return uniform_(from, to); });
}
Tensor& Tensor::normal_(double mean, double std, std::optional<Generator> gen) const {
  return with_generator(gen, [&]() -> decltype(auto) { return normal_(mean, std); });
}
Tensor& Tensor::bernoulli_(double p, std::optional<Generator> gen) const {
  return with_generator(gen, [&]() -> decltype(auto) { return bernoulli_(p); });
}
Tensor& Tensor::bernoulli_(const Tensor& p, std::optional<Generator> gen) const {
  return with_generator(gen, [&]() -> decltype(auto) { return copy_(fw::bernoulli(p.to(dtype()).expand(sizes()))); });
}
Tensor& Tensor::random_(int64_t from, int64_t to, std::optional<Generator> gen) const {
  return with_generator(gen, [&]() -> decltype(auto) { return random_(from, to); });
}
Tensor& Tensor::random_(int64_t to, std::optional<Generator> gen) const {
  return with_generator(gen, [&]() -> decltype(auto) { return random_(0, to); });
}
Tensor& Tensor::random_(std::optional<Generator> gen) const {
  // [0, 2^digits] for floating dtypes (every integer there is exact), [0, max] for integral ones.
  int64_t to = 0;
  switch (dtype().toScalarType()) {
    case ScalarType::Bool: to = 2; break;
    case ScalarType::UInt8: to = 256; break;
    case ScalarType::Int8: to = 128; break;
    case ScalarType::Int16: to = 32768; break;
    case ScalarType::Int32: to = int64_t(1) << 31; break;
    case ScalarType::Int64: to = std::numeric_limits<int64_t>::max(); break;
    case ScalarType::Half: to = (int64_t(1) << 11) + 1; break;
    case ScalarType::BFloat16: to = (int64_t(1) << 8) + 1; break;
    case ScalarType::Float: to = (int64_t(1) << 24) + 1; break;
    case ScalarType::Double: to = (int64_t(1) << 53) + 1; break;
    default: detail::throw_error("[random_] not implemented for dtype ", dtype_str(dtype()));
  }
  return with_generator(gen, [&]() -> decltype(auto) { return random_(0, to); });
}
Tensor& Tensor::exponential_(double lambd, std::optional<Generator> gen) const {
  return with_generator(gen, [&]() -> decltype(auto) { return exponential_(lambd); });
}
Tensor& Tensor::geometric_(double p, std::optional<Generator> gen) const {
  return with_generator(gen, [&]() -> decltype(auto) { return geometric_(p); });
}
Tensor& Tensor::cauchy_(double median, double sigma, std::optional<Generator> gen) const {
  return with_generator(gen, [&]() -> decltype(auto) { return cauchy_(median, sigma); });
}
Tensor& Tensor::log_normal_(double mean, double std, std::optional<Generator> gen) const {
  return with_generator(gen, [&]() -> decltype(auto) { return log_normal_(mean, std); });
}
Tensor Tensor::bernoulli(std::optional<Generator> gen) const { return fw::bernoulli(*this, std::move(gen)); }
Tensor Tensor::bernoulli(double p, std::optional<Generator> gen) const { return fw::bernoulli(*this, p, std::move(gen)); }
Tensor Tensor::multinomial(int64_t num_samples, bool replacement, std::optional<Generator> gen) const {
  return fw::multinomial(*this, num_samples, replacement, std::move(gen));
}

}  // namespace fw
