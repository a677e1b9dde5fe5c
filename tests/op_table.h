// The op table test registry: one FW_OP_TEST entry per primitive op in FW_OPS.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/fixture.h"

namespace fwtest {

struct OpTest {
  std::string op;
  // Runs fw on a fixture case's inputs/args; the results are compared with the case's outputs.
  std::function<std::vector<fw::Tensor>(const FixCase&)> run;
  // Calls that must throw fw::Error with a message containing the fragment.
  std::vector<std::pair<std::function<void()>, std::string>> errors;
  double rtol = -1, atol = -1;  // < 0: dtype defaults
  void error(std::function<void()> f, std::string fragment) { errors.emplace_back(std::move(f), std::move(fragment)); }
};

std::map<std::string, OpTest>& op_tests();

struct OpTestRegistrar {
  OpTestRegistrar(const char* name, void (*fill)(OpTest&));
};

}  // namespace fwtest

#define FW_OP_TEST(name)                                                                     \
  static void fw_op_test_fill_##name(::fwtest::OpTest& t);                                  \
  static ::fwtest::OpTestRegistrar fw_op_test_reg_##name(#name, fw_op_test_fill_##name);    \
  static void fw_op_test_fill_##name([[maybe_unused]] ::fwtest::OpTest& t)
