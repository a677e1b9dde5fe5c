// Host compiler + dlopen + kernel cache (Note [Kernel cache] in compiler.h).
#include "codegen/compiler.h"

#include <dlfcn.h>
#include <elf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "fw/error.h"
#include "jit/log.h"

#ifndef FW_SOURCE_INCLUDE_DIR
#define FW_SOURCE_INCLUDE_DIR ""
#endif
#ifndef FW_INSTALL_INCLUDE_DIR
#define FW_INSTALL_INCLUDE_DIR ""
#endif
#ifndef FW_HOST_CXX
#define FW_HOST_CXX "c++"
#endif
#ifndef FW_VERSION_STRING
#define FW_VERSION_STRING "0"
#endif

namespace fw::codegen {

namespace {

bool file_exists(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0;
}

std::string compiler() {
  const char* e = std::getenv("FW_CXX");
  return e && *e ? e : FW_HOST_CXX;
}

const char* kCodeFlags = "-O3 -march=native -fopenmp -fno-math-errno -fno-trapping-math -std=c++17 -fPIC -w";
const char* kFlags = "-O3 -march=native -fopenmp -fno-math-errno -fno-trapping-math -std=c++17 -fPIC -w -shared";

std::string shell_quote(const std::string& s) {
  std::string r = "'";
  for (char c : s) r += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return r + "'";
}

// Identifies the compiler binary without running it (a warm process must not pay for
// `c++ --version`): its resolved path, size and modification time.
std::string compiler_version() {
  static const std::string v = [] {
    std::string c = compiler(), path;
    if (c.find('/') != std::string::npos) {
      path = c;
    } else if (const char* p = std::getenv("PATH")) {
      std::stringstream ss(p);
      for (std::string dir; std::getline(ss, dir, ':');)
        if (!dir.empty() && ::access((dir + "/" + c).c_str(), X_OK) == 0) {
          path = dir + "/" + c;
          break;
        }
    }
    char real[4096];
    if (path.empty() || !::realpath(path.c_str(), real)) return c;
    struct stat st;
    if (::stat(real, &st) != 0) return std::string(real);
    return std::string(real) + ":" + std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
  }();
  return v;
}

uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

void mkdirs(const std::string& path) {
  std::string cur;
  std::stringstream ss(path);
  std::string part;
  if (!path.empty() && path[0] == '/') cur = "/";
  while (std::getline(ss, part, '/')) {
    if (part.empty()) continue;
    cur += part + "/";
    ::mkdir(cur.c_str(), 0755);
  }
}

std::mutex g_mu;
std::map<std::string, std::unique_ptr<Library>>& memory() {
  static std::map<std::string, std::unique_ptr<Library>> m;
  return m;
}

// "" when `path` is a 64-bit ELF shared object whose program segments and section header table lie
// inside the file (Note [Kernel cache]); otherwise what is wrong with it.
std::string elf_problem(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "cannot be opened";
  f.seekg(0, std::ios::end);
  const uint64_t size = uint64_t(f.tellg());
  Elf64_Ehdr eh;
  f.seekg(0);
  if (size < sizeof eh || !f.read(reinterpret_cast<char*>(&eh), sizeof eh)) return "shorter than an ELF header";
  if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_DYN)
    return "not a 64-bit ELF shared object";
  auto inside = [&](uint64_t off, uint64_t n) { return off <= size && n <= size - off; };
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || !inside(eh.e_phoff, uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr)))
    return "its program headers lie past the end of the file";
  if (eh.e_shnum != 0 && !inside(eh.e_shoff, uint64_t(eh.e_shnum) * eh.e_shentsize))
    return "its section headers lie past the end of the file (truncated)";
  f.seekg(std::streamoff(eh.e_phoff));
  for (int i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    if (!f.read(reinterpret_cast<char*>(&ph), sizeof ph)) return "unreadable program headers";
    if (ph.p_type == PT_LOAD && !inside(ph.p_offset, ph.p_filesz)) return "a segment lies past the end of the file (truncated)";
  }
  return "";
}

std::string read_file(const std::string& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Note [Library checksums]
// The ELF check above catches truncation but not damaged contents: a library whose relocation
// tables were overwritten (zeroed from some offset on, or random bytes) kept its headers and size,
// and dlopen crashed applying the relocations, before fw_kernel_key() could be asked. Every
// library is therefore written with a trailer, 8 bytes of magic, the byte length before the
// trailer and a 64-bit FNV-1a hash of those bytes, and the whole file is hashed before dlopen (a
// few hundred microseconds for a kernel library). The dynamic loader ignores bytes past the
// sections, so the trailer does not change what is loaded.
constexpr char kTrailerMagic[8] = {'f', 'w', 'k', 'e', 'r', 'n', 'e', 'l'};
constexpr size_t kTrailer = 24;

uint64_t fnv1a(const char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ uint64_t(uint8_t(p[i]))) * 1099511628211ull;
  return h;
}

