// Module and optimizer checkpoints on top of the safetensors reader/writer (core/serialize.cpp).
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "fw/serialize.h"

namespace fw {

namespace {

std::string quoted(const std::string& path) { return "[serialize] '" + path + "'"; }

std::string shape_str(IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); i++) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

std::vector<std::pair<std::string, Tensor>> module_state(const nn::Module& m) {
  std::vector<std::pair<std::string, Tensor>> out;
  for (const auto& it : m.named_parameters()) out.emplace_back(it.key(), it.value());
  for (const auto& it : m.named_buffers()) out.emplace_back(it.key(), it.value());
  return out;
}

// Note [optimizer scalars]: 0-dim int64 (steps) and float64 (learning rates) entries of a
// state_dict go to __metadata__ as decimal text: integers as digits, doubles as the shortest
// round-trip form, always with a '.', 'e', "inf" or "nan" so the two kinds stay apart.
std::string scalar_text(const Tensor& t) {
  if (t.dtype() == kLong) return std::to_string(t.item<int64_t>());
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), t.item<double>());
  std::string s(buf, r.ptr);
  if (s.find_first_of(".ein") == std::string::npos) s += ".0";
  return s;
}

Tensor parse_scalar(const std::string& key, const std::string& s, const std::string& ctx) {
  const char* b = s.data();
  const char* e = b + s.size();
  bool integer = !s.empty() && s.find_first_not_of("-0123456789") == std::string::npos;
  if (integer) {
    int64_t v = 0;
    auto r = std::from_chars(b, e, v);
    FW_CHECK(r.ec == std::errc() && r.ptr == e, ctx, ": metadata '", key, "' is not an int64: '", s, "'");
    return scalar_tensor(v, TensorOptions(kLong));
  }
  double v = 0;
  auto r = std::from_chars(b, e, v);
  FW_CHECK(r.ec == std::errc() && r.ptr == e, ctx, ": metadata '", key, "' is not a number: '", s, "'");
  return scalar_tensor(v, TensorOptions(kDouble));
}

bool is_scalar_entry(const Tensor& t) { return t.dim() == 0 && (t.dtype() == kLong || t.dtype() == kDouble); }

// Parses "<prefix><digits>." at the start of key; returns the index and sets rest, or -1.
int64_t key_index(const std::string& key, const std::string& prefix, std::string& rest) {
  if (key.rfind(prefix, 0) != 0) return -1;
  size_t dot = key.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return -1;
  int64_t i = -1;
  auto r = std::from_chars(key.data() + prefix.size(), key.data() + dot, i);
  if (r.ec != std::errc() || r.ptr != key.data() + dot) return -1;
  rest = key.substr(dot + 1);
  return rest.empty() ? -1 : i;
}

std::vector<const Tensor*> all_params(const optim::Optimizer& opt) {
  std::vector<const Tensor*> out;
  for (const auto& g : opt.param_groups())
    for (const auto& p : g.params()) out.push_back(&p);
  return out;
}

// The keys of a loaded optimizer file must address existing groups and parameters, and state
// tensors that are not 0-dim must have their parameter's shape (for a flat state such as
// LBFGS's: parameter 0 only, 1-D with as many elements as all parameters together).
void check_optimizer_keys(const optim::Optimizer& opt, const std::vector<std::pair<std::string, Tensor>>& sd,
                          const std::string& ctx) {
  auto params = all_params(opt);
  int64_t total = 0;  // a flat state's length
  for (const Tensor* p : params) total += p->numel();
  for (const auto& [key, t] : sd) {
    std::string rest;
    int64_t g = key_index(key, "param_groups.", rest);
    if (g >= 0) {
      FW_CHECK(size_t(g) < opt.param_groups().size() && rest == "lr", ctx, ": unexpected key '", key, "'");
      continue;
    }
    int64_t i = key_index(key, "state.", rest);
    if (opt.flat_state()) {
      FW_CHECK(i == 0, ctx, ": unexpected key '", key, "' (this optimizer keeps one flat state, under parameter 0)");
      FW_CHECK(t.dim() == 0 || (t.dim() == 1 && t.numel() == total), ctx, ": size mismatch for '", key, "': shape ",
               shape_str(t.sizes()), " in the checkpoint, the flat state over all parameters has [", total, "]");
      continue;
    }
    FW_CHECK(i >= 0 && size_t(i) < params.size(), ctx, ": unexpected key '", key, "'");
    FW_CHECK(t.dim() == 0 || t.sizes() == params[size_t(i)]->sizes(), ctx, ": size mismatch for '", key,
             "': shape ", shape_str(t.sizes()), " in the checkpoint, the parameter has shape ",
             shape_str(params[size_t(i)]->sizes()));
  }
}

