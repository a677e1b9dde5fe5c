// fw::audio::kaldi against torchaudio.compliance.kaldi (tests/fixtures/audio/gen_kaldi.py): every
// option family, short signals both ways of snip_edges, batching, and error messages.
#include <gtest/gtest.h>

#include <fw/audio.h>

#include "tests/audio/audio_fixture.h"

using fw::Tensor;
using fwtest::audio::Case;
using fwtest::audio::FixtureFile;
namespace K = fw::audio::kaldi;

namespace {

const FixtureFile& fix() {
  static FixtureFile f("kaldi");
  return f;
}

// Applies the case's options (the keys torchaudio takes) to any of the option structs.
template <class O>
void apply_frame(const Case& c, O& o) {
  if (c.has("blackman_coeff")) o.blackman_coeff(c.num("blackman_coeff"));
  if (c.has("energy_floor")) o.energy_floor(c.num("energy_floor"));
  if (c.has("frame_length")) o.frame_length(c.num("frame_length"));
  if (c.has("frame_shift")) o.frame_shift(c.num("frame_shift"));
  if (c.has("min_duration")) o.min_duration(c.num("min_duration"));
  if (c.has("preemphasis_coefficient")) o.preemphasis_coefficient(c.num("preemphasis_coefficient"));
  if (c.has("raw_energy")) o.raw_energy(c.flag("raw_energy"));
  if (c.has("remove_dc_offset")) o.remove_dc_offset(c.flag("remove_dc_offset"));
  if (c.has("round_to_power_of_two")) o.round_to_power_of_two(c.flag("round_to_power_of_two"));
  if (c.has("sample_frequency")) o.sample_frequency(c.num("sample_frequency"));
  if (c.has("snip_edges")) o.snip_edges(c.flag("snip_edges"));
  if (c.has("subtract_mean")) o.subtract_mean(c.flag("subtract_mean"));
  if (c.has("window_type")) o.window_type(c.str("window_type"));
  if (c.has("dither")) o.dither(c.num("dither"));
}
template <class O>
void apply_mel(const Case& c, O& o) {
  if (c.has("high_freq")) o.high_freq(c.num("high_freq"));
  if (c.has("low_freq")) o.low_freq(c.num("low_freq"));
  if (c.has("htk_compat")) o.htk_compat(c.flag("htk_compat"));
  if (c.has("num_mel_bins")) o.num_mel_bins(c.i("num_mel_bins"));
  if (c.has("use_energy")) o.use_energy(c.flag("use_energy"));
  if (c.has("vtln_high")) o.vtln_high(c.num("vtln_high"));
  if (c.has("vtln_low")) o.vtln_low(c.num("vtln_low"));
  if (c.has("vtln_warp")) o.vtln_warp(c.num("vtln_warp"));
}
K::FbankOptions fbank_opts(const Case& c) {
  K::FbankOptions o;
  apply_frame(c, o);
  apply_mel(c, o);
  if (c.has("use_log_fbank")) o.use_log_fbank(c.flag("use_log_fbank"));
  if (c.has("use_power")) o.use_power(c.flag("use_power"));
  return o;
}

// fw's float64 features equal torchaudio's float64 ones (to the rounding of the float32 mel banks,
// DCT and lifter both libraries build), and fw's float32 features are no worse than torchaudio's
// float32 ones against that float64 truth: max error <= max(tol, 3 x torchaudio's max error) and
// RMS error <= 2 x torchaudio's RMS error + tol / 10, with tol 1e-3 for log outputs and 1e-5 of the
// largest value for linear ones. Quiet bands make float32 log features noisy in both libraries
// (up to ~0.05 in torchaudio for a chirp's empty bands; see gen_kaldi.py).
template <class Fn>
void expect_feature(const Case& c, Fn fn, bool log_domain = true) {
  const Tensor& sig = fix().signal(c.str("signal"));
  const Tensor& ref = fix().out(c, "ref");
  const Tensor& t32 = fix().out(c, "out");
  Tensor y64 = fn(sig.to(fw::kDouble));
  FW_AUDIO_EXPECT_CLOSE(c, y64, ref, 1e-6, 1e-6);
  Tensor y32 = fn(sig);
  ASSERT_EQ(y32.dtype(), fw::kFloat) << c.name;
  ASSERT_EQ(y32.sizes().vec(), ref.sizes().vec()) << c.name;
  if (ref.numel() == 0) return;
  double tol = log_domain ? 1e-3 : 1e-5 * ref.abs().max().item<double>();
  Tensor e_fw = (y32.to(fw::kDouble) - ref).abs(), e_ta = (t32.to(fw::kDouble) - ref).abs();
  double max_fw = e_fw.max().item<double>(), max_ta = e_ta.max().item<double>();
  double rms_fw = e_fw.pow(2).mean().sqrt().item<double>(), rms_ta = e_ta.pow(2).mean().sqrt().item<double>();
  EXPECT_LE(max_fw, std::max(tol, 3 * max_ta)) << c.name << ": max float32 error " << max_fw << " vs torchaudio's "
                                               << max_ta;
  EXPECT_LE(rms_fw, 2 * rms_ta + tol / 10) << c.name << ": RMS float32 error " << rms_fw << " vs torchaudio's "
                                           << rms_ta;
}

}  // namespace

