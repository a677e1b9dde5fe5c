// Losses of fw::nn::functional: values and gradients against PyTorch 1.13 (tests/fixtures/loss.txt,
// written by gen_loss.py), gradcheck in float64, and ctc_loss against a brute-force sum over paths.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "fw/autograd.h"
#include "fw/nn/functional.h"
#include "tests/fixture.h"

namespace F = fw::nn::functional;
using fw::Tensor;
using fw::autograd::variable_list;

namespace {

struct LossCase {
  std::string loss, name;
  std::map<std::string, std::string> opts;
  std::map<std::string, Tensor> t;
  std::string opt(const std::string& k) const { return opts.at(k); }
  Tensor get(const std::string& k) const { return t.count(k) ? t.at(k) : Tensor(); }
};

std::vector<LossCase> load_cases() {
  std::ifstream f(std::string(FW_FIXTURE_DIR) + "/loss.txt");
  EXPECT_TRUE(f.good()) << "missing fixture loss.txt";
  std::vector<LossCase> cases;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag == "case") {
      cases.emplace_back();
      in >> cases.back().loss >> cases.back().name;
    } else if (tag == "a") {
      std::string k, v;
      in >> k >> v;
      cases.back().opts[k] = v;
    } else if (tag == "t") {
      std::string k;
      in >> k;
      cases.back().t[k] = fwtest::read_record_tensor(in);
    }
  }
  return cases;
}

F::loss_reduction_t reduction(const std::string& r) {
  if (r == "none") return fw::kNone;
  if (r == "sum") return fw::kSum;
  return fw::kMean;
}

// Evaluates the case's loss on (x, y) (the other tensors come from the case).
Tensor run_loss(const LossCase& c, const Tensor& x, const Tensor& y) {
  const std::string& l = c.loss;
  auto red = [&] { return reduction(c.opt("reduction")); };
  if (l == "cross_entropy")
    return F::cross_entropy(x, y, F::CrossEntropyFuncOptions().weight(c.get("w")).reduction(red())
                                      .ignore_index(std::stoll(c.opt("ignore_index")))
                                      .label_smoothing(std::stod(c.opt("label_smoothing"))));
  if (l == "nll_loss")
    return F::nll_loss(x, y, F::NLLLossFuncOptions().weight(c.get("w")).reduction(red())
                                 .ignore_index(std::stoll(c.opt("ignore_index"))));
  if (l == "mse_loss") return F::mse_loss(x, y, red());
  if (l == "l1_loss") return F::l1_loss(x, y, red());
  if (l == "smooth_l1_loss")
    return F::smooth_l1_loss(x, y, F::SmoothL1LossFuncOptions().reduction(red()).beta(std::stod(c.opt("beta"))));
  if (l == "huber_loss")
    return F::huber_loss(x, y, F::HuberLossFuncOptions().reduction(red()).delta(std::stod(c.opt("delta"))));
  if (l == "binary_cross_entropy" || l == "binary_cross_entropy_value_only")
    return F::binary_cross_entropy(x, y, F::BinaryCrossEntropyFuncOptions().weight(c.get("w")).reduction(red()));
  if (l == "binary_cross_entropy_with_logits")
    return F::binary_cross_entropy_with_logits(
        x, y, F::BinaryCrossEntropyWithLogitsFuncOptions().weight(c.get("w")).pos_weight(c.get("pw")).reduction(red()));
  if (l == "kl_div") {
    std::string r = c.opt("reduction");
    F::KLDivFuncOptions o = r == "batchmean" ? F::KLDivFuncOptions(fw::kBatchMean)
                            : r == "none"    ? F::KLDivFuncOptions(fw::kNone)
                            : r == "sum"     ? F::KLDivFuncOptions(fw::kSum)
                                             : F::KLDivFuncOptions(fw::kMean);
    return F::kl_div(x, y, o.log_target(c.opt("log_target") == "1"));
  }
  if (l == "ctc_loss" || l == "ctc_loss_value_only")  // x holds logits (see gen_loss.py)
    return F::ctc_loss(x - x.logsumexp({-1}, true), y, c.get("il"), c.get("tl"), F::CTCLossFuncOptions().reduction(red())
                                                          .blank(std::stoll(c.opt("blank")))
                                                          .zero_infinity(c.opt("zero_infinity") == "1"));
  ADD_FAILURE() << "unknown loss " << l;
  return {};
}

// float32 losses keep their float32 tolerance; float64 cases are compared tightly.
void expect_near(const Tensor& a, const Tensor& e, const std::string& ctx) {
  ASSERT_TRUE(a.defined()) << ctx << ": no result";
  ASSERT_EQ(a.dtype(), e.dtype()) << ctx;
  ASSERT_TRUE(a.sizes().equals(e.sizes())) << ctx << ": shape " << a.sizes() << " vs " << e.sizes();
  double tol = e.dtype() == fw::kFloat ? 1e-4 : 1e-9;
  EXPECT_TRUE(fw::allclose(a, e, tol, tol, true)) << ctx << "\nfw:\n" << a << "\ntorch:\n" << e;
}

}  // namespace

