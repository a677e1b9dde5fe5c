// fw::audio::models' HuBERTPretrainModel against torchaudio 0.13 (tests/fixtures/audio/gen_hubert.py
// -> hubert.safetensors): state_dict names and shapes, logits and feature penalty with formula
// weights under torchaudio's own masks (forward_with_mask), equal-embedding classes at -inf, the
// span masks' rules and their mean masked fraction against torchaudio's over many draws, the
// feature gradient multiplier, training, and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "fw/audio.h"
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
  static const fwtest::audio::FixtureFile f("hubert");
  return f;
}

const Case& case_named(const std::string& name) { return fix().named(name); }

// gen_hubert.py's SMALL configuration with the case's overrides.
AM::HuBERTPretrainOptions small_options(const Case& c) {
  AM::Wav2Vec2Options w;
  w.extractor_mode(c.str("extractor_mode"))
      .extractor_conv_layer_config({{16, 10, 5}, {16, 3, 2}, {16, 2, 2}})
      .extractor_conv_bias(c.flag("extractor_conv_bias"))
      .encoder_embed_dim(c.i("encoder_embed_dim"))
      .encoder_projection_dropout(0)
      .encoder_pos_conv_kernel(c.i("encoder_pos_conv_kernel"))
      .encoder_pos_conv_groups(c.i("encoder_pos_conv_groups"))
      .encoder_num_layers(c.i("encoder_num_layers"))
      .encoder_num_heads(c.i("encoder_num_heads"))
      .encoder_attention_dropout(0)
      .encoder_ff_interm_features(c.i("encoder_ff_interm_features"))
      .encoder_ff_interm_dropout(0)
      .encoder_dropout(0)
      .encoder_layer_norm_first(c.flag("encoder_layer_norm_first"))
      .encoder_layer_drop(0);
  return AM::HuBERTPretrainOptions()
      .wav2vec2(w)
      .mask_prob(c.num("mask_prob"))
      .mask_length(c.i("mask_length"))
      .skip_masked(c.flag("skip_masked"))
      .skip_nomask(c.flag("skip_nomask"))
      .num_classes(c.i("num_classes"))
      .final_dim(c.i("final_dim"))
      .feature_grad_mult(std::nullopt);
}

AM::HuBERTPretrainModel filled(const Case& c) {
  AM::HuBERTPretrainModel m = AM::hubert_pretrain_model(small_options(c));
  fill_like_torchaudio(*m, c);
  std::vector<int64_t> dup;
  for (const auto& v : c.find("dup")->array) dup.push_back(std::stoll(v.text));
  fw::NoGradGuard no_grad;
  for (size_t k = 1; k < dup.size(); k++)
    m->logit_generator->label_embeddings[dup[k]].copy_(m->logit_generator->label_embeddings[dup[0]]);
  m->eval();
  return m;
}

// Logits agree where finite and are -inf in the same places.
void expect_logits(const Case& c, const Tensor& got, const Tensor& want) {
  ASSERT_TRUE(got.defined()) << c.name;
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec()) << c.name;
  Tensor gi = fw::isinf(got), wi = fw::isinf(want);
  EXPECT_TRUE(fw::equal(gi, wi)) << c.name << ": -inf entries differ";
  FW_AUDIO_EXPECT_CLOSE(c, got.masked_fill(gi, 0), want.masked_fill(wi, 0), 1e-4, 1e-5);
}

// The case's tensor `key`, or undefined when it has none.
Tensor optional_out(const Case& c, const std::string& key) {
  try {
    return fix().out(c, key);
  } catch (const std::runtime_error&) {
    return Tensor();
  }
}

const char* kCases[] = {"small", "small_lengths", "layer_norm_skip_nomask"};

}  // namespace

