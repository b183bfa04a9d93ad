// models/memory_plan.hpp — one memory plan for a TaskGraph, from tensor liveness.
// Persistent tensors (weights, master weights, gradients, optimizer state) live for the whole run;
// activations live from their producing op to their last consumer within a micro-step, and get an
// offset in one activation arena (first-fit, 256-byte aligned). The simulator uses the totals; the
// runtime allocates exactly these offsets, so the plan's peak is what is really allocated.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/task_graph.hpp"

namespace ptsim::models {

struct MemoryPlan {
  double weights_bytes = 0;
  double master_weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_state_bytes = 0;
  // ZeRO stage 3: of weights_bytes and gradients_bytes, what is gathered at the peak beyond this rank's
  // shards (models/shard_units.hpp); 0 otherwise.
  double gathered_weights_bytes = 0;
  double gathered_gradients_bytes = 0;
  double inputs_bytes = 0;
  double activations_peak_bytes = 0;  // the activation arena's size (max offset + size)
  double activations_live_peak_bytes = 0;  // max bytes simultaneously live (lower bound of the arena)
  int peak_op = -1;                   // op at which live activations peak
  double workspace_bytes = 0;         // fixed scratch (GEMM workspace, norms)
  // Activations and inputs live across the forward → backward boundary of one micro-step: what a pipeline
  // stage keeps per micro-batch in flight (aligned as in the arena).
  double retained_activation_bytes = 0;
  std::vector<int64_t> offset;        // per tensor id: arena offset for activations/workspace, -1 otherwise
  std::vector<int> last_use;          // per tensor id: last op reading it (-1 if none)

  double persistent_bytes() const {
    return weights_bytes + master_weights_bytes + gradients_bytes + optimizer_state_bytes;
  }
  double total_bytes() const { return persistent_bytes() + inputs_bytes + activations_peak_bytes + workspace_bytes; }
};

// Default GEMM workspace reserved per device (cuBLAS/cuBLASLt recommend 32 MiB on Hopper; 4 MiB before).
constexpr double kDefaultWorkspaceBytes = 32.0 * 1024 * 1024;
constexpr int64_t kArenaAlignmentBytes = 256;

MemoryPlan plan_memory(const TaskGraph& graph, double workspace_bytes = kDefaultWorkspaceBytes);

// plan_memory in parts, for a caller that places the same graph structure with other tensor sizes
// (models/micro_batch_memory.hpp). The model states: weights, master weights, gradients and optimizer
// state added to `plan` (ZeRO-sharded, with ZeRO-3's gathered units).
void add_model_states(const TaskGraph& graph, MemoryPlan& plan);

// The order in which the arena allocates and releases activation and workspace tensors, which tensors
// a micro-step retains across its forward → backward boundary, and the inputs: a function of the graph's
// structure (ops, their inputs and outputs, tensor roles and producers) only, not of tensor sizes.
struct ActivationSchedule {
  struct Step {
    int op = -1;
    std::vector<int> allocate, release;  // tensor ids: the op's arena outputs; those whose last reader it is
  };
  size_t tensor_count = 0;
  std::vector<Step> steps;    // one per op, in op order
  std::vector<int> retained;  // counted in retained_activation_bytes
  std::vector<int> inputs;    // counted in inputs_bytes
};
ActivationSchedule activation_schedule(const TaskGraph& graph);

// Adds to `plan` the inputs, the arena's peak and live peak (with its op) and the retained bytes of the
// schedule with these tensor sizes (bytes per tensor id); the arena offsets to `offsets` when given.
void place_activations(const ActivationSchedule& schedule, const std::vector<int64_t>& tensor_bytes, MemoryPlan& plan,
                       std::vector<int64_t>* offsets = nullptr);
std::vector<int64_t> tensor_bytes(const TaskGraph& graph);  // Tensor::bytes() per tensor id

}  // namespace ptsim::models
