// Ops that work along one dim row by row: sort (stable), topk, median (with indices) and the
// scans cumsum / cumprod. argsort and the all-reduce median compose these.
//
// Note [NaN order]
// As PyTorch, NaN compares greater than every number (it sorts last ascending, first
// descending, and topk's largest picks it first); NaNs are equal to each other.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/convert.h"
#include "core/ops/composite_util.h"
#include "core/ops/reduce.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

// A contiguous tensor seen as [outer, n, inner] around dim: element (o, k, i) is at
// o * n * inner + k * inner + i.
struct Rows {
  int64_t outer = 1, n = 1, inner = 1;
  int64_t count() const { return outer * inner; }
  int64_t base(int64_t r) const { return (r / inner) * n * inner + r % inner; }
};

Rows rows_of(IntArrayRef sizes, int64_t dim) {
  Rows r;
  for (int64_t d = 0; d < int64_t(sizes.size()); d++) {
    if (d < dim) r.outer *= sizes[d];
    else if (d == dim) r.n = sizes[d];
    else r.inner *= sizes[d];
  }
  return r;
}

template <class T>
bool is_nan(T v) {
  if constexpr (std::is_floating_point_v<T>) return v != v;
  else return false;
}

// Strict "a before b" in ascending order, NaN last (Note [NaN order]).
template <class T>
bool less_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) return !is_nan(a) && (is_nan(b) || a < b);
  else return a < b;
}

template <class F>
void for_rows(const Rows& r, int64_t work_per_row, const F& f) {
  int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(work_per_row, 1));
  parallel_for(0, r.count(), grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; i++) f(i);
  });
}

// ---- sort: i0 = dim, flags bit 0 = descending. Outputs (values, int64 indices).
void sort_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  FW_CHECK(!t.is_complex(), "[sort] not implemented for dtype ", dtype_str(t.dtype()));
  wrap_dim(c.a.i0, t.dim(), "sort");
  m.push_back({DimVec(t.sizes()), t.dtype()});
  m.push_back({DimVec(t.sizes()), kLong});
}

// Copies row r of x into pairs (value, index).
template <class T>
void load_row(std::vector<std::pair<T, int64_t>>& v, const T* x, const Rows& R, int64_t r) {
  const T* p = x + R.base(r);
  v.resize(size_t(R.n));
  for (int64_t k = 0; k < R.n; k++) v[size_t(k)] = {p[k * R.inner], k};
}

template <class T>
void store_row(const std::vector<std::pair<T, int64_t>>& v, int64_t len, T* y, int64_t* yi, const Rows& R,
               int64_t r) {
  int64_t b = (r / R.inner) * len * R.inner + r % R.inner;
  for (int64_t k = 0; k < len; k++) {
    y[b + k * R.inner] = v[size_t(k)].first;
    yi[b + k * R.inner] = v[size_t(k)].second;
  }
}

void sort_kernel(const OpCall& c, Outs& o) {
  const Tensor& in = c.in[0];
  ScalarType xt = opmath_dtype(in.dtype());
  Tensor x = cast(in, xt).contiguous();
  Rows R = rows_of(in.sizes(), wrap_dim(c.a.i0, in.dim(), "sort"));
  bool desc = c.a.flags & 1;
  Tensor y = out_buffer(o[0], xt);
  visit_real(xt, "sort", [&]<class T>() {
    const T* xp = x.data_ptr<T>();
    T* yp = y.data_ptr<T>();
    int64_t* ip = o[1].data_ptr<int64_t>();
    for_rows(R, R.n * 8, [&](int64_t r) {
      std::vector<std::pair<T, int64_t>> v;
      load_row(v, xp, R, r);
      if (desc)
        std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return less_nan(b.first, a.first); });
      else
        std::stable_sort(v.begin(), v.end(), [](auto& a, auto& b) { return less_nan(a.first, b.first); });
      store_row(v, R.n, yp, ip, R, r);
    });
  });
  finish_out(o[0], y);
}

// ---- topk: i0 = k, i1 = dim, flags bit 0 = largest, bit 1 = sorted. The result is always
// sorted (allowed for sorted=false); ties keep the lower index first.
void topk_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  FW_CHECK(!t.is_complex(), "[topk] not implemented for dtype ", dtype_str(t.dtype()));
  int64_t dim = wrap_dim(c.a.i1, t.dim(), "topk");
  int64_t n = t.dim() == 0 ? 1 : t.sizes()[dim];
  FW_CHECK(c.a.i0 >= 0 && c.a.i0 <= n, "[topk] selected index k out of range (k = ", c.a.i0, ", size ", n, ")");
  DimVec s(t.sizes());
  if (t.dim() > 0) s[dim] = c.a.i0;
  m.push_back({s, t.dtype()});
  m.push_back({s, kLong});
}