TEST(AudioKaldi, Fbank) {
  int n = 0;
  for (const Case& c : fix().cases("fbank_")) {
    expect_feature(c, [&](const Tensor& x) { return K::fbank(x, fbank_opts(c)); }, c.flag("use_log_fbank", true));
    n++;
  }
  EXPECT_GE(n, 18);
}

TEST(AudioKaldi, Mfcc) {
  for (const Case& c : fix().cases("mfcc_")) {
    K::MfccOptions o;
    apply_frame(c, o);
    apply_mel(c, o);
    if (c.has("num_ceps")) o.num_ceps(c.i("num_ceps"));
    if (c.has("cepstral_lifter")) o.cepstral_lifter(c.num("cepstral_lifter"));
    expect_feature(c, [&](const Tensor& x) { return K::mfcc(x, o); });
  }
}

TEST(AudioKaldi, Spectrogram) {
  for (const Case& c : fix().cases("spectrogram_")) {
    K::SpectrogramOptions o;
    apply_frame(c, o);
    expect_feature(c, [&](const Tensor& x) { return K::spectrogram(x, o); });
  }
}

TEST(AudioKaldi, ShortSignalsAndFrameCounts) {
  for (const Case& c : fix().cases("short_")) {
    K::FbankOptions o;
    o.snip_edges(c.flag("snip_edges"));
    expect_feature(c, [&](const Tensor& x) { return K::fbank(x, o); });
  }
  // Kaldi's frame counts beyond what torchaudio accepts: shorter than one frame.
  Tensor x = fw::randn({1, 300}) * 1000;
  EXPECT_EQ(K::fbank(x).sizes().vec(), (std::vector<int64_t>{0, 23}));  // snip_edges: no complete frame
  Tensor y = K::fbank(x, K::FbankOptions().snip_edges(false));
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 23}));  // (300 + 80) / 160 frames, reflected samples
  EXPECT_TRUE(y.isfinite().all().item<bool>());
  Tensor tiny = fw::randn({1, 5}) * 1000;  // reflection folds several times
  EXPECT_EQ(K::fbank(tiny, K::FbankOptions().snip_edges(false).frame_shift(1.0)).sizes().vec(), (std::vector<int64_t>{0, 23}));
  EXPECT_EQ(K::fbank(fw::randn({1, 20}) * 1000, K::FbankOptions().snip_edges(false).frame_shift(1.0)).sizes().vec(),
            (std::vector<int64_t>{1, 23}));
  // Every length below a frame: (T + 80) / 160 frames without snip_edges (120..139 samples once
  // took the reflected fast path past its end and raised an [unfold] error).
  for (int64_t T = 1; T <= 420; T++) {
    Tensor s = K::fbank(fw::randn({1, T}) * 1000, K::FbankOptions().snip_edges(false));
    EXPECT_EQ(s.sizes()[0], (T + 80) / 160) << T;
    EXPECT_TRUE(s.isfinite().all().item<bool>()) << T;
  }
  // Frame counts: 1 + (T - 400) / 160 with snip_edges, (T + 80) / 160 without.
  for (int64_t T : {400, 559, 560, 16000, 16079, 16080}) {
    Tensor s = fw::randn({1, T});
    EXPECT_EQ(K::fbank(s).sizes()[0], 1 + (T - 400) / 160) << T;
    EXPECT_EQ(K::fbank(s, K::FbankOptions().snip_edges(false)).sizes()[0], (T + 80) / 160) << T;
  }
}

