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

}  // namespace fwtest
