// calibration/published_fit.cpp — least-squares fit (in log space) of a few GPU-profile parameters to runs.
#include "calibration/published_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/data_path.hpp"
#include "core/json_reader.hpp"
#include "models/builder.hpp"
#include "sim/compute_model.hpp"

namespace ptsim::calibration {
using core::InputError;

std::string default_published_runs_path() {
  return core::data_path("calibration/data/published_single_gpu.json");
}

PublishedRunSet load_published_runs(const std::string& path) {
  core::Json j = core::load_json_file(path);
  core::JsonReader top(j, path);
  PublishedRunSet set;
  set.path = path;
  top.ignore("description");
  const core::Json& runs = top.raw("runs");
  if (!runs.is_array()) top.fail("runs", "an array of runs");
  for (size_t i = 0; i < runs.size(); ++i) {
    core::JsonReader r(runs[i], path, fmt::format("runs[{}]", i));
    PublishedRun run;
    run.id = r.require_string("id");
    run.gpu = r.require_string("gpu");
    run.model = r.require_string("model");
    run.recipe.precision = models::parse_precision(r.require_string("precision"), r.where("precision"));
    run.recipe.optimizer = models::parse_optimizer(r.get_string("optimizer", "lamb"), r.where("optimizer"));
    run.recipe.seq_len = r.require_int("seq_len", core::ranges::seq_len);
    run.recipe.micro_batch = r.require_int("micro_batch", core::ranges::micro_batch);
    // Micro-steps per optimizer step as the run accumulated gradients (1: the optimizer every micro-batch).
    run.recipe.grad_accum = r.get_int("grad_accum", core::ranges::grad_accum, 1);
    run.sequences_per_second = r.require_positive("sequences_per_second");
    run.role = r.require_enum("role", {"fit", "holdout"});
    run.fit_group = r.require_string("fit_group");
    run.source = r.require_string("source");
    r.finish();
    set.runs.push_back(run);
  }
  core::JsonReader groups = top.child("fit_groups");
  for (auto it = groups.object().begin(); it != groups.object().end(); ++it) {
    core::JsonReader g = groups.child(it.key());
    FitGroup group;
    group.name = it.key();
    for (const auto& p : g.raw("parameters")) {
      std::string name = p.get<std::string>();
      if (name != "gemm_efficiency_scale" && name != "memory_efficiency" && name != "sustained_clock_fraction" &&
          name != "kernel_launch_seconds")
        g.fail("parameters", "names among gemm_efficiency_scale, memory_efficiency, sustained_clock_fraction, "
                             "kernel_launch_seconds; got \"" + name + "\"");
      group.parameters.push_back(name);
    }
    group.stack = g.require_string("stack");
    group.family = g.require_string("family");
    group.why = g.get_string("why", "");
    g.finish();
    set.groups[group.name] = group;
  }
  top.finish();
  for (auto& run : set.runs) {
    if (!set.groups.count(run.fit_group))
      throw InputError(fmt::format("{}: run '{}' names fit group '{}', which fit_groups does not define", path, run.id,
                                   run.fit_group));
    run.stack = set.groups.at(run.fit_group).stack;
  }
  return set;
}

models::TaskGraph build_run_graph(const PublishedRun& run, const hwprofiles::ProfileSet& profiles) {
  models::Recipe recipe = run.recipe;
  sim::apply_stack_fusions(recipe, hwprofiles::find_stack(profiles, run.stack));
  return models::build_task_graph(models::load_model(run.model), recipe);
}

double predict_run(const PublishedRun& run, const hwprofiles::ProfileSet& profiles) {
  return sim::predict_single_device(build_run_graph(run, profiles),
                                    hwprofiles::device_profile(profiles, run.gpu, run.stack))
      .sequences_per_second;
}

void set_parameter(hwprofiles::GpuProfile& gpu, const std::string& parameter, double value) {
  if (parameter == "gemm_efficiency_scale") {
    gpu.gemm.max_efficiency = std::min(1.0, gpu.gemm.max_efficiency * value);
    gpu.batched_gemm.max_efficiency = std::min(1.0, gpu.batched_gemm.max_efficiency * value);
  } else if (parameter == "memory_efficiency") {
    gpu.memory_efficiency = value;
  } else if (parameter == "sustained_clock_fraction") {
    gpu.sustained_clock_fraction = value;
  } else if (parameter == "kernel_launch_seconds") {
    gpu.kernel_launch_seconds = value;
  } else {
    throw InputError("unknown calibration parameter '" + parameter + "'");
  }
}

double get_parameter(const hwprofiles::GpuProfile& gpu, const std::string& parameter) {
  if (parameter == "gemm_efficiency_scale") return 1.0;
  if (parameter == "memory_efficiency") return gpu.memory_efficiency;
  if (parameter == "sustained_clock_fraction") return gpu.sustained_clock_fraction;
  if (parameter == "kernel_launch_seconds") return gpu.kernel_launch_seconds;
  throw InputError("unknown calibration parameter '" + parameter + "'");
}

std::pair<double, double> parameter_bounds(const std::string& parameter) {
  if (parameter == "kernel_launch_seconds") return {1e-8, 1e-3};
  if (parameter == "gemm_efficiency_scale") return {0.01, 100.0};  // the curve's maximum is capped at 1 anyway
  return {0.01, 1.0};
}

std::map<std::string, double> minimize_coordinatewise(
    std::map<std::string, double> values, const std::function<double(const std::map<std::string, double>&)>& objective,
    double first_step) {
  double best = objective(values);
  for (double step = first_step; step > 1e-4; step *= 0.5) {
    bool improved = true;
    while (improved) {
      improved = false;
      for (auto& [parameter, value] : values) {
        auto [lo, hi] = parameter_bounds(parameter);
        for (double factor : {1.0 + step, 1.0 / (1.0 + step)}) {
          auto trial = values;
          trial[parameter] = std::clamp(value * factor, lo, hi);
          double o = objective(trial);
          if (o < best - 1e-15) {
            best = o;
            values = trial;
            improved = true;
          }
        }
      }
    }
  }
  return values;
}

FitResult fit_group(const PublishedRunSet& set, const std::string& group_name, const hwprofiles::ProfileSet& profiles) {
  auto found = set.groups.find(group_name);
  if (found == set.groups.end()) throw InputError(fmt::format("{}: no fit group '{}'", set.path, group_name));
  const FitGroup& group = found->second;

  // Every run's graph is built once; only the GPU parameters change during the search.
  struct Case {
    const PublishedRun* run;
    models::TaskGraph graph;
    hwprofiles::GpuProfile base;
  };
  std::vector<Case> cases;
  size_t fit_runs = 0;
  for (const auto& run : set.runs)
    if (run.fit_group == group_name) {
      cases.push_back({&run, build_run_graph(run, profiles), hwprofiles::device_profile(profiles, run.gpu, run.stack)});
      fit_runs += run.role == "fit";
    }
  // Nothing to fit to: a group of held-out runs only (or none) would return its starting values as "fitted".
  if (fit_runs == 0)
    throw InputError(fmt::format("{}: fit group '{}' has no run with role \"fit\" ({} held out): give it at least one "
                                 "fit run, or leave it out of the file", set.path, group_name, cases.size()));

  auto evaluate = [&](const std::map<std::string, double>& values, std::vector<RunError>* errors) {
    double objective = 0;
    for (const auto& c : cases) {
      hwprofiles::GpuProfile gpu = c.base;
      for (const auto& [p, v] : values) set_parameter(gpu, p, v);
      double predicted = sim::predict_single_device(c.graph, gpu).sequences_per_second;
      if (c.run->role == "fit") objective += std::pow(std::log(predicted / c.run->sequences_per_second), 2);
      if (errors) errors->push_back({c.run->id, c.run->role, c.run->sequences_per_second, predicted});
    }
    return objective;
  };

  FitResult result;
  result.group = group_name;
  std::map<std::string, double> values;
  for (const auto& p : group.parameters) values[p] = get_parameter(cases.front().base, p);
  evaluate({}, &result.before);

  values = minimize_coordinatewise(values, [&](const auto& v) { return evaluate(v, nullptr); });
  result.values = values;
  evaluate(values, &result.after);
  return result;
}

}  // namespace ptsim::calibration
