// Matrix products: the primitives mm, addmm, bmm, baddbmm, dot, and the composites matmul, mv,
// outer, linear built on them (einsum lives in einsum.cpp).
//
// Note [Batched products]
// All four matrix primitives run one driver over a batch of strided matrices. float/double go
// to gemm() (gemm.h): fw's AVX-512 float32 kernel (Note [Native float32 GEMM]) or Eigen
// (Note [GEMM through Eigen]), with no copy for contiguous or transposed operands;
// bfloat16 runs fw's bfloat16 kernel on AVX512-BF16 hosts (Note [bfloat16 GEMM]) and, like half,
// computes in float elsewhere; integers and complex use a plain i-k-j loop (wrapping like
// PyTorch). Small matrices in a batch run in parallel over the batch, each product on one
// thread; big ones run one after the other, each split over fw's thread pool.
#include <algorithm>

#include "core/autocast.h"
#include "core/convert.h"
#include "core/op.h"
#include "core/ops/gemm.h"
#include "core/ops/gemm_f32.h"
#include "core/parallel.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

// Element strides of a matrix or a batch of matrices (batch stride 0 for a single matrix).
struct Batch {
  int64_t bs, rs, cs;
};
Batch batch_of(const Tensor& t) {
  int64_t d = t.dim();
  return {d == 3 ? t.stride(0) : 0, t.stride(d - 2), t.stride(d - 1)};
}

template <class T>
void naive_gemm(int64_t m, int64_t n, int64_t k, T alpha, MatArg<T> a, MatArg<T> b, T beta, T* c, int64_t ldc) {
  if (k == 0 || alpha == T(0)) {  // as gemm(): neither operand is read (NaN in them stays out)
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) c[i * ldc + j] = beta == T(0) ? T(0) : T(beta * c[i * ldc + j]);
    return;
  }
  for (int64_t i = 0; i < m; i++) {
    T* ci = c + i * ldc;
    for (int64_t j = 0; j < n; j++) ci[j] = beta == T(0) ? T(0) : T(beta * ci[j]);
    for (int64_t p = 0; p < k; p++) {
      T av = T(alpha * a.data[i * a.rs + p * a.cs]);
      const T* bp = b.data + p * b.rs;
      for (int64_t j = 0; j < n; j++) ci[j] += T(av * bp[j * b.cs]);
    }
  }
}

bool is_zero(const Scalar& s) { return s.toComplexDouble() == std::complex<double>(0, 0); }

// What follows the product in product(): + bias_scale * bias (bias already expanded to out's
// sizes: broadcast dims have stride 0), relu when relu is set, * (gate > 0) when gate is defined
// (a tensor of out's sizes and dtype).
struct ProductEpilogue {
  Tensor bias;
  Scalar bias_scale = 1;
  bool relu = false;
  Tensor gate;
};

template <class T>
constexpr bool kGemmType = std::is_same_v<T, float> || std::is_same_v<T, double>;

