// Binary and ternary elementwise ops with broadcasting and PyTorch type promotion.
// A scalar right operand travels in attrs.s0 with flag kScalarRhs (guards see it by value).
#include "core/convert.h"
#include "core/functors.h"
#include "core/loops.h"
#include "core/op.h"
#include "core/ops/composite_util.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

enum class BK {
  Arith,    // result_type; bool allowed
  Sub,      // as Arith; bool - bool rejected
  TrueDiv,  // integers promote to the default float
  IntDiv,   // result_type; integer division by zero rejected
  Pow,      // result_type; negative integer exponents rejected
  Float,    // float only (atan2, hypot, copysign, xlogy)
  MinMax,   // result_type, no complex
  Compare,  // result_type compute, bool out
  Logical,  // bool out
  Bitwise,  // integral/bool only
};

ScalarType float_of(ScalarType t) { return is_integral(t, true) ? get_default_dtype() : t; }

template <BK K>
ScalarType compute_type(const OpCall& c) {
  const Scalar* s = (c.a.flags & kScalarRhs) ? &c.a.s0 : nullptr;
  ScalarType t = result_type(c.in, s);
  const char* op = c.def.name;
  if (K == BK::Sub) {
    FW_CHECK(t != kBool, "[", op, "] Subtraction, the `-` operator, with two bool tensors is not supported. "
             "Use the `^` or `logical_xor()` operator instead.");
  }
  if (K == BK::Arith || K == BK::Sub)
    FW_CHECK(is_complex(t) || !c.a.s1.isComplex(), "[", op,
             "] For non-complex input tensors, argument alpha must not be a complex number.");
  if (K == BK::TrueDiv || K == BK::Float) t = float_of(t);
  if (K == BK::Float || K == BK::MinMax || K == BK::IntDiv)
    FW_CHECK(!is_complex(t), "[", op, "] not implemented for dtype ", dtype_str(t));
  if (K == BK::Bitwise)
    FW_CHECK(is_integral(t, true), "[", op, "] bitwise operations are only supported on integer and bool tensors, got ",
             dtype_str(t));
  return t;
}

template <BK K>
void binary_meta(const OpCall& c, Metas& m) {
  DimVec shape = (c.a.flags & kScalarRhs) ? DimVec(c.in[0].sizes())
                                           : broadcast_shapes(c.in[0].sizes(), c.in[1].sizes(), c.def.name);
  ScalarType t = compute_type<K>(c);
  m.push_back({shape, (K == BK::Compare || K == BK::Logical) ? kBool : t});
}

template <class F> F make_fn(const OpAttrs&) { return F{}; }
template <> fn::Add make_fn(const OpAttrs& a) { return {a.s1.toDouble(), a.s1.toComplexDouble().imag()}; }

// A Scalar operand as a 0-dim tensor of dtype t. A value outside a narrower type converts as
// PyTorch's cast of the wrapped number does, where fill_ raises: an integer wraps (int32 tensor
// + 2^40), a double beyond float's or half's range becomes inf (x_half * 1e10).
Tensor scalar_as(const Scalar& s, ScalarType t) {
  ScalarType wide = t;
  if (s.isIntegral(false) && is_integral(t, false) && t != kLong) {
    int64_t v = s.toLong();
    visit_integral(t, "scalar_as", [&]<class T>() {
      if (v < int64_t(std::numeric_limits<T>::lowest()) || v > int64_t(std::numeric_limits<T>::max())) wide = kLong;
    });
  } else if (s.isFloatingPoint() && (t == kFloat || t == kHalf || t == kBFloat16)) {
    double v = std::abs(s.toDouble());
    double max = t == kHalf       ? double(float(std::numeric_limits<Half>::max()))
                 : t == kBFloat16 ? double(float(std::numeric_limits<BFloat16>::max()))
                                  : double(std::numeric_limits<float>::max());
    if (std::isfinite(v) && v > max) wide = kDouble;
  }
  Tensor r = make_tensor({}, wide);
  r.fill_(s);
  return wide != t ? r.to(t) : r;
}

Tensor rhs_tensor(const OpCall& c, ScalarType ct) {
  if (!(c.a.flags & kScalarRhs)) return cast(c.in[1], ct);
  return scalar_as(c.a.s0, ct);
}

template <class T>
void check_int_operands(const OpCall& c, BK k, const Tensor& b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    Tensor bc = b.contiguous();
    const T* p = bc.data_ptr<T>();
    for (int64_t i = 0; i < bc.numel(); i++) {
      if (k == BK::IntDiv) FW_CHECK(p[i] != 0, "[", c.def.name, "] ZeroDivisionError: integer division by zero");
      // A negative Scalar exponent is an error (PyTorch); a tensor of exponents may hold negative
      // ones (1 -> 1, -1 -> +-1, others -> 0, as the functor computes).
      if constexpr (std::is_signed_v<T>)
        if (k == BK::Pow && (c.a.flags & kScalarRhs))
          FW_CHECK(p[i] >= 0, "[", c.def.name, "] Integers to negative integer powers are not allowed.");
    }
  }
}

