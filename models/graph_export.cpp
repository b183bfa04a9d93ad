// models/graph_export.cpp — JSON and Graphviz renderings of a TaskGraph.
#include "models/graph_export.hpp"

#include <fmt/format.h>

#include <sstream>

namespace ptsim::models {

GraphSummary summarize(const TaskGraph& g) {
  GraphSummary s;
  for (const Op& op : g.ops) {
    double repeat = is_micro_step_phase(op.phase) ? static_cast<double>(g.micro_steps) : 1.0;
    s.ops_by_kind[to_string(op.kind)] += 1;
    s.flops_by_kind[to_string(op.kind)] += op.flops * repeat;
    s.flops_by_phase[to_string(op.phase)] += op.flops * repeat;
  }
  s.flops_per_step = g.flops_per_step();
  s.parameters = g.parameter_count();
  s.tokens_per_step = g.recipe.micro_batch * g.recipe.seq_len * g.micro_steps;
  return s;
}

nlohmann::json memory_plan_to_json(const MemoryPlan& p) {
  return {{"weights_bytes", p.weights_bytes},
          {"master_weights_bytes", p.master_weights_bytes},
          {"gradients_bytes", p.gradients_bytes},
          {"optimizer_state_bytes", p.optimizer_state_bytes},
          {"inputs_bytes", p.inputs_bytes},
          {"activations_peak_bytes", p.activations_peak_bytes},
          {"activations_live_peak_bytes", p.activations_live_peak_bytes},
          {"workspace_bytes", p.workspace_bytes},
          {"total_bytes", p.total_bytes()},
          {"peak_op", p.peak_op}};
}

nlohmann::json graph_to_json(const TaskGraph& g, const MemoryPlan& plan, bool include_ops) {
  GraphSummary s = summarize(g);
  nlohmann::json j;
  j["model"] = g.model.name;
  j["recipe"] = {{"precision", to_string(g.recipe.precision)}, {"micro_batch", g.recipe.micro_batch},
                 {"seq_len", g.recipe.seq_len},                {"grad_accum", g.recipe.grad_accum},
                 {"optimizer", to_string(g.recipe.optimizer)}, {"data_parallel", g.recipe.data_parallel},
                 {"tensor_parallel", g.recipe.tensor_parallel}, {"recompute", g.recipe.recompute_activations}};
  j["parameters"] = s.parameters;
  j["op_count"] = g.ops.size();
  j["tensor_count"] = g.tensors.size();
  j["ops_by_kind"] = s.ops_by_kind;
  j["flops_per_step"] = s.flops_per_step;
  j["flops_by_phase"] = s.flops_by_phase;
  j["flops_by_kind"] = s.flops_by_kind;
  j["tokens_per_step"] = s.tokens_per_step;
  j["memory"] = memory_plan_to_json(plan);
  if (include_ops) {
    nlohmann::json ops = nlohmann::json::array();
    for (const Op& op : g.ops) {
      ops.push_back({{"id", op.id}, {"kind", to_string(op.kind)}, {"name", op.name}, {"phase", to_string(op.phase)},
                     {"layer", op.layer}, {"inputs", op.inputs}, {"outputs", op.outputs}, {"flops", op.flops},
                     {"bytes_read", op.bytes_read}, {"bytes_written", op.bytes_written}});
    }
    j["ops"] = ops;
    nlohmann::json tensors = nlohmann::json::array();
    for (const Tensor& t : g.tensors)
      tensors.push_back({{"id", t.id}, {"name", t.name}, {"shape", t.shape}, {"dtype", to_string(t.dtype)},
                         {"role", to_string(t.role)}});
    j["tensors"] = tensors;
  }
  return j;
}

std::string graph_to_dot(const TaskGraph& g) {
  static const std::map<Phase, const char*> colour = {{Phase::forward, "lightblue"},
                                                      {Phase::recompute, "lightyellow"},
                                                      {Phase::backward, "lightpink"},
                                                      {Phase::communication, "palegreen"},
                                                      {Phase::optimizer, "orange"}};
  std::ostringstream out;
  out << "digraph taskgraph {\n  rankdir=TB;\n  node [shape=box, style=filled, fontsize=10];\n";
  for (const Op& op : g.ops)
    out << fmt::format("  op{} [label=\"{}\\n{}\", fillcolor={}];\n", op.id, op.name, to_string(op.kind),
                       colour.at(op.phase));
  auto [begin, end] = boost::edges(g.deps);
  for (auto it = begin; it != end; ++it)
    out << fmt::format("  op{} -> op{};\n", boost::source(*it, g.deps), boost::target(*it, g.deps));
  out << "}\n";
  return out.str();
}

}  // namespace ptsim::models
