// torch.gradient (NumPy's gradient): finite differences along each requested dim, written with
// slices and arithmetic so autograd and fw::compile see ordinary ops.
//
// Uniform spacing h: (f[i+1] - f[i-1]) / 2h inside; at the ends (f[1] - f[0]) / h and
// (f[n-1] - f[n-2]) / h (edge_order 1), or the second-order one-sided forms
// (-3/2 f[0] + 2 f[1] - 1/2 f[2]) / h and (1/2 f[n-3] - 2 f[n-2] + 3/2 f[n-1]) / h (edge_order 2).
// Coordinates x (non-uniform samples): with l = x[i] - x[i-1] and r = x[i+1] - x[i] the interior
// weights of f[i-1], f[i], f[i+1] are -r / (l (l + r)), (r - l) / (l r), l / (r (l + r)), the exact
// derivative of the parabola through the three points; the ends use that parabola's slope at the
// first or last point (edge_order 2) or the one-sided difference (edge_order 1).
#include <algorithm>

#include "fw/fw.h"

namespace fw {
namespace {

Tensor sl(const Tensor& t, int64_t d, int64_t start, int64_t end) { return t.slice(d, start, end); }

Tensor uniform_dim(const Tensor& f, int64_t d, const Scalar& h, int64_t edge_order) {
  const int64_t n = f.size(d);
  Tensor inner = (sl(f, d, 2, n) - sl(f, d, 0, n - 2)) / h / 2;
  Tensor first, last;
  if (edge_order == 1) {
    first = (sl(f, d, 1, 2) - sl(f, d, 0, 1)) / h;
    last = (sl(f, d, n - 1, n) - sl(f, d, n - 2, n - 1)) / h;
  } else {
    first = (sl(f, d, 0, 1) * -1.5 + sl(f, d, 1, 2) * 2 - sl(f, d, 2, 3) * 0.5) / h;
    last = (sl(f, d, n - 3, n - 2) * 0.5 - sl(f, d, n - 2, n - 1) * 2 + sl(f, d, n - 1, n) * 1.5) / h;
  }
  return cat({first, inner, last}, d);
}

Tensor coordinate_dim(const Tensor& f, int64_t d, const Tensor& x, int64_t edge_order) {
  const int64_t n = f.size(d);
  std::vector<int64_t> shape(static_cast<size_t>(f.dim()), 1);
  shape[static_cast<size_t>(d)] = -1;
  Tensor dx = x.diff(1, 0);
  Tensor l = dx.slice(0, 0, n - 2), r = dx.slice(0, 1, n - 1);
  Tensor wa = (-r / (l * (l + r))).reshape(shape);
  Tensor wb = ((r - l) / (l * r)).reshape(shape);
  Tensor wc = (l / (r * (l + r))).reshape(shape);
  Tensor inner = wa * sl(f, d, 0, n - 2) + wb * sl(f, d, 1, n - 1) + wc * sl(f, d, 2, n);
  Tensor first, last;
  if (edge_order == 1) {
    first = (sl(f, d, 1, 2) - sl(f, d, 0, 1)) / dx[0];
    last = (sl(f, d, n - 1, n) - sl(f, d, n - 2, n - 1)) / dx[n - 2];
  } else {
    Tensor h0 = dx[0], h1 = dx[1];
    first = sl(f, d, 0, 1) * (-(h0 * 2 + h1) / (h0 * (h0 + h1))) + sl(f, d, 1, 2) * ((h0 + h1) / (h0 * h1)) +
            sl(f, d, 2, 3) * (-h0 / (h1 * (h0 + h1)));
    Tensor g1 = dx[n - 3], g0 = dx[n - 2];  // the last two spacings: g1 before g0
    last = sl(f, d, n - 3, n - 2) * (g0 / (g1 * (g0 + g1))) + sl(f, d, n - 2, n - 1) * (-(g0 + g1) / (g0 * g1)) +
           sl(f, d, n - 1, n) * ((g0 * 2 + g1) / (g0 * (g0 + g1)));
  }
  return cat({first, inner, last}, d);
}

// The dims to differentiate (wrapped, checked for repeats) and the input in a floating dtype.
std::vector<int64_t> gradient_dims(const Tensor& t, std::optional<IntArrayRef> dim) {
  FW_CHECK(t.defined(), "[gradient] input tensor is undefined");
  std::vector<int64_t> dims;
  if (!dim) {
    for (int64_t i = 0; i < t.dim(); i++) dims.push_back(i);
    return dims;
  }
  for (int64_t d : *dim) {
    FW_CHECK_INDEX(d >= -t.dim() && d < std::max<int64_t>(t.dim(), 1),
                   "[gradient] Dimension out of range (expected to be in range of [", -t.dim(), ", ", t.dim() - 1,
             "], but got ", d, ")");
    int64_t w = d < 0 ? d + t.dim() : d;
    FW_CHECK(std::find(dims.begin(), dims.end(), w) == dims.end(), "[gradient] dim ", w,
             " appears multiple times in the list of dims");
    dims.push_back(w);
  }
  return dims;
}

void check_gradient(const Tensor& t, const std::vector<int64_t>& dims, size_t spacing_size, bool dim_given,
                    int64_t edge_order) {
  FW_CHECK(edge_order == 1 || edge_order == 2, "[gradient] torch.gradient only supports edge_order=1 and edge_order=2, got ",
           edge_order);
  FW_CHECK(t.dim() >= 1, "[gradient] expected a tensor with at least one dimension, got a 0-d tensor");
  if (spacing_size != 1 && spacing_size != 0) {
    if (dim_given)
      FW_CHECK(spacing_size == dims.size(), "[gradient] torch.gradient expected spacing to be unspecified, a scalar or "
               "it's spacing and dim arguments to have the same length, but got a spacing argument of length ",
               spacing_size, " and a dim argument of length ", dims.size(), ".");
    else
      FW_CHECK(spacing_size == dims.size(), "[gradient] torch.gradient expected spacing to be unspecified, a scalar or a "
               "list of length equal to 'self.dim() = ", t.dim(), "', since dim argument was not given, but got a "
               "list of length ", spacing_size);
  }
  for (int64_t d : dims)
    FW_CHECK(t.size(d) >= edge_order + 1, "[gradient] torch.gradient expected each dimension size to be at least "
             "edge_order+1, but dim ", d, " of shape ", t.sizes(), " has size ", t.size(d));
}

Tensor floating(const Tensor& t) {
  return t.is_floating_point() || t.is_complex() ? t : t.to(get_default_dtype());
}

std::vector<Tensor> gradient_scalars(const Tensor& t, ArrayRef<Scalar> spacing, std::optional<IntArrayRef> dim,
                                     int64_t edge_order) {
  std::vector<int64_t> dims = gradient_dims(t, dim);
  check_gradient(t, dims, spacing.size(), dim.has_value(), edge_order);
  Tensor f = floating(t);
  std::vector<Tensor> out;
  for (size_t i = 0; i < dims.size(); i++) {
    Scalar h = spacing.empty() ? Scalar(1) : spacing[spacing.size() == 1 ? 0 : i];
    out.push_back(uniform_dim(f, dims[i], h, edge_order));
  }
  return out;
}

std::vector<Tensor> gradient_coords(const Tensor& t, TensorList spacing, std::optional<IntArrayRef> dim,
                                    int64_t edge_order) {
  std::vector<int64_t> dims = gradient_dims(t, dim);
  check_gradient(t, dims, spacing.size(), dim.has_value(), edge_order);
  FW_CHECK(spacing.size() == dims.size(), "[gradient] expected one coordinate tensor per dim (", dims.size(),
           "), got ", spacing.size());
  Tensor f = floating(t);
  std::vector<Tensor> out;
  for (size_t i = 0; i < dims.size(); i++) {
    const Tensor& x = spacing[i];
    FW_CHECK(x.defined() && x.dim() == 1 && x.size(0) == t.size(dims[i]), "[gradient] the coordinates for dim ",
             dims[i], " must be a 1-D tensor of ", t.size(dims[i]), " values, got shape ",
             x.defined() ? x.sizes() : IntArrayRef());
    out.push_back(coordinate_dim(f, dims[i], floating(x), edge_order));
  }
  return out;
}

}  // namespace

std::vector<Tensor> gradient(const Tensor& t, const std::optional<Scalar>& spacing, std::optional<int64_t> dim,
                             int64_t edge_order) {
  std::vector<Scalar> h;
  if (spacing) h.push_back(*spacing);
  if (!dim) return gradient_scalars(t, h, std::nullopt, edge_order);
  int64_t d = *dim;
  return gradient_scalars(t, h, IntArrayRef(d), edge_order);
}
std::vector<Tensor> gradient(const Tensor& t, const Scalar& spacing, IntArrayRef dim, int64_t edge_order) {
  return gradient_scalars(t, ArrayRef<Scalar>(spacing), dim, edge_order);
}
std::vector<Tensor> gradient(const Tensor& t, IntArrayRef dim, int64_t edge_order) {
  return gradient_scalars(t, {}, dim, edge_order);
}
std::vector<Tensor> gradient(const Tensor& t, ArrayRef<Scalar> spacing, std::optional<int64_t> dim,
                             int64_t edge_order) {
  if (!dim) return gradient_scalars(t, spacing, std::nullopt, edge_order);
  int64_t d = *dim;
  return gradient_scalars(t, spacing, IntArrayRef(d), edge_order);
}
std::vector<Tensor> gradient(const Tensor& t, ArrayRef<Scalar> spacing, IntArrayRef dim, int64_t edge_order) {
  return gradient_scalars(t, spacing, dim, edge_order);
}
std::vector<Tensor> gradient(const Tensor& t, TensorList spacing, std::optional<int64_t> dim, int64_t edge_order) {
  if (!dim) return gradient_coords(t, spacing, std::nullopt, edge_order);
  int64_t d = *dim;
  return gradient_coords(t, spacing, IntArrayRef(d), edge_order);
}
std::vector<Tensor> gradient(const Tensor& t, TensorList spacing, IntArrayRef dim, int64_t edge_order) {
  return gradient_coords(t, spacing, dim, edge_order);
}

}  // namespace fw