int64_t count_meta(const MetadataMap& m, const std::string& key, const std::string& ctx) {
  auto it = m.find(key);
  FW_CHECK(it != m.end(), ctx, ": not an fw optimizer checkpoint (no metadata '", key, "')");
  int64_t v = -1;
  auto r = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  FW_CHECK(r.ec == std::errc() && r.ptr == it->second.data() + it->second.size(), ctx, ": metadata '", key,
           "' is not an integer");
  return v;
}

}  // namespace

// ---- modules

namespace {
TensorMap module_map(const nn::Module& module) {
  TensorMap m;
  for (auto& [k, v] : module_state(module)) m.emplace(k, v);
  return m;
}
void load_module_state(nn::Module& module, const TensorMap& file, const std::string& ctx) {
  auto state = module_state(module);
  std::string missing, mismatch, unexpected;
  std::map<std::string, bool> known;
  for (const auto& [k, dst] : state) {
    known[k] = true;
    auto it = file.find(k);
    if (it == file.end()) {
      missing += (missing.empty() ? "'" : ", '") + k + "'";
    } else if (it->second.sizes() != dst.sizes()) {
      mismatch += " size mismatch for '" + k + "': copying a param with shape " + shape_str(it->second.sizes()) +
                  " from checkpoint, the shape in current model is " + shape_str(dst.sizes()) + ".";
    }
  }
  for (const auto& [k, t] : file)
    if (!known.count(k)) unexpected += (unexpected.empty() ? "'" : ", '") + k + "'";
  FW_CHECK(missing.empty() && unexpected.empty() && mismatch.empty(), ctx, ": error(s) in loading the module:",
           missing.empty() ? "" : " missing key(s) " + missing + ".",
           unexpected.empty() ? "" : " unexpected key(s) " + unexpected + ".", mismatch);
  NoGradGuard no_grad;
  for (auto& [k, dst] : state) dst.copy_(file.at(k));
}
}  // namespace

void save(const nn::Module& module, const std::string& path) { save(module_map(module), path, {{"format", "pt"}}); }
void save(const nn::Module& module, std::ostream& out) { save(module_map(module), out, {{"format", "pt"}}); }
void load(nn::Module& module, const std::string& path) { load_module_state(module, load(path), quoted(path)); }
void load(nn::Module& module, std::istream& in) { load_module_state(module, load(in), "[serialize] stream"); }

// ---- optimizers

namespace {
SafetensorsContents optimizer_contents(const optim::Optimizer& optimizer) {
  TensorMap tensors;
  MetadataMap meta{{"fw.kind", "optimizer"},
                   {"fw.num_groups", std::to_string(optimizer.param_groups().size())},
                   {"fw.num_params", std::to_string(optimizer.size())}};
  for (auto& [k, t] : optimizer.state_dict()) {
    if (is_scalar_entry(t)) meta[k] = scalar_text(t);
    else tensors.emplace(k, t);
  }
  return {std::move(tensors), std::move(meta)};
}

void load_optimizer_state(optim::Optimizer& optimizer, const SafetensorsContents& file, const std::string& ctx) {
  auto kind = file.metadata.find("fw.kind");
  FW_CHECK(kind != file.metadata.end() && kind->second == "optimizer", ctx,
           ": not an fw optimizer checkpoint (metadata fw.kind is not 'optimizer')");
  int64_t groups = count_meta(file.metadata, "fw.num_groups", ctx);
  int64_t params = count_meta(file.metadata, "fw.num_params", ctx);
  FW_CHECK(size_t(groups) == optimizer.param_groups().size() && size_t(params) == optimizer.size(), ctx,
           ": the checkpoint is for ", groups, " param group(s) with ", params, " parameter(s), the optimizer has ",
           optimizer.param_groups().size(), " with ", optimizer.size());
  std::vector<std::pair<std::string, Tensor>> sd(file.tensors.begin(), file.tensors.end());
  for (const auto& [k, v] : file.metadata)
    if (k.rfind("fw.", 0) != 0) sd.emplace_back(k, parse_scalar(k, v, ctx));
  check_optimizer_keys(optimizer, sd, ctx);
  optim::Optimizer::StateMap backup;
  for (const auto& [p, s] : optimizer.state()) backup.emplace(p, s->clone());
  std::vector<double> lrs;
  for (const auto& g : optimizer.param_groups()) lrs.push_back(g.options().get_lr());
  optimizer.state().clear();
  try {
    optimizer.load_state_dict(sd);
  } catch (...) {
    optimizer.state() = std::move(backup);
    for (size_t g = 0; g < lrs.size(); g++) optimizer.param_groups()[g].options().set_lr(lrs[g]);
    throw;
  }
}
}  // namespace

