// Index ops: index_select, gather, scatter(_add), index_add, masked_select, nonzero, take, the
// advanced-indexing primitives index / index_put (core/indexing.cpp lowers Tensor::index to
// them), and the composites embedding, one_hot and where(cond).
//
// Note [Index kernels]
// A kernel sees its data tensor through a view whose stride along the indexed dim is zero (for
// advanced indexing: whose indexed dims are replaced by the broadcast index shape, stride zero)
// and adds index * stride itself, so the strided loops of core/loops.h walk data, index and
// output together, non-contiguous operands included, without copies. Every index value is
// checked against its dim before the element it names is touched. Kernels that may write one
// element twice (scatter, scatter_add, index_add, index_put) run serially, so duplicates act as
// in a sequential loop: the last write wins and every addition lands.
//
// Note [Data-dependent shapes]
// masked_select and nonzero size their output from the data, so their meta reads the input
// values. A tracer cannot run them on placeholders and has to end its graph there.
#include <cstring>
#include <string_view>

#include "core/convert.h"
#include "core/loops.h"
#include "core/op.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

constexpr int64_t kSerial = INT64_MAX;  // a grain that keeps run_loop on one thread
constexpr uint32_t kAccumulate = 1;     // index_put: add instead of assign

// Element moves need only the element width.
template <class F>
void visit_width(ScalarType t, F&& f) {
  switch (element_size(t)) {
    case 1: return f.template operator()<uint8_t>();
    case 2: return f.template operator()<uint16_t>();
    case 4: return f.template operator()<uint32_t>();
    case 8: return f.template operator()<uint64_t>();
    default: return f.template operator()<complex128>();  // 16 bytes
  }
}

template <class T>
inline T add_elems(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a || b;
  else if constexpr (is_low_float_v<T>) return T(float(a) + float(b));
  else return T(a + b);
}
template <class T>
inline T mul_elems(T a, T b) {
  if constexpr (std::is_same_v<T, bool>) return a && b;
  else if constexpr (is_low_float_v<T>) return T(float(a) * float(b));
  else return T(a * b);
}
template <class T>
T scalar_as(const Scalar& s) {
  if constexpr (is_low_float_v<T>) return T(s.toFloat());
  else return s.to<T>();
}

// libtorch raises IndexError for an index out of bounds in every indexing op except the gather and
// scatter family (take_along_dim included), whose check is a plain TORCH_CHECK.
[[noreturn]] void out_of_bounds(const char* op, int64_t k, int64_t dim, int64_t n) {
  const std::string_view o(op);
  if (o.starts_with("gather") || o.starts_with("scatter") || o.starts_with("take_along_dim"))
    throw_error("[", op, "] index ", k, " is out of bounds for dimension ", dim, " with size ", n);
  throw_error_as<IndexError>("[", op, "] index ", k, " is out of bounds for dimension ", dim, " with size ", n);
}
inline int64_t read_index(const char* p) { return *reinterpret_cast<const int64_t*>(p); }
template <class T>
inline T& at(char* p) { return *reinterpret_cast<T*>(p); }
template <class T>
inline T load(const char* p) { return *reinterpret_cast<const T*>(p); }

bool is_index_dtype(ScalarType t, bool allow_int) { return t == kLong || (allow_int && t == kInt); }
int64_t nonempty_dim(const Tensor& t) { return std::max<int64_t>(t.dim(), 1); }
int64_t nonempty_size(const Tensor& t, int64_t d) { return t.dim() == 0 ? 1 : t.sizes()[d]; }

// 0-dim tensors act as one-element vectors in the gather/scatter family.
Tensor as_1d(const Tensor& t) { return t.dim() == 0 ? make_view(t, {1}, {1}, t.storage_offset()) : t; }
// t seen with `sizes` (each within t's own) and stride 0 along dim.
Tensor along_dim(const Tensor& t, IntArrayRef sizes, int64_t dim) {
  DimVec st(t.strides());
  st[dim] = 0;
  return make_view(t, sizes, st, t.storage_offset());
}
// A 1-D index spread over `sizes`: stride 0 except along dim.
Tensor index_along(const Tensor& idx, IntArrayRef sizes, int64_t dim) {
  DimVec st(sizes.size(), 0);
  st[dim] = idx.strides()[0];
  return make_view(idx, sizes, st, idx.storage_offset());
}

// One run of a gather loop: p = {out, data, index}, data element = data + index * unit bytes.
// Check: bounds-check each index against [0, n) (dim names it in the error). Runs with one
// index (rows) become memcpy, runs along the indexed dim read the data at a fixed base.
template <class T, bool Check>
inline void gather_run(char** p, const int64_t* s, int64_t m, int64_t unit, int64_t n, int64_t dim, const char* op) {
  if (s[2] == 0) {
    int64_t k = read_index(p[2]);
    if (Check && (k < 0 || k >= n)) out_of_bounds(op, k, dim, n);
    const char* src = p[1] + k * unit;
    if (s[0] == int64_t(sizeof(T)) && s[1] == int64_t(sizeof(T))) {
      std::memcpy(p[0], src, size_t(m) * sizeof(T));
      return;
    }
    for (int64_t i = 0; i < m; i++) at<T>(p[0] + i * s[0]) = load<T>(src + i * s[1]);
    return;
  }
  if (s[0] == int64_t(sizeof(T)) && s[1] == 0 && s[2] == int64_t(sizeof(int64_t))) {
    T* out = reinterpret_cast<T*>(p[0]);
    const int64_t* ix = reinterpret_cast<const int64_t*>(p[2]);
    for (int64_t i = 0; i < m; i++) {
      if (Check && (ix[i] < 0 || ix[i] >= n)) out_of_bounds(op, ix[i], dim, n);
      out[i] = load<T>(p[1] + ix[i] * unit);
    }
    return;
  }
  for (int64_t i = 0; i < m; i++) {
    int64_t k = read_index(p[2] + i * s[2]);
    if (Check && (k < 0 || k >= n)) out_of_bounds(op, k, dim, n);
    at<T>(p[0] + i * s[0]) = load<T>(p[1] + i * s[1] + k * unit);
  }
}

