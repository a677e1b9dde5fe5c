// The prelude of fw's one-source benchmarks (bench_*_api.cpp): built with -DPEER_TORCH against
// libtorch, otherwise against fw, with T naming the framework; med() times a call.
#pragma once
#ifdef PEER_TORCH
#include <torch/torch.h>
namespace T = torch;
#else
#include <fw/fw.h>
namespace T = fw;
#endif
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

// Median seconds of `reps` calls of f after `warm` untimed ones.
static double med(const std::function<void()>& f, int reps = 7, int warm = 2) {
  for (int i = 0; i < warm; i++) f();
  std::vector<double> ts;
  for (int i = 0; i < reps; i++) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    ts.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ts.begin(), ts.end());
  return ts[ts.size() / 2];
}
