// libtorch spellings that programs written for libtorch use, with the values PyTorch 1.13 gives
// (printed by python3-torch for the inputs below): reductions along an int dim, triangles and
// diagonals, repeat_interleave, new_* factories, in-place helpers, availability queries,
// optional/nullopt, GradMode, and the save/load forms for shared_ptr modules, a tensor handle and a
// tensor list.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fw/fw.h>

#include "tests/fixture.h"

namespace {

TEST(ApiCompat, VarAndStdAlongAnIntDim) {
  // An int dim must not convert to var(bool unbiased) and reduce everything.
  fw::Tensor a = fw::tensor({{1.0f, 2.0f, 3.0f}, {4.0f, 6.0f, 8.0f}});
  FW_EXPECT_CLOSE(a.var(0), fw::tensor({4.5f, 8.0f, 12.5f}));
  FW_EXPECT_CLOSE(a.std(1), fw::tensor({1.0f, 2.0f}));
  FW_EXPECT_CLOSE(fw::var(a, 1), fw::tensor({1.0f, 4.0f}));
  FW_EXPECT_CLOSE(a.var(1, /*unbiased=*/false), fw::tensor({2.0f / 3, 8.0f / 3}));
  FW_EXPECT_CLOSE(fw::std(a, 0, true, true), fw::tensor({{4.5f, 8.0f, 12.5f}}).sqrt());
  // The bool overloads still mean "all elements".
  EXPECT_NEAR(a.var(true).item<double>(), 6.8, 1e-5);  // 34 / 5
  EXPECT_NEAR(a.var(false).item<double>(), 5.6666667, 1e-5);  // 34 / 6
}

TEST(ApiCompat, TrianglesDiagonalsAndTrace) {
  fw::Tensor m = fw::arange(1.0, 13.0).view({3, 4});
  FW_EXPECT_CLOSE(m.tril(), fw::tensor({{1.0f, 0.0f, 0.0f, 0.0f}, {5.0f, 6.0f, 0.0f, 0.0f}, {9.0f, 10.0f, 11.0f, 0.0f}}));
  FW_EXPECT_CLOSE(m.triu(1), fw::tensor({{0.0f, 2.0f, 3.0f, 4.0f}, {0.0f, 0.0f, 7.0f, 8.0f}, {0.0f, 0.0f, 0.0f, 12.0f}}));
  FW_EXPECT_CLOSE(fw::tril(m, -1),
                  fw::tensor({{0.0f, 0.0f, 0.0f, 0.0f}, {5.0f, 0.0f, 0.0f, 0.0f}, {9.0f, 10.0f, 0.0f, 0.0f}}));
  FW_EXPECT_CLOSE(m.diagonal(), fw::tensor({1.0f, 6.0f, 11.0f}));
  FW_EXPECT_CLOSE(m.diagonal(1), fw::tensor({2.0f, 7.0f, 12.0f}));
  FW_EXPECT_CLOSE(m.diagonal(-1), fw::tensor({5.0f, 10.0f}));
  FW_EXPECT_CLOSE(m.diag(2), fw::tensor({3.0f, 8.0f}));
  EXPECT_EQ(m.trace().item<float>(), 18.0f);
  fw::Tensor v = fw::tensor({1.0f, 2.0f, 3.0f});
  FW_EXPECT_CLOSE(fw::diag(v, 1), fw::tensor({{0.0f, 1.0f, 0.0f, 0.0f},
                                              {0.0f, 0.0f, 2.0f, 0.0f},
                                              {0.0f, 0.0f, 0.0f, 3.0f},
                                              {0.0f, 0.0f, 0.0f, 0.0f}}));
  FW_EXPECT_CLOSE(fw::diag(v, -1), fw::tensor({{0.0f, 0.0f, 0.0f, 0.0f},
                                               {1.0f, 0.0f, 0.0f, 0.0f},
                                               {0.0f, 2.0f, 0.0f, 0.0f},
                                               {0.0f, 0.0f, 3.0f, 0.0f}}));
  // Gradients, as PyTorch: diag(x, 1).sum() -> [1, 1]; (tril(y) * w).sum() -> tril(w).
  fw::Tensor x = fw::tensor({1.0f, 2.0f}).requires_grad_(true);
  FW_EXPECT_CLOSE(fw::autograd::grad({fw::diag(x, 1).sum()}, {x})[0], fw::tensor({1.0f, 1.0f}));
  fw::Tensor y = fw::arange(1.0, 10.0).view({3, 3}).requires_grad_(true);
  fw::Tensor w = fw::arange(9.0).view({3, 3});
  FW_EXPECT_CLOSE(fw::autograd::grad({(y.tril() * w).sum()}, {y})[0],
                  fw::tensor({{0.0f, 0.0f, 0.0f}, {3.0f, 4.0f, 0.0f}, {6.0f, 7.0f, 8.0f}}));
  fw::Tensor y2 = fw::arange(1.0, 10.0).view({3, 3}).requires_grad_(true);
  FW_EXPECT_CLOSE(fw::autograd::grad({y2.trace() * 2}, {y2})[0], fw::eye(3) * 2);
  EXPECT_THROW(fw::tensor({1.0f}).tril(), fw::Error);
  EXPECT_THROW(fw::zeros({2, 2, 2}).trace(), fw::Error);
}

TEST(ApiCompat, RepeatInterleaveNewFactoriesAndInPlaceHelpers) {
  fw::Tensor t = fw::tensor({{1, 2}, {3, 4}});
  EXPECT_TRUE(fw::equal(t.repeat_interleave(2), fw::tensor({1, 1, 2, 2, 3, 3, 4, 4})));
  EXPECT_TRUE(fw::equal(t.repeat_interleave(3, 1), fw::tensor({{1, 1, 1, 2, 2, 2}, {3, 3, 3, 4, 4, 4}})));
  fw::Tensor d = fw::ones({2}, fw::kDouble);
  fw::Tensor z = d.new_zeros({3, 2});
  EXPECT_EQ(z.dtype(), fw::kDouble);
  EXPECT_EQ(z.sum().item<double>(), 0.0);
  EXPECT_EQ(d.new_full({2}, 7).sum().item<double>(), 14.0);
  EXPECT_EQ(d.new_ones({4}, fw::kFloat).dtype(), fw::kFloat);
  EXPECT_EQ(d.new_empty({5}).numel(), 5);
  EXPECT_TRUE(z.is_same_size(fw::empty({3, 2})));
  fw::Tensor p = fw::tensor({1.0f, 2.0f}), a = fw::tensor({3.0f, 4.0f}), b = fw::tensor({2.0f, 8.0f});
  p.addcmul_(a, b, 0.5);  // 1 + 3, 2 + 16
  FW_EXPECT_CLOSE(p, fw::tensor({4.0f, 18.0f}));
  p.addcdiv_(a, b, 2);  // 4 + 3, 18 + 1
  FW_EXPECT_CLOSE(p, fw::tensor({7.0f, 19.0f}));
  p.clamp_max_(10).clamp_min_(8);
  FW_EXPECT_CLOSE(p, fw::tensor({8.0f, 10.0f}));
  FW_EXPECT_CLOSE(a.max(b), fw::tensor({3.0f, 8.0f}));
  FW_EXPECT_CLOSE(a.min(b), fw::tensor({2.0f, 4.0f}));
}

// A custom dataset as libtorch programs write it (torch::optional in size()).
struct Squares : fw::data::datasets::Dataset<Squares> {
  fw::data::Example<> get(size_t i) override {
    float v = float(i);
    return {fw::tensor({v}), fw::tensor({v * v})};
  }
  fw::optional<size_t> size() const override { return 4; }
};

TEST(ApiCompat, AvailabilityQueriesOptionalAndGradMode) {
  fw::Device dev = fw::cuda::is_available() ? fw::kCUDA : fw::kCPU;
  EXPECT_TRUE(dev.is_cpu());
  EXPECT_EQ(fw::cuda::device_count(), 0);
  fw::optional<int> none = fw::nullopt;
  EXPECT_FALSE(none.has_value());
  Squares ds;
  EXPECT_EQ(*ds.size(), 4u);
  EXPECT_EQ(ds.get(3).target.item<float>(), 9.0f);
  EXPECT_TRUE(fw::GradMode::is_enabled());
  fw::GradMode::set_enabled(false);
  EXPECT_FALSE(fw::is_grad_enabled());
  fw::GradMode::set_enabled(true);
  fw::autograd::Variable v = fw::ones({2}, fw::requires_grad());
  EXPECT_TRUE(v.requires_grad());
}

struct Net : fw::nn::Module {
  Net() { fc = register_module("fc", fw::nn::Linear(3, 2)); }
  fw::nn::Linear fc{nullptr};
};

TEST(ApiCompat, SaveAndLoadSharedPtrModulesTensorsAndLists) {
  std::string dir = (std::filesystem::temp_directory_path() / ("fw_api_compat_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(dir);
  auto a = std::make_shared<Net>(), b = std::make_shared<Net>();
  fw::save(a, dir + "/net.pt");
  fw::load(b, dir + "/net.pt");
  EXPECT_TRUE(fw::equal(a->fc->weight, b->fc->weight));
  EXPECT_TRUE(fw::equal(a->fc->bias, b->fc->bias));
  fw::Tensor t = fw::arange(6.0).view({2, 3}), u;
  fw::save(t, dir + "/t.pt");
  fw::load(u, dir + "/t.pt");
  EXPECT_TRUE(fw::equal(t, u));
  std::vector<fw::Tensor> list;
  for (int i = 0; i < 12; i++) list.push_back(fw::full({i + 1}, i));  // 12 > 10: numeric, not text order
  fw::save(list, dir + "/list.pt");
  std::vector<fw::Tensor> back;
  fw::load(back, dir + "/list.pt");
  ASSERT_EQ(back.size(), 12u);
  for (int i = 0; i < 12; i++) EXPECT_TRUE(fw::equal(back[size_t(i)], list[size_t(i)])) << i;
  // A file of named tensors is not a list.
  fw::save({{"w", t}}, dir + "/named.pt");
  EXPECT_THROW(fw::load(back, dir + "/named.pt"), fw::Error);
  std::shared_ptr<Net> null;
  EXPECT_THROW(fw::save(null, dir + "/x.pt"), fw::Error);
  std::filesystem::remove_all(dir);
}

// ATen's top-level activations (values from PyTorch 1.13) and Sequential::forward<Tensor>.
TEST(ApiCompat, TopLevelActivationsAndTypedSequentialForward) {
  fw::Tensor x = fw::tensor({-1.5f, -0.25f, 0.0f, 0.3f, 2.0f});
  FW_EXPECT_CLOSE(fw::threshold(x, 0.1, -7), fw::tensor({-7.0f, -7.0f, -7.0f, 0.3f, 2.0f}));
  FW_EXPECT_CLOSE(fw::celu(x, 0.5), fw::tensor({-0.47510647773742676f, -0.19673466682434082f, 0.0f, 0.3f, 2.0f}));
  FW_EXPECT_CLOSE(fw::hardshrink(x, 0.3), fw::tensor({-1.5f, 0.0f, 0.0f, 0.0f, 2.0f}));
  FW_EXPECT_CLOSE(fw::softshrink(x, 0.3), fw::tensor({-1.2f, 0.0f, 0.0f, 0.0f, 1.7f}));
  FW_EXPECT_CLOSE(fw::prelu(x.view({1, 5}), fw::tensor({0.2f})), fw::tensor({{-0.3f, -0.05f, 0.0f, 0.3f, 2.0f}}));
  FW_EXPECT_CLOSE(fw::rrelu(x, 0.1, 0.3, false), fw::tensor({-0.3f, -0.05f, 0.0f, 0.3f, 2.0f}));
  FW_EXPECT_CLOSE(fw::glu(fw::tensor({{1.0f, 2.0f, 3.0f, 4.0f}})), fw::tensor({{0.9525741338729858f, 1.9640275239944458f}}));
  fw::nn::Sequential seq(fw::nn::Linear(5, 2), fw::nn::ReLU());
  fw::Tensor in = fw::ones({3, 5});
  FW_EXPECT_CLOSE(seq->forward<fw::Tensor>(in), seq->forward(in));
}

}  // namespace
