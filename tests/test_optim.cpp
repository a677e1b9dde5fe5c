// Optimizers and lr schedulers against PyTorch 1.13 (tests/fixtures/optim.txt from gen_optim.py):
// parameters after 20 steps on a fixed problem, scheduler lr (and momentum) sequences.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <sstream>

#include "fw/autograd.h"
#include "fw/optim.h"

namespace O = fw::optim;
using fw::Tensor;

namespace {

struct Record {
  std::string kind, name, type;
  std::vector<std::vector<double>> parts;  // the " : "-separated value lists
};

struct OptimFixture {
  std::map<std::string, Tensor> data;
  std::vector<Record> records;
};

std::vector<double> parse_doubles(const std::string& s) {
  std::istringstream in(s);
  std::vector<double> v;
  std::string w;
  while (in >> w) v.push_back(std::strtod(w.c_str(), nullptr));
  return v;
}

const OptimFixture& fixture() {
  static OptimFixture f = [] {
    OptimFixture r;
    std::ifstream in(std::string(FW_FIXTURE_DIR) + "/optim.txt");
    EXPECT_TRUE(in.good()) << "missing fixture optim.txt";
    std::string line;
    while (std::getline(in, line)) {
      std::istringstream ls(line);
      std::string kind;
      ls >> kind;
      if (kind == "t") {
        std::string key;
        int64_t nd = 0;
        ls >> key >> nd;
        std::vector<int64_t> sizes(static_cast<size_t>(nd));
        for (auto& s : sizes) ls >> s;
        std::string rest;
        std::getline(ls, rest);
        r.data[key] = fw::tensor(parse_doubles(rest), fw::kDouble).reshape(sizes);
        continue;
      }
      Record rec;
      rec.kind = kind;
      ls >> rec.name;
      if (kind != "mom") ls >> rec.type;
      std::string rest;
      std::getline(ls, rest);
      size_t pos = rest.find(" : ");
      while (pos != std::string::npos) {
        size_t next = rest.find(" : ", pos + 3);
        rec.parts.push_back(parse_doubles(rest.substr(pos + 3, next == std::string::npos ? next : next - pos - 3)));
        pos = next;
      }
      r.records.push_back(rec);
    }
    return r;
  }();
  return f;
}

Tensor problem_loss(const Tensor& W, const Tensor& b) {
  const auto& d = fixture().data;
  return (fw::tanh(d.at("X").matmul(W.t()) + b) - d.at("Y")).square().mean();
}

using Factory = std::function<std::unique_ptr<O::Optimizer>(Tensor W, Tensor b)>;

// Two groups: W with the defaults, b with 3x the lr (as gen_optim.py's groups=True).
template <class Opt, class Options>
std::unique_ptr<O::Optimizer> grouped(Tensor W, Tensor b, Options o) {
  Options ob = o;
  ob.lr(o.lr() * 3);
  std::vector<O::OptimizerParamGroup> groups{O::OptimizerParamGroup({W}),
                                              O::OptimizerParamGroup({b}, std::make_unique<Options>(ob))};
  return std::make_unique<Opt>(groups, o);
}

template <class Opt, class Options>
Factory plain(Options o) {
  return [o](Tensor W, Tensor b) { return std::make_unique<Opt>(std::vector<Tensor>{W, b}, o); };
}

std::map<std::string, Factory> factories() {
  using std::make_tuple;
  return {
      {"sgd", plain<O::SGD>(O::SGDOptions(0.1))},
      {"sgd_mom", plain<O::SGD>(O::SGDOptions(0.1).momentum(0.9))},
      {"sgd_mom_damp_wd", plain<O::SGD>(O::SGDOptions(0.1).momentum(0.8).dampening(0.3).weight_decay(0.01))},
      {"sgd_nesterov", plain<O::SGD>(O::SGDOptions(0.05).momentum(0.9).nesterov(true).weight_decay(0.02))},
      {"sgd_groups", [](Tensor W, Tensor b) { return grouped<O::SGD>(W, b, O::SGDOptions(0.05).momentum(0.5)); }},
      {"adam", plain<O::Adam>(O::AdamOptions(0.01))},
      {"adam_wd_betas", plain<O::Adam>(O::AdamOptions(0.02).betas(make_tuple(0.8, 0.99)).eps(1e-6).weight_decay(0.05))},
      {"adam_amsgrad", plain<O::Adam>(O::AdamOptions(0.05).amsgrad(true))},
      {"adamw", plain<O::AdamW>(O::AdamWOptions(0.01))},
      {"adamw_amsgrad", plain<O::AdamW>(O::AdamWOptions(0.03).weight_decay(0.1).amsgrad(true))},
      {"rmsprop", plain<O::RMSprop>(O::RMSpropOptions(0.01))},
      {"rmsprop_centered", plain<O::RMSprop>(O::RMSpropOptions(0.01).centered(true).alpha(0.9))},
      {"rmsprop_momentum", plain<O::RMSprop>(O::RMSpropOptions(0.005).momentum(0.9).weight_decay(0.01))},
      {"rmsprop_centered_momentum", plain<O::RMSprop>(O::RMSpropOptions(0.005).momentum(0.5).centered(true).eps(1e-4))},
      {"adagrad", plain<O::Adagrad>(O::AdagradOptions(0.1))},
      {"adagrad_decay", plain<O::Adagrad>(
                            O::AdagradOptions(0.1).lr_decay(0.05).weight_decay(0.01).initial_accumulator_value(0.1))},
      {"adagrad_groups", [](Tensor W, Tensor b) { return grouped<O::Adagrad>(W, b, O::AdagradOptions(0.05).eps(1e-6)); }},
  };
}

void train(O::Optimizer& opt, const Tensor& W, const Tensor& b, int steps) {
  for (int i = 0; i < steps; i++) {
    opt.zero_grad();
    problem_loss(W, b).backward();
    opt.step();
  }
}

void expect_values(const Tensor& t, const std::vector<double>& e, double tol, const std::string& ctx) {
  Tensor c = t.detach().to(fw::kDouble).contiguous().flatten();
  ASSERT_EQ(size_t(c.numel()), e.size()) << ctx;
  for (size_t i = 0; i < e.size(); i++) EXPECT_NEAR(c[int64_t(i)].item<double>(), e[i], tol) << ctx << " [" << i << "]";
}

}  // namespace

