// reports/prediction_cache.cpp — keyed, thread-safe, byte-bounded memoisation of graph builds, memory plans,
// memory summaries, single-GPU baselines and step simulations (see the header).
#include "reports/prediction_cache.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "core/error.hpp"
#include "reports/cache_bytes.hpp"
#include "sim/pipeline_step.hpp"

namespace ptsim::reports {

namespace {

std::string model_key(const models::ModelSpec& m) {
  return fmt::format("{}|{}|L{}|h{}|a{}/{}|i{}|v{}/{}|p{}|t{}|eps{}|d{},{}|rope{}|tie{}", m.name,
                     static_cast<int>(m.family), m.num_layers, m.hidden_size, m.num_heads, m.kv_heads(),
                     m.intermediate_size, m.vocab_size, m.vocab_pad_multiple, m.max_position_embeddings,
                     m.type_vocab_size, m.layer_norm_eps, m.hidden_dropout, m.attention_dropout, m.rope_theta,
                     m.tie_word_embeddings);
}

std::string graph_key(const models::ModelSpec& model, const models::Recipe& r) {
  return model_key(model) + "#" + recipe_key(model.name, r);
}

// The recipe's graph, or its pipeline's chunks.
std::vector<models::TaskGraph> build_chunks(const models::ModelSpec& model, const models::Recipe& r) {
  if (r.pipeline_parallel > 1) return models::build_pipeline_graphs(model, r);
  std::vector<models::TaskGraph> out;
  out.push_back(models::build_task_graph(model, r));
  return out;
}

// `reference` (at micro-batch 1) and the same at micro-batch 2, built and compared: no chunks when either is
// refused (the probe's own build then says why) or their memory is not derivable.
std::shared_ptr<const MicroBatchDerivation> derive(const models::ModelSpec& model, const models::Recipe& reference) {
  models::Recipe two = reference;
  two.micro_batch = 2;
  std::vector<models::TaskGraph> at_one, at_two;
  try {
    at_one = build_chunks(model, reference);
    at_two = build_chunks(model, two);
  } catch (const core::InputError&) {
    return std::make_shared<const MicroBatchDerivation>();
  }
  auto out = std::make_shared<MicroBatchDerivation>();
  for (size_t c = 0; c < at_one.size(); ++c) {
    auto memory = models::MicroBatchMemory::from(at_one[c], at_two[c]);
    if (!memory) return std::make_shared<const MicroBatchDerivation>();
    out->chunks.push_back({std::move(*memory), models::MicroBatchOps::from(at_one[c], at_two[c]),
                           bound_structure(at_one[c])});
  }
  return out;
}

size_t approximate_bytes(const MicroBatchDerivation& d) {
  size_t bytes = sizeof(MicroBatchDerivation) + d.chunks.capacity() * sizeof(MicroBatchDerivation::Chunk);
  for (const auto& c : d.chunks)
    bytes += c.memory.approximate_bytes() + (c.ops ? c.ops->approximate_bytes() : 0) + approximate_bytes(c.bound_structure);
  return bytes;
}

// A probe's summary from its recipe's derivation.
std::shared_ptr<const MemorySummary> derived_memory(const MicroBatchDerivation& derivation, const models::Recipe& recipe) {
  auto summary = std::make_shared<MemorySummary>();
  if (recipe.pipeline_parallel > 1) {
    std::vector<models::MemoryPlan> plans;
    for (const auto& chunk : derivation.chunks) plans.push_back(chunk.memory.at(recipe.micro_batch));
    summary->stages = sim::plan_pipeline_memory(plans, recipe);
  } else {
    summary->plan = derivation.chunks.front().memory.at(recipe.micro_batch);
  }
  return summary;
}

// Only what differs from data + tensor parallelism, so those keys stay as they were.
std::string parallelism_key(const models::Recipe& r) {
  std::string key;
  if (r.pipeline_parallel > 1)
    key += fmt::format("|pp{}|{}|v{}|layers{}", r.pipeline_parallel, models::to_string(r.pipeline_schedule),
                       r.virtual_stages, fmt::join(r.stage_layers, ",")) +
           (r.rank_order == models::RankOrder::tp_dp_pp ? "" : fmt::format("|{}", models::to_string(r.rank_order)));
  if (r.zero_stage > 0) key += fmt::format("|zero{}|sg{}", r.zero_stage, r.shard_group);
  if (r.overlap_grad_reduce) key += "|ogr";
  if (r.overlap_param_gather) key += "|opg";
  if (r.sequence_parallel) key += "|sp";
  if (r.selective_recompute) key += "|selective";
  return key;
}

}  // namespace

std::string recipe_key(const std::string& model, const models::Recipe& r) {
  return fmt::format("{}|{}|mb{}|s{}|ga{}|{}|dp{}|tp{}|rc{}|b{}|mp{}|clip{}|drop{}|fa{}|mt{}|sd{}|bdr{}", model,
                     models::to_string(r.precision), r.micro_batch, r.seq_len, r.grad_accum,
                     models::to_string(r.optimizer), r.data_parallel, r.tensor_parallel, r.recompute_activations,
                     r.bucket_bytes, r.max_predictions, r.gradient_clipping, r.include_dropout, r.fused_attention,
                     r.multi_tensor_optimizer, r.fused_softmax_dropout, r.fused_bias_dropout_residual) +
         parallelism_key(r);
}

bool MicroBatchDerivation::ops_derivable() const {
  return !chunks.empty() && std::all_of(chunks.begin(), chunks.end(), [](const Chunk& c) { return c.ops.has_value(); });
}

PredictionCache::PredictionCache(const CacheLimits& limits)
    : graphs_(limits.graph_bytes), memory_(limits.result_bytes), derivations_(limits.derivation_bytes),
      bound_graphs_(limits.bound_bytes), single_(limits.result_bytes),
      steps_(limits.result_bytes), derive_op_costs_(limits.derive_op_costs) {}

std::shared_ptr<const models::ModelSpec> PredictionCache::model(const std::string& name_or_path) {
  {
    std::lock_guard lock(mutex_);
    if (auto it = models_.find(name_or_path); it != models_.end()) return it->second;
  }
  auto spec = std::make_shared<const models::ModelSpec>(models::load_model(name_or_path));
  std::lock_guard lock(mutex_);
  return models_.emplace(name_or_path, std::move(spec)).first->second;  // a few models per sweep: not bounded
}

std::shared_ptr<const PlannedGraph> PredictionCache::graph(const models::ModelSpec& model, const models::Recipe& recipe) {
  const GraphEntry entry = graphs_.get(mutex_, graph_key(model, recipe), counts_.graph_builds, counts_.graph_hits,
      [&] {
        auto g = std::make_shared<PlannedGraph>();
        g->graph = models::build_task_graph(model, recipe);
        g->plan = models::plan_memory(g->graph);
        return GraphEntry{std::shared_ptr<const PlannedGraph>(std::move(g)), nullptr};
      },
      [](const GraphEntry& e) { return approximate_bytes(e.graph->graph) + approximate_bytes(e.graph->plan); });
  return entry.graph;
}

std::shared_ptr<const PlannedPipeline> PredictionCache::pipeline(const models::ModelSpec& model,
                                                                 const models::Recipe& recipe) {
  const GraphEntry entry = graphs_.get(mutex_, "pipeline:" + graph_key(model, recipe), counts_.graph_builds, counts_.graph_hits,
      [&] {
        auto p = std::make_shared<PlannedPipeline>();
        p->chunks = models::build_pipeline_graphs(model, recipe);
        for (const auto& g : p->chunks) p->plans.push_back(models::plan_memory(g));
        p->stages = sim::plan_pipeline_memory(p->plans, recipe);
        return GraphEntry{nullptr, std::shared_ptr<const PlannedPipeline>(std::move(p))};
      },
      [](const GraphEntry& e) {
        size_t bytes = sizeof(PlannedPipeline) + approximate_bytes(e.pipeline->stages);
        for (const auto& g : e.pipeline->chunks) bytes += approximate_bytes(g);
        for (const auto& plan : e.pipeline->plans) bytes += approximate_bytes(plan);
        return bytes;
      });
  return entry.pipeline;
}

std::shared_ptr<const MicroBatchDerivation> PredictionCache::derivation(const models::ModelSpec& model,
                                                                       const models::Recipe& recipe) {
  models::Recipe reference = recipe;
  reference.grad_accum = recipe.pipeline_parallel;  // any valid count: the graph does not depend on it
  reference.micro_batch = 1;
  return derivations_.get(mutex_, graph_key(model, reference), counts_.memory_derivations, counts_.memory_derivation_hits,
      [&] { return derive(model, reference); },
      [](const std::shared_ptr<const MicroBatchDerivation>& d) { return approximate_bytes(*d); });
}

std::shared_ptr<const MemorySummary> PredictionCache::memory(const models::ModelSpec& model,
                                                             const models::Recipe& recipe) {
  return memory_.get(mutex_, graph_key(model, recipe), counts_.memory_summaries, counts_.memory_hits,
      [&] {
        const auto derived = derivation(model, recipe);
        if (!derived->chunks.empty()) return derived_memory(*derived, recipe);
        auto summary = std::make_shared<MemorySummary>();
        if (recipe.pipeline_parallel > 1) {
          summary->stages = pipeline(model, recipe)->stages;
        } else {
          summary->plan = graph(model, recipe)->plan;
          summary->plan.offset = {};
          summary->plan.last_use = {};
        }
        return std::shared_ptr<const MemorySummary>(std::move(summary));
      },
      [](const std::shared_ptr<const MemorySummary>& m) { return sizeof(MemorySummary) + approximate_bytes(m->stages); });
}

std::shared_ptr<const std::vector<BoundGraph>> PredictionCache::bound_graphs(const models::ModelSpec& model,
                                                                             const models::Recipe& recipe,
                                                                             const hwprofiles::GpuProfile& gpu) {
  return bound_graphs_.get(mutex_, graph_key(model, recipe) + "@" + gpu.name + "/" + gpu.stack, counts_.bound_graphs,
      counts_.bound_graph_hits,
      [&] {
        auto out = std::make_shared<std::vector<BoundGraph>>();
        if (const auto derived = derive_op_costs_ ? derivation(model, recipe) : nullptr; derived && derived->ops_derivable()) {
          for (const auto& chunk : derived->chunks)
            out->push_back(bound_graph(chunk.bound_structure, *chunk.ops, recipe.micro_batch, recipe.grad_accum, gpu));
          std::lock_guard lock(mutex_);
          ++counts_.bound_graphs_derived;
        } else if (recipe.pipeline_parallel > 1)
          for (const auto& chunk : pipeline(model, recipe)->chunks) out->push_back(bound_graph(chunk, gpu));
        else
          out->push_back(bound_graph(graph(model, recipe)->graph, gpu));
        return std::shared_ptr<const std::vector<BoundGraph>>(std::move(out));
      },
      [](const std::shared_ptr<const std::vector<BoundGraph>>& b) {
        size_t bytes = sizeof(std::vector<BoundGraph>);
        for (const auto& g : *b) bytes += approximate_bytes(g);
        return bytes;
      });
}

sim::SingleDevicePrediction PredictionCache::single_device(const models::ModelSpec& model,
                                                           const models::Recipe& recipe,
                                                           const hwprofiles::GpuProfile& gpu) {
  long ignored_builds = 0, ignored_hits = 0;
  return single_.get(mutex_, graph_key(model, recipe) + "@" + gpu.name + "/" + gpu.stack, ignored_builds, ignored_hits,
      [&] { return sim::predict_single_device(graph(model, recipe)->graph, gpu); },
      [](const sim::SingleDevicePrediction& p) { return approximate_bytes(p); });
}

sim::StepSimulation PredictionCache::step(const models::ModelSpec& model, const models::Recipe& recipe,
                                          const sim::ClusterConfig& config) {
  return steps_.get(mutex_, graph_key(model, recipe) + "@" + sim::cluster_key(config), counts_.step_simulations,
      counts_.step_hits, [&] { return sim::simulate_step(graph(model, recipe)->graph, config, false, &collectives_); },
      [](const sim::StepSimulation& s) { return approximate_bytes(s); });
}

sim::StepSimulation PredictionCache::pipeline_step(const models::ModelSpec& model, const models::Recipe& recipe,
                                                   const sim::ClusterConfig& config) {
  return steps_.get(mutex_, graph_key(model, recipe) + "@" + sim::cluster_key(config), counts_.step_simulations,
      counts_.step_hits,
      [&] { return sim::simulate_pipeline_step(pipeline(model, recipe)->chunks, config, false, &collectives_); },
      [](const sim::StepSimulation& s) { return approximate_bytes(s); });
}

PredictionCache::Counts PredictionCache::counts() const {
  std::lock_guard lock(mutex_);
  Counts out = counts_;
  out.graph_evictions = graphs_.evictions();
  out.graph_entries = graphs_.size();
  out.graph_bytes = graphs_.bytes();
  return out;
}

}  // namespace ptsim::reports
