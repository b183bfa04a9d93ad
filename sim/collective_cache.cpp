// sim/collective_cache.cpp — the shared collective answers (see the header).
#include "sim/collective_cache.hpp"

#include <fmt/format.h>

#include "sim/step_simulator.hpp"

namespace ptsim::sim {

std::string cluster_key(const ClusterConfig& c) {
  const auto& n = c.cluster.node;
  return fmt::format("{}|g{}|nic{}|{}|n{}|leaf{}|os{}|{}|alg{}|ch{}|mode{}", n.name, n.gpus_per_node, n.nics_per_node,
                     c.cluster.network.name, c.cluster.nodes, c.cluster.fabric.nodes_per_leaf,
                     c.cluster.fabric.oversubscription, c.gpu.name + "/" + c.gpu.stack, static_cast<int>(c.data_parallel_algorithm),
                     c.channels, static_cast<int>(c.mode));
}

std::optional<CollectiveAlgorithm> CollectiveCache::algorithm(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = algorithms_.find(key);
  if (it == algorithms_.end()) return std::nullopt;
  return it->second;
}

void CollectiveCache::remember_algorithm(const std::string& key, CollectiveAlgorithm algorithm) {
  std::lock_guard lock(mutex_);
  algorithms_.emplace(key, algorithm);
}

std::optional<double> CollectiveCache::alone_seconds(const std::string& key) const {
  std::lock_guard lock(mutex_);
  auto it = alone_seconds_.find(key);
  if (it == alone_seconds_.end()) return std::nullopt;
  return it->second;
}

void CollectiveCache::remember_alone_seconds(const std::string& key, double seconds) {
  std::lock_guard lock(mutex_);
  alone_seconds_.emplace(key, seconds);
}

}  // namespace ptsim::sim
