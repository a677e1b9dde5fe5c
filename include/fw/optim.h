// fw::optim: libtorch's optimizers (SGD, Adam, AdamW, RMSprop, Adagrad, LBFGS) with param groups and
// per-parameter state, and PyTorch's learning-rate schedulers (include/fw/optim/schedulers.h).
//   fw::optim::SGD opt(net->parameters(), fw::optim::SGDOptions(0.01).momentum(0.9));
//   opt.zero_grad(); loss.backward(); opt.step();
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "fw/guts.h"
#include "fw/nn/options.h"
#include "fw/ops.h"

namespace fw::serialize {
class OutputArchive;
class InputArchive;
}  // namespace fw::serialize

namespace fw::optim {

// Hyper-parameters of one param group; every optimizer's options derive from this.
struct OptimizerOptions {
  virtual ~OptimizerOptions() = default;
  virtual std::unique_ptr<OptimizerOptions> clone() const = 0;
  virtual double get_lr() const = 0;
  virtual void set_lr(double lr) = 0;
};

template <class Derived>
struct OptimizerCloneableOptions : OptimizerOptions {
  std::unique_ptr<OptimizerOptions> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
  double get_lr() const override { return static_cast<const Derived&>(*this).lr(); }
  void set_lr(double lr) override { static_cast<Derived&>(*this).lr(lr); }
};

// Per-parameter optimizer state (momentum buffers, moment estimates, step counts).
struct OptimizerParamState {
  virtual ~OptimizerParamState() = default;
  virtual std::unique_ptr<OptimizerParamState> clone() const = 0;
  // The state as named tensors (step counts as 0-dim int64 tensors), for checkpoints. A custom
  // state that does not override these cannot be saved or loaded: both throw, naming the type,
  // rather than dropping the state.
  virtual std::vector<std::pair<std::string, Tensor>> named_tensors() const;
  // Restores what named_tensors() produced; names it does not know are an error.
  virtual void load_named_tensors(const std::map<std::string, Tensor>& t);
};

// libtorch's base for a custom optimizer's state (clone() from the copy constructor).
template <class Derived>
struct OptimizerCloneableParamState : OptimizerParamState {
  std::unique_ptr<OptimizerParamState> clone() const override {
    return std::make_unique<Derived>(static_cast<const Derived&>(*this));
  }
};

// Parameters that share hyper-parameters. Without options a group takes the optimizer's defaults.
class OptimizerParamGroup {
 public:
  OptimizerParamGroup(std::vector<Tensor> params) : params_(std::move(params)) {}
  OptimizerParamGroup(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> options)
      : params_(std::move(params)), options_(std::move(options)) {}
  OptimizerParamGroup(const OptimizerParamGroup& o)
      : params_(o.params_), options_(o.options_ ? o.options_->clone() : nullptr) {}
  OptimizerParamGroup(OptimizerParamGroup&&) noexcept = default;
  OptimizerParamGroup& operator=(const OptimizerParamGroup& o);
  OptimizerParamGroup& operator=(OptimizerParamGroup&&) noexcept = default;
  bool has_options() const { return bool(options_); }
  OptimizerOptions& options();
  const OptimizerOptions& options() const;
  void set_options(std::unique_ptr<OptimizerOptions> o) { options_ = std::move(o); }
  std::vector<Tensor>& params() { return params_; }
  const std::vector<Tensor>& params() const { return params_; }

 private:
  std::vector<Tensor> params_;
  std::unique_ptr<OptimizerOptions> options_;
};

class Optimizer {
 public:
  using LossClosure = std::function<Tensor()>;
  Optimizer(std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults);
  Optimizer(std::vector<Tensor> params, std::unique_ptr<OptimizerOptions> defaults)
      : Optimizer(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, std::move(defaults)) {}
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;
  virtual ~Optimizer() = default;

