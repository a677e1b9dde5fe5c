// fw::pickle_save / fw::pickle_load against files written by PyTorch 1.13's torch.save
// (tests/fixtures/gen_pickle.py), round trips through fw, IValue's containers, and malformed
// input: crafted archives and pickles, and a bounded mutation fuzz over a real file. The
// same file runs under ASan/UBSan as fw_pickle_asan.
//
// FW_PICKLE_EXPORT=DIR makes the round-trip test also write fw's archives into DIR; then
// `tests/fixtures/gen_pickle.py --check DIR` loads them with PyTorch.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <random>

#include <fw/fw.h>

#include "core/pickle_internal.h"
#include "tests/expect_error.h"

using fw::GenericDict;
using fw::GenericList;
using fw::IValue;
using fw::Tensor;

namespace {

std::vector<char> read_fixture(const std::string& name) {
  std::string path = std::string(FW_FIXTURE_DIR) + "/pickle/" + name;
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

IValue load_fixture(const std::string& name) { return fw::pickle_load(read_fixture(name)); }

void export_file(const std::string& name, const std::vector<char>& bytes) {
  const char* dir = std::getenv("FW_PICKLE_EXPORT");
  if (!dir) return;
  std::ofstream f(std::string(dir) + "/" + name, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// arange(n) * 0.25 + i shaped like gen_pickle.py's model() entries.
Tensor ramp(std::vector<int64_t> shape, int i) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return (fw::arange(n, fw::kFloat) * 0.25 + i).reshape(shape);
}

IValue entry(const GenericDict& d, const std::string& k) {
  EXPECT_TRUE(d.contains(k)) << k;
  return d.at(k);
}

using namespace std::string_literals;

// The pickle bytes with torch.save's framing: PROTO 2, body, STOP.
std::string pkl(const std::string& body) { return "\x80\x02"s + body + "."; }
// BINUNICODE, GLOBAL and BININT1 opcodes.
std::string str(const std::string& x) {
  std::string len(4, '\0');
  for (int i = 0; i < 4; ++i) len[size_t(i)] = char((x.size() >> (8 * i)) & 0xFF);
  return "X" + len + x;
}
std::string glob(const std::string& module, const std::string& name) { return "c" + module + "\n" + name + "\n"; }
std::string int1(int v) { return "K" + std::string(1, char(v)); }

// A torch.save archive holding `pickle` and storage records "0", "1"...
std::vector<char> archive(const std::string& pickle, std::vector<std::string> storages = {}) {
  std::vector<std::pair<std::string, std::string>> recs{{"archive/data.pkl", pickle}};
  for (size_t i = 0; i < storages.size(); ++i) recs.emplace_back("archive/data/" + std::to_string(i), storages[i]);
  recs.emplace_back("archive/version", "3\n");
  return fw::detail::zip_archive(recs);
}

// The pickle of _rebuild_tensor_v2(storage '0' of `numel` elements, offset, size, stride, False, {}).
std::string tensor_pickle(int numel, int offset, const std::string& size, const std::string& stride,
                          const std::string& storage_type = "FloatStorage") {
  return pkl(glob("torch._utils", "_rebuild_tensor_v2") + "((" + str("storage") + glob("torch", storage_type) +
             str("0") + str("cpu") + int1(numel) + "tQ" + int1(offset) + size + stride + "\x89}tR");
}

}  // namespace

TEST(Pickle, LoadsAPyTorchStateDictIntoAModule) {
  IValue v = load_fixture("state_dict.pt");
  ASSERT_TRUE(v.isGenericDict());
  GenericDict sd = v.toGenericDict();
  std::vector<std::string> keys;
  for (const auto& e : sd) keys.push_back(e.key().toStringRef());
  EXPECT_EQ(keys, (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean",
                                            "1.running_var", "1.num_batches_tracked", "3.weight", "3.bias"}));
  EXPECT_TRUE(fw::equal(entry(sd, "0.weight").toTensor(), ramp({4, 3}, 0)));
  EXPECT_TRUE(fw::equal(entry(sd, "1.running_var").toTensor(), ramp({4}, 5)));
  Tensor nbt = entry(sd, "1.num_batches_tracked").toTensor();
  EXPECT_EQ(nbt.dim(), 0);
  EXPECT_EQ(nbt.scalar_type(), fw::kLong);
  EXPECT_EQ(nbt.item<int64_t>(), 7);
  EXPECT_FALSE(entry(sd, "3.bias").toTensor().requires_grad());  // state_dict holds plain tensors

  // The usual libtorch loop: copy each entry into the module's parameters and buffers.
  fw::nn::Sequential model(fw::nn::Linear(3, 4), fw::nn::BatchNorm1d(4), fw::nn::ReLU(), fw::nn::Linear(4, 2));
  auto params = model->named_parameters();
  auto buffers = model->named_buffers();
  size_t copied = 0;
  {
    fw::NoGradGuard ng;
    for (const auto& e : sd) {
      const std::string& k = e.key().toStringRef();
      Tensor* dst = params.find(k) ? params.find(k) : buffers.find(k);
      ASSERT_NE(dst, nullptr) << k;
      dst->copy_(e.value().toTensor());
      ++copied;
    }
  }
  EXPECT_EQ(copied, params.size() + buffers.size());
  EXPECT_TRUE(fw::equal(model->named_parameters()["3.weight"], ramp({2, 4}, 7)));
  model->eval();
  // Linear(3,4) -> BN(eval) -> ReLU -> Linear(4,2), written out with the loaded values.
  Tensor x = fw::tensor({1.0f, -2.0f, 0.5f}).reshape({1, 3});
  Tensor h = fw::matmul(x, ramp({4, 3}, 0).t()) + ramp({4}, 1);
  h = (h - ramp({4}, 4)) / fw::sqrt(ramp({4}, 5) + 1e-5) * ramp({4}, 2) + ramp({4}, 3);
  Tensor want = fw::matmul(fw::relu(h), ramp({2, 4}, 7).t()) + ramp({2}, 8);
  EXPECT_TRUE(fw::allclose(model->forward(x), want, 1e-5, 1e-5));
}

TEST(Pickle, LoadsParametersAsLeavesThatRequireGrad) {
  IValue v = load_fixture("parameters.pt");
  ASSERT_TRUE(v.isList());
  std::vector<Tensor> ps = v.toTensorVector();
  ASSERT_EQ(ps.size(), 6u);
  for (const Tensor& p : ps) {
    EXPECT_TRUE(p.requires_grad());
    EXPECT_TRUE(p.is_leaf());
  }
  EXPECT_TRUE(fw::equal(ps[0].detach(), ramp({4, 3}, 0)));
  EXPECT_TRUE(fw::equal(ps[5].detach(), ramp({2}, 8)));
  (ps[0].sum() * 2).backward();
  EXPECT_TRUE(fw::equal(ps[0].grad(), fw::full({4, 3}, 2.0f)));
}

class PickleMixed : public ::testing::TestWithParam<const char*> {};

// mixed.pt (pickle protocol 2) and mixed_p4.pt (protocol 4: FRAME, MEMOIZE, SHORT_BINUNICODE,
// STACK_GLOBAL) hold the same object.
TEST_P(PickleMixed, EveryKindOfValue) {
  GenericDict d = load_fixture(GetParam()).toGenericDict();
  // Every dtype of arange(6).reshape(2, 3).
  std::vector<Tensor> dt = entry(d, "dtypes").toTensorVector();
  const fw::ScalarType kinds[] = {fw::kFloat, fw::kDouble, fw::kHalf, fw::kBFloat16, fw::kLong,
                                  fw::kInt,   fw::kShort,  fw::kChar, fw::kByte};
  ASSERT_EQ(dt.size(), 11u);
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_EQ(dt[i].scalar_type(), kinds[i]);
    EXPECT_TRUE(fw::equal(dt[i].to(fw::kDouble), fw::arange(6, fw::kDouble).reshape({2, 3}))) << i;
  }
  EXPECT_EQ(dt[9].scalar_type(), fw::kBool);
  EXPECT_EQ(dt[9].to(fw::kLong).sum().item<int64_t>(), 2);
  EXPECT_FALSE(dt[9][1].item<bool>());
  EXPECT_EQ(dt[10].scalar_type(), fw::kComplexFloat);
  EXPECT_TRUE(fw::equal(fw::real(dt[10]), fw::tensor({1.0f, 2.0f})));
  EXPECT_TRUE(fw::equal(fw::imag(dt[10]), fw::tensor({-1.0f, 0.5f})));

