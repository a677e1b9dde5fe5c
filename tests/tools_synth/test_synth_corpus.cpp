// fw-synth-corpus (tools/fw_synth_corpus): runs the built tool (FW_SYNTH_TOOL) on a tiny corpus in
// a temporary directory and checks the output's promises (determinism, completeness, alignment
// lengths equal to fw::audio::kaldi::fbank's frame counts, phone tables, speaker-disjoint splits,
// SNRs), the same for a tiny English corpus (examples/swbd's default language), plus the tool's
// library pieces directly (RNG, mixing, framing, word lists, voices).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "fw/audio/io.h"
#include "fw/audio/kaldi.h"
#include "fw/fw.h"
#include "tools/fw_synth_corpus/corpus.h"
#include "tools/fw_synth_corpus/espeak.h"
#include "tools/fw_synth_corpus/languages.h"
#include "tools/fw_synth_corpus/synth.h"

namespace fs = std::filesystem;
using namespace fw_synth;

namespace {

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Result {
  int code = -1;
  std::string out, err;
};

// Runs the tool with args; stdout and stderr go to files next to `scratch`.
Result run_tool(const std::vector<std::string>& args, const fs::path& scratch) {
  const std::string out = (scratch / "stdout.txt").string(), err = (scratch / "stderr.txt").string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    FILE* fo = std::freopen(out.c_str(), "w", stdout);
    FILE* fe = std::freopen(err.c_str(), "w", stderr);
    if (!fo || !fe) ::_exit(126);
    std::vector<std::string> copy = args;
    std::string tool = FW_SYNTH_TOOL;
    std::vector<char*> argv = {tool.data()};
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

fs::path make_temp_dir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/fw_synth_test_XXXXXX";
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  return tmpl;
}

struct TempDir {
  fs::path path = make_temp_dir();
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const std::vector<std::string> kLangs = {"kk", "te", "tpi"};
const std::vector<std::string> kSplits = {"train", "dev", "test"};
const std::set<double> kSnrs = {0.0, 10.0, 20.0};

std::vector<std::string> tiny_args(const fs::path& out, int seed) {
  return {"--out",        out.string(), "--seed",        std::to_string(seed), "--langs", "kk,te,tpi",
          "--speakers-per-lang", "3",   "--utts-per-speaker", "3",             "--words-per-utt", "2-4",
          "--vocab-size", "300",        "--snr-db",      "0,10,20,inf",        "--noise-types", "white,pink,babble",
          "--babble-pool", "3",         "--write-clean", "--quiet"};
}

// Kaldi-style "key rest..." lines.
std::map<std::string, std::vector<std::string>> read_table(const fs::path& p, std::vector<std::string>* keys = nullptr) {
  std::map<std::string, std::vector<std::string>> t;
  std::ifstream f(p);
  EXPECT_TRUE(f.good()) << p;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream ls(line);
    std::string k, v;
    ls >> k;
    std::vector<std::string> rest;
    while (ls >> v) rest.push_back(v);
    EXPECT_EQ(t.count(k), 0u) << "duplicate key " << k << " in " << p;
    if (keys) keys->push_back(k);
    t[k] = rest;
  }
  return t;
}

std::vector<float> load_samples(const std::string& path, int64_t* rate = nullptr) {
  auto [w, sr] = fw::audio::load(path);
  if (rate) *rate = sr;
  fw::Tensor c = w.contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

// A tiny corpus made once per test process from Args(root, Seed), shared by a suite's tests.
template <std::vector<std::string> (*Args)(const fs::path&, int), int Seed>
class TinyCorpus : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    root_ = dir_->path / "corpus";
    const Result r = run_tool(Args(root_, Seed), dir_->path);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static inline TempDir* dir_ = nullptr;
  static inline fs::path root_;
};

// The tiny corpus every corpus test reads.
using SynthCorpus = TinyCorpus<tiny_args, 7>;

std::map<std::string, std::string> tree(const fs::path& root) {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::recursive_directory_iterator(root))
    if (e.is_regular_file()) files[fs::relative(e.path(), root).string()] = slurp(e.path());
  return files;
}

}  // namespace

