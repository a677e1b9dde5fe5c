// libtorch functions beyond the core op list (include/fw/ops_extra.h).
//
// Note [Extra ops as composites]
// None of these is a primitive. Differentiable ones are built from differentiable ops, so their
// gradients, higher-order gradients and fw::compile traces come from the ops they use:
// nan-reductions mask with where, kthvalue/quantile read a stable sort, cov/corrcoef/cdist are
// arithmetic, the shape helpers are views, pads and cats. Where an order statistic needs a scan
// the ops lack (cummax, cummin), a host kernel computes only the winning indices and the values
// are a gather, so the gradient is gather's (PyTorch scatters to the same indices). Searching and
// counting (searchsorted, bincount, histc, unique) are host kernels with integer results and no
// gradient, as in PyTorch. Host kernels read their input on the CPU in int64 or double (exact
// for every integer up to 2^53 and every float dtype) or in float for float32 where PyTorch's
// arithmetic is float (histc), so results agree with PyTorch's bit for bit.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "core/autocast.h"
#include "core/op.h"
#include "core/layout.h"
#include "core/ops/composite_util.h"
#include "core/parallel.h"
#include "fw/autograd_function.h"
#include "fw/linalg.h"
#include "fw/ops_extra.h"

namespace fw {
using namespace detail;

namespace {


// Permutation moving `dim` last.
std::vector<int64_t> dim_last(int64_t nd, int64_t dim) {
  std::vector<int64_t> p;
  for (int64_t i = 0; i < nd; i++)
    if (i != dim) p.push_back(i);
  p.push_back(dim);
  return p;
}

Tensor longs(const std::vector<int64_t>& v, IntArrayRef sizes, Device d) {
  Tensor t = empty(sizes, kLong);
  std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
  return t.to(d);
}

}  // namespace

// ---- reductions ignoring NaN

Tensor nansum(const Tensor& t, std::optional<ScalarType> dtype) { return nansum(t, IntArrayRef{}, false, dtype); }
Tensor nansum(const Tensor& t, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  Tensor x = t.is_floating_point() ? where(t.isnan(), Scalar(0), t) : t;
  return sum(x, dim, keepdim, dtype);
}
Tensor nanmean(const Tensor& t, std::optional<ScalarType> dtype) { return nanmean(t, IntArrayRef{}, false, dtype); }
Tensor nanmean(const Tensor& t, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  FW_CHECK(t.is_floating_point() || (dtype && is_floating_point(*dtype)),
           "[nanmean] expected input to have floating point dtype but got ", dtype_str(t.dtype()));
  Tensor count = t.isnan().logical_not().sum(dim, keepdim);
  return nansum(t, dim, keepdim, dtype).div(count);
}

std::tuple<Tensor, Tensor> aminmax(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  if (!dim) {
    FW_CHECK(t.numel() > 0, "[aminmax] cannot compute aminmax over an empty tensor without a dim");
    Tensor lo = t.amin(), hi = t.amax();
    if (keepdim) {
      DimVec ones(size_t(t.dim()), 1);
      lo = lo.reshape(ones), hi = hi.reshape(ones);
    }
    return {lo, hi};
  }
  const int64_t d = *dim;
  return {t.amin({d}, keepdim), t.amax({d}, keepdim)};
}

// ---- order statistics

std::tuple<Tensor, Tensor> kthvalue(const Tensor& t, int64_t k, int64_t dim, bool keepdim) {
  const int64_t d = wrap_dim(dim, t.dim(), "kthvalue");
  const int64_t n = t.dim() == 0 ? 1 : t.size(d);
  FW_CHECK(k >= 1 && k <= n, "[kthvalue] selected number k = ", k, " out of range for dimension ", dim,
           " of size ", n);
  Tensor x = t.dim() == 0 ? t.reshape({1}) : t;
  auto [sorted, idx] = sort(x, d);
  Tensor index = idx.narrow(d, k - 1, 1);
  Tensor values = x.gather(d, index);
  if (!keepdim || t.dim() == 0) values = values.squeeze(d), index = index.squeeze(d);
  if (t.dim() == 0) values = values.reshape({}), index = index.reshape({});
  return {values, index};
}

namespace {

// Index of the running extreme along the last dim of rows (ties take the later index, NaN
// sticks), as PyTorch's cummax/cummin.
template <bool MAX, class T>
void running_extreme(const T* x, int64_t* idx, int64_t rows, int64_t n) {
  parallel_for(0, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; r++) {
      const T* xr = x + r * n;
      int64_t* ir = idx + r * n;
      int64_t best = 0;
      for (int64_t i = 0; i < n; i++) {
        const T v = xr[i], cur = xr[best];
        bool take;
        if constexpr (std::is_floating_point_v<T>)
          take = std::isnan(v) || (!std::isnan(cur) && (MAX ? v >= cur : v <= cur));
        else
          take = MAX ? v >= cur : v <= cur;
        if (take) best = i;
        ir[i] = best;
      }
    }
  });
}

template <bool MAX>
std::tuple<Tensor, Tensor> cum_extreme(const char* op, const Tensor& t, int64_t dim) {
  const int64_t d = wrap_dim(dim, t.dim(), op);
  FW_CHECK(t.dtype() != kComplexFloat && t.dtype() != kComplexDouble, "[", op, "] does not support complex input");
  if (t.dim() == 0) return {t.clone(), zeros({}, kLong).to(t.device())};
  if (t.numel() == 0) return {t.clone(), empty(t.sizes(), kLong).to(t.device())};
  auto perm = dim_last(t.dim(), d);
  Tensor moved = t.permute(perm);
  const int64_t n = t.size(d), rows = t.numel() / n;
  std::vector<int64_t> idx(size_t(t.numel()));
  if (t.is_floating_point()) {
    auto v = host_values<double>(moved);
    running_extreme<MAX>(v.data(), idx.data(), rows, n);
  } else {
    auto v = host_values<int64_t>(moved);
    running_extreme<MAX>(v.data(), idx.data(), rows, n);
  }
  Tensor index = longs(idx, moved.sizes(), t.device());
  const std::vector<int64_t> inv = inverse_perm(perm);
  index = index.permute(inv).contiguous();
  return {t.gather(d, index), index};
}

}  // namespace

std::tuple<Tensor, Tensor> cummax(const Tensor& t, int64_t dim) { return cum_extreme<true>("cummax", t, dim); }
std::tuple<Tensor, Tensor> cummin(const Tensor& t, int64_t dim) { return cum_extreme<false>("cummin", t, dim); }

namespace {

// Note [logcumsumexp]
// Forward: y_i = log(exp(y_{i-1}) + exp(x_i)) by the running max form, in double. Backward:
// dL/dx_j = sum_{i>=j} g_i exp(x_j - y_i). Splitting g into positive and negative parts keeps
// everything in log space: exp(x_j + revlogcumsumexp(log g+ - y)_j) - (the same for g-), with
// revlogcumsumexp a logcumsumexp of the flipped sequence. The backward recomputes y with
// logcumsumexp itself instead of saving it, so higher-order gradients see y's dependence on x.
Tensor logcumsumexp_forward(const Tensor& t, int64_t d) {
  auto perm = dim_last(t.dim(), d);
  Tensor moved = t.permute(perm);
  const int64_t n = t.size(d), rows = n == 0 ? 0 : t.numel() / n;
  auto v = host_values<double>(moved);
  parallel_for(0, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(n, 1)), [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; r++) {
      double* x = v.data() + r * n;
      double acc = -std::numeric_limits<double>::infinity();
      for (int64_t i = 0; i < n; i++) {
        const double a = acc, c = x[i];
        const double hi = std::max(a, c), lo = std::min(a, c);
        if (std::isnan(a) || std::isnan(c))
          acc = std::numeric_limits<double>::quiet_NaN();
        else if (hi == -std::numeric_limits<double>::infinity() || (lo == hi && std::isinf(hi)))
          acc = hi;
        else
          acc = hi + std::log1p(std::exp(lo - hi));
        x[i] = acc;
      }
    }
  });
  Tensor y = empty(moved.sizes(), kDouble);
  std::copy(v.begin(), v.end(), y.data_ptr<double>());
  const std::vector<int64_t> inv = inverse_perm(perm);
  return y.permute(inv).to(t.device(), t.dtype()).contiguous();
}

struct LogCumSumExp : autograd::Function<LogCumSumExp> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x, int64_t dim) {
    ctx->saved_data["dim"] = dim;
    ctx->save_for_backward({x});
    return logcumsumexp_forward(x, dim);
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    auto saved = ctx->get_saved_variables();
    const int64_t dim = ctx->saved_data["dim"].toInt();
    const Tensor &x = saved[0], &go = g[0];
    // y again from x, differentiably, so a double backward sees its dependence on x.
    const Tensor y = logcumsumexp(x, dim);
    auto rev = [&](const Tensor& s) { return logcumsumexp(s.flip({dim}), dim).flip({dim}); };
    // The lowest finite value, not -inf, stands for log 0: -inf would meet +inf in the double
    // backward (x - y at a -inf prefix) and give NaN.
    const double lowest = x.dtype() == kDouble ? std::numeric_limits<double>::lowest()
                                               : double(std::numeric_limits<float>::lowest());
    Tensor log_abs = go.abs().log();
    Tensor pos = where(go > 0, log_abs, Scalar(lowest)) - y;
    Tensor neg = where(go < 0, log_abs, Scalar(lowest)) - y;
    return {(x + rev(pos)).exp() - (x + rev(neg)).exp(), Tensor()};
  }
};

}  // namespace

Tensor logcumsumexp(const Tensor& t, int64_t dim) {
  FW_CHECK(t.is_floating_point(), "[logcumsumexp] expected a floating point input, got ", dtype_str(t.dtype()));
  const int64_t d = wrap_dim(dim, t.dim(), "logcumsumexp");
  if (t.dim() == 0) return t.clone();
  return LogCumSumExp::apply(t, d);
}

