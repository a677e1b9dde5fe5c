// Reductions over dim lists: sum, mean, prod, amax/amin, max/min with indices, argmax/argmin,
// all/any, count_nonzero. The engine is in reduce.h (Note [Reduction engine]); var, norm,
// logsumexp and isclose live in reduce_stats.cpp, sort/topk/median/scans in sort.cpp.
#include "core/ops/reduce.h"

#include "core/autocast.h"
#include "core/convert.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace detail {

DimVec reduce_dims(const Tensor& t, IntArrayRef dims, const char* op) {
  DimVec out;
  if (dims.empty()) {
    for (int64_t i = 0; i < t.dim(); i++) out.push_back(i);
    return out;
  }
  DimVec seen;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, t.dim(), op);
    FW_CHECK(std::find(seen.begin(), seen.end(), w) == seen.end(), "[", op, "] dim ", w,
             " appears multiple times in the list of dims");
    seen.push_back(w);
    if (t.dim() > 0) out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

DimVec reduced_shape(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op) {
  DimVec rd = reduce_dims(t, dims, op);
  DimVec s;
  for (int64_t i = 0; i < t.dim(); i++) {
    bool red = std::find(rd.begin(), rd.end(), i) != rd.end();
    if (!red) s.push_back(t.sizes()[i]);
    else if (keepdim) s.push_back(1);
  }
  return s;
}

ReducePlan make_reduce_plan(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op) {
  ReducePlan p;
  DimVec rd = reduce_dims(t, dims, op);
  p.out_sizes = reduced_shape(t, dims, keepdim, op);
  DimVec perm;
  for (int64_t i = 0; i < t.dim(); i++)
    if (std::find(rd.begin(), rd.end(), i) == rd.end()) {
      perm.push_back(i);
      p.outer *= t.sizes()[i];
    }
  for (int64_t d : rd) {
    perm.push_back(d);
    p.inner *= t.sizes()[d];
  }
  Tensor x = t.dim() == 0 ? t.reshape({1}) : t.permute(perm);
  p.rows = x.contiguous().view({p.outer, p.inner});
  return p;
}

namespace {
// Drops size-1 dims and merges neighbours that walk memory as one run.
void coalesce(DimVec& sizes, DimVec& strides) {
  DimVec s, st;
  for (size_t i = 0; i < sizes.size(); i++) {
    if (sizes[i] == 1) continue;
    if (!s.empty() && st.back() == strides[i] * sizes[i]) {
      s.back() *= sizes[i];
      st.back() = strides[i];
      continue;
    }
    s.push_back(sizes[i]);
    st.push_back(strides[i]);
  }
  sizes = s;
  strides = st;
}
}  // namespace

ReduceGeom reduce_geom(const Tensor& x, IntArrayRef rdims, bool logical) {
  ReduceGeom g;
  std::vector<std::pair<int64_t, int64_t>> red;  // (stride, size)
  for (int64_t d = 0; d < x.dim(); d++) {
    int64_t sz = x.sizes()[d], st = x.strides()[d];
    if (std::find(rdims.begin(), rdims.end(), d) != rdims.end()) {
      g.n_red *= sz;
      red.push_back({st, sz});
    } else {
      g.n_out *= sz;
      g.ksizes.push_back(sz);
      g.kstrides.push_back(st);
    }
  }
  if (!logical)
    std::stable_sort(red.begin(), red.end(), [](auto& a, auto& b) { return a.first > b.first; });
  for (auto& [st, sz] : red) {
    g.rsizes.push_back(sz);
    g.rstrides.push_back(st);
  }
  if (g.n_out > 0 && g.n_red > 0) {
    coalesce(g.ksizes, g.kstrides);
    coalesce(g.rsizes, g.rstrides);
  }
  if (g.rsizes.empty()) {
    g.rsizes.push_back(1);
    g.rstrides.push_back(0);
  }
  return g;
}

