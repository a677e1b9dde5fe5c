// fw::models::FrameSampler: training frames drawn so that HMM state s is picked with probability
// p_s ∝ f_s^γ (f_s: the state's frame count; γ = 1 the data's own distribution, γ = 0 uniform over
// seen states), then a frame of that state uniformly. Deterministic given the seed.
#pragma once
#include <cstdint>
#include <vector>

#include "fw/tensor.h"

namespace fw::models {

// p_s = f_s^γ / sum_r f_r^γ over states with f_s > 0 (0 for unseen states).
std::vector<double> state_sampling_probabilities(const std::vector<int64_t>& counts, double gamma);

class FrameSampler {
 public:
  // frame_states[j]: the state of frame j, in [0, num_states).
  FrameSampler(std::vector<int64_t> frame_states, int64_t num_states, double gamma, uint64_t seed = 0);
  FrameSampler(const Tensor& frame_states, int64_t num_states, double gamma, uint64_t seed = 0);

  // f_s: frames per state.
  const std::vector<int64_t>& state_counts() const { return counts_; }
  // p_s ∝ f_s^γ.
  const std::vector<double>& state_probabilities() const { return probs_; }
  // (num_frames,) Double: the probability of drawing frame j, p_{s_j} / f_{s_j} (sums to 1).
  Tensor frame_weights() const;
  // (n,) Long frame indices drawn with replacement; successive calls continue the stream.
  Tensor sample(int64_t n);
  // Restarts the stream from `seed`.
  void reseed(uint64_t seed);
  int64_t num_frames() const { return int64_t(states_.size()); }

 private:
  std::vector<int64_t> states_, counts_;
  std::vector<double> probs_, cumulative_;
  std::vector<int64_t> offsets_, frames_by_state_;  // frames of state s: [offsets_[s], offsets_[s + 1])
  uint64_t seed_ = 0, counter_ = 0;
};

}  // namespace fw::models
