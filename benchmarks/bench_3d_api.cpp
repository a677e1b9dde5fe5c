// 3-d layers, one source for both frameworks (as ../shared/bench/bench_api.cpp): compiled with
// -DPEER_TORCH against libtorch, or against fw. Prints "name value unit" lines; run through
// `COMPARE_SRC=benchmarks/bench_3d_api.cpp COMPARE_EAGER_ONLY=1 benchmarks/compare.sh`.
#include "one_source.h"
int main() {
  T::manual_seed(0);
  {  // a video/volumetric block: Conv3d 16 -> 32, 3x3x3, padding 1, on 4 x 16 x 16 x 32 x 32
    T::nn::Conv3d conv(T::nn::Conv3dOptions(16, 32, 3).padding(1));
    auto x = T::randn({4, 16, 16, 32, 32});
    double flops = 2.0 * 4 * 32 * 16 * 32 * 32 * 16 * 27;
    {
      T::NoGradGuard ng;
      double t = med([&] { auto y = conv->forward(x); });
      printf("C3_conv3d_fwd %.1f GFLOP/s\n", flops / t / 1e9);
    }
    auto xg = x.clone().requires_grad_(true);
    double t = med([&] {
      conv->zero_grad();
      auto y = conv->forward(xg);
      y.sum().backward();
    }, 5, 1);
    printf("C3_conv3d_fwd_bwd %.1f GFLOP/s\n", 3 * flops / t / 1e9);
  }
  {
    T::nn::ConvTranspose3d up(T::nn::ConvTranspose3dOptions(32, 16, 2).stride(2));
    auto x = T::randn({4, 32, 8, 16, 16});
    T::NoGradGuard ng;
    double t = med([&] { auto y = up->forward(x); });
    printf("C3T_conv_transpose3d_fwd %.2f ms\n", t * 1e3);
  }
  {
    auto x = T::randn({8, 32, 16, 32, 32});
    T::NoGradGuard ng;
    printf("P3_max_pool3d_2 %.2f ms\n", med([&] { auto y = T::max_pool3d(x, 2); }) * 1e3);
    printf("P3_avg_pool3d_3s2p1 %.2f ms\n", med([&] { auto y = T::avg_pool3d(x, 3, 2, 1); }) * 1e3);
    printf("P3_adaptive_avg_pool3d_1 %.2f ms\n", med([&] { auto y = T::adaptive_avg_pool3d(x, {1, 1, 1}); }) * 1e3);
  }
  {
    auto x = T::randn({8, 32, 16, 32, 32}).requires_grad_(true);
    double t = med([&] {
      auto y = T::max_pool3d(x, 2);
      y.sum().backward();
    }, 5, 1);
    printf("P3_max_pool3d_2_fwd_bwd %.2f ms\n", t * 1e3);
  }
  return 0;
}
