// Helper for the checkpoint kill test (tests/test_serialize.cpp): saves versioned checkpoints to
// argv[1] in a loop until it is killed. Each checkpoint holds "version" (0-dim int64), "data"
// (float32, argv[2] elements) and "tail" (int32 [1000]) all equal to the version, plus the version
// in the metadata. It starts after the version already in the file (which must load and be
// consistent, else exit 3), and prints "ready" once it is about to write.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fw/fw.h"
#include "fw/serialize.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s PATH NUMEL\n", argv[0]);
    return 2;
  }
  std::string path = argv[1];
  int64_t numel = std::atoll(argv[2]);
  int64_t version = 0;
  if (std::filesystem::exists(path)) {
    try {
      auto f = fw::load_with_metadata(path);
      version = f.tensors.at("version").item<int64_t>();
      if (f.metadata.at("version") != std::to_string(version)) return 3;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "existing checkpoint does not load: %s\n", e.what());
      return 3;
    }
  }
  auto data = fw::empty({numel}, fw::kFloat);
  auto tail = fw::empty({1000}, fw::kInt);
  std::printf("ready\n");
  std::fflush(stdout);
  while (true) {
    version++;
    data.fill_(double(version));
    tail.fill_(version);
    fw::save({{"version", fw::scalar_tensor(version, fw::kLong)}, {"data", data}, {"tail", tail}}, path,
             {{"version", std::to_string(version)}});
  }
}