#if defined(FW_BGEMM_AVX512)
// bfloat16 on AVX512-BF16 hosts: products accumulate in float32 (Note [bfloat16 GEMM] in
// gemm_f32.cpp) and are rounded into out tile by tile; the epilogue's operands are converted to
// float32 (broadcast ones once).
void bf16_product(const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha, const Scalar& beta,
                  const ProductEpilogue& ep) {
  const int64_t d = a.dim(), nb = d == 3 ? a.size(0) : 1;
  const int64_t m = a.size(d - 2), k = a.size(d - 1), n = b.size(d - 1);
  // float32 C only to read out's old values (beta != 0); otherwise the kernel needs none or its own.
  Tensor c32 = is_zero(beta) ? Tensor() : out.to(kFloat).contiguous();
  // Broadcast dims (stride 0) are converted once, not once per element of C.
  auto to_float = [](const Tensor& x) {
    if (!x.defined()) return Tensor();
    DimVec sz(x.sizes().begin(), x.sizes().end());
    for (int64_t i = 0; i < x.dim(); i++)
      if (x.stride(i) == 0) sz[size_t(i)] = 1;
    return x.as_strided(sz, x.strides(), x.storage_offset()).to(kFloat).expand(x.sizes());
  };
  Tensor bias = to_float(ep.bias), gate = to_float(ep.gate);
  GemmEpilogue<float> gep;
  Batch sbias{0, 0, 0}, sgate{0, 0, 0};
  if (bias.defined() && ep.bias_scale.to<float>() != 0.f) {
    sbias = batch_of(bias);
    gep.bias = bias.data_ptr<float>();
    gep.rs = sbias.rs;
    gep.cs = sbias.cs;
    gep.bias_scale = ep.bias_scale.to<float>();
  }
  gep.relu = ep.relu;
  if (gate.defined()) {
    sgate = batch_of(gate);
    gep.gate = gate.data_ptr<float>();
    gep.grs = sgate.rs;
    gep.gcs = sgate.cs;
  }
  const Batch sa = batch_of(a), sb = batch_of(b);
  const auto* pa = reinterpret_cast<const uint16_t*>(a.data_ptr<BFloat16>());
  const auto* pb = reinterpret_cast<const uint16_t*>(b.data_ptr<BFloat16>());
  auto* po = reinterpret_cast<uint16_t*>(out.data_ptr<BFloat16>());
  float* pc = c32.defined() ? c32.data_ptr<float>() : nullptr;
  const float al = alpha.to<float>(), be = beta.to<float>();
  const int64_t work = std::max<int64_t>(1, m * n * k);
  parallel_for(0, nb, std::max<int64_t>(1, (int64_t(1) << 22) / work), [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; i++) {
      GemmEpilogue<float> e = gep;
      if (e.bias) e.bias += i * sbias.bs;
      if (e.gate) e.gate += i * sgate.bs;
      bgemm_avx512(m, n, k, al, {pa + i * sa.bs, sa.rs, sa.cs}, {pb + i * sb.bs, sb.rs, sb.cs}, be,
                   pc ? pc + i * m * n : nullptr, n, e, po + i * m * n, n);
    }
  });
}
#endif

// out (contiguous [B,] m x n) = alpha * a @ b + beta * out, then the epilogue. beta == 0 ignores
// out's contents. float and double run the epilogue inside gemm() (Note [GEMM epilogues]); the
// plain loop of the other dtypes takes relu only (addmm sends their bias through beta).
void product(const char* op, const Tensor& out, const Tensor& a, const Tensor& b, const Scalar& alpha,
             const Scalar& beta, const ProductEpilogue& ep = {}) {
  int64_t d = a.dim(), nb = d == 3 ? a.size(0) : 1;
  int64_t m = a.size(d - 2), k = a.size(d - 1), n = b.size(d - 1);
  ScalarType t = out.dtype();
#if defined(FW_BGEMM_AVX512)
  if (t == kBFloat16) return bf16_product(out, a, b, alpha, beta, ep);
#endif
  if (t == kHalf || t == kBFloat16) {
    Tensor o32 = is_zero(beta) ? make_tensor(out.sizes(), kFloat) : out.to(kFloat);
    auto f32 = [](const Tensor& x) { return x.defined() ? x.to(kFloat) : Tensor(); };
    ProductEpilogue ep32{f32(ep.bias), ep.bias_scale, ep.relu, f32(ep.gate)};
    product(op, o32, a.to(kFloat), b.to(kFloat), alpha, beta, ep32);
    out.copy_(o32);
    return;
  }
  visit_all(t, op, [&]<class T>() {
    Batch sa = batch_of(a), sb = batch_of(b);
    const T* pa = a.data_ptr<T>();
    const T* pb = b.data_ptr<T>();
    T* po = out.data_ptr<T>();
    T al = alpha.to<T>(), be = beta.to<T>();
    GemmEpilogue<T> gep;
    Batch sbias{0, 0, 0}, sgate{0, 0, 0};
    if constexpr (kGemmType<T>) {
      // A bias scale that is zero in T (beta = 1e-50 in float) ignores the bias, NaN included, as
      // beta == 0 ignores C.
      if (ep.bias.defined() && ep.bias_scale.to<T>() != T(0)) {
        sbias = batch_of(ep.bias);
        gep.bias = ep.bias.data_ptr<T>();
        gep.rs = sbias.rs;
        gep.cs = sbias.cs;
        gep.bias_scale = ep.bias_scale.to<T>();
      }
      gep.relu = ep.relu;
      if (ep.gate.defined()) {
        sgate = batch_of(ep.gate);
        gep.gate = ep.gate.data_ptr<T>();
        gep.grs = sgate.rs;
        gep.gcs = sgate.cs;
      }
    } else {
      FW_CHECK(!ep.bias.defined() && !ep.gate.defined() && !(ep.relu && is_complex_v<T>), "[", op,
               "] internal: no product epilogue for dtype ", dtype_name(t));
    }
    int64_t work = std::max<int64_t>(1, m * n * k);
    int64_t grain = std::max<int64_t>(1, (int64_t(1) << 21) / work);
    parallel_for(0, nb, grain, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; i++) {
        MatArg<T> ma{pa + i * sa.bs, sa.rs, sa.cs}, mb{pb + i * sb.bs, sb.rs, sb.cs};
        T* pc = po + i * m * n;
        if constexpr (kGemmType<T>) {
          GemmEpilogue<T> e = gep;
          if (e.bias) e.bias += i * sbias.bs;
          if (e.gate) e.gate += i * sgate.bs;
          gemm<T>(m, n, k, al, ma, mb, be, pc, n, e);
        } else {
          naive_gemm<T>(m, n, k, al, ma, mb, be, pc, n);
          if constexpr (!is_complex_v<T>) {
            if (ep.relu)
              for (int64_t j = 0; j < m * n; j++) pc[j] = pc[j] > T(0) ? pc[j] : T(0);
          }
        }
      }
    });
  });
}

