// softmax / log_softmax, resampling (upsample_nearest2d, upsample_bilinear2d) and the
// composites dropout, upsample_*1d.
//
// Note [Softmax kernels]
// The reduced dim is either innermost (rows: max, exp(x - max) written once (fn::exp_f32), sum,
// scale; the row stays in L1 between passes) or strided (a [dim, inner] slab per outer index,
// processed in column blocks so every pass is a contiguous, vectorised run over the block).
// Sums and maxima use `omp simd` reductions, which let the compiler reassociate without
// -ffast-math. float16/bfloat16 compute in float; the 1.13 CPU kernels do the same.
#include <cmath>

#include "core/convert.h"
#include "core/layout.h"
#include "core/op.h"
#include "core/ops/composite_util.h"
#include "core/ops/separable.h"
#include "core/parallel.h"
#include "core/vec_math.h"
#include "core/visit.h"
#include "fw/nn/functional.h"

namespace fw {
using namespace detail;

namespace {

template <class T>
void exp_inplace(T* p, int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    VecF32<fn::Exp>::run(p, p, n);
  } else {
    for (int64_t i = 0; i < n; i++) p[i] = std::exp(p[i]);
  }
}

template <bool Log, class T>
void softmax_row(const T* x, T* y, int64_t n) {
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
  // exp(x - max) and its sum in one pass: fn::Exp is plain arithmetic for float (exp_f32), so
  // the loop vectorises with the exp inline. The sum goes in blocks of 256, each summed in vector
  // lanes of T and added to a double: the terms are >= 0, so the error stays within ~40 ulp of
  // the sum however long the row (a row-long float accumulator drifts with n / lanes); generated
  // row kernels sum their exps the same way (Note [Blocked float sums], codegen/cpp_backend.cpp).
  double s = 0;
  for (int64_t b = 0; b < n; b += 256) {
    const int64_t e = n - b > 256 ? b + 256 : n;
    T sb = 0;
    if constexpr (Log) {
#pragma omp simd reduction(+ : sb)
      for (int64_t i = b; i < e; i++) sb += fn::Exp{}(T(x[i] - m));
    } else {
#pragma omp simd reduction(+ : sb)
      for (int64_t i = b; i < e; i++) {
        const T v = fn::Exp{}(T(x[i] - m));
        y[i] = v;
        sb += v;
      }
    }
    s += double(sb);
  }
  if constexpr (Log) {
    T shift = m + std::log(T(s));
#pragma omp simd
    for (int64_t i = 0; i < n; i++) y[i] = x[i] - shift;
  } else {
    T inv = T(1) / T(s);
#pragma omp simd
    for (int64_t i = 0; i < n; i++) y[i] *= inv;
  }
}

constexpr int64_t kColBlock = 64;

// Columns [c0, c1) of one [dim, inner] slab.
template <bool Log, class T>
void softmax_cols(const T* x, T* y, int64_t dim, int64_t inner, int64_t c0, int64_t c1) {
  T m[kColBlock], s[kColBlock];
  int64_t w = c1 - c0;
  for (int64_t c = 0; c < w; c++) m[c] = -std::numeric_limits<T>::infinity(), s[c] = 0;
  for (int64_t d = 0; d < dim; d++) {
    const T* xr = x + d * inner + c0;
#pragma omp simd
    for (int64_t c = 0; c < w; c++) m[c] = xr[c] > m[c] ? xr[c] : m[c];
  }
  for (int64_t d = 0; d < dim; d++) {
    const T* xr = x + d * inner + c0;
    T* yr = y + d * inner + c0;
#pragma omp simd
    for (int64_t c = 0; c < w; c++) yr[c] = xr[c] - m[c];
    exp_inplace(yr, w);
#pragma omp simd
    for (int64_t c = 0; c < w; c++) s[c] += yr[c];
  }
  for (int64_t c = 0; c < w; c++) s[c] = Log ? m[c] + std::log(s[c]) : T(1) / s[c];
  for (int64_t d = 0; d < dim; d++) {
    const T* xr = x + d * inner + c0;
    T* yr = y + d * inner + c0;
    if constexpr (Log) {
#pragma omp simd
      for (int64_t c = 0; c < w; c++) yr[c] = xr[c] - s[c];
    } else {
#pragma omp simd
      for (int64_t c = 0; c < w; c++) yr[c] *= s[c];
    }
  }
}

template <bool Log, class T>
void softmax_contig(const T* x, T* y, int64_t outer, int64_t dim, int64_t inner) {
  if (dim == 0 || outer * inner == 0) return;
  if (inner == 1) {
    parallel_for(0, outer, std::max<int64_t>(1, kGrainSize / dim), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) softmax_row<Log>(x + i * dim, y + i * dim, dim);
    });
    return;
  }
  int64_t blocks = (inner + kColBlock - 1) / kColBlock;
  int64_t per_task = dim * std::min(inner, kColBlock);
  parallel_for(0, outer * blocks, std::max<int64_t>(1, kGrainSize / per_task), [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; t++) {
      int64_t o = t / blocks, c0 = (t % blocks) * kColBlock;
      softmax_cols<Log>(x + o * dim * inner, y + o * dim * inner, dim, inner, c0, std::min(inner, c0 + kColBlock));
    }
  });
}

