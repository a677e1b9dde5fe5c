// fw::audio::functional filtering and resampling (fw/audio/filtering.h) against torchaudio 0.13
// (tests/fixtures/audio/gen_filtering.py -> filtering.safetensors), plus batch consistency, argument
// errors and gradchecks.
//
// Tolerances: rtol 1e-4 with atol 1e-5 * max|reference| for float32 (1e-10 for float64)
// unless a case says otherwise (measured: float32 within 1e-6 of the peak, float64 within 1e-14).
// The timing test is disabled by default:
//   build-c/tests/fw_audio_tests --gtest_also_run_disabled_tests --gtest_filter='*ResampleTiming*'
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "core/json.h"
#include "fw/audio/filtering.h"

namespace {

namespace F = fw::audio::functional;
using fw::Tensor;
using fw::json::Value;

// ---- fixture access

struct Fixture {
  fw::SafetensorsContents c;
  std::map<std::string, Value> args;  // case name -> its JSON arguments
};

const Fixture& fix() {
  static const Fixture f = [] {
    Fixture r;
    r.c = fw::load_with_metadata(FW_AUDIO_FIXTURE_DIR "/filtering.safetensors");
    for (auto& [k, v] : r.c.metadata)
      if (k != "generator") r.args[k] = fw::json::parse(v, "filtering.safetensors metadata " + k);
    return r;
  }();
  return f;
}

const Tensor& tensor(const std::string& key) {
  auto it = fix().c.tensors.find(key);
  if (it == fix().c.tensors.end()) throw std::runtime_error("fixture has no tensor " + key);
  return it->second;
}
bool has_tensor(const std::string& key) { return fix().c.tensors.count(key) > 0; }

const Value* find(const Value& o, const std::string& key) {
  for (auto& [k, v] : o.object)
    if (k == key) return &v;
  return nullptr;
}
bool has(const Value& o, const std::string& key) {
  const Value* v = find(o, key);
  return v && v->kind != Value::Null;
}
const Value& at(const Value& o, const std::string& key) {
  const Value* v = find(o, key);
  if (!v) throw std::runtime_error("fixture args have no key " + key);
  return *v;
}
double num(const Value& o, const std::string& key) { return std::stod(at(o, key).text); }
int64_t inum(const Value& o, const std::string& key) { return std::stoll(at(o, key).text); }
std::string str(const Value& o, const std::string& key) { return at(o, key).text; }
bool flag(const Value& o, const std::string& key) { return at(o, key).b; }
std::vector<int64_t> ints(const Value& o, const std::string& key) {
  std::vector<int64_t> r;
  for (auto& v : at(o, key).array) r.push_back(std::stoll(v.text));
  return r;
}
fw::ScalarType dtype_of(const Value& o) {
  std::string d = has(o, "dtype") ? str(o, "dtype") : "float32";
  return d == "float64" ? fw::kDouble : fw::kFloat;
}

// Cases whose "fn" is one of `fns`, by name.
std::vector<std::string> cases(std::initializer_list<const char*> fns) {
  std::set<std::string> want(fns.begin(), fns.end());
  std::vector<std::string> r;
  for (auto& [name, a] : fix().args)
    if (a.kind == Value::Object && has(a, "fn") && want.count(str(a, "fn"))) r.push_back(name);
  return r;
}

// The input a case describes: stacked shared signals (first `length` samples), cast and scaled,
// reshaped to shape + [length]; or a shared input tensor; or the case's own "x".
Tensor input(const std::string& name) {
  const Value& a = fix().args.at(name);
  if (has(a, "signals")) {
    int64_t len = has(a, "length") ? inum(a, "length") : -1;
    std::vector<Tensor> rows;
    for (auto& s : at(a, "signals").array) {
      Tensor t = tensor("signal/" + s.text);
      rows.push_back(len >= 0 ? t.narrow(1, 0, len) : t);
    }
    Tensor x = fw::cat(rows, 0).to(dtype_of(a));
    double scale = has(a, "scale") ? num(a, "scale") : 1.0;
    if (scale != 1.0) x = x * scale;
    if (has(a, "shape")) {
      auto s = ints(a, "shape");
      s.push_back(x.size(-1));
      x = x.reshape(s);
    }
    return x;
  }
  if (has(a, "input")) return tensor("input/" + str(a, "input")).to(dtype_of(a));
  return tensor(name + "/x");
}

// |actual - expected| <= atol + rtol |expected| elementwise, atol = atol_rel * max|expected| (or
// atol_rel itself for an all-zero reference). Reports the worst element.
::testing::AssertionResult close(const Tensor& actual, const Tensor& expected, double rtol, double atol_rel) {
  if (!actual.sizes().equals(expected.sizes())) {
    std::ostringstream os;
    os << "shape " << actual.sizes() << " != expected " << expected.sizes();
    return ::testing::AssertionFailure() << os.str();
  }
  if (actual.dtype() != expected.dtype())
    return ::testing::AssertionFailure() << "dtype " << fw::dtype_str(actual.dtype()) << " != expected "
                                         << fw::dtype_str(expected.dtype());
  Tensor a = actual.detach().to(fw::kDouble).contiguous().reshape({-1});
  Tensor e = expected.detach().to(fw::kDouble).contiguous().reshape({-1});
  const double* pa = a.data_ptr<double>();
  const double* pe = e.data_ptr<double>();
  double mx = 0;
  for (int64_t i = 0; i < e.numel(); i++) mx = std::max(mx, std::abs(pe[i]));
  double atol = mx > 0 ? atol_rel * mx : atol_rel;
  double worst = 0;
  int64_t wi = -1;
  for (int64_t i = 0; i < e.numel(); i++) {
    double d = std::abs(pa[i] - pe[i]);
    bool ok = d <= atol + rtol * std::abs(pe[i]);
    if (std::isnan(pa[i]) || std::isnan(pe[i])) ok = std::isnan(pa[i]) && std::isnan(pe[i]);
    double excess = ok ? 0 : (std::isnan(d) ? INFINITY : d / (atol + rtol * std::abs(pe[i])));
    if (excess > worst) worst = excess, wi = i;
  }
  if (wi < 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "element " << wi << ": " << pa[wi] << " vs expected " << pe[wi] << " (|diff| "
                                       << std::abs(pa[wi] - pe[wi]) << ", atol " << atol << ", rtol " << rtol << ", "
                                       << worst << "x the tolerance)";
}

// Default tolerances per dtype.
::testing::AssertionResult close_ref(const Tensor& actual, const Tensor& expected, double f32_rtol = 1e-4,
                                     double f32_atol = 1e-5) {
  if (expected.dtype() == fw::kDouble) return close(actual, expected, 1e-10, 1e-10);
  return close(actual, expected, f32_rtol, f32_atol);
}

std::string expect_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const fw::Error& e) {
    return e.what();
  }
  return "<no error>";
}
#define EXPECT_ERROR(stmt, fragment)                                          \
  do {                                                                        \
    std::string msg_ = expect_error([&] { (void)(stmt); });                   \
    EXPECT_NE(msg_.find(fragment), std::string::npos) << "message: " << msg_; \
  } while (0)

