// reports/prediction.cpp — scenario → phases → step simulation → time to train and cost.
#include "reports/prediction.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cmath>

#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "models/builder.hpp"
#include "reports/text_table.hpp"
#include "reports/trace.hpp"
#include "sim/compute_model.hpp"
#include "sim/memory_check.hpp"

namespace ptsim::reports {
namespace {

const hwprofiles::PriceItem* find_price(const hwprofiles::ProfileSet& profiles, const std::string& name,
                                        const std::string& field) {
  if (name.empty()) return nullptr;
  auto it = profiles.prices.find(name);
  if (it == profiles.prices.end()) {
    std::vector<std::string> names;
    for (const auto& [n, _] : profiles.prices) names.push_back(n);
    throw core::InputError(fmt::format("scenario field 'prices.{}': unknown price '{}' (expected one of: {})", field,
                                       name, fmt::join(names, ", ")));
  }
  return &it->second;
}

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

// A rental/spot/purchase price must be for this scenario's GPU (gpu_hour) or node (instance_hour, purchase):
// charging a T4 price to a DGX-1 cluster would be a silently wrong cost.
void check_price_target(const hwprofiles::PriceItem* price, const std::string& field, const Scenario& s,
                        const sim::ClusterConfig& config) {
  if (!price) return;
  const bool purchase_field = field == "purchase";
  const bool unit_fits = purchase_field ? price->unit == "purchase"
                                        : price->unit == "gpu_hour" || price->unit == "instance_hour";
  if (!unit_fits)
    throw core::InputError(fmt::format("{}: field 'prices.{}': price '{}' is per '{}' (expected a {} price)", s.file,
                                       field, price->name, price->unit,
                                       purchase_field ? "'purchase'" : "'gpu_hour' or 'instance_hour'"));
  const bool per_gpu = price->unit == "gpu_hour";
  const std::string& target = per_gpu ? config.gpu.name : config.cluster.node.name;
  if (price->applies_to != target)
    throw core::InputError(fmt::format("{}: field 'prices.{}': price '{}' applies to {} '{}', but the cluster's {} is "
                                       "'{}' (expected a price for '{}')",
                                       s.file, field, price->name, per_gpu ? "GPU" : "node", price->applies_to,
                                       per_gpu ? "GPU" : "node", target, target));
}

std::string hours_text(double seconds) {
  if (seconds >= 2 * 86400) return fmt::format("{:.2f} days", seconds / 86400);
  if (seconds >= 2 * 3600) return fmt::format("{:.2f} h", seconds / 3600);
  if (seconds >= 120) return fmt::format("{:.1f} min", seconds / 60);
  return fmt::format("{:.2f} s", seconds);
}

}  // namespace

Prediction predict_scenario(const Scenario& s, const hwprofiles::ProfileSet& profiles, const PredictOptions& options) {
  const auto wall_start = std::chrono::steady_clock::now();
  Prediction out;
  out.scenario = s.name;
  out.description = s.description;
  sim::ClusterConfig config;
  config.cluster.node = hwprofiles::find_node(profiles, s.node);
  config.cluster.network = hwprofiles::find_network(profiles, s.network.empty() ? config.cluster.node.default_network : s.network);
  config.cluster.nodes = s.nodes;
  if (s.gpus_per_node > 0) {
    if (s.gpus_per_node > config.cluster.node.gpus_per_node)
      throw core::InputError(fmt::format("{}: field 'cluster.gpus_per_node' is {}, but a {} node has {} GPUs", s.file,
                                         s.gpus_per_node, config.cluster.node.name, config.cluster.node.gpus_per_node));
    config.cluster.node.gpus_per_node = s.gpus_per_node;
    config.cluster.node.nics_per_node = std::min(config.cluster.node.nics_per_node, s.gpus_per_node);
  }
  config.cluster.fabric = s.fabric;
  config.gpu = hwprofiles::find_gpu(profiles, config.cluster.node.gpu);
  config.data_parallel_algorithm = s.algorithm;
  config.channels = s.channels;
  config.mode = s.exact ? sim::SimulationMode::exact : sim::SimulationMode::replicated;
  out.gpus = config.gpu_count();
  out.gpu = config.gpu.name;
  out.node = config.cluster.node.name;
  out.network = config.cluster.network.name;
  const models::ModelSpec model = models::load_model(s.model);
  if (out.gpus % s.recipe.tensor_parallel != 0)
    throw core::InputError(fmt::format("{}: tensor-parallel {} does not divide the cluster's {} GPUs", s.file,
                                       s.recipe.tensor_parallel, out.gpus));
  const int64_t dp = out.gpus / s.recipe.tensor_parallel;

  std::optional<double> baseline_flops;
  if (s.scaling_baseline) {
    models::Recipe r = s.recipe;
    r.tensor_parallel = 1;
    r.data_parallel = 1;
    r.micro_batch = s.scaling_baseline->micro_batch;
    r.seq_len = s.scaling_baseline->seq_len;
    r.grad_accum = 1;
    models::TaskGraph g = models::build_task_graph(models::load_model(s.scaling_baseline->model), r);
    sim::SingleDevicePrediction single = sim::predict_single_device(g, config.gpu);
    baseline_flops = hardware_flops_per_step(g) / single.step_seconds;
  }

  double weighted_efficiency = 0, weighted_tflops = 0;
  bool all_efficiencies = true;
  for (size_t i = 0; i < s.phases.size(); ++i) {
    const PhaseSpec& ph = s.phases[i];
    PhasePrediction p;
    p.name = ph.name;
    p.seq_len = ph.seq_len;
    p.micro_batch = ph.micro_batch;
    p.grad_accum = phase_grad_accum(s, i, dp);
    p.global_batch = phase_global_batch(s, i, p.grad_accum, dp);
    p.steps = phase_steps(s, i, p.global_batch);
    models::Recipe r = s.recipe;
    r.seq_len = ph.seq_len;
    r.micro_batch = ph.micro_batch;
    r.grad_accum = p.grad_accum;
    r.data_parallel = dp;
    r.max_predictions = ph.max_predictions;
    models::TaskGraph graph = models::build_task_graph(model, r);
    models::MemoryPlan plan = models::plan_memory(graph);
    sim::require_fits(model, r, plan, config.gpu);
    p.memory_per_gpu_bytes = sim::check_memory(plan, config.gpu).needed_bytes;
    sim::StepSimulation step = sim::simulate_step(graph, config, options.record_trace && i == 0);
    p.iteration_seconds = step.iteration_seconds;
    p.compute_seconds = step.compute_seconds + step.blocking_comm_seconds;
    p.exposed_comm_seconds = step.exposed_comm_seconds;
    p.data_parallel_algorithm = step.data_parallel_algorithm;
    p.throughput_seq_per_second = static_cast<double>(p.global_batch) / p.iteration_seconds;
    p.seconds = static_cast<double>(p.steps) * p.iteration_seconds;
    const double hw_flops = hardware_flops_per_step(graph);
    p.tflops_per_gpu = hw_flops / p.iteration_seconds / 1e12;
    if (baseline_flops) {
      p.scaling_efficiency = p.tflops_per_gpu * 1e12 / *baseline_flops;
    } else if (s.recipe.tensor_parallel == 1) {
      models::Recipe one = r;
      one.data_parallel = 1;
      sim::SingleDevicePrediction single = sim::predict_single_device(models::build_task_graph(model, one), config.gpu);
      p.scaling_efficiency = p.throughput_seq_per_second / (out.gpus * single.sequences_per_second);
    }
    if (i == 0 && options.record_trace) out.trace = chrome_trace(step, graph);
    out.training_seconds += p.seconds;
    out.memory_per_gpu_bytes = std::max(out.memory_per_gpu_bytes, p.memory_per_gpu_bytes);
    weighted_tflops += p.tflops_per_gpu * p.seconds;
    if (p.scaling_efficiency) weighted_efficiency += *p.scaling_efficiency * p.seconds;
    else all_efficiencies = false;
    out.phases.push_back(p);

    const Overheads& o = s.overheads;
    if (o.checkpoint_every_steps > 0)
      out.overhead_seconds += static_cast<double>(p.steps / o.checkpoint_every_steps) * o.checkpoint_seconds;
    if (o.evaluation_every_steps > 0)
      out.overhead_seconds += static_cast<double>(p.steps / o.evaluation_every_steps) * o.evaluation_seconds;
  }
  out.overhead_seconds += s.overheads.startup_seconds;
  out.time_to_train_seconds = out.training_seconds + out.overhead_seconds;
  out.tflops_per_gpu = out.training_seconds > 0 ? weighted_tflops / out.training_seconds : 0;
  out.cluster_pflops = out.tflops_per_gpu * out.gpus / 1e3;
  if (all_efficiencies && out.training_seconds > 0) out.scaling_efficiency = weighted_efficiency / out.training_seconds;

  sim::CostInputs cost;
  cost.nodes = s.nodes;
  cost.gpus_per_node = config.cluster.node.gpus_per_node;
  cost.hours = out.time_to_train_seconds / 3600;
  const auto* rental = find_price(profiles, s.prices.rental, "rental");
  const auto* spot = find_price(profiles, s.prices.spot, "spot");
  const auto* purchase = find_price(profiles, s.prices.purchase, "purchase");
  check_price_target(rental, "rental", s, config);
  check_price_target(spot, "spot", s, config);
  check_price_target(purchase, "purchase", s, config);
  if (rental) cost.rental = *rental;
  if (spot) cost.spot = *spot;
  if (purchase) cost.node_purchase_usd = purchase->usd;
  else cost.node_purchase_usd = config.cluster.node.purchase_usd;
  cost.network_purchase_usd_per_node = s.prices.network_purchase_usd_per_node;
  cost.amortisation_years = s.prices.amortisation_years;
  cost.node_power_watts = config.cluster.node.power_watts;
  if (const auto* p = find_price(profiles, s.prices.electricity, "electricity")) cost.usd_per_kwh = p->usd;
  if (const auto* p = find_price(profiles, s.prices.pue, "pue")) cost.pue = p->ratio;
  cost.spot_preemption_overhead = s.prices.spot_preemption_overhead;
  out.cost = sim::estimate_cost(cost);
  out.simulator_wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return out;
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
  return std::nullopt;
}

nlohmann::json prediction_to_json(const Prediction& p) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  nlohmann::json j;
  j["scenario"] = p.scenario;
  j["gpus"] = p.gpus;
  j["gpu"] = p.gpu;
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
  nlohmann::json phases = nlohmann::json::array();
  for (const auto& ph : p.phases)
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
  out += fmt::format("(simulated in {:.3f} s)\n", p.simulator_wall_seconds);
  return out;
}

}  // namespace ptsim::reports