// The eager logical kernels evaluate both operands (& and | instead of fn's && and ||): with the
// short circuit GCC 12 kept a branch per element, ~2.5 ns each on random masks; without it the
// loop vectorises. Same results (the operands are plain values).
template <class F>
struct Branchless;
template <>
struct Branchless<fn::LogicalAnd> {
  template <class T> bool operator()(T a, T b) const { return (a != T(0)) & (b != T(0)); }
};
template <>
struct Branchless<fn::LogicalOr> {
  template <class T> bool operator()(T a, T b) const { return (a != T(0)) | (b != T(0)); }
};
template <>
struct Branchless<fn::LogicalXor> : fn::LogicalXor {};

template <class F, BK K>
void binary_kernel(const OpCall& c, Outs& o) {
  ScalarType ct = compute_type<K>(c);
  // float16/bfloat16 compute in float on operands first rounded to the common dtype, as
  // PyTorch's iterator casts them: x_half * 0.1 multiplies by half(0.1), an int tensor or a
  // float32 0-dim operand becomes half too.
  ScalarType low = ct;
  if constexpr (K != BK::Logical && K != BK::Bitwise && K != BK::IntDiv) {
    if (low == kBFloat16) {
      // bfloat16 operands widen element by element inside the loop: no float32 copies of the
      // operands and the result (autocast's activations: relu's backward mask and product).
      Tensor a = cast(c.in[0], low), b = rhs_tensor(c, low);
      Tensor& out = o[0];
      const ScalarType rt = K == BK::Compare ? kBool : kBFloat16;
      Tensor y = out.dtype() == rt ? out : make_tensor(out.sizes(), rt);
      const F f = make_fn<F>(c.a);
      if constexpr (K == BK::Compare)
        binary_loop<bool, BFloat16>(y, a, b, [f](BFloat16 u, BFloat16 v) { return bool(f(float(u), float(v))); });
      else
        binary_loop<BFloat16, BFloat16>(y, a, b, [f](BFloat16 u, BFloat16 v) { return BFloat16(float(f(float(u), float(v)))); });
      if (!y.is_same(out)) out.copy_(y);
      return;
    }
  }
  if (ct == kHalf || ct == kBFloat16) ct = kFloat;
  ScalarType rt = (K == BK::Compare || K == BK::Logical) ? kBool : ct;
  Tensor a = cast(cast(c.in[0], low), ct), b = cast(rhs_tensor(c, low), ct);
  Tensor& out = o[0];
  Tensor y = out.dtype() == rt ? out : make_tensor(out.sizes(), rt);
  F f = make_fn<F>(c.a);
  auto body = [&]<class T>() {
    if constexpr (K == BK::IntDiv || K == BK::Pow) check_int_operands<T>(c, K, b);
    if constexpr (K == BK::Logical) binary_loop<bool, T>(y, a, b, Branchless<F>{});
    else if constexpr (K == BK::Compare) binary_loop<bool, T>(y, a, b, f);
    else binary_loop<T, T>(y, a, b, f);
  };
  if constexpr (K == BK::Float) visit_float(ct, c.def.name, body);
  else if constexpr (K == BK::MinMax || K == BK::IntDiv) visit_real(ct, c.def.name, body);
  else if constexpr (K == BK::Bitwise) visit_integral(ct, c.def.name, body);
  else if constexpr (K == BK::Compare) {
    if constexpr (std::is_same_v<F, fn::Eq> || std::is_same_v<F, fn::Ne>) visit_all(ct, c.def.name, body);
    else visit_real(ct, c.def.name, body);
  } else visit_all(ct, c.def.name, body);
  if (!y.is_same(out)) out.copy_(y);
}

template <class F, BK K>
void def_binary(OpDef& d, const char* functor, bool differentiable = true) {
  d.meta = binary_meta<K>;
  d.cpu = binary_kernel<F, K>;
  d.functor = functor;
  d.differentiable = differentiable && K != BK::Compare && K != BK::Logical && K != BK::Bitwise;
}

// ---- ternary ops: inputs (x, y, z); a missing scalar operand is given by flags.
// where(cond, a, b): flag 1 -> a is attrs.s0, flag 2 -> b is attrs.s1.
void where_meta(const OpCall& c, Metas& m) {
  const Tensor& cond = c.in[0];
  FW_CHECK(cond.dtype() == kBool, "[where] expected condition to be a boolean tensor, but got a tensor with dtype ",
           dtype_name(cond.dtype()));
  DimVec shape(cond.sizes());
  std::vector<Tensor> ts;
  for (size_t i = 1; i < c.in.size(); i++) {
    shape = broadcast_shapes(shape, c.in[i].sizes(), "where");
    ts.push_back(c.in[i]);
  }
  ScalarType t;
  if (ts.empty()) t = promote_types(c.a.s0.type(), c.a.s1.type());
  else if ((c.a.flags & 3) == 0) t = result_type(ts);
  else t = result_type(ts, (c.a.flags & 1) ? &c.a.s0 : &c.a.s1);
  m.push_back({shape, t});
}

Tensor operand(const OpCall& c, size_t& next, bool is_scalar, const Scalar& s, ScalarType ct) {
  if (!is_scalar) return cast(c.in[next++], ct);
  Tensor t = make_tensor({}, ct);  // where's Scalar must fit the result type (PyTorch raises)
  t.fill_(s);
  return t;
}

void where_kernel(const OpCall& c, Outs& o) {
  ScalarType ct = o[0].dtype();
  size_t next = 1;
  Tensor a = operand(c, next, c.a.flags & 1, c.a.s0, ct);
  Tensor b = operand(c, next, c.a.flags & 2, c.a.s1, ct);
  visit_storage(ct, "where", [&]<class T>() {
    ternary_loop<T, bool, T, T>(o[0], c.in[0], a, b, [](bool k, T x, T y) { return k ? x : y; });
  });
}

