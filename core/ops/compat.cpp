// libtorch API pieces composed from fw ops (so autograd and tracing see their primitives):
// triangles and diagonals, repeat_interleave, new_* factories, addcmul_/addcdiv_ methods,
// max/min with another tensor, clamp_min_/clamp_max_.
#include <algorithm>

#include "core/op.h"

namespace fw {
using namespace detail;

namespace {

// Keeps the elements of the last two dims with (col - row) on the kept side of `k`.
Tensor triangle(const Tensor& t, int64_t k, bool lower, const char* op) {
  FW_CHECK(t.dim() >= 2, "[", op, "] input tensor must have at least 2 dimensions, got ", t.dim());
  int64_t r = t.size(-2), c = t.size(-1);
  Tensor rows = fw::arange(r, kLong).unsqueeze(1), cols = fw::arange(c, kLong).unsqueeze(0);
  Tensor keep = lower ? (cols - rows).le(k) : (cols - rows).ge(k);
  return fw::where(keep, t, fw::zeros({}, t.dtype()));
}

}  // namespace

Tensor tril(const Tensor& t, int64_t k) { return triangle(t, k, true, "tril"); }
Tensor triu(const Tensor& t, int64_t k) { return triangle(t, k, false, "triu"); }

Tensor diagonal(const Tensor& t, int64_t offset, int64_t dim1, int64_t dim2) {
  FW_CHECK(t.dim() >= 2, "[diagonal] input must have at least 2 dimensions, got ", t.dim());
  int64_t d1 = wrap_dim(dim1, t.dim(), "diagonal"), d2 = wrap_dim(dim2, t.dim(), "diagonal");
  FW_CHECK(d1 != d2, "[diagonal] dimensions cannot be identical ", dim1, ", ", dim2);
  int64_t n = offset >= 0 ? std::min(t.size(d1), t.size(d2) - offset) : std::min(t.size(d1) + offset, t.size(d2));
  n = std::max<int64_t>(n, 0);
  int64_t start = t.storage_offset();
  if (n > 0) start += offset >= 0 ? offset * t.stride(d2) : -offset * t.stride(d1);
  DimVec sizes, strides;
  for (int64_t d = 0; d < t.dim(); d++)
    if (d != d1 && d != d2) sizes.push_back(t.size(d)), strides.push_back(t.stride(d));
  sizes.push_back(n);
  strides.push_back(t.stride(d1) + t.stride(d2));
  return t.as_strided(sizes, strides, start);
}

Tensor diag(const Tensor& t, int64_t k) {
  FW_CHECK(t.dim() == 1 || t.dim() == 2, "[diag] expects a 1-D or 2-D tensor, got ", t.dim(), "-D");
  if (t.dim() == 2) return fw::diagonal(t, k, 0, 1);
  // A square matrix of side n + |k| with t on diagonal k: t's values placed by a one-hot product,
  // which keeps the result differentiable in t.
  int64_t n = t.size(0), side = n + (k >= 0 ? k : -k);
  Tensor rows = fw::arange(side, kLong).unsqueeze(1), cols = fw::arange(side, kLong).unsqueeze(0);
  Tensor on = (cols - rows).eq(k);
  Tensor idx = (k >= 0 ? rows : cols).expand({side, side}).clamp(0, std::max<int64_t>(n - 1, 0));
  Tensor vals = n ? fw::index_select(t, 0, idx.reshape({-1})).reshape({side, side}) : fw::zeros({side, side}, t.dtype());
  return fw::where(on, vals, fw::zeros({}, t.dtype()));
}

Tensor trace(const Tensor& t) {
  FW_CHECK(t.dim() == 2, "[trace] expected a matrix, but got tensor with dim ", t.dim());
  return fw::diagonal(t).sum();
}

Tensor repeat_interleave(const Tensor& t, int64_t repeats, std::optional<int64_t> dim) {
  FW_CHECK(repeats >= 0, "[repeat_interleave] repeats can not be negative, got ", repeats);
  if (!dim) return repeat_interleave(t.reshape({-1}), repeats, 0);
  int64_t d = wrap_dim(*dim, std::max<int64_t>(t.dim(), 1), "repeat_interleave");
  Tensor x = t.dim() == 0 ? t.reshape({1}) : t;
  DimVec sizes(x.sizes());
  Tensor u = x.unsqueeze(d + 1);
  DimVec es(u.sizes());
  es[size_t(d + 1)] = repeats;
  sizes[size_t(d)] *= repeats;
  return u.expand(es).reshape(sizes);
}

Tensor Tensor::tril(int64_t k) const { return fw::tril(*this, k); }
Tensor Tensor::triu(int64_t k) const { return fw::triu(*this, k); }
Tensor Tensor::diagonal(int64_t offset, int64_t dim1, int64_t dim2) const {
  return fw::diagonal(*this, offset, dim1, dim2);
}
Tensor Tensor::diag(int64_t k) const { return fw::diag(*this, k); }
Tensor Tensor::trace() const { return fw::trace(*this); }
Tensor Tensor::repeat_interleave(int64_t repeats, std::optional<int64_t> dim) const {
  return fw::repeat_interleave(*this, repeats, dim);
}

Tensor Tensor::max(const Tensor& other) const { return fw::maximum(*this, other); }
Tensor Tensor::min(const Tensor& other) const { return fw::minimum(*this, other); }

Tensor& Tensor::clamp_min_(const Scalar& m) const { return clamp_(m, std::nullopt); }
Tensor& Tensor::clamp_max_(const Scalar& m) const { return clamp_(std::nullopt, m); }

Tensor Tensor::addcmul(const Tensor& a, const Tensor& b, const Scalar& v) const { return fw::addcmul(*this, a, b, v); }
Tensor Tensor::addcdiv(const Tensor& a, const Tensor& b, const Scalar& v) const { return fw::addcdiv(*this, a, b, v); }
Tensor& Tensor::addcmul_(const Tensor& a, const Tensor& b, const Scalar& v) const {
  OpAttrs at;
  at.f0 = v.toDouble();
  dispatch_into(OpId::addcmul, {*this, a, b}, at, *this);
  return mut_self();
}
Tensor& Tensor::addcdiv_(const Tensor& a, const Tensor& b, const Scalar& v) const {
  OpAttrs at;
  at.f0 = v.toDouble();
  dispatch_into(OpId::addcdiv, {*this, a, b}, at, *this);
  return mut_self();
}

namespace {
TensorOptions like(const Tensor& t, const TensorOptions& o) { return o.has_dtype() ? o : o.dtype(t.dtype()); }
}  // namespace
Tensor Tensor::new_empty(IntArrayRef size, const TensorOptions& o) const { return fw::empty(size, like(*this, o)); }
Tensor Tensor::new_zeros(IntArrayRef size, const TensorOptions& o) const { return fw::zeros(size, like(*this, o)); }
Tensor Tensor::new_empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& o) const {
  return fw::empty_strided(size, stride, like(*this, o));
}
Tensor Tensor::new_ones(IntArrayRef size, const TensorOptions& o) const { return fw::ones(size, like(*this, o)); }
Tensor Tensor::new_full(IntArrayRef size, const Scalar& v, const TensorOptions& o) const {
  return fw::full(size, v, like(*this, o));
}
bool Tensor::is_same_size(const Tensor& other) const { return sizes().equals(other.sizes()); }

}  // namespace fw
