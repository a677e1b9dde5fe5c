// Tensor handle basics: metadata, conversion, copy, fill, autograd fields, operators.
#include "core/convert.h"
#include "core/layout.h"
#include "core/loops.h"
#include "core/op.h"
#include "core/ops/composite_util.h"
#include "core/visit.h"

namespace fw {

using namespace detail;

ScalarType Scalar::type() const {
  switch (tag_) {
    case Tag::Bool: return kBool;
    case Tag::Int: return kLong;
    case Tag::Double: return get_default_dtype();
    default: return to_complex_type(get_default_dtype());
  }
}

Scalar Scalar::operator-() const {
  switch (tag_) {
    case Tag::Bool: detail::throw_error("[neg] negation of a bool scalar is not supported");
    case Tag::Int: return Scalar(-v_.i);
    case Tag::Double: return Scalar(-v_.d);
    default: return Scalar(std::complex<double>(-v_.c[0], -v_.c[1]));
  }
}

void Scalar::overflow(const char* type, const char* op) const {
  std::ostringstream os;
  if (op) os << "[" << op << "] ";
  os << "value cannot be converted to type " << type << " without overflow: " << *this;
  detail::throw_error(os.str());
}

std::ostream& operator<<(std::ostream& os, const Scalar& s) {
  if (s.isComplex()) return os << s.toComplexDouble();
  if (s.isFloatingPoint()) return os << s.toDouble();
  if (s.isBoolean()) return os << (s.toBool() ? "true" : "false");
  return os << s.toLong();
}

void TensorImpl::refresh() {
  numel = 1;
  for (int64_t s : sizes) numel *= s;
  contiguous = true;
  int64_t expected = 1;
  for (int64_t i = int64_t(sizes.size()) - 1; i >= 0; i--) {
    if (sizes[i] == 1) continue;
    if (strides[i] != expected) { contiguous = false; break; }
    expected *= sizes[i];
  }
}

int64_t Tensor::size(int64_t d) const { return impl_->sizes[wrap_dim(d, dim(), "size")]; }
int64_t Tensor::stride(int64_t d) const { return impl_->strides[wrap_dim(d, dim(), "stride")]; }

Tensor& Tensor::operator=(const Tensor& o) && { return copy_(o); }
Tensor& Tensor::operator=(Tensor&& o) && { return copy_(o); }
Tensor& Tensor::operator=(const Scalar& v) && { return fill_(v); }

Scalar Tensor::item() const {
  FW_CHECK(numel() == 1, "[item] a Tensor with ", numel(), " elements cannot be converted to Scalar");
  DataAccessScope access("item()");
  return visit_storage(dtype(), "item", [&]<class T>() -> Scalar {
    T v = *static_cast<const T*>(data_ptr());
    if constexpr (std::is_same_v<T, bool>) return Scalar(v);
    else if constexpr (std::is_integral_v<T>) return Scalar(int64_t(v));
    else if constexpr (is_complex_v<T>) return Scalar(v);
    else return Scalar(double(v));
  });
}

Tensor& Tensor::requires_grad_(bool r) const {
  FW_CHECK(!r || is_floating_point() || is_complex(),
           "[requires_grad_] only Tensors of floating point and complex dtype can require gradients, got ",
           dtype_str(dtype()));
  if (!impl_->autograd) {
    if (!r) return mut_self();
    impl_->autograd = std::make_unique<AutogradMeta>();
  }
  FW_CHECK(r || is_leaf(),
           "[requires_grad_] you can only change requires_grad flags of leaf variables. If you want to use a "
           "computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().");
  impl_->autograd->requires_grad = r;
  return mut_self();
}

Tensor& Tensor::grad() const {
  if (!impl_->autograd) {
    static thread_local Tensor undefined;
    undefined = Tensor();  // whatever a caller assigned through an earlier reference is dropped
    return undefined;
  }
  return impl_->autograd->grad;
}

Tensor Tensor::detach() const {
  return make_view(*this, sizes(), strides(), storage_offset());
}

Tensor Tensor::data() const {
  Tensor r = detach();
  r.impl()->version_counter = make_intrusive<VersionCounter>();
  return r;
}

Tensor& Tensor::detach_() const {
  FW_CHECK(!impl_->view_base, "[detach_] Can't detach views in-place (a view of shape ", sizes(),
           "). Use detach() instead.");
  impl_->autograd.reset();
  return mut_self();
}

Tensor Tensor::to(ScalarType t, bool, bool copy) const {
  if (t == dtype() && !copy) return *this;
  OpAttrs a;
  a.dtype = t;
  a.flags = kCopyPreserve;  // MemoryFormat::Preserve, as libtorch's to(): a permuted tensor keeps its layout
  return dispatch1(OpId::copy, {*this}, a);
}
Tensor Tensor::to(Device d, ScalarType t, bool nb, bool copy) const {
  FW_CHECK(d.is_cpu(), "[to] device ", d, " is not available in this build of fw");
  return to(t, nb, copy);
}
Tensor Tensor::broadcast_to(IntArrayRef size) const { return fw::broadcast_to(*this, size); }
Tensor Tensor::absolute() const { return fw::absolute(*this); }
Tensor& Tensor::absolute_() const { return abs_(); }
Tensor Tensor::to(Device d, bool nb, bool copy) const { return to(d, dtype(), nb, copy); }
Tensor Tensor::to(const TensorOptions& o, bool nb, bool copy) const {
  return to(o.device(), o.has_dtype() ? o.dtype() : dtype(), nb, copy);
}
Tensor Tensor::to(const Tensor& other, bool nb, bool copy) const { return to(other.device(), other.dtype(), nb, copy); }

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return dispatch1(OpId::copy, {*this}, OpAttrs());
}

