// Tensor behaviour outside the op table: promotion, views and aliasing, in-place rules,
// conversions, printing, allocator, random streams.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "core/op.h"
#include "core/random.h"
#include "tests/fixture.h"

using fw::Tensor;

namespace {

fw::ScalarType dtype_of(const std::string& s) {
  static const std::map<std::string, fw::ScalarType> m = {
      {"bool", fw::kBool},     {"uint8", fw::kByte},     {"int8", fw::kChar},      {"int16", fw::kShort},
      {"int32", fw::kInt},     {"int64", fw::kLong},     {"float16", fw::kHalf},   {"bfloat16", fw::kBFloat16},
      {"float32", fw::kFloat}, {"float64", fw::kDouble}, {"complex64", fw::kComplexFloat}};
  return m.at(s);
}

fw::Scalar scalar_of(const std::string& kind) {
  if (kind == "int") return fw::Scalar(3);
  if (kind == "float") return fw::Scalar(2.5);
  if (kind == "bool") return fw::Scalar(true);
  return fw::Scalar(std::complex<double>(1, 2));
}

}  // namespace

TEST(Promotion, MatchesPyTorchTable) {
  std::ifstream f(std::string(FW_FIXTURE_DIR) + "/promotion.txt");
  ASSERT_TRUE(f.good());
  std::string line;
  int checked = 0;
  while (std::getline(f, line)) {
    std::istringstream is(line);
    std::string kind;
    is >> kind;
    if (line.find("skip") != std::string::npos) continue;
    if (kind == "promote") {
      std::string a, b, r;
      is >> a >> b >> r;
      EXPECT_EQ(fw::promote_types(dtype_of(a), dtype_of(b)), dtype_of(r)) << line;
    } else {
      std::string ka, a, kb, b, r;
      is >> ka >> a >> kb >> b >> r;
      Tensor ta = ka == "dim" ? fw::ones({2}, dtype_of(a)) : fw::ones({}, dtype_of(a));
      fw::ScalarType got;
      if (kb == "zero") {
        got = fw::detail::result_type({ta, fw::ones({}, dtype_of(b))});
      } else {
        fw::Scalar s = scalar_of(b);
        got = fw::detail::result_type({ta}, &s);
      }
      EXPECT_EQ(got, dtype_of(r)) << line;
    }
    checked++;
  }
  EXPECT_GT(checked, 300);
}

TEST(Promotion, OpsFollowTheRules) {
  EXPECT_EQ((fw::ones({2}, fw::kInt) + 1.5).dtype(), fw::kFloat);
  EXPECT_EQ((fw::ones({2}, fw::kInt) / fw::ones({2}, fw::kInt)).dtype(), fw::kFloat);
  EXPECT_EQ((fw::ones({2}, fw::kBool) + fw::ones({2}, fw::kBool)).dtype(), fw::kBool);
  EXPECT_EQ(fw::ones({2}, fw::kInt).sum().dtype(), fw::kLong);
  EXPECT_EQ(fw::ones({2}, fw::kBool).sum().dtype(), fw::kLong);
  EXPECT_EQ((fw::ones({2}, fw::kHalf) * fw::ones({}, fw::kDouble)).dtype(), fw::kHalf);
  EXPECT_EQ((fw::ones({2}, fw::kHalf) * fw::ones({2}, fw::kBFloat16)).dtype(), fw::kFloat);
  EXPECT_EQ((fw::ones({2}, fw::kByte) + fw::ones({2}, fw::kChar)).dtype(), fw::kShort);
}

TEST(Views, ShareStorageAndSeeWrites) {
  Tensor a = fw::arange(12, fw::kFloat).view({3, 4});
  Tensor row = a[1];
  Tensor col = a.select(1, 2);
  Tensor tr = a.t();
  row.fill_(-1);
  EXPECT_TRUE(row.is_alias_of(a));
  EXPECT_EQ(a.index({1, 3}).item<float>(), -1.0f);
  EXPECT_EQ(col[1].item<float>(), -1.0f);
  EXPECT_EQ(tr.index({2, 1}).item<float>(), -1.0f);
  EXPECT_FALSE(tr.is_contiguous());
  EXPECT_EQ(tr.strides()[0], 1);
  EXPECT_EQ(tr.strides()[1], 4);
  Tensor c = tr.contiguous();
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_FALSE(c.is_alias_of(a));
  EXPECT_TRUE(fw::equal(c, tr));
}

