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

// attrs.flags bits of mm, addmm, bmm and baddbmm (Note [Product epilogue flags] in linalg.cpp):
// relu applied in the product's epilogue; the product multiplied by (gate > 0), the gate being an
// extra last input of the op's shape (relu's backward).
constexpr uint32_t kProductRelu = 1u << 0;
constexpr uint32_t kProductGate = 1u << 1;

// What gemm() does to each element of C once the product is in it, in this order (Note [GEMM
// epilogues] in gemm_f32.cpp): C(i, j) += bias_scale * bias[i * rs + j * cs] when bias is set (a
// zero stride broadcasts); relu (x > 0 or NaN ? x : +0, as fw's relu) when relu is set; C(i, j) *=
// (gate[i * grs + j * gcs] > 0 ? 1 : 0) when gate is set (x * 0 keeps NaN and the sign, as
// multiplying by a bool mask does).
template <class T>
struct GemmEpilogue {
  const T* bias = nullptr;
  int64_t rs = 0, cs = 0;
  T bias_scale = T(1);
  bool relu = false;
  const T* gate = nullptr;
  int64_t grs = 0, gcs = 0;
  bool empty() const { return !bias && !relu && !gate; }
  // Applies the epilogue to rows [i0, i0 + rows) x columns [j0, j0 + cols) of C (ldc), in place.
  void apply(T* c, int64_t ldc, int64_t i0, int64_t rows, int64_t j0, int64_t cols) const {
    for (int64_t i = i0; i < i0 + rows; i++) {
      T* ci = c + i * ldc;
      if (bias) {
        const T* bi = bias + i * rs;
        for (int64_t j = j0; j < j0 + cols; j++) ci[j] += bias_scale * bi[j * cs];
      }
      if (relu)
        for (int64_t j = j0; j < j0 + cols; j++) ci[j] = ci[j] > T(0) || ci[j] != ci[j] ? ci[j] : T(0);
      if (gate) {
        const T* gi = gate + i * grs;
        for (int64_t j = j0; j < j0 + cols; j++) ci[j] *= gi[j * gcs] > T(0) ? T(1) : T(0);
      }
    }
  }
};

// C = alpha * A(MxK) B(KxN) + beta * C for float/double (Note [GEMM through Eigen] in gemm.cpp),
// then the epilogue; C is row-major with leading dimension ldc, A and B take any strides. beta == 0
// ignores C's old contents (NaNs included); alpha == 0 or K == 0 reads neither A nor B.
// Multithreaded on fw's pool unless called inside a parallel region.
template <class T>
void gemm(int64_t m, int64_t n, int64_t k, T alpha, MatArg<T> a, MatArg<T> b, T beta, T* c, int64_t ldc,
          const GemmEpilogue<T>& ep = {});

extern template void gemm<float>(int64_t, int64_t, int64_t, float, MatArg<float>, MatArg<float>, float, float*,
                                 int64_t, const GemmEpilogue<float>&);
extern template void gemm<double>(int64_t, int64_t, int64_t, double, MatArg<double>, MatArg<double>, double,
                                  double*, int64_t, const GemmEpilogue<double>&);

}  // namespace fw::detail
