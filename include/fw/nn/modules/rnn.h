// Recurrent layers with libtorch's C++ API: RNN (tanh or relu), LSTM and GRU (multi-layer,
// bidirectional, batch_first, dropout between layers), the single-step cells RNNCell, LSTMCell and
// GRUCell, and the functional forms fw::lstm / fw::gru / fw::rnn_tanh / fw::rnn_relu and
// fw::lstm_cell / fw::gru_cell / fw::rnn_tanh_cell / fw::rnn_relu_cell (torch::lstm, ...).
//
// The math is PyTorch's (gate order LSTM: i, f, g, o; GRU: r, z, n with
// n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h), written with public fw ops
// so autograd (and higher-order gradients) work. Per layer and direction the input projection of
// the whole sequence is one matrix product; each time step then does one product with W_hh.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "fw/nn/init.h"
#include "fw/nn/module.h"
#include "fw/nn/options.h"
#include "fw/nn/utils/rnn.h"

namespace fw {

// Recurrent modes (fw::kLSTM, ...), the values of RNNOptionsBase::mode.
namespace enumtype {
#define FW_RNN_TAG(Name, str)                           \
  struct Name {                                         \
    static constexpr const char* name() { return str; } \
    bool operator==(const Name&) const { return true; } \
    bool operator!=(const Name&) const { return false; } \
  };
FW_RNN_TAG(kLSTM, "LSTM")
FW_RNN_TAG(kGRU, "GRU")
FW_RNN_TAG(kRNN_TANH, "RNN_TANH")
FW_RNN_TAG(kRNN_RELU, "RNN_RELU")
#undef FW_RNN_TAG
}  // namespace enumtype
inline constexpr enumtype::kLSTM kLSTM{};
inline constexpr enumtype::kGRU kGRU{};
inline constexpr enumtype::kRNN_TANH kRNN_TANH{};
inline constexpr enumtype::kRNN_RELU kRNN_RELU{};

// ---- functional forms (ATen's torch::lstm, torch::gru, torch::rnn_tanh, torch::rnn_relu)
//
// input: (seq, batch, input_size), or (batch, seq, input_size) with batch_first. params: per layer
// and direction (layer-major, forward before reverse) w_ih, w_hh and, with has_biases, b_ih, b_hh
// (a module's flat weights). hx: (num_layers * num_directions, batch, hidden_size); for lstm
// {h0, c0}. dropout (probability p) applies to the outputs of every layer but the last when train.
// Returns (output (seq, batch, num_directions * hidden_size), h_n[, c_n]).
std::tuple<Tensor, Tensor, Tensor> lstm(const Tensor& input, TensorList hx, TensorList params, bool has_biases,
                                        int64_t num_layers, double dropout, bool train, bool bidirectional,
                                        bool batch_first);
std::tuple<Tensor, Tensor> gru(const Tensor& input, const Tensor& hx, TensorList params, bool has_biases,
                               int64_t num_layers, double dropout, bool train, bool bidirectional, bool batch_first);
std::tuple<Tensor, Tensor> rnn_tanh(const Tensor& input, const Tensor& hx, TensorList params, bool has_biases,
                                    int64_t num_layers, double dropout, bool train, bool bidirectional,
                                    bool batch_first);
std::tuple<Tensor, Tensor> rnn_relu(const Tensor& input, const Tensor& hx, TensorList params, bool has_biases,
                                    int64_t num_layers, double dropout, bool train, bool bidirectional,
                                    bool batch_first);

// The same over a PackedSequence's data (sum of lengths, input_size) and batch_sizes (ATen's packed
// overloads); hx in the packed (sorted) batch order, batch_sizes[0] rows. Returns (output data packed
// as the input, h_n[, c_n]).
std::tuple<Tensor, Tensor, Tensor> lstm(const Tensor& data, const Tensor& batch_sizes, TensorList hx, TensorList params,
                                        bool has_biases, int64_t num_layers, double dropout, bool train,
                                        bool bidirectional);
std::tuple<Tensor, Tensor> gru(const Tensor& data, const Tensor& batch_sizes, const Tensor& hx, TensorList params,
                               bool has_biases, int64_t num_layers, double dropout, bool train, bool bidirectional);
std::tuple<Tensor, Tensor> rnn_tanh(const Tensor& data, const Tensor& batch_sizes, const Tensor& hx, TensorList params,
                                    bool has_biases, int64_t num_layers, double dropout, bool train,
                                    bool bidirectional);
std::tuple<Tensor, Tensor> rnn_relu(const Tensor& data, const Tensor& batch_sizes, const Tensor& hx, TensorList params,
                                    bool has_biases, int64_t num_layers, double dropout, bool train,
                                    bool bidirectional);

// One time step: input (batch, input_size), hidden state(s) (batch, hidden_size); biases optional.
// lstm_cell takes hx = {h, c} and returns (h', c').
std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, TensorList hx, const Tensor& w_ih, const Tensor& w_hh,
                                     const Tensor& b_ih = {}, const Tensor& b_hh = {});
Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih = {},
                const Tensor& b_hh = {});
