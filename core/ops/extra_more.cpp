// More of libtorch's tensor functions and methods (include/fw/ops_extra.h, "more of libtorch's
// tensor functions"; the Tensor methods after "and still more" in include/fw/tensor.h): mode,
// renorm, frexp, nextafter, shifts, tensor_split and friends, movedim, index_copy/put, rounding
// to decimals, in-place forms of out-of-place ops and in-place metadata changes.
//
// As in core/ops/extra.cpp, the differentiable ones are composites of differentiable ops (or a
// host kernel that picks indices, followed by a gather), so autograd and fw::compile only see
// existing primitives. In-place forms write the out-of-place result with copy_, after checking
// that its dtype casts to this tensor's under PyTorch's rules.
#include <iostream>
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <sstream>
#include <cstdio>
#include <limits>
#include <numeric>

#include "core/op.h"
#include "core/ops/composite_util.h"
#include "fw/autograd_function.h"
#include "fw/linalg.h"
#include "fw/linalg_more.h"
#include "fw/ops_extra.h"

namespace fw {
using namespace detail;

// ---- mode

namespace {
// For each row (contiguous, length n) the index of the mode: values sorted stably, the longest
// run wins, the first (smallest) run among equally long ones, and within it the last index.
template <class T>
void mode_rows(const T* x, int64_t rows, int64_t n, int64_t* out) {
  std::vector<std::pair<T, int64_t>> e(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; r++) {
    for (int64_t i = 0; i < n; i++) e[size_t(i)] = {x[r * n + i], i};
    std::stable_sort(e.begin(), e.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    int64_t best = 0, best_freq = 0, freq = 0;
    for (int64_t i = 0; i < n; i++) {
      freq++;
      if (i == n - 1 || e[size_t(i)].first != e[size_t(i + 1)].first) {
        if (freq > best_freq) best_freq = freq, best = e[size_t(i)].second;
        freq = 0;
      }
    }
    out[r] = best;
  }
}
}  // namespace

std::tuple<Tensor, Tensor> mode(const Tensor& t, int64_t dim, bool keepdim) {
  const int64_t d = wrap_dim(dim, t.dim(), "mode");
  Tensor x = t.dim() == 0 ? t.reshape({1}) : t;
  FW_CHECK(!x.is_complex(), "[mode] not implemented for dtype ", dtype_str(x.dtype()));
  FW_CHECK(x.size(d) > 0, "[mode] Expected reduction dim ", d, " to have non-zero size.");
  const int64_t n = x.size(d);
  Tensor moved = x.movedim(d, -1).to(Device(kCPU)).contiguous();
  const int64_t rows = moved.numel() / n;
  DimVec isz(moved.sizes());
  isz.back() = 1;
  Tensor index = empty(isz, kLong);
  if (x.is_floating_point()) {
    Tensor v = moved.to(kDouble).contiguous();
    mode_rows(v.data_ptr<double>(), rows, n, index.data_ptr<int64_t>());
  } else {
    Tensor v = moved.to(kLong).contiguous();
    mode_rows(v.data_ptr<int64_t>(), rows, n, index.data_ptr<int64_t>());
  }
  index = index.movedim(-1, d).to(x.device());
  Tensor values = x.gather(d, index);
  if (!keepdim || t.dim() == 0) values = values.squeeze(d), index = index.squeeze(d);
  if (t.dim() == 0) values = values.reshape({}), index = index.reshape({});
  return {values, index};
}

// ---- norms

Tensor dist(const Tensor& a, const Tensor& b, const Scalar& p) { return fw::norm(a - b, p); }

Tensor renorm(const Tensor& t, const Scalar& p, int64_t dim, const Scalar& maxnorm) {
  FW_CHECK(!p.isComplex() && !maxnorm.isComplex(), "[renorm] p and maxnorm must be real numbers");
  FW_CHECK(p.toDouble() > 0, "[renorm] non-positive norm not supported, got p = ", p.toDouble());
  FW_CHECK(maxnorm.toDouble() >= 0, "[renorm] expected maxnorm to be >= 0 but got ", maxnorm.toDouble());
  FW_CHECK(t.is_floating_point() || t.is_complex(), "[renorm] expected a floating point tensor, got ",
           dtype_str(t.dtype()));
  FW_CHECK(t.dim() > 1, "[renorm] input needs at least 2 dimensions, got ", t.dim(), " dimensions");
  const int64_t d = wrap_dim(dim, t.dim(), "renorm");
  DimVec reduce;
  for (int64_t i = 0; i < t.dim(); i++)
    if (i != d) reduce.push_back(i);
  Tensor norm = linalg::vector_norm(t, p, IntArrayRef(reduce), true);
  const double mx = maxnorm.toDouble();
  Tensor factor = where(norm > mx, mx / (norm + 1e-7), ones_like(norm));
  return t * factor;
}

// ---- frexp and nextafter

namespace {
template <class T>
void frexp_loop(const T* x, int64_t n, T* m, int32_t* e) {
  for (int64_t i = 0; i < n; i++) {
    int ex = 0;
    m[i] = std::frexp(x[i], &ex);
    e[i] = std::isfinite(x[i]) ? int32_t(ex) : 0;
  }
}

// mantissa = x / 2^exponent; its gradient is grad / 2^exponent (exponent: a constant input).
struct FrexpFn : autograd::Function<FrexpFn> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x, Tensor mantissa, Tensor exponent) {
    ctx->save_for_backward({exponent});
    (void)x;
    return mantissa;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    Tensor e = ctx->get_saved_variables()[0];
    return {g[0] * fw::exp2(-e.to(g[0].dtype())), Tensor(), Tensor()};
  }
};
}  // namespace

std::tuple<Tensor, Tensor> frexp(const Tensor& t) {
  FW_CHECK(t.is_floating_point(), "[frexp] torch.frexp() only supports floating-point dtypes, got ",
           dtype_str(t.dtype()));
  const ScalarType work = t.dtype() == kDouble ? kDouble : kFloat;
  Tensor x = t.detach().to(Device(kCPU), work).contiguous();
  Tensor m = empty(x.sizes(), work), e = empty(x.sizes(), kInt);
  if (work == kDouble) frexp_loop(x.data_ptr<double>(), x.numel(), m.data_ptr<double>(), e.data_ptr<int32_t>());
  else frexp_loop(x.data_ptr<float>(), x.numel(), m.data_ptr<float>(), e.data_ptr<int32_t>());
  m = m.to(t.device(), t.dtype());
  e = e.to(t.device());
  if (t.requires_grad() && is_grad_enabled()) m = FrexpFn::apply(t, m, e);
  return {m, e};
}

