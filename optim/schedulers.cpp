// Learning-rate schedulers: PyTorch's get_lr() recursions (torch.optim.lr_scheduler, 1.13).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "fw/optim.h"

namespace fw::optim {

LRScheduler::LRScheduler(Optimizer& optimizer) : optimizer_(optimizer) { base_lrs_ = get_current_lrs(); }

void LRScheduler::step() {
  last_epoch_++;
  set_lrs(get_lrs());
  step_count_++;
}

std::vector<double> LRScheduler::get_current_lrs() const {
  std::vector<double> lrs;
  for (const auto& g : optimizer_.param_groups()) lrs.push_back(g.options().get_lr());
  return lrs;
}

void LRScheduler::set_lrs(const std::vector<double>& lrs) {
  auto& groups = optimizer_.param_groups();
  FW_CHECK(lrs.size() == groups.size(), "[LRScheduler] ", lrs.size(), " lrs for ", groups.size(), " param groups");
  for (size_t i = 0; i < groups.size(); i++) groups[i].options().set_lr(lrs[i]);
  last_lrs_ = lrs;
}

StepLR::StepLR(Optimizer& optimizer, int64_t step_size, double gamma)
    : LRScheduler(optimizer), step_size_(step_size), gamma_(gamma) {
  FW_CHECK(step_size > 0, "[StepLR] step_size must be positive, but got ", step_size);
  last_lrs_ = base_lrs_;
}

std::vector<double> StepLR::get_lrs() {
  auto lrs = get_current_lrs();
  if (step_count_ == 0 || step_count_ % unsigned(step_size_) != 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

MultiStepLR::MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma)
    : LRScheduler(optimizer), milestones_(std::move(milestones)), gamma_(gamma) {
  step();
}

std::vector<double> MultiStepLR::get_lrs() {
  auto lrs = get_current_lrs();
  auto hits = std::count(milestones_.begin(), milestones_.end(), last_epoch_);
  if (hits == 0) return lrs;
  for (double& lr : lrs) lr *= std::pow(gamma_, double(hits));
  return lrs;
}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma) : LRScheduler(optimizer), gamma_(gamma) { step(); }

std::vector<double> ExponentialLR::get_lrs() {
  auto lrs = get_current_lrs();
  if (last_epoch_ == 0) return lrs;
  for (double& lr : lrs) lr *= gamma_;
  return lrs;
}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min)
    : LRScheduler(optimizer), T_max_(T_max), eta_min_(eta_min) {
  FW_CHECK(T_max > 0, "[CosineAnnealingLR] T_max must be positive, but got ", T_max);
  step();
}

std::vector<double> CosineAnnealingLR::get_lrs() {
  auto lrs = get_current_lrs();
  if (last_epoch_ == 0) return lrs;
  const double pi = std::numbers::pi, T = double(T_max_), e = double(last_epoch_);
  int64_t period = 2 * T_max_, r = ((last_epoch_ - 1 - T_max_) % period + period) % period;
  for (size_t i = 0; i < lrs.size(); i++) {
    if (r == 0) lrs[i] += (base_lrs_[i] - eta_min_) * (1 - std::cos(pi / T)) / 2;
    else lrs[i] = (1 + std::cos(pi * e / T)) / (1 + std::cos(pi * (e - 1) / T)) * (lrs[i] - eta_min_) + eta_min_;
  }
  return lrs;
}

LinearLR::LinearLR(Optimizer& optimizer, double start_factor, double end_factor, int64_t total_iters)
    : LRScheduler(optimizer), start_factor_(start_factor), end_factor_(end_factor), total_iters_(total_iters) {
  FW_CHECK(start_factor > 0 && start_factor <= 1, "[LinearLR] Starting multiplicative factor expected to be greater "
           "than 0 and less or equal to 1, but got ", start_factor);
  FW_CHECK(end_factor >= 0 && end_factor <= 1, "[LinearLR] Ending multiplicative factor expected to be between 0 and 1, "
           "but got ", end_factor);
  step();
}

