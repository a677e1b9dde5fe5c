// Devices: the CPU now; CUDA is reserved for the GPU work.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>

namespace fw {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr DeviceType kCPU = DeviceType::CPU;
constexpr DeviceType kCUDA = DeviceType::CUDA;

// A device type plus an index (-1 = current).
struct Device {
  DeviceType type_ = kCPU;
  int8_t index_ = -1;
  Device(DeviceType t = kCPU, int index = -1) : type_(t), index_(int8_t(index)) {}
  // Parses "cpu", "cuda", "cuda:1".
  Device(const std::string& s);
  DeviceType type() const { return type_; }
  int index() const { return index_; }
  bool has_index() const { return index_ != -1; }
  void set_index(int index) { index_ = int8_t(index); }
  bool is_cpu() const { return type_ == kCPU; }
  bool is_cuda() const { return type_ == kCUDA; }
  bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  bool operator!=(const Device& o) const { return !(*this == o); }
  std::string str() const;
};
std::ostream& operator<<(std::ostream& os, const Device& d);
// libtorch's c10::DeviceTypeName ("CPU", or "cpu" with lower_case) and its printing of a device
// type (`std::cout << device.type()` prints "cpu").
std::string DeviceTypeName(DeviceType t, bool lower_case = false);
std::ostream& operator<<(std::ostream& os, DeviceType t);

// libtorch's availability queries. fw's kernels run on the CPU (CUDA is reserved for the GPU
// work), so programs that pick `cuda::is_available() ? kCUDA : kCPU` run on the CPU.
namespace cuda {
inline bool is_available() { return false; }
inline int64_t device_count() { return 0; }
inline bool cudnn_is_available() { return false; }
// No CUDA generators exist in a build without CUDA devices: seeding them does nothing, as in
// libtorch without CUDA.
inline void manual_seed(uint64_t) {}
inline void manual_seed_all(uint64_t) {}
inline void synchronize(int64_t = -1) {}
}  // namespace cuda

}  // namespace fw