namespace {

Tensor quantile_impl(const char* op, const Tensor& t, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                     const std::string& interpolation, bool ignore_nan) {
  FW_CHECK(t.numel() > 0, "[", op, "] input tensor must be non-empty");
  FW_CHECK(q.dim() <= 1, "[", op, "] q must be a scalar or 1D tensor, got ", q.dim(), "-D");
  FW_CHECK(t.dtype() == kFloat || t.dtype() == kDouble, "[", op,
           "] input tensor must be either float or double dtype, got ", dtype_str(t.dtype()));
  FW_CHECK(q.dtype() == t.dtype(), "[", op, "] q tensor must be same dtype as the input tensor, got ",
           dtype_str(q.dtype()), " and ", dtype_str(t.dtype()));
  FW_CHECK(interpolation == "linear" || interpolation == "lower" || interpolation == "higher" ||
               interpolation == "nearest" || interpolation == "midpoint",
           "[", op, "] interpolation must be one of linear, lower, higher, midpoint or nearest. Got ", interpolation);
  if (q.numel() > 0) {
    const double lo = q.min().item<double>(), hi = q.max().item<double>();
    FW_CHECK(lo >= 0 && hi <= 1, "[", op, "] q values must be in the range [0, 1], got ", lo < 0 ? lo : hi);
  }
  // Sorted values along the last dim: (..., n), NaN last.
  Tensor x;
  DimVec out_shape;
  if (dim) {
    const int64_t d = wrap_dim(*dim, t.dim(), op);
    x = t.dim() == 0 ? t.reshape({1}) : t.permute(dim_last(t.dim(), d));
    for (int64_t i = 0; i < t.dim(); i++)
      if (i != d) out_shape.push_back(t.size(i));
      else if (keepdim) out_shape.push_back(1);
  } else {
    x = t.reshape({-1});
    if (keepdim) out_shape = DimVec(size_t(t.dim()), 1);
  }
  Tensor sorted = std::get<0>(sort(x, -1));
  const int64_t n = sorted.size(-1);
  Tensor valid = sorted.isnan().logical_not().sum({-1}, true).to(t.dtype());  // (..., 1)
  Tensor qv = q.reshape({-1});                                               // (nq)
  // ranks: (..., nq)
  Tensor last = full({}, double(n - 1), t.dtype());
  Tensor rank;
  if (ignore_nan) {
    rank = qv * (valid - 1);
    rank = where(valid == 0, last, rank);  // all NaN: the result is NaN
  } else {
    rank = where(valid < double(n), last, qv * double(n - 1));
  }
  if (interpolation == "lower") rank = floor(rank);
  else if (interpolation == "higher") rank = ceil(rank);
  else if (interpolation == "nearest") rank = round(rank);
  Tensor lo_i = floor(rank).to(kLong), hi_i = ceil(rank).to(kLong);
  Tensor lo = sorted.gather(-1, lo_i), hi = sorted.gather(-1, hi_i);
  Tensor r;
  if (interpolation == "midpoint") r = lerp(lo, hi, 0.5);
  else if (interpolation == "linear") r = lerp(lo, hi, rank - lo_i.to(t.dtype()));
  else r = lo;  // lower, higher, nearest: the rank is already integral
  // r: (..., nq) -> (nq, out_shape...)
  r = r.reshape({-1, qv.numel()}).t();
  DimVec shape;
  if (q.dim() == 1) shape.push_back(q.numel());
  for (int64_t s : out_shape) shape.push_back(s);
  return r.reshape(shape);
}

}  // namespace

Tensor quantile(const Tensor& t, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                const std::string& interpolation) {
  return quantile_impl("quantile", t, q, dim, keepdim, interpolation, false);
}
Tensor quantile(const Tensor& t, double q, std::optional<int64_t> dim, bool keepdim,
                const std::string& interpolation) {
  return quantile_impl("quantile", t, full({}, q, t.dtype()).to(t.device()), dim, keepdim, interpolation, false);
}
Tensor nanquantile(const Tensor& t, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                   const std::string& interpolation) {
  return quantile_impl("nanquantile", t, q, dim, keepdim, interpolation, true);
}
Tensor nanquantile(const Tensor& t, double q, std::optional<int64_t> dim, bool keepdim,
                   const std::string& interpolation) {
  return quantile_impl("nanquantile", t, full({}, q, t.dtype()).to(t.device()), dim, keepdim, interpolation, true);
}

// ---- searching and counting

namespace {

// PyTorch's comparisons: a NaN value lands after every element.
template <class T>
int64_t lower_pos(const T* s, int64_t n, T v, const int64_t* sorter) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const T m = s[sorter ? sorter[mid] : mid];
    if (!(m >= v)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
template <class T>
int64_t upper_pos(const T* s, int64_t n, T v, const int64_t* sorter) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    const T m = s[sorter ? sorter[mid] : mid];
    if (!(m > v)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

}  // namespace

Tensor searchsorted(const Tensor& seq, const Tensor& values, bool out_int32, bool right,
                    std::optional<std::string> side, const std::optional<Tensor>& sorter) {
  const char* op = "searchsorted";
  if (side) {
    FW_CHECK(*side == "left" || *side == "right", "[", op, "] side can only be 'left' or 'right' but got ", *side);
    FW_CHECK(!(right && *side == "left"), "[", op, "] side and right can't be set to opposites, got side of left ",
             "while right was True");
    right = *side == "right";
  }
  FW_CHECK(seq.dim() >= 1, "[", op, "] boundaries tensor should have at least 1 dimension, got a 0-D tensor");
  bool leading_match = seq.dim() == values.dim() && values.dim() >= 1;
  for (int64_t i = 0; leading_match && i + 1 < seq.dim(); i++) leading_match = seq.size(i) == values.size(i);
  FW_CHECK(seq.dim() == 1 || leading_match, "[", op,
           "] boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input "
           "value tensor must match, but we got boundaries tensor ", seq.sizes(), " and input value tensor ",
           values.sizes());
  FW_CHECK(!seq.is_complex() && !values.is_complex(), "[", op, "] complex tensors are not supported");
  const int64_t n = seq.size(-1);
  std::vector<int64_t> sort_idx;
  if (sorter && sorter->defined()) {
    FW_CHECK(sorter->dtype() == kLong, "[", op, "] sorter must be a tensor of long dtype but got ",
             dtype_str(sorter->dtype()));
    FW_CHECK(sorter->sizes() == seq.sizes(), "[", op, "] boundary and sorter must have the same size, but got ",
             "boundary tensor ", seq.sizes(), " and sorter tensor ", sorter->sizes());
    sort_idx = host_values<int64_t>(*sorter);
    for (int64_t v : sort_idx)
      FW_CHECK(v >= 0 && v < n, "[", op, "] sorter index out of range: ", v, " for a sequence of length ", n);
  }
  const int64_t rows = seq.numel() / std::max<int64_t>(n, 1);
  const int64_t per_row = seq.dim() == 1 ? values.numel() : values.numel() / std::max<int64_t>(rows, 1);
  std::vector<int64_t> out(size_t(values.numel()));
  auto run = [&]<class T>() {
    auto s = host_values<T>(seq);
    auto v = host_values<T>(values);
    parallel_for(0, int64_t(v.size()), 2048, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) {
        const int64_t row = seq.dim() == 1 ? 0 : i / std::max<int64_t>(per_row, 1);
        const T* sr = s.data() + row * n;
        const int64_t* so = sort_idx.empty() ? nullptr : sort_idx.data() + row * n;
        out[size_t(i)] = right ? upper_pos(sr, n, v[size_t(i)], so) : lower_pos(sr, n, v[size_t(i)], so);
      }
    });
  };
  if (seq.is_floating_point() || values.is_floating_point()) run.operator()<double>();
  else run.operator()<int64_t>();
  Tensor r = longs(out, values.sizes(), values.device());
  return out_int32 ? r.to(kInt) : r;
}

Tensor searchsorted(const Tensor& seq, const Scalar& value, bool out_int32, bool right,
                    std::optional<std::string> side, const std::optional<Tensor>& sorter) {
  Tensor v = seq.is_floating_point() || value.isFloatingPoint() ? full({}, value.to<double>(), kDouble)
                                                                   : full({}, value, kLong);
  FW_CHECK(seq.dim() == 1, "[searchsorted] input value can be a scalar only when boundaries tensor dimension is 1, "
           "but we got boundaries tensor dim(", seq.dim(), ") and input value's dim(0) numel(1)");
  return searchsorted(seq, v, out_int32, right, side, sorter);
}

Tensor bucketize(const Tensor& input, const Tensor& boundaries, bool out_int32, bool right) {
  FW_CHECK(boundaries.dim() == 1, "[bucketize] boundaries tensor must be 1 dimension, but got dim(",
           boundaries.dim(), ")");
  return searchsorted(boundaries, input, out_int32, right);
}
Tensor bucketize(const Scalar& input, const Tensor& boundaries, bool out_int32, bool right) {
  FW_CHECK(boundaries.dim() == 1, "[bucketize] boundaries tensor must be 1 dimension, but got dim(",
           boundaries.dim(), ")");
  return searchsorted(boundaries, input, out_int32, right);
}

Tensor bincount(const Tensor& t, const std::optional<Tensor>& weights, int64_t minlength) {
  FW_CHECK(minlength >= 0, "[bincount] minlength should be >= 0, got ", minlength);
  FW_CHECK(t.dim() == 1 && is_integral(t.dtype(), false),
           "[bincount] only supports 1-d non-negative integral inputs, got a ", t.dim(), "-D ", dtype_str(t.dtype()),
           " tensor");
  const bool weighted = weights && weights->defined();
  if (weighted)
    FW_CHECK(weights->dim() == 1 && weights->size(0) == t.size(0), "[bincount] weights should be 1-d and have the "
             "same length as input, got weights of size ", weights->sizes(), " for input of size ", t.sizes());
  auto v = host_values<int64_t>(t);
  int64_t len = minlength;
  for (int64_t x : v) {
    FW_CHECK(x >= 0, "[bincount] only supports 1-d non-negative integral inputs, got the value ", x);
    len = std::max(len, x + 1);
  }
  if (!weighted) {
    std::vector<int64_t> c(size_t(len), 0);
    for (int64_t x : v) c[size_t(x)]++;
    return longs(c, {len}, t.device());
  }
  // As PyTorch: float32 weights give float32 counts, any other weights double.
  const ScalarType out_t = weights->dtype() == kFloat ? kFloat : kDouble;
  auto w = host_values<double>(*weights);
  Tensor r = zeros({len}, out_t);
  if (out_t == kFloat) {
    float* p = r.data_ptr<float>();
    for (size_t i = 0; i < v.size(); i++) p[v[i]] += float(w[i]);
  } else {
    double* p = r.data_ptr<double>();
    for (size_t i = 0; i < v.size(); i++) p[v[i]] += w[i];
  }
  return r.to(t.device());
}

namespace {
template <class T>
void histc_into(const Tensor& x, int64_t bins, T lo, T hi, Tensor& out) {
  Tensor c = x.to(Device(kCPU)).contiguous();
  const T* p = c.data_ptr<T>();
  T* h = out.data_ptr<T>();
  for (int64_t i = 0; i < c.numel(); i++) {
    const T v = p[i];
    if (std::isnan(v) || v < lo || v > hi) continue;
    int64_t pos = int64_t((v - lo) * T(bins) / (hi - lo));
    if (pos == bins) pos -= 1;
    h[pos] += T(1);
  }
}
}  // namespace

Tensor histc(const Tensor& t, int64_t bins, const Scalar& min, const Scalar& max) {
  FW_CHECK(bins > 0, "[histc] bins must be > 0, but got ", bins, " for bins");
  FW_CHECK(t.dtype() == kFloat || t.dtype() == kDouble, "[histc] input must be float or double, got ",
           dtype_str(t.dtype()));
  double lo = min.to<double>(), hi = max.to<double>();
  if (lo == hi && t.numel() > 0) {
    Tensor finite = t.masked_select(t.isnan().logical_not());
    if (finite.numel() > 0) lo = finite.min().item<double>(), hi = finite.max().item<double>();
  }
  if (lo == hi) lo -= 1, hi += 1;
  FW_CHECK(lo < hi, "[histc] max must be larger than min, got min ", lo, " and max ", hi);
  FW_CHECK(std::isfinite(lo) && std::isfinite(hi), "[histc] range of [", lo, ", ", hi, "] is not finite");
  Tensor out = zeros({bins}, t.dtype());
  if (t.dtype() == kFloat) histc_into<float>(t, bins, float(lo), float(hi), out);
  else histc_into<double>(t, bins, lo, hi, out);
  return out.to(t.device());
}

