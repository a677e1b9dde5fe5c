// Scalar functors shared by the eager CPU kernels and (later) generated C++/CUDA source.
// Each is a struct named after the op with a templated call operator; attribute-carrying ops
// hold their parameters as doubles. Keep this header free of fw includes: codegen pastes it.
#pragma once
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#ifndef FW_HD
#define FW_HD
#endif

namespace fw::fn {

template <class T> struct is_cplx : std::false_type {};
template <class T> struct is_cplx<std::complex<T>> : std::true_type {};

// erf for float32, branch-free so that loops over it vectorise: x·P(x²)/Q(x²) for |x| < 3.92 and
// ±1 beyond. Coefficients fitted here (weighted least squares on [0, 4]); evaluated in float the
// largest absolute error against the exact erf is 3.2e-7 (PyTorch's vectorised erf is of the same
// order), NaN propagates, ±inf give ±1 and erf(-0) = -0.
// Every condition is a select between values already computed (min-style clamps, no nested
// NaN tests), and the library and generated code are compiled with -fno-trapping-math: with
// both, GCC 12 vectorises the loops for AVX2 as well as AVX-512 (a nested `y == y ? ...` select
// and default trapping math kept it scalar, 6 ns per element).
FW_HD inline float erf_f32(float x) {
  float a = x < 0 ? -x : x;  // not fabs: keeps erf(-0) = -0
  const bool big = a >= 3.92f;  // erf is ±1 in float there (false for NaN, which propagates)
  a = 3.92f < a ? 3.92f : a;
  const float t = a * a;
  float p = -1.32037044e-08f;
  p = p * t + 4.68504181e-06f;
  p = p * t + 3.79620495e-04f;
  p = p * t + 3.84971480e-03f;
  p = p * t + 5.43173818e-02f;
  p = p * t + 1.85204978e-01f;
  p = p * t + 1.12837917e+00f;
  float q = 6.31131134e-05f;
  q = q * t + 1.30760665e-03f;
  q = q * t + 1.54623368e-02f;
  q = q * t + 1.13959352e-01f;
  q = q * t + 4.97467052e-01f;
  q = q * t + 1.0f;
  float y = a * p / q;
  y = 1.0f < y ? 1.0f : y;  // NaN stays NaN
  y = big ? 1.0f : y;
  return x < 0 ? -y : y;
}

// exp for float32, in plain arithmetic so that loops over it vectorise (and inline into generated
// kernels, where SLEEF's vector exp was a call over an array): n = round(x / ln 2) by the
// 1.5 * 2^23 shift, r = x - n ln 2 in two FMA steps, e^r by a degree-7 polynomial (the Cephes
// expf coefficients for degree >= 2) in Horner form, times 2^n built in two halves so that
// results down to the smallest subnormal come out (one rounding, in the last multiply). Checked
// against the double exp over all 2^32 floats: at most 0.894 ulp (SLEEF's expf_u10: 1.0), inf
// above 88.7228, +0 below -103.98, NaN propagates. std::fma is exactly rounded, so scalar code, a
// vector FMA and a libm fmaf (a build without FMA) all give the same floats. The range is handled
// by two selects on x after the arithmetic, not by clamping x first: GCC 12 turns a NaN-keeping
// clamp (`lo > x ? lo : x`) into three compares, two ands and two blends per vector, where the
// selects cost a compare and a blend or an and each (same floats for all 2^32 inputs; 0.64 ->
// 0.51 ns per element of exp(x - m) plus a float sum, in L1, one thread, AVX2 host).
inline float bits_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}
inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
FW_HD inline float exp_f32(float x) {
  const float shift = 12582912.0f;  // 1.5 * 2^23: adding it rounds to an integer
  const float kf = std::fma(x, 1.44269502f, shift);
  const float n = kf - shift;
  float r = std::fma(n, -0.693145752f, x);
  r = std::fma(n, -1.42860677e-06f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  p = std::fma(p, r, 1.0f);
  p = std::fma(p, r, 1.0f);
  // n from kf's mantissa; unsigned arithmetic, so any bits (far out of range, NaN) are defined.
  // Out of range the product is garbage that the two selects below replace; NaN stays NaN.
  const uint32_t i = f32_bits(kf) - f32_bits(shift);
  const uint32_t i1 = uint32_t(int32_t(i) >> 1), i2 = i - i1;
  float y = p * bits_f32((i1 + 127u) << 23) * bits_f32((i2 + 127u) << 23);
  y = x > 88.8f ? bits_f32(0x7f800000u) : y;
  y = x < -104.0f ? 0.0f : y;
  return y;
}
template <class T> FW_HD inline T exp_of(T x) {
  if constexpr (std::is_same_v<T, float>) return exp_f32(x);
  else return std::exp(x);
}

#define FW_FN1(Name, expr) \
  struct Name { template <class T> FW_HD T operator()(T x) const { return expr; } };

FW_FN1(Identity, x)
FW_FN1(Exp, exp_of(x))
FW_FN1(Exp2, std::exp2(x))
FW_FN1(Expm1, std::expm1(x))
FW_FN1(Log, std::log(x))
struct Log2 {  // std::log2 has no complex overload
  template <class T> FW_HD T operator()(T x) const {
    if constexpr (is_cplx<T>::value) return std::log(x) / typename T::value_type(0.693147180559945309417232121458176568);
    else return std::log2(x);
  }
};
FW_FN1(Log10, std::log10(x))
FW_FN1(Log1p, std::log1p(x))
FW_FN1(Sqrt, std::sqrt(x))
FW_FN1(Rsqrt, T(1) / std::sqrt(x))
FW_FN1(Neg, T(-x))
FW_FN1(Floor, std::floor(x))
FW_FN1(Ceil, std::ceil(x))
FW_FN1(Round, std::nearbyint(x))
FW_FN1(Trunc, std::trunc(x))
FW_FN1(Frac, x - std::trunc(x))
FW_FN1(Reciprocal, T(1) / x)
FW_FN1(Sin, std::sin(x))
FW_FN1(Cos, std::cos(x))
FW_FN1(Tan, std::tan(x))
FW_FN1(Asin, std::asin(x))
FW_FN1(Acos, std::acos(x))
FW_FN1(Atan, std::atan(x))
FW_FN1(Asinh, std::asinh(x))
FW_FN1(Acosh, std::acosh(x))
FW_FN1(Atanh, std::atanh(x))
FW_FN1(Sinh, std::sinh(x))
FW_FN1(Cosh, std::cosh(x))
FW_FN1(Tanh, std::tanh(x))
FW_FN1(Sigmoid, T(1) / (T(1) + exp_of(T(-x))))
struct Erf {
  template <class T> FW_HD T operator()(T x) const {
    if constexpr (std::is_same_v<T, float>) return erf_f32(x);
    else return std::erf(x);
  }
};
FW_FN1(Erfc, std::erfc(x))
FW_FN1(Gelu, T(0.5) * x * (T(1) + Erf{}(x * T(0.70710678118654752440))))
FW_FN1(GeluTanh, T(0.5) * x * (T(1) + std::tanh(T(0.79788456080286535588) * (x + T(0.044715) * x * x * x))))
FW_FN1(Silu, x / (T(1) + exp_of(T(-x))))
FW_FN1(Mish, x * std::tanh(x > T(20) ? x : std::log1p(std::exp(x))))
FW_FN1(LogSigmoid, std::min(x, T(0)) - std::log1p(std::exp(-std::abs(x))))
FW_FN1(Hardsigmoid, std::min(std::max(x + T(3), T(0)), T(6)) / T(6))
FW_FN1(Hardswish, x * std::min(std::max(x + T(3), T(0)), T(6)) / T(6))
FW_FN1(Conj, x)
FW_FN1(Lgamma, std::lgamma(x))
#undef FW_FN1

// Note [Gamma-family functors]
// digamma, polygamma and erfinv are evaluated in double (and rounded once for float), from
// textbook series: digamma by the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10, then its
// asymptotic expansion ln x - 1/(2x) - sum B_2k / (2k x^2k) (seven terms), with the reflection
// psi(1 - x) - pi / tan(pi x) below 0; trigamma as PyTorch evaluates it (below); polygamma(n >= 2,
// x) = (-1)^(n+1) n! zeta(n + 1, x) with the Hurwitz zeta by Euler-Maclaurin summation (nine
// direct terms, twelve Bernoulli terms);
// erfinv from Giles' single-precision approximation polished by two Newton steps on erf.
// Poles and domains follow PyTorch: psi(+0) = -inf, psi(-0) = +inf, NaN at negative integers,
// polygamma +inf at non-positive integers, erfinv(+-1) = +-inf and NaN outside [-1, 1].
FW_HD inline double digamma_f64(double x) {
  const double pi = 3.14159265358979323846;
  if (x == 0) return std::signbit(x) ? std::numeric_limits<double>::infinity()
                                     : -std::numeric_limits<double>::infinity();
  if (std::isnan(x)) return x;
  if (x < 0) {
    if (x == std::trunc(x)) return std::numeric_limits<double>::quiet_NaN();
    double ip;
    const double frac = std::modf(x, &ip);  // tan(pi * frac) is accurate where tan(pi * x) is not
    return digamma_f64(1 - x) - pi / std::tan(pi * frac);
  }
  if (std::isinf(x)) return x;
  double acc = 0;
  while (x < 10) acc -= 1 / x, x += 1;
  const double z = 1 / (x * x);
  const double tail =
      z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
  return acc + std::log(x) - 0.5 / x - tail;
}

// Hurwitz zeta(s, q) for s > 1.
FW_HD inline double hurwitz_zeta_f64(double s, double q) {
  if (std::isnan(s) || std::isnan(q)) return std::numeric_limits<double>::quiet_NaN();
  if (s == 1) return std::numeric_limits<double>::infinity();
  if (s < 1) return std::numeric_limits<double>::quiet_NaN();
  if (q == std::numeric_limits<double>::infinity()) return std::numeric_limits<double>::quiet_NaN();  // as PyTorch
  if (q <= 0) {
    if (q == std::floor(q)) return std::numeric_limits<double>::infinity();
    if (s != std::floor(s)) return std::numeric_limits<double>::quiet_NaN();  // q^-s undefined
  }
  // Direct terms up to a >= 9 (nine at least); a q below -1e6 would take millions of them, so
  // it gives NaN instead.
  if (q < -1e6) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0, a = q;
  for (int k = 0; k < 9 || a <= 9; k++, a += 1) {
    const double term = std::pow(a, -s);
    sum += term;
    if (std::abs(term / sum) < 1e-17) return sum;
  }
  // Euler-Maclaurin tail at a: a^(1-s)/(s-1) + a^-s/2 + sum_j B_2j/(2j)! s(s+1)..(s+2j-2) a^(-s-2j+1).
  static const double fact_over_bernoulli[12] = {
      12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
      -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15, 1.8152105401943546773e17,
      -7.1661652561756670113e18};  // (2j)! / B_2j for j = 1..12
  sum += std::pow(a, 1 - s) / (s - 1) + 0.5 * std::pow(a, -s);
  double rising = s, inv_pow = std::pow(a, -s - 1);
  for (int j = 0; j < 12; j++) {
    const double term = rising * inv_pow / fact_over_bernoulli[j];
    sum += term;
    if (std::abs(term / sum) < 1e-17) break;
    rising *= (s + 2 * j + 1) * (s + 2 * j + 2);
    inv_pow /= a * a;
  }
  return sum;
}

FW_HD inline double erfinv_f64(double y) {
  if (std::isnan(y) || y < -1 || y > 1) return std::numeric_limits<double>::quiet_NaN();
  if (y == 1) return std::numeric_limits<double>::infinity();
  if (y == -1) return -std::numeric_limits<double>::infinity();
  double w = -std::log((1 - y) * (1 + y)), x;
  if (w < 5) {
    w -= 2.5;
    double p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
    x = p * y;
  } else {
    w = std::sqrt(w) - 3;
    double p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
    x = p * y;
  }
  const double two_over_sqrt_pi = 1.12837916709551257390;
  for (int i = 0; i < 2; i++) x -= (std::erf(x) - y) / (two_over_sqrt_pi * std::exp(-x * x));
  return x;
}

struct Digamma {
  template <class T> FW_HD T operator()(T x) const { return T(digamma_f64(double(x))); }
};
struct Erfinv {
  template <class T> FW_HD T operator()(T x) const { return T(erfinv_f64(double(x))); }
};
// trigamma = polygamma(1, x) the way PyTorch computes it (so values agree to rounding, including
// its large finite values at the poles): reflection below 1/2, six recurrence steps, then the
// asymptotic series 1/x + 1/(2x^2) + sum B_2k / x^(2k+1) to k = 3.
FW_HD inline double trigamma_f64(double x) {
  const double pi = 3.14159265358979323846;
  double sign = 1, acc = 0;
  if (x < 0.5) {
    sign = -1;
    const double s = std::sin(pi * x);
    acc -= pi * pi / (s * s);
    x = 1 - x;
  }
  for (int i = 0; i < 6; i++) acc += 1 / (x * x), x += 1;
  const double ixx = 1 / (x * x);
  acc += (1 + 1 / (2 * x) + ixx * (1.0 / 6 - ixx * (1.0 / 30 - ixx * (1.0 / 42)))) / x;
  return sign * acc;
}

struct Polygamma {  // n >= 0
  double n;
  template <class T> FW_HD T operator()(T x) const {
    if (n == 0) return T(digamma_f64(double(x)));
    if (n == 1) return T(trigamma_f64(double(x)));
    const double sign = std::fmod(n, 2.0) == 1 ? 1.0 : -1.0;
    return T(sign * std::exp(std::lgamma(n + 1)) * hurwitz_zeta_f64(n + 1, double(x)));
  }
};

struct Abs {
  template <class T> FW_HD T operator()(T x) const {
    if constexpr (std::is_unsigned_v<T> || std::is_same_v<T, bool>) return x;
    else return x < T(0) ? T(-x) : x;
  }
};
struct Sign {
  template <class T> FW_HD T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return x;
    else if constexpr (std::is_unsigned_v<T>) return T(x > T(0));
    else return T((T(0) < x) - (x < T(0)));
  }
};
struct Relu {
  template <class T> FW_HD T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return x;
    else return x > T(0) ? x : (x != x ? x : T(0));
  }
};
struct Elu {  // scale * (x > 0 ? x : alpha * (exp(x * input_scale) - 1))
  double alpha, scale, input_scale;
  template <class T> FW_HD T operator()(T x) const {
    return x > T(0) ? T(scale) * x : T(scale) * T(alpha) * (std::exp(x * T(input_scale)) - T(1));
  }
};
struct LeakyRelu {
  double slope;
  template <class T> FW_HD T operator()(T x) const { return x > T(0) ? x : x * T(slope); }
};
struct Hardtanh {
  double lo, hi;
  template <class T> FW_HD T operator()(T x) const {
    return x < T(lo) ? T(lo) : (x > T(hi) ? T(hi) : x);
  }
};
struct Softplus {
  double beta, threshold;
  template <class T> FW_HD T operator()(T x) const {
    T bx = x * T(beta);
    return bx > T(threshold) ? x : std::log1p(std::exp(bx)) / T(beta);
  }
};
struct Logit {  // eps < 0 means no clamping
  double eps;
  template <class T> FW_HD T operator()(T x) const {
    T z = eps < 0 ? x : (x < T(eps) ? T(eps) : (x > T(1 - eps) ? T(1 - eps) : x));
    return std::log(z / (T(1) - z));
  }
};
struct ClampScalar {  // NaN propagates; bounds are applied when has_lo / has_hi
  double lo, hi;
  bool has_lo, has_hi;
  // Integer tensors compare with the bounds as integers: int64 bounds past 2^53 don't survive a
  // double (clamp_scalar_meta checks that they fit the tensor's type).
  int64_t ilo, ihi;
  template <class T> FW_HD T operator()(T x) const {
    if constexpr (std::is_integral_v<T>) {
      if (has_lo && x < T(ilo)) x = T(ilo);
      if (has_hi && x > T(ihi)) x = T(ihi);
      return x;
    } else {
      if (x != x) return x;
      if (has_lo && x < T(lo)) x = T(lo);
      if (has_hi && x > T(hi)) x = T(hi);
      return x;
    }
  }
};
struct NanToNum {
  double nan, posinf, neginf;
  template <class T> FW_HD T operator()(T x) const {
    if (x != x) return T(nan);
    if (x == std::numeric_limits<T>::infinity()) return T(posinf);
    if (x == -std::numeric_limits<T>::infinity()) return T(neginf);
    return x;
  }
};

