// fw::nn::init: parameter initialisers.
#include "fw/nn/init.h"

#include <cmath>
#include <vector>

namespace fw::nn::init {

double calculate_gain(NonlinearityType nonlinearity, double param) {
  if (std::holds_alternative<enumtype::kTanh>(nonlinearity)) return 5.0 / 3.0;
  if (std::holds_alternative<enumtype::kReLU>(nonlinearity)) return std::sqrt(2.0);
  if (std::holds_alternative<enumtype::kLeakyReLU>(nonlinearity)) return std::sqrt(2.0 / (1 + param * param));
  return 1.0;
}

std::tuple<int64_t, int64_t> _calculate_fan_in_and_fan_out(const Tensor& tensor) {
  FW_CHECK(tensor.dim() >= 2, "[init] Fan in and fan out can not be computed for tensor with fewer than 2 "
           "dimensions (got ", tensor.dim(), "-D tensor of shape ", tensor.sizes(), ")");
  int64_t receptive = 1;
  for (int64_t d = 2; d < tensor.dim(); d++) receptive *= tensor.size(d);
  return {tensor.size(1) * receptive, tensor.size(0) * receptive};
}

namespace {

double kaiming_std(const Tensor& t, double a, const FanModeType& mode, const NonlinearityType& nonlinearity,
                   const char* op) {
  FW_CHECK(t.numel() > 0, "[", op, "] Initializing zero-element tensors is a no-op");
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(t);
  int64_t fan = std::holds_alternative<enumtype::kFanIn>(mode) ? fan_in : fan_out;
  return calculate_gain(nonlinearity, a) / std::sqrt(double(fan));
}

double xavier_std(const Tensor& t, double gain) {
  auto [fan_in, fan_out] = _calculate_fan_in_and_fan_out(t);
  return gain * std::sqrt(2.0 / double(fan_in + fan_out));
}

// Orthonormalises the n columns of the row-major m x n matrix a (m >= n) in place by modified
// Gram-Schmidt with one re-orthogonalisation pass; the implied R has a positive diagonal.
void orthonormalise_columns(std::vector<double>& a, int64_t m, int64_t n) {
  auto col_dot = [&](int64_t i, int64_t j) {
    double s = 0;
    for (int64_t r = 0; r < m; r++) s += a[r * n + i] * a[r * n + j];
    return s;
  };
  for (int64_t j = 0; j < n; j++) {
    for (int pass = 0; pass < 2; pass++) {
      for (int64_t i = 0; i < j; i++) {
        double p = col_dot(i, j);
        for (int64_t r = 0; r < m; r++) a[r * n + j] -= p * a[r * n + i];
      }
    }
    double norm = std::sqrt(col_dot(j, j));
    FW_CHECK(norm > 0, "[orthogonal_] the sampled matrix is rank deficient");
    for (int64_t r = 0; r < m; r++) a[r * n + j] /= norm;
  }
}

}  // namespace

Tensor constant_(Tensor tensor, Scalar value) {
  NoGradGuard no_grad;
  tensor.fill_(value);
  return tensor;
}

Tensor zeros_(Tensor tensor) {
  NoGradGuard no_grad;
  tensor.zero_();
  return tensor;
}

Tensor ones_(Tensor tensor) { return constant_(std::move(tensor), 1); }

Tensor eye_(Tensor matrix) {
  FW_CHECK(matrix.dim() == 2, "[eye_] Only tensors with 2 dimensions are supported (got shape ", matrix.sizes(), ")");
  NoGradGuard no_grad;
  matrix.copy_(fw::eye(matrix.size(0), matrix.size(1), matrix.dtype()));
  return matrix;
}

Tensor dirac_(Tensor tensor, int64_t groups) {
  const int64_t nd = tensor.dim();
  FW_CHECK(nd >= 3 && nd <= 5, "[dirac_] Only tensors with 3, 4, or 5 dimensions are supported (got shape ",
           tensor.sizes(), ")");
  FW_CHECK(groups > 0 && tensor.size(0) % groups == 0, "[dirac_] dim 0 (", tensor.size(0),
           ") must be divisible by groups (", groups, ")");
  NoGradGuard no_grad;
  const int64_t per_group = tensor.size(0) / groups, n = std::min(per_group, tensor.size(1));
  tensor.zero_();
  for (int64_t g = 0; g < groups; g++)
    for (int64_t d = 0; d < n; d++) {
      Tensor t = tensor.select(0, g * per_group + d).select(0, d);
      for (int64_t k = 2; k < nd; k++) t = t.select(0, tensor.size(k) / 2);
      t.fill_(1);
    }
  return tensor;
}

Tensor sparse_(Tensor tensor, double sparsity, double std) {
  FW_CHECK(tensor.dim() == 2, "[sparse_] Only tensors with 2 dimensions are supported (got shape ", tensor.sizes(), ")");
  FW_CHECK(sparsity >= 0 && sparsity <= 1, "[sparse_] sparsity must be in [0, 1], got ", sparsity);
  NoGradGuard no_grad;
  const int64_t rows = tensor.size(0), cols = tensor.size(1);
  const int64_t zeros = int64_t(std::ceil(sparsity * double(rows)));
  tensor.normal_(0, std);
  for (int64_t c = 0; c < cols; c++) {
    Tensor rowsel = fw::randperm(rows).narrow(0, 0, zeros);
    tensor.select(1, c).index_fill_(0, rowsel, 0);
  }
  return tensor;
}

Tensor trunc_normal_(Tensor tensor, double mean, double std, double a, double b) {
  FW_CHECK(std > 0 && a < b, "[trunc_normal_] expects std > 0 and a < b, got std = ", std, ", a = ", a, ", b = ", b);
  NoGradGuard no_grad;
  auto cdf = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  const double lo = cdf((a - mean) / std), hi = cdf((b - mean) / std);
  Tensor u = fw::rand(tensor.sizes(), kDouble) * (2 * hi - 2 * lo) + (2 * lo - 1);
  tensor.copy_(fw::erfinv(u).mul(std * std::sqrt(2.0)).add(mean).clamp(a, b));
  return tensor;
}

Tensor uniform_(Tensor tensor, double low, double high) {
  NoGradGuard no_grad;
  tensor.uniform_(low, high);
  return tensor;
}

Tensor normal_(Tensor tensor, double mean, double std) {
  NoGradGuard no_grad;
  tensor.normal_(mean, std);
  return tensor;
}

Tensor xavier_uniform_(Tensor tensor, double gain) {
  double a = std::sqrt(3.0) * xavier_std(tensor, gain);
  return uniform_(std::move(tensor), -a, a);
}

Tensor xavier_normal_(Tensor tensor, double gain) {
  double s = xavier_std(tensor, gain);
  return normal_(std::move(tensor), 0, s);
}

Tensor kaiming_uniform_(Tensor tensor, double a, FanModeType mode, NonlinearityType nonlinearity) {
  if (tensor.numel() == 0) return tensor;
  double bound = std::sqrt(3.0) * kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_");
  return uniform_(std::move(tensor), -bound, bound);
}

Tensor kaiming_normal_(Tensor tensor, double a, FanModeType mode, NonlinearityType nonlinearity) {
  if (tensor.numel() == 0) return tensor;
  double s = kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_");
  return normal_(std::move(tensor), 0, s);
}

Tensor orthogonal_(Tensor tensor, double gain) {
  FW_CHECK(tensor.dim() >= 2, "[orthogonal_] Only tensors with 2 or more dimensions are supported (got shape ",
           tensor.sizes(), ")");
  if (tensor.numel() == 0) return tensor;
  NoGradGuard no_grad;
  const int64_t rows = tensor.size(0), cols = tensor.numel() / rows;
  const bool wide = rows < cols;
  const int64_t m = wide ? cols : rows, n = wide ? rows : cols;
  Tensor sample = fw::randn({m, n}, kDouble).contiguous();
  std::vector<double> a(sample.data_ptr<double>(), sample.data_ptr<double>() + m * n);
  orthonormalise_columns(a, m, n);
  Tensor q = fw::tensor(a, kDouble).view({m, n});
  if (wide) q = q.t();
  tensor.copy_(q.mul(gain).reshape(tensor.sizes()));
  return tensor;
}

}  // namespace fw::nn::init
