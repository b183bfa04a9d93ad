// tools/cmd_predict.cpp — `ptsim predict`: step time, throughput, TFLOP/s and MFU of a model + recipe on
// one GPU, with the per-op-kind breakdown (table | json). Refuses configurations that do not fit (exit 2).
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hwprofiles/profiles.hpp"
#include "models/builder.hpp"
#include "models/graph_export.hpp"
#include "reports/text_table.hpp"
#include "sim/compute_model.hpp"
#include "sim/memory_check.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"
#include "tools/recipe_flags.hpp"

namespace ptsim::tools {

int run_predict_command(int argc, char** argv) {
  CLI::App app{"Predict one training step of a model on a GPU: time, throughput, TFLOP/s, MFU", "predict"};
  std::string model_name = "bert-large";
  std::string gpu_name = "v100-sxm3-32gb";
  std::string format = "table";
  std::string profiles_dir;
  RecipeFlags flags;
  flags.micro_batch = 64;
  app.add_option("--model", model_name, "built-in model name or path to a model JSON / HF config.json")
      ->capture_default_str();
  app.add_option("--gpu", gpu_name, "GPU profile (ptsim profiles list)")->capture_default_str();
  add_recipe_flags(app, flags);
  app.add_option("--format", format, "table | json")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  app.add_option("--profiles", profiles_dir, "hardware profile directory (default: the shipped hwprofiles/)");
  if (auto code = parse_or_exit(app, argc, argv)) return *code;

  hwprofiles::ProfileSet profiles =
      profiles_dir.empty() ? hwprofiles::load_profiles() : hwprofiles::load_profiles(profiles_dir);
  const hwprofiles::GpuProfile& gpu = hwprofiles::find_gpu(profiles, gpu_name);
  models::ModelSpec model = models::load_model(model_name);
  models::Recipe recipe = to_recipe(flags);
  models::TaskGraph graph = models::build_task_graph(model, recipe);
  models::MemoryPlan plan = models::plan_memory(graph);
  sim::require_fits(model, recipe, plan, gpu);
  sim::SingleDevicePrediction p = sim::predict_single_device(graph, gpu);
  sim::MemoryFit fit = sim::check_memory(plan, gpu);

  std::vector<std::pair<std::string, double>> kinds(p.seconds_by_kind.begin(), p.seconds_by_kind.end());
  std::sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second > b.second; });

  if (format == "json") {
    nlohmann::json j;
    j["model"] = model.name;
    j["gpu"] = gpu.name;
    j["recipe"] = models::graph_to_json(graph, plan, false)["recipe"];
    j["step_seconds"] = p.step_seconds;
    j["micro_step_seconds"] = p.micro_step_seconds;
    j["sequences_per_second"] = p.sequences_per_second;
    j["tflops_per_gpu"] = p.achieved_flops / 1e12;
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
  fmt::print("  achieved       {:.1f} TFLOP/s (MFU {:.1f}% of {:.0f} TFLOP/s)\n", p.achieved_flops / 1e12, p.mfu * 100,
             p.achieved_flops / p.mfu / 1e12);
  fmt::print("  memory         {:.2f} of {:.2f} GiB\n\n", fit.needed_bytes / (1 << 30), fit.available_bytes / (1 << 30));
  reports::TextTable table({"op kind", "ms/step", "share"});
  for (const auto& [kind, seconds] : kinds)
    table.add_row({kind, fmt::format("{:.3f}", seconds * 1e3), fmt::format("{:.1f}%", 100 * seconds / p.step_seconds)});
  fmt::print("{}", table.render());
  return 0;
}

}  // namespace ptsim::tools
