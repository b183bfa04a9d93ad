// tools/cmd_predict.cpp — `ptsim predict`: a whole pretraining run on a cluster from a scenario (time to
// train, phases, scaling efficiency, cost; --trace timeline), or one step on one GPU (--gpu: step time,
// throughput, TFLOP/s, MFU, per-op-kind breakdown). Configurations that do not fit are refused (exit 2).
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include <fstream>

#include "core/atomic_file.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/prediction.hpp"
#include "reports/scenario.hpp"
#include "models/builder.hpp"
#include "models/graph_export.hpp"
#include "models/op_times.hpp"
#include "reports/text_table.hpp"
#include "sim/compute_model.hpp"
#include "sim/memory_check.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"
#include "tools/recipe_flags.hpp"

namespace ptsim::tools {

namespace {

int predict_single_gpu(const hwprofiles::ProfileSet& profiles, const std::string& gpu_name,
                       const std::string& model_name, const RecipeFlags& flags, const std::string& format,
                       const std::string& op_times_path) {
  const std::string stack = flags.stack.empty() ? hwprofiles::default_stack_for(profiles, gpu_name) : flags.stack;
  const hwprofiles::GpuProfile gpu = hwprofiles::device_profile(profiles, gpu_name, stack);
  models::ModelSpec model = models::load_model(model_name);
  models::Recipe recipe = to_recipe(flags);
  sim::apply_stack_fusions(recipe, hwprofiles::find_stack(profiles, stack));
  if (recipe.data_parallel != 1 || recipe.tensor_parallel != 1)
    throw core::InputError("--gpu predicts one GPU: use --node/--nodes (or --scenario) for data or tensor parallelism");
  (void)sim::peak_precision_flops_per_second(gpu, recipe.precision);  // a precision the GPU lacks: said first
  models::TaskGraph graph = models::build_task_graph(model, recipe);
  models::MemoryPlan plan = models::plan_memory(graph);
  sim::require_fits(model, recipe, plan, gpu);
  sim::SingleDevicePrediction p = sim::predict_single_device(graph, gpu);
  sim::MemoryFit fit = sim::check_memory(plan, gpu);
  if (!op_times_path.empty()) {
    // Per op per optimizer step, in the runtime's measured schema (body ops × micro-steps).
    std::vector<double> per_step(p.op_seconds);
    for (const auto& op : graph.ops)
      if (models::is_micro_step_phase(op.phase))
        per_step[static_cast<size_t>(op.id)] *= static_cast<double>(graph.micro_steps);
    models::OpTimesInfo info;
    info.source = "predicted";
    info.device = gpu.name;
    info.step_seconds = p.step_seconds;
    core::write_file_atomic(op_times_path, models::op_times_json(graph, per_step, info).dump(1) + "\n", "--op-times");
  }

  std::vector<std::pair<std::string, double>> kinds(p.seconds_by_kind.begin(), p.seconds_by_kind.end());
  std::sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second > b.second; });

  if (format == "json") {
    nlohmann::json j;
    j["model"] = model.name;
    j["gpu"] = gpu.name;
    j["stack"] = gpu.stack;
    j["recipe"] = models::graph_to_json(graph, plan, false)["recipe"];
    j["step_seconds"] = p.step_seconds;
    j["micro_step_seconds"] = p.micro_step_seconds;
    j["sequences_per_second"] = p.sequences_per_second;
    j["tflops_per_gpu"] = p.achieved_flops_per_second / 1e12;
    j["mfu"] = p.mfu;
    j["memory_per_gpu_bytes"] = fit.needed_bytes;
    j["memory"] = models::memory_plan_to_json(plan);
    nlohmann::json breakdown = nlohmann::json::array();
    for (const auto& [kind, seconds] : kinds)
      breakdown.push_back({{"kind", kind}, {"seconds", seconds}, {"share", seconds / p.step_seconds}});
    j["seconds_by_kind"] = breakdown;
    fmt::print("{}\n", j.dump(2));
    return 0;
  }
  fmt::print("{} on one {} — {} micro-batch {} × seq {}{}\n", model.name, gpu.name, models::to_string(recipe.precision),
             recipe.micro_batch, recipe.seq_len,
             recipe.grad_accum > 1 ? fmt::format(" × grad-accum {}", recipe.grad_accum) : "");
  fmt::print("  step time      {:.2f} ms\n", p.step_seconds * 1e3);
  fmt::print("  throughput     {:.1f} sequences/s\n", p.sequences_per_second);
  fmt::print("  achieved       {:.1f} TFLOP/s (MFU {:.1f}% of {:.0f} TFLOP/s)\n", p.achieved_flops_per_second / 1e12, p.mfu * 100,
             p.achieved_flops_per_second / p.mfu / 1e12);
  fmt::print("  memory         {:.2f} of {:.2f} GiB\n\n", fit.needed_bytes / (1 << 30), fit.available_bytes / (1 << 30));
  reports::TextTable table({"op kind", "ms/step", "share"});
  for (const auto& [kind, seconds] : kinds)
    table.add_row({kind, fmt::format("{:.3f}", seconds * 1e3), fmt::format("{:.1f}%", 100 * seconds / p.step_seconds)});
  fmt::print("{}", table.render());
  return 0;
}

