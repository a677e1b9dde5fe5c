// Building blocks of libtorch-style option structs: FW_ARG (a named, chainable field),
// ExpandingArray (one value or one per spatial dim) and the mode tags (fw::kBilinear, ...).
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "fw/array_ref.h"
#include "fw/error.h"

// Declares field `name` of type T with a chainable setter name(v) and a getter name().
// Follow it with `= default_value;` or just `;`.
#define FW_ARG(T, name)                                          \
 public:                                                         \
  auto name(const T& v)->decltype(*this) {                       \
    name##_ = v;                                                 \
    return *this;                                                \
  }                                                              \
  auto name(T&& v)->decltype(*this) {                            \
    name##_ = std::move(v);                                      \
    return *this;                                                \
  }                                                              \
  const T& name() const noexcept { return name##_; }             \
  T& name() noexcept { return name##_; }                         \
                                                                 \
 private:                                                        \
  T name##_

namespace fw {

// D integers given as one value (repeated) or as D values, like libtorch's ExpandingArray.
template <size_t D, class T = int64_t>
class ExpandingArray {
 public:
  ExpandingArray(T v) { values_.fill(v); }
  ExpandingArray(std::initializer_list<T> l) : ExpandingArray(ArrayRef<T>(l.begin(), l.size())) {}
  ExpandingArray(const std::vector<T>& v) : ExpandingArray(ArrayRef<T>(v)) {}
  ExpandingArray(const std::array<T, D>& a) : values_(a) {}
  ExpandingArray(ArrayRef<T> v) {
    FW_CHECK(v.size() == D || v.size() == 1, "[ExpandingArray] expected ", D, " values (or one), but got ", v.size());
    for (size_t i = 0; i < D; i++) values_[i] = v.size() == 1 ? v[0] : v[i];
  }
  std::array<T, D>& operator*() { return values_; }
  const std::array<T, D>& operator*() const { return values_; }
  std::array<T, D>* operator->() { return &values_; }
  const std::array<T, D>* operator->() const { return &values_; }
  operator ArrayRef<T>() const { return ArrayRef<T>(values_.data(), D); }
  size_t size() const noexcept { return D; }
  bool operator==(const ExpandingArray& o) const { return values_ == o.values_; }
  bool operator!=(const ExpandingArray& o) const { return values_ != o.values_; }

 private:
  std::array<T, D> values_;
};

// D sizes of which any may be left out (std::nullopt: "as the input's"), given as one value or D
// values: the output_size of AdaptiveAvgPool2d/3d and AdaptiveMaxPool2d/3d, as in libtorch.
template <size_t D>
class ExpandingArrayWithOptionalElem : public ExpandingArray<D, std::optional<int64_t>> {
  using Base = ExpandingArray<D, std::optional<int64_t>>;

 public:
  using Base::Base;
  ExpandingArrayWithOptionalElem(int64_t v) : Base(std::optional<int64_t>(v)) {}
  ExpandingArrayWithOptionalElem(std::initializer_list<int64_t> l) : Base(std::vector<std::optional<int64_t>>(l.begin(), l.end())) {}
  ExpandingArrayWithOptionalElem(const std::vector<int64_t>& v) : Base(std::vector<std::optional<int64_t>>(v.begin(), v.end())) {}
  ExpandingArrayWithOptionalElem(const ExpandingArray<D>& a) : Base(std::vector<std::optional<int64_t>>(a->begin(), a->end())) {}
  // The sizes for an input of the given sizes: a left-out element takes the input's size in the
  // same position of the last D dims.
  std::array<int64_t, D> resolve(ArrayRef<int64_t> input_sizes) const {
    std::array<int64_t, D> r{};
    for (size_t i = 0; i < D; i++) {
      const auto& e = (**this)[i];
      r[i] = e ? *e : input_sizes.size() >= D ? input_sizes[input_sizes.size() - D + i] : -1;
    }
    return r;
  }
};

// D doubles given as one value or D values (libtorch's ExpandingArrayDouble).
template <size_t D>
using ExpandingArrayDouble = ExpandingArray<D, double>;

// Mode tags: fw::kBilinear is a value of type fw::enumtype::kBilinear (as torch::kBilinear).
namespace enumtype {
#define FW_ENUM_TAG(Name, str)                                        \
  struct Name {                                                       \
    static constexpr const char* name() { return str; }               \
    bool operator==(const Name&) const { return true; }               \
    bool operator!=(const Name&) const { return false; }              \
  };
FW_ENUM_TAG(kNearest, "nearest")
FW_ENUM_TAG(kNearestExact, "nearest-exact")
FW_ENUM_TAG(kLinear, "linear")
FW_ENUM_TAG(kBilinear, "bilinear")
FW_ENUM_TAG(kBicubic, "bicubic")
FW_ENUM_TAG(kTrilinear, "trilinear")
FW_ENUM_TAG(kArea, "area")
FW_ENUM_TAG(kConstant, "constant")
FW_ENUM_TAG(kReflect, "reflect")
FW_ENUM_TAG(kReplicate, "replicate")
FW_ENUM_TAG(kCircular, "circular")
FW_ENUM_TAG(kSame, "same")
FW_ENUM_TAG(kValid, "valid")
FW_ENUM_TAG(kNone, "none")
FW_ENUM_TAG(kMean, "mean")
FW_ENUM_TAG(kSum, "sum")
FW_ENUM_TAG(kMax, "max")
FW_ENUM_TAG(kBatchMean, "batchmean")
FW_ENUM_TAG(kZeros, "zeros")  // padding_mode of convolutions and grid_sample
FW_ENUM_TAG(kBorder, "border")
FW_ENUM_TAG(kReflection, "reflection")
#undef FW_ENUM_TAG
}  // namespace enumtype

inline constexpr enumtype::kNearest kNearest{};
inline constexpr enumtype::kNearestExact kNearestExact{};
inline constexpr enumtype::kLinear kLinear{};
inline constexpr enumtype::kBilinear kBilinear{};
inline constexpr enumtype::kBicubic kBicubic{};
inline constexpr enumtype::kTrilinear kTrilinear{};
inline constexpr enumtype::kArea kArea{};
inline constexpr enumtype::kConstant kConstant{};
inline constexpr enumtype::kReflect kReflect{};
inline constexpr enumtype::kReplicate kReplicate{};
inline constexpr enumtype::kCircular kCircular{};
inline constexpr enumtype::kSame kSame{};
inline constexpr enumtype::kValid kValid{};
inline constexpr enumtype::kNone kNone{};
inline constexpr enumtype::kMean kMean{};
inline constexpr enumtype::kSum kSum{};
inline constexpr enumtype::kMax kMax{};
inline constexpr enumtype::kBatchMean kBatchMean{};
inline constexpr enumtype::kZeros kZeros{};
inline constexpr enumtype::kBorder kBorder{};
inline constexpr enumtype::kReflection kReflection{};

// The name of the tag a variant of mode tags holds ("bilinear", ...).
template <class... Tags>
std::string mode_name(const std::variant<Tags...>& v) {
  return std::visit([](const auto& t) { return std::string(t.name()); }, v);
}

}  // namespace fw