void softmax_meta(const OpCall& c, Metas& m) {
  const Tensor& x = c.in[0];
  wrap_dim(c.a.i0, x.dim(), c.def.name);
  ScalarType t = c.a.has_dtype() ? c.a.dtype : x.dtype();
  FW_CHECK(is_floating_point(t), "[", c.def.name, "] not implemented for dtype ", dtype_str(t));
  m.push_back({DimVec(x.sizes()), t});
}

template <bool Log>
void softmax_kernel(const OpCall& c, Outs& o) {
  const Tensor& in = c.in[0];
  int64_t dim = wrap_dim(c.a.i0, in.dim(), c.def.name);
  ScalarType t = o[0].dtype();
  ScalarType ct = (t == kHalf || t == kBFloat16) ? kFloat : t;
  Tensor x = cast(cast(in, t), ct).contiguous();
  Tensor y = ct == t ? o[0] : make_tensor(in.sizes(), ct);
  int64_t outer = 1, inner = 1, n = in.dim() == 0 ? 1 : in.size(dim);
  for (int64_t d = 0; d < dim; d++) outer *= in.size(d);
  for (int64_t d = dim + 1; d < in.dim(); d++) inner *= in.size(d);
  visit_float(ct, c.def.name, [&]<class T>() {
    softmax_contig<Log>(x.data_ptr<T>(), y.data_ptr<T>(), outer, n, inner);
  });
  if (!y.is_same(o[0])) o[0].copy_(y);
}

OpAttrs softmax_attrs(int64_t dim, std::optional<ScalarType> dtype) {
  OpAttrs a;
  a.i0 = dim;
  if (dtype) a.dtype = *dtype;
  return a;
}

// ---- resampling. attrs: ints = {out_h, out_w}; f0, f1 = scale_h, scale_w (0 = not given);
// flags bit 0 = align_corners (bilinear).

// Source-to-destination ratio, as PyTorch's compute_scales_value / area_pixel_compute_scale.
template <class T>
T resample_scale(int64_t in, int64_t out, double scale, bool align_corners) {
  if (align_corners) return out > 1 ? T(in - 1) / T(out - 1) : T(0);
  return scale > 0 ? T(1.0 / scale) : T(in) / T(out);
}

int64_t nearest_index(int64_t dst, int64_t in, int64_t out, double scale) {
  if (in == out) return dst;
  if (out == 2 * in) return dst >> 1;
  float s = resample_scale<float>(in, out, scale, false);
  return std::min(int64_t(std::floor(float(dst) * s)), in - 1);
}

