// Strided N-operand loops with broadcasting, dim coalescing and OpenMP splitting.
// Operand 0 is the output; the others broadcast to its shape (stride 0 on broadcast dims).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <type_traits>

#include "core/op.h"
#include "core/parallel.h"

namespace fw::detail {

template <int N>
struct StridedLoop {
  DimVec sizes;                   // outer to inner, size-1 dims dropped, contiguous runs merged
  std::array<DimVec, N> strides;  // in bytes
  std::array<char*, N> base{};
  int64_t numel = 1;
};

// by_out_strides: visit dims in the output's memory order (outermost first) rather than its
// logical order, so a permuted output (and inputs laid out like it) is walked in contiguous runs.
// Only for element-wise maps, where the visiting order cannot change the result.
template <int N>
StridedLoop<N> make_loop(const std::array<const Tensor*, N>& ops, bool by_out_strides = false) {
  StridedLoop<N> L;
  const Tensor& out = *ops[0];
  int64_t nd = out.dim();
  for (int k = 0; k < N; k++) L.base[k] = static_cast<char*>(ops[k]->data_ptr());
  for (int64_t d = 0; d < nd; d++) {
    int64_t sz = out.sizes()[d];
    L.numel *= sz;
    if (sz == 1) continue;
    L.sizes.push_back(sz);
    for (int k = 0; k < N; k++) {
      const Tensor& t = *ops[k];
      int64_t j = d - (nd - t.dim());
      int64_t st = (j < 0 || t.sizes()[j] == 1) ? 0 : t.strides()[j] * t.element_size();
      L.strides[k].push_back(st);
    }
  }
  if (by_out_strides) {
    const int64_t nd2 = int64_t(L.sizes.size());
    bool sorted = true;
    for (int64_t i = 0; i + 1 < nd2 && sorted; i++) sorted = L.strides[0][i] >= L.strides[0][i + 1];
    if (!sorted) {
      SmallVec<int64_t, 6> idx;
      for (int64_t i = 0; i < nd2; i++) idx.push_back(i);
      std::stable_sort(idx.begin(), idx.end(), [&](int64_t a, int64_t b) { return L.strides[0][a] > L.strides[0][b]; });
      StridedLoop<N> R;
      R.base = L.base;
      R.numel = L.numel;
      for (int64_t i : idx) {
        R.sizes.push_back(L.sizes[i]);
        for (int k = 0; k < N; k++) R.strides[k].push_back(L.strides[k][i]);
      }
      L = std::move(R);
    }
  }
  // Merge dim i into its inner neighbour when every operand walks them as one run.
  for (int64_t i = int64_t(L.sizes.size()) - 2; i >= 0; i--) {
    bool ok = true;
    for (int k = 0; k < N && ok; k++) ok = L.strides[k][i] == L.strides[k][i + 1] * L.sizes[i + 1];
    if (!ok) continue;
    L.sizes[i + 1] *= L.sizes[i];
    L.sizes.erase(i);
    for (int k = 0; k < N; k++) L.strides[k].erase(i);
  }
  return L;
}

// Calls body(char* ptrs[N], const int64_t inner_strides[N], int64_t n) over inner runs.
template <int N, class Body>
void run_loop(const StridedLoop<N>& L, const Body& body, int64_t grain = kGrainSize) {
  if (L.numel == 0) return;
  int64_t nd = int64_t(L.sizes.size());
  if (nd == 0) {
    std::array<char*, N> p = L.base;
    std::array<int64_t, N> s{};
    body(p.data(), s.data(), 1);
    return;
  }
  std::array<int64_t, N> inner_s;
  for (int k = 0; k < N; k++) inner_s[k] = L.strides[k][nd - 1];
  int64_t inner = L.sizes[nd - 1];
  parallel_for(0, L.numel, grain, [&](int64_t begin, int64_t end) {
    DimVec idx(nd, 0);
    int64_t rem = begin;
    for (int64_t d = nd - 1; d >= 0; d--) {
      idx[d] = rem % L.sizes[d];
      rem /= L.sizes[d];
    }
    while (begin < end) {
      std::array<char*, N> p;
      for (int k = 0; k < N; k++) {
        char* q = L.base[k];
        for (int64_t d = 0; d < nd; d++) q += idx[d] * L.strides[k][d];
        p[k] = q;
      }
      int64_t n = std::min(inner - idx[nd - 1], end - begin);
      body(p.data(), inner_s.data(), n);
      begin += n;
      idx[nd - 1] += n;
      for (int64_t d = nd - 1; d > 0 && idx[d] == L.sizes[d]; d--) {
        idx[d] = 0;
        idx[d - 1]++;
      }
    }
  });
}

// out[i] = v for every element (never reads out: its memory may be uninitialised).
template <class T>
void fill_loop(const Tensor& out, T v) {
  auto L = make_loop<1>({&out}, true);
  run_loop<1>(L, [&](char** p, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(T)) {
      T* o = reinterpret_cast<T*>(p[0]);
      for (int64_t i = 0; i < n; i++) o[i] = v;
    } else {
      for (int64_t i = 0; i < n; i++) *reinterpret_cast<T*>(p[0] + i * s[0]) = v;
    }
  });
}

