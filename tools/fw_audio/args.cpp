#include "tools/fw_audio/args.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

namespace fwaudio {

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
bool is_none(const std::string& s) { return lower(s) == "none"; }
std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); i++) out += (i ? sep : "") + v[i];
  return out;
}
}  // namespace

std::optional<int64_t> parse_int(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return std::nullopt;
  return int64_t(v);
}

std::optional<double> parse_double(const std::string& s) {
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno == ERANGE || end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::optional<bool> parse_bool(const std::string& s) {
  std::string l = lower(s);
  if (l == "true" || l == "t" || l == "1") return true;
  if (l == "false" || l == "f" || l == "0") return false;
  return std::nullopt;
}

OptionSet& OptionSet::add(Kind kind, const std::string& name, const std::string& def, const std::string& help,
                          std::vector<std::string> choices, bool nullable) {
  if (lookup(name)) throw std::logic_error("option declared twice: " + name);
  Opt o{kind, name, def, help, std::move(choices), nullable || is_none(def), def, false};
  opts_.push_back(std::move(o));
  return *this;
}

OptionSet::Opt* OptionSet::lookup(const std::string& name) {
  for (auto& o : opts_)
    if (o.name == name) return &o;
  return nullptr;
}

const OptionSet::Opt& OptionSet::find(const std::string& name) const {
  for (const auto& o : opts_)
    if (o.name == name) return o;
  throw std::logic_error("fw-audio: undeclared option " + name);
}

void OptionSet::set(Opt& o, const std::string& value) {
  const std::string flag = "--" + o.name;
  if (o.nullable && is_none(value)) {
    o.value = "none";
    o.given = true;
    return;
  }
  switch (o.kind) {
    case Kind::Int:
      if (!parse_int(value)) throw UsageError(flag + ": expected an integer, got '" + value + "'");
      break;
    case Kind::Double:
      if (!parse_double(value)) throw UsageError(flag + ": expected a number, got '" + value + "'");
      break;
    case Kind::Bool:
      if (auto b = parse_bool(value)) {
        o.value = *b ? "true" : "false";
        o.given = true;
        return;
      }
      if (std::find(o.choices.begin(), o.choices.end(), value) == o.choices.end())
        throw UsageError(flag + ": expected true or false" + (o.choices.empty() ? "" : " or " + join(o.choices, " or ")) +
                         ", got '" + value + "'");
      break;
    case Kind::String:
      if (!o.choices.empty() && std::find(o.choices.begin(), o.choices.end(), value) == o.choices.end())
        throw UsageError(flag + ": expected one of " + join(o.choices, ", ") + (o.nullable ? ", none" : "") +
                         "; got '" + value + "'");
      break;
  }
  o.value = value;
  o.given = true;
}

std::vector<std::string> OptionSet::parse(const std::vector<std::string>& args) {
  std::vector<std::string> pos;
  bool options_done = false;
  for (size_t i = 0; i < args.size(); i++) {
    const std::string& a = args[i];
    if (options_done || a.size() < 2 || a[0] != '-') {
      pos.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
      continue;
    }
    if (a == "--help" || a == "-h") {
      help_ = true;
      continue;
    }
    if (a[1] != '-') throw UsageError("unknown option '" + a + "' (options are written --name=value)");
    size_t eq = a.find('=');
    std::string name = a.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
    Opt* o = lookup(name);
    if (!o && name.rfind("no-", 0) == 0) {  // --no-center
      Opt* b = lookup(name.substr(3));
      if (b && b->kind == Kind::Bool) {
        if (eq != std::string::npos) throw UsageError("--" + name + " takes no value");
        set(*b, "false");
        continue;
      }
    }
    if (!o) throw UsageError("unknown option --" + name + " (see --help)");
    if (eq != std::string::npos) {
      set(*o, a.substr(eq + 1));
    } else if (o->kind == Kind::Bool) {
      // A bare switch means true; "--flag true|false" takes the next word when it is one of those
      // (or one of the option's extra words).
      if (i + 1 < args.size() &&
          (args[i + 1] == "true" || args[i + 1] == "false" ||
           std::find(o->choices.begin(), o->choices.end(), args[i + 1]) != o->choices.end()))
        set(*o, args[++i]);
      else
        set(*o, "true");
    } else {
      if (i + 1 >= args.size()) throw UsageError("option --" + name + " needs a value");
      set(*o, args[++i]);
    }
  }
  return pos;
}

const std::string& OptionSet::text(const std::string& name) const { return find(name).value; }
bool OptionSet::given(const std::string& name) const { return find(name).given; }
bool OptionSet::has(const std::string& name) const {
  for (const auto& o : opts_)
    if (o.name == name) return true;
  return false;
}

int64_t OptionSet::get_int(const std::string& name) const {
  auto v = get_opt_int(name);
  if (!v) throw UsageError("--" + name + " needs a value, not none");
  return *v;
}
double OptionSet::get_double(const std::string& name) const {
  auto v = get_opt_double(name);
  if (!v) throw UsageError("--" + name + " needs a value, not none");
  return *v;
}
bool OptionSet::get_bool(const std::string& name) const {
  auto b = parse_bool(find(name).value);
  if (!b) throw std::logic_error("fw-audio: option --" + name + " is not a plain boolean");
  return *b;
}
std::string OptionSet::get_string(const std::string& name) const {
  auto v = get_opt_string(name);
  if (!v) throw UsageError("--" + name + " needs a value, not none");
  return *v;
}
std::optional<int64_t> OptionSet::get_opt_int(const std::string& name) const {
  const Opt& o = find(name);
  if (o.kind != Kind::Int) throw std::logic_error("fw-audio: option --" + name + " is not an integer");
  if (is_none(o.value)) return std::nullopt;
  return parse_int(o.value);
}
std::optional<double> OptionSet::get_opt_double(const std::string& name) const {
  const Opt& o = find(name);
  if (o.kind != Kind::Double) throw std::logic_error("fw-audio: option --" + name + " is not a number");
  if (is_none(o.value)) return std::nullopt;
  return parse_double(o.value);
}
std::optional<std::string> OptionSet::get_opt_string(const std::string& name) const {
  const Opt& o = find(name);
  if (o.nullable && is_none(o.value)) return std::nullopt;
  return o.value;
}

std::string OptionSet::describe() const {
  // "  --name=TYPE" then the help at column kCol, or on the next line when the name is long.
  constexpr size_t kCol = 32;
  std::ostringstream os;
  for (const auto& o : opts_) {
    std::string lhs = "  --" + o.name;
    switch (o.kind) {
      case Kind::Int: lhs += "=INT"; break;
      case Kind::Double: lhs += "=FLOAT"; break;
      case Kind::Bool:
        lhs += "[=true|false";
        for (const auto& c : o.choices) lhs.append("|").append(c);
        lhs += "]";
        break;
      case Kind::String:
        if (o.choices.empty()) lhs += "=STR";
        for (size_t i = 0; i < o.choices.size(); i++) lhs.append(i ? "|" : "=").append(o.choices[i]);
        break;
    }
    if (o.nullable) lhs += "|none";
    os << lhs;
    if (lhs.size() + 2 > kCol) os << "\n" << std::string(kCol, ' ');
    else os << std::string(kCol - lhs.size(), ' ');
    os << o.help << " (default " << o.def << ")\n";
  }
  return os.str();
}

}  // namespace fwaudio
