// fw::optim::LBFGS: limited-memory BFGS as in PyTorch 1.13 (torch.optim.LBFGS and libtorch's
// torch::optim::LBFGS), with the optional strong-Wolfe line search. It needs a closure that
// clears the gradients, recomputes the loss, calls backward() and returns the loss:
//   fw::optim::LBFGS opt(net->parameters(), fw::optim::LBFGSOptions(1).line_search_fn("strong_wolfe"));
//   auto closure = [&] { opt.zero_grad(); auto l = loss(net->forward(x), y); l.backward(); return l; };
//   for (int i = 0; i < 10; i++) opt.step(closure);
// Like PyTorch it supports one param group only; all parameters share one flat search direction.
// Included by fw/optim.h.
#pragma once
#include <deque>
#include <string>

namespace fw::optim {

struct LBFGSOptions : OptimizerCloneableOptions<LBFGSOptions> {
  LBFGSOptions(double lr = 1) : lr_(lr) {}
  FW_ARG(double, lr);
  FW_ARG(int64_t, max_iter) = 20;
  // Function evaluations per step(); unset means max_iter * 5 / 4, filled in by the constructor.
  FW_ARG(optional<int64_t>, max_eval) = std::nullopt;
  FW_ARG(double, tolerance_grad) = 1e-7;
  FW_ARG(double, tolerance_change) = 1e-9;
  FW_ARG(int64_t, history_size) = 100;
  // Unset (fixed step lr) or "strong_wolfe".
  FW_ARG(optional<std::string>, line_search_fn) = std::nullopt;
};

// The state lives with the first parameter (as in PyTorch); the curvature pairs span all of them.
struct LBFGSParamState : OptimizerParamState {
  FW_ARG(int64_t, func_evals) = 0;
  FW_ARG(int64_t, n_iter) = 0;
  FW_ARG(double, t) = 0;
  FW_ARG(double, prev_loss) = 0;
  FW_ARG(Tensor, d);
  FW_ARG(Tensor, H_diag);
  FW_ARG(Tensor, prev_flat_grad);
  FW_ARG(std::deque<Tensor>, old_dirs);
  FW_ARG(std::deque<Tensor>, old_stps);
  FW_ARG(std::deque<Tensor>, ro);
  FW_ARG(optional<std::vector<Tensor>>, al) = std::nullopt;

 public:
  std::unique_ptr<OptimizerParamState> clone() const override;
  // Scalars as 0-dim tensors ("t" and "prev_loss" float64); the history as old_dirs.<k>,
  // old_stps.<k> and ro.<k>, oldest first.
  std::vector<std::pair<std::string, Tensor>> named_tensors() const override;
  void load_named_tensors(const std::map<std::string, Tensor>& t) override;
};

class LBFGS : public Optimizer {
 public:
  LBFGS(std::vector<OptimizerParamGroup> groups, LBFGSOptions defaults = {});
  LBFGS(std::vector<Tensor> params, LBFGSOptions defaults = {})
      : LBFGS(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  // Runs up to max_iter iterations, evaluating the closure (required) at most max_eval times;
  // returns the loss of the first evaluation.
  Tensor step(LossClosure closure) override;
  bool flat_state() const override { return true; }

 protected:
  std::unique_ptr<OptimizerParamState> make_state() const override { return std::make_unique<LBFGSParamState>(); }

 private:
  Tensor gather_flat_grad() const;
  void add_grad(double step, const Tensor& direction);
  double directional_evaluate(const LossClosure& closure, const std::vector<Tensor>& x, double t,
                              const Tensor& d, Tensor& flat_grad);
  void set_params(const std::vector<Tensor>& x);
};

}  // namespace fw::optim
