// detail::gemm (core/ops/gemm.h) against a double-accumulated reference: odd sizes around the
// register tile (14 x 32) and the packing blocks, all four transpose combinations, padded and
// non-unit strides, alpha/beta (beta == 0 must overwrite NaN), k == 0, several blocks of k, and
// shapes big enough to run on the thread pool, and the epilogue (a bias of every broadcast, relu, a
// (gate > 0) mask) on each of those paths. The op table (test_linalg.cpp) covers the ops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <fw/fw.h>

#include "core/ops/gemm.h"

using fw::detail::gemm;
using fw::detail::MatArg;

namespace {

template <class T>
struct Operand {
  std::vector<T> buf;
  MatArg<T> arg;
};

// A rows x cols operand with random values. trans stores it column-major (a transposed view);
// pad adds unused elements after each row (or column); step > 1 spaces elements along the inner
// dimension too, so neither stride is 1.
template <class T>
Operand<T> make_operand(int64_t rows, int64_t cols, bool trans, int64_t pad, int64_t step, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const int64_t inner = trans ? rows : cols, outer = trans ? cols : rows;
  const int64_t ld = inner * step + pad;
  Operand<T> o;
  o.buf.assign(size_t(std::max<int64_t>(1, outer * ld)), std::numeric_limits<T>::quiet_NaN());
  const int64_t rs = trans ? step : ld, cs = trans ? ld : step;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) o.buf[size_t(i * rs + j * cs)] = T(u(rng));
  o.arg = {o.buf.data(), rs, cs};
  return o;
}

struct Case {
  int64_t m, n, k;
  bool ta, tb;
  double alpha, beta;
  int64_t pad = 0, step = 1, cpad = 0;
  // Epilogue: bias 0 none, 1 one per column, 2 one per row, 3 a full m x n matrix, 4 per column
  // with a column stride of 3; then relu.
  int bias = 0;
  double bias_scale = 1;
  bool relu = false;
  int gate = 0;  // 0 none, 1 an m x n gate, 2 a transposed one (unit row stride)
};

std::string describe(const Case& c) {
  return "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " ta=" + std::to_string(c.ta) + " tb=" + std::to_string(c.tb) + " alpha=" + std::to_string(c.alpha) +
         " beta=" + std::to_string(c.beta) + " pad=" + std::to_string(c.pad) + " step=" + std::to_string(c.step) +
         " cpad=" + std::to_string(c.cpad) + " bias=" + std::to_string(c.bias) +
         " bias_scale=" + std::to_string(c.bias_scale) + " relu=" + std::to_string(c.relu) +
         " gate=" + std::to_string(c.gate);
}

// Runs one case and returns the number of wrong elements (reporting the first few).
template <class T>
int64_t check(const Case& c, std::mt19937& rng) {
  Operand<T> a = make_operand<T>(c.m, c.k, c.ta, c.pad, c.step, rng);
  Operand<T> b = make_operand<T>(c.k, c.n, c.tb, c.pad, c.step, rng);
  const int64_t ldc = c.n + c.cpad;
  const T sentinel = T(12345);
  std::vector<T> out(size_t(c.m * ldc), sentinel);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  for (int64_t i = 0; i < c.m; i++)
    for (int64_t j = 0; j < c.n; j++)
      out[size_t(i * ldc + j)] = c.beta == 0 ? std::numeric_limits<T>::quiet_NaN() : T(u(rng));
  const std::vector<T> before = out;
  fw::detail::GemmEpilogue<T> ep;
  std::vector<T> bias(size_t(3 * c.m * c.n + 1));
  for (auto& x : bias) x = T(u(rng));
  const int64_t brs[] = {0, 0, 1, c.n, 0}, bcs[] = {0, 1, 0, 1, 3};
  if (c.bias) {
    ep.bias = bias.data();
    ep.rs = brs[c.bias];
    ep.cs = bcs[c.bias];
    ep.bias_scale = T(c.bias_scale);
  }
  ep.relu = c.relu;
  std::vector<T> gate(size_t(c.m * c.n));
  for (auto& x : gate) x = u(rng) < -0.3f ? T(0) : T(u(rng));  // zeros, negatives and positives
  const int64_t grs = c.gate == 2 ? 1 : c.n, gcs = c.gate == 2 ? c.m : 1;
  if (c.gate) {
    ep.gate = gate.data();
    ep.grs = grs;
    ep.gcs = gcs;
  }
  gemm<T>(c.m, c.n, c.k, T(c.alpha), a.arg, b.arg, T(c.beta), out.data(), ldc, ep);
  const double eps = std::numeric_limits<T>::epsilon();
  int64_t bad = 0;
  for (int64_t i = 0; i < c.m; i++) {
    for (int64_t j = 0; j < ldc; j++) {
      const T got = out[size_t(i * ldc + j)];
      if (j >= c.n) {
        if (got != sentinel && bad++ < 3) ADD_FAILURE() << describe(c) << ": wrote past n at (" << i << ", " << j << ")";
        continue;
      }
      double dot = 0, mag = 0;
      for (int64_t p = 0; p < c.k; p++) {
        const double x = a.arg.data[i * a.arg.rs + p * a.arg.cs], y = b.arg.data[p * b.arg.rs + j * b.arg.cs];
        dot += x * y;
        mag += std::abs(x * y);
      }
      const double cold = c.beta == 0 ? 0 : double(before[size_t(i * ldc + j)]);
      const double bv = c.bias ? c.bias_scale * double(bias[size_t(i * brs[c.bias] + j * bcs[c.bias])]) : 0;
      double ref = c.alpha * dot + c.beta * cold + bv;
      if (c.relu) ref = std::max(ref, 0.0);
      if (c.gate && !(gate[size_t(i * grs + j * gcs)] > T(0))) ref = 0;
      // Rounding error of a k-term float sum, plus the final scale and adds (relu cannot add any).
      const double tol =
          2 * eps * ((c.k + 2) * std::abs(c.alpha) * mag + 2 * std::abs(c.beta * cold) + 2 * std::abs(bv)) + 1e-30;
      if (!(std::abs(double(got) - ref) <= tol) && bad++ < 3)
        ADD_FAILURE() << describe(c) << ": C(" << i << ", " << j << ") = " << got << ", expected " << ref
                      << " (tolerance " << tol << ")";
    }
  }
  return bad;
}

