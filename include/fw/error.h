// fw::Error and the FW_CHECK / FW_ASSERT macros.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace fw {

// Every user-facing failure in fw throws this; what() names the op and the values involved.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
  // libtorch's c10::Error accessors: fw keeps no backtrace, so both equal what().
  std::string msg() const { return what(); }
  const char* what_without_backtrace() const noexcept { return what(); }
};

// libtorch's typed errors (TORCH_CHECK_INDEX, TORCH_CHECK_VALUE, ...); catching fw::Error
// catches them too.
class IndexError : public Error { public: using Error::Error; };
class ValueError : public Error { public: using Error::Error; };
class TypeError : public Error { public: using Error::Error; };
class NotImplementedError : public Error { public: using Error::Error; };
class LinAlgError : public Error { public: using Error::Error; };

// One piece of an error message: what operator<< writes, except where an overload in namespace fw
// says otherwise (a TypeMeta reads "Float" in messages, as a ScalarType; streamed, it is "float",
// as libtorch's; see dtype.h).
template <class T>
void error_put(std::ostream& os, const T& v) {
  os << v;
}

namespace detail {
template <class... Args>
[[noreturn]] __attribute__((noinline, cold)) void throw_error(const Args&... args) {
  std::ostringstream os;
  (error_put(os, args), ...);
  throw Error(os.str());
}
// throw_error with one of the typed errors above (E derives from Error).
template <class E, class... Args>
[[noreturn]] __attribute__((noinline, cold)) void throw_error_as(const Args&... args) {
  std::ostringstream os;
  (error_put(os, args), ...);
  throw E(os.str());
}
[[noreturn]] void assert_fail(const char* cond, const char* file, int line);
}  // namespace detail
}  // namespace fw

#define FW_LIKELY(x) __builtin_expect(!!(x), 1)
#define FW_UNLIKELY(x) __builtin_expect(!!(x), 0)

// FW_CHECK(cond, "[op] message ", value, ...): the message is only built when cond fails.
#define FW_CHECK(cond, ...)                                   \
  do {                                                        \
    if (FW_UNLIKELY(!(cond))) ::fw::detail::throw_error(__VA_ARGS__); \
  } while (0)

// FW_CHECK that throws fw::IndexError (libtorch's c10::IndexError, TORCH_CHECK_INDEX): a dimension
// or an index out of range, where libtorch raises IndexError.
#define FW_CHECK_INDEX(cond, ...)                                                      \
  do {                                                                                 \
    if (FW_UNLIKELY(!(cond))) ::fw::detail::throw_error_as<::fw::IndexError>(__VA_ARGS__); \
  } while (0)

// Internal invariant: a failure is a bug in fw, not in the caller.
#define FW_ASSERT(cond)                                                  \
  do {                                                                   \
    if (FW_UNLIKELY(!(cond))) ::fw::detail::assert_fail(#cond, __FILE__, __LINE__); \
  } while (0)
