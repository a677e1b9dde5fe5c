// fw::audio::models' Emformer, RNNT and RNNTBeamSearch against torchaudio 0.13
// (tests/fixtures/audio/gen_emformer.py -> emformer.safetensors, emformer_rnnt_small.pt): state_dict
// names and shapes, whole-utterance and streaming outputs and states with formula weights, the
// beam search's hypotheses and scores, a torch.save'd state_dict through fw::load, training with
// rnnt_loss, fw::compile, and argument errors.
#include <gtest/gtest.h>

#include <cmath>
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

const fwtest::audio::FixtureFile& fix() {
  static const fwtest::audio::FixtureFile f("emformer");
  return f;
}

// "state{layer}_{i}" tensors of a case (with `prefix`), compared with a state.
void expect_states(const Case& c, const AM::StreamState& st, double rtol, double atol) {
  ASSERT_FALSE(st.empty()) << c.name;
  for (size_t i = 0; i < st.size(); i++)
    for (size_t j = 0; j < st[i].size(); j++) {
      const std::string key = "state" + std::to_string(i) + "_" + std::to_string(j);
      const Tensor& want = fix().out(c, key);
      if (!want.is_floating_point()) {
        EXPECT_TRUE(fw::equal(st[i][j].to(want.dtype()), want)) << c.name << " " << key;
      } else {
        FW_AUDIO_EXPECT_CLOSE(c, st[i][j], want, rtol, atol);
      }
    }
}

AM::Emformer make_emformer(const Case& c) {
  return AM::Emformer(c.i("input_dim"), c.i("num_heads"), c.i("ffn_dim"), c.i("num_layers"), c.i("segment_length"),
                      c.num("dropout", 0.0), c.str("activation", "relu"), c.i("left_context_length"),
                      c.i("right_context_length"), c.i("max_memory_size"),
                      c.has("weight_init_scale_strategy") ? c.str("weight_init_scale_strategy", "depthwise") : "",
                      c.flag("tanh_on_mem"), c.num("negative_inf", -1e8));
}

AM::EmformerRNNTOptions rnnt_options(const Case& c) {
  return AM::EmformerRNNTOptions()
      .input_dim(c.i("input_dim"))
      .encoding_dim(c.i("encoding_dim"))
      .num_symbols(c.i("num_symbols"))
      .segment_length(c.i("segment_length"))
      .right_context_length(c.i("right_context_length"))
      .time_reduction_input_dim(c.i("time_reduction_input_dim"))
      .time_reduction_stride(c.i("time_reduction_stride"))
      .transformer_num_heads(c.i("transformer_num_heads"))
      .transformer_ffn_dim(c.i("transformer_ffn_dim"))
      .transformer_num_layers(c.i("transformer_num_layers"))
      .transformer_dropout(c.num("transformer_dropout"))
      .transformer_activation(c.str("transformer_activation"))
      .transformer_left_context_length(c.i("transformer_left_context_length"))
      .transformer_max_memory_size(c.i("transformer_max_memory_size"))
      .transformer_weight_init_scale_strategy(c.str("transformer_weight_init_scale_strategy"))
      .transformer_tanh_on_mem(c.flag("transformer_tanh_on_mem"))
      .symbol_embedding_dim(c.i("symbol_embedding_dim"))
      .num_lstm_layers(c.i("num_lstm_layers"))
      .lstm_layer_norm(c.flag("lstm_layer_norm"))
      .lstm_layer_norm_epsilon(c.num("lstm_layer_norm_epsilon"))
      .lstm_dropout(c.num("lstm_dropout"));
}

// The formula-weight RNNT of case "rnnt" (the beam search cases decode with it).
AM::RNNT formula_rnnt() {
  const Case c = fix().cases("rnnt")[0];
  AM::RNNT m = AM::emformer_rnnt_model(rnnt_options(c));
  fill_like_torchaudio(*m, c);
  m->eval();
  return m;
}

