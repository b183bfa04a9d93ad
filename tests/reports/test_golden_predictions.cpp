// tests/reports/test_golden_predictions.cpp — freezes every shipped scenario's prediction (SimGrid-style
// golden test): any change to the models, profiles or simulator that moves a prediction shows up here as a
// diff someone must look at and approve. Tolerance 1e-6 relative: the simulation is deterministic; the
// slack only absorbs floating-point differences between compilers.
// To accept a change on purpose: PTSIM_UPDATE_GOLDEN=1 build/tests/reports/test_golden_predictions
// (rewrites tests/reports/golden_predictions.json), then review `git diff` and commit it with the reason.
#include <doctest/doctest.h>

#include <cstdlib>
#include <fstream>

#include "core/data_path.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/prediction.hpp"
#include "reports/scenario.hpp"

using namespace ptsim;

namespace {

std::string golden_path() {
  return core::data_path("tests/reports/golden_predictions.json");
}

nlohmann::json frozen_fields(const reports::Prediction& p) {
  nlohmann::json j = reports::prediction_to_json(p);
  j.erase("simulator_wall_seconds");  // wall time is not a prediction
  return j;
}

void compare(const nlohmann::json& expected, const nlohmann::json& actual, const std::string& path) {
  CAPTURE(path);
  if (expected.is_number() && actual.is_number()) {  // integer vs unsigned after a round trip is not a change
    CHECK(actual.get<double>() == doctest::Approx(expected.get<double>()).epsilon(1e-6));
    return;
  }
  REQUIRE(expected.type() == actual.type());
  if (expected.is_object()) {
    CHECK(expected.size() == actual.size());
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      REQUIRE(actual.contains(it.key()));
      compare(it.value(), actual.at(it.key()), path + "." + it.key());
    }
  } else if (expected.is_array()) {
    REQUIRE(expected.size() == actual.size());
    for (size_t i = 0; i < expected.size(); ++i) compare(expected[i], actual[i], path + "[" + std::to_string(i) + "]");
  } else {
    CHECK(expected == actual);
  }
}

}  // namespace

TEST_CASE("every shipped scenario's prediction matches the golden file") {
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  nlohmann::json now = nlohmann::json::object();
  for (const auto& name : reports::builtin_scenario_names())
    now[name] = frozen_fields(reports::predict_scenario(reports::load_scenario(name), profiles));
  if (const char* update = std::getenv("PTSIM_UPDATE_GOLDEN"); update && std::string(update) == "1") {
    std::ofstream(golden_path()) << now.dump(1) << "\n";
    MESSAGE("rewrote " << golden_path());
    return;
  }
  std::ifstream in(golden_path());
  REQUIRE_MESSAGE(in.good(), "missing " << golden_path() << " (run with PTSIM_UPDATE_GOLDEN=1 to create it)");
  nlohmann::json golden = nlohmann::json::parse(in);
  CHECK(golden.size() == now.size());
  for (auto it = golden.begin(); it != golden.end(); ++it) {
    REQUIRE_MESSAGE(now.contains(it.key()), "scenario " << it.key() << " is in the golden file but no longer shipped");
    compare(it.value(), now[it.key()], it.key());
  }
}