TEST(AudioHuBERT, StateDictNamesMatchTorchaudio) {
  for (const char* name : kCases) {
    const Case& c = case_named(name);
    expect_torchaudio_names(*AM::hubert_pretrain_model(small_options(c)), c);
  }
  expect_torchaudio_names(*AM::hubert_pretrain_base(), case_named("hubert_pretrain_base"));
}

TEST(AudioHuBERT, LogitsMatchTorchaudioUnderItsMask) {
  fw::NoGradGuard no_grad;
  for (const char* name : kCases) {
    const Case& c = case_named(name);
    AM::HuBERTPretrainModel m = filled(c);
    const Tensor lengths = optional_out(c, "lengths");
    auto [lm, lu, pen] = m->forward_with_mask(fix().out(c, "x"), fix().out(c, "labels"), lengths,
                                             fix().out(c, "mask").to(fw::kBool));
    FW_AUDIO_EXPECT_CLOSE(c, pen.reshape({1}), fix().out(c, "feature_pen"), 1e-5, 1e-6);
    expect_logits(c, lm, fix().out(c, "logit_m"));
    if (c.flag("skip_nomask")) EXPECT_FALSE(lu.defined()) << name;
    else expect_logits(c, lu, fix().out(c, "logit_u"));
  }
}

// A duplicated label embedding ("small": rows 2 and 5 equal) puts -inf in the other class's
// column for every frame labelled with either; column 0 (the label itself) stays finite.
TEST(AudioHuBERT, EqualEmbeddingsGetMinusInfinity) {
  fw::NoGradGuard no_grad;
  const Case& c = case_named("small");
  AM::HuBERTPretrainModel m = filled(c);
  Tensor labels = fix().out(c, "labels"), mask = fix().out(c, "mask").to(fw::kBool);
  auto [lm, lu, pen] = m->forward_with_mask(fix().out(c, "x"), labels, Tensor(), mask);
  Tensor lab = labels.index({mask});
  for (int64_t n = 0; n < lab.size(0); n++) {
    const int64_t l = lab[n].item<int64_t>();
    for (int64_t k = 0; k < 7; k++) {
      const bool same = k == l || ((l == 2 || l == 5) && (k == 2 || k == 5));
      EXPECT_EQ(std::isinf(lm[n][k + 1].item<double>()), same) << n << " " << k;
    }
    EXPECT_TRUE(std::isfinite(lm[n][0].item<double>()));
  }
}

TEST(AudioHuBERT, SpanMasksFollowTheRules) {
  fw::manual_seed(3);
  // Static spans of 10 over 4 x 200 frames: every row masks the same number of frames, at least
  // min_masks spans' worth when nothing overlaps, and padded frames never.
  for (int rep = 0; rep < 20; rep++) {
    Tensor pad = fw::arange(200).expand({4, 200}) >= fw::tensor({200, 180, 150, 60}).unsqueeze(1);
    Tensor m = AM::detail::compute_mask_indices(4, 200, pad, 0.65, 10, "static", 0, 2);
    Tensor counts = m.sum({1});
    EXPECT_TRUE(fw::equal(counts, counts[0].expand({4}))) << counts;
    EXPECT_GT(counts[0].item<int64_t>(), 0);
    EXPECT_FALSE(fw::logical_and(m, pad).any().item<bool>());
  }
  // No overlap: spans of exactly 8 masked frames separated by at least min_space (2) unmasked.
  for (int rep = 0; rep < 20; rep++) {
    Tensor m = AM::detail::compute_mask_indices(1, 200, Tensor(), 0.5, 8, "static", 0, 2, true, 2).contiguous();
    EXPECT_GE(m.sum().item<int64_t>(), 2 * 8);  // min_masks spans of 8
    const bool* p = m.data_ptr<bool>();
    int64_t run = 0, gap = 100;
    for (int64_t t = 0; t <= 200; t++) {
      const bool on = t < 200 && p[t];
      if (on) {
        if (run == 0) EXPECT_GE(gap, 2) << "rep " << rep << " t " << t;
        run++;
        gap = 0;
      } else {
        if (run) EXPECT_EQ(run, 8) << "rep " << rep << " t " << t;
        run = 0;
        gap++;
      }
    }
  }
  // min_masks with probability 0: exactly two non-overlapping spans of 5 per row.
  for (int rep = 0; rep < 10; rep++) {
    Tensor few = AM::detail::compute_mask_indices(2, 100, Tensor(), 0.0, 5, "static", 0, 2, true, 1);
    EXPECT_TRUE(fw::equal(few.sum({1}), fw::full({2}, 10, fw::TensorOptions(fw::kLong)))) << few.sum({1});
  }
}

