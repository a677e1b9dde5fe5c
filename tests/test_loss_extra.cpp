// Margin, embedding and likelihood losses (nn/loss_extra.cpp), their modules and the distance
// modules: values and input gradients against PyTorch 1.13 (tests/fixtures/loss_extra.txt, written
// by gen_loss_extra.py), gradcheck/gradgradcheck in float64, errors, pretty_print and fw:: forms.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "fw/autograd.h"
#include "fw/losses.h"
#include "fw/nn.h"
#include "tests/fixture.h"

namespace F = fw::nn::functional;
using fw::Tensor;
using fw::autograd::variable_list;

namespace {

struct Case {
  std::string loss, name;
  std::map<std::string, std::string> opts;
  std::map<std::string, Tensor> t;
  std::string opt(const std::string& k) const {
    auto it = opts.find(k);
    if (it == opts.end()) throw std::runtime_error("case " + loss + "/" + name + " has no option " + k);
    return it->second;
  }
  double num(const std::string& k) const { return std::stod(opt(k)); }
  bool flag(const std::string& k) const { return opt(k) == "1"; }
  Tensor get(const std::string& k) const { return t.count(k) ? t.at(k) : Tensor(); }
};

std::vector<Case> load_cases() {
  std::ifstream f(std::string(FW_FIXTURE_DIR) + "/loss_extra.txt");
  EXPECT_TRUE(f.good()) << "missing fixture loss_extra.txt";
  std::vector<Case> cases;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string tag, k;
    in >> tag;
    if (tag == "case") {
      cases.emplace_back();
      in >> cases.back().loss >> cases.back().name;
    } else if (tag == "a") {
      in >> k;
      in >> cases.back().opts[k];
    } else if (tag == "t") {
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

Tensor cosine_distance(const Tensor& a, const Tensor& b) { return 1.0 - F::cosine_similarity(a, b); }

// The case's loss on the inputs in `in` (keys x, x2, x3, y, v); options and weights from the case.
Tensor run(const Case& c, std::map<std::string, Tensor>& in) {
  const std::string& l = c.loss;
  auto red = reduction(c.opt("reduction"));
  Tensor x = in["x"], y = in["y"], w = c.get("w");
  if (l == "margin_ranking_loss")
    return F::margin_ranking_loss(x, in["x2"], y, F::MarginRankingLossFuncOptions().margin(c.num("margin")).reduction(red));
  if (l == "hinge_embedding_loss")
    return F::hinge_embedding_loss(x, y, F::HingeEmbeddingLossFuncOptions().margin(c.num("margin")).reduction(red));
  if (l == "soft_margin_loss") return F::soft_margin_loss(x, y, red);
  if (l == "multilabel_margin_loss") return F::multilabel_margin_loss(x, y, red);
  if (l == "multilabel_soft_margin_loss")
    return F::multilabel_soft_margin_loss(x, y, F::MultilabelSoftMarginLossFuncOptions().weight(w).reduction(red));
  if (l == "multi_margin_loss")
    return F::multi_margin_loss(x, y, F::MultiMarginLossFuncOptions().p(std::stoll(c.opt("p"))).margin(c.num("margin"))
                                          .weight(w).reduction(red));
  if (l == "cosine_embedding_loss")
    return F::cosine_embedding_loss(x, in["x2"], y,
                                    F::CosineEmbeddingLossFuncOptions().margin(c.num("margin")).reduction(red));
  if (l == "triplet_margin_loss")
    return F::triplet_margin_loss(x, in["x2"], in["x3"], F::TripletMarginLossFuncOptions().margin(c.num("margin"))
                                                             .p(c.num("p")).eps(c.num("eps")).swap(c.flag("swap"))
                                                             .reduction(red));
  if (l == "triplet_margin_with_distance_loss") {
    auto o = F::TripletMarginWithDistanceLossFuncOptions().margin(c.num("margin")).swap(c.flag("swap")).reduction(red);
    if (c.opt("dist") == "cosine") o.distance_function(cosine_distance);
    return F::triplet_margin_with_distance_loss(x, in["x2"], in["x3"], o);
  }
  if (l == "poisson_nll_loss")
    return F::poisson_nll_loss(x, y, F::PoissonNLLLossFuncOptions().log_input(c.flag("log_input")).full(c.flag("full"))
                                         .eps(c.num("eps")).reduction(red));
  if (l == "gaussian_nll_loss")
    return F::gaussian_nll_loss(x, y, in["v"],
                                F::GaussianNLLLossFuncOptions().full(c.flag("full")).eps(c.num("eps")).reduction(red));
  throw std::runtime_error("unknown loss " + l);
}

void expect_near(const Tensor& a, const Tensor& e, const std::string& ctx) {
  ASSERT_TRUE(a.defined()) << ctx << ": no result";
  ASSERT_EQ(a.dtype(), e.dtype()) << ctx;
  ASSERT_TRUE(a.sizes().equals(e.sizes())) << ctx << ": shape " << a.sizes() << " vs " << e.sizes();
  double tol = e.dtype() == fw::kFloat ? 1e-5 : 1e-10;
  EXPECT_TRUE(fw::allclose(a, e, tol, tol, true)) << ctx << "\nfw:\n" << a << "\ntorch:\n" << e;
}

void throws_with(const std::function<void()>& f, const std::string& frag) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing: " << frag;
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
  }
}

template <class M>
std::string printed(const M& m) {
  std::ostringstream s;
  m->pretty_print(s);
  return s.str();
}

}  // namespace

