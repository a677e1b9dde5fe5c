// Kaldi's pitch tracker and pitch post-processing (fw/audio/pitch.h).
//
// The tracker runs per signal on the host, in the single-precision arithmetic of Kaldi's
// pitch-functions.cc / resample.cc, so that argmin choices in the
// Viterbi search see the same costs: values Kaldi keeps in float are rounded to float at the same
// points, and this file is built with -ffp-contract=off so no multiply-add is fused. Dot products
// accumulate in double (Kaldi's go through BLAS in float; the difference is far below the
// tolerance of any cost comparison that is not already a tie).
//
// Structure, following the online design of Kaldi's tracker (a signal may arrive in chunks):
//   StreamResampler   Kaldi's LinearResample: windowed-sinc low-pass + rate change with the exact
//                     output count of a streaming resampler (flush only at the end of input);
//   LagUpsampler      Kaldi's ArbitraryResample: NCCF at integer lags -> log-spaced lags;
//   PitchTracker      per chunk: frames -> NCCF (with and without the energy ballast) ->
//                     upsampled NCCF -> one Viterbi step per frame (exact min over the previous
//                     frame's states, found by monotone bound refinement) -> traceback.
#include "fw/audio/pitch.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "core/parallel.h"

namespace fw::audio::functional {

namespace {

constexpr const char* kOp = "[audio::compute_kaldi_pitch]";

// The options in Kaldi's types (PitchExtractionOptions holds floats and int32s).
struct PitchConfig {
  float samp_freq, frame_shift_ms, frame_length_ms, min_f0, max_f0, soft_min_f0, penalty_factor, lowpass_cutoff,
      resample_freq, delta_pitch, nccf_ballast;
  int32_t lowpass_filter_width, upsample_filter_width, max_frames_latency, frames_per_chunk, recompute_frame;
  bool simulate_first_pass_online, snip_edges;
  int32_t window_size() const { return static_cast<int32_t>(resample_freq * frame_length_ms / 1000.0); }
  int32_t window_shift() const { return static_cast<int32_t>(resample_freq * frame_shift_ms / 1000.0); }
};

// The windowed-sinc filter of both resamplers: a sinc with cutoff `cutoff` times a raised-cosine
// window spanning num_zeros zero crossings on each side, evaluated as Kaldi does (double
// trigonometry, float results).
float windowed_sinc(float t, float cutoff, int32_t num_zeros) {
  float window = 0.0f;
  if (std::fabs(t) < num_zeros / (2.0 * cutoff))
    window = float(0.5 * (1 + std::cos(2 * M_PI * cutoff / num_zeros * t)));
  const float filter = t != 0 ? float(std::sin(2 * M_PI * cutoff * t) / (M_PI * t)) : 2 * cutoff;
  return filter * window;
}

// Kaldi's LinearResample between integer rates. Output sample s sits at time s / rate_out and
// sums the input samples within the filter's half-width of it; input outside [0, received) counts
// as zero. Without flush, only outputs whose whole window has arrived are produced.
class StreamResampler {
 public:
  StreamResampler(int32_t rate_in, int32_t rate_out, float cutoff, int32_t num_zeros)
      : rate_in_(rate_in), rate_out_(rate_out), cutoff_(cutoff), num_zeros_(num_zeros) {
    const int32_t g = std::gcd(rate_in, rate_out);
    in_unit_ = rate_in / g;
    out_unit_ = rate_out / g;
    const double half_width = num_zeros / (2.0 * cutoff);
    first_.resize(size_t(out_unit_));
    weights_.resize(size_t(out_unit_));
    for (int32_t i = 0; i < out_unit_; i++) {
      const double t_out = i / double(rate_out);
      const int32_t lo = int32_t(std::ceil((t_out - half_width) * rate_in));
      const int32_t hi = int32_t(std::floor((t_out + half_width) * rate_in));
      first_[size_t(i)] = lo;
      for (int32_t k = lo; k <= hi; k++) {
        const double dt = k / double(rate_in) - t_out;
        weights_[size_t(i)].push_back(windowed_sinc(float(dt), cutoff, num_zeros) / rate_in);
      }
    }
  }

  // The number of output samples available once `total_in` input samples have arrived.
  int64_t available(int64_t total_in, bool flush) const {
    const int64_t tick_freq = int64_t(rate_in_) / std::gcd(rate_in_, rate_out_) * rate_out_;
    int64_t interval = total_in * (tick_freq / rate_in_);
    if (!flush) {
      const float half_width = float(num_zeros_ / (2.0 * cutoff_));
      interval -= int64_t(std::floor(half_width * float(tick_freq)));
    }
    if (interval <= 0) return 0;
    const int64_t ticks_per_out = tick_freq / rate_out_;
    int64_t last = interval / ticks_per_out;
    if (last * ticks_per_out == interval) last--;
    return last + 1;
  }

  // Appends the outputs made available by the input so far (x[0, total_in)) to `out`.
  void run(const std::vector<float>& x, int64_t total_in, bool flush, std::vector<float>& out) {
    const int64_t end = available(total_in, flush);
    for (int64_t s = produced_; s < end; s++) {
      const int64_t unit = s / out_unit_;
      const int32_t phase = int32_t(s - unit * out_unit_);
      const int64_t first = first_[size_t(phase)] + unit * in_unit_;
      const std::vector<float>& w = weights_[size_t(phase)];
      double acc = 0;
      for (size_t j = 0; j < w.size(); j++) {
        const int64_t k = first + int64_t(j);
        if (k >= 0 && k < total_in) acc += double(w[j]) * x[size_t(k)];
      }
      out.push_back(float(acc));
    }
    produced_ = std::max(produced_, end);
  }

