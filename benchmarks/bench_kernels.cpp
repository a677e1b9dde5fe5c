// Kernel benchmarks: elementwise bandwidth, transcendental throughput, reductions, dispatch
// overhead. Counters report bytes/s (GB/s) or FLOP/s next to the time.
#include <benchmark/benchmark.h>
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

}  // namespace

BENCHMARK_MAIN();
