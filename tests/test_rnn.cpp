// fw::nn::RNN / LSTM / GRU and the cells: outputs, final states and gradients against PyTorch
// (tests/fixtures/gen_rnn.py -> rnn.txt), parameter names and order, initialisation, gradcheck in
// float64, dropout between layers, clone/to/save, and error messages.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include <fw/fw.h>

#include "tests/fixture.h"
#include "tests/expect_error.h"

namespace nn = fw::nn;
namespace {

// ---- fixture loading (tests/fixtures/rnn.txt)

struct RnnFixtures {
  std::map<std::string, fw::Tensor> t;
  std::map<std::string, std::vector<std::string>> names;
};

const RnnFixtures& fx() {
  static const RnnFixtures f = [] {
    RnnFixtures r;
    std::ifstream in(std::string(FW_FIXTURE_DIR) + "/rnn.txt");
    EXPECT_TRUE(in.good()) << "missing tests/fixtures/rnn.txt";
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream is(line);
      std::string kind, key;
      int64_t count;
      is >> kind >> key >> count;
      if (kind == "n") {
        auto& v = r.names[key];
        v.resize(size_t(count));
        for (auto& s : v) is >> s;
        continue;
      }
      std::vector<int64_t> sizes(static_cast<size_t>(count));
      int64_t numel = 1;
      for (auto& v : sizes) {
        is >> v;
        numel *= v;
      }
      std::vector<float> vals(static_cast<size_t>(numel));
      for (auto& v : vals) is >> v;
      r.t[key] = fw::tensor(vals).reshape(sizes);
    }
    return r;
  }();
  return f;
}

bool has(const std::string& key) { return fx().t.count(key) > 0; }

fw::Tensor T(const std::string& key) {
  auto it = fx().t.find(key);
  EXPECT_TRUE(it != fx().t.end()) << "no fixture tensor " << key;
  return it == fx().t.end() ? fw::Tensor() : it->second.clone();
}

std::vector<std::string> names_of(const nn::Module& m) { return m.named_parameters().keys(); }

// Copies fixture tensors "<prefix>.<name>" into the module's parameters after checking that the
// module has exactly PyTorch's parameter names, in PyTorch's order.
void load_params(nn::Module& m, const std::string& prefix) {
  auto it = fx().names.find(prefix + ".names");
  ASSERT_TRUE(it != fx().names.end()) << prefix;
  ASSERT_EQ(names_of(m), it->second) << prefix;
  fw::NoGradGuard ng;
  for (auto& p : m.named_parameters()) {
    fw::Tensor v = T(prefix + "." + p.key());
    ASSERT_TRUE(p.value().sizes().equals(v.sizes())) << prefix << "." << p.key() << ": " << p.value().sizes()
                                                      << " vs PyTorch " << v.sizes();
    p.value().copy_(v);
  }
}

constexpr double kRtol = 1e-4, kAtol = 1e-5;

// Output and final state(s) of a module on the fixture's x (and h0/c0) against PyTorch's; with
// grads, the gradients of sum(y * gy) + sum(h_n * gh) [+ sum(c_n * gc)] too.
template <class M>
void check_case(const std::string& p, M& m, bool grads = false) {
  constexpr bool lstm = std::is_same_v<M, nn::LSTM>;
  load_params(*m, p);
  if (::testing::Test::HasFatalFailure()) return;
  fw::Tensor x = T(p + ".x").requires_grad_(grads);
  fw::Tensor h0 = has(p + ".h0") ? T(p + ".h0").requires_grad_(grads) : fw::Tensor();
  fw::Tensor y, h_n, c_n, c0;
  if constexpr (lstm) {
    c0 = has(p + ".c0") ? T(p + ".c0").requires_grad_(grads) : fw::Tensor();
    std::optional<std::tuple<fw::Tensor, fw::Tensor>> hx;
    if (h0.defined()) hx = std::make_tuple(h0, c0);
    auto out = m(x, hx);
    y = std::get<0>(out);
    std::tie(h_n, c_n) = std::get<1>(out);
    FW_EXPECT_CLOSE(c_n, T(p + ".c_n"), kRtol, kAtol);
  } else {
    std::tie(y, h_n) = h0.defined() ? m(x, h0) : m(x);
  }
  FW_EXPECT_CLOSE(y, T(p + ".y"), kRtol, kAtol);
  FW_EXPECT_CLOSE(h_n, T(p + ".h_n"), kRtol, kAtol);
  if (!grads) return;
  fw::Tensor loss = (y * T(p + ".gy")).sum() + (h_n * T(p + ".gh")).sum();
  if constexpr (lstm) loss = loss + (c_n * T(p + ".gc")).sum();
  loss.backward();
  FW_EXPECT_CLOSE(x.grad(), T(p + ".grad.x"), kRtol, kAtol);
  if (h0.defined()) FW_EXPECT_CLOSE(h0.grad(), T(p + ".grad.h0"), kRtol, kAtol);
  if (c0.defined()) FW_EXPECT_CLOSE(c0.grad(), T(p + ".grad.c0"), kRtol, kAtol);
  for (auto& param : m->named_parameters()) {
    SCOPED_TRACE(param.key());
    FW_EXPECT_CLOSE(param.value().grad(), T(p + ".grad." + param.key()), kRtol, kAtol);
  }
}


}  // namespace