void topk_kernel(const OpCall& c, Outs& o) {
  const Tensor& in = c.in[0];
  ScalarType xt = opmath_dtype(in.dtype());
  Tensor x = cast(in, xt).contiguous();
  Rows R = rows_of(in.sizes(), wrap_dim(c.a.i1, in.dim(), "topk"));
  int64_t k = c.a.i0;
  bool largest = c.a.flags & 1;
  Tensor y = out_buffer(o[0], xt);
  if (k == 0) return;
  visit_real(xt, "topk", [&]<class T>() {
    const T* xp = x.data_ptr<T>();
    T* yp = y.data_ptr<T>();
    int64_t* ip = o[1].data_ptr<int64_t>();
    auto before = [largest](const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) {
      bool lt = largest ? less_nan(b.first, a.first) : less_nan(a.first, b.first);
      bool gt = largest ? less_nan(a.first, b.first) : less_nan(b.first, a.first);
      return lt || (!gt && a.second < b.second);
    };
    for_rows(R, R.n * 4, [&](int64_t r) {
      std::vector<std::pair<T, int64_t>> v;
      if (k * 8 <= R.n) {
        // Small k: a heap of the k best; most elements lose one comparison with its worst.
        const T* p = xp + R.base(r);
        v.reserve(size_t(k));
        for (int64_t j = 0; j < R.n; j++) {
          std::pair<T, int64_t> e{p[j * R.inner], j};
          if (int64_t(v.size()) < k) {
            v.push_back(e);
            std::push_heap(v.begin(), v.end(), before);
          } else if (before(e, v.front())) {
            std::pop_heap(v.begin(), v.end(), before);
            v.back() = e;
            std::push_heap(v.begin(), v.end(), before);
          }
        }
        std::sort_heap(v.begin(), v.end(), before);
      } else {
        load_row(v, xp, R, r);
        if (k < R.n) std::nth_element(v.begin(), v.begin() + (k - 1), v.end(), before);
        std::sort(v.begin(), v.begin() + k, before);
      }
      store_row(v, k, yp, ip, R, r);
    });
  });
  finish_out(o[0], y);
}

// ---- median along a dim: i0 = dim, flags = keepdim. The lower median; a row with NaN gives
// NaN at the first NaN's index; among equal values the lowest index is reported.
void median_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  FW_CHECK(!t.is_complex(), "[median] not implemented for dtype ", dtype_str(t.dtype()));
  DimVec rd = reduce_dims(t, {c.a.i0}, "median");
  check_reduce_nonempty(t, rd, false, "median");
  DimVec s = reduced_shape(t, {c.a.i0}, c.a.flags & kKeepDim, "median");
  m.push_back({s, t.dtype()});
  m.push_back({s, kLong});
}

void median_kernel(const OpCall& c, Outs& o) {
  const Tensor& in = c.in[0];
  ScalarType xt = opmath_dtype(in.dtype());
  Tensor x = cast(in, xt).contiguous();
  Rows R = rows_of(in.sizes(), wrap_dim(c.a.i0, in.dim(), "median"));
  Tensor y = out_buffer(o[0], xt);
  visit_real(xt, "median", [&]<class T>() {
    const T* xp = x.data_ptr<T>();
    T* yp = y.data_ptr<T>();
    int64_t* ip = o[1].data_ptr<int64_t>();
    for_rows(R, R.n * 2, [&](int64_t r) {
      std::vector<std::pair<T, int64_t>> v;
      load_row(v, xp, R, r);
      auto nan = std::find_if(v.begin(), v.end(), [](auto& p) { return is_nan(p.first); });
      if (nan != v.end()) {
        yp[r] = nan->first;
        ip[r] = nan->second;
        return;
      }
      auto mid = v.begin() + (R.n - 1) / 2;
      std::nth_element(v.begin(), mid, v.end());
      yp[r] = mid->first;
      ip[r] = mid->second;
    });
  });
  finish_out(o[0], y);
}

// ---- cumsum / cumprod: i0 = dim, dtype = result dtype (input is cast to it first).
ScalarType scan_dtype(const Tensor& t, const OpAttrs& a) {
  if (a.has_dtype()) return a.dtype;
  return is_integral(t.dtype(), true) ? kLong : t.dtype();
}

void scan_meta(const OpCall& c, Metas& m) {
  wrap_dim(c.a.i0, c.in[0].dim(), c.def.name);
  m.push_back({DimVec(c.in[0].sizes()), scan_dtype(c.in[0], c.a)});
}

