// fw::audio::functional::compute_kaldi_pitch and process_kaldi_pitch against Kaldi's
// ComputeKaldiPitch and ProcessPitch (tests/fixtures/audio/gen_pitch.py -> pitch.safetensors), plus
// argument errors, dtypes and the delta-pitch noise.
//
// Tolerances: the pitch column (1 / chosen lag) must match to float rounding on every frame (the
// Viterbi search made the same choices); the NCCF column to 2e-5 absolute (fw accumulates the
// correlations in double, Kaldi in float BLAS).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fw/audio.h"
#include "tests/audio/audio_fixture.h"
#include "tests/expect_error.h"

namespace {

namespace F = fw::audio::functional;
using fw::Tensor;
using fwtest::audio::Case;

const fwtest::audio::FixtureFile& fix() {
  static const fwtest::audio::FixtureFile f("pitch");
  return f;
}

Tensor source(const std::string& src) {
  if (src.rfind("signal/", 0) == 0) return fix().get(src);
  static std::map<std::string, Tensor> cache;
  auto it = cache.find(src);
  if (it == cache.end())
    it = cache.emplace(src, fw::audio::load(std::string(FW_AUDIO_FIXTURE_DIR) + "/" + src + ".wav").first[0]).first;
  return it->second;
}

// The case's input, built as gen_pitch.py builds it.
Tensor input(const Case& c) {
  const Tensor x = source(c.str("src"));
  const int64_t n = c.i("n"), offset = c.i("offset"), rows = c.i("rows", 1), hop = c.i("hop", 0);
  std::vector<Tensor> segs;
  for (int64_t r = 0; r < rows; r++) segs.push_back(x.slice(0, offset + r * hop, offset + r * hop + n));
  Tensor w = fw::stack(segs) * c.num("scale", 1.0);
  if (c.has("shape")) {
    std::vector<int64_t> shape;
    for (const auto& d : c.find("shape")->array) shape.push_back(std::stoll(d.text));
    w = w.reshape(shape);
  }
  return w;
}

F::KaldiPitchOptions options(const Case& c) {
  F::KaldiPitchOptions o;
  const auto* opts = c.find("opts");
  for (const auto& [k, v] : opts->object) {
    const double d = v.kind == fw::json::Value::Number ? std::stod(v.text) : 0.0;
    if (k == "frame_length") o.frame_length(d);
    else if (k == "frame_shift") o.frame_shift(d);
    else if (k == "min_f0") o.min_f0(d);
    else if (k == "max_f0") o.max_f0(d);
    else if (k == "soft_min_f0") o.soft_min_f0(d);
    else if (k == "penalty_factor") o.penalty_factor(d);
    else if (k == "lowpass_cutoff") o.lowpass_cutoff(d);
    else if (k == "resample_frequency") o.resample_frequency(d);
    else if (k == "delta_pitch") o.delta_pitch(d);
    else if (k == "nccf_ballast") o.nccf_ballast(d);
    else if (k == "lowpass_filter_width") o.lowpass_filter_width(int64_t(d));
    else if (k == "upsample_filter_width") o.upsample_filter_width(int64_t(d));
    else if (k == "max_frames_latency") o.max_frames_latency(int64_t(d));
    else if (k == "frames_per_chunk") o.frames_per_chunk(int64_t(d));
    else if (k == "recompute_frame") o.recompute_frame(int64_t(d));
    else if (k == "simulate_first_pass_online") o.simulate_first_pass_online(v.b);
    else if (k == "snip_edges") o.snip_edges(v.b);
    else ADD_FAILURE() << c.name << ": unknown option " << k;
  }
  return o;
}

// Checks (..., frames, 2) pitch output against the reference: same shape, every pitch equal to
// float rounding, NCCF within 2e-5.
void expect_pitch_matches(const std::string& name, const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec()) << name;
  if (expected.numel() == 0) return;
  const Tensor a = actual.reshape({-1, 2}).to(fw::kDouble), e = expected.reshape({-1, 2}).to(fw::kDouble);
  const int64_t frames = a.size(0);
  int64_t pitch_bad = 0, first_bad = -1;
  double worst_nccf = 0;
  for (int64_t f = 0; f < frames; f++) {
    const double pa = a[f][1].item<double>(), pe = e[f][1].item<double>();
    if (std::abs(pa - pe) > 1e-5 * pe) {
      if (first_bad < 0) first_bad = f;
      pitch_bad++;
    }
    worst_nccf = std::max(worst_nccf, std::abs(a[f][0].item<double>() - e[f][0].item<double>()));
  }
  EXPECT_EQ(pitch_bad, 0) << name << ": " << pitch_bad << " of " << frames << " frames pick another pitch, first at "
                          << first_bad;
  EXPECT_LT(worst_nccf, 2e-5) << name << ": NCCF differs by up to " << worst_nccf;
}