TEST(LossExtra, ValuesAndGradientsMatchPyTorch) {
  auto cases = load_cases();
  ASSERT_GT(cases.size(), 100u);
  std::map<std::string, int> per_loss;
  for (const auto& c : cases) {
    std::string ctx = c.loss + "/" + c.name;
    per_loss[c.loss]++;
    std::map<std::string, Tensor> in;
    for (const char* k : {"x", "x2", "x3", "y", "v"}) {
      Tensor t = c.get(k);
      if (!t.defined()) continue;
      in[k] = t.clone();
      if (c.t.count(std::string("g") + k)) in[k].requires_grad_(true);
    }
    Tensor out;
    try {
      out = run(c, in);
    } catch (const std::exception& e) {
      ADD_FAILURE() << ctx << ": " << e.what();
      continue;
    }
    expect_near(out, c.get("out"), ctx + " value");
    out.backward(c.get("gout"));
    for (auto& [k, t] : in)
      if (c.t.count("g" + k)) expect_near(t.grad(), c.get("g" + k), ctx + " grad " + k);
  }
  EXPECT_EQ(per_loss.size(), 11u);
}

TEST(LossExtra, GradcheckAndGradgradcheckFloat64) {
  fw::manual_seed(3);
  auto var = [](std::vector<int64_t> s) { return fw::randn(s, fw::kDouble).requires_grad_(true); };
  Tensor sgn = fw::tensor({1.0, -1.0, -1.0, 1.0});
  Tensor cls = fw::tensor({2L, 0L, 1L, 2L});
  Tensor ml_target = fw::tensor({{2L, -1L, 0L}, {0L, 1L, -1L}, {1L, 2L, 0L}, {-1L, 0L, 0L}});
  Tensor w = fw::rand({3}, fw::kDouble) + 0.5;
  using Fn = std::function<variable_list(const variable_list&)>;
  std::vector<std::tuple<std::string, Fn, variable_list>> cases = {
      {"margin_ranking_loss", [&](const variable_list& v) {
         return variable_list{F::margin_ranking_loss(v[0], v[1], sgn, F::MarginRankingLossFuncOptions().margin(0.3))};
       }, {var({4}), var({4})}},
      {"soft_margin_loss", [&](const variable_list& v) {
         return variable_list{F::soft_margin_loss(v[0], sgn.view({4, 1}).expand({4, 3}), fw::kSum)};
       }, {var({4, 3})}},
      {"multilabel_margin_loss", [&](const variable_list& v) {
         return variable_list{F::multilabel_margin_loss(v[0], ml_target, fw::kNone)};
       }, {var({4, 3})}},
      {"multi_margin_loss p2 weighted", [&](const variable_list& v) {
         return variable_list{F::multi_margin_loss(v[0], cls, F::MultiMarginLossFuncOptions().p(2).weight(w))};
       }, {var({4, 3})}},
      {"cosine_embedding_loss", [&](const variable_list& v) {
         return variable_list{F::cosine_embedding_loss(v[0], v[1], sgn, F::CosineEmbeddingLossFuncOptions().margin(-0.5))};
       }, {var({4, 3}), var({4, 3})}},
      {"triplet_margin_loss swap", [&](const variable_list& v) {
         return variable_list{F::triplet_margin_loss(v[0], v[1], v[2], F::TripletMarginLossFuncOptions().swap(true).margin(3))};
       }, {var({4, 3}), var({4, 3}), var({4, 3})}},
      {"poisson_nll_loss full", [&](const variable_list& v) {
         Tensor y = fw::tensor({0.0, 1.0, 2.0, 5.0});
         return variable_list{F::poisson_nll_loss(v[0], y, F::PoissonNLLLossFuncOptions().full(true).reduction(fw::kSum))};
       }, {var({4})}},
      {"gaussian_nll_loss", [&](const variable_list& v) {
         return variable_list{F::gaussian_nll_loss(v[0], v[1], v[2].exp(), F::GaussianNLLLossFuncOptions().full(true))};
       }, {var({4, 3}), var({4, 3}), var({4, 1})}},
      {"multilabel_soft_margin_loss", [&](const variable_list& v) {
         Tensor y = fw::tensor({{1.0, 0.0, 1.0}, {0.0, 0.0, 1.0}, {1.0, 1.0, 0.0}, {0.0, 1.0, 0.0}});
         return variable_list{F::multilabel_soft_margin_loss(v[0], y, F::MultilabelSoftMarginLossFuncOptions().weight(w))};
       }, {var({4, 3})}},
  };
  for (auto& [name, fn, in] : cases) {
    try {
      EXPECT_TRUE(fw::autograd::gradcheck(fn, in)) << name;
      EXPECT_TRUE(fw::autograd::gradgradcheck(fn, in)) << name;
    } catch (const std::exception& e) {
      ADD_FAILURE() << name << ": " << e.what();
    }
  }
}

