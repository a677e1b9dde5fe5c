// Host-compiler driver and kernel cache (DESIGN.md §7): generated C++ is compiled to a shared
// object with the host compiler and loaded with dlopen.
//
// Note [Kernel cache]
// A library is named by a 64-bit hash of (source, compiler command, flags, fw version, the text
// of the headers every kernel includes: the prelude, core/functors.h, vec_math.h, parallel.h), so
// a change to any of them is a different file; a functor whose formula changed between two builds
// of the same fw version is not served from a kernel compiled against the old one. Lookup order: the in-memory map (one dlopen per
// process), then $FW_CACHE_DIR (default ~/.cache/fw) on disk, then the compiler. Files are written
// under a unique temporary name and renamed into place, so concurrent processes compiling the
// same graph never see a torn file (the last rename wins with identical content). Every library
// exports fw_kernel_key(), which must return the hash it was built for: a truncated, corrupted or
// foreign file fails that check, is deleted, and is rebuilt. Before dlopen sees a file, its ELF
// headers are checked against its size (every segment and the section table inside the file:
// glibc maps segments past the end of a truncated file and the first touch of them is SIGBUS), and
// its contents against the checksum trailer written after it was compiled (damaged relocation
// tables crash dlopen itself; Note [Library checksums] in compiler.cpp).
#pragma once
#include <string>
#include <vector>

namespace fw::codegen {

struct Library {
  void* handle = nullptr;
  std::string path;
  bool from_disk = false;  // loaded from the disk cache (not compiled in this call)
  void* symbol(const std::string& name) const;
};

// Compiles (or loads from cache) `source`; the source must define fw_kernel_key() returning the
// string passed as `key` (use kernel_key(source) to get it). Throws fw::Error with the compiler's
// output on failure.
const Library& load_library(const std::string& source, const std::string& key);
std::string kernel_key(const std::string& source);
// The include directory generated code needs (functors and vectorised math) and the cache dir.
std::string include_dir();
std::string cache_dir();
void clear_memory_cache();

}  // namespace fw::codegen