 private:
  int32_t rate_in_, rate_out_;
  float cutoff_;
  int32_t num_zeros_, in_unit_, out_unit_;
  std::vector<int32_t> first_;
  std::vector<std::vector<float>> weights_;
  int64_t produced_ = 0;
};

// Kaldi's ArbitraryResample: values sampled at n_in regular points (rate `rate`) interpolated at
// arbitrary times with the windowed sinc; the support is clipped to the measured points.
class LagUpsampler {
 public:
  LagUpsampler(int32_t n_in, float rate, float cutoff, const std::vector<float>& points, int32_t num_zeros)
      : n_in_(n_in) {
    const float half_width = float(num_zeros / (2.0 * cutoff));
    for (const float t : points) {
      int32_t lo = int32_t(std::ceil(rate * (t - half_width)));
      int32_t hi = int32_t(std::floor(rate * (t + half_width)));
      lo = std::max(lo, 0);
      hi = std::min(hi, n_in - 1);
      FW_CHECK(hi >= lo, kOp, " internal error: lag ", t, " s has no measured NCCF within the upsampling filter");
      first_.push_back(lo);
      std::vector<float> w;
      for (int32_t k = lo; k <= hi; k++) {
        const float dt = t - float(k) / rate;
        w.push_back(windowed_sinc(dt, cutoff, num_zeros) / rate);
      }
      weights_.push_back(std::move(w));
    }
  }
  // out[f][i] = sum_j in[f][first_i + j] w_i[j] for `rows` rows of n_in values (in row-major,
  // n_in per row; out: size() per row), for two inputs at once (they share weights).
  // Each output is accumulated in double in ascending j, as one row at a time would, but for a
  // block of kBlock rows together: the innermost loop runs over the block (vectorised), instead of
  // a serial chain of dependent adds per output, which made this ~20% of the pitch tracker.
  void apply(const float* in_a, const float* in_b, int64_t rows, float* out_a, float* out_b) const {
    constexpr int64_t kBlock = 16;
    const int64_t n_out = int64_t(weights_.size());
    std::vector<double> ta(size_t(n_in_ * kBlock)), tb(size_t(n_in_ * kBlock));
    for (int64_t r0 = 0; r0 < rows; r0 += kBlock) {
      const int64_t nb = std::min(kBlock, rows - r0);
      // The block transposed (lag-major), zero past the last row.
      for (int64_t k = 0; k < n_in_; k++)
        for (int64_t b = 0; b < kBlock; b++) {
          const bool in = b < nb;
          ta[size_t(k * kBlock + b)] = in ? double(in_a[(r0 + b) * n_in_ + k]) : 0.0;
          tb[size_t(k * kBlock + b)] = in ? double(in_b[(r0 + b) * n_in_ + k]) : 0.0;
        }
      for (int64_t i = 0; i < n_out; i++) {
        double acc_a[kBlock] = {}, acc_b[kBlock] = {};
        const std::vector<float>& w = weights_[size_t(i)];
        const double* xa = ta.data() + first_[size_t(i)] * kBlock;
        const double* xb = tb.data() + first_[size_t(i)] * kBlock;
        for (size_t j = 0; j < w.size(); j++) {
          const double wj = w[j];
          for (int64_t b = 0; b < kBlock; b++) {
            acc_a[b] += xa[int64_t(j) * kBlock + b] * wj;
            acc_b[b] += xb[int64_t(j) * kBlock + b] * wj;
          }
        }
        for (int64_t b = 0; b < nb; b++) {
          out_a[(r0 + b) * n_out + i] = float(acc_a[b]);
          out_b[(r0 + b) * n_out + i] = float(acc_b[b]);
        }
      }
    }
  }
  size_t size() const { return weights_.size(); }

 private:
  int32_t n_in_;
  std::vector<int32_t> first_;
  std::vector<std::vector<float>> weights_;
};

// A float dot product accumulated in double, in 16 interleaved partial sums: vectorised, with
// enough independent adds in flight that the add latency does not serialise it (with four sums
// the correlations were ~18% of the tracker; Kaldi's are float BLAS dots).
double dot(const float* a, const float* b, int64_t n) {
  constexpr int kSums = 16;
  double s[kSums] = {};
  int64_t i = 0;
  for (; i + kSums <= n; i += kSums)
    for (int k = 0; k < kSums; k++) s[k] += double(a[i + k]) * double(b[i + k]);
  double tail = 0;  // in its own register: indexing s[] by a variable would spill it to memory
  for (; i < n; i++) tail += double(a[i]) * double(b[i]);
  for (int w = kSums / 2; w > 0; w /= 2)
    for (int k = 0; k < w; k++) s[k] += s[k + w];
  return s[0] + tail;
}

bool approx_equal(float a, float b, float tol) {
  if (a == b) return true;
  const float diff = std::fabs(a - b);
  if (std::isinf(diff) || std::isnan(diff)) return false;
  return diff <= tol * std::max(std::fabs(a), std::fabs(b));
}

class PitchTracker {
 public:
  explicit PitchTracker(const PitchConfig& c)
      : c_(c),
        resampler_(int32_t(c.samp_freq), int32_t(c.resample_freq), c.lowpass_cutoff, c.lowpass_filter_width) {
    const double pad = c.upsample_filter_width / (2.0 * c.resample_freq);
    first_lag_ = int32_t(std::ceil(c.resample_freq * (1.0 / c.max_f0 - pad)));
    last_lag_ = int32_t(std::floor(c.resample_freq * (1.0 / c.min_f0 + pad)));
    // Log-spaced lags from 1/max_f0 to 1/min_f0 with ratio 1 + delta_pitch (float, as Kaldi).
    const float min_lag = float(1.0 / c.max_f0), max_lag = float(1.0 / c.min_f0);
    for (float lag = min_lag; lag <= max_lag; lag = float(lag * (1.0 + c.delta_pitch))) lags_.push_back(lag);
    states_ = int32_t(lags_.size());
    const float offset = float(-first_lag_) / c.resample_freq;
    std::vector<float> points(lags_);
    for (float& p : points) p += offset;
    upsampler_.emplace(last_lag_ + 1 - first_lag_, c.resample_freq, c.resample_freq * 0.5f, points,
                            c.upsample_filter_width);
    forward_cost_.assign(size_t(states_), 0.0f);
  }