TEST(LossExtra, ModulesMatchFunctionalsAndPrintAsLibtorch) {
  fw::manual_seed(1);
  Tensor a = fw::randn({4, 3}), b = fw::randn({4, 3}), c = fw::randn({4, 3});
  Tensor sgn = fw::tensor({1.f, -1.f, 1.f, -1.f});
  Tensor cls = fw::tensor({2L, 0L, 1L, 2L});
  auto same = [](const Tensor& x, const Tensor& y) { EXPECT_TRUE(fw::allclose(x, y)) << x << "\n" << y; };

  fw::nn::MarginRankingLoss mr(fw::nn::MarginRankingLossOptions().margin(0.5));
  same(mr(a.select(1, 0), b.select(1, 0), sgn), F::margin_ranking_loss(a.select(1, 0), b.select(1, 0), sgn,
                                                                       F::MarginRankingLossFuncOptions().margin(0.5)));
  EXPECT_EQ(printed(mr), "fw::nn::MarginRankingLoss()");

  fw::nn::HingeEmbeddingLoss he;
  EXPECT_EQ(he->options.margin(), 1.0);
  EXPECT_EQ(printed(he), "fw::nn::HingeEmbeddingLoss(margin=1)");
  EXPECT_EQ(printed(fw::nn::HingeEmbeddingLoss(fw::nn::HingeEmbeddingLossOptions().margin(0.5))),
            "fw::nn::HingeEmbeddingLoss(margin=0.5)");

  fw::nn::SoftMarginLoss sm(fw::kSum);
  same(sm(a, b.sign()), F::soft_margin_loss(a, b.sign(), fw::kSum));
  EXPECT_EQ(printed(sm), "fw::nn::SoftMarginLoss()");
  EXPECT_EQ(printed(fw::nn::MultiLabelMarginLoss()), "fw::nn::MultiLabelMarginLoss()");
  EXPECT_EQ(printed(fw::nn::MultiLabelSoftMarginLoss()), "fw::nn::MultiLabelSoftMarginLoss()");
  EXPECT_EQ(printed(fw::nn::PoissonNLLLoss()), "fw::nn::PoissonNLLLoss()");
  EXPECT_EQ(printed(fw::nn::GaussianNLLLoss()), "fw::nn::GaussianNLLLoss()");
  EXPECT_EQ(printed(fw::nn::CosineEmbeddingLoss(fw::nn::CosineEmbeddingLossOptions().margin(0.25))),
            "fw::nn::CosineEmbeddingLoss(margin=0.25)");

  fw::nn::MultiMarginLoss mm(fw::nn::MultiMarginLossOptions().p(2).weight(fw::ones({3})));
  same(mm(a, cls), F::multi_margin_loss(a, cls, F::MultiMarginLossFuncOptions().p(2).weight(fw::ones({3}))));
  EXPECT_EQ(mm->named_buffers().size(), 1u);
  EXPECT_EQ(printed(fw::nn::MultiMarginLoss()),
            "fw::nn::MultiMarginLoss(p=1, margin=1, weight=[ Tensor (undefined) ], reduction=kMean)");
  EXPECT_EQ(printed(fw::nn::MultiMarginLoss(fw::nn::MultiMarginLossOptions().p(2).margin(0.5).reduction(fw::kSum))),
            "fw::nn::MultiMarginLoss(p=2, margin=0.5, weight=[ Tensor (undefined) ], reduction=kSum)");
  throws_with([] { fw::nn::MultiMarginLoss(fw::nn::MultiMarginLossOptions().p(3)); }, "only p == 1 and p == 2");

  fw::nn::TripletMarginLoss tm;
  EXPECT_EQ(printed(tm), "fw::nn::TripletMarginLoss(margin=1, p=2, eps=1e-06, swap=false)");
  same(tm(a, b, c), F::triplet_margin_loss(a, b, c));
  fw::nn::TripletMarginWithDistanceLoss td(
      fw::nn::TripletMarginWithDistanceLossOptions().distance_function(cosine_distance).swap(true).margin(0.5));
  EXPECT_EQ(printed(td), "fw::nn::TripletMarginWithDistanceLoss(margin=0.5, swap=true)");
  Tensor d_neg = fw::minimum(cosine_distance(a, c), cosine_distance(b, c));
  same(td(a, b, c), (cosine_distance(a, b) - d_neg + 0.5).clamp_min(0).mean());
  // Without a distance function: pairwise_distance, as TripletMarginLoss's defaults.
  same(fw::nn::TripletMarginWithDistanceLoss()(a, b, c), tm(a, b, c));
  throws_with([] { fw::nn::TripletMarginWithDistanceLoss(fw::nn::TripletMarginWithDistanceLossOptions().margin(0)); },
              "expected margin to be greater than 0, got 0");

  fw::nn::PoissonNLLLoss pn(fw::nn::PoissonNLLLossOptions().log_input(false).full(true));
  EXPECT_TRUE(pn->options.full());
  EXPECT_EQ(fw::nn::PoissonNLLLossOptions().eps(), 1e-8);
  EXPECT_EQ(fw::nn::GaussianNLLLossOptions().eps(), 1e-6);
  fw::nn::GaussianNLLLoss gn;
  same(gn(a, b, c.exp()), F::gaussian_nll_loss(a, b, c.exp()));

  fw::nn::CosineSimilarity cs;
  EXPECT_EQ(printed(cs), "fw::nn::CosineSimilarity(dim=1, eps=1e-08)");
  same(cs(a, b), F::cosine_similarity(a, b));
  fw::nn::CosineSimilarity cs0(fw::nn::CosineSimilarityOptions().dim(0));
  EXPECT_EQ(cs0(a, b).sizes(), fw::IntArrayRef({3}));
  fw::nn::PairwiseDistance pd(fw::nn::PairwiseDistanceOptions().p(1).keepdim(true));
  EXPECT_EQ(printed(pd), "fw::nn::PairwiseDistance(p=1, eps=1e-06, keepdim=true)");
  EXPECT_EQ(printed(fw::nn::PairwiseDistance()), "fw::nn::PairwiseDistance(p=2, eps=1e-06, keepdim=false)");
  same(pd(a, b), (a - b + 1e-6).abs().sum({1}, true));
  // operator<< on the holder prints the same string.
  std::ostringstream os;
  os << *pd;
  EXPECT_EQ(os.str(), "fw::nn::PairwiseDistance(p=1, eps=1e-06, keepdim=true)");
}