TEST_F(SynthCorpus, SameSeedIsByteIdenticalOtherSeedDiffers) {
  TempDir tmp;
  const fs::path a = tmp.path / "corpus", b = tmp.path / "first", c = tmp.path / "other";
  ASSERT_EQ(run_tool(tiny_args(a, 7), tmp.path).code, 0);
  // Same path twice (wav.scp holds absolute paths): move the first run aside, run again.
  fs::rename(a, b);
  ASSERT_EQ(run_tool(tiny_args(a, 7), tmp.path).code, 0);
  const auto first = tree(b), second = tree(a);
  ASSERT_GT(first.size(), 50u);
  ASSERT_EQ(first.size(), second.size());
  for (const auto& [name, bytes] : first) {
    auto it = second.find(name);
    ASSERT_NE(it, second.end()) << name;
    EXPECT_TRUE(it->second == bytes) << name << " differs between two runs with the same seed";
  }
  // The shared corpus (another directory, same seed) has the same wavs and alignments.
  const auto shared = tree(root_);
  for (const auto& [name, bytes] : first)
    if (name.rfind("wav", 0) == 0 || name.find("ali.txt") != std::string::npos || name.find("/text") != std::string::npos)
      EXPECT_TRUE(shared.at(name) == bytes) << name;

  ASSERT_EQ(run_tool(tiny_args(c, 8), tmp.path).code, 0);
  const auto other = tree(c);
  for (const std::string& f : {"data/kk/train/text", "data/te/dev/text", "data/tpi/test/ali.txt"})
    EXPECT_NE(other.at(f), first.at(f)) << f << " is the same for seeds 7 and 8";
  EXPECT_NE(other.at("wav/kk/kk-s01/kk-s01-u001.wav"), first.at("wav/kk/kk-s01/kk-s01-u001.wav"));
}

TEST_F(SynthCorpus, EveryUtteranceHasWavTranscriptAndAlignment) {
  for (const auto& lang : kLangs) {
    for (const auto& split : kSplits) {
      const fs::path d = root_ / "data" / lang / split;
      std::vector<std::string> order;
      auto wav = read_table(d / "wav.scp", &order);
      EXPECT_TRUE(std::is_sorted(order.begin(), order.end())) << d;
      auto text = read_table(d / "text");
      auto utt2spk = read_table(d / "utt2spk");
      auto spk2utt = read_table(d / "spk2utt");
      auto ali = read_table(d / "ali.txt");
      auto noise = read_table(d / "utt2noise");
      auto dur = read_table(d / "utt2dur");
      auto gender = read_table(d / "spk2gender");
      ASSERT_EQ(wav.size(), 3u) << d;  // one speaker x 3 utterances
      for (const auto& [utt, rest] : wav) {
        ASSERT_EQ(rest.size(), 1u);
        EXPECT_TRUE(fs::path(rest[0]).is_absolute());
        EXPECT_TRUE(fs::is_regular_file(rest[0])) << rest[0];
        ASSERT_TRUE(text.count(utt)) << utt;
        EXPECT_GE(text[utt].size(), 2u);
        EXPECT_LE(text[utt].size(), 4u);
        ASSERT_TRUE(ali.count(utt)) << utt;
        EXPECT_FALSE(ali[utt].empty());
        ASSERT_TRUE(utt2spk.count(utt));
        EXPECT_EQ(utt.rfind(utt2spk[utt][0] + "-", 0), 0u) << "utterance ids start with the speaker id";
        ASSERT_TRUE(spk2utt.count(utt2spk[utt][0]));
        const auto& us = spk2utt[utt2spk[utt][0]];
        EXPECT_NE(std::find(us.begin(), us.end(), utt), us.end());
        ASSERT_TRUE(noise.count(utt));
        ASSERT_TRUE(dur.count(utt));
        EXPECT_TRUE(gender.count(utt2spk[utt][0]));
      }
      EXPECT_EQ(text.size(), wav.size());
      EXPECT_EQ(ali.size(), wav.size());
      EXPECT_EQ(utt2spk.size(), wav.size());
    }
  }
  const std::string readme = slurp(root_ / "README.md");
  EXPECT_NE(readme.find("Total: 27 utterances"), std::string::npos) << readme;
}

