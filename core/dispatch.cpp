// The op table and the dispatch door (DESIGN.md §3).
#include <atomic>
#include <omp.h>

#include <sstream>

#include "core/autocast.h"
#include "core/layout.h"
#include "core/op.h"
#include "core/parallel.h"
#include "core/profile.h"
#include "core/visit.h"

namespace fw::detail {

namespace {
struct OpTable {
  OpDef defs[kNumOps];
  OpTable() {
#define FW_X(name_, kind_)                          \
  defs[int(OpId::name_)].name = #name_;             \
  defs[int(OpId::name_)].kind = OpKind::kind_;      \
  define_##name_(defs[int(OpId::name_)]);
    FW_OPS(FW_X)
#undef FW_X
    for (auto& d : defs) FW_ASSERT(d.meta && d.cpu);
  }
};
const OpTable& table() {
  static const OpTable t;
  return t;
}
}  // namespace

const OpDef& op_def(OpId id) { return table().defs[int(id)]; }
const OpDef* op_table_begin() { return table().defs; }

ThreadState& tls() {
  thread_local ThreadState s;
  return s;
}

void unsupported_dtype(const char* op, ScalarType t) {
  throw_error("[", op, "] not implemented for dtype ", dtype_str(t));
}

static bool any_requires_grad(ArrayRef<Tensor> in) {
  for (auto& t : in)
    if (t.impl()->autograd && t.impl()->autograd->requires_grad) return true;
  return false;
}
static void dispatch_into_with_grad(const OpDef& d, OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Tensor& out);

static void check_inputs(const OpDef& d, ArrayRef<Tensor> in) {
  for (size_t i = 0; i < in.size(); i++) {
    FW_CHECK(in[i].defined(), "[", d.name, "] argument #", i, " is an undefined tensor");
    FW_CHECK(in[i].device() == in[0].device(), "[", d.name,
             "] expected all tensors to be on the same device, but found ", in[0].device(), " and ",
             in[i].device());
  }
}

// Note [Dispatch door]
// Eager calls pay for: one table read, the input checks, meta (shape/dtype inference and
// argument validation), output allocation, the kernel. Tracing (fw::compile) and autograd
// recording hook in at the tls() check below and are filled in by their issues; both reuse
// meta, so a shape error reads the same eager, traced or compiled.
Outs dispatch(OpId id, ArrayRef<Tensor> in, const OpAttrs& a) {
  ThreadState& ts = tls();
  // Before the tracer: a trace records autocast's casts as ops (Note [Autocast]).
  if (FW_UNLIKELY(ts.autocast) && autocasts_to_lower(id)) return autocast_dispatch(id, in, a);
  if (void* tr = ts.tracer; FW_UNLIKELY(tr != nullptr)) return g_tracer->dispatch(tr, id, in, a);
  const OpDef& d = op_def(id);
  check_inputs(d, in);
  OpCall c{d, in, a};
  Metas m;
  d.meta(c, m);
  Outs outs;
  if (d.kind == OpKind::View) {
    outs.resize(m.size());
  } else if (std::vector<int64_t> order = result_order(id, in, a, m); !order.empty()) {
    // Laid out like the inputs (Note [Pointwise result layouts] in core/ops/creation.cpp).
    for (auto& t : m)
      outs.push_back(empty_in_order(t.sizes, t.dtype, in[0].device(), t.sizes == m[0].sizes ? order : std::vector<int64_t>{}));
  } else {
    Device dev = in.empty() ? Device(kCPU) : in[0].device();
    for (auto& t : m) outs.push_back(make_tensor(t.sizes, t.dtype, dev));
  }
  {
    ProfileScope prof("op", d.name);
    d.cpu(c, outs);
  }
  if (d.kind == OpKind::View && !in.empty()) {
    const auto& src = in[0].impl();
    const intrusive_ptr<TensorImpl>& root = src->view_base ? src->view_base : src;
    for (auto& o : outs)
      if (o.defined() && o.impl()->storage == src->storage) o.impl()->view_base = root;
  }
  if (FW_UNLIKELY(g_autograd != nullptr) && d.differentiable && tls().grad_enabled && any_requires_grad(in))
    g_autograd->record(id, in, a, outs);
  return outs;
}

static bool overlaps_differently(const Tensor& out, ArrayRef<Tensor> in) {
  for (auto& t : in) {
    if (!t.is_alias_of(out)) continue;
    if (t.storage_offset() != out.storage_offset() || !t.sizes().equals(out.sizes()) ||
        !t.strides().equals(out.strides()))
      return true;
  }
  return false;
}

void inference_write_error(const char* op) {
  throw_error("[", op, "] Inplace update to inference tensor outside InferenceMode is not allowed. You can make a "
              "clone to get a normal tensor before doing inplace update.");
}

void internal_overlap_error(const Tensor& dst, const char* op) {
  throw_error("[", op, "] unsupported operation: more than one element of the written-to tensor (shape ",
              dst.sizes(), ", strides ", dst.strides(), ") refers to a single memory location. Please clone() the "
              "tensor before performing the operation.");
}

void dispatch_into(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Tensor& out) {
  if (void* tr = tls().tracer; FW_UNLIKELY(tr != nullptr)) return g_tracer->dispatch_into(tr, id, in, a, out);
  const OpDef& d = op_def(id);
  check_inputs(d, in);
  FW_CHECK(out.defined(), "[", d.name, "] output tensor is undefined");
  check_inference_write(out, d.name);
  if (id != OpId::fill) check_no_internal_overlap(out, d.name);
  if (FW_UNLIKELY(g_autograd != nullptr) && tls().grad_enabled &&
      (any_requires_grad(in) || any_requires_grad(ArrayRef<Tensor>(&out, 1)) ||
       base_requires_grad(out)))
    return dispatch_into_with_grad(d, id, in, a, out);
  OpCall c{d, in, a};
  Metas m;
  d.meta(c, m);
  FW_CHECK(m.size() == 1, "[", d.name, "] has ", m.size(), " outputs; an out= form needs exactly one");
  FW_CHECK(m[0].sizes == DimVec(out.sizes()), "[", d.name, "] output with shape ", out.sizes(),
           " doesn't match the broadcast shape ", m[0].sizes);
  FW_CHECK(can_cast(m[0].dtype, out.dtype()), "[", d.name, "] result type ", dtype_name(m[0].dtype),
           " can't be cast to the desired output type ", dtype_name(out.dtype()));
  // fill writes in place whatever out's strides (an expanded out may be filled: every element
  // that shares memory takes the same value).
  bool direct = (d.kind == OpKind::Elementwise || id == OpId::fill) && m[0].dtype == out.dtype() &&
                !overlaps_differently(out, in);
  Outs outs;
  ProfileScope prof("op", d.name);
  if (direct) {
    outs.push_back(out);
    d.cpu(c, outs);
  } else {
    outs.push_back(make_tensor(m[0].sizes, m[0].dtype, out.device()));
    d.cpu(c, outs);
    out.copy_(outs[0]);
    out.impl()->storage->last_writer = d.name;
    return;  // copy_ bumped the version
  }
  bump_version(out, d.name);
}

Tensor sum_to(const Tensor& g, IntArrayRef shape) {
  if (g.sizes().equals(shape)) return g;
  int64_t lead = g.dim() - int64_t(shape.size());
  DimVec dims;
  for (int64_t i = 0; i < g.dim(); i++)
    if (i < lead || (shape[i - lead] == 1 && g.sizes()[i] != 1)) dims.push_back(i);
  Tensor s = dims.empty() ? g : g.sum(dims, /*keepdim=*/true);
  return s.reshape(shape);
}

void bump_version(const Tensor& t, const char* writer) {
  t.impl()->version().fetch_add(1, std::memory_order_relaxed);
  if (writer) t.impl()->storage->last_writer = writer;
}

const AutogradHooks* g_autograd = nullptr;
const TracerHooks* g_tracer = nullptr;

bool traced_nonleaf(const TensorImpl* t) {
  void* tr = tls().tracer;
  return tr && g_tracer->traced_nonleaf(tr, t);
}

void placeholder_data_access(const TensorImpl* t) {
  void* tr = tls().tracer;
  if (!t->storage->placeholder) {  // real memory while a trace runs: only the trace on this thread cares
    if (tr != nullptr && g_tracer != nullptr) g_tracer->materialize(tr, t);
    return;
  }
  FW_CHECK(tr != nullptr && g_tracer != nullptr,
           "[data_ptr] this tensor is a value traced by fw::compile and has no data outside its trace "
           "(do not keep tensors created inside a compiled function's trace; use its results)");
  g_tracer->materialize(tr, t);
}


// Note [In-place ops under autograd]
// An in-place op on a tensor that takes part in autograd runs out of place (inputs that alias
// the destination are cloned first, so their old values stay in the graph), writes the result
// into the destination, and gives the destination the new result's grad_fn. When the destination
// is a view, the write also enters its base's history (Note [In-place writes through views] in
// autograd/node.cpp). Leaves that require grad, and views of them, are rejected by the hook.
static void dispatch_into_with_grad(const OpDef& d, OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Tensor& out) {
  g_autograd->check_inplace(d, out);
  std::vector<Tensor> ins;
  for (auto& t : in) ins.push_back(t.is_alias_of(out) ? t.clone() : t);
  Outs r = dispatch(id, ins, a);
  FW_CHECK(r[0].sizes().equals(out.sizes()), "[", d.name, "] output with shape ", out.sizes(),
           " doesn't match the broadcast shape ", r[0].sizes());
  FW_CHECK(can_cast(r[0].dtype(), out.dtype()), "[", d.name, "] result type ", dtype_name(r[0].dtype()),
           " can't be cast to the desired output type ", dtype_name(out.dtype()));
  {
    AutoGradMode off(false);
    out.copy_(r[0]);  // one version bump, as libtorch counts one per in-place op
  }
  out.impl()->storage->last_writer = d.name;
  if (out.impl()->view_base) g_autograd->rebase_view(out, r[0]);
  else rebind_grad(out, r[0]);
}

void rebind_grad(const Tensor& dst, const Tensor& src) {
  auto& s = src.impl()->autograd;
  auto& d = dst.impl()->autograd;
  if (!d) d = std::make_unique<AutogradMeta>();
  const bool moved = d->grad_fn != (s ? s->grad_fn : nullptr) || d->output_nr != (s ? s->output_nr : 0);
  d->requires_grad = s && s->requires_grad;
  d->grad_fn = s ? s->grad_fn : nullptr;
  d->output_nr = s ? s->output_nr : 0;
  if (!moved) return;
  // The tensor has a new history: views taken from it earlier are re-derived from it when next
  // used (autograd's gradient_edge compares generations), and retain_grad() follows it to the
  // new node (the old hook's token dies with `alive`).
  if (!dst.impl()->view_base) d->rebase_gen++;
  move_retained_grad(dst);
}

void move_retained_grad(const Tensor& t) {
  auto& m = t.impl()->autograd;
  if (!m || !m->retains_grad) return;
  m->retains_grad = false;
  m->alive.reset();  // the old node's hook holds a weak token to this: it now does nothing
  if (m->grad_fn) t.retain_grad();
}

int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op) {
  int64_t n = ndim == 0 ? 1 : ndim;
  FW_CHECK_INDEX(dim >= -n && dim < n, "[", op, "] Dimension out of range (expected to be in range of [", -n, ", ",
           n - 1, "], but got ", dim, ")");
  return dim < 0 ? dim + n : dim;
}

