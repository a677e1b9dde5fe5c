// The inductor-style CPU backend: schedules a Graph into fused loop kernels and extern calls,
// emits readable C++/OpenMP, compiles it once per graph (codegen/compiler.cpp) and runs it.
//
// Note [Loop kernels]
// Three loop forms cover what is fused today (the third, row kernels, has its own note):
//  * Pointwise: one iteration space (the members' common output shape); every buffer the kernel
//    reads or writes is addressed by (base pointer, strides) passed at run time, so broadcasts are
//    zero strides, views need no copy, and one compiled kernel serves every size (dynamic shapes
//    re-trace but never recompile). The runner coalesces dimensions that are contiguous for every
//    buffer, so the common case is one long row. Work is cut into rows x blocks of fw::kernel::B elements;
//    each block is loaded into small arrays, every member op runs as one loop over the block (the
//    compiler vectorises the arithmetic, erf/exp/sigmoid/silu included; float32 log, tanh, sin...
//    call fw's SLEEF loops, the same ones eager uses), and materialised values are stored.
//    OpenMP splits the blocks.
//  * Reduction: a pointwise group with the sum/mean/amax/amin reductions that read it, over any
//    set of dims, in row or column form (Note [Reduction kernels]); prologue values needed
//    elsewhere are stored in the same pass. Reductions of the last dim go to row kernels instead
//    (Note [Row kernels]), where later ops may read them.
// Everything else is an extern step: the op runs through the dispatch door with its eager kernel
// (GEMM, convolution, views, softmax, random ops...). An empty iteration space runs the member
// ops eagerly, which know what an empty reduction gives.
//
// Note [What fuses]
// A node fuses when it is an elementwise op with a shared scalar functor (core/functors.h), its
// tensor inputs share one dtype T in {float32, float64} (or int64/int32/bool for the integer-safe
// ops), and its result is T or bool; `copy` casts between those dtypes; `where` selects. Singletons
// (a group of one op with no reduction) stay eager: fw's eager kernel is already one pass.
#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_map>

#include "codegen/compiler.h"
#include "codegen/kernel_prelude.h"
#include "core/layout.h"
#include "core/op.h"
#include "core/ops/gemm.h"
#include "jit/log.h"
#include "jit/program.h"

namespace fw::jit {

using namespace fw::detail;
namespace cg = fw::codegen;

namespace {

constexpr uint32_t kKeepDim = 1;          // reductions

// Note [Bool buffers in kernels]
// Generated code holds bool tensors and bool intermediates as uint8_t (fw's bool storage is one
// byte, 0 or 1) and converts each read to bool (static_cast<bool>, i.e. != 0). GCC 12 does not
// vectorise loops that load C++ bool (a select on a bool mask, a logical_and of two masks), but
// it vectorises the same loops over uint8_t; results written as bool convert back to 0/1.
const char* ctype(ScalarType t);
const char* stype(ScalarType t) { return t == kBool ? "uint8_t" : ctype(t); }

const char* ctype(ScalarType t) {
  switch (t) {
    case kFloat: return "float";
    case kDouble: return "double";
    case kLong: return "int64_t";
    case kInt: return "int32_t";
    case kBool: return "bool";
    default: return nullptr;
  }
}

std::string literal(const Scalar& s, ScalarType t) {
  char buf[64];
  if (t == kBool) return s.toLong() != 0 || (s.isFloatingPoint() && s.toDouble() != 0) ? "true" : "false";
  if (t == kLong || t == kInt) {
    std::snprintf(buf, sizeof buf, "%s(%lldLL)", ctype(t), (long long)s.toLong());
    return buf;
  }
  double v = s.toDouble();
  if (v != v) return std::string("std::numeric_limits<") + ctype(t) + ">::quiet_NaN()";
  if (v == INFINITY) return std::string("std::numeric_limits<") + ctype(t) + ">::infinity()";
  if (v == -INFINITY) return std::string("-std::numeric_limits<") + ctype(t) + ">::infinity()";
  std::snprintf(buf, sizeof buf, "%s(%a)", ctype(t), v);
  return buf;
}

std::string dbl(double v) {
  char buf[64];
  if (v != v) return "std::numeric_limits<double>::quiet_NaN()";
  if (v == INFINITY) return "std::numeric_limits<double>::infinity()";
  if (v == -INFINITY) return "-std::numeric_limits<double>::infinity()";
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}

// The functor object for an elementwise node, or "" when the op does not fuse.
std::string functor_object(const Node& n) {
  const OpDef& d = op_def(n.op);
  std::string f = d.functor;
  const OpAttrs& a = n.attrs;
  if (f == "Add") {
    if (a.s1.isComplex()) return "";
    return "fw::fn::Add{" + dbl(a.s1.toDouble()) + ", 0.0}";
  }
  if (f == "Elu") return "fw::fn::Elu{" + dbl(a.f0) + ", " + dbl(a.f1) + ", " + dbl(a.f2) + "}";
  if (f == "LeakyRelu") return "fw::fn::LeakyRelu{" + dbl(a.f0) + "}";
  if (f == "Hardtanh") return "fw::fn::Hardtanh{" + dbl(a.f0) + ", " + dbl(a.f1) + "}";
  if (f == "Softplus") return "fw::fn::Softplus{" + dbl(a.f0) + ", " + dbl(a.f1) + "}";
  if (f == "Logit") return "fw::fn::Logit{" + dbl(a.f0) + "}";
  if (f == "Polygamma") return "fw::fn::Polygamma{" + dbl(double(a.i0)) + "}";
  if (f == "NanToNum") return "fw::fn::NanToNum{" + dbl(a.f0) + ", " + dbl(a.f1) + ", " + dbl(a.f2) + "}";
  if (f == "Addcmul" || f == "Addcdiv") return "fw::fn::" + f + "{" + dbl(a.f0) + "}";
  if (f == "ClampScalar") {
    if (a.s0.isComplex() || a.s1.isComplex()) return "";
    // Integer bounds exactly (a double loses int64 values past 2^53), written so that INT64_MIN
    // is no overflowing literal.
    auto i64 = [](const Scalar& s) {
      int64_t v = s.isIntegral(true) ? s.toLong() : 0;
      return v == std::numeric_limits<int64_t>::min() ? std::string("(-9223372036854775807LL - 1)")
                                                     : "(" + std::to_string(v) + "LL)";
    };
    return "fw::fn::ClampScalar{" + dbl(a.s0.toDouble()) + ", " + dbl(a.s1.toDouble()) + ", " +
           ((a.flags & 1) ? "true" : "false") + ", " + ((a.flags & 2) ? "true" : "false") + ", " + i64(a.s0) + ", " +
           i64(a.s1) + "}";
  }
  static const std::set<std::string> plain = {
      "Exp", "Exp2", "Expm1", "Log", "Log2", "Log10", "Log1p", "Sqrt", "Rsqrt", "Neg", "Sign", "Floor",
      "Ceil", "Round", "Trunc", "Frac", "Reciprocal", "Sin", "Cos", "Tan", "Asin", "Acos", "Atan", "Sinh",
      "Cosh", "Tanh", "Sigmoid", "Erf", "Erfc", "Lgamma", "Digamma", "Erfinv", "Asinh", "Acosh", "Atanh", "Relu", "Gelu", "GeluTanh", "Silu", "Mish", "LogSigmoid",
      "Hardsigmoid", "Hardswish", "IsNan", "IsInf", "IsPosInf", "IsNegInf", "IsFinite", "Signbit",
      "LogicalNot", "BitwiseNot", "Mul", "Div", "Atan2", "Hypot", "Copysign", "Xlogy", "Pow", "Maximum",
      "Minimum", "Fmax", "Fmin", "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "LogicalAnd", "LogicalOr",
      "LogicalXor", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "Lerp", "Remainder", "Fmod"};
  if (plain.count(f)) return "fw::fn::" + f + "{}";
  return "";
}

// Ops that are safe on integer (and bool) dtypes with the functor's C++ semantics (no division,
// no negative-power checks that eager performs).
bool integer_safe(const std::string& f) {
  static const std::set<std::string> ok = {"Add", "Mul", "Neg", "Relu", "Maximum", "Minimum", "ClampScalar",
                                           "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "LogicalAnd", "LogicalOr",
                                           "LogicalXor", "LogicalNot", "BitwiseAnd", "BitwiseOr", "BitwiseXor",
                                           "BitwiseNot", "Sign"};
  return ok.count(f) != 0;
}

// Functors whose float loops call SLEEF through fw::detail::VecF32 (core/vec_math.cpp). Erf, Gelu,
// Exp, Sigmoid and Silu are not among them: their functors are plain arithmetic that vectorises
// inline (erf_f32 and exp_f32 in core/functors.h) and give the same floats as VecF32's loop,
// without the call and its buffer.
bool vec_f32(const std::string& f) {
  static const std::set<std::string> ok = {"Log", "Tanh", "GeluTanh", "Log10", "Log2", "Log1p", "Expm1", "Sin", "Cos"};
  return ok.count(f) != 0;
}

enum class ArgKind { Load, Value, Literal };
struct Arg {
  ArgKind kind;
  int id = 0;  // Load: value id of the buffer; Value: value id
  std::string lit;
  const char* cast = nullptr;  // converted to this C type first (eager's type promotion)
};

struct PwOp {
  int node;
  std::string expr_head;  // functor object, or "" for the special forms below
  enum Form { Functor, Cast, Where, VecCall } form = Functor;
  std::vector<Arg> args;
  ScalarType in_t = kFloat, out_t = kFloat;
};

// Whether a scalar operand may be a literal of compute type t: eager computes in t too. A floating
// scalar with an integer tensor computes in floating point (x == 2.5 is false for every integer
// x; as an int64_t literal it was x == 2), a number with a bool tensor in integers (b == 2).
bool literal_in(const Scalar& s, ScalarType t) {
  if (s.isComplex()) return false;
  if (t == kBool) return s.isBoolean();
  if (t == kLong || t == kInt) return !s.isFloatingPoint();
  return true;
}

// Whether node n fuses as a pointwise op; fills op.
bool pointwise(const Graph& g, int ni, PwOp& op) {
  const Node& n = g.nodes[ni];
  const OpDef& d = op_def(n.op);
  if (d.kind != OpKind::Elementwise || n.out.size() != 1) return false;
  const ValueInfo& out = g.values[n.out[0]];
  if (!ctype(out.dtype)) return false;
  op.node = ni;
  op.out_t = out.dtype;
  auto tensor_arg = [&](int v) {  // bool reads convert from uint8_t (Note [Bool buffers in kernels])
    return Arg{ArgKind::Value, v, "", g.values[v].dtype == kBool ? "bool" : nullptr};
  };
  if (n.op == OpId::copy) {
    if (n.in.size() != 1 || !ctype(g.values[n.in[0]].dtype)) return false;
    op.form = PwOp::Cast;
    op.in_t = g.values[n.in[0]].dtype;
    op.args = {tensor_arg(n.in[0])};
    return true;
  }
  if (n.op == OpId::where) {
    if (g.values[n.in[0]].dtype != kBool) return false;
    ScalarType t = out.dtype;
    if (t == kBool) return false;
    op.form = PwOp::Where;
    op.in_t = t;
    size_t next = 1;
    op.args = {tensor_arg(n.in[0])};
    for (int k = 0; k < 2; k++) {
      bool scalar = n.attrs.flags & (1u << k);
      if (scalar) {
        const Scalar& s = k == 0 ? n.attrs.s0 : n.attrs.s1;
        if (!literal_in(s, t)) return false;
        op.args.push_back({ArgKind::Literal, 0, literal(s, t)});
      } else {
        if (next >= n.in.size()) return false;
        ScalarType at = g.values[n.in[next]].dtype;
        if (at != t && (!(t == kFloat || t == kDouble) || !ctype(at))) return false;
        op.args.push_back(tensor_arg(n.in[next++]));
        if (at != t) op.args.back().cast = ctype(t);
      }
    }
    return true;
  }
  if (!d.functor) return false;
  std::string obj = functor_object(n);
  if (obj.empty()) return false;
  if (n.in.empty()) return false;
  // Inputs share one dtype T, or the result is floating and every input converts to it (eager
  // promotes the operands to the result type and computes there: a bool mask times a float...).
  ScalarType t = g.values[n.in[0]].dtype;
  bool mixed = false;
  for (int v : n.in) mixed = mixed || g.values[v].dtype != t;
  if (mixed) {
    if (out.dtype != kFloat && out.dtype != kDouble) return false;
    for (int v : n.in)
      if (!ctype(g.values[v].dtype)) return false;
    t = out.dtype;
  }
  std::string f = d.functor;
  bool is_float = t == kFloat || t == kDouble;
  if (!is_float && !(t == kLong || t == kInt || t == kBool)) return false;
  if (!is_float && !integer_safe(f)) return false;
  if (t == kBool && f != "Eq" && f != "Ne" && f.rfind("Logical", 0) != 0 && f.rfind("Bitwise", 0) != 0) return false;
  if (out.dtype != t && out.dtype != kBool) return false;
  op.in_t = t;
  op.expr_head = obj;
  for (int v : n.in) {
    op.args.push_back(tensor_arg(v));
    if (g.values[v].dtype != t) op.args.back().cast = ctype(t);
  }
  // A scalar operand: binary ops with kScalarRhs, ternary ops given two tensors.
  const char* name = d.name;
  bool ternary = f == "Lerp" || f == "Addcmul" || f == "Addcdiv";
  if (ternary && n.in.size() == 2) {
    if (!literal_in(n.attrs.s0, t)) return false;
    op.args.push_back({ArgKind::Literal, 0, literal(n.attrs.s0, t)});
  } else if (!ternary && (n.attrs.flags & kScalarRhs) && std::strcmp(name, "clamp_scalar") != 0) {
    if (!literal_in(n.attrs.s0, t)) return false;
    std::string lit = literal(n.attrs.s0, t);
    if (f == "Pow" && is_float) lit = "fw::kernel::opaque(" + lit + ")";  // no pow -> sqrt rewrite
    op.args.push_back({ArgKind::Literal, 0, lit});
  }
  if (t == kFloat && out.dtype == kFloat && op.args.size() == 1 && !op.args[0].cast && vec_f32(f))
    op.form = PwOp::VecCall;
  return true;
}

enum class RedKind { Sum, Mean, Max, Min };

struct Kernel {
  std::string name;
  std::vector<PwOp> ops;
  std::vector<int> loads;   // buffer values read (slot order)
  std::vector<int> stores;  // values written
  DimVec shape;             // iteration shape
  // Reduction kernels (Note [Reduction kernels]): reductions over the same dims of `shape`,
  // each reading a value of the group or a load.
  bool reduction = false;
  struct Red {
    int node, in, out;
    RedKind kind;
    ScalarType t;
  };
  std::vector<Red> reds;
  std::vector<char> reduced;  // per dim of shape
  // Row kernels (Note [Row kernels]): ops over rows of the last dimension, with reductions to
  // per-row scalars that later ops of the same row read.
  bool row = false;
  struct RowOp {
    enum Kind { Vec, Scal, Red } kind;
    PwOp op;  // Vec / Scal
    RedKind red = RedKind::Sum;
    int node = -1, in = -1, out = -1;  // Red: the node, its input and output values
  };
  std::vector<RowOp> rops;
  std::set<int> vec_values, scalar_values;  // produced inside
  std::set<int> nokeep;                     // per-row scalars without the kept last dim
  std::set<int> scalar_loads;               // loads read once per row
};

bool reduction_node(const Graph& g, int ni, RedKind& k, std::vector<char>& reduced) {
  const Node& n = g.nodes[ni];
  switch (n.op) {
    case OpId::sum: k = RedKind::Sum; break;
    case OpId::mean: k = RedKind::Mean; break;
    case OpId::amax: k = RedKind::Max; break;
    case OpId::amin: k = RedKind::Min; break;
    default: return false;
  }
  const ValueInfo& in = g.values[n.in[0]];
  const ValueInfo& out = g.values[n.out[0]];
  if (in.dtype != out.dtype || (in.dtype != kFloat && in.dtype != kDouble)) return false;
  if (n.attrs.has_dtype() && n.attrs.dtype != in.dtype) return false;
  int64_t r = int64_t(in.sizes.size());
  if (r == 0) return false;
  reduced.assign(r, 0);
  if (n.attrs.ints.empty()) reduced.assign(r, 1);
  for (int64_t d : n.attrs.ints) reduced[d < 0 ? d + r : d] = 1;
  return true;
}

// A reduction over exactly the last dimension of a float tensor with more than one column.
bool last_dim_reduction(const Graph& g, int ni, RedKind& k) {
  std::vector<char> reduced;
  if (!reduction_node(g, ni, k, reduced)) return false;
  const ValueInfo& in = g.values[g.nodes[ni].in[0]];
  for (size_t d = 0; d + 1 < reduced.size(); d++)
    if (reduced[d]) return false;
  return reduced.back() && in.sizes.back() > 1;
}

// A row kernel gives each thread whole rows, so a single row (a vector's sum, or a tensor whose
// other dims are all 1) would run on one thread; the reduction kernel's split serial range keeps
// every thread busy instead. Only size-1 dims decide this (they are specialised anyway), so a
// family of captures with dynamic sizes keeps one kernel source (Note [Guards and dynamic shapes]).
bool one_row(const DimVec& sizes) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < sizes.size(); d++) rows *= sizes[d];
  return rows == 1;
}

