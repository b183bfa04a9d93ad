// tests/fuzz/fuzz_op_times.cpp — libFuzzer target: an op-times file (models/op_times.hpp), as
// `ptsim calibrate measured` and `predict --op-times` read it: core::parse_json_text, then models::parse_op_times.
#include "core/json_reader.hpp"
#include "models/op_times.hpp"
#include "tests/fuzz/fuzz_support.hpp"

PTSIM_FUZZ_TARGET(op_times) {
  ptsim::fuzz::guarded([&] {
    const auto json = ptsim::core::parse_json_text(std::string(ptsim::fuzz::as_text(data, size)), "fuzz-op-times.json");
    (void)ptsim::models::parse_op_times(json, "fuzz-op-times.json");
  });
  return 0;
}
