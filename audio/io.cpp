// Audio file I/O on libsndfile (DESIGN.md §8), following torchaudio 0.13's sox_io backend.
//
// Sample conversions on the save side are done here, not by libsndfile, so files match what
// torchaudio writes bit for bit: sox turns a float sample into trunc(clamp(x * 2^31)) and then
// rounds half up to the file's bit depth, while libsndfile's float->int writers scale by
// 0x7FFF. libsndfile is only ever handed samples that are exact at the target depth.
// On the load side libsndfile's int->float scaling (x / 2^(bits-1)) already equals sox's.
#include "fw/audio/io.h"

#include <fcntl.h>
#include <sndfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>

#include "fw/ops.h"

namespace fw::audio {
namespace {

std::string quoted(const std::string& path) { return "\"" + path + "\""; }

// Closes a descriptor on every path out.
struct Fd {
  int fd = -1;
  Fd() = default;
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int reset() {
    int rc = fd >= 0 ? ::close(fd) : 0;
    fd = -1;
    return rc;
  }
};

struct Sndfile {
  SNDFILE* sf = nullptr;
  Sndfile() = default;
  Sndfile(const Sndfile&) = delete;
  Sndfile& operator=(const Sndfile&) = delete;
  ~Sndfile() { close(); }
  int close() {
    int rc = sf ? sf_close(sf) : 0;
    sf = nullptr;
    return rc;
  }
};

uint32_t rd32(const unsigned char* p, bool big_endian) {
  return big_endian ? uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]
                    : uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0];
}

// libsndfile quietly shortens a WAV data chunk that runs past the end of the file, so a
// recording cut short by an interrupted copy would load as valid, shorter audio. Returns
// (declared, present) bytes when that happened. Sizes 0 and 0xFFFFFFFF are what streaming
// writers put when the length is unknown; those files are accepted as they are.
std::optional<std::pair<uint64_t, uint64_t>> wav_data_shortfall(int fd, uint64_t file_size) {
  unsigned char h[12];
  if (::pread(fd, h, 12, 0) != 12) return std::nullopt;
  bool be = std::memcmp(h, "RIFX", 4) == 0;
  if ((!be && std::memcmp(h, "RIFF", 4) != 0) || std::memcmp(h + 8, "WAVE", 4) != 0) return std::nullopt;
  uint64_t pos = 12;
  for (int i = 0; i < 1024 && pos + 8 <= file_size; ++i) {
    unsigned char c[8];
    if (::pread(fd, c, 8, off_t(pos)) != 8) return std::nullopt;
    uint64_t size = rd32(c + 4, be);
    if (std::memcmp(c, "data", 4) == 0) {
      uint64_t present = file_size - (pos + 8);
      if (size == 0 || size == 0xFFFFFFFFu || size <= present) return std::nullopt;
      return std::make_pair(size, present);
    }
    pos += 8 + size + (size & 1);  // chunks are padded to even sizes
  }
  return std::nullopt;
}

// An input file opened and checked: every failure to recognise it is an fw::Error.
struct Input {
  Fd fd;
  Sndfile snd;
  SF_INFO info{};
  uint64_t file_size = 0;

