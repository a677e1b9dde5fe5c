// Included first by every kernel file fw::compile generates (codegen/cpp_backend.cpp); compiled
// once into a precompiled header per cache directory (codegen/compiler.cpp), so a kernel file
// costs its own loops, not these headers.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#if defined(__SSE2__)
#include <emmintrin.h>  // not immintrin.h: it made the precompiled prelude 44% larger, 1 s slower
#endif

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
// Note [Streaming stores]
// A row kernel whose row outputs total at least kStreamBytes writes them with non-temporal
// stores: each row is computed into its L1 row buffer, then streamed to memory without the
// read-for-ownership a normal store of an uncached line costs and without evicting the inputs
// from the last-level cache. Measured on the AVX2 host (32 MiB L3), two threads:
//  * W3 compiled (softmax(layer_norm(x)), 4096 x 1024): 3.59 -> 3.33 ms with only the store
//    changed; 4.54 -> 4.24-4.32 ms when a reduction reads the output right after; the same at
//    2048 rows (8 MiB);
//  * not for pointwise kernels: gelu(x * w + b) gained 3-5% at 16M floats but lost 8-18% at
//    2-4M floats when the next op read the output (which normal stores had left in L3).
// Streamed stores are weakly ordered: each thread fences after its rows (stream_fence), before
// par_for joins.
constexpr int64_t kStreamBytes = int64_t(8) << 20;
inline bool streams(int64_t bytes) { return bytes >= kStreamBytes; }
// 32-byte streamed stores through the compiler's builtin where AVX is on (_mm256_stream_si256
// would need immintrin.h, see the include above), else SSE2's 16-byte ones (W3's kernel: 3.64 vs
// 3.75 ms).
#if defined(__AVX__) && (defined(__clang__) || defined(__GNUC__))
#define FW_STREAM_BYTES 32
typedef long long fw_v4di __attribute__((vector_size(32), aligned(32)));
typedef long long fw_v4di_u __attribute__((vector_size(32), aligned(1)));
inline void stream_vector(char* dst, const char* src) {
#if defined(__clang__)
  __builtin_nontemporal_store(*reinterpret_cast<const fw_v4di_u*>(src), reinterpret_cast<fw_v4di*>(dst));
#else
  __builtin_ia32_movntdq256(reinterpret_cast<fw_v4di*>(dst), *reinterpret_cast<const fw_v4di_u*>(src));
#endif
}
#elif defined(__SSE2__)
#define FW_STREAM_BYTES 16
inline void stream_vector(char* dst, const char* src) {
  _mm_stream_si128(reinterpret_cast<__m128i*>(dst), _mm_loadu_si128(reinterpret_cast<const __m128i*>(src)));
}
#endif
template <class T> inline void stream_store(T* __restrict d, const T* __restrict s, int64_t m) {
  char* dst = reinterpret_cast<char*>(d);
  const char* src = reinterpret_cast<const char*>(s);
  size_t n = size_t(m) * sizeof(T);
#ifdef FW_STREAM_BYTES
  constexpr size_t V = FW_STREAM_BYTES;
  size_t head = (V - reinterpret_cast<uintptr_t>(dst) % V) % V;
  head = head < n ? head : n;
  std::memcpy(dst, src, head);
  dst += head, src += head, n -= head;
  for (; n >= V; n -= V, dst += V, src += V) stream_vector(dst, src);
#endif
  std::memcpy(dst, src, n);
}
inline void stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}
}  // namespace fw::kernel
