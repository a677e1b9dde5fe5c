// Checkpoints in the safetensors format (readable by Python's safetensors.torch.load_file).
//   fw::save({{"w", w}, {"b", b}}, "ckpt.safetensors");
//   auto t = fw::load("ckpt.safetensors");             // std::map<std::string, Tensor>
//   fw::save(*net, "net.safetensors");  fw::load(*net, "net.safetensors");
//   fw::save(opt, "opt.safetensors");   fw::load(opt, "opt.safetensors");
// Note [safetensors files]: an 8-byte little-endian header length N, N bytes of JSON
// {"name": {"dtype", "shape", "data_offsets"}, "__metadata__": {string: string}} padded with
// spaces to 8-byte alignment, then the raw little-endian data. complex64 is stored as "C64"
// (safetensors >= 0.6 knows it); the format has no complex128 code, so saving a complex128
// tensor throws (save its view_as_real instead). Writes are atomic: a temp file next to the target is written,
// fsynced and renamed over it, so a crash leaves either the old or the new complete file (a
// killed writer may leave a "<name>.tmp.XXXXXX" file behind). Loads validate everything before
// touching memory; every problem throws fw::Error naming the file.
// Every load also takes a file written by Python's torch.save (a zip archive, read with
// fw::pickle_load, see fw/pickle.h) holding a dict of tensors, one tensor or a list of tensors:
// fw::load(model, "model.pt") loads torch.save(model.state_dict(), "model.pt") from PyTorch.
#pragma once
#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "fw/error.h"
#include "fw/ivalue.h"
#include "fw/nn/module.h"
#include "fw/optim.h"
#include "fw/tensor.h"