TEST_F(SynthCorpus, AlignmentLengthEqualsFbankFrames) {
  int checked = 0;
  for (const auto& lang : kLangs)
    for (const auto& split : kSplits) {
      const fs::path d = root_ / "data" / lang / split;
      auto wav = read_table(d / "wav.scp");
      auto ali = read_table(d / "ali.txt");
      auto dur = read_table(d / "utt2dur");
      for (const auto& [utt, rest] : wav) {
        auto [w, sr] = fw::audio::load(rest[0]);
        ASSERT_EQ(sr, 16000);
        const fw::Tensor feats = fw::audio::kaldi::fbank(w * 32768.0);
        EXPECT_EQ(feats.sizes()[0], int64_t(ali[utt].size())) << utt;
        EXPECT_EQ(num_frames(w.sizes()[1], 16000.0), int64_t(ali[utt].size())) << utt;
        EXPECT_NEAR(std::stod(dur[utt][0]), double(w.sizes()[1]) / 16000.0, 1e-4);
        // Padded with silence at both ends, speech in between.
        EXPECT_EQ(ali[utt].front(), "0") << utt;
        EXPECT_EQ(ali[utt].back(), "0") << utt;
        const auto speech = std::count_if(ali[utt].begin(), ali[utt].end(), [](auto& s) { return s != "0"; });
        EXPECT_GT(speech, int64_t(ali[utt].size()) / 3) << utt;
        checked++;
      }
    }
  EXPECT_EQ(checked, 27);
}

TEST_F(SynthCorpus, PhonesAndLexiconAreConsistent) {
  for (const auto& lang : kLangs) {
    const fs::path d = root_ / "data" / lang;
    std::vector<std::string> names;
    auto phones = read_table(d / "phones.txt", &names);
    ASSERT_GE(phones.size(), 10u) << lang;
    EXPECT_EQ(names[0], "sil");
    std::set<std::string> phone_set;
    for (size_t i = 0; i < names.size(); i++) {
      ASSERT_EQ(phones[names[i]].size(), 1u);
      EXPECT_EQ(phones[names[i]][0], std::to_string(i)) << "dense ids in file order, sil = 0";
      phone_set.insert(names[i]);
    }
    std::set<std::string> used;
    std::map<std::string, std::vector<std::string>> lexicon;
    {
      std::ifstream f(d / "lexicon.txt");
      std::string line, w, p;
      while (std::getline(f, line)) {
        std::istringstream ls(line);
        ls >> w;
        std::vector<std::string> pron;
        while (ls >> p) {
          EXPECT_TRUE(phone_set.count(p)) << lang << " lexicon phone " << p;
          EXPECT_NE(p, "sil");
          pron.push_back(p);
        }
        EXPECT_FALSE(pron.empty()) << w;
        lexicon[w] = pron;
      }
    }
    for (const auto& split : kSplits) {
      for (const auto& [utt, ids] : read_table(d / split / "ali.txt"))
        for (const auto& id : ids) {
          const int v = std::stoi(id);
          ASSERT_GE(v, 0);
          ASSERT_LT(v, int(names.size())) << utt;
          used.insert(names[size_t(v)]);
        }
      for (const auto& [utt, words] : read_table(d / split / "text"))
        for (const auto& w : words) EXPECT_TRUE(lexicon.count(w)) << lang << ": '" << w << "' has no lexicon entry";
    }
    EXPECT_GT(used.size(), 5u);
  }
}

TEST_F(SynthCorpus, SpeakersAreDisjointAcrossSplits) {
  for (const auto& lang : kLangs) {
    std::map<std::string, std::string> split_of;
    for (const auto& split : kSplits) {
      auto spk2utt = read_table(root_ / "data" / lang / split / "spk2utt");
      EXPECT_EQ(spk2utt.size(), 1u) << lang << " " << split;  // 3 speakers: 1 train, 1 dev, 1 test
      for (const auto& [utt, spk] : read_table(root_ / "data" / lang / split / "utt2spk")) {
        auto [it, fresh] = split_of.emplace(spk[0], split);
        EXPECT_TRUE(fresh || it->second == split) << spk[0] << " is in " << it->second << " and " << split;
      }
    }
    EXPECT_EQ(split_of.size(), 3u);
  }
}