TEST(Optim, TwentyStepsMatchPyTorch) {
  auto fs = factories();
  int checked = 0;
  for (const auto& r : fixture().records) {
    if (r.kind != "opt") continue;
    ASSERT_TRUE(fs.count(r.name)) << "no factory for " << r.name;
    Tensor W = fixture().data.at("W0").clone().requires_grad_(true);
    Tensor b = fixture().data.at("b0").clone().requires_grad_(true);
    auto opt = fs[r.name](W, b);
    train(*opt, W, b, 20);
    expect_values(W, r.parts.at(0), 1e-10, r.name + " W");
    expect_values(b, r.parts.at(1), 1e-10, r.name + " b");
    checked++;
  }
  EXPECT_EQ(checked, int(fs.size()));
}

TEST(Optim, Float32AndNonContiguousParametersFollowTheFloat64Run) {
  const Record* rec = nullptr;
  for (const auto& r : fixture().records)
    if (r.name == "adam_amsgrad") rec = &r;
  ASSERT_TRUE(rec);
  Tensor W = fixture().data.at("W0").to(fw::kFloat).requires_grad_(true);
  Tensor b = fixture().data.at("b0").to(fw::kFloat).requires_grad_(true);
  O::Adam opt({W, b}, O::AdamOptions(0.05).amsgrad(true));
  for (int i = 0; i < 20; i++) {
    opt.zero_grad();
    problem_loss(W.to(fw::kDouble), b.to(fw::kDouble)).backward();
    opt.step();
  }
  expect_values(W, rec->parts[0], 1e-4, "float32 W");
  // A transposed (non-contiguous) parameter is updated through a copy and written back.
  Tensor base = fixture().data.at("W0").t().contiguous();
  Tensor Wnc = base.t().requires_grad_(true);
  ASSERT_FALSE(Wnc.is_contiguous());
  Tensor b2 = fixture().data.at("b0").clone().requires_grad_(true);
  O::Adam opt2({Wnc, b2}, O::AdamOptions(0.05).amsgrad(true));
  train(opt2, Wnc, b2, 20);
  expect_values(Wnc, rec->parts[0], 1e-10, "non-contiguous W");
}

