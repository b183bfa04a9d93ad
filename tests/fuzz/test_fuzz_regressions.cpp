// tests/fuzz/test_fuzz_regressions.cpp — one doctest case per crash the fuzz targets found
// (docs/fuzzing-and-sanitizers.md, "What was found and fixed"): the input, fed to the parse function the
// target calls, must now be an InputError naming the problem (or succeed). The inputs are also in
// tests/fuzz/corpus/<target>/, which test_fuzz_corpus.cpp replays.
#include <doctest/doctest.h>

#include <string>

#include "core/error.hpp"
#include "core/json_reader.hpp"
#include "reports/sweep_spec.hpp"

using ptsim::core::InputError;

namespace {

std::string message_of(auto&& call) {
  try {
    call();
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL("expected an InputError");
  return {};
}

}  // namespace

TEST_CASE("fuzz_sweep: a sweep file's empty range is an InputError, not std::out_of_range") {
  const auto json = ptsim::core::parse_json_text(
      R"({"base": "t4-academic-cluster", "axes": [{"key": "cluster.nodes", "range": ""}]})", "sweep.json");
  const std::string message = message_of([&] { (void)ptsim::reports::parse_sweep_json(json, "sweep.json"); });
  CHECK(message.find("cluster.nodes") != std::string::npos);
  CHECK(message.find("A..B") != std::string::npos);
  CHECK_THROWS_AS((void)ptsim::reports::parse_range("cluster.nodes", "8"), InputError);
}

TEST_CASE("fuzz_sweep: a --vary value that overflows a double is an InputError, not nlohmann's out_of_range") {
  const std::string message = message_of([] { (void)ptsim::reports::parse_axis("cluster.nodes=1e400"); });
  CHECK(message.find("1e400") != std::string::npos);
  CHECK(message.find("does not fit a double") != std::string::npos);
  // Still fine: numbers, bare strings, ranges.
  const auto axis = ptsim::reports::parse_axis("cluster.network=ib-edr,10gbe-tcp");
  REQUIRE(axis.values.size() == 2);
  CHECK(axis.values[0] == "ib-edr");
  CHECK(ptsim::reports::parse_axis("cluster.nodes=1..8x2,12").values.size() == 5);
}
