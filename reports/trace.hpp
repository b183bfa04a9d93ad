// reports/trace.hpp — Chrome-trace / Perfetto JSON of one simulated iteration: a track per stream
// (compute, communication) of the representative rank, communication linked to the ops it waits for
// with flow arrows. Open in https://ui.perfetto.dev or chrome://tracing.
#pragma once
#include <nlohmann/json.hpp>

#include "models/task_graph.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::reports {

nlohmann::json chrome_trace(const sim::StepSimulation& step, const models::TaskGraph& graph);

// A pipeline-parallel step (sim/pipeline_step): one process per stage with a compute track (its forward and
// backward passes, "F3" = forward of micro-batch 3, "c1" naming the local chunk when interleaved, then its
// optimizer ops), a data-parallel track (its gradient all-reduces after its last backward) and a send track
// (activations and gradients leaving it, with arrows to the pass they feed).
nlohmann::json chrome_pipeline_trace(const sim::StepSimulation& step, const std::vector<models::TaskGraph>& chunks);

}  // namespace ptsim::reports
