// fw::audio::models' HDemucs against torchaudio 0.13 (tests/fixtures/audio/gen_hdemucs.py ->
// hdemucs.safetensors, hdemucs_small.pt): state_dict names and shapes of small configurations and
// of the three factories, separated sources with formula weights on speech + chirp mixtures, a
// torch.save'd state_dict through fw::load, batch consistency, lengths torchaudio rejects, the
// initialisation rules, gradients and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fw/audio.h"
#include "fw/serialize.h"
#include "tests/audio/audio_fixture.h"
#include "tests/audio/model_weights.h"
#include "tests/expect_error.h"

namespace {

namespace AM = fw::audio::models;
using fw::Tensor;
using fwtest::audio::Case;
using fwtest::audio::expect_torchaudio_names;
using fwtest::audio::fill_like_torchaudio;

const fwtest::audio::FixtureFile& fix() {
  static const fwtest::audio::FixtureFile f("hdemucs");
  return f;
}

const Case& case_named(const std::string& name) { return fix().named(name); }

std::vector<std::string> sources_of(const Case& c) {
  std::vector<std::string> out;
  for (const auto& v : c.find("sources")->array) out.push_back(v.text);
  return out;
}

// The case's constructor arguments (absent ones keep torchaudio's defaults).
AM::HDemucs make(const Case& c) {
  AM::HDemucsOptions d, o;
  o.audio_channels(c.i("audio_channels", d.audio_channels()))
      .channels(c.i("channels", d.channels()))
      .growth(c.num("growth", d.growth()))
      .nfft(c.i("nfft", d.nfft()))
      .depth(c.i("depth", d.depth()))
      .freq_emb(c.num("freq_emb", d.freq_emb()))
      .emb_scale(c.num("emb_scale", d.emb_scale()))
      .emb_smooth(c.flag("emb_smooth", d.emb_smooth()))
      .kernel_size(c.i("kernel_size", d.kernel_size()))
      .time_stride(c.i("time_stride", d.time_stride()))
      .stride(c.i("stride", d.stride()))
      .context(c.i("context", d.context()))
      .context_enc(c.i("context_enc", d.context_enc()))
      .norm_starts(c.i("norm_starts", d.norm_starts()))
      .norm_groups(c.i("norm_groups", d.norm_groups()))
      .dconv_depth(c.i("dconv_depth", d.dconv_depth()))
      .dconv_comp(c.num("dconv_comp", d.dconv_comp()))
      .dconv_attn(c.i("dconv_attn", d.dconv_attn()))
      .dconv_lstm(c.i("dconv_lstm", d.dconv_lstm()))
      .dconv_init(c.num("dconv_init", d.dconv_init()));
  return AM::HDemucs(sources_of(c), o);
}

AM::HDemucs filled(const Case& c) {
  AM::HDemucs m = make(c);
  fill_like_torchaudio(*m, c);
  m->eval();
  return m;
}

const char* kOutputCases[] = {"small", "nfft2048", "short_plain"};

}  // namespace

TEST(AudioHDemucs, StateDictNamesMatchTorchaudio) {
  for (const char* name : kOutputCases) {
    const Case& c = case_named(name);
    expect_torchaudio_names(*make(c), c);
  }
  const std::vector<std::string> four = {"bass", "drums", "other", "vocals"};
  expect_torchaudio_names(*AM::hdemucs_low(four), case_named("hdemucs_low"));
  expect_torchaudio_names(*AM::hdemucs_medium(four), case_named("hdemucs_medium"));
  expect_torchaudio_names(*AM::hdemucs_high(four), case_named("hdemucs_high"));
}

TEST(AudioHDemucs, SeparatesLikeTorchaudio) {
  fw::NoGradGuard no_grad;
  for (const char* name : kOutputCases) {
    const Case& c = case_named(name);
    AM::HDemucs m = filled(c);
    const Tensor& x = fix().out(c, "x");
    Tensor y = m(x);
    ASSERT_EQ(y.sizes().vec(), fix().out(c).sizes().vec()) << name;
    // Float32 through an STFT, two U-Nets with LSTMs and attention, and an inverse STFT.
    FW_AUDIO_EXPECT_CLOSE(c, y, fix().out(c), 1e-3, 1e-4);
  }
}

