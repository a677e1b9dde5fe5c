// Unary elementwise ops: one FW_DEFINE_OP line each, all sharing unary_meta / unary_kernel.
//
// Note [16-bit floats compute in float]
// Half and BFloat16 inputs are widened to float, computed, and rounded back on store, as
// PyTorch's CPU kernels do ("opmath"). Kernels are instantiated for float, double (and
// complex or integers where the op allows), never for the 16-bit types.
#include "core/convert.h"
#include "core/functors.h"
#include "core/loops.h"
#include "core/op.h"
#include "core/vec_math.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

// How an op maps input dtypes to compute and output dtypes.
enum class UK {
  Float,      // integers promote to the default float; float/double
  FloatC,     // as Float, and complex64 / complex128 too
  Same,       // any real dtype, result keeps it (bool allowed)
  Signed,     // as Same, but bool is rejected (neg)
  Rounding,   // as Same; integer inputs come back unchanged
  Pred,       // float predicate, bool result; integer inputs are checked as float
  PredC,      // as Pred, and complex too
  Logical,    // any dtype, bool result
  Bitwise,    // integral and bool only
};

template <class F> F make_fn(const OpAttrs&) { return F{}; }
template <> fn::Elu make_fn(const OpAttrs& a) { return {a.f0, a.f1, a.f2}; }
template <> fn::LeakyRelu make_fn(const OpAttrs& a) { return {a.f0}; }
template <> fn::Hardtanh make_fn(const OpAttrs& a) { return {a.f0, a.f1}; }
template <> fn::Softplus make_fn(const OpAttrs& a) { return {a.f0, a.f1}; }
template <> fn::Logit make_fn(const OpAttrs& a) { return {a.f0}; }
template <> fn::Polygamma make_fn(const OpAttrs& a) { return {double(a.i0)}; }
template <> fn::NanToNum make_fn(const OpAttrs& a) { return {a.f0, a.f1, a.f2}; }
// An integer tensor's bound as an integer (a floating bound promotes the result to float, so
// only integral or bool Scalars reach integer kernels; an absent bound is never read).
int64_t int_bound(const Scalar& s, bool present) { return present && s.isIntegral(true) ? s.toLong() : 0; }
template <> fn::ClampScalar make_fn(const OpAttrs& a) {
  bool has_lo = a.flags & 1, has_hi = a.flags & 2;
  return {a.s0.toDouble(), a.s1.toDouble(), has_lo, has_hi, int_bound(a.s0, has_lo), int_bound(a.s1, has_hi)};
}

ScalarType float_of(ScalarType t) { return is_integral(t, true) ? get_default_dtype() : t; }

template <UK K>
ScalarType out_dtype(const OpCall& c) {
  ScalarType t = c.in[0].dtype();
  const char* op = c.def.name;
  switch (K) {
    case UK::Float:
      FW_CHECK(!is_complex(t), "[", op, "] not implemented for dtype ", dtype_str(t));
      return float_of(t);
    case UK::FloatC: return float_of(t);
    case UK::Signed:
      FW_CHECK(t != kBool, "[", op, "] Negation, the `-` operator, on a bool tensor is not supported.");
      return t;
    case UK::Same:
    case UK::Rounding:
      FW_CHECK(!is_complex(t), "[", op, "] not implemented for dtype ", dtype_str(t));
      return t;
    case UK::Pred:
      FW_CHECK(!is_complex(t), "[", op, "] not implemented for dtype ", dtype_str(t));
      return kBool;
    case UK::PredC:
    case UK::Logical: return kBool;
    case UK::Bitwise:
      FW_CHECK(is_integral(t, true), "[", op, "] bitwise operations are only supported on integer and bool tensors, got ",
               dtype_str(t));
      return t;
  }
  return t;
}

template <UK K>
void unary_meta(const OpCall& c, Metas& m) {
  m.push_back({DimVec(c.in[0].sizes()), out_dtype<K>(c)});
}

template <class F, class T, class R>
void run_unary(const Tensor& out, const Tensor& x, const F& f) {
  if constexpr (std::is_same_v<T, float> && std::is_same_v<R, float> && VecF32<F>::value) {
    auto L = make_loop<2>({&out, &x}, true);
    run_loop<2>(L, [&](char** p, const int64_t* s, int64_t n) {
      if (s[0] == 4 && s[1] == 4) {
        VecF32<F>::run(reinterpret_cast<const float*>(p[1]), reinterpret_cast<float*>(p[0]), n);
      } else {
        for (int64_t i = 0; i < n; i++)
          *reinterpret_cast<float*>(p[0] + i * s[0]) = f(*reinterpret_cast<const float*>(p[1] + i * s[1]));
      }
    });
  } else if constexpr (std::is_same_v<T, bool> && std::is_same_v<R, bool>) {
    // bool -> bool (logical_not): read as bytes, as copy's bool source (creation.cpp), so the
    // loop vectorises.
    unary_loop<R, uint8_t>(out, x, [&](uint8_t v) { return f(v != 0); });
  } else {
    unary_loop<R, T>(out, x, f);
  }
}

