// Linear-algebra decompositions and norms (include/fw/linalg.h, Note [Linear algebra through
// Eigen] in core/ops/decomp.cpp): values and gradients against PyTorch 1.13
// (tests/fixtures/gen_decomp.py, float64 and float32), factors that are fixed only up to signs
// compared up to column (row) signs, gradcheck/gradgradcheck in float64, errors, non-contiguous,
// empty and 0 x 0 inputs.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>

#include <fw/fw.h>
#include <fw/linalg.h>

#include "tests/expect_error.h"
#include "tests/fixture.h"
#include "tests/linalg_records.h"
#include "tests/records.h"

namespace LA = fw::linalg;
using fw::Tensor;

namespace {

using Case = fwtest::RecordCase;
using Outs = std::map<std::string, Tensor>;
using Ins = std::map<std::string, Tensor>;

std::vector<Case> load(const std::string& kind) { return fwtest::load_kind("decomp.txt", kind); }

void expect_orthonormal_cols(const Tensor& Q, double tol) {
  Tensor p = fw::matmul(Q.mT(), Q);
  FW_EXPECT_CLOSE(p, fw::eye(Q.size(-1), Q.options()).expand(p.sizes()).contiguous(), tol, tol);
}

using Check = fwtest::LinalgCheck;
void check_case(const Case& c, const std::function<Outs(const Ins&)>& fn, const Check& chk = {}) {
  fwtest::check_linalg_case(c, fn, chk);
}

Tensor linspace_like(double a, double b, int64_t n, const Tensor& like) {
  return fw::linspace(a, b, n, like.options());
}
Tensor diag_embed(const Tensor& v) { return v.unsqueeze(-1) * fw::eye(v.size(-1), v.options()); }
double ord_of(const std::string& s) { return std::stod(s); }

}  // namespace

TEST(Decomp, InvDetSlogdetLogdet) {
  for (const auto& c : load("inv")) check_case(c, [](const Ins& in) { return Outs{{"y", LA::inv(in.at("x"))}}; });
  for (const auto& c : load("det")) check_case(c, [](const Ins& in) { return Outs{{"y", LA::det(in.at("x"))}}; });
  for (const auto& c : load("slogdet"))
    check_case(c, [](const Ins& in) {
      auto [s, l] = LA::slogdet(in.at("x"));
      return Outs{{"sign", s}, {"y", l}};
    });
  for (const auto& c : load("logdet")) check_case(c, [](const Ins& in) { return Outs{{"y", fw::logdet(in.at("x"))}}; });
}

TEST(Decomp, Solve) {
  for (const auto& c : load("solve"))
    check_case(c, [&](const Ins& in) {
      bool left = c.opts.count("left") ? c.flag("left") : true;
      return Outs{{"y", LA::solve(in.at("A"), in.at("B"), left)}};
    });
}

TEST(Decomp, Cholesky) {
  for (const auto& c : load("cholesky")) {
    bool upper = c.flag("upper");
    bool old = c.name.rfind("torch_", 0) == 0;
    check_case(c, [&](const Ins& in) {
      return Outs{{"y", old ? fw::cholesky(in.at("x"), upper) : LA::cholesky(in.at("x"), upper)}};
    });
  }
}

TEST(Decomp, Qr) {
  for (const auto& c : load("qr")) {
    std::string mode = c.opt("mode");
    Tensor x = c.get("in.x");
    int64_t m = x.size(-2), n = x.size(-1), k = std::min(m, n);
    check_case(
        c,
        [&](const Ins& in) {
          auto [Q, R] = LA::qr(in.at("x"), mode);
          Outs o{{"Q", Q}, {"R", R}};
          if (mode != "r") {
            int64_t kk = mode == "reduced" ? k : m;
            Tensor w = linspace_like(1, 2, 8, in.at("x")).narrow(0, 0, std::min<int64_t>(kk, 8));
            o["y"] = fw::matmul(Q.narrow(-1, 0, kk) * w, R.narrow(-2, 0, kk));
            expect_orthonormal_cols(Q.detach(), 1e-5);
          }
          return o;
        },
        Check{{"Q"}, {"R"}, k});
  }
}

