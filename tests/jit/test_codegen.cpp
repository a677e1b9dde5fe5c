// Codegen: the generated source is readable, the disk cache is reused, a corrupted cache file is
// detected and rebuilt, and several processes compiling the same graph at once share the cache.
#include <gtest/gtest.h>

#include <cmath>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fw/fw.h>
#include <fw/jit.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "codegen/compiler.h"

extern char** environ;

namespace {

namespace fs = std::filesystem;

struct CacheDir {
  std::string path, old;
  bool had_old = false;
  CacheDir() {
    char tmpl[] = "/tmp/fw_cache_test_XXXXXX";
    path = mkdtemp(tmpl);
    if (const char* o = std::getenv("FW_CACHE_DIR")) {
      old = o;
      had_old = true;
    }
    setenv("FW_CACHE_DIR", path.c_str(), 1);
    fw::jit::reset();
  }
  ~CacheDir() {
    if (had_old) setenv("FW_CACHE_DIR", old.c_str(), 1);
    else unsetenv("FW_CACHE_DIR");
    fw::jit::reset();
    fs::remove_all(path);
  }
  std::vector<fs::path> files(const std::string& ext) const {
    std::vector<fs::path> r;
    for (auto& e : fs::directory_iterator(path))
      if (e.path().extension() == ext) r.push_back(e.path());
    return r;
  }
};

fw::Tensor fused(const fw::Tensor& x, const fw::Tensor& y) { return (x * y + 1).tanh() * 3 - y; }

TEST(Codegen, GeneratedSourceIsReadableAndNamedAfterItsOps) {
  CacheDir dir;
  auto f = fw::compile(fused);
  fw::Tensor x = fw::randn({64}), y = fw::randn({64});
  EXPECT_TRUE(fw::allclose(f(x, y), fused(x, y), 1e-5, 1e-6));
  auto srcs = dir.files(".cpp");
  ASSERT_EQ(srcs.size(), 1u);
  std::ifstream in(srcs[0]);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string src = ss.str();
  EXPECT_NE(src.find("extern \"C\" void fused_mul_add_tanh_mul_sub_0("), std::string::npos) << src;
  EXPECT_NE(src.find("//   %3 = add(%2; s0=1"), std::string::npos) << src;  // the source graph, as a comment
  EXPECT_NE(src.find("par_for("), std::string::npos);  // rows/blocks split over fw's thread pool
  EXPECT_EQ(dir.files(".so").size(), 1u);
  EXPECT_TRUE(dir.files(".tmp").empty());
}

// Run by the test below in child processes (FW_JIT_TEST_CHILD=1).
TEST(Codegen, ChildCompilesTheSharedGraph) {
  if (!std::getenv("FW_JIT_TEST_CHILD")) GTEST_SKIP() << "runs as a child of ConcurrentProcessesShareTheCache";
  fw::manual_seed(1);
  fw::Tensor x = fw::randn({1000}), y = fw::randn({1000});
  auto f = fw::compile(fused);
  ASSERT_TRUE(fw::allclose(f(x, y), fused(x, y), 1e-5, 1e-6));
}

// Runs Codegen.ChildCompilesTheSharedGraph in n fresh processes at once; all must pass.
void run_children(int n) {
  std::string exe = fs::read_symlink("/proc/self/exe");
  std::vector<pid_t> pids;
  std::vector<std::string> env_s;
  for (char** e = environ; *e; e++) env_s.push_back(*e);
  env_s.push_back("FW_JIT_TEST_CHILD=1");
  std::vector<char*> envp;
  for (auto& s : env_s) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=Codegen.ChildCompilesTheSharedGraph";
  for (int i = 0; i < n; i++) {
    char* argv[] = {exe.data(), filter.data(), nullptr};
    pid_t pid;
    ASSERT_EQ(posix_spawn(&pid, exe.c_str(), nullptr, nullptr, argv, envp.data()), 0);
    pids.push_back(pid);
  }
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "child exit status " << status;
  }
}