// Predicates: bool results.
struct IsNan { template <class T> FW_HD bool operator()(T x) const { return x != x; } };
struct IsInf {  // complex: either part infinite
  template <class T> FW_HD bool operator()(T x) const {
    if constexpr (is_cplx<T>::value) return std::isinf(x.real()) || std::isinf(x.imag());
    else return std::isinf(x);
  }
};
struct IsPosInf { template <class T> FW_HD bool operator()(T x) const { return x == std::numeric_limits<T>::infinity(); } };
struct IsNegInf { template <class T> FW_HD bool operator()(T x) const { return x == -std::numeric_limits<T>::infinity(); } };
struct IsFinite {  // complex: both parts finite
  template <class T> FW_HD bool operator()(T x) const {
    if constexpr (is_cplx<T>::value) return std::isfinite(x.real()) && std::isfinite(x.imag());
    else return std::isfinite(x);
  }
};
struct Signbit { template <class T> FW_HD bool operator()(T x) const { return std::signbit(x); } };
struct LogicalNot { template <class T> FW_HD bool operator()(T x) const { return !(x != T(0)); } };
struct BitwiseNot {
  template <class T> FW_HD T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return !x;
    else return T(~x);
  }
};

// ---- binary
#define FW_FN2(Name, expr) \
  struct Name { template <class T> FW_HD T operator()(T a, T b) const { return expr; } };
