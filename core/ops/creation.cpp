// Creation ops: copy/cast, fill, ranges, eye, random sampling, and the libtorch factory functions.
#include <atomic>
#include <cmath>
#include <numeric>

#include "core/convert.h"
#include "core/layout.h"
#include "core/loops.h"
#include "core/ops/composite_util.h"
#include "core/op.h"
#include "core/random.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

void same_shape_meta(const OpCall& c, Metas& m) {
  m.push_back({DimVec(c.in[0].sizes()), c.a.has_dtype() ? c.a.dtype : c.in[0].dtype()});
}

// Note [Blocked transposing copy]
// When the destination runs contiguously along one dim and the source along another (x.t()
// .contiguous(), a channels-last <-> contiguous conversion), the plain loop reads the source one
// element per cache line and every line is evicted before its neighbours are used. Copying in
// square tiles keeps a tile's source lines in L1 until all of their elements are written. Same
// dtype only (the bytes are moved as a same-sized integer type); casts keep the plain loop.
constexpr int64_t kTile = 32;

template <class U>
void tiled_transpose_copy(const StridedLoop<2>& L, int64_t j) {
  const int64_t nd = int64_t(L.sizes.size()), in = nd - 1;
  const int64_t ni = L.sizes[in], nj = L.sizes[j];
  const int64_t dst_j = L.strides[0][j], src_i = L.strides[1][in];
  DimVec osz;
  std::array<DimVec, 2> ost;
  int64_t outer = 1;
  for (int64_t d = 0; d < in; d++) {
    if (d == j) continue;
    osz.push_back(L.sizes[d]);
    ost[0].push_back(L.strides[0][d]);
    ost[1].push_back(L.strides[1][d]);
    outer *= L.sizes[d];
  }
  const int64_t tj = (nj + kTile - 1) / kTile, ti = (ni + kTile - 1) / kTile;
  const int64_t units = outer * tj * ti;
  parallel_for(0, units, std::max<int64_t>(1, kGrainSize / (kTile * kTile)), [&](int64_t b, int64_t e) {
    for (int64_t u = b; u < e; u++) {
      int64_t r = u;
      const int64_t bi = r % ti;
      r /= ti;
      const int64_t bj = r % tj;
      r /= tj;
      char* dp = L.base[0];
      const char* sp = L.base[1];
      for (int64_t d = int64_t(osz.size()) - 1; d >= 0; d--) {
        const int64_t k = r % osz[d];
        r /= osz[d];
        dp += k * ost[0][d];
        sp += k * ost[1][d];
      }
      const int64_t j0 = bj * kTile, j1 = std::min(nj, j0 + kTile);
      const int64_t i0 = bi * kTile, i1 = std::min(ni, i0 + kTile);
      for (int64_t jj = j0; jj < j1; jj++) {
        U* drow = reinterpret_cast<U*>(dp + jj * dst_j);
        const char* scol = sp + jj * int64_t(sizeof(U));
        for (int64_t ii = i0; ii < i1; ii++) drow[ii] = *reinterpret_cast<const U*>(scol + ii * src_i);
      }
    }
  });
}

// Copies dst <- src as tiles when that pays (see the Note); false when the plain loop should run.
bool try_tiled_copy(const Tensor& dst, const Tensor& src) {
  const int64_t es = dst.element_size();
  if (dst.dtype() != src.dtype() || dst.numel() < kGrainSize || (dst.is_contiguous() && src.is_contiguous()))
    return false;  // (the plain loop builds its own StridedLoop: skip building one here for nothing)
  auto L = make_loop<2>({&dst, &src}, true);
  const int64_t nd = int64_t(L.sizes.size());
  if (nd < 2 || L.strides[0][nd - 1] != es || L.sizes[nd - 1] < kTile / 2) return false;
  const int64_t src_i = L.strides[1][nd - 1];
  if (src_i == es || src_i == 0 || std::abs(src_i) < 8 * es) return false;
  int64_t j = -1;
  for (int64_t d = 0; d < nd - 1; d++)
    if (L.strides[1][d] == es && L.sizes[d] >= kTile / 2) j = d;
  if (j < 0) return false;
  switch (es) {
    case 1: tiled_transpose_copy<uint8_t>(L, j); return true;
    case 2: tiled_transpose_copy<uint16_t>(L, j); return true;
    case 4: tiled_transpose_copy<uint32_t>(L, j); return true;
    case 8: tiled_transpose_copy<uint64_t>(L, j); return true;
    default: return false;
  }
}

