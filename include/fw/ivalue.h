// fw::IValue: a value of one of a few kinds (none, tensor, double, int, bool, string, lists of
// ints/doubles/tensors), as libtorch's c10::IValue is used in C++ code: custom autograd
// Functions keep their non-tensor state in ctx->saved_data["k"] = 2.0 and read it back with
// ctx->saved_data["k"].toDouble(). Reading a value as the wrong kind raises fw::Error naming both.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "fw/tensor.h"

namespace fw {

class IValue {
 public:
  IValue() = default;  // None
  IValue(Tensor t) : v_(std::move(t)) {}
  IValue(double d) : v_(d) {}
  IValue(float f) : v_(double(f)) {}
  IValue(bool b) : v_(b) {}
  template <class I, std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, bool>, int> = 0>
  IValue(I i) : v_(int64_t(i)) {}
  IValue(std::string s) : v_(std::move(s)) {}
  IValue(const char* s) : v_(std::string(s)) {}
  IValue(std::vector<int64_t> v) : v_(std::move(v)) {}
  IValue(IntArrayRef v) : v_(std::vector<int64_t>(v.begin(), v.end())) {}
  IValue(std::vector<double> v) : v_(std::move(v)) {}
  IValue(std::vector<Tensor> v) : v_(std::move(v)) {}
  IValue(Scalar s);

  bool isNone() const { return v_.index() == 0; }
  bool isTensor() const { return v_.index() == 1; }
  bool isDouble() const { return v_.index() == 2; }
  bool isInt() const { return v_.index() == 3; }
  bool isBool() const { return v_.index() == 4; }
  bool isString() const { return v_.index() == 5; }
  bool isIntList() const { return v_.index() == 6; }
  bool isDoubleList() const { return v_.index() == 7; }
  bool isTensorList() const { return v_.index() == 8; }
  bool isScalar() const { return isDouble() || isInt() || isBool(); }

  const Tensor& toTensor() const { return get<Tensor>("Tensor"); }
  double toDouble() const { return get<double>("Double"); }
  int64_t toInt() const { return get<int64_t>("Int"); }
  bool toBool() const { return get<bool>("Bool"); }
  const std::string& toStringRef() const { return get<std::string>("String"); }
  std::vector<int64_t> toIntVector() const { return get<std::vector<int64_t>>("IntList"); }
  IntArrayRef toIntList() const { return get<std::vector<int64_t>>("IntList"); }
  std::vector<double> toDoubleVector() const { return get<std::vector<double>>("DoubleList"); }
  std::vector<Tensor> toTensorVector() const { return get<std::vector<Tensor>>("TensorList"); }
  Scalar toScalar() const;
  // The kind's name as libtorch prints it: None, Tensor, Double, Int, Bool, String, IntList...
  std::string tagKind() const;

 private:
  template <class T>
  const T& get(const char* want) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    wrong_kind(want);
  }
  [[noreturn]] void wrong_kind(const char* want) const;

  std::variant<std::monostate, Tensor, double, int64_t, bool, std::string, std::vector<int64_t>, std::vector<double>,
               std::vector<Tensor>>
      v_;
};

}  // namespace fw
