// Backward-graph nodes: one OpNode per recorded op call, one AccumulateGrad per leaf.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "core/op.h"
#include "fw/autograd.h"

namespace fw::autograd::detail {

using fw::detail::OpAttrs;
using fw::detail::OpId;

// A tensor a node keeps for its vjp, with the version it had when saved.
struct SavedTensor {
  Tensor data;                     // inputs: the tensor itself; outputs: an alias without grad_fn
  std::weak_ptr<Node> output_of;   // outputs: the node that produced it (no ownership cycle)
  uint32_t output_nr = 0;
  uint32_t version = 0;
  bool is_output = false;
  bool check_version = true;
  void save(const Tensor& t, bool output, const std::shared_ptr<Node>& producer, uint32_t nr);
  // The tensor for a vjp; raises if it was modified in place since it was saved.
  Tensor unpack(const std::string& node_name) const;
};

// PyTorch's rule: inference tensors are never saved for backward (clone() one first). fw could
// track their versions, but a program that runs here should run under libtorch too.
void refuse_inference_save(const Tensor& t, const char* op);

struct OutputMeta {
  DimVec sizes;
  ScalarType dtype = kFloat;
};

// Base of every executable node.
struct EngineNode : Node {
  std::vector<OutputMeta> outputs;  // shape/dtype of each forward output (the grads it takes)
  std::vector<std::vector<std::function<Tensor(const Tensor&)>>> pre_hooks;  // per output
  bool released = false;
  virtual variable_list apply(variable_list&& grads, bool create_graph) = 0;
  virtual void release() { released = true; pre_hooks.clear(); }
};

struct OpNode : EngineNode {
  OpId id;
  OpAttrs attrs;
  std::vector<SavedTensor> in, out;
  std::vector<bool> needs;
  bool geometry_kept = false;  // released, but the vjp needs no values (Note [Nodes that read no values])
  OpNode(OpId i, const OpAttrs& a) : id(i), attrs(a) {}
  std::string name() const override;
  variable_list apply(variable_list&& grads, bool create_graph) override;
  void release() override;
};

struct AccumulateGrad : EngineNode {
  intrusive_ptr<TensorImpl> leaf;
  explicit AccumulateGrad(intrusive_ptr<TensorImpl> l) : leaf(std::move(l)) {}
  std::string name() const override { return "torch::autograd::AccumulateGrad"; }  // libtorch's name
  variable_list apply(variable_list&& grads, bool create_graph) override;
  void release() override {}  // leaves outlive backward passes
};

// The history of a base after an in-place write through one of its views: base_new equals
// base_old except on the view's elements, which now hold `result`. Gradient edges: 0 = base_old,
// 1 = result (Note [In-place writes through views] in node.cpp).
struct CopySlices : EngineNode {
  DimVec sizes, strides;  // the view's geometry; offset relative to the base
  int64_t offset = 0;
  std::vector<int64_t> order;  // the base's dims outermost first in memory; empty: row-major
  std::string name() const override { return "CopySlices"; }
  variable_list apply(variable_list&& grads, bool create_graph) override;
};

// The edge a gradient for `t` flows into (its grad_fn, or its leaf accumulator).
Node::Edge gradient_edge(const Tensor& t);
uint64_t next_sequence_number();

}  // namespace fw::autograd::detail
