// Pooling: max_pool2d_with_indices, avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d (primitives
// over (N, C, H, W) or unbatched (C, H, W) inputs), their 1-D composites, which view (N, C, L) as
// (N, C, 1, L), the 3-d composites (Note [3-d pooling]), max unpooling and fractional max pooling
// (Note [Fractional max pooling]).
// attrs: ints = {kh, kw, sh, sw}; ints2 = {ph, pw}; ints3 = {dh, dw} (max); flags bit 0 = ceil_mode,
// bit 1 = count_include_pad (avg) or no indices (max: an empty second output, Note [Max pool
// without indices]); i0 = divisor_override (avg, 0 = none).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <vector>

#include "core/convert.h"
#include "core/layout.h"
#include "core/op.h"
#include "core/ops/separable.h"
#include "core/parallel.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

int64_t pool_out(int64_t in, int64_t k, int64_t pad, int64_t stride, int64_t dil, bool ceil_mode) {
  int64_t num = in + 2 * pad - dil * (k - 1) - 1 + (ceil_mode ? stride - 1 : 0);
  int64_t out = (num >= 0 ? num / stride : -((-num + stride - 1) / stride)) + 1;
  if (ceil_mode && (out - 1) * stride >= in + pad) out--;
  return out;
}

// Output o's window along one axis of an average pool: in-bounds taps [lo, hi) and the extent
// counted with padding (the window clipped at in + pad), PyTorch's count rules.
struct AvgWindow {
  int64_t lo, hi, padded;
};
inline AvgWindow avg_window(int64_t o, int64_t in, int64_t k, int64_t s, int64_t p) {
  int64_t a = o * s - p, b = std::min(a + k, in + p);
  return {std::max<int64_t>(a, 0), std::min(b, in), b - a};
}

// Output o's adaptive window along one axis: [floor(o * in / out), ceil((o + 1) * in / out)).
inline int64_t adaptive_lo(int64_t o, int64_t in, int64_t out) { return o * in / out; }
inline int64_t adaptive_hi(int64_t o, int64_t in, int64_t out) { return ((o + 1) * in + out - 1) / out; }

struct Pool2d {
  int64_t kh, kw, sh, sw, ph, pw, dh = 1, dw = 1;
  int64_t n = 1, c = 0, ih = 0, iw = 0, oh = 0, ow = 0;  // n = 1 for unbatched input
};

Pool2d pool_geometry(const OpCall& c, bool dilated) {
  const Tensor& x = c.in[0];
  const char* op = c.def.name;
  const DimVec& k = c.a.ints;
  Pool2d g{k[0], k[1], k[2], k[3], c.a.ints2[0], c.a.ints2[1]};
  if (dilated) g.dh = c.a.ints3[0], g.dw = c.a.ints3[1];
  FW_CHECK(g.kh > 0 && g.kw > 0, "[", op, "] kernel size should be greater than zero, but got kH: ", g.kh,
           " kW: ", g.kw);
  FW_CHECK(g.sh > 0 && g.sw > 0, "[", op, "] stride should be greater than zero, but got dH: ", g.sh, " dW: ", g.sw);
  FW_CHECK(g.dh > 0 && g.dw > 0, "[", op, "] dilation should be greater than zero, but got dilationH: ", g.dh,
           " dilationW: ", g.dw);
  FW_CHECK(g.ph >= 0 && g.pw >= 0 && g.ph <= g.kh / 2 && g.pw <= g.kw / 2, "[", op,
           "] pad should be at most half of kernel size, but got pad=", g.ph > g.kh / 2 ? g.ph : g.pw,
           " and kernel_size=", g.ph > g.kh / 2 ? g.kh : g.kw);
  bool ok = (x.dim() == 3 || x.dim() == 4) && x.size(-1) > 0 && x.size(-2) > 0 && x.size(-3) > 0;
  FW_CHECK(ok, "[", op, "] Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:",
           x.sizes());
  g.n = x.dim() == 4 ? x.size(0) : 1;
  g.c = x.size(-3), g.ih = x.size(-2), g.iw = x.size(-1);
  bool ceil_mode = c.a.flags & 1;
  g.oh = pool_out(g.ih, g.kh, g.ph, g.sh, g.dh, ceil_mode);
  g.ow = pool_out(g.iw, g.kw, g.pw, g.sw, g.dw, ceil_mode);
  FW_CHECK(g.oh >= 1 && g.ow >= 1, "[", op, "] Given input size: (", g.c, "x", g.ih, "x", g.iw,
           "). Calculated output size: (", g.c, "x", g.oh, "x", g.ow, "). Output size is too small");
  return g;
}

DimVec out_sizes(const Tensor& x, int64_t oh, int64_t ow) {
  DimVec s(x.sizes());
  s[s.size() - 2] = oh;
  s[s.size() - 1] = ow;
  return s;
}

void max_pool_meta(const OpCall& c, Metas& m) {
  Pool2d g = pool_geometry(c, true);
  FW_CHECK(c.in[0].dtype() != kBool && !c.in[0].is_complex(), "[max_pool2d] not implemented for dtype ",
           dtype_str(c.in[0].dtype()));
  m.push_back({out_sizes(c.in[0], g.oh, g.ow), c.in[0].dtype()});
  m.push_back({c.a.flags & 2 ? DimVec{0} : out_sizes(c.in[0], g.oh, g.ow), kLong});
}

// One tap of a window over a run of n consecutive outputs: the tap's input for output ow is
// r[ow * SW] at flat position base + ow * SW; it replaces the running max when strictly greater or
// NaN. Written without branches (| rather than ||, selects) so that it vectorises; random data
// made the branchy form mispredict on every other element (5 ms for W5's first pool).
// IDX = false (max_pool2d without autograd, Note [Max pool without indices]): values only.
template <int64_t SW, bool IDX, class T>
inline void max_tap(const T* __restrict r, int64_t sw, int64_t base, T* __restrict yo, int64_t* __restrict io,
                    int64_t n) {
  const int64_t st = SW > 0 ? SW : sw;
  for (int64_t ow = 0; ow < n; ow++) {
    T v = r[ow * st], b = yo[ow];
    bool take = (v > b) | (v != v);
    yo[ow] = take ? v : b;
    if constexpr (IDX) io[ow] = take ? base + ow * st : io[ow];
  }
}

template <bool IDX, class T>
void max_tap_any(const T* r, int64_t sw, int64_t base, T* yo, int64_t* io, int64_t n) {
  if (sw == 1) max_tap<1, IDX>(r, sw, base, yo, io, n);
  else if (sw == 2) max_tap<2, IDX>(r, sw, base, yo, io, n);
  else max_tap<0, IDX>(r, sw, base, yo, io, n);
}

// Note [Max pool in two passes]
// When the windows never leave the plane and each input row holds exactly ow windows
// (iw == ow * sw, so kw <= sw: W5's 2x2 pools), a block of planes laid end to end is one long
// run of windows along W. The first pass takes the max over each window's kw taps of every input
// row in that run (long vectorised loops, however short a row is) and remembers the winning
// column offset; the second combines kh of those row maxima per output. The winner is the same as
// the tap-by-tap loop's: "the last NaN, else the first maximum" over the taps in row-major order
// is kept when consecutive taps are grouped, so grouping a window's row first changes nothing.
template <int64_t SW, int64_t KW, bool IDX, class T>
void max_rows(const T* __restrict x, int64_t n, int64_t sw, int64_t kw, T* __restrict hv, int32_t* __restrict hj) {
  const int64_t st = SW > 0 ? SW : sw, k = KW > 0 ? KW : kw;
  for (int64_t m = 0; m < n; m++) {
    hv[m] = x[m * st];
    if constexpr (IDX) hj[m] = 0;
  }
  for (int64_t j = 1; j < k; j++)
    for (int64_t m = 0; m < n; m++) {
      T v = x[m * st + j], b = hv[m];
      bool take = (v > b) | (v != v);
      hv[m] = take ? v : b;
      if constexpr (IDX) hj[m] = take ? int32_t(j) : hj[m];
    }
}