  // Kaldi's AcceptWaveform: n more input samples.
  void accept(const float* x, int64_t n) {
    input_.insert(input_.end(), x, x + n);
    process();
  }

  // Kaldi's InputFinished: flush the resampler, take the last frames, revise the early ones.
  void finish() {
    finished_ = true;
    process();
    if (frames() < c_.recompute_frame) recompute_backtraces();
    latency_ = 0;
  }

  int32_t frames() const { return int32_t(best_state_.size()); }
  int32_t frames_ready() const { return int32_t(lag_nccf_.size()) - latency_; }
  // (NCCF, pitch) of frame f as the current traceback has it.
  std::pair<float, float> frame(int32_t f) const {
    const auto& e = lag_nccf_[size_t(f)];
    return {e.second, float(1.0 / lags_[size_t(e.first)])};
  }

 private:
  struct RecomputeInfo {
    std::vector<float> nccf_pitch;  // upsampled NCCF with the ballast it was computed with
    float avg_norm_prod, mean_square;
  };

  // Resamples what input_ has added since the last call and processes every frame now available.
  void process() {
    const size_t before = down_.size();
    resampler_.run(input_, int64_t(input_.size()), finished_, down_);
    const int64_t processed = int64_t(before), new_len = int64_t(down_.size() - before);
    const float* part = down_.data() + before;
    const double part_sumsq = float(dot(part, part, new_len));
    double part_sum = 0;
    for (int64_t i = 0; i < new_len; i++) part_sum += part[i];
    part_sum = float(part_sum);

    // Running statistics for the ballast term (offline energy: the chunk counts whole).
    double cur_sumsq = signal_sumsq_ + part_sumsq, cur_sum = signal_sum_ + part_sum;
    const int64_t cur_num = processed + new_len;

    const int32_t end_frame = frames_available(processed + new_len);
    const int32_t start_frame = frames();
    const int32_t num_new = end_frame - start_frame;
    // Kaldi's UpdateRemainder: the signal statistics absorb this chunk.
    signal_sumsq_ += part_sumsq;
    signal_sum_ += part_sum;
    if (num_new <= 0) return;

    const int32_t n_lags = last_lag_ + 1 - first_lag_, shift = c_.window_shift(), basic = c_.window_size(),
                  full = basic + last_lag_;
    const int64_t available = processed + new_len;
    const size_t lag_rows = size_t(num_new) * size_t(n_lags), state_rows = size_t(num_new) * size_t(states_);
    std::vector<float> window(static_cast<size_t>(full)), inner(static_cast<size_t>(n_lags)),
        norm(static_cast<size_t>(n_lags)), nccf_pitch(lag_rows), nccf_pov(lag_rows);
    const double mean_square = cur_sumsq / double(cur_num) - std::pow(cur_sum / double(cur_num), 2.0);
    for (int32_t frame = start_frame; frame < end_frame; frame++) {
      const int64_t start = c_.snip_edges ? int64_t(frame) * shift
                                          : int64_t((frame + 0.5) * shift) - full / 2;
      for (int32_t k = 0; k < full; k++) {
        const int64_t s = start + k;
        window[size_t(k)] = s >= 0 && s < available ? down_[size_t(s)] : 0.0f;
      }
      correlation(window.data(), basic, inner.data(), norm.data());
      const float ballast_pitch = float(std::pow(mean_square * basic, 2) * c_.nccf_ballast);
      double norm_sum = 0;
      for (float v : norm) norm_sum += v;
      const float avg_norm_prod = float(norm_sum) / float(n_lags);
      const size_t row = size_t(frame - start_frame) * size_t(n_lags);
      nccf(inner.data(), norm.data(), n_lags, ballast_pitch, nccf_pitch.data() + row);
      nccf(inner.data(), norm.data(), n_lags, 0.0f, nccf_pov.data() + row);
      if (frame < c_.recompute_frame) recompute_info_.push_back({{}, avg_norm_prod, float(mean_square)});
    }

    const LagUpsampler& up = *upsampler_;
    std::vector<float> pitch_up(state_rows), pov_up(state_rows);
    up.apply(nccf_pitch.data(), nccf_pov.data(), num_new, pitch_up.data(), pov_up.data());

    std::vector<float> next(static_cast<size_t>(states_));
    // Grown once per call (geometrically, so a stream of small calls stays linear), not per frame.
    auto grow = [](auto& v, size_t more) {
      if (v.capacity() < v.size() + more) v.reserve(std::max(v.size() + more, 2 * v.capacity()));
    };
    grow(pov_, state_rows);
    grow(backpointer_, state_rows);
    for (int32_t frame = start_frame; frame < end_frame; frame++) {
      const size_t row = size_t(frame - start_frame) * size_t(states_);
      pov_.insert(pov_.end(), pov_up.begin() + std::ptrdiff_t(row),
                  pov_up.begin() + std::ptrdiff_t(row + size_t(states_)));
      backpointer_.resize(backpointer_.size() + size_t(states_));
      best_state_.push_back(-1);
      viterbi_step(frame, pitch_up.data() + row, forward_cost_.data(), next.data());
      forward_cost_.swap(next);
      normalize_forward_cost(forward_cost_);
      if (frame < c_.recompute_frame)
        recompute_info_[size_t(frame)].nccf_pitch.assign(pitch_up.begin() + std::ptrdiff_t(row),
                                                         pitch_up.begin() + std::ptrdiff_t(row + size_t(states_)));
      if (frame == c_.recompute_frame - 1) recompute_backtraces();
    }
    trace_back();
    latency_ = compute_latency(c_.max_frames_latency);
  }