void upsample_meta(const OpCall& c, Metas& m) {
  const Tensor& x = c.in[0];
  const char* op = c.def.name;
  FW_CHECK(x.dim() == 4, "[", op, "] expected a 4-D input (N, C, H, W), got ", x.dim(), "-D input of size ",
           x.sizes());
  FW_CHECK(c.a.ints.size() == 2, "[", op, "] expected output_size with 2 elements, but got ", c.a.ints.size());
  FW_CHECK(c.a.ints[0] > 0 && c.a.ints[1] > 0, "[", op,
           "] Input and output sizes should be greater than 0, but got output (H: ", c.a.ints[0],
           ", W: ", c.a.ints[1], ")");
  FW_CHECK(x.size(2) > 0 && x.size(3) > 0, "[", op,
           "] Input and output sizes should be greater than 0, but got input (H: ", x.size(2), ", W: ", x.size(3),
           ")");
  if (std::string_view(op) == "upsample_bilinear2d")
    FW_CHECK(x.is_floating_point(), "[", op, "] not implemented for dtype ", dtype_str(x.dtype()));
  m.push_back({DimVec{x.size(0), x.size(1), c.a.ints[0], c.a.ints[1]}, x.dtype()});
}

void upsample_nearest_kernel(const OpCall& c, Outs& o) {
  Tensor x = c.in[0].contiguous();
  int64_t planes = x.size(0) * x.size(1), ih = x.size(2), iw = x.size(3);
  int64_t oh = c.a.ints[0], ow = c.a.ints[1];
  std::vector<int64_t> hs(static_cast<size_t>(oh)), ws(static_cast<size_t>(ow));
  for (int64_t i = 0; i < oh; i++) hs[size_t(i)] = nearest_index(i, ih, oh, c.a.f0);
  for (int64_t j = 0; j < ow; j++) ws[size_t(j)] = nearest_index(j, iw, ow, c.a.f1);
  visit_storage(x.dtype(), "upsample_nearest2d", [&]<class T>() {
    const T* px = x.data_ptr<T>();
    T* py = o[0].data_ptr<T>();
    parallel_for(0, planes * oh, std::max<int64_t>(1, kGrainSize / ow), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; r++) {
        const T* src = px + (r / oh) * ih * iw + hs[size_t(r % oh)] * iw;
        T* dst = py + r * ow;
        for (int64_t j = 0; j < ow; j++) dst[j] = src[ws[size_t(j)]];
      }
    });
  });
}

// Linear interpolation taps for one axis: out index -> (i0, i1, w0, w1).
template <class T>
struct Taps {
  std::vector<int64_t> i0, i1;
  std::vector<T> w0, w1;
  Taps(int64_t in, int64_t out, double scale, bool align) : i0(size_t(out)), i1(size_t(out)), w0(size_t(out)), w1(size_t(out)) {
    T s = resample_scale<T>(in, out, scale, align);
    for (int64_t k = 0; k < out; k++) {
      T src = align ? s * T(k) : std::max(s * (T(k) + T(0.5)) - T(0.5), T(0));
      int64_t a = std::min(int64_t(src), in - 1);
      T l1 = std::min(std::max(src - T(a), T(0)), T(1));
      i0[size_t(k)] = a;
      i1[size_t(k)] = std::min(a + 1, in - 1);
      w0[size_t(k)] = T(1) - l1;
      w1[size_t(k)] = l1;
    }
  }
};

void upsample_bilinear_kernel(const OpCall& c, Outs& o) {
  ScalarType ct = o[0].dtype() == kDouble ? kDouble : kFloat;
  Tensor x = cast(c.in[0], ct).contiguous();
  Tensor y = o[0].dtype() == ct ? o[0] : make_tensor(o[0].sizes(), ct);
  int64_t planes = x.size(0) * x.size(1), ih = x.size(2), iw = x.size(3);
  int64_t oh = c.a.ints[0], ow = c.a.ints[1];
  bool align = c.a.flags & 1;
  visit_float(ct, "upsample_bilinear2d", [&]<class T>() {
    Taps<T> th(ih, oh, c.a.f0, align), tw(iw, ow, c.a.f1, align);
    const T* px = x.data_ptr<T>();
    T* py = y.data_ptr<T>();
    parallel_for(0, planes * oh, std::max<int64_t>(1, kGrainSize / ow), [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; r++) {
        size_t h = size_t(r % oh);
        const T* r0 = px + (r / oh) * ih * iw + th.i0[h] * iw;
        const T* r1 = px + (r / oh) * ih * iw + th.i1[h] * iw;
        T* dst = py + r * ow;
        for (int64_t j = 0; j < ow; j++) {
          size_t k = size_t(j);
          dst[j] = th.w0[h] * (tw.w0[k] * r0[tw.i0[k]] + tw.w1[k] * r0[tw.i1[k]]) +
                   th.w1[h] * (tw.w0[k] * r1[tw.i0[k]] + tw.w1[k] * r1[tw.i1[k]]);
        }
      }
    });
  });
  if (!y.is_same(o[0])) o[0].copy_(y);
}