std::tuple<Tensor, Tensor> histogram(const Tensor& t, const Tensor& bins, const std::optional<Tensor>& weight,
                                     bool density) {
  FW_CHECK(t.dtype() == kFloat || t.dtype() == kDouble, "[histogram] input must be float or double, got ",
           dtype_str(t.dtype()));
  FW_CHECK(bins.dim() == 1 && bins.numel() >= 1, "[histogram] bins must be a 1-D tensor of at least one edge, got shape ",
           bins.sizes());
  FW_CHECK(bins.dtype() == t.dtype(), "[histogram] input and bins must have the same dtype, got ", dtype_str(t.dtype()),
           " and ", dtype_str(bins.dtype()));
  const bool weighted = weight && weight->defined();
  if (weighted) {
    FW_CHECK(weight->sizes() == t.sizes(), "[histogram] weight must have the input's shape ", t.sizes(), ", got ",
             weight->sizes());
    FW_CHECK(weight->dtype() == t.dtype(), "[histogram] weight must have the input's dtype ", dtype_str(t.dtype()),
             ", got ", dtype_str(weight->dtype()));
  }
  Tensor edges = bins.detach().contiguous();
  const int64_t n = edges.numel() - 1;
  if (n > 0)
    FW_CHECK((edges.narrow(0, 1, n) >= edges.narrow(0, 0, n)).all().item<bool>(),
             "[histogram] bin edges must be increasing");
  Tensor x = t.detach().reshape({-1});
  Tensor hist = zeros({n}, t.dtype());
  if (n > 0 && x.numel() > 0) {
    Tensor lo = edges[0], hi = edges[n];
    // the bin whose left edge is the last one <= x; x equal to the last edge goes in the last bin
    Tensor idx = searchsorted(edges, x, false, true) - 1;
    idx = where(x == hi, n - 1, idx);
    Tensor inside = (x >= lo) & (x <= hi);  // false for NaN
    Tensor w = weighted ? weight->detach().reshape({-1}) : ones_like(x);
    hist.index_add_(0, idx.masked_select(inside), w.masked_select(inside));
  }
  if (density && n > 0) hist = hist / (hist.sum() * (edges.narrow(0, 1, n) - edges.narrow(0, 0, n)));
  return {hist, edges.clone()};
}

std::tuple<Tensor, Tensor> histogram(const Tensor& t, int64_t bins, std::optional<ArrayRef<double>> range,
                                     const std::optional<Tensor>& weight, bool density) {
  FW_CHECK(bins > 0, "[histogram] bins must be > 0, got ", bins);
  FW_CHECK(t.dtype() == kFloat || t.dtype() == kDouble, "[histogram] input must be float or double, got ",
           dtype_str(t.dtype()));
  double lo = 0, hi = 0;
  if (range) {
    FW_CHECK(range->size() == 2, "[histogram] range must be (min, max), got ", range->size(), " values");
    lo = (*range)[0], hi = (*range)[1];
  } else if (t.numel() > 0) {
    lo = t.min().item<double>(), hi = t.max().item<double>();
  }
  FW_CHECK(std::isfinite(lo) && std::isfinite(hi), "[histogram] range [", lo, ", ", hi, "] is not finite");
  FW_CHECK(lo <= hi, "[histogram] expected the upper edge ", hi, " to be >= the lower edge ", lo);
  if (lo == hi) lo -= 0.5, hi += 0.5;
  return histogram(t, linspace(lo, hi, bins + 1, TensorOptions(t.dtype())), weight, density);
}

std::tuple<Tensor, Tensor> Tensor::histogram(int64_t bins, std::optional<ArrayRef<double>> range,
                                             const std::optional<Tensor>& weight, bool density) const {
  return fw::histogram(*this, bins, range, weight, density);
}
std::tuple<Tensor, Tensor> Tensor::histogram(const Tensor& bins, const std::optional<Tensor>& weight, bool density) const {
  return fw::histogram(*this, bins, weight, density);
}

namespace {

// Rows (slices along dim 0 of a (n, m) matrix) compared lexicographically, NaN unequal to all.
template <class T>
struct Rows {
  const T* p;
  int64_t m;
  bool less(int64_t a, int64_t b) const {
    for (int64_t j = 0; j < m; j++) {
      const T x = p[a * m + j], y = p[b * m + j];
      if (x < y) return true;
      if (y < x) return false;
    }
    return false;
  }
  bool same(int64_t a, int64_t b) const {
    for (int64_t j = 0; j < m; j++)
      if (!(p[a * m + j] == p[b * m + j])) return false;
    return true;
  }
};

// Unique rows of the (n, m) view of t (dim moved first): the row index of each output (in
// output order), the inverse (group of every input row) and counts.
struct UniqueRows {
  std::vector<int64_t> pick, inverse, counts;
};

template <class T>
UniqueRows unique_rows(const std::vector<T>& v, int64_t n, int64_t m, bool sort_rows, bool consecutive) {
  Rows<T> r{v.data(), m};
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  if (sort_rows && !consecutive) {
    if (m == 1)
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const T x = v[size_t(a)], y = v[size_t(b)];
        if constexpr (std::is_floating_point_v<T>)
          return !std::isnan(x) && (std::isnan(y) || x < y);  // NaN last, as sort
        else
          return x < y;
      });
    else
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return r.less(a, b); });
  }
  UniqueRows u;
  u.inverse.assign(size_t(n), 0);
  for (int64_t i = 0; i < n; i++) {
    const int64_t row = order[size_t(i)];
    if (i == 0 || !r.same(order[size_t(i - 1)], row)) {
      u.pick.push_back(row);
      u.counts.push_back(0);
    }
    u.counts.back()++;
    u.inverse[size_t(row)] = int64_t(u.pick.size()) - 1;
  }
  return u;
}

// unique over slices along dim (dim = nullopt: over elements of the flattened tensor).
std::tuple<Tensor, Tensor, Tensor> unique_impl(const char* op, const Tensor& t, std::optional<int64_t> dim,
                                               bool sort_rows, bool consecutive, bool return_inverse,
                                               bool return_counts) {
  FW_CHECK(!t.is_complex(), "[", op, "] complex tensors are not supported");
  Tensor rows2;
  int64_t d = 0, n, m;
  if (dim) {
    d = wrap_dim(*dim, t.dim(), op);
    FW_CHECK(t.dim() > 0, "[", op, "] a 0-D tensor has no dim ", *dim);
    n = t.size(d);
    FW_CHECK(n > 0 || t.numel() == 0, "[", op, "] Number of zero sized dimensions is more than one");
    m = n == 0 ? 0 : t.numel() / n;
    std::vector<int64_t> perm{d};
    for (int64_t i = 0; i < t.dim(); i++)
      if (i != d) perm.push_back(i);
    rows2 = t.permute(perm).reshape({n, m});
  } else {
    rows2 = t.reshape({-1});
    n = t.numel(), m = 1;
  }
  UniqueRows u = t.is_floating_point()
                     ? unique_rows(host_values<double>(rows2), n, m, sort_rows, consecutive)
                     : unique_rows(host_values<int64_t>(rows2), n, m, sort_rows, consecutive);
  const int64_t k = int64_t(u.pick.size());
  Tensor pick = longs(u.pick, {k}, t.device());
  Tensor values = dim ? t.index_select(d, pick) : rows2.index_select(0, pick);
  Tensor inverse = return_inverse ? longs(u.inverse, dim ? IntArrayRef{n} : t.sizes(), t.device())
                                  : empty({0}, kLong).to(t.device());
  Tensor counts = return_counts ? longs(u.counts, {k}, t.device()) : empty({0}, kLong).to(t.device());
  return {values, inverse, counts};
}

}  // namespace

std::tuple<Tensor, Tensor> _unique(const Tensor& t, bool sorted, bool return_inverse) {
  auto [v, inv, c] = unique_impl("_unique", t, std::nullopt, true, false, return_inverse, false);
  (void)sorted;  // the CPU result is always sorted, as PyTorch's
  return {v, inv};
}
std::tuple<Tensor, Tensor, Tensor> _unique2(const Tensor& t, bool sorted, bool return_inverse, bool return_counts) {
  (void)sorted;
  return unique_impl("_unique2", t, std::nullopt, true, false, return_inverse, return_counts);
}
std::tuple<Tensor, Tensor, Tensor> unique_dim(const Tensor& t, int64_t dim, bool sorted, bool return_inverse,
                                              bool return_counts) {
  (void)sorted;
  return unique_impl("unique_dim", t, dim, true, false, return_inverse, return_counts);
}
std::tuple<Tensor, Tensor, Tensor> unique_consecutive(const Tensor& t, bool return_inverse, bool return_counts,
                                                      std::optional<int64_t> dim) {
  return unique_impl("unique_consecutive", t, dim, false, true, return_inverse, return_counts);
}

Tensor argwhere(const Tensor& t) { return nonzero(t); }

// ---- construction and shape

std::vector<Tensor> meshgrid(TensorList tensors, const std::string& indexing) {
  FW_CHECK(indexing == "ij" || indexing == "xy", "[meshgrid] indexing must be one of \"xy\" or \"ij\", but received: ",
           indexing);
  FW_CHECK(!tensors.empty(), "[meshgrid] expects a non-empty TensorList");
  for (size_t i = 0; i < tensors.size(); i++) {
    FW_CHECK(tensors[i].dim() <= 1, "[meshgrid] Expected 0D or 1D tensor in the tensor list but got: ",
             tensors[i].sizes());
    FW_CHECK(tensors[i].dtype() == tensors[0].dtype(), "[meshgrid] expects all tensors to have the same dtype");
    FW_CHECK(tensors[i].device() == tensors[0].device(), "[meshgrid] expects all tensors to have the same device");
  }
  std::vector<Tensor> in(tensors.begin(), tensors.end());
  const bool swap = indexing == "xy" && in.size() >= 2;
  if (swap) std::swap(in[0], in[1]);
  DimVec shape;
  for (auto& t : in) shape.push_back(t.numel());
  std::vector<Tensor> out;
  for (size_t i = 0; i < in.size(); i++) {
    DimVec view(in.size(), 1);
    view[i] = -1;
    out.push_back(in[i].view(view).expand(shape));
  }
  if (swap) std::swap(out[0], out[1]);
  return out;
}

Tensor cartesian_prod(TensorList tensors) {
  for (auto& t : tensors)
    FW_CHECK(t.dim() == 1, "[cartesian_prod] Expect a 1D vector, but got shape ", t.sizes());
  if (tensors.size() == 1) return tensors[0];
  std::vector<Tensor> grids = meshgrid(tensors, "ij");
  for (auto& g : grids) g = g.flatten();
  return stack(grids, 1);
}

Tensor combinations(const Tensor& t, int64_t r, bool with_replacement) {
  FW_CHECK(t.dim() == 1, "[combinations] Expect a 1D vector, but got shape ", t.sizes());
  FW_CHECK(r >= 0, "[combinations] Expect a non-negative number, but got ", r);
  if (r == 0) return empty({0}, t.options());
  const int64_t n = t.size(0);
  // Odometer over non-decreasing (with replacement) or increasing position tuples.
  std::vector<int64_t> pos(static_cast<size_t>(r)), flat;
  const int64_t step = with_replacement ? 0 : 1;
  for (int64_t i = 0; i < r; i++) pos[size_t(i)] = i * step;
  // The row count is C(n, r), or C(n + r - 1, r) with replacement; refuse results that cannot fit
  // before enumerating them.
  constexpr int64_t kMaxElements = int64_t(1) << 31;
  const int64_t top = with_replacement ? n + r - 1 : n;
  __int128 rows = top >= r ? 1 : 0;
  const int64_t k = std::min(r, top - r);  // C(top, i) grows for i <= k, so the check below is safe early
  for (int64_t i = 0; i < k && rows > 0; i++) {
    rows = rows * (top - i) / (i + 1);  // exact: a product of i + 1 consecutive integers over (i + 1)!
    FW_CHECK(rows * r <= kMaxElements, "[combinations] the result for ", n, " elements and r = ", r,
             " has more than ", kMaxElements, " elements");
  }
  flat.reserve(size_t(rows * r));
  while (n > 0 && pos[size_t(r - 1)] < n) {
    flat.insert(flat.end(), pos.begin(), pos.end());
    int64_t i = r - 1;
    // The last position that can still advance: its ceiling leaves room for the ones after it.
    while (i >= 0 && pos[size_t(i)] >= n - (r - 1 - i) * step - 1) i--;
    if (i < 0) break;
    pos[size_t(i)]++;
    for (int64_t j = i + 1; j < r; j++) pos[size_t(j)] = pos[size_t(j - 1)] + step;
  }
  const int64_t count = int64_t(flat.size()) / r;
  if (count == 0) return empty({0, r}, t.options());
  return t.index_select(0, longs(flat, {count * r}, t.device())).view({count, r});
}

