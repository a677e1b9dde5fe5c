// Statistical reductions on the engine of reduce.h: var / var_mean (std and std_mean compose
// sqrt), logsumexp, norm; and the closeness tests isclose (primitive), allclose and equal.
#include <cmath>

#include "core/convert.h"
#include "core/loops.h"
#include "core/ops/composite_util.h"
#include "core/ops/reduce.h"
#include "core/vec_math.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

constexpr uint32_t kUnbiased = 2;

// Welford's running (count, mean, M2) in double; complex values add |x - mean|^2.
// Chan's formula merges two partial results.
template <class T>
struct WelfordRed {
  static constexpr bool kCplx = is_complex_v<T>;
  struct acc_t {
    double n = 0, mr = 0, mi = 0, m2 = 0;
  };
  static constexpr int kLanes = 4;
  acc_t init() const { return {}; }
  void step(acc_t& a, T x, int64_t) const {
    a.n += 1;
    double xr, xi = 0;
    if constexpr (kCplx) {
      xr = x.real();
      xi = x.imag();
    } else {
      xr = double(x);
    }
    double dr = xr - a.mr;
    a.mr += dr / a.n;
    a.m2 += dr * (xr - a.mr);
    if constexpr (kCplx) {
      double di = xi - a.mi;
      a.mi += di / a.n;
      a.m2 += di * (xi - a.mi);
    }
  }
  // Contiguous runs of real values: blocks of up to 2048 take their mean and then the squared
  // deviations from it (two vectorised passes over data that stays in L1, in double), and the
  // block is merged with Chan's formula. Welford's per-element division made var_mean over
  // (N, H, W) of a batch-norm-sized tensor 6x slower than a sum.
  bool run(acc_t& a, const T* p, int64_t n, int64_t) const {
    if constexpr (kCplx) {
      return false;
    } else {
      constexpr int64_t kBlock = 2048;
      for (int64_t b0 = 0; b0 < n; b0 += kBlock) {
        const int64_t m = std::min(kBlock, n - b0);
        const T* q = p + b0;
        double sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int64_t i = 0; i < m; i++) sum += double(q[i]);
        const double mu = sum / double(m);
        double m2 = 0;
#pragma omp simd reduction(+ : m2)
        for (int64_t i = 0; i < m; i++) m2 += (double(q[i]) - mu) * (double(q[i]) - mu);
        merge(a, acc_t{double(m), mu, 0, m2});
      }
      return true;
    }
  }
  void merge(acc_t& a, const acc_t& b) const {
    if (b.n == 0) return;
    if (a.n == 0) {
      a = b;
      return;
    }
    double n = a.n + b.n, dr = b.mr - a.mr, di = b.mi - a.mi, w = a.n * b.n / n;
    a.mr += dr * b.n / n;
    a.mi += di * b.n / n;
    a.m2 += b.m2 + (dr * dr + di * di) * w;
    a.n = n;
  }
};

ScalarType real_of(ScalarType t) { return to_real_value_type(t); }

void check_var_dtype(const Tensor& t, const char* op) {
  FW_CHECK(is_floating_point(t.dtype()) || is_complex(t.dtype()), "[", op,
           "] std and var only support floating point and complex dtypes");
}

// var: ints = dims, flags = keepdim | unbiased. var_mean adds the mean as a second output.
template <bool WithMean>
void var_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  check_var_dtype(t, c.def.name);
  DimVec s = reduced_shape(t, c.a.ints, c.a.flags & kKeepDim, c.def.name);
  m.push_back({s, real_of(t.dtype())});
  if (WithMean) m.push_back({s, t.dtype()});
}

