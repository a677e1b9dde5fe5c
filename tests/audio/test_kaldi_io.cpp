// fw::audio::kaldi_io: Kaldi archives and script files (hand-built bytes compared byte for byte,
// round trips of every form, offsets, malformed and hostile input), data directories (validation
// errors, pipes, segments), alignments, add-deltas against an independent reference, CMVN.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "fw/audio.h"
#include "tests/audio/audio_fixture.h"

namespace fs = std::filesystem;
namespace kio = fw::audio::kaldi_io;
using fw::Tensor;
using fwtest::audio::error_of;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "fw_kaldi_io_XXXXXX").string();
    if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
    path_ = t;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }
  std::string str() const { return path_.string(); }
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
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void put(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), std::streamsize(bytes.size()));
}

// Kaldi's binary int32: size byte 4, then little-endian.
std::string i32(int32_t v) {
  uint32_t u = uint32_t(v);
  return std::string(1, '\4') + char(u & 0xff) + char((u >> 8) & 0xff) + char((u >> 16) & 0xff) + char(u >> 24);
}
std::string f32(float v) {
  std::string s(4, '\0');
  std::memcpy(s.data(), &v, 4);
  return s;
}
std::string f64(double v) {
  std::string s(8, '\0');
  std::memcpy(s.data(), &v, 8);
  return s;
}
const std::string kB("\0B", 2);

Tensor mat(std::vector<std::vector<double>> rows, fw::ScalarType dt = fw::kFloat) {
  const int64_t r = int64_t(rows.size()), c = rows.empty() ? 0 : int64_t(rows[0].size());
  Tensor t = fw::empty({r, c}, fw::kDouble);
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) t.data_ptr<double>()[i * c + j] = rows[size_t(i)][size_t(j)];
  return t.to(dt);
}

// Same shape, dtype and bits (NaN equal to NaN).
::testing::AssertionResult same(const Tensor& a, const Tensor& b) {
  if (a.scalar_type() != b.scalar_type())
    return ::testing::AssertionFailure() << "dtype " << a.scalar_type() << " vs " << b.scalar_type();
  if (a.sizes().vec() != b.sizes().vec()) return ::testing::AssertionFailure() << "sizes " << a.sizes() << " vs " << b.sizes();
  Tensor x = a.contiguous(), y = b.contiguous();
  if (std::memcmp(x.data_ptr(), y.data_ptr(), size_t(x.numel()) * fw::element_size(x.scalar_type())) != 0)
    return ::testing::AssertionFailure() << "values differ:\n" << a << "\nvs\n" << b;
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult contains(const std::string& msg, std::vector<std::string> parts) {
  for (const auto& p : parts)
    if (msg.find(p) == std::string::npos) return ::testing::AssertionFailure() << "no '" << p << "' in: " << msg;
  return ::testing::AssertionSuccess();
}

Tensor random_matrix(int64_t r, int64_t c, uint32_t seed, fw::ScalarType dt = fw::kFloat) {
  std::mt19937 g(seed);
  std::normal_distribution<double> n(0, 3);
  Tensor t = fw::empty({r, c}, fw::kDouble);
  for (int64_t i = 0; i < r * c; ++i) t.data_ptr<double>()[i] = n(g);
  return t.to(dt);
}

template <class Reader>
std::vector<std::pair<std::string, typename Reader::Value>> read_all(const std::string& spec) {
  std::vector<std::pair<std::string, typename Reader::Value>> out;
  for (Reader r(spec); !r.done(); r.next()) out.emplace_back(r.key(), r.value());
  return out;
}

}  // namespace

// ---- byte formats -----------------------------------------------------------------------------

// A binary float matrix object: "\0B" "FM " size-byte-4 rows, size-byte-4 cols, float32 rows.
TEST(KaldiIO, BinaryMatrixBytes) {
  Tensor m = mat({{1.5, -2, 0.25}, {4, 5e-30, -0.0}});
  std::string want = kB + "FM " + i32(2) + i32(3);
  for (double v : {1.5, -2.0, 0.25, 4.0, 5e-30, -0.0}) want += f32(float(v));
  EXPECT_EQ(kio::matrix_bytes(m), want);
  // int64 and float16 inputs are written as float32 too.
  EXPECT_EQ(kio::matrix_bytes(m.to(fw::kDouble).to(fw::kFloat)), want);
  std::string want_d = kB + "DM " + i32(2) + i32(3);
  for (double v : {1.5, -2.0, 0.25, 4.0, 5e-30, -0.0}) want_d += f64(double(float(v)));
  EXPECT_EQ(kio::matrix_bytes(m.to(fw::kDouble)), want_d);
  EXPECT_EQ(kio::matrix_bytes(fw::empty({0, 0})), kB + "FM " + i32(0) + i32(0));
  EXPECT_TRUE(contains(error_of([] { kio::matrix_bytes(fw::zeros({3})); }), {"2-D", "1-D"}));
}

// Text matrices as Kaldi's Matrix::Write prints them: " [\n  a b \n  c d ]\n".
TEST(KaldiIO, TextMatrixBytes) {
  EXPECT_EQ(kio::matrix_bytes(mat({{1, 2.5}, {-3, 0.1}}), false), " [\n  1 2.5 \n  -3 0.1 ]\n");
  EXPECT_EQ(kio::matrix_bytes(fw::empty({0, 0}), false), " [ ]\n");
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(kio::matrix_bytes(mat({{inf, -inf, std::nan("")}}), false), " [\n  inf -inf nan ]\n");
}

// Alignments: Kaldi's Int32VectorWriter (BasicVectorHolder<int32>): "\0B", size-byte-4 count,
// then every element with its own size byte 4; text "1 2 3 \n".
TEST(KaldiIO, Int32VectorBytes) {
  std::vector<int32_t> v{7, -1, 0, 2147483647, -2147483647 - 1};
  std::string want = kB + i32(5) + i32(7) + i32(-1) + i32(0) + i32(2147483647) + i32(-2147483647 - 1);
  EXPECT_EQ(want.size(), 2u + 5u * 6u);
  EXPECT_EQ(kio::int32_vector_bytes(v), want);
  EXPECT_EQ(kio::int32_vector_bytes({}), kB + i32(0));
  EXPECT_EQ(kio::int32_vector_bytes({3, 1, 4}, false), "3 1 4 \n");
  EXPECT_EQ(kio::int32_vector_bytes({}, false), "\n");
}

// A whole binary ark,scp pair, byte for byte, and its script file's offsets.
TEST(KaldiIO, ArchiveAndScriptBytes) {
  TempDir tmp;
  const std::string ark = tmp / "m.ark", scp = tmp / "m.scp";
  {
    kio::MatrixWriter w("ark,scp:" + ark + "," + scp);
    w.write("utt1", mat({{1, 2}}));
    w.write("u2", mat({{3}, {4}}));
    w.close();
  }
  const std::string e1 = "utt1 " + kB + "FM " + i32(1) + i32(2) + f32(1) + f32(2);
  const std::string e2 = "u2 " + kB + "FM " + i32(2) + i32(1) + f32(3) + f32(4);
  EXPECT_EQ(slurp(ark), e1 + e2);
  EXPECT_EQ(slurp(scp), "utt1 " + ark + ":5\nu2 " + ark + ":" + std::to_string(e1.size() + 3) + "\n");
  {
    kio::Int32VectorWriter w("ark:" + (tmp / "a.ark"));
    w.write("x", {1, 2});
    w.close();
  }
  EXPECT_EQ(slurp(tmp / "a.ark"), "x " + kB + i32(2) + i32(1) + i32(2));
  {
    kio::Int32VectorWriter w("ark,t:" + (tmp / "a.txt"));
    w.write("x", {1, 2});
    w.write("empty", {});
    w.close();
  }
  EXPECT_EQ(slurp(tmp / "a.txt"), "x 1 2 \nempty \n");
  {
    kio::MatrixWriter w("ark,t:" + (tmp / "m.txt"));
    w.write("k", mat({{1, 2}, {3, 4}}));
    w.close();
  }
  EXPECT_EQ(slurp(tmp / "m.txt"), "k  [\n  1 2 \n  3 4 ]\n");
}

