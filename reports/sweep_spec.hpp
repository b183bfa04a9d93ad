// reports/sweep_spec.hpp — what a sweep asks: a base scenario, axes of scenario keys with their values
// (lists or integer ranges), constraints (deadline, budget, GPU count) and an objective; from the command
// line (`--vary KEY=V1,V2`, `--vary KEY=A..BxF`) or a sweep file (docs/sweep.md). Expanding the axes gives
// one configuration per point of their cartesian product, in a fixed order (the first axis varies slowest).
// Not here: evaluating configurations (reports/sweep.hpp).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/json_reader.hpp"
#include "reports/scenario.hpp"  // load_base_scenario

namespace ptsim::reports {

struct SweepAxis {
  std::string key;                   // a dotted scenario key, as --set takes it (cluster.nodes, phases.0.micro_batch)
  std::vector<core::Json> values;
};

enum class SweepObjective { time, rental, spot, ownership, gpu_hours };

struct SweepConstraints {
  std::optional<double> deadline_seconds;
  std::optional<double> budget_usd;  // on the objective's price basis (rental when the objective is not one)
  std::optional<int64_t> max_gpus;
};

struct SweepSpec {
  core::Json base;                   // the scenario JSON, --set edits applied
  std::string base_source;           // its file (for messages)
  ScenarioEdits base_edits;          // the node the base names and the keys --set edited (reports/node_retarget.hpp)
  std::vector<SweepAxis> axes;
  SweepConstraints constraints;
  SweepObjective objective = SweepObjective::rental;
  bool auto_recipe = false;
};

// Keys --auto-recipe chooses itself; varying them too is a contradiction (InputError).
const std::vector<std::string>& auto_recipe_keys();

// "cluster.nodes=1..64x2", "cluster.network=10gbe-tcp,ib-edr": InputError naming the axis when malformed.
// A paired axis varies keys together ("cluster.node+recipe.stack=dgx-a100:pytorch-ngc20.06,dgx-h100:…"): its
// values are lists, one entry per key (docs/sweep.md).
SweepAxis parse_axis(const std::string& text);
// An axis' keys: "a+b" → {a, b}; one key otherwise.
std::vector<std::string> axis_keys(const std::string& key);
// The "key=value" edits one value of an axis makes (a paired axis: one per key).
std::vector<std::string> axis_assignments(const std::string& key, const core::Json& value);
// "A..B" (step 1), "A..B+S" (arithmetic), "A..BxF" (geometric): integers, at most kMaxAxisValues of them.
std::vector<core::Json> parse_range(const std::string& axis, const std::string& range);
inline constexpr size_t kMaxAxisValues = 100000;
inline constexpr size_t kMaxConfigurations = 10000000;

// "21d", "36h", "90min", "3600s", "2w", or a number of seconds; InputError naming `what` otherwise.
double parse_duration_seconds(const std::string& text, const std::string& what);
SweepObjective parse_objective(const std::string& name, const std::string& what);
const char* to_string(SweepObjective objective);

// A sweep file: {"base": NAME|{scenario}, "set": {key: value}, "axes": [{"key", "values"|"range"}],
// "auto_recipe", "deadline", "budget_usd", "max_gpus", "objective"}.
SweepSpec load_sweep_file(const std::string& path);
SweepSpec parse_sweep_json(const core::Json& json, const std::string& source);

// Number of configurations (product of axis sizes); InputError above kMaxConfigurations.
size_t configuration_count(const SweepSpec& spec);
// Configuration `index`'s axis values, in axis order.
std::vector<std::pair<std::string, core::Json>> configuration_settings(const SweepSpec& spec, size_t index);
// The scenario JSON of configuration `index`: the base with its settings applied.
core::Json configuration_json(const SweepSpec& spec, size_t index);

}  // namespace ptsim::reports
