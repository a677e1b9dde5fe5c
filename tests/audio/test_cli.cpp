// The fw-audio command-line tool (tools/fw_audio): runs the built binary (FW_AUDIO_TOOL) on the
// speech fixtures and checks its .npy results against torchaudio 0.13 (tests/fixtures/audio/
// gen_cli.py), the Kaldi ark/scp files it writes, resampling to .npy and audio files, info,
// --help, the one-line errors, and the PNG of `plot` (read back with libpng, loaded at run time
// because the test binary does not link it).
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <png.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csetjmp>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "fw/audio/io.h"
#include "fw/audio/pitch.h"
#include "tests/audio/audio_fixture.h"

namespace fs = std::filesystem;
using fw::Tensor;
using fwtest::audio::Case;
using fwtest::audio::FixtureFile;

namespace {

const std::string kFix = FW_AUDIO_FIXTURE_DIR;

const FixtureFile& fix() {
  static FixtureFile f("cli");
  return f;
}

// A fresh directory under the system temp dir, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "fw_audio_cli_XXXXXX").string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::vector<std::string> entries() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  fs::path path_;
};

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Result {
  int code = -1;
  std::string out, err;
};

// Runs fw-audio with args (no shell); stdout and stderr go through files in a temp dir.
Result run(const std::vector<std::string>& args) {
  TempDir io;
  const std::string out = io / "stdout", err = io / "stderr";
  pid_t pid = ::fork();
  if (pid == 0) {
    int fo = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0) ::_exit(126);
    ::dup2(fo, 1);
    ::dup2(fe, 2);
    std::vector<char*> argv;
    std::string tool = FW_AUDIO_TOOL;
    argv.push_back(tool.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(tool.c_str(), argv.data());
    ::_exit(127);
  }
  Result r;
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) throw std::runtime_error("fork/waitpid failed");
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

std::string show(const std::vector<std::string>& args) {
  std::string s = "fw-audio";
  for (const auto& a : args) s += " " + a;
  return s;
}

// ---- .npy reader (format 1.0, '<f4', C order), strict about what fw-audio promises.
Tensor read_npy(const std::string& path) {
  std::string b = slurp(path);
  if (b.size() < 10 || b.compare(0, 6, "\x93NUMPY") != 0) throw std::runtime_error(path + ": no NumPy magic");
  if (b[6] != 1 || b[7] != 0) throw std::runtime_error(path + ": not format version 1.0");
  size_t hl = size_t(uint8_t(b[8])) | size_t(uint8_t(b[9])) << 8;
  if (b.size() < 10 + hl || (10 + hl) % 64 != 0) throw std::runtime_error(path + ": header not padded to 64 bytes");
  std::string h = b.substr(10, hl);
  if (h.back() != '\n') throw std::runtime_error(path + ": header does not end with a newline");
  if (h.find("'descr': '<f4'") == std::string::npos || h.find("'fortran_order': False") == std::string::npos)
    throw std::runtime_error(path + ": not little-endian float32 in C order: " + h);
  size_t s = h.find("'shape': (");
  if (s == std::string::npos) throw std::runtime_error(path + ": no shape: " + h);
  std::string dims = h.substr(s + 10, h.find(')', s) - s - 10);
  std::vector<int64_t> shape;
  std::stringstream ds(dims);
  std::string tok;
  while (std::getline(ds, tok, ','))
    if (tok.find_first_not_of(' ') != std::string::npos) shape.push_back(std::stoll(tok));
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (b.size() != 10 + hl + size_t(n) * 4) throw std::runtime_error(path + ": data size does not match the shape");
  Tensor t = fw::empty(shape, fw::kFloat);
  std::memcpy(t.data_ptr(), b.data() + 10 + hl, size_t(n) * 4);
  return t;
}

