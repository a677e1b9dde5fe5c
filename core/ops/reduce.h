// Shared plumbing for reductions over a list of dims: dim handling, output shapes, and the
// strided reduction engine used by every reduction kernel (reduce.cpp, reduce_stats.cpp).
//
// Note [Reduction engine]
// A reduction is split into kept dims K (the outputs, in output order) and reduced dims R,
// each coalesced into as few dims as the strides allow (no copy of the input):
// - row mode: the innermost R dim is contiguous (or nothing better applies). Each output walks
//   its R elements in runs; contiguous runs use kLanes independent accumulators so the
//   compiler vectorises sum/max/any... over the run.
// - column mode: the innermost K dim is contiguous and the innermost R dim is not (reducing
//   over outer dims). A block of neighbouring outputs is accumulated together while R is
//   walked, which vectorises across outputs instead of transposing the input.
// Work is split over outputs with parallel_for; when there are fewer outputs than threads and
// R is long, R itself is split into chunks whose partial accumulators are merged in order.
// Reducers that report an element index (argmax, max.dim) keep R in logical order so the
// index is the flat logical position; the others sort R by stride first, which lets
// permuted inputs reduce in place.
//
// A reducer is a struct with `acc_t`, `kLanes` (1 = no lane splitting), `kIndexed`,
// `init()`, `step(acc&, T x, int64_t flat_index)` and `merge(acc&, const acc& later)`.
#pragma once
#include <memory>
#include <vector>

#include "core/op.h"
#include "core/parallel.h"

