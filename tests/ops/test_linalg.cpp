// Op-table entries for the matrix products. Fixture cases named matmul_*, mv_*, outer_*,
// linear_* and einsum_* exercise the composite of that name; their op is the primitive the
// composite lowers to (tests/fixtures/gen_linalg.py).
#include <gtest/gtest.h>

#include "tests/op_table.h"

using fw::Tensor;
using fwtest::FixCase;
using V = std::vector<Tensor>;

namespace {

bool starts(const FixCase& c, const char* prefix) { return c.name.rfind(prefix, 0) == 0; }

// The composite a case names, or an undefined tensor for plain primitive cases.
Tensor run_composite(const FixCase& c) {
  if (starts(c, "matmul_")) return fw::matmul(c.in[0], c.in[1]);
  if (starts(c, "mv_")) return fw::mv(c.in[0], c.in[1]);
  if (starts(c, "outer_")) return fw::outer(c.in[0], c.in[1]);
  if (starts(c, "linear_")) return fw::linear(c.in[0], c.in[1], c.in.size() > 2 ? c.in[2] : Tensor());
  if (starts(c, "einsum_")) return fw::einsum(c.args[0].s, c.in);
  return Tensor();
}

fw::Scalar num(const fwtest::FixArg& a) {
  return a.kind == fwtest::FixArg::Kind::Int ? fw::Scalar(a.i) : fw::Scalar(a.f);
}

Tensor f32(std::vector<int64_t> s) { return fw::ones(s); }

}  // namespace