  // Views keep their layout and share the base's storage, as in Python.
  Tensor base = entry(d, "base").toTensor(), vt = entry(d, "view_t").toTensor(), row = entry(d, "view_row").toTensor(),
         sl = entry(d, "view_slice").toTensor();
  EXPECT_TRUE(fw::equal(base, fw::arange(12, fw::kFloat).reshape({3, 4})));
  EXPECT_EQ(vt.strides().vec(), (std::vector<int64_t>{1, 4}));
  EXPECT_EQ(row.storage_offset(), 4);
  EXPECT_EQ(sl.storage_offset(), 1);
  EXPECT_EQ(sl.strides().vec(), (std::vector<int64_t>{4, 2}));
  EXPECT_TRUE(vt.is_alias_of(base) && row.is_alias_of(base) && sl.is_alias_of(base));
  EXPECT_TRUE(fw::equal(sl, fw::tensor({1.0f, 3.0f, 5.0f, 7.0f, 9.0f, 11.0f}).reshape({3, 2})));
  base.index_put_({1, 1}, 100.0f);
  EXPECT_EQ(vt[1][1].item<float>(), 100.0f);
  EXPECT_EQ(row[1].item<float>(), 100.0f);
  std::vector<Tensor> twice = entry(d, "same_twice").toTensorVector();
  EXPECT_TRUE(twice[0].is_alias_of(base) && twice[1].is_alias_of(base));