template <class F, UK K>
void unary_kernel(const OpCall& c, Outs& o) {
  const Tensor& in = c.in[0];
  Tensor& out = o[0];
  F f = make_fn<F>(c.a);
  ScalarType t = in.dtype();
  if (K == UK::Rounding && is_integral(t, true)) {
    out.copy_(in);
    return;
  }
  bool low = t == kHalf || t == kBFloat16;
  constexpr bool pred = K == UK::Pred || K == UK::PredC;
  if constexpr (K == UK::Same || K == UK::Signed) {
    if (t == kBFloat16) {  // widened element by element, as binary_kernel's bfloat16 loop
      const ScalarType rt = pred ? kBool : kBFloat16;
      Tensor y = out.dtype() == rt ? out : make_tensor(out.sizes(), rt);
      if constexpr (pred) unary_loop<bool, BFloat16>(y, in, [f](BFloat16 u) { return bool(f(float(u))); });
      else unary_loop<BFloat16, BFloat16>(y, in, [f](BFloat16 u) { return BFloat16(float(f(float(u)))); });
      if (!y.is_same(out)) out.copy_(y);
      return;
    }
  }
  ScalarType ct = low ? kFloat : (K == UK::Float || K == UK::FloatC || pred) ? float_of(t) : t;
  ScalarType rt = (pred || K == UK::Logical) ? kBool : ct;
  Tensor x = cast(in, ct);
  Tensor y = out.dtype() == rt ? out : make_tensor(out.sizes(), rt);
  auto body = [&]<class T>() {
    if constexpr (pred || K == UK::Logical) run_unary<F, T, bool>(y, x, f);
    else run_unary<F, T, T>(y, x, f);
  };
  if constexpr (K == UK::Float || K == UK::Pred) visit_float(ct, c.def.name, body);
  else if constexpr (K == UK::FloatC || K == UK::PredC) visit_float_complex(ct, c.def.name, body);
  else if constexpr (K == UK::Logical || K == UK::Signed) visit_all(ct, c.def.name, body);
  else if constexpr (K == UK::Bitwise) visit_integral(ct, c.def.name, body);
  else visit_real(ct, c.def.name, body);
  if (!y.is_same(out)) out.copy_(y);
}

template <class F, UK K>
void def_unary(OpDef& d, const char* functor, bool differentiable = true) {
  d.meta = unary_meta<K>;
  d.cpu = unary_kernel<F, K>;
  d.functor = functor;
  d.differentiable = differentiable && K != UK::Pred && K != UK::PredC && K != UK::Logical && K != UK::Bitwise;
}

// abs of complex -> float magnitude; angle -> argument (float for real inputs too).
template <bool Angle>
void cplx_real_meta(const OpCall& c, Metas& m) {
  ScalarType t = c.in[0].dtype();
  ScalarType r = is_complex(t) ? to_real_value_type(t) : (Angle ? float_of(t) : t);
  m.push_back({DimVec(c.in[0].sizes()), r});
}
template <bool Angle>
void cplx_real_kernel(const OpCall& c, Outs& o) {
  const Tensor& in = c.in[0];
  if constexpr (!Angle) {
    if (in.dtype() == kComplexFloat) {
      // |z| of complex64 as sqrt(re^2 + im^2) in float (what ATen's vectorised abs computes), in a
      // pass the compiler vectorises; the rare elements whose squares leave float's comfortable
      // range (tiny, huge, inf, NaN) are redone with std::abs (hypot).
      auto L = make_loop<2>({&o[0], &in}, true);
      run_loop<2>(L, [](char** p, const int64_t* st, int64_t n) {
        const bool contiguous = st[0] == sizeof(float) && st[1] == sizeof(complex64);
        for (int64_t b = 0; b < n; b += 256) {
          const int64_t e = std::min(n, b + 256);
          bool redo = false;
          if (contiguous) {
            float* y = reinterpret_cast<float*>(p[0]);
            const float* x = reinterpret_cast<const float*>(p[1]);
            for (int64_t i = b; i < e; i++) {
              float re = x[2 * i], im = x[2 * i + 1], q = re * re + im * im;
              y[i] = std::sqrt(q);
              redo |= !(q >= 1e-30f && q <= 1e30f);
            }
            if (!redo) continue;
          }
          for (int64_t i = b; i < e; i++) {
            const complex64 v = *reinterpret_cast<const complex64*>(p[1] + i * st[1]);
            float& y = *reinterpret_cast<float*>(p[0] + i * st[0]);
            const float q = v.real() * v.real() + v.imag() * v.imag();
            y = (q >= 1e-30f && q <= 1e30f) ? std::sqrt(q) : std::abs(v);
          }
        }
      });
      return;
    }
  }
  if (is_complex(in.dtype())) {
    visit_complex(in.dtype(), c.def.name, [&]<class C>() {
      unary_loop<real_value_t<C>, C>(o[0], in, [](C v) -> real_value_t<C> {
        if constexpr (Angle) {
          return std::arg(v);
        } else {
          return std::abs(v);
        }
      });
    });
    return;
  }
  if constexpr (Angle) {
    Tensor x = cast(in, o[0].dtype());
    visit_float(o[0].dtype(), "angle", [&]<class T>() {
      unary_loop<T, T>(o[0], x, [](T v) { return v != v ? v : (v < T(0) ? T(M_PI) : T(0)); });
    });
  } else {
    unary_kernel<fn::Abs, UK::Same>(c, o);
  }
}
void abs_meta(const OpCall& c, Metas& m) {
  FW_CHECK(c.in[0].dtype() != kBool, "[abs] not implemented for dtype bool");
  cplx_real_meta<false>(c, m);
}

