// reports/scenario_report.cpp — the figures of `ptsim report` (collect_scenario_report) and the sweep file
// it reads (load_sweep_for_report). The page itself: reports/scenario_report_html.cpp.
#include "reports/scenario_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "models/builder.hpp"
#include "reports/prediction.hpp"
#include "reports/prediction_cache.hpp"
#include "reports/scenario.hpp"
#include "sim/compute_model.hpp"
#include "sim/memory_check.hpp"

namespace ptsim::reports {

namespace {

using nlohmann::json;

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// Op kinds grouped as people name a step's parts; backward ops count with their forward kind.
std::string compute_part(models::OpKind kind) {
  using K = models::OpKind;
  switch (kind) {
    case K::gemm: return "GEMM (dense layers)";
    case K::batched_gemm: return "attention batched GEMM";
    case K::softmax:
    case K::softmax_backward: return "softmax";
    case K::layernorm:
    case K::layernorm_backward:
    case K::rmsnorm:
    case K::rmsnorm_backward: return "layer norm";
    case K::dropout:
    case K::dropout_backward: return "dropout";
    case K::gelu:
    case K::gelu_backward:
    case K::tanh:
    case K::tanh_backward: return "GELU / tanh";
    case K::swiglu:
    case K::swiglu_backward:
    case K::rotary_embedding:
    case K::rotary_embedding_backward: return "SwiGLU / rotary embedding";
    case K::embedding:
    case K::embedding_backward: return "embedding";
    case K::cross_entropy:
    case K::cross_entropy_backward: return "loss (cross-entropy)";
    case K::grad_norm:
    case K::optimizer_update: return "optimizer";
    default: return "other elementwise (add, bias grad, reshapes, gathers)";
  }
}

// The order parts are stacked and coloured in (absent ones are skipped).
const std::vector<std::string>& part_order() {
  static const std::vector<std::string> order = {
      "GEMM (dense layers)", "attention batched GEMM", "softmax", "layer norm", "dropout", "GELU / tanh",
      "SwiGLU / rotary embedding", "embedding", "loss (cross-entropy)", "other elementwise (add, bias grad, reshapes, gathers)", "optimizer",
      "tensor-parallel all-reduce (blocking)", "exposed gradient communication"};
  return order;
}

// One optimizer step split into parts that add up to its iteration time: each compute op's duration (the
// simulator's op_cost) × its executions, the blocking tensor-parallel all-reduces, and what remains of the
// iteration — the data-parallel communication backward and the optimizer could not hide.
json step_breakdown(const models::TaskGraph& g, const sim::StepSimulation& step, const hwprofiles::GpuProfile& gpu) {
  std::map<std::string, double> seconds;
  for (const auto& op : g.ops) {
    if (models::is_communication(op.kind)) continue;
    const double runs = models::is_micro_step_phase(op.phase) ? static_cast<double>(g.micro_steps) : 1.0;
    seconds[compute_part(op.kind)] += sim::op_cost(op, gpu).seconds * runs;
  }
  seconds["tensor-parallel all-reduce (blocking)"] = step.blocking_comm_seconds;
  seconds["exposed gradient communication"] =
      std::max(0.0, step.exposed_comm_seconds - step.blocking_comm_seconds);
  json parts = json::array();
  for (const auto& name : part_order()) {
    auto it = seconds.find(name);
    if (it == seconds.end() || it->second <= 0) continue;
    parts.push_back({{"part", name}, {"seconds", it->second}});
  }
  return parts;
}

json memory_categories(const models::MemoryPlan& plan, const sim::MemoryFit& fit) {
  json out = json::array();
  auto add = [&](const char* name, double bytes) {
    if (bytes > 0) out.push_back({{"category", name}, {"bytes", bytes}});
  };
  add("weights", plan.weights_bytes);
  add("master weights", plan.master_weights_bytes);
  add("gradients", plan.gradients_bytes);
  add("optimizer state", plan.optimizer_state_bytes);
  add("inputs", plan.inputs_bytes);
  add("activations (peak)", plan.activations_peak_bytes);
  add("workspace", plan.workspace_bytes);
  add("reserved (CUDA context, fragmentation)", fit.needed_bytes - plan.total_bytes());
  return out;
}

// The trace's compute and communication spans, merged into segments a chart can draw: consecutive spans
// of one stream, kind of work and micro-step, closer than `gap` seconds, become one segment.
json timeline_segments(const json& trace, double iteration_seconds) {
  struct Segment {
    int tid;
    std::string category;
    int micro;
    double start, end;
    int ops;
  };
  std::vector<Segment> segments;
  std::map<int, size_t> last_of_stream;  // stream → its latest segment
  const double gap = iteration_seconds * 2e-3;
  static const std::vector<std::string> comm_kinds = {"all_reduce", "reduce_scatter", "all_gather", "send", "recv"};
  for (const auto& e : trace.value("traceEvents", json::array())) {
    if (e.value("ph", "") != "X") continue;
    const int tid = e.value("tid", 0);
    if (e.value("pid", 0) != 0 || tid > 1) continue;  // a pipeline's first stage, without its sends
    const std::string kind = e.value("cat", "");
    const json& args = e.contains("args") ? e.at("args") : json::object();
    const std::string phase = args.value("phase", "");
    const bool comm = std::find(comm_kinds.begin(), comm_kinds.end(), kind) != comm_kinds.end();
    std::string category = tid == 1                       ? "gradient all-reduce"
                           : comm                         ? "tensor-parallel all-reduce"
                           : phase == "optimizer"         ? "optimizer"
                                                          : phase;
    const int micro = args.value("micro_step", 0);
    const double start = e.value("ts", 0.0) / 1e6, end = start + e.value("dur", 0.0) / 1e6;
    auto last = last_of_stream.find(tid);
    if (last != last_of_stream.end()) {
      Segment& prev = segments[last->second];
      if (prev.category == category && prev.micro == micro && start - prev.end <= gap) {
        prev.end = std::max(prev.end, end);
        ++prev.ops;
        continue;
      }
    }
    last_of_stream[tid] = segments.size();
    segments.push_back({tid, category, micro, start, end, 1});
  }
  json out = json::array();
  for (const auto& s : segments)
    out.push_back({{"stream", s.tid == 1 ? "communication" : "compute"}, {"category", s.category},
                   {"micro_step", s.micro}, {"start_seconds", s.start}, {"end_seconds", s.end}, {"ops", s.ops}});
  return out;
}

// A pipeline phase's step split and memory: its worst stage's memory; the step of its first stage (its
// chunks' compute ops), the bubble the schedule leaves it, and what else the iteration spends.
void pipeline_phase_report(const std::string& phase, const std::shared_ptr<const PlannedPipeline>& planned,
                           const sim::StepSimulation& step, const hwprofiles::GpuProfile& gpu, json& steps,
                           json& memory) {
  std::map<std::string, double> seconds;
  for (size_t g = 0; g < planned->chunks.size(); g += static_cast<size_t>(step.pipeline_stages))
    for (const auto& op : planned->chunks[g].ops) {
      if (models::is_communication(op.kind)) continue;
      const double runs = models::is_micro_step_phase(op.phase) ? static_cast<double>(planned->chunks[g].micro_steps) : 1.0;
      seconds[compute_part(op.kind)] += sim::op_cost(op, gpu).seconds * runs;
    }
  const sim::StageTiming& first = step.stages.front();
  double accounted = first.blocking_comm_seconds + first.idle_seconds;
  for (const auto& [part, s] : seconds) accounted += s;
  json parts = json::array();
  for (const auto& name : part_order())
    if (auto it = seconds.find(name); it != seconds.end() && it->second > 0)
      parts.push_back({{"part", name}, {"seconds", it->second}});
  if (first.blocking_comm_seconds > 0)
    parts.push_back({{"part", "tensor-parallel all-reduce (blocking)"}, {"seconds", first.blocking_comm_seconds}});
  parts.push_back({{"part", "pipeline bubble"}, {"seconds", first.idle_seconds}});
  const double rest = step.iteration_seconds - accounted;
  if (rest > 0) parts.push_back({{"part", "exposed gradient communication"}, {"seconds", rest}});
  steps.push_back({{"phase", phase}, {"iteration_seconds", step.iteration_seconds},
                   {"micro_steps", planned->chunks.front().micro_steps}, {"parts", parts}});
  const sim::StageMemory& worst = sim::worst_stage(planned->stages, gpu);
  const sim::MemoryFit fit = sim::check_memory(worst.plan, gpu);
  memory.push_back({{"phase", phase + fmt::format(" (stage {})", worst.stage)},
                    {"device_bytes", fit.available_bytes},
                    {"needed_bytes", fit.needed_bytes},
                    {"categories", memory_categories(worst.plan, fit)}});
}

json scenario_json(const Scenario& s, const sim::ClusterConfig& config, const std::vector<std::string>& overrides,
                   const std::vector<std::string>& assumptions) {
  json phases = json::array();
  for (const auto& ph : s.phases)
    phases.push_back({{"name", ph.name}, {"seq_len", ph.seq_len}, {"micro_batch", ph.micro_batch},
                      {"grad_accum", ph.grad_accum}, {"global_batch", ph.global_batch}, {"steps", ph.steps},
                      {"epochs", ph.epochs}, {"dataset_sequences", ph.dataset_sequences}});
  json published = json::array();
  for (const auto& t : s.published)
    published.push_back({{"metric", t.metric}, {"value", t.value}, {"tolerance", t.tolerance}, {"source", t.source}});
  return {{"name", s.name},
          {"description", s.description},
          {"source", s.source},
          {"file", s.file},
          {"overrides", overrides},
          {"assumptions", assumptions},
          {"model", s.model},
          {"node", config.cluster.node.name},
          {"node_description", config.cluster.node.description},
          {"nodes", s.nodes},
          {"gpus_per_node", config.cluster.node.gpus_per_node},
          {"gpu", config.gpu.name},
          {"gpu_description", config.gpu.description},
          {"gpu_memory_bytes", config.gpu.memory_bytes},
          {"network", config.cluster.network.name},
          {"network_description", config.cluster.network.description},
          {"network_gbps", config.cluster.network.link_bytes_per_second * 8 / 1e9},
          {"nics_per_node", config.cluster.node.nics_per_node},
          {"precision", models::to_string(s.recipe.precision)},
          {"optimizer", models::to_string(s.recipe.optimizer)},
          {"tensor_parallel", s.recipe.tensor_parallel},
          {"recompute", s.recipe.recompute_activations},
          {"bucket_mib", s.recipe.bucket_bytes / (1024.0 * 1024)},
          {"phases", phases},
          {"overheads",
           {{"startup_seconds", s.overheads.startup_seconds},
            {"checkpoint_seconds", s.overheads.checkpoint_seconds},
            {"checkpoint_every_steps", s.overheads.checkpoint_every_steps},
            {"evaluation_seconds", s.overheads.evaluation_seconds},
            {"evaluation_every_steps", s.overheads.evaluation_every_steps}}},
          {"published", published}};
}

// The scenario file's "assumptions" (strings), which the scenario reader leaves to people.
std::vector<std::string> scenario_assumptions(const json& base, const std::vector<std::string>& overrides) {
  json raw = base;
  for (const auto& o : overrides) apply_override(raw, o);
  std::vector<std::string> out;
  if (raw.is_object() && raw.contains("assumptions") && raw.at("assumptions").is_array())
    for (const auto& a : raw.at("assumptions"))
      if (a.is_string()) out.push_back(a.get<std::string>());
  return out;
}

json ladder_rung(int nodes, const Prediction& p) {
  double throughput = 0, sequences = 0;
  for (const auto& ph : p.phases) {
    throughput += ph.throughput_seq_per_second * ph.seconds;
    sequences += static_cast<double>(ph.steps) * static_cast<double>(ph.global_batch);
  }
  return {{"nodes", nodes},
          {"gpus", p.gpus},
          {"time_to_train_seconds", p.time_to_train_seconds},
          {"scaling_efficiency", opt(p.scaling_efficiency)},
          {"tflops_per_gpu", p.tflops_per_gpu},
          {"throughput_seq_per_second", p.training_seconds > 0 ? throughput / p.training_seconds : 0},
          {"sequences", sequences},  // trained on: Σ steps × global batch (grows with the cluster when steps are fixed)
          {"rental_usd", opt(p.cost.rental_usd)},
          {"spot_usd", opt(p.cost.spot_usd)},
          {"ownership_usd", opt(p.cost.ownership_usd)},
          {"error", nullptr}};
}

[[noreturn]] void sweep_fail(const std::string& path, const std::string& what) {
  throw core::InputError(fmt::format("--sweep {}: {} (expected the output of 'ptsim sweep --format json', schema "
                                     "ptsim.sweep.v1)",
                                     path, what));
}

}  // namespace

std::vector<int> default_node_ladder(int nodes) {
  std::vector<int> ladder;
  const long long top = 2LL * std::max(nodes, 1);
  for (long long n = 1; n <= top; n *= 2) ladder.push_back(static_cast<int>(n));
  if (std::find(ladder.begin(), ladder.end(), nodes) == ladder.end()) ladder.push_back(nodes);
  if (std::find(ladder.begin(), ladder.end(), 2 * nodes) == ladder.end()) ladder.push_back(2 * nodes);
  std::sort(ladder.begin(), ladder.end());
  return ladder;
}

json load_sweep_for_report(const std::string& path) {
  json j = core::load_json_file(path);
  if (!j.is_object()) sweep_fail(path, "the file is not a JSON object");
  if (!j.contains("schema") || j.at("schema") != "ptsim.sweep.v1")
    sweep_fail(path, fmt::format("field 'schema' is {}, not \"ptsim.sweep.v1\"",
                                 j.contains("schema") ? j.at("schema").dump() : "missing"));
  if (!j.contains("configurations") || !j.at("configurations").is_array())
    sweep_fail(path, "field 'configurations' is missing or not an array");
  std::map<size_t, size_t> position;  // configuration index → array position
  const json& configs = j.at("configurations");
  for (size_t i = 0; i < configs.size(); ++i) {
    const json& c = configs[i];
    const std::string at = fmt::format("configurations[{}]", i);
    if (!c.is_object() || !c.contains("index") || !c.at("index").is_number_unsigned())
      sweep_fail(path, at + ".index is missing or not a non-negative integer");
    if (!c.contains("feasible") || !c.at("feasible").is_boolean())
      sweep_fail(path, at + ".feasible is missing or not true/false");
    if (!c.contains("settings") || !c.at("settings").is_object())
      sweep_fail(path, at + ".settings is missing or not an object");
    if (c.at("feasible").get<bool>()) {
      if (!c.contains("time_to_train_seconds") || !c.at("time_to_train_seconds").is_number() ||
          !(c.at("time_to_train_seconds").get<double>() > 0))
        sweep_fail(path, at + ".time_to_train_seconds is missing or not a positive number");
      for (const char* key : {"rental_usd", "spot_usd", "ownership_usd"})
        if (c.contains(key) && !c.at(key).is_null() && !c.at(key).is_number())
          sweep_fail(path, fmt::format("{}.{} is not a number or null", at, key));
      if (!c.contains("gpus") || !c.at("gpus").is_number_integer())
        sweep_fail(path, at + ".gpus is missing or not an integer");
    }
    position[c.at("index").get<size_t>()] = i;
  }
  auto check_index = [&](const json& v, const std::string& field) {
    if (v.is_null()) return;
    if (!v.is_number_unsigned() || !position.count(v.get<size_t>()))
      sweep_fail(path, fmt::format("field '{}' is {}, which names no configuration", field, v.dump()));
    if (!configs[position.at(v.get<size_t>())].at("feasible").get<bool>())
      sweep_fail(path, fmt::format("field '{}' names configuration {}, which is not feasible", field, v.dump()));
  };
  if (!j.contains("frontier") || !j.at("frontier").is_object())
    sweep_fail(path, "field 'frontier' is missing or not an object");
  for (const auto& [basis, list] : j.at("frontier").items()) {
    if (basis != "rental" && basis != "spot" && basis != "ownership")
      sweep_fail(path, fmt::format("frontier basis '{}' is not rental, spot or ownership", basis));
    if (!list.is_array()) sweep_fail(path, fmt::format("field 'frontier.{}' is not an array", basis));
    for (size_t k = 0; k < list.size(); ++k) check_index(list[k], fmt::format("frontier.{}[{}]", basis, k));
  }
  for (const char* key : {"recommended", "cheapest_meeting_deadline", "fastest_within_budget"})
    if (j.contains(key)) check_index(j.at(key), key);
  j["source_file"] = path;
  return j;
}

static json scaling_ladder(const ReportScenario& base, const Scenario& s, const Prediction& p,
                           const ScenarioReportOptions& options, const hwprofiles::ProfileSet& profiles,
                           PredictionCache& cache, const sim::ClusterConfig& config);

json collect_scenario_report(const std::string& scenario_name, const ScenarioReportOptions& options,
                             const hwprofiles::ProfileSet& profiles) {
  ReportScenario scenario;
  scenario.json = load_base_scenario(scenario_name, {}, &scenario.source);
  scenario.requested = scenario_name;
  return collect_scenario_report(scenario, options, profiles);
}

json collect_scenario_report(const ReportScenario& base, const ScenarioReportOptions& options,
                             const hwprofiles::ProfileSet& profiles) {
  const std::string& scenario_name = base.requested;
  const Scenario s = with_stack(parse_edited_scenario(base.json, options.overrides, base.source), profiles);
  PredictionCache cache;
  PredictOptions predict_options;
  predict_options.record_trace = options.include_trace;
  predict_options.cache = &cache;
  const Prediction p = predict_scenario(s, profiles, predict_options);

  const sim::ClusterConfig config = resolve_cluster(s, profiles);
  const int64_t dp = data_parallel_ranks(s, config);
  const auto model = cache.model(s.model);
  json steps = json::array(), memory = json::array();
  for (size_t i = 0; i < s.phases.size(); ++i) {
    const PhaseShape shape = phase_shape(s, i, dp);
    const models::Recipe r = phase_recipe(s, s.phases[i], shape, dp);
    if (r.pipeline_parallel > 1) {
      pipeline_phase_report(s.phases[i].name, cache.pipeline(*model, r), cache.pipeline_step(*model, r, config),
                            config.gpu, steps, memory);
      continue;
    }
    const auto planned = cache.graph(*model, r);
    const sim::StepSimulation step = cache.step(*model, r, config);
    steps.push_back({{"phase", s.phases[i].name},
                     {"iteration_seconds", step.iteration_seconds},
                     {"micro_steps", planned->graph.micro_steps},
                     {"parts", step_breakdown(planned->graph, step, config.gpu)}});
    const sim::MemoryFit fit = sim::check_memory(planned->plan, config.gpu);
    memory.push_back({{"phase", s.phases[i].name},
                      {"device_bytes", fit.available_bytes},
                      {"needed_bytes", fit.needed_bytes},
                      {"categories", memory_categories(planned->plan, fit)}});
  }

  json report;
  report["schema"] = "ptsim.report.v1";
  report["scenario"] = scenario_json(s, config, options.overrides, scenario_assumptions(base.json, options.overrides));
  report["scenario"]["requested"] = scenario_name;  // as given: a shipped name or a file path
  report["prediction"] = prediction_to_json(p);
  report["step_breakdown"] = steps;
  report["memory"] = memory;

  const double iteration = p.phases.empty() ? 0 : p.phases.front().iteration_seconds;
  report["timeline"] = {{"phase", p.phases.empty() ? "" : p.phases.front().name},
                        {"iteration_seconds", iteration},
                        {"segments", options.include_trace ? timeline_segments(p.trace, iteration) : json::array()}};
  const std::string trace_text = options.include_trace ? p.trace.dump() : std::string();
  if (!options.include_trace) {
    report["trace"] = nullptr;
    report["trace_omitted"] = "not recorded (include_trace off)";
  } else if (trace_text.size() <= options.max_embedded_trace_bytes) {
    report["trace"] = p.trace;
  } else {
    report["trace"] = nullptr;
    report["trace_omitted"] = fmt::format("the trace is {:.1f} MB, more than the {:.0f} MB a page embeds",
                                          trace_text.size() / 1e6, options.max_embedded_trace_bytes / 1e6);
  }

  // Cost: the run's figures and the rates behind the break-even (docs/cost-model.md).
  const double hours = p.time_to_train_seconds / 3600;
  report["cost"] = {{"hours", hours},
                    {"rental_usd", opt(p.cost.rental_usd)},
                    {"spot_usd", opt(p.cost.spot_usd)},
                    {"ownership_usd", opt(p.cost.ownership_usd)},
                    {"energy_usd", opt(p.cost.energy_usd)},
                    {"purchase_usd", opt(p.cost.purchase_usd)},
                    {"break_even_days", opt(p.cost.break_even_days)},
                    {"rental_usd_per_hour", opt(p.cost.rental_usd_per_hour)},
                    {"energy_usd_per_hour", p.cost.energy_usd && hours > 0 ? json(*p.cost.energy_usd / hours) : json(nullptr)},
                    {"amortisation_years", s.prices.amortisation_years},
                    {"spot_preemption_overhead", s.prices.spot_preemption_overhead},
                    {"rental_basis", p.cost.rental_basis}};

  if (options.include_scaling) report["scaling"] = scaling_ladder(base, s, p, options, profiles, cache, config);
  if (options.sweep) report["sweep"] = *options.sweep;
  return report;
}

static json scaling_ladder(const ReportScenario& base, const Scenario& s, const Prediction& p,
                           const ScenarioReportOptions& options, const hwprofiles::ProfileSet& profiles,
                           PredictionCache& cache, const sim::ClusterConfig& config) {
  // Scaling: the same scenario over a node ladder (cluster.nodes=N after the user's overrides).
  json rungs = json::array();
  const std::vector<int> ladder = options.node_ladder.empty() ? default_node_ladder(s.nodes) : options.node_ladder;
  PredictOptions ladder_options;
  ladder_options.cache = &cache;
  ladder_options.fit_suggestions = false;
  for (int nodes : ladder) {
    if (nodes == s.nodes) {
      rungs.push_back(ladder_rung(nodes, p));
      continue;
    }
    std::vector<std::string> overrides = options.overrides;
    overrides.push_back(fmt::format("cluster.nodes={}", nodes));
    try {
      rungs.push_back(ladder_rung(nodes, predict_scenario(parse_edited_scenario(base.json, overrides, base.source),
                                                          profiles, ladder_options)));
    } catch (const core::InputError& e) {
      json rung = {{"nodes", nodes}, {"gpus", nodes * config.cluster.node.gpus_per_node}, {"error", e.what()}};
      rungs.push_back(rung);
    }
  }
  return {{"scenario_nodes", s.nodes}, {"gpus_per_node", config.cluster.node.gpus_per_node}, {"rungs", rungs}};
}

}  // namespace ptsim::reports