  int32_t frames_available(int64_t num_samples) const {
    const int32_t shift = c_.window_shift();
    int32_t length = c_.window_size();
    if (!finished_) length += last_lag_;
    if (num_samples < length) return 0;
    if (!c_.snip_edges) {
      if (finished_) return int32_t(float(num_samples) * 1.0f / float(shift) + 0.5f);
      return int32_t(float(num_samples - length / 2) * 1.0f / float(shift) + 0.5f);
    }
    return int32_t((num_samples - length) / shift + 1);
  }

  // Kaldi's ComputeCorrelation: the window minus the mean of its first `n` samples; for each lag,
  // the inner product of [0, n) with [lag, lag + n) and the product of their energies.
  void correlation(float* w, int32_t n, float* inner, float* norm) const {
    double s = 0;
    for (int32_t i = 0; i < n; i++) s += w[i];
    const float mean = float(s) / float(n);
    const int32_t full = c_.window_size() + last_lag_;
    for (int32_t i = 0; i < full; i++) w[i] += -mean;
    const float e1 = float(dot(w, w, n));
    // All lags at once, in double: for each sample i, every lag's inner-product and energy sum
    // takes its term (the innermost loop runs over lags, contiguous in w, and vectorises; one dot
    // per lag and sum ran 140 short dot products per frame).
    const int32_t nl = last_lag_ - first_lag_ + 1;
    corr_sq_.resize(size_t(full));
    corr_in_.assign(size_t(nl), 0.0);
    corr_e2_.assign(size_t(nl), 0.0);
    for (int32_t i = 0; i < full; i++) corr_sq_[size_t(i)] = double(w[i]) * double(w[i]);
    double* acc_in = corr_in_.data();
    double* acc_e2 = corr_e2_.data();
    for (int32_t i = 0; i < n; i++) {
      const double wi = w[i];
      const float* wl = w + first_lag_ + i;
      const double* sl = corr_sq_.data() + first_lag_ + i;
      for (int32_t l = 0; l < nl; l++) {
        acc_in[l] += wi * double(wl[l]);
        acc_e2[l] += sl[l];
      }
    }
    for (int32_t l = 0; l < nl; l++) {
      inner[l] = float(acc_in[l]);
      norm[l] = e1 * float(acc_e2[l]);
    }
  }

  static void nccf(const float* inner, const float* norm, int32_t n, float ballast, float* out) {
    for (int32_t i = 0; i < n; i++) {
      const float denominator = float(std::sqrt(double(norm[i] + ballast)));  // Kaldi: pow(., 0.5)
      // A zero denominator means a zero signal in the window (a non-zero numerator with it can
      // only come from float underflow of e1 * e2); Kaldi defines the NCCF as 0 there.
      out[i] = denominator != 0.0f ? inner[i] / denominator : 0.0f;
    }
  }

  // One Viterbi step: this[i] = min_j (prev[j] + (j - i)^2 factor) + local[i] with its argmin as
  // frame `frame`'s backpointer for state i. Backpointers are monotone in i, so the exact minimum is
  // found by alternately tightening lower and upper bounds on each state's backpointer (a sweep
  // ends its scan once costs stop improving past the current best), as Kaldi does; ties resolve to
  // the same state as Kaldi's search.
  void viterbi_step(int32_t frame, const float* nccf_pitch, const float* prev, float* cur) {
    const int32_t n = states_;
    std::vector<float> local(static_cast<size_t>(n));
    for (int32_t i = 0; i < n; i++) {
      float v = 1.0f + -1.0f * nccf_pitch[i];
      v = v + c_.soft_min_f0 * lags_[size_t(i)] * nccf_pitch[i];
      local[size_t(i)] = v;
    }
    const float delta_sq = float(std::pow(std::log(1.0 + c_.delta_pitch), 2.0));
    const float factor = delta_sq * c_.penalty_factor;
    auto cost = [&](int32_t i, int32_t j) { return float((j - i) * (j - i)) * factor + prev[j]; };
    int32_t* bp = backpointer_.data() + size_t(frame) * size_t(n);
    std::vector<int32_t> lower(static_cast<size_t>(n)), upper(static_cast<size_t>(n));

    int32_t last = 0;
    for (int32_t i = 0; i < n; i++) {
      int32_t best_j = last;
      float best = cost(i, best_j);
      for (int32_t j = best_j + 1; j < n; j++) {
        const float c = cost(i, j);
        if (!(c < best)) break;
        best = c;
        best_j = j;
      }
      bp[i] = best_j;
      cur[i] = best;
      lower[size_t(i)] = best_j;
      upper[size_t(i)] = n - 1;
      last = best_j;
    }
    for (int32_t iter = 0; iter < n; iter++) {
      bool changed = false;
      if (iter % 2 == 0) {  // downward sweep: tighten the upper bounds
        last = n - 1;
        for (int32_t i = n - 1; i >= 0; i--) {
          const int32_t lo = lower[size_t(i)], hi = std::min(last, upper[size_t(i)]);
          if (hi == lo || bp[i] == hi) {
            last = hi == lo ? lo : bp[i];
            continue;
          }
          float best = cur[i];
          int32_t best_j = bp[i];
          const int32_t initial = best_j;
          for (int32_t j = hi; j > lo + 1; j--) {
            const float c = cost(i, j);
            if (c < best) {
              best = c;
              best_j = j;
            } else if (best_j > j) {
              break;
            }
          }
          upper[size_t(i)] = best_j;
          if (best_j != initial) {
            cur[i] = best;
            bp[i] = best_j;
            changed = true;
          }
          last = best_j;
        }
      } else {  // upward sweep: tighten the lower bounds
        last = 0;
        for (int32_t i = 0; i < n; i++) {
          const int32_t lo = std::max(last, lower[size_t(i)]), hi = upper[size_t(i)];
          if (hi == lo || bp[i] == lo) {
            last = hi == lo ? lo : bp[i];
            continue;
          }
          float best = cur[i];
          int32_t best_j = bp[i];
          const int32_t initial = best_j;
          for (int32_t j = lo; j < hi - 1; j++) {
            const float c = cost(i, j);
            if (c < best) {
              best = c;
              best_j = j;
            } else if (best_j < j) {
              break;
            }
          }
          lower[size_t(i)] = best_j;
          if (best_j != initial) {
            cur[i] = best;
            bp[i] = best_j;
            changed = true;
          }
          last = best_j;
        }
      }
      if (!changed) break;
    }
    best_state_[size_t(frame)] = -1;  // any earlier traceback through this frame is stale
    for (int32_t i = 0; i < n; i++) cur[i] += local[size_t(i)];
  }

