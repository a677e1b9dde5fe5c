// fw::audio::models' Tacotron2 against torchaudio 0.13 (tests/fixtures/audio/gen_tacotron2.py ->
// tacotron2.safetensors, tacotron2_small.pt): state_dict names and shapes, teacher-forced outputs
// (with and without mask_padding, tokens wider than the longest sequence), inference (gates
// firing at different steps, the step limit, two frames per step, lengths omitted) with formula
// weights, a torch.save'd state_dict through fw::load, the prenet's always-on dropout, unsorted
// lengths, the initialisation, training and argument errors. torchaudio's prenet dropout draws
// from torch's generator, so the references skip it and the compared models use prenet_dropout(0).
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
  static const fwtest::audio::FixtureFile f("tacotron2");
  return f;
}

// The case's constructor arguments (absent ones keep torchaudio's defaults), prenet dropout off.
AM::Tacotron2Options options_of(const Case& c) {
  AM::Tacotron2Options d, o;
  o.mask_padding(c.flag("mask_padding", d.mask_padding()))
      .n_mels(c.i("n_mels", d.n_mels()))
      .n_symbol(c.i("n_symbol", d.n_symbol()))
      .n_frames_per_step(c.i("n_frames_per_step", d.n_frames_per_step()))
      .symbol_embedding_dim(c.i("symbol_embedding_dim", d.symbol_embedding_dim()))
      .encoder_embedding_dim(c.i("encoder_embedding_dim", d.encoder_embedding_dim()))
      .encoder_n_convolution(c.i("encoder_n_convolution", d.encoder_n_convolution()))
      .encoder_kernel_size(c.i("encoder_kernel_size", d.encoder_kernel_size()))
      .decoder_rnn_dim(c.i("decoder_rnn_dim", d.decoder_rnn_dim()))
      .decoder_max_step(c.i("decoder_max_step", d.decoder_max_step()))
      .decoder_early_stopping(c.flag("decoder_early_stopping", d.decoder_early_stopping()))
      .attention_rnn_dim(c.i("attention_rnn_dim", d.attention_rnn_dim()))
      .attention_hidden_dim(c.i("attention_hidden_dim", d.attention_hidden_dim()))
      .attention_location_n_filter(c.i("attention_location_n_filter", d.attention_location_n_filter()))
      .attention_location_kernel_size(c.i("attention_location_kernel_size", d.attention_location_kernel_size()))
      .prenet_dim(c.i("prenet_dim", d.prenet_dim()))
      .postnet_n_convolution(c.i("postnet_n_convolution", d.postnet_n_convolution()))
      .postnet_kernel_size(c.i("postnet_kernel_size", d.postnet_kernel_size()))
      .postnet_embedding_dim(c.i("postnet_embedding_dim", d.postnet_embedding_dim()))
      .gate_threshold(c.num("gate_threshold", d.gate_threshold()))
      .prenet_dropout(0.0);
  return o;
}

AM::Tacotron2 filled(const Case& c) {
  AM::Tacotron2 m(options_of(c));
  fill_like_torchaudio(*m, c);
  m->eval();
  return m;
}

// The small configuration of the fixture (gen_tacotron2.py's SMALL).
AM::Tacotron2Options small() {
  return AM::Tacotron2Options()
      .n_mels(8)
      .n_symbol(20)
      .symbol_embedding_dim(16)
      .encoder_embedding_dim(16)
      .encoder_n_convolution(2)
      .encoder_kernel_size(3)
      .decoder_rnn_dim(24)
      .attention_rnn_dim(20)
      .attention_hidden_dim(12)
      .attention_location_n_filter(4)
      .attention_location_kernel_size(5)
      .prenet_dim(10)
      .postnet_n_convolution(3)
      .postnet_kernel_size(3)
      .postnet_embedding_dim(14);
}

const char* kForwardCases[] = {"forward", "forward_masked", "forward_wide"};
const char* kInferCases[] = {"infer", "infer_max_steps", "infer_two_frames"};

}  // namespace

TEST(AudioTacotron2, StateDictNamesMatchTorchaudio) {
  for (const char* name : kForwardCases) expect_torchaudio_names(*AM::Tacotron2(options_of(fix().named(name))), fix().named(name));
  for (const char* name : kInferCases) expect_torchaudio_names(*AM::Tacotron2(options_of(fix().named(name))), fix().named(name));
  expect_torchaudio_names(*AM::Tacotron2(), fix().named("tacotron2_default"));
}