const int64_t kSizes[] = {1, 2, 3, 5, 13, 14, 15, 16, 17, 29, 31, 32, 33, 47, 63, 65, 97, 127, 150};

}  // namespace

TEST(GemmF32, OddSizesAllTransposes) {
  std::mt19937 rng(1);
  int64_t bad = 0, idx = 0;
  for (int64_t m : kSizes)
    for (int64_t n : kSizes) {
      const int64_t k = kSizes[size_t(idx++ * 7 % std::size(kSizes))];
      for (int t = 0; t < 4; t++) bad += check<float>({m, n, k, bool(t & 1), bool(t & 2), 1, 0}, rng);
    }
  EXPECT_EQ(bad, 0);
}

TEST(GemmF32, DepthSweep) {
  std::mt19937 rng(2);
  int64_t bad = 0;
  for (int64_t k : kSizes)
    for (int t = 0; t < 4; t++) bad += check<float>({31, 45, k, bool(t & 1), bool(t & 2), 1, 0}, rng);
  // Several packed blocks of k, with beta applied once.
  for (int64_t k : {255, 256, 257, 600})
    for (int t = 0; t < 4; t++) bad += check<float>({29, 70, k, bool(t & 1), bool(t & 2), 0.5, 2}, rng);
  EXPECT_EQ(bad, 0);
}

// The AVX2 kernel's blocks (Note [AVX2 float32 GEMM]): 6 x 16 tiles, 72-row blocks of A, 128-column
// tasks, 256-deep blocks of k, each crossed by one; with beta, on the pool.
TEST(GemmF32, AroundTheAvx2Blocks) {
  std::mt19937 rng(12);
  int64_t bad = 0;
  const int64_t shapes[][3] = {{6, 16, 256}, {7, 17, 257}, {72, 128, 255}, {73, 129, 513}, {145, 257, 300}, {2, 2, 1}};
  for (const auto& s : shapes)
    for (int t = 0; t < 4; t++) bad += check<float>({s[0], s[1], s[2], bool(t & 1), bool(t & 2), 0.75, t == 2 ? 1.5 : 0.0}, rng);
  EXPECT_EQ(bad, 0);
}