void copy_kernel(const OpCall& c, Outs& o) {
  const Tensor& src = c.in[0];
  Tensor& dst = o[0];
  if (try_tiled_copy(dst, src)) return;
  visit_storage(dst.dtype(), "copy", [&]<class To>() {
    if constexpr (std::is_arithmetic_v<To>) {
      // A bool source is read as bytes: GCC 12 vectorises To(byte != 0) but left To(bool load)
      // a scalar loop with a serial int -> float conversion (mask.to(kFloat), x * mask).
      if (src.dtype() == kBool) return unary_loop<To, uint8_t>(dst, src, [](uint8_t v) { return To(v != 0); });
    }
    visit_storage(src.dtype(), "copy", [&]<class From>() {
      unary_loop<To, From>(dst, src, [](From v) { return convert<To>(v); });
    });
  });
}

// Creation ops read their output shape from attrs.ints and dtype from attrs.dtype.
void shape_attr_meta(const OpCall& c, Metas& m) {
  shape_numel(c.a.ints, c.def.name);
  m.push_back({c.a.ints, c.a.has_dtype() ? c.a.dtype : get_default_dtype()});
}

// c10's checked conversion for floating types: a finite value beyond the type's range, or a
// complex value with an imaginary part into a real type, raises (inf and NaN fill).
template <class T>
void check_float_fill(const Scalar& s) {
  const char* name = std::is_same_v<T, float> ? "float" : std::is_same_v<T, double> ? "double"
                     : std::is_same_v<T, Half> ? "at::Half" : "at::BFloat16";
  double d = s.toDouble();
  bool bad = s.isComplex() && s.toComplexDouble().imag() != 0;
  if constexpr (!std::is_same_v<T, double>)
    bad = bad || (std::isfinite(d) && std::abs(d) > double(std::numeric_limits<T>::max()));
  FW_CHECK(!bad, "[fill_] value cannot be converted to type ", name, " without overflow: ", s);
}

void fill_kernel(const OpCall& c, Outs& o) {
  Tensor& out = o[0];
  visit_storage(out.dtype(), "fill_", [&]<class T>() {
    if constexpr (is_low_float_v<T> || std::is_floating_point_v<T>) check_float_fill<T>(c.a.s0);
    T v;
    if constexpr (is_low_float_v<T>) v = T(c.a.s0.toFloat());
    else v = c.a.s0.to_checked<T>("fill_");  // an integer out of T's range raises (PyTorch)
    fill_loop<T>(out, v);
  });
}

void arange_meta(const OpCall& c, Metas& m) {
  double start = c.a.s0.toDouble(), end = c.a.s1.toDouble(), step = c.a.f0;
  FW_CHECK(step != 0, "[arange] step must be nonzero");
  FW_CHECK(std::isfinite(start) && std::isfinite(end), "[arange] unsupported range: ", start, " -> ", end);
  FW_CHECK((step > 0 && end >= start) || (step < 0 && end <= start),
           "[arange] upper bound and larger bound inconsistent with step sign (start=", start, ", end=", end,
           ", step=", step, ")");
  int64_t n = int64_t(std::ceil((end - start) / step));
  m.push_back({DimVec{n}, c.a.dtype});
}

void arange_kernel(const OpCall& c, Outs& o) {
  double start = c.a.s0.toDouble(), step = c.a.f0;
  visit_storage(o[0].dtype(), "arange", [&]<class T>() {
    T* p = o[0].data_ptr<T>();
    for (int64_t i = 0; i < o[0].numel(); i++) p[i] = convert<T>(start + double(i) * step);
  });
}

void linspace_meta(const OpCall& c, Metas& m) {
  FW_CHECK(c.a.i0 >= 0, "[", c.def.name, "] number of steps must be non-negative, got ", c.a.i0);
  m.push_back({DimVec{c.a.i0}, c.a.dtype});
}

// Note [libtorch's float linspace]
// libtorch 1.13's CPU kernel computes a float32/float64 linspace in the dtype itself: step =
// (end - start) / (n - 1); element i is start + step * i in the first half and
// end - step * (n - 1 - i) in the second, each one rounding (the compiler fuses them into an
// FMA). Its vectorised loop (AVX2: 8 floats / 4 doubles per vector, two vectors per iteration)
// computes only the first element of a vector that way and the others as base + k * step,
// rounding twice; elements past the last whole pair of vectors take the scalar form. fw
// reproduces the scheme, so its values equal libtorch's bit for bit (float32 results can differ
// from the correctly rounded ones by a few ulps; near a zero crossing that is a large relative
// difference). This file is compiled with -ffp-contract=off, so base + k * step keeps its two
// roundings. Integer and 16-bit dtypes are computed in double as below. (Outputs over 32768
// elements are split across threads in libtorch, restarting the vectors at each chunk; fw
// follows its one-thread layout.)
template <class T>
void linspace_like_torch(T* p, int64_t n, T start, T end) {
  if (n == 1) {
    p[0] = start;
    return;
  }
  const T step = (end - start) / T(n - 1);
  const int64_t half = n / 2;
  auto one = [&](int64_t i) {
    return i < half ? std::fma(step, T(i), start) : std::fma(-step, T(n - 1 - i), end);
  };
  constexpr int64_t V = 32 / int64_t(sizeof(T));
  int64_t i = 0;
  for (; i + 2 * V <= n; i += 2 * V)
    for (int64_t v = i; v < i + 2 * V; v += V) {
      const T base = one(v);
      p[v] = base;
      for (int64_t k = 1; k < V; k++) p[v + k] = base + T(k) * step;
    }
  for (; i < n; i++) p[i] = one(i);
}

