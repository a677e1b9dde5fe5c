// Convolutions: conv2d and conv_transpose2d primitives (im2col / col2im around the shared GEMM)
// and the composites conv1d, conv_transpose1d, conv3d, conv_transpose3d (Note [3-d convolutions])
// and the padding-string overloads.
//
// Note [Convolution as GEMM]
// conv2d unfolds a chunk of samples into columns cols[(c, kh, kw), (n, oh, ow)] and multiplies
// by the weight viewed as [O/g, C/g*KH*KW]. Large images (>= kMinCols output positions) take
// one sample per chunk and run samples in parallel, each GEMM on one thread, writing straight
// into the output. Small images (the deep layers of a VGG stack) gather several samples into
// one wide GEMM, which Eigen then parallelises, and scatter the result back to (N, O, OH, OW).
// 1x1 stride-1 unpadded convolutions skip the unfold. conv_transpose2d is the adjoint: one GEMM
// with the transposed weight (a column-major view, no copy) then col2im accumulation.
// float32 (and 16-bit floats, computed in float) go to oneDNN first when fw is built with it
// (Note [oneDNN convolutions] in conv_dnnl.cpp); this path is the fallback and the other dtypes.
// attrs: ints = stride {sh, sw}, ints2 = padding {ph, pw}, ints3 = dilation {dh, dw}, i0 = groups,
// i1/i2 = extra padding after H/W (conv2d, for padding="same" with even kernels) or
// output_padding (conv_transpose2d); flags bit 0 = bias given.
#include <algorithm>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/layout.h"
#include "core/op.h"
#include "core/ops/conv_dnnl.h"
#include "core/ops/gemm.h"
#include "core/parallel.h"
#include "core/profile.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

constexpr int64_t kMinCols = 256;
constexpr int64_t kMaxColsBytes = int64_t(64) << 20;

struct ConvGeom {
  int64_t n, c, h, w;      // input
  int64_t o, kh, kw;       // output channels, kernel
  int64_t oh, ow;          // output spatial
  int64_t sh, sw, ph, pw, dh, dw, groups;
  int64_t ck() const { return c / groups * kh * kw; }
};

// Argument checks of a convolution over `spatial` dims (the 2-d primitives and the 3-d
// composites, Note [3-d convolutions]); b is null without bias.
void check_conv(const char* op, int64_t spatial, const Tensor& x, const Tensor& w, const Tensor* b, IntArrayRef s,
                IntArrayRef p, IntArrayRef d, int64_t g, bool transposed) {
  FW_CHECK(w.dim() == spatial + 2, "[", op, "] Expected ", spatial + 2, "-dimensional weight, but got weight of size ",
           w.sizes());
  FW_CHECK(x.dim() == spatial + 2, "[", op, "] Expected ", spatial + 2, "-dimensional input for ", spatial + 2,
           "-dimensional weight ", w.sizes(), ", but got ", x.dim(), "-dimensional input of size ", x.sizes(),
           " instead");
  for (size_t i = 0; i < s.size(); i++) {
    FW_CHECK(s[i] > 0, "[", op, "] non-positive stride is not supported");
    FW_CHECK(p[i] >= 0, "[", op, "] negative padding is not supported");
    FW_CHECK(d[i] > 0, "[", op, "] non-positive dilation is not supported");
  }
  FW_CHECK(g > 0, "[", op, "] non-positive groups is not supported");
  FW_CHECK(x.dtype() == w.dtype(), "[", op, "] Input type (", dtype_name(x.dtype()), ") and weight type (",
           dtype_name(w.dtype()), ") should be the same");
  FW_CHECK(x.is_floating_point(), "[", op, "] not implemented for dtype ", dtype_str(x.dtype()));
  int64_t in_ch = transposed ? w.size(0) : w.size(1) * g;
  FW_CHECK(w.size(0) >= g && w.size(0) % g == 0, "[", op, "] Given groups=", g, ", expected weight to be divisible by ",
           g, " at dimension 0, but got weight of size ", w.sizes(), " instead");
  FW_CHECK(x.size(1) == in_ch, "[", op, "] Given ", transposed ? "transposed=1" : "groups=", transposed ? "" : std::to_string(g),
           ", weight of size ", w.sizes(), ", expected input", x.sizes(), " to have ", in_ch, " channels, but got ",
           x.size(1), " channels instead");
  int64_t out_ch = transposed ? w.size(1) * g : w.size(0);
  if (b) {
    FW_CHECK(b->dim() == 1 && b->size(0) == out_ch, "[", op, "] Given ", transposed ? "transposed=1, " : "",
             "weight of size ", w.sizes(), ", expected bias to be 1-dimensional with ", out_ch,
             " elements, but got bias of size ", b->sizes(), " instead");
    FW_CHECK(b->dtype() == x.dtype(), "[", op, "] Input type (", dtype_name(x.dtype()), ") and bias type (",
             dtype_name(b->dtype()), ") should be the same");
  }
}

void check_conv_args(const OpCall& c, bool transposed) {
  FW_CHECK(c.a.i1 >= 0 && c.a.i2 >= 0, "[", c.def.name, "] negative padding is not supported");
  check_conv(c.def.name, 2, c.in[0], c.in[1], c.a.flags & 1 ? &c.in[2] : nullptr, c.a.ints, c.a.ints2, c.a.ints3,
             c.a.i0, transposed);
}

ConvGeom conv_geom(const OpCall& c) {
  const Tensor &x = c.in[0], &w = c.in[1];
  ConvGeom g{x.size(0), x.size(1), x.size(2), x.size(3), w.size(0), w.size(2), w.size(3), 0, 0,
             c.a.ints[0], c.a.ints[1], c.a.ints2[0], c.a.ints2[1], c.a.ints3[0], c.a.ints3[1], c.a.i0};
  int64_t eh = g.h + g.ph * 2 + c.a.i1, ew = g.w + g.pw * 2 + c.a.i2;
  int64_t kh = g.dh * (g.kh - 1) + 1, kw = g.dw * (g.kw - 1) + 1;
  FW_CHECK(eh >= kh && ew >= kw, "[conv2d] Calculated padded input size per channel: (", eh, " x ", ew,
           "). Kernel size: (", kh, " x ", kw, "). Kernel size can't be greater than actual input size");
  g.oh = (eh - kh) / g.sh + 1;
  g.ow = (ew - kw) / g.sw + 1;
  return g;
}