// Checks every value of an int64 index tensor against [0, n).
void check_indices(const Tensor& idx, int64_t n, int64_t dim, const char* op) {
  auto L = make_loop<1>({&idx});
  run_loop<1>(L, [&](char** p, const int64_t* s, int64_t m) {
    for (int64_t i = 0; i < m; i++) {
      int64_t k = read_index(p[0] + i * s[0]);
      if (k < 0 || k >= n) out_of_bounds(op, k, dim, n);
    }
  });
}

// Number of nonzero elements of t (any layout, broadcast views included).
int64_t count_nonzero_elems(const Tensor& t) {
  int64_t count = 0;
  auto L = make_loop<1>({&t});
  visit_storage(t.dtype(), "nonzero", [&]<class T>() {
    run_loop<1>(L, [&](char** p, const int64_t* s, int64_t m) {
      for (int64_t i = 0; i < m; i++) count += is_nonzero(load<T>(p[0] + i * s[0]));
    }, kSerial);
  });
  return count;
}

// ---- index_select: i0 = dim; in = {self, index}.
void index_select_meta(const OpCall& c, Metas& m) {
  const Tensor &self = c.in[0], &idx = c.in[1];
  FW_CHECK(idx.dim() <= 1, "[index_select] Index is supposed to be a vector, got index of shape ", idx.sizes());
  FW_CHECK(is_index_dtype(idx.dtype(), true), "[index_select] Expected dtype int32 or int64 for index, got ",
           dtype_str(idx.dtype()));
  int64_t dim = wrap_dim(c.a.i0, self.dim(), "index_select");
  FW_CHECK(self.dim() > 0 || idx.numel() > 0, "[index_select] index of a 0-dim tensor must not be empty");
  DimVec s(self.sizes());
  if (self.dim() > 0) s[dim] = idx.numel();
  m.push_back({s, self.dtype()});
}
void index_select_kernel(const OpCall& c, Outs& o) {
  Tensor self = as_1d(c.in[0]), idx = cast(c.in[1], kLong).reshape({-1}), out = as_1d(o[0]);
  int64_t dim = wrap_dim(c.a.i0, self.dim(), "index_select");
  check_indices(idx, self.sizes()[dim], dim, "index_select");
  if (out.numel() == 0) return;
  Tensor src = along_dim(self, out.sizes(), dim), iv = index_along(idx, out.sizes(), dim);
  int64_t sd = self.strides()[dim] * self.element_size();
  auto L = make_loop<3>({&out, &src, &iv});
  visit_width(self.dtype(), [&]<class T>() {
    run_loop<3>(L, [&](char** p, const int64_t* s, int64_t m) { gather_run<T, false>(p, s, m, sd, 0, dim, ""); });
  });
}

// ---- gather / scatter / scatter_add: i0 = dim; in = {self, index[, src]}; scatter without src
// writes the value attrs.s0. An empty index skips the shape checks, as in PyTorch.
void gather_meta(const OpCall& c, Metas& m) {
  const Tensor &self = c.in[0], &idx = c.in[1];
  FW_CHECK(idx.dtype() == kLong, "[gather] Expected dtype int64 for index, got ", dtype_str(idx.dtype()));
  int64_t dim = wrap_dim(c.a.i0, self.dim(), "gather");
  if (idx.numel() > 0) {
    FW_CHECK(nonempty_dim(idx) == nonempty_dim(self), "[gather] Index tensor must have the same number of dimensions "
             "as input tensor, got index ", idx.sizes(), " and input ", self.sizes());
    for (int64_t d = 0; d < nonempty_dim(self); d++)
      FW_CHECK(d == dim || nonempty_size(idx, d) <= nonempty_size(self, d), "[gather] Size does not match at dimension ",
               d, " expected index ", idx.sizes(), " to be smaller than self ", self.sizes(), " apart from dimension ", dim);
  }
  m.push_back({DimVec(idx.sizes()), self.dtype()});
}
void gather_kernel(const OpCall& c, Outs& o) {
  if (o[0].numel() == 0) return;
  Tensor self = as_1d(c.in[0]), idx = as_1d(c.in[1]), out = as_1d(o[0]);
  int64_t dim = wrap_dim(c.a.i0, self.dim(), "gather");
  int64_t n = self.sizes()[dim], sd = self.strides()[dim] * self.element_size();
  Tensor src = along_dim(self, idx.sizes(), dim);
  auto L = make_loop<3>({&out, &src, &idx});
  visit_width(self.dtype(), [&]<class T>() {
    run_loop<3>(L, [&](char** p, const int64_t* s, int64_t m) { gather_run<T, true>(p, s, m, sd, n, dim, "gather"); });
  });
}