// out[i] = f(a[i]) with R = output type, T = input type.
template <class R, class T, class F>
void unary_loop(const Tensor& out, const Tensor& a, const F& f) {
  auto L = make_loop<2>({&out, &a}, true);
  run_loop<2>(L, [&](char** p, const int64_t* s, int64_t n) {
    if (s[0] == sizeof(R) && s[1] == sizeof(T)) {
      R* o = reinterpret_cast<R*>(p[0]);
      const T* x = reinterpret_cast<const T*>(p[1]);
      for (int64_t i = 0; i < n; i++) o[i] = f(x[i]);
    } else {
      for (int64_t i = 0; i < n; i++)
        *reinterpret_cast<R*>(p[0] + i * s[0]) = f(*reinterpret_cast<const T*>(p[1] + i * s[1]));
    }
  });
}

// out[i] = f(a[i], b[i]); a or b may be broadcast (stride 0).
template <class R, class T, class F>
void binary_loop(const Tensor& out, const Tensor& a, const Tensor& b, const F& f) {
  auto L = make_loop<3>({&out, &a, &b}, true);
  run_loop<3>(L, [&](char** p, const int64_t* s, int64_t n) {
    R* o = reinterpret_cast<R*>(p[0]);
    const T* x = reinterpret_cast<const T*>(p[1]);
    const T* y = reinterpret_cast<const T*>(p[2]);
    if (s[0] == sizeof(R) && s[1] == sizeof(T) && s[2] == sizeof(T)) {
      for (int64_t i = 0; i < n; i++) o[i] = f(x[i], y[i]);
    } else if (s[0] == sizeof(R) && s[1] == sizeof(T) && s[2] == 0) {
      const T yv = *y;
      for (int64_t i = 0; i < n; i++) o[i] = f(x[i], yv);
    } else if (s[0] == sizeof(R) && s[1] == 0 && s[2] == sizeof(T)) {
      const T xv = *x;
      for (int64_t i = 0; i < n; i++) o[i] = f(xv, y[i]);
    } else {
      for (int64_t i = 0; i < n; i++)
        *reinterpret_cast<R*>(p[0] + i * s[0]) = f(*reinterpret_cast<const T*>(p[1] + i * s[1]),
                                                   *reinterpret_cast<const T*>(p[2] + i * s[2]));
    }
  });
}

// out[i] = f(a[i], b[i], c[i]) with per-operand input types.
template <class R, class A, class B, class C, class F>
void ternary_loop(const Tensor& out, const Tensor& a, const Tensor& b, const Tensor& c, const F& f) {
  auto L = make_loop<4>({&out, &a, &b, &c}, true);
  run_loop<4>(L, [&](char** p, const int64_t* s, int64_t n) {
    R* o = reinterpret_cast<R*>(p[0]);
    // A bool operand is read as bytes: GCC 12 vectorises a select on a uint8_t != 0 but not on a
    // bool load (where's blend ran scalar, branching on a random mask: ~2.4 ns per element).
    using AL = std::conditional_t<std::is_same_v<A, bool>, uint8_t, A>;
    const AL* x = reinterpret_cast<const AL*>(p[1]);
    const B* y = reinterpret_cast<const B*>(p[2]);
    const C* z = reinterpret_cast<const C*>(p[3]);
    // Contiguous runs (b or c may be one broadcast value) as plain loops the compiler vectorises;
    // anything else strided.
    if (s[0] == sizeof(R) && s[1] == sizeof(A) && s[2] == sizeof(B) && s[3] == sizeof(C)) {
      for (int64_t i = 0; i < n; i++) o[i] = f(A(x[i]), y[i], z[i]);
    } else if (s[0] == sizeof(R) && s[1] == sizeof(A) && s[2] == sizeof(B) && s[3] == 0) {
      const C zv = *z;
      for (int64_t i = 0; i < n; i++) o[i] = f(A(x[i]), y[i], zv);
    } else if (s[0] == sizeof(R) && s[1] == sizeof(A) && s[2] == 0 && s[3] == sizeof(C)) {
      const B yv = *y;
      for (int64_t i = 0; i < n; i++) o[i] = f(A(x[i]), yv, z[i]);
    } else {
      for (int64_t i = 0; i < n; i++)
        *reinterpret_cast<R*>(p[0] + i * s[0]) =
            f(*reinterpret_cast<const A*>(p[1] + i * s[1]), *reinterpret_cast<const B*>(p[2] + i * s[2]),
              *reinterpret_cast<const C*>(p[3] + i * s[3]));
    }
  });
}

}  // namespace fw::detail