  Tensor scalar = entry(d, "scalar").toTensor();
  EXPECT_EQ(scalar.dim(), 0);
  EXPECT_EQ(scalar.item<double>(), 3.5);
  EXPECT_EQ(entry(d, "empty").toTensor().sizes().vec(), (std::vector<int64_t>{0, 3}));
  Tensor grad = entry(d, "grad").toTensor(), param = entry(d, "param").toTensor();
  EXPECT_TRUE(grad.requires_grad() && grad.is_leaf());
  EXPECT_TRUE(param.requires_grad() && param.is_leaf());
  EXPECT_TRUE(fw::equal(param.detach(), fw::tensor({0.5f, -0.5f}).reshape({1, 2})));

  EXPECT_EQ(entry(d, "ints").toIntVector(),
            (std::vector<int64_t>{0, 255, 256, 65535, 65536, -1, -(int64_t(1) << 31), int64_t(1) << 31,
                                  int64_t(1) << 40, -(int64_t(1) << 40), INT64_MAX, INT64_MIN}));
  const auto& fl = entry(d, "floats").toTupleRef().elements();
  ASSERT_EQ(fl.size(), 4u);
  EXPECT_EQ(fl[0].toDouble(), 1.5);
  EXPECT_TRUE(fl[1].toDouble() == 0.0 && std::signbit(fl[1].toDouble()));
  EXPECT_EQ(fl[2].toDouble(), 1e300);
  EXPECT_TRUE(std::isinf(fl[3].toDouble()));
  EXPECT_EQ(entry(d, "text").toStringRef(), "h\xc3\xa9llo");
  EXPECT_TRUE(entry(d, "flag").toBool());
  EXPECT_TRUE(entry(d, "nothing").isNone());
  GenericDict nested = entry(d, "nested").toGenericDict();
  const auto& a = nested.at("a").toListRef();
  EXPECT_EQ(a[0].toInt(), 1);
  EXPECT_EQ(a[1].toTupleRef().elements()[1].toStringRef(), "x");
  EXPECT_TRUE(nested.at("b").toGenericDict().empty());
  EXPECT_EQ(entry(d, "tuple1").toTupleRef().size(), 1u);
  EXPECT_TRUE(entry(d, "empty_list").toList().empty());
  auto ik = entry(d, "int_keys").to<fw::Dict<int64_t, std::string>>();
  EXPECT_EQ(ik.at(2), "two");
  EXPECT_FALSE(ik.contains(3));

  std::ostringstream os;
  os << entry(d, "nested");
  EXPECT_EQ(os.str(), "{'a': [1, (2, 'x')], 'b': {}}");
}

INSTANTIATE_TEST_SUITE_P(Protocols, PickleMixed, ::testing::Values("mixed.pt", "mixed_p4.pt"));

TEST(Pickle, LoadsAPlainPythonPickle) {
  // pickle.dump({"a": [1, 2.5, "x"], "b": (True, None), "c": b"\x00\x01"}, protocol=2)
  GenericDict d = load_fixture("plain.pkl").toGenericDict();
  const auto& a = d.at("a").toListRef();
  EXPECT_EQ(a[0].toInt(), 1);
  EXPECT_EQ(a[1].toDouble(), 2.5);
  EXPECT_EQ(a[2].toStringRef(), "x");
  EXPECT_TRUE(d.at("b").toTupleRef().elements()[0].toBool());
  EXPECT_TRUE(d.at("b").toTupleRef().elements()[1].isNone());
  EXPECT_EQ(d.at("c").toStringRef(), std::string("\x00\x01", 2));
}

TEST(Pickle, RefusesTheLegacyFormatAndTorchScriptWithAnExplanation) {
  EXPECT_ERROR(load_fixture("legacy.pt"), "legacy format");
  // torch.jit.save(torch.jit.script(nn.Linear(2, 2))): its code records are compressed, which
  // does not matter; its pickle holds a TorchScript class.
  EXPECT_ERROR(load_fixture("torchscript.pt"), "is a TorchScript archive (torch.jit.save");
}