void check_dtypes(const char* op, const Tensor& a, const Tensor& b) {
  FW_CHECK(a.dtype() == b.dtype(), "[", op, "] expected scalar type ", dtype_name(a.dtype()), " but found ",
           dtype_name(b.dtype()));
  FW_CHECK(a.dtype() != kBool, "[", op, "] not implemented for dtype bool");
}

// self must broadcast to `target` (addmm's bias, baddbmm's input).
void check_expandable(const char* op, const Tensor& self, IntArrayRef target) {
  int64_t nd = int64_t(target.size());
  bool ok = self.dim() <= nd;
  for (int64_t i = 0; ok && i < self.dim(); i++) {
    int64_t s = self.size(i), tsz = target[nd - self.dim() + i];
    ok = s == tsz || s == 1;
  }
  FW_CHECK(ok, "[", op, "] self of shape ", self.sizes(), " cannot be broadcast to the result shape ", target);
}

void mm_shapes(const char* op, const Tensor& a, const Tensor& b) {
  FW_CHECK(a.dim() == 2, "[", op, "] mat1 must be a matrix, got ", a.dim(), "-D tensor");
  FW_CHECK(b.dim() == 2, "[", op, "] mat2 must be a matrix, got ", b.dim(), "-D tensor");
  FW_CHECK(a.size(1) == b.size(0), "[", op, "] mat1 and mat2 shapes cannot be multiplied (", a.size(0), "x",
           a.size(1), " and ", b.size(0), "x", b.size(1), ")");
  check_dtypes(op, a, b);
}

void bmm_shapes(const char* op, const Tensor& a, const Tensor& b) {
  FW_CHECK(a.dim() == 3, "[", op, "] batch1 must be a 3D tensor, got ", a.dim(), "-D tensor");
  FW_CHECK(b.dim() == 3, "[", op, "] batch2 must be a 3D tensor, got ", b.dim(), "-D tensor");
  FW_CHECK(b.size(0) == a.size(0) && b.size(1) == a.size(2), "[", op,
           "] Expected size for first two dimensions of batch2 tensor to be: [", a.size(0), ", ", a.size(2),
           "] but got: [", b.size(0), ", ", b.size(1), "].");
  check_dtypes(op, a, b);
}

