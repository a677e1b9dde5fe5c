#include <fw/fw.h>

#include <iostream>

int main() {
  fw::Tensor a = fw::arange(6, fw::kFloat).view({2, 3});
  fw::Tensor b = (a * 2 + 1).sum();
  std::cout << b.item<float>() << "\n";
  return b.item<float>() == 36.0f ? 0 : 1;
}
