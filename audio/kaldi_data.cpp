// Kaldi data directories (fw/audio/kaldi_io.h): wav.scp, segments, text, utt2spk, spk2utt,
// reco2file_and_channel, with the checks of utils/validate_data_dir.sh that matter for reading
// audio, and each utterance's waveform cut as Kaldi's extract-segments cuts it.
#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "fw/audio/kaldi_io.h"
#include "fw/ops.h"

namespace fw::audio::kaldi_io {
namespace {

const char* kLoadOp = "[kaldi_io::load_data_dir]";
const char* kAudioOp = "[kaldi_io::load_utterance_audio]";

std::string qt(const std::string& s) { return "\"" + s + "\""; }

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n\v\f"), e = s.find_last_not_of(" \t\r\n\v\f");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

std::vector<std::string> split_ws(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (true) {
    p = s.find_first_not_of(" \t\r\n\v\f", p);
    if (p == std::string::npos) break;
    size_t e = s.find_first_of(" \t\r\n\v\f", p);
    out.push_back(s.substr(p, e == std::string::npos ? std::string::npos : e - p));
    if (e == std::string::npos) break;
    p = e;
  }
  return out;
}

bool file_exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

struct Line {
  int64_t no;
  std::string key, rest;
};

// "key rest" lines of one data-directory file (blank lines skipped). Records a warning when the
// keys are not in C (byte) order and throws on duplicate keys.
std::vector<Line> read_lines(const std::string& path, const std::string& shown, std::vector<std::string>* warnings) {
  std::ifstream in(path, std::ios::binary);
  FW_CHECK(in, kLoadOp, " Failed to open ", shown, ": ", std::strerror(errno));
  std::vector<Line> out;
  std::map<std::string, int64_t> seen;
  std::string raw, prev;
  int64_t no = 0;
  bool unsorted_reported = false;
  while (std::getline(in, raw)) {
    ++no;
    std::string t = trim(raw);
    if (t.empty()) continue;
    size_t sp = t.find_first_of(" \t");
    Line l{no, t.substr(0, sp), sp == std::string::npos ? std::string() : trim(t.substr(sp + 1))};
    auto [it, fresh] = seen.emplace(l.key, no);
    FW_CHECK(fresh, kLoadOp, " ", shown, ":", no, ": duplicate key ", qt(l.key), " (first on line ", it->second, ")");
    if (!unsorted_reported && !out.empty() && l.key < prev) {
      warnings->push_back(shown + ":" + std::to_string(no) + ": not sorted in C order (" + qt(l.key) + " after " +
                          qt(prev) + "); accepted, but Kaldi tools need sorted files (utils/fix_data_dir.sh)");
      unsorted_reported = true;
    }
    prev = l.key;
    out.push_back(std::move(l));
  }
  FW_CHECK(!in.bad(), kLoadOp, " Failed to read ", shown, ": ", std::strerror(errno));
  return out;
}

bool parse_double(const std::string& s, double* v) {
  if (s.empty()) return false;
  const char* b = s.data();
  if (*b == '+') ++b;
  auto r = std::from_chars(b, s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && std::isfinite(*v);
}

bool parse_int(const std::string& s, int64_t* v) {
  if (s.empty()) return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *v);
  return r.ec == std::errc() && r.ptr == s.data() + s.size();
}

// [first, last) samples of a segment in a recording of n samples at rate sr, as extract-segments
// computes them (times truncated to samples; an end up to max_overshoot past the recording is cut
// to its end, further is an error). where: the message prefix naming the segment.
std::pair<int64_t, int64_t> segment_samples(const Segment& s, int64_t n, int64_t sr, int64_t channels,
                                            double max_overshoot, const std::string& op, const std::string& where) {
  const double dur = double(n) / double(sr);
  const int64_t first = int64_t(s.start * double(sr));
  FW_CHECK(first < n, op, " ", where, ": starts at ", s.start, " s (sample ", first,
           "), at or past the end of the recording (", n, " samples, ", dur, " s)");
  int64_t last = n;
  if (s.end != -1) {
    last = int64_t(s.end * double(sr));
    if (last > n) {
      const int64_t slack = int64_t(max_overshoot * double(sr));
      FW_CHECK(last < n + slack, op, " ", where, ": ends at ", s.end, " s (sample ", last,
               "), past the end of the recording (", n, " samples, ", dur, " s) by more than max_overshoot ",
               max_overshoot, " s");
      last = n;
    }
  }
  FW_CHECK(last > first, op, " ", where, ": segment [", s.start, ", ", s.end, "] s covers no samples at ", sr, " Hz");
  FW_CHECK(s.channel < channels, op, " ", where, ": channel ", s.channel, " but the recording has ", channels,
           " channel(s)");
  return {first, last};
}

// Runs "cmd |" and returns its standard output; a non-zero exit status throws.
std::string run_command(const std::string& entry, const std::string& where) {
  std::string cmd = trim(entry);
  if (!cmd.empty() && cmd.back() == '|') cmd = trim(cmd.substr(0, cmd.size() - 1));
  FW_CHECK(!cmd.empty(), kAudioOp, " ", where, ": empty command");
  std::fflush(nullptr);
  std::FILE* p = ::popen(cmd.c_str(), "re");
  FW_CHECK(p, kAudioOp, " ", where, ": failed to run ", qt(cmd), ": ", std::strerror(errno));
  std::string out;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  const bool read_error = std::ferror(p);
  int st = ::pclose(p);
  FW_CHECK(!read_error, kAudioOp, " ", where, ": read error on the output of ", qt(cmd));
  FW_CHECK(st != -1, kAudioOp, " ", where, ": failed to wait for ", qt(cmd), ": ", std::strerror(errno));
  FW_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, kAudioOp, " ", where, ": command ", qt(cmd),
           WIFEXITED(st) ? " exited with status " : " was killed by signal ",
           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  FW_CHECK(!out.empty(), kAudioOp, " ", where, ": command ", qt(cmd), " wrote no audio");
  return out;
}

}  // namespace

std::vector<std::string> DataDir::utterances() const {
  std::vector<std::string> out;
  if (has_segments) {
    for (const auto& [u, s] : segments) out.push_back(u);
  } else {
    for (const auto& [r, w] : wav) out.push_back(r);
  }
  return out;
}

DataDir load_data_dir(const std::string& path, const DataDirOptions& options) {
  namespace fs = std::filesystem;
  FW_CHECK(options.max_overshoot >= 0, kLoadOp, " max_overshoot must be non-negative, got ", options.max_overshoot);
  std::error_code ec;
  FW_CHECK(fs::is_directory(path, ec), kLoadOp, " ", qt(path), " is not a directory");
  DataDir d;
  d.path = path;
  auto file = [&](const char* name) { return (fs::path(path) / name).string(); };
  auto exists = [&](const char* name) { return file_exists(file(name)); };
  for (const char* required : {"wav.scp", "utt2spk"})
    FW_CHECK(exists(required), kLoadOp, " Data directory ", qt(path), " has no ", required,
             " (required: wav.scp and utt2spk; optional: segments, text, spk2utt, reco2file_and_channel)");

  // wav.scp
  const std::string wav_name = file("wav.scp");
  for (Line& l : read_lines(wav_name, wav_name, &d.warnings)) {
    const std::string at = wav_name + ":" + std::to_string(l.no);
    FW_CHECK(!l.rest.empty(), kLoadOp, " ", at, ": recording ", qt(l.key), " has no file or command");
    WavEntry e{l.rest, l.rest.back() == '|', l.no};
    if (!e.is_command && !options.wav_root.empty() && fs::path(e.rxfilename).is_relative())
      e.rxfilename = (fs::path(options.wav_root) / e.rxfilename).string();
    if (!e.is_command) {
      FW_CHECK(e.rxfilename != "-", kLoadOp, " ", at, ": recording ", qt(l.key),
               " reads standard input (\"-\"), which is not supported");
      if (!file_exists(e.rxfilename)) {
        size_t colon = e.rxfilename.rfind(':');
        const bool offset = colon != std::string::npos && colon + 1 < e.rxfilename.size() &&
                            e.rxfilename.find_first_not_of("0123456789", colon + 1) == std::string::npos;
        FW_CHECK(!offset && e.rxfilename.back() != ']', kLoadOp, " ", at, ": recording ", qt(l.key), ": ",
                 qt(e.rxfilename), " points into an archive (offset or range), which is not supported; "
                 "give a file or a command ending in '|'");
        FW_CHECK(false, kLoadOp, " ", at, ": recording ", qt(l.key), ": file ", qt(e.rxfilename),
                 options.wav_root.empty()
                     ? " does not exist (relative paths are relative to the working directory, as in Kaldi)"
                     : " does not exist");
      }
    }
    d.wav.emplace(l.key, std::move(e));
  }
  FW_CHECK(!d.wav.empty(), kLoadOp, " ", wav_name, " lists no recordings");

  // segments
  if (exists("segments")) {
    d.has_segments = true;
    const std::string seg_name = file("segments");
    for (Line& l : read_lines(seg_name, seg_name, &d.warnings)) {
      const std::string at = seg_name + ":" + std::to_string(l.no);
      std::vector<std::string> f = split_ws(l.rest);
      FW_CHECK(f.size() == 3 || f.size() == 4, kLoadOp, " ", at,
               ": expected \"utterance recording start end [channel]\", got ", f.size() + 1, " fields");
      Segment s;
      s.recording = f[0];
      s.line = l.no;
      FW_CHECK(parse_double(f[1], &s.start), kLoadOp, " ", at, ": start time ", qt(f[1]), " of ", qt(l.key),
               " is not a number");
      FW_CHECK(parse_double(f[2], &s.end), kLoadOp, " ", at, ": end time ", qt(f[2]), " of ", qt(l.key),
               " is not a number");
      FW_CHECK(s.start >= 0, kLoadOp, " ", at, ": segment ", qt(l.key), " starts at a negative time ", s.start);
      FW_CHECK(s.end == -1 || s.end > s.start, kLoadOp, " ", at, ": segment ", qt(l.key), " ends at ", s.end,
               " s, not after its start ", s.start, " s (end -1 means the end of the recording)");
      if (f.size() == 4)
        FW_CHECK(parse_int(f[3], &s.channel) && s.channel >= 0, kLoadOp, " ", at, ": channel ", qt(f[3]), " of ",
                 qt(l.key), " is not a non-negative integer");
      FW_CHECK(d.wav.count(s.recording), kLoadOp, " ", at, ": segment ", qt(l.key), " is in recording ",
               qt(s.recording), ", which is not in wav.scp");
      d.segments.emplace(l.key, std::move(s));
    }
  }
  const std::vector<std::string> utts = d.utterances();
  const std::set<std::string> utt_set(utts.begin(), utts.end());
  const std::string audio_source = d.has_segments ? "segments" : "wav.scp";

  // Segment times against the recordings' lengths (plain files: the header is enough).
  if (d.has_segments && options.check_segment_times) {
    std::map<std::string, AudioMetaData> meta;
    for (const auto& [utt, s] : d.segments) {
      const WavEntry& e = d.wav.at(s.recording);
      if (e.is_command) continue;
      auto it = meta.find(s.recording);
      if (it == meta.end()) {
        AudioMetaData m;
        try {
          m = info(e.rxfilename);
        } catch (const Error& err) {
          FW_CHECK(false, kLoadOp, " ", wav_name, ":", e.line, ": recording ", qt(s.recording), ": ", err.what());
        }
        it = meta.emplace(s.recording, m).first;
      }
      segment_samples(s, it->second.num_frames, it->second.sample_rate, it->second.num_channels, options.max_overshoot,
                      kLoadOp, file("segments") + ":" + std::to_string(s.line) + ": segment " + qt(utt) +
                                   " of recording " + qt(s.recording));
    }
  }

  // text
  if (exists("text")) {
    d.has_text = true;
    const std::string text_name = file("text");
    for (Line& l : read_lines(text_name, text_name, &d.warnings)) {
      FW_CHECK(utt_set.count(l.key), kLoadOp, " ", text_name, ":", l.no, ": utterance ", qt(l.key),
               " has no audio (not in ", audio_source, ")");
      d.text.emplace(l.key, l.rest);
    }
    size_t missing = 0;
    std::string first;
    for (const auto& u : utts)
      if (!d.text.count(u) && missing++ == 0) first = u;
    if (missing)
      d.warnings.push_back(text_name + ": " + std::to_string(missing) + " utterance(s) have no transcript (first: " +
                           qt(first) + ")");
  }

  // utt2spk
  const std::string u2s_name = file("utt2spk");
  std::map<std::string, int64_t> u2s_line;
  for (Line& l : read_lines(u2s_name, u2s_name, &d.warnings)) {
    const std::string at = u2s_name + ":" + std::to_string(l.no);
    std::vector<std::string> f = split_ws(l.rest);
    FW_CHECK(f.size() == 1, kLoadOp, " ", at, ": expected \"utterance speaker\", got ", f.size() + 1, " fields");
    FW_CHECK(utt_set.count(l.key), kLoadOp, " ", at, ": utterance ", qt(l.key), " has no audio (not in ",
             audio_source, ")");
    d.utt2spk.emplace(l.key, f[0]);
    u2s_line.emplace(l.key, l.no);
  }
  for (const auto& u : utts) {
    if (d.utt2spk.count(u)) continue;
    const int64_t line = d.has_segments ? d.segments.at(u).line : d.wav.at(u).line;
    FW_CHECK(false, kLoadOp, " ", file(d.has_segments ? "segments" : "wav.scp"), ":", line, ": utterance ", qt(u),
             " has no speaker in utt2spk");
  }

  // spk2utt: cross-checked with utt2spk, or derived from it.
  std::set<std::string> speakers;
  for (const auto& [u, s] : d.utt2spk) speakers.insert(s);
  if (exists("spk2utt")) {
    const std::string s2u_name = file("spk2utt");
    std::map<std::string, int64_t> listed;  // utterance -> spk2utt line
    for (Line& l : read_lines(s2u_name, s2u_name, &d.warnings)) {
      const std::string at = s2u_name + ":" + std::to_string(l.no);
      FW_CHECK(speakers.count(l.key), kLoadOp, " ", at, ": unknown speaker ", qt(l.key),
               " (no utterance of utt2spk has this speaker)");
      std::vector<std::string> us = split_ws(l.rest);
      FW_CHECK(!us.empty(), kLoadOp, " ", at, ": speaker ", qt(l.key), " lists no utterances");
      for (const auto& u : us) {
        auto it = d.utt2spk.find(u);
        FW_CHECK(it != d.utt2spk.end(), kLoadOp, " ", at, ": utterance ", qt(u), " of speaker ", qt(l.key),
                 " is not in utt2spk");
        FW_CHECK(it->second == l.key, kLoadOp, " ", at, ": utterance ", qt(u), " is listed under speaker ",
                 qt(l.key), " but ", u2s_name, ":", u2s_line.at(u), " gives speaker ", qt(it->second));
        auto [li, fresh] = listed.emplace(u, l.no);
        FW_CHECK(fresh, kLoadOp, " ", at, ": utterance ", qt(u), " is listed twice (also on line ", li->second, ")");
      }
      d.spk2utt.emplace(l.key, std::move(us));
    }
    for (const auto& [u, s] : d.utt2spk)
      FW_CHECK(listed.count(u), kLoadOp, " ", u2s_name, ":", u2s_line.at(u), ": utterance ", qt(u), " of speaker ",
               qt(s), " is missing from ", s2u_name);
  } else {
    d.spk2utt_derived = true;
    for (const auto& [u, s] : d.utt2spk) d.spk2utt[s].push_back(u);
  }

  // reco2file_and_channel
  if (exists("reco2file_and_channel")) {
    const std::string r_name = file("reco2file_and_channel");
    for (Line& l : read_lines(r_name, r_name, &d.warnings)) {
      const std::string at = r_name + ":" + std::to_string(l.no);
      std::vector<std::string> f = split_ws(l.rest);
      FW_CHECK(f.size() == 2, kLoadOp, " ", at, ": expected \"recording file channel\", got ", f.size() + 1, " fields");
      FW_CHECK(d.wav.count(l.key), kLoadOp, " ", at, ": recording ", qt(l.key), " is not in wav.scp");
      d.reco2file_and_channel.emplace(l.key, std::make_pair(f[0], f[1]));
    }
  }
  return d;
}

std::pair<Tensor, int64_t> load_utterance_audio(const DataDir& dir, const std::string& utt,
                                                const DataDirOptions& options) {
  FW_CHECK(options.max_overshoot >= 0, kAudioOp, " max_overshoot must be non-negative, got ", options.max_overshoot);
  const Segment* seg = nullptr;
  std::string rec = utt;
  if (dir.has_segments) {
    auto it = dir.segments.find(utt);
    FW_CHECK(it != dir.segments.end(), kAudioOp, " Unknown utterance ", qt(utt), " (not in ", dir.path,
             "/segments)");
    seg = &it->second;
    rec = seg->recording;
  }
  auto wit = dir.wav.find(rec);
  FW_CHECK(wit != dir.wav.end(), kAudioOp, " Unknown ", dir.has_segments ? "recording " : "utterance ", qt(rec),
           " (not in ", dir.path, "/wav.scp)");
  const WavEntry& e = wit->second;
  const std::string where = "utterance " + qt(utt) + " (" + dir.path + "/wav.scp:" + std::to_string(e.line) +
                            (seg ? ", segments:" + std::to_string(seg->line) : std::string()) + ")";
  auto wrap = [&](auto&& f) {
    try {
      return f();
    } catch (const Error& err) {
      FW_CHECK(false, kAudioOp, " ", where, ": ", err.what());
      throw;
    }
  };
  Tensor w;
  int64_t sr = 0;
  if (e.is_command) {
    std::string bytes = run_command(e.rxfilename, where);
    std::tie(w, sr) = wrap([&] { return load_from_memory(bytes.data(), bytes.size(), {}, e.rxfilename); });
    if (!seg) return {w, sr};
    auto [first, last] = segment_samples(*seg, w.size(1), sr, w.size(0), options.max_overshoot, kAudioOp, where);
    w = w.slice(1, first, last);
  } else {
    if (!seg) return wrap([&] { return load(e.rxfilename); });
    AudioMetaData m = wrap([&] { return info(e.rxfilename); });
    auto [first, last] = segment_samples(*seg, m.num_frames, m.sample_rate, m.num_channels, options.max_overshoot,
                                         kAudioOp, where);
    LoadOptions lo;
    lo.frame_offset = first;
    lo.num_frames = last - first;
    std::tie(w, sr) = wrap([&] { return load(e.rxfilename, lo); });
    FW_CHECK(w.size(1) == last - first, kAudioOp, " ", where, ": read ", w.size(1), " samples of ", last - first);
  }
  if (seg->channel >= 0) w = w.slice(0, seg->channel, seg->channel + 1);
  return {w.contiguous(), sr};
}

}  // namespace fw::audio::kaldi_io
