// fw::nn::Module, holders, containers, layers and init: registration and naming, train/eval,
// PyTorch reference values (tests/fixtures/gen_nn_module.py), init statistics, to(), clone().
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include <fw/fw.h>

#include "tests/fixture.h"

namespace nn = fw::nn;
namespace {

// ---- fixture loading (tests/fixtures/nn_module.txt)

struct NnFixtures {
  std::map<std::string, fw::Tensor> t;
  std::map<std::string, double> s;
};

const NnFixtures& fx() {
  static const NnFixtures f = [] {
    NnFixtures r;
    std::ifstream in(std::string(FW_FIXTURE_DIR) + "/nn_module.txt");
    EXPECT_TRUE(in.good()) << "missing tests/fixtures/nn_module.txt";
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream is(line);
      std::string kind, key;
      is >> kind >> key;
      if (kind == "s") {
        is >> r.s[key];
        continue;
      }
      int64_t nd;
      is >> nd;
      std::vector<int64_t> sizes(nd);
      int64_t n = 1;
      for (auto& v : sizes) {
        is >> v;
        n *= v;
      }
      std::vector<float> vals(n);
      for (auto& v : vals) is >> v;
      r.t[key] = fw::tensor(vals).reshape(sizes);
    }
    return r;
  }();
  return f;
}

fw::Tensor T(const std::string& key) {
  auto it = fx().t.find(key);
  EXPECT_TRUE(it != fx().t.end()) << "no fixture tensor " << key;
  return it == fx().t.end() ? fw::Tensor() : it->second.clone();
}

// Copies fixture tensors "<prefix>.<parameter name>" into the module's parameters.
void load_params(const nn::Module& m, const std::string& prefix) {
  fw::NoGradGuard ng;
  for (auto& p : m.named_parameters()) p.value().copy_(T(prefix + "." + p.key()));
}

std::vector<std::string> keys_of(const fw::OrderedDict<std::string, fw::Tensor>& d) { return d.keys(); }

// ---- a user module with every kind of registration

struct NetImpl : nn::Cloneable<NetImpl> {
  NetImpl() { reset(); }
  void reset() override {
    scale = register_parameter("scale", fw::ones({1}));
    register_buffer("steps", fw::zeros({}, fw::kLong));
    fc1 = register_module("fc1", nn::Linear(3, 4));
    body = register_module("body", nn::Sequential(nn::Linear(4, 4), nn::ReLU(), nn::Linear(4, 2)));
  }
  fw::Tensor forward(const fw::Tensor& x) { return body->forward(fc1->forward(x)) * scale; }
  fw::Tensor scale;
  nn::Linear fc1{nullptr};
  nn::Sequential body{nullptr};
};
FW_MODULE(Net);

}  // namespace

// ---- registration and naming

TEST(NnModule, RegistrationAndDottedNames) {
  Net net;
  std::vector<std::string> want = {"scale",         "fc1.weight",  "fc1.bias",   "body.0.weight",
                                   "body.0.bias",   "body.2.weight", "body.2.bias"};
  EXPECT_EQ(keys_of(net->named_parameters()), want);
  EXPECT_EQ(net->parameters().size(), 7u);
  EXPECT_EQ(keys_of(net->named_parameters(false)), std::vector<std::string>{"scale"});
  EXPECT_EQ(keys_of(net->named_buffers()), std::vector<std::string>{"steps"});
  EXPECT_EQ(net->named_children().keys(), (std::vector<std::string>{"fc1", "body"}));
  EXPECT_EQ(net->children().size(), 2u);
  EXPECT_EQ(net->named_modules().keys(),
            (std::vector<std::string>{"", "fc1", "body", "body.0", "body.1", "body.2"}));
  EXPECT_EQ(net->modules(false).size(), 5u);
  EXPECT_EQ(net->named_modules("net").keys()[3], "net.body.0");
  for (auto& p : net->parameters()) EXPECT_TRUE(p.requires_grad());
  // The registry entry and the member are the same tensor.
  EXPECT_TRUE(net->named_parameters()["fc1.weight"].is_same(net->fc1->weight));
  EXPECT_EQ(net->fc1->weight.sizes(), (std::vector<int64_t>{4, 3}));

  nn::Module m;
  auto& frozen = m.register_parameter("frozen", fw::zeros({2}), false);
  EXPECT_FALSE(frozen.requires_grad());
  EXPECT_THROW(m.register_parameter("frozen", fw::zeros({2})), fw::Error);
  EXPECT_THROW(m.register_parameter("a.b", fw::zeros({2})), fw::Error);
  EXPECT_THROW(m.register_buffer("", fw::zeros({2})), fw::Error);
  EXPECT_THROW(m.register_module("x", std::shared_ptr<nn::LinearImpl>()), fw::Error);
  try {
    m.register_parameter("frozen", fw::zeros({2}));
  } catch (const fw::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Parameter 'frozen' already defined"), std::string::npos) << e.what();
  }
  // Undefined parameters (Linear without bias) are registered but not listed.
  nn::Linear nb(nn::LinearOptions(3, 2).bias(false));
  EXPECT_EQ(keys_of(nb->named_parameters()), std::vector<std::string>{"weight"});
  EXPECT_FALSE(nb->bias.defined());
  // modules() with include_self needs the module in a shared_ptr.
  EXPECT_THROW(m.modules(), fw::Error);
  EXPECT_EQ(m.modules(false).size(), 0u);
}