TEST_F(SynthCorpus, NoiseIsMixedAtTheRequestedSnr) {
  int noisy = 0, clean = 0;
  std::set<std::string> types;
  for (const auto& lang : kLangs)
    for (const auto& split : kSplits)
      for (const auto& [utt, rest] : read_table(root_ / "data" / lang / split / "utt2noise")) {
        ASSERT_EQ(rest.size(), 2u);
        const std::string spk = utt.substr(0, utt.rfind('-'));
        const auto mixed = load_samples((root_ / "wav" / lang / spk / (utt + ".wav")).string());
        const auto speech = load_samples((root_ / "wav_clean" / lang / spk / (utt + ".wav")).string());
        ASSERT_EQ(mixed.size(), speech.size());
        if (rest[0] == "none") {
          EXPECT_EQ(rest[1], "inf");
          EXPECT_TRUE(mixed == speech) << utt;
          clean++;
          continue;
        }
        types.insert(rest[0]);
        const double requested = std::stod(rest[1]);
        EXPECT_TRUE(kSnrs.count(requested)) << utt << " " << rest[1];
        EXPECT_NEAR(measure_snr_db(speech, mixed), requested, 0.5) << utt << " (" << rest[0] << ")";
        noisy++;
      }
  EXPECT_EQ(noisy + clean, 27);
  EXPECT_GT(noisy, 10);
  EXPECT_EQ(types.size(), 3u) << "white, pink and babble all drawn";
}

namespace {

std::vector<std::string> english_args(const fs::path& out, int seed) {
  return {"--out", out.string(), "--seed", std::to_string(seed), "--langs", "en", "--speakers-per-lang", "3",
          "--utts-per-speaker", "3", "--words-per-utt", "3-5", "--vocab-size", "400", "--snr-db", "10,inf",
          "--babble-pool", "2", "--quiet"};
}

// The tiny English corpus (3 speakers x 3 utterances).
using SynthEnglish = TinyCorpus<english_args, 3>;

}  // namespace

TEST_F(SynthEnglish, AlignmentsMatchFbankFramesAndUseManyPhones) {
  const fs::path d = root_ / "data" / "en";
  std::vector<std::string> names;
  auto phones = read_table(d / "phones.txt", &names);
  ASSERT_GE(names.size(), 30u) << "English phone set of the tiny corpus (43 with espeak-ng 1.51)";
  EXPECT_EQ(names[0], "sil");
  for (size_t i = 0; i < names.size(); i++) EXPECT_EQ(phones[names[i]][0], std::to_string(i));
  std::set<int> used;
  int checked = 0;
  for (const auto& split : kSplits) {
    auto wav = read_table(d / split / "wav.scp");
    auto ali = read_table(d / split / "ali.txt");
    ASSERT_EQ(wav.size(), 3u) << split;
    for (const auto& [utt, rest] : wav) {
      EXPECT_EQ(utt.rfind("en-s0", 0), 0u) << utt;
      auto [w, sr] = fw::audio::load(rest[0]);
      ASSERT_EQ(sr, 16000);
      ASSERT_TRUE(ali.count(utt)) << utt;
      EXPECT_EQ(fw::audio::kaldi::fbank(w * 32768.0).sizes()[0], int64_t(ali[utt].size())) << utt;
      EXPECT_EQ(ali[utt].front(), "0") << utt;
      EXPECT_EQ(ali[utt].back(), "0") << utt;
      for (const auto& id : ali[utt]) {
        const int v = std::stoi(id);
        ASSERT_GE(v, 0);
        ASSERT_LT(v, int(names.size())) << utt;
        used.insert(v);
      }
      checked++;
    }
  }
  EXPECT_EQ(checked, 9);
  EXPECT_GT(used.size(), 25u) << "distinct phones in the alignments";
  const std::string readme = slurp(root_ / "README.md");
  EXPECT_NE(readme.find("| English | en | - | en-us | hunspell en_US.dic (hunspell-en-us) |"), std::string::npos)
      << readme;
}

