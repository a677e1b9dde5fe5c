// Checkpoints (include/fw/serialize.h): round trips, PyTorch-written files, malformed files, a
// SIGKILL test of the atomic writer, and bitwise training resume from model+optimizer files.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "fw/fw.h"
#include "fw/serialize.h"

namespace fs = std::filesystem;
namespace nn = fw::nn;
namespace O = fw::optim;
using fw::Tensor;

namespace {

class Serialize : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fw_serialize_XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

std::string read_bytes(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const std::string& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// A safetensors file from a header text and a data section (the length field may be forced).
std::string raw_file(const std::string& header, const std::string& data, int64_t len = -1) {
  uint64_t n = len < 0 ? header.size() : uint64_t(len);
  std::string out(8, '\0');
  std::memcpy(out.data(), &n, 8);
  return out + header + data;
}

// Same dtype, shape and bytes (bitwise, so NaNs and -0.0 count).
void expect_bitwise(const Tensor& a, const Tensor& b, const std::string& ctx) {
  ASSERT_EQ(a.dtype(), b.dtype()) << ctx;
  ASSERT_EQ(a.sizes().vec(), b.sizes().vec()) << ctx;
  auto ac = a.contiguous(), bc = b.contiguous();
  EXPECT_EQ(std::memcmp(ac.data_ptr(), bc.data_ptr(), size_t(ac.nbytes())), 0) << ctx;
}

Tensor sample(fw::ScalarType t, fw::IntArrayRef shape) {
  if (t == fw::kComplexFloat) {
    auto z = fw::zeros(shape, fw::kComplexFloat);
    auto s = shape.vec();
    s.push_back(2);
    z.view_as_real().copy_(fw::randn(s));
    return z;
  }
  if (t == fw::kBool) return fw::randn(shape) > 0;
  if (fw::is_floating_point(t)) return fw::randn(shape).to(t);
  return fw::randint(t == fw::kUInt8 ? 0 : -100, 100, shape).to(t);
}

const fw::ScalarType kAllDtypes[] = {fw::kBool,  fw::kUInt8,    fw::kInt8,  fw::kInt16,  fw::kInt32,       fw::kInt64,
                                     fw::kHalf, fw::kBFloat16, fw::kFloat, fw::kDouble, fw::kComplexFloat};

}  // namespace

// ---- round trips

TEST_F(Serialize, RoundTripEveryDtypeAndShape) {
  fw::manual_seed(0);
  fw::TensorMap m;
  for (auto t : kAllDtypes) {
    std::string d = fw::dtype_str(t);
    m[d + ".scalar"] = sample(t, {});
    m[d + ".empty"] = sample(t, {0});
    m[d + ".empty3"] = sample(t, {2, 0, 3});
    m[d + ".matrix"] = sample(t, {3, 4});
    m[d + ".transposed"] = sample(t, {3, 5}).t();
    m[d + ".strided"] = sample(t, {4, 6}).slice(1, 0, 6, 2);
  }
  ASSERT_FALSE(m["float32.transposed"].is_contiguous());
  ASSERT_FALSE(m["int64.strided"].is_contiguous());
  fw::save(m, path("all.safetensors"), {{"k", "v"}, {"unicode", "h\xc3\xa9llo \"q\"\n"}});
  auto r = fw::load_with_metadata(path("all.safetensors"));
  ASSERT_EQ(r.tensors.size(), m.size());
  for (const auto& [k, t] : m) {
    ASSERT_TRUE(r.tensors.count(k)) << k;
    expect_bitwise(r.tensors[k], t, k);
    EXPECT_TRUE(r.tensors[k].is_contiguous());
  }
  EXPECT_EQ(r.metadata, (fw::MetadataMap{{"k", "v"}, {"unicode", "h\xc3\xa9llo \"q\"\n"}}));
  // The header is padded so the data section starts 8-byte aligned.
  std::string bytes = read_bytes(path("all.safetensors"));
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
}

TEST_F(Serialize, SingleTensorAndOverwrite) {
  auto a = fw::arange(10, fw::kDouble).reshape({2, 5});
  fw::save(a, path("t.safetensors"));
  expect_bitwise(fw::load_tensor(path("t.safetensors")), a, "single");
  auto b = fw::ones({3}, fw::kInt);
  fw::save(b, path("t.safetensors"));
  expect_bitwise(fw::load_tensor(path("t.safetensors")), b, "overwritten");
  fw::save(fw::TensorMap{}, path("none.safetensors"));
  EXPECT_TRUE(fw::load(path("none.safetensors")).empty());
  try {
    fw::load_tensor(path("none.safetensors"));
    FAIL();
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("exactly one tensor"), std::string::npos) << e.what();
  }
  auto w = fw::randn({2, 2}, fw::requires_grad());
  // requires_grad is kept, as libtorch's torch::save/torch::load keep it; the loaded tensor is a leaf
  fw::save(w * 2, path("grad.safetensors"));
  Tensor lg = fw::load_tensor(path("grad.safetensors"));
  EXPECT_TRUE(lg.requires_grad() && lg.is_leaf());
  fw::save((w * 2).detach(), path("grad.safetensors"));
  EXPECT_FALSE(fw::load_tensor(path("grad.safetensors")).requires_grad());
}