TEST(AudioHDemucs, BatchRowsAreIndependent) {
  fw::NoGradGuard no_grad;
  const Case& c = case_named("small");
  AM::HDemucs m = filled(c);
  const Tensor& x = fix().out(c, "x");
  Tensor y = m(x);
  for (int64_t b = 0; b < x.size(0); b++) {
    Tensor yb = m(x.narrow(0, b, 1));
    FW_AUDIO_EXPECT_CLOSE(c, yb, y.narrow(0, b, 1), 1e-4, 1e-5);
  }
}

TEST(AudioHDemucs, LoadsATorchaudioStateDict) {
  const Case& c = case_named("hdemucs_pt");
  AM::HDemucs m(std::vector<std::string>{"drums", "vocals"}, AM::HDemucsOptions().channels(4).nfft(256).depth(4).dconv_attn(3).dconv_lstm(3));
  fw::load(m, std::string(FW_AUDIO_FIXTURE_DIR) + "/hdemucs_small.pt");
  m->eval();
  fw::NoGradGuard no_grad;
  FW_AUDIO_EXPECT_CLOSE(c, m(fix().out(c, "x")), fix().out(c), 1e-3, 1e-4);
}

// torchaudio raises for lengths whose zero padding adds an STFT frame (here 1-48 and 65-80
// samples at hop 64); fw drops the frame. Every length gives finite sources of that length, and
// a length torchaudio accepts (60, case short_plain) matches it.
TEST(AudioHDemucs, AnyLengthSeparates) {
  fw::NoGradGuard no_grad;
  const Case& c = case_named("short_plain");
  AM::HDemucs m = filled(c);
  for (int64_t len : {1, 2, 30, 48, 49, 64, 65, 80, 81, 200}) {
    Tensor x = fw::sin(fw::arange(2 * 2 * len, fw::TensorOptions(fw::kFloat)) * 0.3).reshape({2, 2, len});
    Tensor y = m(x);
    EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3, 2, len})) << len;
    EXPECT_TRUE(fw::isfinite(y).all().item<bool>()) << len;
  }
}

// torchaudio's initialisation: every convolution rescaled to std sqrt(0.1 * std) (from
// kaiming-uniform's 1 / sqrt(3 fan_in)), LayerScale at dconv_init, the attention's decay
// queries at weight * 0.01 and bias -2 (before the model-wide rescale, which divides them like any
// convolution), the smoothed frequency embedding stored divided by its scale.
TEST(AudioHDemucs, InitialisesLikeTorchaudio) {
  fw::manual_seed(7);
  AM::HDemucs m(std::vector<std::string>{"a", "b"}, AM::HDemucsOptions().channels(16).nfft(512).depth(4).dconv_attn(1).dconv_lstm(3));
  auto p = m->named_parameters();
  // freq_encoder.1.conv: Conv2d(16, 32, (8, 1)), fan_in 128; 4096 weights.
  const double std0 = 1 / std::sqrt(3.0 * 128);
  EXPECT_NEAR(p["freq_encoder.1.conv.weight"].std().item<double>(), std::sqrt(0.1 * std0), 0.03 * std::sqrt(0.1 * std0));
  EXPECT_TRUE(fw::allclose(p["freq_encoder.2.dconv.layers.1.7.scale"], fw::full({64}, 1e-4)));
  AM::detail::HDemucsLocalState att(8);
  EXPECT_TRUE(fw::allclose(att->query_decay->bias, fw::full({16}, -2.0)));
  EXPECT_LE(att->query_decay->weight.abs().max().item<double>(), 0.01 / std::sqrt(8.0));
  // In the model: the rescale divided the decay queries' weight and bias by the same factor.
  Tensor qw = p["freq_encoder.1.dconv.layers.0.3.query_decay.weight"];
  const double factor = qw.std().item<double>() / 0.1;  // std' = std / sqrt(std / 0.1): factor = 10 std'
  EXPECT_TRUE(fw::allclose(p["freq_encoder.1.dconv.layers.0.3.query_decay.bias"], fw::full({16}, -2.0 / factor),
                           1e-4, 1e-6));
  Tensor emb = m->freq_emb->embedding->weight * 10;  // (64 frequency rows, 16 channels)
  EXPECT_EQ(emb.sizes().vec(), (std::vector<int64_t>{64, 16}));
  const double ms = (emb * emb).mean().item<double>();  // rows are N(0, 1) before the division
  EXPECT_GT(ms, 0.25);
  EXPECT_LT(ms, 4.0);
  // Smoothing: neighbouring rows are running sums of the same noise, so they are correlated.
  Tensor a = emb.narrow(0, 10, 50), b = emb.narrow(0, 11, 50);
  EXPECT_GT(((a * b).mean() / (a.std() * b.std())).item<double>(), 0.8);
}