namespace fw::detail {

// A reduction viewed as a [outer, inner] problem: out[i] = reduce(in[i, 0..inner)).
struct ReducePlan {
  DimVec out_sizes;     // with or without the kept dims, as requested
  Tensor rows;          // contiguous [outer, inner] view of the (permuted) input
  int64_t outer = 1, inner = 1;
};

// dims empty = all dims. Duplicate dims and out-of-range dims raise with op's name.
DimVec reduce_dims(const Tensor& t, IntArrayRef dims, const char* op);
DimVec reduced_shape(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op);
ReducePlan make_reduce_plan(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op);

// Attrs of the dim-list reductions: ints = dims (empty = all), flags bit 0 = keepdim, dtype.
constexpr uint32_t kKeepDim = 1;
OpAttrs reduce_attrs(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype = std::nullopt);
// Compute dtype of an input (Note [16-bit floats compute in float]).
inline ScalarType opmath_dtype(ScalarType t) { return (t == kHalf || t == kBFloat16) ? kFloat : t; }
// out itself when it has dtype wt, else a fresh contiguous buffer of its shape; finish_out
// copies the buffer back.
Tensor out_buffer(const Tensor& out, ScalarType wt);
void finish_out(Tensor& out, const Tensor& buf);
// max/min/argmax/median-style checks: an empty input needs a dim, and reduced dims need size.
void check_reduce_nonempty(const Tensor& t, IntArrayRef rdims, bool all_dims, const char* op);

// The gradient g of a reduction of x over dims, broadcast back to x's shape and dtype.
Tensor grad_expand(const Tensor& g, const Tensor& x, IntArrayRef dims, bool keepdim);
// A tensor shaped like x that is true where x's index along dim equals idx (idx has the
// reduced shape, keepdim or not): the one-hot scatter pattern of max/min/median's indices.
Tensor index_mask(const Tensor& x, int64_t dim, const Tensor& idx, bool keepdim);

// Kept and reduced dims of a strided input, coalesced; strides in elements.
struct ReduceGeom {
  DimVec ksizes, kstrides;
  DimVec rsizes, rstrides;
  int64_t n_out = 1, n_red = 1;
};
// rdims: sorted, wrapped dims to reduce (reduce_dims). logical: keep R in logical order.
ReduceGeom reduce_geom(const Tensor& x, IntArrayRef rdims, bool logical);

// Offset (in elements) of flat index i over sizes/strides.
inline int64_t flat_offset(int64_t i, const DimVec& sizes, const DimVec& strides) {
  int64_t off = 0;
  for (int64_t d = int64_t(sizes.size()) - 1; d >= 0 && i > 0; d--) {
    off += (i % sizes[d]) * strides[d];
    i /= sizes[d];
  }
  return off;
}

// Walks a multi-index over sizes/strides starting at flat index `start`.
struct Odometer {
  const DimVec& sizes;
  const DimVec& strides;
  DimVec idx;
  int64_t off = 0;
  Odometer(const DimVec& s, const DimVec& st, int64_t start) : sizes(s), strides(st), idx(s.size(), 0) {
    for (int64_t d = int64_t(s.size()) - 1; d >= 0; d--) {
      idx[d] = start % s[d];
      start /= s[d];
      off += idx[d] * st[d];
    }
  }
  void next() {
    for (int64_t d = int64_t(sizes.size()) - 1; d >= 0; d--) {
      off += strides[d];
      if (++idx[d] < sizes[d]) return;
      off -= idx[d] * strides[d];
      idx[d] = 0;
    }
  }
};

// Reduces p[0], p[s], ... p[(n-1)s] into a; flat indices start at i0. A reducer may provide
// run(acc&, const T*, n, i0) for contiguous runs (hand-vectorised loops); otherwise kLanes
// accumulators let the compiler vectorise step(). run() returns false to decline.
template <class Red, class T>
inline void reduce_run(const Red& r, typename Red::acc_t& a, const T* p, int64_t n, int64_t s, int64_t i0) {
  constexpr int W = Red::kLanes;
  int64_t i = 0;
  if constexpr (requires { r.run(a, p, n, i0); }) {
    if (s == 1 && r.run(a, p, n, i0)) return;
  }
  if constexpr (W > 1) {
    if (s == 1 && n >= 2 * W) {
      typename Red::acc_t l[W];
      for (int k = 0; k < W; k++) l[k] = r.init();
      for (; i + W <= n; i += W)
        for (int k = 0; k < W; k++) r.step(l[k], p[i + k], i0 + i + k);
      for (int k = 0; k < W; k++) r.merge(a, l[k]);
    }
  }
  if (s == 1) {
    for (; i < n; i++) r.step(a, p[i], i0 + i);
  } else {
    for (; i < n; i++) r.step(a, p[i * s], i0 + i);
  }
}

// The max (IsMax) or min of p[0..n) ignoring NaN, in two vectors' worth of lanes; nan reports
// whether a NaN was seen (as a separate blend, which GCC vectorises where a combined
// compare-or-NaN select stays scalar). n > 0.
template <bool IsMax, class T>
T vec_extreme(const T* p, int64_t n, bool& nan) {
  constexpr int W = 128 / sizeof(T);
  T m[W], z[W];
  for (int k = 0; k < W; k++) {
    m[k] = p[0];
    z[k] = T(0);
  }
  auto pick = [](T v, T cur) { return IsMax ? (v > cur ? v : cur) : (v < cur ? v : cur); };
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    const T* q = p + i;
    for (int k = 0; k < W; k++) m[k] = pick(q[k], m[k]);
    if constexpr (std::is_floating_point_v<T>)
      for (int k = 0; k < W; k++) z[k] = q[k] != q[k] ? T(1) : z[k];
  }
  for (; i < n; i++) {
    m[0] = pick(p[i], m[0]);
    if constexpr (std::is_floating_point_v<T>) z[0] = p[i] != p[i] ? T(1) : z[0];
  }
  bool any = false;
  for (int k = 0; k < W; k++) {
    any = any || z[k] != T(0);
    m[0] = pick(m[k], m[0]);
  }
  nan = any;
  return m[0];
}

// Row mode: reduces R flat range [rb, re) for the output at base pointer p.
template <class Red, class T>
void reduce_row_range(const Red& r, typename Red::acc_t& a, const T* p, const ReduceGeom& g, int64_t rb,
                      int64_t re) {
  int64_t inner = g.rsizes.back(), is = g.rstrides.back();
  while (rb < re) {
    int64_t j = rb % inner;
    int64_t n = std::min(inner - j, re - rb);
    reduce_run(r, a, p + flat_offset(rb, g.rsizes, g.rstrides), n, is, rb);
    rb += n;
  }
}

// Column mode: accumulates outputs [j0, j0+len) of the contiguous inner K dim over R [rb, re),
// four rows per pass so each accumulator is loaded and stored once per four steps.
template <class Red, class T>
void reduce_cols(const Red& r, typename Red::acc_t* acc, const T* p, int64_t len, const ReduceGeom& g, int64_t rb,
                 int64_t re) {
  Odometer od(g.rsizes, g.rstrides, rb);
  int64_t ri = rb;
  for (; ri + 4 <= re; ri += 4) {
    const T* q[4];
    for (int u = 0; u < 4; u++, od.next()) q[u] = p + od.off;
    for (int64_t j = 0; j < len; j++) {
      typename Red::acc_t a = acc[j];
      r.step(a, q[0][j], ri);
      r.step(a, q[1][j], ri + 1);
      r.step(a, q[2][j], ri + 2);
      r.step(a, q[3][j], ri + 3);
      acc[j] = a;
    }
  }
  for (; ri < re; ri++, od.next()) {
    const T* q = p + od.off;
    for (int64_t j = 0; j < len; j++) r.step(acc[j], q[j], ri);
  }
}

