// Op-table entries for the core families: creation, unary, binary/ternary, views, cat.
#include <gtest/gtest.h>

#include "tests/op_table.h"

using fw::Tensor;
using fwtest::FixArg;
using fwtest::FixCase;
using V = std::vector<Tensor>;

namespace {

fw::Scalar scalar(const FixArg& a) { return a.scalar(); }
std::optional<fw::Scalar> opt_scalar(const FixArg& a) {
  if (a.is_none()) return std::nullopt;
  return scalar(a);
}
std::optional<double> opt_double(const FixArg& a) {
  if (a.is_none()) return std::nullopt;
  return a.f;
}
// A tensor no op accepts: every op's door check names the op and the argument.
void undefined_arg(Tensor (*f)(const Tensor&)) { f(Tensor()); }

}  // namespace

#define UNARY_ENTRY(op, extra_error, fragment)                                     \
  FW_OP_TEST(op) {                                                                 \
    t.run = [](const FixCase& c) { return V{fw::op(c.in[0])}; };                    \
    t.error([] { fw::op(Tensor()); }, "[" #op "] argument #0 is an undefined tensor"); \
    extra_error;                                                                   \
    (void)fragment;                                                                \
  }
#define NO_EXTRA {}
#define COMPLEX_ERR(op) t.error([] { fw::op(fw::ones({2}, fw::kComplexFloat)); }, "not implemented for dtype complex64")

UNARY_ENTRY(exp, NO_EXTRA, 0)
UNARY_ENTRY(exp2, COMPLEX_ERR(exp2), 0)
UNARY_ENTRY(expm1, COMPLEX_ERR(expm1), 0)
UNARY_ENTRY(log, NO_EXTRA, 0)
UNARY_ENTRY(log2, NO_EXTRA, 0)
UNARY_ENTRY(log10, NO_EXTRA, 0)
UNARY_ENTRY(log1p, COMPLEX_ERR(log1p), 0)
UNARY_ENTRY(sqrt, NO_EXTRA, 0)
UNARY_ENTRY(rsqrt, NO_EXTRA, 0)
UNARY_ENTRY(abs, t.error([] { fw::abs(fw::ones({2}, fw::kBool)); }, "[abs] not implemented for dtype bool"), 0)
UNARY_ENTRY(neg, t.error([] { fw::neg(fw::ones({2}, fw::kBool)); }, "[neg] Negation, the `-` operator, on a bool tensor"), 0)
UNARY_ENTRY(sign, COMPLEX_ERR(sign), 0)
UNARY_ENTRY(floor, COMPLEX_ERR(floor), 0)
UNARY_ENTRY(ceil, COMPLEX_ERR(ceil), 0)
UNARY_ENTRY(round, COMPLEX_ERR(round), 0)
UNARY_ENTRY(trunc, COMPLEX_ERR(trunc), 0)
UNARY_ENTRY(frac, COMPLEX_ERR(frac), 0)
UNARY_ENTRY(reciprocal, NO_EXTRA, 0)
UNARY_ENTRY(sin, NO_EXTRA, 0)
UNARY_ENTRY(cos, NO_EXTRA, 0)
UNARY_ENTRY(tan, NO_EXTRA, 0)
UNARY_ENTRY(asin, NO_EXTRA, 0)
UNARY_ENTRY(acos, NO_EXTRA, 0)
UNARY_ENTRY(atan, NO_EXTRA, 0)
UNARY_ENTRY(sinh, NO_EXTRA, 0)
UNARY_ENTRY(cosh, NO_EXTRA, 0)
UNARY_ENTRY(tanh, NO_EXTRA, 0)
UNARY_ENTRY(sigmoid, NO_EXTRA, 0)
UNARY_ENTRY(erf, COMPLEX_ERR(erf), 0)
UNARY_ENTRY(erfc, COMPLEX_ERR(erfc), 0)
UNARY_ENTRY(lgamma, COMPLEX_ERR(lgamma), 0)
UNARY_ENTRY(digamma, COMPLEX_ERR(digamma), 0)
UNARY_ENTRY(erfinv, COMPLEX_ERR(erfinv), 0)
UNARY_ENTRY(asinh, NO_EXTRA, 0)
UNARY_ENTRY(acosh, NO_EXTRA, 0)
UNARY_ENTRY(atanh, NO_EXTRA, 0)
FW_OP_TEST(polygamma) {
  t.run = [](const FixCase& c) { return V{fw::polygamma(c.args[0].i, c.in[0])}; };
  t.error([] { fw::polygamma(-1, fw::ones({2})); }, "[polygamma] polygamma(n, x) does not support negative n, got n = -1");
  t.error([] { fw::polygamma(1, fw::ones({2}, fw::kComplexFloat)); }, "not implemented for dtype complex64");
}
UNARY_ENTRY(relu, COMPLEX_ERR(relu), 0)
UNARY_ENTRY(silu, COMPLEX_ERR(silu), 0)
UNARY_ENTRY(mish, COMPLEX_ERR(mish), 0)
UNARY_ENTRY(log_sigmoid, COMPLEX_ERR(log_sigmoid), 0)
UNARY_ENTRY(hardsigmoid, COMPLEX_ERR(hardsigmoid), 0)
UNARY_ENTRY(hardswish, COMPLEX_ERR(hardswish), 0)
UNARY_ENTRY(isnan, NO_EXTRA, 0)
UNARY_ENTRY(isinf, NO_EXTRA, 0)
UNARY_ENTRY(isposinf, COMPLEX_ERR(isposinf), 0)
UNARY_ENTRY(isneginf, COMPLEX_ERR(isneginf), 0)
UNARY_ENTRY(isfinite, NO_EXTRA, 0)
UNARY_ENTRY(signbit, COMPLEX_ERR(signbit), 0)
UNARY_ENTRY(logical_not, NO_EXTRA, 0)
UNARY_ENTRY(bitwise_not, t.error([] { fw::bitwise_not(fw::ones({2})); }, "[bitwise_not] bitwise operations are only supported on integer and bool"), 0)
UNARY_ENTRY(conj, NO_EXTRA, 0)
UNARY_ENTRY(angle, NO_EXTRA, 0)
UNARY_ENTRY(real, NO_EXTRA, 0)
UNARY_ENTRY(imag, t.error([] { fw::imag(fw::ones({2})); }, "[imag] imag is not implemented for tensors with non-complex dtypes"), 0)

FW_OP_TEST(gelu) {
  t.run = [](const FixCase& c) { return V{fw::gelu(c.in[0])}; };
  t.error([] { fw::gelu(fw::ones({2}), "fast"); }, "[gelu] approximate must be 'none' or 'tanh'");
}
FW_OP_TEST(gelu_tanh) {
  t.run = [](const FixCase& c) { return V{fw::gelu(c.in[0], "tanh")}; };
  t.error([] { fw::gelu(fw::ones({2}, fw::kComplexFloat), "tanh"); }, "[gelu_tanh] not implemented for dtype complex64");
}
FW_OP_TEST(elu) {
  t.run = [](const FixCase& c) { return V{fw::elu(c.in[0], c.args[0].f, c.args[1].f, c.args[2].f)}; };
  t.error([] { fw::elu(fw::ones({2}, fw::kComplexFloat)); }, "[elu] not implemented");
}
FW_OP_TEST(leaky_relu) {
  t.run = [](const FixCase& c) { return V{fw::leaky_relu(c.in[0], c.args[0].f)}; };
  t.error([] { fw::leaky_relu(Tensor()); }, "[leaky_relu] argument #0 is an undefined tensor");
}
FW_OP_TEST(hardtanh) {
  t.run = [](const FixCase& c) { return V{fw::hardtanh(c.in[0], c.args[0].f, c.args[1].f)}; };
  t.error([] { fw::hardtanh(fw::ones({2}), 2, 1); }, "[hardtanh] min_val cannot be greater than max_val");
}
FW_OP_TEST(softplus) {
  t.run = [](const FixCase& c) { return V{fw::softplus(c.in[0], c.args[0].f, c.args[1].f)}; };
  t.error([] { fw::softplus(fw::ones({2}, fw::kComplexFloat)); }, "[softplus] not implemented");
}
FW_OP_TEST(logit) {
  t.run = [](const FixCase& c) { return V{fw::logit(c.in[0], opt_double(c.args[0]))}; };
  t.error([] { fw::logit(fw::ones({2}, fw::kComplexFloat)); }, "[logit] not implemented");
}
FW_OP_TEST(clamp_scalar) {
  t.run = [](const FixCase& c) { return V{fw::clamp(c.in[0], opt_scalar(c.args[0]), opt_scalar(c.args[1]))}; };
  t.error([] { fw::clamp(fw::ones({2}), std::optional<fw::Scalar>(), std::optional<fw::Scalar>()); }, "[clamp] At least one of 'min' or 'max' must not be None");
}
FW_OP_TEST(nan_to_num) {
  t.run = [](const FixCase& c) {
    return V{fw::nan_to_num(c.in[0], opt_double(c.args[0]), opt_double(c.args[1]), opt_double(c.args[2]))};
  };
  t.error([] { fw::nan_to_num(Tensor()); }, "undefined");
}

// ---- binary: one input means the right operand is the scalar args[0]; add/sub take alpha last.
#define BINARY_ENTRY(op, extra_error)                                                             \
  FW_OP_TEST(op) {                                                                                \
    t.run = [](const FixCase& c) {                                                                \
      if (c.in.size() == 1) return V{fw::op(c.in[0], scalar(c.args[0]))};                        \
      return V{fw::op(c.in[0], c.in[1])};                                                          \
    };                                                                                            \
    t.error([] { fw::op(fw::ones({2, 4}), fw::ones({2, 5})); },                                    \
            "[" #op "] The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 1"); \
    extra_error;                                                                                  \
  }
BINARY_ENTRY(mul, NO_EXTRA)
BINARY_ENTRY(remainder, t.error([] { fw::remainder(fw::arange(3), 0); }, "ZeroDivisionError"))
BINARY_ENTRY(fmod, t.error([] { fw::fmod(fw::arange(3), fw::zeros({3}, fw::kLong)); }, "ZeroDivisionError"))
BINARY_ENTRY(pow, t.error([] { fw::pow(fw::arange(3), -1); }, "Integers to negative integer powers are not allowed"))
BINARY_ENTRY(eq, NO_EXTRA)
BINARY_ENTRY(ne, NO_EXTRA)
BINARY_ENTRY(lt, t.error([] { fw::lt(fw::ones({2}, fw::kComplexFloat), fw::ones({2}, fw::kComplexFloat)); }, "[lt] not implemented for dtype complex64"))
BINARY_ENTRY(le, NO_EXTRA)
BINARY_ENTRY(gt, NO_EXTRA)
BINARY_ENTRY(ge, NO_EXTRA)

#define BINARY_TT_ENTRY(op, extra_error)                                                          \
  FW_OP_TEST(op) {                                                                                \
    t.run = [](const FixCase& c) {                                                                \
      if (c.in.size() == 1) return V{fw::op(c.in[0], fw::full({}, scalar(c.args[0])))};      \
      return V{fw::op(c.in[0], c.in[1])};                                                          \
    };                                                                                            \
    t.error([] { fw::op(fw::ones({3}), fw::ones({2})); },                                         \
            "[" #op "] The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"); \
    extra_error;                                                                                  \
  }
BINARY_TT_ENTRY(atan2, NO_EXTRA)
BINARY_TT_ENTRY(maximum, t.error([] { fw::maximum(fw::ones({1}, fw::kComplexFloat), fw::ones({1}, fw::kComplexFloat)); }, "not implemented for dtype complex64"))
BINARY_TT_ENTRY(minimum, NO_EXTRA)
BINARY_TT_ENTRY(fmax, NO_EXTRA)
BINARY_TT_ENTRY(fmin, NO_EXTRA)
BINARY_TT_ENTRY(hypot, NO_EXTRA)
BINARY_TT_ENTRY(copysign, NO_EXTRA)
BINARY_TT_ENTRY(xlogy, NO_EXTRA)
BINARY_TT_ENTRY(logical_and, NO_EXTRA)
BINARY_TT_ENTRY(logical_or, NO_EXTRA)
BINARY_TT_ENTRY(logical_xor, NO_EXTRA)
BINARY_TT_ENTRY(bitwise_and, t.error([] { fw::bitwise_and(fw::ones({2}), fw::ones({2})); }, "[bitwise_and] bitwise operations are only supported on integer and bool tensors, got float32"))
BINARY_TT_ENTRY(bitwise_or, NO_EXTRA)
BINARY_TT_ENTRY(bitwise_xor, NO_EXTRA)

FW_OP_TEST(add) {
  t.run = [](const FixCase& c) {
    if (c.in.size() == 1) return V{fw::add(c.in[0], scalar(c.args[0]), scalar(c.args[1]))};
    return V{fw::add(c.in[0], c.in[1], scalar(c.args[0]))};
  };
  t.error([] { fw::add(fw::ones({2, 3, 4}), fw::ones({2, 3, 5})); },
          "[add] The size of tensor a (4) must match the size of tensor b (5) at non-singleton dimension 2");
  t.error([] { auto x = fw::ones({3}, fw::kLong); x.add_(1.5); }, "[add] result type Float can't be cast to the desired output type Long");
  t.error([] { auto x = fw::ones({3}); x.add_(fw::ones({2, 3})); }, "[add] output with shape [3] doesn't match the broadcast shape [2, 3]");
}
FW_OP_TEST(sub) {
  t.run = [](const FixCase& c) {
    if (c.in.size() == 1) return V{fw::sub(c.in[0], scalar(c.args[0]), scalar(c.args[1]))};
    return V{fw::sub(c.in[0], c.in[1], scalar(c.args[0]))};
  };
  t.error([] { fw::sub(fw::ones({2}, fw::kBool), fw::ones({2}, fw::kBool)); }, "[sub] Subtraction, the `-` operator, with two bool tensors");
}
FW_OP_TEST(div) {
  t.run = [](const FixCase& c) {
    if (c.in.size() == 1) return V{fw::div(c.in[0], scalar(c.args[0]))};
    return V{fw::div(c.in[0], c.in[1])};
  };
  t.error([] { fw::div(fw::ones({2}), fw::ones({2}), std::string("round")); }, "[div] expected rounding_mode to be one of None, 'trunc', or 'floor'");
}
#define ROUNDING_ENTRY(op, mode)                                                                         \
  FW_OP_TEST(op) {                                                                                      \
    t.run = [](const FixCase& c) {                                                                      \
      if (c.in.size() == 1) return V{fw::div(c.in[0], scalar(c.args[0]), std::string(mode))};           \
      return V{fw::div(c.in[0], c.in[1], std::string(mode))};                                           \
    };                                                                                                  \
    t.error([] { fw::div(fw::arange(3), fw::zeros({3}, fw::kLong), std::string(mode)); }, "[" #op "] ZeroDivisionError"); \
  }
ROUNDING_ENTRY(div_trunc, "trunc")
ROUNDING_ENTRY(div_floor, "floor")

FW_OP_TEST(where) {
  t.run = [](const FixCase& c) { return V{fw::where(c.in[0], c.in[1], c.in[2])}; };
  t.error([] { fw::where(fw::ones({2}), fw::ones({2}), fw::ones({2})); }, "[where] expected condition to be a boolean tensor, but got a tensor with dtype Float");
}
FW_OP_TEST(lerp) {
  t.run = [](const FixCase& c) {
    if (c.in.size() == 2) return V{fw::lerp(c.in[0], c.in[1], scalar(c.args[0]))};
    return V{fw::lerp(c.in[0], c.in[1], c.in[2])};
  };
  t.error([] { fw::lerp(fw::arange(3), fw::arange(3), 0.5); }, "[lerp] expected floating point inputs");
}
FW_OP_TEST(clamp_tensor) {
  t.run = [](const FixCase& c) { return V{fw::clamp(c.in[0], std::optional<Tensor>(c.in[1]), std::optional<Tensor>(c.in[2]))}; };
  t.error([] { fw::clamp(fw::ones({3}), std::optional<Tensor>(fw::ones({2})), std::optional<Tensor>(fw::ones({3}))); },
          "[clamp_tensor] The size of tensor a (3) must match the size of tensor b (2)");
}
FW_OP_TEST(addcmul) {
  t.run = [](const FixCase& c) { return V{fw::addcmul(c.in[0], c.in[1], c.in[2], c.args[0].f)}; };
  t.error([] { fw::addcmul(fw::ones({3}), fw::ones({2}), fw::ones({3})); }, "[addcmul] The size of tensor a (3) must match");
}
FW_OP_TEST(addcdiv) {
  t.run = [](const FixCase& c) { return V{fw::addcdiv(c.in[0], c.in[1], c.in[2], c.args[0].f)}; };
  t.error([] { fw::addcdiv(fw::ones({3}, fw::kLong), fw::ones({3}, fw::kLong), fw::ones({3}, fw::kLong)); }, "[addcdiv] expected floating point inputs");
}
FW_OP_TEST(complex) {
  t.run = [](const FixCase& c) { return V{fw::complex(c.in[0], c.in[1])}; };
  t.error([] { fw::complex(fw::ones({2}, fw::kDouble), fw::ones({2}, fw::kFloat)); },
          "[complex] Expected object of scalar type Double but got scalar type Float for second argument");
  t.error([] { fw::complex(fw::ones({2}, fw::kHalf), fw::ones({2}, fw::kHalf)); },
          "[complex] Expected both inputs to be Float or Double tensors but got Half and Half");
}
FW_OP_TEST(polar) {
  t.run = [](const FixCase& c) { return V{fw::polar(c.in[0], c.in[1])}; };
  t.error([] { fw::polar(fw::ones({2}, fw::kLong), fw::ones({2})); },
          "[polar] Expected both inputs to be Float or Double tensors but got Long and Float");
  t.error([] { fw::polar(fw::ones({2}), fw::ones({2}, fw::kDouble)); },
          "[polar] Expected object of scalar type Float but got scalar type Double for second argument");
}

// ---- creation
FW_OP_TEST(copy) {
  t.run = [](const FixCase& c) {
    if (c.args[0].is_none()) return V{c.in[0].clone()};
    return V{c.in[0].to(c.args[0].dtype)};
  };
  t.error([] { fw::ones({3}).copy_(fw::ones({2})); }, "[copy_] The size of tensor a (3) must match the size of tensor b (2)");
}
FW_OP_TEST(fill) {
  t.run = [](const FixCase& c) { return V{fw::full(c.args[0].ints, scalar(c.args[1]), c.args[2].dtype)}; };
  t.error([] { fw::full({2, -1}, 1.0); }, "Trying to create tensor with negative dimension -1");
}
FW_OP_TEST(arange) {
  t.run = [](const FixCase& c) {
    fw::TensorOptions o;
    if (!c.args[3].is_none()) o = o.dtype(c.args[3].dtype);
    return V{fw::arange(scalar(c.args[0]), scalar(c.args[1]), scalar(c.args[2]), o)};
  };
  t.error([] { fw::arange(0, 5, 0); }, "[arange] step must be nonzero");
  t.error([] { fw::arange(5, 0, 1); }, "[arange] upper bound and larger bound inconsistent with step sign");
}
FW_OP_TEST(linspace) {
  t.run = [](const FixCase& c) { return V{fw::linspace(c.args[0].f, c.args[1].f, c.args[2].i)}; };
  t.error([] { fw::linspace(0, 1, -2); }, "[linspace] number of steps must be non-negative");
}
FW_OP_TEST(logspace) {
  t.run = [](const FixCase& c) { return V{fw::logspace(c.args[0].f, c.args[1].f, c.args[2].i, c.args[3].f)}; };
  t.error([] { fw::logspace(0, 1, -1); }, "[logspace] number of steps must be non-negative");
}
FW_OP_TEST(eye) {
  t.run = [](const FixCase& c) { return V{fw::eye(c.args[0].i, c.args[1].i)}; };
  t.error([] { fw::eye(-1); }, "[eye] n and m must be non-negative");
}
FW_OP_TEST(uniform) {
  t.run = [](const FixCase& c) { return V{fw::empty(c.args[0].ints).uniform_(c.args[1].f, c.args[2].f)}; };
  t.error([] { fw::empty({2}).uniform_(1, 0); }, "[uniform_] expects to return a [from, to) range");
  t.error([] { fw::rand({2}, fw::kLong); }, "[rand] expected a floating point dtype");
}
FW_OP_TEST(normal) {
  t.run = [](const FixCase& c) { return V{fw::normal(c.args[1].f, c.args[2].f, c.args[0].ints)}; };
  t.error([] { fw::normal(0, -1, {2}); }, "[normal] expects std >= 0.0");
}
FW_OP_TEST(randint) {
  t.run = [](const FixCase& c) { return V{fw::randint(c.args[1].i, c.args[2].i, c.args[0].ints)}; };
  t.error([] { fw::randint(5, 5, {2}); }, "[randint] random_ expects 'from' to be less than 'to'");
}
FW_OP_TEST(bernoulli) {
  t.run = [](const FixCase& c) {
    if (c.args.empty()) return V{fw::bernoulli(c.in[0])};
    return V{fw::bernoulli(c.in[0], c.args[0].f)};
  };
  t.error([] { fw::bernoulli(fw::full({2}, 1.5)); }, "[bernoulli] expected all probabilities in [0, 1]");
  t.error([] { fw::bernoulli(fw::ones({2}), 2.0); }, "[bernoulli] expected p in [0, 1]");
}
FW_OP_TEST(randperm) {
  t.run = [](const FixCase& c) { return V{fw::randperm(c.args[0].i)}; };
  t.error([] { fw::randperm(-1); }, "[randperm] n must be non-negative");
}

// ---- views
FW_OP_TEST(view) {
  t.run = [](const FixCase& c) { return V{c.in[0].view(c.args[0].ints)}; };
  t.error([] { fw::ones({4, 6}).view({5, 5}); }, "[view] shape '[5, 5]' is invalid for input of size 24");
  t.error([] { fw::ones({4, 6}).t().view({24}); }, "[view] view size is not compatible with input tensor's size and stride");
}
FW_OP_TEST(permute) {
  t.run = [](const FixCase& c) { return V{c.in[0].permute(c.args[0].ints)}; };
  t.error([] { fw::ones({2, 3}).permute({0, 0}); }, "[permute] repeated dim in permute");
  t.error([] { fw::ones({2, 3}).permute({0}); }, "[permute] number of dims don't match");
}
FW_OP_TEST(expand) {
  t.run = [](const FixCase& c) { return V{c.in[0].expand(c.args[0].ints)}; };
  t.error([] { fw::ones({3}).expand({2, 4}); }, "[expand] The expanded size of the tensor (4) must match the existing size (3) at non-singleton dimension 1");
}
FW_OP_TEST(slice) {
  t.run = [](const FixCase& c) { return V{c.in[0].slice(c.args[0].i, c.args[1].i, c.args[2].i, c.args[3].i)}; };
  t.error([] { fw::ones({3}).slice(0, 0, 3, 0); }, "[slice] slice step must be positive");
  t.error([] { fw::ones({3}).slice(1); }, "[slice] Dimension out of range (expected to be in range of [-1, 0], but got 1)");
}
FW_OP_TEST(select) {
  t.run = [](const FixCase& c) { return V{c.in[0].select(c.args[0].i, c.args[1].i)}; };
  t.error([] { fw::ones({2, 3}).select(0, 2); }, "[select] index 2 is out of bounds for dimension 0 with size 2");
}
FW_OP_TEST(unsqueeze) {
  t.run = [](const FixCase& c) { return V{c.in[0].unsqueeze(c.args[0].i)}; };
  t.error([] { fw::ones({2}).unsqueeze(3); }, "[unsqueeze] Dimension out of range");
}
FW_OP_TEST(squeeze) {
  t.run = [](const FixCase& c) { return V{c.args[0].is_none() ? c.in[0].squeeze() : c.in[0].squeeze(c.args[0].i)}; };
  t.error([] { fw::ones({2}).squeeze(1); }, "[squeeze] Dimension out of range");
}
FW_OP_TEST(as_strided) {
  t.run = [](const FixCase& c) {
    std::optional<int64_t> off;
    if (!c.args[2].is_none()) off = c.args[2].i;
    return V{c.in[0].as_strided(c.args[0].ints, c.args[1].ints, off)};
  };
  t.error([] { fw::ones({4}).as_strided({3}, {2}); }, "[as_strided] setStorage: sizes [3], strides [2]");
}
FW_OP_TEST(view_as_real) {
  t.run = [](const FixCase& c) { return V{fw::view_as_real(c.in[0])}; };
  t.error([] { fw::view_as_real(fw::ones({2})); }, "[view_as_real] is only supported for complex tensors");
}
FW_OP_TEST(view_as_complex) {
  t.run = [](const FixCase& c) { return V{fw::view_as_complex(c.in[0])}; };
  t.error([] { fw::view_as_complex(fw::ones({2, 3})); }, "[view_as_complex] Tensor must have a last dimension of size 2");
  t.error([] { fw::view_as_complex(fw::ones({2, 2}, fw::kLong)); },
          "[view_as_complex] is only supported for float and double tensors, but got a tensor of scalar type: Long");
}
FW_OP_TEST(view_dtype) {
  t.run = [](const FixCase& c) { return V{c.in[0].view(c.args[0].dtype)}; };
  t.error([] { fw::ones({2}).view(fw::kDouble); }, "[view] viewing a tensor of dtype float32 as float64 needs equal element sizes");
}
FW_OP_TEST(cat) {
  t.run = [](const FixCase& c) { return V{fw::cat(c.in, c.args[0].i)}; };
  t.error([] { fw::cat({fw::ones({2, 3}), fw::ones({2, 4})}, 0); }, "[cat] Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1");
  t.error([] { fw::cat(std::vector<Tensor>{}, 0); }, "[cat] expected a non-empty list of Tensors");
}