void var_kernel(const OpCall& c, Outs& o) {
  ScalarType xt = opmath_dtype(c.in[0].dtype());
  Tensor x = cast(c.in[0], xt);
  ReduceGeom g = reduce_geom(x, reduce_dims(x, c.a.ints, c.def.name), false);
  int64_t corr = (c.a.flags & kUnbiased) ? 1 : 0;
  Tensor yv = out_buffer(o[0], real_of(xt));
  Tensor ym = o.size() > 1 ? out_buffer(o[1], xt) : Tensor();
  visit_float_complex(xt, c.def.name, [&]<class T>() {
    using Red = WelfordRed<T>;
    using R = real_value_t<T>;
    R* v = yv.data_ptr<R>();
    T* mp = ym.defined() ? ym.data_ptr<T>() : nullptr;
    run_reduce<T>(x, g, Red{}, [&](int64_t i, const typename Red::acc_t& a) {
      v[i] = R(a.m2 / std::max(a.n - double(corr), 0.0));
      if (mp) {
        double mr = a.n > 0 ? a.mr : NAN, mi = a.n > 0 ? a.mi : NAN;
        if constexpr (Red::kCplx) mp[i] = T(R(mr), R(mi));
        else mp[i] = T(mr);
      }
    });
  });
  finish_out(o[0], yv);
  if (o.size() > 1) finish_out(o[1], ym);
}

// Online log-sum-exp: (running max m, sum of exp(x - m)); NaN sticks, infinities pass through.
template <class T>
struct LseRed {
  struct acc_t {
    double m, s;
  };
  static constexpr int kLanes = 4;
  acc_t init() const { return {-INFINITY, 0}; }
  void step(acc_t& a, T x, int64_t) const { merge(a, {double(x), 1.0}); }
  void merge(acc_t& a, const acc_t& b) const {
    if (a.m != a.m || b.m == -INFINITY) return;
    if (b.m != b.m || a.m == -INFINITY) {
      a = b;
      return;
    }
    if (b.m > a.m) {
      a.s = a.s * std::exp(a.m - b.m) + b.s;
      a.m = b.m;
    } else if (b.m == a.m) {
      a.s += b.s;
    } else {
      a.s += b.s * std::exp(b.m - a.m);
    }
  }
  static double finish(const acc_t& a) { return std::isfinite(a.m) ? a.m + std::log(a.s) : a.m; }
  // Contiguous float runs: per L1-sized chunk, the chunk max then the vectorised exp of x - max.
  bool run(acc_t& a, const T* p, int64_t n, int64_t) const {
    if (!std::is_same_v<T, float>) return false;
    constexpr int64_t C = 1024;
    for (int64_t c = 0; c < n; c += C) {
      int64_t len = std::min(C, n - c);
      bool nan = false;
      float m = 0;
      if constexpr (std::is_same_v<T, float>) m = vec_extreme<true>(p + c, len, nan);
      if (nan || !std::isfinite(m)) {
        for (int64_t j = 0; j < len; j++) step(a, p[c + j], 0);
        continue;
      }
      float buf[C];
      for (int64_t j = 0; j < len; j++) buf[j] = float(p[c + j]) - m;
      VecF32<fn::Exp>::run(buf, buf, len);
      merge(a, {double(m), sum_lanes(buf, len)});
    }
    return true;
  }
  static double sum_lanes(const float* b, int64_t n) {
    double l[8] = {};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
      for (int k = 0; k < 8; k++) l[k] += b[j + k];
    for (; j < n; j++) l[0] += b[j];
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
  }
};

void logsumexp_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  FW_CHECK(!t.is_complex(), "[logsumexp] not implemented for dtype ", dtype_str(t.dtype()));
  ScalarType rt = is_integral(t.dtype(), true) ? get_default_dtype() : t.dtype();
  m.push_back({reduced_shape(t, c.a.ints, c.a.flags & kKeepDim, "logsumexp"), rt});
}

void logsumexp_kernel(const OpCall& c, Outs& o) {
  ScalarType xt = opmath_dtype(o[0].dtype());
  Tensor x = cast(c.in[0], xt);
  ReduceGeom g = reduce_geom(x, reduce_dims(x, c.a.ints, "logsumexp"), false);
  Tensor y = out_buffer(o[0], xt);
  visit_float(xt, "logsumexp", [&]<class T>() {
    reduce_to<T>(x, g, LseRed<T>{}, y, [](const typename LseRed<T>::acc_t& a) { return T(LseRed<T>::finish(a)); });
  });
  finish_out(o[0], y);
}

