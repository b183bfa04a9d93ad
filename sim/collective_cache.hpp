// sim/collective_cache.hpp — answers about collectives that many step simulations ask again (a sweep):
// the data-parallel algorithm `automatic` resolves to, and how long a gradient all-reduce takes when it
// runs alone on an idle network. Both are pure functions of the cluster and the collective, so reusing
// them changes no prediction (tests/reports/test_sweep.cpp compares cached with uncached runs). The
// durations are kept only for collectives the step simulator runs alone (no tensor parallelism): with
// other traffic a collective's time depends on what else runs. Thread-safe.
#pragma once
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include "sim/collectives.hpp"

namespace ptsim::sim {

struct ClusterConfig;

// Everything a step simulation depends on besides the graph, as text (the cache key).
std::string cluster_key(const ClusterConfig& config);

class CollectiveCache {
 public:
  std::optional<CollectiveAlgorithm> algorithm(const std::string& key) const;
  void remember_algorithm(const std::string& key, CollectiveAlgorithm algorithm);
  std::optional<double> alone_seconds(const std::string& key) const;
  void remember_alone_seconds(const std::string& key, double seconds);

 private:
  mutable std::mutex mutex_;
  std::map<std::string, CollectiveAlgorithm> algorithms_;
  std::map<std::string, double> alone_seconds_;
};

}  // namespace ptsim::sim