void scatter_meta(const OpCall& c, Metas& m) {
  const char* op = c.def.name;
  const Tensor &self = c.in[0], &idx = c.in[1];
  bool has_src = c.in.size() > 2;
  FW_CHECK(idx.dtype() == kLong, "[", op, "] Expected dtype int64 for index, got ", dtype_str(idx.dtype()));
  if (has_src)
    FW_CHECK(c.in[2].dtype() == self.dtype(), "[", op, "] Expected self.dtype to be equal to src.dtype, got ",
             dtype_str(self.dtype()), " and ", dtype_str(c.in[2].dtype()));
  int64_t dim = wrap_dim(c.a.i0, self.dim(), op);
  if (idx.numel() > 0) {
    FW_CHECK(nonempty_dim(idx) == nonempty_dim(self), "[", op, "] Index tensor must have the same number of "
             "dimensions as self tensor, got index ", idx.sizes(), " and self ", self.sizes());
    if (has_src)
      FW_CHECK(nonempty_dim(idx) == nonempty_dim(c.in[2]), "[", op, "] Index tensor must have the same number of "
               "dimensions as src tensor, got index ", idx.sizes(), " and src ", c.in[2].sizes());
    for (int64_t d = 0; d < nonempty_dim(self); d++) {
      bool ok = (d == dim || nonempty_size(idx, d) <= nonempty_size(self, d)) &&
                (!has_src || nonempty_size(idx, d) <= nonempty_size(c.in[2], d));
      FW_CHECK(ok, "[", op, "] Expected index ", idx.sizes(), " to be smaller than self ", self.sizes(),
               " apart from dimension ", dim,
               has_src ? " and to be smaller size than src " + shape_str(c.in[2].sizes()) : std::string());
    }
  }
  m.push_back({DimVec(self.sizes()), self.dtype()});
}
template <bool Add>
void scatter_kernel(const OpCall& c, Outs& o) {
  o[0].copy_(c.in[0]);
  Tensor out = as_1d(o[0]), idx = as_1d(c.in[1]);
  if (idx.numel() == 0) return;
  const char* op = c.def.name;
  int64_t dim = wrap_dim(c.a.i0, out.dim(), op);
  int64_t n = out.sizes()[dim], sd = out.strides()[dim] * out.element_size();
  Tensor dst = along_dim(out, idx.sizes(), dim), src;
  if (c.in.size() > 2) {
    Tensor s = as_1d(c.in[2]);
    src = make_view(s, idx.sizes(), s.strides(), s.storage_offset());
  } else {
    src = make_tensor({}, out.dtype());
    src.fill_(c.a.s0);
  }
  auto L = make_loop<3>({&dst, &idx, &src});
  auto body = [&]<class T>() {
    run_loop<3>(L, [&](char** p, const int64_t* s, int64_t m) {
      for (int64_t i = 0; i < m; i++) {
        int64_t k = read_index(p[1] + i * s[1]);
        if (k < 0 || k >= n) out_of_bounds(op, k, dim, n);
        T& d = at<T>(p[0] + i * s[0] + k * sd);
        T v = load<T>(p[2] + i * s[2]);
        if constexpr (Add) d = add_elems(d, v);
        else d = v;
      }
    }, kSerial);
  };
  if constexpr (Add) visit_storage(out.dtype(), op, body);
  else visit_width(out.dtype(), body);
}

// ---- index_add: i0 = dim, s0 = alpha; in = {self, index, source}.
void index_add_meta(const OpCall& c, Metas& m) {
  const Tensor &self = c.in[0], &idx = c.in[1], &src = c.in[2];
  FW_CHECK(idx.dim() <= 1, "[index_add] Index is supposed to be a vector, but got dim: ", idx.dim(), " with size: ",
           idx.sizes());
  FW_CHECK(is_index_dtype(idx.dtype(), true), "[index_add] Expected dtype int32 or int64 for index, got ",
           dtype_str(idx.dtype()));
  FW_CHECK(self.dtype() == src.dtype(), "[index_add] self (", dtype_name(self.dtype()), ") and source (",
           dtype_name(src.dtype()), ") must have the same scalar type");
  int64_t dim = wrap_dim(c.a.i0, self.dim(), "index_add");
  bool same = nonempty_dim(src) == nonempty_dim(self);
  for (int64_t d = 0; same && d < nonempty_dim(self); d++)
    same = d == dim || nonempty_size(src, d) == nonempty_size(self, d);
  FW_CHECK(same, "[index_add] source of shape ", src.sizes(), " must match self of shape ", self.sizes(),
           " apart from dimension ", dim);
  FW_CHECK(idx.numel() == nonempty_size(src, dim), "[index_add] Number of indices (", idx.numel(),
           ") should be equal to source.size(dim): (", nonempty_size(src, dim), "), for dim: ", dim);
  m.push_back({DimVec(self.sizes()), self.dtype()});
}
void index_add_kernel(const OpCall& c, Outs& o) {
  o[0].copy_(c.in[0]);
  Tensor out = as_1d(o[0]), src = as_1d(c.in[2]), idx = cast(c.in[1], kLong).reshape({-1});
  int64_t dim = wrap_dim(c.a.i0, out.dim(), "index_add");
  check_indices(idx, out.sizes()[dim], dim, "index_add");
  if (src.numel() == 0) return;
  Tensor dst = along_dim(out, src.sizes(), dim), iv = index_along(idx, src.sizes(), dim);
  int64_t sd = out.strides()[dim] * out.element_size();
  auto L = make_loop<3>({&dst, &src, &iv});
  visit_storage(out.dtype(), "index_add", [&]<class T>() {
    T alpha = scalar_as<T>(c.a.s0);
    run_loop<3>(L, [&](char** p, const int64_t* s, int64_t m) {
      for (int64_t i = 0; i < m; i++) {
        T& d = at<T>(p[0] + i * s[0] + read_index(p[2] + i * s[2]) * sd);
        d = add_elems(d, mul_elems(load<T>(p[1] + i * s[1]), alpha));
      }
    }, kSerial);
  });
}

