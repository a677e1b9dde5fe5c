// FrameSampler: inverse-CDF draw of a state, then a uniform frame of that state, from a private
// counter-based Philox stream (core/random.h), so draws depend only on (seed, draw number).
#include "fw/models/sampler.h"

#include <algorithm>
#include <cmath>

#include "core/random.h"
#include "fw/ops.h"

namespace fw::models {

std::vector<double> state_sampling_probabilities(const std::vector<int64_t>& counts, double gamma) {
  const char* fn = "[models::state_sampling_probabilities]";
  FW_CHECK(std::isfinite(gamma), fn, " gamma must be finite, got ", gamma);
  std::vector<double> p(counts.size(), 0.0);
  int64_t ref = 0;  // f^γ is taken relative to the largest (γ >= 0) or smallest (γ < 0) count: no overflow
  for (size_t s = 0; s < counts.size(); s++) {
    FW_CHECK(counts[s] >= 0, fn, " counts[", s, "] = ", counts[s], " is negative");
    if (counts[s] > 0 && (ref == 0 || (gamma >= 0 ? counts[s] > ref : counts[s] < ref))) ref = counts[s];
  }
  FW_CHECK(ref > 0, fn, " every state count is zero");
  double total = 0;
  for (size_t s = 0; s < counts.size(); s++)
    if (counts[s] > 0) total += p[s] = std::pow(double(counts[s]) / double(ref), gamma);
  for (auto& v : p) v /= total;
  return p;
}

FrameSampler::FrameSampler(std::vector<int64_t> frame_states, int64_t num_states, double gamma, uint64_t seed)
    : states_(std::move(frame_states)), seed_(seed) {
  const char* fn = "[models::FrameSampler]";
  FW_CHECK(num_states > 0, fn, " num_states must be positive, got ", num_states);
  FW_CHECK(!states_.empty(), fn, " no frames");
  counts_.assign(size_t(num_states), 0);
  for (size_t j = 0; j < states_.size(); j++) {
    FW_CHECK(states_[j] >= 0 && states_[j] < num_states, fn, " frame_states[", j, "] = ", states_[j],
             " is outside [0, ", num_states, ")");
    counts_[size_t(states_[j])]++;
  }
  probs_ = state_sampling_probabilities(counts_, gamma);
  cumulative_.resize(probs_.size());
  double acc = 0;
  for (size_t s = 0; s < probs_.size(); s++) cumulative_[s] = acc += probs_[s];
  offsets_.assign(size_t(num_states) + 1, 0);
  for (size_t s = 0; s < counts_.size(); s++) offsets_[s + 1] = offsets_[s] + counts_[s];
  frames_by_state_.resize(states_.size());
  std::vector<int64_t> fill(offsets_.begin(), offsets_.end() - 1);
  for (size_t j = 0; j < states_.size(); j++) frames_by_state_[size_t(fill[size_t(states_[j])]++)] = int64_t(j);
}

namespace {
std::vector<int64_t> to_vector(const Tensor& t) {
  FW_CHECK(t.defined() && t.dim() == 1 && !t.is_floating_point() && !t.is_complex(),
           "[models::FrameSampler] expected frame_states as a 1-D integer tensor, got ",
           t.defined() ? t.sizes() : IntArrayRef{});
  Tensor c = t.to(kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
}  // namespace

FrameSampler::FrameSampler(const Tensor& frame_states, int64_t num_states, double gamma, uint64_t seed)
    : FrameSampler(to_vector(frame_states), num_states, gamma, seed) {}

Tensor FrameSampler::frame_weights() const {
  Tensor w = fw::empty({num_frames()}, kDouble);
  double* p = w.data_ptr<double>();
  for (size_t j = 0; j < states_.size(); j++) {
    size_t s = size_t(states_[j]);
    p[j] = probs_[s] / double(counts_[s]);
  }
  return w;
}

Tensor FrameSampler::sample(int64_t n) {
  FW_CHECK(n >= 0, "[models::FrameSampler::sample] n must be non-negative, got ", n);
  Tensor out = fw::empty({n}, kLong);
  int64_t* o = out.data_ptr<int64_t>();
  const double scale = 1.0 / 9007199254740992.0;  // 2^-53
  for (int64_t i = 0; i < n; i++) {
    uint32_t r[4];
    detail::philox4x32(seed_, counter_++, r);
    double u_state = double(((uint64_t(r[0]) << 32) | r[1]) >> 11) * scale * cumulative_.back();
    double u_frame = double(((uint64_t(r[2]) << 32) | r[3]) >> 11) * scale;
    size_t s = size_t(std::upper_bound(cumulative_.begin(), cumulative_.end(), u_state) - cumulative_.begin());
    // upper_bound skips zero-probability states; only rounding of u_state up to the total can
    // run past the end, which belongs to the last state that has frames.
    if (s == cumulative_.size())
      while (counts_[--s] == 0) {
      }
    int64_t k = std::min(int64_t(u_frame * double(counts_[s])), counts_[s] - 1);
    o[i] = frames_by_state_[size_t(offsets_[s] + k)];
  }
  return out;
}

void FrameSampler::reseed(uint64_t seed) {
  seed_ = seed;
  counter_ = 0;
}

}  // namespace fw::models
