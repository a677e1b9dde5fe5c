// torch.save archives: a zip container (stored entries, 64-byte aligned data, zip64 when large)
// around a pickle (protocol 2 when writing; 2-5 when reading) whose tensors reference storage
// records by key. See fw/pickle.h for what is supported and how untrusted files are handled.
//
// The format, as PyTorch writes it:
//   <name>/data.pkl   the pickled object. A tensor is the call
//                     torch._utils._rebuild_tensor_v2(storage, offset, size, stride,
//                                                     requires_grad, OrderedDict())
//                     where `storage` is a persistent id ('storage', torch.FloatStorage, key,
//                     location, numel) that names the record <name>/data/<key>;
//   <name>/data/<key> numel * itemsize raw little-endian bytes;
//   <name>/version    the format version ("3\n").
#include "fw/pickle.h"

#include "core/pickle_internal.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <string>
#include <unordered_map>

#include "fw/error.h"
#include "fw/ops.h"
#include "fw/parallel.h"
#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fw {

namespace {

// ---- CRC-32 (zip's polynomial 0xEDB88320), eight bytes per step

struct CrcTables {
  uint32_t t[8][256];
  CrcTables() {
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; ++i)
      for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xFF];
  }
};

// The raw CRC state c (no pre/post inversion) advanced over n bytes, eight bytes a step.
uint32_t crc32_tables(uint32_t c, const unsigned char* p, size_t n) {
  static const CrcTables tab;
  while (n >= 8) {
    uint32_t lo, hi;
    std::memcpy(&lo, p, 4);
    std::memcpy(&hi, p + 4, 4);
    lo ^= c;
    c = tab.t[7][lo & 0xFF] ^ tab.t[6][(lo >> 8) & 0xFF] ^ tab.t[5][(lo >> 16) & 0xFF] ^ tab.t[4][lo >> 24] ^
        tab.t[3][hi & 0xFF] ^ tab.t[2][(hi >> 8) & 0xFF] ^ tab.t[1][(hi >> 16) & 0xFF] ^ tab.t[0][hi >> 24];
    p += 8;
    n -= 8;
  }
  while (n--) c = tab.t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// Carry-less multiplication folding (Intel's "Fast CRC Computation for Generic Polynomials Using
// PCLMULQDQ"): four 128-bit lanes are multiplied forward by x^512 (mod P) and xored into the next
// 64 bytes, then folded into one lane; that lane's 16 bytes, which are congruent to everything
// read so far, and the tail go through the tables. The constants are the method's published
// 4-lane and 1-lane fold constants for zip's bit-reflected P = 0x04C11DB7; the initial state is
// xored into the first four bytes. Pickle.Crc32MatchesTheBytewiseDefinition checks every length.
#define FW_CLMUL __attribute__((target("pclmul,sse4.1")))
FW_CLMUL inline __m128i clmul_load(const unsigned char* q) {
  return _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
}
FW_CLMUL inline __m128i clmul_fold(__m128i x, __m128i k, __m128i next) {
  return _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next);
}
FW_CLMUL uint32_t crc32_clmul(uint32_t c, const unsigned char* p, size_t n) {
  const __m128i k4 = _mm_set_epi64x(0x1c6e41596LL, 0x154442bd4LL);
  const __m128i k1 = _mm_set_epi64x(0x0ccaa009eLL, 0x1751997d0LL);
  __m128i x0 = _mm_xor_si128(clmul_load(p), _mm_cvtsi32_si128(int(c)));
  __m128i x1 = clmul_load(p + 16), x2 = clmul_load(p + 32), x3 = clmul_load(p + 48);
  p += 64;
  n -= 64;
  for (; n >= 64; p += 64, n -= 64) {
    x0 = clmul_fold(x0, k4, clmul_load(p));
    x1 = clmul_fold(x1, k4, clmul_load(p + 16));
    x2 = clmul_fold(x2, k4, clmul_load(p + 32));
    x3 = clmul_fold(x3, k4, clmul_load(p + 48));
  }
  x0 = clmul_fold(clmul_fold(clmul_fold(x0, k1, x1), k1, x2), k1, x3);
  for (; n >= 16; p += 16, n -= 16) x0 = clmul_fold(x0, k1, clmul_load(p));
  alignas(16) unsigned char lane[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(lane), x0);
  return crc32_tables(crc32_tables(0, lane, 16), p, n);
}
#undef FW_CLMUL

bool has_clmul() {
  static const bool yes = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
  return yes;
}
#endif

uint32_t crc32(const unsigned char* p, size_t n) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (n >= 64 && has_clmul()) return crc32_clmul(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
#endif
  return crc32_tables(0xFFFFFFFFu, p, n) ^ 0xFFFFFFFFu;
}

// The CRC of A || B from crc(A), crc(B) and |B|: crc(A) times x^(8|B|) modulo the polynomial,
// plus crc(B). Polynomials are bit-reflected (x^0 is the top bit), as in the table above.
uint32_t gf2_mul_mod(uint32_t a, uint32_t b) {
  uint32_t product = 0;
  for (uint32_t m = 1u << 31; m != 0; m >>= 1) {
    if (a & m) product ^= b;
    b = (b & 1) ? (b >> 1) ^ 0xEDB88320u : b >> 1;  // b *= x
  }
  return product;
}

uint32_t crc32_combine(uint32_t crc_a, uint32_t crc_b, uint64_t len_b) {
  // x^(8 len_b) as a product of x^(2^k) for the set bits k of 8 len_b.
  static const auto powers = [] {
    std::array<uint32_t, 64> p{};
    p[0] = 1u << 30;  // x^1
    for (size_t k = 1; k < p.size(); ++k) p[k] = gf2_mul_mod(p[k - 1], p[k - 1]);
    return p;
  }();
  uint32_t x = 1u << 31;  // x^0
  uint64_t bits = len_b;
  for (size_t k = 3; bits != 0 && k < 64; ++k, bits >>= 1)
    if (bits & 1) x = gf2_mul_mod(powers[k], x);
  return gf2_mul_mod(x, crc_a) ^ crc_b;
}

// Copies n bytes into dst with read(offset, length, dst_piece) and returns their CRC-32, in
// 1 MiB pieces spread over the threads; each piece's CRC is taken on the copy while it is still in
// cache, and the pieces' CRCs are combined.
template <class Read>
uint32_t copy_with_crc(unsigned char* dst, size_t n, const Read& read) {
  constexpr size_t kPiece = size_t(1) << 20;
  const size_t pieces = (n + kPiece - 1) / kPiece;
  std::vector<uint32_t> crcs(pieces);
  parallel_for(0, int64_t(pieces), 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      size_t off = size_t(i) * kPiece, len = std::min(kPiece, n - off);
      read(off, len, dst + off);
      crcs[size_t(i)] = crc32(dst + off, len);
    }
  });
  uint32_t crc = 0;  // the CRC of no bytes
  for (size_t i = 0; i < pieces; ++i)
    crc = i == 0 ? crcs[0] : crc32_combine(crc, crcs[i], std::min(kPiece, n - i * kPiece));
  return crc;
}

// ---- little-endian helpers

uint64_t rd(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

template <class Buffer>  // std::vector<char> (the archive) or std::string (the pickle)
void wr(Buffer& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char((v >> (8 * i)) & 0xFF));
}

constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEndSig = 0x06054b50, kEnd64Sig = 0x06064b50,
                   kLocator64Sig = 0x07064b50;
constexpr uint64_t k32 = 0xFFFFFFFFu;

// Bytes a + b and a * b, or an error naming what was being computed.
uint64_t add_checked(uint64_t a, uint64_t b, const char* what) {
  FW_CHECK(a <= std::numeric_limits<uint64_t>::max() - b, "[pickle_load] ", what, " overflows");
  return a + b;
}

// ---- zip writer

class ZipWriter {
 public:
  explicit ZipWriter(bool force_zip64) : force64_(force_zip64) {}

  void reserve(size_t n) { out_.reserve(n); }

  void add(const std::string& name, const void* data, size_t n) {
    Entry e{name, out_.size(), n, 0};  // the CRC is filled in with the data
    bool z64 = force64_ || n >= k32 || e.offset >= k32;
    // Pad the local header with an extra field so the data starts at a multiple of 64 bytes, as
    // PyTorch does (readers may map tensor data in place).
    size_t header = 30 + name.size() + (z64 ? 20 : 0) + 4;
    size_t pad = (64 - (e.offset + header) % 64) % 64;
    wr(out_, kLocalSig, 4);
    wr(out_, z64 ? 45 : 20, 2);  // version needed
    wr(out_, 0, 2);              // flags
    wr(out_, 0, 2);              // stored
    wr(out_, 0, 4);              // time and date
    const size_t crc_at = out_.size();
    wr(out_, 0, 4);
    wr(out_, z64 ? k32 : n, 4);
    wr(out_, z64 ? k32 : n, 4);
    wr(out_, name.size(), 2);
    wr(out_, (z64 ? 20 : 0) + 4 + pad, 2);
    out_.insert(out_.end(), name.begin(), name.end());
    if (z64) {
      wr(out_, 0x0001, 2);
      wr(out_, 16, 2);
      wr(out_, n, 8);
      wr(out_, n, 8);
    }
    wr(out_, 0x4246, 2);  // "FB": PyTorch's padding field
    wr(out_, pad, 2);
    out_.insert(out_.end(), pad, 'Z');
    const size_t at = out_.size();
    out_.resize(at + n);
    const auto* src = static_cast<const unsigned char*>(data);
    e.crc = copy_with_crc(reinterpret_cast<unsigned char*>(out_.data() + at), n,
                          [&](size_t off, size_t len, unsigned char* d) { std::memcpy(d, src + off, len); });
    for (int i = 0; i < 4; ++i) out_[crc_at + size_t(i)] = char((e.crc >> (8 * i)) & 0xFF);
    entries_.push_back(std::move(e));
  }

  std::vector<char> finish() {
    uint64_t cd_offset = out_.size();
    bool any64 = force64_;
    for (const Entry& e : entries_) {
      bool z64 = force64_ || e.size >= k32 || e.offset >= k32;
      any64 |= z64;
      wr(out_, kCentralSig, 4);
      wr(out_, z64 ? 45 : 20, 2);  // version made by
      wr(out_, z64 ? 45 : 20, 2);  // version needed
      wr(out_, 0, 2);
      wr(out_, 0, 2);
      wr(out_, 0, 4);
      wr(out_, e.crc, 4);
      wr(out_, z64 ? k32 : e.size, 4);
      wr(out_, z64 ? k32 : e.size, 4);
      wr(out_, e.name.size(), 2);
      wr(out_, z64 ? 28 : 0, 2);  // extra
      wr(out_, 0, 2);             // comment
      wr(out_, 0, 2);             // disk
      wr(out_, 0, 2);             // internal attributes
      wr(out_, 0, 4);             // external attributes
      wr(out_, z64 ? k32 : e.offset, 4);
      out_.insert(out_.end(), e.name.begin(), e.name.end());
      if (z64) {
        wr(out_, 0x0001, 2);
        wr(out_, 24, 2);
        wr(out_, e.size, 8);
        wr(out_, e.size, 8);
        wr(out_, e.offset, 8);
      }
    }
    uint64_t cd_size = out_.size() - cd_offset;
    uint64_t n = entries_.size();
    if (any64 || n >= 0xFFFF || cd_offset >= k32 || cd_size >= k32) {
      uint64_t end64 = out_.size();
      wr(out_, kEnd64Sig, 4);
      wr(out_, 44, 8);  // size of the rest of this record
      wr(out_, 45, 2);
      wr(out_, 45, 2);
      wr(out_, 0, 4);
      wr(out_, 0, 4);
      wr(out_, n, 8);
      wr(out_, n, 8);
      wr(out_, cd_size, 8);
      wr(out_, cd_offset, 8);
      wr(out_, kLocator64Sig, 4);
      wr(out_, 0, 4);
      wr(out_, end64, 8);
      wr(out_, 1, 4);
      n = 0xFFFF;
      cd_size = k32;
      cd_offset = k32;
    }
    wr(out_, kEndSig, 4);
    wr(out_, 0, 2);
    wr(out_, 0, 2);
    wr(out_, std::min<uint64_t>(n, 0xFFFF), 2);
    wr(out_, std::min<uint64_t>(n, 0xFFFF), 2);
    wr(out_, std::min(cd_size, k32), 4);
    wr(out_, std::min(cd_offset, k32), 4);
    wr(out_, 0, 2);
    return std::move(out_);
  }

 private:
  struct Entry {
    std::string name;
    uint64_t offset, size;
    uint32_t crc;
  };
  bool force64_;
  std::vector<char> out_;
  std::vector<Entry> entries_;
};

// ---- where an archive's bytes come from: memory, or a file read with pread, so a checkpoint's
// records go straight into their storages without a whole-file buffer.

class Source {
 public:
  virtual ~Source() = default;
  virtual uint64_t size() const = 0;
  // n bytes at off into dst; callers keep off + n <= size().
  virtual void read(uint64_t off, size_t n, void* dst) const = 0;
  std::string bytes(uint64_t off, size_t n) const {
    std::string out(n, '\0');
    read(off, n, out.data());
    return out;
  }
};

class MemorySource : public Source {
 public:
  MemorySource(const unsigned char* p, size_t n) : p_(p), n_(n) {}
  uint64_t size() const override { return n_; }
  void read(uint64_t off, size_t n, void* dst) const override {
    if (n) std::memcpy(dst, p_ + off, n);
  }

 private:
  const unsigned char* p_;
  size_t n_;
};

class FileSource : public Source {
 public:
  FileSource(int fd, uint64_t n) : fd_(fd), n_(n) {}
  uint64_t size() const override { return n_; }
  void read(uint64_t off, size_t n, void* dst) const override {
    auto* d = static_cast<char*>(dst);
    while (n > 0) {
      ssize_t r = ::pread(fd_, d, n, off_t(off));
      if (r < 0 && errno == EINTR) continue;
      FW_CHECK(r > 0, "[pickle_load] reading the file failed at offset ", off,
               r < 0 ? std::string(": ") + std::strerror(errno) : std::string(" (truncated while reading?)"));
      d += r;
      off += uint64_t(r);
      n -= size_t(r);
    }
  }

 private:
  int fd_;
  uint64_t n_;
};

// ---- zip reader: the central directory is the truth; every field is bounds-checked.

class ZipReader {
 public:
  explicit ZipReader(const Source& src) : src_(src), n_(src.size()) {}

