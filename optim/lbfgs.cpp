// LBFGS: PyTorch 1.13's algorithm (two-loop recursion over the last history_size curvature
// pairs; a fixed step lr, or a strong-Wolfe line search with cubic interpolation and zoom).
// Scalars (losses, step sizes, directional derivatives) are kept in double; vectors keep the
// parameters' dtype. The whole step runs without grad; only the closure records.
#include <algorithm>
#include <cmath>

#include "fw/optim.h"

namespace fw::optim {
namespace {

double max_abs(const Tensor& t) { return t.abs().max().item<double>(); }
double dot_d(const Tensor& a, const Tensor& b) { return a.dot(b).item<double>(); }

// Minimiser of the cubic through (x1, f1, g1) and (x2, f2, g2) (values and slopes), clamped to
// [lo, hi]; the midpoint when the cubic has no real minimiser.
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2, double lo, double hi) {
  double d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2);
  double d2sq = d1 * d1 - g1 * g2;
  if (!(d2sq >= 0)) return (lo + hi) / 2;
  double d2 = std::sqrt(d2sq);
  double m = x1 <= x2 ? x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
                      : x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2));
  return std::min(std::max(m, lo), hi);
}
double cubic_interpolate(double x1, double f1, double g1, double x2, double f2, double g2) {
  return cubic_interpolate(x1, f1, g1, x2, f2, g2, std::min(x1, x2), std::max(x1, x2));
}

struct LineSearchResult {
  double loss;
  Tensor flat_grad;
  double t;
  int64_t evals;
};

// A point of the search: step, loss, gradient and directional derivative.
struct Point {
  double t, f;
  Tensor g;
  double gtd;
};

// Strong-Wolfe line search along d from t (Nocedal & Wright, algorithms 3.5 and 3.6, with the
// constants PyTorch uses: c1 1e-4, c2 0.9, at most 25 evaluations). eval(t, g) returns the loss
// at x + t d and writes its flat gradient to g.
template <class Eval>
LineSearchResult strong_wolfe(Eval&& eval, double t, const Tensor& d, double f, const Tensor& g, double gtd,
                              double tolerance_change = 1e-9, int max_ls = 25) {
  const double c1 = 1e-4, c2 = 0.9;
  double d_norm = max_abs(d);
  Tensor g_new;
  double f_new = eval(t, g_new);
  int64_t evals = 1;
  double gtd_new = dot_d(g_new, d);
  Point prev{0, f, g.clone(), gtd};
  std::vector<Point> bracket;
  bool done = false;
  int ls_iter = 0;
  while (ls_iter < max_ls) {
    if (f_new > f + c1 * t * gtd || (ls_iter > 1 && f_new >= prev.f)) {
      bracket = {prev, {t, f_new, g_new.clone(), gtd_new}};
      break;
    }
    if (std::abs(gtd_new) <= -c2 * gtd) {
      bracket = {{t, f_new, g_new, gtd_new}};
      done = true;
      break;
    }
    if (gtd_new >= 0) {
      bracket = {prev, {t, f_new, g_new.clone(), gtd_new}};
      break;
    }
    // Extrapolate: the cubic's minimiser, at least 1 % beyond t and at most 10 t.
    double min_step = t + 0.01 * (t - prev.t), max_step = t * 10;
    double next = cubic_interpolate(prev.t, prev.f, prev.gtd, t, f_new, gtd_new, min_step, max_step);
    prev = {t, f_new, g_new.clone(), gtd_new};
    t = next;
    f_new = eval(t, g_new);
    evals++;
    gtd_new = dot_d(g_new, d);
    ls_iter++;
  }
  if (ls_iter == max_ls) bracket = {{0, f, g, gtd}, {t, f_new, g_new, gtd_new}};

  // Zoom: shrink the bracket until a point meets both conditions.
  bool insuf_progress = false;
  size_t low = 0, high = 1;
  if (bracket.size() == 2 && bracket[0].f > bracket[1].f) low = 1, high = 0;
  while (!done && ls_iter < max_ls) {
    if (std::abs(bracket[1].t - bracket[0].t) * d_norm < tolerance_change) break;
    t = cubic_interpolate(bracket[0].t, bracket[0].f, bracket[0].gtd, bracket[1].t, bracket[1].f, bracket[1].gtd);
    double bmax = std::max(bracket[0].t, bracket[1].t), bmin = std::min(bracket[0].t, bracket[1].t);
    double eps = 0.1 * (bmax - bmin);
    // Keep t away from the bracket's ends: a point there makes little progress.
    if (std::min(bmax - t, t - bmin) < eps) {
      if (insuf_progress || t >= bmax || t <= bmin) {
        t = std::abs(t - bmax) < std::abs(t - bmin) ? bmax - eps : bmin + eps;
        insuf_progress = false;
      } else {
        insuf_progress = true;
      }
    } else {
      insuf_progress = false;
    }
    f_new = eval(t, g_new);
    evals++;
    gtd_new = dot_d(g_new, d);
    ls_iter++;
    if (f_new > f + c1 * t * gtd || f_new >= bracket[low].f) {
      bracket[high] = {t, f_new, g_new.clone(), gtd_new};
      if (bracket[0].f <= bracket[1].f) low = 0, high = 1;
      else low = 1, high = 0;
    } else {
      if (std::abs(gtd_new) <= -c2 * gtd) done = true;
      else if (gtd_new * (bracket[high].t - bracket[low].t) >= 0) bracket[high] = bracket[low];
      bracket[low] = {t, f_new, g_new.clone(), gtd_new};
    }
  }
  const Point& best = bracket.size() == 1 ? bracket[0] : bracket[low];
  return {best.f, best.g, best.t, evals};
}