// The skinny kernel (Note [Skinny float32 GEMM]): at most 6 rows of A times a transposed B (both
// contiguous in k), in 1-3 row x 4 column tiles over 64-column tasks; k around the 8-float step,
// n around the tiles and tasks, one row (which Eigen's GEMV took before), padded rows, beta, the
// epilogue, and a product big enough for the pool. The other layouts of the same shapes take the
// packed kernel.
TEST(GemmF32, AroundTheSkinnyKernel) {
  std::mt19937 rng(21);
  int64_t bad = 0;
  for (int64_t m = 1; m <= 7; m++)
    for (int64_t n : {2, 3, 4, 5, 63, 64, 65, 131})
      for (int64_t k : {1, 7, 8, 9, 300}) {
        Case c{m, n, k, false, true, (m + n) % 2 ? 1.0 : 0.5, k == 9 ? 2.0 : 0.0};
        c.pad = m % 3 == 0 ? 5 : 0;
        bad += check<float>(c, rng);
        c.ta = true;
        bad += check<float>(c, rng);
      }
  for (int bias = 0; bias <= 4; bias++) {
    Case c{5, 4097, 1024, false, true, 1.0, bias == 2 ? 0.5 : 0.0};
    c.bias = bias;
    c.relu = bias % 2 == 0;
    c.gate = bias % 3;
    bad += check<float>(c, rng);
  }
  EXPECT_EQ(bad, 0);
}

TEST(GemmF32, AlphaBeta) {
  std::mt19937 rng(3);
  int64_t bad = 0;
  for (double alpha : {1.0, -1.0, 0.5, 3.0})
    for (double beta : {0.0, 1.0, -0.25, 2.0})
      for (int t = 0; t < 4; t++) bad += check<float>({33, 47, 65, bool(t & 1), bool(t & 2), alpha, beta}, rng);
  EXPECT_EQ(bad, 0);
}

TEST(GemmF32, AlphaZeroReadsNeitherOperand) {
  std::vector<float> a(6, std::numeric_limits<float>::quiet_NaN()), b(6, std::numeric_limits<float>::infinity());
  std::vector<float> c{1, 2, 3, 4};
  gemm<float>(2, 2, 3, 0.f, {a.data(), 3, 1}, {b.data(), 2, 1}, 0.5f, c.data(), 2);
  EXPECT_EQ(c, (std::vector<float>{0.5f, 1, 1.5f, 2}));
}

TEST(GemmF32, EmptyDepth) {
  std::mt19937 rng(4);
  int64_t bad = 0;
  for (double beta : {0.0, 1.0, 3.0})
    for (int64_t m : {1, 5, 40}) bad += check<float>({m, 37, 0, false, false, 2, beta}, rng);
  EXPECT_EQ(bad, 0);
}

TEST(GemmF32, Strides) {
  std::mt19937 rng(5);
  int64_t bad = 0;
  for (int t = 0; t < 4; t++)
    for (int64_t step : {1, 2})
      for (int64_t pad : {0, 3, 17}) {
        bad += check<float>({27, 41, 19, bool(t & 1), bool(t & 2), 1, 0.5, pad, step, 5}, rng);
        bad += check<float>({1, 41, 19, bool(t & 1), bool(t & 2), 1, 0, pad, step, 2}, rng);
        bad += check<float>({27, 1, 19, bool(t & 1), bool(t & 2), 1, 0, pad, step, 2}, rng);
      }
  EXPECT_EQ(bad, 0);
}

TEST(GemmF32, ThreadedShapes) {
  std::mt19937 rng(6);
  int64_t bad = 0;
  // Above the threading threshold; more column panels than one L2 block, ragged edges.
  for (int t = 0; t < 4; t++) bad += check<float>({131, 301, 270, bool(t & 1), bool(t & 2), 1, t == 3 ? 1.0 : 0.0}, rng);
  bad += check<float>({256, 10, 1024, false, true, 1, 0}, rng);
  bad += check<float>({10, 300, 256, true, false, 1, 1}, rng);
  EXPECT_EQ(bad, 0);
}

// Threads split C, never k, and each element of C is summed in the same order whatever the
// thread count, so one and two threads give identical bits (native kernel and Eigen path alike).
TEST(GemmF32, SameBitsOnOneAndTwoThreads) {
  std::mt19937 rng(8);
  const int saved = fw::get_num_threads();
  for (int t = 0; t < 4; t++) {
    const int64_t m = 200, n = 333, k = 800;
    Operand<float> a = make_operand<float>(m, k, t & 1, 0, 1, rng), b = make_operand<float>(k, n, t & 2, 0, 1, rng);
    std::vector<float> one(size_t(m * n)), two(size_t(m * n));
    fw::set_num_threads(1);
    gemm<float>(m, n, k, 1.f, a.arg, b.arg, 0.f, one.data(), n);
    fw::set_num_threads(2);
    gemm<float>(m, n, k, 1.f, a.arg, b.arg, 0.f, two.data(), n);
    EXPECT_EQ(one, two) << "transposes " << t;
  }
  fw::set_num_threads(saved);
}