// Planes [0, planes) of x (each ih x iw, iw == g.ow * g.sw) into y / idx, through a scratch
// buffer of row maxima.
template <bool IDX, class T>
void max_pool_planes_two_pass(const T* x, T* y, int64_t* idx, int64_t planes, const Pool2d& g) {
  // Geometry in locals: read through `g`, the stores below could alias it, which kept the
  // compiler from vectorising (and made it reload every field per element).
  const int64_t ih = g.ih, iw = g.iw, oh_n = g.oh, ow_n = g.ow, kh = g.kh, kw = g.kw, sh = g.sh, sw = g.sw;
  const int64_t rows = ih * ow_n;  // row maxima per plane
  const int64_t block = std::max<int64_t>(1, 8192 / rows);
  std::unique_ptr<T[]> hv(new T[size_t(block * rows)]);
  std::unique_ptr<int32_t[]> hj(new int32_t[size_t(block * rows)]);
  for (int64_t p0 = 0; p0 < planes; p0 += block) {
    const int64_t np = std::min(block, planes - p0), n = np * rows;
    const T* xs = x + p0 * ih * iw;
    if (sw == 2 && kw == 2) max_rows<2, 2, IDX>(xs, n, sw, kw, hv.get(), hj.get());
    else max_rows<0, 0, IDX>(xs, n, sw, kw, hv.get(), hj.get());
    for (int64_t p = 0; p < np; p++) {
      const T* __restrict hp = hv.get() + p * rows;
      const int32_t* __restrict jp = hj.get() + p * rows;
      T* yp = y + (p0 + p) * oh_n * ow_n;
      int64_t* ip = IDX ? idx + (p0 + p) * oh_n * ow_n : nullptr;
      for (int64_t oh = 0; oh < oh_n; oh++) {
        T* __restrict yo = yp + oh * ow_n;
        int64_t* __restrict io = IDX ? ip + oh * ow_n : nullptr;
        const int64_t r0 = oh * sh;
        for (int64_t ow = 0; ow < ow_n; ow++) {
          yo[ow] = hp[r0 * ow_n + ow];
          if constexpr (IDX) io[ow] = r0 * iw + ow * sw + jp[r0 * ow_n + ow];
        }
        for (int64_t i = 1; i < kh; i++) {
          const int64_t r = r0 + i;
          for (int64_t ow = 0; ow < ow_n; ow++) {
            T v = hp[r * ow_n + ow], b = yo[ow];
            bool take = (v > b) | (v != v);
            yo[ow] = take ? v : b;
            if constexpr (IDX) io[ow] = take ? r * iw + ow * sw + jp[r * ow_n + ow] : io[ow];
          }
        }
      }
    }
  }
}

bool two_pass_geometry(const Pool2d& g) {
  bool inside = g.ph == 0 && g.pw == 0 && g.dh == 1 && g.dw == 1 && (g.oh - 1) * g.sh + g.kh <= g.ih &&
                (g.ow - 1) * g.sw + g.kw <= g.iw;
  return inside && g.kw > 1 && g.iw == g.ow * g.sw;
}

// NaN wins (the last NaN of the window, as PyTorch); indices are flat positions in the input plane
// (not written when IDX is false).
template <bool IDX, class T>
void max_pool_plane(const T* x, T* y, int64_t* idx, const Pool2d& g) {
  // Windows that never leave the plane (no padding, no dilation, no ceil overhang; e.g. all of
  // W5's pools): tap by tap over a whole output row, which is the running max. Same taps in the
  // same order as the general loop below, so the same results.
  bool inside = g.ph == 0 && g.pw == 0 && g.dh == 1 && g.dw == 1 && (g.oh - 1) * g.sh + g.kh <= g.ih &&
                (g.ow - 1) * g.sw + g.kw <= g.iw;
  if (inside && g.oh > 0 && g.ow > 0) {
    const int64_t iw = g.iw, oh_n = g.oh, ow_n = g.ow, kh = g.kh, kw = g.kw, sh = g.sh, sw = g.sw;
    for (int64_t oh = 0; oh < oh_n; oh++) {
      T* __restrict yo = y + oh * ow_n;
      int64_t* __restrict io = IDX ? idx + oh * ow_n : nullptr;
      const int64_t base0 = oh * sh * iw;
      const T* __restrict r0 = x + base0;
      for (int64_t ow = 0; ow < ow_n; ow++) {
        yo[ow] = r0[ow * sw];
        if constexpr (IDX) io[ow] = base0 + ow * sw;
      }
      for (int64_t i = 0; i < kh; i++)
        for (int64_t j = i == 0 ? 1 : 0; j < kw; j++) {
          const int64_t base = (oh * sh + i) * iw + j;
          max_tap_any<IDX>(x + base, sw, base, yo, io, ow_n);
        }
    }
    return;
  }
  for (int64_t oh = 0; oh < g.oh; oh++) {
    int64_t h0 = oh * g.sh - g.ph;
    int64_t hf = h0;
    while (hf < 0) hf += g.dh;
    for (int64_t ow = 0; ow < g.ow; ow++) {
      int64_t w0 = ow * g.sw - g.pw;
      int64_t wf = w0;
      while (wf < 0) wf += g.dw;
      T best = -std::numeric_limits<T>::infinity();
      if constexpr (!std::numeric_limits<T>::has_infinity) best = std::numeric_limits<T>::lowest();
      int64_t bi = hf * g.iw + wf;
      for (int64_t i = 0; i < g.kh; i++) {
        int64_t h = h0 + i * g.dh;
        if (h < 0 || h >= g.ih) continue;
        for (int64_t j = 0; j < g.kw; j++) {
          int64_t w = w0 + j * g.dw;
          if (w < 0 || w >= g.iw) continue;
          T v = x[h * g.iw + w];
          if (v > best || v != v) best = v, bi = h * g.iw + w;
        }
      }
      y[oh * g.ow + ow] = best;
      if constexpr (IDX) idx[oh * g.ow + ow] = bi;
    }
  }
}

// Runs body<T>(x, y) with x, y contiguous in compute type (float for 16-bit floats); a result
// laid out otherwise (channels-last, Note [Channels-last results]) is filled from a row-major one.
template <class Body>
void pool_compute(const char* op, const Tensor& in, const Tensor& out, Body body) {
  ScalarType t = in.dtype(), ct = (t == kHalf || t == kBFloat16) ? kFloat : t;
  Tensor x = cast(in, ct).contiguous();
  Tensor y = ct == t && out.is_contiguous() ? out : make_tensor(out.sizes(), ct);
  visit_real(ct, op, [&]<class T>() { body.template operator()<T>(x.data_ptr<T>(), y.data_ptr<T>()); });
  if (!y.is_same(out)) out.copy_(y);
}

// Note [Max pool without indices]
// max_pool2d (values only) on an input no gradient will flow through asks the op for no indices
// (attrs bit 1): its second output is then empty and the kernels skip them. The int64 indices are
// twice the bytes of float32 values, so this cuts an inference pool's memory traffic by ~40%.
bool without_indices(const OpCall& c) { return c.a.flags & 2; }

// Note [Channels-last max pool]
// A channels-last input (N, H, W, C in memory) with channels-last results is pooled where it
// lies: each output position takes the max over its window's taps of whole C-long runs, tap by
// tap in row-major order with the plane kernels' rule (the last NaN, else the first maximum), so
// values and indices (flat h * W + w, per channel) are theirs.
template <bool IDX, class T>
void max_pool_channels_last(const T* x, T* y, int64_t* idx, const Pool2d& g) {
  const int64_t C = g.c, positions = g.n * g.oh * g.ow;
  parallel_for(0, positions, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(C * g.kh * g.kw, 1)),
               [&](int64_t b, int64_t e) {
    for (int64_t q = b; q < e; q++) {
      const int64_t ow = q % g.ow, oh = (q / g.ow) % g.oh, n = q / (g.ow * g.oh);
      T* __restrict yo = y + q * C;
      int64_t* __restrict io = IDX ? idx + q * C : nullptr;
      const T* xn = x + n * g.ih * g.iw * C;
      const int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
      int64_t hf = h0, wf = w0;
      while (hf < 0) hf += g.dh;
      while (wf < 0) wf += g.dw;
      T lowest = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                      : std::numeric_limits<T>::lowest();
      for (int64_t k = 0; k < C; k++) yo[k] = lowest;
      if constexpr (IDX)
        for (int64_t k = 0; k < C; k++) io[k] = hf * g.iw + wf;
      for (int64_t i = 0; i < g.kh; i++) {
        const int64_t h = h0 + i * g.dh;
        if (h < 0 || h >= g.ih) continue;
        for (int64_t j = 0; j < g.kw; j++) {
          const int64_t w = w0 + j * g.dw;
          if (w < 0 || w >= g.iw) continue;
          const T* __restrict r = xn + (h * g.iw + w) * C;
          const int64_t pos = h * g.iw + w;
          for (int64_t k = 0; k < C; k++) {
            T v = r[k], bst = yo[k];
            bool take = (v > bst) | (v != v);
            yo[k] = take ? v : bst;
            if constexpr (IDX) io[k] = take ? pos : io[k];
          }
        }
      }
    }
  });
}

