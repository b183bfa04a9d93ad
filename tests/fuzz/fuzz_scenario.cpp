// tests/fuzz/fuzz_scenario.cpp — libFuzzer target: a scenario JSON file (reports/scenario.hpp), read as
// `ptsim predict --scenario FILE` reads it: core::parse_json_text, then reports::parse_scenario.
#include "core/json_reader.hpp"
#include "reports/scenario.hpp"
#include "tests/fuzz/fuzz_support.hpp"

PTSIM_FUZZ_TARGET(scenario) {
  ptsim::fuzz::guarded([&] {
    const auto json = ptsim::core::parse_json_text(std::string(ptsim::fuzz::as_text(data, size)), "fuzz-scenario.json");
    (void)ptsim::reports::parse_scenario(json, "fuzz-scenario.json");
  });
  return 0;
}