void same_meta(const OpCall& c, Metas& m) { m.push_back({DimVec(c.in[0].sizes()), c.in[0].dtype()}); }

void conj_kernel(const OpCall& c, Outs& o) {
  if (is_complex(c.in[0].dtype()))
    visit_complex(c.in[0].dtype(), "conj", [&]<class C>() { unary_loop<C, C>(o[0], c.in[0], [](C v) { return std::conj(v); }); });
  else
    o[0].copy_(c.in[0]);
}

// real/imag of a complex tensor are float views with doubled strides.
template <int Part>
void part_meta(const OpCall& c, Metas& m) {
  FW_CHECK(Part == 0 || is_complex(c.in[0].dtype()), "[imag] imag is not implemented for tensors with non-complex dtypes.");
  m.push_back({DimVec(c.in[0].sizes()), to_real_value_type(c.in[0].dtype())});
}
template <int Part>
void part_kernel(const OpCall& c, Outs& o) {
  const Tensor& t = c.in[0];
  if (!is_complex(t.dtype())) {
    o[0] = t.detach();
    return;
  }
  DimVec st(t.strides());
  for (auto& s : st) s *= 2;
  Tensor v = make_view(t, t.sizes(), st, t.storage_offset() * 2 + Part);
  v.impl()->dtype = to_real_value_type(t.dtype());
  o[0] = v;
}

// ---- vjp helpers (public ops only, so gradients are themselves differentiable)
// Complex inputs follow PyTorch's convention (grad = dL/dRe + i dL/dIm): the vjp of a
// holomorphic f is g * conj(f'(z)); cj is free for real tensors.
Tensor cj(const Tensor& t) { return t.is_complex() ? fw::conj(t) : t; }
// d|x|: sign(x) for real x, x / |x| (0 at 0) for complex x (PyTorch's sgn).
Tensor sgn(const Tensor& x) {
  if (!x.is_complex()) return fw::sign(x);
  Tensor a = fw::abs(x);
  return x / fw::where(a == 0, fw::ones_like(a), a);
}
#define VJP_UNARY(expr)                                 \
  do {                                                  \
    const Tensor& gy = g[0];                            \
    const Tensor& x = c.in[0];                          \
    [[maybe_unused]] const Tensor& y = c.out.empty() ? x : c.out[0]; \
    r[0] = (expr);                                      \
  } while (0)

Tensor gelu_tanh_grad(const Tensor& gy, const Tensor& x) {
  const double k = M_2_SQRTPI * M_SQRT1_2, a = 0.044715;
  Tensor inner = (x + x * x * x * a) * k;
  Tensor t = fw::tanh(inner);
  Tensor dinner = (x * x * (3 * a) + 1) * k;
  return gy * ((t + 1) * 0.5 + x * 0.5 * (1 - t * t) * dinner);
}
Tensor silu_grad(const Tensor& gy, const Tensor& x) {
  Tensor s = fw::sigmoid(x);
  return gy * s * (x * (1 - s) + 1);
}
Tensor mish_grad(const Tensor& gy, const Tensor& x) {
  Tensor sp = fw::softplus(x);
  Tensor t = fw::tanh(sp);
  return gy * (t + x * (1 - t * t) * fw::sigmoid(x));
}
Tensor elu_grad(const VjpCtx& c, const Tensor& gy, const Tensor& x) {
  double alpha = c.a.f0, scale = c.a.f1, in_scale = c.a.f2;
  return gy * fw::where(x > 0, fw::full({}, scale, x.dtype()), fw::exp(x * in_scale) * (alpha * scale * in_scale));
}
Tensor logit_grad(const VjpCtx& c, const Tensor& gy, const Tensor& x) {
  Tensor d = gy / (x * (1 - x));
  if (c.a.f0 < 0) return d;
  return fw::where((x < c.a.f0) | (x > 1 - c.a.f0), fw::zeros_like(d), d);
}
Tensor clamp_grad(const VjpCtx& c, const Tensor& gy, const Tensor& x) {
  Tensor keep = fw::ones_like(x, kBool);
  if (c.a.flags & 1) keep = keep & (x >= c.a.s0);
  if (c.a.flags & 2) keep = keep & (x <= c.a.s1);
  return gy * keep;
}

}  // namespace

