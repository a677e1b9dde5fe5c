#include "tests/fixture.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "tests/op_table.h"

namespace fwtest {

namespace {

fw::ScalarType parse_dtype(const std::string& s) {
  static const std::map<std::string, fw::ScalarType> m = {
      {"bool", fw::kBool},       {"uint8", fw::kByte},      {"int8", fw::kChar},       {"int16", fw::kShort},
      {"int32", fw::kInt},       {"int64", fw::kLong},      {"float16", fw::kHalf},    {"bfloat16", fw::kBFloat16},
      {"float32", fw::kFloat},   {"float64", fw::kDouble},  {"complex64", fw::kComplexFloat},
      {"complex128", fw::kComplexDouble}};
  auto it = m.find(s);
  if (it == m.end()) throw std::runtime_error("fixture: unknown dtype " + s);
  return it->second;
}

double parse_double(const std::string& s) {
  if (s == "nan") return NAN;
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  // strtod, not stod: subnormal values (gradients far below 1e-308) are valid fixture numbers.
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || *end != '\0') throw std::runtime_error("fixture: bad number '" + s + "'");
  return v;
}

fw::Tensor read_tensor(std::istream& is, fw::ScalarType dt) {
  int64_t nd;
  is >> nd;
  std::vector<int64_t> sizes(nd);
  int64_t n = 1;
  for (auto& s : sizes) { is >> s; n *= s; }
  if (fw::is_integral(dt, true)) {
    std::vector<int64_t> v(n);
    for (auto& x : v) is >> x;
    fw::Tensor t = fw::empty(sizes, fw::kLong);
    std::copy(v.begin(), v.end(), t.data_ptr<int64_t>());
    return t.to(dt);
  }
  int64_t count = fw::is_complex(dt) ? 2 * n : n;
  std::vector<double> v(count);
  std::string tok;
  for (auto& x : v) { is >> tok; x = parse_double(tok); }
  if (fw::is_complex(dt)) {
    std::vector<int64_t> s2 = sizes;
    s2.push_back(2);
    fw::Tensor t = fw::empty(s2, fw::kDouble);
    std::copy(v.begin(), v.end(), t.data_ptr<double>());
    return fw::view_as_complex(t.to(fw::to_real_value_type(dt))).clone();
  }
  fw::Tensor t = fw::empty(sizes, fw::kDouble);
  std::copy(v.begin(), v.end(), t.data_ptr<double>());
  return t.to(dt);
}

// Same values, requested memory layout.
fw::Tensor with_layout(const fw::Tensor& t, const std::string& layout) {
  if (layout == "c" || t.dim() == 0) return t;
  if (layout == "T" && t.dim() >= 2) {
    std::vector<int64_t> rev;
    for (int64_t i = t.dim() - 1; i >= 0; i--) rev.push_back(i);
    return t.permute(rev).contiguous().permute(rev);
  }
  std::vector<int64_t> big(t.sizes().begin(), t.sizes().end());
  big.back() *= 2;
  fw::Tensor base = fw::zeros(big, t.dtype());
  fw::Tensor v = base.slice(-1, 0, std::nullopt, 2);
  v.copy_(t);
  return v;
}

FixArg read_arg(std::istream& is) {
  FixArg a;
  std::string kind;
  is >> kind;
  if (kind == "int") { a.kind = FixArg::Kind::Int; is >> a.i; a.f = double(a.i); }
  else if (kind == "float") { std::string s; is >> s; a.kind = FixArg::Kind::Float; a.f = parse_double(s); }
  else if (kind == "bool") { int v; is >> v; a.kind = FixArg::Kind::Bool; a.b = v; a.i = v; }
  else if (kind == "str") { a.kind = FixArg::Kind::Str; is >> a.s; }
  else if (kind == "ints") {
    int64_t n;
    is >> n;
    a.kind = FixArg::Kind::Ints;
    a.ints.resize(n);
    for (auto& x : a.ints) is >> x;
  } else if (kind == "dtype") { std::string s; is >> s; a.kind = FixArg::Kind::Dtype; a.dtype = parse_dtype(s); }
  else if (kind == "none") { a.kind = FixArg::Kind::None; }
  else throw std::runtime_error("fixture: unknown arg kind " + kind);
  return a;
}

void load_file(const std::string& path, std::vector<FixCase>& out) {
  std::ifstream f(path);
  std::string line, tok;
  FixCase cur;
  bool open = false;
  std::stringstream all;
  all << f.rdbuf();
  while (all >> tok) {
    if (tok[0] == '#') { std::getline(all, line); continue; }
    if (tok == "case") {
      cur = FixCase();
      cur.file = std::filesystem::path(path).filename().string();
      all >> cur.name >> cur.op;
      open = true;
    } else if (tok == "in") {
      std::string dt, layout;
      all >> dt >> layout;
      cur.in.push_back(with_layout(read_tensor(all, parse_dtype(dt)), layout));
      cur.layouts.push_back(layout);
    } else if (tok == "arg") {
      cur.args.push_back(read_arg(all));
    } else if (tok == "out") {
      std::string dt;
      all >> dt;
      cur.out.push_back(read_tensor(all, parse_dtype(dt)));
    } else if (tok == "end" && open) {
      out.push_back(std::move(cur));
      open = false;
    } else {
      throw std::runtime_error("fixture " + path + ": unexpected token '" + tok + "'");
    }
  }
}

}  // namespace

