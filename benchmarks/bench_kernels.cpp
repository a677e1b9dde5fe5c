// Kernel benchmarks: elementwise bandwidth, transcendental throughput, reductions, dispatch
// overhead. Counters report bytes/s (GB/s) or FLOP/s next to the time.
#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <cmath>
#include <fw/fw.h>

namespace {

void BM_add_f32(benchmark::State& s) {
  int64_t n = s.range(0);
  auto a = fw::randn({n}), b = fw::randn({n});
  for (auto _ : s) benchmark::DoNotOptimize(fw::add(a, b).data_ptr());
  s.SetBytesProcessed(s.iterations() * n * 12);
}
BENCHMARK(BM_add_f32)->Arg(100)->Arg(1 << 16)->Arg(1 << 24)->UseRealTime();

void BM_add_broadcast_f32(benchmark::State& s) {
  auto a = fw::randn({4096, 1024}), b = fw::randn({1024});
  for (auto _ : s) benchmark::DoNotOptimize(fw::add(a, b).data_ptr());
  s.SetBytesProcessed(s.iterations() * 4096 * 1024 * 8);
}
BENCHMARK(BM_add_broadcast_f32)->UseRealTime();

void BM_add_transposed_f32(benchmark::State& s) {
  auto a = fw::randn({2048, 2048}), b = fw::randn({2048, 2048});
  auto bt = b.t();
  for (auto _ : s) benchmark::DoNotOptimize(fw::add(a, bt).data_ptr());
  s.SetBytesProcessed(s.iterations() * 2048 * 2048 * 12);
}
BENCHMARK(BM_add_transposed_f32)->UseRealTime();

template <fw::Tensor (*F)(const fw::Tensor&)>
void BM_unary_f32(benchmark::State& s) {
  auto a = fw::randn({1 << 22});
  for (auto _ : s) benchmark::DoNotOptimize(F(a).data_ptr());
  s.SetItemsProcessed(s.iterations() * (1 << 22));
  s.SetBytesProcessed(s.iterations() * (1 << 22) * 8);
}
fw::Tensor gelu1(const fw::Tensor& t) { return fw::gelu(t); }
BENCHMARK(BM_unary_f32<fw::exp>)->Name("BM_exp_f32")->UseRealTime();
BENCHMARK(BM_unary_f32<fw::tanh>)->Name("BM_tanh_f32")->UseRealTime();
BENCHMARK(BM_unary_f32<gelu1>)->Name("BM_gelu_f32")->UseRealTime();
BENCHMARK(BM_unary_f32<fw::sin>)->Name("BM_sin_f32")->UseRealTime();

void BM_sum_rows_f32(benchmark::State& s) {
  auto a = fw::randn({4096, 1024});
  for (auto _ : s) benchmark::DoNotOptimize(a.sum({1}).data_ptr());
  s.SetBytesProcessed(s.iterations() * 4096 * 1024 * 4);
}
BENCHMARK(BM_sum_rows_f32)->UseRealTime();

void BM_sum_cols_f32(benchmark::State& s) {
  auto a = fw::randn({4096, 1024});
  for (auto _ : s) benchmark::DoNotOptimize(a.sum({0}).data_ptr());
  s.SetBytesProcessed(s.iterations() * 4096 * 1024 * 4);
}
BENCHMARK(BM_sum_cols_f32)->UseRealTime();

void BM_copy_cast_f32_f16(benchmark::State& s) {
  auto a = fw::randn({1 << 22});
  for (auto _ : s) benchmark::DoNotOptimize(a.to(fw::kHalf).data_ptr());
  s.SetBytesProcessed(s.iterations() * (1 << 22) * 6);
}
BENCHMARK(BM_copy_cast_f32_f16)->UseRealTime();

void BM_matmul_f32(benchmark::State& s) {
  int64_t n = s.range(0);
  auto a = fw::randn({n, n}), b = fw::randn({n, n});
  for (auto _ : s) benchmark::DoNotOptimize(fw::matmul(a, b).data_ptr());
  s.counters["FLOP/s"] = benchmark::Counter(2.0 * n * n * n * s.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_matmul_f32)->Arg(256)->Arg(1024)->UseRealTime();

// The products of W4's train step (MLP 784-1024-1024-10, batch 256) in the layouts nn::Linear and
// its backward hand to mm: layout 0 is A B (g W), 1 is A B^T (x W^T, the forward), 2 is A^T B
// (g^T x, the weight gradients; Note [Gradient layout of transposed operands]).
void BM_matmul_f32_layouts(benchmark::State& s) {
  const int64_t m = s.range(0), n = s.range(1), k = s.range(2), layout = s.range(3);
  auto a = layout == 2 ? fw::randn({k, m}).t() : fw::randn({m, k});
  auto b = layout == 1 ? fw::randn({n, k}).t() : fw::randn({k, n});
  for (auto _ : s) benchmark::DoNotOptimize(fw::mm(a, b).data_ptr());
  s.counters["FLOP/s"] = benchmark::Counter(2.0 * m * n * k * s.iterations(), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_matmul_f32_layouts)
    ->ArgNames({"m", "n", "k", "layout"})
    ->Args({256, 1024, 784, 1})
    ->Args({256, 1024, 1024, 1})
    ->Args({256, 10, 1024, 1})
    ->Args({256, 1024, 1024, 0})
    ->Args({256, 1024, 10, 0})
    ->Args({1024, 784, 256, 2})
    ->Args({1024, 1024, 256, 2})
    ->Args({10, 1024, 256, 2})
    ->UseRealTime();

// The machine's float32 FMA ceiling: 12 independent vector accumulators per thread (enough to
// cover FMA latency x throughput), no memory traffic. W1/W4 ratios are bounded by this figure
// divided by the peer's achieved rate (BENCHMARKS.md). Uses the widest FMA the build targets.
#if defined(__AVX512F__)
using PeakVec = __m512;
constexpr int kPeakLanes = 16;
inline PeakVec peak_set(float v) { return _mm512_set1_ps(v); }
inline PeakVec peak_fma(PeakVec a, PeakVec b, PeakVec c) { return _mm512_fmadd_ps(a, b, c); }
inline float peak_sum(PeakVec a) { return _mm512_reduce_add_ps(a); }
#elif defined(__AVX2__) && defined(__FMA__)
using PeakVec = __m256;
constexpr int kPeakLanes = 8;
inline PeakVec peak_set(float v) { return _mm256_set1_ps(v); }
inline PeakVec peak_fma(PeakVec a, PeakVec b, PeakVec c) { return _mm256_fmadd_ps(a, b, c); }
inline float peak_sum(PeakVec a) {
  alignas(32) float t[8];
  _mm256_store_ps(t, a);
  return t[0] + t[1] + t[2] + t[3] + t[4] + t[5] + t[6] + t[7];
}
#else
using PeakVec = float;
constexpr int kPeakLanes = 1;
inline PeakVec peak_set(float v) { return v; }
inline PeakVec peak_fma(PeakVec a, PeakVec b, PeakVec c) { return std::fma(a, b, c); }
inline float peak_sum(PeakVec a) { return a; }
#endif
constexpr int64_t kPeakIters = 1 << 20;
constexpr int kPeakAcc = 12;
__attribute__((noinline)) float peak_fma_loop(float seed) {
  PeakVec acc[kPeakAcc];
  for (int i = 0; i < kPeakAcc; ++i) acc[i] = peak_set(seed * float(i));
  const PeakVec b = peak_set(0.999f), c = peak_set(0.0001f);
  for (int64_t k = 0; k < kPeakIters; ++k) {
#pragma GCC unroll 12
    for (int i = 0; i < kPeakAcc; ++i) acc[i] = peak_fma(acc[i], b, c);
  }
  float s = 0;
  for (int i = 0; i < kPeakAcc; ++i) s += peak_sum(acc[i]);
  return s;
}
void BM_peak_fma_f32(benchmark::State& state) {
  float seed = 0.001f;
  for (auto _ : state) benchmark::DoNotOptimize(seed = peak_fma_loop(seed) * 1e-9f + 0.001f);
  // Google Benchmark sums the threads' counters, so this is the rate of all threads together.
  state.counters["FLOP/s"] = benchmark::Counter(double(state.iterations()) * kPeakIters * kPeakAcc * kPeakLanes * 2,
                                                benchmark::Counter::kIsRate);
}
BENCHMARK(BM_peak_fma_f32)->Threads(1)->Threads(2)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