  Input(const std::string& path, const char* op) {
    fd.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    FW_CHECK(fd.fd >= 0, op, " Failed to open audio file ", quoted(path), ": ", std::strerror(errno));
    struct stat st {};
    FW_CHECK(::fstat(fd.fd, &st) == 0, op, " Failed to stat ", quoted(path), ": ", std::strerror(errno));
    FW_CHECK(S_ISREG(st.st_mode), op, " Failed to open audio file ", quoted(path), ": not a regular file");
    FW_CHECK(st.st_size > 0, op, " Failed to open audio file ", quoted(path), ": the file is empty");
    file_size = uint64_t(st.st_size);
    // close_desc = false: the descriptor stays ours whether or not libsndfile accepts it.
    snd.sf = sf_open_fd(fd.fd, SFM_READ, &info, SF_FALSE);
    // sf_strerror(nullptr) reads libsndfile's process-wide last error: with concurrent opens
    // the wording may come from another thread, the failure itself is still ours.
    FW_CHECK(snd.sf, op, " Failed to read audio file ", quoted(path), ": ", sf_strerror(nullptr));
    FW_CHECK(info.channels > 0, op, " Invalid audio file ", quoted(path), ": ", info.channels, " channels");
    FW_CHECK(info.samplerate > 0, op, " Invalid audio file ", quoted(path), ": sample rate ", info.samplerate);
    FW_CHECK(info.frames >= 0, op, " Invalid audio file ", quoted(path), ": ", info.frames, " frames");
    int major = info.format & SF_FORMAT_TYPEMASK;
    if (major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX) {
      auto cut = wav_data_shortfall(fd.fd, file_size);
      FW_CHECK(!cut, op, " Truncated audio file ", quoted(path), ": the data chunk declares ",
               cut ? cut->first : 0, " bytes but only ", cut ? cut->second : 0, " are present");
    }
  }
  int major() const { return info.format & SF_FORMAT_TYPEMASK; }
  int sub() const { return info.format & SF_FORMAT_SUBMASK; }
};

AudioMetaData metadata(const Input& in) {
  AudioMetaData m;
  m.sample_rate = in.info.samplerate;
  m.num_frames = in.info.frames;
  m.num_channels = in.info.channels;
  auto set = [&](const char* enc, int64_t bits) { m.encoding = enc, m.bits_per_sample = bits; };
  switch (in.sub()) {
    case SF_FORMAT_PCM_S8: set("PCM_S", 8); break;
    case SF_FORMAT_PCM_16: set("PCM_S", 16); break;
    case SF_FORMAT_PCM_24: set("PCM_S", 24); break;
    case SF_FORMAT_PCM_32: set("PCM_S", 32); break;
    case SF_FORMAT_PCM_U8: set("PCM_U", 8); break;
    case SF_FORMAT_FLOAT: set("PCM_F", 32); break;
    case SF_FORMAT_DOUBLE: set("PCM_F", 64); break;
    case SF_FORMAT_ULAW: set("ULAW", 8); break;
    case SF_FORMAT_ALAW: set("ALAW", 8); break;
    case SF_FORMAT_VORBIS: set("VORBIS", 0); break;
    case SF_FORMAT_OPUS: set("OPUS", 0); break;
    case SF_FORMAT_MPEG_LAYER_III: set("MP3", 0); break;
    case SF_FORMAT_GSM610: set("GSM", 0); break;
    default: set("UNKNOWN", 0);
  }
  if (in.major() == SF_FORMAT_FLAC) m.encoding = "FLAC";  // bits stay those of the PCM subtype
  return m;
}

sf_count_t readf(SNDFILE* sf, int16_t* p, sf_count_t n) { return sf_readf_short(sf, p, n); }
sf_count_t readf(SNDFILE* sf, int32_t* p, sf_count_t n) { return sf_readf_int(sf, p, n); }
sf_count_t readf(SNDFILE* sf, float* p, sf_count_t n) { return sf_readf_float(sf, p, n); }

