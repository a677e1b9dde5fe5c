// Frame data: features and alignments of one split, concatenated; context windows for minibatches.
#include <algorithm>
#include <fstream>
#include <sstream>

#include <fw/audio/kaldi_io.h>

#include "examples/babel/recipe.h"

namespace fw::recipe {

namespace kio = fw::audio::kaldi_io;

FrameData load_frames(const SplitSpec& spec, const LoadOptions& o) {
  FW_CHECK(!spec.feats.empty(), "no features given");
  std::map<std::string, Tensor> feats = kio::read_matrices(spec.feats);
  FW_CHECK(!feats.empty(), "no utterances in ", spec.feats);
  if (o.max_utts > 0 && int64_t(feats.size()) > o.max_utts) {
    auto it = feats.begin();
    std::advance(it, o.max_utts);
    feats.erase(it, feats.end());
  }
  std::map<std::string, std::vector<int32_t>> ali;
  if (!spec.ali.empty()) {
    auto raw = kio::read_alignments(spec.ali);
    if (o.skip_unaligned) {
      int64_t dropped = 0;
      for (auto it = feats.begin(); it != feats.end();) {
        if (!raw.count(it->first)) {
          it = feats.erase(it);
          dropped++;
        } else {
          ++it;
        }
      }
      if (dropped) std::fprintf(stderr, "warning: %lld utterances of %s have no alignment in %s; skipped\n",
                                (long long)dropped, spec.feats.c_str(), spec.ali.c_str());
      FW_CHECK(!feats.empty(), "no utterance of ", spec.feats, " has an alignment in ", spec.ali);
    }
    ali = kio::check_alignment_lengths(feats, raw, o.ali_tolerance);
  }
  FrameData d;
  int64_t total = 0, dim = -1;
  for (const auto& [utt, f] : feats) {
    FW_CHECK(f.dim() == 2 && f.size(0) > 0, "utterance ", utt, " of ", spec.feats, " has no frames");
    if (dim < 0) dim = f.size(1);
    FW_CHECK(f.size(1) == dim, "utterance ", utt, " of ", spec.feats, " has ", f.size(1), " feature dims, others ",
             dim);
    d.utts.push_back(utt);
    d.start.push_back(total);
    d.length.push_back(f.size(0));
    total += f.size(0);
  }
  FW_CHECK(dim % o.channels == 0, spec.feats, ": feature dim ", dim, " is not a multiple of ", o.channels,
           " channels (static + deltas)");
  const int64_t bins = dim / o.channels;
  std::vector<Tensor> parts;
  parts.reserve(feats.size());
  for (const auto& [utt, f] : feats) parts.push_back(f.to(kFloat));
  d.feats = fw::cat(parts, 0).reshape({total, o.channels, bins}).contiguous();
  d.frame_utt.resize(size_t(total));
  for (size_t u = 0; u < d.utts.size(); u++)
    std::fill(d.frame_utt.begin() + d.start[u], d.frame_utt.begin() + d.start[u] + d.length[u], int32_t(u));
  if (!spec.ali.empty()) {
    d.labels.reserve(size_t(total));
    for (const auto& utt : d.utts)
      for (int32_t id : ali.at(utt)) {
        FW_CHECK(id >= 0, "negative class id ", id, " in the alignment of ", utt);
        d.labels.push_back(id);
      }
  }
  return d;
}

std::pair<Tensor, Tensor> feature_moments(const std::vector<const FrameData*>& data) {
  Tensor sum, sq;
  int64_t n = 0;
  for (const FrameData* d : data) {
    Tensor f = d->feats.to(kDouble);
    Tensor s = f.sum({0}), q = (f * f).sum({0});
    sum = sum.defined() ? sum + s : s;
    sq = sq.defined() ? sq + q : q;
    n += d->num_frames();
  }
  FW_CHECK(n > 0, "feature_moments: no frames");
  Tensor mean = sum / double(n);
  Tensor var = (sq / double(n) - mean * mean).clamp_min(1e-8);
  return {mean.to(kFloat), var.sqrt().to(kFloat)};
}

Tensor gather_windows(const FrameData& data, const std::vector<int64_t>& frames, const fw::models::ContextSpec& spec) {
  const int64_t B = int64_t(frames.size()), W = spec.num_windows(), K = spec.num_frames();
  const int64_t C = data.feats.size(1), F = data.feats.size(2);
  std::vector<int64_t> idx(static_cast<size_t>(B * W * K));
  int64_t* p = idx.data();
  for (int64_t b = 0; b < B; b++) {
    const int64_t g = frames[size_t(b)];
    const int32_t u = data.frame_utt[size_t(g)];
    const int64_t lo = data.start[size_t(u)], hi = lo + data.length[size_t(u)] - 1;
    for (const auto& w : spec.windows)
      for (int64_t k = 0; k < K; k++) *p++ = std::clamp(g - w.left + k * w.stride, lo, hi);
  }
  Tensor sel = data.feats.index_select(0, fw::tensor(idx));  // (B * W * K, C, F)
  return sel.view({B, W, K, C, F}).permute({0, 1, 3, 4, 2}).reshape({B, W * C, F, K}).contiguous();
}

std::vector<std::string> read_phones(const std::string& path) {
  std::ifstream in(path);
  FW_CHECK(in.good(), "cannot read ", path);
  std::vector<std::string> names;
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    if (line.empty()) continue;
    std::istringstream ls(line);
    std::string name;
    int64_t id = -1;
    ls >> name >> id;
    FW_CHECK(!ls.fail() && id >= 0, path, ":", lineno, ": expected '<phone> <id>'");
    if (int64_t(names.size()) <= id) names.resize(size_t(id + 1));
    FW_CHECK(names[size_t(id)].empty(), path, ":", lineno, ": id ", id, " given twice");
    names[size_t(id)] = name;
  }
  for (size_t i = 0; i < names.size(); i++) FW_CHECK(!names[i].empty(), path, ": id ", i, " missing (ids must be dense)");
  return names;
}

}  // namespace fw::recipe
