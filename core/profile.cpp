// Note [Op profiler]
// FW_PROFILE=1 (read once, at the first scope) makes the dispatch door time every kernel call
// ("op") and the autograd engine every vjp ("vjp"); other code may open its own scopes (the
// oneDNN convolutions time their reorders). Each scope's self time excludes the scopes nested in
// it, so the self column adds up to the time spent inside scopes. Only the thread that opens a
// scope is timed (work a kernel hands to the thread pool counts as its kernel's). At exit the
// totals go to stderr, largest self time first:
//   kind  name  calls  self ms  total ms
// Meant for finding where a program's time goes (FW_PROFILE=1 ./prog); each scope costs two
// clock reads and a locked map update, so keep it off when timing.
#include "core/profile.h"

#include "fw/torch_compat.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace fw::detail {

namespace {

struct Stat {
  long calls = 0;
  double self_s = 0, total_s = 0;
};

struct Table {
  std::mutex mu;
  std::map<std::pair<std::string, std::string>, Stat> stats;
  ~Table() {
    std::vector<std::pair<std::pair<std::string, std::string>, Stat>> rows(stats.begin(), stats.end());
    if (rows.empty()) return;
    std::sort(rows.begin(), rows.end(), [](auto& a, auto& b) { return a.second.self_s > b.second.self_s; });
    double sum = 0;
    for (auto& r : rows) sum += r.second.self_s;
    std::fprintf(stderr, "FW_PROFILE: %-5s %-34s %9s %11s %11s\n", "kind", "name", "calls", "self ms", "total ms");
    for (auto& [k, s] : rows)
      std::fprintf(stderr, "FW_PROFILE: %-5s %-34s %9ld %11.2f %11.2f\n", k.first.c_str(), k.second.c_str(), s.calls,
                   s.self_s * 1e3, s.total_s * 1e3);
    std::fprintf(stderr, "FW_PROFILE: sum of self times %.2f ms\n", sum * 1e3);
  }
};

Table& table() {
  static Table t;
  return t;
}

thread_local ProfileScope* t_top = nullptr;

}  // namespace

bool profile_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("FW_PROFILE");
    bool v = e && *e && std::string(e) != "0";
    if (v) table();  // constructed before any scope ends, so it is destroyed after them
    return v;
  }();
  return on;
}

void profile_event(const char* kind, const char* name) {
  if (!profile_enabled()) return;
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  t.stats[{kind, name}].calls++;
}

void ProfileScope::begin(const char* kind, const char* name) {
  active_ = true;
  kind_ = kind;
  name_ = name;
  parent_ = t_top;
  t_top = this;
  t0_ = std::chrono::steady_clock::now();
}

void ProfileScope::end() {
  double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  t_top = parent_;
  if (parent_) parent_->child_s_ += total;
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  Stat& s = t.stats[{kind_, name_}];
  s.calls++;
  s.self_s += total - child_s_;
  s.total_s += total;
}

// RECORD_FUNCTION (fw/torch_compat.h): user regions named at run time; ProfileScope keeps the
// name's pointer, so each distinct name is interned once.
UserProfileScope::UserProfileScope(const std::string& name) {
  if (!profile_enabled()) return;
  static std::mutex mu;
  static std::set<std::string> names;
  const char* interned;
  {
    std::lock_guard<std::mutex> lk(mu);
    interned = names.insert(name).first->c_str();
  }
  scope_ = new ProfileScope("user", interned);
}
UserProfileScope::~UserProfileScope() { delete static_cast<ProfileScope*>(scope_); }

}  // namespace fw::detail
