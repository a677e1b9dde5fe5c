// EXPECT_ERROR(stmt, fragment): stmt must throw fw::Error whose message contains fragment.
#pragma once
#include <gtest/gtest.h>

#include <string>

#include <fw/error.h>

namespace fwtest {

// The message of the fw::Error fn throws ("" when it throws none).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const fw::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace fwtest

#define EXPECT_ERROR(stmt, fragment)                                                         \
  do {                                                                                       \
    std::string msg_ = ::fwtest::error_of([&] { (void)(stmt); });                            \
    EXPECT_NE(msg_.find(fragment), std::string::npos) << "error was: '" << msg_ << "'";      \
  } while (0)
