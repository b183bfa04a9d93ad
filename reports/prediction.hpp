// reports/prediction.hpp — a whole pretraining run predicted from a Scenario: per phase, the step on the
// cluster (sim::simulate_step), steps, time; then overheads, time to train, scaling efficiency, cost.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "reports/price_resolution.hpp"
#include "reports/scenario.hpp"
#include "sim/cost_model.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::reports {

// One pipeline stage of a phase (docs/parallelism.md).
struct StagePrediction {
  int stage = 0;
  std::vector<std::pair<int64_t, int64_t>> layers;  // [first, end) transformer layers of each of its model chunks
  bool embeddings = false, heads = false;           // first stage: embeddings; last: heads and loss
  double memory_bytes = 0;                          // as memory_per_gpu_bytes, for this stage
  double in_flight_micro_batches = 0;               // activations held at the schedule's peak
  double busy_seconds = 0, idle_seconds = 0;        // in its forward/backward passes; the bubble
  double data_parallel_comm_seconds = 0;
};

struct PhasePrediction {
  std::string name;
  int64_t seq_len = 0, global_batch = 0, micro_batch = 0, grad_accum = 0, steps = 0;
  double iteration_seconds = 0;
  double compute_seconds = 0;
  double exposed_comm_seconds = 0;
  double throughput_seq_per_second = 0;
  double seconds = 0;                          // steps × iteration
  std::optional<double> scaling_efficiency;    // vs one GPU at the same micro-batch (or the scaling baseline)
  double tflops_per_gpu = 0;                   // hardware FLOPs (incl. recomputation) per GPU per second
  double memory_per_gpu_bytes = 0;
  std::string data_parallel_algorithm;
  // Pipeline parallelism (stages 1 without it): the schedule, its bubble and each stage.
  int pipeline_stages = 1;
  std::string pipeline_schedule;
  int virtual_stages = 1;
  double pipeline_bubble_fraction = 0;
  double pipeline_send_seconds = 0;
  std::vector<StagePrediction> stages;
};

struct Prediction {
  std::string scenario;
  std::string description;
  int gpus = 0;
  std::string gpu, node, network;
  std::string stack;                           // the software stack the GPU was costed under
  double time_to_train_seconds = 0;
  double training_seconds = 0;                 // Σ phases
  double overhead_seconds = 0;                 // start-up + checkpoints + evaluation
  std::optional<double> scaling_efficiency;    // time-weighted over phases
  double tflops_per_gpu = 0;                   // time-weighted over phases
  double cluster_pflops = 0;
  double memory_per_gpu_bytes = 0;             // the largest over phases
  sim::CostEstimate cost;
  PriceResolution prices;                      // the items behind `cost`, and the figures no price was found for
  std::vector<std::string> what_if_notes;      // a swapped node type's stack and prices (reports/node_retarget.hpp)
  std::vector<PhasePrediction> phases;
  double simulator_wall_seconds = 0;
  nlohmann::json trace;                        // Chrome trace of one iteration of the first phase (record_trace)
};

class PredictionCache;

struct PredictOptions {
  bool record_trace = false;
  PredictionCache* cache = nullptr;  // shared work across predictions (a sweep); nullptr: a private one
  bool fit_suggestions = true;       // a configuration that does not fit: search for what would (slower)
};

// The steps of predict_scenario, for callers that plan recipes (the sweep's --auto-recipe).
struct PhaseShape {
  int64_t grad_accum = 1;
  int64_t global_batch = 0;
  int64_t steps = 0;
};
// The scenario with its stack resolved (recipe.stack, or the GPU's one stack) and the stack's fusions in its recipe;
// first, a node type an edit swapped in takes its own stack and prices (reports/node_retarget.hpp), and what
// that changed goes to `what_if_notes`.
Scenario with_stack(const Scenario& scenario, const hwprofiles::ProfileSet& profiles,
                    std::vector<std::string>* what_if_notes = nullptr);
sim::ClusterConfig resolve_cluster(const Scenario& s, const hwprofiles::ProfileSet& profiles);
// GPUs ÷ (tensor × pipeline parallel); core::InfeasibleError (parallelism) when they do not divide them.
int64_t data_parallel_ranks(const Scenario& s, const sim::ClusterConfig& config);
// Phase `phase`'s accumulation, global batch and steps; InputError when its fields contradict each other.
PhaseShape phase_shape(const Scenario& s, size_t phase, int64_t data_parallel);
models::Recipe phase_recipe(const Scenario& s, const PhaseSpec& phase, const PhaseShape& shape, int64_t data_parallel);

Prediction predict_scenario(const Scenario& scenario, const hwprofiles::ProfileSet& profiles,
                            const PredictOptions& options = {});

// The metric of a published target, from a prediction (nullopt when the prediction has no such figure).
std::optional<double> metric_value(const Prediction& p, const PublishedTarget& target);
double tokens_per_second_per_gpu(const Prediction& p);

nlohmann::json prediction_to_json(const Prediction& p);
std::string prediction_to_text(const Prediction& p);

// Prices older than this many months are flagged in the text report (docs/cost-model.md).
inline constexpr int kStalePriceMonths = 12;

}  // namespace ptsim::reports
