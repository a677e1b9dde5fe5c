// fw::models::AcousticCnn configurations: output shapes and hand-counted parameter numbers of
// every kind, the vgg10 feature-map sizes, the layer table against a real forward pass, the
// summary text, initialisation schemes and config errors.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "tests/models/helpers.h"

namespace fm = fw::models;
using models_test::conv_params;
using models_test::error_of;
using models_test::fc_params;
using models_test::shape;

namespace {

using Shape = std::vector<int64_t>;

// 3 hidden FC layers of 2048 and the output layer, for a trunk of `d` features.
int64_t heads_params(int64_t d, const std::vector<int64_t>& languages, int64_t num_fc = 3, int64_t fc = 2048) {
  int64_t n = 0;
  for (int64_t classes : languages) {
    int64_t in = d;
    for (int64_t i = 0; i < num_fc; i++) n += fc_params(in, fc), in = fc;
    n += fc_params(in, classes);
  }
  return n;
}

int64_t vgg6_trunk() {
  return conv_params(3, 64) + conv_params(64, 64) + conv_params(64, 128) + conv_params(128, 128) +
         conv_params(128, 256) + conv_params(256, 256);
}
int64_t vgg8_trunk() { return vgg6_trunk() + conv_params(256, 512) + conv_params(512, 512); }
int64_t vgg10_trunk() { return vgg8_trunk() + conv_params(256, 256) + conv_params(512, 512); }
int64_t classic_trunk() { return conv_params(3, 512, 9, 9) + conv_params(512, 512, 4, 3); }

// Runs x through the trunk one module at a time and checks each output's shape against the
// layer table's row for it.
void expect_table_matches_forward(fm::AcousticCnn& m, const fw::Tensor& x) {
  auto rows = m->layer_table(shape(x));
  fw::NoGradGuard ng;
  fw::Tensor h = x;
  size_t i = 0;
  for (const auto& mod : *m->trunk) {
    h = mod.forward(h);
    ASSERT_LT(i, rows.size());
    EXPECT_EQ(shape(h), rows[i].output_shape) << rows[i].name;
    i++;
  }
  for (int64_t l = 0; l < m->num_languages(); l++) {
    fw::Tensor y = m->forward(x, l);
    auto it = std::find_if(rows.begin(), rows.end(),
                           [&](const fm::LayerInfo& r) { return r.name == "lang" + std::to_string(l) + ".out"; });
    ASSERT_NE(it, rows.end());
    EXPECT_EQ(shape(y), it->output_shape);
  }
}

}  // namespace

TEST(ModelsConfig, Vgg10ShapeAndParameterCount) {
  fm::AcousticCnn m(fm::ModelConfig().kind(fm::ModelKind::kVgg10).languages({1000}));
  EXPECT_EQ(m->trunk_features(), 512 * 2 * 4);
  EXPECT_EQ(m->num_parameters(), vgg10_trunk() + heads_params(4096, {1000}));
  EXPECT_EQ(m->num_parameters(), 7635264 + 8390656 + 2 * 4196352 + 2049000);
  // 14 weight layers: 10 convs, 3 hidden FC, 1 output.
  int64_t weights = 0;
  for (const auto& p : m->named_parameters())
    if (p.key().size() > 7 && p.key().substr(p.key().size() - 7) == ".weight") weights++;
  EXPECT_EQ(weights, 14);
  fw::Tensor x = fw::randn({2, 3, 40, 16});
  EXPECT_EQ(shape(m->forward(x)), (Shape{2, 1000}));
  expect_table_matches_forward(m, x);
}

TEST(ModelsConfig, Vgg8ShapeAndParameterCount) {
  fm::AcousticCnn m(fm::ModelConfig().kind(fm::ModelKind::kVgg8).languages({300}));
  EXPECT_EQ(m->trunk_features(), 4096);
  EXPECT_EQ(m->num_parameters(), vgg8_trunk() + heads_params(4096, {300}));
  fw::Tensor x = fw::randn({2, 3, 40, 16});
  EXPECT_EQ(shape(m->forward(x)), (Shape{2, 300}));
  expect_table_matches_forward(m, x);
}

TEST(ModelsConfig, Vgg6ShapeAndParameterCount) {
  fm::AcousticCnn m(fm::ModelConfig().kind(fm::ModelKind::kVgg6).languages({300}));
  EXPECT_EQ(m->trunk_features(), 256 * 4 * 8);
  EXPECT_EQ(m->num_parameters(), vgg6_trunk() + heads_params(8192, {300}));
  fw::Tensor x = fw::randn({2, 3, 40, 16});
  EXPECT_EQ(shape(m->forward(x)), (Shape{2, 300}));
  expect_table_matches_forward(m, x);
}