// ---- outputs and final states vs PyTorch

TEST(Rnn, LstmMatchesPyTorch) {
  {
    nn::LSTM m(3, 4);
    check_case("lstm1", m);
  }
  {
    nn::LSTM m(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true));
    check_case("lstm2bi", m);
  }
  {
    nn::LSTM m(nn::LSTMOptions(3, 5).bias(false).batch_first(true));
    check_case("lstm_bf_nobias", m);
  }
  {
    nn::LSTM m(nn::LSTMOptions(3, 4).num_layers(2));
    check_case("lstm_unbatched", m);
  }
  {
    nn::LSTM m(nn::LSTMOptions(2, 3).batch_first(true).bidirectional(true));
    check_case("lstm_unbatched_bf", m);
  }
  {
    nn::LSTM m(nn::LSTMOptions(3, 4).num_layers(2).dropout(0.5));
    m->eval();
    check_case("lstm_dropout_eval", m);
  }
}

// proj_size: weight_hr_l<k>[_reverse] after the biases, h0/h_n and the outputs proj_size wide, the
// cell state hidden_size wide; the gradients too. Also through a packed input (same values).
TEST(Rnn, LstmWithProjectionsMatchesPyTorch) {
  {
    nn::LSTM m(nn::LSTMOptions(3, 5).num_layers(2).bidirectional(true).proj_size(2));
    check_case("lstm_proj", m, /*grads=*/true);
    fw::Tensor x = T("lstm_proj.x"), h0 = T("lstm_proj.h0"), c0 = T("lstm_proj.c0");
    auto packed = nn::utils::rnn::pack_padded_sequence(x, fw::tensor({4, 4}));
    auto [py, hc] = m->forward_with_packed_input(packed, std::make_tuple(h0, c0));
    auto [y, len] = nn::utils::rnn::pad_packed_sequence(py);
    FW_EXPECT_CLOSE(y, T("lstm_proj.y"), kRtol, kAtol);
    FW_EXPECT_CLOSE(std::get<0>(hc), T("lstm_proj.h_n"), kRtol, kAtol);
    FW_EXPECT_CLOSE(std::get<1>(hc), T("lstm_proj.c_n"), kRtol, kAtol);
  }
  {
    nn::LSTM m(nn::LSTMOptions(4, 3).bias(false).batch_first(true).proj_size(1));
    check_case("lstm_proj_bf_nobias", m);
    std::ostringstream os;
    os << *m;
    EXPECT_EQ(os.str(), "fw::nn::LSTM(input_size=4, hidden_size=3, num_layers=1, bias=false, batch_first=true, "
                        "dropout=0, bidirectional=false, proj_size=1)");
  }
}

TEST(Rnn, GruMatchesPyTorch) {
  {
    nn::GRU m(3, 4);
    check_case("gru1", m);
  }
  {
    nn::GRU m(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
    check_case("gru2bi_bf", m);
  }
  {
    nn::GRU m(nn::GRUOptions(4, 3).bias(false));
    check_case("gru_nobias", m);
  }
  {
    nn::GRU m(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true));
    check_case("gru_unbatched", m);
  }
}

TEST(Rnn, ElmanRnnMatchesPyTorch) {
  {
    nn::RNN m(nn::RNNOptions(3, 4).num_layers(2).bidirectional(true));
    check_case("rnn_tanh", m);
  }
  {
    nn::RNN m(nn::RNNOptions(3, 4).nonlinearity(fw::kReLU).batch_first(true));
    check_case("rnn_relu_bf", m);
  }
}

