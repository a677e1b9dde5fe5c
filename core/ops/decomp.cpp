// Linear-algebra decompositions (fw::linalg::inv, det, slogdet, solve, cholesky, qr, eigh, svd,
// pinv) and the composites built on them (eigvalsh, svdvals, matrix/vector norms, matrix_rank,
// matrix_power, cross, logdet and the torch:: aliases). Public API in include/fw/linalg.h.
//
// Note [Linear algebra through Eigen]
// A decomposition is not a registered op: it is an fw::autograd::Function whose forward makes
// the input contiguous, views it as a batch of row-major matrices and runs an Eigen 3.4
// factorisation on each (PartialPivLU for inv/det/slogdet/solve, LLT for cholesky,
// HouseholderQR, SelfAdjointEigenSolver, BDCSVD), in parallel over the batch on fw's pool
// (parallel_for, one matrix per task). float32 and float64 only, CPU only. Kernels never throw
// inside the parallel region: each matrix reports a LAPACK-style info code (the zero pivot, the
// failing leading minor), and the first bad batch element raises afterwards, worded as PyTorch.
// Empty batches and 0 x 0 matrices skip Eigen entirely (det of a 0 x 0 matrix is 1, an empty
// SVD's full U/Vh are identities, as PyTorch).
//
// Backward formulas are written with public fw ops on saved inputs and outputs (matmul, solve,
// tril, where, ...), so the backward graph is itself differentiable and higher-order gradients
// work. Formulas (real case): inv: -A^-T G A^-T; det: g det A^-T (0 for an exactly singular
// matrix, as PyTorch 1.13); slogdet: g A^-T; solve: gB = solve(A^T, G), gA = -gB X^T;
// cholesky: L^-T Phi(L^T gL) L^-1 with Phi = lower triangle, diagonal halved, symmetrised
// (PyTorch's cholesky_backward); qr (m >= n): (gQ + Q copyltu(R gR^T - gQ^T Q)) R^-T, wide
// inputs through their leading square block;
// eigh: V (diag(gL) + skew(V^T gV) / (L_j - L_i)) V^T; svd: PyTorch's svd_backward (gauge
// invariant losses only); pinv: the Golub-Pereyra derivative. Everything else is a composite
// of these and ordinary fw ops and gets autograd for free.
#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/ops/decomp_common.h"
#include "core/parallel.h"
#include "fw/autograd.h"
#include "fw/error.h"
#include "fw/linalg.h"
#include "fw/ops.h"

