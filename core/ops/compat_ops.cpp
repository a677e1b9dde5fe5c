// More of libtorch's spellings (include/fw/ops_extra.h "More libtorch spellings" and the Tensor
// methods after "More libtorch forms" in include/fw/tensor.h): the elementwise torch::max/min,
// scatter with a reduce string, index_reduce, var/std with a correction, and aliases of linalg
// functions. All are composites of existing differentiable ops.
#include <algorithm>
#include <string>

#include "core/ops/composite_util.h"
#include "fw/linalg.h"
#include "fw/ops_extra.h"
#include "fw/torch_compat.h"

namespace fw {
using namespace detail;

Tensor max(const Tensor& a, const Tensor& b) { return maximum(a, b); }
Tensor min(const Tensor& a, const Tensor& b) { return minimum(a, b); }

// ---- scatter with reduce

namespace {
std::string scatter_reduction(const std::string& reduce) {
  FW_CHECK(reduce == "add" || reduce == "multiply", "[scatter] reduce argument must be either add or multiply, got '",
           reduce, "'");
  return reduce == "add" ? "sum" : "prod";
}
}  // namespace

Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) {
  return scatter_reduce(t, dim, index, src, scatter_reduction(reduce), /*include_self=*/true);
}
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value, const std::string& reduce) {
  const std::string r = scatter_reduction(reduce);
  return scatter_reduce(t, dim, index, full(index.sizes(), value, TensorOptions(t.dtype()).device(t.device())), r, true);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) const {
  return fw::scatter(*this, dim, index, src, reduce);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value, const std::string& reduce) const {
  return fw::scatter(*this, dim, index, value, reduce);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src, const std::string& reduce) const {
  return write_inplace(mut_self(), fw::scatter(*this, dim, index, src, reduce), "scatter_");
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value, const std::string& reduce) const {
  return write_inplace(mut_self(), fw::scatter(*this, dim, index, value, reduce), "scatter_");
}

// ---- index_reduce: a scatter_reduce whose index is index[i] along dim for all of source's slice i

Tensor index_reduce(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                    bool include_self) {
  const char* op = "index_reduce";
  FW_CHECK(reduce == "prod" || reduce == "mean" || reduce == "amax" || reduce == "amin", "[", op,
           "] reduce argument must be either prod, mean, amax or amin, got ", reduce);
  const int64_t d = wrap_dim(dim, std::max<int64_t>(t.dim(), 1), op);
  FW_CHECK(index.dim() <= 1, "[", op, "] Index is supposed to be a vector, got shape ", index.sizes());
  FW_CHECK(index.dtype() == kLong || index.dtype() == kInt, "[", op, "] Expected a long or int tensor for index, got ",
           dtype_str(index.dtype()));
  FW_CHECK(t.dtype() == source.dtype(), "[", op, "] self (", dtype_str(t.dtype()), ") and source (",
           dtype_str(source.dtype()), ") must have the same scalar type");
  Tensor self = t.dim() == 0 ? t.view({1}) : t;
  Tensor src = source.dim() == 0 ? source.view({1}) : source;
  FW_CHECK(src.dim() == self.dim(), "[", op, "] source ", source.sizes(), " must have as many dimensions as self ",
           t.sizes());
  FW_CHECK(index.numel() == src.size(d), "[", op, "] Number of indices (", index.numel(),
           ") should be equal to source.size(dim) (", src.size(d), ")");
  for (int64_t i = 0; i < self.dim(); i++)
    FW_CHECK(i == d || self.size(i) == src.size(i), "[", op, "] source ", source.sizes(), " and self ", t.sizes(),
             " must match in every dimension but ", d);
  std::vector<int64_t> shape(size_t(src.dim()), 1);
  shape[size_t(d)] = index.numel();
  Tensor idx = index.to(kLong).reshape(shape).expand(src.sizes());
  Tensor r = scatter_reduce(self, d, idx, src, reduce, include_self);
  return t.dim() == 0 ? r.view(IntArrayRef()) : r;
}
Tensor Tensor::index_reduce(int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                            bool include_self) const {
  return fw::index_reduce(*this, dim, index, source, reduce, include_self);
}
Tensor& Tensor::index_reduce_(int64_t dim, const Tensor& index, const Tensor& source, const std::string& reduce,
                              bool include_self) const {
  return write_inplace(mut_self(), fw::index_reduce(*this, dim, index, source, reduce, include_self), "index_reduce_");
}

// ---- var / std with a correction