// The mean masked fraction over many draws matches torchaudio's (each case: 400 draws there, 400
// here; the spread of a 400-draw mean is well under the 0.02 allowed).
TEST(AudioHuBERT, MaskedFractionMatchesTorchaudio) {
  for (const Case& c : fix().cases("maskstats_")) {
    fw::manual_seed(11);
    const int64_t B = c.i("B"), T = c.i("T"), draws = c.i("draws");
    Tensor pad;
    if (c.find("lengths")->kind == fw::json::Value::Array) {
      std::vector<int64_t> l;
      for (const auto& v : c.find("lengths")->array) l.push_back(std::stoll(v.text));
      pad = fw::arange(T).expand({B, T}) >= fw::tensor(l).unsqueeze(1);
    }
    double frac = 0;
    for (int64_t d = 0; d < draws; d++)
      frac += AM::detail::compute_mask_indices(B, T, pad, c.num("prob"), c.i("length"), c.str("sel"),
                                               c.num("other"), c.i("min_masks"), c.flag("no_overlap"),
                                               c.i("min_space"))
                  .to(fw::kDouble)
                  .mean()
                  .item<double>();
    EXPECT_NEAR(frac / double(draws), c.num("mean_fraction"), 0.02) << c.name;
  }
}

// feature_grad_mult scales the feature extractor's gradient and nothing else.
TEST(AudioHuBERT, FeatureGradMultScalesTheExtractorGradient) {
  const Case& c = case_named("small_lengths");
  const Tensor x = fix().out(c, "x"), labels = fix().out(c, "labels"), mask = fix().out(c, "mask").to(fw::kBool);
  std::vector<Tensor> grads;
  for (std::optional<double> mult : {std::optional<double>(), std::optional<double>(0.25)}) {
    AM::HuBERTPretrainModel m = AM::hubert_pretrain_model(small_options(c).feature_grad_mult(mult));
    fill_like_torchaudio(*m, c);
    m->eval();
    auto [lm, lu, pen] = m->forward_with_mask(x, labels, fix().out(c, "lengths"), mask);
    (fw::cross_entropy_loss(lm, fw::zeros({lm.size(0)}, fw::TensorOptions(fw::kLong))) + lu.logsumexp(1).mean() +
     10 * pen)
        .backward();
    grads.push_back(m->named_parameters()["wav2vec2.feature_extractor.conv_layers.0.conv.weight"].grad().clone());
    grads.push_back(m->named_parameters()["logit_generator.final_proj.weight"].grad().clone());
  }
  EXPECT_TRUE(fw::allclose(grads[2], grads[0] * 0.25, 1e-4, 1e-9));
  EXPECT_TRUE(fw::allclose(grads[3], grads[1], 1e-5, 1e-9));
  EXPECT_GT(grads[0].abs().max().item<double>(), 0);
}

