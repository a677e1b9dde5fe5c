// fw::audio::functional's effects (fw/audio/effects.h) against torchaudio 0.13
// (tests/fixtures/audio/gen_effects.py -> effects.safetensors), plus argument errors, gradients of
// the differentiable ones and fw's documented difference in vad.
//
// Tolerances: rtol 1e-4 with atol 1e-5 * max|reference| for float32 (1e-10 for float64) unless a
// case says otherwise.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <sstream>
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
  static const fwtest::audio::FixtureFile f("effects");
  return f;
}

// A channel of a speech WAV next to the fixtures, as float32 samples.
Tensor wav_channel(const std::string& stem, int64_t channel) {
  static std::map<std::string, Tensor> cache;
  auto it = cache.find(stem);
  if (it == cache.end())
    it = cache.emplace(stem, fw::audio::load(std::string(FW_AUDIO_FIXTURE_DIR) + "/" + stem + ".wav").first).first;
  return it->second[channel];
}

// The case's input, built as gen_effects.py builds it (see its docstring).
Tensor input(const Case& c) {
  std::vector<Tensor> rows;
  for (const auto& row : c.find("rows")->array) {
    std::vector<Tensor> segs;
    for (const auto& s : row.array) {
      const std::string src = s.array[0].text;
      const int64_t off = std::stoll(s.array[1].text), n = std::stoll(s.array[2].text);
      const double scale = std::stod(s.array[3].text);
      Tensor x;
      if (src.rfind("signal/", 0) == 0) {
        x = fix().get(src)[0];
      } else {
        const size_t colon = src.find(':');
        x = wav_channel(src.substr(0, colon), std::stoll(src.substr(colon + 1)));
      }
      segs.push_back(x.slice(0, off, off + n) * scale);
    }
    rows.push_back(fw::cat(segs));
  }
  Tensor x = fw::stack(rows);
  if (c.has("shape")) {
    std::vector<int64_t> shape;
    for (const auto& d : c.find("shape")->array) shape.push_back(std::stoll(d.text));
    x = x.reshape(shape);
  }
  return c.str("dtype") == "float64" ? x.to(fw::kDouble) : x;
}

void expect_matches(const Case& c, const Tensor& out) {
  const bool f64 = c.str("dtype") == "float64";
  FW_AUDIO_EXPECT_CLOSE(c, out, fix().out(c), f64 ? 1e-10 : 1e-4, f64 ? 1e-10 : 1e-5);
}

size_t run_cases(const std::string& prefix, const std::function<Tensor(const Case&, const Tensor&)>& f) {
  auto cases = fix().cases(prefix);
  for (const auto& c : cases) {
    Tensor x = input(c);
    Tensor before = x.clone();
    Tensor y = f(c, x);
    EXPECT_TRUE(fw::equal(x, before)) << c.name << ": the input was modified";
    EXPECT_EQ(y.dtype(), x.dtype()) << c.name;
    expect_matches(c, y);
  }
  return cases.size();
}

}  // namespace

TEST(AudioEffects, ContrastMatchesTorchaudio) {
  EXPECT_EQ(run_cases("contrast_", [](const Case& c, const Tensor& x) {
              return F::contrast(x, c.num("enhancement_amount"));
            }), 5u);
}

TEST(AudioEffects, DcshiftMatchesTorchaudio) {
  EXPECT_EQ(run_cases("dcshift_", [](const Case& c, const Tensor& x) {
              std::optional<double> lg;
              if (c.has("limiter_gain")) lg = c.num("limiter_gain");
              return F::dcshift(x, c.num("shift"), lg);
            }), 7u);
}

TEST(AudioEffects, OverdriveMatchesTorchaudio) {
  EXPECT_EQ(run_cases("overdrive_", [](const Case& c, const Tensor& x) {
              return F::overdrive(x, c.num("gain"), c.num("colour"));
            }), 5u);
}

TEST(AudioEffects, PhaserMatchesTorchaudio) {
  EXPECT_EQ(run_cases("phaser_", [](const Case& c, const Tensor& x) {
              return F::phaser(x, c.i("sample_rate"), c.num("gain_in", 0.4), c.num("gain_out", 0.74),
                               c.num("delay_ms", 3.0), c.num("decay", 0.4), c.num("mod_speed", 0.5),
                               c.flag("sinusoidal", true));
            }), 6u);
}

TEST(AudioEffects, FlangerMatchesTorchaudio) {
  EXPECT_EQ(run_cases("flanger_", [](const Case& c, const Tensor& x) {
              return F::flanger(x, c.i("sample_rate"), c.num("delay", 0.0), c.num("depth", 2.0), c.num("regen", 0.0),
                                c.num("width", 71.0), c.num("speed", 0.5), c.num("phase", 25.0),
                                c.str("modulation", "sinusoidal"), c.str("interpolation", "linear"));
            }), 7u);
}

