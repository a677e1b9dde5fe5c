// Context windows: extract_windows against a naive reference built by explicit loops with
// clamped frame indices, at the utterance edges, for one and three scales; gradients; errors.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/models/helpers.h"

namespace fm = fw::models;
using models_test::error_of;
using models_test::shape;

namespace {

// out[n][w * C + c][f][k] = features[clamp(centre_n - left_w + k * stride_w)][c][f], element by element.
fw::Tensor naive_windows(const fw::Tensor& features, const std::vector<int64_t>& centers, const fm::ContextSpec& spec) {
  const int64_t t = features.size(0), ch = features.size(1), freq = features.size(2);
  const int64_t nw = spec.num_windows(), frames = spec.num_frames(), n = int64_t(centers.size());
  fw::Tensor out = fw::zeros({n, nw * ch, freq, frames});
  auto in = features.accessor<float, 3>();
  auto o = out.accessor<float, 4>();
  for (int64_t i = 0; i < n; i++)
    for (int64_t w = 0; w < nw; w++)
      for (int64_t k = 0; k < frames; k++) {
        const auto& win = spec.windows[size_t(w)];
        int64_t src = std::min(std::max(centers[size_t(i)] - win.left + k * win.stride, int64_t(0)), t - 1);
        for (int64_t c = 0; c < ch; c++)
          for (int64_t f = 0; f < freq; f++) o[i][w * ch + c][f][k] = in[src][c][f];
      }
  return out;
}

}  // namespace

TEST(ModelsContext, MultiScaleWindowsAtUtteranceEdges) {
  // A 30-frame utterance: the ±20 stride-4 window runs off both ends for every centre.
  fw::Tensor feats = fw::arange(30 * 3 * 5, fw::kFloat).reshape({30, 3, 5});
  auto spec = fm::ContextSpec::multiscale();
  EXPECT_EQ(spec.num_frames(), 11);
  std::vector<int64_t> centers{0, 1, 4, 15, 25, 28, 29};
  fw::Tensor got = fm::extract_windows(feats, centers, spec);
  EXPECT_EQ(shape(got), (std::vector<int64_t>{7, 9, 5, 11}));
  EXPECT_TRUE(fw::equal(got, naive_windows(feats, centers, spec)));
  // Spot values: centre 0, window ±10 stride 2 (channels 3..5), frame k = 0 -> frame clamp(-10) = 0;
  // k = 10 -> frame 10. Centre 29, window ±20 stride 4, k = 3 -> frame 29 - 20 + 12 = 21.
  EXPECT_EQ(got[0][3][0][0].item<float>(), feats[0][0][0].item<float>());
  EXPECT_EQ(got[0][3][0][10].item<float>(), feats[10][0][0].item<float>());
  EXPECT_EQ(got[6][8][4][3].item<float>(), feats[21][2][4].item<float>());
  EXPECT_EQ(got[6][8][4][10].item<float>(), feats[29][2][4].item<float>());
}

TEST(ModelsContext, SingleWindowFromTensorCentersAndTwoDimFeatures) {
  fw::Tensor feats3 = fw::randn({12, 3, 40});
  auto spec = fm::ContextSpec::centered(16);
  ASSERT_EQ(spec.windows.size(), 1u);
  EXPECT_EQ(spec.windows[0].left, 8);
  EXPECT_EQ(spec.windows[0].right, 7);
  std::vector<int64_t> centers{0, 5, 11};
  fw::Tensor got = fm::extract_windows(feats3, fw::tensor(centers), spec);
  EXPECT_EQ(shape(got), (std::vector<int64_t>{3, 3, 40, 16}));
  EXPECT_TRUE(fw::equal(got, naive_windows(feats3, centers, spec)));
  // The centre frame sits at window position 8.
  EXPECT_TRUE(fw::equal(got[1].select(2, 8), feats3[5]));

  fw::Tensor feats2 = fw::randn({9, 40});
  std::vector<int64_t> centers2{0, 4, 8};
  fm::ContextSpec two{{2, 1}, {4, 2}};
  fw::Tensor got2 = fm::extract_windows(feats2, centers2, two);
  EXPECT_EQ(shape(got2), (std::vector<int64_t>{3, 2, 40, 5}));
  EXPECT_TRUE(fw::equal(got2, naive_windows(feats2.unsqueeze(1), centers2, two)));

  fw::Tensor idx = fm::window_frame_indices(9, fw::tensor({0, 8}), fm::ContextSpec{{4, 2}});
  EXPECT_TRUE(fw::equal(idx, fw::tensor({{{0, 0, 0, 2, 4}}, {{4, 6, 8, 8, 8}}})));
}

TEST(ModelsContext, GradientCountsUsesOfEachFrame) {
  fw::Tensor feats = fw::randn({10, 2, 3}).requires_grad_();
  auto spec = fm::ContextSpec{{3, 1}, {6, 2}};
  std::vector<int64_t> centers{0, 2, 9};
  fm::extract_windows(feats, centers, spec).sum().backward();
  fw::Tensor idx = fm::window_frame_indices(10, fw::tensor(centers), spec).flatten();
  std::vector<float> uses(10, 0.f);
  auto iv = idx.accessor<int64_t, 1>();
  for (int64_t i = 0; i < idx.numel(); i++) uses[size_t(iv[i])] += 1.f;
  fw::Tensor expect = fw::tensor(uses).view({10, 1, 1}).expand({10, 2, 3});
  EXPECT_TRUE(fw::equal(feats.grad(), expect));
}

TEST(ModelsContext, Errors) {
  fw::Tensor feats = fw::randn({10, 3, 40});
  std::string e = error_of([&] { fm::extract_windows(feats, {0, 10}, fm::ContextSpec::multiscale()); });
  EXPECT_NE(e.find("[models::window_frame_indices] centers[1] = 10 is outside the utterance's 10 frames"),
            std::string::npos) << e;
  e = error_of([&] { fm::extract_windows(feats, {0}, fm::ContextSpec{{5, 1}, {10, 1}}); });
  EXPECT_NE(e.find("window 1 has 21 frames but window 0 has 11"), std::string::npos) << e;
  e = error_of([&] { fm::extract_windows(feats, {0}, fm::ContextSpec{{5, 2}}); });
  EXPECT_NE(e.find("window 0 (left 5, right 5, stride 2)"), std::string::npos) << e;
  e = error_of([&] { fm::extract_windows(fw::randn({10}), {0}, fm::ContextSpec::multiscale()); });
  EXPECT_NE(e.find("[models::extract_windows] expected features (T, C, F) or (T, F), got [10]"), std::string::npos) << e;
}
