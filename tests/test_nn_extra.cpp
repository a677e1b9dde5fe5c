// The extra nn layers (nn/layers_extra.cpp, InstanceNorm/LRN in nn/normalization.cpp, ParameterList
// and ParameterDict in nn/container.cpp): values and gradients against PyTorch
// (tests/fixtures/gen_nn_extra.py), libtorch's pretty_print strings, parameters, default init,
// error messages and gradcheck of the new functionals.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <fw/fw.h>

#include "tests/fixture.h"

namespace nn = fw::nn;
namespace F = fw::nn::functional;
using fw::Tensor;
using fw::autograd::variable_list;

namespace {

// ---- fixture loading (tests/fixtures/nn_extra.txt, float64 values)

struct Fixtures {
  std::map<std::string, Tensor> t;
  std::map<std::string, std::map<std::string, std::string>> o;
};

const Fixtures& fx() {
  static const Fixtures f = [] {
    Fixtures r;
    std::ifstream in(std::string(FW_FIXTURE_DIR) + "/nn_extra.txt");
    EXPECT_TRUE(in.good()) << "missing tests/fixtures/nn_extra.txt";
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream is(line);
      std::string kind, key;
      is >> kind >> key;
      if (kind == "o") {
        auto& m = r.o[key];
        for (std::string kv; is >> kv;) m[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
        continue;
      }
      int64_t nd;
      is >> nd;
      std::vector<int64_t> sizes(static_cast<size_t>(nd));
      int64_t n = 1;
      for (auto& v : sizes) {
        is >> v;
        n *= v;
      }
      std::vector<double> vals(static_cast<size_t>(n));
      for (auto& v : vals) is >> v;
      r.t[key] = fw::tensor(vals, fw::kDouble).reshape(sizes);
    }
    return r;
  }();
  return f;
}

Tensor T(const std::string& key) {
  auto it = fx().t.find(key);
  EXPECT_TRUE(it != fx().t.end()) << "no fixture tensor " << key;
  return it == fx().t.end() ? Tensor() : it->second.clone();
}
bool has(const std::string& key) { return fx().t.count(key) > 0; }
Tensor L(const std::string& key) { return T(key).to(fw::kLong); }

// Cases whose key starts with `prefix` ("interp." -> the options of every interp case).
std::vector<std::pair<std::string, std::map<std::string, std::string>>> cases(const std::string& prefix) {
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> r;
  for (const auto& [k, v] : fx().o)
    if (k.rfind(prefix, 0) == 0) r.emplace_back(k, v);
  EXPECT_FALSE(r.empty()) << "no fixture cases " << prefix;
  return r;
}

template <class T_>
std::vector<T_> list_of(const std::string& s) {
  std::vector<T_> r;
  std::stringstream ss(s);
  for (std::string e; std::getline(ss, e, ',');) r.push_back(T_(std::stod(e)));
  return r;
}
double num(const std::map<std::string, std::string>& o, const std::string& k, double def) {
  return o.count(k) ? std::stod(o.at(k)) : def;
}

// Runs f(x) with x = fixture "<key>.x" (requires grad), compares y and d sum(y * g) / dx.
void check_value_and_grad(const std::string& key, const std::function<Tensor(const Tensor&)>& f) {
  SCOPED_TRACE(key);
  Tensor x = T(key + ".x").requires_grad_(true);
  Tensor y = f(x);
  FW_EXPECT_CLOSE(y, T(key + ".y"));
  (y * T(key + ".g")).sum().backward();
  FW_EXPECT_CLOSE(x.grad(), T(key + ".grad.x"));
}

std::string printed(const nn::Module& m) {
  std::ostringstream s;
  m.pretty_print(s);
  return s.str();
}

// Expects `fn` to throw fw::Error whose message contains `fragment`.
template <class Fn>
void expect_error(Fn&& fn, const std::string& fragment) {
  try {
    fn();
    ADD_FAILURE() << "expected an error containing: " << fragment;
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

Tensor leaf(std::vector<int64_t> shape, uint64_t seed) {
  fw::manual_seed(seed);
  return fw::randn(shape, fw::kDouble).requires_grad_(true);
}

void gradcheck(const std::string& name, const std::function<variable_list(const variable_list&)>& fn,
               const variable_list& inputs) {
  try {
    EXPECT_TRUE(fw::autograd::gradcheck(fn, inputs)) << name;
  } catch (const std::exception& e) {
    ADD_FAILURE() << name << ": " << e.what();
  }
}
void gradcheck1(const std::string& name, const std::function<Tensor(const Tensor&)>& f, const Tensor& x) {
  gradcheck(name, [f](const variable_list& v) { return variable_list{f(v[0])}; }, {x});
}

F::InterpolateFuncOptions interp_options(const std::map<std::string, std::string>& o) {
  F::InterpolateFuncOptions r;
  const std::string& m = o.at("mode");
  if (m == "nearest") r.mode(fw::kNearest);
  if (m == "nearest-exact") r.mode(fw::kNearestExact);
  if (m == "linear") r.mode(fw::kLinear);
  if (m == "bilinear") r.mode(fw::kBilinear);
  if (m == "bicubic") r.mode(fw::kBicubic);
  if (m == "trilinear") r.mode(fw::kTrilinear);
  if (m == "area") r.mode(fw::kArea);
  if (o.count("size")) r.size(list_of<int64_t>(o.at("size")));
  if (o.count("scale")) r.scale_factor(list_of<double>(o.at("scale")));
  if (o.count("align")) r.align_corners(o.at("align") == "1");
  return r;
}

}  // namespace

// ---- interpolate and Upsample

TEST(NnExtraInterpolate, MatchesPyTorchValuesAndGradients) {
  for (const auto& [key, o] : cases("interp.")) {
    auto opts = interp_options(o);
    check_value_and_grad(key, [&](const Tensor& x) { return F::interpolate(x, opts); });
  }
}

TEST(NnExtraInterpolate, Float32AndIntegerInputs) {
  Tensor x = T("interp.bicubic_up.x").to(fw::kFloat);
  Tensor y = F::interpolate(x, interp_options(fx().o.at("interp.bicubic_up")));
  EXPECT_EQ(y.dtype(), fw::kFloat);
  FW_EXPECT_CLOSE(y, T("interp.bicubic_up.y").to(fw::kFloat));
  // Nearest modes gather, so integer inputs keep their values.
  Tensor xi = fw::arange(24, fw::kLong).reshape({1, 2, 3, 4, 1});
  Tensor yi = F::interpolate(xi, F::InterpolateFuncOptions().size(std::vector<int64_t>{3, 8, 2}));
  EXPECT_EQ(yi.dtype(), fw::kLong);
  EXPECT_EQ(yi.sizes(), (std::vector<int64_t>{1, 2, 3, 8, 2}));
  EXPECT_EQ(yi.index({0, 1, 2, 7, 1}).item<int64_t>(), 23);
  EXPECT_EQ(yi.index({0, 0, 1, 2, 0}).item<int64_t>(), 5);
}

TEST(NnExtraInterpolate, Errors) {
  Tensor x4 = fw::ones({1, 1, 2, 2}), x5 = fw::ones({1, 1, 2, 2, 2});
  auto sized = [](std::vector<int64_t> s) { return F::InterpolateFuncOptions().size(s); };
  expect_error([&] { F::interpolate(x4, sized({4, 4}).mode(fw::kTrilinear)); },
               "[interpolate] Got 4D input, but trilinear mode needs 5D input");
  expect_error([&] { F::interpolate(x5, sized({4, 4, 4}).mode(fw::kBicubic)); },
               "[interpolate] Got 5D input, but bicubic mode needs 4D input");
  expect_error([&] { F::interpolate(x5, sized({4, 4, 4}).mode(fw::kBilinear)); },
               "[interpolate] Got 5D input, but bilinear mode needs 4D input");
  expect_error([&] { F::interpolate(fw::ones({1, 1, 2, 2}, fw::kLong), sized({3, 3}).mode(fw::kBicubic)); },
               "[interpolate] mode 'bicubic' needs a floating point input, got int64");
  expect_error([&] { F::interpolate(fw::ones({1, 1, 1, 2, 2, 2}), sized({2})); },
               "[interpolate] expected a 3-D (N, C, W), 4-D (N, C, H, W) or 5-D (N, C, D, H, W) input, got 6-D");
  expect_error([&] { F::interpolate(x5, sized({4, 4})); },
               "[interpolate] size shape must match input shape. Input is 3D, size is 2");
  expect_error([&] { F::interpolate(x5, sized({4, 0, 4})); },
               "[interpolate] Input and output sizes should be greater than 0");
  expect_error([&] { F::interpolate(x4, sized({3, 3}).mode(fw::kNearest).antialias(true)); },
               "[interpolate] Anti-alias option is only supported for bilinear and bicubic modes (with 4-D input), "
               "got mode 'nearest' and 4-D input");
  expect_error([&] { F::interpolate(x5, sized({3, 3, 3}).mode(fw::kTrilinear).antialias(true)); },
               "[interpolate] Anti-alias option is only supported for bilinear and bicubic modes");
}

TEST(NnExtraInterpolate, SeparablePathPassesGradcheck) {
  Tensor x = leaf({1, 2, 3, 4}, 1), v = leaf({1, 1, 2, 3, 2}, 2);
  gradcheck1("bicubic", [](const Tensor& t) {
    return F::interpolate(t, F::InterpolateFuncOptions().size(std::vector<int64_t>{5, 3}).mode(fw::kBicubic));
  }, x);
  gradcheck1("bicubic align", [](const Tensor& t) {
    return F::interpolate(t, F::InterpolateFuncOptions().scale_factor(std::vector<double>{1.5}).mode(fw::kBicubic)
                                 .align_corners(true));
  }, x);
  gradcheck1("trilinear", [](const Tensor& t) {
    return F::interpolate(t, F::InterpolateFuncOptions().size(std::vector<int64_t>{3, 2, 4}).mode(fw::kTrilinear));
  }, v);
  gradcheck1("nearest 3d", [](const Tensor& t) {
    return F::interpolate(t, F::InterpolateFuncOptions().size(std::vector<int64_t>{3, 5, 1}));
  }, v);
  gradcheck1("area 3d", [](const Tensor& t) {
    return F::interpolate(t, F::InterpolateFuncOptions().size(std::vector<int64_t>{1, 2, 2}).mode(fw::kArea));
  }, v);
}

TEST(NnExtraUpsample, ForwardsToInterpolateAndPrintsLikeLibtorch) {
  nn::Upsample up(nn::UpsampleOptions().size(std::vector<int64_t>{7, 9}).mode(fw::kBicubic).align_corners(false));
  FW_EXPECT_CLOSE(up(T("interp.bicubic_up.x")), T("interp.bicubic_up.y"));
  nn::Upsample tri(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0, 1.5, 0.5}).mode(fw::kTrilinear)
                       .align_corners(false));
  FW_EXPECT_CLOSE(tri(T("interp.trilinear_scale.x")), T("interp.trilinear_scale.y"));
  nn::Upsample near(nn::UpsampleOptions().scale_factor(std::vector<double>{2.0}));
  FW_EXPECT_CLOSE(near(T("interp.nearest1d_up.x")), T("interp.nearest1d_up.y"));
  EXPECT_EQ(printed(*near), "fw::nn::Upsample(scale_factor=[2], mode=kNearest)");
  EXPECT_EQ(printed(*up), "fw::nn::Upsample(size=[7, 9], mode=kBicubic)");
  EXPECT_EQ(printed(*tri), "fw::nn::Upsample(scale_factor=[2, 1.5, 0.5], mode=kTrilinear)");
  EXPECT_TRUE(up->parameters().empty());
  auto copy = std::dynamic_pointer_cast<nn::UpsampleImpl>(up->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->options.size(), (std::vector<int64_t>{7, 9}));
}

