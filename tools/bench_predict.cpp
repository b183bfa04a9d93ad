// tools/bench_predict.cpp — how fast is a prediction? Times `predict_scenario` on the shipped scenarios
// (median of N runs, one thread) and, side by side in the same run, the fast replicated network mode
// against the exact one (every flow) on a cluster small enough for exact mode.
// Reference point (quoted, not measured here): Calculon, an analytical Python model, takes ~0.6 s per
// configuration (issue #3). Usage: bench_predict [runs=5] [scenario ...]
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "reports/prediction.hpp"
#include "reports/scenario.hpp"

using namespace ptsim;

namespace {

template <class F>
double median_seconds(int runs, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = argc > 1 ? std::max(1, std::atoi(argv[1])) : 5;
  std::vector<std::string> names(argv + std::min(argc, 2), argv + argc);
  if (names.empty()) names = {"dgx-superpod-47min", "lans-p3dn-54min", "t4-academic-cluster", "megatron-8.3b-512gpu"};
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  fmt::print("{:<24} {:>6} {:>14} {:>22}\n", "scenario", "GPUs", "median s", "vs Calculon 0.6 s (quoted)");
  for (const auto& name : names) {
    reports::Scenario s = reports::load_scenario(name);
    int gpus = 0;
    double t = median_seconds(runs, [&] { gpus = reports::predict_scenario(s, profiles).gpus; });
    fmt::print("{:<24} {:>6} {:>14.4f} {:>21.1f}×\n", name, gpus, t, 0.6 / t);
  }
  // Side by side: replicated vs exact network simulation on 64 T4 (8 nodes, 10 GbE, PCIe contention).
  reports::Scenario small = reports::load_scenario("t4-academic-cluster", {"cluster.nodes=8"});
  double replicated = median_seconds(runs, [&] { reports::predict_scenario(small, profiles); });
  small.exact = true;
  double exact = median_seconds(runs, [&] { reports::predict_scenario(small, profiles); });
  fmt::print("\nt4 cluster, 8 nodes (64 GPUs): replicated {:.4f} s, exact {:.4f} s → replicated is {:.1f}× faster\n",
             replicated, exact, exact / replicated);
  return 0;
}