Tensor channel_shuffle(const Tensor& x, int64_t groups) {
  FW_CHECK(x.dim() > 2, "[channel_shuffle] expects input with > 2 dims, but got input with sizes ", x.sizes());
  FW_CHECK(groups > 0, "[channel_shuffle] Number of groups to divide channels in must be positive. Value of groups:",
           groups);
  const int64_t c = x.size(1);
  FW_CHECK(c % groups == 0, "[channel_shuffle] Number of channels must be divisible by groups. Got ", c,
           " channels and ", groups, " groups.");
  std::vector<int64_t> split(x.sizes().begin(), x.sizes().end());
  split[1] = c / groups;
  split.insert(split.begin() + 1, groups);
  return x.reshape(split).transpose(1, 2).reshape(x.sizes());
}

namespace {
Tensor tri_indices(const char* op, int64_t row, int64_t col, int64_t offset, const TensorOptions& options,
                   bool lower) {
  FW_CHECK(row >= 0, "[", op, "] row must be non-negative, got", row);
  FW_CHECK(col >= 0, "[", op, "] col must be non-negative, got", col);
  const ScalarType dt = options.dtype_.value_or(kLong);
  FW_CHECK(dt == kLong || dt == kInt, "[", op, "] is only implemented for torch.long and torch.int, got ",
           dtype_str(dt));
  std::vector<int64_t> rs, cs;
  for (int64_t i = 0; i < row; i++)
    for (int64_t j = 0; j < col; j++)
      if (lower ? j - i <= offset : j - i >= offset) rs.push_back(i), cs.push_back(j);
  rs.insert(rs.end(), cs.begin(), cs.end());
  return longs(rs, {2, int64_t(cs.size())}, options.device_).to(dt);
}
}  // namespace

Tensor tril_indices(int64_t row, int64_t col, int64_t offset, const TensorOptions& options) {
  return tri_indices("tril_indices", row, col, offset, options, true);
}
Tensor triu_indices(int64_t row, int64_t col, int64_t offset, const TensorOptions& options) {
  return tri_indices("triu_indices", row, col, offset, options, false);
}

Tensor kron(const Tensor& a, const Tensor& b) {
  const int64_t nd = std::max(a.dim(), b.dim());
  DimVec as(size_t(nd - a.dim()), 1), bs(size_t(nd - b.dim()), 1);
  for (int64_t s : a.sizes()) as.push_back(s);
  for (int64_t s : b.sizes()) bs.push_back(s);
  DimVec av, bv, out;
  for (int64_t i = 0; i < nd; i++) {
    av.push_back(as[size_t(i)]), av.push_back(1);
    bv.push_back(1), bv.push_back(bs[size_t(i)]);
    out.push_back(as[size_t(i)] * bs[size_t(i)]);
  }
  return (a.reshape(av) * b.reshape(bv)).reshape(out);
}

Tensor rot90(const Tensor& t, int64_t k, IntArrayRef dims) {
  FW_CHECK(dims.size() == 2, "[rot90] expected total rotation dims == 2, but got dims = ", dims.size());
  FW_CHECK(t.dim() >= 2, "[rot90] expected total dims >= 2, but got total dims = ", t.dim());
  const int64_t d0 = wrap_dim(dims[0], t.dim(), "rot90"), d1 = wrap_dim(dims[1], t.dim(), "rot90");
  FW_CHECK(d0 != d1, "[rot90] expected rotation dims to be different, but got dim0 = ", d0, " and dim1 = ", d1);
  switch (((k % 4) + 4) % 4) {
    case 1: return t.flip({d1}).transpose(d0, d1);
    case 2: return t.flip({d0, d1});
    case 3: return t.flip({d0}).transpose(d0, d1);
    default: return t.clone();
  }
}

Tensor fliplr(const Tensor& t) {
  FW_CHECK(t.dim() >= 2, "[fliplr] Input must be >= 2-d, got ", t.dim(), "-d");
  return t.flip({1});
}
Tensor flipud(const Tensor& t) {
  FW_CHECK(t.dim() >= 1, "[flipud] Input must be >= 1-d, got a 0-d tensor");
  return t.flip({0});
}

Tensor atleast_1d(const Tensor& t) { return t.dim() == 0 ? t.reshape({1}) : t; }
Tensor atleast_2d(const Tensor& t) {
  if (t.dim() == 0) return t.reshape({1, 1});
  return t.dim() == 1 ? t.unsqueeze(0) : t;
}
Tensor atleast_3d(const Tensor& t) {
  if (t.dim() == 0) return t.reshape({1, 1, 1});
  if (t.dim() == 1) return t.unsqueeze(0).unsqueeze(-1);
  return t.dim() == 2 ? t.unsqueeze(-1) : t;
}
Tensor dstack(TensorList ts) {
  FW_CHECK(!ts.empty(), "[dstack] expects a non-empty TensorList");
  std::vector<Tensor> v;
  for (auto& t : ts) v.push_back(atleast_3d(t));
  return cat(v, 2);
}
Tensor column_stack(TensorList ts) {
  FW_CHECK(!ts.empty(), "[column_stack] expects a non-empty TensorList");
  std::vector<Tensor> v;
  for (auto& t : ts) v.push_back(t.dim() <= 1 ? t.reshape({t.numel(), 1}) : t);
  return cat(v, 1);
}

Tensor diag_embed(const Tensor& t, int64_t offset, int64_t dim1, int64_t dim2) {
  const int64_t nd = t.dim() + 1;
  const int64_t d1 = wrap_dim(dim1, nd, "diag_embed"), d2 = wrap_dim(dim2, nd, "diag_embed");
  FW_CHECK(d1 != d2, "[diag_embed] diagonal dimensions cannot be identical ", dim1, ", ", dim2);
  Tensor x = t.dim() == 0 ? t.reshape({1}) : t;
  const int64_t m = x.size(-1), a = std::abs(offset);
  Tensor d = x.unsqueeze(-1) * eye(m, TensorOptions(x.dtype()).device(x.device()));  // (..., m, m)
  if (offset > 0) d = constant_pad_nd(d, {a, 0, 0, a});
  else if (offset < 0) d = constant_pad_nd(d, {0, a, a, 0});
  // Move the (row, col) dims to (d1, d2).
  std::vector<int64_t> perm(size_t(nd), -1);
  perm[size_t(d1)] = nd - 2, perm[size_t(d2)] = nd - 1;
  int64_t next = 0;
  for (auto& p : perm)
    if (p < 0) p = next++;
  return d.permute(perm);
}

Tensor take_along_dim(const Tensor& t, const Tensor& indices, std::optional<int64_t> dim) {
  FW_CHECK(indices.dtype() == kLong, "[take_along_dim] dtype of indices should be Long but got ",
           dtype_str(indices.dtype()));
  if (!dim) return t.reshape({-1}).gather(0, indices.reshape({-1}));
  const int64_t d = wrap_dim(*dim, t.dim(), "take_along_dim");
  FW_CHECK(t.dim() == indices.dim(), "[take_along_dim] input and indices should have the same number of dimensions, "
           "but got ", t.dim(), " dimensions for input, and ", indices.dim(), " dimensions for indices");
  DimVec ts(t.sizes()), is(indices.sizes());
  ts[size_t(d)] = 1, is[size_t(d)] = 1;
  DimVec shape(broadcast_tensors({zeros({}).expand(ts), zeros({}).expand(is)})[0].sizes());
  DimVec tb = shape, ib = shape;
  tb[size_t(d)] = t.size(d), ib[size_t(d)] = indices.size(d);
  return t.expand(tb).gather(d, indices.expand(ib));
}

Tensor masked_scatter(const Tensor& t, const Tensor& mask, const Tensor& source) {
  FW_CHECK(mask.dtype() == kBool, "[masked_scatter] only supports boolean masks, but got mask with dtype ",
           dtype_str(mask.dtype()));
  FW_CHECK(source.dtype() == t.dtype(), "[masked_scatter] expected self and source to have same dtypes but got ",
           dtype_str(t.dtype()), " and ", dtype_str(source.dtype()));
  auto b = broadcast_tensors({t, mask});
  Tensor x = b[0], m = b[1];
  Tensor pos = m.reshape({-1}).nonzero().squeeze(1);
  const int64_t k = pos.numel();
  FW_CHECK(source.numel() >= k, "[masked_scatter] Number of elements of source < number of ones in mask: ",
           source.numel(), " < ", k);
  Tensor flat = x.reshape({-1});
  return index_put(flat, {std::optional<Tensor>(pos)}, source.reshape({-1}).narrow(0, 0, k)).reshape(x.sizes());
}

Tensor sgn(const Tensor& t) {
  if (!t.is_complex()) return sign(t);
  Tensor a = t.abs();
  return where(a == 0, zeros_like(t), t / a.to(t.dtype()));
}

Tensor clone(const Tensor& t, std::optional<MemoryFormat> memory_format) { return t.clone(memory_format); }

Tensor logaddexp(const Tensor& a, const Tensor& b) {
  Tensor m = maximum(a, b);
  Tensor r = m + log1p(exp(-(a - b).abs()));
  return where(a.eq(b).logical_and(a.isinf()), m, r);  // both -inf (or both +inf): no inf - inf
}
Tensor logaddexp2(const Tensor& a, const Tensor& b) {
  Tensor m = maximum(a, b);
  Tensor r = m + log1p(exp2(-(a - b).abs())) / std::log(2.0);
  return where(a.eq(b).logical_and(a.isinf()), m, r);
}

Tensor index_fill(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value) {
  const int64_t d = wrap_dim(dim, t.dim(), "index_fill");
  FW_CHECK(index.dtype() == kLong, "[index_fill] Expected dtype int64 for index, got ", dtype_str(index.dtype()));
  FW_CHECK(index.dim() <= 1, "[index_fill] Index has to be a vector/scalar, got a ", index.dim(), "-D index");
  const int64_t n = t.dim() == 0 ? 1 : t.size(d);
  Tensor idx = index.reshape({-1});
  if (idx.numel() > 0) {
    const int64_t lo = idx.min().item<int64_t>(), hi = idx.max().item<int64_t>();
    FW_CHECK_INDEX(lo >= -n && hi < n, "[index_fill] index ", lo < -n ? lo : hi, " is out of bounds for dimension ", d,
             " with size ", n);
  }
  Tensor mask = index_put(zeros({n}, TensorOptions(kBool).device(t.device())), {std::optional<Tensor>(idx)},
                          full({}, true, TensorOptions(kBool).device(t.device())));
  DimVec shape(size_t(std::max<int64_t>(t.dim(), 1)), 1);
  shape[size_t(d)] = n;
  return t.masked_fill(mask.reshape(shape).reshape(t.dim() == 0 ? IntArrayRef{} : IntArrayRef(shape)), value);
}