TEST_F(SynthEnglish, LexiconHoldsLowerCaseDictionaryWords) {
  const fs::path d = root_ / "data" / "en";
  std::vector<std::string> names;
  read_table(d / "phones.txt", &names);
  const std::set<std::string> phone_set(names.begin(), names.end());
  const auto dict = read_hunspell_words("/usr/share/hunspell/en_US.dic", "/usr/share/hunspell/en_US.aff", Script::kLatin);
  ASSERT_GT(dict.size(), 40000u);
  std::set<std::string> lexicon;
  std::ifstream f(d / "lexicon.txt");
  std::string line, w, p;
  while (std::getline(f, line)) {
    std::istringstream ls(line);
    ls >> w;
    lexicon.insert(w);
    EXPECT_TRUE(english_word(w)) << w;
    EXPECT_TRUE(std::binary_search(dict.begin(), dict.end(), w)) << w << " is not in hunspell-en-us";
    int n = 0;
    while (ls >> p) {
      EXPECT_TRUE(phone_set.count(p)) << w << ": " << p;
      EXPECT_NE(p, "sil");
      n++;
    }
    EXPECT_GT(n, 0) << w;
  }
  size_t words = 0;
  for (const auto& split : kSplits)
    for (const auto& [utt, ws] : read_table(d / split / "text")) {
      EXPECT_GE(ws.size(), 3u);
      EXPECT_LE(ws.size(), 5u);
      for (const auto& x : ws) EXPECT_TRUE(lexicon.count(x)) << "'" << x << "' has no lexicon entry";
      words += ws.size();
    }
  EXPECT_GE(words, 27u);
  EXPECT_GT(lexicon.size(), 10u);
}

TEST_F(SynthEnglish, SameSeedIsByteIdenticalOtherSeedDiffers) {
  TempDir tmp;
  const fs::path a = tmp.path / "corpus", b = tmp.path / "first", c = tmp.path / "other";
  ASSERT_EQ(run_tool(english_args(a, 3), tmp.path).code, 0);
  fs::rename(a, b);
  ASSERT_EQ(run_tool(english_args(a, 3), tmp.path).code, 0);
  const auto first = tree(b), second = tree(a);
  ASSERT_GT(first.size(), 20u);
  EXPECT_EQ(first.size(), second.size());
  for (const auto& [name, bytes] : first) {
    auto it = second.find(name);
    ASSERT_NE(it, second.end()) << name;
    EXPECT_TRUE(it->second == bytes) << name << " differs between two runs with the same seed";
  }
  // The fixture's corpus (same seed, another directory) has the same transcripts and alignments.
  const auto shared = tree(root_);
  for (const std::string& name : {"data/en/train/text", "data/en/test/ali.txt", "data/en/lexicon.txt",
                                  "data/en/phones.txt", "wav/en/en-s01/en-s01-u001.wav"})
    EXPECT_TRUE(shared.at(name) == first.at(name)) << name;
  ASSERT_EQ(run_tool(english_args(c, 4), tmp.path).code, 0);
  const auto other = tree(c);
  EXPECT_NE(other.at("data/en/train/text"), first.at("data/en/train/text"));
  EXPECT_NE(other.at("wav/en/en-s01/en-s01-u001.wav"), first.at("wav/en/en-s01/en-s01-u001.wav"));
}

TEST(SynthCli, HelpAndErrors) {
  TempDir tmp;
  Result r = run_tool({"--help"}, tmp.path);
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("usage: fw-synth-corpus"), std::string::npos);

  auto expect_error = [&](const std::vector<std::string>& args, const std::string& needle) {
    const Result e = run_tool(args, tmp.path);
    EXPECT_EQ(e.code, 2) << e.err;
    EXPECT_EQ(e.err.rfind("fw-synth-corpus: error: ", 0), 0u) << e.err;
    EXPECT_EQ(std::count(e.err.begin(), e.err.end(), '\n'), 1) << "one line: " << e.err;
    EXPECT_NE(e.err.find(needle), std::string::npos) << e.err;
  };
  const std::string out = (tmp.path / "out").string();
  expect_error({}, "--out DIR is required");
  expect_error({"--out", out, "--bogus"}, "unknown option '--bogus'");
  expect_error({"--out", out, "--langs", "kk,xx"}, "unknown language 'xx'");
  expect_error({"--out", out, "--speakers-per-lang", "2"}, "leaves no training speaker");
  expect_error({"--out", out, "--utts-per-speaker", "many"}, "expects an integer");
  expect_error({"--out", out, "--snr-db", "10,,20"}, "empty item");
  expect_error({"--out", out, "--noise-types", "brown"}, "unknown noise type 'brown'");
  expect_error({"--out", out, "--dict-dir", (tmp.path / "none").string()}, "install Debian package hunspell-kmr");
  expect_error({"--out", out, "--langs", "en", "--dict-dir", (tmp.path / "none").string()},
               "install Debian package hunspell-en-us");
  expect_error({"--out", out, "--espeak-data", (tmp.path / "none").string()}, "holds no espeak-ng-data");
  expect_error({"--out", out, "--words-per-utt", "5-2"}, "--words-per-utt");
  EXPECT_FALSE(fs::exists(out)) << "nothing is written before the options are checked";
  // A non-empty output directory needs --force.
  fs::create_directories(out);
  std::ofstream(fs::path(out) / "keep.txt") << "x";
  expect_error({"--out", out, "--langs", "tpi"}, "is not empty");
  r = run_tool({"--out", out, "--langs", "tpi", "--speakers-per-lang", "3", "--utts-per-speaker", "1", "--force",
                "--quiet", "--relative-paths"},
               tmp.path);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(fs::exists(fs::path(out) / "keep.txt")) << "--force removes only the tool's own outputs";
  auto wav = read_table(fs::path(out) / "data/tpi/train/wav.scp");
  ASSERT_EQ(wav.size(), 1u);
  EXPECT_EQ(wav.begin()->second[0], "wav/tpi/tpi-s01/tpi-s01-u001.wav");
}

