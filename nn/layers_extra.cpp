// Resampling, rearranging, padding, dropout and embedding-bag layers built from differentiable
// ops: interpolate's separable path, pixel_shuffle, fold/unfold, local_response_norm, dropout3d,
// alpha dropouts, embedding_bag; and the modules over them (Upsample, PixelShuffle, Fold, the
// padding modules, Dropout3d, AlphaDropout, FeatureAlphaDropout, EmbeddingBag).
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>

#include "core/ops/composite_util.h"
#include "fw/indexing.h"
#include "fw/nn/init.h"
#include "fw/nn/modules/dropout.h"
#include "fw/nn/modules/embedding.h"
#include "fw/nn/modules/fold.h"
#include "fw/nn/modules/padding.h"
#include "fw/nn/modules/pixelshuffle.h"
#include "fw/nn/modules/upsampling.h"
#include "nn/print_util.h"

namespace fw::nn {

namespace {

// libtorch's enumtype::get_enum_name: "nearest-exact" -> "kNearestExact".
std::string enum_name(const std::string& mode) {
  std::string r = "k";
  bool up = true;
  for (char ch : mode) {
    if (ch == '-' || ch == '_') {
      up = true;
      continue;
    }
    r += up ? char(std::toupper(static_cast<unsigned char>(ch))) : ch;
    up = false;
  }
  return r;
}

std::vector<int64_t> host_longs(const Tensor& t) {
  Tensor c = t.to(Device(kCPU), kLong).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

Tensor longs_like(const std::vector<int64_t>& v, const Tensor& like) { return fw::tensor(v).to(like.device()); }

}  // namespace

namespace functional {

// ---- interpolate: separable path

namespace {

// PyTorch's area_pixel_compute_scale: the source step per output index.
double source_scale(int64_t in, int64_t out, bool align, std::optional<double> scale) {
  if (align) return out > 1 ? double(in - 1) / double(out - 1) : 0.0;
  return scale && *scale > 0 ? 1.0 / *scale : double(in) / double(out);
}

// Source index of output index k (area_pixel_compute_source_index); cubic keeps negative values.
double source_index(double scale, int64_t k, bool align, bool cubic) {
  if (align) return scale * double(k);
  double src = scale * (double(k) + 0.5) - 0.5;
  return !cubic && src < 0 ? 0.0 : src;
}

// Nearest source indices, in float as PyTorch's kernels (nearest_idx / nearest_exact_idx).
std::vector<int64_t> nearest_indices(int64_t in, int64_t out, std::optional<double> scale, bool exact) {
  std::vector<int64_t> idx(static_cast<size_t>(out));
  const float s = scale && *scale > 0 ? float(1.0 / *scale) : float(in) / float(out);
  for (int64_t k = 0; k < out; k++) {
    int64_t i;
    if (!exact && out == in)
      i = k;
    else if (!exact && out == 2 * in)
      i = k >> 1;
    else if (exact)
      i = int64_t(std::floor(float((double(k) + 0.5) * double(s))));
    else
      i = int64_t(std::floor(float(k) * s));
    idx[size_t(k)] = std::min(i, in - 1);
  }
  return idx;
}

double cubic1(double x, double a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
double cubic2(double x, double a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

// Note [Antialiased interpolate]
// With antialias, bilinear and bicubic use PyTorch's (and PIL's) resampling filters instead of
// point interpolation: output o is centred at c = s (o + 1/2) in input coordinates (s the
// usual source scale), and input j gets weight f((j + 1/2 - c) / max(s, 1)), normalised to sum
// to 1 over j in [int(c - r + 1/2), int(c + r + 1/2)) within the input, where r = max(s, 1) * 1
// (bilinear, f the triangle 1 - |x|) or * 2 (bicubic, f Keys' cubic with a = -0.5, not the
// -0.75 of plain bicubic). Downsampling thus widens the filter to cover every input sample.
std::vector<double> antialias_weights(bool cubic, int64_t in, int64_t out, std::optional<double> scale, bool align) {
  std::vector<double> w(size_t(out * in), 0.0);
  const double s = source_scale(in, out, align, scale), stretch = std::max(s, 1.0);
  const double support = (cubic ? 2.0 : 1.0) * stretch, inv = 1.0 / stretch;
  auto filter = [&](double x) {
    x = std::abs(x);
    if (!cubic) return x < 1 ? 1 - x : 0.0;
    constexpr double a = -0.5;
    return x < 1 ? cubic1(x, a) : x < 2 ? cubic2(x, a) : 0.0;
  };
  for (int64_t o = 0; o < out; o++) {
    const double c = s * (double(o) + 0.5);
    const int64_t lo = std::max<int64_t>(int64_t(c - support + 0.5), 0);
    const int64_t hi = std::min<int64_t>(int64_t(c + support + 0.5), in);
    double total = 0;
    for (int64_t j = lo; j < hi; j++) total += w[size_t(o * in + j)] = filter((double(j) - c + 0.5) * inv);
    if (total != 0)
      for (int64_t j = lo; j < hi; j++) w[size_t(o * in + j)] /= total;
  }
  return w;
}

// The (out, in) matrix resampling one axis in `mode` (linear, cubic or area).
std::vector<double> resample_weights(const std::string& mode, int64_t in, int64_t out, std::optional<double> scale,
                                     bool align) {
  std::vector<double> w(size_t(out * in), 0.0);
  auto add = [&](int64_t o, int64_t i, double v) { w[size_t(o * in + std::clamp<int64_t>(i, 0, in - 1))] += v; };
  const double s = source_scale(in, out, align, scale);
  for (int64_t o = 0; o < out; o++) {
    if (mode == "area") {
      int64_t start = (o * in) / out, end = ((o + 1) * in + out - 1) / out;
      for (int64_t i = start; i < end; i++) add(o, i, 1.0 / double(end - start));
    } else if (mode == "bicubic") {
      const double a = -0.75, src = source_index(s, o, align, true);
      int64_t i0 = std::min(int64_t(std::floor(src)), in - 1);
      double t = std::clamp(src - double(i0), 0.0, 1.0);
      add(o, i0 - 1, cubic2(t + 1, a));
      add(o, i0, cubic1(t, a));
      add(o, i0 + 1, cubic1(1 - t, a));
      add(o, i0 + 2, cubic2(2 - t, a));
    } else {
      double src = source_index(s, o, align, false);
      int64_t i0 = std::min(int64_t(src), in - 1);
      double l1 = std::clamp(src - double(i0), 0.0, 1.0);
      add(o, i0, 1 - l1);
      add(o, std::min(i0 + 1, in - 1), l1);
    }
  }
  return w;
}

}  // namespace

// Note [Separable interpolate]
// Every interpolate mode is separable: resampling (N, C, d1, .., dk) is one 1-D resampling per
// spatial axis. Nearest modes gather along the axis with index_select (any dtype); linear, cubic
// and area modes multiply the axis by a constant (out, in) weight matrix built with PyTorch's
// index rules (area_pixel_compute_source_index, cubic coefficient A = -0.75 with clamped taps,
// adaptive pooling windows). Both are differentiable, so backward is free and equals PyTorch's
// (the adjoint of the same linear map). A dense matrix costs out * in per axis: right for
// feature maps, wasteful for large images, where a banded kernel would be the next step.
Tensor detail::interpolate_separable(const Tensor& x, const std::string& mode, IntArrayRef output_size,
                                     const std::vector<std::optional<double>>& scales, bool align_corners,
                                     bool antialias) {
  const int64_t sd = x.dim() - 2;
  auto need = [&](int64_t d) {
    FW_CHECK(sd == d, "[interpolate] Got ", x.dim(), "D input, but ", mode, " mode needs ", d + 2, "D input");
  };
  if (mode == "linear") need(1);
  if (mode == "bilinear" || mode == "bicubic") need(2);
  if (mode == "trilinear") need(3);
  FW_CHECK(int64_t(output_size.size()) == sd && int64_t(scales.size()) == sd, "[interpolate] expected ", sd,
           " output sizes and scales, got ", output_size.size(), " and ", scales.size());
  const bool nearest = mode == "nearest" || mode == "nearest-exact";
  FW_CHECK(!antialias || mode == "bilinear" || mode == "bicubic",
           "[interpolate] Anti-alias option is only supported for bilinear and bicubic modes, got mode '", mode, "'");
  if (!nearest)
    FW_CHECK(x.is_floating_point(), "[interpolate] mode '", mode, "' needs a floating point input, got ",
             dtype_str(x.dtype()));
  Tensor y = x;
  for (int64_t i = 0; i < sd; i++) {
    const int64_t d = 2 + i, in = x.size(d), out = output_size[size_t(i)];
    FW_CHECK(in > 0 && out > 0, "[interpolate] Input and output sizes should be greater than 0, but got input size ",
             in, " and output size ", out, " in spatial dim ", i);
    if (nearest) {
      y = y.index_select(d, longs_like(nearest_indices(in, out, scales[size_t(i)], mode == "nearest-exact"), x));
      continue;
    }
    Tensor w = fw::tensor(antialias ? antialias_weights(mode == "bicubic", in, out, scales[size_t(i)], align_corners)
                                    : resample_weights(mode, in, out, scales[size_t(i)], align_corners),
                               kDouble)
                   .to(x.device(), x.dtype())
                   .reshape({out, in});
    y = fw::matmul(y.transpose(d, -1), w.t()).transpose(d, -1);
  }
  return y.contiguous();
}

// ---- grid_sample, affine_grid, gumbel_softmax

// Note [grid_sample]
// A composite. Per spatial dim, each output point's grid value in [-1, 1] is unnormalised to an
// input coordinate (align_corners: -1 and 1 are the centres of the corner pixels; otherwise their
// outer edges) and passed through the padding rule: border clamps into [0, size - 1]; reflection
// reflects about the edges (the corner centres with align_corners, the outer edges without) and
// then clamps; zeros leaves it and masks taps outside the input. The input is then gathered at
// the 2^d neighbours (bilinear / trilinear), at the nearest point (rounding half to even, as
// nearbyint) or at the 4 x 4 neighbourhood (bicubic, cubic convolution A = -0.75, each tap's
// index through the padding rule on its own, as PyTorch). Gradients: input through gather (a
// scatter-add to the taps), grid through the tap weights and the padding rule; clamping has zero
// gradient at and beyond the bounds, as in PyTorch's backward.
namespace {

Tensor unnormalize(const Tensor& g, int64_t size, bool align) {
  return align ? (g + 1) * (double(size - 1) / 2) : ((g + 1) * double(size) - 1) / 2;
}

// Clamp into [0, size - 1] with zero gradient at and beyond the bounds.
Tensor clip(const Tensor& x, int64_t size) {
  const double hi = double(size - 1);
  return where(x <= 0, zeros_like(x), where(x >= hi, full_like(x, hi), x));
}

Tensor reflect(const Tensor& x, double twice_lo, double twice_hi) {
  if (twice_lo == twice_hi) return zeros_like(x);
  const double lo = twice_lo / 2, span = (twice_hi - twice_lo) / 2;
  Tensor in = (x - lo).abs();
  Tensor extra = fw::fmod(in, span);
  Tensor even = fw::remainder(fw::floor(in / span), 2).eq(0);
  return where(even, extra + lo, (span - extra) + lo);
}

// pad: 0 zeros, 1 border, 2 reflection.
Tensor pad_coordinate(const Tensor& x, int64_t size, int pad, bool align) {
  if (pad == 0) return x;
  if (pad == 1) return clip(x, size);
  return clip(align ? reflect(x, 0, 2.0 * double(size - 1)) : reflect(x, -1, 2.0 * double(size) - 1), size);
}

}  // namespace

Tensor grid_sample(const Tensor& input, const Tensor& grid, const GridSampleFuncOptions& o) {
  const std::string mode = mode_name(o.mode()), padding = mode_name(o.padding_mode());
  const bool align = o.align_corners().value_or(false);
  FW_CHECK(input.defined() && grid.defined(), "[grid_sample] input and grid must be defined");
  FW_CHECK(input.dim() == 4 || input.dim() == 5, "[grid_sample] expected 4-D or 5-D input, got ", input.dim(),
           "-D input of size ", input.sizes());
  FW_CHECK(grid.dim() == input.dim(), "[grid_sample] grid and input should have the same number of dimensions, "
           "but got input with sizes ", input.sizes(), " and grid with sizes ", grid.sizes());
  const int64_t d = input.dim() - 2;
  FW_CHECK(grid.size(0) == input.size(0), "[grid_sample] expected grid and input to have same batch size, but got "
           "input with sizes ", input.sizes(), " and grid with sizes ", grid.sizes());
  FW_CHECK(grid.size(-1) == d, "[grid_sample] expected grid to have size ", d, " in last dimension, but got grid with "
           "sizes ", grid.sizes());
  FW_CHECK(input.is_floating_point() && input.dtype() == grid.dtype(), "[grid_sample] expected input and grid to have "
           "the same floating point dtype, but input has ", dtype_str(input.dtype()), " and grid has ",
           dtype_str(grid.dtype()));
  FW_CHECK(mode != "bicubic" || d == 2, "[grid_sample] bicubic interpolation only supports 4D input");
  for (int64_t k = 2; k < input.dim(); k++)
    FW_CHECK(input.size(k) > 0, "[grid_sample] expected input to have non-empty spatial dimensions, but input has "
             "sizes ", input.sizes(), " with dimension ", k, " being empty");
  const int pad = padding == "zeros" ? 0 : padding == "border" ? 1 : 2;
  const int64_t n = input.size(0), c = input.size(1);
  std::vector<int64_t> in_size, out_size{n, c};
  int64_t points = 1, volume = 1;
  for (int64_t k = 0; k < d; k++) {
    in_size.push_back(input.size(2 + k));
    volume *= input.size(2 + k);
    out_size.push_back(grid.size(1 + k));
    points *= grid.size(1 + k);
  }
  Tensor flat = input.reshape({n, c, volume});
  Tensor g = grid.reshape({n, points, d});
  // Input coordinate along spatial dim k (0 = outermost): grid component d - 1 - k.
  std::vector<Tensor> coord;
  for (int64_t k = 0; k < d; k++) coord.push_back(unnormalize(g.select(2, d - 1 - k), in_size[size_t(k)], align));
  auto gather_at = [&](const std::vector<Tensor>& idx, const Tensor& weight) {
    // idx: integral-valued coordinates per dim (any range); taps outside read 0.
    Tensor valid, lin;
    for (int64_t k = 0; k < d; k++) {
      const Tensor& i = idx[size_t(k)];
      Tensor ok = (i >= 0).logical_and(i <= double(in_size[size_t(k)] - 1));
      valid = valid.defined() ? valid.logical_and(ok) : ok;
      Tensor ic = i.clamp(0, double(in_size[size_t(k)] - 1)).to(kLong);
      lin = lin.defined() ? lin * in_size[size_t(k)] + ic : ic;
    }
    Tensor v = flat.gather(2, lin.unsqueeze(1).expand({n, c, points}));
    return v * where(valid, weight, zeros_like(weight)).unsqueeze(1);
  };
  Tensor out;
  if (mode == "nearest") {
    std::vector<Tensor> idx;
    for (int64_t k = 0; k < d; k++)
      idx.push_back(fw::round(pad_coordinate(coord[size_t(k)], in_size[size_t(k)], pad, align)).detach());
    out = gather_at(idx, ones_like(idx[0]));
  } else if (mode == "bilinear") {
    std::vector<Tensor> x, lo, frac;
    for (int64_t k = 0; k < d; k++) {
      x.push_back(pad_coordinate(coord[size_t(k)], in_size[size_t(k)], pad, align));
      lo.push_back(fw::floor(x.back().detach()));
      frac.push_back(x.back() - lo.back());
    }
    for (int64_t corner = 0; corner < (int64_t(1) << d); corner++) {
      std::vector<Tensor> idx;
      Tensor w;
      for (int64_t k = 0; k < d; k++) {
        const bool up = (corner >> (d - 1 - k)) & 1;
        idx.push_back(up ? lo[size_t(k)] + 1 : lo[size_t(k)]);
        Tensor wk = up ? frac[size_t(k)] : 1 - frac[size_t(k)];
        w = w.defined() ? w * wk : wk;
      }
      Tensor v = gather_at(idx, w);
      out = out.defined() ? out + v : v;
    }
  } else {  // bicubic, 2-D
    constexpr double A = -0.75;
    auto cubic1 = [&](const Tensor& t) { return ((t * (A + 2) - (A + 3)) * t * t) + 1; };
    auto cubic2 = [&](const Tensor& t) { return ((t * A - 5 * A) * t + 8 * A) * t - 4 * A; };
    std::vector<Tensor> lo, w[2];
    for (int64_t k = 0; k < 2; k++) {
      lo.push_back(fw::floor(coord[size_t(k)].detach()));
      Tensor t = coord[size_t(k)] - lo.back();
      w[k] = {cubic2(t + 1), cubic1(t), cubic1(1 - t), cubic2(2 - t)};
    }
    for (int64_t i = 0; i < 4; i++)
      for (int64_t j = 0; j < 4; j++) {
        std::vector<Tensor> idx;
        idx.push_back(fw::trunc(pad_coordinate(lo[0] + double(i - 1), in_size[0], pad, align)));
        idx.push_back(fw::trunc(pad_coordinate(lo[1] + double(j - 1), in_size[1], pad, align)));
        Tensor v = gather_at(idx, w[0][size_t(i)] * w[1][size_t(j)]);
        out = out.defined() ? out + v : v;
      }
  }
  return out.reshape(out_size);
}

Tensor affine_grid(const Tensor& theta, IntArrayRef size, bool align_corners) {
  FW_CHECK(theta.is_floating_point(), "[affine_grid] Expected theta to have floating point type, but got ",
           dtype_str(theta.dtype()));
  FW_CHECK(size.size() == 4 || size.size() == 5, "[affine_grid] only supports 4D and 5D sizes, for 2D and 3D affine "
           "transforms, respectively. Got size ", size);
  const int64_t d = int64_t(size.size()) - 2, n = size[0];
  FW_CHECK(theta.dim() == 3 && theta.size(0) == n && theta.size(1) == d && theta.size(2) == d + 1,
           "[affine_grid] Expected a batch of ", d, "D affine matrices of shape Nx", d, "x", d + 1, " for size ", size,
           ". Got ", theta.sizes(), ".");
  for (int64_t s : size) FW_CHECK(s > 0, "[affine_grid] expected a non-empty size, got ", size);
  auto steps = [&](int64_t m) {
    if (m <= 1) return zeros({m}, TensorOptions(theta.dtype()).device(theta.device()));
    Tensor r = linspace(-1, 1, m, TensorOptions(theta.dtype()).device(theta.device()));
    return align_corners ? r : r * (double(m - 1) / double(m));
  };
  // Base grid (*spatial, d + 1): (x, y[, z], 1), x along the last (width) dim.
  std::vector<int64_t> spatial(size.begin() + 2, size.end());
  std::vector<Tensor> comps;
  for (int64_t k = 0; k < d; k++) {
    const int64_t dim = d - 1 - k;  // x varies along the last spatial dim
    std::vector<int64_t> view(size_t(d), 1);
    view[size_t(dim)] = spatial[size_t(dim)];
    comps.push_back(steps(spatial[size_t(dim)]).reshape(view).expand(spatial));
  }
  comps.push_back(ones(spatial, TensorOptions(theta.dtype()).device(theta.device())));
  Tensor base = stack(comps, -1).reshape({1, -1, d + 1});  // (1, P, d + 1)
  std::vector<int64_t> out{n};
  out.insert(out.end(), spatial.begin(), spatial.end());
  out.push_back(d);
  return matmul(base, theta.transpose(1, 2)).reshape(out);
}

Tensor gumbel_softmax(const Tensor& logits, const GumbelSoftmaxFuncOptions& o) {
  FW_CHECK(logits.is_floating_point(), "[gumbel_softmax] expected floating point logits, got ",
           dtype_str(logits.dtype()));
  FW_CHECK(o.tau() > 0, "[gumbel_softmax] tau must be positive, got ", o.tau());
  // Gumbel(0, 1) noise -log(E), E ~ Exp(1) = -log(U) with U in (0, 1).
  Tensor u = rand_like(logits).clamp(std::numeric_limits<float>::min(), 1.0 - 1e-7);
  Tensor gumbels = -fw::log(-fw::log(u));
  Tensor soft = fw::softmax((logits + gumbels) / o.tau(), o.dim());
  if (!o.hard()) return soft;
  Tensor index = std::get<1>(soft.max(o.dim(), true));
  Tensor hard = zeros_like(soft).scatter(o.dim(), index, 1.0);
  return hard - soft.detach() + soft;
}

// ---- pixel shuffle

namespace {

// (*batch, C, H, W) split as (*batch, C / r^2, r, r, H, W) (shuffle) or back (unshuffle).
Tensor shuffle(const Tensor& x, int64_t r, bool up) {
  const char* op = up ? "pixel_shuffle" : "pixel_unshuffle";
  FW_CHECK(x.dim() >= 3, "[", op, "] expects input to have at least 3 dimensions, but got input with ", x.dim(),
           " dimension(s)");
  FW_CHECK(r > 0, "[", op, "] expects a positive ", up ? "upscale_factor" : "downscale_factor", ", but got ", r);
  const int64_t c = x.size(-3), h = x.size(-2), w = x.size(-1), b = x.dim() - 3;
  std::vector<int64_t> batch(x.sizes().begin(), x.sizes().begin() + b);
  auto shape = [&](std::initializer_list<int64_t> tail) {
    std::vector<int64_t> s = batch;
    s.insert(s.end(), tail);
    return s;
  };
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < b; i++) perm.push_back(i);
  if (up) {
    FW_CHECK(c % (r * r) == 0, "[pixel_shuffle] expects its input's 'channel' dimension to be divisible by the "
             "square of upscale_factor, but input.size(-3)=", c, " is not divisible by ", r * r,
             " (input of size ", x.sizes(), ")");
    for (int64_t i : {0, 3, 1, 4, 2}) perm.push_back(b + i);
    return x.reshape(shape({c / (r * r), r, r, h, w})).permute(perm).reshape(shape({c / (r * r), h * r, w * r}));
  }
  FW_CHECK(h % r == 0, "[pixel_unshuffle] expects height to be divisible by downscale_factor, but input.size(-2)=", h,
           " is not divisible by ", r, " (input of size ", x.sizes(), ")");
  FW_CHECK(w % r == 0, "[pixel_unshuffle] expects width to be divisible by downscale_factor, but input.size(-1)=", w,
           " is not divisible by ", r, " (input of size ", x.sizes(), ")");
  for (int64_t i : {0, 2, 4, 1, 3}) perm.push_back(b + i);
  return x.reshape(shape({c, h / r, r, w / r, r})).permute(perm).reshape(shape({c * r * r, h / r, w / r}));
}

}  // namespace

Tensor pixel_shuffle(const Tensor& x, const PixelShuffleFuncOptions& o) { return shuffle(x, o.upscale_factor(), true); }
Tensor pixel_unshuffle(const Tensor& x, const PixelUnshuffleFuncOptions& o) {
  return shuffle(x, o.downscale_factor(), false);
}

}  // namespace functional
}  // namespace fw::nn

namespace fw {
Tensor pixel_shuffle(const Tensor& x, int64_t upscale_factor) {
  return nn::functional::pixel_shuffle(x, nn::functional::PixelShuffleFuncOptions(upscale_factor));
}
Tensor pixel_unshuffle(const Tensor& x, int64_t downscale_factor) {
  return nn::functional::pixel_unshuffle(x, nn::functional::PixelUnshuffleFuncOptions(downscale_factor));
}
}  // namespace fw

namespace fw::nn {
namespace functional {

// ---- fold / unfold

namespace {

// Sliding-block geometry over a (height, width) image padded by `padding`.
struct Blocks {
  int64_t kh, kw, bh, bw, hp, wp;
  // Flat positions in the padded image of element (ki, kj) of block (bi, bj), ordered
  // [ki][kj][bi][bj]: the row order of im2col's (C * kh * kw, L) columns.
  std::vector<int64_t> positions(const ExpandingArray<2>& stride, const ExpandingArray<2>& dilation) const {
    std::vector<int64_t> pos;
    pos.reserve(size_t(kh * kw * bh * bw));
    for (int64_t ki = 0; ki < kh; ki++)
      for (int64_t kj = 0; kj < kw; kj++)
        for (int64_t bi = 0; bi < bh; bi++)
          for (int64_t bj = 0; bj < bw; bj++)
            pos.push_back((bi * (*stride)[0] + ki * (*dilation)[0]) * wp + bj * (*stride)[1] + kj * (*dilation)[1]);
    return pos;
  }
};

Blocks blocks(const char* op, int64_t h, int64_t w, const ExpandingArray<2>& kernel, const ExpandingArray<2>& dilation,
              const ExpandingArray<2>& padding, const ExpandingArray<2>& stride) {
  for (int d = 0; d < 2; d++) {
    FW_CHECK((*kernel)[d] > 0, "[", op, "] kernel size should be greater than zero, but got kernel_size=",
             nn::detail::list(kernel));
    FW_CHECK((*stride)[d] > 0, "[", op, "] stride should be greater than zero, but got stride=",
             nn::detail::list(stride));
    FW_CHECK((*dilation)[d] > 0, "[", op, "] dilation should be greater than zero, but got dilation=",
             nn::detail::list(dilation));
    FW_CHECK((*padding)[d] >= 0, "[", op, "] padding should be non-negative, but got padding=",
             nn::detail::list(padding));
  }
  Blocks b;
  b.kh = (*kernel)[0];
  b.kw = (*kernel)[1];
  b.hp = h + 2 * (*padding)[0];
  b.wp = w + 2 * (*padding)[1];
  b.bh = (b.hp - (*dilation)[0] * (b.kh - 1) - 1) / (*stride)[0] + 1;
  b.bw = (b.wp - (*dilation)[1] * (b.kw - 1) - 1) / (*stride)[1] + 1;
  FW_CHECK(b.bh >= 1 && b.bw >= 1 && b.hp - (*dilation)[0] * (b.kh - 1) - 1 >= 0 &&
               b.wp - (*dilation)[1] * (b.kw - 1) - 1 >= 0,
           "[", op, "] Given input with spatial size (", h, ", ", w, "), kernel_size=", nn::detail::list(kernel),
           ", dilation=", nn::detail::list(dilation), ", padding=", nn::detail::list(padding),
           ", calculated shape of the array of sliding blocks is non-positive");
  return b;
}

}  // namespace

Tensor unfold(const Tensor& x, const UnfoldFuncOptions& o) {
  FW_CHECK(((x.dim() == 3 || x.dim() == 4) && x.numel() > 0) || (x.dim() == 4 && x.size(0) == 0),
           "[unfold] Expected 3D or 4D (batch mode) tensor for input with possibly 0 batch size and non-zero "
           "dimensions for input, but got: ", x.sizes());
  const bool batched = x.dim() == 4;
  Tensor xb = batched ? x : x.unsqueeze(0);
  const int64_t n = xb.size(0), c = xb.size(1);
  Blocks b = blocks("unfold", xb.size(2), xb.size(3), o.kernel_size(), o.dilation(), o.padding(), o.stride());
  const int64_t ph = (*o.padding())[0], pw = (*o.padding())[1];
  Tensor padded = ph || pw ? fw::constant_pad_nd(xb, {pw, pw, ph, ph}) : xb;
  Tensor cols = padded.reshape({n, c, b.hp * b.wp})
                    .index_select(2, longs_like(b.positions(o.stride(), o.dilation()), x))
                    .reshape({n, c * b.kh * b.kw, b.bh * b.bw});
  return batched ? cols : cols.squeeze(0);
}

Tensor fold(const Tensor& x, const FoldFuncOptions& o) {
  FW_CHECK(((x.dim() == 2 || x.dim() == 3) && x.numel() > 0) || (x.dim() == 3 && x.size(0) == 0),
           "[fold] Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size and non-zero "
           "dimensions for input, but got: ", x.sizes());
  const bool batched = x.dim() == 3;
  Tensor xb = batched ? x : x.unsqueeze(0);
  const int64_t h = (*o.output_size())[0], w = (*o.output_size())[1];
  Blocks b = blocks("fold", h, w, o.kernel_size(), o.dilation(), o.padding(), o.stride());
  const int64_t n = xb.size(0), k = b.kh * b.kw;
  FW_CHECK(xb.size(1) % k == 0, "[fold] Expected size of input's dimension ", batched ? 1 : 0,
           " to be divisible by the product of kernel_size, but got input.size(", batched ? 1 : 0, ")=", xb.size(1),
           " and kernel_size=", nn::detail::list(o.kernel_size()));
  FW_CHECK(xb.size(2) == b.bh * b.bw, "[fold] Given output_size=", nn::detail::list(o.output_size()),
           ", kernel_size=", nn::detail::list(o.kernel_size()), ", dilation=", nn::detail::list(o.dilation()),
           ", padding=", nn::detail::list(o.padding()), ", stride=", nn::detail::list(o.stride()),
           ", expected size of input's dimension ", batched ? 2 : 1, " to match the calculated number of sliding "
           "blocks ", b.bh, " * ", b.bw, " = ", b.bh * b.bw, ", but got input.size(", batched ? 2 : 1, ")=",
           xb.size(2));
  const int64_t c = xb.size(1) / k;
  Tensor sums = fw::zeros({n, c, b.hp * b.wp}, TensorOptions(x.dtype()).device(x.device()))
                    .index_add(2, longs_like(b.positions(o.stride(), o.dilation()), x), xb.reshape({n, c, -1}));
  Tensor img = sums.reshape({n, c, b.hp, b.wp}).narrow(2, (*o.padding())[0], h).narrow(3, (*o.padding())[1], w);
  return batched ? img.contiguous() : img.squeeze(0).contiguous();
}

// ---- local response norm

Tensor local_response_norm(const Tensor& x, const LocalResponseNormFuncOptions& o) {
  FW_CHECK(x.dim() >= 3, "[local_response_norm] Expected 3D or higher dimensionality input (got ", x.dim(),
           " dimensions, input of size ", x.sizes(), ")");
  FW_CHECK(o.size() > 0, "[local_response_norm] size must be positive, got ", o.size());
  if (x.numel() == 0) return x;
  const int64_t n = x.size(0), c = x.size(1), size = o.size();
  Tensor sq = (x * x).reshape({n, c, -1});
  Tensor avg = fw::constant_pad_nd(sq, {0, 0, size / 2, (size - 1) / 2}).unfold(1, size, 1).mean({-1});
  return x / avg.reshape(x.sizes()).mul(o.alpha()).add(o.k()).pow(o.beta());
}

// ---- dropouts

namespace {

void check_p(double p, const char* op) {
  FW_CHECK(p >= 0 && p <= 1, "[", op, "] dropout probability has to be between 0 and 1, but got ", p);
}

// (N, C, 1, ..., 1): one draw per channel of x.
std::vector<int64_t> channel_noise_shape(const Tensor& x) {
  std::vector<int64_t> s(x.sizes().begin(), x.sizes().end());
  for (size_t d = 2; d < s.size(); d++) s[d] = 1;
  return s;
}

// PyTorch's _dropout_impl with alpha_dropout: kept elements become a * x + b, dropped ones
// a * (-alpha') + b, where alpha' = SELU's -alpha * scale, so SELU activations keep mean 0 and
// variance 1.
Tensor alpha_dropout_impl(Tensor x, double p, bool training, bool inplace, bool feature, const char* op) {
  check_p(p, op);
  if (p == 0 || !training || x.numel() == 0) return x;
  if (feature)
    FW_CHECK(x.dim() >= 2, "[", op, "] Feature dropout requires at least 2 dimensions in the input, got input of "
             "size ", x.sizes());
  if (p == 1) return functional::detail::maybe_inplace(x, x * fw::zeros({}, x.dtype()), inplace);
  FW_CHECK(x.is_floating_point(), "[", op, "] expected a floating point input, got ", dtype_str(x.dtype()));
  constexpr double alpha = 1.7580993408473766;
  const double a = 1.0 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
  std::vector<int64_t> shape = feature ? channel_noise_shape(x) : std::vector<int64_t>(x.sizes().begin(), x.sizes().end());
  Tensor keep = fw::bernoulli(fw::empty(shape, TensorOptions(x.dtype()).device(x.device())), 1 - p);
  Tensor b = keep.add(-1).mul_(alpha * a).add_(alpha * a * p);
  return functional::detail::maybe_inplace(x, x * keep.mul(a) + b, inplace);
}

}  // namespace

Tensor dropout3d(Tensor x, const Dropout3dFuncOptions& o) {
  check_p(o.p(), "dropout3d");
  if (!o.training() || o.p() == 0) return x;
  FW_CHECK(x.dim() == 4 || x.dim() == 5, "[dropout3d] expected a 4-D (C, D, H, W) or 5-D (N, C, D, H, W) input, got ",
           x.dim(), "-D input of size ", x.sizes());
  return functional::detail::maybe_inplace(x, x * fw::detail::feature_dropout_mask(x, x.dim() - 3, o.p()), o.inplace());
}

Tensor alpha_dropout(Tensor x, const AlphaDropoutFuncOptions& o) {
  return alpha_dropout_impl(x, o.p(), o.training(), o.inplace(), false, "alpha_dropout");
}

Tensor feature_alpha_dropout(Tensor x, const FeatureAlphaDropoutFuncOptions& o) {
  return alpha_dropout_impl(x, o.p(), o.training(), o.inplace(), true, "feature_alpha_dropout");
}

// ---- embedding_bag

namespace {

// Bags as the host sees them: for every kept element (not padding_idx) its position, table row
// and bag; per bag the number of kept elements.
struct BagPlan {
  std::vector<int64_t> pos, row, bag, count;
};

BagPlan plan_bags(const std::vector<int64_t>& idx, const std::vector<int64_t>& off, bool include_last_offset,
                  int64_t num_rows, int64_t padding_idx) {
  const int64_t n = int64_t(idx.size());
  for (int64_t k = 0; k < n; k++)
    FW_CHECK(idx[size_t(k)] >= 0 && idx[size_t(k)] < num_rows, "[embedding_bag] index ", idx[size_t(k)],
             " at position ", k, " is out of range for ", num_rows, " embeddings");
  if (include_last_offset)
    FW_CHECK(!off.empty(), "[embedding_bag] include_last_offset=true needs at least one offset (the end of the last bag)");
  if (!off.empty()) {
    FW_CHECK(off[0] == 0, "[embedding_bag] offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to "
             "start from position 0. However, got ", off[0]);
    FW_CHECK(off.back() <= n, "[embedding_bag] offsets[-1] can not be greater than input's length ", n,
             " but got offsets[-1] of ", off.back());
  }
  for (size_t k = 1; k < off.size(); k++)
    FW_CHECK(off[k] >= off[k - 1], "[embedding_bag] offsets have to be non-decreasing, but offsets[", k, "]=", off[k],
             " < offsets[", k - 1, "]=", off[k - 1]);
  const int64_t bags = include_last_offset ? int64_t(off.size()) - 1 : int64_t(off.size());
  BagPlan p;
  p.count.assign(size_t(bags), 0);
  for (int64_t b = 0; b < bags; b++) {
    const int64_t end = b + 1 < int64_t(off.size()) ? off[size_t(b + 1)] : n;
    for (int64_t k = off[size_t(b)]; k < end; k++) {
      if (idx[size_t(k)] == padding_idx) continue;
      p.pos.push_back(k);
      p.row.push_back(idx[size_t(k)]);
      p.bag.push_back(b);
      p.count[size_t(b)]++;
    }
  }
  return p;
}

// Renormalises in place the rows of weight that `idx` refers to whose norm exceeds max_norm
// (PyTorch's embedding_renorm_: scale max_norm / (norm + 1e-7)).
void renorm_rows(const Tensor& weight, std::vector<int64_t> idx, double max_norm, double norm_type) {
  std::sort(idx.begin(), idx.end());
  idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
  if (idx.empty()) return;
  NoGradGuard no_grad;
  Tensor rows = longs_like(idx, weight);
  Tensor w = weight.index_select(0, rows);
  Tensor norms = fw::norm(w, norm_type, {1}, true);
  Tensor scale = fw::where(norms.gt(max_norm), norms.add(1e-7).reciprocal().mul(max_norm), fw::ones_like(norms));
  weight.index_put_({indexing::TensorIndex(rows)}, w.mul(scale));
}

// Max over the kept rows of each bag; empty bags give zeros.
Tensor bag_max(const Tensor& rows, const BagPlan& p, int64_t dim) {
  const int64_t bags = int64_t(p.count.size());
  const int64_t width = p.count.empty() ? 0 : *std::max_element(p.count.begin(), p.count.end());
  TensorOptions to = TensorOptions(rows.dtype()).device(rows.device());
  if (width == 0) return fw::zeros({bags, dim}, to);
  std::vector<int64_t> slot(size_t(bags * width), 0), fill(size_t(bags), 0);
  std::vector<uint8_t> valid(size_t(bags * width), 0);
  for (size_t e = 0; e < p.bag.size(); e++) {
    size_t s = size_t(p.bag[e] * width + fill[size_t(p.bag[e])]++);
    slot[s] = int64_t(e);
    valid[s] = 1;
  }
  Tensor gathered = rows.index_select(0, longs_like(slot, rows)).reshape({bags, width, dim});
  Tensor mask = fw::tensor(valid).to(rows.device(), kBool).reshape({bags, width, 1});
  Tensor best = std::get<0>(fw::where(mask, gathered, -std::numeric_limits<double>::infinity()).max(1));
  Tensor empty_bag = longs_like(p.count, rows).eq(0).unsqueeze(1);
  return fw::where(empty_bag, 0.0, best);
}

}  // namespace

Tensor embedding_bag(const Tensor& input, const Tensor& weight, const EmbeddingBagFuncOptions& o) {
  FW_CHECK(weight.dim() == 2, "[embedding_bag] weight has to be a 2D Tensor, but got Tensor of dimension ", weight.dim(),
           " (size ", weight.sizes(), ")");
  FW_CHECK(!o.sparse(), "[embedding_bag] sparse=true is not supported: fw has no sparse gradients");
  FW_CHECK(input.dtype() == kLong || input.dtype() == kInt, "[embedding_bag] expected input of dtype int64 or int32, "
           "got ", dtype_str(input.dtype()));
  const std::string mode = mode_name(o.mode());
  Tensor psw = o.per_sample_weights(), offsets = o.offsets();
  if (psw.defined()) {
    FW_CHECK(psw.sizes() == input.sizes(), "[embedding_bag] If per_sample_weights (", psw.sizes(),
             ") is not null, then it must have the same shape as the input (", input.sizes(), ")");
    FW_CHECK(mode == "sum", "[embedding_bag] per_sample_weights was not null. per_sample_weights is only supported "
             "for mode='kSum' (got mode='", enum_name(mode), "'). Please open a feature request on GitHub.");
    FW_CHECK(psw.dtype() == weight.dtype(), "[embedding_bag] per_sample_weights (", dtype_str(psw.dtype()),
             ") must have the same dtype as weight (", dtype_str(weight.dtype()), ")");
  }
  FW_CHECK(mode != "max" || !o.scale_grad_by_freq(),
           "[embedding_bag] max mode does not support scaling the gradient by the frequency");
  std::vector<int64_t> idx = host_longs(input), off;
  if (input.dim() == 2) {
    FW_CHECK(!offsets.defined(), "[embedding_bag] If input is 2D, then offsets has to be null, as input is treated is "
             "a mini-batch of fixed length sequences. However, found offsets of size ", offsets.sizes());
    for (int64_t b = 0; b < input.size(0); b++) off.push_back(b * input.size(1));
    if (psw.defined()) psw = psw.reshape({-1});
  } else {
    FW_CHECK(input.dim() == 1, "[embedding_bag] input has to be 1D or 2D Tensor, but got Tensor of dimension ",
             input.dim(), " (size ", input.sizes(), ")");
    FW_CHECK(offsets.defined(), "[embedding_bag] offsets has to be a 1D Tensor but got null");
    FW_CHECK(offsets.dim() == 1, "[embedding_bag] offsets has to be a 1D Tensor, got size ", offsets.sizes());
    FW_CHECK(offsets.dtype() == kLong || offsets.dtype() == kInt,
             "[embedding_bag] expected offsets of dtype int64 or int32, got ", dtype_str(offsets.dtype()));
    off = host_longs(offsets);
  }
  const int64_t num_rows = weight.size(0), dim = weight.size(1);
  int64_t padding_idx = -1;
  if (o.padding_idx()) {
    padding_idx = *o.padding_idx();
    FW_CHECK(padding_idx < num_rows && padding_idx >= -num_rows, "[embedding_bag] padding_idx must be within "
             "num_embeddings (got ", padding_idx, " for ", num_rows, " embeddings)");
    if (padding_idx < 0) padding_idx += num_rows;
  }
  BagPlan p = plan_bags(idx, off, o.include_last_offset(), num_rows, padding_idx);
  if (o.max_norm()) renorm_rows(weight, idx, *o.max_norm(), o.norm_type());

  Tensor rows = weight.index_select(0, longs_like(p.row, weight));
  if (o.scale_grad_by_freq() && rows.requires_grad()) {
    // Same values, gradient of each looked-up row divided by how often its index occurs.
    std::vector<double> freq(size_t(num_rows), 0.0), inv;
    for (int64_t i : idx) freq[size_t(i)] += 1;
    for (int64_t r : p.row) inv.push_back(1.0 / freq[size_t(r)]);
    Tensor s = fw::tensor(inv, kDouble).to(weight.device(), weight.dtype()).unsqueeze(1);
    rows = rows.detach() + (rows - rows.detach()) * s;
  }
  if (mode == "max") return bag_max(rows, p, dim);
  if (psw.defined()) rows = rows * psw.index_select(0, longs_like(p.pos, psw)).unsqueeze(1);
  TensorOptions to = TensorOptions(weight.dtype()).device(weight.device());
  Tensor out = fw::zeros({int64_t(p.count.size()), dim}, to).index_add(0, longs_like(p.bag, weight), rows);
  if (mode == "sum") return out;
  std::vector<double> counts(p.count.begin(), p.count.end());
  for (double& c : counts) c = std::max(c, 1.0);
  return out / fw::tensor(counts, kDouble).to(weight.device(), weight.dtype()).unsqueeze(1);
}

}  // namespace functional

// ---- modules: Upsample, PixelShuffle, Fold, padding

void UpsampleImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::Upsample(";
  if (options.scale_factor())
    stream << "scale_factor=" << detail::list(*options.scale_factor());
  else if (options.size())
    stream << "size=" << detail::list(*options.size());
  else
    stream << "size=None";
  stream << ", mode=" << enum_name(mode_name(options.mode())) << ")";
}

Tensor UpsampleImpl::forward(const Tensor& input) {
  functional::InterpolateFuncOptions o;
  std::visit([&](auto m) { o.mode(m); }, options.mode());
  return functional::interpolate(
      input, o.size(options.size()).scale_factor(options.scale_factor()).align_corners(options.align_corners()));
}

void PixelShuffleImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::PixelShuffle(upscale_factor=" << options.upscale_factor() << ")";
}
void PixelUnshuffleImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::PixelUnshuffle(downscale_factor=" << options.downscale_factor() << ")";
}
void ChannelShuffleImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::ChannelShuffle(groups=" << options.groups() << ")";
}

void FoldImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::Fold(output_size=" << detail::list(options.output_size())
         << ", kernel_size=" << detail::list(options.kernel_size()) << ", dilation=" << detail::list(options.dilation())
         << ", padding=" << detail::list(options.padding()) << ", stride=" << detail::list(options.stride()) << ")";
}
void UnfoldImpl::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::Unfold(kernel_size=" << detail::list(options.kernel_size())
         << ", dilation=" << detail::list(options.dilation()) << ", padding=" << detail::list(options.padding())
         << ", stride=" << detail::list(options.stride()) << ")";
}

namespace {
template <size_t D>
const char* pad_family(const ReflectionPadOptions<D>&) { return "ReflectionPad"; }
template <size_t D>
const char* pad_family(const ReplicationPadOptions<D>&) { return "ReplicationPad"; }
template <size_t D>
const char* pad_family(const ZeroPadOptions<D>&) { return "ZeroPad"; }
template <size_t D>
const char* pad_family(const ConstantPadOptions<D>&) { return "ConstantPad"; }
template <class O>
double pad_value(const O&) { return 0; }
template <size_t D>
double pad_value(const ConstantPadOptions<D>& o) { return o.value(); }
}  // namespace

template <size_t D, class Derived, class Options, class Mode>
void detail::PadImplBase<D, Derived, Options, Mode>::pretty_print(std::ostream& stream) const {
  stream << "fw::nn::" << pad_family(options) << D << "d(padding=" << detail::list(ArrayRef<int64_t>(options.padding()));
  if constexpr (std::is_same_v<Options, ConstantPadOptions<D>>) stream << ", value=" << options.value();
  stream << ")";
}