OpAttrs reduce_attrs(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  OpAttrs a;
  a.ints = DimVec(dims);
  a.flags = keepdim ? kKeepDim : 0;
  if (dtype) a.dtype = *dtype;
  return a;
}

Tensor out_buffer(const Tensor& out, ScalarType wt) {
  return out.dtype() == wt ? out : make_tensor(out.sizes(), wt, out.device());
}

void finish_out(Tensor& out, const Tensor& buf) {
  if (!buf.is_same(out)) out.copy_(buf);
}

void check_reduce_nonempty(const Tensor& t, IntArrayRef rdims, bool all_dims, const char* op) {
  if (all_dims) {
    FW_CHECK(t.numel() > 0, "[", op, "] Expected reduction dim to be specified for input.numel() == 0. ",
             "Specify the reduction dim with the 'dim' argument.");
    return;
  }
  for (int64_t d : rdims)
    FW_CHECK(t.sizes()[d] != 0, "[", op, "] Expected reduction dim ", d, " to have non-zero size.");
}

Tensor grad_expand(const Tensor& g, const Tensor& x, IntArrayRef dims, bool keepdim) {
  Tensor r = g.dtype() == x.dtype() ? g : g.to(x.dtype());
  if (!keepdim)
    for (int64_t d : reduce_dims(x, dims, "backward")) r = r.unsqueeze(d);
  return r.expand(x.sizes());
}

Tensor index_mask(const Tensor& x, int64_t dim, const Tensor& idx, bool keepdim) {
  if (x.dim() == 0) return fw::ones_like(x, kBool);
  int64_t d = wrap_dim(dim, x.dim(), "backward");
  DimVec shape(size_t(x.dim()), 1);
  shape[size_t(d)] = x.sizes()[d];
  Tensor pos = fw::arange(x.sizes()[d], TensorOptions(kLong)).view(shape);
  Tensor ie = keepdim ? idx : idx.unsqueeze(d);
  return pos == ie.expand(x.sizes());
}

}  // namespace detail