Tensor rnn_tanh_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih = {}, const Tensor& b_hh = {});
Tensor rnn_relu_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih = {}, const Tensor& b_hh = {});

}  // namespace fw

namespace fw::nn {

namespace detail {
// What RNN, LSTM and GRU share (libtorch's detail::RNNOptionsBase).
struct RNNOptionsBase {
  using rnn_options_base_mode_t =
      std::variant<enumtype::kLSTM, enumtype::kGRU, enumtype::kRNN_TANH, enumtype::kRNN_RELU>;
  RNNOptionsBase(rnn_options_base_mode_t mode, int64_t input_size, int64_t hidden_size)
      : mode_(mode), input_size_(input_size), hidden_size_(hidden_size) {}
  FW_ARG(rnn_options_base_mode_t, mode);
  FW_ARG(int64_t, input_size);
  FW_ARG(int64_t, hidden_size);
  FW_ARG(int64_t, num_layers) = 1;
  FW_ARG(bool, bias) = true;
  FW_ARG(bool, batch_first) = false;
  FW_ARG(double, dropout) = 0.0;
  FW_ARG(bool, bidirectional) = false;
  // LSTM only: > 0 projects each step's output to proj_size features (weight_hr).
  FW_ARG(int64_t, proj_size) = 0;
};
}  // namespace detail

// Options of RNN: input_size, hidden_size, then num_layers (1), nonlinearity (fw::kTanh or
// fw::kReLU), bias (true), batch_first (false), dropout (0), bidirectional (false).
struct RNNOptions {
  using nonlinearity_t = std::variant<enumtype::kTanh, enumtype::kReLU>;
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  FW_ARG(int64_t, input_size);
  FW_ARG(int64_t, hidden_size);
  FW_ARG(int64_t, num_layers) = 1;
  FW_ARG(nonlinearity_t, nonlinearity) = enumtype::kTanh();
  FW_ARG(bool, bias) = true;
  FW_ARG(bool, batch_first) = false;
  FW_ARG(double, dropout) = 0.0;
  FW_ARG(bool, bidirectional) = false;
};

// Options of LSTM: input_size, hidden_size, then num_layers (1), bias (true), batch_first (false),
// dropout (0), bidirectional (false), proj_size (0: none; else each step's output h = (o * tanh(c))
// W_hr^T has proj_size < hidden_size features, and h0/h_n and the outputs are that wide).
struct LSTMOptions {
  LSTMOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  FW_ARG(int64_t, input_size);
  FW_ARG(int64_t, hidden_size);
  FW_ARG(int64_t, num_layers) = 1;
  FW_ARG(bool, bias) = true;
  FW_ARG(bool, batch_first) = false;
  FW_ARG(double, dropout) = 0.0;
  FW_ARG(bool, bidirectional) = false;
  FW_ARG(int64_t, proj_size) = 0;
};

// Options of GRU: input_size, hidden_size, then num_layers (1), bias (true), batch_first (false),
// dropout (0), bidirectional (false).
struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  FW_ARG(int64_t, input_size);
  FW_ARG(int64_t, hidden_size);
  FW_ARG(int64_t, num_layers) = 1;
  FW_ARG(bool, bias) = true;
  FW_ARG(bool, batch_first) = false;
  FW_ARG(double, dropout) = 0.0;
  FW_ARG(bool, bidirectional) = false;
};