template <size_t D, class Derived, class Options, class Mode>
Tensor detail::PadImplBase<D, Derived, Options, Mode>::forward(const Tensor& input) {
  const auto& p = *options.padding();
  return functional::pad(input, functional::PadFuncOptions(std::vector<int64_t>(p.begin(), p.end()))
                                    .mode(Mode())
                                    .value(pad_value(options)));
}

template class detail::PadImplBase<1, ReflectionPad1dImpl, ReflectionPadOptions<1>, enumtype::kReflect>;
template class detail::PadImplBase<2, ReflectionPad2dImpl, ReflectionPadOptions<2>, enumtype::kReflect>;
template class detail::PadImplBase<3, ReflectionPad3dImpl, ReflectionPadOptions<3>, enumtype::kReflect>;
template class detail::PadImplBase<1, ReplicationPad1dImpl, ReplicationPadOptions<1>, enumtype::kReplicate>;
template class detail::PadImplBase<2, ReplicationPad2dImpl, ReplicationPadOptions<2>, enumtype::kReplicate>;
template class detail::PadImplBase<3, ReplicationPad3dImpl, ReplicationPadOptions<3>, enumtype::kReplicate>;
template class detail::PadImplBase<1, ZeroPad1dImpl, ZeroPadOptions<1>, enumtype::kConstant>;
template class detail::PadImplBase<2, ZeroPad2dImpl, ZeroPadOptions<2>, enumtype::kConstant>;
template class detail::PadImplBase<3, ZeroPad3dImpl, ZeroPadOptions<3>, enumtype::kConstant>;
template class detail::PadImplBase<1, ConstantPad1dImpl, ConstantPadOptions<1>, enumtype::kConstant>;
template class detail::PadImplBase<2, ConstantPad2dImpl, ConstantPadOptions<2>, enumtype::kConstant>;
template class detail::PadImplBase<3, ConstantPad3dImpl, ConstantPadOptions<3>, enumtype::kConstant>;

