// fw::audio::info / load / save against torchaudio 0.13 (files and reference values from
// tests/fixtures/audio/io/gen_io.py), round trips, errors, and a bounded fuzz loop.
//
// ctest's audio_io_asan runs this suite with audio/io.cpp and the test under ASan/UBSan. For a
// fully sanitized build (libfw too; slow) and a longer fuzz run with another seed:
//   cmake -S . -B build-b-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFW_BUILD_BENCHMARKS=OFF \
//     -DFW_BUILD_EXAMPLES=OFF -DCMAKE_CXX_FLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer" \
//     -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined -DCMAKE_SHARED_LINKER_FLAGS=-fsanitize=address,undefined
//   ninja -C build-b-asan fw_audio_tests
//   ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 FW_AUDIO_FUZZ_SECONDS=60 \
//     FW_AUDIO_FUZZ_SEED=7 build-b-asan/tests/fw_audio_tests --gtest_filter='AudioIO*'
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "fw/audio/io.h"
#include "fw/fw.h"

namespace fs = std::filesystem;
namespace au = fw::audio;

namespace {

const std::string kDir = FW_AUDIO_FIXTURE_DIR "/io/";

const fw::SafetensorsContents& ref() {
  static const fw::SafetensorsContents r = fw::load_with_metadata(kDir + "io_ref.safetensors");
  return r;
}
const fw::Tensor& ref_tensor(const std::string& key) {
  auto it = ref().tensors.find(key);
  if (it == ref().tensors.end()) throw std::runtime_error("fixture has no tensor " + key);
  return it->second;
}

// The value of `key` in the flat JSON object json.dumps wrote (strings without their quotes).
std::string jfield(const std::string& js, const std::string& key) {
  size_t p = js.find("\"" + key + "\": ");
  if (p == std::string::npos) throw std::runtime_error("no field " + key + " in " + js);
  p += key.size() + 4;
  if (js[p] == '"') return js.substr(p + 1, js.find('"', p + 1) - p - 1);
  size_t e = js.find_first_of(",}", p);
  return js.substr(p, e - p);
}

double max_abs_diff(const fw::Tensor& a, const fw::Tensor& b) {
  if (a.numel() == 0) return 0;
  return (a.to(fw::kDouble) - b.to(fw::kDouble)).abs().max().item<double>();
}

// Shape and dtype exactly, values within atol.
::testing::AssertionResult close(const fw::Tensor& a, const fw::Tensor& b, double atol) {
  if (a.dtype() != b.dtype())
    return ::testing::AssertionFailure() << "dtype " << a.dtype() << " vs " << b.dtype();
  if (a.sizes().vec() != b.sizes().vec())
    return ::testing::AssertionFailure() << "sizes " << a.sizes() << " vs " << b.sizes();
  double d = max_abs_diff(a, b);
  if (!(d <= atol)) return ::testing::AssertionFailure() << "max |diff| " << d << " > " << atol;
  return ::testing::AssertionSuccess();
}

std::string read_bytes(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}
void write_bytes(const std::string& p, const std::string& b) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f.write(b.data(), std::streamsize(b.size()));
}

// Runs f, expecting an fw::Error whose message contains every one of `parts`.
template <class F>
::testing::AssertionResult throws_with(F f, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const fw::Error& e) {
    std::string m = e.what();
    for (const auto& p : parts)
      if (m.find(p) == std::string::npos)
        return ::testing::AssertionFailure() << "message lacks \"" << p << "\": " << m;
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure() << "not an fw::Error: " << e.what();
  }
  return ::testing::AssertionFailure() << "no exception";
}