TEST(AudioEmformer, MatchesTorchaudioWholeAndStreaming) {
  const auto cases = fix().cases("emformer_");
  ASSERT_EQ(cases.size(), 4u);  // three configurations and emformer_rnnt_base_names
  for (const Case& c : cases) {
    if (c.name == "emformer_rnnt_base_names") continue;
    AM::Emformer m = make_emformer(c);
    fill_like_torchaudio(*m, c);
    m->eval();
    fw::NoGradGuard no_grad;
    auto [y, lengths] = m(fix().out(c, "x"), fix().out(c, "lengths"));
    FW_AUDIO_EXPECT_CLOSE(c, y, fix().out(c), 1e-4, 1e-5);
    EXPECT_TRUE(fw::equal(lengths, fix().out(c, "out_lengths"))) << c.name;
    std::optional<AM::StreamState> states;
    for (int64_t s = 0; s < c.i("segments"); s++) {
      const std::string seg = "seg" + std::to_string(s);
      auto [o, ol, st] = m->infer(fix().out(c, seg + "_in"), fix().out(c, seg + "_lengths"), states);
      FW_AUDIO_EXPECT_CLOSE(c, o, fix().out(c, seg + "_out"), 1e-4, 1e-5);
      EXPECT_TRUE(fw::equal(ol, fix().out(c, seg + "_out_lengths"))) << c.name << " " << seg;
      states = st;
    }
    expect_states(c, *states, 1e-4, 1e-5);
    // A clone computes the same.
    auto copy = std::dynamic_pointer_cast<AM::EmformerImpl>(m->clone());
    ASSERT_TRUE(copy);
    EXPECT_TRUE(fw::equal(std::get<0>(copy->forward(fix().out(c, "x"), fix().out(c, "lengths"))), y)) << c.name;
  }
}

TEST(AudioEmformer, RNNTMatchesTorchaudio) {
  const auto cases = fix().cases("rnnt");
  ASSERT_EQ(cases.size(), 3u);  // rnnt, rnnt_plain_lstm, rnnt_pt
  for (const Case& c : cases) {
    if (c.name == "rnnt_pt") continue;
    AM::RNNT m = AM::emformer_rnnt_model(rnnt_options(c));
    fill_like_torchaudio(*m, c);
    m->eval();
    fw::NoGradGuard no_grad;
    auto [out, sl, tl, state] = m(fix().out(c, "src"), fix().out(c, "src_len"), fix().out(c, "tgt"),
                                  fix().out(c, "tgt_len"));
    FW_AUDIO_EXPECT_CLOSE(c, out, fix().out(c), 1e-4, 1e-5);
    EXPECT_TRUE(fw::equal(sl, fix().out(c, "out_src_len"))) << c.name;
    EXPECT_TRUE(fw::equal(tl, fix().out(c, "out_tgt_len"))) << c.name;
    auto [p2, l2, state2] = m->predict(fix().out(c, "tgt2"), fw::full({2}, 2, fw::TensorOptions(fw::kLong)), state);
    FW_AUDIO_EXPECT_CLOSE(c, p2, fix().out(c, "pred2"), 1e-4, 1e-5);
    expect_states(c, state2, 1e-4, 1e-5);
    auto copy = std::dynamic_pointer_cast<AM::RNNTImpl>(m->clone());
    ASSERT_TRUE(copy);
    EXPECT_NE(copy->transcriber.get(), m->transcriber.get());
    EXPECT_TRUE(fw::equal(std::get<0>(copy->forward(fix().out(c, "src"), fix().out(c, "src_len"),
                                                    fix().out(c, "tgt"), fix().out(c, "tgt_len"))),
                          out))
        << c.name;
  }
  expect_torchaudio_names(*AM::emformer_rnnt_base(4097), fix().cases("emformer_rnnt_base_names")[0]);
}

void expect_hypotheses(const Case& c, const std::vector<AM::Hypothesis>& hyps, const std::string& prefix,
                       int64_t count) {
  ASSERT_EQ(int64_t(hyps.size()), count) << c.name << " " << prefix;
  for (int64_t i = 0; i < count; i++) {
    const std::string k = prefix + "hyp" + std::to_string(i);
    const Tensor want = fix().out(c, k + "_tokens");
    std::vector<int64_t> tokens(want.data_ptr<int64_t>(), want.data_ptr<int64_t>() + want.numel());
    EXPECT_EQ(hyps[size_t(i)].tokens, tokens) << c.name << " " << k;
    EXPECT_NEAR(hyps[size_t(i)].score, fix().out(c, k + "_score").item<double>(), 2e-4) << c.name << " " << k;
    EXPECT_EQ(hyps[size_t(i)].predictor_out.sizes(), fw::IntArrayRef({1, c.i("encoding_dim", 12)}));
  }
}