TEST(LossExtra, TopLevelFormsAgreeWithFunctionals) {
  fw::manual_seed(2);
  Tensor a = fw::randn({5, 4}, fw::kDouble), b = fw::randn({5, 4}, fw::kDouble), c = fw::randn({5, 4}, fw::kDouble);
  Tensor sgn = fw::tensor({1.0, -1.0, 1.0, -1.0, -1.0});
  Tensor cls = fw::tensor({3L, 0L, 1L, 2L, 1L});
  auto same = [](const Tensor& x, const Tensor& y) { EXPECT_TRUE(fw::allclose(x, y, 1e-12, 1e-12)) << x << "\n" << y; };
  same(fw::margin_ranking_loss(a.select(1, 0), b.select(1, 0), sgn, 0.2, fw::Reduction::Sum),
       F::margin_ranking_loss(a.select(1, 0), b.select(1, 0), sgn,
                              F::MarginRankingLossFuncOptions().margin(0.2).reduction(fw::kSum)));
  same(fw::hinge_embedding_loss(a, b.sign(), 0.7, fw::Reduction::None),
       F::hinge_embedding_loss(a, b.sign(), F::HingeEmbeddingLossFuncOptions().margin(0.7).reduction(fw::kNone)));
  same(fw::soft_margin_loss(a, b.sign()), F::soft_margin_loss(a, b.sign()));
  Tensor ml = fw::tensor({{1L, -1L, 0L, 0L}, {3L, 2L, 1L, 0L}, {0L, 0L, -1L, 0L}, {2L, -1L, 5L, 9L}, {-1L, 0L, 0L, 0L}});
  same(fw::multilabel_margin_loss(a, ml, fw::Reduction::None), F::multilabel_margin_loss(a, ml, fw::kNone));
  same(fw::multi_margin_loss(a, cls, 2, 0.5, fw::ones({4}, fw::kDouble) * 2),
       F::multi_margin_loss(a, cls, F::MultiMarginLossFuncOptions().p(2).margin(0.5)) * 2);
  same(fw::cosine_embedding_loss(a, b, sgn, 0.1), F::cosine_embedding_loss(a, b, sgn,
                                                                          F::CosineEmbeddingLossFuncOptions().margin(0.1)));
  same(fw::triplet_margin_loss(a, b, c, 2.0, 1.0, 1e-6, true),
       F::triplet_margin_loss(a, b, c, F::TripletMarginLossFuncOptions().margin(2).p(1).swap(true)));
  same(fw::poisson_nll_loss(a.abs(), b.abs().round(), false, true, 1e-8, fw::Reduction::Mean),
       F::poisson_nll_loss(a.abs(), b.abs().round(), F::PoissonNLLLossFuncOptions().log_input(false).full(true)));
  throws_with([&] { fw::multi_margin_loss(a, cls, 3); }, "only p == 1 and p == 2");
}