TEST(SynthLib, RngIsTheStandardMt19937_64WithOwnDistributions) {
  Rng r(5489);  // the standard's check: the 10000th output of a default-seeded mt19937_64
  uint64_t v = 0;
  for (int i = 0; i < 10000; i++) v = r.next();
  EXPECT_EQ(v, 9981545732273789042ULL);

  Rng a(derive_seed(3, "x", 1)), b(derive_seed(3, "x", 1)), c(derive_seed(3, "x", 2));
  EXPECT_EQ(a.next(), b.next());
  EXPECT_NE(a.next(), c.next());
  Rng g(11);
  double sum = 0, sq = 0;
  std::vector<int> hist(5, 0);
  const int n = 200000;
  for (int i = 0; i < n; i++) {
    const double x = g.normal();
    sum += x;
    sq += x * x;
    const int64_t k = g.uniform_int(-2, 2);
    ASSERT_GE(k, -2);
    ASSERT_LE(k, 2);
    hist[size_t(k + 2)]++;
    const double u = g.uniform();
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0, 0.01);
  for (int h : hist) EXPECT_NEAR(double(h) / n, 0.2, 0.005);
}

TEST(SynthLib, MixAtSnrIsExact) {
  Rng r(1);
  std::vector<float> speech(16000);
  for (size_t i = 0; i < speech.size(); i++) speech[i] = float(0.1 * std::sin(0.05 * double(i)) * (i % 3000 < 2000));
  std::vector<std::vector<float>> pool = {white_noise(5000, r), pink_noise(7000, r)};
  const std::vector<std::vector<float>> noises = {white_noise(16000, r), pink_noise(16000, r),
                                                  babble_noise(16000, pool, 3, r)};
  EXPECT_NEAR(rms(noises[0]), 1.0, 0.02);  // white: unit variance
  EXPECT_NEAR(rms(noises[1]), 1.0, 1e-4);  // pink and babble: normalised to unit RMS
  EXPECT_NEAR(rms(noises[2]), 1.0, 1e-4);
  for (const auto& noise : noises) {
    for (double snr : {-5.0, 0.0, 7.5, 30.0}) {
      double gain = 0;
      const auto mixed = mix_at_snr(speech, noise, snr, &gain);
      EXPECT_GT(gain, 0.0);
      EXPECT_NEAR(measure_snr_db(speech, mixed), snr, 1e-3);
    }
  }
  EXPECT_THROW(mix_at_snr(speech, std::vector<float>(16000, 0.0f), 10.0), Error);
  EXPECT_THROW(mix_at_snr(speech, std::vector<float>(100, 1.0f), 10.0), Error);
  // Pink noise: more power below 1 kHz than above 4 kHz per Hz (1/f); white: flat-ish.
  auto band_power = [](const std::vector<float>& x, double f0, double f1) {
    double p = 0;
    for (double f = f0; f < f1; f += 50) {
      double re = 0, im = 0;
      for (size_t i = 0; i < 4096; i++) {
        re += x[i] * std::cos(2 * M_PI * f * double(i) / 16000.0);
        im += x[i] * std::sin(2 * M_PI * f * double(i) / 16000.0);
      }
      p += re * re + im * im;
    }
    return p;
  };
  const double pink_ratio = band_power(noises[1], 100, 1000) / band_power(noises[1], 4000, 4900);
  const double white_ratio = band_power(noises[0], 100, 1000) / band_power(noises[0], 4000, 4900);
  EXPECT_GT(pink_ratio, 5.0);
  EXPECT_LT(white_ratio, 2.0);
  EXPECT_GT(white_ratio, 0.5);
}