// ---- Kaldi binary archive reader: "key " "\0B" "FM " '\4' rows '\4' cols data, repeated.
struct ArkEntry {
  std::string key;
  int64_t offset;  // of the "\0B"
  Tensor m;
};
std::vector<ArkEntry> read_ark(const std::string& path) {
  std::string b = slurp(path);
  std::vector<ArkEntry> out;
  size_t p = 0;
  auto need = [&](bool ok, const char* what) {
    if (!ok) throw std::runtime_error(path + ": " + what + " at byte " + std::to_string(p));
  };
  while (p < b.size()) {
    size_t sp = b.find(' ', p);
    need(sp != std::string::npos && sp > p, "no key");
    ArkEntry e;
    e.key = b.substr(p, sp - p);
    p = sp + 1;
    e.offset = int64_t(p);
    need(b.compare(p, 2, std::string("\0B", 2)) == 0, "no binary marker \\0B");
    p += 2;
    need(b.compare(p, 3, "FM ") == 0, "no FM token");
    p += 3;
    int32_t dims[2];
    for (int32_t& d : dims) {
      need(p + 5 <= b.size() && b[p] == 4, "no int32 size marker");
      std::memcpy(&d, b.data() + p + 1, 4);
      p += 5;
    }
    size_t bytes = size_t(dims[0]) * size_t(dims[1]) * 4;
    need(dims[0] >= 0 && dims[1] >= 0 && p + bytes <= b.size(), "truncated matrix");
    e.m = fw::empty({dims[0], dims[1]}, fw::kFloat);
    std::memcpy(e.m.data_ptr(), b.data() + p, bytes);
    p += bytes;
    out.push_back(std::move(e));
  }
  return out;
}

// The comparison a case asks for (gen_cli.py): "lin", "log" or "logpow".
void expect_matches(const Case& c, const Tensor& actual, const Tensor& expected) {
  ASSERT_EQ(actual.sizes().vec(), expected.sizes().vec()) << c.name;
  const std::string cmp = c.str("cmp");
  if (cmp == "lin") {
    FW_AUDIO_EXPECT_CLOSE(c, actual, expected, 1e-4, 1e-5);
  } else if (cmp == "log") {
    FW_AUDIO_EXPECT_CLOSE(c, actual, expected, 1e-4, 0, 1e-3);
  } else {
    ASSERT_EQ(cmp, "logpow") << c.name;
    FW_AUDIO_EXPECT_CLOSE(c, actual.to(fw::kDouble).exp(), expected.to(fw::kDouble).exp(), 1e-4, 1e-6);
  }
}

std::vector<std::string> argv_of(const Case& c) {
  std::vector<std::string> out;
  for (const auto& v : c.find("argv")->array) out.push_back(v.text);
  return out;
}

std::string fixture(const std::string& name) { return kFix + "/" + name; }

bool one_line(const std::string& s) { return !s.empty() && s.back() == '\n' && s.find('\n') == s.size() - 1; }

}  // namespace

// Every command line of gen_cli.py against torchaudio.
TEST(AudioCli, MatchesTorchaudio) {
  TempDir tmp;
  int n = 0;
  for (const Case& c : fix().cases("")) {
    if (c.name.rfind("ark_", 0) == 0) continue;
    std::vector<std::string> args = {c.str("cmd")};
    for (const auto& a : argv_of(c)) args.push_back(a);
    args.push_back(fixture(c.str("input")));
    args.push_back(tmp / (c.name + ".npy"));
    Result r = run(args);
    ASSERT_EQ(r.code, 0) << show(args) << "\n" << r.err;
    EXPECT_EQ(r.err, "") << show(args);
    expect_matches(c, read_npy(tmp / (c.name + ".npy")), fix().out(c));
    n++;
  }
  EXPECT_GE(n, 19);
  // Nothing but the outputs is left behind (no temporary files).
  EXPECT_EQ(tmp.entries().size(), size_t(n));
}