TEST(AudioKaldi, MelBanks) {
  for (const Case& c : fix().cases("mel_banks_")) {
    auto [bins, centers] = K::get_mel_banks(c.i("num_bins"), c.i("padded"), c.num("fs"), c.num("low"), c.num("high"),
                                            c.num("vtln_low"), c.num("vtln_high"), c.num("warp"));
    FW_AUDIO_EXPECT_CLOSE(c, bins, fix().out(c, "bins"), 1e-4, 1e-5);
    FW_AUDIO_EXPECT_CLOSE(c, centers.reshape(fix().out(c, "centers").sizes()), fix().out(c, "centers"), 1e-5, 0);
  }
}

TEST(AudioKaldi, BatchedEqualsPerUtterance) {
  fw::manual_seed(11);
  Tensor x = fw::randn({2, 3, 2, 5000}) * 3000;  // (batch..., channel, time)
  K::FbankOptions fo;
  fo.num_mel_bins(40).use_energy(true).channel(1);
  K::MfccOptions mo;
  mo.subtract_mean(true);
  Tensor fb = K::fbank(x, fo), mf = K::mfcc(x, mo);
  EXPECT_EQ(fb.sizes().vec(), (std::vector<int64_t>{2, 3, 29, 41}));
  for (int64_t i = 0; i < 2; i++)
    for (int64_t j = 0; j < 3; j++) {
      EXPECT_TRUE(fw::allclose(fb[i][j], K::fbank(x[i][j], fo), 1e-5, 1e-4));
      EXPECT_TRUE(fw::allclose(mf[i][j], K::mfcc(x[i][j], mo), 1e-5, 1e-4));
    }
  // 1-D input is one utterance.
  EXPECT_TRUE(fw::allclose(K::fbank(x[0][0][0]), K::fbank(x[0][0]), 0, 0));
}

TEST(AudioKaldi, DitherIsRandomButSmall) {
  Tensor x = fw::randn({1, 4000}) * 3000;
  fw::manual_seed(1);
  Tensor a = K::fbank(x, K::FbankOptions().dither(1.0));
  fw::manual_seed(1);
  Tensor b = K::fbank(x, K::FbankOptions().dither(1.0));
  Tensor c = K::fbank(x);
  EXPECT_TRUE(fw::equal(a, b));
  EXPECT_FALSE(fw::equal(a, c));
  EXPECT_TRUE(fw::allclose(a, c, 0, 0.05));
}

TEST(AudioKaldi, Errors) {
  auto msg = [](auto f) { return fwtest::audio::error_of(f); };
  Tensor x = fw::randn({1, 4000});
  EXPECT_NE(msg([&] { K::fbank(x, K::FbankOptions().window_type("hann")); }).find("Invalid window type hann"),
            std::string::npos);
  EXPECT_NE(msg([&] { K::fbank(x, K::FbankOptions().channel(2)); }).find("Invalid channel 2 for size 1"),
            std::string::npos);
  EXPECT_NE(msg([&] { K::fbank(x, K::FbankOptions().round_to_power_of_two(false).frame_length(25.0625)); })
                .find("must be divisible by two"), std::string::npos);
  EXPECT_NE(msg([&] { K::fbank(x, K::FbankOptions().num_mel_bins(3)); }).find("at least 3 mel bins"), std::string::npos);
  EXPECT_NE(msg([&] { K::fbank(x, K::FbankOptions().low_freq(9000)); }).find("Bad values in options"),
            std::string::npos);
  EXPECT_NE(msg([&] { K::mfcc(x, K::MfccOptions().num_ceps(30)); }).find("num_ceps cannot be larger"),
            std::string::npos);
  EXPECT_NE(msg([&] { K::fbank(x, K::FbankOptions().frame_shift(0.01)); }).find("window_shift"), std::string::npos);
  EXPECT_NE(msg([&] { K::fbank(x.to(fw::kLong)); }).find("floating point"), std::string::npos);
  EXPECT_NE(msg([&] { K::fbank(x, K::FbankOptions().preemphasis_coefficient(1.5)); }).find("preemphasis"),
            std::string::npos);
}