TEST(Rnn, CellsMatchPyTorch) {
  nn::LSTMCell lc(3, 4);
  load_params(*lc, "lstmcell");
  auto [h1, c1] = lc(T("lstmcell.x"), std::make_tuple(T("lstmcell.h"), T("lstmcell.c")));
  FW_EXPECT_CLOSE(h1, T("lstmcell.h1"), kRtol, kAtol);
  FW_EXPECT_CLOSE(c1, T("lstmcell.c1"), kRtol, kAtol);
  // Unbatched: the same numbers without the batch dim.
  auto [h1u, c1u] = lc(T("lstmcell.x")[1], std::make_tuple(T("lstmcell.h")[1], T("lstmcell.c")[1]));
  FW_EXPECT_CLOSE(h1u, T("lstmcell.h1")[1], kRtol, kAtol);
  FW_EXPECT_CLOSE(c1u, T("lstmcell.c1")[1], kRtol, kAtol);

  nn::GRUCell gc(nn::GRUCellOptions(3, 4).bias(false));
  load_params(*gc, "grucell");
  EXPECT_FALSE(gc->bias_ih.defined());
  FW_EXPECT_CLOSE(gc(T("grucell.x"), T("grucell.h")), T("grucell.h1"), kRtol, kAtol);

  nn::RNNCell rc(nn::RNNCellOptions(3, 4).nonlinearity(fw::kReLU));
  load_params(*rc, "rnncell");
  FW_EXPECT_CLOSE(rc(T("rnncell.x")), T("rnncell.h1"), kRtol, kAtol);  // unbatched, zero state

  // A cell stepped over a sequence equals the layer with the same weights.
  nn::GRU layer(3, 4);
  nn::GRUCell cell(3, 4);
  {
    fw::NoGradGuard ng;
    cell->weight_ih.copy_(layer->named_parameters()["weight_ih_l0"]);
    cell->weight_hh.copy_(layer->named_parameters()["weight_hh_l0"]);
    cell->bias_ih.copy_(layer->named_parameters()["bias_ih_l0"]);
    cell->bias_hh.copy_(layer->named_parameters()["bias_hh_l0"]);
  }
  fw::Tensor x = fw::randn({6, 2, 3});
  auto [y, h_n] = layer(x);
  fw::Tensor h = fw::zeros({2, 4});
  for (int64_t t = 0; t < 6; t++) {
    h = cell(x[t], h);
    FW_EXPECT_CLOSE(h, y[t], 1e-5, 1e-6);
  }
  FW_EXPECT_CLOSE(h_n[0], h, 1e-5, 1e-6);
}

// ---- gradients vs torch backward

TEST(Rnn, GradientsMatchPyTorch) {
  {
    nn::LSTM m(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true).batch_first(true));
    check_case("lstm_grad", m, /*grads=*/true);
  }
  {
    nn::GRU m(nn::GRUOptions(3, 4).num_layers(2).bidirectional(true));
    check_case("gru_grad", m, /*grads=*/true);
  }
  {
    nn::RNN m(nn::RNNOptions(3, 4).num_layers(2).nonlinearity(fw::kReLU).bias(false));
    check_case("rnn_grad", m, /*grads=*/true);
  }
}

TEST(Rnn, LongSequenceGradientsEqualACellLoop) {
  // 37 steps (an odd length, so the recursive halving of the input projection is uneven) in both
  // directions: gradients equal those of an LSTMCell stepped over the sequence with the same weights.
  fw::manual_seed(7);
  nn::LSTM layer(nn::LSTMOptions(3, 4).bidirectional(true));
  nn::LSTMCell fwd(3, 4), bwd(3, 4);
  {
    fw::NoGradGuard ng;
    auto named = layer->named_parameters();
    for (auto [cell, suffix] : {std::pair{&fwd, ""}, std::pair{&bwd, "_reverse"}}) {
      (*cell)->weight_ih.copy_(named[std::string("weight_ih_l0") + suffix]);
      (*cell)->weight_hh.copy_(named[std::string("weight_hh_l0") + suffix]);
      (*cell)->bias_ih.copy_(named[std::string("bias_ih_l0") + suffix]);
      (*cell)->bias_hh.copy_(named[std::string("bias_hh_l0") + suffix]);
    }
  }
  const int64_t T = 37;
  fw::Tensor x = fw::randn({T, 2, 3}).requires_grad_(), g = fw::randn({T, 2, 8});
  fw::Tensor y = std::get<0>(layer(x));
  auto gx = fw::autograd::grad({(y * g).sum()}, {x, layer->named_parameters()["weight_ih_l0"]});

  fw::Tensor x2 = x.detach().clone().requires_grad_();
  std::vector<fw::Tensor> yf(T), yb(T);
  fw::Tensor h = fw::zeros({2, 4}), c = fw::zeros({2, 4});
  for (int64_t t = 0; t < T; t++) std::tie(h, c) = fwd(x2[t], std::make_tuple(h, c)), yf[size_t(t)] = h;
  h = fw::zeros({2, 4}), c = fw::zeros({2, 4});
  for (int64_t t = T - 1; t >= 0; t--) std::tie(h, c) = bwd(x2[t], std::make_tuple(h, c)), yb[size_t(t)] = h;
  fw::Tensor y2 = fw::cat({fw::stack(yf, 0), fw::stack(yb, 0)}, 2);
  FW_EXPECT_CLOSE(y, y2, 1e-5, 1e-6);
  auto gx2 = fw::autograd::grad({(y2 * g).sum()}, {x2, fwd->weight_ih});
  FW_EXPECT_CLOSE(gx[0], gx2[0], 1e-4, 1e-5);
  FW_EXPECT_CLOSE(gx[1], gx2[1], 1e-4, 1e-5);
}