TEST(Codegen, ConcurrentProcessesShareTheCache) {
  CacheDir dir;
  run_children(4);
  EXPECT_EQ(dir.files(".so").size(), 1u);
  for (auto& e : fs::directory_iterator(dir.path))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(Codegen, DiskCacheIsReusedAndACorruptedFileIsRebuilt) {
  CacheDir dir;
  run_children(1);
  auto libs = dir.files(".so");
  ASSERT_EQ(libs.size(), 1u);
  auto stamp = fs::last_write_time(libs[0]);
  run_children(1);  // a fresh process finds the library on disk
  EXPECT_EQ(fs::last_write_time(libs[0]), stamp);
  for (const char* junk : {"", "garbage that is not an ELF file"}) {
    fs::remove(libs[0]);
    { std::ofstream(libs[0]) << junk; }
    run_children(1);
    EXPECT_GT(fs::file_size(libs[0]), 1000u);  // detected and rebuilt
  }
  // Truncated libraries (a full disk, a killed copy): dlopen would map segments past the end of
  // the file and die of SIGBUS on them; the ELF headers are checked against the size first.
  const auto full = fs::file_size(libs[0]);
  fs::path good = libs[0].string() + ".good";
  fs::copy_file(libs[0], good);
  for (uintmax_t keep : {uintmax_t(64), uintmax_t(1000), uintmax_t(4096), full / 2, full - 100, full - 1}) {
    fs::remove(libs[0]);
    fs::copy_file(good, libs[0]);
    fs::resize_file(libs[0], keep);
    run_children(1);  // the child must not crash
    EXPECT_EQ(fs::file_size(libs[0]), full) << "truncated to " << keep << " bytes: not rebuilt";
  }
  // Damaged contents at full size (headers intact): zeroed from some offset on, or a run of other
  // bytes in the middle. dlopen died applying the damaged relocations; the checksum trailer
  // catches them first (Note [Library checksums]).
  auto read_all = [](const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  };
  const std::string pristine = read_all(good);
  for (int variant = 0; variant < 3; variant++) {
    std::string bytes = pristine;
    const size_t from = variant == 0 ? 0x3000 : variant == 1 ? bytes.size() / 3 : bytes.size() / 2;
    ASSERT_LT(from, bytes.size());
    for (size_t i = from; i < (variant == 2 ? from + 64 : bytes.size()); i++) bytes[i] = char(variant == 2 ? 0x5a : 0);
    fs::remove(libs[0]);
    { std::ofstream(libs[0], std::ios::binary) << bytes; }
    run_children(1);  // the child must not crash
    const std::string now = read_all(libs[0]);
    EXPECT_TRUE(now.size() == full && now != bytes) << "damaged variant " << variant << ": not rebuilt";
  }
  fs::remove(good);
  // A valid library that holds other kernels under this name is rejected by its key.
  auto g = fw::compile([](const fw::Tensor& a) { return (a * 2).exp() + 1; });
  g(fw::randn({10}));
  fs::path other;
  for (auto& p : dir.files(".so"))
    if (p != libs[0]) other = p;
  ASSERT_FALSE(other.empty());
  fs::remove(libs[0]);
  fs::copy_file(other, libs[0]);
  run_children(1);
  EXPECT_NE(fs::file_size(libs[0]), fs::file_size(other));
}

TEST(Codegen, CompilerFailureIsAClearError) {
  CacheDir dir;
  setenv("FW_CXX", "/bin/false", 1);
  fw::jit::reset();
  auto f = fw::compile(fused);
  try {
    f(fw::randn({8}), fw::randn({8}));
    ADD_FAILURE() << "expected an error";
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("host compiler failed"), std::string::npos) << e.what();
  }
  unsetenv("FW_CXX");
}

}  // namespace

namespace {
TEST(Codegen, RowKernelsFuseSoftmaxNormalisationsAndPerRowValues) {
  CacheDir dir;
  auto fn = [](const fw::Tensor& x, const fw::Tensor& w, const fw::Tensor& b) {
    fw::Tensor h = x * w + b;
    fw::Tensor mu = h.mean({-1}, true);
    fw::Tensor xc = h - mu;
    fw::Tensor rstd = ((xc * xc).mean({-1}, true) + 1e-5).rsqrt();       // per-row scalar ops
    fw::Tensor ln = xc * rstd;
    return std::make_tuple(fw::softmax(ln, -1), fw::log_softmax(h, 1), h.amax({-1}), ln.sum({-1}, false) * 2);
  };
  auto f = fw::compile(fn);
  fw::manual_seed(11);
  for (int64_t rows : {7, 64}) {
    fw::Tensor x = fw::randn({rows, 33}), w = fw::randn({33}), b = fw::randn({rows, 1});
    x.index_put_({1, 3}, std::numeric_limits<float>::quiet_NaN());  // NaN rows stay NaN, like eager
    x.index_put_({2, 5}, std::numeric_limits<float>::infinity());
    auto [a1, a2, a3, a4] = f(x, w, b);
    auto [e1, e2, e3, e4] = fn(x, w, b);
    EXPECT_TRUE(fw::allclose(a1, e1, 1e-5, 1e-6, true)) << (a1 - e1).abs().nan_to_num(0).max();
    EXPECT_TRUE(fw::allclose(a2, e2, 1e-5, 1e-5, true));
    EXPECT_TRUE(fw::allclose(a3, e3, 0, 0, true));
    EXPECT_TRUE(fw::allclose(a4, e4, 1e-4, 1e-4, true));
  }
  bool row = false;
  for (auto& p : dir.files(".cpp")) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    row = row || ss.str().find("row kernel over the last dimension") != std::string::npos;
  }
  EXPECT_TRUE(row);
}

