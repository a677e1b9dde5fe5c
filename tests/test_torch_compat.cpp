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
#include <vector>

#include <unistd.h>

#include <fw/fw.h>

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
  EXPECT_EQ(os.str(), "ChannelsLast TensorOptions(dtype=float64, device=cpu, layout=Strided, requires_grad=true)");
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
        if (state_.find(p.unsafeGetTensorImpl()) == state_.end())
          state_[p.unsafeGetTensorImpl()] = std::make_unique<CountingState>();
        auto& st = static_cast<CountingState&>(*state_[p.unsafeGetTensorImpl()]);
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
  auto& st = static_cast<CountingState&>(*opt.state().at(w.unsafeGetTensorImpl()));
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
  auto add = fn->next_edge(0).fn;
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