TEST(KaldiPitch, MatchesKaldi) {
  int n = 0;
  for (const Case& c : fix().cases("")) {
    if (c.name.rfind("post_", 0) == 0) continue;
    const Tensor out = F::compute_kaldi_pitch(input(c), c.num("sr"), options(c));
    EXPECT_EQ(out.dtype(), fw::kFloat);
    expect_pitch_matches(c.name, out, fix().out(c));
    n++;
  }
  EXPECT_GE(n, 30);
}

TEST(KaldiPitch, TracksTheGlideAndSilenceTiesToTheShortestLag) {
  // A harmonic tone gliding 120 -> 240 Hz: the track follows it within a few percent.
  const Tensor glide = fix().get("signal/glide");
  const Tensor out = F::compute_kaldi_pitch(glide, 16000);
  const int64_t frames = out.size(0);
  for (int64_t f = 5; f < frames - 5; f++) {
    const double t = (f * 160 + 200 + 0.5 * 328) / 16000.0;  // centre of the frame's correlation window
    const double expected = 120 + 60 * t;
    EXPECT_NEAR(out[f][1].item<double>() / expected, 1.0, 0.03) << "frame " << f;
    EXPECT_GT(out[f][0].item<double>(), 0.9) << "frame " << f;
  }
  // Silence: no correlation anywhere; every state costs the same and the search keeps state 0,
  // the shortest lag 1/max_f0, as Kaldi does.
  const Tensor quiet = F::compute_kaldi_pitch(fw::zeros({4000}), 16000);
  for (int64_t f = 0; f < quiet.size(0); f++) {
    EXPECT_EQ(quiet[f][0].item<float>(), 0.0f);
    EXPECT_NEAR(quiet[f][1].item<double>(), 400.0, 1e-3);
  }
}

TEST(KaldiPitch, Float64DevicesAndGradMode) {
  const Case c = fix().cases("speech_en")[0];
  const Tensor x = input(c);
  const Tensor x64 = x.to(fw::kDouble).requires_grad_(true);
  const Tensor out = F::compute_kaldi_pitch(x64, 16000);
  EXPECT_EQ(out.dtype(), fw::kDouble);
  EXPECT_FALSE(out.requires_grad());
  expect_pitch_matches("float64 " + c.name, out.to(fw::kFloat), fix().out(c));
  // A 1-D signal gives (frames, 2); the batch reshapes around it.
  const Tensor one = F::compute_kaldi_pitch(x[0], 16000);
  EXPECT_EQ(one.dim(), 2);
  expect_pitch_matches("1-D " + c.name, one.unsqueeze(0), fix().out(c));
  // An empty batch and an empty signal.
  // 8000 samples -> 2000 at 4 kHz -> (2000 - 100) / 40 + 1 frames, whether or not rows exist.
  EXPECT_EQ(F::compute_kaldi_pitch(fw::zeros({1, 8000}), 16000).sizes().vec(), (std::vector<int64_t>{1, 48, 2}));
  EXPECT_EQ(F::compute_kaldi_pitch(fw::zeros({0, 8000}), 16000).sizes().vec(), (std::vector<int64_t>{0, 48, 2}));
  EXPECT_EQ(F::compute_kaldi_pitch(fw::zeros({3, 0}), 16000).sizes().vec(), (std::vector<int64_t>{3, 0, 2}));
}

