// TensorDataset and the Stack collate transform.
#include "fw/data/datasets.h"

#include "fw/data/transforms.h"
#include "fw/ops.h"

namespace fw::data {

namespace datasets {

TensorDataset::TensorDataset(Tensor data, Tensor target)
    : data_(std::move(data)), target_(std::move(target)) {
  FW_CHECK(data_.defined() && data_.dim() >= 1,
           "[TensorDataset] data must be a defined tensor with at least one dimension");
  if (target_.defined()) {
    FW_CHECK(target_.dim() >= 1 && target_.size(0) == data_.size(0),
             "[TensorDataset] size mismatch between tensors: data has ", data_.size(0),
             " examples but target has ", target_.dim() >= 1 ? target_.size(0) : 0);
  }
}

static Tensor nth(const std::vector<Tensor>& ts, size_t i) {
  FW_CHECK(ts.size() == 1 || ts.size() == 2,
           "[TensorDataset] expected 1 or 2 tensors (data[, target]), got ", ts.size());
  return i < ts.size() ? ts[i] : Tensor();
}

TensorDataset::TensorDataset(const std::vector<Tensor>& tensors)
    : TensorDataset(nth(tensors, 0), nth(tensors, 1)) {}

Example<> TensorDataset::get(size_t index) {
  FW_CHECK(int64_t(index) < data_.size(0), "[TensorDataset] index ", index,
           " is out of bounds for dataset of size ", data_.size(0));
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

}  // namespace transforms

}  // namespace fw::data