// Reads up to `want` interleaved frames. The frame count of a FLAC or Vorbis header is only a
// claim (a broken 100-byte file may say 2^36 frames), so the buffer starts at what the file
// size makes plausible and grows with the data actually decoded.
template <class T>
std::vector<T> read_frames(Input& in, int64_t want, const std::string& path) {
  const int64_t ch = in.info.channels;
  // 8 samples per byte covers PCM, FLAC and most Vorbis in one allocation.
  const int64_t plausible = std::max<int64_t>(int64_t(1) << 16, int64_t(std::min<uint64_t>(in.file_size, 1ull << 40)) * 8) / ch;
  std::vector<T> buf(size_t(std::min(want, plausible) * ch));
  int64_t got = 0;
  while (got < want) {
    if (got * ch == int64_t(buf.size())) buf.resize(size_t(std::min(want, 2 * got) * ch));
    sf_count_t n = readf(in.snd.sf, buf.data() + got * ch, sf_count_t(int64_t(buf.size()) / ch - got));
    if (n <= 0) break;
    got += n;
  }
  FW_CHECK(sf_error(in.snd.sf) == SF_ERR_NO_ERROR, "[audio::load] Failed to decode ", quoted(path), ": ",
           sf_strerror(in.snd.sf));
  // MP3 frame counts are estimates; every other reader knows the exact length, so coming up
  // short means the data ends early (a cut FLAC stream decodes up to the cut, then stops).
  FW_CHECK(got == want || in.major() == SF_FORMAT_MPEG, "[audio::load] Truncated or corrupt audio file ",
           quoted(path), ": decoded ", got, " of ", want, " frames");
  buf.resize(size_t(got * ch));
  return buf;
}

// Interleaved (frames, channels) samples -> a tensor in the requested layout, converting
// each sample with f on the way.
template <class Out, class In, class F>
Tensor to_tensor(const std::vector<In>& src, int64_t ch, bool channels_first, ScalarType dtype, F f) {
  const int64_t frames = int64_t(src.size()) / ch;
  Tensor t = channels_first ? fw::empty({ch, frames}, dtype) : fw::empty({frames, ch}, dtype);
  Out* dst = t.data_ptr<Out>();
  if (!channels_first || ch == 1) {
    for (size_t i = 0; i < src.size(); ++i) dst[i] = f(src[i]);
  } else {
    for (int64_t c = 0; c < ch; ++c)
      for (int64_t i = 0; i < frames; ++i) dst[c * frames + i] = f(src[size_t(i * ch + c)]);
  }
  return t;
}

// ---- save ----

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// What the file stores: libsndfile format, bit depth that float samples are rounded to
// (0 when the file stores floats), and whether NaN is representable.
struct Target {
  int format = 0;
  int bits = 0;         // integer depth that samples are rounded to; 0: float samples
  bool is_vorbis = false;
  bool ulaw = false;
  std::string describe;  // for messages, e.g. "wav PCM_S 16-bit"
};