const std::vector<FixCase>& all_fixtures() {
  static const std::vector<FixCase> cases = [] {
    std::vector<FixCase> v;
    std::vector<std::string> files;
    for (auto& e : std::filesystem::directory_iterator(FW_FIXTURE_DIR))
      if (e.path().extension() == ".fix") files.push_back(e.path().string());
    std::sort(files.begin(), files.end());
    for (auto& p : files) load_file(p, v);
    return v;
  }();
  return cases;
}

void default_tolerance(fw::ScalarType t, double* rtol, double* atol) {
  switch (t) {
    case fw::kHalf: *rtol = 1e-3; *atol = 1e-5; break;
    case fw::kBFloat16: *rtol = 1.6e-2; *atol = 1e-5; break;
    case fw::kFloat: case fw::kComplexFloat: *rtol = 1.3e-6; *atol = 1e-5; break;
    case fw::kDouble: case fw::kComplexDouble: *rtol = 1e-7; *atol = 1e-7; break;
    default: *rtol = 0; *atol = 0;
  }
}

std::string compare(const fw::Tensor& actual, const fw::Tensor& expected, double rtol, double atol) {
  std::ostringstream os;
  if (!actual.defined()) return "actual tensor is undefined";
  if (actual.dtype() != expected.dtype())
    os << "dtype " << fw::dtype_str(actual.dtype()) << " != expected " << fw::dtype_str(expected.dtype()) << "; ";
  if (!actual.sizes().equals(expected.sizes())) {
    os << "shape " << actual.sizes() << " != expected " << expected.sizes();
    return os.str();
  }
  double dr, da;
  default_tolerance(expected.dtype(), &dr, &da);
  if (rtol < 0) rtol = dr;
  if (atol < 0) atol = da;
  auto flat = [](const fw::Tensor& t) {
    fw::Tensor x = t.is_complex() ? fw::view_as_real(t.contiguous()) : t;
    return x.to(fw::kDouble).contiguous().reshape({-1});
  };
  fw::Tensor a = flat(actual), e = flat(expected);
  const double* pa = a.data_ptr<double>();
  const double* pe = e.data_ptr<double>();
  int bad = 0;
  for (int64_t i = 0; i < a.numel(); i++) {
    double x = pa[i], y = pe[i];
    bool ok = (std::isnan(x) && std::isnan(y)) || x == y || std::abs(x - y) <= atol + rtol * std::abs(y);
    if (!ok && bad++ < 5) os << "at flat index " << i << ": " << x << " vs expected " << y << "; ";
  }
  if (bad) os << bad << " of " << a.numel() << " values differ (rtol " << rtol << ", atol " << atol << ")";
  return os.str();
}

std::map<std::string, OpTest>& op_tests() {
  static std::map<std::string, OpTest> m;
  return m;
}

OpTestRegistrar::OpTestRegistrar(const char* name, void (*fill)(OpTest&)) {
  OpTest& t = op_tests()[name];
  t.op = name;
  fill(t);
}

fw::Tensor read_record_tensor(std::istream& in) {
  std::string dt;
  in >> dt;
  fw::ScalarType t = dt == "i64" ? fw::kLong : dt == "f32" ? fw::kFloat : fw::kDouble;
  if (dt != "i64" && dt != "f32" && dt != "f64") throw std::runtime_error("fixture: unknown record dtype '" + dt + "'");
  return read_tensor(in, t);
}

}  // namespace fwtest
