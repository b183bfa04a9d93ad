// reports/sweep_output.cpp — JSON, CSV and text renderings of a sweep (see the header).
#include "reports/sweep_output.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "reports/text_table.hpp"

namespace ptsim::reports {
namespace {

using nlohmann::json;

json opt(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
std::optional<double> opt_from(const json& j, const char* key) {
  if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
  return j.at(key).get<double>();
}

std::string setting_text(const json& value) {
  if (!value.is_array()) return value.is_string() ? value.get<std::string>() : value.dump();
  std::string out;  // a paired axis' value, as typed: dgx-a100:pytorch-ngc20.06
  for (const auto& part : value) out += (out.empty() ? "" : ":") + setting_text(part);
  return out;
}

std::string days_text(double seconds) {
  if (seconds >= 2 * 86400) return fmt::format("{:.2f} d", seconds / 86400);
  if (seconds >= 2 * 3600) return fmt::format("{:.1f} h", seconds / 3600);
  return fmt::format("{:.1f} min", seconds / 60);
}

std::string usd_text(const std::optional<double>& v) { return v ? fmt::format("${:.0f}", *v) : "-"; }

std::string recipe_text(const ConfigResult& r) {
  std::string out;
  for (const auto& p : r.phases) out += fmt::format("{}{}x{}", out.empty() ? "" : " ", p.micro_batch, p.grad_accum);
  if (r.recompute) out += " rc";
  if (r.tensor_parallel > 1) out += fmt::format(" tp{}", r.tensor_parallel);
  return out;
}

std::string settings_text(const ConfigResult& r) {
  std::string out;
  for (const auto& [key, value] : r.settings) out += fmt::format("{}{}={}", out.empty() ? "" : " ", key, setting_text(value));
  return out;
}

std::string csv_cell(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string number_cell(const std::optional<double>& v) { return v ? fmt::format("{:.6g}", *v) : ""; }

std::string price_item(const ConfigResult& r, const char* figure) {
  const auto it = r.price_items.find(figure);
  return it == r.price_items.end() ? "" : it->second;
}

// Whether an axis changes the node type (cluster.node, or the whole cluster).
bool varies_node(const SweepSpec& spec) {
  for (const auto& axis : spec.axes)
    for (const auto& key : axis_keys(axis.key))
      if (key == "cluster.node" || key == "cluster") return true;
  return false;
}

// Each what-if note once, with the configurations it holds for: "#4, #5: stack … ".
std::string what_if_notes_text(const std::vector<ConfigResult>& results) {
  std::vector<std::pair<std::string, std::vector<size_t>>> notes;
  for (const auto& r : results)
    for (const auto& note : r.what_if_notes) {
      auto it = std::find_if(notes.begin(), notes.end(), [&](const auto& n) { return n.first == note; });
      if (it == notes.end()) it = notes.insert(notes.end(), {note, {}});
      it->second.push_back(r.index);
    }
  if (notes.empty()) return "";
  std::string out = "\nswapped-in node types (docs/sweep.md, \"Node-type what-ifs\"):\n";
  for (const auto& [note, indices] : notes) {
    std::string which;
    for (size_t i : indices) which += fmt::format("{}#{}", which.empty() ? "" : ", ", i);
    out += fmt::format("  {}: {}\n", which, note);
  }
  return out;
}

json constraints_json(const SweepSpec& spec, const SweepAnalysis& a) {
  const auto& c = spec.constraints;
  return {{"deadline_seconds", opt(c.deadline_seconds)},
          {"budget_usd", opt(c.budget_usd)},
          {"budget_basis", to_string(a.budget_basis)},
          {"max_gpus", c.max_gpus ? json(*c.max_gpus) : json(nullptr)}};
}

json index_or_null(const std::optional<size_t>& i, const std::vector<ConfigResult>& results) {
  return i ? json(results[*i].index) : json(nullptr);
}

std::string plan_line(const char* label, const std::optional<size_t>& i, const std::vector<ConfigResult>& results,
                      PriceBasis basis) {
  if (!i) return fmt::format("  {:<28} none\n", label);
  const ConfigResult& r = results[*i];
  return fmt::format("  {:<28} #{}: {} — {} GPUs ({} x {}), {}, {} {}, recipe {}\n", label, r.index, settings_text(r),
                     r.gpus, r.node, r.network, days_text(r.time_to_train_seconds), to_string(basis),
                     usd_text(r.dollars(basis)), recipe_text(r));
}

}  // namespace

json config_result_to_json(const ConfigResult& r) {
  json settings = json::object();
  for (const auto& [key, value] : r.settings) settings[key] = value;
  json j = {{"index", r.index}, {"settings", settings}, {"evaluated", r.evaluated}, {"feasible", r.feasible},
            {"what_if_notes", r.what_if_notes}};
  if (!r.feasible) {
    j["infeasible"] = {{"kind", r.infeasible_kind}, {"reason", r.reason}, {"over_bytes", r.over_bytes}};
    return j;
  }
  json phases = json::array();
  for (const auto& p : r.phases)
    phases.push_back({{"name", p.name}, {"micro_batch", p.micro_batch}, {"grad_accum", p.grad_accum},
                      {"global_batch", p.global_batch}, {"steps", p.steps}, {"iteration_seconds", p.iteration_seconds}});
  j.update({{"gpus", r.gpus}, {"node", r.node}, {"gpu", r.gpu}, {"network", r.network}, {"stack", r.stack},
            {"price_items", r.price_items}, {"recompute", r.recompute},
            {"tensor_parallel", r.tensor_parallel}, {"time_to_train_seconds", r.time_to_train_seconds},
            {"gpu_hours", r.gpu_hours}, {"scaling_efficiency", opt(r.scaling_efficiency)},
            {"memory_per_gpu_bytes", r.memory_per_gpu_bytes}, {"rental_usd", opt(r.rental_usd)},
            {"spot_usd", opt(r.spot_usd)}, {"ownership_usd", opt(r.ownership_usd)},
            {"purchase_usd", opt(r.purchase_usd)}, {"break_even_days", opt(r.break_even_days)},
            {"phases", phases}, {"recipe_notes", r.recipe_notes}, {"meets_deadline", r.meets_deadline},
            {"within_budget", r.within_budget}, {"on_frontier", r.on_frontier}});
  return j;
}

ConfigResult config_result_from_json(const json& j) {
  ConfigResult r;
  r.index = j.at("index").get<size_t>();
  for (const auto& [key, value] : j.at("settings").items()) r.settings.emplace_back(key, value);
  r.evaluated = j.at("evaluated").get<bool>();
  r.feasible = j.at("feasible").get<bool>();
  r.what_if_notes = j.at("what_if_notes").get<std::vector<std::string>>();
  if (!r.feasible) {
    r.infeasible_kind = j.at("infeasible").at("kind").get<std::string>();
    r.reason = j.at("infeasible").at("reason").get<std::string>();
    r.over_bytes = j.at("infeasible").at("over_bytes").get<double>();
    return r;
  }
  r.gpus = j.at("gpus").get<int>();
  r.node = j.at("node").get<std::string>();
  r.gpu = j.at("gpu").get<std::string>();
  r.network = j.at("network").get<std::string>();
  r.stack = j.at("stack").get<std::string>();
  r.price_items = j.at("price_items").get<std::map<std::string, std::string>>();
  r.recompute = j.at("recompute").get<bool>();
  r.tensor_parallel = j.at("tensor_parallel").get<int64_t>();
  r.time_to_train_seconds = j.at("time_to_train_seconds").get<double>();
  r.gpu_hours = j.at("gpu_hours").get<double>();
  r.scaling_efficiency = opt_from(j, "scaling_efficiency");
  r.memory_per_gpu_bytes = j.at("memory_per_gpu_bytes").get<double>();
  r.rental_usd = opt_from(j, "rental_usd");
  r.spot_usd = opt_from(j, "spot_usd");
  r.ownership_usd = opt_from(j, "ownership_usd");
  r.purchase_usd = opt_from(j, "purchase_usd");
  r.break_even_days = opt_from(j, "break_even_days");
  for (const auto& p : j.at("phases"))
    r.phases.push_back({p.at("name").get<std::string>(), p.at("micro_batch").get<int64_t>(),
                        p.at("grad_accum").get<int64_t>(), p.at("global_batch").get<int64_t>(),
                        p.at("steps").get<int64_t>(), p.at("iteration_seconds").get<double>()});
  r.recipe_notes = j.at("recipe_notes").get<std::vector<std::string>>();
  return r;
}

json sweep_to_json(const SweepSpec& spec, const std::vector<ConfigResult>& results, const SweepAnalysis& a) {
  json axes = json::array();
  for (const auto& axis : spec.axes) axes.push_back({{"key", axis.key}, {"values", axis.values}});
  json frontier = json::object();
  for (const auto& [basis, indices] : a.frontier) {
    json list = json::array();
    for (size_t i : indices) list.push_back(results[i].index);
    frontier[basis] = list;
  }
  json configurations = json::array();
  for (const auto& r : results) configurations.push_back(config_result_to_json(r));
  return {{"schema", "ptsim.sweep.v1"},
          {"base", spec.base.value("name", spec.base_source)},
          {"axes", axes},
          {"auto_recipe", spec.auto_recipe},
          {"objective", to_string(spec.objective)},
          {"constraints", constraints_json(spec, a)},
          {"counts", {{"configurations", results.size()}, {"feasible", a.feasible}, {"infeasible", a.infeasible_by_kind}}},
          {"recommended", index_or_null(a.recommended, results)},
          {"cheapest_meeting_deadline", index_or_null(a.cheapest_meeting_deadline, results)},
          {"fastest_within_budget", index_or_null(a.fastest_within_budget, results)},
          {"frontier", frontier},
          {"configurations", configurations}};
}

json run_sweep_to_json(const SweepSpec& spec, const hwprofiles::ProfileSet& profiles, int threads) {
  validate_sweep(spec, profiles);
  std::vector<size_t> indices(configuration_count(spec));
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  std::vector<ConfigResult> results = evaluate_configurations(spec, indices, profiles, threads);
  const SweepAnalysis analysis = analyse_sweep(spec, results);
  return sweep_to_json(spec, results, analysis);
}

std::string sweep_to_csv(const SweepSpec& spec, const std::vector<ConfigResult>& results) {
  std::string out = "index";
  for (const auto& axis : spec.axes) {  // (two appends, not "," + cell: g++ 12 -Wrestrict false positive)
    out += ',';
    out += csv_cell(axis.key);
  }
  out += ",feasible,infeasible_kind,reason,gpus,node,gpu,network,recipe,time_to_train_seconds,gpu_hours,"
         "scaling_efficiency,memory_per_gpu_gib,rental_usd,spot_usd,ownership_usd,purchase_usd,break_even_days,"
         "meets_deadline,within_budget,frontier_rental,frontier_spot,frontier_ownership,stack,rental_price,spot_price,"
         "purchase_price\n";
  for (const auto& r : results) {
    out += std::to_string(r.index);
    for (const auto& [key, value] : r.settings) {
      out += ',';
      out += csv_cell(setting_text(value));
    }
    const auto frontier = [&](const char* b) { return r.on_frontier.count(b) ? "1" : "0"; };
    out += fmt::format(",{},{},{}", r.feasible ? 1 : 0, r.infeasible_kind,
                       csv_cell(r.reason.substr(0, r.reason.find('\n'))));
    if (!r.feasible) {
      out += ",,,,,,,,,,,,,,,0,0,0,0,0,,,,\n";
      continue;
    }
    out += fmt::format(",{},{},{},{},{},{:.6g},{:.6g},{},{:.3f},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.gpus, r.node, r.gpu,
                       r.network, csv_cell(recipe_text(r)), r.time_to_train_seconds, r.gpu_hours,
                       number_cell(r.scaling_efficiency), r.memory_per_gpu_bytes / (1024.0 * 1024 * 1024),
                       number_cell(r.rental_usd), number_cell(r.spot_usd), number_cell(r.ownership_usd),
                       number_cell(r.purchase_usd), number_cell(r.break_even_days), r.meets_deadline ? 1 : 0,
                       r.within_budget ? 1 : 0, frontier("rental"), frontier("spot"), frontier("ownership"), r.stack,
                       price_item(r, "rental"), price_item(r, "spot"), price_item(r, "purchase"));
  }
  return out;
}

std::string sweep_to_text(const SweepSpec& spec, const std::vector<ConfigResult>& results, const SweepAnalysis& a,
                          size_t max_rows) {
  const auto& c = spec.constraints;
  std::string out = fmt::format("sweep of {}: {} configurations, {} feasible", spec.base.value("name", spec.base_source),
                                results.size(), a.feasible);
  for (const auto& [kind, n] : a.infeasible_by_kind) out += fmt::format(", {} {}", n, kind);
  out += fmt::format("\n  objective {}", to_string(spec.objective));
  if (c.deadline_seconds) out += fmt::format(", deadline {}", days_text(*c.deadline_seconds));
  if (c.budget_usd) out += fmt::format(", budget ${:.0f} ({})", *c.budget_usd, to_string(a.budget_basis));
  if (c.max_gpus) out += fmt::format(", at most {} GPUs", *c.max_gpus);
  out += "\n\n";
  out += plan_line("recommended:", a.recommended, results, a.budget_basis);
  if (a.recommended)
    for (const auto& note : results[*a.recommended].recipe_notes) out += "    " + note + "\n";
  if (c.deadline_seconds) out += plan_line("cheapest meeting deadline:", a.cheapest_meeting_deadline, results, a.budget_basis);
  if (c.budget_usd) out += plan_line("fastest within budget:", a.fastest_within_budget, results, a.budget_basis);
  for (PriceBasis basis : kPriceBases) {
    const auto& frontier = a.frontier.at(to_string(basis));
    if (frontier.empty()) continue;
    out += fmt::format("\ntime-{} frontier ({} configuration{}; faster ones cost more):\n", to_string(basis),
                       frontier.size(), frontier.size() == 1 ? "" : "s");
    TextTable table({"#", "settings", "GPUs", "time", to_string(basis), "break-even", "recipe"});
    for (size_t i : frontier) {
      const ConfigResult& r = results[i];
      table.add_row({std::to_string(r.index), settings_text(r), std::to_string(r.gpus), days_text(r.time_to_train_seconds),
                     usd_text(r.dollars(basis)), r.break_even_days ? fmt::format("{:.0f} d", *r.break_even_days) : "-",
                     recipe_text(r)});
    }
    out += table.render();
  }
  // Every configuration, feasible ones best first by the objective, then the infeasible with their reasons.
  std::vector<size_t> order(results.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    const auto& a_ = results[x];
    const auto& b_ = results[y];
    if (a_.feasible != b_.feasible) return a_.feasible;
    return a_.feasible && a_.time_to_train_seconds < b_.time_to_train_seconds;
  });
  out += fmt::format("\nconfigurations (fastest first{}):\n",
                     results.size() > max_rows ? fmt::format("; {} of {} shown, --format csv for all", max_rows, results.size()) : "");
  // A node-type sweep also names each configuration's stack and rental price: they differ by node.
  const bool by_node = varies_node(spec);
  std::vector<std::string> header = {"#", "settings", "GPUs", "time", "rental", "spot", "ownership", "deadline", "budget"};
  if (by_node) header.insert(header.end(), {"stack", "rental price"});
  header.push_back("recipe / why not");
  TextTable table(header);
  for (size_t k = 0; k < std::min(max_rows, order.size()); ++k) {
    const ConfigResult& r = results[order[k]];
    std::vector<std::string> row = {std::to_string(r.index), settings_text(r)};
    if (!r.feasible) {
      row.resize(header.size() - 1);
      row.push_back(r.infeasible_kind + ": " + r.reason.substr(0, r.reason.find('\n')));
    } else {
      row.insert(row.end(), {std::to_string(r.gpus), days_text(r.time_to_train_seconds), usd_text(r.rental_usd),
                             usd_text(r.spot_usd), usd_text(r.ownership_usd),
                             c.deadline_seconds ? (r.meets_deadline ? "yes" : "no") : "-",
                             c.budget_usd ? (r.within_budget ? "yes" : "no") : "-"});
      if (by_node) row.insert(row.end(), {r.stack, price_item(r, "rental").empty() ? "none" : price_item(r, "rental")});
      row.push_back(recipe_text(r));
    }
    table.add_row(row);
  }
  out += table.render();
  out += what_if_notes_text(results);
  return out;
}

}  // namespace ptsim::reports
