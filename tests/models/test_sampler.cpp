// FrameSampler: state probabilities p_s ∝ f_s^γ, per-frame weights, the empirical distribution of
// draws, determinism from the seed, and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "tests/models/helpers.h"

namespace fm = fw::models;
using models_test::error_of;

namespace {

// Frames with state counts {1000, 100, 10, 0, 1}, interleaved.
std::vector<int64_t> make_states() {
  std::vector<int64_t> counts{1000, 100, 10, 0, 1}, states;
  for (int64_t round = 0; round < 1000; round++)
    for (int64_t s = 0; s < 5; s++)
      if (round < counts[size_t(s)]) states.push_back(s);
  return states;
}

}  // namespace

TEST(ModelsSampler, StateProbabilitiesFollowPowerOfCounts) {
  std::vector<int64_t> counts{1000, 100, 10, 0, 1};
  for (double gamma : {0.0, 0.3, 0.5, 1.0}) {
    auto p = fm::state_sampling_probabilities(counts, gamma);
    double z = 0;
    for (int64_t c : counts) z += c > 0 ? std::pow(double(c), gamma) : 0.0;
    for (size_t s = 0; s < counts.size(); s++) {
      double expect = counts[s] > 0 ? std::pow(double(counts[s]), gamma) / z : 0.0;
      EXPECT_NEAR(p[s], expect, 1e-14) << "gamma " << gamma << " state " << s;
    }
  }
  auto uniform = fm::state_sampling_probabilities(counts, 0.0);
  EXPECT_DOUBLE_EQ(uniform[0], 0.25);
  EXPECT_DOUBLE_EQ(uniform[3], 0.0);
}

TEST(ModelsSampler, FrameWeightsAndEmpiricalDistribution) {
  auto states = make_states();
  fm::FrameSampler sampler(states, 5, 0.5, /*seed=*/7);
  EXPECT_EQ(sampler.state_counts(), (std::vector<int64_t>{1000, 100, 10, 0, 1}));
  const auto& p = sampler.state_probabilities();
  // Per-frame weights p_s / f_s: they sum to 1 and to p_s over each state's frames.
  fw::Tensor w = sampler.frame_weights();
  ASSERT_EQ(w.numel(), int64_t(states.size()));
  auto wv = w.accessor<double, 1>();
  std::vector<double> by_state(5, 0.0);
  for (size_t j = 0; j < states.size(); j++) by_state[size_t(states[j])] += wv[int64_t(j)];
  for (size_t s = 0; s < 5; s++) EXPECT_NEAR(by_state[s], p[s], 1e-12);
  EXPECT_NEAR(w.sum().item<double>(), 1.0, 1e-12);

  // Draws: each state's share within 5 standard deviations of p_s; frames of a state used evenly.
  const int64_t n = 200000;
  fw::Tensor draws = sampler.sample(n);
  auto dv = draws.accessor<int64_t, 1>();
  std::vector<int64_t> hits(5, 0), frame_hits(states.size(), 0);
  for (int64_t i = 0; i < n; i++) {
    ASSERT_GE(dv[i], 0);
    ASSERT_LT(dv[i], int64_t(states.size()));
    hits[size_t(states[size_t(dv[i])])]++;
    frame_hits[size_t(dv[i])]++;
  }
  for (size_t s = 0; s < 5; s++) {
    double sd = std::sqrt(p[s] * (1 - p[s]) / double(n));
    EXPECT_NEAR(double(hits[s]) / double(n), p[s], 5 * sd + 1e-12) << "state " << s;
  }
  EXPECT_EQ(hits[3], 0);
  // The 10 frames of state 2 (p ≈ 0.077): each about n * p / 10 ≈ 1500 draws.
  for (size_t j = 0; j < states.size(); j++)
    if (states[j] == 2) EXPECT_NEAR(double(frame_hits[j]), double(n) * p[2] / 10, 200.0) << "frame " << j;
}

TEST(ModelsSampler, DeterministicFromSeed) {
  auto states = make_states();
  fm::FrameSampler a(states, 5, 0.8, 123), b(fw::tensor(states), 5, 0.8, 123), c(states, 5, 0.8, 124);
  fw::Tensor first = a.sample(1000);
  EXPECT_TRUE(fw::equal(first, b.sample(1000)));
  EXPECT_FALSE(fw::equal(first, c.sample(1000)));
  // The stream continues, and reseed restarts it.
  EXPECT_FALSE(fw::equal(a.sample(1000), first));
  a.reseed(123);
  EXPECT_TRUE(fw::equal(a.sample(1000), first));
  // Split draws equal one long draw.
  a.reseed(5);
  fw::Tensor whole = a.sample(300);
  a.reseed(5);
  EXPECT_TRUE(fw::equal(fw::cat({a.sample(100), a.sample(200)}), whole));
}

TEST(ModelsSampler, Errors) {
  std::string e = error_of([] { fm::FrameSampler s({0, 3, 1}, 3, 0.5); });
  EXPECT_NE(e.find("[models::FrameSampler] frame_states[1] = 3 is outside [0, 3)"), std::string::npos) << e;
  e = error_of([] { fm::state_sampling_probabilities({0, 0}, 1.0); });
  EXPECT_NE(e.find("every state count is zero"), std::string::npos) << e;
  e = error_of([] { fm::state_sampling_probabilities({4, -1}, 1.0); });
  EXPECT_NE(e.find("counts[1] = -1 is negative"), std::string::npos) << e;
}