// Archives written by kaldiio (tests/fixtures/audio/kaldi_io/gen_kaldi_io.py), an implementation
// of Kaldi's formats independent of fw: fw reads them and writes the same bytes.
namespace {
const std::string kKio = FW_AUDIO_FIXTURE_DIR "/kaldi_io/";

Tensor formula(int64_t k, int64_t rows, int64_t cols, fw::ScalarType dt) {
  Tensor t = fw::empty({rows, cols}, fw::kDouble);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) t.data_ptr<double>()[i * cols + j] = double(7 * i + 3 * j - 5 + 11 * k) / 8.0;
  return t.to(dt);
}

// Runs with the working directory set to dir (scp files hold paths relative to it, as in Kaldi).
class InDir {
 public:
  explicit InDir(const std::string& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~InDir() { fs::current_path(old_); }

 private:
  fs::path old_;
};

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size())) s.replace(p, from.size(), to);
  return s;
}
}  // namespace

TEST(KaldiIO, KaldiioFixtures) {
  const std::vector<std::tuple<std::string, int64_t, int64_t>> feats = {{"utt1", 5, 3}, {"utt2", 1, 3}, {"utt3", 4, 3}};
  const std::map<std::string, std::vector<int32_t>> alis = {
      {"utt1", {3, 3, 3, 7, 7}}, {"utt2", {1}}, {"utt3", {2, 2, -1, 2147483647}}};
  for (const std::string spec : {"ark:" + kKio + "feats.ark", "ark:" + kKio + "feats_text.ark", std::string("scp:feats.scp")}) {
    SCOPED_TRACE(spec);
    InDir in(kKio);
    auto got = read_all<kio::SequentialMatrixReader>(spec);
    ASSERT_EQ(got.size(), 3u);
    for (size_t k = 0; k < 3; ++k) {
      auto [utt, r, c] = feats[k];
      EXPECT_EQ(got[k].first, utt);
      EXPECT_TRUE(same(got[k].second, formula(int64_t(k), r, c, fw::kFloat)));
    }
    kio::RandomAccessMatrixReader ra(spec);
    EXPECT_TRUE(same(ra.value("utt3"), formula(2, 4, 3, fw::kFloat)));
  }
  kio::RandomAccessDoubleMatrixReader cmvn("ark:" + kKio + "cmvn.ark");
  EXPECT_TRUE(same(cmvn.value("spk2"), formula(1, 2, 4, fw::kDouble)));
  {
    InDir in(kKio);
    EXPECT_EQ(kio::read_alignments("scp:ali.scp"), alis);
  }
  EXPECT_EQ(kio::read_alignments(kKio + "ali.ark"), alis);

  // fw writes the same binary bytes and script files.
  TempDir tmp;
  {
    kio::MatrixWriter w("ark,scp:" + (tmp / "feats.ark") + "," + (tmp / "feats.scp"));
    for (size_t k = 0; k < 3; ++k) {
      auto [utt, r, c] = feats[k];
      w.write(utt, formula(int64_t(k), r, c, fw::kFloat));
    }
    w.close();
    kio::DoubleMatrixWriter d("ark:" + (tmp / "cmvn.ark"));
    d.write("spk1", formula(0, 2, 4, fw::kDouble));
    d.write("spk2", formula(1, 2, 4, fw::kDouble));
    d.close();
    kio::Int32VectorWriter a("ark,scp:" + (tmp / "ali.ark") + "," + (tmp / "ali.scp"));
    for (auto& [u, v] : alis) a.write(u, v);
    a.close();
  }
  for (const std::string f : {"feats.ark", "cmvn.ark", "ali.ark"}) EXPECT_EQ(slurp(tmp / f), slurp(kKio + f)) << f;
  for (const std::string f : {"feats.scp", "ali.scp"})
    EXPECT_EQ(replace_all(slurp(tmp / f), tmp.str() + "/", ""), slurp(kKio + f)) << f;
}

// ---- round trips --------------------------------------------------------------------------------

TEST(KaldiIO, MatrixRoundTripEveryForm) {
  TempDir tmp;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::pair<std::string, Tensor>> data = {
      {"a", random_matrix(7, 13, 1)},
      {"b", mat({{inf, -inf, std::nan(""), 1e-40, -3.4e38, 0.1}})},
      {"c", fw::empty({0, 0})},
      {"d", random_matrix(1, 1, 2)},
  };
  for (bool text : {false, true}) {
    for (bool with_scp : {false, true}) {
      for (bool dbl : {false, true}) {
        const std::string tag = std::string(text ? "t" : "b") + (with_scp ? "s" : "") + (dbl ? "d" : "f");
        const std::string ark = tmp / (tag + ".ark"), scp = tmp / (tag + ".scp");
        std::string spec = std::string("ark") + (with_scp ? ",scp" : "") + (text ? ",t" : "") + ":" + ark +
                           (with_scp ? "," + scp : "");
        const fw::ScalarType dt = dbl ? fw::kDouble : fw::kFloat;
        if (dbl) {
          kio::DoubleMatrixWriter w(spec);
          for (auto& [k, m] : data) w.write(k, m.to(fw::kDouble));
          w.close();
        } else {
          kio::MatrixWriter w(spec);
          for (auto& [k, m] : data) w.write(k, m);
          w.close();
        }
        std::vector<std::string> specs{"ark:" + ark};
        if (with_scp) specs.push_back("scp:" + scp);
        for (const std::string& rs : specs) {
          SCOPED_TRACE(tag + " " + rs);
          std::vector<std::pair<std::string, Tensor>> got;
          if (dbl) {
            for (auto& kv : read_all<kio::SequentialDoubleMatrixReader>(rs)) got.push_back(kv);
          } else {
            for (auto& kv : read_all<kio::SequentialMatrixReader>(rs)) got.push_back(kv);
          }
          ASSERT_EQ(got.size(), data.size());
          for (size_t i = 0; i < data.size(); ++i) {
            EXPECT_EQ(got[i].first, data[i].first);
            EXPECT_TRUE(same(got[i].second, data[i].second.to(dt))) << data[i].first;
          }
          kio::RandomAccessMatrixReader ra(rs);  // float reader over either dtype
          EXPECT_EQ(ra.keys(), (std::vector<std::string>{"a", "b", "c", "d"}));
          EXPECT_TRUE(ra.has_key("c"));
          EXPECT_FALSE(ra.has_key("zz"));
          for (const std::string k : {"d", "a", "b", "a"})
            EXPECT_TRUE(same(ra.value(k), data[size_t(k[0] - 'a')].second.to(dt).to(fw::kFloat))) << k;
          EXPECT_TRUE(contains(error_of([&] { ra.value("zz"); }), {"No key", "zz"}));
          auto all = kio::read_matrices(rs, dt);
          EXPECT_EQ(all.size(), 4u);
          EXPECT_TRUE(same(all.at("a"), data[0].second.to(dt)));
        }
      }
    }
  }
}

