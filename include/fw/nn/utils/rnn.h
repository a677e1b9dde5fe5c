// fw::nn::utils::rnn (libtorch's torch/nn/utils/rnn.h): PackedSequence and pad_sequence,
// pack_padded_sequence, pad_packed_sequence, pack_sequence. Packing and padding are built from
// differentiable ops (narrow, cat, stack, index_select), so gradients flow through them.
#pragma once
#include <optional>
#include <tuple>
#include <vector>

#include "fw/array_ref.h"
#include "fw/tensor.h"

namespace fw::nn::utils::rnn {

// The inverse of a permutation (a 1-D int64 tensor): result[permutation[i]] = i. Undefined in,
// undefined out.
Tensor invert_permutation(const Tensor& permutation);

// Variable-length sequences packed time step by time step: data holds, for t = 0, 1, ..., the
// first batch_sizes[t] sequences' step t (sequences sorted by decreasing length), so data is
// (sum of lengths, *). batch_sizes is a 1-D int64 CPU tensor (one entry per step of the longest
// sequence). sorted_indices[i] is the original batch index of the i-th sequence in sorted order
// (undefined when the input was already sorted); unsorted_indices is its inverse.
class PackedSequence {
 public:
  // unsorted_indices, when undefined, is computed from sorted_indices.
  explicit PackedSequence(Tensor data = {}, Tensor batch_sizes = {}, Tensor sorted_indices = {},
                          Tensor unsorted_indices = {});

  const Tensor& data() const { return data_; }
  const Tensor& batch_sizes() const { return batch_sizes_; }
  const Tensor& sorted_indices() const { return sorted_indices_; }
  const Tensor& unsorted_indices() const { return unsorted_indices_; }
  // The same sequence with data (and the index tensors) converted as Tensor::to does.
  PackedSequence to(TensorOptions options) const;
  PackedSequence cpu() const;
  bool is_cuda() const { return data_.is_cuda(); }

 private:
  Tensor data_, batch_sizes_, sorted_indices_, unsorted_indices_;
};

// Packs input (T, B, *) (batch_first: (B, T, *)) holding B padded sequences of the given lengths
// (a 1-D integer tensor of B positive values, at most T). With enforce_sorted the lengths must be
// non-increasing; otherwise the batch is sorted by decreasing length first (stably) and the
// permutation is recorded in the result.
PackedSequence pack_padded_sequence(Tensor input, Tensor lengths, bool batch_first = false,
                                    bool enforce_sorted = true);

// The inverse of pack_padded_sequence: (padded (T, B, *) or (B, T, *), lengths (B) int64) in the
// original batch order. T is the longest length, or total_length (which must not be shorter).
std::tuple<Tensor, Tensor> pad_packed_sequence(const PackedSequence& sequence, bool batch_first = false,
                                               double padding_value = 0.0,
                                               std::optional<int64_t> total_length = std::nullopt);

// Stacks sequences (L_i, *) into (max L, B, *) (batch_first: (B, max L, *)), filling the tail of
// each with padding_value. The trailing dims and dtypes must agree.
Tensor pad_sequence(ArrayRef<Tensor> sequences, bool batch_first = false, double padding_value = 0);

// pack_padded_sequence(pad_sequence(sequences), their lengths, false, enforce_sorted).
PackedSequence pack_sequence(ArrayRef<Tensor> sequences, bool enforce_sorted = true);

}  // namespace fw::nn::utils::rnn
