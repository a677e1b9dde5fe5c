// Recurrent layers: the functional forms (fw::lstm, fw::gru, fw::rnn_tanh/relu and the cells) and
// the RNN/LSTM/GRU and RNNCell/LSTMCell/GRUCell modules. Everything is public fw ops, so autograd
// records the time loop as an ordinary graph.
#include "fw/nn/modules/rnn.h"

#include <algorithm>
#include <cmath>
#include <iostream>
#include <sstream>

#include "core/autocast.h"
#include "fw/nn/init.h"

namespace fw {

namespace {

enum class Cell { LSTM, GRU, TANH, RELU };

const char* op_name(Cell k) {
  switch (k) {
    case Cell::LSTM: return "lstm";
    case Cell::GRU: return "gru";
    case Cell::TANH: return "rnn_tanh";
    case Cell::RELU: return "rnn_relu";
  }
  return "rnn";
}

int64_t gates_of(Cell k) { return k == Cell::LSTM ? 4 : k == Cell::GRU ? 3 : 1; }

// x W_ih^T + b for a whole sequence (T, B, I) or one step (B, I). LSTM and plain RNNs add b_hh here
// too (once per sequence instead of once per step); the GRU keeps b_hh for r * (W_hn h + b_hn).
Tensor input_gates(Cell k, const Tensor& x, const Tensor& w_ih, const Tensor& b_ih, const Tensor& b_hh) {
  Tensor b;
  if (k == Cell::GRU)
    b = b_ih;
  else if (b_ih.defined() && b_hh.defined())
    b = b_ih + b_hh;
  else
    b = b_ih.defined() ? b_ih : b_hh;
  return linear(x, w_ih, b);
}

// One time step. gi: the step's input gates (B, gates * H) from input_gates; whh_t: W_hh^T
// (H, gates * H). h (and c) are replaced by the new state. An LSTM with projections (whr_t =
// W_hr^T, (H, P)) carries h = (o * tanh(c)) W_hr^T of P features, and whh_t is then (P, 4 H).
void lstm_step(const Tensor& gi, Tensor& h, Tensor& c, const Tensor& whh_t, const Tensor& whr_t = Tensor()) {
  Tensor gates = addmm(gi, h, whh_t);
  std::vector<Tensor> g = gates.chunk(4, 1);
  Tensor i = g[0].sigmoid(), f = g[1].sigmoid(), n = g[2].tanh(), o = g[3].sigmoid();
  c = f * c + i * n;
  h = o * c.tanh();
  if (whr_t.defined()) h = mm(h, whr_t);
}

void gru_step(const Tensor& gi, Tensor& h, const Tensor& whh_t, const Tensor& b_hh) {
  const int64_t H = h.size(1);
  Tensor gh = b_hh.defined() ? addmm(b_hh, h, whh_t) : mm(h, whh_t);
  Tensor rz = (gi.narrow(1, 0, 2 * H) + gh.narrow(1, 0, 2 * H)).sigmoid();
  Tensor r = rz.narrow(1, 0, H), z = rz.narrow(1, H, H);
  Tensor n = (gi.narrow(1, 2 * H, H) + r * gh.narrow(1, 2 * H, H)).tanh();
  h = (h - n) * z + n;  // = (1 - z) * n + z * h, in ATen's operation order
}

void rnn_step(Cell k, const Tensor& gi, Tensor& h, const Tensor& whh_t) {
  Tensor a = addmm(gi, h, whh_t);
  h = k == Cell::RELU ? a.relu() : a.tanh();
}

void step(Cell k, const Tensor& gi, Tensor& h, Tensor& c, const Tensor& whh_t, const Tensor& b_hh,
          const Tensor& whr_t = Tensor()) {
  if (k == Cell::LSTM)
    lstm_step(gi, h, c, whh_t, whr_t);
  else if (k == Cell::GRU)
    gru_step(gi, h, whh_t, b_hh);
  else
    rnn_step(k, gi, h, whh_t);
}

// Note [time steps of the input projection]
// The input gates of all T steps come from one product, gi (T, B, G). Taking step t as gi.select(0, t)
// would make backward cost O(T^2): the vjp of each select is a zero-padded (T, B, G) tensor. Halving
// the time range recursively (narrow views) down to single steps costs O(T log T) instead: each
// level's vjps together write about 2 T B G values. Without autograd, plain selects are used.
void split_steps(const Tensor& g, int64_t start, std::vector<Tensor>& out) {
  const int64_t n = g.size(0);
  if (n == 1) {
    out[size_t(start)] = g.select(0, 0);
    return;
  }
  const int64_t half = n / 2;
  split_steps(g.narrow(0, 0, half), start, out);
  split_steps(g.narrow(0, half, n - half), start + half, out);
}

std::vector<Tensor> time_steps(const Tensor& gi) {
  const int64_t T = gi.size(0);
  std::vector<Tensor> steps(static_cast<size_t>(T));
  if (gi.requires_grad() && is_grad_enabled())
    split_steps(gi, 0, steps);
  else
    for (int64_t t = 0; t < T; t++) steps[size_t(t)] = gi.select(0, t);
  return steps;
}

// One layer in one direction over the time-major sequence x (T, B, I). h (and c): the initial state
// (B, H), replaced by the final one. Returns the outputs (T, B, H) in time order. w_hr: an LSTM's
// projection (P, H) or undefined.
Tensor run_direction(Cell k, const Tensor& x, Tensor& h, Tensor& c, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih, const Tensor& b_hh, const Tensor& w_hr, bool reverse) {
  // libtorch 1.13 runs LSTM and GRU in their arguments' dtype under autocast (Note [Autocast]).
  fw::detail::AutocastOff no_autocast(k == Cell::LSTM || k == Cell::GRU);
  const int64_t T = x.size(0);
  if (T == 0) return empty({0, x.size(1), h.size(1)}, x.options());
  // One product for the whole sequence; see Note [time steps of the input projection].
  std::vector<Tensor> gi = time_steps(input_gates(k, x, w_ih, b_ih, b_hh));
  Tensor whh_t = w_hh.t(), whr_t = w_hr.defined() ? w_hr.t() : Tensor();
  std::vector<Tensor> out(static_cast<size_t>(T));
  for (int64_t s = 0; s < T; s++) {
    const int64_t t = reverse ? T - 1 - s : s;
    step(k, gi[size_t(t)], h, c, whh_t, b_hh, whr_t);
    out[size_t(t)] = h;
  }
  return stack(out, 0);
}

std::string shape_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// The parameters of one layer and direction: w_ih (G * H, in), w_hh (G * H, Hh), biases (G * H)
// and, for an LSTM with projections, w_hr (Hh, H); Hh is the carried state's size (H, or P).
void check_layer_params(const char* op, int64_t G, int64_t H, int64_t Hh, int64_t in, ScalarType dtype,
                        bool has_biases, int64_t layer, int64_t dir, const Tensor& w_ih, const Tensor& w_hh,
                        const Tensor& b_ih, const Tensor& b_hh, const Tensor& w_hr) {
  const char* suffix = dir ? "_reverse" : "";
  FW_CHECK(w_ih.defined() && w_ih.dim() == 2 && w_ih.size(0) == G * H && w_ih.size(1) == in, "[", op,
           "] weight_ih_l", layer, suffix, " must have shape [", G * H, ", ", in, "], got ",
           w_ih.defined() ? shape_str(w_ih.sizes()) : std::string("an undefined tensor"));
  FW_CHECK(w_hh.defined() && w_hh.dim() == 2 && w_hh.size(0) == G * H && w_hh.size(1) == Hh, "[", op,
           "] weight_hh_l", layer, suffix, " must have shape [", G * H, ", ", Hh, "], got ",
           w_hh.defined() ? shape_str(w_hh.sizes()) : std::string("an undefined tensor"));
  FW_CHECK(!w_hr.defined() || (w_hr.dim() == 2 && w_hr.size(0) == Hh && w_hr.size(1) == H), "[", op, "] weight_hr_l",
           layer, suffix, " must have shape [", Hh, ", ", H, "], got ", w_hr.defined() ? shape_str(w_hr.sizes()) : "");
  for (const Tensor* b : std::initializer_list<const Tensor*>{&b_ih, &b_hh})
    FW_CHECK(!has_biases || (b->defined() && b->dim() == 1 && b->size(0) == G * H), "[", op, "] bias_",
             b == &b_ih ? "ih" : "hh", "_l", layer, suffix, " must have shape [", G * H, "], got ",
             b->defined() ? shape_str(b->sizes()) : std::string("an undefined tensor"));
  for (const Tensor* w : std::initializer_list<const Tensor*>{&w_ih, &w_hh, &b_ih, &b_hh, &w_hr})
    FW_CHECK(!w->defined() || w->dtype() == dtype, "[", op, "] input and parameters must have the same dtype, got ",
             dtype, " input and ", w->dtype(), " parameters");
}

// Parameters per layer and direction: w_ih, w_hh (and b_ih, b_hh with biases), plus w_hr for an
// LSTM with projections (libtorch tells the two apart by the count, as here).
int64_t layer_param_count(Cell k, size_t n, bool has_biases, int64_t layers_dirs, const char* op) {
  const int64_t base = has_biases ? 4 : 2;
  if (k == Cell::LSTM && int64_t(n) == layers_dirs * (base + 1)) return base + 1;
  FW_CHECK(int64_t(n) == layers_dirs * base, "[", op, "] expected ", layers_dirs * base,
           " parameter tensors (num_layers * num_directions * ", base, ")",
           k == Cell::LSTM ? std::string(", or ") + std::to_string(layers_dirs * (base + 1)) + " with projections"
                           : std::string(),
           ", got ", n);
  return base;
}

// hx's and cx's last sizes: equal without projections, proj_size < hidden_size with them.
void check_projection(bool proj, int64_t Hh, int64_t H) {
  if (proj)
    FW_CHECK(Hh < H, "[lstm] with projections hx's size (proj_size ", Hh, ") must be smaller than cx's (hidden_size ",
             H, ")");
  else
    FW_CHECK(Hh == H, "[lstm] cx must have hx's hidden size ", Hh, ", got ", H);
}

struct RnnResult {
  Tensor output, h_n, c_n;
};

RnnResult run_rnn(Cell k, const Tensor& input, const Tensor& h0, const Tensor& c0, TensorList params, bool has_biases,
                  int64_t num_layers, double dropout, bool train, bool bidirectional, bool batch_first) {
  const char* op = op_name(k);
  FW_CHECK(input.defined() && input.dim() == 3, "[", op, "] input must have 3 dimensions, got ",
           input.defined() ? input.dim() : 0);
  FW_CHECK(input.is_floating_point(), "[", op, "] input must be a floating-point tensor, got ", input.dtype());
  FW_CHECK(num_layers > 0, "[", op, "] num_layers must be positive, got ", num_layers);
  FW_CHECK(dropout >= 0 && dropout <= 1, "[", op, "] dropout must be in [0, 1], got ", dropout);
  const int64_t D = bidirectional ? 2 : 1, G = gates_of(k);
  const int64_t per = layer_param_count(k, params.size(), has_biases, num_layers * D, op);
  const bool proj = per == (has_biases ? 5 : 3);
  const int64_t B = batch_first ? input.size(0) : input.size(1);
  auto check_state = [&](const Tensor& s, const char* what) {
    FW_CHECK(s.defined() && s.dim() == 3 && s.size(0) == num_layers * D && s.size(1) == B, "[", op, "] ", what,
             " must have shape (num_layers * num_directions, batch, hidden_size) = (", num_layers * D, ", ", B,
             ", hidden_size), got ", s.defined() ? shape_str(s.sizes()) : std::string("an undefined tensor"));
    FW_CHECK(s.dtype() == input.dtype(), "[", op, "] ", what, " must have the input's dtype ", input.dtype(),
             ", got ", s.dtype());
  };
  check_state(h0, "hx");
  const int64_t Hh = h0.size(2);
  int64_t H = Hh;
  if (k == Cell::LSTM) {
    check_state(c0, "cx");
    H = c0.size(2);
    check_projection(proj, Hh, H);
  }

  Tensor x = batch_first ? input.transpose(0, 1) : input;
  std::vector<Tensor> hs, cs;
  for (int64_t layer = 0; layer < num_layers; layer++) {
    std::vector<Tensor> outs;
    for (int64_t dir = 0; dir < D; dir++) {
      const int64_t idx = layer * D + dir;
      const Tensor* p = params.data() + idx * per;
      const Tensor& w_ih = p[0];
      const Tensor& w_hh = p[1];
      Tensor b_ih = has_biases ? p[2] : Tensor(), b_hh = has_biases ? p[3] : Tensor();
      Tensor w_hr = proj ? p[per - 1] : Tensor();
      check_layer_params(op, G, H, Hh, x.size(2), input.dtype(), has_biases, layer, dir, w_ih, w_hh, b_ih, b_hh, w_hr);
      Tensor h = h0.select(0, idx), c = k == Cell::LSTM ? c0.select(0, idx) : Tensor();
      outs.push_back(run_direction(k, x, h, c, w_ih, w_hh, b_ih, b_hh, w_hr, dir == 1));
      hs.push_back(h);
      if (k == Cell::LSTM) cs.push_back(c);
    }
    x = D == 1 ? outs[0] : cat(outs, 2);
    if (dropout > 0 && train && layer + 1 < num_layers) x = fw::dropout(x, dropout, true);
  }
  RnnResult r;
  r.output = batch_first ? x.transpose(0, 1) : x;
  r.h_n = stack(hs, 0);
  if (k == Cell::LSTM) r.c_n = stack(cs, 0);
  return r;
}

// Note [packed sequences]
// A PackedSequence's data holds, for t = 0, 1, ..., the step-t inputs of the first batch_sizes[t]
// sequences (sorted by decreasing length). Step t runs the cell on the first batch_sizes[t] rows of
// the state; the rows past them belong to sequences that have ended and keep their last state.
// The reverse direction walks t downwards, so rows join (starting from h0) as their sequences begin.

// Consecutive row blocks of g with the given sizes, split by halving so that backward stays
// O(n log n) (see Note [time steps of the input projection]).
void split_rows(const Tensor& g, const int64_t* sizes, size_t n, std::vector<Tensor>& out) {
  if (n == 1) {
    out.push_back(g);
    return;
  }
  const size_t half = n / 2;
  int64_t rows = 0;
  for (size_t i = 0; i < half; i++) rows += sizes[i];
  split_rows(g.narrow(0, 0, rows), sizes, half, out);
  split_rows(g.narrow(0, rows, g.size(0) - rows), sizes + half, n - half, out);
}

std::vector<Tensor> packed_steps(const Tensor& gi, const std::vector<int64_t>& bs) {
  std::vector<Tensor> out;
  out.reserve(bs.size());
  if (gi.requires_grad() && is_grad_enabled()) {
    split_rows(gi, bs.data(), bs.size(), out);
  } else {
    int64_t off = 0;
    for (int64_t n : bs) {
      out.push_back(gi.narrow(0, off, n));
      off += n;
    }
  }
  return out;
}

// One layer in one direction over packed data x (sum of lengths, I); see Note [packed sequences].
// h (and c): the initial state (B, H), replaced by the final one. Returns the outputs packed as x.
Tensor run_packed_direction(Cell k, const Tensor& x, const std::vector<int64_t>& bs, Tensor& h, Tensor& c,
                            const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih, const Tensor& b_hh,
                            const Tensor& w_hr, bool reverse) {
  fw::detail::AutocastOff no_autocast(k == Cell::LSTM || k == Cell::GRU);  // as run_direction
  std::vector<Tensor> gi = packed_steps(input_gates(k, x, w_ih, b_ih, b_hh), bs);
  const Tensor whh_t = w_hh.t(), whr_t = w_hr.defined() ? w_hr.t() : Tensor();
  const bool lstm = k == Cell::LSTM;
  const size_t T = bs.size();
  std::vector<Tensor> out(T);
  Tensor ha, ca;
  if (!reverse) {
    ha = h;
    ca = c;
    std::vector<Tensor> ended_h, ended_c;  // states of ended rows, highest rows first
    for (size_t t = 0; t < T; t++) {
      const int64_t n = bs[t], m = ha.size(0);
      if (m > n) {
        ended_h.push_back(ha.narrow(0, n, m - n));
        ha = ha.narrow(0, 0, n);
        if (lstm) {
          ended_c.push_back(ca.narrow(0, n, m - n));
          ca = ca.narrow(0, 0, n);
        }
      }
      step(k, gi[t], ha, ca, whh_t, b_hh, whr_t);
      out[t] = ha;
    }
    ended_h.push_back(ha);
    std::reverse(ended_h.begin(), ended_h.end());
    h = ended_h.size() == 1 ? ha : cat(ended_h, 0);
    if (lstm) {
      ended_c.push_back(ca);
      std::reverse(ended_c.begin(), ended_c.end());
      c = ended_c.size() == 1 ? ca : cat(ended_c, 0);
    }
  } else {
    for (size_t s = 0; s < T; s++) {
      const size_t t = T - 1 - s;
      const int64_t n = bs[t], m = ha.defined() ? ha.size(0) : 0;
      if (n > m) {  // sequences of length t + 1 begin here
        ha = m == 0 ? h.narrow(0, 0, n) : cat({ha, h.narrow(0, m, n - m)}, 0);
        if (lstm) ca = m == 0 ? c.narrow(0, 0, n) : cat({ca, c.narrow(0, m, n - m)}, 0);
      }
      step(k, gi[t], ha, ca, whh_t, b_hh, whr_t);
      out[t] = ha;
    }
    h = ha;
    c = ca;
  }
  return cat(out, 0);
}

RnnResult run_packed(Cell k, const Tensor& data, const Tensor& batch_sizes, const Tensor& h0, const Tensor& c0,
                     TensorList params, bool has_biases, int64_t num_layers, double dropout, bool train,
                     bool bidirectional) {
  const char* op = op_name(k);
  FW_CHECK(data.defined() && data.dim() == 2, "[", op, "] packed data must be 2-D (sum of lengths, input_size), got ",
           data.defined() ? shape_str(data.sizes()) : std::string("an undefined tensor"));
  FW_CHECK(data.is_floating_point(), "[", op, "] input must be a floating-point tensor, got ", data.dtype());
  FW_CHECK(batch_sizes.defined() && batch_sizes.dim() == 1 && batch_sizes.numel() > 0 &&
               batch_sizes.dtype() == kLong,
           "[", op, "] batch_sizes must be a non-empty 1-D int64 tensor");
  Tensor bs_cpu = batch_sizes.to(Device(kCPU)).contiguous();
  std::vector<int64_t> bs(bs_cpu.data_ptr<int64_t>(), bs_cpu.data_ptr<int64_t>() + bs_cpu.numel());
  int64_t total = 0;
  for (size_t t = 0; t < bs.size(); t++) {
    FW_CHECK(bs[t] > 0 && (t == 0 || bs[t] <= bs[t - 1]), "[", op,
             "] batch_sizes must be positive and non-increasing, got ", shape_str(IntArrayRef(bs)));
    total += bs[t];
  }
  FW_CHECK(total == data.size(0), "[", op, "] packed data has ", data.size(0), " rows but batch_sizes sum to ", total);
  FW_CHECK(num_layers > 0, "[", op, "] num_layers must be positive, got ", num_layers);
  FW_CHECK(dropout >= 0 && dropout <= 1, "[", op, "] dropout must be in [0, 1], got ", dropout);
  const int64_t D = bidirectional ? 2 : 1, G = gates_of(k), B = bs[0];
  const int64_t per = layer_param_count(k, params.size(), has_biases, num_layers * D, op);
  const bool proj = per == (has_biases ? 5 : 3);
  for (const Tensor* s : {&h0, &c0}) {
    if (s == &c0 && k != Cell::LSTM) continue;
    FW_CHECK(s->defined() && s->dim() == 3 && s->size(0) == num_layers * D && s->size(1) == B &&
                 s->dtype() == data.dtype(),
             "[", op, "] ", s == &h0 ? "hx" : "cx", " must be (num_layers * num_directions, batch_sizes[0], hidden_size)"
             " = (", num_layers * D, ", ", B, ", hidden_size) of dtype ", data.dtype(), ", got ",
             s->defined() ? shape_str(s->sizes()) : std::string("an undefined tensor"));
  }
  const int64_t Hh = h0.size(2), H = k == Cell::LSTM ? c0.size(2) : Hh;
  if (k == Cell::LSTM) check_projection(proj, Hh, H);
  Tensor x = data;
  std::vector<Tensor> hs, cs;
  for (int64_t layer = 0; layer < num_layers; layer++) {
    std::vector<Tensor> outs;
    for (int64_t dir = 0; dir < D; dir++) {
      const int64_t idx = layer * D + dir;
      const Tensor* p = params.data() + idx * per;
      Tensor b_ih = has_biases ? p[2] : Tensor(), b_hh = has_biases ? p[3] : Tensor();
      Tensor w_hr = proj ? p[per - 1] : Tensor();
      check_layer_params(op, G, H, Hh, x.size(1), data.dtype(), has_biases, layer, dir, p[0], p[1], b_ih, b_hh, w_hr);
      Tensor h = h0.select(0, idx), c = k == Cell::LSTM ? c0.select(0, idx) : Tensor();
      outs.push_back(run_packed_direction(k, x, bs, h, c, p[0], p[1], b_ih, b_hh, w_hr, dir == 1));
      hs.push_back(h);
      if (k == Cell::LSTM) cs.push_back(c);
    }
    x = D == 1 ? outs[0] : cat(outs, 1);
    if (dropout > 0 && train && layer + 1 < num_layers) x = fw::dropout(x, dropout, true);
  }
  RnnResult r;
  r.output = x;
  r.h_n = stack(hs, 0);
  if (k == Cell::LSTM) r.c_n = stack(cs, 0);
  return r;
}

void check_cell(const char* op, const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const Tensor& b_ih, const Tensor& b_hh, int64_t gates, const char* hidden_label) {
  FW_CHECK(input.defined() && input.dim() == 2, "[", op, "] input must be 2-D (batch, input_size), got ",
           input.defined() ? input.dim() : 0, "-D");
  FW_CHECK(w_ih.defined() && w_ih.dim() == 2 && w_hh.defined() && w_hh.dim() == 2, "[", op,
           "] weight_ih and weight_hh must be matrices");
  const int64_t H = w_hh.size(1);
  FW_CHECK(input.size(1) == w_ih.size(1), "[", op, "] input has inconsistent input_size: got ", input.size(1),
           " expected ", w_ih.size(1));
  FW_CHECK(hx.defined() && hx.dim() == 2, "[", op, "] hidden", hidden_label, " must be 2-D (batch, hidden_size)");
  FW_CHECK(input.size(0) == hx.size(0), "[", op, "] Input batch size ", input.size(0), " doesn't match hidden",
           hidden_label, " batch size ", hx.size(0));
  FW_CHECK(hx.size(1) == H, "[", op, "] hidden", hidden_label, " has inconsistent hidden_size: got ", hx.size(1),
           ", expected ", H);
  FW_CHECK(w_ih.size(0) == gates * H && w_hh.size(0) == gates * H, "[", op, "] weight_ih and weight_hh must have ",
           gates, " * hidden_size = ", gates * H, " rows, got ", w_ih.size(0), " and ", w_hh.size(0));
  for (const Tensor* b : {&b_ih, &b_hh})
    FW_CHECK(!b->defined() || (b->dim() == 1 && b->size(0) == gates * H), "[", op, "] biases must have shape [",
             gates * H, "], got ", shape_str(b->sizes()));
  for (const Tensor* t : {&hx, &w_ih, &w_hh, &b_ih, &b_hh})
    FW_CHECK(!t->defined() || t->dtype() == input.dtype(), "[", op,
             "] input, hidden state and parameters must have the same dtype, got ", input.dtype(), " and ",
             t->dtype());
}

Tensor cell_forward(Cell k, const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                    const Tensor& b_ih, const Tensor& b_hh) {
  fw::detail::AutocastOff no_autocast(k == Cell::LSTM || k == Cell::GRU);  // as run_direction
  check_cell(op_name(k), input, hx, w_ih, w_hh, b_ih, b_hh, gates_of(k), "");
  Tensor h = hx, c;
  step(k, input_gates(k, input, w_ih, b_ih, b_hh), h, c, w_hh.t(), b_hh);
  return h;
}

}  // namespace

std::tuple<Tensor, Tensor, Tensor> lstm(const Tensor& input, TensorList hx, TensorList params, bool has_biases,
                                        int64_t num_layers, double dropout, bool train, bool bidirectional,
                                        bool batch_first) {
  FW_CHECK(hx.size() == 2, "[lstm] lstm expects two hidden states, got ", hx.size());
  RnnResult r = run_rnn(Cell::LSTM, input, hx[0], hx[1], params, has_biases, num_layers, dropout, train,
                        bidirectional, batch_first);
  return {r.output, r.h_n, r.c_n};
}

std::tuple<Tensor, Tensor> gru(const Tensor& input, const Tensor& hx, TensorList params, bool has_biases,
                               int64_t num_layers, double dropout, bool train, bool bidirectional, bool batch_first) {
  RnnResult r = run_rnn(Cell::GRU, input, hx, Tensor(), params, has_biases, num_layers, dropout, train, bidirectional,
                        batch_first);
  return {r.output, r.h_n};
}

std::tuple<Tensor, Tensor> rnn_tanh(const Tensor& input, const Tensor& hx, TensorList params, bool has_biases,
                                    int64_t num_layers, double dropout, bool train, bool bidirectional,
                                    bool batch_first) {
  RnnResult r = run_rnn(Cell::TANH, input, hx, Tensor(), params, has_biases, num_layers, dropout, train, bidirectional,
                        batch_first);
  return {r.output, r.h_n};
}

std::tuple<Tensor, Tensor> rnn_relu(const Tensor& input, const Tensor& hx, TensorList params, bool has_biases,
                                    int64_t num_layers, double dropout, bool train, bool bidirectional,
                                    bool batch_first) {
  RnnResult r = run_rnn(Cell::RELU, input, hx, Tensor(), params, has_biases, num_layers, dropout, train, bidirectional,
                        batch_first);
  return {r.output, r.h_n};
}

std::tuple<Tensor, Tensor, Tensor> lstm(const Tensor& data, const Tensor& batch_sizes, TensorList hx, TensorList params,
                                        bool has_biases, int64_t num_layers, double dropout, bool train,
                                        bool bidirectional) {
  FW_CHECK(hx.size() == 2, "[lstm] lstm expects two hidden states, got ", hx.size());
  RnnResult r = run_packed(Cell::LSTM, data, batch_sizes, hx[0], hx[1], params, has_biases, num_layers, dropout, train,
                           bidirectional);
  return {r.output, r.h_n, r.c_n};
}

std::tuple<Tensor, Tensor> gru(const Tensor& data, const Tensor& batch_sizes, const Tensor& hx, TensorList params,
                               bool has_biases, int64_t num_layers, double dropout, bool train, bool bidirectional) {
  RnnResult r = run_packed(Cell::GRU, data, batch_sizes, hx, Tensor(), params, has_biases, num_layers, dropout, train,
                           bidirectional);
  return {r.output, r.h_n};
}

std::tuple<Tensor, Tensor> rnn_tanh(const Tensor& data, const Tensor& batch_sizes, const Tensor& hx, TensorList params,
                                    bool has_biases, int64_t num_layers, double dropout, bool train,
                                    bool bidirectional) {
  RnnResult r = run_packed(Cell::TANH, data, batch_sizes, hx, Tensor(), params, has_biases, num_layers, dropout, train,
                           bidirectional);
  return {r.output, r.h_n};
}

std::tuple<Tensor, Tensor> rnn_relu(const Tensor& data, const Tensor& batch_sizes, const Tensor& hx, TensorList params,
                                    bool has_biases, int64_t num_layers, double dropout, bool train,
                                    bool bidirectional) {
  RnnResult r = run_packed(Cell::RELU, data, batch_sizes, hx, Tensor(), params, has_biases, num_layers, dropout, train,
                           bidirectional);
  return {r.output, r.h_n};
}

std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, TensorList hx, const Tensor& w_ih, const Tensor& w_hh,
                                     const Tensor& b_ih, const Tensor& b_hh) {
  FW_CHECK(hx.size() == 2, "[lstm_cell] lstm_cell expects two hidden states, got ", hx.size());
  fw::detail::AutocastOff no_autocast;  // as run_direction
  check_cell("lstm_cell", input, hx[0], w_ih, w_hh, b_ih, b_hh, 4, "[0]");
  check_cell("lstm_cell", input, hx[1], w_ih, w_hh, b_ih, b_hh, 4, "[1]");
  Tensor h = hx[0], c = hx[1];
  lstm_step(input_gates(Cell::LSTM, input, w_ih, b_ih, b_hh), h, c, w_hh.t());
  return {h, c};
}

Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh) {
  return cell_forward(Cell::GRU, input, hx, w_ih, w_hh, b_ih, b_hh);
}