// PyTorch fills the first half from start and the second half from end (symmetric rounding).
void linspace_values(const OpCall& c, Outs& o, bool log) {
  double start = c.a.s0.toDouble(), end = c.a.s1.toDouble(), base = c.a.f0;
  int64_t n = c.a.i0;
  if (!log && n > 0 && o[0].is_contiguous() && (o[0].dtype() == kFloat || o[0].dtype() == kDouble)) {
    if (o[0].dtype() == kFloat) linspace_like_torch(o[0].data_ptr<float>(), n, float(start), float(end));
    else linspace_like_torch(o[0].data_ptr<double>(), n, start, end);
    return;
  }
  double step = n > 1 ? (end - start) / double(n - 1) : 0.0;
  visit_storage(o[0].dtype(), c.def.name, [&]<class T>() {
    T* p = o[0].data_ptr<T>();
    int64_t half = n / 2;
    for (int64_t i = 0; i < n; i++) {
      double v = n == 1 ? start : i < half ? start + step * double(i) : end - step * double(n - 1 - i);
      p[i] = convert<T>(log ? std::pow(base, v) : v);
    }
  });
}
void linspace_kernel(const OpCall& c, Outs& o) { linspace_values(c, o, false); }
void logspace_kernel(const OpCall& c, Outs& o) { linspace_values(c, o, true); }

void eye_kernel(const OpCall& c, Outs& o) {
  Tensor& out = o[0];
  out.zero_();
  int64_t n = out.size(0), m = out.size(1);
  visit_storage(out.dtype(), "eye", [&]<class T>() {
    T* p = out.data_ptr<T>();
    for (int64_t i = 0; i < std::min(n, m); i++) p[i * m + i] = convert<T>(1);
  });
}

// Random ops draw counter-based Philox streams: element i of a call uses counter (offset + i),
// so results do not depend on the thread count.
template <class Gen>
void random_fill(Tensor& out, const char* op, Gen gen) {
  uint64_t seed, offset;
  philox_reserve(out.numel(), &seed, &offset);
  visit_storage(out.dtype(), op, [&]<class T>() {
    T* p = out.data_ptr<T>();
    parallel_for(0, out.numel(), kGrainSize, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) p[i] = convert<T>(gen(seed, offset + uint64_t(i), i));
    });
  });
}

