// FW_PROFILE=1: wall time per op kernel and per vjp, printed to stderr at exit (Note [Op profiler]
// in core/profile.cpp). Off (one predictable branch per scope) unless the variable is set.
#pragma once
#include <chrono>

namespace fw::detail {

bool profile_enabled();

// Times its lifetime under `name` (a string with static storage) in group `kind` ("op", "vjp",
// or any other static label). Time spent in nested scopes is reported as the inner scope's.
// Counts one occurrence of `name` (calls only, no time) when profiling is on.
void profile_event(const char* kind, const char* name);

class ProfileScope {
 public:
  ProfileScope(const char* kind, const char* name) {
    if (profile_enabled()) begin(kind, name);
  }
  ~ProfileScope() {
    if (active_) end();
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  void begin(const char* kind, const char* name);
  void end();
  bool active_ = false;
  const char* kind_ = nullptr;
  const char* name_ = nullptr;
  ProfileScope* parent_ = nullptr;
  double child_s_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace fw::detail