FW_DEFINE_OP(exp) {
  def_unary<fn::Exp, UK::FloatC>(d, "Exp");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * cj(y)); }; d.vjp_uses_out = true;
}
FW_DEFINE_OP(exp2) {
  def_unary<fn::Exp2, UK::Float>(d, "Exp2");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * y * M_LN2); }; d.vjp_uses_out = true;
}
FW_DEFINE_OP(expm1) {
  def_unary<fn::Expm1, UK::Float>(d, "Expm1");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * (y + 1)); }; d.vjp_uses_out = true;
}
FW_DEFINE_OP(log) {
  def_unary<fn::Log, UK::FloatC>(d, "Log");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy / cj(x)); };
}
FW_DEFINE_OP(log2) {
  def_unary<fn::Log2, UK::FloatC>(d, "Log2");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy / (cj(x) * M_LN2)); };
}
FW_DEFINE_OP(log10) {
  def_unary<fn::Log10, UK::FloatC>(d, "Log10");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy / (cj(x) * M_LN10)); };
}
FW_DEFINE_OP(log1p) {
  def_unary<fn::Log1p, UK::Float>(d, "Log1p");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy / (x + 1)); };
}
FW_DEFINE_OP(sqrt) {
  def_unary<fn::Sqrt, UK::FloatC>(d, "Sqrt");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy / (cj(y) * 2)); }; d.vjp_uses_out = true;
}
FW_DEFINE_OP(rsqrt) {
  def_unary<fn::Rsqrt, UK::FloatC>(d, "Rsqrt");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * cj(y * y * y) * -0.5); }; d.vjp_uses_out = true;
}
FW_DEFINE_OP(abs) {
  d.meta = abs_meta; d.cpu = cplx_real_kernel<false>; d.functor = "Abs";
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * sgn(x)); };
}
FW_DEFINE_OP(neg) {
  def_unary<fn::Neg, UK::Signed>(d, "Neg");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(-gy); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(sign) {
  def_unary<fn::Sign, UK::Same>(d, "Sign");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(fw::zeros_like(gy)); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(floor) {
  def_unary<fn::Floor, UK::Rounding>(d, "Floor");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(fw::zeros_like(gy)); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(ceil) {
  def_unary<fn::Ceil, UK::Rounding>(d, "Ceil");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(fw::zeros_like(gy)); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(round) {
  def_unary<fn::Round, UK::Rounding>(d, "Round");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(fw::zeros_like(gy)); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(trunc) {
  def_unary<fn::Trunc, UK::Rounding>(d, "Trunc");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(fw::zeros_like(gy)); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(frac) {
  def_unary<fn::Frac, UK::Float>(d, "Frac");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(reciprocal) {
  def_unary<fn::Reciprocal, UK::FloatC>(d, "Reciprocal");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(-gy * cj(y * y)); }; d.vjp_uses_out = true;
}
FW_DEFINE_OP(sin) {
  def_unary<fn::Sin, UK::FloatC>(d, "Sin");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * cj(fw::cos(x))); };
}
FW_DEFINE_OP(cos) {
  def_unary<fn::Cos, UK::FloatC>(d, "Cos");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(-gy * cj(fw::sin(x))); };
}
FW_DEFINE_OP(tan) {
  def_unary<fn::Tan, UK::FloatC>(d, "Tan");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * cj(y * y + 1)); }; d.vjp_uses_out = true;
}
FW_DEFINE_OP(asin) {
  def_unary<fn::Asin, UK::FloatC>(d, "Asin");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * cj(fw::rsqrt(1 - x * x))); };
}
FW_DEFINE_OP(acos) {
  def_unary<fn::Acos, UK::FloatC>(d, "Acos");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(-gy * cj(fw::rsqrt(1 - x * x))); };
}
FW_DEFINE_OP(atan) {
  def_unary<fn::Atan, UK::FloatC>(d, "Atan");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy / cj(x * x + 1)); };
}
// Inverse hyperbolic functions: asinh' = 1 / sqrt(x^2 + 1), acosh' = 1 / sqrt(x^2 - 1),
// atanh' = 1 / (1 - x^2).
FW_DEFINE_OP(asinh) {
  def_unary<fn::Asinh, UK::FloatC>(d, "Asinh");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * cj(fw::rsqrt(x * x + 1))); };
}
FW_DEFINE_OP(acosh) {
  def_unary<fn::Acosh, UK::FloatC>(d, "Acosh");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * cj(fw::rsqrt(x * x - 1))); };
}
FW_DEFINE_OP(atanh) {
  def_unary<fn::Atanh, UK::FloatC>(d, "Atanh");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy / cj(1 - x * x)); };
}
FW_DEFINE_OP(sinh) {
  def_unary<fn::Sinh, UK::FloatC>(d, "Sinh");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * cj(fw::cosh(x))); };
}
FW_DEFINE_OP(cosh) {
  def_unary<fn::Cosh, UK::FloatC>(d, "Cosh");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * cj(fw::sinh(x))); };
}
FW_DEFINE_OP(tanh) {
  def_unary<fn::Tanh, UK::FloatC>(d, "Tanh");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * cj(1 - y * y)); }; d.vjp_uses_out = true;
}
FW_DEFINE_OP(sigmoid) {
  def_unary<fn::Sigmoid, UK::FloatC>(d, "Sigmoid");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * cj(y * (1 - y))); }; d.vjp_uses_out = true;
}
FW_DEFINE_OP(erf) {
  def_unary<fn::Erf, UK::Float>(d, "Erf");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * fw::exp(-x * x) * M_2_SQRTPI); };
}
// Note [Gamma-family functors] in core/functors.h. Each derivative is the next function of the
// family, so higher-order gradients exist: lgamma' = digamma, digamma' = polygamma(1),
// polygamma(n)' = polygamma(n + 1), erfinv' = sqrt(pi) / 2 exp(erfinv^2).
FW_DEFINE_OP(lgamma) {
  def_unary<fn::Lgamma, UK::Float>(d, "Lgamma");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * fw::digamma(x)); };
}
FW_DEFINE_OP(digamma) {
  def_unary<fn::Digamma, UK::Float>(d, "Digamma");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * fw::polygamma(1, x)); };
}
FW_DEFINE_OP(polygamma) {
  def_unary<fn::Polygamma, UK::Float>(d, "Polygamma");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * fw::polygamma(c.a.i0 + 1, x)); };
}
FW_DEFINE_OP(erfinv) {
  def_unary<fn::Erfinv, UK::Float>(d, "Erfinv");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * fw::exp(y * y) * (std::sqrt(M_PI) / 2)); };
  d.vjp_uses_out = true;
}
FW_DEFINE_OP(erfc) {
  def_unary<fn::Erfc, UK::Float>(d, "Erfc");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * fw::exp(-x * x) * -M_2_SQRTPI); };
}
// relu's gradient gy * (y > 0). A plain gradient (no create_graph, not traced) of a float tensor is
// one pass, y > 0 ? gy : gy * 0, instead of a bool mask, its cast to float and a product (bfloat16
// too: autocast's activations).
static Tensor relu_grad(const Tensor& gy, const Tensor& y) {
  bool plain = !tls().tracer && !is_grad_enabled() && gy.dtype() == y.dtype() && gy.sizes().equals(y.sizes()) &&
               (gy.dtype() == kFloat || gy.dtype() == kDouble || gy.dtype() == kBFloat16);
  if (!plain) return gy * (y > 0);
  Tensor out = make_tensor(gy.sizes(), gy.dtype());
  Tensor gc = gy.contiguous(), yc = y.contiguous();
  if (gy.dtype() == kBFloat16) {
    // On the bits, so that GCC vectorises it: y > 0 is 0x0001 <= y <= 0x7f80 (positive, not NaN);
    // gy * 0 is a zero of gy's sign, or NaN (0x7fc0, as fw::BFloat16 rounds it) for inf and NaN.
    const auto* __restrict gp = reinterpret_cast<const uint16_t*>(gc.data_ptr<BFloat16>());
    const auto* __restrict yp = reinterpret_cast<const uint16_t*>(yc.data_ptr<BFloat16>());
    auto* __restrict o = reinterpret_cast<uint16_t*>(out.data_ptr<BFloat16>());
    parallel_for(0, out.numel(), kGrainSize, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) {
        const uint16_t g = gp[i];
        const uint16_t zero = (g & 0x7f80) == 0x7f80 ? uint16_t(0x7fc0) : uint16_t(g & 0x8000);
        o[i] = uint16_t(yp[i] - 1) < 0x7f80 ? g : zero;
      }
    });
    return out;
  }
  visit_float(gy.dtype(), "relu_backward", [&]<class T>() {
    const T* __restrict gp = gc.data_ptr<T>();
    const T* __restrict yp = yc.data_ptr<T>();
    T* __restrict o = out.data_ptr<T>();
    parallel_for(0, out.numel(), kGrainSize, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) o[i] = yp[i] > T(0) ? gp[i] : gp[i] * T(0);
    });
  });
  return out;
}

