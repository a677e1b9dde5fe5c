// Learning-rate schedulers with PyTorch's (torch.optim.lr_scheduler) lr sequences. Construction
// performs PyTorch's initial step (epoch 0); call step() once per epoch after optimizer.step().
// StepLR, the one scheduler libtorch's C++ API has, follows libtorch instead: no initial step, so
// its decays come one step() later than Python's. A scheduler derived from LRScheduler as in
// libtorch (get_lrs() reading step_count_, the number of earlier step() calls) works unchanged.
#pragma once
#include <string>
#include <vector>

#include "fw/optim.h"

namespace fw::optim {

class LRScheduler {
 public:
  explicit LRScheduler(Optimizer& optimizer);
  virtual ~LRScheduler() = default;
  // Advances one epoch and writes the new lrs into the optimizer's param groups.
  void step();
  // The lrs the last step set, one per param group.
  const std::vector<double>& get_last_lr() const { return last_lrs_; }
  int64_t last_epoch() const { return last_epoch_; }

 protected:
  // The lrs for last_epoch_ (already advanced), from the groups' current lrs or base_lrs_.
  virtual std::vector<double> get_lrs() = 0;
  std::vector<double> get_current_lrs() const;
  void set_lrs(const std::vector<double>& lrs);

  Optimizer& optimizer_;
  std::vector<double> base_lrs_;  // the groups' lrs when the scheduler was made
  std::vector<double> last_lrs_;
  int64_t last_epoch_ = -1;
  unsigned step_count_ = 0;  // libtorch's counter: step() calls before the current one
};

// lr *= gamma every step_size epochs, libtorch's way: the step() call that finds step_size,
// 2 step_size, ... earlier calls decays (Python's StepLR decays one call sooner).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, int64_t step_size, double gamma = 0.1);

 protected:
  std::vector<double> get_lrs() override;
  int64_t step_size_;
  double gamma_;
};

// lr *= gamma at each milestone (a milestone listed k times multiplies by gamma^k).
class MultiStepLR : public LRScheduler {
 public:
  MultiStepLR(Optimizer& optimizer, std::vector<int64_t> milestones, double gamma = 0.1);

 protected:
  std::vector<double> get_lrs() override;
  std::vector<int64_t> milestones_;
  double gamma_;
};

// lr *= gamma every epoch.
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);

 protected:
  std::vector<double> get_lrs() override;
  double gamma_;
};

// Cosine annealing from the base lr to eta_min over T_max epochs (PyTorch's recursive form).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, int64_t T_max, double eta_min = 0);

 protected:
  std::vector<double> get_lrs() override;
  int64_t T_max_;
  double eta_min_;
};

// Multiplies the base lr by a factor going linearly from start_factor to end_factor.
class LinearLR : public LRScheduler {
 public:
  LinearLR(Optimizer& optimizer, double start_factor = 1.0 / 3, double end_factor = 1.0, int64_t total_iters = 5);

 protected:
  std::vector<double> get_lrs() override;
  double start_factor_, end_factor_;
  int64_t total_iters_;
};

struct OneCycleLROptions {
  OneCycleLROptions(double max_lr, int64_t total_steps) : max_lr_(max_lr), total_steps_(total_steps) {}
  FW_ARG(double, max_lr);
  FW_ARG(int64_t, total_steps);
  FW_ARG(double, pct_start) = 0.3;
  FW_ARG(std::string, anneal_strategy) = "cos";  // "cos" or "linear"
  FW_ARG(bool, cycle_momentum) = true;
  FW_ARG(double, base_momentum) = 0.85;
  FW_ARG(double, max_momentum) = 0.95;
  FW_ARG(double, div_factor) = 25.0;
  FW_ARG(double, final_div_factor) = 1e4;
  FW_ARG(bool, three_phase) = false;
};

// The 1cycle policy: warm up to max_lr, anneal to max_lr / div_factor / final_div_factor; cycles
// the momentum (SGD, RMSprop) or beta1 (Adam, AdamW) inversely.
class OneCycleLR : public LRScheduler {
 public:
  OneCycleLR(Optimizer& optimizer, const OneCycleLROptions& options);

 protected:
  std::vector<double> get_lrs() override;
  struct Phase {
    double end_step, start_lr, end_lr, start_m, end_m;  // lrs as multiples: 0 initial, 1 max, 2 min
  };
  double anneal(double start, double end, double pct) const;
  void set_momentum(OptimizerOptions& o, double m);
  OneCycleLROptions o_;
  std::vector<Phase> phases_;
  std::vector<double> initial_lrs_, max_lrs_, min_lrs_;
};

struct ReduceLROnPlateauOptions {
  FW_ARG(std::string, mode) = "min";  // "min" or "max"
  FW_ARG(double, factor) = 0.1;
  FW_ARG(int64_t, patience) = 10;
  FW_ARG(double, threshold) = 1e-4;
  FW_ARG(std::string, threshold_mode) = "rel";  // "rel" or "abs"
  FW_ARG(int64_t, cooldown) = 0;
  FW_ARG(double, min_lr) = 0;
  // Per-group lower bounds (one per param group, or one for all); overrides min_lr when given.
  FW_ARG(std::vector<double>, min_lrs) = {};
  FW_ARG(double, eps) = 1e-8;
};

// Multiplies the lrs by factor when the metric has not improved for `patience` epochs.
class ReduceLROnPlateau {
 public:
  ReduceLROnPlateau(Optimizer& optimizer, const ReduceLROnPlateauOptions& options = {});
  void step(double metric);
  std::vector<double> get_last_lr() const;

 private:
  bool is_better(double a) const;
  Optimizer& optimizer_;
  ReduceLROnPlateauOptions o_;
  double best_;
  int64_t num_bad_epochs_ = 0, cooldown_counter_ = 0, last_epoch_ = 0;
};

// libtorch's spelling of ReduceLROnPlateau, with its positional constructor.
class ReduceLROnPlateauScheduler : public ReduceLROnPlateau {
 public:
  enum SchedulerMode { min, max };
  enum ThresholdMode { rel, abs };
  explicit ReduceLROnPlateauScheduler(Optimizer& optimizer, SchedulerMode mode = min, float factor = 0.1f,
                                      int patience = 10, double threshold = 1e-4, ThresholdMode threshold_mode = rel,
                                      int cooldown = 0, const std::vector<float>& min_lr = {}, double eps = 1e-8,
                                      bool verbose = false);
  void step(float metric) { ReduceLROnPlateau::step(metric); }
};

}  // namespace fw::optim
