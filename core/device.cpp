#include "fw/device.h"

#include "fw/error.h"

namespace fw {

Device::Device(const std::string& s) {
  std::string kind = s, idx;
  auto colon = s.find(':');
  if (colon != std::string::npos) { kind = s.substr(0, colon); idx = s.substr(colon + 1); }
  if (kind == "cpu") type_ = kCPU;
  else if (kind == "cuda") type_ = kCUDA;
  else detail::throw_error("[Device] expected a device type such as 'cpu' or 'cuda:0', got '", s, "'");
  index_ = -1;
  if (!idx.empty()) {
    FW_CHECK(idx.find_first_not_of("0123456789") == std::string::npos && idx.size() < 4,
             "[Device] invalid device index in '", s, "'");
    index_ = int8_t(std::stoi(idx));
  }
}

std::string Device::str() const {
  std::string s = type_ == kCPU ? "cpu" : "cuda";
  if (index_ >= 0) s += ":" + std::to_string(index_);
  return s;
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.str(); }

std::string DeviceTypeName(DeviceType t, bool lower_case) {
  if (t == kCPU) return lower_case ? "cpu" : "CPU";
  return lower_case ? "cuda" : "CUDA";
}
std::ostream& operator<<(std::ostream& os, DeviceType t) { return os << DeviceTypeName(t, true); }

namespace detail {
void assert_fail(const char* cond, const char* file, int line) {
  throw_error("[internal] fw invariant failed: ", cond, " at ", file, ":", line,
              " (this is a bug in fw; please report it)");
}
}  // namespace detail

}  // namespace fw