void check_options(const LBFGSOptions& o) {
  FW_CHECK(o.lr() >= 0, "[LBFGS] Invalid learning rate: ", o.lr());
  FW_CHECK(o.max_iter() >= 0, "[LBFGS] Invalid max_iter: ", o.max_iter());
  FW_CHECK(!o.max_eval() || *o.max_eval() >= 0, "[LBFGS] Invalid max_eval: ", *o.max_eval());
  FW_CHECK(o.history_size() >= 1, "[LBFGS] Invalid history_size: ", o.history_size(), " (needs at least 1)");
  FW_CHECK(!o.line_search_fn() || *o.line_search_fn() == "strong_wolfe",
           "[LBFGS] only 'strong_wolfe' is supported as line_search_fn, got '", o.line_search_fn().value_or(""), "'");
}

// The closure's loss as a double, checked to be one value.
double loss_value(const Tensor& loss) {
  FW_CHECK(loss.defined(), "[LBFGS] the closure returned an undefined tensor; it must return the loss");
  FW_CHECK(loss.numel() == 1, "[LBFGS] the closure must return a one-element loss, got shape ", loss.sizes());
  return loss.item<double>();
}

// A tensor of the saved state, checked against the flat gradient and cast to its dtype (a state
// dict may come from another dtype; PyTorch casts state to the parameter's dtype too).
Tensor state_like(const Tensor& t, const Tensor& flat_grad, const char* name, bool vector = true) {
  FW_CHECK(t.defined(), "[LBFGS] the optimizer state has iterations but no '", name, "' (an incomplete state dict?)");
  if (vector)
    FW_CHECK(t.dim() == 1 && t.numel() == flat_grad.numel(), "[LBFGS] state '", name, "' has shape ", t.sizes(),
             " but the parameters have ", flat_grad.numel(), " elements (a state dict of another model?)");
  return t.dtype() == flat_grad.dtype() ? t : t.to(flat_grad.dtype());
}

}  // namespace

