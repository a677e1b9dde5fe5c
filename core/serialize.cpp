// safetensors checkpoints: atomic writer and validating reader; see Note [safetensors files].
#include "fw/serialize.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <istream>
#include <iterator>
#include <ostream>

#include "core/json.h"
#include "core/pickle_internal.h"
#include "fw/ops.h"
#include "fw/pickle.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors I/O assumes a little-endian host");

namespace fw {

namespace {

constexpr uint64_t kMaxHeader = 100'000'000;
constexpr size_t kMaxDims = 64;

struct DtypeName {
  ScalarType type;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {kBool, "BOOL"}, {kUInt8, "U8"},   {kInt8, "I8"},      {kInt16, "I16"},  {kInt32, "I32"},  {kInt64, "I64"},
    {kHalf, "F16"},  {kBFloat16, "BF16"}, {kFloat, "F32"}, {kDouble, "F64"}, {kComplexFloat, "C64"}};
// safetensors dtypes fw has no type for.
constexpr const char* kUnsupported[] = {"U16", "U32", "U64", "F8_E5M2", "F8_E4M3", "F8_E8M0", "F4", "F6_E2M3", "F6_E3M2"};

const char* st_name(ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.type == t) return d.name;
  detail::throw_error("[save] dtype ", dtype_str(t), " has no safetensors name");
}

std::string quoted(const std::string& path) { return "[serialize] '" + path + "'"; }

[[noreturn]] void sys_fail(const std::string& ctx, const char* what) {
  detail::throw_error(ctx, ": ", what, " failed: ", std::strerror(errno));
}

// ---- writing

struct FileGuard {
  int fd = -1;
  std::string tmp;  // unlinked on failure
  ~FileGuard() {
    if (fd >= 0) ::close(fd);
    if (!tmp.empty()) ::unlink(tmp.c_str());
  }
};

void write_all(int fd, const void* data, size_t n, const std::string& ctx) {
  auto* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, std::min<size_t>(n, size_t(1) << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) sys_fail(ctx, "write");
    p += w;
    n -= size_t(w);
  }
}