// Note [Product epilogue flags]
// attrs.flags on mm/addmm/bmm/baddbmm (Note [GEMM epilogues]): kProductRelu sends the result through
// relu before it is stored; kProductGate multiplies it by (gate > 0), the gate being an extra last
// input of the result's sizes and dtype (relu's backward: the gradient times the mask of relu's
// output). Only fw::compile sets them, on products whose result nothing else reads, in graphs that
// record no autograd (Note [Epilogues in extern products] in codegen/cpp_backend.cpp); the flagged
// forms have no backward.
ProductEpilogue epilogue_of(const OpCall& c, size_t operands) {
  ProductEpilogue ep;
  ep.relu = (c.a.flags & kProductRelu) != 0;
  const bool gated = (c.a.flags & kProductGate) != 0;
  FW_CHECK(c.in.size() == operands + gated, "[", c.def.name, "] expected ", operands + gated, " inputs, got ",
           c.in.size());
  if (gated) ep.gate = c.in[operands];
  return ep;
}

// The gate input of kProductGate matches the result (checked before any output is allocated).
void check_gate(const OpCall& c, size_t operands, const TensorMeta& out) {
  if (!(c.a.flags & kProductGate)) return;
  FW_CHECK(c.in.size() == operands + 1, "[", c.def.name, "] kProductGate without its gate input");
  const Tensor& g = c.in[operands];
  FW_CHECK(g.sizes().equals(out.sizes) && g.dtype() == out.dtype, "[", c.def.name, "] gate of shape ", g.sizes(),
           " and dtype ", dtype_name(g.dtype()), " does not match the result ", out.sizes, " ",
           dtype_name(out.dtype));
}

void mm_meta(const OpCall& c, Metas& m) {
  mm_shapes("mm", c.in[0], c.in[1]);
  m.push_back({DimVec{c.in[0].size(0), c.in[1].size(1)}, c.in[0].dtype()});
  check_gate(c, 2, m[0]);
}
void mm_kernel(const OpCall& c, Outs& o) { product("mm", o[0], c.in[0], c.in[1], 1, 0, epilogue_of(c, 2)); }

void bmm_meta(const OpCall& c, Metas& m) {
  bmm_shapes("bmm", c.in[0], c.in[1]);
  m.push_back({DimVec{c.in[0].size(0), c.in[0].size(1), c.in[1].size(2)}, c.in[0].dtype()});
  check_gate(c, 2, m[0]);
}
void bmm_kernel(const OpCall& c, Outs& o) { product("bmm", o[0], c.in[0], c.in[1], 1, 0, epilogue_of(c, 2)); }

void addmm_meta(const OpCall& c, Metas& m) {
  const char* op = c.def.name;
  bool batched = std::string_view(op) == "baddbmm";
  const Tensor& self = c.in[0];
  if (batched) bmm_shapes(op, c.in[1], c.in[2]);
  else mm_shapes(op, c.in[1], c.in[2]);
  FW_CHECK(self.dtype() == c.in[1].dtype(), "[", op, "] self and mat2 must have the same dtype, but got ",
           dtype_name(self.dtype()), " and ", dtype_name(c.in[1].dtype()));
  DimVec sizes = batched ? DimVec{c.in[1].size(0), c.in[1].size(1), c.in[2].size(2)}
                         : DimVec{c.in[1].size(0), c.in[2].size(1)};
  check_expandable(op, self, sizes);
  m.push_back({sizes, self.dtype()});
  check_gate(c, 3, m[0]);
}
// float/double: the bias is added in the GEMM's epilogue (beta * self), so out is written once;
// other dtypes copy self into out and accumulate onto it with beta.
void addmm_kernel(const OpCall& c, Outs& o) {
  ProductEpilogue ep = epilogue_of(c, 3);
  const ScalarType t = o[0].dtype();
  if (is_zero(c.a.s0)) return product(c.def.name, o[0], c.in[1], c.in[2], c.a.s1, 0, ep);
  if (t == kFloat || t == kDouble || t == kHalf || t == kBFloat16) {
    ep.bias = c.in[0].expand(o[0].sizes());
    ep.bias_scale = c.a.s0;
    return product(c.def.name, o[0], c.in[1], c.in[2], c.a.s1, 0, ep);
  }
  o[0].copy_(c.in[0].expand(o[0].sizes()));
  product(c.def.name, o[0], c.in[1], c.in[2], c.a.s1, c.a.s0, ep);
}

