// Included first by every kernel file fw::compile generates (codegen/cpp_backend.cpp); compiled
// once into a precompiled header per cache directory (codegen/compiler.cpp), so a kernel file
// costs its own loops, not these headers.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "core/functors.h"
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
}  // namespace fw::kernel
