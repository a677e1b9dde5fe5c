// The backward engine: dependency counting over the graph reachable from the roots, then
// nodes run newest-first (sequence number) once all their gradients have arrived.
#include <cmath>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "autograd/node.h"

namespace fw {
namespace autograd {

using namespace fw::detail;
using detail::AccumulateGrad;
using detail::EngineNode;

namespace {

thread_local bool t_anomaly = false;

struct Capture {
  Node* fn;
  uint32_t nr;
  Tensor grad;
};

void accumulate(variable_list& buf, uint32_t nr, const Tensor& g, bool create_graph) {
  if (!g.defined()) return;
  if (!buf[nr].defined()) {
    buf[nr] = g;
  } else {
    AutoGradMode mode(create_graph);
    buf[nr] = buf[nr] + g;
  }
}

void check_anomaly(const EngineNode& n, const variable_list& out) {
  for (size_t i = 0; i < out.size(); i++) {
    if (!out[i].defined() || !(out[i].is_floating_point() || out[i].is_complex())) continue;
    Tensor a = out[i].is_complex() ? view_as_real(out[i]) : out[i];
    bool bad = false;
    {
      AutoGradMode off(false);
      bad = isnan(a).sum().item<int64_t>() > 0;
    }
    FW_CHECK(!bad, "[autograd] Function '", n.name(), "' returned nan values in its ", i, "th output.");
  }
}

// Runs the graph from roots; returns gradients reaching `captures` (autograd::grad) and
// accumulates into leaves unless `accumulate_leaves` is false.
void execute(const std::vector<Node::Edge>& roots, const variable_list& root_grads, bool keep_graph,
             bool create_graph, std::vector<Capture>& captures, bool accumulate_leaves,
             const std::unordered_set<Node*>* only_leaves) {
  std::unordered_map<Node*, int> deps;
  std::unordered_map<Node*, std::shared_ptr<Node>> owner;
  std::vector<Node*> stack;
  for (auto& r : roots)
    if (r.function && !owner.count(r.function.get())) {
      owner[r.function.get()] = r.function;
      stack.push_back(r.function.get());
    }
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    for (auto& e : n->next_edges_) {
      if (!e.function) continue;
      deps[e.function.get()]++;
      if (!owner.count(e.function.get())) {
        owner[e.function.get()] = e.function;
        stack.push_back(e.function.get());
      }
    }
  }
  std::unordered_map<Node*, variable_list> buffers;
  auto buffer = [&](Node* n) -> variable_list& {
    auto it = buffers.find(n);
    if (it == buffers.end()) it = buffers.emplace(n, variable_list(static_cast<EngineNode*>(n)->outputs.size())).first;
    return it->second;
  };
  for (size_t i = 0; i < roots.size(); i++)
    if (roots[i].function) accumulate(buffer(roots[i].function.get()), roots[i].input_nr, root_grads[i], create_graph);
  auto later = [](Node* a, Node* b) { return a->seq_ < b->seq_; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later)> ready(later);
  std::unordered_set<Node*> queued;
  for (auto& r : roots)
    if (r.function && deps[r.function.get()] == 0 && queued.insert(r.function.get()).second) ready.push(r.function.get());
  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    EngineNode* en = static_cast<EngineNode*>(n);
    variable_list grads = std::move(buffer(n));
    buffers.erase(n);
    for (size_t k = 0; k < grads.size() && k < en->pre_hooks.size(); k++)
      for (auto& h : en->pre_hooks[k])
        if (h && grads[k].defined()) {
          Tensor r = h(grads[k]);
          if (r.defined()) grads[k] = r;
        }
    for (auto& c : captures)
      if (c.fn == n) c.grad = grads[c.nr];
    bool is_leaf_node = dynamic_cast<AccumulateGrad*>(en) != nullptr;
    variable_list out;
    if (!is_leaf_node || (accumulate_leaves && (!only_leaves || only_leaves->count(n)))) {
      out = en->apply(std::move(grads), create_graph);
      if (t_anomaly) check_anomaly(*en, out);
      if (!keep_graph) en->release();
    }
    for (size_t i = 0; i < n->next_edges_.size(); i++) {
      const auto& e = n->next_edges_[i];
      if (!e.function) continue;
      if (i < out.size()) accumulate(buffer(e.function.get()), e.input_nr, out[i], create_graph);
      if (--deps[e.function.get()] == 0 && queued.insert(e.function.get()).second) ready.push(e.function.get());
    }
  }
}

Tensor root_grad(const Tensor& t, const Tensor& g, const char* op) {
  FW_CHECK(t.requires_grad(), "[", op, "] element 0 of tensors does not require grad and does not have a grad_fn");
  if (g.defined()) {
    FW_CHECK(g.sizes().equals(t.sizes()), "[", op, "] Mismatch in shape: grad_output has a shape of ", g.sizes(),
             " and output has a shape of ", t.sizes());
    return g;
  }
  FW_CHECK(t.numel() == 1, "[", op, "] grad can be implicitly created only for scalar outputs (got shape ", t.sizes(), ")");
  return ones_like(t);
}

}  // namespace