TEST(AudioEmformer, BeamSearchMatchesTorchaudio) {
  AM::RNNT m = formula_rnnt();
  const int64_t blank = 6;
  for (const Case& c : fix().cases("beam_search_w")) {
    AM::RNNTBeamSearch search(m, blank, c.num("temperature"), nullptr, c.i("step_max_tokens"));
    const Tensor feats = fix().out(c, "feats");
    auto hyps = search(feats, fw::scalar_tensor(feats.size(0), fw::TensorOptions(fw::kLong)), c.i("beam"));
    expect_hypotheses(c, hyps, "", c.i("hyps"));
    // (1, T, D) input and a (1,) length give the same.
    auto again = search(feats.unsqueeze(0), fw::full({1}, feats.size(0), fw::TensorOptions(fw::kLong)), c.i("beam"));
    ASSERT_EQ(again.size(), hyps.size());
    for (size_t i = 0; i < hyps.size(); i++) EXPECT_EQ(again[i].tokens, hyps[i].tokens);
  }
  // Streaming: segments of 12 frames, the state and best hypothesis carried over.
  const Case c = fix().cases("beam_search_streaming")[0];
  AM::RNNTBeamSearch search(m, blank);
  const Tensor feats = fix().out(c, "feats");
  std::optional<AM::StreamState> state;
  std::optional<AM::Hypothesis> best;
  for (int64_t s = 0; s < c.i("segments"); s++) {
    const std::string seg = "seg" + std::to_string(s) + "_";
    auto [hyps, st] = search.infer(feats.slice(0, s * 8, s * 8 + 12), fw::scalar_tensor(12, fw::TensorOptions(fw::kLong)),
                                   c.i("beam"), state, best ? &*best : nullptr);
    expect_hypotheses(c, hyps, seg, fix().out(c, seg + "hyps").item<int64_t>());
    state = st;
    best = hyps[0];
  }
}

TEST(AudioEmformer, LoadsATorchaudioStateDict) {
  const Case c = fix().cases("rnnt_pt")[0];
  const Case shape = fix().cases("rnnt")[0];
  AM::RNNT m = AM::emformer_rnnt_model(rnnt_options(shape));
  fw::load(m, std::string(FW_AUDIO_FIXTURE_DIR) + "/emformer_rnnt_small.pt");
  m->eval();
  fw::NoGradGuard no_grad;
  auto out = std::get<0>(m(fix().out(c, "src"), fw::full({1}, 24, fw::TensorOptions(fw::kLong)), fix().out(c, "tgt"),
                           fw::full({1}, 3, fw::TensorOptions(fw::kLong))));
  FW_AUDIO_EXPECT_CLOSE(c, out, fix().out(c), 1e-4, 1e-5);
}

// A few SGD steps on rnnt_loss lower the loss, and every parameter gets a gradient.
TEST(AudioEmformer, TrainsWithRnntLoss) {
  fw::manual_seed(4);
  AM::RNNT m = AM::emformer_rnnt_model(rnnt_options(fix().cases("rnnt")[0]));
  m->train();
  fw::optim::SGD opt(m->parameters(), fw::optim::SGDOptions(0.05).momentum(0.9));
  // 32 and 28 frames of features plus the 4 frames of right context the last segment looks at
  // (torchaudio's recipes pad the features so); the transcriber gives 8 and 7 frames.
  const Tensor src = fw::randn({2, 36, 10}), src_len = fw::tensor({32, 28}, fw::TensorOptions(fw::kInt));
  const Tensor tgt = fw::tensor({{1, 2, 3}, {4, 5, 0}}, fw::TensorOptions(fw::kInt));
  const Tensor tgt_len = fw::tensor({3, 2}, fw::TensorOptions(fw::kInt));
  // The predictor sees the blank first (torchaudio's training recipes prepend it).
  const Tensor pred_in = fw::cat({fw::full({2, 1}, 6, fw::TensorOptions(fw::kInt)), tgt}, 1);
  double first = 0, last = 0;
  for (int step = 0; step < 8; step++) {
    opt.zero_grad();
    auto [logits, sl, tl, st] = m(src, src_len, pred_in, tgt_len + 1);
    Tensor loss = fw::audio::functional::rnnt_loss(logits, tgt, sl.to(fw::kInt), tgt_len, /*blank=*/6);
    loss.backward();
    if (step == 0) {
      first = loss.item<double>();
      for (const auto& kv : m->named_parameters())
        EXPECT_TRUE(kv.value().grad().defined() && fw::isfinite(kv.value().grad()).all().item<bool>()) << kv.key();
    }
    last = loss.item<double>();
    opt.step();
  }
  EXPECT_TRUE(std::isfinite(first));
  EXPECT_LT(last, first * 0.8) << "first " << first << " last " << last;
}

