// View ops (aliasing storage), cat, and the shape functions composed from them.
#include <algorithm>

#include "core/convert.h"
#include "core/loops.h"
#include "core/layout.h"
#include "core/op.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

constexpr uint32_t kSqueezeAll = 1;
constexpr uint32_t kHasOffset = 1;

// Resolves one -1 in a requested shape against numel.
DimVec infer_size(IntArrayRef shape, int64_t numel, const char* op) {
  DimVec out(shape);
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < shape.size(); i++) {
    if (shape[i] == -1) {
      FW_CHECK(infer < 0, "[", op, "] only one dimension can be inferred");
      infer = int64_t(i);
    } else {
      FW_CHECK(shape[i] >= 0, "[", op, "] invalid shape dimension ", shape[i]);
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    FW_CHECK(known != 0 && numel % known == 0, "[", op, "] shape '", shape, "' is invalid for input of size ", numel);
    out[infer] = numel / known;
  } else {
    FW_CHECK(known == numel, "[", op, "] shape '", shape, "' is invalid for input of size ", numel);
  }
  return out;
}

// Strides for viewing (sizes, strides) as new_sizes without copying, if possible (PyTorch's rule:
// each run of new dims must lie inside one contiguous chunk of old dims).
std::optional<DimVec> view_strides(IntArrayRef sizes, IntArrayRef strides, IntArrayRef new_sizes) {
  DimVec ns(new_sizes.size(), 1);
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0 || sizes.empty()) return contiguous_strides(new_sizes);
  int64_t view_d = int64_t(new_sizes.size()) - 1;
  int64_t chunk_base_stride = strides.empty() ? 1 : strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (int64_t td = int64_t(sizes.size()) - 1; td >= 0; td--) {
    tensor_numel *= sizes[td];
    if (td == 0 || (sizes[td - 1] != 1 && strides[td - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 && (view_numel < tensor_numel || new_sizes[view_d] == 1)) {
        ns[view_d] = view_numel * chunk_base_stride;
        view_numel *= new_sizes[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return std::nullopt;
      if (td > 0) {
        chunk_base_stride = strides[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  if (view_d != -1) return std::nullopt;
  return ns;
}

void view_meta(const OpCall& c, Metas& m) {
  m.push_back({infer_size(c.a.ints, c.in[0].numel(), "view"), c.in[0].dtype()});
}
void view_kernel(const OpCall& c, Outs& o) {
  const Tensor& t = c.in[0];
  DimVec sizes = infer_size(c.a.ints, t.numel(), "view");
  auto st = view_strides(t.sizes(), t.strides(), sizes);
  FW_CHECK(st, "[view] view size is not compatible with input tensor's size and stride (at least one dimension spans "
           "across two contiguous subspaces). Use .reshape(...) instead. (input sizes ", t.sizes(), ", strides ",
           t.strides(), ", requested ", sizes, ")");
  o[0] = make_view(t, sizes, *st, t.storage_offset());
}

void permute_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  FW_CHECK(int64_t(c.a.ints.size()) == t.dim(), "[permute] number of dims don't match in permute: input has ", t.dim(),
           " dims but dims is ", c.a.ints);
  DimVec sizes(t.dim(), 0);
  std::vector<bool> seen(t.dim(), false);
  for (int64_t i = 0; i < t.dim(); i++) {
    int64_t d = wrap_dim(c.a.ints[i], t.dim(), "permute");
    FW_CHECK(!seen[d], "[permute] repeated dim in permute: ", c.a.ints);
    seen[d] = true;
    sizes[i] = t.sizes()[d];
  }
  m.push_back({sizes, t.dtype()});
}
void permute_kernel(const OpCall& c, Outs& o) {
  const Tensor& t = c.in[0];
  DimVec sizes(t.dim(), 0), strides(t.dim(), 0);
  for (int64_t i = 0; i < t.dim(); i++) {
    int64_t d = wrap_dim(c.a.ints[i], t.dim(), "permute");
    sizes[i] = t.sizes()[d];
    strides[i] = t.strides()[d];
  }
  o[0] = make_view(t, sizes, strides, t.storage_offset());
}

void expand_geometry(const Tensor& t, IntArrayRef target, DimVec& sizes, DimVec& strides) {
  FW_CHECK(target.size() >= size_t(t.dim()), "[expand] the number of sizes provided (", target.size(),
           ") must be greater or equal to the number of dimensions in the tensor (", t.dim(), ")");
  int64_t nd = int64_t(target.size()), off = nd - t.dim();
  sizes = DimVec(nd, 0);
  strides = DimVec(nd, 0);
  for (int64_t i = nd - 1; i >= 0; i--) {
    int64_t j = i - off;
    int64_t want = target[i];
    if (j < 0) {
      FW_CHECK(want >= 0, "[expand] The expanded size of the tensor (", want,
               ") isn't allowed in a leading, non-existing dimension ", i);
      sizes[i] = want;
      strides[i] = 0;
      continue;
    }
    int64_t have = t.sizes()[j];
    if (want == -1) want = have;
    FW_CHECK(have == want || have == 1, "[expand] The expanded size of the tensor (", want,
             ") must match the existing size (", have, ") at non-singleton dimension ", i, ".  Target sizes: ",
             target, ".  Tensor sizes: ", t.sizes());
    sizes[i] = want;
    strides[i] = have == want ? t.strides()[j] : 0;
  }
}
void expand_meta(const OpCall& c, Metas& m) {
  DimVec s, st;
  expand_geometry(c.in[0], c.a.ints, s, st);
  m.push_back({s, c.in[0].dtype()});
}
void expand_kernel(const OpCall& c, Outs& o) {
  DimVec s, st;
  expand_geometry(c.in[0], c.a.ints, s, st);
  o[0] = make_view(c.in[0], s, st, c.in[0].storage_offset());
}

// slice: i0 = dim, i1 = start, i2 = end, ints[0] = step (Python clamping of start/end).
void slice_geometry(const Tensor& t, const OpAttrs& a, int64_t& dim, int64_t& start, int64_t& len, int64_t& step) {
  FW_CHECK(t.dim() > 0, "[slice] slice() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(a.i0, t.dim(), "slice");
  step = a.ints.empty() ? 1 : a.ints[0];
  FW_CHECK(step > 0, "[slice] slice step must be positive, got ", step);
  int64_t n = t.sizes()[dim];
  start = a.i1 < 0 ? a.i1 + n : a.i1;
  int64_t end = a.i2 < 0 ? a.i2 + n : a.i2;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  len = (end - start + step - 1) / step;
}
void slice_meta(const OpCall& c, Metas& m) {
  int64_t dim, start, len, step;
  slice_geometry(c.in[0], c.a, dim, start, len, step);
  DimVec s(c.in[0].sizes());
  s[dim] = len;
  m.push_back({s, c.in[0].dtype()});
}
void slice_kernel(const OpCall& c, Outs& o) {
  const Tensor& t = c.in[0];
  int64_t dim, start, len, step;
  slice_geometry(t, c.a, dim, start, len, step);
  DimVec s(t.sizes()), st(t.strides());
  s[dim] = len;
  st[dim] *= step;
  o[0] = make_view(t, s, st, t.storage_offset() + start * t.strides()[dim]);
}

// select: i0 = dim, i1 = index.
void select_geometry(const Tensor& t, const OpAttrs& a, int64_t& dim, int64_t& idx) {
  FW_CHECK(t.dim() > 0, "[select] select() cannot be applied to a 0-dim tensor.");
  dim = wrap_dim(a.i0, t.dim(), "select");
  int64_t n = t.sizes()[dim];
  idx = a.i1;
  FW_CHECK_INDEX(idx >= -n && idx < n, "[select] index ", idx, " is out of bounds for dimension ", dim, " with size ", n);
  if (idx < 0) idx += n;
}
void select_meta(const OpCall& c, Metas& m) {
  int64_t dim, idx;
  select_geometry(c.in[0], c.a, dim, idx);
  DimVec s(c.in[0].sizes());
  s.erase(dim);
  m.push_back({s, c.in[0].dtype()});
}
void select_kernel(const OpCall& c, Outs& o) {
  const Tensor& t = c.in[0];
  int64_t dim, idx;
  select_geometry(t, c.a, dim, idx);
  DimVec s(t.sizes()), st(t.strides());
  s.erase(dim);
  st.erase(dim);
  o[0] = make_view(t, s, st, t.storage_offset() + idx * t.strides()[dim]);
}

void unsqueeze_meta(const OpCall& c, Metas& m) {
  int64_t d = wrap_dim(c.a.i0, c.in[0].dim() + 1, "unsqueeze");
  DimVec s(c.in[0].sizes());
  s.insert(d, 1);
  m.push_back({s, c.in[0].dtype()});
}
void unsqueeze_kernel(const OpCall& c, Outs& o) {
  const Tensor& t = c.in[0];
  int64_t d = wrap_dim(c.a.i0, t.dim() + 1, "unsqueeze");
  DimVec s(t.sizes()), st(t.strides());
  int64_t stride = d < t.dim() ? t.sizes()[d] * t.strides()[d] : 1;
  s.insert(d, 1);
  st.insert(d, stride);
  o[0] = make_view(t, s, st, t.storage_offset());
}

void squeeze_geometry(const Tensor& t, const OpAttrs& a, DimVec& s, DimVec& st) {
  int64_t only = (a.flags & kSqueezeAll) || t.dim() == 0 ? -1 : wrap_dim(a.i0, t.dim(), "squeeze");
  if (t.dim() == 0 && !(a.flags & kSqueezeAll)) wrap_dim(a.i0, 0, "squeeze");
  for (int64_t i = 0; i < t.dim(); i++) {
    bool drop = t.sizes()[i] == 1 && (only < 0 || only == i);
    if (drop) continue;
    s.push_back(t.sizes()[i]);
    st.push_back(t.strides()[i]);
  }
}
void squeeze_meta(const OpCall& c, Metas& m) {
  DimVec s, st;
  squeeze_geometry(c.in[0], c.a, s, st);
  m.push_back({s, c.in[0].dtype()});
}
void squeeze_kernel(const OpCall& c, Outs& o) {
  DimVec s, st;
  squeeze_geometry(c.in[0], c.a, s, st);
  o[0] = make_view(c.in[0], s, st, c.in[0].storage_offset());
}

// as_strided: ints = sizes, ints2 = strides, i0 = offset when flag kHasOffset. Checked
// against the storage so no view can reach memory outside it.
void as_strided_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  FW_CHECK(c.a.ints.size() == c.a.ints2.size(), "[as_strided] mismatch in length of strides and shape: ", c.a.ints,
           " vs ", c.a.ints2);
  int64_t off = (c.a.flags & kHasOffset) ? c.a.i0 : t.storage_offset();
  FW_CHECK(off >= 0, "[as_strided] Tensor: invalid storage offset ", off);
  int64_t max_index = off, any_empty = 0;
  for (size_t i = 0; i < c.a.ints.size(); i++) {
    FW_CHECK(c.a.ints[i] >= 0, "[as_strided] negative size ", c.a.ints[i]);
    FW_CHECK(c.a.ints2[i] >= 0, "[as_strided] negative strides are not supported, got ", c.a.ints2);
    if (c.a.ints[i] == 0) any_empty = 1;
    else max_index += (c.a.ints[i] - 1) * c.a.ints2[i];
  }
  int64_t avail = int64_t(t.impl()->storage->nbytes / element_size(t.dtype()));
  FW_CHECK(any_empty || max_index < avail, "[as_strided] setStorage: sizes ", c.a.ints, ", strides ", c.a.ints2,
           " and storage offset ", off, " require a storage of ", max_index + 1, " elements, but the storage has only ",
           avail);
  m.push_back({c.a.ints, t.dtype()});
}
void as_strided_kernel(const OpCall& c, Outs& o) {
  const Tensor& t = c.in[0];
  int64_t off = (c.a.flags & kHasOffset) ? c.a.i0 : t.storage_offset();
  o[0] = make_view(t, c.a.ints, c.a.ints2, off);
}

void view_as_real_meta(const OpCall& c, Metas& m) {
  FW_CHECK(is_complex(c.in[0].dtype()), "[view_as_real] is only supported for complex tensors, got ",
           dtype_str(c.in[0].dtype()));
  DimVec s(c.in[0].sizes());
  s.push_back(2);
  m.push_back({s, to_real_value_type(c.in[0].dtype())});
}
void view_as_real_kernel(const OpCall& c, Outs& o) {
  const Tensor& t = c.in[0];
  DimVec s(t.sizes()), st(t.strides());
  for (auto& x : st) x *= 2;
  s.push_back(2);
  st.push_back(1);
  Tensor v = make_view(t, s, st, t.storage_offset() * 2);
  v.impl()->dtype = to_real_value_type(t.dtype());
  v.impl()->refresh();
  o[0] = v;
}
void view_as_complex_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  FW_CHECK(t.dtype() == kFloat || t.dtype() == kDouble,
           "[view_as_complex] is only supported for float and double tensors, but got a tensor of scalar type: ",
           dtype_name(t.dtype()));
  FW_CHECK(t.dim() > 0 && t.sizes().back() == 2, "[view_as_complex] Tensor must have a last dimension of size 2, got ",
           t.sizes());
  FW_CHECK(t.strides().back() == 1, "[view_as_complex] Tensor must have a last dimension with stride 1");
  for (int64_t i = 0; i + 1 < t.dim(); i++)
    FW_CHECK(t.strides()[i] % 2 == 0, "[view_as_complex] Tensor must have a stride divisible by 2 for all but last dimension");
  FW_CHECK(t.storage_offset() % 2 == 0, "[view_as_complex] Tensor must have a storage_offset divisible by 2");
  DimVec s(t.sizes());
  s.pop_back();
  m.push_back({s, to_complex_type(t.dtype())});
}
void view_as_complex_kernel(const OpCall& c, Outs& o) {
  const Tensor& t = c.in[0];
  DimVec s(t.sizes()), st(t.strides());
  s.pop_back();
  st.pop_back();
  for (auto& x : st) x /= 2;
  Tensor v = make_view(t, s, st, t.storage_offset() / 2);
  v.impl()->dtype = to_complex_type(t.dtype());
  v.impl()->refresh();
  o[0] = v;
}

// view(dtype): same element size only (reinterpretation of bits).
void view_dtype_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  FW_CHECK(element_size(t.dtype()) == element_size(c.a.dtype), "[view] viewing a tensor of dtype ",
           dtype_str(t.dtype()), " as ", dtype_str(c.a.dtype), " needs equal element sizes");
  m.push_back({DimVec(t.sizes()), c.a.dtype});
}
void view_dtype_kernel(const OpCall& c, Outs& o) {
  Tensor v = c.in[0].detach();
  v.impl()->dtype = c.a.dtype;
  o[0] = v;
}

// cat: i0 = dim. 1-D empty tensors are skipped (PyTorch's legacy rule).
void cat_meta(const OpCall& c, Metas& m) {
  FW_CHECK(!c.in.empty(), "[cat] expected a non-empty list of Tensors");
  const Tensor* ref = nullptr;
  for (auto& t : c.in)
    if (!(t.dim() == 1 && t.numel() == 0)) { ref = &t; break; }
  ScalarType dt = result_type(c.in);
  if (!ref) {
    m.push_back({DimVec{0}, dt});
    return;
  }
  FW_CHECK(ref->dim() > 0, "[cat] zero-dimensional tensor cannot be concatenated");
  int64_t dim = wrap_dim(c.a.i0, ref->dim(), "cat");
  DimVec s(ref->sizes());
  s[dim] = 0;
  for (size_t k = 0; k < c.in.size(); k++) {
    const Tensor& t = c.in[k];
    if (t.dim() == 1 && t.numel() == 0) continue;
    FW_CHECK(t.dim() == ref->dim(), "[cat] Tensors must have same number of dimensions: got ", ref->dim(), " and ", t.dim());
    for (int64_t d = 0; d < t.dim(); d++)
      FW_CHECK(d == dim || t.sizes()[d] == ref->sizes()[d], "[cat] Sizes of tensors must match except in dimension ", dim,
               ". Expected size ", ref->sizes()[d], " but got size ", t.sizes()[d], " for tensor number ", k,
               " in the list.");
    s[dim] += t.sizes()[dim];
  }
  m.push_back({s, dt});
}
void cat_kernel(const OpCall& c, Outs& o) {
  Tensor& out = o[0];
  if (out.numel() == 0) return;
  int64_t dim = wrap_dim(c.a.i0, out.dim(), "cat");
  int64_t off = 0;
  for (auto& t : c.in) {
    if (t.dim() == 1 && t.numel() == 0) continue;
    int64_t n = t.sizes()[dim];
    OpAttrs a;
    a.i0 = dim;
    a.i1 = off;
    a.i2 = off + n;
    Tensor dst = dispatch1(OpId::slice, {out}, a);
    dst.copy_(t);
    off += n;
  }
}

// Storage index of every element of a (sizes, strides, offset) geometry, as an int64 tensor.
Tensor storage_positions(IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  Tensor pos = fw::full({}, offset, kLong);
  for (size_t k = 0; k < sizes.size(); k++) pos = pos.unsqueeze(-1) + fw::arange(sizes[k], kLong) * strides[k];
  return pos;
}

// False only when no two elements of the geometry can share a storage position: with the dims
// of size > 1 in increasing stride order, each stride is past everything the smaller ones reach.
bool may_overlap(IntArrayRef sizes, IntArrayRef strides) {
  std::vector<std::pair<int64_t, int64_t>> dims;  // (|stride|, size)
  for (size_t k = 0; k < sizes.size(); k++)
    if (sizes[k] > 1) dims.push_back({strides[k] < 0 ? -strides[k] : strides[k], sizes[k]});
  std::sort(dims.begin(), dims.end());
  int64_t reach = 0;
  for (auto [stride, size] : dims) {
    if (stride <= reach) return true;
    reach += (size - 1) * stride;
  }
  return false;
}

// Note [Differentiable scatter of a slice]
// The vjp of slice/select places g into zeros of the input's shape. It is built from cat and
// stack (whose vjps are slices) instead of writing into a zero tensor, so that double backward
// through it works: every step stays in the autograd graph.
Tensor place_along(const Tensor& g, IntArrayRef full, int64_t dim, int64_t start, int64_t step) {
  int64_t len = g.size(dim), n = full[dim];
  Tensor body = g;
  if (step > 1 && len > 0) {
    std::vector<Tensor> parts{g};
    for (int64_t k = 1; k < step; k++) parts.push_back(fw::zeros_like(g));
    body = fw::stack(parts, dim + 1).flatten(dim, dim + 1);
    body = body.narrow(dim, 0, std::min(body.size(dim), n - start));
  }
  DimVec before(full), after(full);
  before[dim] = start;
  after[dim] = n - start - body.size(dim);
  std::vector<Tensor> pieces;
  if (before[dim] > 0) pieces.push_back(fw::zeros(before, g.dtype()));
  pieces.push_back(body);
  if (after[dim] > 0) pieces.push_back(fw::zeros(after, g.dtype()));
  return pieces.size() == 1 ? body : fw::cat(pieces, dim);
}

}  // namespace

FW_DEFINE_OP(view) {
  d.meta = view_meta;
  d.cpu = view_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { r[0] = g[0].reshape(c.in[0].sizes()); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(permute) {
  d.meta = permute_meta;
  d.cpu = permute_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    int64_t n = c.in[0].dim();
    DimVec inv(n, 0);
    for (int64_t i = 0; i < n; i++) inv[wrap_dim(c.a.ints[i], n, "permute")] = i;
    r[0] = g[0].permute(inv);
  };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(expand) {
  d.meta = expand_meta;
  d.cpu = expand_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { r[0] = sum_to(g[0], c.in[0].sizes()); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(slice) {
  d.meta = slice_meta;
  d.cpu = slice_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    int64_t dim, start, len, step;
    slice_geometry(c.in[0], c.a, dim, start, len, step);
    r[0] = place_along(g[0], c.in[0].sizes(), dim, start, step);
  };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(select) {
  d.meta = select_meta;
  d.cpu = select_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    int64_t dim, idx;
    select_geometry(c.in[0], c.a, dim, idx);
    r[0] = place_along(g[0].unsqueeze(dim), c.in[0].sizes(), dim, idx, 1);
  };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(unsqueeze) {
  d.meta = unsqueeze_meta;
  d.cpu = unsqueeze_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { r[0] = g[0].reshape(c.in[0].sizes()); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(squeeze) {
  d.meta = squeeze_meta;
  d.cpu = squeeze_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { r[0] = g[0].reshape(c.in[0].sizes()); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(as_strided) {
  d.meta = as_strided_meta;
  d.cpu = as_strided_kernel;
  // Through the storage: the view's gradient is summed into storage positions (overlapping
  // windows add up), then read back at the input's own positions. When several input elements
  // share a position (an expanded input), each gets an equal share, as in PyTorch: otherwise the
  // input's own backward (expand's sum) would count that position's gradient once per alias.
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    const Tensor& x = c.in[0];
    int64_t off = (c.a.flags & kHasOffset) ? c.a.i0 : x.storage_offset();
    Tensor out_pos = storage_positions(c.a.ints, c.a.ints2, off);
    Tensor in_pos = storage_positions(x.sizes(), x.strides(), x.storage_offset());
    int64_t len = int64_t(x.impl()->storage->nbytes / element_size(x.dtype()));
    Tensor flat = fw::zeros({len}, g[0].dtype()).index_add(0, out_pos.reshape({-1}), g[0].reshape({-1}));
    if (may_overlap(x.sizes(), x.strides())) {
      Tensor ones = fw::ones({x.numel()}, g[0].dtype());
      Tensor count = fw::zeros({len}, g[0].dtype()).index_add(0, in_pos.reshape({-1}), ones);
      flat = flat / count.clamp_min(1);
    }
    r[0] = fw::take(flat, in_pos);
  };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(view_as_real) {
  d.meta = view_as_real_meta;
  d.cpu = view_as_real_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { r[0] = fw::view_as_complex(g[0].contiguous()); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(view_as_complex) {
  d.meta = view_as_complex_meta;
  d.cpu = view_as_complex_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { r[0] = fw::view_as_real(g[0]); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(view_dtype) { d.meta = view_dtype_meta; d.cpu = view_dtype_kernel; d.differentiable = false; }
FW_DEFINE_OP(cat) {
  d.meta = cat_meta;
  d.cpu = cat_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
    if (g[0].numel() == 0 && g[0].dim() == 1) return;
    int64_t dim = wrap_dim(c.a.i0, g[0].dim(), "cat");
    int64_t off = 0;
    for (size_t i = 0; i < c.in.size(); i++) {
      const Tensor& t = c.in[i];
      if (t.dim() == 1 && t.numel() == 0) {
        if (c.needs[i]) r[i] = fw::zeros_like(t);
        continue;
      }
      if (c.needs[i]) r[i] = g[0].narrow(dim, off, t.size(dim));
      off += t.size(dim);
    }
  };
  d.vjp_reads_in = false;
}

// ---- public API
Tensor Tensor::view(IntArrayRef size) const {
  OpAttrs a;
  a.ints = DimVec(size);
  return dispatch1(OpId::view, {*this}, a);
}
Tensor Tensor::view(ScalarType t) const {
  OpAttrs a;
  a.dtype = t;
  return dispatch1(OpId::view_dtype, {*this}, a);
}
Tensor Tensor::reshape(IntArrayRef size) const {
  DimVec s = infer_size(size, numel(), "reshape");
  if (view_strides(sizes(), strides(), s)) return view(s);
  return contiguous().view(s);
}
Tensor reshape(const Tensor& t, IntArrayRef size) { return t.reshape(size); }
Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (dim() == 0) return reshape({1});
  start = wrap_dim(start, dim(), "flatten");
  end = wrap_dim(end, dim(), "flatten");
  FW_CHECK(start <= end, "[flatten] flatten() has invalid args: start_dim cannot come after end_dim");
  DimVec s;
  for (int64_t i = 0; i < start; i++) s.push_back(size(i));
  int64_t n = 1;
  for (int64_t i = start; i <= end; i++) n *= size(i);
  s.push_back(n);
  for (int64_t i = end + 1; i < dim(); i++) s.push_back(size(i));
  return reshape(s);
}
Tensor flatten(const Tensor& t, int64_t s, int64_t e) { return t.flatten(s, e); }
Tensor Tensor::unflatten(int64_t d, IntArrayRef sz) const {
  d = wrap_dim(d, dim(), "unflatten");
  FW_CHECK(!sz.empty(), "[unflatten] sizes must be non-empty");
  DimVec inner = infer_size(sz, size(d), "unflatten");
  DimVec s;
  for (int64_t i = 0; i < dim(); i++) {
    if (i == d) for (int64_t x : inner) s.push_back(x);
    else s.push_back(size(i));
  }
  return view(s);
}
Tensor unflatten(const Tensor& t, int64_t d, IntArrayRef s) { return t.unflatten(d, s); }
Tensor Tensor::permute(IntArrayRef dims) const {
  OpAttrs a;
  a.ints = DimVec(dims);
  return dispatch1(OpId::permute, {*this}, a);
}
Tensor permute(const Tensor& t, IntArrayRef dims) { return t.permute(dims); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  int64_t n = dim();
  if (n == 0) { wrap_dim(d0, 0, "transpose"); wrap_dim(d1, 0, "transpose"); return *this; }
  d0 = wrap_dim(d0, n, "transpose");
  d1 = wrap_dim(d1, n, "transpose");
  DimVec p(n, 0);
  for (int64_t i = 0; i < n; i++) p[i] = i;
  std::swap(p[d0], p[d1]);
  return permute(p);
}
Tensor transpose(const Tensor& t, int64_t d0, int64_t d1) { return t.transpose(d0, d1); }
Tensor Tensor::t() const {
  FW_CHECK(dim() <= 2, "[t] t() expects a tensor with <= 2 dimensions, but self is ", dim(), "D");
  return dim() < 2 ? *this : transpose(0, 1);
}
Tensor t(const Tensor& x) { return x.t(); }
Tensor Tensor::squeeze() const {
  OpAttrs a;
  a.flags = kSqueezeAll;
  return dispatch1(OpId::squeeze, {*this}, a);
}
Tensor Tensor::squeeze(int64_t d) const {
  OpAttrs a;
  a.i0 = d;
  return dispatch1(OpId::squeeze, {*this}, a);
}
Tensor squeeze(const Tensor& t) { return t.squeeze(); }
Tensor squeeze(const Tensor& t, int64_t d) { return t.squeeze(d); }
Tensor Tensor::unsqueeze(int64_t d) const {
  OpAttrs a;
  a.i0 = d;
  return dispatch1(OpId::unsqueeze, {*this}, a);
}
Tensor unsqueeze(const Tensor& t, int64_t d) { return t.unsqueeze(d); }
Tensor Tensor::expand(IntArrayRef size, bool) const {
  OpAttrs a;
  a.ints = DimVec(size);
  return dispatch1(OpId::expand, {*this}, a);
}
Tensor broadcast_to(const Tensor& t, IntArrayRef size) { return t.expand(size); }
std::vector<Tensor> broadcast_tensors(TensorList ts) {
  DimVec s;
  for (auto& t : ts) s = broadcast_shapes(s, t.sizes(), "broadcast_tensors");
  std::vector<Tensor> out;
  for (auto& t : ts) out.push_back(t.expand(s));
  return out;
}
Tensor Tensor::slice(int64_t d, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  OpAttrs a;
  a.i0 = d;
  a.i1 = start.value_or(0);
  a.i2 = end.value_or(INT64_MAX);
  a.ints = DimVec{step};
  return dispatch1(OpId::slice, {*this}, a);
}
Tensor Tensor::narrow(int64_t d, int64_t start, int64_t length) const {
  FW_CHECK(dim() > 0, "[narrow] narrow() cannot be applied to a 0-dim tensor.");
  d = wrap_dim(d, dim(), "narrow");
  int64_t n = size(d);
  FW_CHECK_INDEX(start >= -n && start <= n, "[narrow] start (", start, ") is out of bounds for dimension ", d, " with size ", n);
  if (start < 0) start += n;
  FW_CHECK(length >= 0 && start + length <= n, "[narrow] start (", start, ") + length (", length,
           ") exceeds dimension size (", n, ").");
  return slice(d, start, start + length);
}
Tensor narrow(const Tensor& t, int64_t d, int64_t s, int64_t l) { return t.narrow(d, s, l); }
Tensor Tensor::select(int64_t d, int64_t index) const {
  OpAttrs a;
  a.i0 = d;
  a.i1 = index;
  return dispatch1(OpId::select, {*this}, a);
}
Tensor select(const Tensor& t, int64_t d, int64_t i) { return t.select(d, i); }
Tensor Tensor::as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> offset) const {
  OpAttrs a;
  a.ints = DimVec(size);
  a.ints2 = DimVec(stride);
  if (offset) {
    a.i0 = *offset;
    a.flags = kHasOffset;
  }
  return dispatch1(OpId::as_strided, {*this}, a);
}
Tensor as_strided(const Tensor& t, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> off) {
  return t.as_strided(size, stride, off);
}
std::vector<Tensor> Tensor::split(int64_t split_size, int64_t d) const {
  FW_CHECK(dim() > 0, "[split] split expects at least a 1-dimensional tensor");
  d = wrap_dim(d, dim(), "split");
  int64_t n = size(d);
  FW_CHECK(split_size > 0 || (split_size == 0 && n == 0), "[split] split_size can only be 0 if dimension size is 0, but got dimension size of ", n);
  std::vector<Tensor> out;
  if (n == 0) { out.push_back(*this); return out; }
  for (int64_t s = 0; s < n; s += split_size) out.push_back(narrow(d, s, std::min(split_size, n - s)));
  return out;
}
std::vector<Tensor> Tensor::split_with_sizes(IntArrayRef sizes_, int64_t d) const {
  FW_CHECK(dim() > 0, "[split_with_sizes] expects at least a 1-dimensional tensor");
  d = wrap_dim(d, dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : sizes_) {
    FW_CHECK(s >= 0, "[split_with_sizes] expects split_sizes have only non-negative entries, but got split_sizes=", sizes_);
    total += s;
  }
  FW_CHECK(total == size(d), "[split_with_sizes] expects split_sizes to sum exactly to ", size(d),
           " (input tensor's size at dimension ", d, "), but got split_sizes=", sizes_);
  std::vector<Tensor> out;
  int64_t off = 0;
  for (int64_t s : sizes_) { out.push_back(narrow(d, off, s)); off += s; }
  return out;
}
std::vector<Tensor> Tensor::split(IntArrayRef sizes_, int64_t d) const { return split_with_sizes(sizes_, d); }
std::vector<Tensor> split(const Tensor& t, int64_t s, int64_t d) { return t.split(s, d); }
std::vector<Tensor> split(const Tensor& t, IntArrayRef s, int64_t d) { return t.split_with_sizes(s, d); }
std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t d) const {
  FW_CHECK(chunks > 0, "[chunk] chunk expects `chunks` to be greater than 0, got: ", chunks);
  FW_CHECK(dim() > 0, "[chunk] chunk expects at least a 1-dimensional tensor");
  d = wrap_dim(d, dim(), "chunk");
  int64_t n = size(d);
  int64_t each = (n + chunks - 1) / chunks;
  if (each == 0) {
    std::vector<Tensor> out;
    for (int64_t i = 0; i < chunks; i++) out.push_back(narrow(d, 0, 0));
    return out;
  }
  return split(each, d);
}
std::vector<Tensor> chunk(const Tensor& t, int64_t c, int64_t d) { return t.chunk(c, d); }
std::vector<Tensor> Tensor::unbind(int64_t d) const {
  FW_CHECK(dim() > 0, "[unbind] Dimension specified as 0 but tensor has no dimensions");
  d = wrap_dim(d, dim(), "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < size(d); i++) out.push_back(select(d, i));
  return out;
}
std::vector<Tensor> unbind(const Tensor& t, int64_t d) { return t.unbind(d); }

Tensor cat(TensorList ts, int64_t dim) {
  OpAttrs a;
  a.i0 = dim;
  // Note [Channels-last results] (core/layout.h): channels-last when every input is.
  bool cl = !ts.empty();
  for (const Tensor& t : ts) cl = cl && t.defined() && t.dim() == ts[0].dim() && is_channels_last(t);
  return channels_last_if(dispatch1(OpId::cat, ts, a), cl);
}
Tensor concat(TensorList ts, int64_t dim) { return cat(ts, dim); }
Tensor stack(TensorList ts, int64_t dim) {
  FW_CHECK(!ts.empty(), "[stack] expects a non-empty TensorList");
  for (size_t i = 1; i < ts.size(); i++)
    FW_CHECK(ts[i].sizes().equals(ts[0].sizes()), "[stack] stack expects each tensor to be equal size, but got ",
             ts[0].sizes(), " at entry 0 and ", ts[i].sizes(), " at entry ", i);
  int64_t d = wrap_dim(dim, ts[0].dim() + 1, "stack");
  std::vector<Tensor> u;
  for (auto& t : ts) u.push_back(t.unsqueeze(d));
  return cat(u, d);
}
Tensor hstack(TensorList ts) {
  FW_CHECK(!ts.empty(), "[hstack] expects a non-empty TensorList");
  std::vector<Tensor> v;
  for (auto& t : ts) v.push_back(t.dim() == 0 ? t.reshape({1}) : t);
  return cat(v, v[0].dim() == 1 ? 0 : 1);
}
Tensor vstack(TensorList ts) {
  std::vector<Tensor> v;
  for (auto& t : ts) v.push_back(t.dim() < 2 ? t.reshape({1, -1}) : t);
  return cat(v, 0);
}
Tensor view_as_real(const Tensor& t) { return dispatch1(OpId::view_as_real, {t}, OpAttrs()); }
Tensor view_as_complex(const Tensor& t) { return dispatch1(OpId::view_as_complex, {t}, OpAttrs()); }
Tensor Tensor::view_as_real() const { return fw::view_as_real(*this); }

}  // namespace fw
