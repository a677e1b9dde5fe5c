// libtorch's OptionalIntArrayRef: an optional list of dims (fw::linalg and fw::fft take it).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <vector>

#include "fw/array_ref.h"

namespace fw {

// An optional list of dims that also takes {0, 1}, a single int, a vector or std::nullopt
// (libtorch's OptionalIntArrayRef). It owns its dims.
class OptionalIntArrayRef {
 public:
  OptionalIntArrayRef() = default;
  OptionalIntArrayRef(std::nullopt_t) {}
  OptionalIntArrayRef(std::initializer_list<int64_t> d) : has_(true), dims_(d) {}
  OptionalIntArrayRef(IntArrayRef d) : has_(true), dims_(d.begin(), d.end()) {}
  OptionalIntArrayRef(const std::vector<int64_t>& d) : has_(true), dims_(d) {}
  OptionalIntArrayRef(int64_t d) : has_(true), dims_{d} {}
  OptionalIntArrayRef(int d) : has_(true), dims_{d} {}
  bool has_value() const { return has_; }
  explicit operator bool() const { return has_; }
  IntArrayRef value() const { return dims_; }
  IntArrayRef operator*() const { return dims_; }
  const std::vector<int64_t>* operator->() const { return &dims_; }

 private:
  bool has_ = false;
  std::vector<int64_t> dims_;
};

}  // namespace fw