Target resolve_target(const std::string& path, const Tensor& w, const SaveOptions& o) {
  std::string fmt = lower(o.format);
  if (fmt.empty()) {
    std::string ext = std::filesystem::path(path).extension().string();
    fmt = lower(ext.empty() ? ext : ext.substr(1));
    FW_CHECK(!fmt.empty(), "[audio::save] Cannot infer the format of ", quoted(path),
             " from its extension; pass SaveOptions::format (\"wav\", \"flac\" or \"ogg\")");
  }
  const std::string& enc = o.encoding;
  const int64_t bits = o.bits_per_sample;
  FW_CHECK(bits == -1 || bits == 8 || bits == 16 || bits == 24 || bits == 32 || bits == 64,
           "[audio::save] bits_per_sample must be -1, 8, 16, 24, 32 or 64. Found: ", bits, " (file ", quoted(path), ")");
  Target t;
  if (fmt == "wav") {
    // torchaudio's get_save_encoding_for_wav.
    std::string e = enc;
    int64_t b = bits;
    if (e.empty()) {
      if (b == -1) {
        switch (w.scalar_type()) {
          case kByte: e = "PCM_U", b = 8; break;
          case kShort: e = "PCM_S", b = 16; break;
          case kInt: e = "PCM_S", b = 32; break;
          default: e = "PCM_F", b = 32;
        }
      } else {
        e = b == 8 ? "PCM_U" : "PCM_S";
      }
    }
    if (e == "PCM_S") {
      if (b == -1) b = 32;
      FW_CHECK(b != 8, "[audio::save] wav does not support 8-bit signed PCM encoding (file ", quoted(path), ")");
      FW_CHECK(b != 64, "[audio::save] wav does not support 64-bit signed PCM encoding (file ", quoted(path), ")");
      t.format = SF_FORMAT_WAV | (b == 16 ? SF_FORMAT_PCM_16 : b == 24 ? SF_FORMAT_PCM_24 : SF_FORMAT_PCM_32);
      t.bits = int(b);
    } else if (e == "PCM_U") {
      FW_CHECK(b == -1 || b == 8, "[audio::save] wav only supports 8-bit for unsigned PCM encoding (file ", quoted(path), ")");
      t.format = SF_FORMAT_WAV | SF_FORMAT_PCM_U8, t.bits = 8, b = 8;
    } else if (e == "PCM_F") {
      FW_CHECK(b == -1 || b == 32 || b == 64,
               "[audio::save] wav only supports 32-bit or 64-bit for floating-point PCM encoding (file ", quoted(path), ")");
      if (b == -1) b = 32;
      t.format = SF_FORMAT_WAV | (b == 64 ? SF_FORMAT_DOUBLE : SF_FORMAT_FLOAT);
    } else if (e == "ULAW" || e == "ALAW") {
      FW_CHECK(b == -1 || b == 8, "[audio::save] wav only supports 8-bit for ", e == "ULAW" ? "mu-law" : "a-law",
               " encoding (file ", quoted(path), ")");
      t.format = SF_FORMAT_WAV | (e == "ULAW" ? SF_FORMAT_ULAW : SF_FORMAT_ALAW), b = 8;
      t.bits = e == "ULAW" ? 14 : 13;  // the depth sox rounds to before companding
      t.ulaw = e == "ULAW";
    } else {
      FW_CHECK(false, "[audio::save] Unsupported encoding \"", e,
               "\"; expected one of PCM_S, PCM_U, PCM_F, ULAW, ALAW (file ", quoted(path), ")");
    }
    t.describe = "wav " + e + " " + std::to_string(b) + "-bit";
  } else if (fmt == "flac") {
    FW_CHECK(enc.empty(), "[audio::save] flac does not support `encoding` option (file ", quoted(path), ")");
    FW_CHECK(bits == -1 || bits <= 24, "[audio::save] flac does not support `bits_per_sample` larger than 24 (file ",
             quoted(path), ")");
    t.bits = bits == -1 ? 24 : int(bits);
    t.format = SF_FORMAT_FLAC | (t.bits == 8 ? SF_FORMAT_PCM_S8 : t.bits == 16 ? SF_FORMAT_PCM_16 : SF_FORMAT_PCM_24);
    t.describe = "flac " + std::to_string(t.bits) + "-bit";
  } else if (fmt == "ogg" || fmt == "vorbis") {
    FW_CHECK(enc.empty(), "[audio::save] vorbis does not support `encoding` option (file ", quoted(path), ")");
    FW_CHECK(bits == -1, "[audio::save] vorbis does not support `bits_per_sample` option (file ", quoted(path), ")");
    t.format = SF_FORMAT_OGG | SF_FORMAT_VORBIS, t.is_vorbis = true, t.describe = "ogg vorbis";
  } else {
    FW_CHECK(false, "[audio::save] Unsupported format \"", fmt, "\" for ", quoted(path),
             "; supported: wav, flac, ogg (vorbis)");
  }
  return t;
}

// sox's float -> sample conversion: scale by 2^31 in double, clamp, truncate toward zero.
inline int32_t float_to_sox(double x) {
  double v = std::clamp(x * 2147483648.0, -2147483648.0, 2147483647.0);
  return int32_t(v);
}
// sox's SOX_SAMPLE_TO_SIGNED(bits): round half up to `bits`, saturating at the top; the result
// is returned left-aligned in 32 bits, which libsndfile's int writers shift back exactly.
inline int32_t sox_round(int32_t q, int bits) {
  if (bits == 32) return q;
  const int shift = 32 - bits;
  int64_t r = (int64_t(q) + (int64_t(1) << (shift - 1))) >> shift;
  r = std::min<int64_t>(r, (int64_t(1) << (bits - 1)) - 1);
  return int32_t(uint32_t(r) << shift);
}

