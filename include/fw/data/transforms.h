// fw::data::transforms (libtorch's torch::data::transforms): BatchTransform / Transform bases,
// Lambda and BatchLambda, the tensor transforms TensorLambda and Normalize, and Stack (collate a
// vector of Examples into one Example). A dataset's batches change type only through map(): a
// DataLoader over a Dataset yields std::vector<Example<>> unless the dataset was mapped with Stack.
#pragma once
#include <functional>
#include <utility>
#include <vector>

#include "fw/array_ref.h"
#include "fw/data/example.h"
#include "fw/ops.h"

namespace fw::data::transforms {

// Transforms a whole batch (InputBatch -> OutputBatch).
template <class InputBatch, class OutputBatch>
class BatchTransform {
 public:
  using InputBatchType = InputBatch;
  using OutputBatchType = OutputBatch;
  virtual ~BatchTransform() = default;
  virtual OutputBatch apply_batch(InputBatch input_batch) = 0;
};

// Transforms each example of a batch (std::vector<Input> -> std::vector<Output>) with apply().
template <class Input, class Output>
class Transform : public BatchTransform<std::vector<Input>, std::vector<Output>> {
 public:
  using InputType = Input;
  using OutputType = Output;
  virtual OutputType apply(InputType input) = 0;
  std::vector<Output> apply_batch(std::vector<Input> input_batch) override {
    std::vector<Output> output;
    output.reserve(input_batch.size());
    for (auto&& input : input_batch) output.push_back(apply(std::move(input)));
    return output;
  }
};

// A BatchTransform calling a function on the whole batch.
template <class Input, class Output = Input>
class BatchLambda : public BatchTransform<Input, Output> {
 public:
  using typename BatchTransform<Input, Output>::InputBatchType;
  using typename BatchTransform<Input, Output>::OutputBatchType;
  using FunctionType = std::function<OutputBatchType(InputBatchType)>;
  explicit BatchLambda(FunctionType function) : function_(std::move(function)) {}
  OutputBatchType apply_batch(InputBatchType input_batch) override { return function_(std::move(input_batch)); }

 private:
  FunctionType function_;
};

// A Transform calling a function on each example.
template <class Input, class Output = Input>
class Lambda : public Transform<Input, Output> {
 public:
  using typename Transform<Input, Output>::InputType;
  using typename Transform<Input, Output>::OutputType;
  using FunctionType = std::function<Output(Input)>;
  explicit Lambda(FunctionType function) : function_(std::move(function)) {}
  OutputType apply(InputType input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// A Transform of each example's data tensor (the target passes through): operator()(data).
template <class Target = Tensor>
class TensorTransform : public Transform<Example<Tensor, Target>, Example<Tensor, Target>> {
 public:
  using E = Example<Tensor, Target>;
  using typename Transform<E, E>::InputType;
  using typename Transform<E, E>::OutputType;
  virtual Tensor operator()(Tensor input) = 0;
  OutputType apply(InputType input) override {
    input.data = (*this)(std::move(input.data));
    return input;
  }
};

// A TensorTransform calling a function on each data tensor.
template <class Target = Tensor>
class TensorLambda : public TensorTransform<Target> {
 public:
  using FunctionType = std::function<Tensor(Tensor)>;
  explicit TensorLambda(FunctionType function) : function_(std::move(function)) {}
  Tensor operator()(Tensor input) override { return function_(std::move(input)); }

 private:
  FunctionType function_;
};

// (data - mean) / stddev with one value per channel of (C, H, W) data, or one value for all:
// mean and stddev are float tensors shaped (C, 1, 1) (or (1, 1, 1)), as in libtorch.
template <class Target = Tensor>
struct Normalize : public TensorTransform<Target> {
  Normalize(ArrayRef<double> mean, ArrayRef<double> stddev)
      : mean(fw::tensor(mean.vec(), kFloat).unsqueeze(1).unsqueeze(2)),
        stddev(fw::tensor(stddev.vec(), kFloat).unsqueeze(1).unsqueeze(2)) {}
  Tensor operator()(Tensor input) override { return input.sub(mean).div(stddev); }

  Tensor mean, stddev;
};

// A BatchTransform that collates a vector of examples into one batch (libtorch's Collation).
template <class BatchType, class T = std::vector<BatchType>>
using Collation = BatchTransform<T, BatchType>;

template <class E = Example<>>
struct Stack;

// Stacks data (and defined targets) of a batch of Examples along a new dim 0.
template <>
struct Stack<Example<>> : public Collation<Example<>> {
  Example<> apply_batch(std::vector<Example<>> examples) const;
  Example<> apply_batch(std::vector<Example<>> examples) override {
    return std::as_const(*this).apply_batch(std::move(examples));
  }
};

// Stacks the data of a batch of TensorExamples along a new dim 0.
template <>
struct Stack<TensorExample> : public Collation<TensorExample> {
  TensorExample apply_batch(std::vector<TensorExample> examples) const;
  TensorExample apply_batch(std::vector<TensorExample> examples) override {
    return std::as_const(*this).apply_batch(std::move(examples));
  }
};

}  // namespace fw::data::transforms
