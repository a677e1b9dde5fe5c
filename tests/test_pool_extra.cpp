// Fractional max pooling (Note [Fractional max pooling] in core/ops/pool.cpp) and antialiased
// interpolate (Note [Antialiased interpolate] in nn/layers_extra.cpp): values, indices and
// gradients against PyTorch 1.13 (tests/fixtures/gen_pool_extra.py), the functional options and
// modules, errors, and both under fw::compile.
#include <gtest/gtest.h>

#include <optional>
#include <sstream>

#include <fw/fw.h>
#include <fw/jit.h>

#include "tests/expect_error.h"
#include "tests/fixture.h"
#include "tests/records.h"

namespace nn = fw::nn;
namespace F = fw::nn::functional;
using fw::Tensor;
using Case = fwtest::RecordCase;

namespace {

std::vector<Case> load(const std::string& kind) {
  std::vector<Case> r;
  for (auto& c : fwtest::load_records("pool_extra.txt", kind))
    if (c.kind == kind) r.push_back(c);
  return r;
}

// Tolerances: float64 cases agree to rounding; float32 to float rounding of the sums.
double tol_for(const Tensor& x) { return x.dtype() == fw::kFloat ? 2e-5 : 1e-10; }

// y = fn(x) and d sum(y * g) / dx against the case.
void check_values_and_grad(const Case& c, const std::function<Tensor(const Tensor&)>& fn) {
  Tensor x = c.get("x").clone().requires_grad_(true);
  Tensor y = fn(x);
  const double tol = tol_for(x);
  FW_EXPECT_CLOSE(y, c.get("y"), tol, tol);
  auto g = fw::autograd::grad({(y * c.get("g")).sum()}, {x});
  FW_EXPECT_CLOSE(g[0], c.get("grad.x"), tol, tol);
}

template <size_t D>
F::FractionalMaxPoolFuncOptions<D> fractional_options(const Case& c) {
  auto k = c.ints("kernel");
  F::FractionalMaxPoolFuncOptions<D> o(k.size() == 1 ? fw::ExpandingArray<D>(k[0]) : fw::ExpandingArray<D>(k));
  if (!c.none("output_size")) {
    auto s = c.ints("output_size");
    o.output_size(s.size() == 1 ? fw::ExpandingArray<D>(s[0]) : fw::ExpandingArray<D>(s));
  } else {
    std::vector<double> r;
    std::stringstream ss(c.opt("output_ratio"));
    for (std::string e; std::getline(ss, e, ',');) r.push_back(std::stod(e));
    o.output_ratio(r.size() == 1 ? fw::ExpandingArrayDouble<D>(r[0]) : fw::ExpandingArrayDouble<D>(r));
  }
  return o._random_samples(c.get("samples"));
}

template <size_t D>
void check_fractional(const std::string& kind) {
  for (const Case& c : load(kind)) {
    SCOPED_TRACE(c.kind + " " + c.name);
    auto o = fractional_options<D>(c);
    auto pool = [&](const Tensor& x) {
      if constexpr (D == 2) return F::fractional_max_pool2d_with_indices(x, o);
      else return F::fractional_max_pool3d_with_indices(x, o);
    };
    auto [y, idx] = pool(c.get("x"));
    EXPECT_EQ(idx.dtype(), fw::kLong);
    EXPECT_TRUE(fw::equal(idx, c.get("indices"))) << "indices differ";
    check_values_and_grad(c, [&](const Tensor& x) { return std::get<0>(pool(x)); });
  }
}

}  // namespace

TEST(FractionalMaxPool, MatchesPyTorch2d) { check_fractional<2>("fractional2d"); }
TEST(FractionalMaxPool, MatchesPyTorch3d) { check_fractional<3>("fractional3d"); }

TEST(FractionalMaxPool, AtenFormAndDoubleBackward) {
  const Case c = load("fractional2d").front();
  ASSERT_EQ(c.name, "basic");  // kernel 2, output_size [5, 4]
  auto [y, idx] = fw::fractional_max_pool2d(c.get("x"), {2, 2}, {5, 4}, c.get("samples"));
  FW_EXPECT_CLOSE(y, c.get("y"), 1e-12, 1e-12);
  EXPECT_TRUE(fw::equal(idx, c.get("indices")));
  // The pool is a gather: its gradient is linear in g, so gradgradcheck holds.
  Tensor samples = c.get("samples");
  Tensor x = fw::randn({1, 2, 7, 6}, fw::kDouble).requires_grad_(true);
  auto f = [&](const std::vector<Tensor>& in) -> std::vector<Tensor> {
    return {std::get<0>(fw::fractional_max_pool2d(in[0], {2, 2}, {3, 4}, samples.narrow(0, 0, 1).narrow(1, 0, 2)))};
  };
  EXPECT_TRUE(fw::autograd::gradcheck(f, {x}));
  EXPECT_TRUE(fw::autograd::gradgradcheck(f, {x}));
}