std::string kernel_name(const Graph& g, const Kernel& k, size_t idx) {
  std::string s = "fused";
  int shown = 0;
  std::vector<int> nodes;
  for (auto& op : k.ops) nodes.push_back(op.node);
  for (auto& r : k.reds) nodes.push_back(r.node);
  if (k.row) {
    nodes.clear();
    for (auto& r : k.rops) nodes.push_back(r.kind == Kernel::RowOp::Red ? r.node : r.op.node);
  }
  for (int ni : nodes) {
    if (shown++ == 6) {
      s += "_etc";
      break;
    }
    s += "_";
    s += op_def(g.nodes[ni].op).name;
  }
  return s + "_" + std::to_string(idx);
}

// The code of an emitted kernel up to names (Note [Shared kernel code]): comments dropped, the
// kernel's name replaced, and identifiers of one or two lower-case letters and digits (t12,
// v12, x0, p1: locals named after value ids or buffer slots) renumbered in order of first
// appearance. Calls (an identifier before '(') and qualified or member names keep theirs, and
// numbers stay as written (the x1 of the hex float 0x1.8p+1 is not a name).
std::string canonical_kernel_code(const std::string& code, const std::string& name) {
  std::string out;
  out.reserve(code.size());
  std::unordered_map<std::string, int> ids;
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  const size_t n = code.size();
  for (size_t i = 0; i < n;) {
    if (code.compare(i, 2, "//") == 0) {  // to the end of the line
      while (i < n && code[i] != '\n') i++;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(code[i]))) {  // a number (0x1.8p+1, 1e-05f, 42LL): verbatim
      size_t j = i + 1;
      while (j < n && (ident(code[j]) || code[j] == '.' ||
                       ((code[j] == '+' || code[j] == '-') && std::strchr("eEpP", code[j - 1]) != nullptr)))
        j++;
      out.append(code, i, j - i);
      i = j;
      continue;
    }
    if (!(std::isalpha(static_cast<unsigned char>(code[i])) || code[i] == '_')) {
      out += code[i++];
      continue;
    }
    size_t j = i;
    while (j < n && ident(code[j])) j++;
    std::string tok = code.substr(i, j - i);
    size_t letters = 0;
    while (letters < tok.size() && std::islower(static_cast<unsigned char>(tok[letters]))) letters++;
    const bool local_like = letters >= 1 && letters <= 2 && letters < tok.size() &&
                            std::all_of(tok.begin() + letters, tok.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
    const bool qualified = (i >= 2 && code.compare(i - 2, 2, "::") == 0) || (i >= 1 && code[i - 1] == '.') ||
                           (i >= 2 && code.compare(i - 2, 2, "->") == 0);
    const bool call = j < n && code[j] == '(';
    if (tok == name) {
      out += "KERNEL";
    } else if (local_like && !qualified && !call) {
      auto it = ids.emplace(tok, int(ids.size())).first;
      out += tok.substr(0, letters) + "#" + std::to_string(it->second);
    } else {
      out += tok;
    }
    i = j;
  }
  return out;
}

// ---- emission

void emit_prelude(std::ostream& os) {
  os << "// Generated by fw::compile (codegen/cpp_backend.cpp). Each kernel is one fused loop nest;\n"
        "// the comment above it lists the graph nodes it computes; par_for splits the outer loop\n"
        "// over fw's thread pool (the workers eager kernels use).\n"
        "#include \"codegen/kernel_prelude.h\"\n\n"
        "using namespace fw::kernel;\n\n";
}

std::string arg_ref(const Arg& a, const std::map<int, int>& slot, const std::set<int>& temps = {}) {
  if (a.kind == ArgKind::Literal) return a.lit;
  auto it = slot.find(a.id);
  std::string r = it != slot.end() ? "p" + std::to_string(it->second) + "[j]"
                  : temps.count(a.id)  ? "t" + std::to_string(a.id)
                                       : "v" + std::to_string(a.id) + "[j]";
  return a.cast ? std::string("static_cast<") + a.cast + ">(" + r + ")" : r;
}

bool may_end_in_a_product(const Graph& g, const PwOp& op);
bool may_add_an_operand(const Graph& g, const PwOp& op);

// Note [One loop per block]
// The ops of a pointwise block run in one j-loop, each value a local (`t5`) that the next op
// reads from a register. A value gets a B-element array (`v5[j] = t5`) only where something
// outside its loop reads it: a store (written straight into the output when that is
// contiguous), a reduction after the block (`keep`), a VecF32 call (SLEEF loops take arrays and
// run between two loops), an op in a later loop, or an op of the same loop that may add it when
// it may end in a product: the array store is a second use of the product, which keeps GCC from
// contracting product and add into one FMA (eager rounds them separately; see row_segments); an
// empty asm after the loop that takes the array keeps that store from being deleted as dead.
// Before, each op had its own loop over B-element arrays: the same floats, but every
// intermediate went through L1. W2 compiled (gelu(x * w + b), 16M floats, AVX2 host, compare.sh):
// 15.5 ms with a loop per op and gelu through VecF32, 9.1 ms with one loop and gelu inline.
void emit_block(std::ostream& os, const Graph& g, const Kernel& k, const std::string& ind, int buf0,
                const std::set<int>& keep = {}) {
  std::map<int, int> slot, store_slot;
  for (size_t i = 0; i < k.loads.size(); i++) slot[k.loads[i]] = int(i);
  for (size_t i = 0; i < k.stores.size(); i++) store_slot[k.stores[i]] = int(i);
  int ns = int(k.stores.size());
  for (size_t i = 0; i < k.loads.size(); i++) {
    const char* t = stype(g.values[k.loads[i]].dtype);
    int b = buf0 + ns + int(i);
    os << ind << t << " x" << i << "[B];\n"
       << ind << "const " << t << "* __restrict p" << i << " = x" << i << ";\n"
       << ind << "if (s[" << b << "] == 1) p" << i << " = i" << i << " + base[" << b << "] + c;\n"
       << ind << "else load(x" << i << ", i" << i << " + base[" << b << "] + c * s[" << b << "], s[" << b << "], m);\n";
  }
  // Loops: a VecCall op is a segment of its own, the ops between them share one loop.
  const size_t nops = k.ops.size();
  std::vector<int> seg(nops);
  std::map<int, size_t> op_of;  // value -> the op computing it
  int sg = 0;
  for (size_t i = 0; i < nops; i++) {
    bool vc = k.ops[i].form == PwOp::VecCall;
    if (vc && i > 0) sg++;
    seg[i] = sg;
    if (vc) sg++;
    op_of[g.nodes[k.ops[i].node].out[0]] = i;
  }
  std::set<int> arr(keep.begin(), keep.end());
  for (int v : k.stores) arr.insert(v);
  std::set<int> guard;  // products stored only to keep them out of an FMA
  for (size_t i = 0; i < nops; i++)
    for (const Arg& a : k.ops[i].args) {
      if (a.kind != ArgKind::Value || slot.count(a.id)) continue;
      const size_t p = op_of.at(a.id);
      if (k.ops[i].form == PwOp::VecCall || seg[p] != seg[i]) arr.insert(a.id);
      else if (may_add_an_operand(g, k.ops[i]) && may_end_in_a_product(g, k.ops[p])) guard.insert(a.id);
    }
  for (int v : guard) arr.insert(v);
  auto declare_array = [&](const PwOp& op) {
    int v = g.nodes[op.node].out[0];
    const char* ot = stype(op.out_t);
    auto st = store_slot.find(v);
    if (st != store_slot.end()) {  // stored: computed straight into the output when it is contiguous
      int b = buf0 + st->second;
      os << ind << ot << " w" << v << "[B];\n"
         << ind << ot << "* __restrict v" << v << " = s[" << b << "] == 1 ? o" << st->second << " + base[" << b
         << "] + c : w" << v << ";\n";
    } else {
      os << ind << ot << " v" << v << "[B];\n";
    }
  };
  std::set<int> temps;  // values of the open loop held in locals
  for (size_t i = 0; i < nops; i++) {
    const PwOp& op = k.ops[i];
    const Node& n = g.nodes[op.node];
    int v = n.out[0];
    if (op.form == PwOp::VecCall) {
      os << ind << "// " << op_def(n.op).name << " -> %" << v << "\n";
      declare_array(op);
      std::string a = slot.count(op.args[0].id) ? "p" + std::to_string(slot.at(op.args[0].id))
                                                 : "v" + std::to_string(op.args[0].id);
      std::string f = op.expr_head.substr(0, op.expr_head.size() - 2);
      os << ind << "fw::detail::VecF32<" << f << ">::run(" << a << ", v" << v << ", m);\n";
      continue;
    }
    if (i == 0 || seg[i - 1] != seg[i]) {  // open the loop: arrays of its values first
      for (size_t q = i; q < nops && seg[q] == seg[i]; q++)
        if (arr.count(g.nodes[k.ops[q].node].out[0])) declare_array(k.ops[q]);
      os << ind << "for (int64_t j = 0; j < m; j++) {\n";
      temps.clear();
    }
    const char* ot = stype(op.out_t);
    std::string e;
    if (op.form == PwOp::Cast) {
      std::string a = arg_ref(op.args[0], slot, temps);
      e = op.out_t == kBool ? "(" + a + " != 0)" : std::string("static_cast<") + ot + ">(" + a + ")";
    } else if (op.form == PwOp::Where) {
      e = "(" + arg_ref(op.args[0], slot, temps) + " ? " + arg_ref(op.args[1], slot, temps) + " : " +
          arg_ref(op.args[2], slot, temps) + ")";
    } else {
      e = op.expr_head + "(";
      for (size_t a = 0; a < op.args.size(); a++) e += (a ? ", " : "") + arg_ref(op.args[a], slot, temps);
      e += ")";
    }
    os << ind << "  const " << ot << " t" << v << " = " << e << ";  // " << op_def(n.op).name << "\n";
    if (arr.count(v)) os << ind << "  v" << v << "[j] = t" << v << ";\n";
    temps.insert(v);
    if (i + 1 == nops || seg[i + 1] != seg[i]) {
      os << ind << "}\n";
      // The guard arrays are never read: without this GCC drops their stores as dead and then
      // contracts the products after all.
      for (size_t q = i + 1; q-- > 0 && seg[q] == seg[i];) {
        int u = g.nodes[k.ops[q].node].out[0];
        if (guard.count(u)) os << ind << "asm volatile(\"\" : : \"r\"(v" << u << ") : \"memory\");\n";
      }
    }
  }
  for (size_t i = 0; i < k.stores.size(); i++) {
    int b = buf0 + int(i);
    int v = k.stores[i];
    if (slot.count(v)) {  // a loaded value returned as is (cannot happen for op outputs)
      os << ind << "store(o" << i << " + base[" << b << "] + c * s[" << b << "], p" << slot.at(v) << ", s[" << b
         << "], m);\n";
      continue;
    }
    os << ind << "if (s[" << b << "] != 1) store(o" << i << " + base[" << b << "] + c * s[" << b << "], v" << v
       << ", s[" << b << "], m);\n";
  }
}