TEST(Rnn, GradcheckFloat64) {
  fw::manual_seed(1);
  // Functional forms, with the parameters among the checked inputs.
  for (bool bidirectional : {false, true}) {
    SCOPED_TRACE(bidirectional ? "bidirectional" : "one direction");
    nn::LSTM m(nn::LSTMOptions(2, 2).num_layers(2).bidirectional(bidirectional));
    m->to(fw::kDouble);
    const int64_t D = bidirectional ? 2 : 1;
    std::vector<fw::Tensor> inputs = {fw::randn({3, 2, 2}, fw::kDouble).requires_grad_(),
                                      fw::randn({2 * D, 2, 2}, fw::kDouble).requires_grad_(),
                                      fw::randn({2 * D, 2, 2}, fw::kDouble).requires_grad_()};
    for (auto& w : m->flat_weights()) inputs.push_back(w);
    EXPECT_TRUE(fw::autograd::gradcheck(
        [&](const std::vector<fw::Tensor>& in) {
          std::vector<fw::Tensor> params(in.begin() + 3, in.end());
          auto [y, h, c] = fw::lstm(in[0], {in[1], in[2]}, params, true, 2, 0.0, false, bidirectional, false);
          return std::vector<fw::Tensor>{y, h, c};
        },
        inputs));
  }
  // Modules: GRU and RNN (the checked parameters are the module's own tensors).
  {
    nn::GRU m(nn::GRUOptions(2, 3).batch_first(true).bidirectional(true));
    m->to(fw::kDouble);
    std::vector<fw::Tensor> inputs = {fw::randn({2, 3, 2}, fw::kDouble).requires_grad_(),
                                      fw::randn({2, 2, 3}, fw::kDouble).requires_grad_()};
    for (auto& w : m->parameters()) inputs.push_back(w);
    EXPECT_TRUE(fw::autograd::gradcheck(
        [&](const std::vector<fw::Tensor>& in) {
          auto [y, h] = m(in[0], in[1]);
          return std::vector<fw::Tensor>{y, h};
        },
        inputs));
  }
  {
    nn::RNN m(nn::RNNOptions(2, 3).num_layers(2));
    m->to(fw::kDouble);
    std::vector<fw::Tensor> inputs = {fw::randn({3, 2}, fw::kDouble).requires_grad_()};  // unbatched
    for (auto& w : m->parameters()) inputs.push_back(w);
    EXPECT_TRUE(fw::autograd::gradcheck(
        [&](const std::vector<fw::Tensor>& in) {
          auto [y, h] = m(in[0]);
          return std::vector<fw::Tensor>{y, h};
        },
        inputs));
  }
  // Second order through a GRU cell and an LSTM cell (backward rules are fw ops).
  {
    auto x = fw::randn({2, 2}, fw::kDouble).requires_grad_();
    auto h = fw::randn({2, 2}, fw::kDouble).requires_grad_();
    auto w_ih = (fw::randn({6, 2}, fw::kDouble) * 0.5).requires_grad_();
    auto w_hh = (fw::randn({6, 2}, fw::kDouble) * 0.5).requires_grad_();
    auto b_hh = fw::randn({6}, fw::kDouble).requires_grad_();
    EXPECT_TRUE(fw::autograd::gradgradcheck(
        [](const std::vector<fw::Tensor>& in) {
          return std::vector<fw::Tensor>{fw::gru_cell(in[0], in[1], in[2], in[3], {}, in[4])};
        },
        {x, h, w_ih, w_hh, b_hh}));
    auto c = fw::randn({2, 2}, fw::kDouble).requires_grad_();
    auto l_ih = (fw::randn({8, 2}, fw::kDouble) * 0.5).requires_grad_();
    auto l_hh = (fw::randn({8, 2}, fw::kDouble) * 0.5).requires_grad_();
    EXPECT_TRUE(fw::autograd::gradgradcheck(
        [](const std::vector<fw::Tensor>& in) {
          auto [h1, c1] = fw::lstm_cell(in[0], {in[1], in[2]}, in[3], in[4]);
          return std::vector<fw::Tensor>{h1, c1};
        },
        {x, h, c, l_ih, l_hh}));
  }
}