void conv_meta(const OpCall& c, Metas& m) {
  check_conv_args(c, false);
  ConvGeom g = conv_geom(c);
  m.push_back({DimVec{g.n, g.o, g.oh, g.ow}, c.in[0].dtype()});
}

// Unfolds channels [c0, c0 + cg) of one sample into cols rows (c, i, j), columns at `col0`
// within rows of length ld.
template <class T>
void im2col(const T* x, const ConvGeom& g, int64_t cg, T* cols, int64_t ld) {
  int64_t p = g.oh * g.ow;
  for (int64_t ch = 0; ch < cg; ch++) {
    const T* xc = x + ch * g.h * g.w;
    for (int64_t i = 0; i < g.kh; i++) {
      for (int64_t j = 0; j < g.kw; j++) {
        T* row = cols + ((ch * g.kh + i) * g.kw + j) * ld;
        int64_t woff = j * g.dw - g.pw;
        // Output columns whose input column lands inside [0, w).
        int64_t lo = woff >= 0 ? 0 : (-woff + g.sw - 1) / g.sw;
        int64_t hi = std::min(g.ow, g.w - woff <= 0 ? 0 : (g.w - woff - 1) / g.sw + 1);
        lo = std::min(lo, hi);
        for (int64_t oh = 0; oh < g.oh; oh++) {
          T* r = row + oh * g.ow;
          int64_t h = oh * g.sh - g.ph + i * g.dh;
          if (h < 0 || h >= g.h) {
            std::fill(r, r + g.ow, T(0));
            continue;
          }
          const T* xr = xc + h * g.w + woff;
          std::fill(r, r + lo, T(0));
          if (g.sw == 1) std::memcpy(r + lo, xr + lo, size_t(hi - lo) * sizeof(T));
          else
            for (int64_t k = lo; k < hi; k++) r[k] = xr[k * g.sw];
          std::fill(r + hi, r + g.ow, T(0));
        }
      }
    }
  }
  (void)p;
}

template <class T>
void fill_bias(T* out, const T* bias, int64_t channels, int64_t p) {
  for (int64_t k = 0; k < channels; k++) std::fill(out + k * p, out + (k + 1) * p, bias ? bias[k] : T(0));
}

template <class T>
void conv_forward(const T* x, const T* w, const T* bias, T* y, const ConvGeom& g) {
  int64_t p = g.oh * g.ow, cg = g.c / g.groups, og = g.o / g.groups, ck = g.ck();
  bool pointwise = g.kh == 1 && g.kw == 1 && g.sh == 1 && g.sw == 1 && g.ph == 0 && g.pw == 0 && g.oh == g.h && g.ow == g.w;
  int64_t nb = std::clamp<int64_t>((kMinCols + p - 1) / std::max<int64_t>(p, 1), 1, std::max<int64_t>(g.n, 1));
  nb = std::max<int64_t>(1, std::min(nb, kMaxColsBytes / int64_t(sizeof(T)) / std::max<int64_t>(ck * p, 1)));
  if (nb == 1) {
    // One sample per GEMM, straight into the output; samples in parallel.
    int64_t grain = g.n >= 2 ? 1 : 2;
    parallel_for(0, g.n, grain, [&](int64_t b, int64_t e) {
      std::vector<T> cols(pointwise ? 0 : size_t(ck * p));
      for (int64_t s = b; s < e; s++) {
        for (int64_t gr = 0; gr < g.groups; gr++) {
          const T* xs = x + (s * g.c + gr * cg) * g.h * g.w;
          T* ys = y + (s * g.o + gr * og) * p;
          if (!pointwise) im2col(xs, g, cg, cols.data(), p);
          fill_bias(ys, bias ? bias + gr * og : nullptr, og, p);
          gemm<T>(og, p, ck, T(1), {w + gr * og * ck, ck, 1}, {pointwise ? xs : cols.data(), p, 1}, T(1), ys, p);
        }
      }
    });
    return;
  }
  // Several samples side by side in one wide GEMM.
  std::vector<T> cols(size_t(ck * nb * p)), tmp(size_t(og * nb * p));
  for (int64_t s0 = 0; s0 < g.n; s0 += nb) {
    int64_t cnt = std::min(nb, g.n - s0), ld = cnt * p;
    for (int64_t gr = 0; gr < g.groups; gr++) {
      parallel_for(0, cnt, 1, [&](int64_t b, int64_t e) {
        for (int64_t k = b; k < e; k++) im2col(x + ((s0 + k) * g.c + gr * cg) * g.h * g.w, g, cg, cols.data() + k * p, ld);
      });
      gemm<T>(og, ld, ck, T(1), {w + gr * og * ck, ck, 1}, {cols.data(), ld, 1}, T(0), tmp.data(), ld);
      parallel_for(0, cnt * og, std::max<int64_t>(1, kGrainSize / p), [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; r++) {
          int64_t k = r / og, oc = r % og;
          const T* src = tmp.data() + oc * ld + k * p;
          T* dst = y + ((s0 + k) * g.o + gr * og + oc) * p;
          T bv = bias ? bias[gr * og + oc] : T(0);
#pragma omp simd
          for (int64_t q = 0; q < p; q++) dst[q] = src[q] + bv;
        }
      });
    }
  }
}

// Note [Depthwise convolutions]
// One input and one output channel per group (Conformer's and Conv-TasNet's depthwise conv1d,
// MobileNet's 3x3): im2col would build a (kh*kw) x positions matrix per channel for a GEMM with one
// row, and oneDNN took ~1.5 ms for a (4, 80, 400) conv1d with 31 taps (libtorch ~2 ms), 2.7 GMAC/s.
// Here each (sample, channel) plane starts from its bias and adds one tap at a time over the run of
// output positions that tap sees inside the input: contiguous, vectorised multiply-adds in L1.
// Each output sums its taps in (kh, kw) order whatever the thread count. Float conv1d takes it;
// float conv2d stays with oneDNN, whose 3x3 kernels were 4.5x faster on (8, 64, 56, 56), where
// rows of 56 leave little for the blocks below (this kernel: 3.7 ms, oneDNN 0.84 ms, libtorch 14.6
// ms); other dtypes take it instead of im2col. With stride 1, float
// outputs away from the edges go 32 at a time in four 8-float vector accumulators over all taps
// (one load and one multiply-add per tap and vector, one store at the end); a pass per tap
// through the output row was load/store-bound at ~5 cycles per vector.
typedef float DwVec __attribute__((vector_size(32)));

