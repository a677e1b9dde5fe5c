// fw-audio's outputs: NumPy .npy files, the Kaldi output specifiers it accepts (archives are
// written by fw::audio::kaldi_io), and atomic file replacement.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "fw/tensor.h"

namespace fwaudio {

// A file written under a temporary name in the target's directory and renamed over the target
// by commit(); destroyed without commit() it removes the temporary, so a failed run leaves no
// partial output. Errors throw UsageError naming the target path.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;
  void write(const void* data, size_t n);
  void write(const std::string& s) { write(s.data(), s.size()); }
  int64_t tell() const { return pos_; }
  void commit();
  const std::string& path() const { return path_; }

 private:
  std::string path_, tmp_;
  std::FILE* f_ = nullptr;
  int64_t pos_ = 0;
};

// The bytes of a NumPy format 1.0 file holding `t` as little-endian float32 ('<f4'), C order.
std::string npy_bytes(const fw::Tensor& t);
void write_npy(const std::string& path, const fw::Tensor& t);

// The Kaldi write specifiers fw-audio takes: "ark:FILE" and "ark,scp:FILE.ark,FILE.scp" (order of
// the flags free, as in Kaldi), parsed by fw::audio::kaldi_io::parse_wspecifier; text ("t"),
// stdout and pipes are refused. The archives are written by fw::audio::kaldi_io::MatrixWriter.
struct WSpecifier {
  std::string spec;      // as given, for MatrixWriter
  std::string ark, scp;  // scp empty: no script file
};
// True when `s` is an ark specifier (starts with "ark" or "scp" and has a ':'); throws
// UsageError on a malformed one.
bool parse_wspecifier(const std::string& s, WSpecifier* out);

// "utt-id path" lines of a Kaldi wav.scp (blank lines skipped; piped commands and
// "path:offset" extended filenames are refused with a clear message).
struct ScpEntry {
  std::string utt, path;
};
std::vector<ScpEntry> read_wav_scp(const std::string& path);

}  // namespace fwaudio
