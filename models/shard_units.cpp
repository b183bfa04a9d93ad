// models/shard_units.cpp — ZeRO-3 / FSDP units and their gathered working set (see the header).
#include "models/shard_units.hpp"

#include <algorithm>
#include <map>

namespace ptsim::models {

std::vector<ShardUnit> shard_units(const TaskGraph& g) {
  const int64_t layers = g.model.num_layers;
  ShardUnit root;
  std::map<int, ShardUnit> by_layer;
  for (size_t p = 0; p < g.params.size(); ++p) {
    const Parameter& param = g.params[p];
    const bool in_layer = param.layer >= 0 && param.layer < layers;
    ShardUnit& unit = in_layer ? by_layer[param.layer] : root;
    unit.layer = in_layer ? param.layer : -1;
    unit.params.push_back(static_cast<int>(p));
    unit.weight_bytes += static_cast<double>(g.tensor(param.weight).bytes());
    unit.gradient_bytes += static_cast<double>(g.tensor(param.gradient).bytes());
  }
  std::vector<ShardUnit> units;
  if (!root.params.empty()) units.push_back(root);
  for (auto& entry : by_layer) units.push_back(entry.second);
  return units;
}

GatheredWorkingSet gathered_working_set(const std::vector<ShardUnit>& units) {
  GatheredWorkingSet set;
  double largest_weights = 0, largest_gradients = 0;
  int layer_units = 0;
  for (const ShardUnit& u : units) {
    if (u.layer < 0) {
      set.weights_bytes += u.weight_bytes;
      set.gradients_bytes += u.gradient_bytes;
      continue;
    }
    ++layer_units;
    largest_weights = std::max(largest_weights, u.weight_bytes);
    largest_gradients = std::max(largest_gradients, u.gradient_bytes);
  }
  set.weights_bytes += std::min(layer_units, 2) * largest_weights;
  set.gradients_bytes += largest_gradients;
  return set;
}

}  // namespace ptsim::models
