// Multilingual routing: each frame goes through its own language's head, the loss is the batch
// mean of the per-frame cross entropies, and backward reaches only the heads of the languages
// present in the batch (plus the shared trunk).
#include <gtest/gtest.h>

#include <cmath>

#include "tests/models/helpers.h"

namespace fm = fw::models;
using models_test::error_of;
using models_test::shape;

namespace {

fm::AcousticCnn make_model() {
  fw::manual_seed(11);
  return fm::AcousticCnn(fm::ModelConfig().stages(models_test::tiny_stages()).languages({5, 7, 6}).num_fc(2).fc_dim(16));
}

// Sum of |grad| over the parameters of head `l` (-1 if no parameter has a gradient).
double head_grad(fm::AcousticCnn& m, int64_t l) {
  double total = -1;
  for (const auto& p : m->heads[size_t(l)]->parameters()) {
    if (!p.grad().defined()) continue;
    total = std::max(total, 0.0) + p.grad().abs().sum().item<double>();
  }
  return total;
}

}  // namespace

TEST(ModelsMultilingual, RoutedLogitsMatchPerLanguageForward) {
  auto m = make_model();
  fw::Tensor x = fw::randn({8, 3, 40, 16});
  fw::Tensor lang = fw::tensor({0, 2, 2, 0, 1, 2, 0, 2});
  auto r = m->forward(x, lang);
  ASSERT_EQ(r.logits.size(), 3u);
  EXPECT_TRUE(fw::equal(r.index[0], fw::tensor({0, 3, 6})));
  EXPECT_TRUE(fw::equal(r.index[1], fw::tensor({4})));
  EXPECT_TRUE(fw::equal(r.index[2], fw::tensor({1, 2, 5, 7})));
  EXPECT_EQ(shape(r.logits[0]), (std::vector<int64_t>{3, 5}));
  EXPECT_EQ(shape(r.logits[1]), (std::vector<int64_t>{1, 7}));
  EXPECT_EQ(shape(r.logits[2]), (std::vector<int64_t>{4, 6}));
  for (int64_t l = 0; l < 3; l++) {
    fw::Tensor ref = m->forward(x, l).index_select(0, r.index[size_t(l)]);
    EXPECT_TRUE(fw::allclose(r.logits[size_t(l)], ref, 1e-5, 1e-6)) << "language " << l;
  }
  // A language absent from the batch gets no logits.
  auto r2 = m->forward(x, fw::tensor({0, 0, 0, 0, 2, 2, 2, 2}));
  EXPECT_FALSE(r2.logits[1].defined());
  EXPECT_FALSE(r2.index[1].defined());
}

TEST(ModelsMultilingual, LossIsMeanOfPerFrameCrossEntropy) {
  auto m = make_model();
  fw::Tensor x = fw::randn({6, 3, 40, 16});
  fw::Tensor lang = fw::tensor({1, 0, 2, 1, 1, 0});
  fw::Tensor targets = fw::tensor({6, 4, 5, 0, 3, 1});
  double loss = m->multilingual_cross_entropy(x, lang, targets).item<double>();
  double ref = 0;
  auto lv = lang.accessor<int64_t, 1>();
  auto tv = targets.accessor<int64_t, 1>();
  for (int64_t i = 0; i < 6; i++) {
    fw::Tensor logp = m->forward(x.narrow(0, i, 1), lv[i]).log_softmax(1);
    ref -= logp[0][tv[i]].item<double>();
  }
  EXPECT_NEAR(loss, ref / 6, 1e-5);
}

TEST(ModelsMultilingual, GradientsReachOnlyHeadsInTheBatch) {
  auto m = make_model();
  fw::Tensor x = fw::randn({8, 3, 40, 16});
  fw::Tensor lang = fw::tensor({0, 2, 2, 0, 0, 2, 0, 2});  // languages 0 and 2 only
  fw::Tensor targets = fw::tensor({1, 5, 0, 4, 2, 3, 0, 1});
  m->zero_grad();
  m->multilingual_cross_entropy(x, lang, targets).backward();
  for (const auto& p : m->heads[1]->parameters()) EXPECT_FALSE(p.grad().defined());
  EXPECT_GT(head_grad(m, 0), 0.0);
  EXPECT_GT(head_grad(m, 2), 0.0);
  for (const auto& p : m->heads[0]->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_GT(p.grad().abs().sum().item<double>(), 0.0);
  }
  for (const auto& p : m->trunk->parameters()) {
    ASSERT_TRUE(p.grad().defined());
    EXPECT_GT(p.grad().abs().sum().item<double>(), 0.0);
  }

  // With zeroed (not cleared) gradients, a batch of language 1 alone leaves heads 0 and 2 at zero.
  m->zero_grad(/*set_to_none=*/false);
  m->multilingual_cross_entropy(x, fw::full({8}, 1, fw::kLong), fw::tensor({6, 5, 4, 3, 2, 1, 0, 6})).backward();
  EXPECT_EQ(head_grad(m, 0), 0.0);
  EXPECT_EQ(head_grad(m, 2), 0.0);
  EXPECT_GT(head_grad(m, 1), 0.0);
}

TEST(ModelsMultilingual, Errors) {
  auto m = make_model();
  fw::Tensor x = fw::randn({3, 3, 40, 16});
  std::string e = error_of([&] { m->forward(x, fw::tensor({0, 3, 1})); });
  EXPECT_NE(e.find("[models::AcousticCnn::forward] lang_ids[1] = 3 is out of range for 3 values"), std::string::npos)
      << e;
  e = error_of([&] { m->forward(x, fw::tensor({0, 1})); });
  EXPECT_NE(e.find("expected lang_ids as a 1-D integer tensor of 3 values"), std::string::npos) << e;
  e = error_of([&] { m->multilingual_cross_entropy(x, fw::tensor({0, 1, 2}), fw::tensor({4, 6, 6})); });
  EXPECT_NE(e.find("targets[2] = 6 but language 2 has 6 classes"), std::string::npos) << e;
  e = error_of([&] { m->multilingual_cross_entropy(x, fw::tensor({0, 1, 2}), fw::tensor({0.5, 1.0, 2.0})); });
  EXPECT_NE(e.find("expected targets as a 1-D integer tensor"), std::string::npos) << e;
}
