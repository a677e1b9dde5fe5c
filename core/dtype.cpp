#include "fw/dtype.h"

#include <atomic>
#include <cmath>

#include "fw/error.h"

namespace fw {

uint16_t Half::from_float(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t mag = u & 0x7fffffffu;
  if (mag > 0x7f800000u) return uint16_t(sign | 0x7e00u);     // NaN
  if (mag >= 0x477ff000u) return uint16_t(sign | 0x7c00u);    // overflow -> inf
  if (mag < 0x38800000u) {  // below the smallest normal half: count units of 2^-24
    float a;
    std::memcpy(&a, &mag, 4);
    return uint16_t(sign | uint32_t(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t r = mag - 0x38000000u;  // rebias exponent 127 -> 15
  uint32_t out = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (out & 1u))) out++;
  return uint16_t(sign | out);
}

float Half::to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  uint32_t u;
  if (e == 0) {
    if (m == 0) {
      u = sign;
    } else {
      float f = float(m) * 5.9604644775390625e-08f;  // m * 2^-24
      std::memcpy(&u, &f, 4);
      u |= sign;
    }
  } else if (e == 31) {
    u = sign | 0x7f800000u | (m << 13);
  } else {
    u = sign | ((e + 112) << 23) | (m << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

size_t element_size(ScalarType t) {
  static constexpr size_t sz[] = {1, 1, 1, 2, 4, 8, 2, 2, 4, 8, 8, 16};
  FW_CHECK(t < ScalarType::NumTypes, "[dtype] invalid scalar type ", int(t));
  return sz[int(t)];
}

const char* dtype_name(ScalarType t) {
  static const char* n[] = {"Bool", "Byte", "Char", "Short", "Int", "Long",
                            "Half", "BFloat16", "Float", "Double", "ComplexFloat", "ComplexDouble"};
  return t < ScalarType::NumTypes ? n[int(t)] : "Undefined";
}

const char* dtype_str(ScalarType t) {
  static const char* n[] = {"bool", "uint8", "int8", "int16", "int32", "int64",
                            "float16", "bfloat16", "float32", "float64", "complex64", "complex128"};
  return t < ScalarType::NumTypes ? n[int(t)] : "undefined";
}

std::ostream& operator<<(std::ostream& os, ScalarType t) { return os << dtype_name(t); }

const char* TypeMeta::name() const noexcept {
  static const char* n[] = {"bool", "unsigned char", "signed char", "short int", "int", "long int",
                            "c10::Half", "c10::BFloat16", "float", "double", "c10::complex<float>",
                            "c10::complex<double>"};
  return t_ < ScalarType::NumTypes ? n[int(t_)] : "nullptr (uninitialized)";
}
std::ostream& operator<<(std::ostream& os, TypeMeta t) { return os << t.name(); }  // "float", as libtorch
void error_put(std::ostream& os, TypeMeta t) { os << ScalarType(t); }

ScalarType promote_types(ScalarType a, ScalarType b) {
  if (a == b) return a;
  if (a == kBool) return b;
  if (b == kBool) return a;
  if (is_complex(a) || is_complex(b)) {
    // PyTorch's table: complex128 if either side is complex128 or float64, else complex64
    // (float16 with complex64 gives complex64 too; fw has no complex32).
    bool wide = a == kComplexDouble || b == kComplexDouble || a == kDouble || b == kDouble;
    return wide ? kComplexDouble : kComplexFloat;
  }
  bool fa = is_floating_point(a), fb = is_floating_point(b);
  if (fa && fb) {
    if ((a == kHalf && b == kBFloat16) || (a == kBFloat16 && b == kHalf)) return kFloat;
    return a > b ? a : b;
  }
  if (fa) return a;
  if (fb) return b;
  // both integral
  if (a == kUInt8 || b == kUInt8) {
    ScalarType o = a == kUInt8 ? b : a;
    return o == kInt8 ? kInt16 : o;
  }
  return a > b ? a : b;
}

ScalarType to_complex_type(ScalarType t) {
  switch (t) {
    case kBFloat16:  // bfloat16 has float32's range (PyTorch maps it to complex64)
    case kFloat:
    case kComplexFloat: return kComplexFloat;
    case kDouble:
    case kComplexDouble: return kComplexDouble;
    case kHalf: detail::throw_error("[to_complex_type] the complex type of float16 is complex32, which fw does not support");
    default: detail::throw_error("[to_complex_type] Unknown Complex ScalarType for ", dtype_name(t));
  }
}

static std::atomic<ScalarType> g_default_dtype{kFloat};
TypeMeta get_default_dtype() { return TypeMeta(g_default_dtype.load(std::memory_order_relaxed)); }
ScalarType get_default_dtype_as_scalartype() { return g_default_dtype.load(std::memory_order_relaxed); }
void set_default_dtype(ScalarType t) {
  FW_CHECK(t == kFloat || t == kDouble, "[set_default_dtype] only float32 and float64 are allowed, got ",
           dtype_str(t));
  g_default_dtype = t;
}

}  // namespace fw
