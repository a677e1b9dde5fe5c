// fw::audio::models against torchaudio 0.13 (tests/fixtures/audio/gen_models.py ->
// models.safetensors, conformer_small.pt): parameter and buffer names and shapes equal
// torchaudio's state_dict, outputs match with the formula weights gen_models.py describes, and a
// torch.save'd torchaudio state_dict loads with fw::load and reproduces torchaudio's output.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "fw/audio.h"
#include "fw/serialize.h"
#include "tests/audio/audio_fixture.h"
#include "tests/expect_error.h"

namespace {

namespace AM = fw::audio::models;
using fw::Tensor;
using fwtest::audio::Case;

const fwtest::audio::FixtureFile& fix() {
  static const fwtest::audio::FixtureFile f("models");
  return f;
}

// The module's parameters and buffers by name, in registration order.
std::vector<std::pair<std::string, Tensor>> state(const fw::nn::Module& m) {
  std::map<std::string, Tensor> byname;
  for (const auto& kv : m.named_parameters()) byname[kv.key()] = kv.value();
  for (const auto& kv : m.named_buffers()) byname[kv.key()] = kv.value();
  std::vector<std::pair<std::string, Tensor>> out(byname.begin(), byname.end());
  return out;
}

// Checks that the module has exactly torchaudio's state_dict entries (name and shape), then sets
// them as gen_models.py's fill() does, in torchaudio's state_dict order.
void fill_like_torchaudio(fw::nn::Module& m, const Case& c) {
  std::map<std::string, Tensor> mine;
  for (auto& [k, v] : state(m)) mine[k] = v;
  const auto& entries = c.find("names")->array;
  ASSERT_EQ(entries.size(), mine.size()) << c.name << ": torchaudio has " << entries.size() << " entries, fw "
                                         << mine.size();
  fw::NoGradGuard no_grad;
  int64_t k = 0;
  for (const auto& e : entries) {
    const std::string name = e.array[0].text;
    std::vector<int64_t> shape;
    for (const auto& d : e.array[1].array) shape.push_back(std::stoll(d.text));
    auto it = mine.find(name);
    ASSERT_NE(it, mine.end()) << c.name << ": fw has no " << name;
    ASSERT_EQ(it->second.sizes().vec(), shape) << c.name << ": " << name;
    const Tensor& t = it->second;
    const bool is_counter = name.size() >= 19 && name.compare(name.size() - 19, 19, "num_batches_tracked") == 0;
    if (!is_counter) {
      Tensor s = fw::sin(fw::arange(t.numel(), fw::TensorOptions(fw::kDouble)) * 0.7 + double(k));
      Tensor v;
      if (name.size() >= 11 && name.compare(name.size() - 11, 11, "running_var") == 0) {
        v = 1 + 0.5 * s * s;
      } else {
        const double scale = t.dim() >= 2 ? 1 / std::sqrt(double(t.numel() / t.size(0))) : 0.1;
        v = s * scale;
      }
      t.copy_(v.reshape(t.sizes()).to(t.dtype()));
    }
    k++;
  }
}

TEST(AudioModels, ConformerMatchesTorchaudio) {
  for (const Case& c : fix().cases("conformer")) {
    if (c.name == "conformer_pt") continue;
    AM::Conformer m(c.i("input_dim"), c.i("num_heads"), c.i("ffn_dim"), c.i("num_layers"),
                    c.i("depthwise_conv_kernel_size"), 0.0, c.flag("use_group_norm"), c.flag("convolution_first"));
    fill_like_torchaudio(*m, c);
    m->eval();
    fw::NoGradGuard no_grad;
    auto [y, lengths] = m(fix().out(c, "x"), fix().out(c, "lengths"));
    FW_AUDIO_EXPECT_CLOSE(c, y, fix().out(c), 1e-4, 1e-5);
    EXPECT_TRUE(fw::equal(lengths, fix().out(c, "lengths")));
  }
}

TEST(AudioModels, Wav2LetterAndDeepSpeechMatchTorchaudio) {
  for (const Case& c : fix().cases("wav2letter")) {
    AM::Wav2Letter m(c.i("num_classes"), c.str("input_type", "waveform"), c.i("num_features", 1));
    fill_like_torchaudio(*m, c);
    m->eval();
    fw::NoGradGuard no_grad;
    FW_AUDIO_EXPECT_CLOSE(c, m(fix().out(c, "x")), fix().out(c), 1e-4, 1e-5);
  }
  const Case c = fix().cases("deepspeech")[0];
  AM::DeepSpeech m(c.i("n_feature"), c.i("n_hidden"), c.i("n_class"));
  fill_like_torchaudio(*m, c);
  m->eval();
  fw::NoGradGuard no_grad;
  FW_AUDIO_EXPECT_CLOSE(c, m(fix().out(c, "x")), fix().out(c), 1e-4, 1e-5);
}

TEST(AudioModels, LoadsATorchaudioStateDict) {
  const Case c = fix().cases("conformer_pt")[0];
  AM::Conformer m(c.i("input_dim"), c.i("num_heads"), c.i("ffn_dim"), c.i("num_layers"),
                  c.i("depthwise_conv_kernel_size"));
  fw::load(m, std::string(FW_AUDIO_FIXTURE_DIR) + "/conformer_small.pt");
  m->eval();
  fw::NoGradGuard no_grad;
  auto [y, lengths] = m(fix().out(c, "x"), fix().out(c, "lengths"));
  FW_AUDIO_EXPECT_CLOSE(c, y, fix().out(c), 1e-4, 1e-5);
}

TEST(AudioModels, TrainsAndChecksArguments) {
  // A training step through the whole Conformer: every parameter gets a finite gradient.
  fw::manual_seed(0);
  AM::Conformer m(8, 2, 16, 2, 3, /*dropout=*/0.1);
  Tensor x = fw::randn({2, 5, 8});
  auto [y, l] = m(x, fw::tensor({5, 3}, fw::TensorOptions(fw::kLong)));
  y.pow(2).mean().backward();
  for (const auto& kv : m->named_parameters()) {
    ASSERT_TRUE(kv.value().grad().defined()) << kv.key();
    EXPECT_TRUE(kv.value().grad().isfinite().all().item<bool>()) << kv.key();
  }
  EXPECT_ERROR(AM::Conformer(8, 2, 16, 1, 4), "depthwise_kernel_size must be odd");
  EXPECT_ERROR(m(x, fw::tensor({4, 3}, fw::TensorOptions(fw::kLong))), "max(lengths) = 4 must equal");
  EXPECT_ERROR(m(x, fw::tensor({5, 4, 3}, fw::TensorOptions(fw::kLong))), "lengths must be a (B,) integer tensor");
  EXPECT_ERROR(m(fw::randn({2, 5, 7}), fw::tensor({5, 3}, fw::TensorOptions(fw::kLong))), "input must be (B, T, 8)");
  EXPECT_ERROR(AM::Wav2Letter(10, "spectrogram"), "input_type must be");
  AM::DeepSpeech ds(10, 8, 4);
  EXPECT_ERROR(ds(fw::randn({2, 3, 10})), "input must be (B, 1, T, 10)");
  EXPECT_EQ(ds(fw::randn({2, 1, 7, 10})).sizes().vec(), (std::vector<int64_t>{2, 7, 4}));
}

}  // namespace
