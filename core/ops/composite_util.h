// Small helpers of the composite ops (core/ops/extra*.cpp, special_fns.cpp, core/tensor.cpp).
#pragma once
#include <type_traits>
#include <vector>

#include "core/op.h"

namespace fw::detail {

// The tensor's values on the host, contiguous, as int64 or double.
template <class T>
std::vector<T> host_values(const Tensor& t) {
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, int64_t>, "host_values: int64_t or double");
  Tensor c = t.to(Device(kCPU), std::is_same_v<T, double> ? kDouble : kLong).contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

// A scalar operand as a 0-dim tensor of PyTorch's result dtype with `other` (a wrapped number):
// 0.8 with a float64 tensor stays double, with a float32 or integer one becomes float32.
inline Tensor wrapped_scalar(const Scalar& s, const Tensor& other) {
  return scalar_tensor(s, TensorOptions(result_type(std::vector<Tensor>{other}, &s)));
}

}  // namespace fw::detail