namespace fw {

using TensorMap = std::map<std::string, Tensor>;
using MetadataMap = std::map<std::string, std::string>;

// The tensors and the string metadata of one safetensors file.
struct SafetensorsContents {
  TensorMap tensors;
  MetadataMap metadata;
};

// Writes named tensors (any layout, CPU) and optional string metadata atomically to `path`.
void save(const TensorMap& tensors, const std::string& path, const MetadataMap& metadata = {});
// Reads every tensor of a safetensors file (contiguous CPU tensors, requires_grad false).
TensorMap load(const std::string& path);
// Reads tensors and metadata.
SafetensorsContents load_with_metadata(const std::string& path);

// One tensor, stored under the name "tensor"; requires_grad is kept (metadata "fw.requires_grad"),
// as libtorch's torch::save/torch::load keep it.
void save(const Tensor& tensor, const std::string& path);
// The only tensor of a file (whatever its name); a file with another count is an error.
Tensor load_tensor(const std::string& path);

// Parameters and buffers by dotted name (metadata {"format": "pt"}).
void save(const nn::Module& module, const std::string& path);
// Copies a file written by save(module) into the module's parameters and buffers in place (with
// dtype conversion, as PyTorch's load_state_dict). Strict: a missing, unexpected or
// shape-mismatched key is an error naming the key, and the module is left unchanged.
void load(nn::Module& module, const std::string& path);

template <class H, class = std::enable_if_t<nn::detail::is_module_holder_v<H>>>
void save(const H& holder, const std::string& path) {
  save(static_cast<const nn::Module&>(*holder), path);
}
template <class H, class = std::enable_if_t<nn::detail::is_module_holder_v<H>>>
void load(H& holder, const std::string& path) {
  load(static_cast<nn::Module&>(*holder), path);
}

// libtorch's forms: a module behind a std::shared_ptr (std::make_shared<Net>()), a tensor loaded
// into a handle, and a list of tensors (stored under the names "0", "1", ...).
template <class M, class = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
void save(const std::shared_ptr<M>& module, const std::string& path) {
  FW_CHECK(module != nullptr, "[save] the module pointer is null (", path, ")");
  save(static_cast<const nn::Module&>(*module), path);
}
template <class M, class = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
void load(const std::shared_ptr<M>& module, const std::string& path) {
  FW_CHECK(module != nullptr, "[load] the module pointer is null (", path, ")");
  load(static_cast<nn::Module&>(*module), path);
}
inline void load(Tensor& tensor, const std::string& path) { tensor = load_tensor(path); }
void save(const std::vector<Tensor>& tensors, const std::string& path);
// Reads a file written by save(std::vector<Tensor>) back in order; other names are an error.
void load(std::vector<Tensor>& tensors, const std::string& path);

// The optimizer's state_dict(): per-parameter state tensors as tensors, 0-dim int64/float64
// entries (steps, learning rates) as decimal metadata strings under their state_dict key.
void save(const optim::Optimizer& optimizer, const std::string& path);
// Replaces the optimizer's state with a file written by save(optimizer) for the same parameter
// layout (parameter/group counts and state shapes are checked; on error the state is unchanged).
void load(optim::Optimizer& optimizer, const std::string& path);

// The same functions on streams (libtorch's torch::save(x, std::ostream&) and
// torch::load(x, std::istream&)): the bytes are those of the file form; a load reads the rest of
// the stream and validates it as a file.
void save(const TensorMap& tensors, std::ostream& out, const MetadataMap& metadata = {});
TensorMap load(std::istream& in);
SafetensorsContents load_with_metadata(std::istream& in);
void save(const Tensor& tensor, std::ostream& out);
void load(Tensor& tensor, std::istream& in);
void save(const std::vector<Tensor>& tensors, std::ostream& out);
void load(std::vector<Tensor>& tensors, std::istream& in);
void save(const nn::Module& module, std::ostream& out);
void load(nn::Module& module, std::istream& in);
void save(const optim::Optimizer& optimizer, std::ostream& out);
void load(optim::Optimizer& optimizer, std::istream& in);
template <class H, class = std::enable_if_t<nn::detail::is_module_holder_v<H>>>
void save(const H& holder, std::ostream& out) {
  save(static_cast<const nn::Module&>(*holder), out);
}
template <class H, class = std::enable_if_t<nn::detail::is_module_holder_v<H>>>
void load(H& holder, std::istream& in) {
  load(static_cast<nn::Module&>(*holder), in);
}
template <class M, class = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
void save(const std::shared_ptr<M>& module, std::ostream& out) {
  FW_CHECK(module != nullptr, "[save] the module pointer is null");
  save(static_cast<const nn::Module&>(*module), out);
}
template <class M, class = std::enable_if_t<std::is_base_of_v<nn::Module, M>>>
void load(const std::shared_ptr<M>& module, std::istream& in) {
  FW_CHECK(module != nullptr, "[load] the module pointer is null");
  load(static_cast<nn::Module&>(*module), in);
}

namespace serialize {

// libtorch's archives, stored as one safetensors file: tensors under dotted keys (a nested
// archive written under "block" puts its "weight" at "block.weight"), and double, int, bool and
// string values in the header's metadata.
class OutputArchive {
 public:
  void write(const std::string& key, const Tensor& tensor, bool is_buffer = false);
  void write(const std::string& key, const OutputArchive& nested);
  // A Tensor, double, int, bool or string value.
  void write(const std::string& key, const IValue& value);
  // Writes the file atomically (see fw::save).
  void save_to(const std::string& filename) const;
  // Writes the same bytes to a stream.
  void save_to(std::ostream& out) const;
  const TensorMap& tensors() const { return tensors_; }

 private:
  MetadataMap metadata() const;
  TensorMap tensors_;
  MetadataMap values_;
};

class InputArchive {
 public:
  // Reads and validates the whole file (see fw::load).
  void load_from(const std::string& filename);
  // Reads the rest of a stream as one archive.
  void load_from(std::istream& in);
  // A defined `tensor` of the stored shape is overwritten in place (no gradient is recorded);
  // otherwise the handle is rebound to the stored tensor. A missing key is an error.
  void read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  bool try_read(const std::string& key, Tensor& tensor, bool is_buffer = false);
  void read(const std::string& key, InputArchive& nested);
  bool try_read(const std::string& key, InputArchive& nested);
  void read(const std::string& key, IValue& value);
  bool try_read(const std::string& key, IValue& value);
  // The top-level keys: tensor names and nested archive names.
  std::vector<std::string> keys() const;

 private:
  void take(SafetensorsContents contents, const std::string& source);
  std::string source_ = "<archive>";
  TensorMap tensors_;
  MetadataMap values_;
};

}  // namespace serialize

}  // namespace fw
