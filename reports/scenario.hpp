// reports/scenario.hpp — a what-if as data: model, cluster, recipe, training phases, overheads, prices,
// and (for the shipped validation scenarios) the published results with their sources.
// Every field has a default except the model; unknown fields are errors (docs/scenarios.md).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/json_reader.hpp"
#include "models/recipe.hpp"
#include "sim/collectives.hpp"
#include "sim/topology.hpp"

namespace ptsim::reports {

struct PhaseSpec {
  std::string name;
  int64_t seq_len = 128;
  int64_t micro_batch = 32;
  int64_t grad_accum = 0;         // 0: derive from global_batch (or 1)
  int64_t global_batch = 0;       // 0: micro_batch × grad_accum × data-parallel ranks
  int64_t steps = 0;              // 0: derive from epochs × dataset_sequences ÷ global batch
  double epochs = 0;
  double dataset_sequences = 0;
  int64_t max_predictions = 0;    // 0: 20 at seq 128, 80 at 512
};

struct Overheads {
  double startup_seconds = 0;
  double checkpoint_seconds = 0;
  int64_t checkpoint_every_steps = 0;
  double evaluation_seconds = 0;
  int64_t evaluation_every_steps = 0;
};

struct PriceChoice {
  std::string set;                // a price set: fills rental, spot, purchase not named (reports/price_resolution)
  std::string rental;             // price item names in hwprofiles/prices ("" = none, or from `set`)
  std::string spot;
  std::string purchase;           // "" = the node's purchase price if one is listed
  double network_purchase_usd_per_node = 0;
  double amortisation_years = 3;
  std::string electricity = "electricity-us-2020";
  std::string pue = "pue-typical";
  double spot_preemption_overhead = 0.1;
};

struct PublishedTarget {
  // time_to_train_seconds | scaling_efficiency | rental_usd | rental_usd_at_published_time | purchase_usd |
  // tflops_per_gpu | cluster_pflops
  std::string metric;
  double value = 0;
  double tolerance = 0;           // relative (absolute for scaling_efficiency: 0.10 = ±10 points)
  double published_hours = 0;     // rental_usd_at_published_time: the published duration the price applies to
  std::string known_gap;          // why the prediction may miss this target (printed by validate)
  std::string source;
};

struct ScalingBaseline {           // efficiency against another model's single-GPU FLOP rate (Megatron)
  std::string model;
  int64_t micro_batch = 0;
  int64_t seq_len = 0;
};

// The edits a what-if made to a scenario file (`--set`, `--vary` axes, a request's "set") and the node the file
// names. When an edit changes the node, a stack or price the file named for its own node gives way to the new
// node's (reports/node_retarget.hpp); one an edit named is the user's own and must apply as it is.
struct ScenarioEdits {
  std::string file_node;                 // "" when the scenario was not read from a file with edits
  std::vector<std::string> keys;         // the edited keys, as typed (recipe.stack, prices.rental, cluster.node)
  // Whether an edit named `key` or an object above it ("recipe" names recipe.stack).
  bool names(const std::string& key) const;
};

struct Scenario {
  std::string name;
  std::string description;
  std::string source;
  std::string file;
  std::string model;
  std::string node = "dgx-1";
  int nodes = 1;
  int gpus_per_node = 0;          // 0 = all of the node's GPUs (e.g. 1 for a single-GPU run on a DGX)
  std::string network;            // "" = the node's default network
  sim::FabricConfig fabric;
  std::string stack;              // recipe.stack: the software stack (hwprofiles/stacks); "" = the GPU's one stack
  models::Recipe recipe;          // precision, optimizer, tensor parallel, recompute, buckets (per-phase sizes come from phases)
  sim::CollectiveAlgorithm algorithm = sim::CollectiveAlgorithm::automatic;
  int channels = 0;
  bool exact = false;             // simulate every flow (slow on big clusters)
  std::vector<PhaseSpec> phases;
  Overheads overheads;
  PriceChoice prices;
  std::vector<PublishedTarget> published;
  std::optional<ScalingBaseline> scaling_baseline;
  ScenarioEdits edits;
  // An edit changed the node from the one the file names.
  bool node_edited() const { return !edits.file_node.empty() && node != edits.file_node; }
};

// `name_or_path`: a shipped scenario (reports/scenarios/<name>.json) or a file. `overrides` are
// "dotted.path=value" edits applied to the JSON before it is read (value parsed as JSON, else a string).
Scenario load_scenario(const std::string& name_or_path, const std::vector<std::string>& overrides = {});
Scenario parse_scenario(const core::Json& json, const std::string& source);
// `json` with the --set edits applied, parsed; an error then says the scenario was edited (as load_scenario).
Scenario parse_edited_scenario(core::Json json, const std::vector<std::string>& overrides, const std::string& source);
std::vector<std::string> builtin_scenario_names();
// A scenario's JSON by shipped name or file, with --set edits applied; `path` (optional) gets its file,
// `edits` (optional) the file's node and the edited keys.
core::Json load_base_scenario(const std::string& name_or_path, const std::vector<std::string>& overrides,
                              std::string* path, ScenarioEdits* edits = nullptr);
// The edits `assignments` ("key=value") make to `file_json`, and the node that JSON names.
ScenarioEdits scenario_edits(const core::Json& file_json, const std::vector<std::string>& assignments);
// The file of a shipped scenario name, or the path itself if it is a file; InputError lists the names.
std::string scenario_path(const std::string& name_or_path);
// That InputError's text: "unknown scenario 'X': not a file and not a shipped scenario (expected one of: …)".
std::string unknown_scenario_message(const std::string& name_or_path);
std::string scenarios_directory();
// The --set assignment that sets `key` to `value` (a request's or a Python dict's edits): "key=text", where a
// string that is not itself JSON text stays a bare word, as --set reads it; anything else is its JSON.
std::string set_assignment(const std::string& key, const core::Json& value);
// Applies one "a.b.0.c=value" override; InputError names the override on a bad path.
void apply_override(core::Json& json, const std::string& assignment);

}  // namespace ptsim::reports