TEST(AudioTacotron2, TeacherForcingMatchesTorchaudio) {
  fw::NoGradGuard no_grad;
  for (const char* name : kForwardCases) {
    const Case& c = fix().named(name);
    AM::Tacotron2 m = filled(c);
    auto [mel, post, gate, align] =
        m(fix().out(c, "tokens"), fix().out(c, "token_lengths"), fix().out(c, "mel"), fix().out(c, "mel_lengths"));
    FW_AUDIO_EXPECT_CLOSE(c, mel, fix().out(c, "mel_out"), 1e-4, 1e-5);
    FW_AUDIO_EXPECT_CLOSE(c, post, fix().out(c, "mel_postnet"), 1e-4, 1e-5);
    FW_AUDIO_EXPECT_CLOSE(c, gate, fix().out(c, "gate"), 1e-4, 1e-5);
    FW_AUDIO_EXPECT_CLOSE(c, align, fix().out(c, "alignments"), 1e-4, 1e-5);
  }
}

TEST(AudioTacotron2, InferenceMatchesTorchaudio) {
  fw::NoGradGuard no_grad;
  for (const char* name : kInferCases) {
    const Case& c = fix().named(name);
    AM::Tacotron2 m = filled(c);
    std::optional<Tensor> lengths;
    if (c.flag("with_lengths")) lengths = fix().out(c, "token_lengths");
    auto [mel, mel_lengths, align] = m->infer(fix().out(c, "tokens"), lengths);
    FW_AUDIO_EXPECT_CLOSE(c, mel, fix().out(c, "mel"), 1e-4, 1e-5);
    FW_AUDIO_EXPECT_CLOSE(c, align, fix().out(c, "alignments"), 1e-4, 1e-5);
    // torchaudio counts decoder steps; fw counts frames (the same for one frame per step).
    EXPECT_EQ(mel_lengths.scalar_type(), fw::kInt) << name;
    EXPECT_TRUE(fw::equal(mel_lengths, fix().out(c, "lengths") * int(c.i("n_frames_per_step", 1)))) << name;
    // The decoder's own gate logits, every step.
    Tensor tokens = fix().out(c, "tokens");
    Tensor tl = lengths ? *lengths : fw::full({tokens.size(0)}, tokens.size(1), fw::TensorOptions(fw::kLong));
    Tensor memory = m->encoder(m->embedding(tokens).transpose(1, 2), tl);
    FW_AUDIO_EXPECT_CLOSE(c, std::get<2>(m->decoder->infer(memory, tl)), fix().out(c, "gate"), 1e-4, 1e-5);
  }
}

TEST(AudioTacotron2, LoadsATorchaudioStateDict) {
  const Case& c = fix().named("tacotron2_pt");
  AM::Tacotron2 m(small().decoder_max_step(15).prenet_dropout(0));
  fw::load(m, std::string(FW_AUDIO_FIXTURE_DIR) + "/tacotron2_small.pt");
  m->eval();
  fw::NoGradGuard no_grad;
  auto [mel, lengths, align] = m->infer(fix().out(c, "tokens"), fix().out(c, "token_lengths"));
  FW_AUDIO_EXPECT_CLOSE(c, mel, fix().out(c, "mel"), 1e-4, 1e-5);
  FW_AUDIO_EXPECT_CLOSE(c, align, fix().out(c, "alignments"), 1e-4, 1e-5);
  EXPECT_TRUE(fw::equal(lengths, fix().out(c, "lengths")));
  // A deep copy (Module::clone) carries every parameter and buffer, also the location layer's.
  auto copy = std::dynamic_pointer_cast<AM::Tacotron2Impl>(m->clone());
  ASSERT_TRUE(copy);
  auto [mel2, lengths2, align2] = copy->infer(fix().out(c, "tokens"), fix().out(c, "token_lengths"));
  EXPECT_TRUE(fw::equal(mel2, mel));
  EXPECT_NE(copy->decoder->attention_layer->location_layer->location_conv->weight.data_ptr(),
            m->decoder->attention_layer->location_layer->location_conv->weight.data_ptr());
}

