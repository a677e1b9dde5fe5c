// fw::indexing: Slice, None, Ellipsis and TensorIndex for Tensor::index / index_put_.
#pragma once
#include <optional>

#include "fw/tensor.h"

namespace fw::indexing {

struct NoneType {};
struct EllipsisType {};
constexpr NoneType None{};
constexpr EllipsisType Ellipsis{};

// Python-style slice; missing bounds are std::nullopt.
struct Slice {
  Slice(std::optional<int64_t> start = std::nullopt, std::optional<int64_t> stop = std::nullopt,
        std::optional<int64_t> step = std::nullopt)
      : start_(start), stop_(stop), step_(step) {}
  Slice(std::optional<int64_t> start, NoneType, std::optional<int64_t> step = std::nullopt)
      : start_(start), step_(step) {}
  Slice(NoneType, std::optional<int64_t> stop = std::nullopt, std::optional<int64_t> step = std::nullopt)
      : stop_(stop), step_(step) {}
  Slice(NoneType, NoneType, std::optional<int64_t> step = std::nullopt) : step_(step) {}
  std::optional<int64_t> start_, stop_, step_;
};

// One entry of an index list: an integer, a Slice, None, Ellipsis, a bool or a Tensor.
struct TensorIndex {
  enum class Kind { Integer, Slice, None, Ellipsis, Boolean, Tensor };
  TensorIndex(int64_t i) : kind(Kind::Integer), integer(i) {}
  TensorIndex(int i) : kind(Kind::Integer), integer(i) {}
  TensorIndex(Slice s) : kind(Kind::Slice), slice(s) {}
  TensorIndex(NoneType) : kind(Kind::None) {}
  TensorIndex(EllipsisType) : kind(Kind::Ellipsis) {}
  TensorIndex(bool b) : kind(Kind::Boolean), boolean(b) {}
  TensorIndex(Tensor t) : kind(Kind::Tensor), tensor(std::move(t)) {}
  TensorIndex(const char* s);  // "..." only, as libtorch accepts
  Kind kind;
  int64_t integer = 0;
  Slice slice;
  bool boolean = false;
  Tensor tensor;
};

}  // namespace fw::indexing