// ---- parameters

TEST(Rnn, ParameterNamesShapesAndInit) {
  nn::LSTM lstm(nn::LSTMOptions(5, 3).num_layers(2).bidirectional(true));
  EXPECT_EQ(names_of(*lstm), fx().names.at("lstm2bi.names"));
  auto named = lstm->named_parameters();
  EXPECT_EQ(named["weight_ih_l0"].sizes(), (std::vector<int64_t>{12, 5}));
  EXPECT_EQ(named["weight_ih_l1_reverse"].sizes(), (std::vector<int64_t>{12, 6}));
  EXPECT_EQ(named["weight_hh_l1"].sizes(), (std::vector<int64_t>{12, 3}));
  EXPECT_EQ(named["bias_hh_l0_reverse"].sizes(), (std::vector<int64_t>{12}));
  // flat_weights / all_weights are the registered tensors, in registration order.
  ASSERT_EQ(lstm->flat_weights().size(), 16u);
  auto all = lstm->all_weights();
  for (size_t i = 0; i < 16; i++) {
    EXPECT_TRUE(lstm->flat_weights()[i].is_same(named[i].value()));
    EXPECT_TRUE(all[i].is_same(named[i].value()));
  }
  EXPECT_EQ(names_of(*nn::GRU(nn::GRUOptions(2, 2).bias(false))), fx().names.at("gru_nobias.names"));
  EXPECT_EQ(names_of(*nn::RNN(nn::RNNOptions(2, 2).num_layers(2).bidirectional(true))),
            fx().names.at("rnn_tanh.names"));
  EXPECT_EQ(names_of(*nn::LSTMCell(3, 4)), fx().names.at("lstmcell.names"));
  EXPECT_EQ(names_of(*nn::GRUCell(nn::GRUCellOptions(3, 4).bias(false))), fx().names.at("grucell.names"));

  // Every parameter from U(-1/sqrt(hidden), 1/sqrt(hidden)), requiring grad.
  nn::GRU gru(nn::GRUOptions(64, 16).num_layers(2));
  const double bound = 0.25;
  for (auto& p : gru->named_parameters()) {
    SCOPED_TRACE(p.key());
    EXPECT_TRUE(p.value().requires_grad());
    EXPECT_LE(p.value().abs().max().item<double>(), bound);
    if (p.value().numel() > 1000) {
      EXPECT_GT(p.value().abs().max().item<double>(), 0.9 * bound);
      EXPECT_NEAR(p.value().mean().item<double>(), 0.0, 0.02);
      EXPECT_NEAR(p.value().var().item<double>(), bound * bound / 3, 0.003);
    }
  }
}

TEST(Rnn, PrettyPrint) {
  std::ostringstream os;
  os << *nn::LSTM(nn::LSTMOptions(3, 4).num_layers(2).bidirectional(true)) << "\n"
     << *nn::GRU(nn::GRUOptions(3, 4).batch_first(true).dropout(0.25).num_layers(2)) << "\n"
     << *nn::RNN(nn::RNNOptions(3, 4).bias(false)) << "\n"
     << *nn::LSTMCell(3, 4) << " " << *nn::GRUCell(nn::GRUCellOptions(3, 4).bias(false)) << " "
     << *nn::RNNCell(nn::RNNCellOptions(3, 4).nonlinearity(fw::kReLU));
  EXPECT_EQ(os.str(),
            "fw::nn::LSTM(input_size=3, hidden_size=4, num_layers=2, bias=true, batch_first=false, dropout=0, "
            "bidirectional=true)\n"
            "fw::nn::GRU(input_size=3, hidden_size=4, num_layers=2, bias=true, batch_first=true, dropout=0.25, "
            "bidirectional=false)\n"
            "fw::nn::RNN(input_size=3, hidden_size=4, num_layers=1, bias=false, batch_first=false, dropout=0, "
            "bidirectional=false)\n"
            "fw::nn::LSTMCell(3, 4) fw::nn::GRUCell(3, 4, bias=false) fw::nn::RNNCell(3, 4, nonlinearity=kReLU)");
}

// ---- behaviour

