// operator<< for tensors, in libtorch's layout: values, then "[ CPUFloatType{2,3} ]".
#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/op.h"

namespace fw {
using namespace detail;

namespace {

struct Fmt {
  bool integral = true, sci = false;
  int width = 1, prec = 4;
};

Fmt choose_format(const Tensor& d) {
  Fmt f;
  const double* p = d.data_ptr<double>();
  double amax = 0, amin = INFINITY;
  for (int64_t i = 0; i < d.numel(); i++) {
    double v = p[i];
    if (!std::isfinite(v)) continue;
    if (v != std::floor(v)) f.integral = false;
    amax = std::max(amax, std::abs(v));
    if (v != 0) amin = std::min(amin, std::abs(v));
  }
  if (!f.integral && (amax >= 1e5 || (amin < 1e-4 && amin > 0))) f.sci = true;
  int digits = amax >= 1 ? int(std::floor(std::log10(amax))) + 1 : 1;
  f.width = f.integral ? digits + 1 : f.sci ? 11 : digits + f.prec + 2;
  return f;
}

// libtorch's layout: each value right-aligned in width (which includes a sign column), values
// in a row separated by one space.
void put(std::ostream& os, double v, const Fmt& f, bool first) {
  if (!first) os << ' ';
  os << std::setw(f.width);
  if (std::isnan(v)) os << "nan";
  else if (std::isinf(v)) os << (v > 0 ? "inf" : "-inf");
  else if (f.integral) os << std::fixed << std::setprecision(0) << v;
  else if (f.sci) os << std::scientific << std::setprecision(f.prec) << v;
  else os << std::fixed << std::setprecision(f.prec) << v;
}

void print_matrix(std::ostream& os, const Tensor& m, const Fmt& f) {
  const double* p = m.data_ptr<double>();
  int64_t r = m.size(0), c = m.size(1);
  for (int64_t i = 0; i < r; i++) {
    for (int64_t j = 0; j < c; j++) put(os, p[i * c + j], f, j == 0);
    os << "\n";
  }
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  DataAccessScope access("printing");
  std::ios state(nullptr);
  state.copyfmt(os);
  std::string type = std::string("CPU") + dtype_name(t.dtype()) + "Type";
  if (t.is_complex()) {
    os << view_as_real(t);
    return os;
  }
  Tensor d = t.to(kDouble).contiguous();
  Fmt f = choose_format(d);
  if (t.dim() == 0) {
    put(os, d.data_ptr<double>()[0], f, true);
    os << "\n";
  } else if (t.dim() == 1) {
    print_matrix(os, d.view({d.numel(), 1}), f);
  } else if (t.dim() == 2) {
    print_matrix(os, d, f);
  } else if (t.numel() > 0) {
    int64_t r = t.size(-2), c = t.size(-1), blocks = t.numel() / (r * c);
    Tensor m = d.view({blocks, r, c});
    DimVec lead(t.sizes());
    lead.pop_back();
    lead.pop_back();
    for (int64_t b = 0; b < blocks; b++) {
      DimVec idx(lead.size(), 0);
      int64_t rem = b;
      for (int64_t k = int64_t(lead.size()) - 1; k >= 0; k--) { idx[k] = rem % lead[k]; rem /= lead[k]; }
      os << "(";
      for (size_t k = 0; k < idx.size(); k++) os << idx[k] << ",";
      os << ".,.) = \n";
      print_matrix(os, m.select(0, b), f);
      if (b + 1 < blocks) os << "\n";
    }
  }
  os.copyfmt(state);
  os << "[ " << type << "{";
  for (int64_t i = 0; i < t.dim(); i++) os << (i ? "," : "") << t.size(i);
  os << "} ]";
  return os;
}

std::string Tensor::toString() const { return std::string("CPU") + dtype_name(dtype()) + "Type"; }

}  // namespace fw