// Flags given on the command line that the chosen mode would not use: an error naming each, never a
// silent drop (docs/cli.md lists which flags apply to --scenario, --node and --gpu).
struct NotApplied {
  const char* flag;
  const char* instead;  // what to do instead
};

void refuse_unused_flags(const CLI::App& app, const std::vector<NotApplied>& flags, const std::string& mode) {
  std::vector<std::string> given;
  for (const auto& f : flags)
    if (app.get_option(f.flag)->count() > 0) given.push_back(fmt::format("{} ({})", f.flag, f.instead));
  if (!given.empty())
    throw core::InputError(fmt::format("ptsim predict {}: {} not used in this mode: {}", mode,
                                       given.size() > 1 ? "these flags are" : "this flag is", fmt::join(given, "; ")));
}

// Recipe flags shape the recipe of --gpu and --node; a scenario has its own recipe, edited with --set.
const std::vector<NotApplied> kScenarioUnused = {
    {"--model", "use --set model=NAME"},
    {"--nodes", "use --set cluster.nodes=N"},
    {"--network", "use --set cluster.network=NAME"},
    {"--steps", "use --set phases.0.steps=N"},
    {"--precision", "use --set recipe.precision=..."},
    {"--micro-batch", "use --set phases.0.micro_batch=N"},
    {"--seq-len", "use --set phases.0.seq_len=N"},
    {"--grad-accum", "use --set phases.0.grad_accum=N"},
    {"--optimizer", "use --set recipe.optimizer=..."},
    {"--data-parallel", "derived from the cluster"},
    {"--tensor-parallel", "use --set recipe.tensor_parallel=N"},
    {"--recompute", "use --set recipe.recompute=true"},
    {"--selective-recompute", "use --set recipe.selective_recompute=true"},
    {"--sequence-parallel", "use --set recipe.sequence_parallel=true"},
    {"--bucket-mib", "use --set recipe.bucket_mib=X"},
    {"--max-predictions", "use --set phases.0.max_predictions=N"},
    {"--no-dropout", "cluster predictions always include dropout"},
    {"--no-clipping", "use --set recipe.gradient_clipping=false"},
    {"--stack", "use --set recipe.stack=NAME"},
};

const std::vector<NotApplied> kNodeUnused = {
    {"--no-dropout", "cluster predictions always include dropout"},
};

const std::vector<NotApplied> kGpuUnused = {
    {"--set", "edits a scenario: use --scenario or --node"},
    {"--trace", "traces a cluster iteration: use --scenario or --node"},
    {"--steps", "--gpu predicts one step"},
    {"--nodes", "give --node for a cluster"},
    {"--network", "give --node for a cluster"},
};

// An ad-hoc scenario from flags: one phase of --steps steps on --nodes nodes of --node.
core::Json scenario_from_flags(const std::string& model, const std::string& node, int nodes, const std::string& network,
                               const RecipeFlags& f, int64_t steps) {
  core::Json j;
  j["name"] = "command-line";
  j["model"] = model;
  j["cluster"] = {{"node", node}, {"nodes", nodes}};
  if (!network.empty()) j["cluster"]["network"] = network;
  j["recipe"] = {{"precision", f.precision}, {"optimizer", f.optimizer}, {"tensor_parallel", f.tensor_parallel},
                 {"recompute", f.recompute}, {"bucket_mib", f.bucket_mib}, {"gradient_clipping", !f.no_clipping}};
  if (!f.stack.empty()) j["recipe"]["stack"] = f.stack;
  if (f.sequence_parallel) j["recipe"]["sequence_parallel"] = true;
  if (f.selective_recompute) j["recipe"]["selective_recompute"] = true;
  core::Json phase = {{"name", "phase1"}, {"seq_len", f.seq_len}, {"micro_batch", f.micro_batch},
                      {"grad_accum", f.grad_accum}, {"steps", steps}};
  if (f.max_predictions > 0) phase["max_predictions"] = f.max_predictions;
  j["phases"] = core::Json::array({phase});
  return j;
}

}  // namespace