TEST(Rnn, DropoutBetweenLayersInTrainingOnly) {
  fw::manual_seed(3);
  nn::LSTM drop(nn::LSTMOptions(4, 8).num_layers(3).dropout(0.5));
  nn::LSTM plain(nn::LSTMOptions(4, 8).num_layers(3));
  {
    fw::NoGradGuard ng;
    auto a = drop->parameters(), b = plain->parameters();
    for (size_t i = 0; i < a.size(); i++) b[i].copy_(a[i]);
  }
  fw::Tensor x = fw::randn({7, 5, 4});
  auto y_plain = std::get<0>(plain(x));
  // Training: layer outputs are dropped, so results differ from run to run and from no dropout.
  auto y1 = std::get<0>(drop(x)), y2 = std::get<0>(drop(x));
  EXPECT_FALSE(fw::allclose(y1, y_plain));
  EXPECT_FALSE(fw::allclose(y1, y2));
  // Eval: no dropout.
  drop->eval();
  FW_EXPECT_CLOSE(std::get<0>(drop(x)), y_plain, 1e-6, 1e-7);
  // The last layer's output is never dropped: with one layer, training mode changes nothing.
  nn::GRU one(nn::GRUOptions(4, 8).dropout(0.9));
  one->train();
  auto a = std::get<0>(one(x));
  auto b = std::get<0>(one(x));
  EXPECT_TRUE(fw::equal(a, b));
}

TEST(Rnn, BatchFirstAndUnbatchedAgreeWithTimeMajor) {
  fw::manual_seed(4);
  nn::GRU tm(nn::GRUOptions(3, 5).num_layers(2).bidirectional(true));
  nn::GRU bf(nn::GRUOptions(3, 5).num_layers(2).bidirectional(true).batch_first(true));
  {
    fw::NoGradGuard ng;
    auto a = tm->parameters(), b = bf->parameters();
    for (size_t i = 0; i < a.size(); i++) b[i].copy_(a[i]);
  }
  fw::Tensor x = fw::randn({6, 4, 3}), h0 = fw::randn({4, 4, 5});
  auto [y, h] = tm(x, h0);
  auto [ybf, hbf] = bf(x.transpose(0, 1), h0);
  EXPECT_EQ(y.sizes(), (std::vector<int64_t>{6, 4, 10}));
  EXPECT_EQ(h.sizes(), (std::vector<int64_t>{4, 4, 5}));
  FW_EXPECT_CLOSE(ybf, y.transpose(0, 1), 1e-6, 1e-7);
  FW_EXPECT_CLOSE(hbf, h, 1e-6, 1e-7);
  // Each batch element alone, unbatched.
  auto [yu, hu] = tm(x.select(1, 2), h0.select(1, 2));
  EXPECT_EQ(yu.sizes(), (std::vector<int64_t>{6, 10}));
  EXPECT_EQ(hu.sizes(), (std::vector<int64_t>{4, 5}));
  FW_EXPECT_CLOSE(yu, y.select(1, 2), 1e-5, 1e-6);
  FW_EXPECT_CLOSE(hu, h.select(1, 2), 1e-5, 1e-6);
  // The last time step of the forward direction is h_n of the last layer's forward direction, the
  // first time step of the reverse direction that of its reverse direction.
  FW_EXPECT_CLOSE(y[5].narrow(1, 0, 5), h[2], 1e-6, 1e-7);
  FW_EXPECT_CLOSE(y[0].narrow(1, 5, 5), h[3], 1e-6, 1e-7);
}

TEST(Rnn, CloneToDoubleAndSaveLoad) {
  fw::manual_seed(5);
  nn::LSTM m(nn::LSTMOptions(3, 4).num_layers(2));
  fw::Tensor x = fw::randn({5, 2, 3});
  fw::Tensor y = std::get<0>(m(x));
  auto copy = std::dynamic_pointer_cast<nn::LSTMImpl>(m->clone());
  ASSERT_NE(copy, nullptr);
  // The copy's flat weights are its own parameters.
  auto cn = copy->named_parameters();
  for (size_t i = 0; i < cn.size(); i++) EXPECT_TRUE(copy->flat_weights()[i].is_same(cn[i].value()));
  EXPECT_TRUE(fw::equal(std::get<0>(copy->forward(x)), y));
  {
    fw::NoGradGuard ng;
    for (auto& p : m->parameters()) p.mul_(2);
  }
  EXPECT_TRUE(fw::equal(std::get<0>(copy->forward(x)), y));
  EXPECT_FALSE(fw::allclose(std::get<0>(m(x)), y));

  // to(kDouble) converts in place: forward runs in float64 through the same flat weights.
  copy->to(fw::kDouble);
  fw::Tensor yd = std::get<0>(copy->forward(x.to(fw::kDouble)));
  EXPECT_EQ(yd.dtype(), fw::kDouble);
  FW_EXPECT_CLOSE(yd.to(fw::kFloat), y, 1e-5, 1e-6);

  // Save / load under PyTorch's names.
  std::string path = ::testing::TempDir() + "fw_rnn_test.safetensors";
  fw::save(m, path);
  nn::LSTM other(nn::LSTMOptions(3, 4).num_layers(2));
  fw::load(other, path);
  EXPECT_TRUE(fw::equal(std::get<0>(other(x)), std::get<0>(m(x))));
  std::remove(path.c_str());
}