// Bytes per element of a row kernel's row-long stores (Note [Streaming stores]).
int64_t store_bytes(const Graph& g, const Kernel& k) {
  int64_t n = 0;
  for (int v : k.stores)
    if (!k.scalar_values.count(v)) n += int64_t(element_size(g.values[v].dtype));
  return n;
}

void emit_row_kernel(std::ostream& os, const Graph& g, const Kernel& k);

void emit_member_comments(std::ostream& os, const Graph& g, const Kernel& k) {
  for (const PwOp& op : k.ops) {
    const Node& n = g.nodes[op.node];
    os << "//   %" << n.out[0] << " = " << op_def(n.op).name << "(";
    for (size_t i = 0; i < n.in.size(); i++) os << (i ? ", %" : "%") << n.in[i];
    std::string at = op_attrs_str(n.op, n.attrs);
    os << (at.empty() ? "" : "; " + at) << ")\n";
  }
  for (const Kernel::Red& r : k.reds) {
    const Node& n = g.nodes[r.node];
    std::string at = op_attrs_str(n.op, n.attrs);
    os << "//   %" << r.out << " = " << op_def(n.op).name << "(%" << r.in << (at.empty() ? "" : "; " + at) << ")\n";
  }
}

// The buffer pointers: [first, first + stores) are the stores o0.., then the loads i0...
void emit_buffer_pointers(std::ostream& os, const Graph& g, const Kernel& k, int first) {
  for (size_t i = 0; i < k.stores.size(); i++) {
    const char* t = stype(g.values[k.stores[i]].dtype);
    os << "  " << t << "* __restrict o" << i << " = static_cast<" << t << "*>(P[" << first + int(i) << "]);\n";
  }
  for (size_t i = 0; i < k.loads.size(); i++) {
    const char* t = stype(g.values[k.loads[i]].dtype);
    os << "  const " << t << "* __restrict i" << i << " = static_cast<const " << t << "*>(P["
       << first + int(k.stores.size() + i) << "]);\n";
  }
}

// Emits the loop that adds, for index `rem` over dims from..to (innermost first, counting down),
// each dim's offset to base[0..n) of the buffers (the kernel ABI's S sizes and ST strides).
void emit_offsets(std::ostream& os, const std::string& ind, int n, const char* from, const char* to,
                  const std::string& rem) {
  os << ind << "for (int64_t d = " << from << ", rem = " << rem << "; d >= " << to << "; d--) {\n"
     << ind << "  const int64_t id = rem % S[d];\n" << ind << "  rem /= S[d];\n"
     << ind << "  for (int b = 0; b < " << n << "; b++) base[b] += id * ST[b * R + d];\n" << ind << "}\n";
}

// Note [Reduction kernels]
// A pointwise group with the reductions (sum/mean/amax/amin) that read it, all over the same
// dims of one shape: one pass over the group's elements computes the prologue, stores the values
// needed elsewhere and folds each reduction's input into per-lane accumulators (double for float
// sums), so BN-style statistics (sum(g) and sum(g * xhat) over N, H, W) or a bias gradient next
// to the masked gradient it sums cost one read. The runner orders the dims as
//   [parallel kept dims (RA) | serial dims | one inner dim]
// and picks, from the buffers' strides, which dim is inner:
//  * row form: the inner dim is the last reduced one; the kept dims are parallel. Each output
//    folds its blocks lane-wise into acc[B], then across lanes.
//  * column form: the inner dim is kept (a sum over rows keeping the contiguous columns, such as
//    a bias gradient): units are (outer kept index, block of B columns), every lane accumulates
//    its own column while the serial dims (all reduced) go by; no strided gathers.
// A unit's serial range may be split into K pieces (K > 1 when there are too few units to keep
// the threads busy, e.g. a full reduction); pieces leave partial accumulators that are combined
// in piece order afterwards, so results depend on the shape, never on the thread count.
void emit_reduction_kernel(std::ostream& os, const Graph& g, const Kernel& k) {
  os << "// " << k.name << ": rank-" << k.shape.size() << " reduction loop (" << k.reds.size() << " output"
     << (k.reds.size() > 1 ? "s" : "") << ")\n";
  emit_member_comments(os, g, k);
  const int nr = int(k.reds.size());
  const int nbuf = int(k.stores.size() + k.loads.size()), nall = nbuf + nr;
  os << "extern \"C\" void " << k.name << "(void* const* P, const int64_t* M) {\n"
     << "  const int64_t R = M[0], RA = M[1], col = M[2], K = M[3];\n"
     << "  const int64_t* S = M + 4;\n"
     << "  const int64_t* ST = M + 4 + R;  // " << nall << " buffers x R strides: stores, loads, then the outputs\n";
  std::map<int, int> slot;
  for (size_t i = 0; i < k.loads.size(); i++) slot[k.loads[i]] = int(i);
  std::vector<std::string> acc_t, init, comb, src;
  for (int r = 0; r < nr; r++) {
    const Kernel::Red& rd = k.reds[size_t(r)];
    const char* t = ctype(rd.t);
    bool fsum = rd.kind == RedKind::Sum || rd.kind == RedKind::Mean;
    acc_t.push_back(fsum ? "double" : t);
    init.push_back(fsum ? "0.0"
                        : std::string(rd.kind == RedKind::Max ? "-" : "") + "std::numeric_limits<" + t + ">::infinity()");
    comb.push_back(fsum ? "" : rd.kind == RedKind::Max ? "fw::fn::Maximum{}" : "fw::fn::Minimum{}");
    src.push_back(slot.count(rd.in) ? "p" + std::to_string(slot.at(rd.in)) : "v" + std::to_string(rd.in));
    os << "  " << t << "* __restrict out" << r << " = static_cast<" << t << "*>(P[" << r << "]);\n";
  }
  emit_buffer_pointers(os, g, k, nr);
  os << "  const int64_t inner = S[R - 1];\n"
        "  int64_t A = 1, NS = 1;\n"
        "  for (int64_t d = 0; d < RA; d++) A *= S[d];\n"
        "  for (int64_t d = RA; d + 1 < R; d++) NS *= S[d];\n"
        "  const int64_t nblk = (inner + B - 1) / B;\n"
        "  const int64_t units = col ? A * nblk : A, steps = col ? NS : NS * nblk;\n"
        "  const double count = double(col ? NS : NS * inner);  // elements per output\n"
     << "  auto unit_base = [&](int64_t q, int64_t* base) {\n"
     << "    for (int b = 0; b < " << nall << "; b++) base[b] = 0;\n";
  emit_offsets(os, "    ", nall, "RA - 1", "0", "col ? q / nblk : q");
  os << "  };\n";
  // finish(q, acc...): one unit's outputs from its lane accumulators.
  os << "  auto finish = [&](int64_t q";
  for (int r = 0; r < nr; r++) os << ", const " << acc_t[size_t(r)] << "* __restrict a" << r;
  os << ") {\n    int64_t base[" << nall << "];\n    unit_base(q, base);\n"
     << "    if (col) {\n      const int64_t c = (q % nblk) * B, m = std::min<int64_t>(B, inner - c);\n";
  for (int r = 0; r < nr; r++) {
    const Kernel::Red& rd = k.reds[size_t(r)];
    const char* t = ctype(rd.t);
    int b = nbuf + r;
    os << "      for (int64_t j = 0; j < m; j++) out" << r << "[base[" << b << "] + (c + j) * ST[" << b << " * R + R - 1]] = "
       << t << "(" << (rd.kind == RedKind::Mean ? "a" + std::to_string(r) + "[j] / count" : "a" + std::to_string(r) + "[j]")
       << ");\n";
  }
  os << "    } else {\n";
  for (int r = 0; r < nr; r++) {
    const Kernel::Red& rd = k.reds[size_t(r)];
    const char* t = ctype(rd.t);
    std::string a = "a" + std::to_string(r), x = "x" + std::to_string(r);
    os << "      " << acc_t[size_t(r)] << " " << x << " = " << init[size_t(r)] << ";\n";
    if (comb[size_t(r)].empty()) os << "      for (int64_t j = 0; j < B; j++) " << x << " += " << a << "[j];\n";
    else os << "      for (int64_t j = 0; j < B; j++) " << x << " = " << comb[size_t(r)] << "(" << x << ", " << a << "[j]);\n";
    os << "      out" << r << "[base[" << nbuf + r << "]] = " << t << "("
       << (rd.kind == RedKind::Mean ? x + " / count" : x) << ");\n";
  }
  os << "    }\n  };\n";
  for (int r = 0; r < nr; r++)
    os << "  std::unique_ptr<" << acc_t[size_t(r)] << "[]> part" << r << "(K > 1 ? new " << acc_t[size_t(r)]
       << "[size_t(units * K * B)] : nullptr);\n";
  os << "  par_for(units * K, A * NS * inner, [&](int64_t q0, int64_t q1) {\n"
        "  for (int64_t qq = q0; qq < q1; qq++) {\n"
        "    const int64_t q = qq / K, kk = qq % K;\n"
     << "    int64_t ubase[" << nall << "], base[" << std::max(nbuf, 1) << "], s[" << std::max(nbuf, 1) << "];\n"
     << "    unit_base(q, ubase);\n"
     << "    for (int b = 0; b < " << nbuf << "; b++) s[b] = ST[b * R + R - 1];\n";
  for (int r = 0; r < nr; r++)
    os << "    " << acc_t[size_t(r)] << " acc" << r << "[B];\n    for (int64_t j = 0; j < B; j++) acc" << r
       << "[j] = " << init[size_t(r)] << ";\n";
  os << "    for (int64_t t = steps * kk / K, t1 = steps * (kk + 1) / K; t < t1; t++) {\n"
        "      const int64_t c = (col ? q % nblk : t % nblk) * B, m = std::min<int64_t>(B, inner - c);\n"
     << "      for (int b = 0; b < " << nbuf << "; b++) base[b] = ubase[b];\n";
  emit_offsets(os, "      ", nbuf, "R - 2", "RA", "col ? t : t / nblk");
  std::set<int> reduced_in;
  for (const Kernel::Red& rd : k.reds) reduced_in.insert(rd.in);
  emit_block(os, g, k, "      ", 0, reduced_in);
  for (int r = 0; r < nr; r++) {
    std::string a = "acc" + std::to_string(r);
    if (comb[size_t(r)].empty())
      os << "#pragma omp simd\n      for (int64_t j = 0; j < m; j++) " << a << "[j] += " << src[size_t(r)] << "[j];\n";
    else
      os << "      for (int64_t j = 0; j < m; j++) " << a << "[j] = " << comb[size_t(r)] << "(" << a << "[j], "
         << src[size_t(r)] << "[j]);\n";
  }
  os << "    }\n    if (K == 1) finish(q";
  for (int r = 0; r < nr; r++) os << ", acc" << r;
  os << ");\n    else {\n";
  for (int r = 0; r < nr; r++)
    os << "      std::copy(acc" << r << ", acc" << r << " + B, part" << r << ".get() + (q * K + kk) * B);\n";
  os << "    }\n  }\n  });\n"
     << "  if (K == 1) return;\n"
     << "  par_for(units, units * K * B, [&](int64_t q0, int64_t q1) {\n"
     << "  for (int64_t q = q0; q < q1; q++) {\n";
  for (int r = 0; r < nr; r++) {
    std::string a = "acc" + std::to_string(r), pp = "part" + std::to_string(r) + ".get() + (q * K + kk) * B";
    os << "    " << acc_t[size_t(r)] << " " << a << "[B];\n    std::copy(part" << r << ".get() + q * K * B, part" << r
       << ".get() + (q * K + 1) * B, " << a << ");\n"
       << "    for (int64_t kk = 1; kk < K; kk++)\n      for (int64_t j = 0; j < B; j++) " << a << "[j] = ";
    if (comb[size_t(r)].empty()) os << a << "[j] + (" << pp << ")[j];\n";
    else os << comb[size_t(r)] << "(" << a << "[j], (" << pp << ")[j]);\n";
  }
  os << "    finish(q";
  for (int r = 0; r < nr; r++) os << ", acc" << r;
  os << ");\n  }\n  });\n}\n\n";
}

