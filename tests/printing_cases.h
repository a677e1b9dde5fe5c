// The tensors whose printed form tests/test_tensor.cpp compares with libtorch's. Compiled against
// fw there, and against libtorch by tests/fixtures/gen_printing.cpp, which writes the expected
// text to tests/fixtures/printing.txt. T is the framework's namespace.
#pragma once
#include <cmath>
#include <limits>
#include <vector>

#define FW_PRINTING_CASES(T)                                                                            \
  std::vector<T::Tensor> {                                                                              \
    T::tensor({1.5, 2.25, -3.0}), T::arange(6).reshape({2, 3}), T::tensor({1e-8, 1.0, 1e8}),            \
        T::tensor({true, false}), T::zeros({2, 0}), T::tensor(3.5), T::ones({2, 2, 2}),                 \
        T::tensor({0.1f, 123456.7f}), T::tensor({std::nan(""), double(INFINITY), -1.0}),                \
        T::arange(8).reshape({2, 2, 2}).to(T::kFloat).div(3), T::tensor(int64_t(7)), T::tensor(true),   \
        T::tensor(1e10), T::zeros({0}), T::zeros({2, 2, 0}), T::arange(16).reshape({2, 2, 2, 2}),        \
        T::tensor({100000.5, 200000.25}), T::tensor({0.001, 0.002}),                                    \
        T::tensor({{0.001, 0.002}, {0.003, 0.004}}), T::tensor({{100000.5, 200000.25}, {3.5, 123456.0}}), \
        T::tensor({{1000000.5, 2000000.25}, {3000000.5, 1234567.0}}),                                   \
        T::tensor({int64_t(1234567), int64_t(-5)}), T::tensor({int64_t(12345678901), int64_t(1)}),      \
        T::arange(40).reshape({2, 20}).to(T::kFloat).div(3), T::arange(60).reshape({2, 30}),            \
        T::arange(48).reshape({2, 1, 24}).to(T::kDouble).mul(1.5),                                      \
        T::tensor({std::nan(""), 1.5, -std::numeric_limits<double>::infinity()}),                       \
        T::tensor({std::nan(""), std::nan("")}), T::tensor({-0.0, 0.0}), T::tensor({1e-10, 1e10}),      \
        T::tensor({1e-120, 1.0}), T::tensor({{1e-3, 5e-2}, {1.0, 2.0}}), T::tensor({{0.5, 1e6}}),       \
        T::tensor({{std::nan(""), 1e6, 2.5e6}}), T::arange(24).reshape({2, 3, 2, 2}).to(T::kFloat).div(7), \
        T::tensor(std::nan("")), T::tensor(-0.25f), T::tensor(123456789.0), T::zeros({3, 0, 2}),        \
        T::tensor({true, false}).reshape({1, 2}), T::full({3, 3}, 1e-5), T::tensor({{1e-5, 1e-4}}),     \
        T::tensor({12.5, 99999.5}), T::arange(-50, 50).reshape({4, 25}).to(T::kFloat).mul(0.37),         \
        T::tensor({{1e-7, 0.0}, {0.0, 2e-7}}),                                                          \
        /* libtorch takes the largest magnitude only where the signed value beats it */                 \
        T::tensor({0.0166f, -0.8712f, -0.4759f}), T::tensor({2.5, -150000.0}), T::tensor({0.0, -0.003}), \
        T::tensor({{-7.25, 0.5}, {-12.0, 0.125}}), T::tensor({-1e6, 3.5, -2e-3})                         \
  }
