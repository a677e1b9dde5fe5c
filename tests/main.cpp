// Test entry point: registers one OpTable.<op> test per primitive op in FW_OPS, then runs all.
#include <gtest/gtest.h>

#include <set>

#include <fw/jit.h>

#include "core/op.h"
#include "tests/op_table.h"

namespace {

// The same case through fw::compile (inductor): forward results against the fixture, and the
// gradients of a weighted sum of the float outputs against eager autograd.
void check_compiled(const fwtest::OpTest& t, const fwtest::FixCase& c, const std::vector<fw::Tensor>& eager) {
  auto run_with = [&](const std::vector<fw::Tensor>& ins) {
    fwtest::FixCase c2 = c;
    c2.in = ins;
    return t.run(c2);
  };
  auto f = fw::compile(run_with);
  std::vector<fw::Tensor> got;
  try {
    got = f(c.in);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "compiled: threw: " << e.what();
    return;
  }
  ASSERT_EQ(got.size(), c.out.size()) << "compiled: number of outputs";
  for (size_t k = 0; k < got.size(); k++) {
    std::string msg = fwtest::compare(got[k], c.out[k], t.rtol, t.atol);
    EXPECT_TRUE(msg.empty()) << "compiled: output " << k << ": " << msg;
  }
  // Backward: float inputs require grad (copies, so in-place ops on inputs stay legal).
  std::vector<fw::Tensor> ins, wrt;
  for (auto& x : c.in) {
    if (x.defined() && x.is_floating_point()) {
      fw::Tensor y = x.detach().clone().requires_grad_(true);
      ins.push_back(y);
      wrt.push_back(y);
    } else {
      ins.push_back(x);
    }
  }
  if (wrt.empty()) return;
  auto grads = [&](const std::vector<fw::Tensor>& outs) -> std::vector<fw::Tensor> {
    fw::Tensor loss;
    for (auto& o : outs) {
      if (!o.defined() || !o.requires_grad() || !o.is_floating_point()) continue;
      fw::Tensor w = fw::linspace(-1, 1, o.numel(), fw::kDouble).reshape(o.sizes());
      fw::Tensor term = (o.to(fw::kDouble) * w).sum();
      loss = loss.defined() ? loss + term : term;
    }
    if (!loss.defined()) return {};
    return fw::autograd::grad({loss}, wrt, {}, std::nullopt, false, /*allow_unused=*/true);
  };
  std::vector<fw::Tensor> ge;
  try {
    ge = grads(run_with(ins));
  } catch (const fw::Error&) {
    return;  // not differentiable this way in eager either (in-place on a leaf, no vjp...)
  }
  if (ge.empty()) return;
  std::vector<fw::Tensor> gc;
  try {
    auto fg = fw::compile(run_with);
    gc = grads(fg(ins));
  } catch (const std::exception& e) {
    ADD_FAILURE() << "compiled backward: threw: " << e.what();
    return;
  }
  ASSERT_EQ(gc.size(), ge.size());
  for (size_t k = 0; k < ge.size(); k++) {
    ASSERT_EQ(gc[k].defined(), ge[k].defined()) << "compiled: gradient " << k << " defined-ness";
    if (!ge[k].defined()) continue;
    double rtol = ge[k].dtype() == fw::kDouble ? 1e-7 : 1e-4, atol = ge[k].dtype() == fw::kDouble ? 1e-7 : 1e-4;
    std::string msg = fwtest::compare(gc[k], ge[k], rtol, atol);
    EXPECT_TRUE(msg.empty()) << "compiled: gradient " << k << ": " << msg;
  }
}

void run_op_table_entry(const std::string& op) {
  auto& tests = fwtest::op_tests();
  auto it = tests.find(op);
  ASSERT_TRUE(it != tests.end()) << "op '" << op << "' has no FW_OP_TEST entry in tests/ops/";
  const fwtest::OpTest& t = it->second;
  ASSERT_TRUE(bool(t.run)) << "op '" << op << "' entry has no run function";
  int cases = 0;
  for (const auto& c : fwtest::all_fixtures()) {
    if (c.op != op) continue;
    cases++;
    SCOPED_TRACE(c.file + ": case " + c.name);
    std::vector<fw::Tensor> got;
    try {
      got = t.run(c);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
      continue;
    }
    ASSERT_EQ(got.size(), c.out.size()) << "number of outputs";
    for (size_t k = 0; k < got.size(); k++) {
      std::string msg = fwtest::compare(got[k], c.out[k], t.rtol, t.atol);
      EXPECT_TRUE(msg.empty()) << "output " << k << ": " << msg;
    }
    check_compiled(t, c, got);
  }
  EXPECT_GT(cases, 0) << "op '" << op << "' has no fixture case (tests/fixtures/*.fix)";
  EXPECT_FALSE(t.errors.empty()) << "op '" << op << "' has no error case";
  const fw::detail::OpDef* defs = fw::detail::op_table_begin();
  for (int i = 0; i < fw::detail::kNumOps; i++)
    if (op == defs[i].name)
      EXPECT_TRUE(!defs[i].differentiable || defs[i].vjp)
          << "op '" << op << "' is differentiable but has no vjp (set d.vjp, or d.differentiable = false)";
  for (size_t k = 0; k < t.errors.size(); k++) {
    const auto& [fn, fragment] = t.errors[k];
    try {
      fn();
      ADD_FAILURE() << "error case " << k << " did not throw (expected '" << fragment << "')";
    } catch (const fw::Error& e) {
      EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos)
          << "error case " << k << ": message '" << e.what() << "' lacks '" << fragment << "'";
    } catch (const std::exception& e) {
      ADD_FAILURE() << "error case " << k << " threw a non-fw::Error: " << e.what();
    }
  }
}

void register_op_table() {
  const fw::detail::OpDef* defs = fw::detail::op_table_begin();
  for (int i = 0; i < fw::detail::kNumOps; i++) {
    std::string op = defs[i].name;
    testing::RegisterTest("OpTable", op.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                          [op]() -> testing::Test* {
                            struct T : testing::Test {
                              std::string op;
                              void TestBody() override { run_op_table_entry(op); }
                            };
                            auto* t = new T();
                            t->op = op;
                            return t;
                          });
  }
}

}  // namespace

// Every fixture and every FW_OP_TEST names an op that exists.
TEST(OpTableMeta, NamesAreKnownOps) {
  std::set<std::string> known;
  const fw::detail::OpDef* defs = fw::detail::op_table_begin();
  for (int i = 0; i < fw::detail::kNumOps; i++) known.insert(defs[i].name);
  for (const auto& c : fwtest::all_fixtures())
    EXPECT_TRUE(known.count(c.op)) << c.file << ": case " << c.name << " names unknown op " << c.op;
  for (const auto& [name, t] : fwtest::op_tests()) EXPECT_TRUE(known.count(name)) << "FW_OP_TEST for unknown op " << name;
}

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  register_op_table();
  return RUN_ALL_TESTS();
}
