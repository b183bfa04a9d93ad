// models/memory_plan.cpp — liveness over the op order and first-fit placement in one arena.
#include "models/memory_plan.hpp"

#include <algorithm>
#include <iterator>
#include <map>

#include "models/shard_units.hpp"
#include "models/zero.hpp"

namespace ptsim::models {
namespace {

int64_t aligned(int64_t bytes) { return (bytes + kArenaAlignmentBytes - 1) / kArenaAlignmentBytes * kArenaAlignmentBytes; }

// Free-list allocator over [0, ∞): first fit, coalescing on free. Tracks the high-water mark.
class Arena {
 public:
  int64_t allocate(int64_t size) {
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < size) continue;
      int64_t offset = it->first;
      int64_t remaining = it->second - size;
      free_.erase(it);
      if (remaining > 0) free_[offset + size] = remaining;
      return offset;
    }
    // Grow at the end (merging with a trailing free block).
    int64_t offset = high_water_;
    if (!free_.empty()) {
      auto last = std::prev(free_.end());
      if (last->first + last->second == high_water_) {
        offset = last->first;
        free_.erase(last);
      }
    }
    high_water_ = std::max(high_water_, offset + size);
    return offset;
  }
  void release(int64_t offset, int64_t size) {
    auto [it, inserted] = free_.emplace(offset, size);
    (void)inserted;
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }
  int64_t high_water() const { return high_water_; }

 private:
  std::map<int64_t, int64_t> free_;  // offset → size
  int64_t high_water_ = 0;
};

bool in_arena(const Tensor& t) { return t.role == TensorRole::activation || t.role == TensorRole::workspace; }

// An arena tensor that some op produces (and so is released after its last reader).
bool produced_in_arena(const Tensor& t) { return in_arena(t) && t.producer >= 0; }

// Tensors that a micro-step's forward leaves for its backward: activations produced before the first
// non-forward op and read after it, and inputs read on both sides (a pipeline stage's received activation).
std::vector<int> retained_tensors(const TaskGraph& g, const std::vector<int>& last_use) {
  size_t boundary = 0;
  while (boundary < g.ops.size() && g.ops[boundary].phase == Phase::forward) ++boundary;
  std::vector<int> first_use(g.tensors.size(), -1);
  for (const Op& op : g.ops)
    for (int t : op.inputs)
      if (first_use[static_cast<size_t>(t)] < 0) first_use[static_cast<size_t>(t)] = op.id;
  const int b = static_cast<int>(boundary);
  std::vector<int> out;
  for (const Tensor& t : g.tensors) {
    const int last = last_use[static_cast<size_t>(t.id)];
    if (last < b) continue;
    const bool activation = produced_in_arena(t) && t.producer < b;
    const bool input = t.role == TensorRole::input && first_use[static_cast<size_t>(t.id)] >= 0 &&
                       first_use[static_cast<size_t>(t.id)] < b;
    if (activation || input) out.push_back(t.id);
  }
  return out;
}

std::vector<int> last_uses(const TaskGraph& g) {
  std::vector<int> last_use(g.tensors.size(), -1);
  for (const Op& op : g.ops)
    for (int t : op.inputs) last_use[static_cast<size_t>(t)] = std::max(last_use[static_cast<size_t>(t)], op.id);
  return last_use;
}

}  // namespace