// Appends the trailer to the library just compiled at `path`; false on I/O errors.
bool append_trailer(const std::string& path) {
  std::string body = read_file(path);
  if (body.empty()) return false;
  const uint64_t n = body.size(), h = fnv1a(body.data(), body.size());
  std::ofstream f(path, std::ios::binary | std::ios::app);
  f.write(kTrailerMagic, 8);
  f.write(reinterpret_cast<const char*>(&n), 8);
  f.write(reinterpret_cast<const char*>(&h), 8);
  f.close();
  return f.good();
}

// "" when the file ends in a trailer that matches its contents; otherwise what is wrong.
std::string checksum_problem(const std::string& path) {
  const std::string data = read_file(path);
  if (data.size() < kTrailer) return "too short for its checksum trailer";
  const char* t = data.data() + data.size() - kTrailer;
  uint64_t n, h;
  std::memcpy(&n, t + 8, 8);
  std::memcpy(&h, t + 16, 8);
  if (std::memcmp(t, kTrailerMagic, 8) != 0 || n != data.size() - kTrailer) return "no checksum trailer";
  if (fnv1a(data.data(), size_t(n)) != h) return "its contents do not match its checksum (corrupted)";
  return "";
}

// dlopen + key check; null (file removed) when the file is not a valid library for `key`.
void* open_checked(const std::string& path, const std::string& key) {
  std::string why = elf_problem(path);
  if (why.empty()) why = checksum_problem(path);
  if (!why.empty()) {
    jit::log::kernels("cache file ", path, " is not a valid library (", why, "); rebuilding");
    ::unlink(path.c_str());
    return nullptr;
  }
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    jit::log::kernels("cache file ", path, " failed to load (", dlerror(), "); rebuilding");
    ::unlink(path.c_str());
    return nullptr;
  }
  using KeyFn = const char* (*)();
  auto fn = reinterpret_cast<KeyFn>(dlsym(h, "fw_kernel_key"));
  if (!fn || key != fn()) {
    jit::log::kernels("cache file ", path, " does not hold the expected kernels; rebuilding");
    dlclose(h);
    ::unlink(path.c_str());
    return nullptr;
  }
  return h;
}

// The text of the headers every kernel includes, for the cache keys: a kernel compiled against
// an older functors.h (another formula for the same functor name) must not be reused.
const std::string& prelude_text(const std::string& inc) {
  static std::mutex mu;
  static std::map<std::string, std::string> memo;
  std::lock_guard<std::mutex> l(mu);
  auto it = memo.find(inc);
  if (it != memo.end()) return it->second;
  return memo[inc] = read_file(inc + "/codegen/kernel_prelude.h") + read_file(inc + "/core/functors.h") +
                     read_file(inc + "/core/vec_math.h") + read_file(inc + "/core/parallel.h");
}

// The precompiled kernel prelude for the current cache dir and compiler (built on first use;
// "" when it cannot be built, and kernels then compile from the plain headers). Note [Kernel
// cache]: the .gch sits in a directory searched before the real headers, so GCC uses it when it
// is valid for the flags and silently falls back to the header when not.
std::string pch_dir() {
  static std::mutex mu;
  static std::map<std::string, std::string> done;  // cache dir -> pch dir
  std::lock_guard<std::mutex> l(mu);
  std::string inc = include_dir(), cache = cache_dir();
  std::string salt = compiler() + compiler_version() + kCodeFlags + inc + prelude_text(inc);
  char key[40];
  std::snprintf(key, sizeof key, "%016llx", (unsigned long long)fnv1a(salt));
  std::string dir = cache + "/pch_" + key, gch = dir + "/codegen/kernel_prelude.h.gch";
  if (file_exists(gch)) return dir;
  auto it = done.find(cache + key);
  if (it != done.end()) return it->second;  // tried before and failed
  mkdirs(dir + "/codegen");
  static std::atomic<uint64_t> counter{0};
  std::string tmp = gch + "." + std::to_string(::getpid()) + "." + std::to_string(counter++) + ".tmp";
  std::string cmd = shell_quote(compiler()) + " " + kCodeFlags + " -x c++-header -I" + shell_quote(inc) + " " +
                    shell_quote(inc + "/codegen/kernel_prelude.h") + " -o " + shell_quote(tmp) + " > /dev/null 2>&1";
  jit::log::kernels("building the precompiled kernel prelude ", gch);
  if (std::system(cmd.c_str()) == 0 && ::rename(tmp.c_str(), gch.c_str()) == 0) return done[cache + key] = dir;
  ::unlink(tmp.c_str());
  jit::log::kernels("could not build the precompiled prelude; kernels compile from the headers");
  return done[cache + key] = "";
}

}  // namespace

void* Library::symbol(const std::string& name) const {
  void* s = dlsym(handle, name.c_str());
  FW_CHECK(s != nullptr, "[fw::compile] generated library ", path, " has no symbol ", name);
  return s;
}