TEST_F(Serialize, FailedSaveLeavesTheOldFile) {
  auto old = fw::arange(6, fw::kFloat);
  fw::save(old, path("keep.safetensors"));
  std::string before = read_bytes(path("keep.safetensors"));
  EXPECT_THROW(fw::save({{"__metadata__", old}}, path("keep.safetensors")), fw::Error);
  EXPECT_THROW(fw::save({{"x", Tensor()}}, path("keep.safetensors")), fw::Error);
  EXPECT_EQ(read_bytes(path("keep.safetensors")), before);
  // A failing rename (the target is a non-empty directory) removes the temp file and names the path.
  fs::create_directory(path("d.safetensors"));
  write_bytes(path("d.safetensors") + "/x", "x");
  try {
    fw::save(old, path("d.safetensors"));
    FAIL();
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rename failed"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("d.safetensors"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fw::save(old, path("missing_dir/x.safetensors")), fw::Error);
  int files = 0;
  for (auto& entry : fs::directory_iterator(dir_)) files += entry.path().string().find(".tmp.") != std::string::npos;
  EXPECT_EQ(files, 0);
}

// safetensors has no complex128 code: save refuses before touching the file and names the
// tensor and the dtype; the float64 view_as_real round-trips losslessly instead.
TEST_F(Serialize, Complex128IsRefusedWithAClearError) {
  auto old = fw::arange(3, fw::kFloat);
  fw::save(old, path("c.safetensors"));
  std::string before = read_bytes(path("c.safetensors"));
  auto z = fw::zeros({2, 3}, fw::kComplexDouble);
  z.view_as_real().copy_(fw::randn({2, 3, 2}, fw::kDouble));
  try {
    fw::save({{"w", old}, {"spectrum", z}}, path("c.safetensors"));
    FAIL();
  } catch (const fw::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("c.safetensors"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'spectrum' has dtype complex128"), std::string::npos) << msg;
  }
  EXPECT_EQ(read_bytes(path("c.safetensors")), before);
  fw::save({{"spectrum", fw::view_as_real(z)}}, path("c.safetensors"));
  expect_bitwise(fw::view_as_complex(fw::load(path("c.safetensors")).at("spectrum")), z, "complex128 as float64");
}

// ---- interop with Python's safetensors (tests/fixtures/gen_safetensors.py)

namespace {

// The reference tensors of gen_safetensors.py: i = 0..5 as shape [2, 3].
fw::TensorMap reference_tensors() {
  auto i = fw::arange(6, fw::kDouble).reshape({2, 3});
  fw::TensorMap m;
  for (auto t : {fw::kHalf, fw::kBFloat16, fw::kFloat, fw::kDouble}) m[fw::dtype_str(t)] = ((i - 2) * 0.5).to(t);
  for (auto t : {fw::kInt8, fw::kInt16, fw::kInt32, fw::kInt64}) m[fw::dtype_str(t)] = (i * 7 - 20).to(t);
  m["uint8"] = (i * 50).to(fw::kUInt8);
  m["bool"] = fw::remainder(i, 2) == 0;
  auto z = fw::zeros({2, 3}, fw::kComplexFloat);
  z.view_as_real().select(-1, 0).copy_((i - 2) * 0.5);
  z.view_as_real().select(-1, 1).copy_(i * 0.25);
  m["complex64"] = z;
  m["scalar"] = fw::scalar_tensor(3.25, fw::kDouble);
  m["empty"] = fw::zeros({0, 4}, fw::kFloat);
  m["noncontig"] = fw::arange(12, fw::kFloat).reshape({3, 4}).t();
  return m;
}

const fw::MetadataMap kReferenceMetadata = {{"framework", "pt"}, {"note", "h\xc3\xa9llo \"quoted\""}};

std::string fixture(const std::string& name) { return std::string(FW_FIXTURE_DIR) + "/safetensors/" + name; }

}  // namespace

TEST_F(Serialize, LoadsFilesWrittenByPythonSafetensors) {
  auto want = reference_tensors();
  auto r = fw::load_with_metadata(fixture("torch_reference.safetensors"));
  ASSERT_EQ(r.tensors.size(), want.size());
  for (const auto& [k, t] : want) {
    ASSERT_TRUE(r.tensors.count(k)) << k;
    expect_bitwise(r.tensors[k], t, k);
  }
  EXPECT_EQ(r.metadata, kReferenceMetadata);
}

// fw_reference.safetensors was written by this writer and checked by gen_safetensors.py with
// safetensors.torch.load_file; the writer must keep producing exactly those bytes.
TEST_F(Serialize, WritesTheFilePythonChecked) {
  fw::save(reference_tensors(), path("fw.safetensors"), kReferenceMetadata);
  if (const char* out = std::getenv("FW_WRITE_SAFETENSORS_FIXTURE"))
    fw::save(reference_tensors(), out, kReferenceMetadata);
  EXPECT_EQ(read_bytes(path("fw.safetensors")), read_bytes(fixture("fw_reference.safetensors")));
}

// ---- malformed files

TEST_F(Serialize, MalformedFilesThrowNamedErrors) {
  const std::string f32_16 = R"("a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]})";
  const std::string data16(16, '\0');
  struct Case {
    std::string name, bytes, fragment;
  };
  std::vector<Case> cases = {
      {"tiny", "abc", "too small"},
      {"huge_header", raw_file("{}", "", int64_t(1) << 40), "exceeds the limit"},
      {"truncated_header", raw_file("{" + f32_16 + "}", "", 500), "exceeds the file size"},
      {"bad_json", raw_file(R"({"a":{"dtype":"F32",)", ""), "invalid JSON"},
      {"trailing", raw_file("{} x", ""), "unexpected data after"},
      {"not_object", raw_file("[]", ""), "must be a JSON object"},
      {"bad_utf8", raw_file("{\"\xff\":1}", ""), "invalid UTF-8"},
      {"deep", raw_file("{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}", ""), "nesting deeper"},
      {"unknown_dtype", raw_file(R"({"a":{"dtype":"F7","shape":[4],"data_offsets":[0,16]}})", data16),
       "unknown dtype 'F7'"},
      {"unsupported_dtype", raw_file(R"({"a":{"dtype":"U16","shape":[8],"data_offsets":[0,16]}})", data16),
       "unsupported dtype 'U16'"},
      {"negative_shape", raw_file(R"({"a":{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}})", data16),
       "is negative"},
      {"overflow_shape",
       raw_file(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}})", data16),
       "overflows"},
      {"huge_number", raw_file(R"({"a":{"dtype":"F32","shape":[99999999999999999999],"data_offsets":[0,16]}})", data16),
       "overflows"},
      {"float_shape", raw_file(R"({"a":{"dtype":"F32","shape":[4.0],"data_offsets":[0,16]}})", data16),
       "must be an integer"},
      {"out_of_range", raw_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})", data16), "out of range"},
      {"truncated_data", raw_file("{" + f32_16 + "}", data16.substr(0, 10)), "out of range"},
      {"size_mismatch", raw_file(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,16]}})", data16),
       "size mismatch"},
      {"overlap",
       raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                data16),
       "overlapping data_offsets of tensors 'a' and 'b'"},
      {"duplicate", raw_file("{" + f32_16 + "," + f32_16 + "}", data16), "duplicate key 'a'"},
      {"missing_field", raw_file(R"({"a":{"dtype":"F32","shape":[4]}})", data16), "needs dtype, shape and data_offsets"},
      {"unknown_field", raw_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16],"x":1}})", data16),
       "unknown field 'x'"},
      {"bad_metadata", raw_file(R"({"__metadata__":{"k":1}})", ""), "must be a string"},
      {"bad_bool", raw_file(R"({"a":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", std::string("\x01\x02", 2)),
       "holds the byte 2"},
      {"bad_offsets", raw_file(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[16,0]}})", data16), "out of range"},
  };
  for (const auto& c : cases) {
    std::string p = path(c.name + ".safetensors");
    write_bytes(p, c.bytes);
    try {
      fw::load(p);
      ADD_FAILURE() << c.name << ": no error";
    } catch (const fw::Error& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find(c.fragment), std::string::npos) << c.name << ": " << msg;
      EXPECT_NE(msg.find(p), std::string::npos) << c.name << ": " << msg;
    }
  }
  EXPECT_THROW(fw::load(path("does_not_exist")), fw::Error);
  EXPECT_THROW(fw::load(dir_.string()), fw::Error);
}