LBFGS::LBFGS(std::vector<OptimizerParamGroup> groups, LBFGSOptions d)
    : Optimizer(std::move(groups), std::make_unique<LBFGSOptions>(d)) {
  FW_CHECK(param_groups_.size() == 1, "[LBFGS] doesn't support per-parameter options (parameter groups); got ",
           param_groups_.size(), " groups");
  check_options(d);
  // As libtorch: an unset max_eval becomes max_iter * 5 / 4 here, so changing max_iter later
  // does not move it.
  if (!d.max_eval()) {
    const int64_t me = d.max_iter() * 5 / 4;
    static_cast<LBFGSOptions&>(defaults()).max_eval(me);
    static_cast<LBFGSOptions&>(param_groups_[0].options()).max_eval(me);
  }
}

Tensor LBFGS::gather_flat_grad() const {
  std::vector<Tensor> views;
  for (const auto& p : param_groups_[0].params())
    views.push_back(p.grad().defined() ? p.grad().reshape({-1}) : zeros({p.numel()}, p.options()));
  return cat(views, 0);
}

void LBFGS::add_grad(double step, const Tensor& direction) {
  int64_t offset = 0;
  for (auto& p : param_groups_[0].params()) {
    int64_t n = p.numel();
    FW_CHECK(offset + n <= direction.numel(), "[LBFGS] the parameters grew to more than the ", direction.numel(),
             " elements of the search direction (parameters must not change size between steps)");
    p.add_(direction.slice(0, offset, offset + n).view(p.sizes()), step);
    offset += n;
  }
  FW_CHECK(offset == direction.numel(), "[LBFGS] the parameters have ", offset,
           " elements but the search direction has ", direction.numel());
}

void LBFGS::set_params(const std::vector<Tensor>& x) {
  auto& ps = param_groups_[0].params();
  for (size_t i = 0; i < ps.size(); i++) ps[i].copy_(x[i]);
}

double LBFGS::directional_evaluate(const LossClosure& closure, const std::vector<Tensor>& x, double t,
                                   const Tensor& d, Tensor& flat_grad) {
  add_grad(t, d);
  double loss = loss_value(run_closure(closure));
  flat_grad = gather_flat_grad();
  set_params(x);
  return loss;
}