void emit_kernel(std::ostream& os, const Graph& g, const Kernel& k) {
  if (k.row) return emit_row_kernel(os, g, k);
  if (k.reduction) return emit_reduction_kernel(os, g, k);
  // (No sizes in the source: one compiled kernel serves every shape; see Note [Loop kernels].)
  os << "// " << k.name << ": rank-" << k.shape.size() << " pointwise loop\n";
  emit_member_comments(os, g, k);
  os << "extern \"C\" void " << k.name << "(void* const* P, const int64_t* M) {\n";
  int nbuf = int(k.stores.size() + k.loads.size());
  os << "  const int64_t R = M[0];\n  const int64_t* S = M + 1;\n  const int64_t* ST = M + 1 + R;  // "
     << nbuf << " buffers x R strides\n";
  emit_buffer_pointers(os, g, k, 0);
  os << "  const int64_t inner = R ? S[R - 1] : 1;\n"
        "  int64_t outer = 1;\n  for (int64_t d = 0; d + 1 < R; d++) outer *= S[d];\n"
        "  const int64_t nb = (inner + B - 1) / B, chunks = outer * nb;\n"
        "  par_for(chunks, outer * inner, [&](int64_t q0, int64_t q1) {\n"
        "  for (int64_t q = q0; q < q1; q++) {\n"
        "    const int64_t row = q / nb, c = (q % nb) * B, m = std::min<int64_t>(B, inner - c);\n"
     << "    int64_t base[" << std::max(nbuf, 1) << "] = {0}, s[" << std::max(nbuf, 1) << "] = {0};\n"
     << "    for (int b = 0; b < " << nbuf << "; b++) s[b] = R ? ST[b * R + R - 1] : 0;\n";
  emit_offsets(os, "    ", nbuf, "R - 2", "0", "row");
  emit_block(os, g, k, "    ", 0);
  os << "  }\n  });\n}\n\n";
}

// Note [Row kernels]
// A row kernel runs a group whose ops live on rows of the last dimension: pointwise ops over a
// whole row (Vec), reductions of a row to one value (Red: sum/mean/amax/amin), pointwise ops on
// those per-row values (Scal), and Vec ops that read them back broadcast over the row, as in
// softmax (amax, sub, exp, sum, div) or a normalisation. A row is loaded once and every op of
// the group runs over it, consecutive ops as one loop (Note [Row kernel segments]); each thread
// keeps a row buffer for the row-long values that must be materialised, and only values needed
// outside are stored. Rows are split across threads. Buffers are addressed by strides
// like the other kernels; the runner coalesces the outer dimensions and keeps the last one.

// A value in a row kernel: a loaded row p<i>[j] or per-row load q<i>, a per-row scalar s<v>, the
// open segment's element t<v> (Note [Row kernel segments]), or a materialised row v<v>[j].
std::string row_arg(const Arg& a, const Kernel& k, const std::map<int, int>& slot, const std::set<int>& temps) {
  if (a.kind == ArgKind::Literal) return a.lit;
  std::string r;
  auto it = slot.find(a.id);
  if (it != slot.end()) r = k.scalar_loads.count(a.id) ? "q" + std::to_string(it->second) : "p" + std::to_string(it->second) + "[j]";
  else if (k.scalar_values.count(a.id)) r = "s" + std::to_string(a.id);
  else if (temps.count(a.id)) r = "t" + std::to_string(a.id);
  else r = "v" + std::to_string(a.id) + "[j]";
  return a.cast ? std::string("static_cast<") + a.cast + ">(" + r + ")" : r;
}

std::string pw_expr(const PwOp& op, const Kernel& k, const std::map<int, int>& slot, const std::set<int>& temps = {}) {
  const char* ot = ctype(op.out_t);
  auto arg = [&](size_t i) { return row_arg(op.args[i], k, slot, temps); };
  if (op.form == PwOp::Cast) {
    std::string a = arg(0);
    return op.out_t == kBool ? "(" + a + " != 0)" : std::string("static_cast<") + ot + ">(" + a + ")";
  }
  if (op.form == PwOp::Where) return "(" + arg(0) + " ? " + arg(1) + " : " + arg(2) + ")";
  std::string e = op.expr_head + "(";
  for (size_t i = 0; i < op.args.size(); i++) e += (i ? ", " : "") + arg(i);
  return e + ")";
}

// Note [Row kernel segments]
// Consecutive row ops run as one loop over the row (a segment) rather than one loop each: a
// chain such as layer_norm's (x - mean) * rstd * w + b, or a reduction's prologue, keeps its
// intermediates in registers, and the reductions of the segment accumulate in the same loop.
// A segment ends where an op reads a reduction of the same segment (the whole row must be
// folded first), at per-row scalar ops, and around SLEEF vector calls (exp, tanh...: a call over
// the whole row, faster than their scalar forms in a loop). A row-long value is written to a
// per-thread row buffer (or straight into its output) only when something outside its segment
// reads it, it is stored, or it is a product that a reader in the segment may add: every element
// rounds as the eager ops do, one op at a time (see may_end_in_a_product and the rule at the end
// of row_segments; per-row scalar products get the same treatment in emit_row_kernel).
struct RowSegments {
  std::vector<int> seg;         // per row op: its segment, or -1 (per-row scalar op, vector call)
  std::set<int> materialised;  // row-long values kept in a buffer
};

// Note [Blocked float sums]
// A row kernel's float sums accumulate in double, like eager's sum: converting every element and
// adding in double lanes took ~20% of W3's row kernel (softmax(layer_norm(x)), 1024-float rows).
// Where every term is known to be >= 0 (an exp, a square x * x, abs, relu, sigmoid, sqrt), no
// term can cancel another, so a float sum over a short run has a small error relative to the sum
// itself: the row goes in blocks of 256, each summed in float vector lanes (32 adds per lane on
// AVX2, then a fold of 8 lanes), and the block sums go to the double. Every partial sum is at
// most the total, so the result is within ~40 ulp of the exact sum (eager's softmax sums a whole
// row in float lanes: 128 adds per lane for 1024 floats). AVX2 host, W3's kernel: 3.25 -> 2.86
// ms (the exp sum and layer_norm's variance). Sums of terms of either sign keep double lanes.
bool non_negative_row_value(const Graph& g, const Kernel& k, int v) {
  static const std::set<std::string> non_negative = {"Exp", "Exp2", "Abs", "Relu", "Sigmoid", "Sqrt"};
  for (const auto& op : k.rops) {
    if (op.kind != Kernel::RowOp::Vec || g.nodes[op.op.node].out[0] != v) continue;
    if ((op.op.form != PwOp::Functor && op.op.form != PwOp::VecCall) || g.values[v].dtype != kFloat) return false;
    const char* f = op_def(g.nodes[op.op.node].op).functor;
    if (!f) return false;
    if (non_negative.count(f)) return true;
    const auto& a = op.op.args;
    return std::strcmp(f, "Mul") == 0 && a.size() == 2 && a[0].kind == ArgKind::Value && a[1].kind == ArgKind::Value &&
           a[0].id == a[1].id && !a[0].cast && !a[1].cast;
  }
  return false;
}

// Whether a pointwise op's generated code may end in a multiply (which GCC could contract with a
// following add; Note [Row kernel segments]). Not Div: x / 2^k compiles to x * 2^-k.
bool may_end_in_a_product(const Graph& g, const PwOp& op) {
  static const std::set<std::string> no_trailing_product = {
      "Add", "Relu", "Maximum", "Minimum", "Fmax", "Fmin", "ClampScalar", "Hardtanh", "Neg", "Sign", "Floor",
      "Ceil", "Round", "Trunc", "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "LogicalAnd", "LogicalOr", "LogicalXor",
      "LogicalNot", "IsNan", "IsInf", "IsFinite"};
  if (op.form == PwOp::Cast || op.form == PwOp::Where) return false;
  const char* f = op_def(g.nodes[op.node].op).functor;
  return !(f && no_trailing_product.count(f));
}

// Whether op may add one of its operands to something (GCC could then contract a product that
// feeds it into an FMA). Multiplies, divides, compares and selects cannot.
bool may_add_an_operand(const Graph& g, const PwOp& op) {
  static const std::set<std::string> no_leading_add = {
      "Mul", "Div", "Relu", "Maximum", "Minimum", "Fmax", "Fmin", "ClampScalar", "Hardtanh", "Eq", "Ne", "Lt",
      "Le", "Gt", "Ge", "IsNan", "IsInf", "IsFinite"};
  const char* f = op_def(g.nodes[op.node].op).functor;
  return !(op.form == PwOp::Where || (f && no_leading_add.count(f)));
}

RowSegments row_segments(const Graph& g, const Kernel& k) {
  RowSegments r;
  r.seg.assign(k.rops.size(), -1);
  int cur = -1, nseg = 0;
  std::set<int> folded;  // reductions of the open segment
  for (size_t i = 0; i < k.rops.size(); i++) {
    const auto& op = k.rops[i];
    if (op.kind == Kernel::RowOp::Scal || (op.kind == Kernel::RowOp::Vec && op.op.form == PwOp::VecCall)) {
      cur = -1;
      continue;
    }
    bool reads_folded = false;
    if (op.kind == Kernel::RowOp::Vec)
      for (const Arg& a : op.op.args) reads_folded = reads_folded || (a.kind == ArgKind::Value && folded.count(a.id));
    if (cur < 0 || reads_folded) {
      cur = nseg++;
      folded.clear();
    }
    if (op.kind == Kernel::RowOp::Red) folded.insert(op.out);
    r.seg[i] = cur;
  }
  std::map<int, int> made_in;  // row-long value -> the segment computing it (-1: a vector call)
  for (size_t i = 0; i < k.rops.size(); i++)
    if (k.rops[i].kind == Kernel::RowOp::Vec) made_in[g.nodes[k.rops[i].op.node].out[0]] = r.seg[i];
  auto read = [&](int v, int by) {
    auto it = made_in.find(v);
    if (it != made_in.end() && (it->second < 0 || it->second != by)) r.materialised.insert(v);
  };
  for (size_t i = 0; i < k.rops.size(); i++) {
    const auto& op = k.rops[i];
    if (op.kind == Kernel::RowOp::Red) read(op.in, r.seg[i]);
    else
      for (const Arg& a : op.op.args)
        if (a.kind == ArgKind::Value) read(a.id, r.seg[i]);
  }
  for (int v : k.stores)
    if (made_in.count(v)) r.materialised.insert(v);
  // A value read inside its segment stays in a register unless its op may end in a multiply and
  // a reader may add it: GCC would contract that product and add into one FMA, which rounds
  // differently from the eager ops. Storing the product prevents it (GCC fuses a multiply only
  // when every use of the product is an add). Readers that multiply, divide, compare or select
  // cannot contract, nor can a float sum, which converts each element to its double accumulator.
  std::set<int> may_end_in_product;
  for (const auto& op : k.rops)
    if (op.kind == Kernel::RowOp::Vec && may_end_in_a_product(g, op.op)) may_end_in_product.insert(g.nodes[op.op.node].out[0]);
  for (const auto& op : k.rops) {
    std::vector<int> reads;
    bool adds = true;
    if (op.kind == Kernel::RowOp::Red) {
      reads.push_back(op.in);
      adds = (op.red == RedKind::Sum || op.red == RedKind::Mean) && g.values[op.in].dtype == kDouble;
    } else {
      for (const Arg& a : op.op.args)
        if (a.kind == ArgKind::Value) reads.push_back(a.id);
      adds = may_add_an_operand(g, op.op);
    }
    if (adds)
      for (int v : reads)
        if (may_end_in_product.count(v)) r.materialised.insert(v);
  }
  for (const auto& [v, sg] : made_in)
    if (sg < 0) r.materialised.insert(v);
  return r;
}

