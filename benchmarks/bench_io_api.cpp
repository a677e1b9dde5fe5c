// Checkpoint I/O, one source for fw and libtorch (benchmarks/compare.sh with COMPARE_SRC):
//   P1 pickle_load of 1500 float tensors of 256 KiB (a state dict of many small records)
//   P2 pickle_load of one 96 MiB float tensor (one record split over the threads)
// Both archives are written by the framework under test with pickle_save (torch.save's zip
// format). fw checks every record's CRC-32 while loading.
#include "one_source.h"

int main() {
  T::manual_seed(0);
  std::vector<T::Tensor> many;
  for (int i = 0; i < 1500; i++) many.push_back(T::randn({64 * 1024}));
  std::vector<char> small_bytes = T::pickle_save(many);
  std::vector<char> big_bytes = T::pickle_save(T::randn({24 * 1024 * 1024}));
  double s = med([&] { T::pickle_load(small_bytes); });
  printf("P1_load_1500x256KiB %.3f ms\n", 1e3 * s);
  double b = med([&] { T::pickle_load(big_bytes); });
  printf("P2_load_1x96MiB %.3f ms\n", 1e3 * b);
  return 0;
}