// Calls the biquad design a case names, passing only the parameters the case gives (so the others
// take their defaults).
Tensor run_biquad(const std::string& fn, const Value& a, const Tensor& x) {
  int64_t sr = has(a, "sample_rate") ? inum(a, "sample_rate") : 0;
  auto opt = [&](const char* k, double d) { return has(a, k) ? num(a, k) : d; };
  if (fn == "lowpass_biquad")
    return has(a, "Q") ? F::lowpass_biquad(x, sr, num(a, "cutoff_freq"), num(a, "Q"))
                       : F::lowpass_biquad(x, sr, num(a, "cutoff_freq"));
  if (fn == "highpass_biquad")
    return has(a, "Q") ? F::highpass_biquad(x, sr, num(a, "cutoff_freq"), num(a, "Q"))
                       : F::highpass_biquad(x, sr, num(a, "cutoff_freq"));
  if (fn == "bandpass_biquad")
    return has(a, "Q") ? F::bandpass_biquad(x, sr, num(a, "central_freq"), num(a, "Q"),
                                            has(a, "const_skirt_gain") && flag(a, "const_skirt_gain"))
                       : F::bandpass_biquad(x, sr, num(a, "central_freq"));
  if (fn == "bandreject_biquad")
    return has(a, "Q") ? F::bandreject_biquad(x, sr, num(a, "central_freq"), num(a, "Q"))
                       : F::bandreject_biquad(x, sr, num(a, "central_freq"));
  if (fn == "allpass_biquad")
    return has(a, "Q") ? F::allpass_biquad(x, sr, num(a, "central_freq"), num(a, "Q"))
                       : F::allpass_biquad(x, sr, num(a, "central_freq"));
  if (fn == "band_biquad")
    return has(a, "Q") ? F::band_biquad(x, sr, num(a, "central_freq"), num(a, "Q"), has(a, "noise") && flag(a, "noise"))
                       : F::band_biquad(x, sr, num(a, "central_freq"));
  if (fn == "bass_biquad")
    return has(a, "central_freq") ? F::bass_biquad(x, sr, num(a, "gain"), num(a, "central_freq"), opt("Q", 0.707))
                                  : F::bass_biquad(x, sr, num(a, "gain"));
  if (fn == "treble_biquad")
    return has(a, "central_freq") ? F::treble_biquad(x, sr, num(a, "gain"), num(a, "central_freq"), opt("Q", 0.707))
                                  : F::treble_biquad(x, sr, num(a, "gain"));
  if (fn == "equalizer_biquad")
    return has(a, "Q") ? F::equalizer_biquad(x, sr, num(a, "center_freq"), num(a, "gain"), num(a, "Q"))
                       : F::equalizer_biquad(x, sr, num(a, "center_freq"), num(a, "gain"));
  if (fn == "deemph_biquad") return F::deemph_biquad(x, sr);
  if (fn == "riaa_biquad") return F::riaa_biquad(x, sr);
  if (fn == "biquad")
    return F::biquad(x, num(a, "b0"), num(a, "b1"), num(a, "b2"), num(a, "a0"), num(a, "a1"), num(a, "a2"));
  throw std::runtime_error("unknown biquad " + fn);
}

// ---- fixture comparisons

TEST(AudioFiltering, FixtureHasCases) {
  EXPECT_GE(fix().args.size(), 160u);
  EXPECT_EQ(fix().c.metadata.at("generator").rfind("torch 1.13", 0), 0u);
}