// ---- masked_select: in = {self, mask}, broadcast together; 1-D output (Note [Data-dependent shapes]).
DimVec masked_shape(const OpCall& c) {
  return broadcast_shapes(c.in[0].sizes(), c.in[1].sizes(), "masked_select");
}
void masked_select_meta(const OpCall& c, Metas& m) {
  const Tensor& mask = c.in[1];
  FW_CHECK(mask.dtype() == kBool || mask.dtype() == kByte,
           "[masked_select] expected BoolTensor or ByteTensor for mask, got ", dtype_str(mask.dtype()));
  DimVec shape = masked_shape(c);
  m.push_back({DimVec{count_nonzero_elems(mask.expand(shape))}, c.in[0].dtype()});
}
void masked_select_kernel(const OpCall& c, Outs& o) {
  DimVec shape = masked_shape(c);
  Tensor x = c.in[0].expand(shape), mask = c.in[1].expand(shape);
  char* dst = static_cast<char*>(o[0].data_ptr());
  int64_t total = o[0].numel(), written = 0;
  auto L = make_loop<2>({&x, &mask});
  visit_width(x.dtype(), [&]<class T>() {
    run_loop<2>(L, [&](char** p, const int64_t* s, int64_t m) {
      for (int64_t i = 0; i < m; i++) {
        T v = load<T>(p[0] + i * s[0]);
        if (written < total) at<T>(dst + sizeof(T) * written) = v;
        written += load<uint8_t>(p[1] + i * s[1]) != 0;
      }
    }, kSerial);
  });
}

// ---- nonzero: [n, ndim] int64 coordinates in row-major order (Note [Data-dependent shapes]).
void nonzero_meta(const OpCall& c, Metas& m) {
  FW_CHECK(c.in[0].numel() < INT32_MAX, "[nonzero] nonzero is not supported for tensors with more than INT_MAX elements");
  m.push_back({DimVec{count_nonzero_elems(c.in[0]), c.in[0].dim()}, kLong});
}
void nonzero_kernel(const OpCall& c, Outs& o) {
  int64_t total = o[0].sizes()[0], nd = c.in[0].dim();
  if (total == 0 || nd == 0) return;
  Tensor x = c.in[0].contiguous();
  int64_t* out = o[0].data_ptr<int64_t>();
  visit_storage(x.dtype(), "nonzero", [&]<class T>() {
    const T* p = x.data_ptr<T>();
    DimVec pos(nd, 0);
    int64_t w = 0;
    for (int64_t i = 0; i < x.numel() && w < total; i++) {
      if (is_nonzero(p[i])) {
        for (int64_t d = 0; d < nd; d++) out[w * nd + d] = pos[d];
        w++;
      }
      for (int64_t d = nd - 1; d >= 0; d--) {
        if (++pos[d] < x.sizes()[d]) break;
        pos[d] = 0;
      }
    }
  });
}

// ---- take: in = {self, index}; self read as flattened, negative indices wrap.
void take_meta(const OpCall& c, Metas& m) {
  FW_CHECK(c.in[1].dtype() == kLong, "[take] Expected a long tensor for index, but got ", dtype_name(c.in[1].dtype()));
  m.push_back({DimVec(c.in[1].sizes()), c.in[0].dtype()});
}
void take_kernel(const OpCall& c, Outs& o) {
  Tensor flat = c.in[0].contiguous();
  const Tensor& idx = c.in[1];
  int64_t n = flat.numel();
  const char* base = static_cast<const char*>(flat.data_ptr());
  auto L = make_loop<2>({&o[0], &idx});
  visit_width(flat.dtype(), [&]<class T>() {
    run_loop<2>(L, [&](char** p, const int64_t* s, int64_t m) {
      for (int64_t i = 0; i < m; i++) {
        int64_t k = read_index(p[1] + i * s[1]);
        FW_CHECK_INDEX(k >= -n && k < n, "[take] out of range: tried to access index ", k, " on a tensor of ", n, " elements.");
        at<T>(p[0] + i * s[0]) = load<T>(base + (k < 0 ? k + n : k) * int64_t(sizeof(T)));
      }
    });
  });
}

