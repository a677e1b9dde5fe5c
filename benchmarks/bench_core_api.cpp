// The tensor-only canonical workloads (W1, W2, W3, W8 of ../shared/WORKLOADS.md), one source
// for both frameworks: -DPEER_TORCH builds it against libtorch, otherwise against fw. Kept in
// step with ../shared/bench/bench_api.cpp, which adds the nn/optim workloads.
#include "one_source.h"
int main() {
  T::manual_seed(0);
  { auto a = T::randn({1024, 1024}), b = T::randn({1024, 1024});
    double t = med([&] { auto c = T::matmul(a, b); });
    printf("W1_sgemm1024 %.1f GFLOP/s\n", 2.0 * 1024 * 1024 * 1024 / t / 1e9); }
  { auto x = T::randn({16 << 20}), w = T::randn({16 << 20}), b = T::randn({16 << 20});
    double t = med([&] { auto y = T::gelu(x * w + b); });
    printf("W2_gelu_chain_16M %.2f ms\n", t * 1e3); }
  { auto x = T::randn({4096, 1024}), g = T::randn({1024}), be = T::randn({1024});
    double t = med([&] { auto y = T::softmax(T::layer_norm(x, {1024}, g, be), -1); });
    printf("W3_softmax_layernorm %.2f ms\n", t * 1e3); }
  { auto a = T::randn({100}), b = T::randn({100});
    double t = med([&] { for (int i = 0; i < 100000; i++) { auto c = T::add(a, b); } });
    printf("W8_add100_per_op %.3f us\n", t / 100000 * 1e6); }
}