void add_model_states(const TaskGraph& g, MemoryPlan& plan) {
  for (const Tensor& t : g.tensors) {
    double bytes = static_cast<double>(t.bytes());
    switch (t.role) {
      case TensorRole::weight: plan.weights_bytes += bytes; break;
      case TensorRole::master_weight: plan.master_weights_bytes += bytes; break;
      case TensorRole::gradient: plan.gradients_bytes += bytes; break;
      case TensorRole::optimizer_state: plan.optimizer_state_bytes += bytes; break;
      default: break;
    }
  }
  if (g.recipe.zero_stage > 0) {  // ZeRO: this rank's shard of the model states (models/zero.hpp)
    const ModelStates sharded = shard_model_states(
        {plan.weights_bytes, plan.gradients_bytes, plan.master_weights_bytes, plan.optimizer_state_bytes},
        g.recipe.zero_stage, g.recipe.zero_shards());
    plan.weights_bytes = sharded.weights_bytes;
    plan.gradients_bytes = sharded.gradients_bytes;
    if (g.recipe.zero_stage >= 3 && g.recipe.data_parallel > 1) {  // and the units gathered at the peak (models/shard_units.hpp)
      const GatheredWorkingSet gathered = gathered_working_set(shard_units(g));
      plan.gathered_weights_bytes = gathered.weights_bytes;
      plan.gathered_gradients_bytes = gathered.gradients_bytes;
      plan.weights_bytes += gathered.weights_bytes;
      plan.gradients_bytes += gathered.gradients_bytes;
    }
    plan.master_weights_bytes = sharded.master_weights_bytes;
    plan.optimizer_state_bytes = sharded.optimizer_state_bytes;
  }
}

ActivationSchedule activation_schedule(const TaskGraph& g) {
  ActivationSchedule s;
  s.tensor_count = g.tensors.size();
  const std::vector<int> last_use = last_uses(g);
  s.steps.resize(g.ops.size());
  for (const Op& op : g.ops) {
    s.steps[static_cast<size_t>(op.id)].op = op.id;
    for (int t : op.outputs)
      if (in_arena(g.tensor(t))) s.steps[static_cast<size_t>(op.id)].allocate.push_back(t);
  }
  // Activations never read (e.g. an unused mean) die right after their producer.
  for (const Tensor& t : g.tensors)
    if (produced_in_arena(t))
      s.steps[static_cast<size_t>(std::max(last_use[static_cast<size_t>(t.id)], t.producer))].release.push_back(t.id);
  s.retained = retained_tensors(g, last_use);
  for (const Tensor& t : g.tensors)
    if (t.role == TensorRole::input) s.inputs.push_back(t.id);
  return s;
}

void place_activations(const ActivationSchedule& s, const std::vector<int64_t>& tensor_bytes, MemoryPlan& plan,
                       std::vector<int64_t>* offsets) {
  std::vector<int64_t> local;
  std::vector<int64_t>& offset = offsets ? *offsets : local;
  offset.assign(s.tensor_count, -1);
  for (int t : s.inputs) plan.inputs_bytes += static_cast<double>(tensor_bytes[static_cast<size_t>(t)]);
  Arena arena;
  int64_t live = 0;
  for (const ActivationSchedule::Step& step : s.steps) {
    for (int t : step.allocate) {
      const int64_t size = aligned(tensor_bytes[static_cast<size_t>(t)]);
      offset[static_cast<size_t>(t)] = arena.allocate(size);
      live += size;
    }
    if (static_cast<double>(live) > plan.activations_live_peak_bytes) {
      plan.activations_live_peak_bytes = static_cast<double>(live);
      plan.peak_op = step.op;
    }
    for (int t : step.release) {
      const int64_t size = aligned(tensor_bytes[static_cast<size_t>(t)]);
      arena.release(offset[static_cast<size_t>(t)], size);
      live -= size;
    }
  }
  plan.activations_peak_bytes = static_cast<double>(arena.high_water());
  for (int t : s.retained) plan.retained_activation_bytes += static_cast<double>(aligned(tensor_bytes[static_cast<size_t>(t)]));
}

std::vector<int64_t> tensor_bytes(const TaskGraph& g) {
  std::vector<int64_t> out;
  out.reserve(g.tensors.size());
  for (const Tensor& t : g.tensors) out.push_back(t.bytes());
  return out;
}

MemoryPlan plan_memory(const TaskGraph& g, double workspace_bytes) {
  MemoryPlan plan;
  plan.workspace_bytes = workspace_bytes;
  plan.last_use = last_uses(g);
  add_model_states(g, plan);
  place_activations(activation_schedule(g), tensor_bytes(g), plan, &plan.offset);
  return plan;
}

}  // namespace ptsim::models
