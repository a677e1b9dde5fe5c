// Counter-based Philox4x32-10 (Salmon et al., SC'11): value i of a stream is a pure function of
// (seed, counter), so CPU threads (and later CUDA) produce the same numbers in any split.
#pragma once
#include <cmath>
#include <cstdint>

namespace fw::detail {

inline void philox_round(uint32_t ctr[4], const uint32_t key[2]) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  uint64_t p0 = uint64_t(M0) * ctr[0], p1 = uint64_t(M1) * ctr[2];
  uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0), hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
  uint32_t n0 = hi1 ^ ctr[1] ^ key[0], n2 = hi0 ^ ctr[3] ^ key[1];
  ctr[0] = n0; ctr[1] = lo1; ctr[2] = n2; ctr[3] = lo0;
}

// Four 32-bit random words for (seed, counter).
inline void philox4x32(uint64_t seed, uint64_t counter, uint32_t out[4]) {
  uint32_t ctr[4] = {uint32_t(counter), uint32_t(counter >> 32), 0, 0};
  uint32_t key[2] = {uint32_t(seed), uint32_t(seed >> 32)};
  for (int r = 0; r < 10; r++) {
    philox_round(ctr, key);
    key[0] += 0x9E3779B9u;
    key[1] += 0xBB67AE85u;
  }
  for (int i = 0; i < 4; i++) out[i] = ctr[i];
}

inline uint64_t philox_u64(uint64_t seed, uint64_t i) {
  uint32_t r[4];
  philox4x32(seed, i, r);
  return (uint64_t(r[0]) << 32) | r[1];
}
// Uniform in [0, 1) with 53 random bits.
inline double philox_uniform(uint64_t seed, uint64_t i) {
  return double(philox_u64(seed, i) >> 11) * (1.0 / 9007199254740992.0);
}
// Standard normal by Box-Muller on two words of the same counter.
inline double philox_normal(uint64_t seed, uint64_t i) {
  uint32_t r[4];
  philox4x32(seed, i, r);
  double u1 = (double((uint64_t(r[0]) << 21) ^ r[1]) + 1.0) * (1.0 / 9007199254740993.0);
  double u2 = double((uint64_t(r[2]) << 21) ^ r[3]) * (1.0 / 9007199254740992.0);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

// Reserves n counters of the global generator; returns its seed and the first counter.
void philox_reserve(int64_t n, uint64_t* seed, uint64_t* offset);

}  // namespace fw::detail