Tensor rnn_tanh_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih, const Tensor& b_hh) {
  return cell_forward(Cell::TANH, input, hx, w_ih, w_hh, b_ih, b_hh);
}

Tensor rnn_relu_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih, const Tensor& b_hh) {
  return cell_forward(Cell::RELU, input, hx, w_ih, w_hh, b_ih, b_hh);
}

}  // namespace fw

namespace fw::nn {

namespace detail {

namespace {
std::string sizes_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}
}  // namespace

// ---- RNNImplBase

template <class Derived>
RNNImplBase<Derived>::RNNImplBase(const RNNOptionsBase& options_) : options_base(options_) {
  reset();
}

template <class Derived>
const char* RNNImplBase<Derived>::mode_name() const {
  return std::visit(
      [](const auto& m) -> const char* {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, enumtype::kLSTM>)
          return "LSTM";
        else if constexpr (std::is_same_v<M, enumtype::kGRU>)
          return "GRU";
        else
          return "RNN";
      },
      options_base.mode());
}

template <class Derived>
void RNNImplBase<Derived>::reset() {
  const char* name = mode_name();
  const RNNOptionsBase& o = options_base;
  const int64_t num_directions = o.bidirectional() ? 2 : 1;
  FW_CHECK(o.dropout() >= 0 && o.dropout() <= 1, "[", name,
           "] dropout should be a number in range [0, 1] representing the probability of an element being zeroed, "
           "got ",
           o.dropout());
  FW_CHECK(o.input_size() >= 0, "[", name, "] input_size must be non-negative, got ", o.input_size());
  FW_CHECK(o.hidden_size() > 0, "[", name, "] hidden_size must be greater than zero, got ", o.hidden_size());
  FW_CHECK(o.num_layers() > 0, "[", name, "] num_layers must be greater than zero, got ", o.num_layers());
  FW_CHECK(o.proj_size() >= 0, "[", name, "] proj_size has to be a positive integer, got ", o.proj_size());
  FW_CHECK(o.proj_size() < o.hidden_size(), "[", name, "] proj_size has to be smaller than hidden_size, got proj_size=",
           o.proj_size(), " and hidden_size=", o.hidden_size());
  FW_CHECK(o.proj_size() == 0 || std::holds_alternative<enumtype::kLSTM>(o.mode()), "[", name,
           "] proj_size argument is only supported for LSTM, not RNN or GRU");
  if (o.dropout() > 0 && o.num_layers() == 1)
    std::cerr << "[W] [" << name << "] dropout option adds dropout after all but last recurrent layer, so non-zero "
              << "dropout expects num_layers greater than 1, but got dropout=" << o.dropout()
              << " and num_layers=" << o.num_layers() << "\n";

  const int64_t gate_size = std::visit(
      [&](const auto& m) -> int64_t {
        using M = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<M, enumtype::kLSTM>)
          return 4 * o.hidden_size();
        else if constexpr (std::is_same_v<M, enumtype::kGRU>)
          return 3 * o.hidden_size();
        else
          return o.hidden_size();
      },
      o.mode());

  flat_weights_names_.clear();
  all_weights_.clear();
  flat_weights_.clear();
  const int64_t real_hidden = real_hidden_size();
  for (int64_t layer = 0; layer < o.num_layers(); layer++) {
    for (int64_t direction = 0; direction < num_directions; direction++) {
      const int64_t layer_input_size = layer == 0 ? o.input_size() : real_hidden * num_directions;
      const std::string suffix = "_l" + std::to_string(layer) + (direction == 1 ? "_reverse" : "");
      std::vector<std::pair<std::string, Tensor>> layer_params = {
          {"weight_ih" + suffix, fw::empty({gate_size, layer_input_size})},
          {"weight_hh" + suffix, fw::empty({gate_size, real_hidden})}};
      if (o.bias()) {
        layer_params.emplace_back("bias_ih" + suffix, fw::empty({gate_size}));
        layer_params.emplace_back("bias_hh" + suffix, fw::empty({gate_size}));
      }
      if (o.proj_size() > 0) layer_params.emplace_back("weight_hr" + suffix, fw::empty({o.proj_size(), o.hidden_size()}));
      std::vector<std::string> names;
      for (auto& [pname, t] : layer_params) {
        flat_weights_.push_back(this->register_parameter(pname, t));
        names.push_back(pname);
      }
      flat_weights_names_.insert(flat_weights_names_.end(), names.begin(), names.end());
      all_weights_.push_back(std::move(names));
    }
  }
  reset_parameters();
}

