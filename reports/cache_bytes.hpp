// reports/cache_bytes.hpp — estimates of the heap bytes a PredictionCache entry holds, for its byte budget
// (reports/bounded_cache.hpp): the objects themselves, what their strings, vectors, maps and dependency
// graph allocate (by capacity), and an allocator overhead per allocation. An estimate, not a measurement:
// docs/sweep.md ("Memory") compares it with the resident memory it accounts for.
#pragma once
#include <cstddef>
#include <vector>

#include "models/memory_plan.hpp"
#include "models/task_graph.hpp"
#include "sim/compute_model.hpp"
#include "sim/memory_check.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::reports {

size_t approximate_bytes(const models::TaskGraph& graph);
size_t approximate_bytes(const models::MemoryPlan& plan);
size_t approximate_bytes(const std::vector<sim::StageMemory>& stages);
size_t approximate_bytes(const sim::SingleDevicePrediction& prediction);
size_t approximate_bytes(const sim::StepSimulation& step);

}  // namespace ptsim::reports