Tensor nextafter(const Tensor& a, const Tensor& b) {
  const ScalarType rt = promote_types(a.dtype(), b.dtype());
  FW_CHECK(rt == kFloat || rt == kDouble, "[nextafter] not implemented for dtype ", dtype_str(rt),
           " (expects float32 or float64 tensors)");
  auto bt = broadcast_tensors({a.detach(), b.detach()});
  Tensor x = bt[0].to(Device(kCPU), rt).contiguous(), y = bt[1].to(Device(kCPU), rt).contiguous();
  Tensor out = empty(x.sizes(), rt);
  const int64_t n = x.numel();
  if (rt == kDouble) {
    const double *px = x.data_ptr<double>(), *py = y.data_ptr<double>();
    double* po = out.data_ptr<double>();
    for (int64_t i = 0; i < n; i++) po[i] = std::nextafter(px[i], py[i]);
  } else {
    const float *px = x.data_ptr<float>(), *py = y.data_ptr<float>();
    float* po = out.data_ptr<float>();
    for (int64_t i = 0; i < n; i++) po[i] = std::nextafter(px[i], py[i]);
  }
  return out.to(a.device());
}

Tensor isreal(const Tensor& t) {
  if (t.is_complex()) return fw::imag(t) == 0;
  return ones(t.sizes(), TensorOptions(kBool).device(t.device()));
}

Tensor positive(const Tensor& t) {
  FW_CHECK(t.dtype() != kBool, "[positive] The `+` operator, on a bool tensor is not supported.");
  return t;
}

// ---- shifts

namespace {
Tensor shift(const Tensor& a, const Tensor& b, bool left) {
  const char* op = left ? "bitwise_left_shift" : "bitwise_right_shift";
  // The result type decides, as in PyTorch: a bool tensor shifted by an integer scalar is int64.
  const ScalarType rt = result_type(a, b);
  FW_CHECK(is_integral(rt, false), "[", op, "] expects integer operands, got ", dtype_str(a.dtype()), " and ",
           dtype_str(b.dtype()), " (result type ", dtype_str(rt), ")");
  const int64_t width = int64_t(element_size(rt)) * 8;
  auto bt = broadcast_tensors({a, b});
  auto va = host_values<int64_t>(bt[0]), vb = host_values<int64_t>(bt[1]);
  std::vector<int64_t> r(va.size());
  for (size_t i = 0; i < va.size(); i++) {
    const int64_t x = va[i], s = vb[i];
    if (s < 0 || s >= width) r[i] = left ? 0 : (x < 0 ? -1 : 0);
    else r[i] = left ? int64_t(uint64_t(x) << s) : (x >> s);
  }
  Tensor out = empty(bt[0].sizes(), kLong);
  std::copy(r.begin(), r.end(), out.data_ptr<int64_t>());
  return out.to(a.device(), rt);  // narrowing keeps the low bits, as a shift in the type would
}
Tensor scalar_like_operand(const Scalar& s, const char* op) {
  FW_CHECK(s.isIntegral(false), "[", op, "] expects an integer shift, got a non-integer scalar");
  return scalar_tensor(s, kLong);
}
}  // namespace

