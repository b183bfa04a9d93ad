// sim/rank_groups.hpp — the rank groups a data × tensor-parallel step's collectives span (sim/step_simulator,
// sim/sharded_step): tensor-parallel groups are tp consecutive ranks; the data-parallel ranks of tensor-parallel
// position t are d·tp + t; under hybrid sharding (recipe.shard_group S) a shard group is S consecutive such d,
// and a replica group the same place in every shard group. Without hybrid sharding (S = D) the data-parallel
// group is all D ranks of a position. The first group of the result is the one rank 0 belongs to.
#pragma once
#include <vector>

#include "models/task_graph.hpp"

namespace ptsim::sim {

// `group` of models::OpAttrs::comm; `shards` is recipe.zero_shards() (D when there is no shard group).
std::vector<std::vector<int>> rank_groups(models::CommGroup group, int data_parallel, int tensor_parallel, int shards);

}  // namespace ptsim::sim