inline int64_t reduce_splits(int64_t tasks, int64_t n_red) {
  int64_t nt = max_threads();
  if (tasks >= nt || n_red < 2 * kGrainSize || in_parallel_region() || omp_in_parallel()) return 1;
  return std::min<int64_t>(nt, n_red / kGrainSize);
}

// Runs reducer r over x (data of type T) with geometry g; write(o, acc) stores output o.
template <class T, class Red, class Write>
void run_reduce(const Tensor& x, const ReduceGeom& g, const Red& r, const Write& write) {
  using acc_t = typename Red::acc_t;
  if (g.n_out == 0) return;
  if (g.n_red == 0) {
    for (int64_t o = 0; o < g.n_out; o++) write(o, r.init());
    return;
  }
  const T* base = x.data_ptr<T>();
  bool column = !g.ksizes.empty() && g.kstrides.back() == 1 && g.rstrides.back() != 1;
  // Column blocks: as wide as possible (each row is then read as one long contiguous run)
  // while leaving a block per thread; at most 8192 accumulators.
  int64_t kin = column ? g.ksizes.back() : 1;
  int64_t nt = max_threads();
  int64_t B = std::min<int64_t>(kin, std::min<int64_t>(8192, std::max<int64_t>(512, (kin + nt - 1) / nt)));
  int64_t nb = (kin + B - 1) / B;
  int64_t tasks = column ? (g.n_out / kin) * nb : g.n_out;
  int64_t S = reduce_splits(tasks, g.n_red);
  int64_t per_task = B * g.n_red / S;
  // A plain array, not std::vector: vector<bool> packs bits, and threads writing neighbouring
  // partials of all()/any() would race on the same word.
  std::unique_ptr<acc_t[]> part(S > 1 ? new acc_t[size_t(S * g.n_out)] : nullptr);
  size_t nk = g.ksizes.empty() ? 0 : g.ksizes.size() - 1;
  DimVec kos(ArrayRef<int64_t>(g.ksizes.data(), nk)), kst(ArrayRef<int64_t>(g.kstrides.data(), nk));
  auto task = [&](int64_t t, acc_t* acc) {
    int64_t s = t % S, ti = t / S;
    int64_t rb = g.n_red * s / S, re = g.n_red * (s + 1) / S;
    if (!column) {
      acc_t a = r.init();
      reduce_row_range(r, a, base + flat_offset(ti, g.ksizes, g.kstrides), g, rb, re);
      if (S > 1) part[size_t(s * g.n_out + ti)] = a;
      else write(ti, a);
      return;
    }
    int64_t ko = ti / nb, j0 = (ti % nb) * B, len = std::min(B, kin - j0);
    for (int64_t j = 0; j < len; j++) acc[j] = r.init();
    reduce_cols(r, acc, base + flat_offset(ko, kos, kst) + j0, len, g, rb, re);
    for (int64_t j = 0; j < len; j++) {
      int64_t o = ko * kin + j0 + j;
      if (S > 1) part[size_t(s * g.n_out + o)] = acc[j];
      else write(o, acc[j]);
    }
  };
  parallel_for(0, tasks * S, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(per_task, 1)),
               [&](int64_t b, int64_t e) {
                 std::unique_ptr<acc_t[]> acc(column ? new acc_t[size_t(B)] : nullptr);
                 for (int64_t t = b; t < e; t++) task(t, acc.get());
               });
  if (S == 1) return;
  for (int64_t o = 0; o < g.n_out; o++) {
    acc_t a = part[size_t(o)];
    for (int64_t s = 1; s < S; s++) r.merge(a, part[size_t(s * g.n_out + o)]);
    write(o, a);
  }
}

// Runs r and stores fin(acc) into the contiguous buffer y (element type: fin's result).
template <class T, class Red, class Fin>
void reduce_to(const Tensor& x, const ReduceGeom& g, const Red& r, const Tensor& y, const Fin& fin) {
  using W = decltype(fin(std::declval<typename Red::acc_t>()));
  W* yp = y.data_ptr<W>();
  run_reduce<T>(x, g, r, [&](int64_t o, const typename Red::acc_t& a) { yp[o] = fin(a); });
}

}  // namespace fw::detail
