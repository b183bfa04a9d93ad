// server/request.hpp — what `ptsim serve` accepts from a client, checked before any work: the body is one
// JSON object with known fields; a scenario is a shipped name or an inline scenario object, never a file
// path; a model is a built-in name, never a file path; "set" edits are scenario keys with JSON values, the
// CLI's --set as data. Errors are RequestErrors: the CLI's message (core::InputError text) and the request
// field it is about, so the page can show it next to the control that caused it.
// Not here: routes and HTTP (server/http_server.hpp), the answers (server/api.hpp).
#pragma once
#include <string>
#include <vector>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/scenario.hpp"
#include "reports/scenario_report.hpp"

namespace ptsim::server {

// An InputError about one field of a request ("body", "scenario", "set.cluster.network", …; "" = none).
class RequestError : public core::InputError {
 public:
  RequestError(const std::string& message, std::string field) : InputError(message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// The request body as a JSON object: RequestError (field "body") for bad JSON, duplicate keys, not an object.
core::Json parse_body(const std::string& body);
// RequestError (field = the first unknown key) when `body` has keys other than `known`.
void require_known_fields(const core::Json& body, const std::vector<std::string>& known);

// A shipped scenario's file from its name. A name that is not shipped is refused with the CLI's message for
// an unknown scenario; one that could be a path ('/', '\\', "..", a leading '.', a NUL) is refused before any
// file is looked at, saying the server reads no files.
std::string shipped_scenario_file(const std::string& name);

// "scenario" (a name or an object) and "set" ({key: value}) of a request: the scenario's JSON with where it
// came from, and the edits as the CLI's "key=value" strings (a string value is written bare, as a user
// types it, unless it would then read as another JSON value).
struct ScenarioRequest {
  reports::ReportScenario base;
  std::vector<std::string> overrides;
  std::vector<std::string> set_keys;  // overrides[i] edits set_keys[i]
};
ScenarioRequest read_scenario_request(const core::Json& body);

// The scenario with its edits applied and parsed (the CLI's messages); models are checked to be built-in
// names. A bad edit is blamed on its field: the first "set" key whose edit, applied with the ones before it,
// makes the scenario unreadable or names a profile that does not exist.
reports::Scenario build_scenario(const ScenarioRequest& request, const hwprofiles::ProfileSet& profiles);

// RequestError unless `name` is a built-in model (models/<name>.json); `field` names where it was given.
void require_builtin_model(const std::string& name, const std::string& field);
// The same for every model a scenario JSON names (its "model", its "scaling_baseline.model").
void require_builtin_models(const core::Json& scenario, const std::string& field);

}  // namespace ptsim::server
