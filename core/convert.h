// convert<To>(from): element conversion with defined results for every pair of dtypes.
// Float to integer follows x86 (NaN and out-of-range values give the type's minimum for
// 32/64-bit, and wrap through int64 for narrower types), never C++'s undefined behaviour.
#pragma once
#include <cmath>
#include <complex>
#include <limits>
#include <type_traits>

#include "fw/dtype.h"

namespace fw::detail {

template <class T>
constexpr bool is_low_float_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

// complex64 / complex128 in kernels: is_complex_v<T>, and real_value_t<T> (float for
// complex64, double for complex128, T itself for real types).
template <class T> struct complex_parts { static constexpr bool is = false; using real = T; };
template <class R> struct complex_parts<std::complex<R>> { static constexpr bool is = true; using real = R; };
template <class T> constexpr bool is_complex_v = complex_parts<T>::is;
template <class T> using real_value_t = typename complex_parts<T>::real;

template <class I>
inline I float_to_int(double d) {
  if constexpr (sizeof(I) >= 4 && std::is_signed_v<I>) {
    if (!(d >= double(std::numeric_limits<I>::min()) && d < -double(std::numeric_limits<I>::min())))
      return std::numeric_limits<I>::min();
    return I(d);
  } else {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) return I(uint64_t(1) << 63);
    return I(int64_t(d));
  }
}

template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_complex_v<From>) {
    // PyTorch casts complex to every real type, bool included, through the real part
    // (torch.tensor([1j]).bool() is False); is_nonzero below tests both parts.
    if constexpr (is_complex_v<To>) return To(real_value_t<To>(v.real()), real_value_t<To>(v.imag()));
    else return convert<To>(v.real());
  } else if constexpr (is_complex_v<To>) {
    using R = real_value_t<To>;
    if constexpr (is_low_float_v<From>) return To(R(float(v)), R(0));
    else return To(R(v), R(0));
  } else if constexpr (std::is_same_v<To, bool>) {
    if constexpr (is_low_float_v<From>) return float(v) != 0.f;
    else return v != From(0);
  } else if constexpr (std::is_integral_v<To>) {
    if constexpr (std::is_floating_point_v<From>) return float_to_int<To>(double(v));
    else if constexpr (is_low_float_v<From>) return float_to_int<To>(double(float(v)));
    else return To(v);
  } else if constexpr (is_low_float_v<To>) {
    if constexpr (is_low_float_v<From>) return To(float(v));
    else return To(float(v));
  } else {
    if constexpr (is_low_float_v<From>) return To(float(v));
    else return To(v);
  }
}

// Truth value of an element (nonzero, masks): a complex number is nonzero if either part is.
template <class T>
inline bool is_nonzero(T v) {
  if constexpr (is_complex_v<T>) return v.real() != 0 || v.imag() != 0;
  else return convert<bool>(v);
}

}  // namespace fw::detail
