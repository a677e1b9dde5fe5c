// fw_recipe utilities: strings, files, seeds, key=value files, command-line options.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include "examples/babel/recipe.h"

namespace fw::recipe {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  size_t b = 0;
  while (true) {
    size_t e = s.find(sep, b);
    out.push_back(s.substr(b, e == std::string::npos ? std::string::npos : e - b));
    if (e == std::string::npos) break;
    b = e + 1;
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); i++) out += (i ? sep : "") + v[i];
  return out;
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void make_dirs(const std::string& path) {
  if (path.empty()) return;
  std::string cur;
  for (const auto& part : split(path, '/')) {
    cur += part;
    if (!cur.empty() && !file_exists(cur))
      FW_CHECK(::mkdir(cur.c_str(), 0777) == 0 || errno == EEXIST, "cannot create directory ", cur, ": ",
               std::strerror(errno));
    cur += "/";
  }
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  FW_CHECK(f.good(), "cannot read ", path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_text_atomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0666);
  FW_CHECK(fd >= 0, "cannot write ", tmp, ": ", std::strerror(errno));
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      ::unlink(tmp.c_str());
      FW_CHECK(false, "cannot write ", tmp, ": ", std::strerror(errno));
    }
    done += size_t(n);
  }
  bool ok = ::fsync(fd) == 0;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    FW_CHECK(false, "cannot write ", path, ": ", std::strerror(errno));
  }
}

namespace {
uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}
}  // namespace

uint64_t mix_seed(uint64_t seed, uint64_t a, uint64_t b, uint64_t c) {
  uint64_t h = splitmix64(seed);
  h = splitmix64(h ^ a);
  h = splitmix64(h ^ (b + 0x1234567ULL));
  h = splitmix64(h ^ (c + 0x7654321ULL));
  return h;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

KeyValues parse_key_values(const std::string& text) {
  KeyValues kv;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    size_t eq = line.find('=');
    FW_CHECK(eq != std::string::npos, "malformed line (no '='): ", line);
    kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

std::string format_key_values(const KeyValues& kv) {
  std::string out;
  for (const auto& [k, v] : kv) out += k + "=" + v + "\n";
  return out;
}

Args::Args(int argc, char** argv, int first) {
  for (int i = first; i < argc; i++) {
    std::string a = argv[i];
    FW_CHECK(a.size() > 2 && a.compare(0, 2, "--") == 0, "unexpected argument '", a, "' (options are --name value)");
    a = a.substr(2);
    std::string value;
    size_t eq = a.find('=');
    if (eq != std::string::npos) {
      value = a.substr(eq + 1);
      a = a.substr(0, eq);
    } else if (i + 1 < argc && std::strncmp(argv[i + 1], "--", 2) != 0) {
      value = argv[++i];
    } else {
      value = "\x01";  // bare flag
    }
    FW_CHECK(!values_.count(a), "option --", a, " given twice");
    values_[a] = value;
    used_[a] = false;
  }
}

bool Args::has(const std::string& name) const { return values_.count(name) > 0; }

std::string Args::str(const std::string& name, const std::string& def) {
  auto it = values_.find(name);
  if (it == values_.end()) return def;
  used_[name] = true;
  FW_CHECK(it->second != "\x01", "option --", name, " needs a value");
  return it->second;
}

std::string Args::required(const std::string& name) {
  FW_CHECK(has(name), "option --", name, " is required");
  return str(name, "");
}

int64_t Args::integer(const std::string& name, int64_t def) {
  if (!has(name)) return def;
  std::string v = str(name, "");
  char* end = nullptr;
  long long x = std::strtoll(v.c_str(), &end, 10);
  FW_CHECK(end && *end == 0 && !v.empty(), "option --", name, ": '", v, "' is not an integer");
  return x;
}

double Args::real(const std::string& name, double def) {
  if (!has(name)) return def;
  std::string v = str(name, "");
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  FW_CHECK(end && *end == 0 && !v.empty(), "option --", name, ": '", v, "' is not a number");
  return x;
}

bool Args::flag(const std::string& name) {
  auto it = values_.find(name);
  if (it == values_.end()) return false;
  used_[name] = true;
  const std::string& v = it->second;
  if (v == "\x01" || v == "1" || v == "true" || v == "yes") return true;
  if (v == "0" || v == "false" || v == "no") return false;
  FW_CHECK(false, "option --", name, ": '", v, "' is not a boolean");
  return false;
}

void Args::check_all_used() const {
  std::vector<std::string> unknown;
  for (const auto& [k, used] : used_)
    if (!used) unknown.push_back("--" + k);
  FW_CHECK(unknown.empty(), "unknown option(s) for this command: ", join(unknown, " "));
}

}  // namespace fw::recipe
