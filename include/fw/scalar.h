// fw::Scalar: a number of any dtype category, as passed to ops like add(t, 2.5).
#pragma once
#include <complex>
#include <cstdint>
#include <ostream>
#include <type_traits>

#include "fw/dtype.h"

namespace fw {

class Scalar {
 public:
  enum class Tag : uint8_t { Bool, Int, Double, Complex };
  Scalar() : tag_(Tag::Int) { v_.i = 0; }
  // bool exactly (as c10): a plain Scalar(bool) would take pointers, so x.norm("fro") meant p = 1.
  template <class T, std::enable_if_t<std::is_same_v<T, bool>, int> = 0>
  Scalar(T b) : tag_(Tag::Bool) { v_.i = b; }
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  Scalar(T i) : tag_(Tag::Int) { v_.i = int64_t(i); }
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Scalar(T d) : tag_(Tag::Double) { v_.d = double(d); }
  Scalar(Half h) : Scalar(double(float(h))) {}
  Scalar(BFloat16 h) : Scalar(double(float(h))) {}
  Scalar(std::complex<float> c) : tag_(Tag::Complex) { v_.c[0] = c.real(); v_.c[1] = c.imag(); }
  Scalar(std::complex<double> c) : tag_(Tag::Complex) { v_.c[0] = c.real(); v_.c[1] = c.imag(); }

  bool isBoolean() const { return tag_ == Tag::Bool; }
  bool isIntegral(bool include_bool = false) const {
    return tag_ == Tag::Int || (include_bool && tag_ == Tag::Bool);
  }
  bool isFloatingPoint() const { return tag_ == Tag::Double; }
  bool isComplex() const { return tag_ == Tag::Complex; }
  Tag tag() const { return tag_; }

  double toDouble() const {
    switch (tag_) {
      case Tag::Double: return v_.d;
      case Tag::Complex: return v_.c[0];
      default: return double(v_.i);
    }
  }
  int64_t toLong() const {
    switch (tag_) {
      case Tag::Double: return int64_t(v_.d);
      case Tag::Complex: return int64_t(v_.c[0]);
      default: return v_.i;
    }
  }
  float toFloat() const { return float(toDouble()); }
  int toInt() const { return int(toLong()); }
  bool toBool() const { return tag_ == Tag::Complex ? (v_.c[0] != 0 || v_.c[1] != 0) : toDouble() != 0; }
  std::complex<double> toComplexDouble() const {
    return tag_ == Tag::Complex ? std::complex<double>(v_.c[0], v_.c[1]) : std::complex<double>(toDouble(), 0);
  }
  template <class T> T to() const;
  // The dtype a wrapped number of this kind gets: Bool, Long, the default float dtype, or its
  // complex counterpart (complex64, or complex128 when the default is float64).
  ScalarType type() const;
  Scalar operator-() const;

 private:
  Tag tag_;
  union { int64_t i; double d; double c[2]; } v_;
};

template <class T>
inline T Scalar::to() const {
  if constexpr (std::is_same_v<T, bool>) return toBool();
  else if constexpr (std::is_same_v<T, complex64>) return complex64(toComplexDouble());
  else if constexpr (std::is_same_v<T, complex128>) return toComplexDouble();
  else if constexpr (std::is_integral_v<T>) return T(toLong());
  else if constexpr (std::is_same_v<T, double>) return toDouble();
  else return T(float(toDouble()));
}
std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace fw
