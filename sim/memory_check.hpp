// sim/memory_check.hpp — does a configuration fit the GPU? If not: by how much, and what would fit.
#pragma once
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "models/memory_plan.hpp"
#include "models/model_spec.hpp"
#include "models/recipe.hpp"

namespace ptsim::sim {

struct MemoryFit {
  bool fits = false;
  double needed_bytes = 0;     // plan total + the GPU's reserved (context, fragmentation)
  double available_bytes = 0;  // the GPU's memory
};

MemoryFit check_memory(const models::MemoryPlan& plan, const hwprofiles::GpuProfile& gpu);

// One pipeline device's memory: its model chunks' persistent tensors and inputs added up, and activations at
// the peak of its schedule — the retained activations of every (chunk, micro-batch) forward it holds at once
// plus the one-micro-step arena of the chunk it is running (docs/parallelism.md).
struct StageMemory {
  int stage = 0;
  models::MemoryPlan plan;       // totals only (no offsets)
  int in_flight = 0;             // peak (chunk, micro-batch) forwards held (sim::peak_in_flight)
  double in_flight_micro_batches = 0;  // the same in whole-stage micro-batches: in_flight ÷ V
};
// `chunk_plans[g]` is model chunk g's plan (models::build_pipeline_graphs order); the recipe gives the schedule.
std::vector<StageMemory> plan_pipeline_memory(const std::vector<models::MemoryPlan>& chunk_plans,
                                              const models::Recipe& recipe);
// The stage with the most memory (the first of equals).
const StageMemory& worst_stage(const std::vector<StageMemory>& stages, const hwprofiles::GpuProfile& gpu);

// Largest micro-batch ≤ recipe.micro_batch that fits (0 if even 1 does not).
int64_t largest_fitting_micro_batch(const models::ModelSpec& model, const models::Recipe& recipe,
                                    const hwprofiles::GpuProfile& gpu, bool recompute);

// Throws core::InfeasibleError (memory; exit 2) with the needed bytes by category against the device memory
// and, when `suggest`, suggestions (largest fitting micro-batch + matching gradient accumulation;
// recomputation) if it does not fit. The suggestions search micro-batches (several graph builds): a sweep,
// which reports the shortfall instead, passes false.
void require_fits(const models::ModelSpec& model, const models::Recipe& recipe, const models::MemoryPlan& plan,
                  const hwprofiles::GpuProfile& gpu, bool suggest = true);
// The same for a pipeline: the worst stage must fit; the message names it and, when `suggest`, what would fit
// (more pipeline stages, recomputation, a smaller micro-batch).
void require_pipeline_fits(const models::ModelSpec& model, const models::Recipe& recipe,
                           const std::vector<StageMemory>& stages, const hwprofiles::GpuProfile& gpu,
                           bool suggest = true);

}  // namespace ptsim::sim