// Kaldi fails an assertion on snip_edges = false with one-frame chunks (gen_pitch.py skips those
// random cases); fw gives the frames of the offline run, tracked with the growing energy estimate.
TEST(KaldiPitch, SmallChunksWithoutSnippedEdges) {
  const Case c = fix().cases("speech_en")[0];
  const Tensor x = input(c);
  const auto opts = F::KaldiPitchOptions().snip_edges(false);
  const Tensor offline = F::compute_kaldi_pitch(x, 16000, opts);
  const Tensor chunked = F::compute_kaldi_pitch(x, 16000, F::KaldiPitchOptions(opts).frames_per_chunk(1));
  ASSERT_EQ(chunked.sizes().vec(), offline.sizes().vec());
  EXPECT_EQ(offline.size(1), 200);  // 32000 samples / 160
  // Where the offline track is clearly voiced, the chunked one agrees within a few percent.
  int64_t voiced = 0, agree = 0;
  for (int64_t f = 0; f < offline.size(1); f++) {
    if (offline[0][f][0].item<double>() < 0.9) continue;
    voiced++;
    agree += std::abs(chunked[0][f][1].item<double>() / offline[0][f][1].item<double>() - 1) < 0.03;
  }
  EXPECT_GT(voiced, 50);
  EXPECT_GE(agree, voiced * 9 / 10);
}

TEST(KaldiPitch, Errors) {
  const Tensor x = fw::randn({1, 4000});
  EXPECT_ERROR(F::compute_kaldi_pitch(x.to(fw::kLong), 16000), "float32 or float64");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 16000.5), "sample_rate must be a positive whole number");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 0), "sample_rate");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 16000, F::KaldiPitchOptions().min_f0(300).max_f0(200)), "0 < min_f0 < max_f0");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 1500), "lowpass_cutoff must be positive and at most half");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 16000, F::KaldiPitchOptions().lowpass_cutoff(2500)), "resample_frequency (4000)");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 16000, F::KaldiPitchOptions().simulate_first_pass_online(true)),
               "simulate_first_pass_online needs frames_per_chunk > 0");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 16000, F::KaldiPitchOptions().delta_pitch(1e-9)), "candidate lags");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 16000, F::KaldiPitchOptions().delta_pitch(0)), "delta_pitch must be positive");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 16000, F::KaldiPitchOptions().frame_length(0.1)), "at least one sample");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 16000, F::KaldiPitchOptions().nccf_ballast(-1)), "non-negative");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 16000, F::KaldiPitchOptions().upsample_filter_width(0)), "[1, 1023]");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 16000, F::KaldiPitchOptions().resample_frequency(4000.5)),
               "resample_frequency must be a positive whole number");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 16000, F::KaldiPitchOptions().upsample_filter_width(100)),
               "reaches past the shortest lag");
  EXPECT_ERROR(F::compute_kaldi_pitch(x, 2147483647), "filter taps (at most 5e7)");
  Tensor bad = x.clone();
  bad.index_put_({0, 17}, std::nan(""));
  EXPECT_ERROR(F::compute_kaldi_pitch(bad, 16000), "non-finite sample (nan) at flat index 17");
  EXPECT_ERROR(F::compute_kaldi_pitch(fw::ones({}), 16000), "0-d");
}

F::ProcessPitchOptions post_options(const Case& c) {
  const auto* p = c.find("post");
  auto num = [&](const char* k) {
    for (const auto& [key, v] : p->object)
      if (key == k) return v;
    ADD_FAILURE() << c.name << ": post option " << k << " missing";
    return fw::json::Value();
  };
  return F::ProcessPitchOptions()
      .pitch_scale(std::stod(num("pitch_scale").text))
      .pov_scale(std::stod(num("pov_scale").text))
      .pov_offset(std::stod(num("pov_offset").text))
      .delta_pitch_scale(std::stod(num("delta_pitch_scale").text))
      .delta_pitch_noise_stddev(0)
      .normalization_left_context(std::stoll(num("left").text))
      .normalization_right_context(std::stoll(num("right").text))
      .delta_window(std::stoll(num("delta_window").text))
      .delay(std::stoll(num("delay").text))
      .add_pov_feature(num("pov").b)
      .add_normalized_log_pitch(num("norm").b)
      .add_delta_pitch(num("delta").b)
      .add_raw_log_pitch(num("raw").b);
}