void save(const optim::Optimizer& optimizer, const std::string& path) {
  auto c = optimizer_contents(optimizer);
  save(c.tensors, path, c.metadata);
}
void save(const optim::Optimizer& optimizer, std::ostream& out) {
  auto c = optimizer_contents(optimizer);
  save(c.tensors, out, c.metadata);
}
void load(optim::Optimizer& optimizer, const std::string& path) {
  load_optimizer_state(optimizer, load_with_metadata(path), quoted(path));
}
void load(optim::Optimizer& optimizer, std::istream& in) {
  load_optimizer_state(optimizer, load_with_metadata(in), "[serialize] stream");
}

// ---- libtorch's archives

namespace {
// Every tensor of an archive under its full dotted key.
void collect_archive(serialize::InputArchive& a, const std::string& prefix, TensorMap& out) {
  for (const std::string& k : a.keys()) {
    Tensor t;
    if (a.try_read(k, t)) {
      out.emplace(prefix + k, t);
      continue;
    }
    serialize::InputArchive nested;
    if (a.try_read(k, nested)) collect_archive(nested, prefix + k + ".", out);
  }
}
}  // namespace

namespace optim {
void Optimizer::save(serialize::OutputArchive& archive) const {
  auto c = optimizer_contents(*this);
  for (const auto& [k, t] : c.tensors) archive.write(k, t);
  // Scalars and counts as string values; their dotted keys are written with '/' (a '.' nests).
  for (const auto& [k, v] : c.metadata) {
    std::string key = k;
    std::replace(key.begin(), key.end(), '.', '/');
    archive.write("fw_optimizer_meta." + key, IValue(v));
  }
}
void Optimizer::load(serialize::InputArchive& archive) {
  SafetensorsContents file;
  collect_archive(archive, "", file.tensors);
  serialize::InputArchive meta;
  FW_CHECK(archive.try_read("fw_optimizer_meta", meta),
           "[Optimizer::load] the archive holds no optimizer state (written by Optimizer::save?)");
  for (const std::string& k : meta.keys()) {
    IValue v;
    meta.read(k, v);
    FW_CHECK(v.isString(), "[Optimizer::load] archive value fw_optimizer_meta.", k, " is not a string");
    std::string key = k;
    std::replace(key.begin(), key.end(), '/', '.');
    file.metadata[key] = v.toStringRef();
  }
  load_optimizer_state(*this, file, "[Optimizer::load] archive");
}
}  // namespace optim

