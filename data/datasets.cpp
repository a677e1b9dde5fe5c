// TensorDataset, LabeledTensorDataset and the Stack collate transforms.
#include "fw/data/datasets.h"

#include "fw/data/transforms.h"
#include "fw/ops.h"

namespace fw::data {

namespace datasets {

static Tensor checked_examples(Tensor t, const char* op) {
  FW_CHECK(t.defined() && t.dim() >= 1, "[", op,
           "] expected a defined tensor with at least one dimension (the example dimension), got ",
           t.defined() ? "a 0-dim tensor" : "an undefined tensor");
  return t;
}

static void check_index(size_t index, int64_t n, const char* op) {
  FW_CHECK(index < size_t(n), "[", op, "] index ", index, " is out of bounds for dataset of size ", n);
}

static Tensor stack_examples(const std::vector<Tensor>& tensors) {
  FW_CHECK(!tensors.empty(), "[TensorDataset] expected a non-empty list of tensors");
  return fw::stack(tensors);
}

TensorDataset::TensorDataset(const std::vector<Tensor>& tensors)
    : TensorDataset(stack_examples(tensors)) {}

TensorDataset::TensorDataset(Tensor t) : tensor(checked_examples(std::move(t), "TensorDataset")) {}

TensorExample TensorDataset::get(size_t index) {
  check_index(index, tensor.size(0), "TensorDataset");
  return tensor.select(0, int64_t(index));
}

LabeledTensorDataset::LabeledTensorDataset(Tensor data, Tensor target)
    : data_(checked_examples(std::move(data), "LabeledTensorDataset")), target_(std::move(target)) {
  if (target_.defined()) {
    FW_CHECK(target_.dim() >= 1 && target_.size(0) == data_.size(0),
             "[LabeledTensorDataset] size mismatch between tensors: data has ", data_.size(0),
             " examples but target has ", target_.dim() >= 1 ? target_.size(0) : 0);
  }
}

Example<> LabeledTensorDataset::get(size_t index) {
  check_index(index, data_.size(0), "LabeledTensorDataset");
  Tensor target = target_.defined() ? target_.select(0, int64_t(index)) : Tensor();
  return Example<>(data_.select(0, int64_t(index)), std::move(target));
}

}  // namespace datasets

namespace transforms {

Example<> Stack<Example<>>::apply_batch(std::vector<Example<>> examples) const {
  FW_CHECK(!examples.empty(), "[Stack] cannot collate an empty batch");
  std::vector<Tensor> data, target;
  data.reserve(examples.size());
  bool has_target = examples.front().target.defined();
  for (auto& e : examples) {
    FW_CHECK(e.target.defined() == has_target,
             "[Stack] either all examples or none must have a target");
    data.push_back(std::move(e.data));
    if (has_target) target.push_back(std::move(e.target));
  }
  return Example<>(fw::stack(data), has_target ? fw::stack(target) : Tensor());
}

TensorExample Stack<TensorExample>::apply_batch(std::vector<TensorExample> examples) const {
  FW_CHECK(!examples.empty(), "[Stack] cannot collate an empty batch");
  std::vector<Tensor> data;
  data.reserve(examples.size());
  for (auto& e : examples) data.push_back(std::move(e.data));
  return fw::stack(data);
}

}  // namespace transforms

}  // namespace fw::data
