// libtorch's special functions beyond those in fw/ops_extra.h (core/ops/special_fns.cpp):
// modified Bessel functions I0/I1 (and their exponentially scaled forms), the normal log-CDF and
// quantile, erfcx, the Hurwitz zeta function, the regularized incomplete gamma functions, the
// Bessel functions and orthogonal polynomials of torch.special (PyTorch 1.13), and binomial
// sampling.
//
// Dtypes follow PyTorch 1.13: integer and bool inputs give the default float dtype; complex
// inputs raise (as do float16/bfloat16 where PyTorch's CPU kernels lack them). float32 results
// are computed in float where PyTorch's kernels are, so they agree with PyTorch's to a few ulp.
// Gradients are those of PyTorch's derivatives.yaml; the Bessel functions of the second group
// (bessel_j0 ... spherical_bessel_j0) are not differentiable in PyTorch 1.13 and return tensors
// that do not require grad.
#pragma once
#include "fw/ops.h"
#include "fw/tensor.h"

namespace fw {

// The modified Bessel function of the first kind of order 0 (= special::i0).
Tensor i0(const Tensor& t);
// The regularized lower / upper incomplete gamma functions P(a, x) and Q(a, x) (= special::
// gammainc / gammaincc). Differentiable in x only: a gradient for `a` raises "not implemented".
Tensor igamma(const Tensor& a, const Tensor& x);
Tensor igammac(const Tensor& a, const Tensor& x);
// Samples of Binomial(count, prob) drawn from fw's generator (fw::manual_seed makes them
// reproducible). count and prob are floating tensors of one dtype that broadcast together;
// counts must be non-negative integers, probabilities in [0, 1]. Not differentiable.
Tensor binomial(const Tensor& count, const Tensor& prob);

namespace special {
// I0(x), exp(-|x|) I0(x), I1(x), exp(-|x|) I1(x) (Cephes Chebyshev expansions).
Tensor i0(const Tensor& t);
Tensor i0e(const Tensor& t);
Tensor i1(const Tensor& t);
Tensor i1e(const Tensor& t);
// log of the standard normal CDF, accurate in both tails.
Tensor log_ndtr(const Tensor& t);
// The standard normal quantile (inverse of ndtr): -inf at 0, +inf at 1, NaN outside [0, 1].
Tensor ndtri(const Tensor& t);
// The scaled complementary error function exp(x^2) erfc(x).
Tensor erfcx(const Tensor& t);
// The Hurwitz zeta function sum_k (k + q)^-x (x > 1). Differentiable in q only (d/dq =
// -x zeta(x + 1, q)); a gradient for x raises "not implemented", as in PyTorch.
Tensor zeta(const Tensor& x, const Tensor& q);
Tensor zeta(const Scalar& x, const Tensor& q);
Tensor zeta(const Tensor& x, const Scalar& q);
// = fw::igamma / fw::igammac.
Tensor gammainc(const Tensor& a, const Tensor& x);
Tensor gammaincc(const Tensor& a, const Tensor& x);
// x * log(y) with a Python-number operand (0 where x == 0 unless y is NaN).
Tensor xlogy(const Scalar& x, const Tensor& y);
Tensor xlogy(const Tensor& x, const Scalar& y);

// Bessel functions of the first and second kind of orders 0 and 1, the modified Bessel
// functions I0, I1, K0, K1, exp(x) K0(x), exp(x) K1(x), and sin(x) / x. Not differentiable.
Tensor bessel_j0(const Tensor& t);
Tensor bessel_j1(const Tensor& t);
Tensor bessel_y0(const Tensor& t);
Tensor bessel_y1(const Tensor& t);
Tensor modified_bessel_i0(const Tensor& t);
Tensor modified_bessel_i1(const Tensor& t);
Tensor modified_bessel_k0(const Tensor& t);
Tensor modified_bessel_k1(const Tensor& t);
Tensor scaled_modified_bessel_k0(const Tensor& t);
Tensor scaled_modified_bessel_k1(const Tensor& t);
Tensor spherical_bessel_j0(const Tensor& t);
// The Airy function Ai(x) (0 above x = 103.892, NaN at +-inf). Not differentiable.
Tensor airy_ai(const Tensor& t);

// The orthogonal polynomials of degree n at x (x and n broadcast; n truncated to an integer,
// negative degrees give 0): Chebyshev of the first to fourth kinds T, U, V, W and their shifted
// forms on [0, 1] (T*_n(x) = T_n(2x - 1)), Hermite (physicists' H and probabilists' He),
// Laguerre L and Legendre P, evaluated as PyTorch 1.13 does (Note [Orthogonal polynomials] in
// core/ops/special_fns.cpp). Not differentiable, as in PyTorch 1.13.
#define FW_SPECIAL_POLYNOMIAL_DECL(name)              \
  Tensor name(const Tensor& x, const Tensor& n);      \
  Tensor name(const Scalar& x, const Tensor& n);      \
  Tensor name(const Tensor& x, const Scalar& n);
FW_SPECIAL_POLYNOMIAL_DECL(chebyshev_polynomial_t)
FW_SPECIAL_POLYNOMIAL_DECL(chebyshev_polynomial_u)
FW_SPECIAL_POLYNOMIAL_DECL(chebyshev_polynomial_v)
FW_SPECIAL_POLYNOMIAL_DECL(chebyshev_polynomial_w)
FW_SPECIAL_POLYNOMIAL_DECL(shifted_chebyshev_polynomial_t)
FW_SPECIAL_POLYNOMIAL_DECL(shifted_chebyshev_polynomial_u)
FW_SPECIAL_POLYNOMIAL_DECL(shifted_chebyshev_polynomial_v)
FW_SPECIAL_POLYNOMIAL_DECL(shifted_chebyshev_polynomial_w)
FW_SPECIAL_POLYNOMIAL_DECL(hermite_polynomial_h)
FW_SPECIAL_POLYNOMIAL_DECL(hermite_polynomial_he)
FW_SPECIAL_POLYNOMIAL_DECL(laguerre_polynomial_l)
FW_SPECIAL_POLYNOMIAL_DECL(legendre_polynomial_p)
#undef FW_SPECIAL_POLYNOMIAL_DECL
}  // namespace special

}  // namespace fw
