// libtorch spellings beyond namespace fw (include/fw/torch_compat.h and friends), exercised the way
// a libtorch program uses them: at:: and c10:: names, TORCH_MODULE / TORCH_ARG / TORCH_CHECK,
// AT_DISPATCH_*, at::parallel_for / parallel_reduce / get_thread_num, c10::irange, streams in
// torch::save / torch::load, InferenceMode::is_enabled, the distributed samplers and the MNIST
// dataset.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <complex>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

#include <fw/fw.h>
#include <fw/jit.h>

#include "tests/expect_error.h"
#include "tests/fixture.h"

namespace torch = fw;
namespace nn = torch::nn;

namespace {

struct ScaleOptions {
  explicit ScaleOptions(int64_t size) : size_(size) {}
  TORCH_ARG(int64_t, size);
  TORCH_ARG(double, factor) = 2.0;
};

struct ScaleImpl : nn::Module {
  explicit ScaleImpl(const ScaleOptions& o) : options(o) {
    weight = register_parameter("weight", torch::full({o.size()}, o.factor()));
  }
  torch::Tensor forward(const torch::Tensor& x) {
    TORCH_CHECK(x.size(-1) == options.size(), "Scale expected last dim ", options.size(), ", got ", x.size(-1));
    return x * weight;
  }
  ScaleOptions options;
  torch::Tensor weight;
};
TORCH_MODULE(Scale);

// Doubles every element in place, whatever the dtype AT_DISPATCH binds scalar_t to.
template <class scalar_t>
void double_in_place(scalar_t* p, int64_t n) {
  for (auto i : c10::irange(n)) p[i] *= 2;
}

}  // namespace

TEST(TorchCompat, NamespacesAndModuleMacros) {
  at::Tensor x = at::ones({2, 3});
  c10::optional<int64_t> none = c10::nullopt;
  EXPECT_FALSE(none.has_value());
  c10::ScalarType st = at::kFloat;
  EXPECT_EQ(st, x.scalar_type());
  EXPECT_STREQ(c10::toString(at::kLong), "Long");
  EXPECT_EQ(c10::str("a", 1, '-', 2.5), "a1-2.5");
  EXPECT_EQ(c10::str(), "");

  Scale s(ScaleOptions(3).factor(0.5));
  EXPECT_EQ(s->options.size(), 3);
  EXPECT_DOUBLE_EQ(s->options.factor(), 0.5);
  EXPECT_DOUBLE_EQ(ScaleOptions(1).factor(), 2.0);
  FW_EXPECT_CLOSE(s(x), torch::full({2, 3}, 0.5), 0, 0);
  EXPECT_ERROR(s(torch::ones({2, 4})), "Scale expected last dim 3, got 4");
  EXPECT_EQ(s->named_parameters().size(), 1u);
}

TEST(TorchCompat, CheckMacros) {
  // The default message names the condition, as libtorch's does.
  // The checks are statements, as in libtorch; RUN makes one an expression for EXPECT_ERROR.
#define RUN(...) [&] { __VA_ARGS__; }()
  EXPECT_ERROR(RUN(TORCH_CHECK(1 + 1 == 3)), "Expected 1 + 1 == 3 to be true, but got false.");
  EXPECT_ERROR(RUN(TORCH_CHECK(false, "value ", 7, " is bad")), "value 7 is bad");
  try {
    TORCH_CHECK_INDEX(false, "index 9 out of range");
    FAIL() << "no throw";
  } catch (const c10::IndexError& e) {
    EXPECT_EQ(e.msg(), "index 9 out of range");
    EXPECT_STREQ(e.what_without_backtrace(), "index 9 out of range");
  }
  EXPECT_THROW(TORCH_CHECK_VALUE(false, "v"), c10::ValueError);
  EXPECT_THROW(TORCH_CHECK_TYPE(false, "t"), c10::TypeError);
  EXPECT_THROW(TORCH_CHECK_NOT_IMPLEMENTED(false, "n"), c10::NotImplementedError);
  EXPECT_THROW(TORCH_CHECK_LINALG(false, "l"), c10::LinAlgError);
  EXPECT_THROW(TORCH_CHECK_VALUE(false, "v"), c10::Error);  // the typed errors are c10::Errors
  EXPECT_ERROR(RUN(TORCH_INTERNAL_ASSERT(2 < 1, "extra")), "INTERNAL ASSERT FAILED");
#undef RUN
  EXPECT_ERROR(AT_ERROR("plain ", 3), "plain 3");
  int evaluated = 0;
  TORCH_CHECK(++evaluated == 1, "the condition is evaluated exactly once");
  EXPECT_EQ(evaluated, 1);
  TORCH_INTERNAL_ASSERT(true);
  TORCH_INTERNAL_ASSERT_DEBUG_ONLY(true);
  // Passing checks build no message; their arguments may be expensive or invalid.
  std::vector<int> empty;
  TORCH_CHECK(empty.empty(), "front is ", empty.size() > 0 ? empty.front() : -1);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; i++) TORCH_WARN_ONCE("once ", i);
  TORCH_WARN("twice");
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("Warning: once 0"), std::string::npos) << err;
  EXPECT_EQ(err.find("once 1"), std::string::npos) << err;
  EXPECT_NE(err.find("Warning: twice"), std::string::npos) << err;
}

TEST(TorchCompat, DispatchMacros) {
  for (auto dtype : {at::kFloat, at::kDouble}) {
    auto x = torch::arange(5).to(dtype);
    AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "double_in_place",
                               [&] { double_in_place<scalar_t>(x.data_ptr<scalar_t>(), x.numel()); });
    FW_EXPECT_CLOSE(x, torch::arange(5).to(dtype) * 2, 0, 0);
  }
  // The lambda's result is the macro's value.
  auto y = torch::tensor({1.5, 2.5}, torch::kDouble);
  double first = AT_DISPATCH_FLOATING_TYPES(y.scalar_type(), "first", [&] { return double(y.data_ptr<scalar_t>()[0]); });
  EXPECT_DOUBLE_EQ(first, 1.5);
  size_t width = AT_DISPATCH_ALL_TYPES(at::kShort, "width", [&] { return sizeof(scalar_t); });
  EXPECT_EQ(width, 2u);
  auto h = torch::ones({3}, torch::kHalf);
  AT_DISPATCH_FLOATING_TYPES_AND_HALF(h.scalar_type(), "half", [&] { double_in_place<scalar_t>(h.data_ptr<scalar_t>(), 3); });
  FW_EXPECT_CLOSE(h.to(torch::kFloat), torch::full({3}, 2.0), 0, 0);
  auto b = torch::ones({3}, torch::kBFloat16);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::ScalarType::BFloat16, b.scalar_type(), "bf16",
                                  [&] { double_in_place<scalar_t>(b.data_ptr<scalar_t>(), 3); });
  FW_EXPECT_CLOSE(b.to(torch::kFloat), torch::full({3}, 2.0), 0, 0);
  auto i = torch::arange(4, torch::kInt);
  AT_DISPATCH_INTEGRAL_TYPES(i.scalar_type(), "int", [&] { double_in_place<scalar_t>(i.data_ptr<scalar_t>(), 4); });
  EXPECT_TRUE(torch::equal(i, torch::tensor({0, 2, 4, 6}, torch::kInt)));
  auto c = torch::ones({2}, torch::kComplexFloat);
  AT_DISPATCH_COMPLEX_TYPES(c.scalar_type(), "complex", [&] {
    auto* p = c.data_ptr<scalar_t>();
    p[0] = scalar_t(0, 3);
  });
  EXPECT_FLOAT_EQ(torch::imag(c)[0].item<float>(), 3.0f);
  bool is_bool = AT_DISPATCH_SWITCH(at::kBool, "custom", AT_DISPATCH_CASE(at::kBool, [&] {
    return std::is_same_v<scalar_t, bool>;
  }) AT_DISPATCH_CASE_FLOATING_TYPES([&] { return false; }));
  EXPECT_TRUE(is_bool);
  // A dtype outside the list: libtorch's message and error type.
  EXPECT_ERROR(AT_DISPATCH_FLOATING_TYPES(at::kLong, "my_kernel", [&] {}), "\"my_kernel\" not implemented for 'Long'");
  EXPECT_THROW(AT_DISPATCH_INTEGRAL_TYPES(at::kFloat, "k", [&] {}), c10::NotImplementedError);
  // Half and BFloat16 compound assignment, as c10::Half has.
  at::Half hv(1.5f);
  hv += 1;
  hv *= 2;
  hv -= 0.5f;
  hv /= 2;
  EXPECT_FLOAT_EQ(float(hv), 2.25f);
  at::BFloat16 bv(3.0f);
  bv *= 0.5f;
  EXPECT_FLOAT_EQ(float(bv), 1.5f);
}

TEST(TorchCompat, IntegerRange) {
  std::vector<int64_t> got;
  for (auto v : c10::irange(int64_t(4))) got.push_back(v);
  EXPECT_EQ(got, (std::vector<int64_t>{0, 1, 2, 3}));
  got.clear();
  for (auto v : c10::irange(2, int64_t(5))) got.push_back(v);
  EXPECT_EQ(got, (std::vector<int64_t>{2, 3, 4}));
  int n = 0;
  for (auto v : c10::irange(5, 2)) n += v;  // an empty range, not a wrap-around
  for (auto v : c10::irange(-3)) n += v;
  EXPECT_EQ(n, 0);
  static_assert(std::is_same_v<decltype(*c10::irange(size_t(3)).begin()), size_t>);
}

TEST(TorchCompat, ParallelFor) {
  const int saved = at::get_num_threads();
  for (int threads : {1, 2, 3}) {
    at::set_num_threads(threads);
    for (int64_t n : {0, 1, 7, 1000, 100003}) {
      for (int64_t grain : {0, 1, 64, 1 << 20}) {
        std::vector<std::atomic<int>> visits(static_cast<size_t>(n));
        std::atomic<int> bad_slot{0};
        at::parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
          int slot = at::get_thread_num();
          if (slot < 0 || slot >= at::get_num_threads()) bad_slot++;
          if (!at::in_parallel_region() && n > std::max<int64_t>(grain, 1) && threads > 1) bad_slot++;
          for (int64_t i = b; i < e; i++) visits[size_t(i)]++;
        });
        for (int64_t i = 0; i < n; i++) ASSERT_EQ(visits[size_t(i)].load(), 1) << i;
        EXPECT_EQ(bad_slot.load(), 0);
        // The sum of i over [0, n) in int64, and a float max over a pattern.
        int64_t sum = at::parallel_reduce(0, n, grain, int64_t(0), [](int64_t b, int64_t e, int64_t ident) {
          int64_t s = ident;
          for (int64_t i = b; i < e; i++) s += i;
          return s;
        }, std::plus<int64_t>());
        EXPECT_EQ(sum, n * (n - 1) / 2);
        bool any_big = at::parallel_reduce(0, n, grain, false, [](int64_t b, int64_t e, bool ident) {
          bool r = ident;
          for (int64_t i = b; i < e; i++) r = r || i == 99999;
          return r;
        }, [](bool a, bool c) { return a || c; });
        EXPECT_EQ(any_big, n > 99999);
      }
    }
  }
  at::set_num_threads(saved);
  EXPECT_EQ(at::get_thread_num(), 0);
  EXPECT_FALSE(at::in_parallel_region());
  // Exceptions reach the caller.
  EXPECT_ERROR(at::parallel_for(0, 1 << 16, 1, [](int64_t b, int64_t) { TORCH_CHECK(b != 0, "chunk at 0 failed"); }),
               "chunk at 0 failed");
  EXPECT_ERROR(at::parallel_for(0, 10, -1, [](int64_t, int64_t) {}), "grain_size must be non-negative");
}

TEST(TorchCompat, InferenceModeState) {
  EXPECT_FALSE(c10::InferenceMode::is_enabled());
  {
    c10::InferenceMode guard;
    EXPECT_TRUE(c10::InferenceMode::is_enabled());
    EXPECT_FALSE(torch::autograd::GradMode::is_enabled());
    {
      c10::InferenceMode off(false);  // libtorch: leaves inference mode, gradients recorded again
      EXPECT_FALSE(c10::InferenceMode::is_enabled());
      EXPECT_TRUE(torch::autograd::GradMode::is_enabled());
      auto w = torch::ones({2}, torch::requires_grad());
      EXPECT_TRUE((w * 2).requires_grad());
    }
    EXPECT_TRUE(c10::InferenceMode::is_enabled());
    auto w = torch::ones({2}, torch::requires_grad());
    EXPECT_FALSE((w * 2).requires_grad());
  }
  EXPECT_FALSE(c10::InferenceMode::is_enabled());
  EXPECT_TRUE(torch::autograd::GradMode::is_enabled());
}

TEST(TorchCompat, StreamsPrintMemoryFormatAndOptions) {
  std::ostringstream os;
  os << at::MemoryFormat::ChannelsLast << ' ' << torch::TensorOptions().dtype(torch::kDouble).requires_grad(true);
  EXPECT_EQ(os.str(), "ChannelsLast TensorOptions(dtype=double, device=cpu (default), layout=Strided (default), "
                      "requires_grad=true, pinned_memory=false (default), memory_format=(nullopt))");
}