TEST(Decomp, Eigh) {
  for (const auto& c : load("eigh")) {
    std::string uplo = c.opt("UPLO");
    check_case(
        c,
        [&](const Ins& in) {
          auto [L, V] = LA::eigh(in.at("x"), uplo);
          Tensor w = linspace_like(-1, 2, L.size(-1), L);
          return Outs{{"L", L}, {"V", V}, {"y", fw::matmul(V * w, V.mT())}};
        },
        Check{{"V"}, {}});
  }
  for (const auto& c : load("eigvalsh"))
    check_case(c, [&](const Ins& in) { return Outs{{"y", LA::eigvalsh(in.at("x"), c.opt("UPLO"))}}; });
}

TEST(Decomp, Svd) {
  for (const auto& c : load("svd")) {
    bool full = c.flag("full_matrices");
    Tensor x = c.get("in.x");
    int64_t k = std::min(x.size(-2), x.size(-1));
    check_case(
        c,
        [&](const Ins& in) {
          auto [U, S, Vh] = LA::svd(in.at("x"), full);
          Tensor w = linspace_like(1, 2, k, S);
          expect_orthonormal_cols(U.detach(), 1e-5);
          expect_orthonormal_cols(Vh.detach().mT(), 1e-5);
          return Outs{{"U", U}, {"S", S}, {"Vh", Vh}, {"y", fw::matmul(U.narrow(-1, 0, k) * w, Vh.narrow(-2, 0, k))}};
        },
        Check{{"U"}, {"Vh"}, k});
  }
  for (const auto& c : load("svdvals")) check_case(c, [](const Ins& in) { return Outs{{"y", LA::svdvals(in.at("x"))}}; });
  for (const auto& c : load("torch_svd")) {
    bool some = c.flag("some"), uv = c.flag("compute_uv");
    Tensor x = c.get("in.x");
    int64_t k = std::min(x.size(-2), x.size(-1));
    check_case(
        c,
        [&](const Ins& in) {
          auto [U, S, V] = fw::svd(in.at("x"), some, uv);
          return Outs{{"U", U}, {"S", S}, {"V", V}};
        },
        uv ? Check{{"U", "V"}, {}, k} : Check{});
  }
}

TEST(Decomp, Norms) {
  for (const auto& c : load("matrix_norm")) {
    std::string ord = c.opt("ord");
    check_case(c, [&](const Ins& in) {
      auto dim = c.ints("dim");
      bool kd = c.flag("keepdim");
      if (ord == "fro" || ord == "nuc") return Outs{{"y", LA::matrix_norm(in.at("x"), ord, dim, kd)}};
      return Outs{{"y", LA::matrix_norm(in.at("x"), fw::Scalar(ord_of(ord)), dim, kd)}};
    });
  }
  for (const auto& c : load("vector_norm")) {
    check_case(c, [&](const Ins& in) {
      LA::OptionalIntArrayRef dim = c.none("dim") ? LA::OptionalIntArrayRef() : LA::OptionalIntArrayRef(c.ints("dim"));
      return Outs{{"y", LA::vector_norm(in.at("x"), ord_of(c.opt("ord")), dim, c.flag("keepdim"))}};
    });
  }
  for (const auto& c : load("norm")) {
    check_case(c, [&](const Ins& in) {
      LA::OptionalIntArrayRef dim = c.none("dim") ? LA::OptionalIntArrayRef() : LA::OptionalIntArrayRef(c.ints("dim"));
      std::string ord = c.opt("ord");
      bool kd = c.flag("keepdim");
      if (ord == "none") return Outs{{"y", LA::norm(in.at("x"), std::nullopt, dim, kd)}};
      if (ord == "fro" || ord == "nuc") return Outs{{"y", LA::norm(in.at("x"), ord, dim, kd)}};
      return Outs{{"y", LA::norm(in.at("x"), fw::Scalar(ord_of(ord)), dim, kd)}};
    });
  }
}