TEST(Pickle, RoundTripKeepsValuesLayoutAndSharing) {
  Tensor base = fw::arange(24, fw::kDouble).reshape({2, 3, 4});
  Tensor w = fw::randn({3, 2}).requires_grad_();
  GenericDict d;
  d.insert("base", base);
  d.insert("perm", base.permute({2, 0, 1}));
  d.insert("narrow", base.narrow(2, 1, 2));
  d.insert("w", w);
  d.insert("half", fw::arange(5, fw::kHalf));
  d.insert("cd", fw::complex(fw::arange(3, fw::kDouble), -fw::arange(3, fw::kDouble)));
  d.insert("bools", fw::tensor({1, 0, 1}).to(fw::kBool));
  d.insert("ints", std::vector<int64_t>{1, -70000, int64_t(1) << 50});
  d.insert("doubles", std::vector<double>{0.1, -2.5});
  d.insert("list", fw::List<int64_t>({4, 5}));
  GenericDict inner;
  inner.insert(int64_t(3), "three");
  inner.insert(true, IValue());
  d.insert("inner", inner);
  d.insert("tuple", IValue(std::make_tuple(int64_t(1), std::string("a\0b", 3), 2.5, false)));
  d.insert("tensors", std::vector<Tensor>{base[0], base[1]});

  for (bool zip64 : {false, true}) {
    std::vector<char> bytes = zip64 ? fw::detail::pickle_save_zip64(IValue(d)) : fw::pickle_save(IValue(d));
    GenericDict r = fw::pickle_load(bytes).toGenericDict();
    ASSERT_EQ(r.size(), d.size());
    auto it = r.begin();
    for (const auto& e : d) EXPECT_EQ((*it++).key().toStringRef(), e.key().toStringRef());
    Tensor rb = r.at("base").toTensor(), rp = r.at("perm").toTensor(), rn = r.at("narrow").toTensor();
    EXPECT_TRUE(fw::equal(rb, base) && fw::equal(rp, base.permute({2, 0, 1})) && fw::equal(rn, base.narrow(2, 1, 2)));
    EXPECT_EQ(rp.strides().vec(), base.permute({2, 0, 1}).strides().vec());
    EXPECT_EQ(rn.storage_offset(), 1);
    EXPECT_TRUE(rp.is_alias_of(rb) && rn.is_alias_of(rb));
    EXPECT_FALSE(rb.is_alias_of(base));  // loaded data is a copy
    Tensor rw = r.at("w").toTensor();
    EXPECT_TRUE(rw.requires_grad() && rw.is_leaf());
    EXPECT_TRUE(fw::equal(rw.detach(), w.detach()));
    EXPECT_TRUE(fw::equal(r.at("half").toTensor(), fw::arange(5, fw::kHalf)));
    EXPECT_TRUE(fw::equal(r.at("cd").toTensor(), d.at("cd").toTensor()));
    EXPECT_EQ(r.at("bools").toTensor().scalar_type(), fw::kBool);
    EXPECT_EQ(r.at("ints").toIntVector(), (std::vector<int64_t>{1, -70000, int64_t(1) << 50}));
    EXPECT_EQ(r.at("doubles").toDoubleVector(), (std::vector<double>{0.1, -2.5}));
    EXPECT_EQ(r.at("list").to<fw::List<int64_t>>().vec(), (std::vector<int64_t>{4, 5}));
    GenericDict ri = r.at("inner").toGenericDict();
    EXPECT_EQ(ri.at(int64_t(3)).toStringRef(), "three");
    EXPECT_TRUE(ri.at(true).isNone());
    const auto& tup = r.at("tuple").toTupleRef().elements();
    EXPECT_EQ(tup[1].toStringRef(), std::string("a\0b", 3));
    EXPECT_EQ(tup[2].toDouble(), 2.5);
    EXPECT_FALSE(tup[3].toBool());
    std::vector<Tensor> ts = r.at("tensors").toTensorVector();
    EXPECT_TRUE(ts[1].is_alias_of(rb) && fw::equal(ts[1], base[1]));
    if (zip64) {
      std::string s(bytes.begin(), bytes.end());
      EXPECT_NE(s.find("PK\x06\x06"), std::string::npos);  // zip64 end record
    }
  }

  // Files for gen_pickle.py --check (PyTorch must load what fw writes).
  export_file("fw_mixed.pt", fw::pickle_save(load_fixture("mixed.pt")));
  export_file("fw_state_dict.pt", fw::pickle_save(load_fixture("state_dict.pt")));
  GenericDict small;
  small.insert("x", fw::arange(5, fw::kDouble));
  small.insert("n", 3);
  export_file("fw_zip64.pt", fw::detail::pickle_save_zip64(IValue(small)));
}

