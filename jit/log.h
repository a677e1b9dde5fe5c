// FW_LOGS=graphs,guards,recompiles,breaks,fusion,kernels,perf (or "all"): readable traces of what
// fw::compile does, on stderr, one topic per line prefix.
#pragma once
#include <iostream>
#include <sstream>

namespace fw::jit::log {

enum Topic : unsigned { kGraphs = 1, kGuards = 2, kRecompiles = 4, kBreaks = 8, kFusion = 16, kKernels = 32, kPerf = 64 };
// The topics FW_LOGS enables (read once).
unsigned enabled();
void emit(const char* topic, const std::string& text);

template <class... A>
void write(Topic t, const char* name, const A&... a) {
  if (!(enabled() & t)) return;
  std::ostringstream os;
  (os << ... << a);
  emit(name, os.str());
}
template <class... A> void graphs(const A&... a) { write(kGraphs, "graphs", a...); }
template <class... A> void guards(const A&... a) { write(kGuards, "guards", a...); }
template <class... A> void recompiles(const A&... a) { write(kRecompiles, "recompiles", a...); }
template <class... A> void breaks(const A&... a) { write(kBreaks, "breaks", a...); }
template <class... A> void fusion(const A&... a) { write(kFusion, "fusion", a...); }
template <class... A> void kernels(const A&... a) { write(kKernels, "kernels", a...); }
template <class... A> void perf(const A&... a) { write(kPerf, "perf", a...); }

}  // namespace fw::jit::log