template <bool IDX>
void max_pool_run(const OpCall& c, Outs& o, const Pool2d& g) {
  const Tensor& in = c.in[0];
  const bool cl = in.dim() == 4 && !in.is_contiguous() && in.is_contiguous(MemoryFormat::ChannelsLast) &&
                  o[0].is_contiguous(MemoryFormat::ChannelsLast) && in.dtype() != kHalf && in.dtype() != kBFloat16 &&
                  (!IDX || o[1].is_contiguous(MemoryFormat::ChannelsLast));
  if (cl) {
    visit_real(in.dtype(), "max_pool2d", [&]<class T>() {
      max_pool_channels_last<IDX>(in.data_ptr<T>(), o[0].data_ptr<T>(), IDX ? o[1].data_ptr<int64_t>() : nullptr, g);
    });
    return;
  }
  // Row-major indices, copied into a result laid out otherwise.
  Tensor ind = IDX && !o[1].is_contiguous() ? make_tensor(o[1].sizes(), kLong) : o[1];
  int64_t* pi = IDX ? ind.data_ptr<int64_t>() : nullptr;
  pool_compute("max_pool2d", c.in[0], o[0], [&]<class T>(const T* x, T* y) {
    const bool two_pass = two_pass_geometry(g);
    parallel_for(0, g.n * g.c, std::max<int64_t>(1, kGrainSize / (g.oh * g.ow * g.kh * g.kw)), [&](int64_t b, int64_t e) {
      if (two_pass) {
        max_pool_planes_two_pass<IDX>(x + b * g.ih * g.iw, y + b * g.oh * g.ow, IDX ? pi + b * g.oh * g.ow : nullptr,
                                      e - b, g);
        return;
      }
      for (int64_t p = b; p < e; p++)
        max_pool_plane<IDX>(x + p * g.ih * g.iw, y + p * g.oh * g.ow, IDX ? pi + p * g.oh * g.ow : nullptr, g);
    });
  });
  if (IDX && !ind.is_same(o[1])) o[1].copy_(ind);
}

void max_pool_kernel(const OpCall& c, Outs& o) {
  Pool2d g = pool_geometry(c, true);
  if (without_indices(c)) max_pool_run<false>(c, o, g);
  else max_pool_run<true>(c, o, g);
}

void avg_pool_meta(const OpCall& c, Metas& m) {
  Pool2d g = pool_geometry(c, false);
  const Tensor& x = c.in[0];
  FW_CHECK(x.dtype() != kBool && !x.is_complex(), "[avg_pool2d] not implemented for dtype ", dtype_str(x.dtype()));
  FW_CHECK(!(c.a.flags & 4) || c.a.i0 != 0, "[avg_pool2d] divisor must be not zero");
  m.push_back({out_sizes(x, g.oh, g.ow), x.dtype()});
}

template <class T>
using PoolAcc = std::conditional_t<std::is_floating_point_v<T>, double, int64_t>;

// Note [Average pool by rows]
// An output row's window sums are accumulated tap by tap over whole rows: for each input row h
// of the row's windows and each column tap j, acc[ow] += x[h][ow * sw - pw + j] over the ows whose
// tap lands inside the row (a vectorisable run; outside ones are padding). Each window still adds
// its taps in row-major order, in the accumulator type, so the sums are the per-window loop's bit
// for bit; the divisor (padded extent, in-bounds extent or divisor_override) comes after.
template <int64_t SW, class A, class T>
inline void add_row_taps(A* __restrict acc, const T* __restrict row, int64_t sw, int64_t off, int64_t lo, int64_t hi) {
  const int64_t st = SW > 0 ? SW : sw;
  for (int64_t ow = lo; ow < hi; ow++) acc[ow] += A(row[ow * st + off]);
}

void avg_pool_kernel(const OpCall& c, Outs& o) {
  Pool2d g = pool_geometry(c, false);
  bool include_pad = c.a.flags & 2, has_div = c.a.flags & 4;
  pool_compute("avg_pool2d", c.in[0], o[0], [&]<class T>(const T* x, T* y) {
    using A = PoolAcc<T>;
    const int64_t ih = g.ih, iw = g.iw, oh_n = g.oh, ow_n = g.ow, kh = g.kh, kw = g.kw, sh = g.sh, sw = g.sw,
                  ph = g.ph, pw = g.pw;
    // Per column tap j: the outputs [lo_j, hi_j) whose tap column ow * sw - pw + j is inside the row.
    std::vector<int64_t> lo(size_t(kw), 0), hi(size_t(kw), 0);
    for (int64_t j = 0; j < kw; j++) {
      int64_t off = j - pw;
      lo[size_t(j)] = std::min(ow_n, off >= 0 ? 0 : (-off + sw - 1) / sw);
      hi[size_t(j)] = std::max(lo[size_t(j)], std::min(ow_n, iw - off <= 0 ? 0 : (iw - off - 1) / sw + 1));
    }
    // Per output column: the padded and in-bounds widths of its window.
    std::vector<int64_t> wpad(size_t(ow_n), 0), win(size_t(ow_n), 0);
    for (int64_t ow = 0; ow < ow_n; ow++) {
      AvgWindow w = avg_window(ow, iw, kw, sw, pw);
      wpad[size_t(ow)] = w.padded;
      win[size_t(ow)] = w.hi - w.lo;
    }
    parallel_for(0, g.n * g.c, std::max<int64_t>(1, kGrainSize / (oh_n * ow_n * kh * kw)), [&](int64_t b, int64_t e) {
      std::vector<A> acc(size_t(ow_n), A(0));
      for (int64_t p = b; p < e; p++) {
        const T* xp = x + p * ih * iw;
        T* yp = y + p * oh_n * ow_n;
        for (int64_t oh = 0; oh < oh_n; oh++) {
          const AvgWindow hw = avg_window(oh, ih, kh, sh, ph);
          const int64_t h0 = hw.lo, h1 = hw.hi, hpad = hw.padded;
          std::fill(acc.begin(), acc.end(), A(0));
          for (int64_t h = h0; h < h1; h++)
            for (int64_t j = 0; j < kw; j++) {
              const T* row = xp + h * iw;  // row[ow * sw + j - pw] is tap j of window ow
              const int64_t l = lo[size_t(j)], u = hi[size_t(j)];
              if (sw == 1) add_row_taps<1>(acc.data(), row, sw, j - pw, l, u);
              else if (sw == 2) add_row_taps<2>(acc.data(), row, sw, j - pw, l, u);
              else add_row_taps<0>(acc.data(), row, sw, j - pw, l, u);
            }
          T* yo = yp + oh * ow_n;
          for (int64_t ow = 0; ow < ow_n; ow++) {
            int64_t div = has_div ? c.a.i0 : include_pad ? hpad * wpad[size_t(ow)] : (h1 - h0) * win[size_t(ow)];
            yo[ow] = div == 0 ? T(0) : T(acc[size_t(ow)] / A(div));
          }
        }
      }
    });
  });
}

// Input and output_size checks of the adaptive pools (op names the avg or max primitive).
void check_adaptive(const OpCall& c, const char* op) {
  const Tensor& x = c.in[0];
  FW_CHECK(c.a.ints.size() == 2, "[", op, "] output_size must be 2, got ", c.a.ints.size());
  FW_CHECK(x.dim() == 3 || x.dim() == 4, "[", op, "] Expected 3D or 4D tensor, but got ", x.sizes());
  for (int64_t d = x.dim() - 3; d < x.dim(); d++)
    FW_CHECK(x.size(d) > 0, "[", op, "] Expected input to have non-zero size for non-batch dimensions, "
             "but input has sizes ", x.sizes(), " with dimension ", d, " being empty");
  FW_CHECK(c.a.ints[0] >= 0 && c.a.ints[1] >= 0, "[", op, "] output_size must be non-negative, got ", c.a.ints);
  FW_CHECK(x.is_floating_point(), "[", op, "] not implemented for dtype ", dtype_str(x.dtype()));
}

