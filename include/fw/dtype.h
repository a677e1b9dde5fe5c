// Element types: ScalarType, the 16-bit float types, and type promotion.
#pragma once
#include <complex>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>

namespace fw {

// IEEE half precision stored as bits; arithmetic goes through float.
struct Half {
  uint16_t x = 0;
  Half() = default;
  Half(float f) : x(from_float(f)) {}
  static constexpr Half from_bits(uint16_t b) { Half h; h.x = b; return h; }
  operator float() const { return to_float(x); }
  // Compound assignment rounds the float result once (c10::Half's arithmetic).
  Half& operator+=(float o) { return *this = Half(float(*this) + o); }
  Half& operator-=(float o) { return *this = Half(float(*this) - o); }
  Half& operator*=(float o) { return *this = Half(float(*this) * o); }
  Half& operator/=(float o) { return *this = Half(float(*this) / o); }
  static uint16_t from_float(float f);
  static float to_float(uint16_t h);
};

// bfloat16: the top 16 bits of a float32, rounded to nearest even.
struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  static constexpr BFloat16 from_bits(uint16_t b) { BFloat16 h; h.x = b; return h; }
  BFloat16(float f) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) { x = 0x7fc0; return; }
    u += 0x7fffu + ((u >> 16) & 1u);
    x = uint16_t(u >> 16);
  }
  operator float() const {
    uint32_t u = uint32_t(x) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  BFloat16& operator+=(float o) { return *this = BFloat16(float(*this) + o); }
  BFloat16& operator-=(float o) { return *this = BFloat16(float(*this) - o); }
  BFloat16& operator*=(float o) { return *this = BFloat16(float(*this) * o); }
  BFloat16& operator/=(float o) { return *this = BFloat16(float(*this) / o); }
};

}  // namespace fw

// The 16-bit float types' limits (c10's values).
template <>
struct std::numeric_limits<fw::Half> {
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false, is_exact = false;
  static constexpr bool has_infinity = true, has_quiet_NaN = true, has_signaling_NaN = true;
  static constexpr auto has_denorm = std::denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr auto round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = true, is_bounded = true, is_modulo = false, traps = false, tinyness_before = false;
  static constexpr int digits = 11, digits10 = 3, max_digits10 = 5, radix = 2;
  static constexpr int min_exponent = -13, min_exponent10 = -4, max_exponent = 16, max_exponent10 = 4;
  static constexpr fw::Half min() { return fw::Half::from_bits(0x0400); }
  static constexpr fw::Half lowest() { return fw::Half::from_bits(0xFBFF); }
  static constexpr fw::Half max() { return fw::Half::from_bits(0x7BFF); }
  static constexpr fw::Half epsilon() { return fw::Half::from_bits(0x1400); }
  static constexpr fw::Half round_error() { return fw::Half::from_bits(0x3800); }
  static constexpr fw::Half infinity() { return fw::Half::from_bits(0x7C00); }
  static constexpr fw::Half quiet_NaN() { return fw::Half::from_bits(0x7E00); }
  static constexpr fw::Half signaling_NaN() { return fw::Half::from_bits(0x7D00); }
  static constexpr fw::Half denorm_min() { return fw::Half::from_bits(0x0001); }
};
template <>
struct std::numeric_limits<fw::BFloat16> {
  static constexpr bool is_specialized = true, is_signed = true, is_integer = false, is_exact = false;
  static constexpr bool has_infinity = true, has_quiet_NaN = true, has_signaling_NaN = true;
  static constexpr auto has_denorm = std::denorm_present;
  static constexpr bool has_denorm_loss = false;
  static constexpr auto round_style = std::round_to_nearest;
  static constexpr bool is_iec559 = false, is_bounded = true, is_modulo = false, traps = false, tinyness_before = false;
  static constexpr int digits = 8, digits10 = 2, max_digits10 = 4, radix = 2;
  static constexpr int min_exponent = -125, min_exponent10 = -37, max_exponent = 128, max_exponent10 = 38;
  static constexpr fw::BFloat16 min() { return fw::BFloat16::from_bits(0x0080); }
  static constexpr fw::BFloat16 lowest() { return fw::BFloat16::from_bits(0xFF7F); }
  static constexpr fw::BFloat16 max() { return fw::BFloat16::from_bits(0x7F7F); }
  static constexpr fw::BFloat16 epsilon() { return fw::BFloat16::from_bits(0x3C00); }
  static constexpr fw::BFloat16 round_error() { return fw::BFloat16::from_bits(0x3F00); }
  static constexpr fw::BFloat16 infinity() { return fw::BFloat16::from_bits(0x7F80); }
  static constexpr fw::BFloat16 quiet_NaN() { return fw::BFloat16::from_bits(0x7FC0); }
  static constexpr fw::BFloat16 signaling_NaN() { return fw::BFloat16::from_bits(0x7FA0); }
  static constexpr fw::BFloat16 denorm_min() { return fw::BFloat16::from_bits(0x0001); }
};