TEST(NnModule, AsAndNames) {
  Net net;
  nn::Module& body0 = *net->body[0];
  EXPECT_NE(body0.as<nn::Linear>(), nullptr);
  EXPECT_NE(body0.as<nn::LinearImpl>(), nullptr);
  EXPECT_EQ(body0.as<nn::ReLU>(), nullptr);
  EXPECT_EQ(body0.as<nn::Linear>()->options.in_features(), 4);
  EXPECT_EQ(net->name(), "(anonymous namespace)::NetImpl");
  EXPECT_EQ(nn::Module("custom").name(), "custom");
  net->unregister_module("fc1");
  EXPECT_EQ(net->children().size(), 1u);
  EXPECT_THROW(net->unregister_module("fc1"), fw::Error);
}

TEST(NnModule, ApplyVisitsEveryModule) {
  Net net;
  std::vector<std::string> names;
  net->apply([&](const std::string& name, nn::Module&) { names.push_back(name); });
  EXPECT_EQ(names, (std::vector<std::string>{"", "fc1", "body", "body.0", "body.1", "body.2"}));
  net->apply([](nn::Module& m) {
    if (auto* lin = m.as<nn::Linear>()) nn::init::constant_(lin->weight, 0.25);
  });
  for (auto& p : net->named_parameters())
    if (p.key().find("weight") != std::string::npos) EXPECT_EQ(p.value().min().item<float>(), 0.25f);
  int count = 0;
  net->apply([&](const std::shared_ptr<nn::Module>& m) { count += m != nullptr; });
  EXPECT_EQ(count, 6);
}

// ---- holders

TEST(NnModule, HolderCopiesShareTheModule) {
  nn::Linear a(2, 3);
  nn::Linear b = a;
  EXPECT_EQ(a.get(), b.get());
  EXPECT_TRUE(a->weight.is_same(b->weight));
  {
    fw::NoGradGuard ng;
    b->weight.fill_(2);
  }
  EXPECT_EQ(a->weight.sum().item<float>(), 12.f);
  auto x = fw::randn({5, 2});
  EXPECT_TRUE(fw::equal(a(x), a->forward(x)));
  nn::Linear c = nullptr;
  EXPECT_TRUE(c.is_empty());
  EXPECT_FALSE(bool(c));
  EXPECT_THROW(c->forward(x), fw::Error);
  c = a;
  EXPECT_EQ(c.ptr(), a.ptr());
  nn::Linear d(std::make_shared<nn::LinearImpl>(nn::LinearOptions(2, 3).bias(false)));
  EXPECT_FALSE(d->options.bias());
  nn::Linear e(nn::LinearOptions(4, 1));
  EXPECT_EQ(e->weight.size(1), 4);
}

// ---- train / eval

TEST(NnModule, TrainEvalPropagatesAndDropoutObeys) {
  auto seq = nn::Sequential(nn::Linear(3, 3), nn::Dropout(0.5), nn::Sequential(nn::Dropout2d(0.3)));
  EXPECT_TRUE(seq->is_training());
  seq->eval();
  for (auto& m : seq->modules()) EXPECT_FALSE(m->is_training());
  seq->train();
  for (auto& m : seq->modules()) EXPECT_TRUE(m->is_training());

  nn::Dropout drop(nn::DropoutOptions().p(0.25));
  auto x = fw::ones({100000});
  auto y = drop(x);
  double zero_frac = y.eq(0).to(fw::kDouble).mean().item<double>();
  EXPECT_NEAR(zero_frac, 0.25, 0.01);
  EXPECT_NEAR(y.max().item<float>(), 1 / 0.75f, 1e-6);
  EXPECT_NEAR(y.mean().item<float>(), 1.0, 0.02);
  drop->eval();
  EXPECT_TRUE(fw::equal(drop(x), x));
  EXPECT_THROW(nn::Dropout(1.5), fw::Error);

  nn::Dropout2d d2(0.5);
  auto z = d2(fw::ones({8, 64, 3, 3}));
  auto per_channel = z.amax({2, 3});
  auto per_channel_min = z.amin({2, 3});
  EXPECT_TRUE(fw::equal(per_channel, per_channel_min));  // whole channels are kept or dropped
  double kept = per_channel.ne(0).to(fw::kDouble).mean().item<double>();
  EXPECT_NEAR(kept, 0.5, 0.1);
  d2->eval();
  EXPECT_TRUE(fw::equal(d2(fw::ones({2, 3, 2, 2})), fw::ones({2, 3, 2, 2})));
}

