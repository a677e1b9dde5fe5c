// fw::utils::ProgressBar and fw::nn::utils (clip_grad_norm_/clip_grad_value_/vector conversion;
// expected values from torch 1.13).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "fw/fw.h"

using fw::Tensor;
namespace U = fw::nn::utils;

namespace {

std::vector<Tensor> make_params() {
  Tensor a = fw::tensor(std::vector<float>{1, -2, 3, 0.5, 4, -1}).view({2, 3}).requires_grad_();
  Tensor b = fw::tensor(std::vector<float>{-3, 2.5, 0.25}).requires_grad_();
  a.set_grad(a.detach().clone());
  b.set_grad(b.detach().clone());
  return {a, b};
}

void expect_grads(const std::vector<Tensor>& ps, std::vector<float> expected) {
  Tensor g = fw::cat({ps[0].grad().reshape({-1}), ps[1].grad().reshape({-1})});
  ASSERT_EQ(g.numel(), int64_t(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i)
    EXPECT_NEAR(g[i].item<float>(), expected[i], 1e-6) << i;
}

}  // namespace

TEST(ProgressBar, SilentOnNonTtyThenOneFinalLine) {
  std::ostringstream os;
  {
    fw::utils::ProgressBar bar(10, "train", &os);
    EXPECT_FALSE(bar.is_tty());
    for (int i = 0; i < 10; ++i) bar.update();
    bar.set_postfix({{"loss", 0.123}, {"acc", 0.5}});
    EXPECT_EQ(os.str(), "");
    EXPECT_EQ(bar.count(), 10);
    EXPECT_GE(bar.rate(), 0.0);
  }
  std::string s = os.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1);
  EXPECT_EQ(s.find('\r'), std::string::npos);
  EXPECT_NE(s.find("train: 100%|####################| 10/10 ["), std::string::npos) << s;
  EXPECT_NE(s.find("it/s, loss=0.123, acc=0.5]"), std::string::npos) << s;
}

TEST(ProgressBar, TtyRedrawsWithCarriageReturn) {
  std::ostringstream os;
  fw::utils::ProgressBar bar(4, "", &os, true);
  bar.update(2);
  bar.update(2);  // reaching the total always redraws
  std::string s = os.str();
  EXPECT_EQ(s.rfind('\r', 0), 0u);
  EXPECT_NE(s.find("100%|"), std::string::npos) << s;
  EXPECT_EQ(s.find('\n'), std::string::npos);
  bar.close();
  bar.close();
  s = os.str();
  EXPECT_EQ(std::count(s.begin(), s.end(), '\n'), 1);
  EXPECT_EQ(s.back(), '\n');
  fw::utils::ProgressBar half(10, "x", &os, false);
  half.update(5);
  EXPECT_NE(half.render().find(" 50%|##########          | 5/10 [00:00<"), std::string::npos)
      << half.render();
  EXPECT_TRUE(half.eta().has_value());
  fw::utils::ProgressBar unknown(0, "", &os, false);
  unknown.update(3);
  EXPECT_EQ(unknown.render().rfind("3 [00:00, ", 0), 0u) << unknown.render();
  EXPECT_EQ(fw::utils::format_duration(3725), "1:02:05");
  EXPECT_EQ(fw::utils::format_duration(65), "01:05");
}

TEST(NnUtils, ClipGradNormMatchesPyTorch) {
  struct Case {
    double p, total;
    std::vector<float> grads;
  };
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Case> cases = {
      {2.0, 6.823671817779541, {0.29309728741645813, -0.5861945748329163, 0.8792918920516968,
                                0.14654864370822906, 1.1723891496658325, -0.29309728741645813,
                                -0.8792918920516968, 0.7327432036399841, 0.07327432185411453}},
      {1.0, 17.25, {0.11594201624393463, -0.23188403248786926, 0.3478260636329651,
                    0.057971008121967316, 0.4637680649757385, -0.11594201624393463,
                    -0.3478260636329651, 0.289855033159256, 0.028985504060983658}},
      {3.0, 5.238638401031494, {0.3817785382270813, -0.7635570764541626, 1.1453356742858887,
                                0.19088926911354065, 1.5271141529083252, -0.3817785382270813,
                                -1.1453356742858887, 0.9544463157653809, 0.09544463455677032}},
      {inf, 4.0, {0.49999988079071045, -0.9999997615814209, 1.4999996423721313,
                  0.24999994039535522, 1.9999995231628418, -0.49999988079071045,
                  -1.4999996423721313, 1.249999761581421, 0.12499997019767761}},
  };
  for (const auto& c : cases) {
    auto ps = make_params();
    EXPECT_NEAR(U::clip_grad_norm_(ps, 2.0, c.p), c.total, 1e-5) << c.p;
    expect_grads(ps, c.grads);
  }
  // Below max_norm: unchanged.
  auto ps = make_params();
  EXPECT_NEAR(U::clip_grad_norm_(ps[0], 100.0), 5.590169906616211, 1e-5);
  expect_grads(ps, {1, -2, 3, 0.5, 4, -1, -3, 2.5, 0.25});
  // No gradients at all.
  Tensor none = fw::zeros({3}).requires_grad_();
  EXPECT_EQ(U::clip_grad_norm_({none}, 1.0), 0.0);
}

TEST(NnUtils, ClipGradNormNonFinite) {
  auto ps = make_params();
  ps[1].set_grad(fw::tensor(std::vector<float>{1, std::nanf(""), 0}));
  EXPECT_THROW(
      {
        try {
          U::clip_grad_norm_(ps, 1.0, 2.0, true);
        } catch (const fw::Error& e) {
          EXPECT_NE(std::string(e.what()).find("is non-finite"), std::string::npos);
          throw;
        }
      },
      fw::Error);
  EXPECT_TRUE(std::isnan(U::clip_grad_norm_(ps, 1.0)));
}

TEST(NnUtils, ClipGradValueAndVectorConversion) {
  auto ps = make_params();
  U::clip_grad_value_(ps, 1.5);
  expect_grads(ps, {1, -1.5, 1.5, 0.5, 1.5, -1, -1.5, 1.5, 0.25});
  Tensor v = U::parameters_to_vector(ps);
  ASSERT_EQ(v.sizes().vec(), (std::vector<int64_t>{9}));
  EXPECT_EQ(v[4].item<float>(), 4.f);
  EXPECT_EQ(v[6].item<float>(), -3.f);
  Tensor w = fw::arange(9).to(fw::kFloat);
  U::vector_to_parameters(w, ps);
  EXPECT_EQ(ps[0].sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ps[0][1][2].item<float>(), 5.f);
  EXPECT_EQ(ps[1][0].item<float>(), 6.f);
  EXPECT_TRUE(fw::equal(U::parameters_to_vector(ps).detach(), w));
  EXPECT_THROW(U::vector_to_parameters(fw::zeros({8}), ps), fw::Error);
  EXPECT_THROW(U::vector_to_parameters(fw::zeros({3, 3}), ps), fw::Error);
}