FW_DEFINE_OP(relu) {
  def_unary<fn::Relu, UK::Same>(d, "Relu");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(relu_grad(gy, y)); }; d.vjp_uses_out = true;
}
FW_DEFINE_OP(gelu) {
  def_unary<fn::Gelu, UK::Float>(d, "Gelu");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * (0.5 * (1 + fw::erf(x * M_SQRT1_2)) + x * fw::exp(x * x * -0.5) * (M_2_SQRTPI * M_SQRT1_2 * 0.5))); };
}
FW_DEFINE_OP(gelu_tanh) {
  def_unary<fn::GeluTanh, UK::Float>(d, "GeluTanh");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gelu_tanh_grad(gy, x)); };
}
FW_DEFINE_OP(silu) {
  def_unary<fn::Silu, UK::Float>(d, "Silu");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(silu_grad(gy, x)); };
}
FW_DEFINE_OP(mish) {
  def_unary<fn::Mish, UK::Float>(d, "Mish");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(mish_grad(gy, x)); };
}
FW_DEFINE_OP(log_sigmoid) {
  def_unary<fn::LogSigmoid, UK::Float>(d, "LogSigmoid");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * fw::sigmoid(-x)); };
}
FW_DEFINE_OP(hardsigmoid) {
  def_unary<fn::Hardsigmoid, UK::Float>(d, "Hardsigmoid");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * ((x > -3) & (x < 3)) / 6); };
}
FW_DEFINE_OP(hardswish) {
  def_unary<fn::Hardswish, UK::Float>(d, "Hardswish");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * fw::where(x < -3, 0.0, fw::where(x <= 3, x / 3 + 0.5, 1.0))); };
}
FW_DEFINE_OP(elu) {
  def_unary<fn::Elu, UK::Float>(d, "Elu");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(elu_grad(c, gy, x)); };
}
FW_DEFINE_OP(leaky_relu) {
  def_unary<fn::LeakyRelu, UK::Float>(d, "LeakyRelu");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * fw::where(x > 0, 1.0, fw::full({}, c.a.f0, x.dtype()))); };
}
FW_DEFINE_OP(hardtanh) {
  def_unary<fn::Hardtanh, UK::Same>(d, "Hardtanh");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * ((x > c.a.f0) & (x < c.a.f1))); };
}
FW_DEFINE_OP(softplus) {
  def_unary<fn::Softplus, UK::Float>(d, "Softplus");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * fw::where(x * c.a.f0 > c.a.f1, 1.0, fw::sigmoid(x * c.a.f0))); };
}
FW_DEFINE_OP(logit) {
  def_unary<fn::Logit, UK::Float>(d, "Logit");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(logit_grad(c, gy, x)); };
}
// An integer bound outside an integer tensor's range is an error (PyTorch), not a wrapped bound.
void clamp_scalar_meta(const OpCall& c, Metas& m) {
  unary_meta<UK::Same>(c, m);
  ScalarType t = c.in[0].dtype();
  if (!is_integral(t, false)) return;
  for (const Scalar* b : {(c.a.flags & 1) ? &c.a.s0 : nullptr, (c.a.flags & 2) ? &c.a.s1 : nullptr}) {
    if (!b || !b->isIntegral(false)) continue;
    int64_t v = b->toLong(), lo = 0, hi = 0;
    visit_integral(t, "clamp", [&]<class T>() {
      lo = int64_t(std::numeric_limits<T>::lowest());
      hi = int64_t(std::numeric_limits<T>::max());
    });
    FW_CHECK(v >= lo && v <= hi, "[clamp] bound ", v, " cannot be converted to type ", dtype_name(t),
             " without overflow (the tensor's values lie in [", lo, ", ", hi, "])");
  }
}