TEST(Optim, ZeroGradAndParamGroups) {
  Tensor w = fw::ones({3}).requires_grad_(true);
  O::SGD opt({w}, O::SGDOptions(0.1));
  (w * 2).sum().backward();
  opt.zero_grad();
  ASSERT_TRUE(w.grad().defined());
  EXPECT_EQ(w.grad().abs().sum().item<float>(), 0.f);
  opt.zero_grad(true);
  EXPECT_FALSE(w.grad().defined());
  opt.step();  // no gradient: nothing happens
  EXPECT_TRUE(fw::equal(w.detach(), fw::ones({3})));
  Tensor v = fw::zeros({2}).requires_grad_(true);
  opt.add_param_group(O::OptimizerParamGroup({v}));
  EXPECT_EQ(opt.param_groups().size(), 2u);
  EXPECT_EQ(opt.param_groups()[1].options().get_lr(), 0.1);
  EXPECT_EQ(opt.size(), 2u);
  try {
    opt.add_param_group(O::OptimizerParamGroup({w}));
    ADD_FAILURE() << "duplicate parameter accepted";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("more than one parameter group"), std::string::npos);
  }
}

TEST(Optim, ClosureReturnsTheLoss) {
  Tensor W = fixture().data.at("W0").clone().requires_grad_(true);
  Tensor b = fixture().data.at("b0").clone().requires_grad_(true);
  O::SGD opt({W, b}, O::SGDOptions(0.1));
  Tensor loss = opt.step([&] {
    opt.zero_grad();
    Tensor l = problem_loss(W, b);
    l.backward();
    return l;
  });
  ASSERT_TRUE(loss.defined());
  EXPECT_GT(loss.item<double>(), 0);
}

TEST(Optim, StateDictRoundTripContinuesIdentically) {
  auto run = [](bool reload) {
    Tensor W = fixture().data.at("W0").clone().requires_grad_(true);
    Tensor b = fixture().data.at("b0").clone().requires_grad_(true);
    auto opt = std::make_unique<O::Adam>(std::vector<Tensor>{W, b}, O::AdamOptions(0.02).amsgrad(true));
    train(*opt, W, b, 5);
    if (reload) {
      auto sd = opt->state_dict();
      bool has_step = false;
      for (auto& [k, t] : sd) has_step |= k == "state.0.step" && t.item<int64_t>() == 5;
      EXPECT_TRUE(has_step);
      opt = std::make_unique<O::Adam>(std::vector<Tensor>{W, b}, O::AdamOptions(0.5));
      opt->load_state_dict(sd);
      EXPECT_EQ(opt->param_groups()[0].options().get_lr(), 0.02);
      static_cast<O::AdamOptions&>(opt->param_groups()[0].options()).amsgrad(true);
    }
    train(*opt, W, b, 5);
    return W.detach().clone();
  };
  EXPECT_TRUE(fw::allclose(run(true), run(false), 0, 0));
}

