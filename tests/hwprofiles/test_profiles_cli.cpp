// tests/hwprofiles/test_profiles_cli.cpp — `ptsim profiles list|show` through the built binary:
// exit codes (0 ok, 2 bad input) and that the output carries the figures and their sources.
#include <doctest/doctest.h>

#include <string>

#include "core/json_reader.hpp"
#include "tests/hwprofiles/profile_fixture.hpp"
#include "tests/support/run_command.hpp"

using ptsim::core::Json;
using ptsim::test::run_ptsim;
using ptsim::test::ScratchProfiles;

TEST_CASE("ptsim profiles list shows every kind") {
  auto r = run_ptsim("profiles list");
  REQUIRE(r.exit_code == 0);
  for (const char* name : {"t4", "v100-sxm3-32gb", "h200", "dgx-2h", "t4-8x-pcie", "p3dn-24xlarge", "10gbe-tcp",
                           "ib-edr", "gcp-t4-on-demand-2020", "dgx-2-purchase-2018"})
    CHECK_MESSAGE(r.output.find(name) != std::string::npos, name);
  CHECK(r.output.find("$31.212") != std::string::npos);  // p3dn.24xlarge on-demand (docs/references.md, Prices)
}

TEST_CASE("ptsim profiles list --format json is parseable and in SI units") {
  auto r = run_ptsim("profiles list --format json");
  REQUIRE(r.exit_code == 0);
  Json j = Json::parse(r.output);
  CHECK(j["gpus"].size() >= 10);
  CHECK(j["nodes"].size() >= 8);
  CHECK(j["networks"].size() >= 7);
  bool found = false;
  for (const auto& n : j["networks"])
    if (n["name"] == "10gbe-tcp") {
      found = true;
      CHECK(n["link_bytes_per_second"].get<double>() == doctest::Approx(1.25e9));  // 10 GbE = 1.25 GB/s
      CHECK(n["transport"] == "tcp_socket");
    }
  CHECK(found);
}

TEST_CASE("ptsim profiles show prints every field with its source") {
  auto r = run_ptsim("profiles show v100-sxm3-32gb");
  REQUIRE(r.exit_code == 0);
  for (const char* field : {"memory_bandwidth", "peak_fp16_tensor", "sustained_clock_fraction", "gemm.half_size",
                            "memory_bound.half_size", "power"})
    CHECK_MESSAGE(r.output.find(field) != std::string::npos, field);
  CHECK(r.output.find("130 TFLOP/s") != std::string::npos);  // docs/references.md: ~130 TFLOPS at 450 W
  CHECK(r.output.find("DGX-2H") != std::string::npos);       // the source text
  CHECK(r.output.find("initial estimate") != std::string::npos);

  auto j = run_ptsim("profiles show v100-sxm3-32gb --format json");
  REQUIRE(j.exit_code == 0);
  Json g = Json::parse(j.output);
  CHECK(g["peak_fp16_tensor_flops_per_second"].get<double>() == doctest::Approx(130e12));
  CHECK(g["sources"].contains("memory_bandwidth"));

  auto node = run_ptsim("profiles show t4-8x-pcie");
  REQUIRE(node.exit_code == 0);
  CHECK(node.output.find("pcie_tree") != std::string::npos);
  CHECK(node.output.find("$19500") != std::string::npos);  // T4 paper: ~$624K / 32 nodes
}

TEST_CASE("ptsim profiles: bad input exits 2 with an actionable message") {
  auto unknown = run_ptsim("profiles show v100-sxm9");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.output.find("unknown profile 'v100-sxm9'") != std::string::npos);
  CHECK(unknown.output.find("v100-sxm3-32gb") != std::string::npos);  // lists the valid names

  CHECK(run_ptsim("profiles list --format xml").exit_code == 2);
  CHECK(run_ptsim("profiles").exit_code == 2);
  CHECK(run_ptsim("profiles --help").exit_code == 0);
  CHECK(run_ptsim("profiles show --help").exit_code == 0);

  ScratchProfiles scratch;
  std::string file = scratch.edit("networks/10gbe-tcp.json", [](Json& j) { j["link_bandwidth"]["value"] = -10; });
  auto bad = run_ptsim("profiles list --dir " + scratch.dir());
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find(file + ": field 'link_bandwidth.value'") != std::string::npos);

  auto missing = run_ptsim("profiles list --dir " + scratch.path("no-such-dir"));
  CHECK(missing.exit_code == 2);
  CHECK(missing.output.find("not a hardware profile directory") != std::string::npos);
}