void adaptive_meta(const OpCall& c, Metas& m) {
  check_adaptive(c, "adaptive_avg_pool2d");
  m.push_back({out_sizes(c.in[0], c.a.ints[0], c.a.ints[1]), c.in[0].dtype()});
}

// The sum of n consecutive values in double, in 32 independent lanes added together at the end:
// four vectors of 8 doubles, so that the additions' latency overlaps (one 8-lane chain ran at
// about half the memory bandwidth: adaptive_avg_pool3d(1) on [8,32,16,32,32] 0.60 ms, libtorch
// 0.42 ms).
template <class T>
double sum_run(const T* __restrict x, int64_t n) {
  constexpr int kLanes = 32;
  double lane[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; k++) lane[k] += double(x[i + k]);
  double s = 0;
  for (; i < n; i++) s += double(x[i]);
  for (int k = 0; k < kLanes; k++) s += lane[k];
  return s;
}

void adaptive_kernel(const OpCall& c, Outs& o) {
  const Tensor& in = c.in[0];
  int64_t ih = in.size(-2), iw = in.size(-1), oh = c.a.ints[0], ow = c.a.ints[1];
  int64_t planes = in.numel() / (ih * iw);
  pool_compute("adaptive_avg_pool2d", in, o[0], [&]<class T>(const T* x, T* y) {
    parallel_for(0, planes, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(ih * iw, 1)), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; p++) {
        for (int64_t i = 0; i < oh; i++) {
          const int64_t h0 = adaptive_lo(i, ih, oh), h1 = adaptive_hi(i, ih, oh);
          for (int64_t j = 0; j < ow; j++) {
            const int64_t w0 = adaptive_lo(j, iw, ow), w1 = adaptive_hi(j, iw, ow);
            const T* xp = x + p * ih * iw;
            double s = 0;
            if (w0 == 0 && w1 == iw) {
              s = sum_run(xp + h0 * iw, (h1 - h0) * iw);  // whole rows: one run
            } else {
              for (int64_t h = h0; h < h1; h++) s += sum_run(xp + h * iw + w0, w1 - w0);
            }
            y[p * oh * ow + i * ow + j] = T(s / double((h1 - h0) * (w1 - w0)));
          }
        }
      }
    });
  });
}

void adaptive_max_meta(const OpCall& c, Metas& m) {
  check_adaptive(c, "adaptive_max_pool2d");
  m.push_back({out_sizes(c.in[0], c.a.ints[0], c.a.ints[1]), c.in[0].dtype()});
  m.push_back({out_sizes(c.in[0], c.a.ints[0], c.a.ints[1]), kLong});
}

// Window [floor(i * in / out), ceil((i + 1) * in / out)) per axis, as adaptive_kernel; the
// first maximum in row-major order, or the last NaN (PyTorch's rule); indices flat in the plane.
void adaptive_max_kernel(const OpCall& c, Outs& o) {
  const Tensor& in = c.in[0];
  const int64_t ih = in.size(-2), iw = in.size(-1), oh = c.a.ints[0], ow = c.a.ints[1];
  const int64_t planes = in.numel() / (ih * iw);
  int64_t* pi = o[1].data_ptr<int64_t>();
  pool_compute("adaptive_max_pool2d", in, o[0], [&]<class T>(const T* x, T* y) {
    parallel_for(0, planes, std::max<int64_t>(1, kGrainSize / (ih * iw)), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; p++) {
        const T* xp = x + p * ih * iw;
        for (int64_t i = 0; i < oh; i++) {
          const int64_t h0 = adaptive_lo(i, ih, oh), h1 = adaptive_hi(i, ih, oh);
          for (int64_t j = 0; j < ow; j++) {
            const int64_t w0 = adaptive_lo(j, iw, ow), w1 = adaptive_hi(j, iw, ow);
            T best = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity()
                                                          : std::numeric_limits<T>::lowest();
            int64_t bi = h0 * iw + w0;
            for (int64_t h = h0; h < h1; h++)
              for (int64_t w = w0; w < w1; w++) {
                T v = xp[h * iw + w];
                if (v > best || v != v) best = v, bi = h * iw + w;
              }
            y[(p * oh + i) * ow + j] = best;
            pi[(p * oh + i) * ow + j] = bi;
          }
        }
      }
    });
  });
}

// libtorch's ExpandingArray rule: one value stands for every spatial dim.
DimVec expand_arg(IntArrayRef v, size_t n, const char* op, const char* what) {
  FW_CHECK(v.size() == 1 || v.size() == n, "[", op, "] ", what, " must be a single int or a tuple of ", n,
           " ints, got ", v);
  DimVec out;
  for (size_t i = 0; i < n; i++) out.push_back(v.size() == 1 ? v[0] : v[i]);
  return out;
}

OpAttrs pool_attrs(const char* op, size_t nd, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                   IntArrayRef dilation, bool ceil_mode) {
  DimVec k = expand_arg(kernel, nd, op, "kernel_size");
  DimVec s = stride.empty() ? k : expand_arg(stride, nd, op, "stride");
  DimVec p = expand_arg(padding, nd, op, "padding"), d = expand_arg(dilation, nd, op, "dilation");
  if (nd == 1) k.insert(0, 1), s.insert(0, 1), p.insert(0, 0), d.insert(0, 1);
  OpAttrs a;
  a.ints = DimVec{k[0], k[1], s[0], s[1]};
  a.ints2 = p;
  a.ints3 = d;
  a.flags = ceil_mode ? 1 : 0;
  return a;
}

void check_1d_input(const Tensor& x, const char* op) {
  FW_CHECK((x.dim() == 2 || x.dim() == 3) && x.size(-1) > 0 && x.size(-2) > 0, "[", op,
           "] Expected 2D or 3D (batch mode) tensor with optional 0 dim batch size for input, but got:", x.sizes());
}

// ---- vjps. max pool sends each output's gradient to its argmax (the saved indices) with
// scatter_add; the average pools are separable (Note [Separable resampling vjps]).

// The gradient of x from g at the maxima `idx` (flat positions in x's last two dims).
Tensor scatter_to_argmax(const Tensor& x, const Tensor& idx, const Tensor& g) {
  int64_t ih = x.size(-2), iw = x.size(-1), planes = x.numel() / (ih * iw);
  int64_t per = idx.size(-2) * idx.size(-1);
  if (!tls().tracer && !is_grad_enabled() && (g.dtype() == kFloat || g.dtype() == kDouble)) {
    // Plain gradient (no create_graph, not traced): one pass that zeroes each input plane and
    // adds the plane's output gradients at their argmax, in the order scatter_add would (the
    // same sums), instead of zeros + a copy of them + a serial scatter_add.
    Tensor gx = make_tensor(x.sizes(), g.dtype());
    Tensor gc = g.contiguous(), ic = idx.contiguous();
    const int64_t* ip = ic.data_ptr<int64_t>();
    visit_float(gx.dtype(), "max_pool_backward", [&]<class T>() {
      const T* gp = gc.data_ptr<T>();
      T* out = gx.data_ptr<T>();
      parallel_for(0, planes, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(ih * iw + per, 1)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t p = b; p < e; p++) {
                       T* o = out + p * ih * iw;
                       std::fill(o, o + ih * iw, T(0));
                       const T* gq = gp + p * per;
                       const int64_t* iq = ip + p * per;
                       for (int64_t k = 0; k < per; k++) o[iq[k]] += gq[k];
                     }
                   });
    });
    return gx;
  }
  Tensor flat = fw::zeros({planes, ih * iw}, g.dtype());
  return flat.scatter_add(1, idx.reshape({planes, per}), g.reshape({planes, per})).view(x.sizes());
}