TEST(LossExtra, BadInputsNameTheOpAndShapes) {
  Tensor x = fw::randn({3, 4}), cls = fw::tensor({0L, 1L, 2L});
  throws_with([&] { F::margin_ranking_loss(x, x, fw::ones({3})); },
              "[margin_ranking_loss] All input tensors should have same dimension but got sizes: input1: [3, 4], "
              "input2: [3, 4], target: [3]");
  throws_with([&] { F::multi_margin_loss(x, fw::tensor({0L, 1L})); }, "[multi_margin_loss] inconsistent target size");
  throws_with([&] { F::multi_margin_loss(x, fw::tensor({0L, 4L, 1L})); }, "[multi_margin_loss] target out of range");
  throws_with([&] { F::multi_margin_loss(x, cls, F::MultiMarginLossFuncOptions().weight(fw::ones({3}))); },
              "inconsistent weight size, expected 4 but got [3]");
  throws_with([&] { F::multi_margin_loss(x, cls, F::MultiMarginLossFuncOptions().p(3)); }, "only p == 1 and p == 2");
  throws_with([&] { F::multi_margin_loss(fw::randn({2, 3, 4}), cls); }, "Expected non-empty vector or matrix");
  throws_with([&] { F::multilabel_margin_loss(x, fw::zeros({3, 3}, fw::kLong)); },
              "[multilabel_margin_loss] inconsistent target size: [3, 3] for input of size: [3, 4]");
  throws_with([&] { F::multilabel_margin_loss(x, fw::full({3, 4}, 4L, fw::kLong)); }, "target index is out of range");
  // Entries after the first -1 are ignored, even out of range ones (as ATen).
  EXPECT_NO_THROW(F::multilabel_margin_loss(x, fw::tensor({{0L, -1L, 9L, 9L}, {1L, -1L, 7L, 0L}, {-1L, 5L, 5L, 5L}})));
  throws_with([&] { F::cosine_embedding_loss(x, x, fw::ones({3, 1})); }, "0D or 1D target tensor expected");
  throws_with([&] { F::cosine_embedding_loss(x, x.select(0, 0), fw::ones({3})); },
              "1D target tensor expects 2D input tensors, but found inputs with sizes [3, 4] and [4]");
  throws_with([&] { F::triplet_margin_loss(x, x, x.select(0, 0)); },
              "[triplet_margin_loss] The anchor, positive, and negative tensors are expected to have the same number of "
              "dimensions, but got: anchor 2D, positive 2D, and negative 1D inputs");
  throws_with([&] { F::triplet_margin_with_distance_loss(x, x.select(0, 0), x); }, "[triplet_margin_with_distance_loss]");
  throws_with([&] { F::gaussian_nll_loss(x, x, fw::ones({3, 2})); },
              "[gaussian_nll_loss] var is of incorrect size: expected [3, 4], or that with the last dim 1 or dropped, "
              "but got [3, 2]");
  throws_with([&] { F::gaussian_nll_loss(x, x, fw::ones({4})); }, "var is of incorrect size");
  throws_with([&] { F::gaussian_nll_loss(x, x, -fw::ones({3, 1})); }, "[gaussian_nll_loss] var has negative entry");
  throws_with([&] { F::hinge_embedding_loss(Tensor(), x); }, "[hinge_embedding_loss] inputs must be defined");
}