TEST(AudioFiltering, BiquadsMatchTorchaudio) {
  auto names = cases({"lowpass_biquad", "highpass_biquad", "bandpass_biquad", "bandreject_biquad", "allpass_biquad",
                      "band_biquad", "bass_biquad", "treble_biquad", "equalizer_biquad", "deemph_biquad", "riaa_biquad",
                      "biquad"});
  EXPECT_GE(names.size(), 35u);
  for (auto& name : names) {
    SCOPED_TRACE(name);
    const Value& a = fix().args.at(name);
    Tensor x = input(name);
    EXPECT_TRUE(close_ref(run_biquad(str(a, "fn"), a, x), tensor(name + "/out")));
  }
}

TEST(AudioFiltering, LfilterFiltfiltMatchTorchaudio) {
  auto names = cases({"lfilter", "filtfilt"});
  EXPECT_GE(names.size(), 20u);
  for (auto& name : names) {
    SCOPED_TRACE(name);
    const Value& a = fix().args.at(name);
    Tensor x = input(name), ac = tensor(name + "/a"), bc = tensor(name + "/b");
    Tensor y = str(a, "fn") == "lfilter" ? F::lfilter(x, ac, bc, flag(a, "clamp"), flag(a, "batching"))
                                         : F::filtfilt(x, ac, bc, flag(a, "clamp"));
    EXPECT_TRUE(close_ref(y, tensor(name + "/out")));
  }
}

TEST(AudioFiltering, EmphasisGainDitherMatchTorchaudio) {
  auto names = cases({"preemphasis", "deemphasis", "gain", "dither"});
  EXPECT_GE(names.size(), 11u);
  for (auto& name : names) {
    SCOPED_TRACE(name);
    const Value& a = fix().args.at(name);
    std::string fn = str(a, "fn");
    Tensor x = input(name), y;
    if (fn == "preemphasis") y = F::preemphasis(x, num(a, "coeff"));
    if (fn == "deemphasis") y = F::deemphasis(x, num(a, "coeff"));
    if (fn == "gain") y = F::gain(x, num(a, "gain_db"));
    if (fn == "dither") y = F::dither(x, str(a, "density_function"), flag(a, "noise_shaping"));
    if (fn == "dither") {
      // Quantised to 1/32768 steps: an element next to a rounding tie may land one step away from
      // torchaudio's (x * 32766 is float32 arithmetic in both, but the tie is a coin toss on the last
      // bit). Allow one step, on at most a handful of samples.
      Tensor d = (y - tensor(name + "/out")).abs();
      EXPECT_LE(d.max().item<double>(), 1.0 / 32768 * 1.0001);
      EXPECT_LE((d > 1e-7).sum().item<int64_t>(), 3);
    } else {
      EXPECT_TRUE(close_ref(y, tensor(name + "/out")));
    }
  }
}

TEST(AudioFiltering, ConvolveMatchesTorchaudio) {
  auto names = cases({"convolve", "fftconvolve"});
  EXPECT_GE(names.size(), 60u);
  for (auto& name : names) {
    SCOPED_TRACE(name);
    const Value& a = fix().args.at(name);
    auto operand = [&](const char* k) {
      std::string key = str(a, k);
      return tensor(key.find('/') == std::string::npos ? "input/" + key : key);
    };
    Tensor x = operand("x"), y = operand("y");
    Tensor r = str(a, "fn") == "convolve" ? F::convolve(x, y, str(a, "mode")) : F::fftconvolve(x, y, str(a, "mode"));
    EXPECT_TRUE(close_ref(r, tensor(name + "/out")));
  }
}

TEST(AudioFiltering, AddNoiseMatchesDefinition) {
  auto names = cases({"add_noise"});
  EXPECT_EQ(names.size(), 3u);
  for (auto& name : names) {
    SCOPED_TRACE(name);
    Tensor x = has_tensor(name + "/x") ? tensor(name + "/x") : input(name);
    Tensor noise = has_tensor(name + "/noise") ? tensor(name + "/noise") : tensor("input/noise");
    std::optional<Tensor> lengths;
    if (has_tensor(name + "/lengths")) lengths = tensor(name + "/lengths");
    EXPECT_TRUE(close_ref(F::add_noise(x, noise, tensor(name + "/snr"), lengths), tensor(name + "/out")));
  }
}

TEST(AudioFiltering, AddNoiseReachesTheRequestedSnr) {
  fw::manual_seed(5);
  Tensor x = fw::randn({2, 3, 400}, fw::kDouble), n = fw::randn({2, 3, 400}, fw::kDouble);
  Tensor snr = fw::tensor({{10.0, 0.0, -5.0}, {3.0, 20.0, 40.0}}, fw::kDouble);
  Tensor y = F::add_noise(x, n, snr);
  Tensor scaled = y - x;
  Tensor got = (x.pow(2).sum({-1}) / scaled.pow(2).sum({-1})).log10() * 10;
  EXPECT_TRUE(close(got, snr, 0, 1e-9));
  // lengths: only the first lengths[i] samples count
  Tensor lengths = fw::tensor({{400, 100, 1}, {50, 399, 200}}, fw::kLong);
  Tensor yl = F::add_noise(x, n, snr, lengths);
  for (int64_t i = 0; i < 2; i++)
    for (int64_t j = 0; j < 3; j++) {
      int64_t L = lengths[i][j].item<int64_t>();
      Tensor xs = x[i][j].narrow(0, 0, L), ns = (yl - x)[i][j].narrow(0, 0, L);
      double s = 10 * std::log10(xs.pow(2).sum().item<double>() / ns.pow(2).sum().item<double>());
      EXPECT_NEAR(s, snr[i][j].item<double>(), 1e-9);
    }
}

