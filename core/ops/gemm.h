// Dense matrix products shared by the linear-algebra and convolution kernels.
#pragma once
#include <cstdint>

namespace fw::detail {

// A strided matrix operand: element (i, j) is at data[i * rs + j * cs].
template <class T>
struct MatArg {
  const T* data;
  int64_t rs, cs;
};

// C = alpha * A(MxK) B(KxN) + beta * C for float/double (Note [GEMM through Eigen] in gemm.cpp);
// C is row-major with leading dimension ldc, A and B take any strides. beta == 0 ignores C's old
// contents (NaNs included); alpha == 0 or K == 0 reads neither A nor B. Multithreaded on fw's
// pool unless called inside a parallel region.
template <class T>
void gemm(int64_t m, int64_t n, int64_t k, T alpha, MatArg<T> a, MatArg<T> b, T beta, T* c, int64_t ldc);

extern template void gemm<float>(int64_t, int64_t, int64_t, float, MatArg<float>, MatArg<float>, float, float*,
                                 int64_t);
extern template void gemm<double>(int64_t, int64_t, int64_t, double, MatArg<double>, MatArg<double>, double,
                                  double*, int64_t);

}  // namespace fw::detail