  static int32_t argmin(const std::vector<float>& v) {
    return int32_t(std::min_element(v.begin(), v.end()) - v.begin());
  }
  static void normalize_forward_cost(std::vector<float>& v) {
    const float m = v[size_t(argmin(v))];
    for (float& x : v) x += -m;
  }

  // Traceback from the best final state; stops where it meets the previous traceback.
  void trace_back() {
    lag_nccf_.resize(size_t(frames()));
    int32_t state = argmin(forward_cost_);
    for (int32_t f = frames() - 1; f >= 0; f--) {
      if (best_state_[size_t(f)] == state) return;
      const size_t at = size_t(f) * size_t(states_) + size_t(state);
      lag_nccf_[size_t(f)] = {state, pov_[at]};
      best_state_[size_t(f)] = state;
      state = backpointer_[at];
    }
  }

  // How many trailing frames the traceback has not settled (the best paths from the lowest and
  // highest final states have not merged), capped at max_latency.
  int32_t compute_latency(int32_t max_latency) const {
    if (max_latency <= 0) return 0;
    int32_t latency = 0, lo = 0, hi = states_ - 1;
    for (int32_t f = frames() - 1; latency < max_latency; f--) {
      if (f < 0) return latency;  // before frame 0 every path starts from state 0
      lo = backpointer_[size_t(f) * size_t(states_) + size_t(lo)];
      hi = backpointer_[size_t(f) * size_t(states_) + size_t(hi)];
      if (lo == hi) return latency;
      latency++;
    }
    return latency;
  }

  // Kaldi's RecomputeBacktraces: once the signal's energy is better known (at recompute_frame or
  // at the end of input), redo the Viterbi search over the early frames if the energy behind
  // their ballast term moved by more than 1%, rescaling their NCCF by the ballast change.
  void recompute_backtraces() {
    const int32_t n_frames = frames();
    if (n_frames == 0) return;
    const double num = double(down_.size()), mean = signal_sum_ / num;
    const float mean_square = float(signal_sumsq_ / num - mean * mean);
    bool must = false;
    for (const RecomputeInfo& r : recompute_info_)
      if (!approx_equal(r.mean_square, mean_square, 0.01f)) must = true;
    if (must) {
      FW_CHECK(recompute_info_.size() == size_t(n_frames), kOp, " internal error: ", recompute_info_.size(),
               " saved frames for ", n_frames, " frames");
      const int32_t basic = c_.window_size();
      const float new_ballast = float(std::pow(mean_square * float(basic), 2) * c_.nccf_ballast);
      std::vector<float> cost(static_cast<size_t>(states_), 0.0f), next(static_cast<size_t>(states_));
      for (int32_t f = 0; f < n_frames; f++) {
        RecomputeInfo& r = recompute_info_[size_t(f)];
        const float old_ballast = float(std::pow(r.mean_square * float(basic), 2) * c_.nccf_ballast);
        const float scale = std::pow((old_ballast + r.avg_norm_prod) / (new_ballast + r.avg_norm_prod), 0.5f);
        for (float& v : r.nccf_pitch) v *= scale;
        viterbi_step(f, r.nccf_pitch.data(), cost.data(), next.data());
        cost.swap(next);
        normalize_forward_cost(cost);
      }
      forward_cost_ = cost;
      trace_back();
      latency_ = compute_latency(c_.max_frames_latency);
    }
    recompute_info_.clear();
    recompute_info_.shrink_to_fit();
  }