TEST(AudioFiltering, ResampleMatchesTorchaudio) {
  auto names = cases({"resample"});
  EXPECT_GE(names.size(), 20u);
  for (auto& name : names) {
    SCOPED_TRACE(name);
    const Value& a = fix().args.at(name);
    Tensor x = input(name);
    std::optional<double> beta;
    if (has(a, "beta")) beta = num(a, "beta");
    Tensor y = F::resample(x, inum(a, "orig_freq"), inum(a, "new_freq"), inum(a, "lowpass_filter_width"),
                           num(a, "rolloff"), str(a, "resampling_method"), beta);
    EXPECT_TRUE(close_ref(y, tensor(name + "/out")));
  }
}

TEST(AudioFiltering, ResampleKernelMatchesTorchaudio) {
  auto names = cases({"sinc_resample_kernel"});
  EXPECT_EQ(names.size(), 12u);
  for (auto& name : names) {
    SCOPED_TRACE(name);
    const Value& a = fix().args.at(name);
    std::optional<double> beta;
    if (has(a, "beta")) beta = num(a, "beta");
    std::string d = str(a, "dtype");
    std::optional<fw::ScalarType> dt;
    if (d == "float32") dt = fw::kFloat;
    if (d == "float64") dt = fw::kDouble;
    auto [k, width] = F::sinc_resample_kernel(inum(a, "orig_freq"), inum(a, "new_freq"), inum(a, "gcd"),
                                              inum(a, "lowpass_filter_width"), num(a, "rolloff"),
                                              str(a, "resampling_method"), beta, dt);
    EXPECT_EQ(width, inum(a, "width"));
    EXPECT_EQ(k.size(0), inum(a, "rows"));
    Tensor rows = k.index_select(0, fw::arange(0, k.size(0), inum(a, "row_stride"), fw::kLong));
    // Outside the filter's support torchaudio keeps sin(k pi) rounding residue (< 1e-12 of the peak),
    // fw exact zeros: an absolute tolerance of 1e-9 of the peak covers it. The Kaiser normaliser
    // i0(beta) is evaluated by torchaudio on a float32 tensor (Cephes' float Chebyshev series, a few
    // ulp), by fw as the float32-rounded exact value, so float64 Kaiser kernels agree to ~1e-7.
    bool kaiser = str(a, "resampling_method") == "sinc_interp_kaiser";
    if (k.dtype() == fw::kDouble)
      EXPECT_TRUE(close(rows, tensor(name + "/out"), kaiser ? 5e-7 : 1e-12, 1e-9));
    else
      EXPECT_TRUE(close(rows, tensor(name + "/out"), 1e-5, 1e-7));
  }
}

// ---- behaviour

TEST(AudioFiltering, LfilterBatchingMatchesPerItemCalls) {
  fw::manual_seed(1);
  Tensor x = fw::randn({2, 3, 300}) * 0.3;
  Tensor a = fw::tensor({{1.0, -1.6, 0.8}, {1.0, -0.5, 0.1}, {2.0, 0.3, 0.2}});
  Tensor b = fw::tensor({{0.05, 0.1, 0.05}, {0.5, 0.2, 0.0}, {0.2, -0.1, 0.4}});
  Tensor y = F::lfilter(x, a, b, false);
  for (int64_t i = 0; i < 2; i++)
    for (int64_t c = 0; c < 3; c++)
      EXPECT_TRUE(close(y[i][c], F::lfilter(x[i][c], a[c], b[c], false), 0, 0)) << i << "," << c;
  // batching=false: every filter on every signal -> (2, 3, 3, 300)
  Tensor z = F::lfilter(x, a, b, false, false);
  ASSERT_EQ(z.sizes().vec(), (std::vector<int64_t>{2, 3, 3, 300}));
  for (int64_t f = 0; f < 3; f++) EXPECT_TRUE(close(z.select(2, f), F::lfilter(x, a[f], b[f], false), 0, 0)) << f;
  // 1-D coefficients over any leading shape; a non-contiguous input
  Tensor xt = fw::randn({300, 4}).t();
  Tensor w = F::lfilter(xt, a[0], b[0]);
  for (int64_t r = 0; r < 4; r++) EXPECT_TRUE(close(w[r], F::lfilter(xt[r].contiguous(), a[0], b[0]), 0, 0));
  // 1-D waveform, empty time axis
  EXPECT_EQ(F::lfilter(fw::zeros({0}), a[0], b[0]).numel(), 0);
  EXPECT_EQ(F::lfilter(fw::zeros({5}), a[0], b[0]).sizes().vec(), (std::vector<int64_t>{5}));
}

TEST(AudioFiltering, BiquadBatchMatchesPerItemCalls) {
  fw::manual_seed(2);
  Tensor x = fw::randn({3, 2, 500}) * 0.2;
  Tensor y = F::equalizer_biquad(x, 16000, 1500.0, 4.0, 1.3);
  for (int64_t i = 0; i < 3; i++)
    for (int64_t c = 0; c < 2; c++)
      EXPECT_TRUE(close(y[i][c], F::equalizer_biquad(x[i][c], 16000, 1500.0, 4.0, 1.3), 0, 0));
  // tensor parameters give the same result as numbers
  Tensor yt = F::equalizer_biquad(x, 16000, fw::scalar_tensor(1500.0), fw::scalar_tensor(4.0), fw::tensor({1.3}));
  EXPECT_TRUE(close(yt, y, 0, 0));
  // filtfilt of a batch
  Tensor ff = F::filtfilt(x, fw::tensor({1.0, -0.5, 0.2}), fw::tensor({0.3, 0.2, 0.1}));
  for (int64_t i = 0; i < 3; i++)
    EXPECT_TRUE(close(ff[i], F::filtfilt(x[i], fw::tensor({1.0, -0.5, 0.2}), fw::tensor({0.3, 0.2, 0.1})), 0, 0));
}