namespace detail {

// Parameters and checks shared by RNN, LSTM and GRU (libtorch's detail::RNNImplBase). For each
// layer l and direction (suffix "" or "_reverse"), in this order: weight_ih_l<l><suffix>
// (gates * hidden, layer input), weight_hh_l<l><suffix> (gates * hidden, hidden) and, with bias,
// bias_ih_l<l><suffix>, bias_hh_l<l><suffix> (gates * hidden); gates = 4 (LSTM), 3 (GRU), 1 (RNN).
// An LSTM with proj_size P adds weight_hr_l<l><suffix> (P, hidden), and its weight_hh and later
// layers' weight_ih take P (times num_directions) instead of hidden.
// Every parameter starts as U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
template <class Derived>
class RNNImplBase : public Cloneable<Derived> {
 public:
  explicit RNNImplBase(const RNNOptionsBase& options_);
  // (Re)creates the parameters from the options and samples them.
  void reset() override;
  // Re-samples every parameter from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)).
  void reset_parameters();
  // "fw::nn::LSTM(input_size=..., hidden_size=..., num_layers=..., bias=..., batch_first=...,
  // dropout=..., bidirectional=...)".
  void pretty_print(std::ostream& stream) const override;
  // Re-reads flat_weights from the registered parameters (a no-op for storage on CPU, where no
  // packed weight buffer exists).
  void flatten_parameters();
  // All parameters in flat_weights order.
  std::vector<Tensor> all_weights() const;
  // The parameters in the order the functional forms take them (handles to the registered ones).
  const std::vector<Tensor>& flat_weights() const noexcept { return flat_weights_; }

  RNNOptionsBase options_base;

 protected:
  // The module's name for error messages ("LSTM").
  const char* mode_name() const;
  // input is 3-D (after unsqueezing an unbatched input) and ends in input_size features; its dtype
  // matches the parameters'.
  void check_input(const Tensor& input) const;
  // (num_layers * num_directions, batch, real_hidden_size()) for this (3-D) input.
  std::tuple<int64_t, int64_t, int64_t> get_expected_hidden_size(const Tensor& input) const;
  // The size of h: proj_size when set, else hidden_size.
  int64_t real_hidden_size() const {
    return options_base.proj_size() > 0 ? options_base.proj_size() : options_base.hidden_size();
  }
  // Throws msg with {1} replaced by the expected and {2} by the actual size.
  void check_hidden_size(const Tensor& hx, std::tuple<int64_t, int64_t, int64_t> expected_hidden_size,
                         std::string msg = "Expected hidden size {1}, got {2}") const;
  void check_forward_args(const Tensor& input, const Tensor& hidden) const;
  // Adds the unbatched batch dim to input (and checks hx's rank against it); returns is_batched.
  bool prepare_input(Tensor& input, std::initializer_list<Tensor*> hx) const;
  // Checks a packed input and returns hx in its packed batch order (zeros when undefined).
  // size: the state's last size (-1: real_hidden_size()).
  Tensor packed_hidden(const utils::rnn::PackedSequence& input, Tensor hx,
                       const std::string& msg = "Expected hidden size {1}, got {2}", int64_t size = -1) const;

  std::vector<std::string> flat_weights_names_;
  std::vector<std::vector<std::string>> all_weights_;
  std::vector<Tensor> flat_weights_;
};

}  // namespace detail

// A multi-layer Elman RNN: h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh), act = tanh or relu.
// forward(input, hx) with input (seq, batch, input_size) (batch_first: (batch, seq, input_size)) or
// unbatched (seq, input_size), and hx (num_layers * num_directions, batch, hidden_size) (unbatched:
// without the batch dim; default zeros) returns (output (seq, batch, num_directions * hidden_size),
// h_n shaped as hx).
class RNNImpl : public detail::RNNImplBase<RNNImpl> {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options_);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});

  // Runs on a PackedSequence (libtorch's forward_with_packed_input): returns the output packed like
  // the input and h_n, both in the caller's batch order.
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& packed_input,
                                                                          Tensor hx = {});

  RNNOptions options;
};
FW_MODULE(RNN);

// A multi-layer LSTM: i, f, g, o = chunks of x W_ih^T + b_ih + h W_hh^T + b_hh;
// c' = sigmoid(f) * c + sigmoid(i) * tanh(g), h' = sigmoid(o) * tanh(c').
// forward(input, (h0, c0)) returns (output, (h_n, c_n)); shapes as for RNN, c as h.
class LSTMImpl : public detail::RNNImplBase<LSTMImpl> {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options_);
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});

  // Runs on a PackedSequence (libtorch's forward_with_packed_input); (h0, c0) and (h_n, c_n) in the
  // caller's batch order.
  std::tuple<utils::rnn::PackedSequence, std::tuple<Tensor, Tensor>> forward_with_packed_input(
      const utils::rnn::PackedSequence& packed_input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});

  LSTMOptions options;
};
FW_MODULE(LSTM);