// Complex outputs draw both parts (PyTorch fills view_as_real): uniform parts in [lo, hi),
// normal parts with the mean and std / sqrt(2), so |z - mean| has variance std^2.
void uniform_kernel(const OpCall& c, Outs& o) {
  double lo = c.a.f0, hi = c.a.f1;
  Tensor out = o[0].is_complex() ? view_as_real(o[0]) : o[0];
  random_fill(out, "uniform", [=](uint64_t s, uint64_t i, int64_t) { return lo + (hi - lo) * philox_uniform(s, i); });
}
void normal_kernel(const OpCall& c, Outs& o) {
  double mean = c.a.f0, sd = o[0].is_complex() ? c.a.f1 * M_SQRT1_2 : c.a.f1;
  Tensor out = o[0].is_complex() ? view_as_real(o[0]) : o[0];
  random_fill(out, "normal", [=](uint64_t s, uint64_t i, int64_t) { return mean + sd * philox_normal(s, i); });
}
void randint_kernel(const OpCall& c, Outs& o) {
  int64_t lo = c.a.i0, hi = c.a.i1;
  uint64_t range = uint64_t(hi - lo);
  random_fill(o[0], "randint", [=](uint64_t s, uint64_t i, int64_t) {
    return double(lo + int64_t(philox_u64(s, i) % range));
  });
}
void randint_meta(const OpCall& c, Metas& m) {
  FW_CHECK(c.a.i0 < c.a.i1, "[randint] random_ expects 'from' to be less than 'to', but got from=", c.a.i0,
           " >= to=", c.a.i1);
  shape_attr_meta(c, m);
}
void bernoulli_meta(const OpCall& c, Metas& m) {
  if (c.in.size() == 1) {
    FW_CHECK(c.in[0].is_floating_point(), "[bernoulli] expected a floating point probability tensor, got ",
             dtype_str(c.in[0].dtype()));
    m.push_back({DimVec(c.in[0].sizes()), c.in[0].dtype()});
  } else {
    FW_CHECK(c.a.f0 >= 0 && c.a.f0 <= 1, "[bernoulli] expected p in [0, 1], but got p=", c.a.f0);
    shape_attr_meta(c, m);
  }
}
void bernoulli_kernel(const OpCall& c, Outs& o) {
  if (c.in.empty()) {
    double p = c.a.f0;
    random_fill(o[0], "bernoulli", [=](uint64_t s, uint64_t i, int64_t) { return philox_uniform(s, i) < p ? 1.0 : 0.0; });
    return;
  }
  Tensor p = c.in[0].to(kDouble).contiguous();
  const double* pp = p.data_ptr<double>();
  for (int64_t i = 0; i < p.numel(); i++)
    FW_CHECK(pp[i] >= 0 && pp[i] <= 1, "[bernoulli] expected all probabilities in [0, 1], got ", pp[i]);
  random_fill(o[0], "bernoulli", [=](uint64_t s, uint64_t ctr, int64_t i) { return philox_uniform(s, ctr) < pp[i] ? 1.0 : 0.0; });
}
void randperm_meta(const OpCall& c, Metas& m) {
  FW_CHECK(c.a.i0 >= 0, "[randperm] n must be non-negative, got ", c.a.i0);
  m.push_back({DimVec{c.a.i0}, c.a.dtype});
}
void randperm_kernel(const OpCall& c, Outs& o) {
  int64_t n = c.a.i0;
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), 0);
  uint64_t seed, offset;
  philox_reserve(n, &seed, &offset);
  for (int64_t i = n - 1; i > 0; i--) std::swap(v[i], v[philox_u64(seed, offset + i) % uint64_t(i + 1)]);
  visit_storage(o[0].dtype(), "randperm", [&]<class T>() {
    T* p = o[0].data_ptr<T>();
    for (int64_t i = 0; i < n; i++) p[i] = convert<T>(v[i]);
  });
}

OpAttrs shape_attrs(IntArrayRef size, const TensorOptions& o) {
  OpAttrs a;
  a.ints = DimVec(size);
  a.dtype = o.dtype();
  return a;
}

Tensor finish(Tensor t, const TensorOptions& o) {
  FW_CHECK(o.device().is_cpu(), "[factory] device ", o.device(), " is not available in this build of fw");
  // The fill or draw that made t was an in-place write, but a new tensor starts at version 0 in
  // libtorch (x._version() counts writes after creation).
  t.impl()->version().store(0, std::memory_order_relaxed);
  if (o.requires_grad()) t.requires_grad_(true);
  return t;
}

}  // namespace