TEST(Rnn, LearnsToAddASequence) {
  // Regression of the running sum of a sequence from the last LSTM state: the loss falls quickly.
  fw::manual_seed(6);
  nn::LSTM lstm(nn::LSTMOptions(1, 16).batch_first(true));
  nn::Linear head(16, 1);
  std::vector<fw::Tensor> params = lstm->parameters();
  for (auto& p : head->parameters()) params.push_back(p);
  fw::optim::Adam opt(params, fw::optim::AdamOptions(1e-2));
  double first = 0, last = 0;
  for (int it = 0; it < 150; it++) {
    fw::Tensor x = fw::rand({32, 6, 1}) - 0.5;
    fw::Tensor target = x.sum({1});
    auto [y, state] = lstm(x);
    fw::Tensor loss = fw::nn::functional::mse_loss(head(std::get<0>(state)[0]), target);
    opt.zero_grad();
    loss.backward();
    opt.step();
    if (it == 0) first = loss.item<double>();
    last = loss.item<double>();
  }
  EXPECT_LT(last, first * 0.1) << "first " << first << " last " << last;
}

// ---- errors

TEST(Rnn, ErrorMessages) {
  nn::LSTM lstm(nn::LSTMOptions(10, 4).num_layers(2));
  EXPECT_ERROR(lstm(fw::randn({5, 2, 7})),
               "[LSTM] input.size(-1) must be equal to input_size. Expected 10, got 7");
  EXPECT_ERROR(lstm(fw::randn({5, 2, 3, 10})),
               "[LSTM] Expected input to be 2-D (unbatched) or 3-D (batched) but received 4-D tensor");
  EXPECT_ERROR(lstm(fw::randn({10})), "but received 1-D tensor");
  EXPECT_ERROR(lstm(fw::randn({5, 2, 10}), std::make_tuple(fw::zeros({2, 3, 4}), fw::zeros({2, 2, 4}))),
               "[LSTM] Expected hidden[0] size [2, 2, 4], got [2, 3, 4]");
  EXPECT_ERROR(lstm(fw::randn({5, 2, 10}), std::make_tuple(fw::zeros({2, 2, 4}), fw::zeros({1, 2, 4}))),
               "[LSTM] Expected hidden[1] size [2, 2, 4], got [1, 2, 4]");
  EXPECT_ERROR(lstm(fw::randn({5, 2, 10}), std::make_tuple(fw::zeros({2, 4}), fw::zeros({2, 4}))),
               "[LSTM] For batched 3-D input, hx and cx should also be 3-D but got (2-D, 2-D) tensors");
  EXPECT_ERROR(lstm(fw::randn({5, 10}), std::make_tuple(fw::zeros({2, 1, 4}), fw::zeros({2, 4}))),
               "[LSTM] For unbatched 2-D input, hx and cx should also be 2-D but got (3-D, 2-D) tensors");
  EXPECT_ERROR(lstm(fw::randn({5, 2, 10}, fw::kDouble)),
               "[LSTM] input must have the same dtype as the parameters (Float), got Double");
  EXPECT_ERROR(lstm(fw::randn({5, 2, 10}), std::make_tuple(fw::zeros({2, 2, 4}, fw::kDouble),
                                                            fw::zeros({2, 2, 4}, fw::kDouble))),
               "[LSTM] the hidden state must have the parameters' dtype");

  nn::GRU gru(nn::GRUOptions(3, 4).batch_first(true));
  EXPECT_ERROR(gru(fw::randn({2, 5, 3}), fw::zeros({1, 5, 4})), "[GRU] Expected hidden size [1, 2, 4], got [1, 5, 4]");
  EXPECT_ERROR(gru(fw::randn({5, 3}), fw::zeros({1, 1, 4})),
               "[GRU] For unbatched 2-D input, hx should also be 2-D but got 3-D tensor");
  EXPECT_ERROR(gru(fw::randn({2, 5, 3}), fw::zeros({4})),
               "[GRU] For batched 3-D input, hx should also be 3-D but got 1-D tensor");
  nn::RNN rnn(3, 4);
  EXPECT_ERROR(rnn(fw::randn({2, 5, 2})), "[RNN] input.size(-1) must be equal to input_size. Expected 3, got 2");
  EXPECT_ERROR(rnn(fw::randint(0, 3, {2, 5, 3})), "[RNN] input must be a floating-point tensor");

  // Options.
  EXPECT_ERROR(nn::LSTM(nn::LSTMOptions(3, 4).dropout(1.5)), "[LSTM] dropout should be a number in range [0, 1]");
  EXPECT_ERROR(nn::GRU(nn::GRUOptions(3, 0)), "[GRU] hidden_size must be greater than zero, got 0");
  EXPECT_ERROR(nn::RNN(nn::RNNOptions(3, 4).num_layers(0)), "[RNN] num_layers must be greater than zero, got 0");
  EXPECT_ERROR(nn::LSTM(nn::LSTMOptions(3, 4).proj_size(4)),
               "[LSTM] proj_size has to be smaller than hidden_size, got proj_size=4 and hidden_size=4");
  EXPECT_ERROR(nn::LSTM(nn::LSTMOptions(3, 4).proj_size(-1)), "[LSTM] proj_size has to be a positive integer, got -1");
  nn::LSTM proj(nn::LSTMOptions(3, 4).proj_size(2));
  EXPECT_ERROR(proj(fw::randn({5, 2, 3}), std::make_tuple(fw::zeros({1, 2, 4}), fw::zeros({1, 2, 4}))),
               "[LSTM] Expected hidden[0] size [1, 2, 2], got [1, 2, 4]");
  EXPECT_ERROR(proj(fw::randn({5, 2, 3}), std::make_tuple(fw::zeros({1, 2, 2}), fw::zeros({1, 2, 2}))),
               "[LSTM] Expected hidden[1] size [1, 2, 4], got [1, 2, 2]");
  EXPECT_ERROR(fw::lstm(fw::randn({5, 2, 3}), {fw::zeros({1, 2, 4}), fw::zeros({1, 2, 4})}, proj->flat_weights(), true,
                        1, 0, false, false, false),
               "[lstm] with projections hx's size (proj_size 4) must be smaller than cx's (hidden_size 4)");

  // Cells.
  nn::LSTMCell cell(3, 4);
  EXPECT_ERROR(cell(fw::randn({2, 5})), "[LSTMCell] input has inconsistent input_size: got 5 expected 3");
  EXPECT_ERROR(cell(fw::randn({2, 2, 3})), "[LSTMCell] Expected input to be 1-D or 2-D but received 3-D tensor");
  EXPECT_ERROR(cell(fw::randn({2, 3}), std::make_tuple(fw::zeros({3, 4}), fw::zeros({2, 4}))),
               "[LSTMCell] Input batch size 2 doesn't match hidden[0] batch size 3");
  EXPECT_ERROR(cell(fw::randn({2, 3}), std::make_tuple(fw::zeros({2, 4}), fw::zeros({2, 5}))),
               "[LSTMCell] hidden[1] has inconsistent hidden_size: got 5, expected 4");
  nn::GRUCell gcell(3, 4);
  EXPECT_ERROR(gcell(fw::randn({2, 3}), fw::zeros({2, 6})), "[GRUCell] hidden has inconsistent hidden_size: got 6");

  // Functional forms.
  fw::Tensor w_ih = fw::randn({12, 3}), w_hh = fw::randn({12, 4});
  EXPECT_ERROR(fw::gru(fw::randn({5, 2, 3}), fw::zeros({1, 2, 4}), {w_ih, w_hh}, true, 1, 0, false, false, false),
               "[gru] expected 4 parameter tensors (num_layers * num_directions * 4), got 2");
  EXPECT_ERROR(fw::lstm(fw::randn({5, 2, 3}), {fw::zeros({1, 2, 4}), fw::zeros({1, 2, 4})}, {w_ih, w_hh}, false, 1, 0,
                        false, false, false),
               "[lstm] weight_ih_l0 must have shape [16, 3], got [12, 3]");
  EXPECT_ERROR(fw::rnn_tanh(fw::randn({5, 2, 3}), fw::zeros({2, 2, 4}), {w_ih, w_hh}, false, 1, 0, false, false, false),
               "[rnn_tanh] hx must have shape (num_layers * num_directions, batch, hidden_size) = (1, 2, hidden_size), "
               "got [2, 2, 4]");
}