void max_pool_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  FW_CHECK(!(c.a.flags & 2), "[max_pool2d] internal: called without indices on an input that needs a gradient");
  r[0] = scatter_to_argmax(c.in[0], c.out[1], g[0]);
}

void adaptive_max_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { r[0] = scatter_to_argmax(c.in[0], c.out[1], g[0]); }

// Row weights of one axis of avg_pool2d: a window's entries get 1 / count, where count is the
// padded extent (count_include_pad), the in-bounds extent, or 1 (divisor_override, applied to
// the other axis' matrix by the caller).
Tensor avg_pool_matrix(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, int mode, ScalarType t) {
  std::vector<double> w(size_t(out * in), 0.0);
  for (int64_t o = 0; o < out; o++) {
    AvgWindow win = avg_window(o, in, k, s, p);
    double count = mode == 0 ? double(win.padded) : mode == 1 ? double(win.hi - win.lo) : 1.0;
    for (int64_t i = win.lo; i < win.hi; i++) w[size_t(o * in + i)] = 1.0 / count;
  }
  return resample_matrix(std::move(w), out, in, t);
}

void avg_pool_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  const DimVec& k = c.a.ints;
  bool include_pad = c.a.flags & 2, has_div = c.a.flags & 4;
  int mode = has_div ? 2 : include_pad ? 0 : 1;
  int64_t oh = g[0].size(-2), ow = g[0].size(-1);
  ScalarType t = g[0].dtype();
  Tensor ah = avg_pool_matrix(x.size(-2), oh, k[0], k[2], c.a.ints2[0], mode, t);
  Tensor aw = avg_pool_matrix(x.size(-1), ow, k[1], k[3], c.a.ints2[1], mode, t);
  Tensor gx = separable_adjoint(g[0], ah, aw);
  r[0] = has_div ? gx / double(c.a.i0) : gx;
}

Tensor adaptive_matrix(int64_t in, int64_t out, ScalarType t) {
  std::vector<double> w(size_t(out * in), 0.0);
  for (int64_t o = 0; o < out; o++) {
    int64_t a = adaptive_lo(o, in, out), b = adaptive_hi(o, in, out);
    for (int64_t i = a; i < b; i++) w[size_t(o * in + i)] = 1.0 / double(b - a);
  }
  return resample_matrix(std::move(w), out, in, t);
}

void adaptive_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  ScalarType t = g[0].dtype();
  r[0] = separable_adjoint(g[0], adaptive_matrix(x.size(-2), c.a.ints[0], t),
                           adaptive_matrix(x.size(-1), c.a.ints[1], t));
}

}  // namespace

FW_DEFINE_OP(max_pool2d_with_indices) {
  d.meta = max_pool_meta;
  d.cpu = max_pool_kernel;
  d.vjp = max_pool_vjp;
  d.vjp_uses_out = true;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(avg_pool2d) {
  d.meta = avg_pool_meta;
  d.cpu = avg_pool_kernel;
  d.vjp = avg_pool_vjp;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(adaptive_max_pool2d) {
  d.meta = adaptive_max_meta;
  d.cpu = adaptive_max_kernel;
  d.vjp = adaptive_max_vjp;
  d.vjp_uses_out = true;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(adaptive_avg_pool2d) {
  d.meta = adaptive_meta;
  d.cpu = adaptive_kernel;
  d.vjp = adaptive_vjp;
  d.vjp_reads_in = false;
}

std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& x, IntArrayRef kernel, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  Outs o = dispatch(OpId::max_pool2d_with_indices, {x},
                    pool_attrs("max_pool2d", 2, kernel, stride, padding, dilation, ceil_mode));
  const bool cl = is_channels_last(x);  // Note [Channels-last results] (core/layout.h)
  return {channels_last_if(o[0], cl), channels_last_if(o[1], cl)};
}
Tensor max_pool2d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                  bool ceil_mode) {
  OpAttrs a = pool_attrs("max_pool2d", 2, kernel, stride, padding, dilation, ceil_mode);
  if (!(is_grad_enabled() && x.requires_grad())) a.flags |= 2;  // Note [Max pool without indices]
  return channels_last_if(dispatch(OpId::max_pool2d_with_indices, {x}, a)[0], is_channels_last(x));
}
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, IntArrayRef kernel, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  check_1d_input(x, "max_pool1d");
  // The 1-d pools are the 2-d ops on an (N, C, 1, L) view, which for a transposed input passes
  // for channels-last: their results are then transposed too, as libtorch's (which pools the same
  // view). Only max_pool1d on an input without a gradient to take has a row-major result there
  // (libtorch's own kernel).
  Outs o = dispatch(OpId::max_pool2d_with_indices, {x.unsqueeze(-2)},
                    pool_attrs("max_pool1d", 1, kernel, stride, padding, dilation, ceil_mode));
  return {o[0].squeeze(-2), o[1].squeeze(-2)};
}
Tensor max_pool1d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                  bool ceil_mode) {
  // With a gradient to take, libtorch pools through max_pool1d_with_indices (and its layout).
  if (is_grad_enabled() && x.requires_grad())
    return std::get<0>(max_pool1d_with_indices(x, kernel, stride, padding, dilation, ceil_mode));
  check_1d_input(x, "max_pool1d");
  OpAttrs a = pool_attrs("max_pool1d", 1, kernel, stride, padding, dilation, ceil_mode);
  a.flags |= 2;  // Note [Max pool without indices]
  return dispatch(OpId::max_pool2d_with_indices, {x.unsqueeze(-2).contiguous()}, a)[0].squeeze(-2);
}

Tensor avg_pool2d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  OpAttrs a = pool_attrs("avg_pool2d", 2, kernel, stride, padding, 1, ceil_mode);
  a.flags |= (count_include_pad ? 2 : 0) | (divisor_override ? 4 : 0);
  a.i0 = divisor_override.value_or(0);
  return channels_last_if(dispatch1(OpId::avg_pool2d, {x}, a), is_channels_last(x));
}
Tensor avg_pool1d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad) {
  check_1d_input(x, "avg_pool1d");
  OpAttrs a = pool_attrs("avg_pool1d", 1, kernel, stride, padding, 1, ceil_mode);
  a.flags |= count_include_pad ? 2 : 0;
  Tensor x4 = x.unsqueeze(-2);  // channels-last when x is transposed (see max_pool1d_with_indices)
  return channels_last_if(dispatch1(OpId::avg_pool2d, {x4}, a), is_channels_last(x4)).squeeze(-2);
}

Tensor adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size) {
  OpAttrs a;
  a.ints = expand_arg(output_size, 2, "adaptive_avg_pool2d", "output_size");
  return channels_last_if(dispatch1(OpId::adaptive_avg_pool2d, {x}, a), is_channels_last(x));
}
Tensor adaptive_avg_pool1d(const Tensor& x, IntArrayRef output_size) {
  check_1d_input(x, "adaptive_avg_pool1d");
  OpAttrs a;
  a.ints = DimVec{1, expand_arg(output_size, 1, "adaptive_avg_pool1d", "output_size")[0]};
  Tensor x4 = x.unsqueeze(-2);  // channels-last when x is transposed (see max_pool1d_with_indices)
  return channels_last_if(dispatch1(OpId::adaptive_avg_pool2d, {x4}, a), is_channels_last(x4)).squeeze(-2);
}

// ---- 3-d pools, adaptive max pools and unpooling (composites)