TEST(Pickle, SaveRefusesWhatPyTorchCannotHold) {
  EXPECT_ERROR(fw::pickle_save(IValue(Tensor())), "undefined tensor");
  Tensor f = fw::zeros({4});
  GenericList l;
  l.push_back(f);
  l.push_back(f.view(fw::kInt));
  EXPECT_ERROR(fw::pickle_save(IValue(l)), "different dtypes");
  GenericList self;
  self.push_back(IValue(self));
  EXPECT_ERROR(fw::pickle_save(IValue(self)), "deeper than 1000");
  self.clear();  // break the cycle
}

TEST(Pickle, GenericContainers) {
  fw::List<int64_t> l({1, 2, 3});
  fw::List<int64_t> alias = l;
  alias[1] = 20;  // handles share elements
  EXPECT_EQ(l.get(1), 20);
  EXPECT_EQ(l.copy().is(l), false);
  int64_t sum = 0;
  for (int64_t x : l) sum += x;
  EXPECT_EQ(sum, 24);
  IValue iv(l);
  EXPECT_TRUE(iv.isList() && iv.isIntList() && !iv.isTensorList());
  EXPECT_EQ(iv.toIntVector(), (std::vector<int64_t>{1, 20, 3}));
  EXPECT_ERROR(l.get(3), "out of range");

  fw::Dict<std::string, Tensor> d;
  Tensor a = fw::ones({2});
  EXPECT_TRUE(d.insert("a", a).second);
  EXPECT_FALSE(d.insert("a", fw::zeros({2})).second);  // insert keeps the existing value
  EXPECT_TRUE(d.at("a").is_same(a));
  d.insert_or_assign("a", fw::zeros({2}));
  EXPECT_EQ(d.at("a").sum().item<float>(), 0.0f);
  d.insert("b", a);
  d.insert("c", a);
  EXPECT_EQ(d.erase("b"), 1u);
  EXPECT_EQ(d.find("c")->key(), "c");
  EXPECT_EQ(d.size(), 2u);
  EXPECT_ERROR(d.at("zz"), "'zz' is not in the dict");
  GenericDict g = IValue(d).toGenericDict();
  EXPECT_TRUE(g.contains(IValue("c")));
  GenericDict bad;
  EXPECT_ERROR(bad.insert(IValue(std::vector<int64_t>{1}), 1), "a key must be");
  EXPECT_ERROR(IValue(3).toGenericDict(), "expected GenericDict but got Int");
  auto t = fw::ivalue::Tuple::create({IValue(1), IValue("x")});
  EXPECT_EQ(IValue(t).toTuple()->elements()[1].toStringRef(), "x");
}

TEST(Pickle, MalformedPicklesRaiseClearErrors) {
  auto load = [](const std::string& bytes) { return fw::pickle_load(bytes.data(), bytes.size()); };
  EXPECT_ERROR(load(""), "neither a torch.save zip archive nor a binary pickle");
  EXPECT_ERROR(load("hello"), "neither a torch.save zip archive nor a binary pickle");
  EXPECT_ERROR(load(std::string("\x80\x02", 2)), "without a STOP");
  EXPECT_ERROR(load(pkl("")), "STOP with an empty stack");
  EXPECT_ERROR(load(pkl("K\x01K\x02" "a")), "APPEND on a int (expected a list)");
  EXPECT_ERROR(load(pkl("a")), "pops an empty stack");
  EXPECT_ERROR(load(pkl("t")), "MARK that was never set");
  EXPECT_ERROR(load(pkl("h\x05")), "memo entry 5 before writing it");
  EXPECT_ERROR(load(pkl("\x8b\x00\x00\x00\x01"s)), "does not fit in 64 bits");
  EXPECT_ERROR(load(pkl("X\xff\xff\xff\x7f")), "truncated");
  EXPECT_ERROR(load(pkl(glob("os", "system") + str("ls") + "\x85R")), "unsupported global 'os.system'");
  EXPECT_ERROR(load(pkl(glob("builtins", "eval"))), "unsupported global 'builtins.eval'");
  EXPECT_ERROR(load(pkl(str("posix") + str("system") + "\x93")), "unsupported global 'posix.system'");
  // An allowed global that is not a value, and one called with the wrong arguments.
  EXPECT_ERROR(load(pkl(glob("torch", "FloatStorage"))), "not a value fw can represent");
  EXPECT_ERROR(load(pkl(glob("torch._utils", "_rebuild_tensor_v2") + "K\x01\x85R")), "needs (storage, offset");
  EXPECT_ERROR(load(pkl("I1\n")), "unsupported pickle opcode 0x49");
  EXPECT_ERROR(load(std::string("\x80\x09.", 3)), "unsupported pickle protocol 9");
  // A list holding itself, and lists nested 3000 deep: errors, not stack overflows.
  EXPECT_ERROR(load(pkl("]q\0h\0a"s)), "deeper than 1000");
  EXPECT_ERROR(load(pkl(std::string(3000, ']') + std::string(2999, 'a'))), "deeper than 1000");
  EXPECT_ERROR(load(tensor_pickle(4, 0, "K\x04\x85", "K\x01\x85")), "only a torch.save zip archive");
}