variable_list grad(const variable_list& outputs, const variable_list& inputs, const variable_list& grad_outputs,
                   std::optional<bool> retain_graph, bool create_graph, bool allow_unused) {
  FW_CHECK(fw::detail::tls().tracer == nullptr, "[autograd::grad] called inside a function being compiled by "
           "fw::compile; compile the forward function and take gradients of its results outside it");
  FW_CHECK(grad_outputs.empty() || grad_outputs.size() == outputs.size(), "[autograd::grad] got ", grad_outputs.size(),
           " grad_outputs for ", outputs.size(), " outputs");
  std::vector<Node::Edge> roots;
  variable_list gs;
  for (size_t i = 0; i < outputs.size(); i++) {
    gs.push_back(root_grad(outputs[i], grad_outputs.empty() ? Tensor() : grad_outputs[i], "autograd::grad"));
    roots.push_back(detail::gradient_edge(outputs[i]));
  }
  std::vector<Capture> caps;
  for (size_t i = 0; i < inputs.size(); i++) {
    FW_CHECK(inputs[i].requires_grad(), "[autograd::grad] input ", i, " does not require grad");
    auto e = detail::gradient_edge(inputs[i]);
    caps.push_back({e.function.get(), e.input_nr, Tensor()});
  }
  std::vector<std::shared_ptr<Node>> keep;
  for (auto& in : inputs) keep.push_back(detail::gradient_edge(in).function);
  execute(roots, gs, retain_graph.value_or(create_graph), create_graph, caps, false, nullptr);
  variable_list result;
  for (size_t i = 0; i < caps.size(); i++) {
    FW_CHECK(caps[i].grad.defined() || allow_unused, "[autograd::grad] One of the differentiated Tensors (input ", i,
             ") appears to not have been used in the graph. Set allow_unused=true if this is the desired behavior.");
    result.push_back(caps[i].grad);
  }
  return result;
}

void backward(const variable_list& tensors, const variable_list& grad_tensors, std::optional<bool> retain_graph,
              bool create_graph, const variable_list& inputs) {
  FW_CHECK(fw::detail::tls().tracer == nullptr, "[backward] backward() was called inside a function being "
           "compiled by fw::compile; compile the forward (or loss) function and call backward() and the optimizer "
           "step outside it: the compiled forward's backward graph is compiled too");
  FW_CHECK(grad_tensors.empty() || grad_tensors.size() == tensors.size(), "[backward] got ", grad_tensors.size(),
           " gradients for ", tensors.size(), " tensors");
  std::vector<Node::Edge> roots;
  variable_list gs;
  for (size_t i = 0; i < tensors.size(); i++) {
    gs.push_back(root_grad(tensors[i], grad_tensors.empty() ? Tensor() : grad_tensors[i], "backward"));
    roots.push_back(detail::gradient_edge(tensors[i]));
  }
  std::vector<Capture> caps;
  std::unordered_set<Node*> only;
  for (auto& in : inputs) {
    FW_CHECK(in.requires_grad(), "[backward] an input tensor does not require grad");
    FW_CHECK(in.is_leaf(), "[backward] inputs= supports leaf tensors only in fw");
    only.insert(detail::gradient_edge(in).function.get());
  }
  execute(roots, gs, retain_graph.value_or(create_graph), create_graph, caps, true, inputs.empty() ? nullptr : &only);
}

DetectAnomalyGuard::DetectAnomalyGuard() : prev_(t_anomaly) { t_anomaly = true; }
DetectAnomalyGuard::~DetectAnomalyGuard() { t_anomaly = prev_; }
bool anomaly_mode_enabled() { return t_anomaly; }
void AnomalyMode::set_enabled(bool enabled, bool) { t_anomaly = enabled; }

}  // namespace autograd