TEST(KaldiIO, Int32VectorRoundTripEveryForm) {
  TempDir tmp;
  std::vector<std::pair<std::string, std::vector<int32_t>>> data = {
      {"u1", {1, 1, 1, 5, 5, 9}}, {"u2", {}}, {"u3", {-7, 2147483647, -2147483647 - 1}}};
  for (const std::string flags : {"ark", "ark,t", "ark,scp", "ark,scp,t", "ark,b,scp,f"}) {
    const bool with_scp = flags.find("scp") != std::string::npos;
    std::string name = flags;
    std::replace(name.begin(), name.end(), ',', '_');  // a comma would split ark,scp:A,S
    const std::string ark = tmp / (name + ".ark"), scp = tmp / (name + ".scp");
    {
      kio::Int32VectorWriter w(flags + ":" + ark + (with_scp ? "," + scp : ""));
      for (auto& [k, v] : data) w.write(k, v);
      w.close();
    }
    std::vector<std::string> specs{"ark:" + ark, "ark,s,cs:" + ark};
    if (with_scp) specs.push_back("scp:" + scp);
    for (const auto& rs : specs) {
      SCOPED_TRACE(rs);
      auto got = read_all<kio::SequentialInt32VectorReader>(rs);
      EXPECT_EQ(got, data);
      kio::RandomAccessInt32VectorReader ra(rs);
      EXPECT_EQ(ra.value("u3"), data[2].second);
      EXPECT_EQ(ra.value("u2"), data[1].second);
      EXPECT_EQ(ra.size(), 3u);
    }
  }
}

// Entries read by "path:offset" (and a single-object file by plain path), as scp lines do.
TEST(KaldiIO, ScpOffsetReads) {
  TempDir tmp;
  const std::string ark = tmp / "f.ark", scp = tmp / "f.scp";
  Tensor a = random_matrix(4, 3, 5), b = random_matrix(2, 6, 6);
  {
    kio::MatrixWriter w("ark,scp:" + ark + "," + scp);
    w.write("a", a);
    w.write("b", b);
    w.close();
  }
  std::ifstream s(scp);
  std::string key, rx;
  std::map<std::string, std::string> where;
  while (s >> key >> rx) where[key] = rx;
  EXPECT_EQ(where.at("a"), ark + ":2");
  EXPECT_TRUE(same(kio::read_matrix(where.at("b")), b));
  EXPECT_TRUE(same(kio::read_matrix(where.at("a"), fw::kDouble), a.to(fw::kDouble)));
  // The sequential reader reports the same offsets.
  std::vector<int64_t> offs;
  for (kio::SequentialMatrixReader r("ark:" + ark); !r.done(); r.next()) offs.push_back(r.offset());
  EXPECT_EQ(ark + ":" + std::to_string(offs[1]), where.at("b"));
  // Single-object files (copy-matrix style), binary and text.
  kio::write_matrix(tmp / "one.mat", b);
  EXPECT_EQ(slurp(tmp / "one.mat"), kio::matrix_bytes(b));
  EXPECT_TRUE(same(kio::read_matrix(tmp / "one.mat"), b));
  kio::write_matrix(tmp / "one.txt", b, false);
  EXPECT_TRUE(same(kio::read_matrix(tmp / "one.txt"), b));
  // Pipes and stdin-like sources.
  EXPECT_TRUE(same(kio::read_matrix("cat " + (tmp / "one.mat") + " |"), b));
  // An int32 vector by offset.
  put(tmp / "v.ark", "k " + kB + i32(2) + i32(4) + i32(5) + "j " + kB + i32(1) + i32(9));
  EXPECT_EQ(kio::read_int32_vector(tmp / "v.ark:21"), (std::vector<int32_t>{9}));
  EXPECT_EQ(kio::read_int32_vector(tmp / "v.ark:2"), (std::vector<int32_t>{4, 5}));
  // Offsets that do not point at an object.
  EXPECT_TRUE(contains(error_of([&] { kio::read_matrix(ark + ":99999"); }), {"beyond the end", "f.ark"}));
  EXPECT_TRUE(contains(error_of([&] { kio::read_matrix(ark + ":3"); }), {"Corrupt", "byte 3"}));
  const std::string end = ark + ":" + std::to_string(fs::file_size(ark));
  EXPECT_TRUE(contains(error_of([&] { kio::read_matrix(end); }), {"at the end of"}));
  EXPECT_TRUE(contains(error_of([&] { kio::read_matrix(ark + ":2[0:1]"); }), {"Range specifiers", "not supported"}));
  EXPECT_TRUE(contains(error_of([&] { kio::read_matrix(tmp / "missing.ark:0"); }), {"Failed to open", "missing.ark"}));
}

TEST(KaldiIO, PipesAndCommands) {
  TempDir tmp;
  const std::string ark = tmp / "p.ark";
  Tensor a = random_matrix(3, 2, 9);
  {
    kio::MatrixWriter w("ark:| cat > " + ark);  // output pipe
    w.write("x", a);
    w.write("y", a * 2);
    w.close();
  }
  auto got = read_all<kio::SequentialMatrixReader>("ark:cat " + ark + " |");
  ASSERT_EQ(got.size(), 2u);
  EXPECT_TRUE(same(got[1].second, a * 2));
  kio::RandomAccessMatrixReader ra("ark:cat " + ark + " |");  // held in memory
  EXPECT_TRUE(same(ra.value("x"), a));
  // A failing command is an error naming it and its status, also after complete output.
  EXPECT_TRUE(contains(error_of([&] { read_all<kio::SequentialMatrixReader>("ark:cat " + ark + "; exit 3 |"); }),
                       {"exited with status 3"}));
  EXPECT_TRUE(contains(error_of([&] {
                         kio::MatrixWriter w("ark:| cat > /dev/null; exit 4");
                         w.write("x", a);
                         w.close();
                       }),
                       {"exited with status 4"}));
  // A command that stops reading: EPIPE as an error, not a SIGPIPE ending the process.
  EXPECT_TRUE(contains(error_of([&] {
                         kio::MatrixWriter w("ark:| true");
                         for (int i = 0; i < 8; ++i) w.write("k" + std::to_string(i), fw::zeros({256, 256}));
                         w.close();
                       }),
                       {"Failed to write", "true", "Broken pipe"}));
  // A script file can also come from a command, and list command entries.
  kio::write_matrix(tmp / "single.mat", a);
  put(tmp / "c.scp", "z cat " + (tmp / "single.mat") + " |\n");
  EXPECT_TRUE(same(kio::read_matrices("scp:cat " + (tmp / "c.scp") + " |").at("z"), a));
}

// ---- specifiers and writers ---------------------------------------------------------------------

