// Custom autograd functions (fw::autograd::Function<T>).
#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>

#include "autograd/node.h"
#include "fw/autograd_function.h"
#include "fw/ops.h"

namespace fw {

namespace autograd {

// ---- AutogradContext

void AutogradContext::save_for_backward(variable_list to_save) { to_save_ = std::move(to_save); }

void AutogradContext::mark_dirty(const variable_list& inputs) {
  dirty_.clear();
  for (const auto& t : inputs) dirty_.push_back(t.impl().get());
}

void AutogradContext::mark_non_differentiable(const variable_list& outputs) {
  non_differentiable_.clear();
  for (const auto& t : outputs) non_differentiable_.push_back(t.impl().get());
}

variable_list AutogradContext::get_saved_variables() const {
  FW_CHECK(!released_, "[", name_, "] Trying to backward through the graph a second time (or directly access saved "
           "tensors after they have already been freed). Specify retain_graph=true if you need to backward through "
           "the graph a second time");
  variable_list r;
  r.reserve(saved_.size());
  for (const auto& s : saved_) {
    if (!s.data.defined()) {
      r.emplace_back();
      continue;
    }
    detail::SavedTensor st;
    st.data = s.data;
    st.output_of = s.output_of;
    st.output_nr = s.output_nr;
    st.version = s.version;
    st.is_output = s.is_output;
    r.push_back(st.unpack(name_));
  }
  return r;
}

namespace detail {

namespace {

std::string demangle(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string r = status == 0 && d ? d : mangled;
  std::free(d);
  return r;
}

bool wants_grad(ScalarType t) { return is_floating_point(t) || is_complex(t); }

// Whether `shape` broadcasts to `g` (so g can be summed down to it).
bool broadcasts_to(IntArrayRef shape, IntArrayRef g) {
  if (shape.size() > g.size()) return false;
  size_t lead = g.size() - shape.size();
  for (size_t i = 0; i < shape.size(); i++)
    if (shape[i] != g[lead + i] && shape[i] != 1) return false;
  return true;
}

bool contains(const std::vector<const void*>& v, const void* p) { return std::find(v.begin(), v.end(), p) != v.end(); }

}  // namespace

// The backward node of one custom function call.
struct CustomNode : EngineNode {
  std::shared_ptr<AutogradContext> ctx;
  CustomCall::Backward backward = nullptr;
  std::vector<bool> is_tensor;           // per forward argument
  std::vector<OutputMeta> input_meta;    // per tensor input
  std::vector<bool> output_defined;      // per forward output
  std::string fn_name;

  std::string name() const override { return fn_name; }

  void release() override {
    EngineNode::release();
    ctx->saved_.clear();
    ctx->released_ = true;
  }

