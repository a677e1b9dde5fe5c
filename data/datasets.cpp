// TensorDataset, LabeledTensorDataset and the Stack collate transforms.
#include "fw/data/datasets.h"

#include <cstring>
#include <fstream>
#include <iterator>

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

// ---- MNIST. An IDX file is a big-endian int32 magic (2051 for images, 2049 for
// labels), the big-endian int32 count, for images rows and cols too, then unsigned bytes.

namespace {

std::string read_idx_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  FW_CHECK(in.is_open(), "[MNIST] cannot open '", path, "'");
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  FW_CHECK(!in.bad(), "[MNIST] reading '", path, "' failed");
  return bytes;
}

uint32_t big_endian_u32(const std::string& b, size_t off) {
  auto u = [&](size_t i) { return uint32_t(static_cast<unsigned char>(b[off + i])); };
  return (u(0) << 24) | (u(1) << 16) | (u(2) << 8) | u(3);
}

// Checks the header (magic, then dims.size() sizes) and the exact data length; fills dims.
void check_idx(const std::string& b, const std::string& path, uint32_t magic, std::vector<int64_t>& dims) {
  const size_t header = 4 * (1 + dims.size());
  FW_CHECK(b.size() >= header, "[MNIST] '", path, "' is too short (", b.size(), " bytes) for an IDX header");
  FW_CHECK(big_endian_u32(b, 0) == magic, "[MNIST] '", path, "' has magic number ", big_endian_u32(b, 0),
           ", expected ", magic, " (is it gzip-compressed? decompress it first)");
  uint64_t total = 1;
  for (size_t i = 0; i < dims.size(); i++) {
    uint32_t d = big_endian_u32(b, 4 * (i + 1));
    dims[i] = int64_t(d);
    FW_CHECK(d == 0 || total <= (uint64_t(1) << 40) / d, "[MNIST] '", path, "' declares too many bytes of data");
    total *= d;
  }
  FW_CHECK(b.size() - header == total, "[MNIST] '", path, "' holds ", b.size() - header,
           " bytes of data, its header declares ", total);
}

Tensor bytes_tensor(const std::string& b, size_t offset, const std::vector<int64_t>& shape) {
  Tensor t = empty(shape, kUInt8);
  if (t.numel() > 0) std::memcpy(t.data_ptr(), b.data() + offset, size_t(t.numel()));
  return t;
}

}  // namespace

MNIST::MNIST(const std::string& root, Mode mode) : train_(mode == Mode::kTrain) {
  const std::string dir = root.empty() || root.back() == '/' ? root : root + "/";
  const std::string images_path = dir + (train_ ? "train-images-idx3-ubyte" : "t10k-images-idx3-ubyte");
  const std::string labels_path = dir + (train_ ? "train-labels-idx1-ubyte" : "t10k-labels-idx1-ubyte");
  std::string ib = read_idx_file(images_path), lb = read_idx_file(labels_path);
  std::vector<int64_t> idims(3), ldims(1);
  check_idx(ib, images_path, 2051, idims);
  check_idx(lb, labels_path, 2049, ldims);
  FW_CHECK(idims[0] == ldims[0], "[MNIST] '", images_path, "' has ", idims[0], " images but '", labels_path,
           "' has ", ldims[0], " labels");
  images_ = bytes_tensor(ib, 16, {idims[0], 1, idims[1], idims[2]}).to(kFloat).div_(255);
  targets_ = bytes_tensor(lb, 8, {ldims[0]}).to(kLong);
}

Example<> MNIST::get(size_t index) {
  check_index(index, images_.size(0), "MNIST");
  return Example<>(images_[int64_t(index)], targets_[int64_t(index)]);
}

std::optional<size_t> MNIST::size() const { return size_t(images_.size(0)); }

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
