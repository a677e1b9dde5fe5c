// Movement ops: flip, roll, repeat, constant_pad_nd (copies), unfold (a view), and the
// composites tile and pad (reflect / replicate / circular lower to index_select).
#include "core/loops.h"
#include "core/layout.h"
#include "core/op.h"
#include "core/visit.h"

namespace fw {
using namespace detail;

namespace {

// Wrapped, distinct dims of t (a 0-dim tensor accepts dim 0 and -1).
DimVec distinct_dims(const Tensor& t, IntArrayRef dims, const char* op) {
  std::vector<bool> seen(std::max<int64_t>(t.dim(), 1), false);
  DimVec out;
  for (int64_t d : dims) {
    int64_t w = wrap_dim(d, t.dim(), op);
    FW_CHECK(!seen[w], "[", op, "] dim ", w, " appears multiple times in the list of dims");
    seen[w] = true;
    if (t.dim() > 0) out.push_back(w);
  }
  return out;
}

// ---- flip: ints = dims.
// Note [Negative strides]
// The kernel copies from a private view of the input that walks the flipped dims backwards
// (negated strides, offset at the last element). The strided loops take byte strides of either
// sign, and a contiguous reversed run becomes a plain backwards loop; such a view never leaves
// the kernel, since fw tensors have non-negative strides.
void flip_meta(const OpCall& c, Metas& m) {
  distinct_dims(c.in[0], c.a.ints, "flip");
  m.push_back({DimVec(c.in[0].sizes()), c.in[0].dtype()});
}
void flip_kernel(const OpCall& c, Outs& o) {
  const Tensor& t = c.in[0];
  if (t.numel() == 0) return;
  DimVec st(t.strides());
  int64_t off = t.storage_offset();
  for (int64_t d : distinct_dims(t, c.a.ints, "flip")) {
    off += (t.sizes()[d] - 1) * st[d];
    st[d] = -st[d];
  }
  Tensor rev = make_view(t, t.sizes(), st, off);
  auto L = make_loop<2>({&o[0], &rev});
  visit_storage(t.dtype(), "flip", [&]<class T>() {
    constexpr int64_t w = sizeof(T);
    run_loop<2>(L, [](char** p, const int64_t* s, int64_t m) {
      T* out = reinterpret_cast<T*>(p[0]);
      const T* x = reinterpret_cast<const T*>(p[1]);
      if (s[0] == w && s[1] == -w) {
        for (int64_t i = 0; i < m; i++) out[i] = x[-i];
      } else {
        for (int64_t i = 0; i < m; i++) *reinterpret_cast<T*>(p[0] + i * s[0]) = *reinterpret_cast<const T*>(p[1] + i * s[1]);
      }
    });
  });
}

// ---- roll: ints = shifts, ints2 = dims (empty: the flattened tensor rolls by shifts[0]).
void roll_meta(const OpCall& c, Metas& m) {
  const Tensor& t = c.in[0];
  IntArrayRef shifts = c.a.ints, dims = c.a.ints2;
  FW_CHECK(!shifts.empty(), "[roll] `shifts` required");
  FW_CHECK(shifts.size() == dims.size() || (dims.empty() && shifts.size() == 1),
           "[roll] shifts and dimensions must align. shifts: ", shifts.size(), ", dims:", dims.size());
  FW_CHECK(t.dim() > 0 || dims.empty(), "[roll] Dimension specified as ", dims.empty() ? 0 : dims[0],
           " but tensor has no dimensions");
  for (int64_t d : dims) wrap_dim(d, t.dim(), "roll");
  m.push_back({DimVec(t.sizes()), t.dtype()});
}
// Each rolled dim splits into two blocks, dst[s:] <- src[:n-s] and dst[:s] <- src[n-s:]; the
// output is the 2^k combinations of blocks over the k rolled dims, one strided copy each.
void roll_kernel(const OpCall& c, Outs& o) {
  if (o[0].numel() == 0) return;
  Tensor src = c.in[0], dst = o[0];
  DimVec dims(c.a.ints2);
  if (dims.empty()) {
    src = src.reshape({-1});
    dst = dst.view({-1});
    dims = DimVec{0};
  }
  DimVec shift(src.dim(), 0), rolled;
  for (size_t k = 0; k < dims.size(); k++) {
    int64_t d = wrap_dim(dims[k], src.dim(), "roll"), n = src.sizes()[d];
    shift[d] = ((shift[d] + c.a.ints[k] % n) % n + n) % n;
  }
  for (int64_t d = 0; d < src.dim(); d++)
    if (shift[d] != 0) rolled.push_back(d);
  for (int64_t mask = 0; mask < (int64_t(1) << rolled.size()); mask++) {
    Tensor a = dst, b = src;
    for (size_t j = 0; j < rolled.size(); j++) {
      int64_t d = rolled[j], n = src.sizes()[d], s = shift[d];
      bool wrapped = (mask >> j) & 1;
      a = a.narrow(d, wrapped ? 0 : s, wrapped ? s : n - s);
      b = b.narrow(d, wrapped ? n - s : 0, wrapped ? s : n - s);
    }
    a.copy_(b);
  }
}

// ---- repeat: ints = repeats, at least one per dim of the input (extra ones lead).
DimVec repeat_shape(const Tensor& t, IntArrayRef r) {
  FW_CHECK(r.size() >= size_t(t.dim()), "[repeat] Number of dimensions of repeat dims can not be smaller than number "
           "of dimensions of tensor, got repeats ", r, " for a tensor of shape ", t.sizes());
  int64_t lead = int64_t(r.size()) - t.dim();
  DimVec s(r.size(), 0);
  bool negative = false;
  for (int64_t i = 0; i < int64_t(r.size()); i++) {
    s[i] = r[i] * (i < lead ? 1 : t.sizes()[i - lead]);
    negative = negative || r[i] < 0;
  }
  FW_CHECK(!negative, "[repeat] Trying to create tensor with negative dimension: repeats ", r, " give shape ", s);
  shape_numel(s, "repeat");
  return s;
}
void repeat_meta(const OpCall& c, Metas& m) {
  m.push_back({repeat_shape(c.in[0], c.a.ints), c.in[0].dtype()});
}
// The output seen as [r0, s0, r1, s1, ...] receives the input broadcast along the r dims.
void repeat_kernel(const OpCall& c, Outs& o) {
  if (o[0].numel() == 0) return;
  const Tensor& t = c.in[0];
  IntArrayRef r = c.a.ints;
  int64_t lead = int64_t(r.size()) - t.dim();
  DimVec big, src_st;
  for (int64_t i = 0; i < int64_t(r.size()); i++) {
    big.push_back(r[i]);
    big.push_back(i < lead ? 1 : t.sizes()[i - lead]);
    src_st.push_back(0);
    src_st.push_back(i < lead ? 0 : t.strides()[i - lead]);
  }
  Tensor dst = make_view(o[0], big, contiguous_strides(big), o[0].storage_offset());
  dst.copy_(make_view(t, big, src_st, t.storage_offset()));
}

// ---- constant_pad_nd: ints = pad (pairs, last dim first; negative values crop), s0 = value.
DimVec padded_shape(const Tensor& t, IntArrayRef pad) {
  FW_CHECK(pad.size() % 2 == 0, "[constant_pad_nd] Length of pad must be even but instead it equals ", pad.size());
  FW_CHECK(int64_t(pad.size()) <= 2 * t.dim(), "[constant_pad_nd] Length of pad should be no more than twice the "
           "number of dimensions of the input. Pad length is ", pad.size(), " while the input has ", t.dim(),
           " dimensions.");
  DimVec s(t.sizes());
  for (size_t k = 0; k < pad.size() / 2; k++) {
    int64_t d = t.dim() - 1 - int64_t(k), n = s[d] + pad[2 * k] + pad[2 * k + 1];
    FW_CHECK(n >= 0, "[constant_pad_nd] The input size ", s[d], ", plus negative padding ", pad[2 * k], " and ",
             pad[2 * k + 1], " resulted in a negative output size, which is invalid. Check dimension ", d,
             " of your input.");
    s[d] = n;
  }
  return s;
}
void constant_pad_meta(const OpCall& c, Metas& m) {
  m.push_back({padded_shape(c.in[0], c.a.ints), c.in[0].dtype()});
}
void constant_pad_kernel(const OpCall& c, Outs& o) {
  o[0].fill_(c.a.s0);
  Tensor dst = o[0], src = c.in[0];
  IntArrayRef pad = c.a.ints;
  for (size_t k = 0; k < pad.size() / 2; k++) {
    int64_t d = src.dim() - 1 - int64_t(k), l = pad[2 * k], r = pad[2 * k + 1];
    int64_t crop_l = std::max<int64_t>(0, -l), len = src.sizes()[d] - crop_l - std::max<int64_t>(0, -r);
    if (len <= 0) return;
    src = src.narrow(d, crop_l, len);
    dst = dst.narrow(d, std::max<int64_t>(0, l), len);
  }
  if (dst.numel() > 0) dst.copy_(src);
}

// ---- unfold: i0 = dim, i1 = size, i2 = step. Windows of `size` elements every `step` along dim
// become a new last dim of a view sharing the input's storage.
void unfold_geometry(const Tensor& t, const OpAttrs& a, DimVec& s, DimVec& st) {
  int64_t dim = wrap_dim(a.i0, t.dim(), "unfold");
  int64_t n = t.dim() == 0 ? 1 : t.sizes()[dim], size = a.i1, step = a.i2;
  FW_CHECK(size >= 0, "[unfold] size is ", size, " but must be >= 0");
  FW_CHECK(size <= n, "[unfold] maximum size for tensor at dimension ", dim, " is ", n, " but size is ", size);
  FW_CHECK(step > 0, "[unfold] step is ", step, " but must be > 0");
  s = DimVec(t.sizes());
  st = DimVec(t.strides());
  int64_t inner = t.dim() == 0 ? 1 : st[dim];
  if (t.dim() > 0) {
    s[dim] = (n - size) / step + 1;
    st[dim] *= step;
  }
  s.push_back(size);
  st.push_back(inner);
}
void unfold_meta(const OpCall& c, Metas& m) {
  DimVec s, st;
  unfold_geometry(c.in[0], c.a, s, st);
  m.push_back({s, c.in[0].dtype()});
}
void unfold_kernel(const OpCall& c, Outs& o) {
  DimVec s, st;
  unfold_geometry(c.in[0], c.a, s, st);
  o[0] = make_view(c.in[0], s, st, c.in[0].storage_offset());
}

// Source position of output positions [from, from + count) of one padded dim (pad modes other
// than constant). Circular padding crops first and wraps around the cropped range, as PyTorch does.
Tensor pad_map(const std::string& mode, int64_t n, int64_t l, int64_t r, int64_t from, int64_t count) {
  Tensor map = make_tensor({count}, kLong);
  int64_t* p = map.data_ptr<int64_t>();
  const int m = mode == "reflect" ? 0 : mode == "replicate" ? 1 : 2;
  const int64_t crop = std::max<int64_t>(0, -l), kept = n - crop - std::max<int64_t>(0, -r);
  for (int64_t j = 0; j < count; j++) {
    const int64_t i = from + j, q = i - l;
    if (m == 0) p[j] = q < 0 ? -q : q >= n ? 2 * (n - 1) - q : q;
    else if (m == 1) p[j] = std::clamp<int64_t>(q, 0, n - 1);
    else p[j] = crop + ((i - std::max<int64_t>(0, l)) % kept + kept) % kept;
  }
  return map;
}

void check_pad_dim(const Tensor& x, const std::string& mode, int64_t d, int64_t l, int64_t r) {
  int64_t n = x.sizes()[d];
  FW_CHECK(n > 0, "[pad] ", mode, " padding needs a non-empty dimension ", d, ", got input of shape ", x.sizes());
  FW_CHECK(n + l + r >= 0, "[pad] input (", n, ") of dimension ", d, " is too small for padding (", l, ", ", r,
           "): calculated output size ", n + l + r);
  if (mode == "reflect")
    FW_CHECK(l < n && r < n, "[pad] Argument #4: Padding size should be less than the corresponding input dimension, "
             "but got: padding (", l, ", ", r, ") at dimension ", d, " of input ", x.sizes());
  if (mode == "circular") {
    FW_CHECK(l <= n && r <= n, "[pad] Padding value causes wrapping around more than once: padding (", l, ", ", r,
             ") at dimension ", d, " of input ", x.sizes());
    FW_CHECK(n + std::min<int64_t>(l, 0) + std::min<int64_t>(r, 0) > 0 || (l <= 0 && r <= 0),
             "[pad] circular padding (", l, ", ", r, ") crops dimension ", d, " of input ", x.sizes(),
             " to nothing and then pads it");
  }
}

// ---- vjps (each is a movement of the gradient, built from public ops)

void roll_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  DimVec back;
  for (int64_t s : c.a.ints) back.push_back(-s);
  r[0] = g[0].roll(back, c.a.ints2);
}

// repeat: the gradient seen as [r0, s0, r1, s1, ...] sums over the r dims.
void repeat_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  IntArrayRef rep = c.a.ints;
  int64_t lead = int64_t(rep.size()) - x.dim();
  DimVec big, summed;
  for (int64_t i = 0; i < int64_t(rep.size()); i++) {
    big.push_back(rep[i]);
    big.push_back(i < lead ? 1 : x.sizes()[i - lead]);
    summed.push_back(2 * i);
  }
  r[0] = summed.empty() ? g[0].reshape(x.sizes()) : g[0].reshape(big).sum(summed).reshape(x.sizes());
}