inline DwVec dw_load(const float* p) {
  DwVec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Outputs [o0, o0 + 32) of row oh of one float plane, every tap inside the input (stride 1 in w).
inline void depthwise_block32(const float* xs, const float* ws, float bv, float* yr, int64_t oh, int64_t o0,
                              const ConvGeom& g) {
  DwVec acc[4];
  for (auto& a : acc) a = DwVec{} + bv;
  for (int64_t kh = 0; kh < g.kh; kh++) {
    const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
    if (ih < 0 || ih >= g.h) continue;
    const float* xr = xs + ih * g.w + o0 - g.pw;
    for (int64_t kw = 0; kw < g.kw; kw++) {
      const float wv = ws[kh * g.kw + kw];
      const float* xp = xr + kw * g.dw;
      for (int i = 0; i < 4; i++) acc[i] += wv * dw_load(xp + 8 * i);
    }
  }
  std::memcpy(yr + o0, acc, sizeof acc);
}

template <class T>
void depthwise_forward(const T* x, const T* w, const T* bias, T* y, const ConvGeom& g) {
  const int64_t planes = g.n * g.c, p = g.oh * g.ow, taps = g.kh * g.kw;
  const int64_t grain = std::max<int64_t>(1, kGrainSize / std::max<int64_t>(p * taps, 1));
  parallel_for(0, planes, grain, [&](int64_t b, int64_t e) {
    for (int64_t pl = b; pl < e; pl++) {
      const int64_t ch = pl % g.c;
      const T* xs = x + pl * g.h * g.w;
      const T* ws = w + ch * taps;
      T* ys = y + pl * p;
      const T bv = bias ? bias[ch] : T(0);
      // Outputs whose every tap lies inside the row: [first, last) (stride 1).
      int64_t first = g.ow, last = 0;
      if constexpr (std::is_same_v<T, float>)
        if (g.sw == 1) {
          first = std::max<int64_t>(0, g.pw);
          last = std::min(g.ow, g.w + g.pw - (g.kw - 1) * g.dw);
        }
      for (int64_t oh = 0; oh < g.oh; oh++) {
        T* yr = ys + oh * g.ow;
        int64_t fast_end = first;
        if constexpr (std::is_same_v<T, float>)
          for (; fast_end + 32 <= last; fast_end += 32) depthwise_block32(xs, ws, bv, yr, oh, fast_end, g);
        // The rest ([0, first) and [fast_end, ow)): one pass per tap.
        auto rest = [&](int64_t r0, int64_t r1) {
          if (r0 >= r1) return;
          std::fill(yr + r0, yr + r1, bv);
          for (int64_t kh = 0; kh < g.kh; kh++) {
            const int64_t ih = oh * g.sh - g.ph + kh * g.dh;
            if (ih < 0 || ih >= g.h) continue;
            const T* xr = xs + ih * g.w;
            for (int64_t kw = 0; kw < g.kw; kw++) {
              const T wv = ws[kh * g.kw + kw];
              // Outputs o read input o * sw + off, inside [0, w) for o in [lo, hi).
              const int64_t off = kw * g.dw - g.pw;
              const int64_t lo = std::max(r0, off >= 0 ? 0 : (-off + g.sw - 1) / g.sw);
              const int64_t hi = std::min(r1, g.w - off <= 0 ? 0 : (g.w - off + g.sw - 1) / g.sw);
              if (g.sw == 1) {
                const T* xp = xr + off;
#pragma omp simd
                for (int64_t o = lo; o < hi; o++) yr[o] += wv * xp[o];
              } else {
                for (int64_t o = lo; o < hi; o++) yr[o] += wv * xr[o * g.sw + off];
              }
            }
          }
        };
        if (fast_end > first) {
          rest(0, first);
          rest(fast_end, g.ow);
        } else {
          rest(0, g.ow);
        }
      }
    }
  });
}

// Runs body<T>(x, w, bias, y) on contiguous compute-type (float for 16-bit floats) buffers.
template <class Body>
void conv_compute(const OpCall& c, const Tensor& out, Body body) {
  ScalarType t = c.in[0].dtype(), ct = (t == kHalf || t == kBFloat16) ? kFloat : t;
  Tensor x = cast(c.in[0], ct).contiguous(), w = cast(c.in[1], ct).contiguous();
  Tensor b = (c.a.flags & 1) ? cast(c.in[2], ct).contiguous() : Tensor();
  Tensor y = ct == t && out.is_contiguous() ? out : make_tensor(out.sizes(), ct);
  visit_float(ct, c.def.name, [&]<class T>() {
    body.template operator()<T>(x.data_ptr<T>(), w.data_ptr<T>(), b.defined() ? b.data_ptr<T>() : nullptr,
                                y.data_ptr<T>());
  });
  if (!y.is_same(out)) out.copy_(y);
}

// A bfloat16 tensor's elements as the bits oneDNN's bfloat16 calls take (null when undefined).
[[maybe_unused]] uint16_t* bf16_bits(const Tensor& t) {
  return t.defined() ? reinterpret_cast<uint16_t*>(t.data_ptr<BFloat16>()) : nullptr;
}

DnnlConvShape dnnl_shape(const ConvGeom& g, int64_t ph_end, int64_t pw_end) {
  return {g.n, g.c, g.h, g.w, g.o, g.oh, g.ow, g.kh, g.kw, g.sh, g.sw, g.ph, g.pw, ph_end, pw_end, g.dh, g.dw, g.groups};
}

void conv_kernel(const OpCall& c, Outs& o) {
  ConvGeom g = conv_geom(c);
  if (o[0].numel() == 0) return;
  // Note [Channels-last convolutions]: a channels-last float32 input with a channels-last result
  // (result_order gives conv2d one when the input or the weight is channels-last) goes to oneDNN
  // as NHWC memory, read and written where it lies.
  const Tensor& x = c.in[0];
  if (x.dtype() == kFloat && c.in[1].dtype() == kFloat && !x.is_contiguous() &&
      x.is_contiguous(MemoryFormat::ChannelsLast) && o[0].is_contiguous(MemoryFormat::ChannelsLast)) {
    Tensor w = c.in[1].contiguous(), b = (c.a.flags & 1) ? c.in[2].to(kFloat).contiguous() : Tensor();
    DnnlConvShape s = dnnl_shape(g, g.ph + c.a.i1, g.pw + c.a.i2);
    s.nhwc = true;
    if (dnnl_conv2d(s, x.data_ptr<float>(), w.data_ptr<float>(), b.defined() ? b.data_ptr<float>() : nullptr,
                    o[0].data_ptr<float>()))
      return;
  }
#if defined(__AVX512BF16__)
  // bfloat16 on oneDNN's AVX512-BF16 kernels (Note [bfloat16 convolutions] in conv_dnnl.cpp).
  if (x.dtype() == kBFloat16 && c.in[1].dtype() == kBFloat16) {
    Tensor xc = x.contiguous(), w = c.in[1].contiguous(), b = (c.a.flags & 1) ? c.in[2].to(kFloat).contiguous() : Tensor();
    Tensor y = o[0].is_contiguous() ? o[0] : make_tensor(o[0].sizes(), kBFloat16);
    DnnlConvShape s = dnnl_shape(g, g.ph + c.a.i1, g.pw + c.a.i2);
    s.bf16 = true;
    if (dnnl_conv2d_bf16(s, bf16_bits(xc), bf16_bits(w), b.defined() ? b.data_ptr<float>() : nullptr, bf16_bits(y))) {
      if (!y.is_same(o[0])) o[0].copy_(y);
      return;
    }
  }
#endif
  const bool depthwise = g.groups > 1 && g.groups == g.c && g.o == g.c;
  conv_compute(c, o[0], [&]<class T>(const T* x, const T* w, const T* b, T* y) {
    if constexpr (std::is_same_v<T, float>) {
      // Float 2-D depthwise stays with oneDNN, faster on short rows (Note [Depthwise convolutions]).
      if (depthwise && g.h == 1 && g.kh == 1) return depthwise_forward(x, w, b, y, g);
      if (dnnl_conv2d(dnnl_shape(g, g.ph + c.a.i1, g.pw + c.a.i2), x, w, b, y)) return;
    }
    if (depthwise) return depthwise_forward(x, w, b, y, g);
    conv_forward(x, w, b, y, g);
  });
}

// ---- transposed convolution

ConvGeom convt_geom(const OpCall& c) {
  const Tensor &x = c.in[0], &w = c.in[1];
  int64_t groups = c.a.i0;
  ConvGeom g{x.size(0), x.size(1), x.size(2), x.size(3), w.size(1) * groups, w.size(2), w.size(3), 0, 0,
             c.a.ints[0], c.a.ints[1], c.a.ints2[0], c.a.ints2[1], c.a.ints3[0], c.a.ints3[1], groups};
  g.oh = (g.h - 1) * g.sh - 2 * g.ph + g.dh * (g.kh - 1) + c.a.i1 + 1;
  g.ow = (g.w - 1) * g.sw - 2 * g.pw + g.dw * (g.kw - 1) + c.a.i2 + 1;
  return g;
}

void convt_meta(const OpCall& c, Metas& m) {
  check_conv_args(c, true);
  const DimVec &s = c.a.ints, &d = c.a.ints3;
  int64_t oph = c.a.i1, opw = c.a.i2;
  FW_CHECK((oph < s[0] || oph < d[0]) && (opw < s[1] || opw < d[1]), "[conv_transpose2d] output padding must be smaller "
           "than either stride or dilation, but got output_padding_height: ", oph, " output_padding_width: ", opw,
           " stride_height: ", s[0], " stride_width: ", s[1], " dilation_height: ", d[0], " dilation_width: ", d[1]);
  ConvGeom g = convt_geom(c);
  FW_CHECK(g.oh > 0 && g.ow > 0, "[conv_transpose2d] Given input size per channel: (", g.h, " x ", g.w,
           "). Calculated output size per channel: (", g.oh, " x ", g.ow, "). Output size is too small");
  m.push_back({DimVec{g.n, g.o, g.oh, g.ow}, c.in[0].dtype()});
}

// Adds cols rows (co, i, j) over input positions (h, w) into the output planes of one group.
template <class T>
void col2im(const T* cols, const ConvGeom& g, int64_t og, T* y) {
  int64_t p = g.h * g.w;
  for (int64_t co = 0; co < og; co++) {
    T* yc = y + co * g.oh * g.ow;
    for (int64_t i = 0; i < g.kh; i++) {
      for (int64_t j = 0; j < g.kw; j++) {
        const T* row = cols + ((co * g.kh + i) * g.kw + j) * p;
        for (int64_t h = 0; h < g.h; h++) {
          int64_t oh = h * g.sh - g.ph + i * g.dh;
          if (oh < 0 || oh >= g.oh) continue;
          for (int64_t w = 0; w < g.w; w++) {
            int64_t ow = w * g.sw - g.pw + j * g.dw;
            if (ow >= 0 && ow < g.ow) yc[oh * g.ow + ow] += row[h * g.w + w];
          }
        }
      }
    }
  }
}

template <class T>
void convt_forward(const T* x, const T* w, const T* bias, T* y, const ConvGeom& g) {
  int64_t p = g.h * g.w, q = g.oh * g.ow, cg = g.c / g.groups, og = g.o / g.groups, rows = og * g.kh * g.kw;
  parallel_for(0, g.n, 1, [&](int64_t b, int64_t e) {
    std::vector<T> cols(size_t(rows * p));
    for (int64_t s = b; s < e; s++) {
      for (int64_t gr = 0; gr < g.groups; gr++) {
        T* ys = y + (s * g.o + gr * og) * q;
        fill_bias(ys, bias ? bias + gr * og : nullptr, og, q);
        // cols = W_g^T x_g: W_g is [cg, rows] row-major, so its transpose has unit row stride.
        gemm<T>(rows, p, cg, T(1), {w + gr * cg * rows, 1, rows}, {x + (s * g.c + gr * cg) * p, p, 1}, T(0),
                cols.data(), p);
        col2im(cols.data(), g, og, ys);
      }
    }
  });
}

void convt_kernel(const OpCall& c, Outs& o) {
  ConvGeom g = convt_geom(c);
  if (o[0].numel() == 0) return;
  conv_compute(c, o[0], [&]<class T>(const T* x, const T* w, const T* b, T* y) {
    if constexpr (std::is_same_v<T, float>)
      if (dnnl_conv_transpose2d(dnnl_shape(g, g.ph - c.a.i1, g.pw - c.a.i2), x, w, b, y)) return;
    convt_forward(x, w, b, y, g);
  });
}

// ---- backward rules
//
// Note [Convolution backward]
// Both ops are linear in input and in weight, and each is the other's adjoint in the input:
// grad_input of conv2d is conv_transpose2d of the grad, and grad_input of conv_transpose2d is
// conv2d of the grad. The weight grads of both are one correlation, conv_weight_grad(a, b):
// gw[o, c, i, j] = sum over n, h, w of b[n, o, h, w] * a_padded[n, c, h*s + i*d, w*s + j*d],
// which is itself a conv2d with the roles swapped (batch = channels of a, channels = batch,
// kernel = b, stride and dilation exchanged); groups move into the channel dim. Everything goes
// through dispatch, so the rules are differentiable again (double backward).

Tensor conv2d_call(const Tensor& x, const Tensor& w, int64_t sh, int64_t sw, int64_t ph, int64_t pw, int64_t dh,
                   int64_t dw, int64_t groups, int64_t eh, int64_t ew) {
  OpAttrs a;
  a.ints = {sh, sw};
  a.ints2 = {ph, pw};
  a.ints3 = {dh, dw};
  a.i0 = groups;
  a.i1 = eh;
  a.i2 = ew;
  return dispatch1(OpId::conv2d, {x, w}, a);
}

// b: [N, G*og, BH, BW] correlated with a: [N, G*cg, AH, AW] (padded by p, plus eh/ew after)
// gives the weight grad [G*og, cg, kh, kw].
Tensor conv_weight_grad(const Tensor& a, const Tensor& b, int64_t kh, int64_t kw, const OpAttrs& at, int64_t eh,
                        int64_t ew) {
  int64_t n = a.size(0), g = at.i0, cg = a.size(1) / g, og = b.size(1) / g;
  Tensor xa = a.reshape({n, g, cg, a.size(2), a.size(3)}).permute({2, 1, 0, 3, 4}).reshape({cg, g * n, a.size(2), a.size(3)});
  Tensor wb = b.reshape({n, g, og, b.size(2), b.size(3)}).permute({1, 2, 0, 3, 4}).reshape({g * og, n, b.size(2), b.size(3)});
  Tensor r = conv2d_call(xa, wb, at.ints3[0], at.ints3[1], at.ints2[0], at.ints2[1], at.ints[0], at.ints[1], g, eh, ew);
  if (r.size(2) != kh) r = r.narrow(2, 0, kh);
  if (r.size(3) != kw) r = r.narrow(3, 0, kw);
  return r.transpose(0, 1);
}

Tensor fit_spatial(Tensor t, int64_t h, int64_t w) {
  if (t.size(2) != h) t = t.narrow(2, 0, h);
  if (t.size(3) != w) t = t.narrow(3, 0, w);
  return t;
}

// Without create_graph (and outside fw::compile's tracer, which must see the composite ops), the
// float32 gradients come straight from oneDNN's backward primitives (Note [Fused conv2d backward]
// in conv_dnnl.cpp). False: not taken, nothing written.
bool conv_vjp_dnnl(const VjpCtx& c, const Tensor& g, Outs& r) {
  const Tensor &x = c.in[0], &w = c.in[1];
  if (tls().tracer || is_grad_enabled() || !conv_dnnl_enabled()) return false;
  if (x.numel() == 0 || g.numel() == 0) return false;
  bool bf16 = false;
#if defined(__AVX512BF16__)
  bf16 = x.dtype() == kBFloat16 && w.dtype() == kBFloat16 && g.dtype() == kBFloat16;
#endif
  if (!bf16 && (x.dtype() != kFloat || w.dtype() != kFloat || g.dtype() != kFloat)) return false;
  const OpAttrs& a = c.a;
  bool has_bias = a.flags & 1;
  bool want_gx = c.needs[0], want_gw = c.needs[1], want_gb = has_bias && c.needs[2];
  OpCall call{op_def(OpId::conv2d), c.in, a};
  ConvGeom geom = conv_geom(call);
  if (g.size(0) != geom.n || g.size(1) != geom.o || g.size(2) != geom.oh || g.size(3) != geom.ow) return false;
  Tensor xc = x.contiguous(), wc = w.contiguous(), gc = g.contiguous();
  const ScalarType t = bf16 ? kBFloat16 : kFloat;
  Tensor gx = want_gx ? make_tensor(x.sizes(), t) : Tensor();
  Tensor gw = want_gw ? make_tensor(w.sizes(), t) : Tensor();
  Tensor gb = want_gb ? make_tensor(c.in[2].sizes(), kFloat) : Tensor();  // float for both
  ProfileScope prof("op", "conv2d_backward (oneDNN)");
  if (bf16) {
    DnnlConvShape s = dnnl_shape(geom, geom.ph + a.i1, geom.pw + a.i2);
    s.bf16 = true;
    if (!dnnl_conv2d_backward_bf16(s, bf16_bits(xc), bf16_bits(wc), bf16_bits(gc), bf16_bits(gx), bf16_bits(gw),
                                   want_gb ? gb.data_ptr<float>() : nullptr))
      return false;
    if (want_gx) r[0] = gx;
    if (want_gw) r[1] = gw;
    if (want_gb) r[2] = gb.to(c.in[2].dtype());
    return true;
  }
  if (!dnnl_conv2d_backward(dnnl_shape(geom, geom.ph + a.i1, geom.pw + a.i2), xc.data_ptr<float>(),
                            wc.data_ptr<float>(), gc.data_ptr<float>(), want_gx ? gx.data_ptr<float>() : nullptr,
                            want_gw ? gw.data_ptr<float>() : nullptr, want_gb ? gb.data_ptr<float>() : nullptr))
    return false;
  if (want_gx) r[0] = gx;
  if (want_gw) r[1] = gw;
  if (want_gb) r[2] = gb;
  return true;
}

void conv_vjp(const VjpCtx& c, ArrayRef<Tensor> gs, Outs& r) {
  const Tensor &x = c.in[0], &w = c.in[1], &g = gs[0];
  const OpAttrs& a = c.a;
  if (conv_vjp_dnnl(c, g, r)) return;
  if (c.needs[0]) {
    // The transposed conv's natural size is H + e - rem; output_padding adds back rem - e.
    int64_t op[2], extra[2] = {a.i1, a.i2};
    for (int k = 0; k < 2; k++) {
      int64_t span = x.size(2 + k) + 2 * a.ints2[k] + extra[k] - (a.ints3[k] * (w.size(2 + k) - 1) + 1);
      op[k] = std::max<int64_t>(span % a.ints[k] - extra[k], 0);
    }
    Tensor gi = conv_transpose2d(g, w, {}, a.ints, a.ints2, {op[0], op[1]}, a.i0, a.ints3);
    r[0] = fit_spatial(gi, x.size(2), x.size(3));
  }
  if (c.needs[1]) {
    r[1] = conv_weight_grad(x, g, w.size(2), w.size(3), a, a.i1, a.i2);
  }
  if ((a.flags & 1) && c.needs[2]) r[2] = g.sum({0, 2, 3});
}

void convt_vjp(const VjpCtx& c, ArrayRef<Tensor> gs, Outs& r) {
  const Tensor &x = c.in[0], &w = c.in[1], &g = gs[0];
  const OpAttrs& a = c.a;
  if (c.needs[0]) {
    Tensor gi = conv2d_call(g, w, a.ints[0], a.ints[1], a.ints2[0], a.ints2[1], a.ints3[0], a.ints3[1], a.i0, 0, 0);
    r[0] = fit_spatial(gi, x.size(2), x.size(3));
  }
  if (c.needs[1]) r[1] = conv_weight_grad(g, x, w.size(2), w.size(3), a, 0, 0);
  if ((a.flags & 1) && c.needs[2]) r[2] = g.sum({0, 2, 3});
}

// ---- public functions

DimVec expand_conv_arg(IntArrayRef v, size_t n, const char* op, const char* what) {
  FW_CHECK(v.size() == 1 || v.size() == n, "[", op, "] expected ", what, " to be a single integer value or a list of ",
           n, " values to match the convolution dimensions, but got ", what, "=", v);
  DimVec out;
  for (size_t i = 0; i < n; i++) out.push_back(v.size() == 1 ? v[0] : v[i]);
  return out;
}

OpAttrs conv_attrs(const char* op, size_t nd, IntArrayRef stride, IntArrayRef padding, IntArrayRef dilation,
                   int64_t groups, const Tensor& b) {
  OpAttrs a;
  a.ints = expand_conv_arg(stride, nd, op, "stride");
  a.ints2 = expand_conv_arg(padding, nd, op, "padding");
  a.ints3 = expand_conv_arg(dilation, nd, op, "dilation");
  if (nd == 1) a.ints.insert(0, 1), a.ints2.insert(0, 0), a.ints3.insert(0, 1);
  a.i0 = groups;
  a.flags = b.defined() ? 1 : 0;
  return a;
}

std::vector<Tensor> conv_inputs(const Tensor& x, const Tensor& w, const Tensor& b) {
  std::vector<Tensor> in{x, w};
  if (b.defined()) in.push_back(b);
  return in;
}

// Adds the batch dim to an unbatched input (libtorch accepts (C, *) as well as (N, C, *)).
bool unbatched(const Tensor& x, int64_t spatial, const char* op) {
  FW_CHECK(x.dim() == spatial + 1 || x.dim() == spatial + 2, "[", op, "] Expected ", spatial + 1, "D (unbatched) or ",
           spatial + 2, "D (batched) input to ", op, ", but got input of size: ", x.sizes());
  return x.dim() == spatial + 1;
}

Tensor conv2d_impl(const Tensor& x, const Tensor& w, const Tensor& b, const OpAttrs& a) {
  bool ub = unbatched(x, 2, "conv2d");
  Tensor y = dispatch1(OpId::conv2d, conv_inputs(ub ? x.unsqueeze(0) : x, w, b), a);
  // Note [Channels-last results] (core/layout.h): libtorch's rule is the input's or the weight's.
  return ub ? y.squeeze(0) : channels_last_if(y, is_channels_last(x) || is_channels_last(w));
}

Tensor conv1d_impl(const Tensor& x, const Tensor& w, const Tensor& b, const OpAttrs& a) {
  bool ub = unbatched(x, 1, "conv1d");
  FW_CHECK(w.dim() == 3, "[conv1d] Expected 3-dimensional weight, but got weight of size ", w.sizes());
  // Row-major, as for max_pool1d: a (N, C, 1, L) view of a transposed input would pass for
  // channels-last (Note [Channels-last results]); libtorch's conv1d result is row-major.
  Tensor x4 = (ub ? x.unsqueeze(0) : x).unsqueeze(2).contiguous();
  Tensor y = dispatch1(OpId::conv2d, conv_inputs(x4, w.unsqueeze(2), b), a).squeeze(2);
  return ub ? y.squeeze(0) : y;
}

// padding="same"/"valid": symmetric padding, with the odd remainder of "same" after the input.
// padding="same" (stride 1 only): per spatial dim, half the dilated kernel's extent before the
// input and the odd remainder after it.
void same_padding(const char* op, const Tensor& w, const DimVec& stride, const DimVec& dilation, DimVec& before,
                  DimVec& after) {
  for (int64_t s : stride) FW_CHECK(s == 1, "[", op, "] padding='same' is not supported for strided convolutions");
  const size_t nd = stride.size();
  FW_CHECK(w.dim() == int64_t(nd) + 2, "[", op, "] Expected ", nd + 2, "-dimensional weight, but got weight of size ",
           w.sizes());
  for (size_t i = 0; i < nd; i++) {
    int64_t total = dilation[i] * (w.size(int64_t(2 + i)) - 1);
    before.push_back(total / 2);
    after.push_back(total - 2 * (total / 2));
  }
}

OpAttrs string_padding_attrs(const char* op, size_t nd, const Tensor& w, IntArrayRef stride, const std::string& padding,
                             IntArrayRef dilation, int64_t groups, const Tensor& b) {
  FW_CHECK(padding == "same" || padding == "valid", "[", op, "] Invalid padding string: '", padding, "'");
  OpAttrs a = conv_attrs(op, nd, stride, 0, dilation, groups, b);
  if (padding == "valid") return a;
  DimVec before, after;
  same_padding(op, w, expand_conv_arg(stride, nd, op, "stride"), expand_conv_arg(dilation, nd, op, "dilation"), before,
               after);
  if (nd == 1) before.insert(0, 0), after.insert(0, 0);  // conv1d runs as conv2d over (1, L)
  a.ints2 = before;
  a.i1 = after[0];
  a.i2 = after[1];
  return a;
}

// Note [3-d convolutions]
// conv3d is one conv2d whose channels are (group, depth tap, channel): the padded input's depth
// windows (an unfold view, [N, C, OD, H, W, KD]) are copied once as [N * OD, (g, kd, c), H, W],
// the weight [O, C/g, KD, KH, KW] is viewed as [O, (kd, c), KH, KW], and conv2d (oneDNN or
// im2col + GEMM, with the groups and the H/W strides, padding and dilation) gives
// [N * OD, O, OH, OW], permuted back to [N, O, OD, OH, OW]. The GEMM's inner dimension is the
// whole C/g * KD * KH * KW window, as a vol2col convolution's. conv_transpose3d is the adjoint:
// one conv_transpose2d with (g, kd, o) output channels over [N * D, C, H, W] gives every depth
// tap's contribution, and one index_add along depth sums them at d * stride + kd * dilation.
// Autograd and fw::compile see only primitives (conv2d, views, copies, index_add).
// The 2-d primitive's attrs for the H and W dims of 3-d arguments; i1/i2 = extra[1], extra[2]
// (padding after the input, or output_padding).
OpAttrs hw_attrs(const DimVec& s, const DimVec& p, const DimVec& d, int64_t groups, const DimVec& extra) {
  OpAttrs a;
  a.ints = DimVec{s[1], s[2]};
  a.ints2 = DimVec{p[1], p[2]};
  a.ints3 = DimVec{d[1], d[2]};
  a.i0 = groups;
  a.i1 = extra[1];
  a.i2 = extra[2];
  return a;
}

Tensor conv3d_impl(const Tensor& x, const Tensor& w, const Tensor& b, const DimVec& s, const DimVec& p,
                   const DimVec& extra, const DimVec& d, int64_t g) {
  const char* op = "conv3d";
  bool ub = unbatched(x, 3, op);
  Tensor xb = ub ? x.unsqueeze(0) : x;
  check_conv(op, 3, xb, w, b.defined() ? &b : nullptr, s, p, d, g, false);
  int64_t e[3], k[3];
  for (int i = 0; i < 3; i++) {
    e[i] = xb.size(2 + i) + 2 * p[size_t(i)] + extra[size_t(i)];
    k[i] = d[size_t(i)] * (w.size(2 + i) - 1) + 1;
  }
  FW_CHECK(e[0] >= k[0] && e[1] >= k[1] && e[2] >= k[2], "[", op, "] Calculated padded input size per channel: (",
           e[0], " x ", e[1], " x ", e[2], "). Kernel size: (", k[0], " x ", k[1], " x ", k[2],
           "). Kernel size can't be greater than actual input size");
  const int64_t n = xb.size(0), c = xb.size(1), h = xb.size(3), wd = xb.size(4), o = w.size(0), kd = w.size(2);
  if (p[0] > 0 || extra[0] > 0) xb = constant_pad_nd(xb, {0, 0, 0, 0, p[0], p[0] + extra[0]});
  const int64_t od = (e[0] - k[0]) / s[0] + 1;
  Tensor win = xb.unfold(2, k[0], s[0]);  // [n, c, od, h, wd, span]
  if (d[0] > 1) win = win.slice(5, 0, k[0], d[0]);
  Tensor cols = win.reshape({n, g, c / g, od, h, wd, kd}).permute({0, 3, 1, 6, 2, 4, 5}).reshape({n * od, c * kd, h, wd});
  Tensor w2 = w.permute({0, 2, 1, 3, 4}).reshape({o, kd * (c / g), w.size(3), w.size(4)});
  OpAttrs a = hw_attrs(s, p, d, g, extra);
  a.flags = b.defined() ? 1 : 0;
  Tensor y = dispatch1(OpId::conv2d, conv_inputs(cols, w2, b), a);  // [n * od, o, oh, ow]
  y = y.view({n, od, o, y.size(2), y.size(3)}).permute({0, 2, 1, 3, 4}).contiguous();
  return ub ? y.squeeze(0) : y;
}

}  // namespace