// ---- modules: dropouts

namespace {
void check_module_p(double p, const char* name) {
  FW_CHECK(p >= 0 && p <= 1, "[", name, "] dropout probability has to be between 0 and 1, but got ", p);
}
void print_dropout(std::ostream& stream, const char* name, const DropoutOptions& o) {
  stream << std::boolalpha << "fw::nn::" << name << "(p=" << o.p() << ", inplace=" << o.inplace() << ")";
}
}  // namespace

Dropout3dImpl::Dropout3dImpl(const Dropout3dOptions& options_) : options(options_) { reset(); }
void Dropout3dImpl::reset() { check_module_p(options.p(), "Dropout3d"); }
void Dropout3dImpl::pretty_print(std::ostream& stream) const { print_dropout(stream, "Dropout3d", options); }
Tensor Dropout3dImpl::forward(Tensor input) {
  return functional::dropout3d(
      input, functional::Dropout3dFuncOptions().p(options.p()).training(is_training()).inplace(options.inplace()));
}

AlphaDropoutImpl::AlphaDropoutImpl(const AlphaDropoutOptions& options_) : options(options_) { reset(); }
void AlphaDropoutImpl::reset() { check_module_p(options.p(), "AlphaDropout"); }
void AlphaDropoutImpl::pretty_print(std::ostream& stream) const { print_dropout(stream, "AlphaDropout", options); }
Tensor AlphaDropoutImpl::forward(const Tensor& input) {
  return functional::alpha_dropout(input, functional::AlphaDropoutFuncOptions().p(options.p()).training(is_training()));
}

