// fw::optim::LBFGS against torch.optim.LBFGS (PyTorch 1.13; tests/fixtures/lbfgs.txt from
// gen_lbfgs.py): returned losses, evaluation and iteration counts, and the parameters after
// each step(), with and without the strong-Wolfe line search; state_dict round trips; errors.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "fw/autograd.h"
#include "fw/optim.h"
#include "tests/fixture.h"

namespace O = fw::optim;
using fw::Tensor;

namespace {

struct Step {
  double loss;
  int64_t func_evals, n_iter;
  std::vector<double> params;
};
struct Case {
  std::string name, problem, dtype;
  std::map<std::string, std::string> opts;
  std::vector<Step> steps;
};
struct LbfgsFixture {
  std::map<std::string, Tensor> data;
  std::vector<Case> cases;
};

const LbfgsFixture& fixture() {
  static LbfgsFixture f = [] {
    LbfgsFixture r;
    std::ifstream in(std::string(FW_FIXTURE_DIR) + "/lbfgs.txt");
    EXPECT_TRUE(in.good()) << "missing fixture lbfgs.txt";
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string kind;
      ls >> kind;
      if (kind == "t") {
        std::string key;
        ls >> key;
        r.data[key] = fwtest::read_record_tensor(ls);
      } else if (kind == "case") {
        Case c;
        std::string opts;
        ls >> c.name >> c.problem >> c.dtype >> opts;
        std::istringstream os(opts);
        std::string kv;
        while (std::getline(os, kv, ','))
          if (auto eq = kv.find('='); eq != std::string::npos) c.opts[kv.substr(0, eq)] = kv.substr(eq + 1);
        r.cases.push_back(c);
      } else if (kind == "step") {
        Step s;
        std::string colon;
        ls >> s.loss >> s.func_evals >> s.n_iter >> colon;
        std::string w;
        while (ls >> w) s.params.push_back(std::strtod(w.c_str(), nullptr));
        r.cases.back().steps.push_back(s);
      }
    }
    return r;
  }();
  return f;
}

// One of gen_lbfgs.py's problems: its parameters (fresh leaves) and loss.
struct Problem {
  std::vector<Tensor> params;
  std::function<Tensor()> loss;
};

Problem make_problem(const std::string& name, fw::ScalarType dt) {
  const auto& d = fixture().data;
  auto leaf = [&](const Tensor& t) { return t.to(dt).clone().requires_grad_(true); };
  Problem p;
  if (name == "rosen") {
    Tensor x = leaf(fw::tensor({-1.5, 2.0}));
    p.params = {x};
    p.loss = [x] {
      Tensor a = x.select(0, 0), b = x.select(0, 1);
      return (1 - a).square() + 100 * (b - a.square()).square();
    };
  } else if (name == "mlp") {
    for (const char* k : {"W1", "b1", "W2", "b2", "U"}) p.params.push_back(leaf(d.at(k)));
    Tensor X = d.at("X").to(dt), Y = d.at("Y").to(dt);
    auto ps = p.params;
    p.loss = [=] {
      Tensor h = fw::tanh(X.matmul(ps[0].t()) + ps[1]);
      return (h.matmul(ps[2].t()) + ps[3] - Y).square().mean();  // U unused: no gradient
    };
  } else {
    Tensor x = fw::zeros({5}, dt).requires_grad_(true);
    Tensor A = d.at("A").to(dt), B = d.at("B").to(dt);
    p.params = {x};
    p.loss = [=] { return 0.5 * x.matmul(A).matmul(x) - B.matmul(x); };
  }
  return p;
}

O::LBFGSOptions options_of(const Case& c) {
  O::LBFGSOptions o;
  for (const auto& [k, v] : c.opts) {
    if (k == "lr") o.lr(std::stod(v));
    else if (k == "max_iter") o.max_iter(std::stoll(v));
    else if (k == "max_eval") o.max_eval(std::stoll(v));
    else if (k == "history_size") o.history_size(std::stoll(v));
    else if (k == "tolerance_grad") o.tolerance_grad(std::stod(v));
    else if (k == "tolerance_change") o.tolerance_change(std::stod(v));
    else if (k == "line_search_fn") o.line_search_fn(v);
    else ADD_FAILURE() << "unknown option " << k;
  }
  return o;
}