void emit_row_kernel(std::ostream& os, const Graph& g, const Kernel& k) {
  os << "// " << k.name << ": row kernel over the last dimension\n";
  for (const auto& r : k.rops) {
    const Node& n = g.nodes[r.kind == Kernel::RowOp::Red ? r.node : r.op.node];
    os << "//   %" << n.out[0] << " = " << op_def(n.op).name << "(";
    for (size_t i = 0; i < n.in.size(); i++) os << (i ? ", %" : "%") << n.in[i];
    std::string at = op_attrs_str(n.op, n.attrs);
    os << (at.empty() ? "" : "; " + at) << ")" << (r.kind == Kernel::RowOp::Vec ? "" : "  [per row]") << "\n";
  }
  std::map<int, int> slot;
  for (size_t i = 0; i < k.loads.size(); i++) slot[k.loads[i]] = int(i);
  int ns = int(k.stores.size()), nbuf = int(k.stores.size() + k.loads.size());
  os << "extern \"C\" void " << k.name << "(void* const* P, const int64_t* M) {\n"
     << "  const int64_t R = M[0];\n  const int64_t* S = M + 1;\n  const int64_t* ST = M + 1 + R;  // " << nbuf
     << " buffers x R strides\n";
  emit_buffer_pointers(os, g, k, 0);
  os << "  const int64_t C = S[R - 1];\n  int64_t outer = 1;\n  for (int64_t d = 0; d + 1 < R; d++) outer *= S[d];\n"
     << "  const bool nt = streams(outer * C * " << store_bytes(g, k) << ");\n"
     << "  par_for(outer, outer * C, [&](int64_t r0, int64_t r1) {\n";
  // Per-thread row buffers: one per row-long value and per gathered load.
  for (size_t i = 0; i < k.loads.size(); i++)
    if (!k.scalar_loads.count(k.loads[i]))
      os << "    RowBuf<" << stype(g.values[k.loads[i]].dtype) << "> x" << i << "(C);\n";
  const RowSegments segs = row_segments(g, k);
  for (const auto& r : k.rops)
    if (r.kind == Kernel::RowOp::Vec && segs.materialised.count(g.nodes[r.op.node].out[0]))
      os << "    RowBuf<" << stype(r.op.out_t) << "> b" << g.nodes[r.op.node].out[0] << "(C);\n";
  os << "    for (int64_t row = r0; row < r1; row++) {\n"
     << "      int64_t base[" << std::max(nbuf, 1) << "] = {0}, s[" << std::max(nbuf, 1) << "] = {0};\n"
     << "      for (int b = 0; b < " << nbuf << "; b++) s[b] = ST[b * R + R - 1];\n";
  emit_offsets(os, "      ", nbuf, "R - 2", "0", "row");
  for (size_t i = 0; i < k.loads.size(); i++) {
    const char* t = stype(g.values[k.loads[i]].dtype);
    int b = ns + int(i);
    if (k.scalar_loads.count(k.loads[i])) {
      os << "      const " << t << " q" << i << " = i" << i << "[base[" << b << "]];\n";
    } else {
      os << "      const " << t << "* __restrict p" << i << " = x" << i << ".data();\n"
         << "      if (s[" << b << "] == 1) p" << i << " = i" << i << " + base[" << b << "];\n"
         << "      else load(x" << i << ".data(), i" << i << " + base[" << b << "], s[" << b << "], C);\n";
    }
  }
  // A materialised row: computed straight into its output when that is a contiguous row.
  auto row_pointer = [&](int v, const char* ot, const Node& n) {
    auto st = std::find(k.stores.begin(), k.stores.end(), v);
    os << "      " << ot << "* __restrict v" << v << " = ";
    if (st != k.stores.end()) {
      int b = int(st - k.stores.begin());
      os << "s[" << b << "] == 1 && !nt ? o" << b << " + base[" << b << "] : ";
    }
    os << "b" << v << ".data();  // " << op_def(n.op).name << "\n";
  };
  for (size_t i = 0; i < k.rops.size();) {
    const auto& r = k.rops[i];
    if (segs.seg[i] < 0) {  // a per-row scalar op, or a vector call over the whole row
      const Node& n = g.nodes[r.op.node];
      int v = n.out[0];
      const char* ot = stype(r.op.out_t);
      if (r.kind == Kernel::RowOp::Scal) {
        os << "      " << ot << " s" << v << " = " << pw_expr(r.op, k, slot) << ";\n";
        // A per-row product goes through memory before anything reads it, so GCC cannot fuse it
        // with a following add into an FMA (eager rounds the two ops separately).
        if ((r.op.out_t == kFloat || r.op.out_t == kDouble) && may_end_in_a_product(g, r.op))
          os << "      asm volatile(\"\" : \"+m\"(s" << v << "));  // rounded like eager's separate op\n";
      } else {
        row_pointer(v, ot, n);
        const Arg& a = r.op.args[0];
        std::string src = slot.count(a.id) ? "p" + std::to_string(slot.at(a.id)) : "v" + std::to_string(a.id);
        std::string f = r.op.expr_head.substr(0, r.op.expr_head.size() - 2);
        os << "      fw::detail::VecF32<" << f << ">::run(" << src << ", v" << v << ", C);\n";
      }
      i++;
      continue;
    }
    // One segment: rops [i, e) in one loop.
    size_t e = i;
    while (e < k.rops.size() && segs.seg[e] == segs.seg[i]) e++;
    // A segment of sums only (a mean of the loaded row, the sum of a materialised one): nothing
    // else in the loop hides the latency of one vector accumulator's adds, so each sum gets 16
    // double lanes (four AVX2 vectors) folded at the end. 1024-float rows on the AVX2 host: the
    // sum loops went from ~30% to ~19% of W3's compiled row kernel.
    bool only_sums = true;
    for (size_t q = i; q < e; q++)
      only_sums = only_sums && k.rops[q].kind == Kernel::RowOp::Red &&
                  (k.rops[q].red == RedKind::Sum || k.rops[q].red == RedKind::Mean);
    if (only_sums) {
      std::set<int> none;
      for (size_t q = i; q < e; q++) os << "      double a" << k.rops[q].out << " = 0.0;\n";
      os << "      {\n";
      for (size_t q = i; q < e; q++) os << "      double l" << k.rops[q].out << "[16] = {};\n";
      os << "      int64_t j0 = 0;\n      for (; j0 + 16 <= C; j0 += 16) {\n#pragma omp simd\n"
         << "        for (int64_t j = j0; j < j0 + 16; j++) {\n";
      for (size_t q = i; q < e; q++)
        os << "          l" << k.rops[q].out << "[j - j0] += "
           << row_arg(Arg{ArgKind::Value, k.rops[q].in, "", nullptr}, k, slot, none) << ";\n";
      os << "        }\n      }\n      for (int64_t j = j0; j < C; j++) {\n";
      for (size_t q = i; q < e; q++)
        os << "        a" << k.rops[q].out << " += " << row_arg(Arg{ArgKind::Value, k.rops[q].in, "", nullptr}, k, slot, none)
           << ";\n";
      os << "      }\n";
      for (size_t q = i; q < e; q++)
        os << "      for (int l = 0; l < 16; l++) a" << k.rops[q].out << " += l" << k.rops[q].out << "[l];\n";
      os << "      }\n";
      for (size_t q = i; q < e; q++) {
        const auto& op = k.rops[q];
        const char* t = ctype(g.values[op.out].dtype);
        os << "      const " << t << " s" << op.out << " = " << t << "(a" << op.out
           << (op.red == RedKind::Mean ? " / double(C)" : "") << ");\n";
      }
      i = e;
      continue;
    }
    std::string sum_accs, nan_accs, max_accs, min_accs;
    std::vector<int> blocked;  // float sums of non-negative terms (Note [Blocked float sums])
    auto add = [](std::string& list, const std::string& x) { list += (list.empty() ? "" : ", ") + x; };
    for (size_t q = i; q < e; q++) {
      const auto& op = k.rops[q];
      if (op.kind == Kernel::RowOp::Vec) {
        int v = g.nodes[op.op.node].out[0];
        if (segs.materialised.count(v)) row_pointer(v, stype(op.op.out_t), g.nodes[op.op.node]);
        continue;
      }
      const char* t = ctype(g.values[op.out].dtype);
      const std::string acc = "a" + std::to_string(op.out);
      if (op.red == RedKind::Sum || op.red == RedKind::Mean) {
        os << "      double " << acc << " = 0.0;\n";
        if (g.values[op.out].dtype == kFloat && non_negative_row_value(g, k, op.in)) {
          blocked.push_back(op.out);
          add(sum_accs, "f" + std::to_string(op.out));
        } else {
          add(sum_accs, acc);
        }
      } else {  // a vector max/min plus a NaN flag: NaN anywhere gives NaN, as eager's amax/amin
        os << "      " << t << " " << acc << " = " << (op.red == RedKind::Max ? "-" : "") << "std::numeric_limits<" << t
           << ">::infinity();\n      int nan" << op.out << " = 0;\n";
        add(op.red == RedKind::Max ? max_accs : min_accs, acc);
        add(nan_accs, "nan" + std::to_string(op.out));
      }
    }
    if (!blocked.empty()) {
      os << "      for (int64_t jb = 0; jb < C; jb += 256) {\n      const int64_t je = C - jb > 256 ? jb + 256 : C;\n";
      for (int v : blocked) os << "      float f" << v << " = 0.0f;\n";
    }
    if (!sum_accs.empty() || !max_accs.empty() || !min_accs.empty()) {
      os << "#pragma omp simd";
      if (!sum_accs.empty()) os << " reduction(+ : " << sum_accs << ")";
      if (!nan_accs.empty()) os << " reduction(| : " << nan_accs << ")";
      if (!max_accs.empty()) os << " reduction(max : " << max_accs << ")";
      if (!min_accs.empty()) os << " reduction(min : " << min_accs << ")";
      os << "\n";
    }
    os << (blocked.empty() ? "      for (int64_t j = 0; j < C; j++) {\n" : "      for (int64_t j = jb; j < je; j++) {\n");
    std::set<int> temps;
    for (size_t q = i; q < e; q++) {
      const auto& op = k.rops[q];
      if (op.kind == Kernel::RowOp::Vec) {
        const Node& n = g.nodes[op.op.node];
        int v = n.out[0];
        os << "        const " << stype(op.op.out_t) << " t" << v << " = " << pw_expr(op.op, k, slot, temps) << ";  // "
           << op_def(n.op).name << "\n";
        temps.insert(v);
        if (segs.materialised.count(v)) os << "        v" << v << "[j] = t" << v << ";\n";
        continue;
      }
      const char* t = ctype(g.values[op.out].dtype);
      const std::string acc = "a" + std::to_string(op.out);
      const std::string src = row_arg(Arg{ArgKind::Value, op.in, "", nullptr}, k, slot, temps);
      if (op.red == RedKind::Sum || op.red == RedKind::Mean) {
        const bool f = std::find(blocked.begin(), blocked.end(), op.out) != blocked.end();
        os << "        " << (f ? "f" + std::to_string(op.out) : acc) << " += " << src << ";\n";
      } else {
        os << "        {\n          const " << t << " y = " << src << ";\n          " << acc << " = " << acc
           << (op.red == RedKind::Max ? " > " : " < ") << "y ? " << acc << " : y;\n          nan" << op.out
           << " |= y != y;\n        }\n";
      }
    }
    os << "      }\n";
    if (!blocked.empty()) {
      for (int v : blocked) os << "      a" << v << " += f" << v << ";\n";
      os << "      }\n";
    }
    for (size_t q = i; q < e; q++) {
      const auto& op = k.rops[q];
      if (op.kind != Kernel::RowOp::Red) continue;
      const char* t = ctype(g.values[op.out].dtype);
      const std::string acc = "a" + std::to_string(op.out);
      if (op.red == RedKind::Sum || op.red == RedKind::Mean)
        os << "      const " << t << " s" << op.out << " = " << t << "(" << acc << (op.red == RedKind::Mean ? " / double(C)" : "")
           << ");\n";
      else
        os << "      const " << t << " s" << op.out << " = nan" << op.out << " ? std::numeric_limits<" << t
           << ">::quiet_NaN() : " << acc << ";\n";
    }
    i = e;
  }
  for (size_t i = 0; i < k.stores.size(); i++) {
    int v = k.stores[i];
    if (k.scalar_values.count(v)) os << "      o" << i << "[base[" << i << "]] = s" << v << ";\n";
    else
      os << "      if (s[" << i << "] != 1) store(o" << i << " + base[" << i << "], v" << v << ", s[" << i << "], C);\n"
         << "      else if (nt) stream_store(o" << i << " + base[" << i << "], v" << v << ", C);\n";
  }
  os << "    }\n    if (nt) stream_fence();\n  });\n}\n\n";
}

using KernelFn = void (*)(void* const*, const int64_t*);

struct Step {
  bool kernel;
  int index;  // node or kernel index
};

// Collapses dims [lo, hi) of (sizes, per-buffer strides) where every buffer is contiguous across
// the boundary; drops size-1 dims. Appends the result to (out_sizes, out_strides).
void coalesce(const DimVec& sizes, const std::vector<DimVec>& strides, const std::vector<int64_t>& dims,
              DimVec& os, std::vector<DimVec>& ost) {
  for (int64_t d : dims) {
    if (sizes[d] == 1) continue;
    bool merge = !os.empty();
    if (merge) {
      for (size_t b = 0; b < strides.size() && merge; b++)
        merge = ost[b].back() == strides[b][d] * sizes[d];
    }
    if (merge) {
      os.back() *= sizes[d];
      for (size_t b = 0; b < strides.size(); b++) ost[b].back() = strides[b][d];
    } else {
      os.push_back(sizes[d]);
      for (size_t b = 0; b < strides.size(); b++) ost[b].push_back(strides[b][d]);
    }
  }
}

// Whether (sizes, strides) address each element once without gaps: a row-major layout of some
// order of the dims. Empty tensors say no.
bool dense(const DimVec& sizes, const DimVec& strides) {
  std::vector<std::pair<int64_t, int64_t>> ds;  // (stride, size) of the dims larger than 1
  for (size_t d = 0; d < sizes.size(); d++) {
    if (sizes[d] == 0) return false;
    if (sizes[d] != 1) ds.push_back({strides[d], sizes[d]});
  }
  std::sort(ds.begin(), ds.end());
  int64_t expected = 1;
  for (auto [st, n] : ds) {
    if (st != expected) return false;
    expected *= n;
  }
  return true;
}