std::string read_sources(const CacheDir& dir) {
  std::string all;
  for (auto& p : dir.files(".cpp")) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    all += ss.str();
  }
  return all;
}

// Note [Row kernel segments]: a row's pointwise chain and the reductions it feeds run as one loop
// with the intermediates in registers, yet every element rounds as the eager ops do (no product
// contracted into a following add), so the chain's values equal eager's bit for bit.
TEST(Codegen, RowKernelSegmentsKeepEagerRounding) {
  CacheDir dir;
  auto fn = [](const fw::Tensor& x, const fw::Tensor& w, const fw::Tensor& b) {
    fw::Tensor y = (x * w) * x + b;  // products feeding adds
    fw::Tensor z = (y - y.mean({-1}, true)) * w + 0.25;
    fw::Tensor top = y.amax({-1}, true);
    fw::Tensor u = top * 1.7 - top;  // per-row scalar ops: a product then an add
    return std::make_tuple(y, z, z.amax({-1}), fw::softmax(z * 3, -1), u);
  };
  auto f = fw::compile(fn);
  fw::manual_seed(4);
  for (auto dt : {fw::kFloat, fw::kDouble}) {
    fw::Tensor x = fw::randn({37, 301}, dt), w = fw::randn({301}, dt), b = fw::randn({37, 1}, dt);
    auto [y1, z1, m1, s1, u1] = f(x, w, b);
    auto [y2, z2, m2, s2, u2] = fn(x, w, b);
    EXPECT_TRUE(fw::equal(y1, y2));
    EXPECT_TRUE(fw::equal(u1, u2)) << (u1 - u2).abs().max();
    EXPECT_TRUE(fw::allclose(z1, z2, 1e-5, 1e-6));  // the mean reassociates
    EXPECT_TRUE(fw::allclose(m1, m2, 1e-5, 1e-6));
    EXPECT_TRUE(fw::allclose(s1, s2, 1e-5, 1e-6));
  }
  std::string src = read_sources(dir);
  EXPECT_NE(src.find("row kernel over the last dimension"), std::string::npos);
  EXPECT_NE(src.find("        const float t"), std::string::npos) << "no fused segment loop:\n" << src;
}

// Note [Streaming stores]: a row kernel with at least 8 MiB of row outputs streams them from its
// row buffers (rows of 1003 floats start at every alignment, so each has an unaligned head and
// tail); the rows come out as the same kernel computes them below the threshold (the first rows
// through a second, small call), next to a strided output (no streaming) and a per-row value.
TEST(Codegen, LargeRowOutputsAreStreamedWithTheSameValues) {
  CacheDir dir;
  auto fn = [](const fw::Tensor& x, const fw::Tensor& g) {
    fw::Tensor y = fw::softmax(fw::layer_norm(x, {x.size(-1)}, g), -1);
    return std::make_tuple(y, x.amax({-1}), y * 2);
  };
  auto f = fw::compile(fn, fw::CompileOptions().dynamic(true));
  fw::manual_seed(5);
  fw::Tensor x = fw::randn({2600, 1003}) * 2, g = fw::randn({1003});
  auto [y1, m1, z1] = f(x, g);
  auto [y2, m2, z2] = fn(x, g);
  EXPECT_TRUE(fw::allclose(y1, y2, 1e-5, 1e-7)) << (y1 - y2).abs().max();
  EXPECT_TRUE(fw::equal(m1, m2));
  EXPECT_TRUE(fw::equal(z1, y1 * 2));
  auto [y3, m3, z3] = f(x.narrow(0, 0, 37).contiguous(), g);  // 148 KiB: plain stores
  EXPECT_TRUE(fw::equal(y3, y1.narrow(0, 0, 37)));
  EXPECT_TRUE(fw::equal(z3, z1.narrow(0, 0, 37)));
  // a transposed input: the row kernel gathers its rows, still streams its outputs
  fw::Tensor xt = x.t().contiguous().t();
  auto [y4, m4, z4] = f(xt, g);
  EXPECT_TRUE(fw::equal(y4, y1));
  std::string src = read_sources(dir);
  EXPECT_NE(src.find("stream_store("), std::string::npos) << src;
}