OpAttrs upsample_attrs(IntArrayRef out, std::optional<double> sh, std::optional<double> sw, bool align) {
  OpAttrs a;
  a.ints = DimVec(out);
  a.f0 = sh.value_or(0);
  a.f1 = sw.value_or(0);
  a.flags = align ? 1 : 0;
  return a;
}

void check_1d(const Tensor& x, IntArrayRef out, const char* op) {
  FW_CHECK(x.dim() == 3, "[", op, "] expected a 3-D input (N, C, W), got ", x.dim(), "-D input of size ", x.sizes());
  FW_CHECK(out.size() == 1, "[", op, "] expected output_size with 1 element, but got ", out.size());
}

// ---- vjps. softmax and log_softmax use their output y (the gradient is in y's dtype; the
// engine casts it back to the input's).

void softmax_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& y = c.out[0];
  if (y.dim() == 0) {
    r[0] = fw::zeros_like(g[0]);
    return;
  }
  int64_t dim = wrap_dim(c.a.i0, y.dim(), "softmax");
  Tensor gy = g[0] * y;
  r[0] = gy - y * gy.sum({dim}, true);
}

void log_softmax_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& y = c.out[0];
  if (y.dim() == 0) {
    r[0] = fw::zeros_like(g[0]);
    return;
  }
  int64_t dim = wrap_dim(c.a.i0, y.dim(), "log_softmax");
  r[0] = g[0] - fw::exp(y) * g[0].sum({dim}, true);
}

// Interpolation matrices (Note [Separable resampling vjps]) with the forward kernels' rules.
Tensor nearest_matrix(int64_t in, int64_t out, double scale, ScalarType t) {
  std::vector<double> w(size_t(out * in), 0.0);
  for (int64_t o = 0; o < out; o++) w[size_t(o * in + nearest_index(o, in, out, scale))] = 1;
  return resample_matrix(std::move(w), out, in, t);
}

template <class T>
Tensor linear_matrix(int64_t in, int64_t out, double scale, bool align, ScalarType t) {
  Taps<T> taps(in, out, scale, align);
  std::vector<double> w(size_t(out * in), 0.0);
  for (int64_t o = 0; o < out; o++) {
    size_t k = size_t(o);
    w[size_t(o * in + taps.i0[k])] += double(taps.w0[k]);
    w[size_t(o * in + taps.i1[k])] += double(taps.w1[k]);
  }
  return resample_matrix(std::move(w), out, in, t);
}

void upsample_nearest_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  ScalarType t = g[0].dtype();
  r[0] = separable_adjoint(g[0], nearest_matrix(x.size(2), c.a.ints[0], c.a.f0, t),
                           nearest_matrix(x.size(3), c.a.ints[1], c.a.f1, t));
}

void upsample_bilinear_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  ScalarType t = g[0].dtype();
  bool align = c.a.flags & 1;
  auto mat = [&](int64_t in, int64_t out, double scale) {
    return t == kDouble ? linear_matrix<double>(in, out, scale, align, t) : linear_matrix<float>(in, out, scale, align, t);
  };
  r[0] = separable_adjoint(g[0], mat(x.size(2), c.a.ints[0], c.a.f0), mat(x.size(3), c.a.ints[1], c.a.f1));
}

}  // namespace