FW_DEFINE_OP(clamp_scalar) {
  def_unary<fn::ClampScalar, UK::Same>(d, "ClampScalar");
  d.meta = clamp_scalar_meta;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(clamp_grad(c, gy, x)); };
}
FW_DEFINE_OP(isnan) { def_unary<fn::IsNan, UK::PredC>(d, "IsNan"); }
FW_DEFINE_OP(isinf) { def_unary<fn::IsInf, UK::PredC>(d, "IsInf"); }
FW_DEFINE_OP(isposinf) { def_unary<fn::IsPosInf, UK::Pred>(d, "IsPosInf"); }
FW_DEFINE_OP(isneginf) { def_unary<fn::IsNegInf, UK::Pred>(d, "IsNegInf"); }
FW_DEFINE_OP(isfinite) { def_unary<fn::IsFinite, UK::PredC>(d, "IsFinite"); }
FW_DEFINE_OP(signbit) { def_unary<fn::Signbit, UK::Pred>(d, "Signbit"); }
FW_DEFINE_OP(nan_to_num) {
  def_unary<fn::NanToNum, UK::Same>(d, "NanToNum");
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(gy * fw::isfinite(x)); };
}
FW_DEFINE_OP(logical_not) { def_unary<fn::LogicalNot, UK::Logical>(d, "LogicalNot"); }
FW_DEFINE_OP(bitwise_not) { def_unary<fn::BitwiseNot, UK::Bitwise>(d, "BitwiseNot"); }
FW_DEFINE_OP(conj) {
  d.meta = same_meta; d.cpu = conj_kernel; d.functor = "Conj";
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { VJP_UNARY(fw::conj(gy)); };
}
// Complex gradients follow PyTorch's convention: grad = dL/dRe + i dL/dIm.
FW_DEFINE_OP(angle) {
  d.meta = cplx_real_meta<true>;
  d.cpu = cplx_real_kernel<true>;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    const Tensor& z = c.in[0];
    if (!z.is_complex()) {
      r[0] = fw::zeros_like(z);
      return;
    }
    Tensor x = fw::real(z), y = fw::imag(z), n2 = x * x + y * y;
    r[0] = fw::complex(-y * g[0] / n2, x * g[0] / n2);
  };
}
FW_DEFINE_OP(real) {
  d.meta = part_meta<0>;
  d.cpu = part_kernel<0>;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    r[0] = c.in[0].is_complex() ? fw::complex(g[0], fw::zeros_like(g[0])) : g[0];
  };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(imag) {
  d.meta = part_meta<1>;
  d.cpu = part_kernel<1>;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { r[0] = fw::complex(fw::zeros_like(g[0]), g[0]); };
  d.vjp_reads_in = false;
}

// ---- public functions
#define FW_UNARY_PUBLIC(name)                                                          \
  Tensor name(const Tensor& t) { return dispatch1(OpId::name, {t}, OpAttrs()); }       \
  Tensor& name##_(Tensor& t) {                                                         \
    dispatch_into(OpId::name, {t}, OpAttrs(), t);                                      \
    return t;                                                                          \
  }                                                                                    \
  Tensor Tensor::name() const { return fw::name(*this); }                             \
  Tensor& Tensor::name##_() const { return fw::name##_(mut_self()); }