std::vector<double> LinearLR::get_lrs() {
  auto lrs = get_current_lrs();
  if (last_epoch_ == 0) {
    for (double& lr : lrs) lr *= start_factor_;
    return lrs;
  }
  if (last_epoch_ > total_iters_) return lrs;
  double d = end_factor_ - start_factor_;
  double f = 1 + d / (double(total_iters_) * start_factor_ + double(last_epoch_ - 1) * d);
  for (double& lr : lrs) lr *= f;
  return lrs;
}

// ---- OneCycleLR

namespace {
// The momentum-like hyper-parameter of an optimizer's options (beta1 for Adam/AdamW).
double* momentum_of(OptimizerOptions& o) {
  if (auto* s = dynamic_cast<SGDOptions*>(&o)) return &s->momentum();
  if (auto* r = dynamic_cast<RMSpropOptions*>(&o)) return &r->momentum();
  if (auto* a = dynamic_cast<AdamOptions*>(&o)) return &std::get<0>(a->betas());
  if (auto* w = dynamic_cast<AdamWOptions*>(&o)) return &std::get<0>(w->betas());
  return nullptr;
}
}  // namespace

OneCycleLR::OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& o) : LRScheduler(optimizer), o_(o) {
  FW_CHECK(o.total_steps() > 0, "[OneCycleLR] Expected positive integer total_steps, but got ", o.total_steps());
  FW_CHECK(o.pct_start() >= 0 && o.pct_start() <= 1, "[OneCycleLR] Expected float between 0 and 1 pct_start, but got ",
           o.pct_start());
  FW_CHECK(o.anneal_strategy() == "cos" || o.anneal_strategy() == "linear",
           "[OneCycleLR] anneal_strategy must by one of 'cos' or 'linear', instead got ", o.anneal_strategy());
  double total = double(o.total_steps()), pct = o.pct_start();
  if (o.three_phase())
    phases_ = {{pct * total - 1, 0, 1, o.max_momentum(), o.base_momentum()},
               {2 * pct * total - 2, 1, 0, o.base_momentum(), o.max_momentum()},
               {total - 1, 0, 2, o.max_momentum(), o.max_momentum()}};
  else
    phases_ = {{pct * total - 1, 0, 1, o.max_momentum(), o.base_momentum()},
               {total - 1, 1, 2, o.base_momentum(), o.max_momentum()}};
  for (auto& g : optimizer.param_groups()) {
    initial_lrs_.push_back(o.max_lr() / o.div_factor());
    max_lrs_.push_back(o.max_lr());
    min_lrs_.push_back(initial_lrs_.back() / o.final_div_factor());
    g.options().set_lr(initial_lrs_.back());
    if (!o.cycle_momentum()) continue;
    FW_CHECK(momentum_of(g.options()), "[OneCycleLR] optimizer must support momentum with `cycle_momentum` option enabled");
    set_momentum(g.options(), o.max_momentum());
  }
  base_lrs_ = initial_lrs_;
  step();
}

double OneCycleLR::anneal(double start, double end, double pct) const {
  if (o_.anneal_strategy() == "cos") return end + (start - end) / 2.0 * (std::cos(std::numbers::pi * pct) + 1);
  return (end - start) * pct + start;
}

void OneCycleLR::set_momentum(OptimizerOptions& o, double m) { *momentum_of(o) = m; }

std::vector<double> OneCycleLR::get_lrs() {
  double step_num = double(last_epoch_);
  FW_CHECK(last_epoch_ <= o_.total_steps(), "[OneCycleLR] Tried to step ", last_epoch_,
           " times. The specified number of total steps is ", o_.total_steps());
  auto& groups = optimizer_.param_groups();
  std::vector<double> lrs;
  for (size_t gi = 0; gi < groups.size(); gi++) {
    const double levels[3] = {initial_lrs_[gi], max_lrs_[gi], min_lrs_[gi]};
    double start_step = 0, lr = 0, mom = 0;
    for (size_t i = 0; i < phases_.size(); i++) {
      const Phase& ph = phases_[i];
      if (step_num <= ph.end_step || i + 1 == phases_.size()) {
        double pct = (step_num - start_step) / (ph.end_step - start_step);
        lr = anneal(levels[int(ph.start_lr)], levels[int(ph.end_lr)], pct);
        mom = anneal(ph.start_m, ph.end_m, pct);
        break;
      }
      start_step = ph.end_step;
    }
    lrs.push_back(lr);
    if (o_.cycle_momentum()) set_momentum(groups[gi].options(), mom);
  }
  return lrs;
}