// ---- pixel shuffle

TEST(NnExtraPixelShuffle, MatchesPyTorchAndRoundTrips) {
  nn::PixelShuffle ps(2);
  nn::PixelUnshuffle pu(nn::PixelUnshuffleOptions(2));
  Tensor x = T("shuffle.x");
  FW_EXPECT_CLOSE(ps(x), T("shuffle.y"));
  FW_EXPECT_CLOSE(pu(ps(x)), x);
  FW_EXPECT_CLOSE(pu(T("unshuffle.x")), T("unshuffle.y"));
  FW_EXPECT_CLOSE(F::pixel_shuffle(T("unshuffle.y"), 2), T("unshuffle.x"));
  EXPECT_EQ(printed(*ps), "fw::nn::PixelShuffle(upscale_factor=2)");
  EXPECT_EQ(printed(*pu), "fw::nn::PixelUnshuffle(downscale_factor=2)");
  gradcheck1("pixel_shuffle", [](const Tensor& t) { return F::pixel_shuffle(t, 2); }, leaf({2, 8, 2, 3}, 3));
  gradcheck1("pixel_unshuffle", [](const Tensor& t) { return F::pixel_unshuffle(t, 3); }, leaf({1, 3, 3, 6}, 4));
}

TEST(NnExtraPixelShuffle, Errors) {
  expect_error([] { F::pixel_shuffle(fw::ones({1, 5, 2, 2}), 2); },
               "[pixel_shuffle] expects its input's 'channel' dimension to be divisible by the square of "
               "upscale_factor, but input.size(-3)=5 is not divisible by 4");
  expect_error([] { F::pixel_shuffle(fw::ones({4, 2}), 2); },
               "[pixel_shuffle] expects input to have at least 3 dimensions, but got input with 2 dimension(s)");
  expect_error([] { F::pixel_shuffle(fw::ones({1, 4, 2, 2}), 0); },
               "[pixel_shuffle] expects a positive upscale_factor, but got 0");
  expect_error([] { F::pixel_unshuffle(fw::ones({1, 1, 5, 4}), 2); },
               "[pixel_unshuffle] expects height to be divisible by downscale_factor, but input.size(-2)=5");
  expect_error([] { F::pixel_unshuffle(fw::ones({1, 1, 4, 3}), 2); },
               "[pixel_unshuffle] expects width to be divisible by downscale_factor, but input.size(-1)=3");
}

