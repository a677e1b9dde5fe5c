// PyTorch's pickle files, as libtorch's torch::pickle_save / torch::pickle_load:
//
//   std::vector<char> bytes = fw::pickle_save(fw::IValue(state));   // Python: torch.load(file)
//   fw::IValue v = fw::pickle_load(bytes);                          // file from Python's torch.save
//   for (const auto& e : v.toGenericDict())
//     model->named_parameters()[e.key().toStringRef()].copy_(e.value().toTensor());
//
// The bytes are torch.save's zip archive (PyTorch >= 1.6): `<name>/data.pkl` holds the object as a
// pickle and `<name>/data/<key>` the raw bytes of each tensor storage. pickle_load reads files
// written by torch.save (pickle protocols 2 to 5) and by pickle_save: None, bools, ints (up to 64
// bits), floats, strings, bytes (as strings), lists, tuples, dicts and OrderedDicts (a state_dict),
// tensors and nn.Parameters of every fw dtype. Tensors that shared a storage in Python share one
// here; CUDA tensors load onto the CPU. A plain Python pickle without tensors loads too.
//
// Files are untrusted input: the unpickler runs no code. Globals other than the tensor rebuild
// functions and OrderedDict are refused by name, and every size, offset, stride, memo index and
// zip field is checked against the data before use, so a corrupt or hostile file raises fw::Error
// naming the problem and never reads out of bounds. Every zip entry's CRC-32 is verified.
// Compressed zip entries and the pre-1.6 (non-zip) torch.save format raise with an explanation.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "fw/ivalue.h"

namespace fw {

// The value as a torch.save archive. Tensors may be of any dtype, layout and device (CUDA
// tensors are saved as CPU tensors); tensors over one storage keep sharing it, and the whole
// storage is written, as torch.save does. Undefined tensors raise.
std::vector<char> pickle_save(const IValue& value);

// The value stored by torch.save / pickle_save (see above).
IValue pickle_load(const std::vector<char>& data);
IValue pickle_load(const char* data, size_t size);

namespace jit {
using fw::pickle_load;
using fw::pickle_save;
}  // namespace jit

namespace detail {
// pickle_save with zip64 records even for a small archive (tests the >4 GiB path).
std::vector<char> pickle_save_zip64(const IValue& value);
// A zip archive of stored records (name, bytes) laid out as pickle_save lays them out; tests
// build malformed torch.save files with it.
std::vector<char> zip_archive(const std::vector<std::pair<std::string, std::string>>& records);
// The records of a zip archive in name order (each CRC-checked), with pickle_load's validation.
std::vector<std::pair<std::string, std::string>> zip_records(const std::vector<char>& archive);
}  // namespace detail

}  // namespace fw
