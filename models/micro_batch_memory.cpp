// models/micro_batch_memory.cpp — memory plan totals at any micro-batch from two builds (see the header).
#include "models/micro_batch_memory.hpp"

#include "models/micro_batch_scaling.hpp"

namespace ptsim::models {
namespace {

bool same_states(const MemoryPlan& a, const MemoryPlan& b) {
  return a.weights_bytes == b.weights_bytes && a.master_weights_bytes == b.master_weights_bytes &&
         a.gradients_bytes == b.gradients_bytes && a.optimizer_state_bytes == b.optimizer_state_bytes &&
         a.gathered_weights_bytes == b.gathered_weights_bytes && a.gathered_gradients_bytes == b.gathered_gradients_bytes;
}

}  // namespace

std::optional<MicroBatchMemory> MicroBatchMemory::from(const TaskGraph& at_one, const TaskGraph& at_two,
                                                       double workspace_bytes) {
  if (at_one.recipe.micro_batch != 1 || at_two.recipe.micro_batch != 2 || !same_structure(at_one, at_two))
    return std::nullopt;
  MicroBatchMemory out;
  out.fixed_bytes_.assign(at_one.tensors.size(), 0);
  out.per_sequence_.assign(at_one.tensors.size(), 0);
  for (size_t i = 0; i < at_one.tensors.size(); ++i) {
    const int grows = micro_batch_dimensions(at_one.tensors[i], at_two.tensors[i]);
    if (grows < 0) return std::nullopt;
    (grows ? out.per_sequence_ : out.fixed_bytes_)[i] = at_one.tensors[i].bytes();
  }
  out.states_.workspace_bytes = workspace_bytes;
  add_model_states(at_one, out.states_);
  MemoryPlan states_at_two;
  add_model_states(at_two, states_at_two);
  if (!same_states(out.states_, states_at_two)) return std::nullopt;
  out.schedule_ = activation_schedule(at_one);
  return out;
}

MemoryPlan MicroBatchMemory::at(int64_t micro_batch) const {
  std::vector<int64_t> bytes(fixed_bytes_.size());
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = fixed_bytes_[i] + per_sequence_[i] * micro_batch;
  MemoryPlan plan = states_;
  place_activations(schedule_, bytes, plan);
  return plan;
}

size_t MicroBatchMemory::approximate_bytes() const {
  size_t bytes = sizeof(MicroBatchMemory) + (fixed_bytes_.size() + per_sequence_.size()) * sizeof(int64_t) +
                 (schedule_.retained.size() + schedule_.inputs.size()) * sizeof(int);
  for (const auto& step : schedule_.steps)
    bytes += sizeof(step) + (step.allocate.size() + step.release.size()) * sizeof(int);
  return bytes;
}

}  // namespace ptsim::models