TEST(AudioFiltering, ResampleBatchMatchesPerItemCalls) {
  fw::manual_seed(3);
  Tensor x = fw::randn({2, 3, 4410}) * 0.1;
  for (auto [o, n] : std::vector<std::pair<int64_t, int64_t>>{{44100, 16000}, {48000, 16000}, {8000, 16000}}) {
    Tensor y = F::resample(x, o, n);
    for (int64_t i = 0; i < 2; i++)
      for (int64_t c = 0; c < 3; c++) EXPECT_TRUE(close(y[i][c], F::resample(x[i][c], o, n), 0, 0)) << o << "->" << n;
  }
  // identical rates return the input itself
  EXPECT_TRUE(F::resample(x, 16000, 16000).is_same(x));
  // short inputs (shorter than the kernel) and a single sample
  for (int64_t len : {1, 2, 7, 40}) {
    Tensor s = fw::randn({len});
    Tensor y = F::resample(s, 44100, 16000);
    EXPECT_EQ(y.size(0), (16000 / 100 * len + 441 - 1) / 441);
    Tensor sg = s.clone().requires_grad_();
    EXPECT_TRUE(close(F::resample(sg, 44100, 16000), y, 1e-5, 1e-6)) << len;
  }
}

TEST(AudioFiltering, ResampleFastPathMatchesConvPath) {
  // Without autograd resample runs the polyphase loop; with a waveform that requires grad it runs
  // torchaudio's conv1d formulation. Both must agree (to float32 rounding).
  fw::manual_seed(4);
  for (auto dt : {fw::kFloat, fw::kDouble})
    for (auto [o, n] : std::vector<std::pair<int64_t, int64_t>>{
             {44100, 16000}, {48000, 16000}, {16000, 22050}, {8000, 16000}, {16000, 8000}, {48000, 44100}}) {
      Tensor x = fw::randn({2, 2000}, dt) * 0.3;
      for (std::string m : {"sinc_interp_hann", "sinc_interp_kaiser"}) {
        Tensor fast = F::resample(x, o, n, 6, 0.99, m);
        Tensor slow = F::resample(x.clone().requires_grad_(), o, n, 6, 0.99, m);
        EXPECT_TRUE(slow.requires_grad());
        EXPECT_TRUE(dt == fw::kFloat ? close(fast, slow, 1e-5, 1e-6) : close(fast, slow, 1e-12, 1e-12))
            << o << "->" << n << " " << m;
      }
    }
  // A kernel from sinc_resample_kernel through apply_sinc_resample_kernel (what transforms.Resample
  // does): built in float64, it is the exact kernel rounded once; resample() builds it in float32
  // arithmetic as torchaudio does, where t = (-i/n + j/o) * base carries ~1e-5 absolute error for
  // 441 -> 160, so the two agree to ~1e-4 of the signal's peak only.
  Tensor x = fw::randn({3, 1000});
  auto [k, w] = F::sinc_resample_kernel(44100, 16000, 100);
  EXPECT_EQ(k.dtype(), fw::kFloat);
  Tensor y = F::apply_sinc_resample_kernel(x, 44100, 16000, 100, k, w);
  EXPECT_TRUE(close(y, F::resample(x, 44100, 16000), 1e-3, 1e-4));
  // Even the float64 (dtype nullopt) kernel takes its -i/n term from float32 arithmetic (torchaudio's
  // int64 arange / int), so it is within ~1e-4 of the all-float64 kernel, not exact.
  auto [k64, w64] = F::sinc_resample_kernel(44100, 16000, 100, 6, 0.99, "sinc_interp_hann", std::nullopt, fw::kDouble);
  EXPECT_EQ(w64, w);
  EXPECT_TRUE(close(k, k64.to(fw::kFloat), 1e-3, 1e-4));
  EXPECT_TRUE(close(y, F::resample(x.to(fw::kDouble), 44100, 16000).to(fw::kFloat), 1e-3, 1e-4));
}