FW_OP_TEST(mm) {
  t.run = [](const FixCase& c) {
    Tensor r = run_composite(c);
    return V{r.defined() ? r : fw::mm(c.in[0], c.in[1])};
  };
  t.error([] { fw::mm(f32({2, 3}), f32({4, 5})); }, "[mm] mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  t.error([] { fw::mm(f32({3}), f32({3, 5})); }, "[mm] mat1 must be a matrix, got 1-D tensor");
  t.error([] { fw::mm(f32({2, 3}), f32({3})); }, "[mm] mat2 must be a matrix, got 1-D tensor");
  t.error([] { fw::mm(f32({2, 3}), fw::ones({3, 4}, fw::kDouble)); }, "[mm] expected scalar type Float but found Double");
  t.error([] { fw::mm(fw::ones({2, 3}, fw::kBool), fw::ones({3, 4}, fw::kBool)); }, "[mm] not implemented for dtype bool");
  t.error([] { fw::matmul(fw::scalar_tensor(1.0), f32({3})); },
          "[matmul] both arguments to matmul need to be at least 1D, but they are 0D and 1D");
  t.error([] { fw::matmul(f32({2, 2, 3}), f32({3, 3, 4})); }, "[matmul] The size of tensor a (2) must match the size of tensor b (3)");
  t.error([] { fw::matmul(f32({2, 2, 3}), f32({2, 4, 5})); }, "[matmul] mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
  t.error([] { fw::matmul(f32({2, 3}), f32({4})); }, "[mv] size mismatch, got input (2x3) and vec (4)");
  t.error([] { fw::mv(f32({2, 3}), f32({3, 1})); }, "[mv] vector + matrix @ vector expected");
  t.error([] { fw::outer(f32({3}), f32({3, 1})); }, "[outer] Expected 1-D argument vec2, but got 2-D");
  t.error([] { fw::linear(f32({2, 3}), f32({4, 5})); }, "[linear] mat1 and mat2 shapes cannot be multiplied (2x3 and 5x4)");
  t.error([] { fw::linear(f32({2, 3}), f32({3})); }, "[linear] weight must be a matrix, got 1-D tensor");
}

FW_OP_TEST(addmm) {
  t.run = [](const FixCase& c) {
    Tensor r = run_composite(c);
    if (r.defined()) return V{r};
    if (c.args.empty()) return V{fw::addmm(c.in[0], c.in[1], c.in[2])};
    return V{fw::addmm(c.in[0], c.in[1], c.in[2], num(c.args[0]), num(c.args[1]))};
  };
  t.error([] { fw::addmm(f32({5}), f32({2, 3}), f32({3, 4})); }, "[addmm] self of shape [5] cannot be broadcast to the result shape [2, 4]");
  t.error([] { fw::addmm(fw::ones({2, 4}, fw::kDouble), f32({2, 3}), f32({3, 4})); }, "[addmm] self and mat2 must have the same dtype");
  t.error([] { fw::addmm(f32({4}), f32({2, 3}), f32({2, 4})); }, "[addmm] mat1 and mat2 shapes cannot be multiplied (2x3 and 2x4)");
  t.error([] { fw::linear(f32({2, 3}), f32({4, 3}), f32({5})); }, "[addmm] self of shape [5] cannot be broadcast");
}

FW_OP_TEST(bmm) {
  t.run = [](const FixCase& c) {
    Tensor r = run_composite(c);
    return V{r.defined() ? r : fw::bmm(c.in[0], c.in[1])};
  };
  t.error([] { fw::bmm(f32({2, 3}), f32({2, 3, 4})); }, "[bmm] batch1 must be a 3D tensor, got 2-D tensor");
  t.error([] { fw::bmm(f32({2, 2, 3}), f32({4, 4})); }, "[bmm] batch2 must be a 3D tensor");
  t.error([] { fw::bmm(f32({2, 2, 3}), f32({3, 3, 4})); },
          "[bmm] Expected size for first two dimensions of batch2 tensor to be: [2, 3] but got: [3, 3].");
  t.error([] { fw::bmm(f32({2, 2, 3}), fw::ones({2, 3, 4}, fw::kDouble)); }, "[bmm] expected scalar type Float but found Double");
  t.error([] { fw::einsum("ij,jk", {f32({3, 2}), f32({5, 4})}); },
          "[einsum] subscript j has size 5 for operand 1 which does not broadcast with previously seen size 2");
  t.error([] { fw::einsum("ii", {f32({3, 4})}); }, "[einsum] subscript i is repeated for operand 0 but the sizes don't match, 4 != 3");
  t.error([] { fw::einsum("ij", {f32({3, 4, 5})}); },
          "[einsum] the number of subscripts in the equation (2) does not match the number of dimensions (3) for operand 0");
  t.error([] { fw::einsum("i$", {f32({3, 4})}); }, "[einsum] invalid subscript given at index 1 in the equation string");
  t.error([] { fw::einsum("ij,jk", {f32({3, 4})}); }, "[einsum] fewer operands were provided than specified in the equation");
  t.error([] { fw::einsum("ij", {f32({3, 4}), f32({3})}); }, "[einsum] more operands were provided than specified");
  t.error([] { fw::einsum("ij->k", {f32({3, 4})}); }, "[einsum] output subscript k does not appear in the equation for any input operand");
  t.error([] { fw::einsum("ij->ii", {f32({3, 4})}); }, "[einsum] output subscript i appears more than once in the output");
  t.error([] { fw::einsum("i..j", {f32({3, 4})}); }, "[einsum] found '.' for operand 0 that is not part of any ellipsis");
  t.error([] { fw::einsum("...i...", {f32({3, 4})}); }, "[einsum] found more than one ellipsis");
  t.error([] { fw::einsum("i", {}); }, "[einsum] must provide at least one operand");
}

FW_OP_TEST(baddbmm) {
  t.run = [](const FixCase& c) {
    if (c.args.empty()) return V{fw::baddbmm(c.in[0], c.in[1], c.in[2])};
    return V{fw::baddbmm(c.in[0], c.in[1], c.in[2], num(c.args[0]), num(c.args[1]))};
  };
  t.error([] { fw::baddbmm(f32({5, 2, 4}), f32({3, 2, 3}), f32({3, 3, 4})); },
          "[baddbmm] self of shape [5, 2, 4] cannot be broadcast to the result shape [3, 2, 4]");
  t.error([] { fw::baddbmm(f32({2, 4}), f32({3, 2, 3}), f32({3, 4, 4})); }, "[baddbmm] Expected size for first two dimensions");
}

FW_OP_TEST(dot) {
  t.run = [](const FixCase& c) {
    Tensor r = run_composite(c);
    return V{r.defined() ? r : fw::dot(c.in[0], c.in[1])};
  };
  t.error([] { fw::dot(f32({3}), f32({4})); },
          "[dot] inconsistent tensor size, expected tensor [3] and src [4] to have the same number of elements");
  t.error([] { fw::dot(f32({3}), f32({3, 1})); }, "[dot] 1D tensors expected, but got 1D and 2D tensors");
  t.error([] { fw::dot(f32({3}), fw::ones({3}, fw::kDouble)); }, "[dot] expected both vectors to have same dtype, but found Float and Double");
  t.error([] { fw::dot(fw::ones({3}, fw::kBool), fw::ones({3}, fw::kBool)); }, "[dot] not implemented for dtype bool");
}

namespace {

// Reference product in double for the larger checks.
Tensor naive_mm(const Tensor& a, const Tensor& b) {
  Tensor ad = a.to(fw::kDouble).contiguous(), bd = b.to(fw::kDouble).contiguous();
  int64_t m = a.size(0), k = a.size(1), n = b.size(1);
  Tensor out = fw::zeros({m, n}, fw::kDouble);
  const double *pa = ad.data_ptr<double>(), *pb = bd.data_ptr<double>();
  double* po = out.data_ptr<double>();
  for (int64_t i = 0; i < m; i++)
    for (int64_t p = 0; p < k; p++)
      for (int64_t j = 0; j < n; j++) po[i * n + j] += pa[i * k + p] * pb[p * n + j];
  return out;
}

}  // namespace

TEST(Linalg, LargeProductsMatchReference) {
  fw::manual_seed(3);
  Tensor a = fw::randn({150, 230}), b = fw::randn({230, 170});
  FW_EXPECT_CLOSE(fw::mm(a, b).to(fw::kDouble), naive_mm(a, b), 1e-5, 1e-4);
  FW_EXPECT_CLOSE(fw::mm(a.t().contiguous().t(), b.t().contiguous().t()).to(fw::kDouble), naive_mm(a, b), 1e-5, 1e-4);
  Tensor at = fw::randn({230, 150}).t();
  FW_EXPECT_CLOSE(fw::mm(at, b).to(fw::kDouble), naive_mm(at, b), 1e-5, 1e-4);
  Tensor x = fw::randn({3, 70, 90}), y = fw::randn({3, 90, 60});
  Tensor z = fw::bmm(x, y);
  for (int64_t i = 0; i < 3; i++) FW_EXPECT_CLOSE(z[i].to(fw::kDouble), naive_mm(x[i], y[i]), 1e-5, 1e-4);
}

TEST(Linalg, BroadcastBatchIsNotMaterialised) {
  // A (n, m) @ (B, m, p) product reads the shared matrix through a zero batch stride.
  Tensor a = fw::randn({4, 5}), b = fw::randn({6, 5, 3});
  Tensor r = fw::matmul(a, b);
  ASSERT_EQ(r.sizes(), fw::IntArrayRef({6, 4, 3}));
  for (int64_t i = 0; i < 6; i++) FW_EXPECT_CLOSE(r[i], fw::mm(a, b[i]));
}

TEST(Linalg, EinsumIgnoresSpacesAndMatchesMatmul) {
  Tensor a = fw::randn({2, 3, 4}), b = fw::randn({2, 4, 5});
  FW_EXPECT_CLOSE(fw::einsum(" b i j , b j k -> b i k ", {a, b}), fw::bmm(a, b));
  FW_EXPECT_CLOSE(fw::einsum("bij,bjk->bki", {a, b}), fw::bmm(a, b).permute({0, 2, 1}));
}

TEST(Linalg, MethodsForwardToFunctions) {
  Tensor a = fw::randn({3, 4}), b = fw::randn({4, 2}), v = fw::randn({4});
  FW_EXPECT_CLOSE(a.matmul(b), fw::mm(a, b));
  FW_EXPECT_CLOSE(a.mm(b), fw::mm(a, b));
  FW_EXPECT_CLOSE(v.dot(v), fw::dot(v, v));
  FW_EXPECT_CLOSE(v.outer(v), fw::outer(v, v));
  FW_EXPECT_CLOSE(a.unsqueeze(0).bmm(b.unsqueeze(0)), fw::mm(a, b).unsqueeze(0));
}

TEST(Linalg, LowPrecisionAccumulatesInFloat) {
  Tensor a = fw::randn({5, 40}).to(fw::kBFloat16), b = fw::randn({40, 3}).to(fw::kBFloat16);
  Tensor ref = fw::mm(a.to(fw::kFloat), b.to(fw::kFloat)).to(fw::kBFloat16);
  FW_EXPECT_CLOSE(fw::mm(a, b), ref);
  FW_EXPECT_CLOSE(fw::bmm(a.unsqueeze(0), b.unsqueeze(0)), ref.unsqueeze(0));
  Tensor bias = fw::randn({3}).to(fw::kBFloat16);
  FW_EXPECT_CLOSE(fw::addmm(bias, a, b), (fw::mm(a.to(fw::kFloat), b.to(fw::kFloat)) + bias.to(fw::kFloat)).to(fw::kBFloat16));
  Tensor h = a.to(fw::kHalf), g = b.to(fw::kHalf);
  FW_EXPECT_CLOSE(fw::mm(h, g), fw::mm(h.to(fw::kFloat), g.to(fw::kFloat)).to(fw::kHalf));
}
