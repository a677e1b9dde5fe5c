// Tensor::index / index_put_ / operator[](Tensor): PyTorch indexing lowered to view ops and the
// index / index_put primitives of core/ops/index.cpp.
//
// Note [Indexing lowering]
// The entries apply left to right to a running view: an integer selects (its dim goes away), a
// slice slices, None unsqueezes, the first Ellipsis skips the dims the other entries leave
// unconsumed, a bool inserts a size-1 dim indexed by [0] (true) or [] (false). Tensor entries
// are recorded with the dim of the view they index: int64 tensors as they are, bool/uint8 masks
// as the columns of their nonzero() (a k-dim mask consumes k dims, as in NumPy; PyTorch 1.13
// advances one dim only, which misplaces entries after a multi-dim mask), 0-dim integer tensors
// select like integers. With no tensor entry the result is the view itself, aliasing the input
// as in PyTorch; otherwise the recorded tensors go to the index primitive, which gathers a copy.
#include "core/op.h"
#include "fw/indexing.h"

namespace fw {
using namespace detail;
using indexing::TensorIndex;
using Kind = TensorIndex::Kind;

indexing::TensorIndex::TensorIndex(const char* s) : kind(Kind::Ellipsis) {
  FW_CHECK(std::string(s) == "...", "[index] expected \"...\" to represent an ellipsis, got \"", s, "\"");
}

namespace {

struct Lowered {
  Tensor view;              // the input after the basic entries
  std::vector<Tensor> idx;  // int64 index tensors
  DimVec dims;              // the dim of `view` each one indexes

