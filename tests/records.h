// Line-record fixtures (tests/fixtures/*.txt written by gen_rnn_utils.py, gen_conv_pool_3d.py):
//   case <kind> <name>
//   a <key> <value>                            an option (the rest of the line)
//   t <key> <f32|f64|i64> <ndim> <sizes...> <values...>
//   end
#pragma once
#include <map>
#include <string>
#include <vector>

#include <fw/fw.h>

namespace fwtest {

struct RecordCase {
  std::string kind, name;
  std::map<std::string, std::string> opts;
  std::map<std::string, fw::Tensor> t;

  // The tensor `k`, undefined when the case has none.
  fw::Tensor get(const std::string& k) const { return t.count(k) ? t.at(k) : fw::Tensor(); }
  bool has(const std::string& k) const { return t.count(k) > 0; }
  const std::string& opt(const std::string& k) const { return opts.at(k); }
  bool none(const std::string& k) const { return opt(k) == "none"; }
  bool flag(const std::string& k) const { return opt(k) == "1"; }
  int64_t num(const std::string& k) const { return std::stoll(opt(k)); }
  double real(const std::string& k) const { return std::stod(opt(k)); }
  // A comma-separated option ("" is the empty list).
  std::vector<int64_t> ints(const std::string& k) const;
  // Tensors prefix0, prefix1, ... while present.
  std::vector<fw::Tensor> list(const std::string& prefix) const;
};

// The cases of tests/fixtures/<file> whose kind starts with kind_prefix (a test failure when
// the file is missing or nothing matches).
std::vector<RecordCase> load_records(const std::string& file, const std::string& kind_prefix);

}  // namespace fwtest