FW_DEFINE_OP(copy) {
  d.meta = same_shape_meta;
  d.cpu = copy_kernel;
  d.functor = "Identity";
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { r[0] = g[0]; };  // the engine casts back
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(fill) { d.meta = shape_attr_meta; d.cpu = fill_kernel; d.differentiable = false; }
FW_DEFINE_OP(arange) { d.meta = arange_meta; d.cpu = arange_kernel; d.differentiable = false; }
FW_DEFINE_OP(linspace) { d.meta = linspace_meta; d.cpu = linspace_kernel; d.differentiable = false; }
FW_DEFINE_OP(logspace) { d.meta = linspace_meta; d.cpu = logspace_kernel; d.differentiable = false; }
FW_DEFINE_OP(eye) { d.meta = shape_attr_meta; d.cpu = eye_kernel; d.differentiable = false; }
FW_DEFINE_OP(uniform) { d.meta = shape_attr_meta; d.cpu = uniform_kernel; d.differentiable = false; }
FW_DEFINE_OP(normal) { d.meta = shape_attr_meta; d.cpu = normal_kernel; d.differentiable = false; }
FW_DEFINE_OP(randint) { d.meta = randint_meta; d.cpu = randint_kernel; d.differentiable = false; }
FW_DEFINE_OP(bernoulli) { d.meta = bernoulli_meta; d.cpu = bernoulli_kernel; d.differentiable = false; }
FW_DEFINE_OP(randperm) { d.meta = randperm_meta; d.cpu = randperm_kernel; d.differentiable = false; }

Tensor empty(IntArrayRef size, const TensorOptions& o) {
  const Device dev = o.device().is_cpu() ? o.device() : Device(kCPU);  // finish() refuses others
  if (auto f = o.memory_format_opt(); f && (*f == MemoryFormat::ChannelsLast || *f == MemoryFormat::ChannelsLast3d)) {
    FW_CHECK(int64_t(size.size()) == format_rank(*f), "[empty] required rank ", format_rank(*f), " tensor to use ",
             *f == MemoryFormat::ChannelsLast ? "channels_last" : "channels_last_3d", " format, got size ", size);
    return finish(empty_in_order(size, o.dtype(), dev, channels_last_order(int64_t(size.size()))), o);
  }
  return finish(make_tensor(size, o.dtype(), dev), o);
}
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, const TensorOptions& o) {
  FW_CHECK(size.size() == stride.size(), "[empty_strided] sizes ", size, " and strides ", stride,
           " have different lengths");
  int64_t span = 1;
  for (size_t i = 0; i < size.size(); i++) {
    FW_CHECK(stride[i] >= 0, "[empty_strided] negative stride ", stride[i]);
    if (size[i] == 0) { span = 0; break; }
    span += (size[i] - 1) * stride[i];
  }
  Tensor base = make_tensor({span}, o.dtype());
  return finish(make_view(base, size, stride, 0), o);
}
Tensor full(IntArrayRef size, const Scalar& v, const TensorOptions& o) {
  TensorOptions oo = o.has_dtype() ? o : o.dtype(v.type());
  Tensor t = empty(size, oo.requires_grad(false));
  t.fill_(v);
  return finish(t, o);
}
Tensor zeros(IntArrayRef size, const TensorOptions& o) { return full(size, 0, o.dtype(o.dtype())); }
Tensor ones(IntArrayRef size, const TensorOptions& o) { return full(size, 1, o.dtype(o.dtype())); }
namespace detail {

// Note [Preserved layouts]
// libtorch's default memory format for the *_like factories, clone and to(dtype) is Preserve:
// the result is laid out in memory like the input, so `empty_like(x)` filled through data_ptr in
// x's memory order holds x's values in x's positions (a transposed or channels-last input gives a
// transposed or channels-last result). The dim order is the one libtorch's infer_dense_strides computes:
// an insertion sort of the dims by stride, innermost first, where a stride-0 (broadcast) dim
// compares equal to everything, so it keeps its row-major place, and of two equal strides the
// larger dim goes outside. A dense input gets its own strides back (up to the strides of size-1
// dims, which address nothing); a sliced one gets dense strides in the same order. The result is
// built row-major in that order and permuted back. Element-wise ops follow a related rule over
// all their inputs (Note [Pointwise result layouts]).
namespace {
// The insertion sort libtorch's infer_dense_strides and TensorIterator share: dims innermost
// first; outer(a, b) > 0 moves a outside b, < 0 stops, 0 leaves the pair and looks further.
// Returns the dims outermost first, or empty when that is the row-major order.
template <class Outer>
std::vector<int64_t> sorted_order(int64_t n, const Outer& outer) {
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; i++) perm[size_t(i)] = n - 1 - i;
  for (int64_t i = 1; i < n; i++) {
    int64_t moving = i;
    for (int64_t j = i - 1; j >= 0; j--) {
      int c = outer(perm[size_t(j)], perm[size_t(moving)]);
      if (c < 0) break;
      if (c > 0) {
        std::swap(perm[size_t(j)], perm[size_t(moving)]);
        moving = j;
      }
    }
  }
  std::vector<int64_t> order(perm.rbegin(), perm.rend());
  for (int64_t i = 0; i < n; i++)
    if (order[size_t(i)] != i) return order;
  return {};
}

}  // namespace

std::vector<int64_t> preserved_order(const Tensor& t) {
  const int64_t n = t.dim();
  if (n < 2 || t.is_contiguous()) return {};
  IntArrayRef size = t.sizes(), stride = t.strides();
  return sorted_order(n, [&](int64_t a, int64_t b) {
    int64_t sa = stride[size_t(a)], sb = stride[size_t(b)];
    if (sa == 0 || sb == 0) return 0;
    if (sa != sb) return sa < sb ? -1 : 1;
    return size[size_t(a)] > size[size_t(b)] ? 1 : 0;
  });
}

// Note [Pointwise result layouts]
// As libtorch's TensorIterator: an element-wise op's new result is row-major when every input is;
// otherwise its dims are ordered by the inputs' strides, the first input whose strides tell two
// dims apart deciding (broadcast dims, stride 0, tell nothing; equal strides put the larger dim
// outside). So relu(x.t()) is transposed, x_channels_last * 2 is channels-last, and a row-major
// first input keeps the result row-major. copy follows its flags instead (result_order):
// contiguous() is row-major, clone() and to(dtype) preserve the layout. fw::compile's tracer
// gives its values the same layouts (result_order), so compiled programs return what eager
// returns.
std::vector<int64_t> pointwise_order(ArrayRef<Tensor> in, IntArrayRef shape) {
  const int64_t n = int64_t(shape.size());
  if (n < 2) return {};
  bool all_contiguous = true;
  for (const Tensor& t : in) all_contiguous = all_contiguous && t.is_contiguous();
  if (all_contiguous) return {};
  auto stride_at = [&](const Tensor& t, int64_t d) -> int64_t {  // broadcast dims: 0
    int64_t j = d - (n - t.dim());
    return j < 0 || (t.size(j) == 1 && shape[size_t(d)] != 1) ? 0 : t.stride(j);
  };
  return sorted_order(n, [&](int64_t a, int64_t b) {
    for (const Tensor& t : in) {
      int64_t sa = stride_at(t, a), sb = stride_at(t, b);
      if (sa == 0 || sb == 0) continue;
      if (sa != sb) return sa < sb ? -1 : 1;
      if (shape[size_t(a)] > shape[size_t(b)]) return 1;
    }
    return 0;
  });
}