namespace {
// The dims var reduces (all for nullopt or an empty list) and their element count.
int64_t reduced_count(const Tensor& t, OptionalIntArrayRef dim, std::vector<int64_t>& dims) {
  dims.clear();
  if (dim.has_value()) dims.assign(dim->begin(), dim->end());
  if (dims.empty()) return t.numel();
  int64_t n = 1;
  for (int64_t d : dims) n *= t.size(wrap_dim(d, t.dim(), "var"));
  return n;
}
}  // namespace

Tensor var(const Tensor& t, OptionalIntArrayRef dim, std::optional<int64_t> correction, bool keepdim) {
  std::vector<int64_t> dims;
  const int64_t n = reduced_count(t, dim, dims);
  const int64_t c = correction.value_or(1);
  if (c == 0 || c == 1) return var(t, IntArrayRef(dims), c == 1, keepdim);
  // The biased variance (sum of squares over N) rescaled to a denominator of max(0, N - c).
  const double scale = double(n) / double(std::max<int64_t>(0, n - c));
  return var(t, IntArrayRef(dims), false, keepdim) * scale;
}
Tensor std(const Tensor& t, OptionalIntArrayRef dim, std::optional<int64_t> correction, bool keepdim) {
  return std_from_var(var(t, dim, correction, keepdim));
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& t, OptionalIntArrayRef dim, std::optional<int64_t> correction,
                                    bool keepdim) {
  std::vector<int64_t> dims;
  reduced_count(t, dim, dims);
  return {var(t, dim, correction, keepdim), mean(t, IntArrayRef(dims), keepdim)};
}
std::tuple<Tensor, Tensor> std_mean(const Tensor& t, OptionalIntArrayRef dim, std::optional<int64_t> correction,
                                    bool keepdim) {
  auto [v, m] = var_mean(t, dim, correction, keepdim);
  return {std_from_var(v), m};
}
Tensor Tensor::var(OptionalIntArrayRef dim, std::optional<int64_t> correction, bool keepdim) const {
  return fw::var(*this, dim, correction, keepdim);
}
Tensor Tensor::std(OptionalIntArrayRef dim, std::optional<int64_t> correction, bool keepdim) const {
  return fw::std(*this, dim, correction, keepdim);
}

// ---- aliases

std::vector<Tensor> unsafe_split(const Tensor& t, int64_t split_size, int64_t dim) { return t.split(split_size, dim); }
std::vector<Tensor> unsafe_split_with_sizes(const Tensor& t, IntArrayRef sizes, int64_t dim) {
  return t.split(sizes, dim);
}
std::vector<Tensor> unsafe_chunk(const Tensor& t, int64_t chunks, int64_t dim) { return t.chunk(chunks, dim); }
Tensor matrix_power(const Tensor& t, int64_t n) { return linalg::matrix_power(t, n); }
Tensor pinverse(const Tensor& t, double rcond) { return linalg::pinv(t, rcond); }
std::tuple<Tensor, Tensor> qr(const Tensor& t, bool some) { return linalg::qr(t, some ? "reduced" : "complete"); }

// ---- small libtorch Tensor members

Tensor Tensor::pin_memory(std::optional<Device> target) const {
  FW_CHECK(defined(), "[pin_memory] tensor is undefined");
  FW_CHECK(is_cpu(), "[pin_memory] cannot pin a ", device(), " tensor: only dense CPU tensors can be pinned");
  (void)target;
  return *this;
}
bool Tensor::is_inference() const { return defined() && impl_->storage->inference; }
DeprecatedTypeProperties Tensor::type() const {
  FW_CHECK(defined(), "[type] tensor is undefined");
  return DeprecatedTypeProperties(device().type(), scalar_type());
}

static Tensor underscore_softmax(const char* op, const Tensor& t, int64_t dim, bool half_to_float, bool log) {
  std::optional<ScalarType> dt;
  if (half_to_float) {
    FW_CHECK(t.dtype() == kHalf, "[", op, "] conversion is supported for Half type only, got ", dtype_str(t.dtype()));
    dt = kFloat;
  }
  return log ? log_softmax(t, dim, dt) : softmax(t, dim, dt);
}
Tensor _softmax(const Tensor& t, int64_t dim, bool half_to_float) {
  return underscore_softmax("_softmax", t, dim, half_to_float, false);
}
Tensor _log_softmax(const Tensor& t, int64_t dim, bool half_to_float) {
  return underscore_softmax("_log_softmax", t, dim, half_to_float, true);
}
Tensor Tensor::_softmax(int64_t dim, bool half_to_float) const { return fw::_softmax(*this, dim, half_to_float); }
Tensor Tensor::_log_softmax(int64_t dim, bool half_to_float) const { return fw::_log_softmax(*this, dim, half_to_float); }