// The epilogue (bias, relu, gate) on every path of the native kernel: edge tiles, A read in place (n <= 32), B read
// in place (m <= 14), B packed on first use (row-major B), several blocks of k (applied once, after
// the last), beta on top, the thread pool; and on Eigen's path (float64).
TEST(GemmF32, Epilogue) {
  std::mt19937 rng(9);
  int64_t bad = 0;
  const int64_t shapes[][3] = {{13, 45, 29}, {33, 31, 65}, {14, 100, 40}, {5, 7, 3}, {29, 70, 600}, {131, 301, 270}};
  for (auto& sh : shapes)
    for (int bias = 0; bias <= 4; bias++)
      for (int t = 0; t < 4; t++) {
        Case c{sh[0], sh[1], sh[2], bool(t & 1), bool(t & 2), t == 1 ? 0.5 : 1.0, t == 3 ? 0.75 : 0.0};
        c.bias = bias;
        c.bias_scale = bias == 2 ? -2.0 : 1.0;
        c.relu = (bias + t) % 2 == 0 || bias == 0;
        c.gate = (bias + t) % 3;
        bad += check<float>(c, rng);
        bad += check<double>(c, rng);
      }
  EXPECT_EQ(bad, 0);
}

// relu in the epilogue keeps NaN, as fw::relu does, and writes +0 for negatives.
TEST(GemmF32, EpilogueReluKeepsNaN) {
  for (int64_t m : {3, 40}) {
    const int64_t n = 50, k = 20;
    std::vector<float> a(size_t(m * k), 1.f), b(size_t(k * n), -1.f), c(size_t(m * n));
    a[size_t(k + 3)] = std::numeric_limits<float>::quiet_NaN();  // row 1
    fw::detail::GemmEpilogue<float> ep;
    ep.relu = true;
    gemm<float>(m, n, k, 1.f, {a.data(), k, 1}, {b.data(), n, 1}, 0.f, c.data(), n, ep);
    for (int64_t i = 0; i < m; i++)
      for (int64_t j = 0; j < n; j++) {
        const float v = c[size_t(i * n + j)];
        if (i == 1) EXPECT_TRUE(std::isnan(v)) << i << ", " << j;
        else EXPECT_TRUE(v == 0.f && !std::signbit(v)) << i << ", " << j << ": " << v;
      }
  }
}

// addmm's beta is applied in T: a beta that is zero in float (1e-50) ignores self, NaN and inf
// included, as beta == 0 does; alpha == 0 ignores NaN in the operands for complex too (found by a
// bug hunt).
TEST(GemmF32, AddmmZeroScalesIgnoreWhatTheyScale) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  fw::Tensor self = fw::full({2, 2}, nan);
  self.index_put_({0, 1}, inf);
  for (auto dt : {fw::kFloat, fw::kHalf, fw::kBFloat16}) {
    fw::Tensor r = fw::addmm(self.to(dt), fw::ones({2, 3}, dt), fw::ones({3, 2}, dt), 1e-50, 1);
    EXPECT_TRUE(fw::equal(r.to(fw::kFloat), fw::full({2, 2}, 3.0))) << fw::dtype_name(dt) << ": " << r;
    fw::Tensor bb = fw::baddbmm(self.to(dt).unsqueeze(0), fw::ones({1, 2, 3}, dt), fw::ones({1, 3, 2}, dt), 1e-50);
    EXPECT_TRUE(fw::equal(bb.to(fw::kFloat), fw::full({1, 2, 2}, 3.0))) << fw::dtype_name(dt) << ": " << bb;
  }
  fw::Tensor m1 = fw::ones({2, 3}, fw::kComplexFloat);
  m1.index_put_({0, 0}, nan);
  fw::Tensor r = fw::addmm(fw::ones({2, 2}, fw::kComplexFloat), m1, fw::ones({3, 2}, fw::kComplexFloat), 1, 0);
  EXPECT_TRUE(fw::equal(fw::real(r), fw::ones({2, 2}))) << r;
  r = fw::addmm(fw::ones({2, 2}, fw::kComplexFloat), m1, fw::ones({3, 2}, fw::kComplexFloat), 0, 0);
  EXPECT_TRUE(fw::equal(fw::real(r), fw::zeros({2, 2}))) << r;
}

TEST(GemmF64, OddSizesAllTransposes) {
  std::mt19937 rng(7);
  int64_t bad = 0;
  for (int64_t m : {1, 3, 17, 64})
    for (int64_t n : {1, 5, 31})
      for (int t = 0; t < 4; t++) bad += check<double>({m, n, 29, bool(t & 1), bool(t & 2), 1.5, t == 2 ? 0.0 : 0.5}, rng);
  EXPECT_EQ(bad, 0);
}