FeatureAlphaDropoutImpl::FeatureAlphaDropoutImpl(const FeatureAlphaDropoutOptions& options_) : options(options_) {
  reset();
}
void FeatureAlphaDropoutImpl::reset() { check_module_p(options.p(), "FeatureAlphaDropout"); }
void FeatureAlphaDropoutImpl::pretty_print(std::ostream& stream) const {
  print_dropout(stream, "FeatureAlphaDropout", options);
}
Tensor FeatureAlphaDropoutImpl::forward(const Tensor& input) {
  return functional::feature_alpha_dropout(
      input, functional::FeatureAlphaDropoutFuncOptions().p(options.p()).training(is_training()));
}

// ---- modules: EmbeddingBag

EmbeddingBagImpl::EmbeddingBagImpl(EmbeddingBagOptions options_) : options(std::move(options_)) { reset(); }

void EmbeddingBagImpl::reset() {
  const int64_t n = options.num_embeddings(), dim = options.embedding_dim();
  FW_CHECK(!options.sparse(), "[EmbeddingBag] sparse=true is not supported: fw has no sparse gradients");
  if (auto& pad = options.padding_idx()) {
    FW_CHECK(*pad < n && *pad >= -n, "[EmbeddingBag] padding_idx must be within num_embeddings (got ", *pad, " for ", n,
             " embeddings)");
    if (*pad < 0) *pad += n;
  }
  if (!options._weight().defined()) {
    weight = register_parameter("weight", fw::empty({n, dim}));
    reset_parameters();
  } else {
    FW_CHECK(options._weight().sizes().equals({n, dim}),
             "[EmbeddingBag] Shape of weight does not match num_embeddings and embedding_dim (got ",
             options._weight().sizes(), ", expected [", n, ", ", dim, "])");
    weight = register_parameter("weight", options._weight());
  }
}