TEST(ModelsConfig, ClassicShapeAndParameterCount) {
  // 40x11 -> conv 9x9 -> 32x3 -> pool 3x1 -> 10x3 -> conv 4x3 -> 7x1.
  fm::AcousticCnn m(fm::ModelConfig().kind(fm::ModelKind::kClassic).languages({500}));
  EXPECT_EQ(fm::context_frames(m->options), 11);
  EXPECT_EQ(m->trunk_features(), 512 * 7 * 1);
  EXPECT_EQ(m->num_parameters(), classic_trunk() + heads_params(3584, {500}));
  fw::Tensor x = fw::randn({2, 3, 40, 11});
  EXPECT_EQ(shape(m->forward(x)), (Shape{2, 500}));
  auto maps = m->feature_maps(x);
  ASSERT_EQ(maps.size(), 2u);
  EXPECT_EQ(shape(maps[0]), (Shape{2, 512, 10, 3}));
  EXPECT_EQ(shape(maps[1]), (Shape{2, 512, 7, 1}));
  expect_table_matches_forward(m, x);
}

TEST(ModelsConfig, Vgg10FeatureMapsPerPoolingStage) {
  // The authors' sizes: 40x16 -> 20x16 -> 10x16 -> 4x8 -> 2x4.
  fm::AcousticCnn m(fm::ModelConfig().kind(fm::ModelKind::kVgg10).languages({10}));
  fw::NoGradGuard ng;
  auto maps = m->feature_maps(fw::randn({2, 3, 40, 16}));
  ASSERT_EQ(maps.size(), 4u);
  EXPECT_EQ(shape(maps[0]), (Shape{2, 64, 20, 16}));
  EXPECT_EQ(shape(maps[1]), (Shape{2, 128, 10, 16}));
  EXPECT_EQ(shape(maps[2]), (Shape{2, 256, 4, 8}));
  EXPECT_EQ(shape(maps[3]), (Shape{2, 512, 2, 4}));
  // The same sizes in the layer table's pool rows.
  std::vector<Shape> pools;
  for (const auto& r : m->layer_table())
    if (r.name.rfind("pool", 0) == 0) pools.push_back(r.output_shape);
  EXPECT_EQ(pools, (std::vector<Shape>{{1, 64, 20, 16}, {1, 128, 10, 16}, {1, 256, 4, 8}, {1, 512, 2, 4}}));
}

TEST(ModelsConfig, MultilingualParameterCountAndMultiScaleInput) {
  // Multi-scale input: 3 windows x 3 feature channels = 9 channels of 11 frames:
  // 40x11 -> 20x11 -> 10x11 -> 4x5 -> 2x2.
  std::vector<int64_t> langs{1000, 1200, 900, 1100, 1000, 950};
  fm::AcousticCnn m(fm::ModelConfig().kind(fm::ModelKind::kVgg10).languages(langs).in_channels(9).context(11));
  int64_t trunk = vgg10_trunk() - conv_params(3, 64) + conv_params(9, 64);
  EXPECT_EQ(m->trunk_features(), 512 * 2 * 2);
  EXPECT_EQ(m->num_parameters(), trunk + heads_params(2048, langs));
  fw::NoGradGuard ng;
  auto maps = m->feature_maps(fw::randn({1, 9, 40, 11}));
  ASSERT_EQ(maps.size(), 4u);
  EXPECT_EQ(shape(maps[3]), (Shape{1, 512, 2, 2}));
  EXPECT_EQ(shape(m->forward(fw::randn({3, 9, 40, 11}), 4)), (Shape{3, 1000}));
}