  // False when there is no end-of-central-directory record (not a zip archive).
  bool open() {
    if (n_ < 22) return false;
    // The end record is in the last 22 + 65535 (comment) bytes.
    uint64_t tail_start = n_ - std::min<uint64_t>(n_, 22 + 65535);
    std::string tail = src_.bytes(tail_start, size_t(n_ - tail_start));
    const auto* t = reinterpret_cast<const unsigned char*>(tail.data());
    size_t at = std::string::npos;
    for (size_t i = tail.size() - 22 + 1; i-- > 0;)
      if (rd(t + i, 4) == kEndSig) {
        at = i;
        break;
      }
    if (at == std::string::npos) return false;
    uint64_t end = tail_start + at;
    uint64_t count = rd(t + at + 10, 2), cd_size = rd(t + at + 12, 4), cd_offset = rd(t + at + 16, 4);
    uint64_t cd_limit = end;
    if (count == 0xFFFF || cd_size == k32 || cd_offset == k32) {
      std::string loc = end >= 20 ? src_.bytes(end - 20, 20) : std::string();
      const auto* l = reinterpret_cast<const unsigned char*>(loc.data());
      FW_CHECK(end >= 20 && rd(l, 4) == kLocator64Sig,
               "[pickle_load] corrupt zip archive: the end record asks for zip64 but has no zip64 locator");
      uint64_t end64 = rd(l + 8, 8);
      FW_CHECK(end64 <= end - 20 && end - 20 - end64 >= 56,
               "[pickle_load] corrupt zip archive: the zip64 end record at offset ", end64, " is invalid");
      std::string rec = src_.bytes(end64, 56);
      const auto* r = reinterpret_cast<const unsigned char*>(rec.data());
      FW_CHECK(rd(r, 4) == kEnd64Sig, "[pickle_load] corrupt zip archive: no zip64 end record at offset ", end64);
      count = rd(r + 32, 8);
      cd_size = rd(r + 40, 8);
      cd_offset = rd(r + 48, 8);
      cd_limit = end64;
    }
    FW_CHECK(cd_offset <= cd_limit && cd_size <= cd_limit - cd_offset, "[pickle_load] corrupt zip archive: the central "
             "directory (offset ", cd_offset, ", ", cd_size, " bytes) lies outside the file of ", n_, " bytes");
    FW_CHECK(count <= cd_size / 46, "[pickle_load] corrupt zip archive: ", count, " entries cannot fit in a central "
             "directory of ", cd_size, " bytes");
    data_limit_ = cd_offset;
    std::string cd = src_.bytes(cd_offset, size_t(cd_size));
    size_t pos = 0;
    for (uint64_t k = 0; k < count; ++k) read_entry(reinterpret_cast<const unsigned char*>(cd.data()), pos, cd.size(),
                                                    cd_offset);
    return true;
  }

  struct Located {
    uint64_t offset;
    size_t size;
    uint32_t crc;  // what the directory says; not yet checked
  };
  Located locate(const std::string& name) const {
    auto it = entries_.find(name);
    FW_CHECK(it != entries_.end(), "[pickle_load] the archive has no record '", name, "'");
    const Entry& e = it->second;
    FW_CHECK(!e.encrypted, "[pickle_load] record '", name, "' is encrypted");
    FW_CHECK(e.method == 0, "[pickle_load] record '", name, "' is compressed (zip method ", e.method,
             "); torch.save writes stored records only: re-save the file with torch.save");
    FW_CHECK(e.sizes_agree, "[pickle_load] corrupt zip archive: stored record '", name,
             "' has different compressed and uncompressed sizes");
    FW_CHECK(e.size <= std::numeric_limits<size_t>::max(), "[pickle_load] record '", name, "' is too large");
    return {e.data, size_t(e.size), e.crc};
  }

  // The bytes of a stored entry, CRC-checked.
  std::string read(const std::string& name) const {
    Located e = locate(name);
    std::string out = src_.bytes(e.offset, e.size);
    FW_CHECK(crc32(reinterpret_cast<const unsigned char*>(out.data()), out.size()) == e.crc, "[pickle_load] record '",
             name, "' is corrupt (CRC-32 mismatch)");
    return out;
  }

  const Source& source() const { return src_; }

  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& kv : entries_) out.push_back(kv.first);
    return out;
  }

 private:
  struct Entry {
    uint64_t data = 0, size = 0;
    uint32_t crc = 0;
    uint16_t method = 0;
    bool encrypted = false, sizes_agree = true;
  };

  // One central directory entry at cd[pos] (the directory starts at file offset cd_offset).
  void read_entry(const unsigned char* cd, size_t& pos, size_t cd_end, uint64_t cd_offset) {
    FW_CHECK(cd_end - pos >= 46 && rd(cd + pos, 4) == kCentralSig,
             "[pickle_load] corrupt zip archive: bad central directory entry at offset ", cd_offset + pos);
    uint64_t flags = rd(cd + pos + 8, 2), method = rd(cd + pos + 10, 2);
    uint32_t crc = uint32_t(rd(cd + pos + 16, 4));
    uint64_t csize = rd(cd + pos + 20, 4), usize = rd(cd + pos + 24, 4);
    size_t name_len = rd(cd + pos + 28, 2), extra_len = rd(cd + pos + 30, 2), comment_len = rd(cd + pos + 32, 2);
    uint64_t local = rd(cd + pos + 42, 4);
    FW_CHECK(cd_end - pos - 46 >= name_len + extra_len + comment_len, "[pickle_load] corrupt zip archive: central "
             "directory entry at offset ", cd_offset + pos, " overruns the directory");
    std::string name(reinterpret_cast<const char*>(cd + pos + 46), name_len);
    // zip64 extra field: the 8-byte values of whichever fields are saturated, in this order.
    const unsigned char* x = cd + pos + 46 + name_len;
    for (size_t off = 0; off + 4 <= extra_len;) {
      size_t id = rd(x + off, 2), len = rd(x + off + 2, 2);
      FW_CHECK(off + 4 + len <= extra_len, "[pickle_load] corrupt zip archive: extra field of '", name, "' overruns");
      if (id == 0x0001) {
        size_t q = off + 4;
        auto take = [&](uint64_t& field) {
          if (field != k32) return;
          FW_CHECK(q + 8 <= off + 4 + len, "[pickle_load] corrupt zip archive: short zip64 field for '", name, "'");
          field = rd(x + q, 8);
          q += 8;
        };
        take(usize);
        take(csize);
        take(local);
      }
      off += 4 + len;
    }
    pos += 46 + name_len + extra_len + comment_len;
    FW_CHECK(local <= data_limit_ && data_limit_ - local >= 30, "[pickle_load] corrupt zip archive: bad local header "
             "for '", name, "' at offset ", local);
    std::string lh = src_.bytes(local, 30);
    const auto* h = reinterpret_cast<const unsigned char*>(lh.data());
    FW_CHECK(rd(h, 4) == kLocalSig, "[pickle_load] corrupt zip archive: bad local header for '", name, "' at offset ",
             local);
    uint64_t data = local + 30 + rd(h + 26, 2) + rd(h + 28, 2);
    FW_CHECK(data <= data_limit_ && csize <= data_limit_ - data, "[pickle_load] corrupt zip archive: record '", name,
             "' (", csize, " bytes at offset ", data, ") runs past the data area of ", data_limit_, " bytes");
    // Encrypted or compressed records are refused when read (TorchScript archives compress code
    // files that a torch.save file does not have).
    Entry e{data, usize, crc, uint16_t(method), (flags & 1) != 0, csize == usize};
    FW_CHECK(entries_.emplace(name, e).second, "[pickle_load] the archive has two records named '", name, "'");
  }

  const Source& src_;
  uint64_t n_;
  uint64_t data_limit_ = 0;
  std::map<std::string, Entry> entries_;
};