template <class Derived>
void RNNImplBase<Derived>::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(double(options_base.hidden_size()));
  for (auto& w : this->parameters()) init::uniform_(w, -stdv, stdv);
}

template <class Derived>
void RNNImplBase<Derived>::flatten_parameters() {
  auto named = this->named_parameters(/*recurse=*/false);
  flat_weights_.clear();
  for (const auto& n : flat_weights_names_) {
    const Tensor* t = named.find(n);
    flat_weights_.push_back(t ? *t : Tensor());
  }
}

template <class Derived>
std::vector<Tensor> RNNImplBase<Derived>::all_weights() const {
  std::vector<Tensor> result;
  auto named = this->named_parameters(/*recurse=*/false);
  for (const auto& weights : all_weights_)
    for (const auto& w : weights) result.push_back(named[w]);
  return result;
}

template <class Derived>
void RNNImplBase<Derived>::pretty_print(std::ostream& stream) const {
  const RNNOptionsBase& o = options_base;
  stream << std::boolalpha << "fw::nn::" << mode_name() << "(input_size=" << o.input_size()
         << ", hidden_size=" << o.hidden_size() << ", num_layers=" << o.num_layers() << ", bias=" << o.bias()
         << ", batch_first=" << o.batch_first() << ", dropout=" << o.dropout()
         << ", bidirectional=" << o.bidirectional();
  if (o.proj_size() > 0) stream << ", proj_size=" << o.proj_size();
  stream << ")";
}