// ---- norm: f0 = p, ints = dims, flags = keepdim. Vector norm of |x| over the dims.
enum class NormKind { Zero, One, Two, Inf, NegInf, P };

template <class T>
double mag(T x) {
  if constexpr (is_complex_v<T>) return std::abs(std::complex<double>(x));
  else return std::abs(double(x));
}

template <class T, NormKind K>
struct NormRed {
  using acc_t = double;
  static constexpr int kLanes = 8;
  double p;
  acc_t init() const { return K == NormKind::NegInf ? INFINITY : 0.0; }
  void step(acc_t& a, T x, int64_t) const {
    if constexpr (K == NormKind::Two && is_complex_v<T>) {
      a += double(x.real()) * x.real() + double(x.imag()) * x.imag();
    } else if constexpr (K == NormKind::Two) {
      a += double(x) * double(x);
    } else {
      double v = mag(x);
      if constexpr (K == NormKind::Zero) a += double(v != 0);
      else if constexpr (K == NormKind::One) a += v;
      else if constexpr (K == NormKind::P) a += std::pow(v, p);
      else merge(a, v);
    }
  }
  void merge(acc_t& a, const acc_t& b) const {
    if constexpr (K == NormKind::Inf) a = (b > a || b != b) ? b : a;
    else if constexpr (K == NormKind::NegInf) a = (b < a || b != b) ? b : a;
    else a += b;
  }
  double finish(double a) const {
    if constexpr (K == NormKind::Two) return std::sqrt(a);
    else if constexpr (K == NormKind::P) return std::pow(a, 1.0 / p);
    else return a;
  }
};

void norm_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  FW_CHECK(t.is_floating_point() || t.is_complex(), "[norm] norm(): input dtype should be either floating point or ",
           "complex. Got ", dtype_name(t.dtype()), " instead.");
  m.push_back({reduced_shape(t, c.a.ints, c.a.flags & kKeepDim, "norm"), real_of(t.dtype())});
}

template <class T, NormKind K>
void run_norm(const Tensor& x, const ReduceGeom& g, double p, const Tensor& y) {
  using R = real_value_t<T>;
  NormRed<T, K> r{p};
  reduce_to<T>(x, g, r, y, [&r](double a) { return R(r.finish(a)); });
}

void norm_kernel(const OpCall& c, Outs& o) {
  ScalarType xt = opmath_dtype(c.in[0].dtype());
  Tensor x = cast(c.in[0], xt);
  ReduceGeom g = reduce_geom(x, reduce_dims(x, c.a.ints, "norm"), false);
  if (g.n_red == 0) {  // every p-norm of nothing is 0, -inf included (PyTorch)
    o[0].zero_();
    return;
  }
  Tensor y = out_buffer(o[0], real_of(xt));
  double p = c.a.f0;
  visit_float_complex(xt, "norm", [&]<class T>() {
    if (p == 0) run_norm<T, NormKind::Zero>(x, g, p, y);
    else if (p == 1) run_norm<T, NormKind::One>(x, g, p, y);
    else if (p == 2) run_norm<T, NormKind::Two>(x, g, p, y);
    else if (p == INFINITY) run_norm<T, NormKind::Inf>(x, g, p, y);
    else if (p == -INFINITY) run_norm<T, NormKind::NegInf>(x, g, p, y);
    else run_norm<T, NormKind::P>(x, g, p, y);
  });
  finish_out(o[0], y);
}

// ---- isclose: f0 = rtol, f1 = atol, flags bit 0 = equal_nan. Same-dtype inputs, broadcast.
void isclose_meta(const OpCall& c, Metas& m) {
  const Tensor &a = c.in[0], &b = c.in[1];
  FW_CHECK(a.dtype() == b.dtype(), "[isclose] ", dtype_name(a.dtype()), " did not match ", dtype_name(b.dtype()));
  FW_CHECK(!(a.is_complex() && (c.a.flags & 1)),
           "[isclose] isclose with equal_nan=True is not supported for complex inputs.");
  FW_CHECK(c.a.f0 >= 0, "[isclose] rtol must be greater than or equal to zero, but got ", c.a.f0);
  FW_CHECK(c.a.f1 >= 0, "[isclose] atol must be greater than or equal to zero, but got ", c.a.f1);
  m.push_back({broadcast_shapes(a.sizes(), b.sizes(), "isclose"), kBool});
}