// ---- padding modules

TEST(NnExtraPadding, MatchesPyTorchValuesAndGradients) {
  std::map<std::string, std::function<Tensor(const Tensor&)>> mods = {
      {"reflect1d", nn::ReflectionPad1d(nn::ReflectionPad1dOptions({2, 1}))},
      {"reflect2d", nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 2, 2, 0}))},
      {"reflect3d", nn::ReflectionPad3d(1)},
      {"replicate1d", nn::ReplicationPad1d(nn::ReplicationPad1dOptions({3, 1}))},
      {"replicate2d", nn::ReplicationPad2d(nn::ReplicationPad2dOptions({1, 0, 2, 3}))},
      {"replicate3d", nn::ReplicationPad3d(nn::ReplicationPad3dOptions({1, 2, 0, 1, 2, 1}))},
      {"zero2d", nn::ZeroPad2d(nn::ZeroPad2dOptions({1, 2, 0, 1}))},
      {"zero2d_crop", nn::ZeroPad2d(nn::ZeroPad2dOptions({-1, 2, 1, -1}))},
      {"constant1d", nn::ConstantPad1d(nn::ConstantPad1dOptions({2, 3}, 3.5))},
      {"constant2d", nn::ConstantPad2d(1, -2.0)},
      {"constant3d", nn::ConstantPad3d(nn::ConstantPad3dOptions({0, 1, 1, 0, 2, 2}, 0.25))},
  };
  int checked = 0;
  for (const auto& [name, m] : mods) {
    check_value_and_grad("pad." + name, m);
    checked++;
  }
  EXPECT_EQ(checked, 11);
}

TEST(NnExtraPadding, PrettyPrintAndOptions) {
  EXPECT_EQ(printed(*nn::ReflectionPad2d(nn::ReflectionPad2dOptions({1, 2, 3, 4}))),
            "fw::nn::ReflectionPad2d(padding=[1, 2, 3, 4])");
  EXPECT_EQ(printed(*nn::ReflectionPad1d(2)), "fw::nn::ReflectionPad1d(padding=[2, 2])");
  EXPECT_EQ(printed(*nn::ReplicationPad3d(1)), "fw::nn::ReplicationPad3d(padding=[1, 1, 1, 1, 1, 1])");
  EXPECT_EQ(printed(*nn::ZeroPad2d(nn::ZeroPad2dOptions({1, 1, 2, 0}))), "fw::nn::ZeroPad2d(padding=[1, 1, 2, 0])");
  EXPECT_EQ(printed(*nn::ConstantPad1d(nn::ConstantPad1dOptions({3, 1}, 3.5))),
            "fw::nn::ConstantPad1d(padding=[3, 1], value=3.5)");
  EXPECT_EQ(printed(*nn::ConstantPad2d(2, 0.0)), "fw::nn::ConstantPad2d(padding=[2, 2, 2, 2], value=0)");
  nn::ReflectionPad2d m(1);
  EXPECT_TRUE(m->parameters().empty());
  EXPECT_EQ(m->options.padding(), fw::ExpandingArray<4>(1));
  expect_error([] { nn::ReflectionPad1dOptions({1, 2, 3}); }, "[ExpandingArray] expected 2 values (or one), but got 3");
  expect_error([] { nn::ReflectionPad1d(3)(fw::ones({1, 1, 3})); }, "[pad]");
}

// ---- InstanceNorm

TEST(NnExtraInstanceNorm, MatchesPyTorchTrainAndEval) {
  struct Case {
    std::string name;
    int d;
    nn::InstanceNormOptions o;
  };
  std::vector<Case> cs = {
      {"in1d", 1, nn::InstanceNormOptions(4)},
      {"in1d_affine_unbatched", 1, nn::InstanceNormOptions(4).affine(true)},
      {"in2d_affine_track", 2, nn::InstanceNormOptions(3).affine(true).track_running_stats(true).momentum(0.3)},
      {"in3d_track", 3, nn::InstanceNormOptions(2).track_running_stats(true).eps(1e-3)},
  };
  for (const auto& c : cs) {
    SCOPED_TRACE(c.name);
    std::shared_ptr<nn::Module> m;
    std::function<Tensor(const Tensor&)> fwd;
    if (c.d == 1) {
      nn::InstanceNorm1d i(c.o);
      m = i.ptr(), fwd = i;
    } else if (c.d == 2) {
      nn::InstanceNorm2d i(c.o);
      m = i.ptr(), fwd = i;
    } else {
      nn::InstanceNorm3d i(c.o);
      m = i.ptr(), fwd = i;
    }
    m->to(fw::kDouble);
    const std::string k = "inorm." + c.name;
    {
      fw::NoGradGuard ng;
      for (auto& p : m->named_parameters()) p.value().copy_(T(k + "." + p.key()));
    }
    Tensor x = T(k + ".x").requires_grad_(true);
    Tensor y = fwd(x);
    FW_EXPECT_CLOSE(y, T(k + ".y"));
    (y * T(k + ".g")).sum().backward();
    FW_EXPECT_CLOSE(x.grad(), T(k + ".grad.x"));
    for (auto& p : m->named_parameters()) FW_EXPECT_CLOSE(p.value().grad(), T(k + ".grad." + p.key()));
    if (c.o.track_running_stats()) {
      FW_EXPECT_CLOSE(m->named_buffers()["running_mean"], T(k + ".running_mean"));
      FW_EXPECT_CLOSE(m->named_buffers()["running_var"], T(k + ".running_var"));
    }
    m->eval();
    FW_EXPECT_CLOSE(fwd(T(k + ".xe")), T(k + ".ye"));
  }
}