InferenceMode::InferenceMode(bool enabled)
    : prev_grad_(is_grad_enabled()), prev_inference_(fw::detail::tls().inference_mode) {
  fw::detail::tls().inference_mode = enabled;
  set_grad_enabled(!enabled);
}
InferenceMode::~InferenceMode() {
  fw::detail::tls().inference_mode = prev_inference_;
  set_grad_enabled(prev_grad_);
}
bool InferenceMode::is_enabled() { return fw::detail::tls().inference_mode; }

void Tensor::backward(const Tensor& gradient, std::optional<bool> retain_graph, bool create_graph,
                      const std::vector<Tensor>& inputs) const {
  autograd::backward({*this}, gradient.defined() ? std::vector<Tensor>{gradient} : std::vector<Tensor>{},
                     retain_graph, create_graph, inputs);
}

namespace {
// Note [Autograd history under fw::compile]: a traced op result has no node yet (its history is
// the compiled graph's, attached when the segment runs). Code that needs the node itself, a hook,
// retain_grad() or grad_fn(), breaks the graph there: the ops before it run eagerly and the
// tensor takes their real history, as in eager. is_leaf() and requires_grad_() ask the tracer.
void break_for_history(const Tensor& t, const char* what) {
  void* tr = fw::detail::tls().tracer;
  if (tr && fw::detail::g_tracer->traced_nonleaf(tr, t.impl().get()))
    fw::detail::g_tracer->graph_break(tr, what, "a traced op result's autograd node is needed: the ops before it run eagerly");
}
}  // namespace

const std::shared_ptr<autograd::Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<autograd::Node> none;
  break_for_history(*this, "grad_fn()");
  return impl_->autograd ? impl_->autograd->grad_fn : none;
}

void Tensor::set_grad(const Tensor& g) const {
  FW_CHECK(!g.defined() || g.sizes().equals(sizes()), "[set_grad] assigned grad has data of a different size: ",
           g.sizes(), " vs ", sizes());
  if (!impl_->autograd) impl_->autograd = std::make_unique<AutogradMeta>();
  impl_->autograd->grad = g;
}

Tensor& Tensor::mutable_grad() const {
  if (!impl_->autograd) impl_->autograd = std::make_unique<AutogradMeta>();
  return impl_->autograd->grad;
}

unsigned Tensor::register_hook_fn(std::function<Tensor(const Tensor&)> hook) const {
  FW_CHECK(requires_grad(), "[register_hook] cannot register a hook on a tensor that doesn't require gradient");
  break_for_history(*this, "register_hook");
  auto& m = *impl_->autograd;
  if (!m.grad_fn) {
    m.leaf_hooks.push_back(std::move(hook));
    return unsigned(m.leaf_hooks.size() - 1);
  }
  auto* n = static_cast<autograd::detail::EngineNode*>(m.grad_fn.get());
  n->pre_hooks[m.output_nr].push_back(std::move(hook));
  return unsigned(n->pre_hooks[m.output_nr].size() - 1);
}

void Tensor::remove_hook(unsigned pos) const {
  std::function<Tensor(const Tensor&)>* slot = nullptr;
  if (impl_->autograd) {
    auto& m = *impl_->autograd;
    if (!m.grad_fn) {
      if (pos < m.leaf_hooks.size()) slot = &m.leaf_hooks[pos];
    } else {
      auto* n = static_cast<autograd::detail::EngineNode*>(m.grad_fn.get());
      if (m.output_nr < n->pre_hooks.size() && pos < n->pre_hooks[m.output_nr].size())
        slot = &n->pre_hooks[m.output_nr][pos];
    }
  }
  FW_CHECK(slot && *slot, "[remove_hook] Invalid index ", pos, ": no hook registered at this position on this tensor");
  *slot = nullptr;
}

void Tensor::retain_grad() const {
  FW_CHECK(requires_grad(), "[retain_grad] can't retain_grad on Tensor that has requires_grad=False");
  break_for_history(*this, "retain_grad");
  if (is_leaf() || retains_grad()) return;
  auto& meta = *impl_->autograd;
  meta.retains_grad = true;
  meta.alive = std::make_shared<char>(0);
  // The node owns the hook and the tensor owns the node: the hook must not own the tensor. The
  // token dies with the tensor's autograd meta, and then the hook does nothing.
  std::weak_ptr<void> token = meta.alive;
  TensorImpl* self = impl_.get();
  register_hook_fn([token, self](const Tensor& g) {
    if (token.expired()) return Tensor();
    auto& m = *self->autograd;
    AutoGradMode off(false);
    m.grad = m.grad.defined() ? m.grad + g : g.detach().clone();
    return Tensor();
  });
}

}  // namespace fw