TEST(Loss, ValuesAndGradientsMatchPyTorch) {
  auto cases = load_cases();
  ASSERT_GT(cases.size(), 100u);
  for (const auto& c : cases) {
    std::string ctx = c.loss + "/" + c.name;
    bool with_grad = c.t.count("gx") > 0;
    Tensor x = c.get("x").clone().requires_grad_(with_grad);
    Tensor y = c.get("y").clone();
    if (c.t.count("gy")) y.requires_grad_(true);
    Tensor out;
    try {
      out = run_loss(c, x, y);
    } catch (const std::exception& e) {
      ADD_FAILURE() << ctx << ": " << e.what();
      continue;
    }
    expect_near(out, c.get("out"), ctx + " value");
    if (!with_grad) continue;
    out.backward(c.get("gout"));
    expect_near(x.grad(), c.get("gx"), ctx + " grad input");
    if (c.t.count("gy")) expect_near(y.grad(), c.get("gy"), ctx + " grad target");
  }
}

TEST(Loss, GradcheckFloat64) {
  fw::manual_seed(7);
  auto x = [](std::vector<int64_t> s) { return fw::randn(s, fw::kDouble).requires_grad_(true); };
  Tensor logits = x({4, 3}), y = fw::tensor({0L, 2L, -100L, 1L}), w = fw::rand({3}, fw::kDouble) + 0.5;
  Tensor probs = fw::softmax(fw::randn({4, 3}, fw::kDouble), 1);
  Tensor a = x({3, 4}), b = x({3, 4});
  Tensor p = (fw::rand({3, 4}, fw::kDouble) * 0.8 + 0.1).requires_grad_(true);
  Tensor t01 = fw::rand({3, 4}, fw::kDouble);
  using Fn = std::function<variable_list(const variable_list&)>;
  std::vector<std::tuple<std::string, Fn, variable_list>> cases = {
      {"cross_entropy", [&](const variable_list& v) {
         return variable_list{F::cross_entropy(v[0], y, F::CrossEntropyFuncOptions().weight(w).label_smoothing(0.1))};
       }, {logits}},
      {"cross_entropy probs", [&](const variable_list& v) {
         return variable_list{F::cross_entropy(v[0], v[1], F::CrossEntropyFuncOptions().weight(w))};
       }, {logits, probs.clone().requires_grad_(true)}},
      {"nll_loss", [&](const variable_list& v) {
         return variable_list{F::nll_loss(v[0], y, F::NLLLossFuncOptions().weight(w).reduction(fw::kSum))};
       }, {logits}},
      {"mse_loss", [](const variable_list& v) { return variable_list{F::mse_loss(v[0], v[1])}; }, {a, b}},
      {"l1_loss", [](const variable_list& v) { return variable_list{F::l1_loss(v[0], v[1], fw::kNone)}; }, {a, b}},
      {"smooth_l1_loss", [](const variable_list& v) {
         return variable_list{F::smooth_l1_loss(v[0], v[1], F::SmoothL1LossFuncOptions().beta(0.7))};
       }, {a, b}},
      {"huber_loss", [](const variable_list& v) {
         return variable_list{F::huber_loss(v[0], v[1], F::HuberLossFuncOptions().delta(0.8))};
       }, {a, b}},
      {"binary_cross_entropy", [&](const variable_list& v) {
         return variable_list{F::binary_cross_entropy(v[0], t01, F::BinaryCrossEntropyFuncOptions().weight(w.narrow(0, 0, 1)))};
       }, {p}},
      {"binary_cross_entropy_with_logits", [&](const variable_list& v) {
         return variable_list{F::binary_cross_entropy_with_logits(
             v[0], t01, F::BinaryCrossEntropyWithLogitsFuncOptions().pos_weight(fw::full({4}, 2.0, fw::kDouble)))};
       }, {a}},
      {"kl_div", [&](const variable_list& v) {
         return variable_list{F::kl_div(v[0], v[1], F::KLDivFuncOptions(fw::kBatchMean).log_target(true))};
       }, {a, b}},
  };
  for (auto& [name, fn, in] : cases) {
    try {
      EXPECT_TRUE(fw::autograd::gradcheck(fn, in)) << name;
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  }
}

TEST(Loss, CtcGradcheck) {
  fw::manual_seed(11);
  Tensor lp = fw::log_softmax(fw::randn({6, 2, 4}, fw::kDouble), 2).detach().requires_grad_(true);
  Tensor tg = fw::tensor({{1L, 1L, 3L}, {2L, 0L, 0L}});
  Tensor il = fw::tensor({6L, 5L}), tl = fw::tensor({3L, 1L});
  for (auto red : {F::loss_reduction_t(fw::kMean), F::loss_reduction_t(fw::kNone)}) {
    auto fn = [&](const variable_list& v) {
      return variable_list{F::ctc_loss(v[0], tg, il, tl, F::CTCLossFuncOptions().reduction(red))};
    };
    EXPECT_TRUE(fw::autograd::gradcheck(fn, {lp}));
  }
}

namespace {

// -log sum over all length-T label paths whose collapse (merge repeats, drop blanks) is the target.
double ctc_brute_force(const Tensor& lp, const std::vector<int64_t>& target, int64_t blank) {
  int64_t T = lp.size(0), C = lp.size(1);
  auto a = lp.accessor<double, 2>();
  double total = 0;
  std::vector<int64_t> path(static_cast<size_t>(T), 0);
  int64_t count = 1;
  for (int64_t t = 0; t < T; t++) count *= C;
  for (int64_t k = 0; k < count; k++) {
    int64_t r = k;
    for (int64_t t = 0; t < T; t++, r /= C) path[size_t(t)] = r % C;
    std::vector<int64_t> col;
    for (int64_t t = 0; t < T; t++)
      if (path[size_t(t)] != blank && (t == 0 || path[size_t(t)] != path[size_t(t - 1)])) col.push_back(path[size_t(t)]);
    if (col != target) continue;
    double lsum = 0;
    for (int64_t t = 0; t < T; t++) lsum += a[t][path[size_t(t)]];
    total += std::exp(lsum);
  }
  return -std::log(total);
}

}  // namespace

TEST(Loss, CtcMatchesBruteForceEnumeration) {
  fw::manual_seed(5);
  struct C { int64_t T; std::vector<int64_t> target; int64_t blank; };
  for (const C& c : std::vector<C>{{4, {1, 2}, 0}, {5, {1, 1}, 0}, {5, {2, 2, 1}, 0}, {4, {}, 0}, {5, {0, 1}, 2},
                                   {3, {1, 1}, 0}, {6, {1, 2, 1}, 0}}) {
    Tensor lp = fw::log_softmax(fw::randn({c.T, 1, 3}, fw::kDouble), 2);
    Tensor tg = c.target.empty() ? fw::zeros({1, 1}, fw::kLong) : fw::tensor(c.target).view({1, -1});
    Tensor out = F::ctc_loss(lp, tg, fw::tensor({c.T}), fw::tensor({int64_t(c.target.size())}),
                             F::CTCLossFuncOptions().blank(c.blank).reduction(fw::kSum));
    double expected = ctc_brute_force(lp.select(1, 0).contiguous(), c.target, c.blank);
    if (std::isinf(expected)) {
      EXPECT_TRUE(std::isinf(out.item<double>())) << "T=" << c.T;
    } else {
      EXPECT_NEAR(out.item<double>(), expected, 1e-10) << "T=" << c.T << " target size " << c.target.size();
    }
  }
}

TEST(Loss, ErrorsNameTheProblem) {
  Tensor x = fw::randn({3, 4});
  auto throws_with = [](const std::function<void()>& f, const std::string& frag) {
    try {
      f();
      ADD_FAILURE() << "expected an error containing: " << frag;
    } catch (const fw::Error& e) {
      EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
    }
  };
  throws_with([&] { F::cross_entropy(x, fw::tensor({0L, 4L, 1L})); }, "Target 4 is out of bounds");
  throws_with([&] { F::nll_loss(x, fw::tensor({0L, 1L})); }, "batch_size");
  throws_with([&] { F::cross_entropy(x, fw::tensor({0L, 1L, 1L}), F::CrossEntropyFuncOptions().weight(fw::ones({3}))); },
              "weight tensor");
  throws_with([&] { F::binary_cross_entropy(x, fw::rand({3, 4})); }, "between 0 and 1");
  throws_with([&] { F::binary_cross_entropy(fw::rand({3, 4}), fw::rand({4})); }, "target size");
  throws_with([&] { F::smooth_l1_loss(x, x, F::SmoothL1LossFuncOptions().beta(-1)); }, "negative values for beta");
  throws_with([&] { F::ctc_loss(fw::randn({3, 1, 4}), fw::tensor({{1L}}), fw::tensor({5L}), fw::tensor({1L})); },
              "input_lengths");
  throws_with([&] { F::ctc_loss(fw::randn({3, 1, 4}), fw::tensor({{7L}}), fw::tensor({3L}), fw::tensor({1L})); },
              "out of bounds");
}
