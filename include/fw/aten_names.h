// ATen's flat spellings of the namespaced functions, which libtorch also exposes in namespace
// torch: torch::linalg_det(A) is fw::linalg::det(A), torch::fft_rfft(x) is fw::fft::rfft(x),
// torch::special_erf(x) is fw::special::erf(x). Each name forwards its arguments (defaults and
// overloads are the namespaced function's); a braced dim list such as {1} or {-2, -1} may be the
// second or third argument, or both.
#pragma once
#include <initializer_list>
#include <utility>

#include "fw/fft.h"
#include "fw/linalg.h"
#include "fw/linalg_more.h"
#include "fw/ops_extra.h"
#include "fw/special_fns.h"

#define FW_ATEN_NAME(flat, qualified)                                                                      \
  template <class... A>                                                                                    \
  auto flat(const ::fw::Tensor& t, A&&... a)->decltype(qualified(t, std::forward<A>(a)...)) {              \
    return qualified(t, std::forward<A>(a)...);                                                            \
  }                                                                                                        \
  template <class... A>                                                                                    \
  auto flat(const ::fw::Tensor& t, std::initializer_list<int64_t> l, A&&... a)                             \
      ->decltype(qualified(t, ::fw::IntArrayRef(l), std::forward<A>(a)...)) {                              \
    return qualified(t, ::fw::IntArrayRef(l), std::forward<A>(a)...);                                      \
  }                                                                                                        \
  template <class B, class... A>                                                                           \
  auto flat(const ::fw::Tensor& t, B&& b, std::initializer_list<int64_t> l, A&&... a)                      \
      ->decltype(qualified(t, std::forward<B>(b), ::fw::IntArrayRef(l), std::forward<A>(a)...)) {          \
    return qualified(t, std::forward<B>(b), ::fw::IntArrayRef(l), std::forward<A>(a)...);                  \
  }                                                                                                        \
  template <class... A>                                                                                    \
  auto flat(const ::fw::Tensor& t, std::initializer_list<int64_t> l1, std::initializer_list<int64_t> l2,   \
            A&&... a)                                                                                      \
      ->decltype(qualified(t, ::fw::IntArrayRef(l1), ::fw::IntArrayRef(l2), std::forward<A>(a)...)) {      \
    return qualified(t, ::fw::IntArrayRef(l1), ::fw::IntArrayRef(l2), std::forward<A>(a)...);              \
  }