TEST(NnExtraInstanceNorm, RegistrationDefaultsPrintAndErrors) {
  nn::InstanceNormOptions d(5);
  EXPECT_EQ(d.eps(), 1e-5);
  EXPECT_EQ(d.momentum(), 0.1);
  EXPECT_FALSE(d.affine());
  EXPECT_FALSE(d.track_running_stats());
  nn::InstanceNorm2d plain(5);
  EXPECT_TRUE(plain->parameters().empty());
  EXPECT_TRUE(plain->buffers().empty());
  nn::InstanceNorm1d full(nn::InstanceNorm1dOptions(3).affine(true).track_running_stats(true));
  EXPECT_EQ(full->named_parameters().keys(), (std::vector<std::string>{"weight", "bias"}));
  EXPECT_EQ(full->named_buffers().keys(), (std::vector<std::string>{"running_mean", "running_var",
                                                                    "num_batches_tracked"}));
  FW_EXPECT_CLOSE(full->weight, fw::ones({3}));
  FW_EXPECT_CLOSE(full->bias, fw::zeros({3}));
  EXPECT_EQ(printed(*plain), "fw::nn::InstanceNorm2d(5, eps=1e-05, momentum=0.1, affine=false, "
                             "track_running_stats=false)");
  EXPECT_EQ(printed(*full), "fw::nn::InstanceNorm1d(3, eps=1e-05, momentum=0.1, affine=true, "
                            "track_running_stats=true)");
  expect_error([&] { plain(fw::ones({2, 5})); }, "[InstanceNorm2d] expected 3D or 4D input (got 2D input");
  expect_error([&] { full(fw::ones({2, 4, 3})); },
               "[InstanceNorm1d] expected input's size at dim=1 to match num_features (3), but got: 4");
  auto copy = std::dynamic_pointer_cast<nn::InstanceNorm1dImpl>(full->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_FALSE(copy->weight.is_same(full->weight));
  FW_EXPECT_CLOSE(copy->weight, full->weight);
}

// ---- LocalResponseNorm / CrossMapLRN2d

TEST(NnExtraLRN, MatchesPyTorch) {
  for (const auto& [key, o] : cases("lrn.")) {
    nn::LocalResponseNorm m(nn::LocalResponseNormOptions(int64_t(num(o, "size", 0)))
                                .alpha(num(o, "alpha", 1e-4))
                                .beta(num(o, "beta", 0.75))
                                .k(num(o, "k", 1.0)));
    check_value_and_grad(key, m);
  }
  for (const auto& [key, o] : cases("crossmap.")) {
    SCOPED_TRACE(key);
    nn::CrossMapLRN2d m(nn::CrossMapLRN2dOptions(int64_t(num(o, "size", 0)))
                            .alpha(num(o, "alpha", 0))
                            .beta(num(o, "beta", 0))
                            .k(int64_t(num(o, "k", 0))));
    FW_EXPECT_CLOSE(m(T(key + ".x")), T(key + ".y"));
  }
  gradcheck1("local_response_norm", [](const Tensor& t) {
    return F::local_response_norm(t, F::LocalResponseNormFuncOptions(3).alpha(0.5).beta(0.9).k(1.5));
  }, leaf({2, 4, 3}, 5));
  nn::CrossMapLRN2d cm(nn::CrossMapLRN2dOptions(3).alpha(0.4));
  gradcheck1("CrossMapLRN2d", [cm](const Tensor& t) mutable { return cm(t); }, leaf({1, 5, 2, 2}, 6));
}

TEST(NnExtraLRN, PrintAndErrors) {
  EXPECT_EQ(printed(*nn::LocalResponseNorm(2)), "fw::nn::LocalResponseNorm(2, alpha=0.0001, beta=0.75, k=1)");
  EXPECT_EQ(printed(*nn::CrossMapLRN2d(nn::CrossMapLRN2dOptions(3).k(2))),
            "fw::nn::CrossMapLRN2d(3, alpha=0.0001, beta=0.75, k=2)");
  expect_error([] { F::local_response_norm(fw::ones({2, 3}), 2); },
               "[local_response_norm] Expected 3D or higher dimensionality input (got 2 dimensions");
  expect_error([] { nn::CrossMapLRN2d(3)(fw::ones({2, 3, 4})); },
               "[CrossMapLRN2d] Expected input to be 4D, got 3D instead");
}

// ---- fold / unfold

TEST(NnExtraFold, MatchesPyTorchValuesAndGradients) {
  auto e2 = [](const std::map<std::string, std::string>& o, const char* k) {
    return fw::ExpandingArray<2>(list_of<int64_t>(o.at(k)));
  };
  for (const auto& [key, o] : cases("unfold.")) {
    nn::Unfold m(nn::UnfoldOptions(e2(o, "kernel")).dilation(e2(o, "dilation")).padding(e2(o, "padding"))
                     .stride(e2(o, "stride")));
    check_value_and_grad(key, m);
  }
  for (const auto& [key, o] : cases("fold.")) {
    nn::Fold m(nn::FoldOptions(e2(o, "output"), e2(o, "kernel")).dilation(e2(o, "dilation"))
                   .padding(e2(o, "padding")).stride(e2(o, "stride")));
    check_value_and_grad(key, m);
  }
}

TEST(NnExtraFold, AdjointGradcheckPrintAndErrors) {
  // fold is unfold's adjoint: <unfold(x), c> == <x, fold(c)>.
  auto uo = F::UnfoldFuncOptions({2, 3}).dilation({1, 2}).padding(1).stride({2, 1});
  Tensor x = leaf({2, 3, 5, 6}, 7).detach(), u = F::unfold(x, uo);
  Tensor c = fw::randn(u.sizes(), fw::kDouble);
  auto fo = F::FoldFuncOptions({5, 6}, {2, 3}).dilation({1, 2}).padding(1).stride({2, 1});
  EXPECT_NEAR((u * c).sum().item<double>(), (x * F::fold(c, fo)).sum().item<double>(), 1e-9);
  gradcheck1("unfold", [uo](const Tensor& t) { return F::unfold(t, uo); }, leaf({1, 2, 4, 5}, 8));
  gradcheck1("fold", [fo](const Tensor& t) { return F::fold(t, fo); }, leaf({1, 12, int64_t(u.size(2))}, 9));
  EXPECT_EQ(printed(*nn::Fold(nn::FoldOptions({3, 3}, {2, 2}))),
            "fw::nn::Fold(output_size=[3, 3], kernel_size=[2, 2], dilation=[1, 1], padding=[0, 0], stride=[1, 1])");
  EXPECT_EQ(printed(*nn::Unfold(nn::UnfoldOptions({2, 4}).dilation(2).padding({2, 1}).stride(2))),
            "fw::nn::Unfold(kernel_size=[2, 4], dilation=[2, 2], padding=[2, 1], stride=[2, 2])");
  expect_error([] { F::fold(fw::ones({1, 5, 4}), F::FoldFuncOptions({3, 3}, {2, 2})); },
               "[fold] Expected size of input's dimension 1 to be divisible by the product of kernel_size, but got "
               "input.size(1)=5 and kernel_size=[2, 2]");
  expect_error([] { F::fold(fw::ones({1, 4, 5}), F::FoldFuncOptions({3, 3}, {2, 2})); },
               "expected size of input's dimension 2 to match the calculated number of sliding blocks 2 * 2 = 4, "
               "but got input.size(2)=5");
  expect_error([] { F::unfold(fw::ones({3, 4}), F::UnfoldFuncOptions(2)); },
               "[unfold] Expected 3D or 4D (batch mode) tensor");
  expect_error([] { F::unfold(fw::ones({1, 1, 2, 2}), F::UnfoldFuncOptions(3)); },
               "calculated shape of the array of sliding blocks is non-positive");
  expect_error([] { F::unfold(fw::ones({1, 1, 4, 4}), F::UnfoldFuncOptions(2).stride(0)); },
               "[unfold] stride should be greater than zero, but got stride=[0, 0]");
}

// ---- EmbeddingBag

namespace {

nn::EmbeddingBagOptions bag_options(const std::map<std::string, std::string>& o) {
  nn::EmbeddingBagOptions r(10, 3);
  const std::string& m = o.at("mode");
  if (m == "sum") r.mode(fw::kSum);
  if (m == "max") r.mode(fw::kMax);
  if (o.count("padding_idx")) r.padding_idx(int64_t(std::stod(o.at("padding_idx"))));
  if (o.count("max_norm")) r.max_norm(std::stod(o.at("max_norm")));
  r.norm_type(num(o, "norm_type", 2.0));
  r.scale_grad_by_freq(o.count("scale_grad_by_freq") && o.at("scale_grad_by_freq") == "1");
  return r;
}

}  // namespace

TEST(NnExtraEmbeddingBag, MatchesPyTorchValuesAndGradients) {
  for (const auto& [key, o] : cases("bag.")) {
    SCOPED_TRACE(key);
    nn::EmbeddingBag m(bag_options(o));
    m->to(fw::kDouble);
    {
      fw::NoGradGuard ng;
      m->weight.copy_(T(key + ".weight"));
    }
    Tensor offsets = has(key + ".offsets") ? L(key + ".offsets") : Tensor();
    Tensor psw = has(key + ".psw") ? T(key + ".psw").requires_grad_(true) : Tensor();
    Tensor y = m(L(key + ".input"), offsets, psw);
    FW_EXPECT_CLOSE(y, T(key + ".y"));
    FW_EXPECT_CLOSE(m->weight, T(key + ".weight_after"));
    (y * T(key + ".g")).sum().backward();
    FW_EXPECT_CLOSE(m->weight.grad(), T(key + ".grad.weight"));
    if (psw.defined()) FW_EXPECT_CLOSE(psw.grad(), T(key + ".grad.psw"));
  }
}

TEST(NnExtraEmbeddingBag, IncludeLastOffsetEqualsOffsetsWithoutTheEnd) {
  Tensor w = leaf({10, 3}, 10).detach();
  Tensor input = fw::tensor({1, 2, 4, 5, 4, 3, 2, 9, 6});
  for (auto mode : {F::EmbeddingBagFuncOptions::mode_t(fw::kSum), F::EmbeddingBagFuncOptions::mode_t(fw::kMean),
                    F::EmbeddingBagFuncOptions::mode_t(fw::kMax)}) {
    SCOPED_TRACE(fw::mode_name(mode));
    Tensor a = F::embedding_bag(input, w, F::EmbeddingBagFuncOptions().offsets(fw::tensor({0, 3, 3, 7, 8}))
                                              .include_last_offset(true).mode(mode));
    Tensor b = F::embedding_bag(input.slice(0, 0, 8), w, F::EmbeddingBagFuncOptions().offsets(fw::tensor({0, 3, 3, 7}))
                                                            .mode(mode));
    EXPECT_EQ(a.sizes(), (std::vector<int64_t>{4, 3}));
    FW_EXPECT_CLOSE(a, b);
    FW_EXPECT_CLOSE(a.select(0, 1), fw::zeros({3}, fw::kDouble));  // the empty bag
    FW_EXPECT_CLOSE(a.select(0, 3), w.select(0, 9));                 // [7, 8) holds index 9 only
  }
  // A 2-D input with include_last_offset: the row starts are the offsets, so the last row is dropped (as PyTorch).
  Tensor two = F::embedding_bag(fw::tensor({{1, 2}, {3, 4}, {5, 6}}), w,
                                F::EmbeddingBagFuncOptions().mode(fw::kSum).include_last_offset(true));
  FW_EXPECT_CLOSE(two, fw::stack({w.select(0, 1) + w.select(0, 2), w.select(0, 3) + w.select(0, 4)}));
}

TEST(NnExtraEmbeddingBag, Gradcheck) {
  Tensor w = leaf({6, 2}, 11), psw = leaf({7}, 12);
  Tensor input = fw::tensor({1, 0, 5, 5, 2, 3, 1}), offsets = fw::tensor({0, 2, 2, 5});
  for (auto mode : {F::EmbeddingBagFuncOptions::mode_t(fw::kMean), F::EmbeddingBagFuncOptions::mode_t(fw::kMax)}) {
    gradcheck("embedding_bag " + fw::mode_name(mode), [=](const variable_list& v) {
      return variable_list{F::embedding_bag(input, v[0], F::EmbeddingBagFuncOptions().offsets(offsets).mode(mode)
                                                             .padding_idx(2))};
    }, {w});
  }
  gradcheck("embedding_bag sum psw last offset", [=](const variable_list& v) {
    return variable_list{F::embedding_bag(input, v[0], F::EmbeddingBagFuncOptions().offsets(fw::tensor({0, 2, 6}))
                                                           .mode(fw::kSum).per_sample_weights(v[1])
                                                           .include_last_offset(true))};
  }, {w, psw});
}

TEST(NnExtraEmbeddingBag, ModuleDefaultsInitPrintAndFromPretrained) {
  nn::EmbeddingBagOptions d(5, 2);
  EXPECT_TRUE(std::holds_alternative<fw::enumtype::kMean>(d.mode()));
  EXPECT_EQ(d.norm_type(), 2.0);
  EXPECT_FALSE(d.include_last_offset() || d.sparse() || d.scale_grad_by_freq() || d.max_norm() || d.padding_idx());
  fw::manual_seed(0);
  nn::EmbeddingBag big(nn::EmbeddingBagOptions(1000, 50).padding_idx(-3));
  EXPECT_EQ(big->named_parameters().keys(), std::vector<std::string>{"weight"});
  EXPECT_EQ(big->weight.sizes(), (std::vector<int64_t>{1000, 50}));
  EXPECT_TRUE(big->weight.requires_grad());
  EXPECT_EQ(*big->options.padding_idx(), 997);
  EXPECT_EQ(big->weight.select(0, 997).abs().sum().item<double>(), 0.0);
  Tensor rest = big->weight.slice(0, 0, 990);
  EXPECT_NEAR(rest.mean().item<double>(), 0.0, 0.02);   // N(0, 1): 49,500 samples
  EXPECT_NEAR(rest.std().item<double>(), 1.0, 0.02);
  EXPECT_EQ(printed(*nn::EmbeddingBag(4, 3)), "fw::nn::EmbeddingBag(num_embeddings=4, embedding_dim=3)");
  EXPECT_EQ(printed(*nn::EmbeddingBag(nn::EmbeddingBagOptions(4, 3).max_norm(2).norm_type(1).scale_grad_by_freq(true)
                                          .mode(fw::kSum).include_last_offset(true).padding_idx(1))),
            "fw::nn::EmbeddingBag(num_embeddings=4, embedding_dim=3, max_norm=2, norm_type=1, "
            "scale_grad_by_freq=true, mode=kSum, include_last_offset=true, padding_idx=1)");
  Tensor table = fw::arange(6, fw::kFloat).reshape({3, 2});
  auto frozen = nn::EmbeddingBag::from_pretrained(table, nn::EmbeddingBagFromPretrainedOptions().mode(fw::kMax));
  EXPECT_FALSE(frozen->weight.requires_grad());
  EXPECT_TRUE(frozen->weight.is_same(table) || frozen->weight.data_ptr() == table.data_ptr());
  FW_EXPECT_CLOSE(frozen(fw::tensor({{0, 2}, {1, 1}})), fw::tensor({{4.0f, 5.0f}, {2.0f, 3.0f}}));
  auto trainable = nn::EmbeddingBag::from_pretrained(table.clone(), nn::EmbeddingBagFromPretrainedOptions().freeze(false));
  EXPECT_TRUE(trainable->weight.requires_grad());
  auto copy = std::dynamic_pointer_cast<nn::EmbeddingBagImpl>(trainable->clone());
  ASSERT_NE(copy, nullptr);
  FW_EXPECT_CLOSE(copy->weight, trainable->weight);
  EXPECT_NE(copy->weight.data_ptr(), trainable->weight.data_ptr());
}

// Embedding built from a given table (options._weight / from_pretrained): clone() owns its table.
TEST(NnExtraEmbeddingBag, EmbeddingCloneOwnsItsTable) {
  Tensor table = fw::arange(6, fw::kFloat).reshape({3, 2});
  auto e = nn::Embedding::from_pretrained(table.clone(), nn::EmbeddingFromPretrainedOptions().freeze(false));
  auto copy = std::dynamic_pointer_cast<nn::EmbeddingImpl>(e->clone());
  ASSERT_NE(copy, nullptr);
  FW_EXPECT_CLOSE(copy->weight, e->weight);
  EXPECT_NE(copy->weight.data_ptr(), e->weight.data_ptr());
  EXPECT_TRUE(copy->weight.requires_grad());
  {
    fw::NoGradGuard ng;
    copy->weight.fill_(7);
  }
  FW_EXPECT_CLOSE(e->weight, table);  // the original is unchanged
  EXPECT_EQ(copy->named_parameters().size(), 1u);
}

TEST(NnExtraEmbeddingBag, Errors) {
  nn::EmbeddingBag m(5, 2);
  expect_error([&] { m(fw::tensor({0, 5, 1}), fw::tensor({0})); },
               "[embedding_bag] index 5 at position 1 is out of range for 5 embeddings");
  expect_error([&] { m(fw::tensor({0, -1}), fw::tensor({0})); },
               "[embedding_bag] index -1 at position 1 is out of range for 5 embeddings");
  expect_error([&] { m(fw::tensor({0, 1, 2, 3}), fw::tensor({0, 3, 1})); },
               "[embedding_bag] offsets have to be non-decreasing, but offsets[2]=1 < offsets[1]=3");
  expect_error([&] { m(fw::tensor({0, 1}), fw::tensor({1, 2})); }, "[embedding_bag] offsets[0] has to be 0");
  expect_error([&] { m(fw::tensor({0, 1}), fw::tensor({0, 3})); },
               "[embedding_bag] offsets[-1] can not be greater than input's length 2 but got offsets[-1] of 3");
  expect_error([&] { m(fw::tensor({0, 1})); }, "[embedding_bag] offsets has to be a 1D Tensor but got null");
  expect_error([&] { m(fw::tensor({{0, 1}}), fw::tensor({0})); },
               "[embedding_bag] If input is 2D, then offsets has to be null");
  expect_error([&] { m(fw::zeros({1, 1, 2}, fw::kLong)); },
               "[embedding_bag] input has to be 1D or 2D Tensor, but got Tensor of dimension 3");
  expect_error([&] { m(fw::zeros({2})); }, "[embedding_bag] expected input of dtype int64 or int32, got float32");
  expect_error([&] { m(fw::tensor({{0, 1}}), Tensor(), fw::ones({2})); },
               "[embedding_bag] If per_sample_weights ([2]) is not null, then it must have the same shape as the "
               "input ([1, 2])");
  expect_error([&] { m(fw::tensor({{0, 1}}), Tensor(), fw::ones({1, 2})); },
               "per_sample_weights is only supported for mode='kSum' (got mode='kMean')");
  expect_error([] { nn::EmbeddingBag(nn::EmbeddingBagOptions(3, 2).sparse(true)); },
               "[EmbeddingBag] sparse=true is not supported: fw has no sparse gradients");
  expect_error([] { nn::EmbeddingBag(nn::EmbeddingBagOptions(3, 2).padding_idx(3)); },
               "[EmbeddingBag] padding_idx must be within num_embeddings (got 3 for 3 embeddings)");
  expect_error([] { nn::EmbeddingBag(nn::EmbeddingBagOptions(3, 2).mode(fw::kMax).scale_grad_by_freq(true))(
                        fw::tensor({{0, 1}})); },
               "[embedding_bag] max mode does not support scaling the gradient by the frequency");
  expect_error([] { nn::EmbeddingBag(nn::EmbeddingBagOptions(3, 2)._weight(fw::ones({2, 2}))); },
               "[EmbeddingBag] Shape of weight does not match num_embeddings and embedding_dim (got [2, 2]");
  expect_error([] { nn::EmbeddingBag::from_pretrained(fw::ones({3})); },
               "[EmbeddingBag::from_pretrained] Embeddings parameter is expected to be 2-dimensional");
}

// ---- dropouts

TEST(NnExtraDropout, AlphaDropoutKeepsAffineStructureAndSeluStatistics) {
  const double p = 0.3, alpha = 1.7580993408473766, a = 1.0 / std::sqrt((alpha * alpha * p + 1) * (1 - p));
  fw::manual_seed(1);
  Tensor x = fw::selu(fw::randn({200000}, fw::kDouble));
  nn::AlphaDropout m(p);
  Tensor y = m(x);
  Tensor kept = (y - (x * a + alpha * a * p)).abs().lt(1e-12);
  Tensor dropped = (y - alpha * a * (p - 1)).abs().lt(1e-12);
  EXPECT_TRUE(kept.logical_or(dropped).all().item<bool>());
  EXPECT_NEAR(dropped.to(fw::kDouble).mean().item<double>(), p, 0.005);
  EXPECT_NEAR(y.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(y.std().item<double>(), 1.0, 0.01);
  m->eval();
  EXPECT_TRUE(fw::equal(m(x), x));
  // The functional's training flag defaults to false, as libtorch's.
  EXPECT_TRUE(fw::equal(F::alpha_dropout(x, F::AlphaDropoutFuncOptions().p(0.5)), x));
  FW_EXPECT_CLOSE(F::alpha_dropout(x.slice(0, 0, 5), F::AlphaDropoutFuncOptions().p(1).training(true)),
                  fw::zeros({5}, fw::kDouble));
}

TEST(NnExtraDropout, FeatureDropoutsDropWholeChannels) {
  fw::manual_seed(2);
  Tensor x = fw::rand({4, 8, 3, 2, 2}, fw::kDouble) + 1;
  Tensor y = nn::Dropout3d(0.5)(x);
  Tensor per_channel = y.flatten(2);
  Tensor zero = per_channel.eq(0).all(2), scaled = (per_channel - x.flatten(2) * 2).abs().lt(1e-12).all(2);
  EXPECT_TRUE(zero.logical_or(scaled).all().item<bool>());
  EXPECT_TRUE(zero.any().item<bool>() && scaled.any().item<bool>());
  Tensor fy = nn::FeatureAlphaDropout(0.5)(x).flatten(2);
  const double alpha = 1.7580993408473766, a = 1.0 / std::sqrt((alpha * alpha * 0.5 + 1) * 0.5);
  Tensor dropped = (fy - alpha * a * (0.5 - 1)).abs().lt(1e-12).all(2);
  Tensor kept = (fy - (x.flatten(2) * a + alpha * a * 0.5)).abs().lt(1e-12).all(2);
  EXPECT_TRUE(dropped.logical_or(kept).all().item<bool>());
  EXPECT_TRUE(dropped.any().item<bool>() && kept.any().item<bool>());
  Tensor unbatched = F::dropout3d(x.select(0, 0), F::Dropout3dFuncOptions().p(0.5));
  EXPECT_EQ(unbatched.sizes(), x.select(0, 0).sizes());
  expect_error([] { F::dropout3d(fw::ones({2, 3, 4})); }, "[dropout3d] expected a 4-D (C, D, H, W) or 5-D");
  expect_error([] { F::feature_alpha_dropout(fw::ones({3}), F::FeatureAlphaDropoutFuncOptions().training(true)); },
               "[feature_alpha_dropout] Feature dropout requires at least 2 dimensions in the input");
  expect_error([] { nn::AlphaDropout(1.5); }, "[AlphaDropout] dropout probability has to be between 0 and 1, but got 1.5");
  expect_error([] { F::alpha_dropout(fw::ones({3}), F::AlphaDropoutFuncOptions().p(-0.1)); },
               "[alpha_dropout] dropout probability has to be between 0 and 1, but got -0.1");
  EXPECT_EQ(printed(*nn::AlphaDropout()), "fw::nn::AlphaDropout(p=0.5, inplace=false)");
  EXPECT_EQ(printed(*nn::FeatureAlphaDropout(nn::FeatureAlphaDropoutOptions(0.2).inplace(true))),
            "fw::nn::FeatureAlphaDropout(p=0.2, inplace=true)");
  EXPECT_EQ(printed(*nn::Dropout3d(0.25)), "fw::nn::Dropout3d(p=0.25, inplace=false)");
}

// ---- one_hot

TEST(NnExtraOneHot, FunctionalMatchesTopLevel) {
  Tensor t = fw::tensor({0, 2, 1});
  Tensor want = fw::tensor({{1, 0, 0, 0}, {0, 0, 1, 0}, {0, 1, 0, 0}});
  EXPECT_TRUE(fw::equal(F::one_hot(t, 4), want));
  EXPECT_TRUE(fw::equal(F::one_hot(t), want.slice(1, 0, 3)));
  expect_error([&] { F::one_hot(t, 2); }, "[one_hot] Class values must be smaller than num_classes.");
}

// ---- ParameterList / ParameterDict

TEST(NnExtraParameterContainers, ParameterListRegistersAndTrains) {
  struct NetImpl : nn::Cloneable<NetImpl> {
    NetImpl() { reset(); }
    void reset() override {
      list = register_module("list", nn::ParameterList(fw::ones({2}).requires_grad_(true),
                                                       fw::zeros({2, 3}).requires_grad_(true)));
    }
    nn::ParameterList list{nullptr};
  };
  auto net = std::make_shared<NetImpl>();
  auto& list = *net->list;
  list.append(fw::full({3}, 2.0));  // keeps requires_grad = false, as libtorch
  EXPECT_EQ(list.size(), 3u);
  EXPECT_FALSE(list.is_empty());
  EXPECT_EQ(net->named_parameters().keys(), (std::vector<std::string>{"list.0", "list.1", "list.2"}));
  EXPECT_TRUE(list[0].is_same(net->named_parameters()["list.0"]));
  EXPECT_TRUE(list.at(1).requires_grad());
  EXPECT_FALSE(list[2].requires_grad());
  expect_error([&] { list.at(3); }, "[ParameterList] Index 3 is out of range (ParameterList has 3 parameters)");
  nn::ParameterList other(fw::ones({1}));
  list.extend(*other);
  list += std::vector<Tensor>{fw::ones({4})};
  EXPECT_EQ(list.size(), 5u);
  int n = 0;
  for (const auto& item : list) EXPECT_EQ(item.key(), std::to_string(n++));
  EXPECT_EQ(printed(*other), "fw::nn::ParameterList(\n(0): Parameter containing: [Float of size [1]]\n)");

  fw::optim::SGD opt(net->parameters(), fw::optim::SGDOptions(0.5));
  (list[0].sum() * 2 + list[1].sum()).backward();
  opt.step();
  FW_EXPECT_CLOSE(list[0], fw::zeros({2}));
  FW_EXPECT_CLOSE(list[1], fw::full({2, 3}, -0.5));

  auto copy = std::dynamic_pointer_cast<NetImpl>(net->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->list->size(), 5u);
  EXPECT_FALSE(copy->list[1].is_same(list[1]));
  FW_EXPECT_CLOSE(copy->list[1], list[1]);
  EXPECT_TRUE(copy->list[1].requires_grad());
  EXPECT_FALSE(copy->list[2].requires_grad());
}

TEST(NnExtraParameterContainers, ParameterDictApi) {
  nn::ParameterDict dict;
  dict->insert("w", fw::ones({2, 2}).requires_grad_(true));
  dict->insert("b", fw::zeros({2}));
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"w", "b"}));
  EXPECT_EQ(dict->size(), 2u);
  EXPECT_FALSE(dict->empty());
  EXPECT_TRUE(dict->contains("b"));
  EXPECT_TRUE(dict->get("w").requires_grad());
  EXPECT_FALSE(dict["b"].requires_grad());
  EXPECT_EQ(dict->named_parameters().keys(), (std::vector<std::string>{"w", "b"}));
  EXPECT_EQ(dict->items()[1].first, "b");
  EXPECT_EQ(dict->values().size(), 2u);
  EXPECT_EQ(printed(*dict), "fw::nn::ParameterDict(\n(w): Parameter containing: [Float of size [2, 2]]\n"
                            "(b): Parameter containing: [Float of size [2]]\n)");
  expect_error([&] { dict->insert("w", fw::ones({1})); }, "Parameter 'w' already defined");
  expect_error([&] { dict->get("nope"); }, "[ParameterDict] no parameter named 'nope'");
  Tensor b = dict->pop("b");
  EXPECT_EQ(b.sizes(), (std::vector<int64_t>{2}));
  EXPECT_FALSE(dict->contains("b"));
  EXPECT_EQ(dict->parameters().size(), 1u);
  expect_error([&] { dict->pop("b"); }, "[ParameterDict] no parameter named 'b'");
  fw::OrderedDict<std::string, Tensor> more;
  more.insert("w", fw::full({2, 2}, 3.0));
  more.insert("c", fw::ones({5}));
  dict->update(more);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"w", "c"}));
  FW_EXPECT_CLOSE(dict["w"], fw::full({2, 2}, 3.0));
  nn::ParameterDict from(more);
  EXPECT_EQ(from->keys(), (std::vector<std::string>{"w", "c"}));
  auto copy = std::dynamic_pointer_cast<nn::ParameterDictImpl>(dict->clone());
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->keys(), dict->keys());
  EXPECT_FALSE(copy->get("c").is_same(dict->get("c")));
  dict->clear();
  EXPECT_TRUE(dict->empty());
  EXPECT_TRUE(dict->parameters().empty());
}