// Note [Blocked float sums]: a row kernel sums non-negative terms (exp, x * x) in float blocks
// of 256 added to a double; sums of either sign keep double lanes. Rows of 70001 floats (many
// blocks and a tail) and of 5: the results are within a few ulp of float64's.
TEST(Codegen, NonNegativeRowSumsGoInFloatBlocks) {
  CacheDir dir;
  auto fn = [](const fw::Tensor& x) {
    fw::Tensor e = fw::exp(x - x.amax({-1}, true));
    return std::make_tuple(e.sum({-1}), (x * x).mean({-1}), x.sum({-1}), fw::softmax(fw::layer_norm(x, {x.size(-1)}), -1));
  };
  auto f = fw::compile(fn, fw::CompileOptions().dynamic(true));
  fw::manual_seed(8);
  for (fw::Tensor x : {fw::randn({6, 70001}) * 2 + 0.5, fw::randn({4, 5}), fw::full({3, 70001}, 0.1f)}) {
    auto [s1, q1, t1, y1] = f(x);
    auto [s2, q2, t2, y2] = fn(x.to(fw::kDouble));
    auto rel = [](const fw::Tensor& a, const fw::Tensor& b) {
      return ((a.to(fw::kDouble) - b).abs() / b.abs()).max().item<double>();
    };
    EXPECT_LT(rel(s1, s2), 3e-6) << x.sizes();
    EXPECT_LT(rel(q1, q2), 3e-6) << x.sizes();
    EXPECT_LT(rel(y1, y2), 5e-6) << x.sizes();
    // either sign: double lanes, the error measured against the sum of magnitudes
    EXPECT_LT(((t1.to(fw::kDouble) - t2).abs() / x.to(fw::kDouble).abs().sum({-1})).max().item<double>(), 1e-7);
  }
  std::string src = read_sources(dir);
  EXPECT_NE(src.find("jb += 256"), std::string::npos) << src;
}

// Note [One loop per block]: a pointwise kernel computes its chain in one loop with the values in
// locals, and still rounds every op as eager does: products feeding adds are not contracted, and
// erf/gelu/exp inline (not VecF32 calls) give eager's floats; SLEEF calls (tanh, log) sit between
// loops.
TEST(Codegen, PointwiseChainsInOneLoopKeepEagerRounding) {
  CacheDir dir;
  auto fn = [](const fw::Tensor& x, const fw::Tensor& w, const fw::Tensor& b) {
    fw::Tensor g = fw::gelu(x * w + b);                    // mul -> add -> gelu
    fw::Tensor e = fw::tanh(g * 0.5) * w - x * x;          // a SLEEF call inside the chain
    fw::Tensor c = fw::where(x > 0, fw::erf(e) * 3 + fw::exp(b), x).to(fw::kDouble) * 2;  // select, cast
    return std::make_tuple(g, e, c);
  };
  auto f = fw::compile(fn);
  fw::manual_seed(12);
  for (auto sz : {std::vector<int64_t>{3000}, {7, 513}, {1}}) {
    fw::Tensor x = fw::randn(sz) * 3, w = fw::randn(sz), b = fw::randn(sz);
    auto [g1, e1, c1] = f(x, w, b);
    auto [g2, e2, c2] = fn(x, w, b);
    EXPECT_TRUE(fw::equal(g1, g2)) << (g1 - g2).abs().max();
    EXPECT_TRUE(fw::equal(e1, e2)) << (e1 - e2).abs().max();
    EXPECT_TRUE(fw::equal(c1, c2)) << (c1 - c2).abs().max();
  }
  std::string src = read_sources(dir);
  EXPECT_NE(src.find("pointwise loop"), std::string::npos);
  EXPECT_NE(src.find("fw::fn::Gelu{}(t"), std::string::npos) << "gelu not inline in the fused loop:\n" << src;
  EXPECT_NE(src.find("fw::fn::Exp{}("), std::string::npos) << "exp not inline in the fused loop:\n" << src;
  EXPECT_NE(src.find("VecF32<fw::fn::Tanh>::run"), std::string::npos) << src;
}