namespace fw {
namespace {

using autograd::AutogradContext;
using autograd::variable_list;

// ---- checks and shapes (the shared ones are in core/ops/decomp_common.h)
using namespace linalg_detail;

// 1-based index of the first exactly-zero pivot of an LU factorisation (0 when none).
template <class LU>
int64_t zero_pivot(const LU& lu) {
  auto d = lu.matrixLU().diagonal();
  for (int64_t k = 0; k < d.size(); k++)
    if (d(k) == typename LU::Scalar(0)) return k + 1;
  return 0;
}

Tensor eye_bool(int64_t n) { return fw::eye(n, TensorOptions(kBool)); }
// (*, n) -> (*, n, n) with v on the diagonal.
Tensor diag_embed(const Tensor& v) { return v.unsqueeze(-1) * fw::eye(v.size(-1), v.options()); }
Tensor expand_scalar(const Tensor& s) { return s.unsqueeze(-1).unsqueeze(-1); }

// ---- forwards (no autograd): batches of contiguous row-major matrices

// The impls below raise for a failed matrix, or (info_out given: the *_ex functions) record its
// code there and leave its result as computed (inf / NaN, unspecified as in PyTorch).
Tensor inv_impl(const Tensor& A0, std::vector<int64_t>* info_out = nullptr) {
  Tensor A = A0.contiguous();
  int64_t n = A.size(-1), batch = batch_count(A);
  Tensor out = fw::empty(A.sizes(), A.options());
  std::vector<int64_t> info(size_t(batch), 0);
  if (info_out) *info_out = info;
  if (n == 0 || batch == 0) return out;
  visit_real(A.dtype(), [&]<class T>() {
    const T* pa = A.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for_each_matrix(batch, n, [&](int64_t i) {
      Eigen::PartialPivLU<ColMat<T>> lu(CMap<T>(pa + i * n * n, n, n));
      info[size_t(i)] = zero_pivot(lu);
      if (info[size_t(i)] == 0 || info_out) MMap<T>(po + i * n * n, n, n) = lu.inverse();
    });
  });
  if (info_out) {
    *info_out = std::move(info);
    return out;
  }
  raise_info("linalg.inv", info, A.dim() > 2, [](int64_t k) {
    return "The diagonal element " + std::to_string(k) +
           " is zero, the inversion could not be completed because the input matrix is singular.";
  });
  return out;
}

// Sign and log|det| (slog = true) or the determinant (in sign, slog = false) of each matrix.
void lu_det_impl(const Tensor& A0, bool slog, Tensor* sign, Tensor* logabs) {
  Tensor A = A0.contiguous();
  int64_t n = A.size(-1), batch = batch_count(A);
  *sign = fw::empty(batch_shape(A), A.options());
  if (slog) *logabs = fw::empty(batch_shape(A), A.options());
  if (batch == 0) return;
  if (n == 0) {
    sign->fill_(1);
    if (slog) logabs->fill_(0);
    return;
  }
  visit_real(A.dtype(), [&]<class T>() {
    const T* pa = A.data_ptr<T>();
    T* ps = sign->data_ptr<T>();
    T* pl = slog ? logabs->data_ptr<T>() : nullptr;
    for_each_matrix(batch, n, [&](int64_t i) {
      Eigen::PartialPivLU<ColMat<T>> lu(CMap<T>(pa + i * n * n, n, n));
      if (!slog) {
        ps[i] = lu.determinant();
        return;
      }
      auto d = lu.matrixLU().diagonal();
      T s = T(lu.permutationP().determinant()), la = 0;
      for (int64_t k = 0; k < n; k++) {
        T v = d(k);
        if (v == 0) {
          s = 0;
          la = -std::numeric_limits<T>::infinity();
          break;
        }
        if (v < 0) s = -s;
        la += std::log(std::abs(v));
      }
      ps[i] = s;
      pl[i] = la;
    });
  });
}

// X with A X = B for A (*, n, n), B (*, n, k) of the same batch shape.
Tensor solve_impl(const Tensor& A0, const Tensor& B0, std::vector<int64_t>* info_out = nullptr) {
  Tensor A = A0.contiguous(), B = B0.contiguous();
  int64_t n = A.size(-1), k = B.size(-1), batch = batch_count(A);
  Tensor out = fw::empty(B.sizes(), B.options());
  std::vector<int64_t> info(size_t(batch), 0);
  if (info_out) *info_out = info;
  if (batch == 0 || n == 0) return out.zero_();
  visit_real_or_complex(A.dtype(), [&]<class T>() {
    const T* pa = A.data_ptr<T>();
    const T* pb = B.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for_each_matrix(batch, n, [&](int64_t i) {
      Eigen::PartialPivLU<ColMat<T>> lu(CMap<T>(pa + i * n * n, n, n));
      info[size_t(i)] = zero_pivot(lu);
      if (k > 0 && (info[size_t(i)] == 0 || info_out))
        MMap<T>(po + i * n * k, n, k) = lu.solve(CMap<T>(pb + i * n * k, n, k));
    });
  });
  if (info_out) {
    *info_out = std::move(info);
    return out;
  }
  raise_info("linalg.solve", info, A.dim() > 2, [](int64_t k) {
    return "The diagonal element " + std::to_string(k) +
           " is zero, the solve could not be completed because the input matrix is singular.";
  });
  return out;
}

// Order (1-based) of the first leading minor that is not positive-definite (0 when none), by
// the plain Cholesky recurrence on the lower triangle.
template <class T>
int64_t failing_minor(const ColMat<T>& a) {
  int64_t n = a.rows();
  ColMat<T> l = ColMat<T>::Zero(n, n);
  for (int64_t j = 0; j < n; j++) {
    T d = a(j, j);
    for (int64_t p = 0; p < j; p++) d -= l(j, p) * l(j, p);
    if (!(d > 0)) return j + 1;
    l(j, j) = std::sqrt(d);
    for (int64_t i = j + 1; i < n; i++) {
      T s = a(i, j);
      for (int64_t p = 0; p < j; p++) s -= l(i, p) * l(j, p);
      l(i, j) = s / l(j, j);
    }
  }
  return 0;
}

// Lower Cholesky factor of each matrix from its lower triangle.
Tensor cholesky_impl(const Tensor& A0, std::vector<int64_t>* info_out = nullptr) {
  Tensor A = A0.contiguous();
  int64_t n = A.size(-1), batch = batch_count(A);
  Tensor out = fw::zeros(A.sizes(), A.options());
  std::vector<int64_t> info(size_t(batch), 0);
  if (info_out) *info_out = info;
  if (n == 0 || batch == 0) return out;
  visit_real(A.dtype(), [&]<class T>() {
    const T* pa = A.data_ptr<T>();
    T* po = out.data_ptr<T>();
    for_each_matrix(batch, n, [&](int64_t i) {
      ColMat<T> a = CMap<T>(pa + i * n * n, n, n);
      Eigen::LLT<ColMat<T>, Eigen::Lower> llt(a);
      ColMat<T> l = llt.matrixL();
      if (llt.info() != Eigen::Success || !l.allFinite()) {
        int64_t k = failing_minor<T>(a);
        info[size_t(i)] = k > 0 ? k : n;
        if (!info_out) return;
      }
      l.template triangularView<Eigen::StrictlyUpper>().setZero();
      MMap<T>(po + i * n * n, n, n) = l;
    });
  });
  if (info_out) {
    *info_out = std::move(info);
    return out;
  }
  raise_info("linalg.cholesky", info, A.dim() > 2, [](int64_t k) {
    return "The factorization could not be completed because the input is not positive-definite (the leading "
           "minor of order " + std::to_string(k) + " is not positive-definite).";
  });
  return out;
}

// Q (m x qc; undefined when !want_q) and R (rr x n) of each matrix.
void qr_impl(const Tensor& A0, bool want_q, bool complete, Tensor* Q, Tensor* R) {
  Tensor A = A0.contiguous();
  int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), batch = batch_count(A);
  int64_t qc = complete ? m : k, rr = complete ? m : k;
  Shape bs = batch_shape(A);
  *R = fw::zeros(with_tail(bs, {rr, n}), A.options());
  *Q = want_q ? fw::zeros(with_tail(bs, {m, qc}), A.options()) : fw::empty({0}, A.options());
  if (batch == 0 || m == 0 || n == 0) {
    if (want_q && qc > 0 && batch > 0) Q->copy_(fw::eye(m, qc, A.options()).expand(Q->sizes()));
    return;
  }
  visit_real(A.dtype(), [&]<class T>() {
    const T* pa = A.data_ptr<T>();
    T* pq = want_q ? Q->data_ptr<T>() : nullptr;
    T* pr = R->data_ptr<T>();
    for_each_matrix(batch, std::max(m, n), [&](int64_t i) {
      Eigen::HouseholderQR<ColMat<T>> qr(CMap<T>(pa + i * m * n, m, n));
      const ColMat<T>& f = qr.matrixQR();
      MMap<T> r(pr + i * rr * n, rr, n);
      for (int64_t a = 0; a < std::min(rr, m); a++)
        for (int64_t b = a; b < n; b++) r(a, b) = f(a, b);
      if (want_q) {
        ColMat<T> q = qr.householderQ() * ColMat<T>::Identity(m, qc);
        MMap<T>(pq + i * m * qc, m, qc) = q;
      }
    });
  });
}

// Eigenvalues (ascending) and, when want_v, eigenvectors of each symmetric matrix, read from the
// lower (lower = true) or upper triangle.
void eigh_impl(const Tensor& A0, bool lower, bool want_v, Tensor* L, Tensor* V) {
  Tensor A = A0.contiguous();
  int64_t n = A.size(-1), batch = batch_count(A);
  Shape bs = batch_shape(A);
  *L = fw::empty(with_tail(bs, {n}), A.options().dtype(to_real_value_type(A.dtype())));  // real eigenvalues
  *V = want_v ? fw::empty(A.sizes(), A.options()) : Tensor();
  if (batch == 0 || n == 0) return;
  std::vector<int64_t> info(size_t(batch), 0);
  visit_real_or_complex(A.dtype(), [&]<class T>() {
    using R = typename Eigen::NumTraits<T>::Real;
    const T* pa = A.data_ptr<T>();
    R* pl = L->data_ptr<R>();
    T* pv = want_v ? V->data_ptr<T>() : nullptr;
    for_each_matrix(batch, n, [&](int64_t i) {
      ColMat<T> a = CMap<T>(pa + i * n * n, n, n);
      if (!lower) a.adjointInPlace();  // Eigen reads the lower triangle (the Hermitian completion)
      Eigen::SelfAdjointEigenSolver<ColMat<T>> es(a, want_v ? Eigen::ComputeEigenvectors : Eigen::EigenvaluesOnly);
      if (es.info() != Eigen::Success) {
        info[size_t(i)] = 1;
        return;
      }
      Eigen::Map<Eigen::Matrix<R, Eigen::Dynamic, 1>>(pl + i * n, n) = es.eigenvalues();
      if (want_v) MMap<T>(pv + i * n * n, n, n) = es.eigenvectors();
    });
  });
  raise_info("linalg.eigh", info, A.dim() > 2, [](int64_t) {
    return std::string("The algorithm failed to converge because the input matrix is ill-conditioned or has too "
                       "many repeated eigenvalues.");
  });
}

// U (m x uc), S (k), Vh (vr x n) of each matrix; U and Vh only when want_uv.
void svd_impl(const Tensor& A0, bool want_uv, bool full, Tensor* U, Tensor* S, Tensor* Vh) {
  Tensor A = A0.contiguous();
  int64_t m = A.size(-2), n = A.size(-1), k = std::min(m, n), batch = batch_count(A);
  int64_t uc = full ? m : k, vr = full ? n : k;
  Shape bs = batch_shape(A);
  *S = fw::empty(with_tail(bs, {k}), A.options());
  if (want_uv) {
    *U = fw::zeros(with_tail(bs, {m, uc}), A.options());
    *Vh = fw::zeros(with_tail(bs, {vr, n}), A.options());
  }
  if (batch == 0) return;
  if (k == 0) {  // an empty matrix: identities are a valid full SVD (PyTorch)
    if (want_uv && uc > 0) U->copy_(fw::eye(m, uc, A.options()).expand(U->sizes()));
    if (want_uv && vr > 0) Vh->copy_(fw::eye(vr, n, A.options()).expand(Vh->sizes()));
    return;
  }
  std::vector<int64_t> info(size_t(batch), 0);
  visit_real(A.dtype(), [&]<class T>() {
    const T* pa = A.data_ptr<T>();
    T* ps = S->data_ptr<T>();
    T* pu = want_uv ? U->data_ptr<T>() : nullptr;
    T* pv = want_uv ? Vh->data_ptr<T>() : nullptr;
    unsigned opts = !want_uv ? 0u
                    : full   ? unsigned(Eigen::ComputeFullU | Eigen::ComputeFullV)
                             : unsigned(Eigen::ComputeThinU | Eigen::ComputeThinV);
    for_each_matrix(batch, std::max(m, n), [&](int64_t i) {
      ColMat<T> a = CMap<T>(pa + i * m * n, m, n);
      Eigen::BDCSVD<ColMat<T>> svd(a, opts);
      if (svd.info() != Eigen::Success || !svd.singularValues().allFinite()) {
        info[size_t(i)] = 1;
        return;
      }
      Eigen::Map<Eigen::Matrix<T, Eigen::Dynamic, 1>>(ps + i * k, k) = svd.singularValues();
      if (want_uv) {
        MMap<T>(pu + i * m * uc, m, uc) = svd.matrixU();
        MMap<T>(pv + i * vr * n, vr, n) = svd.matrixV().transpose();
      }
    });
  });
  raise_info("linalg.svd", info, A.dim() > 2, [](int64_t) {
    return std::string("The algorithm failed to converge because the input matrix is ill-conditioned or has too "
                       "many repeated singular values.");
  });
}

// ---- autograd functions

// The factorisations' Fns take `ex`: record the info codes in a second, non-differentiable output
// (the *_ex functions) instead of raising.
struct InvFn : autograd::Function<InvFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& A, bool ex) {
    std::vector<int64_t> info;
    Tensor X = inv_impl(A, ex ? &info : nullptr);
    Tensor code = info_tensor(info, batch_shape(A));
    ctx->mark_non_differentiable({code});
    ctx->save_for_backward({X});
    return {X, code};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    Tensor XT = mT(ctx->get_saved_variables()[0]);
    return {-fw::matmul(XT, fw::matmul(g[0], XT)), Tensor()};
  }
};

