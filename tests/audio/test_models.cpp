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
#include "fw/jit.h"
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
using fwtest::audio::state;

const fwtest::audio::FixtureFile& fix() {
  static const fwtest::audio::FixtureFile f("models");
  return f;
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
    auto copy = std::dynamic_pointer_cast<AM::ConformerImpl>(m->clone());
    ASSERT_TRUE(copy);
    EXPECT_TRUE(fw::equal(std::get<0>(copy->forward(fix().out(c, "x"), fix().out(c, "lengths"))), y)) << c.name;
  }
}

// The Conformer's lengths check reads the lengths; under fw::compile it is skipped, so the
// model traces as one graph (no break) and gives eager's values.
TEST(AudioModels, ConformerCompilesWithoutAGraphBreak) {
  fw::manual_seed(2);
  AM::Conformer m(8, 2, 16, 2, 3);
  m->eval();
  fw::NoGradGuard no_grad;
  auto fn = [&](const Tensor& x, const Tensor& lengths) { return std::get<0>(m(x, lengths)); };
  auto f = fw::compile(fn, fw::CompileOptions().backend("aot_eager"));
  const Tensor x = fw::randn({2, 6, 8}), lengths = fw::tensor({6, 4}, fw::TensorOptions(fw::kLong));
  const Tensor eager = fn(x, lengths);
  EXPECT_TRUE(fw::allclose(f(x, lengths), eager, 1e-5, 1e-6));
  EXPECT_TRUE(f.explain().breaks.empty());
  EXPECT_EQ(f.explain().graph_count, 1);
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

AM::Wav2Vec2Options wav2vec2_options(const Case& c);

TEST(AudioModels, LoadsATorchaudioStateDict) {
  const Case c = fix().cases("conformer_pt")[0];
  AM::Conformer m(c.i("input_dim"), c.i("num_heads"), c.i("ffn_dim"), c.i("num_layers"),
                  c.i("depthwise_conv_kernel_size"));
  fw::load(m, std::string(FW_AUDIO_FIXTURE_DIR) + "/conformer_small.pt");
  m->eval();
  fw::NoGradGuard no_grad;
  auto [y, lengths] = m(fix().out(c, "x"), fix().out(c, "lengths"));
  FW_AUDIO_EXPECT_CLOSE(c, y, fix().out(c), 1e-4, 1e-5);
  // wav2vec 2.0 with its weight_g / weight_v positional convolution.
  const Case w = fix().cases("wav2vec2_pt")[0];
  AM::Wav2Vec2Model w2v(wav2vec2_options(w));
  fw::load(w2v, std::string(FW_AUDIO_FIXTURE_DIR) + "/wav2vec2_small.pt");
  w2v->eval();
  FW_AUDIO_EXPECT_CLOSE(w, std::get<0>(w2v(fix().out(w, "x"), fix().out(w, "lengths"))), fix().out(w), 1e-4, 1e-5);
}

TEST(AudioModels, ConvTasNetMatchesTorchaudio) {
  int n = 0;
  for (const Case& c : fix().cases("conv_tasnet_")) {
    if (c.name == "conv_tasnet_base_names") continue;
    AM::ConvTasNet m(c.i("num_sources"), c.i("enc_kernel_size"), c.i("enc_num_feats"), c.i("msk_kernel_size"),
                     c.i("msk_num_feats"), c.i("msk_num_hidden_feats"), c.i("msk_num_layers"), c.i("msk_num_stacks"),
                     c.str("msk_activate", "sigmoid"));
    fill_like_torchaudio(*m, c);
    m->eval();
    fw::NoGradGuard no_grad;
    const Tensor y = m(fix().out(c, "x"));
    FW_AUDIO_EXPECT_CLOSE(c, y, fix().out(c), 1e-4, 1e-5);
    auto copy = std::dynamic_pointer_cast<AM::ConvTasNetImpl>(m->clone());
    ASSERT_TRUE(copy);
    EXPECT_TRUE(fw::equal(copy->forward(fix().out(c, "x")), y)) << c.name;
    n++;
  }
  EXPECT_EQ(n, 2);
  // conv_tasnet_base: torchaudio's names and shapes.
  AM::ConvTasNet base = AM::conv_tasnet_base(3);
  expect_torchaudio_names(*base, fix().cases("conv_tasnet_base_names")[0]);
  EXPECT_ERROR(AM::ConvTasNet(2, 16, 512, 3, 128, 512, 8, 3, "tanh"), "Unsupported activation tanh");
  EXPECT_ERROR(AM::ConvTasNet(2, 16, 16, 5, 8, 8, 2, 1), "msk_kernel_size must be 3");
  EXPECT_ERROR(base(fw::randn({2, 2, 100})), "Expected 3D tensor (batch, channel==1, frames)");
}

TEST(AudioModels, WaveRNNMatchesTorchaudioAndSamples) {
  const Case c = fix().cases("wavernn")[0];
  std::vector<int64_t> scales;
  for (const auto& v : c.find("upsample_scales")->array) scales.push_back(std::stoll(v.text));
  AM::WaveRNN m(scales, c.i("n_classes"), c.i("hop_length"), c.i("n_res_block"), c.i("n_rnn"), c.i("n_fc"),
                c.i("kernel_size"), c.i("n_freq"), c.i("n_hidden"), c.i("n_output"));
  fill_like_torchaudio(*m, c);
  m->eval();
  fw::NoGradGuard no_grad;
  const Tensor y = m(fix().out(c, "waveform"), fix().out(c, "specgram"));
  FW_AUDIO_EXPECT_CLOSE(c, y, fix().out(c), 1e-4, 1e-5);
  auto copy = std::dynamic_pointer_cast<AM::WaveRNNImpl>(m->clone());
  ASSERT_TRUE(copy);
  EXPECT_TRUE(fw::equal(copy->forward(fix().out(c, "waveform"), fix().out(c, "specgram")), y));
  // infer: one sample per upsampled frame on the 2^n_bits - 1 grid in [-1, 1], reproducible from
  // a generator; lengths scale by hop_length.
  const Tensor spec = fix().out(c, "specgram").squeeze(1);  // (B, n_freq, 9)
  auto g1 = fw::make_generator<fw::CPUGeneratorImpl>(11), g2 = fw::make_generator<fw::CPUGeneratorImpl>(11);
  auto [wave, lengths] = m->infer(spec, fw::tensor({9, 7}, fw::TensorOptions(fw::kLong)), g1);
  EXPECT_EQ(wave.sizes().vec(), (std::vector<int64_t>{2, 1, 9 * 6}));
  EXPECT_TRUE(fw::equal(lengths, fw::tensor({54, 42}, fw::TensorOptions(fw::kLong))));
  EXPECT_TRUE(fw::equal(std::get<0>(m->infer(spec, Tensor(), g2)), wave));
  const Tensor level = (wave + 1) / 2 * 15;
  EXPECT_LT((level - level.round()).abs().max().item<double>(), 1e-5);
  EXPECT_LE(wave.abs().max().item<double>(), 1.0);
  EXPECT_ERROR(AM::WaveRNN(std::vector<int64_t>{2, 3}, 16, 5), "total_scale == hop_length, but found 6 != 5");
}

AM::Wav2Vec2Options wav2vec2_options(const Case& c) {
  AM::ConvLayerConfig config;
  for (const auto& e : c.find("extractor_conv_layer_config")->array)
    config.emplace_back(std::stoll(e.array[0].text), std::stoll(e.array[1].text), std::stoll(e.array[2].text));
  return AM::Wav2Vec2Options()
      .extractor_mode(c.str("extractor_mode"))
      .extractor_conv_layer_config(config)
      .extractor_conv_bias(c.flag("extractor_conv_bias"))
      .encoder_embed_dim(c.i("encoder_embed_dim"))
      .encoder_projection_dropout(c.num("encoder_projection_dropout"))
      .encoder_pos_conv_kernel(c.i("encoder_pos_conv_kernel"))
      .encoder_pos_conv_groups(c.i("encoder_pos_conv_groups"))
      .encoder_num_layers(c.i("encoder_num_layers"))
      .encoder_num_heads(c.i("encoder_num_heads"))
      .encoder_attention_dropout(c.num("encoder_attention_dropout"))
      .encoder_ff_interm_features(c.i("encoder_ff_interm_features"))
      .encoder_ff_interm_dropout(c.num("encoder_ff_interm_dropout"))
      .encoder_dropout(c.num("encoder_dropout"))
      .encoder_layer_norm_first(c.flag("encoder_layer_norm_first"))
      .encoder_layer_drop(c.num("encoder_layer_drop"))
      .aux_num_out(c.has("aux_num_out") ? std::optional<int64_t>(c.i("aux_num_out")) : std::nullopt);
}

TEST(AudioModels, Wav2Vec2MatchesTorchaudio) {
  int n = 0;
  for (const Case& c : fix().cases("wav2vec2_")) {
    if (c.name == "wav2vec2_base_names" || c.name == "wav2vec2_pt") continue;
    AM::Wav2Vec2Model m = AM::wav2vec2_model(wav2vec2_options(c));
    fill_like_torchaudio(*m, c);
    m->eval();
    fw::NoGradGuard no_grad;
    const bool has_lengths = c.name == "wav2vec2_group_norm";
    const Tensor lengths = has_lengths ? fix().out(c, "lengths") : Tensor();
    auto [y, l] = m(fix().out(c, "x"), lengths);
    FW_AUDIO_EXPECT_CLOSE(c, y, fix().out(c), 1e-4, 1e-5);
    EXPECT_EQ(l.defined(), has_lengths) << c.name;
    if (has_lengths) EXPECT_TRUE(fw::equal(l, fix().out(c, "out_lengths"))) << c.name;
    // A deep copy (clone() rebuilds the module tree and copies the values by name) agrees.
    auto copy = std::dynamic_pointer_cast<AM::Wav2Vec2ModelImpl>(m->clone());
    ASSERT_TRUE(copy);
    EXPECT_TRUE(fw::equal(std::get<0>(copy->forward(fix().out(c, "x"), lengths)), y)) << c.name;
    auto [feats, l2] = m->extract_features(fix().out(c, "x"), lengths, c.i("num_layers"));
    const size_t expected_layers =
        size_t(c.i("num_layers") == -1 ? c.i("encoder_num_layers") : c.i("num_layers"));
    ASSERT_EQ(feats.size(), expected_layers) << c.name;
    for (size_t i = 0; i < feats.size(); i++)
      FW_AUDIO_EXPECT_CLOSE(c, feats[i], fix().out(c, "feature" + std::to_string(i)), 1e-4, 1e-5);
    n++;
  }
  EXPECT_EQ(n, 2);
  // wav2vec2_base: torchaudio's names and shapes (95M parameters; no forward here).
  AM::Wav2Vec2Model base = AM::wav2vec2_base();
  expect_torchaudio_names(*base, fix().cases("wav2vec2_base_names")[0]);
}

TEST(AudioModels, TrainsAndChecksArguments) {
  // A training step through the whole Conformer: every parameter gets a finite gradient.
  fw::manual_seed(0);
  AM::Conformer m(8, 2, 16, 2, 3, /*dropout=*/0.1);
  Tensor x = fw::randn({2, 5, 8});
  auto [y, l] = m(x, fw::tensor({5, 3}, fw::TensorOptions(fw::kLong)));
  y.pow(2).mean().backward();
  ASSERT_NO_FATAL_FAILURE(fwtest::audio::expect_finite_grads(*m));
  // wav2vec 2.0 in training mode (dropout, LayerDrop): finite gradients wherever they flow.
  AM::Wav2Vec2Model w2v = AM::wav2vec2_model(AM::Wav2Vec2Options()
                                                 .extractor_conv_layer_config({{4, 10, 5}, {4, 3, 2}})
                                                 .encoder_embed_dim(8)
                                                 .encoder_num_layers(3)
                                                 .encoder_num_heads(2)
                                                 .encoder_ff_interm_features(16)
                                                 .encoder_pos_conv_kernel(4)
                                                 .encoder_pos_conv_groups(2)
                                                 .encoder_layer_drop(0.5)
                                                 .aux_num_out(3));
  auto [logits, frames] = w2v(fw::randn({2, 400}), fw::tensor({400, 300}, fw::TensorOptions(fw::kLong)));
  EXPECT_EQ(logits.sizes().vec(), (std::vector<int64_t>{2, 39, 3}));
  EXPECT_EQ(frames[1].item<int64_t>(), 29);  // (300 - 10) / 5 + 1 = 59, (59 - 3) / 2 + 1 = 29
  logits.logsumexp(-1).sum().backward();
  int64_t with_grad = 0;
  for (const auto& kv : w2v->named_parameters()) {
    if (!kv.value().grad().defined()) continue;
    with_grad++;
    EXPECT_TRUE(kv.value().grad().isfinite().all().item<bool>()) << kv.key();
  }
  EXPECT_GT(with_grad, 10);
  EXPECT_ERROR(AM::Conformer(8, 2, 16, 1, 4), "depthwise_kernel_size must be odd");
  EXPECT_ERROR(m(x, fw::tensor({4, 3}, fw::TensorOptions(fw::kLong))), "max(lengths) = 4 must equal");
  EXPECT_ERROR(m(x, fw::tensor({5, 4, 3}, fw::TensorOptions(fw::kLong))), "lengths must be a (B,) integer tensor");
  EXPECT_ERROR(m(fw::randn({2, 5, 7}), fw::tensor({5, 3}, fw::TensorOptions(fw::kLong))), "input must be (B, T, 8)");
  EXPECT_ERROR(AM::Wav2Letter(10, "spectrogram"), "input_type must be");
  EXPECT_ERROR(AM::Wav2Vec2Model(AM::Wav2Vec2Options().extractor_mode("batch_norm")), "extractor_mode must be");
  EXPECT_ERROR(AM::Wav2Vec2Model(AM::Wav2Vec2Options().encoder_embed_dim(30).encoder_num_heads(4)
                                     .encoder_pos_conv_groups(2).encoder_num_layers(1)),
               "embed_dim (30) is not divisible by num_heads (4)");
  AM::DeepSpeech ds(10, 8, 4);
  EXPECT_ERROR(ds(fw::randn({2, 3, 10})), "input must be (B, 1, T, 10)");
  EXPECT_EQ(ds(fw::randn({2, 1, 7, 10})).sizes().vec(), (std::vector<int64_t>{2, 7, 4}));
}

}  // namespace