void isclose_kernel(const OpCall& c, Outs& o) {
  ScalarType xt = opmath_dtype(c.in[0].dtype());
  Tensor a = cast(c.in[0], xt), b = cast(c.in[1], xt);
  double rtol = c.a.f0, atol = c.a.f1;
  bool equal_nan = c.a.flags & 1;
  visit_all(xt, "isclose", [&]<class T>() {
    binary_loop<bool, T>(o[0], a, b, [=](T x, T y) {
      if (x == y) return true;
      if constexpr (is_complex_v<T>) {
        double d = std::abs(std::complex<double>(x) - std::complex<double>(y));
        return std::isfinite(d) && d <= atol + rtol * std::abs(std::complex<double>(y));
      } else {
        double dx = double(x), dy = double(y);
        if (equal_nan && dx != dx && dy != dy) return true;
        double d = std::abs(dx - dy);
        return std::isfinite(d) && d <= atol + std::abs(rtol * dy);
      }
    });
  });
}

// ---- vjps (real inputs; public ops only)

int64_t reduced_count(const Tensor& x, IntArrayRef dims) {
  int64_t n = 1;
  for (int64_t d : reduce_dims(x, dims, "backward")) n *= x.sizes()[d];
  return n;
}

// var: 2 (x - mean) / (N - correction); var_mean adds the mean's 1 / N.
void var_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  bool kd = c.a.flags & kKeepDim;
  double n = double(reduced_count(x, c.a.ints)), corr = (c.a.flags & kUnbiased) ? 1 : 0;
  Tensor gx;
  if (g[0].defined())
    gx = grad_expand(g[0], x, c.a.ints, kd) * (x - x.mean(c.a.ints, true)) * (2.0 / std::max(n - corr, 0.0));
  if (g.size() > 1 && g[1].defined()) {
    Tensor gm = grad_expand(g[1], x, c.a.ints, kd) / n;
    gx = gx.defined() ? gx + gm : gm;
  }
  r[0] = gx;
}

void logsumexp_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  bool kd = c.a.flags & kKeepDim;
  r[0] = grad_expand(g[0], x, c.a.ints, kd) * fw::exp(x - grad_expand(c.out[0], x, c.a.ints, kd));
}

// d|x|_p = x |x|^(p-2) / |x|_p^(p-1) (0 where x or the norm is 0); p = inf shares the
// gradient between the entries of largest magnitude, as amax.
void norm_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  bool kd = c.a.flags & kKeepDim;
  double p = c.a.f0;
  Tensor ge = grad_expand(g[0], x, c.a.ints, kd);
  Tensor out = grad_expand(c.out[0], x, c.a.ints, kd);
  if (p == 0) {
    r[0] = fw::zeros_like(x);
  } else if (p == 1) {
    r[0] = ge * fw::sign(x);
  } else if (std::isinf(p)) {
    Tensor mask = fw::abs(x) == out;
    Tensor count = grad_expand(mask.sum(c.a.ints, true), x, c.a.ints, true);
    r[0] = ge * fw::sign(x) * mask / count;
  } else {
    Tensor d = p == 2 ? x / out : x * fw::pow(fw::abs(x), p - 2) / fw::pow(out, p - 1);
    r[0] = ge * fw::where((x == 0) | (out == 0), fw::zeros_like(d), d);
  }
}

}  // namespace

