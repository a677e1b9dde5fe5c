// Feature stage: Kaldi data dir -> 40-bin fbank, per-speaker CMVN, Δ + ΔΔ, cached as ark/scp.
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include <fw/audio.h>
#include <fw/audio/kaldi_io.h>

#include "examples/babel/recipe.h"

namespace fw::recipe {

namespace kio = fw::audio::kaldi_io;

namespace {

std::string absolute(const std::string& path) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf)) return buf;
  return path;
}

// Size and modification time of a file ("-" when absent): part of the cache stamp.
std::string file_signature(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "-";
  return std::to_string(int64_t(st.st_size)) + "@" + std::to_string(int64_t(st.st_mtime));
}

KeyValues feature_stamp(const std::string& data_dir, const FeatureOptions& o) {
  KeyValues kv;
  kv["data_dir"] = absolute(data_dir);
  for (const char* f : {"wav.scp", "segments", "utt2spk", "spk2utt"})
    kv[std::string("file.") + f] = file_signature(data_dir + "/" + f);
  kv["num_mel_bins"] = std::to_string(o.num_mel_bins);
  kv["delta_order"] = std::to_string(o.delta_order);
  kv["cmvn"] = o.cmvn ? "speaker" : "none";
  kv["norm_vars"] = o.norm_vars ? "1" : "0";
  kv["version"] = "1";
  return kv;
}

}  // namespace

FeatureResult compute_features(const std::string& data_dir, const std::string& out_dir, const FeatureOptions& o) {
  FeatureResult result;
  const double t0 = now_seconds();
  make_dirs(out_dir);
  const std::string dir = absolute(out_dir);
  KeyValues stamp = feature_stamp(data_dir, o);
  const std::string stamp_path = dir + "/stamp";
  if (!o.force && file_exists(stamp_path) && file_exists(dir + "/feats.scp")) {
    KeyValues cmp = parse_key_values(read_text(stamp_path));
    std::string nf = cmp["frames"], nu = cmp["utterances"];
    cmp.erase("frames");
    cmp.erase("utterances");
    if (cmp == stamp) {
      result.cached = true;
      result.frames = std::atoll(nf.c_str());
      result.utterances = std::atoll(nu.c_str());
      result.seconds = now_seconds() - t0;
      return result;
    }
  }
  ::unlink(stamp_path.c_str());  // invalid until the new features are complete

  kio::DataDir data = kio::load_data_dir(data_dir);
  kio::MatrixWriter feats_out("ark,scp:" + dir + "/feats.ark," + dir + "/feats.scp");
  kio::DoubleMatrixWriter cmvn_out("ark:" + dir + "/cmvn.ark");
  auto fbank_opts = fw::audio::kaldi::FbankOptions().num_mel_bins(o.num_mel_bins).dither(0.0);
  // Speaker by speaker: CMVN needs all of a speaker's frames before any can be written.
  for (const auto& [spk, utts] : data.spk2utt) {
    std::map<std::string, Tensor> fb;
    for (const auto& utt : utts) {
      auto [wave, rate] = kio::load_utterance_audio(data, utt);
      Tensor w = wave.select(0, 0) * 32768.0;  // Kaldi's int16 scale; channel 0
      auto opts = fbank_opts;
      opts.sample_frequency(double(rate));
      Tensor f = fw::audio::kaldi::fbank(w, opts);
      FW_CHECK(f.size(0) > 0, "utterance ", utt, " of ", data_dir, " is too short for one frame");
      fb[utt] = f;
    }
    Tensor stats = kio::compute_cmvn_stats([&] {
      std::vector<Tensor> v;
      for (auto& [u, f] : fb) v.push_back(f);
      return v;
    }());
    cmvn_out.write(spk, stats);
    for (const auto& utt : utts) {
      Tensor f = fb[utt];
      if (o.cmvn) f = kio::apply_cmvn(f, stats, o.norm_vars);
      if (o.delta_order > 0) f = kio::add_deltas(f, o.delta_order, 2);
      feats_out.write(utt, f.contiguous());
      result.frames += f.size(0);
      result.utterances++;
    }
  }
  feats_out.close();
  cmvn_out.close();
  stamp["frames"] = std::to_string(result.frames);
  stamp["utterances"] = std::to_string(result.utterances);
  write_text_atomic(stamp_path, format_key_values(stamp));
  result.seconds = now_seconds() - t0;
  return result;
}

}  // namespace fw::recipe
