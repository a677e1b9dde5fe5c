#include "tests/linalg_records.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "tests/fixture.h"

namespace fwtest {

using fw::Tensor;

std::vector<RecordCase> load_kind(const std::string& file, const std::string& kind) {
  std::vector<RecordCase> r;
  for (auto& c : load_records(file, kind))
    if (c.kind == kind) r.push_back(c);
  EXPECT_FALSE(r.empty()) << kind;
  return r;
}

namespace {
// a * s with s = +-1 per column (cols) or per row so that a lines up with e.
Tensor align_signs(const Tensor& a, const Tensor& e, bool cols) {
  int64_t red = cols ? -2 : -1;
  Tensor s = fw::where((a * e).sum({red}, true) >= 0, 1.0, -1.0).to(a.dtype());
  return a * s;
}
Tensor first(const Tensor& t, int64_t dim, int64_t k) { return t.narrow(dim, 0, std::min(k, t.size(dim))); }
}  // namespace

void check_linalg_case(const RecordCase& c, const std::function<LinalgOuts(const LinalgIns&)>& fn,
                       const LinalgCheck& chk) {
  SCOPED_TRACE(c.kind + " " + c.name);
  LinalgIns in;
  std::vector<std::string> names;
  std::vector<Tensor> wrt;
  bool f32 = false;
  for (const auto& [k, v] : c.t) {
    if (k.rfind("in.", 0) != 0) continue;
    std::string n = k.substr(3);
    Tensor x = v.clone();
    if (x.dtype() == fw::kFloat) f32 = true;
    if (x.is_floating_point() && c.has("grad." + n)) {
      x.requires_grad_(true);
      names.push_back(n);
      wrt.push_back(x);
    }
    in[n] = x;
  }
  LinalgOuts out = fn(in);
  const double tol = (f32 ? 2e-4 : 1e-8) * chk.tol_scale;
  Tensor total;
  for (const auto& [k, v] : c.t) {
    if (k.rfind("out.", 0) != 0) continue;
    std::string n = k.substr(4);
    SCOPED_TRACE("out." + n);
    ASSERT_TRUE(out.count(n)) << "missing output " << n;
    Tensor a = out[n];
    ASSERT_EQ(a.sizes().vec(), v.sizes().vec());
    if ((chk.sign_cols.count(n) || chk.sign_rows.count(n)) && v.dim() >= 2) {
      bool cols = chk.sign_cols.count(n) > 0;
      int64_t d = cols ? -1 : -2;
      Tensor ak = first(a, d, chk.sign_keep), ek = first(v, d, chk.sign_keep);
      FW_EXPECT_CLOSE(align_signs(ak.detach(), ek, cols), ek, tol, tol);
    } else if (v.dtype() == fw::kLong) {
      FW_EXPECT_CLOSE(a.to(fw::kLong), v);
    } else {
      FW_EXPECT_CLOSE(a.detach(), v, tol, tol);
    }
    if (c.has("g." + n)) {
      Tensor g = c.get("g." + n);
      if (chk.gmap) g = chk.gmap(n, g);
      Tensor term = (a * g).sum();
      total = total.defined() ? total + term : term;
    }
  }
  if (!total.defined() || wrt.empty()) return;
  auto grads = fw::autograd::grad({total}, wrt, {}, std::nullopt, false, true);
  for (size_t i = 0; i < names.size(); i++) {
    SCOPED_TRACE("grad." + names[i]);
    Tensor gi = grads[i].defined() ? grads[i] : fw::zeros_like(wrt[i]);
    FW_EXPECT_CLOSE(gi, c.get("grad." + names[i]), 10 * tol, 10 * tol);
  }
}

}  // namespace fwtest