DimVec broadcast_shapes(IntArrayRef a, IntArrayRef b, const char* op) {
  size_t n = std::max(a.size(), b.size());
  DimVec out(n, 1);
  for (size_t i = 0; i < n; i++) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    FW_CHECK(da == db || da == 1 || db == 1, "[", op, "] The size of tensor a (", da,
             ") must match the size of tensor b (", db, ") at non-singleton dimension ", i);
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// PyTorch's combine_categories: the higher-priority class wins unless the lower one is of a
// higher category; a complex lower class keeps a floating higher class's precision
// (float64 + complex64 -> complex128, float32 + complex128 -> complex64).
static ScalarType combine(std::optional<ScalarType> higher, std::optional<ScalarType> lower) {
  if (!higher) return *lower;
  if (!lower) return *higher;
  ScalarType h = *higher, l = *lower;
  if (is_complex(h)) return h;
  if (is_complex(l)) {
    // toComplexType; float16 would give complex32, which fw lacks: complex64 as promote_types.
    if (is_floating_point(h)) return h == kHalf ? kComplexFloat : to_complex_type(h);
    return l;
  }
  if (is_floating_point(h)) return h;
  if (h == kBool || is_floating_point(l)) return promote_types(h, l);
  return h;
}

ScalarType result_type(ArrayRef<Tensor> ts, const Scalar* scalar) {
  // Three priority classes, as PyTorch: dimensioned tensors, 0-dim tensors, wrapped numbers.
  std::optional<ScalarType> dimd, zerod, wrapped;
  for (auto& t : ts) {
    auto& slot = t.dim() > 0 ? dimd : zerod;
    slot = slot ? promote_types(*slot, t.dtype()) : t.dtype();
  }
  if (scalar) wrapped = scalar->type();
  FW_ASSERT(dimd || zerod || wrapped);
  if (!zerod && !wrapped) return *dimd;
  return combine(dimd, combine(zerod, wrapped));
}

bool can_cast(ScalarType from, ScalarType to) {
  if (is_complex(from) && !is_complex(to)) return false;
  if (is_floating_point(from) && is_integral(to, true)) return false;
  if (from != kBool && to == kBool) return false;
  return true;
}

DimVec contiguous_strides(IntArrayRef sizes) {
  DimVec s(sizes.size(), 1);
  int64_t acc = 1;
  for (int64_t i = int64_t(sizes.size()) - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= std::max<int64_t>(sizes[i], 1);
  }
  return s;
}

int64_t shape_numel(IntArrayRef sizes, const char* op) {
  int64_t n = 1;
  for (int64_t s : sizes) {
    FW_CHECK(s >= 0, "[", op, "] Trying to create tensor with negative dimension ", s, ": ", sizes);
    FW_CHECK(!__builtin_mul_overflow(n, s, &n), "[", op, "] shape ", sizes, " has too many elements");
  }
  return n;
}

Tensor make_tensor(IntArrayRef sizes, ScalarType dtype, Device dev) {
  int64_t n = shape_numel(sizes, "empty");
  size_t bytes;
  FW_CHECK(!__builtin_mul_overflow(size_t(n), element_size(dtype), &bytes), "[empty] shape ", sizes,
           " is too large");
  auto impl = make_intrusive<TensorImpl>();
  impl->storage = make_intrusive<StorageImpl>(bytes, dev);
  impl->sizes = DimVec(sizes);
  impl->strides = contiguous_strides(sizes);
  impl->dtype = dtype;
  impl->numel = n;
  impl->contiguous = true;
  return Tensor(std::move(impl));
}

Tensor make_view(const Tensor& t, IntArrayRef sizes, IntArrayRef strides, int64_t offset) {
  auto impl = make_intrusive<TensorImpl>();
  impl->storage = t.impl()->storage;
  impl->version_counter = t.impl()->version_counter;
  impl->sizes = DimVec(sizes);
  impl->strides = DimVec(strides);
  impl->offset = offset;
  impl->dtype = t.dtype();
  impl->refresh();
  return Tensor(std::move(impl));
}

Tensor cast(const Tensor& t, ScalarType dtype) { return t.dtype() == dtype ? t : t.to(dtype); }

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

}  // namespace fw::detail