  // One update of every parameter that has a gradient; closure (if given) recomputes the loss
  // with gradients enabled and its value is returned.
  virtual Tensor step(LossClosure closure = nullptr) = 0;
  // libtorch 1.13 semantics: zeroes the gradients in place (set_to_none drops them instead).
  void zero_grad(bool set_to_none = false);
  // Adds a group; missing options are copied from the defaults. A parameter may be in one group only.
  void add_param_group(const OptimizerParamGroup& group);
  // Adds parameters to the first group.
  void add_parameters(const std::vector<Tensor>& params);
  // The parameters of the first group (libtorch's parameters()).
  const std::vector<Tensor>& parameters() const noexcept { return param_groups_.at(0).params(); }
  std::vector<Tensor>& parameters() noexcept { return param_groups_.at(0).params(); }
  // Number of parameters over all groups.
  size_t size() const noexcept;
  OptimizerOptions& defaults() noexcept { return *defaults_; }
  const OptimizerOptions& defaults() const noexcept { return *defaults_; }
  std::vector<OptimizerParamGroup>& param_groups() noexcept { return param_groups_; }
  const std::vector<OptimizerParamGroup>& param_groups() const noexcept { return param_groups_; }
  // Per-parameter state keyed as libtorch keys it: guts::to_string(p.unsafeGetTensorImpl())
  // (c10::guts::to_string in libtorch spelling).
  using StateMap = std::unordered_map<std::string, std::unique_ptr<OptimizerParamState>>;
  StateMap& state() noexcept { return state_; }
  const StateMap& state() const noexcept { return state_; }

  // The whole state as named tensors: "state.<i>.<name>" for the i-th parameter over all groups
  // (in group order) and "param_groups.<g>.lr" as 0-dim float64 tensors.
  std::vector<std::pair<std::string, Tensor>> state_dict() const;
  // Restores a state_dict() of an optimizer of the same type over the same parameter layout.
  void load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd);
  // libtorch's archive forms: the state_dict() into / out of an archive (validated as a file
  // given to fw::load(optimizer, path) is; implemented in core/serialize_state.cpp).
  virtual void save(serialize::OutputArchive& archive) const;
  virtual void load(serialize::InputArchive& archive);
  // True when the state is one flat vector over all parameters, kept as parameter 0's (LBFGS),
  // instead of one state per parameter of that parameter's shape.
  virtual bool flat_state() const { return false; }

 protected:
  // Creates the state of a parameter on first use.
  template <class S>
  S& state_for(const Tensor& p) {
    auto& slot = state_[guts::to_string(p.unsafeGetTensorImpl())];
    if (!slot) slot = std::make_unique<S>();
    return static_cast<S&>(*slot);
  }
  // An empty state of this optimizer's type (for load_state_dict). Custom optimizers that keep
  // state and want load_state_dict override it; the default throws.
  virtual std::unique_ptr<OptimizerParamState> make_state() const;
  // Runs the closure with grad enabled (or returns an undefined tensor).
  static Tensor run_closure(const LossClosure& closure);

  std::vector<OptimizerParamGroup> param_groups_;
  std::unique_ptr<OptimizerOptions> defaults_;
  StateMap state_;
};

// ---- SGD

struct SGDOptions : OptimizerCloneableOptions<SGDOptions> {
  SGDOptions(double lr) : lr_(lr) {}
  FW_ARG(double, lr);
  FW_ARG(double, momentum) = 0;
  FW_ARG(double, dampening) = 0;
  FW_ARG(double, weight_decay) = 0;
  FW_ARG(bool, nesterov) = false;
};
struct SGDParamState : OptimizerParamState {
  FW_ARG(Tensor, momentum_buffer);

 public:
  std::unique_ptr<OptimizerParamState> clone() const override;
  std::vector<std::pair<std::string, Tensor>> named_tensors() const override;
  void load_named_tensors(const std::map<std::string, Tensor>& t) override;
};
class SGD : public Optimizer {
 public:
  SGD(std::vector<OptimizerParamGroup> groups, SGDOptions defaults);
  SGD(std::vector<Tensor> params, SGDOptions defaults)
      : SGD(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_state() const override { return std::make_unique<SGDParamState>(); }
};

// ---- Adam and AdamW (decoupled weight decay)

struct AdamOptions : OptimizerCloneableOptions<AdamOptions> {
  using betas_t = std::tuple<double, double>;
  AdamOptions(double lr = 1e-3) : lr_(lr) {}
  FW_ARG(double, lr);
  FW_ARG(betas_t, betas) = betas_t(0.9, 0.999);
  FW_ARG(double, eps) = 1e-8;
  FW_ARG(double, weight_decay) = 0;
  FW_ARG(bool, amsgrad) = false;
};
struct AdamWOptions : OptimizerCloneableOptions<AdamWOptions> {
  using betas_t = std::tuple<double, double>;
  AdamWOptions(double lr = 1e-3) : lr_(lr) {}
  FW_ARG(double, lr);
  FW_ARG(betas_t, betas) = betas_t(0.9, 0.999);
  FW_ARG(double, eps) = 1e-8;
  FW_ARG(double, weight_decay) = 1e-2;
  FW_ARG(bool, amsgrad) = false;
};
struct AdamParamState : OptimizerParamState {
  FW_ARG(int64_t, step) = 0;
  FW_ARG(Tensor, exp_avg);
  FW_ARG(Tensor, exp_avg_sq);
  FW_ARG(Tensor, max_exp_avg_sq);

