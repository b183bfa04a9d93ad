// sim/rank_groups.cpp — rank groups of data, tensor and hybrid-sharded collectives (see the header).
#include "sim/rank_groups.hpp"

namespace ptsim::sim {

std::vector<std::vector<int>> rank_groups(models::CommGroup group, int dp, int tp, int shards) {
  std::vector<std::vector<int>> out;
  if (group == models::CommGroup::tensor_parallel) {
    for (int d = 0; d < dp; ++d) {
      out.emplace_back();
      for (int t = 0; t < tp; ++t) out.back().push_back(d * tp + t);
    }
    return out;
  }
  const int replicas = dp / shards;
  const bool across = group == models::CommGroup::shard_replicas;
  for (int t = 0; t < tp; ++t)
    for (int k = 0; k < (across ? shards : replicas); ++k) {
      out.emplace_back();
      for (int i = 0; i < (across ? replicas : shards); ++i)
        out.back().push_back((across ? i * shards + k : k * shards + i) * tp + t);
    }
  return out;
}

}  // namespace ptsim::sim