TEST(NnModule, BatchNorm2dTrainThenEvalMatchesPyTorch) {
  nn::BatchNorm2d bn(3);
  EXPECT_EQ(keys_of(bn->named_buffers()),
            (std::vector<std::string>{"running_mean", "running_var", "num_batches_tracked"}));
  EXPECT_EQ(bn->num_batches_tracked.dtype(), fw::kLong);
  load_params(*bn, "bn2d");
  FW_EXPECT_CLOSE(bn(T("bn2d.x1")), T("bn2d.y1"), 1e-5, 1e-5);
  FW_EXPECT_CLOSE(bn(T("bn2d.x2")), T("bn2d.y2"), 1e-5, 1e-5);
  FW_EXPECT_CLOSE(bn->running_mean, T("bn2d.running_mean"), 1e-5, 1e-6);
  FW_EXPECT_CLOSE(bn->running_var, T("bn2d.running_var"), 1e-5, 1e-6);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), int64_t(fx().s.at("bn2d.num_batches_tracked")));
  bn->eval();
  FW_EXPECT_CLOSE(bn(T("bn2d.x3")), T("bn2d.y3"), 1e-5, 1e-5);
  EXPECT_EQ(bn->num_batches_tracked.item<int64_t>(), 2);  // eval does not count
  EXPECT_THROW(bn(fw::randn({2, 3, 4})), fw::Error);
  bn->reset_running_stats();
  EXPECT_EQ(bn->running_var.sum().item<float>(), 3.f);
}

TEST(NnModule, BatchNorm1dVariantsMatchPyTorch) {
  nn::BatchNorm1d cma(nn::BatchNorm1dOptions(4).momentum(std::nullopt));
  load_params(*cma, "bn1d_cma");
  for (int i = 0; i < 3; i++) cma(T("bn1d_cma.x" + std::to_string(i)));
  FW_EXPECT_CLOSE(cma->running_mean, T("bn1d_cma.running_mean"), 1e-5, 1e-6);
  FW_EXPECT_CLOSE(cma->running_var, T("bn1d_cma.running_var"), 1e-5, 1e-6);
  cma->eval();
  FW_EXPECT_CLOSE(cma(T("bn1d_cma.xe")), T("bn1d_cma.ye"), 1e-5, 1e-5);

  nn::BatchNorm1d plain(nn::BatchNorm1dOptions(2).affine(false).momentum(0.3));
  EXPECT_EQ(plain->parameters().size(), 0u);
  FW_EXPECT_CLOSE(plain(T("bn1d_3d.x")), T("bn1d_3d.y"), 1e-5, 1e-5);
  FW_EXPECT_CLOSE(plain->running_mean, T("bn1d_3d.running_mean"), 1e-5, 1e-6);
  FW_EXPECT_CLOSE(plain->running_var, T("bn1d_3d.running_var"), 1e-5, 1e-6);

  nn::BatchNorm2d notrack(nn::BatchNorm2dOptions(2).track_running_stats(false));
  EXPECT_EQ(notrack->buffers().size(), 0u);
  load_params(*notrack, "bn_notrack");
  notrack->eval();
  FW_EXPECT_CLOSE(notrack(T("bn_notrack.x")), T("bn_notrack.y"), 1e-5, 1e-5);
}

// ---- forward + backward

TEST(NnModule, SequentialForwardBackwardMatchesManualAndPyTorch) {
  nn::Sequential mlp(nn::Linear(4, 5), nn::Tanh(), nn::Linear(5, 3));
  load_params(*mlp, "mlp");
  auto x = T("mlp.x"), g = T("mlp.g");
  auto y = mlp->forward(x);
  FW_EXPECT_CLOSE(y, T("mlp.y"), 1e-5, 1e-5);
  (y * g).sum().backward();
  for (auto& p : mlp->named_parameters()) FW_EXPECT_CLOSE(p.value().grad(), T("mlp.grad." + p.key()), 1e-5, 1e-5);

  // By hand: h = tanh(x W1^T + b1), y = h W2^T + b2.
  auto& l1 = mlp->at<nn::LinearImpl>(0);
  auto& l2 = mlp->at<nn::LinearImpl>(2);
  fw::NoGradGuard ng;
  auto h = fw::tanh(x.matmul(l1.weight.t()) + l1.bias);
  FW_EXPECT_CLOSE(y.detach(), h.matmul(l2.weight.t()) + l2.bias, 1e-5, 1e-6);
  auto dz = g.matmul(l2.weight) * (1 - h * h);
  FW_EXPECT_CLOSE(l2.weight.grad(), g.t().matmul(h), 1e-5, 1e-6);
  FW_EXPECT_CLOSE(l2.bias.grad(), g.sum({0}), 1e-5, 1e-6);
  FW_EXPECT_CLOSE(l1.weight.grad(), dz.t().matmul(x), 1e-5, 1e-6);
  FW_EXPECT_CLOSE(l1.bias.grad(), dz.sum({0}), 1e-5, 1e-6);
}

