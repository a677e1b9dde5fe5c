// Pooling: max_pool2d_with_indices, avg_pool2d, adaptive_avg_pool2d (primitives over (N, C, H, W)
// or unbatched (C, H, W) inputs) and their 1-D composites, which view (N, C, L) as (N, C, 1, L).
// attrs: ints = {kh, kw, sh, sw}; ints2 = {ph, pw}; ints3 = {dh, dw} (max); flags bit 0 = ceil_mode,
// bit 1 = count_include_pad (avg) or no indices (max: an empty second output, Note [Max pool
// without indices]); i0 = divisor_override (avg, 0 = none).
#include <algorithm>
#include <cmath>
#include <memory>

#include "core/convert.h"
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

// Runs body<T>(x, y) with x, y contiguous in compute type (float for 16-bit floats).
template <class Body>
void pool_compute(const char* op, const Tensor& in, const Tensor& out, Body body) {
  ScalarType t = in.dtype(), ct = (t == kHalf || t == kBFloat16) ? kFloat : t;
  Tensor x = cast(in, ct).contiguous();
  Tensor y = ct == t ? out : make_tensor(out.sizes(), ct);
  visit_real(ct, op, [&]<class T>() { body.template operator()<T>(x.data_ptr<T>(), y.data_ptr<T>()); });
  if (!y.is_same(out)) const_cast<Tensor&>(out).copy_(y);
}

// Note [Max pool without indices]
// max_pool2d (values only) on an input no gradient will flow through asks the op for no indices
// (attrs bit 1): its second output is then empty and the kernels skip them. The int64 indices are
// twice the bytes of float32 values, so this cuts an inference pool's memory traffic by ~40%.
bool without_indices(const OpCall& c) { return c.a.flags & 2; }

template <bool IDX>
void max_pool_run(const OpCall& c, Outs& o, const Pool2d& g) {
  int64_t* pi = IDX ? o[1].data_ptr<int64_t>() : nullptr;
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

void avg_pool_kernel(const OpCall& c, Outs& o) {
  Pool2d g = pool_geometry(c, false);
  bool include_pad = c.a.flags & 2, has_div = c.a.flags & 4;
  pool_compute("avg_pool2d", c.in[0], o[0], [&]<class T>(const T* x, T* y) {
    parallel_for(0, g.n * g.c, std::max<int64_t>(1, kGrainSize / (g.oh * g.ow * g.kh * g.kw)), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; p++) {
        const T* xp = x + p * g.ih * g.iw;
        T* yp = y + p * g.oh * g.ow;
        for (int64_t oh = 0; oh < g.oh; oh++) {
          for (int64_t ow = 0; ow < g.ow; ow++) {
            int64_t h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;
            int64_t h1 = std::min(h0 + g.kh, g.ih + g.ph), w1 = std::min(w0 + g.kw, g.iw + g.pw);
            int64_t padded = (h1 - h0) * (w1 - w0);
            h0 = std::max<int64_t>(h0, 0), w0 = std::max<int64_t>(w0, 0);
            h1 = std::min(h1, g.ih), w1 = std::min(w1, g.iw);
            PoolAcc<T> s = 0;
            for (int64_t h = h0; h < h1; h++)
              for (int64_t w = w0; w < w1; w++) s += PoolAcc<T>(xp[h * g.iw + w]);
            int64_t div = has_div ? c.a.i0 : include_pad ? padded : (h1 - h0) * (w1 - w0);
            yp[oh * g.ow + ow] = div == 0 ? T(0) : T(s / PoolAcc<T>(div));
          }
        }
      }
    });
  });
}

void adaptive_meta(const OpCall& c, Metas& m) {
  const Tensor& x = c.in[0];
  FW_CHECK(c.a.ints.size() == 2, "[adaptive_avg_pool2d] output_size must be 2, got ", c.a.ints.size());
  FW_CHECK(x.dim() == 3 || x.dim() == 4, "[adaptive_avg_pool2d] Expected 3D or 4D tensor, but got ", x.sizes());
  for (int64_t d = x.dim() - 3; d < x.dim(); d++)
    FW_CHECK(x.size(d) > 0, "[adaptive_avg_pool2d] Expected input to have non-zero size for non-batch dimensions, "
             "but input has sizes ", x.sizes(), " with dimension ", d, " being empty");
  FW_CHECK(c.a.ints[0] >= 0 && c.a.ints[1] >= 0, "[adaptive_avg_pool2d] output_size must be non-negative, got ",
           c.a.ints);
  FW_CHECK(x.is_floating_point(), "[adaptive_avg_pool2d] not implemented for dtype ", dtype_str(x.dtype()));
  m.push_back({out_sizes(x, c.a.ints[0], c.a.ints[1]), x.dtype()});
}