namespace fw {

bool is_grad_enabled() { return detail::tls().grad_enabled; }
void set_grad_enabled(bool e) { detail::tls().grad_enabled = e; }
NoGradGuard::NoGradGuard() : prev_(is_grad_enabled()) { set_grad_enabled(false); }
NoGradGuard::~NoGradGuard() { set_grad_enabled(prev_); }
AutoGradMode::AutoGradMode(bool e) : prev_(is_grad_enabled()) { set_grad_enabled(e); }
AutoGradMode::~AutoGradMode() { set_grad_enabled(prev_); }

// One count for the process, as libtorch's: OpenMP's nthreads setting is per thread, so a
// DataLoader worker or the pool's own workers would otherwise see OpenMP's default instead of what
// the program set. 0 until set_num_threads is called.
namespace {
std::atomic<int> g_num_threads{0};
}
int detail::max_threads() {
  int n = g_num_threads.load(std::memory_order_relaxed);
  return n > 0 ? n : omp_get_max_threads();
}
void set_num_threads(int n) {
  FW_CHECK(n > 0, "[set_num_threads] expected a positive number of threads, got ", n);
  g_num_threads.store(n, std::memory_order_relaxed);
  omp_set_num_threads(n);  // this thread's OpenMP regions (oneDNN) follow too
}
int get_num_threads() { return detail::max_threads(); }

}  // namespace fw