Tensor bitwise_left_shift(const Tensor& a, const Tensor& b) { return shift(a, b, true); }
Tensor bitwise_right_shift(const Tensor& a, const Tensor& b) { return shift(a, b, false); }
Tensor bitwise_left_shift(const Tensor& a, const Scalar& b) {
  return shift(a, scalar_like_operand(b, "bitwise_left_shift"), true);
}
Tensor bitwise_right_shift(const Tensor& a, const Scalar& b) {
  return shift(a, scalar_like_operand(b, "bitwise_right_shift"), false);
}
Tensor bitwise_left_shift(const Scalar& a, const Tensor& b) {
  return shift(scalar_like_operand(a, "bitwise_left_shift"), b, true);
}
Tensor bitwise_right_shift(const Scalar& a, const Tensor& b) {
  return shift(scalar_like_operand(a, "bitwise_right_shift"), b, false);
}
Tensor __lshift__(const Tensor& a, const Tensor& b) { return bitwise_left_shift(a, b); }
Tensor __lshift__(const Tensor& a, const Scalar& b) { return bitwise_left_shift(a, b); }
Tensor __rshift__(const Tensor& a, const Tensor& b) { return bitwise_right_shift(a, b); }
Tensor __rshift__(const Tensor& a, const Scalar& b) { return bitwise_right_shift(a, b); }
Tensor __and__(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor __and__(const Tensor& a, const Scalar& b) { return bitwise_and(a, b); }
Tensor __or__(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor __or__(const Tensor& a, const Scalar& b) { return bitwise_or(a, b); }
Tensor __xor__(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
Tensor __xor__(const Tensor& a, const Scalar& b) { return bitwise_xor(a, b); }

Tensor Tensor::bitwise_left_shift(const Scalar& o) const { return fw::bitwise_left_shift(*this, o); }
Tensor Tensor::bitwise_right_shift(const Scalar& o) const { return fw::bitwise_right_shift(*this, o); }
Tensor Tensor::__lshift__(const Tensor& o) const { return fw::bitwise_left_shift(*this, o); }
Tensor Tensor::__lshift__(const Scalar& o) const { return fw::bitwise_left_shift(*this, o); }
Tensor Tensor::__rshift__(const Tensor& o) const { return fw::bitwise_right_shift(*this, o); }
Tensor Tensor::__rshift__(const Scalar& o) const { return fw::bitwise_right_shift(*this, o); }

// In place: the out-of-place result written back (write_inplace refuses a type that does not cast).
#define FW_INPLACE_BITWISE(name, fn)                                                                     \
  Tensor& Tensor::name(const Tensor& o) const { return write_inplace(mut_self(), fw::fn(*this, o), #name); }       \
  Tensor& Tensor::name(const Scalar& o) const { return write_inplace(mut_self(), fw::fn(*this, o), #name); }
FW_INPLACE_BITWISE(bitwise_and_, bitwise_and)
FW_INPLACE_BITWISE(bitwise_or_, bitwise_or)
FW_INPLACE_BITWISE(bitwise_xor_, bitwise_xor)
FW_INPLACE_BITWISE(bitwise_left_shift_, bitwise_left_shift)
FW_INPLACE_BITWISE(bitwise_right_shift_, bitwise_right_shift)
FW_INPLACE_BITWISE(__ilshift__, bitwise_left_shift)
FW_INPLACE_BITWISE(__irshift__, bitwise_right_shift)
#undef FW_INPLACE_BITWISE
Tensor& Tensor::bitwise_not_() const { return write_inplace(mut_self(), fw::bitwise_not(*this), "bitwise_not_"); }

// ---- splitting

std::vector<Tensor> tensor_split(const Tensor& t, int64_t sections, int64_t dim) {
  FW_CHECK(t.dim() > 0, "[tensor_split] expected at least a 1-dimensional tensor, but got a tensor with ", t.dim(),
           " dims");
  FW_CHECK(sections > 0, "[tensor_split] number of sections must be larger than 0, got ", sections);
  const int64_t d = wrap_dim(dim, t.dim(), "tensor_split");
  const int64_t n = t.size(d), base = n / sections, extra = n % sections;
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t i = 0; i < sections; i++) {
    const int64_t len = base + (i < extra ? 1 : 0);
    out.push_back(t.narrow(d, start, len));
    start += len;
  }
  return out;
}

std::vector<Tensor> tensor_split(const Tensor& t, IntArrayRef indices, int64_t dim) {
  FW_CHECK(t.dim() > 0, "[tensor_split] expected at least a 1-dimensional tensor, but got a tensor with ", t.dim(),
           " dims");
  const int64_t d = wrap_dim(dim, t.dim(), "tensor_split");
  const int64_t n = t.size(d);
  // Python slice bounds: negative counts from the end, clamped to [0, n], empty when reversed.
  auto bound = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t idx : indices) {
    const int64_t s = bound(start), e = std::max(s, bound(idx));
    out.push_back(t.narrow(d, s, e - s));
    start = idx;
  }
  const int64_t s = bound(start);
  out.push_back(t.narrow(d, s, n - s));
  return out;
}

std::vector<Tensor> tensor_split(const Tensor& t, const Tensor& tios, int64_t dim) {
  FW_CHECK(tios.dtype() == kLong, "[tensor_split] expected tensor_indices_or_sections to have dtype of long, but got ",
           dtype_str(tios.dtype()));
  FW_CHECK(tios.dim() <= 1, "[tensor_split] expected tensor_indices_or_sections to be a zero-dimensional or "
           "one-dimensional tensor, but got a tensor with ", tios.dim(), " dims");
  if (tios.dim() == 0) return tensor_split(t, tios.item<int64_t>(), dim);
  auto idx = host_values<int64_t>(tios);
  return tensor_split(t, IntArrayRef(idx), dim);
}

namespace {
int64_t split_dim(const Tensor& t, const char* op, int64_t min_dims, int64_t dim) {
  FW_CHECK(t.dim() >= min_dims, "[", op, "] torch.", op, " requires a tensor with at least ", min_dims,
           " dimension", min_dims > 1 ? "s" : "", ", but got a tensor with ", t.dim(), " dimensions!");
  return dim;
}
std::vector<Tensor> split_even(const Tensor& t, const char* op, int64_t dim, int64_t sections) {
  FW_CHECK(sections != 0 && t.size(dim) % sections == 0, "[", op, "] torch.", op,
           " attempted to split along dimension ", dim, ", but the size of the dimension ", t.size(dim),
           " is not divisible by the split_size ", sections, "!");
  return tensor_split(t, sections, dim);
}
}  // namespace

std::vector<Tensor> hsplit(const Tensor& t, int64_t sections) {
  const int64_t d = split_dim(t, "hsplit", 1, t.dim() == 1 ? 0 : 1);
  return split_even(t, "hsplit", d, sections);
}
std::vector<Tensor> hsplit(const Tensor& t, IntArrayRef indices) {
  return tensor_split(t, indices, split_dim(t, "hsplit", 1, t.dim() == 1 ? 0 : 1));
}
std::vector<Tensor> vsplit(const Tensor& t, int64_t sections) {
  return split_even(t, "vsplit", split_dim(t, "vsplit", 2, 0), sections);
}
std::vector<Tensor> vsplit(const Tensor& t, IntArrayRef indices) {
  return tensor_split(t, indices, split_dim(t, "vsplit", 2, 0));
}
std::vector<Tensor> dsplit(const Tensor& t, int64_t sections) {
  return split_even(t, "dsplit", split_dim(t, "dsplit", 3, 2), sections);
}
std::vector<Tensor> dsplit(const Tensor& t, IntArrayRef indices) {
  return tensor_split(t, indices, split_dim(t, "dsplit", 3, 2));
}

// ---- moving dims

Tensor movedim(const Tensor& t, IntArrayRef source, IntArrayRef destination) {
  FW_CHECK(source.size() == destination.size(), "[movedim] Invalid source or destination dims: source (",
           source.size(), " dims) should contain the same number of dims as destination (", destination.size(),
           " dims)");
  const int64_t nd = t.dim();
  DimVec order(size_t(std::max<int64_t>(nd, 0)), -1);
  std::vector<char> src_used(size_t(std::max<int64_t>(nd, 1)), 0), dst_used(src_used);
  for (size_t i = 0; i < source.size(); i++) {
    const int64_t s = wrap_dim(source[i], nd, "movedim"), d = wrap_dim(destination[i], nd, "movedim");
    FW_CHECK(!src_used[size_t(s)], "[movedim] repeated dim in `source` (", source[i], ")");
    FW_CHECK(!dst_used[size_t(d)], "[movedim] repeated dim in `destination` (", destination[i], ")");
    src_used[size_t(s)] = dst_used[size_t(d)] = 1;
    if (nd > 0) order[size_t(d)] = s;
  }
  if (nd == 0) return t.view(IntArrayRef());
  int64_t next = 0;
  for (auto& o : order) {
    if (o >= 0) continue;
    while (src_used[size_t(next)]) next++;
    o = next++;
  }
  return t.permute(order);
}
Tensor movedim(const Tensor& t, int64_t source, int64_t destination) {
  return movedim(t, IntArrayRef(&source, 1), IntArrayRef(&destination, 1));
}
Tensor moveaxis(const Tensor& t, IntArrayRef source, IntArrayRef destination) { return movedim(t, source, destination); }
Tensor moveaxis(const Tensor& t, int64_t source, int64_t destination) { return movedim(t, source, destination); }
Tensor swapaxes(const Tensor& t, int64_t d0, int64_t d1) { return t.transpose(d0, d1); }
Tensor swapdims(const Tensor& t, int64_t d0, int64_t d1) { return t.transpose(d0, d1); }

// ---- copying into positions

Tensor index_copy(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source) {
  FW_CHECK(index.dtype() == kLong, "[index_copy] Expected a long tensor for index, but got ", dtype_str(index.dtype()));
  FW_CHECK(index.dim() <= 1, "[index_copy] Index should have dimension 1 or 0 (got ", index.dim(), ")");
  FW_CHECK(source.dtype() == t.dtype(), "[index_copy] self (", dtype_str(t.dtype()), ") and source (",
           dtype_str(source.dtype()), ") must have the same scalar type");
  const int64_t d = wrap_dim(dim, t.dim(), "index_copy");
  Tensor src = source.dim() == 0 ? source.reshape({1}) : source;
  Tensor self = t.dim() == 0 ? t.reshape({1}) : t;
  FW_CHECK(src.dim() == self.dim(), "[index_copy] When source and destination are not scalars, their "
           "dimensionality must match. Source dimensionality (", source.dim(), "), destination dimensionality (",
           t.dim(), ")");
  FW_CHECK(src.size(d) == index.numel(), "[index_copy] Number of indices (", index.numel(),
           ") should be equal to source.size(dim) (", src.size(d), ")");
  for (int64_t i = 0; i < self.dim(); i++)
    FW_CHECK(i == d || src.size(i) == self.size(i), "[index_copy] Source/destination tensor must have same slice "
             "shapes. Destination slice shape: ", self.sizes(), " at dimension ", d, " and source slice shape: ",
             src.sizes(), " at dimension ", d);
  // Checked here, not left to scatter: libtorch raises IndexError naming index_copy.
  const int64_t n = self.size(d);
  if (index.numel() > 0) {
    const int64_t lo = index.min().item<int64_t>(), hi = index.max().item<int64_t>();
    FW_CHECK_INDEX(lo >= 0 && hi < n, "[index_copy] index ", lo < 0 ? lo : hi, " is out of bounds for dimension ", d,
                   " with size ", n);
  }
  // scatter along d with the index repeated across the slice: exact copies, scatter's gradients.
  DimVec ish(size_t(src.dim()), 1);
  ish[size_t(d)] = index.numel();
  Tensor idx = index.reshape(ish).expand(src.sizes());
  Tensor r = self.scatter(d, idx, src);
  return t.dim() == 0 ? r.reshape({}) : r;
}

Tensor put(const Tensor& t, const Tensor& index, const Tensor& source, bool accumulate) {
  FW_CHECK(index.dtype() == kLong, "[put] Expected a long tensor for index, but got ", dtype_str(index.dtype()));
  FW_CHECK(source.dtype() == t.dtype(), "[put] self (", dtype_str(t.dtype()), ") and source (",
           dtype_str(source.dtype()), ") must have the same scalar type");
  FW_CHECK(index.numel() == source.numel(), "[put] Expected source and index to have the same number of elements, "
           "but got source.numel() = ", source.numel(), ", index.numel() = ", index.numel());
  const int64_t n = t.numel();
  Tensor idx = index.reshape({-1});
  if (idx.numel() > 0) {
    const int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
    FW_CHECK_INDEX(lo >= -n && hi < n, "[put] index ", lo < -n ? lo : hi, " is out of bounds for a tensor of ", n,
             " elements");
  }
  idx = where(idx < 0, idx + n, idx);
  Tensor flat = t.reshape({-1}), src = source.reshape({-1});
  Tensor r = accumulate ? flat.index_add(0, idx, src) : flat.scatter(0, idx, src);
  return r.reshape(t.sizes());
}

Tensor addbmm(const Tensor& t, const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) {
  FW_CHECK(b1.dim() == 3 && b2.dim() == 3, "[addbmm] batch1 must be a 3D tensor, batch2 must be a 3D tensor, got ",
           b1.dim(), "-D and ", b2.dim(), "-D");
  Tensor prod = fw::bmm(b1, b2).sum({0});
  const bool unit_alpha = !alpha.isComplex() && alpha.toDouble() == 1;
  Tensor scaled = unit_alpha ? prod : prod * alpha;
  // beta 0 ignores t (NaN included), as libtorch.
  if (!beta.isComplex() && beta.toDouble() == 0) return scaled + fw::zeros_like(t);
  return t * beta + scaled;
}

Tensor count_nonzero(const Tensor& t, IntArrayRef dims) {
  if (dims.empty()) return (t != 0).sum(kLong);
  return (t != 0).sum(dims, false, kLong);
}

Tensor round(const Tensor& t, int64_t decimals) {
  if (decimals == 0) return fw::round(t);
  FW_CHECK(t.is_floating_point(), "[round] rounding to decimals is not implemented for dtype ", dtype_str(t.dtype()));
  const double p = std::pow(10.0, double(std::abs(decimals)));
  return decimals > 0 ? fw::round(t * p) / p : fw::round(t / p) * p;
}

std::tuple<Tensor, Tensor> var_mean(const Tensor& t) { return var_mean(t, IntArrayRef{}, true, false); }
std::tuple<Tensor, Tensor> std_mean(const Tensor& t) { return std_mean(t, IntArrayRef{}, true, false); }

Tensor divide(const Tensor& a, const Tensor& b, std::optional<std::string> rounding_mode) {
  return fw::div(a, b, std::move(rounding_mode));
}
Tensor divide(const Tensor& a, const Scalar& b, std::optional<std::string> rounding_mode) {
  return fw::div(a, b, std::move(rounding_mode));
}

// ---- creation and threads

Tensor randint_like(const Tensor& t, int64_t high, const TensorOptions& options) {
  return randint_like(t, 0, high, options);
}
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, const TensorOptions& options) {
  return make_like(t, options.requires_grad(false), [&](IntArrayRef s, const TensorOptions& r) {
    return randint(low, high, s, TensorOptions(kLong)).to(r.dtype());
  });
}

Tensor range(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& options) {
  const double s = start.toDouble(), e = end.toDouble(), st = step.toDouble();
  FW_CHECK(st != 0, "[range] step must be nonzero");
  FW_CHECK(std::isfinite(s) && std::isfinite(e), "[range] unsupported range: ", s, " -> ", e);
  FW_CHECK((st > 0 && e >= s) || (st < 0 && e <= s), "[range] upper bound and larger bound inconsistent with step sign");
  const int64_t n = int64_t(std::floor((e - s) / st)) + 1;
  TensorOptions o = options;
  if (!o.has_dtype()) o = o.dtype(get_default_dtype());
  return (arange(n, TensorOptions(kDouble)) * st + s).to(o.dtype());
}

namespace {
std::atomic<int> g_interop_threads{1};
}
void set_num_interop_threads(int n) {
  FW_CHECK(n > 0, "[set_num_interop_threads] Expected positive number of threads, got ", n);
  g_interop_threads = n;
}
int get_num_interop_threads() { return g_interop_threads; }

// ---- Tensor methods

bool Tensor::is_signed() const {
  const ScalarType t = dtype();
  return t != kUInt8 && t != kBool;
}
bool Tensor::is_nonzero() const {
  FW_CHECK(numel() == 1, "[is_nonzero] Boolean value of Tensor with ", numel() == 0 ? "no values" : "more than one value",
           " is ambiguous");
  if (is_complex()) return fw::abs(*this).item<double>() != 0;
  return item<double>() != 0;
}
bool Tensor::allclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  return fw::allclose(*this, o, rtol, atol, equal_nan);
}
Tensor Tensor::isclose(const Tensor& o, double rtol, double atol, bool equal_nan) const {
  return fw::isclose(*this, o, rtol, atol, equal_nan);
}
bool Tensor::equal(const Tensor& o) const { return fw::equal(*this, o); }
Tensor Tensor::T() const {
  DimVec p;
  for (int64_t i = dim() - 1; i >= 0; i--) p.push_back(i);
  return permute(p);
}
Tensor Tensor::H() const {
  FW_CHECK(dim() == 2 || dim() == 0, "[H] tensor.H is only supported on matrices (2-D tensors). Got ", dim(),
           "-D tensor.");
  return dim() == 0 ? conj() : t().conj();
}
Tensor Tensor::mH() const {
  FW_CHECK(dim() >= 2, "[mH] tensor.mH is only supported on matrices or batches of matrices. Got ", dim(),
           "-D tensor.");
  return transpose(-2, -1).conj();
}
Tensor Tensor::mv(const Tensor& vec) const { return fw::mv(*this, vec); }
Tensor Tensor::addmm(const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) const {
  return fw::addmm(*this, m1, m2, beta, alpha);
}
Tensor& Tensor::addmm_(const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) const {
  return write_inplace(mut_self(), fw::addmm(*this, m1, m2, beta, alpha), "addmm_");
}
Tensor Tensor::baddbmm(const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) const {
  return fw::baddbmm(*this, b1, b2, beta, alpha);
}
Tensor& Tensor::baddbmm_(const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) const {
  return write_inplace(mut_self(), fw::baddbmm(*this, b1, b2, beta, alpha), "baddbmm_");
}
Tensor Tensor::addbmm(const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) const {
  return fw::addbmm(*this, b1, b2, beta, alpha);
}
Tensor& Tensor::addbmm_(const Tensor& b1, const Tensor& b2, const Scalar& beta, const Scalar& alpha) const {
  return write_inplace(mut_self(), fw::addbmm(*this, b1, b2, beta, alpha), "addbmm_");
}
Tensor& Tensor::addmv_(const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) const {
  return write_inplace(mut_self(), fw::addmv(*this, mat, vec, beta, alpha), "addmv_");
}
Tensor& Tensor::addr_(const Tensor& v1, const Tensor& v2, const Scalar& beta, const Scalar& alpha) const {
  return write_inplace(mut_self(), fw::addr(*this, v1, v2, beta, alpha), "addr_");
}
Tensor& Tensor::conj_physical_() const { return write_inplace(mut_self(), fw::conj(*this), "conj_physical_"); }
Tensor Tensor::addmv(const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) const {
  return fw::addmv(*this, mat, vec, beta, alpha);
}
Tensor Tensor::addr(const Tensor& v1, const Tensor& v2, const Scalar& beta, const Scalar& alpha) const {
  return fw::addr(*this, v1, v2, beta, alpha);
}
Tensor Tensor::count_nonzero(std::optional<int64_t> dim) const { return fw::count_nonzero(*this, dim); }
Tensor Tensor::count_nonzero(IntArrayRef dims) const { return fw::count_nonzero(*this, dims); }
Tensor& Tensor::cumsum_(int64_t dim, std::optional<ScalarType> dtype) const {
  return write_inplace(mut_self(), cumsum(dim, dtype), "cumsum_");
}
Tensor& Tensor::cumprod_(int64_t dim, std::optional<ScalarType> dtype) const {
  return write_inplace(mut_self(), cumprod(dim, dtype), "cumprod_");
}
Tensor& Tensor::fill_diagonal_(const Scalar& value, bool wrap) const {
  const int64_t nd = dim();
  FW_CHECK(nd >= 2, "[fill_diagonal_] dimensions must larger than 1, got ", nd);
  const int64_t h = size(0), w = size(1);
  if (nd > 2)
    for (int64_t i = 1; i < nd; i++)
      FW_CHECK(size(i) == h, "[fill_diagonal_] all dimensions of input must be of equal length, got ", sizes());
  int64_t stride = 0;
  for (int64_t i = 0; i < nd; i++) stride += this->stride(i);
  const int64_t n = std::min(h, w);
  as_strided({n}, {stride}, storage_offset()).fill_(value);
  if (wrap && nd == 2 && h > w + 1) {
    // NumPy's wrap: the diagonal restarts every w + 1 rows (counted in elements of a row-major matrix).
    const int64_t step = w + 1, wrap_n = (numel() + step - 1) / step - n;
    as_strided({wrap_n}, {stride}, storage_offset() + this->stride(0) * (w + 1)).fill_(value);
  }
  return mut_self();
}
Tensor& Tensor::fmod_(const Tensor& o) const { return write_inplace(mut_self(), fmod(o), "fmod_"); }
Tensor& Tensor::fmod_(const Scalar& o) const { return write_inplace(mut_self(), fmod(o), "fmod_"); }
Tensor& Tensor::remainder_(const Tensor& o) const { return write_inplace(mut_self(), remainder(o), "remainder_"); }
Tensor& Tensor::remainder_(const Scalar& o) const { return write_inplace(mut_self(), remainder(o), "remainder_"); }
Tensor& Tensor::div_(const Tensor& o, std::optional<std::string> mode) const {
  return write_inplace(mut_self(), fw::div(*this, o, std::move(mode)), "div_");
}
Tensor& Tensor::div_(const Scalar& o, std::optional<std::string> mode) const {
  return write_inplace(mut_self(), fw::div(*this, o, std::move(mode)), "div_");
}
Tensor Tensor::div(const Scalar& o, std::optional<std::string> mode) const { return fw::div(*this, o, std::move(mode)); }
Tensor Tensor::round(int64_t decimals) const { return fw::round(*this, decimals); }
Tensor& Tensor::round_(int64_t decimals) const { return write_inplace(mut_self(), fw::round(*this, decimals), "round_"); }
Tensor Tensor::index_copy(int64_t dim, const Tensor& index, const Tensor& source) const {
  return fw::index_copy(*this, dim, index, source);
}
Tensor& Tensor::index_copy_(int64_t dim, const Tensor& index, const Tensor& source) const {
  return write_inplace(mut_self(), fw::index_copy(*this, dim, index, source), "index_copy_");
}
Tensor& Tensor::index_fill_(int64_t dim, const Tensor& index, const Scalar& value) const {
  return write_inplace(mut_self(), fw::index_fill(*this, dim, index, value), "index_fill_");
}
Tensor Tensor::put(const Tensor& index, const Tensor& source, bool accumulate) const {
  return fw::put(*this, index, source, accumulate);
}
Tensor& Tensor::put_(const Tensor& index, const Tensor& source, bool accumulate) const {
  return write_inplace(mut_self(), fw::put(*this, index, source, accumulate), "put_");
}
Tensor& Tensor::lerp_(const Tensor& end, const Scalar& w) const { return write_inplace(mut_self(), lerp(end, w), "lerp_"); }
Tensor& Tensor::lerp_(const Tensor& end, const Tensor& w) const { return write_inplace(mut_self(), lerp(end, w), "lerp_"); }
// The logical ops give bool; in place they write 0/1 in this tensor's dtype, as libtorch.
Tensor& Tensor::logical_not_() const { return copy_(logical_not()); }
Tensor& Tensor::logical_and_(const Tensor& o) const { return copy_(logical_and(o)); }
Tensor& Tensor::logical_or_(const Tensor& o) const { return copy_(logical_or(o)); }
Tensor& Tensor::logical_xor_(const Tensor& o) const { return copy_(logical_xor(o)); }
Tensor& Tensor::masked_scatter_(const Tensor& mask, const Tensor& source) const {
  return write_inplace(mut_self(), masked_scatter(mask, source), "masked_scatter_");
}
Tensor& Tensor::nan_to_num_(std::optional<double> nan, std::optional<double> posinf, std::optional<double> neginf) const {
  return write_inplace(mut_self(), nan_to_num(nan, posinf, neginf), "nan_to_num_");
}
Tensor& Tensor::tril_(int64_t diagonal) const { return write_inplace(mut_self(), tril(diagonal), "tril_"); }
Tensor& Tensor::triu_(int64_t diagonal) const { return write_inplace(mut_self(), triu(diagonal), "triu_"); }
Tensor Tensor::renorm(const Scalar& p, int64_t dim, const Scalar& maxnorm) const {
  return fw::renorm(*this, p, dim, maxnorm);
}
Tensor& Tensor::renorm_(const Scalar& p, int64_t dim, const Scalar& maxnorm) const {
  return write_inplace(mut_self(), fw::renorm(*this, p, dim, maxnorm), "renorm_");
}
Tensor Tensor::where(const Tensor& cond, const Scalar& other) const { return fw::where(cond, *this, other); }
std::tuple<Tensor, Tensor> Tensor::mode(int64_t dim, bool keepdim) const { return fw::mode(*this, dim, keepdim); }
Tensor Tensor::nanmedian() const { return fw::nanmedian(*this); }
std::tuple<Tensor, Tensor> Tensor::nanmedian(int64_t dim, bool keepdim) const {
  return fw::nanmedian(*this, dim, keepdim);
}
Tensor Tensor::dist(const Tensor& other, const Scalar& p) const { return fw::dist(*this, other, p); }
std::tuple<Tensor, Tensor> Tensor::frexp() const { return fw::frexp(*this); }
Tensor Tensor::isreal() const { return fw::isreal(*this); }
Tensor Tensor::positive() const { return fw::positive(*this); }
Tensor Tensor::bitwise_left_shift(const Tensor& o) const { return fw::bitwise_left_shift(*this, o); }
Tensor Tensor::bitwise_right_shift(const Tensor& o) const { return fw::bitwise_right_shift(*this, o); }
Tensor Tensor::movedim(IntArrayRef source, IntArrayRef destination) const {
  return fw::movedim(*this, source, destination);
}
Tensor Tensor::movedim(int64_t source, int64_t destination) const { return fw::movedim(*this, source, destination); }
std::vector<Tensor> Tensor::tensor_split(int64_t sections, int64_t dim) const {
  return fw::tensor_split(*this, sections, dim);
}
std::vector<Tensor> Tensor::tensor_split(IntArrayRef indices, int64_t dim) const {
  return fw::tensor_split(*this, indices, dim);
}
std::vector<Tensor> Tensor::hsplit(int64_t sections) const { return fw::hsplit(*this, sections); }
std::vector<Tensor> Tensor::hsplit(IntArrayRef indices) const { return fw::hsplit(*this, indices); }
std::vector<Tensor> Tensor::vsplit(int64_t sections) const { return fw::vsplit(*this, sections); }
std::vector<Tensor> Tensor::vsplit(IntArrayRef indices) const { return fw::vsplit(*this, indices); }
std::vector<Tensor> Tensor::dsplit(int64_t sections) const { return fw::dsplit(*this, sections); }
std::vector<Tensor> Tensor::dsplit(IntArrayRef indices) const { return fw::dsplit(*this, indices); }

// ---- in-place metadata changes

namespace {
// Gives self the view v's sizes, strides and offset (v views self's storage).
Tensor& restride(Tensor& self, const Tensor& v, const char* op) {
  FW_CHECK(!self.requires_grad(), "[", op, "] in-place view ops are not supported on tensors that require grad; "
           "use the out-of-place form");
  TensorImpl* impl = self.unsafeGetTensorImpl();
  impl->sizes = DimVec(v.sizes());
  impl->strides = DimVec(v.strides());
  impl->offset = v.storage_offset();
  impl->refresh();
  return self;
}
// A traced placeholder gets its memory first (a graph break), so the trace never sees its
// metadata change under it.
void materialize(const Tensor& t) {
  if (t.unsafeGetTensorImpl()->storage->placeholder) (void)t.data_ptr();
}
}  // namespace

Tensor& Tensor::squeeze_() const { materialize(*this); return restride(mut_self(), squeeze().detach(), "squeeze_"); }
Tensor& Tensor::squeeze_(int64_t dim) const { materialize(*this); return restride(mut_self(), squeeze(dim).detach(), "squeeze_"); }
Tensor& Tensor::unsqueeze_(int64_t dim) const {
  materialize(*this);
  return restride(mut_self(), unsqueeze(dim).detach(), "unsqueeze_");
}
Tensor& Tensor::t_() const { materialize(*this); return restride(mut_self(), t().detach(), "t_"); }
Tensor& Tensor::transpose_(int64_t d0, int64_t d1) const {
  materialize(*this);
  return restride(mut_self(), transpose(d0, d1).detach(), "transpose_");
}
Tensor& Tensor::as_strided_(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> offset) const {
  materialize(*this);
  return restride(mut_self(), as_strided(size, stride, offset).detach(), "as_strided_");
}

void Tensor::set_data(const Tensor& new_data) const {
  FW_CHECK(new_data.defined(), "[set_data] new_data is an undefined tensor");
  FW_CHECK(!requires_grad() || new_data.is_floating_point() || new_data.is_complex(), "[set_data] a tensor that "
           "requires grad needs floating point data, got ", dtype_str(new_data.dtype()));
  materialize(*this);
  materialize(new_data);
  TensorImpl* impl = unsafeGetTensorImpl();
  const TensorImpl* src = new_data.unsafeGetTensorImpl();
  impl->storage = src->storage;
  impl->sizes = src->sizes;
  impl->strides = src->strides;
  impl->offset = src->offset;
  impl->dtype = src->dtype;
  impl->refresh();
}

void Tensor::print() const {
  std::ostringstream os;
  if (!defined()) {
    os << "[UndefinedTensor]";
  } else {
    std::string type = dtype_str(dtype());
    // libtorch's type names: CPUFloatType, CPUDoubleType, CPULongType, ...
    static const std::pair<ScalarType, const char*> names[] = {
        {kFloat, "Float"}, {kDouble, "Double"}, {kHalf, "Half"},  {kBFloat16, "BFloat16"}, {kLong, "Long"},
        {kInt, "Int"},     {kShort, "Short"},   {kChar, "Char"},  {kByte, "Byte"},         {kBool, "Bool"},
        {kComplexFloat, "ComplexFloat"},        {kComplexDouble, "ComplexDouble"}};
    for (const auto& [t, n] : names)
      if (t == dtype()) type = n;
    os << "[" << (is_cuda() ? "CUDA" : "CPU") << type << "Type " << sizes() << "]";
  }
  std::cerr << os.str() << std::endl;  // libtorch's TensorBase::print writes to stderr
}

Tensor& Tensor::resize_(IntArrayRef size) const {
  FW_CHECK(!requires_grad(), "[resize_] cannot resize variables that require grad");
  FW_CHECK(is_cpu(), "[resize_] only CPU tensors can be resized");
  materialize(*this);
  int64_t n = 1;
  for (int64_t s : size) {
    FW_CHECK(s >= 0, "[resize_] Trying to create tensor with negative dimension ", s, ": ", size);
    FW_CHECK(s == 0 || n <= std::numeric_limits<int64_t>::max() / s, "[resize_] size ", size, " overflows int64");
    n *= s;
  }
  const int64_t es = element_size();
  FW_CHECK(n <= (std::numeric_limits<int64_t>::max() / es) - storage_offset(), "[resize_] size ", size,
           " is too large");
  TensorImpl* impl = unsafeGetTensorImpl();
  StorageImpl* st = impl->storage.get();
  const size_t need = size_t((storage_offset() + n) * es);
  if (need > st->nbytes) {
    // Grow the storage itself, so every view of it sees the new memory (as libtorch does).
    FW_CHECK(!st->deleter, "[resize_] Trying to resize storage that is not resizable (it wraps external memory)");
    void* fresh = detail::cpu_alloc(need);
    if (st->nbytes) std::memcpy(fresh, st->data, st->nbytes);
    std::memset(static_cast<char*>(fresh) + st->nbytes, 0, need - st->nbytes);
    if (st->data) detail::cpu_free(st->data, st->nbytes);
    st->data = fresh;
    st->nbytes = need;
  }
  impl->sizes = DimVec(size);
  impl->strides = DimVec(size.size(), 1);
  for (int64_t i = int64_t(size.size()) - 2; i >= 0; i--)
    impl->strides[size_t(i)] = impl->strides[size_t(i + 1)] * std::max<int64_t>(size[size_t(i + 1)], 1);
  impl->refresh();
  bump_version(*this, "resize_");
  return mut_self();
}

// ---- more free functions (batch 2)

Tensor sum_to_size(const Tensor& t, IntArrayRef size) {
  const int64_t nd = t.dim(), ns = int64_t(size.size());
  bool ok = ns <= nd;
  for (int64_t i = 0; ok && i < ns; i++) {
    const int64_t s = size[size_t(i)], ts = t.size(nd - ns + i);
    ok = s == ts || s == 1;
  }
  FW_CHECK(ok, "[sum_to_size] size ", size, " is not expandable to size ", t.sizes());
  DimVec lead, keep;
  for (int64_t i = 0; i < nd - ns; i++) lead.push_back(i);
  for (int64_t i = 0; i < ns; i++)
    if (size[size_t(i)] == 1 && t.size(nd - ns + i) != 1) keep.push_back(nd - ns + i);
  Tensor r = t;
  if (!keep.empty()) r = r.sum(keep, true);
  if (!lead.empty()) r = r.sum(lead, false);
  return r.dim() == ns ? r : r.reshape(size);
}

Tensor isin(const Tensor& elements, const Tensor& test_elements, bool /*assume_unique*/, bool invert) {
  FW_CHECK(!elements.is_complex() && !test_elements.is_complex(), "[isin] complex tensors are not supported");
  const ScalarType common = promote_types(elements.dtype(), test_elements.dtype());
  Tensor e = elements.to(common), s = std::get<0>(fw::sort(test_elements.reshape({-1}).to(common)));
  // NaN equals nothing and sorts last; left in, it would push every search past its match.
  if (is_floating_point(common) && s.numel() > 0) s = s.narrow(0, 0, s.eq(s).sum().item<int64_t>());
  Tensor out;
  if (s.numel() == 0) {
    out = zeros(elements.sizes(), TensorOptions(kBool).device(elements.device()));
  } else {
    // Position of each element in the sorted test set; found where the value there equals it.
    Tensor pos = searchsorted(s, e.reshape({-1})).clamp_max(s.numel() - 1);
    out = s.index_select(0, pos).eq(e.reshape({-1})).reshape(elements.sizes());
  }
  return invert ? out.logical_not() : out;
}
Tensor isin(const Tensor& elements, const Scalar& test_element, bool assume_unique, bool invert) {
  return isin(elements, wrapped_scalar(test_element, elements), assume_unique, invert);
}
Tensor isin(const Scalar& element, const Tensor& test_elements, bool assume_unique, bool invert) {
  return isin(wrapped_scalar(element, test_elements), test_elements, assume_unique, invert);
}

Tensor repeat_interleave(const Tensor& repeats) {
  FW_CHECK(repeats.dim() <= 1, "[repeat_interleave] repeats must be 0-dim or 1-dim tensor, got ", repeats.dim(), " dims");
  FW_CHECK(is_integral(repeats.dtype(), false), "[repeat_interleave] repeats has to be Long or Int tensor, got ",
           dtype_str(repeats.dtype()));
  auto r = host_values<int64_t>(repeats.reshape({-1}));
  std::vector<int64_t> out;
  for (size_t i = 0; i < r.size(); i++) {
    FW_CHECK(r[i] >= 0, "[repeat_interleave] repeats can not be negative, got ", r[i]);
    out.insert(out.end(), size_t(r[i]), int64_t(i));
  }
  Tensor t = empty({int64_t(out.size())}, kLong);
  std::copy(out.begin(), out.end(), t.data_ptr<int64_t>());
  return t.to(repeats.device(), repeats.dtype());
}

Tensor repeat_interleave(const Tensor& t, const Tensor& repeats, std::optional<int64_t> dim) {
  Tensor x = dim ? t : t.reshape({-1});
  const int64_t d = dim ? wrap_dim(*dim, t.dim(), "repeat_interleave") : 0;
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  FW_CHECK(repeats.dim() == 0 || repeats.numel() == 1 || repeats.numel() == n,
           "[repeat_interleave] repeats must have the same size as input along dim, got ", repeats.numel(), " and ", n);
  Tensor reps = repeats.numel() == 1 && n != 1 ? repeats.reshape({1}).expand({n}) : repeats.reshape({-1});
  Tensor idx = repeat_interleave(reps.to(kLong));
  return x.dim() == 0 ? x.reshape({1}).index_select(0, idx) : x.index_select(d, idx);
}

Tensor normal(const Tensor& mean, double std) {
  FW_CHECK(std >= 0, "[normal] expected std >= 0.0, but found std ", std);
  return fw::normal(mean, full_like(mean, std));
}
Tensor normal(double mean, const Tensor& std) { return fw::normal(full_like(std, mean), std); }

Tensor select_scatter(const Tensor& t, const Tensor& src, int64_t dim, int64_t index) {
  Tensor out = t.clone();
  Tensor view = out.select(dim, index);
  FW_CHECK(view.sizes() == src.sizes(), "[select_scatter] expected src to have a size equal to the slice of self. src "
           "size = ", src.sizes(), ", slice size = ", view.sizes());
  view.copy_(src);
  return out;
}
Tensor slice_scatter(const Tensor& t, const Tensor& src, int64_t dim, std::optional<int64_t> start,
                     std::optional<int64_t> end, int64_t step) {
  Tensor out = t.clone();
  Tensor view = out.slice(dim, start, end, step);
  FW_CHECK(view.sizes() == src.sizes(), "[slice_scatter] expected src to have a size equal to the slice of self. src "
           "size = ", src.sizes(), ", slice size = ", view.sizes());
  view.copy_(src);
  return out;
}
Tensor diagonal_scatter(const Tensor& t, const Tensor& src, int64_t offset, int64_t dim1, int64_t dim2) {
  Tensor out = t.clone();
  Tensor view = out.diagonal(offset, dim1, dim2);
  FW_CHECK(view.sizes() == src.sizes(), "[diagonal_scatter] expected src to have a size equal to the slice of self. "
           "src size = ", src.sizes(), ", slice size = ", view.sizes());
  view.copy_(src);
  return out;
}

// ---- their Tensor methods
Tensor Tensor::i0() const { return fw::i0(*this); }
Tensor& Tensor::i0_() const { return write_inplace(mut_self(), fw::i0(*this), "i0_"); }
Tensor Tensor::igamma(const Tensor& o) const { return fw::igamma(*this, o); }
Tensor Tensor::igammac(const Tensor& o) const { return fw::igammac(*this, o); }
Tensor Tensor::copysign(const Tensor& o) const { return fw::copysign(*this, o); }
Tensor Tensor::hypot(const Tensor& o) const { return fw::hypot(*this, o); }
Tensor Tensor::fmax(const Tensor& o) const { return fw::fmax(*this, o); }
Tensor Tensor::fmin(const Tensor& o) const { return fw::fmin(*this, o); }
Tensor Tensor::signbit() const { return fw::signbit(*this); }
Tensor Tensor::isposinf() const { return fw::isposinf(*this); }
Tensor Tensor::isneginf() const { return fw::isneginf(*this); }
Tensor Tensor::deg2rad() const { return fw::deg2rad(*this); }
Tensor Tensor::rad2deg() const { return fw::rad2deg(*this); }
Tensor Tensor::sinc() const { return fw::sinc(*this); }
Tensor Tensor::ldexp(const Tensor& o) const { return fw::ldexp(*this, o); }
Tensor Tensor::float_power(const Tensor& e) const { return fw::float_power(*this, e); }
Tensor Tensor::float_power(const Scalar& e) const { return fw::float_power(*this, e); }
Tensor Tensor::floor_divide(const Tensor& o) const { return fw::floor_divide(*this, o); }
Tensor Tensor::floor_divide(const Scalar& o) const { return fw::floor_divide(*this, o); }
Tensor Tensor::heaviside(const Tensor& values) const { return fw::heaviside(*this, values); }
Tensor Tensor::gcd(const Tensor& o) const { return fw::gcd(*this, o); }
Tensor Tensor::lcm(const Tensor& o) const { return fw::lcm(*this, o); }
Tensor Tensor::nextafter(const Tensor& o) const { return fw::nextafter(*this, o); }
Tensor Tensor::inner(const Tensor& o) const { return fw::inner(*this, o); }
Tensor Tensor::diff(int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
                    const std::optional<Tensor>& append) const {
  return fw::diff(*this, n, dim, prepend, append);
}
Tensor Tensor::msort() const { return fw::msort(*this); }
Tensor Tensor::sum_to_size(IntArrayRef size) const { return fw::sum_to_size(*this, size); }
std::tuple<Tensor, Tensor> Tensor::qr(bool some) const { return fw::linalg::qr(*this, some ? "reduced" : "complete"); }
Tensor Tensor::hardshrink(const Scalar& lambd) const {
  const double l = lambd.toDouble();
  return fw::where(fw::abs(*this).le(l), fw::zeros_like(*this), *this);  // NaN stays NaN
}
Tensor& Tensor::scatter_reduce_(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                                bool include_self) const {
  return write_inplace(mut_self(), fw::scatter_reduce(*this, dim, index, src, reduce, include_self), "scatter_reduce_");
}
Tensor Tensor::select_scatter(const Tensor& src, int64_t dim, int64_t index) const {
  return fw::select_scatter(*this, src, dim, index);
}
Tensor Tensor::slice_scatter(const Tensor& src, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end,
                             int64_t step) const {
  return fw::slice_scatter(*this, src, dim, start, end, step);
}
Tensor Tensor::diagonal_scatter(const Tensor& src, int64_t offset, int64_t dim1, int64_t dim2) const {
  return fw::diagonal_scatter(*this, src, offset, dim1, dim2);
}
Tensor Tensor::repeat_interleave(const Tensor& repeats, std::optional<int64_t> dim) const {
  return fw::repeat_interleave(*this, repeats, dim);
}
Tensor Tensor::matrix_exp() const { return fw::matrix_exp(*this); }
Tensor Tensor::cross(const Tensor& other, std::optional<int64_t> dim) const { return fw::cross(*this, other, dim); }
Tensor Tensor::vdot(const Tensor& other) const { return fw::vdot(*this, other); }
Tensor Tensor::cholesky_solve(const Tensor& L, bool upper) const { return fw::cholesky_solve(*this, L, upper); }
Tensor Tensor::cholesky_inverse(bool upper) const { return fw::cholesky_inverse(*this, upper); }
std::tuple<Tensor, Tensor> Tensor::triangular_solve(const Tensor& A, bool upper, bool transpose,
                                                    bool unitriangular) const {
  return fw::triangular_solve(*this, A, upper, transpose, unitriangular);
}
Tensor Tensor::lu_solve(const Tensor& LU_data, const Tensor& LU_pivots) const {
  return fw::lu_solve(*this, LU_data, LU_pivots);
}

}  // namespace fw