// ---- storage dtypes by their Python class name

struct StorageName {
  const char* name;
  ScalarType dtype;
};
constexpr StorageName kStorageNames[] = {
    {"FloatStorage", kFloat},     {"DoubleStorage", kDouble},        {"HalfStorage", kHalf},
    {"BFloat16Storage", kBFloat16}, {"LongStorage", kLong},          {"IntStorage", kInt},
    {"ShortStorage", kShort},     {"CharStorage", kChar},            {"ByteStorage", kByte},
    {"BoolStorage", kBool},       {"ComplexFloatStorage", kComplexFloat}, {"ComplexDoubleStorage", kComplexDouble},
};

const char* storage_name(ScalarType t) {
  for (const auto& s : kStorageNames)
    if (s.dtype == t) return s.name;
  fw::detail::throw_error("[pickle_save] no PyTorch storage type for dtype ", dtype_name(t));
}

// ---- pickler (protocol 2, the opcodes torch.save uses)

class Pickler {
 public:
  std::string out;
  struct Storage {
    Tensor holder;  // keeps the memory alive until the archive is written
    ScalarType dtype;
    int64_t numel;
  };
  std::vector<Storage> storages;

  void put(const IValue& v, int depth) {
    FW_CHECK(depth < 1000, "[pickle_save] the value nests deeper than 1000 levels (a list that contains itself?)");
    if (v.isNone()) out += 'N';
    else if (v.isBool()) out += v.toBool() ? '\x88' : '\x89';
    else if (v.isInt()) put_int(v.toInt());
    else if (v.isDouble()) put_double(v.toDouble());
    else if (v.isString()) put_string(v.toStringRef());
    else if (v.isTensor()) put_tensor(v.toTensor());
    else if (v.isTuple()) {
      const auto& xs = v.toTupleRef().elements();
      if (xs.empty()) {
        out += ')';
        return;
      }
      if (xs.size() > 3) out += '(';
      for (const IValue& x : xs) put(x, depth + 1);
      out += xs.size() == 1 ? '\x85' : xs.size() == 2 ? '\x86' : xs.size() == 3 ? '\x87' : 't';
    } else if (v.isGenericDict()) {
      out += '}';
      GenericDict d = v.toGenericDict();
      if (d.empty()) return;
      out += '(';
      for (const auto& e : d) {
        put(e.key(), depth + 1);
        put(e.value(), depth + 1);
      }
      out += 'u';
    } else if (v.isList()) {
      out += ']';
      GenericList l = v.toList();
      if (l.empty()) return;
      out += '(';
      for (const IValue& x : l.vec()) put(x, depth + 1);
      out += 'e';
    } else {
      fw::detail::throw_error("[pickle_save] cannot save a value of kind ", v.tagKind());
    }
  }

 private:
  void put_int(int64_t i) {
    if (i >= 0 && i < 256) {
      out += 'K';
      wr(out, uint64_t(i), 1);
    } else if (i >= 0 && i < 65536) {
      out += 'M';
      wr(out, uint64_t(i), 2);
    } else if (i >= std::numeric_limits<int32_t>::min() && i <= std::numeric_limits<int32_t>::max()) {
      out += 'J';
      wr(out, uint64_t(uint32_t(int32_t(i))), 4);
    } else {
      out += '\x8a';  // LONG1: 8 bytes of two's complement
      out += '\x08';
      wr(out, uint64_t(i), 8);
    }
  }
  void put_double(double d) {
    out += 'G';  // big-endian
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    for (int i = 7; i >= 0; --i) out += char((bits >> (8 * i)) & 0xFF);
  }
  void put_string(const std::string& s) {
    FW_CHECK(s.size() < k32, "[pickle_save] a string of ", s.size(), " bytes is too long");
    out += 'X';
    wr(out, s.size(), 4);
    out += s;
  }
  void put_global(const char* module, const char* name) {
    out += 'c';
    out += module;
    out += '\n';
    out += name;
    out += '\n';
  }
  void put_tensor(Tensor t) {
    FW_CHECK(t.defined(), "[pickle_save] cannot save an undefined tensor");
    if (!t.is_cpu()) t = t.cpu();
    (void)t.data_ptr();  // materialises a value traced by fw::compile
    const StorageImpl* s = t.unsafeGetTensorImpl()->storage.get();
    size_t key = storages.size();
    for (size_t i = 0; i < storages.size(); ++i)
      if (storages[i].holder.unsafeGetTensorImpl()->storage.get() == s) key = i;
    if (key == storages.size()) {
      storages.push_back({t, t.scalar_type(), int64_t(s->nbytes / element_size(t.scalar_type()))});
    } else {
      FW_CHECK(storages[key].dtype == t.scalar_type(), "[pickle_save] two tensors view one storage with different dtypes (",
               dtype_name(storages[key].dtype), " and ", dtype_name(t.scalar_type()),
               "); PyTorch files keep one dtype per storage: save a clone of one of them");
    }
    put_global("torch._utils", "_rebuild_tensor_v2");
    out += '(';
    out += '(';  // the persistent id
    put_string("storage");
    put_global("torch", storage_name(t.scalar_type()));
    put_string(std::to_string(key));
    put_string("cpu");
    put_int(storages[key].numel);
    out += 't';
    out += 'Q';
    put_int(t.storage_offset());
    put_int_tuple(t.sizes());
    put_int_tuple(t.strides());
    out += t.requires_grad() ? '\x88' : '\x89';
    put_global("collections", "OrderedDict");
    out += ')';
    out += 'R';
    out += 't';
    out += 'R';
  }
  void put_int_tuple(IntArrayRef xs) {
    if (xs.empty()) {
      out += ')';
      return;
    }
    out += '(';
    for (int64_t x : xs) put_int(x);
    out += 't';
  }
};

std::vector<char> save_archive(const IValue& value, bool force_zip64) {
  Pickler p;
  p.out = "\x80\x02";
  p.put(value, 0);
  p.out += '.';
  ZipWriter zip(force_zip64);
  size_t total = p.out.size() + 1024;  // one allocation: records, headers, padding, directory
  for (const auto& st : p.storages) total += size_t(st.numel) * element_size(st.dtype) + 256;
  zip.reserve(total);
  zip.add("archive/data.pkl", p.out.data(), p.out.size());
  for (size_t i = 0; i < p.storages.size(); ++i) {
    const Tensor& h = p.storages[i].holder;
    const StorageImpl* s = h.unsafeGetTensorImpl()->storage.get();
    zip.add("archive/data/" + std::to_string(i), s->data, size_t(p.storages[i].numel) * element_size(h.scalar_type()));
  }
  zip.add("archive/version", "3\n", 2);
  zip.add("archive/byteorder", "little", 6);
  return zip.finish();
}

// ---- unpickler: builds Python-like objects, then converts them to IValues.