template <class S> int32_t int_to_sox(S v);
template <> int32_t int_to_sox(uint8_t v) { return int32_t(uint32_t(int32_t(v) - 128) << 24); }
template <> int32_t int_to_sox(int16_t v) { return int32_t(uint32_t(int32_t(v)) << 16); }
template <> int32_t int_to_sox(int32_t v) { return v; }

// G.711 as sox encodes it: Sun's reference g711.c applied to the sample rounded to 14 bits
// (mu-law) or 13 bits (A-law). libsndfile's tables take 16-bit input and pick other codes for
// about 7% of samples.
inline int g711_segment(int v, const int* ends) {
  int s = 0;
  while (s < 8 && v > ends[s]) ++s;
  return s;
}
uint8_t linear_to_ulaw(int v) {  // v: 14-bit
  static const int ends[8] = {0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF, 0x1FFF};
  int mask = 0xFF;
  if (v < 0) v = -v, mask = 0x7F;
  v = std::min(v, 8159) + (0x84 >> 2);
  int seg = g711_segment(v, ends);
  int u = seg >= 8 ? 0x7F : (seg << 4) | ((v >> (seg + 1)) & 0xF);
  return uint8_t(u ^ mask);
}
uint8_t linear_to_alaw(int v) {  // v: 13-bit
  static const int ends[8] = {0x1F, 0x3F, 0x7F, 0xFF, 0x1FF, 0x3FF, 0x7FF, 0xFFF};
  int mask = 0xD5;
  if (v < 0) v = -v - 1, mask = 0x55;
  int seg = g711_segment(v, ends);
  int a = seg >= 8 ? 0x7F : (seg << 4) | ((seg < 2 ? v >> 1 : v >> seg) & 0xF);
  return uint8_t(a ^ mask);
}

sf_count_t writef(SNDFILE* sf, const int32_t* p, sf_count_t n) { return sf_writef_int(sf, p, n); }
sf_count_t writef(SNDFILE* sf, const float* p, sf_count_t n) { return sf_writef_float(sf, p, n); }
sf_count_t writef(SNDFILE* sf, const double* p, sf_count_t n) { return sf_writef_double(sf, p, n); }

// Converts interleaved samples of type S to the file's representation D and writes them in
// blocks (bounded extra memory for long recordings).
template <class D, class S>
void write_samples(SNDFILE* sf, const S* src, int64_t frames, int64_t ch, const Target& t, const std::string& path) {
  constexpr bool float_src = std::is_floating_point_v<S>;
  const int64_t block = std::max<int64_t>(1, (int64_t(1) << 16) / ch);
  std::vector<D> buf(size_t(std::min(frames, block) * ch));
  for (int64_t f0 = 0; f0 < frames; f0 += block) {
    const int64_t nf = std::min(block, frames - f0), n = nf * ch;
    const S* s = src + f0 * ch;
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_integral_v<D>) {
        int32_t q;
        if constexpr (float_src) {
          FW_CHECK(!std::isnan(s[i]), "[audio::save] Cannot write NaN to ", t.describe, " file ", quoted(path),
                   " (sample ", f0 * ch + i, "); only PCM_F wav stores NaN");
          q = sox_round(float_to_sox(double(s[i])), t.bits);
        } else {
          q = sox_round(int_to_sox(s[i]), t.bits);
        }
        if constexpr (std::is_same_v<D, uint8_t>)
          buf[size_t(i)] = t.ulaw ? linear_to_ulaw(q >> 18) : linear_to_alaw(q >> 19);
        else
          buf[size_t(i)] = q;
      } else if constexpr (float_src) {
        if (t.is_vorbis) {
          // sox hands Vorbis clamped int32 samples; a NaN would poison the encoder's state.
          FW_CHECK(!std::isnan(s[i]), "[audio::save] Cannot write NaN to ", t.describe, " file ", quoted(path),
                   " (sample ", f0 * ch + i, "); only PCM_F wav stores NaN");
          buf[size_t(i)] = D(std::clamp(double(s[i]), -1.0, 1.0));
        } else {
          buf[size_t(i)] = D(s[i]);  // PCM_F keeps samples as they are, NaN and |x| > 1 included
        }
      } else {
        buf[size_t(i)] = D(double(int_to_sox(s[i])) * (1.0 / 2147483648.0));
      }
    }
    sf_count_t w;
    if constexpr (std::is_same_v<D, uint8_t>) w = sf_write_raw(sf, buf.data(), n) / ch;  // G.711 codes
    else w = writef(sf, buf.data(), nf);
    FW_CHECK(w == nf, "[audio::save] Failed to write ", quoted(path), ": ", sf_strerror(sf));
  }
}

