// models/graph_export.hpp — summaries and exports of a TaskGraph: JSON (ops, tensors, totals) and Graphviz dot.
#pragma once
#include <nlohmann/json.hpp>
#include <map>
#include <string>

#include "models/memory_plan.hpp"
#include "models/task_graph.hpp"

namespace ptsim::models {

struct GraphSummary {
  std::map<std::string, int> ops_by_kind;
  std::map<std::string, double> flops_by_kind;   // per optimizer step (body × micro_steps + tail)
  std::map<std::string, double> flops_by_phase;  // per optimizer step
  double flops_per_step = 0;
  int64_t parameters = 0;
  int64_t tokens_per_step = 0;                   // micro_batch × seq_len × micro_steps (this rank)
};

GraphSummary summarize(const TaskGraph& graph);
nlohmann::json memory_plan_to_json(const MemoryPlan& plan);
// Totals, summary, memory plan, and every op (id, kind, name, phase, layer, inputs, outputs, flops, bytes).
nlohmann::json graph_to_json(const TaskGraph& graph, const MemoryPlan& plan, bool include_ops);
std::string graph_to_dot(const TaskGraph& graph);

}  // namespace ptsim::models
