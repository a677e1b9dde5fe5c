// Reductions. attrs: ints = dims (empty = all), flags bit 0 = keepdim, dtype = result dtype.
#include "core/ops/reduce.h"

#include "core/convert.h"
#include "core/loops.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace detail {

DimVec reduce_dims(const Tensor& t, IntArrayRef dims, const char* op) {
  DimVec out;
  std::vector<bool> seen(std::max<int64_t>(t.dim(), 1), false);
  if (dims.empty()) {
    for (int64_t i = 0; i < t.dim(); i++) out.push_back(i);
    return out;
  }
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, t.dim(), op);
    FW_CHECK(!seen[w], "[", op, "] dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
    if (t.dim() > 0) out.push_back(w);
  }
  std::sort(out.begin(), out.end());
  return out;
}

DimVec reduced_shape(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op) {
  DimVec rd = reduce_dims(t, dims, op);
  DimVec s;
  for (int64_t i = 0; i < t.dim(); i++) {
    bool red = std::find(rd.begin(), rd.end(), i) != rd.end();
    if (!red) s.push_back(t.sizes()[i]);
    else if (keepdim) s.push_back(1);
  }
  return s;
}

ReducePlan make_reduce_plan(const Tensor& t, IntArrayRef dims, bool keepdim, const char* op) {
  ReducePlan p;
  DimVec rd = reduce_dims(t, dims, op);
  p.out_sizes = reduced_shape(t, dims, keepdim, op);
  DimVec perm;
  for (int64_t i = 0; i < t.dim(); i++)
    if (std::find(rd.begin(), rd.end(), i) == rd.end()) {
      perm.push_back(i);
      p.outer *= t.sizes()[i];
    }
  for (int64_t d : rd) {
    perm.push_back(d);
    p.inner *= t.sizes()[d];
  }
  Tensor x = t.dim() == 0 ? t.reshape({1}) : t.permute(perm);
  p.rows = x.contiguous().view({p.outer, p.inner});
  return p;
}

}  // namespace detail

namespace {

ScalarType sum_dtype(const Tensor& t, const OpAttrs& a) {
  if (a.has_dtype()) return a.dtype;
  return is_integral(t.dtype(), true) ? kLong : t.dtype();
}

void sum_meta(const OpCall& c, Metas& m) {
  m.push_back({reduced_shape(c.in[0], c.a.ints, c.a.flags & 1, "sum"), sum_dtype(c.in[0], c.a)});
}

// Float sums accumulate in double per row (exact enough to match PyTorch's cascade sum to
// float rounding); integer sums in int64 (wrapping like PyTorch).
void sum_kernel(const OpCall& c, Outs& o) {
  ScalarType rt = o[0].dtype();
  ScalarType ct = (rt == kHalf || rt == kBFloat16) ? kFloat : rt;
  ReducePlan p = make_reduce_plan(cast(c.in[0], ct), c.a.ints, c.a.flags & 1, "sum");
  Tensor res = make_tensor({p.outer}, ct);
  visit_all(ct, "sum", [&]<class T>() {
    const T* x = p.rows.data_ptr<T>();
    T* y = res.data_ptr<T>();
    int64_t inner = p.inner;
    parallel_for(0, p.outer, std::max<int64_t>(1, kGrainSize / std::max<int64_t>(inner, 1)), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; i++) {
        const T* r = x + i * inner;
        if constexpr (std::is_floating_point_v<T>) {
          double acc = 0;
          for (int64_t j = 0; j < inner; j++) acc += double(r[j]);
          y[i] = T(acc);
        } else if constexpr (std::is_same_v<T, complex64>) {
          std::complex<double> acc = 0;
          for (int64_t j = 0; j < inner; j++) acc += std::complex<double>(r[j]);
          y[i] = complex64(acc);
        } else {
          int64_t acc = 0;
          for (int64_t j = 0; j < inner; j++) acc += int64_t(r[j]);
          y[i] = T(acc);
        }
      }
    });
  });
  o[0].copy_(res.view(o[0].sizes()));
}

OpAttrs reduce_attrs(IntArrayRef dims, bool keepdim, std::optional<ScalarType> dtype) {
  OpAttrs a;
  a.ints = DimVec(dims);
  a.flags = keepdim ? 1 : 0;
  if (dtype) a.dtype = *dtype;
  return a;
}

}  // namespace

FW_DEFINE_OP(sum) { d.meta = sum_meta; d.cpu = sum_kernel; d.functor = "Add"; }

Tensor sum(const Tensor& t, std::optional<ScalarType> dtype) { return dispatch1(OpId::sum, {t}, reduce_attrs({}, false, dtype)); }
Tensor sum(const Tensor& t, IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) {
  return dispatch1(OpId::sum, {t}, reduce_attrs(dim, keepdim, dtype));
}
Tensor Tensor::sum(std::optional<ScalarType> dtype) const { return fw::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<ScalarType> dtype) const {
  return fw::sum(*this, dim, keepdim, dtype);
}

}  // namespace fw
