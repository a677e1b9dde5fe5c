// Optimizer base: param groups, zero_grad, closures and the state_dict of per-parameter states.
#include <set>
#include <typeinfo>

#include "fw/autograd.h"
#include "fw/optim.h"

namespace fw::optim {

OptimizerParamGroup& OptimizerParamGroup::operator=(const OptimizerParamGroup& o) {
  if (this != &o) {
    params_ = o.params_;
    options_ = o.options_ ? o.options_->clone() : nullptr;
  }
  return *this;
}

OptimizerOptions& OptimizerParamGroup::options() {
  FW_CHECK(options_, "[optim] this param group has no options");
  return *options_;
}

const OptimizerOptions& OptimizerParamGroup::options() const {
  FW_CHECK(options_, "[optim] this param group has no options");
  return *options_;
}

std::vector<std::pair<std::string, Tensor>> OptimizerParamState::named_tensors() const {
  detail::throw_error("[optim] the parameter state type ", typeid(*this).name(),
                      " does not implement named_tensors(), so the optimizer state cannot be saved");
}
void OptimizerParamState::load_named_tensors(const std::map<std::string, Tensor>&) {
  detail::throw_error("[optim] the parameter state type ", typeid(*this).name(),
                      " does not implement load_named_tensors(), so the optimizer state cannot be loaded");
}
std::unique_ptr<OptimizerParamState> Optimizer::make_state() const {
  detail::throw_error("[optim] ", typeid(*this).name(),
                      " does not implement make_state(), so its state cannot be loaded");
}

Optimizer::Optimizer(std::vector<OptimizerParamGroup> groups, std::unique_ptr<OptimizerOptions> defaults)
    : defaults_(std::move(defaults)) {
  for (const auto& g : groups) add_param_group(g);
}

void Optimizer::add_param_group(const OptimizerParamGroup& group) {
  std::set<const void*> seen;
  for (const auto& g : param_groups_)
    for (const auto& p : g.params()) seen.insert(p.unsafeGetTensorImpl());
  for (const auto& p : group.params()) {
    FW_CHECK(p.defined(), "[optim] a parameter is an undefined tensor");
    FW_CHECK(p.is_leaf(), "[optim] can't optimize a non-leaf Tensor");
    FW_CHECK(seen.insert(p.unsafeGetTensorImpl()).second,
             "[optim] some parameters appear in more than one parameter group");
  }
  OptimizerParamGroup g(group.params(), group.has_options() ? group.options().clone() : defaults_->clone());
  param_groups_.push_back(std::move(g));
}

void Optimizer::add_parameters(const std::vector<Tensor>& params) {
  FW_CHECK(!param_groups_.empty(), "[optim] the optimizer has no param group to add parameters to");
  for (const auto& p : params)
    for (const auto& g : param_groups_)
      for (const auto& q : g.params())
        FW_CHECK(!q.is_same(p), "[optim] some parameters appear in more than one parameter group");
  auto& ps = param_groups_[0].params();
  ps.insert(ps.end(), params.begin(), params.end());
}

void Optimizer::zero_grad(bool set_to_none) {
  for (auto& g : param_groups_)
    for (auto& p : g.params()) {
      Tensor gr = p.grad();
      if (!gr.defined()) continue;
      if (set_to_none) {
        p.set_grad(Tensor());
      } else {
        NoGradGuard ng;
        if (gr.grad_fn()) p.set_grad(gr.detach());
        p.grad().zero_();
      }
    }
}

size_t Optimizer::size() const noexcept {
  size_t n = 0;
  for (const auto& g : param_groups_) n += g.params().size();
  return n;
}

Tensor Optimizer::run_closure(const LossClosure& closure) {
  if (!closure) return {};
  AutoGradMode enable(true);
  return closure();
}

std::vector<std::pair<std::string, Tensor>> Optimizer::state_dict() const {
  std::vector<std::pair<std::string, Tensor>> out;
  size_t i = 0;
  for (size_t gi = 0; gi < param_groups_.size(); gi++) {
    out.emplace_back("param_groups." + std::to_string(gi) + ".lr",
                     scalar_tensor(param_groups_[gi].options().get_lr(), kDouble));
    for (const auto& p : param_groups_[gi].params()) {
      auto it = state_.find(guts::to_string(p.unsafeGetTensorImpl()));
      if (it != state_.end())
        for (auto& [name, t] : it->second->named_tensors())
          out.emplace_back("state." + std::to_string(i) + "." + name, t.clone());
      i++;
    }
  }
  return out;
}

void Optimizer::load_state_dict(const std::vector<std::pair<std::string, Tensor>>& sd) {
  std::vector<const Tensor*> params;
  for (const auto& g : param_groups_)
    for (const auto& p : g.params()) params.push_back(&p);
  std::map<size_t, std::map<std::string, Tensor>> per_param;
  for (const auto& [key, t] : sd) {
    if (key.rfind("param_groups.", 0) == 0) {
      size_t gi = std::stoul(key.substr(13));
      FW_CHECK(gi < param_groups_.size(), "[optim] load_state_dict: no param group ", gi, " (the optimizer has ",
               param_groups_.size(), ")");
      param_groups_[gi].options().set_lr(t.item<double>());
      continue;
    }
    FW_CHECK(key.rfind("state.", 0) == 0, "[optim] load_state_dict: unexpected key '", key, "'");
    size_t dot = key.find('.', 6);
    FW_CHECK(dot != std::string::npos, "[optim] load_state_dict: malformed key '", key, "'");
    size_t i = std::stoul(key.substr(6, dot - 6));
    FW_CHECK(i < params.size(), "[optim] load_state_dict: state for parameter ", i, " but the optimizer has ",
             params.size(), " parameters");
    per_param[i][key.substr(dot + 1)] = t.clone();
  }
  for (auto& [i, named] : per_param) {
    auto s = make_state();
    s->load_named_tensors(named);
    state_[guts::to_string(params[i]->unsafeGetTensorImpl())] = std::move(s);
  }
}

// ---- per-optimizer states as named tensors

namespace {
Tensor step_tensor(int64_t s) { return scalar_tensor(s, kLong); }

void load_fields(const std::map<std::string, Tensor>& t, const char* type,
                 const std::vector<std::pair<std::string, Tensor*>>& tensors,
                 const std::vector<std::pair<std::string, int64_t*>>& ints) {
  for (const auto& [name, v] : t) {
    bool found = false;
    for (auto& [n, dst] : tensors)
      if (n == name) *dst = v, found = true;
    for (auto& [n, dst] : ints)
      if (n == name) *dst = v.item<int64_t>(), found = true;
    FW_CHECK(found, "[optim] ", type, " has no state named '", name, "'");
  }
}

void push_defined(std::vector<std::pair<std::string, Tensor>>& out, const char* name, const Tensor& t) {
  if (t.defined()) out.emplace_back(name, t);
}
}  // namespace

std::unique_ptr<OptimizerParamState> SGDParamState::clone() const {
  auto s = std::make_unique<SGDParamState>();
  if (momentum_buffer_.defined()) s->momentum_buffer(momentum_buffer_.clone());
  return s;
}
std::vector<std::pair<std::string, Tensor>> SGDParamState::named_tensors() const {
  std::vector<std::pair<std::string, Tensor>> out;
  push_defined(out, "momentum_buffer", momentum_buffer_);
  return out;
}
void SGDParamState::load_named_tensors(const std::map<std::string, Tensor>& t) {
  load_fields(t, "SGDParamState", {{"momentum_buffer", &momentum_buffer_}}, {});
}

std::unique_ptr<OptimizerParamState> AdamParamState::clone() const {
  auto s = std::make_unique<AdamParamState>(*this);
  for (Tensor* t : {&s->exp_avg(), &s->exp_avg_sq(), &s->max_exp_avg_sq()})
    if (t->defined()) *t = t->clone();
  return s;
}
std::vector<std::pair<std::string, Tensor>> AdamParamState::named_tensors() const {
  std::vector<std::pair<std::string, Tensor>> out{{"step", step_tensor(step_)}};
  push_defined(out, "exp_avg", exp_avg_);
  push_defined(out, "exp_avg_sq", exp_avg_sq_);
  push_defined(out, "max_exp_avg_sq", max_exp_avg_sq_);
  return out;
}
void AdamParamState::load_named_tensors(const std::map<std::string, Tensor>& t) {
  load_fields(t, "AdamParamState",
              {{"exp_avg", &exp_avg_}, {"exp_avg_sq", &exp_avg_sq_}, {"max_exp_avg_sq", &max_exp_avg_sq_}},
              {{"step", &step_}});
}

std::unique_ptr<OptimizerParamState> RMSpropParamState::clone() const {
  auto s = std::make_unique<RMSpropParamState>(*this);
  for (Tensor* t : {&s->square_avg(), &s->momentum_buffer(), &s->grad_avg()})
    if (t->defined()) *t = t->clone();
  return s;
}
std::vector<std::pair<std::string, Tensor>> RMSpropParamState::named_tensors() const {
  std::vector<std::pair<std::string, Tensor>> out{{"step", step_tensor(step_)}};
  push_defined(out, "square_avg", square_avg_);
  push_defined(out, "momentum_buffer", momentum_buffer_);
  push_defined(out, "grad_avg", grad_avg_);
  return out;
}
void RMSpropParamState::load_named_tensors(const std::map<std::string, Tensor>& t) {
  load_fields(t, "RMSpropParamState",
              {{"square_avg", &square_avg_}, {"momentum_buffer", &momentum_buffer_}, {"grad_avg", &grad_avg_}},
              {{"step", &step_}});
}

std::unique_ptr<OptimizerParamState> AdagradParamState::clone() const {
  auto s = std::make_unique<AdagradParamState>(*this);
  if (s->sum().defined()) s->sum() = s->sum().clone();
  return s;
}
std::vector<std::pair<std::string, Tensor>> AdagradParamState::named_tensors() const {
  std::vector<std::pair<std::string, Tensor>> out{{"step", step_tensor(step_)}};
  push_defined(out, "sum", sum_);
  return out;
}
void AdagradParamState::load_named_tensors(const std::map<std::string, Tensor>& t) {
  load_fields(t, "AdagradParamState", {{"sum", &sum_}}, {{"step", &step_}});
}

}  // namespace fw::optim