Tensor bitwise_and(const Tensor& a, const Scalar& b) { return bitwise_and(a, wrapped_scalar(b, a)); }
Tensor bitwise_or(const Tensor& a, const Scalar& b) { return bitwise_or(a, wrapped_scalar(b, a)); }
Tensor bitwise_xor(const Tensor& a, const Scalar& b) { return bitwise_xor(a, wrapped_scalar(b, a)); }
Tensor Tensor::bitwise_and(const Scalar& o) const { return fw::bitwise_and(*this, o); }
Tensor Tensor::bitwise_or(const Scalar& o) const { return fw::bitwise_or(*this, o); }
Tensor Tensor::bitwise_xor(const Scalar& o) const { return fw::bitwise_xor(*this, o); }

Tensor copysign(const Tensor& a, const Scalar& b) { return copysign(a, wrapped_scalar(b, a)); }
Tensor Tensor::copysign(const Scalar& o) const { return fw::copysign(*this, o); }

// ---- ATen's argument checks (torch_compat.h)

static std::string while_checking(CheckedFrom c) { return std::string(" (while checking arguments for ") + c + ")"; }
static void require_defined(CheckedFrom c, const TensorArg& t) {
  FW_CHECK(t.tensor.defined(), "[", c, "] Expected tensor for ", t, " to be non-null, but it was undefined",
           while_checking(c));
}
void checkDefined(CheckedFrom c, const TensorArg& t) { require_defined(c, t); }
void checkDim(CheckedFrom c, const TensorArg& t, int64_t dim) {
  require_defined(c, t);
  FW_CHECK(t->dim() == dim, "[", c, "] Expected ", dim, "-dimensional tensor, but got ", t->dim(),
           "-dimensional tensor for ", t, while_checking(c));
}
void checkDimRange(CheckedFrom c, const TensorArg& t, int64_t dim_start, int64_t dim_end) {
  require_defined(c, t);
  FW_CHECK(t->dim() >= dim_start && t->dim() < dim_end, "[", c, "] Expected ", dim_start, " to ", dim_end - 1,
           " dimensions, but got ", t->dim(), "-dimensional tensor for ", t, while_checking(c));
}
void checkSize(CheckedFrom c, const TensorArg& t, IntArrayRef sizes) {
  require_defined(c, t);
  FW_CHECK(t->sizes().equals(sizes), "[", c, "] Expected tensor of size ", sizes, ", but got tensor of size ",
           t->sizes(), " for ", t, while_checking(c));
}
void checkSize(CheckedFrom c, const TensorArg& t, int64_t dim, int64_t size) {
  require_defined(c, t);
  FW_CHECK(dim >= 0 && dim < t->dim() && t->size(dim) == size, "[", c, "] Expected tensor to have size ", size,
           " at dimension ", dim, ", but got size ", dim >= 0 && dim < t->dim() ? t->size(dim) : -1, " for ", t,
           while_checking(c));
}
void checkNumel(CheckedFrom c, const TensorArg& t, int64_t numel) {
  require_defined(c, t);
  FW_CHECK(t->numel() == numel, "[", c, "] Expected tensor for ", t, " to have ", numel,
           " elements; but it actually has ", t->numel(), " elements", while_checking(c));
}
void checkSameSize(CheckedFrom c, const TensorArg& t1, const TensorArg& t2) {
  require_defined(c, t1);
  require_defined(c, t2);
  FW_CHECK(t1->sizes().equals(t2->sizes()), "[", c, "] Expected tensor for ", t1, " to have same size as tensor for ",
           t2, "; but ", t1->sizes(), " does not equal ", t2->sizes(), while_checking(c));
}
void checkSameType(CheckedFrom c, const TensorArg& t1, const TensorArg& t2) {
  require_defined(c, t1);
  require_defined(c, t2);
  FW_CHECK(t1->type() == t2->type(), "[", c, "] Expected tensor for ", t1, " to have the same type as tensor for ", t2,
           "; but type ", t1->type(), " does not equal ", t2->type(), while_checking(c));
}
void checkScalarType(CheckedFrom c, const TensorArg& t, ScalarType s) {
  require_defined(c, t);
  FW_CHECK(t->scalar_type() == s, "[", c, "] Expected tensor for ", t, " to have scalar type ", dtype_name(s),
           "; but got ", t->type(), " instead", while_checking(c));
}
void checkContiguous(CheckedFrom c, const TensorArg& t) {
  require_defined(c, t);
  FW_CHECK(t->is_contiguous(), "[", c, "] Expected contiguous tensor, but got non-contiguous tensor for ", t,
           while_checking(c));
}
void checkAllSameType(CheckedFrom c, ArrayRef<TensorArg> tensors) {
  for (size_t i = 1; i < tensors.size(); i++) checkSameType(c, tensors[0], tensors[i]);
}

}  // namespace fw