struct DetFn : autograd::Function<DetFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& A) {
    Tensor d, unused;
    lu_det_impl(A, false, &d, &unused);
    ctx->save_for_backward({A, d});
    return d;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    const Tensor &A = s[0], &d = s[1];
    if (A.numel() == 0) return {fw::zeros_like(A)};
    // PyTorch 1.13 evaluates det * A^-T with det = 0 for an exactly singular matrix, so its
    // gradient is 0 there: invert the identity in its place.
    Tensor singular = expand_scalar(d.eq(0));
    Tensor safe = fw::where(singular, fw::eye(A.size(-1), A.options()), A);
    return {expand_scalar(g[0] * d) * mT(linalg::inv(safe))};
  }
};

struct SlogdetFn : autograd::Function<SlogdetFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& A) {
    Tensor sign, logabs;
    lu_det_impl(A, true, &sign, &logabs);
    ctx->mark_non_differentiable({sign});
    ctx->save_for_backward({A});
    return {sign, logabs};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    Tensor A = ctx->get_saved_variables()[0];
    if (A.numel() == 0) return {fw::zeros_like(A)};
    return {expand_scalar(g[1]) * mT(linalg::inv(A))};
  }
};

struct SolveFn : autograd::Function<SolveFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& A, const Tensor& B, bool ex) {
    std::vector<int64_t> info;
    Tensor X = solve_impl(A, B, ex ? &info : nullptr);
    Tensor code = info_tensor(info, batch_shape(A));
    ctx->mark_non_differentiable({code});
    ctx->save_for_backward({A, X});
    return {X, code};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    const Tensor &A = s[0], &X = s[1];
    Tensor gB = linalg::solve(A.mH(), g[0]);  // mH = mT for real A
    Tensor gA = ctx->needs_input_grad(0) ? -fw::matmul(gB, X.mH()) : Tensor();
    return {gA, ctx->needs_input_grad(1) ? gB : Tensor(), Tensor()};
  }
};