// lerp(a, b, w) / addcmul / addcdiv / clamp_tensor: all float-or-common with three tensors.
template <class F, bool FloatOnly>
void ternary_meta(const OpCall& c, Metas& m) {
  DimVec shape(c.in[0].sizes());
  for (size_t i = 1; i < c.in.size(); i++) shape = broadcast_shapes(shape, c.in[i].sizes(), c.def.name);
  const Scalar* s = c.in.size() < 3 ? &c.a.s0 : nullptr;
  ScalarType t = result_type(c.in, s);
  if (FloatOnly)
    for (auto& x : c.in)
      FW_CHECK(is_floating_point(x.dtype()) || is_complex(x.dtype()), "[", c.def.name, "] expected floating point inputs, got ",
               dtype_str(x.dtype()));
  if (FloatOnly) FW_CHECK(is_floating_point(t) || is_complex(t), "[", c.def.name, "] expected floating point inputs, got ",
                          dtype_str(t));
  FW_CHECK(!is_complex(t), "[", c.def.name, "] not implemented for dtype ", dtype_str(t));
  m.push_back({shape, t});
}

template <class F, bool FloatOnly>
void ternary_kernel(const OpCall& c, Outs& o) {
  ScalarType ct = o[0].dtype(), low = ct;
  if (ct == kHalf || ct == kBFloat16) ct = kFloat;  // operands rounded to `low` first (binary_kernel)
  size_t next = 0;
  Tensor x = cast(operand(c, next, false, c.a.s0, low), ct);
  Tensor y = cast(operand(c, next, false, c.a.s0, low), ct);
  Tensor z = cast(operand(c, next, c.in.size() < 3, c.a.s0, low), ct);
  Tensor r = o[0].dtype() == ct ? o[0] : make_tensor(o[0].sizes(), ct);
  F f;
  if constexpr (std::is_same_v<F, fn::Addcmul> || std::is_same_v<F, fn::Addcdiv>) f.value = c.a.f0;
  auto body = [&]<class T>() { ternary_loop<T, T, T, T>(r, x, y, z, f); };
  if constexpr (FloatOnly) visit_float(ct, c.def.name, body);
  else visit_real(ct, c.def.name, body);
  if (!r.is_same(o[0])) o[0].copy_(r);
}

// complex(real, imag) / polar(abs, angle): two float32 or two float64 tensors -> complex64 or
// complex128 (PyTorch; fw has no complex32, so float16 is rejected).
void complex_meta(const OpCall& c, Metas& m) {
  ScalarType a = c.in[0].dtype(), b = c.in[1].dtype();
  FW_CHECK((a == kFloat || a == kDouble) && (b == kFloat || b == kDouble), "[", c.def.name,
           "] Expected both inputs to be Float or Double tensors but got ", dtype_name(a), " and ", dtype_name(b));
  FW_CHECK(a == b, "[", c.def.name, "] Expected object of scalar type ", dtype_name(a), " but got scalar type ",
           dtype_name(b), " for second argument");
  m.push_back({broadcast_shapes(c.in[0].sizes(), c.in[1].sizes(), c.def.name), to_complex_type(a)});
}
template <bool Polar>
void complex_kernel(const OpCall& c, Outs& o) {
  auto L = make_loop<3>({&o[0], &c.in[0], &c.in[1]}, true);
  visit_float(c.in[0].dtype(), c.def.name, [&]<class R>() {
    run_loop<3>(L, [](char** p, const int64_t* s, int64_t n) {
      for (int64_t i = 0; i < n; i++) {
        R x = *reinterpret_cast<const R*>(p[1] + i * s[1]), y = *reinterpret_cast<const R*>(p[2] + i * s[2]);
        *reinterpret_cast<std::complex<R>*>(p[0] + i * s[0]) = Polar ? std::polar(x, y) : std::complex<R>(x, y);
      }
    });
  });
}

OpAttrs scalar_rhs(const Scalar& b) {
  OpAttrs a;
  a.s0 = b;
  a.flags = kScalarRhs;
  return a;
}
OpAttrs alpha_attrs(const Scalar& alpha) {
  OpAttrs a;
  a.s1 = alpha;
  return a;
}

// ---- vjp helpers. A scalar right operand appears as a 0-dim tensor b and gets no gradient.
// Complex inputs follow PyTorch's convention (grad = dL/dRe + i dL/dIm): a vjp multiplies by
// the conjugate of the derivative; cj is free for real tensors and scalars.
Tensor cj(const Tensor& t) { return t.is_complex() ? fw::conj(t) : t; }
Scalar cj(const Scalar& s) { return s.isComplex() ? Scalar(std::conj(s.toComplexDouble())) : s; }
// A scalar right operand as a 0-dim tensor; a complex one with a real tensor keeps its
// imaginary part (the complex dtype result_type gives the pair).
Tensor scalar_operand(const Scalar& s, ScalarType t) {
  if (s.isComplex() && !is_complex(t)) t = t == kDouble ? kComplexDouble : kComplexFloat;
  return fw::scalar_tensor(s, t);
}
#define VJP_BINARY(ga_expr, gb_expr)                                                    \
  do {                                                                                  \
    const Tensor& gy = g[0];                                                            \
    const Tensor& a = c.in[0];                                                          \
    Tensor b = c.in.size() > 1 ? c.in[1] : scalar_operand(c.a.s0, a.dtype());            \
    if (c.needs[0]) r[0] = sum_to((ga_expr), a.sizes());                                 \
    if (c.in.size() > 1 && c.needs[1]) r[1] = sum_to((gb_expr), b.sizes());              \
  } while (0)

