// Custom autograd functions, as libtorch's torch::autograd::Function<T>:
//
//   struct Scale : fw::autograd::Function<Scale> {
//     static fw::Tensor forward(fw::autograd::AutogradContext* ctx, fw::Tensor x, double k) {
//       ctx->saved_data["k"] = k;
//       return x * k;
//     }
//     static fw::autograd::variable_list backward(fw::autograd::AutogradContext* ctx,
//                                                 fw::autograd::variable_list g) {
//       return {g[0] * ctx->saved_data["k"].toDouble(), fw::Tensor()};  // one per forward argument
//     }
//   };
//   fw::Tensor y = Scale::apply(x, 2.0);
//
// forward runs without recording (grad mode off) and returns a Tensor or a variable_list; its
// differentiable outputs get one backward node whose vjp is T::backward. backward returns one
// gradient per forward argument (undefined for non-tensor arguments and for inputs that need no
// gradient; a std::vector<Tensor> argument counts one per tensor); extra trailing undefined
// gradients are allowed. Gradients whose shape differs from the input's but broadcasts to it are
// summed down to it, as in PyTorch; any other shape raises naming the function and the index.
// Under fw::compile a call is a graph break: forward runs eagerly and its node is the real one.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <vector>

#include "fw/autograd.h"
#include "fw/ivalue.h"
#include "fw/tensor.h"

namespace fw::autograd {

using variable_list = std::vector<Tensor>;
using tensor_list = std::vector<Tensor>;

namespace detail {
struct CustomNode;
class CustomCall;
}  // namespace detail

// What forward hands to backward: saved tensors (checked for in-place changes), arbitrary values
// in saved_data, and the marks forward may set on its inputs and outputs.
class AutogradContext {
 public:
  AutogradContext() = default;
  AutogradContext(const AutogradContext&) = delete;
  AutogradContext& operator=(const AutogradContext&) = delete;

  // Tensors (inputs or outputs of forward) that backward reads with get_saved_variables().
  void save_for_backward(variable_list to_save);
  // The saved tensors, in order; raises if one was modified in place after forward, or if the
  // graph was already freed by a backward pass without retain_graph.
  variable_list get_saved_variables() const;
  // Inputs that forward modified in place (they are returned as outputs).
  void mark_dirty(const variable_list& inputs);
  // Outputs that get no gradient (indices, masks): they do not require grad.
  void mark_non_differentiable(const variable_list& outputs);
  // With false, backward receives undefined tensors for outputs that got no gradient instead of
  // zeros (default true).
  void set_materialize_grads(bool value) { materialize_grads_ = value; }
  // Whether the index-th tensor input of forward needs a gradient (valid in forward and backward).
  bool needs_input_grad(size_t index) const { return index < needs_input_grad_.size() && needs_input_grad_[index]; }

  std::unordered_map<std::string, IValue> saved_data;

 private:
  friend struct detail::CustomNode;
  friend class detail::CustomCall;
  struct Saved {
    Tensor data;                          // an input: the tensor; an output: an alias without history
    std::weak_ptr<Node> output_of;        // outputs: the node, held weakly (no ownership cycle)
    uint32_t output_nr = 0, version = 0;
    bool is_output = false;
  };
  variable_list to_save_;
  std::vector<Saved> saved_;
  std::vector<const void*> dirty_, non_differentiable_;
  std::vector<bool> needs_input_grad_;
  std::string name_;
  bool materialize_grads_ = true;
  bool released_ = false;
};

namespace detail {

// The type-erased part of Function<T>::apply (autograd/custom_function.cpp).
class CustomCall {
 public:
  using Backward = variable_list (*)(AutogradContext*, variable_list);
  CustomCall(const std::type_info& type, Backward backward);
  ~CustomCall();
  CustomCall(const CustomCall&) = delete;
  CustomCall& operator=(const CustomCall&) = delete;

  void add(const Tensor& t) { tensors_.push_back(t); is_tensor_.push_back(true); }
  void add(const std::optional<Tensor>& t) {
    if (t && t->defined()) add(*t);
    else is_tensor_.push_back(false);
  }
  void add(const std::vector<Tensor>& ts) { for (const auto& t : ts) add(t); }
  template <class A>
  void add(const A&) { is_tensor_.push_back(false); }

  // Breaks an fw::compile trace, decides whether a node is needed and turns grad mode off.
  AutogradContext* begin();
  // Restores grad mode and connects forward's outputs to the node.
  Tensor finish(Tensor out);
  variable_list finish(variable_list outs);

 private:
  variable_list connect(variable_list outs);

  std::shared_ptr<CustomNode> node_;
  std::shared_ptr<AutogradContext> ctx_;
  Backward backward_;
  std::string name_;
  variable_list tensors_;
  std::vector<bool> is_tensor_;  // per forward argument (a tensor list contributes one per tensor)
  bool prev_grad_ = true;
  void* prev_tracer_ = nullptr;
  bool begun_ = false;
};

}  // namespace detail

// Base of a user's custom function T with static forward(AutogradContext*, args...) and
// static backward(AutogradContext*, variable_list).
template <class T>
struct Function {
  template <class... Args>
  static auto apply(Args&&... args) {
    detail::CustomCall call(typeid(T), [](AutogradContext* ctx, variable_list grads) {
      return T::backward(ctx, std::move(grads));
    });
    (call.add(args), ...);
    AutogradContext* ctx = call.begin();
    return call.finish(T::forward(ctx, std::forward<Args>(args)...));
  }
};

}  // namespace fw::autograd