Tensor flat_params(const std::vector<Tensor>& ps) {
  std::vector<Tensor> v;
  for (const auto& p : ps) v.push_back(p.detach().to(fw::kDouble).reshape({-1}));
  return fw::cat(v, 0);
}

O::LBFGSParamState& state_of(O::LBFGS& opt, const Tensor& p0) {
  return static_cast<O::LBFGSParamState&>(*opt.state().at(fw::guts::to_string(p0.unsafeGetTensorImpl())));
}

}  // namespace

TEST(LBFGS, MatchesPyTorchOnEveryFixtureCase) {
  ASSERT_EQ(fixture().cases.size(), 13u);
  for (const auto& c : fixture().cases) {
    SCOPED_TRACE(c.name);
    bool f32 = c.dtype == "f32";
    auto prob = make_problem(c.problem, f32 ? fw::kFloat : fw::kDouble);
    O::LBFGS opt(prob.params, options_of(c));
    auto closure = [&] {
      opt.zero_grad();
      Tensor l = prob.loss();
      l.backward();
      return l;
    };
    // float64 follows PyTorch to rounding; float32 keeps its scalars in double where PyTorch
    // rounds some to float, so allow float32-sized drift there.
    double rtol = f32 ? 2e-4 : 1e-7, atol = f32 ? 2e-5 : 1e-9;
    for (size_t k = 0; k < c.steps.size(); k++) {
      SCOPED_TRACE("step " + std::to_string(k));
      const auto& want = c.steps[k];
      Tensor loss = opt.step(closure);
      EXPECT_NEAR(loss.item<double>(), want.loss, atol + rtol * std::abs(want.loss));
      auto& s = state_of(opt, prob.params[0]);
      EXPECT_EQ(s.func_evals(), want.func_evals);
      EXPECT_EQ(s.n_iter(), want.n_iter);
      FW_EXPECT_CLOSE(flat_params(prob.params), fw::tensor(want.params, fw::kDouble), rtol, atol);
    }
  }
}

TEST(LBFGS, StateDictRoundTripContinuesExactly) {
  for (const char* ls : {"", "strong_wolfe"}) {
    SCOPED_TRACE(ls);
    auto opts = O::LBFGSOptions(0.5).max_iter(4).history_size(3);
    if (*ls) opts.line_search_fn(std::string(ls));
    auto a = make_problem("mlp", fw::kDouble);
    O::LBFGS opt_a(a.params, opts);
    auto closure_for = [](O::LBFGS& opt, Problem& p) {
      return [&opt, &p] {
        opt.zero_grad();
        Tensor l = p.loss();
        l.backward();
        return l;
      };
    };
    opt_a.step(closure_for(opt_a, a));
    opt_a.step(closure_for(opt_a, a));
    auto sd = opt_a.state_dict();
    // The history is in the state dict: three pairs after 8 iterations with history_size 3.
    int64_t dirs = 0;
    for (const auto& [k, v] : sd) dirs += k.rfind("state.0.old_dirs.", 0) == 0;
    EXPECT_EQ(dirs, 3);

    auto b = make_problem("mlp", fw::kDouble);
    {
      fw::NoGradGuard ng;
      for (size_t i = 0; i < b.params.size(); i++) b.params[i].copy_(a.params[i]);
    }
    O::LBFGS opt_b(b.params, opts);
    opt_b.load_state_dict(sd);
    Tensor la = opt_a.step(closure_for(opt_a, a));
    Tensor lb = opt_b.step(closure_for(opt_b, b));
    EXPECT_EQ(la.item<double>(), lb.item<double>());
    EXPECT_TRUE(fw::equal(flat_params(a.params), flat_params(b.params)));
    EXPECT_EQ(state_of(opt_a, a.params[0]).func_evals(), state_of(opt_b, b.params[0]).func_evals());
  }
}