  PitchConfig c_;
  StreamResampler resampler_;
  std::optional<LagUpsampler> upsampler_;  // built once the lags are known
  int32_t first_lag_ = 0, last_lag_ = 0, states_ = 0;
  std::vector<float> lags_;
  bool finished_ = false;
  std::vector<float> input_;           // the signal so far
  std::vector<float> down_;            // the resampled signal so far
  double signal_sumsq_ = 0, signal_sum_ = 0;
  std::vector<float> forward_cost_;    // of the last frame, minimum 0
  mutable std::vector<double> corr_sq_, corr_in_, corr_e2_;  // correlation() scratch
  std::vector<int32_t> backpointer_;   // (frames, states)
  std::vector<float> pov_;             // (frames, states): NCCF without ballast
  std::vector<int32_t> best_state_;    // per frame, on the last traceback (-1: none)
  std::vector<std::pair<int32_t, float>> lag_nccf_;  // per frame: (state, NCCF)
  std::vector<RecomputeInfo> recompute_info_;
  int32_t latency_ = 0;
};

// One signal -> rows of (NCCF, pitch), as Kaldi's ComputeKaldiPitch.
std::vector<std::pair<float, float>> track(const PitchConfig& c, const float* x, int64_t n) {
  PitchTracker t(c);
  std::vector<std::pair<float, float>> out;
  auto feed = [&](int64_t begin, int64_t end) { t.accept(x + begin, end - begin); };
  const int64_t per_chunk =
      c.frames_per_chunk > 0 ? int64_t(float(c.frames_per_chunk) * c.samp_freq * c.frame_shift_ms / 1000.0f) : n;
  if (c.simulate_first_pass_online) {
    int64_t offset = 0;
    while (offset < n) {
      const int64_t len = std::min(per_chunk, n - offset);
      feed(offset, offset + len);
      offset += len;
      if (offset == n) t.finish();
      for (int32_t f = int32_t(out.size()); f < t.frames_ready(); f++) out.push_back(t.frame(f));
    }
    return out;
  }
  if (c.frames_per_chunk == 0) {
    feed(0, n);
  } else {
    for (int64_t offset = 0; offset < n; offset += per_chunk) feed(offset, std::min(n, offset + per_chunk));
  }
  t.finish();
  for (int32_t f = 0; f < t.frames_ready(); f++) out.push_back(t.frame(f));
  return out;
}

bool whole(double v) { return std::isfinite(v) && v == std::floor(v); }

PitchConfig make_config(double sample_rate, const KaldiPitchOptions& o) {
  FW_CHECK(whole(sample_rate) && sample_rate > 0 && sample_rate < 2147483648.0, kOp,
           " sample_rate must be a positive whole number of Hz, got ", sample_rate);
  FW_CHECK(whole(o.resample_frequency()) && o.resample_frequency() > 0 && o.resample_frequency() < 2147483648.0, kOp,
           " resample_frequency must be a positive whole number of Hz, got ", o.resample_frequency());
  FW_CHECK(o.frame_length() > 0 && o.frame_shift() > 0, kOp, " frame_length and frame_shift must be positive, got ",
           o.frame_length(), " and ", o.frame_shift(), " ms");
  FW_CHECK(o.min_f0() > 0 && o.max_f0() > o.min_f0(), kOp, " need 0 < min_f0 < max_f0, got min_f0 ", o.min_f0(),
           ", max_f0 ", o.max_f0());
  FW_CHECK(o.delta_pitch() > 0, kOp, " delta_pitch must be positive, got ", o.delta_pitch());
  FW_CHECK(o.soft_min_f0() >= 0 && o.penalty_factor() >= 0 && o.nccf_ballast() >= 0, kOp,
           " soft_min_f0, penalty_factor and nccf_ballast must be non-negative, got ", o.soft_min_f0(), ", ",
           o.penalty_factor(), ", ", o.nccf_ballast());
  FW_CHECK(o.lowpass_cutoff() > 0 && 2 * o.lowpass_cutoff() <= sample_rate &&
               2 * o.lowpass_cutoff() <= o.resample_frequency(),
           kOp, " lowpass_cutoff must be positive and at most half of both sample_rate (", sample_rate,
           ") and resample_frequency (", o.resample_frequency(), "), got ", o.lowpass_cutoff());
  FW_CHECK(o.lowpass_filter_width() > 0 && o.lowpass_filter_width() < 1024 && o.upsample_filter_width() > 0 &&
               o.upsample_filter_width() < 1024,
           kOp, " lowpass_filter_width and upsample_filter_width must be in [1, 1023], got ",
           o.lowpass_filter_width(), " and ", o.upsample_filter_width());
  FW_CHECK(o.max_frames_latency() >= 0 && o.frames_per_chunk() >= 0 && o.recompute_frame() >= 0, kOp,
           " max_frames_latency, frames_per_chunk and recompute_frame must be non-negative, got ",
           o.max_frames_latency(), ", ", o.frames_per_chunk(), ", ", o.recompute_frame());
  FW_CHECK(o.max_frames_latency() < (1 << 30) && o.frames_per_chunk() < (1 << 30) && o.recompute_frame() < (1 << 30),
           kOp, " max_frames_latency, frames_per_chunk and recompute_frame must be below 2^30");
  // The lag grid (1/max_f0 to 1/min_f0 in steps of 1 + delta_pitch) is the Viterbi state space;
  // its size bounds the per-frame work and memory (8 bytes per state and frame).
  const double states = std::log(o.max_f0() / o.min_f0()) / std::log1p(o.delta_pitch());
  FW_CHECK(states < 100000, kOp, " min_f0 ", o.min_f0(), ", max_f0 ", o.max_f0(), " and delta_pitch ", o.delta_pitch(),
           " give about ", states, " candidate lags (at most 100000)");
  FW_CHECK(!o.simulate_first_pass_online() || o.frames_per_chunk() > 0, kOp,
           " simulate_first_pass_online needs frames_per_chunk > 0");
  PitchConfig c;
  c.samp_freq = float(sample_rate);
  c.frame_shift_ms = float(o.frame_shift());
  c.frame_length_ms = float(o.frame_length());
  c.min_f0 = float(o.min_f0());
  c.max_f0 = float(o.max_f0());
  c.soft_min_f0 = float(o.soft_min_f0());
  c.penalty_factor = float(o.penalty_factor());
  c.lowpass_cutoff = float(o.lowpass_cutoff());
  c.resample_freq = float(o.resample_frequency());
  c.delta_pitch = float(o.delta_pitch());
  c.nccf_ballast = float(o.nccf_ballast());
  c.lowpass_filter_width = int32_t(o.lowpass_filter_width());
  c.upsample_filter_width = int32_t(o.upsample_filter_width());
  c.max_frames_latency = int32_t(o.max_frames_latency());
  c.frames_per_chunk = int32_t(o.frames_per_chunk());
  c.simulate_first_pass_online = o.simulate_first_pass_online();
  c.recompute_frame = int32_t(o.recompute_frame());
  c.snip_edges = o.snip_edges();
  FW_CHECK(c.window_size() > 0 && c.window_shift() > 0, kOp, " frame_length ", o.frame_length(), " ms and frame_shift ",
           o.frame_shift(), " ms must each span at least one sample at resample_frequency ", o.resample_frequency());
  FW_CHECK(c.upsample_filter_width / (2.0 * c.resample_freq) < 1.0 / c.max_f0, kOp, " upsample_filter_width ",
           o.upsample_filter_width(), " reaches past the shortest lag 1/max_f0 at resample_frequency ",
           o.resample_frequency());
  {
    // The resampler keeps one filter per output phase: rate_out / gcd phases of about
    // lowpass_filter_width / lowpass_cutoff * sample_rate taps each.
    const int64_t in = int64_t(sample_rate), out = int64_t(o.resample_frequency());
    const double phases = double(out / std::gcd(in, out));
    const double taps = double(o.lowpass_filter_width()) / o.lowpass_cutoff() * sample_rate + 1;
    FW_CHECK(phases * taps <= 5e7, kOp, " resampling ", sample_rate, " Hz to ", o.resample_frequency(),
             " Hz with lowpass_filter_width ", o.lowpass_filter_width(), " needs ", phases * taps,
             " filter taps (at most 5e7); use rates with a larger common divisor");
  }
  FW_CHECK(c.frames_per_chunk == 0 || float(c.frames_per_chunk) * c.samp_freq * c.frame_shift_ms / 1000.0f >= 1.0f,
           kOp, " frames_per_chunk ", o.frames_per_chunk(), " spans less than one input sample");
  return c;
}

}  // namespace

Tensor compute_kaldi_pitch(const Tensor& waveform, double sample_rate, const KaldiPitchOptions& options) {
  FW_CHECK(waveform.defined(), kOp, " waveform is undefined");
  FW_CHECK(waveform.dtype() == kFloat || waveform.dtype() == kDouble, kOp,
           " waveform must be float32 or float64, got ", waveform.dtype());
  FW_CHECK(waveform.dim() >= 1, kOp, " waveform must be (..., time), got a 0-d tensor");
  const PitchConfig c = make_config(sample_rate, options);
  const int64_t time = waveform.size(-1);
  FW_CHECK(time < (int64_t(1) << 31) / 2, kOp, " signals of ", time, " samples are too long (at most 2^30)");
  int64_t rows = 1;
  for (int64_t d = 0; d + 1 < waveform.dim(); d++) rows *= waveform.size(d);
  Tensor host = waveform.detach().to(Device(kCPU)).to(kFloat).contiguous().reshape({rows, time});
  for (int64_t i = 0, n = host.numel(); i < n; i++) {
    const float v = host.data_ptr<float>()[i];
    FW_CHECK(std::isfinite(v), kOp, " waveform has a non-finite sample (", v, ") at flat index ", i);
  }
  std::vector<std::vector<std::pair<float, float>>> results(static_cast<size_t>(rows));
  const float* x = host.data_ptr<float>();
  fw::parallel_for(0, rows, 1, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; r++) results[size_t(r)] = track(c, x + r * time, time);
  });
  // Rows of one batch have the same length, so they have the same number of frames (which depends
  // on the length and options only: an empty batch counts the frames of a silent row).
  const int64_t frames =
      rows ? int64_t(results[0].size()) : int64_t(track(c, std::vector<float>(size_t(time)).data(), time).size());
  Tensor out = fw::empty({rows, frames, 2}, TensorOptions(kFloat));
  float* o = out.data_ptr<float>();
  for (int64_t r = 0; r < rows; r++) {
    FW_CHECK(int64_t(results[size_t(r)].size()) == frames, kOp, " internal error: rows gave different frame counts");
    for (int64_t f = 0; f < frames; f++) {
      o[(r * frames + f) * 2] = results[size_t(r)][size_t(f)].first;
      o[(r * frames + f) * 2 + 1] = results[size_t(r)][size_t(f)].second;
    }
  }
  std::vector<int64_t> shape(waveform.sizes().begin(), waveform.sizes().end() - 1);
  shape.push_back(frames);
  shape.push_back(2);
  return out.reshape(shape).to(waveform.dtype()).to(waveform.device());
}

