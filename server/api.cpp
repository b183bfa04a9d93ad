// server/api.cpp — the API's answers (see the header): each reads its request (server/request.hpp), runs
// the library call the CLI runs, and writes JSON; an exception becomes an error answer here, in one place.
#include "server/api.hpp"

#include <fmt/format.h>

#include "reports/prediction.hpp"
#include "reports/scenario_report.hpp"
#include "reports/sweep.hpp"
#include "reports/sweep_output.hpp"
#include "server/request.hpp"

namespace ptsim::server {

using core::Json;

namespace {

ApiResponse ok(const Json& json, int indent = 2) { return {200, json.dump(indent) + "\n"}; }

template <typename Handler>
ApiResponse guarded(Handler&& handler) {
  try {
    return handler();
  } catch (const std::exception& e) {
    return error_response(e);
  }
}

Json profiles_to_json(const hwprofiles::ProfileSet& p) {
  Json nodes = Json::array(), gpus = Json::array(), networks = Json::array(), prices = Json::array();
  for (const auto& [name, n] : p.nodes)
    nodes.push_back({{"name", name}, {"description", n.description}, {"gpu", n.gpu}, {"gpus_per_node", n.gpus_per_node},
                     {"nics_per_node", n.nics_per_node}, {"default_network", n.default_network},
                     {"purchase_usd", n.purchase_usd}});
  for (const auto& [name, g] : p.gpus)
    gpus.push_back({{"name", name}, {"description", g.description}, {"memory_bytes", g.memory_bytes},
                    {"peak_fp16_tensor_flops_per_second", g.peak_fp16_tensor_flops_per_second},
                    {"peak_bf16_tensor_flops_per_second", g.peak_bf16_tensor_flops_per_second},
                    {"peak_fp8_tensor_flops_per_second", g.peak_fp8_tensor_flops_per_second},
                    {"peak_tf32_flops_per_second", g.peak_tf32_flops_per_second},
                    {"peak_fp32_flops_per_second", g.peak_fp32_flops_per_second}});
  for (const auto& [name, n] : p.networks)
    networks.push_back({{"name", name}, {"description", n.description}, {"gbps", n.link_bytes_per_second * 8 / 1e9},
                        {"transport", hwprofiles::to_string(n.transport)}});
  for (const auto& [name, item] : p.prices)
    prices.push_back({{"name", name}, {"kind", item.kind}, {"unit", item.unit}, {"usd", item.usd},
                      {"applies_to", item.applies_to}, {"date", item.date}, {"price_set", item.price_set},
                      {"source", item.source}});
  Json stacks = Json::array();
  for (const auto& [name, st] : p.stacks) {
    Json families = Json::array();
    for (const auto& entry : st.fits) families.push_back(entry.first);
    stacks.push_back({{"name", name}, {"description", st.description}, {"fuses", st.fuses}, {"fitted_families", families}});
  }
  return {{"nodes", nodes},   {"gpus", gpus},         {"networks", networks}, {"stacks", stacks},
          {"prices", prices}, {"price_sets", p.price_sets}};
}

Json scenarios_to_json(const hwprofiles::ProfileSet& profiles) {
  Json list = Json::array();
  for (const auto& name : reports::builtin_scenario_names()) {
    const reports::Scenario s = reports::load_scenario(shipped_scenario_file(name));
    const sim::ClusterConfig config = reports::resolve_cluster(s, profiles);
    Json phases = Json::array();
    for (const auto& ph : s.phases)
      phases.push_back({{"name", ph.name}, {"seq_len", ph.seq_len}, {"micro_batch", ph.micro_batch},
                        {"grad_accum", ph.grad_accum}, {"global_batch", ph.global_batch}});
    list.push_back({{"name", name}, {"description", s.description}, {"model", s.model}, {"node", s.node},
                    {"nodes", s.nodes}, {"gpus_per_node", s.gpus_per_node}, {"network", config.cluster.network.name},
                    {"precision", models::to_string(s.recipe.precision)},
                    {"optimizer", models::to_string(s.recipe.optimizer)}, {"phases", phases},
                    {"prices", {{"set", s.prices.set}, {"rental", s.prices.rental}, {"spot", s.prices.spot},
                                {"purchase", s.prices.purchase}}}});
  }
  return {{"scenarios", list}};
}

}  // namespace

std::string error_body(const std::string& message, const std::string& field) {
  return Json{{"error", message}, {"field", field.empty() ? Json(nullptr) : Json(field)}}.dump(2) + "\n";
}

ApiResponse error_response(const std::exception& e) {
  if (const auto* r = dynamic_cast<const RequestError*>(&e)) return {400, error_body(r->what(), r->field())};
  if (const auto* inf = dynamic_cast<const core::InfeasibleError*>(&e)) {
    Json body = {{"error", inf->what()}, {"field", nullptr}, {"infeasible", core::to_string(inf->kind())}};
    if (inf->over_bytes() > 0) body["over_bytes"] = inf->over_bytes();
    return {422, body.dump(2) + "\n"};
  }
  if (dynamic_cast<const core::InputError*>(&e)) return {400, error_body(e.what())};
  return {500, error_body(std::string("internal error: ") + e.what())};
}

Api::Api(hwprofiles::ProfileSet profiles, ApiLimits limits)
    : profiles_(std::move(profiles)), limits_(limits),
      profiles_text_(profiles_to_json(profiles_).dump(2) + "\n"),
      scenarios_text_(scenarios_to_json(profiles_).dump(2) + "\n") {}

ApiResponse Api::profiles() const { return {200, profiles_text_}; }
ApiResponse Api::scenarios() const { return {200, scenarios_text_}; }

ApiResponse Api::predict(const std::string& text) const {
  return guarded([&] {
    const Json body = parse_body(text);
    require_known_fields(body, {"scenario", "set"});
    const reports::Scenario s = build_scenario(read_scenario_request(body), profiles_);
    return ok(reports::prediction_to_json(reports::predict_scenario(s, profiles_)));
  });
}

ApiResponse Api::report(const std::string& text) const {
  return guarded([&] {
    const Json body = parse_body(text);
    require_known_fields(body, {"scenario", "set", "scaling", "ladder"});
    const ScenarioRequest request = read_scenario_request(body);
    (void)build_scenario(request, profiles_);  // errors blamed on their field before the report's runs
    reports::ScenarioReportOptions options;
    options.overrides = request.overrides;
    options.include_trace = false;
    options.include_scaling = false;
    if (body.contains("scaling")) {
      if (!body.at("scaling").is_boolean())
        throw RequestError(fmt::format("request body: field 'scaling': expected true or false, got {}",
                                       body.at("scaling").dump()), "scaling");
      options.include_scaling = body.at("scaling").get<bool>();
    }
    if (body.contains("ladder")) {
      const Json& ladder = body.at("ladder");
      if (!ladder.is_array() || ladder.empty() || ladder.size() > 16)
        throw RequestError("request body: field 'ladder': expected 1 to 16 node counts, e.g. [1, 2, 4, 8]", "ladder");
      for (const auto& n : ladder) {
        if (!n.is_number_integer() || n.get<long long>() < core::ranges::nodes.min ||
            n.get<long long>() > core::ranges::nodes.max)
          throw RequestError(fmt::format("request body: field 'ladder': {} is not a node count in [{}, {}]", n.dump(),
                                         core::ranges::nodes.min, core::ranges::nodes.max), "ladder");
        options.node_ladder.push_back(n.get<int>());
      }
      options.include_scaling = true;
    }
    return ok(reports::collect_scenario_report(request.base, options, profiles_));
  });
}

ApiResponse Api::sweep(const std::string& text) const {
  return guarded([&] {
    Json body = parse_body(text);
    require_known_fields(body, {"base", "set", "axes", "auto_recipe", "deadline", "budget_usd", "max_gpus",
                                "objective", "comment", "description"});
    std::string base_file;
    if (body.contains("base") && body.at("base").is_string()) {
      base_file = shipped_scenario_file(body.at("base").get<std::string>());
      body["base"] = core::load_json_file(base_file);
    }
    reports::SweepSpec spec;
    try {
      spec = reports::parse_sweep_json(body, "request body");
    } catch (const RequestError&) {
      throw;
    } catch (const core::InputError& e) {
      throw RequestError(e.what(), "");
    }
    if (!base_file.empty()) spec.base_source = base_file;
    const size_t count = reports::configuration_count(spec);
    if (count > limits_.max_sweep_configurations)
      throw RequestError(fmt::format("request body: the axes make {} configurations; this server evaluates at most {} "
                                     "per request (ptsim serve --max-sweep N raises it; ptsim sweep has no limit)",
                                     count, limits_.max_sweep_configurations),
                         "axes");
    for (size_t i = 0; i < count; ++i) require_builtin_models(reports::configuration_json(spec, i), "axes");
    return ok(reports::run_sweep_to_json(spec, profiles_, limits_.sweep_threads), 1);  // as ptsim sweep --format json
  });
}

}  // namespace ptsim::server