// Laid out like the input (MemoryFormat::Preserve, Note [Preserved layouts]).
Tensor Tensor::clone() const {
  OpAttrs a;
  a.flags = kCopyPreserve;
  return dispatch1(OpId::copy, {*this}, a);
}

Tensor& Tensor::copy_(const Tensor& src, bool) const {
  FW_CHECK(src.defined(), "[copy_] source tensor is undefined");
  check_inference_write(*this, "copy_");
  check_no_internal_overlap(*this, "copy_");
  if (is_same(src)) return mut_self();
  Tensor s = src;
  if (!s.sizes().equals(sizes())) {
    DimVec b = broadcast_shapes(sizes(), s.sizes(), "copy_");
    FW_CHECK(b == DimVec(sizes()), "[copy_] source of shape ", s.sizes(),
             " is not broadcastable to the destination shape ", sizes());
    s = s.expand(sizes());
  }
  if (FW_UNLIKELY(tls().tracer != nullptr)) {  // fw::compile: recorded like any in-place op
    OpAttrs a;
    a.dtype = dtype();
    dispatch_into(OpId::copy, {s}, a, *this);
    return mut_self();
  }
  if (FW_UNLIKELY(g_autograd != nullptr) && is_grad_enabled() &&
      (s.requires_grad() || requires_grad() || base_requires_grad(*this))) {
    g_autograd->check_inplace(op_def(OpId::copy), *this);
    Tensor r = s.to(dtype(), false, /*copy=*/true);
    {
      AutoGradMode off(false);
      copy_(r);
    }
    impl()->storage->last_writer = "copy_";
    if (impl()->view_base) g_autograd->rebase_view(*this, r);
    else rebind_grad(*this, r);
    return mut_self();
  }
  // Overlapping source and destination with different layouts: go through a temporary.
  if (s.is_alias_of(*this) && (s.storage_offset() != storage_offset() || !s.strides().equals(strides())))
    s = s.clone();
  OpAttrs a;
  a.dtype = dtype();
  Outs outs;
  outs.push_back(*this);
  OpCall c{op_def(OpId::copy), ArrayRef<Tensor>(&s, 1), a};
  op_def(OpId::copy).cpu(c, outs);
  bump_version(*this, "copy_");
  return mut_self();
}