namespace {

// ---- reducers (the interface is described in Note [Reduction engine])

template <class T>
using sum_acc_t = std::conditional_t<std::is_floating_point_v<T>, double,
                                     std::conditional_t<is_complex_v<T>, std::complex<double>, int64_t>>;

// Note [GCC 12 widening sums]
// GCC 12 at -O3 with AVX-512 (-march=x86-64-v4 or native on such a CPU) vectorises the lane loop
// of reduce_run wrongly when an int8/int16/int32/uint8 element is widened and added as uint64
// (`uint64_t(a) + uint64_t(x)`): from 32768 contiguous elements on, half (int32), a quarter
// (int16) or an eighth (int8) of the lanes were dropped. The same loop with a signed int64 add
// compiles correctly, so narrower integers add that way: it cannot overflow below 2^32 elements.
// int64 input keeps the unsigned add, which wraps like PyTorch's. Widening products went wrong
// too, even with AVX2 (int16), and a signed product overflows, so prod casts its integer input to
// int64 first (kWidenFirst). Test: ReduceInt.WideningSumsAndProducts.
template <class T>
struct SumRed {
  using acc_t = sum_acc_t<T>;
  static constexpr int kLanes = 8;
  static constexpr bool kWidenFirst = false;
  acc_t init() const { return acc_t(0); }
  void step(acc_t& a, T x, int64_t) const {
    // Narrower integers add as signed int64 (see Note [GCC 12 widening sums]); int64 wraps.
    if constexpr (std::is_integral_v<acc_t> && sizeof(T) < sizeof(acc_t)) a += acc_t(x);
    else if constexpr (std::is_integral_v<acc_t>) a = acc_t(uint64_t(a) + uint64_t(x));
    else a += acc_t(x);
  }
  void merge(acc_t& a, const acc_t& b) const {
    if constexpr (std::is_integral_v<acc_t>) a = acc_t(uint64_t(a) + uint64_t(b));
    else a += b;
  }
  // float runs: 32 float lanes over chunks of 2048 (each lane adds 64 values), chunk sums
  // in double; as accurate as PyTorch's cascade sum and twice as fast as double lanes.
  bool run(acc_t& a, const T* p, int64_t n, int64_t) const {
    if constexpr (std::is_same_v<T, float>) {
      constexpr int W = 32;
      constexpr int64_t C = 2048;
      for (int64_t c = 0; c < n; c += C) {
        int64_t len = std::min(C, n - c), j = 0;
        const float* q = p + c;
        float l[W] = {};
        for (; j + W <= len; j += W)
          for (int k = 0; k < W; k++) l[k] += q[j + k];
        double s = 0;
        for (int k = 0; k < W; k++) s += l[k];
        for (; j < len; j++) s += q[j];
        a += s;
      }
      return true;
    }
    return false;
  }
};

template <class T>
struct ProdRed {
  using acc_t = sum_acc_t<T>;
  static constexpr int kLanes = 8;
  static constexpr bool kWidenFirst = true;
  acc_t init() const { return acc_t(1); }
  void step(acc_t& a, T x, int64_t) const { merge(a, acc_t(x)); }
  void merge(acc_t& a, const acc_t& b) const {
    if constexpr (std::is_integral_v<acc_t>) a = acc_t(uint64_t(a) * uint64_t(b));
    else a *= b;
  }
};

// max (IsMax) or min; NaN wins.
template <class T, bool IsMax>
struct ExtremeRed {
  using acc_t = T;
  static constexpr int kLanes = 8;
  acc_t init() const {
    if constexpr (std::is_floating_point_v<T>)
      return IsMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    else return IsMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  }
  void step(acc_t& a, T x, int64_t) const {
    bool take = IsMax ? x > a : x < a;
    if constexpr (std::is_floating_point_v<T>) take = take || x != x;
    a = take ? x : a;
  }
  void merge(acc_t& a, const acc_t& b) const { step(a, b, 0); }
  bool run(acc_t& a, const T* p, int64_t n, int64_t) const {
    if (n == 0) return true;
    bool nan = false;
    T v = vec_extreme<IsMax>(p, n, nan);
    if constexpr (std::is_floating_point_v<T>)
      if (nan) v = std::numeric_limits<T>::quiet_NaN();
    step(a, v, 0);
    return true;
  }
};

// (value, index) of the max/min; NaN wins; ties keep the first index.
template <class T, bool IsMax>
struct ArgRed {
  struct acc_t {
    T v;
    int64_t i;
  };
  static constexpr int kLanes = 1;
  static bool better(T x, T y) {
    bool b = IsMax ? x > y : x < y;
    if constexpr (std::is_floating_point_v<T>) b = b || (x != x && y == y);
    return b;
  }
  acc_t init() const { return {T(), -1}; }
  void step(acc_t& a, T x, int64_t i) const {
    if (a.i < 0 || better(x, a.v)) a = {x, i};
  }
  void merge(acc_t& a, const acc_t& b) const {
    if (b.i < 0) return;
    if (a.i < 0 || better(b.v, a.v) || (!better(a.v, b.v) && b.i < a.i)) a = b;
  }
  // Contiguous runs: a vectorised extreme per L1-sized chunk, then the first index holding it.
  bool run(acc_t& a, const T* p, int64_t n, int64_t i0) const {
    constexpr int64_t C = 4096;
    for (int64_t c = 0; c < n; c += C) {
      int64_t len = std::min(C, n - c);
      bool nan = false;
      T v = vec_extreme<IsMax>(p + c, len, nan);
      int64_t j = 0;
      if (nan) {
        while (!is_nan(p[c + j])) j++;
      } else {
        while (p[c + j] != v) j++;
      }
      merge(a, {p[c + j], i0 + c + j});
    }
    return true;
  }
  static bool is_nan(T v) {
    if constexpr (std::is_floating_point_v<T>) return v != v;
    else return false;
  }
};

template <class T, bool IsAll>
struct LogicalRed {
  using acc_t = bool;
  static constexpr int kLanes = 16;
  acc_t init() const { return IsAll; }
  void step(acc_t& a, T x, int64_t) const {
    if constexpr (IsAll) a = a & (x != T(0));
    else a = a | (x != T(0));
  }
  void merge(acc_t& a, const acc_t& b) const { a = IsAll ? (a & b) : (a | b); }
};

template <class T>
struct CountRed {
  using acc_t = int64_t;
  static constexpr int kLanes = 8;
  acc_t init() const { return 0; }
  void step(acc_t& a, T x, int64_t) const { a += int64_t(x != T(0)); }
  void merge(acc_t& a, const acc_t& b) const { a += b; }
};

template <class T>
T narrow_acc(const sum_acc_t<T>& a) {
  if constexpr (is_complex_v<T>) return T(real_value_t<T>(a.real()), real_value_t<T>(a.imag()));
  else return T(a);
}

// ---- sum / prod / mean

ScalarType sum_dtype(const Tensor& t, const OpAttrs& a) {
  if (a.has_dtype()) return a.dtype;
  return is_integral(t.dtype(), true) ? kLong : t.dtype();
}

void sum_meta(const OpCall& c, Metas& m) {
  m.push_back({reduced_shape(c.in[0], c.a.ints, c.a.flags & kKeepDim, c.def.name), sum_dtype(c.in[0], c.a)});
}

// sum and prod: the input is cast to the requested dtype first (PyTorch), integers accumulate
// in int64 with wrap-around, floats in double.
template <template <class> class Red>
void sum_like_kernel(const OpCall& c, Outs& o) {
  const Tensor& in = c.in[0];
  ScalarType rt = o[0].dtype();
  bool int_out = is_integral(rt, true);
  ScalarType xt = int_out ? (is_integral(in.dtype(), true) ? in.dtype() : rt) : opmath_dtype(rt);
  // Integer products read int64 (Note [GCC 12 widening sums]: a widening product is miscompiled
  // even with AVX2, and a signed one would overflow).
  if (Red<int32_t>::kWidenFirst && int_out) xt = kLong;
  Tensor x = cast(in, xt);
  ReduceGeom g = reduce_geom(x, reduce_dims(x, c.a.ints, c.def.name), false);
  Tensor y = out_buffer(o[0], int_out ? kLong : xt);
  visit_all(xt, c.def.name, [&]<class T>() {
    if constexpr (std::is_integral_v<T>) reduce_to<T>(x, g, Red<T>{}, y, [](int64_t a) { return a; });
    else reduce_to<T>(x, g, Red<T>{}, y, [](const sum_acc_t<T>& a) { return narrow_acc<T>(a); });
  });
  finish_out(o[0], y);
}

ScalarType mean_dtype(const Tensor& t, const OpAttrs& a) {
  if (a.has_dtype()) {
    FW_CHECK(is_floating_point(a.dtype) || is_complex(a.dtype),
             "[mean] mean(): could not infer output dtype. Optional dtype must be either a floating point or "
             "complex dtype. Got: ", dtype_name(a.dtype));
    return a.dtype;
  }
  FW_CHECK(is_floating_point(t.dtype()) || is_complex(t.dtype()),
           "[mean] mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
           "dtype. Got: ", dtype_name(t.dtype()));
  return t.dtype();
}

void mean_meta(const OpCall& c, Metas& m) {
  m.push_back({reduced_shape(c.in[0], c.a.ints, c.a.flags & kKeepDim, "mean"), mean_dtype(c.in[0], c.a)});
}

void mean_kernel(const OpCall& c, Outs& o) {
  ScalarType xt = opmath_dtype(o[0].dtype());
  Tensor x = cast(c.in[0], xt);
  ReduceGeom g = reduce_geom(x, reduce_dims(x, c.a.ints, "mean"), false);
  Tensor y = out_buffer(o[0], xt);
  double n = double(g.n_red);
  visit_float_complex(xt, "mean", [&]<class T>() {
    reduce_to<T>(x, g, SumRed<T>{}, y, [n](const sum_acc_t<T>& a) { return narrow_acc<T>(a / n); });
  });
  finish_out(o[0], y);
}

// ---- amax / amin / max.dim / min.dim / argmax / argmin

void check_real(const Tensor& t, const char* op) {
  FW_CHECK(!t.is_complex(), "[", op, "] not implemented for dtype ", dtype_str(t.dtype()));
}

void extreme_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  check_real(t, c.def.name);
  check_reduce_nonempty(t, reduce_dims(t, c.a.ints, c.def.name), c.a.ints.empty(), c.def.name);
  m.push_back({reduced_shape(t, c.a.ints, c.a.flags & kKeepDim, c.def.name), t.dtype()});
}

