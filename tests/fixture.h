// Reference fixtures generated from PyTorch (tests/fixtures/gen_*.py) and value comparison.
#pragma once
#include <string>
#include <vector>

#include <fw/fw.h>

namespace fwtest {

struct FixArg {
  enum class Kind { Int, Float, Bool, Str, Ints, Dtype, None } kind = Kind::None;
  int64_t i = 0;
  double f = 0;
  bool b = false;
  std::string s;
  std::vector<int64_t> ints;
  fw::ScalarType dtype = fw::kFloat;
  bool is_none() const { return kind == Kind::None; }
  // The argument as a fw::Scalar (bool, int or float).
  fw::Scalar scalar() const {
    if (kind == Kind::Bool) return fw::Scalar(b);
    if (kind == Kind::Int) return fw::Scalar(i);
    return fw::Scalar(f);
  }
};

struct FixCase {
  std::string file, name, op;
  std::vector<fw::Tensor> in;   // built with the requested layout (contiguous or not)
  std::vector<std::string> layouts;
  std::vector<FixArg> args;
  std::vector<fw::Tensor> out;  // PyTorch's results
};

inline bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// One tensor of the line-oriented *.txt fixtures (gen_loss.py's format): `<f32|f64|i64> <ndim>
// <sizes...> <values...>`, values as repr() floats (nan/inf allowed).
fw::Tensor read_record_tensor(std::istream& in);

// Every case of every tests/fixtures/*.fix file, loaded once.
const std::vector<FixCase>& all_fixtures();

// Default tolerances per dtype (PyTorch's assert_close defaults).
void default_tolerance(fw::ScalarType t, double* rtol, double* atol);
// Empty string when equal: dtype and shape exactly, values within tolerance, NaN == NaN.
std::string compare(const fw::Tensor& actual, const fw::Tensor& expected, double rtol = -1, double atol = -1);

}  // namespace fwtest

#define FW_EXPECT_CLOSE(actual, expected, ...)                                      \
  do {                                                                              \
    std::string fw_msg_ = ::fwtest::compare((actual), (expected), ##__VA_ARGS__);   \
    EXPECT_TRUE(fw_msg_.empty()) << fw_msg_;                                        \
  } while (0)