struct Obj;
using ObjP = std::shared_ptr<Obj>;
struct Obj {
  enum Kind { None, Bool, Int, Float, Str, List, Tuple, Dict, Global, Storage, TensorK } kind = None;
  int64_t i = 0;  // Bool, Int
  double d = 0;
  std::string s;  // Str; Global as "module.name"
  std::vector<ObjP> items;
  std::vector<std::pair<ObjP, ObjP>> dict;
  Tensor t;  // Storage (all of it, 1-D) or tensor
};

const char* kind_name(Obj::Kind k) {
  static const char* names[] = {"None", "bool", "int", "float", "str", "list", "tuple", "dict", "global", "storage",
                                "tensor"};
  return names[k];
}

class Unpickler {
 public:
  Unpickler(const unsigned char* p, size_t n, const ZipReader* zip, std::string prefix)
      : p_(p), n_(n), zip_(zip), prefix_(std::move(prefix)) {}

  ~Unpickler() {
    // Pickles can build cycles (a list appended to itself); break them so the objects free.
    for (const ObjP& o : all_) {
      o->items.clear();
      o->dict.clear();
    }
  }

  // Unpickles; the storages' bytes are copied afterwards by fill_storages().
  IValue run() {
    for (;;) {
      FW_CHECK(pos_ < n_, "[pickle_load] the pickle ends without a STOP opcode");
      size_t at = pos_;
      unsigned char op = p_[pos_++];
      switch (op) {
        case 0x80: {  // PROTO
          uint64_t v = u(1);
          FW_CHECK(v <= 5, "[pickle_load] unsupported pickle protocol ", v);
          break;
        }
        case 0x95: u(8); break;  // FRAME: a length hint
        case '.': {              // STOP
          FW_CHECK(!stack_.empty(), "[pickle_load] STOP with an empty stack");
          return to_ivalue(stack_.back(), 0);
        }
        case '(': marks_.push_back(stack_.size()); break;
        case '0': pop(); break;
        case '1': pop_mark(); break;
        case '2': push(top()); break;
        case 'N': push(make(Obj::None)); break;
        case 0x88: push(make_int(1, Obj::Bool)); break;
        case 0x89: push(make_int(0, Obj::Bool)); break;
        case 'K': push(make_int(int64_t(u(1)))); break;
        case 'M': push(make_int(int64_t(u(2)))); break;
        case 'J': push(make_int(int64_t(int32_t(uint32_t(u(4)))))); break;
        case 0x8a: push(make_long(u(1), at)); break;
        case 0x8b: push(make_long(u(4), at)); break;
        case 'G': {
          uint64_t bits = 0;
          const unsigned char* b = bytes(8);
          for (int k = 0; k < 8; ++k) bits = (bits << 8) | b[k];
          auto o = make(Obj::Float);
          std::memcpy(&o->d, &bits, 8);
          push(o);
          break;
        }
        case 'X': case 'T': case 'B': push(make_str(u(4))); break;
        case 0x8c: case 'U': case 'C': push(make_str(u(1))); break;
        case 0x8d: case 0x8e: push(make_str(u(8))); break;
        case ')': push(make(Obj::Tuple)); break;
        case 't': push(from_mark(Obj::Tuple)); break;
        case 0x85: case 0x86: case 0x87: {
          size_t k = size_t(op - 0x84);
          FW_CHECK(stack_.size() >= k + floor(), "[pickle_load] TUPLE", k, " needs ", k, " values on the stack");
          auto o = make(Obj::Tuple);
          o->items.assign(stack_.end() - std::ptrdiff_t(k), stack_.end());
          stack_.resize(stack_.size() - k);
          push(o);
          break;
        }
        case ']': push(make(Obj::List)); break;
        case 'l': push(from_mark(Obj::List)); break;
        case 'a': {
          ObjP v = pop();
          want(top(), Obj::List, "APPEND")->items.push_back(v);
          break;
        }
        case 'e': case 0x90: {  // APPENDS, ADDITEMS (a set loads as a list)
          std::vector<ObjP> vs = pop_mark();
          ObjP l = want(top(), Obj::List, "APPENDS");
          l->items.insert(l->items.end(), vs.begin(), vs.end());
          break;
        }
        case 0x8f: push(make(Obj::List)); break;  // EMPTY_SET
        case 0x91: push(from_mark(Obj::List)); break;  // FROZENSET
        case '}': push(make(Obj::Dict)); break;
        case 'd': {
          auto o = make(Obj::Dict);
          set_items(o, pop_mark(), "DICT");
          push(o);
          break;
        }
        case 's': {
          ObjP v = pop(), k = pop();
          want(top(), Obj::Dict, "SETITEM")->dict.emplace_back(k, v);
          break;
        }
        case 'u': {
          std::vector<ObjP> kv = pop_mark();
          set_items(want(top(), Obj::Dict, "SETITEMS"), std::move(kv), "SETITEMS");
          break;
        }
        case 'q': memo_[u(1)] = top(); break;
        case 'r': memo_[u(4)] = top(); break;
        case 0x94: memo_[memo_.size()] = top(); break;  // MEMOIZE
        case 'h': push(memo_get(u(1))); break;
        case 'j': push(memo_get(u(4))); break;
        case 'c': {
          std::string module = line(), name = line();
          push(make_global(module + "." + name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          ObjP name = pop(), module = pop();
          FW_CHECK(module->kind == Obj::Str && name->kind == Obj::Str, "[pickle_load] STACK_GLOBAL needs two strings");
          push(make_global(module->s + "." + name->s));
          break;
        }
        case 'Q': push(persistent_load(pop())); break;
        case 'R': {
          ObjP args = pop(), fn = pop();
          push(call(fn, args));
          break;
        }
        case 0x81: {  // NEWOBJ: cls.__new__(cls, *args)
          ObjP args = pop(), cls = pop();
          push(call(cls, args));
          break;
        }
        case 'b': {  // BUILD: object state. OrderedDict's _metadata and tensor state are dropped.
          pop();  // the state
          const ObjP& o = top();
          FW_CHECK(o->kind == Obj::Dict || o->kind == Obj::TensorK, "[pickle_load] cannot set the state of a ",
                   kind_name(o->kind), " (BUILD at byte ", at, ")");
          break;
        }
        default:
          fw::detail::throw_error("[pickle_load] unsupported pickle opcode 0x", hex(op), " at byte ", at,
                                  " (fw reads the binary protocols 2 to 5)");
      }
    }
  }

 private:
  static std::string hex(unsigned v) {
    const char* d = "0123456789abcdef";
    return std::string{d[(v >> 4) & 15], d[v & 15]};
  }
  const unsigned char* bytes(uint64_t k) {
    FW_CHECK(k <= n_ - pos_, "[pickle_load] the pickle is truncated (", k, " more bytes needed at byte ", pos_, " of ",
             n_, ")");
    const unsigned char* b = p_ + pos_;
    pos_ += size_t(k);
    return b;
  }
  uint64_t u(int k) { return rd(bytes(uint64_t(k)), k); }
  std::string line() {
    size_t start = pos_;
    while (pos_ < n_ && p_[pos_] != '\n') ++pos_;
    FW_CHECK(pos_ < n_, "[pickle_load] the pickle is truncated inside a GLOBAL name");
    std::string s(reinterpret_cast<const char*>(p_ + start), pos_ - start);
    ++pos_;
    return s;
  }

  ObjP make(Obj::Kind k) {
    auto o = std::make_shared<Obj>();
    o->kind = k;
    all_.push_back(o);
    return o;
  }
  ObjP make_int(int64_t v, Obj::Kind k = Obj::Int) {
    auto o = make(k);
    o->i = v;
    return o;
  }
  ObjP make_long(uint64_t len, size_t at) {
    FW_CHECK(len <= 8, "[pickle_load] an integer of ", len, " bytes at byte ", at, " does not fit in 64 bits");
    const unsigned char* b = bytes(len);
    uint64_t v = 0;
    for (uint64_t k = len; k-- > 0;) v = (v << 8) | b[k];
    if (len > 0 && len < 8 && (b[len - 1] & 0x80)) v |= ~uint64_t(0) << (8 * len);  // sign-extend
    return make_int(int64_t(v));
  }
  ObjP make_str(uint64_t len) {
    const unsigned char* b = bytes(len);
    auto o = make(Obj::Str);
    o->s.assign(reinterpret_cast<const char*>(b), size_t(len));
    return o;
  }
  // Like a restricted Unpickler.find_class: only the names below resolve; call() gives them
  // meaning. Everything else (os.system, builtins.eval, numpy...) is refused here.
  ObjP make_global(std::string name) {
    static const char* const allowed[] = {
        "collections.OrderedDict", "builtins.dict", "__builtin__.dict", "torch._utils._rebuild_tensor_v2",
        "torch._utils._rebuild_tensor", "torch._utils._rebuild_parameter",
        "torch._utils._rebuild_parameter_with_state", "torch._utils._rebuild_from_type_v2",
        "torch._tensor._rebuild_from_type_v2", "torch._tensor.Tensor", "torch.Tensor", "torch.nn.parameter.Parameter",
        "torch.Size", "_codecs.encode", "builtins.bytes", "__builtin__.bytes", "builtins.bytearray"};
    FW_CHECK(name.rfind("__torch__.", 0) != 0, "[pickle_load] the file is a TorchScript archive (torch.jit.save; it "
             "holds '", name, "'), which fw does not load: save the module's state_dict with torch.save instead");
    bool ok = false;
    for (const char* a : allowed) ok = ok || name == a;
    for (const auto& st : kStorageNames) ok = ok || name == std::string("torch.") + st.name;
    FW_CHECK(ok, "[pickle_load] unsupported global '", name,
             "': fw loads tensors, numbers, strings, lists, tuples and dicts, and runs no other code");
    auto o = make(Obj::Global);
    o->s = std::move(name);
    return o;
  }

  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(ObjP o) { stack_.push_back(std::move(o)); }
  ObjP pop() {
    FW_CHECK(stack_.size() > floor(), "[pickle_load] the pickle pops an empty stack at byte ", pos_ - 1);
    ObjP o = std::move(stack_.back());
    stack_.pop_back();
    return o;
  }
  const ObjP& top() const {
    FW_CHECK(stack_.size() > floor(), "[pickle_load] the pickle reads an empty stack at byte ", pos_ - 1);
    return stack_.back();
  }
  std::vector<ObjP> pop_mark() {
    FW_CHECK(!marks_.empty(), "[pickle_load] the pickle uses a MARK that was never set (byte ", pos_ - 1, ")");
    size_t m = marks_.back();
    marks_.pop_back();
    std::vector<ObjP> out(stack_.begin() + std::ptrdiff_t(m), stack_.end());
    stack_.resize(m);
    return out;
  }
  // A tuple or list of the values above the last MARK.
  ObjP from_mark(Obj::Kind k) {
    auto o = make(k);
    o->items = pop_mark();
    return o;
  }
  ObjP memo_get(uint64_t k) {
    auto it = memo_.find(k);
    FW_CHECK(it != memo_.end(), "[pickle_load] the pickle reads memo entry ", k, " before writing it");
    return it->second;
  }
  const ObjP& want(const ObjP& o, Obj::Kind k, const char* op) {
    FW_CHECK(o->kind == k, "[pickle_load] ", op, " on a ", kind_name(o->kind), " (expected a ", kind_name(k), ")");
    return o;
  }
  void set_items(const ObjP& d, std::vector<ObjP> kv, const char* op) {
    FW_CHECK(kv.size() % 2 == 0, "[pickle_load] ", op, " with an odd number of values");
    for (size_t i = 0; i < kv.size(); i += 2) d->dict.emplace_back(kv[i], kv[i + 1]);
  }

  // ('storage', torch.XStorage, key, location, numel) -> the whole storage as a 1-D tensor.
  ObjP persistent_load(const ObjP& pid) {
    FW_CHECK(pid->kind == Obj::Tuple && pid->items.size() == 5 && pid->items[0]->kind == Obj::Str &&
                 pid->items[0]->s == "storage",
             "[pickle_load] unsupported persistent id (expected ('storage', type, key, location, numel))");
    const ObjP &type = pid->items[1], &key = pid->items[2], &numel = pid->items[4];
    FW_CHECK(type->kind == Obj::Global && key->kind == Obj::Str && numel->kind == Obj::Int,
             "[pickle_load] malformed storage id");
    ScalarType dtype = kFloat;
    bool known = false;
    for (const auto& s : kStorageNames)
      if (type->s == std::string("torch.") + s.name) {
        dtype = s.dtype;
        known = true;
      }
    FW_CHECK(known, "[pickle_load] unsupported storage type '", type->s, "'");
    FW_CHECK(zip_ != nullptr, "[pickle_load] the pickle references tensor data, which only a torch.save zip "
             "archive holds");
    FW_CHECK(numel->i >= 0, "[pickle_load] storage '", key->s, "' has a negative size ", numel->i);
    auto it = storages_.find(key->s);
    if (it != storages_.end()) {
      FW_CHECK(it->second->t.scalar_type() == dtype, "[pickle_load] storage '", key->s, "' is used as both ",
               dtype_name(it->second->t.scalar_type()), " and ", dtype_name(dtype));
      FW_CHECK(it->second->t.numel() == numel->i, "[pickle_load] storage '", key->s, "' is given two sizes");
      return it->second;
    }
    std::string record = prefix_ + "data/" + key->s;
    ZipReader::Located rec = zip_->locate(record);
    size_t size = rec.size;
    uint64_t item = element_size(dtype);
    FW_CHECK(uint64_t(numel->i) <= std::numeric_limits<uint64_t>::max() / item && uint64_t(numel->i) * item == size,
             "[pickle_load] record '", record, "' holds ", size, " bytes, not the ", numel->i, " elements of ",
             dtype_name(dtype), " its storage id declares");
    auto o = make(Obj::Storage);
    o->t = empty({numel->i}, TensorOptions().dtype(dtype));
    pending_.push_back({record, rec, o->t.data_ptr(), dtype == kBool});  // filled by fill()
    storages_.emplace(key->s, o);
    return o;
  }

 public:
  // Copies the records into their storages and checks their CRCs, then that bool storages hold
  // only 0 and 1. A record of 1 MiB or more is split over the threads (copy_with_crc); smaller
  // ones are spread over the threads a whole record each (a state dict of many small tensors).
  // The checks run afterwards in record order, so the first bad record is the one reported.
  void fill_storages() {
    constexpr size_t kWhole = size_t(1) << 20;
    std::vector<uint32_t> crcs(pending_.size());
    std::vector<size_t> small;
    for (size_t i = 0; i < pending_.size(); ++i) {
      const Pending& rec = pending_[i];
      if (rec.src.size < kWhole) {
        small.push_back(i);
        continue;
      }
      crcs[i] = copy_with_crc(static_cast<unsigned char*>(rec.dst), rec.src.size,
                              [&](size_t off, size_t len, unsigned char* d) {
                                zip_->source().read(rec.src.offset + off, len, d);
                              });
    }
    // About 1 MiB of records per task.
    size_t small_bytes = 0;
    for (size_t i : small) small_bytes += pending_[i].src.size;
    const int64_t grain = std::max<int64_t>(1, int64_t(small.size() * kWhole / std::max<size_t>(1, small_bytes)));
    parallel_for(0, int64_t(small.size()), grain, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        const Pending& rec = pending_[small[size_t(k)]];
        auto* dst = static_cast<unsigned char*>(rec.dst);
        if (rec.src.size == 0) continue;  // crcs[] holds 0, the CRC of no bytes; dst may be null
        zip_->source().read(rec.src.offset, rec.src.size, dst);
        crcs[small[size_t(k)]] = crc32(dst, rec.src.size);
      }
    });
    for (size_t i = 0; i < pending_.size(); ++i) {
      const Pending& rec = pending_[i];
      const auto* dst = static_cast<const unsigned char*>(rec.dst);
      FW_CHECK(crcs[i] == rec.src.crc, "[pickle_load] record '", rec.name, "' is corrupt (CRC-32 mismatch)");
      if (rec.is_bool)
        for (size_t k = 0; k < rec.src.size; ++k)
          FW_CHECK(dst[k] <= 1, "[pickle_load] record '", rec.name, "' of a bool storage holds the byte ", int(dst[k]));
    }
  }