std::string directory_of(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string build_header(const std::vector<std::pair<std::string, Tensor>>& tensors, const MetadataMap& metadata) {
  std::string h = "{";
  if (!metadata.empty()) {
    h += "\"__metadata__\":{";
    for (auto it = metadata.begin(); it != metadata.end(); ++it) {
      if (it != metadata.begin()) h += ',';
      json::write_string(h, it->first);
      h += ':';
      json::write_string(h, it->second);
    }
    h += '}';
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (h.size() > 1) h += ',';
    json::write_string(h, name);
    h += ":{\"dtype\":\"";
    h += st_name(t.dtype());
    h += "\",\"shape\":[";
    for (int64_t d = 0; d < t.dim(); d++) {
      if (d) h += ',';
      h += std::to_string(t.size(d));
    }
    uint64_t end = offset + uint64_t(t.nbytes());
    h += "],\"data_offsets\":[" + std::to_string(offset) + "," + std::to_string(end) + "]}";
    offset = end;
  }
  h += '}';
  while ((8 + h.size()) % 8 != 0) h += ' ';
  return h;
}

// Note [atomic save]: mkstemp next to the target, write, fsync, rename over the target, fsync the
// directory. Until the rename the old file is untouched; rename is atomic within a file system.
void write_atomic(const std::string& path, const std::string& header,
                  const std::vector<std::pair<std::string, Tensor>>& tensors) {
  std::string ctx = quoted(path);
  FileGuard g;
  std::string tmpl = path + ".tmp.XXXXXX";
  g.fd = ::mkstemp(tmpl.data());
  if (g.fd < 0) sys_fail(ctx, "creating a temporary file");
  g.tmp = tmpl;
  struct stat st;
  mode_t mode = ::stat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0644;
  if (::fchmod(g.fd, mode) != 0) sys_fail(ctx, "fchmod");
  uint64_t n = header.size();
  write_all(g.fd, &n, 8, ctx);
  write_all(g.fd, header.data(), header.size(), ctx);
  for (const auto& [name, t] : tensors) write_all(g.fd, t.data_ptr(), size_t(t.nbytes()), ctx);
  if (::fsync(g.fd) != 0) sys_fail(ctx, "fsync");
  int fd = g.fd;
  g.fd = -1;
  if (::close(fd) != 0) sys_fail(ctx, "close");
  if (::rename(g.tmp.c_str(), path.c_str()) != 0) sys_fail(ctx, "rename");
  g.tmp.clear();
  int dfd = ::open(directory_of(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) sys_fail(ctx, "opening the directory");
  int rc = ::fsync(dfd);
  ::close(dfd);
  if (rc != 0) sys_fail(ctx, "fsync of the directory");
}

// ---- reading

struct Entry {
  std::string name;
  ScalarType type;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

uint64_t as_index(const json::Value& v, const std::string& ctx, const std::string& what) {
  FW_CHECK(v.kind == json::Value::Number, ctx, ": ", what, " must be a number, got ", json::kind_name(v.kind));
  FW_CHECK(v.text[0] != '-', ctx, ": ", what, " is negative (", v.text, ")");
  uint64_t x = 0;
  auto [p, ec] = std::from_chars(v.text.data(), v.text.data() + v.text.size(), x);
  FW_CHECK(p == v.text.data() + v.text.size(), ctx, ": ", what, " must be an integer, got ", v.text);
  FW_CHECK(ec == std::errc() && x <= uint64_t(INT64_MAX), ctx, ": ", what, " overflows (", v.text, ")");
  return x;
}

ScalarType parse_dtype(const json::Value& v, const std::string& ctx, const std::string& name) {
  FW_CHECK(v.kind == json::Value::String, ctx, ": dtype of tensor '", name, "' must be a string");
  for (const auto& d : kDtypes)
    if (v.text == d.name) return d.type;
  for (const char* u : kUnsupported)
    FW_CHECK(v.text != u, ctx, ": unsupported dtype '", v.text, "' of tensor '", name, "' (fw has no such type)");
  detail::throw_error(ctx, ": unknown dtype '", v.text, "' of tensor '", name, "'");
}

Entry parse_entry(const std::string& name, const json::Value& v, uint64_t data_size, const std::string& ctx) {
  std::string tn = "tensor '" + name + "'";
  FW_CHECK(v.kind == json::Value::Object, ctx, ": ", tn, " must be an object");
  const json::Value *dtype = nullptr, *shape = nullptr, *offsets = nullptr;
  for (const auto& [k, x] : v.object) {
    if (k == "dtype") dtype = &x;
    else if (k == "shape") shape = &x;
    else if (k == "data_offsets") offsets = &x;
    else detail::throw_error(ctx, ": unknown field '", k, "' in ", tn);
  }
  FW_CHECK(dtype && shape && offsets, ctx, ": ", tn, " needs dtype, shape and data_offsets");
  Entry e{name, parse_dtype(*dtype, ctx, name), {}, 0, 0};
  FW_CHECK(shape->kind == json::Value::Array, ctx, ": shape of ", tn, " must be an array");
  FW_CHECK(shape->array.size() <= kMaxDims, ctx, ": ", tn, " has ", shape->array.size(), " dimensions (at most ",
           kMaxDims, ")");
  uint64_t nbytes = element_size(e.type);
  for (size_t d = 0; d < shape->array.size(); d++) {
    uint64_t s = as_index(shape->array[d], ctx, "shape entry " + std::to_string(d) + " of " + tn);
    FW_CHECK(!__builtin_mul_overflow(nbytes, s, &nbytes) && nbytes <= uint64_t(INT64_MAX), ctx, ": shape of ", tn,
             " overflows");
    e.shape.push_back(int64_t(s));
  }
  FW_CHECK(offsets->kind == json::Value::Array && offsets->array.size() == 2, ctx, ": data_offsets of ", tn,
           " must be an array [begin, end]");
  e.begin = as_index(offsets->array[0], ctx, "data_offsets begin of " + tn);
  e.end = as_index(offsets->array[1], ctx, "data_offsets end of " + tn);
  FW_CHECK(e.begin <= e.end && e.end <= data_size, ctx, ": data_offsets [", e.begin, ", ", e.end, "] of ", tn,
           " are out of range of the data section (", data_size, " bytes)");
  FW_CHECK(e.end - e.begin == nbytes, ctx, ": size mismatch: ", tn, " has ", e.end - e.begin,
           " bytes of data but its dtype ", st_name(e.type), " and shape need ", nbytes);
  return e;
}

void check_overlaps(std::vector<Entry>& entries, const std::string& ctx) {
  std::vector<const Entry*> by_begin;
  for (const auto& e : entries)
    if (e.end > e.begin) by_begin.push_back(&e);
  std::sort(by_begin.begin(), by_begin.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (size_t i = 1; i < by_begin.size(); i++)
    FW_CHECK(by_begin[i - 1]->end <= by_begin[i]->begin, ctx, ": overlapping data_offsets of tensors '",
             by_begin[i - 1]->name, "' and '", by_begin[i]->name, "'");
}

void read_at(int fd, void* dst, uint64_t n, uint64_t off, const std::string& ctx) {
  auto* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, std::min<uint64_t>(n, uint64_t(1) << 30), off_t(off));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) sys_fail(ctx, "read");
    FW_CHECK(r > 0, ctx, ": unexpected end of file (truncated?)");
    p += r, off += uint64_t(r), n -= uint64_t(r);
  }
}

MetadataMap parse_metadata(const json::Value& v, const std::string& ctx) {
  FW_CHECK(v.kind == json::Value::Object, ctx, ": __metadata__ must be an object of strings");
  MetadataMap m;
  for (const auto& [k, x] : v.object) {
    FW_CHECK(x.kind == json::Value::String, ctx, ": __metadata__ value of '", k, "' must be a string, got ",
             json::kind_name(x.kind));
    m[k] = x.text;
  }
  return m;
}

// Parses and validates `size` bytes of safetensors data; read(dst, n, offset) fetches bytes and
// fails on a short read.
template <class Read>
SafetensorsContents parse(uint64_t size, const Read& read, const std::string& ctx) {
  FW_CHECK(size >= 8, ctx, ": file of ", size, " bytes is too small for a safetensors header length");
  uint64_t n = 0;
  read(&n, 8, 0);
  FW_CHECK(n <= kMaxHeader, ctx, ": header length ", n, " exceeds the limit of ", kMaxHeader, " bytes");
  FW_CHECK(n <= size - 8, ctx, ": header length ", n, " exceeds the file size (", size, " bytes; truncated?)");
  std::string header(n, '\0');
  read(header.data(), n, 8);
  json::Value root = json::parse(header, ctx);
  FW_CHECK(root.kind == json::Value::Object, ctx, ": the header must be a JSON object, got ", json::kind_name(root.kind));
  uint64_t data_size = size - 8 - n;
  SafetensorsContents out;
  std::vector<Entry> entries;
  for (const auto& [name, v] : root.object) {
    if (name == "__metadata__") out.metadata = parse_metadata(v, ctx);
    else entries.push_back(parse_entry(name, v, data_size, ctx));
  }
  check_overlaps(entries, ctx);
  for (const auto& e : entries) {
    Tensor t = empty(e.shape, TensorOptions(e.type));
    read(t.data_ptr(), e.end - e.begin, 8 + n + e.begin);
    if (e.type == kBool) {
      auto* b = static_cast<const uint8_t*>(t.data_ptr());
      for (int64_t i = 0; i < t.numel(); i++)
        FW_CHECK(b[i] <= 1, ctx, ": tensor '", e.name, "' of dtype BOOL holds the byte ", int(b[i]));
    }
    out.tensors.emplace(e.name, std::move(t));
  }
  return out;
}

// Python's torch.save files (zip archives; the legacy format only to name it in the error) go
// through pickle_load instead: fw::load(module, "model.pt") takes torch.save(model.state_dict()).
bool is_torch_save(const unsigned char* head, uint64_t n) {
  static const unsigned char zip[] = {'P', 'K', 3, 4}, empty_zip[] = {'P', 'K', 5, 6}, legacy[] = {0x80, 2, 0x8a, 0x0a};
  return n >= 4 && (std::memcmp(head, zip, 4) == 0 || std::memcmp(head, empty_zip, 4) == 0 ||
                    std::memcmp(head, legacy, 4) == 0);
}

// The tensors of a torch.save file: a dict of tensors by name (a state_dict), one tensor (named
// "tensor"), or a list or tuple of tensors (named "0", "1", ...), contiguous and detached.
// load() reads the file's value; its errors are prefixed with ctx.
template <class Load>
SafetensorsContents from_torch_save(const Load& load, const std::string& ctx) {
  IValue v;
  try {
    v = load();
  } catch (const Error& e) {
    fw::detail::throw_error(ctx, ": ", e.what());
  }
  SafetensorsContents out;
  auto add = [&](const std::string& k, const IValue& x) {
    FW_CHECK(x.isTensor(), ctx, ": entry '", k, "' of the torch.save file is a ", x.tagKind(),
             ", not a tensor (read such files with fw::pickle_load)");
    out.tensors.emplace(k, x.toTensor().detach().contiguous());
  };
  if (v.isTensor()) {
    add("tensor", v);
  } else if (v.isGenericDict()) {
    for (const auto& e : v.toGenericDict()) {
      FW_CHECK(e.key().isString(), ctx, ": the torch.save file's dict has a key of kind ", e.key().tagKind(),
               " (tensor names are strings)");
      add(e.key().toStringRef(), e.value());
    }
  } else if (v.isList() || v.isTuple()) {
    std::vector<IValue> xs = v.isTuple() ? v.toTupleRef().elements() : v.toList().vec();
    for (size_t i = 0; i < xs.size(); ++i) add(std::to_string(i), xs[i]);
  } else {
    fw::detail::throw_error(ctx, ": the torch.save file holds a ", v.tagKind(), ", not tensors");
  }
  return out;
}

SafetensorsContents read_file(const std::string& path) {
  std::string ctx = quoted(path);
  FileGuard g;
  g.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (g.fd < 0) sys_fail(ctx, "open");
  struct stat st;
  if (::fstat(g.fd, &st) != 0) sys_fail(ctx, "stat");
  FW_CHECK(S_ISREG(st.st_mode), ctx, ": not a regular file");
  unsigned char head[4];
  uint64_t size = uint64_t(st.st_size);
  if (size >= 4) read_at(g.fd, head, 4, 0, ctx);
  if (is_torch_save(head, size)) {
    return from_torch_save([&] { return fw::detail::pickle_load_file(g.fd, size); }, ctx);
  }
  return parse(uint64_t(st.st_size), [&](void* dst, uint64_t n, uint64_t off) { read_at(g.fd, dst, n, off, ctx); },
               ctx);
}

// The whole of a stream's remaining bytes are the file (libtorch's torch::load(x, istream)).
SafetensorsContents read_stream(std::istream& in) {
  const std::string ctx = "[serialize] stream";
  FW_CHECK(in.good(), ctx, ": the input stream is not readable");
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  FW_CHECK(!in.bad(), ctx, ": reading the input stream failed");
  if (is_torch_save(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()))
    return from_torch_save([&] { return pickle_load(bytes.data(), bytes.size()); }, ctx);
  return parse(uint64_t(bytes.size()),
               [&](void* dst, uint64_t n, uint64_t off) {
                 FW_CHECK(off <= bytes.size() && n <= bytes.size() - off, ctx,
                          ": unexpected end of data (truncated?)");
                 std::memcpy(dst, bytes.data() + off, n);
               },
               ctx);
}

}  // namespace

