// fw::audio::functional::rnnt_loss against torchaudio 0.13 (tests/fixtures/audio/gen_rnnt.py ->
// rnnt.safetensors): costs, reduced losses and logit gradients (ragged batches, blank positions,
// gradient clamping, peaky and wide-vocabulary logits), plus float64 gradchecks, a brute-force
// check of the alignment sum and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "fw/audio.h"
#include "tests/audio/audio_fixture.h"
#include "tests/expect_error.h"

namespace {

namespace F = fw::audio::functional;
using fw::Tensor;

const fwtest::audio::FixtureFile& fix() {
  static const fwtest::audio::FixtureFile f("rnnt");
  return f;
}

}  // namespace

TEST(AudioRnnt, MatchesTorchaudio) {
  auto cases = fix().cases("");
  ASSERT_EQ(cases.size(), 8u);
  for (const auto& c : cases) {
    const Tensor& logits = fix().out(c, "logits");
    const Tensor& targets = fix().out(c, "targets");
    const Tensor& tl = fix().out(c, "logit_lengths");
    const Tensor& ul = fix().out(c, "target_lengths");
    const int64_t blank = c.i("blank");
    const double clamp = c.num("clamp");
    const std::string reduction = c.str("reduction");
    Tensor costs = F::rnnt_loss(logits, targets, tl, ul, blank, clamp, "none");
    FW_AUDIO_EXPECT_CLOSE(c, costs, fix().out(c, "costs"), 1e-5, 1e-6);
    Tensor x = logits.clone().requires_grad_();
    Tensor loss = F::rnnt_loss(x, targets, tl, ul, blank, clamp, reduction);
    FW_AUDIO_EXPECT_CLOSE(c, loss.detach().reshape({-1}), fix().out(c, "loss"), 1e-5, 1e-6);
    Tensor weighted =
        reduction == "none" ? (loss * fw::arange(1, loss.size(0) + 1, fw::kFloat)).sum() : loss.sum();
    weighted.backward();
    FW_AUDIO_EXPECT_CLOSE(c, x.grad(), fix().out(c, "grad"), 1e-4, 1e-5);
    // int64 targets and lengths (libtorch programs often hold them as Long) give the same costs.
    Tensor costs64 = F::rnnt_loss(logits, targets.to(fw::kLong), tl.to(fw::kLong), ul.to(fw::kLong), blank, clamp, "none");
    EXPECT_TRUE(fw::allclose(costs64, costs)) << c.name;
  }
}

// With T = 2 frames and U = 1 label there are two alignments: (label at t=0, blank, blank) and
// (blank at t=0, label at t=1, blank).
TEST(AudioRnnt, SumsOverAlignments) {
  Tensor logits = (fw::arange(2 * 2 * 3, fw::kDouble) * 0.7).sin().reshape({1, 2, 2, 3});
  Tensor lp = logits.log_softmax(-1);
  const int64_t y = 1, blank = 2;
  auto p = [&](int64_t t, int64_t u, int64_t k) { return lp[0][t][u][k].item<double>(); };
  const double a1 = p(0, 0, y) + p(0, 1, blank) + p(1, 1, blank);
  const double a2 = p(0, 0, blank) + p(1, 0, y) + p(1, 1, blank);
  const double expected = -std::log(std::exp(a1) + std::exp(a2));
  Tensor cost = F::rnnt_loss(logits, fw::tensor({{int32_t(y)}}), fw::tensor({int32_t(2)}), fw::tensor({int32_t(1)}),
                             -1, -1, "none");
  EXPECT_NEAR(cost.item<double>(), expected, 1e-12);
}

TEST(AudioRnnt, GradcheckFloat64AndModule) {
  Tensor logits = (fw::arange(2 * 4 * 3 * 5, fw::kDouble) * 0.37).sin().mul(2).reshape({2, 4, 3, 5}).requires_grad_();
  Tensor targets = fw::tensor({{1, 3}, {2, 0}}, fw::kInt);
  Tensor tl = fw::tensor({4, 3}, fw::kInt), ul = fw::tensor({2, 1}, fw::kInt);
  for (const char* red : {"mean", "sum", "none"})
    EXPECT_TRUE(fw::autograd::gradcheck(
        [&](const fw::autograd::variable_list& in) {
          return fw::autograd::variable_list{F::rnnt_loss(in[0], targets, tl, ul, 0, -1, red)};
        },
        {logits}))
        << red;
  fw::audio::transforms::RNNTLoss m(0, -1, "sum");
  EXPECT_TRUE(fw::allclose(m(logits, targets, tl, ul), F::rnnt_loss(logits, targets, tl, ul, 0, -1, "sum")));
}

TEST(AudioRnnt, BadArgumentsAreNamed) {
  Tensor logits = fw::zeros({2, 4, 3, 5});
  Tensor targets = fw::tensor({{1, 3}, {2, 0}}, fw::kInt);
  Tensor tl = fw::tensor({4, 3}, fw::kInt), ul = fw::tensor({2, 1}, fw::kInt);
  EXPECT_ERROR(F::rnnt_loss(logits, targets, tl, ul, -1, -1, "avg"), "reduction should be one of");
  EXPECT_ERROR(F::rnnt_loss(logits.to(fw::kLong), targets, tl, ul), "logits must be float32 or float64, got");
  EXPECT_ERROR(F::rnnt_loss(logits, targets.to(fw::kFloat), tl, ul), "targets must be int32 (or int64), got");
  EXPECT_ERROR(F::rnnt_loss(logits[0], targets, tl, ul), "logits must be 4-D (batch, max_T, max_U + 1, classes)");
  EXPECT_ERROR(F::rnnt_loss(logits, targets, fw::tensor({3, 3}, fw::kInt), ul), "input length mismatch");
  EXPECT_ERROR(F::rnnt_loss(logits, targets, tl, fw::tensor({1, 1}, fw::kInt)), "output length mismatch");
  EXPECT_ERROR(F::rnnt_loss(logits, fw::tensor({{1, 7}, {2, 0}}, fw::kInt), tl, ul), "target 7 (sequence 0, position 1)");
  EXPECT_ERROR(F::rnnt_loss(logits, targets, tl, ul, 5), "blank 5 is out of range for 5 classes");
  EXPECT_ERROR(F::rnnt_loss(logits, targets, fw::tensor({4}, fw::kInt), ul), "batch dimension mismatch");
  EXPECT_ERROR(F::rnnt_loss(fw::zeros({2, 4, 3, 5}), targets, fw::tensor({4, 0}, fw::kInt), ul),
               "logit_lengths must be at least 1");
}
