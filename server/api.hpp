// server/api.hpp — the JSON API of `ptsim serve`, as plain functions of a request body (no sockets here, so
// tests can call them directly): each answers a status and a JSON body, over the library calls the CLI
// makes, with the CLI's error messages.
//   predict(body)   POST /api/predict  {"scenario": NAME|{…}, "set": {key: value}} → what `ptsim predict
//                   --format json` prints for that scenario and those --set edits
//   report(body)    POST /api/report   the same request (+ "scaling": true, "ladder": [n, …]) → the figures of
//                   `ptsim report --format json` (schema ptsim.report.v1) without the trace; the page's data
//   sweep(body)     POST /api/sweep    a sweep file's JSON (docs/sweep.md; "base" a shipped name or an object)
//                   → what `ptsim sweep --format json` prints; at most ApiLimits::max_sweep_configurations
//   profiles_json() GET /api/profiles  nodes, GPUs, networks and prices the scenarios can name
//   scenarios_json()GET /api/scenarios the shipped scenarios with their cluster, recipe and phases
// Errors: 400 {"error": the CLI's message, "field": the request field it is about, or null}; 422 for a
// configuration that is well-formed but cannot run ({"infeasible": "memory"|"precision"|"parallelism"});
// 500 for an internal failure. Thread-safe: every call reads the shared profiles and builds its own state.
#pragma once
#include <string>

#include "core/json_reader.hpp"
#include "hwprofiles/profiles.hpp"

namespace ptsim::server {

struct ApiLimits {
  size_t max_sweep_configurations = 64;   // a bigger sweep is refused (400); `ptsim sweep` has no such limit
  int sweep_threads = 0;                  // 0: all cores
};

struct ApiResponse {
  int status = 200;
  std::string body;  // JSON text
};

class Api {
 public:
  Api(hwprofiles::ProfileSet profiles, ApiLimits limits);

  ApiResponse predict(const std::string& body) const;
  ApiResponse report(const std::string& body) const;
  ApiResponse sweep(const std::string& body) const;
  ApiResponse profiles() const;
  ApiResponse scenarios() const;

  const ApiLimits& limits() const { return limits_; }

 private:
  hwprofiles::ProfileSet profiles_;
  ApiLimits limits_;
  std::string profiles_text_, scenarios_text_;  // built once: they do not change while serving
};

// The error answer for an exception escaping a handler (RequestError, InfeasibleError, InputError, others).
ApiResponse error_response(const std::exception& e);
// {"error": message, "field": field or null} as JSON text.
std::string error_body(const std::string& message, const std::string& field = "");

}  // namespace ptsim::server