// ---- tensors

namespace {
// The tensors in name order, detached and contiguous, after checking that the format can hold them.
std::vector<std::pair<std::string, Tensor>> flatten_for_save(const TensorMap& tensors, const MetadataMap& metadata,
                                                             const std::string& ctx) {
  NoGradGuard no_grad;
  std::vector<std::pair<std::string, Tensor>> flat;
  for (const auto& [name, t] : tensors) {
    FW_CHECK(name != "__metadata__", ctx, ": the tensor name '__metadata__' is reserved");
    FW_CHECK(json::valid_utf8(name), ctx, ": tensor name is not valid UTF-8");
    FW_CHECK(t.defined(), ctx, ": tensor '", name, "' is undefined");
    FW_CHECK(t.is_cpu(), ctx, ": tensor '", name, "' is not on the CPU");
    // safetensors has no 128-bit complex code (C64 is its only complex dtype).
    FW_CHECK(t.dtype() != kComplexDouble, ctx, ": tensor '", name,
             "' has dtype complex128, which the safetensors format cannot store (its only complex dtype is C64, "
             "complex64); save fw::view_as_real(t) (float64 with a last dimension of 2) or t.to(fw::kComplexFloat)");
    flat.emplace_back(name, t.detach().contiguous());
  }
  for (const auto& [k, v] : metadata)
    FW_CHECK(json::valid_utf8(k) && json::valid_utf8(v), ctx, ": metadata entry '", k, "' is not valid UTF-8");
  return flat;
}
}  // namespace

