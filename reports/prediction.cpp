// reports/prediction.cpp — scenario → phases → step simulation → time to train and cost.
#include "reports/prediction.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "models/builder.hpp"
#include "reports/node_retarget.hpp"
#include "reports/prediction_cache.hpp"
#include "reports/text_table.hpp"
#include "reports/trace.hpp"
#include "sim/compute_model.hpp"
#include "sim/memory_check.hpp"
#include "sim/pipeline_step.hpp"

namespace ptsim::reports {
namespace {

// Hardware FLOPs (including recomputation) of one optimizer step's micro-steps.
double hardware_flops_per_step(const models::TaskGraph& g) {
  return g.micro_step_flops() * static_cast<double>(g.micro_steps);
}

std::string phase_field(const Scenario& s, size_t i, const char* field) {
  return fmt::format("{}: field 'phases[{}].{}'", s.file, i, field);
}

// Micro-steps per optimizer step: given, or what makes 'global_batch' exactly (never a rounded guess).
int64_t phase_grad_accum(const Scenario& s, size_t i, int64_t dp) {
  const PhaseSpec& ph = s.phases[i];
  if (ph.grad_accum > 0) return ph.grad_accum;
  if (ph.global_batch == 0) return 1;
  const int64_t per_micro_step = core::checked_mul(ph.micro_batch, dp, phase_field(s, i, "micro_batch") + " × data-parallel ranks");
  if (ph.global_batch % per_micro_step != 0) {
    const int64_t below = ph.global_batch / per_micro_step * per_micro_step;  // the nearest multiples
    const int64_t above = below + per_micro_step;
    throw core::InputError(fmt::format(
        "{} is {}, but micro_batch {} × {} data-parallel ranks = {} sequences per micro-step does not divide it "
        "(expected a multiple of {}, e.g. {}; or give 'grad_accum')",
        phase_field(s, i, "global_batch"), ph.global_batch, ph.micro_batch, dp, per_micro_step, per_micro_step,
        below > 0 ? fmt::format("{} or {}", below, above) : std::to_string(above)));
  }
  return core::check_range(ph.global_batch / per_micro_step, core::ranges::grad_accum,
                           phase_field(s, i, "global_batch") + " ÷ (micro_batch × data-parallel ranks), the grad_accum it implies,");
}

// micro_batch × grad_accum × dp, checked; a given 'global_batch' must be exactly that.
int64_t phase_global_batch(const Scenario& s, size_t i, int64_t grad_accum, int64_t dp) {
  const PhaseSpec& ph = s.phases[i];
  const std::string what = phase_field(s, i, "micro_batch") + " × grad_accum × data-parallel ranks";
  const int64_t global = core::checked_mul(core::checked_mul(ph.micro_batch, grad_accum, what), dp, what);
  core::check_range(global, core::ranges::global_batch,
                    fmt::format("{} (the global batch: {} × {} × {})", what, ph.micro_batch, grad_accum, dp));
  if (ph.global_batch > 0 && ph.global_batch != global)
    throw core::InputError(fmt::format("{} is {}, but micro_batch {} × grad_accum {} × {} data-parallel ranks = {} "
                                       "(give one of 'global_batch' and 'grad_accum', or make them agree)",
                                       phase_field(s, i, "global_batch"), ph.global_batch, ph.micro_batch, grad_accum,
                                       dp, global));
  return global;
}

// Optimizer steps: given, or ⌈epochs × dataset_sequences ÷ global batch⌉ within the documented range.
int64_t phase_steps(const Scenario& s, size_t i, int64_t global_batch) {
  const PhaseSpec& ph = s.phases[i];
  if (ph.steps > 0) return ph.steps;
  const double steps = std::ceil(ph.epochs * ph.dataset_sequences / static_cast<double>(global_batch));
  if (!(steps >= 1) || steps > static_cast<double>(core::ranges::steps.max))
    throw core::InputError(fmt::format("{}: epochs {} × dataset_sequences {} ÷ global batch {} = {:.4g} steps, "
                                       "expected {}",
                                       phase_field(s, i, "epochs"), ph.epochs, ph.dataset_sequences, global_batch,
                                       steps, core::describe(core::ranges::steps)));
  return static_cast<int64_t>(steps);
}

std::string hours_text(double seconds) {
  if (seconds >= 2 * 86400) return fmt::format("{:.2f} days", seconds / 86400);
  if (seconds >= 2 * 3600) return fmt::format("{:.2f} h", seconds / 3600);
  if (seconds >= 120) return fmt::format("{:.1f} min", seconds / 60);
  return fmt::format("{:.2f} s", seconds);
}

// The figures a resolution chose, in a fixed order, with their names for people and JSON.
std::vector<std::pair<std::string, const ChosenPrice*>> chosen_prices(const PriceResolution& r) {
  std::vector<std::pair<std::string, const ChosenPrice*>> out;
  auto add = [&](const char* figure, const std::optional<ChosenPrice>& c) {
    if (c) out.emplace_back(figure, &*c);
  };
  add("rental", r.rental);
  add("spot", r.spot);
  add("purchase", r.purchase);
  add("electricity", r.electricity);
  add("pue", r.pue);
  return out;
}

// Dates, sets and kinds are data, so the JSON stays deterministic; the age of a price depends on today
// and is only in the text report.
nlohmann::json prices_to_json(const PriceResolution& r) {
  nlohmann::json used = nlohmann::json::array();
  for (const auto& [figure, c] : chosen_prices(r))
    used.push_back({{"figure", figure},
                    {"item", c->item.name},
                    {"kind", c->item.kind},
                    {"date", c->item.date},
                    {"price_set", c->item.price_set},
                    {"chosen_by", c->how}});
  return {{"used", used}, {"missing", r.missing}, {"notes", r.notes}};
}

// One line per price used; prices older than kStalePriceMonths today are flagged (PUE is a ratio, not a
// price, so it does not go stale).
std::string prices_to_text(const PriceResolution& r) {
  const auto today = std::chrono::year_month_day(std::chrono::floor<std::chrono::days>(std::chrono::system_clock::now()));
  const int year = static_cast<int>(today.year());
  const int month = static_cast<int>(static_cast<unsigned>(today.month()));
  std::string out;
  std::vector<std::string> stale;
  bool first = true;
  for (const auto& [figure, c] : chosen_prices(r)) {
    out += fmt::format("  {:<16}{:<12}{} ({}, {}, set {})\n", first ? "prices" : "", figure, c->item.name, c->item.kind,
                       c->item.date, c->item.price_set);
    first = false;
    const int age = hwprofiles::price_age_months(c->item.date, year, month);
    if (age > kStalePriceMonths && figure != "pue") stale.push_back(fmt::format("{} ({} months)", figure, age));
  }
  if (!stale.empty())
    out += fmt::format("  stale prices    {} older than {} months: quote current ones (docs/cost-model.md)\n",
                       fmt::join(stale, ", "), kStalePriceMonths);
  for (const auto& note : r.notes) out += "  note            " + note + "\n";
  return out;
}

// A pipeline phase's schedule, bubble and stages (only when pipeline_parallel > 1: other predictions keep
// their fields; docs/json-formats.md).
nlohmann::json pipeline_to_json(const PhasePrediction& ph) {
  nlohmann::json stages = nlohmann::json::array();
  for (const auto& st : ph.stages) {
    nlohmann::json layers = nlohmann::json::array();
    for (const auto& [first, end] : st.layers) layers.push_back({first, end});
    stages.push_back({{"stage", st.stage},
                      {"layers", layers},
                      {"embeddings", st.embeddings},
                      {"heads", st.heads},
                      {"memory_bytes", st.memory_bytes},
                      {"in_flight_micro_batches", st.in_flight_micro_batches},
                      {"busy_seconds", st.busy_seconds},
                      {"idle_seconds", st.idle_seconds},
                      {"data_parallel_comm_seconds", st.data_parallel_comm_seconds}});
  }
  return {{"stages", ph.pipeline_stages},
          {"schedule", ph.pipeline_schedule},
          {"virtual_stages", ph.virtual_stages},
          {"micro_batches", ph.grad_accum},
          {"bubble_fraction", ph.pipeline_bubble_fraction},
          {"send_seconds", ph.pipeline_send_seconds},
          {"per_stage", stages}};
}

// The text report's pipeline lines for a phase: the bubble, then per stage its layers, memory and idle time.
std::string pipeline_to_text(const PhasePrediction& ph) {
  std::string out = fmt::format("\n  {}: {}-stage {} pipeline{}, {} micro-batches per step: bubble {:.1f}% of the "
                                "flush (sends {:.3f} s, summed)\n",
                                ph.name, ph.pipeline_stages, ph.pipeline_schedule,
                                ph.virtual_stages > 1 ? fmt::format(" ({} virtual stages)", ph.virtual_stages) : "",
                                ph.grad_accum, 100 * ph.pipeline_bubble_fraction, ph.pipeline_send_seconds);
  TextTable table({"stage", "layers", "memory GiB", "in flight", "busy s", "idle s", "dp comm s"});
  for (const auto& st : ph.stages) {
    std::vector<std::string> ranges;
    for (const auto& [first, end] : st.layers) ranges.push_back(fmt::format("{}-{}", first, end - 1));
    std::string layers = fmt::format("{}", fmt::join(ranges, ","));
    if (st.embeddings) layers = "emb+" + layers;
    if (st.heads) layers += "+head";
    table.add_row({std::to_string(st.stage), layers, fmt::format("{:.2f}", st.memory_bytes / (1024.0 * 1024 * 1024)),
                   fmt::format("{:.3g}", st.in_flight_micro_batches), fmt::format("{:.3f}", st.busy_seconds),
                   fmt::format("{:.3f}", st.idle_seconds), fmt::format("{:.3f}", st.data_parallel_comm_seconds)});
  }
  return out + table.render();
}

}  // namespace

sim::ClusterConfig resolve_cluster(const Scenario& s, const hwprofiles::ProfileSet& profiles) {
  sim::ClusterConfig config;
  config.cluster.node = hwprofiles::find_node(profiles, s.node);
  config.cluster.network =
      hwprofiles::find_network(profiles, s.network.empty() ? config.cluster.node.default_network : s.network);
  config.cluster.nodes = s.nodes;
  if (s.gpus_per_node > 0) {
    if (s.gpus_per_node > config.cluster.node.gpus_per_node)
      throw core::InputError(fmt::format("{}: field 'cluster.gpus_per_node' is {}, but a {} node has {} GPUs", s.file,
                                         s.gpus_per_node, config.cluster.node.name, config.cluster.node.gpus_per_node));
    config.cluster.node.gpus_per_node = s.gpus_per_node;
    config.cluster.node.nics_per_node = std::min(config.cluster.node.nics_per_node, s.gpus_per_node);
  }
  config.cluster.fabric = s.fabric;
  const std::string stack = s.stack.empty() ? hwprofiles::default_stack_for(profiles, config.cluster.node.gpu) : s.stack;
  config.gpu = hwprofiles::device_profile(profiles, config.cluster.node.gpu, stack);
  config.data_parallel_algorithm = s.algorithm;
  config.channels = s.channels;
  config.mode = s.exact ? sim::SimulationMode::exact : sim::SimulationMode::replicated;
  return config;
}

int64_t data_parallel_ranks(const Scenario& s, const sim::ClusterConfig& config) {
  const int gpus = config.gpu_count();
  if (gpus % s.recipe.tensor_parallel != 0)
    throw core::InfeasibleError(core::Infeasibility::parallelism,
                                fmt::format("{}: tensor-parallel {} does not divide the cluster's {} GPUs", s.file,
                                            s.recipe.tensor_parallel, gpus));
  const int64_t model_parallel = s.recipe.tensor_parallel * s.recipe.pipeline_parallel;
  if (model_parallel > gpus || gpus % model_parallel != 0)
    throw core::InfeasibleError(core::Infeasibility::parallelism,
                                fmt::format("{}: tensor-parallel {} × pipeline-parallel {} = {} does not divide the "
                                            "cluster's {} GPUs", s.file, s.recipe.tensor_parallel,
                                            s.recipe.pipeline_parallel, model_parallel, gpus));
  return gpus / model_parallel;
}

PhaseShape phase_shape(const Scenario& s, size_t phase, int64_t dp) {
  PhaseShape shape;
  shape.grad_accum = phase_grad_accum(s, phase, dp);
  shape.global_batch = phase_global_batch(s, phase, shape.grad_accum, dp);
  shape.steps = phase_steps(s, phase, shape.global_batch);
  return shape;
}

models::Recipe phase_recipe(const Scenario& s, const PhaseSpec& ph, const PhaseShape& shape, int64_t dp) {
  models::Recipe r = s.recipe;
  r.seq_len = ph.seq_len;
  r.micro_batch = ph.micro_batch;
  r.grad_accum = shape.grad_accum;
  r.data_parallel = dp;
  r.max_predictions = ph.max_predictions;
  return r;
}

namespace {

// The recipe on one GPU: no model or data parallelism, nothing to shard.
models::Recipe single_gpu(models::Recipe r) {
  r.tensor_parallel = 1;
  r.data_parallel = 1;
  r.pipeline_parallel = 1;
  r.pipeline_schedule = models::PipelineSchedule::one_f_one_b;
  r.virtual_stages = 1;
  r.stage_layers.clear();
  r.zero_stage = 0;
  r.shard_group = 0;
  r.rank_order = models::RankOrder::tp_dp_pp;
  r.overlap_grad_reduce = r.overlap_param_gather = false;  // pipeline options
  r.sequence_parallel = false;  // it splits the tensor-parallel group's sequence: there is none
  return r;
}

// FLOP rate of the scenario's scaling baseline (Megatron: another model on one GPU), if it names one.
std::optional<double> baseline_flops_per_second(const Scenario& s, const sim::ClusterConfig& config,
                                                PredictionCache& cache) {
  if (!s.scaling_baseline) return std::nullopt;
  models::Recipe r = single_gpu(s.recipe);
  r.micro_batch = s.scaling_baseline->micro_batch;
  r.seq_len = s.scaling_baseline->seq_len;
  r.grad_accum = 1;
  const auto model = cache.model(s.scaling_baseline->model);
  const sim::SingleDevicePrediction single = cache.single_device(*model, r, config.gpu);
  return hardware_flops_per_step(cache.graph(*model, r)->graph) / single.step_seconds;
}

struct PhaseContext {
  const Scenario& scenario;
  const sim::ClusterConfig& config;
  const models::ModelSpec& model;
  int64_t dp = 1;
  std::optional<double> baseline_flops;
  PredictionCache& cache;
  const PredictOptions& options;
};

// The step's figures; `flops_per_gpu_step`: hardware FLOPs one GPU runs in a step.
void fill_step(PhasePrediction& p, const sim::StepSimulation& step, double flops_per_gpu_step) {
  p.iteration_seconds = step.iteration_seconds;
  p.compute_seconds = step.compute_seconds + step.blocking_comm_seconds;
  p.exposed_comm_seconds = step.exposed_comm_seconds;
  p.data_parallel_algorithm = step.data_parallel_algorithm;
  p.throughput_seq_per_second = static_cast<double>(p.global_batch) / p.iteration_seconds;
  p.seconds = static_cast<double>(p.steps) * p.iteration_seconds;
  p.tflops_per_gpu = flops_per_gpu_step / p.iteration_seconds / 1e12;
}

// A pipeline-parallel phase: the worst stage must fit; the step runs the schedule (sim/pipeline_step). No
// single-GPU efficiency: the model is split because it does not fit one (a scaling baseline still applies).
PhasePrediction predict_pipeline_phase(const PhaseContext& c, const models::Recipe& r, PhasePrediction p, bool trace,
                                       nlohmann::json* trace_out) {
  const auto planned = c.cache.pipeline(c.model, r);
  sim::require_pipeline_fits(c.model, r, planned->stages, c.config.gpu, c.options.fit_suggestions);
  p.memory_per_gpu_bytes = sim::check_memory(sim::worst_stage(planned->stages, c.config.gpu).plan, c.config.gpu).needed_bytes;
  const sim::StepSimulation step = trace ? sim::simulate_pipeline_step(planned->chunks, c.config, true)
                                         : c.cache.pipeline_step(c.model, r, c.config);
  double flops = 0;
  for (const auto& g : planned->chunks) flops += hardware_flops_per_step(g);
  fill_step(p, step, flops / static_cast<double>(r.pipeline_parallel));
  if (c.baseline_flops) p.scaling_efficiency = p.tflops_per_gpu * 1e12 / *c.baseline_flops;
  p.pipeline_stages = static_cast<int>(r.pipeline_parallel);
  p.pipeline_schedule = models::to_string(r.pipeline_schedule);
  p.virtual_stages = static_cast<int>(r.virtual_stages);
  p.pipeline_bubble_fraction = step.pipeline_bubble_fraction;
  p.pipeline_send_seconds = step.pipeline_send_seconds;
  for (const auto& memory : planned->stages) {
    StagePrediction st;
    st.stage = memory.stage;
    for (size_t g = static_cast<size_t>(memory.stage); g < planned->chunks.size(); g += static_cast<size_t>(r.pipeline_parallel)) {
      const models::PipelineChunk& chunk = planned->chunks[g].chunk;
      st.layers.emplace_back(chunk.first_layer, chunk.end_layer);
      st.embeddings = st.embeddings || chunk.first();
      st.heads = st.heads || chunk.last();
    }
    st.memory_bytes = sim::check_memory(memory.plan, c.config.gpu).needed_bytes;
    st.in_flight_micro_batches = memory.in_flight_micro_batches;
    const sim::StageTiming& timing = step.stages.at(static_cast<size_t>(memory.stage));
    st.busy_seconds = timing.busy_seconds;
    st.idle_seconds = timing.idle_seconds;
    st.data_parallel_comm_seconds = timing.data_parallel_comm_seconds;
    p.stages.push_back(st);
  }
  if (trace && trace_out) *trace_out = chrome_pipeline_trace(step, planned->chunks);
  return p;
}

// One phase on the cluster: its step simulated, its steps counted, its efficiency against one GPU.
PhasePrediction predict_phase(const PhaseContext& c, size_t phase, bool trace, nlohmann::json* trace_out) {
  const Scenario& s = c.scenario;
  const PhaseSpec& ph = s.phases[phase];
  PhasePrediction p;
  p.name = ph.name;
  p.seq_len = ph.seq_len;
  p.micro_batch = ph.micro_batch;
  const PhaseShape shape = phase_shape(s, phase, c.dp);
  p.grad_accum = shape.grad_accum;
  p.global_batch = shape.global_batch;
  p.steps = shape.steps;
  const models::Recipe r = phase_recipe(s, ph, shape, c.dp);
  if (r.pipeline_parallel > 1) return predict_pipeline_phase(c, r, p, trace, trace_out);
  const auto planned = c.cache.graph(c.model, r);
  sim::require_fits(c.model, r, planned->plan, c.config.gpu, c.options.fit_suggestions);
  p.memory_per_gpu_bytes = sim::check_memory(planned->plan, c.config.gpu).needed_bytes;
  const sim::StepSimulation step =
      trace ? sim::simulate_step(planned->graph, c.config, true) : c.cache.step(c.model, r, c.config);
  fill_step(p, step, hardware_flops_per_step(planned->graph));
  if (c.baseline_flops) {
    p.scaling_efficiency = p.tflops_per_gpu * 1e12 / *c.baseline_flops;
  } else if (s.recipe.tensor_parallel == 1) {
    models::Recipe one = r;
    one.data_parallel = 1;
    one.shard_group = 0;  // one rank: nothing to shard or replicate
    const sim::SingleDevicePrediction single = c.cache.single_device(c.model, one, c.config.gpu);
    p.scaling_efficiency = p.throughput_seq_per_second / (c.config.gpu_count() * single.sequences_per_second);
  }
  if (trace && trace_out) *trace_out = chrome_trace(step, planned->graph);
  return p;
}

double phase_overhead_seconds(const Overheads& o, int64_t steps) {
  double seconds = 0;
  if (o.checkpoint_every_steps > 0) seconds += static_cast<double>(steps / o.checkpoint_every_steps) * o.checkpoint_seconds;
  if (o.evaluation_every_steps > 0) seconds += static_cast<double>(steps / o.evaluation_every_steps) * o.evaluation_seconds;
  return seconds;
}

sim::CostEstimate predict_cost(const Scenario& s, const sim::ClusterConfig& config, const PriceResolution& prices,
                               double hours) {
  sim::CostInputs cost;
  cost.nodes = s.nodes;
  cost.gpus_per_node = config.cluster.node.gpus_per_node;
  cost.hours = hours;
  if (prices.rental) cost.rental = prices.rental->item;
  if (prices.spot) cost.spot = prices.spot->item;
  cost.node_purchase_usd = prices.purchase ? prices.purchase->item.usd : 0;
  cost.network_purchase_usd_per_node = s.prices.network_purchase_usd_per_node;
  cost.amortisation_years = s.prices.amortisation_years;
  cost.node_power_watts = config.cluster.node.power_watts;
  if (prices.electricity) cost.usd_per_kwh = prices.electricity->item.usd;
  if (prices.pue) cost.pue = prices.pue->item.ratio;
  cost.spot_preemption_overhead = s.prices.spot_preemption_overhead;
  return sim::estimate_cost(cost);
}

// Marks the figures whose price retarget_to_node chose for a swapped-in node type.
void mark_swapped_in(PriceResolution& r, const PriceChoice& before, const PriceChoice& after) {
  const auto mark = [](std::optional<ChosenPrice>& c, const std::string& was, const std::string& now) {
    if (c && was != now) c->how = "swapped_in";
  };
  mark(r.rental, before.rental, after.rental);
  mark(r.spot, before.spot, after.spot);
  mark(r.purchase, before.purchase, after.purchase);
}

}  // namespace

Scenario with_stack(const Scenario& scenario, const hwprofiles::ProfileSet& profiles,
                    std::vector<std::string>* what_if_notes) {
  Scenario s = scenario;
  std::vector<std::string> notes = retarget_to_node(s, profiles);
  if (what_if_notes) *what_if_notes = std::move(notes);
  if (s.stack.empty()) s.stack = hwprofiles::default_stack_for(profiles, hwprofiles::find_node(profiles, s.node).gpu);
  sim::apply_stack_fusions(s.recipe, hwprofiles::find_stack(profiles, s.stack));
  return s;
}

Prediction predict_scenario(const Scenario& scenario, const hwprofiles::ProfileSet& profiles,
                            const PredictOptions& options) {
  std::vector<std::string> what_if_notes;
  const Scenario s = with_stack(scenario, profiles, &what_if_notes);
  const auto wall_start = std::chrono::steady_clock::now();
  PredictionCache local_cache;
  PredictionCache& cache = options.cache ? *options.cache : local_cache;
  Prediction out;
  out.scenario = s.name;
  out.description = s.description;
  out.what_if_notes = std::move(what_if_notes);
  // Prices first: a bad price name fails before minutes of simulation, not after.
  out.prices = resolve_prices(s, hwprofiles::find_node(profiles, s.node), profiles);
  require_unambiguous(out.prices, s);
  mark_swapped_in(out.prices, scenario.prices, s.prices);
  const sim::ClusterConfig config = resolve_cluster(s, profiles);
  out.gpus = config.gpu_count();
  out.gpu = config.gpu.name;
  out.stack = s.stack;
  out.node = config.cluster.node.name;
  out.network = config.cluster.network.name;
  const auto model = cache.model(s.model);
  const PhaseContext context{s, config, *model, data_parallel_ranks(s, config),
                             baseline_flops_per_second(s, config, cache), cache, options};

  double weighted_efficiency = 0, weighted_tflops = 0;
  bool all_efficiencies = true;
  for (size_t i = 0; i < s.phases.size(); ++i) {
    const bool trace = options.record_trace && i == 0;
    PhasePrediction p = predict_phase(context, i, trace, trace ? &out.trace : nullptr);
    out.training_seconds += p.seconds;
    out.memory_per_gpu_bytes = std::max(out.memory_per_gpu_bytes, p.memory_per_gpu_bytes);
    weighted_tflops += p.tflops_per_gpu * p.seconds;
    if (p.scaling_efficiency) weighted_efficiency += *p.scaling_efficiency * p.seconds;
    else all_efficiencies = false;
    out.overhead_seconds += phase_overhead_seconds(s.overheads, p.steps);
    out.phases.push_back(p);
  }
  out.overhead_seconds += s.overheads.startup_seconds;
  out.time_to_train_seconds = out.training_seconds + out.overhead_seconds;
  out.tflops_per_gpu = out.training_seconds > 0 ? weighted_tflops / out.training_seconds : 0;
  out.cluster_pflops = out.tflops_per_gpu * out.gpus / 1e3;
  if (all_efficiencies && out.training_seconds > 0) out.scaling_efficiency = weighted_efficiency / out.training_seconds;
  out.cost = predict_cost(s, config, out.prices, out.time_to_train_seconds / 3600);
  out.simulator_wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return out;
}

// Training tokens (sequences × sequence length over every phase's steps) per second of training per GPU:
// the throughput LLM papers report (e.g. LLaMA's tokens/sec/GPU; docs/scenarios.md).
double tokens_per_second_per_gpu(const Prediction& p) {
  double tokens = 0;
  for (const PhasePrediction& ph : p.phases)
    tokens += static_cast<double>(ph.global_batch) * static_cast<double>(ph.seq_len) * static_cast<double>(ph.steps);
  return p.training_seconds > 0 && p.gpus > 0 ? tokens / p.training_seconds / p.gpus : 0;
}

std::optional<double> metric_value(const Prediction& p, const PublishedTarget& target) {
  const std::string& metric = target.metric;
  if (metric == "rental_usd_at_published_time") {
    if (!p.cost.rental_usd_per_hour) return std::nullopt;
    return *p.cost.rental_usd_per_hour * target.published_hours;
  }
  if (metric == "time_to_train_seconds") return p.time_to_train_seconds;
  if (metric == "scaling_efficiency") return p.scaling_efficiency;
  if (metric == "rental_usd") return p.cost.rental_usd;
  if (metric == "purchase_usd") return p.cost.purchase_usd;
  if (metric == "tflops_per_gpu") return p.tflops_per_gpu;
  if (metric == "cluster_pflops") return p.cluster_pflops;
  if (metric == "tokens_per_second_per_gpu") return tokens_per_second_per_gpu(p);
  return std::nullopt;
}

nlohmann::json prediction_to_json(const Prediction& p) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j;
  j["scenario"] = p.scenario;
  j["gpus"] = p.gpus;
  j["gpu"] = p.gpu;
  j["stack"] = p.stack;
  j["node"] = p.node;
  j["network"] = p.network;
  j["time_to_train_seconds"] = p.time_to_train_seconds;
  j["training_seconds"] = p.training_seconds;
  j["overhead_seconds"] = p.overhead_seconds;
  j["scaling_efficiency"] = opt(p.scaling_efficiency);
  j["tflops_per_gpu"] = p.tflops_per_gpu;
  j["cluster_pflops"] = p.cluster_pflops;
  j["memory_per_gpu_bytes"] = p.memory_per_gpu_bytes;
  j["cost"] = {{"rental_usd", opt(p.cost.rental_usd)},       {"spot_usd", opt(p.cost.spot_usd)},
               {"purchase_usd", opt(p.cost.purchase_usd)},   {"ownership_usd", opt(p.cost.ownership_usd)},
               {"energy_usd", opt(p.cost.energy_usd)},       {"break_even_days", opt(p.cost.break_even_days)},
               {"rental_basis", p.cost.rental_basis}};
  j["prices"] = prices_to_json(p.prices);
  if (!p.what_if_notes.empty()) j["what_if_notes"] = p.what_if_notes;  // only when a node type was swapped in
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& ph : p.phases) {
    phases.push_back({{"name", ph.name},
                      {"seq_len", ph.seq_len},
                      {"global_batch", ph.global_batch},
                      {"micro_batch", ph.micro_batch},
                      {"grad_accum", ph.grad_accum},
                      {"steps", ph.steps},
                      {"iteration_seconds", ph.iteration_seconds},
                      {"compute_seconds", ph.compute_seconds},
                      {"exposed_comm_seconds", ph.exposed_comm_seconds},
                      {"throughput_seq_per_second", ph.throughput_seq_per_second},
                      {"seconds", ph.seconds},
                      {"scaling_efficiency", opt(ph.scaling_efficiency)},
                      {"tflops_per_gpu", ph.tflops_per_gpu},
                      {"memory_per_gpu_bytes", ph.memory_per_gpu_bytes},
                      {"data_parallel_algorithm", ph.data_parallel_algorithm}});
    if (ph.pipeline_stages > 1) phases.back()["pipeline"] = pipeline_to_json(ph);
  }
  j["phases"] = phases;
  j["simulator_wall_seconds"] = p.simulator_wall_seconds;
  return j;
}