TEST(TorchCompat, SaveAndLoadThroughStreams) {
  torch::manual_seed(3);
  // One tensor, a list, and bytes that equal the file form.
  auto t = torch::randn({3, 4}, torch::kDouble);
  std::stringstream ss;
  torch::save(t, ss);
  torch::Tensor back;
  torch::load(back, ss);
  EXPECT_TRUE(torch::equal(back, t));
  std::vector<torch::Tensor> list{torch::arange(3), torch::ones({2, 2}, torch::kBool)}, list_back;
  std::stringstream ls;
  torch::save(list, ls);
  torch::load(list_back, ls);
  ASSERT_EQ(list_back.size(), 2u);
  EXPECT_TRUE(torch::equal(list_back[0], list[0]));
  EXPECT_TRUE(torch::equal(list_back[1], list[1]));
  const std::string path = (std::filesystem::temp_directory_path() / "fw_stream_vs_file.safetensors").string();
  torch::save(t, path);
  std::ifstream f(path, std::ios::binary);
  std::string file_bytes{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  std::ostringstream ts;
  torch::save(t, ts);
  EXPECT_EQ(ts.str(), file_bytes);
  std::remove(path.c_str());

  // A module holder and an optimizer, restored into fresh objects.
  nn::Linear a(4, 2), b(4, 2);
  torch::optim::Adam oa(a->parameters(), torch::optim::AdamOptions(0.1));
  a(torch::randn({5, 4})).sum().backward();
  oa.step();
  std::stringstream ms, os;
  torch::save(a, ms);
  torch::save(oa, os);
  torch::load(b, ms);
  EXPECT_TRUE(torch::equal(a->weight, b->weight));
  EXPECT_TRUE(torch::equal(a->bias, b->bias));
  torch::optim::Adam ob(b->parameters(), torch::optim::AdamOptions(0.1));
  torch::load(ob, os);
  auto x = torch::randn({5, 4});
  oa.zero_grad();
  ob.zero_grad();
  a(x).pow(2).sum().backward();
  b(x).pow(2).sum().backward();
  oa.step();
  ob.step();
  EXPECT_TRUE(torch::equal(a->weight, b->weight));  // same moments, same step count

  // Archives too.
  torch::serialize::OutputArchive out;
  out.write("w", t);
  out.write("step", c10::IValue(int64_t(12)));
  std::stringstream as;
  out.save_to(as);
  torch::serialize::InputArchive in;
  in.load_from(as);
  torch::Tensor w;
  in.read("w", w);
  c10::IValue step;
  in.read("step", step);
  EXPECT_TRUE(torch::equal(w, t));
  EXPECT_EQ(step.toInt(), 12);

  // Damaged data is an error naming the stream, never a crash.
  std::string bytes = ts.str();
  for (size_t cut : {size_t(0), size_t(5), size_t(12), bytes.size() - 1}) {
    std::istringstream trunc(bytes.substr(0, cut));
    torch::Tensor r;
    EXPECT_ERROR(torch::load(r, trunc), "[serialize] stream");
  }
  std::istringstream two;
  {
    std::ostringstream o;
    torch::save(list, o);
    two.str(o.str());
  }
  torch::Tensor one;
  EXPECT_ERROR(torch::load(one, two), "expects exactly one tensor, the data has 2");
}

TEST(TorchCompat, DistributedSamplers) {
  namespace S = torch::data::samplers;
  auto drain = [](S::IndexListSampler& s, size_t batch) {
    std::vector<size_t> all;
    while (auto b = s.next(batch)) all.insert(all.end(), b->begin(), b->end());
    return all;
  };
  // Sequential: contiguous blocks, the padding wraps to the start.
  S::DistributedSequentialSampler r0(10, 3, 0), r2(10, 3, 2);
  EXPECT_EQ(drain(r0, 3), (std::vector<size_t>{0, 1, 2, 3}));
  EXPECT_EQ(drain(r2, 3), (std::vector<size_t>{8, 9, 0, 1}));
  S::DistributedSequentialSampler nodup(10, 3, 2, /*allow_duplicates=*/false);
  EXPECT_EQ(drain(nodup, 5), (std::vector<size_t>{6, 7, 8}));
  r0.reset();
  EXPECT_EQ(drain(r0, 1).size(), 4u);
  r0.reset(4);  // a new dataset size: ceil(4 / 3) = 2 per rank
  EXPECT_EQ(drain(r0, 8), (std::vector<size_t>{0, 1}));

  // Random: the ranks partition one shuffled, padded order; the epoch selects the order.
  std::multiset<size_t> seen;
  std::vector<std::vector<size_t>> per_rank;
  for (size_t rank = 0; rank < 3; rank++) {
    S::DistributedRandomSampler s(10, 3, rank);
    per_rank.push_back(drain(s, 2));
    EXPECT_EQ(per_rank.back().size(), 4u);
    seen.insert(per_rank.back().begin(), per_rank.back().end());
  }
  EXPECT_EQ(seen.size(), 12u);
  for (size_t i = 0; i < 10; i++) EXPECT_GE(seen.count(i), 1u) << i;
  EXPECT_EQ(seen.count(0) + seen.count(1), 4u);  // the padding repeats indices 0 and 1
  S::DistributedRandomSampler again(10, 3, 1);
  EXPECT_EQ(drain(again, 3), per_rank[1]);  // deterministic for a given epoch
  again.set_epoch(1);
  again.reset();
  auto epoch1 = drain(again, 3);
  again.set_epoch(0);
  again.reset();
  EXPECT_EQ(drain(again, 3), per_rank[1]);
  S::DistributedRandomSampler whole(10);  // one replica: a permutation of everything
  auto perm = drain(whole, 4);
  std::sort(perm.begin(), perm.end());
  for (size_t i = 0; i < 10; i++) EXPECT_EQ(perm[i], i);
  (void)epoch1;
  EXPECT_ERROR(S::DistributedRandomSampler(10, 2, 2), "Invalid rank 2");
  EXPECT_ERROR(S::DistributedSequentialSampler(10, 0, 0), "num_replicas must be positive");
  S::DistributedSequentialSampler empty(0, 2, 1);
  EXPECT_FALSE(empty.next(4).has_value());
}

namespace {

void put_be32(std::string& s, uint32_t v) {
  for (int shift : {24, 16, 8, 0}) s.push_back(char((v >> shift) & 0xff));
}

void write_bytes(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// An IDX image file of `count` images of rows x cols with pixel (n, r, c) = n*100 + r*10 + c, and
// labels 9 - n.
void write_mnist(const std::filesystem::path& dir, const std::string& prefix, uint32_t count, uint32_t rows,
                 uint32_t cols) {
  std::string img, lab;
  put_be32(img, 2051);
  put_be32(img, count);
  put_be32(img, rows);
  put_be32(img, cols);
  for (uint32_t n = 0; n < count; n++)
    for (uint32_t r = 0; r < rows; r++)
      for (uint32_t c = 0; c < cols; c++) img.push_back(char(n * 100 + r * 10 + c));
  put_be32(lab, 2049);
  put_be32(lab, count);
  for (uint32_t n = 0; n < count; n++) lab.push_back(char(9 - n));
  write_bytes(dir / (prefix + "-images-idx3-ubyte"), img);
  write_bytes(dir / (prefix + "-labels-idx1-ubyte"), lab);
}

}  // namespace

TEST(TorchCompat, MnistDataset) {
  auto dir = std::filesystem::temp_directory_path() / ("fw_mnist_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  write_mnist(dir, "train", 2, 2, 3);
  write_mnist(dir, "t10k", 1, 2, 3);
  torch::data::datasets::MNIST train(dir.string());
  EXPECT_TRUE(train.is_train());
  ASSERT_EQ(train.size().value(), 2u);
  EXPECT_EQ(train.images().sizes(), (std::vector<int64_t>{2, 1, 2, 3}));
  EXPECT_EQ(train.images().dtype(), torch::kFloat);
  EXPECT_EQ(train.targets().dtype(), torch::kLong);
  auto ex = train.get(1);
  FW_EXPECT_CLOSE(ex.data, torch::tensor({{{100.f, 101.f, 102.f}, {110.f, 111.f, 112.f}}}) / 255, 0, 0);
  EXPECT_EQ(ex.target.item<int64_t>(), 8);
  torch::data::datasets::MNIST test(dir.string() + "/", torch::data::datasets::MNIST::Mode::kTest);
  EXPECT_FALSE(test.is_train());
  EXPECT_EQ(test.size().value(), 1u);
  EXPECT_ERROR(train.get(2), "index 2 is out of bounds");

  // Batches through the libtorch pipeline.
  auto loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(
      train.map(torch::data::transforms::Normalize<>(0.1307, 0.3081)).map(torch::data::transforms::Stack<>()), 2);
  int batches = 0;
  for (auto& batch : *loader) {
    EXPECT_EQ(batch.data.sizes(), (std::vector<int64_t>{2, 1, 2, 3}));
    EXPECT_TRUE(torch::equal(batch.target, torch::tensor({9, 8})));
    batches++;
  }
  EXPECT_EQ(batches, 1);

  // Broken files.
  auto images = dir / "train-images-idx3-ubyte";
  auto labels = dir / "train-labels-idx1-ubyte";
  std::string good;
  {
    std::ifstream f(images, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  write_bytes(images, good.substr(0, good.size() - 1));
  EXPECT_ERROR(torch::data::datasets::MNIST(dir.string()), "holds 11 bytes of data, its header declares 12");
  std::string bad_magic = good;
  bad_magic[3] = 0x08;
  write_bytes(images, bad_magic);
  EXPECT_ERROR(torch::data::datasets::MNIST(dir.string()), "has magic number 2056, expected 2051");
  write_bytes(images, good.substr(0, 10));
  EXPECT_ERROR(torch::data::datasets::MNIST(dir.string()), "too short");
  std::string huge = good.substr(0, 16);
  for (int i = 4; i < 16; i++) huge[size_t(i)] = char(0xff);
  write_bytes(images, huge);
  EXPECT_ERROR(torch::data::datasets::MNIST(dir.string()), "declares too many bytes");
  write_mnist(dir, "train", 3, 2, 3);
  write_bytes(labels, std::string("\0\0\x08\x01\0\0\0\x02\x01\x02", 10));
  EXPECT_ERROR(torch::data::datasets::MNIST(dir.string()), "has 3 images but");
  std::filesystem::remove(labels);
  EXPECT_ERROR(torch::data::datasets::MNIST(dir.string()), "cannot open");
  std::filesystem::remove_all(dir);
}

namespace {

// A libtorch-style custom optimizer: plain SGD that counts its steps per parameter.
struct CountingSGDOptions : public torch::optim::OptimizerCloneableOptions<CountingSGDOptions> {
  CountingSGDOptions(double lr = 0.1) : lr_(lr) {}
  TORCH_ARG(double, lr);
};
struct CountingState : public torch::optim::OptimizerCloneableParamState<CountingState> {
  TORCH_ARG(int64_t, step) = 0;
};
class CountingSGD : public torch::optim::Optimizer {
 public:
  CountingSGD(std::vector<torch::Tensor> params, CountingSGDOptions defaults)
      : Optimizer({torch::optim::OptimizerParamGroup(std::move(params))},
                  std::make_unique<CountingSGDOptions>(defaults)) {}
  torch::Tensor step(LossClosure closure = nullptr) override {
    torch::NoGradGuard no_grad;
    torch::Tensor loss;
    if (closure != nullptr) {
      torch::AutoGradMode enable_grad(true);
      loss = closure();
    }
    for (auto& group : param_groups_) {
      for (auto& p : group.params()) {
        if (!p.grad().defined()) continue;
        const auto key = c10::guts::to_string(p.unsafeGetTensorImpl());  // libtorch's key
        if (state_.find(key) == state_.end()) state_[key] = std::make_unique<CountingState>();
        auto& st = static_cast<CountingState&>(*state_[key]);
        st.step(st.step() + 1);
        p.add_(p.grad(), -static_cast<CountingSGDOptions&>(group.options()).lr());
      }
    }
    return loss;
  }
};

class HalvingScheduler : public torch::optim::LRScheduler {
 public:
  explicit HalvingScheduler(torch::optim::Optimizer& o) : LRScheduler(o) {}
  std::vector<double> get_lrs() override {
    std::vector<double> lrs;
    for (double lr : get_current_lrs()) lrs.push_back(lr / 2);
    return lrs;
  }
};

}  // namespace

TEST(TorchCompat, CustomOptimizer) {
  auto w = torch::tensor({1.0, -2.0}, torch::kDouble).requires_grad_(true);
  CountingSGD opt({w}, CountingSGDOptions(0.25));
  for (int i = 0; i < 2; i++) {
    auto loss = opt.step([&] {
      opt.zero_grad();
      auto l = (w * w).sum();
      l.backward();
      return l;
    });
    EXPECT_TRUE(loss.defined());
  }
  // w <- w - 0.25 * 2w twice: w / 4.
  FW_EXPECT_CLOSE(w.detach(), torch::tensor({0.25, -0.5}, torch::kDouble), 0, 0);
  auto& st = static_cast<CountingState&>(*opt.state().at(c10::guts::to_string(w.unsafeGetTensorImpl())));
  EXPECT_EQ(st.step(), 2);
  auto copy = st.clone();
  EXPECT_EQ(static_cast<CountingState&>(*copy).step(), 2);
  HalvingScheduler sched(opt);
  sched.step();
  EXPECT_DOUBLE_EQ(opt.param_groups()[0].options().get_lr(), 0.125);
  // A state type without named_tensors() cannot be checkpointed: an error, not a silent drop.
  std::stringstream ss;
  EXPECT_ERROR(torch::save(opt, ss), "does not implement named_tensors()");
}

TEST(TorchCompat, TensorFromArrays) {
  std::vector<float> v{1.5f, -2.f, 4.f};
  auto a = torch::tensor(torch::ArrayRef<float>(v));
  EXPECT_EQ(a.dtype(), torch::kFloat);
  EXPECT_TRUE(torch::equal(a, torch::tensor({1.5f, -2.f, 4.f})));
  // Options: another dtype, and requires_grad kept through the conversion.
  auto b = torch::tensor(std::vector<int>{1, 2, 3}, torch::dtype(torch::kDouble).requires_grad(true));
  EXPECT_EQ(b.dtype(), torch::kDouble);
  EXPECT_TRUE(b.requires_grad());
  EXPECT_TRUE(b.is_leaf());
  auto c = torch::tensor(std::vector<double>{0.5}, torch::requires_grad());
  EXPECT_TRUE(c.requires_grad());
  auto d = torch::tensor(std::vector<bool>{true, false, true});
  EXPECT_EQ(d.dtype(), torch::kBool);
  EXPECT_EQ(d.sum().item<int64_t>(), 2);
  EXPECT_EQ(torch::tensor(std::vector<int64_t>{}).numel(), 0);
  EXPECT_ERROR(torch::tensor(std::vector<int64_t>{1}, torch::requires_grad()), "requires_grad");
}

TEST(TorchCompat, NodeEdges) {
  auto x = torch::randn({3}, torch::requires_grad());
  auto y = torch::randn({3}, torch::requires_grad());
  auto z = (x * 2 + y).sum();
  auto fn = z.grad_fn();
  ASSERT_EQ(fn->next_edges().size(), 1u);
  auto add = fn->next_edge(0).function;
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->next_edges().size(), 2u);
  EXPECT_THROW(fn->next_edge(5), std::out_of_range);
}

TEST(TorchCompat, AtenFlatNames) {
  torch::manual_seed(5);
  auto m = torch::randn({4, 4}, torch::kDouble);
  auto v = torch::randn({16}, torch::kDouble);
  // Each flat name is the namespaced function: same values, defaults and overloads.
  EXPECT_TRUE(torch::equal(torch::linalg_det(m), torch::linalg::det(m)));
  EXPECT_TRUE(torch::equal(torch::linalg_inv(m), torch::linalg::inv(m)));
  EXPECT_TRUE(torch::equal(torch::linalg_vector_norm(m, 2, {1}, true), torch::linalg::vector_norm(m, 2, {1}, true)));
  EXPECT_EQ(torch::linalg_vector_norm(m, 2, {1}, true).sizes(), (std::vector<int64_t>{4, 1}));
  EXPECT_TRUE(torch::equal(torch::linalg_matrix_norm(m, "fro", {-2, -1}), torch::linalg::matrix_norm(m, "fro")));
  auto [q, r] = torch::linalg_qr(m, "complete");
  FW_EXPECT_CLOSE(q.mm(r), m, 1e-12, 1e-12);
  EXPECT_TRUE(torch::equal(torch::fft_rfft(v), torch::fft::rfft(v)));
  EXPECT_TRUE(torch::equal(torch::fft_irfft(torch::fft_rfft(v), 16), torch::fft::irfft(torch::fft::rfft(v), 16)));
  EXPECT_TRUE(torch::equal(torch::fft_fftn(m, {4, 4}, {0, 1}), torch::fft::fftn(m, torch::IntArrayRef{4, 4},
                                                                                torch::IntArrayRef{0, 1})));
  EXPECT_TRUE(torch::equal(torch::fft_fftshift(m, {0}), torch::fft::fftshift(m, torch::IntArrayRef{0})));
  EXPECT_TRUE(torch::equal(torch::fft_fftfreq(8), torch::fft::fftfreq(8)));
  EXPECT_TRUE(torch::equal(torch::special_erf(v), torch::special::erf(v)));
  EXPECT_TRUE(torch::equal(torch::special_logsumexp(m, {1}), torch::logsumexp(m, {1})));
  EXPECT_TRUE(torch::equal(torch::special_i0e(v), torch::special::i0e(v)));
  EXPECT_ERROR(torch::linalg_inv(torch::randn({2, 3})), "[linalg.inv]");
}

// ---- generators (Note [Generators] in fw/generator.h)

TEST(TorchCompat, GeneratorStreams) {
  auto g1 = at::make_generator<at::CPUGeneratorImpl>(42);
  auto g2 = at::detail::createCPUGenerator(42);
  auto a = torch::randn({6}, g1), b = torch::randn({6}, g2);
  EXPECT_TRUE(torch::equal(a, b));
  EXPECT_FALSE(torch::equal(torch::randn({6}, g1), a));  // the stream moved on
  EXPECT_EQ(g1.current_seed(), 42u);
  EXPECT_EQ(g1.get_offset(), 12u);  // two draws of 6 values
  {
    std::lock_guard<std::mutex> lock(g1.mutex());
    g1.set_current_seed(42);  // rewinds
  }
  EXPECT_TRUE(torch::equal(torch::randn({6}, g1), a));
  EXPECT_FALSE(torch::equal(torch::randn({6}, at::make_generator<at::CPUGeneratorImpl>(43)), a));

  // An explicit generator leaves the default stream alone.
  torch::manual_seed(7);
  auto d1 = torch::rand({5});
  torch::manual_seed(7);
  auto g = at::make_generator<at::CPUGeneratorImpl>(1);
  torch::randn({100}, g);
  torch::empty({10}).uniform_(0, 1, g);
  EXPECT_TRUE(torch::equal(torch::rand({5}), d1));

  // The default generator, named or not, is the global stream; nullopt and an undefined
  // generator mean the default.
  torch::manual_seed(7);
  EXPECT_TRUE(torch::equal(torch::rand({5}, at::detail::getDefaultCPUGenerator()), d1));
  torch::manual_seed(7);
  EXPECT_TRUE(torch::equal(torch::rand({5}, c10::nullopt), d1));
  torch::manual_seed(7);
  EXPECT_TRUE(torch::equal(torch::rand({5}, torch::Generator()), d1));
  EXPECT_TRUE(at::globalContext().defaultGenerator(torch::kCPU) == at::detail::getDefaultCPUGenerator());
  EXPECT_EQ(torch::initial_seed(), 7u);

  // State round trip and clone.
  auto s = g.get_state();
  EXPECT_EQ(s.dtype(), torch::kByte);
  EXPECT_EQ(s.numel(), 16);
  auto c = g.clone();
  auto x1 = torch::randn({4}, g);
  EXPECT_TRUE(torch::equal(torch::randn({4}, c), x1));
  g.set_state(s);
  EXPECT_TRUE(torch::equal(torch::randn({4}, g), x1));
  EXPECT_ERROR(g.set_state(torch::zeros({8}, torch::kByte)), "[Generator::set_state] expected the 16-byte uint8 state");
  EXPECT_ERROR(torch::Generator().current_seed(), "[Generator] this generator is undefined");
  EXPECT_ERROR(at::check_generator<at::CPUGeneratorImpl>(c10::nullopt), "expected a defined CPU generator");
  auto* impl = at::get_generator_or_default<at::CPUGeneratorImpl>(c10::nullopt, at::detail::getDefaultCPUGenerator());
  EXPECT_EQ(impl, at::detail::getDefaultCPUGenerator().get<at::CPUGeneratorImpl>());
  EXPECT_EQ(at::get_generator_or_default<at::CPUGeneratorImpl>(g, at::detail::getDefaultCPUGenerator()),
            g.get<at::CPUGeneratorImpl>());
  // Raw draws for hand-written kernels.
  auto h1 = at::make_generator<at::CPUGeneratorImpl>(3), h2 = at::make_generator<at::CPUGeneratorImpl>(3);
  EXPECT_EQ(h1->random64(), h2->random64());
  EXPECT_EQ(h1->random(), h2->random());
  EXPECT_NE(h1->random64(), h1->random64());
}

TEST(TorchCompat, GeneratorArgumentsOfEveryRandomOp) {
  // Each form drawn twice from equal generators gives equal values, and never touches the default
  // stream.
  auto same = [](auto&& draw) {
    torch::manual_seed(11);
    auto ref = torch::rand({3});
    torch::manual_seed(11);
    auto a = draw(at::make_generator<at::CPUGeneratorImpl>(5));
    auto b = draw(at::make_generator<at::CPUGeneratorImpl>(5));
    auto c = draw(at::make_generator<at::CPUGeneratorImpl>(6));
    EXPECT_TRUE(torch::equal(torch::rand({3}), ref));
    EXPECT_TRUE(torch::equal(a, b));
    return std::make_pair(a, c);
  };
  auto p = torch::full({200}, 0.5);
  auto [r, r2] = same([](torch::Generator g) { return torch::rand({50}, g); });
  EXPECT_FALSE(torch::equal(r, r2));
  EXPECT_GE(r.min().item<float>(), 0.f);
  EXPECT_LT(r.max().item<float>(), 1.f);
  same([](torch::Generator g) { return torch::randn({50}, g, torch::kDouble); });
  auto [ri, ri2] = same([](torch::Generator g) { return torch::randint(3, 9, {100}, g); });
  EXPECT_EQ(ri.dtype(), torch::kLong);
  EXPECT_GE(ri.min().item<int64_t>(), 3);
  EXPECT_LE(ri.max().item<int64_t>(), 8);
  same([](torch::Generator g) { return torch::randint(9, {100}, g); });
  auto [pm, pm2] = same([](torch::Generator g) { return torch::randperm(20, g); });
  EXPECT_TRUE(torch::equal(std::get<0>(pm.sort()), torch::arange(20)));
  same([&](torch::Generator g) { return torch::bernoulli(p, g); });
  same([&](torch::Generator g) { return torch::bernoulli(p, 0.3, g); });
  same([](torch::Generator g) { return torch::normal(2.0, 3.0, {40}, g); });
  same([](torch::Generator g) { return torch::normal(torch::zeros({40}), torch::ones({40}), g); });
  same([](torch::Generator g) { return torch::normal(torch::zeros({40}), 2.0, g); });
  same([](torch::Generator g) { return torch::normal(1.0, torch::ones({40}), g); });
  same([&](torch::Generator g) { return torch::multinomial(torch::ones({10}), 5, false, g); });
  same([&](torch::Generator g) { return torch::ones({10}).multinomial(20, true, g); });
  same([](torch::Generator g) { return torch::poisson(torch::full({30}, 4.0), g); });
  same([](torch::Generator g) { return torch::binomial(torch::full({30}, 10.0), torch::full({30}, 0.3), g); });
  same([&](torch::Generator g) { return p.bernoulli(g); });
  same([&](torch::Generator g) { return p.bernoulli(0.2, g); });
  same([](torch::Generator g) { return torch::empty({30}).uniform_(-2, 2, g); });
  same([](torch::Generator g) { return torch::empty({30}).normal_(0, 1, g); });
  same([](torch::Generator g) { return torch::empty({30}).bernoulli_(0.4, g); });
  same([](torch::Generator g) { return torch::empty({30}).bernoulli_(torch::full({30}, 0.4), g); });
  same([](torch::Generator g) { return torch::empty({30}).exponential_(2.0, g); });
  same([](torch::Generator g) { return torch::empty({30}).geometric_(0.3, g); });
  same([](torch::Generator g) { return torch::empty({30}).cauchy_(0, 1, g); });
  same([](torch::Generator g) { return torch::empty({30}).log_normal_(0, 1, g); });
  auto [a, b] = same([](torch::Generator g) { return torch::empty({300}).random_(2, 5, g); });
  EXPECT_EQ(a.min().item<float>(), 2.f);
  EXPECT_EQ(a.max().item<float>(), 4.f);
  auto [t, t2] = same([](torch::Generator g) { return torch::empty({300}, torch::kLong).random_(3, g); });
  EXPECT_EQ(t.min().item<int64_t>(), 0);
  EXPECT_EQ(t.max().item<int64_t>(), 2);
  auto [f, f2] = same([](torch::Generator g) { return torch::empty({2000}).random_(g); });
  EXPECT_GE(f.min().item<float>(), 0.f);
  EXPECT_LE(f.max().item<float>(), 16777216.f);
  EXPECT_GT(f.max().item<float>(), 1e6f);
  EXPECT_TRUE(torch::equal(f, f.round()));
  auto [u8, u82] = same([](torch::Generator g) { return torch::empty({2000}, torch::kByte).random_(g); });
  EXPECT_GT(u8.max().item<int64_t>(), 200);
  auto [bo, bo2] = same([](torch::Generator g) { return torch::empty({100}, torch::kBool).random_(g); });
  EXPECT_TRUE(bo.any().item<bool>());
  EXPECT_FALSE(bo.all().item<bool>());
  // Without a generator the new forms draw from the default stream.
  torch::manual_seed(3);
  auto d = torch::empty({20}, torch::kLong).random_(10);
  torch::manual_seed(3);
  EXPECT_TRUE(torch::equal(d, torch::empty({20}, torch::kLong).random_(0, 10)));
}

TEST(TorchCompat, GeneratorUnderCompile) {
  // A draw from an explicit generator breaks the graph and runs eagerly, so the compiled function
  // consumes the generator's stream exactly as eager code does.
  auto fn = [](const torch::Tensor& x, torch::Generator g) { return (x * 2).add(torch::randn({4}, g)).relu(); };
  auto x = torch::randn({4});
  auto ge = at::make_generator<at::CPUGeneratorImpl>(9), gc = at::make_generator<at::CPUGeneratorImpl>(9);
  auto compiled = torch::compile([&](const torch::Tensor& t) { return fn(t, gc); });
  for (int i = 0; i < 3; i++) EXPECT_TRUE(torch::equal(compiled(x), fn(x, ge))) << "call " << i;
  auto e = torch::jit::explain([&](const torch::Tensor& t) { return fn(t, at::make_generator<at::CPUGeneratorImpl>(9)); }, x);
  ASSERT_EQ(e.breaks.size(), 1u);
  EXPECT_EQ(e.breaks[0].op, "random op with a generator");
  auto full = torch::compile([&](const torch::Tensor& t) { return fn(t, gc); }, torch::CompileOptions().fullgraph(true));
  EXPECT_ERROR(full(x), "graph break in fullgraph mode at random op with a generator");
}

// ---- TypeMeta, legacy type(), inference tensors, small Tensor members

TEST(TorchCompat, DtypeIsTypeMeta) {
  auto x = torch::ones({2, 3});
  caffe2::TypeMeta m = x.dtype();
  EXPECT_STREQ(m.name(), "float");
  EXPECT_EQ(m.itemsize(), 4u);
  EXPECT_EQ(m.toScalarType(), torch::kFloat);
  EXPECT_TRUE(m == torch::kFloat32);
  EXPECT_TRUE(torch::kFloat == m);
  EXPECT_TRUE(m != torch::kDouble);
  EXPECT_TRUE(m.Match<float>());
  EXPECT_TRUE(caffe2::TypeMeta::Make<double>() == torch::kDouble);
  EXPECT_STREQ(torch::ones({1}, torch::kLong).dtype().name(), "long int");
  EXPECT_STREQ(torch::ones({1}, torch::kHalf).dtype().name(), "c10::Half");
  EXPECT_EQ(torch::ones({1}, torch::kComplexDouble).dtype().itemsize(), 16u);
  EXPECT_STREQ(caffe2::TypeMeta().name(), "nullptr (uninitialized)");
  std::ostringstream os;
  os << x.dtype() << " " << x.scalar_type();
  EXPECT_EQ(os.str(), "float Float");  // a TypeMeta streams its C++ name, a ScalarType its own (libtorch's)
  // Everything that takes a ScalarType or TensorOptions takes it.
  torch::ScalarType st = x.dtype();
  EXPECT_EQ(st, torch::kFloat);
  EXPECT_EQ(torch::zeros({2}, x.dtype()).dtype(), torch::kFloat);
  EXPECT_EQ(torch::ones({2}, torch::kInt).to(x.dtype()).dtype(), torch::kFloat);
  EXPECT_EQ(torch::ones({2}).to(torch::kCPU, torch::ones({1}, torch::kDouble).dtype()).dtype(), torch::kDouble);
  EXPECT_EQ(torch::TensorOptions().dtype(x.dtype()).dtype(), torch::kFloat);
  EXPECT_EQ(torch::TensorOptions().dtype<int64_t>().dtype(), torch::kLong);
  EXPECT_EQ(torch::dtype<double>().dtype(), torch::kDouble);
  // TensorOptions::dtype() is a TypeMeta too, defaulted to the default dtype.
  caffe2::TypeMeta od = torch::TensorOptions().dtype(torch::kLong).dtype();
  EXPECT_STREQ(od.name(), "long int");
  EXPECT_EQ(x.options().dtype().itemsize(), 4u);
  EXPECT_TRUE(torch::TensorOptions().dtype() == torch::get_default_dtype());
  EXPECT_EQ(torch::empty({1}, torch::TensorOptions().dtype(od)).scalar_type(), torch::kLong);
  int branch = 0;
  switch (x.dtype()) {
    case torch::kFloat: branch = 1; break;
    default: branch = 2;
  }
  EXPECT_EQ(branch, 1);

  auto ty = torch::ones({2}, torch::kLong).type();
  EXPECT_EQ(ty.scalarType(), torch::kLong);
  EXPECT_EQ(ty.toString(), "CPULongType");
  EXPECT_FALSE(ty.is_cuda());
  EXPECT_TRUE(ty == torch::zeros({1}, torch::kLong).type());
  EXPECT_TRUE(ty != x.type());
  EXPECT_EQ(torch::empty({1}, ty.options()).dtype(), torch::kLong);
}

TEST(TorchCompat, InferenceTensors) {
  auto normal = torch::ones({4});
  EXPECT_FALSE(normal.is_inference());
  torch::Tensor inf, view_of_normal;
  {
    c10::InferenceMode guard;
    inf = torch::ones({4}) * 2;
    view_of_normal = normal.view({2, 2});
    inf.add_(1);  // allowed inside
  }
  EXPECT_TRUE(inf.is_inference());
  EXPECT_TRUE(inf.view({2, 2}).is_inference());
  EXPECT_FALSE(view_of_normal.is_inference());  // a view keeps its base's kind
  EXPECT_FALSE(inf.clone().is_inference());
  EXPECT_FALSE(torch::Tensor().is_inference());
  EXPECT_ERROR(inf.add_(1), "[add] Inplace update to inference tensor outside InferenceMode is not allowed");
  EXPECT_ERROR(inf.copy_(normal), "[copy_] Inplace update to inference tensor outside InferenceMode");
  EXPECT_ERROR(inf.zero_(), "[fill_] Inplace update to inference tensor outside InferenceMode");
  EXPECT_FLOAT_EQ(inf[0].item<float>(), 3.f);  // nothing was written
  {
    c10::InferenceMode guard(false);  // disabled: still outside
    EXPECT_ERROR(inf.mul_(2), "Inplace update to inference tensor outside InferenceMode");
  }
  {
    c10::InferenceMode guard;
    inf.mul_(2);
  }
  EXPECT_FLOAT_EQ(inf[0].item<float>(), 6.f);
  auto ok = inf.clone();
  ok.add_(1);
  EXPECT_FLOAT_EQ(ok[0].item<float>(), 7.f);
}

// As in libtorch: an op whose backward needs an inference tensor's values refuses it; ops that
// need only its shape (add, cat, views) and the unused bias of addmm take it.
TEST(TorchCompat, InferenceTensorsAreNotSavedForBackward) {
  torch::Tensor inf, inf_m, inf_b;
  {
    c10::InferenceMode guard;
    inf = torch::full({4}, 2.0);
    inf_m = torch::ones({4, 4});
    inf_b = inf > 1;
  }
  auto w = torch::ones({4}, torch::requires_grad());
  auto m = torch::eye(4).requires_grad_(true);
  EXPECT_ERROR(inf * w, "[mul] Inference tensors cannot be saved for backward");
  EXPECT_ERROR(w.div(inf), "[div] Inference tensors cannot be saved for backward");
  EXPECT_ERROR(torch::mm(inf_m, m), "make a clone to get a normal tensor");
  EXPECT_ERROR(torch::where(inf_b, w, w), "[where] Inference tensors cannot be saved");
  auto y = (inf + w).sum() + torch::cat({inf, w}).sum() + (inf > w).sum() + inf.view({2, 2}).sum();
  auto z = torch::addmm(inf_m, m, m).sum() + torch::addcmul(inf, w, w).sum();
  (y + z).backward();
  EXPECT_TRUE(torch::allclose(w.grad(), torch::full({4}, 4.0)));  // 1 + 1 + 2w
  EXPECT_TRUE(torch::allclose(m.grad(), torch::full({4, 4}, 2.0)));  // J m^T + m^T J at m = I
  auto fine = (inf.clone() * w).sum();
  fine.backward();
  EXPECT_TRUE(torch::allclose(w.grad(), torch::full({4}, 6.0)));
  // addmm's backward never reads its bias: writing to it afterwards is fine (libtorch agrees),
  // writing to a factor is not.
  auto bias = torch::ones({4, 4});
  auto f1 = torch::ones({4, 4});
  auto y1 = torch::addmm(bias, m, f1);
  bias.add_(1);
  y1.sum().backward();
  auto y2 = torch::addmm(bias, m, f1);
  f1.mul_(2);
  EXPECT_ERROR(y2.sum().backward(), "modified by an in-place operation (mul_)");
}

TEST(TorchCompat, SmallTensorMembers) {
  auto x = torch::randn({3, 4});
  EXPECT_TRUE(x.pin_memory().is_same(x));
  EXPECT_TRUE(x.is_variable());
  auto acc = x.packed_accessor64<float, 2>();
  EXPECT_EQ(acc.size(1), 4);
  EXPECT_EQ(acc[2][3], x[2][3].item<float>());
  torch::PackedTensorAccessor32<float, 2> acc32 = x.packed_accessor32<float, 2>();
  EXPECT_EQ(acc32[1][1], x[1][1].item<float>());
  EXPECT_TRUE(torch::allclose(x._log_softmax(1, false), x.log_softmax(1)));
  EXPECT_TRUE(torch::allclose(torch::_softmax(x, 0, false), x.softmax(0)));
  auto h = x.to(torch::kHalf);
  auto hf = torch::_log_softmax(h, 1, true);
  EXPECT_EQ(hf.dtype(), torch::kFloat);
  EXPECT_TRUE(torch::allclose(hf, torch::log_softmax(h, 1, torch::kFloat)));
  EXPECT_ERROR(torch::_softmax(x, 1, true), "[_softmax] conversion is supported for Half type only, got float32");
}

TEST(TorchCompat, GlobalContextAndDispatchGuards) {
  auto& ctx = at::globalContext();
  bool prev = ctx.deterministicAlgorithms();
  ctx.setDeterministicAlgorithms(true, true);
  EXPECT_TRUE(ctx.deterministicAlgorithms());
  EXPECT_TRUE(at::globalContext().deterministicAlgorithmsWarnOnly());
  ctx.setDeterministicAlgorithms(prev);
  ctx.setBenchmarkCuDNN(true);
  EXPECT_TRUE(ctx.benchmarkCuDNN());
  ctx.setBenchmarkCuDNN(false);
  ctx.setDeterministicCuDNN(true);
  EXPECT_TRUE(ctx.deterministicCuDNN());
  EXPECT_FALSE(ctx.hasCUDA());
  EXPECT_ERROR(ctx.defaultGenerator(torch::Device(torch::kCUDA, 0)), "[defaultGenerator] no cuda:0 generator");

  auto w = torch::ones({3}, torch::requires_grad());
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    EXPECT_FALSE((w * 2).requires_grad());
  }
  EXPECT_TRUE((w * 2).requires_grad());
}

TEST(TorchCompat, ModuleDictUpdate) {
  nn::ModuleDict md;
  md->update({{"fc", std::make_shared<nn::LinearImpl>(2, 3)}, {"act", std::make_shared<nn::ReLUImpl>()}});
  EXPECT_EQ(md->size(), 2u);
  EXPECT_EQ(md->keys()[0], "fc");
  torch::OrderedDict<std::string, std::shared_ptr<nn::Module>> more;
  more.insert("out", std::make_shared<nn::LinearImpl>(3, 1));
  more.insert("fc", std::make_shared<nn::LinearImpl>(2, 5));  // replaces
  md->update(more);
  EXPECT_EQ(md->size(), 3u);
  EXPECT_EQ(md->at<nn::LinearImpl>("fc").options.out_features(), 5);
  torch::OrderedDict<std::string, nn::Linear> holders;
  holders.insert("h", nn::Linear(1, 1));
  md->update(holders);
  EXPECT_TRUE(md->contains("h"));
}

TEST(TorchCompat, OptionsMemoryFormatAndMore) {
  auto cl = torch::empty({2, 3, 4, 5}, torch::TensorOptions().memory_format(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(cl.is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_FALSE(cl.is_contiguous());
  EXPECT_EQ(cl.strides(), (std::vector<int64_t>{60, 1, 15, 3}));
  auto z = torch::zeros({2, 3, 4, 5, 6}, torch::TensorOptions(torch::MemoryFormat::ChannelsLast3d).dtype(torch::kDouble));
  EXPECT_TRUE(z.is_contiguous(torch::MemoryFormat::ChannelsLast3d));
  EXPECT_EQ(z.dtype(), torch::kDouble);
  EXPECT_EQ(z.abs().sum().item<double>(), 0.0);
  auto o = torch::ones({1, 2, 2, 2}, torch::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(torch::equal(o.contiguous(), torch::ones({1, 2, 2, 2})));
  // *_like: Preserve (also the default) keeps a channels-last input's layout.
  auto src = torch::randn({2, 3, 4, 5}).contiguous(torch::MemoryFormat::ChannelsLast);
  EXPECT_TRUE(torch::empty_like(src, torch::MemoryFormat::Preserve).is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::zeros_like(src, torch::MemoryFormat::ChannelsLast).is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::empty_like(src).is_contiguous(torch::MemoryFormat::ChannelsLast));
  EXPECT_TRUE(torch::empty_like(src, torch::MemoryFormat::Contiguous).is_contiguous());
  EXPECT_ERROR(torch::empty({2, 3}, torch::MemoryFormat::ChannelsLast), "[empty] required rank 4 tensor to use channels_last format, got size [2, 3]");
  auto pinned = torch::empty({3}, torch::TensorOptions().pinned_memory(true));
  EXPECT_EQ(pinned.numel(), 3);
  EXPECT_TRUE(torch::TensorOptions().pinned_memory(true).pinned_memory());

  auto c = torch::view_as_complex(torch::randn({3, 2}));
  auto cj = c.conj();
  EXPECT_FALSE(cj.is_conj());
  EXPECT_TRUE(torch::equal(cj.resolve_conj(), cj));
  EXPECT_TRUE(torch::equal(c.conj_physical(), cj));
  auto t = torch::ones({2});
  auto t2 = t;
  t2.reset();
  EXPECT_FALSE(t2.defined());
  EXPECT_TRUE(t.defined());

  auto i = torch::tensor({1, 2, 6}, torch::kInt);
  EXPECT_TRUE(torch::equal(torch::bitwise_and(i, 3), torch::tensor({1, 2, 2}, torch::kInt)));
  EXPECT_TRUE(torch::equal(i.bitwise_or(8), torch::tensor({9, 10, 14}, torch::kInt)));
  EXPECT_TRUE(torch::equal(torch::bitwise_xor(i, 1), torch::tensor({0, 3, 7}, torch::kInt)));
  EXPECT_EQ(torch::bitwise_and(i, 3).dtype(), torch::kInt);
}

TEST(TorchCompat, AtenChecksAndDtypeHelpers) {
  // A TensorArg refers to its tensor (as libtorch's): the tensors must outlive it.
  auto x = torch::randn({2, 3}), y = torch::zeros({2, 3}, torch::kDouble), z = torch::ones({3});
  at::TensorArg tx(x, "x", 1), ty(y, "y", 2), tz(z, "z", 3);
  at::checkDim("my_op", tx, 2);
  at::checkDimRange("my_op", tx, 1, 3);
  at::checkSize("my_op", tx, {2, 3});
  at::checkSize("my_op", tx, 1, 3);
  at::checkNumel("my_op", tx, 6);
  at::checkContiguous("my_op", tx);
  at::checkScalarType("my_op", tx, at::kFloat);
  EXPECT_ERROR(at::checkDim("my_op", tx, 3),
               "[my_op] Expected 3-dimensional tensor, but got 2-dimensional tensor for argument #1 'x' (while checking arguments for my_op)");
  EXPECT_ERROR(at::checkDimRange("my_op", tz, 2, 4), "[my_op] Expected 2 to 3 dimensions, but got 1-dimensional tensor for argument #3 'z'");
  EXPECT_ERROR(at::checkSize("my_op", tz, {2}), "[my_op] Expected tensor of size [2], but got tensor of size [3] for argument #3 'z'");
  EXPECT_ERROR(at::checkSize("my_op", tx, 0, 5), "[my_op] Expected tensor to have size 5 at dimension 0, but got size 2");
  EXPECT_ERROR(at::checkNumel("my_op", tz, 4), "to have 4 elements; but it actually has 3 elements");
  EXPECT_ERROR(at::checkSameSize("my_op", tx, tz), "to have same size as tensor for argument #3 'z'; but [2, 3] does not equal [3]");
  EXPECT_ERROR(at::checkSameType("my_op", tx, ty), "; but type CPUFloatType does not equal CPUDoubleType");
  EXPECT_ERROR(at::checkAllSameType("my_op", {tx, tz, ty}), "does not equal CPUDoubleType");
  EXPECT_ERROR(at::checkScalarType("my_op", ty, at::kFloat), "to have scalar type Float; but got CPUDoubleType instead");
  EXPECT_ERROR(at::checkContiguous("my_op", at::TensorArg(x.t(), "xt", 1)), "Expected contiguous tensor, but got non-contiguous");
  torch::Tensor undef;
  EXPECT_ERROR(at::checkDefined("my_op", at::TensorArg(undef, "u", 4)), "Expected tensor for argument #4 'u' to be non-null");

  EXPECT_TRUE(at::isFloatingType(at::kHalf));
  EXPECT_FALSE(at::isFloatingType(at::kLong));
  EXPECT_TRUE(at::isIntegralType(at::kBool, true));
  EXPECT_FALSE(at::isIntegralType(at::kBool, false));
  EXPECT_TRUE(c10::isComplexType(at::kComplexFloat));
  EXPECT_EQ(at::promoteTypes(at::kInt, at::kFloat), at::kFloat);
  EXPECT_EQ(c10::toRealValueType(at::kComplexDouble), at::kDouble);
  EXPECT_EQ(c10::elementSize(at::kBFloat16), 2u);
  EXPECT_EQ(at::result_type(torch::ones({2}, torch::kLong), 1.0), at::kFloat);
  EXPECT_EQ(at::result_type(torch::ones({2}, torch::kHalf), 1.0), at::kHalf);
  EXPECT_EQ(at::result_type(2, torch::ones({2}, torch::kInt)), at::kInt);
  EXPECT_EQ(at::result_type(torch::ones({2}, torch::kLong), torch::tensor(1.0, torch::kDouble)), at::kDouble);
  EXPECT_EQ(at::result_type(1, 2.5), at::kFloat);
  EXPECT_EQ(at::result_type(true, 3), at::kLong);
  at::IntList il = x.sizes();
  EXPECT_EQ(il.size(), 2u);
  EXPECT_EQ(x.get_device(), -1);
  EXPECT_TRUE(torch::equal(torch::copysign(torch::tensor({1.0f, -2.0f}), -1.0), torch::tensor({-1.0f, -2.0f})));
  EXPECT_TRUE(torch::equal(torch::tensor({-1.0f, 2.0f}).copysign(1), torch::tensor({1.0f, 2.0f})));

  auto v = torch::autograd::make_variable(x, true);
  EXPECT_TRUE(v.requires_grad());
  EXPECT_TRUE(v.is_leaf());
  EXPECT_EQ(v.data_ptr(), x.data_ptr());
  {
    RECORD_FUNCTION("user_region", std::vector<torch::Tensor>({x}));
    EXPECT_EQ((x * 2).numel(), 6);
  }
}

// Found by the 2026-12-06 API hunt (libtorch 1.13 programs compiled against both): spellings and
// behaviours real programs use.
TEST(TorchCompat, ApiHuntIndexPutListSvdDriverScalarTensorDefaultDtypeSave) {
  // index_put_ with libtorch's optional-tensor list and accumulate
  auto c = torch::zeros({5});
  c.index_put_({torch::tensor({0, 0, 2})}, torch::tensor({1.f, 2.f, 3.f}), true);
  EXPECT_TRUE(torch::equal(c, torch::tensor({3.f, 0.f, 3.f, 0.f, 0.f}))) << c;
  c.index_put_({torch::tensor({1, 3})}, torch::tensor({5.f, 6.f}), false);
  EXPECT_TRUE(torch::equal(c, torch::tensor({3.f, 5.f, 3.f, 6.f, 0.f}))) << c;
  auto m = torch::zeros({2, 3});
  m.index_put_({c10::nullopt, torch::tensor({0, 2, 0})}, torch::ones({2, 3}), true);
  EXPECT_TRUE(torch::equal(m, torch::tensor({2.f, 0.f, 1.f, 2.f, 0.f, 1.f}).view({2, 3}))) << m;
  EXPECT_ERROR(m.index_put_({c10::nullopt}, torch::ones({2, 3}), true), "[index_put_] expected at least one index tensor");

  // F::pdist
  auto x = torch::arange(12, torch::kFloat).view({4, 3}).pow(1.5);
  EXPECT_TRUE(torch::equal(torch::nn::functional::pdist(x, 3.0), torch::pdist(x, 3.0)));
  EXPECT_EQ(torch::nn::functional::pdist(x).sizes(), (std::vector<int64_t>{6}));

  // linalg svd/svdvals with libtorch 1.13's driver argument; matrix_rank with a tensor tolerance
  auto A = torch::tensor({4.f, 1.f, 2.f, 3.f, 1.f, 5.f}).view({3, 2});
  auto [U, S, Vh] = torch::linalg::svd(A, false, c10::nullopt);
  auto [U2, S2, Vh2] = torch::linalg::svd(A, false);
  EXPECT_TRUE(torch::equal(S, S2) && torch::equal(U, U2) && torch::equal(Vh, Vh2));
  EXPECT_TRUE(torch::equal(torch::linalg::svdvals(A, c10::nullopt), S2));
  EXPECT_ERROR(torch::linalg::svd(A, true, "gesvd"), "[linalg.svd] keyword argument `driver=` is only supported on CUDA");
  EXPECT_ERROR(torch::linalg::svdvals(A, "gesvdj"), "[linalg.svdvals] keyword argument `driver=`");
  auto D = torch::stack({torch::diag(torch::tensor({3.f, 1e-3f})), torch::diag(torch::tensor({2.f, 1.f}))});
  EXPECT_TRUE(torch::equal(torch::linalg::matrix_rank(D, torch::tensor({1e-2f, 1.5f}), false), torch::tensor({1L, 1L})));
  EXPECT_TRUE(torch::equal(torch::linalg::matrix_rank(D, torch::tensor(0.5), false), torch::tensor({1L, 2L})));
  EXPECT_TRUE(torch::equal(torch::linalg::matrix_rank(D, torch::tensor(0.5), true), torch::tensor({1L, 2L})));

  // scalar_tensor takes the default dtype whatever the scalar's type, unless options say
  EXPECT_EQ(torch::scalar_tensor(3).dtype(), torch::kFloat);
  EXPECT_EQ(torch::scalar_tensor(3).item<float>(), 3.f);
  EXPECT_EQ(torch::scalar_tensor(true).dtype(), torch::kFloat);
  EXPECT_EQ(torch::scalar_tensor(true).item<float>(), 1.f);
  EXPECT_EQ(torch::scalar_tensor(3, torch::kLong).dtype(), torch::kLong);
  EXPECT_EQ(torch::full({}, 3).dtype(), torch::kLong);  // full still takes the value's dtype

  // get_default_dtype is a TypeMeta, as libtorch's
  EXPECT_STREQ(torch::get_default_dtype().name(), "float");
  caffe2::TypeMeta dm = torch::get_default_dtype();
  EXPECT_EQ(dm.toScalarType(), torch::kFloat);
  EXPECT_EQ(torch::get_default_dtype_as_scalartype(), torch::kFloat);
  torch::set_default_dtype(caffe2::TypeMeta::Make<double>());
  EXPECT_EQ(torch::get_default_dtype(), torch::kDouble);
  EXPECT_EQ(torch::scalar_tensor(2).dtype(), torch::kDouble);
  torch::set_default_dtype(caffe2::TypeMeta::Make<float>());

  // torch::save/torch::load of one tensor keep requires_grad (file and stream)
  const std::string path = ::testing::TempDir() + "fw_api_hunt_rg.pt";
  auto w = torch::ones({2}, torch::requires_grad());
  torch::save(w, path);
  torch::Tensor r;
  torch::load(r, path);
  EXPECT_TRUE(r.requires_grad() && r.is_leaf());
  EXPECT_TRUE(torch::equal(r, torch::ones({2})));
  torch::save(torch::ones({2}), path);
  torch::load(r, path);
  EXPECT_FALSE(r.requires_grad());
  std::stringstream ss;
  torch::save(w * 2, ss);
  torch::load(r, ss);
  EXPECT_TRUE(r.requires_grad() && r.is_leaf());
  // a file that claims requires_grad for an integer tensor is rejected
  torch::save(torch::TensorMap{{"tensor", torch::arange(3)}}, path, {{"fw.requires_grad", "tensor"}});
  EXPECT_ERROR(torch::load(r, path), "as requiring grad, but its dtype Long cannot");
  std::remove(path.c_str());
}

// linalg_vander, linalg_vecdot and linalg_diagonal under libtorch 1.13's flat names.
TEST(TorchCompat, ApiHuntLinalgVanderVecdotDiagonal) {
  auto x = torch::tensor({2.f, 3.f, -1.f});
  EXPECT_TRUE(torch::equal(torch::linalg_vander(x), torch::tensor({1.f, 2.f, 4.f, 1.f, 3.f, 9.f, 1.f, -1.f, 1.f}).view({3, 3})));
  auto v4 = torch::linalg_vander(torch::tensor({2, 3}).view({1, 2}), 4);
  EXPECT_EQ(v4.dtype(), torch::kLong);
  EXPECT_TRUE(torch::equal(v4, torch::tensor({1, 2, 4, 8, 1, 3, 9, 27}).view({1, 2, 4})));
  EXPECT_ERROR(torch::linalg_vander(x, 1), "[linalg.vander] N must be greater than 1, got 1");
  EXPECT_ERROR(torch::linalg_vander(torch::tensor(2.f)), "[linalg.vander] x must be at least 1-dimensional");
  auto a = torch::arange(6, torch::kFloat).view({2, 3}), b = torch::tensor({1.f, 0.f, 2.f});
  EXPECT_TRUE(torch::equal(torch::linalg_vecdot(a, b), torch::tensor({4.f, 13.f})));
  EXPECT_TRUE(torch::equal(torch::linalg_vecdot(a, a, 0), torch::tensor({9.f, 17.f, 29.f})));
  auto z = torch::complex(torch::tensor({1.f, 2.f}), torch::tensor({1.f, -1.f}));  // [1+i, 2-i]
  auto vz = torch::linalg_vecdot(z, z);  // sum |z|^2 = 2 + 5
  EXPECT_TRUE(torch::equal(torch::real(vz), torch::tensor(7.f)) && torch::equal(torch::imag(vz), torch::tensor(0.f)));
  EXPECT_ERROR(torch::linalg_vecdot(a, b.to(torch::kDouble)), "Expected x and y to have the same dtype");
  EXPECT_TRUE(torch::equal(torch::linalg_diagonal(a.view({1, 2, 3})), torch::tensor({0.f, 4.f}).view({1, 2})));
}

// AdaptiveAvgPool2d/3d and AdaptiveMaxPool2d/3d output sizes with left-out elements
// (ExpandingArrayWithOptionalElem): a std::nullopt keeps the input's size in that position.
TEST(TorchCompat, AdaptivePoolOutputSizeWithNullopt) {
  namespace nn = torch::nn;
  namespace F = torch::nn::functional;
  auto x = torch::arange(2 * 3 * 4 * 6, torch::kFloat).view({2, 3, 4, 6});
  nn::AdaptiveAvgPool2d p(nn::AdaptiveAvgPool2dOptions({torch::nullopt, 2}));
  auto y = p(x);
  EXPECT_EQ(y.sizes(), torch::IntArrayRef({2, 3, 4, 2}));
  EXPECT_TRUE(torch::equal(y, torch::adaptive_avg_pool2d(x, {4, 2})));
  // mean of columns 0-2 and 3-5 of row 0 of the first plane: (0+1+2)/3, (3+4+5)/3
  EXPECT_FLOAT_EQ(y[0][0][0][0].item<float>(), 1.f);
  EXPECT_FLOAT_EQ(y[0][0][0][1].item<float>(), 4.f);
  EXPECT_EQ(F::adaptive_avg_pool2d(x, F::AdaptiveAvgPool2dFuncOptions({3, torch::nullopt})).sizes(),
            torch::IntArrayRef({2, 3, 3, 6}));
  EXPECT_EQ(nn::AdaptiveAvgPool2d(3)(x).sizes(), torch::IntArrayRef({2, 3, 3, 3}));
  EXPECT_EQ(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({2, 1}))(x).sizes(), torch::IntArrayRef({2, 3, 2, 1}));
  auto [m, idx] = nn::AdaptiveMaxPool2d(nn::AdaptiveMaxPool2dOptions({1, torch::nullopt}))->forward_with_indices(x);
  EXPECT_EQ(m.sizes(), torch::IntArrayRef({2, 3, 1, 6}));
  EXPECT_TRUE(torch::equal(m, std::get<0>(x.max(2, true))));
  auto x3 = torch::ones({1, 2, 3, 4, 5});
  EXPECT_EQ(nn::AdaptiveAvgPool3d(nn::AdaptiveAvgPool3dOptions({torch::nullopt, 2, torch::nullopt}))(x3).sizes(),
            torch::IntArrayRef({1, 2, 3, 2, 5}));
  EXPECT_EQ(F::adaptive_max_pool3d(x3, F::AdaptiveMaxPool3dFuncOptions({1, 1, torch::nullopt})).sizes(),
            torch::IntArrayRef({1, 2, 1, 1, 5}));
  std::ostringstream os;
  os << *p;
  EXPECT_EQ(os.str(), "fw::nn::AdaptiveAvgPool2d(output_size=[None, 2])");
  nn::AdaptiveAvgPool2dOptions o(5);
  EXPECT_FALSE((*o.output_size())[0] == torch::nullopt);
  EXPECT_EQ(*(*o.output_size())[1], 5);
}

// A second API hunt (libtorch 1.13 programs compiled against both libraries): print with a line
// size, histogram, clamp with tensor bounds, in-place matrix products, conj_physical, and the
// printed forms of dtypes, layouts and TensorOptions.
TEST(TorchCompat, ApiHuntPrintHistogramClampTensorBounds) {
  auto m = torch::arange(12).view({1, 12});
  std::ostringstream wide, narrow;
  wide << m;
  torch::print(narrow, m, 20);
  EXPECT_EQ(wide.str().find("Columns"), std::string::npos) << wide.str();
  EXPECT_NE(narrow.str().find("Columns 1 to 5"), std::string::npos) << narrow.str();
  EXPECT_NE(narrow.str().find("Columns 11 to 12"), std::string::npos) << narrow.str();
  std::ostringstream z;
  z << torch::complex(torch::tensor({1.f, 0.f}), torch::tensor({-1.f, 2.5f}));
  EXPECT_EQ(z.str(), " 1\n 0\n[ CPUComplexFloatType{2} ]");  // libtorch 1.13 prints the real parts

  auto x = torch::tensor({0., 1., 1., 2., 3., 4.});
  auto [h, e] = torch::histogram(x, 4);
  EXPECT_TRUE(torch::equal(h, torch::tensor({1., 2., 1., 2.})));
  EXPECT_TRUE(torch::equal(e, torch::tensor({0., 1., 2., 3., 4.})));
  EXPECT_TRUE(torch::equal(std::get<0>(torch::histogram(x, 2, std::vector<double>{0, 2})), torch::tensor({1., 3.})));
  auto w = torch::tensor({1., 2., 3., 4., 5., 6.});
  EXPECT_TRUE(torch::equal(std::get<0>(x.histogram(4, torch::nullopt, w)), torch::tensor({1., 5., 4., 11.})));
  EXPECT_TRUE(torch::allclose(std::get<0>(torch::histogram(x, 4, torch::nullopt, {}, true)), torch::tensor({1., 2., 1., 2.}) / 6));
  EXPECT_TRUE(torch::equal(std::get<0>(torch::histogram(x, torch::tensor({0., 0.5, 4.}))), torch::tensor({1., 5.})));
  auto [hc, ec] = torch::histogram(torch::tensor({2.f, 2.f}), 1);
  EXPECT_TRUE(torch::equal(hc, torch::tensor({2.f})) && torch::equal(ec, torch::tensor({1.5f, 2.5f})));
  EXPECT_ERROR(torch::histogram(torch::tensor({1, 2}), 2), "[histogram] input must be float or double, got int64");
  EXPECT_ERROR(torch::histogram(torch::tensor({1.f, NAN}), 2), "[histogram] range [nan, nan] is not finite");
  EXPECT_ERROR(torch::histogram(x, torch::tensor({1., 0.})), "[histogram] bin edges must be increasing");

  auto v = torch::tensor({-2.f, 0.f, 3.f}), lo = torch::tensor({-1.f, 1.f, 1.f}), hi = torch::tensor({1.f, 2.f, 2.f});
  EXPECT_TRUE(torch::equal(v.clamp_min(lo), torch::tensor({-1.f, 1.f, 3.f})));
  EXPECT_TRUE(torch::equal(torch::clamp_max(v, hi), torch::tensor({-2.f, 0.f, 2.f})));
  EXPECT_TRUE(torch::equal(v.clone().clamp_(lo, hi), torch::tensor({-1.f, 1.f, 2.f})));
  EXPECT_TRUE(torch::equal(v.clone().clamp_max_(hi), torch::tensor({-2.f, 0.f, 2.f})));
  auto leaf = torch::tensor({-2.f, 0.5f, 3.f}, torch::requires_grad());
  auto y = leaf * 1;
  y.clamp_(lo, hi);
  y.sum().backward();
  EXPECT_TRUE(torch::equal(leaf.grad(), torch::tensor({0.f, 0.f, 0.f})));  // all three clamped
  EXPECT_ERROR(torch::tensor({1, 2}).clamp_min_(torch::tensor({0.5f, 0.5f})),
               "[clamp_min_] result type float32 can't be cast to the desired output type int64");

  auto zc = torch::complex(torch::tensor({1.f}), torch::tensor({2.f}));
  EXPECT_TRUE(torch::equal(torch::imag(torch::conj_physical(zc)), torch::tensor({-2.f})));
  auto b1 = torch::arange(12, torch::kFloat).view({2, 2, 3}), b2 = torch::arange(6, torch::kFloat).view({2, 3, 1});
  auto c = torch::ones({2, 2, 1});
  EXPECT_TRUE(torch::equal(c.clone().baddbmm_(b1, b2, 0.5, 2), torch::baddbmm(c, b1, b2, 0.5, 2)));
  EXPECT_TRUE(torch::equal(torch::ones({2, 1}).addbmm_(b1, b2), torch::addbmm(torch::ones({2, 1}), b1, b2)));
  auto mat = torch::arange(6, torch::kFloat).view({2, 3}), vec = torch::tensor({1.f, 0.f, -1.f});
  EXPECT_TRUE(torch::equal(torch::ones({2}).addmv_(mat, vec), torch::tensor({-1.f, -1.f})));
  EXPECT_TRUE(torch::equal(torch::zeros({2, 3}).addr_(torch::tensor({1.f, 2.f}), vec), torch::outer(torch::tensor({1.f, 2.f}), vec)));

  std::ostringstream s;
  s << torch::ones({1}).dtype() << " " << torch::ones({1}, torch::kLong).dtype() << " " << torch::ones({1}).scalar_type()
    << " " << torch::ones({1}).layout();
  EXPECT_EQ(s.str(), "float long int Float Strided");
  std::ostringstream o1, o2;
  o1 << torch::TensorOptions().dtype(torch::kFloat);
  EXPECT_EQ(o1.str(), "TensorOptions(dtype=float, device=cpu (default), layout=Strided (default), requires_grad=false "
                      "(default), pinned_memory=false (default), memory_format=(nullopt))");
  o2 << torch::TensorOptions().requires_grad(true).layout(torch::kStrided).memory_format(torch::MemoryFormat::Contiguous);
  EXPECT_EQ(o2.str(), "TensorOptions(dtype=float (default), device=cpu (default), layout=Strided, requires_grad=true, "
                      "pinned_memory=false (default), memory_format=Contiguous)");
  EXPECT_ERROR(torch::TensorOptions().layout(torch::kSparse), "[TensorOptions] fw tensors are strided; layout Sparse is not supported");
  std::ostringstream o3;
  o3 << torch::ones({1}, torch::kLong).options();
  EXPECT_EQ(o3.str(), "TensorOptions(dtype=long int, device=cpu, layout=Strided, requires_grad=false (default), "
                      "pinned_memory=false (default), memory_format=(nullopt))");
}

// Optimizer state is keyed as libtorch keys it, c10::guts::to_string of the parameter's TensorImpl.
TEST(TorchCompat, OptimizerStateKeyedByImplString) {
  auto w = torch::tensor({1.0, -2.0}, torch::kDouble).requires_grad_(true);
  torch::optim::Adam opt({w}, torch::optim::AdamOptions(0.1));
  (w * w).sum().backward();
  opt.step();
  const std::string key = c10::guts::to_string(w.unsafeGetTensorImpl());
  EXPECT_EQ(key.rfind("0x", 0), 0u) << key;
  ASSERT_EQ(opt.state().count(key), 1u);
  auto& st = static_cast<torch::optim::AdamParamState&>(*opt.state()[key]);
  EXPECT_EQ(st.step(), 1);
  EXPECT_TRUE(torch::allclose(st.exp_avg(), 0.1 * 2 * torch::tensor({1.0, -2.0}, torch::kDouble)));
  std::ostringstream ref;
  ref << static_cast<const void*>(w.unsafeGetTensorImpl());
  EXPECT_EQ(key, ref.str());
  EXPECT_EQ(c10::guts::to_string(42), "42");
  EXPECT_EQ(c10::guts::to_string(static_cast<const int*>(nullptr)), "0");
}

// Printed modules in libtorch's wording: one-element sizes as numbers, LayerNorm's eps first,
// padding modes as enum names, Unflatten's sizes in braces, GELU without options.
TEST(TorchCompat, ModulePrintsAsLibtorch) {
  auto printed = [](const auto& m) {
    std::ostringstream os;
    os << *m;
    return os.str();
  };
  EXPECT_EQ(printed(nn::Conv1d(nn::Conv1dOptions(2, 4, 3))), "fw::nn::Conv1d(2, 4, kernel_size=3, stride=1)");
  EXPECT_EQ(printed(nn::MaxPool1d(nn::MaxPool1dOptions(2))),
            "fw::nn::MaxPool1d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=false)");
  EXPECT_EQ(printed(nn::LayerNorm(nn::LayerNormOptions({4}))), "fw::nn::LayerNorm([4], eps=1e-05, elementwise_affine=true)");
  EXPECT_EQ(printed(nn::Conv2d(nn::Conv2dOptions(1, 1, 3).padding(1).padding_mode(torch::kReflect))),
            "fw::nn::Conv2d(1, 1, kernel_size=[3, 3], stride=[1, 1], padding=[1, 1], padding_mode=kReflect)");
  EXPECT_EQ(printed(nn::Unflatten(nn::UnflattenOptions(1, {2, 2}))), "fw::nn::Unflatten(dim=1, unflattened_size={2, 2})");
  EXPECT_EQ(printed(nn::GELU(nn::GELUOptions().approximate("tanh"))), "fw::nn::GELU()");
}

// c10's ScalarType enumerator names, its CppTypeToScalarType and Device::has_index.
TEST(TorchCompat, ScalarTypeEnumeratorNamesAndDeviceIndex) {
  auto t = torch::ones({2}, torch::kLong);
  EXPECT_EQ(t.scalar_type(), at::ScalarType::Long);
  EXPECT_EQ(c10::ScalarType::Byte, torch::kUInt8);
  EXPECT_EQ(c10::ScalarType::Char, torch::kInt8);
  EXPECT_EQ(c10::ScalarType::Short, torch::kInt16);
  EXPECT_EQ(c10::ScalarType::Int, torch::kInt32);
  EXPECT_EQ(torch::TypeMeta().toScalarType(), c10::ScalarType::Undefined);
  EXPECT_STREQ(c10::toString(c10::ScalarType::Undefined), "Undefined");
  auto name = [](const torch::Tensor& x) {
    switch (x.scalar_type()) {
      case at::ScalarType::Long: return "long";
      case at::ScalarType::Float: return "float";
      default: return "other";
    }
  };
  EXPECT_STREQ(name(t), "long");
  EXPECT_STREQ(name(t.to(torch::kFloat)), "float");
  static_assert(c10::CppTypeToScalarType<float>::value == torch::kFloat);
  static_assert(c10::CppTypeToScalarType<int64_t>::value == at::ScalarType::Long);
  torch::Device cpu("cpu"), cpu0(torch::kCPU, 0);
  EXPECT_FALSE(cpu.has_index());
  EXPECT_TRUE(cpu0.has_index());
  cpu.set_index(0);
  EXPECT_EQ(cpu, cpu0);
}

TEST(TorchCompat, SmallVectorAndDimVector) {
  c10::SmallVector<int64_t, 2> v;
  v.push_back(3);
  v.emplace_back(4);
  v.emplace_back(5);  // past the inline capacity
  std::vector<int64_t> more{6, 7};
  v.append(more.begin(), more.end());
  EXPECT_EQ(v.size(), 5u);
  EXPECT_EQ(v.front(), 3);
  EXPECT_EQ(v.back(), 7);
  at::DimVector shape(v.begin(), v.begin() + 3);
  EXPECT_EQ(torch::zeros(shape).sizes(), torch::IntArrayRef({3, 4, 5}));
  int64_t sum = 0;
  for (int64_t x : v) sum += x;
  EXPECT_EQ(sum, 25);
}

// Tensor::storage(): libtorch's handle on the shared memory.
TEST(TorchCompat, StorageHandle) {
  auto z = torch::arange(6, torch::kFloat);
  auto view = z.narrow(0, 2, 3);
  auto st = view.storage();
  EXPECT_TRUE(bool(st));
  EXPECT_EQ(st.nbytes(), 24u);
  EXPECT_EQ(st.data_ptr().get(), z.data_ptr());
  EXPECT_EQ(st.data<float>() + view.storage_offset(), view.data_ptr<float>());
  EXPECT_TRUE(st.device().is_cpu());
  EXPECT_TRUE(st.is_alias_of(z.storage()));
  EXPECT_FALSE(st.is_alias_of(z.clone().storage()));
  EXPECT_EQ(st.use_count(), 3u);  // z, view and st
  EXPECT_TRUE(z.has_storage());
}

// Tensor::data() (libtorch's variable_data): shares memory, not the version counter, so an
// in-place write through it is not an error for a value autograd saved; detach() shares both.
// Expected values from libtorch 1.13.
TEST(TorchCompat, DataHasItsOwnVersionCounter) {
  auto w = torch::ones({3}, torch::requires_grad());
  auto y = (w * w).sum();
  auto d = w.data();
  EXPECT_FALSE(d.requires_grad());
  EXPECT_TRUE(d.is_alias_of(w));
  d.mul_(2);
  EXPECT_EQ(w._version(), 0u);
  EXPECT_EQ(d._version(), 1u);
  d.select(0, 0).fill_(5);  // a view of d counts on d's counter
  EXPECT_EQ(w._version(), 0u);
  EXPECT_EQ(d._version(), 2u);
  y.backward();  // the saved w is read as it is now: 2 * [5, 2, 2]
  EXPECT_TRUE(torch::equal(w.grad(), torch::tensor({10.0f, 4.0f, 4.0f})));

  auto w2 = torch::ones({3}, torch::requires_grad());
  auto y2 = (w2 * w2).sum();
  w2.detach().mul_(2);
  EXPECT_EQ(w2._version(), 1u);
  EXPECT_ERROR(y2.backward(), "modified by an in-place operation");

  // One count per in-place op also on tensors autograd tracks (libtorch: 1 to 5 below).
  auto g = w2 * 2;
  g.add_(1);
  EXPECT_EQ(g._version(), 1u);
  g.mul_(3);
  EXPECT_EQ(g._version(), 2u);
  g.select(0, 1).fill_(4);  // through a view of a grad-tracking tensor
  EXPECT_EQ(g._version(), 3u);
  g.copy_(torch::ones({3}));
  EXPECT_EQ(g._version(), 4u);
  g.index_put_({torch::tensor({0L})}, torch::tensor(2.0f));
  EXPECT_EQ(g._version(), 5u);

  auto z = torch::zeros({2});
  z.add_(1);
  z.add_(1);
  auto zd = z.variable_data();
  EXPECT_EQ(z._version(), 2u);
  EXPECT_EQ(zd._version(), 0u);
  EXPECT_EQ(zd.detach()._version(), 0u);
  zd.add_(1);
  z.add_(1);
  EXPECT_EQ(z._version(), 3u);
  EXPECT_EQ(zd._version(), 1u);
  EXPECT_TRUE(torch::equal(z, torch::full({2}, 4.0f)));
}

// Packed accessors own their sizes and strides (in int32 for packed_accessor32) and take
// libtorch's PtrTraits.
TEST(TorchCompat, PackedAccessorsOwnTheirGeometry) {
  auto base = torch::arange(12, torch::kFloat).reshape({3, 4});
  torch::PackedTensorAccessor32<float, 2, at::RestrictPtrTraits> a32 = [&] {
    auto t = base.t();  // the handle dies with the lambda; the accessor keeps its own geometry
    return t.packed_accessor32<float, 2, at::RestrictPtrTraits>();
  }();
  static_assert(std::is_same_v<decltype(a32.size(0)), int32_t>);
  EXPECT_EQ(a32.size(0), 4);
  EXPECT_EQ(a32.size(1), 3);
  EXPECT_EQ(a32.stride(0), 1);
  EXPECT_EQ(a32[1][2], 9.0f);  // base[2][1]
  auto row = a32[3];
  EXPECT_EQ(row.size(0), 3);
  EXPECT_EQ(row[0], 3.0f);
  auto back = a32.transpose(0, 1);
  EXPECT_EQ(back[2][1], 9.0f);
  torch::PackedTensorAccessor64<float, 2> a64 = base.packed_accessor64<float, 2>();
  a64[0][3] = -1.0f;
  EXPECT_EQ(base[0][3].item<float>(), -1.0f);
  auto g = base.generic_packed_accessor<float, 2, at::DefaultPtrTraits, int64_t>();
  EXPECT_EQ(g[2][3], 11.0f);
  auto acc = base.accessor<float, 2>();
  EXPECT_EQ(acc.sizes(), torch::IntArrayRef({3, 4}));
  EXPECT_EQ(acc.strides()[0], 4);
  auto huge = torch::zeros({1}).expand({int64_t(1) << 16, int64_t(1) << 16});
  EXPECT_ERROR((huge.packed_accessor32<float, 2>()), "[packed_accessor32] numel needs to be smaller than 2^31");
  EXPECT_EQ((huge.packed_accessor64<float, 2>().size(1)), int64_t(1) << 16);
  EXPECT_ERROR((base.packed_accessor64<float, 3>()), "expected 3 dims");
  EXPECT_ERROR((base.packed_accessor64<double, 2>()), "expected scalar type Double");
  // Valid libtorch: accessors of grad(), and a reference bound to it.
  auto w = torch::ones({3}, torch::requires_grad());
  EXPECT_FALSE(w.grad().defined());
  (w * w).sum().backward();
  EXPECT_EQ((w.grad().accessor<float, 1>()[2]), 2.0f);
  auto& wg = w.grad();
  EXPECT_EQ(wg.data_ptr(), w.grad().data_ptr());
  EXPECT_EQ((wg.packed_accessor64<float, 1>()[0]), 2.0f);
  w.grad().zero_();
  EXPECT_TRUE(torch::equal(wg, torch::zeros({3})));
  auto plain = torch::ones({2});
  EXPECT_FALSE(plain.grad().defined());
}

// The comparison spellings, in-place comparisons and in-place forms libtorch has as methods.
TEST(TorchCompat, ComparisonSpellingsAndInPlaceForms) {
  auto a = torch::tensor({1.0f, 2.0f, 3.0f}), b = torch::tensor({3.0f, 2.0f, 1.0f});
  EXPECT_TRUE(torch::equal(torch::greater(a, b), a.gt(b)));
  EXPECT_TRUE(torch::equal(a.greater_equal(2), a.ge(2)));
  EXPECT_TRUE(torch::equal(torch::less_equal(a, b), a.le(b)));
  EXPECT_TRUE(torch::equal(a.not_equal(b), torch::tensor({true, false, true})));
  auto c = a.clone();
  c.lt_(b);  // 0/1 in float
  EXPECT_EQ(c.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(c, torch::tensor({1.0f, 0.0f, 0.0f})));
  auto i = torch::tensor({1, 5, 3});
  i.greater_equal_(3);
  EXPECT_TRUE(torch::equal(i, torch::tensor({0, 1, 1})));
  auto d = torch::tensor({0.0f, 90.0f, 180.0f});
  d.deg2rad_();
  EXPECT_NEAR(d[2].item<float>(), float(M_PI), 1e-6);
  auto h = torch::tensor({3.0, 5.0});
  h.hypot_(torch::tensor({4.0, 12.0}));
  EXPECT_TRUE(torch::equal(h, torch::tensor({5.0, 13.0})));
  auto s = torch::tensor({-2.0f, 0.0f, 0.5f});
  s.sinc_();
  EXPECT_TRUE(torch::allclose(s, torch::tensor({2.7828e-08f, 1.0f, 0.63661977f}), 1e-6, 1e-7));
  auto g = torch::tensor({12, 18});
  g.gcd_(torch::tensor({8, 12}));
  EXPECT_TRUE(torch::equal(g, torch::tensor({4, 6})));
  auto x = torch::tensor({0.0, 1.0, 2.0});
  x.xlogy_(3.0);
  EXPECT_TRUE(torch::allclose(x, torch::tensor({0.0, std::log(3.0), 2 * std::log(3.0)})));
  auto ints = torch::tensor({1, 2});
  EXPECT_ERROR(ints.sinc_(), "[sinc_] result type float32 can't be cast to the desired output type int64");
  auto m = torch::ones({2, 3});
  m.swapaxes_(0, 1);
  EXPECT_EQ(m.sizes(), torch::IntArrayRef({3, 2}));
  auto w = torch::ones({2}, torch::requires_grad());
  auto y = w * 2;
  y.arctan_();  // in place on a non-leaf records the op for backward
  y.sum().backward();
  EXPECT_TRUE(torch::allclose(w.grad(), torch::full({2}, 2.0f / 5.0f)));
}

// index_put out of place, alias, set_, is_set_to, expect_contiguous and other method forms.
TEST(TorchCompat, IndexPutAliasSetAndFriends) {
  auto b = torch::zeros({3, 2});
  auto r = b.index_put({torch::tensor({0, 2})}, torch::tensor(5.0f));
  EXPECT_TRUE(torch::equal(b, torch::zeros({3, 2})));
  EXPECT_TRUE(torch::equal(r.select(1, 0), torch::tensor({5.0f, 0.0f, 5.0f})));
  auto acc = b.index_put({torch::tensor({1, 1})}, torch::ones({2, 2}), /*accumulate=*/true);
  EXPECT_TRUE(torch::equal(acc[1], torch::full({2}, 2.0f)));

  auto w = torch::arange(4, torch::kFloat).requires_grad_();
  auto al = w.alias();
  EXPECT_TRUE(al.is_alias_of(w));
  (al * al).sum().backward();
  EXPECT_TRUE(torch::equal(w.grad(), torch::arange(4, torch::kFloat) * 2));

  auto src = torch::arange(6, torch::kFloat).reshape({2, 3});
  auto dst = torch::zeros({5});
  auto handle = dst;  // shares dst's impl, so sees set_ too
  EXPECT_FALSE(dst.is_set_to(src));
  auto v0 = dst._version();
  dst.set_(src);
  EXPECT_TRUE(dst.is_set_to(src));
  EXPECT_EQ(handle.sizes(), torch::IntArrayRef({2, 3}));
  EXPECT_GT(dst._version(), v0);
  EXPECT_FALSE(src.t().is_set_to(src));
  // libtorch 1.13: set_ bumps self's own counter, not source's, and a saved source stays valid.
  auto leaf = torch::ones({3}, torch::requires_grad());
  auto s2 = leaf * 1;
  auto y2 = (s2 * s2).sum();
  auto sv = s2._version();
  auto d2 = torch::zeros({1});
  d2.set_(s2.detach());
  EXPECT_EQ(s2._version(), sv);
  y2.backward();
  EXPECT_TRUE(torch::equal(leaf.grad(), torch::full({3}, 2.0f)));
  EXPECT_ERROR(dst.set_(torch::zeros({2}, torch::kDouble)), "[set_] Expected source to have the same dtype");
  EXPECT_ERROR(w.set_(torch::zeros({4})), "[set_] not supported for a tensor that requires grad");

  auto nc = src.t();
  auto c1 = src.expect_contiguous();
  auto c2 = nc.expect_contiguous();
  EXPECT_EQ(c1->data_ptr(), src.data_ptr());
  EXPECT_TRUE(c2->is_contiguous());
  EXPECT_TRUE(torch::equal(*c2, nc));
  auto cl = torch::ones({1, 2, 3, 3}).contiguous(torch::MemoryFormat::ChannelsLast);
  EXPECT_EQ(cl.expect_contiguous(torch::MemoryFormat::ChannelsLast)->data_ptr(), cl.data_ptr());
  EXPECT_TRUE(cl.expect_contiguous()->is_contiguous());

  auto nz = torch::tensor({{0, 1}, {2, 0}}).nonzero_numpy();
  ASSERT_EQ(nz.size(), 2u);
  EXPECT_TRUE(torch::equal(nz[0], torch::tensor({0, 1})));
  EXPECT_TRUE(torch::equal(nz[1], torch::tensor({1, 0})));
  EXPECT_TRUE(torch::equal(torch::tensor({1, 2}).diagflat(1), torch::tensor({{0, 1, 0}, {0, 0, 2}, {0, 0, 0}})));
  auto es = src.new_empty_strided({2, 2}, {1, 2});
  EXPECT_EQ(es.strides(), torch::IntArrayRef({1, 2}));
  EXPECT_EQ(es.scalar_type(), torch::kFloat);
  EXPECT_TRUE(torch::equal(torch::tensor({-1.0f, 2.0f}).prelu(torch::tensor({0.25f})), torch::tensor({-0.25f, 2.0f})));
  EXPECT_TRUE(torch::allclose(torch::tensor({2.5}).mvlgamma(2), torch::special::multigammaln(torch::tensor({2.5}), 2)));
  auto pa = src.packed_accessor<float, 2>();
  EXPECT_EQ(pa[1][2], 5.0f);
}

// Free functions naming ATen kernels: values against the fw functions they forward to, and
// libtorch 1.13's results where the mapping is not an identity (expected values from it).
TEST(TorchCompat, AtenKernelFreeFunctions) {
  namespace F = torch::nn::functional;
  auto x = torch::arange(2 * 3 * 4 * 5, torch::kFloat).reshape({2, 3, 4, 5}).mul(0.1).sin();
  EXPECT_TRUE(torch::equal(torch::reflection_pad2d(x, {1, 2, 2, 1}),
                           F::pad(x, F::PadFuncOptions({1, 2, 2, 1}).mode(torch::kReflect))));
  EXPECT_TRUE(torch::equal(torch::replication_pad1d(x[0], {3, 0}),
                           F::pad(x[0], F::PadFuncOptions({3, 0}).mode(torch::kReplicate))));
  EXPECT_ERROR(torch::reflection_pad2d(x, {1, 2}), "[reflection_pad2d] padding must have 4 elements");
  EXPECT_TRUE(torch::equal(torch::upsample_bicubic2d(x, {7, 3}, true),
                           F::interpolate(x, F::InterpolateFuncOptions()
                                                 .size(std::vector<int64_t>{7, 3})
                                                 .mode(torch::kBicubic)
                                                 .align_corners(true))));
  auto v = x.unsqueeze(2).expand({2, 3, 2, 4, 5}).contiguous();
  EXPECT_TRUE(torch::allclose(torch::upsample_trilinear3d(v, {3, 6, 7}, false),
                              F::interpolate(v, F::InterpolateFuncOptions()
                                                    .size(std::vector<int64_t>{3, 6, 7})
                                                    .mode(torch::kTrilinear)
                                                    .align_corners(false))));
  EXPECT_EQ(torch::upsample_nearest3d(v, {4, 8, 10}).sizes(), torch::IntArrayRef({2, 3, 4, 8, 10}));
  auto cols = torch::im2col(x, {2, 3}, {1, 1}, {1, 0}, {2, 1});
  EXPECT_TRUE(torch::equal(cols, F::unfold(x, F::UnfoldFuncOptions({2, 3}).padding({1, 0}).stride({2, 1}))));
  EXPECT_TRUE(torch::equal(torch::col2im(cols, {4, 5}, {2, 3}, {1, 1}, {1, 0}, {2, 1}),
                           F::fold(cols, F::FoldFuncOptions({4, 5}, {2, 3}).padding({1, 0}).stride({2, 1}))));
  auto w = torch::arange(3 * 3 * 2 * 2, torch::kFloat).reshape({3, 3, 2, 2}).cos();
  auto bias = torch::tensor({0.5f, -1.0f, 0.0f});
  EXPECT_TRUE(torch::equal(torch::convolution(x, w, bias, {1, 2}, {1, 0}, {1, 1}, false, {0, 0}, 1),
                           torch::conv2d(x, w, bias, {1, 2}, {1, 0})));
  EXPECT_TRUE(torch::equal(torch::convolution(x, w, std::nullopt, {2, 2}, {0, 0}, {1, 1}, true, {1, 0}, 1),
                           torch::conv_transpose2d(x, w, {}, {2, 2}, {0, 0}, {1, 0})));
  auto w1 = torch::ones({2, 3, 3});
  auto x1 = x[0].transpose(0, 1).contiguous();  // (4, 3, 5)
  EXPECT_TRUE(torch::equal(torch::convolution(x1, w1, {}, {1}, {1}, {1}, false, {0}, 1),
                           torch::conv1d(x1, w1, {}, {1}, {1})));
  auto theta = torch::tensor({0.8f, 0.1f, 0.05f, -0.2f, 0.9f, 0.1f}).reshape({1, 2, 3}).repeat({2, 1, 1});
  auto grid = torch::affine_grid_generator(theta, {2, 3, 3, 4}, false);
  EXPECT_TRUE(torch::equal(grid, F::affine_grid(theta, {2, 3, 3, 4}, false)));
  EXPECT_TRUE(torch::equal(torch::grid_sampler(x, grid * 1.3, 1, 2, true),
                           F::grid_sample(x, grid * 1.3,
                                          F::GridSampleFuncOptions()
                                              .mode(torch::kNearest)
                                              .padding_mode(torch::kReflection)
                                              .align_corners(true))));
  EXPECT_ERROR(torch::grid_sampler(x, grid, 3, 0, false), "[grid_sampler] interpolation_mode must be 0");

  // libtorch 1.13: torch::norm_except_dim(v, 2, 0) and (v, 2, 1) on v = arange(6).reshape({2, 3}).
  auto nv = torch::arange(6, torch::kDouble).reshape({2, 3});
  EXPECT_TRUE(torch::allclose(torch::norm_except_dim(nv, 2, 0), torch::tensor({{std::sqrt(5.0)}, {std::sqrt(50.0)}}, torch::kDouble)));
  EXPECT_TRUE(torch::allclose(torch::norm_except_dim(nv, 2, 1),
                              torch::tensor({{3.0, std::sqrt(17.0), std::sqrt(29.0)}}, torch::kDouble)));
  EXPECT_TRUE(torch::allclose(torch::norm_except_dim(nv, 2, -1), torch::tensor(std::sqrt(55.0), torch::kDouble)));

  torch::manual_seed(3);
  auto fd = torch::feature_dropout(torch::ones({4, 6, 5}), 0.5, true);
  for (int64_t n = 0; n < 4; n++)
    for (int64_t c = 0; c < 6; c++) {
      const float v0 = fd[n][c][0].item<float>();
      EXPECT_TRUE(v0 == 0.0f || v0 == 2.0f);
      EXPECT_TRUE(torch::equal(fd[n][c], torch::full({5}, v0)));  // whole channels
    }
  EXPECT_TRUE(torch::equal(torch::feature_dropout(x, 0.5, false), x));
  EXPECT_TRUE(torch::equal(torch::alpha_dropout(x, 0.3, false), x));

  auto sym = torch::tensor({{2.0, 1.0}, {1.0, 3.0}});
  auto [e, vec] = torch::symeig(sym, true);
  EXPECT_TRUE(torch::allclose(std::get<0>(torch::linalg::eigh(sym)), e));
  EXPECT_EQ(std::get<1>(torch::symeig(sym)).numel(), 0);

  // libtorch 1.13: torch::as_strided_scatter(zeros(6), ones(2), {2}, {2}, 1).
  EXPECT_TRUE(torch::equal(torch::as_strided_scatter(torch::zeros({6}), torch::ones({2}), {2}, {2}, 1),
                           torch::tensor({0.0f, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f})));
  std::vector<torch::Tensor> parts{torch::ones({2, 2}), torch::arange(3, torch::kFloat)};
  auto flat = torch::flatten_dense_tensors(parts);
  EXPECT_TRUE(torch::equal(flat, torch::tensor({1.0f, 1.0f, 1.0f, 1.0f, 0.0f, 1.0f, 2.0f})));
  auto back = torch::unflatten_dense_tensors(flat, parts);
  EXPECT_TRUE(torch::equal(back[0], parts[0]) && torch::equal(back[1], parts[1]));
  EXPECT_TRUE(torch::equal(torch::concatenate({parts[1], parts[1]}), torch::cat({parts[1], parts[1]})));
  EXPECT_EQ(torch::split_with_sizes(torch::arange(5), {2, 3})[1].numel(), 3);
  EXPECT_TRUE(torch::is_same_size(parts[0], torch::zeros({2, 2})));
  EXPECT_EQ(torch::size(x, -1), 5);
  EXPECT_EQ(torch::stride(x, 0), 60);
  EXPECT_TRUE(torch::equal(torch::slice(torch::arange(6), 0, 1, 5, 2), torch::tensor({1, 3})));
  EXPECT_TRUE(torch::equal(torch::fill(parts[1], 7), torch::full({3}, 7.0f)));
  auto ps = torch::pad_sequence({torch::ones({2}), torch::ones({3})}, true, -1);
  EXPECT_TRUE(torch::equal(ps, torch::tensor({{1.0f, 1.0f, -1.0f}, {1.0f, 1.0f, 1.0f}})));
  auto m = torch::arange(4, torch::kFloat).reshape({2, 2});
  EXPECT_TRUE(torch::equal(torch::linalg_multi_dot({m, m, m}), m.mm(m).mm(m)));
  EXPECT_TRUE(torch::equal(torch::special_polygamma(1, torch::tensor({1.5})), torch::polygamma(1, torch::tensor({1.5}))));
  auto logp = torch::arange(2 * 3 * 2 * 2, torch::kFloat).reshape({2, 3, 2, 2}).log_softmax(1);
  auto tgt = torch::tensor({0, 1, 2, 1, 2, 2, 0, 0}).reshape({2, 2, 2});
  EXPECT_TRUE(torch::equal(torch::nll_loss2d(logp, tgt), F::nll_loss(logp, tgt)));
  EXPECT_ERROR(torch::nll_loss2d(logp[0], tgt[0]), "[nll_loss2d] expected a 4-D input");
  auto [u, inv, cnt] = torch::unique_dim_consecutive(torch::tensor({{1, 1}, {1, 1}, {2, 3}}), 0, true, true);
  EXPECT_TRUE(torch::equal(u, torch::tensor({{1, 1}, {2, 3}})));
  EXPECT_TRUE(torch::equal(cnt, torch::tensor({2, 1})));
}

// libtorch's in-place methods are const members (a Tensor is a handle; they write what it points
// at), so they apply through `const Tensor&` parameters and loops over `const auto&`.
namespace {
void sgd_step(const std::vector<torch::Tensor>& params, double lr) {
  torch::NoGradGuard ng;
  for (const auto& p : params) p.sub_(p.grad(), lr);
}
const torch::Tensor& scale_in_place(const torch::Tensor& w, double s) { return w.mul_(s).add_(1); }
}  // namespace

TEST(TorchCompat, InPlaceMethodsApplyThroughConstHandles) {
  static_assert(std::is_same_v<decltype(std::declval<const torch::Tensor&>().add_(1)), torch::Tensor&>);
  static_assert(std::is_same_v<decltype(std::declval<const torch::Tensor&>().exp_()), torch::Tensor&>);
  static_assert(std::is_same_v<decltype(std::declval<const torch::Tensor&>().eq_(1)), torch::Tensor&>);

  auto w = torch::tensor({1.0f, 2.0f}).requires_grad_();
  (w * w).sum().backward();
  sgd_step({w}, 0.5);  // w - 0.5 * 2w = 0
  EXPECT_TRUE(torch::equal(w.detach(), torch::zeros({2})));

  auto a = torch::tensor({1.0f, 2.0f});
  const auto& r = scale_in_place(a, 3);
  EXPECT_TRUE(r.is_same(a));
  EXPECT_TRUE(torch::equal(a, torch::tensor({4.0f, 7.0f})));

  const torch::Tensor c = torch::zeros({2, 3});
  c.fill_(2).index_put_({0, 1}, 5);
  c.masked_fill_(c.gt(4), -1).clamp_(-1, 1.5);
  EXPECT_TRUE(torch::equal(c, torch::tensor({{1.5f, -1.0f, 1.5f}, {1.5f, 1.5f, 1.5f}})));
  c.unsqueeze_(0).transpose_(1, 2);  // the metadata is the shared impl's, so every handle sees it
  EXPECT_EQ(c.sizes(), torch::IntArrayRef({1, 3, 2}));
  const torch::Tensor h = torch::ones({2});
  h.set_data(torch::full({3}, 4.0));
  h.requires_grad_();
  EXPECT_TRUE(h.requires_grad() && h.numel() == 3 && h[2].item<double>() == 4.0);
  const torch::Tensor k = torch::arange(4);
  k.bitwise_xor_(1).__ilshift__(1);
  EXPECT_TRUE(torch::equal(k, torch::tensor({2, 0, 6, 4})));
}

// Spellings an API hunt (libtorch programs built against both) found missing: printing a device
// type, c10::DeviceTypeName, AnomalyMode, Edge::function, and the loader's type names
// (StatelessDataLoader held in a class member, data::Iterator<Batch> spelled in a loop).
namespace {
struct Squares : torch::data::datasets::Dataset<Squares> {
  torch::data::Example<> get(size_t i) override {
    return {torch::full({1}, double(i * i)), torch::full({1}, int64_t(i))};
  }
  torch::optional<size_t> size() const override { return 5; }
};
struct Trainer {
  using Loader = torch::data::StatelessDataLoader<Squares, torch::data::samplers::SequentialSampler>;
  std::unique_ptr<Loader> loader;
};
}  // namespace

TEST(TorchCompat, ApiHuntDeviceTypeAnomalyEdgesLoaderTypes) {
  std::ostringstream os;
  os << torch::Device(torch::kCPU).type() << " " << c10::DeviceTypeName(torch::kCPU) << " "
     << c10::DeviceTypeName(torch::kCUDA, true);
  EXPECT_EQ(os.str(), "cpu CPU cuda");

  EXPECT_FALSE(torch::autograd::AnomalyMode::is_enabled());
  torch::autograd::AnomalyMode::set_enabled(true);
  EXPECT_TRUE(torch::autograd::AnomalyMode::is_enabled());
  auto w = torch::ones({2}, torch::requires_grad());
  auto bad = (w * std::nan("")).sum();
  EXPECT_ERROR(bad.backward(), "nan");
  torch::autograd::AnomalyMode::set_enabled(false);
  EXPECT_FALSE(torch::autograd::AnomalyMode::is_enabled());

  auto y = (w * 2).sum();
  const auto& edges = y.grad_fn()->next_edges();
  ASSERT_EQ(edges.size(), 1u);
  ASSERT_TRUE(edges[0].is_valid());
  EXPECT_EQ(edges[0].function->name(), "MulBackward1");  // libtorch's names, by ATen overload
  EXPECT_EQ(edges[0].function->next_edges()[0].function->name(), "torch::autograd::AccumulateGrad");

  auto x = torch::ones({2}, torch::requires_grad());
  EXPECT_EQ((x + 2).grad_fn()->name(), "AddBackward1");
  EXPECT_EQ((x + x).grad_fn()->name(), "AddBackward0");
  EXPECT_EQ((x / 2).grad_fn()->name(), "DivBackward1");
  EXPECT_EQ(x.pow(x).grad_fn()->name(), "PowBackward1");
  EXPECT_EQ(x.clamp(0, 1).grad_fn()->name(), "ClampBackward1");
  EXPECT_EQ(x.exp().grad_fn()->name(), "ExpBackward0");

  Trainer t;
  t.loader = torch::data::make_data_loader<torch::data::samplers::SequentialSampler>(Squares(), 2);
  std::vector<double> seen;
  for (torch::data::Iterator<std::vector<torch::data::Example<>>> it = t.loader->begin(); it != t.loader->end(); ++it)
    for (const auto& ex : *it) seen.push_back(ex.data.item<double>());
  EXPECT_EQ(seen, (std::vector<double>{0, 1, 4, 9, 16}));
}

// Tensor::stft / istft (libtorch's methods) equal the free functions, both stft overloads.
TEST(TorchCompat, StftMethods) {
  torch::manual_seed(2);
  auto x = torch::randn({2, 300});
  auto w = torch::hann_window(64);
  auto s = x.stft(64, 16, 64, w, true, "reflect", false, torch::nullopt, true);
  EXPECT_TRUE(torch::equal(torch::view_as_real(s), torch::view_as_real(torch::stft(x, 64, 16, 64, w, true, "reflect",
                                                                                  false, torch::nullopt, true))));
  auto s2 = x.stft(64, 16, 64, w, false, torch::nullopt, true);  // the overload without centering
  EXPECT_EQ(s2.sizes().vec(), (std::vector<int64_t>{2, 33, 15}));
  auto y = s.istft(64, 16, 64, w, true, false, torch::nullopt, 300);
  EXPECT_TRUE(torch::allclose(y, x, 1e-5, 1e-5));
}