std::vector<int64_t> result_order(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Metas& m) {
  if (in.empty() || m.empty()) return {};
  // Batch norm normalises a channels-last input as rows (core/ops/norm.cpp); its result (the
  // outputs of the input's size) is channels-last, as libtorch's (Note [Channels-last results]).
  // So does max pooling (Note [Channels-last max pool] in core/ops/pool.cpp).
  if (id == OpId::native_batch_norm || (id == OpId::max_pool2d_with_indices && in[0].dim() == 4))
    return is_channels_last(in[0]) ? channels_last_order(in[0].dim()) : std::vector<int64_t>{};
  // And conv2d, after the input or the weight (Note [Channels-last convolutions] in core/ops/conv.cpp).
  if (id == OpId::conv2d)
    return in.size() >= 2 && (is_channels_last(in[0]) || is_channels_last(in[1])) ? channels_last_order(4)
                                                                                  : std::vector<int64_t>{};
  if (op_def(id).kind != OpKind::Elementwise) return {};
  if (id == OpId::copy) {
    if (a.flags & kCopyPreserve) return preserved_order(in[0]);
    if (a.flags & kCopyChannelsLast) {
      FW_CHECK(in[0].dim() == 4 || in[0].dim() == 5, "[copy] a channels-last copy needs a 4-d or 5-d tensor, got ",
               in[0].dim(), "-d");
      return channels_last_order(in[0].dim());
    }
    if (a.flags & kCopyOrder) {
      std::vector<int64_t> order(a.ints.begin(), a.ints.end());
      std::vector<char> seen(size_t(in[0].dim()), 0);
      bool perm = int64_t(order.size()) == in[0].dim();
      for (int64_t d : order) perm = perm && d >= 0 && d < in[0].dim() && !seen[size_t(d)]++;
      FW_CHECK(perm, "[copy] the dim order ", shape_str(a.ints), " is not a permutation of ", in[0].dim(), " dims");
      return order;
    }
    return {};
  }
  return pointwise_order(in, m[0].sizes);
}

DimVec strides_in_order(IntArrayRef sizes, const std::vector<int64_t>& order) {
  DimVec st = contiguous_strides(sizes);
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    st[size_t(*it)] = stride;
    stride *= std::max<int64_t>(sizes[size_t(*it)], 1);
  }
  return st;
}

Tensor empty_in_order(IntArrayRef sizes, ScalarType dtype, Device dev, const std::vector<int64_t>& order) {
  Tensor t = make_tensor(sizes, dtype, dev);
  if (order.empty()) return t;
  t.impl()->strides = strides_in_order(sizes, order);
  t.impl()->refresh();
  return t;
}


Tensor permuted_back(const Tensor& phys, const std::vector<int64_t>& order) {
  Tensor r = phys.permute(inverse_perm(order));
  // With a gradient the view keeps autograd's bookkeeping of in-place writes right; without one
  // nothing else can see phys, so the result need not be marked as a view of it.
  if (!r.requires_grad()) r.impl()->view_base.reset();
  return r;
}

Tensor make_like(const Tensor& t, const TensorOptions& o,
                 const std::function<Tensor(IntArrayRef, const TensorOptions&)>& make) {
  TensorOptions r = o.has_dtype() ? o : o.dtype(t.dtype());
  auto f = o.memory_format_opt();
  if (f && *f != MemoryFormat::Preserve) return make(t.sizes(), r);  // Contiguous, ChannelsLast(3d)
  std::vector<int64_t> order = preserved_order(t);
  r = r.memory_format(std::nullopt);
  if (order.empty()) return make(t.sizes(), r);
  DimVec physical;
  for (int64_t d : order) physical.push_back(t.size(d));
  Tensor p = permuted_back(make(physical, r.requires_grad(false)), order);
  // Under fw::compile the permuted result would be a view of an internal value, and in-place
  // writes through views break the graph: a traced one is its own value, copied in the same
  // layout (the values, random ones included, are eager's: the same stream in the same memory
  // order; fused, the copy is a strided read).
  if (tls().tracer != nullptr) p = p.clone();
  return finish(p, r);
}

}  // namespace detail