// constant_pad_nd: the opposite padding crops what was added and restores what was cropped.
void constant_pad_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  DimVec back;
  for (int64_t p : c.a.ints) back.push_back(-p);
  r[0] = constant_pad_nd(g[0], back, 0);
}

// unfold: window w's element k is input element w * step + k along dim; overlapping windows
// add up (index_add, whose own vjp is index_select, i.e. unfold again).
void unfold_vjp(const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) {
  const Tensor& x = c.in[0];
  if (x.dim() == 0) {
    r[0] = g[0].sum();
    return;
  }
  int64_t dim = wrap_dim(c.a.i0, x.dim(), "unfold"), size = c.a.i1, step = c.a.i2;
  int64_t windows = g[0].size(dim), last = g[0].dim() - 1;
  DimVec perm;
  for (int64_t d = 0; d < last; d++) {
    perm.push_back(d);
    if (d == dim) perm.push_back(last);
  }
  Tensor gw = g[0].permute(perm).flatten(dim, dim + 1);
  Tensor pos = arange(windows, kLong).mul(step).unsqueeze(1) + arange(size, kLong).unsqueeze(0);
  r[0] = zeros(x.sizes(), g[0].dtype()).index_add(dim, pos.reshape({-1}), gw);
}

}  // namespace

FW_DEFINE_OP(flip) {
  d.meta = flip_meta;
  d.cpu = flip_kernel;
  d.vjp = [](const VjpCtx& c, ArrayRef<Tensor> g, Outs& r) { r[0] = g[0].flip(c.a.ints); };
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(roll) { d.meta = roll_meta; d.cpu = roll_kernel; d.vjp = roll_vjp; d.vjp_reads_in = false; }
FW_DEFINE_OP(repeat) { d.meta = repeat_meta; d.cpu = repeat_kernel; d.vjp = repeat_vjp; d.vjp_reads_in = false; }
FW_DEFINE_OP(constant_pad_nd) {
  d.meta = constant_pad_meta;
  d.cpu = constant_pad_kernel;
  d.vjp = constant_pad_vjp;
  d.vjp_reads_in = false;
}
FW_DEFINE_OP(unfold) { d.meta = unfold_meta; d.cpu = unfold_kernel; d.vjp = unfold_vjp; d.vjp_reads_in = false; }

// ---- public API
Tensor flip(const Tensor& t, IntArrayRef dims) {
  OpAttrs a;
  a.ints = DimVec(dims);
  return dispatch1(OpId::flip, {t}, a);
}
Tensor Tensor::flip(IntArrayRef dims) const { return fw::flip(*this, dims); }
Tensor roll(const Tensor& t, IntArrayRef shifts, IntArrayRef dims) {
  OpAttrs a;
  a.ints = DimVec(shifts);
  a.ints2 = DimVec(dims);
  return dispatch1(OpId::roll, {t}, a);
}
Tensor Tensor::roll(IntArrayRef shifts, IntArrayRef dims) const { return fw::roll(*this, shifts, dims); }
Tensor Tensor::repeat(IntArrayRef repeats) const {
  OpAttrs a;
  a.ints = DimVec(repeats);
  return dispatch1(OpId::repeat, {*this}, a);
}
Tensor tile(const Tensor& t, IntArrayRef reps) {
  DimVec r(reps);
  while (int64_t(r.size()) < t.dim()) r.insert(0, 1);
  return t.repeat(r);
}
Tensor Tensor::tile(IntArrayRef reps) const { return fw::tile(*this, reps); }
Tensor constant_pad_nd(const Tensor& x, IntArrayRef pad, const Scalar& value) {
  OpAttrs a;
  a.ints = DimVec(pad);
  a.s0 = value;
  return channels_last_if(dispatch1(OpId::constant_pad_nd, {x}, a), is_channels_last(x));  // Note [Channels-last results]
}
Tensor Tensor::unfold(int64_t dim, int64_t size, int64_t step) const {
  OpAttrs a;
  a.i0 = dim;
  a.i1 = size;
  a.i2 = step;
  return dispatch1(OpId::unfold, {*this}, a);
}

Tensor pad(const Tensor& x, IntArrayRef pad, const std::string& mode, double value) {
  if (mode == "constant") return constant_pad_nd(x, pad, value);
  FW_CHECK(mode == "reflect" || mode == "replicate" || mode == "circular", "[pad] Unrecognised padding mode ", mode);
  FW_CHECK(value == 0, "[pad] Padding mode \"", mode, "\" doesn't take in value argument");
  FW_CHECK(pad.size() % 2 == 0, "[pad] Padding length must be divisible by 2");
  FW_CHECK(int64_t(pad.size()) <= 2 * x.dim(), "[pad] Padding length too large");
  int64_t k = int64_t(pad.size()) / 2;
  FW_CHECK(k >= 1 && k <= 3 && (x.dim() == k + 1 || x.dim() == k + 2), "[pad] Only 2D, 3D, 4D, 5D padding with "
           "non-constant padding are supported for now (", mode, " padding of ", k, " dims, input of shape ",
           x.sizes(), ")");
  if (mode == "circular")
    FW_CHECK(x.dim() == k + 2, "[pad] Invalid padding size, expected ", 2 * (x.dim() - 2), " but got ", pad.size(),
             " (circular padding needs batch and channel dims)");
  else
    FW_CHECK(x.is_floating_point() || x.is_complex(), "[pad] ", mode, " padding not implemented for dtype ",
             dtype_str(x.dtype()));
  Tensor y = x;
  for (int64_t j = 0; j < k; j++) {
    int64_t d = x.dim() - 1 - j, l = pad[2 * j], r = pad[2 * j + 1];
    check_pad_dim(x, mode, d, l, r);
    const int64_t n = x.sizes()[d];
    if (l >= 0 && r >= 0) {
      // Only the borders gather; the interior is one copy by cat (long signals: stft's centring).
      std::vector<Tensor> parts;
      if (l > 0) parts.push_back(y.index_select(d, pad_map(mode, n, l, r, 0, l)));
      parts.push_back(y);
      if (r > 0) parts.push_back(y.index_select(d, pad_map(mode, n, l, r, l + n, r)));
      y = parts.size() == 1 ? y.clone() : fw::cat(parts, d);
    } else {
      y = y.index_select(d, pad_map(mode, n, l, r, 0, n + l + r));
    }
  }
  return y;
}

}  // namespace fw