// X L^-1 for lower-triangular L (through solve, so it stays differentiable).
Tensor right_solve(const Tensor& X, const Tensor& L) { return mT(linalg::solve(mT(L), mT(X))); }

struct CholeskyFn : autograd::Function<CholeskyFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& A, bool ex) {
    std::vector<int64_t> info;
    Tensor L = cholesky_impl(A, ex ? &info : nullptr);
    Tensor code = info_tensor(info, batch_shape(A));
    ctx->mark_non_differentiable({code});
    ctx->save_for_backward({L});
    return {L, code};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    Tensor L = ctx->get_saved_variables()[0];
    if (L.numel() == 0) return {fw::zeros_like(L), Tensor()};
    Tensor phi = fw::matmul(mT(L), g[0]).tril();
    phi = 0.5 * (phi + mT(phi.tril(-1)));
    return {right_solve(linalg::solve(mT(L), phi), L), Tensor()};
  }
};

struct QrFn : autograd::Function<QrFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& A, const std::string& mode) {
    Tensor Q, R;
    bool want_q = mode != "r";
    qr_impl(A, want_q, mode == "complete", &Q, &R);
    if (!want_q) ctx->mark_non_differentiable({Q});
    ctx->saved_data["mode"] = mode;
    ctx->saved_data["m"] = A.size(-2);
    ctx->saved_data["n"] = A.size(-1);
    ctx->save_for_backward({Q, R});
    return {Q, R};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    std::string mode = ctx->saved_data["mode"].toStringRef();
    int64_t m = ctx->saved_data["m"].toInt(), n = ctx->saved_data["n"].toInt();
    FW_CHECK(mode != "r", "[linalg.qr] The derivative of linalg.qr depends on Q, which is not computed when "
             "mode='r'. Please use linalg.qr(A, mode='reduced') if you are going to differentiate through linalg.qr.");
    FW_CHECK(mode != "complete" || m <= n,
             "[linalg.qr] The QR decomposition is not differentiable when mode='complete' and nrows > ncols.");
    auto s = ctx->get_saved_variables();
    const Tensor &Q = s[0], &R = s[1];
    if (Q.numel() == 0 || R.numel() == 0) return {fw::zeros(with_tail(batch_shape(R), {m, n}), R.options()), Tensor()};
    if (m >= n) return {square_backward(Q, R, g[0], g[1]), Tensor()};
    // Wide: A = [X | Y] with X = Q U square and R = [U | V], V = Q^T Y, so Y = Q V. Y's gradient
    // is Q gV; X's is the square rule with gQ + Y gV^T (V depends on Q too).
    Tensor U = R.narrow(-1, 0, m), V = R.narrow(-1, m, n - m);
    Tensor gU = g[1].narrow(-1, 0, m), gV = g[1].narrow(-1, m, n - m);
    Tensor gQ = g[0] + fw::matmul(fw::matmul(Q, V), mT(gV));
    return {fw::cat({square_backward(Q, U, gQ, gU), fw::matmul(Q, gV)}, -1), Tensor()};
  }
  // m >= n: (gQ + Q copyltu(R gR^T - gQ^T Q)) R^-T, copyltu mirroring the lower triangle up.
  static Tensor square_backward(const Tensor& Q, const Tensor& R, const Tensor& gQ, const Tensor& gR) {
    Tensor M = fw::matmul(R, mT(gR)) - fw::matmul(mT(gQ), Q);
    Tensor sym = M.tril() + mT(M.tril(-1));
    Tensor B = gQ + fw::matmul(Q, sym);
    return mT(linalg::solve(R, mT(B)));
  }
};

struct EighFn : autograd::Function<EighFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& A, bool lower) {
    Tensor L, V;
    eigh_impl(A, lower, true, &L, &V);
    ctx->set_materialize_grads(false);
    ctx->save_for_backward({L, V});
    return {L, V};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    const Tensor &L = s[0], &V = s[1];
    const Tensor &gL = g[0], &gV = g[1];
    if (!gL.defined() && !gV.defined()) return {Tensor(), Tensor()};
    // mH = mT for real A; for complex (Hermitian) A the same formula with conjugate transposes.
    if (!gV.defined()) return {fw::matmul(V * gL.unsqueeze(-2), V.mH()), Tensor()};
    int64_t n = L.size(-1);
    Tensor eye = eye_bool(n);
    Tensor S = fw::matmul(V.mH(), gV);
    S = 0.5 * (S - S.mH());
    Tensor E = fw::where(eye, 1.0, L.unsqueeze(-2) - L.unsqueeze(-1));
    Tensor K = fw::where(eye, fw::zeros({}, S.options()), S / E);
    if (gL.defined()) K = K + diag_embed(gL);
    return {fw::matmul(V, fw::matmul(K, V.mH())), Tensor()};
  }
};

