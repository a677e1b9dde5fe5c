// Dtype dispatch: visit_<set>(dtype, "op", [&]<class T>() { ... }) instantiates the lambda
// once per dtype of the set. Half and BFloat16 are computed in float by the callers
// (Note [16-bit floats compute in float]), which keeps instantiations few.
#pragma once
#include "fw/dtype.h"
#include "fw/error.h"

namespace fw::detail {

[[noreturn]] void unsupported_dtype(const char* op, ScalarType t);

#define FW_VISIT_CASE(ST, T) \
  case ScalarType::ST: return f.template operator()<T>();

template <class F>
decltype(auto) visit_float(ScalarType t, const char* op, F&& f) {
  switch (t) {
    FW_VISIT_CASE(Float, float) FW_VISIT_CASE(Double, double)
    default: unsupported_dtype(op, t);
  }
}
template <class F>
decltype(auto) visit_float_complex(ScalarType t, const char* op, F&& f) {
  switch (t) {
    FW_VISIT_CASE(Float, float) FW_VISIT_CASE(Double, double)
    FW_VISIT_CASE(ComplexFloat, complex64) FW_VISIT_CASE(ComplexDouble, complex128)
    default: unsupported_dtype(op, t);
  }
}
// complex64 / complex128 only (kernels that take complex inputs apart).
template <class F>
decltype(auto) visit_complex(ScalarType t, const char* op, F&& f) {
  switch (t) {
    FW_VISIT_CASE(ComplexFloat, complex64) FW_VISIT_CASE(ComplexDouble, complex128)
    default: unsupported_dtype(op, t);
  }
}
template <class F>
decltype(auto) visit_integral(ScalarType t, const char* op, F&& f) {
  switch (t) {
    FW_VISIT_CASE(Bool, bool) FW_VISIT_CASE(UInt8, uint8_t) FW_VISIT_CASE(Int8, int8_t)
    FW_VISIT_CASE(Int16, int16_t) FW_VISIT_CASE(Int32, int32_t) FW_VISIT_CASE(Int64, int64_t)
    default: unsupported_dtype(op, t);
  }
}
// Real numbers: bool, integers, float, double.
template <class F>
decltype(auto) visit_real(ScalarType t, const char* op, F&& f) {
  switch (t) {
    FW_VISIT_CASE(Bool, bool) FW_VISIT_CASE(UInt8, uint8_t) FW_VISIT_CASE(Int8, int8_t)
    FW_VISIT_CASE(Int16, int16_t) FW_VISIT_CASE(Int32, int32_t) FW_VISIT_CASE(Int64, int64_t)
    FW_VISIT_CASE(Float, float) FW_VISIT_CASE(Double, double)
    default: unsupported_dtype(op, t);
  }
}
template <class F>
decltype(auto) visit_all(ScalarType t, const char* op, F&& f) {
  switch (t) {
    FW_VISIT_CASE(Bool, bool) FW_VISIT_CASE(UInt8, uint8_t) FW_VISIT_CASE(Int8, int8_t)
    FW_VISIT_CASE(Int16, int16_t) FW_VISIT_CASE(Int32, int32_t) FW_VISIT_CASE(Int64, int64_t)
    FW_VISIT_CASE(Float, float) FW_VISIT_CASE(Double, double)
    FW_VISIT_CASE(ComplexFloat, complex64) FW_VISIT_CASE(ComplexDouble, complex128)
    default: unsupported_dtype(op, t);
  }
}
// Every dtype including the 16-bit floats (copies, fills, gathers: no arithmetic).
template <class F>
decltype(auto) visit_storage(ScalarType t, const char* op, F&& f) {
  switch (t) {
    FW_VISIT_CASE(Bool, bool) FW_VISIT_CASE(UInt8, uint8_t) FW_VISIT_CASE(Int8, int8_t)
    FW_VISIT_CASE(Int16, int16_t) FW_VISIT_CASE(Int32, int32_t) FW_VISIT_CASE(Int64, int64_t)
    FW_VISIT_CASE(Half, Half) FW_VISIT_CASE(BFloat16, BFloat16)
    FW_VISIT_CASE(Float, float) FW_VISIT_CASE(Double, double)
    FW_VISIT_CASE(ComplexFloat, complex64) FW_VISIT_CASE(ComplexDouble, complex128)
    default: unsupported_dtype(op, t);
  }
}
#undef FW_VISIT_CASE

}  // namespace fw::detail