// Note [EmbeddingBag clone]
// reset() registers options._weight itself, so Cloneable's copy (same options) would register the
// original's table and copy_state_into would then repoint both modules at one buffer. The copy is
// built from options holding a copy of the table instead (Embedding and EmbeddingBag alike).
namespace {
template <class Impl>
std::shared_ptr<Module> clone_with_own_table(const Impl& self, const std::optional<Device>& device) {
  if (!self.options._weight().defined()) return self.Cloneable<Impl>::clone(device);
  NoGradGuard no_grad;
  auto o = self.options;
  const Tensor& w = self.weight;
  o._weight(device && w.device() != *device ? w.to(*device, w.dtype(), false, true) : w.clone());
  auto copy = std::make_shared<Impl>(o);
  copy->weight.set_requires_grad(w.requires_grad());
  copy->train(self.is_training());
  return copy;
}
}  // namespace

std::shared_ptr<Module> EmbeddingBagImpl::clone(const std::optional<Device>& device) const {
  return clone_with_own_table(*this, device);
}

std::shared_ptr<Module> EmbeddingImpl::clone(const std::optional<Device>& device) const {
  return clone_with_own_table(*this, device);
}

// libtorch zeroes the padding row before sampling (so it ends up random); PyTorch's Python
// module zeroes it after, which is what padding_idx promises. We follow Python.
void EmbeddingBagImpl::reset_parameters() {
  init::normal_(weight);
  if (options.padding_idx()) {
    NoGradGuard no_grad;
    weight.select(0, *options.padding_idx()).fill_(0);
  }
}