template <bool IsMax>
void extreme_kernel(const OpCall& c, Outs& o) {
  ScalarType xt = opmath_dtype(c.in[0].dtype());
  Tensor x = cast(c.in[0], xt);
  ReduceGeom g = reduce_geom(x, reduce_dims(x, c.a.ints, c.def.name), false);
  Tensor y = out_buffer(o[0], xt);
  visit_real(xt, c.def.name, [&]<class T>() { reduce_to<T>(x, g, ExtremeRed<T, IsMax>{}, y, [](T a) { return a; }); });
  finish_out(o[0], y);
}

// Runs ArgRed over x; values go to o[0] (when vals) and indices to o.back().
template <bool IsMax>
void arg_reduce(const OpCall& c, const Tensor& in, IntArrayRef rdims, Outs& o, bool vals) {
  ScalarType xt = opmath_dtype(in.dtype());
  Tensor x = cast(in, xt);
  ReduceGeom g = reduce_geom(x, rdims, true);
  Tensor yv = vals ? out_buffer(o[0], xt) : Tensor();
  int64_t* yi = o.back().data_ptr<int64_t>();
  visit_real(xt, c.def.name, [&]<class T>() {
    using Red = ArgRed<T, IsMax>;
    T* v = vals ? yv.data_ptr<T>() : nullptr;
    run_reduce<T>(x, g, Red{}, [&](int64_t i, const typename Red::acc_t& a) {
      if (v) v[i] = a.v;
      yi[i] = std::max<int64_t>(a.i, 0);
    });
  });
  if (vals) finish_out(o[0], yv);
}