TEST(Views, ReshapeCopiesOnlyWhenNeeded) {
  Tensor a = fw::arange(24, fw::kFloat).view({2, 3, 4});
  EXPECT_TRUE(a.reshape({6, 4}).is_alias_of(a));
  EXPECT_TRUE(a.transpose(0, 1).reshape({3, 2, 4}).is_alias_of(a));
  Tensor r = a.transpose(1, 2).reshape({-1});
  EXPECT_FALSE(r.is_alias_of(a));
  EXPECT_EQ(r[1].item<float>(), 4.0f);
  EXPECT_THROW(a.transpose(1, 2).view({-1}), fw::Error);
}

TEST(Views, ExpandHasZeroStrides) {
  Tensor a = fw::tensor({1.0, 2.0, 3.0}).view({3, 1});
  Tensor e = a.expand({3, 4});
  EXPECT_EQ(e.strides()[1], 0);
  EXPECT_EQ(e.sum().item<double>(), 24.0);
}

TEST(Views, AsStridedCannotLeaveStorage) {
  Tensor a = fw::ones({4});
  EXPECT_THROW(a.as_strided({2}, {4}), fw::Error);
  EXPECT_THROW(a.as_strided({1}, {1}, 4), fw::Error);
  EXPECT_NO_THROW(a.as_strided({2}, {3}));
  EXPECT_THROW(a.slice(0, 1).as_strided({2}, {3}), fw::Error);
}

TEST(InPlace, VersionCounterAndAliasing) {
  Tensor a = fw::zeros({3});
  uint32_t v = a._version();
  a.add_(1);
  EXPECT_GT(a._version(), v);
  Tensor view = a.view({3});
  uint32_t v2 = view._version();
  a.mul_(2);
  EXPECT_GT(view._version(), v2);
  // Overlapping in-place with a different layout must read the old values.
  Tensor m = fw::arange(4, fw::kFloat).view({2, 2});
  m.add_(m.t());
  FW_EXPECT_CLOSE(m, fw::tensor({{0.0f, 3.0f}, {3.0f, 6.0f}}));
}

TEST(InPlace, CastRules) {
  Tensor f = fw::ones({2});
  f.add_(fw::ones({2}, fw::kLong));  // int into float: allowed
  EXPECT_EQ(f.dtype(), fw::kFloat);
  Tensor h = fw::ones({2}, fw::kHalf);
  h.mul_(fw::full({2}, 3.0));  // float into half: same category, allowed
  EXPECT_EQ(h[0].item<float>(), 3.0f);
  Tensor i = fw::ones({2}, fw::kLong);
  EXPECT_THROW(i.div_(2), fw::Error);  // true division gives float
  EXPECT_THROW(fw::ones({2}, fw::kBool).add_(fw::ones({2}, fw::kLong)), fw::Error);
}

TEST(Assign, RvalueAssignmentWritesData) {
  Tensor a = fw::zeros({2, 3});
  a[1] = fw::ones({3});
  a.select(1, 0) = 5;
  FW_EXPECT_CLOSE(a, fw::tensor({{5.0f, 0.0f, 0.0f}, {5.0f, 1.0f, 1.0f}}));
  Tensor b = a;  // lvalue assignment rebinds
  b = fw::ones({1});
  EXPECT_EQ(a.numel(), 6);
}

TEST(Conversion, HalfAndBFloat16RoundTrip) {
  // Every finite half converts to float and back unchanged.
  for (uint32_t bits = 0; bits < 0x10000; bits++) {
    uint16_t h = uint16_t(bits);
    if ((h & 0x7c00) == 0x7c00) continue;
    fw::Half x;
    x.x = h;
    EXPECT_EQ(fw::Half(float(x)).x, h) << bits;
  }
  EXPECT_EQ(fw::Half(65520.0f).x, 0x7c00);  // rounds to inf
  EXPECT_EQ(fw::Half(1.0f).x, 0x3c00);
  EXPECT_EQ(fw::Half(5.9604645e-08f).x, 0x0001);
  EXPECT_EQ(float(fw::BFloat16(1.0f + 1.0f / 256)), 1.0f);  // ties to even
  EXPECT_EQ(float(fw::BFloat16(1.0f + 3.0f / 256)), 1.0f + 1.0f / 64);
}

TEST(Conversion, FloatToIntIsDefined) {
  Tensor f = fw::tensor({1.9, -1.9, 1e30, NAN});
  Tensor i = f.to(fw::kLong);
  EXPECT_EQ(i[0].item<int64_t>(), 1);
  EXPECT_EQ(i[1].item<int64_t>(), -1);
  EXPECT_EQ(i[2].item<int64_t>(), INT64_MIN);
  EXPECT_EQ(i[3].item<int64_t>(), INT64_MIN);
}