std::string prediction_to_text(const Prediction& p) {
  std::string out = fmt::format("{}: {} GPUs ({}) in {} nodes over {}\n", p.scenario, p.gpus, p.gpu, p.node, p.network);
  if (!p.description.empty()) out += "  " + p.description + "\n";
  out += fmt::format("\n  time to train   {}  ({:.6g} s; overheads {:.6g} s)\n", hours_text(p.time_to_train_seconds),
                     p.time_to_train_seconds, p.overhead_seconds);
  if (p.scaling_efficiency) out += fmt::format("  scaling eff.    {:.1f}%\n", 100 * *p.scaling_efficiency);
  out += fmt::format("  per GPU         {:.1f} TFLOP/s  (cluster {:.2f} PFLOP/s)\n", p.tflops_per_gpu, p.cluster_pflops);
  out += fmt::format("  memory per GPU  {:.2f} GiB\n", p.memory_per_gpu_bytes / (1024.0 * 1024 * 1024));
  if (p.cost.rental_usd) out += fmt::format("  rental          ${:.0f}  ({})\n", *p.cost.rental_usd, p.cost.rental_basis);
  if (p.cost.spot_usd) out += fmt::format("  spot            ${:.0f}\n", *p.cost.spot_usd);
  if (p.cost.purchase_usd) out += fmt::format("  purchase        ${:.0f}\n", *p.cost.purchase_usd);
  if (p.cost.ownership_usd)
    out += fmt::format("  ownership       ${:.0f}  (amortised share + energy ${:.0f})\n", *p.cost.ownership_usd,
                       p.cost.energy_usd.value_or(0));
  if (p.cost.break_even_days) out += fmt::format("  break-even      owning beats renting after {:.0f} days of use\n",
                                                 *p.cost.break_even_days);
  out += prices_to_text(p.prices);
  for (const auto& note : p.what_if_notes) out += "  what-if         " + note + "\n";
  out += "\n";
  TextTable table({"phase", "seq", "global batch", "micro×accum", "steps", "iter s", "compute s", "exposed comm s",
                   "seq/s", "eff.", "time"});
  for (const auto& ph : p.phases)
    table.add_row({ph.name, std::to_string(ph.seq_len), std::to_string(ph.global_batch),
                   fmt::format("{}×{}", ph.micro_batch, ph.grad_accum), std::to_string(ph.steps),
                   fmt::format("{:.3f}", ph.iteration_seconds), fmt::format("{:.3f}", ph.compute_seconds),
                   fmt::format("{:.3f}", ph.exposed_comm_seconds), fmt::format("{:.0f}", ph.throughput_seq_per_second),
                   ph.scaling_efficiency ? fmt::format("{:.1f}%", 100 * *ph.scaling_efficiency) : "-",
                   hours_text(ph.seconds)});
  out += table.render();
  for (const auto& ph : p.phases)
    if (ph.pipeline_stages > 1) out += pipeline_to_text(ph);
  out += fmt::format("(simulated in {:.3f} s)\n", p.simulator_wall_seconds);
  return out;
}

}  // namespace ptsim::reports
