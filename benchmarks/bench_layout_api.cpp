// Element-wise ops and copies on permuted (transposed, channels-last) tensors, one source for both
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
  return 0;
}