// ---- ReduceLROnPlateau

ReduceLROnPlateau::ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& o)
    : optimizer_(optimizer), o_(o) {
  FW_CHECK(o.factor() < 1.0, "[ReduceLROnPlateau] Factor should be < 1.0.");
  FW_CHECK(o.mode() == "min" || o.mode() == "max", "[ReduceLROnPlateau] mode ", o.mode(), " is unknown!");
  FW_CHECK(o.threshold_mode() == "rel" || o.threshold_mode() == "abs", "[ReduceLROnPlateau] threshold mode ",
           o.threshold_mode(), " is unknown!");
  FW_CHECK(o.min_lrs().size() <= 1 || o.min_lrs().size() == optimizer.param_groups().size(),
           "[ReduceLROnPlateau] expected ", optimizer.param_groups().size(), " min_lrs (one per param group), got ",
           o.min_lrs().size());
  best_ = o.mode() == "min" ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

bool ReduceLROnPlateau::is_better(double a) const {
  bool rel = o_.threshold_mode() == "rel";
  if (o_.mode() == "min") return rel ? a < best_ * (1 - o_.threshold()) : a < best_ - o_.threshold();
  return rel ? a > best_ * (o_.threshold() + 1) : a > best_ + o_.threshold();
}

void ReduceLROnPlateau::step(double metric) {
  last_epoch_++;
  if (is_better(metric)) {
    best_ = metric;
    num_bad_epochs_ = 0;
  } else {
    num_bad_epochs_++;
  }
  if (cooldown_counter_ > 0) {
    cooldown_counter_--;
    num_bad_epochs_ = 0;
  }
  if (num_bad_epochs_ <= o_.patience()) return;
  auto& groups = optimizer_.param_groups();
  const auto& mins = o_.min_lrs();
  FW_CHECK(mins.size() <= 1 || mins.size() == groups.size(), "[ReduceLROnPlateau] expected ", groups.size(),
           " min_lrs (one per param group), got ", mins.size(), " (param groups were added since)");
  for (size_t i = 0; i < groups.size(); i++) {
    auto& g = groups[i];
    const double floor_lr = mins.empty() ? o_.min_lr() : mins[mins.size() == 1 ? 0 : i];
    double old_lr = g.options().get_lr(), new_lr = std::max(old_lr * o_.factor(), floor_lr);
    if (old_lr - new_lr > o_.eps()) g.options().set_lr(new_lr);
  }
  cooldown_counter_ = o_.cooldown();
  num_bad_epochs_ = 0;
}

ReduceLROnPlateauScheduler::ReduceLROnPlateauScheduler(Optimizer& optimizer, SchedulerMode mode, float factor,
                                                       int patience, double threshold, ThresholdMode threshold_mode,
                                                       int cooldown, const std::vector<float>& min_lr, double eps,
                                                       bool /*verbose*/)
    : ReduceLROnPlateau(optimizer, ReduceLROnPlateauOptions()
                                       .mode(mode == min ? "min" : "max")
                                       .factor(factor)
                                       .patience(patience)
                                       .threshold(threshold)
                                       .threshold_mode(threshold_mode == rel ? "rel" : "abs")
                                       .cooldown(cooldown)
                                       .min_lrs(std::vector<double>(min_lr.begin(), min_lr.end()))
                                       .eps(eps)) {}

std::vector<double> ReduceLROnPlateau::get_last_lr() const {
  std::vector<double> lrs;
  for (const auto& g : optimizer_.param_groups()) lrs.push_back(g.options().get_lr());
  return lrs;
}

}  // namespace fw::optim