template <class Derived>
void RNNImplBase<Derived>::check_input(const Tensor& input) const {
  FW_CHECK(input.dim() == 3, "[", mode_name(), "] input must have 3 dimensions, got ", input.dim());
  FW_CHECK(options_base.input_size() == input.size(-1), "[", mode_name(),
           "] input.size(-1) must be equal to input_size. Expected ", options_base.input_size(), ", got ",
           input.size(-1));
  FW_CHECK(input.is_floating_point(), "[", mode_name(), "] input must be a floating-point tensor, got ",
           input.dtype());
  FW_CHECK(flat_weights_.empty() || input.dtype() == flat_weights_[0].dtype(), "[", mode_name(),
           "] input must have the same dtype as the parameters (", flat_weights_[0].dtype(), "), got ",
           input.dtype());
}

template <class Derived>
std::tuple<int64_t, int64_t, int64_t> RNNImplBase<Derived>::get_expected_hidden_size(const Tensor& input) const {
  const int64_t mini_batch = options_base.batch_first() ? input.size(0) : input.size(1);
  const int64_t num_directions = options_base.bidirectional() ? 2 : 1;
  return {options_base.num_layers() * num_directions, mini_batch, real_hidden_size()};
}

template <class Derived>
void RNNImplBase<Derived>::check_hidden_size(const Tensor& hx,
                                             std::tuple<int64_t, int64_t, int64_t> expected_hidden_size,
                                             std::string msg) const {
  const std::vector<int64_t> expected = {std::get<0>(expected_hidden_size), std::get<1>(expected_hidden_size),
                                         std::get<2>(expected_hidden_size)};
  if (hx.sizes().equals(expected)) {
    FW_CHECK(hx.dtype() == flat_weights_[0].dtype(), "[", mode_name(),
             "] the hidden state must have the parameters' dtype (", flat_weights_[0].dtype(), "), got ", hx.dtype());
    return;
  }
  auto replace = [&](const std::string& key, const std::string& value) {
    auto pos = msg.find(key);
    if (pos != std::string::npos) msg.replace(pos, key.size(), value);
  };
  replace("{1}", sizes_str(expected));
  replace("{2}", sizes_str(hx.sizes()));
  FW_CHECK(false, "[", mode_name(), "] ", msg);
}

