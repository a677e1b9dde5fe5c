#include "tests/records.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "tests/fixture.h"

namespace fwtest {

std::vector<int64_t> RecordCase::ints(const std::string& k) const {
  std::vector<int64_t> v;
  std::stringstream ss(opt(k));
  for (std::string e; std::getline(ss, e, ',');)
    if (!e.empty()) v.push_back(std::stoll(e));
  return v;
}

std::vector<fw::Tensor> RecordCase::list(const std::string& prefix) const {
  std::vector<fw::Tensor> v;
  for (size_t i = 0; t.count(prefix + std::to_string(i)); i++) v.push_back(t.at(prefix + std::to_string(i)));
  return v;
}

std::vector<RecordCase> load_records(const std::string& file, const std::string& kind_prefix) {
  std::ifstream f(std::string(FW_FIXTURE_DIR) + "/" + file);
  EXPECT_TRUE(f.good()) << "missing fixture " << file;
  std::vector<RecordCase> cases;
  bool keep = false;
  for (std::string line; std::getline(f, line);) {
    std::istringstream in(line);
    std::string tag, k;
    in >> tag;
    if (tag == "case") {
      RecordCase c;
      in >> c.kind >> c.name;
      keep = c.kind.rfind(kind_prefix, 0) == 0;
      if (keep) cases.push_back(c);
    } else if (keep && tag == "a") {
      in >> k;
      std::string v;
      std::getline(in >> std::ws, v);
      cases.back().opts[k] = v;
    } else if (keep && tag == "t") {
      in >> k;
      cases.back().t[k] = read_record_tensor(in);
    }
  }
  EXPECT_FALSE(cases.empty()) << "no " << kind_prefix << " cases in " << file;
  return cases;
}

int run_record_table(const std::string& file, const std::map<std::string, RecordFn>& table,
                     const RecordTolerances& tol) {
  int checked = 0;
  for (const auto& [kind, fn] : table) {
    for (const RecordCase& c : load_records(file, kind)) {
      if (c.kind != kind) continue;
      SCOPED_TRACE(c.kind + " " + c.name);
      RecordInputs in;
      std::vector<fw::Tensor> leaves;
      std::vector<std::string> names;
      for (const auto& [k, v] : c.t) {
        if (k[0] == 'y' || k == "g" || k.rfind("grad.", 0) == 0) continue;
        in[k] = v.clone();
        if (c.has("grad." + k)) {
          in[k].requires_grad_(true);
          leaves.push_back(in[k]), names.push_back(k);
        }
      }
      std::vector<fw::Tensor> ys = fn(c, in);
      EXPECT_EQ(ys.size(), c.list("y").size()) << "number of outputs";
      for (size_t i = 0; i < ys.size(); i++) {
        fw::Tensor want = c.get("y" + std::to_string(i));
        if (!want.defined()) {
          ADD_FAILURE() << "the fixture has no y" << i;
          continue;
        }
        SCOPED_TRACE("y" + std::to_string(i));
        EXPECT_EQ(ys[i].sizes().vec(), want.sizes().vec());
        if (want.dtype() == fw::kLong) {
          EXPECT_TRUE(fw::equal(ys[i].to(fw::kLong), want)) << ys[i] << "\nwant\n" << want;
        } else {
          const double t = want.dtype() == fw::kFloat ? tol.f32 : tol.f64;
          FW_EXPECT_CLOSE(ys[i], want, t, t);
        }
      }
      if (!leaves.empty()) {
        auto grads = fw::autograd::grad({(ys[0] * c.get("g")).sum()}, leaves);
        for (size_t i = 0; i < leaves.size(); i++) {
          SCOPED_TRACE("grad." + names[i]);
          const fw::Tensor want = c.get("grad." + names[i]);
          const double t = want.dtype() == fw::kFloat ? tol.grad_f32 : tol.grad_f64;
          FW_EXPECT_CLOSE(grads[i], want, t, t);
        }
      }
      checked++;
    }
  }
  return checked;
}

}  // namespace fwtest