FW_FN2(Mul, a * b)
FW_FN2(Div, a / b)
FW_FN2(Atan2, std::atan2(a, b))
FW_FN2(Hypot, std::hypot(a, b))
FW_FN2(Copysign, std::copysign(a, b))
FW_FN2(Xlogy, a == T(0) && b == b ? T(0) : a * std::log(b))
#undef FW_FN2

struct Add {  // a + alpha * b; alpha_im is the imaginary part of a complex alpha
  double alpha, alpha_im = 0;
  template <class T> FW_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a || (alpha != 0 && b);
    else if constexpr (std::is_integral_v<T>) return T(a + T(int64_t(alpha)) * b);
    else if constexpr (is_cplx<T>::value) {
      using R = typename T::value_type;
      return alpha == 1 && alpha_im == 0 ? a + b : a + T(R(alpha), R(alpha_im)) * b;
    } else return alpha == 1 ? a + b : a + T(alpha) * b;
  }
};
// Integer a / b and a % b where the one overflowing case, the type's minimum divided by -1 (a
// hardware trap, SIGFPE, on x86), wraps instead: the quotient is -a modulo 2^bits, the remainder 0.
template <class T> FW_HD T int_quot(T a, T b) {
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1)) return T(T(0) - static_cast<std::make_unsigned_t<T>>(a));
  return a / b;
}
template <class T> FW_HD T int_rem(T a, T b) {
  if constexpr (std::is_signed_v<T>)
    if (b == T(-1)) return T(0);
  return a % b;
}
struct DivTrunc {
  template <class T> FW_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return int_quot(a, b);
    else return std::trunc(a / b);
  }
};
struct DivFloor {
  template <class T> FW_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      T q = int_quot(a, b);
      if constexpr (std::is_signed_v<T>) q -= T((int_rem(a, b) != 0) && ((a < 0) != (b < 0)));
      return q;
    } else {
      if (b == T(0)) return a / b;
      T m = std::fmod(a, b);
      T d = (a - m) / b;
      if (m != T(0) && ((b < T(0)) != (m < T(0)))) d -= T(1);
      T f = std::floor(d);
      if (d - f > T(0.5)) f += T(1);
      return d == T(0) ? std::copysign(T(0), a / b) : f;
    }
  }
};
struct Remainder {  // result has the sign of the divisor (Python's %)
  template <class T> FW_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      T r = int_rem(a, b);
      if constexpr (std::is_signed_v<T>) {
        if (r != 0 && ((r < 0) != (b < 0))) r += b;
      }
      return r;
    } else {
      T r = std::fmod(a, b);
      if (r != T(0) && ((r < T(0)) != (b < T(0)))) r += b;
      return r;
    }
  }
};
struct Fmod {
  template <class T> FW_HD T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) return int_rem(a, b);
    else return std::fmod(a, b);
  }
};
struct Pow {
  template <class T> FW_HD T operator()(T a, T b) const {
    if constexpr (std::is_same_v<T, bool>) return a || !b;
    else if constexpr (std::is_integral_v<T>) {
      if (b < 0) return a == 1 ? T(1) : (a == T(-1) ? T((b & 1) ? -1 : 1) : T(0));
      T r = 1;
      T base = a;
      for (T e = b; e > 0; e >>= 1) {
        if (e & 1) r = T(r * base);
        base = T(base * base);
      }
      return r;
    } else {
      return std::pow(a, b);
    }
  }
};
struct Fmax {  // NaN-ignoring maximum
  template <class T> FW_HD T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return std::fmax(a, b);
    else return a > b ? a : b;
  }
};
struct Fmin {
  template <class T> FW_HD T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) return std::fmin(a, b);
    else return a < b ? a : b;
  }
};
struct Maximum {
  template <class T> FW_HD T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    }
    return a > b ? a : b;
  }
};
struct Minimum {
  template <class T> FW_HD T operator()(T a, T b) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (a != a || b != b) return std::numeric_limits<T>::quiet_NaN();
    }
    return a < b ? a : b;
  }
};
#define FW_CMP(Name, op) \
  struct Name { template <class T> FW_HD bool operator()(T a, T b) const { return a op b; } };