Tensor pow_grad_base(const Tensor& gy, const Tensor& a, const Tensor& b) {
  return fw::where(b == 0, fw::zeros_like(gy), gy * b * fw::pow(a, b - 1));
}
Tensor pow_grad_exp(const Tensor& gy, const Tensor& a, const Tensor& b) {
  Tensor d = gy * fw::pow(a, b) * fw::log(a);
  return fw::where((a == 0) & (b >= 0), fw::zeros_like(d), d);
}
// Gradient of max(x, y) (max_side) or min(x, y) for x: all of it where x wins, half on ties.
Tensor minmax_grad(const Tensor& gy, const Tensor& x, const Tensor& y, bool max_side) {
  Tensor wins = max_side ? (x > y) : (x < y);
  Tensor ties = x == y;
  return gy * wins + gy * ties * 0.5;
}

// fmax/fmin (PyTorch's rule): self takes the gradient where it wins or ties, or where other is
// NaN (the result is self); other takes the rest.
Tensor fminmax_grad_self(const Tensor& gy, const Tensor& a, const Tensor& b, bool max_side) {
  return gy * ((max_side ? (a >= b) : (a <= b)) | fw::isnan(b));
}
Tensor fminmax_grad_other(const Tensor& gy, const Tensor& a, const Tensor& b, bool max_side) {
  return gy * ((max_side ? (a >= b) : (a <= b)) | fw::isnan(b)).logical_not();
}

}  // namespace

