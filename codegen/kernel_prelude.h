// Included first by every kernel file fw::compile generates (codegen/cpp_backend.cpp); compiled
// once into a precompiled header per cache directory (codegen/compiler.cpp), so a kernel file
// costs its own loops, not these headers.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>

#include "core/functors.h"
#include "core/parallel.h"
#include "core/vec_math.h"

namespace fw::kernel {
constexpr int64_t B = 512;  // elements per block (codegen's kBlock)
// Gathers m elements at stride s (0: broadcast one value).
template <class T> inline void load(T* __restrict d, const T* __restrict p, int64_t s, int64_t m) {
  if (s == 1) for (int64_t j = 0; j < m; j++) d[j] = p[j];
  else if (s == 0) for (int64_t j = 0; j < m; j++) d[j] = p[0];
  else for (int64_t j = 0; j < m; j++) d[j] = p[j * s];
}
template <class T> inline void store(T* __restrict p, const T* __restrict d, int64_t s, int64_t m) {
  if (s == 1) for (int64_t j = 0; j < m; j++) p[j] = d[j];
  else for (int64_t j = 0; j < m; j++) p[j * s] = d[j];
}
// Runs f(begin, end) over [0, n) on fw's thread pool (core/parallel.h), the workers eager kernels
// use, in one piece when the work is small.
template <class F> inline void par_for(int64_t n, int64_t work, const F& f) {
  fw::detail::parallel_for(0, n, work >= fw::detail::kGrainSize ? 1 : n, f);
}
// A value the compiler may not assume: pow's literal exponent goes through it, since GCC 12's
// vectoriser turns pow(x, 0.5) into sqrt(x) (NaN for -inf where pow gives +inf, -0 for -0 where
// pow gives +0) even without -ffast-math; eager calls std::pow.
template <class T> inline T opaque(T v) {
  asm("" : "+m"(v));
  return v;
}
// A per-thread row buffer (std::vector<bool> has no data()).
template <class T> struct RowBuf {
  std::unique_ptr<T[]> p;
  explicit RowBuf(int64_t n) : p(new T[n > 0 ? n : 1]) {}
  T* data() { return p.get(); }
};
}  // namespace fw::kernel