void EmbeddingBagImpl::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::EmbeddingBag(num_embeddings=" << options.num_embeddings()
         << ", embedding_dim=" << options.embedding_dim();
  if (options.max_norm()) stream << ", max_norm=" << *options.max_norm();
  if (options.norm_type() != 2) stream << ", norm_type=" << options.norm_type();
  if (options.scale_grad_by_freq()) stream << ", scale_grad_by_freq=true";
  if (options.sparse()) stream << ", sparse=true";
  if (!std::holds_alternative<enumtype::kMean>(options.mode()))
    stream << ", mode=" << enum_name(mode_name(options.mode()));
  if (options.include_last_offset()) stream << ", include_last_offset=true";
  if (options.padding_idx()) stream << ", padding_idx=" << *options.padding_idx();
  stream << ")";
}

Tensor EmbeddingBagImpl::forward(const Tensor& input, const Tensor& offsets, const Tensor& per_sample_weights) {
  return functional::embedding_bag(input, weight,
                                   functional::EmbeddingBagFuncOptions()
                                       .offsets(offsets)
                                       .max_norm(options.max_norm())
                                       .norm_type(options.norm_type())
                                       .scale_grad_by_freq(options.scale_grad_by_freq())
                                       .mode(options.mode())
                                       .sparse(options.sparse())
                                       .per_sample_weights(per_sample_weights)
                                       .include_last_offset(options.include_last_offset())
                                       .padding_idx(options.padding_idx()));
}

EmbeddingBag EmbeddingBag::from_pretrained(const Tensor& embeddings, const EmbeddingBagFromPretrainedOptions& options) {
  FW_CHECK(embeddings.dim() == 2, "[EmbeddingBag::from_pretrained] Embeddings parameter is expected to be "
           "2-dimensional, got shape ", embeddings.sizes());
  EmbeddingBag e(EmbeddingBagOptions(embeddings.size(0), embeddings.size(1))
                     ._weight(embeddings)
                     .max_norm(options.max_norm())
                     .norm_type(options.norm_type())
                     .scale_grad_by_freq(options.scale_grad_by_freq())
                     .mode(options.mode())
                     .sparse(options.sparse())
                     .include_last_offset(options.include_last_offset())
                     .padding_idx(options.padding_idx()));
  e->weight.set_requires_grad(!options.freeze());
  return e;
}

}  // namespace fw::nn