TEST(ModelsConfig, WidthMultiplierAndExplicitStages) {
  fm::AcousticCnn narrow(fm::ModelConfig().kind(fm::ModelKind::kVgg10).languages({20}).width(0.25).num_fc(1).fc_dim(64));
  int64_t trunk = conv_params(3, 16) + conv_params(16, 16) + conv_params(16, 32) + conv_params(32, 32) +
                  conv_params(32, 64) + 2 * conv_params(64, 64) + conv_params(64, 128) + 2 * conv_params(128, 128);
  EXPECT_EQ(narrow->num_parameters(), trunk + fc_params(128 * 8, 64) + fc_params(64, 20));

  fm::AcousticCnn tiny(fm::ModelConfig().stages(models_test::tiny_stages(4, 8, 6)).languages({5}).num_fc(2).fc_dim(16));
  int64_t expect = conv_params(3, 4) + conv_params(4, 4) + conv_params(4, 8) + conv_params(8, 8) + conv_params(8, 6) +
                   conv_params(6, 6) + fc_params(6 * 4 * 8, 16) + fc_params(16, 16) + fc_params(16, 5);
  EXPECT_EQ(tiny->num_parameters(), expect);
  EXPECT_EQ(shape(tiny->forward(fw::randn({3, 3, 40, 16}))), (Shape{3, 5}));
}

TEST(ModelsConfig, BatchNormDropsConvBiasAndAddsScaleShift) {
  fm::AcousticCnn m(fm::ModelConfig().kind(fm::ModelKind::kVgg8).languages({100}).batch_norm(true));
  int64_t convs = 0, bn = 0;
  for (int64_t c : {64, 64, 128, 128, 256, 256, 512, 512}) bn += 2 * c;
  convs = vgg8_trunk() - (64 + 64 + 128 + 128 + 256 + 256 + 512 + 512);
  EXPECT_EQ(m->num_parameters(), convs + bn + heads_params(4096, {100}));
  EXPECT_EQ(m->trunk->named_children()[1].key(), "bn1_1");
  fw::Tensor x = fw::randn({4, 3, 40, 16});
  EXPECT_EQ(shape(m->forward(x)), (Shape{4, 100}));
  expect_table_matches_forward(m, x);
}

TEST(ModelsConfig, PrintSummaryRows) {
  fm::AcousticCnn m(fm::ModelConfig().kind(fm::ModelKind::kVgg10).languages({1000, 800}));
  std::ostringstream os;
  m->print_summary(os);
  const std::string s = os.str();
  auto line_of = [&](const std::string& name) {
    std::istringstream in(s);
    std::string line;
    while (std::getline(in, line))
      if (line.rfind(name + " ", 0) == 0) return line;
    return std::string();
  };
  std::string conv31 = line_of("conv3_1");
  EXPECT_NE(conv31.find("Conv2d 128->256 k3x3 p0x1"), std::string::npos) << conv31;
  EXPECT_NE(conv31.find("(1, 256, 8, 16)"), std::string::npos) << conv31;
  EXPECT_NE(conv31.find(std::to_string(conv_params(128, 256))), std::string::npos) << conv31;
  std::string pool4 = line_of("pool4");
  EXPECT_NE(pool4.find("MaxPool2d k2x2 s2x2"), std::string::npos) << pool4;
  EXPECT_NE(pool4.find("(1, 512, 2, 4)"), std::string::npos) << pool4;
  EXPECT_NE(line_of("flatten").find("(1, 4096)"), std::string::npos);
  std::string fc1 = line_of("lang1.fc1");
  EXPECT_NE(fc1.find("Linear 4096->2048"), std::string::npos) << fc1;
  EXPECT_NE(fc1.find(std::to_string(fc_params(4096, 2048))), std::string::npos) << fc1;
  EXPECT_NE(line_of("lang1.out").find("(1, 800)"), std::string::npos);
  EXPECT_NE(s.find("trunk parameters: " + std::to_string(vgg10_trunk())), std::string::npos) << s;
  EXPECT_NE(s.find("total parameters: " + std::to_string(m->num_parameters())), std::string::npos) << s;
  EXPECT_EQ(m->num_parameters(), vgg10_trunk() + heads_params(4096, {1000, 800}));
  // A batch size in the input shape shows in every row.
  std::ostringstream os8;
  m->print_summary(os8, {8, 3, 40, 16});
  EXPECT_NE(os8.str().find("(8, 64, 20, 16)"), std::string::npos);
}