TEST(SynthLib, FramesMatchFbankAndLabelsTakeTheCentre) {
  for (int64_t n : {400, 401, 559, 560, 561, 16000, 16123}) {
    Rng r{uint64_t(n)};
    auto x = white_noise(size_t(n), r);
    const fw::Tensor w = fw::tensor(x).reshape({1, n}) * 1000.0;
    EXPECT_EQ(fw::audio::kaldi::fbank(w).sizes()[0], num_frames(n, 16000)) << n;
  }
  EXPECT_EQ(num_frames(399, 16000), 0);
  EXPECT_EQ(num_frames(0, 16000), 0);
  EXPECT_EQ(window_samples(8000), 200);
  EXPECT_EQ(shift_samples(22050), 220);
  // Centres at 199.5, 359.5, 519.5, 679.5 (16 kHz): label 1 from 300, 2 from 519.5, 3 from 600.
  const auto labels = frame_labels({{0, 0}, {300, 1}, {519.5, 2}, {600, 3}}, 880, 16000, 9);
  EXPECT_EQ(labels, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(frame_labels({{250, 5}}, 560, 16000, 9), (std::vector<int>{9, 5}));
}

TEST(SynthLib, WordListsAreCleaned) {
  std::u32string w;
  auto clean = [&](const std::string& s, Script sc) { return utf8_decode(s, w) && is_clean_word(w, sc); };
  EXPECT_TRUE(clean("žmogus", Script::kLatin));
  EXPECT_TRUE(clean("şev", Script::kLatin));
  EXPECT_FALSE(clean("Žmogus", Script::kLatin));  // upper case: proper nouns
  EXPECT_FALSE(clean("don't", Script::kLatin));
  EXPECT_FALSE(clean("a", Script::kLatin));
  EXPECT_FALSE(clean("abc1", Script::kLatin));
  EXPECT_TRUE(clean("қазақ", Script::kCyrillic));
  EXPECT_TRUE(clean("әліпби", Script::kCyrillic));
  EXPECT_FALSE(clean("Қазақ", Script::kCyrillic));
  EXPECT_FALSE(clean("kazak", Script::kCyrillic));
  EXPECT_TRUE(clean("అంకం", Script::kTelugu));
  EXPECT_FALSE(clean("ంక", Script::kTelugu));  // starts with a sign
  EXPECT_FALSE(clean("అం౧", Script::kTelugu));  // Telugu digit

  // A hunspell pair in ISO-8859-13 (Lithuanian's charset) with flags and a count line.
  TempDir tmp;
  std::ofstream(tmp.path / "x.aff") << "SET ISO8859-13\nTRY abc\n";
  // "žalias/AB", "Vilnius/X", "ąžuolas", "ąžuolas/C" (duplicate), "x1"
  std::ofstream(tmp.path / "x.dic", std::ios::binary) << "5\n\xfe" "alias/AB\nVilnius/X\n\xe0\xfeuolas\n\xe0\xfeuolas/C\nx1\n";
  const auto words = read_hunspell_words((tmp.path / "x.dic").string(), (tmp.path / "x.aff").string(), Script::kLatin);
  EXPECT_EQ(words, (std::vector<std::string>{"ąžuolas", "žalias"}));
  EXPECT_THROW(read_hunspell_words((tmp.path / "none.dic").string(), (tmp.path / "x.aff").string(), Script::kLatin),
               Error);

  const auto& tpi = tok_pisin_words();
  EXPECT_GT(tpi.size(), 200u);
  EXPECT_TRUE(std::is_sorted(tpi.begin(), tpi.end()));
  for (const auto& l : known_languages()) EXPECT_NO_THROW(find_language(l.id));
  EXPECT_THROW(find_language("fr"), Error);
  // English is known but not one of the default (Babel) languages.
  EXPECT_EQ(find_language("en").voice, "en-us");
  EXPECT_EQ(CorpusConfig().langs, (std::vector<std::string>{"ku", "kk", "te", "lt", "tpi", "ceb"}));

  // English words: a-z with a vowel letter, no Roman numerals of i/v/x.
  for (const char* w : {"thought", "mix", "civil", "rhythm", "dim", "lunchroom"}) EXPECT_TRUE(english_word(w)) << w;
  for (const char* w : {"bldg", "kg", "mph", "shh", "xiv", "ii", "vi", "xxxix", "don't", "Boston", "café", ""})
    EXPECT_FALSE(english_word(w)) << w;
}

// Slurs and profanity are never spoken (the transcripts are shown in logs and READMEs): the
// blocked words are rejected, dictionary words that merely share their first letters are kept,
// and every word that en_US.dic itself marks as not to be suggested (flag '!': its vulgar words)
// is rejected too.
TEST(SynthLib, EnglishSkipsSlursAndProfanity) {
  for (const char* w : {"fuck", "fuckhead", "shit", "shitty", "cunt", "nigger", "nigga", "niggard", "niggardliness",
                        "niggle", "niggling", "faggot", "fagged", "fag", "fagot", "whore", "whoreson", "slut",
                        "sluttish", "bitch", "bitchy", "bastard", "bastardize", "wank", "piss", "pissoir",
                        "motherfucker", "bullshit", "horseshit", "asshole", "cock", "cocksucker", "dick",
                        "dickhead", "prick", "pussy", "twat", "kike", "spic", "chink", "gook", "wop", "coon",
                        "kraut", "wetback", "negro", "ofay", "darky", "jew", "dyke", "homo", "retard",
                        "mongoloid", "piccaninny", "paleface", "blowjob"})
    EXPECT_FALSE(english_word(w)) << w;
  const char* kept[] = {"cockpit", "cocktail", "cockatoo", "dickens", "dicker", "spice", "chinkapin",
                        "coonskin", "assess", "titmouse", "prickle", "pussycat", "swank", "mishit",
                        "inspissate", "whorl", "sluice", "fagaceous", "nigrescent", "retardant", "homograph",
                        "bastion"};
  const auto dict = read_hunspell_words("/usr/share/hunspell/en_US.dic", "/usr/share/hunspell/en_US.aff", Script::kLatin);
  ASSERT_GT(dict.size(), 40000u);
  for (const char* w : kept) {
    EXPECT_TRUE(english_word(w)) << w;
    EXPECT_TRUE(std::binary_search(dict.begin(), dict.end(), std::string(w))) << w << " is not in hunspell-en-us";
  }
  std::ifstream f("/usr/share/hunspell/en_US.dic");
  std::string line;
  int marked = 0;
  while (std::getline(f, line)) {
    const size_t slash = line.find('/');
    if (slash == std::string::npos || line.find('!', slash) == std::string::npos) continue;
    marked++;
    EXPECT_FALSE(english_word(line.substr(0, slash))) << line;
  }
  EXPECT_GT(marked, 20);
}

TEST(SynthLib, EspeakVoicesAndPhonemeEvents) {
  Espeak& es = Espeak::get();
  EXPECT_EQ(es.sample_rate(), 22050);
  for (const auto& l : known_languages()) EXPECT_TRUE(es.has_voice(l.voice)) << l.voice;
  EXPECT_TRUE(es.has_voice("kk+m3"));
  EXPECT_TRUE(es.has_voice("en-us+f2"));
  EXPECT_FALSE(es.has_voice("kk+nosuchvariant"));
  EXPECT_FALSE(es.has_voice("tpi"));  // no Tok Pisin voice: hence the stand-in
  VoiceSettings v;
  v.voice = "lt";
  const Synthesis s = es.speak(v, "labas rytas.", {1, 7});
  ASSERT_GT(s.samples.size(), 10000u);
  EXPECT_EQ(s.end_sample, int64_t(s.samples.size()));
  std::vector<std::string> w0, w1;
  int64_t last = 0;
  for (const auto& p : s.phones) {
    EXPECT_GE(p.sample, last);
    last = p.sample;
    if (p.word == 0) w0.push_back(p.name);
    if (p.word == 1) w1.push_back(p.name);
  }
  EXPECT_EQ(w0, (std::vector<std::string>{"l", "a", "b", "a", "s"}));
  ASSERT_FALSE(w1.empty());
  EXPECT_EQ(w1.back(), "s");
  EXPECT_EQ(s.phones.back().name[0], '_') << "ends with a pause phoneme";
}