TEST(AudioFiltering, DitherIsDeterministicAndQuantised) {
  fw::manual_seed(0);
  Tensor x = fw::randn({3, 1000}) * 0.05;  // small: x * 32766 stays exact to ~5e-4 in float32
  for (std::string d : {"TPDF", "RPDF", "GPDF"}) {
    SCOPED_TRACE(d);
    fw::manual_seed(11);
    Tensor y1 = F::dither(x, d);
    fw::manual_seed(11);
    Tensor y2 = F::dither(x, d);
    EXPECT_TRUE(close(y1, y2, 0, 0));
    ASSERT_EQ(y1.sizes().vec(), x.sizes().vec());
    // y = round(32766 x + d) / 32768: on the 1/32768 grid
    Tensor steps = y1.to(fw::kDouble) * 32768;
    EXPECT_TRUE(close(steps, fw::round(steps), 0, 0));
    Tensor dv = steps - x.to(fw::kDouble) * 32766;  // d plus a rounding residual in [-0.5, 0.5]
    if (d == "TPDF") {
      // d is the Bartlett window over time, in [0, 1]
      EXPECT_LE(dv.max().item<double>(), 1.5 + 2e-3);
      EXPECT_GE(dv.min().item<double>(), -0.5 - 2e-3);
    } else {
      // one constant d fits every sample
      double lo = dv.max().item<double>() - 0.5, hi = dv.min().item<double>() + 0.5;
      EXPECT_LE(lo, hi + 2e-3);
      if (d == "RPDF") {
        // d + 0.5 is a sample of the waveform, from a channel other than the last (as torchaudio)
        double c = (lo + hi) / 2 + 0.5;
        EXPECT_LT((x.narrow(0, 0, 2) - c).abs().min().item<double>(), 2e-3);
      }
    }
  }
  // different seeds pick different samples
  std::set<double> picked;
  for (uint64_t seed = 0; seed < 8; seed++) {
    fw::manual_seed(seed);
    picked.insert(F::dither(x, "RPDF").sum().item<double>());
  }
  EXPECT_GT(picked.size(), 1u);
  // GPDF on a single channel works (torchaudio's randint(0) raises there)
  EXPECT_EQ(F::dither(x.narrow(0, 0, 1), "GPDF").size(1), 1000);
  // noise shaping adds the previous sample's quantisation error
  fw::manual_seed(3);
  Tensor plain = F::dither(x, "RPDF");
  fw::manual_seed(3);
  Tensor shaped = F::dither(x, "RPDF", true);
  Tensor err = plain - x;
  Tensor expect = plain + fw::cat({fw::zeros({3, 1}), err.narrow(1, 0, 999)}, 1);
  EXPECT_TRUE(close(shaped, expect, 0, 0));
}

TEST(AudioFiltering, GainAndEmphasis) {
  Tensor x = fw::randn({2, 100});
  EXPECT_TRUE(F::gain(x, 0.0).is_same(x));
  EXPECT_TRUE(close(F::gain(x, 20.0), x * 10.0, 1e-6, 0));
  EXPECT_TRUE(close(F::gain(x), x * std::pow(10.0, 1.0 / 20), 1e-6, 0));
  // deemphasis inverts preemphasis (up to the clamp, not reached here)
  Tensor s = x * 0.01;
  EXPECT_TRUE(close(F::deemphasis(F::preemphasis(s)), s, 1e-4, 1e-5));
  EXPECT_TRUE(close(F::preemphasis(fw::ones({1})), fw::ones({1}), 0, 0));
}

TEST(AudioFiltering, ConvolveBroadcastsAndSwaps) {
  fw::manual_seed(6);
  Tensor x = fw::randn({1, 3, 50}, fw::kDouble), y = fw::randn({4, 1, 7}, fw::kDouble);
  Tensor r = F::convolve(x, y);
  ASSERT_EQ(r.sizes().vec(), (std::vector<int64_t>{4, 3, 56}));
  for (int64_t i = 0; i < 4; i++)
    for (int64_t j = 0; j < 3; j++) {
      // direct definition
      Tensor a = x[0][j], b = y[i][0];
      std::vector<double> ref(56, 0.0);
      for (int64_t p = 0; p < 50; p++)
        for (int64_t q = 0; q < 7; q++) ref[p + q] += a[p].item<double>() * b[q].item<double>();
      EXPECT_TRUE(close(r[i][j], fw::tensor(ref, fw::kDouble), 1e-12, 1e-12));
    }
  // convolution commutes; "same" keeps the first operand's length, "valid" the overlap; the FFT path
  // agrees with the direct one
  EXPECT_TRUE(close(F::convolve(y, x), r, 1e-12, 1e-12));
  for (std::string mode : {"full", "valid", "same"}) {
    EXPECT_TRUE(close(F::fftconvolve(x, y, mode), F::convolve(x, y, mode), 1e-10, 1e-10)) << mode;
    EXPECT_TRUE(close(F::fftconvolve(y, x, mode), F::convolve(y, x, mode), 1e-10, 1e-10)) << mode;
  }
  EXPECT_EQ(F::convolve(x, y, "same").size(-1), 50);
  EXPECT_EQ(F::convolve(y, x, "same").size(-1), 7);
  EXPECT_EQ(F::convolve(x, y, "valid").size(-1), 44);
  EXPECT_EQ(F::convolve(y, x, "valid").size(-1), 44);
}

// ---- errors