// ---- AdaptiveLogSoftmaxWithLoss (gen_nn_extra.py: "asm.*", float64)

TEST(NnExtraAdaptiveLogSoftmax, MatchesPyTorch) {
  for (const auto& [key, o] : cases("asm.")) {
    SCOPED_TRACE(key);
    const bool head_bias = o.at("head_bias") == "1";
    nn::AdaptiveLogSoftmaxWithLoss m(
        nn::AdaptiveLogSoftmaxWithLossOptions(16, 20, {5, 12}).div_value(num(o, "div_value", 4)).head_bias(head_bias));
    m->to(fw::kDouble);
    EXPECT_EQ(m->shortlist_size, 5);
    EXPECT_EQ(m->n_clusters, 2);
    EXPECT_EQ(m->head_size, 7);
    EXPECT_EQ(m->head->bias.defined(), head_bias);
    // State dict names as in PyTorch: head.weight, tail.<cluster>.<layer>.weight.
    auto params = m->named_parameters();
    {
      fw::NoGradGuard ng;
      for (const auto& item : params) {
        SCOPED_TRACE(item.key());
        Tensor want = T(key + "." + item.key());
        Tensor param = item.value();
        ASSERT_EQ(param.sizes(), want.sizes());
        param.copy_(want);
      }
    }
    EXPECT_EQ(params.size(), head_bias ? 6u : 5u);
    Tensor x = T(key + ".x").requires_grad_(true);
    Tensor target = L(key + ".target");
    nn::ASMoutput r = m(x, target);
    FW_EXPECT_CLOSE(r.output, T(key + ".output"));
    EXPECT_NEAR(r.loss, T(key + ".loss").item<double>(), 1e-12);
    FW_EXPECT_CLOSE(m->log_prob(x), T(key + ".log_prob"));
    // Each row of log_prob is a distribution over the 20 classes.
    FW_EXPECT_CLOSE(m->log_prob(x).exp().sum(1), fw::ones({9}, fw::kDouble));
    Tensor x2 = T(key + ".x2");
    EXPECT_TRUE(fw::equal(m->predict(x2), L(key + ".predict")));
    // The fixture's rows mix shortlist and tail predictions, so predict's mixed path ran.
    Tensor head_best = L(key + ".predict_head");
    EXPECT_TRUE((head_best >= 5).any().item<bool>() && (head_best < 5).any().item<bool>());
    (r.output * T(key + ".g")).sum().backward();
    FW_EXPECT_CLOSE(x.grad(), T(key + ".grad.x"));
    FW_EXPECT_CLOSE(m->head->weight.grad(), T(key + ".grad.head.weight"));
    FW_EXPECT_CLOSE(params["tail.1.0.weight"].grad(), T(key + ".grad.tail.1.0.weight"));
    // Unbatched: a 1-D input with a 0-dim target.
    nn::ASMoutput one = m(x.detach()[3], target[3]);
    EXPECT_EQ(one.output.dim(), 0);
    EXPECT_NEAR(one.output.item<double>(), T(key + ".single").item<double>(), 1e-12);
    FW_EXPECT_CLOSE(m(x.detach(), L(key + ".short_target")).output, T(key + ".short_output"));
  }
}

