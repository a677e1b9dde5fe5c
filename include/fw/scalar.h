// fw::Scalar: a number of any dtype category, as passed to ops like add(t, 2.5).
#pragma once
#include <complex>
#include <cstdint>
#include <limits>
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
  // A floating value outside int64's range (or NaN) raises, as c10's checked conversion does.
  int64_t toLong() const {
    switch (tag_) {
      case Tag::Double: return double_to_long(v_.d);
      case Tag::Complex: return double_to_long(v_.c[0]);
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
  // The value as integer type T, raising "value cannot be converted to type T without overflow"
  // (naming op) where to<T>() would wrap; other types convert as to<T>().
  template <class T> T to_checked(const char* op) const;
  // The dtype a wrapped number of this kind gets: Bool, Long, the default float dtype, or its
  // complex counterpart (complex64, or complex128 when the default is float64).
  ScalarType type() const;
  Scalar operator-() const;

 private:
  int64_t double_to_long(double d) const {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) overflow("int64_t", nullptr);
    return int64_t(d);
  }
  [[noreturn]] void overflow(const char* type, const char* op) const;
  template <class T> static constexpr const char* type_name() {
    if constexpr (std::is_same_v<T, uint8_t>) return "uint8_t";
    else if constexpr (std::is_same_v<T, int8_t>) return "int8_t";
    else if constexpr (std::is_same_v<T, int16_t>) return "int16_t";
    else if constexpr (std::is_same_v<T, int32_t>) return "int";  // c10's spelling
    else if constexpr (std::is_same_v<T, int64_t>) return "int64_t";
    else return "an integer type";
  }
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
template <class T>
inline T Scalar::to_checked(const char* op) const {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (tag_ == Tag::Int) {
      if (v_.i < int64_t(std::numeric_limits<T>::lowest()) ||
          (v_.i > 0 && uint64_t(v_.i) > uint64_t(std::numeric_limits<T>::max())))
        overflow(type_name<T>(), op);
      return T(v_.i);
    }
    if (tag_ == Tag::Bool) return T(v_.i);
    double d = tag_ == Tag::Double ? v_.d : v_.c[0];
    if (tag_ == Tag::Complex && v_.c[1] != 0) overflow(type_name<T>(), op);
    if (!(d >= double(std::numeric_limits<T>::lowest()) && d <= double(std::numeric_limits<T>::max())))
      overflow(type_name<T>(), op);
    return T(double_to_long(d));
  } else {
    return to<T>();
  }
}
std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace fw