void save(const TensorMap& tensors, const std::string& path, const MetadataMap& metadata) {
  auto flat = flatten_for_save(tensors, metadata, quoted(path));
  write_atomic(path, build_header(flat, metadata), flat);
}

void save(const TensorMap& tensors, std::ostream& out, const MetadataMap& metadata) {
  const std::string ctx = "[serialize] stream";
  auto flat = flatten_for_save(tensors, metadata, ctx);
  const std::string header = build_header(flat, metadata);
  const uint64_t n = header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(header.data(), std::streamsize(header.size()));
  for (const auto& [name, t] : flat) out.write(static_cast<const char*>(t.data_ptr()), std::streamsize(t.nbytes()));
  out.flush();
  FW_CHECK(out.good(), ctx, ": writing to the output stream failed");
}

namespace {
// save(tensor) keeps requires_grad as libtorch's torch::save does (its archive stores the tensor
// as a parameter with the flag); the key is fw's, other readers ignore it.
const char* const kRequiresGradKey = "fw.requires_grad";
MetadataMap one_tensor_metadata(const Tensor& t) {
  if (t.defined() && t.requires_grad()) return {{kRequiresGradKey, "tensor"}};
  return {};
}
Tensor the_one_tensor(SafetensorsContents c, const std::string& ctx, const char* what) {
  FW_CHECK(c.tensors.size() == 1, ctx, ": ", what, " expects exactly one tensor, the data has ", c.tensors.size());
  auto it = c.tensors.begin();
  auto md = c.metadata.find(kRequiresGradKey);
  if (md != c.metadata.end() && md->second == it->first) {
    FW_CHECK(is_floating_point(it->second.dtype()) || it->second.is_complex(), ctx, ": metadata marks tensor '",
             it->first, "' as requiring grad, but its dtype ", it->second.dtype(), " cannot");
    it->second.requires_grad_(true);
  }
  return it->second;
}
}  // namespace