TEST(Pickle, MalformedArchivesRaiseClearErrors) {
  const std::string four_floats(16, '\0');
  auto good = archive(tensor_pickle(4, 0, "K\x02K\x02\x86", "K\x02K\x01\x86"), {four_floats});
  EXPECT_EQ(fw::pickle_load(good).toTensor().sizes().vec(), (std::vector<int64_t>{2, 2}));
  // Layouts that reach outside the storage, and bad records.
  EXPECT_ERROR(fw::pickle_load(archive(tensor_pickle(4, 0, "Kd\x85", "K\x01\x85"), {four_floats})),
               "reaches element 99 of a storage of 4 elements");
  EXPECT_ERROR(fw::pickle_load(archive(tensor_pickle(4, 3, "K\x02\x85", "K\x01\x85"), {four_floats})),
               "reaches element 4");
  EXPECT_ERROR(fw::pickle_load(archive(tensor_pickle(4, 9, ")", ")"), {four_floats})), "storage offset 9");
  EXPECT_ERROR(fw::pickle_load(archive(tensor_pickle(4, 0, "K\x02\x85", "J\xff\xff\xff\xff\x85"), {four_floats})),
               "stride -1");
  EXPECT_ERROR(fw::pickle_load(archive(tensor_pickle(4, 0, "K\x02\x85", ")"), {four_floats})), "1 sizes but 0 strides");
  EXPECT_ERROR(fw::pickle_load(archive(tensor_pickle(4, 0, "K\x05\x85", "\x8a\x08\x00\x00\x00\x00\x00\x00\x00\x40\x85"s),
                                       {four_floats})),
               "overflows");
  EXPECT_ERROR(fw::pickle_load(archive(tensor_pickle(5, 0, ")", ")"), {four_floats})), "holds 16 bytes");
  EXPECT_ERROR(fw::pickle_load(archive(tensor_pickle(4, 0, ")", ")"), {})), "has no record 'archive/data/0'");
  EXPECT_ERROR(fw::pickle_load(archive(tensor_pickle(4, 0, ")", ")", "QuantizedStorage"), {four_floats})),
               "unsupported global 'torch.QuantizedStorage'");
  EXPECT_ERROR(fw::pickle_load(archive(tensor_pickle(4, 0, ")", ")", "Size"), {four_floats})),
               "unsupported storage type 'torch.Size'");
  EXPECT_ERROR(fw::pickle_load(fw::detail::zip_archive({{"archive/version", "3\n"}})), "no <name>/data.pkl");
  EXPECT_ERROR(fw::pickle_load(fw::detail::zip_archive({{"a/data.pkl", pkl("N")}, {"b/data.pkl", pkl("N")}})),
               "two pickles");
  EXPECT_ERROR(fw::pickle_load(fw::detail::zip_archive({{"a/data.pkl", pkl("N")}, {"a/data.pkl", pkl("N")}})),
               "two records named 'a/data.pkl'");

  // A flipped data byte fails the CRC; a compressed entry and a truncated file are named.
  std::vector<char> bytes = fw::pickle_save(IValue(fw::arange(16, fw::kFloat)));
  std::string s(bytes.begin(), bytes.end());
  size_t data = s.find(std::string("\x00\x00\x80\x3f", 4));  // 1.0f
  ASSERT_NE(data, std::string::npos);
  std::vector<char> flipped = bytes;
  flipped[data + 3] ^= 0x01;
  EXPECT_ERROR(fw::pickle_load(flipped), "'archive/data/0' is corrupt (CRC-32 mismatch)");
  std::vector<char> deflated = bytes;
  size_t cd = s.find("PK\x01\x02");
  ASSERT_NE(cd, std::string::npos);
  deflated[cd + 10] = 8;
  EXPECT_ERROR(fw::pickle_load(deflated), "is compressed (zip method 8)");
  std::vector<char> cut(bytes.begin(), bytes.begin() + std::ptrdiff_t(bytes.size() - 30));
  EXPECT_THROW(fw::pickle_load(cut), fw::Error);
}