 private:
  static std::vector<int64_t> int_tuple(const ObjP& o, const char* what) {
    FW_CHECK(o->kind == Obj::Tuple || o->kind == Obj::List, "[pickle_load] a tensor's ", what, " is a ",
             kind_name(o->kind), ", not a tuple");
    std::vector<int64_t> v;
    for (const ObjP& x : o->items) {
      FW_CHECK(x->kind == Obj::Int, "[pickle_load] a tensor's ", what, " holds a ", kind_name(x->kind));
      v.push_back(x->i);
    }
    return v;
  }

  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[, metadata])
  ObjP rebuild_tensor(const std::vector<ObjP>& a, bool v2) {
    FW_CHECK(a.size() >= 4 && a[0]->kind == Obj::Storage && a[1]->kind == Obj::Int,
             "[pickle_load] _rebuild_tensor needs (storage, offset, size, stride, ...)");
    const Tensor& st = a[0]->t;
    std::vector<int64_t> size = int_tuple(a[2], "size"), stride = int_tuple(a[3], "stride");
    int64_t offset = a[1]->i;
    FW_CHECK(size.size() == stride.size(), "[pickle_load] a tensor has ", size.size(), " sizes but ", stride.size(),
             " strides");
    FW_CHECK(size.size() <= 64, "[pickle_load] a tensor of rank ", size.size(), " is not supported");
    FW_CHECK(offset >= 0 && offset <= st.numel(), "[pickle_load] storage offset ", offset,
             " is outside a storage of ", st.numel(), " elements");
    // The furthest element must lie inside the storage; sizes and strides are checked for overflow.
    uint64_t last = uint64_t(offset), numel = 1;
    for (size_t d = 0; d < size.size(); ++d) {
      FW_CHECK(size[d] >= 0 && stride[d] >= 0, "[pickle_load] a tensor has size ", size[d], " and stride ",
               stride[d], " in dim ", d);
      if (size[d] == 0) numel = 0;
    }
    if (numel != 0) {
      for (size_t d = 0; d < size.size(); ++d) {
        uint64_t n = uint64_t(size[d]) - 1, s = uint64_t(stride[d]);
        FW_CHECK(s == 0 || n <= std::numeric_limits<uint64_t>::max() / s, "[pickle_load] size ", size[d],
                 " times stride ", stride[d], " overflows");
        last = add_checked(last, n * s, "a tensor's extent");
      }
      FW_CHECK(last < uint64_t(st.numel()), "[pickle_load] a tensor of size ", IntArrayRef(size), ", stride ",
               IntArrayRef(stride), " and offset ", offset, " reaches element ", last, " of a storage of ",
               st.numel(), " elements");
    }
    Tensor t = st.as_strided(size, stride, offset).detach();
    if (v2 && a.size() >= 5) {
      FW_CHECK(a[4]->kind == Obj::Bool, "[pickle_load] a tensor's requires_grad is a ", kind_name(a[4]->kind));
      set_requires_grad(t, a[4]->i != 0);
    }
    auto o = make(Obj::TensorK);
    o->t = t;
    return o;
  }

  static void set_requires_grad(Tensor& t, bool r) {
    if (!r) return;
    FW_CHECK(is_floating_point(t.scalar_type()) || is_complex(t.scalar_type()),
             "[pickle_load] a tensor of dtype ", dtype_name(t.scalar_type()), " cannot require grad");
    t.requires_grad_(true);
  }

  ObjP call(const ObjP& fn, const ObjP& args, int depth = 0) {
    FW_CHECK(depth < 8, "[pickle_load] tensor rebuild calls nest too deeply");
    FW_CHECK(fn->kind == Obj::Global, "[pickle_load] the pickle calls a ", kind_name(fn->kind));
    FW_CHECK(args->kind == Obj::Tuple, "[pickle_load] the arguments of '", fn->s, "' are a ", kind_name(args->kind));
    const std::string& f = fn->s;
    const std::vector<ObjP>& a = args->items;
    if (f == "collections.OrderedDict" || f == "builtins.dict" || f == "__builtin__.dict") {
      auto d = make(Obj::Dict);
      if (!a.empty()) {  // OrderedDict([(k, v), ...])
        FW_CHECK(a.size() == 1 && (a[0]->kind == Obj::List || a[0]->kind == Obj::Tuple),
                 "[pickle_load] unsupported arguments to ", f);
        for (const ObjP& kv : a[0]->items) {
          FW_CHECK(kv->kind == Obj::Tuple && kv->items.size() == 2, "[pickle_load] ", f, " item is not a pair");
          d->dict.emplace_back(kv->items[0], kv->items[1]);
        }
      }
      return d;
    }
    if (f == "torch._utils._rebuild_tensor_v2") return rebuild_tensor(a, true);
    if (f == "torch._utils._rebuild_tensor") return rebuild_tensor(a, false);
    if (f == "torch._utils._rebuild_parameter" || f == "torch._utils._rebuild_parameter_with_state") {
      FW_CHECK(a.size() >= 2 && a[0]->kind == Obj::TensorK && a[1]->kind == Obj::Bool,
               "[pickle_load] _rebuild_parameter needs (tensor, requires_grad, ...)");
      auto o = make(Obj::TensorK);
      o->t = a[0]->t.detach();
      set_requires_grad(o->t, a[1]->i != 0);
      return o;
    }
    if (f == "torch._utils._rebuild_from_type_v2" || f == "torch._tensor._rebuild_from_type_v2") {
      // (func, type, args, state): a tensor subclass; fw keeps the tensor and drops the type.
      FW_CHECK(a.size() == 4 && a[1]->kind == Obj::Global,
               "[pickle_load] _rebuild_from_type_v2 needs (func, type, args, state)");
      FW_CHECK(a[1]->s == "torch._tensor.Tensor" || a[1]->s == "torch.Tensor" ||
                   a[1]->s == "torch.nn.parameter.Parameter",
               "[pickle_load] unsupported tensor subclass '", a[1]->s, "'");
      return call(a[0], a[2], depth + 1);
    }
    if (f == "_codecs.encode") {
      // Protocol 2 stores bytes as encode(text, 'latin1'), the text holding code points < 256.
      FW_CHECK(a.size() == 2 && a[0]->kind == Obj::Str && a[1]->kind == Obj::Str &&
                   (a[1]->s == "latin1" || a[1]->s == "latin-1"),
               "[pickle_load] unsupported arguments to _codecs.encode (expected text and 'latin1')");
      return latin1_bytes(a[0]->s);
    }
    if ((f == "builtins.bytes" || f == "__builtin__.bytes" || f == "builtins.bytearray") && a.empty())
      return make(Obj::Str);
    if (f == "torch.Size") {
      FW_CHECK(a.size() == 1 && a[0]->kind == Obj::Tuple, "[pickle_load] torch.Size needs one tuple");
      return a[0];
    }
    fw::detail::throw_error("[pickle_load] unsupported global '", f,
                            "': fw loads tensors, numbers, strings, lists, tuples and dicts, and runs no other code");
  }

  // The bytes of UTF-8 text whose code points are all below 256.
  ObjP latin1_bytes(const std::string& text) {
    auto o = make(Obj::Str);
    for (size_t i = 0; i < text.size(); ++i) {
      auto c = static_cast<unsigned char>(text[i]);
      if (c < 0x80) {
        o->s += char(c);
        continue;
      }
      FW_CHECK((c == 0xC2 || c == 0xC3) && i + 1 < text.size() && (static_cast<unsigned char>(text[i + 1]) & 0xC0) == 0x80,
               "[pickle_load] _codecs.encode: the text is not latin-1");
      o->s += char(((c & 0x03) << 6) | (static_cast<unsigned char>(text[++i]) & 0x3F));
    }
    return o;
  }

  IValue to_ivalue(const ObjP& o, int depth) {
    FW_CHECK(depth < 1000, "[pickle_load] the object nests deeper than 1000 levels (or contains itself)");
    switch (o->kind) {
      case Obj::None: return IValue();
      case Obj::Bool: return IValue(o->i != 0);
      case Obj::Int: return IValue(o->i);
      case Obj::Float: return IValue(o->d);
      case Obj::Str: return IValue(o->s);
      case Obj::Storage: case Obj::TensorK: return IValue(o->t);
      case Obj::List: {
        GenericList l;
        l.reserve(o->items.size());
        for (const ObjP& x : o->items) l.push_back(to_ivalue(x, depth + 1));
        return IValue(l);
      }
      case Obj::Tuple: {
        std::vector<IValue> xs;
        xs.reserve(o->items.size());
        for (const ObjP& x : o->items) xs.push_back(to_ivalue(x, depth + 1));
        return IValue(ivalue::Tuple::create(std::move(xs)));
      }
      case Obj::Dict: {
        GenericDict d;
        d.reserve(o->dict.size());
        for (const auto& [k, v] : o->dict) d.insert_or_assign(to_ivalue(k, depth + 1), to_ivalue(v, depth + 1));
        return IValue(d);
      }
      case Obj::Global: break;
    }
    fw::detail::throw_error("[pickle_load] the object holds '", o->s, "', which is not a value fw can represent");
  }

  const unsigned char* p_;
  size_t n_, pos_ = 0;
  const ZipReader* zip_;
  std::string prefix_;
  std::vector<ObjP> stack_, all_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, ObjP> memo_;
  std::unordered_map<std::string, ObjP> storages_;
  struct Pending {
    std::string name;
    ZipReader::Located src;
    void* dst;
    bool is_bool;
  };
  std::vector<Pending> pending_;
};

}  // namespace