TEST(FractionalMaxPool, DrawsSamplesWhenNoneGiven) {
  Tensor x = fw::randn({2, 3, 12, 10});
  fw::manual_seed(5);
  Tensor a = F::fractional_max_pool2d(x, F::FractionalMaxPool2dFuncOptions(2).output_size(5));
  fw::manual_seed(5);
  Tensor b = F::fractional_max_pool2d(x, F::FractionalMaxPool2dFuncOptions(2).output_size(5));
  EXPECT_EQ(a.sizes().vec(), (std::vector<int64_t>{2, 3, 5, 5}));
  EXPECT_TRUE(fw::equal(a, b));  // the same generator state gives the same windows
  // Each value is the maximum of some 2x2 window; the samples are rand({N, C, 2}) in x's dtype.
  fw::manual_seed(5);
  Tensor s = fw::rand({2, 3, 2});
  EXPECT_TRUE(fw::equal(a, std::get<0>(fw::fractional_max_pool2d(x, {2, 2}, {5, 5}, s))));
  // output_ratio: int(size * ratio) per dim.
  Tensor r = F::fractional_max_pool3d(fw::randn({1, 2, 9, 10, 11}),
                                      F::FractionalMaxPool3dFuncOptions({2, 3, 2}).output_ratio(std::vector<double>{0.5, 0.5, 0.75}));
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{1, 2, 4, 5, 8}));
  // Unbatched input draws (1, C, 3) samples.
  EXPECT_EQ(F::fractional_max_pool3d(fw::randn({2, 6, 6, 6}), F::FractionalMaxPool3dFuncOptions(2).output_size(3))
                .sizes()
                .vec(),
            (std::vector<int64_t>{2, 3, 3, 3}));
}

TEST(FractionalMaxPool, Modules) {
  const Case c = load("fractional2d").front();
  nn::FractionalMaxPool2d pool(nn::FractionalMaxPool2dOptions(2).output_size(std::vector<int64_t>{5, 4})._random_samples(c.get("samples")));
  EXPECT_TRUE(pool->_random_samples.is_same(c.get("samples")));
  EXPECT_EQ(pool->named_buffers().size(), 1u);
  auto [y, idx] = pool->forward_with_indices(c.get("x"));
  FW_EXPECT_CLOSE(y, c.get("y"), 1e-12, 1e-12);
  EXPECT_TRUE(fw::equal(idx, c.get("indices")));
  FW_EXPECT_CLOSE(pool(c.get("x")), c.get("y"), 1e-12, 1e-12);
  std::ostringstream os;
  os << *pool;
  EXPECT_EQ(os.str(), "fw::nn::FractionalMaxPool2d()");
  nn::FractionalMaxPool3d pool3(nn::FractionalMaxPool3dOptions(2).output_ratio(0.5));
  EXPECT_EQ(pool3(fw::randn({2, 3, 8, 8, 10})).sizes().vec(), (std::vector<int64_t>{2, 3, 4, 4, 5}));
  std::ostringstream os3;
  os3 << *pool3;
  EXPECT_EQ(os3.str(), "fw::nn::FractionalMaxPool3d()");
  // In a Sequential, through AnyModule.
  nn::Sequential seq(nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(3).output_size(4)), nn::Flatten());
  EXPECT_EQ(seq->forward(fw::randn({2, 3, 10, 10})).sizes().vec(), (std::vector<int64_t>{2, 48}));
  EXPECT_ERROR(nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(2)),
               "[FractionalMaxPool2d] requires specifying either an output size, or a pooling ratio");
  EXPECT_ERROR(nn::FractionalMaxPool2d(nn::FractionalMaxPool2dOptions(2).output_size(3).output_ratio(0.5)),
               "[FractionalMaxPool2d] only one of output_size and output_ratio may be specified");
  EXPECT_ERROR(nn::FractionalMaxPool3d(nn::FractionalMaxPool3dOptions(2).output_ratio(std::vector<double>{0.5, 1.0, 0.5})),
               "[FractionalMaxPool3d] output_ratio must be between 0 and 1 (got [0.5, 1, 0.5])");
}