void dot_meta(const OpCall& c, Metas& m) {
  const Tensor &a = c.in[0], &b = c.in[1];
  FW_CHECK(a.dim() == 1 && b.dim() == 1, "[dot] 1D tensors expected, but got ", a.dim(), "D and ", b.dim(),
           "D tensors");
  FW_CHECK(a.numel() == b.numel(), "[dot] inconsistent tensor size, expected tensor [", a.numel(), "] and src [",
           b.numel(), "] to have the same number of elements, but got ", a.numel(), " and ", b.numel(),
           " elements respectively");
  FW_CHECK(a.dtype() == b.dtype(), "[dot] expected both vectors to have same dtype, but found ",
           dtype_name(a.dtype()), " and ", dtype_name(b.dtype()));
  FW_CHECK(a.dtype() != kBool, "[dot] not implemented for dtype bool");
  m.push_back({DimVec{}, a.dtype()});
}

// Float dots accumulate in double, complex in complex<double>, integers in their own type.
template <class T>
using DotAcc = std::conditional_t<std::is_floating_point_v<T>, double,
                                  std::conditional_t<is_complex_v<T>, std::complex<double>, T>>;

void dot_kernel(const OpCall& c, Outs& o) {
  ScalarType t = c.in[0].dtype();
  bool low = t == kHalf || t == kBFloat16;
  Tensor a = low ? c.in[0].to(kFloat) : c.in[0], b = low ? c.in[1].to(kFloat) : c.in[1];
  visit_all(a.dtype(), "dot", [&]<class T>() {
    const T* x = a.data_ptr<T>();
    const T* y = b.data_ptr<T>();
    int64_t sx = a.stride(0), sy = b.stride(0), n = a.numel();
    DotAcc<T> acc{};
    for (int64_t i = 0; i < n; i++) acc += DotAcc<T>(x[i * sx]) * DotAcc<T>(y[i * sy]);
    T r = T(acc);
    if (low) o[0].fill_(Scalar(r));
    else *o[0].data_ptr<T>() = r;
  });
}

OpAttrs beta_alpha(const Scalar& beta, const Scalar& alpha) {
  OpAttrs a;
  a.s0 = beta;
  a.s1 = alpha;
  return a;
}

// ---- vjps. For c = a @ b: ga = g @ b^H, gb = a^H @ g (the conjugate only matters for complex).

Tensor adjoint(const Tensor& t) {
  Tensor m = t.transpose(-2, -1);
  return t.is_complex() ? m.conj() : m;
}
Scalar conj_scalar(const Scalar& s) { return s.isComplex() ? Scalar(std::conj(s.toComplexDouble())) : s; }
// g * conj(s), skipping the multiply for s == 1.
Tensor scaled(const Tensor& g, const Scalar& s) {
  return s.toComplexDouble() == std::complex<double>(1, 0) ? g : g * conj_scalar(s);
}

// Grads of alpha * (a @ b) for the inputs at positions ia, ib (mm/bmm: 0, 1; addmm/baddbmm: 1, 2).
void product_vjp(const VjpCtx& c, const Tensor& g, size_t ia, size_t ib, const Scalar& alpha, Outs& r) {
  Tensor ga = scaled(g, alpha);
  bool batched = c.in[ia].dim() == 3;
  auto mul = [&](const Tensor& x, const Tensor& y) { return batched ? fw::bmm(x, y) : fw::mm(x, y); };
  // Note [Gradient layout of transposed operands]
  // nn::Linear multiplies by w.t(); the gradient for that operand is then computed transposed,
  // (G^H A)^H instead of A^H G, so it has w.t()'s strides and the permute's vjp hands
  // AccumulateGrad a contiguous tensor it can keep without a copy (W4: -2 ms per step).
  auto col_major = [&](const Tensor& t) {
    return !batched && t.dim() == 2 && t.size(0) > 1 && t.size(1) > 1 && t.stride(0) == 1 && t.stride(1) == t.size(0);
  };
  if (c.needs[ia])
    r[ia] = col_major(c.in[ia]) ? adjoint(mul(c.in[ib], adjoint(ga))) : mul(ga, adjoint(c.in[ib]));
  if (c.needs[ib])
    r[ib] = col_major(c.in[ib]) ? adjoint(mul(adjoint(ga), c.in[ia])) : mul(adjoint(c.in[ia]), ga);
}