TEST(AudioFiltering, ErrorMessages) {
  Tensor x = fw::zeros({2, 100});
  Tensor a3 = fw::tensor({1.0, 0.1, 0.2}), b3 = fw::tensor({1.0, 0.0, 0.0});
  EXPECT_ERROR(F::lfilter(x, a3, fw::tensor({1.0, 0.0})),
               "[audio::lfilter] Expected coeffs to be the same size. Found: a_coeffs size: [3], b_coeffs size: [2]");
  EXPECT_ERROR(F::lfilter(x, fw::zeros({1, 1, 3}), fw::zeros({1, 1, 3})),
               "[audio::lfilter] Expected coeffs to have 1 or 2");
  EXPECT_ERROR(F::lfilter(x, fw::zeros({3, 3}), fw::zeros({3, 3})),
               "Expected number of batches in waveform and coeffs to be the same. Found: coeffs batches: 3, "
               "waveform batches: 2");
  EXPECT_ERROR(
      F::lfilter(fw::zeros({100}), fw::zeros({2, 3}), fw::zeros({2, 3})),
      "[audio::lfilter] With 2-D coeffs and batching=true the waveform needs shape (..., 2, time). Found: [100]");
  EXPECT_ERROR(F::lfilter(x, a3.to(fw::kDouble), b3),
               "[audio::lfilter] Expected coeffs of the waveform's dtype float32");
  EXPECT_ERROR(F::lfilter(x.to(fw::kLong), a3, b3),
               "[audio::lfilter] Expected a float32 or float64 waveform, got int64");
  EXPECT_ERROR(F::lfilter(x, fw::zeros({0}), fw::zeros({0})), "[audio::lfilter] Expected n_order to be positive");
  EXPECT_ERROR(F::filtfilt(x, a3, fw::tensor({1.0})), "[audio::lfilter] Expected coeffs to be the same size");
  EXPECT_ERROR(F::lowpass_biquad(x, 16000, fw::tensor({1.0, 2.0})),
               "[audio::biquad] a filter parameter tensor must have one element, got shape [2]");
  EXPECT_ERROR(F::highpass_biquad(x, 0, 100.0), "[audio::highpass_biquad] sample_rate must be positive, got 0");
  EXPECT_ERROR(F::deemph_biquad(x, 16000), "[audio::deemph_biquad] Sample rate must be 44100 (audio-CD) or 48000");
  EXPECT_ERROR(F::riaa_biquad(x, 22050),
               "[audio::riaa_biquad] Sample rate must be 44.1k, 48k, 88.2k, or 96k, got 22050");
  EXPECT_ERROR(F::convolve(x, fw::zeros({3})),
               "[audio::convolve] The operands must be the same dimension (got 2 and 1)");
  EXPECT_ERROR(F::convolve(x, fw::zeros({3, 5})),
               "[audio::convolve] Leading dimensions of x and y are not broadcastable (got [2, 100] and [3, 5])");
  EXPECT_ERROR(F::convolve(x, x, "circular"), "[audio::convolve] Unrecognized mode value 'circular'");
  EXPECT_ERROR(F::fftconvolve(x, fw::zeros({3, 5}), "full"),
               "[audio::fftconvolve] Leading dimensions of x and y are not broadcastable (got [2, 100] and [3, 5])");
  EXPECT_ERROR(F::fftconvolve(x.to(fw::kLong), x, "full"), "[audio::fftconvolve] Expected float32 or float64 operands");
  EXPECT_ERROR(F::dither(x, "XPDF"), "[audio::dither] density_function must be");
  EXPECT_ERROR(F::add_noise(x, x, fw::zeros({2, 1})), "[audio::add_noise] Input leading dimensions don't match");
  EXPECT_ERROR(F::add_noise(x, fw::zeros({2, 99}), fw::zeros({2})),
               "[audio::add_noise] Length dimensions of waveform and noise don't match (got 100 and 99).");
  EXPECT_ERROR(F::resample(x, -1, 16000),
               "[audio::resample] Original frequency and desired frequency should be positive");
  EXPECT_ERROR(F::resample(x.to(fw::kLong), 8000, 16000),
               "[audio::resample] Expected floating point type (float32 or float64) for waveform tensor, but received "
               "int64.");
  EXPECT_ERROR(F::resample(x, 8000, 16000, 6, 0.99, "linear"),
               "[audio::sinc_resample_kernel] Invalid resampling method: \"linear\"");
  EXPECT_ERROR(F::resample(x, 8000, 16000, 0),
               "[audio::sinc_resample_kernel] Low pass filter width should be positive, got 0");
  EXPECT_ERROR(F::sinc_resample_kernel(44100, 16000, 7), "gcd=7 must be a positive common divisor");
  auto [k, w] = F::sinc_resample_kernel(44100, 16000, 100);
  EXPECT_ERROR(F::apply_sinc_resample_kernel(x, 48000, 16000, 16000, k, w),
               "[audio::resample] Expected a kernel of shape [1, 1, ");
  EXPECT_ERROR(F::apply_sinc_resample_kernel(x.to(fw::kDouble), 44100, 16000, 100, k, w),
               "[audio::resample] kernel dtype float32 does not match the waveform's float64");
}

// ---- gradients (float64)

TEST(AudioFiltering, LfilterGradcheck) {
  fw::manual_seed(7);
  auto opts = fw::TensorOptions(fw::kDouble).requires_grad(true);
  Tensor x = (fw::randn({2, 13}, fw::kDouble) * 0.3).requires_grad_();
  Tensor a = fw::tensor({1.3, -0.6, 0.25}, opts), b = fw::tensor({0.4, 0.2, -0.3}, opts);
  EXPECT_TRUE(fw::autograd::gradcheck(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {F::lfilter(in[0], in[1], in[2], false)}; },
      {x, a, b}));
  // clamp on (values stay inside (-1, 1) so the clamp is the identity there)
  EXPECT_TRUE(fw::autograd::gradcheck(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {F::lfilter(in[0], in[1], in[2], true)}; },
      {x, a, b}));
  // 2-D (per-channel) coefficients, order 4, a 3-D batch
  Tensor x3 = (fw::randn({2, 3, 9}, fw::kDouble) * 0.3).requires_grad_();
  Tensor A = fw::tensor({{1.0, -0.5, 0.1, 0.05}, {1.0, 0.3, 0.2, 0.0}, {0.8, 0.0, -0.1, 0.02}}, opts);
  Tensor B = fw::tensor({{0.5, 0.2, 0.0, 0.1}, {0.2, -0.1, 0.4, 0.3}, {1.0, 0.5, 0.25, 0.125}}, opts);
  EXPECT_TRUE(fw::autograd::gradcheck(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {F::lfilter(in[0], in[1], in[2], false)}; },
      {x3, A, B}));
  // only some inputs requiring grad; filtfilt
  Tensor ac = a.detach();
  EXPECT_TRUE(fw::autograd::gradcheck(
      [ac](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {F::filtfilt(in[0], ac, in[1], false)}; },
      {x, b}));
  // second order, through the hand-written vjp
  EXPECT_TRUE(fw::autograd::gradgradcheck(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {F::lfilter(in[0], in[1], in[2], false)}; },
      {x.detach().narrow(1, 0, 6).contiguous().requires_grad_(), a, b}));
}