SafetensorsContents load_with_metadata(std::istream& in) { return read_stream(in); }
TensorMap load(std::istream& in) { return read_stream(in).tensors; }
void save(const Tensor& tensor, std::ostream& out) {
  save(TensorMap{{"tensor", tensor}}, out, one_tensor_metadata(tensor));
}
void load(Tensor& tensor, std::istream& in) { tensor = the_one_tensor(read_stream(in), "[serialize] stream", "load(Tensor&)"); }

SafetensorsContents load_with_metadata(const std::string& path) { return read_file(path); }

TensorMap load(const std::string& path) { return read_file(path).tensors; }

void save(const Tensor& tensor, const std::string& path) {
  save(TensorMap{{"tensor", tensor}}, path, one_tensor_metadata(tensor));
}

namespace {
TensorMap numbered(const std::vector<Tensor>& tensors) {
  TensorMap m;
  for (size_t i = 0; i < tensors.size(); i++) m.emplace(std::to_string(i), tensors[i]);
  return m;
}
std::vector<Tensor> from_numbered(const TensorMap& m, const std::string& ctx) {
  std::vector<Tensor> out(m.size());
  for (auto& [name, t] : m) {
    size_t pos = 0;
    bool digits = !name.empty() && name.size() <= 18 &&
                  std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
    size_t i = digits ? size_t(std::stoull(name, &pos)) : out.size();
    FW_CHECK(digits && i < out.size() && !out[i].defined() && (name == "0" || name[0] != '0'), ctx,
             ": load(std::vector<Tensor>) expects tensors named 0..", out.size() - 1, ", found '", name, "'");
    out[i] = t;
  }
  return out;
}
}  // namespace

void save(const std::vector<Tensor>& tensors, const std::string& path) { save(numbered(tensors), path); }
void save(const std::vector<Tensor>& tensors, std::ostream& out) { save(numbered(tensors), out); }
void load(std::vector<Tensor>& tensors, const std::string& path) { tensors = from_numbered(load(path), quoted(path)); }
void load(std::vector<Tensor>& tensors, std::istream& in) {
  tensors = from_numbered(load(in), "[serialize] stream");
}

Tensor load_tensor(const std::string& path) { return the_one_tensor(read_file(path), quoted(path), "load_tensor"); }

}  // namespace fw
