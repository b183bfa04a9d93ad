// tests/cli/test_cli_collective.cpp — `ptsim collective` through the binary: the nccl-tests layout, JSON,
// and exit 2 for bad flags.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "tests/support/run_command.hpp"

using ptsim::test::run_ptsim;

TEST_CASE("the table has nccl-tests' columns and its average bus bandwidth line") {
  auto r = run_ptsim("collective --node dgx-1 --nodes 2 --network ib-edr -b 1M -e 16M -f 4");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("size         count      type   redop    root       time   algbw   busbw") != std::string::npos);
  CHECK(r.output.find("# Avg bus bandwidth    :") != std::string::npos);
  CHECK(r.output.find("     1048576        262144     float     sum") != std::string::npos);
}

TEST_CASE("JSON: one row per size, busbw = algbw × 2(n−1)/n for all_reduce") {
  auto r = run_ptsim("collective --node dgx-1 --nodes 2 -b 8M -e 8M --format json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  auto j = nlohmann::json::parse(r.output);
  CHECK(j["ranks"] == 16);
  REQUIRE(j["rows"].size() == 1);
  CHECK(j["rows"][0]["busbw_gb_per_second"].get<double>() ==
        doctest::Approx(j["rows"][0]["algbw_gb_per_second"].get<double>() * 30.0 / 16));
}

TEST_CASE("bad flags are exit 2 naming the flag") {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"collective --nodes 2", "--node is required"},
      {"collective --node dgx-1 --nodes 2 --op alltoall", "--op 'alltoall'"},
      {"collective --node dgx-1 --nodes 2 -b 2T", "--min-bytes '2T'"},
      {"collective --node dgx-1 --nodes 2 -b 1G -e 1M", "expected 0 < min"},
      {"collective --node dgx-1 --nodes 2 --algorithm fastest", "--algorithm 'fastest'"},
      {"collective --node no-such-node", "no-such-node"},
      {"collective --node dgx-1 --gpus-per-node 1", "one GPU has nothing to communicate"},
  };
  for (const auto& c : cases) {  // no structured bindings: clang 14 cannot capture them in doctest's macros
    const std::string& args = c.first;
    const std::string& expected = c.second;
    auto r = run_ptsim(args);
    CHECK_MESSAGE(r.exit_code == 2, args << "\n" << r.output);
    CHECK_MESSAGE(r.output.find(expected) != std::string::npos, args << "\n" << r.output);
  }
}