TEST(NnModule, ZeroGrad) {
  nn::Linear lin(3, 2);
  lin(fw::randn({4, 3})).sum().backward();
  EXPECT_TRUE(lin->weight.grad().defined());
  lin->zero_grad(false);
  EXPECT_EQ(lin->weight.grad().abs().sum().item<float>(), 0.f);
  lin->zero_grad(true);
  EXPECT_FALSE(lin->weight.grad().defined());
  EXPECT_FALSE(lin->bias.grad().defined());
}

// ---- containers

TEST(NnModule, SequentialBehaviour) {
  nn::Sequential seq;
  EXPECT_TRUE(seq->is_empty());
  EXPECT_THROW(seq->forward(fw::randn({2, 2})), fw::Error);
  seq->push_back(nn::Linear(3, 4));
  seq->push_back(nn::ReLU());
  seq->push_back("out", nn::Linear(4, 2));
  seq->push_back(std::make_shared<nn::IdentityImpl>());
  EXPECT_EQ(seq->size(), 4u);
  EXPECT_EQ(seq->named_children().keys(), (std::vector<std::string>{"0", "1", "out", "3"}));
  EXPECT_EQ(keys_of(seq->named_parameters())[2], "out.weight");
  EXPECT_NE(seq[1]->as<nn::ReLU>(), nullptr);
  EXPECT_EQ(seq->at<nn::LinearImpl>(2).options.out_features(), 2);
  EXPECT_EQ(seq->ptr<nn::LinearImpl>(0)->options.in_features(), 3);
  EXPECT_THROW(seq->at<nn::ReLUImpl>(0), fw::Error);
  EXPECT_THROW(seq->ptr(9), fw::Error);
  size_t n = 0;
  for (auto& m : *seq) n += !m.is_empty();
  EXPECT_EQ(n, 4u);

  auto x = fw::randn({5, 3});
  auto& l0 = seq->at<nn::LinearImpl>(0);
  auto& l2 = seq->at<nn::LinearImpl>(2);
  auto want = fw::linear(fw::relu(fw::linear(x, l0.weight, l0.bias)), l2.weight, l2.bias);
  FW_EXPECT_CLOSE(seq->forward(x), want);
  FW_EXPECT_CLOSE(seq(x), want);

  nn::Sequential named({{"fc", nn::Linear(2, 2)}, {"act", nn::Sigmoid()}});
  EXPECT_EQ(named->named_children().keys(), (std::vector<std::string>{"fc", "act"}));
  nn::Sequential nested(named, nn::Sequential(nn::Tanh()));
  EXPECT_EQ(keys_of(nested->named_parameters()), (std::vector<std::string>{"0.fc.weight", "0.fc.bias"}));
  EXPECT_EQ(nested->forward(fw::randn({3, 2})).sizes(), (std::vector<int64_t>{3, 2}));
  nested->extend(*named);
  EXPECT_EQ(nested->size(), 4u);

  nn::Sequential bad(nn::Bilinear(2, 2, 2));
  EXPECT_THROW(bad->forward(fw::randn({1, 2})), fw::Error);
}

TEST(NnModule, ModuleListBehaviour) {
  nn::ModuleList list(nn::Linear(2, 3), nn::ReLU());
  list->push_back(nn::Linear(3, 1));
  EXPECT_EQ(list->size(), 3u);
  list->insert(1, nn::Tanh());
  EXPECT_EQ(list->size(), 4u);
  EXPECT_NE(list[1]->as<nn::Tanh>(), nullptr);
  EXPECT_EQ(list->named_children().keys(), (std::vector<std::string>{"0", "1", "2", "3"}));
  EXPECT_EQ(keys_of(list->named_parameters()), (std::vector<std::string>{"0.weight", "0.bias", "3.weight", "3.bias"}));
  EXPECT_NE(list->named_children()["2"]->as<nn::ReLU>(), nullptr);
  EXPECT_EQ(list->at<nn::LinearImpl>(3).options.out_features(), 1);
  EXPECT_THROW(list->ptr(4), fw::Error);
  EXPECT_THROW(list->insert(9, nn::ReLU()), fw::Error);
  auto x = fw::randn({2, 2});
  for (auto& m : *list) {
    if (auto* lin = m->as<nn::Linear>()) x = lin->forward(x);
  }
  EXPECT_EQ(x.sizes(), (std::vector<int64_t>{2, 1}));
  nn::Module owner;
  owner.register_module("layers", list);
  EXPECT_EQ(owner.parameters().size(), 4u);
}

