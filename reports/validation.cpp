// reports/validation.cpp — published results against predictions (see the header).
#include "reports/validation.hpp"

#include <cmath>
#include <map>

#include "calibration/published_fit.hpp"
#include "reports/prediction.hpp"
#include "reports/scenario.hpp"

namespace ptsim::reports {
namespace {

using core::Json;

double mean_abs(const std::vector<double>& errors) {
  double sum = 0;
  for (double e : errors) sum += std::abs(e);
  return errors.empty() ? 0 : sum / static_cast<double>(errors.size());
}

double worst(const std::vector<double>& errors) {
  double w = 0;
  for (double e : errors)
    if (std::abs(e) > std::abs(w)) w = e;
  return w;
}

Json published_results(const hwprofiles::ProfileSet& profiles, const std::vector<std::string>& scenarios) {
  Json targets = Json::array();
  for (const auto& name : scenarios.empty() ? builtin_scenario_names() : scenarios) {
    const Scenario s = load_scenario(name);
    if (s.published.empty()) continue;
    const Prediction p = predict_scenario(s, profiles);
    for (const auto& t : s.published) {
      const std::optional<double> v = metric_value(p, t);
      const bool points = t.metric == "scaling_efficiency";  // an absolute error, in points
      const double error = v ? (points ? *v - t.value : *v / t.value - 1) : NAN;
      targets.push_back({{"scenario", s.name}, {"metric", t.metric}, {"published", t.value},
                         {"predicted", v ? Json(*v) : Json(nullptr)}, {"error", v ? Json(error) : Json(nullptr)},
                         {"error_kind", points ? "absolute" : "relative"}, {"tolerance", t.tolerance},
                         {"within_tolerance", v && std::abs(error) <= t.tolerance}, {"source", t.source},
                         {"known_gap", t.known_gap}});
    }
  }
  return targets;
}

}  // namespace

Json validate_published(const hwprofiles::ProfileSet& profiles, const std::string& runs_path,
                        const std::vector<std::string>& scenarios) {
  Json out = {{"published_results", published_results(profiles, scenarios)}};
  const calibration::PublishedRunSet set = calibration::load_published_runs(runs_path);
  Json single = Json::array();
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> by_stack;  // fit, held out
  for (const auto& run : set.runs) {
    const double predicted = calibration::predict_run(run, profiles);
    const double error = predicted / run.sequences_per_second - 1;
    single.push_back({{"id", run.id}, {"gpu", run.gpu}, {"stack", run.stack}, {"role", run.role},
                      {"published", run.sequences_per_second}, {"predicted", predicted}, {"relative_error", error},
                      {"source", run.source}});
    (run.role == "fit" ? by_stack[run.stack].first : by_stack[run.stack].second).push_back(error);
  }
  Json stacks = Json::array();
  for (const auto& [name, errors] : by_stack) {
    const auto& [fit, held_out] = errors;
    stacks.push_back({{"stack", name}, {"fit_runs", fit.size()}, {"fit_mean_abs_error", mean_abs(fit)},
                      {"held_out_runs", held_out.size()}, {"held_out_mean_abs_error", mean_abs(held_out)},
                      {"held_out_worst_error", worst(held_out)}});
  }
  out["single_gpu_runs"] = single;
  out["stacks"] = stacks;
  out["runs_file"] = set.path;
  return out;
}

}  // namespace ptsim::reports