TEST(KaldiIO, Specifiers) {
  auto r = kio::parse_rspecifier("ark,s,cs:foo.ark");
  EXPECT_EQ(r.kind, kio::ReadSpecifier::Archive);
  EXPECT_EQ(r.path, "foo.ark");
  r = kio::parse_rspecifier("scp,p:gunzip -c x.gz |");
  EXPECT_EQ(r.kind, kio::ReadSpecifier::Script);
  EXPECT_EQ(r.path, "gunzip -c x.gz |");
  auto w = kio::parse_wspecifier("ark,scp,t:a.ark,b.scp");
  EXPECT_EQ(w.ark, "a.ark");
  EXPECT_EQ(w.scp, "b.scp");
  EXPECT_FALSE(w.binary);
  w = kio::parse_wspecifier("scp,ark,f:a.ark,b.scp");
  EXPECT_TRUE(w.binary);
  w = kio::parse_wspecifier("ark:| gzip -c > x.gz");
  EXPECT_EQ(w.ark, "| gzip -c > x.gz");
  for (const std::string bad : {"foo.ark", "ark", "ark,scp:foo.ark", "scp:x.scp", "ark,q:x", "ark,scp:-,x.scp",
                                "ark:", "ark,scp:a.ark,", "ark,scp:,b.scp"})
    EXPECT_TRUE(contains(error_of([&] { kio::parse_wspecifier(bad); }), {"[kaldi_io::parse_wspecifier]"})) << bad;
  for (const std::string bad : {"foo.ark", "ark,scp:x", "arc:x", "ark:", "ark,zz:x"})
    EXPECT_TRUE(contains(error_of([&] { kio::parse_rspecifier(bad); }), {"[kaldi_io::parse_rspecifier]"})) << bad;
}

// Writers replace files atomically: nothing appears before close(), an abandoned writer leaves
// the old file and no temporaries, invalid keys are refused.
TEST(KaldiIO, WriterAtomicity) {
  TempDir tmp;
  const std::string ark = tmp / "w.ark", scp = tmp / "w.scp";
  put(ark, "old");
  {
    kio::MatrixWriter w("ark,scp:" + ark + "," + scp);
    w.write("a", mat({{1}}));
    EXPECT_EQ(slurp(ark), "old");
    EXPECT_FALSE(fs::exists(scp));
    // destroyed without close()
  }
  EXPECT_EQ(slurp(ark), "old");
  EXPECT_EQ(tmp.entries(), (std::vector<std::string>{"w.ark"}));
  kio::MatrixWriter w("ark:" + ark);
  EXPECT_TRUE(contains(error_of([&] { w.write("two words", mat({{1}})); }), {"Invalid key", "two words"}));
  EXPECT_TRUE(contains(error_of([&] { w.write("", mat({{1}})); }), {"Empty key"}));
  EXPECT_TRUE(contains(error_of([&] { w.write("k", fw::zeros({2, 2, 2})); }), {"2-D"}));
  w.write("k", mat({{2}}));
  w.close();
  w.close();  // idempotent
  EXPECT_TRUE(contains(error_of([&] { w.write("z", mat({{1}})); }), {"after close"}));
  EXPECT_EQ(kio::read_matrices("ark:" + ark).size(), 1u);
  EXPECT_TRUE(contains(error_of([&] { kio::MatrixWriter x("ark:" + (tmp / "no/such/dir.ark")); }),
                       {"Cannot write", "dir.ark"}));
  EXPECT_EQ(tmp.entries(), (std::vector<std::string>{"w.ark"}));
}

// ---- malformed archives --------------------------------------------------------------------------

TEST(KaldiIO, MalformedArchives) {
  TempDir tmp;
  const std::string good = "a " + kB + "FM " + i32(1) + i32(2) + f32(1) + f32(2);
  struct Bad {
    std::string name, bytes;
    std::vector<std::string> says;
  };
  const std::vector<Bad> mats = {
      {"truncated data", good.substr(0, good.size() - 3), {"Truncated", "needs 8 bytes", "entry \"a\""}},
      {"truncated header", "a " + kB + "FM " + i32(1).substr(0, 3), {"Truncated", "int32"}},
      {"header cut in token", "a " + kB + "F", {"Truncated", "type token"}},
      {"bad token", "a " + kB + "XM " + i32(1) + i32(1) + f32(1), {"expected the token FM or DM", "\"XM\""}},
      {"compressed", "a " + kB + "CM2 " + std::string(40, 'x'), {"Compressed", "CM2", "not supported"}},
      {"wrong size byte", "a " + kB + "FM " + std::string(1, '\x08') + std::string(4, '\0') + i32(1),
       {"size byte 4", "byte 0x08"}},
      {"big endian", "a " + kB + "FM " + std::string(1, char(-4)) + std::string(4, '\0') + i32(1),
       {"Big-endian", "-4"}},
      {"huge sizes", "a " + kB + "FM " + i32(2147483647) + i32(2147483647) + f32(1), {"implausible size"}},
      {"large sizes", "a " + kB + "DM " + i32(1 << 20) + i32(1 << 20) + f64(1), {"Truncated", "needs", "bytes but only"}},
      {"negative rows", "a " + kB + "FM " + i32(-1) + i32(2), {"negative size -1"}},
      {"byte 0 without B", "a " + std::string(1, '\0') + "C", {"not followed by 'B'"}},
      {"key without object", "lonely", {"not followed by an object"}},
      {"binary junk key", std::string("\x01\x02\x03 ", 4), {"in the key", "not a Kaldi archive"}},
      {"text bad number", "a  [\n  1 x2 ]\n", {"expected a number", "\"x2\""}},
      {"text ragged", "a  [\n  1 2 \n 3 ]\n", {"row 1 has 1 values but row 0 has 2"}},
      {"text unterminated", "a  [\n  1 2 \n", {"end of file before \"]\""}},
      {"text no bracket", "a  1 2 ]\n", {"expected \"[\""}},
      {"int vector in matrix table", "a " + kB + i32(1) + i32(1), {"holds an int32 vector"}},
  };
  for (const auto& b : mats) {
    const std::string p = tmp / "bad.ark";
    put(p, b.bytes);
    std::string e = error_of([&] { read_all<kio::SequentialMatrixReader>("ark:" + p); });
    EXPECT_TRUE(contains(e, b.says)) << b.name;
    EXPECT_TRUE(contains(e, {"bad.ark"})) << b.name;
    // The same bytes through a pipe (unknown length): still an error, no huge allocation.
    std::string e2 = error_of([&] { read_all<kio::SequentialMatrixReader>("ark:cat " + p + " |"); });
    EXPECT_NE(e2, "no error") << b.name;
    EXPECT_NE(error_of([&] { kio::RandomAccessMatrixReader r("ark:" + p); }), "no error") << b.name;
  }
  const std::vector<Bad> vecs = {
      {"negative length", "u " + kB + i32(-5), {"negative length -5"}},
      {"huge length", "u " + kB + i32(2147483647) + i32(1), {"needs", "bytes but only"}},
      {"element size byte", "u " + kB + i32(2) + i32(1) + std::string(1, '\x02') + std::string(4, '\1'),
       {"size byte 4", "0x02"}},
      {"truncated element", "u " + kB + i32(2) + i32(1) + i32(2).substr(0, 2), {"Truncated"}},
      {"text not a number", "u 1 2 three\n", {"element 2", "\"three\""}},
      {"text out of range", "u 1 99999999999\n", {"not an int32"}},
      {"matrix in vector table", "u " + kB + "FM " + i32(1) + i32(1) + f32(1), {"holds a matrix"}},
  };
  for (const auto& b : vecs) {
    const std::string p = tmp / "badv.ark";
    put(p, b.bytes);
    EXPECT_TRUE(contains(error_of([&] { read_all<kio::SequentialInt32VectorReader>("ark:" + p); }), b.says)) << b.name;
    EXPECT_NE(error_of([&] { read_all<kio::SequentialInt32VectorReader>("ark:cat " + p + " |"); }), "no error")
        << b.name;
  }
  // Duplicate keys in random access and whole-table reads.
  put(tmp / "dup.ark", good + good);
  EXPECT_TRUE(contains(error_of([&] { kio::RandomAccessMatrixReader r("ark:" + (tmp / "dup.ark")); }),
                       {"Duplicate key", "\"a\""}));
  EXPECT_TRUE(contains(error_of([&] { kio::read_matrices("ark:" + (tmp / "dup.ark")); }), {"Duplicate key"}));
  put(tmp / "dup.scp", "a x:1\nb y\na z\n");
  EXPECT_TRUE(contains(error_of([&] { kio::RandomAccessMatrixReader r("scp:" + (tmp / "dup.scp")); }),
                       {"Duplicate key", "lines 1 and 3"}));
  put(tmp / "bad.scp", "a " + (tmp / "nothere.ark") + ":0\n");
  EXPECT_TRUE(contains(error_of([&] { kio::read_matrices("scp:" + (tmp / "bad.scp")); }),
                       {"nothere.ark", "bad.scp", "line 1"}));
  put(tmp / "nokey.scp", "justakey\n");
  EXPECT_TRUE(contains(error_of([&] { kio::read_matrices("scp:" + (tmp / "nokey.scp")); }), {"line 1", "key rxfilename"}));
}