// PyTorch's svd_backward for the reduced SVD (U m x k, S k, Vh k x n); gU/gVh may be undefined.
Tensor svd_backward(const Tensor& gU, const Tensor& gS, const Tensor& gVh, const Tensor& U, const Tensor& S,
                    const Tensor& Vh) {
  int64_t m = U.size(-2), n = Vh.size(-1), k = S.size(-1);
  if (!gU.defined() && !gVh.defined()) {
    if (!gS.defined()) return Tensor();
    return fw::matmul(U * gS.unsqueeze(-2), Vh);
  }
  Tensor eye = eye_bool(k);
  Tensor UhgU = gU.defined() ? fw::matmul(mT(U), gU) : Tensor();
  if (UhgU.defined()) UhgU = UhgU - mT(UhgU);
  Tensor VhgV = gVh.defined() ? fw::matmul(Vh, mT(gVh)) : Tensor();
  if (VhgV.defined()) VhgV = VhgV - mT(VhgV);
  Tensor S2 = S * S;
  Tensor E = fw::where(eye, 1.0, S2.unsqueeze(-2) - S2.unsqueeze(-1));
  Tensor gA;
  if (UhgU.defined() && VhgV.defined()) gA = (UhgU * S.unsqueeze(-2) + S.unsqueeze(-1) * VhgV) / E;
  else if (UhgU.defined()) gA = UhgU * S.unsqueeze(-2) / E;
  else gA = S.unsqueeze(-1) * VhgV / E;
  gA = fw::where(eye, 0.0, gA);
  if (gS.defined()) gA = gA + diag_embed(gS);
  if (m > n && gU.defined()) {
    gA = fw::matmul(U, gA);
    Tensor gUSinv = gU / S.unsqueeze(-2);
    gA = gA + gUSinv - fw::matmul(U, fw::matmul(mT(U), gUSinv));
    return fw::matmul(gA, Vh);
  }
  if (m < n && gVh.defined()) {
    gA = fw::matmul(gA, Vh);
    Tensor SinvgVh = gVh / S.unsqueeze(-1);
    gA = gA + SinvgVh - fw::matmul(fw::matmul(SinvgVh, mT(Vh)), Vh);
    return fw::matmul(U, gA);
  }
  return fw::matmul(U, fw::matmul(gA, Vh));
}

struct SvdFn : autograd::Function<SvdFn> {
  static variable_list forward(AutogradContext* ctx, const Tensor& A, bool full) {
    Tensor U, S, Vh;
    svd_impl(A, true, full, &U, &S, &Vh);
    ctx->set_materialize_grads(false);
    ctx->saved_data["full"] = full;
    ctx->save_for_backward({U, S, Vh});
    return {U, S, Vh};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    Tensor U = s[0], S = s[1], Vh = s[2], gU = g[0], gVh = g[2];
    int64_t k = S.size(-1);
    if (U.size(-2) == 0 || Vh.size(-1) == 0) {
      Shape sh = batch_shape(U);
      return {fw::zeros(with_tail(sh, {U.size(-2), Vh.size(-1)}), S.options()), Tensor()};
    }
    if (ctx->saved_data["full"].toBool()) {
      U = U.narrow(-1, 0, k);
      Vh = Vh.narrow(-2, 0, k);
      if (gU.defined()) gU = gU.narrow(-1, 0, k);
      if (gVh.defined()) gVh = gVh.narrow(-2, 0, k);
    }
    return {svd_backward(gU, g[1], gVh, U, S, Vh), Tensor()};
  }
};

// Default relative tolerance for rank decisions: eps * max(m, n) unless atol > 0 was given.
double resolve_rtol(const Tensor& A, std::optional<double> atol, std::optional<double> rtol) {
  if (rtol) return *rtol;
  if (atol && *atol > 0) return 0.0;
  double eps = A.dtype() == kFloat ? double(std::numeric_limits<float>::epsilon())
                                   : std::numeric_limits<double>::epsilon();
  return eps * double(std::max(A.size(-2), A.size(-1)));
}

struct PinvFn : autograd::Function<PinvFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& A, double atol, double rtol, bool hermitian) {
    Tensor P;
    if (hermitian) {
      Tensor L, V;
      eigh_impl(A, true, true, &L, &V);
      Tensor absL = L.abs();
      Tensor tol = (std::get<0>(fw::max(absL, -1, true)) * rtol).clamp_min(atol);
      Tensor inv_l = fw::where(absL > tol, 1.0 / L, 0.0);
      P = fw::matmul(V * inv_l.unsqueeze(-2), mT(V));
    } else {
      Tensor U, S, Vh;
      svd_impl(A, true, false, &U, &S, &Vh);
      Tensor smax = S.size(-1) > 0 ? S.narrow(-1, 0, 1) : S;
      Tensor tol = (smax * rtol).clamp_min(atol);
      Tensor inv_s = fw::where(S > tol, 1.0 / S, 0.0);
      P = fw::matmul(mT(Vh) * inv_s.unsqueeze(-2), mT(U));
    }
    P = P.contiguous();
    ctx->save_for_backward({A, P});
    return P;
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    auto s = ctx->get_saved_variables();
    const Tensor &A = s[0], &P = s[1], &G = g[0];
    if (A.numel() == 0) return {fw::zeros_like(A), Tensor(), Tensor(), Tensor()};
    int64_t m = A.size(-2), n = A.size(-1);
    Tensor PT = mT(P), GT = mT(G);
    Tensor t1 = -fw::matmul(PT, fw::matmul(G, PT));
    Tensor Im = fw::eye(m, A.options()), In = fw::eye(n, A.options());
    Tensor t2 = fw::matmul(Im - fw::matmul(A, P), fw::matmul(GT, fw::matmul(P, PT)));
    Tensor t3 = fw::matmul(fw::matmul(PT, P), fw::matmul(GT, In - fw::matmul(P, A)));
    return {t1 + t2 + t3, Tensor(), Tensor(), Tensor()};
  }
};

void check_norm_dtype(const char* op, const Tensor& A) {
  FW_CHECK(A.defined(), "[", op, "] the input is an undefined tensor");
  FW_CHECK(A.is_floating_point() || A.is_complex(), "[", op,
           "] Expected a floating point or complex tensor as input. Got ", dtype_name(A.dtype()));
}

// Moves dims d0, d1 to the end (d0 second to last).
Tensor move_to_end(const Tensor& A, int64_t d0, int64_t d1) {
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < A.dim(); i++)
    if (i != d0 && i != d1) perm.push_back(i);
  perm.push_back(d0);
  perm.push_back(d1);
  return A.permute(perm);
}

