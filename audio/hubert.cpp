// torchaudio.models.HuBERTPretrainModel (see fw/audio/hubert.h).
#include "fw/audio/hubert.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "fw/autograd_function.h"
#include "fw/fw.h"

namespace fw::audio::models {

namespace detail {

namespace {

constexpr const char* kOp = "[HuBERTPretrainModel]";

// torchaudio's GradMultiply: the identity forward, the gradient scaled by `scale` backward.
struct GradMultiply : autograd::Function<GradMultiply> {
  static Tensor forward(autograd::AutogradContext* ctx, Tensor x, double scale) {
    ctx->saved_data["scale"] = scale;
    return x.clone();
  }
  static autograd::variable_list backward(autograd::AutogradContext* ctx, autograd::variable_list g) {
    return {g[0] * ctx->saved_data["scale"].toDouble(), Tensor()};
  }
};

void check_mask_type(const std::string& t, const char* what) {
  FW_CHECK(t == "static" || t == "uniform" || t == "normal" || t == "poisson", kOp, " unknown ", what, " '", t,
           "' (expected static, uniform, normal or poisson)");
}

// Span lengths of one row (torchaudio's per-type draws).
std::vector<int64_t> span_lengths(int64_t num_mask, int64_t mask_length, const std::string& type, double other,
                                  const std::optional<Generator>& gen) {
  std::vector<int64_t> out(size_t(num_mask), mask_length);
  if (num_mask == 0 || type == "static") return out;
  Tensor l;
  if (type == "uniform") {
    FW_CHECK(other == std::floor(other) && other <= double(mask_length) * 2, kOp,
             " uniform span lengths need an integral mask_other (the lowest length) up to 2 mask_length, got ",
             other);
    l = fw::randint(int64_t(other), mask_length * 2 + 1, {num_mask}, gen);
  } else if (type == "normal") {
    l = fw::clamp_min(fw::round(fw::normal(double(mask_length), other, {num_mask}, gen, TensorOptions(kDouble))), 1);
  } else {
    l = fw::round(fw::poisson(fw::full({num_mask}, double(mask_length), TensorOptions(kDouble)), gen));
  }
  l = l.to(kLong).contiguous();
  const int64_t* p = l.data_ptr<int64_t>();
  for (int64_t j = 0; j < num_mask; j++) out[size_t(j)] = p[j];
  return out;
}

}  // namespace

Tensor compute_mask_indices(int64_t batch, int64_t frames, const Tensor& padding_mask, double mask_prob,
                            int64_t mask_length, const std::string& mask_type, double mask_other, int64_t min_masks,
                            bool no_overlap, int64_t min_space, std::optional<Generator> gen) {
  FW_CHECK(batch >= 0 && frames >= 0, kOp, " mask shape must be non-negative, got (", batch, ", ", frames, ")");
  FW_CHECK(mask_length >= 1, kOp, " mask length must be at least 1, got ", mask_length);
  FW_CHECK(mask_prob >= 0 && mask_prob <= 1, kOp, " mask probability must be in [0, 1], got ", mask_prob);
  FW_CHECK(std::isfinite(mask_other), kOp, " mask_other must be finite, got ", mask_other);
  FW_CHECK(min_masks >= 0 && min_space >= 0, kOp, " min_masks (", min_masks, ") and min_space (", min_space,
           ") must be non-negative");
  check_mask_type(mask_type, "mask selection");
  Tensor pad_counts;
  if (padding_mask.defined()) {
    FW_CHECK(padding_mask.dim() == 2 && padding_mask.size(0) == batch && padding_mask.size(1) == frames, kOp,
             " padding mask of shape ", padding_mask.sizes(), " does not match the (", batch, ", ", frames,
             ") mask");
    pad_counts = padding_mask.to(kLong).sum({1}).contiguous();
  }
  auto uniform01 = [&] { return fw::rand({1}, gen, TensorOptions(kDouble)).item<double>(); };
  const int64_t all_num_mask =
      std::max(min_masks, int64_t(mask_prob * double(frames) / double(mask_length) + uniform01()));

  std::vector<std::vector<int64_t>> rows(static_cast<size_t>(batch));
  for (int64_t i = 0; i < batch; i++) {
    int64_t sz = frames, num_mask = all_num_mask;
    if (pad_counts.defined()) {
      sz = frames - pad_counts.data_ptr<int64_t>()[i];
      num_mask = std::max(min_masks, int64_t(mask_prob * double(sz) / double(mask_length) + uniform01()));
    }
    std::vector<int64_t> lengths = span_lengths(num_mask, mask_length, mask_type, mask_other, gen);
    if (lengths.empty()) continue;  // no spans (torchaudio fails here; nothing to mask)
    int64_t total = 0;
    for (int64_t l : lengths) total += l;
    if (total == 0) lengths[0] = std::min(mask_length, sz - 1);
    std::vector<int64_t> idc;
    if (no_overlap) {
      // Spans longest first, each in a free part chosen with probability proportional to its
      // length (parts too short for the span and its spacing excluded).
      std::vector<std::pair<int64_t, int64_t>> parts{{0, sz}};
      const int64_t keep = *std::min_element(lengths.begin(), lengths.end());
      std::vector<int64_t> order(lengths);
      std::sort(order.rbegin(), order.rend());
      for (int64_t length : order) {
        std::vector<double> lens;
        double l_sum = 0;
        for (auto [s, e] : parts) {
          // A part fits when it is longer than the span and its spacing (torchaudio's filter; a
          // part exactly the span's length would leave randint no room there either).
          const double v = (e - s < length + min_space || e - s <= length) ? 0.0 : double(e - s);
          lens.push_back(v);
          l_sum += v;
        }
        if (l_sum == 0) break;
        Tensor probs = fw::tensor(lens, TensorOptions(kDouble)) / l_sum;
        const int64_t c = fw::multinomial(probs, 1, false, gen).item<int64_t>();
        const auto [s, e] = parts[size_t(c)];
        parts.erase(parts.begin() + c);
        const int64_t start = fw::randint(s, e - length, {1}, gen).item<int64_t>();
        for (int64_t k = 0; k < length; k++) idc.push_back(start + k);
        if (start - s - min_space >= keep) parts.push_back({s, start - min_space + 1});
        if (e - start - keep - min_space > keep) parts.push_back({start + length + min_space, e});
      }
    } else {
      int64_t min_len = *std::min_element(lengths.begin(), lengths.end());
      if (sz - min_len <= num_mask) min_len = sz - num_mask - 1;
      Tensor starts = fw::randperm(sz - min_len, gen).contiguous();
      const int64_t* st = starts.data_ptr<int64_t>();
      const int64_t n = std::min<int64_t>(num_mask, starts.numel());
      for (int64_t j = 0; j < n; j++)
        for (int64_t k = 0; k < lengths[size_t(j)]; k++) idc.push_back(st[j] + k);
    }
    std::vector<int64_t>& row = rows[size_t(i)];
    for (int64_t v : idc)
      if (v < sz) row.push_back(v);
    std::sort(row.begin(), row.end());
    row.erase(std::unique(row.begin(), row.end()), row.end());
  }

  // Every row keeps as many masked frames as the row with the fewest (a random subset).
  size_t fewest = rows.empty() ? 0 : rows[0].size();
  for (const auto& r : rows) fewest = std::min(fewest, r.size());
  Tensor mask = fw::zeros({batch, frames}, TensorOptions(kBool));
  bool* m = mask.data_ptr<bool>();
  for (int64_t i = 0; i < batch; i++) {
    std::vector<int64_t>& row = rows[size_t(i)];
    if (row.size() > fewest) {
      Tensor pick = fw::randperm(int64_t(row.size()), gen).contiguous();
      std::vector<int64_t> kept;
      for (size_t j = 0; j < fewest; j++) kept.push_back(row[size_t(pick.data_ptr<int64_t>()[j])]);
      row.swap(kept);
    }
    for (int64_t v : row)
      if (v >= 0 && v < frames) m[i * frames + v] = true;
  }
  return mask;
}

// ---- MaskGenerator

HuBERTMaskGeneratorImpl::HuBERTMaskGeneratorImpl(int64_t encoder_embed_dim, const HuBERTPretrainOptions& options)
    : encoder_embed_dim(encoder_embed_dim), options(options) {
  check_mask_type(options.mask_selection(), "mask selection");
  check_mask_type(options.mask_channel_selection(), "channel mask selection");
  FW_CHECK(options.mask_length() >= 1 && options.mask_channel_length() >= 1, kOp,
           " mask lengths must be at least 1, got ", options.mask_length(), " and ", options.mask_channel_length());
  reset();
}

void HuBERTMaskGeneratorImpl::reset() {
  mask_embedding = register_parameter("mask_embedding", fw::rand({encoder_embed_dim}));
}

Tensor HuBERTMaskGeneratorImpl::apply(const Tensor& input, const Tensor& mask) {
  const int64_t B = input.size(0), T = input.size(1), C = input.size(2);
  Tensor x = input;
  if (mask.defined()) {
    FW_CHECK(mask.dim() == 2 && mask.size(0) == B && mask.size(1) == T && mask.scalar_type() == kBool, kOp,
             " the mask must be (batch, frames) = (", B, ", ", T, ") bool, got ", mask.sizes(), " ", mask.dtype());
    x = fw::where(mask.unsqueeze(-1), mask_embedding.to(x.dtype()), x);
  }
  if (options.mask_channel_prob() > 0) {
    Tensor ch = compute_mask_indices(B, C, Tensor(), options.mask_channel_prob(), options.mask_channel_length(),
                                     options.mask_channel_selection(), options.mask_channel_other(), 0,
                                     options.no_mask_channel_overlap(), options.mask_channel_min_space());
    x = x.masked_fill(ch.unsqueeze(1), 0.0);
  }
  return x;
}

std::tuple<Tensor, Tensor> HuBERTMaskGeneratorImpl::forward(const Tensor& x, const Tensor& padding_mask) {
  FW_CHECK(x.dim() == 3 && x.size(2) == encoder_embed_dim, kOp, " mask generator expected (batch, frames, ",
           encoder_embed_dim, "), got ", x.sizes());
  Tensor mask;
  if (options.mask_prob() > 0)
    mask = compute_mask_indices(x.size(0), x.size(1), padding_mask, options.mask_prob(), options.mask_length(),
                                options.mask_selection(), options.mask_other(), 2, options.no_mask_overlap(),
                                options.mask_min_space());
  return {apply(x, mask), mask};
}

// ---- LogitGenerator

HuBERTLogitGeneratorImpl::HuBERTLogitGeneratorImpl(int64_t encoder_embed_dim, int64_t num_classes, int64_t final_dim,
                                                   bool skip_masked, bool skip_nomask)
    : encoder_embed_dim(encoder_embed_dim),
      num_classes(num_classes),
      final_dim(final_dim),
      skip_masked(skip_masked),
      skip_nomask(skip_nomask) {
  FW_CHECK(num_classes > 0 && final_dim > 0, kOp, " num_classes (", num_classes, ") and final_dim (", final_dim,
           ") must be positive");
  reset();
}

void HuBERTLogitGeneratorImpl::reset() {
  label_embeddings = register_parameter("label_embeddings", fw::rand({num_classes, final_dim}));
  final_proj = register_module("final_proj", nn::Linear(encoder_embed_dim, final_dim));
}

namespace {

// Each class's embedding row as an id shared by equal rows (value equality, as torch's ==:
// -0 equals 0, a row with a NaN equals nothing, itself included: id -1).
Tensor row_ids(const Tensor& emb) {
  Tensor e = emb.detach().to(kDouble).contiguous();
  const int64_t C = e.size(0), F = e.size(1);
  const double* p = e.data_ptr<double>();
  std::map<std::vector<double>, int64_t> seen;
  std::vector<int64_t> ids(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; c++) {
    std::vector<double> row(p + c * F, p + (c + 1) * F);
    bool nan = false;
    for (double& v : row) {
      nan = nan || std::isnan(v);
      if (v == 0) v = 0;  // -0 -> +0
    }
    ids[size_t(c)] = nan ? -1 : seen.emplace(std::move(row), c).first->second;
  }
  return fw::tensor(ids, TensorOptions(kLong));
}

// (frames, num_classes + 1) logits of projected frames against their labels' and every class's
// embedding: cosine similarity as ATen computes it (w12 / sqrt(max(w1 w2, eps^2))), over 0.1,
// with -inf for the classes whose embedding equals the label's. One (frames x classes) product
// and an id comparison instead of torchaudio's (classes + 1, frames, dim) broadcasts.
Tensor compute_logits(const Tensor& proj_in, const Tensor& target, const Tensor& emb_in) {
  const double eps = 1e-8, temperature = 0.1;
  // In float32 and back, as torchaudio's .float() ... .type_as(proj_x).
  Tensor proj = proj_in.to(kFloat), emb = emb_in.to(kFloat);
  Tensor t = target.to(kLong);
  Tensor pos = emb.index_select(0, t);                                      // (N, F)
  Tensor w1 = (proj * proj).sum({1}, true);                                 // (N, 1)
  Tensor w2 = (emb * emb).sum({1}).unsqueeze(0);                            // (1, C)
  Tensor neg = fw::matmul(proj, emb.t()) / fw::sqrt(fw::clamp_min(w1 * w2, eps * eps)) / temperature;
  Tensor wp = (pos * pos).sum({1}, true);
  Tensor posl = (proj * pos).sum({1}, true) / fw::sqrt(fw::clamp_min(w1 * wp, eps * eps)) / temperature;
  Tensor ids = row_ids(emb), label_ids = ids.index_select(0, t).unsqueeze(1);
  Tensor same = fw::logical_and(fw::eq(label_ids, ids.unsqueeze(0)), label_ids >= 0);  // (N, C)
  neg = neg.masked_fill(same, -std::numeric_limits<double>::infinity());
  return fw::cat({posl, neg}, 1).to(proj_in.dtype());
}

}  // namespace

std::tuple<Tensor, Tensor> HuBERTLogitGeneratorImpl::forward(const Tensor& x, const Tensor& labels,
                                                             const Tensor& mask_m, const Tensor& mask_u) {
  FW_CHECK(x.dim() == 3 && x.size(2) == encoder_embed_dim, kOp, " logit generator expected (batch, frames, ",
           encoder_embed_dim, "), got ", x.sizes());
  FW_CHECK(labels.dim() == 2 && labels.size(0) == x.size(0) && labels.size(1) == x.size(1) &&
               !labels.is_floating_point() && !labels.is_complex(),
           kOp, " labels must be (batch, frames) = (", x.size(0), ", ", x.size(1), ") integers, got ",
           labels.sizes(), " ", labels.dtype());
  for (const Tensor* m : {&mask_m, &mask_u}) {
    FW_CHECK(m->defined(), kOp, " logit generator: masks must be defined");
    FW_CHECK(m->scalar_type() == kBool && m->sizes() == labels.sizes(), kOp, " masks must be (batch, frames) = ",
             labels.sizes(), " bool, got ", m->sizes(), " ", m->dtype());
  }
  Tensor proj = final_proj->forward(x);
  // Only the selected frames' labels are read (padded frames may hold any value, e.g. -100).
  auto logits = [&](const Tensor& mask) {
    Tensor lab = labels.index({mask});
    if (lab.numel()) {
      const int64_t lo = lab.min().item<int64_t>(), hi = lab.max().item<int64_t>();
      FW_CHECK(lo >= 0 && hi < num_classes, kOp, " labels must be in [0, ", num_classes, "), got values in [", lo,
               ", ", hi, "]");
    }
    return compute_logits(proj.index({mask}), lab, label_embeddings);
  };
  Tensor logit_m, logit_u;
  if (!skip_masked) logit_m = logits(mask_m);
  if (!skip_nomask) logit_u = logits(mask_u);
  return {logit_m, logit_u};
}

}  // namespace detail

// ---- HuBERTPretrainModel

HuBERTPretrainModelImpl::HuBERTPretrainModelImpl(HuBERTPretrainOptions options) : options(std::move(options)) {
  const auto& g = this->options.feature_grad_mult();
  FW_CHECK(!g || (*g > 0 && *g < 1), detail::kOp, " feature_grad_mult must be unset or in (0, 1), got ",
           g ? *g : 0.0);
  FW_CHECK(!this->options.wav2vec2().aux_num_out(), detail::kOp, " the wav2vec2 part takes no aux_num_out");
  reset();
}

void HuBERTPretrainModelImpl::reset() {
  const int64_t d = options.wav2vec2().encoder_embed_dim();
  wav2vec2 = register_module("wav2vec2", Wav2Vec2Model(options.wav2vec2()));
  mask_generator = register_module("mask_generator", detail::HuBERTMaskGenerator(d, options));
  logit_generator = register_module(
      "logit_generator", detail::HuBERTLogitGenerator(d, options.num_classes(), options.final_dim(),
                                                      options.skip_masked(), options.skip_nomask()));
  // torchaudio's _init_hubert_pretrain_model (applied by hubert_pretrain_model): He-normal
  // feature-extractor convs, a zero positional-conv bias, and every Linear of the transformer
  // N(0, 0.02) with zero bias (fairseq's init_bert_params, which also overrides the attention's
  // xavier init). The feature projection and final_proj keep their defaults.
  NoGradGuard no_grad;
  for (const auto& block : *wav2vec2->feature_extractor->conv_layers)
    nn::init::kaiming_normal_(block->as<detail::Wav2Vec2ConvBlockImpl>()->conv->weight);
  auto& transformer = wav2vec2->encoder->transformer;
  transformer->pos_conv_embed->conv->bias.zero_();
  for (const auto& m : transformer->modules(/*include_self=*/false))
    if (auto* lin = dynamic_cast<nn::LinearImpl*>(m.get())) {
      nn::init::normal_(lin->weight, 0.0, 0.02);
      if (lin->bias.defined()) lin->bias.zero_();
    }
}

std::tuple<Tensor, Tensor, Tensor> HuBERTPretrainModelImpl::run(const Tensor& waveforms, const Tensor& labels,
                                                                const Tensor& lengths, const Tensor* given) {
  if (lengths.defined())
    FW_CHECK(lengths.dim() == 1 && waveforms.dim() >= 1 && lengths.size(0) == waveforms.size(0) &&
                 !lengths.is_floating_point() && !lengths.is_complex(),
             detail::kOp, " lengths must be a (batch,) integer tensor with batch = ",
             waveforms.dim() ? waveforms.size(0) : 0, ", got ", lengths.dtype(), " ", lengths.sizes());
  auto [x, out_lengths] = wav2vec2->feature_extractor->forward(waveforms, lengths);
  const auto& g = options.feature_grad_mult();
  if (g && *g < 1.0 && GradMode::is_enabled() && x.requires_grad()) x = detail::GradMultiply::apply(x, *g);
  Tensor feature_pen = x.to(kFloat).pow(2).mean();
  Tensor padding_mask;
  if (out_lengths.defined()) {
    const int64_t B = x.size(0), T = x.size(1);
    padding_mask = fw::arange(T, TensorOptions(kLong).device(out_lengths.device())).expand({B, T}) >=
                   out_lengths.unsqueeze(1);
  }
  auto [h, attention_mask] = wav2vec2->encoder->preprocess(x, out_lengths);
  Tensor mask;
  if (given) {
    mask = *given;
    h = mask_generator->apply(h, mask);
  } else {
    std::tie(h, mask) = mask_generator->forward(h, padding_mask);
  }
  FW_CHECK(mask.defined(), detail::kOp, " needs a time mask: mask_prob is 0 (torchaudio fails here too)");
  h = wav2vec2->encoder->transformer->forward(h, attention_mask);
  FW_CHECK(labels.dim() == 2 && labels.size(0) == h.size(0) && labels.size(1) == h.size(1), detail::kOp,
           " the labels must have one entry per output frame: got labels of shape ", labels.sizes(), " for ",
           h.size(1), " frames");
  Tensor mask_m = mask, mask_u;
  if (padding_mask.defined()) {
    mask_m = fw::logical_and(fw::logical_not(padding_mask), mask);
    mask_u = fw::logical_and(fw::logical_not(padding_mask), fw::logical_not(mask_m));
  } else {
    mask_u = fw::logical_not(mask_m);
  }
  auto [logit_m, logit_u] = logit_generator->forward(h, labels, mask_m, mask_u);
  return {logit_m, logit_u, feature_pen};
}

std::tuple<Tensor, Tensor, Tensor> HuBERTPretrainModelImpl::forward(const Tensor& waveforms, const Tensor& labels,
                                                                    const Tensor& lengths) {
  return run(waveforms, labels, lengths, nullptr);
}

std::tuple<Tensor, Tensor, Tensor> HuBERTPretrainModelImpl::forward_with_mask(const Tensor& waveforms,
                                                                              const Tensor& labels,
                                                                              const Tensor& lengths,
                                                                              const Tensor& mask) {
  FW_CHECK(mask.defined(), detail::kOp, " forward_with_mask needs a defined mask");
  return run(waveforms, labels, lengths, &mask);
}

// ---- factories

namespace {

Wav2Vec2Options hubert_encoder(const std::string& mode, int64_t dim, int64_t layers, int64_t heads, int64_t ff,
                               bool norm_first, double proj_dropout, double attn_dropout, double ff_dropout,
                               double dropout, double layer_drop) {
  return Wav2Vec2Options()
      .extractor_mode(mode)
      .extractor_conv_bias(false)
      .encoder_embed_dim(dim)
      .encoder_projection_dropout(proj_dropout)
      .encoder_pos_conv_kernel(128)
      .encoder_pos_conv_groups(16)
      .encoder_num_layers(layers)
      .encoder_num_heads(heads)
      .encoder_attention_dropout(attn_dropout)
      .encoder_ff_interm_features(ff)
      .encoder_ff_interm_dropout(ff_dropout)
      .encoder_dropout(dropout)
      .encoder_layer_norm_first(norm_first)
      .encoder_layer_drop(layer_drop);
}

HuBERTPretrainOptions hubert_options(Wav2Vec2Options w, double mask_prob, double mask_channel_prob,
                                     int64_t mask_channel_length, std::optional<double> feature_grad_mult,
                                     int64_t num_classes, int64_t final_dim) {
  return HuBERTPretrainOptions()
      .wav2vec2(std::move(w))
      .mask_prob(mask_prob)
      .mask_channel_prob(mask_channel_prob)
      .mask_channel_length(mask_channel_length)
      .feature_grad_mult(feature_grad_mult)
      .num_classes(num_classes)
      .final_dim(final_dim);
}

}  // namespace

HuBERTPretrainModel hubert_pretrain_model(const HuBERTPretrainOptions& options) { return HuBERTPretrainModel(options); }

HuBERTPretrainModel hubert_pretrain_base(double encoder_projection_dropout, double encoder_attention_dropout,
                                         double encoder_ff_interm_dropout, double encoder_dropout,
                                         double encoder_layer_drop, double mask_prob, double mask_channel_prob,
                                         int64_t mask_channel_length, std::optional<double> feature_grad_mult,
                                         int64_t num_classes) {
  return HuBERTPretrainModel(hubert_options(
      hubert_encoder("group_norm", 768, 12, 12, 3072, false, encoder_projection_dropout, encoder_attention_dropout,
                     encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop),
      mask_prob, mask_channel_prob, mask_channel_length, feature_grad_mult, num_classes, 256));
}

HuBERTPretrainModel hubert_pretrain_large(double encoder_projection_dropout, double encoder_attention_dropout,
                                          double encoder_ff_interm_dropout, double encoder_dropout,
                                          double encoder_layer_drop, double mask_prob, double mask_channel_prob,
                                          int64_t mask_channel_length, std::optional<double> feature_grad_mult) {
  return HuBERTPretrainModel(hubert_options(
      hubert_encoder("layer_norm", 1024, 24, 16, 4096, true, encoder_projection_dropout, encoder_attention_dropout,
                     encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop),
      mask_prob, mask_channel_prob, mask_channel_length, feature_grad_mult, 500, 768));
}

HuBERTPretrainModel hubert_pretrain_xlarge(double encoder_projection_dropout, double encoder_attention_dropout,
                                           double encoder_ff_interm_dropout, double encoder_dropout,
                                           double encoder_layer_drop, double mask_prob, double mask_channel_prob,
                                           int64_t mask_channel_length, std::optional<double> feature_grad_mult) {
  return HuBERTPretrainModel(hubert_options(
      hubert_encoder("layer_norm", 1280, 48, 16, 5120, true, encoder_projection_dropout, encoder_attention_dropout,
                     encoder_ff_interm_dropout, encoder_dropout, encoder_layer_drop),
      mask_prob, mask_channel_prob, mask_channel_length, feature_grad_mult, 500, 1024));
}

}  // namespace fw::audio::models