// ---- more composites

Tensor msort(const Tensor& t) { return std::get<0>(sort(t, 0)); }

Tensor nanmedian(const Tensor& t) {
  FW_CHECK(t.numel() > 0, "[nanmedian] cannot compute the median of an empty tensor");
  Tensor flat = t.reshape({-1});
  return evenly_distributed(flat, std::get<0>(nanmedian(flat, 0)));
}
std::tuple<Tensor, Tensor> nanmedian(const Tensor& t, int64_t dim, bool keepdim) {
  const int64_t d = wrap_dim(dim, t.dim(), "nanmedian");
  Tensor x = t.dim() == 0 ? t.reshape({1}) : t;
  FW_CHECK(x.size(d) > 0, "[nanmedian] cannot compute the median along an empty dimension");
  if (!x.is_floating_point()) {
    auto [v, i] = median(x, d, keepdim && t.dim() > 0);
    return {t.dim() == 0 ? v.reshape({}) : v, t.dim() == 0 ? i.reshape({}) : i};
  }
  Tensor idx = std::get<1>(sort(x, d));  // NaN last
  // The lower middle of the non-NaN values; index 0 when all are NaN (the value is then NaN).
  Tensor valid = x.isnan().logical_not().sum({d}, true);
  Tensor k = div((valid - 1).clamp_min(0), 2, "floor");
  Tensor index = idx.gather(d, k);
  Tensor values = x.gather(d, index);
  if (!keepdim || t.dim() == 0) values = values.squeeze(d), index = index.squeeze(d);
  return {values, index};
}

Tensor diff(const Tensor& t, int64_t n, int64_t dim, const std::optional<Tensor>& prepend,
            const std::optional<Tensor>& append) {
  FW_CHECK(t.dim() >= 1, "[diff] expects input to be at least one-dimensional");
  FW_CHECK(n >= 0, "[diff] order must be non-negative but got ", n);
  const int64_t d = wrap_dim(dim, t.dim(), "diff");
  std::vector<Tensor> parts;
  if (prepend && prepend->defined()) parts.push_back(*prepend);
  parts.push_back(t);
  if (append && append->defined()) parts.push_back(*append);
  Tensor x = parts.size() > 1 ? cat(parts, d) : t;
  for (int64_t i = 0; i < n && x.size(d) > 0; i++) {
    const int64_t m = x.size(d) - 1;
    x = x.dtype() == kBool ? x.narrow(d, 1, m).logical_xor(x.narrow(d, 0, m)) : x.narrow(d, 1, m) - x.narrow(d, 0, m);
  }
  return x;
}

namespace {
// Per-interval widths along dim for sample points x (1-D, or shaped like y).
Tensor trapezoid_widths(const Tensor& y, const Tensor& x, int64_t d, const char* op) {
  if (x.dim() == 1) {
    FW_CHECK(x.size(0) == y.size(d), "[", op, "] There must be one `x` value for each sample point, got ", x.size(0),
             " x values and ", y.size(d), " samples");
    DimVec shape(size_t(y.dim()), 1);
    shape[size_t(d)] = x.size(0) - 1;
    Tensor dx = x.narrow(0, 1, x.size(0) - 1) - x.narrow(0, 0, x.size(0) - 1);
    return dx.reshape(shape);
  }
  const int64_t xd = wrap_dim(d - y.dim() + x.dim(), x.dim(), op);
  return x.narrow(xd, 1, x.size(xd) - 1) - x.narrow(xd, 0, x.size(xd) - 1);
}
Tensor trapezoid_terms(const Tensor& y, int64_t d) {
  const int64_t m = y.size(d) - 1;
  return (y.narrow(d, 1, m) + y.narrow(d, 0, m)) / 2;
}
}  // namespace

Tensor trapezoid(const Tensor& y, double dx, int64_t dim) {
  const int64_t d = wrap_dim(dim, y.dim(), "trapezoid");
  if (y.size(d) == 0) return sum(y, {d});
  return sum(trapezoid_terms(y, d), {d}) * dx;
}
Tensor trapezoid(const Tensor& y, const Tensor& x, int64_t dim) {
  const int64_t d = wrap_dim(dim, y.dim(), "trapezoid");
  if (y.size(d) == 0) return sum(y, {d});
  return sum(trapezoid_terms(y, d) * trapezoid_widths(y, x, d, "trapezoid"), {d});
}
Tensor trapz(const Tensor& y, double dx, int64_t dim) { return trapezoid(y, dx, dim); }
Tensor trapz(const Tensor& y, const Tensor& x, int64_t dim) { return trapezoid(y, x, dim); }
Tensor cumulative_trapezoid(const Tensor& y, double dx, int64_t dim) {
  const int64_t d = wrap_dim(dim, y.dim(), "cumulative_trapezoid");
  if (y.size(d) == 0) return y.narrow(d, 0, 0);
  return cumsum(trapezoid_terms(y, d) * dx, d);
}
Tensor cumulative_trapezoid(const Tensor& y, const Tensor& x, int64_t dim) {
  const int64_t d = wrap_dim(dim, y.dim(), "cumulative_trapezoid");
  if (y.size(d) == 0) return y.narrow(d, 0, 0);
  return cumsum(trapezoid_terms(y, d) * trapezoid_widths(y, x, d, "cumulative_trapezoid"), d);
}

Tensor heaviside(const Tensor& t, const Tensor& values) {
  FW_CHECK(!t.is_complex() && !values.is_complex(), "[heaviside] is not yet implemented for complex tensors");
  FW_CHECK(t.dtype() == values.dtype(), "[heaviside] is not yet implemented for tensors with different dtypes, got ",
           dtype_str(t.dtype()), " and ", dtype_str(values.dtype()));
  Tensor zero = zeros({}, t.dtype()), one = ones({}, t.dtype());
  return where(t.eq(0), values, where(t > 0, one, zero)).to(t.dtype());
}

Tensor block_diag(TensorList tensors) {
  if (tensors.empty()) return empty({1, 0});
  ScalarType dt = tensors[0].dtype();
  for (auto& t : tensors) {
    FW_CHECK(t.dim() <= 2, "[block_diag] Input tensors must have 2 or fewer dimensions. Input has ", t.dim(),
             " dimensions");
    dt = promote_types(dt, t.dtype());
  }
  std::vector<Tensor> m;
  int64_t rows = 0, cols = 0;
  for (auto& t : tensors) {
    m.push_back(t.dim() == 2 ? t : t.reshape({1, t.numel()}));
    rows += m.back().size(0), cols += m.back().size(1);
  }
  std::vector<Tensor> bands;
  int64_t c0 = 0;
  for (auto& b : m) {
    const int64_t w = b.size(1);
    bands.push_back(constant_pad_nd(b.to(dt), {c0, cols - c0 - w}));
    c0 += w;
  }
  return cat(bands, 0);
}

Tensor vander(const Tensor& x, std::optional<int64_t> N, bool increasing) {
  FW_CHECK(x.dim() == 1, "[vander] x must be a one-dimensional tensor, got ", x.dim(), "-D");
  const int64_t n = N.value_or(x.size(0));
  FW_CHECK(n >= 0, "[vander] N must be non-negative, got ", n);
  ScalarType dt = x.dtype() == kBool || (is_integral(x.dtype(), false)) ? kLong : x.dtype();
  if (n == 0) return empty({x.size(0), 0}, dt);
  std::vector<Tensor> cols;
  cols.push_back(ones({x.size(0)}, TensorOptions(dt).device(x.device())));
  for (int64_t i = 1; i < n; i++) cols.push_back(cols.back() * x.to(dt));
  Tensor r = stack(cols, 1);
  return increasing ? r : r.flip({1});
}

Tensor inner(const Tensor& a, const Tensor& b) {
  if (a.dim() == 0 || b.dim() == 0) return a * b;
  FW_CHECK(a.size(-1) == b.size(-1), "[inner] inner() the last dimension must match on both input tensors but got "
           "shapes ", a.sizes(), " and ", b.sizes());
  return tensordot(a, b, {-1}, {-1});
}

Tensor tensordot(const Tensor& a, const Tensor& b, IntArrayRef dims_a, IntArrayRef dims_b) {
  FW_CHECK(dims_a.size() == dims_b.size(), "[tensordot] both dimension lists should have same length, got ",
           dims_a.size(), " and ", dims_b.size());
  std::vector<bool> ca(size_t(a.dim()), false), cb(size_t(b.dim()), false);
  std::vector<int64_t> pa, pb;
  int64_t k = 1;
  for (size_t i = 0; i < dims_a.size(); i++) {
    const int64_t da = wrap_dim(dims_a[i], a.dim(), "tensordot"), db = wrap_dim(dims_b[i], b.dim(), "tensordot");
    FW_CHECK(a.size(da) == b.size(db), "[tensordot] contracted dimensions need to match, but first has size ",
             a.size(da), " in dim ", da, " and second has size ", b.size(db), " in dim ", db);
    ca[size_t(da)] = cb[size_t(db)] = true;
    k *= a.size(da);
  }
  std::vector<int64_t> out, perm_a, perm_b;
  int64_t m = 1, n = 1;
  for (int64_t i = 0; i < a.dim(); i++)
    if (!ca[size_t(i)]) perm_a.push_back(i), out.push_back(a.size(i)), m *= a.size(i);
  for (size_t i = 0; i < dims_a.size(); i++) perm_a.push_back(wrap_dim(dims_a[i], a.dim(), "tensordot"));
  for (size_t i = 0; i < dims_b.size(); i++) perm_b.push_back(wrap_dim(dims_b[i], b.dim(), "tensordot"));
  for (int64_t i = 0; i < b.dim(); i++)
    if (!cb[size_t(i)]) perm_b.push_back(i), out.push_back(b.size(i)), n *= b.size(i);
  return mm(a.permute(perm_a).reshape({m, k}), b.permute(perm_b).reshape({k, n})).reshape(out);
}

Tensor chain_matmul(TensorList matrices) {
  FW_CHECK(!matrices.empty(), "[chain_matmul] chain_matmul(): Expected one or more matrices");
  for (auto& m : matrices)
    FW_CHECK(m.dim() == 2, "[chain_matmul] Tensor dimension is ", m.dim(), ", expected 2 instead.");
  if (matrices.size() == 1) return matrices[0].clone();
  Tensor r = matrices[0];
  for (size_t i = 1; i < matrices.size(); i++) r = mm(r, matrices[i]);
  return r;
}

Tensor addmv(const Tensor& t, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) {
  FW_CHECK(mat.dim() == 2 && vec.dim() == 1, "[addmv] vector + matrix @ vector expected, got ", t.dim(), ", ",
           mat.dim(), ", ", vec.dim());
  Tensor p = mv(mat, vec) * alpha;
  return beta.toDouble() == 0 ? p + zeros_like(t).expand_as(p) : t * beta + p;
}
Tensor addr(const Tensor& t, const Tensor& v1, const Tensor& v2, const Scalar& beta, const Scalar& alpha) {
  FW_CHECK(v1.dim() == 1 && v2.dim() == 1, "[addr] addr: Expected 1-D arguments vec1 and vec2, but got ", v1.dim(),
           "-D and ", v2.dim(), "-D");
  Tensor p = outer(v1, v2) * alpha;
  return beta.toDouble() == 0 ? p + zeros_like(t).expand_as(p) : t * beta + p;
}