TEST(LBFGS, StopsAtOnceWhenTheGradientIsBelowTolerance) {
  Tensor x = fw::zeros({3}, fw::kDouble).requires_grad_(true);
  O::LBFGS opt({x}, O::LBFGSOptions().line_search_fn("strong_wolfe"));
  int calls = 0;
  Tensor loss = opt.step([&] {
    calls++;
    opt.zero_grad();
    Tensor l = (x * x).sum();  // minimum at the start: zero gradient
    l.backward();
    return l;
  });
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(loss.item<double>(), 0.0);
  EXPECT_TRUE(fw::equal(x.detach(), fw::zeros({3}, fw::kDouble)));
}

TEST(LBFGS, ClosureRunsWithGradEnabledInsideNoGrad) {
  Tensor x = fw::tensor({1.0, -2.0}).requires_grad_(true);
  O::LBFGS opt({x}, O::LBFGSOptions(1).max_iter(3));
  fw::NoGradGuard ng;  // the caller's mode must not leak into the closure
  opt.step([&] {
    EXPECT_TRUE(fw::GradMode::is_enabled());
    opt.zero_grad();
    Tensor l = (x - 3).square().sum();
    l.backward();
    return l;
  });
  EXPECT_LT((x.detach() - 3).abs().max().item<double>(), 1.0);
}