TEST(AudioEffects, LoudnessMatchesTorchaudio) {
  EXPECT_EQ(run_cases("loudness_", [](const Case& c, const Tensor& x) {
              Tensor y = F::loudness(x, c.i("sample_rate"));
              EXPECT_EQ(y.sizes(), x.sizes().slice(0, size_t(x.dim() - 2))) << c.name;
              return y;
            }), 7u);
}

TEST(AudioEffects, PitchShiftMatchesTorchaudio) {
  // Phase vocoder + istft + resample: float32 rounding of the accumulated phase grows along time.
  auto cases = fix().cases("pitch_shift_");
  for (const auto& c : cases) {
    Tensor x = input(c);
    std::optional<int64_t> win, hop;
    if (c.has("win_length")) win = c.i("win_length");
    if (c.has("hop_length")) hop = c.i("hop_length");
    Tensor y = F::pitch_shift(x, c.i("sample_rate"), c.i("n_steps"), c.i("bins_per_octave", 12), c.i("n_fft", 512),
                              win, hop);
    EXPECT_EQ(y.sizes(), x.sizes()) << c.name;
    FW_AUDIO_EXPECT_CLOSE(c, y, fix().out(c), 1e-3, 2e-4);
  }
  EXPECT_EQ(cases.size(), 5u);
}

TEST(AudioEffects, VadTrimsWhereTorchaudioDoes) {
  auto cases = fix().cases("vad_");
  for (const auto& c : cases) {
    Tensor x = input(c);
    F::VadOptions o;
    o.trigger_level(c.num("trigger_level", 7.0)).trigger_time(c.num("trigger_time", 0.25));
    o.search_time(c.num("search_time", 1.0)).allowed_gap(c.num("allowed_gap", 0.25));
    o.pre_trigger_time(c.num("pre_trigger_time", 0.0)).boot_time(c.num("boot_time", 0.35));
    o.noise_up_time(c.num("noise_up_time", 0.1)).noise_down_time(c.num("noise_down_time", 0.01));
    o.noise_reduction_amount(c.num("noise_reduction_amount", 1.35)).measure_freq(c.num("measure_freq", 20.0));
    if (c.has("measure_duration")) o.measure_duration(c.num("measure_duration"));
    o.measure_smooth_time(c.num("measure_smooth_time", 0.4));
    o.hp_filter_freq(c.num("hp_filter_freq", 50.0)).lp_filter_freq(c.num("lp_filter_freq", 6000.0));
    o.hp_lifter_freq(c.num("hp_lifter_freq", 150.0)).lp_lifter_freq(c.num("lp_lifter_freq", 2000.0));
    Tensor y = F::vad(x, c.i("sample_rate"), o);
    const int64_t start = fix().out(c, "start")[0].item<int64_t>();
    EXPECT_EQ(x.size(-1) - y.size(-1), start) << c.name;
    if (x.size(-1) - y.size(-1) == start) EXPECT_TRUE(fw::equal(y, x.narrow(-1, start, y.size(-1)))) << c.name;
  }
  EXPECT_EQ(cases.size(), 9u);
}

TEST(AudioEffects, VadKeepsTheStartOfShortUntriggeredInput) {
  // torchaudio slices from a negative index here (its ring buffer never filled), which wraps to
  // the end of the signal; fw returns the input from its first sample (effects.h).
  Tensor x = fw::zeros({2, 8000});
  Tensor y = F::vad(x, 16000);
  EXPECT_EQ(y.sizes(), x.sizes());
  // A 1-D input keeps its rank; a longer silent one is cut to the ring buffer (1.1 s at 16 kHz).
  EXPECT_EQ(F::vad(fw::zeros({24000}), 16000).sizes(), fw::IntArrayRef({17600}));
}