std::vector<char> pickle_save(const IValue& value) { return save_archive(value, false); }

namespace detail {
std::vector<char> pickle_save_zip64(const IValue& value) { return save_archive(value, true); }

std::vector<char> zip_archive(const std::vector<std::pair<std::string, std::string>>& records) {
  ZipWriter zip(false);
  for (const auto& [name, bytes] : records) zip.add(name, bytes.data(), bytes.size());
  return zip.finish();
}

std::vector<std::pair<std::string, std::string>> zip_records(const std::vector<char>& archive) {
  MemorySource src(reinterpret_cast<const unsigned char*>(archive.data()), archive.size());
  ZipReader zip(src);
  FW_CHECK(zip.open(), "[zip_records] the data (", archive.size(), " bytes) is not a zip archive");
  std::vector<std::pair<std::string, std::string>> out;
  for (const std::string& name : zip.names()) out.emplace_back(name, zip.read(name));
  return out;
}
}  // namespace detail

IValue pickle_load(const std::vector<char>& data) { return pickle_load(data.data(), data.size()); }

namespace {
// The archive's <name>/data.pkl for a single top-level folder <name>, unpickled, with its
// storages filled.
IValue load_archive(const ZipReader& zip) {
  std::string pkl;
  for (const std::string& name : zip.names()) {
    size_t slash = name.find('/');
    if (slash != std::string::npos && name.compare(slash, std::string::npos, "/data.pkl") == 0) {
      FW_CHECK(pkl.empty(), "[pickle_load] the archive holds two pickles ('", pkl, "' and '", name, "')");
      pkl = name;
    }
  }
  FW_CHECK(!pkl.empty(), "[pickle_load] the zip archive has no <name>/data.pkl record; is it a torch.save file?");
  std::string bytes = zip.read(pkl);
  Unpickler u(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), &zip, pkl.substr(0, pkl.size() - 8));
  IValue v = u.run();
  u.fill_storages();
  return v;
}
}  // namespace