FW_DEFINE_OP(add) {
  def_binary<fn::Add, BK::Arith>(d, "Add");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(gy, gy * cj(c.a.s1)); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(sub) {
  def_binary<fn::Add, BK::Sub>(d, "Add");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(gy, gy * cj(c.a.s1)); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(mul) {
  def_binary<fn::Mul, BK::Arith>(d, "Mul");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(gy * cj(b), gy * cj(a)); };
  d.vjp_reads_in_for[0] = 0b10;
  d.vjp_reads_in_for[1] = 0b01;
}
FW_DEFINE_OP(div) {
  def_binary<fn::Div, BK::TrueDiv>(d, "Div");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(gy / cj(b), -gy * cj(a / (b * b))); };
  d.vjp_reads_in_for[0] = 0b10;
}
FW_DEFINE_OP(div_trunc) { def_binary<fn::DivTrunc, BK::IntDiv>(d, "DivTrunc", false); }
FW_DEFINE_OP(div_floor) { def_binary<fn::DivFloor, BK::IntDiv>(d, "DivFloor", false); }
FW_DEFINE_OP(remainder) {
  def_binary<fn::Remainder, BK::IntDiv>(d, "Remainder");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(gy, -gy * fw::div(a, b, std::string("floor"))); };
}
FW_DEFINE_OP(fmod) {
  def_binary<fn::Fmod, BK::IntDiv>(d, "Fmod");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(gy, -gy * fw::div(a, b, std::string("trunc"))); };
}
FW_DEFINE_OP(pow) {
  def_binary<fn::Pow, BK::Pow>(d, "Pow");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(pow_grad_base(gy, a, b), pow_grad_exp(gy, a, b)); };
}
FW_DEFINE_OP(atan2) {
  def_binary<fn::Atan2, BK::Float>(d, "Atan2");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(gy * b / (a * a + b * b), -gy * a / (a * a + b * b)); };
}
FW_DEFINE_OP(maximum) {
  def_binary<fn::Maximum, BK::MinMax>(d, "Maximum");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(minmax_grad(gy, a, b, true), minmax_grad(gy, b, a, true)); };
}
FW_DEFINE_OP(minimum) {
  def_binary<fn::Minimum, BK::MinMax>(d, "Minimum");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(minmax_grad(gy, a, b, false), minmax_grad(gy, b, a, false)); };
}
FW_DEFINE_OP(fmax) {
  def_binary<fn::Fmax, BK::MinMax>(d, "Fmax");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(fminmax_grad_self(gy, a, b, true), fminmax_grad_other(gy, a, b, true)); };
}
FW_DEFINE_OP(fmin) {
  def_binary<fn::Fmin, BK::MinMax>(d, "Fmin");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(fminmax_grad_self(gy, a, b, false), fminmax_grad_other(gy, a, b, false)); };
}
FW_DEFINE_OP(hypot) {
  def_binary<fn::Hypot, BK::Float>(d, "Hypot");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(gy * a / fw::hypot(a, b), gy * b / fw::hypot(a, b)); };
}
FW_DEFINE_OP(copysign) {
  def_binary<fn::Copysign, BK::Float>(d, "Copysign");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(gy * fw::where(a == 0, fw::zeros_like(a), fw::sign(a) * fw::where(fw::signbit(b), -1.0, 1.0)), fw::zeros_like(b)); };
}
FW_DEFINE_OP(xlogy) {
  def_binary<fn::Xlogy, BK::Float>(d, "Xlogy");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_BINARY(gy * fw::where(a == 0, fw::zeros_like(b), fw::log(b)), gy * a / b); };
}
FW_DEFINE_OP(eq) { def_binary<fn::Eq, BK::Compare>(d, "Eq"); }
FW_DEFINE_OP(ne) { def_binary<fn::Ne, BK::Compare>(d, "Ne"); }
FW_DEFINE_OP(lt) { def_binary<fn::Lt, BK::Compare>(d, "Lt"); }
FW_DEFINE_OP(le) { def_binary<fn::Le, BK::Compare>(d, "Le"); }
FW_DEFINE_OP(gt) { def_binary<fn::Gt, BK::Compare>(d, "Gt"); }
FW_DEFINE_OP(ge) { def_binary<fn::Ge, BK::Compare>(d, "Ge"); }
FW_DEFINE_OP(logical_and) { def_binary<fn::LogicalAnd, BK::Logical>(d, "LogicalAnd"); }
FW_DEFINE_OP(logical_or) { def_binary<fn::LogicalOr, BK::Logical>(d, "LogicalOr"); }
FW_DEFINE_OP(logical_xor) { def_binary<fn::LogicalXor, BK::Logical>(d, "LogicalXor"); }
FW_DEFINE_OP(bitwise_and) { def_binary<fn::BitwiseAnd, BK::Bitwise>(d, "BitwiseAnd"); }
FW_DEFINE_OP(bitwise_or) { def_binary<fn::BitwiseOr, BK::Bitwise>(d, "BitwiseOr"); }
FW_DEFINE_OP(bitwise_xor) { def_binary<fn::BitwiseXor, BK::Bitwise>(d, "BitwiseXor"); }
FW_DEFINE_OP(where) {
  d.meta = where_meta;
  d.cpu = where_kernel;
  d.functor = "Where";
  // The gradient reads the condition and only the shapes of the values, so writing into a value
  // afterwards leaves it valid: masked_fill_ is where(mask, v, self) copied into self, and a
  // version check on self made every backward through it fail.
  d.vjp_ignores_in = 0b110;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    const Tensor& cond = c.in[0];
    Tensor zero = fw::zeros_like(g[0]);
    size_t next = 1;
    if (!(c.a.flags & 1)) {
      if (c.needs[next]) r[next] = sum_to(fw::where(cond, g[0], zero), c.in[next].sizes());
      next++;
    }
    if (!(c.a.flags & 2) && c.needs[next]) r[next] = sum_to(fw::where(cond, zero, g[0]), c.in[next].sizes());
  };
}
FW_DEFINE_OP(lerp) {
  d.meta = ternary_meta<fn::Lerp, true>;
  d.cpu = ternary_kernel<fn::Lerp, true>;
  d.functor = "Lerp";
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    const Tensor &a = c.in[0], &b = c.in[1];
    Tensor w = c.in.size() > 2 ? c.in[2] : fw::scalar_tensor(c.a.s0, a.dtype());
    if (c.needs[0]) r[0] = sum_to(g[0] * (1 - w), a.sizes());
    if (c.needs[1]) r[1] = sum_to(g[0] * w, b.sizes());
    if (c.in.size() > 2 && c.needs[2]) r[2] = sum_to(g[0] * (b - a), w.sizes());
  };
}
FW_DEFINE_OP(clamp_tensor) {
  d.meta = ternary_meta<fn::ClampTensor, false>;
  d.cpu = ternary_kernel<fn::ClampTensor, false>;
  d.functor = "ClampTensor";
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    const Tensor &x = c.in[0], &lo = c.in[1], &hi = c.in[2];
    if (c.needs[0]) r[0] = sum_to(g[0] * ((x >= lo) & (x <= hi)), x.sizes());
    if (c.needs[1]) r[1] = sum_to(g[0] * ((x < lo) & (lo <= hi)), lo.sizes());
    if (c.needs[2]) r[2] = sum_to(g[0] * ((x > hi) | (lo > hi)), hi.sizes());
  };
}
FW_DEFINE_OP(addcmul) {
  d.meta = ternary_meta<fn::Addcmul, false>;
  d.cpu = ternary_kernel<fn::Addcmul, false>;
  d.functor = "Addcmul";
  d.vjp_ignores_in = 1;  // self's gradient is g
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    const Tensor &a = c.in[1], &b = c.in[2];
    if (c.needs[0]) r[0] = sum_to(g[0], c.in[0].sizes());
    if (c.needs[1]) r[1] = sum_to(g[0] * b * c.a.f0, a.sizes());
    if (c.needs[2]) r[2] = sum_to(g[0] * a * c.a.f0, b.sizes());
  };
}
FW_DEFINE_OP(addcdiv) {
  d.meta = ternary_meta<fn::Addcdiv, true>;
  d.cpu = ternary_kernel<fn::Addcdiv, true>;
  d.functor = "Addcdiv";
  d.vjp_ignores_in = 1;  // self's gradient is g
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    const Tensor &a = c.in[1], &b = c.in[2];
    if (c.needs[0]) r[0] = sum_to(g[0], c.in[0].sizes());
    if (c.needs[1]) r[1] = sum_to(g[0] / b * c.a.f0, a.sizes());
    if (c.needs[2]) r[2] = sum_to(-g[0] * a / (b * b) * c.a.f0, b.sizes());
  };
}
// Complex gradients follow PyTorch's convention: G = dL/dRe + i dL/dIm.
FW_DEFINE_OP(complex) {
  d.meta = complex_meta;
  d.cpu = complex_kernel<false>;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    if (c.needs[0]) r[0] = sum_to(fw::real(g[0]).contiguous(), c.in[0].sizes());
    if (c.needs[1]) r[1] = sum_to(fw::imag(g[0]).contiguous(), c.in[1].sizes());
  };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(polar) {
  d.meta = complex_meta;
  d.cpu = complex_kernel<true>;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    const Tensor &a = c.in[0], &t = c.in[1];
    Tensor gr = fw::real(g[0]), gi = fw::imag(g[0]), co = fw::cos(t), si = fw::sin(t);
    if (c.needs[0]) r[0] = sum_to(gr * co + gi * si, a.sizes());
    if (c.needs[1]) r[1] = sum_to((gi * co - gr * si) * a, t.sizes());
  };
}