// Random corruptions of a real torch.save file: each load succeeds or raises fw::Error, never
// crashes or reads outside the buffer (run under ASan as fw_pickle_asan).
TEST(Pickle, MutationFuzzNeverCrashes) {
  const std::vector<char> orig = read_fixture("mixed_p4.pt");
  std::mt19937 rng(1234);
  int ok = 0, errors = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<char> b = orig;
    int kind = int(rng() % 4);
    if (kind == 0) {  // a few random bytes
      for (int k = 1 + int(rng() % 4); k > 0; --k) b[rng() % b.size()] = char(rng());
    } else if (kind == 1) {  // truncation
      b.resize(rng() % b.size());
    } else if (kind == 2) {  // a byte of the pickle, in an archive with valid CRCs
      auto recs = fw::detail::zip_records(orig);
      for (auto& [name, bytes] : recs)
        if (name.size() > 9 && name.compare(name.size() - 9, 9, "/data.pkl") == 0)
          bytes[rng() % bytes.size()] = char(rng());
      b = fw::detail::zip_archive(recs);
    } else {  // an inserted byte
      b.insert(b.begin() + std::ptrdiff_t(rng() % b.size()), char(rng()));
    }
    try {
      fw::pickle_load(b);
      ++ok;
    } catch (const fw::Error&) {
      ++errors;
    }
  }
  EXPECT_EQ(ok + errors, 3000);
  EXPECT_GT(errors, 1000);
}

// fw::load and its libtorch forms take Python's torch.save files too.
TEST(Pickle, FwLoadReadsTorchSaveFiles) {
  const std::string dir = std::string(FW_FIXTURE_DIR) + "/pickle/";
  fw::nn::Sequential model(fw::nn::Linear(3, 4), fw::nn::BatchNorm1d(4), fw::nn::ReLU(), fw::nn::Linear(4, 2));
  fw::load(model, dir + "state_dict.pt");
  EXPECT_TRUE(fw::equal(model->named_parameters()["0.weight"], ramp({4, 3}, 0)));
  EXPECT_TRUE(fw::equal(model->named_buffers()["1.running_mean"], ramp({4}, 4)));
  EXPECT_EQ(model->named_buffers()["1.num_batches_tracked"].item<int64_t>(), 7);
  std::ifstream in(dir + "state_dict.pt", std::ios::binary);
  fw::nn::Sequential model2(fw::nn::Linear(3, 4), fw::nn::BatchNorm1d(4), fw::nn::ReLU(), fw::nn::Linear(4, 2));
  fw::load(model2, in);
  EXPECT_TRUE(fw::equal(model2->named_parameters()["3.bias"], ramp({2}, 8)));
  // A module whose keys differ is refused by name, as for fw's own files.
  fw::nn::Sequential other(fw::nn::Linear(3, 4));
  EXPECT_ERROR(fw::load(other, dir + "state_dict.pt"), "unexpected key(s) '1.bias'");

  fw::TensorMap m = fw::load(dir + "state_dict.pt");
  EXPECT_EQ(m.size(), 9u);
  Tensor single;
  fw::load(single, dir + "single.pt");  // torch.save(arange(6.).reshape(2, 3)[:, 1:])
  EXPECT_TRUE(single.is_contiguous());
  EXPECT_TRUE(fw::equal(single, fw::tensor({1.0f, 2.0f, 4.0f, 5.0f}).reshape({2, 2})));
  std::vector<Tensor> params;
  fw::load(params, dir + "parameters.pt");
  ASSERT_EQ(params.size(), 6u);
  EXPECT_FALSE(params[0].requires_grad());
  EXPECT_TRUE(fw::equal(params[4], ramp({2, 4}, 7)));
  EXPECT_ERROR(fw::load(dir + "mixed.pt"), "entry 'dtypes' of the torch.save file is a GenericList, not a tensor");
  EXPECT_ERROR(fw::load_tensor(dir + "legacy.pt"), "legacy format");
}

// A record larger than the loader's 1 MiB pieces: its CRC is combined from the pieces', and a
// flipped byte in a later piece is still caught.
TEST(Pickle, LargeRecordsAreCheckedPieceByPiece) {
  Tensor big = fw::randn({3 * 262144 + 1234});  // ~3.005 MiB of float32
  std::vector<char> bytes = fw::pickle_save(IValue(big));
  Tensor r = fw::pickle_load(bytes).toTensor();
  EXPECT_TRUE(fw::equal(r, big));
  auto recs = fw::detail::zip_records(bytes);
  for (auto& [name, b] : recs)
    if (name == "archive/data/0") {
      ASSERT_EQ(b.size(), size_t(big.numel()) * 4);
      b[size_t(2.5 * 1048576)] ^= 0x10;
    }
  // zip_archive writes the flipped record with its new CRC, so the record loads with new values;
  // patching the byte in the archive itself must fail the check.
  std::vector<char> rebuilt = fw::detail::zip_archive(recs);
  EXPECT_FALSE(fw::equal(fw::pickle_load(rebuilt).toTensor(), big));
  std::string s(bytes.begin(), bytes.end());
  size_t data = s.find(std::string(static_cast<const char*>(big.data_ptr()), 64));
  ASSERT_NE(data, std::string::npos);
  std::vector<char> flipped = bytes;
  flipped[data + size_t(2.5 * 1048576)] ^= 0x10;
  EXPECT_ERROR(fw::pickle_load(flipped), "'archive/data/0' is corrupt (CRC-32 mismatch)");
  // Every byte of every piece counts: flips at the first and last bytes too.
  for (size_t at : {size_t(0), size_t(1048575), size_t(1048576), size_t(big.numel()) * 4 - 1}) {
    std::vector<char> f = bytes;
    f[data + at] ^= 0x01;
    EXPECT_ERROR(fw::pickle_load(f), "CRC-32 mismatch");
  }
}

