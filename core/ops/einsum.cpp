// einsum: the equation is parsed into one label per operand dim; repeated labels become
// diagonals (strided views), labels used by one operand only are summed early, and operands are
// contracted left to right, each pair as one bmm (or a broadcast multiply when nothing is
// contracted). Labels: 'A'-'Z' = 0-25, 'a'-'z' = 26-51 (so the implicit output sorts as
// PyTorch's does), ellipsis dims = 52 and up, aligned from the right.
#include <algorithm>
#include <string>
#include <vector>

#include "core/op.h"

namespace fw {
using namespace detail;

namespace {

constexpr int kLetters = 52;
using Labels = std::vector<int>;

int label_of(char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  return -1;
}
char letter_of(int l) { return l < 26 ? char('A' + l) : char('a' + l - 26); }
bool has(const Labels& ls, int l) { return std::find(ls.begin(), ls.end(), l) != ls.end(); }

// One term of the equation: letters, with kEllipsis where "..." stood.
constexpr int kEllipsis = -1;
Labels parse_term(const std::string& eq, size_t begin, size_t end, const char* what) {
  Labels out;
  bool seen_ellipsis = false;
  for (size_t i = begin; i < end; i++) {
    if (eq[i] == '.') {
      FW_CHECK(i + 2 < end && eq.compare(i, 3, "...") == 0, "[einsum] found '.' for ", what,
               " that is not part of any ellipsis");
      FW_CHECK(!seen_ellipsis, "[einsum] found more than one ellipsis (\"...\") for ", what);
      seen_ellipsis = true;
      out.push_back(kEllipsis);
      i += 2;
      continue;
    }
    int l = label_of(eq[i]);
    FW_CHECK(l >= 0, "[einsum] invalid subscript given at index ", i,
             " in the equation string, subscripts must be in [a-zA-Z]");
    out.push_back(l);
  }
  return out;
}

struct Equation {
  std::vector<Labels> ops;  // one label per dim of each operand
  Labels out;
};

// Replaces the ellipsis of a term by `n` labels, the last n of the ell_ndim ellipsis labels.
Labels expand_ellipsis(const Labels& term, int64_t n, int64_t ell_ndim) {
  Labels out;
  for (int l : term) {
    if (l != kEllipsis) {
      out.push_back(l);
      continue;
    }
    for (int64_t i = 0; i < n; i++) out.push_back(int(kLetters + ell_ndim - n + i));
  }
  return out;
}

Equation parse(std::string eq, TensorList ts) {
  eq.erase(std::remove(eq.begin(), eq.end(), ' '), eq.end());
  size_t arrow = eq.find("->");
  size_t lhs_end = arrow == std::string::npos ? eq.size() : arrow;
  std::vector<Labels> terms;
  for (size_t b = 0;;) {
    size_t e = std::min(eq.find(',', b), lhs_end);
    terms.push_back(parse_term(eq, b, e, ("operand " + std::to_string(terms.size())).c_str()));
    if (e == lhs_end) break;
    b = e + 1;
  }
  FW_CHECK(terms.size() <= ts.size(), "[einsum] fewer operands were provided than specified in the equation");
  FW_CHECK(terms.size() >= ts.size(), "[einsum] more operands were provided than specified in the equation");
  Equation q;
  int64_t ell_ndim = 0;
  bool any_ellipsis = false;
  for (size_t i = 0; i < terms.size(); i++) {
    int64_t letters = std::count_if(terms[i].begin(), terms[i].end(), [](int l) { return l != kEllipsis; });
    bool ell = has(terms[i], kEllipsis);
    any_ellipsis |= ell;
    FW_CHECK(ell ? ts[i].dim() >= letters : ts[i].dim() == letters, "[einsum] the number of subscripts in the equation (",
             letters, ") does not match the number of dimensions (", ts[i].dim(), ") for operand ", i,
             ell ? "" : " and no ellipsis was given");
    if (ell) ell_ndim = std::max(ell_ndim, ts[i].dim() - letters);
  }
  for (size_t i = 0; i < terms.size(); i++) {
    int64_t letters = std::count_if(terms[i].begin(), terms[i].end(), [](int l) { return l != kEllipsis; });
    q.ops.push_back(expand_ellipsis(terms[i], ts[i].dim() - letters, ell_ndim));
  }
  if (arrow != std::string::npos) {
    Labels out = parse_term(eq, arrow + 2, eq.size(), "the output");
    for (size_t i = 0; i < out.size(); i++) {
      if (out[i] == kEllipsis) continue;
      bool found = false;
      for (auto& o : q.ops) found |= has(o, out[i]);
      FW_CHECK(found, "[einsum] output subscript ", letter_of(out[i]),
               " does not appear in the equation for any input operand");
      FW_CHECK(std::count(out.begin(), out.end(), out[i]) == 1, "[einsum] output subscript ", letter_of(out[i]),
               " appears more than once in the output");
    }
    q.out = expand_ellipsis(out, ell_ndim, ell_ndim);
  } else {
    for (int64_t i = 0; any_ellipsis && i < ell_ndim; i++) q.out.push_back(int(kLetters + i));
    int counts[kLetters] = {};
    for (auto& o : q.ops)
      for (int l : o)
        if (l < kLetters) counts[l]++;
    for (int l = 0; l < kLetters; l++)
      if (counts[l] == 1) q.out.push_back(l);
  }
  return q;
}

std::string label_name(int l) {
  return l < kLetters ? std::string(1, letter_of(l)) : "... dim " + std::to_string(l - kLetters);
}

// Checks that every label has one size across operands, size-1 dims broadcasting.
void check_sizes(const Equation& q, TensorList ts) {
  std::vector<int64_t> size(size_t(kLetters + 64), -1);
  for (size_t i = 0; i < q.ops.size(); i++) {
    for (size_t d = 0; d < q.ops[i].size(); d++) {
      int l = q.ops[i][d];
      int64_t s = ts[i].size(int64_t(d));
      for (size_t e = 0; e < d; e++)
        FW_CHECK(q.ops[i][e] != l || ts[i].size(int64_t(e)) == s, "[einsum] subscript ", label_name(l),
                 " is repeated for operand ", i, " but the sizes don't match, ", s, " != ", ts[i].size(int64_t(e)));
      if (size_t(l) >= size.size()) size.resize(size_t(l) + 1, -1);
      int64_t& seen = size[size_t(l)];
      FW_CHECK(seen < 0 || s == seen || s == 1 || seen == 1, "[einsum] subscript ", label_name(l), " has size ", s,
               " for operand ", i, " which does not broadcast with previously seen size ", seen);
      if (seen <= 1) seen = s;
    }
  }
}

struct Operand {
  Tensor t;
  Labels labels;  // unique
};

// Repeated labels of one operand become a diagonal view.
Operand take_diagonals(const Tensor& t, const Labels& labels, size_t index) {
  Operand o;
  DimVec sizes, strides;
  for (size_t d = 0; d < labels.size(); d++) {
    auto it = std::find(o.labels.begin(), o.labels.end(), labels[d]);
    if (it == o.labels.end()) {
      o.labels.push_back(labels[d]);
      sizes.push_back(t.size(int64_t(d)));
      strides.push_back(t.stride(int64_t(d)));
      continue;
    }
    size_t j = size_t(it - o.labels.begin());
    FW_CHECK(sizes[j] == t.size(int64_t(d)), "[einsum] subscript ", label_name(labels[d]), " is repeated for operand ",
             index, " but the sizes don't match, ", t.size(int64_t(d)), " != ", sizes[j]);
    strides[j] += t.stride(int64_t(d));
  }
  o.t = o.labels.size() == labels.size() ? t : t.as_strided(sizes, strides, t.storage_offset());
  return o;
}

// Sums the dims of o whose labels are not in `keep`.
void sum_unneeded(Operand& o, const Labels& keep) {
  DimVec dims;
  Labels rest;
  for (size_t d = 0; d < o.labels.size(); d++) {
    if (has(keep, o.labels[d])) rest.push_back(o.labels[d]);
    else dims.push_back(int64_t(d));
  }
  if (dims.empty()) return;
  o.t = o.t.sum(dims);
  o.labels = rest;
}

// A label present in both operands with size 1 on one side broadcasts: drop it from that side.
void squeeze_broadcast(Operand& a, Operand& b) {
  for (size_t i = 0; i < a.labels.size(); i++) {
    auto it = std::find(b.labels.begin(), b.labels.end(), a.labels[i]);
    if (it == b.labels.end()) continue;
    size_t j = size_t(it - b.labels.begin());
    int64_t sa = a.t.size(int64_t(i)), sb = b.t.size(int64_t(j));
    if (sa == sb) continue;
    Operand& one = sa == 1 ? a : b;
    size_t d = sa == 1 ? i : j;
    one.t = one.t.squeeze(int64_t(d));
    one.labels.erase(one.labels.begin() + int64_t(d));
    if (&one == &a) i--;
  }
}

DimVec positions(const Operand& o, const Labels& ls) {
  DimVec p;
  for (int l : ls) p.push_back(int64_t(std::find(o.labels.begin(), o.labels.end(), l) - o.labels.begin()));
  return p;
}

int64_t prod_sizes(const Tensor& t, const DimVec& dims, DimVec* into) {
  int64_t n = 1;
  for (int64_t d : dims) {
    n *= t.size(d);
    if (into) into->push_back(t.size(d));
  }
  return n;
}

// Contracts a and b over their shared labels not in `later`; the result's labels are
// batch + left-only + right-only.
Operand contract(Operand a, Operand b, const Labels& later) {
  squeeze_broadcast(a, b);
  Labels batch, sum, left, right;
  for (int l : a.labels) {
    if (has(b.labels, l)) (has(later, l) ? batch : sum).push_back(l);
    else left.push_back(l);
  }
  for (int l : b.labels)
    if (!has(a.labels, l)) right.push_back(l);
  Operand r;
  r.labels = batch;
  r.labels.insert(r.labels.end(), left.begin(), left.end());
  r.labels.insert(r.labels.end(), right.begin(), right.end());
  DimVec pb = positions(a, batch), pl = positions(a, left), pr = positions(b, right);
  DimVec out;
  int64_t nb = prod_sizes(a.t, pb, &out), m = prod_sizes(a.t, pl, &out), n = prod_sizes(b.t, pr, &out);
  if (sum.empty()) {
    DimVec sa = out, sb = out;
    for (size_t i = 0; i < right.size(); i++) sa[pb.size() + pl.size() + i] = 1;
    for (size_t i = 0; i < left.size(); i++) sb[pb.size() + i] = 1;
    DimVec perm_a = pb, perm_b = positions(b, batch);
    for (int64_t d : pl) perm_a.push_back(d);
    for (int64_t d : pr) perm_b.push_back(d);
    r.t = a.t.permute(perm_a).reshape(sa) * b.t.permute(perm_b).reshape(sb);
    return r;
  }
  DimVec ps_a = positions(a, sum), ps_b = positions(b, sum);
  int64_t k = prod_sizes(a.t, ps_a, nullptr);
  DimVec perm_a = pb, perm_b = positions(b, batch);
  for (int64_t d : pl) perm_a.push_back(d);
  for (int64_t d : ps_a) perm_a.push_back(d);
  for (int64_t d : ps_b) perm_b.push_back(d);
  for (int64_t d : pr) perm_b.push_back(d);
  Tensor a3 = a.t.permute(perm_a).reshape({nb, m, k});
  Tensor b3 = b.t.permute(perm_b).reshape({nb, k, n});
  r.t = bmm(a3, b3).view(out);
  return r;
}

}  // namespace

Tensor einsum(const std::string& equation, TensorList ts) {
  FW_CHECK(!ts.empty(), "[einsum] must provide at least one operand");
  Equation q = parse(equation, ts);
  check_sizes(q, ts);
  size_t n = ts.size();
  // needed_after[i]: labels of the output and of operands after i.
  std::vector<Labels> needed_after(n, q.out);
  for (size_t i = n - 1; i > 0; i--) {
    needed_after[i - 1] = needed_after[i];
    needed_after[i - 1].insert(needed_after[i - 1].end(), q.ops[i].begin(), q.ops[i].end());
  }
  Operand acc;
  for (size_t i = 0; i < n; i++) {
    Operand o = take_diagonals(ts[i], q.ops[i], i);
    Labels keep = needed_after[i];
    for (size_t j = 0; j < i; j++) keep.insert(keep.end(), q.ops[j].begin(), q.ops[j].end());
    sum_unneeded(o, keep);
    acc = i == 0 ? o : contract(acc, o, needed_after[i]);
  }
  sum_unneeded(acc, q.out);
  return acc.t.permute(positions(acc, q.out));
}

}  // namespace fw