template <class Derived>
void RNNImplBase<Derived>::check_forward_args(const Tensor& input, const Tensor& hidden) const {
  check_input(input);
  check_hidden_size(hidden, get_expected_hidden_size(input));
}

template <class Derived>
bool RNNImplBase<Derived>::prepare_input(Tensor& input, std::initializer_list<Tensor*> hx) const {
  FW_CHECK(input.defined(), "[", mode_name(), "] input is an undefined tensor");
  FW_CHECK(input.dim() == 2 || input.dim() == 3, "[", mode_name(),
           "] Expected input to be 2-D (unbatched) or 3-D (batched) but received ", input.dim(), "-D tensor");
  const bool batched = input.dim() == 3;
  bool given = false;
  for (Tensor* h : hx) given = given || h->defined();
  if (given) {
    std::ostringstream dims;
    bool ok = true;
    for (Tensor* h : hx) {
      FW_CHECK(h->defined(), "[", mode_name(), "] the hidden states must be defined tensors");
      dims << (dims.tellp() > 0 ? ", " : "") << h->dim() << "-D";
      ok = ok && h->dim() == (batched ? 3 : 2);
    }
    const bool lstm = hx.size() == 2;
    FW_CHECK(ok, "[", mode_name(), "] For ", batched ? "batched 3-D" : "unbatched 2-D", " input, ",
             lstm ? "hx and cx" : "hx", " should also be ", batched ? "3-D" : "2-D", " but got ", lstm ? "(" : "",
             dims.str(), lstm ? ")" : "", " tensor", lstm ? "s" : "");
    if (!batched)
      for (Tensor* h : hx) *h = h->unsqueeze(1);
  }
  if (!batched) input = input.unsqueeze(options_base.batch_first() ? 0 : 1);
  return batched;
}