FW_DEFINE_OP(conv2d) {
  d.meta = conv_meta;
  d.cpu = conv_kernel;
  d.vjp = conv_vjp;
}
FW_DEFINE_OP(conv_transpose2d) {
  d.meta = convt_meta;
  d.cpu = convt_kernel;
  d.vjp = convt_vjp;
}

Tensor conv2d(const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  return conv2d_impl(x, w, b, conv_attrs("conv2d", 2, stride, padding, dilation, groups, b));
}
Tensor conv1d(const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  return conv1d_impl(x, w, b, conv_attrs("conv1d", 1, stride, padding, dilation, groups, b));
}
Tensor detail::conv_padding_mode(int64_t nd, const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef stride,
                                 const std::string& padding, IntArrayRef dilation, int64_t groups) {
  if (nd == 3) {
    const char* op = "conv3d";
    FW_CHECK(padding == "same" || padding == "valid", "[", op, "] Invalid padding string: '", padding, "'");
    DimVec s = expand_conv_arg(stride, 3, op, "stride"), d = expand_conv_arg(dilation, 3, op, "dilation");
    if (padding == "valid") return conv3d_impl(x, w, b, s, DimVec{0, 0, 0}, DimVec{0, 0, 0}, d, groups);
    DimVec p, extra;
    same_padding(op, w, s, d, p, extra);
    return conv3d_impl(x, w, b, s, p, extra, d, groups);
  }
  const char* op = nd == 1 ? "conv1d" : "conv2d";
  OpAttrs a = string_padding_attrs(op, size_t(nd), w, stride, padding, dilation, groups, b);
  return nd == 1 ? conv1d_impl(x, w, b, a) : conv2d_impl(x, w, b, a);
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  bool ub = unbatched(x, 2, "conv_transpose2d");
  OpAttrs a = conv_attrs("conv_transpose2d", 2, stride, padding, dilation, groups, b);
  DimVec op = expand_conv_arg(output_padding, 2, "conv_transpose2d", "output_padding");
  a.i1 = op[0];
  a.i2 = op[1];
  Tensor y = dispatch1(OpId::conv_transpose2d, conv_inputs(ub ? x.unsqueeze(0) : x, w, b), a);
  return ub ? y.squeeze(0) : y;
}
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  bool ub = unbatched(x, 1, "conv_transpose1d");
  FW_CHECK(w.dim() == 3, "[conv_transpose1d] Expected 3-dimensional weight, but got weight of size ", w.sizes());
  OpAttrs a = conv_attrs("conv_transpose1d", 1, stride, padding, dilation, groups, b);
  a.i2 = expand_conv_arg(output_padding, 1, "conv_transpose1d", "output_padding")[0];
  Tensor x4 = (ub ? x.unsqueeze(0) : x).unsqueeze(2);
  Tensor y = dispatch1(OpId::conv_transpose2d, conv_inputs(x4, w.unsqueeze(2), b), a).squeeze(2);
  return ub ? y.squeeze(0) : y;
}