void no_epilogue_vjp(const VjpCtx& c) {
  FW_CHECK(!(c.a.flags & (kProductRelu | kProductGate)),
           "[fw::compile] internal: a product with an epilogue flag has no backward (Note [Product epilogue flags])");
}

void mm_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  no_epilogue_vjp(c);
  product_vjp(c, g[0], 0, 1, 1, r);
}

void addmm_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  no_epilogue_vjp(c);
  if (c.needs[0]) r[0] = sum_to(scaled(g[0], c.a.s0), c.in[0].sizes());
  product_vjp(c, g[0], 1, 2, c.a.s1, r);
}

void dot_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  auto cj = [](const Tensor& t) { return t.is_complex() ? t.conj() : t; };
  if (c.needs[0]) r[0] = g[0] * cj(c.in[1]);
  if (c.needs[1]) r[1] = g[0] * cj(c.in[0]);
}

}  // namespace

// Each factor of a product is read only for the other factor's gradient (OpDef::vjp_reads_in_for).
void product_pair(OpDef& d, int k) {
  d.vjp_reads_in_for[k] = uint8_t(1 << (k + 1));
  d.vjp_reads_in_for[k + 1] = uint8_t(1 << k);
}
FW_DEFINE_OP(mm) { d.meta = mm_meta; d.cpu = mm_kernel; d.vjp = mm_vjp; product_pair(d, 0); }
FW_DEFINE_OP(bmm) { d.meta = bmm_meta; d.cpu = bmm_kernel; d.vjp = mm_vjp; product_pair(d, 0); }
FW_DEFINE_OP(addmm) { d.meta = addmm_meta; d.cpu = addmm_kernel; d.vjp = addmm_vjp; d.vjp_ignores_in = 1; product_pair(d, 1); }
FW_DEFINE_OP(baddbmm) { d.meta = addmm_meta; d.cpu = addmm_kernel; d.vjp = addmm_vjp; d.vjp_ignores_in = 1; product_pair(d, 1); }
FW_DEFINE_OP(dot) { d.meta = dot_meta; d.cpu = dot_kernel; d.vjp = dot_vjp; product_pair(d, 0); }

Tensor mm(const Tensor& a, const Tensor& b) { return dispatch1(OpId::mm, {a, b}, OpAttrs()); }
Tensor bmm(const Tensor& a, const Tensor& b) { return dispatch1(OpId::bmm, {a, b}, OpAttrs()); }
Tensor addmm(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) {
  return dispatch1(OpId::addmm, {self, a, b}, beta_alpha(beta, alpha));
}
Tensor baddbmm(const Tensor& self, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha) {
  return dispatch1(OpId::baddbmm, {self, a, b}, beta_alpha(beta, alpha));
}
Tensor dot(const Tensor& a, const Tensor& b) { return dispatch1(OpId::dot, {a, b}, OpAttrs()); }

Tensor mv(const Tensor& a, const Tensor& v) {
  FW_CHECK(a.dim() == 2 && v.dim() == 1, "[mv] vector + matrix @ vector expected, got ", a.dim(), "-D matrix and ",
           v.dim(), "-D vector");
  FW_CHECK(a.size(1) == v.size(0), "[mv] size mismatch, got input (", a.size(0), "x", a.size(1), ") and vec (",
           v.size(0), ")");
  AutocastOff no_autocast;  // libtorch's mv is not autocast (Note [Autocast])
  return mm(a, v.unsqueeze(1)).squeeze(1);
}

Tensor outer(const Tensor& a, const Tensor& b) {
  FW_CHECK(a.dim() == 1, "[outer] Expected 1-D argument self, but got ", a.dim(), "-D");
  FW_CHECK(b.dim() == 1, "[outer] Expected 1-D argument vec2, but got ", b.dim(), "-D");
  return a.unsqueeze(1) * b.unsqueeze(0);
}