// Puts back size-1 dims at the sorted positions d0, d1 (keepdim).
Tensor unsqueeze_two(const Tensor& r, int64_t d0, int64_t d1) {
  return r.unsqueeze(std::min(d0, d1)).unsqueeze(std::max(d0, d1));
}

}  // namespace

// ---- public API

namespace linalg {

Tensor inv(const Tensor& A) {
  check_square("linalg.inv", A);
  return InvFn::apply(A, false)[0];
}

std::tuple<Tensor, Tensor> inv_ex(const Tensor& A, bool check_errors) {
  check_square("linalg.inv_ex", A);
  if (check_errors) return {inv(A), fw::zeros(batch_shape(A), TensorOptions(kInt))};
  auto r = InvFn::apply(A, true);
  return {r[0], r[1]};
}

Tensor det(const Tensor& A) {
  check_square("linalg.det", A);
  return DetFn::apply(A);
}

std::tuple<Tensor, Tensor> slogdet(const Tensor& A) {
  check_square("linalg.slogdet", A);
  auto r = SlogdetFn::apply(A);
  return {r[0], r[1]};
}

namespace {
// linalg.solve and solve_ex: (X, info); ex: the info codes instead of raising.
std::tuple<Tensor, Tensor> solve_common(const Tensor& A, const Tensor& B, bool left, bool ex) {
  check_square("linalg.solve", A, "A", /*complex_ok=*/true);
  FW_CHECK(B.defined() && B.dim() >= 1, "[linalg.solve] The input tensor B must have at least 1 dimension");
  FW_CHECK(B.dtype() == A.dtype(), "[linalg.solve] Expected A and B to have the same dtype, but found A of type ",
           dtype_name(A.dtype()), " and B of type ", dtype_name(B.dtype()), " instead");
  Shape a_front(A.sizes().begin(), A.sizes().end() - 1);
  bool vector_case = B.dim() == 1 || (B.dim() == A.dim() - 1 && B.sizes().equals(IntArrayRef(a_front)));
  Tensor B2 = vector_case ? B.unsqueeze(-1) : B;
  int64_t n = A.size(-1);
  FW_CHECK((left ? B2.size(-2) : B2.size(-1)) == n, "[linalg.solve] Incompatible shapes of A and B for the equation ",
           left ? "AX = B (" : "XA = B (", A.size(-2), "x", n, " and ", B2.size(-2), "x", B2.size(-1), ")");
  // X A = B  <=>  A^T X^T = B^T
  Tensor Am = left ? A : mT(A), Bm = left ? B2 : mT(B2);
  Shape bs = broadcast_batch("linalg.solve", batch_shape(Am), batch_shape(Bm));
  Tensor Ae = Am.expand(with_tail(bs, {n, n}));
  Tensor Be = Bm.expand(with_tail(bs, {n, Bm.size(-1)}));
  auto r = SolveFn::apply(Ae, Be, ex);
  Tensor X = left ? r[0] : mT(r[0]);
  // info describes A: A's batch shape, not the broadcast one (as PyTorch)
  return {vector_case ? X.squeeze(-1) : X, batch_of(r[1], batch_shape(A), bs)};
}
}  // namespace

Tensor solve(const Tensor& A, const Tensor& B, bool left) { return std::get<0>(solve_common(A, B, left, false)); }

std::tuple<Tensor, Tensor> solve_ex(const Tensor& A, const Tensor& B, bool left, bool check_errors) {
  return solve_common(A, B, left, !check_errors);
}

Tensor cholesky(const Tensor& A, bool upper) {
  check_square("linalg.cholesky", A);
  if (upper) return mT(CholeskyFn::apply(mT(A), false)[0]);  // U = chol(A^T)^T reads the upper triangle
  return CholeskyFn::apply(A, false)[0];
}

std::tuple<Tensor, Tensor> cholesky_ex(const Tensor& A, bool upper, bool check_errors) {
  check_square("linalg.cholesky_ex", A);
  auto r = CholeskyFn::apply(upper ? mT(A) : A, !check_errors);
  return {upper ? mT(r[0]) : r[0], r[1]};
}

std::tuple<Tensor, Tensor> qr(const Tensor& A, const std::string& mode) {
  check_matrix("linalg.qr", A);
  FW_CHECK(mode == "reduced" || mode == "complete" || mode == "r", "[linalg.qr] qr received unrecognized mode '",
           mode, "' but expected one of 'reduced' (default), 'r', or 'complete'");
  auto r = QrFn::apply(A, mode);
  return {r[0], r[1]};
}

std::tuple<Tensor, Tensor> eigh(const Tensor& A, const std::string& UPLO) {
  check_square("linalg.eigh", A, "A", /*complex_ok=*/true);
  FW_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u",
           "[linalg.eigh] Expected UPLO argument to be 'L' or 'U', but got ", UPLO);
  auto r = EighFn::apply(A, UPLO == "L" || UPLO == "l");
  return {r[0], r[1]};
}

Tensor eigvalsh(const Tensor& A, const std::string& UPLO) {
  check_square("linalg.eigvalsh", A, "A", /*complex_ok=*/true);
  FW_CHECK(UPLO == "L" || UPLO == "U" || UPLO == "l" || UPLO == "u",
           "[linalg.eigvalsh] Expected UPLO argument to be 'L' or 'U', but got ", UPLO);
  if (!(GradMode::is_enabled() && A.requires_grad())) {
    Tensor L, V;
    eigh_impl(A, UPLO == "L" || UPLO == "l", false, &L, &V);
    return L;
  }
  return std::get<0>(linalg::eigh(A, UPLO));
}

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices) {
  check_matrix("linalg.svd", A);
  auto r = SvdFn::apply(A, full_matrices);
  return {r[0], r[1], r[2]};
}

namespace {
void check_cpu_driver(const char* op, const std::optional<std::string_view>& driver) {
  FW_CHECK(!driver.has_value(), "[", op, "] keyword argument `driver=` is only supported on CUDA inputs with the ",
           "cuSOLVER backend (got \"", *driver, "\")");
}
}  // namespace

std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool full_matrices, std::optional<std::string_view> driver) {
  check_cpu_driver("linalg.svd", driver);
  return fw::linalg::svd(A, full_matrices);
}