// Per-test scratch directory.
class AudioIO : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("fw_audio_io_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string tmp(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

// The SaveOptions that gen_io.py passed to torchaudio.save for each fixture file.
struct FileCase {
  const char* file;
  au::SaveOptions opt;
  bool stereo;
};
std::vector<FileCase> file_cases() {
  auto o = [](const char* enc, int64_t bits) {
    au::SaveOptions s;
    s.encoding = enc;
    s.bits_per_sample = bits;
    return s;
  };
  return {{"u8.wav", o("PCM_U", 8), false},       {"s16.wav", o("PCM_S", 16), false},
          {"s24.wav", o("PCM_S", 24), false},     {"s32.wav", o("PCM_S", 32), false},
          {"f32.wav", o("PCM_F", 32), false},     {"f64.wav", o("PCM_F", 64), false},
          {"ulaw.wav", o("ULAW", 8), false},      {"alaw.wav", o("ALAW", 8), false},
          {"s16.flac", o("", 16), false},         {"s24.flac", o("", -1), false},
          {"vorbis.ogg", o("", -1), false},       {"stereo_s16.wav", o("PCM_S", 16), true},
          {"stereo_f32.wav", o("", -1), true},    {"stereo.flac", o("", 16), true},
          {"stereo.ogg", o("", -1), true}};
}
bool is_vorbis(const std::string& f) { return f.size() > 4 && f.substr(f.size() - 4) == ".ogg"; }

TEST_F(AudioIO, InfoMatchesTorchaudio) {
  int n = 0;
  for (const auto& [name, js] : ref().metadata) {
    if (name.rfind("info/", 0) != 0) continue;
    ++n;
    std::string file = jfield(js, "file");
    SCOPED_TRACE(file);
    au::AudioMetaData m = au::info(kDir + file);
    auto meta = ref_tensor(name + "/meta");
    EXPECT_EQ(m.sample_rate, meta[0].item<int64_t>());
    EXPECT_EQ(m.num_frames, meta[1].item<int64_t>());
    EXPECT_EQ(m.num_channels, meta[2].item<int64_t>());
    EXPECT_EQ(m.bits_per_sample, meta[3].item<int64_t>());
    EXPECT_EQ(m.encoding, jfield(js, "encoding"));
  }
  EXPECT_EQ(n, 15);
  au::AudioMetaData s = au::info(FW_AUDIO_FIXTURE_DIR "/speech_en_44k_stereo.wav");
  EXPECT_EQ(s.sample_rate, 44100);
  EXPECT_EQ(s.num_channels, 2);
  EXPECT_EQ(s.encoding, "PCM_S");
}

// Every torchaudio.load call of the fixture: dtype, shape, first/last 64 frames, sum. Exact for
// PCM and FLAC; Vorbis is decoded by libvorbis in both, but sox hands it out as 16-bit integers.
TEST_F(AudioIO, LoadMatchesTorchaudio) {
  int n = 0;
  double vorbis_max = 0;
  for (const auto& [name, js] : ref().metadata) {
    if (name.rfind("load/", 0) != 0) continue;
    ++n;
    SCOPED_TRACE(name);
    std::string file = jfield(js, "file");
    au::LoadOptions o;
    o.frame_offset = std::stoll(jfield(js, "frame_offset"));
    o.num_frames = std::stoll(jfield(js, "num_frames"));
    o.normalize = jfield(js, "normalize") == "true";
    o.channels_first = jfield(js, "channels_first") == "true";
    auto [y, sr] = au::load(kDir + file, o);
    const auto& head = ref_tensor(name + "/head");
    const auto& tail = ref_tensor(name + "/tail");
    const auto& shape = ref_tensor(name + "/shape");
    std::vector<int64_t> want_shape(shape.data_ptr<int64_t>(), shape.data_ptr<int64_t>() + shape.numel());
    ASSERT_EQ(y.sizes().vec(), want_shape);
    ASSERT_EQ(y.dtype(), head.dtype());
    EXPECT_EQ(sr, ref_tensor("info/" + file + "/meta")[0].item<int64_t>());
    fw::Tensor t = o.channels_first ? y : y.t();
    const int64_t len = t.size(1), k = std::min<int64_t>(64, len);
    // sox turns 32-bit integers and 64-bit floats into float32 through a 25-bit grid
    // ((x + 64) & ~127) / 2^31; fw rounds them to the nearest float32 instead, which differs by
    // at most 2^-25. Everything else is bit-exact.
    const double atol = is_vorbis(file) ? 2e-3 : file == "f64.wav" || (file == "s32.wav" && o.normalize) ? 0x1p-25 : 0;
    // sox decodes Vorbis to int16 (ov_read), which clips; libsndfile keeps the float output.
    if (is_vorbis(file)) t = fw::clamp(t, -1, 32767.0 / 32768);
    EXPECT_TRUE(close(t.narrow(1, 0, k), head, atol));
    EXPECT_TRUE(close(t.narrow(1, len - k, k), tail, atol));
    double sum = y.to(fw::kDouble).sum().item<double>(), want = ref_tensor(name + "/sum").item<double>();
    EXPECT_NEAR(sum, want, atol * double(y.numel()) + 1e-9 * std::max(1.0, std::abs(want)));
    if (is_vorbis(file)) vorbis_max = std::max({vorbis_max, max_abs_diff(t.narrow(1, 0, k), head)});
  }
  EXPECT_EQ(n, 15 * 8);
  RecordProperty("vorbis_max_abs_diff", std::to_string(vorbis_max));
}

// Saving torchaudio's inputs with the same options gives the samples torchaudio wrote, bit for bit
// for integer PCM and FLAC (the float->int rounding is sox's); PCM_F keeps the input unclipped.
TEST_F(AudioIO, SaveMatchesTorchaudio) {
  for (const auto& fc : file_cases()) {
    SCOPED_TRACE(fc.file);
    const std::string in_name = fc.stereo ? "input_stereo" : "input_mono";
    const auto& x = ref_tensor(in_name + "/waveform");
    const int64_t sr = std::stoll(jfield(ref().metadata.at(in_name), "sample_rate"));
    std::string out = tmp(fc.file);
    au::save(out, x, sr, fc.opt);
    au::AudioMetaData mine = au::info(out), theirs = au::info(kDir + fc.file);
    EXPECT_EQ(mine.encoding, theirs.encoding);
    EXPECT_EQ(mine.bits_per_sample, theirs.bits_per_sample);
    EXPECT_EQ(mine.num_channels, theirs.num_channels);
    EXPECT_EQ(mine.sample_rate, theirs.sample_rate);
    au::LoadOptions raw;
    raw.normalize = false;
    auto a = au::load(out, raw).first, b = au::load(kDir + fc.file, raw).first;
    if (mine.encoding == "PCM_F") {
      EXPECT_TRUE(close(a, x, 0));
    } else if (mine.encoding == "VORBIS") {
      // Lossy: same encoder (libvorbis) and quality (sox's default 3), so as close to the input
      // as torchaudio's file is (the edge values at the start are a hard case for both).
      ASSERT_EQ(a.sizes().vec(), b.sizes().vec());
      auto xc = fw::clamp(x, -1, 1);
      auto snr = [&](const fw::Tensor& y) {
        return 10 * std::log10(xc.pow(2).mean().item<double>() / (y - xc).pow(2).mean().item<double>());
      };
      EXPECT_GT(snr(a), snr(b) - 1.0);
      EXPECT_LT(max_abs_diff(a, b), 0.05);
      RecordProperty(std::string("snr_") + fc.file, std::to_string(snr(a)) + " dB (torchaudio " + std::to_string(snr(b)) + ")");
    } else {
      EXPECT_TRUE(close(a, b, 0));
    }
  }
}

TEST_F(AudioIO, RoundTripIntegerDtypesExact) {
  fw::manual_seed(0);
  auto r = fw::rand({2, 300});
  struct C {
    fw::Tensor x;
    const char* enc;
    int64_t bits;
  };
  std::vector<C> cases = {
      {(r * 65535 - 32768).to(fw::kShort), "", -1},
      {(r * 4294967295.0 - 2147483648.0).to(fw::kLong).to(fw::kInt), "", -1},
      {(r * 255).to(fw::kByte), "", -1},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(c.x.dtype());
    au::save(tmp("a.wav"), c.x, 8000);
    au::LoadOptions raw;
    raw.normalize = false;
    auto [y, sr] = au::load(tmp("a.wav"), raw);
    EXPECT_EQ(sr, 8000);
    EXPECT_TRUE(close(y, c.x, 0));
    // normalize: int16 / 2^15, int32 / 2^31, (uint8 - 128) / 2^7
    double scale = c.x.dtype() == fw::kShort ? 32768.0 : c.x.dtype() == fw::kInt ? 2147483648.0 : 128.0;
    double off = c.x.dtype() == fw::kByte ? 128.0 : 0.0;
    auto want = ((c.x.to(fw::kDouble) - off) / scale).to(fw::kFloat);
    EXPECT_TRUE(close(au::load(tmp("a.wav")).first, want, 0));
  }
  // int16 into 24/32-bit PCM and FLAC: shifted, not rescaled.
  auto s = cases[0].x;
  for (auto [fname, bits] : {std::pair{"b.wav", 24}, {"c.wav", 32}, {"d.flac", 16}, {"e.flac", 24}}) {
    SCOPED_TRACE(fname);
    au::SaveOptions o;
    o.bits_per_sample = bits;
    au::save(tmp(fname), s, 8000, o);
    EXPECT_TRUE(close(au::load(tmp(fname)).first, s.to(fw::kFloat) / 32768, 0));
  }
}

// Float input: within half an LSB at every depth (sox truncates to int32 first, so allow 2^-31 more).
TEST_F(AudioIO, RoundTripFloatQuantisation) {
  fw::manual_seed(1);
  auto x = fw::rand({3, 1000}) * 2 - 1;
  for (auto [fname, enc, bits, want_bits] :
       {std::tuple{"u8.wav", "", 8, 8}, {"s16.wav", "", 16, 16}, {"s24.wav", "", 24, 24}, {"s32.wav", "PCM_S", -1, 32},
        {"s8.flac", "", 8, 8}, {"s16.flac", "", 16, 16}, {"s24.flac", "", -1, 24}}) {
    SCOPED_TRACE(fname);
    au::SaveOptions o;
    o.encoding = enc;
    o.bits_per_sample = bits;
    au::save(tmp(fname), x, 22050, o);
    au::AudioMetaData m = au::info(tmp(fname));
    EXPECT_EQ(m.bits_per_sample, want_bits);
    EXPECT_EQ(m.num_frames, 1000);
    EXPECT_EQ(m.num_channels, 3);
    // Half an LSB, plus float32 rounding for 32-bit; up to one LSB where x is above the
    // largest code ((2^(b-1) - 1) / 2^(b-1)) and saturates.
    const double lsb = std::ldexp(1.0, 1 - int(want_bits));
    auto y = au::load(tmp(fname)).first;
    auto inside = x.abs() < 1 - lsb;
    EXPECT_LE(max_abs_diff(y.masked_select(inside), x.masked_select(inside)), lsb / 2 + 0x1p-25);
    EXPECT_LE(max_abs_diff(y, x), lsb);
  }
  // Float WAV keeps everything, including values outside [-1, 1] and NaN.
  auto y = x * 3;
  y.index_put_({0, 5}, std::numeric_limits<float>::quiet_NaN());
  for (auto [fname, bits] : {std::pair{"f32.wav", 32}, {"f64.wav", 64}}) {
    au::SaveOptions o;
    o.bits_per_sample = bits;
    o.encoding = "PCM_F";
    au::save(tmp(fname), y, 8000, o);
    auto z = au::load(tmp(fname)).first;
    EXPECT_TRUE(std::isnan(z[0][5].item<float>()));
    EXPECT_TRUE(fw::equal(fw::nan_to_num(z, 0.0), fw::nan_to_num(y, 0.0)));
  }
  auto d = x.to(fw::kDouble) + 1e-12;  // float64 input keeps double precision in a 64-bit file
  au::SaveOptions o;
  o.encoding = "PCM_F";
  o.bits_per_sample = 64;
  au::save(tmp("d.wav"), d, 8000, o);
  EXPECT_TRUE(close(au::load(tmp("d.wav")).first, d.to(fw::kFloat), 0));
  // Clipping: |x| > 1 saturates in integer formats, as sox does; +-inf too.
  auto big = fw::tensor({2.0f, -2.0f, 1.0f, -1.0f, std::numeric_limits<float>::infinity(),
                         -std::numeric_limits<float>::infinity()});
  au::save(tmp("clip.wav"), big, 8000, au::SaveOptions{"PCM_S", 16});
  au::LoadOptions raw;
  raw.normalize = false;
  auto c = au::load(tmp("clip.wav"), raw).first;
  EXPECT_TRUE(fw::equal(c, fw::tensor({32767, -32768, 32767, -32768, 32767, -32768}, fw::kShort).unsqueeze(0)));
}

TEST_F(AudioIO, VorbisRoundTrip) {
  auto t = fw::arange(16000, fw::kDouble) / 16000;
  auto x = fw::stack({0.5 * fw::sin(2 * M_PI * 440 * t), 0.3 * fw::sin(2 * M_PI * 1000 * t)}).to(fw::kFloat);
  for (double q : {std::nan(""), -1.0, 10.0}) {
    SCOPED_TRACE(q);
    au::SaveOptions o;
    o.compression = q;
    au::save(tmp("v.ogg"), x, 16000, o);
    auto m = au::info(tmp("v.ogg"));
    EXPECT_EQ(m.encoding, "VORBIS");
    EXPECT_EQ(m.bits_per_sample, 0);
    EXPECT_EQ(m.num_frames, 16000);
    auto y = au::load(tmp("v.ogg")).first;
    ASSERT_EQ(y.sizes().vec(), x.sizes().vec());
    double snr = 10 * std::log10(x.pow(2).mean().item<double>() / (y - x).pow(2).mean().item<double>());
    EXPECT_GT(snr, std::isnan(q) ? 25.0 : 10.0);
    RecordProperty("vorbis_snr_q" + std::to_string(q), std::to_string(snr));
  }
  EXPECT_GT(fs::file_size(tmp("v.ogg")), 0u);
}

// A partial read equals the slice of the full read, for every format (seeking in FLAC and
// Vorbis is sample-accurate in libsndfile).
TEST_F(AudioIO, PartialReadsAreSlices) {
  for (const auto& fc : file_cases()) {
    SCOPED_TRACE(fc.file);
    auto full = au::load(kDir + fc.file).first;
    const int64_t n = full.size(1);
    for (auto [off, num] : {std::pair<int64_t, int64_t>{0, 1}, {1, 10}, {777, 1234}, {n - 5, -1}, {n - 5, 100},
                            {n, -1}, {n / 2, -1}}) {
      SCOPED_TRACE(std::to_string(off) + "+" + std::to_string(num));
      au::LoadOptions o;
      o.frame_offset = off;
      o.num_frames = num;
      auto part = au::load(kDir + fc.file, o).first;
      int64_t len = num == -1 ? n - off : std::min(num, n - off);
      EXPECT_TRUE(close(part, full.narrow(1, off, len), 0));
      o.channels_first = false;
      EXPECT_TRUE(close(au::load(kDir + fc.file, o).first, full.narrow(1, off, len).t(), 0));
    }
  }
}

TEST_F(AudioIO, ChannelsLayout) {
  fw::manual_seed(2);
  auto x = (fw::rand({100, 3}) * 2 - 1);  // (frames, channels)
  au::SaveOptions o;
  o.channels_first = false;
  au::save(tmp("t.wav"), x, 8000, o);
  EXPECT_EQ(au::info(tmp("t.wav")).num_channels, 3);
  au::LoadOptions lo;
  lo.channels_first = false;
  EXPECT_TRUE(close(au::load(tmp("t.wav"), lo).first, x, 0));
  EXPECT_TRUE(close(au::load(tmp("t.wav")).first, x.t(), 0));
  // Non-contiguous input and 1-D mono.
  au::save(tmp("u.wav"), x.t(), 8000);
  EXPECT_TRUE(close(au::load(tmp("u.wav")).first, x.t(), 0));
  au::save(tmp("m.wav"), x.select(1, 1), 8000);
  EXPECT_TRUE(close(au::load(tmp("m.wav")).first, x.select(1, 1).unsqueeze(0), 0));
  // Zero frames is a valid file.
  au::save(tmp("z.wav"), fw::empty({2, 0}), 8000);
  EXPECT_EQ(au::info(tmp("z.wav")).num_frames, 0);
  EXPECT_EQ(au::load(tmp("z.wav")).first.sizes().vec(), (std::vector<int64_t>{2, 0}));
  // Format given explicitly overrides a missing or odd extension.
  au::SaveOptions f;
  f.format = "FLAC";
  au::save(tmp("noext"), x.t(), 8000, f);
  EXPECT_EQ(au::info(tmp("noext")).encoding, "FLAC");
  au::save(tmp("upper.WAV"), x.t(), 8000);
  EXPECT_EQ(au::info(tmp("upper.WAV")).encoding, "PCM_F");
}

TEST_F(AudioIO, SaveDefaultsFollowTorchaudio) {
  auto f = fw::zeros({1, 10});
  struct C {
    fw::Tensor x;
    const char* file;
    const char* enc;
    int64_t bits;
    const char* want_enc;
    int64_t want_bits;
  };
  std::vector<C> cases = {
      {f, "a.wav", "", -1, "PCM_F", 32},         {f.to(fw::kShort), "a.wav", "", -1, "PCM_S", 16},
      {f.to(fw::kInt), "a.wav", "", -1, "PCM_S", 32}, {f.to(fw::kByte), "a.wav", "", -1, "PCM_U", 8},
      {f, "a.wav", "PCM_S", -1, "PCM_S", 32},    {f.to(fw::kShort), "a.wav", "PCM_S", -1, "PCM_S", 32},
      {f, "a.wav", "", 8, "PCM_U", 8},           {f, "a.wav", "", 24, "PCM_S", 24},
      {f, "a.wav", "", 32, "PCM_S", 32},         {f, "a.wav", "PCM_F", 64, "PCM_F", 64},
      {f, "a.wav", "ULAW", -1, "ULAW", 8},       {f, "a.wav", "ALAW", 8, "ALAW", 8},
      {f, "a.flac", "", -1, "FLAC", 24},         {f.to(fw::kShort), "a.flac", "", -1, "FLAC", 24},
      {f, "a.flac", "", 8, "FLAC", 8},           {f, "a.ogg", "", -1, "VORBIS", 0},
      {f.to(fw::kDouble), "a.wav", "", -1, "PCM_F", 32}, {f.to(fw::kHalf), "a.wav", "", -1, "PCM_F", 32},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(std::string(c.file) + " " + c.enc + " " + std::to_string(c.bits));
    au::SaveOptions o;
    o.encoding = c.enc;
    o.bits_per_sample = c.bits;
    au::save(tmp(c.file), c.x, 16000, o);
    auto m = au::info(tmp(c.file));
    EXPECT_EQ(m.encoding, c.want_enc);
    EXPECT_EQ(m.bits_per_sample, c.want_bits);
  }
  auto fmts = au::supported_formats();
  EXPECT_NE(std::find(fmts.begin(), fmts.end(), "flac"), fmts.end());
}

// Torchaudio's files decoded by fw with normalize=false keep their native integer dtypes.
TEST_F(AudioIO, NativeDtypes) {
  au::LoadOptions raw;
  raw.normalize = false;
  for (auto [file, dt] : {std::pair{"u8.wav", fw::kByte}, {"s16.wav", fw::kShort}, {"s24.wav", fw::kInt},
                          {"s32.wav", fw::kInt}, {"f32.wav", fw::kFloat}, {"f64.wav", fw::kFloat},
                          {"ulaw.wav", fw::kFloat}, {"s16.flac", fw::kFloat}, {"vorbis.ogg", fw::kFloat}}) {
    SCOPED_TRACE(file);
    EXPECT_EQ(au::load(kDir + file, raw).first.dtype(), dt);
    EXPECT_EQ(au::load(kDir + file).first.dtype(), fw::kFloat);
  }
}

// A minimal RIFF/WAVE file: fmt chunk of fmt_size bytes (16 normally), data chunk that declares
// data_decl bytes and holds `data`.
std::string le16(uint16_t v) { return std::string{char(v & 0xFF), char(v >> 8)}; }
std::string le32(uint32_t v) { return le16(uint16_t(v & 0xFFFF)) + le16(uint16_t(v >> 16)); }
std::string make_wav(uint16_t tag, uint16_t ch, uint32_t rate, uint16_t bits, const std::string& data,
                     int64_t data_decl = -1, uint32_t fmt_size = 16) {
  std::string fmt = le16(tag) + le16(ch) + le32(rate) + le32(rate * ch * bits / 8) + le16(uint16_t(ch * bits / 8)) +
                    le16(bits);
  fmt.resize(std::min<size_t>(fmt.size(), fmt_size), '\0');
  std::string body = "WAVE" + std::string("fmt ") + le32(fmt_size) + fmt + "data" +
                     le32(uint32_t(data_decl < 0 ? data.size() : size_t(data_decl))) + data;
  return "RIFF" + le32(uint32_t(body.size())) + body;
}
std::string pcm16(std::initializer_list<int16_t> v) {
  std::string s;
  for (int16_t x : v) s += le16(uint16_t(x));
  return s;
}

TEST_F(AudioIO, ErrorsNameOpAndPath) {
  const std::string missing = tmp("missing.wav");
  EXPECT_TRUE(throws_with([&] { au::load(missing); }, {"[audio::load]", missing, "No such file"}));
  EXPECT_TRUE(throws_with([&] { au::info(missing); }, {"[audio::info]", missing}));
  write_bytes(tmp("empty.wav"), "");
  EXPECT_TRUE(throws_with([&] { au::load(tmp("empty.wav")); }, {"[audio::load]", tmp("empty.wav"), "empty"}));
  EXPECT_TRUE(throws_with([&] { au::load(dir_.string()); }, {"[audio::load]", dir_.string()}));
  write_bytes(tmp("junk.wav"), "this is not audio at all, just some text bytes......");
  EXPECT_TRUE(throws_with([&] { au::load(tmp("junk.wav")); }, {"[audio::load]", tmp("junk.wav")}));

  std::string good = make_wav(1, 1, 8000, 16, pcm16({1, 2, 3, 4, 5, 6, 7, 8}));
  write_bytes(tmp("good.wav"), good);
  auto [g, sr] = au::load(tmp("good.wav"), {0, -1, false, true});
  EXPECT_TRUE(fw::equal(g, fw::tensor({1, 2, 3, 4, 5, 6, 7, 8}, fw::kShort).unsqueeze(0)));
  // Cut inside the header, and cut inside the data chunk.
  write_bytes(tmp("cut_header.wav"), good.substr(0, 30));
  EXPECT_TRUE(throws_with([&] { au::load(tmp("cut_header.wav")); }, {"[audio::load]", tmp("cut_header.wav")}));
  write_bytes(tmp("cut_data.wav"), good.substr(0, good.size() - 5));
  EXPECT_TRUE(throws_with([&] { au::load(tmp("cut_data.wav")); }, {"[audio::load]", tmp("cut_data.wav"), "Truncated"}));
  EXPECT_TRUE(throws_with([&] { au::info(tmp("cut_data.wav")); }, {"[audio::info]", "Truncated"}));
  // Streaming writers' "unknown length" data sizes are accepted.
  write_bytes(tmp("stream.wav"), make_wav(1, 1, 8000, 16, pcm16({1, 2, 3}), 0xFFFFFFFF));
  EXPECT_EQ(au::load(tmp("stream.wav")).first.size(1), 3);
  write_bytes(tmp("zero_ch.wav"), make_wav(1, 0, 8000, 16, pcm16({1, 2})));
  EXPECT_TRUE(throws_with([&] { au::load(tmp("zero_ch.wav")); }, {"[audio::load]", tmp("zero_ch.wav")}));
  write_bytes(tmp("zero_sr.wav"), make_wav(1, 1, 0, 16, pcm16({1, 2})));
  EXPECT_TRUE(throws_with([&] { au::info(tmp("zero_sr.wav")); }, {"[audio::info]", tmp("zero_sr.wav")}));
  // A cut FLAC stream decodes up to the cut and then comes up short.
  std::string flac = read_bytes(kDir + "s16.flac");
  write_bytes(tmp("cut.flac"), flac.substr(0, flac.size() / 2));
  EXPECT_TRUE(throws_with([&] { au::load(tmp("cut.flac")); }, {"[audio::load]", tmp("cut.flac")}));

  // A FLAC STREAMINFO that claims 2^36 - 1 frames: info reports the claim; load decodes what
  // is there, without allocating for the claim, and then reports the shortfall.
  std::string claim = flac;
  claim[21] = char(claim[21] | 0x0F);
  for (int i = 22; i < 26; ++i) claim[size_t(i)] = char(0xFF);
  write_bytes(tmp("claim.flac"), claim);
  EXPECT_EQ(au::info(tmp("claim.flac")).num_frames, (int64_t(1) << 36) - 1);
  EXPECT_TRUE(throws_with([&] { au::load(tmp("claim.flac")); }, {"[audio::load]", tmp("claim.flac"), "decoded 4000 of"}));

  // Arguments.
  const std::string s16 = kDir + "s16.wav";
  EXPECT_TRUE(throws_with([&] { au::load(s16, {4001, -1, true, true}); }, {"[audio::load]", s16, "beyond the end"}));
  EXPECT_TRUE(throws_with([&] { au::load(s16, {-1, -1, true, true}); }, {"frame_offset must be non-negative", s16}));
  EXPECT_TRUE(throws_with([&] { au::load(s16, {0, 0, true, true}); }, {"num_frames must be -1 or greater than 0", s16}));
  EXPECT_TRUE(throws_with([&] { au::load(s16, {0, -2, true, true}); }, {"num_frames", s16}));

  const std::string out = tmp("out.wav");
  auto w = fw::zeros({1, 10});
  EXPECT_TRUE(throws_with([&] { au::save(out, fw::zeros({1, 1, 10}), 8000); }, {"[audio::save]", out, "1-D or 2-D"}));
  EXPECT_TRUE(throws_with([&] { au::save(out, fw::zeros({}), 8000); }, {"[audio::save]", out}));
  EXPECT_TRUE(throws_with([&] { au::save(out, fw::Tensor(), 8000); }, {"[audio::save]", out}));
  EXPECT_TRUE(throws_with([&] { au::save(out, w, 0); }, {"[audio::save]", out, "sample_rate"}));
  EXPECT_TRUE(throws_with([&] { au::save(out, w, -16000); }, {"[audio::save]", out, "sample_rate"}));
  EXPECT_TRUE(throws_with([&] { au::save(out, w.to(fw::kLong), 8000); }, {"[audio::save]", out, "Long"}));
  EXPECT_TRUE(throws_with([&] { au::save(out, w.to(fw::kBool), 8000); }, {"[audio::save]", out}));
  EXPECT_TRUE(throws_with([&] { au::save(out, fw::zeros({0, 10}), 8000); }, {"[audio::save]", out, "no channels"}));
  EXPECT_TRUE(throws_with([&] { au::save(tmp("a.mp3"), w, 8000); }, {"[audio::save]", tmp("a.mp3"), "Unsupported format"}));
  EXPECT_TRUE(throws_with([&] { au::save(tmp("noext"), w, 8000); }, {"[audio::save]", tmp("noext"), "format"}));
  EXPECT_TRUE(throws_with([&] { au::save(tmp("no/such/dir/a.wav"), w, 8000); }, {"[audio::save]", "no/such/dir/a.wav"}));
  auto opt = [](const char* e, int64_t b) { return au::SaveOptions{e, b}; };
  EXPECT_TRUE(throws_with([&] { au::save(out, w, 8000, opt("PCM_S", 8)); }, {"8-bit signed", out}));
  EXPECT_TRUE(throws_with([&] { au::save(out, w, 8000, opt("PCM_U", 16)); }, {"unsigned", out}));
  EXPECT_TRUE(throws_with([&] { au::save(out, w, 8000, opt("PCM_F", 16)); }, {"floating-point", out}));
  EXPECT_TRUE(throws_with([&] { au::save(out, w, 8000, opt("ULAW", 16)); }, {"mu-law", out}));
  EXPECT_TRUE(throws_with([&] { au::save(out, w, 8000, opt("FOO", -1)); }, {"Unsupported encoding", out}));
  EXPECT_TRUE(throws_with([&] { au::save(out, w, 8000, opt("", 12)); }, {"bits_per_sample", out}));
  EXPECT_TRUE(throws_with([&] { au::save(tmp("a.flac"), w, 8000, opt("", 32)); }, {"flac", "24"}));
  EXPECT_TRUE(throws_with([&] { au::save(tmp("a.flac"), w, 8000, opt("PCM_S", -1)); }, {"flac", "encoding"}));
  EXPECT_TRUE(throws_with([&] { au::save(tmp("a.ogg"), w, 8000, opt("", 16)); }, {"vorbis", "bits_per_sample"}));
  au::SaveOptions comp;
  comp.compression = 9;
  EXPECT_TRUE(throws_with([&] { au::save(tmp("a.flac"), w, 8000, comp); }, {"compression", tmp("a.flac")}));
  EXPECT_TRUE(throws_with([&] { au::save(tmp("a.wav"), w, 8000, comp); }, {"compression", tmp("a.wav")}));
  // Nothing was left behind by the failed saves.
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_EQ(e.path().filename().string().find(".tmp-"), std::string::npos) << e.path();
}

// A failed save leaves the previous file untouched and no temporary file behind.
TEST_F(AudioIO, SaveIsAtomic) {
  auto good = fw::full({1, 100}, 0.25);
  const std::string out = tmp("keep.wav");
  au::save(out, good, 8000, au::SaveOptions{"PCM_S", 16});
  const std::string before = read_bytes(out);
  auto bad = good.clone();
  bad.index_put_({0, 50}, std::numeric_limits<float>::quiet_NaN());
  for (auto [name, o] : {std::pair{"keep.wav", au::SaveOptions{"PCM_S", 16}}, {"keep.wav", au::SaveOptions{"", 8}}}) {
    EXPECT_TRUE(throws_with([&] { au::save(tmp(name), bad, 8000, o); }, {"[audio::save]", "NaN", tmp(name)}));
  }
  EXPECT_TRUE(throws_with([&] {
    au::SaveOptions f;
    f.format = "flac";
    au::save(out, bad, 8000, f);
  }, {"NaN", out}));
  EXPECT_TRUE(throws_with([&] {
    au::SaveOptions f;
    f.format = "ogg";
    au::save(out, bad, 8000, f);
  }, {"NaN", out}));
  EXPECT_EQ(read_bytes(out), before);
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir_)) {
    ++n;
    EXPECT_EQ(e.path().string(), out);
  }
  EXPECT_EQ(n, 1u);
  // A good save replaces the file, and saving is deterministic byte for byte.
  au::save(out, good * 2, 8000, au::SaveOptions{"PCM_S", 16});
  EXPECT_TRUE(close(au::load(out).first, good * 2, 0));
  au::save(tmp("again.wav"), good * 2, 8000, au::SaveOptions{"PCM_S", 16});
  EXPECT_EQ(read_bytes(out), read_bytes(tmp("again.wav")));
}