IValue pickle_load(const char* data, size_t size) {
  FW_CHECK(data != nullptr || size == 0, "[pickle_load] the data pointer is null");
  const auto* p = reinterpret_cast<const unsigned char*>(data);
  MemorySource src(p, size);
  ZipReader zip(src);
  if (zip.open()) return load_archive(zip);
  // Not a zip archive. torch.save's pre-1.6 format starts with a pickled magic number.
  static const unsigned char legacy[] = {0x80, 0x02, 0x8a, 0x0a, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8};
  FW_CHECK(!(size >= sizeof legacy && std::memcmp(p, legacy, sizeof legacy) == 0),
           "[pickle_load] this is torch.save's legacy format (PyTorch < 1.6 or "
           "_use_new_zipfile_serialization=False), which fw does not read: re-save it with a current torch.save");
  FW_CHECK(size >= 2 && p[0] == 0x80, "[pickle_load] the data (", size,
           " bytes) is neither a torch.save zip archive nor a binary pickle");
  return Unpickler(p, size, nullptr, "").run();
}

namespace detail {
uint32_t zip_crc32(const unsigned char* p, size_t n) { return crc32(p, n); }

IValue pickle_load_file(int fd, uint64_t size) {
  FileSource src(fd, size);
  ZipReader zip(src);
  if (zip.open()) return load_archive(zip);
  std::string all = src.bytes(0, size_t(size));  // a plain pickle, or an error to name
  return pickle_load(all.data(), all.size());
}
}  // namespace detail

}  // namespace fw