TEST(NnModule, ModuleDictBehaviour) {
  nn::ModuleDict dict({{"fc", nn::Linear(2, 3).ptr()}, {"act", nn::ReLU().ptr()}});
  EXPECT_EQ(dict->size(), 2u);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"fc", "act"}));
  EXPECT_TRUE(dict->contains("fc"));
  EXPECT_EQ(dict->at<nn::LinearImpl>("fc").options.out_features(), 3);
  EXPECT_THROW(dict["nope"], fw::Error);
  dict->insert("fc", nn::Linear(2, 5));  // replaces, keeps the position
  EXPECT_EQ(dict->at<nn::LinearImpl>("fc").options.out_features(), 5);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"fc", "act"}));
  EXPECT_EQ(dict->named_parameters()["fc.weight"].size(0), 5);
  dict->insert("head", nn::Linear(5, 1));
  auto act = dict->pop("act");
  EXPECT_NE(act->as<nn::ReLU>(), nullptr);
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"fc", "head"}));
  EXPECT_EQ(dict->named_children().keys(), (std::vector<std::string>{"fc", "head"}));
  int n = 0;
  for (auto& item : *dict) n += item.value() != nullptr;
  EXPECT_EQ(n, 2);
  dict->clear();
  EXPECT_TRUE(dict->empty());
  EXPECT_EQ(dict->parameters().size(), 0u);
}

// ---- conversion and cloning

TEST(NnModule, ToDoubleConvertsInPlace) {
  auto seq = nn::Sequential(nn::Linear(3, 4), nn::BatchNorm1d(4));
  auto w = seq->at<nn::LinearImpl>(0).weight;
  auto before = w.to(fw::kDouble);
  seq->to(fw::kDouble);
  for (auto& p : seq->parameters()) EXPECT_EQ(p.dtype(), fw::kDouble);
  auto& bn = seq->at<nn::BatchNorm1dImpl>(1);
  EXPECT_EQ(bn.running_mean.dtype(), fw::kDouble);
  EXPECT_EQ(bn.num_batches_tracked.dtype(), fw::kLong);
  EXPECT_EQ(w.dtype(), fw::kDouble);  // the same handle sees the converted data
  EXPECT_TRUE(fw::equal(w, before));
  EXPECT_TRUE(w.requires_grad() && w.is_leaf());
  auto y = seq->forward(fw::randn({5, 3}, fw::kDouble));
  EXPECT_EQ(y.dtype(), fw::kDouble);
  y.sum().backward();
  EXPECT_EQ(w.grad().dtype(), fw::kDouble);
  seq->to(fw::kFloat);
  EXPECT_EQ(w.dtype(), fw::kFloat);
  EXPECT_EQ(w.grad().dtype(), fw::kFloat);
}

TEST(NnModule, CloneIsDeep) {
  Net net;
  auto copy = std::dynamic_pointer_cast<NetImpl>(net->clone());
  ASSERT_NE(copy, nullptr);
  auto a = net->named_parameters(), b = copy->named_parameters();
  ASSERT_EQ(a.keys(), b.keys());
  for (size_t i = 0; i < a.size(); i++) {
    EXPECT_TRUE(fw::equal(a[i].value(), b[i].value())) << a[i].key();
    EXPECT_FALSE(a[i].value().is_alias_of(b[i].value())) << a[i].key();
    EXPECT_TRUE(b[i].value().requires_grad());
  }
  // Members of the copy point at the copy's registered modules and tensors.
  EXPECT_TRUE(copy->fc1->weight.is_same(b["fc1.weight"]));
  EXPECT_TRUE(copy->body->at<nn::LinearImpl>(0).weight.is_same(b["body.0.weight"]));
  {
    fw::NoGradGuard ng;
    copy->fc1->weight.fill_(7);
  }
  EXPECT_NE(net->fc1->weight.max().item<float>(), 7.f);
  auto x = fw::randn({2, 3});
  {
    fw::NoGradGuard ng;
    net->fc1->weight.copy_(copy->fc1->weight);
  }
  FW_EXPECT_CLOSE(net->forward(x), copy->forward(x));

  nn::Sequential seq(nn::Linear(2, 2), nn::BatchNorm1d(2));
  seq->eval();
  auto seq_copy = std::dynamic_pointer_cast<nn::SequentialImpl>(seq->clone());
  EXPECT_FALSE(seq_copy->is_training());
  EXPECT_EQ(seq_copy->named_buffers().keys(), seq->named_buffers().keys());
  EXPECT_FALSE(seq_copy->at<nn::LinearImpl>(0).weight.is_alias_of(seq->at<nn::LinearImpl>(0).weight));
  FW_EXPECT_CLOSE(seq_copy->forward(x.narrow(1, 0, 2)), seq->forward(x.narrow(1, 0, 2)));
  EXPECT_THROW(nn::Module().clone(), fw::Error);
}

TEST(NnModule, PrettyPrint) {
  nn::Sequential seq(nn::Conv2d(nn::Conv2dOptions(3, 8, 3).padding(1)), nn::ReLU(),
                     nn::MaxPool2d(nn::MaxPool2dOptions({2, 1})), nn::Flatten(), nn::Linear(8, 2));
  std::ostringstream os;
  os << seq;
  EXPECT_EQ(os.str(),
            "fw::nn::Sequential(\n"
            "  (0): fw::nn::Conv2d(3, 8, kernel_size=[3, 3], stride=[1, 1], padding=[1, 1])\n"
            "  (1): fw::nn::ReLU()\n"
            "  (2): fw::nn::MaxPool2d(kernel_size=[2, 1], stride=[2, 1], padding=[0, 0], dilation=[1, 1], "
            "ceil_mode=false)\n"
            "  (3): fw::nn::Flatten(start_dim=1, end_dim=-1)\n"
            "  (4): fw::nn::Linear(in_features=8, out_features=2, bias=true)\n"
            ")");
  std::ostringstream os2;
  os2 << *nn::BatchNorm2d(4) << " " << *nn::Embedding(nn::EmbeddingOptions(10, 3).padding_idx(0));
  EXPECT_EQ(os2.str(),
            "fw::nn::BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=true, track_running_stats=true) "
            "fw::nn::Embedding(num_embeddings=10, embedding_dim=3, padding_idx=0)");
}