namespace {

// Builds the scheduler of a fixture record over `opt`; plateau schedulers come back separately.
std::unique_ptr<O::LRScheduler> make_scheduler(const std::string& name, O::Optimizer& opt) {
  if (name == "step") return std::make_unique<O::StepLR>(opt, 4, 0.5);
  if (name == "multistep") return std::make_unique<O::MultiStepLR>(opt, std::vector<int64_t>{3, 7, 7, 20}, 0.3);
  if (name == "exponential") return std::make_unique<O::ExponentialLR>(opt, 0.9);
  if (name == "cosine") return std::make_unique<O::CosineAnnealingLR>(opt, 10, 0.001);
  if (name == "cosine_nomin") return std::make_unique<O::CosineAnnealingLR>(opt, 7);
  if (name == "linear") return std::make_unique<O::LinearLR>(opt, 0.25, 1.0, 8);
  if (name == "linear_down") return std::make_unique<O::LinearLR>(opt, 1.0, 0.1, 5);
  if (name == "onecycle") return std::make_unique<O::OneCycleLR>(opt, O::OneCycleLROptions(1.0, 30));
  if (name == "onecycle_linear_3phase")
    return std::make_unique<O::OneCycleLR>(opt, O::OneCycleLROptions(0.5, 30).pct_start(0.4).anneal_strategy("linear")
                                                    .three_phase(true).div_factor(10).final_div_factor(100));
  if (name == "onecycle_adam")
    return std::make_unique<O::OneCycleLR>(opt, O::OneCycleLROptions(0.01, 30).base_momentum(0.8).max_momentum(0.9));
  return nullptr;
}

double momentum(O::Optimizer& opt) {
  auto& o = opt.param_groups()[0].options();
  if (auto* s = dynamic_cast<O::SGDOptions*>(&o)) return s->momentum();
  return std::get<0>(dynamic_cast<O::AdamOptions&>(o).betas());
}

}  // namespace

TEST(Optim, SchedulersMatchPyTorchLrSequences) {
  const std::vector<double> metrics = {1.0, 0.9, 0.95, 0.95, 0.95, 0.8, 0.85, 0.85, 0.85, 0.85, 0.85, 0.7, 0.7, 0.7, 0.7,
                                       0.7, 0.7, 0.7, 0.69999, 0.7, 0.7, 0.7, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6};
  std::map<std::string, std::vector<double>> moms;
  for (const auto& r : fixture().records)
    if (r.kind == "mom") moms[r.name] = r.parts.at(0);
  int checked = 0;
  for (const auto& r : fixture().records) {
    if (r.kind != "sched") continue;
    Tensor p = fw::zeros({2}, fw::kDouble).requires_grad_(true);
    bool onecycle = r.name.rfind("onecycle", 0) == 0;
    std::unique_ptr<O::Optimizer> opt;
    if (r.name == "onecycle_adam") opt = std::make_unique<O::Adam>(std::vector<Tensor>{p}, O::AdamOptions(0.001));
    else opt = std::make_unique<O::SGD>(std::vector<Tensor>{p}, O::SGDOptions(0.1).momentum(onecycle ? 0.9 : 0));
    std::vector<double> lrs, ms;
    auto record = [&] {
      lrs.push_back(opt->param_groups()[0].options().get_lr());
      ms.push_back(momentum(*opt));
    };
    if (r.type == "ReduceLROnPlateau") {
      auto o = r.name == "plateau" ? O::ReduceLROnPlateauOptions().patience(2).factor(0.5)
                                   : O::ReduceLROnPlateauOptions().mode("max").patience(1).factor(0.3).threshold(0.01)
                                         .threshold_mode("abs").cooldown(2).min_lr(0.002);
      O::ReduceLROnPlateau s(*opt, o);
      record();
      for (double m : metrics) s.step(r.name == "plateau" ? m : -m), record();
    } else {
      auto s = make_scheduler(r.name, *opt);
      ASSERT_TRUE(s) << "no scheduler for " << r.name;
      record();
      for (int i = 0; i < 30; i++) s->step(), record();
      EXPECT_EQ(s->get_last_lr().at(0), lrs.back());
    }
    std::vector<double> want = r.parts.at(0);
    if (r.name == "step") {  // libtorch's StepLR decays one step() later than Python's
      want.insert(want.begin(), want.front());
      want.pop_back();
    }
    expect_values(fw::tensor(lrs, fw::kDouble), want, 1e-12, r.name + " lr");
    if (moms.count(r.name)) expect_values(fw::tensor(ms, fw::kDouble), moms[r.name], 1e-12, r.name + " momentum");
    checked++;
  }
  EXPECT_EQ(checked, 12);
}
