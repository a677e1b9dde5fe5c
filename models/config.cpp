// ModelConfig: the paper's stage tables and their validation.
#include "fw/models/config.h"

#include <cmath>

#include "fw/error.h"

namespace fw::models {

std::string kind_name(ModelKind kind) {
  switch (kind) {
    case ModelKind::kClassic: return "classic";
    case ModelKind::kVgg6: return "vgg6";
    case ModelKind::kVgg8: return "vgg8";
    case ModelKind::kVgg10: return "vgg10";
  }
  return "unknown";
}

std::string init_name(InitScheme scheme) { return scheme == InitScheme::kTorch7 ? "torch7" : "kaiming"; }

int64_t context_frames(const ModelConfig& config) {
  if (config.context()) return *config.context();
  return config.kind() == ModelKind::kClassic ? 11 : 16;
}

// Note [Stage tables]
// The classic CNN (Sainath et al. 2013, the paper's baseline): 9x9 conv 512 on 40x11 -> 32x3, a
// 3x1 frequency pool -> 10x3, a 4x3 conv 512 -> 7x1. The VGG stacks pool in frequency only (2x1)
// while the maps are tall, then in both dims (2x2). The authors' talk gives the 10-conv net's maps
// as 40x16 -> 20x16 -> 10x16 -> 4x8 -> 2x4: with every 3x3 conv padded, 10x16 would pool to 5x8,
// so the first conv of stage 3 is left unpadded in frequency (10 -> 8, time padded: 16 -> 16) and
// its 2x2 pool gives 4x8. vgg6 and vgg8 use the same stage layout, truncated after stage 3 / 4.
std::vector<StageSpec> default_stages(ModelKind kind) {
  const PoolSpec freq_pool{{2, 1}, {2, 1}}, both_pool{{2, 2}, {2, 2}};
  if (kind == ModelKind::kClassic)
    return {StageSpec{{ConvSpec{512, {9, 9}, {0, 0}}}, PoolSpec{{3, 1}, {3, 1}}},
            StageSpec{{ConvSpec{512, {4, 3}, {0, 0}}}, std::nullopt}};
  std::vector<StageSpec> s{
      {{conv3x3(64), conv3x3(64)}, freq_pool},
      {{conv3x3(128), conv3x3(128)}, freq_pool},
      {{conv3x3(256, {0, 1}), conv3x3(256)}, both_pool},
  };
  if (kind == ModelKind::kVgg6) return s;
  s.push_back({{conv3x3(512), conv3x3(512)}, both_pool});
  if (kind == ModelKind::kVgg10) {
    s[2].convs.push_back(conv3x3(256));
    s[3].convs.push_back(conv3x3(512));
  }
  return s;
}

std::vector<StageSpec> resolved_stages(const ModelConfig& config) {
  if (!config.stages().empty()) return config.stages();
  FW_CHECK(config.width() > 0, "[models::ModelConfig] width must be positive, got ", config.width());
  auto stages = default_stages(config.kind());
  for (auto& st : stages)
    for (auto& c : st.convs)
      c.out_channels = std::max<int64_t>(1, int64_t(std::lround(double(c.out_channels) * config.width())));
  return stages;
}

namespace {

// Output length of a conv / pool along one dim, or <= 0 if the input is too small.
int64_t out_len(int64_t in, int64_t kernel, int64_t pad, int64_t stride) {
  return in + 2 * pad < kernel ? 0 : (in + 2 * pad - kernel) / stride + 1;
}

}  // namespace

void validate(const ModelConfig& config) {
  const char* fn = "[models::ModelConfig] ";
  FW_CHECK(!config.languages().empty(), fn, "languages is empty: give the number of output classes of each language");
  for (size_t l = 0; l < config.languages().size(); l++)
    FW_CHECK(config.languages()[l] > 0, fn, "languages[", l, "] = ", config.languages()[l], " classes; must be positive");
  FW_CHECK(config.num_fc() >= 0, fn, "num_fc must be non-negative, got ", config.num_fc());
  FW_CHECK(config.fc_dim() > 0 || config.num_fc() == 0, fn, "fc_dim must be positive, got ", config.fc_dim());
  FW_CHECK(config.in_channels() > 0, fn, "in_channels must be positive, got ", config.in_channels());
  int64_t h = config.num_freq(), w = context_frames(config);
  FW_CHECK(h > 0 && w > 0, fn, "input maps must be non-empty, got num_freq ", h, " and context ", w);
  auto stages = resolved_stages(config);
  FW_CHECK(!stages.empty(), fn, "no conv stages");
  for (size_t s = 0; s < stages.size(); s++) {
    FW_CHECK(!stages[s].convs.empty(), fn, "stage ", s + 1, " has no convolutions");
    for (size_t i = 0; i < stages[s].convs.size(); i++) {
      const auto& c = stages[s].convs[i];
      FW_CHECK(c.out_channels > 0 && c.kernel[0] > 0 && c.kernel[1] > 0 && c.padding[0] >= 0 && c.padding[1] >= 0, fn,
               "conv", s + 1, "_", i + 1, " has out_channels ", c.out_channels, ", kernel ", c.kernel[0], "x",
               c.kernel[1], ", padding ", c.padding[0], "x", c.padding[1]);
      int64_t nh = out_len(h, c.kernel[0], c.padding[0], 1), nw = out_len(w, c.kernel[1], c.padding[1], 1);
      FW_CHECK(nh > 0 && nw > 0, fn, "conv", s + 1, "_", i + 1, " (kernel ", c.kernel[0], "x", c.kernel[1],
               ", padding ", c.padding[0], "x", c.padding[1], ") gets a ", h, "x", w,
               " input map and would output nothing; use more context or fewer poolings");
      h = nh, w = nw;
    }
    if (const auto& p = stages[s].pool) {
      FW_CHECK(p->kernel[0] > 0 && p->kernel[1] > 0 && p->stride[0] > 0 && p->stride[1] > 0, fn, "pool", s + 1,
               " has kernel ", p->kernel[0], "x", p->kernel[1], " and stride ", p->stride[0], "x", p->stride[1]);
      int64_t nh = out_len(h, p->kernel[0], 0, p->stride[0]), nw = out_len(w, p->kernel[1], 0, p->stride[1]);
      FW_CHECK(nh > 0 && nw > 0, fn, "pool", s + 1, " (kernel ", p->kernel[0], "x", p->kernel[1], ") gets a ", h, "x",
               w, " input map and would output nothing; use more context or fewer poolings");
      h = nh, w = nw;
    }
  }
}

}  // namespace fw::models