// ---- check_targets: in = {target} (integer), i0 = number of classes, i1 = ignore_index.
// Returns the targets as int64; raises "[nll_loss] Target v is out of bounds." for the first
// target (in flat order) outside [0, classes) that is not ignore_index.
void check_targets_meta(const OpCall& c, Metas& m) {
  FW_CHECK(is_integral(c.in[0].dtype()), "[nll_loss] expected an integer tensor of class indices as target, but got ",
           dtype_name(c.in[0].dtype()));
  m.push_back({DimVec(c.in[0].sizes()), kLong});
}
void check_targets_kernel(const OpCall& c, Outs& o) {
  Tensor t = cast(c.in[0], kLong).contiguous();
  const int64_t* p = t.data_ptr<int64_t>();
  const int64_t n = t.numel(), classes = c.a.i0, ignore = c.a.i1;
  for (int64_t i = 0; i < n; i++)
    FW_CHECK_INDEX(p[i] == ignore || (p[i] >= 0 && p[i] < classes), "[nll_loss] Target ", p[i], " is out of bounds.");
  o[0].copy_(t);
}

// ---- advanced indexing. index: in = {self, idx...}; index_put: in = {self, values, idx...},
// flags kAccumulate. ints = the dim of self each index tensor applies to (strictly increasing).
// The index tensors broadcast to one shape B. When the indexed dims are adjacent B replaces
// them in place; otherwise B comes first, followed by the remaining dims (NumPy's rule).
struct AdvIndex {
  DimVec bshape;        // broadcast shape of the index tensors
  DimVec sizes;         // shape of the indexing result
  DimVec data_strides;  // per result dim: the data tensor's stride, 0 on the B dims
  DimVec off_strides;   // per result dim: stride into the offset tensor, 0 off the B dims
};

bool broadcast_into(DimVec& acc, IntArrayRef s) {
  size_t n = std::max(acc.size(), s.size());
  DimVec out(n, 1);
  for (size_t i = 0; i < n; i++) {
    int64_t a = i < n - acc.size() ? 1 : acc[i - (n - acc.size())];
    int64_t b = i < n - s.size() ? 1 : s[i - (n - s.size())];
    if (a != b && a != 1 && b != 1) return false;
    out[i] = a == 1 ? b : a;
  }
  acc = out;
  return true;
}

AdvIndex adv_index(const Tensor& data, ArrayRef<Tensor> idx, IntArrayRef dims, const char* op) {
  FW_CHECK(!idx.empty() && idx.size() == dims.size(), "[", op, "] expected one dim per index tensor, got ", idx.size(),
           " tensors and dims ", dims);
  AdvIndex g;
  bool ok = true;
  std::string shapes;
  for (size_t k = 0; k < idx.size(); k++) {
    FW_CHECK(idx[k].dtype() == kLong, "[", op, "] tensors used as indices must be long, byte or bool tensors, got ",
             dtype_str(idx[k].dtype()));
    FW_CHECK(dims[k] >= 0 && dims[k] < data.dim() && (k == 0 || dims[k] > dims[k - 1]), "[", op, "] index dims ", dims,
             " must be increasing and within the ", data.dim(), " dims of the indexed tensor");
    ok = broadcast_into(g.bshape, idx[k].sizes()) && ok;
    shapes += (k ? ", " : "") + shape_str(idx[k].sizes());
  }
  FW_CHECK(ok, "[", op, "] shape mismatch: indexing tensors could not be broadcast together with shapes ", shapes);
  DimVec bst = contiguous_strides(g.bshape);
  auto push_b = [&] {
    for (size_t i = 0; i < g.bshape.size(); i++) {
      g.sizes.push_back(g.bshape[i]);
      g.data_strides.push_back(0);
      g.off_strides.push_back(bst[i]);
    }
  };
  bool adjacent = dims.back() - dims.front() + 1 == int64_t(dims.size());
  if (!adjacent) push_b();
  for (int64_t d = 0, k = 0; d < data.dim(); d++) {
    if (k < int64_t(dims.size()) && dims[k] == d) {
      if (adjacent && k == 0) push_b();
      k++;
      continue;
    }
    g.sizes.push_back(data.sizes()[d]);
    g.data_strides.push_back(data.strides()[d]);
    g.off_strides.push_back(0);
  }
  return g;
}

// Element offset of each broadcast index position into data: the sum of index * stride over the
// indexed dims, each index checked against its dim first (negative values wrap).
Tensor index_offsets(const Tensor& data, ArrayRef<Tensor> idx, IntArrayRef dims, const AdvIndex& g, const char* op) {
  Tensor off = make_tensor(g.bshape, kLong);
  off.zero_();
  for (size_t k = 0; k < idx.size(); k++) {
    Tensor ik = idx[k].expand(g.bshape);
    int64_t dim = dims[k], n = data.sizes()[dim], st = data.strides()[dim];
    auto L = make_loop<2>({&off, &ik});
    run_loop<2>(L, [&](char** p, const int64_t* s, int64_t m) {
      for (int64_t i = 0; i < m; i++) {
        int64_t v = read_index(p[1] + i * s[1]);
        if (v < -n || v >= n) out_of_bounds(op, v, dim, n);
        at<int64_t>(p[0] + i * s[0]) += (v < 0 ? v + n : v) * st;
      }
    });
  }
  return off;
}

ArrayRef<Tensor> index_tensors_of(ArrayRef<Tensor> in, size_t first) {
  return ArrayRef<Tensor>(in.data() + first, in.size() - first);
}
ArrayRef<Tensor> index_tensors(const OpCall& c, size_t first) { return index_tensors_of(c.in, first); }

