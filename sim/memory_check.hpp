// sim/memory_check.hpp — does a configuration fit the GPU? If not: by how much, and what would fit.
#pragma once
#include <string>

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

// Largest micro-batch ≤ recipe.micro_batch that fits (0 if even 1 does not).
int64_t largest_fitting_micro_batch(const models::ModelSpec& model, const models::Recipe& recipe,
                                    const hwprofiles::GpuProfile& gpu, bool recompute);

// Throws core::InfeasibleError (memory; exit 2) with the needed bytes by category against the device memory
// and, when `suggest`, suggestions (largest fitting micro-batch + matching gradient accumulation;
// recomputation) if it does not fit. The suggestions search micro-batches (several graph builds): a sweep,
// which reports the shortfall instead, passes false.
void require_fits(const models::ModelSpec& model, const models::Recipe& recipe, const models::MemoryPlan& plan,
                  const hwprofiles::GpuProfile& gpu, bool suggest = true);

}  // namespace ptsim::sim