Tensor ldexp(const Tensor& t, const Tensor& other) { return t * pow(full({}, 2.0, t.is_floating_point() ? t.dtype() : kFloat), other); }
Tensor float_power(const Tensor& t, const Tensor& exponent) {
  const ScalarType dt = t.is_complex() || exponent.is_complex() ? kComplexDouble : kDouble;
  return pow(t.to(dt), exponent.to(dt));
}
Tensor float_power(const Tensor& t, const Scalar& exponent) {
  const ScalarType dt = t.is_complex() || exponent.isComplex() ? kComplexDouble : kDouble;
  return pow(t.to(dt), exponent);
}
Tensor sinc(const Tensor& t) {
  Tensor x = t.is_floating_point() || t.is_complex() ? t : t.to(kFloat);
  Tensor px = x * M_PI;
  Tensor safe = where(x.eq(0), ones_like(px), px);
  return where(x.eq(0), ones_like(px), sin(safe) / safe);
}
Tensor deg2rad(const Tensor& t) { return (t.is_floating_point() ? t : t.to(kFloat)) * (M_PI / 180); }
Tensor rad2deg(const Tensor& t) { return (t.is_floating_point() ? t : t.to(kFloat)) * (180 / M_PI); }

namespace {
Tensor gcd_lcm(const char* op, const Tensor& a, const Tensor& b, bool lcm) {
  FW_CHECK(is_integral(a.dtype(), false) && is_integral(b.dtype(), false), "[", op,
           "] expects integer tensors, got ", dtype_str(a.dtype()), " and ", dtype_str(b.dtype()));
  auto bt = broadcast_tensors({a, b});
  auto va = host_values<int64_t>(bt[0]), vb = host_values<int64_t>(bt[1]);
  std::vector<int64_t> r(va.size());
  for (size_t i = 0; i < va.size(); i++) {
    // std::gcd/lcm on |values| (PyTorch's results are non-negative).
    uint64_t x = va[i] < 0 ? uint64_t(0) - uint64_t(va[i]) : uint64_t(va[i]);
    uint64_t y = vb[i] < 0 ? uint64_t(0) - uint64_t(vb[i]) : uint64_t(vb[i]);
    uint64_t g = std::gcd(x, y);
    r[i] = int64_t(lcm ? (g == 0 ? 0 : x / g * y) : g);
  }
  return longs(r, bt[0].sizes(), a.device()).to(promote_types(a.dtype(), b.dtype()));
}
}  // namespace

Tensor gcd(const Tensor& a, const Tensor& b) { return gcd_lcm("gcd", a, b, false); }
Tensor lcm(const Tensor& a, const Tensor& b) { return gcd_lcm("lcm", a, b, true); }

ScalarType result_type(const Tensor& a, const Tensor& b) { return detail::result_type({a, b}); }
ScalarType result_type(const Tensor& a, const Scalar& b) { return detail::result_type({a}, &b); }
ScalarType result_type(const Scalar& a, const Tensor& b) { return detail::result_type({b}, &a); }
ScalarType result_type(const Scalar& a, const Scalar& b) {
  // Two wrapped numbers: the higher category wins, at its wrapped dtype.
  return promote_types(a.type(), b.type());
}

bool can_cast(ScalarType from, ScalarType to) {
  // PyTorch: no complex -> real, no float -> integral, no non-bool -> bool.
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating_point(from) && is_integral(to, true)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

// ---- scatter_reduce

namespace {

// Note [scatter_reduce]
// sum and mean are composites of scatter / scatter_add (their gradients come from those ops).
// prod, amax and amin run a host kernel over the index's elements (values in double, or int64
// for integer tensors) inside an autograd::Function whose backward is PyTorch's: amax/amin split
// the gradient evenly among the elements equal to the result (self counted among them wherever
// it equals the result, even without include_self, as PyTorch does); prod gives each element the product of the others at its position (with one
// zero there, only the zero gets a gradient: the product of the rest; with more, none).
template <class T>
void scatter_reduce_kernel(T* out, IntArrayRef out_strides, const int64_t* idx, const T* src, IntArrayRef isizes,
                           IntArrayRef src_strides, int64_t dim, int op, bool include_self, std::vector<char>& seen) {
  const int64_t nd = int64_t(isizes.size());
  std::vector<int64_t> pos(size_t(nd), 0);
  int64_t n = 1;
  for (int64_t s : isizes) n *= s;
  for (int64_t e = 0; e < n; e++) {
    int64_t o = 0, so = 0;
    for (int64_t d = 0; d < nd; d++) {
      so += pos[size_t(d)] * src_strides[size_t(d)];
      o += (d == dim ? idx[e] : pos[size_t(d)]) * out_strides[size_t(d)];
    }
    const T v = src[so];
    T& r = out[o];
    if (!include_self && !seen[size_t(o)]) {
      r = v;
      seen[size_t(o)] = 1;
    } else if (op == 0) {
      r = r * v;
    } else if (op == 1) {
      if constexpr (std::is_floating_point_v<T>) r = (std::isnan(r) || std::isnan(v)) ? T(NAN) : std::max(r, v);
      else r = std::max(r, v);
    } else {
      if constexpr (std::is_floating_point_v<T>) r = (std::isnan(r) || std::isnan(v)) ? T(NAN) : std::min(r, v);
      else r = std::min(r, v);
    }
    for (int64_t d = nd - 1; d >= 0; d--) {
      if (++pos[size_t(d)] < isizes[size_t(d)]) break;
      pos[size_t(d)] = 0;
    }
  }
}

// op: 0 prod, 1 amax, 2 amin.
Tensor scatter_reduce_values(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, int op,
                             bool include_self) {
  const bool fl = self.is_floating_point();
  Tensor out = self.to(Device(kCPU), fl ? kDouble : kLong).contiguous().clone();
  Tensor s = src.to(Device(kCPU), fl ? kDouble : kLong).contiguous();
  Tensor idx = index.to(Device(kCPU)).contiguous();
  std::vector<char> seen(size_t(out.numel()), 0);
  if (fl)
    scatter_reduce_kernel<double>(out.data_ptr<double>(), out.strides(), idx.data_ptr<int64_t>(), s.data_ptr<double>(),
                                  idx.sizes(), s.strides(), dim, op, include_self, seen);
  else
    scatter_reduce_kernel<int64_t>(out.data_ptr<int64_t>(), out.strides(), idx.data_ptr<int64_t>(),
                                   s.data_ptr<int64_t>(), idx.sizes(), s.strides(), dim, op, include_self, seen);
  return out.to(self.device(), self.dtype());
}

struct ScatterReduceFn : autograd::Function<ScatterReduceFn> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor self, int64_t dim, Tensor index, Tensor src, int64_t op,
                        bool include_self) {
    Tensor out = scatter_reduce_values(self, dim, index, src, int(op), include_self);
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["op"] = op;
    ctx->saved_data["include_self"] = include_self;
    ctx->save_for_backward({self, index, src, out});
    return out;
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    auto v = ctx->get_saved_variables();
    const Tensor &self = v[0], &index = v[1], &src = v[2], &out = v[3], &go = g[0];
    const int64_t dim = ctx->saved_data["dim"].toInt(), op = ctx->saved_data["op"].toInt();
    const bool include_self = ctx->saved_data["include_self"].toBool();
    Tensor touched = zeros_like(self, kBool).scatter(dim, index, full({}, true, kBool).expand(index.sizes()));
    Tensor self_in = include_self ? ones_like(self, kBool) : touched.logical_not();  // self takes part
    Tensor src_n = src.narrow(0, 0, index.size(0));
    for (int64_t d = 1; d < index.dim(); d++) src_n = src_n.narrow(d, 0, index.size(d));
    Tensor gs, gsrc;
    if (op == 0) {
      // Zeros at each position (self's counted when it takes part) and the product of the rest.
      Tensor self_zero = self.eq(0).logical_and(self_in), src_zero = src_n.eq(0);
      Tensor nz = self_zero.to(kLong).scatter_add(dim, index, src_zero.to(kLong));
      Tensor prod_nonzero = scatter_reduce(where(self_zero, ones_like(self), self), dim, index,
                                           where(src_zero, ones_like(src_n), src_n), "prod", include_self);
      Tensor gsrc_at = go.gather(dim, index), out_at = out.gather(dim, index);
      Tensor nz_at = nz.gather(dim, index), pnz_at = prod_nonzero.gather(dim, index);
      gs = where(self_in, where(nz.eq(0), go * out / where(self.eq(0), ones_like(self), self),
                               where(nz.eq(1).logical_and(self.eq(0)), go * prod_nonzero, zeros_like(self))),
                 zeros_like(go));
      gsrc = where(nz_at.eq(0), gsrc_at * out_at / where(src_n.eq(0), ones_like(src_n), src_n),
                   where(nz_at.eq(1).logical_and(src_zero), gsrc_at * pnz_at, zeros_like(src_n)));
    } else {
      // Ties share the gradient evenly. As PyTorch, self counts among the ties where it equals the
      // result even when include_self is false (it then gets no gradient itself).
      Tensor self_hit = self.eq(out);
      Tensor out_at = out.gather(dim, index);
      Tensor src_hit = src_n.eq(out_at);
      Tensor count = self_hit.to(go.dtype()).scatter_add(dim, index, src_hit.to(go.dtype()));
      Tensor share = go / count.clamp_min(1);
      gs = where(self_in.logical_and(self_hit), share, zeros_like(share));
      gsrc = where(src_hit, share.gather(dim, index), zeros_like(src_n));
    }
    // The gradient of src is laid into src's full shape (elements beyond index's extent get none).
    Tensor gsrc_full = zeros_like(src);
    DimVec pad;
    for (int64_t d = src.dim() - 1; d >= 0; d--) pad.push_back(0), pad.push_back(src.size(d) - index.size(d));
    gsrc_full = constant_pad_nd(gsrc, pad);
    return {gs, Tensor(), Tensor(), gsrc_full, Tensor(), Tensor()};
  }
};

}  // namespace