TEST(Decomp, RankPinvPowerCross) {
  for (const auto& c : load("matrix_rank")) {
    check_case(c, [&](const Ins& in) {
      if (c.opts.count("tol")) return Outs{{"y", LA::matrix_rank(in.at("x"), c.real("tol"), c.flag("hermitian"))}};
      return Outs{{"y", LA::matrix_rank(in.at("x"), std::nullopt, std::nullopt, c.flag("hermitian"))}};
    });
  }
  for (const auto& c : load("pinv"))
    check_case(c, [&](const Ins& in) {
      return Outs{{"y", LA::pinv(in.at("x"), std::nullopt, std::nullopt, c.flag("hermitian"))}};
    });
  for (const auto& c : load("matrix_power"))
    check_case(c, [&](const Ins& in) { return Outs{{"y", LA::matrix_power(in.at("x"), c.num("n"))}}; });
  for (const auto& c : load("cross"))
    check_case(c, [&](const Ins& in) { return Outs{{"y", LA::cross(in.at("x"), in.at("y"), c.num("dim"))}}; });
}

TEST(Decomp, Gradcheck) {
  fw::manual_seed(11);
  auto opts = fw::TensorOptions(fw::kDouble);
  auto leaf = [](Tensor t) { return t.requires_grad_(true); };
  namespace AG = fw::autograd;
  using VL = AG::variable_list;
  Tensor A = leaf(fw::randn({2, 3, 3}, opts) + 3 * fw::eye(3, opts));
  Tensor B = leaf(fw::randn({2, 3, 2}, opts));
  auto both = [](const std::function<VL(const VL&)>& f, const VL& in) {
    EXPECT_TRUE(AG::gradcheck(f, in));
    EXPECT_TRUE(AG::gradgradcheck(f, in));
  };
  {
    SCOPED_TRACE("inv");
    both([](const VL& v) { return VL{LA::inv(v[0])}; }, {A});
  }
  {
    SCOPED_TRACE("det");
    both([](const VL& v) { return VL{LA::det(v[0])}; }, {A});
  }
  {
    SCOPED_TRACE("slogdet");
    both([](const VL& v) { return VL{std::get<1>(LA::slogdet(v[0]))}; }, {A});
  }
  {
    SCOPED_TRACE("solve");
    both([](const VL& v) { return VL{LA::solve(v[0], v[1])}; }, {A, B});
  }
  {
    SCOPED_TRACE("cholesky");
    both([](const VL& v) { return VL{LA::cholesky(fw::matmul(v[0], v[0].mT()) + fw::eye(3, v[0].options()))}; }, {A});
    both([](const VL& v) { return VL{LA::cholesky(fw::matmul(v[0], v[0].mT()) + fw::eye(3, v[0].options()), true)}; },
         {A});
  }
  {
    SCOPED_TRACE("qr");
    Tensor X = leaf(fw::randn({4, 3}, opts));
    both([](const VL& v) {
           auto [Q, R] = LA::qr(v[0]);
           Tensor w = fw::linspace(1, 2, 3, v[0].options());
           return VL{fw::matmul(Q * w, R), fw::matmul(Q, Q.mT())};
         },
         {X});
    Tensor W = leaf(fw::randn({2, 3, 5}, opts));  // wide: m < n
    both([](const VL& v) {
           auto [Q, R] = LA::qr(v[0]);
           Tensor w = fw::linspace(1, 2, 3, v[0].options());
           return VL{fw::matmul(Q * w, R), fw::matmul(Q.mT(), v[0])};
         },
         {W});
  }
  {
    SCOPED_TRACE("eigh");
    both([](const VL& v) {
           auto [L, V] = LA::eigh(v[0] + v[0].mT());
           Tensor w = fw::linspace(-1, 2, 3, v[0].options());
           return VL{L, fw::matmul(V * w, V.mT())};
         },
         {A});
  }
  for (auto shape : {std::vector<int64_t>{4, 3}, std::vector<int64_t>{3, 4}}) {
    SCOPED_TRACE("svd");
    Tensor X = leaf(fw::randn(shape, opts));
    for (bool full : {false, true})
      both([full](const VL& v) {
             auto [U, S, Vh] = LA::svd(v[0], full);
             Tensor w = fw::linspace(1, 2, 3, v[0].options());
             return VL{S, fw::matmul(U.narrow(-1, 0, 3) * w, Vh.narrow(-2, 0, 3))};
           },
           {X});
  }
  {
    SCOPED_TRACE("pinv / norms");
    Tensor X = leaf(fw::randn({3, 4}, opts));
    both([](const VL& v) { return VL{LA::pinv(v[0]), LA::pinv(v[0].mT())}; }, {X});
    both([](const VL& v) {
           return VL{LA::matrix_norm(v[0], "nuc"), LA::matrix_norm(v[0], 2), LA::matrix_norm(v[0], -1)};
         },
         {X});
    both([](const VL& v) { return VL{LA::matrix_power(v[0].narrow(-1, 0, 3), -2)}; }, {X});
  }
}