namespace serialize {

namespace {
// Metadata values carry their kind: "d:<double>", "i:<int>", "b:0|1", "s:<text>".
std::string encode_value(const std::string& key, const IValue& v) {
  if (v.isDouble()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", v.toDouble());
    return std::string("d:") + buf;
  }
  if (v.isInt()) return "i:" + std::to_string(v.toInt());
  if (v.isBool()) return v.toBool() ? "b:1" : "b:0";
  if (v.isString()) return "s:" + v.toStringRef();
  ::fw::detail::throw_error("[OutputArchive] key '", key,
                            "': only tensors, doubles, ints, bools and strings can be written");
}
IValue decode_value(const std::string& src, const std::string& key, const std::string& text) {
  FW_CHECK(text.size() >= 2 && text[1] == ':', "[InputArchive] ", src, ": value '", key, "' is malformed");
  const std::string body = text.substr(2);
  switch (text[0]) {
    case 'd': {
      char* end = nullptr;
      double d = std::strtod(body.c_str(), &end);
      FW_CHECK(!body.empty() && end == body.c_str() + body.size(), "[InputArchive] ", src, ": value '", key,
               "' is not a number");
      return IValue(d);
    }
    case 'i': {
      int64_t i = 0;
      auto r = std::from_chars(body.data(), body.data() + body.size(), i);
      FW_CHECK(r.ec == std::errc() && r.ptr == body.data() + body.size(), "[InputArchive] ", src, ": value '", key,
               "' is not an integer");
      return IValue(i);
    }
    case 'b':
      FW_CHECK(body == "0" || body == "1", "[InputArchive] ", src, ": value '", key, "' is not a bool");
      return IValue(body == "1");
    case 's':
      return IValue(body);
    default:
      ::fw::detail::throw_error("[InputArchive] ", src, ": value '", key, "' has an unknown kind");
  }
}
const std::string kValuePrefix = "fw.archive.";
}  // namespace

void OutputArchive::write(const std::string& key, const Tensor& tensor, bool /*is_buffer*/) {
  FW_CHECK(tensor.defined(), "[OutputArchive] key '", key, "': the tensor is undefined");
  tensors_[key] = tensor.detach();
}
void OutputArchive::write(const std::string& key, const OutputArchive& nested) {
  for (const auto& [k, t] : nested.tensors_) tensors_[key + "." + k] = t;
  for (const auto& [k, v] : nested.values_) values_[key + "." + k] = v;
}
void OutputArchive::write(const std::string& key, const IValue& value) {
  if (value.isTensor()) return write(key, value.toTensor());
  values_[key] = encode_value(key, value);
}
MetadataMap OutputArchive::metadata() const {
  MetadataMap meta{{"format", "pt"}};
  for (const auto& [k, v] : values_) meta[kValuePrefix + k] = v;
  return meta;
}
void OutputArchive::save_to(const std::string& filename) const { save(tensors_, filename, metadata()); }
void OutputArchive::save_to(std::ostream& out) const { save(tensors_, out, metadata()); }

void InputArchive::load_from(const std::string& filename) { take(load_with_metadata(filename), "'" + filename + "'"); }
void InputArchive::load_from(std::istream& in) { take(load_with_metadata(in), "stream"); }
void InputArchive::take(SafetensorsContents c, const std::string& source) {
  source_ = source;
  tensors_ = std::move(c.tensors);
  values_.clear();
  for (const auto& [k, v] : c.metadata)
    if (k.rfind(kValuePrefix, 0) == 0) values_[k.substr(kValuePrefix.size())] = v;
}
bool InputArchive::try_read(const std::string& key, Tensor& tensor, bool /*is_buffer*/) {
  auto it = tensors_.find(key);
  if (it == tensors_.end()) return false;
  if (tensor.defined() && tensor.sizes() == it->second.sizes()) {
    NoGradGuard no_grad;
    tensor.copy_(it->second);
  } else {
    tensor = it->second;
  }
  return true;
}
void InputArchive::read(const std::string& key, Tensor& tensor, bool is_buffer) {
  FW_CHECK(try_read(key, tensor, is_buffer), "[InputArchive] ", source_, " has no tensor '", key, "'");
}
bool InputArchive::try_read(const std::string& key, InputArchive& nested) {
  const std::string prefix = key + ".";
  InputArchive out;
  out.source_ = source_ + " at '" + key + "'";
  for (const auto& [k, t] : tensors_)
    if (k.rfind(prefix, 0) == 0) out.tensors_[k.substr(prefix.size())] = t;
  for (const auto& [k, v] : values_)
    if (k.rfind(prefix, 0) == 0) out.values_[k.substr(prefix.size())] = v;
  if (out.tensors_.empty() && out.values_.empty()) return false;
  nested = std::move(out);
  return true;
}
void InputArchive::read(const std::string& key, InputArchive& nested) {
  FW_CHECK(try_read(key, nested), "[InputArchive] ", source_, " has no archive '", key, "'");
}
bool InputArchive::try_read(const std::string& key, IValue& value) {
  auto t = tensors_.find(key);
  if (t != tensors_.end()) {
    value = IValue(t->second);
    return true;
  }
  auto it = values_.find(key);
  if (it == values_.end()) return false;
  value = decode_value(source_, key, it->second);
  return true;
}
void InputArchive::read(const std::string& key, IValue& value) {
  FW_CHECK(try_read(key, value), "[InputArchive] ", source_, " has no value '", key, "'");
}
std::vector<std::string> InputArchive::keys() const {
  std::vector<std::string> out;
  auto add = [&](const std::string& k) {
    std::string top = k.substr(0, k.find('.'));
    if (std::find(out.begin(), out.end(), top) == out.end()) out.push_back(top);
  };
  for (const auto& [k, t] : tensors_) add(k);
  for (const auto& [k, v] : values_) add(k);
  return out;
}

}  // namespace serialize

void nn::Module::save(serialize::OutputArchive& archive) const {
  for (auto& [k, v] : module_state(*this)) archive.write(k, v);
}

void nn::Module::load(serialize::InputArchive& archive) {
  auto state = module_state(*this);
  // Check every key and shape first, so a failed load leaves the module unchanged.
  std::vector<Tensor> values;
  for (auto& [k, dst] : state) {
    Tensor v;
    FW_CHECK(archive.try_read(k, v), "[Module::load] the archive has no entry for '", k, "'");
    FW_CHECK(v.sizes() == dst.sizes(), "[Module::load] size mismatch for '", k, "': the archive has shape ",
             shape_str(v.sizes()), ", the module has shape ", shape_str(dst.sizes()));
    values.push_back(v);
  }
  NoGradGuard no_grad;
  for (size_t i = 0; i < state.size(); i++) state[i].second.copy_(values[i]);
}

}  // namespace fw