// The whole-utterance Emformer builds its block mask on the host and reads no data: a compiled
// Emformer (batch > 1, with the key padding mask) is one graph and matches eager.
TEST(AudioEmformer, CompilesWithoutAGraphBreak) {
  fw::manual_seed(5);
  AM::Emformer m(8, 2, 16, 2, 4, 0.0, "relu", 3, 2, 2);
  m->eval();
  fw::NoGradGuard no_grad;
  auto fn = [&](const Tensor& x, const Tensor& lengths) { return std::get<0>(m(x, lengths)); };
  auto f = fw::compile(fn, fw::CompileOptions().backend("aot_eager"));
  const Tensor x = fw::randn({3, 15, 8}), lengths = fw::tensor({13, 10, 6}, fw::TensorOptions(fw::kLong));
  const Tensor eager = fn(x, lengths);
  EXPECT_TRUE(fw::allclose(f(x, lengths), eager, 1e-5, 1e-6));
  EXPECT_TRUE(f.explain().breaks.empty());
  EXPECT_EQ(f.explain().graph_count, 1);
}

TEST(AudioEmformer, ChecksArguments) {
  EXPECT_ERROR(AM::Emformer(10, 3, 16, 1, 4), "multiple of num_heads");
  EXPECT_ERROR(AM::Emformer(8, 2, 16, 1, 4, 0.0, "tanh"), "unsupported activation \"tanh\"");
  EXPECT_ERROR(AM::Emformer(8, 2, 16, 1, 4, 0.0, "relu", 0, 0, 0, "xavier"), "weight_init_scale_strategy");
  EXPECT_ERROR(AM::Emformer(8, 2, 16, 1, 0), "segment_length");
  AM::Emformer m(8, 2, 16, 1, 4, 0.0, "relu", 2, 2, 1);
  const auto lk = fw::TensorOptions(fw::kLong);
  EXPECT_ERROR(m(fw::randn({2, 10, 6}), fw::tensor({8, 8}, lk)), "(B, T, 8)");
  EXPECT_ERROR(m(fw::randn({2, 2, 8}), fw::tensor({2, 2}, lk)), "T > right_context_length");
  EXPECT_ERROR(m(fw::randn({2, 10, 8}), fw::tensor({8}, lk)), "lengths must be a (B,) integer tensor");
  EXPECT_ERROR(m(fw::randn({2, 10, 8}), fw::tensor({8.0, 8.0})), "lengths must be a (B,) integer tensor");
  EXPECT_ERROR(m(fw::randn({2, 10, 8}), fw::tensor({11, 3}, lk)), "lengths must lie in [0, 10]");
  EXPECT_ERROR(m->infer(fw::randn({2, 7, 8}), fw::tensor({7, 7}, lk)), "expected size of 6 for dimension 1");
  auto [o, ol, st] = m->infer(fw::randn({2, 6, 8}), fw::tensor({6, 6}, lk));
  EXPECT_EQ(o.sizes(), fw::IntArrayRef({2, 4, 8}));
  AM::StreamState bad = st;
  bad[0][1] = fw::zeros({3, 2, 8});
  EXPECT_ERROR(m->infer(fw::randn({2, 6, 8}), fw::tensor({6, 6}, lk), bad), "state tensor 1 must be [2, 2, 8]");
  EXPECT_ERROR(m->infer(fw::randn({2, 6, 8}), fw::tensor({6, 6}, lk), AM::StreamState{}), "one entry per layer");

  AM::RNNT r = formula_rnnt();
  EXPECT_ERROR(AM::RNNTBeamSearch(r, 7), "blank must be a symbol in [0, 7)");
  AM::RNNTBeamSearch search(r, 6);
  EXPECT_ERROR(search(fw::randn({2, 12, 10}), fw::scalar_tensor(12, lk), 3), "(T, D) or (1, T, D)");
  EXPECT_ERROR(search(fw::randn({12, 10}), fw::full({2}, 12, lk), 3), "length must be of shape () or (1,)");
  EXPECT_ERROR(search(fw::randn({12, 10}), fw::scalar_tensor(12, lk), 0), "beam_width must be positive");
  EXPECT_ERROR(r->predict(fw::randn({1, 2}), fw::ones({1}, lk), std::nullopt), "targets must be a (B, U) integer");
  EXPECT_ERROR(r->predict(fw::ones({1, 2}, lk), fw::ones({1}, lk), AM::StreamState{{fw::zeros({1, 8})}}),
               "one [h, c] per LSTM layer");
  EXPECT_ERROR(AM::emformer_rnnt_model(AM::EmformerRNNTOptions().segment_length(10)), "multiples of time_reduction");
  EXPECT_ERROR(AM::Joiner(4, 3, "gelu"), "joiner activation");
}

}  // namespace