// One backward pass reaches every parameter with a finite gradient (through the LSTMs, the
// attention, the STFT and its inverse), and a few SGD steps lower a reconstruction loss.
TEST(AudioHDemucs, Trains) {
  fw::manual_seed(5);
  AM::HDemucs m(std::vector<std::string>{"a", "b"}, AM::HDemucsOptions().channels(8).nfft(256).depth(4).dconv_attn(2).dconv_lstm(2));
  m->train();
  Tensor x = fw::randn({2, 2, 3000}) * 0.1;
  Tensor target = fw::stack({x * 0.3, x * 0.7}, 1);
  fw::optim::Adam opt(m->parameters(), fw::optim::AdamOptions(1e-3));
  double first = 0, last = 0;
  for (int step = 0; step < 6; step++) {
    opt.zero_grad();
    Tensor loss = fw::l1_loss(m(x), target);
    loss.backward();
    if (step == 0) {
      ASSERT_NO_FATAL_FAILURE(fwtest::audio::expect_finite_grads(*m));
      first = loss.item<double>();
    }
    last = loss.item<double>();
    opt.step();
  }
  EXPECT_LT(last, first);
}

TEST(AudioHDemucs, RejectsBadArguments) {
  AM::HDemucs m(std::vector<std::string>{"a", "b"}, AM::HDemucsOptions().channels(4).nfft(256).depth(4));
  EXPECT_ERROR(m(fw::zeros({2, 100})), "[HDemucs] expected a (batch, channels, frames) input, got shape [2, 100]");
  EXPECT_ERROR(m(fw::zeros({1, 1, 100})), "the input has 1 channels, the model audio_channels = 2");
  EXPECT_ERROR(m(fw::zeros({1, 2, 0})), "the input is empty");
  EXPECT_ERROR(m(fw::zeros({1, 2, 100}, fw::TensorOptions(fw::kLong))), "expected a floating-point input");
  EXPECT_ERROR(AM::HDemucs(std::vector<std::string>{}, AM::HDemucsOptions()), "needs at least one source");
  EXPECT_ERROR(AM::HDemucs(std::vector<std::string>{"a"}, AM::HDemucsOptions().nfft(100)), "nfft must be a positive multiple of 8");
  // Hidden size 2 (8 channels / 4) cannot split into 4 attention heads.
  EXPECT_ERROR(AM::HDemucs(std::vector<std::string>{"a"}, AM::HDemucsOptions().channels(8).nfft(256).depth(2).dconv_attn(0)),
                  "channels (2) must be divisible by heads (4)");
  // Kernel 8 with stride 3: transposed-conv padding (8 - 3) / 2 is not whole.
  EXPECT_ERROR(AM::HDemucs(std::vector<std::string>{"a"}, AM::HDemucsOptions().context(-1)),
               "context (-1) and context_enc (0) must be non-negative");
  EXPECT_ERROR(AM::HDemucs(std::vector<std::string>{"a"}, AM::HDemucsOptions().nfft(256).stride(3).depth(2)), "do not align");
}