template <class Derived>
Tensor RNNImplBase<Derived>::packed_hidden(const utils::rnn::PackedSequence& input, Tensor hx, const std::string& msg,
                                           int64_t size) const {
  const Tensor& data = input.data();
  const Tensor& bs = input.batch_sizes();
  FW_CHECK(data.defined() && data.dim() == 2, "[", mode_name(),
           "] packed input data must be 2-D (sum of lengths, input_size), got ",
           data.defined() ? sizes_str(data.sizes()) : std::string("an undefined tensor"));
  FW_CHECK(options_base.input_size() == data.size(1), "[", mode_name(),
           "] input.size(-1) must be equal to input_size. Expected ", options_base.input_size(), ", got ",
           data.size(1));
  FW_CHECK(flat_weights_.empty() || data.dtype() == flat_weights_[0].dtype(), "[", mode_name(),
           "] input must have the same dtype as the parameters (", flat_weights_[0].dtype(), "), got ", data.dtype());
  FW_CHECK(bs.defined() && bs.dim() == 1 && bs.numel() > 0, "[", mode_name(),
           "] packed input must have 1-D batch_sizes");
  const int64_t D = options_base.bidirectional() ? 2 : 1;
  const std::tuple<int64_t, int64_t, int64_t> expected{options_base.num_layers() * D,
                                                       bs.to(Device(kCPU)).to(kLong).data_ptr<int64_t>()[0],
                                                       size < 0 ? real_hidden_size() : size};
  if (!hx.defined())
    return fw::zeros({std::get<0>(expected), std::get<1>(expected), std::get<2>(expected)}, data.options());
  check_hidden_size(hx, expected, msg);
  return input.sorted_indices().defined() ? hx.index_select(1, input.sorted_indices()) : hx;
}

template class RNNImplBase<RNNImpl>;
template class RNNImplBase<LSTMImpl>;
template class RNNImplBase<GRUImpl>;

// ---- RNNCellImplBase

template <class Derived>
RNNCellImplBase<Derived>::RNNCellImplBase(const RNNCellOptionsBase& options_) : options_base(options_) {
  reset();
}

template <class Derived>
const char* RNNCellImplBase<Derived>::cell_name() const {
  const int64_t chunks = options_base.num_chunks();
  return chunks == 4 ? "LSTMCell" : chunks == 3 ? "GRUCell" : "RNNCell";
}

template <class Derived>
void RNNCellImplBase<Derived>::reset() {
  const RNNCellOptionsBase& o = options_base;
  FW_CHECK(o.input_size() >= 0, "[", cell_name(), "] input_size must be non-negative, got ", o.input_size());
  FW_CHECK(o.hidden_size() > 0, "[", cell_name(), "] hidden_size must be greater than zero, got ", o.hidden_size());
  const int64_t rows = o.num_chunks() * o.hidden_size();
  weight_ih = this->register_parameter("weight_ih", fw::empty({rows, o.input_size()}));
  weight_hh = this->register_parameter("weight_hh", fw::empty({rows, o.hidden_size()}));
  bias_ih = this->register_parameter("bias_ih", o.bias() ? fw::empty({rows}) : Tensor(), o.bias());
  bias_hh = this->register_parameter("bias_hh", o.bias() ? fw::empty({rows}) : Tensor(), o.bias());
  reset_parameters();
}