void index_meta(const OpCall& c, Metas& m) {
  AdvIndex g = adv_index(c.in[0], index_tensors(c, 1), c.a.ints, "index");
  m.push_back({g.sizes, c.in[0].dtype()});
}
void index_kernel(const OpCall& c, Outs& o) {
  const Tensor& self = c.in[0];
  auto idx = index_tensors(c, 1);
  AdvIndex g = adv_index(self, idx, c.a.ints, "index");
  Tensor off = index_offsets(self, idx, c.a.ints, g, "index");
  if (o[0].numel() == 0) return;
  Tensor src = make_view(self, g.sizes, g.data_strides, self.storage_offset());
  Tensor offv = make_view(off, g.sizes, g.off_strides, 0);
  auto L = make_loop<3>({&o[0], &src, &offv});
  visit_width(self.dtype(), [&]<class T>() {
    run_loop<3>(L, [&](char** p, const int64_t* s, int64_t m) {
      gather_run<T, false>(p, s, m, int64_t(sizeof(T)), 0, 0, "");
    });
  });
}

void index_put_meta(const OpCall& c, Metas& m) {
  const Tensor &self = c.in[0], &vals = c.in[1];
  FW_CHECK(vals.dtype() == self.dtype(), "[index_put] Index put requires the source and destination dtypes match, got ",
           dtype_name(self.dtype()), " for the destination and ", dtype_name(vals.dtype()), " for the source.");
  AdvIndex g = adv_index(self, index_tensors(c, 2), c.a.ints, "index_put");
  DimVec b(g.sizes);
  FW_CHECK(vals.dim() <= int64_t(g.sizes.size()) && broadcast_into(b, vals.sizes()) && b == g.sizes,
           "[index_put] shape mismatch: value tensor of shape ", vals.sizes(),
           " cannot be broadcast to indexing result of shape ", g.sizes);
  m.push_back({DimVec(self.sizes()), self.dtype()});
}
void index_put_kernel(const OpCall& c, Outs& o) {
  Tensor& out = o[0];
  out.copy_(c.in[0]);
  auto idx = index_tensors(c, 2);
  AdvIndex g = adv_index(out, idx, c.a.ints, "index_put");
  Tensor off = index_offsets(out, idx, c.a.ints, g, "index_put");
  Tensor dst = make_view(out, g.sizes, g.data_strides, out.storage_offset());
  if (dst.numel() == 0) return;
  Tensor offv = make_view(off, g.sizes, g.off_strides, 0), vals = c.in[1].expand(g.sizes);
  auto L = make_loop<3>({&dst, &offv, &vals});
  bool acc = c.a.flags & kAccumulate;
  auto body = [&]<class T>() {
    run_loop<3>(L, [&](char** p, const int64_t* s, int64_t m) {
      for (int64_t i = 0; i < m; i++) {
        T& d = at<T>(p[0] + i * s[0] + read_index(p[1] + i * s[1]) * int64_t(sizeof(T)));
        T v = load<T>(p[2] + i * s[2]);
        if (acc) d = add_elems(d, v);
        else d = v;
      }
    }, kSerial);
  };
  if (acc) visit_storage(out.dtype(), "index_put", body);
  else visit_width(out.dtype(), body);
}

// Smallest and largest value of a non-empty int64 tensor.
std::pair<int64_t, int64_t> index_range(const Tensor& t) {
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  auto L = make_loop<1>({&t});
  run_loop<1>(L, [&](char** p, const int64_t* s, int64_t m) {
    for (int64_t i = 0; i < m; i++) {
      int64_t v = read_index(p[0] + i * s[0]);
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }, kSerial);
  return {lo, hi};
}

OpAttrs dim_attrs(int64_t dim, const Scalar& s = Scalar(0)) {
  OpAttrs a;
  a.i0 = dim;
  a.s0 = s;
  return a;
}

// ---- vjps
// Note [Index vjps]
// The rules pair the family's ops as adjoints: gather <-> scatter_add, index_select <->
// index_add, index <-> index_put (accumulate), so each rule's own rule stays in the family and
// double backward closes. They call public ops or the dispatch door only, so every step is
// recorded. Index tensors get no gradient. With duplicate indices, scatter and index_put
// without accumulate keep only the last write, yet every duplicate's source receives the
// gradient, as in PyTorch (the result does not depend on them smoothly).

Tensor index_put_op(const Tensor& self, const Tensor& vals, ArrayRef<Tensor> idx, IntArrayRef dims, bool acc) {
  OpAttrs a;
  a.ints = DimVec(dims);
  a.flags = acc ? kAccumulate : 0;
  std::vector<Tensor> in{self, vals};
  in.insert(in.end(), idx.begin(), idx.end());
  return dispatch1(OpId::index_put, in, a);
}
Tensor index_op(const Tensor& self, ArrayRef<Tensor> idx, IntArrayRef dims) {
  OpAttrs a;
  a.ints = DimVec(dims);
  std::vector<Tensor> in{self};
  in.insert(in.end(), idx.begin(), idx.end());
  return dispatch1(OpId::index, in, a);
}
Tensor zeros_of(IntArrayRef sizes, const Tensor& g) { return fw::zeros(sizes, g.dtype()); }

// t, shaped like a scatter index, placed at the front of zeros of `shape` (src may be larger
// than the index along every dim; scatter's meta checked that the dims match).
Tensor pad_to(const Tensor& t, IntArrayRef shape) {
  if (t.sizes().equals(shape)) return t;
  if (t.numel() == 0) return fw::zeros(shape, t.dtype());
  Tensor u = t.dim() == 0 ? t.reshape({1}) : t;
  DimVec target(shape);
  if (target.empty()) target.push_back(1);
  DimVec pad;
  for (int64_t d = u.dim() - 1; d >= 0; d--) {
    pad.push_back(0);
    pad.push_back(target[d] - u.size(d));
  }
  return fw::constant_pad_nd(u, pad, 0).reshape(shape);
}

void index_select_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor &self = c.in[0], &idx = c.in[1];
  if (self.dim() == 0) {
    r[0] = g[0];
    return;
  }
  r[0] = zeros_of(self.sizes(), g[0]).index_add(c.a.i0, idx.reshape({-1}), g[0]);
}

