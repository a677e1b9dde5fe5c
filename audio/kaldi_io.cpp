// Kaldi tables: archives, script files, specifiers (fw/audio/kaldi_io.h). Written from the format
// facts listed in the header; no Kaldi code. Every read goes through Input, which tracks the byte
// position (for scp offsets and messages) and, for regular files, how many bytes remain, so a size
// field is checked against the data actually present before anything is allocated. Streams of
// unknown length (pipes, stdin) are read in bounded chunks that grow only with the data received.
#include "fw/audio/kaldi_io.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>
#include <unordered_map>

#include "fw/ops.h"

namespace fw::audio::kaldi_io {
namespace {

std::string qt(const std::string& s) { return "\"" + s + "\""; }

std::string printable(const std::string& s, size_t max = 80) {
  std::string out;
  for (unsigned char c : s.substr(0, max)) {
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (s.size() > max) out += "...";
  return out;
}

std::string byte_name(int c) {
  if (c == EOF) return "end of file";
  char buf[32];
  if (c >= 0x21 && c < 0x7f) std::snprintf(buf, sizeof buf, "'%c' (0x%02x)", c, c);
  else std::snprintf(buf, sizeof buf, "byte 0x%02x", c);
  return buf;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n\v\f"), e = s.find_last_not_of(" \t\r\n\v\f");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

bool is_space(int c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

// ---------------------------------------------------------------------------------------------
// Input: a file (seekable, size known), a pipe "cmd |" or stdin.
// ---------------------------------------------------------------------------------------------

class Input {
 public:
  // rx: "-", "cmd |" or a path (no offset here).
  Input(const std::string& rx, const std::string& op) : op_(op) {
    std::string t = trim(rx);
    if (t == "-") {
      kind_ = Stdin;
      f_ = stdin;
      name_ = "standard input";
    } else if (!t.empty() && t.back() == '|') {
      kind_ = Pipe;
      cmd_ = trim(t.substr(0, t.size() - 1));
      FW_CHECK(!cmd_.empty(), op_, " Empty command in ", qt(rx));
      name_ = "command " + qt(cmd_);
      std::fflush(nullptr);
      f_ = ::popen(cmd_.c_str(), "re");
      FW_CHECK(f_, op_, " Failed to run ", name_, ": ", std::strerror(errno));
    } else {
      kind_ = File;
      name_ = qt(rx);
      int fd = ::open(rx.c_str(), O_RDONLY | O_CLOEXEC);
      FW_CHECK(fd >= 0, op_, " Failed to open ", name_, ": ", std::strerror(errno));
      struct stat st {};
      if (::fstat(fd, &st) != 0) {
        int e = errno;
        ::close(fd);
        FW_CHECK(false, op_, " Failed to stat ", name_, ": ", std::strerror(e));
      }
      if (S_ISDIR(st.st_mode)) {
        ::close(fd);
        FW_CHECK(false, op_, " Failed to open ", name_, ": it is a directory");
      }
      seekable_ = S_ISREG(st.st_mode);
      size_ = seekable_ ? uint64_t(st.st_size) : 0;
      f_ = ::fdopen(fd, "rb");
      if (!f_) {
        int e = errno;
        ::close(fd);
        FW_CHECK(false, op_, " Failed to open ", name_, ": ", std::strerror(e));
      }
    }
  }
  Input(const Input&) = delete;
  Input& operator=(const Input&) = delete;
  ~Input() {
    if (!f_) return;
    if (kind_ == Pipe) ::pclose(f_);
    else if (kind_ == File) std::fclose(f_);
  }

  int get() {
    int c = getc_unlocked(f_);
    if (c != EOF) ++pos_;
    return c;
  }
  int peek() {
    int c = getc_unlocked(f_);
    if (c != EOF) std::ungetc(c, f_);
    return c;
  }
  size_t read(void* dst, size_t n) {
    size_t got = n ? std::fread(dst, 1, n, f_) : 0;
    pos_ += int64_t(got);
    return got;
  }
  int64_t pos() const { return pos_; }
  bool seekable() const { return seekable_; }
  bool at_eof() { return peek() == EOF; }
  // Bytes left in a regular file; nullopt for streams.
  std::optional<uint64_t> remaining() const {
    if (!seekable_) return std::nullopt;
    return size_ > uint64_t(pos_) ? size_ - uint64_t(pos_) : 0;
  }
  uint64_t size() const { return size_; }
  void seek(int64_t offset) {
    FW_CHECK(seekable_, op_, " Cannot seek in ", name_, " (not a regular file)");
    FW_CHECK(offset >= 0 && uint64_t(offset) <= size_, op_, " Offset ", offset, " is beyond the end of ", name_,
             " (", size_, " bytes)");
    FW_CHECK(::fseeko(f_, off_t(offset), SEEK_SET) == 0, op_, " Failed to seek to byte ", offset, " in ", name_, ": ",
             std::strerror(errno));
    pos_ = offset;
  }
  void check_error() const {
    FW_CHECK(!std::ferror(f_), op_, " Read error on ", name_, " at byte ", pos_, ": ", std::strerror(errno));
  }
  // Ends the stream: for a command, waits for it and checks its exit status.
  void finish() {
    check_error();
    if (kind_ == Pipe) {
      int st = ::pclose(f_);
      f_ = nullptr;
      FW_CHECK(st != -1, op_, " Failed to wait for ", name_, ": ", std::strerror(errno));
      FW_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, op_, " ", name_,
               WIFEXITED(st) ? " exited with status " : " was killed by signal ",
               WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    } else if (kind_ == File) {
      std::fclose(f_);
      f_ = nullptr;
    }
  }
  const std::string& name() const { return name_; }
  const std::string& op() const { return op_; }

 private:
  enum Kind { File, Pipe, Stdin } kind_ = File;
  std::FILE* f_ = nullptr;
  std::string op_, name_, cmd_;
  bool seekable_ = false;
  uint64_t size_ = 0;
  int64_t pos_ = 0;
};

// Where an object being read sits, for messages: "[op] "file", entry "key" at byte N".
struct Where {
  const Input& in;
  std::string key;  // empty for objects read through an rxfilename
  int64_t start;    // byte offset of the object
  std::string str() const {
    std::string s = in.name();
    if (!key.empty()) s += ", entry " + qt(printable(key));
    s += " (object at byte " + std::to_string(start) + ")";
    return s;
  }
};

// Reads exactly n bytes into dst. For regular files the caller has already checked that they
// are present; for streams, dst must be room the caller could afford (see read_stream_bytes).
void read_exact(Input& in, void* dst, size_t n, const Where& w, const char* what) {
  size_t got = in.read(dst, n);
  if (got != n) in.check_error();
  FW_CHECK(got == n, in.op(), " Truncated ", what, " in ", w.str(), ": expected ", n, " bytes, got ", got);
}

// Checks that `need` more bytes can be present before allocating them.
void check_available(Input& in, uint64_t need, const Where& w, const char* what) {
  if (auto rem = in.remaining())
    FW_CHECK(need <= *rem, in.op(), " Truncated or corrupt ", what, " in ", w.str(), ": it needs ", need,
             " bytes but only ", *rem, " remain in the file");
}

// Reads n bytes of payload. Files: one allocation after the size check. Streams: chunks of at
// most 16 MiB, so a lying size field costs only the memory of the data actually received.
std::vector<char> read_payload(Input& in, uint64_t n, const Where& w, const char* what) {
  check_available(in, n, w, what);
  FW_CHECK(n <= uint64_t(std::numeric_limits<size_t>::max() / 2), in.op(), " Implausible size ", n, " bytes of ",
           what, " in ", w.str());
  std::vector<char> buf;
  if (in.remaining()) {
    buf.resize(size_t(n));
    read_exact(in, buf.data(), size_t(n), w, what);
    return buf;
  }
  const size_t chunk = size_t(16) << 20;
  while (buf.size() < n) {
    size_t want = size_t(std::min<uint64_t>(chunk, n - buf.size())), old = buf.size();
    buf.resize(old + want);
    size_t got = in.read(buf.data() + old, want);
    if (got != want) {
      in.check_error();
      FW_CHECK(false, in.op(), " Truncated ", what, " in ", w.str(), ": expected ", n, " bytes, got ", old + got);
    }
  }
  return buf;
}

// Kaldi's binary int32: a size byte 4, then 4 little-endian bytes.
int32_t read_binary_int32(Input& in, const Where& w, const char* what) {
  int64_t at = in.pos();
  int c = in.get();
  FW_CHECK(c != EOF, in.op(), " Truncated ", what, " in ", w.str(), ": end of file at byte ", at,
           " where an int32 (size byte 4) was expected");
  if (c != 4) {
    FW_CHECK(static_cast<signed char>(c) != -4, in.op(), " Big-endian Kaldi data is not supported: ", what, " in ",
             w.str(), " has size byte -4 at byte ", at);
    FW_CHECK(false, in.op(), " Corrupt ", what, " in ", w.str(), ": expected the int32 size byte 4 at byte ", at,
             ", got ", byte_name(c));
  }
  unsigned char b[4];
  size_t got = in.read(b, 4);
  if (got != 4) in.check_error();
  FW_CHECK(got == 4, in.op(), " Truncated ", what, " in ", w.str(), ": int32 at byte ", at + 1, " cut after ", got,
           " bytes");
  return int32_t(uint32_t(b[0]) | uint32_t(b[1]) << 8 | uint32_t(b[2]) << 16 | uint32_t(b[3]) << 24);
}

// A binary token such as "FM": characters up to a space (consumed), at most 16 of them.
std::string read_binary_token(Input& in, const Where& w) {
  std::string tok;
  int64_t at = in.pos();
  for (;;) {
    int c = in.get();
    FW_CHECK(c != EOF, in.op(), " Truncated object in ", w.str(), ": end of file inside the type token at byte ", at,
             tok.empty() ? "" : " (got ", printable(tok), tok.empty() ? "" : ")");
    if (c == ' ') break;
    FW_CHECK(tok.size() < 16 && c > 0x20 && c < 0x7f, in.op(), " Corrupt object in ", w.str(),
             ": expected a type token like \"FM \" at byte ", at, ", got ", qt(printable(tok + char(c))));
    tok += char(c);
  }
  FW_CHECK(!tok.empty(), in.op(), " Corrupt object in ", w.str(), ": empty type token at byte ", at);
  return tok;
}

// After the key: "\0B" starts a binary object (consumed); anything else is text.
bool read_binary_header(Input& in, const Where& w) {
  if (in.peek() != '\0') return false;
  in.get();
  int c = in.get();
  FW_CHECK(c == 'B', in.op(), " Corrupt object in ", w.str(), ": byte 0 is not followed by 'B' (got ",
           byte_name(c), ")");
  return true;
}

void skip_space(Input& in) {
  while (is_space(in.peek())) in.get();
}

// A text number token: up to whitespace, ']', ';' or end of file.
std::string read_number_token(Input& in) {
  std::string tok;
  for (;;) {
    int c = in.peek();
    if (c == EOF || is_space(c) || c == ']' || c == ';') break;
    tok += char(in.get());
    if (tok.size() > 512) break;  // reported as a bad number below
  }
  return tok;
}

template <class T>
bool parse_number(const std::string& tok, T* out) {
  if (tok.empty()) return false;
  const char* b = tok.data();
  const char* e = b + tok.size();
  if (*b == '+') ++b;
  auto r = std::from_chars(b, e, *out);
  return r.ec == std::errc() && r.ptr == e;
}

// ---------------------------------------------------------------------------------------------
// Matrices
// ---------------------------------------------------------------------------------------------

struct MatrixHeader {
  bool dbl = false;
  int32_t rows = 0, cols = 0;
  uint64_t bytes = 0;  // of the data that follows, checked to be present in regular files
};

// The header of a binary matrix after "\0B": "FM " or "DM ", rows, cols.
MatrixHeader read_binary_matrix_header(Input& in, const Where& w) {
  int64_t tok_at = in.pos();
  FW_CHECK(in.peek() != 4, in.op(), " ", w.str(), " holds an int32 vector (size byte 4 at byte ", tok_at,
           "), not a matrix");
  std::string tok = read_binary_token(in, w);
  FW_CHECK(tok != "CM" && tok != "CM2" && tok != "CM3", in.op(), " Compressed Kaldi matrices (", tok,
           ") are not supported: ", w.str(), "; write the features uncompressed (copy-feats without --compress)");
  FW_CHECK(tok == "FM" || tok == "DM", in.op(), " Corrupt matrix in ", w.str(),
           ": expected the token FM or DM at byte ", tok_at, ", got ", qt(printable(tok)));
  MatrixHeader h;
  h.dbl = tok == "DM";
  h.rows = read_binary_int32(in, w, "matrix header");
  h.cols = read_binary_int32(in, w, "matrix header");
  FW_CHECK(h.rows >= 0 && h.cols >= 0, in.op(), " Corrupt matrix in ", w.str(), ": negative size ", h.rows, " x ",
           h.cols);
  const uint64_t count = uint64_t(h.rows) * uint64_t(h.cols);  // < 2^62
  FW_CHECK(count <= (uint64_t(1) << 58), in.op(), " Corrupt matrix in ", w.str(), ": implausible size ", h.rows,
           " x ", h.cols);
  h.bytes = count * (h.dbl ? 8 : 4);
  check_available(in, h.bytes, w, "matrix data");
  return h;
}

// Reads a binary matrix after "\0B"; returns it in its file dtype (kFloat for FM, kDouble for DM).
Tensor read_binary_matrix(Input& in, const Where& w) {
  const MatrixHeader h = read_binary_matrix_header(in, w);
  const ScalarType dt = h.dbl ? kDouble : kFloat;
  if (h.bytes == 0) return fw::empty({h.rows, h.cols}, dt);
  if (in.remaining()) {  // a regular file holding all the bytes: read straight into the tensor
    Tensor m = fw::empty({h.rows, h.cols}, dt);
    read_exact(in, m.data_ptr(), size_t(h.bytes), w, "matrix data");
    return m;
  }
  std::vector<char> buf = read_payload(in, h.bytes, w, "matrix data");  // only what actually arrived
  Tensor m = fw::empty({h.rows, h.cols}, dt);
  std::memcpy(m.data_ptr(), buf.data(), buf.size());
  return m;
}

// Reads a text matrix " [ ... ]" into dtype T.
template <class T>
Tensor read_text_matrix(Input& in, const Where& w) {
  skip_space(in);
  int64_t at = in.pos();
  std::string open;
  for (int c = in.peek(); c != EOF && !is_space(c) && open.size() < 8; c = in.peek()) open += char(in.get());
  if (open == "[]") return fw::empty({0, 0}, CppToType<T>::value);
  FW_CHECK(open == "[", in.op(), " Corrupt text matrix in ", w.str(), ": expected \"[\" at byte ", at, ", got ",
           open.empty() ? byte_name(in.peek()) : qt(printable(open)));
  std::vector<T> data;
  int64_t cols = -1, rows = 0, cur = 0;
  auto end_row = [&]() {
    if (cur == 0) return;
    FW_CHECK(cols < 0 || cur == cols, in.op(), " Corrupt text matrix in ", w.str(), ": row ", rows, " has ", cur,
             " values but row 0 has ", cols, " (byte ", in.pos(), ")");
    cols = cur;
    ++rows;
    cur = 0;
  };
  for (;;) {
    int c = in.peek();
    FW_CHECK(c != EOF, in.op(), " Truncated text matrix in ", w.str(), ": end of file before \"]\" (", rows,
             " complete rows read)");
    if (c == ']') {
      in.get();
      end_row();
      if (in.peek() == '\r') in.get();
      if (in.peek() == '\n') in.get();
      break;
    }
    if (c == '\n' || c == ';') {
      in.get();
      end_row();
    } else if (is_space(c)) {
      in.get();
    } else {
      int64_t num_at = in.pos();
      std::string tok = read_number_token(in);
      T v;
      FW_CHECK(parse_number(tok, &v), in.op(), " Corrupt text matrix in ", w.str(), ": expected a number at byte ",
               num_at, ", got ", qt(printable(tok)));
      data.push_back(v);
      ++cur;
    }
  }
  if (rows == 0) return fw::empty({0, 0}, CppToType<T>::value);
  Tensor m = fw::empty({rows, cols}, CppToType<T>::value);
  std::memcpy(m.data_ptr(), data.data(), data.size() * sizeof(T));
  return m;
}

// One matrix object (binary or text) converted to dtype.
Tensor read_matrix_object(Input& in, const Where& w, ScalarType dtype) {
  if (read_binary_header(in, w)) {
    Tensor m = read_binary_matrix(in, w);
    return m.scalar_type() == dtype ? m : m.to(dtype);
  }
  return dtype == kDouble ? read_text_matrix<double>(in, w) : read_text_matrix<float>(in, w);
}

// Moves past one matrix object without keeping it: binary data in a regular file is skipped by
// seeking once its header is checked and its bytes are known to be present.
void skip_matrix_object(Input& in, const Where& w, ScalarType dtype) {
  if (!in.seekable()) {
    read_matrix_object(in, w, dtype);
  } else if (read_binary_header(in, w)) {
    const MatrixHeader h = read_binary_matrix_header(in, w);
    in.seek(in.pos() + int64_t(h.bytes));
  } else if (dtype == kDouble) {
    read_text_matrix<double>(in, w);
  } else {
    read_text_matrix<float>(in, w);
  }
}

template <class T>
void append_number(std::string& out, T v) {
  if (std::isnan(v)) {
    out += "nan";
    return;
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest form that reads back exactly
  out.append(buf, r.ptr);
}

void append_int32(std::string& out, int32_t v) {
  out += char(4);
  uint32_t u = uint32_t(v);
  char b[4] = {char(u & 0xff), char((u >> 8) & 0xff), char((u >> 16) & 0xff), char((u >> 24) & 0xff)};
  out.append(b, 4);
}

// Contiguous CPU copy of a 2-D matrix in dtype, with its size checked for Kaldi's int32 fields.
Tensor matrix_for_writing(const Tensor& m, ScalarType dtype, const char* op) {
  FW_CHECK(m.defined(), op, " Cannot write an undefined tensor as a Kaldi matrix");
  FW_CHECK(m.dim() == 2, op, " A Kaldi matrix must be 2-D, got ", m.dim(), "-D with sizes ", m.sizes());
  FW_CHECK(!m.is_complex(), op, " Cannot write a complex tensor as a Kaldi matrix");
  FW_CHECK(m.size(0) <= INT32_MAX && m.size(1) <= INT32_MAX, op, " Matrix of sizes ", m.sizes(),
           " is too large for a Kaldi archive (int32 dimensions)");
  Tensor c = m.is_cpu() ? m : m.cpu();
  return c.to(dtype).contiguous();
}

void append_matrix(std::string& out, const Tensor& m, bool binary, const char* op) {
  const bool dbl = m.scalar_type() == kDouble;
  Tensor c = matrix_for_writing(m, dbl ? kDouble : kFloat, op);
  const int64_t rows = c.size(0), cols = c.size(1);
  if (binary) {
    out.append(dbl ? std::string("\0BDM ", 5) : std::string("\0BFM ", 5));
    append_int32(out, int32_t(rows));
    append_int32(out, int32_t(cols));
    out.append(static_cast<const char*>(c.data_ptr()), size_t(c.numel()) * (dbl ? 8 : 4));
    return;
  }
  if (cols == 0 || rows == 0) {
    out += " [ ]\n";
    return;
  }
  out += " [";
  for (int64_t i = 0; i < rows; ++i) {
    out += "\n  ";
    for (int64_t j = 0; j < cols; ++j) {
      if (dbl) append_number(out, c.data_ptr<double>()[i * cols + j]);
      else append_number(out, c.data_ptr<float>()[i * cols + j]);
      out += ' ';
    }
  }
  out += "]\n";
}

// ---------------------------------------------------------------------------------------------
// int32 vectors (BasicVectorHolder<int32>)
// ---------------------------------------------------------------------------------------------

std::vector<int32_t> read_int32_vector_object(Input& in, const Where& w) {
  std::vector<int32_t> v;
  if (read_binary_header(in, w)) {
    int64_t at = in.pos();
    int first = in.peek();
    FW_CHECK(first != 'F' && first != 'D' && first != 'C', in.op(), " ", w.str(),
             " holds a matrix (binary token at byte ", at, "), not an int32 vector");
    const int32_t n = read_binary_int32(in, w, "int32 vector size");
    FW_CHECK(n >= 0, in.op(), " Corrupt int32 vector in ", w.str(), ": negative length ", n, " at byte ", at);
    check_available(in, uint64_t(n) * 5, w, "int32 vector");
    v.reserve(size_t(std::min<int32_t>(n, 1 << 20)));  // streams: grows with the data read
    for (int32_t i = 0; i < n; ++i) {
      int c = in.peek();
      FW_CHECK(c != EOF, in.op(), " Truncated int32 vector in ", w.str(), ": ", n,
               " elements declared, the data ends after ", i);
      v.push_back(read_binary_int32(in, w, "int32 vector element"));
    }
    return v;
  }
  // Text: the rest of the line.
  std::string line;
  for (int c = in.get(); c != EOF && c != '\n'; c = in.get()) line += char(c);
  size_t p = 0;
  for (;;) {
    while (p < line.size() && is_space(static_cast<unsigned char>(line[p]))) ++p;
    if (p == line.size()) break;
    size_t e = p;
    while (e < line.size() && !is_space(static_cast<unsigned char>(line[e]))) ++e;
    std::string tok = line.substr(p, e - p);
    int32_t x;
    FW_CHECK(parse_number(tok, &x), in.op(), " Corrupt text int32 vector in ", w.str(), ": element ", v.size(),
             " is ", qt(printable(tok)), ", not an int32");
    v.push_back(x);
    p = e;
  }
  return v;
}

void append_int32_vector(std::string& out, const std::vector<int32_t>& v, bool binary, const char* op) {
  FW_CHECK(v.size() <= size_t(INT32_MAX), op, " Vector of ", v.size(), " elements is too long for a Kaldi archive");
  if (binary) {
    out.append("\0B", 2);
    append_int32(out, int32_t(v.size()));
    for (int32_t x : v) append_int32(out, x);
    return;
  }
  for (int32_t x : v) {
    out += std::to_string(x);
    out += ' ';
  }
  out += '\n';
}

// ---------------------------------------------------------------------------------------------
// Holder operations
// ---------------------------------------------------------------------------------------------

template <class H> struct Ops;
template <> struct Ops<FloatMatrixHolder> {
  static Tensor read(Input& in, const Where& w) { return read_matrix_object(in, w, kFloat); }
  static void skip(Input& in, const Where& w) { skip_matrix_object(in, w, kFloat); }
  static void append(std::string& out, const Tensor& m, bool binary, const char* op) {
    append_matrix(out, matrix_for_writing(m, kFloat, op), binary, op);
  }
};
template <> struct Ops<DoubleMatrixHolder> {
  static Tensor read(Input& in, const Where& w) { return read_matrix_object(in, w, kDouble); }
  static void skip(Input& in, const Where& w) { skip_matrix_object(in, w, kDouble); }
  static void append(std::string& out, const Tensor& m, bool binary, const char* op) {
    append_matrix(out, matrix_for_writing(m, kDouble, op), binary, op);
  }
};
template <> struct Ops<Int32VectorHolder> {
  static std::vector<int32_t> read(Input& in, const Where& w) { return read_int32_vector_object(in, w); }
  static void skip(Input& in, const Where& w) { read_int32_vector_object(in, w); }  // small; fully checked
  static void append(std::string& out, const std::vector<int32_t>& v, bool binary, const char* op) {
    append_int32_vector(out, v, binary, op);
  }
};

template <class H> const char* holder_name();
template <> const char* holder_name<FloatMatrixHolder>() { return "matrix"; }
template <> const char* holder_name<DoubleMatrixHolder>() { return "double matrix"; }
template <> const char* holder_name<Int32VectorHolder>() { return "int32 vector"; }

// ---------------------------------------------------------------------------------------------
// rxfilenames and archive keys
// ---------------------------------------------------------------------------------------------

struct Rx {
  std::string source;  // path, "-" or "cmd |"
  int64_t offset = -1;
};

Rx parse_rxfilename(const std::string& rx_in, const std::string& op) {
  std::string rx = trim(rx_in);
  FW_CHECK(!rx.empty(), op, " Empty rxfilename");
  Rx r;
  if (rx == "-" || rx.back() == '|') {
    r.source = rx;
    return r;
  }
  FW_CHECK(!(rx.back() == ']' && rx.find('[') != std::string::npos), op,
           " Range specifiers (", qt(rx),
           ") are not supported; extract the rows with Kaldi's extract-rows or copy-matrix first");
  size_t colon = rx.rfind(':');
  if (colon != std::string::npos && colon + 1 < rx.size() &&
      rx.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    std::string digits = rx.substr(colon + 1);
    FW_CHECK(digits.size() <= 18, op, " Offset ", digits, " in ", qt(rx), " is out of range");
    r.source = rx.substr(0, colon);
    r.offset = std::stoll(digits);
  } else {
    r.source = rx;
  }
  FW_CHECK(!r.source.empty(), op, " Empty file name in ", qt(rx));
  return r;
}

// Reads "<key>" and the separator after it; false at the end of the archive. As Kaldi: leading
// whitespace is skipped, the key ends at whitespace, a space or tab after it is consumed (a
// newline is left for the text object that follows).
bool read_key(Input& in, std::string* key, int64_t* key_at) {
  skip_space(in);
  *key_at = in.pos();
  int c = in.peek();
  if (c == EOF) {
    in.check_error();
    return false;
  }
  key->clear();
  while (c != EOF && !is_space(c)) {
    FW_CHECK(c > 0x20 && c != 0x7f, in.op(), " Corrupt archive ", in.name(), ": ", byte_name(c), " in the key at byte ",
             *key_at, " (", qt(printable(*key)), " so far); not a Kaldi archive?");
    FW_CHECK(key->size() < 4096, in.op(), " Corrupt archive ", in.name(), ": key at byte ", *key_at,
             " is longer than 4096 bytes; not a Kaldi archive?");
    *key += char(in.get());
    c = in.peek();
  }
  FW_CHECK(c != EOF, in.op(), " Truncated archive ", in.name(), ": key ", qt(printable(*key)), " at byte ", *key_at,
           " is not followed by an object");
  if (c == ' ' || c == '\t') in.get();
  return true;
}

void check_key(const std::string& key, const char* op) {
  FW_CHECK(!key.empty(), op, " Empty key");
  for (unsigned char c : key)
    FW_CHECK(c > 0x20 && c != 0x7f, op, " Invalid key ", qt(printable(key)),
             ": keys must be non-empty and free of whitespace and control characters");
}

// One open file kept between reads of script entries that share it.
class FileCache {
 public:
  explicit FileCache(std::string op) : op_(std::move(op)) {}
  template <class H>
  typename H::Value read(const std::string& rxfilename, const std::string& key) {
    Rx rx = parse_rxfilename(rxfilename, op_);
    const bool stream = rx.source == "-" || rx.source.back() == '|';
    if (stream) {
      FW_CHECK(rx.offset < 0, op_, " Cannot seek in ", qt(rx.source));
      Input in(rx.source, op_);
      Where w{in, key, in.pos()};
      auto v = Ops<H>::read(in, w);
      in.finish();
      return v;
    }
    if (!in_ || path_ != rx.source) {
      in_.reset();
      in_ = std::make_unique<Input>(rx.source, op_);
      path_ = rx.source;
    }
    if (in_->seekable()) {
      in_->seek(std::max<int64_t>(rx.offset, 0));
    } else {
      // A FIFO or device: read from the start once.
      FW_CHECK(rx.offset <= 0, op_, " Cannot seek to byte ", rx.offset, " in ", in_->name(), " (not a regular file)");
      std::unique_ptr<Input> once = std::move(in_);
      path_.clear();
      Where w{*once, key, once->pos()};
      return Ops<H>::read(*once, w);
    }
    FW_CHECK(rx.offset < 0 || !in_->at_eof(), op_, " Offset ", rx.offset, " of ", qt(printable(key)),
             " is at the end of ", in_->name(), " (", in_->size(), " bytes)");
    Where w{*in_, key, in_->pos()};
    return Ops<H>::read(*in_, w);
  }

 private:
  std::string op_;
  std::string path_;
  std::unique_ptr<Input> in_;
};

// "key rxfilename" lines of a script file.
struct ScriptLine {
  std::string key, rx;
  int64_t line = 0;
};

// Reads the next non-blank script line; false at the end.
bool read_script_line(Input& in, ScriptLine* out, int64_t* lineno) {
  for (;;) {
    if (in.peek() == EOF) {
      in.check_error();
      return false;
    }
    std::string line;
    for (int c = in.get(); c != EOF && c != '\n'; c = in.get()) {
      line += char(c);
      FW_CHECK(line.size() <= (size_t(1) << 20), in.op(), " Line ", *lineno + 1, " of script file ", in.name(),
               " is longer than 1 MiB; not a script file?");
    }
    ++*lineno;
    std::string t = trim(line);
    if (t.empty()) continue;
    size_t sp = t.find_first_of(" \t");
    FW_CHECK(sp != std::string::npos, in.op(), " Script file ", in.name(), " line ", *lineno,
             ": expected \"key rxfilename\", got ", qt(printable(t)));
    out->key = t.substr(0, sp);
    out->rx = trim(t.substr(sp + 1));
    out->line = *lineno;
    for (unsigned char c : out->key)
      FW_CHECK(c > 0x20 && c != 0x7f, in.op(), " Script file ", in.name(), " line ", *lineno, ": invalid key ",
               qt(printable(out->key)));
    return true;
  }
}

std::vector<std::string> split_options(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  for (;;) {
    size_t c = s.find(',', p);
    out.push_back(s.substr(p, c == std::string::npos ? std::string::npos : c - p));
    if (c == std::string::npos) break;
    p = c + 1;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Output: an atomically replaced file, stdout, or a pipe "| cmd".
// ---------------------------------------------------------------------------------------------

// Writing into a pipe whose command has exited raises SIGPIPE, which would end the process.
// While fw writes to a command, SIGPIPE is blocked for the calling thread and a SIGPIPE raised
// meanwhile is discarded, so the failure surfaces as EPIPE, i.e. as an fw::Error.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&set_);
    sigaddset(&set_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    ::sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    ::pthread_sigmask(SIG_BLOCK, &set_, &old_);
  }
  ~SigpipeBlock() {
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      ::sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        struct timespec zero {};
        ::sigtimedwait(&set_, nullptr, &zero);
      }
    }
    ::pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t set_, old_;
  bool was_pending_ = false;
};

class Output {
 public:
  Output(const std::string& wx, const std::string& op) : op_(op), target_(wx) {
    std::string t = trim(wx);
    FW_CHECK(!t.empty(), op_, " Empty output file name");
    if (t == "-") {
      kind_ = Stdout;
      f_ = stdout;
      name_ = "standard output";
    } else if (t.front() == '|') {
      kind_ = Pipe;
      std::string cmd = trim(t.substr(1));
      FW_CHECK(!cmd.empty(), op_, " Empty command in ", qt(wx));
      name_ = "command " + qt(cmd);
      std::fflush(nullptr);
      f_ = ::popen(cmd.c_str(), "we");
      FW_CHECK(f_, op_, " Failed to run ", name_, ": ", std::strerror(errno));
    } else {
      kind_ = File;
      name_ = qt(wx);
      open_temp();
    }
  }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;
  ~Output() { discard(); }

  bool is_file() const { return kind_ == File; }
  int64_t pos() const { return pos_; }
  const std::string& name() const { return name_; }

  void write(const std::string& s) {
    FW_CHECK(f_, op_, " Write to ", name_, " after close");
    std::optional<SigpipeBlock> block;
    if (kind_ == Pipe) block.emplace();
    if (!s.empty() && std::fwrite(s.data(), 1, s.size(), f_) != s.size())
      FW_CHECK(false, op_, " Failed to write ", name_, ": ", std::strerror(errno));
    pos_ += int64_t(s.size());
  }
  // Flushes (and for files fsyncs and closes the temporary); rename() then puts it in place.
  void finish() {
    if (!f_) return;
    if (kind_ == File) {
      bool ok = std::fflush(f_) == 0 && ::fsync(::fileno(f_)) == 0;
      int e = errno;
      ok = std::fclose(f_) == 0 && ok;
      if (!ok && e == 0) e = errno;
      f_ = nullptr;
      FW_CHECK(ok, op_, " Failed to write ", name_, ": ", std::strerror(e));
    } else if (kind_ == Stdout) {
      FW_CHECK(std::fflush(f_) == 0, op_, " Failed to write ", name_, ": ", std::strerror(errno));
      f_ = nullptr;
    } else {
      bool flushed;
      int e;
      {
        SigpipeBlock block;
        flushed = std::fflush(f_) == 0;
        e = errno;
      }
      int st = ::pclose(f_);
      f_ = nullptr;
      FW_CHECK(flushed, op_, " Failed to write to ", name_, ": ", std::strerror(e));
      FW_CHECK(st != -1, op_, " Failed to wait for ", name_, ": ", std::strerror(errno));
      FW_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, op_, " ", name_,
               WIFEXITED(st) ? " exited with status " : " was killed by signal ",
               WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
    }
  }
  void rename_into_place() {
    if (kind_ != File || tmp_.empty()) return;
    FW_CHECK(::rename(tmp_.c_str(), target_.c_str()) == 0, op_, " Failed to move the new file to ", name_, ": ",
             std::strerror(errno));
    tmp_.clear();
    std::string dir = std::filesystem::path(target_).parent_path().string();
    int d = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
      ::fsync(d);
      ::close(d);
    }
  }
  void discard() {
    if (f_) {
      if (kind_ == File) {
        std::fclose(f_);
      } else if (kind_ == Pipe) {
        SigpipeBlock block;
        ::pclose(f_);
      } else {
        std::fflush(f_);
      }
      f_ = nullptr;
    }
    if (!tmp_.empty()) {
      ::unlink(tmp_.c_str());
      tmp_.clear();
    }
  }

 private:
  void open_temp() {
    static std::atomic<uint64_t> counter{0};
    std::filesystem::path p(target_);
    std::random_device rd;
    for (int attempt = 0; attempt < 100; ++attempt) {
      std::string name = "." + p.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-" +
                         std::to_string(counter++) + "-" + std::to_string(rd() & 0xFFFFF);
      std::string candidate = (p.parent_path() / name).string();
      int fd = ::open(candidate.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
      if (fd >= 0) {
        f_ = ::fdopen(fd, "wb");
        if (!f_) {
          int e = errno;
          ::close(fd);
          ::unlink(candidate.c_str());
          FW_CHECK(false, op_, " Cannot write ", name_, ": ", std::strerror(e));
        }
        tmp_ = candidate;
        return;
      }
      FW_CHECK(errno == EEXIST, op_, " Cannot write ", name_, ": failed to create a temporary file in its directory (",
               qt(candidate), "): ", std::strerror(errno));
    }
    FW_CHECK(false, op_, " Cannot write ", name_, ": no free temporary file name");
  }

  enum Kind { File, Stdout, Pipe } kind_ = File;
  std::string op_, target_, name_, tmp_;
  std::FILE* f_ = nullptr;
  int64_t pos_ = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Specifiers
// ---------------------------------------------------------------------------------------------

ReadSpecifier parse_rspecifier(const std::string& s) {
  const char* op = "[kaldi_io::parse_rspecifier]";
  size_t colon = s.find(':');
  FW_CHECK(colon != std::string::npos, op, " Bad rspecifier ", qt(s), ": expected ark:FILE or scp:FILE");
  ReadSpecifier r;
  bool ark = false, scp = false;
  for (const std::string& o : split_options(s.substr(0, colon))) {
    if (o == "ark") ark = true;
    else if (o == "scp") scp = true;
    else if (o == "b" || o == "t" || o == "o" || o == "no" || o == "s" || o == "ns" || o == "cs" || o == "ncs" ||
             o == "p" || o == "np" || o == "bg")
      continue;
    else FW_CHECK(false, op, " Bad rspecifier ", qt(s), ": unknown option ", qt(o));
  }
  FW_CHECK(ark != scp, op, " Bad rspecifier ", qt(s), ark ? ": both ark and scp" : ": expected ark:FILE or scp:FILE");
  r.kind = ark ? ReadSpecifier::Archive : ReadSpecifier::Script;
  r.path = trim(s.substr(colon + 1));
  FW_CHECK(!r.path.empty(), op, " Bad rspecifier ", qt(s), ": empty file name");
  return r;
}

WriteSpecifier parse_wspecifier(const std::string& s) {
  const char* op = "[kaldi_io::parse_wspecifier]";
  size_t colon = s.find(':');
  FW_CHECK(colon != std::string::npos, op, " Bad wspecifier ", qt(s),
           ": expected ark:FILE, ark,t:FILE or ark,scp:FILE.ark,FILE.scp");
  WriteSpecifier w;
  bool ark = false, scp = false;
  for (const std::string& o : split_options(s.substr(0, colon))) {
    if (o == "ark") ark = true;
    else if (o == "scp") scp = true;
    else if (o == "t") w.binary = false;
    else if (o == "b") w.binary = true;
    else if (o == "f" || o == "nf" || o == "p") continue;
    else FW_CHECK(false, op, " Bad wspecifier ", qt(s), ": unknown option ", qt(o));
  }
  FW_CHECK(ark, op, " Bad wspecifier ", qt(s),
           scp ? ": scp output alone (one file per key) is not supported; write ark,scp:FILE.ark,FILE.scp"
               : ": expected ark:FILE or ark,scp:FILE.ark,FILE.scp");
  std::string rest = s.substr(colon + 1);
  if (scp) {
    size_t comma = rest.find(',');
    FW_CHECK(comma != std::string::npos, op, " Bad wspecifier ", qt(s),
             ": ark,scp needs two files, ark,scp:FILE.ark,FILE.scp");
    w.ark = trim(rest.substr(0, comma));
    w.scp = trim(rest.substr(comma + 1));
    FW_CHECK(!w.scp.empty(), op, " Bad wspecifier ", qt(s), ": empty scp file name");
    FW_CHECK(!w.ark.empty(), op, " Bad wspecifier ", qt(s), ": empty archive file name");
    FW_CHECK(w.ark != "-" && w.ark.front() != '|', op, " Bad wspecifier ", qt(s),
             ": with scp the archive must be a file (the script file points into it)");
  } else {
    w.ark = trim(rest);
  }
  FW_CHECK(!w.ark.empty(), op, " Bad wspecifier ", qt(s), ": empty archive file name");
  return w;
}

// ---------------------------------------------------------------------------------------------
// Single objects
// ---------------------------------------------------------------------------------------------

std::string matrix_bytes(const Tensor& m, bool binary) {
  std::string out;
  append_matrix(out, m, binary, "[kaldi_io::matrix_bytes]");
  return out;
}

std::string int32_vector_bytes(const std::vector<int32_t>& v, bool binary) {
  std::string out;
  append_int32_vector(out, v, binary, "[kaldi_io::int32_vector_bytes]");
  return out;
}

Tensor read_matrix(const std::string& rxfilename, ScalarType dtype) {
  const char* op = "[kaldi_io::read_matrix]";
  FW_CHECK(dtype == kFloat || dtype == kDouble, op, " dtype must be float32 or float64, got ", dtype);
  FileCache cache(op);
  if (dtype == kDouble) return cache.read<DoubleMatrixHolder>(rxfilename, "");
  return cache.read<FloatMatrixHolder>(rxfilename, "");
}

std::vector<int32_t> read_int32_vector(const std::string& rxfilename) {
  FileCache cache("[kaldi_io::read_int32_vector]");
  return cache.read<Int32VectorHolder>(rxfilename, "");
}

void write_matrix(const std::string& path, const Tensor& matrix, bool binary) {
  const char* op = "[kaldi_io::write_matrix]";
  std::string bytes;
  append_matrix(bytes, matrix, binary, op);
  Output out(path, op);
  out.write(bytes);
  out.finish();
  out.rename_into_place();
}

// ---------------------------------------------------------------------------------------------
// SequentialTableReader
// ---------------------------------------------------------------------------------------------

template <class H>
struct SequentialTableReader<H>::Impl {
  std::string op, spec;
  ReadSpecifier rs;
  std::unique_ptr<Input> in;   // the archive, or the script file
  std::unique_ptr<FileCache> objects;  // script input: where the objects are
  int64_t script_line = 0;
  bool done = false;
  std::string key;
  Value value{};
  int64_t offset = -1;
  std::unordered_map<std::string, int64_t> seen;  // script keys -> line, for duplicate checks

  void advance() {
    done = true;  // until an entry is complete; an exception leaves the reader finished
    if (!in) return;
    if (rs.kind == ReadSpecifier::Archive) {
      int64_t key_at;
      if (!read_key(*in, &key, &key_at)) {
        std::unique_ptr<Input> last = std::move(in);
        last->finish();
        return;
      }
      offset = in->pos();
      Where w{*in, key, offset};
      value = Ops<H>::read(*in, w);
    } else {
      ScriptLine sl;
      if (!read_script_line(*in, &sl, &script_line)) {
        std::unique_ptr<Input> last = std::move(in);
        last->finish();
        return;
      }
      key = sl.key;
      offset = -1;
      try {
        value = objects->template read<H>(sl.rx, sl.key);
      } catch (const Error& e) {
        FW_CHECK(false, e.what(), " (", in->name(), " line ", sl.line, ")");
      }
    }
    done = false;
  }
};

template <class H>
SequentialTableReader<H>::SequentialTableReader(const std::string& rspecifier) : impl_(std::make_unique<Impl>()) {
  impl_->op = std::string("[kaldi_io::SequentialTableReader<") + holder_name<H>() + ">]";
  impl_->spec = rspecifier;
  impl_->rs = parse_rspecifier(rspecifier);
  impl_->in = std::make_unique<Input>(impl_->rs.path, impl_->op);
  if (impl_->rs.kind == ReadSpecifier::Script) impl_->objects = std::make_unique<FileCache>(impl_->op);
  impl_->advance();
}
template <class H> SequentialTableReader<H>::~SequentialTableReader() = default;
template <class H> SequentialTableReader<H>::SequentialTableReader(SequentialTableReader&&) noexcept = default;
template <class H>
SequentialTableReader<H>& SequentialTableReader<H>::operator=(SequentialTableReader&&) noexcept = default;

template <class H> bool SequentialTableReader<H>::done() const { return !impl_ || impl_->done; }
template <class H> const std::string& SequentialTableReader<H>::key() const {
  FW_CHECK(!done(), "[kaldi_io::SequentialTableReader] key() called after the last entry");
  return impl_->key;
}
template <class H> const typename SequentialTableReader<H>::Value& SequentialTableReader<H>::value() const {
  FW_CHECK(!done(), "[kaldi_io::SequentialTableReader] value() called after the last entry");
  return impl_->value;
}
template <class H> void SequentialTableReader<H>::next() {
  FW_CHECK(!done(), "[kaldi_io::SequentialTableReader] next() called after the last entry");
  impl_->advance();
}
template <class H> int64_t SequentialTableReader<H>::offset() const { return done() ? -1 : impl_->offset; }

// ---------------------------------------------------------------------------------------------
// RandomAccessTableReader
// ---------------------------------------------------------------------------------------------

template <class H>
struct RandomAccessTableReader<H>::Impl {
  std::string op, spec;
  ReadSpecifier rs;
  std::vector<std::string> order;
  std::unordered_map<std::string, std::string> rx;     // key -> rxfilename (scp, or "ark:offset")
  std::unordered_map<std::string, Value> loaded;        // archives that cannot be re-read
  mutable std::unique_ptr<FileCache> objects;
};

template <class H>
RandomAccessTableReader<H>::RandomAccessTableReader(const std::string& rspecifier) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.op = std::string("[kaldi_io::RandomAccessTableReader<") + holder_name<H>() + ">]";
  d.spec = rspecifier;
  d.rs = parse_rspecifier(rspecifier);
  d.objects = std::make_unique<FileCache>(d.op);
  Input in(d.rs.path, d.op);
  std::unordered_map<std::string, int64_t> where;  // key -> line or byte, for duplicate messages
  if (d.rs.kind == ReadSpecifier::Script) {
    ScriptLine sl;
    int64_t lineno = 0;
    while (read_script_line(in, &sl, &lineno)) {
      auto [it, fresh] = where.emplace(sl.key, sl.line);
      FW_CHECK(fresh, d.op, " Duplicate key ", qt(printable(sl.key)), " in script file ", in.name(), ": lines ",
               it->second, " and ", sl.line);
      d.order.push_back(sl.key);
      d.rx.emplace(sl.key, sl.rx);
    }
  } else {
    const bool seekable = in.seekable();
    std::string key;
    int64_t key_at;
    while (read_key(in, &key, &key_at)) {
      auto [it, fresh] = where.emplace(key, key_at);
      FW_CHECK(fresh, d.op, " Duplicate key ", qt(printable(key)), " in archive ", in.name(), ": at bytes ",
               it->second, " and ", key_at);
      const int64_t off = in.pos();
      Where w{in, key, off};
      d.order.push_back(key);
      if (seekable) {
        Ops<H>::skip(in, w);  // headers checked; binary matrix data is read when asked for
        d.rx.emplace(key, d.rs.path + ":" + std::to_string(off));
      } else {
        d.loaded.emplace(key, Ops<H>::read(in, w));
      }
    }
  }
  in.finish();
}
template <class H> RandomAccessTableReader<H>::~RandomAccessTableReader() = default;
template <class H> RandomAccessTableReader<H>::RandomAccessTableReader(RandomAccessTableReader&&) noexcept = default;
template <class H>
RandomAccessTableReader<H>& RandomAccessTableReader<H>::operator=(RandomAccessTableReader&&) noexcept = default;

template <class H> bool RandomAccessTableReader<H>::has_key(const std::string& key) const {
  return impl_->rx.count(key) || impl_->loaded.count(key);
}
template <class H>
typename RandomAccessTableReader<H>::Value RandomAccessTableReader<H>::value(const std::string& key) const {
  const Impl& d = *impl_;
  if (auto it = d.loaded.find(key); it != d.loaded.end()) return it->second;
  auto it = d.rx.find(key);
  FW_CHECK(it != d.rx.end(), d.op, " No key ", qt(printable(key)), " in ", qt(d.spec), " (", d.order.size(),
           " keys)");
  return d.objects->template read<H>(it->second, key);
}
template <class H> std::vector<std::string> RandomAccessTableReader<H>::keys() const { return impl_->order; }
template <class H> size_t RandomAccessTableReader<H>::size() const { return impl_->order.size(); }

// ---------------------------------------------------------------------------------------------
// TableWriter
// ---------------------------------------------------------------------------------------------

template <class H>
struct TableWriter<H>::Impl {
  std::string op;
  WriteSpecifier ws;
  std::unique_ptr<Output> ark, scp;
  bool closed = false;
};

template <class H>
TableWriter<H>::TableWriter(const std::string& wspecifier) : impl_(std::make_unique<Impl>()) {
  Impl& d = *impl_;
  d.op = std::string("[kaldi_io::TableWriter<") + holder_name<H>() + ">]";
  d.ws = parse_wspecifier(wspecifier);
  d.ark = std::make_unique<Output>(d.ws.ark, d.op);
  if (!d.ws.scp.empty()) d.scp = std::make_unique<Output>(d.ws.scp, d.op);
}
template <class H> TableWriter<H>::~TableWriter() = default;  // Outputs discard what was not closed
template <class H> TableWriter<H>::TableWriter(TableWriter&&) noexcept = default;
template <class H> TableWriter<H>& TableWriter<H>::operator=(TableWriter&&) noexcept = default;

template <class H>
void TableWriter<H>::write(const std::string& key, const Value& value) {
  Impl& d = *impl_;
  FW_CHECK(!d.closed, d.op, " write(", qt(printable(key)), ") after close() of ", d.ark->name());
  check_key(key, d.op.c_str());
  std::string entry = key + " ";
  const int64_t offset = d.ark->pos() + int64_t(entry.size());
  Ops<H>::append(entry, value, d.ws.binary, d.op.c_str());
  d.ark->write(entry);
  if (d.scp) d.scp->write(key + " " + d.ws.ark + ":" + std::to_string(offset) + "\n");
}

template <class H>
void TableWriter<H>::close() {
  Impl& d = *impl_;
  if (d.closed) return;
  d.closed = true;
  d.ark->finish();
  if (d.scp) d.scp->finish();
  d.ark->rename_into_place();
  if (d.scp) d.scp->rename_into_place();
}

template class SequentialTableReader<FloatMatrixHolder>;
template class SequentialTableReader<DoubleMatrixHolder>;
template class SequentialTableReader<Int32VectorHolder>;
template class RandomAccessTableReader<FloatMatrixHolder>;
template class RandomAccessTableReader<DoubleMatrixHolder>;
template class RandomAccessTableReader<Int32VectorHolder>;
template class TableWriter<FloatMatrixHolder>;
template class TableWriter<DoubleMatrixHolder>;
template class TableWriter<Int32VectorHolder>;

// ---------------------------------------------------------------------------------------------
// Whole tables, alignments
// ---------------------------------------------------------------------------------------------

namespace {
template <class H>
std::map<std::string, typename H::Value> read_table(const std::string& rspecifier, const char* op) {
  std::map<std::string, typename H::Value> out;
  for (SequentialTableReader<H> r(rspecifier); !r.done(); r.next()) {
    auto [it, fresh] = out.emplace(r.key(), r.value());
    FW_CHECK(fresh, op, " Duplicate key ", qt(printable(r.key())), " in ", qt(rspecifier));
  }
  return out;
}

// True when s reads as "ark...:" / "scp...:" with known options before the colon.
bool looks_like_rspecifier(const std::string& s) {
  size_t colon = s.find(':');
  if (colon == std::string::npos) return false;
  bool kind = false;
  for (const std::string& o : split_options(s.substr(0, colon))) {
    if (o == "ark" || o == "scp") kind = true;
    else if (!(o == "b" || o == "t" || o == "o" || o == "no" || o == "s" || o == "ns" || o == "cs" || o == "ncs" ||
               o == "p" || o == "np" || o == "bg"))
      return false;
  }
  return kind;
}
}  // namespace

std::map<std::string, Tensor> read_matrices(const std::string& rspecifier, ScalarType dtype) {
  const char* op = "[kaldi_io::read_matrices]";
  FW_CHECK(dtype == kFloat || dtype == kDouble, op, " dtype must be float32 or float64, got ", dtype);
  if (dtype == kDouble) return read_table<DoubleMatrixHolder>(rspecifier, op);
  return read_table<FloatMatrixHolder>(rspecifier, op);
}

std::map<std::string, std::vector<int32_t>> read_int32_vectors(const std::string& rspecifier) {
  return read_table<Int32VectorHolder>(rspecifier, "[kaldi_io::read_int32_vectors]");
}

std::map<std::string, std::vector<int32_t>> read_alignments(const std::string& s) {
  const std::string spec = looks_like_rspecifier(s) ? s : "ark:" + s;
  return read_table<Int32VectorHolder>(spec, "[kaldi_io::read_alignments]");
}

std::vector<int32_t> check_alignment_length(const std::string& utt, int64_t num_frames,
                                            const std::vector<int32_t>& ali, int64_t tolerance) {
  const char* op = "[kaldi_io::check_alignment_length]";
  FW_CHECK(tolerance >= 0, op, " tolerance must be non-negative, got ", tolerance);
  FW_CHECK(num_frames >= 0, op, " Utterance ", qt(utt), ": negative frame count ", num_frames);
  const int64_t n = int64_t(ali.size());
  const int64_t diff = n > num_frames ? n - num_frames : num_frames - n;
  FW_CHECK(diff <= tolerance, op, " Utterance ", qt(utt), ": features have ", num_frames,
           " frames but the alignment has ", n, " ids (difference ", diff, " > tolerance ", tolerance, ")");
  if (n == num_frames) return ali;
  std::vector<int32_t> out(ali.begin(), ali.begin() + std::min(n, num_frames));
  if (n < num_frames) {
    FW_CHECK(n > 0, op, " Utterance ", qt(utt), ": the alignment is empty, nothing to pad ", num_frames,
             " frames with");
    out.resize(size_t(num_frames), ali.back());
  }
  return out;
}

std::map<std::string, std::vector<int32_t>> check_alignment_lengths(
    const std::map<std::string, Tensor>& features, const std::map<std::string, std::vector<int32_t>>& alignments,
    int64_t tolerance) {
  const char* op = "[kaldi_io::check_alignment_lengths]";
  std::map<std::string, std::vector<int32_t>> out;
  for (const auto& [utt, f] : features) {
    FW_CHECK(f.defined() && f.dim() == 2, op, " Utterance ", qt(utt), ": expected (frames, dims) features, got ",
             f.defined() ? f.dim() : 0, "-D");
    auto it = alignments.find(utt);
    FW_CHECK(it != alignments.end(), op, " Utterance ", qt(utt), " (", f.size(0),
             " frames) has no alignment (", alignments.size(), " alignments given)");
    out.emplace(utt, check_alignment_length(utt, f.size(0), it->second, tolerance));
  }
  return out;
}

}  // namespace fw::audio::kaldi_io
