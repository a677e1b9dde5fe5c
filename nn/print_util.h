// Printing helpers for the modules' pretty_print (libtorch's "[3, 3]" list format).
#pragma once
#include <sstream>
#include <string>

#include "fw/array_ref.h"
#include "fw/nn/options.h"

namespace fw::nn::detail {

// "[a, b, c]".
template <class T>
std::string list(ArrayRef<T> v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); i++) os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}
template <class T>
std::string list(const std::vector<T>& v) {
  return list(ArrayRef<T>(v));
}
// An ExpandingArray: "[3, 3]", or "3" for a one-element one (libtorch's operator<< for it).
template <size_t D>
std::string list(const ExpandingArray<D>& v) {
  if constexpr (D == 1) return std::to_string((*v)[0]);
  else return list(ArrayRef<int64_t>(v));
}

// "[None, 2]" (libtorch's format for a left-out size).
template <size_t D>
std::string list(const ExpandingArrayWithOptionalElem<D>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < D; i++) {
    const auto& e = (*v)[i];
    os << (i ? ", " : "");
    if (e) os << *e;
    else os << "None";
  }
  os << "]";
  return os.str();
}

}  // namespace fw::nn::detail