TEST(Decomp, SingularDetGrad) {
  // PyTorch 1.13 gives an exactly singular matrix a zero det gradient (det * A^-T with det = 0),
  // even where the cofactor matrix is not zero; the other batch elements are unaffected.
  Tensor shift = fw::tensor({{0.0, 1.0, 0.0}, {0.0, 0.0, 1.0}, {0.0, 0.0, 0.0}}, fw::kDouble);
  Tensor two = (2 * fw::eye(3, fw::kDouble));
  Tensor x = fw::stack({shift, two}).requires_grad_(true);
  Tensor d = LA::det(x);
  FW_EXPECT_CLOSE(d, fw::tensor({0.0, 8.0}, fw::kDouble));
  d.sum().backward();
  FW_EXPECT_CLOSE(x.grad(), fw::stack({fw::zeros({3, 3}, fw::kDouble), 4 * fw::eye(3, fw::kDouble)}), 1e-12, 1e-12);
}

TEST(Decomp, NonContiguousAndEmpty) {
  fw::manual_seed(3);
  Tensor a = fw::randn({2, 4, 4}, fw::kDouble) + 4 * fw::eye(4, fw::kDouble);
  Tensor at = a.mT();  // non-contiguous
  ASSERT_FALSE(at.is_contiguous());
  FW_EXPECT_CLOSE(LA::inv(at), LA::inv(at.contiguous()), 1e-12, 1e-12);
  FW_EXPECT_CLOSE(LA::det(at), LA::det(a), 1e-10, 1e-10);
  Tensor b = fw::randn({4, 2, 3}, fw::kDouble).permute({1, 0, 2});
  FW_EXPECT_CLOSE(fw::matmul(at, LA::solve(at, b)), b, 1e-10, 1e-10);
  Tensor s = fw::matmul(a, a.mT()) + fw::eye(4, fw::kDouble);
  FW_EXPECT_CLOSE(LA::cholesky(s.mT()), LA::cholesky(s.contiguous()), 1e-10, 1e-10);
  auto [U, S, Vh] = LA::svd(at.narrow(-1, 0, 3), false);
  FW_EXPECT_CLOSE(fw::matmul(U * S.unsqueeze(-2), Vh), at.narrow(-1, 0, 3), 1e-10, 1e-10);
  // float32
  Tensor af = a.to(fw::kFloat).mT();
  FW_EXPECT_CLOSE(fw::matmul(af, LA::inv(af)), fw::eye(4, fw::kFloat).expand({2, 4, 4}), 1e-5, 1e-5);

  // Empty batches and 0 x 0 matrices (PyTorch's shapes).
  Tensor e = fw::zeros({0, 3, 3}, fw::kDouble);
  EXPECT_EQ(LA::inv(e).sizes().vec(), (std::vector<int64_t>{0, 3, 3}));
  EXPECT_EQ(LA::det(e).sizes().vec(), (std::vector<int64_t>{0}));
  EXPECT_EQ(LA::cholesky(e).sizes().vec(), (std::vector<int64_t>{0, 3, 3}));
  EXPECT_EQ(std::get<1>(LA::eigh(e)).sizes().vec(), (std::vector<int64_t>{0, 3, 3}));
  EXPECT_EQ(std::get<0>(LA::qr(e)).sizes().vec(), (std::vector<int64_t>{0, 3, 3}));
  EXPECT_EQ(std::get<1>(LA::svd(e)).sizes().vec(), (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(LA::solve(e, fw::zeros({0, 3, 2}, fw::kDouble)).sizes().vec(), (std::vector<int64_t>{0, 3, 2}));
  Tensor z = fw::zeros({2, 0, 0}, fw::kDouble);
  EXPECT_EQ(LA::inv(z).sizes().vec(), (std::vector<int64_t>{2, 0, 0}));
  FW_EXPECT_CLOSE(LA::det(z), fw::ones({2}, fw::kDouble));
  auto [sg, la] = LA::slogdet(z);
  FW_EXPECT_CLOSE(sg, fw::ones({2}, fw::kDouble));
  FW_EXPECT_CLOSE(la, fw::zeros({2}, fw::kDouble));
  EXPECT_EQ(LA::cholesky(z).sizes().vec(), (std::vector<int64_t>{2, 0, 0}));
  EXPECT_EQ(std::get<0>(LA::eigh(z)).sizes().vec(), (std::vector<int64_t>{2, 0}));
  // A 3 x 0 matrix: full U is the identity, S empty.
  auto [U0, S0, V0] = LA::svd(fw::zeros({3, 0}, fw::kDouble), true);
  FW_EXPECT_CLOSE(U0, fw::eye(3, fw::kDouble));
  EXPECT_EQ(S0.numel(), 0);
  EXPECT_EQ(V0.sizes().vec(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(LA::matrix_rank(fw::zeros({3, 0}, fw::kDouble)).item<int64_t>(), 0);
  FW_EXPECT_CLOSE(LA::matrix_norm(fw::zeros({0, 0}, fw::kDouble)), fw::zeros({}, fw::kDouble));
  // Gradients through an empty batch are empty.
  Tensor eg = fw::zeros({0, 2, 2}, fw::kDouble).requires_grad_(true);
  LA::inv(eg).sum().backward();
  EXPECT_EQ(eg.grad().sizes().vec(), (std::vector<int64_t>{0, 2, 2}));
}

TEST(Decomp, HigherOrderAndGradModes) {
  // d^2/dA^2 of log det: the Hessian-vector product -A^-T V^T A^-T against finite differences is in
  // gradgradcheck; here: create_graph through inv twice runs, and no_grad skips graph building.
  Tensor a = (fw::randn({3, 3}, fw::kDouble) + 3 * fw::eye(3, fw::kDouble)).requires_grad_(true);
  Tensor y = LA::inv(a).sum();
  auto g = fw::autograd::grad({y}, {a}, {}, std::nullopt, true);
  auto gg = fw::autograd::grad({g[0].sum()}, {a});
  EXPECT_EQ(gg[0].sizes().vec(), (std::vector<int64_t>{3, 3}));
  {
    fw::NoGradGuard ng;
    EXPECT_FALSE(LA::svdvals(a).requires_grad());
    EXPECT_FALSE(LA::eigvalsh(a).requires_grad());
  }
  auto [sign, logabs] = LA::slogdet(a);
  EXPECT_FALSE(sign.requires_grad());
  EXPECT_TRUE(logabs.requires_grad());
}

TEST(Decomp, Errors) {
  Tensor r34 = fw::randn({3, 4}, fw::kDouble);
  EXPECT_ERROR(LA::inv(r34), "[linalg.inv] A must be batches of square matrices, but they are 3 by 4 matrices");
  EXPECT_ERROR(LA::inv(fw::randn({3}, fw::kDouble)), "[linalg.inv] The input tensor A must have at least 2 dimensions");
  EXPECT_ERROR(LA::inv(fw::ones({2, 2}, fw::kLong)), "[linalg.inv] Expected a float32 or float64 tensor as A, but got");
  Tensor sing = fw::tensor({{1.0, 2.0}, {2.0, 4.0}}, fw::kDouble);
  EXPECT_ERROR(LA::inv(sing), "[linalg.inv] The diagonal element 2 is zero, the inversion could not be completed "
                              "because the input matrix is singular.");
  EXPECT_ERROR(fw::inverse(fw::stack({fw::eye(2, fw::kDouble), sing})),
               "[linalg.inv] (Batch element 1): The diagonal element 2 is zero");
  EXPECT_ERROR(LA::solve(sing, fw::ones({2}, fw::kDouble)),
               "[linalg.solve] The diagonal element 2 is zero, the solve could not be completed because the input "
               "matrix is singular.");
  EXPECT_ERROR(LA::solve(fw::eye(3, fw::kDouble), fw::ones({4, 1}, fw::kDouble)),
               "[linalg.solve] Incompatible shapes of A and B for the equation AX = B (3x3 and 4x1)");
  EXPECT_ERROR(LA::solve(fw::eye(3, fw::kDouble), fw::ones({3}, fw::kDouble), false),
               "[linalg.solve] Incompatible shapes of A and B for the equation XA = B (3x3 and 3x1)");
  EXPECT_ERROR(LA::solve(fw::eye(3, fw::kDouble), fw::ones({3, 1}, fw::kFloat)),
               "[linalg.solve] Expected A and B to have the same dtype");
  EXPECT_ERROR(LA::solve(fw::eye(3, fw::kDouble).expand({2, 3, 3}), fw::ones({3, 3, 1}, fw::kDouble)),
               "[linalg.solve] The batch dimensions");
  Tensor notpd = fw::tensor({{1.0, 2.0, 0.0}, {2.0, 1.0, 0.0}, {0.0, 0.0, 1.0}}, fw::kDouble);
  EXPECT_ERROR(LA::cholesky(notpd),
               "[linalg.cholesky] The factorization could not be completed because the input is not positive-definite "
               "(the leading minor of order 2 is not positive-definite).");
  EXPECT_ERROR(LA::cholesky(fw::stack({fw::eye(3, fw::kDouble), -fw::eye(3, fw::kDouble)})),
               "[linalg.cholesky] (Batch element 1): The factorization could not be completed because the input is "
               "not positive-definite (the leading minor of order 1 is not positive-definite).");
  EXPECT_ERROR(LA::cholesky(r34), "[linalg.cholesky] A must be batches of square matrices, but they are 3 by 4");
  EXPECT_ERROR(LA::qr(r34, "full"), "[linalg.qr] qr received unrecognized mode 'full'");
  {
    Tensor x = fw::randn({4, 3}, fw::kDouble).requires_grad_(true);
    EXPECT_ERROR(std::get<1>(LA::qr(x, "r")).sum().backward(), "[linalg.qr] The derivative of linalg.qr depends on Q");
    EXPECT_ERROR(std::get<0>(LA::qr(x, "complete")).sum().backward(),
                 "[linalg.qr] The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
  }
  EXPECT_ERROR(LA::eigh(fw::eye(2, fw::kDouble), "X"), "[linalg.eigh] Expected UPLO argument to be 'L' or 'U', but got X");
  EXPECT_ERROR(LA::eigh(r34), "[linalg.eigh] A must be batches of square matrices");
  EXPECT_ERROR(LA::svd(fw::ones({3}, fw::kDouble)), "[linalg.svd] The input tensor A must have at least 2 dimensions");
  EXPECT_ERROR(LA::det(fw::ones({2, 2}, fw::kInt)), "[linalg.det] Expected a float32 or float64 tensor as A");
  EXPECT_ERROR(LA::matrix_norm(r34, 3), "[linalg.matrix_norm] Order 3 not supported.");
  EXPECT_ERROR(LA::matrix_norm(r34, "abc"), "[linalg.matrix_norm] Order abc not supported.");
  EXPECT_ERROR(LA::matrix_norm(r34, "fro", {0}), "[linalg.matrix_norm] dim must be a 2-tuple. Got [0]");
  EXPECT_ERROR(LA::matrix_norm(r34, "fro", {0, 0}), "[linalg.matrix_norm] dims must be different");
  EXPECT_ERROR(LA::matrix_norm(r34, "fro", {0, 2}), "[linalg.matrix_norm] Dimension out of range");
  EXPECT_ERROR(LA::norm(fw::ones({2, 2, 2}, fw::kDouble), 2), "[linalg.norm] If dim is not specified but ord is, the "
                                                               "input must be 1D or 2D. Got 3D.");
  EXPECT_ERROR(LA::norm(r34, "fro", {0, 1, 1}), "[linalg.norm] If dim is specified, it must be of length 1 or 2");
  EXPECT_ERROR(LA::vector_norm(fw::ones({2}, fw::kLong)), "[linalg.vector_norm] Expected a floating point or complex tensor");
  EXPECT_ERROR(LA::cross(fw::ones({2, 3}, fw::kDouble), fw::ones({2, 2}, fw::kDouble)),
               "[linalg.cross] inputs dimension -1 must have length 3. Got 3 and 2");
  EXPECT_ERROR(LA::matrix_power(r34, 2), "[linalg.matrix_power] A must be batches of square matrices");
}

TEST(Decomp, LibtorchStyleCalls) {
  // Overloads resolve as in libtorch code: string and numeric ords, braced dims, old-style svd.
  Tensor x = fw::randn({3, 4}, fw::kDouble);
  EXPECT_NEAR(LA::norm(x, "fro").item<double>(), LA::vector_norm(x).item<double>(), 1e-12);
  EXPECT_NEAR(LA::norm(x, 2, {0, 1}).item<double>(), LA::svdvals(x).max().item<double>(), 1e-12);
  EXPECT_EQ(LA::vector_norm(x, 1, {1}, true).sizes().vec(), (std::vector<int64_t>{3, 1}));
  EXPECT_NEAR(LA::matrix_norm(x).item<double>(), LA::norm(x).item<double>(), 1e-12);
  auto [U, S, V] = fw::svd(x);
  FW_EXPECT_CLOSE(fw::matmul(U * S, V.mT()), x, 1e-10, 1e-10);
  EXPECT_EQ(LA::matrix_rank(x).item<int64_t>(), 3);
  EXPECT_EQ(LA::matrix_rank(x, 1e9).item<int64_t>(), 0);
  FW_EXPECT_CLOSE(fw::matmul(x, LA::pinv(x)), fw::eye(3, fw::kDouble), 1e-10, 1e-10);
  FW_EXPECT_CLOSE(fw::matmul(x, LA::pinv(x, 1e-15)), fw::eye(3, fw::kDouble), 1e-10, 1e-10);
  Tensor sq = x.narrow(1, 0, 3);
  FW_EXPECT_CLOSE(LA::matrix_power(sq, 3), fw::matmul(sq, fw::matmul(sq, sq)), 1e-10, 1e-10);
  FW_EXPECT_CLOSE(LA::matrix_power(sq, -1), LA::inv(sq), 1e-12, 1e-12);
  FW_EXPECT_CLOSE(fw::det(sq), fw::exp(std::get<1>(fw::slogdet(sq))) * std::get<0>(fw::slogdet(sq)), 1e-10, 1e-10);
}
