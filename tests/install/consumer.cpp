// An out-of-tree program against an installed fw, built as C++17 (the standard of most libtorch
// programs and g++'s default): tensors, a Sequential of modules, and fw::compile.
#include <fw/fw.h>
#include <fw/jit.h>

#include <cstdio>

int main() {
  fw::Tensor a = fw::arange(6, fw::kFloat).view({2, 3});
  fw::Tensor b = (a * 2 + 1).sum();
  if (b.item<float>() != 36.0f) return 1;

  fw::manual_seed(0);
  fw::nn::Sequential net(fw::nn::Linear(3, 4), fw::nn::ReLU(), fw::nn::Linear(4, 2));
  fw::Tensor y = net->forward(a);
  if (y.sizes() != fw::IntArrayRef({2, 2})) return 2;

  auto f = fw::compile([](const fw::Tensor& x) { return (x * 2 + 1).relu().sum(-1); });
  fw::Tensor c = f(a), e = (a * 2 + 1).relu().sum(-1);
  if (!fw::allclose(c, e)) return 3;
  auto cm = fw::compile(net);
  if (!fw::allclose(cm(a), y, 1e-5, 1e-6)) return 4;
  std::printf("%g\n", b.item<float>());
  return 0;
}