std::string include_dir() {
  if (const char* e = std::getenv("FW_INCLUDE_DIR"); e && *e) return e;
  std::string src = FW_SOURCE_INCLUDE_DIR;
  if (!src.empty() && file_exists(src + "/core/functors.h") && file_exists(src + "/codegen/kernel_prelude.h")) return src;
  return FW_INSTALL_INCLUDE_DIR;
}

std::string cache_dir() {
  if (const char* e = std::getenv("FW_CACHE_DIR"); e && *e) return e;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/fw";
}

std::string kernel_key(const std::string& source) {
  static std::mutex mu;
  static std::map<std::string, uint64_t> salts;  // include dir -> hash of everything but the source
  const std::string inc = include_dir();
  uint64_t h;
  {
    std::lock_guard<std::mutex> l(mu);
    auto it = salts.find(inc);
    if (it == salts.end()) {
      std::string salt = compiler() + "\n" + compiler_version() + "\n" + kFlags + "\n" + FW_VERSION_STRING + "\n" +
                         inc + "\n" + prelude_text(inc);
      it = salts.emplace(inc, fnv1a(salt)).first;
    }
    h = it->second;
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)fnv1a(source, h));
  return buf;
}

void clear_memory_cache() {
  std::lock_guard<std::mutex> l(g_mu);
  memory().clear();  // handles stay loaded: programs built earlier may still point into them
}

const Library& load_library(const std::string& source, const std::string& key) {
  {
    std::lock_guard<std::mutex> l(g_mu);
    auto it = memory().find(key);
    if (it != memory().end()) return *it->second;
  }
  // Compiles without the lock, so independent graphs (a forward and its backward) build in
  // parallel; two threads building one key both finish, and the first to register wins.
  std::string dir = cache_dir();
  mkdirs(dir);
  std::string base = dir + "/fw_" + key;
  std::string so = base + ".so";
  auto lib = std::make_unique<Library>();
  lib->path = so;
  if (file_exists(so)) {
    lib->handle = open_checked(so, key);
    lib->from_disk = lib->handle != nullptr;
    if (lib->handle) jit::log::kernels("loaded ", so, " from the disk cache");
  }
  if (!lib->handle) {
    static std::atomic<uint64_t> counter{0};
    std::string tag = "." + std::to_string(::getpid()) + "." + std::to_string(counter++) + ".tmp";
    std::string cpp = base + ".cpp";
    {
      std::string tmp_cpp = cpp + tag;
      std::ofstream f(tmp_cpp, std::ios::binary);
      FW_CHECK(f.good(), "[fw::compile] cannot write generated source to ", tmp_cpp,
               " (set FW_CACHE_DIR to a writable directory)");
      f << source;
      f.close();
      FW_CHECK(f.good(), "[fw::compile] failed writing ", tmp_cpp);
      FW_CHECK(::rename(tmp_cpp.c_str(), cpp.c_str()) == 0, "[fw::compile] cannot rename ", tmp_cpp, " to ", cpp);
    }
    std::string tmp_so = so + tag, log_path = base + tag + ".log";
    auto command = [&](const std::string& pch) {
      return shell_quote(compiler()) + " " + kFlags + (pch.empty() ? "" : " -I" + shell_quote(pch)) + " -I" +
             shell_quote(include_dir()) + " " + shell_quote(cpp) + " -o " + shell_quote(tmp_so) + " > " +
             shell_quote(log_path) + " 2>&1";
    };
    std::string pch = pch_dir();
    jit::log::kernels("compiling ", cpp, pch.empty() ? "" : " (precompiled prelude)");
    int rc = std::system(command(pch).c_str());
    if (rc != 0 && !pch.empty()) rc = std::system(command("").c_str());  // a bad .gch: plain headers
    std::string out;
    {
      std::ifstream lf(log_path);
      std::stringstream ss;
      ss << lf.rdbuf();
      out = ss.str();
    }
    ::unlink(log_path.c_str());
    if (rc != 0) {
      ::unlink(tmp_so.c_str());
      FW_CHECK(false, "[fw::compile] the host compiler failed on ", cpp, " (", compiler(), " ", kFlags,
               "; set FW_CXX to choose another compiler):\n", out.substr(0, 4000));
    }
    if (!append_trailer(tmp_so)) {
      ::unlink(tmp_so.c_str());
      FW_CHECK(false, "[fw::compile] cannot write the checksum of ", tmp_so, " (set FW_CACHE_DIR to a writable directory)");
    }
    FW_CHECK(::rename(tmp_so.c_str(), so.c_str()) == 0, "[fw::compile] cannot rename ", tmp_so, " to ", so);
    lib->handle = open_checked(so, key);
    FW_CHECK(lib->handle != nullptr, "[fw::compile] the freshly compiled ", so, " could not be loaded");
  }
  std::lock_guard<std::mutex> l(g_mu);
  auto& slot = memory()[key];
  if (!slot) slot = std::move(lib);
  return *slot;
}

}  // namespace fw::codegen