// Every truncation and random byte corruption of a valid file loads or throws fw::Error.
TEST_F(Serialize, CorruptedFilesNeverCrash) {
  fw::manual_seed(1);
  fw::save({{"w", fw::randn({3, 4})}, {"i", fw::arange(5)}, {"b", fw::ones({2}, fw::kBool)}}, path("ok.safetensors"),
           {{"m", "x"}});
  std::string good = read_bytes(path("ok.safetensors"));
  auto try_load = [&](const std::string& bytes) {
    write_bytes(path("bad.safetensors"), bytes);
    try {
      fw::load(path("bad.safetensors"));
    } catch (const fw::Error&) {
    }
  };
  for (size_t len = 0; len < good.size(); len++) try_load(good.substr(0, len));
  std::mt19937 rng(7);
  for (int it = 0; it < 3000; it++) {
    std::string b = good;
    int flips = 1 + int(rng() % 3);
    for (int k = 0; k < flips; k++) b[rng() % b.size()] = char(rng());
    try_load(b);
  }
}

// ---- SIGKILL during saves

TEST_F(Serialize, KilledWriterLeavesACompleteCheckpoint) {
  const std::string target = path("ckpt.safetensors");
  const int kKills = 60;
  std::mt19937 rng(123);
  int64_t last = 0, changes = 0;
  // Kills land at random moments up to max_delay_us after the writer's start; the bound adapts so
  // that (on a slow or busy machine too) about half of the kills see a new version.
  double max_delay_us = 30000;
  auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < kKills; k++) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::dup2(fds[1], 1);
      ::close(fds[0]);
      ::close(fds[1]);
      ::execl(FW_SERIALIZE_WRITER, FW_SERIALIZE_WRITER, target.c_str(), "1048576", (char*)nullptr);
      ::_exit(127);
    }
    ::close(fds[1]);
    char buf[8] = {};
    ssize_t got = ::read(fds[0], buf, 6);  // "ready\n", or EOF if the writer failed
    ::close(fds[0]);
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % uint32_t(max_delay_us)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_EQ(got, 6) << "writer failed at kill " << k << " (exit status " << status << ")";
    ASSERT_TRUE(WIFSIGNALED(status)) << "writer exited by itself at kill " << k << ", status " << status;
    if (!fs::exists(target)) {
      ASSERT_EQ(last, 0) << "checkpoint vanished after version " << last;
      max_delay_us = std::min(1e6, max_delay_us * 1.5);
      continue;
    }
    fw::SafetensorsContents f;
    try {
      f = fw::load_with_metadata(target);
    } catch (const fw::Error& e) {
      FAIL() << "checkpoint does not load after kill " << k << ": " << e.what();
    }
    int64_t v = f.tensors.at("version").item<int64_t>();
    ASSERT_GE(v, last);
    ASSERT_EQ(f.metadata.at("version"), std::to_string(v));
    const float* d = f.tensors.at("data").data_ptr<float>();
    int64_t bad = 0, first = -1;
    for (int64_t i = 0; i < 1048576; i++)
      if (d[i] != float(v)) bad++, first = first < 0 ? i : first;
    ASSERT_EQ(bad, 0) << "version " << v << ": first bad element " << first << " = " << d[first];
    const int32_t* tl = f.tensors.at("tail").data_ptr<int32_t>();
    ASSERT_TRUE(std::all_of(tl, tl + 1000, [&](int32_t x) { return x == v; })) << "version " << v;
    changes += v != last;
    max_delay_us = v != last ? std::max(5000.0, max_delay_us * 0.8) : std::min(1e6, max_delay_us * 1.5);
    last = v;
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int leftovers = 0;
  for (auto& entry : fs::directory_iterator(dir_)) leftovers += entry.path().string().find(".tmp.") != std::string::npos;
  std::printf("[kill test] %d kills in %.2f s, final version %ld, %ld kills saw a new version, %d temp files left\n",
              kKills, secs, long(last), long(changes), leftovers);
  EXPECT_GT(last, 0);
  EXPECT_LT(secs, 60.0);
}

