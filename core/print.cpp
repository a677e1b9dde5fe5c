// operator<< for tensors, in libtorch's layout: values, then "[ CPUFloatType{2,3} ]".
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "core/op.h"

namespace fw {
using namespace detail;

namespace {

// Note [Printing like libtorch]
// libtorch's operator<< (ATen's Formatting.cpp, 1.13), reproduced from its observable output:
//  * one format per printed matrix (per 2-d slice of an n-d tensor): integer mode when every
//    finite value is whole, else fixed with 4 decimals; exponents e = floor(log10|v|) + 1 of
//    the smallest and largest finite magnitudes (1 for zero) choose the width: integers take
//    e_max + 1 columns (scientific past 1e9), fractions e_max + 6 (7 for e_max = 0), a common
//    "scale *" line when e_max > 5 or < 0, and scientific width 11 when the range exceeds
//    10^4; integer-mode values print in the stream's default float format (1234567 shows
//    as 1.23457e+06, as libtorch's does);
//  * a 0-d tensor prints its value in the default format ("3.5", "7");
//  * n-d tensors print their 2-d slices headed "(i,j,.,.) = " with 1-based indices, the first
//    index varying fastest, each row indented by one space;
//  * matrices wider than the line (80 columns for operator<<, linesize for print()) print in
//    blocks headed "Columns a to b", the block's first row on the header's line as libtorch
//    prints it;
//  * empty tensors print no values;
//  * complex tensors print their real parts under the complex type ("[ CPUComplexFloatType{2} ]"):
//    libtorch 1.13 converts to double for printing, which drops the imaginary parts; fw prints
//    the same so that outputs compare line for line (print view_as_real(z) for both parts).
struct Fmt {
  double scale = 1;
  int64_t width = 0;
  enum { Default, Sci, Fixed } mode = Default;
};

// The format of n contiguous values.
Fmt choose_format(const double* p, int64_t n) {
  Fmt f;
  bool integral = true;
  bool any = false;
  double lo = 0, hi = 0;
  for (int64_t k = 0; k < n; k++) {
    double v = p[k];
    if (!std::isfinite(v)) continue;
    if (v != std::ceil(v)) integral = false;
    double a = std::fabs(v);
    if (!any) lo = hi = a, any = true;
    lo = std::min(lo, a);
    // libtorch 1.13's formatter replaces its largest magnitude only when the signed value exceeds
    // it, so a negative value of larger magnitude does not count ({0.0166, -0.87} prints as
    // "0.01 *"); fw keeps that so that printed output compares line for line.
    if (v > hi) hi = a;
  }
  double emin = 1, emax = 1;
  if (any) {
    emin = lo != 0 ? std::floor(std::log10(lo)) + 1 : 1;
    emax = hi != 0 ? std::floor(std::log10(hi)) + 1 : 1;
  }
  if (integral) {
    if (emax > 9) f.width = 11, f.mode = Fmt::Sci;
    else f.width = int64_t(emax) + 1, f.mode = Fmt::Default;
  } else if (emax - emin > 4) {
    f.width = (std::fabs(emax) > 99 || std::fabs(emin) > 99) ? 12 : 11;
    f.mode = Fmt::Sci;
  } else if (emax > 5 || emax < 0) {
    f.width = 7, f.scale = std::pow(10.0, emax - 1), f.mode = Fmt::Fixed;
  } else {
    f.width = emax == 0 ? 7 : int64_t(emax) + 6, f.mode = Fmt::Fixed;
  }
  return f;
}

void set_mode(std::ostream& os, const Fmt& f) {
  if (f.mode == Fmt::Sci) os << std::scientific << std::setprecision(4);
  else if (f.mode == Fmt::Fixed) os << std::fixed << std::setprecision(4);
  else os << std::defaultfloat;  // the precision the stream has (6 unless an earlier slice set 4)
}

void put_scale(std::ostream& os, const Fmt& f) {
  os << std::defaultfloat << std::setprecision(4) << f.scale << " *\n";  // "1e+05 *"
  set_mode(os, f);
}

// rows x cols contiguous doubles at p, in blocks of columns that fit linesize characters.
void print_matrix(std::ostream& os, const double* p, int64_t rows, int64_t cols, int64_t indent, int64_t linesize) {
  const Fmt f = choose_format(p, rows * cols);
  set_mode(os, f);
  const std::string pad(size_t(indent), ' ');
  os << pad;
  const int64_t per_line = std::max<int64_t>(1, (linesize - indent) / (f.width + 1));
  for (int64_t first = 0; first < cols;) {
    const int64_t last = std::min(cols, first + per_line) - 1;
    if (per_line < cols) {
      if (first != 0) os << "\n";
      os << "Columns " << first + 1 << " to " << last + 1 << pad;  // no line break: libtorch's layout
    }
    if (f.scale != 1) {
      put_scale(os, f);
      os << pad;
    }
    for (int64_t r = 0; r < rows; r++) {
      for (int64_t c = first; c <= last; c++) {
        os << std::setw(int(f.width)) << p[r * cols + c] / f.scale;
        if (c < last) {
          os << ' ';
          continue;
        }
        os << "\n";
        if (r + 1 < rows) os << pad << (f.scale != 1 ? " " : "");
      }
    }
    first = last + 1;
  }
}

}  // namespace

std::ostream& print(std::ostream& os, const Tensor& t, int64_t linesize) {
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  DataAccessScope access("printing");
  std::ios state(nullptr);
  state.copyfmt(os);
  std::string type = std::string("CPU") + dtype_name(t.dtype()) + "Type";
  Tensor d = (t.is_complex() ? real(t) : t).to(kDouble).contiguous();
  const double* p = d.data_ptr<double>();
  if (t.dim() == 0) {
    os << std::defaultfloat << p[0] << "\n";
  } else if (t.dim() == 1) {
    if (t.numel() > 0) {
      const Fmt f = choose_format(p, t.numel());
      set_mode(os, f);
      if (f.scale != 1) put_scale(os, f);
      for (int64_t i = 0; i < t.numel(); i++) os << std::setw(int(f.width)) << p[i] / f.scale << "\n";
    }
  } else if (t.dim() == 2) {
    if (t.numel() > 0) print_matrix(os, p, t.size(0), t.size(1), 0, linesize);
  } else if (t.numel() > 0) {
    const int64_t lead = t.dim() - 2, r = t.size(-2), c = t.size(-1);
    DimVec idx(size_t(lead), 0);
    for (bool first = true;; first = false) {
      if (!first) {  // the next slice: the first index varies fastest
        int64_t k = 0;
        while (k < lead && ++idx[size_t(k)] == t.size(k)) idx[size_t(k++)] = 0;
        if (k == lead) break;
        os << "\n";
      }
      int64_t off = 0;
      os << "(";
      for (int64_t k = 0; k < lead; k++) {
        off += idx[size_t(k)] * d.stride(k);
        os << idx[size_t(k)] + 1 << ",";
      }
      os << ".,.) = \n";
      print_matrix(os, p + off, r, c, 1, linesize);
    }
  }
  os.copyfmt(state);
  os << "[ " << type << "{";
  for (int64_t i = 0; i < t.dim(); i++) os << (i ? "," : "") << t.size(i);
  os << "} ]";
  return os;
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return print(os, t, 80); }
void print(const Tensor& t, int64_t linesize) { print(std::cout, t, linesize) << std::endl; }

std::ostream& operator<<(std::ostream& os, Layout l) {
  switch (l) {
    case Layout::Strided: return os << "Strided";
    case Layout::Sparse: return os << "Sparse";
    case Layout::SparseCsr: return os << "SparseCsr";
    case Layout::Mkldnn: return os << "Mkldnn";
    case Layout::SparseCsc: return os << "SparseCsc";
    case Layout::SparseBsr: return os << "SparseBsr";
    case Layout::SparseBsc: return os << "SparseBsc";
  }
  return os << "Layout(" << int(l) << ")";
}

TensorOptions TensorOptions::layout(Layout l) const {
  FW_CHECK(l == Layout::Strided, "[TensorOptions] fw tensors are strided; layout ", l, " is not supported");
  auto o = *this;
  o.has_layout_ = true;
  return o;
}

std::string Tensor::toString() const { return std::string("CPU") + dtype_name(dtype()) + "Type"; }

}  // namespace fw