// Strides of tensor t broadcast to `shape` (0 where it broadcasts).
DimVec broadcast_strides(const Tensor& t, const DimVec& shape) {
  DimVec st(shape.size(), 0);
  int64_t lead = int64_t(shape.size()) - t.dim();
  for (int64_t d = 0; d < t.dim(); d++)
    st[lead + d] = t.sizes()[d] == 1 && shape[lead + d] != 1 ? 0 : t.strides()[d];
  return st;
}

struct CodegenProgram : Program {
  Graph g;
  std::vector<Kernel> kernels;
  std::vector<KernelFn> fns;
  std::vector<Step> steps;
  ReleasePlan release;  // per step (Note [Buffer release])
  std::string source, lib_path;
  // mode("max-autotune") (Note [Autotuning]): kernels still to be timed on the first run, and per
  // kernel whether its member ops' eager kernels won.
  bool autotune_mode = false;
  std::atomic<bool> tune{false};
  std::mutex tune_mu;
  std::vector<char> eager_wins;

  // Every value a step reads or writes, including those its member ops make and use inside it
  // (the eager fallbacks of run_kernel bind them in env).
  void plan_release() {
    std::vector<std::vector<int>> touched(steps.size());
    auto node_values = [&](int ni, std::vector<int>& t) {
      const Node& n = g.nodes[size_t(ni)];
      t.insert(t.end(), n.in.begin(), n.in.end());
      t.insert(t.end(), n.out.begin(), n.out.end());
    };
    for (size_t i = 0; i < steps.size(); i++) {
      auto& t = touched[i];
      if (!steps[i].kernel) {
        node_values(steps[i].index, t);
        continue;
      }
      const Kernel& k = kernels[size_t(steps[i].index)];
      t.insert(t.end(), k.loads.begin(), k.loads.end());
      t.insert(t.end(), k.stores.begin(), k.stores.end());
      for (auto& op : k.ops) node_values(op.node, t);
      for (auto& r : k.rops) node_values(r.kind == Kernel::RowOp::Red ? r.node : r.op.node, t);
      for (auto& r : k.reds) node_values(r.node, t);
    }
    release = release_plan(g, touched);
  }

  std::string describe() const override {
    std::string d = std::to_string(kernels.size()) + " fused kernel(s) in " + lib_path + ", " +
                    std::to_string(steps.size() - kernels.size()) + " extern op(s)" + product_epilogues_note(g);
    if (tune.load()) d += ", max-autotune: fused kernels are timed against eager ops on the first run";
    else if (autotune_mode)
      d += ", max-autotune chose eager ops for " + std::to_string(std::count(eager_wins.begin(), eager_wins.end(), 1)) +
           " kernel(s)";
    return d;
  }

  void run_node(int ni, std::vector<Tensor>& env) const {
    const Node& n = g.nodes[ni];
    std::vector<Tensor> in;
    for (int v : n.in) in.push_back(env[v]);
    AutoGradMode mode(n.grad && fw::is_grad_enabled());
    Outs o = dispatch(n.op, in, n.attrs);
    for (size_t k = 0; k < n.out.size(); k++) env[n.out[k]] = std::move(o[k]);
  }

  // A new buffer for value v, laid out as traced: eager's layout (Note [Traced layouts]). An empty
  // one takes the traced strides whatever they are (they address nothing).
  Tensor store_buffer(int v) const {
    const ValueInfo& x = g.values[size_t(v)];
    Tensor t = make_tensor(x.sizes, x.dtype);
    if (!t.strides().equals(x.strides) && (t.numel() == 0 || dense(x.sizes, x.strides))) {
      t.impl()->strides = x.strides;
      t.impl()->refresh();
    }
    return t;
  }
  // The kernel's buffers (fresh stores, then the loads) with the stores bound in env.
  std::vector<Tensor> buffers(const Kernel& k, std::vector<Tensor>& env) const {
    std::vector<Tensor> bufs;
    for (int v : k.stores) {
      bufs.push_back(store_buffer(v));
      env[v] = bufs.back();
    }
    for (int v : k.loads) bufs.push_back(env[v]);
    return bufs;
  }
  // The kernel ABI's size/stride array: [R, sizes..., strides of each buffer...].
  static std::vector<int64_t> pack(const DimVec& cs, const std::vector<DimVec>& cst) {
    std::vector<int64_t> M;
    M.push_back(int64_t(cs.size()));
    M.insert(M.end(), cs.begin(), cs.end());
    for (auto& x : cst) M.insert(M.end(), x.begin(), x.end());
    return M;
  }

  void run_row_kernel(int ki, std::vector<Tensor>& env) const {
    const Kernel& k = kernels[ki];
    std::vector<Tensor> bufs = buffers(k, env);
    const DimVec& shape = k.shape;
    std::vector<DimVec> st;
    for (size_t b = 0; b < bufs.size(); b++) {
      int v = b < k.stores.size() ? k.stores[b] : k.loads[b - k.stores.size()];
      if (k.nokeep.count(v)) {  // a per-row value without the kept last dim: (outer..., 0)
        DimVec x(bufs[b].strides());
        x.push_back(0);
        st.push_back(x);
      } else {
        st.push_back(broadcast_strides(bufs[b], shape));
      }
    }
    DimVec cs;
    std::vector<DimVec> cst(bufs.size());
    std::vector<int64_t> outer_dims;
    for (int64_t d = 0; d + 1 < int64_t(shape.size()); d++) outer_dims.push_back(d);
    coalesce(shape, st, outer_dims, cs, cst);
    cs.push_back(shape.back());
    for (size_t b = 0; b < bufs.size(); b++) cst[b].push_back(st[b].back());
    std::vector<int64_t> M = pack(cs, cst);
    std::vector<void*> P;
    for (auto& b : bufs) P.push_back(b.numel() ? b.data_ptr() : nullptr);
    int64_t n = 1;
    for (int64_t x : cs) n *= x;
    if (n == 0) {  // empty rows: the members' eager kernels know what an empty reduction gives
      run_members(k, env);
      return;
    }
    fns[ki](P.data(), M.data());
  }

  void run_kernel(int ki, std::vector<Tensor>& env) const {
    const Kernel& k = kernels[ki];
    if (k.row) return run_row_kernel(ki, env);
    if (k.reduction) return run_reduction_kernel(ki, env);
    std::vector<Tensor> bufs = buffers(k, env);
    const DimVec& shape = k.shape;
    std::vector<DimVec> st;
    for (auto& b : bufs) st.push_back(broadcast_strides(b, shape));
    DimVec cs;
    std::vector<DimVec> cst(bufs.size());
    // Dims in the first store's memory order, outermost first, as eager's element-wise loops walk
    // them: a permuted result and inputs laid out like it are read and written in runs.
    std::vector<int64_t> all;
    for (int64_t d = 0; d < int64_t(shape.size()); d++) all.push_back(d);
    if (!k.stores.empty())
      std::stable_sort(all.begin(), all.end(), [&](int64_t a, int64_t b) { return st[0][size_t(a)] > st[0][size_t(b)]; });
    coalesce(shape, st, all, cs, cst);
    std::vector<int64_t> M = pack(cs, cst);
    std::vector<void*> P;
    for (auto& b : bufs) P.push_back(b.numel() ? b.data_ptr() : nullptr);
    int64_t n = 1;
    for (int64_t s : cs) n *= s;
    if (n == 0) return;
    fns[ki](P.data(), M.data());
  }

  // Note [Reduction kernels]: the dims ordered [parallel kept | serial | inner], the form (row or
  // column) and the split K of each unit's serial range.
  void run_reduction_kernel(int ki, std::vector<Tensor>& env) const {
    const Kernel& k = kernels[ki];
    const DimVec& shape = k.shape;
    int64_t total = 1;
    for (int64_t x : shape) total *= x;
    if (total == 0) {  // the members' eager kernels know what an empty reduction gives (or raise)
      run_members(k, env);
      return;
    }
    std::vector<Tensor> bufs = buffers(k, env);
    const size_t nbuf = bufs.size();
    std::vector<DimVec> st;
    for (auto& b : bufs) st.push_back(broadcast_strides(b, shape));
    std::vector<Tensor> outs;
    for (const Kernel::Red& r : k.reds) {
      outs.push_back(store_buffer(r.out));
      env[r.out] = outs.back();
      // The output's strides over the iteration shape: 0 along the reduced dims.
      DimVec os(shape.size(), 0);
      const bool keep = outs.back().dim() == int64_t(shape.size());
      for (size_t d = 0, od = 0; d < shape.size(); d++) {
        if (keep) os[d] = k.reduced[d] ? 0 : outs.back().strides()[d];
        else if (!k.reduced[d]) os[d] = outs.back().strides()[od++];
      }
      st.push_back(os);
    }
    std::vector<int64_t> kept, red;
    for (int64_t d = 0; d < int64_t(shape.size()); d++) (k.reduced[size_t(d)] ? red : kept).push_back(d);
    DimVec ks, rs;
    std::vector<DimVec> kst(st.size()), rst(st.size());
    coalesce(shape, st, kept, ks, kst);
    coalesce(shape, st, red, rs, rst);
    if (rs.empty()) {  // reducing size-1 dims only
      rs.push_back(1);
      for (auto& x : rst) x.push_back(0);
    }
    // Column form when more of the group's buffers are contiguous along the last kept dim than
    // along the last reduced one.
    int along_kept = 0, along_red = 0;
    for (size_t b = 0; b < nbuf; b++) {
      along_kept += !ks.empty() && kst[b].back() == 1;
      along_red += rst[b].back() == 1;
    }
    const bool col = !ks.empty() && along_kept > along_red;
    DimVec cs;
    std::vector<DimVec> cst(st.size());
    auto put = [&](const DimVec& sz, const std::vector<DimVec>& sst, size_t lo, size_t hi) {
      for (size_t d = lo; d < hi; d++) {
        cs.push_back(sz[d]);
        for (size_t b = 0; b < st.size(); b++) cst[b].push_back(sst[b][d]);
      }
    };
    if (col) {
      put(ks, kst, 0, ks.size() - 1);
      put(rs, rst, 0, rs.size());
      put(ks, kst, ks.size() - 1, ks.size());
    } else {
      put(ks, kst, 0, ks.size());
      put(rs, rst, 0, rs.size());
    }
    const int64_t RA = col ? int64_t(ks.size()) - 1 : int64_t(ks.size());
    int64_t A = 1, NS = 1;
    for (int64_t d = 0; d < RA; d++) A *= cs[size_t(d)];
    for (size_t d = size_t(RA); d + 1 < cs.size(); d++) NS *= cs[d];
    const int64_t inner = cs.back(), nblk = (inner + kernel::B - 1) / kernel::B;
    const int64_t units = col ? A * nblk : A, steps = col ? NS : NS * nblk;
    // Split the serial range when there are fewer than 16 units, into pieces of >= 32K elements.
    int64_t K = 1;
    if (units < 16 && steps > 1)
      K = std::max<int64_t>(1, std::min({steps, (16 + units - 1) / units, total / (units * 32768)}));
    std::vector<int64_t> M = pack(cs, cst);
    M.insert(M.begin() + 1, {RA, col ? 1 : 0, K});
    std::vector<void*> P;
    for (auto& o : outs) P.push_back(o.data_ptr());
    for (auto& b : bufs) P.push_back(b.numel() ? b.data_ptr() : nullptr);
    fns[ki](P.data(), M.data());
  }

  // The kernel's member ops, each with its eager kernel (what the kernel computes, unfused).
  void run_members(const Kernel& k, std::vector<Tensor>& env) const {
    for (int v : k.stores) env[v] = Tensor();
    if (k.row) {
      for (auto& r : k.rops) run_node(r.kind == Kernel::RowOp::Red ? r.node : r.op.node, env);
      return;
    }
    for (auto& op : k.ops) run_node(op.node, env);
    for (auto& r : k.reds) run_node(r.node, env);
  }

  // Note [Autotuning]
  // Under mode("max-autotune") the first run times every fused kernel against its member ops run
  // one by one with their eager kernels, on the real inputs (best of 3 each after one warm-up;
  // both forms only read their loads and write fresh buffers, so repeating them is harmless),
  // and keeps the faster form for the program's lifetime. A generic fused kernel usually wins by
  // saving memory passes; eager wins where the generated loops stay scalar (bool masks in GCC 12)
  // or where a hand-written single-pass eager kernel beats a generic row kernel.
  void tune_step(int ki, std::vector<Tensor>& env) {
    using clock = std::chrono::steady_clock;
    auto best = [&](auto&& f) {
      f();
      double b = 1e30;
      for (int r = 0; r < 3; r++) {
        auto t0 = clock::now();
        f();
        b = std::min(b, std::chrono::duration<double, std::micro>(clock::now() - t0).count());
      }
      return b;
    };
    const Kernel& k = kernels[size_t(ki)];
    double fused = best([&] { run_kernel(ki, env); });
    double eager = best([&] { run_members(k, env); });
    eager_wins[size_t(ki)] = eager < fused;
    log::perf("max-autotune: ", k.name, ": fused ", fused, " us, eager ops ", eager, " us -> ",
              eager < fused ? "eager ops" : "fused kernel");
    if (!eager_wins[size_t(ki)]) run_kernel(ki, env);  // leave the chosen form's results in env
  }