// Mutations of valid and hand-broken files: every one either loads or throws fw::Error (no crash,
// no other exception, no runaway allocation). Bounded by time, so the iteration count varies.
TEST_F(AudioIO, FuzzHeadersAndData) {
  std::vector<std::string> corpus;
  for (const char* f : {"u8.wav", "s16.wav", "s24.wav", "f32.wav", "ulaw.wav", "alaw.wav", "stereo_s16.wav"}) {
    std::string b = read_bytes(kDir + f);
    corpus.push_back(b.substr(0, std::min<size_t>(b.size(), 400)));  // header + a few frames
  }
  for (const char* f : {"s16.flac", "stereo.flac", "vorbis.ogg"}) corpus.push_back(read_bytes(kDir + f));
  std::string d = pcm16({1, -2, 3, -4, 5, -6, 7, -8});
  std::string nan4;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (float v : {nan, inf, -inf, 0.5f}) nan4.append(reinterpret_cast<const char*>(&v), 4);
  corpus.push_back(make_wav(1, 1, 8000, 16, d, -1, 0));             // zero-size fmt chunk
  corpus.push_back(make_wav(1, 1, 8000, 16, d, 0x7FFFFFF0));        // huge data chunk
  corpus.push_back(make_wav(1, 1, 8000, 16, d, -1, 0xFFFFFFF0));    // huge fmt chunk
  corpus.push_back(make_wav(1, 0, 8000, 16, d));                    // zero channels
  corpus.push_back(make_wav(1, 1, 0, 16, d));                       // zero sample rate
  corpus.push_back(make_wav(1, 65535, 8000, 16, d));                // absurd channel count
  corpus.push_back(make_wav(1, 1, 8000, 0, d));                     // zero bits
  corpus.push_back(make_wav(1, 1, 8000, 13, d));                    // odd bits
  corpus.push_back(make_wav(1, 2, 8000, 16, d.substr(0, 7)));       // partial frame
  corpus.push_back(make_wav(1, 1, 8000, 16, d).substr(0, 50));      // truncated data
  corpus.push_back(make_wav(3, 1, 8000, 32, nan4));                 // NaN/inf float samples
  corpus.push_back(make_wav(3, 1, 8000, 64, nan4 + nan4));
  corpus.push_back(make_wav(0xFFFE, 2, 8000, 16, d, -1, 16));       // EXTENSIBLE tag, short fmt
  {  // FLAC whose STREAMINFO claims 2^36 - 1 frames: must not allocate for them
    std::string f = read_bytes(kDir + "s16.flac");
    f[21] = char(f[21] | 0x0F);
    for (int i = 22; i < 26; ++i) f[size_t(i)] = char(0xFF);
    corpus.push_back(f);
  }

  // Environment overrides for longer runs by hand; the default keeps the suite at ~2.5 s.
  const char* env_s = std::getenv("FW_AUDIO_FUZZ_SECONDS");
  const char* env_seed = std::getenv("FW_AUDIO_FUZZ_SEED");
  const double seconds = env_s ? std::atof(env_s) : 2.5;
  std::mt19937_64 rng(env_seed ? std::strtoull(env_seed, nullptr, 10) : 12345);
  auto pick = [&](uint64_t n) { return n ? rng() % n : 0; };
  const uint32_t specials[] = {0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFF, 0x10000};
  const std::string path = tmp("fuzz.bin");
  int64_t iters = 0, loaded = 0, rejected = 0;
  auto run_one = [&](const std::string& bytes) {
    // A fresh file each time: on ext4, rewriting a truncated file flushes it on close (auto_da_alloc).
    fs::remove(path);
    write_bytes(path, bytes);
    for (int k = 0; k < 2; ++k) {
      try {
        if (k == 0) {
          au::info(path);
        } else {
          au::LoadOptions o;
          o.normalize = rng() & 1;
          o.channels_first = rng() & 1;
          if (rng() % 4 == 0) o.frame_offset = int64_t(pick(64));
          if (rng() % 4 == 0) o.num_frames = 1 + int64_t(pick(64));
          auto r = au::load(path, o);
          ++loaded;
          ASSERT_TRUE(r.first.defined());
        }
      } catch (const fw::Error& e) {
        ++rejected;
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      }
    }
  };
  for (const auto& c : corpus) run_one(c);  // the corpus itself, unmutated
  const auto t0 = std::chrono::steady_clock::now();
  const auto budget = std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() - t0 < budget && (env_s || iters < 200000)) {
    std::string b = corpus[pick(corpus.size())];
    const int n_mut = 1 + int(pick(4));
    for (int m = 0; m < n_mut && !b.empty(); ++m) {
      switch (pick(5)) {
        case 0:  // random byte flips, biased to the header
          for (int i = 0, k = 1 + int(pick(8)); i < k; ++i) b[pick(std::min<size_t>(b.size(), pick(2) ? 64 : b.size()))] ^= char(1 + pick(255));
          break;
        case 1:  // a special 32-bit value at a random (mostly header) offset
          if (b.size() >= 4) {
            size_t at = pick(std::min<size_t>(b.size() - 3, pick(2) ? 60 : b.size() - 3));
            uint32_t v = specials[pick(std::size(specials))];
            std::memcpy(&b[at], &v, 4);
          }
          break;
        case 2:  // truncate
          b.resize(pick(b.size() + 1));
          break;
        case 3:  // duplicate or drop a slice
          if (b.size() > 8) {
            size_t at = pick(b.size()), len = 1 + pick(std::min<size_t>(32, b.size() - at));
            if (pick(2)) b.insert(at, b.substr(at, len));
            else b.erase(at, len);
          }
          break;
        default:  // random bytes appended
          for (int i = 0, k = int(pick(16)); i < k; ++i) b.push_back(char(rng()));
      }
    }
    run_one(b);
    ++iters;
    if (HasFatalFailure()) return;
  }
  RecordProperty("fuzz_iterations", std::to_string(iters));
  RecordProperty("fuzz_loaded", std::to_string(loaded));
  RecordProperty("fuzz_rejected", std::to_string(rejected));
  std::printf("[fuzz] %lld mutated files, %lld loads succeeded, %lld calls rejected with fw::Error\n",
              (long long)iters, (long long)loaded, (long long)rejected);
  EXPECT_GT(iters, 100);
  EXPECT_GT(loaded, 0);
  EXPECT_GT(rejected, 0);
}

}  // namespace
