// reports/prediction_cache.hpp — work shared by many predictions (a sweep): task graphs with their memory
// plans keyed by (model, recipe), single-GPU baselines keyed by (graph, GPU), and whole step simulations
// keyed by (graph, cluster), the step bound's reduced graphs keyed by (graph, GPU), derivations from micro-batch 1
// and 2 keyed by (model, recipe without micro-batch and accumulation), and (sim::CollectiveCache) collective
// answers keyed by cluster and size. Every
// entry is a pure function of its key, so a cached prediction is the uncached one (to rounding: a reused
// all-reduce duration is added to another start time; tests/reports/test_sweep.cpp checks 1e-9). Thread-safe: entries are computed
// outside the lock, each once: a thread that asks for a key another thread is computing waits for its result
// (reports/once_cache.hpp). Bounded: every kind of entry lives in a least-recently-used map with a byte budget
// (CacheLimits, reports/bounded_cache.hpp); an evicted entry is computed again when asked, to the same value. The planner's
// memory probes ask only for a graph's memory totals (memory()), which are kept apart and are small, and
// are derived for every micro-batch from two graph builds (models/micro_batch_memory.hpp) where exact; so
// are the op costs of the bound's reduced graphs (models/micro_batch_ops.hpp), so a costed candidate builds no
// graph either (docs/sweep.md, "Speed of --auto-recipe").
#pragma once
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "reports/bound_graph.hpp"
#include "reports/once_cache.hpp"
#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "models/micro_batch_memory.hpp"
#include "models/micro_batch_ops.hpp"
#include "models/model_spec.hpp"
#include "sim/collective_cache.hpp"
#include "sim/compute_model.hpp"
#include "sim/memory_check.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::reports {

struct PlannedGraph {
  models::TaskGraph graph;
  models::MemoryPlan plan;
};

// A pipeline's model chunks (models::build_pipeline_graphs), their plans, and each stage's memory.
struct PlannedPipeline {
  std::vector<models::TaskGraph> chunks;
  std::vector<models::MemoryPlan> plans;
  std::vector<sim::StageMemory> stages;
};

// What the planner's memory check needs of a recipe's graph: its memory plan's totals (no per-tensor
// offsets) without pipelining; each stage's memory (totals) with it.
struct MemorySummary {
  models::MemoryPlan plan;
  std::vector<sim::StageMemory> stages;
};

// What the planner derives at every micro-batch from a recipe's graphs — or each pipeline chunk's — at
// micro-batch 1 and 2 (the accumulation does not enter the graph but as its micro-step count): the memory
// totals (models/micro_batch_memory.hpp) and the step bound's op costs (models/micro_batch_ops.hpp, with the
// bound graph's structure). No chunks: the memory is not derivable (a probe then builds its graph); no ops in a
// chunk: its costs are not (a costed candidate's bound then builds its graph).
struct MicroBatchDerivation {
  struct Chunk {
    models::MicroBatchMemory memory;
    std::optional<models::MicroBatchOps> ops;
    BoundGraph bound_structure;  // reports/bound_graph.hpp
  };
  std::vector<Chunk> chunks;
  bool ops_derivable() const;
};

// The byte budget of each least-recently-used map (docs/sweep.md, "Memory"): resident memory stays below
// their sum plus the entries callers hold at the moment (a few per thread).
struct CacheLimits {
  size_t graph_bytes = size_t{1} << 30;        // task graphs and pipelines with their memory plans
  size_t result_bytes = size_t{64} << 20;      // each: memory summaries, single-GPU baselines, step simulations
  size_t bound_bytes = size_t{256} << 20;      // the step bound's reduced graphs (reports/bound_graph.hpp)
  size_t derivation_bytes = size_t{256} << 20; // MicroBatchDerivations (memory totals and op costs at any micro-batch)
  // false: every reduced graph of the bound comes from a built graph, none from a derivation — the reference
  // the derivation must equal (tests/reports/test_sweep.cpp compares whole sweep outputs).
  bool derive_op_costs = true;
};

// Everything a recipe's graph depends on, as text (the cache key; also handy in messages).
std::string recipe_key(const std::string& model, const models::Recipe& recipe);

class PredictionCache {
 public:
  explicit PredictionCache(const CacheLimits& limits = {});
  std::shared_ptr<const models::ModelSpec> model(const std::string& name_or_path);
  std::shared_ptr<const PlannedGraph> graph(const models::ModelSpec& model, const models::Recipe& recipe);
  std::shared_ptr<const PlannedPipeline> pipeline(const models::ModelSpec& model, const models::Recipe& recipe);
  std::shared_ptr<const MemorySummary> memory(const models::ModelSpec& model, const models::Recipe& recipe);
  // The step bound's reduction of the recipe's graph (one) or of each pipeline chunk, with op times on `gpu`.
  std::shared_ptr<const std::vector<BoundGraph>> bound_graphs(const models::ModelSpec& model,
                                                              const models::Recipe& recipe,
                                                              const hwprofiles::GpuProfile& gpu);
  sim::SingleDevicePrediction single_device(const models::ModelSpec& model, const models::Recipe& recipe,
                                            const hwprofiles::GpuProfile& gpu);
  sim::StepSimulation step(const models::ModelSpec& model, const models::Recipe& recipe,
                           const sim::ClusterConfig& config);
  sim::StepSimulation pipeline_step(const models::ModelSpec& model, const models::Recipe& recipe,
                                    const sim::ClusterConfig& config);

  struct Counts {
    long graph_builds = 0, graph_hits = 0, step_simulations = 0, step_hits = 0;
    long memory_summaries = 0, memory_hits = 0;
    long memory_derivations = 0, memory_derivation_hits = 0;  // MicroBatchDerivations made (two builds each), found
    long bound_graphs = 0, bound_graph_hits = 0;
    long bound_graphs_derived = 0;  // of bound_graphs: from a MicroBatchDerivation (the rest from a graph)
    long graph_evictions = 0;      // graphs and pipelines dropped for the budget
    size_t graph_entries = 0, graph_bytes = 0;  // held now (estimated bytes, reports/cache_bytes.hpp)
  };
  Counts counts() const;

 private:
  std::shared_ptr<const MicroBatchDerivation> derivation(const models::ModelSpec& model, const models::Recipe& recipe);
  mutable std::mutex mutex_;
  std::map<std::string, std::shared_ptr<const models::ModelSpec>> models_;
  // Graphs and pipelines share one budget: a pipeline entry's key starts with "pipeline:".
  struct GraphEntry {
    std::shared_ptr<const PlannedGraph> graph;
    std::shared_ptr<const PlannedPipeline> pipeline;
  };
  OnceCache<GraphEntry> graphs_;
  OnceCache<std::shared_ptr<const MemorySummary>> memory_;
  OnceCache<std::shared_ptr<const MicroBatchDerivation>> derivations_;  // keyed without micro-batch and accumulation
  OnceCache<std::shared_ptr<const std::vector<BoundGraph>>> bound_graphs_;
  OnceCache<sim::SingleDevicePrediction> single_;
  OnceCache<sim::StepSimulation> steps_;
  sim::CollectiveCache collectives_;  // algorithm choices and alone-on-network all-reduce durations
  bool derive_op_costs_;
  Counts counts_;
};

}  // namespace ptsim::reports