Tensor& Tensor::fill_(const Scalar& v) const {
  check_inference_write(*this, "fill_");
  if (FW_UNLIKELY(tls().tracer != nullptr)) {  // fw::compile: recorded like any in-place op
    OpAttrs a;
    a.s0 = v;
    a.ints = DimVec(sizes());
    a.dtype = dtype();
    dispatch_into(OpId::fill, {}, a, *this);
    return mut_self();
  }
  if (FW_UNLIKELY(g_autograd != nullptr) && is_grad_enabled() && requires_grad()) {
    g_autograd->check_inplace(op_def(OpId::fill), *this);
    Tensor r = full({}, v, dtype()).expand(sizes());
    return copy_(r);
  }
  OpAttrs a;
  a.s0 = v;
  Outs outs;
  outs.push_back(*this);
  OpCall c{op_def(OpId::fill), {}, a};
  op_def(OpId::fill).cpu(c, outs);
  bump_version(*this, "fill_");
  return mut_self();
}

Tensor& Tensor::fill_(const Tensor& v) const {
  FW_CHECK(v.dim() == 0, "[fill_] only supports 0-dimension value tensor but got tensor with ", v.dim(),
           " dimensions");
  return fill_(v.item());
}

Tensor& Tensor::zero_() const { return fill_(Scalar(0)); }

// ---- operators
Tensor operator-(const Tensor& a) { return a.neg(); }
Tensor operator~(const Tensor& a) { return a.bitwise_not(); }
#define FW_OPERATOR(op, fn)                                                           \
  Tensor operator op(const Tensor& a, const Tensor& b) { return fw::fn(a, b); }       \
  Tensor operator op(const Tensor& a, const Scalar& b) { return fw::fn(a, b); }
FW_OPERATOR(+, add) FW_OPERATOR(-, sub) FW_OPERATOR(*, mul) FW_OPERATOR(/, div)
FW_OPERATOR(%, remainder) FW_OPERATOR(==, eq) FW_OPERATOR(!=, ne) FW_OPERATOR(<, lt)
FW_OPERATOR(<=, le) FW_OPERATOR(>, gt) FW_OPERATOR(>=, ge)
#undef FW_OPERATOR
Tensor operator&(const Tensor& a, const Tensor& b) { return bitwise_and(a, b); }
Tensor operator|(const Tensor& a, const Tensor& b) { return bitwise_or(a, b); }
Tensor operator^(const Tensor& a, const Tensor& b) { return bitwise_xor(a, b); }
// A scalar operand as a 0-dim tensor of the scalar's own type (full, not scalar_tensor).
Tensor operator&(const Tensor& a, const Scalar& b) { return bitwise_and(a, full({}, b)); }
Tensor operator|(const Tensor& a, const Scalar& b) { return bitwise_or(a, full({}, b)); }
Tensor operator^(const Tensor& a, const Scalar& b) { return bitwise_xor(a, full({}, b)); }
Tensor operator&(const Scalar& a, const Tensor& b) { return bitwise_and(full({}, a), b); }
Tensor operator|(const Scalar& a, const Tensor& b) { return bitwise_or(full({}, a), b); }
Tensor operator^(const Scalar& a, const Tensor& b) { return bitwise_xor(full({}, a), b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Scalar& a, const Tensor& b) { return rsub(b, a); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
// A scalar left operand is a wrapped number of the result dtype, so 0.8 / x keeps double
// precision for a float64 x.
Tensor operator/(const Scalar& a, const Tensor& b) { return div(detail::wrapped_scalar(a, b), b); }
Tensor operator%(const Scalar& a, const Tensor& b) { return remainder(detail::wrapped_scalar(a, b), b); }
Tensor operator==(const Scalar& a, const Tensor& b) { return eq(b, a); }
Tensor operator!=(const Scalar& a, const Tensor& b) { return ne(b, a); }
Tensor operator<(const Scalar& a, const Tensor& b) { return gt(b, a); }
Tensor operator<=(const Scalar& a, const Tensor& b) { return ge(b, a); }
Tensor operator>(const Scalar& a, const Tensor& b) { return lt(b, a); }
Tensor operator>=(const Scalar& a, const Tensor& b) { return le(b, a); }

}  // namespace fw