// Note [Reduction kernels]: a prologue with every reduction over the same dims that reads it, in
// column form (the reduced dims outside the contiguous one: a bias gradient) or row form, over
// several reduced dims, for row-major, channels-last and permuted inputs.
TEST(Codegen, ReductionKernelsFuseColumnsSeveralDimsAndSeveralOutputs) {
  CacheDir dir;
  fw::manual_seed(21);
  auto bias_grad = [](const fw::Tensor& g, const fw::Tensor& h) {
    fw::Tensor masked = g * (h > 0);
    return std::make_tuple(masked, masked.sum({0}));
  };
  auto f = fw::compile(bias_grad);
  for (auto sz : {std::vector<int64_t>{256, 1024}, {1000, 5}, {3, 1500}, {1, 600}, {700, 1}}) {
    fw::Tensor g = fw::randn(sz), h = fw::randn(sz);
    auto [m1, s1] = f(g, h);
    auto [m2, s2] = bias_grad(g, h);
    EXPECT_TRUE(fw::equal(m1, m2)) << sz[0] << "x" << sz[1];
    EXPECT_TRUE(fw::allclose(s1, s2, 1e-5, 1e-5)) << sz[0] << "x" << sz[1] << ": " << (s1 - s2).abs().max();
  }
  auto stats = [](const fw::Tensor& g, const fw::Tensor& x) {
    fw::Tensor gx = g * x;
    return std::make_tuple(g.sum({0, 2, 3}), (gx + 1).sum({0, 2, 3}, true), gx.mean({0, 2, 3}), (g - x).amax({0, 2, 3}),
                           (g * 2).amin({-1, 0, 2}));
  };
  auto fs = fw::compile(stats);
  for (auto sz : {std::vector<int64_t>{16, 8, 10, 8}, {3, 5, 7, 2}, {2, 600, 3, 3}}) {
    fw::Tensor g = fw::randn(sz), x = fw::randn(sz);
    g.index_put_({1, 2, 1, 1}, std::numeric_limits<float>::quiet_NaN());  // channel 2's amax/amin are NaN
    for (int layout = 0; layout < 3; layout++) {
      fw::Tensor gi = g, xi = x;
      if (layout == 1) {
        gi = g.contiguous(fw::MemoryFormat::ChannelsLast);
        xi = x.contiguous(fw::MemoryFormat::ChannelsLast);
      } else if (layout == 2) {  // reversed dims in memory
        gi = g.permute({3, 2, 1, 0}).contiguous().permute({3, 2, 1, 0});
        xi = x.permute({3, 2, 1, 0}).contiguous().permute({3, 2, 1, 0});
      }
      auto [a1, a2, a3, a4, a5] = fs(gi, xi);
      auto [e1, e2, e3, e4, e5] = stats(g, x);
      EXPECT_TRUE(fw::allclose(a1, e1, 1e-5, 1e-4, true)) << layout << ": " << a1 << e1;
      EXPECT_TRUE(fw::allclose(a2, e2, 1e-5, 1e-4, true)) << layout;
      EXPECT_EQ(a2.sizes(), e2.sizes());
      EXPECT_TRUE(fw::allclose(a3, e3, 1e-5, 1e-5, true)) << layout;
      EXPECT_TRUE(fw::allclose(a4, e4, 0, 0, true)) << layout << ": " << a4 << e4;
      EXPECT_TRUE(fw::allclose(a5, e5, 0, 0, true)) << layout;
    }
  }
  std::string src = read_sources(dir);
  EXPECT_NE(src.find("reduction loop (5 outputs)"), std::string::npos) << src;  // one pass for all five
}

