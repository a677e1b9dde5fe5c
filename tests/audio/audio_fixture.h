// Audio fixtures: safetensors files written by tests/fixtures/audio/gen_*.py (audiofix.py). Each
// case has tensors "<case>/<key>" and a JSON object of arguments in the metadata under "<case>".
#pragma once
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/json.h"
#include "fw/fw.h"
#include "tests/fixture.h"

namespace fwtest::audio {

struct Case {
  std::string name;
  fw::json::Value args;  // an object
  const fw::json::Value* find(const std::string& key) const {
    for (const auto& [k, v] : args.object)
      if (k == key) return &v;
    return nullptr;
  }
  bool has(const std::string& key) const {
    const auto* v = find(key);
    return v && v->kind != fw::json::Value::Null;
  }
  double num(const std::string& key, double def = 0) const {
    const auto* v = find(key);
    return v && v->kind == fw::json::Value::Number ? std::stod(v->text) : def;
  }
  int64_t i(const std::string& key, int64_t def = 0) const { return has(key) ? int64_t(std::stoll(find(key)->text)) : def; }
  bool flag(const std::string& key, bool def = false) const {
    const auto* v = find(key);
    return v && v->kind == fw::json::Value::Bool ? v->b : def;
  }
  std::string str(const std::string& key, const std::string& def = "") const {
    const auto* v = find(key);
    return v && v->kind == fw::json::Value::String ? v->text : def;
  }
};

class FixtureFile {
 public:
  explicit FixtureFile(const std::string& stem) {
    auto c = fw::load_with_metadata(std::string(FW_AUDIO_FIXTURE_DIR) + "/" + stem + ".safetensors");
    tensors_ = std::move(c.tensors);
    for (const auto& [k, v] : c.metadata) {
      if (k == "generator") continue;
      cases_.push_back({k, fw::json::parse(v, stem + ":" + k)});
    }
  }
  // Cases whose name starts with prefix.
  std::vector<Case> cases(const std::string& prefix) const {
    std::vector<Case> out;
    for (const auto& c : cases_)
      if (c.name.rfind(prefix, 0) == 0) out.push_back(c);
    return out;
  }
  // The case called exactly `name` (raises when there is none).
  const Case& named(const std::string& name) const {
    for (const auto& c : cases_)
      if (c.name == name) return c;
    throw std::runtime_error("fixture case missing: " + name);
  }
  const fw::Tensor& get(const std::string& key) const {
    auto it = tensors_.find(key);
    if (it == tensors_.end()) throw std::runtime_error("fixture tensor missing: " + key);
    return it->second;
  }
  const fw::Tensor& out(const Case& c, const std::string& key = "out") const { return get(c.name + "/" + key); }
  const fw::Tensor& signal(const std::string& name) const { return get("signal/" + name); }

 private:
  std::map<std::string, fw::Tensor> tensors_;
  std::vector<Case> cases_;
};

// Compares with rtol and an atol scaled to the reference's magnitude; complex results are compared
// in their view_as_real layout (how the fixtures store them).
inline std::string close(const fw::Tensor& actual, const fw::Tensor& expected, double rtol = 1e-4,
                         double atol_scale = 1e-5, double atol_min = 0) {
  fw::Tensor a = actual.is_complex() ? fw::view_as_real(actual) : actual;
  fw::Tensor e = expected;
  double mag = e.numel() ? e.abs().max().item<double>() : 0.0;
  if (!std::isfinite(mag)) mag = 0;
  return fwtest::compare(a.to(e.dtype()).contiguous(), e, rtol, std::max(atol_min, atol_scale * mag));
}

// The message of the fw::Error that f throws, or "no error".
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const fw::Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace fwtest::audio

#define FW_AUDIO_EXPECT_CLOSE(c, actual, expected, ...)                                   \
  do {                                                                                    \
    std::string fw_msg_ = ::fwtest::audio::close((actual), (expected), ##__VA_ARGS__);   \
    EXPECT_TRUE(fw_msg_.empty()) << (c).name << ": " << fw_msg_;                          \
  } while (0)