void gather_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  r[0] = zeros_of(c.in[0].sizes(), g[0]).scatter_add(c.a.i0, c.in[1], g[0]);
}

// scatter: written positions of self lose their gradient; src gets the gradient it landed on.
void scatter_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& idx = c.in[1];
  if (c.needs[0]) r[0] = g[0].scatter(c.a.i0, idx, Scalar(0.0));
  if (c.in.size() > 2 && c.needs[2]) r[2] = pad_to(g[0].gather(c.a.i0, idx), c.in[2].sizes());
}
void scatter_add_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  if (c.needs[0]) r[0] = g[0];
  if (c.needs[2]) r[2] = pad_to(g[0].gather(c.a.i0, c.in[1]), c.in[2].sizes());
}

void index_add_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  if (c.needs[0]) r[0] = g[0];
  if (!c.needs[2]) return;
  Tensor gs = g[0].index_select(c.a.i0, c.in[1]).reshape(c.in[2].sizes());
  r[2] = c.a.s0.toComplexDouble() != std::complex<double>(1) ? gs.mul(c.a.s0) : gs;
}

// masked_select: the gradient goes back to the selected positions of the broadcast shape.
void masked_select_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor &self = c.in[0], &mask = c.in[1];
  DimVec shape = broadcast_shapes(self.sizes(), mask.sizes(), "masked_select");
  if (shape.empty()) {
    r[0] = g[0].sum();
    return;
  }
  Tensor nz = fw::nonzero(mask.expand(shape));
  std::vector<Tensor> cols;
  DimVec dims;
  for (int64_t d = 0; d < int64_t(shape.size()); d++) {
    cols.push_back(nz.select(1, d));
    dims.push_back(d);
  }
  r[0] = sum_to(index_put_op(zeros_of(shape, g[0]), g[0], cols, dims, false), self.sizes());
}

void take_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& self = c.in[0];
  Tensor flat = zeros_of({self.numel()}, g[0]);
  r[0] = index_put_op(flat, g[0], {c.in[1]}, {0}, true).reshape(self.sizes());
}

void index_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  r[0] = index_put_op(zeros_of(c.in[0].sizes(), g[0]), g[0], index_tensors_of(c.in, 1), c.a.ints, true);
}
void index_put_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  auto idx = index_tensors_of(c.in, 2);
  bool acc = c.a.flags & kAccumulate;
  if (c.needs[0]) r[0] = acc ? g[0] : index_put_op(g[0], zeros_of({}, g[0]), idx, c.a.ints, false);
  if (c.needs[1]) r[1] = sum_to(index_op(g[0], idx, c.a.ints), c.in[1].sizes());
}

}  // namespace

FW_DEFINE_OP(index_select) { d.meta = index_select_meta; d.cpu = index_select_kernel; d.vjp = index_select_vjp; }
FW_DEFINE_OP(gather) { d.meta = gather_meta; d.cpu = gather_kernel; d.vjp = gather_vjp; }
FW_DEFINE_OP(scatter) { d.meta = scatter_meta; d.cpu = scatter_kernel<false>; d.vjp = scatter_vjp; }
FW_DEFINE_OP(scatter_add) { d.meta = scatter_meta; d.cpu = scatter_kernel<true>; d.vjp = scatter_add_vjp; }
FW_DEFINE_OP(index_add) { d.meta = index_add_meta; d.cpu = index_add_kernel; d.vjp = index_add_vjp; }
FW_DEFINE_OP(masked_select) { d.meta = masked_select_meta; d.cpu = masked_select_kernel; d.vjp = masked_select_vjp; }
FW_DEFINE_OP(nonzero) { d.meta = nonzero_meta; d.cpu = nonzero_kernel; d.differentiable = false; }
FW_DEFINE_OP(take) { d.meta = take_meta; d.cpu = take_kernel; d.vjp = take_vjp; }
FW_DEFINE_OP(index) { d.meta = index_meta; d.cpu = index_kernel; d.vjp = index_vjp; }
FW_DEFINE_OP(index_put) { d.meta = index_put_meta; d.cpu = index_put_kernel; d.vjp = index_put_vjp; }
FW_DEFINE_OP(check_targets) {
  d.meta = check_targets_meta;
  d.cpu = check_targets_kernel;
  d.differentiable = false;
}