// A full reduction splits its serial range into pieces combined in a fixed order: every thread
// busy, and the same bits whatever the thread count.
TEST(Codegen, FullReductionsSplitAcrossThreadsDeterministically) {
  CacheDir dir;
  auto dot = [](const fw::Tensor& x, const fw::Tensor& y) { return std::make_tuple((x * y).sum(), (x - y).amax()); };
  auto f = fw::compile(dot);
  fw::manual_seed(3);
  for (auto sz : {std::vector<int64_t>{1 << 20}, {1000, 700}}) {
    fw::Tensor x = fw::randn(sz, fw::kDouble), y = fw::randn(sz, fw::kDouble);
    const int threads = fw::get_num_threads();
    fw::set_num_threads(1);
    auto [s1, m1] = f(x, y);
    fw::set_num_threads(std::max(2, threads));
    auto [s2, m2] = f(x, y);
    fw::set_num_threads(threads);
    EXPECT_EQ(s1.item<double>(), s2.item<double>());
    EXPECT_EQ(m1.item<double>(), m2.item<double>());
    auto [es, em] = dot(x, y);
    EXPECT_NEAR(s1.item<double>(), es.item<double>(), 1e-9 * std::sqrt(double(x.numel())));
    EXPECT_EQ(m1.item<double>(), em.item<double>());
  }
  std::string src = read_sources(dir);
  EXPECT_EQ(src.find("row kernel"), std::string::npos) << "a vector's sum went to a one-row row kernel";
}

// Note [Decompositions]: batch norm in evaluation mode becomes primitives, so BN + ReLU after a
// convolution is one pass.
TEST(Codegen, BatchNormDecomposesAndFusesWithItsConsumer) {
  namespace F = fw::nn::functional;
  fw::manual_seed(5);
  fw::Tensor cw = fw::randn({4, 3, 3, 3}) * 0.3, w = fw::rand({4}) + 0.5, b = fw::randn({4});
  auto block = [&](const fw::Tensor& x, const fw::Tensor& rm, const fw::Tensor& rv, bool training) {
    fw::Tensor h = F::conv2d(x, cw, F::Conv2dFuncOptions().padding(1));
    return fw::relu(F::batch_norm(h, rm, rv, F::BatchNormFuncOptions().weight(w).bias(b).training(training).momentum(0.2)));
  };
  {  // evaluation: the running statistics are per-channel constants
    CacheDir dir;
    fw::Tensor rm = fw::randn({4}) * 0.1, rv = fw::rand({4}) + 0.5;
    auto f = fw::compile([&](const fw::Tensor& x) { return block(x, rm, rv, false); });
    for (int64_t n : {2, 5}) {
      fw::Tensor x = fw::randn({n, 3, 6, 7});
      EXPECT_TRUE(fw::allclose(f(x), block(x, rm, rv, false), 1e-5, 1e-5));
    }
    std::string src = read_sources(dir);
    EXPECT_NE(src.find("fused_sub_mul_add_relu_"), std::string::npos) << src;  // one pass after the conv
  }
  {  // training keeps the op (Note [Decompositions]): batch statistics, running buffers and
     // gradients as eager, with the ReLU after it
    CacheDir dir;
    fw::Tensor rm1 = fw::zeros({4}), rv1 = fw::ones({4}), rm2 = rm1.clone(), rv2 = rv1.clone();
    auto f = fw::compile([&](const fw::Tensor& x) { return block(x, rm1, rv1, true); });
    for (int step = 0; step < 3; step++) {
      fw::Tensor x = fw::randn({3, 3, 5, 4}) * (step + 1) + step;
      fw::Tensor x1 = x.clone().requires_grad_(true), x2 = x.clone().requires_grad_(true);
      fw::Tensor y1 = f(x1), y2 = block(x2, rm2, rv2, true);
      EXPECT_TRUE(fw::allclose(y1, y2, 1e-4, 1e-5)) << (y1 - y2).abs().max();
      fw::Tensor gy = fw::randn(y1.sizes());
      (y1 * gy).sum().backward();
      (y2 * gy).sum().backward();
      EXPECT_TRUE(fw::allclose(x1.grad(), x2.grad(), 1e-4, 1e-5)) << (x1.grad() - x2.grad()).abs().max();
      EXPECT_TRUE(fw::allclose(rm1, rm2, 1e-5, 1e-6)) << rm1 << rm2;
      EXPECT_TRUE(fw::allclose(rv1, rv2, 1e-5, 1e-6)) << rv1 << rv2;
    }
  }
}
// Note [Parallel kernel builds]: a graph with 8 kernels builds as 2 libraries at once (when the
// machine has 2+ hardware threads), each cached on its own; results as eager.
TEST(Codegen, ManyKernelsBuildAsSeveralLibrariesInParallel) {
  CacheDir dir;
  auto fn = [](const std::vector<fw::Tensor>& xs) {
    std::vector<fw::Tensor> ys;
    double k = 1;  // a different constant per kernel: 8 distinct functions (Note [Shared kernel code])
    for (const auto& x : xs) ys.push_back(((x * k++ + 1).tanh() - x).exp());
    return ys;
  };
  std::vector<fw::Tensor> xs;
  for (int64_t k = 1; k <= 8; k++) xs.push_back(fw::randn({k, 5}));
  auto f = fw::compile(fn);
  auto got = f(xs), want = fn(xs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); i++) EXPECT_TRUE(fw::allclose(got[i], want[i], 1e-5, 1e-6)) << i;
  const size_t parts = std::thread::hardware_concurrency() >= 2 ? 2u : 1u;
  EXPECT_EQ(dir.files(".so").size(), parts);
  std::string src = read_sources(dir);
  for (int k = 0; k < 8; k++)  // every kernel in exactly one part
    EXPECT_NE(src.find("fused_mul_add_tanh_sub_exp_" + std::to_string(k) + "("), std::string::npos) << k;
  fw::jit::reset();  // a fresh compile loads both parts from the disk cache
  auto again = fw::compile(fn)(xs);
  for (size_t i = 0; i < again.size(); i++) EXPECT_TRUE(fw::allclose(again[i], want[i], 1e-5, 1e-6)) << i;
  EXPECT_EQ(dir.files(".so").size(), parts);
}
// Note [Shared kernel code]: kernels whose code differs only in names (a loop of the same
// computation between matrix products) run one compiled function, emitted once; the results are
// eager's, also for a second shape (kernels take sizes as arguments).
TEST(Codegen, RepeatedKernelsShareOneFunction) {
  CacheDir dir;
  fw::manual_seed(3);
  fw::Tensor w = fw::randn({16, 16}) * 0.25;
  auto fn = [&](const fw::Tensor& x0, const fw::Tensor& scale) {
    fw::Tensor x = x0;
    for (int i = 0; i < 6; i++) x = (fw::mm(x, w) * scale + 1).tanh() * 0.5 - x;
    return (fw::mm(x, w) * 3 + 2).sigmoid();  // other constants, another function
  };
  auto f = fw::compile(fn, fw::CompileOptions().dynamic(false));
  for (int64_t rows : {8, 5}) {
    fw::Tensor x = fw::randn({rows, 16}), scale = fw::randn({16});
    EXPECT_TRUE(fw::allclose(f(x, scale), fn(x, scale), 1e-5, 1e-6)) << rows;
  }
  std::string src = read_sources(dir);
  size_t defs = 0;
  for (size_t at = src.find("extern \"C\" void fused_"); at != std::string::npos;
       at = src.find("extern \"C\" void fused_", at + 1))
    defs++;
  // Two functions: the loop's and the last line's; the second shape's graph has the same source
  // (no sizes in it), so it loads the same library.
  EXPECT_EQ(defs, 2u) << src;
  EXPECT_NE(src.find("// also run by: fused_"), std::string::npos) << src;
}