// --name=value, --name value, --flag, --no-flag, --flag=false, --flag false, --flag=0 agree.
TEST(AudioCli, OptionSpellingsAgree) {
  TempDir tmp;
  const std::string in = fixture("speech_vi_16k.wav");
  std::vector<std::vector<std::string>> forms = {
      {"--no-center", "--n-fft", "256", "--normalized"},
      {"--center=false", "--n-fft=256", "--normalized=true"},
      {"--n-fft", "256", "--center", "false", "--normalized", "true"},
      {"--center=0", "--normalized=window", "--n-fft=256"},
  };
  std::string first;
  for (size_t i = 0; i < forms.size(); i++) {
    std::vector<std::string> args = {"spectrogram"};
    args.insert(args.end(), forms[i].begin(), forms[i].end());
    args.push_back(in);
    args.push_back(tmp / "s.npy");
    Result r = run(args);
    ASSERT_EQ(r.code, 0) << show(args) << "\n" << r.err;
    std::string bytes = slurp(tmp / "s.npy");
    if (i == 0) {
      first = bytes;
      Tensor t = read_npy(tmp / "s.npy");
      EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{1, 129, 1 + (40707 - 256) / 128}));
    } else {
      EXPECT_TRUE(bytes == first) << show(args);
    }
  }
}

// scp input of two utterances -> ark,scp; ark alone gives the same bytes; plain files get their
// stem as utterance id; transforms write (frames, bins) of the first channel.
TEST(AudioCli, KaldiArchives) {
  TempDir tmp;
  {
    std::ofstream scp(tmp / "wav.scp");
    scp << "utt_vi " << fixture("speech_vi_16k.wav") << "\n\nutt_ta\t" << fixture("speech_ta_16k.wav") << "  \n";
  }
  const std::string ark = tmp / "feats.ark", scp = tmp / "feats.scp";
  Result r = run({"fbank", "--num-mel-bins=40", "scp:" + (tmp / "wav.scp"), "ark,scp:" + ark + "," + scp});
  ASSERT_EQ(r.code, 0) << r.err;
  auto entries = read_ark(ark);
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].key, "utt_vi");
  EXPECT_EQ(entries[1].key, "utt_ta");
  for (const auto& e : entries) {
    Case c;
    for (const Case& k : fix().cases("ark_" + e.key)) c = k;
    ASSERT_FALSE(c.name.empty()) << e.key;
    expect_matches(c, e.m, fix().out(c));
  }
  // scp lines "utt ark:offset" point at each matrix's "\0B".
  std::ifstream s(scp);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(s, line)) lines.push_back(line);
  ASSERT_EQ(lines.size(), 2u);
  const std::string bytes = slurp(ark);
  for (size_t i = 0; i < 2; i++) {
    EXPECT_EQ(lines[i], entries[i].key + " " + ark + ":" + std::to_string(entries[i].offset));
    EXPECT_EQ(bytes.substr(size_t(entries[i].offset), 5), std::string("\0BFM ", 5));
  }
  EXPECT_EQ(entries[0].offset, 7);  // "utt_vi "

  // ark: alone writes the same archive.
  r = run({"fbank", "--num-mel-bins", "40", "scp:" + (tmp / "wav.scp"), "ark:" + (tmp / "only.ark")});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(slurp(tmp / "only.ark") == bytes);

  // A plain file: one matrix keyed by the file's stem; a transform's matrix is its first channel
  // transposed to (frames, bins), exactly the .npy's values.
  const std::string in = fixture("speech_en_44k_stereo.wav");
  r = run({"mfcc", "--n-mfcc=13", "--n-mels", "40", in, "ark:" + (tmp / "m.ark")});
  ASSERT_EQ(r.code, 0) << r.err;
  r = run({"mfcc", "--n-mfcc", "13", "--n-mels=40", in, tmp / "m.npy"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto m = read_ark(tmp / "m.ark");
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].key, "speech_en_44k_stereo");
  Tensor npy = read_npy(tmp / "m.npy");
  ASSERT_EQ(npy.sizes()[0], 2);
  EXPECT_TRUE(fw::equal(m[0].m, npy[0].transpose(0, 1).contiguous()));
}

