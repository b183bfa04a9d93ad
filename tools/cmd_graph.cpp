// tools/cmd_graph.cpp — `ptsim graph`: build one rank's TaskGraph and print its op counts, FLOPs by
// phase and kind, parameter count and memory plan (table | json | dot).
#include <fmt/format.h>

#include "models/builder.hpp"
#include "models/graph_export.hpp"
#include "models/memory_plan.hpp"
#include "reports/text_table.hpp"
#include "hwprofiles/profiles.hpp"
#include "sim/compute_model.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"
#include "tools/recipe_flags.hpp"

namespace ptsim::tools {

namespace {
std::string gib(double bytes) { return fmt::format("{:.3f}", bytes / (1024.0 * 1024 * 1024)); }
}  // namespace

int run_graph_command(int argc, char** argv) {
  CLI::App app{"Build one rank's TaskGraph for a model and recipe and print its structure", "graph"};
  std::string model_name = "bert-large";
  std::string format = "table";
  bool include_ops = false;
  RecipeFlags flags;
  app.add_option("--model", model_name, "built-in model name or path to a model JSON / HF config.json")
      ->capture_default_str();
  add_recipe_flags(app, flags);
  app.add_option("--format", format, "table | json | dot")
      ->check(CLI::IsMember({"table", "json", "dot"}))
      ->capture_default_str();
  app.add_flag("--ops", include_ops, "json: include every op and tensor");
  if (auto code = parse_or_exit(app, argc, argv)) return *code;

  models::ModelSpec model = models::load_model(model_name);
  models::Recipe recipe = to_recipe(flags);
  // --stack: the graph that stack runs (its fusions); without it, the unfused graph with multi-tensor optimizer.
  if (!flags.stack.empty())
    sim::apply_stack_fusions(recipe, hwprofiles::find_stack(hwprofiles::load_profiles(), flags.stack));
  models::TaskGraph graph = models::build_task_graph(model, recipe);
  models::MemoryPlan plan = models::plan_memory(graph);

  if (include_ops && format != "json")  // it was ignored without a word
    throw core::InputError(fmt::format("--ops lists every op in the JSON; give --format json (got --format {})", format));
  if (format == "dot") {
    fmt::print("{}", models::graph_to_dot(graph));
    return 0;
  }
  if (format == "json") {
    fmt::print("{}\n", models::graph_to_json(graph, plan, include_ops).dump(2));
    return 0;
  }
  models::GraphSummary s = models::summarize(graph);
  const auto& r = graph.recipe;
  fmt::print("model {} ({}): {:.1f} M parameters on this rank, {} layers, hidden {}, {} heads\n", model.name,
             models::to_string(model.family), s.parameters / 1e6, model.num_layers, model.hidden_size, model.num_heads);
  fmt::print("recipe: {} micro-batch {} × seq {} × grad-accum {}, {}, dp {} tp {}{}\n", models::to_string(r.precision),
             r.micro_batch, r.seq_len, r.grad_accum, models::to_string(r.optimizer), r.data_parallel,
             r.tensor_parallel, r.recompute_activations ? ", recompute" : "");
  fmt::print("{} ops, {} tensors; {:.2f} TFLOP per optimizer step ({:.1f} GFLOP per token)\n\n", graph.ops.size(),
             graph.tensors.size(), s.flops_per_step / 1e12, s.flops_per_step / s.tokens_per_step / 1e9);

  reports::TextTable kinds({"op kind", "count", "TFLOP/step", "share"});
  for (const auto& [kind, count] : s.ops_by_kind)
    kinds.add_row({kind, std::to_string(count), fmt::format("{:.4f}", s.flops_by_kind[kind] / 1e12),
                   fmt::format("{:.1f}%", 100.0 * s.flops_by_kind[kind] / s.flops_per_step)});
  fmt::print("{}\n", kinds.render());

  reports::TextTable phases({"phase", "TFLOP/step"});
  for (const auto& [phase, flops] : s.flops_by_phase) phases.add_row({phase, fmt::format("{:.4f}", flops / 1e12)});
  fmt::print("{}\n", phases.render());

  reports::TextTable memory({"memory plan", "GiB"});
  memory.add_row({"weights", gib(plan.weights_bytes)});
  memory.add_row({"master weights (fp32)", gib(plan.master_weights_bytes)});
  memory.add_row({"gradients", gib(plan.gradients_bytes)});
  memory.add_row({"optimizer state", gib(plan.optimizer_state_bytes)});
  memory.add_row({"inputs", gib(plan.inputs_bytes)});
  memory.add_row({"activations (arena peak)", gib(plan.activations_peak_bytes)});
  memory.add_row({"workspace", gib(plan.workspace_bytes)});
  memory.add_row({"total", gib(plan.total_bytes())});
  fmt::print("{}", memory.render());
  if (plan.peak_op >= 0) fmt::print("activations peak at op {} ({})\n", plan.peak_op, graph.op(plan.peak_op).name);
  return 0;
}

}  // namespace ptsim::tools