TEST(NnExtraAdaptiveLogSoftmax, TrainsAndRejectsBadInput) {
  fw::manual_seed(1);
  nn::AdaptiveLogSoftmaxWithLoss m(8, 12, std::vector<int64_t>{3, 7});
  // libtorch's defaults: div_value 4 (tail hidden sizes 2 and 0), no head bias.
  EXPECT_EQ(m->head->weight.sizes(), (std::vector<int64_t>{5, 8}));
  EXPECT_FALSE(m->head->bias.defined());
  Tensor x = fw::randn({64, 8});
  Tensor target = fw::randint(0, 12, {64});
  fw::optim::Adam opt(m->parameters(), fw::optim::AdamOptions(0.05));
  double first = 0, last = 0;
  for (int step = 0; step < 60; step++) {
    opt.zero_grad();
    nn::ASMoutput r = m(x, target);
    (-r.output).mean().backward();
    opt.step();
    if (step == 0) first = r.loss;
    last = r.loss;
  }
  EXPECT_LT(last, first);
  auto clone = std::dynamic_pointer_cast<nn::AdaptiveLogSoftmaxWithLossImpl>(m->clone());
  ASSERT_NE(clone, nullptr);
  EXPECT_TRUE(fw::allclose(clone->log_prob(x), m->log_prob(x)));
  EXPECT_EQ(printed(*m).rfind("fw::nn::AdaptiveLogSoftmaxWithLoss", 0), 0u);
  expect_error([&] { m(x, fw::full({64}, 12, fw::kLong)); }, "Target values should be in [0, 11], but values in range [12, 12]");
  expect_error([&] { m(x, fw::zeros({63}, fw::kLong)); }, "should have the same size in the batch dimension");
  expect_error([&] { m(x, fw::zeros({64}, fw::kFloat)); }, "(an integer dtype), got Float");
  expect_error([&] { m(x, fw::zeros({64, 1}, fw::kLong)); }, "0D or 1D target tensor expected");
  expect_error([&] { m(x[0], fw::zeros({1}, fw::kLong)); }, "1D target tensor expects 2D input tensors");
  expect_error([&] { m(fw::randn({64, 5}), target); }, "expected input with 8 features");
  expect_error([&] { nn::AdaptiveLogSoftmaxWithLoss(nn::AdaptiveLogSoftmaxWithLossOptions(8, 12, {7, 3})); }, "cutoffs should be a sequence of unique");
  expect_error([&] { nn::AdaptiveLogSoftmaxWithLoss(nn::AdaptiveLogSoftmaxWithLossOptions(8, 12, {3, 12})); }, "between 1 and n_classes-1");
  expect_error([&] { nn::AdaptiveLogSoftmaxWithLoss(nn::AdaptiveLogSoftmaxWithLossOptions(8, 12, {})); }, "length larger than 0");
  expect_error([&] { nn::AdaptiveLogSoftmaxWithLoss(nn::AdaptiveLogSoftmaxWithLossOptions(8, 12, {3}).div_value(0)); },
               "div_value should not be equal to 0");
}