Tensor detail::check_targets(const Tensor& target, int64_t classes, int64_t ignore_index) {
  OpAttrs a;
  a.i0 = classes;
  a.i1 = ignore_index;
  return dispatch1(OpId::check_targets, {target}, a);
}

// ---- public API
Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
  return dispatch1(OpId::index_select, {t, index}, dim_attrs(dim));
}
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return fw::index_select(*this, dim, index); }
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index) {
  return dispatch1(OpId::gather, {t, index}, dim_attrs(dim));
}
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return fw::gather(*this, dim, index); }

Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  return dispatch1(OpId::scatter, {t, index, src}, dim_attrs(dim));
}
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value) {
  return dispatch1(OpId::scatter, {t, index}, dim_attrs(dim, value));
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Tensor& src) const {
  return fw::scatter(*this, dim, index, src);
}
Tensor Tensor::scatter(int64_t dim, const Tensor& index, const Scalar& value) const {
  return fw::scatter(*this, dim, index, value);
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Tensor& src) const {
  dispatch_into(OpId::scatter, {*this, index, src}, dim_attrs(dim), *this);
  return mut_self();
}
Tensor& Tensor::scatter_(int64_t dim, const Tensor& index, const Scalar& value) const {
  dispatch_into(OpId::scatter, {*this, index}, dim_attrs(dim, value), *this);
  return mut_self();
}
Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  return dispatch1(OpId::scatter_add, {t, index, src}, dim_attrs(dim));
}
Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return fw::scatter_add(*this, dim, index, src);
}
Tensor& Tensor::scatter_add_(int64_t dim, const Tensor& index, const Tensor& src) const {
  dispatch_into(OpId::scatter_add, {*this, index, src}, dim_attrs(dim), *this);
  return mut_self();
}

Tensor index_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha) {
  return dispatch1(OpId::index_add, {t, index, src}, dim_attrs(dim, alpha));
}
Tensor Tensor::index_add(int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha) const {
  return fw::index_add(*this, dim, index, src, alpha);
}
Tensor& Tensor::index_add_(int64_t dim, const Tensor& index, const Tensor& src, const Scalar& alpha) const {
  dispatch_into(OpId::index_add, {*this, index, src}, dim_attrs(dim, alpha), *this);
  return mut_self();
}

Tensor masked_select(const Tensor& t, const Tensor& mask) {
  return dispatch1(OpId::masked_select, {t, mask}, OpAttrs());
}
Tensor Tensor::masked_select(const Tensor& mask) const { return fw::masked_select(*this, mask); }
Tensor nonzero(const Tensor& t) { return dispatch1(OpId::nonzero, {t}, OpAttrs()); }
Tensor Tensor::nonzero() const { return fw::nonzero(*this); }
std::vector<Tensor> where(const Tensor& cond) {
  Tensor nz = nonzero(cond.dim() == 0 ? cond.reshape({1}) : cond);
  std::vector<Tensor> out;
  for (int64_t d = 0; d < nz.size(1); d++) out.push_back(nz.select(1, d));
  return out;
}
Tensor take(const Tensor& t, const Tensor& index) { return dispatch1(OpId::take, {t, index}, OpAttrs()); }
Tensor Tensor::take(const Tensor& index) const { return fw::take(*this, index); }

// padding_idx only keeps the gradient of that row at zero (the rows it selects come from a
// detached weight); the forward is a row lookup.
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  FW_CHECK(weight.dim() == 2, "[embedding] 'weight' must be 2-D, got shape ", weight.sizes());
  FW_CHECK(is_index_dtype(indices.dtype(), true), "[embedding] Expected tensor for argument #1 'indices' to have one "
           "of the following scalar types: Long, Int; but got ", dtype_name(indices.dtype()), " instead");
  Tensor flat = indices.reshape({-1});
  Tensor rows = weight.index_select(0, flat);
  if (padding_idx >= 0 && weight.requires_grad())
    rows = fw::where(flat.eq(padding_idx).unsqueeze(1), weight.detach().index_select(0, flat), rows);
  if (indices.dim() == 1) return rows;
  DimVec s(indices.sizes());
  s.push_back(weight.size(1));
  return rows.view(s);
}

Tensor one_hot(const Tensor& t, int64_t num_classes) {
  FW_CHECK(t.dtype() == kLong, "[one_hot] one_hot is only applicable to index tensor, got ", dtype_str(t.dtype()));
  FW_CHECK(num_classes >= -1, "[one_hot] num_classes should be -1 or non-negative, got ", num_classes);
  if (t.numel() == 0) {
    FW_CHECK(num_classes != -1, "[one_hot] Can not infer total number of classes from empty tensor.");
  } else {
    auto [lo, hi] = index_range(t);
    FW_CHECK(lo >= 0, "[one_hot] Class values must be non-negative.");
    if (num_classes == -1) num_classes = hi + 1;
    FW_CHECK(hi < num_classes, "[one_hot] Class values must be smaller than num_classes.");
  }
  DimVec s(t.sizes());
  s.push_back(num_classes);
  Tensor zero = make_tensor(s, kLong);
  zero.zero_();
  if (t.numel() == 0) return zero;
  return scatter(zero, -1, t.unsqueeze(-1), 1);
}

}  // namespace fw