namespace fw {

// torch::linalg_*
FW_ATEN_NAME(linalg_cholesky, ::fw::linalg::cholesky)
FW_ATEN_NAME(linalg_cholesky_ex, ::fw::linalg::cholesky_ex)
FW_ATEN_NAME(linalg_householder_product, ::fw::linalg::householder_product)
FW_ATEN_NAME(linalg_inv_ex, ::fw::linalg::inv_ex)
FW_ATEN_NAME(linalg_ldl_factor, ::fw::linalg::ldl_factor)
FW_ATEN_NAME(linalg_ldl_factor_ex, ::fw::linalg::ldl_factor_ex)
FW_ATEN_NAME(linalg_ldl_solve, ::fw::linalg::ldl_solve)
FW_ATEN_NAME(linalg_lu_factor_ex, ::fw::linalg::lu_factor_ex)
FW_ATEN_NAME(linalg_solve_ex, ::fw::linalg::solve_ex)
FW_ATEN_NAME(linalg_cond, ::fw::linalg::cond)
FW_ATEN_NAME(linalg_cross, ::fw::linalg::cross)
FW_ATEN_NAME(linalg_det, ::fw::linalg::det)
FW_ATEN_NAME(linalg_eig, ::fw::linalg::eig)
FW_ATEN_NAME(linalg_eigh, ::fw::linalg::eigh)
FW_ATEN_NAME(linalg_eigvals, ::fw::linalg::eigvals)
FW_ATEN_NAME(linalg_eigvalsh, ::fw::linalg::eigvalsh)
FW_ATEN_NAME(linalg_inv, ::fw::linalg::inv)
FW_ATEN_NAME(linalg_lstsq, ::fw::linalg::lstsq)
FW_ATEN_NAME(linalg_lu, ::fw::linalg::lu)
FW_ATEN_NAME(linalg_lu_factor, ::fw::linalg::lu_factor)
FW_ATEN_NAME(linalg_lu_solve, ::fw::linalg::lu_solve)
FW_ATEN_NAME(linalg_matmul, ::fw::linalg::matmul)
FW_ATEN_NAME(linalg_matrix_exp, ::fw::linalg::matrix_exp)
FW_ATEN_NAME(linalg_matrix_norm, ::fw::linalg::matrix_norm)
FW_ATEN_NAME(linalg_matrix_power, ::fw::linalg::matrix_power)
FW_ATEN_NAME(linalg_matrix_rank, ::fw::linalg::matrix_rank)
FW_ATEN_NAME(linalg_norm, ::fw::linalg::norm)
FW_ATEN_NAME(linalg_pinv, ::fw::linalg::pinv)
FW_ATEN_NAME(linalg_qr, ::fw::linalg::qr)
FW_ATEN_NAME(linalg_slogdet, ::fw::linalg::slogdet)
FW_ATEN_NAME(linalg_solve, ::fw::linalg::solve)
FW_ATEN_NAME(linalg_solve_triangular, ::fw::linalg::solve_triangular)
FW_ATEN_NAME(linalg_diagonal, ::fw::linalg::diagonal)
FW_ATEN_NAME(linalg_svd, ::fw::linalg::svd)
FW_ATEN_NAME(linalg_svdvals, ::fw::linalg::svdvals)
FW_ATEN_NAME(linalg_tensorinv, ::fw::linalg::tensorinv)
FW_ATEN_NAME(linalg_tensorsolve, ::fw::linalg::tensorsolve)
FW_ATEN_NAME(linalg_vander, ::fw::linalg::vander)
FW_ATEN_NAME(linalg_vecdot, ::fw::linalg::vecdot)
FW_ATEN_NAME(linalg_vector_norm, ::fw::linalg::vector_norm)

// torch::fft_*
FW_ATEN_NAME(fft_fft, ::fw::fft::fft)
FW_ATEN_NAME(fft_ifft, ::fw::fft::ifft)
FW_ATEN_NAME(fft_rfft, ::fw::fft::rfft)
FW_ATEN_NAME(fft_irfft, ::fw::fft::irfft)
FW_ATEN_NAME(fft_hfft, ::fw::fft::hfft)
FW_ATEN_NAME(fft_ihfft, ::fw::fft::ihfft)
FW_ATEN_NAME(fft_fft2, ::fw::fft::fft2)
FW_ATEN_NAME(fft_ifft2, ::fw::fft::ifft2)
FW_ATEN_NAME(fft_rfft2, ::fw::fft::rfft2)
FW_ATEN_NAME(fft_irfft2, ::fw::fft::irfft2)
FW_ATEN_NAME(fft_hfft2, ::fw::fft::hfft2)
FW_ATEN_NAME(fft_ihfft2, ::fw::fft::ihfft2)
FW_ATEN_NAME(fft_fftn, ::fw::fft::fftn)
FW_ATEN_NAME(fft_ifftn, ::fw::fft::ifftn)
FW_ATEN_NAME(fft_rfftn, ::fw::fft::rfftn)
FW_ATEN_NAME(fft_irfftn, ::fw::fft::irfftn)
FW_ATEN_NAME(fft_hfftn, ::fw::fft::hfftn)
FW_ATEN_NAME(fft_ihfftn, ::fw::fft::ihfftn)
FW_ATEN_NAME(fft_fftshift, ::fw::fft::fftshift)
FW_ATEN_NAME(fft_ifftshift, ::fw::fft::ifftshift)
// fftfreq takes a length, not a tensor.
template <class... A>
auto fft_fftfreq(int64_t n, A&&... a) -> decltype(::fw::fft::fftfreq(n, std::forward<A>(a)...)) {
  return ::fw::fft::fftfreq(n, std::forward<A>(a)...);
}
template <class... A>
auto fft_rfftfreq(int64_t n, A&&... a) -> decltype(::fw::fft::rfftfreq(n, std::forward<A>(a)...)) {
  return ::fw::fft::rfftfreq(n, std::forward<A>(a)...);
}

// torch::special_*
FW_ATEN_NAME(special_digamma, ::fw::special::digamma)
FW_ATEN_NAME(special_entr, ::fw::special::entr)
FW_ATEN_NAME(special_erf, ::fw::special::erf)
FW_ATEN_NAME(special_erfc, ::fw::special::erfc)
FW_ATEN_NAME(special_erfcx, ::fw::special::erfcx)
FW_ATEN_NAME(special_erfinv, ::fw::special::erfinv)
FW_ATEN_NAME(special_exp2, ::fw::special::exp2)
FW_ATEN_NAME(special_expit, ::fw::special::expit)
FW_ATEN_NAME(special_expm1, ::fw::special::expm1)
FW_ATEN_NAME(special_gammainc, ::fw::special::gammainc)
FW_ATEN_NAME(special_gammaincc, ::fw::special::gammaincc)
FW_ATEN_NAME(special_gammaln, ::fw::special::gammaln)
FW_ATEN_NAME(special_i0, ::fw::special::i0)
FW_ATEN_NAME(special_i0e, ::fw::special::i0e)
FW_ATEN_NAME(special_i1, ::fw::special::i1)
FW_ATEN_NAME(special_i1e, ::fw::special::i1e)
FW_ATEN_NAME(special_log1p, ::fw::special::log1p)
FW_ATEN_NAME(special_log_ndtr, ::fw::special::log_ndtr)
FW_ATEN_NAME(special_log_softmax, ::fw::special::log_softmax)
FW_ATEN_NAME(special_logit, ::fw::special::logit)
FW_ATEN_NAME(special_logsumexp, ::fw::special::logsumexp)
FW_ATEN_NAME(special_ndtr, ::fw::special::ndtr)
FW_ATEN_NAME(special_ndtri, ::fw::special::ndtri)
FW_ATEN_NAME(special_psi, ::fw::special::psi)
FW_ATEN_NAME(special_round, ::fw::special::round)
FW_ATEN_NAME(special_sinc, ::fw::special::sinc)
FW_ATEN_NAME(special_softmax, ::fw::special::softmax)
FW_ATEN_NAME(special_xlog1py, ::fw::special::xlog1py)
FW_ATEN_NAME(special_xlogy, ::fw::special::xlogy)
FW_ATEN_NAME(special_zeta, ::fw::special::zeta)
FW_ATEN_NAME(special_bessel_j0, ::fw::special::bessel_j0)
FW_ATEN_NAME(special_bessel_j1, ::fw::special::bessel_j1)
FW_ATEN_NAME(special_bessel_y0, ::fw::special::bessel_y0)
FW_ATEN_NAME(special_bessel_y1, ::fw::special::bessel_y1)
FW_ATEN_NAME(special_modified_bessel_i0, ::fw::special::modified_bessel_i0)
FW_ATEN_NAME(special_modified_bessel_i1, ::fw::special::modified_bessel_i1)
FW_ATEN_NAME(special_modified_bessel_k0, ::fw::special::modified_bessel_k0)
FW_ATEN_NAME(special_modified_bessel_k1, ::fw::special::modified_bessel_k1)
FW_ATEN_NAME(special_scaled_modified_bessel_k0, ::fw::special::scaled_modified_bessel_k0)
FW_ATEN_NAME(special_scaled_modified_bessel_k1, ::fw::special::scaled_modified_bessel_k1)
FW_ATEN_NAME(special_spherical_bessel_j0, ::fw::special::spherical_bessel_j0)
FW_ATEN_NAME(special_airy_ai, ::fw::special::airy_ai)
FW_ATEN_NAME(special_chebyshev_polynomial_t, ::fw::special::chebyshev_polynomial_t)
FW_ATEN_NAME(special_chebyshev_polynomial_u, ::fw::special::chebyshev_polynomial_u)
FW_ATEN_NAME(special_chebyshev_polynomial_v, ::fw::special::chebyshev_polynomial_v)
FW_ATEN_NAME(special_chebyshev_polynomial_w, ::fw::special::chebyshev_polynomial_w)
FW_ATEN_NAME(special_shifted_chebyshev_polynomial_t, ::fw::special::shifted_chebyshev_polynomial_t)
FW_ATEN_NAME(special_shifted_chebyshev_polynomial_u, ::fw::special::shifted_chebyshev_polynomial_u)
FW_ATEN_NAME(special_shifted_chebyshev_polynomial_v, ::fw::special::shifted_chebyshev_polynomial_v)
FW_ATEN_NAME(special_shifted_chebyshev_polynomial_w, ::fw::special::shifted_chebyshev_polynomial_w)
FW_ATEN_NAME(special_hermite_polynomial_h, ::fw::special::hermite_polynomial_h)
FW_ATEN_NAME(special_hermite_polynomial_he, ::fw::special::hermite_polynomial_he)
FW_ATEN_NAME(special_laguerre_polynomial_l, ::fw::special::laguerre_polynomial_l)
FW_ATEN_NAME(special_legendre_polynomial_p, ::fw::special::legendre_polynomial_p)

}  // namespace fw

#undef FW_ATEN_NAME