// A multi-layer GRU: r = sigmoid(W_ir x + b_ir + W_hr h + b_hr), z = sigmoid(W_iz x + b_iz + W_hz h + b_hz),
// n = tanh(W_in x + b_in + r * (W_hn h + b_hn)), h' = (1 - z) * n + z * h.
// forward(input, hx) returns (output, h_n); shapes as for RNN.
class GRUImpl : public detail::RNNImplBase<GRUImpl> {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options_);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});

  // Runs on a PackedSequence (libtorch's forward_with_packed_input).
  std::tuple<utils::rnn::PackedSequence, Tensor> forward_with_packed_input(const utils::rnn::PackedSequence& packed_input,
                                                                          Tensor hx = {});

  GRUOptions options;
};
FW_MODULE(GRU);

// ---- cells: one time step

namespace detail {
// Options shared by the cells (libtorch's detail::RNNCellOptionsBase).
struct RNNCellOptionsBase {
  RNNCellOptionsBase(int64_t input_size, int64_t hidden_size, bool bias, int64_t num_chunks)
      : input_size_(input_size), hidden_size_(hidden_size), bias_(bias), num_chunks_(num_chunks) {}
  virtual ~RNNCellOptionsBase() = default;
  FW_ARG(int64_t, input_size);
  FW_ARG(int64_t, hidden_size);
  FW_ARG(bool, bias);
  FW_ARG(int64_t, num_chunks);
};
}  // namespace detail

// Options of RNNCell: input_size, hidden_size, bias (true), nonlinearity (fw::kTanh or fw::kReLU).
struct RNNCellOptions {
  using nonlinearity_t = std::variant<enumtype::kTanh, enumtype::kReLU>;
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  FW_ARG(int64_t, input_size);
  FW_ARG(int64_t, hidden_size);
  FW_ARG(bool, bias) = true;
  FW_ARG(nonlinearity_t, nonlinearity) = enumtype::kTanh();
};

// Options of LSTMCell and GRUCell: input_size, hidden_size, bias (true).
struct LSTMCellOptions {
  LSTMCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  FW_ARG(int64_t, input_size);
  FW_ARG(int64_t, hidden_size);
  FW_ARG(bool, bias) = true;
};
struct GRUCellOptions {
  GRUCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  FW_ARG(int64_t, input_size);
  FW_ARG(int64_t, hidden_size);
  FW_ARG(bool, bias) = true;
};

namespace detail {
// weight_ih (chunks * hidden, input), weight_hh (chunks * hidden, hidden), bias_ih, bias_hh
// (chunks * hidden; undefined without bias), all from U(-1/sqrt(hidden), 1/sqrt(hidden)).
template <class Derived>
class RNNCellImplBase : public Cloneable<Derived> {
 public:
  explicit RNNCellImplBase(const RNNCellOptionsBase& options_);
  void reset() override;
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  RNNCellOptionsBase options_base;
  Tensor weight_ih;
  Tensor weight_hh;
  Tensor bias_ih;
  Tensor bias_hh;

 protected:
  const char* cell_name() const;
  // input is 1-D or 2-D and ends in input_size features.
  void check_forward_input(const Tensor& input) const;
  // hx has input's batch size and hidden_size features.
  void check_forward_hidden(const Tensor& input, const Tensor& hx, const std::string& hidden_label) const;
  virtual std::string get_nonlinearity_str() const { return ""; }
};
}  // namespace detail

// input (batch, input_size) or (input_size), hx likewise with hidden_size (default zeros) -> h'.
class RNNCellImpl : public detail::RNNCellImplBase<RNNCellImpl> {
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size) : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& options_);
  Tensor forward(const Tensor& input, Tensor hx = {});

  RNNCellOptions options;

 protected:
  std::string get_nonlinearity_str() const override;
};
FW_MODULE(RNNCell);

// forward(input, (h, c)) -> (h', c').
class LSTMCellImpl : public detail::RNNCellImplBase<LSTMCellImpl> {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options_);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, std::optional<std::tuple<Tensor, Tensor>> hx_opt = {});

  LSTMCellOptions options;
};
FW_MODULE(LSTMCell);

// forward(input, h) -> h'.
class GRUCellImpl : public detail::RNNCellImplBase<GRUCellImpl> {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options_);
  Tensor forward(const Tensor& input, Tensor hx = {});

  GRUCellOptions options;
};
FW_MODULE(GRUCell);

extern template class detail::RNNImplBase<RNNImpl>;
extern template class detail::RNNImplBase<LSTMImpl>;
extern template class detail::RNNImplBase<GRUImpl>;
extern template class detail::RNNCellImplBase<RNNCellImpl>;
extern template class detail::RNNCellImplBase<LSTMCellImpl>;
extern template class detail::RNNCellImplBase<GRUCellImpl>;

}  // namespace fw::nn