// Every prefix of a valid archive either reads as the entries it holds completely or throws
// fw::Error; nothing crashes (run under ASan for the full effect).
TEST(KaldiIO, TruncatedAtEveryByte) {
  TempDir tmp;
  const std::string p = tmp / "t.ark";
  {
    kio::MatrixWriter w("ark:" + p);
    w.write("one", random_matrix(2, 3, 3));
    w.write("two", fw::empty({0, 0}));
    w.close();
  }
  const std::string bytes = slurp(p);
  std::string vbytes = "x " + kio::int32_vector_bytes({1, 2, 3}) + "y " + kio::int32_vector_bytes({}) + "z 4 5\n";
  const size_t first_entry = bytes.find("two");
  for (size_t n = 0; n < bytes.size(); ++n) {
    put(tmp / "cut.ark", bytes.substr(0, n));
    size_t entries = 0;
    std::string e = error_of([&] { entries = read_all<kio::SequentialMatrixReader>("ark:" + (tmp / "cut.ark")).size(); });
    if (e == "no error") EXPECT_TRUE(n == 0 || n == first_entry) << n << " bytes gave " << entries << " entries";
    else EXPECT_NE(n, first_entry) << e;
  }
  for (size_t n = 0; n < vbytes.size(); ++n) {
    put(tmp / "cutv.ark", vbytes.substr(0, n));
    (void)error_of([&] { read_all<kio::SequentialInt32VectorReader>("ark:" + (tmp / "cutv.ark")); });
  }
  // Random byte flips: errors or values, never a crash.
  std::mt19937 g(123);
  for (int it = 0; it < 300; ++it) {
    std::string b = bytes;
    for (int k = 0; k < 3; ++k) b[g() % b.size()] = char(g());
    put(tmp / "flip.ark", b);
    (void)error_of([&] { read_all<kio::SequentialMatrixReader>("ark:" + (tmp / "flip.ark")); });
    (void)error_of([&] { read_all<kio::SequentialInt32VectorReader>("ark:" + (tmp / "flip.ark")); });
  }
}

// ---- alignments ----------------------------------------------------------------------------------