// ---- public functions
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) { return dispatch1(OpId::add, {a, b}, alpha_attrs(alpha)); }
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  OpAttrs at = scalar_rhs(b);
  at.s1 = alpha;
  return dispatch1(OpId::add, {a}, at);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) { return dispatch1(OpId::sub, {a, b}, alpha_attrs(-alpha)); }
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  OpAttrs at = scalar_rhs(b);
  at.s1 = -alpha;
  return dispatch1(OpId::sub, {a}, at);
}
Tensor rsub(const Tensor& a, const Tensor& b, const Scalar& alpha) { return sub(b, a, alpha); }
Tensor rsub(const Tensor& a, const Scalar& b, const Scalar& alpha) { return sub(scalar_tensor(b, a.dtype()).expand_as(a).contiguous(), a, alpha); }
Tensor mul(const Tensor& a, const Tensor& b) { return dispatch1(OpId::mul, {a, b}, OpAttrs()); }
Tensor mul(const Tensor& a, const Scalar& b) { return dispatch1(OpId::mul, {a}, scalar_rhs(b)); }
Tensor div(const Tensor& a, const Tensor& b) { return dispatch1(OpId::div, {a, b}, OpAttrs()); }
Tensor div(const Tensor& a, const Scalar& b) { return dispatch1(OpId::div, {a}, scalar_rhs(b)); }
static OpId rounding_op(const std::optional<std::string>& mode) {
  if (!mode) return OpId::div;
  FW_CHECK(*mode == "trunc" || *mode == "floor", "[div] expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
           *mode, "'");
  return *mode == "trunc" ? OpId::div_trunc : OpId::div_floor;
}
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string> mode) { return dispatch1(rounding_op(mode), {a, b}, OpAttrs()); }
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string> mode) { return dispatch1(rounding_op(mode), {a}, scalar_rhs(b)); }
Tensor true_divide(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor floor_divide(const Tensor& a, const Tensor& b) { return div(a, b, "floor"); }
Tensor floor_divide(const Tensor& a, const Scalar& b) { return div(a, b, "floor"); }

#define FW_BINARY_PUBLIC(name)                                                                           \
  Tensor name(const Tensor& a, const Tensor& b) { return dispatch1(OpId::name, {a, b}, OpAttrs()); }     \
  Tensor name(const Tensor& a, const Scalar& b) { return dispatch1(OpId::name, {a}, scalar_rhs(b)); }    \
  Tensor Tensor::name(const Tensor& o) const { return fw::name(*this, o); }                             \
  Tensor Tensor::name(const Scalar& o) const { return fw::name(*this, o); }
FW_BINARY_PUBLIC(remainder) FW_BINARY_PUBLIC(fmod) FW_BINARY_PUBLIC(eq) FW_BINARY_PUBLIC(ne)
FW_BINARY_PUBLIC(lt) FW_BINARY_PUBLIC(le) FW_BINARY_PUBLIC(gt) FW_BINARY_PUBLIC(ge)
#undef FW_BINARY_PUBLIC
Tensor pow(const Tensor& a, const Tensor& b) { return dispatch1(OpId::pow, {a, b}, OpAttrs()); }
Tensor pow(const Tensor& a, const Scalar& b) {
  // x^2 of a real float tensor is x*x exactly (pow is correctly rounded there too), at the cost of
  // a multiply instead of a libm call; the gradient 2x * g is the same either way.
  if (is_floating_point(a.dtype()) && !b.isComplex() && b.toDouble() == 2.0) return dispatch1(OpId::mul, {a, a}, OpAttrs());
  return dispatch1(OpId::pow, {a}, scalar_rhs(b));
}
Tensor pow(const Scalar& a, const Tensor& b) {
  return pow(wrapped_scalar(a, b), b);
}
Tensor remainder(const Scalar& a, const Tensor& b) { return remainder(wrapped_scalar(a, b), b); }
Tensor Tensor::pow(const Tensor& e) const { return fw::pow(*this, e); }
Tensor Tensor::pow(const Scalar& e) const { return fw::pow(*this, e); }
Tensor& Tensor::pow_(const Scalar& e) const {
  dispatch_into(OpId::pow, {*this}, scalar_rhs(e), *this);
  return mut_self();
}

#define FW_BINARY_TENSOR_ONLY(name) \
  Tensor name(const Tensor& a, const Tensor& b) { return dispatch1(OpId::name, {a, b}, OpAttrs()); }
FW_BINARY_TENSOR_ONLY(atan2) FW_BINARY_TENSOR_ONLY(maximum) FW_BINARY_TENSOR_ONLY(minimum)
FW_BINARY_TENSOR_ONLY(fmax) FW_BINARY_TENSOR_ONLY(fmin) FW_BINARY_TENSOR_ONLY(hypot)
FW_BINARY_TENSOR_ONLY(copysign) FW_BINARY_TENSOR_ONLY(xlogy) FW_BINARY_TENSOR_ONLY(logical_and)
FW_BINARY_TENSOR_ONLY(logical_or) FW_BINARY_TENSOR_ONLY(logical_xor) FW_BINARY_TENSOR_ONLY(bitwise_and)
FW_BINARY_TENSOR_ONLY(bitwise_or) FW_BINARY_TENSOR_ONLY(bitwise_xor) FW_BINARY_TENSOR_ONLY(complex)
FW_BINARY_TENSOR_ONLY(polar)
#undef FW_BINARY_TENSOR_ONLY
Tensor Tensor::atan2(const Tensor& o) const { return fw::atan2(*this, o); }
Tensor Tensor::maximum(const Tensor& o) const { return fw::maximum(*this, o); }
Tensor Tensor::minimum(const Tensor& o) const { return fw::minimum(*this, o); }
Tensor Tensor::logical_and(const Tensor& o) const { return fw::logical_and(*this, o); }
Tensor Tensor::logical_or(const Tensor& o) const { return fw::logical_or(*this, o); }
Tensor Tensor::logical_xor(const Tensor& o) const { return fw::logical_xor(*this, o); }
Tensor Tensor::bitwise_and(const Tensor& o) const { return fw::bitwise_and(*this, o); }
Tensor Tensor::bitwise_or(const Tensor& o) const { return fw::bitwise_or(*this, o); }
Tensor Tensor::bitwise_xor(const Tensor& o) const { return fw::bitwise_xor(*this, o); }

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return fw::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const { return fw::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return fw::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return fw::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return fw::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return fw::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return fw::div(*this, o); }
Tensor Tensor::div(const Scalar& o) const { return fw::div(*this, o); }
Tensor Tensor::div(const Tensor& o, std::optional<std::string> mode) const { return fw::div(*this, o, mode); }
Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) const {
  dispatch_into(OpId::add, {*this, o}, alpha_attrs(alpha), *this);
  return mut_self();
}
Tensor& Tensor::add_(const Scalar& o, const Scalar& alpha) const {
  OpAttrs at = scalar_rhs(o);
  at.s1 = alpha;
  dispatch_into(OpId::add, {*this}, at, *this);
  return mut_self();
}
Tensor& Tensor::sub_(const Tensor& o, const Scalar& alpha) const {
  dispatch_into(OpId::sub, {*this, o}, alpha_attrs(-alpha), *this);
  return mut_self();
}
Tensor& Tensor::sub_(const Scalar& o, const Scalar& alpha) const {
  OpAttrs at = scalar_rhs(o);
  at.s1 = -alpha;
  dispatch_into(OpId::sub, {*this}, at, *this);
  return mut_self();
}
Tensor& Tensor::mul_(const Tensor& o) const {
  dispatch_into(OpId::mul, {*this, o}, OpAttrs(), *this);
  return mut_self();
}
Tensor& Tensor::mul_(const Scalar& o) const {
  dispatch_into(OpId::mul, {*this}, scalar_rhs(o), *this);
  return mut_self();
}
Tensor& Tensor::div_(const Tensor& o) const {
  dispatch_into(OpId::div, {*this, o}, OpAttrs(), *this);
  return mut_self();
}
Tensor& Tensor::div_(const Scalar& o) const {
  dispatch_into(OpId::div, {*this}, scalar_rhs(o), *this);
  return mut_self();
}

