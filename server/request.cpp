// server/request.cpp — reading and checking a request's body, scenario and edits (see the header).
#include "server/request.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "models/model_spec.hpp"
#include "reports/node_retarget.hpp"
#include "reports/prediction.hpp"
#include "reports/price_resolution.hpp"

namespace ptsim::server {

namespace fs = std::filesystem;
using core::Json;

namespace {

constexpr const char* kBody = "request body";

// A name that could reach outside reports/scenarios if used as a file name.
bool looks_like_path(const std::string& name) {
  return name.empty() || name.front() == '.' || name.find('/') != std::string::npos ||
         name.find('\\') != std::string::npos || name.find("..") != std::string::npos ||
         name.find('\0') != std::string::npos || name.find(':') != std::string::npos;
}

}  // namespace

void require_builtin_models(const Json& scenario, const std::string& field) {
  if (!scenario.is_object()) return;  // parse_scenario names that error
  if (scenario.contains("model") && scenario.at("model").is_string())
    require_builtin_model(scenario.at("model").get<std::string>(), field);
  if (scenario.contains("scaling_baseline") && scenario.at("scaling_baseline").is_object()) {
    const Json& base = scenario.at("scaling_baseline");
    if (base.contains("model") && base.at("model").is_string())
      require_builtin_model(base.at("model").get<std::string>(), field);
  }
}

namespace {

// Reads the scenario as predict does up to the point where the simulator runs: parse, profiles, prices.
reports::Scenario read_and_resolve(const ScenarioRequest& request, const std::vector<std::string>& overrides,
                                   const hwprofiles::ProfileSet& profiles) {
  reports::Scenario s = reports::parse_edited_scenario(request.base.json, overrides, request.base.source);
  reports::Scenario swapped = s;  // checked as predict will read it; `s` keeps what a node swap changes, to say so
  reports::retarget_to_node(swapped, profiles);
  (void)reports::resolve_cluster(swapped, profiles);
  reports::require_unambiguous(reports::resolve_prices(swapped, hwprofiles::find_node(profiles, s.node), profiles), s);
  return s;
}

bool readable(const ScenarioRequest& request, const std::vector<std::string>& overrides,
              const hwprofiles::ProfileSet& profiles) {
  try {
    (void)read_and_resolve(request, overrides, profiles);
    return true;
  } catch (const core::InputError&) {
    return false;
  }
}

// The field to blame for an error of the whole request: the base scenario if it fails alone; else the edit
// without which the others read (edits may only make sense together: a node and its price); else the first
// edit that, applied after the ones before it, breaks the scenario.
std::string blame(const ScenarioRequest& request, const hwprofiles::ProfileSet& profiles) {
  const auto& all = request.overrides;
  if (!readable(request, {}, profiles)) return "scenario";
  for (size_t k = 0; k < all.size(); ++k) {
    std::vector<std::string> others = all;
    others.erase(others.begin() + static_cast<long>(k));
    if (readable(request, others, profiles)) return "set." + request.set_keys[k];
  }
  for (size_t k = 1; k <= all.size(); ++k)
    if (!readable(request, {all.begin(), all.begin() + static_cast<long>(k)}, profiles)) return "set." + request.set_keys[k - 1];
  return "";
}

}  // namespace

Json parse_body(const std::string& body) {
  Json json;
  try {
    json = core::parse_json_text(body, kBody);
  } catch (const core::InputError& e) {
    throw RequestError(e.what(), "body");
  }
  if (!json.is_object())
    throw RequestError(fmt::format("{}: must be a JSON object, got {}", kBody, json.type_name()), "body");
  return json;
}

void require_known_fields(const Json& body, const std::vector<std::string>& known) {
  std::string first;
  for (auto it = body.begin(); it != body.end() && first.empty(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end()) first = it.key();
  if (first.empty()) return;
  core::JsonReader r(body, kBody);
  for (const auto& k : known) r.ignore(k);
  try {
    r.finish();
  } catch (const core::InputError& e) {
    throw RequestError(e.what(), first);
  }
}

std::string shipped_scenario_file(const std::string& name) {
  if (looks_like_path(name))
    throw RequestError(fmt::format("unknown scenario '{}': not a shipped scenario, and the server reads no files "
                                   "(give a shipped name or the scenario itself as a JSON object; expected one of: {})",
                                   name, fmt::join(reports::builtin_scenario_names(), ", ")),
                       "scenario");
  const std::string file = reports::scenarios_directory() + "/" + name + ".json";
  if (!fs::is_regular_file(file)) throw RequestError(reports::unknown_scenario_message(name), "scenario");
  return file;
}

void require_builtin_model(const std::string& name, const std::string& field) {
  const std::vector<std::string> names = models::builtin_model_names();
  if (std::find(names.begin(), names.end(), name) != names.end() && !looks_like_path(name)) return;
  throw RequestError(fmt::format("unknown model '{}': not a built-in model (expected one of: {}; the server reads no "
                                 "files, so a model is given by name)",
                                 name, fmt::join(names, ", ")),
                     field);
}

ScenarioRequest read_scenario_request(const Json& body) {
  ScenarioRequest request;
  if (!body.contains("scenario"))
    throw RequestError(fmt::format("{}: field 'scenario' is missing (required: a shipped scenario name or a scenario "
                                   "object)", kBody), "scenario");
  const Json& scenario = body.at("scenario");
  if (scenario.is_string()) {
    const std::string name = scenario.get<std::string>();
    request.base.source = shipped_scenario_file(name);
    request.base.json = core::load_json_file(request.base.source);
    request.base.requested = name;
  } else if (scenario.is_object()) {
    request.base.json = scenario;
    request.base.source = "request field 'scenario'";
    request.base.requested = scenario.contains("name") && scenario.at("name").is_string()
                                 ? scenario.at("name").get<std::string>()
                                 : "inline scenario";
    require_builtin_models(scenario, "scenario");
  } else {
    throw RequestError(fmt::format("{}: field 'scenario': expected a shipped scenario name or a scenario object, got {}",
                                   kBody, scenario.type_name()), "scenario");
  }
  if (body.contains("set")) {
    const Json& set = body.at("set");
    if (!set.is_object())
      throw RequestError(fmt::format("{}: field 'set': expected an object of scenario key → value (e.g. "
                                     "{{\"cluster.network\": \"ib-edr\"}}), got {}", kBody, set.type_name()), "set");
    for (auto it = set.begin(); it != set.end(); ++it) {
      if (it.key().empty() || it.key().find('=') != std::string::npos)
        throw RequestError(fmt::format("{}: field 'set': '{}' is not a scenario key (expected a dotted path such as "
                                       "cluster.network or phases.0.micro_batch)", kBody, it.key()), "set." + it.key());
      request.overrides.push_back(reports::set_assignment(it.key(), it.value()));
      request.set_keys.push_back(it.key());
    }
  }
  return request;
}

reports::Scenario build_scenario(const ScenarioRequest& request, const hwprofiles::ProfileSet& profiles) {
  // Models first: a path there would be read by the simulator.
  Json edited = request.base.json;
  for (size_t i = 0; i < request.overrides.size(); ++i) {
    try {
      reports::apply_override(edited, request.overrides[i]);
    } catch (const core::InputError& e) {
      throw RequestError(e.what(), "set." + request.set_keys[i]);
    }
    require_builtin_models(edited, "set." + request.set_keys[i]);
  }
  try {
    return read_and_resolve(request, request.overrides, profiles);
  } catch (const RequestError&) {
    throw;
  } catch (const core::InputError& e) {
    throw RequestError(e.what(), blame(request, profiles));
  }
}

}  // namespace ptsim::server