TEST(AudioFiltering, LfilterBackwardAccumulatesIntoLeaves) {
  fw::manual_seed(8);
  Tensor x = (fw::randn({3, 50}, fw::kDouble) * 0.2).requires_grad_();
  Tensor a = fw::tensor({1.0, -0.9, 0.3}, fw::TensorOptions(fw::kDouble).requires_grad(true));
  Tensor b = fw::tensor({0.1, 0.2, 0.1}, fw::TensorOptions(fw::kDouble).requires_grad(true));
  Tensor y = F::lfilter(x, a, b, false);
  (y * y).sum().backward();
  ASSERT_TRUE(x.grad().defined() && a.grad().defined() && b.grad().defined());
  EXPECT_FALSE(x.grad().requires_grad());
  // the same filter applied twice to x: the two paths' gradients add up to the same x gradient
  Tensor gx = x.grad().clone();
  x.set_grad({});
  Tensor ad = a.detach(), bd = b.detach();
  (F::lfilter(x, ad, bd, false) * F::lfilter(x, ad, bd, false)).sum().backward();
  EXPECT_TRUE(close(x.grad(), gx, 1e-12, 1e-12));
  EXPECT_FALSE(ad.grad().defined());
}

TEST(AudioFiltering, BiquadGradcheck) {
  auto opts = fw::TensorOptions(fw::kDouble).requires_grad(true);
  fw::manual_seed(9);
  Tensor x = (fw::randn({2, 11}, fw::kDouble) * 0.2).requires_grad_();
  Tensor fc = fw::tensor({1200.0}, opts), q = fw::scalar_tensor(0.9, opts);
  EXPECT_TRUE(fw::autograd::gradcheck(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
        return {F::lowpass_biquad(in[0], 16000, in[1], in[2])};
      },
      {x, fc, q}, 1e-6, 1e-5, 1e-3));
  Tensor g = fw::scalar_tensor(5.0, opts);
  EXPECT_TRUE(fw::autograd::gradcheck(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {F::bass_biquad(in[0], 16000, in[1])}; },
      {x, g}));
  EXPECT_TRUE(fw::autograd::gradcheck(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
        return {F::band_biquad(in[0], 16000, in[1], 2.0, true)};
      },
      {x, fw::tensor({900.0}, opts)}));
}

TEST(AudioFiltering, ConvolveAndResampleGradcheck) {
  fw::manual_seed(10);
  Tensor x = fw::randn({2, 1, 9}, fw::kDouble).requires_grad_();
  Tensor y = fw::randn({1, 3, 4}, fw::kDouble).requires_grad_();
  for (std::string mode : {"full", "valid", "same"}) {
    EXPECT_TRUE(fw::autograd::gradcheck(
        [mode](const std::vector<Tensor>& in) -> std::vector<Tensor> {
          return {F::convolve(in[0], in[1], mode), F::fftconvolve(in[0], in[1], mode)};
        },
        {x, y}))
        << mode;
  }
  Tensor w = fw::randn({2, 40}, fw::kDouble).requires_grad_();
  EXPECT_TRUE(fw::autograd::gradcheck(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> { return {F::resample(in[0], 48000, 16000, 4)}; }, {w}));
  EXPECT_TRUE(fw::autograd::gradcheck(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
        return {F::resample(in[0], 8000, 11025, 3, 0.9, "sinc_interp_kaiser")};
      },
      {w}));
  Tensor p = fw::randn({2, 30}, fw::kDouble).requires_grad_();
  EXPECT_TRUE(fw::autograd::gradcheck(
      [](const std::vector<Tensor>& in) -> std::vector<Tensor> {
        return {F::preemphasis(in[0], 0.9), F::deemphasis(in[0] * 0.1, 0.5),
                F::add_noise(in[0], in[0].flip({-1}) + 1, fw::tensor({3.0, 8.0}, fw::kDouble))};
      },
      {p}));
}

// ---- timing (disabled; run by hand, see the top of the file)

TEST(AudioFiltering, DISABLED_ResampleTiming) {
  fw::manual_seed(0);
  for (auto [o, n] : std::vector<std::pair<int64_t, int64_t>>{{44100, 16000}, {48000, 16000}}) {
    Tensor x = fw::randn({1, o * 60}) * 0.1;
    F::resample(x, o, n);
    int reps = 10;
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; r++) F::resample(x, o, n);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps;
    std::printf("resample 60 s %lld -> %lld: %.2f ms per call (%d threads)\n", (long long)o, (long long)n, ms,
                fw::get_num_threads());
  }
}

}  // namespace