namespace {
// PyTorch 1.13 still takes uint8 masks and conditions (deprecated): nonzero is true.
Tensor bool_mask(const Tensor& m) { return m.defined() && m.dtype() == kByte ? m.to(kBool) : m; }
}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  return dispatch1(OpId::where, {bool_mask(cond), a, b}, OpAttrs());
}
Tensor where(const Tensor& cond, const Scalar& a, const Tensor& b) {
  OpAttrs at;
  at.s0 = a;
  at.flags = 1;
  return dispatch1(OpId::where, {bool_mask(cond), b}, at);
}
Tensor where(const Tensor& cond, const Tensor& a, const Scalar& b) {
  OpAttrs at;
  at.s1 = b;
  at.flags = 2;
  return dispatch1(OpId::where, {bool_mask(cond), a}, at);
}
Tensor where(const Tensor& cond, const Scalar& a, const Scalar& b) {
  OpAttrs at;
  at.s0 = a;
  at.s1 = b;
  at.flags = 3;
  return dispatch1(OpId::where, {bool_mask(cond)}, at);
}
Tensor Tensor::where(const Tensor& cond, const Tensor& other) const { return fw::where(cond, *this, other); }
Tensor masked_fill(const Tensor& t, const Tensor& mask0, const Scalar& v) {
  Tensor mask = bool_mask(mask0);
  FW_CHECK(mask.dtype() == kBool, "[masked_fill] only supports boolean masks, but got mask with dtype ", dtype_str(mask.dtype()));
  Tensor r = where(mask, v, t);
  if (r.dtype() != t.dtype()) r = r.to(t.dtype());
  FW_CHECK(r.sizes().equals(t.sizes()), "[masked_fill] mask of shape ", mask.sizes(), " does not broadcast to ", t.sizes());
  return r;
}
Tensor masked_fill(const Tensor& t, const Tensor& mask0, const Tensor& v) {
  Tensor mask = bool_mask(mask0);
  FW_CHECK(v.dim() == 0, "[masked_fill] only supports a 0-dimensional value tensor, but got tensor with ", v.dim(), " dimension(s).");
  // A value that requires grad gets the gradient of the positions it fills.
  if (v.requires_grad() && is_grad_enabled() && (t.is_floating_point() || t.is_complex())) {
    FW_CHECK(mask.dtype() == kBool, "[masked_fill] expected a bool mask, got ", dtype_str(mask.dtype()));
    return fw::where(mask, v.to(t.dtype()), t);
  }
  return masked_fill(t, mask, v.item());
}
Tensor Tensor::masked_fill(const Tensor& mask, const Scalar& v) const { return fw::masked_fill(*this, mask, v); }
Tensor Tensor::masked_fill(const Tensor& mask, const Tensor& v) const { return fw::masked_fill(*this, mask, v); }
Tensor& Tensor::masked_fill_(const Tensor& mask, const Scalar& v) const { return copy_(fw::masked_fill(*this, mask, v)); }
Tensor& Tensor::masked_fill_(const Tensor& mask, const Tensor& v) const { return copy_(fw::masked_fill(*this, mask, v)); }

