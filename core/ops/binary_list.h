#pragma once
// Binary ops take (a, b) or (a) with the scalar operand in attrs.s0 (flag kScalarRhs).
#define FW_OPS_BINARY(X)                                                                     \
  X(add, Elementwise) X(sub, Elementwise) X(mul, Elementwise) X(div, Elementwise)            \
  X(div_trunc, Elementwise) X(div_floor, Elementwise) X(remainder, Elementwise)              \
  X(fmod, Elementwise) X(pow, Elementwise) X(atan2, Elementwise) X(maximum, Elementwise)     \
  X(minimum, Elementwise) X(fmax, Elementwise) X(fmin, Elementwise) X(hypot, Elementwise)    \
  X(copysign, Elementwise) X(xlogy, Elementwise) X(eq, Elementwise) X(ne, Elementwise)       \
  X(lt, Elementwise) X(le, Elementwise) X(gt, Elementwise) X(ge, Elementwise)                \
  X(logical_and, Elementwise) X(logical_or, Elementwise) X(logical_xor, Elementwise)         \
  X(bitwise_and, Elementwise) X(bitwise_or, Elementwise) X(bitwise_xor, Elementwise)         \
  X(where, Elementwise) X(lerp, Elementwise) X(clamp_tensor, Elementwise)                    \
  X(addcmul, Elementwise) X(addcdiv, Elementwise) X(complex, Elementwise) X(polar, Elementwise)

#include <cstdint>
namespace fw::detail {
// OpAttrs::flags bit of a binary op whose second operand is the scalar attrs.s0.
inline constexpr uint32_t kScalarRhs = 1u << 8;
}  // namespace fw::detail