namespace {

// Batched matmul with broadcast batch dims; a is (..., n, m) and b is (..., m, p), both >= 2-D.
Tensor batched_matmul(const Tensor& a, const Tensor& b) {
  int64_t da = a.dim(), db = b.dim();
  FW_CHECK(a.size(-1) == b.size(-2), "[matmul] mat1 and mat2 shapes cannot be multiplied (", a.size(-2), "x",
           a.size(-1), " and ", b.size(-2), "x", b.size(-1), ")");
  DimVec batch = broadcast_shapes(a.sizes().slice(0, size_t(da - 2)), b.sizes().slice(0, size_t(db - 2)), "matmul");
  int64_t nb = shape_numel(batch, "matmul");
  DimVec ea = batch, eb = batch, out = batch;
  ea.push_back(a.size(-2));
  ea.push_back(a.size(-1));
  eb.push_back(b.size(-2));
  eb.push_back(b.size(-1));
  out.push_back(a.size(-2));
  out.push_back(b.size(-1));
  Tensor a3 = a.expand(ea).reshape({nb, a.size(-2), a.size(-1)});
  Tensor b3 = b.expand(eb).reshape({nb, b.size(-2), b.size(-1)});
  return bmm(a3, b3).view(out);
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  if (FW_UNLIKELY(tls().autocast)) {  // libtorch casts at matmul, so its mv and dot branches are bfloat16 too
    Tensor a16 = autocast_down(a), b16 = autocast_down(b);
    AutocastOff off;
    return matmul(a16, b16);
  }
  int64_t da = a.dim(), db = b.dim();
  FW_CHECK(da > 0 && db > 0, "[matmul] both arguments to matmul need to be at least 1D, but they are ", da, "D and ",
           db, "D");
  if (da == 1 && db == 1) return dot(a, b);
  if (da == 2 && db == 1) return mv(a, b);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b).squeeze(0);
  if (da == 2 && db == 2) return mm(a, b);
  if (da >= 3 && db <= 2) {
    // Fold the batch dims of a into its rows: one large GEMM instead of many small ones.
    DimVec out(a.sizes().slice(0, size_t(da - 1)));
    Tensor rows = a.reshape({-1, a.size(-1)});
    if (db == 1) return mv(rows, b).view(out);
    out.push_back(b.size(1));
    FW_CHECK(a.size(-1) == b.size(0), "[matmul] mat1 and mat2 shapes cannot be multiplied (", rows.size(0), "x",
             rows.size(1), " and ", b.size(0), "x", b.size(1), ")");
    return mm(rows, b).view(out);
  }
  if (da == 1) return batched_matmul(a.unsqueeze(0), b).squeeze(-2);
  if (db == 1) return batched_matmul(a, b.unsqueeze(-1)).squeeze(-1);
  return batched_matmul(a, b);
}

Tensor linear(const Tensor& x, const Tensor& w, const Tensor& b) {
  if (FW_UNLIKELY(tls().autocast)) {  // as matmul: the bias and a 1-D input's mv are bfloat16 too
    Tensor x16 = autocast_down(x), w16 = autocast_down(w), b16 = autocast_down(b);
    AutocastOff off;
    return linear(x16, w16, b16);
  }
  FW_CHECK(w.dim() == 2, "[linear] weight must be a matrix, got ", w.dim(), "-D tensor");
  FW_CHECK(x.dim() >= 1 && x.size(-1) == w.size(1), "[linear] mat1 and mat2 shapes cannot be multiplied (",
           x.dim() >= 1 ? x.numel() / std::max<int64_t>(x.size(-1), 1) : 1, "x", x.dim() >= 1 ? x.size(-1) : 0,
           " and ", w.size(1), "x", w.size(0), ")");
  if (x.dim() == 1) {
    Tensor y = mv(w, x);
    return b.defined() ? y + b : y;
  }
  Tensor rows = x.dim() == 2 ? x : x.reshape({-1, x.size(-1)});
  Tensor y = b.defined() ? addmm(b, rows, w.t()) : mm(rows, w.t());
  if (x.dim() == 2) return y;
  DimVec out(x.sizes().slice(0, size_t(x.dim() - 1)));
  out.push_back(w.size(0));
  return y.view(out);
}

Tensor Tensor::matmul(const Tensor& o) const { return fw::matmul(*this, o); }
Tensor Tensor::mm(const Tensor& o) const { return fw::mm(*this, o); }
Tensor Tensor::bmm(const Tensor& o) const { return fw::bmm(*this, o); }
Tensor Tensor::dot(const Tensor& o) const { return fw::dot(*this, o); }
Tensor Tensor::outer(const Tensor& o) const { return fw::outer(*this, o); }

}  // namespace fw