TEST(KaldiIO, Alignments) {
  TempDir tmp;
  // ali-to-pdf ... ark,t:- output, as a plain text file.
  put(tmp / "ali.txt", "utt1 3 3 3 7 7\nutt2 1 2\n");
  auto ali = kio::read_alignments(tmp / "ali.txt");
  EXPECT_EQ(ali.at("utt1"), (std::vector<int32_t>{3, 3, 3, 7, 7}));
  EXPECT_EQ(ali.at("utt2"), (std::vector<int32_t>{1, 2}));
  {
    kio::Int32VectorWriter w("ark:" + (tmp / "ali.ark"));
    for (auto& [k, v] : ali) w.write(k, v);
    w.close();
  }
  EXPECT_EQ(kio::read_alignments("ark:" + (tmp / "ali.ark")), ali);
  EXPECT_EQ(kio::read_alignments(tmp / "ali.ark"), ali);
  EXPECT_EQ(kio::read_alignments("ark:gzip -c " + (tmp / "ali.ark") + " | gunzip -c |"), ali);

  std::map<std::string, Tensor> feats{{"utt1", fw::zeros({5, 13})}, {"utt2", fw::zeros({4, 13})}};
  // utt2 is 2 frames short: beyond tolerance 1, within tolerance 2 (padded with its last id).
  std::string e = error_of([&] { kio::check_alignment_lengths(feats, ali, 1); });
  EXPECT_TRUE(contains(e, {"\"utt2\"", "features have 4 frames", "alignment has 2 ids", "difference 2 > tolerance 1"}));
  auto fitted = kio::check_alignment_lengths(feats, ali, 2);
  EXPECT_EQ(fitted.at("utt2"), (std::vector<int32_t>{1, 2, 2, 2}));
  EXPECT_EQ(fitted.at("utt1"), ali.at("utt1"));
  // Longer alignments lose their last ids, explicitly.
  EXPECT_EQ(kio::check_alignment_length("u", 3, {1, 2, 3, 4}, 1), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_TRUE(contains(error_of([] { kio::check_alignment_length("u", 3, {1, 2, 3, 4}); }),
                       {"\"u\"", "3 frames", "4 ids"}));
  EXPECT_TRUE(contains(error_of([] { kio::check_alignment_length("u", 1, {}, 5); }), {"empty"}));
  feats["utt3"] = fw::zeros({2, 13});
  EXPECT_TRUE(contains(error_of([&] { kio::check_alignment_lengths(feats, ali, 5); }), {"\"utt3\"", "no alignment"}));
}

// ---- data directories ----------------------------------------------------------------------------

namespace {
// A 16 kHz int16 recording of n samples and `channels` channels (a sawtooth, exact in int16).
Tensor make_wav(const std::string& path, int64_t n, int64_t channels = 1, int seed = 0) {
  Tensor w = fw::empty({channels, n}, fw::kFloat);
  for (int64_t i = 0; i < channels * n; ++i)
    w.data_ptr<float>()[i] = float((i * (37 + seed) + seed * 11) % 200 - 100) / 32768.0f;
  fw::audio::SaveOptions o;
  o.encoding = "PCM_S";
  o.bits_per_sample = 16;
  fw::audio::save(path, w, 16000, o);
  return fw::audio::load(path).first;
}

struct DataDirFiles {
  std::map<std::string, std::string> files;
  void write(const TempDir& d) const {
    for (auto& [name, body] : files) put(d / name, body);
  }
};
}  // namespace

TEST(KaldiIO, DataDirWithSegmentsAndPipes) {
  TempDir tmp;
  fs::create_directory(tmp / "data");
  Tensor r1 = make_wav(tmp / "r1.wav", 48000, 1, 0);   // 3 s
  Tensor r2 = make_wav(tmp / "r2.wav", 32000, 2, 1);   // 2 s, stereo
  DataDirFiles f;
  f.files["data/wav.scp"] = "r1 " + (tmp / "r1.wav") + "\nr2 cat " + (tmp / "r2.wav") + " |\n";
  f.files["data/segments"] = "s1 r1 0.5 1.25\ns2 r1 2.0 -1\ns3 r2 0.1 0.2 1\ns4 r2 1.5 2.3\n";
  f.files["data/text"] = "s1 hello world\ns2 \ns3 x\n";
  f.files["data/utt2spk"] = "s1 A\ns2 A\ns3 B\ns4 B\n";
  f.files["data/reco2file_and_channel"] = "r1 f1 A\nr2 f2 B\n";
  f.write(tmp);
  kio::DataDir d = kio::load_data_dir(tmp / "data");
  EXPECT_EQ(d.utterances(), (std::vector<std::string>{"s1", "s2", "s3", "s4"}));
  EXPECT_TRUE(d.has_segments);
  EXPECT_TRUE(d.spk2utt_derived);
  EXPECT_EQ(d.spk2utt.at("A"), (std::vector<std::string>{"s1", "s2"}));
  EXPECT_EQ(d.text.at("s1"), "hello world");
  EXPECT_EQ(d.text.at("s2"), "");
  EXPECT_TRUE(d.wav.at("r2").is_command);
  EXPECT_EQ(d.reco2file_and_channel.at("r2").second, "B");
  ASSERT_EQ(d.warnings.size(), 1u);  // s4 has no transcript
  EXPECT_TRUE(contains(d.warnings[0], {"1 utterance(s) have no transcript", "\"s4\""}));

  auto [a1, sr1] = kio::load_utterance_audio(d, "s1");
  EXPECT_EQ(sr1, 16000);
  EXPECT_TRUE(same(a1, r1.slice(1, 8000, 20000).contiguous()));
  auto a2 = kio::load_utterance_audio(d, "s2").first;  // end -1: to the end
  EXPECT_TRUE(same(a2, r1.slice(1, 32000, 48000).contiguous()));
  auto a3 = kio::load_utterance_audio(d, "s3").first;  // pipe, channel 1
  EXPECT_TRUE(same(a3, r2.slice(0, 1, 2).slice(1, 1600, 3200).contiguous()));
  // s4 ends 0.3 s past r2 (within max_overshoot 0.5): cut to the end, all channels.
  auto a4 = kio::load_utterance_audio(d, "s4").first;
  EXPECT_TRUE(same(a4, r2.slice(1, 24000, 32000).contiguous()));
  kio::DataDirOptions strict;
  strict.max_overshoot = 0.1;
  EXPECT_TRUE(contains(error_of([&] { kio::load_utterance_audio(d, "s4", strict); }),
                       {"\"s4\"", "ends at 2.3 s", "max_overshoot 0.1"}));
  EXPECT_TRUE(contains(error_of([&] { kio::load_utterance_audio(d, "nope"); }), {"Unknown utterance", "nope"}));

  // Without segments: utterances are recordings; a pipe entry equals the file.
  fs::create_directory(tmp / "plain");
  put(tmp / "plain/wav.scp", "r1 " + (tmp / "r1.wav") + "\nr1p cat " + (tmp / "r1.wav") + " |\n");
  put(tmp / "plain/utt2spk", "r1 S\nr1p S\n");
  put(tmp / "plain/spk2utt", "S r1 r1p\n");
  kio::DataDir p = kio::load_data_dir(tmp / "plain");
  EXPECT_FALSE(p.spk2utt_derived);
  EXPECT_TRUE(p.warnings.empty());
  EXPECT_TRUE(same(kio::load_utterance_audio(p, "r1p").first, r1));
  EXPECT_TRUE(same(kio::load_utterance_audio(p, "r1").first, r1));

  // Relative wav.scp paths: Kaldi's rule (the working directory) or against wav_root.
  fs::create_directory(tmp / "rel");
  put(tmp / "rel/wav.scp", "r1 r1.wav\n");
  put(tmp / "rel/utt2spk", "r1 S\n");
  EXPECT_TRUE(contains(error_of([&] { kio::load_data_dir(tmp / "rel"); }), {"\"r1.wav\" does not exist", "working directory"}));
  kio::DataDirOptions rooted;
  rooted.wav_root = tmp.str();
  kio::DataDir rd = kio::load_data_dir(tmp / "rel", rooted);
  EXPECT_EQ(rd.wav.at("r1").rxfilename, tmp / "r1.wav");
  EXPECT_TRUE(same(kio::load_utterance_audio(rd, "r1").first, r1));
  {
    InDir in(tmp.str());
    EXPECT_TRUE(same(kio::load_utterance_audio(kio::load_data_dir("rel"), "r1").first, r1));
  }
}

TEST(KaldiIO, DataDirErrors) {
  TempDir tmp;
  make_wav(tmp / "r.wav", 16000);  // 1 s
  const std::string wav = "r " + (tmp / "r.wav") + "\n";
  struct Case {
    std::string name;
    std::map<std::string, std::string> files;
    std::vector<std::string> says;
  };
  const std::vector<Case> cases = {
      {"no wav.scp", {{"utt2spk", "r s\n"}}, {"has no wav.scp"}},
      {"no utt2spk", {{"wav.scp", wav}}, {"has no utt2spk"}},
      {"duplicate recording", {{"wav.scp", wav + "x " + (tmp / "r.wav") + "\n" + wav}, {"utt2spk", "r s\n"}},
       {"wav.scp:3", "duplicate key \"r\"", "first on line 1"}},
      {"missing wav file", {{"wav.scp", "r " + (tmp / "gone.wav") + "\n"}, {"utt2spk", "r s\n"}},
       {"wav.scp:1", "gone.wav", "does not exist"}},
      {"archive offset", {{"wav.scp", "r " + (tmp / "x.ark") + ":12\n"}, {"utt2spk", "r s\n"}},
       {"wav.scp:1", "points into an archive"}},
      {"empty wav entry", {{"wav.scp", "r\n"}, {"utt2spk", "r s\n"}}, {"wav.scp:1", "no file or command"}},
      {"text without audio", {{"wav.scp", wav}, {"utt2spk", "r s\n"}, {"text", "r hi\nq ho\n"}},
       {"text:2", "\"q\"", "has no audio (not in wav.scp)"}},
      {"utt2spk without audio", {{"wav.scp", wav}, {"utt2spk", "r s\nq s\n"}}, {"utt2spk:2", "\"q\"", "has no audio"}},
      {"utt2spk fields", {{"wav.scp", wav}, {"utt2spk", "r s t\n"}}, {"utt2spk:1", "utterance speaker", "3 fields"}},
      {"no speaker", {{"wav.scp", wav}, {"segments", "a r 0 0.5\nb r 0.5 1\n"}, {"utt2spk", "a s\n"}},
       {"segments:2", "\"b\"", "has no speaker in utt2spk"}},
      {"unknown speaker", {{"wav.scp", wav}, {"utt2spk", "r s\n"}, {"spk2utt", "s r\nzz r\n"}},
       {"spk2utt:2", "unknown speaker \"zz\""}},
      {"speaker mismatch",
       {{"wav.scp", wav}, {"segments", "a r 0 0.5\nb r 0.5 1\n"}, {"utt2spk", "a s\nb t\n"}, {"spk2utt", "s a b\nt b\n"}},
       {"spk2utt:1", "\"b\" is listed under speaker \"s\"", "utt2spk:2 gives speaker \"t\""}},
      {"spk2utt incomplete",
       {{"wav.scp", wav}, {"segments", "a r 0 0.5\nb r 0.5 1\n"}, {"utt2spk", "a s\nb s\n"}, {"spk2utt", "s a\n"}},
       {"utt2spk:2", "\"b\"", "missing from"}},
      {"segment recording", {{"wav.scp", wav}, {"segments", "a q 0 1\n"}, {"utt2spk", "a s\n"}},
       {"segments:1", "recording \"q\", which is not in wav.scp"}},
      {"segment order", {{"wav.scp", wav}, {"segments", "a r 0.7 0.5\n"}, {"utt2spk", "a s\n"}},
       {"segments:1", "ends at 0.5 s, not after its start 0.7 s"}},
      {"segment negative", {{"wav.scp", wav}, {"segments", "a r -1 0.5\n"}, {"utt2spk", "a s\n"}},
       {"segments:1", "negative time"}},
      {"segment number", {{"wav.scp", wav}, {"segments", "a r 0 1s\n"}, {"utt2spk", "a s\n"}},
       {"segments:1", "end time \"1s\"", "not a number"}},
      {"segment fields", {{"wav.scp", wav}, {"segments", "a r 0\n"}, {"utt2spk", "a s\n"}},
       {"segments:1", "3 fields"}},
      {"segment channel", {{"wav.scp", wav}, {"segments", "a r 0 1 left\n"}, {"utt2spk", "a s\n"}},
       {"segments:1", "channel \"left\""}},
      {"segment past end", {{"wav.scp", wav}, {"segments", "a r 0.2 1.6\n"}, {"utt2spk", "a s\n"}},
       {"segments:1", "\"a\"", "ends at 1.6 s", "16000 samples, 1 s", "max_overshoot 0.5"}},
      {"segment starts after end", {{"wav.scp", wav}, {"segments", "a r 1.0 1.2\n"}, {"utt2spk", "a s\n"}},
       {"segments:1", "starts at 1 s", "at or past the end"}},
      {"segment channel range", {{"wav.scp", wav}, {"segments", "a r 0 1 1\n"}, {"utt2spk", "a s\n"}},
       {"segments:1", "channel 1 but the recording has 1 channel"}},
      {"r2fc", {{"wav.scp", wav}, {"utt2spk", "r s\n"}, {"reco2file_and_channel", "q f A\n"}},
       {"reco2file_and_channel:1", "\"q\" is not in wav.scp"}},
  };
  int i = 0;
  for (const auto& c : cases) {
    const std::string dir = tmp / ("d" + std::to_string(i++));
    fs::create_directory(dir);
    for (auto& [name, body] : c.files) put(dir + "/" + name, body);
    std::string e = error_of([&] { kio::load_data_dir(dir); });
    EXPECT_TRUE(contains(e, c.says)) << c.name;
    EXPECT_TRUE(contains(e, {"[kaldi_io::load_data_dir]"})) << c.name;
  }
  EXPECT_TRUE(contains(error_of([&] { kio::load_data_dir(tmp / "none"); }), {"is not a directory"}));

  // Unsorted files are accepted with a warning.
  fs::create_directory(tmp / "unsorted");
  put(tmp / "unsorted/wav.scp", wav);
  put(tmp / "unsorted/segments", "b r 0.5 1\na r 0 0.5\n");
  put(tmp / "unsorted/utt2spk", "a s\nb s\n");
  kio::DataDir d = kio::load_data_dir(tmp / "unsorted");
  ASSERT_EQ(d.warnings.size(), 1u);
  EXPECT_TRUE(contains(d.warnings[0], {"segments:2", "not sorted", "\"a\" after \"b\""}));
  EXPECT_EQ(d.utterances(), (std::vector<std::string>{"a", "b"}));

  // Pipes that fail or produce no audio fail when the audio is loaded.
  fs::create_directory(tmp / "pipes");
  put(tmp / "pipes/wav.scp", "bad exit 7 |\nempty true |\njunk echo hello |\n");
  put(tmp / "pipes/utt2spk", "bad s\nempty s\njunk s\n");
  kio::DataDir pd = kio::load_data_dir(tmp / "pipes");
  EXPECT_TRUE(contains(error_of([&] { kio::load_utterance_audio(pd, "bad"); }),
                       {"[kaldi_io::load_utterance_audio]", "\"bad\"", "wav.scp:1", "exited with status 7"}));
  EXPECT_TRUE(contains(error_of([&] { kio::load_utterance_audio(pd, "empty"); }), {"wrote no audio"}));
  EXPECT_TRUE(contains(error_of([&] { kio::load_utterance_audio(pd, "junk"); }), {"\"junk\"", "Failed to read audio"}));
}

TEST(KaldiIO, LoadFromMemory) {
  TempDir tmp;
  Tensor w = make_wav(tmp / "m.wav", 1000, 2, 3);
  const std::string bytes = slurp(tmp / "m.wav");
  auto [got, sr] = fw::audio::load_from_memory(bytes.data(), bytes.size());
  EXPECT_EQ(sr, 16000);
  EXPECT_TRUE(same(got, w));
  fw::audio::LoadOptions o;
  o.frame_offset = 10;
  o.num_frames = 20;
  EXPECT_TRUE(same(fw::audio::load_from_memory(bytes.data(), bytes.size(), o).first, w.slice(1, 10, 30).contiguous()));
  EXPECT_TRUE(contains(error_of([&] { fw::audio::load_from_memory(bytes.data(), bytes.size() - 100, {}, "cut.wav"); }),
                       {"Truncated", "cut.wav", "declares 4000 bytes"}));
  EXPECT_TRUE(contains(error_of([&] { fw::audio::load_from_memory("hello", 5); }), {"Failed to read audio"}));
  EXPECT_TRUE(contains(error_of([&] { fw::audio::load_from_memory(nullptr, 0); }), {"no bytes"}));
  o = {};
  o.normalize = false;
  EXPECT_TRUE(contains(error_of([&] { fw::audio::load_from_memory(bytes.data(), bytes.size(), o); }), {"normalize"}));
}

// ---- deltas and CMVN -----------------------------------------------------------------------------

namespace {
// Kaldi's add-deltas written out directly in double: delta = sum_k k (x[t+k] - x[t-k]) / 10 and
// delta-delta = sum_{j,k} j k x[t+j+k] / 100 (the first-order filter applied twice, as one 9-tap
// sum over the ORIGINAL features), frame indices clamped to [0, T-1].
Tensor reference_deltas(const Tensor& x) {
  const int64_t T = x.size(0), F = x.size(1);
  Tensor xd = x.to(fw::kDouble).contiguous();
  const double* p = xd.data_ptr<double>();
  auto at = [&](int64_t t, int64_t f) { return p[std::clamp<int64_t>(t, 0, T - 1) * F + f]; };
  Tensor out = fw::zeros({T, 3 * F}, fw::kDouble);
  double* o = out.data_ptr<double>();
  for (int64_t t = 0; t < T; ++t)
    for (int64_t f = 0; f < F; ++f) {
      o[t * 3 * F + f] = at(t, f);
      double d1 = 0, d2 = 0;
      for (int64_t k = 1; k <= 2; ++k) d1 += double(k) * (at(t + k, f) - at(t - k, f));
      for (int64_t j = -2; j <= 2; ++j)
        for (int64_t k = -2; k <= 2; ++k) d2 += double(j * k) * at(t + j + k, f);
      o[t * 3 * F + F + f] = d1 / 10.0;
      o[t * 3 * F + 2 * F + f] = d2 / 100.0;
    }
  return out;
}
double max_diff(const Tensor& a, const Tensor& b) {
  return a.numel() ? (a.to(fw::kDouble) - b.to(fw::kDouble)).abs().max().item<double>() : 0.0;
}
}  // namespace

TEST(KaldiIO, AddDeltas) {
  for (int64_t T : {1, 2, 3, 5, 9, 40}) {
    Tensor x = random_matrix(T, 13, uint32_t(T), fw::kDouble);
    Tensor ref = reference_deltas(x);
    Tensor got = kio::add_deltas(x);
    ASSERT_EQ(got.sizes().vec(), (std::vector<int64_t>{T, 39}));
    EXPECT_LT(max_diff(got, ref), 1e-12) << "T=" << T;
    Tensor gotf = kio::add_deltas(x.to(fw::kFloat));
    EXPECT_EQ(gotf.scalar_type(), fw::kFloat);
    EXPECT_LT(max_diff(gotf, ref), 1e-5) << "T=" << T;
  }
  Tensor x = random_matrix(30, 4, 77, fw::kDouble);
  // Order 1 is torchaudio's compute_deltas (win_length 5, replicate) on (F, T).
  Tensor td = fw::audio::functional::compute_deltas(x.t().contiguous(), 5).t();
  EXPECT_LT(max_diff(kio::add_deltas(x, 1).narrow(1, 4, 4), td), 1e-12);
  // Order 2 is not compute_deltas applied twice: equal inside, different at the first and last
  // 2 * window frames.
  Tensor twice = fw::audio::functional::compute_deltas(fw::audio::functional::compute_deltas(x.t().contiguous(), 5), 5).t();
  Tensor dd = kio::add_deltas(x).narrow(1, 8, 4);
  EXPECT_LT(max_diff(dd.narrow(0, 4, 22), twice.narrow(0, 4, 22)), 1e-12);
  EXPECT_GT(max_diff(dd.narrow(0, 0, 1), twice.narrow(0, 0, 1)), 1e-6);
  // Batched, other orders and windows, zero frames, errors.
  Tensor b = fw::stack({x, x * 2});
  EXPECT_LT(max_diff(kio::add_deltas(b).select(0, 1), kio::add_deltas(x * 2)), 1e-12);
  EXPECT_EQ(kio::add_deltas(x, 3, 1).size(1), 16);
  EXPECT_TRUE(same(kio::add_deltas(x, 0), x));
  EXPECT_EQ(kio::add_deltas(fw::zeros({0, 5})).sizes().vec(), (std::vector<int64_t>{0, 15}));
  // Window 1, order 1 by hand: (x[t+1] - x[t-1]) / 2.
  Tensor s = mat({{0}, {1}, {4}, {9}}, fw::kDouble);
  EXPECT_TRUE(same(kio::add_deltas(s, 1, 1).select(1, 1), fw::tensor(std::vector<double>{0.5, 2, 4, 2.5}, fw::kDouble)));
  EXPECT_TRUE(contains(error_of([&] { kio::add_deltas(x, 2, 0); }), {"window"}));
  EXPECT_TRUE(contains(error_of([&] { kio::add_deltas(fw::zeros({5})); }), {"(..., frames, dims)"}));
  EXPECT_TRUE(contains(error_of([&] { kio::add_deltas(fw::zeros({5, 2}, fw::kInt)); }), {"float32 or float64"}));
}

TEST(KaldiIO, Cmvn) {
  Tensor x = mat({{1, 10, 5}, {3, 20, 5}, {5, 60, 5}});
  Tensor st = kio::compute_cmvn_stats(x);
  EXPECT_TRUE(same(st, mat({{9, 90, 15, 3}, {35, 4100, 75, 0}}, fw::kDouble)));
  // Mean normalisation: x - mean, in the features' dtype.
  Tensor m = kio::apply_cmvn(x, st);
  EXPECT_EQ(m.scalar_type(), fw::kFloat);
  EXPECT_TRUE(same(m, mat({{-2, -20, 0}, {0, -10, 0}, {2, 30, 0}})));
  // Variance too: var = E[x^2] - mean^2, floored at 1e-20 (the constant column stays 0).
  Tensor v = kio::apply_cmvn(x.to(fw::kDouble), st, true);
  const double s0 = std::sqrt(35.0 / 3 - 9.0), s1 = std::sqrt(4100.0 / 3 - 900.0);
  Tensor want = mat({{-2 / s0, -20 / s1, 0}, {0, -10 / s1, 0}, {2 / s0, 30 / s1, 0}}, fw::kDouble);
  EXPECT_LT(max_diff(v, want), 1e-12);
  // Per-speaker stats are sums over the speaker's utterances.
  std::map<std::string, Tensor> feats{{"a1", x.narrow(0, 0, 2)}, {"a2", x.narrow(0, 2, 1)}, {"b1", x * 2}};
  auto spk = kio::compute_speaker_cmvn_stats(feats, {{"A", {"a1", "a2"}}, {"B", {"b1"}}});
  EXPECT_TRUE(same(spk.at("A"), st));
  EXPECT_TRUE(same(spk.at("B"), kio::compute_cmvn_stats(x * 2)));
  EXPECT_TRUE(contains(error_of([&] { kio::compute_speaker_cmvn_stats(feats, {{"C", {"zz"}}}); }),
                       {"\"zz\"", "\"C\"", "no features"}));
  // Stats travel as Kaldi double matrices (cmvn.scp).
  TempDir tmp;
  {
    kio::DoubleMatrixWriter w("ark,scp:" + (tmp / "cmvn.ark") + "," + (tmp / "cmvn.scp"));
    for (auto& [k, s] : spk) w.write(k, s);
    w.close();
  }
  EXPECT_EQ(slurp(tmp / "cmvn.ark").substr(0, 7), std::string("A \0BDM ", 7));
  kio::RandomAccessDoubleMatrixReader cmvn("scp:" + (tmp / "cmvn.scp"));
  EXPECT_TRUE(same(cmvn.value("A"), st));
  // Mean-only stats may have one row; errors name the problem.
  EXPECT_TRUE(same(kio::apply_cmvn(x, st.narrow(0, 0, 1)), m));
  EXPECT_TRUE(contains(error_of([&] { kio::apply_cmvn(x, st.narrow(0, 0, 1), true); }), {"do not fit", "norm_vars"}));
  EXPECT_TRUE(contains(error_of([&] { kio::apply_cmvn(x.narrow(1, 0, 2), st); }), {"do not fit", "2 dims"}));
  EXPECT_TRUE(contains(error_of([&] { kio::apply_cmvn(x, st * 0.1); }), {"Insufficient stats", "count = 0.3"}));
  Tensor nan_st = st.clone();
  nan_st.data_ptr<double>()[0] = std::nan("");
  EXPECT_TRUE(contains(error_of([&] { kio::apply_cmvn(x, nan_st); }), {"NaN or infinity"}));
  EXPECT_TRUE(same(kio::compute_cmvn_stats(fw::zeros({0, 2})), fw::zeros({2, 3}, fw::kDouble)));
}
