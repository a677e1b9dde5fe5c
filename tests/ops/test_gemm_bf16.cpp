// bfloat16 matrix products (mm, addmm, bmm, baddbmm on bfloat16 tensors) against a reference
// accumulated in double from the same bfloat16 values. On AVX512-BF16 hosts these run fw's
// bfloat16 GEMM (Note [bfloat16 GEMM] in core/ops/gemm_f32.cpp), elsewhere the float32 one on
// converted operands; both must give the exact product rounded once to bfloat16, up to the float32
// accumulation error. Sizes straddle the 14 x 32 register tile, odd and even depths the pairs of k
// the kernel steps by, and 1024 its blocks of k (one block: tiles rounded in registers); operands come in all four transposes, with padded
// rows, non-unit inner strides and odd element offsets (pairs of k then straddle 4-byte words).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>

#include <fw/fw.h>

using fw::Tensor;

namespace {

// A rows x cols bfloat16 operand with values of mixed sign and magnitude. trans stores it
// column-major; pad adds unused elements per row (column); step spaces the inner dimension;
// offset starts the view that many elements into its storage.
Tensor operand(int64_t rows, int64_t cols, bool trans, int64_t pad, int64_t step, int64_t offset, std::mt19937& rng) {
  const int64_t inner = trans ? rows : cols, outer = trans ? cols : rows;
  const int64_t ld = inner * step + pad;
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  Tensor base = fw::empty({outer * ld + offset + 1}, fw::kFloat);
  float* p = base.data_ptr<float>();
  for (int64_t i = 0; i < base.numel(); i++) p[i] = u(rng) * (i % 7 == 0 ? 64.f : 1.f);
  Tensor b16 = base.to(fw::kBFloat16);
  const int64_t rs = trans ? step : ld, cs = trans ? ld : step;
  return b16.as_strided({rows, cols}, {rs, cs}, offset);
}

double value_at(const Tensor& t, int64_t i, int64_t j) { return double(t.index({i, j}).item<float>()); }

struct Case {
  int64_t m, n, k;
  bool ta = false, tb = false;
  int64_t pad = 0, step = 1, offset = 0;
};

std::string describe(const Case& c) {
  return "m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) + " k=" + std::to_string(c.k) +
         " ta=" + std::to_string(c.ta) + " tb=" + std::to_string(c.tb) + " pad=" + std::to_string(c.pad) +
         " step=" + std::to_string(c.step) + " offset=" + std::to_string(c.offset);
}

// got against alpha * a @ b + beta * c0 (+ bias_scale * bias), each element rounded once to
// bfloat16: within half a bfloat16 ulp of the exact value plus the float32 accumulation error.
int64_t compare(const std::string& what, const Tensor& got, const Tensor& a, const Tensor& b, double alpha,
                double beta, const Tensor& c0) {
  EXPECT_EQ(got.dtype(), fw::kBFloat16) << what;
  Tensor fa = a.to(fw::kDouble).contiguous(), fb = b.to(fw::kDouble).contiguous(), fg = got.to(fw::kDouble).contiguous();
  Tensor fc = c0.defined() ? c0.to(fw::kDouble).expand({a.size(0), b.size(1)}).contiguous() : Tensor();
  const double* pa = fa.data_ptr<double>();
  const double* pb = fb.data_ptr<double>();
  const double* pg = fg.data_ptr<double>();
  const int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  int64_t bad = 0;
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double dot = 0, mag = 0;
      for (int64_t p = 0; p < k; p++) {
        dot += pa[i * k + p] * pb[p * n + j];
        mag += std::abs(pa[i * k + p] * pb[p * n + j]);
      }
      const double cold = fc.defined() ? fc.data_ptr<double>()[i * n + j] : 0;
      const double ref = alpha * dot + beta * cold;
      const double tol = std::ldexp(std::abs(ref), -8) + 4e-7 * (k + 2) * (std::abs(alpha) * mag + std::abs(beta * cold)) + 1e-30;
      const double g = pg[i * n + j];
      if (!(std::abs(g - ref) <= tol) && bad++ < 3)
        ADD_FAILURE() << what << ": (" << i << ", " << j << ") = " << g << ", expected " << ref << " (tolerance " << tol
                      << ")";
    }
  return bad;
}

int64_t check_mm(const Case& c, std::mt19937& rng) {
  Tensor a = operand(c.m, c.k, c.ta, c.pad, c.step, c.offset, rng);
  Tensor b = operand(c.k, c.n, c.tb, c.pad, c.step, c.offset, rng);
  return compare("mm " + describe(c), fw::mm(a, b), a, b, 1, 0, Tensor());
}

const int64_t kSizes[] = {1, 2, 3, 13, 14, 15, 16, 17, 31, 32, 33, 47, 65};

}  // namespace