template <class Derived>
void RNNCellImplBase<Derived>::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(double(options_base.hidden_size()));
  for (auto& w : this->parameters()) init::uniform_(w, -stdv, stdv);
}

template <class Derived>
void RNNCellImplBase<Derived>::pretty_print(std::ostream& stream) const {
  stream << std::boolalpha << "fw::nn::" << cell_name() << "(" << options_base.input_size() << ", "
         << options_base.hidden_size();
  if (!options_base.bias()) stream << ", bias=" << options_base.bias();
  const std::string nl = get_nonlinearity_str();
  if (!nl.empty() && nl != "kTanh") stream << ", nonlinearity=" << nl;
  stream << ")";
}

template <class Derived>
void RNNCellImplBase<Derived>::check_forward_input(const Tensor& input) const {
  FW_CHECK(input.defined() && (input.dim() == 1 || input.dim() == 2), "[", cell_name(),
           "] Expected input to be 1-D or 2-D but received ", input.defined() ? input.dim() : 0, "-D tensor");
  FW_CHECK(input.size(-1) == options_base.input_size(), "[", cell_name(),
           "] input has inconsistent input_size: got ", input.size(-1), " expected ", options_base.input_size());
  FW_CHECK(input.dtype() == weight_ih.dtype(), "[", cell_name(), "] input must have the parameters' dtype (",
           weight_ih.dtype(), "), got ", input.dtype());
}

template <class Derived>
void RNNCellImplBase<Derived>::check_forward_hidden(const Tensor& input, const Tensor& hx,
                                                    const std::string& hidden_label) const {
  FW_CHECK(hx.dim() == input.dim(), "[", cell_name(), "] hidden", hidden_label, " must have ", input.dim(),
           " dimensions like the input, got ", hx.dim());
  if (input.dim() == 2)
    FW_CHECK(input.size(0) == hx.size(0), "[", cell_name(), "] Input batch size ", input.size(0),
             " doesn't match hidden", hidden_label, " batch size ", hx.size(0));
  FW_CHECK(hx.size(-1) == options_base.hidden_size(), "[", cell_name(), "] hidden", hidden_label,
           " has inconsistent hidden_size: got ", hx.size(-1), ", expected ", options_base.hidden_size());
  FW_CHECK(hx.dtype() == input.dtype(), "[", cell_name(), "] hidden", hidden_label, " must have the input's dtype (",
           input.dtype(), "), got ", hx.dtype());
}

template class RNNCellImplBase<RNNCellImpl>;
template class RNNCellImplBase<LSTMCellImpl>;
template class RNNCellImplBase<GRUCellImpl>;

}  // namespace detail

// ---- RNN, LSTM, GRU

namespace {
template <class Options>
detail::RNNOptionsBase base_options(detail::RNNOptionsBase::rnn_options_base_mode_t mode, const Options& o) {
  detail::RNNOptionsBase b(mode, o.input_size(), o.hidden_size());
  b.num_layers(o.num_layers()).bias(o.bias()).batch_first(o.batch_first()).dropout(o.dropout());
  b.bidirectional(o.bidirectional());
  return b;
}

detail::RNNOptionsBase::rnn_options_base_mode_t rnn_mode(const RNNOptions::nonlinearity_t& nl) {
  if (std::holds_alternative<enumtype::kReLU>(nl)) return enumtype::kRNN_RELU();
  return enumtype::kRNN_TANH();
}
}  // namespace

RNNImpl::RNNImpl(const RNNOptions& options_)
    : detail::RNNImplBase<RNNImpl>(base_options(rnn_mode(options_.nonlinearity()), options_)), options(options_) {}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input_, Tensor hx) {
  Tensor input = input_;
  const bool batched = prepare_input(input, {&hx});
  const int64_t num_directions = options.bidirectional() ? 2 : 1;
  check_input(input);
  if (!hx.defined()) {
    const int64_t batch = options.batch_first() ? input.size(0) : input.size(1);
    hx = fw::zeros({options.num_layers() * num_directions, batch, options.hidden_size()}, input.options());
  }
  check_hidden_size(hx, get_expected_hidden_size(input));
  using Fn = std::tuple<Tensor, Tensor> (*)(const Tensor&, const Tensor&, TensorList, bool, int64_t, double, bool, bool,
                                            bool);
  Fn fn = std::holds_alternative<enumtype::kReLU>(options.nonlinearity()) ? Fn(fw::rnn_relu) : Fn(fw::rnn_tanh);
  auto [output, h_n] = fn(input, hx, flat_weights_, options.bias(), options.num_layers(), options.dropout(),
                          is_training(), options.bidirectional(), options.batch_first());
  if (!batched) {
    output = output.squeeze(options.batch_first() ? 0 : 1);
    h_n = h_n.squeeze(1);
  }
  return {output, h_n};
}

LSTMImpl::LSTMImpl(const LSTMOptions& options_)
    : detail::RNNImplBase<LSTMImpl>(base_options(enumtype::kLSTM(), options_).proj_size(options_.proj_size())),
      options(options_) {}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input_,
                                                                 std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  Tensor input = input_;
  Tensor h0, c0;
  if (hx_opt) std::tie(h0, c0) = *hx_opt;
  FW_CHECK(h0.defined() == c0.defined(), "[LSTM] hx and cx must both be defined or both be undefined");
  const bool batched = prepare_input(input, {&h0, &c0});
  const int64_t num_directions = options.bidirectional() ? 2 : 1;
  check_input(input);
  if (!h0.defined()) {
    const int64_t batch = options.batch_first() ? input.size(0) : input.size(1);
    h0 = fw::zeros({options.num_layers() * num_directions, batch, real_hidden_size()}, input.options());
    c0 = fw::zeros({options.num_layers() * num_directions, batch, options.hidden_size()}, input.options());
  }
  auto expected = get_expected_hidden_size(input);
  check_hidden_size(h0, expected, "Expected hidden[0] size {1}, got {2}");
  std::get<2>(expected) = options.hidden_size();  // the cell state has hidden_size features
  check_hidden_size(c0, expected, "Expected hidden[1] size {1}, got {2}");
  auto [output, h_n, c_n] = fw::lstm(input, {h0, c0}, flat_weights_, options.bias(), options.num_layers(),
                                     options.dropout(), is_training(), options.bidirectional(), options.batch_first());
  if (!batched) {
    output = output.squeeze(options.batch_first() ? 0 : 1);
    h_n = h_n.squeeze(1);
    c_n = c_n.squeeze(1);
  }
  return {output, {h_n, c_n}};
}

