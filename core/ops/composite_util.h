// Small helpers of the composite ops (core/ops/extra*.cpp, special_fns.cpp, core/tensor.cpp).
#pragma once
#include <cmath>
#include <functional>
#include <type_traits>
#include <vector>

#include "core/layout.h"
#include "core/op.h"
#include "fw/ops_extra.h"

namespace fw::detail {

// The permutation undoing perm.
inline std::vector<int64_t> inverse_perm(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); i++) inv[size_t(perm[i])] = int64_t(i);
  return inv;
}
inline int64_t format_rank(MemoryFormat f) { return f == MemoryFormat::ChannelsLast ? 4 : 5; }

// phys (row-major, its dims in `order`) viewed back in the logical dim order. Unless it requires
// grad, the result is a tensor of its own, not a view of phys, as a new libtorch tensor is.
Tensor permuted_back(const Tensor& phys, const std::vector<int64_t>& order);
// A new tensor of t's sizes laid out by o's memory format (Preserve when none is given), as the
// *_like factories make it: make(sizes, options) builds a row-major tensor; o's requires_grad is
// applied to the result.
Tensor make_like(const Tensor& t, const TensorOptions& o,
                 const std::function<Tensor(IntArrayRef, const TensorOptions&)>& make);

// The tensor's values on the host, contiguous, as int64 or double.
template <class T>
std::vector<T> host_values(const Tensor& t) {
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, int64_t>, "host_values: int64_t or double");
  Tensor c = t.to(Device(kCPU), std::is_same_v<T, double> ? kDouble : kLong).contiguous();
  const T* p = c.data_ptr<T>();
  return std::vector<T>(p, p + c.numel());
}

// The square root of a variance, differentiated as PyTorch's std: the gradient is 0 where the
// variance is 0 (sqrt's own rule gives inf there, and inf * 0 = NaN through var).
inline Tensor std_from_var(const Tensor& v) {
  if (!v.requires_grad()) return fw::sqrt(v);
  Tensor zero = v == 0;
  return fw::where(zero, fw::zeros_like(v), fw::sqrt(fw::where(zero, fw::ones_like(v), v)));
}

// A full reduction's result r (median, nanmedian) given PyTorch's gradient: shared evenly by the
// entries of the flat input equal to it (amax over them is r and distributes so), instead of all
// to one index. A NaN result keeps r's own gradient.
inline Tensor evenly_distributed(const Tensor& flat, const Tensor& r) {
  if (!r.requires_grad()) return r;
  Tensor m = r.detach();
  if (std::isnan(m.to(kDouble).item<double>())) return r;
  return fw::amax(flat.masked_select(flat == m));
}

// A scalar operand as a 0-dim tensor of PyTorch's result dtype with `other` (a wrapped number):
// 0.8 with a float64 tensor stays double, with a float32 or integer one becomes float32.
inline Tensor wrapped_scalar(const Scalar& s, const Tensor& other) {
  return scalar_tensor(s, TensorOptions(result_type(std::vector<Tensor>{other}, &s)));
}

// Dropout of whole feature maps (dropout2d/3d, feature_dropout): one Bernoulli(1 - p) draw per
// entry of x's first `kept` dims, broadcast over the rest and scaled by 1 / (1 - p); all zeros when
// p is 1. On x's device, in x's dtype.
Tensor feature_dropout_mask(const Tensor& x, int64_t kept, double p);

// The out-of-place result r written into self, as libtorch's in-place ops: the result dtype must
// cast to self's (no float into an integer tensor, nothing but bool into bool).
inline Tensor& write_inplace(Tensor& self, const Tensor& r, const char* op) {
  FW_CHECK(fw::can_cast(r.dtype(), self.dtype()), "[", op, "] result type ", dtype_str(r.dtype()),
           " can't be cast to the desired output type ", dtype_str(self.dtype()));
  return self.copy_(r);
}

}  // namespace fw::detail