 public:
  std::unique_ptr<OptimizerParamState> clone() const override;
  std::vector<std::pair<std::string, Tensor>> named_tensors() const override;
  void load_named_tensors(const std::map<std::string, Tensor>& t) override;
};
using AdamWParamState = AdamParamState;
class Adam : public Optimizer {
 public:
  Adam(std::vector<OptimizerParamGroup> groups, AdamOptions defaults = {});
  Adam(std::vector<Tensor> params, AdamOptions defaults = {})
      : Adam(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_state() const override { return std::make_unique<AdamParamState>(); }
};
class AdamW : public Optimizer {
 public:
  AdamW(std::vector<OptimizerParamGroup> groups, AdamWOptions defaults = {});
  AdamW(std::vector<Tensor> params, AdamWOptions defaults = {})
      : AdamW(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_state() const override { return std::make_unique<AdamParamState>(); }
};

// ---- RMSprop

struct RMSpropOptions : OptimizerCloneableOptions<RMSpropOptions> {
  RMSpropOptions(double lr = 1e-2) : lr_(lr) {}
  FW_ARG(double, lr);
  FW_ARG(double, alpha) = 0.99;
  FW_ARG(double, eps) = 1e-8;
  FW_ARG(double, weight_decay) = 0;
  FW_ARG(double, momentum) = 0;
  FW_ARG(bool, centered) = false;
};
struct RMSpropParamState : OptimizerParamState {
  FW_ARG(int64_t, step) = 0;
  FW_ARG(Tensor, square_avg);
  FW_ARG(Tensor, momentum_buffer);
  FW_ARG(Tensor, grad_avg);

 public:
  std::unique_ptr<OptimizerParamState> clone() const override;
  std::vector<std::pair<std::string, Tensor>> named_tensors() const override;
  void load_named_tensors(const std::map<std::string, Tensor>& t) override;
};
class RMSprop : public Optimizer {
 public:
  RMSprop(std::vector<OptimizerParamGroup> groups, RMSpropOptions defaults = {});
  RMSprop(std::vector<Tensor> params, RMSpropOptions defaults = {})
      : RMSprop(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_state() const override { return std::make_unique<RMSpropParamState>(); }
};

// ---- Adagrad

struct AdagradOptions : OptimizerCloneableOptions<AdagradOptions> {
  AdagradOptions(double lr = 1e-2) : lr_(lr) {}
  FW_ARG(double, lr);
  FW_ARG(double, lr_decay) = 0;
  FW_ARG(double, weight_decay) = 0;
  FW_ARG(double, initial_accumulator_value) = 0;
  FW_ARG(double, eps) = 1e-10;
};
struct AdagradParamState : OptimizerParamState {
  FW_ARG(Tensor, sum);
  FW_ARG(int64_t, step) = 0;

 public:
  std::unique_ptr<OptimizerParamState> clone() const override;
  std::vector<std::pair<std::string, Tensor>> named_tensors() const override;
  void load_named_tensors(const std::map<std::string, Tensor>& t) override;
};
class Adagrad : public Optimizer {
 public:
  Adagrad(std::vector<OptimizerParamGroup> groups, AdagradOptions defaults = {});
  Adagrad(std::vector<Tensor> params, AdagradOptions defaults = {})
      : Adagrad(std::vector<OptimizerParamGroup>{OptimizerParamGroup(std::move(params))}, defaults) {}
  Tensor step(LossClosure closure = nullptr) override;

 protected:
  std::unique_ptr<OptimizerParamState> make_state() const override { return std::make_unique<AdagradParamState>(); }
};

}  // namespace fw::optim

#include "fw/optim/lbfgs.h"
#include "fw/optim/schedulers.h"
