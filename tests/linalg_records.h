// Record fixtures of the linear-algebra tests (tests/test_decomp.cpp, tests/test_decomp_more.cpp,
// written by gen_decomp.py / gen_decomp_more.py): inputs "in.<name>", outputs "out.<name>",
// cotangents "g.<name>" and the gradients "grad.<name>" of sum_k sum(out.k * g.k).
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <fw/fw.h>

#include "tests/records.h"

namespace fwtest {

using LinalgIns = std::map<std::string, fw::Tensor>;
using LinalgOuts = std::map<std::string, fw::Tensor>;

// The cases of `file` of exactly this kind (a test failure when there are none).
std::vector<RecordCase> load_kind(const std::string& file, const std::string& kind);

struct LinalgCheck {
  std::set<std::string> sign_cols, sign_rows;  // outputs compared up to column / row signs
  int64_t sign_keep = 1 << 30;                   // only the first this many columns (rows) of those
  double tol_scale = 1;                          // times 2e-4 (any float32 input) or 1e-8
  // Applied to g.<name> before use (e.g. to follow a reordering of the outputs).
  std::function<fw::Tensor(const std::string&, const fw::Tensor&)> gmap;
};

// Runs fn on the case's inputs (float ones with a grad.* record as leaves), compares the outputs
// (int64 exactly) and the gradients (10x the value tolerance).
void check_linalg_case(const RecordCase& c, const std::function<LinalgOuts(const LinalgIns&)>& fn,
                       const LinalgCheck& chk = {});

}  // namespace fwtest