// hubert_loss's recipe (cross-entropy against column 0 on masked and unmasked frames, plus the
// feature penalty) trains with random masks; every parameter gets a finite gradient.
TEST(AudioHuBERT, Trains) {
  fw::manual_seed(2);
  const Case& c = case_named("small");
  AM::HuBERTPretrainModel m = AM::hubert_pretrain_model(small_options(c).feature_grad_mult(0.1));
  m->train();
  const Tensor x = fix().out(c, "x"), labels = fix().out(c, "labels");
  fw::optim::Adam opt(m->parameters(), fw::optim::AdamOptions(2e-3));
  double first = 0, last = 0;
  for (int step = 0; step < 8; step++) {
    opt.zero_grad();
    fw::manual_seed(100);  // the same masks every step, so the loss values compare
    auto [lm, lu, pen] = m(x, labels);
    auto zeros = [](const Tensor& l) { return fw::zeros({l.size(0)}, fw::TensorOptions(fw::kLong)); };
    Tensor loss = fw::cross_entropy_loss(lm, zeros(lm)) + 0.5 * fw::cross_entropy_loss(lu, zeros(lu)) + 10 * pen;
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

// Random masks through forward: with lengths, masked + unmasked logits cover exactly the valid
// frames; skip_masked leaves logit_m undefined; channel masks zero whole channels of the features.
TEST(AudioHuBERT, RandomMasksCoverTheValidFrames) {
  fw::manual_seed(9);
  fw::NoGradGuard no_grad;
  const Case& c = case_named("small_lengths");
  AM::HuBERTPretrainModel m = filled(c);
  const Tensor x = fix().out(c, "x"), labels = fix().out(c, "labels"), lengths = fix().out(c, "lengths");
  const Tensor mask = fix().out(c, "mask");
  const int64_t T = mask.size(1);
  // The valid frames: feature-extractor output lengths of 4000 and 2500 samples.
  auto [feat, out_len] = m->wav2vec2->feature_extractor->forward(x, lengths);
  const int64_t valid = out_len.sum().item<int64_t>();
  EXPECT_LT(valid, 2 * T);
  // Labels of padded frames are never read (recipes fill them with -100).
  Tensor padded_labels = labels.masked_fill(fw::arange(T).expand({2, T}) >= out_len.unsqueeze(1), -100);
  EXPECT_NO_THROW(m(x, padded_labels, lengths));
  for (int rep = 0; rep < 5; rep++) {
    auto [lm, lu, pen] = m(x, labels, lengths);
    EXPECT_EQ(lm.size(0) + lu.size(0), valid);
    EXPECT_GT(lm.size(0), 0);
    EXPECT_EQ(lm.size(1), 8);
  }
  AM::HuBERTPretrainModel skip = AM::hubert_pretrain_model(small_options(c).skip_masked(true));
  auto [sm, su, sp] = skip(x, labels, lengths);
  EXPECT_FALSE(sm.defined());
  EXPECT_EQ(su.size(1), 8);

  AM::detail::HuBERTMaskGenerator gen(32, AM::HuBERTPretrainOptions().mask_prob(0.5).mask_length(2)
                                              .mask_channel_prob(0.5).mask_channel_length(4));
  Tensor h = fw::randn({2, 30, 32}) + 5;  // nothing zero by chance
  auto [hm, tm] = gen->forward(h, Tensor());
  Tensor zero_channel = (hm == 0).all(1);  // (B, C): zeroed across every frame
  EXPECT_GT(zero_channel.sum().item<int64_t>(), 0);
  // Masked frames hold the mask embedding, except in the zeroed channels.
  Tensor keep = fw::logical_not(zero_channel).unsqueeze(1).expand({2, 30, 32});
  Tensor emb = gen->mask_embedding.expand({2, 30, 32});
  Tensor at_mask = fw::logical_and(tm.unsqueeze(-1).expand({2, 30, 32}), keep);
  EXPECT_TRUE(fw::equal(hm.index({at_mask}), emb.index({at_mask})));
  Tensor elsewhere = fw::logical_and(fw::logical_not(tm).unsqueeze(-1).expand({2, 30, 32}), keep);
  EXPECT_TRUE(fw::equal(hm.index({elsewhere}), h.index({elsewhere})));
}

// torchaudio's pre-training init: He-normal extractor convs, N(0, 0.02) transformer Linears with
// zero biases (the attention projections too), a zero positional-conv bias.
TEST(AudioHuBERT, InitialisesLikeTorchaudio) {
  fw::manual_seed(4);
  AM::HuBERTPretrainModel m = AM::hubert_pretrain_base();
  auto p = m->named_parameters();
  // conv_layers.1: 512 x 512 x 3, fan_in 1536.
  EXPECT_NEAR(p["wav2vec2.feature_extractor.conv_layers.1.conv.weight"].std().item<double>(), std::sqrt(2.0 / 1536),
              0.01 * std::sqrt(2.0 / 1536));
  for (const char* w : {"wav2vec2.encoder.transformer.layers.3.attention.k_proj.weight",
                        "wav2vec2.encoder.transformer.layers.3.feed_forward.output_dense.weight"})
    EXPECT_NEAR(p[w].std().item<double>(), 0.02, 0.0005) << w;
  EXPECT_EQ(p["wav2vec2.encoder.transformer.layers.0.attention.out_proj.bias"].abs().max().item<double>(), 0.0);
  EXPECT_EQ(p["wav2vec2.encoder.transformer.pos_conv_embed.conv.bias"].abs().max().item<double>(), 0.0);
  // Outside the transformer: defaults (the feature projection's bias is not zeroed).
  EXPECT_GT(p["wav2vec2.encoder.feature_projection.projection.bias"].abs().max().item<double>(), 0.0);
}

TEST(AudioHuBERT, RejectsBadArguments) {
  const Case& c = case_named("small");
  AM::HuBERTPretrainModel m = AM::hubert_pretrain_model(small_options(c));
  const Tensor x = fix().out(c, "x"), labels = fix().out(c, "labels");
  EXPECT_ERROR(m(x, labels.narrow(1, 0, 5)), "the labels must have one entry per output frame");
  EXPECT_ERROR(m(x, labels.to(fw::kFloat)), "integers");
  EXPECT_ERROR(m(x, labels + 7), "labels must be in [0, 7)");
  EXPECT_ERROR(m(x, labels - 1), "labels must be in [0, 7)");
  EXPECT_ERROR(m(x, labels, fw::tensor({4000.0, 3000.0})), "lengths must be a (batch,) integer tensor");
  EXPECT_ERROR(m(x, labels, fw::tensor({{4000}, {3000}})), "lengths must be a (batch,) integer tensor");
  EXPECT_ERROR(m->forward_with_mask(x, labels, Tensor(), fix().out(c, "mask").to(fw::kLong)),
               "the mask must be (batch, frames)");
  EXPECT_ERROR(AM::detail::compute_mask_indices(2, 10, Tensor(), 0.5, 2, "uniform", 0.5), "integral mask_other");
  EXPECT_ERROR(AM::detail::compute_mask_indices(2, 10, Tensor(), 0.5, 2, "static", 0, -1), "must be non-negative");
  EXPECT_ERROR(m->forward_with_mask(x, labels, Tensor(), fw::zeros({2, 3}, fw::TensorOptions(fw::kBool))),
               "the mask must be (batch, frames)");
  EXPECT_ERROR(AM::hubert_pretrain_model(small_options(c).feature_grad_mult(1.5)),
               "feature_grad_mult must be unset or in (0, 1), got 1.5");
  EXPECT_ERROR(AM::hubert_pretrain_model(small_options(c).mask_selection("gamma")), "unknown mask selection 'gamma'");
  AM::HuBERTPretrainModel nomask = AM::hubert_pretrain_model(small_options(c).mask_prob(0));
  EXPECT_ERROR(nomask(x, labels), "needs a time mask");
  EXPECT_ERROR(AM::detail::compute_mask_indices(2, 10, fw::zeros({3, 10}, fw::TensorOptions(fw::kBool)), 0.5, 2),
               "padding mask of shape [3, 10] does not match");
}