Tensor scatter_reduce(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                      bool include_self) {
  const char* op = "scatter_reduce";
  const int64_t d = wrap_dim(dim, self.dim(), op);
  FW_CHECK(reduce == "sum" || reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin", "[", op,
           "] reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
  FW_CHECK(index.dtype() == kLong, "[", op, "] Expected index to be of dtype int64, got ", dtype_str(index.dtype()));
  FW_CHECK(self.dtype() == src.dtype(), "[", op, "] Expected self.dtype to be equal to src.dtype, got ",
           dtype_str(self.dtype()), " and ", dtype_str(src.dtype()));
  FW_CHECK(index.dim() == self.dim() && src.dim() == self.dim(), "[", op,
           "] Index tensor must have the same number of dimensions as self and src tensors, got ", index.dim(), ", ",
           self.dim(), " and ", src.dim());
  for (int64_t i = 0; i < self.dim(); i++) {
    FW_CHECK(index.size(i) <= src.size(i), "[", op, "] Expected index ", index.sizes(), " to be smaller than src ",
             src.sizes(), " apart from dimension ", d);
    FW_CHECK(i == d || index.size(i) <= self.size(i), "[", op, "] Expected index ", index.sizes(),
             " to be smaller than self ", self.sizes(), " apart from dimension ", d);
  }
  if (index.numel() > 0) {
    const int64_t lo = index.min().item<int64_t>(), hi = index.max().item<int64_t>();
    FW_CHECK(lo >= 0 && hi < self.size(d), "[", op, "] index ", lo < 0 ? lo : hi,
             " is out of bounds for dimension ", d, " with size ", self.size(d));
  }
  if (reduce == "sum" || reduce == "mean") {
    Tensor src_n = src;
    for (int64_t i = 0; i < src.dim(); i++) src_n = src_n.narrow(i, 0, index.size(i));
    Tensor base = include_self ? self : self.scatter(d, index, Scalar(0));
    Tensor total = base.scatter_add(d, index, src_n);
    if (reduce == "sum") return total;
    Tensor count = zeros_like(self).scatter_add(d, index, ones_like(src_n));
    if (include_self) count = count + 1;
    count = where(count.eq(0), ones_like(count), count);
    return self.is_floating_point() || self.is_complex() ? total / count : div(total, count, "floor");
  }
  const int64_t code = reduce == "prod" ? 0 : reduce == "amax" ? 1 : 2;
  return ScatterReduceFn::apply(self, d, index, src, code, include_self);
}

// Draws category indices per row of non-negative weights: with replacement by inverting the
// cumulative weights at uniform points, without by Efraimidis-Spirakis keys u^(1/w) (the
// num_samples largest keys are a weighted sample without replacement; zero weights never win).
// The uniforms come from fw's generator, so manual_seed makes draws reproducible.
Tensor multinomial(const Tensor& probs, int64_t num_samples, bool replacement) {
  const char* op = "multinomial";
  FW_CHECK(probs.dim() == 1 || probs.dim() == 2, "[", op, "] prob_dist must be 1 or 2 dim, got shape ", probs.sizes());
  FW_CHECK(probs.is_floating_point(), "[", op, "] only supports floating-point dtypes for input, got ",
           dtype_str(probs.dtype()));
  FW_CHECK(num_samples > 0, "[", op, "] cannot sample n_sample <= 0 samples (got ", num_samples, ")");
  const int64_t rows = probs.dim() == 2 ? probs.size(0) : 1, n = probs.size(-1);
  FW_CHECK(n > 0, "[", op, "] prob_dist must have at least one category, got shape ", probs.sizes());
  FW_CHECK(replacement || num_samples <= n, "[", op, "] cannot sample n_sample > prob_dist.size(-1) samples without ",
           "replacement (", num_samples, " > ", n, ")");
  const std::vector<double> w = host_values<double>(probs);
  for (int64_t r = 0; r < rows; r++) {
    double total = 0;
    int64_t positive = 0;
    for (int64_t j = 0; j < n; j++) {
      const double v = w[size_t(r * n + j)];
      FW_CHECK(std::isfinite(v) && v >= 0, "[", op, "] probability tensor contains either `inf`, `nan` or element < 0");
      total += v;
      positive += v > 0;
    }
    FW_CHECK(total > 0, "[", op, "] invalid multinomial distribution (sum of probabilities <= 0)");
    FW_CHECK(replacement || positive >= num_samples, "[", op, "] invalid multinomial distribution (with "
             "replacement=False, not enough non-negative category to sample): ", positive, " categories with non-zero "
             "probability for ", num_samples, " samples");
  }
  const std::vector<double> u =
      host_values<double>(rand({rows * (replacement ? num_samples : n)}, TensorOptions(kDouble)));
  std::vector<int64_t> out(static_cast<size_t>(rows * num_samples));
  std::vector<double> cum(static_cast<size_t>(n));
  std::vector<std::pair<double, int64_t>> keys(static_cast<size_t>(n));
  for (int64_t r = 0; r < rows; r++) {
    const double* wr = w.data() + r * n;
    int64_t* o = out.data() + r * num_samples;
    if (replacement) {
      double acc = 0;
      for (int64_t j = 0; j < n; j++) cum[size_t(j)] = acc += wr[j];
      for (int64_t s = 0; s < num_samples; s++) {
        const double target = u[size_t(r * num_samples + s)] * acc;
        // The first category whose cumulative weight exceeds the target, skipping zero weights.
        int64_t j = int64_t(std::upper_bound(cum.begin(), cum.end(), target) - cum.begin());
        j = std::min(j, n - 1);
        while (wr[j] == 0 && j > 0) j--;
        o[s] = j;
      }
    } else {
      for (int64_t j = 0; j < n; j++) {
        const double uj = std::max(u[size_t(r * n + j)], std::numeric_limits<double>::min());
        keys[size_t(j)] = {wr[j] > 0 ? std::log(uj) / wr[j] : -std::numeric_limits<double>::infinity(), j};
      }
      std::partial_sort(keys.begin(), keys.begin() + num_samples, keys.end(),
                        [](const auto& a, const auto& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); });
      for (int64_t s = 0; s < num_samples; s++) o[s] = keys[size_t(s)].second;
    }
  }
  Tensor result = longs(out, probs.dim() == 2 ? std::vector<int64_t>{rows, num_samples} : std::vector<int64_t>{num_samples},
                        probs.device());
  return result;
}

Tensor poisson(const Tensor& rates) {
  FW_CHECK(rates.is_floating_point(), "[poisson] expected a floating point tensor of rates, got ",
           dtype_str(rates.dtype()));
  auto lam = host_values<double>(rates);
  for (double l : lam)
    FW_CHECK(l >= 0 && std::isfinite(l), "[poisson] rates must be finite and non-negative, got ", l);
  // One draw from fw's generator seeds the host sampler, so manual_seed makes it reproducible.
  std::mt19937_64 rng(uint64_t(randint(0, std::numeric_limits<int64_t>::max(), {1}).item<int64_t>()));
  std::vector<double> out(lam.size());
  for (size_t i = 0; i < lam.size(); i++) out[i] = lam[i] == 0 ? 0.0 : double(std::poisson_distribution<int64_t>(lam[i])(rng));
  Tensor r = empty(rates.sizes(), kDouble);
  std::copy(out.begin(), out.end(), r.data_ptr<double>());
  return r.to(rates.device(), rates.dtype());
}

Tensor& Tensor::exponential_(double lambd) const {
  FW_CHECK(lambd > 0, "[exponential_] expects lambda > 0.0, but found lambda=", lambd);
  Tensor u = fw::rand(sizes(), TensorOptions(kDouble)).clamp(std::numeric_limits<double>::min(), 1.0);
  return copy_(-fw::log(u) / lambd);
}
Tensor& Tensor::geometric_(double p) const {
  FW_CHECK(p > 0 && p < 1, "[geometric_] expects p to be in (0, 1), but got p=", p);
  Tensor u = fw::rand(sizes(), TensorOptions(kDouble)).clamp(std::numeric_limits<double>::min(), 1.0);
  return copy_(fw::ceil(fw::log(u) / std::log1p(-p)).clamp_min(1));
}
Tensor& Tensor::cauchy_(double median, double sigma) const {
  FW_CHECK(sigma > 0, "[cauchy_] expects sigma > 0.0, but found sigma=", sigma);
  Tensor u = fw::rand(sizes(), TensorOptions(kDouble));
  return copy_(fw::tan((u - 0.5) * M_PI) * sigma + median);
}
Tensor& Tensor::log_normal_(double mean, double std) const {
  FW_CHECK(std > 0, "[log_normal_] expects std > 0.0, but found std=", std);
  return copy_(fw::exp(fw::randn(sizes(), TensorOptions(kDouble)) * std + mean));
}
Tensor Tensor::scatter_reduce(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce,
                              bool include_self) const {
  return fw::scatter_reduce(*this, dim, index, src, reduce, include_self);
}

// ---- torch::special composites

namespace special {
Tensor xlog1py(const Tensor& a, const Tensor& b) {
  Tensor r = a * fw::log1p(b);
  return where(a.eq(0).logical_and(b.isnan().logical_not()), zeros_like(r), r);
}
Tensor entr(const Tensor& t) {
  Tensor x = t.is_floating_point() ? t : t.to(kFloat);
  Tensor safe = where(x > 0, x, ones_like(x));
  Tensor r = -x * fw::log(safe);
  return where(x > 0, r, where(x.eq(0), zeros_like(r), where(x < 0, full_like(r, -INFINITY), x)));
}
Tensor ndtr(const Tensor& t) {
  Tensor x = t.is_floating_point() ? t : t.to(kFloat);
  return fw::erfc(x * -M_SQRT1_2) * 0.5;
}
Tensor multigammaln(const Tensor& t, int64_t p) {
  FW_CHECK(p >= 1, "[multigammaln] p has to be greater than or equal to 1, got ", p);
  if (t.numel() > 0)
    FW_CHECK(t.min().item<double>() > 0.5 * double(p - 1), "[multigammaln] All elements must be greater than (p-1)/2");
  Tensor r = full_like(t, double(p) * double(p - 1) / 4 * std::log(M_PI));
  for (int64_t i = 0; i < p; i++) r = r + fw::lgamma(t - double(i) / 2);
  return r;
}
}  // namespace special

// ---- Tensor methods (declared in fw/tensor.h)

Tensor Tensor::nansum(std::optional<ScalarType> dtype) const { return fw::nansum(*this, dtype); }
Tensor Tensor::nansum(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return fw::nansum(*this, dim, keepdim, dtype);
}
Tensor Tensor::nanmean(std::optional<ScalarType> dtype) const { return fw::nanmean(*this, dtype); }
Tensor Tensor::nanmean(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return fw::nanmean(*this, dim, keepdim, dtype);
}
std::tuple<Tensor, Tensor> Tensor::aminmax(std::optional<int64_t> dim, bool keepdim) const {
  return fw::aminmax(*this, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::kthvalue(int64_t k, int64_t dim, bool keepdim) const {
  return fw::kthvalue(*this, k, dim, keepdim);
}
std::tuple<Tensor, Tensor> Tensor::cummax(int64_t dim) const { return fw::cummax(*this, dim); }
std::tuple<Tensor, Tensor> Tensor::cummin(int64_t dim) const { return fw::cummin(*this, dim); }
Tensor Tensor::logcumsumexp(int64_t dim) const { return fw::logcumsumexp(*this, dim); }
Tensor Tensor::quantile(double q, std::optional<int64_t> dim, bool keepdim, const std::string& interpolation) const {
  return fw::quantile(*this, q, dim, keepdim, interpolation);
}
Tensor Tensor::quantile(const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                        const std::string& interpolation) const {
  return fw::quantile(*this, q, dim, keepdim, interpolation);
}
Tensor Tensor::nanquantile(double q, std::optional<int64_t> dim, bool keepdim,
                           const std::string& interpolation) const {
  return fw::nanquantile(*this, q, dim, keepdim, interpolation);
}
Tensor Tensor::nanquantile(const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                           const std::string& interpolation) const {
  return fw::nanquantile(*this, q, dim, keepdim, interpolation);
}
Tensor Tensor::bincount(const std::optional<Tensor>& weights, int64_t minlength) const {
  return fw::bincount(*this, weights, minlength);
}
Tensor Tensor::histc(int64_t bins, const Scalar& min, const Scalar& max) const {
  return fw::histc(*this, bins, min, max);
}
std::tuple<Tensor, Tensor, Tensor> Tensor::unique_consecutive(bool return_inverse, bool return_counts,
                                                              std::optional<int64_t> dim) const {
  return fw::unique_consecutive(*this, return_inverse, return_counts, dim);
}
Tensor Tensor::argwhere() const { return fw::argwhere(*this); }
Tensor Tensor::kron(const Tensor& other) const { return fw::kron(*this, other); }
Tensor Tensor::rot90(int64_t k, IntArrayRef dims) const { return fw::rot90(*this, k, dims); }
Tensor Tensor::fliplr() const { return fw::fliplr(*this); }
Tensor Tensor::flipud() const { return fw::flipud(*this); }
Tensor Tensor::diag_embed(int64_t offset, int64_t dim1, int64_t dim2) const {
  return fw::diag_embed(*this, offset, dim1, dim2);
}
Tensor Tensor::take_along_dim(const Tensor& indices, std::optional<int64_t> dim) const {
  return fw::take_along_dim(*this, indices, dim);
}
Tensor Tensor::masked_scatter(const Tensor& mask, const Tensor& source) const {
  return fw::masked_scatter(*this, mask, source);
}
Tensor Tensor::sgn() const { return fw::sgn(*this); }
Tensor Tensor::cov(int64_t correction, const std::optional<Tensor>& fweights,
                   const std::optional<Tensor>& aweights) const {
  return fw::cov(*this, correction, fweights, aweights);
}
Tensor Tensor::corrcoef() const { return fw::corrcoef(*this); }
Tensor Tensor::xlogy(const Tensor& other) const { return fw::xlogy(*this, other); }
Tensor Tensor::logaddexp(const Tensor& other) const { return fw::logaddexp(*this, other); }
Tensor Tensor::logaddexp2(const Tensor& other) const { return fw::logaddexp2(*this, other); }
Tensor Tensor::index_fill(int64_t dim, const Tensor& index, const Scalar& value) const {
  return fw::index_fill(*this, dim, index, value);
}
Tensor Tensor::inverse() const { return fw::inverse(*this); }
Tensor Tensor::det() const { return fw::det(*this); }
Tensor Tensor::logdet() const { return fw::logdet(*this); }
std::tuple<Tensor, Tensor> Tensor::slogdet() const { return fw::slogdet(*this); }
Tensor Tensor::cholesky(bool upper) const { return fw::cholesky(*this, upper); }
std::tuple<Tensor, Tensor, Tensor> Tensor::svd(bool some, bool compute_uv) const {
  return fw::svd(*this, some, compute_uv);
}
Tensor Tensor::pinverse(double rcond) const { return fw::linalg::pinv(*this, rcond); }
Tensor Tensor::matrix_power(int64_t n) const { return fw::linalg::matrix_power(*this, n); }

// Note [Memory formats]
// fw tensors are strided, so channels-last is just a stride order: an (N, C, H, W) tensor whose
// strides are those of a row-major (N, H, W, C) buffer (C fastest). contiguous(ChannelsLast) is
// one copy op into that order (kCopyChannelsLast); kernels that need row-major NCHW copy as they
// would for any other non-contiguous input.

bool Tensor::is_contiguous(MemoryFormat format) const {
  if (format == MemoryFormat::Contiguous || format == MemoryFormat::Preserve) return is_contiguous();
  if (dim() != format_rank(format)) return false;
  int64_t expected = 1;
  auto order = channels_last_order(dim());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (size(*it) != 1 && stride(*it) != expected) return false;
    expected *= size(*it);
  }
  return true;
}

Tensor Tensor::contiguous(MemoryFormat format) const {
  if (format == MemoryFormat::Contiguous || format == MemoryFormat::Preserve) return contiguous();
  FW_CHECK(dim() == format_rank(format), "[contiguous] required rank ", format_rank(format), " tensor to use ",
           format == MemoryFormat::ChannelsLast ? "channels_last" : "channels_last_3d", " format, got a ", dim(),
           "-D tensor");
  if (is_contiguous(format)) return *this;
  OpAttrs a;
  a.flags = kCopyChannelsLast;
  return dispatch1(OpId::copy, {*this}, a);
}

Tensor Tensor::clone(std::optional<MemoryFormat> format) const {
  if (!format || *format == MemoryFormat::Preserve) return clone();
  if (*format == MemoryFormat::Contiguous) return is_contiguous() ? clone() : contiguous();
  return is_contiguous(*format) ? clone().contiguous(*format) : contiguous(*format);
}

bool Tensor::is_non_overlapping_and_dense() const {
  if (is_contiguous()) return true;
  // Row-major strides in the preserved dim order, size-1 dims skipped. Arithmetic only, no ops:
  // autograd asks this of traced values too.
  std::vector<int64_t> order = preserved_order(*this);
  int64_t expected = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    if (size(*it) == 1) continue;
    if (stride(*it) != expected) return false;
    expected *= size(*it);
  }
  return !order.empty();
}

// libtorch's rule, which goes by the order of the strides rather than density, so a channels-last
// tensor sliced along H or W still suggests channels-last: walking C, then the spatial dims from
// the innermost, then N, each stride must be at least the extent of the dims walked before it. A
// zero C stride, or an N stride equal to C's (an N111-like tensor), falls back to contiguous, as
// do empty tensors.
MemoryFormat Tensor::suggest_memory_format() const {
  const int64_t nd = dim();
  if (nd != 4 && nd != 5) return MemoryFormat::Contiguous;
  if (stride(1) == 0) return MemoryFormat::Contiguous;
  int64_t min = 0;
  std::vector<int64_t> walk{1};
  for (int64_t d = nd - 1; d >= 2; d--) walk.push_back(d);
  walk.push_back(0);
  for (int64_t d : walk) {
    if (size(d) == 0 || stride(d) < min) return MemoryFormat::Contiguous;
    if (d == 0 && min == stride(1)) return MemoryFormat::Contiguous;
    min = stride(d) * (size(d) > 1 ? size(d) : 1);
  }
  return nd == 4 ? MemoryFormat::ChannelsLast : MemoryFormat::ChannelsLast3d;
}

// ---- statistics and distances

Tensor cov(const Tensor& t, int64_t correction, const std::optional<Tensor>& fweights,
           const std::optional<Tensor>& aweights) {
  FW_CHECK(t.dim() <= 2, "[cov] expected input to have two or fewer dimensions but got an input with ", t.dim(),
           " dimensions");
  Tensor x = t.dim() < 2 ? t.reshape({1, -1}) : t;
  if (!x.is_floating_point() && !x.is_complex()) x = x.to(kFloat);
  const int64_t n = x.size(1);
  Tensor w;
  auto check_weights = [&](const Tensor& v, const char* name, bool integral) {
    FW_CHECK(v.dim() <= 1, "[cov] expected ", name, " to have one or fewer dimensions but got ", name, " with ",
             v.dim(), " dimensions");
    FW_CHECK(v.numel() == n, "[cov] expected ", name, " to have the same numel as there are observations in the "
             "input but got ", v.numel(), " != ", n);
    if (integral)
      FW_CHECK(is_integral(v.dtype(), false), "[cov] expected fweights to have integral dtype but got fweights with ",
               dtype_str(v.dtype()), " dtype");
    else
      FW_CHECK(v.is_floating_point(), "[cov] expected aweights to have floating point dtype but got aweights with ",
               dtype_str(v.dtype()), " dtype");
    FW_CHECK(v.numel() == 0 || v.min().item<double>() >= 0, "[cov] ", name, " cannot be negative");
  };
  if (fweights && fweights->defined()) {
    check_weights(*fweights, "fweights", true);
    w = fweights->reshape({-1});
  }
  if (aweights && aweights->defined()) {
    check_weights(*aweights, "aweights", false);
    w = w.defined() ? w * aweights->reshape({-1}) : aweights->reshape({-1});
  }
  Tensor avg, wsum, norm;
  if (w.defined()) {
    w = w.to(x.dtype());
    wsum = w.sum();
    avg = (x * w).sum({1}) / wsum;
  } else {
    wsum = full({}, double(n), x.dtype());
    avg = x.mean({1});
  }
  if (!w.defined()) norm = wsum - double(correction);
  else if (correction == 0) norm = wsum;
  else if (!(aweights && aweights->defined())) norm = wsum - double(correction);
  else norm = wsum - double(correction) * (w * aweights->reshape({-1}).to(x.dtype())).sum() / wsum;
  norm = clamp_min(norm, 0);
  Tensor xc = x - avg.unsqueeze(1);
  Tensor c = matmul(xc, (w.defined() ? xc * w : xc).t()) / norm;
  return t.dim() < 2 ? c.squeeze() : c;
}

Tensor corrcoef(const Tensor& t) {
  FW_CHECK(t.dim() <= 2, "[corrcoef] expected input to have two or fewer dimensions but got an input with ", t.dim(),
           " dimensions");
  Tensor c = cov(t);
  if (c.dim() == 0) return c / c;
  Tensor s = c.diagonal().sqrt();
  c = c / s.unsqueeze(1) / s.unsqueeze(0);
  return c.is_complex() ? c : c.clamp(-1, 1);
}

Tensor cdist(const Tensor& x1, const Tensor& x2, double p, std::optional<int64_t> compute_mode) {
  if (FW_UNLIKELY(tls().autocast))  // autocast's float32 list
    return autocast_float32([](auto&&... a) { return cdist(a...); }, x1, x2, p, compute_mode);
  FW_CHECK(x1.dim() >= 2, "[cdist] only supports at least 2D tensors, X1 got: ", x1.dim(), "D");
  FW_CHECK(x2.dim() >= 2, "[cdist] only supports at least 2D tensors, X2 got: ", x2.dim(), "D");
  FW_CHECK(x1.size(-1) == x2.size(-1), "[cdist] X1 and X2 must have the same number of columns. X1: ", x1.size(-1),
           " X2: ", x2.size(-1));
  FW_CHECK(x1.is_floating_point() && x2.is_floating_point(), "[cdist] only supports floating-point dtypes, X1 got: ",
           dtype_str(x1.dtype()), ", X2 got: ", dtype_str(x2.dtype()));
  FW_CHECK(p >= 0, "[cdist] only supports non-negative p values, got ", p);
  const int64_t mode = compute_mode.value_or(0);
  FW_CHECK(mode >= 0 && mode <= 2, "[cdist] possible modes: 0, 1, 2, but was: ", mode);
  const bool grad = GradMode::is_enabled() && (x1.requires_grad() || x2.requires_grad());
  const int64_t P = x1.size(-2), R = x2.size(-2);
  if (p == 2 && !grad && (mode == 1 || (mode == 0 && (P > 25 || R > 25)))) {
    // |a - b|^2 = |a|^2 + |b|^2 - 2 a.b in one batched product, as PyTorch's _euclidean_dist.
    Tensor n1 = x1.pow(2).sum({-1}, true), n2 = x2.pow(2).sum({-1}, true);
    Tensor a = cat({x1 * -2, n1, ones_like(n1)}, -1), b = cat({x2, ones_like(n2), n2}, -1);
    return clamp_min(matmul(a, b.transpose(-1, -2)), 1e-30).sqrt();
  }
  Tensor diff = x1.unsqueeze(-2) - x2.unsqueeze(-3);  // (*, P, R, M)
  if (p == 0) return (diff != 0).sum({-1}).to(diff.dtype());
  if (std::isinf(p)) return diff.abs().amax({-1});
  if (p == 2) {
    // sqrt of the sum of squares with a zero gradient at zero distance (PyTorch's cdist backward).
    Tensor s = diff.pow(2).sum({-1});
    Tensor safe = where(s == 0, ones_like(s), s);
    return where(s == 0, zeros_like(s), safe.sqrt());
  }
  if (p == 1) return diff.abs().sum({-1});
  Tensor s = diff.abs().pow(p).sum({-1});
  Tensor safe = where(s == 0, ones_like(s), s);
  return where(s == 0, zeros_like(s), safe.pow(1.0 / p));
}

}  // namespace fw