TEST(AudioEffects, DifferentiableEffectsHaveGradients) {
  auto x = (fw::arange(64, fw::kDouble) * 0.37).sin().mul(0.6).reshape({2, 32}).requires_grad_();
  auto check = [&](const std::function<Tensor(const Tensor&)>& f, const char* name) {
    EXPECT_TRUE(fw::autograd::gradcheck(
        [&](const fw::autograd::variable_list& in) { return fw::autograd::variable_list{f(in[0])}; }, {x}))
        << name;
  };
  check([](const Tensor& t) { return F::contrast(t, 50); }, "contrast");
  check([](const Tensor& t) { return F::dcshift(t * 0.5, 0.2); }, "dcshift");
  check([](const Tensor& t) { return F::overdrive(t * 0.1, 10, 10); }, "overdrive");
  auto small = (fw::arange(120, fw::kDouble) * 0.53).cos().mul(0.3).reshape({2, 60}).requires_grad_();
  auto check_small = [&](const std::function<Tensor(const Tensor&)>& f, const char* name) {
    EXPECT_TRUE(fw::autograd::gradcheck(
        [&](const fw::autograd::variable_list& in) { return fw::autograd::variable_list{f(in[0])}; }, {small}))
        << name;
  };
  // Short delay lines (a 1 kHz rate) so the 60 samples wrap them several times.
  check_small([](const Tensor& t) { return F::phaser(t, 1000, 0.9, 0.8, 5.0, 0.7, 20.0); }, "phaser");
  check_small([](const Tensor& t) { return F::phaser(t, 1000, 0.9, 0.8, 3.0, 0.5, 30.0, false); }, "phaser tri");
  check_small([](const Tensor& t) { return F::flanger(t, 1000, 3.0, 4.0, 40.0, 60.0, 10.0, 50.0); }, "flanger");
  check_small([](const Tensor& t) {
    return F::flanger(t.reshape({1, 2, 60}), 1000, 0.0, 5.0, -50.0, 80.0, 20.0, 30.0, "triangular", "quadratic");
  }, "flanger quadratic");
  auto y = fw::cat({x, x.flip({1}) * 0.5}, 1).repeat({1, 200}).reshape({1, 2, -1});
  auto l = F::loudness(y, 16000);
  l.backward();
  EXPECT_TRUE(x.grad().defined() && x.grad().abs().sum().item<double>() > 0);
}

TEST(AudioEffects, BadArgumentsAreNamed) {
  Tensor x = fw::zeros({2, 1000});
  EXPECT_ERROR(F::contrast(x, 120), "[audio::contrast] enhancement_amount must be in [0, 100], got 120");
  EXPECT_ERROR(F::contrast(x.to(fw::kLong), 10), "[audio::contrast] expected a float32 or float64 waveform, got");
  EXPECT_ERROR(F::flanger(fw::zeros({5, 100}), 16000), "[audio::flanger] Max 4 channels allowed, got 5");
  EXPECT_ERROR(F::flanger(x, 16000, 0, 2, 0, 71, 0.5, 25, "square"), "modulation allowed, got \"square\"");
  EXPECT_ERROR(F::flanger(x, 16000, 0, 2, 0, 71, 0.5, 25, "sinusoidal", "cubic"), "interpolation allowed");
  EXPECT_ERROR(F::flanger(fw::zeros({100}), 16000), "[audio::flanger] expected a waveform of shape (..., channels, time)");
  EXPECT_ERROR(F::flanger(x, 16000, 0, 2, 0, 71, 0.0), "[audio::flanger] speed must be positive, got 0");
  EXPECT_ERROR(F::phaser(x, 16000, 0.4, 0.74, 0.01), "gives an empty delay line");
  EXPECT_ERROR(F::phaser(x, 16000, 0.4, 0.74, 3, 0.4, -1), "[audio::phaser] mod_speed must be positive, got -1");
  EXPECT_ERROR(F::loudness(fw::zeros({6, 16000}), 16000), "[audio::loudness] Only up to 5 channels are supported, got 6");
  EXPECT_ERROR(F::loudness(fw::zeros({1, 100}), 16000), "needs at least one 400 ms block (6400 samples at 16000 Hz)");
  EXPECT_ERROR(F::vad(x, 16000, F::VadOptions().hp_lifter_freq(5000)), "Expected cepstrum_start to be smaller");
  EXPECT_ERROR(F::vad(x, 16000, F::VadOptions().measure_freq(0)), "[audio::vad] measure_freq must be positive");
  EXPECT_ERROR(F::pitch_shift(x, 16000, 2, 0), "[audio::pitch_shift] bins_per_octave must be positive, got 0");
}

TEST(AudioEffects, TransformsModules) {
  namespace T = fw::audio::transforms;
  const Case c = fix().cases("pitch_shift_3")[0];  // n_fft 256, hop 64
  T::PitchShift ps(T::PitchShiftOptions(16000, c.i("n_steps")).n_fft(256).hop_length(64));
  FW_AUDIO_EXPECT_CLOSE(c, ps(input(c)), fix().out(c), 1e-3, 2e-4);
  const Case l = fix().cases("loudness_stereo")[0];
  FW_AUDIO_EXPECT_CLOSE(l, T::Loudness(16000)(input(l)), fix().out(l));
  const Case v = fix().cases("vad_vi_noise_lead")[0];
  Tensor x = input(v);
  EXPECT_EQ(x.size(-1) - T::Vad(16000)(x).size(-1), fix().out(v, "start")[0].item<int64_t>());
  std::ostringstream os;
  os << *ps;
  EXPECT_FALSE(os.str().empty());
}