template <class T>
using scan_acc_t = std::conditional_t<std::is_floating_point_v<T>, double,
                                      std::conditional_t<is_complex_v<T>, std::complex<double>, int64_t>>;

template <bool Prod, class A>
A scan_op(A a, A x) {
  if constexpr (std::is_integral_v<A>) return Prod ? A(uint64_t(a) * uint64_t(x)) : A(uint64_t(a) + uint64_t(x));
  else return Prod ? a * x : a + x;
}

template <class A, class W>
W narrow_to(const A& a) {
  if constexpr (is_complex_v<W>) return W(real_value_t<W>(a.real()), real_value_t<W>(a.imag()));
  else return W(a);
}

// Scans rows of R; an outer slab with inner > 1 scans a block of columns at once so the
// inner loop runs over contiguous memory.
template <bool Prod, class T>
void scan_rows(const T* x, T* y, const Rows& R) {
  using A = scan_acc_t<T>;
  if (R.inner == 1) {  // contiguous rows: one running value per row
    for_rows(R, R.n, [&](int64_t r) {
      A acc = A(Prod ? 1 : 0);
      const T* xp = x + r * R.n;
      T* yp = y + r * R.n;
      for (int64_t k = 0; k < R.n; k++) {
        acc = scan_op<Prod>(acc, A(xp[k]));
        yp[k] = narrow_to<A, T>(acc);
      }
    });
    return;
  }
  constexpr int64_t B = 256;
  int64_t nb = (R.inner + B - 1) / B;
  int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(R.n * std::min(R.inner, B), 1));
  parallel_for(0, R.outer * nb, grain, [&](int64_t b, int64_t e) {
    A acc[B];
    for (int64_t t = b; t < e; t++) {
      int64_t o = t / nb, j0 = (t % nb) * B, len = std::min(B, R.inner - j0);
      int64_t base = o * R.n * R.inner + j0;
      for (int64_t j = 0; j < len; j++) acc[j] = A(Prod ? 1 : 0);
      for (int64_t k = 0; k < R.n; k++) {
        const T* xp = x + base + k * R.inner;
        T* yp = y + base + k * R.inner;
        for (int64_t j = 0; j < len; j++) {
          acc[j] = scan_op<Prod>(acc[j], A(xp[j]));
          yp[j] = narrow_to<A, T>(acc[j]);
        }
      }
    }
  });
}

template <bool Prod>
void scan_kernel(const OpCall& c, Outs& o) {
  const Tensor& in = c.in[0];
  ScalarType rt = o[0].dtype();
  ScalarType xt = is_integral(rt, true) ? kLong : opmath_dtype(rt);
  Tensor x = cast(cast(in, rt), xt).contiguous();
  Rows R = rows_of(in.sizes(), wrap_dim(c.a.i0, in.dim(), c.def.name));
  Tensor y = out_buffer(o[0], xt);
  visit_all(xt, c.def.name, [&]<class T>() { scan_rows<Prod, T>(x.data_ptr<T>(), y.data_ptr<T>(), R); });
  finish_out(o[0], y);
}

// ---- vjps (public ops only)

// sort/topk: each value's gradient goes back to the position it came from.
void scatter_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r, int64_t dim) {
  if (!g[0].defined()) return;
  const Tensor& x = c.in[0];
  Tensor gy = g[0].dtype() == x.dtype() ? g[0] : g[0].to(x.dtype());
  if (x.dim() == 0) {
    r[0] = gy.numel() ? gy.reshape({}) : fw::zeros_like(x);
    return;
  }
  r[0] = fw::scatter(fw::zeros_like(x), dim, c.out[1], gy);
}

// Reversed cumulative sum along dim, as total - cumsum + v (differentiable with this family's
// own ops).
Tensor rev_cumsum(const Tensor& v, int64_t dim) { return v.sum({dim}, true) - v.cumsum(dim) + v; }

void cumsum_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  r[0] = rev_cumsum(g[0].dtype() == x.dtype() ? g[0] : g[0].to(x.dtype()), c.a.i0);
}

// cumprod: d out_k / d x_i = out_k / x_i away from zeros. Past a slice's first zero every
// derivative is 0; at the first zero z it is sum_{k>=z} g_k * prod_{j<=k, j!=z} x_j, which is
// the reversed cumsum of g times the cumprod of x with that zero replaced by 1.
void cumprod_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  int64_t d = c.a.i0;
  Tensor gy = g[0].dtype() == x.dtype() ? g[0] : g[0].to(x.dtype());
  Tensor out = c.out[0].dtype() == x.dtype() ? c.out[0] : c.out[0].to(x.dtype());
  Tensor zero = x == 0;
  Tensor first = zero & (zero.cumsum(d) == 1);
  Tensor at_first = rev_cumsum(gy * fw::where(first, 1, x).cumprod(d), d);
  Tensor elsewhere = rev_cumsum(gy * out, d) / fw::where(zero, 1, x);
  r[0] = fw::where(zero, fw::where(first, at_first, fw::zeros_like(at_first)), elsewhere);
}