FW_DEFINE_OP(var) {
  d.meta = var_meta<false>;
  d.cpu = var_kernel;
  d.vjp = var_vjp;
}
FW_DEFINE_OP(var_mean) {
  d.meta = var_meta<true>;
  d.cpu = var_kernel;
  d.vjp = var_vjp;
}
FW_DEFINE_OP(logsumexp) {
  d.meta = logsumexp_meta;
  d.cpu = logsumexp_kernel;
  d.vjp = logsumexp_vjp;
  d.vjp_uses_out = true;
}
FW_DEFINE_OP(norm) {
  d.meta = norm_meta;
  d.cpu = norm_kernel;
  d.vjp = norm_vjp;
  d.vjp_uses_out = true;
}
FW_DEFINE_OP(isclose) { d.meta = isclose_meta; d.cpu = isclose_kernel; d.differentiable = false; }

// ---- public API

namespace {
OpAttrs var_attrs(IntArrayRef dim, bool unbiased, bool keepdim) {
  OpAttrs a = reduce_attrs(dim, keepdim);
  if (unbiased) a.flags |= kUnbiased;
  return a;
}
}  // namespace

Tensor var(const Tensor& t, bool unbiased) { return dispatch1(OpId::var, {t}, var_attrs({}, unbiased, false)); }
Tensor var(const Tensor& t, IntArrayRef dim, bool unbiased, bool keepdim) {
  return dispatch1(OpId::var, {t}, var_attrs(dim, unbiased, keepdim));
}
Tensor std(const Tensor& t, bool unbiased) { return std_from_var(fw::var(t, unbiased)); }
Tensor std(const Tensor& t, IntArrayRef dim, bool unbiased, bool keepdim) {
  return std_from_var(fw::var(t, dim, unbiased, keepdim));
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& t, IntArrayRef dim, bool unbiased, bool keepdim) {
  Outs o = dispatch(OpId::var_mean, {t}, var_attrs(dim, unbiased, keepdim));
  return {std::move(o[0]), std::move(o[1])};
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& t, IntArrayRef dim, bool unbiased, bool keepdim) {
  auto [v, m] = fw::var_mean(t, dim, unbiased, keepdim);
  return {std_from_var(v), m};
}
Tensor logsumexp(const Tensor& t, IntArrayRef dim, bool keepdim) {
  return dispatch1(OpId::logsumexp, {t}, reduce_attrs(dim, keepdim));
}
Tensor norm(const Tensor& t, const Scalar& p) { return fw::norm(t, p, {}, false); }
Tensor norm(const Tensor& t, std::optional<Scalar> p, IntArrayRef dim, bool keepdim) {
  OpAttrs a = reduce_attrs(dim, keepdim);
  a.f0 = p ? p->toDouble() : 2.0;
  return dispatch1(OpId::norm, {t}, a);
}
Tensor isclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  OpAttrs at;
  at.f0 = rtol;
  at.f1 = atol;
  at.flags = equal_nan ? 1 : 0;
  return dispatch1(OpId::isclose, {a, b}, at);
}
bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol, bool equal_nan) {
  return fw::isclose(a, b, rtol, atol, equal_nan).all().item<bool>();
}
bool equal(const Tensor& a, const Tensor& b) {
  if (!a.sizes().equals(b.sizes())) return false;
  return fw::eq(a, b).all().item<bool>();
}

Tensor Tensor::var(bool unbiased) const { return fw::var(*this, unbiased); }
Tensor Tensor::var(IntArrayRef dim, bool unbiased, bool keepdim) const { return fw::var(*this, dim, unbiased, keepdim); }
Tensor Tensor::std(bool unbiased) const { return fw::std(*this, unbiased); }
Tensor Tensor::std(IntArrayRef dim, bool unbiased, bool keepdim) const { return fw::std(*this, dim, unbiased, keepdim); }
Tensor Tensor::logsumexp(IntArrayRef dim, bool keepdim) const { return fw::logsumexp(*this, dim, keepdim); }
Tensor Tensor::norm(const Scalar& p) const { return fw::norm(*this, p); }
Tensor Tensor::norm(std::optional<Scalar> p, IntArrayRef dim, bool keepdim) const {
  return fw::norm(*this, p, dim, keepdim);
}

}  // namespace fw