void adaptive_kernel(const OpCall& c, Outs& o) {
  const Tensor& in = c.in[0];
  int64_t ih = in.size(-2), iw = in.size(-1), oh = c.a.ints[0], ow = c.a.ints[1];
  int64_t planes = in.numel() / (ih * iw);
  pool_compute("adaptive_avg_pool2d", in, o[0], [&]<class T>(const T* x, T* y) {
    parallel_for(0, planes, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(ih * iw, 1)), [&](int64_t b, int64_t e) {
      for (int64_t p = b; p < e; p++) {
        for (int64_t i = 0; i < oh; i++) {
          int64_t h0 = i * ih / oh, h1 = ((i + 1) * ih + oh - 1) / oh;
          for (int64_t j = 0; j < ow; j++) {
            int64_t w0 = j * iw / ow, w1 = ((j + 1) * iw + ow - 1) / ow;
            double s = 0;
            for (int64_t h = h0; h < h1; h++)
              for (int64_t w = w0; w < w1; w++) s += double(x[p * ih * iw + h * iw + w]);
            y[p * oh * ow + i * ow + j] = T(s / double((h1 - h0) * (w1 - w0)));
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

void max_pool_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  FW_CHECK(!(c.a.flags & 2), "[max_pool2d] internal: called without indices on an input that needs a gradient");
  const Tensor& x = c.in[0];
  int64_t ih = x.size(-2), iw = x.size(-1), planes = x.numel() / (ih * iw);
  const Tensor& idx = c.out[1];
  int64_t per = idx.size(-2) * idx.size(-1);
  if (!tls().tracer && !is_grad_enabled() && (g[0].dtype() == kFloat || g[0].dtype() == kDouble)) {
    // Plain gradient (no create_graph, not traced): one pass that zeroes each input plane and
    // adds the plane's output gradients at their argmax, in the order scatter_add would (the
    // same sums), instead of zeros + a copy of them + a serial scatter_add.
    Tensor gx = make_tensor(x.sizes(), g[0].dtype());
    Tensor gc = g[0].contiguous(), ic = idx.contiguous();
    const int64_t* ip = ic.data_ptr<int64_t>();
    visit_float(gx.dtype(), "max_pool2d_backward", [&]<class T>() {
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
    r[0] = gx;
    return;
  }
  Tensor flat = fw::zeros({planes, ih * iw}, g[0].dtype());
  r[0] = flat.scatter_add(1, idx.reshape({planes, per}), g[0].reshape({planes, per})).view(x.sizes());
}

// Row weights of one axis of avg_pool2d: a window's entries get 1 / count, where count is the
// padded extent (count_include_pad), the in-bounds extent, or 1 (divisor_override, applied to
// the other axis' matrix by the caller).
Tensor avg_pool_matrix(int64_t in, int64_t out, int64_t k, int64_t s, int64_t p, int mode, ScalarType t) {
  std::vector<double> w(size_t(out * in), 0.0);
  for (int64_t o = 0; o < out; o++) {
    int64_t a = o * s - p, b = std::min(a + k, in + p), padded = b - a;
    a = std::max<int64_t>(a, 0), b = std::min(b, in);
    double count = mode == 0 ? double(padded) : mode == 1 ? double(b - a) : 1.0;
    for (int64_t i = a; i < b; i++) w[size_t(o * in + i)] = 1.0 / count;
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
    int64_t a = o * in / out, b = ((o + 1) * in + out - 1) / out;
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
  return {o[0], o[1]};
}
Tensor max_pool2d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                  bool ceil_mode) {
  OpAttrs a = pool_attrs("max_pool2d", 2, kernel, stride, padding, dilation, ceil_mode);
  if (!(is_grad_enabled() && x.requires_grad())) a.flags |= 2;  // Note [Max pool without indices]
  return dispatch(OpId::max_pool2d_with_indices, {x}, a)[0];
}
std::tuple<Tensor, Tensor> max_pool1d_with_indices(const Tensor& x, IntArrayRef kernel, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  check_1d_input(x, "max_pool1d");
  Outs o = dispatch(OpId::max_pool2d_with_indices, {x.unsqueeze(-2)},
                    pool_attrs("max_pool1d", 1, kernel, stride, padding, dilation, ceil_mode));
  return {o[0].squeeze(-2), o[1].squeeze(-2)};
}
Tensor max_pool1d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                  bool ceil_mode) {
  return std::get<0>(max_pool1d_with_indices(x, kernel, stride, padding, dilation, ceil_mode));
}

Tensor avg_pool2d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  OpAttrs a = pool_attrs("avg_pool2d", 2, kernel, stride, padding, 1, ceil_mode);
  a.flags |= (count_include_pad ? 2 : 0) | (divisor_override ? 4 : 0);
  a.i0 = divisor_override.value_or(0);
  return dispatch1(OpId::avg_pool2d, {x}, a);
}
Tensor avg_pool1d(const Tensor& x, IntArrayRef kernel, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad) {
  check_1d_input(x, "avg_pool1d");
  OpAttrs a = pool_attrs("avg_pool1d", 1, kernel, stride, padding, 1, ceil_mode);
  a.flags |= count_include_pad ? 2 : 0;
  return dispatch1(OpId::avg_pool2d, {x.unsqueeze(-2)}, a).squeeze(-2);
}

Tensor adaptive_avg_pool2d(const Tensor& x, IntArrayRef output_size) {
  OpAttrs a;
  a.ints = expand_arg(output_size, 2, "adaptive_avg_pool2d", "output_size");
  return dispatch1(OpId::adaptive_avg_pool2d, {x}, a);
}
Tensor adaptive_avg_pool1d(const Tensor& x, IntArrayRef output_size) {
  check_1d_input(x, "adaptive_avg_pool1d");
  OpAttrs a;
  a.ints = DimVec{1, expand_arg(output_size, 1, "adaptive_avg_pool1d", "output_size")[0]};
  return dispatch1(OpId::adaptive_avg_pool2d, {x.unsqueeze(-2)}, a).squeeze(-2);
}

}  // namespace fw