Tensor conv3d(const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef stride, IntArrayRef padding,
              IntArrayRef dilation, int64_t groups) {
  const char* op = "conv3d";
  return conv3d_impl(x, w, b, expand_conv_arg(stride, 3, op, "stride"), expand_conv_arg(padding, 3, op, "padding"),
                     DimVec{0, 0, 0}, expand_conv_arg(dilation, 3, op, "dilation"), groups);
}

Tensor conv_transpose3d(const Tensor& x, const Tensor& w, const Tensor& b, IntArrayRef stride, IntArrayRef padding,
                        IntArrayRef output_padding, int64_t groups, IntArrayRef dilation) {
  const char* op = "conv_transpose3d";
  bool ub = unbatched(x, 3, op);
  Tensor xb = ub ? x.unsqueeze(0) : x;
  DimVec s = expand_conv_arg(stride, 3, op, "stride"), p = expand_conv_arg(padding, 3, op, "padding");
  DimVec op_ = expand_conv_arg(output_padding, 3, op, "output_padding"), d = expand_conv_arg(dilation, 3, op, "dilation");
  check_conv(op, 3, xb, w, b.defined() ? &b : nullptr, s, p, d, groups, true);
  for (size_t i = 0; i < 3; i++)
    FW_CHECK(op_[i] >= 0 && (op_[i] < s[i] || op_[i] < d[i]), "[", op, "] output padding must be smaller than either "
             "stride or dilation, but got output_padding=", op_, ", stride=", s, ", dilation=", d);
  const int64_t n = xb.size(0), cin = xb.size(1), id = xb.size(2), ih = xb.size(3), iw = xb.size(4);
  const int64_t og = w.size(1), kd = w.size(2), o = og * groups;
  int64_t out[3];
  for (size_t i = 0; i < 3; i++)
    out[i] = (xb.size(int64_t(2 + i)) - 1) * s[i] - 2 * p[i] + d[i] * (w.size(int64_t(2 + i)) - 1) + op_[i] + 1;
  FW_CHECK(out[0] > 0 && out[1] > 0 && out[2] > 0, "[", op, "] Given input size per channel: (", id, " x ", ih, " x ",
           iw, "). Calculated output size per channel: (", out[0], " x ", out[1], " x ", out[2],
           "). Output size is too small");
  // Every depth tap's contribution: [n * id, (g, kd, og), oh, ow] (Note [3-d convolutions]).
  Tensor xs = xb.permute({0, 2, 1, 3, 4}).reshape({n * id, cin, ih, iw});
  Tensor w2 = w.permute({0, 2, 1, 3, 4}).reshape({cin, kd * og, w.size(3), w.size(4)});
  Tensor y = dispatch1(OpId::conv_transpose2d, {xs, w2}, hw_attrs(s, p, d, groups, op_));
  const int64_t plane = out[1] * out[2];
  Tensor taps = y.view({n, id, groups, kd, og, plane}).permute({0, 2, 4, 3, 1, 5}).reshape({n, o, kd * id, plane});
  // Tap kd of input depth i lands at i * stride + kd * dilation of the unpadded output.
  std::vector<int64_t> at(size_t(kd * id));
  for (int64_t t = 0; t < kd; t++)
    for (int64_t i = 0; i < id; i++) at[size_t(t * id + i)] = i * s[0] + t * d[0];
  const int64_t full = (id - 1) * s[0] + d[0] * (kd - 1) + 1 + op_[0];
  Tensor sums = zeros({n, o, full, plane}, TensorOptions(x.dtype()).device(x.device()))
                    .index_add(2, tensor(at, TensorOptions(kLong).device(x.device())), taps);
  Tensor r = sums.narrow(2, p[0], out[0]).reshape({n, o, out[0], out[1], out[2]});
  if (b.defined()) r = r + b.view({1, o, 1, 1, 1});
  return ub ? r.squeeze(0) : r;
}

}  // namespace fw