Tensor LBFGS::step(LossClosure closure) {
  FW_CHECK(closure != nullptr, "[LBFGS] step() needs a closure that recomputes the loss and its gradients");
  FW_CHECK(param_groups_.size() == 1, "[LBFGS] doesn't support per-parameter options (parameter groups); got ",
           param_groups_.size(), " groups");
  auto& params = param_groups_[0].params();
  FW_CHECK(!params.empty(), "[LBFGS] step(): the optimizer has no parameters");
  NoGradGuard no_grad;
  const auto& o = static_cast<const LBFGSOptions&>(param_groups_[0].options());
  check_options(o);
  const double lr = o.lr(), tolerance_grad = o.tolerance_grad(), tolerance_change = o.tolerance_change();
  const int64_t max_iter = o.max_iter(), max_eval = o.max_eval().value_or(max_iter * 5 / 4);
  const size_t history_size = size_t(o.history_size());
  auto& s = state_for<LBFGSParamState>(params[0]);

  Tensor orig_loss = run_closure(closure);
  double loss = loss_value(orig_loss);
  int64_t current_evals = 1;
  s.func_evals(s.func_evals() + 1);
  Tensor flat_grad = gather_flat_grad();
  bool opt_cond = max_abs(flat_grad) <= tolerance_grad;
  if (opt_cond) return orig_loss;

  Tensor d = s.d(), prev_flat_grad = s.prev_flat_grad(), H_diag = s.H_diag();
  double t = s.t(), prev_loss = s.prev_loss();
  auto &old_dirs = s.old_dirs(), &old_stps = s.old_stps(), &ro = s.ro();
  if (s.n_iter() > 0) {  // continuing: the saved direction and history must fit these parameters
    d = state_like(d, flat_grad, "d");
    prev_flat_grad = state_like(prev_flat_grad, flat_grad, "prev_flat_grad");
    H_diag = state_like(H_diag, flat_grad, "H_diag", false);
    for (auto* q : {&old_dirs, &old_stps})
      for (auto& v : *q) v = state_like(v, flat_grad, q == &old_dirs ? "old_dirs" : "old_stps");
    for (auto& v : ro) v = state_like(v, flat_grad, "ro", false);
  }
  std::vector<Tensor> al = s.al().value_or(std::vector<Tensor>{});

  int64_t n_iter = 0;
  while (n_iter < max_iter) {
    n_iter++;
    s.n_iter(s.n_iter() + 1);
    if (s.n_iter() == 1) {
      d = flat_grad.neg();
      old_dirs.clear(), old_stps.clear(), ro.clear();
      H_diag = scalar_tensor(1, flat_grad.options());
    } else {
      // Update the curvature pairs with y = g_k - g_{k-1}, s = t d; skip if y.s is not positive.
      Tensor y = flat_grad.sub(prev_flat_grad);
      Tensor st = d.mul(t);
      Tensor ys = y.dot(st);
      if (ys.item<double>() > 1e-10) {
        // (while, not if: history_size may have been lowered, or a longer history loaded)
        while (old_dirs.size() >= history_size) old_dirs.pop_front(), old_stps.pop_front(), ro.pop_front();
        old_dirs.push_back(y);
        old_stps.push_back(st);
        ro.push_back(ys.reciprocal());
        H_diag = ys / y.dot(y);
      }
      // Two-loop recursion: d = -H g.
      size_t num_old = old_dirs.size();
      al.assign(std::max(num_old, history_size), Tensor());
      Tensor q = flat_grad.neg();
      for (size_t i = num_old; i-- > 0;) {
        al[i] = old_stps[i].dot(q) * ro[i];
        q.add_(old_dirs[i], -al[i].item<double>());
      }
      d = q.mul(H_diag);
      for (size_t i = 0; i < num_old; i++) {
        Tensor be_i = old_dirs[i].dot(d) * ro[i];
        d.add_(old_stps[i], (al[i] - be_i).item<double>());
      }
    }
    if (prev_flat_grad.defined()) prev_flat_grad.copy_(flat_grad);
    else prev_flat_grad = flat_grad.clone();
    prev_loss = loss;

    // Step length: scaled down on the very first iteration, lr afterwards.
    if (s.n_iter() == 1) t = std::min(1.0, 1.0 / flat_grad.abs().sum().item<double>()) * lr;
    else t = lr;

    double gtd = dot_d(flat_grad, d);
    if (gtd > -tolerance_change) break;  // not a descent direction

    int64_t ls_func_evals = 0;
    if (o.line_search_fn()) {
      std::vector<Tensor> x_init;
      for (const auto& p : params) x_init.push_back(p.clone());
      auto eval = [&](double step, Tensor& g) { return directional_evaluate(closure, x_init, step, d, g); };
      auto r = strong_wolfe(eval, t, d, loss, flat_grad, gtd);
      loss = r.loss, flat_grad = r.flat_grad, t = r.t, ls_func_evals = r.evals;
      add_grad(t, d);
      opt_cond = max_abs(flat_grad) <= tolerance_grad;
    } else {
      add_grad(t, d);
      if (n_iter != max_iter) {
        // Re-evaluate for the next iteration's gradient (the last one is skipped).
        loss = loss_value(run_closure(closure));
        flat_grad = gather_flat_grad();
        opt_cond = max_abs(flat_grad) <= tolerance_grad;
        ls_func_evals = 1;
      }
    }
    current_evals += ls_func_evals;
    s.func_evals(s.func_evals() + ls_func_evals);

    if (n_iter == max_iter) break;
    if (current_evals >= max_eval) break;
    if (opt_cond) break;
    if (max_abs(d.mul(t)) <= tolerance_change) break;
    if (std::abs(loss - prev_loss) < tolerance_change) break;
  }

  s.d(d), s.t(t), s.H_diag(H_diag), s.prev_flat_grad(prev_flat_grad), s.prev_loss(prev_loss);
  s.al(al);
  return orig_loss;
}