TEST(GemmBF16, OddSizesAllTransposes) {
  std::mt19937 rng(11);
  int64_t bad = 0;
  for (int64_t m : kSizes)
    for (int64_t n : {1, 5, 16, 17, 32, 33, 70})
      for (int64_t k : {1, 2, 3, 7, 16, 33})
        for (int t = 0; t < 4; t++) bad += check_mm({m, n, k, bool(t & 1), bool(t & 2)}, rng);
  EXPECT_EQ(bad, 0);
}

TEST(GemmBF16, DepthAroundTheBlocksOfK) {
  std::mt19937 rng(12);
  int64_t bad = 0;
  for (int64_t k : {767, 768, 769, 1023, 1024, 1025, 1026, 2047, 2049, 3001})
    for (int t = 0; t < 4; t++) bad += check_mm({29, 40, k, bool(t & 1), bool(t & 2)}, rng);
  EXPECT_EQ(bad, 0);
}

TEST(GemmBF16, StridesAndOddOffsets) {
  std::mt19937 rng(13);
  int64_t bad = 0;
  for (int64_t pad : {0, 1, 3})
    for (int64_t step : {1, 2})
      for (int64_t offset : {0, 1})
        for (int64_t k : {9, 10})
          for (int t = 0; t < 4; t++) bad += check_mm({19, 37, k, bool(t & 1), bool(t & 2), pad, step, offset}, rng);
  EXPECT_EQ(bad, 0);
}

TEST(GemmBF16, ThreadedShapes) {
  std::mt19937 rng(14);
  int64_t bad = 0;
  bad += check_mm({256, 300, 784}, rng);
  bad += check_mm({200, 257, 1025, true, false}, rng);
  bad += check_mm({131, 250, 513, false, true}, rng);
  EXPECT_EQ(bad, 0);
}

TEST(GemmBF16, AddmmBiasBroadcastsAndScales) {
  std::mt19937 rng(15);
  Tensor a = operand(45, 61, false, 0, 1, 0, rng), b = operand(61, 50, true, 0, 1, 0, rng);
  int64_t bad = 0;
  const Tensor biases[] = {operand(1, 50, false, 0, 1, 0, rng).reshape({50}), operand(45, 1, false, 0, 1, 0, rng),
                           operand(45, 50, true, 1, 1, 1, rng)};
  for (const Tensor& bias : biases)
    for (auto [beta, alpha] : {std::pair{1.0, 1.0}, std::pair{0.5, -2.0}, std::pair{0.0, 1.5}}) {
      Tensor got = fw::addmm(bias, a, b, beta, alpha);
      bad += compare("addmm bias of dim " + std::to_string(bias.dim()) + " beta " + std::to_string(beta), got, a, b, alpha,
                     beta, beta == 0 ? Tensor() : bias);
    }
  EXPECT_EQ(bad, 0);
}

TEST(GemmBF16, BatchedProducts) {
  std::mt19937 rng(16);
  std::vector<Tensor> as, bs;
  for (int i = 0; i < 6; i++) {
    as.push_back(operand(23, 41, i % 2, 0, 1, 0, rng));
    bs.push_back(operand(41, 35, i % 3 == 0, 0, 1, 0, rng));
  }
  Tensor a = fw::stack(as), b = fw::stack(bs), c = fw::stack(as).narrow(2, 0, 35).contiguous();
  Tensor prod = fw::bmm(a, b), acc = fw::baddbmm(c, a, b, 0.25, 3.0);
  int64_t bad = 0;
  for (int64_t i = 0; i < 6; i++) {
    bad += compare("bmm " + std::to_string(i), prod[i], as[size_t(i)], bs[size_t(i)], 1, 0, Tensor());
    bad += compare("baddbmm " + std::to_string(i), acc[i], as[size_t(i)], bs[size_t(i)], 3.0, 0.25, c[i]);
  }
  EXPECT_EQ(bad, 0);
}

// NaN and infinity in an operand reach the rows and columns they touch, as in float32.
TEST(GemmBF16, NonFiniteOperands) {
  Tensor a = fw::ones({20, 40}, fw::kBFloat16), b = fw::ones({40, 36}, fw::kBFloat16);
  a.index_put_({3, 7}, std::numeric_limits<float>::quiet_NaN());
  b.index_put_({9, 30}, std::numeric_limits<float>::infinity());
  Tensor c = fw::mm(a, b).to(fw::kFloat);
  EXPECT_TRUE(std::isnan(c.index({3, 0}).item<float>()));
  EXPECT_TRUE(std::isinf(c.index({0, 30}).item<float>()));
  EXPECT_EQ(c.index({4, 5}).item<float>(), 40.f);
  EXPECT_EQ(value_at(c, 19, 35), 40.0);
  EXPECT_EQ(fw::isnan(c).sum().item<int64_t>(), 36);  // row 3
  EXPECT_EQ(fw::isinf(c).sum().item<int64_t>(), 19);  // column 30 but row 3
}