template <class S>
void write_all(SNDFILE* sf, const Tensor& inter, const Target& t, const std::string& path) {
  const S* src = inter.data_ptr<S>();
  const int64_t frames = inter.size(0), ch = inter.size(1);
  const int sub = t.format & SF_FORMAT_SUBMASK;
  if (sub == SF_FORMAT_ULAW || sub == SF_FORMAT_ALAW) write_samples<uint8_t>(sf, src, frames, ch, t, path);
  else if (t.bits > 0) write_samples<int32_t>(sf, src, frames, ch, t, path);
  else if (sub == SF_FORMAT_DOUBLE) write_samples<double>(sf, src, frames, ch, t, path);
  else write_samples<float>(sf, src, frames, ch, t, path);
}

// A temporary file next to the destination, removed unless committed.
struct TempFile {
  std::string path;
  Fd fd;
  bool committed = false;
  ~TempFile() {
    fd.reset();
    if (!path.empty() && !committed) ::unlink(path.c_str());
  }
};

void open_temp_next_to(const std::string& dest, TempFile& tmp) {
  static std::atomic<uint64_t> counter{0};
  std::filesystem::path p(dest);
  std::random_device rd;
  for (int attempt = 0; attempt < 100; ++attempt) {
    std::string name = "." + p.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                       std::to_string(counter++) + "-" + std::to_string(rd() & 0xFFFFF);
    std::string candidate = (p.parent_path() / name).string();
    // 0666 and O_EXCL: the process umask applies as for any new file, and no other file is reused.
    int fd = ::open(candidate.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0) {
      tmp.path = candidate;
      tmp.fd.fd = fd;
      return;
    }
    FW_CHECK(errno == EEXIST, "[audio::save] Failed to create a temporary file for ", quoted(dest), " (",
             quoted(candidate), "): ", std::strerror(errno));
  }
  FW_CHECK(false, "[audio::save] Failed to create a temporary file for ", quoted(dest));
}

}  // namespace

AudioMetaData info(const std::string& path) {
  Input in(path, "[audio::info]");
  return metadata(in);
}

