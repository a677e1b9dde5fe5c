// Shared internals of the linear-algebra files (core/ops/decomp.cpp, core/ops/decomp_more.cpp):
// Eigen map types, argument checks, batch shapes and the per-matrix parallel loop. See Note
// [Linear algebra through Eigen] in decomp.cpp.
#pragma once
#include <Eigen/Dense>

#include <algorithm>
#include <complex>
#include <initializer_list>
#include <vector>

#include "core/parallel.h"
#include "fw/error.h"
#include "fw/ops.h"
#include "fw/tensor.h"

namespace fw::linalg_detail {

template <class T>
using RowMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
template <class T>
using ColMat = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic>;
template <class T>
using CMap = Eigen::Map<const RowMat<T>>;
template <class T>
using MMap = Eigen::Map<RowMat<T>>;

using Shape = std::vector<int64_t>;

// complex_ok: the op also takes complex64/complex128 (solve, eigh).
inline void check_matrix(const char* op, const Tensor& A, const char* name = "A", bool complex_ok = false) {
  FW_CHECK(A.defined(), "[", op, "] ", name, " is an undefined tensor");
  FW_CHECK(A.dim() >= 2, "[", op, "] The input tensor ", name, " must have at least 2 dimensions, but it has shape ",
           A.sizes());
  FW_CHECK(A.dtype() == kFloat || A.dtype() == kDouble || (complex_ok && A.is_complex()), "[", op, "] Expected a ",
           complex_ok ? "float32, float64, complex64 or complex128" : "float32 or float64", " tensor as ", name,
           ", but got ", dtype_name(A.dtype()));
  FW_CHECK(A.device().is_cpu(), "[", op, "] only CPU tensors are supported");
}

inline void check_square(const char* op, const Tensor& A, const char* name = "A", bool complex_ok = false) {
  check_matrix(op, A, name, complex_ok);
  FW_CHECK(A.size(-1) == A.size(-2), "[", op, "] ", name, " must be batches of square matrices, but they are ",
           A.size(-2), " by ", A.size(-1), " matrices");
}

inline Shape batch_shape(const Tensor& A) { return Shape(A.sizes().begin(), A.sizes().end() - 2); }
inline int64_t batch_count(const Tensor& A) {
  int64_t b = 1;
  for (int64_t i = 0; i + 2 < A.dim(); i++) b *= A.size(i);
  return b;
}
inline Shape with_tail(Shape s, std::initializer_list<int64_t> tail) {
  s.insert(s.end(), tail.begin(), tail.end());
  return s;
}

// Runs f(i) for every matrix i of a batch, in parallel when the work is big enough.
template <class F>
void for_each_matrix(int64_t batch, int64_t n, const F& f) {
  int64_t work = std::max<int64_t>(1, n * n * n);
  int64_t grain = std::max<int64_t>(1, (int64_t(1) << 16) / work);
  detail::parallel_for(0, batch, grain, [&](int64_t b0, int64_t b1) {
    for (int64_t i = b0; i < b1; i++) f(i);
  });
}

template <class F>
void visit_real(ScalarType t, const F& f) {
  if (t == kFloat) f.template operator()<float>();
  else f.template operator()<double>();
}
// The real dtypes and std::complex of them (Eigen's complex scalars).
template <class F>
void visit_real_or_complex(ScalarType t, const F& f) {
  if (t == kComplexFloat) f.template operator()<std::complex<float>>();
  else if (t == kComplexDouble) f.template operator()<std::complex<double>>();
  else visit_real(t, f);
}

// Raises for the first nonzero info code; msg(info) words it (PyTorch's batch prefix when batched).
template <class M>
void raise_info(const char* op, const std::vector<int64_t>& info, bool batched, const M& msg) {
  for (size_t i = 0; i < info.size(); i++) {
    if (info[i] == 0) continue;
    if (batched) detail::throw_error("[", op, "] (Batch element ", i, "): ", msg(info[i]));
    detail::throw_error("[", op, "] ", msg(info[i]));
  }
}

inline Tensor mT(const Tensor& t) { return t.transpose(-2, -1); }

// LAPACK-style info codes (0: the matrix went through) as the *_ex functions return them: int32,
// shaped like the batch; and back.
inline Tensor info_tensor(const std::vector<int64_t>& info, const Shape& batch) {
  Tensor t = fw::zeros(batch, TensorOptions(kInt));
  int32_t* p = t.data_ptr<int32_t>();
  for (size_t i = 0; i < info.size(); i++) p[i] = int32_t(info[i]);
  return t;
}
inline std::vector<int64_t> info_codes(const Tensor& codes) {
  Tensor c = codes.reshape({-1}).to(kLong).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

// The part of t (shape bs + trailing dims) that belongs to a batch of shape `own`, which
// broadcast to bs: dims `own` lacks are dropped (index 0), dims where it has 1 are narrowed to 1.
inline Tensor batch_of(const Tensor& t, const Shape& own, const Shape& bs) {
  Tensor r = t;
  size_t extra = bs.size() - own.size();
  for (size_t i = 0; i < extra; i++) r = r.select(0, 0);
  for (size_t i = 0; i < own.size(); i++)
    if (own[i] == 1 && bs[extra + i] != 1) r = r.narrow(int64_t(i), 0, 1);
  return r.contiguous();
}

// Broadcast of two batch shapes, as PyTorch.
inline Shape broadcast_batch(const char* op, const Shape& a, const Shape& b, const char* na = "A",
                             const char* nb = "B") {
  size_t nd = std::max(a.size(), b.size());
  Shape r(nd, 1);
  for (size_t i = 0; i < nd; i++) {
    int64_t x = i < nd - a.size() ? 1 : a[i - (nd - a.size())];
    int64_t y = i < nd - b.size() ? 1 : b[i - (nd - b.size())];
    FW_CHECK(x == y || x == 1 || y == 1, "[", op, "] The batch dimensions of ", na, " ", IntArrayRef(a), " and ", nb,
             " ", IntArrayRef(b), " cannot be broadcast together");
    r[i] = x == 1 ? y : x;
  }
  return r;
}

inline int64_t wrap_dim(const char* op, int64_t d, int64_t ndim) {
  FW_CHECK_INDEX(d >= -ndim && d < std::max<int64_t>(ndim, 1), "[", op, "] Dimension out of range (expected to be in range of [",
           -ndim, ", ", ndim - 1, "], but got ", d, ")");
  return d < 0 ? d + ndim : d;
}

}  // namespace fw::linalg_detail
