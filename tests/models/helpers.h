// Shared helpers of the fw::models tests.
#pragma once
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <fw/models.h>

namespace models_test {

// The message of the fw::Error that fn throws ("" if it throws nothing).
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const fw::Error& e) {
    return e.what();
  }
  return "";
}

inline std::vector<int64_t> shape(const fw::Tensor& t) { return std::vector<int64_t>(t.sizes().begin(), t.sizes().end()); }

// Parameters of a conv (kh x kw, with bias) and of a Linear layer, counted by hand.
inline int64_t conv_params(int64_t in, int64_t out, int64_t kh = 3, int64_t kw = 3) { return in * out * kh * kw + out; }
inline int64_t fc_params(int64_t in, int64_t out) { return in * out + out; }

// A tiny VGG-like trunk (the vgg6 layout at small width) for fast tests.
inline std::vector<fw::models::StageSpec> tiny_stages(int64_t c1 = 4, int64_t c2 = 8, int64_t c3 = 8) {
  using namespace fw::models;
  return {StageSpec{{conv3x3(c1), conv3x3(c1)}, PoolSpec{{2, 1}, {2, 1}}},
          StageSpec{{conv3x3(c2), conv3x3(c2)}, PoolSpec{{2, 1}, {2, 1}}},
          StageSpec{{conv3x3(c3, {0, 1}), conv3x3(c3)}, PoolSpec{{2, 2}, {2, 2}}}};
}

}  // namespace models_test
