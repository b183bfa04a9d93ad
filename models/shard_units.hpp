// models/shard_units.hpp — the units ZeRO stage 3 / FSDP FULL_SHARD gathers and reduces at a time: one per
// transformer layer (FSDP's usual auto-wrap policy: one unit per block), and a root unit with everything else
// (embeddings, final LayerNorm, heads — the tied word embeddings must sit in one unit with both their users,
// as FSDP requires of shared parameters). The root's parameters are gathered before the embeddings' forward
// and kept until the head's forward is done, gathered again before the head's backward and kept until the
// embeddings' backward is done; a layer's are gathered before its forward and again before its backward.
// Model, choices and the memory this leaves gathered: docs/parallelism.md.
#pragma once
#include <vector>

#include "models/task_graph.hpp"

namespace ptsim::models {

struct ShardUnit {
  int layer = -1;              // the transformer layer; -1 for the root unit
  std::vector<int> params;     // indices into TaskGraph::params
  double weight_bytes = 0;     // the unit's whole parameters in compute precision (this TP rank's slice)
  double gradient_bytes = 0;   // its whole gradients
};

// Root first, then the layers in model order (only those with parameters).
std::vector<ShardUnit> shard_units(const TaskGraph& graph);

// What a ZeRO-3 rank holds gathered at its peak, above its 1/N shards (docs/parallelism.md): the root
// unit's parameters and gradients (held across the forward and across the backward) plus, for the layers,
// two layers' parameters (the one running and the one prefetched) and one layer's whole gradients (the one
// whose backward runs, until its reduce-scatter).
struct GatheredWorkingSet {
  double weights_bytes = 0;
  double gradients_bytes = 0;
};
GatheredWorkingSet gathered_working_set(const std::vector<ShardUnit>& units);

}  // namespace ptsim::models
