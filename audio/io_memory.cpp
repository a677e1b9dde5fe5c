// fw::audio::load_from_memory (declared in fw/audio/kaldi_io.h): libsndfile's virtual I/O over a
// byte buffer, with the checks fw::audio::load makes on files (audio/io.cpp): a WAV data chunk
// that declares more bytes than the buffer holds is an error (libsndfile would quietly shorten
// it), a frame count that the buffer cannot hold does not size any allocation, and a stream that
// decodes fewer frames than it declares is an error.
#include <sndfile.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "fw/audio/kaldi_io.h"
#include "fw/ops.h"

namespace fw::audio {
namespace {

struct MemoryFile {
  const unsigned char* data;
  sf_count_t size;
  sf_count_t pos = 0;
};

sf_count_t mem_length(void* user) { return static_cast<MemoryFile*>(user)->size; }

sf_count_t mem_seek(sf_count_t offset, int whence, void* user) {
  auto* m = static_cast<MemoryFile*>(user);
  sf_count_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? m->pos : m->size;
  sf_count_t p = base + offset;
  if (p < 0) return -1;
  m->pos = std::min(p, m->size);
  return m->pos;
}

sf_count_t mem_read(void* dst, sf_count_t count, void* user) {
  auto* m = static_cast<MemoryFile*>(user);
  if (count <= 0) return 0;
  sf_count_t n = std::min(count, m->size - m->pos);
  if (n <= 0) return 0;
  std::memcpy(dst, m->data + m->pos, size_t(n));
  m->pos += n;
  return n;
}

sf_count_t mem_write(const void*, sf_count_t, void*) { return 0; }
sf_count_t mem_tell(void* user) { return static_cast<MemoryFile*>(user)->pos; }

uint32_t rd32(const unsigned char* p, bool big_endian) {
  return big_endian ? uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]
                    : uint32_t(p[3]) << 24 | uint32_t(p[2]) << 16 | uint32_t(p[1]) << 8 | p[0];
}

// (declared, present) bytes of a WAV data chunk that runs past the end of the buffer. Sizes 0
// and 0xFFFFFFFF (streaming writers that did not know the length) are accepted as they are.
std::optional<std::pair<uint64_t, uint64_t>> wav_data_shortfall(const unsigned char* b, uint64_t size) {
  if (size < 12) return std::nullopt;
  const bool be = std::memcmp(b, "RIFX", 4) == 0;
  if ((!be && std::memcmp(b, "RIFF", 4) != 0) || std::memcmp(b + 8, "WAVE", 4) != 0) return std::nullopt;
  uint64_t pos = 12;
  for (int i = 0; i < 1024 && pos + 8 <= size; ++i) {
    const uint64_t chunk = rd32(b + pos + 4, be);
    if (std::memcmp(b + pos, "data", 4) == 0) {
      const uint64_t present = size - (pos + 8);
      if (chunk == 0 || chunk == 0xFFFFFFFFu || chunk <= present) return std::nullopt;
      return std::make_pair(chunk, present);
    }
    pos += 8 + chunk + (chunk & 1);
  }
  return std::nullopt;
}

}  // namespace

std::pair<Tensor, int64_t> load_from_memory(const void* data, size_t size, const LoadOptions& o,
                                            const std::string& name) {
  const char* op = "[audio::load_from_memory]";
  const std::string who = "\"" + name + "\"";
  FW_CHECK(o.normalize, op, " Only normalize=true (float32 samples) is supported (", who, ")");
  FW_CHECK(o.frame_offset >= 0, op, " frame_offset must be non-negative. Found: ", o.frame_offset, " (", who, ")");
  FW_CHECK(o.num_frames == -1 || o.num_frames > 0, op, " num_frames must be -1 or greater than 0. Found: ",
           o.num_frames, " (", who, ")");
  FW_CHECK(data != nullptr || size == 0, op, " null data pointer (", who, ")");
  FW_CHECK(size > 0, op, " Failed to read audio ", who, ": no bytes (empty file or command output)");
  MemoryFile mem{static_cast<const unsigned char*>(data), sf_count_t(size)};
  SF_VIRTUAL_IO vio{mem_length, mem_seek, mem_read, mem_write, mem_tell};
  SF_INFO info{};
  SNDFILE* sf = sf_open_virtual(&vio, SFM_READ, &info, &mem);
  FW_CHECK(sf, op, " Failed to read audio ", who, ": ", sf_strerror(nullptr));
  struct Closer {
    SNDFILE* sf;
    ~Closer() { sf_close(sf); }
  } closer{sf};
  FW_CHECK(info.channels > 0 && info.channels <= 4096, op, " Invalid audio ", who, ": ", info.channels, " channels");
  FW_CHECK(info.samplerate > 0, op, " Invalid audio ", who, ": sample rate ", info.samplerate);
  FW_CHECK(info.frames >= 0, op, " Invalid audio ", who, ": ", info.frames, " frames");
  const int major = info.format & SF_FORMAT_TYPEMASK;
  if (major == SF_FORMAT_WAV || major == SF_FORMAT_WAVEX) {
    auto cut = wav_data_shortfall(static_cast<const unsigned char*>(data), size);
    FW_CHECK(!cut, op, " Truncated audio ", who, ": the data chunk declares ", cut ? cut->first : 0,
             " bytes but only ", cut ? cut->second : 0, " are present");
  }
  const int64_t total = info.frames, ch = info.channels;
  FW_CHECK(o.frame_offset <= total, op, " frame_offset (", o.frame_offset, ") is beyond the end of ", who, " (",
           total, " frames)");
  const int64_t want = o.num_frames == -1 ? total - o.frame_offset : std::min(o.num_frames, total - o.frame_offset);
  if (o.frame_offset > 0 && want > 0)
    FW_CHECK(sf_seek(sf, o.frame_offset, SEEK_SET) == o.frame_offset, op, " Failed to seek to frame ", o.frame_offset,
             " in ", who, ": ", sf_strerror(sf));
  // The header's frame count is only a claim: start from what the byte count makes plausible
  // (8 samples per byte covers PCM, FLAC and most Vorbis) and grow with the data decoded.
  const int64_t plausible = std::max<int64_t>(int64_t(1) << 16, int64_t(std::min<uint64_t>(size, 1ull << 40)) * 8) / ch;
  std::vector<float> buf(size_t(std::min(want, plausible) * ch));
  int64_t got = 0;
  while (got < want) {
    if (got * ch == int64_t(buf.size())) buf.resize(size_t(std::min(want, 2 * got) * ch));
    sf_count_t n = sf_readf_float(sf, buf.data() + got * ch, sf_count_t(int64_t(buf.size()) / ch - got));
    if (n <= 0) break;
    got += n;
  }
  FW_CHECK(sf_error(sf) == SF_ERR_NO_ERROR, op, " Failed to decode ", who, ": ", sf_strerror(sf));
  FW_CHECK(got == want || major == SF_FORMAT_MPEG, op, " Truncated or corrupt audio ", who, ": decoded ", got, " of ",
           want, " frames");
  Tensor out = o.channels_first ? fw::empty({ch, got}, kFloat) : fw::empty({got, ch}, kFloat);
  float* dst = out.data_ptr<float>();
  if (!o.channels_first || ch == 1) {
    std::memcpy(dst, buf.data(), size_t(got * ch) * sizeof(float));
  } else {
    for (int64_t c = 0; c < ch; ++c)
      for (int64_t i = 0; i < got; ++i) dst[c * got + i] = buf[size_t(i * ch + c)];
  }
  return {out, int64_t(info.samplerate)};
}

}  // namespace fw::audio