Tensor empty_like(const Tensor& t, const TensorOptions& o) {
  return make_like(t, o, [](IntArrayRef s, const TensorOptions& r) { return empty(s, r); });
}
Tensor zeros_like(const Tensor& t, const TensorOptions& o) {
  return make_like(t, o, [](IntArrayRef s, const TensorOptions& r) { return zeros(s, r); });
}
Tensor ones_like(const Tensor& t, const TensorOptions& o) {
  return make_like(t, o, [](IntArrayRef s, const TensorOptions& r) { return ones(s, r); });
}
Tensor full_like(const Tensor& t, const Scalar& v, const TensorOptions& o) {
  return make_like(t, o, [&v](IntArrayRef s, const TensorOptions& r) { return full(s, v, r); });
}
Tensor rand_like(const Tensor& t, const TensorOptions& o) {
  return make_like(t, o, [](IntArrayRef s, const TensorOptions& r) { return rand(s, r); });
}
Tensor randn_like(const Tensor& t, const TensorOptions& o) {
  return make_like(t, o, [](IntArrayRef s, const TensorOptions& r) { return randn(s, r); });
}
// libtorch's scalar_tensor is empty({}, options).fill_(v): the default dtype unless options name
// one, for integer and bool values too (unlike full, which takes their dtype); a complex value
// gets the default complex dtype (torch.scalar_tensor(1j) is complex64) rather than an error.
Tensor scalar_tensor(const Scalar& v, const TensorOptions& o) {
  if (o.has_dtype()) return full({}, v, o);
  const ScalarType d = get_default_dtype_as_scalartype();
  return full({}, v, TensorOptions(o).dtype(v.isComplex() ? to_complex_type(d) : d));
}

Tensor arange(const Scalar& end, const TensorOptions& o) { return arange(0, end, 1, o); }
Tensor arange(const Scalar& start, const Scalar& end, const TensorOptions& o) { return arange(start, end, 1, o); }
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, const TensorOptions& o) {
  OpAttrs a;
  a.s0 = start;
  a.s1 = end;
  a.f0 = step.toDouble();
  bool any_float = !start.isIntegral(true) || !end.isIntegral(true) || !step.isIntegral(true);
  a.dtype = o.has_dtype() ? o.dtype() : any_float ? get_default_dtype() : kLong;
  return finish(dispatch1(OpId::arange, {}, a), o);
}
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, const TensorOptions& o) {
  OpAttrs a;
  a.s0 = start;
  a.s1 = end;
  a.i0 = steps;
  a.dtype = o.dtype();
  return finish(dispatch1(OpId::linspace, {}, a), o);
}
Tensor logspace(const Scalar& start, const Scalar& end, int64_t steps, double base, const TensorOptions& o) {
  OpAttrs a;
  a.s0 = start;
  a.s1 = end;
  a.i0 = steps;
  a.f0 = base;
  a.dtype = o.dtype();
  return finish(dispatch1(OpId::logspace, {}, a), o);
}
Tensor eye(int64_t n, const TensorOptions& o) { return eye(n, n, o); }
Tensor eye(int64_t n, int64_t m, const TensorOptions& o) {
  FW_CHECK(n >= 0 && m >= 0, "[eye] n and m must be non-negative, got n=", n, ", m=", m);
  return finish(dispatch1(OpId::eye, {}, shape_attrs({n, m}, o)), o);
}

Tensor from_blob(void* data, IntArrayRef sizes, const TensorOptions& o) {
  return from_blob(data, sizes, contiguous_strides(sizes), o);
}
Tensor from_blob(void* data, IntArrayRef sizes, IntArrayRef strides, const TensorOptions& o) {
  FW_CHECK(sizes.size() == strides.size(), "[from_blob] sizes ", sizes, " and strides ", strides,
           " have different lengths");
  int64_t n = shape_numel(sizes, "from_blob");
  auto impl = make_intrusive<TensorImpl>();
  impl->storage = make_intrusive<StorageImpl>(data, size_t(n) * element_size(o.dtype()), o.device(), nullptr);
  impl->sizes = DimVec(sizes);
  impl->strides = DimVec(strides);
  impl->dtype = o.dtype();
  impl->refresh();
  return finish(Tensor(std::move(impl)), o);
}
Tensor from_blob(void* data, IntArrayRef sizes, std::function<void(void*)> deleter, const TensorOptions& o) {
  Tensor t = from_blob(data, sizes, o);
  t.impl()->storage->deleter = std::move(deleter);
  return t;
}