Tensor svdvals(const Tensor& A, std::optional<std::string_view> driver) {
  check_cpu_driver("linalg.svdvals", driver);
  return fw::linalg::svdvals(A);
}

Tensor svdvals(const Tensor& A) {
  check_matrix("linalg.svdvals", A);
  if (!(GradMode::is_enabled() && A.requires_grad())) {
    Tensor U, S, Vh;
    svd_impl(A, false, false, &U, &S, &Vh);
    return S;
  }
  return std::get<1>(linalg::svd(A, false));
}

Tensor vector_norm(const Tensor& x, const Scalar& ord, OptionalIntArrayRef dim, bool keepdim,
                   std::optional<ScalarType> dtype) {
  check_norm_dtype("linalg.vector_norm", x);
  Tensor xt = dtype ? x.to(*dtype) : x;
  double p = ord.toDouble();
  // inf and negative orders have no identity: an empty reduction raises (PyTorch).
  if (p < 0 || p == INFINITY) {
    if (dim.has_value() && !dim.value().empty()) {
      for (int64_t d : dim.value()) {
        int64_t w = wrap_dim("linalg.vector_norm", d, std::max<int64_t>(x.dim(), 1));
        FW_CHECK(x.dim() == 0 || x.size(w) != 0, "[linalg.vector_norm] cannot compute the ", p, " norm on the dimension ",
                 d, " because this dimension is empty and the operation does not have an identity");
      }
    } else {
      FW_CHECK(x.numel() != 0, "[linalg.vector_norm] cannot compute the ", p,
               " norm on an empty tensor because the operation does not have an identity");
    }
  }
  if (dim.has_value() && !dim.value().empty()) return fw::norm(xt, Scalar(p), dim.value(), keepdim);
  if (x.dim() == 0) return fw::norm(xt.reshape({1}), Scalar(p), IntArrayRef{0}, false);
  Tensor r = fw::norm(xt.reshape({-1}), Scalar(p), IntArrayRef{0}, false);
  if (keepdim) r = r.reshape(Shape(size_t(x.dim()), 1));
  return r;
}

Tensor matrix_norm(const Tensor& A, const Scalar& ord, IntArrayRef dim, bool keepdim,
                   std::optional<ScalarType> dtype) {
  check_norm_dtype("linalg.matrix_norm", A);
  FW_CHECK(A.dim() >= 2, "[linalg.matrix_norm] The input tensor A must have at least 2 dimensions.");
  FW_CHECK(dim.size() == 2, "[linalg.matrix_norm] dim must be a 2-tuple. Got ", dim);
  int64_t d0 = wrap_dim("linalg.matrix_norm", dim[0], A.dim()), d1 = wrap_dim("linalg.matrix_norm", dim[1], A.dim());
  FW_CHECK(d0 != d1, "[linalg.matrix_norm] dims must be different. Got (", dim[0], ", ", dim[1], ")");
  double o = ord.toDouble(), ao = std::abs(o);
  FW_CHECK(ao == 2 || ao == 1 || ao == INFINITY, "[linalg.matrix_norm] Order ", o, " not supported.");
  Tensor At = dtype ? A.to(*dtype) : A;
  if (ao == 2) {
    Tensor s = linalg::svdvals(move_to_end(At, d0, d1));
    Tensor r = o > 0 ? fw::amax(s, {-1}) : fw::amin(s, {-1});
    return keepdim ? unsqueeze_two(r, d0, d1) : r;
  }
  if (ao == INFINITY) std::swap(d0, d1);
  Tensor sums = fw::norm(At, Scalar(1.0), IntArrayRef{d0}, keepdim);
  if (!keepdim && d0 < d1) d1--;
  return o > 0 ? fw::amax(sums, {d1}, keepdim) : fw::amin(sums, {d1}, keepdim);
}

Tensor matrix_norm(const Tensor& A, const std::string& ord, IntArrayRef dim, bool keepdim,
                   std::optional<ScalarType> dtype) {
  check_norm_dtype("linalg.matrix_norm", A);
  FW_CHECK(A.dim() >= 2, "[linalg.matrix_norm] The input tensor A must have at least 2 dimensions.");
  FW_CHECK(dim.size() == 2, "[linalg.matrix_norm] dim must be a 2-tuple. Got ", dim);
  FW_CHECK(ord == "fro" || ord == "nuc", "[linalg.matrix_norm] Order ", ord, " not supported.");
  int64_t d0 = wrap_dim("linalg.matrix_norm", dim[0], A.dim()), d1 = wrap_dim("linalg.matrix_norm", dim[1], A.dim());
  FW_CHECK(d0 != d1, "[linalg.matrix_norm] dims must be different. Got (", dim[0], ", ", dim[1], ")");
  Tensor At = dtype ? A.to(*dtype) : A;
  if (ord == "fro") return vector_norm(At, 2, std::vector<int64_t>{d0, d1}, keepdim);
  Tensor r = linalg::svdvals(move_to_end(At, d0, d1)).sum({-1});
  return keepdim ? unsqueeze_two(r, d0, d1) : r;
}

Tensor norm(const Tensor& A, const std::optional<Scalar>& ord, OptionalIntArrayRef dim, bool keepdim,
            std::optional<ScalarType> dtype) {
  check_norm_dtype("linalg.norm", A);
  if (dim.has_value()) {
    FW_CHECK(dim->size() == 1 || dim->size() == 2,
             "[linalg.norm] If dim is specified, it must be of length 1 or 2. Got ", dim.value());
  } else if (ord.has_value()) {
    FW_CHECK(A.dim() == 1 || A.dim() == 2,
             "[linalg.norm] If dim is not specified but ord is, the input must be 1D or 2D. Got ", A.dim(), "D.");
  }
  if (ord.has_value() && ((dim.has_value() && dim->size() == 2) || (!dim.has_value() && A.dim() == 2))) {
    Shape d = dim.has_value() ? *dim.operator->() : Shape{0, 1};
    return matrix_norm(A, *ord, d, keepdim, dtype);
  }
  return vector_norm(A, ord.value_or(Scalar(2.0)), dim, keepdim, dtype);
}