namespace {

// Kaldi's NccfToPov: an approximate probability of voicing from the NCCF (fitted on Keele).
double nccf_to_pov(double n) {
  const double a = std::min(std::fabs(n), 1.0);
  const double r = -5.2 + 5.4 * std::exp(7.5 * (a - 1.0)) + 4.8 * a - 2.0 * std::exp(-10.0 * a) +
                   4.2 * std::exp(20.0 * (a - 1.0));
  return 1.0 / (1.0 + std::exp(-r));
}

// Kaldi's NccfToPovFeature: (1.0001 - n)^0.15 - 1 with n clamped to [-1, 1].
double nccf_to_pov_feature(double n) { return std::pow(1.0001 - std::clamp(n, -1.0, 1.0), 0.15) - 1.0; }

}  // namespace

Tensor process_kaldi_pitch(const Tensor& pitch, const ProcessPitchOptions& o, std::optional<Generator> generator) {
  const char* op = "[audio::process_kaldi_pitch]";
  FW_CHECK(pitch.defined(), op, " pitch is undefined");
  FW_CHECK(pitch.dtype() == kFloat || pitch.dtype() == kDouble, op, " pitch must be float32 or float64, got ",
           pitch.dtype());
  FW_CHECK(pitch.dim() >= 2 && pitch.size(-1) == 2, op,
           " pitch must be (..., frames, 2) holding (NCCF, pitch) as compute_kaldi_pitch returns, got shape ",
           pitch.sizes());
  FW_CHECK(o.add_pov_feature() || o.add_normalized_log_pitch() || o.add_delta_pitch() || o.add_raw_log_pitch(), op,
           " at least one of add_pov_feature, add_normalized_log_pitch, add_delta_pitch, add_raw_log_pitch must be "
           "set");
  FW_CHECK(o.normalization_left_context() >= 0 && o.normalization_right_context() >= 0 && o.delta_window() >= 1 &&
               o.delay() >= 0,
           op, " need normalization contexts >= 0, delta_window >= 1 and delay >= 0, got ",
           o.normalization_left_context(), ", ", o.normalization_right_context(), ", ", o.delta_window(), ", ",
           o.delay());
  FW_CHECK(o.delta_pitch_noise_stddev() >= 0, op, " delta_pitch_noise_stddev must be non-negative, got ",
           o.delta_pitch_noise_stddev());
  const int64_t T = pitch.size(-2);
  const int64_t dim = int64_t(o.add_pov_feature()) + int64_t(o.add_normalized_log_pitch()) +
                      int64_t(o.add_delta_pitch()) + int64_t(o.add_raw_log_pitch());
  int64_t rows = 1;
  for (int64_t d = 0; d + 2 < pitch.dim(); d++) rows *= pitch.size(d);
  Tensor host = pitch.detach().to(Device(kCPU)).to(kDouble).contiguous().reshape({rows, T, 2});
  const double* in = host.data_ptr<double>();
  for (int64_t i = 0; i < rows * T; i++) {
    FW_CHECK(std::isfinite(in[2 * i]) && in[2 * i + 1] > 0 && std::isfinite(in[2 * i + 1]), op,
             " frame ", i % std::max<int64_t>(T, 1), " of row ", i / std::max<int64_t>(T, 1),
             " has NCCF ", in[2 * i], " and pitch ", in[2 * i + 1], "; pitches must be positive and finite");
  }
  const int64_t out_T = T > 0 ? T + o.delay() : 0;
  Tensor noise;
  if (o.add_delta_pitch() && o.delta_pitch_noise_stddev() > 0 && rows * T > 0)
    noise = fw::randn({rows, T}, generator, TensorOptions(kDouble));
  const double* nz = noise.defined() ? noise.data_ptr<double>() : nullptr;
  Tensor out = fw::empty({rows, out_T, dim}, TensorOptions(kDouble));
  double* po = out.data_ptr<double>();
  const int64_t L = o.normalization_left_context(), R = o.normalization_right_context(), W = o.delta_window();
  double norm = 0;
  for (int64_t k = 1; k <= W; k++) norm += 2.0 * double(k * k);
  for (int64_t r = 0; r < rows; r++) {
    const double* p = in + r * T * 2;
    std::vector<double> log_pitch(static_cast<size_t>(T)), pov(static_cast<size_t>(T)),
        weighted(static_cast<size_t>(T + 1), 0.0), weights(static_cast<size_t>(T + 1), 0.0);
    for (int64_t t = 0; t < T; t++) {
      log_pitch[size_t(t)] = std::log(p[2 * t + 1]);
      pov[size_t(t)] = nccf_to_pov(p[2 * t]);
      weights[size_t(t + 1)] = weights[size_t(t)] + pov[size_t(t)];
      weighted[size_t(t + 1)] = weighted[size_t(t)] + pov[size_t(t)] * log_pitch[size_t(t)];
    }
    for (int64_t t_out = 0; t_out < out_T; t_out++) {
      const int64_t t = std::max<int64_t>(0, t_out - o.delay());
      double* row = po + (r * out_T + t_out) * dim;
      int64_t c = 0;
      if (o.add_pov_feature()) row[c++] = o.pov_scale() * nccf_to_pov_feature(p[2 * t]) + o.pov_offset();
      if (o.add_normalized_log_pitch()) {
        const int64_t b = std::max<int64_t>(0, t - L), e = std::min(T, t + R + 1);
        const double mean = (weighted[size_t(e)] - weighted[size_t(b)]) / (weights[size_t(e)] - weights[size_t(b)]);
        row[c++] = o.pitch_scale() * (log_pitch[size_t(t)] - mean);
      }
      if (o.add_delta_pitch()) {
        double d = 0;
        for (int64_t k = 1; k <= W; k++) {
          const int64_t ahead = std::min(T - 1, t + k), behind = std::max<int64_t>(0, t - k);
          d += double(k) * (log_pitch[size_t(ahead)] - log_pitch[size_t(behind)]);
        }
        d /= norm;
        if (nz) d += o.delta_pitch_noise_stddev() * nz[r * T + t];
        row[c++] = o.delta_pitch_scale() * d;
      }
      if (o.add_raw_log_pitch()) row[c++] = log_pitch[size_t(t)];
    }
  }
  std::vector<int64_t> shape(pitch.sizes().begin(), pitch.sizes().end() - 2);
  shape.push_back(out_T);
  shape.push_back(dim);
  return out.reshape(shape).to(pitch.dtype()).to(pitch.device());
}

}  // namespace fw::audio::functional
