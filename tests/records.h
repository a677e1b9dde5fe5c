// Line-record fixtures (tests/fixtures/*.txt written by gen_rnn_utils.py, gen_conv_pool_3d.py):
//   case <kind> <name>
//   a <key> <value>                            an option (the rest of the line)
//   t <key> <f32|f64|i64> <ndim> <sizes...> <values...>
//   end
#pragma once
#include <functional>
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

// A table of fw calls, one per record kind, each producing the case's outputs y0, y1, ... from
// its inputs (every tensor but y*, g and grad.*; those with a grad.<name> require grad).
using RecordInputs = std::map<std::string, fw::Tensor>;
using RecordFn = std::function<std::vector<fw::Tensor>(const RecordCase&, const RecordInputs&)>;
struct RecordTolerances {
  double f32 = 1e-5, f64 = 1e-10, grad_f32 = 1e-6, grad_f64 = 1e-9;
};
// Runs the cases of `file` for every kind of the table: integer outputs must match exactly,
// float ones within the tolerances (relative and absolute), and the gradients of sum(y0 * g)
// w.r.t. the grad.* inputs too. Returns the number of cases checked.
int run_record_table(const std::string& file, const std::map<std::string, RecordFn>& table,
                     const RecordTolerances& tol = {});

}  // namespace fwtest
