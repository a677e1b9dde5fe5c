// fw::nn::utils::rnn (pack/pad of variable-length sequences, PackedSequence) and RNN/LSTM/GRU on
// packed input: against PyTorch 1.13 (tests/fixtures/rnn_utils.txt, written by gen_rnn_utils.py),
// against per-sequence runs of the unpacked modules, gradcheck, and errors.
#include <gtest/gtest.h>

#include <map>

#include "fw/autograd.h"
#include "fw/nn.h"
#include "tests/fixture.h"
#include "tests/records.h"

namespace R = fw::nn::utils::rnn;
using fw::Tensor;
using fw::autograd::variable_list;

namespace {

using Case = fwtest::RecordCase;

std::vector<Case> load(const std::string& kind_prefix) { return fwtest::load_records("rnn_utils.txt", kind_prefix); }

void expect_same(const Tensor& a, const Tensor& e, const std::string& ctx, double tol = 1e-10) {
  ASSERT_TRUE(a.defined()) << ctx << ": undefined";
  ASSERT_EQ(a.dtype(), e.dtype()) << ctx;
  ASSERT_TRUE(a.sizes().equals(e.sizes())) << ctx << ": shape " << a.sizes() << " vs " << e.sizes();
  EXPECT_TRUE(fw::allclose(a, e, tol, tol)) << ctx << "\nfw:\n" << a << "\ntorch:\n" << e;
}

void expect_packed(const R::PackedSequence& p, const Case& c, const std::string& ctx) {
  expect_same(p.data(), c.get("data"), ctx + " data");
  expect_same(p.batch_sizes(), c.get("batch_sizes"), ctx + " batch_sizes");
  if (c.t.count("sorted_indices")) {
    expect_same(p.sorted_indices(), c.get("sorted_indices"), ctx + " sorted_indices");
    expect_same(p.unsorted_indices(), c.get("unsorted_indices"), ctx + " unsorted_indices");
  } else {
    EXPECT_FALSE(p.sorted_indices().defined()) << ctx;
    EXPECT_FALSE(p.unsorted_indices().defined()) << ctx;
  }
}

bool same_values(const Tensor& a, const Tensor& b) {
  return a.defined() && b.defined() && a.dtype() == b.dtype() && a.sizes().equals(b.sizes()) && a.eq(b).all().item<bool>();
}

void throws_with(const std::function<void()>& f, const std::string& frag) {
  try {
    f();
    ADD_FAILURE() << "expected an error containing: " << frag;
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find(frag), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(RnnUtils, PackPaddedAndPadPackedMatchPyTorch) {
  for (const Case& c : load("pack_padded")) {
    std::string ctx = c.name;
    Tensor x = c.get("x").clone().requires_grad_(true);
    R::PackedSequence p = R::pack_padded_sequence(x, c.get("lengths"), c.flag("batch_first"), c.flag("enforce_sorted"));
    expect_packed(p, c, ctx);
    p.data().backward(c.get("gdata"));
    expect_same(x.grad(), c.get("gx"), ctx + " grad x");
    std::optional<int64_t> total;
    if (c.num("total_length") >= 0) total = c.num("total_length");
    auto [padded, lengths] = R::pad_packed_sequence(p, c.flag("batch_first"), std::stod(c.opts.at("padding_value")), total);
    expect_same(padded, c.get("padded"), ctx + " padded");
    expect_same(lengths, c.get("out_lengths"), ctx + " lengths");
  }
}

TEST(RnnUtils, PackSequenceAndPadSequenceMatchPyTorch) {
  for (const Case& c : load("pack_sequence")) {
    std::vector<Tensor> seqs = c.list("s");
    expect_packed(R::pack_sequence(seqs, c.flag("enforce_sorted")), c, c.name);
  }
  for (const Case& c : load("pad_sequence")) {
    std::vector<Tensor> seqs = c.list("s");
    ASSERT_EQ(seqs.size(), 4u);
    expect_same(R::pad_sequence(seqs, c.flag("batch_first"), std::stod(c.opts.at("padding_value"))), c.get("padded"),
                c.name);
  }
}

namespace {

// The module of a *_packed case with the fixture's parameters.
template <class Module>
Module make(const Case& c, Module m) {
  m->to(fw::kDouble);
  std::vector<Tensor> params = m->flat_weights(), ps = c.list("p");
  EXPECT_EQ(params.size(), ps.size()) << c.name;
  fw::NoGradGuard g;
  for (size_t i = 0; i < ps.size() && i < params.size(); i++) params[i].copy_(ps[i]);
  return m;
}

template <class Options>
Options rnn_options(const Case& c, Options o) {
  return o.num_layers(c.num("num_layers")).bidirectional(c.flag("bidirectional")).bias(c.flag("bias"))
      .batch_first(c.flag("batch_first"));
}

}  // namespace

TEST(RnnUtils, RecurrentLayersOnPackedInputMatchPyTorch) {
  int checked = 0;
  for (const Case& c : load("")) {
    if (c.kind.find("_packed") == std::string::npos) continue;
    std::string ctx = c.kind + "/" + c.name;
    const int64_t I = c.num("input_size"), H = c.num("hidden_size");
    Tensor x = c.get("x").clone().requires_grad_(true);
    R::PackedSequence in = R::pack_padded_sequence(x, c.get("lengths"), c.flag("batch_first"), c.flag("enforce_sorted"));
    R::PackedSequence out;
    Tensor h_n, c_n;
    if (c.kind == "lstm_packed") {
      auto m = make(c, fw::nn::LSTM(rnn_options(c, fw::nn::LSTMOptions(I, H))));
      std::optional<std::tuple<Tensor, Tensor>> hx;
      if (c.t.count("h0")) hx = std::make_tuple(c.get("h0"), c.get("c0"));
      std::tuple<Tensor, Tensor> state;
      std::tie(out, state) = m->forward_with_packed_input(in, hx);
      std::tie(h_n, c_n) = state;
    } else if (c.kind == "gru_packed") {
      auto m = make(c, fw::nn::GRU(rnn_options(c, fw::nn::GRUOptions(I, H))));
      std::tie(out, h_n) = m->forward_with_packed_input(in, c.get("h0"));
    } else {
      auto o = rnn_options(c, fw::nn::RNNOptions(I, H));
      if (c.opts.at("nonlinearity") == "relu") o.nonlinearity(fw::kReLU);
      auto m = make(c, fw::nn::RNN(o));
      std::tie(out, h_n) = m->forward_with_packed_input(in, c.get("h0"));
    }
    expect_packed(out, c, ctx);
    expect_same(h_n, c.get("h_n"), ctx + " h_n");
    if (c.t.count("c_n")) expect_same(c_n, c.get("c_n"), ctx + " c_n");
    out.data().backward(c.get("gdata"));
    expect_same(x.grad(), c.get("gx"), ctx + " grad x");
    checked++;
  }
  EXPECT_EQ(checked, 4);
}

TEST(RnnUtils, PackedLstmEqualsRunningEachSequenceAlone) {
  fw::manual_seed(9);
  fw::nn::LSTM lstm(fw::nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true));
  const std::vector<int64_t> lengths = {2, 6, 1, 4, 6};
  const int64_t B = int64_t(lengths.size());
  Tensor x = fw::randn({6, B, 3});
  Tensor h0 = fw::randn({4, B, 5}), c0 = fw::randn({4, B, 5});
  auto [out, state] = lstm->forward_with_packed_input(
      R::pack_padded_sequence(x, fw::tensor(lengths), false, false), std::make_tuple(h0, c0));
  auto [padded, out_len] = R::pad_packed_sequence(out);
  for (int64_t b = 0; b < B; b++) {
    const int64_t L = lengths[size_t(b)];
    auto [ref, ref_state] = lstm->forward(x.narrow(0, 0, L).narrow(1, b, 1),
                                          std::make_tuple(h0.narrow(1, b, 1), c0.narrow(1, b, 1)));
    EXPECT_TRUE(fw::allclose(padded.narrow(0, 0, L).narrow(1, b, 1), ref, 1e-5, 1e-6)) << "sequence " << b;
    EXPECT_TRUE(fw::allclose(std::get<0>(state).narrow(1, b, 1), std::get<0>(ref_state), 1e-5, 1e-6)) << b;
    EXPECT_TRUE(fw::allclose(std::get<1>(state).narrow(1, b, 1), std::get<1>(ref_state), 1e-5, 1e-6)) << b;
    EXPECT_EQ(out_len[b].item<int64_t>(), L);
  }
  EXPECT_TRUE(padded.narrow(0, 1, 5).select(1, 2).eq(0).all().item<bool>()) << "padding after the end of sequence 2";
}

TEST(RnnUtils, GradcheckThroughPackingAndPackedGru) {
  fw::manual_seed(4);
  Tensor x = fw::randn({4, 3, 2}, fw::kDouble).requires_grad_(true);
  Tensor lengths = fw::tensor({2L, 4L, 3L});
  auto round_trip = [&](const variable_list& v) {
    auto p = R::pack_padded_sequence(v[0], lengths, false, false);
    return variable_list{std::get<0>(R::pad_packed_sequence(p, true, -1.0, 5)) * 1.5};
  };
  EXPECT_TRUE(fw::autograd::gradcheck(round_trip, {x}));
  fw::nn::GRU gru(fw::nn::GRUOptions(2, 3).bidirectional(true));
  gru->to(fw::kDouble);
  Tensor h0 = fw::randn({2, 3, 3}, fw::kDouble).requires_grad_(true);
  auto packed_gru = [&](const variable_list& v) {
    auto [out, h_n] = gru->forward_with_packed_input(R::pack_padded_sequence(v[0], lengths, false, false), v[1]);
    return variable_list{out.data(), h_n};
  };
  EXPECT_TRUE(fw::autograd::gradcheck(packed_gru, {x, h0}));
}

TEST(RnnUtils, PackedSequenceIndicesAndConversion) {
  Tensor perm = fw::tensor({2L, 0L, 3L, 1L});
  EXPECT_TRUE(same_values(R::invert_permutation(perm), fw::tensor({1L, 3L, 0L, 2L})));
  EXPECT_FALSE(R::invert_permutation(Tensor()).defined());
  R::PackedSequence p(fw::randn({5, 2}), fw::tensor({2L, 2L, 1L}), fw::tensor({1L, 0L}));
  EXPECT_TRUE(same_values(p.unsorted_indices(), fw::tensor({1L, 0L})));
  R::PackedSequence d = p.to(fw::kDouble);
  EXPECT_EQ(d.data().dtype(), fw::kDouble);
  EXPECT_TRUE(same_values(d.batch_sizes(), p.batch_sizes()));
  EXPECT_TRUE(same_values(d.sorted_indices(), p.sorted_indices()));
  EXPECT_FALSE(p.is_cuda());
  // Zero-length sequences pad fine but cannot be packed.
  Tensor padded = R::pad_sequence({fw::ones({2, 3}), fw::ones({0, 3})}, true, 9.0);
  EXPECT_TRUE(same_values(padded, fw::cat({fw::ones({1, 2, 3}), fw::full({1, 2, 3}, 9.0)}, 0)));
}

TEST(RnnUtils, BadInputsNameTheProblem) {
  Tensor x = fw::randn({4, 3, 2});
  throws_with([&] { R::pack_padded_sequence(x, fw::tensor({4L, 0L, 2L})); },
              "[pack_padded_sequence] Length of all samples has to be greater than 0, but found lengths[1] = 0");
  throws_with([&] { R::pack_padded_sequence(x, fw::tensor({2L, 4L, 1L})); },
              "`lengths` array must be sorted in decreasing order when `enforce_sorted` is True (lengths[0] = 2 < "
              "lengths[1] = 4)");
  EXPECT_NO_THROW(R::pack_padded_sequence(x, fw::tensor({2L, 4L, 1L}), false, false));
  throws_with([&] { R::pack_padded_sequence(x, fw::tensor({4L, 2L})); },
              "Expected `len(lengths)` to be equal to batch_size, but got 2 (batch_size=3)");
  throws_with([&] { R::pack_padded_sequence(x, fw::tensor({5L, 2L, 1L})); },
              "lengths[0] = 5 exceeds the padded sequence length 4");
  throws_with([&] { R::pack_padded_sequence(x, fw::tensor({4.0, 2.0, 1.0})); }, "1D integer tensor");
  throws_with([&] { R::pack_padded_sequence(fw::randn({4}), fw::tensor({4L})); }, "input must be at least 2-D");
  auto p = R::pack_padded_sequence(x, fw::tensor({4L, 2L, 1L}));
  throws_with([&] { R::pad_packed_sequence(p, false, 0.0, 3); },
              "Expected total_length to be at least the length of the longest sequence in input, but got "
              "total_length=3 and max sequence length being 4");
  throws_with([&] { R::pad_sequence({fw::ones({2, 3}), fw::ones({2, 4})}); },
              "[pad_sequence] all sequences must be (L, *) with the same trailing dims as sequence 0 [2, 3], but "
              "sequence 1 is [2, 4]");
  throws_with([&] { R::pad_sequence({fw::ones({2}), fw::ones({2}, fw::kDouble)}); }, "one dtype");
  throws_with([&] { R::pad_sequence(std::vector<Tensor>{}); }, "empty list");
  throws_with([&] { R::pack_sequence({fw::ones({2, 1}), fw::ones({0, 1})}, false); },
              "Length of all samples has to be greater than 0");
  fw::nn::LSTM lstm(2, 3);
  throws_with([&] { lstm->forward_with_packed_input(p, std::make_tuple(fw::zeros({1, 2, 3}), fw::zeros({1, 2, 3}))); },
              "[LSTM] Expected hidden[0] size [1, 3, 3], got [1, 2, 3]");
  fw::nn::GRU gru(5, 3);
  throws_with([&] { gru->forward_with_packed_input(p); }, "[GRU] input.size(-1) must be equal to input_size");
  throws_with([&] { fw::gru(p.data(), fw::tensor({2L, 3L}), fw::zeros({1, 2, 3}), gru->flat_weights(), true, 1, 0.0,
                            false, false); },
              "[gru] batch_sizes must be positive and non-increasing");
}