FW_DEFINE_OP(softmax) {
  d.meta = softmax_meta;
  d.cpu = softmax_kernel<false>;
  d.vjp = softmax_vjp;
  d.vjp_uses_out = true;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(log_softmax) {
  d.meta = softmax_meta;
  d.cpu = softmax_kernel<true>;
  d.vjp = log_softmax_vjp;
  d.vjp_uses_out = true;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(upsample_nearest2d) {
  d.meta = upsample_meta;
  d.cpu = upsample_nearest_kernel;
  d.vjp = upsample_nearest_vjp;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(upsample_bilinear2d) {
  d.meta = upsample_meta;
  d.cpu = upsample_bilinear_kernel;
  d.vjp = upsample_bilinear_vjp;
  d.vjp_reads_in = false;
}

Tensor softmax(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype) {
  return dispatch1(OpId::softmax, {t}, softmax_attrs(dim, dtype));
}
Tensor log_softmax(const Tensor& t, int64_t dim, std::optional<ScalarType> dtype) {
  return dispatch1(OpId::log_softmax, {t}, softmax_attrs(dim, dtype));
}
Tensor Tensor::softmax(int64_t dim, std::optional<ScalarType> dtype) const { return fw::softmax(*this, dim, dtype); }
Tensor Tensor::log_softmax(int64_t dim, std::optional<ScalarType> dtype) const {
  return fw::log_softmax(*this, dim, dtype);
}

Tensor upsample_nearest2d(const Tensor& x, IntArrayRef output_size, std::optional<double> scales_h,
                          std::optional<double> scales_w) {
  return channels_last_if(dispatch1(OpId::upsample_nearest2d, {x}, upsample_attrs(output_size, scales_h, scales_w, false)),
                          is_channels_last(x));  // Note [Channels-last results] (core/layout.h)
}
Tensor upsample_bilinear2d(const Tensor& x, IntArrayRef output_size, bool align_corners,
                           std::optional<double> scales_h, std::optional<double> scales_w) {
  return channels_last_if(
      dispatch1(OpId::upsample_bilinear2d, {x}, upsample_attrs(output_size, scales_h, scales_w, align_corners)),
      is_channels_last(x));
}
Tensor upsample_nearest1d(const Tensor& x, IntArrayRef output_size, std::optional<double> scale) {
  check_1d(x, output_size, "upsample_nearest1d");
  // The op directly: a (N, C, 1, L) view of a transposed input would pass for channels-last.
  return dispatch1(OpId::upsample_nearest2d, {x.unsqueeze(2)}, upsample_attrs({1, output_size[0]}, std::nullopt, scale, false))
      .squeeze(2);
}
Tensor upsample_linear1d(const Tensor& x, IntArrayRef output_size, bool align_corners, std::optional<double> scale) {
  check_1d(x, output_size, "upsample_linear1d");
  return dispatch1(OpId::upsample_bilinear2d, {x.unsqueeze(2)},
                   upsample_attrs({1, output_size[0]}, std::nullopt, scale, align_corners))
      .squeeze(2);
}

Tensor dropout(const Tensor& x, double p, bool train) {
  FW_CHECK(p >= 0 && p <= 1, "[dropout] dropout probability has to be between 0 and 1, but got ", p);
  if (!train || p == 0 || x.numel() == 0) return x;
  FW_CHECK(x.is_floating_point(), "[dropout] expected a floating point input, got ", dtype_str(x.dtype()));
  if (p == 1) return x * zeros({}, x.dtype());
  Tensor keep = bernoulli(x, 1 - p);
  return x * (keep.mul_(1 / (1 - p)));
}

Tensor detail::feature_dropout_mask(const Tensor& x, int64_t kept, double p) {
  DimVec noise(x.sizes());
  for (size_t d = size_t(kept); d < noise.size(); d++) noise[d] = 1;
  if (p == 1) return zeros(noise, x.options());
  return empty(noise, x.options()).bernoulli_(1 - p).div_(1 - p);
}

namespace nn::functional {

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const BatchNormFuncOptions& o) {
  if (o.training() && x.dim() >= 2) {
    FW_CHECK(x.numel() / std::max<int64_t>(x.size(1), 1) != 1,
             "[batch_norm] Expected more than 1 value per channel when training, got input size ", x.sizes());
  }
  return fw::batch_norm(x, o.weight(), o.bias(), running_mean, running_var, o.training(), o.momentum().value_or(0.1),
                        o.eps());
}

Tensor dropout2d(Tensor x, const Dropout2dFuncOptions& o) {
  double p = o.p();
  FW_CHECK(p >= 0 && p <= 1, "[dropout2d] dropout probability has to be between 0 and 1, but got ", p);
  if (!o.training() || p == 0) return x;
  FW_CHECK(x.dim() == 3 || x.dim() == 4, "[dropout2d] expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got ",
           x.dim(), "-D input of size ", x.sizes());
  Tensor y = x * fw::detail::feature_dropout_mask(x, x.dim() - 2, p);
  return o.inplace() ? x.copy_(y) : y;
}

namespace {

// Output sizes and the scales to hand to the kernels (empty when recomputed from the sizes).
void interpolate_sizes(const Tensor& x, const InterpolateFuncOptions& o, DimVec& out,
                       std::vector<std::optional<double>>& scales) {
  size_t sd = size_t(x.dim() - 2);
  FW_CHECK(o.size().has_value() != o.scale_factor().has_value(), "[interpolate] ",
           o.size() ? "only one of size or scale_factor should be defined" : "either size or scale_factor should be defined");
  scales.assign(sd, std::nullopt);
  if (o.size()) {
    const auto& s = *o.size();
    FW_CHECK(s.size() == 1 || s.size() == sd, "[interpolate] size shape must match input shape. Input is ", sd,
             "D, size is ", s.size());
    for (size_t i = 0; i < sd; i++) out.push_back(s.size() == 1 ? s[0] : s[i]);
    return;
  }
  const auto& f = *o.scale_factor();
  FW_CHECK(f.size() == 1 || f.size() == sd, "[interpolate] scale_factor shape must match input shape. Input is ", sd,
           "D, scale_factor is ", f.size());
  bool keep = !o.recompute_scale_factor().value_or(false);
  for (size_t i = 0; i < sd; i++) {
    double sc = f.size() == 1 ? f[0] : f[i];
    out.push_back(int64_t(std::floor(double(x.size(int64_t(i) + 2)) * sc)));
    if (keep) scales[i] = sc;
  }
}

}  // namespace

Tensor interpolate(const Tensor& x, const InterpolateFuncOptions& o) {
  std::string mode = mode_name(o.mode());
  FW_CHECK(x.dim() >= 3 && x.dim() <= 5, "[interpolate] expected a 3-D (N, C, W), 4-D (N, C, H, W) or 5-D "
           "(N, C, D, H, W) input, got ", x.dim(), "-D input of size ", x.sizes());
  FW_CHECK(!o.antialias() || (x.dim() == 4 && (mode == "bilinear" || mode == "bicubic")),
           "[interpolate] Anti-alias option is only supported for bilinear and bicubic modes (with 4-D input), got "
           "mode '", mode, "' and ", x.dim(), "-D input");
  bool interp = mode == "linear" || mode == "bilinear" || mode == "bicubic" || mode == "trilinear";
  FW_CHECK(interp || !o.align_corners().has_value(), "[interpolate] align_corners option can only be set with the "
           "interpolating modes: linear | bilinear | bicubic | trilinear");
  DimVec out;
  std::vector<std::optional<double>> sc;
  interpolate_sizes(x, o, out, sc);
  bool align = o.align_corners().value_or(false);
  int64_t sd = x.dim() - 2;
  if (sd == 3 || mode == "bicubic" || mode == "trilinear" || mode == "nearest-exact" || o.antialias())
    return detail::interpolate_separable(x, mode, out, sc, align, o.antialias());
  if (mode == "nearest")
    return sd == 1 ? upsample_nearest1d(x, out, sc[0]) : upsample_nearest2d(x, out, sc[0], sc[1]);
  if (mode == "area") return sd == 1 ? adaptive_avg_pool1d(x, out) : adaptive_avg_pool2d(x, out);
  if (mode == "linear") {
    FW_CHECK(sd == 1, "[interpolate] Got ", x.dim(), "D input, but linear mode needs 3D input");
    return upsample_linear1d(x, out, align, sc[0]);
  }
  if (mode == "bilinear") {
    FW_CHECK(sd == 2, "[interpolate] Got ", x.dim(), "D input, but bilinear mode needs 4D input");
    return upsample_bilinear2d(x, out, align, sc[0], sc[1]);
  }
  throw_error("[interpolate] mode '", mode, "' is not implemented in fw (nearest, linear, bilinear and area are)");
}

}  // namespace nn::functional

}  // namespace fw