TEST(Access, ItemDataPtrAccessor) {
  Tensor a = fw::arange(6, fw::kFloat).view({2, 3});
  auto acc = a.accessor<float, 2>();
  EXPECT_EQ(acc[1][2], 5.0f);
  EXPECT_EQ(a.data_ptr<float>()[4], 4.0f);
  EXPECT_THROW(a.data_ptr<double>(), fw::Error);
  EXPECT_THROW(a.item(), fw::Error);
  EXPECT_THROW((a.accessor<float, 3>()), fw::Error);
  EXPECT_EQ(a.sum().item<int>(), 15);
}

TEST(Access, FromBlobWrapsWithoutCopy) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  bool freed = false;
  {
    Tensor t = fw::from_blob(buf, {2, 3}, [&](void*) { freed = true; });
    EXPECT_EQ(t.data_ptr<float>(), buf);
    t.mul_(2);
    EXPECT_EQ(buf[5], 12.0f);
  }
  EXPECT_TRUE(freed);
  int64_t ibuf[4] = {1, 2, 3, 4};
  Tensor s = fw::from_blob(ibuf, {2}, {2}, fw::kLong);
  EXPECT_EQ(s[1].item<int64_t>(), 3);
}

TEST(Tensor, NestedListsAndOptions) {
  Tensor a = fw::tensor({{1, 2}, {3, 4}});
  EXPECT_EQ(a.dtype(), fw::kLong);
  EXPECT_EQ(fw::tensor({1.5, 2.0}).dtype(), fw::kFloat);
  EXPECT_EQ(fw::tensor({true, false}).dtype(), fw::kBool);
  EXPECT_THROW(fw::tensor({{1, 2}, {3}}), fw::Error);
  Tensor z = fw::zeros({2}, fw::TensorOptions().dtype(fw::kDouble).requires_grad(true));
  EXPECT_TRUE(z.requires_grad());
  EXPECT_EQ(z.dtype(), fw::kDouble);
  EXPECT_THROW(fw::ones({2}, fw::kLong).requires_grad_(), fw::Error);
  EXPECT_THROW(fw::zeros({2}, fw::Device(fw::kCUDA)), fw::Error);
  EXPECT_EQ(fw::Device("cuda:1").index(), 1);
  EXPECT_THROW(fw::Device("tpu"), fw::Error);
}

TEST(Printing, LibtorchLayout) {
  std::ostringstream os;
  os << fw::tensor({{1, 2}, {3, 4}});
  EXPECT_EQ(os.str(), " 1  2\n 3  4\n[ CPULongType{2,2} ]");
  std::ostringstream o2;
  o2 << fw::tensor({0.5f, -1.25f});
  EXPECT_EQ(o2.str(), " 0.5000\n-1.2500\n[ CPUFloatType{2} ]");
  std::ostringstream o3;
  o3 << fw::ones({2, 1, 2});
  EXPECT_NE(o3.str().find("(1,.,.) = "), std::string::npos);
  EXPECT_NE(o3.str().find("[ CPUFloatType{2,1,2} ]"), std::string::npos);
}

TEST(Allocator, ReusesFreedBlocks) {
  void* first;
  {
    Tensor a = fw::empty({1 << 20});
    first = a.data_ptr();
  }
  Tensor b = fw::empty({1 << 20});
  EXPECT_EQ(b.data_ptr(), first);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data_ptr()) % 64, 0u);
}

TEST(Random, SeededStreamsAreIndependentOfThreads) {
  fw::manual_seed(42);
  fw::set_num_threads(1);
  Tensor a = fw::randn({100000});
  fw::manual_seed(42);
  fw::set_num_threads(2);
  Tensor b = fw::randn({100000});
  EXPECT_TRUE(fw::equal(a, b));
  Tensor c = fw::randn({100000});
  EXPECT_FALSE(fw::equal(b, c));
}

TEST(Random, Moments) {
  fw::manual_seed(1);
  Tensor n = fw::randn({200000}, fw::kDouble);
  EXPECT_NEAR(n.mean().item<double>(), 0.0, 0.01);
  EXPECT_NEAR(n.std().item<double>(), 1.0, 0.01);
  Tensor u = fw::rand({200000}, fw::kDouble);
  EXPECT_NEAR(u.mean().item<double>(), 0.5, 0.01);
  EXPECT_GE(u.min().item<double>(), 0.0);
  EXPECT_LT(u.max().item<double>(), 1.0);
  Tensor r = fw::randint(3, 7, {10000});
  EXPECT_EQ(r.min().item<int64_t>(), 3);
  EXPECT_EQ(r.max().item<int64_t>(), 6);
  Tensor p = fw::randperm(1000);
  EXPECT_TRUE(fw::equal(std::get<0>(p.sort()), fw::arange(1000)));
  Tensor b = fw::bernoulli(fw::full({100000}, 0.3));
  EXPECT_NEAR(b.mean().item<double>(), 0.3, 0.01);
}