Tensor lerp(const Tensor& a, const Tensor& b, const Scalar& w) {
  OpAttrs at;
  at.s0 = w;
  return dispatch1(OpId::lerp, {a, b}, at);
}
Tensor lerp(const Tensor& a, const Tensor& b, const Tensor& w) { return dispatch1(OpId::lerp, {a, b, w}, OpAttrs()); }
Tensor Tensor::lerp(const Tensor& end, const Scalar& w) const { return fw::lerp(*this, end, w); }
Tensor Tensor::lerp(const Tensor& end, const Tensor& w) const { return fw::lerp(*this, end, w); }
Tensor addcmul(const Tensor& s, const Tensor& a, const Tensor& b, const Scalar& v) {
  OpAttrs at;
  at.f0 = v.toDouble();
  return dispatch1(OpId::addcmul, {s, a, b}, at);
}
Tensor addcdiv(const Tensor& s, const Tensor& a, const Tensor& b, const Scalar& v) {
  OpAttrs at;
  at.f0 = v.toDouble();
  return dispatch1(OpId::addcdiv, {s, a, b}, at);
}

Tensor clamp(const Tensor& t, const std::optional<Tensor>& lo, const std::optional<Tensor>& hi) {
  FW_CHECK((lo && lo->defined()) || (hi && hi->defined()), "[clamp] At least one of 'min' or 'max' must not be None");
  bool has_lo = lo && lo->defined(), has_hi = hi && hi->defined();
  // One bound: clamp_tensor with an infinite other bound keeps clamp's gradient rule (ties go to
  // t; maximum/minimum would split them).
  if (!has_lo || !has_hi) {
    const Tensor& b = has_lo ? *lo : *hi;
    ScalarType rt = promote_types(t.dtype(), b.dtype());
    if (!is_floating_point(rt)) return has_lo ? maximum(t, b) : minimum(t, b);
    Tensor inf = scalar_tensor(has_lo ? INFINITY : -INFINITY, TensorOptions(rt).device(t.device()));
    return has_lo ? dispatch1(OpId::clamp_tensor, {t, b, inf}, OpAttrs()) : dispatch1(OpId::clamp_tensor, {t, inf, b}, OpAttrs());
  }
  return dispatch1(OpId::clamp_tensor, {t, *lo, *hi}, OpAttrs());
}
Tensor Tensor::clamp(const std::optional<Tensor>& lo, const std::optional<Tensor>& hi) const { return fw::clamp(*this, lo, hi); }
Tensor clamp_min(const Tensor& t, const Tensor& m) { return clamp(t, m, std::nullopt); }
Tensor clamp_max(const Tensor& t, const Tensor& m) { return clamp(t, std::nullopt, m); }
Tensor Tensor::clamp_min(const Tensor& m) const { return fw::clamp(*this, m, std::nullopt); }
Tensor Tensor::clamp_max(const Tensor& m) const { return fw::clamp(*this, std::nullopt, m); }
namespace {
// clamp with tensor bounds written into t. clamp's backward keeps its input, so under autograd
// the input is a copy: the write then leaves what the graph saved untouched.
Tensor& clamp_tensor_inplace(Tensor& t, const std::optional<Tensor>& lo, const std::optional<Tensor>& hi,
                             const char* op) {
  const bool keep = is_grad_enabled() && t.requires_grad();
  return write_inplace(t, fw::clamp(keep ? t.clone() : t, lo, hi), op);
}
}  // namespace
Tensor& Tensor::clamp_(const std::optional<Tensor>& lo, const std::optional<Tensor>& hi) const {
  return clamp_tensor_inplace(mut_self(), lo, hi, "clamp_");
}
Tensor& Tensor::clamp_min_(const Tensor& m) const { return clamp_tensor_inplace(mut_self(), m, std::nullopt, "clamp_min_"); }
Tensor& Tensor::clamp_max_(const Tensor& m) const { return clamp_tensor_inplace(mut_self(), std::nullopt, m, "clamp_max_"); }

}  // namespace fw