FW_UNARY_PUBLIC(exp) FW_UNARY_PUBLIC(exp2) FW_UNARY_PUBLIC(expm1) FW_UNARY_PUBLIC(log)
FW_UNARY_PUBLIC(log2) FW_UNARY_PUBLIC(log10) FW_UNARY_PUBLIC(log1p) FW_UNARY_PUBLIC(sqrt)
FW_UNARY_PUBLIC(rsqrt) FW_UNARY_PUBLIC(abs) FW_UNARY_PUBLIC(neg) FW_UNARY_PUBLIC(sign)
FW_UNARY_PUBLIC(floor) FW_UNARY_PUBLIC(ceil) FW_UNARY_PUBLIC(round) FW_UNARY_PUBLIC(trunc)
FW_UNARY_PUBLIC(frac) FW_UNARY_PUBLIC(reciprocal) FW_UNARY_PUBLIC(sin) FW_UNARY_PUBLIC(cos)
FW_UNARY_PUBLIC(tan) FW_UNARY_PUBLIC(asin) FW_UNARY_PUBLIC(acos) FW_UNARY_PUBLIC(atan)
FW_UNARY_PUBLIC(sinh) FW_UNARY_PUBLIC(cosh) FW_UNARY_PUBLIC(tanh) FW_UNARY_PUBLIC(sigmoid)
FW_UNARY_PUBLIC(erf) FW_UNARY_PUBLIC(erfc) FW_UNARY_PUBLIC(relu) FW_UNARY_PUBLIC(lgamma)
FW_UNARY_PUBLIC(digamma) FW_UNARY_PUBLIC(erfinv)
FW_UNARY_PUBLIC(asinh) FW_UNARY_PUBLIC(acosh) FW_UNARY_PUBLIC(atanh)
#undef FW_UNARY_PUBLIC

Tensor polygamma(int64_t n, const Tensor& t) {
  FW_CHECK(n >= 0, "[polygamma] polygamma(n, x) does not support negative n, got n = ", n);
  OpAttrs a;
  a.i0 = n;
  return dispatch1(OpId::polygamma, {t}, a);
}
Tensor Tensor::polygamma(int64_t n) const { return fw::polygamma(n, *this); }
Tensor& Tensor::polygamma_(int64_t n) const {
  FW_CHECK(n >= 0, "[polygamma] polygamma(n, x) does not support negative n, got n = ", n);
  OpAttrs a;
  a.i0 = n;
  dispatch_into(OpId::polygamma, {*this}, a, *this);
  return mut_self();
}

Tensor square(const Tensor& t) { return t.dtype() == kBool ? mul(t.to(kLong), t.to(kLong)) : mul(t, t); }
Tensor& square_(Tensor& t) { return t.mul_(t); }
Tensor Tensor::square() const { return fw::square(*this); }
Tensor& Tensor::square_() const { return fw::square_(mut_self()); }
Tensor absolute(const Tensor& t) { return abs(t); }
Tensor negative(const Tensor& t) { return neg(t); }
Tensor signbit(const Tensor& t) { return dispatch1(OpId::signbit, {t}, OpAttrs()); }
Tensor isnan(const Tensor& t) { return dispatch1(OpId::isnan, {t}, OpAttrs()); }
Tensor isinf(const Tensor& t) { return dispatch1(OpId::isinf, {t}, OpAttrs()); }
Tensor isposinf(const Tensor& t) { return dispatch1(OpId::isposinf, {t}, OpAttrs()); }
Tensor isneginf(const Tensor& t) { return dispatch1(OpId::isneginf, {t}, OpAttrs()); }
Tensor isfinite(const Tensor& t) { return dispatch1(OpId::isfinite, {t}, OpAttrs()); }
Tensor logical_not(const Tensor& t) { return dispatch1(OpId::logical_not, {t}, OpAttrs()); }
Tensor bitwise_not(const Tensor& t) { return dispatch1(OpId::bitwise_not, {t}, OpAttrs()); }
Tensor conj(const Tensor& t) { return dispatch1(OpId::conj, {t}, OpAttrs()); }
Tensor angle(const Tensor& t) { return dispatch1(OpId::angle, {t}, OpAttrs()); }
Tensor real(const Tensor& t) { return dispatch1(OpId::real, {t}, OpAttrs()); }
Tensor imag(const Tensor& t) { return dispatch1(OpId::imag, {t}, OpAttrs()); }
Tensor Tensor::isnan() const { return fw::isnan(*this); }
Tensor Tensor::isinf() const { return fw::isinf(*this); }
Tensor Tensor::isfinite() const { return fw::isfinite(*this); }
Tensor Tensor::logical_not() const { return fw::logical_not(*this); }
Tensor Tensor::bitwise_not() const { return fw::bitwise_not(*this); }
Tensor Tensor::conj() const { return fw::conj(*this); }
Tensor Tensor::angle() const { return fw::angle(*this); }
Tensor Tensor::real() const { return fw::real(*this); }
Tensor Tensor::imag() const { return fw::imag(*this); }

Tensor logit(const Tensor& t, std::optional<double> eps) {
  OpAttrs a;
  a.f0 = eps ? *eps : -1.0;
  return dispatch1(OpId::logit, {t}, a);
}
Tensor Tensor::logit(std::optional<double> eps) const { return fw::logit(*this, eps); }