TEST(ModelsConfig, InitSchemes) {
  auto cfg = fm::ModelConfig().kind(fm::ModelKind::kVgg6).languages({50}).width(0.5).num_fc(1).fc_dim(256);
  fw::manual_seed(3);
  fm::AcousticCnn torch7(fm::ModelConfig(cfg).init(fm::InitScheme::kTorch7));
  fm::AcousticCnn kaiming(fm::ModelConfig(cfg).init(fm::InitScheme::kKaiming));
  auto bound_of = [](const fw::Tensor& w) {
    auto [fan_in, fan_out] = fw::nn::init::_calculate_fan_in_and_fan_out(w);
    return 1.0 / std::sqrt(double(fan_in));
  };
  auto t7 = torch7->named_parameters();
  for (const auto& item : t7) {
    const std::string& name = item.key();
    const fw::Tensor& w = item.value();
    if (name.find(".weight") == std::string::npos) continue;
    fw::Tensor b = t7[name.substr(0, name.size() - 6) + "bias"];
    double bound = bound_of(w);
    EXPECT_LE(w.abs().max().item<double>(), bound) << name;
    EXPECT_GT(w.abs().max().item<double>(), 0.9 * bound) << name;
    EXPECT_LE(b.abs().max().item<double>(), bound) << name;
    EXPECT_GT(b.abs().max().item<double>(), 0.0) << name;
  }
  for (const auto& item : kaiming->named_parameters()) {
    const std::string& name = item.key();
    const fw::Tensor& w = item.value();
    if (name.find(".bias") != std::string::npos) {
      EXPECT_EQ(w.abs().max().item<double>(), 0.0) << name;
      continue;
    }
    double gain = name.find(".out.") != std::string::npos ? 1.0 : std::sqrt(2.0);
    double bound = gain * std::sqrt(3.0) * bound_of(w);
    EXPECT_LE(w.abs().max().item<double>(), bound) << name;
    EXPECT_GT(w.abs().max().item<double>(), 0.9 * bound) << name;
  }
}

TEST(ModelsConfig, CloneCopiesWeightsIndependently) {
  fm::AcousticCnn m(fm::ModelConfig().stages(models_test::tiny_stages()).languages({3, 4}).num_fc(1).fc_dim(8));
  auto copy = std::dynamic_pointer_cast<fm::AcousticCnnImpl>(m->clone());
  ASSERT_TRUE(copy);
  EXPECT_EQ(copy->num_parameters(), m->num_parameters());
  fw::Tensor x = fw::randn({2, 3, 40, 16});
  EXPECT_TRUE(fw::equal(copy->forward(x, 1), m->forward(x, 1)));
  EXPECT_FALSE(copy->parameters()[0].is_alias_of(m->parameters()[0]));
}

TEST(ModelsConfig, Errors) {
  using fm::ModelConfig;
  EXPECT_NE(error_of([] { fm::AcousticCnn m(ModelConfig{}); }).find("[models::ModelConfig] languages is empty"),
            std::string::npos);
  EXPECT_NE(error_of([] { fm::AcousticCnn m(ModelConfig().languages({10, 0})); }).find("languages[1] = 0"),
            std::string::npos);
  EXPECT_NE(error_of([] { fm::AcousticCnn m(ModelConfig().languages({10}).num_fc(-1)); }).find("num_fc"),
            std::string::npos);
  // Too little context for four poolings.
  std::string e = error_of([] { fm::AcousticCnn m(ModelConfig().languages({10}).context(2)); });
  EXPECT_NE(e.find("pool4 (kernel 2x2) gets a 4x1 input map"), std::string::npos) << e;
  e = error_of([] { fm::AcousticCnn m(ModelConfig().kind(fm::ModelKind::kClassic).languages({10}).context(8)); });
  EXPECT_NE(e.find("conv1_1 (kernel 9x9, padding 0x0) gets a 40x8 input map"), std::string::npos) << e;

  fm::AcousticCnn m(ModelConfig().stages(models_test::tiny_stages()).languages({3, 4}).num_fc(1).fc_dim(8));
  e = error_of([&] { m->forward(fw::randn({2, 3, 40, 11}), 0); });
  EXPECT_NE(e.find("[models::AcousticCnn::forward] expected input (N, 3, 40, 16)"), std::string::npos) << e;
  EXPECT_NE(e.find("[2, 3, 40, 11]"), std::string::npos) << e;
  e = error_of([&] { m->forward(fw::randn({2, 3, 40, 16}), 2); });
  EXPECT_NE(e.find("language 2 is out of range: the model has 2 language(s)"), std::string::npos) << e;
  e = error_of([&] { m->forward(fw::randn({2, 3, 40, 16})); });
  EXPECT_NE(e.find("the model has 2 languages"), std::string::npos) << e;
  e = error_of([&] { m->layer_table({1, 9, 40, 16}); });
  EXPECT_NE(e.find("[models::AcousticCnn::layer_table] expected input shape (N, 3, 40, 16)"), std::string::npos) << e;
}