  std::vector<Tensor> run(ArrayRef<Tensor> inputs, ArrayRef<Tensor> externals) override {
    std::vector<Tensor> env(g.values.size());
    for (size_t i = 0; i < g.inputs.size(); i++) env[g.inputs[i]] = inputs[i];
    std::vector<Tensor> fresh;
    bind_externals(g, env, externals, fresh);
    std::unique_lock<std::mutex> tuning;
    if (tune.load(std::memory_order_acquire)) {
      tuning = std::unique_lock<std::mutex>(tune_mu);
      if (!tune.load(std::memory_order_relaxed)) tuning.unlock();  // another run tuned meanwhile
    }
    for (size_t i = 0; i < steps.size(); i++) {
      const Step& s = steps[i];
      if (!s.kernel) run_node(s.index, env);
      else if (tuning.owns_lock()) tune_step(s.index, env);
      else if (eager_wins[size_t(s.index)]) run_members(kernels[size_t(s.index)], env);
      else run_kernel(s.index, env);
      for (int v : release[i]) env[v] = Tensor();
    }
    if (tuning.owns_lock()) tune.store(false, std::memory_order_release);
    return finish_run(g, env, inputs, externals);
  }
};

bool needs_autograd(const Graph& g) {
  if (!fw::detail::tls().grad_enabled) return false;
  for (const ValueInfo& v : g.values)
    if (v.requires_grad) return true;
  return false;
}

}  // namespace

// Note [Fusion order]
// The scheduler groups consecutive fusible nodes, so the order it visits them decides what
// fuses. Trace order interleaves unrelated work (a backward graph alternates gradient chains of
// different shapes; a decomposition records per-channel bookkeeping between a value and its
// consumer), so the scheduler walks a topological order of its own: after each node it prefers a
// ready elementwise or reduction node producing the same shape, then one reading that shape,
// then the earliest ready node in trace order. Random draws keep their relative order (they
// consume one generator stream).
static std::vector<int> fusion_order(const Graph& g) {
  const size_t N = g.nodes.size();
  std::vector<std::vector<int>> consumers(N);
  std::vector<int> indeg(N, 0);
  int last_impure = -1;
  auto edge = [&](int from, int to) {
    consumers[size_t(from)].push_back(to);
    indeg[size_t(to)]++;
  };
  for (size_t i = 0; i < N; i++) {
    std::set<int> from;
    for (int v : g.nodes[i].in)
      if (g.values[v].kind == ValueKind::Node) from.insert(g.values[v].index);
    for (int f : from) edge(f, int(i));
    const OpId op = g.nodes[i].op;
    if (op == OpId::uniform || op == OpId::normal || op == OpId::randint || op == OpId::bernoulli ||
        op == OpId::randperm) {
      if (last_impure >= 0 && !from.count(last_impure)) edge(last_impure, int(i));
      last_impure = int(i);
    }
  }
  std::set<int> ready;
  for (size_t i = 0; i < N; i++)
    if (!indeg[i]) ready.insert(int(i));
  std::vector<int> order;
  const DimVec* last = nullptr;
  auto fusible = [&](int i) {
    OpKind k = op_def(g.nodes[size_t(i)].op).kind;
    return k == OpKind::Elementwise || k == OpKind::Reduction;
  };
  while (!ready.empty()) {
    int pick = -1;
    if (last) {
      for (int r : ready)
        if (fusible(r) && !g.nodes[size_t(r)].out.empty() && g.values[g.nodes[size_t(r)].out[0]].sizes == *last) {
          pick = r;
          break;
        }
      if (pick < 0)
        for (int r : ready)
          if (fusible(r) && !g.nodes[size_t(r)].in.empty() && g.values[g.nodes[size_t(r)].in[0]].sizes == *last) {
            pick = r;
            break;
          }
    }
    if (pick < 0) pick = *ready.begin();
    ready.erase(pick);
    order.push_back(pick);
    const Node& n = g.nodes[size_t(pick)];
    last = n.out.empty() ? nullptr : &g.values[n.out[0]].sizes;
    for (int c : consumers[size_t(pick)])
      if (--indeg[size_t(c)] == 0) ready.insert(c);
  }
  return order;
}

// Note [Epilogues in extern products]
// Two pointwise consumers of a matrix product (mm, addmm, bmm, baddbmm) whose result nothing else
// reads go into the product's epilogue (Note [GEMM epilogues] in core/ops/gemm_f32.cpp), which
// applies them tile by tile while the tile is still in L1:
//  - relu(p): the node gets kProductRelu (Note [Product epilogue flags] in core/ops/linalg.cpp).
//    Left alone, the relu was an eager op of its own (a single pointwise op makes no kernel: Note
//    [What fuses]) that read and wrote the whole product again; each Linear + ReLU of W4's forward
//    was one such pass over 1 MB.
//  - p * (h > 0), relu's backward through a product (the gradient of the layer below): the node
//    gets kProductGate and h as an extra last input, when h has the product's sizes and dtype and
//    is computed before the product runs. What reads the gradient next (the bias gradient's
//    column sum, the next product) reads the masked product, where a fused kernel used to read
//    the product and h and store the masked product.
// Other pointwise consumers still run as the following fused loop. The flagged forms have no
// backward, which is safe here: codegen programs never record autograd (needs_autograd below).
static int fold_product_epilogues(Graph& g) {
  std::vector<int> uses(g.values.size(), 0);
  for (const Node& n : g.nodes)
    for (int v : n.in) uses[size_t(v)]++;
  for (int v : g.outputs) uses[size_t(v)]++;
  for (const Writeback& w : g.writebacks) uses[size_t(w.value)]++;
  // Values made inside a recorded decomposition stay as they are (its backend may run it whole).
  std::vector<char> in_decomp(g.values.size(), 0);
  for (const Decomposition& dc : g.decomps) {
    for (int v : dc.values) in_decomp[size_t(v)] = 1;
    for (int v : dc.outputs) in_decomp[size_t(v)] = 1;
  }
  std::vector<int> repl(g.values.size());
  for (size_t v = 0; v < repl.size(); v++) repl[v] = int(v);
  // The product node behind value v when v is a floating product result only `r` reads, laid out
  // as r's result (which v then replaces); else null.
  auto product_of = [&](int v, const Node& r) -> Node* {
    const ValueInfo &x = g.values[size_t(v)], &y = g.values[size_t(r.out[0])];
    if (x.kind != ValueKind::Node || uses[size_t(v)] != 1 || in_decomp[size_t(v)] || in_decomp[size_t(r.out[0])] ||
        !is_floating_point(x.dtype) || x.dtype != y.dtype || !(x.sizes == y.sizes) || !(x.strides == y.strides) ||
        x.offset != y.offset)
      return nullptr;
    Node& p = g.nodes[size_t(x.index)];
    return is_matrix_product(p.op) && p.out.size() == 1 ? &p : nullptr;
  };
  // h when mask value m is gt(h, 0) (scalar right operand zero); else -1.
  auto gate_of = [&](int m) {
    const ValueInfo& x = g.values[size_t(m)];
    if (x.kind != ValueKind::Node) return -1;
    const Node& n = g.nodes[size_t(x.index)];
    const bool zero_rhs = (n.attrs.flags & kScalarRhs) && !n.attrs.s0.isComplex() && n.attrs.s0.toDouble() == 0;
    return n.op == OpId::gt && n.in.size() == 1 && zero_rhs ? n.in[0] : -1;
  };
  int folded = 0;
  for (Node& r : g.nodes) {
    for (int& v : r.in) v = repl[size_t(v)];
    if (r.out.size() != 1) continue;
    if (r.op == OpId::relu && r.in.size() == 1) {
      Node* p = product_of(r.in[0], r);
      if (!p || (p->attrs.flags & (kProductRelu | kProductGate))) continue;
      p->attrs.flags |= kProductRelu;
      repl[size_t(r.out[0])] = r.in[0];
      uses[size_t(r.in[0])] = uses[size_t(r.out[0])];  // the product's result is read where relu's was
      log::fusion("folding relu (%", r.out[0], ") into the epilogue of ", op_def(p->op).name, " (%", r.in[0], ")");
      folded++;
    } else if (r.op == OpId::mul && r.in.size() == 2 && !(r.attrs.flags & kScalarRhs)) {
      for (int side = 0; side < 2; side++) {
        const int v = r.in[size_t(side)], h = gate_of(r.in[size_t(1 - side)]);
        Node* p = h < 0 ? nullptr : product_of(v, r);
        if (!p || (p->attrs.flags & kProductGate)) continue;
        const ValueInfo &hv = g.values[size_t(h)], &pv = g.values[size_t(v)];
        // h must exist when the product runs: an argument, a capture, or an earlier node's result.
        const bool before = hv.kind != ValueKind::Node || hv.index < pv.index;
        if (!before || hv.dtype != pv.dtype || !(hv.sizes == pv.sizes)) continue;
        p->in.push_back(h);
        p->attrs.flags |= kProductGate;
        repl[size_t(r.out[0])] = v;
        uses[size_t(v)] = uses[size_t(r.out[0])];
        uses[size_t(h)]++;
        log::fusion("folding the mask (%", h, " > 0) of mul (%", r.out[0], ") into the epilogue of ",
                    op_def(p->op).name, " (%", v, ")");
        folded++;
        break;
      }
    }
  }
  if (!folded) return 0;
  for (int& v : g.outputs) v = repl[size_t(v)];
  for (Writeback& w : g.writebacks) w.value = repl[size_t(w.value)];
  for (Decomposition& dc : g.decomps)
    for (int& v : dc.inputs) v = repl[size_t(v)];
  eliminate_dead_code(g);
  return folded;
}

