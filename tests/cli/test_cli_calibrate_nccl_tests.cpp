// tests/cli/test_cli_calibrate_nccl_tests.cpp — `ptsim calibrate nccl-tests` through the binary: a table
// `ptsim collective` printed is read back and fitted, --out writes a loadable network profile with the
// provenance, --format json, and exit 2 for bad flags and files.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "hwprofiles/profiles.hpp"
#include "tests/support/run_command.hpp"

using ptsim::test::run_ptsim;

namespace {

std::string temp_path(const std::string& name) { return (std::filesystem::temp_directory_path() / name).string(); }

std::string root() {
  const char* r = std::getenv("PTSIM_ROOT");
  REQUIRE(r != nullptr);
  return r;
}

}  // namespace

TEST_CASE("ptsim collective's own table fits back to the profile it came from, and --out writes a loadable profile") {
  const std::string table = temp_path("ptsim_cli_nccl_table.txt"), out = temp_path("ptsim-fitted-edr.json");
  auto predicted = run_ptsim("collective --node dgx-1 --nodes 2 --network ib-edr -b 8 -e 256M -f 4");
  REQUIRE(predicted.exit_code == 0);
  std::ofstream(table) << predicted.output;
  auto r = run_ptsim("calibrate nccl-tests " + table + " --node dgx-1 --nodes 2 --network ib-edr --out " + out);
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  // The shipped ib-edr values predicted the table exactly, so the fit stays there (1.5 us, 0.9) and the
  // typical error is the table's own rounding (times printed to 0.01 us).
  CHECK(r.output.find("latency            1.50 us -> 1.50 us") != std::string::npos);
  CHECK(r.output.find("achieved fraction  0.900 -> 0.900") != std::string::npos);
  CHECK(r.output.find("wrote " + out) != std::string::npos);
  const auto profile = ptsim::hwprofiles::load_network_profile(out);
  CHECK(profile.achieved_fraction == doctest::Approx(0.9).epsilon(1e-3));
  CHECK(profile.latency_seconds == doctest::Approx(1.5e-6).epsilon(1e-3));
  CHECK(profile.sources.at("latency").find("fitted by ptsim calibrate nccl-tests on ptsim_cli_nccl_table.txt") !=
        std::string::npos);
  auto json = run_ptsim("calibrate nccl-tests " + table + " --node dgx-1 --nodes 2 --network ib-edr --format json");
  REQUIRE(json.exit_code == 0);
  const auto j = nlohmann::json::parse(json.output);
  CHECK(j.at("rows").size() == 13);  // 8 B × 4^k up to 256 MiB: 8 B, 32 B, ..., 128 MiB
  CHECK(j.at("network") == "ib-edr");
  std::filesystem::remove(table);
  std::filesystem::remove(out);
}

TEST_CASE("calibrate nccl-tests: bad flags and files are exit 2 naming what was wrong") {
  const std::string sample = root() + "/calibration/data/nccl-tests/ring-512M-8G-excerpt.txt";
  const std::string bad = temp_path("ptsim_cli_nccl_bad.txt");
  std::ofstream(bad) << "#  size count type redop root time algbw busbw #wrong time algbw busbw #wrong\n"
                        "8 2 float sum -1 40.6 0.00 0.00 0 45.0\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"calibrate nccl-tests " + sample + " --nodes 2", "--node is required"},
      {"calibrate nccl-tests " + sample + " --node dgx-1 --nodes 1", "--nodes: Value 1 not in range"},
      {"calibrate nccl-tests /nonexistent/out.txt --node dgx-1 --nodes 2", "cannot be opened"},
      {"calibrate nccl-tests " + bad + " --node dgx-1 --nodes 2", "line 2: 10 columns"},
      {"calibrate nccl-tests " + sample + " --node dgx-1 --nodes 2 --op alltoall", "--op 'alltoall'"},
      {"calibrate nccl-tests " + sample + " --node dgx-1 --nodes 2 --op all_gather", "redop 'sum' does not fit"},
      {"calibrate nccl-tests " + sample + " --node dgx-1 --nodes 2 --algorithm fastest", "--algorithm 'fastest'"},
      {"calibrate nccl-tests " + sample + " --node dgx-1 --nodes 2 --network no-such-net", "no-such-net"},
      {"calibrate nccl-tests " + sample + " --node dgx-1 --nodes 2 --out /nonexistent-dir/x.json", "--out"},
  };
  for (const auto& c : cases) {  // no structured bindings: clang 14 cannot capture them in doctest's macros
    const std::string& args = c.first;
    const std::string& expected = c.second;
    auto r = run_ptsim(args);
    CHECK_MESSAGE(r.exit_code == 2, args << "\n" << r.output);
    CHECK_MESSAGE(r.output.find(expected) != std::string::npos, args << "\n" << r.output);
  }
  std::filesystem::remove(bad);
}
