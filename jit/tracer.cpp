// The tracer (Note [Tracing and graph breaks] in tracer.h).
#include "jit/tracer.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

#include "core/layout.h"
#include "fw/nn/module.h"
#include "jit/log.h"

namespace fw::jit {

using namespace fw::detail;

namespace {

Outs hook_dispatch(void* t, OpId id, ArrayRef<Tensor> in, const OpAttrs& a) {
  return static_cast<Tracer*>(t)->on_dispatch(id, in, a);
}
void hook_dispatch_into(void* t, OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Tensor& out) {
  static_cast<Tracer*>(t)->on_dispatch_into(id, in, a, out);
}
void hook_materialize(void* t, const TensorImpl* impl) { static_cast<Tracer*>(t)->on_materialize(impl); }
void hook_graph_break(void* t, const char* op, const char* reason) { static_cast<Tracer*>(t)->on_graph_break(op, reason); }
void hook_module_mode(void* t, const void* m, bool training) {
  static_cast<Tracer*>(t)->on_module_mode(static_cast<const nn::Module*>(m), training);
}
bool hook_traced_nonleaf(void* t, const TensorImpl* impl) { return static_cast<Tracer*>(t)->traced_nonleaf(impl); }
const TracerHooks kHooks{hook_dispatch,     hook_dispatch_into, hook_materialize,
                         hook_graph_break,  hook_module_mode,   hook_traced_nonleaf};

// Runs real work (a segment, an eager op) with the tracer switched off on this thread.
struct Suspend {
  void* prev;
  Suspend() : prev(tls().tracer) { tls().tracer = nullptr; }
  ~Suspend() { tls().tracer = prev; }
};

bool wants_grad(ScalarType t) { return is_floating_point(t) || is_complex(t); }

// The op, called now, gives its floating-point results autograd history.
bool records_grad(const OpDef& d, ArrayRef<Tensor> in) {
  return tls().grad_enabled && d.differentiable &&
         std::any_of(in.begin(), in.end(), [](const Tensor& t) { return t.defined() && t.requires_grad(); });
}

void set_requires_grad_flag(const Tensor& t, bool rg) {
  auto& m = t.impl()->autograd;
  if (!rg && !m) return;
  if (!m) m = std::make_unique<AutogradMeta>();
  m->requires_grad = rg;
}

constexpr uint32_t kHasOffset = 1;  // as_strided's flag (core/ops/shape.cpp)

}  // namespace

Tracer::Scope::Scope(Tracer& t) : prev(tls().tracer) {
  g_tracer = &kHooks;
  tls().tracer = &t;
}
Tracer::Scope::~Scope() { tls().tracer = prev; }

Tracer::Tracer(std::vector<Tensor> real_inputs, bool fullgraph, SegmentRunner run, bool symbolic)
    : real_inputs_(std::move(real_inputs)), run_(std::move(run)), fullgraph_(fullgraph), symbolic_(symbolic) {
  // The function sees the real argument tensors (so autograd identities and data stay theirs);
  // the tracer knows them as graph inputs. An argument passed twice is one value.
  for (size_t i = 0; i < real_inputs_.size(); i++) {
    const Tensor& r = real_inputs_[i];
    FW_CHECK(r.defined(), "[fw::compile] tensor argument #", i, " is undefined");
    FW_CHECK(symbolic || !r.impl()->storage->placeholder, "[fw::compile] tensor argument #", i,
             " is a value traced by another fw::compile call that has finished");
    if (auto it = value_of_.find(r.impl().get()); it != value_of_.end()) {
      g_.inputs.push_back(it->second);
      continue;
    }
    g_.inputs.push_back(add_real(r, ValueKind::Input, int(i)));
  }
  // Last, so that a throwing constructor leaves the count alone (the destructor does not run).
  born_ = g_storage_clock.fetch_add(1, std::memory_order_relaxed) + 1;
  g_traces_active.fetch_add(1, std::memory_order_relaxed);
}

// A value for a real tensor (an argument or a capture) with its recorded geometry.
int Tracer::add_real(const Tensor& t, ValueKind kind, int index) {
  ValueInfo v;
  v.kind = kind;
  v.index = index;
  v.sizes = DimVec(t.sizes());
  v.strides = DimVec(t.strides());
  v.offset = t.storage_offset();
  v.dtype = t.dtype();
  v.requires_grad = t.requires_grad();
  int id = g_.add_value(std::move(v));
  value_of_[t.impl().get()] = id;
  real_of_.emplace(t.impl()->storage.get(), t.impl().get());
  held_.push_back(t.impl());
  return id;
}

Tracer::~Tracer() {
  for (auto& st : pending_) st->placeholder = false;
  g_traces_active.fetch_sub(1, std::memory_order_relaxed);
}

// A module's train/eval flag decides what its forward records (dropout, batch norm): the capture
// guards the flag of every module whose mode the trace read, wherever the module was reached
// from (a lambda calling a captured model, not only fw::compile(module)).
void Tracer::on_module_mode(const nn::Module* m, bool training) noexcept {
  for (auto& mm : module_modes_)
    if (mm.module == m) return;
  std::weak_ptr<const nn::Module> w = m->weak_from_this();
  if (w.expired()) {  // not owned by a shared_ptr: nothing safe to guard on, so never replay
    const char* note = "a module not owned by a std::shared_ptr had its train/eval mode read, so the function is "
                       "re-traced on every call";
    if (std::find(escape_notes.begin(), escape_notes.end(), note) == escape_notes.end()) escape_notes.push_back(note);
    return;
  }
  module_modes_.push_back({m, std::move(w), training});
}

// Note [Reading real values while tracing]
// A capture replays without running the function, so a value the function read from memory that
// existed before the trace (an argument's n.item() sizing a loop, x[0].item() as a scale,
// nonzero(mask) sizing a result, a captured scale.item(), lengths read by pack_padded_sequence)
// would be baked into the graph with no guard on it. While any trace runs, TensorImpl::data()
// calls back for real memory too (g_traces_active), and new storages are stamped from a clock
// (StorageImpl::birth); the trace records the clock when it begins. A read on the tracing thread,
// outside the tracer's own eager work (Suspend), of a storage born before the trace is a graph
// break, so the function is re-traced on every call and sees the new values. Storages the
// function makes during the trace (fw::tensor({...}) constants) are its own and read freely, and
// after the first break nothing is replayed without tracing, so later reads need no break. Other
// threads read as usual: the callback only acts for the trace active on the calling thread.

// Note [Traced layouts]
// A traced value has the strides eager would give it: an op's placeholder results are laid out by
// the rule dispatch uses for the real ones (result_order in core/layout.h: element-wise results
// follow their inputs, Note [Pointwise result layouts]), and views compute theirs from their
// input. Programs run their eager ops under the same rule and generated kernels write into
// buffers with the traced strides, so in a replay every value has its traced strides. Two
// things follow: a compiled function returns eager's layouts (relu(x.t()) is transposed,
// x_channels_last * 2 is channels-last), and view folding may rebuild a view from traced strides
// (as_strided). This needs the inputs and captured tensors of a replay to have the traced strides,
// which the guards check. A traced *_like result of a permuted tensor is made as in eager (a
// permuted view of a row-major result) and then cloned (make_like in core/ops/creation.cpp), so
// that it is a value of its own: in-place writes through views break the graph. The value of an
// in-place or out= write takes its target's layout (a kCopyOrder copy in on_dispatch_into when
// the op's result is laid out otherwise: fill_ of a transposed tensor stays transposed).
Tensor Tracer::placeholder(IntArrayRef sizes, ScalarType dtype, const std::vector<int64_t>& order) {
  int64_t n = shape_numel(sizes, "empty");
  auto st = make_intrusive<StorageImpl>(nullptr, size_t(n) * element_size(dtype), Device(kCPU), [](void*) {});
  st->placeholder = true;
  auto impl = make_intrusive<TensorImpl>();
  impl->storage = std::move(st);
  impl->sizes = DimVec(sizes);
  impl->strides = strides_in_order(sizes, order);
  impl->dtype = dtype;
  impl->refresh();
  return Tensor(std::move(impl));
}

int Tracer::add_external(const Tensor& t) {
  int id = add_real(t, ValueKind::External, int(g_.externals.size()));
  g_.externals.push_back(id);
  g_.external_tensors.push_back(t);
  return id;
}

int Tracer::resolve(const Tensor& t) {
  if (auto it = value_of_.find(t.impl().get()); it != value_of_.end()) return it->second;
  StorageImpl* st = t.impl()->storage.get();
  if (auto r = root_of_.find(st); r != root_of_.end()) {
    // An alias of a traced buffer made without the door (detach(), a hand-built view): record it
    // as a strided view of the value that fills the buffer.
    OpAttrs a;
    a.ints = DimVec(t.sizes());
    a.ints2 = DimVec(t.strides());
    a.i0 = t.storage_offset();
    a.flags = kHasOffset;
    Tensor base(held_[r->second]);
    AutoGradMode mode(tls().grad_enabled && t.requires_grad());  // detach() cuts the gradient
    Outs o = on_dispatch(OpId::as_strided, {base}, a);
    int v = value_of_.at(o[0].impl().get());
    value_of_[t.impl().get()] = v;
    extra_.push_back(t.impl());
    return v;
  }
  if (auto r = real_of_.find(st); r != real_of_.end()) {
    // An alias of an argument or captured tensor made without the door (x.detach()...): a view of
    // its current value, so replays read the new call's tensor, not this one.
    Tensor base(intrusive_ptr<TensorImpl>(const_cast<TensorImpl*>(r->second)));
    // Two captured tensors on one buffer that each carry autograd history (after a break: a
    // returned value and a view of it used later) stay two externals: as_strided of the other
    // would route this one's gradient into the other's history (fuzz seed 3001131). Captures are
    // read by identity on replay, so nothing ties this one to the other's new value.
    bool own_history = t.requires_grad() && g_.values[size_t(value_of_.at(r->second))].kind == ValueKind::External;
    if (!own_history && t.storage_offset() == base.storage_offset()) {
      OpAttrs a;
      a.ints = DimVec(t.sizes());
      a.ints2 = DimVec(t.strides());
      AutoGradMode mode(tls().grad_enabled && t.requires_grad());
      Outs o = on_dispatch(OpId::as_strided, {base}, a);
      int v = value_of_.at(o[0].impl().get());
      value_of_[t.impl().get()] = v;
      extra_.push_back(t.impl());
      return v;
    }
    escape_notes.push_back("an alias of an argument at another storage offset was made outside fw ops, so the "
                           "function is re-traced on every call");
  }
  if (st->placeholder) {
    bool ours = std::any_of(pending_.begin(), pending_.end(), [&](auto& p) { return p.get() == st; });
    FW_CHECK(ours, "[fw::compile] a tensor traced by another fw::compile call (which has finished) was used; "
                   "keep only the results of a compiled function, not tensors made inside its trace");
    // A second handle on a real tensor whose in-place update is still pending: run it first.
    graph_break("read", "a tensor with a pending in-place write is read through another handle");
  }
  return add_external(t);
}

Outs Tracer::on_dispatch(OpId id, ArrayRef<Tensor> in, const OpAttrs& a) {
  const OpDef& d = op_def(id);
  for (size_t i = 0; i < in.size(); i++)
    FW_CHECK(in[i].defined(), "[", d.name, "] argument #", i, " is an undefined tensor");
  size_t nb = breaks_.size();
  OpCall c{d, in, a};
  Metas m;
  const char* prev_op = current_op_;
  current_op_ = d.name;
  in_op_++;
  try {
    d.meta(c, m);
  } catch (...) {
    in_op_--;
    current_op_ = prev_op;
    throw;
  }
  in_op_--;
  current_op_ = prev_op;
  if (breaks_.size() != nb) return run_eagerly(id, in, a, nullptr);  // meta read values
  if (decompose_) {
    Outs o;
    if (decompose(id, in, a, o)) return o;
  }
  std::vector<int> ins;
  for (const Tensor& t : in) ins.push_back(resolve(t));
  if (breaks_.size() != nb) return run_eagerly(id, in, a, nullptr);
  Outs outs;
  if (d.kind == OpKind::View) {
    outs.resize(m.size());
    in_op_++;
    d.cpu(c, outs);
    in_op_--;
    const auto& src = in[0].impl();
    const intrusive_ptr<TensorImpl>& root = src->view_base ? src->view_base : src;
    for (auto& o : outs)
      if (o.defined() && o.impl()->storage == src->storage) o.impl()->view_base = root;
  } else {
    // Laid out as dispatch lays out the eager results (Note [Traced layouts]).
    std::vector<int64_t> order = result_order(id, in, a, m);
    for (auto& t : m) outs.push_back(placeholder(t.sizes, t.dtype, t.sizes == m[0].sizes ? order : std::vector<int64_t>{}));
  }
  const bool rg = records_grad(d, in);
  Node n{id, a, std::move(ins), {}, tls().grad_enabled};
  int ni = int(g_.nodes.size());
  for (size_t k = 0; k < outs.size(); k++) {
    Tensor& o = outs[k];
    bool org = rg && wants_grad(o.dtype());
    if (org) set_requires_grad_flag(o, true);
    ValueInfo v;
    v.kind = ValueKind::Node;
    v.index = ni;
    v.out_nr = int(k);
    v.sizes = DimVec(o.sizes());
    v.strides = DimVec(o.strides());
    v.offset = o.storage_offset();
    v.dtype = o.dtype();
    v.requires_grad = org;
    v.is_view = d.kind == OpKind::View;
    int vid = g_.add_value(std::move(v));
    held_.push_back(o.impl());
    value_of_[o.impl().get()] = vid;
    if (d.kind != OpKind::View) root_of_[o.impl()->storage.get()] = vid;
    n.out.push_back(vid);
  }
  g_.nodes.push_back(std::move(n));
  return outs;
}

namespace {
// A dim order whose dense strides (strides_in_order) are exactly t's, size-1 dims included, or
// nullopt when none is (t is not dense, or its size-1 dims carry strides no order gives).
std::optional<std::vector<int64_t>> exact_order(const Tensor& t) {
  const int64_t n = t.dim();
  std::vector<int64_t> identity(static_cast<size_t>(n));
  for (int64_t d = 0; d < n; d++) identity[size_t(d)] = d;
  std::vector<int64_t> by_stride = identity;  // outermost (largest stride) first
  std::stable_sort(by_stride.begin(), by_stride.end(), [&](int64_t a, int64_t b) { return t.stride(a) > t.stride(b); });
  std::vector<std::vector<int64_t>> candidates{preserved_order(t), by_stride};
  if (n == 4 || n == 5) candidates.push_back(channels_last_order(n));
  for (auto& o : candidates) {
    if (o.empty()) o = identity;
    if (t.strides().equals(strides_in_order(t.sizes(), o))) return o;
  }
  return std::nullopt;
}
}  // namespace

Tensor Tracer::copy_in_order(const Tensor& t, ScalarType dtype, const std::vector<int64_t>& order) {
  OpAttrs ca;
  ca.dtype = dtype;
  if (!order.empty()) {
    ca.flags = kCopyOrder;
    ca.ints = DimVec(order);
  }
  return on_dispatch(OpId::copy, {t}, ca)[0];
}

namespace {
// An in-place write into `out` that autograd sees: out requires grad, or the written value will.
bool in_autograd(const OpDef& d, ArrayRef<Tensor> in, const Tensor& out) {
  return out.requires_grad() || (records_grad(d, in) && wants_grad(out.dtype()));
}
}  // namespace

// Another argument or captured tensor (a different handle) lies over t's storage.
bool Tracer::shares_real_storage(const TensorImpl* t) const {
  const StorageImpl* st = t->storage.get();
  for (size_t v = 0; v < held_.size(); v++) {
    const ValueKind k = g_.values[v].kind;
    if ((k == ValueKind::Input || k == ValueKind::External) && held_[v] && held_[v].get() != t &&
        held_[v]->storage.get() == st)
      return true;
  }
  return false;
}

void Tracer::on_dispatch_into(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Tensor& out) {
  const OpDef& d = op_def(id);
  FW_CHECK(out.defined(), "[", d.name, "] output tensor is undefined");
  TensorImpl* oi = out.impl().get();
  StorageImpl* st = oi->storage.get();
  auto it = value_of_.find(oi);
  bool ours = root_of_.count(st) != 0;
  std::string why;
  // The value that stands for `out` after the write must have out's exact strides (Note [Traced
  // layouts]); a target no dense layout reproduces (an as_strided argument) is written eagerly.
  std::optional<std::vector<int64_t>> target_order = out.numel() == 0 ? std::vector<int64_t>{} : exact_order(out);
  if (oi->view_base || (it != value_of_.end() && g_.values[it->second].is_view)) {
    why = "in-place write through a view";
  } else if (!target_order) {
    why = "in-place write into a tensor with strides no dense layout has";
  } else if (!ours && shares_real_storage(oi)) {
    // Another argument or captured tensor over the same memory must see the write at once.
    why = "in-place write into an argument or captured tensor that shares memory with another";
  } else if (!ours && in_autograd(d, in, out)) {
    // Eager gives the target itself a new history (or raises for a leaf that requires grad, or
    // keeps a leaf's identity under no_grad); a writeback after the graph cannot: run it eagerly.
    why = "in-place write into an argument or captured tensor that takes part in autograd";
  } else if (ours) {
    for (auto& h : extra_)
      if (h->storage.get() == st) why = "in-place write into a buffer another handle aliases";
    for (auto& h : held_)
      if (h && h.get() != oi && h->storage.get() == st && h->view_base.get() == oi) {
        why = "in-place write into a value that traced views share";
        break;
      }
  }
  if (!why.empty()) {
    graph_break(std::string(d.name) + "_", why);
    run_eagerly(id, in, a, &out);
    return;
  }
  // The target's identity as a graph input/external, before any rebinding.
  ValueKind tkind = ValueKind::Node;
  int tindex = -1;
  if (!ours) {
    int tv = it != value_of_.end() ? it->second : resolve(out);
    const ValueInfo& t = g_.values[tv];
    if (t.kind == ValueKind::Node) {  // rebound earlier: find the original target
      for (const Writeback& w : g_.writebacks)
        if (w.value == tv) tkind = w.target_kind, tindex = w.target;
    } else {
      tkind = t.kind;
      tindex = t.index;
    }
    FW_ASSERT(tindex >= 0);
  }
  size_t nb = breaks_.size();
  Outs r = on_dispatch(id, in, a);
  FW_CHECK(r.size() == 1, "[", d.name, "] has ", r.size(), " outputs; an out= form needs exactly one");
  FW_CHECK(r[0].sizes().equals(out.sizes()), "[", d.name, "] output with shape ", out.sizes(),
           " doesn't match the broadcast shape ", r[0].sizes());
  FW_CHECK(can_cast(r[0].dtype(), out.dtype()), "[", d.name, "] result type ", dtype_name(r[0].dtype()),
           " can't be cast to the desired output type ", dtype_name(out.dtype()));
  if (breaks_.size() != nb) {  // the op ran eagerly (it read values): write eagerly too
    Suspend s;
    out.copy_(r[0]);
    return;
  }
  Tensor res = r[0];
  // The value that stands for `out` from now on has out's dtype and exactly out's strides (an
  // in-place fill_ of a transposed tensor stays transposed; views later made from `out` may be
  // folded into as_strided of this value): a copy into out's dim order (kCopyOrder) when the op's
  // result differs in either.
  if (res.dtype() != out.dtype() || (out.numel() > 0 && !res.strides().equals(out.strides()))) {
    res = copy_in_order(res, out.dtype(), out.numel() > 0 ? *target_order : std::vector<int64_t>{});
  }
  int v = value_of_.at(res.impl().get());
  value_of_[oi] = v;
  if (ours) {
    root_of_[st] = v;
    set_requires_grad_flag(out, res.requires_grad());
    return;
  }
  auto w = std::find_if(g_.writebacks.begin(), g_.writebacks.end(),
                        [&](const Writeback& x) { return x.target_kind == tkind && x.target == tindex; });
  bool grad = tls().grad_enabled;
  if (w != g_.writebacks.end()) w->value = v, w->grad = w->grad || grad;
  else g_.writebacks.push_back({tkind, tindex, v, grad});
  if (!st->placeholder) {  // reading the real tensor before the write lands breaks the graph
    st->placeholder = true;
    pending_.push_back(intrusive_ptr<StorageImpl>(oi->storage));
  }
}

void Tracer::on_materialize(const TensorImpl* t) {
  StorageImpl* st = t->storage.get();
  const char* api = tls().data_access;
  std::string what = "tensor values";
  if (!st->placeholder) {  // Note [Reading real values while tracing]
    if (symbolic_ || reads_free_ || st->birth > born_) return;
    what = "the values of memory older than the trace (an argument or captured tensor)";
  } else {
    bool ours = root_of_.count(st) != 0;
    bool pend = std::any_of(pending_.begin(), pending_.end(), [&](auto& p) { return p.get() == st; });
    FW_CHECK(ours || pend, "[fw::compile] a tensor traced by another fw::compile call (which has finished) was read; "
                           "keep only the results of a compiled function, not tensors made inside its trace");
  }
  if (in_op_ > 0)
    graph_break(current_op_ ? current_op_ : "?", "the op reads " + what + " (data-dependent result)");
  else
    graph_break(api ? api : "data access",
                what + " were read (item(), data_ptr(), printing or a function reading tensor data)");
  FW_ASSERT(!st->placeholder);
}

// What is still referenced from outside the tracer: our placeholder storages (with the value
// that fills each) and the handles on them (with their values).
Tracer::Live Tracer::live() {
  std::unordered_map<const TensorImpl*, int> internal;  // refs the tracer itself accounts for
  std::unordered_map<const StorageImpl*, int> held_count;
  std::vector<intrusive_ptr<TensorImpl>> all(held_);
  all.insert(all.end(), extra_.begin(), extra_.end());
  for (auto& h : all) {
    if (!h) continue;
    internal[h.get()]++;
    if (h->view_base) internal[h->view_base.get()]++;
    held_count[h->storage.get()]++;
  }
  Live L;
  std::unordered_set<const StorageImpl*> seen_st;
  std::unordered_set<const TensorImpl*> seen_h;
  auto add_store = [&](StorageImpl* st) {
    auto r = root_of_.find(st);
    if (r == root_of_.end() || !st->placeholder || !seen_st.insert(st).second) return;
    L.stores.push_back(st);
    L.store_values.push_back(r->second);
  };
  for (auto& h : all) {
    if (!h || h->refcount_.load() <= internal[h.get()] + 1) continue;  // +1: `all` itself
    auto v = value_of_.find(h.get());
    if (root_of_.count(h->storage.get())) {
      add_store(h->storage.get());
    } else if (v == value_of_.end() || g_.values[size_t(v->second)].kind != ValueKind::Node ||
               held_[size_t(v->second)].get() != h.get()) {
      continue;
    }
    // A handle on real memory made by this segment's ops (a view of an argument or a captured
    // tensor) has real data already but still needs the segment's autograd history, or gradients
    // that later flow into it would stop there: it is a segment output too. Only the op's own
    // result qualifies: a caller's tensor the tracer met as an alias (mapped to an as_strided
    // value) keeps its own history.
    if (v != value_of_.end() && seen_h.insert(h.get()).second) {
      L.handles.push_back(h.get());
      L.handle_values.push_back(v->second);
    }
  }
  std::vector<std::pair<int, StorageImpl*>> extra;
  for (auto& [st, v] : root_of_)
    if (st->refcount_.load() > held_count[st]) extra.push_back({v, const_cast<StorageImpl*>(st)});
  std::sort(extra.begin(), extra.end());
  for (auto& e : extra) add_store(e.second);
  return L;
}

std::vector<Tensor> Tracer::run_segment(const std::vector<int>& outs, const Live& L) {
  for (auto& p : pending_) p->placeholder = false;
  pending_.clear();
  g_.outputs = outs;
  g_.outputs.insert(g_.outputs.end(), L.store_values.begin(), L.store_values.end());
  g_.outputs.insert(g_.outputs.end(), L.handle_values.begin(), L.handle_values.end());
  Graph seg = std::move(g_);
  std::vector<Tensor> res;
  {
    Suspend s;
    // The segment runs in the grad mode its ops were traced in, not the one at the break (a break
    // inside a NoGradGuard must not drop the history of what was traced before the guard).
    bool grad = std::any_of(seg.nodes.begin(), seg.nodes.end(), [](const Node& n) { return n.grad; });
    AutoGradMode mode(grad);
    std::vector<Tensor> ins = segments_ == 0 ? real_inputs_ : std::vector<Tensor>{};
    if (segments_ > 0) seg.inputs.clear();
    res = run_(seg, ins);
  }
  segments_++;
  FW_ASSERT(res.size() == outs.size() + L.stores.size() + L.handles.size());
  Suspend s;  // copies below are real work, not part of the trace
  size_t k = outs.size();
  for (size_t i = 0; i < L.stores.size(); i++, k++) {
    Tensor r = std::move(res[k]);
    if (L.stores[i]->placeholder) adopt(L.stores[i], r, seg.values[size_t(L.store_values[i])].strides);
  }
  // Handles take the autograd history of their results: gradients that later flow into them
  // reach the ops of the segment (the data is the same; the history is the result's).
  for (size_t i = 0; i < L.handles.size(); i++, k++) {
    Tensor h(intrusive_ptr<TensorImpl>(L.handles[i]));
    if (res[k].requires_grad()) rebind_grad(h, res[k]);
    else if (h.impl()->autograd) h.impl()->autograd->requires_grad = false;
  }
  res.resize(outs.size());
  new_segment();
  return res;
}

// The storage takes r's values laid out as the traced value that fills it (strides), which is
// how every handle and view on it reads them.
void Tracer::adopt(StorageImpl* st, const Tensor& r, const DimVec& strides) {
  StorageImpl* rs = r.impl()->storage.get();
  bool steal = r.strides().equals(strides) && r.storage_offset() == 0 && rs->nbytes == st->nbytes && !rs->deleter &&
               rs->refcount_.load() == 1 && r.impl()->refcount_.load() == 1 && st->nbytes > 0;
  if (steal) {
    std::swap(st->data, rs->data);
    std::swap(st->deleter, rs->deleter);
    st->placeholder = false;
    return;
  }
  st->data = st->nbytes ? cpu_alloc(st->nbytes) : nullptr;
  st->deleter = nullptr;
  st->placeholder = false;
  auto impl = make_intrusive<TensorImpl>();
  impl->storage = intrusive_ptr<StorageImpl>(st);
  impl->sizes = DimVec(r.sizes());
  impl->strides = strides;
  impl->dtype = r.dtype();
  impl->refresh();
  Tensor dst(std::move(impl));
  NoGradGuard ng;
  dst.copy_(r);
}

void Tracer::graph_break(const std::string& op, const std::string& reason) {
  FW_CHECK(!fullgraph_, "[fw::compile] graph break in fullgraph mode at ", op, ": ", reason,
           " (compile without fullgraph(true) to allow it, or keep the function free of it)");
  breaks_.push_back({op, reason});
  reads_free_ = true;
  log::breaks("graph break at ", op, ": ", reason);
  run_segment({}, live());
}

void Tracer::new_segment() {
  g_ = Graph{};
  value_of_.clear();
  real_of_.clear();
  held_.clear();
  extra_.clear();
  root_of_.clear();
}

bool Tracer::traced_nonleaf(const TensorImpl* t) const {
  auto it = value_of_.find(t);
  return it != value_of_.end() && g_.values[it->second].kind == ValueKind::Node && t->autograd &&
         t->autograd->requires_grad;
}

Outs Tracer::run_eagerly(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, const Tensor* out) {
  Suspend s;
  if (out) {
    dispatch_into(id, in, a, *out);
    return {};
  }
  return dispatch(id, in, a);
}

void Tracer::flush_after_throw() {
  if (g_.writebacks.empty()) return;
  run_segment({}, live());
}

bool Tracer::finish(const std::vector<Tensor>& outs) {
  std::vector<int> ov;
  for (int pass = 0; pass < 2; pass++) {
    size_t nb = breaks_.size();
    ov.clear();
    for (size_t i = 0; i < outs.size(); i++) {
      FW_CHECK(outs[i].defined(), "[fw::compile] output #", i, " of the compiled function is undefined");
      ov.push_back(resolve(outs[i]));
    }
    if (breaks_.size() == nb) break;
  }
  // Buffers still referenced that are not results: the function stored a traced tensor outside.
  std::unordered_set<const StorageImpl*> out_st;
  for (auto& t : outs) out_st.insert(t.impl()->storage.get());
  Live L = live();
  bool escaped = false;
  for (StorageImpl* st : L.stores) escaped = escaped || !out_st.count(st);
  if (escaped)
    escape_notes.push_back("a tensor made inside the trace is still referenced after the function returned "
                           "(stored outside it), so the function is re-traced on every call");
  if (breaks_.empty() && !escaped && escape_notes.empty()) {
    for (auto& p : pending_) p->placeholder = false;
    pending_.clear();
    g_.outputs = ov;
    // Captured tensors the function made during this trace (Note [Tensors the function made] in
    // ir.cpp). Segments run before a break write into the real tensors instead: the calls that
    // follow re-trace, so nothing is replayed.
    g_.owned.assign(g_.externals.size(), 0);
    for (size_t i = 0; i < g_.externals.size(); i++) g_.owned[i] = g_.external_tensors[i].impl()->storage->birth > born_;
    return true;
  }
  // Run the last segment here; escaped buffers and handles are materialised like at a break.
  results_ = run_segment(ov, L);
  return false;
}

}  // namespace fw::jit
