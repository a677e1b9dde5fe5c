// Element-wise ops, copies and a convolution block on permuted (transposed, channels-last) tensors, one source for both
// frameworks (benchmarks/one_source.h). Prints "name value unit" lines; run through
// `COMPARE_SRC=benchmarks/bench_layout_api.cpp COMPARE_EAGER_ONLY=1 benchmarks/compare.sh`.
#include "one_source.h"
int main() {
  T::manual_seed(0);
  auto xt = T::randn({2048, 2048}).t();  // 4M floats, transposed
  auto cl = T::randn({32, 64, 56, 56}).contiguous(T::MemoryFormat::ChannelsLast);  // 6.4M floats
  T::NoGradGuard ng;
  T::Tensor r;
  printf("L1_inplace_mul_transposed %.3f ms\n", 1e3 * med([&] { xt.mul_(1.0); }));
  printf("L2_inplace_relu_channels_last %.3f ms\n", 1e3 * med([&] { cl.relu_(); }));
  printf("L3_mul_transposed %.3f ms\n", 1e3 * med([&] { r = xt * xt; }));
  printf("L4_add_channels_last %.3f ms\n", 1e3 * med([&] { r = cl + cl; }));
  printf("L5_clone_transposed %.3f ms\n", 1e3 * med([&] { r = xt.clone(); }));
  printf("L6_zeros_like_channels_last %.3f ms\n", 1e3 * med([&] { r = T::zeros_like(cl); }));
  printf("L7_contiguous_transposed %.3f ms\n", 1e3 * med([&] { r = xt.contiguous(); }));
  // A channels-last convolution block (results stay channels-last in both) and its NCHW twin.
  namespace F = T::nn::functional;
  auto x4 = T::randn({16, 64, 28, 28});
  auto x4cl = x4.contiguous(T::MemoryFormat::ChannelsLast);
  auto w = T::randn({64, 64, 3, 3}) * 0.05;
  auto rm = T::zeros({64}), rv = T::ones({64});
  printf("L8_conv3x3_channels_last %.3f ms\n", 1e3 * med([&] { r = F::conv2d(x4cl, w, F::Conv2dFuncOptions().padding(1)); }));
  printf("L9_conv3x3_nchw %.3f ms\n", 1e3 * med([&] { r = F::conv2d(x4, w, F::Conv2dFuncOptions().padding(1)); }));
  printf("L10_batch_norm_channels_last %.3f ms\n", 1e3 * med([&] { r = F::batch_norm(x4cl, rm, rv); }));
  printf("L11_max_pool_channels_last %.3f ms\n", 1e3 * med([&] { r = F::max_pool2d(x4cl, F::MaxPool2dFuncOptions(2)); }));
  return 0;
}