// ---- state as named tensors (for Optimizer::state_dict / load_state_dict)

std::unique_ptr<OptimizerParamState> LBFGSParamState::clone() const {
  auto s = std::make_unique<LBFGSParamState>(*this);
  for (Tensor* t : {&s->d(), &s->H_diag(), &s->prev_flat_grad()})
    if (t->defined()) *t = t->clone();
  for (auto* q : {&s->old_dirs(), &s->old_stps(), &s->ro()})
    for (auto& t : *q) t = t.clone();
  if (s->al())
    for (auto& t : *s->al())
      if (t.defined()) t = t.clone();
  return s;
}

std::vector<std::pair<std::string, Tensor>> LBFGSParamState::named_tensors() const {
  std::vector<std::pair<std::string, Tensor>> out{
      {"func_evals", scalar_tensor(func_evals_, kLong)}, {"n_iter", scalar_tensor(n_iter_, kLong)},
      {"t", scalar_tensor(t_, kDouble)}, {"prev_loss", scalar_tensor(prev_loss_, kDouble)}};
  if (d_.defined()) out.emplace_back("d", d_);
  if (H_diag_.defined()) out.emplace_back("H_diag", H_diag_);
  if (prev_flat_grad_.defined()) out.emplace_back("prev_flat_grad", prev_flat_grad_);
  for (const auto& [name, q] : {std::pair{"old_dirs", &old_dirs_}, {"old_stps", &old_stps_}, {"ro", &ro_}})
    for (size_t k = 0; k < q->size(); k++) out.emplace_back(std::string(name) + "." + std::to_string(k), (*q)[k]);
  return out;
}

void LBFGSParamState::load_named_tensors(const std::map<std::string, Tensor>& t) {
  std::map<size_t, Tensor> dirs, stps, ros;
  auto scalar = [](const std::string& name, const Tensor& v) {
    FW_CHECK(v.numel() == 1, "[optim] LBFGSParamState: '", name, "' must hold one value, got shape ", v.sizes());
    return v;
  };
  for (const auto& [name, v] : t) {
    if (name == "func_evals") func_evals_ = scalar(name, v).item<int64_t>();
    else if (name == "n_iter") n_iter_ = scalar(name, v).item<int64_t>();
    else if (name == "t") t_ = scalar(name, v).item<double>();
    else if (name == "prev_loss") prev_loss_ = scalar(name, v).item<double>();
    else if (name == "d") d_ = v;
    else if (name == "H_diag") H_diag_ = v;
    else if (name == "prev_flat_grad") prev_flat_grad_ = v;
    else {
      size_t dot = name.find('.');
      std::string head = name.substr(0, dot);
      std::map<size_t, Tensor>* dst = head == "old_dirs" ? &dirs : head == "old_stps" ? &stps : head == "ro" ? &ros : nullptr;
      FW_CHECK(dst && dot != std::string::npos && dot + 1 < name.size() &&
                   name.find_first_not_of("0123456789", dot + 1) == std::string::npos && name.size() - dot - 1 <= 9,
               "[optim] LBFGSParamState has no state named '", name, "'");
      (*dst)[std::stoul(name.substr(dot + 1))] = v;
    }
  }
  FW_CHECK(dirs.size() == stps.size() && dirs.size() == ros.size(),
           "[optim] LBFGSParamState: the history has ", dirs.size(), " old_dirs, ", stps.size(), " old_stps and ",
           ros.size(), " ro entries; they must match");
  old_dirs_.clear(), old_stps_.clear(), ro_.clear();
  size_t k = 0;
  for (auto& [i, v] : dirs) {
    FW_CHECK(i == k && stps.count(k) && ros.count(k), "[optim] LBFGSParamState: history entry ", k,
             " is missing (entries must be numbered 0..n-1)");
    old_dirs_.push_back(v), old_stps_.push_back(stps[k]), ro_.push_back(ros[k]);
    k++;
  }
}

}  // namespace fw::optim