NestedList::NestedList(std::initializer_list<NestedList> l) {
  FW_CHECK(l.size() > 0, "[tensor] empty nested initializer lists are not supported");
  const NestedList& first = *l.begin();
  shape_.push_back(int64_t(l.size()));
  shape_.insert(shape_.end(), first.shape_.begin(), first.shape_.end());
  type_ = first.type_;
  for (const NestedList& e : l) {
    FW_CHECK(e.shape_ == first.shape_, "[tensor] nested lists have inconsistent shapes: ",
             IntArrayRef(first.shape_), " vs ", IntArrayRef(e.shape_));
    vals_.insert(vals_.end(), e.vals_.begin(), e.vals_.end());
    type_ = promote_types(type_, e.type_);
  }
}

ScalarType tensor_dtype_for(ScalarType t) {
  if (t == kInt || t == kLong) return kLong;
  if (t == kFloat || t == kDouble) return get_default_dtype();
  return t;
}
ScalarType NestedList::inferred() const { return tensor_dtype_for(type_); }

Tensor tensor(const NestedList& l, const TensorOptions& o) {
  // Integers (and bools) go through int64, others through double: both exact for their elements.
  bool integral = is_integral(l.element_type(), true);
  Tensor d = empty(l.shape(), integral ? kLong : kDouble);
  const std::vector<Scalar>& v = l.values();
  if (integral) {
    int64_t* p = d.data_ptr<int64_t>();
    for (size_t i = 0; i < v.size(); i++) p[i] = v[i].toLong();
  } else {
    double* p = d.data_ptr<double>();
    for (size_t i = 0; i < v.size(); i++) p[i] = v[i].toDouble();
  }
  return finish(d.to(o.has_dtype() ? o.dtype() : l.inferred()), o);
}

// ---- random
Tensor rand(IntArrayRef size, const TensorOptions& o) {
  OpAttrs a = shape_attrs(size, o);
  a.f0 = 0;
  a.f1 = 1;
  FW_CHECK(is_floating_point(a.dtype) || is_complex(a.dtype), "[rand] expected a floating point dtype, got ",
           dtype_str(a.dtype));
  return finish(dispatch1(OpId::uniform, {}, a), o);
}
Tensor randn(IntArrayRef size, const TensorOptions& o) { return normal(0, 1, size, o); }
Tensor normal(double mean, double std, IntArrayRef size, const TensorOptions& o) {
  FW_CHECK(std >= 0, "[normal] expects std >= 0.0, but found std ", std);
  OpAttrs a = shape_attrs(size, o);
  FW_CHECK(is_floating_point(a.dtype) || is_complex(a.dtype), "[normal] expected a floating point or complex dtype, got ",
           dtype_str(a.dtype));
  a.f0 = mean;
  a.f1 = std;
  return finish(dispatch1(OpId::normal, {}, a), o);
}
Tensor normal(const Tensor& mean, const Tensor& std) {
  return add(mean, mul(randn(broadcast_shapes(mean.sizes(), std.sizes(), "normal"), mean.dtype()), std));
}
Tensor randint(int64_t high, IntArrayRef size, const TensorOptions& o) { return randint(0, high, size, o); }
Tensor randint(int64_t low, int64_t high, IntArrayRef size, const TensorOptions& o) {
  OpAttrs a = shape_attrs(size, o);
  a.dtype = o.has_dtype() ? o.dtype() : kLong;
  a.i0 = low;
  a.i1 = high;
  return finish(dispatch1(OpId::randint, {}, a), o);
}
Tensor randperm(int64_t n, const TensorOptions& o) {
  OpAttrs a;
  a.i0 = n;
  a.dtype = o.has_dtype() ? o.dtype() : kLong;
  return finish(dispatch1(OpId::randperm, {}, a), o);
}
Tensor bernoulli(const Tensor& p) { return dispatch1(OpId::bernoulli, {p}, OpAttrs()); }
Tensor bernoulli(const Tensor& t, double p) {
  OpAttrs a = shape_attrs(t.sizes(), t.dtype());
  a.f0 = p;
  return dispatch1(OpId::bernoulli, {}, a);
}

Tensor& Tensor::uniform_(double from, double to) const {
  FW_CHECK(from <= to, "[uniform_] expects to return a [from, to) range, but found from=", from, " > to=", to);
  // complex: both parts in [from, to), as torch
  copy_(rand(sizes(), dtype()).mul(to - from).add(is_complex() ? Scalar(std::complex<double>(from, from)) : Scalar(from)));
  return mut_self();
}
Tensor& Tensor::normal_(double mean, double std) const { return copy_(normal(mean, std, sizes(), dtype())); }
Tensor& Tensor::bernoulli_(double p) const { return copy_(fw::bernoulli(*this, p)); }
Tensor& Tensor::random_(int64_t from, int64_t to) const { return copy_(randint(from, to, sizes(), dtype())); }

}  // namespace fw
