// reports/trace.hpp — Chrome-trace / Perfetto JSON of one simulated iteration: a track per stream
// (compute, communication) of the representative rank, communication linked to the ops it waits for
// with flow arrows. Open in https://ui.perfetto.dev or chrome://tracing.
#pragma once
#include <nlohmann/json.hpp>

#include "models/task_graph.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::reports {

nlohmann::json chrome_trace(const sim::StepSimulation& step, const models::TaskGraph& graph);

}  // namespace ptsim::reports