// torchaudio packs the encoder's sequences with enforce_sorted and rejects unsorted lengths; fw
// runs each sequence over its own steps in any order: permuting the batch permutes the results.
TEST(AudioTacotron2, UnsortedLengthsPermuteTheBatch) {
  fw::NoGradGuard no_grad;
  const Case& c = fix().named("forward");
  AM::Tacotron2 m = filled(c);
  Tensor perm = fw::tensor({2L, 0L, 1L});
  auto ref = m(fix().out(c, "tokens"), fix().out(c, "token_lengths"), fix().out(c, "mel"), fix().out(c, "mel_lengths"));
  auto got = m(fix().out(c, "tokens").index_select(0, perm), fix().out(c, "token_lengths").index_select(0, perm),
               fix().out(c, "mel").index_select(0, perm), fix().out(c, "mel_lengths").index_select(0, perm));
  EXPECT_TRUE(fw::allclose(std::get<1>(got), std::get<1>(ref).index_select(0, perm), 1e-5, 1e-6));
  EXPECT_TRUE(fw::allclose(std::get<3>(got), std::get<3>(ref).index_select(0, perm), 1e-5, 1e-6));
}

// The prenet drops units with probability 0.5 in eval mode too (as torchaudio's), scaling the
// kept ones by 1 / (1 - p), with a new draw per call; prenet_dropout changes the probability.
TEST(AudioTacotron2, PrenetDropoutIsAlwaysOn) {
  fw::manual_seed(11);
  fw::NoGradGuard no_grad;
  for (double p : {0.5, 0.2}) {
    AM::detail::Tacotron2Prenet on(8, std::vector<int64_t>{64}, p), off(8, std::vector<int64_t>{64}, 0.0);
    on->eval();
    off->eval();
    // Positive weights on a positive input: every unit is alive before the dropout.
    Tensor w = on->layers[0]->as<fw::nn::Linear>()->weight;
    w.abs_();
    off->layers[0]->as<fw::nn::Linear>()->weight.copy_(w);
    Tensor x = fw::ones({400, 8});
    Tensor plain = off(x), a = on(x), b = on(x);
    ASSERT_TRUE((plain > 0).all().item<bool>());
    Tensor kept = a != 0;
    EXPECT_NEAR(1 - kept.to(fw::kDouble).mean().item<double>(), p, 0.02) << p;
    EXPECT_TRUE(fw::allclose(a.masked_select(kept), (plain / (1 - p)).masked_select(kept), 1e-5, 1e-6)) << p;
    EXPECT_FALSE(fw::equal(a, b)) << p;
    EXPECT_TRUE(fw::equal(off(x), plain)) << p;
  }
}

// torchaudio's init: xavier_uniform_ weights with the layers' gains (bounds
// gain * sqrt(6 / (fan_in + fan_out))), a xavier-uniform embedding.
TEST(AudioTacotron2, InitialisesLikeTorchaudio) {
  fw::manual_seed(3);
  AM::Tacotron2 m(small());
  auto p = m->named_parameters();
  auto bound = [](double gain, double fan_in, double fan_out) { return gain * std::sqrt(6.0 / (fan_in + fan_out)); };
  auto expect_xavier = [&](const std::string& name, double gain, double fan_in, double fan_out) {
    Tensor w = p[name];
    const double b = bound(gain, fan_in, fan_out);
    EXPECT_LE(w.abs().max().item<double>(), b) << name;
    EXPECT_GT(w.abs().max().item<double>(), 0.8 * b) << name;
  };
  expect_xavier("embedding.weight", 1.0, 16, 20);
  expect_xavier("encoder.convolutions.0.0.weight", std::sqrt(2.0), 16 * 3, 16 * 3);
  expect_xavier("decoder.attention_layer.query_layer.weight", 5.0 / 3.0, 20, 12);
  expect_xavier("decoder.attention_layer.location_layer.location_dense.weight", 5.0 / 3.0, 4, 12);
  expect_xavier("decoder.attention_layer.location_layer.location_conv.weight", 1.0, 2 * 5, 4 * 5);
  expect_xavier("decoder.prenet.layers.0.weight", 1.0, 8, 10);
  expect_xavier("postnet.convolutions.0.0.weight", 5.0 / 3.0, 8 * 3, 14 * 3);
  expect_xavier("postnet.convolutions.2.0.weight", 1.0, 14 * 3, 8 * 3);
  // Biases keep the layers' default init: U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  EXPECT_LE(p["decoder.gate_layer.bias"].abs().max().item<double>(), 1 / std::sqrt(24.0 + 16.0));
  EXPECT_EQ(p.find("decoder.prenet.layers.0.bias"), nullptr);
}

