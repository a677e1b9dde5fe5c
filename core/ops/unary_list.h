#pragma once
#define FW_OPS_UNARY(X)                                                                   \
  X(exp, Elementwise) X(exp2, Elementwise) X(expm1, Elementwise) X(log, Elementwise)       \
  X(log2, Elementwise) X(log10, Elementwise) X(log1p, Elementwise) X(sqrt, Elementwise)    \
  X(rsqrt, Elementwise) X(abs, Elementwise) X(neg, Elementwise) X(sign, Elementwise)       \
  X(floor, Elementwise) X(ceil, Elementwise) X(round, Elementwise) X(trunc, Elementwise)  \
  X(frac, Elementwise) X(reciprocal, Elementwise) X(sin, Elementwise) X(cos, Elementwise)  \
  X(tan, Elementwise) X(asin, Elementwise) X(acos, Elementwise) X(atan, Elementwise)       \
  X(sinh, Elementwise) X(cosh, Elementwise) X(tanh, Elementwise) X(sigmoid, Elementwise)   \
  X(erf, Elementwise) X(erfc, Elementwise) X(relu, Elementwise) X(gelu, Elementwise)       \
  X(gelu_tanh, Elementwise) X(silu, Elementwise) X(mish, Elementwise)                      \
  X(log_sigmoid, Elementwise) X(hardsigmoid, Elementwise) X(hardswish, Elementwise)        \
  X(elu, Elementwise) X(leaky_relu, Elementwise) X(hardtanh, Elementwise)                  \
  X(softplus, Elementwise) X(logit, Elementwise) X(clamp_scalar, Elementwise)              \
  X(isnan, Elementwise) X(isinf, Elementwise) X(isposinf, Elementwise)                     \
  X(isneginf, Elementwise) X(isfinite, Elementwise) X(signbit, Elementwise)                \
  X(nan_to_num, Elementwise) X(logical_not, Elementwise) X(bitwise_not, Elementwise)       \
  X(conj, Elementwise) X(angle, Elementwise) X(real, View) X(imag, View)                  \
  X(lgamma, Elementwise) X(digamma, Elementwise) X(polygamma, Elementwise)                \
  X(erfinv, Elementwise) X(asinh, Elementwise) X(acosh, Elementwise) X(atanh, Elementwise)
