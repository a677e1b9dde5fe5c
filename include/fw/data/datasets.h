// fw::data::datasets: BatchDataset / Dataset bases, MapDataset and TensorDataset (libtorch's
// torch::data::datasets). A Dataset yields one example per index; get_batch gathers several.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "fw/array_ref.h"
#include "fw/data/example.h"

namespace fw::data::datasets {

template <class Source, class Transform>
class MapDataset;

// A dataset that returns whole batches for a request: a list of indices by default, a batch size
// for stream datasets (libtorch's BatchDataset<Self, Batch, BatchRequest>).
template <class Self, class Batch, class BatchRequest = ArrayRef<size_t>>
class BatchDataset {
 public:
  using SelfType = Self;
  using BatchType = Batch;
  using BatchRequestType = BatchRequest;
  virtual ~BatchDataset() = default;
  // The batch for `request`.
  virtual Batch get_batch(BatchRequest request) = 0;
  // Number of examples, if known.
  virtual std::optional<size_t> size() const = 0;
  // This dataset with `transform` applied to every batch (copies the dataset).
  template <class Transform>
  MapDataset<Self, Transform> map(Transform transform) const& {
    return MapDataset<Self, Transform>(static_cast<const Self&>(*this), std::move(transform));
  }
  template <class Transform>
  MapDataset<Self, Transform> map(Transform transform) && {
    return MapDataset<Self, Transform>(std::move(static_cast<Self&>(*this)), std::move(transform));
  }
};

// A random-access dataset: get(index) returns one example; batches are vectors of examples.
template <class Self, class SingleExample = Example<>>
class Dataset : public BatchDataset<Self, std::vector<SingleExample>> {
 public:
  using ExampleType = SingleExample;
  // The example at `index`.
  virtual SingleExample get(size_t index) = 0;
  std::vector<SingleExample> get_batch(ArrayRef<size_t> indices) override {
    std::vector<SingleExample> batch;
    batch.reserve(indices.size());
    for (size_t i : indices) batch.push_back(get(i));
    return batch;
  }
};

// A batch dataset whose batches pass through Transform::apply_batch.
template <class Source, class Transform>
class MapDataset : public BatchDataset<MapDataset<Source, Transform>, typename Transform::OutputBatchType,
                                       typename Source::BatchRequestType> {
 public:
  using DatasetType = Source;
  using TransformType = Transform;
  using BatchType = typename Transform::OutputBatchType;
  using BatchRequestType = typename Source::BatchRequestType;
  MapDataset(Source dataset, Transform transform)
      : dataset_(std::move(dataset)), transform_(std::move(transform)) {}
  BatchType get_batch(BatchRequestType request) override {
    return transform_.apply_batch(dataset_.get_batch(std::move(request)));
  }
  std::optional<size_t> size() const override { return dataset_.size(); }
  const Source& dataset() const { return dataset_; }
  const Transform& transform() const { return transform_; }

 private:
  Source dataset_;
  Transform transform_;
};

// A dataset read as a stream (libtorch's StreamDataset): get_batch(n) returns the next batch of
// up to n examples; use it with samplers::StreamSampler(epoch_size). size() may be nullopt. As in
// libtorch's stateless DataLoader, each worker thread reads its own copy of the dataset.
template <class Self, class Batch = std::vector<Example<>>>
using StreamDataset = BatchDataset<Self, Batch, size_t>;

// Free-function form of BatchDataset::map.
template <class Source, class Transform>
MapDataset<Source, Transform> map(Source dataset, Transform transform) {
  return MapDataset<Source, Transform>(std::move(dataset), std::move(transform));
}

// libtorch's TensorDataset: one tensor indexed along dim 0; example i is the TensorExample
// tensor[i]. The vector constructor stacks its tensors (each one becomes an example).
class TensorDataset : public Dataset<TensorDataset, TensorExample> {
 public:
  explicit TensorDataset(const std::vector<Tensor>& tensors);
  explicit TensorDataset(Tensor tensor);
  TensorExample get(size_t index) override;
  std::optional<size_t> size() const override { return size_t(tensor.size(0)); }

  Tensor tensor;
};

// fw's labelled form: example i is {data[i], target[i]} (an Example<>); the target may be
// undefined, and then every example's target is undefined too.
class LabeledTensorDataset : public Dataset<LabeledTensorDataset, Example<>> {
 public:
  // Checks that data and target agree in size(0); data must have at least one dim.
  LabeledTensorDataset(Tensor data, Tensor target);
  explicit LabeledTensorDataset(Tensor data) : LabeledTensorDataset(std::move(data), Tensor()) {}
  Example<> get(size_t index) override;
  std::optional<size_t> size() const override { return size_t(data_.size(0)); }
  const Tensor& data() const { return data_; }
  const Tensor& target() const { return target_; }

 private:
  Tensor data_;
  Tensor target_;
};

// libtorch's MNIST dataset: the IDX files of Yann LeCun's distribution, uncompressed, in `root`
// (train-images-idx3-ubyte and train-labels-idx1-ubyte, or t10k-* for Mode::kTest). Images are
// float32 [N, 1, rows, cols] scaled to [0, 1]; targets are int64 [N]. Unlike libtorch, any image
// count and size is accepted; the files are validated (magic numbers, matching counts, exact
// sizes) and a problem throws fw::Error naming the file.
class MNIST : public Dataset<MNIST, Example<>> {
 public:
  enum class Mode { kTrain, kTest };
  explicit MNIST(const std::string& root, Mode mode = Mode::kTrain);
  Example<> get(size_t index) override;
  std::optional<size_t> size() const override;
  bool is_train() const noexcept { return train_; }
  const Tensor& images() const { return images_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor images_, targets_;
  bool train_;
};

}  // namespace fw::data::datasets

namespace fw::data {
// fw::data::Dataset, fw::data::TensorDataset, ... as libtorch's torch/data.h (using namespace datasets).
using namespace datasets;  // NOLINT(google-build-using-namespace)
}  // namespace fw::data