void median_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  if (!g[0].defined()) return;
  const Tensor& x = c.in[0];
  bool kd = c.a.flags & kKeepDim;
  r[0] = grad_expand(g[0], x, {c.a.i0}, kd) * index_mask(x, c.a.i0, c.out[1], kd);
}

}  // namespace

FW_DEFINE_OP(sort) {
  d.meta = sort_meta;
  d.cpu = sort_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { scatter_vjp(c, g, r, c.a.i0); };
  d.vjp_uses_out = true;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(topk) {
  d.meta = topk_meta;
  d.cpu = topk_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { scatter_vjp(c, g, r, c.a.i1); };
  d.vjp_uses_out = true;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(median) {
  d.meta = median_meta;
  d.cpu = median_kernel;
  d.vjp = median_vjp;
  d.vjp_uses_out = true;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(cumsum) {
  d.meta = scan_meta;
  d.cpu = scan_kernel<false>;
  d.vjp = cumsum_vjp;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(cumprod) {
  d.meta = scan_meta;
  d.cpu = scan_kernel<true>;
  d.vjp = cumprod_vjp;
  d.vjp_uses_out = true;
}

// ---- public API

namespace {
std::tuple<Tensor, Tensor> two(Outs o) { return {std::move(o[0]), std::move(o[1])}; }
}  // namespace

std::tuple<Tensor, Tensor> sort(const Tensor& t, int64_t dim, bool descending) {
  OpAttrs a;
  a.i0 = dim;
  a.flags = descending ? 1 : 0;
  return two(dispatch(OpId::sort, {t}, a));
}
Tensor argsort(const Tensor& t, int64_t dim, bool descending) { return std::get<1>(fw::sort(t, dim, descending)); }
std::tuple<Tensor, Tensor> topk(const Tensor& t, int64_t k, int64_t dim, bool largest, bool sorted) {
  OpAttrs a;
  a.i0 = k;
  a.i1 = dim;
  a.flags = (largest ? 1 : 0) | (sorted ? 2 : 0);
  return two(dispatch(OpId::topk, {t}, a));
}
std::tuple<Tensor, Tensor> median(const Tensor& t, int64_t dim, bool keepdim) {
  OpAttrs a;
  a.i0 = dim;
  a.flags = keepdim ? kKeepDim : 0;
  return two(dispatch(OpId::median, {t}, a));
}
Tensor median(const Tensor& t) {
  if (t.numel() == 0) return fw::full({}, NAN, TensorOptions(t.dtype()));
  Tensor flat = t.reshape({-1});
  return evenly_distributed(flat, std::get<0>(fw::median(flat, 0)));
}
Tensor cumsum(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype) {
  OpAttrs a;
  a.i0 = dim;
  if (dtype) a.dtype = *dtype;
  return dispatch1(OpId::cumsum, {t}, a);
}
Tensor cumprod(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype) {
  OpAttrs a;
  a.i0 = dim;
  if (dtype) a.dtype = *dtype;
  return dispatch1(OpId::cumprod, {t}, a);
}

std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const { return fw::sort(*this, dim, descending); }
Tensor Tensor::argsort(int64_t dim, bool descending) const { return fw::argsort(*this, dim, descending); }
std::tuple<Tensor, Tensor> sort(const Tensor& t, std::optional<bool>, int64_t dim, bool descending) {
  return sort(t, dim, descending);
}
Tensor argsort(const Tensor& t, bool, int64_t dim, bool descending) { return argsort(t, dim, descending); }
std::tuple<Tensor, Tensor> Tensor::sort(std::optional<bool> stable, int64_t dim, bool descending) const {
  return fw::sort(*this, stable, dim, descending);
}
Tensor Tensor::argsort(bool stable, int64_t dim, bool descending) const {
  return fw::argsort(*this, stable, dim, descending);
}
std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return fw::topk(*this, k, dim, largest, sorted);
}
Tensor Tensor::median() const { return fw::median(*this); }
std::tuple<Tensor, Tensor> Tensor::median(int64_t dim, bool keepdim) const { return fw::median(*this, dim, keepdim); }
Tensor Tensor::cumsum(int64_t dim, std::optional<ScalarType> dtype) const { return fw::cumsum(*this, dim, dtype); }
Tensor Tensor::cumprod(int64_t dim, std::optional<ScalarType> dtype) const { return fw::cumprod(*this, dim, dtype); }

}  // namespace fw
