// calibration/published_fit.hpp — fit compute-model parameters of GPU profiles to measured or published runs.
// A fit group (e.g. "v100") names the parameters it fits and the profiles it applies to; runs marked
// "holdout" never enter the objective, so their error is an honest extrapolation error.
// Objective: Σ over fit runs of log(predicted / measured)²; minimised by coordinate search.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "models/recipe.hpp"
#include "models/task_graph.hpp"

namespace ptsim::calibration {

struct PublishedRun {
  std::string id;
  std::string gpu;
  std::string model;
  models::Recipe recipe;
  double sequences_per_second = 0;
  std::string role;       // "fit" | "holdout"
  std::string fit_group;
  std::string stack;      // the fit group's software stack (hwprofiles/stacks)
  std::string source;
};

struct FitGroup {
  std::string name;
  std::vector<std::string> parameters;  // gemm_efficiency_scale | memory_efficiency | sustained_clock_fraction | kernel_launch_seconds
  std::string stack;                    // the stack (hwprofiles/stacks/<stack>.json) whose values are fitted
  std::string family;                   // its fit entry (fits.<family>); the GPUs listed there share the values
  std::string why;
};

struct PublishedRunSet {
  std::string path;
  std::vector<PublishedRun> runs;
  std::map<std::string, FitGroup> groups;
};

PublishedRunSet load_published_runs(const std::string& path);
std::string default_published_runs_path();

// Predicted sequences/s of a run on its GPU under its stack (fusions included).
double predict_run(const PublishedRun& run, const hwprofiles::ProfileSet& profiles);
// The run's TaskGraph as its stack builds it.
models::TaskGraph build_run_graph(const PublishedRun& run, const hwprofiles::ProfileSet& profiles);

struct RunError {
  std::string id;
  std::string role;
  double measured = 0;
  double predicted = 0;
  double relative_error() const { return predicted / measured - 1.0; }
};

struct FitResult {
  std::string group;
  std::map<std::string, double> values;   // parameter → fitted value
  std::vector<RunError> before, after;    // every run of the group, with the shipped and the fitted profiles
};

// Set / read one named parameter on a profile (gemm_efficiency_scale scales both GEMM curves' maxima,
// relative to the profile's current values).
void set_parameter(hwprofiles::GpuProfile& gpu, const std::string& parameter, double value);
double get_parameter(const hwprofiles::GpuProfile& gpu, const std::string& parameter);

// Physical bounds of a fitted parameter (fractions of a peak; a per-op overhead of 10 ns – 1 ms).
std::pair<double, double> parameter_bounds(const std::string& parameter);

// Derivative-free coordinate search with shrinking multiplicative steps, starting from `values` (one entry
// per parameter), within parameter_bounds; returns the values that minimise `objective`.
std::map<std::string, double> minimize_coordinatewise(
    std::map<std::string, double> values, const std::function<double(const std::map<std::string, double>&)>& objective,
    double first_step = 0.5);

FitResult fit_group(const PublishedRunSet& set, const std::string& group, const hwprofiles::ProfileSet& profiles);

}  // namespace ptsim::calibration
