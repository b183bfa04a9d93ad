// tests/cli/test_cli_scenarios.cpp — `ptsim predict --scenario`, `--set`, `--trace`, cluster-from-flags,
// and `ptsim validate` through the real binary.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "tests/support/run_command.hpp"

using ptsim::test::run_ptsim;

TEST_CASE("predict with no arguments runs the default scenario (the README's main job)") {
  auto r = run_ptsim("predict --format json");
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.output);
  CHECK(j["scenario"] == "t4-academic-cluster");
  CHECK(j["gpus"] == 256);
  CHECK(j["phases"].size() == 2);
  CHECK(j["cost"]["rental_usd"].get<double>() > 0);
  CHECK(j["simulator_wall_seconds"].get<double>() > 0);
}

TEST_CASE("--set overrides and a cluster from flags") {
  auto base = nlohmann::json::parse(run_ptsim("predict --scenario t4-academic-cluster --format json").output);
  auto r = run_ptsim("predict --scenario t4-academic-cluster --set cluster.network=ib-edr --format json");
  REQUIRE(r.exit_code == 0);
  auto ib = nlohmann::json::parse(r.output);
  CHECK(ib["network"] == "ib-edr");
  CHECK(ib["time_to_train_seconds"].get<double>() < base["time_to_train_seconds"].get<double>());
  // The file's description names its own cluster (10 GbE); an edited run says it was edited, and by what.
  auto text = run_ptsim("predict --scenario t4-academic-cluster --set cluster.network=ib-edr");
  REQUIRE(text.exit_code == 0);
  CHECK(text.output.find("[edited: --set cluster.network=ib-edr]") != std::string::npos);
  auto flags = run_ptsim("predict --node dgx-1 --nodes 2 --model bert-base --micro-batch 16 --steps 100 --format json");
  REQUIRE(flags.exit_code == 0);
  auto f = nlohmann::json::parse(flags.output);
  CHECK(f["gpus"] == 16);
  CHECK(f["phases"][0]["steps"] == 100);
  auto bad = run_ptsim("predict --scenario t4-academic-cluster --set cluster.nodes=-3");
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("cluster.nodes") != std::string::npos);
  auto both = run_ptsim("predict --gpu t4 --scenario t4-academic-cluster");
  CHECK(both.exit_code == 2);
  auto file = std::filesystem::temp_directory_path() / "ptsim_bad_scenario.json";
  std::ofstream(file) << R"({"model": "bert-base", "phases": [{"steps": 1, "seqlen": 128}]})";
  auto unknown = run_ptsim("predict --scenario " + file.string());
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.output.find("unknown field 'seqlen'") != std::string::npos);
}

TEST_CASE("--trace writes a Chrome trace with compute and communication tracks and flow arrows") {
  auto path = std::filesystem::temp_directory_path() / "ptsim_trace.json";
  auto r = run_ptsim("predict --node dgx-1 --nodes 2 --model bert-base --micro-batch 16 --trace " + path.string());
  REQUIRE(r.exit_code == 0);
  std::ifstream in(path);
  auto j = nlohmann::json::parse(in);
  std::set<int> tids;
  int flows = 0, spans = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "X") {
      ++spans;
      tids.insert(e["tid"].get<int>());
      CHECK(e["dur"].get<double>() >= 0);
    }
    if (e["ph"] == "s") ++flows;
  }
  CHECK(tids == std::set<int>{0, 1});
  CHECK(spans > 500);
  CHECK(flows > 0);
}

TEST_CASE("validate prints every published target with its error") {
  auto r = run_ptsim("validate --format json");
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.output);
  CHECK(j["published_results"].size() >= 9);
  for (const auto& t : j["published_results"]) {
    CHECK(t.contains("error"));
    CHECK(!t["source"].get<std::string>().empty());
  }
  auto table = run_ptsim("validate");
  CHECK(table.output.find("dgx-superpod-47min") != std::string::npos);
  CHECK(table.output.find("known gap") != std::string::npos);
}

TEST_CASE("price sets and price errors through the binary (docs/cost-model.md)") {
  auto r = run_ptsim("predict --scenario bert-large-h100-cloud-2026 --set prices.set=gcp-current --format json");
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.output);
  CHECK(j["cost"]["rental_usd"].get<double>() > 0);
  CHECK(j["cost"]["spot_usd"].get<double>() > 0);  // Google's set has an H100 spot price
  CHECK(j["prices"]["used"][0]["price_set"] == "gcp-current");
  auto mismatch = run_ptsim("predict --scenario t4-academic-cluster --set prices.rental=aws-p3dn-24xlarge-on-demand");
  CHECK(mismatch.exit_code == 2);
  CHECK(mismatch.output.find("applies to node 'p3dn-24xlarge', but the scenario's node is 't4-8x-pcie'") !=
        std::string::npos);
  auto unknown = run_ptsim("predict --scenario bert-large-h100-cloud-2026 --set prices.set=cloud-2099");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.output.find("unknown price set 'cloud-2099'") != std::string::npos);
  auto ambiguous = run_ptsim("predict --scenario t4-academic-cluster --set prices.rental=\\\"\\\" --set prices.set=published-2019-2020");
  CHECK(ambiguous.exit_code == 2);
  CHECK(ambiguous.output.find("gcp-t4-on-demand-list-2020") != std::string::npos);
}

TEST_CASE("--grad-accum 10^6 is simulated in the time of a few micro-steps, linear in the accumulation") {
  // Issue #9: 10^6 micro-steps once took minutes. The repeated micro-steps are identical (no data-parallel
  // traffic until the last), so T(N) = T(3) + (N - 3) × (T(4) - T(3)) up to rounding (1e-6 relative).
  auto iteration = [](int64_t accum, double* wall = nullptr) {
    auto r = run_ptsim("predict --node dgx-1 --model bert-base --micro-batch 16 --steps 1 --format json --grad-accum " +
                       std::to_string(accum));
    REQUIRE(r.exit_code == 0);
    auto j = nlohmann::json::parse(r.output);
    if (wall) *wall = j["simulator_wall_seconds"].get<double>();
    return j["phases"][0]["iteration_seconds"].get<double>();
  };
  const double t3 = iteration(3), t4 = iteration(4);
  double wall = 0;
  const double t_million = iteration(1'000'000, &wall);
  CHECK(t_million == doctest::Approx(t3 + (1e6 - 3) * (t4 - t3)).epsilon(1e-6));
  CHECK(wall < 5.0);  // seconds: the 3-micro-step runs above take well under one
}