// Many small records load a whole record per task, in parallel; with two corrupt records the
// error names the first in record order, whichever thread met it first.
TEST(Pickle, ManySmallRecordsLoadInParallelAndReportTheFirstBadOne) {
  GenericDict d;
  std::vector<Tensor> ts;
  for (int i = 0; i < 40; i++) {
    ts.push_back(fw::full({1000 + 37 * i}, float(i) + 0.25f));  // 4-10 KB each, one empty below
    d.insert("t" + std::to_string(i), ts.back());
  }
  d.insert("empty", fw::empty({0}));
  std::vector<char> bytes = fw::pickle_save(IValue(d));
  GenericDict r = fw::pickle_load(bytes).toGenericDict();
  for (int i = 0; i < 40; i++) EXPECT_TRUE(fw::equal(r.at("t" + std::to_string(i)).toTensor(), ts[size_t(i)])) << i;
  EXPECT_EQ(r.at("empty").toTensor().numel(), 0);
  // Record k holds tensor k's storage (pickle_save numbers storages as it meets them).
  std::string s(bytes.begin(), bytes.end());
  auto at_of = [&](int i) {
    size_t at = s.find(std::string(static_cast<const char*>(ts[size_t(i)].data_ptr()), 64));
    EXPECT_NE(at, std::string::npos) << i;
    return at;
  };
  std::vector<char> flipped = bytes;
  flipped[at_of(31) + 100] ^= 0x04;
  flipped[at_of(7) + 5] ^= 0x04;
  EXPECT_ERROR(fw::pickle_load(flipped), "'archive/data/7' is corrupt (CRC-32 mismatch)");
}

// The CRC-32 against its bit-at-a-time definition, for every length up to 300 at every
// alignment and for long buffers (the folding path starts at 64 bytes).
TEST(Pickle, Crc32MatchesTheBytewiseDefinition) {
  auto reference = [](const unsigned char* p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
      c ^= p[i];
      for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
  };
  std::mt19937 gen(5);
  std::vector<unsigned char> buf((1 << 20) + 100);
  for (auto& b : buf) b = static_cast<unsigned char>(gen());
  const unsigned char* p = buf.data();
  EXPECT_EQ(fw::detail::zip_crc32(reinterpret_cast<const unsigned char*>("123456789"), 9), 0xCBF43926u);
  for (size_t off = 0; off < 16; off++)
    for (size_t n = 0; n <= 300; n++) ASSERT_EQ(fw::detail::zip_crc32(p + off, n), reference(p + off, n)) << off << " " << n;
  for (size_t n : {size_t(4096), size_t(65537), size_t(1 << 20) + 77})
    EXPECT_EQ(fw::detail::zip_crc32(p + 3, n), reference(p + 3, n)) << n;
  std::vector<unsigned char> zeros(1000, 0), ones(1000, 0xFF);
  EXPECT_EQ(fw::detail::zip_crc32(zeros.data(), 1000), reference(zeros.data(), 1000));
  EXPECT_EQ(fw::detail::zip_crc32(ones.data(), 1000), reference(ones.data(), 1000));
}

TEST(Pickle, BoolStoragesHoldOnlyZeroAndOne) {
  std::string body = glob("torch._utils", "_rebuild_tensor_v2") + "((" + str("storage") + glob("torch", "BoolStorage") +
                     str("0") + str("cpu") + int1(2) + "tQ" + int1(0) + "K\x02\x85" + "K\x01\x85" + "\x89}tR";
  EXPECT_EQ(fw::pickle_load(archive(pkl(body), {"\x01\x00"s})).toTensor().sum().item<int64_t>(), 1);
  EXPECT_ERROR(fw::pickle_load(archive(pkl(body), {"\x01\x02"s})), "bool storage holds the byte 2");
}