// max.dim / min.dim: ints = {dim}, flags = keepdim; outputs (values, int64 indices).
void max_dim_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  check_real(t, c.def.name);
  check_reduce_nonempty(t, reduce_dims(t, c.a.ints, c.def.name), false, c.def.name);
  DimVec s = reduced_shape(t, c.a.ints, c.a.flags & kKeepDim, c.def.name);
  m.push_back({s, t.dtype()});
  m.push_back({s, kLong});
}

template <bool IsMax>
void max_dim_kernel(const OpCall& c, Outs& o) {
  arg_reduce<IsMax>(c, c.in[0], reduce_dims(c.in[0], c.a.ints, c.def.name), o, true);
}

// argmax/argmin: flags bit 1 = a dim is given (in i0); without one the input is flattened.
constexpr uint32_t kHasDim = 2;

DimVec arg_rdims(const OpCall& c) {
  const Tensor& t = c.in[0];
  if (c.a.flags & kHasDim) return reduce_dims(t, {c.a.i0}, c.def.name);
  return reduce_dims(t, {}, c.def.name);
}

void argmax_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  check_real(t, c.def.name);
  bool has_dim = c.a.flags & kHasDim, keep = c.a.flags & kKeepDim;
  DimVec rd = arg_rdims(c);
  if (!has_dim)
    FW_CHECK(t.numel() > 0, "[", c.def.name, "] Expected reduction dim to be specified for input.numel() == 0.");
  check_reduce_nonempty(t, rd, false, c.def.name);
  DimVec s = has_dim ? reduced_shape(t, {c.a.i0}, keep, c.def.name) : keep ? DimVec(size_t(t.dim()), 1) : DimVec();
  m.push_back({s, kLong});
}