// Note [3-d pooling]
// Max, average (every count rule, ceil_mode and divisor_override) and adaptive pools are
// separable over a window: a 3-d window's max (sum, and its count, a product of per-axis counts)
// is the max (sum) over its depth taps of the max (sum) over each tap's (h, w) window. So each
// 3-d pool is the 2-d primitive over every depth slice ([N, C * D, H, W]) followed by the same
// primitive along depth, on [N * C, 1, D, OH * OW] with a (kd, 1) window. Tap order is kept:
// the first pass takes each slice's first maximum (or last NaN) in row-major order and the second
// the first (last NaN) over depth, which is the first maximum (last NaN) in (d, h, w) order, the
// winner of PyTorch's 3-d loops; indices are the second pass's depth d times H * W plus the first
// pass's index in slice d. Integer averages sum exactly (divisor 1) and divide once, truncating as
// PyTorch's integer kernels do. Gradients flow through the primitives' vjps.
namespace {

struct Pool3d {
  DimVec k, s, p, d;
  int64_t n, c, id, ih, iw, od, oh, ow;
  bool unbatched;
};

// Expands and checks the arguments of a 3-d pool over (N, C, D, H, W) or (C, D, H, W) input x.
Pool3d pool3d_geometry(const char* op, const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding,
                       IntArrayRef dilation, bool ceil_mode) {
  Pool3d g;
  g.k = expand_arg(kernel, 3, op, "kernel_size");
  g.s = stride.empty() ? g.k : expand_arg(stride, 3, op, "stride");
  g.p = expand_arg(padding, 3, op, "padding");
  g.d = expand_arg(dilation, 3, op, "dilation");
  FW_CHECK(g.k[0] > 0 && g.k[1] > 0 && g.k[2] > 0, "[", op, "] kernel size should be greater than zero, but got ",
           "kernel_size=", g.k);
  FW_CHECK(g.s[0] > 0 && g.s[1] > 0 && g.s[2] > 0, "[", op, "] stride should be greater than zero, but got stride=", g.s);
  FW_CHECK(g.d[0] > 0 && g.d[1] > 0 && g.d[2] > 0, "[", op, "] dilation should be greater than zero, but got dilation=",
           g.d);
  for (size_t i = 0; i < 3; i++)
    FW_CHECK(g.p[i] >= 0 && g.p[i] <= g.k[i] / 2, "[", op, "] pad should be at most half of kernel size, but got pad=",
             g.p, " and kernel_size=", g.k);
  bool ok = (x.dim() == 4 || x.dim() == 5) && x.size(-1) > 0 && x.size(-2) > 0 && x.size(-3) > 0 && x.size(-4) > 0;
  FW_CHECK(ok, "[", op, "] Expected 4D or 5D (batch mode) tensor with optional 0 dim batch size for input, but got:",
           x.sizes());
  g.unbatched = x.dim() == 4;
  g.n = g.unbatched ? 1 : x.size(0);
  g.c = x.size(-4), g.id = x.size(-3), g.ih = x.size(-2), g.iw = x.size(-1);
  g.od = pool_out(g.id, g.k[0], g.p[0], g.s[0], g.d[0], ceil_mode);
  g.oh = pool_out(g.ih, g.k[1], g.p[1], g.s[1], g.d[1], ceil_mode);
  g.ow = pool_out(g.iw, g.k[2], g.p[2], g.s[2], g.d[2], ceil_mode);
  FW_CHECK(g.od >= 1 && g.oh >= 1 && g.ow >= 1, "[", op, "] Given input size: (", g.c, "x", g.id, "x", g.ih, "x", g.iw,
           "). Calculated output size: (", g.c, "x", g.od, "x", g.oh, "x", g.ow, "). Output size is too small");
  return g;
}

// [N, C, D, H, W] (or unbatched) as [N, C * D, H, W] for the per-slice pass.
Tensor slices(const Tensor& x, const Pool3d& g) { return x.reshape({g.n, g.c * g.id, g.ih, g.iw}); }

// The pass along depth's result [N * C, 1, OD, OH * OW] in the input's layout.
Tensor unslice(const Tensor& y, const Pool3d& g, int64_t od, int64_t oh, int64_t ow) {
  return g.unbatched ? y.reshape({g.c, od, oh, ow}) : y.reshape({g.n, g.c, od, oh, ow});
}

// Indices flat in D * H * W from the depth pass's indices i3 (flat in [D, OH * OW]) and the slice
// pass's indices i2 ([N, C * D, OH, OW], flat in H * W).
Tensor combine_indices(const Tensor& i2, const Tensor& i3, const Pool3d& g, int64_t od, int64_t oh, int64_t ow) {
  const int64_t plane = oh * ow, nc = g.n * g.c;
  Tensor at = i3.reshape({nc, od * plane});
  Tensor in_slice = i2.reshape({nc, g.id * plane}).gather(1, at);
  return unslice(floor_divide(at, plane) * (g.ih * g.iw) + in_slice, g, od, oh, ow);
}

std::tuple<Tensor, Tensor> max_pool3d_impl(const Tensor& x, IntArrayRef kernel, IntArrayRef stride,
                                           IntArrayRef padding, IntArrayRef dilation, bool ceil_mode, bool indices) {
  Pool3d g = pool3d_geometry("max_pool3d", x, kernel, stride, padding, dilation, ceil_mode);
  FW_CHECK(x.dtype() != kBool && !x.is_complex(), "[max_pool3d] not implemented for dtype ", dtype_str(x.dtype()));
  Tensor y2, i2, y3, i3;
  if (indices) {
    std::tie(y2, i2) = max_pool2d_with_indices(slices(x, g), {g.k[1], g.k[2]}, {g.s[1], g.s[2]}, {g.p[1], g.p[2]},
                                               {g.d[1], g.d[2]}, ceil_mode);
    std::tie(y3, i3) = max_pool2d_with_indices(y2.reshape({g.n * g.c, 1, g.id, g.oh * g.ow}), {g.k[0], 1},
                                               {g.s[0], 1}, {g.p[0], 0}, {g.d[0], 1}, ceil_mode);
    return {unslice(y3, g, g.od, g.oh, g.ow), combine_indices(i2, i3, g, g.od, g.oh, g.ow)};
  }
  y2 = max_pool2d(slices(x, g), {g.k[1], g.k[2]}, {g.s[1], g.s[2]}, {g.p[1], g.p[2]}, {g.d[1], g.d[2]}, ceil_mode);
  y3 = max_pool2d(y2.reshape({g.n * g.c, 1, g.id, g.oh * g.ow}), {g.k[0], 1}, {g.s[0], 1}, {g.p[0], 0},
                  {g.d[0], 1}, ceil_mode);
  return {unslice(y3, g, g.od, g.oh, g.ow), Tensor()};
}

// Checks an adaptive 3-d pool's input and output_size (returned in os); the geometry has
// (od, oh, ow) = os.
Pool3d adaptive3d_geometry(const char* op, const Tensor& x, IntArrayRef output_size, DimVec& os) {
  os = expand_arg(output_size, 3, op, "output_size");
  FW_CHECK(x.dim() == 4 || x.dim() == 5, "[", op, "] Expected 4D or 5D tensor, but got ", x.sizes());
  for (int64_t d = x.dim() - 4; d < x.dim(); d++)
    FW_CHECK(x.size(d) > 0, "[", op, "] Expected input to have non-zero size for non-batch dimensions, but input has "
             "sizes ", x.sizes(), " with dimension ", d, " being empty");
  FW_CHECK(os[0] >= 0 && os[1] >= 0 && os[2] >= 0, "[", op, "] output_size must be non-negative, got ", os);
  FW_CHECK(x.is_floating_point(), "[", op, "] not implemented for dtype ", dtype_str(x.dtype()));
  Pool3d g;
  g.unbatched = x.dim() == 4;
  g.n = g.unbatched ? 1 : x.size(0);
  g.c = x.size(-4), g.id = x.size(-3), g.ih = x.size(-2), g.iw = x.size(-1);
  g.od = os[0], g.oh = os[1], g.ow = os[2];
  return g;
}

// x's sizes with the spatial ones replaced by os (the result of an adaptive 3-d pool).
DimVec adaptive3d_sizes(const Tensor& x, const DimVec& os) {
  DimVec sz(x.sizes());
  for (size_t i = 0; i < 3; i++) sz[sz.size() - 3 + i] = os[i];
  return sz;
}

// Per-output counts of one axis of avg_pool3d (padded extent or in-bounds extent).
std::vector<int64_t> avg_counts(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, bool include_pad) {
  std::vector<int64_t> r;
  for (int64_t o = 0; o < out; o++) {
    AvgWindow w = avg_window(o, in, k, s, p);
    r.push_back(include_pad ? w.padded : w.hi - w.lo);
  }
  return r;
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool3d_with_indices(const Tensor& x, IntArrayRef kernel, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return max_pool3d_impl(x, kernel, stride, padding, dilation, ceil_mode, true);
}
Tensor max_pool3d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                  bool ceil_mode) {
  return std::get<0>(max_pool3d_impl(x, kernel, stride, padding, dilation, ceil_mode, false));
}

Tensor avg_pool3d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  Pool3d g = pool3d_geometry("avg_pool3d", x, kernel, stride, padding, 1, ceil_mode);
  FW_CHECK(x.dtype() != kBool && !x.is_complex(), "[avg_pool3d] not implemented for dtype ", dtype_str(x.dtype()));
  FW_CHECK(!divisor_override || *divisor_override != 0, "[avg_pool3d] divisor must be not zero");
  // Integers: exact int64 sums (no overflow of narrow types), then one truncating division.
  const bool exact = !x.is_floating_point();
  std::optional<int64_t> first = divisor_override || exact ? std::optional<int64_t>(1) : std::nullopt;
  std::optional<int64_t> second = exact ? std::optional<int64_t>(1) : divisor_override;
  Tensor y2 = avg_pool2d(slices(exact ? x.to(kLong) : x, g), {g.k[1], g.k[2]}, {g.s[1], g.s[2]}, {g.p[1], g.p[2]}, ceil_mode,
                         count_include_pad, first);
  Tensor y3 = avg_pool2d(y2.reshape({g.n * g.c, 1, g.id, g.oh * g.ow}), {g.k[0], 1}, {g.s[0], 1}, {g.p[0], 0},
                         ceil_mode, count_include_pad, second);
  Tensor y = unslice(y3, g, g.od, g.oh, g.ow);
  if (!exact) return y;
  if (divisor_override) return div(y, Scalar(*divisor_override), std::string("trunc")).to(x.dtype());
  std::vector<int64_t> cnt;
  auto cd = avg_counts(g.id, g.od, g.k[0], g.s[0], g.p[0], count_include_pad);
  auto ch = avg_counts(g.ih, g.oh, g.k[1], g.s[1], g.p[1], count_include_pad);
  auto cw = avg_counts(g.iw, g.ow, g.k[2], g.s[2], g.p[2], count_include_pad);
  for (int64_t a : cd)
    for (int64_t b : ch)
      for (int64_t c : cw) cnt.push_back(a * b * c);
  Tensor counts = tensor(cnt, TensorOptions(kLong).device(x.device())).reshape({g.od, g.oh, g.ow});
  return div(y, counts, std::string("trunc")).to(x.dtype());
}

