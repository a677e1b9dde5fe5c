// fw::nn::utils::rnn (include/fw/nn/utils/rnn.h): packing and padding of variable-length
// sequences. Lengths and batch sizes are small host-side vectors; the tensor work is narrow, cat,
// stack and index_select, so autograd sees an ordinary graph.
#include "fw/nn/utils/rnn.h"

#include <algorithm>
#include <numeric>
#include <sstream>

#include "fw/ops.h"

namespace fw::nn::utils::rnn {
namespace {

std::string dims_str(IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

// lengths as host values; a 1-D integer tensor of `batch` values.
std::vector<int64_t> host_lengths(const char* op, const Tensor& lengths, int64_t batch) {
  FW_CHECK(lengths.defined() && lengths.dim() == 1 && !lengths.is_floating_point() && lengths.dtype() != kBool, "[",
           op, "] 'lengths' argument should be a 1D integer tensor, got ",
           lengths.defined() ? dims_str(lengths.sizes()) + " " + std::string(dtype_name(lengths.dtype())) : "undefined");
  FW_CHECK(lengths.size(0) == batch, "[", op, "] Expected `len(lengths)` to be equal to batch_size, but got ",
           lengths.size(0), " (batch_size=", batch, ")");
  Tensor l = lengths.to(Device(kCPU)).to(kLong).contiguous();
  const int64_t* p = l.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + batch);
}

// A (rows, trailing...) tensor of `value` like t.
Tensor filler(const Tensor& t, int64_t rows, IntArrayRef trailing, double value) {
  std::vector<int64_t> s{rows};
  s.insert(s.end(), trailing.begin(), trailing.end());
  return fw::full(s, value, t.options());
}

}  // namespace

Tensor invert_permutation(const Tensor& permutation) {
  if (!permutation.defined()) return {};
  FW_CHECK(permutation.dim() == 1 && permutation.dtype() == kLong,
           "[invert_permutation] expected a 1-D int64 permutation, got ", dims_str(permutation.sizes()), " ",
           dtype_name(permutation.dtype()));
  Tensor positions = fw::arange(permutation.numel(), TensorOptions(kLong).device(permutation.device()));
  return fw::scatter(fw::zeros_like(permutation), 0, permutation, positions);
}

PackedSequence::PackedSequence(Tensor data, Tensor batch_sizes, Tensor sorted_indices, Tensor unsorted_indices)
    : data_(std::move(data)),
      batch_sizes_(std::move(batch_sizes)),
      sorted_indices_(std::move(sorted_indices)),
      unsorted_indices_(std::move(unsorted_indices)) {
  if (!unsorted_indices_.defined()) unsorted_indices_ = invert_permutation(sorted_indices_);
}

PackedSequence PackedSequence::to(TensorOptions options) const {
  Tensor data = data_.to(options);
  auto move = [&](const Tensor& t) { return t.defined() ? t.to(data.device()) : t; };
  return PackedSequence(data, batch_sizes_, move(sorted_indices_), move(unsorted_indices_));
}

PackedSequence PackedSequence::cpu() const { return to(TensorOptions(Device(kCPU))); }

PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first, bool enforce_sorted) {
  const char* op = "pack_padded_sequence";
  FW_CHECK(input.defined() && input.dim() >= 2, "[", op, "] input must be at least 2-D (", batch_first ? "B, T" : "T, B",
           ", *), got ", input.defined() ? dims_str(input.sizes()) : "an undefined tensor");
  const int64_t bdim = batch_first ? 0 : 1, T = input.size(1 - bdim), B = input.size(bdim);
  std::vector<int64_t> len = host_lengths(op, lengths, B);
  for (int64_t b = 0; b < B; b++) {
    FW_CHECK(len[size_t(b)] > 0, "[", op, "] Length of all samples has to be greater than 0, but found lengths[", b,
             "] = ", len[size_t(b)]);
    FW_CHECK(len[size_t(b)] <= T, "[", op, "] lengths[", b, "] = ", len[size_t(b)],
             " exceeds the padded sequence length ", T, " of input ", dims_str(input.sizes()));
  }
  Tensor sorted_indices;
  if (enforce_sorted) {
    for (int64_t b = 1; b < B; b++)
      FW_CHECK(len[size_t(b)] <= len[size_t(b - 1)], "[", op,
               "] `lengths` array must be sorted in decreasing order when `enforce_sorted` is True (lengths[", b - 1,
               "] = ", len[size_t(b - 1)], " < lengths[", b, "] = ", len[size_t(b)],
               "). You can pass `enforce_sorted=False` to pack_padded_sequence and/or pack_sequence to sift around "
               "this restriction.");
  } else {
    std::vector<int64_t> order(size_t(B), 0);
    std::iota(order.begin(), order.end(), int64_t(0));
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return len[size_t(a)] > len[size_t(b)]; });
    std::vector<int64_t> sorted(size_t(B), 0);
    for (int64_t i = 0; i < B; i++) sorted[size_t(i)] = len[size_t(order[size_t(i)])];
    len = sorted;
    sorted_indices = fw::tensor(order).to(input.device());
    input = input.index_select(bdim, sorted_indices);
  }
  Tensor x = batch_first ? input.transpose(0, 1) : input;
  const int64_t steps = len[0];
  std::vector<int64_t> batch_sizes(size_t(steps), 0);
  std::vector<Tensor> chunks;
  chunks.reserve(size_t(steps));
  for (int64_t t = 0, active = B; t < steps; t++) {
    while (len[size_t(active - 1)] <= t) active--;
    batch_sizes[size_t(t)] = active;
    chunks.push_back(x.select(0, t).narrow(0, 0, active));
  }
  return PackedSequence(fw::cat(chunks, 0), fw::tensor(batch_sizes), sorted_indices, Tensor());
}