template <bool IsMax>
void argmax_kernel(const OpCall& c, Outs& o) {
  arg_reduce<IsMax>(c, c.in[0], arg_rdims(c), o, false);
}

// ---- all / any / count_nonzero: ints = dims (empty = all)

void logical_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  ScalarType rt = t.dtype() == kUInt8 ? kUInt8 : kBool;  // PyTorch keeps uint8
  m.push_back({reduced_shape(t, c.a.ints, c.a.flags & kKeepDim, c.def.name), rt});
}

template <bool IsAll>
void logical_kernel(const OpCall& c, Outs& o) {
  ScalarType xt = opmath_dtype(c.in[0].dtype());
  Tensor x = cast(c.in[0], xt);
  ReduceGeom g = reduce_geom(x, reduce_dims(x, c.a.ints, c.def.name), false);
  Tensor y = out_buffer(o[0], kBool);
  visit_all(xt, c.def.name, [&]<class T>() { reduce_to<T>(x, g, LogicalRed<T, IsAll>{}, y, [](bool a) { return a; }); });
  finish_out(o[0], y);
}

void count_nonzero_meta(const OpCall& c, Metas& m) {
  m.push_back({reduced_shape(c.in[0], c.a.ints, false, "count_nonzero"), kLong});
}

void count_nonzero_kernel(const OpCall& c, Outs& o) {
  ScalarType xt = opmath_dtype(c.in[0].dtype());
  Tensor x = cast(c.in[0], xt);
  ReduceGeom g = reduce_geom(x, reduce_dims(x, c.a.ints, "count_nonzero"), false);
  visit_all(xt, "count_nonzero", [&]<class T>() { reduce_to<T>(x, g, CountRed<T>{}, o[0], [](int64_t a) { return a; }); });
}

// ---- vjps (public ops only, so gradients are differentiable again)

bool keep(const OpAttrs& a) { return a.flags & kKeepDim; }

void sum_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { r[0] = grad_expand(g[0], c.in[0], c.a.ints, keep(c.a)); }

void mean_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  int64_t n = 1;
  for (int64_t d : reduce_dims(x, c.a.ints, "mean")) n *= x.sizes()[d];
  r[0] = grad_expand(g[0], x, c.a.ints, keep(c.a)) / double(n);
}

// d prod / d x_i = product of the others: out / x_i away from zeros; at a slice's only zero,
// the product of its non-zero entries; 0 where a slice has two or more zeros.
void prod_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  bool kd = keep(c.a), all = c.a.ints.empty();
  auto red = [&](const Tensor& t, bool k) { return all ? fw::prod(t) : fw::prod(t, c.a.ints[0], k); };
  Tensor zero = x == 0;
  Tensor safe = fw::where(zero, 1, x);
  Tensor nzeros = grad_expand(all ? zero.sum() : zero.sum({c.a.ints[0]}, true), x, c.a.ints, !all);
  Tensor others = grad_expand(red(safe, true), x, c.a.ints, !all);
  Tensor outs = grad_expand(c.out[0], x, c.a.ints, kd);
  Tensor at_zero = fw::where(nzeros == 1, others, fw::zeros_like(others));
  r[0] = grad_expand(g[0], x, c.a.ints, kd) * fw::where(zero, at_zero, outs / safe);
}

// amax/amin: the gradient is shared evenly between the entries equal to the result.
void extreme_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  Tensor mask = x == grad_expand(c.out[0], x, c.a.ints, keep(c.a));
  Tensor count = grad_expand(mask.sum(c.a.ints, true), x, c.a.ints, true);
  r[0] = grad_expand(g[0], x, c.a.ints, keep(c.a)) * mask / count;
}