Tensor adaptive_avg_pool3d(const Tensor& x, IntArrayRef output_size) {
  DimVec os;
  Pool3d g = adaptive3d_geometry("adaptive_avg_pool3d", x, output_size, os);
  if (g.od * g.oh * g.ow == 0 || g.n == 0) return zeros(adaptive3d_sizes(x, os), TensorOptions(x.dtype()).device(x.device()));
  if (g.od == 1 && g.oh == 1 && g.ow == 1)  // global average: one pass over each contiguous volume
    return adaptive_avg_pool2d(x.reshape({g.n, g.c, 1, g.id * g.ih * g.iw}), {1, 1}).reshape(adaptive3d_sizes(x, os));
  Tensor y2 = adaptive_avg_pool2d(slices(x, g), {g.oh, g.ow});
  Tensor y3 = adaptive_avg_pool2d(y2.reshape({g.n * g.c, 1, g.id, g.oh * g.ow}), {g.od, g.oh * g.ow});
  return unslice(y3, g, g.od, g.oh, g.ow);
}

std::tuple<Tensor, Tensor> adaptive_max_pool2d(const Tensor& x, IntArrayRef output_size) {
  OpAttrs a;
  a.ints = expand_arg(output_size, 2, "adaptive_max_pool2d", "output_size");
  Outs o = dispatch(OpId::adaptive_max_pool2d, {x}, a);
  const bool cl = is_channels_last(x);
  return {channels_last_if(o[0], cl), channels_last_if(o[1], cl)};
}
std::tuple<Tensor, Tensor> adaptive_max_pool1d(const Tensor& x, IntArrayRef output_size) {
  check_1d_input(x, "adaptive_max_pool1d");
  OpAttrs a;
  a.ints = DimVec{1, expand_arg(output_size, 1, "adaptive_max_pool1d", "output_size")[0]};
  Tensor x4 = x.unsqueeze(-2);  // channels-last when x is transposed (see max_pool1d_with_indices)
  Outs o = dispatch(OpId::adaptive_max_pool2d, {x4}, a);
  const bool cl = is_channels_last(x4);
  return {channels_last_if(o[0], cl).squeeze(-2), channels_last_if(o[1], cl).squeeze(-2)};
}
std::tuple<Tensor, Tensor> adaptive_max_pool3d(const Tensor& x, IntArrayRef output_size) {
  DimVec os;
  Pool3d g = adaptive3d_geometry("adaptive_max_pool3d", x, output_size, os);
  if (g.od * g.oh * g.ow == 0 || g.n == 0) {
    TensorOptions to = TensorOptions(x.dtype()).device(x.device());
    return {zeros(adaptive3d_sizes(x, os), to), zeros(adaptive3d_sizes(x, os), to.dtype(kLong))};
  }
  auto [y2, i2] = adaptive_max_pool2d(slices(x, g), {g.oh, g.ow});
  auto [y3, i3] = adaptive_max_pool2d(y2.reshape({g.n * g.c, 1, g.id, g.oh * g.ow}), {g.od, g.oh * g.ow});
  return {unslice(y3, g, g.od, g.oh, g.ow), combine_indices(i2, i3, g, g.od, g.oh, g.ow)};
}

namespace {
// Scatters x's values to their indices in zeros of `out` spatial sizes (the last `spatial` dims).
Tensor max_unpool(const char* op, const Tensor& x, const Tensor& indices, IntArrayRef out, int64_t spatial) {
  FW_CHECK(indices.dtype() == kLong, "[", op, "] elements in indices should be type int64 but got: ",
           dtype_str(indices.dtype()));
  FW_CHECK(x.sizes() == indices.sizes(), "[", op, "] Expected shape of indices to be same as that of the input tensor (",
           x.sizes(), ") but got indices tensor with shape: ", indices.sizes());
  FW_CHECK(int64_t(out.size()) == spatial, "[", op, "] There should be exactly ", spatial,
           " elements (output spatial sizes) in output_size, but got ", out.size(), " elements.");
  FW_CHECK(x.dim() == spatial + 1 || x.dim() == spatial + 2, "[", op, "] Input to max_unpooling", spatial,
           "d should be a ", spatial + 1, "d or ", spatial + 2, "d Tensor, but got a tensor with ", x.dim(),
           " dimensions.");
  for (int64_t d = x.dim() - spatial - 1; d < x.dim(); d++)
    FW_CHECK(x.size(d) > 0, "[", op, "] Expected input to have non-zero size for non-batch dimensions, but got ",
             x.sizes(), " with dimension ", d, " being empty.");
  int64_t plane = 1;
  for (int64_t v : out) {
    FW_CHECK(v > 0, "[", op, "] output sizes must be positive, got ", out);
    plane *= v;
  }
  const bool ub = x.dim() == spatial + 1;
  const int64_t n = ub ? 1 : x.size(0), c = x.size(ub ? 0 : 1);
  int64_t in_plane = 1;
  for (int64_t d = x.dim() - spatial; d < x.dim(); d++) in_plane *= x.size(d);
  Tensor idx = indices.reshape({n, c, in_plane});
  if (idx.numel() > 0) {
    int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
    FW_CHECK(lo >= 0 && hi < plane, "[", op, "] Found an invalid max index: ", lo < 0 ? lo : hi,
             " (output volumes are of size ", out, ")");
  }
  DimVec sz;
  for (int64_t d = 0; d < x.dim() - spatial; d++) sz.push_back(x.size(d));
  for (int64_t v : out) sz.push_back(v);
  Tensor z = zeros({n, c, plane}, TensorOptions(x.dtype()).device(x.device()));
  return z.scatter(2, idx, x.reshape({n, c, in_plane})).reshape(sz);
}
}  // namespace