namespace fw {

using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

// The order is part of the promotion table in dtype.cpp.
enum class ScalarType : int8_t {
  Bool, UInt8, Int8, Int16, Int32, Int64, Half, BFloat16, Float, Double, ComplexFloat, ComplexDouble,
  NumTypes,
  // c10's enumerator names for the same types (at::ScalarType::Long, c10::ScalarType::Byte), and
  // its Undefined, which is fw's "no type" value (a default TypeMeta).
  Byte = UInt8, Char = Int8, Short = Int16, Int = Int32, Long = Int64, Undefined = NumTypes
};
using Dtype = ScalarType;

constexpr ScalarType kBool = ScalarType::Bool;
constexpr ScalarType kByte = ScalarType::UInt8;
constexpr ScalarType kUInt8 = ScalarType::UInt8;
constexpr ScalarType kChar = ScalarType::Int8;
constexpr ScalarType kInt8 = ScalarType::Int8;
constexpr ScalarType kShort = ScalarType::Int16;
constexpr ScalarType kInt16 = ScalarType::Int16;
constexpr ScalarType kInt = ScalarType::Int32;
constexpr ScalarType kInt32 = ScalarType::Int32;
constexpr ScalarType kLong = ScalarType::Int64;
constexpr ScalarType kInt64 = ScalarType::Int64;
constexpr ScalarType kHalf = ScalarType::Half;
constexpr ScalarType kFloat16 = ScalarType::Half;
constexpr ScalarType kBFloat16 = ScalarType::BFloat16;
constexpr ScalarType kFloat = ScalarType::Float;
constexpr ScalarType kFloat32 = ScalarType::Float;
constexpr ScalarType kDouble = ScalarType::Double;
constexpr ScalarType kFloat64 = ScalarType::Double;
constexpr ScalarType kComplexFloat = ScalarType::ComplexFloat;
constexpr ScalarType kComplex64 = ScalarType::ComplexFloat;
constexpr ScalarType kComplexDouble = ScalarType::ComplexDouble;
constexpr ScalarType kComplex128 = ScalarType::ComplexDouble;

// Size of one element in bytes.
size_t element_size(ScalarType t);
// libtorch-style name: "Float", "Long", ...
const char* dtype_name(ScalarType t);
// PyTorch-style name used in error messages: "float32", "int64", ...
const char* dtype_str(ScalarType t);
std::ostream& operator<<(std::ostream& os, ScalarType t);

inline bool is_floating_point(ScalarType t) {
  return t == kHalf || t == kBFloat16 || t == kFloat || t == kDouble;
}
inline bool is_complex(ScalarType t) { return t == kComplexFloat || t == kComplexDouble; }
inline bool is_integral(ScalarType t, bool include_bool = false) {
  return (t >= kUInt8 && t <= kInt64) || (include_bool && t == kBool);
}
// The complex dtype with t's value type (PyTorch's toComplexType): float32 and bfloat16 ->
// complex64, float64 -> complex128; complex dtypes map to themselves. fw has no complex32, so
// float16 throws, as do integral dtypes.
ScalarType to_complex_type(ScalarType t);
// The value type of a complex dtype (PyTorch's toRealValueType): complex64 -> float32,
// complex128 -> float64; real dtypes map to themselves.
inline ScalarType to_real_value_type(ScalarType t) {
  return t == kComplexFloat ? kFloat : t == kComplexDouble ? kDouble : t;
}
// The smallest type both a and b convert to without losing category (PyTorch's table).
ScalarType promote_types(ScalarType a, ScalarType b);
void set_default_dtype(ScalarType t);

// Compile-time map from C++ type to ScalarType.
template <class T> struct CppToType;
template <> struct CppToType<bool> { static constexpr ScalarType value = kBool; };
template <> struct CppToType<uint8_t> { static constexpr ScalarType value = kUInt8; };
template <> struct CppToType<int8_t> { static constexpr ScalarType value = kInt8; };
template <> struct CppToType<int16_t> { static constexpr ScalarType value = kInt16; };
template <> struct CppToType<int32_t> { static constexpr ScalarType value = kInt32; };
template <> struct CppToType<int64_t> { static constexpr ScalarType value = kInt64; };
template <> struct CppToType<Half> { static constexpr ScalarType value = kHalf; };
template <> struct CppToType<BFloat16> { static constexpr ScalarType value = kBFloat16; };
template <> struct CppToType<float> { static constexpr ScalarType value = kFloat; };
template <> struct CppToType<double> { static constexpr ScalarType value = kDouble; };
template <> struct CppToType<complex64> { static constexpr ScalarType value = kComplexFloat; };
template <> struct CppToType<complex128> { static constexpr ScalarType value = kComplexDouble; };
// c10's name for the same map (c10::CppTypeToScalarType<float>::value).
template <class T> using CppTypeToScalarType = CppToType<T>;


// What Tensor::dtype() returns: a ScalarType with libtorch's caffe2::TypeMeta interface (name(),
// itemsize(), toScalarType(), Match<T>()). It converts implicitly to ScalarType, so code written
// for either (`switch (t.dtype())`, `t.dtype() == kFloat`, `zeros(n, t.dtype())`) compiles; a
// default-constructed TypeMeta is libtorch's "uninitialized" type. name() is the C++ type name as
// libtorch spells it ("float", "long int"). Streamed, it prints as its ScalarType does ("Float",
// "Long"), so fw's messages read the same whichever a caller streams; libtorch streams the name.
class TypeMeta {
 public:
  constexpr TypeMeta() noexcept : t_(ScalarType::NumTypes) {}
  constexpr explicit TypeMeta(ScalarType t) noexcept : t_(t) {}
  constexpr operator ScalarType() const noexcept { return t_; }
  static constexpr TypeMeta fromScalarType(ScalarType t) noexcept { return TypeMeta(t); }
  template <class T> static constexpr TypeMeta Make() noexcept { return TypeMeta(CppToType<T>::value); }
  constexpr ScalarType toScalarType() const noexcept { return t_; }
  constexpr bool isScalarType() const noexcept { return t_ != ScalarType::NumTypes; }
  constexpr bool isScalarType(ScalarType t) const noexcept { return t_ == t; }
  template <class T> constexpr bool Match() const noexcept { return t_ == CppToType<T>::value; }
  size_t itemsize() const { return t_ == ScalarType::NumTypes ? 0 : element_size(t_); }
  // The C++ type's name, as libtorch spells it: "float", "double", "long int", "c10::Half".
  const char* name() const noexcept;
  friend constexpr bool operator==(TypeMeta a, TypeMeta b) noexcept { return a.t_ == b.t_; }
  friend constexpr bool operator!=(TypeMeta a, TypeMeta b) noexcept { return a.t_ != b.t_; }
  friend constexpr bool operator==(TypeMeta a, ScalarType b) noexcept { return a.t_ == b; }
  friend constexpr bool operator!=(TypeMeta a, ScalarType b) noexcept { return a.t_ != b; }
  friend constexpr bool operator==(ScalarType a, TypeMeta b) noexcept { return a == b.t_; }
  friend constexpr bool operator!=(ScalarType a, TypeMeta b) noexcept { return a != b.t_; }

 private:
  ScalarType t_;
};
std::ostream& operator<<(std::ostream& os, TypeMeta t);  // the C++ name ("float"), as libtorch's
// In fw's error messages a TypeMeta reads as its ScalarType ("Float"; error.h).
void error_put(std::ostream& os, TypeMeta t);
inline ScalarType typeMetaToScalarType(TypeMeta t) { return t.toScalarType(); }
// The dtype new floating tensors get (float32 unless changed), as a TypeMeta like libtorch's
// (`get_default_dtype().name()`); it converts to ScalarType where one is expected.
TypeMeta get_default_dtype();
ScalarType get_default_dtype_as_scalartype();
inline TypeMeta scalarTypeToTypeMeta(ScalarType t) { return TypeMeta(t); }

}  // namespace fw
