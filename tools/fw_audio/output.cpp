#include "tools/fw_audio/output.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>

#include "fw/audio/kaldi_io.h"
#include "fw/fw.h"
#include "tools/fw_audio/args.h"

namespace fwaudio {

namespace {
std::string sys_error() { return std::strerror(errno); }

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// Contiguous little-endian float32 data of t (fw runs on little-endian hosts only).
fw::Tensor as_f32(const fw::Tensor& t) { return t.to(fw::kFloat).contiguous(); }
}  // namespace

// ---- AtomicFile
AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  std::random_device rd;
  std::ostringstream os;
  os << path_ << ".tmp" << ::getpid() << "_" << std::hex << rd();
  tmp_ = os.str();
  f_ = std::fopen(tmp_.c_str(), "wb");
  if (!f_) throw Failure("cannot write " + path_ + ": " + sys_error());
}

AtomicFile::~AtomicFile() {
  if (f_) {
    std::fclose(f_);
    std::remove(tmp_.c_str());
  }
}

void AtomicFile::write(const void* data, size_t n) {
  if (n && std::fwrite(data, 1, n, f_) != n) throw Failure("cannot write " + path_ + ": " + sys_error());
  pos_ += int64_t(n);
}

void AtomicFile::commit() {
  if (!f_) return;
  bool ok = std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
  std::string err = ok ? "" : sys_error();
  ok = std::fclose(f_) == 0 && ok;
  f_ = nullptr;
  if (!ok || std::rename(tmp_.c_str(), path_.c_str()) != 0) {
    if (err.empty()) err = sys_error();
    std::remove(tmp_.c_str());
    throw Failure("cannot write " + path_ + ": " + err);
  }
}

// ---- .npy
std::string npy_bytes(const fw::Tensor& t) {
  fw::Tensor c = as_f32(t);
  // numpy's spelling: "()", "(5,)", "(2, 3)".
  std::string shape = "(";
  for (int64_t i = 0; i < c.dim(); i++) shape += (i ? ", " : "") + std::to_string(c.sizes()[i]);
  shape += c.dim() == 1 ? ",)" : ")";
  std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape + ", }";
  // Magic (6) + version (2) + header length (2) + dict + padding + '\n', a multiple of 64.
  size_t total = 10 + dict.size() + 1;
  size_t padded = (total + 63) / 64 * 64;
  dict += std::string(padded - total, ' ') + "\n";
  std::string out = std::string("\x93NUMPY", 6) + char(1) + char(0);
  uint16_t hl = uint16_t(dict.size());
  out += char(hl & 0xff);
  out += char(hl >> 8);
  out += dict;
  out.append(static_cast<const char*>(c.data_ptr()), size_t(c.numel()) * 4);
  return out;
}

void write_npy(const std::string& path, const fw::Tensor& t) {
  AtomicFile f(path);
  f.write(npy_bytes(t));
  f.commit();
}

// ---- Kaldi output specifiers
bool parse_wspecifier(const std::string& s, WSpecifier* out) {
  size_t colon = s.find(':');
  if (colon == std::string::npos) return false;
  std::string flags = s.substr(0, colon);
  if (flags.rfind("ark", 0) != 0 && flags.rfind("scp", 0) != 0) return false;
  fw::audio::kaldi_io::WriteSpecifier w;
  try {
    w = fw::audio::kaldi_io::parse_wspecifier(s);
  } catch (const fw::Error& e) {
    std::string why = e.what();
    // "[kaldi_io::parse_wspecifier] Bad wspecifier "S": why" -> why
    const std::string lead = "Bad wspecifier \"" + s + "\": ";
    if (why.rfind('[', 0) == 0 && why.find("] ") != std::string::npos) why = why.substr(why.find("] ") + 2);
    if (why.rfind(lead, 0) == 0) why = why.substr(lead.size());
    throw UsageError("bad output specifier '" + s + "': " + why);
  }
  if (!w.binary) throw UsageError("text archives (" + s + ") are not supported; write binary ark:FILE");
  if (w.ark == "-" || w.scp == "-" || w.ark.front() == '|' || w.scp.rfind('|', 0) == 0)
    throw UsageError("writing archives to stdout or to a pipe is not supported (" + s + ")");
  *out = WSpecifier{s, w.ark, w.scp};
  return true;
}

// ---- wav.scp
std::vector<ScpEntry> read_wav_scp(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Failure("cannot read " + path + ": " + sys_error());
  std::vector<ScpEntry> out;
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    lineno++;
    line = trim(line);
    if (line.empty()) continue;
    size_t sp = line.find_first_of(" \t");
    std::string where = path + ":" + std::to_string(lineno);
    if (sp == std::string::npos) throw Failure(where + ": expected 'utt-id path', got '" + line + "'");
    ScpEntry e{line.substr(0, sp), trim(line.substr(sp + 1))};
    if (!e.path.empty() && e.path.back() == '|')
      throw Failure(where + ": piped commands ('" + e.path + "') are not supported; give a file path");
    out.push_back(std::move(e));
  }
  if (in.bad()) throw Failure("cannot read " + path + ": " + sys_error());
  if (out.empty()) throw Failure(path + " lists no utterances");
  return out;
}

}  // namespace fwaudio