Tensor max_unpool2d(const Tensor& x, const Tensor& indices, IntArrayRef output_size) {
  return max_unpool("max_unpool2d", x, indices, output_size, 2);
}
Tensor max_unpool3d(const Tensor& x, const Tensor& indices, IntArrayRef output_size, IntArrayRef stride,
                    IntArrayRef padding) {
  const char* op = "max_unpool3d";
  FW_CHECK(stride.size() == 3 && stride[0] > 0 && stride[1] > 0 && stride[2] > 0, "[", op,
           "] stride should be 3 positive integers, got ", stride);
  FW_CHECK(padding.size() == 3, "[", op, "] padding should have 3 elements, got ", padding);
  return max_unpool(op, x, indices, output_size, 3);
}

// Note [Fractional max pooling]
// Fractional max pooling (Graham, 2014) as PyTorch places its windows: along a dim of input size
// `in`, `out` windows of size k start at u_i = int((i + s) a) - int(s a) for i < out - 1 with
// a = (in - k) / (out - 1), and the last one at in - k, where s is one sample in [0, 1] per
// (batch, plane, dim), computed in the input's precision (float for float32) as PyTorch does so
// the starts agree exactly. The sample order is PyTorch's: (W, H) in 2-d, (T, H, W) in 3-d.
// The kernel below only finds each window's winner (scan in (t, h, w) order; a greater value or
// any NaN replaces the winner, so the first maximum and the last NaN win) and returns flat
// indices per plane. The values are x gathered at those indices: gather's backward scatters the
// gradient to the winners, which is PyTorch's backward, and double backward comes free. Under
// fw::compile the index kernel reads x's data, so it ends the graph there.
namespace {

template <class S>
std::vector<int64_t> fractional_starts(S sample, int64_t in, int64_t out, int64_t k) {
  std::vector<int64_t> u(size_t(std::max<int64_t>(out, 0)));
  if (out > 1) {
    const S alpha = S(in - k) / S(out - 1);
    for (int64_t i = 0; i < out - 1; i++)
      u[size_t(i)] = int64_t(int((S(i) + sample) * alpha)) - int64_t(int(sample * alpha));
  }
  if (out > 0) u[size_t(out - 1)] = in - k;
  return u;
}

std::tuple<Tensor, Tensor> fractional_max_pool(const char* op, int64_t nd, const Tensor& x, IntArrayRef kernel,
                                               IntArrayRef output_size, const Tensor& samples) {
  static const char* kDimName[2][3] = {{"height", "width", ""}, {"time", "height", "width"}};
  FW_CHECK(int64_t(kernel.size()) == nd, "[", op, "] kernel_size must either be a single int or a tuple of ", nd,
           " ints, got ", kernel);
  FW_CHECK(int64_t(output_size.size()) == nd, "[", op, "] output_size must either be a single int or a tuple of ",
           nd, " ints, got ", output_size);
  FW_CHECK(x.dim() == nd + 1 || x.dim() == nd + 2, "[", op, "] Expected ", nd + 1, "D or ", nd + 2,
           "D tensor, but got: ", x.sizes());
  FW_CHECK(x.is_floating_point(), "[", op, "] expected a floating point input, got ", dtype_str(x.dtype()));
  const bool batched = x.dim() == nd + 2;
  for (int64_t d = batched ? 1 : 0; d < x.dim(); d++)
    FW_CHECK(x.size(d) > 0, "[", op, "] Expected input to have non-zero size for non-batch dimensions, but got ",
             x.sizes(), " with dimension ", d, " being empty.");
  const int64_t n = batched ? x.size(0) : 1, c = x.size(batched ? 1 : 0);
  int64_t in[3] = {1, 1, 1}, k[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  for (int64_t d = 0; d < nd; d++) {
    const int64_t at = 3 - nd + d;
    in[at] = x.size(x.dim() - nd + d);
    k[at] = kernel[size_t(d)];
    out[at] = output_size[size_t(d)];
    FW_CHECK(k[at] > 0, "[", op, "] kernel_size must be positive, got ", kernel);
    FW_CHECK(in[at] <= std::numeric_limits<int>::max(), "[", op, "] input size ", in[at], " is too large");
    FW_CHECK(out[at] >= 0, "[", op, "] output_size must be non-negative, got ", output_size);
    FW_CHECK(out[at] + k[at] - 1 <= in[at], "[", op, "] pool ", kDimName[nd - 2][d], " ", k[at],
             " too large relative to input ", kDimName[nd - 2][d], " ", in[at]);
  }
  FW_CHECK(samples.defined() && samples.dim() == 3 && samples.size(0) == n && samples.size(1) == c &&
               samples.size(2) == nd,
           "[", op, "] expected _random_samples of shape [", n, ", ", c, ", ", nd, "] (batch, channels, ", nd,
           "), got ", samples.defined() ? samples.sizes() : IntArrayRef());
  FW_CHECK(samples.is_floating_point(), "[", op, "] _random_samples must be floating point, got ",
           dtype_str(samples.dtype()));
  const ScalarType ct = x.dtype() == kDouble ? kDouble : kFloat;
  Tensor s = samples.to(Device(kCPU), ct).contiguous();
  if (s.numel() > 0) {
    const double lo = s.min().item<double>(), hi = s.max().item<double>();
    FW_CHECK(lo >= 0 && hi <= 1, "[", op, "] _random_samples must lie in [0, 1], got a value of ",
             lo < 0 || std::isnan(lo) ? lo : hi);
  }
  DimVec osz;
  for (int64_t d = 0; d < x.dim() - nd; d++) osz.push_back(x.size(d));
  for (int64_t d = 0; d < nd; d++) osz.push_back(out[3 - nd + d]);
  const int64_t planes = n * c, in_plane = in[0] * in[1] * in[2], out_plane = out[0] * out[1] * out[2];
  Tensor idx = empty({planes, out_plane}, kLong);
  Tensor xc = cast(x.to(Device(kCPU)), ct).contiguous();
  // The sample of array dim a (0 = T, 1 = H, 2 = W) in the per-plane sample list.
  const int64_t sample_of[3] = {nd == 3 ? 0 : -1, 1, nd == 3 ? 2 : 0};
  int64_t* ip = idx.data_ptr<int64_t>();
  visit_real(ct, op, [&]<class T>() {
    const T* xp = xc.data_ptr<T>();
    const T* sp = s.data_ptr<T>();
    const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(1, out_plane * k[0] * k[1] * k[2]));
    parallel_for(0, planes, grain, [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; p++) {
        std::vector<int64_t> u[3];
        for (int a = 0; a < 3; a++)
          u[a] = sample_of[a] < 0 ? std::vector<int64_t>(1, 0) : fractional_starts<T>(sp[p * nd + sample_of[a]], in[a], out[a], k[a]);
        const T* xq = xp + p * in_plane;
        int64_t* iq = ip + p * out_plane;
        for (int64_t ot = 0; ot < out[0]; ot++)
          for (int64_t oh = 0; oh < out[1]; oh++)
            for (int64_t ow = 0; ow < out[2]; ow++) {
              const int64_t t0 = u[0][size_t(ot)], h0 = u[1][size_t(oh)], w0 = u[2][size_t(ow)];
              int64_t best = (t0 * in[1] + h0) * in[2] + w0;
              T bv = -std::numeric_limits<T>::infinity();
              for (int64_t t = t0; t < t0 + k[0]; t++)
                for (int64_t h = h0; h < h0 + k[1]; h++)
                  for (int64_t w = w0; w < w0 + k[2]; w++) {
                    const int64_t at = (t * in[1] + h) * in[2] + w;
                    const T v = xq[at];
                    if (v > bv || std::isnan(v)) {
                      bv = v;
                      best = at;
                    }
                  }
              *iq++ = best;
            }
      }
    });
  });
  Tensor indices = idx.to(x.device()).reshape(osz);
  Tensor values = x.flatten(x.dim() - nd).gather(x.dim() - nd, indices.flatten(x.dim() - nd)).reshape(osz);
  return {values, indices};
}

}  // namespace

std::tuple<Tensor, Tensor> fractional_max_pool2d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef output_size,
                                                 const Tensor& random_samples) {
  return fractional_max_pool("fractional_max_pool2d", 2, x, kernel_size, output_size, random_samples);
}
std::tuple<Tensor, Tensor> fractional_max_pool3d(const Tensor& x, IntArrayRef kernel_size, IntArrayRef output_size,
                                                 const Tensor& random_samples) {
  return fractional_max_pool("fractional_max_pool3d", 3, x, kernel_size, output_size, random_samples);
}

}  // namespace fw