TEST(KaldiPitch, ProcessPitchMatchesKaldi) {
  const auto cases = fix().cases("post_");
  ASSERT_GE(cases.size(), 5u);
  for (const Case& c : cases) {
    // Post-processing of the reference track isolates process_kaldi_pitch.
    const Tensor feats = F::process_kaldi_pitch(fix().out(c), post_options(c));
    // Kaldi works in float: log-pitch differences in the delta carry ~1e-6 of rounding.
    FW_AUDIO_EXPECT_CLOSE(c, feats, fix().out(c, "feats"), 1e-5, 0, 1e-5);
    // And the whole chain from the waveform.
    const Tensor chain = F::process_kaldi_pitch(F::compute_kaldi_pitch(input(c), c.num("sr"), options(c)),
                                                post_options(c));
    FW_AUDIO_EXPECT_CLOSE(c, chain, fix().out(c, "feats"), 1e-4, 1e-5);
  }
}

TEST(KaldiPitch, ProcessPitchNoiseAndErrors) {
  const Case c = fix().cases("post_default")[0];
  const Tensor raw = fix().out(c).to(fw::kDouble);
  const F::ProcessPitchOptions clean_opts = F::ProcessPitchOptions().delta_pitch_noise_stddev(0);
  const Tensor clean = F::process_kaldi_pitch(raw, clean_opts);
  fw::Generator g1 = fw::make_generator<fw::CPUGeneratorImpl>(5), g2 = fw::make_generator<fw::CPUGeneratorImpl>(5);
  const Tensor noisy = F::process_kaldi_pitch(raw, F::ProcessPitchOptions(), g1);
  const Tensor again = F::process_kaldi_pitch(raw, F::ProcessPitchOptions(), g2);
  EXPECT_TRUE(fw::allclose(noisy, again, 0, 0));
  // Only the delta column moves, by N(0, 0.005^2) scaled by delta_pitch_scale 10.
  const Tensor diff = noisy - clean;
  EXPECT_EQ(diff.select(-1, 0).abs().max().item<double>(), 0.0);
  EXPECT_EQ(diff.select(-1, 1).abs().max().item<double>(), 0.0);
  const double sd = diff.select(-1, 2).std().item<double>();
  EXPECT_NEAR(sd, 0.05, 0.01);

  EXPECT_ERROR(F::process_kaldi_pitch(fw::ones({10, 3}), clean_opts), "(..., frames, 2)");
  Tensor bad = raw.clone();
  bad.index_put_({0, 4, 1}, 0.0);
  EXPECT_ERROR(F::process_kaldi_pitch(bad, clean_opts), "frame 4 of row 0");
  EXPECT_ERROR(F::process_kaldi_pitch(raw, F::ProcessPitchOptions()
                                               .add_pov_feature(false)
                                               .add_normalized_log_pitch(false)
                                               .add_delta_pitch(false)),
               "at least one of");
  EXPECT_ERROR(F::process_kaldi_pitch(raw, F::ProcessPitchOptions(clean_opts).delta_window(0)), "delta_window >= 1");
  EXPECT_ERROR(F::process_kaldi_pitch(raw.to(fw::kInt), clean_opts), "float32 or float64");
  // No frames in, no frames out.
  EXPECT_EQ(F::process_kaldi_pitch(fw::zeros({2, 0, 2}), F::ProcessPitchOptions(clean_opts).delay(3)).sizes().vec(),
            (std::vector<int64_t>{2, 0, 3}));
}

}  // namespace
