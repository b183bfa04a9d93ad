// models/micro_batch_memory.hpp — a graph's memory plan totals at any micro-batch, from the graphs built at
// micro-batch 1 and 2, without building the graph at that micro-batch (the planner's memory probes,
// docs/planning.md "Memory").
//
// Why it is exact: the builder (models/builder.cpp) uses the micro-batch B only as a factor of tensor
// dimensions (B, B·S, B·heads, B·predictions; with sequence parallelism B·S/T, where T divides S), so the
// graph's ops, tensors, roles and producers do not depend on B and every tensor's elements are either
// constant or elements(1) × B. from() checks both on the two builds — the same structure, and each
// dimension either unchanged or exactly doubled, at most one per tensor — and refuses (nullopt) otherwise;
// the caller then builds the graph. at(B) replays plan_memory's arena (models/memory_plan.hpp) with the
// sizes at B, so the peak, live peak, retained and input bytes are the plan's own, not an estimate.
// tests/reports/test_memory_derivation.cpp compares at(B) with real builds over many layouts.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "models/memory_plan.hpp"
#include "models/task_graph.hpp"

namespace ptsim::models {

class MicroBatchMemory {
 public:
  // `at_one` and `at_two`: the same recipe's graph (or pipeline chunk) at micro-batch 1 and 2.
  static std::optional<MicroBatchMemory> from(const TaskGraph& at_one, const TaskGraph& at_two,
                                              double workspace_bytes = kDefaultWorkspaceBytes);
  // The plan's totals at `micro_batch` (no offsets, no last uses): what plan_memory gives them.
  MemoryPlan at(int64_t micro_batch) const;
  size_t approximate_bytes() const;

 private:
  MemoryPlan states_;                   // model states and workspace: the same at every micro-batch
  ActivationSchedule schedule_;
  std::vector<int64_t> fixed_bytes_;    // per tensor id: its bytes when they do not grow with the micro-batch
  std::vector<int64_t> per_sequence_;   // per tensor id: its bytes at micro-batch 1 when they do (else 0)
};

}  // namespace ptsim::models