TEST(FractionalMaxPool, Errors) {
  Tensor x = fw::randn({1, 2, 6, 6});
  Tensor s = fw::rand({1, 2, 2});
  EXPECT_ERROR(fw::fractional_max_pool2d(x, {4, 4}, {4, 3}, s),
               "[fractional_max_pool2d] pool height 4 too large relative to input height 6");
  EXPECT_ERROR(fw::fractional_max_pool2d(x, {2, 4}, {3, 4}, s),
               "[fractional_max_pool2d] pool width 4 too large relative to input width 6");
  EXPECT_ERROR(fw::fractional_max_pool3d(fw::randn({1, 1, 4, 6, 6}), {3, 2, 2}, {3, 2, 2}, fw::rand({1, 1, 3})),
               "[fractional_max_pool3d] pool time 3 too large relative to input time 4");
  EXPECT_ERROR(fw::fractional_max_pool2d(fw::randn({6, 6}), {2, 2}, {3, 3}, s),
               "[fractional_max_pool2d] Expected 3D or 4D tensor, but got: [6, 6]");
  EXPECT_ERROR(fw::fractional_max_pool2d(fw::randn({1, 2, 0, 6}), {2, 2}, {3, 3}, s),
               "Expected input to have non-zero size for non-batch dimensions");
  EXPECT_ERROR(fw::fractional_max_pool2d(x, {2, 2}, {3, 3}, fw::rand({1, 3, 2})),
               "[fractional_max_pool2d] expected _random_samples of shape [1, 2, 2] (batch, channels, 2), got [1, 3, 2]");
  EXPECT_ERROR(fw::fractional_max_pool2d(x, {2, 2}, {3, 3}, fw::full({1, 2, 2}, 1.5)),
               "[fractional_max_pool2d] _random_samples must lie in [0, 1], got a value of 1.5");
  EXPECT_ERROR(fw::fractional_max_pool2d(x, {2, 2}, {3, 3}, fw::full({1, 2, 2}, NAN)),
               "_random_samples must lie in [0, 1], got a value of nan");
  EXPECT_ERROR(fw::fractional_max_pool2d(x.to(fw::kLong), {2, 2}, {3, 3}, s),
               "[fractional_max_pool2d] expected a floating point input, got int64");
  EXPECT_ERROR(fw::fractional_max_pool2d(x, {2, 0}, {3, 3}, s), "[fractional_max_pool2d] kernel_size must be positive");
  EXPECT_ERROR(F::fractional_max_pool2d(x, F::FractionalMaxPool2dFuncOptions(2)),
               "[fractional_max_pool2d] requires specifying either an output_size or an output_ratio");
}

TEST(InterpolateAntialias, MatchesPyTorch) {
  for (const Case& c : load("antialias")) {
    SCOPED_TRACE(c.name);
    auto o = F::InterpolateFuncOptions().antialias(true).align_corners(c.flag("align"));
    if (c.opt("mode") == "bilinear") o.mode(fw::kBilinear);
    else o.mode(fw::kBicubic);
    if (!c.none("size")) o.size(c.ints("size"));
    if (!c.none("scale")) {
      std::vector<double> f;
      std::stringstream ss(c.opt("scale"));
      for (std::string e; std::getline(ss, e, ',');) f.push_back(std::stod(e));
      o.scale_factor(f);
    }
    check_values_and_grad(c, [&](const Tensor& x) { return F::interpolate(x, o); });
  }
}

TEST(InterpolateAntialias, Properties) {
  // A constant image stays constant (the weights are normalised), at any scale.
  Tensor ones = fw::ones({1, 1, 13, 9});
  for (auto mode : {F::InterpolateFuncOptions::mode_t(fw::kBilinear), F::InterpolateFuncOptions::mode_t(fw::kBicubic)})
    for (std::vector<int64_t> size : {std::vector<int64_t>{3, 2}, {13, 9}, {30, 20}, {1, 1}})
      FW_EXPECT_CLOSE(F::interpolate(ones, F::InterpolateFuncOptions().size(size).mode(mode).antialias(true)),
                      fw::ones({1, 1, size[0], size[1]}), 1e-6, 1e-6);
  // Downsampling by an integer factor with bilinear antialias averages with a triangle filter:
  // halving a 1-D ramp keeps it a ramp through the centres of the input pairs.
  Tensor ramp = fw::arange(8).to(fw::kDouble).reshape({1, 1, 1, 8});
  Tensor half = F::interpolate(ramp, F::InterpolateFuncOptions().size(std::vector<int64_t>{1, 4}).mode(fw::kBilinear).antialias(true));
  // Interior outputs are exact centres (1.5, 3.5); edge outputs are renormalised at the border.
  FW_EXPECT_CLOSE(half.flatten().narrow(0, 1, 2), fw::tensor(std::vector<double>{2.5, 4.5}, fw::kDouble), 1e-12, 1e-12);
}