// max/min/median over a dim: the whole gradient goes to the reported index.
void index_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  if (!g[0].defined()) return;
  const Tensor& x = c.in[0];
  int64_t dim = c.a.ints.empty() ? c.a.i0 : c.a.ints[0];
  bool kd = keep(c.a);
  r[0] = grad_expand(g[0], x, {dim}, kd) * index_mask(x, dim, c.out[1], kd);
}

}  // namespace

FW_DEFINE_OP(sum) {
  d.meta = sum_meta;
  d.cpu = sum_like_kernel<SumRed>;
  d.functor = "Add";
  d.vjp = sum_vjp;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(prod) {
  d.meta = sum_meta;
  d.cpu = sum_like_kernel<ProdRed>;
  d.functor = "Mul";
  d.vjp = prod_vjp;
  d.vjp_uses_out = true;
}
FW_DEFINE_OP(mean) {
  d.meta = mean_meta;
  d.cpu = mean_kernel;
  d.functor = "Add";
  d.vjp = mean_vjp;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(amax) {
  d.meta = extreme_meta;
  d.cpu = extreme_kernel<true>;
  d.functor = "Maximum";
  d.vjp = extreme_vjp;
  d.vjp_uses_out = true;
}
FW_DEFINE_OP(amin) {
  d.meta = extreme_meta;
  d.cpu = extreme_kernel<false>;
  d.functor = "Minimum";
  d.vjp = extreme_vjp;
  d.vjp_uses_out = true;
}
FW_DEFINE_OP(max) {
  d.meta = max_dim_meta;
  d.cpu = max_dim_kernel<true>;
  d.vjp = index_vjp;
  d.vjp_uses_out = true;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(min) {
  d.meta = max_dim_meta;
  d.cpu = max_dim_kernel<false>;
  d.vjp = index_vjp;
  d.vjp_uses_out = true;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(argmax) { d.meta = argmax_meta; d.cpu = argmax_kernel<true>; d.differentiable = false; }
FW_DEFINE_OP(argmin) { d.meta = argmax_meta; d.cpu = argmax_kernel<false>; d.differentiable = false; }
FW_DEFINE_OP(all) { d.meta = logical_meta; d.cpu = logical_kernel<true>; d.differentiable = false; }
FW_DEFINE_OP(any) { d.meta = logical_meta; d.cpu = logical_kernel<false>; d.differentiable = false; }
FW_DEFINE_OP(count_nonzero) { d.meta = count_nonzero_meta; d.cpu = count_nonzero_kernel; d.differentiable = false; }

// ---- public API

namespace {
OpAttrs dim_attrs(std::optional<int64_t> dim, bool keepdim) {
  OpAttrs a;
  a.flags = (keepdim ? kKeepDim : 0) | (dim ? kHasDim : 0);
  a.i0 = dim.value_or(0);
  return a;
}
std::tuple<Tensor, Tensor> two(Outs o) { return {std::move(o[0]), std::move(o[1])}; }
}  // namespace

Tensor sum(const Tensor& t, std::optional<ScalarType> dtype) { return dispatch1(OpId::sum, {t}, reduce_attrs({}, false, dtype)); }
Tensor sum(const Tensor& t, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return dispatch1(OpId::sum, {t}, reduce_attrs(dim, keepdim, dtype));
}
Tensor mean(const Tensor& t, std::optional<ScalarType> dtype) { return dispatch1(OpId::mean, {t}, reduce_attrs({}, false, dtype)); }
Tensor mean(const Tensor& t, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return dispatch1(OpId::mean, {t}, reduce_attrs(dim, keepdim, dtype));
}
Tensor prod(const Tensor& t, std::optional<ScalarType> dtype) {
  if (FW_UNLIKELY(tls().autocast))  // autocast's float32 list
    return autocast_float32([](auto&&... a) { return prod(a...); }, t, dtype);
  return dispatch1(OpId::prod, {t}, reduce_attrs({}, false, dtype));
}
Tensor prod(const Tensor& t, int64_t dim, bool keepdim, std::optional<ScalarType> dtype) {
  if (FW_UNLIKELY(tls().autocast))
    return autocast_float32([](auto&&... a) { return prod(a...); }, t, dim, keepdim, dtype);
  return dispatch1(OpId::prod, {t}, reduce_attrs({dim}, keepdim, dtype));
}
Tensor amax(const Tensor& t, IntArrayRef dim, bool keepdim) { return dispatch1(OpId::amax, {t}, reduce_attrs(dim, keepdim)); }
Tensor amin(const Tensor& t, IntArrayRef dim, bool keepdim) { return dispatch1(OpId::amin, {t}, reduce_attrs(dim, keepdim)); }
Tensor max(const Tensor& t) {
  check_reduce_nonempty(t, {}, true, "max");
  return amax(t);
}
Tensor min(const Tensor& t) {
  check_reduce_nonempty(t, {}, true, "min");
  return amin(t);
}
std::tuple<Tensor, Tensor> max(const Tensor& t, int64_t dim, bool keepdim) {
  return two(dispatch(OpId::max, {t}, reduce_attrs({dim}, keepdim)));
}
std::tuple<Tensor, Tensor> min(const Tensor& t, int64_t dim, bool keepdim) {
  return two(dispatch(OpId::min, {t}, reduce_attrs({dim}, keepdim)));
}
Tensor argmax(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  return dispatch1(OpId::argmax, {t}, dim_attrs(dim, keepdim));
}
Tensor argmin(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  return dispatch1(OpId::argmin, {t}, dim_attrs(dim, keepdim));
}
Tensor all(const Tensor& t) { return dispatch1(OpId::all, {t}, reduce_attrs({}, false)); }
Tensor all(const Tensor& t, int64_t dim, bool keepdim) { return dispatch1(OpId::all, {t}, reduce_attrs({dim}, keepdim)); }
Tensor any(const Tensor& t) { return dispatch1(OpId::any, {t}, reduce_attrs({}, false)); }
Tensor any(const Tensor& t, int64_t dim, bool keepdim) { return dispatch1(OpId::any, {t}, reduce_attrs({dim}, keepdim)); }
Tensor count_nonzero(const Tensor& t, std::optional<int64_t> dim) {
  return dispatch1(OpId::count_nonzero, {t}, reduce_attrs(dim ? DimVec{*dim} : DimVec(), false));
}

Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return fw::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return fw::sum(*this, dim, keepdim, dtype);
}
Tensor Tensor::mean(std::optional<ScalarType> dtype) const { return fw::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return fw::mean(*this, dim, keepdim, dtype);
}
Tensor Tensor::prod(std::optional<ScalarType> dtype) const { return fw::prod(*this, dtype); }
Tensor Tensor::prod(int64_t dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return fw::prod(*this, dim, keepdim, dtype);
}
Tensor Tensor::max() const { return fw::max(*this); }
std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return fw::max(*this, dim, keepdim); }
Tensor Tensor::min() const { return fw::min(*this); }
std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return fw::min(*this, dim, keepdim); }
Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const { return fw::amax(*this, dim, keepdim); }
Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const { return fw::amin(*this, dim, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return fw::argmax(*this, dim, keepdim); }
Tensor Tensor::argmin(std::optional<int64_t> dim, bool keepdim) const { return fw::argmin(*this, dim, keepdim); }
Tensor Tensor::all() const { return fw::all(*this); }
Tensor Tensor::all(int64_t dim, bool keepdim) const { return fw::all(*this, dim, keepdim); }
Tensor Tensor::any() const { return fw::any(*this); }
Tensor Tensor::any(int64_t dim, bool keepdim) const { return fw::any(*this, dim, keepdim); }

}  // namespace fw
