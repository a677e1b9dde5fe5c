// Recording (the dispatch door's autograd hook), saved tensors, and the two node kinds.
#include "autograd/node.h"

#include <atomic>
#include <cctype>
#include <cmath>

#include "core/ops/composite_util.h"
#include "core/profile.h"
#include "core/visit.h"

namespace fw::autograd::detail {

using namespace fw::detail;

uint64_t next_sequence_number() {
  static std::atomic<uint64_t> seq{0};
  return seq.fetch_add(1, std::memory_order_relaxed);
}

void SavedTensor::save(const Tensor& t, bool output, const std::shared_ptr<Node>& producer, uint32_t nr) {
  is_output = output;
  version = t._version();
  if (!output) {
    data = t;
    return;
  }
  data = t.detach();
  output_of = producer;
  output_nr = nr;
}

void refuse_inference_save(const Tensor& t, const char* op) {
  FW_CHECK(!t.is_inference(), "[", op, "] Inference tensors cannot be saved for backward (an input of shape ",
           t.sizes(), " was created under InferenceMode). To work around you can make a clone to get a normal "
           "tensor and use it in autograd.");
}

Tensor SavedTensor::unpack(const std::string& node_name) const {
  uint32_t now = data._version();
  if (check_version && now != version) {
    const char* w = data.impl()->storage->last_writer;
    std::string op = w ? w : "an in-place op";
    if (w && op.back() != '_') op += "_";
    throw_error("[autograd] a tensor needed for gradient computation was modified by an in-place operation (", op,
                "): ", node_name, " saved it at version ", version, ", it is now at version ", now,
                ". Use an out-of-place op, or clone() the tensor before modifying it.");
  }
  if (!is_output) return data;
  // Reattach the producing node so a differentiable vjp sees the output as part of the graph.
  auto fn = output_of.lock();
  Tensor t = data.detach();
  if (fn) {
    t.impl()->autograd = std::make_unique<AutogradMeta>();
    t.impl()->autograd->requires_grad = true;
    t.impl()->autograd->grad_fn = fn;
    t.impl()->autograd->output_nr = output_nr;
  }
  return t;
}

// libtorch names a node after the ATen overload it differentiates: the Scalar overloads of add,
// sub, mul and div end in 1 (x * 2 is MulBackward1), pow with a tensor exponent is PowBackward1,
// clamp with number bounds is ClampBackward1 and with tensor bounds ClampBackward0.
std::string OpNode::name() const {
  const bool scalar_rhs = attrs.flags & kScalarRhs;
  switch (id) {
    case OpId::add: return scalar_rhs ? "AddBackward1" : "AddBackward0";
    case OpId::sub: return scalar_rhs ? "SubBackward1" : "SubBackward0";
    case OpId::mul: return scalar_rhs ? "MulBackward1" : "MulBackward0";
    case OpId::div: return scalar_rhs ? "DivBackward1" : "DivBackward0";
    case OpId::pow: return scalar_rhs ? "PowBackward0" : "PowBackward1";
    case OpId::clamp_scalar: return "ClampBackward1";
    case OpId::clamp_tensor: return "ClampBackward0";
    default: break;
  }
  std::string n, op = op_def(id).name;
  bool up = true;
  for (char c : op) {
    if (c == '_') { up = true; continue; }
    n += up ? char(std::toupper(c)) : c;
    up = false;
  }
  return n + "Backward0";
}

// Note [Nodes that read no values]
// After a backward without retain_graph a node frees what it saved. A node whose vjp reads no
// saved value (add, views, sum: only shapes, dtypes and strides; OpDef::vjp_reads_in and
// vjp_reads_in_for) keeps each input's geometry over a placeholder storage of the same size but
// no memory, so a second backward through it works, as in PyTorch, where such nodes save
// nothing. Reading a placeholder's data raises instead of crashing.
namespace {
Tensor geometry_only(const Tensor& t) {
  auto st = make_intrusive<StorageImpl>(nullptr, t.impl()->storage->nbytes, t.device(), [](void*) {});
  st->placeholder = true;
  auto impl = make_intrusive<TensorImpl>();
  impl->storage = std::move(st);
  impl->sizes = t.impl()->sizes;
  impl->strides = t.impl()->strides;
  impl->offset = t.impl()->offset;
  impl->dtype = t.dtype();
  impl->refresh();
  return Tensor(std::move(impl));
}
}  // namespace

void OpNode::release() {
  EngineNode::release();
  bool reads_values = !out.empty();
  for (auto& s : in) reads_values = reads_values || s.check_version;
  if (reads_values) {
    in.clear();
    out.clear();
    return;
  }
  for (auto& s : in)
    if (s.data.defined()) s.data = geometry_only(s.data);
  geometry_kept = true;
}

variable_list OpNode::apply(variable_list&& grads, bool create_graph) {
  FW_CHECK(!released || geometry_kept, "[autograd] Trying to backward through the graph a second time (or directly access saved "
           "tensors after they have already been freed). Saved intermediate values of the graph are freed when you "
           "call backward() or autograd::grad(). Specify retain_graph=true if you need to backward through the "
           "graph a second time (", name(), ")");
  const OpDef& d = op_def(id);
  bool any = false;
  for (auto& g : grads) any |= g.defined();
  variable_list result(in.size());
  if (!any) return result;
  FW_CHECK(d.vjp, "[autograd] the derivative for '", d.name, "' is not implemented");
  std::vector<Tensor> ins, outs;
  for (auto& s : in) ins.push_back(s.unpack(name()));
  for (auto& s : out) outs.push_back(s.unpack(name()));
  std::unique_ptr<bool[]> nd(new bool[needs.size()]);
  for (size_t i = 0; i < needs.size(); i++) nd[i] = needs[i];
  VjpCtx ctx{attrs, ins, outs, nd.get()};
  Outs gin;
  gin.resize(in.size());
  {
    AutoGradMode mode(create_graph);
    ProfileScope prof("vjp", d.name);
    d.vjp(ctx, grads, gin);
  }
  for (size_t i = 0; i < in.size(); i++) {
    if (!needs[i] || !gin[i].defined()) continue;
    Tensor g = gin[i];
    const Tensor& x = ins[i];
    FW_ASSERT(g.sizes().equals(x.sizes()));
    if (g.dtype() != x.dtype()) {
      AutoGradMode mode(create_graph);
      g = g.to(x.dtype());
    }
    result[i] = g;
  }
  return result;
}

variable_list CopySlices::apply(variable_list&& grads, bool create_graph) {
  Tensor g = std::move(grads[0]);
  if (!g.defined()) return {Tensor(), Tensor()};
  AutoGradMode mode(create_graph);
  // g laid out as the base is in memory (row-major in its dim order), so the view's geometry
  // addresses it as it addresses the base.
  Tensor gc = (order.empty() ? g : g.permute(order)).contiguous();
  Tensor mask = fw::ones(gc.sizes(), gc.dtype());
  {
    NoGradGuard ng;
    mask.as_strided(sizes, strides, mask.storage_offset() + offset).fill_(0);
  }
  Tensor to_base = gc * mask;
  if (!order.empty()) to_base = to_base.permute(fw::detail::inverse_perm(order));
  Tensor to_result = gc.as_strided(sizes, strides, gc.storage_offset() + offset).clone();
  return {to_base, to_result};
}

namespace {
// A copy of g laid out as the parameter is (libtorch's layout contract for .grad): row-major for a
// row-major parameter, the parameter's own dim order otherwise.
Tensor grad_like(const Tensor& param, const Tensor& g) {
  if (param.is_contiguous()) return g.detach().clone(MemoryFormat::Contiguous);
  NoGradGuard ng;
  Tensor r = fw::empty_like(param, TensorOptions(g.dtype()));
  r.copy_(g);
  return r;
}
}  // namespace

variable_list AccumulateGrad::apply(variable_list&& grads, bool create_graph) {
  Tensor g = std::move(grads[0]);
  if (!g.defined()) return {};
  Tensor leaf_t(leaf);
  for (auto& h : leaf->autograd->leaf_hooks) {
    if (!h) continue;  // removed
    Tensor r = h(g);
    if (r.defined()) g = r;
  }
  auto& meta = *leaf->autograd;
  if (!meta.grad.defined()) {
    bool laid_out = leaf_t.is_contiguous() ? g.is_contiguous() : g.strides().equals(leaf_t.strides());
    bool sole_owner = g.use_count() == 1 && g.impl()->storage.use_count() == 1 && laid_out;
    Tensor stored = create_graph ? g : sole_owner ? g.detach() : grad_like(leaf_t, g);
    meta.grad = stored;
  } else if (create_graph) {
    meta.grad = meta.grad + g;
  } else {
    AutoGradMode off(false);
    meta.grad.add_(g);
  }
  return {};
}

namespace {

std::shared_ptr<Node> accumulator(const Tensor& t) {
  auto& meta = *t.impl()->autograd;
  auto acc = meta.grad_accumulator.lock();
  if (!acc) {
    auto a = std::make_shared<AccumulateGrad>(t.impl());
    a->outputs.push_back({DimVec(t.sizes()), t.dtype()});
    a->pre_hooks.resize(1);
    a->seq_ = next_sequence_number();
    meta.grad_accumulator = a;
    acc = a;
  }
  return acc;
}

bool wants_grad(ScalarType t) { return is_floating_point(t) || is_complex(t); }

void record(OpId id, ArrayRef<Tensor> in, const OpAttrs& a, Outs& outs) {
  const OpDef& d = op_def(id);
  auto node = std::make_shared<OpNode>(id, a);
  node->seq_ = next_sequence_number();
  // A node whose outputs are all integer or bool (comparisons) never runs backward.
  bool any_grad_out = false;
  for (auto& o : outs) any_grad_out |= wants_grad(o.dtype());
  for (size_t i = 0; i < in.size(); i++) {
    const Tensor& t = in[i];
    bool rg = t.requires_grad();
    node->needs.push_back(rg);
    node->next_edges_.push_back(rg ? gradient_edge(t) : Node::Edge{});
    bool reads = d.vjp_reads_in && !(i < 8 && (d.vjp_ignores_in >> i & 1));
    if (reads && i < 4 && d.vjp_reads_in_for[i] != 0) {
      bool wanted = false;
      for (size_t j = 0; j < in.size() && j < 8; j++) wanted |= (d.vjp_reads_in_for[i] >> j & 1) && in[j].requires_grad();
      reads = wanted;
    }
    if (reads && any_grad_out) refuse_inference_save(t, d.name);
    node->in.emplace_back().save(t, false, nullptr, 0);
    node->in.back().check_version = reads;
  }
  node->pre_hooks.resize(outs.size());
  for (size_t k = 0; k < outs.size(); k++) {
    Tensor& o = outs[k];
    node->outputs.push_back({DimVec(o.sizes()), o.dtype()});
    if (!wants_grad(o.dtype())) continue;
    auto& m = o.impl()->autograd;
    m = std::make_unique<AutogradMeta>();
    m->requires_grad = true;
    m->grad_fn = node;
    m->output_nr = uint32_t(k);
    if (const auto& vb = o.impl()->view_base; vb && vb->autograd) m->view_gen = vb->autograd->rebase_gen;
  }
  if (d.vjp_uses_out)
    for (size_t k = 0; k < outs.size(); k++) node->out.emplace_back().save(outs[k], true, node, uint32_t(k));
}

void check_inplace(const OpDef& d, const Tensor& out) {
  // A leaf made from a view (`arange(6.).view({2, 3}).requires_grad_()`) is still a leaf.
  FW_CHECK(!(out.requires_grad() && out.is_leaf()), "[", d.name,
           "_] a leaf Variable that requires grad is being used in an in-place operation.");
  if (out.impl()->view_base) {
    Tensor base(out.impl()->view_base);
    FW_CHECK(!(base.requires_grad() && base.is_leaf()), "[", d.name,
             "_] a view of a leaf Variable that requires grad is being used in an in-place operation.");
    // Called only when the write takes part in autograd (CopySlices then needs the base's layout).
    FW_CHECK(base.is_non_overlapping_and_dense(), "[", d.name,
             "_] in-place writes through a view of a base tensor of shape ", base.sizes(), " and strides ",
             base.strides(), " (with gaps or overlaps) are not supported by fw's autograd; clone() the base first");
  }
}

// Note [In-place writes through views]
// `base.narrow(0, 1, 2).mul_(w)` or `out.select(0, t).copy_(h)` change the base's values, so the
// base's history must change too (PyTorch's CopySlices). fw records the in-place op out of place
// (result r), writes r into the view, then
//  - gives the base a CopySlices node: its gradient g splits into g with the view's elements
//    zeroed (to the base's old history) and g at the view's elements (to r's history);
//  - makes the view `as_strided(base, view geometry)` of the new base, so later uses of the view
//    differentiate through the write as well.
// Views are tracked by TensorImpl::view_base (set by the dispatcher for every view op). Other
// views of the same base that already had a history are re-derived from the base when next used
// (gradient_edge compares generations). A view taken without grad from a base that had no history
// then keeps none: it does not require grad (PyTorch would derive it from the base).
void rebase_view(const Tensor& view, const Tensor& result) {
  Tensor base(view.impl()->view_base);
  if (!base.requires_grad() && !result.requires_grad()) {
    fw::detail::rebind_grad(view, result);
    return;
  }
  auto node = std::make_shared<CopySlices>();
  node->seq_ = next_sequence_number();
  node->outputs.push_back({DimVec(base.sizes()), base.dtype()});
  node->pre_hooks.resize(1);
  node->next_edges_.push_back(base.requires_grad() ? gradient_edge(base) : Node::Edge{});
  node->next_edges_.push_back(result.requires_grad() ? gradient_edge(result) : Node::Edge{});
  node->sizes = DimVec(view.sizes());
  node->strides = DimVec(view.strides());
  node->offset = view.storage_offset() - base.storage_offset();
  node->order = fw::detail::preserved_order(base);
  auto& bm = base.impl()->autograd;
  if (!bm) bm = std::make_unique<AutogradMeta>();
  bm->requires_grad = true;
  bm->grad_fn = node;
  bm->output_nr = 0;
  bm->rebase_gen++;
  fw::detail::move_retained_grad(base);
  Tensor renewed;
  {
    AutoGradMode on(true);
    renewed = base.as_strided(view.sizes(), view.strides(), view.storage_offset());
  }
  fw::detail::rebind_grad(view, renewed);
  view.impl()->autograd->view_gen = bm->rebase_gen;
}

const AutogradHooks hooks{record, check_inplace, rebase_view};

struct Install {
  Install() { fw::detail::g_autograd = &hooks; }
} install;

}  // namespace

Node::Edge gradient_edge(const Tensor& t) {
  // A view whose base took a write through another view since the view's history was made is
  // re-derived from the base's current history first (PyTorch regenerates such views lazily).
  const auto& base = t.impl()->view_base;
  if (base && base->autograd && t.impl()->autograd->view_gen != base->autograd->rebase_gen) {
    Tensor b(base), renewed;
    {
      AutoGradMode on(true);
      renewed = b.as_strided(t.sizes(), t.strides(), t.storage_offset());
    }
    fw::detail::rebind_grad(t, renewed);
    t.impl()->autograd->view_gen = base->autograd->rebase_gen;
  }
  auto& m = *t.impl()->autograd;
  if (m.grad_fn) return {m.grad_fn, m.output_nr};
  return {accumulator(t), 0};
}

}  // namespace fw::autograd::detail