GRUImpl::GRUImpl(const GRUOptions& options_)
    : detail::RNNImplBase<GRUImpl>(base_options(enumtype::kGRU(), options_)), options(options_) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input_, Tensor hx) {
  Tensor input = input_;
  const bool batched = prepare_input(input, {&hx});
  const int64_t num_directions = options.bidirectional() ? 2 : 1;
  check_input(input);
  if (!hx.defined()) {
    const int64_t batch = options.batch_first() ? input.size(0) : input.size(1);
    hx = fw::zeros({options.num_layers() * num_directions, batch, options.hidden_size()}, input.options());
  }
  check_hidden_size(hx, get_expected_hidden_size(input));
  auto [output, h_n] = fw::gru(input, hx, flat_weights_, options.bias(), options.num_layers(), options.dropout(),
                               is_training(), options.bidirectional(), options.batch_first());
  if (!batched) {
    output = output.squeeze(options.batch_first() ? 0 : 1);
    h_n = h_n.squeeze(1);
  }
  return {output, h_n};
}

// ---- packed input (see Note [packed sequences]). The hidden states given and returned are in the
// caller's batch order; inside, they follow the packed (sorted) order.

namespace {
Tensor unsort(const Tensor& h, const utils::rnn::PackedSequence& p) {
  return p.unsorted_indices().defined() ? h.index_select(1, p.unsorted_indices()) : h;
}
utils::rnn::PackedSequence repack(const Tensor& data, const utils::rnn::PackedSequence& p) {
  return utils::rnn::PackedSequence(data, p.batch_sizes(), p.sorted_indices(), p.unsorted_indices());
}
}  // namespace

std::tuple<utils::rnn::PackedSequence, Tensor> RNNImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, Tensor hx) {
  hx = packed_hidden(packed_input, hx);
  const auto& p = packed_input;
  auto [output, h_n] =
      std::holds_alternative<enumtype::kReLU>(options.nonlinearity())
          ? fw::rnn_relu(p.data(), p.batch_sizes(), hx, flat_weights_, options.bias(), options.num_layers(),
                         options.dropout(), is_training(), options.bidirectional())
          : fw::rnn_tanh(p.data(), p.batch_sizes(), hx, flat_weights_, options.bias(), options.num_layers(),
                         options.dropout(), is_training(), options.bidirectional());
  return {repack(output, packed_input), unsort(h_n, packed_input)};
}

std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> LSTMImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  Tensor h0, c0;
  if (hx_opt) std::tie(h0, c0) = *hx_opt;
  FW_CHECK(h0.defined() == c0.defined(), "[LSTM] hx and cx must both be defined or both be undefined");
  h0 = packed_hidden(packed_input, h0, "Expected hidden[0] size {1}, got {2}");
  c0 = packed_hidden(packed_input, c0, "Expected hidden[1] size {1}, got {2}", options.hidden_size());
  auto [output, h_n, c_n] = fw::lstm(packed_input.data(), packed_input.batch_sizes(), {h0, c0}, flat_weights_,
                                     options.bias(), options.num_layers(), options.dropout(), is_training(),
                                     options.bidirectional());
  return {repack(output, packed_input), {unsort(h_n, packed_input), unsort(c_n, packed_input)}};
}

std::tuple<utils::rnn::PackedSequence, Tensor> GRUImpl::forward_with_packed_input(
    const utils::rnn::PackedSequence& packed_input, Tensor hx) {
  hx = packed_hidden(packed_input, hx);
  auto [output, h_n] = fw::gru(packed_input.data(), packed_input.batch_sizes(), hx, flat_weights_, options.bias(),
                               options.num_layers(), options.dropout(), is_training(), options.bidirectional());
  return {repack(output, packed_input), unsort(h_n, packed_input)};
}

// ---- cells

RNNCellImpl::RNNCellImpl(const RNNCellOptions& options_)
    : detail::RNNCellImplBase<RNNCellImpl>(
          detail::RNNCellOptionsBase(options_.input_size(), options_.hidden_size(), options_.bias(), 1)),
      options(options_) {}

std::string RNNCellImpl::get_nonlinearity_str() const {
  return std::holds_alternative<enumtype::kReLU>(options.nonlinearity()) ? "kReLU" : "kTanh";
}

Tensor RNNCellImpl::forward(const Tensor& input_, Tensor hx) {
  check_forward_input(input_);
  const bool batched = input_.dim() == 2;
  Tensor input = batched ? input_ : input_.unsqueeze(0);
  if (hx.defined()) {
    check_forward_hidden(input_, hx, "");
    if (!batched) hx = hx.unsqueeze(0);
  } else {
    hx = fw::zeros({input.size(0), options.hidden_size()}, input.options());
  }
  auto fn = std::holds_alternative<enumtype::kReLU>(options.nonlinearity()) ? fw::rnn_relu_cell : fw::rnn_tanh_cell;
  Tensor h = fn(input, hx, weight_ih, weight_hh, bias_ih, bias_hh);
  return batched ? h : h.squeeze(0);
}

LSTMCellImpl::LSTMCellImpl(const LSTMCellOptions& options_)
    : detail::RNNCellImplBase<LSTMCellImpl>(
          detail::RNNCellOptionsBase(options_.input_size(), options_.hidden_size(), options_.bias(), 4)),
      options(options_) {}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& input_,
                                                 std::optional<std::tuple<Tensor, Tensor>> hx_opt) {
  check_forward_input(input_);
  const bool batched = input_.dim() == 2;
  Tensor input = batched ? input_ : input_.unsqueeze(0);
  Tensor h, c;
  if (hx_opt) {
    std::tie(h, c) = *hx_opt;
    FW_CHECK(h.defined() && c.defined(), "[LSTMCell] hx and cx must be defined tensors");
    check_forward_hidden(input_, h, "[0]");
    check_forward_hidden(input_, c, "[1]");
    if (!batched) {
      h = h.unsqueeze(0);
      c = c.unsqueeze(0);
    }
  } else {
    h = fw::zeros({input.size(0), options.hidden_size()}, input.options());
    c = h;
  }
  auto [h1, c1] = fw::lstm_cell(input, {h, c}, weight_ih, weight_hh, bias_ih, bias_hh);
  if (!batched) return {h1.squeeze(0), c1.squeeze(0)};
  return {h1, c1};
}

GRUCellImpl::GRUCellImpl(const GRUCellOptions& options_)
    : detail::RNNCellImplBase<GRUCellImpl>(
          detail::RNNCellOptionsBase(options_.input_size(), options_.hidden_size(), options_.bias(), 3)),
      options(options_) {}

Tensor GRUCellImpl::forward(const Tensor& input_, Tensor hx) {
  check_forward_input(input_);
  const bool batched = input_.dim() == 2;
  Tensor input = batched ? input_ : input_.unsqueeze(0);
  if (hx.defined()) {
    check_forward_hidden(input_, hx, "");
    if (!batched) hx = hx.unsqueeze(0);
  } else {
    hx = fw::zeros({input.size(0), options.hidden_size()}, input.options());
  }
  Tensor h = fw::gru_cell(input, hx, weight_ih, weight_hh, bias_ih, bias_hh);
  return batched ? h : h.squeeze(0);
}

}  // namespace fw::nn