std::pair<Tensor, int64_t> load(const std::string& path, const LoadOptions& o) {
  FW_CHECK(o.frame_offset >= 0, "[audio::load] frame_offset must be non-negative. Found: ", o.frame_offset,
           " (file ", quoted(path), ")");
  FW_CHECK(o.num_frames == -1 || o.num_frames > 0, "[audio::load] num_frames must be -1 or greater than 0. Found: ",
           o.num_frames, " (file ", quoted(path), ")");
  Input in(path, "[audio::load]");
  const int64_t total = in.info.frames, ch = in.info.channels;
  FW_CHECK(o.frame_offset <= total, "[audio::load] frame_offset (", o.frame_offset, ") is beyond the end of ",
           quoted(path), " (", total, " frames)");
  const int64_t want = o.num_frames == -1 ? total - o.frame_offset : std::min(o.num_frames, total - o.frame_offset);
  if (o.frame_offset > 0 && want > 0) {
    FW_CHECK(sf_seek(in.snd.sf, o.frame_offset, SEEK_SET) == o.frame_offset, "[audio::load] Failed to seek to frame ",
             o.frame_offset, " in ", quoted(path), ": ", sf_strerror(in.snd.sf));
  }
  const int sub = in.sub();
  const bool pcm = in.major() != SF_FORMAT_FLAC &&
                   (sub == SF_FORMAT_PCM_S8 || sub == SF_FORMAT_PCM_16 || sub == SF_FORMAT_PCM_24 ||
                    sub == SF_FORMAT_PCM_32 || sub == SF_FORMAT_PCM_U8);
  Tensor out;
  const bool cf = o.channels_first;
  if (o.normalize || !pcm) {
    auto v = read_frames<float>(in, want, path);
    out = to_tensor<float>(v, ch, cf, kFloat, [](float x) { return x; });
  } else if (sub == SF_FORMAT_PCM_16) {
    auto v = read_frames<int16_t>(in, want, path);
    out = to_tensor<int16_t>(v, ch, cf, kShort, [](int16_t x) { return x; });
  } else {
    // libsndfile returns every PCM depth left-aligned in int32, as torchaudio returns 24-bit.
    auto v = read_frames<int32_t>(in, want, path);
    if (sub == SF_FORMAT_PCM_U8)
      out = to_tensor<uint8_t>(v, ch, cf, kByte, [](int32_t x) { return uint8_t((x >> 24) + 128); });
    else if (sub == SF_FORMAT_PCM_S8)
      out = to_tensor<int8_t>(v, ch, cf, kChar, [](int32_t x) { return int8_t(x >> 24); });
    else
      out = to_tensor<int32_t>(v, ch, cf, kInt, [](int32_t x) { return x; });
  }
  return {out, int64_t(in.info.samplerate)};
}