TEST(FractionalAndAntialias, UnderCompile) {
  const Case c = load("fractional2d").front();
  Tensor s = c.get("samples");
  auto f = [&](const Tensor& x) {
    Tensor a = F::interpolate(x, F::InterpolateFuncOptions().size(std::vector<int64_t>{6, 6}).mode(fw::kBicubic).antialias(true));
    return std::get<0>(fw::fractional_max_pool2d(a.relu() + 1, {2, 2}, {4, 3}, s));
  };
  auto compiled = fw::compile(f);
  Tensor x = c.get("x").to(fw::kFloat);
  Tensor xe = x.clone().requires_grad_(true), xc = x.clone().requires_grad_(true);
  Tensor ye = f(xe), yc = compiled(xc);
  FW_EXPECT_CLOSE(yc, ye, 1e-5, 1e-5);
  ye.sum().backward();
  yc.sum().backward();
  FW_EXPECT_CLOSE(xc.grad(), xe.grad(), 1e-5, 1e-5);
}

TEST(GridSample, MatchesPyTorch) {
  int n = 0;
  for (const Case& c : load("grid_sample")) {
    SCOPED_TRACE(c.name);
    F::GridSampleFuncOptions o;
    const std::string mode = c.opt("mode"), padding = c.opt("padding");
    if (mode == "nearest") o.mode(fw::kNearest);
    else if (mode == "bicubic") o.mode(fw::kBicubic);
    if (padding == "border") o.padding_mode(fw::kBorder);
    else if (padding == "reflection") o.padding_mode(fw::kReflection);
    o.align_corners(c.flag("align"));
    Tensor x = c.get("x").clone().requires_grad_(true), grid = c.get("grid").clone().requires_grad_(true);
    Tensor y = F::grid_sample(x, grid, o);
    FW_EXPECT_CLOSE(y, c.get("y"), 1e-10, 1e-10);
    // nearest does not differentiate through the grid: its gradient is unused (PyTorch: zeros).
    auto g = fw::autograd::grad({(y * c.get("g")).sum()}, {x, grid}, {}, std::nullopt, false, true);
    FW_EXPECT_CLOSE(g[0], c.get("grad.x"), 1e-10, 1e-10);
    FW_EXPECT_CLOSE(g[1].defined() ? g[1] : fw::zeros_like(grid), c.get("grad.grid"), 1e-9, 1e-9);
    n++;
  }
  EXPECT_EQ(n, 22);
}

TEST(GridSample, AffineGridMatchesPyTorch) {
  for (const Case& c : load("affine_grid")) {
    SCOPED_TRACE(c.name);
    auto size = c.ints("size");
    check_values_and_grad(c, [&](const Tensor& theta) { return F::affine_grid(theta, size, c.flag("align")); });
  }
}

TEST(GridSample, IdentityWarpAndErrors) {
  // The identity affine grid samples the input back exactly (bilinear, align_corners either way).
  Tensor x = fw::randn({2, 3, 5, 7}, fw::kDouble);
  Tensor theta = fw::tensor(std::vector<double>{1, 0, 0, 0, 1, 0}, fw::kDouble).reshape({1, 2, 3}).expand({2, 2, 3});
  for (bool align : {false, true}) {
    Tensor grid = F::affine_grid(theta, {2, 3, 5, 7}, align);
    FW_EXPECT_CLOSE(F::grid_sample(x, grid, F::GridSampleFuncOptions().align_corners(align)), x, 1e-12, 1e-12);
  }
  // gumbel_softmax: a distribution per row; hard gives one-hot rows whose gradient is the soft one's.
  Tensor logits = fw::randn({4, 6}).requires_grad_(true);
  Tensor soft = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().tau(0.5));
  FW_EXPECT_CLOSE(soft.sum(1), fw::ones({4}), 1e-5, 1e-5);
  Tensor hard = F::gumbel_softmax(logits, F::GumbelSoftmaxFuncOptions().hard(true));
  FW_EXPECT_CLOSE(hard.sum(1), fw::ones({4}), 0, 0);
  EXPECT_TRUE(fw::equal(hard.eq(1).sum(1), fw::ones({4}, fw::kLong)));
  hard.select(1, 0).sum().backward();
  EXPECT_TRUE(logits.grad().defined());
  EXPECT_ERROR(F::grid_sample(fw::randn({1, 1, 2, 2, 2}), fw::zeros({1, 1, 1, 1, 3}),
                              F::GridSampleFuncOptions().mode(fw::kBicubic)),
               "[grid_sample] bicubic interpolation only supports 4D input");
  EXPECT_ERROR(F::grid_sample(fw::randn({1, 1, 2, 2}), fw::zeros({2, 1, 1, 2})),
               "[grid_sample] expected grid and input to have same batch size");
  EXPECT_ERROR(F::grid_sample(fw::randn({1, 1, 2, 2}), fw::zeros({1, 1, 1, 3})),
               "[grid_sample] expected grid to have size 2 in last dimension");
  EXPECT_ERROR(F::affine_grid(fw::zeros({1, 2, 2}), {1, 1, 3, 3}),
               "[affine_grid] Expected a batch of 2D affine matrices of shape Nx2x3 for size [1, 1, 3, 3]. Got [1, 2, 2].");
}