// Numbers are not names: kernels whose constants print as 0x0.8p-1022 (subnormal) and
// 0x1.8p-1022 differ only in the hex float's leading digit, and must stay two functions.
TEST(Codegen, KernelsDifferingInAConstantDoNotShare) {
  CacheDir dir;
  fw::manual_seed(4);
  const double a = std::ldexp(1.0, -1023), b = std::ldexp(1.5, -1022);
  fw::Tensor w = fw::randn({8, 8}, fw::TensorOptions(fw::kDouble));
  auto fn = [&](const fw::Tensor& x1, const fw::Tensor& x2) {  // two shapes: two kernels
    return std::vector<fw::Tensor>{(fw::mm(x1, w) * a).neg(), (fw::mm(x2, w) * b).neg()};
  };
  fw::Tensor x1 = fw::randn({4, 8}, fw::TensorOptions(fw::kDouble)), x2 = fw::randn({3, 8}, fw::TensorOptions(fw::kDouble));
  auto got = fw::compile(fn)(x1, x2), want = fn(x1, x2);
  EXPECT_TRUE(fw::equal(got[0], want[0]));
  EXPECT_TRUE(fw::equal(got[1], want[1]));
  std::string src = read_sources(dir);
  EXPECT_NE(src.find("0x0.8p-1022"), std::string::npos) << src;
  EXPECT_NE(src.find("0x1.8p-1022"), std::string::npos) << src;
}

}  // namespace