  variable_list apply(variable_list&& grads, bool create_graph) override {
    // A released node runs again (libtorch's CppNode): only reading freed saved tensors raises
    // (AutogradContext::get_saved_variables).
    if (ctx->materialize_grads_)
      for (size_t i = 0; i < grads.size() && i < outputs.size(); i++)
        if (!grads[i].defined() && output_defined[i])
          grads[i] = zeros(outputs[i].sizes, TensorOptions(outputs[i].dtype));
    variable_list res;
    {
      AutoGradMode mode(create_graph);
      res = backward(ctx.get(), std::move(grads));
    }
    size_t n_args = is_tensor.size();
    if (res.size() > n_args) {
      bool extra_defined = std::any_of(res.begin() + long(n_args), res.end(), [](const Tensor& t) { return t.defined(); });
      FW_CHECK(!extra_defined, "[", fn_name, "] function backward returned an incorrect number of gradients (expected ",
               n_args, ", got ", res.size(), ")");
      res.resize(n_args);
    }
    FW_CHECK(res.size() == n_args, "[", fn_name, "] function backward returned an incorrect number of gradients (expected ",
             n_args, ", got ", res.size(), ")");
    variable_list out(input_meta.size());
    size_t k = 0;
    for (size_t a = 0; a < n_args; a++) {
      Tensor& g = res[a];
      if (!is_tensor[a]) {
        FW_CHECK(!g.defined(), "[", fn_name, "] function backward returned a gradient different than an undefined "
                 "tensor at index ", a, ", but the corresponding forward input was not a Variable");
        continue;
      }
      size_t idx = k++;
      if (!g.defined() || !ctx->needs_input_grad(idx)) continue;
      const OutputMeta& m = input_meta[idx];
      if (!g.sizes().equals(m.sizes)) {
        FW_CHECK(broadcasts_to(m.sizes, g.sizes()), "[", fn_name, "] function backward returned an invalid gradient at "
                 "index ", a, " - got ", g.sizes(), " but expected shape compatible with ", IntArrayRef(m.sizes));
        AutoGradMode mode(create_graph);
        g = fw::detail::sum_to(g, m.sizes);
      }
      if (g.dtype() != m.dtype) {
        AutoGradMode mode(create_graph);
        g = g.to(m.dtype);
      }
      out[idx] = std::move(g);
    }
    return out;
  }
};

CustomCall::CustomCall(const std::type_info& type, Backward backward) : backward_(backward), name_(demangle(type.name())) {}

CustomCall::~CustomCall() {
  if (!begun_) return;  // forward threw: restore the thread's state
  set_grad_enabled(prev_grad_);
  fw::detail::tls().tracer = prev_tracer_;
}

AutogradContext* CustomCall::begin() {
  // Under fw::compile the function runs eagerly: the pending segment runs first (its results,
  // including this call's inputs, become real tensors with their history), and tracing resumes
  // after forward with a new segment.
  if (void* tr = fw::detail::tls().tracer) {
    fw::detail::g_tracer->graph_break(tr, name_.c_str(), "a custom autograd Function runs eagerly");
    prev_tracer_ = tr;
    fw::detail::tls().tracer = nullptr;
  }
  prev_grad_ = is_grad_enabled();
  begun_ = true;
  ctx_ = std::make_shared<AutogradContext>();
  ctx_->name_ = name_;
  bool executable = prev_grad_ && std::any_of(tensors_.begin(), tensors_.end(), [](const Tensor& t) {
    return t.requires_grad();
  });
  ctx_->needs_input_grad_.resize(tensors_.size());
  if (executable) {
    node_ = std::make_shared<CustomNode>();
    node_->seq_ = next_sequence_number();
    node_->ctx = ctx_;
    node_->backward = backward_;
    node_->is_tensor = is_tensor_;
    node_->fn_name = name_;
    for (size_t i = 0; i < tensors_.size(); i++) {
      const Tensor& t = tensors_[i];
      bool rg = t.requires_grad();
      ctx_->needs_input_grad_[i] = rg;
      node_->next_edges_.push_back(rg ? gradient_edge(t) : Node::Edge{});
      node_->input_meta.push_back({DimVec(t.sizes()), t.dtype()});
    }
  }
  set_grad_enabled(false);
  return ctx_.get();
}

Tensor CustomCall::finish(Tensor out) {
  variable_list r = finish(variable_list{std::move(out)});
  return r[0];
}

variable_list CustomCall::finish(variable_list outs) {
  set_grad_enabled(prev_grad_);
  fw::detail::tls().tracer = prev_tracer_;
  begun_ = false;
  return connect(std::move(outs));
}

variable_list CustomCall::connect(variable_list outs) {
  AutogradContext& c = *ctx_;
  std::vector<const void*> original(outs.size());
  for (size_t k = 0; k < outs.size(); k++) original[k] = outs[k].defined() ? outs[k].impl().get() : nullptr;
  for (const void* d : c.dirty_) {
    bool is_input = std::any_of(tensors_.begin(), tensors_.end(), [&](const Tensor& t) { return t.impl().get() == d; });
    FW_CHECK(is_input, "[", name_, "] mark_dirty was given a tensor that is not an input of forward");
    FW_CHECK(contains(original, d), "[", name_, "] Some elements marked as dirty during the forward method were not "
             "returned as output. The inputs that are modified inplace must all be outputs of the Function.");
  }
  if (node_) node_->pre_hooks.resize(outs.size());
  for (size_t k = 0; k < outs.size(); k++) {
    Tensor& o = outs[k];
    if (node_) {
      node_->outputs.push_back({o.defined() ? DimVec(o.sizes()) : DimVec(), o.defined() ? o.dtype() : kFloat});
      node_->output_defined.push_back(o.defined());
    }
    if (!o.defined()) continue;
    const void* id = original[k];
    bool dirty = contains(c.dirty_, id);
    bool is_input = std::any_of(tensors_.begin(), tensors_.end(), [&](const Tensor& t) { return t.impl().get() == id; });
    if (!dirty && (is_input || o.requires_grad())) {
      // An input (or another tensor with history) returned unchanged: the output is an alias,
      // so the input keeps its own history.
      o = o.detach();
    }
    bool differentiable = node_ && !contains(c.non_differentiable_, id) && wants_grad(o.dtype());
    if (!differentiable) {
      if (o.requires_grad() && !dirty) o = o.detach();
      continue;
    }
    if (dirty) {
      FW_CHECK(!(o.is_leaf() && o.requires_grad()), "[", name_, "] a leaf Variable that requires grad is being used "
               "in an in-place operation.");
      const auto& vb = o.impl()->view_base;
      FW_CHECK(!(vb && vb->autograd && vb->autograd->requires_grad), "[", name_, "] marking a view of a tensor that "
               "requires grad dirty is not supported by fw's autograd; clone() the view before the call");
    }
    auto& m = o.impl()->autograd;
    if (!m) m = std::make_unique<AutogradMeta>();
    m->requires_grad = true;
    m->grad_fn = node_;
    m->output_nr = uint32_t(k);
  }
  if (node_) {
    for (const Tensor& t : c.to_save_) {
      AutogradContext::Saved s;
      if (t.defined()) {
        refuse_inference_save(t, name_.c_str());
        auto it = std::find(original.begin(), original.end(), t.impl().get());
        size_t k = size_t(it - original.begin());
        s.version = t._version();
        if (it != original.end() && outs[k].grad_fn() == node_) {
          s.is_output = true;
          s.data = outs[k].detach();
          s.output_of = node_;
          s.output_nr = uint32_t(k);
        } else {
          s.data = t;
        }
      }
      c.saved_.push_back(std::move(s));
    }
  }
  c.to_save_.clear();
  return outs;
}

}  // namespace detail
}  // namespace autograd
}  // namespace fw