TEST(LossExtra, ReductionsAreConsistent) {
  // For every loss: mean = sum / numel(none) and sum = none.sum(), on one set of inputs.
  fw::manual_seed(4);
  Tensor a = fw::randn({6, 5}, fw::kDouble), b = fw::randn({6, 5}, fw::kDouble), c = fw::randn({6, 5}, fw::kDouble);
  Tensor sgn = fw::randn({6}, fw::kDouble).sign(), cls = fw::tensor({4L, 0L, 1L, 2L, 3L, 3L});
  std::vector<std::pair<std::string, std::function<Tensor(F::loss_reduction_t)>>> fns = {
      {"hinge", [&](auto r) { return F::hinge_embedding_loss(a, b.sign(), F::HingeEmbeddingLossFuncOptions().reduction(r)); }},
      {"multi_margin", [&](auto r) { return F::multi_margin_loss(a, cls, F::MultiMarginLossFuncOptions().reduction(r)); }},
      {"cosine_embedding", [&](auto r) {
         return F::cosine_embedding_loss(a, b, sgn, F::CosineEmbeddingLossFuncOptions().reduction(r)); }},
      {"triplet", [&](auto r) { return F::triplet_margin_loss(a, b, c, F::TripletMarginLossFuncOptions().reduction(r)); }},
      {"poisson", [&](auto r) { return F::poisson_nll_loss(a, b.abs(), F::PoissonNLLLossFuncOptions().reduction(r)); }},
      {"gaussian", [&](auto r) { return F::gaussian_nll_loss(a, b, c.abs(), F::GaussianNLLLossFuncOptions().reduction(r)); }},
  };
  for (auto& [name, fn] : fns) {
    Tensor none = fn(fw::kNone);
    EXPECT_GT(none.dim(), 0) << name;
    EXPECT_NEAR(fn(fw::kSum).item<double>(), none.sum().item<double>(), 1e-10) << name;
    EXPECT_NEAR(fn(fw::kMean).item<double>(), none.sum().item<double>() / double(none.numel()), 1e-10) << name;
  }
}
