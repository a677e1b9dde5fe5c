// Tensor behaviour outside the op table: promotion, views and aliasing, in-place rules,
// conversions, printing, allocator, random streams.
#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>

#include "core/op.h"
#include "core/random.h"
#include "tests/fixture.h"
#include "tests/printing_cases.h"

using fw::Tensor;

namespace {

fw::ScalarType dtype_of(const std::string& s) {
  static const std::map<std::string, fw::ScalarType> m = {
      {"bool", fw::kBool},     {"uint8", fw::kByte},     {"int8", fw::kChar},      {"int16", fw::kShort},
      {"int32", fw::kInt},     {"int64", fw::kLong},     {"float16", fw::kHalf},   {"bfloat16", fw::kBFloat16},
      {"float32", fw::kFloat}, {"float64", fw::kDouble}, {"complex64", fw::kComplexFloat},
      {"complex128", fw::kComplexDouble}};
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

// Restores the default dtype when a test that changes it ends (or fails).
struct DefaultDtypeGuard {
  fw::ScalarType saved = fw::get_default_dtype();
  ~DefaultDtypeGuard() { fw::set_default_dtype(saved); }
};

TEST(Promotion, ComplexDoubleAndTheDefaultComplexDtype) {
  // toComplexType / toRealValueType
  EXPECT_EQ(fw::to_complex_type(fw::kFloat), fw::kComplexFloat);
  EXPECT_EQ(fw::to_complex_type(fw::kBFloat16), fw::kComplexFloat);
  EXPECT_EQ(fw::to_complex_type(fw::kDouble), fw::kComplexDouble);
  EXPECT_EQ(fw::to_complex_type(fw::kComplexFloat), fw::kComplexFloat);
  EXPECT_EQ(fw::to_complex_type(fw::kComplexDouble), fw::kComplexDouble);
  EXPECT_THROW(fw::to_complex_type(fw::kHalf), fw::Error);  // complex32: not an fw dtype
  EXPECT_THROW(fw::to_complex_type(fw::kLong), fw::Error);
  EXPECT_EQ(fw::to_real_value_type(fw::kComplexDouble), fw::kDouble);
  EXPECT_EQ(fw::to_real_value_type(fw::kComplexFloat), fw::kFloat);
  EXPECT_EQ(fw::to_real_value_type(fw::kInt), fw::kInt);
  // Category rules keep the tensor's precision: torch.result_type in 1.13.
  fw::Scalar j(std::complex<double>(0, 1));
  EXPECT_EQ((fw::ones({2}, fw::kDouble) * j).dtype(), fw::kComplexDouble);
  EXPECT_EQ((fw::ones({2}, fw::kFloat) * j).dtype(), fw::kComplexFloat);
  EXPECT_EQ((fw::ones({2}, fw::kFloat) + fw::ones({}, fw::kComplexDouble)).dtype(), fw::kComplexFloat);
  EXPECT_EQ((fw::ones({2}, fw::kInt) + fw::ones({}, fw::kComplexDouble)).dtype(), fw::kComplexDouble);
  EXPECT_EQ((fw::ones({2}, fw::kComplexFloat) + fw::ones({2}, fw::kDouble)).dtype(), fw::kComplexDouble);
  EXPECT_EQ((fw::ones({}, fw::kComplexFloat) + fw::ones({}, fw::kDouble)).dtype(), fw::kComplexDouble);
  EXPECT_EQ((fw::ones({2}, fw::kComplexFloat) + fw::ones({}, fw::kComplexDouble)).dtype(), fw::kComplexFloat);
  EXPECT_EQ(j.type(), fw::kComplexFloat);
  {
    // torch.set_default_dtype(torch.float64) makes Python complex numbers complex128.
    DefaultDtypeGuard g;
    fw::set_default_dtype(fw::kDouble);
    EXPECT_EQ(j.type(), fw::kComplexDouble);
    EXPECT_EQ((fw::ones({2}, fw::kInt) * j).dtype(), fw::kComplexDouble);
    EXPECT_EQ((fw::ones({2}, fw::kFloat) * j).dtype(), fw::kComplexFloat);
    EXPECT_EQ(fw::scalar_tensor(j).dtype(), fw::kComplexDouble);
  }
  EXPECT_EQ(fw::scalar_tensor(j).dtype(), fw::kComplexFloat);
}

TEST(Tensor, ComplexDoubleBasics) {
  using C = std::complex<double>;
  EXPECT_EQ(fw::element_size(fw::kComplexDouble), 16u);
  EXPECT_STREQ(fw::dtype_name(fw::kComplex128), "ComplexDouble");
  EXPECT_STREQ(fw::dtype_str(fw::kComplexDouble), "complex128");
  EXPECT_TRUE(fw::is_complex(fw::kComplexDouble));
  EXPECT_FALSE(fw::is_floating_point(fw::kComplexDouble));
  // Values that float32 cannot hold survive: 1 + 1e-12.
  const C v0(1 + 1e-12, -2.5), v1(0.1, 3);
  Tensor z = fw::tensor(std::vector<C>{v0, v1});
  ASSERT_EQ(z.dtype(), fw::kComplexDouble);
  EXPECT_EQ(z[0].item<C>(), v0);
  EXPECT_TRUE(z[1].item().isComplex());
  EXPECT_EQ(z[1].item().toComplexDouble(), v1);
  EXPECT_EQ(z[0].item<std::complex<float>>(), std::complex<float>(1, -2.5f));
  EXPECT_EQ(z.data_ptr<C>()[1], v1);
  EXPECT_THROW(z.data_ptr<std::complex<float>>(), fw::Error);

  // view_as_real: a float64 view with a trailing dim of 2 over the same storage, and back.
  Tensor r = fw::view_as_real(z);
  EXPECT_EQ(r.dtype(), fw::kDouble);
  EXPECT_EQ(r.sizes().vec(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(r.strides().vec(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(r.data_ptr(), z.data_ptr());
  EXPECT_EQ(r[0][0].item<double>(), 1 + 1e-12);
  r[1][1] = 7.0;
  EXPECT_EQ(z[1].item<C>(), C(0.1, 7));
  Tensor back = fw::view_as_complex(r);
  EXPECT_EQ(back.dtype(), fw::kComplexDouble);
  EXPECT_EQ(back.data_ptr(), z.data_ptr());
  EXPECT_TRUE(fw::equal(back, z));
  Tensor zt = fw::view_as_real(fw::tensor(std::vector<C>{v0, v1, v0, v1}).view({2, 2}).t());
  EXPECT_EQ(zt.strides().vec(), (std::vector<int64_t>{2, 4, 1}));
  EXPECT_EQ(fw::real(z).dtype(), fw::kDouble);
  EXPECT_EQ(fw::imag(z)[0].item<double>(), -2.5);
  EXPECT_EQ(fw::imag(z).data_ptr(), static_cast<char*>(z.data_ptr()) + 8);

  // to(): complex64 rounds each part; real dtypes, bool included, take the real part (torch 1.13:
  // torch.tensor([1j]).bool() is False), while nonzero and truth tests look at both parts.
  Tensor c64 = z.to(fw::kComplexFloat);
  EXPECT_EQ(c64.dtype(), fw::kComplexFloat);
  EXPECT_EQ(c64[0].item<C>(), C(1, -2.5));
  EXPECT_EQ(c64.to(fw::kComplexDouble)[1].item<C>(), C(double(0.1f), 7));
  EXPECT_EQ(z.to(fw::kDouble)[0].item<double>(), 1 + 1e-12);
  EXPECT_EQ(z.to(fw::kLong)[0].item<int64_t>(), 1);
  Tensor flags = fw::tensor(std::vector<C>{C(0, 0), C(0, -1), C(2, 0)}).to(fw::kBool);
  EXPECT_TRUE(fw::equal(flags, fw::tensor({false, false, true})));
  EXPECT_EQ(fw::nonzero(fw::tensor(std::vector<C>{C(0, 0), C(0, -1), C(2, 0)})).numel(), 2);
  EXPECT_TRUE(fw::tensor(std::vector<C>{C(0, -1)}).item<bool>());
  Tensor up = fw::arange(3, fw::kDouble).to(fw::kComplexDouble);
  EXPECT_EQ(up[2].item<C>(), C(2, 0));

  // fill_, zeros/ones and arithmetic in double precision.
  Tensor f = fw::empty({3}, fw::kComplexDouble);
  f.fill_(C(0.1, 0.2));
  EXPECT_EQ(f[2].item<C>(), C(0.1, 0.2));
  EXPECT_EQ(fw::full({2}, C(1, -1), fw::kComplexDouble)[1].item<C>(), C(1, -1));
  EXPECT_EQ(fw::ones({2}, fw::kComplexDouble)[0].item<C>(), C(1, 0));
  // (FMA contraction may differ between fw and this file: compare to 1e-15 relative.)
  auto near = [](C a, C b) { return std::abs(a - b) <= 1e-15 * std::max(1.0, std::abs(b)); };
  EXPECT_PRED2(near, (z * z)[0].item<C>(), v0 * v0);
  EXPECT_PRED2(near, (z / C(0, 2))[0].item<C>(), v0 / C(0, 2));
  EXPECT_EQ((z - 1)[0].item<C>(), v0 - 1.0);
  EXPECT_PRED2(near, fw::add(z, z, C(0, 2))[0].item<C>(), v0 + C(0, 2) * v0);  // complex alpha
  EXPECT_PRED2(near, fw::sub(z, C(1, 1), C(0, 1))[1].item<C>(), C(0.1, 7) - C(0, 1) * C(1, 1));
  EXPECT_THROW(fw::add(fw::ones({2}, fw::kDouble), fw::ones({2}, fw::kDouble), C(0, 1)), fw::Error);
  EXPECT_PRED2(near, z.sum().item<C>(), v0 + C(0.1, 7));
  EXPECT_PRED2(near, z.mean().item<C>(), (v0 + C(0.1, 7)) / 2.0);
  EXPECT_EQ(z.mean().dtype(), fw::kComplexDouble);
  EXPECT_EQ(fw::abs(z).dtype(), fw::kDouble);
  EXPECT_DOUBLE_EQ(fw::abs(z)[0].item<double>(), std::abs(v0));
  EXPECT_DOUBLE_EQ(fw::angle(z)[0].item<double>(), std::arg(v0));
  EXPECT_EQ(fw::conj(z)[0].item<C>(), std::conj(v0));
  EXPECT_EQ(fw::complex(fw::real(z), fw::imag(z)).dtype(), fw::kComplexDouble);
  EXPECT_EQ(fw::polar(fw::ones({1}, fw::kDouble), fw::zeros({1}, fw::kDouble)).dtype(), fw::kComplexDouble);
  Tensor m = fw::matmul(z.view({1, 2}), z.view({2, 1}));
  EXPECT_EQ(m.dtype(), fw::kComplexDouble);
  EXPECT_PRED2(near, m.item<C>(), v0 * v0 + C(0.1, 7) * C(0.1, 7));
  EXPECT_EQ(fw::cat({c64, z}).dtype(), fw::kComplexDouble);
  EXPECT_EQ(fw::cat({c64, z})[3].item<C>(), C(0.1, 7));

  // In-place casts follow can_cast; ops without complex kernels name the dtype.
  Tensor d = fw::zeros({2}, fw::kDouble);
  EXPECT_THROW(d.add_(z), fw::Error);
  Tensor zc = z.clone();
  zc.add_(fw::ones({2}, fw::kDouble));
  EXPECT_EQ(zc[0].item<C>(), v0 + 1.0);
  try {
    fw::lt(z, z);
    FAIL();
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("[lt] not implemented for dtype complex128"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fw::sort(z), fw::Error);
  EXPECT_THROW(fw::maximum(z, z), fw::Error);
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

// float32/float64 linspace equals libtorch 1.13's bit for bit (Note [libtorch's float linspace];
// tests/fixtures/linspace.txt from gen_linspace.py): libtorch rounds in the dtype, so its values
// are not the correctly rounded ones, and fw reproduces its vector layout.
TEST(Tensor, LinspaceEqualsLibtorchBitForBit) {
  std::ifstream in(std::string(FW_FIXTURE_DIR) + "/linspace.txt");
  ASSERT_TRUE(in.good());
  std::string head, values;
  int cases = 0;
  while (std::getline(in, head) && std::getline(in, values)) {
    std::istringstream hs(head), vs(values);
    double a, b;
    int64_t n;
    std::string dtype;
    hs >> a >> b >> n >> dtype;
    const bool f32 = dtype == "float32";
    fw::Tensor t = fw::linspace(a, b, n, fw::TensorOptions(f32 ? fw::kFloat : fw::kDouble));
    ASSERT_EQ(t.numel(), n) << head;
    int64_t wrong = 0, first = -1;
    for (int64_t i = 0; i < n; i++) {
      uint64_t want = 0;
      vs >> std::hex >> want;
      uint64_t got = 0;
      if (f32) {
        float v = t.data_ptr<float>()[i];
        uint32_t u;
        std::memcpy(&u, &v, 4);
        got = u;
      } else {
        double v = t.data_ptr<double>()[i];
        std::memcpy(&got, &v, 8);
      }
      if (got != want && wrong++ == 0) first = i;
    }
    EXPECT_EQ(wrong, 0) << head << ": first differing element " << first;
    cases++;
  }
  EXPECT_EQ(cases, 24);
}

// Note [Printing like libtorch] (core/print.cpp): every case of tests/printing_cases.h prints
// exactly as libtorch 1.13 prints it (tests/fixtures/printing.txt, from gen_printing.cpp): the
// per-matrix formats, scale lines, "Columns a to b" blocks, 1-based n-d slice headers, 0-d values.
TEST(Printing, SameTextAsLibtorch) {
  std::ifstream in(std::string(FW_FIXTURE_DIR) + "/printing.txt");
  ASSERT_TRUE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string all = ss.str();
  std::vector<std::string> want;
  for (size_t pos = 0;;) {
    size_t e = all.find("\n---\n", pos);
    if (e == std::string::npos) break;
    want.push_back(all.substr(pos, e - pos));
    pos = e + 5;
  }
  auto cases = FW_PRINTING_CASES(fw);
  ASSERT_EQ(want.size(), cases.size());
  for (size_t i = 0; i < cases.size(); i++) {
    std::ostringstream os;
    os << cases[i];
    EXPECT_EQ(os.str(), want[i]) << "case " << i;
  }
  // The stream's own flags come back as they were.
  std::ostringstream os;
  os << std::setprecision(3) << fw::tensor({0.123456, 2.0}) << " " << 3.14159;
  EXPECT_NE(os.str().find(" 3.14"), std::string::npos) << os.str();
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

// Complex tensors print their real parts under the complex type, as libtorch 1.13 does (it
// converts to double to print); view_as_real shows both parts.
TEST(Printing, ComplexDouble) {
  Tensor z = fw::tensor(std::vector<std::complex<double>>{{1, 2}, {-0.5, 0.25}});
  std::ostringstream os, ref;
  os << z;
  ref << fw::view_as_real(z);
  EXPECT_EQ(os.str(), " 1.0000\n-0.5000\n[ CPUComplexDoubleType{2} ]");
  EXPECT_EQ(ref.str(), " 1.0000  2.0000\n-0.5000  0.2500\n[ CPUDoubleType{2,2} ]");
  std::ostringstream o2;
  o2 << fw::scalar_tensor(fw::Scalar(std::complex<double>(1e-9, 3)), fw::kComplexDouble).item();
  EXPECT_EQ(o2.str(), "(1e-09,3)");
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

// Complex random tensors draw both parts (torch): rand parts in [0, 1), randn parts with
// variance 1/2, normal(mean, std) parts with the mean and std / sqrt(2).
TEST(Random, ComplexDrawsBothParts) {
  fw::manual_seed(2);
  for (auto t : {fw::kComplexFloat, fw::kComplexDouble}) {
    Tensor u = fw::view_as_real(fw::rand({100000}, t));
    EXPECT_NEAR(u.select(1, 0).mean().item<double>(), 0.5, 0.01);
    EXPECT_NEAR(u.select(1, 1).mean().item<double>(), 0.5, 0.01);
    EXPECT_GE(u.min().item<double>(), 0.0);
    EXPECT_LT(u.max().item<double>(), 1.0);
    Tensor n = fw::view_as_real(fw::normal(2, 3, {100000}, t));
    EXPECT_NEAR(n.select(1, 1).mean().item<double>(), 2.0, 0.05);
    EXPECT_NEAR(n.select(1, 0).std().item<double>(), 3 * M_SQRT1_2, 0.05);
    EXPECT_NEAR(n.select(1, 1).std().item<double>(), 3 * M_SQRT1_2, 0.05);
    EXPECT_NEAR(fw::view_as_real(fw::randn({100000}, t)).std().item<double>(), M_SQRT1_2, 0.01);
    Tensor v = fw::view_as_real(fw::empty({100000}, t).uniform_(2, 3));
    EXPECT_NEAR(v.select(1, 1).mean().item<double>(), 2.5, 0.01);
    EXPECT_GE(v.min().item<double>(), 2.0);
  }
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