std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first,
                                               double padding_value, std::optional<int64_t> total_length) {
  const char* op = "pad_packed_sequence";
  const Tensor& data = sequence.data();
  const Tensor& bs_t = sequence.batch_sizes();
  FW_CHECK(data.defined() && data.dim() >= 1 && bs_t.defined() && bs_t.dim() == 1 && bs_t.numel() > 0, "[", op,
           "] expected a PackedSequence with data and 1-D batch_sizes");
  std::vector<int64_t> bs = host_lengths(op, bs_t, bs_t.numel());
  const int64_t steps = int64_t(bs.size()), B = bs[0];
  int64_t total = 0;
  for (int64_t t = 0; t < steps; t++) {
    FW_CHECK(bs[size_t(t)] > 0 && bs[size_t(t)] <= (t ? bs[size_t(t - 1)] : B), "[", op,
             "] batch_sizes must be positive and non-increasing, got ", dims_str(IntArrayRef(bs)));
    total += bs[size_t(t)];
  }
  FW_CHECK(data.size(0) == total, "[", op, "] data has ", data.size(0), " rows but batch_sizes sum to ", total);
  const int64_t T = total_length.value_or(steps);
  FW_CHECK(T >= steps, "[", op,
           "] Expected total_length to be at least the length of the longest sequence in input, but got total_length=",
           T, " and max sequence length being ", steps);
  IntArrayRef trailing = data.sizes().slice(1, size_t(data.dim() - 1));
  std::vector<Tensor> rows;
  rows.reserve(size_t(T));
  for (int64_t t = 0, off = 0; t < steps; off += bs[size_t(t)], t++) {
    Tensor step = data.narrow(0, off, bs[size_t(t)]);
    if (bs[size_t(t)] < B) step = fw::cat({step, filler(data, B - bs[size_t(t)], trailing, padding_value)}, 0);
    rows.push_back(step);
  }
  for (int64_t t = steps; t < T; t++) rows.push_back(filler(data, B, trailing, padding_value));
  Tensor out = fw::stack(rows, 0);
  std::vector<int64_t> len(size_t(B), 0);
  for (int64_t t = 0; t < steps; t++)
    for (int64_t b = 0; b < bs[size_t(t)]; b++) len[size_t(b)]++;
  Tensor lengths = fw::tensor(len);
  if (sequence.unsorted_indices().defined()) {
    const Tensor& inv = sequence.unsorted_indices();
    out = out.index_select(1, inv);
    lengths = lengths.index_select(0, inv.to(Device(kCPU)));
  }
  if (batch_first) out = out.transpose(0, 1);
  return {out, lengths};
}

Tensor pad_sequence(ArrayRef<Tensor> sequences, bool batch_first, double padding_value) {
  const char* op = "pad_sequence";
  FW_CHECK(!sequences.empty(), "[", op, "] received an empty list of sequences");
  const Tensor& first = sequences[0];
  FW_CHECK(first.defined() && first.dim() >= 1, "[", op, "] sequences must be at least 1-D (L, *), got ",
           first.defined() ? dims_str(first.sizes()) : "an undefined tensor", " at index 0");
  IntArrayRef trailing = first.sizes().slice(1, size_t(first.dim() - 1));
  int64_t max_len = 0;
  for (size_t i = 0; i < sequences.size(); i++) {
    const Tensor& s = sequences[i];
    FW_CHECK(s.defined() && s.dim() == first.dim() && s.sizes().slice(1, size_t(s.dim() - 1)).equals(trailing), "[",
             op, "] all sequences must be (L, *) with the same trailing dims as sequence 0 ", dims_str(first.sizes()),
             ", but sequence ", i, " is ", s.defined() ? dims_str(s.sizes()) : "undefined");
    FW_CHECK(s.dtype() == first.dtype(), "[", op, "] all sequences must have one dtype: sequence 0 is ",
             dtype_name(first.dtype()), ", sequence ", i, " is ", dtype_name(s.dtype()));
    max_len = std::max(max_len, s.size(0));
  }
  std::vector<Tensor> padded;
  padded.reserve(sequences.size());
  for (const Tensor& s : sequences)
    padded.push_back(s.size(0) == max_len ? s : fw::cat({s, filler(s, max_len - s.size(0), trailing, padding_value)}, 0));
  return fw::stack(padded, batch_first ? 0 : 1);
}

PackedSequence pack_sequence(ArrayRef<Tensor> sequences, bool enforce_sorted) {
  FW_CHECK(!sequences.empty(), "[pack_sequence] received an empty list of sequences");
  std::vector<int64_t> lengths;
  lengths.reserve(sequences.size());
  for (const Tensor& s : sequences) lengths.push_back(s.defined() && s.dim() >= 1 ? s.size(0) : 0);
  return pack_padded_sequence(pad_sequence(sequences), fw::tensor(lengths), false, enforce_sorted);
}

}  // namespace fw::nn::utils::rnn
