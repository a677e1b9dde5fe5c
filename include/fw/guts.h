// fw::guts::to_string (c10::guts::to_string): a value as operator<< writes it. libtorch keys an
// optimizer's per-parameter state by to_string(p.unsafeGetTensorImpl()), and so does fw, so code
// written against libtorch finds the state with the same expression.
#pragma once
#include <charconv>
#include <cstdint>
#include <sstream>
#include <string>
#include <type_traits>

namespace fw::guts {

template <class T>
std::string to_string(const T& value) {
  using P = std::remove_cv_t<std::remove_pointer_t<T>>;
  if constexpr (std::is_pointer_v<T> && !std::is_same_v<P, char>) {
    // What std::ostream writes for a pointer ("0x" and lowercase hex, "0" for null), without
    // building a stream: optimizers look their state up with it every step.
    const auto u = reinterpret_cast<std::uintptr_t>(value);
    if (u == 0) return "0";
    char buf[2 + 2 * sizeof(u)];
    buf[0] = '0';
    buf[1] = 'x';
    auto r = std::to_chars(buf + 2, buf + sizeof buf, u, 16);
    return std::string(buf, r.ptr);
  } else {
    std::ostringstream os;
    os << value;
    return os.str();
  }
}

}  // namespace fw::guts