TEST(LBFGS, RejectsBadOptionsAndMissingClosure) {
  Tensor x = fw::zeros({2}).requires_grad_(true), y = fw::zeros({2}).requires_grad_(true);
  auto throws_with = [](auto&& f, const std::string& needle) {
    try {
      f();
      ADD_FAILURE() << "no error; expected one mentioning " << needle;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  throws_with([&] { O::LBFGS({x}, O::LBFGSOptions().line_search_fn("backtracking")); }, "strong_wolfe");
  throws_with([&] { O::LBFGS({x}, O::LBFGSOptions().history_size(0)); }, "history_size");
  throws_with([&] { O::LBFGS({x}, O::LBFGSOptions(-1)); }, "learning rate");
  throws_with(
      [&] {
        O::LBFGS({O::OptimizerParamGroup({x}), O::OptimizerParamGroup({y})}, O::LBFGSOptions());
      },
      "parameter groups");
  O::LBFGS opt({x});
  throws_with([&] { opt.step(nullptr); }, "closure");
  throws_with([&] { opt.step([&] { return fw::zeros({2}); }); }, "one-element");
  O::LBFGS grouped({x});
  grouped.add_param_group(O::OptimizerParamGroup({y}));
  throws_with([&] { grouped.step([&] { return (x.sum() + y.sum()); }); }, "parameter groups");
}

TEST(LBFGS, LoadStateDictRejectsUnknownOrBrokenHistory) {
  Tensor x = fw::zeros({2}, fw::kDouble).requires_grad_(true);
  O::LBFGS opt({x});
  auto v = fw::zeros({2}, fw::kDouble);
  EXPECT_THROW(opt.load_state_dict({{"state.0.bogus", v}}), std::exception);
  EXPECT_THROW(opt.load_state_dict({{"state.0.old_dirs.0", v}}), std::exception);  // no old_stps/ro
  EXPECT_THROW(opt.load_state_dict({{"state.0.old_dirs.1", v}, {"state.0.old_stps.1", v}, {"state.0.ro.1", v}}),
               std::exception);  // numbering must start at 0
  EXPECT_THROW(opt.load_state_dict({{"state.0.t", v}}), std::exception);  // not a scalar
  EXPECT_THROW(opt.load_state_dict({{"state.0.old_dirs.x", v}}), std::exception);
}

TEST(LBFGS, MaxEvalIsFilledInAtConstruction) {
  Tensor x = fw::zeros({2}, fw::kDouble).requires_grad_(true);
  O::LBFGS opt({x}, O::LBFGSOptions().max_iter(8));
  auto& d = static_cast<O::LBFGSOptions&>(opt.defaults());
  auto& g = static_cast<O::LBFGSOptions&>(opt.param_groups()[0].options());
  ASSERT_TRUE(d.max_eval().has_value());
  EXPECT_EQ(*d.max_eval(), 10);
  EXPECT_EQ(g.max_eval().value_or(-1), 10);
  O::LBFGS opt2({x}, O::LBFGSOptions().max_iter(8).max_eval(3));
  EXPECT_EQ(static_cast<O::LBFGSOptions&>(opt2.defaults()).max_eval().value_or(-1), 3);
}

TEST(LBFGS, HistorySizeLoweredBetweenStepsTrimsTheHistory) {
  auto p = make_problem("mlp", fw::kDouble);
  O::LBFGS opt(p.params, O::LBFGSOptions(0.5).max_iter(6).history_size(5));
  auto closure = [&] {
    opt.zero_grad();
    Tensor l = p.loss();
    l.backward();
    return l;
  };
  opt.step(closure);
  auto& s = state_of(opt, p.params[0]);
  EXPECT_EQ(s.old_dirs().size(), 5u);
  static_cast<O::LBFGSOptions&>(opt.param_groups()[0].options()).history_size(2);
  Tensor before = flat_params(p.params);
  opt.step(closure);
  EXPECT_LE(s.old_dirs().size(), 2u);
  EXPECT_EQ(s.old_dirs().size(), s.ro().size());
  EXPECT_TRUE(fw::isfinite(flat_params(p.params)).all().item<bool>());
  EXPECT_FALSE(fw::equal(before, flat_params(p.params)));
}

TEST(LBFGS, LoadedStateMustFitTheParameters) {
  // A state dict of the 5-parameter MLP does not fit a 2-element parameter.
  auto p = make_problem("mlp", fw::kDouble);
  O::LBFGS opt(p.params, O::LBFGSOptions(0.5).max_iter(3));
  auto closure_for = [](O::LBFGS& o, std::function<Tensor()> f) {
    return [&o, f] {
      o.zero_grad();
      Tensor l = f();
      l.backward();
      return l;
    };
  };
  opt.step(closure_for(opt, p.loss));
  Tensor x = fw::tensor({1.0, 2.0}).requires_grad_(true);
  O::LBFGS other({x}, O::LBFGSOptions(0.5).max_iter(3));
  other.load_state_dict(opt.state_dict());
  try {
    other.step(closure_for(other, [x] { return (x * x).sum(); }));
    ADD_FAILURE() << "no error for a state dict of another model";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("another model"), std::string::npos) << e.what();
  }
  // A state without its direction is incomplete.
  O::LBFGS third({x}, O::LBFGSOptions(0.5));
  third.load_state_dict({{"state.0.n_iter", fw::scalar_tensor(int64_t(4), fw::kLong)}});
  EXPECT_THROW(third.step(closure_for(third, [x] { return (x * x).sum(); })), std::exception);
}

TEST(LBFGS, FloatStateContinuesOnDoubleParameters) {
  auto a = make_problem("mlp", fw::kFloat);
  O::LBFGS opt_a(a.params, O::LBFGSOptions(0.5).max_iter(4).history_size(3));
  auto closure = [](O::LBFGS& o, Problem& p) {
    return [&o, &p] {
      o.zero_grad();
      Tensor l = p.loss();
      l.backward();
      return l;
    };
  };
  opt_a.step(closure(opt_a, a));
  auto b = make_problem("mlp", fw::kDouble);
  {
    fw::NoGradGuard ng;
    for (size_t i = 0; i < b.params.size(); i++) b.params[i].copy_(a.params[i]);
  }
  O::LBFGS opt_b(b.params, O::LBFGSOptions(0.5).max_iter(4).history_size(3));
  opt_b.load_state_dict(opt_a.state_dict());
  opt_a.step(closure(opt_a, a));
  opt_b.step(closure(opt_b, b));
  EXPECT_EQ(state_of(opt_b, b.params[0]).d().dtype(), fw::kDouble);
  FW_EXPECT_CLOSE(flat_params(b.params), flat_params(a.params), 1e-3, 1e-4);
}
