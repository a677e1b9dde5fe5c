// Reverse-mode automatic differentiation: fw::autograd::grad/backward, anomaly mode,
// gradcheck. Tensor::backward, requires_grad_ and grad() are on the Tensor itself.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fw/tensor.h"

namespace fw {

// Disables autograd recording for pure inference code. As in libtorch, InferenceMode(false)
// leaves inference mode inside an enabled one: gradients are recorded again.
struct InferenceMode {
  explicit InferenceMode(bool enabled = true);
  ~InferenceMode();
  InferenceMode(const InferenceMode&) = delete;
  InferenceMode& operator=(const InferenceMode&) = delete;
  // True while an InferenceMode(true) guard is the innermost one on this thread.
  static bool is_enabled();
  bool prev_grad_, prev_inference_;
};

namespace autograd {

// libtorch's name for a tensor in autograd code.
using Variable = Tensor;

using variable_list = std::vector<Tensor>;

// A node of the backward graph (the grad_fn of a non-leaf tensor).
struct Node {
  virtual ~Node() = default;
  // libtorch-style name, e.g. "MulBackward".
  virtual std::string name() const = 0;
  size_t num_inputs() const { return next_edges_.size(); }
  // libtorch's torch::autograd::Edge: the node a gradient goes to and which of its inputs.
  struct Edge {
    std::shared_ptr<Node> function;
    uint32_t input_nr = 0;
    bool is_valid() const noexcept { return function != nullptr; }
  };
  // The nodes this one passes gradients to (libtorch's next_edges()).
  const std::vector<Edge>& next_edges() const noexcept { return next_edges_; }
  const Edge& next_edge(size_t i) const { return next_edges_.at(i); }
  std::vector<Edge> next_edges_;
  uint64_t seq_ = 0;
};

// Gradients of `outputs` with respect to `inputs` (no accumulation into .grad()).
variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs = {}, std::optional<bool> retain_graph = std::nullopt,
                   bool create_graph = false, bool allow_unused = false);
// Accumulates gradients of `tensors` into the .grad() of the leaves (or of `inputs` if given).
void backward(const variable_list& tensors, const variable_list& grad_tensors = {},
              std::optional<bool> retain_graph = std::nullopt, bool create_graph = false,
              const variable_list& inputs = {});

// While alive on this thread: backward raises when a node produces NaN, naming the node.
struct DetectAnomalyGuard {
  DetectAnomalyGuard();
  ~DetectAnomalyGuard();
  bool prev_;
};
bool anomaly_mode_enabled();
// libtorch's AnomalyMode switch (for the calling thread in fw, as DetectAnomalyGuard).
struct AnomalyMode {
  static bool is_enabled() { return anomaly_mode_enabled(); }
  static void set_enabled(bool enabled, bool check_nan = true);
};

// Compares analytical gradients with float64 central differences (PyTorch's defaults).
// fn maps inputs to outputs; inputs that require grad are perturbed. Raises fw::Error with
// the offending input/output and values when raise_exception, else returns false.
bool gradcheck(const std::function<variable_list(const variable_list&)>& fn, const variable_list& inputs,
               double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3, bool raise_exception = true);
// Same for second derivatives (gradients of the vector-Jacobian product).
bool gradgradcheck(const std::function<variable_list(const variable_list&)>& fn, const variable_list& inputs,
                   double eps = 1e-6, double atol = 1e-5, double rtol = 1e-3, bool raise_exception = true);

}  // namespace autograd
}  // namespace fw

#include "fw/autograd_function.h"