// ---- layers against PyTorch

TEST(NnModule, ConvLayersMatchPyTorch) {
  nn::Conv2d reflect(nn::Conv2dOptions(2, 3, 3).stride(2).padding(1).padding_mode(fw::kReflect));
  load_params(*reflect, "conv_reflect");
  FW_EXPECT_CLOSE(reflect(T("conv_reflect.x")), T("conv_reflect.y"), 1e-5, 1e-5);

  nn::Conv2d same(nn::Conv2dOptions(2, 2, {3, 2}).padding(fw::kSame).dilation(2).padding_mode(fw::kCircular));
  load_params(*same, "conv_same_circ");
  FW_EXPECT_CLOSE(same(T("conv_same_circ.x")), T("conv_same_circ.y"), 1e-5, 1e-5);

  nn::Conv1d c1(nn::Conv1dOptions(4, 6, 3).stride(2).groups(2).bias(false));
  EXPECT_EQ(c1->weight.sizes(), (std::vector<int64_t>{6, 2, 3}));
  load_params(*c1, "conv1d");
  FW_EXPECT_CLOSE(c1(T("conv1d.x")), T("conv1d.y"), 1e-5, 1e-5);

  nn::ConvTranspose2d t2(nn::ConvTranspose2dOptions(2, 3, 3).stride(2).padding(1));
  EXPECT_EQ(t2->weight.sizes(), (std::vector<int64_t>{2, 3, 3, 3}));
  load_params(*t2, "convT2d");
  FW_EXPECT_CLOSE(t2->forward(T("convT2d.x"), std::vector<int64_t>{8, 10}), T("convT2d.y"), 1e-5, 1e-5);
  EXPECT_THROW(t2->forward(T("convT2d.x"), std::vector<int64_t>{12, 10}), fw::Error);

  nn::ConvTranspose1d t1(nn::ConvTranspose1dOptions(3, 2, 4).stride(3).padding(1).output_padding(2));
  load_params(*t1, "convT1d");
  FW_EXPECT_CLOSE(t1(T("convT1d.x")), T("convT1d.y"), 1e-5, 1e-5);

  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(3, 4, 3).groups(2)), fw::Error);
  EXPECT_THROW(nn::Conv2d(nn::Conv2dOptions(2, 4, 3).padding(fw::kSame).stride(2)), fw::Error);
}