  void record(Tensor t, int64_t dim) {
    idx.push_back(std::move(t));
    dims.push_back(dim);
  }
};

bool is_mask(const Tensor& t) { return t.dtype() == kBool || t.dtype() == kByte; }

int64_t consumed_dims(ArrayRef<TensorIndex> list) {
  int64_t n = 0;
  for (auto& e : list) {
    if (e.kind == Kind::Integer || e.kind == Kind::Slice) n++;
    else if (e.kind == Kind::Tensor) n += is_mask(e.tensor) ? e.tensor.dim() : 1;
  }
  return n;
}

// The index a bool entry stands for: [0] keeps the inserted dim, [] empties it.
Tensor bool_index(bool b) {
  Tensor t = make_tensor({b ? 1 : 0}, kLong);
  if (b) t.zero_();
  return t;
}

void lower_tensor(Lowered& L, const Tensor& t, int64_t& dim) {
  FW_CHECK(t.defined(), "[index] index tensor is undefined");
  if (is_mask(t)) {
    if (t.dim() == 0) {
      L.view = L.view.unsqueeze(dim);
      L.record(bool_index(t.item<bool>()), dim++);
      return;
    }
    for (int64_t j = 0; j < t.dim(); j++)
      FW_CHECK(dim + j < L.view.dim() && L.view.sizes()[dim + j] == t.sizes()[j], "[index] The shape of the mask ",
               t.sizes(), " at index ", j, " does not match the shape of the indexed tensor ", L.view.sizes(),
               " at index ", dim + j);
    Tensor nz = nonzero(t);
    for (int64_t j = 0; j < t.dim(); j++) L.record(nz.select(1, j), dim + j);
    dim += t.dim();
    return;
  }
  FW_CHECK(t.dtype() == kLong || (t.dim() == 0 && is_integral(t.dtype())),
           "[index] tensors used as indices must be long, byte or bool tensors, got ", dtype_str(t.dtype()));
  if (t.dim() == 0) {
    L.view = L.view.select(dim, t.item<int64_t>());
    return;
  }
  L.record(t, dim++);
}

// A slice that keeps its whole dim leaves the view as it is, so that index_put_ through
// [:, idx] writes into the tensor itself rather than into a view of it (autograd accepts the
// former on non-leaf tensors, not the latter).
bool is_full_slice(const indexing::Slice& s, const Tensor& view, int64_t dim) {
  FW_CHECK(dim < view.dim(), "[index] too many indices for tensor of dimension ", view.dim());
  int64_t n = view.sizes()[dim];
  return s.start_.value_or(0) == 0 && s.step_.value_or(1) == 1 && s.stop_.value_or(INT64_MAX) >= n;
}

Lowered lower(const Tensor& self, ArrayRef<TensorIndex> list) {
  int64_t used = consumed_dims(list);
  FW_CHECK(used <= self.dim(), "[index] too many indices for tensor of dimension ", self.dim());
  Lowered L{self, {}, {}};
  int64_t dim = 0;
  bool seen_ellipsis = false;
  for (auto& e : list) {
    switch (e.kind) {
      case Kind::Integer:
        L.view = L.view.select(dim, e.integer);
        break;
      case Kind::Slice: {
        int64_t step = e.slice.step_.value_or(1);
        FW_CHECK(step > 0, "[index] step must be greater than zero, got ", step);
        if (!is_full_slice(e.slice, L.view, dim))
          L.view = L.view.slice(dim, e.slice.start_.value_or(0), e.slice.stop_.value_or(INT64_MAX), step);
        dim++;
        break;
      }
      case Kind::None:
        L.view = L.view.unsqueeze(dim++);
        break;
      case Kind::Ellipsis:
        if (!seen_ellipsis) dim += self.dim() - used;
        seen_ellipsis = true;
        break;
      case Kind::Boolean:
        L.view = L.view.unsqueeze(dim);
        L.record(bool_index(e.boolean), dim++);
        break;
      case Kind::Tensor:
        lower_tensor(L, e.tensor, dim);
        break;
    }
  }
  return L;
}

std::vector<Tensor> with_indices(std::vector<Tensor> head, const Lowered& L) {
  head.insert(head.end(), L.idx.begin(), L.idx.end());
  return head;
}

// A [1, ..., 1, n] value fits an [n] target: leading size-1 dims are dropped, as in PyTorch.
Tensor strip_leading_ones(const Tensor& v) {
  Tensor r = v;
  while (r.dim() > 0 && r.sizes()[0] == 1) r = r.squeeze(0);
  return r;
}

void put_lowered(const Lowered& L, const Tensor& value, bool accumulate = false) {
  OpAttrs a;
  a.ints = L.dims;
  a.flags = accumulate ? 1 : 0;  // index_put's accumulate flag (core/ops/index.cpp)
  dispatch_into(OpId::index_put, with_indices({L.view, value}, L), a, L.view);
}

// libtorch's optional-tensor index list: nullopt stands for a full slice.
std::vector<TensorIndex> from_optional(const std::vector<std::optional<Tensor>>& indices) {
  std::vector<TensorIndex> list;
  for (auto& t : indices) list.push_back(t ? TensorIndex(*t) : TensorIndex(indexing::Slice()));
  return list;
}

}  // namespace

Tensor index(const Tensor& self, const std::vector<std::optional<Tensor>>& indices) {
  return self.index(from_optional(indices));
}

Tensor index_put(const Tensor& self, const std::vector<std::optional<Tensor>>& indices, const Tensor& values,
                 bool accumulate) {
  FW_CHECK(values.defined(), "[index_put] value tensor is undefined");
  auto list = from_optional(indices);
  Lowered L = lower(self, list);
  FW_CHECK(!L.idx.empty(), "[index_put] expected at least one index tensor");
  OpAttrs a;
  a.ints = L.dims;
  a.flags = accumulate ? 1 : 0;  // index_put's accumulate flag (core/ops/index.cpp)
  if (L.view.is_same(self)) return dispatch1(OpId::index_put, with_indices({self, values}, L), a);
  Tensor out = self.clone();
  Lowered M = lower(out, list);
  dispatch_into(OpId::index_put, with_indices({M.view, values}, M), a, M.view);
  return out;
}

Tensor Tensor::index(ArrayRef<TensorIndex> list) const {
  Lowered L = lower(*this, list);
  if (L.idx.empty()) return L.view.is_same(*this) ? view(sizes()) : L.view;
  OpAttrs a;
  a.ints = L.dims;
  return dispatch1(OpId::index, with_indices({L.view}, L), a);
}
Tensor Tensor::index(std::initializer_list<TensorIndex> list) const { return index(ArrayRef<TensorIndex>(list)); }
Tensor Tensor::operator[](const Tensor& idx) const { return index({TensorIndex(idx)}); }

Tensor& Tensor::index_put_(ArrayRef<TensorIndex> list, const Tensor& v) const {
  FW_CHECK(v.defined(), "[index_put_] value tensor is undefined");
  Lowered L = lower(*this, list);
  Tensor value = strip_leading_ones(v);
  if (L.idx.empty()) L.view.copy_(value);
  else put_lowered(L, value);
  return mut_self();
}
Tensor& Tensor::index_put_(ArrayRef<TensorIndex> list, const Scalar& v) const {
  Lowered L = lower(*this, list);
  if (L.idx.empty()) {
    L.view.fill_(v);
    return mut_self();
  }
  Tensor value = make_tensor({}, dtype());
  value.fill_(v);
  put_lowered(L, value);
  return mut_self();
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> list, const Tensor& v) const {
  return index_put_(ArrayRef<TensorIndex>(list), v);
}
Tensor& Tensor::index_put_(std::initializer_list<TensorIndex> list, const Scalar& v) const {
  return index_put_(ArrayRef<TensorIndex>(list), v);
}
Tensor& Tensor::index_put_(const std::vector<std::optional<Tensor>>& indices, const Tensor& v, bool accumulate) const {
  FW_CHECK(v.defined(), "[index_put_] value tensor is undefined");
  Lowered L = lower(*this, from_optional(indices));
  FW_CHECK(!L.idx.empty(), "[index_put_] expected at least one index tensor");
  put_lowered(L, v, accumulate);
  return mut_self();
}

}  // namespace fw