int run_predict_command(int argc, char** argv) {
  CLI::App app{"Predict pretraining: a shipped or custom scenario on a cluster (time to train, cost), or one "
               "training step on one GPU (--gpu)", "predict"};
  std::string scenario_name;
  std::vector<std::string> overrides;
  std::string model_name = "bert-large";
  std::string gpu_name;
  std::string node_name;
  int nodes = 1;
  int64_t steps = 1;
  std::string network;
  std::string format = "table";
  std::string profiles_dir;
  std::string trace_path;
  std::string op_times_path;
  RecipeFlags flags;
  flags.micro_batch = 64;
  app.add_option("--scenario", scenario_name,
                 "shipped scenario name or scenario JSON file (default: t4-academic-cluster when no --gpu/--node)");
  app.add_option("--set", overrides, "scenario override key=value, e.g. cluster.network=ib-edr or phases.0.grad_accum=1");
  app.add_option("--model", model_name, "built-in model name or path to a model JSON / HF config.json")
      ->capture_default_str();
  app.add_option("--gpu", gpu_name, "predict one step on one GPU of this profile (ptsim profiles list)");
  app.add_option("--node", node_name, "predict a cluster of this node profile (with --nodes, --network, recipe flags)");
  app.add_option("--nodes", nodes, "nodes in the cluster (with --node)")->capture_default_str();
  app.add_option("--network", network, "network profile (default: the node's)");
  app.add_option("--steps", steps, "optimizer steps (with --node)")->capture_default_str();
  add_recipe_flags(app, flags);
  app.add_option("--format", format, "table | json")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  app.add_option("--profiles", profiles_dir, "hardware profile directory (default: the shipped hwprofiles/)");
  app.add_option("--trace", trace_path, "write a Chrome-trace/Perfetto timeline of one iteration of the first phase");
  app.add_option("--op-times", op_times_path,
                 "with --gpu: write the per-op prediction (schema ptsim.op_times.v1, as 'ptsim train --op-times' measures)");
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  if (!gpu_name.empty() && (!scenario_name.empty() || !node_name.empty()))
    throw core::InputError("--gpu predicts one GPU; it cannot be combined with --scenario or --node");
  if (!scenario_name.empty() && !node_name.empty())
    throw core::InputError("give either --scenario or --node (a cluster from flags), not both");

  if (!gpu_name.empty()) refuse_unused_flags(app, kGpuUnused, "--gpu");
  else if (!node_name.empty()) refuse_unused_flags(app, kNodeUnused, "--node");
  else refuse_unused_flags(app, kScenarioUnused, scenario_name.empty() ? "(the default scenario)" : "--scenario");

  // Output targets are checked before the prediction runs (core/atomic_file.hpp writes them at the end).
  if (!trace_path.empty()) (void)core::writable_target(trace_path, "--trace");
  if (!op_times_path.empty()) (void)core::writable_target(op_times_path, "--op-times");
  hwprofiles::ProfileSet profiles =
      profiles_dir.empty() ? hwprofiles::load_profiles() : hwprofiles::load_profiles(profiles_dir);
  if (!op_times_path.empty() && gpu_name.empty())
    throw core::InputError("--op-times writes per-op predictions of one GPU: give --gpu");
  if (!gpu_name.empty()) return predict_single_gpu(profiles, gpu_name, model_name, flags, format, op_times_path);

  reports::Scenario scenario;
  if (!node_name.empty() && flags.data_parallel != 1)
    throw core::InputError("--data-parallel is derived from the cluster (--nodes × GPUs per node ÷ --tensor-parallel); "
                           "do not give it with --node");
  if (!node_name.empty()) {
    // Named by flag here; the scenario built from them is range-checked again as "command line".
    check_recipe_flag_ranges(flags);
    core::check_range(nodes, core::ranges::nodes, "--nodes");
    core::check_range(steps, core::ranges::steps, "--steps");
    core::Json j = scenario_from_flags(model_name, node_name, nodes, network, flags, steps);
    for (const auto& o : overrides) reports::apply_override(j, o);
    scenario = reports::parse_scenario(j, "command line");
  } else {
    scenario = reports::load_scenario(scenario_name.empty() ? "t4-academic-cluster" : scenario_name, overrides);
  }
  reports::PredictOptions options;
  options.record_trace = !trace_path.empty();
  reports::Prediction p = reports::predict_scenario(scenario, profiles, options);
  if (!trace_path.empty()) {
    core::write_file_atomic(trace_path, p.trace.dump() + "\n", "--trace");
  }
  if (format == "json") fmt::print("{}\n", reports::prediction_to_json(p).dump(2));
  else fmt::print("{}", reports::prediction_to_text(p));
  return 0;
}

}  // namespace ptsim::tools