TEST(NnModule, OtherLayersMatchPyTorch) {
  nn::Bilinear bil(3, 4, 2);
  load_params(*bil, "bilinear");
  FW_EXPECT_CLOSE(bil(T("bilinear.x1"), T("bilinear.x2")), T("bilinear.y"), 1e-5, 1e-5);

  nn::GroupNorm gn(2, 4);
  load_params(*gn, "groupnorm");
  FW_EXPECT_CLOSE(gn(T("groupnorm.x")), T("groupnorm.y"), 1e-5, 1e-5);
  EXPECT_THROW(nn::GroupNorm(3, 4), fw::Error);

  nn::LayerNorm ln(nn::LayerNormOptions({3, 4}));
  load_params(*ln, "layernorm");
  FW_EXPECT_CLOSE(ln(T("layernorm.x")), T("layernorm.y"), 1e-5, 1e-5);

  nn::Embedding emb(nn::EmbeddingOptions(5, 3).padding_idx(1));
  EXPECT_EQ(emb->weight.select(0, 1).abs().sum().item<float>(), 0.f);
  load_params(*emb, "embedding");
  auto idx = T("embedding.idx").to(fw::kLong);
  auto out = emb(idx);
  FW_EXPECT_CLOSE(out, T("embedding.y"));
  (out * T("embedding.g")).sum().backward();
  FW_EXPECT_CLOSE(emb->weight.grad(), T("embedding.grad"), 1e-5, 1e-6);

  nn::Embedding mn(nn::EmbeddingOptions(4, 3).max_norm(1.0));
  load_params(*mn, "embedding_maxnorm");
  FW_EXPECT_CLOSE(mn(fw::tensor({0, 2, 2}).to(fw::kLong)), T("embedding_maxnorm.y"), 1e-5, 1e-6);
  FW_EXPECT_CLOSE(mn->weight, T("embedding_maxnorm.weight_after"), 1e-5, 1e-6);

  auto pre = nn::Embedding::from_pretrained(T("embedding.weight"));
  EXPECT_FALSE(pre->weight.requires_grad());
  EXPECT_EQ(pre->options.num_embeddings(), 5);

  auto x = T("pool.x");
  FW_EXPECT_CLOSE(nn::MaxPool2d(nn::MaxPool2dOptions({3, 2}).stride({2, 1}).padding(1).ceil_mode(true))(x),
                  T("pool.max"));
  FW_EXPECT_CLOSE(nn::AvgPool2d(nn::AvgPool2dOptions(2).padding(1).count_include_pad(false))(x), T("pool.avg"));
  FW_EXPECT_CLOSE(nn::AdaptiveAvgPool2d(nn::AdaptiveAvgPool2dOptions({4, 3}))(x), T("pool.adaptive"));
  auto x0 = x.select(0, 0);
  FW_EXPECT_CLOSE(nn::MaxPool1d(nn::MaxPool1dOptions(3).stride(2))(x0), T("pool.max1d"));
  FW_EXPECT_CLOSE(nn::AvgPool1d(2)(x0), T("pool.avg1d"));
  FW_EXPECT_CLOSE(nn::AdaptiveAvgPool1d(4)(x0), T("pool.adaptive1d"));

  auto a = T("act.x");
  FW_EXPECT_CLOSE(nn::ReLU()(a), T("act.relu"));
  FW_EXPECT_CLOSE(nn::ReLU6()(a), T("act.relu6"));
  FW_EXPECT_CLOSE(nn::GELU()(a), T("act.gelu"));
  FW_EXPECT_CLOSE(nn::GELU(nn::GELUOptions().approximate("tanh"))(a), T("act.gelu_tanh"));
  FW_EXPECT_CLOSE(nn::SiLU()(a), T("act.silu"));
  FW_EXPECT_CLOSE(nn::Sigmoid()(a), T("act.sigmoid"));
  FW_EXPECT_CLOSE(nn::Tanh()(a), T("act.tanh"));
  FW_EXPECT_CLOSE(nn::ELU(nn::ELUOptions().alpha(0.7))(a), T("act.elu"));
  FW_EXPECT_CLOSE(nn::SELU()(a), T("act.selu"));
  FW_EXPECT_CLOSE(nn::LeakyReLU(nn::LeakyReLUOptions().negative_slope(0.2))(a), T("act.leaky_relu"));
  FW_EXPECT_CLOSE(nn::Hardtanh(nn::HardtanhOptions().min_val(-2).max_val(1.5))(a), T("act.hardtanh"));
  FW_EXPECT_CLOSE(nn::Softplus(nn::SoftplusOptions().beta(2).threshold(3))(a), T("act.softplus"));
  FW_EXPECT_CLOSE(nn::Mish()(a), T("act.mish"));
  FW_EXPECT_CLOSE(nn::Softmax(1)(a), T("act.softmax"));
  FW_EXPECT_CLOSE(nn::LogSoftmax(0)(a), T("act.log_softmax"));
  EXPECT_THROW(nn::Hardtanh(nn::HardtanhOptions().min_val(1).max_val(0)), fw::Error);
  auto b = a.clone();
  nn::ReLU(true)(b);
  FW_EXPECT_CLOSE(b, T("act.relu"));

  auto flat = nn::Flatten()(fw::zeros({2, 3, 4}));
  EXPECT_EQ(flat.sizes(), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(nn::Unflatten(1, std::vector<int64_t>{3, 4})(flat).sizes(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_TRUE(fw::equal(nn::Identity(1, "ignored")(flat), flat));
}

// ---- init

TEST(NnInit, DefaultLayerInitBounds) {
  fw::manual_seed(1);
  nn::Linear lin(1000, 300);
  double bound = 1 / std::sqrt(1000.0);
  EXPECT_LE(lin->weight.abs().max().item<float>(), bound);
  EXPECT_NEAR(lin->weight.std().item<float>(), bound / std::sqrt(3.0), 0.02 * bound);
  EXPECT_LE(lin->bias.abs().max().item<float>(), bound);
  EXPECT_GT(lin->bias.abs().max().item<float>(), 0.9 * bound);

  nn::Conv2d conv(nn::Conv2dOptions(16, 64, 3));
  double cb = 1 / std::sqrt(16.0 * 9);
  EXPECT_LE(conv->weight.abs().max().item<float>(), cb);
  EXPECT_NEAR(conv->weight.std().item<float>(), cb / std::sqrt(3.0), 0.03 * cb);
  EXPECT_LE(conv->bias.abs().max().item<float>(), cb);
  for (auto& p : conv->parameters()) EXPECT_TRUE(p.is_leaf() && p.requires_grad());

  nn::ConvTranspose2d ct(nn::ConvTranspose2dOptions(8, 32, 3));  // fan_in from weight dim 1 (32 * 9)
  EXPECT_LE(ct->bias.abs().max().item<float>(), 1 / std::sqrt(32.0 * 9));

  nn::Embedding emb(2000, 50);
  EXPECT_NEAR(emb->weight.std().item<float>(), 1.0, 0.02);
  nn::LayerNorm ln(nn::LayerNormOptions({5}));
  EXPECT_TRUE(fw::equal(ln->weight, fw::ones({5})));
  EXPECT_TRUE(fw::equal(ln->bias, fw::zeros({5})));
}

TEST(NnInit, StatisticsAndGains) {
  namespace init = nn::init;
  fw::manual_seed(2);
  auto w = fw::empty({500, 400});
  init::kaiming_normal_(w, 0, fw::kFanIn, fw::kReLU);
  EXPECT_NEAR(w.std().item<float>(), std::sqrt(2.0 / 400), 0.01 * std::sqrt(2.0 / 400));
  EXPECT_NEAR(w.mean().item<float>(), 0, 1e-3);
  init::kaiming_normal_(w, 0, fw::kFanOut, fw::kReLU);
  EXPECT_NEAR(w.std().item<float>(), std::sqrt(2.0 / 500), 0.01 * std::sqrt(2.0 / 500));
  init::kaiming_uniform_(w, 0.2, fw::kFanIn, fw::kLeakyReLU);
  double kb = std::sqrt(3.0) * std::sqrt(2.0 / (1 + 0.04)) / std::sqrt(400.0);
  EXPECT_LE(w.abs().max().item<float>(), kb);
  EXPECT_GT(w.abs().max().item<float>(), 0.99 * kb);
  init::xavier_uniform_(w, 2.0);
  double xb = 2.0 * std::sqrt(6.0 / 900);
  EXPECT_LE(w.abs().max().item<float>(), xb);
  EXPECT_GT(w.abs().max().item<float>(), 0.99 * xb);
  init::xavier_normal_(w);
  EXPECT_NEAR(w.std().item<float>(), std::sqrt(2.0 / 900), 0.01 * std::sqrt(2.0 / 900));
  init::uniform_(w, -3, -1);
  EXPECT_GE(w.min().item<float>(), -3.f);
  EXPECT_LE(w.max().item<float>(), -1.f);
  init::normal_(w, 5, 0.5);
  EXPECT_NEAR(w.mean().item<float>(), 5, 0.01);
  init::constant_(w, 0.5);
  EXPECT_EQ(w.sum().item<float>(), 0.5f * 200000);
  init::zeros_(w);
  EXPECT_EQ(w.abs().sum().item<float>(), 0.f);
  init::ones_(w);
  EXPECT_EQ(w.sum().item<float>(), 200000.f);
  auto e = fw::empty({3, 4});
  init::eye_(e);
  EXPECT_TRUE(fw::equal(e, fw::eye(3, 4)));
  EXPECT_THROW(init::eye_(fw::empty({2, 2, 2})), fw::Error);

  auto [fi, fo] = init::_calculate_fan_in_and_fan_out(fw::empty({8, 4, 3, 5}));
  EXPECT_EQ(fi, 60);
  EXPECT_EQ(fo, 120);
  EXPECT_THROW(init::kaiming_uniform_(fw::empty({5})), fw::Error);

  const auto& s = fx().s;
  EXPECT_DOUBLE_EQ(init::calculate_gain(fw::kLinear), s.at("gain.linear"));
  EXPECT_DOUBLE_EQ(init::calculate_gain(fw::kConv2D), s.at("gain.conv2d"));
  EXPECT_DOUBLE_EQ(init::calculate_gain(fw::kSigmoid), s.at("gain.sigmoid"));
  EXPECT_DOUBLE_EQ(init::calculate_gain(fw::kTanh), s.at("gain.tanh"));
  EXPECT_DOUBLE_EQ(init::calculate_gain(fw::kReLU), s.at("gain.relu"));
  EXPECT_DOUBLE_EQ(init::calculate_gain(fw::kLeakyReLU), s.at("gain.leaky_relu"));
  EXPECT_DOUBLE_EQ(init::calculate_gain(fw::kLeakyReLU, 0.2), s.at("gain.leaky_relu_0.2"));

  // Parameters stay leaves: initialisers run without recording.
  auto p = fw::empty({4, 4}).requires_grad_();
  init::kaiming_uniform_(p);
  EXPECT_TRUE(p.is_leaf());
  EXPECT_EQ(p.grad_fn(), nullptr);
}

TEST(NnInit, Orthogonal) {
  namespace init = nn::init;
  for (auto shape : {std::vector<int64_t>{6, 4}, std::vector<int64_t>{3, 7}, std::vector<int64_t>{4, 2, 3}}) {
    auto w = fw::empty(shape);
    init::orthogonal_(w, 2.0);
    auto m = w.reshape({shape[0], -1});
    auto gram = m.size(0) <= m.size(1) ? m.matmul(m.t()) : m.t().matmul(m);
    FW_EXPECT_CLOSE(gram, fw::eye(gram.size(0)) * 4, 1e-5, 1e-5);
  }
  EXPECT_THROW(init::orthogonal_(fw::empty({3})), fw::Error);
}