Tensor nan_to_num(const Tensor& t, std::optional<double> nan, std::optional<double> posinf,
                  std::optional<double> neginf) {
  FW_CHECK(t.defined(), "[nan_to_num] argument #0 is an undefined tensor");
  OpAttrs a;
  double big = t.dtype() == kDouble ? std::numeric_limits<double>::max()
               : t.dtype() == kHalf ? 65504.0
               : t.dtype() == kBFloat16 ? 3.3895313892515355e38
                                        : double(std::numeric_limits<float>::max());
  a.f0 = nan.value_or(0.0);
  a.f1 = posinf.value_or(big);
  a.f2 = neginf.value_or(-big);
  if (!t.is_floating_point()) return t.clone();
  return dispatch1(OpId::nan_to_num, {t}, a);
}
Tensor Tensor::nan_to_num(std::optional<double> nan, std::optional<double> posinf,
                          std::optional<double> neginf) const {
  return fw::nan_to_num(*this, nan, posinf, neginf);
}

Tensor gelu(const Tensor& t, const std::string& approximate) {
  FW_CHECK(approximate == "none" || approximate == "tanh", "[gelu] approximate must be 'none' or 'tanh', got '",
           approximate, "'");
  return dispatch1(approximate == "none" ? OpId::gelu : OpId::gelu_tanh, {t}, OpAttrs());
}
Tensor silu(const Tensor& t) { return dispatch1(OpId::silu, {t}, OpAttrs()); }
Tensor mish(const Tensor& t) { return dispatch1(OpId::mish, {t}, OpAttrs()); }
Tensor log_sigmoid(const Tensor& t) { return dispatch1(OpId::log_sigmoid, {t}, OpAttrs()); }
Tensor hardsigmoid(const Tensor& t) { return dispatch1(OpId::hardsigmoid, {t}, OpAttrs()); }
Tensor hardswish(const Tensor& t) { return dispatch1(OpId::hardswish, {t}, OpAttrs()); }
Tensor elu(const Tensor& t, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  OpAttrs a;
  a.f0 = alpha.toDouble();
  a.f1 = scale.toDouble();
  a.f2 = input_scale.toDouble();
  return dispatch1(OpId::elu, {t}, a);
}
Tensor selu(const Tensor& t) { return elu(t, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946); }
Tensor leaky_relu(const Tensor& t, const Scalar& slope) {
  OpAttrs a;
  a.f0 = slope.toDouble();
  return dispatch1(OpId::leaky_relu, {t}, a);
}
Tensor hardtanh(const Tensor& t, const Scalar& lo, const Scalar& hi) {
  FW_CHECK(lo.toDouble() <= hi.toDouble(), "[hardtanh] min_val cannot be greater than max_val (", lo, " > ", hi, ")");
  OpAttrs a;
  a.f0 = lo.toDouble();
  a.f1 = hi.toDouble();
  return dispatch1(OpId::hardtanh, {t}, a);
}
Tensor relu6(const Tensor& t) { return hardtanh(t, 0, 6); }
Tensor softplus(const Tensor& t, const Scalar& beta, const Scalar& threshold) {
  OpAttrs a;
  a.f0 = beta.toDouble();
  a.f1 = threshold.toDouble();
  return dispatch1(OpId::softplus, {t}, a);
}

static OpAttrs clamp_attrs(const std::optional<Scalar>& lo, const std::optional<Scalar>& hi) {
  FW_CHECK(lo || hi, "[clamp] At least one of 'min' or 'max' must not be None");
  OpAttrs a;
  if (lo) { a.s0 = *lo; a.flags |= 1; }
  if (hi) { a.s1 = *hi; a.flags |= 2; }
  return a;
}
Tensor clamp(const Tensor& t, std::optional<Scalar> lo, std::optional<Scalar> hi) {
  OpAttrs a = clamp_attrs(lo, hi);
  Tensor x = t;
  // Float bounds on an integer tensor promote it, as PyTorch does.
  if (!t.is_floating_point() && ((lo && lo->isFloatingPoint()) || (hi && hi->isFloatingPoint())))
    x = t.to(get_default_dtype());
  return dispatch1(OpId::clamp_scalar, {x}, a);
}
Tensor clamp_min(const Tensor& t, const Scalar& m) { return clamp(t, m, std::nullopt); }
Tensor clamp_max(const Tensor& t, const Scalar& m) { return clamp(t, std::nullopt, m); }
Tensor clip(const Tensor& t, std::optional<Scalar> lo, std::optional<Scalar> hi) { return clamp(t, lo, hi); }
Tensor Tensor::clamp(std::optional<Scalar> lo, std::optional<Scalar> hi) const { return fw::clamp(*this, lo, hi); }
Tensor& Tensor::clamp_(std::optional<Scalar> lo, std::optional<Scalar> hi) const {
  dispatch_into(OpId::clamp_scalar, {*this}, clamp_attrs(lo, hi), *this);
  return mut_self();
}
Tensor Tensor::clamp_min(const Scalar& m) const { return fw::clamp_min(*this, m); }
Tensor Tensor::clamp_max(const Scalar& m) const { return fw::clamp_max(*this, m); }

}  // namespace fw