FW_CMP(Eq, ==) FW_CMP(Ne, !=) FW_CMP(Lt, <) FW_CMP(Le, <=) FW_CMP(Gt, >) FW_CMP(Ge, >=)
#undef FW_CMP
struct LogicalAnd { template <class T> FW_HD bool operator()(T a, T b) const { return a != T(0) && b != T(0); } };
struct LogicalOr { template <class T> FW_HD bool operator()(T a, T b) const { return a != T(0) || b != T(0); } };
struct LogicalXor { template <class T> FW_HD bool operator()(T a, T b) const { return (a != T(0)) != (b != T(0)); } };
struct BitwiseAnd { template <class T> FW_HD T operator()(T a, T b) const { return T(a & b); } };
struct BitwiseOr { template <class T> FW_HD T operator()(T a, T b) const { return T(a | b); } };
struct BitwiseXor { template <class T> FW_HD T operator()(T a, T b) const { return T(a ^ b); } };

// ---- ternary
struct Lerp {  // a + w * (b - a), with PyTorch's two-sided form for accuracy near w = 1
  template <class T> FW_HD T operator()(T a, T b, T w) const {
    return std::abs(w) < T(0.5) ? a + w * (b - a) : b - (b - a) * (T(1) - w);
  }
};
struct Addcmul {
  double value;
  template <class T> FW_HD T operator()(T s, T a, T b) const { return s + T(value) * a * b; }
};
struct Addcdiv {
  double value;
  template <class T> FW_HD T operator()(T s, T a, T b) const { return s + T(value) * (a / b); }
};
struct ClampTensor {  // lo/hi operands already broadcast; NaN bounds propagate
  template <class T> FW_HD T operator()(T x, T lo, T hi) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (x != x) return x;
      if (lo != lo) return lo;
      if (hi != hi) return hi;
    }
    return std::min(std::max(x, lo), hi);
  }
};

}  // namespace fw::fn