void save(const std::string& path, const Tensor& waveform, int64_t sample_rate, const SaveOptions& o) {
  FW_CHECK(waveform.defined(), "[audio::save] waveform is an undefined tensor (file ", quoted(path), ")");
  FW_CHECK(waveform.dim() == 1 || waveform.dim() == 2, "[audio::save] Expected a 1-D or 2-D waveform, but got ",
           waveform.dim(), "-D with sizes ", waveform.sizes(), " (file ", quoted(path), ")");
  FW_CHECK(sample_rate > 0 && sample_rate <= INT_MAX, "[audio::save] sample_rate must be in [1, 2^31 - 1]. Found: ",
           sample_rate, " (file ", quoted(path), ")");
  const ScalarType dt = waveform.scalar_type();
  FW_CHECK(is_floating_point(dt) || dt == kInt || dt == kShort || dt == kByte,
           "[audio::save] Input tensor has to be one of float32, float64, int32, int16 or uint8 type. Found: ", dt,
           " (file ", quoted(path), ")");
  // Interleaved (frames, channels) contiguous, as libsndfile takes it.
  Tensor w = waveform.is_cpu() ? waveform : waveform.cpu();
  if (w.dim() == 1) w = w.unsqueeze(1);
  else if (o.channels_first) w = w.t();
  if (dt == kHalf || dt == kBFloat16) w = w.to(kFloat);
  w = w.contiguous();
  const int64_t ch = w.size(1);
  FW_CHECK(ch > 0, "[audio::save] waveform has no channels (sizes ", waveform.sizes(), ", channels_first=",
           o.channels_first, ", file ", quoted(path), ")");
  FW_CHECK(ch <= 1024, "[audio::save] At most 1024 channels are supported. Found: ", ch, " (file ", quoted(path), ")");
  const Target t = resolve_target(path, w, o);

  TempFile tmp;
  open_temp_next_to(path, tmp);
  SF_INFO info{};
  info.samplerate = int(sample_rate);
  info.channels = int(ch);
  info.format = t.format;
  FW_CHECK(sf_format_check(&info), "[audio::save] libsndfile cannot write ", t.describe, " with ", ch,
           " channels at ", sample_rate, " Hz (file ", quoted(path), ")");
  Sndfile snd;
  snd.sf = sf_open_fd(tmp.fd.fd, SFM_WRITE, &info, SF_FALSE);
  FW_CHECK(snd.sf, "[audio::save] Failed to write ", quoted(path), ": ", sf_strerror(nullptr));
  // The PEAK chunk holds a timestamp, which would make identical saves differ byte for byte.
  sf_command(snd.sf, SFC_SET_ADD_PEAK_CHUNK, nullptr, SF_FALSE);
  if (!std::isnan(o.compression)) {
    double level;
    if (t.is_vorbis) {
      FW_CHECK(o.compression >= -1 && o.compression <= 10, "[audio::save] vorbis compression must be in [-1, 10]. Found: ",
               o.compression, " (file ", quoted(path), ")");
      level = 1.0 - o.compression / 10.0;  // libsndfile: quality = 1 - level; sox: quality = q / 10
    } else {
      FW_CHECK((t.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_FLAC, "[audio::save] compression is only supported for flac and vorbis (file ",
               quoted(path), ")");
      FW_CHECK(o.compression >= 0 && o.compression <= 8, "[audio::save] flac compression must be in [0, 8]. Found: ",
               o.compression, " (file ", quoted(path), ")");
      level = o.compression / 8.0;
    }
    sf_command(snd.sf, SFC_SET_COMPRESSION_LEVEL, &level, sizeof(level));
  } else {
    // sox's defaults: flac -C 8, vorbis quality 3.
    double level = t.is_vorbis ? 0.7 : 1.0;
    if (t.is_vorbis || (t.format & SF_FORMAT_TYPEMASK) == SF_FORMAT_FLAC)
      sf_command(snd.sf, SFC_SET_COMPRESSION_LEVEL, &level, sizeof(level));
  }
  switch (w.scalar_type()) {
    case kFloat: write_all<float>(snd.sf, w, t, path); break;
    case kDouble: write_all<double>(snd.sf, w, t, path); break;
    case kInt: write_all<int32_t>(snd.sf, w, t, path); break;
    case kShort: write_all<int16_t>(snd.sf, w, t, path); break;
    case kByte: write_all<uint8_t>(snd.sf, w, t, path); break;
    default: FW_ASSERT(false);
  }
  // sf_close writes the final header; only then is the temporary file complete.
  int rc = snd.close();
  FW_CHECK(rc == 0, "[audio::save] Failed to finish ", quoted(path), ": ", sf_error_number(rc));
  FW_CHECK(::fsync(tmp.fd.fd) == 0, "[audio::save] fsync failed for ", quoted(path), ": ", std::strerror(errno));
  FW_CHECK(tmp.fd.reset() == 0, "[audio::save] close failed for ", quoted(path), ": ", std::strerror(errno));
  FW_CHECK(::rename(tmp.path.c_str(), path.c_str()) == 0, "[audio::save] Failed to move the new file to ",
           quoted(path), ": ", std::strerror(errno));
  tmp.committed = true;
  // Persist the rename itself; without it a crash could bring back the old directory entry.
  std::string dir = std::filesystem::path(path).parent_path().string();
  Fd d;
  d.fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d.fd >= 0) ::fsync(d.fd);
}

std::vector<std::string> supported_formats() { return {"wav", "flac", "ogg", "vorbis"}; }

}  // namespace fw::audio
