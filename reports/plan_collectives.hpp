// reports/plan_collectives.hpp — the collectives the planner's step bound (reports/plan_bound) charges, each
// timed alone on an idle copy of the cluster by the network model (sim::simulate_collective), with the rank
// groups the step simulators use (sim/step_simulator, sim/sharded_step, sim/pipeline_step). Alone is a lower
// bound of what the same collective takes in a step, where other flows share its links. docs/planning.md.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "models/recipe.hpp"
#include "models/task_graph.hpp"
#include "sim/collectives.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::reports {

using RankGroups = std::vector<std::vector<int>>;

// The groups of one collective (the first one and those running with it), for pipeline stage `stage`
// (0 without a pipeline): tensor-parallel, data-parallel, or — ZeRO-3 with recipe.shard_group — the shard
// groups (CommGroup::data_parallel) and the replica groups (CommGroup::shard_replicas).
RankGroups collective_groups(const models::Recipe& recipe, models::CommGroup group, int stage);

class AloneCollectives {
 public:
  explicit AloneCollectives(const sim::ClusterConfig& config) : config_(config) {}
  // Seconds of `kind` over `groups` alone on the network: a ring, or — `any_algorithm`, for the data-parallel
  // all-reduces the simulators time with the scenario's algorithm or `automatic`'s choice — the scenario's
  // algorithm, or under `automatic` the fastest of ring, tree (where sim::choose_algorithm would try it) and
  // hierarchical. Cached by kind, bytes and groups.
  double seconds(sim::CollectiveKind kind, double bytes, const RankGroups& groups, bool any_algorithm = false);
  // The collective a communication op of `recipe`'s graph runs (its kind, bytes and group), at `stage`.
  double op_seconds(const models::Recipe& recipe, const models::Op& op, int stage);
  double op_seconds(const models::Recipe& recipe, models::OpKind kind, const models::CommAttrs& comm, int stage);

 private:
  double run(sim::CollectiveSpec spec, sim::CollectiveAlgorithm algorithm) const;
  sim::ClusterConfig config_;
  std::map<std::string, double> seconds_;
};

}  // namespace ptsim::reports
