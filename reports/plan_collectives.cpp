// reports/plan_collectives.cpp — collectives timed alone for the planner's bound (see the header).
#include "reports/plan_collectives.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "sim/pipeline_step.hpp"

namespace ptsim::reports {

// As the simulators number ranks: sim::pipeline_rank (tensor parallel innermost; without a pipeline d·T + t),
// ZeRO-2's and ZeRO-3's shard group S consecutive data-parallel ranks, a replica group the same place in every shard group.
RankGroups collective_groups(const models::Recipe& r, models::CommGroup group, int stage) {
  const int tp = static_cast<int>(r.tensor_parallel), dp = static_cast<int>(r.data_parallel);
  const int stages = static_cast<int>(r.pipeline_parallel);
  auto rank = [&](int d, int t) { return sim::pipeline_rank(stage, d, t, dp, tp, stages, r.rank_order); };
  RankGroups out;
  if (group == models::CommGroup::tensor_parallel) {
    for (int d = 0; d < dp; ++d) {
      out.emplace_back();
      for (int t = 0; t < tp; ++t) out.back().push_back(rank(d, t));
    }
    return out;
  }
  const int shard = r.zero_stage > 0 ? static_cast<int>(r.zero_shards()) : dp, replicas = dp / shard;
  const bool across = group == models::CommGroup::shard_replicas;
  for (int t = 0; t < tp; ++t)
    for (int k = 0; k < (across ? shard : replicas); ++k) {
      out.emplace_back();
      for (int i = 0; i < (across ? replicas : shard); ++i) out.back().push_back(rank(across ? i * shard + k : k * shard + i, t));
    }
  return out;
}

double AloneCollectives::run(sim::CollectiveSpec spec, sim::CollectiveAlgorithm algorithm) const {
  spec.algorithm = algorithm;
  return sim::simulate_collective(config_.cluster, spec).duration_seconds();
}

double AloneCollectives::seconds(sim::CollectiveKind kind, double bytes, const RankGroups& groups, bool any_algorithm) {
  if (groups.empty() || groups.front().size() < 2) return 0;
  std::string key = fmt::format("{}|{}|{}|", static_cast<int>(kind), bytes, any_algorithm);
  for (const auto& g : groups) key += fmt::format("{},", fmt::join(g, " "));
  if (auto it = seconds_.find(key); it != seconds_.end()) return it->second;
  sim::CollectiveSpec spec;
  spec.kind = kind;
  spec.bytes = bytes;
  spec.ranks = groups.front();
  spec.concurrent_groups.assign(groups.begin() + 1, groups.end());
  spec.channels = config_.effective_channels();
  spec.mode = config_.mode;
  double best = 0;
  if (!any_algorithm || kind != sim::CollectiveKind::all_reduce) {
    best = run(spec, sim::CollectiveAlgorithm::ring);
  } else if (config_.data_parallel_algorithm != sim::CollectiveAlgorithm::automatic) {
    best = run(spec, config_.data_parallel_algorithm);
  } else {
    // sim::choose_algorithm's candidates: the tree only up to 4,096 flows a step, hierarchical over whole nodes.
    best = run(spec, sim::CollectiveAlgorithm::ring);
    const size_t flows = 4 * groups.front().size() * groups.size() * static_cast<size_t>(spec.channels);
    for (auto algorithm : {sim::CollectiveAlgorithm::tree, sim::CollectiveAlgorithm::hierarchical}) {
      if (algorithm == sim::CollectiveAlgorithm::tree && flows > 4096) continue;
      try {
        best = std::min(best, run(spec, algorithm));
      } catch (const std::invalid_argument&) {  // not a shape this algorithm runs
      }
    }
  }
  return seconds_[key] = best;
}

double AloneCollectives::op_seconds(const models::Recipe& r, const models::Op& op, int stage) {
  return op_seconds(r, op.kind, op.attrs.comm, stage);
}

double AloneCollectives::op_seconds(const models::Recipe& r, models::OpKind op_kind, const models::CommAttrs& comm,
                                    int stage) {
  const sim::CollectiveKind kind = op_kind == models::OpKind::reduce_scatter ? sim::CollectiveKind::reduce_scatter
                                   : op_kind == models::OpKind::all_gather   ? sim::CollectiveKind::all_gather
                                                                             : sim::CollectiveKind::all_reduce;
  const bool data_parallel = comm.group == models::CommGroup::data_parallel;
  // The data-parallel all-reduces run the scenario's algorithm or automatic's choice, except ZeRO-3's (rings).
  return seconds(kind, comm.bytes, collective_groups(r, comm.group, stage), data_parallel && r.zero_stage < 3);
}

}  // namespace ptsim::reports