Tensor norm(const Tensor& A, const std::string& ord, OptionalIntArrayRef dim, bool keepdim,
            std::optional<ScalarType> dtype) {
  check_norm_dtype("linalg.norm", A);
  if (dim.has_value()) {
    FW_CHECK(dim->size() == 1 || dim->size() == 2,
             "[linalg.norm] If dim is specified, it must be of length 1 or 2. Got ", dim.value());
  } else {
    FW_CHECK(A.dim() == 1 || A.dim() == 2,
             "[linalg.norm] If dim is not specified but ord is, the input must be 1D or 2D. Got ", A.dim(), "D.");
  }
  Shape d = dim.has_value() ? *dim.operator->() : Shape{0, 1};
  return matrix_norm(A, ord, d, keepdim, dtype);
}

Tensor matrix_rank(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  check_matrix("linalg.matrix_rank", A);
  NoGradGuard ng;
  double rt = resolve_rtol(A, atol, rtol), at = atol.value_or(0.0);
  Tensor s = hermitian ? eigvalsh(A).abs() : svdvals(A);
  if (s.size(-1) == 0) return fw::zeros(batch_shape(A), TensorOptions(kLong));
  Tensor tol = (fw::amax(s, {-1}, true) * rt).clamp_min(at);
  return (s > tol).sum({-1}, false, kLong);
}

Tensor matrix_rank(const Tensor& A, double tol, bool hermitian) {
  return matrix_rank(A, std::optional<double>(tol), std::optional<double>(0.0), hermitian);
}

Tensor matrix_rank(const Tensor& A, const Tensor& tol, bool hermitian) {
  check_matrix("linalg.matrix_rank", A);
  FW_CHECK(!tol.is_complex(), "[linalg.matrix_rank] tol must be a real tensor, got ", tol.scalar_type());
  NoGradGuard ng;
  Tensor s = hermitian ? eigvalsh(A).abs() : svdvals(A);
  if (s.size(-1) == 0) return fw::zeros(batch_shape(A), TensorOptions(kLong));
  return (s > tol.to(s.dtype()).unsqueeze(-1)).sum({-1}, false, kLong);
}

Tensor pinv(const Tensor& A, std::optional<double> atol, std::optional<double> rtol, bool hermitian) {
  check_matrix("linalg.pinv", A);
  if (hermitian) check_square("linalg.pinv", A);
  return PinvFn::apply(A, atol.value_or(0.0), resolve_rtol(A, atol, rtol), hermitian);
}

Tensor pinv(const Tensor& A, double rcond, bool hermitian) {
  return pinv(A, std::optional<double>(0.0), std::optional<double>(rcond), hermitian);
}

Tensor matrix_power(const Tensor& A, int64_t n) {
  FW_CHECK(A.defined() && A.dim() >= 2, "[linalg.matrix_power] The input tensor A must have at least 2 dimensions.");
  FW_CHECK(A.size(-1) == A.size(-2), "[linalg.matrix_power] A must be batches of square matrices, but they are ",
           A.size(-2), " by ", A.size(-1), " matrices");
  if (n == 0) {  // the identity, still attached to A (zero gradient), as PyTorch's clone().copy_(eye)
    Tensor all = fw::ones(A.sizes(), TensorOptions(kBool));
    return fw::where(all, fw::eye(A.size(-1), A.options()).expand(A.sizes()), A);
  }
  Tensor base = n < 0 ? linalg::inv(A) : A;
  uint64_t e = n < 0 ? uint64_t(-(n + 1)) + 1 : uint64_t(n);
  Tensor result;
  while (true) {
    if (e & 1) result = result.defined() ? fw::matmul(result, base) : base;
    e >>= 1;
    if (e == 0) break;
    base = fw::matmul(base, base);
  }
  return result;
}

Tensor cross(const Tensor& input, const Tensor& other, int64_t dim) {
  FW_CHECK(input.defined() && other.defined(), "[linalg.cross] undefined input");
  FW_CHECK(input.dim() == other.dim(), "[linalg.cross] inputs must have the same number of dimensions.");
  FW_CHECK(input.dtype() == other.dtype(), "[linalg.cross] expected both inputs to have the same dtype, but got ",
           dtype_name(input.dtype()), " and ", dtype_name(other.dtype()));
  int64_t d = wrap_dim("linalg.cross", dim, input.dim());
  FW_CHECK(input.size(d) == 3 && other.size(d) == 3, "[linalg.cross] inputs dimension ", dim,
           " must have length 3. Got ", input.size(d), " and ", other.size(d));
  auto bt = fw::broadcast_tensors({input, other});
  Tensor i1 = fw::tensor(std::vector<int64_t>{1, 2, 0}), i2 = fw::tensor(std::vector<int64_t>{2, 0, 1});
  const Tensor &a = bt[0], &b = bt[1];
  return a.index_select(d, i1) * b.index_select(d, i2) - a.index_select(d, i2) * b.index_select(d, i1);
}

}  // namespace linalg

Tensor inverse(const Tensor& A) { return linalg::inv(A); }
Tensor det(const Tensor& A) { return linalg::det(A); }
std::tuple<Tensor, Tensor> slogdet(const Tensor& A) { return linalg::slogdet(A); }
Tensor logdet(const Tensor& A) {
  auto [sign, logabs] = linalg::slogdet(A);
  return fw::where(sign < 0, std::numeric_limits<double>::quiet_NaN(), logabs);
}
Tensor cholesky(const Tensor& A, bool upper) { return linalg::cholesky(A, upper); }
std::tuple<Tensor, Tensor, Tensor> svd(const Tensor& A, bool some, bool compute_uv) {
  check_matrix("svd", A);
  if (compute_uv) {
    auto [U, S, Vh] = linalg::svd(A, !some);
    return {U, S, mT(Vh)};
  }
  Tensor S = linalg::svdvals(A);
  int64_t m = A.size(-2), n = A.size(-1);
  Shape bs = batch_shape(A);
  return {fw::zeros(with_tail(bs, {m, m}), A.options()), S, fw::zeros(with_tail(bs, {n, n}), A.options())};
}

}  // namespace fw