// ---- modules and optimizers

namespace {

struct SmallNetImpl : nn::Cloneable<SmallNetImpl> {
  SmallNetImpl(int64_t out = 3) : out_(out) { reset(); }
  void reset() override {
    fc = register_module("fc", nn::Linear(4, out_));
    bn = register_module("bn", nn::BatchNorm1d(out_));
  }
  Tensor forward(const Tensor& x) { return bn->forward(fc->forward(x)); }
  int64_t out_;
  nn::Linear fc{nullptr};
  nn::BatchNorm1d bn{nullptr};
};
FW_MODULE(SmallNet);

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fw::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_F(Serialize, ModuleRoundTripAndStrictKeys) {
  fw::manual_seed(2);
  SmallNet a;
  a->forward(fw::randn({5, 4}));  // moves the running stats
  fw::save(a, path("net.safetensors"));
  SmallNet b;
  fw::load(b, path("net.safetensors"));
  auto pa = a->named_parameters(), pb = b->named_parameters();
  for (const auto& it : pa) expect_bitwise(pb[it.key()], it.value(), it.key());
  for (const auto& it : a->named_buffers()) expect_bitwise(b->named_buffers()[it.key()], it.value(), it.key());
  EXPECT_EQ(fw::load_with_metadata(path("net.safetensors")).metadata.at("format"), "pt");

  SmallNet wrong(5);
  auto before = wrong->named_parameters()["fc.weight"].clone();
  std::string msg = error_of([&] { fw::load(wrong, path("net.safetensors")); });
  EXPECT_NE(msg.find("size mismatch for 'fc.weight': copying a param with shape [3, 4] from checkpoint, the shape "
                     "in current model is [5, 4]"),
            std::string::npos)
      << msg;
  expect_bitwise(wrong->named_parameters()["fc.weight"], before, "unchanged after a failed load");

  nn::Linear lin(4, 3);
  fw::save(lin, path("lin.safetensors"));
  msg = error_of([&] { fw::load(b, path("lin.safetensors")); });
  EXPECT_NE(msg.find("missing key(s) 'fc.weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("unexpected key(s) 'bias', 'weight'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("lin.safetensors"), std::string::npos) << msg;
}

namespace {

// n steps of full-batch MSE training on fixed data.
void train(nn::Linear& model, O::Optimizer& opt, int steps) {
  fw::manual_seed(99);
  auto x = fw::randn({16, 4}), y = fw::randn({16, 3});
  for (int s = 0; s < steps; s++) {
    opt.zero_grad();
    fw::nn::functional::mse_loss(model->forward(x), y).backward();
    opt.step();
  }
}

template <class Opt, class Options>
void check_resume(const std::string& dir, Options options, Options other_options) {
  const int n = 7, m = 5;
  fw::manual_seed(3);
  nn::Linear ref(4, 3);
  nn::Linear model(4, 3);
  {
    fw::NoGradGuard g;
    model->weight.copy_(ref->weight);
    model->bias.copy_(ref->bias);
  }
  Opt ref_opt(ref->parameters(), options);
  train(ref, ref_opt, n + m);

  Opt opt(model->parameters(), options);
  train(model, opt, n);
  fw::save(model, dir + "/model.safetensors");
  fw::save(opt, dir + "/opt.safetensors");

  nn::Linear fresh(4, 3);  // different initial weights
  Opt fresh_opt(fresh->parameters(), other_options);
  fw::load(fresh, dir + "/model.safetensors");
  fw::load(fresh_opt, dir + "/opt.safetensors");
  EXPECT_EQ(fresh_opt.param_groups()[0].options().get_lr(), options.lr());
  train(fresh, fresh_opt, m);
  expect_bitwise(fresh->weight, ref->weight, "weight after resume");
  expect_bitwise(fresh->bias, ref->bias, "bias after resume");
}

}  // namespace

TEST_F(Serialize, ResumeIsBitwiseExactSgdMomentum) {
  check_resume<O::SGD>(dir_.string(), O::SGDOptions(0.05).momentum(0.9), O::SGDOptions(0.7).momentum(0.9));
  auto meta = fw::load_with_metadata(path("opt.safetensors")).metadata;
  EXPECT_EQ(meta.at("param_groups.0.lr"), "0.05");
  EXPECT_EQ(fw::load(path("opt.safetensors")).count("state.0.momentum_buffer"), 1u);
}

TEST_F(Serialize, ResumeIsBitwiseExactAdam) {
  check_resume<O::Adam>(dir_.string(), O::AdamOptions(0.01).amsgrad(true), O::AdamOptions(0.3).amsgrad(true));
  EXPECT_EQ(fw::load_with_metadata(path("opt.safetensors")).metadata.at("state.0.step"), "7");
}

TEST_F(Serialize, OptimizerLoadErrors) {
  nn::Linear lin(4, 3);
  O::SGD opt(lin->parameters(), O::SGDOptions(0.1).momentum(0.9));
  train(lin, opt, 1);
  fw::save(opt, path("opt.safetensors"));
  fw::save(lin, path("lin.safetensors"));

  O::SGD fewer({lin->weight}, O::SGDOptions(0.1).momentum(0.9));
  EXPECT_NE(error_of([&] { fw::load(fewer, path("opt.safetensors")); }).find("the checkpoint is for 1 param group(s) with 2 parameter(s)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fw::load(opt, path("lin.safetensors")); }).find("not an fw optimizer checkpoint"),
            std::string::npos);

  nn::Linear other(3, 4);  // same parameter count, other shapes
  O::SGD other_opt(other->parameters(), O::SGDOptions(0.1).momentum(0.9));
  std::string msg = error_of([&] { fw::load(other_opt, path("opt.safetensors")); });
  EXPECT_NE(msg.find("size mismatch for 'state.0.momentum_buffer'"), std::string::npos) << msg;
  EXPECT_TRUE(other_opt.state().empty());
}

// LBFGS keeps one flat state over all parameters (under parameter 0): its checkpoint loads back
// into an LBFGS over the same parameters, and the resumed run matches an uninterrupted one.
TEST_F(Serialize, LbfgsCheckpointResumes) {
  auto run = [](nn::Linear& model, O::LBFGS& opt, int steps) {
    fw::manual_seed(7);
    auto x = fw::randn({16, 4}), y = fw::randn({16, 3});
    for (int s = 0; s < steps; s++)
      opt.step([&] {
        opt.zero_grad();
        auto l = fw::nn::functional::mse_loss(model->forward(x), y);
        l.backward();
        return l;
      });
  };
  fw::manual_seed(3);
  nn::Linear ref(4, 3), model(4, 3);
  {
    fw::NoGradGuard g;
    model->weight.copy_(ref->weight);
    model->bias.copy_(ref->bias);
  }
  O::LBFGS ref_opt(ref->parameters(), O::LBFGSOptions(0.5).max_iter(3));
  run(ref, ref_opt, 4);
  O::LBFGS opt(model->parameters(), O::LBFGSOptions(0.5).max_iter(3));
  run(model, opt, 2);
  fw::save(opt, path("lbfgs.safetensors"));
  O::LBFGS again(model->parameters(), O::LBFGSOptions(0.5).max_iter(3));
  fw::load(again, path("lbfgs.safetensors"));
  run(model, again, 2);
  expect_bitwise(model->weight, ref->weight, "weight after an LBFGS resume");
  // A flat state of the wrong length is refused.
  O::LBFGS fewer({model->weight}, O::LBFGSOptions(0.5));
  std::string msg = error_of([&] { fw::load(fewer, path("lbfgs.safetensors")); });
  EXPECT_NE(msg.find("the checkpoint is for 1 param group(s) with 2 parameter(s)"), std::string::npos) << msg;
  nn::Linear other(3, 4);  // same counts (2 params), other total size
  O::LBFGS other_opt(other->parameters(), O::LBFGSOptions(0.5));
  msg = error_of([&] { fw::load(other_opt, path("lbfgs.safetensors")); });
  EXPECT_NE(msg.find("the flat state over all parameters has [16]"), std::string::npos) << msg;
}

// libtorch's Optimizer::save / load with archives (optimizer.save(archive)).
TEST_F(Serialize, OptimizerArchives) {
  fw::manual_seed(5);
  nn::Linear model(4, 3);
  O::Adam opt(model->parameters(), O::AdamOptions(0.01).amsgrad(true));
  train(model, opt, 3);
  fw::serialize::OutputArchive out, outer;
  opt.save(out);
  outer.write("optimizer", out);
  outer.save_to(path("archive.safetensors"));
  fw::serialize::InputArchive in, inner;
  in.load_from(path("archive.safetensors"));
  in.read("optimizer", inner);
  O::Adam loaded(model->parameters(), O::AdamOptions(0.5).amsgrad(true));
  loaded.load(inner);
  EXPECT_EQ(loaded.param_groups()[0].options().get_lr(), 0.01);
  auto a = opt.state_dict(), b = loaded.state_dict();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); i++) {
    EXPECT_EQ(a[i].first, b[i].first);
    EXPECT_TRUE(fw::equal(a[i].second, b[i].second)) << a[i].first;
  }
  // An archive without optimizer state is refused with a message.
  fw::serialize::InputArchive empty;
  EXPECT_NE(error_of([&] { loaded.load(empty); }).find("holds no optimizer state"), std::string::npos);
}
