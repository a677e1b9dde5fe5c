// Model weights for the torchaudio.models tests: the names and shapes of a module's parameters and
// buffers against torchaudio's state_dict (a case's "names", written by audiofix.state_names), and
// the formula weights of audiofix.fill_formula.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fw/fw.h"
#include "tests/audio/audio_fixture.h"

namespace fwtest::audio {

// The module's parameters and buffers by name, in registration order.
inline std::vector<std::pair<std::string, fw::Tensor>> state(const fw::nn::Module& m) {
  std::map<std::string, fw::Tensor> byname;
  for (const auto& kv : m.named_parameters()) byname[kv.key()] = kv.value();
  for (const auto& kv : m.named_buffers()) byname[kv.key()] = kv.value();
  std::vector<std::pair<std::string, fw::Tensor>> out(byname.begin(), byname.end());
  return out;
}

// The module's parameters and buffers have exactly the names and shapes of torchaudio's state_dict
// (the case's "names").
inline void expect_torchaudio_names(const fw::nn::Module& m, const Case& c) {
  std::map<std::string, std::vector<int64_t>> mine;
  for (auto& [k, v] : state(m)) mine[k] = v.sizes().vec();
  const auto& entries = c.find("names")->array;
  EXPECT_EQ(entries.size(), mine.size()) << c.name;
  for (const auto& e : entries) {
    std::vector<int64_t> shape;
    for (const auto& d : e.array[1].array) shape.push_back(std::stoll(d.text));
    EXPECT_EQ(mine[e.array[0].text], shape) << c.name << ": " << e.array[0].text;
  }
}

// Checks that the module has exactly torchaudio's state_dict entries (name and shape), then sets
// them as gen_models.py's fill() does, in torchaudio's state_dict order.
inline void fill_like_torchaudio(fw::nn::Module& m, const Case& c) {
  std::map<std::string, fw::Tensor> mine;
  for (auto& [k, v] : state(m)) mine[k] = v;
  const auto& entries = c.find("names")->array;
  ASSERT_EQ(entries.size(), mine.size()) << c.name << ": torchaudio has " << entries.size() << " entries, fw "
                                         << mine.size();
  fw::NoGradGuard no_grad;
  int64_t k = 0;
  for (const auto& e : entries) {
    const std::string name = e.array[0].text;
    std::vector<int64_t> shape;
    for (const auto& d : e.array[1].array) shape.push_back(std::stoll(d.text));
    auto it = mine.find(name);
    ASSERT_NE(it, mine.end()) << c.name << ": fw has no " << name;
    ASSERT_EQ(it->second.sizes().vec(), shape) << c.name << ": " << name;
    const fw::Tensor& t = it->second;
    const bool is_counter = name.size() >= 19 && name.compare(name.size() - 19, 19, "num_batches_tracked") == 0;
    if (!is_counter) {
      fw::Tensor s = fw::sin(fw::arange(t.numel(), fw::TensorOptions(fw::kDouble)) * 0.7 + double(k));
      fw::Tensor v;
      if (name.size() >= 11 && name.compare(name.size() - 11, 11, "running_var") == 0) {
        v = 1 + 0.5 * s * s;
      } else {
        const double scale = t.dim() >= 2 ? 1 / std::sqrt(double(t.numel() / t.size(0))) : 0.1;
        v = s * scale;
      }
      t.copy_(v.reshape(t.sizes()).to(t.dtype()));
    }
    k++;
  }
}

// Every parameter has a gradient, and it is finite (after a backward pass). Fatal when one has
// none: callers wrap it in ASSERT_NO_FATAL_FAILURE.
inline void expect_finite_grads(const fw::nn::Module& m) {
  for (const auto& kv : m.named_parameters()) {
    ASSERT_TRUE(kv.value().grad().defined()) << kv.key();
    EXPECT_TRUE(fw::isfinite(kv.value().grad()).all().item<bool>()) << kv.key();
  }
}

}  // namespace fwtest::audio