std::shared_ptr<Program> codegen_program(Graph g, const CompileOptions& o) {
  // Fused kernels record no autograd history: training graphs reach here split into a forward
  // and a backward graph by jit/aot.cpp; anything else that needs gradients runs interpreted.
  if (needs_autograd(g)) return interpreter_program(std::move(g));
  fold_product_epilogues(g);
  auto p = std::make_shared<CodegenProgram>();
  // Consumers of each value, to know what a kernel must store.
  std::vector<std::vector<int>> users(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); i++)
    for (int v : g.nodes[i].in) users[v].push_back(int(i));
  std::vector<char> escapes(g.values.size(), 0);
  for (int v : g.outputs) escapes[v] = 1;
  for (const Writeback& w : g.writebacks) escapes[w.value] = 1;

  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  std::vector<Node> extra;  // composite ops run whole (appended to the graph after scheduling)
  Kernel cur;
  std::set<int> cur_nodes, cur_values;
  auto seal_row = [&]() {
    if (cur.rops.size() == 1) {
      const auto& r = cur.rops[0];
      steps.push_back({false, r.kind == Kernel::RowOp::Red ? r.node : r.op.node});
    } else {
      Kernel k = std::move(cur);
      std::set<int> seen;
      auto need = [&](int v) {
        if (!cur_values.count(v) && seen.insert(v).second) k.loads.push_back(v);
      };
      for (auto& r : k.rops) {
        if (r.kind == Kernel::RowOp::Red) need(r.in);
        else
          for (auto& a : r.op.args)
            if (a.kind == ArgKind::Value) need(a.id);
      }
      // A load whose last dimension broadcasts (size 1 or absent) is one value per row.
      for (int v : k.loads) {
        const DimVec& vs = g.values[v].sizes;
        if (vs.empty() || vs.back() == 1) k.scalar_loads.insert(v);
      }
      for (auto& r : k.rops)
        if (r.kind == Kernel::RowOp::Vec && r.op.form == PwOp::VecCall &&
            (k.scalar_loads.count(r.op.args[0].id) || k.scalar_values.count(r.op.args[0].id)))
          r.op.form = PwOp::Functor;
      for (auto& r : k.rops) {
        int node = r.kind == Kernel::RowOp::Red ? r.node : r.op.node;
        int v = g.nodes[node].out[0];
        bool outside = escapes[v];
        for (int u : users[v])
          if (!cur_nodes.count(u)) outside = true;
        if (outside) k.stores.push_back(v);
      }
      // A composite op decomposed at trace time (softmax, layer_norm...) alone in a row kernel:
      // its own eager kernel beats the generic row kernel (layer_norm on 4096x1024: 0.38 against
      // 0.44 ms), so it runs whole instead. Fusion pays when pointwise producers or consumers or
      // a second composite join it (W3's softmax(layer_norm(x)) as one row kernel: 1.14 against
      // 1.20 ms for the two eager kernels), as the row then makes one trip through memory.
      {
        std::vector<const Decomposition*> used;
        std::set<int> vals, ins, outs;
        for (const Decomposition& dc : g.decomps) {
          bool touches = false;
          for (auto& r : k.rops) {
            int v = r.kind == Kernel::RowOp::Red ? r.out : g.nodes[r.op.node].out[0];
            touches = touches || std::find(dc.values.begin(), dc.values.end(), v) != dc.values.end();
          }
          if (!touches) continue;
          used.push_back(&dc);
          vals.insert(dc.values.begin(), dc.values.end());
          ins.insert(dc.inputs.begin(), dc.inputs.end());
          outs.insert(dc.outputs.begin(), dc.outputs.end());
        }
        bool only = used.size() == 1;
        for (auto& r : k.rops) only = only && vals.count(r.kind == Kernel::RowOp::Red ? r.out : g.nodes[r.op.node].out[0]);
        for (int v : k.loads) only = only && (ins.count(v) || outs.count(v));
        for (int v : k.stores) only = only && outs.count(v);
        if (only) {
          for (const Decomposition* dc : used) {  // in trace order
            log::fusion("running ", op_def(dc->op).name, " (%", dc->outputs[0],
                        ") with its eager kernel: nothing else to fuse with it");
            extra.push_back(Node{dc->op, dc->attrs, dc->inputs, dc->outputs, true});
            steps.push_back({false, int(g.nodes.size() + extra.size() - 1)});
          }
          cur = Kernel();
          cur_nodes.clear();
          cur_values.clear();
          return;
        }
      }
      k.name = kernel_name(g, k, kernels.size());
      log::fusion(k.name, ": row kernel with ", k.rops.size(), " op(s), ", k.loads.size(), " load(s), ",
                  k.stores.size(), " store(s)");
      steps.push_back({true, int(kernels.size())});
      kernels.push_back(std::move(k));
    }
    cur = Kernel();
    cur_nodes.clear();
    cur_values.clear();
  };
  auto seal = [&]() {
    if (cur.row) return seal_row();
    if (cur.ops.empty()) return;
    bool single = cur.ops.size() == 1 && cur.reds.empty();
    if (single) {  // eager's kernel is already one pass
      log::fusion("not fusing ", op_def(g.nodes[cur.ops[0].node].op).name, " (%", g.nodes[cur.ops[0].node].out[0],
                  "): a single op runs its eager kernel");
      steps.push_back({false, cur.ops[0].node});
    } else {
      Kernel k = std::move(cur);
      // Loads: tensor args not produced inside the kernel.
      std::set<int> seen;
      auto need = [&](int v) {
        if (!cur_values.count(v) && seen.insert(v).second) k.loads.push_back(v);
      };
      for (auto& op : k.ops)
        for (auto& a : op.args)
          if (a.kind == ArgKind::Value) need(a.id);
      for (auto& r : k.reds) need(r.in);
      k.reduction = !k.reds.empty();
      for (auto& op : k.ops) {
        int v = g.nodes[op.node].out[0];
        bool outside = escapes[v];
        for (int u : users[v])
          if (!cur_nodes.count(u)) outside = true;
        if (outside) k.stores.push_back(v);
      }
      k.name = kernel_name(g, k, kernels.size());
      log::fusion(k.name, ": ", k.ops.size(), " pointwise op(s), ", k.reds.size(), " reduction(s), ",
                  k.loads.size(), " load(s), ", k.stores.size(), " store(s)");
      steps.push_back({true, int(kernels.size())});
      kernels.push_back(std::move(k));
    }
    cur = Kernel();
    cur_nodes.clear();
    cur_values.clear();
  };
  for (int oi : fusion_order(g)) {
    const size_t i = size_t(oi);
    const Node& n = g.nodes[i];
    PwOp op;
    RedKind rk;
    std::vector<char> reduced;
    const bool pw = pointwise(g, int(i), op);
    if (pw && cur.row) {
      const DimVec& os = g.values[n.out[0]].sizes;
      DimVec keep = cur.shape, nok;
      keep.back() = 1;
      for (size_t d = 0; d + 1 < cur.shape.size(); d++) nok.push_back(cur.shape[d]);
      bool added = false;
      if (os == cur.shape) {  // over the row; per-row values it reads must have kept their dim
        bool ok = true;
        for (auto& a : op.args)
          if (a.kind == ArgKind::Value && cur.nokeep.count(a.id)) ok = false;
        if (ok) {
          cur.rops.push_back({Kernel::RowOp::Vec, op});
          cur.vec_values.insert(n.out[0]);
          added = true;
        }
      } else if (os == keep || os == nok) {  // on per-row values of one kind only
        bool nk = !(os == keep), ok = true;
        for (auto& a : op.args)
          if (a.kind == ArgKind::Value && (!cur.scalar_values.count(a.id) || bool(cur.nokeep.count(a.id)) != nk)) ok = false;
        if (ok) {
          if (op.form == PwOp::VecCall) op.form = PwOp::Functor;
          cur.rops.push_back({Kernel::RowOp::Scal, op});
          cur.scalar_values.insert(n.out[0]);
          if (nk) cur.nokeep.insert(n.out[0]);
          added = true;
        }
      }
      if (added) {
        cur_nodes.insert(int(i));
        cur_values.insert(n.out[0]);
        continue;
      }
      log::fusion("not fusing ", op_def(n.op).name, " (%", n.out[0], ") into the row kernel: shape ", shape_str(os),
                  " is neither the row shape ", shape_str(cur.shape), " nor a per-row value of its inputs' kind");
      seal();
    }
    if (last_dim_reduction(g, int(i), rk) && !one_row(g.values[n.in[0]].sizes)) {
      if (!cur.row && !cur.reds.empty()) seal();  // a reduction kernel takes no row reduction
      int u = n.in[0], ov = n.out[0];
      const DimVec& S = g.values[u].sizes;
      bool in_cur = cur_values.count(u) && cur.shape == S && !cur.scalar_values.count(u);
      bool same_rows = cur.row && cur.shape == S;
      if (!in_cur && !same_rows) {
        seal();
        cur.row = true;
        cur.shape = S;
      } else if (!cur.row) {  // a pointwise group becomes the head of a row kernel
        for (auto& o : cur.ops) {
          cur.rops.push_back({Kernel::RowOp::Vec, o});
          cur.vec_values.insert(g.nodes[o.node].out[0]);
        }
        cur.ops.clear();
        cur.row = true;
      }
      Kernel::RowOp r{Kernel::RowOp::Red, PwOp{}};
      r.red = rk;
      r.node = int(i);
      r.in = u;
      r.out = ov;
      cur.rops.push_back(r);
      cur.scalar_values.insert(ov);
      if (g.values[ov].sizes.size() != S.size()) cur.nokeep.insert(ov);
      cur_nodes.insert(int(i));
      cur_values.insert(ov);
      continue;
    }
    if (pw) {
      const DimVec& shape = g.values[n.out[0]].sizes;
      if (!cur.ops.empty() && !(cur.shape == shape)) {
        log::fusion("not fusing ", op_def(n.op).name, " (%", n.out[0], ") into the open group: shape ",
                    shape_str(shape), " differs from ", shape_str(cur.shape));
        seal();
      }
      bool reads_reduced = false;
      for (auto& r : cur.reds)
        for (int v : n.in) reads_reduced = reads_reduced || v == r.out;
      if (reads_reduced) {
        log::fusion("not fusing ", op_def(n.op).name, " (%", n.out[0],
                    ") into the open group: it reads the group's reduction, which needs the whole pass first");
        seal();
      }
      if (cur.ops.empty()) cur.shape = shape;
      cur.ops.push_back(op);
      cur_nodes.insert(int(i));
      cur_values.insert(n.out[0]);
      continue;
    }
    if (!cur.row && !cur.ops.empty() && reduction_node(g, int(i), rk, reduced) &&
        cur.shape == g.values[n.in[0]].sizes) {
      // Note [Reduction kernels]: the first reduction must read the group; later ones over the
      // same dims join it whatever they read (horizontal fusion), except the group's own results.
      bool own_result = false;
      for (auto& r : cur.reds) own_result = own_result || r.out == n.in[0];
      bool joins = !own_result && (cur.reds.empty() ? cur_values.count(n.in[0]) != 0 : cur.reduced == reduced);
      if (joins) {
        cur.reduced = reduced;
        cur.reds.push_back({int(i), n.in[0], n.out[0], rk, g.values[n.out[0]].dtype});
        cur_nodes.insert(int(i));
        cur_values.insert(n.out[0]);
        continue;
      }
      if (!cur.reds.empty())
        log::fusion("not fusing ", op_def(n.op).name, " (%", n.out[0],
                    ") into the open reduction kernel: it reduces other dims or reads the kernel's result");
    }
    bool reads_group = false;
    for (int v : n.in) reads_group = reads_group || cur_values.count(v);
    if (reads_group) {
      log::fusion("sealing the open group before ", op_def(n.op).name, " (%", n.out.empty() ? -1 : n.out[0],
                  "), which is not fusible and reads it");
      seal();
    }
    steps.push_back({false, int(i)});
  }
  seal();
  bool substituted = !extra.empty();
  for (auto& n : extra) g.nodes.push_back(std::move(n));
  if (kernels.empty() && !substituted) {
    log::kernels("no fusible group in this graph; running it with eager kernels");
    return interpreter_program(std::move(g));
  }
  if (kernels.empty()) {  // only composite ops put back together: the steps, no library
    p->steps = std::move(steps);
    p->g = std::move(g);
    p->plan_release();
    return p;
  }
  // Note [Shared kernel code]
  // Kernels take their buffers and sizes as arguments (no sizes in the source), so a graph that
  // repeats a computation (an unrolled RNN's steps, a stack of identical layers) yields kernels
  // whose code differs only in names: the kernel's own name and locals named after value ids
  // (t12, v12). Each kernel's code is put in a canonical form (comments dropped, its name and
  // such locals renumbered in order of appearance, see canonical_kernel_code); kernels with the
  // same form run one compiled function, and only the first of them is emitted. The graph of a
  // small HDemucs (BLSTMs unrolled over 200 steps) has 2466 kernels and 16 distinct functions: its
  // cold build went from 348 s to 4.6 s.
  std::vector<std::string> code(kernels.size());
  std::vector<size_t> same_as(kernels.size());
  std::vector<size_t> unique;
  {
    std::unordered_map<std::string, size_t> first_with;
    for (size_t k = 0; k < kernels.size(); k++) {
      std::ostringstream os;
      emit_kernel(os, g, kernels[k]);
      code[k] = os.str();
      auto [it, fresh] = first_with.emplace(canonical_kernel_code(code[k], kernels[k].name), k);
      same_as[k] = it->second;
      if (fresh) unique.push_back(k);
    }
  }
  if (unique.size() < kernels.size())
    log::kernels(kernels.size(), " kernels share ", unique.size(), " distinct functions");
  // Note [Parallel kernel builds]
  // A graph with many kernels is split into parts of at least kPerPart consecutive kernels, one
  // translation unit and library each, compiled at the same time (one compiler process per part,
  // at most one per hardware thread). Each part is an ordinary cache entry keyed by its own
  // source, so a warm cache loads the same parts; a graph with few kernels stays one library,
  // since every compiler process pays for loading the precompiled prelude.
  constexpr size_t kPerPart = 4;
  const size_t hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t nparts = std::max<size_t>(1, std::min(unique.size() / kPerPart, hw));
  std::vector<std::string> bodies(nparts);
  std::vector<size_t> part_of(kernels.size());
  std::vector<std::vector<size_t>> sharers(kernels.size());  // the later kernels running k's code
  for (size_t k = 0; k < kernels.size(); k++)
    if (same_as[k] != k) sharers[same_as[k]].push_back(k);
  for (size_t part = 0, u0 = 0; part < nparts; part++) {
    const size_t u1 = unique.size() * (part + 1) / nparts;
    std::ostringstream src;
    emit_prelude(src);
    for (size_t u = u0; u < u1; u++) {
      const size_t k = unique[u];
      src << code[k];
      if (!sharers[k].empty()) {
        src << "// also run by:";
        for (size_t i = 0; i < sharers[k].size(); i++) {
          if (i == 8) {
            src << " and " << sharers[k].size() - 8 << " more";
            break;
          }
          src << " " << kernels[sharers[k][i]].name;
        }
        src << "\n\n";
      }
      part_of[k] = part;
    }
    bodies[part] = src.str();
    u0 = u1;
  }
  for (size_t k = 0; k < kernels.size(); k++) part_of[k] = part_of[same_as[k]];
  std::vector<std::future<const cg::Library*>> built;
  for (std::string& body : bodies) {
    std::string key = cg::kernel_key(body);
    body += "extern \"C\" const char* fw_kernel_key() { return \"" + key + "\"; }\n";
    built.push_back(std::async(nparts > 1 ? std::launch::async : std::launch::deferred,
                               [&body, key] { return &cg::load_library(body, key); }));
  }
  std::vector<const cg::Library*> libs;
  for (auto& b : built) libs.push_back(b.get());  // rethrows a compiler failure
  for (size_t k = 0; k < kernels.size(); k++)
    p->fns.push_back(reinterpret_cast<KernelFn>(libs[part_of[k]]->symbol(kernels[same_as[k]].name)));
  std::string body, paths;
  for (size_t part = 0; part < nparts; part++) {
    body += bodies[part];
    paths += (part ? ", " : "") + libs[part]->path;
  }
  log::kernels(kernels.size(), " kernel(s) ready from ", paths);
  p->source = std::move(body);
  p->lib_path = std::move(paths);
  p->kernels = std::move(kernels);
  p->steps = std::move(steps);
  p->g = std::move(g);
  p->plan_release();
  p->eager_wins.assign(p->kernels.size(), 0);
  p->autotune_mode = o.mode() == "max-autotune";
  p->tune.store(p->autotune_mode);
  return p;
}

}  // namespace fw::jit