// A teacher-forced training step reaches every parameter with a finite gradient (through the
// attention loop, the BLSTM over packed sequences and the postnet), and Adam lowers the loss,
// measured in eval mode with the same prenet draws before and after.
TEST(AudioTacotron2, Trains) {
  fw::manual_seed(5);
  AM::Tacotron2 m(small().mask_padding(true));
  Tensor tokens = fw::randint(1, 20, {3, 6});
  Tensor tl = fw::tensor({6L, 4L, 5L});
  Tensor target = fw::sin(fw::arange(3 * 8 * 10, fw::TensorOptions(fw::kFloat)).reshape({3, 8, 10}) * 0.1);
  Tensor ml = fw::tensor({10L, 7L, 9L});
  // The gate learns to fire at each target's last frame.
  Tensor stop = (fw::arange(10).unsqueeze(0) >= (ml - 1).unsqueeze(1)).to(fw::kFloat);
  auto loss_of = [&] {
    auto [mel, post, gate, align] = m(tokens, tl, target, ml);
    return fw::mse_loss(mel, target) + fw::mse_loss(post, target) + fw::binary_cross_entropy_with_logits(gate, stop);
  };
  auto eval_loss = [&] {
    fw::NoGradGuard no_grad;
    m->eval();
    fw::manual_seed(99);
    double v = loss_of().item<double>();
    m->train();
    return v;
  };
  const double first = eval_loss();
  fw::optim::Adam opt(m->parameters(), fw::optim::AdamOptions(5e-3));
  m->train();
  for (int step = 0; step < 40; step++) {
    opt.zero_grad();
    loss_of().backward();
    if (step == 0) ASSERT_NO_FATAL_FAILURE(fwtest::audio::expect_finite_grads(*m));
    opt.step();
  }
  EXPECT_LT(eval_loss(), 0.7 * first);
}

TEST(AudioTacotron2, RejectsBadArguments) {
  AM::Tacotron2 m(small());
  Tensor tokens = fw::ones({2, 4}, fw::TensorOptions(fw::kLong)), tl = fw::tensor({4L, 3L});
  Tensor mel = fw::zeros({2, 8, 5}), ml = fw::tensor({5L, 5L});
  EXPECT_ERROR(m(fw::ones({4}, fw::TensorOptions(fw::kLong)), tl, mel, ml),
               "[Tacotron2] tokens must be a (batch, length >= 1) integer tensor, got int64 [4]");
  EXPECT_ERROR(m(fw::ones({2, 4}), tl, mel, ml), "integer tensor, got float32 [2, 4]");
  EXPECT_ERROR(m(tokens, fw::tensor({5L, 3L}), mel, ml), "the token lengths must lie in [1, 4], got values from 3 to 5");
  EXPECT_ERROR(m(tokens, fw::tensor({4L, 0L}), mel, ml), "got values from 0 to 4");
  EXPECT_ERROR(m(tokens, fw::tensor({4L}), mel, ml), "the token lengths must be a 1-D integer tensor of 2 lengths");
  EXPECT_ERROR(m(tokens, tl, fw::zeros({2, 7, 5}), ml), "the target mel spectrogram must be (2, 8, frames)");
  EXPECT_ERROR(m(fw::full({2, 4}, 20L), tl, mel, ml), "[Tacotron2] tokens must lie in [0, n_symbol = 20), got values from 20 to 20");
  AM::Tacotron2 two(small().n_frames_per_step(2));
  EXPECT_ERROR(two(tokens, tl, mel, ml), "a positive multiple of n_frames_per_step (2) frames, got [2, 8, 5]");
  EXPECT_ERROR(AM::Tacotron2(small().symbol_embedding_dim(8)), "symbol_embedding_dim (8) must equal encoder_embedding_dim (16)");
  EXPECT_ERROR(AM::Tacotron2(small().encoder_kernel_size(4)), "encoder_kernel_size must be a positive odd number");
  EXPECT_ERROR(AM::Tacotron2(small().postnet_kernel_size(2)), "postnet_kernel_size must be a positive odd number");
  EXPECT_ERROR(AM::Tacotron2(small().attention_location_kernel_size(30)), "attention_location_kernel_size must be");
  EXPECT_ERROR(AM::Tacotron2(small().encoder_embedding_dim(15).symbol_embedding_dim(15)), "encoder_embedding_dim must be even");
  EXPECT_ERROR(AM::Tacotron2(small().prenet_dropout(1.5)), "prenet dropout must be in [0, 1], got 1.5");
  EXPECT_ERROR(AM::Tacotron2(small().decoder_max_step(0)), "decoder_max_step must be positive");
  EXPECT_ERROR(m->decoder->infer(fw::zeros({2, 3, 7}), tl), "the decoder expects encoder outputs (batch, time >= 1, 16)");
}