// kaldi-pitch runs compute_kaldi_pitch (+ process_kaldi_pitch), which test_pitch.cpp checks against
// Kaldi; here the tool must give exactly the library's values for the same options.
TEST(AudioCli, KaldiPitch) {
  namespace AF = fw::audio::functional;
  TempDir tmp;
  const std::string in = fixture("speech_en_44k_stereo.wav");
  const Tensor ch1 = fw::audio::load(in).first[1] * 32768.0;
  Result r = run({"kaldi-pitch", "--process=false", "--channel=1", "--min-f0", "70", in, tmp / "raw.npy"});
  ASSERT_EQ(r.code, 0) << r.err;
  const Tensor raw = AF::compute_kaldi_pitch(ch1, 44100, AF::KaldiPitchOptions().min_f0(70));
  EXPECT_TRUE(fw::equal(read_npy(tmp / "raw.npy"), raw));
  r = run({"kaldi-pitch", "--channel", "1", "--min-f0=70", "--delay=2", "--add-raw-log-pitch", in, tmp / "f.npy"});
  ASSERT_EQ(r.code, 0) << r.err;
  fw::Generator gen = fw::make_generator<fw::CPUGeneratorImpl>(0);
  const Tensor feats =
      AF::process_kaldi_pitch(raw, AF::ProcessPitchOptions().delay(2).add_raw_log_pitch(true), gen);
  const Tensor got = read_npy(tmp / "f.npy");
  ASSERT_EQ(got.sizes().vec(), (std::vector<int64_t>{raw.size(0) + 2, 4}));
  EXPECT_TRUE(fw::equal(got, feats));
  r = run({"kaldi-pitch", "--channel=2", in, tmp / "bad.npy"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--channel 2 is out of range for 2 channels"), std::string::npos) << r.err;
  r = run({"kaldi-pitch", "--min-f0=500", in, tmp / "bad.npy"});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("0 < min_f0 < max_f0"), std::string::npos) << r.err;
}

// Resampling to .npy is covered by MatchesTorchaudio; here to audio files through fw::audio::save.
TEST(AudioCli, ResampleToAudioFiles) {
  TempDir tmp;
  const Case* rc = nullptr;
  auto cases = fix().cases("resample_48k");
  ASSERT_EQ(cases.size(), 1u);
  rc = &cases[0];
  const Tensor& ref = fix().out(*rc);
  Result r = run({"resample", "--new-sample-rate=16000", fixture("speech_en_48k.wav"), tmp / "r.wav"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto meta = fw::audio::info(tmp / "r.wav");
  EXPECT_EQ(meta.sample_rate, 16000);
  EXPECT_EQ(meta.encoding, "PCM_F");  // torchaudio.save's default for float32
  auto [w, sr] = fw::audio::load(tmp / "r.wav");
  EXPECT_EQ(sr, 16000);
  FW_AUDIO_EXPECT_CLOSE(*rc, w, ref, 0, 0, 1e-7);

  r = run({"resample", "--new-sample-rate", "16000", "--encoding=PCM_S", "--bits-per-sample", "16",
           fixture("speech_en_48k.wav"), tmp / "r16.wav"});
  ASSERT_EQ(r.code, 0) << r.err;
  meta = fw::audio::info(tmp / "r16.wav");
  EXPECT_EQ(meta.bits_per_sample, 16);
  EXPECT_EQ(meta.encoding, "PCM_S");
  auto [w16, sr16] = fw::audio::load(tmp / "r16.wav");
  EXPECT_EQ(w16.sizes().vec(), ref.sizes().vec());
  FW_AUDIO_EXPECT_CLOSE(*rc, w16, ref, 0, 0, 1.01 / 32768);
}

TEST(AudioCli, Info) {
  Result r = run({"info", fixture("speech_en_44k_stereo.wav")});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* want : {"Sample rate:     44100\n", "Frames:          174678\n", "Channels:        2\n",
                           "Duration:        3.960952 s\n", "Bits per sample: 16\n", "Encoding:        PCM_S\n"})
    EXPECT_NE(r.out.find(want), std::string::npos) << want << " not in\n" << r.out;
}

TEST(AudioCli, Help) {
  Result top = run({"--help"});
  EXPECT_EQ(top.code, 0);
  EXPECT_EQ(top.err, "");
  // Each subcommand's help lists its options with their defaults.
  const std::vector<std::pair<std::string, std::vector<std::string>>> subs = {
      {"info", {"usage: fw-audio info FILE"}},
      {"spectrogram", {"--n-fft=INT", "(default 400)", "--pad-mode=", "--normalized[=true|false|window|frame_length]"}},
      {"melspectrogram", {"--n-mels=INT", "(default 128)", "--mel-scale=htk|slaney", "--top-db"}},
      {"mfcc", {"--n-mfcc=INT", "(default 40)", "--log-mels", "--norm=ortho|none"}},
      {"lfcc", {"--n-filter=INT", "--n-lfcc", "--log-lf"}},
      {"fbank", {"--num-mel-bins=INT", "(default 23)", "--snip-edges", "--window-type=", "(default povey)"}},
      {"kaldi-mfcc", {"--num-ceps=INT", "(default 13)", "--cepstral-lifter"}},
      {"kaldi-spectrogram", {"--frame-length=FLOAT", "(default 25)"}},
      {"resample", {"--new-sample-rate=INT", "--lowpass-filter-width", "(default 6)", "--rolloff", "--beta"}},
      {"plot", {"--width=INT", "(default 800)", "--height", "--n-mels", "--top-db"}},
  };
  for (const auto& [sub, wants] : subs) {
    EXPECT_NE(top.out.find("  " + sub + " "), std::string::npos) << sub;
    Result r = run({sub, sub == "plot" ? "-h" : "--help"});
    EXPECT_EQ(r.code, 0) << sub << ": " << r.err;
    EXPECT_EQ(r.err, "") << sub;
    if (sub != "info") EXPECT_NE(r.out.find("usage: fw-audio " + sub + " [options] IN OUT"), std::string::npos) << sub;
    for (const auto& w : wants) EXPECT_NE(r.out.find(w), std::string::npos) << sub << ": no '" << w << "' in\n" << r.out;
  }
}

// Wrong command lines and failing files: one line "fw-audio: <sub>: ..." on stderr, nothing on
// stdout, a non-zero exit and no output file.
TEST(AudioCli, Errors) {
  TempDir tmp;
  const std::string in = fixture("speech_vi_16k.wav"), out = tmp / "o.npy";
  {
    std::ofstream scp(tmp / "two.scp");
    scp << "a " << in << "\nb " << in << "\n";
  }
  struct E {
    std::vector<std::string> args;
    std::string prefix, says;
  };
  const std::vector<E> cases = {
      {{}, "fw-audio: ", "missing subcommand"},
      {{"bogus", in, out}, "fw-audio: ", "unknown subcommand 'bogus'"},
      {{"mfcc", "--n-mfc=13", in, out}, "fw-audio: mfcc: ", "unknown option --n-mfc"},
      {{"fbank", "-x", in, out}, "fw-audio: fbank: ", "unknown option '-x'"},
      {{"mfcc", "--n-mfcc=abc", in, out}, "fw-audio: mfcc: ", "--n-mfcc: expected an integer, got 'abc'"},
      {{"mfcc", "--n-mfcc=1.5", in, out}, "fw-audio: mfcc: ", "expected an integer"},
      {{"fbank", "--frame-shift", "1O", in, out}, "fw-audio: fbank: ", "--frame-shift: expected a number, got '1O'"},
      {{"fbank", "--dither=nan", in, out}, "fw-audio: fbank: ", "expected a number"},
      {{"fbank", in, out, "--num-mel-bins"}, "fw-audio: fbank: ", "option --num-mel-bins needs a value"},
      {{"fbank", "--snip-edges=maybe", in, out}, "fw-audio: fbank: ", "expected true or false"},
      {{"fbank", "--window-type=hann", in, out}, "fw-audio: fbank: ", "expected one of hamming"},
      {{"mfcc", out}, "fw-audio: mfcc: ", "missing IN"},
      {{"mfcc"}, "fw-audio: mfcc: ", "missing IN and OUT"},
      {{"mfcc", in, tmp / "o.txt"}, "fw-audio: mfcc: ", "OUT must be FILE.npy"},
      {{"mfcc", tmp / "missing.wav", out}, "fw-audio: mfcc: ", "cannot read"},
      {{"mfcc", fixture("gen_cli.py"), out}, "fw-audio: mfcc: ", "cannot read"},
      {{"mfcc", in, tmp / "no/such/dir/o.npy"}, "fw-audio: mfcc: ", "cannot write"},
      {{"resample", in, tmp / "no/such/dir/o.wav"}, "fw-audio: resample: ", "cannot write"},
      {{"fbank", in, "ark,scp:" + (tmp / "no/dir.ark") + "," + (tmp / "o.scp")}, "fw-audio: fbank: ", "cannot write"},
      {{"fbank", "scp:" + (tmp / "two.scp"), out}, "fw-audio: fbank: ", "lists 2 utterances"},
      {{"fbank", "scp:" + (tmp / "none.scp"), "ark:" + (tmp / "o.ark")}, "fw-audio: fbank: ", "cannot read"},
      {{"fbank", in, "ark,scp:" + (tmp / "o.ark")}, "fw-audio: fbank: ", "bad output specifier"},
      {{"fbank", in, "ark,t:" + (tmp / "o.ark")}, "fw-audio: fbank: ", "not supported"},
      {{"kaldi-mfcc", "--num-ceps=30", in, out}, "fw-audio: kaldi-mfcc: ", "num_ceps cannot be larger"},
      {{"spectrogram", "--power=0", in, out}, "fw-audio: spectrogram: ", "--power must be positive"},
      {{"info"}, "fw-audio: info: ", "missing FILE"},
      {{"info", tmp / "missing.wav"}, "fw-audio: info: ", "cannot read"},
      {{"plot", "--width=10", in, tmp / "p.png"}, "fw-audio: plot: ", "too small"},
      {{"plot", in, tmp / "p.jpg"}, "fw-audio: plot: ", "must be a .png"},
      {{"plot", "--channel=1", in, tmp / "p.png"}, "fw-audio: plot: ", "out of range"},
  };
  for (const auto& e : cases) {
    Result r = run(e.args);
    const std::string cmd = show(e.args);
    EXPECT_NE(r.code, 0) << cmd;
    EXPECT_LT(r.code, 64) << cmd << " (killed by a signal?)";
    EXPECT_EQ(r.out, "") << cmd;
    EXPECT_TRUE(one_line(r.err)) << cmd << ": stderr is not one line:\n" << r.err;
    EXPECT_EQ(r.err.rfind(e.prefix, 0), 0u) << cmd << ": " << r.err;
    EXPECT_NE(r.err.find(e.says), std::string::npos) << cmd << ": expected '" << e.says << "' in " << r.err;
  }
  // Only the two scp files remain: failed runs leave no outputs or temporaries.
  EXPECT_EQ(tmp.entries(), (std::vector<std::string>{"two.scp"}));
}

// ---- plot: the PNG read back with libpng (dlopen'ed).
namespace {
struct PngImage {
  uint32_t width = 0, height = 0;
  int bit_depth = 0, color_type = -1;
  std::vector<std::vector<uint8_t>> rows;
};
std::jmp_buf g_png_jmp;
void png_fail(png_structp, png_const_charp) { std::longjmp(g_png_jmp, 1); }

// Decodes path with the system libpng; an error string on failure.
std::string read_png(const std::string& path, PngImage* img) {
  static void* lib = ::dlopen("libpng16.so.16", RTLD_NOW);
  if (!lib) return std::string("cannot load libpng16.so.16: ") + ::dlerror();
  auto create = reinterpret_cast<decltype(&png_create_read_struct)>(::dlsym(lib, "png_create_read_struct"));
  auto create_info = reinterpret_cast<decltype(&png_create_info_struct)>(::dlsym(lib, "png_create_info_struct"));
  auto destroy = reinterpret_cast<decltype(&png_destroy_read_struct)>(::dlsym(lib, "png_destroy_read_struct"));
  auto init_io = reinterpret_cast<decltype(&png_init_io)>(::dlsym(lib, "png_init_io"));
  auto read = reinterpret_cast<decltype(&png_read_png)>(::dlsym(lib, "png_read_png"));
  auto get_ihdr = reinterpret_cast<decltype(&png_get_IHDR)>(::dlsym(lib, "png_get_IHDR"));
  auto get_rows = reinterpret_cast<decltype(&png_get_rows)>(::dlsym(lib, "png_get_rows"));
  auto version = reinterpret_cast<decltype(&png_get_libpng_ver)>(::dlsym(lib, "png_get_libpng_ver"));
  if (!create || !create_info || !destroy || !init_io || !read || !get_ihdr || !get_rows || !version)
    return "libpng symbols missing";
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return "cannot open " + path;
  png_structp png = create(version(nullptr), nullptr, png_fail, nullptr);
  png_infop info = png ? create_info(png) : nullptr;
  if (!png || !info) {
    std::fclose(f);
    return "libpng init failed";
  }
  if (setjmp(g_png_jmp)) {
    destroy(&png, &info, nullptr);
    std::fclose(f);
    return "libpng could not decode " + path;
  }
  init_io(png, f);
  read(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_uint_32 w = 0, h = 0;
  int depth = 0, color = 0, interlace = 0;
  get_ihdr(png, info, &w, &h, &depth, &color, &interlace, nullptr, nullptr);
  png_bytepp rows = get_rows(png, info);
  img->width = w;
  img->height = h;
  img->bit_depth = depth;
  img->color_type = color;
  const size_t row_bytes = color == PNG_COLOR_TYPE_RGB && depth == 8 ? size_t(w) * 3 : 0;
  for (png_uint_32 y = 0; y < h && row_bytes; y++) img->rows.emplace_back(rows[y], rows[y] + row_bytes);
  destroy(&png, &info, nullptr);
  std::fclose(f);
  return "";
}
}  // namespace

TEST(AudioCli, PlotWritesPng) {
  TempDir tmp;
  const std::string png = tmp / "p.png";
  Result r = run({"plot", "--width=320", "--height", "200", "--n-mels=64", "--top-db", "60",
                  fixture("speech_en_44k_stereo.wav"), png});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  PngImage img;
  std::string err = read_png(png, &img);
  ASSERT_EQ(err, "");
  EXPECT_EQ(img.width, 320u);
  EXPECT_EQ(img.height, 200u);
  EXPECT_EQ(img.bit_depth, 8);
  ASSERT_EQ(img.color_type, PNG_COLOR_TYPE_RGB);
  ASSERT_EQ(img.rows.size(), 200u);
  // White margins, black axes, tick labels and ticks, and a colourful spectrogram in between.
  size_t white = 0, black = 0, colour = 0;
  for (const auto& row : img.rows)
    for (size_t x = 0; x < row.size(); x += 3) {
      int R = row[x], G = row[x + 1], B = row[x + 2];
      if (R == 255 && G == 255 && B == 255) white++;
      else if (R == 0 && G == 0 && B == 0) black++;
      else colour++;
    }
  EXPECT_EQ(img.rows[0][0], 255);  // top-left corner is margin
  EXPECT_GT(black, 320u + 150u);   // at least the two axis lines
  EXPECT_GT(colour, 320u * 200u / 2);
  EXPECT_GT(white, 320u * 8);
  // The colour map runs from dark (quiet) to bright (loud): both ends appear.
  int darkest = 255 * 3, brightest = 0;
  for (const auto& row : img.rows)
    for (size_t x = 0; x < row.size(); x += 3) {
      int sum = row[x] + row[x + 1] + row[x + 2];
      bool grey = row[x] == row[x + 1] && row[x + 1] == row[x + 2];
      if (grey) continue;
      darkest = std::min(darkest, sum);
      brightest = std::max(brightest, sum);
    }
  EXPECT_LT(darkest, 200);
  EXPECT_GT(brightest, 500);

  // The default size.
  r = run({"plot", fixture("speech_vi_16k.wav"), tmp / "d.png"});
  ASSERT_EQ(r.code, 0) << r.err;
  PngImage d;
  ASSERT_EQ(read_png(tmp / "d.png", &d), "");
  EXPECT_EQ(d.width, 800u);
  EXPECT_EQ(d.height, 400u);
}
