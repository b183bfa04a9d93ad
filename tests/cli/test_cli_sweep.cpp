// tests/cli/test_cli_sweep.cpp — `ptsim sweep` through the binary: the T4-lab question of the README tour,
// JSON/CSV shapes, sweep files, --out, exit 2 for malformed axes and contradictory flags; and (built with
// MPI, mpirun found) 2 ranks give the 1-rank answer exactly.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

using ptsim::test::run_ptsim;

namespace {

const char* kSmallSweep = "sweep --vary cluster.nodes=2,4 --vary cluster.network=10gbe-tcp,ib-edr --no-progress";

}  // namespace

TEST_CASE("the T4-lab question in one command: frontier and recommended plan") {
  // Two node counts, not the README's six, and BERT-base, not BERT-large: --auto-recipe plans every layout
  // of every configuration (about 7 s of CPU each for BERT-base on 16–32 T4s, docs/planning.md).
  auto r = run_ptsim("sweep --scenario t4-academic-cluster --set model=bert-base --vary cluster.nodes=2..4x2 "
                     "--vary cluster.network=10gbe-tcp,ib-edr --auto-recipe --deadline 21d --budget-usd 30000 --no-progress");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("4 configurations, 4 feasible") != std::string::npos);
  CHECK(r.output.find("recommended:") != std::string::npos);
  CHECK(r.output.find("cheapest meeting deadline:") != std::string::npos);
  CHECK(r.output.find("time-rental frontier") != std::string::npos);
  CHECK(r.output.find("micro-batch") != std::string::npos);  // the auto-recipe's notes
  CHECK(r.output.find("plan: TP ") != std::string::npos);
}

TEST_CASE("JSON output: schema, counts, frontier indices that exist") {
  auto r = run_ptsim(std::string(kSmallSweep) + " --format json");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  auto j = nlohmann::json::parse(r.output);
  CHECK(j["schema"] == "ptsim.sweep.v1");
  CHECK(j["counts"]["configurations"] == 4);
  REQUIRE(j["configurations"].size() == 4);
  for (const auto& i : j["frontier"]["rental"]) CHECK(j["configurations"][i.get<size_t>()]["on_frontier"]["rental"] == true);
  CHECK(j["configurations"][1]["settings"]["cluster.network"] == "ib-edr");
  CHECK(j["recommended"].is_number());
}

TEST_CASE("CSV output: a header and one row per configuration, infeasible ones with their reason") {
  auto r = run_ptsim("sweep --vary recipe.precision=fp16,bf16 --set cluster.nodes=2 --format csv --no-progress");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  std::istringstream lines(r.output);
  std::string header, fp16, bf16;
  std::getline(lines, header);
  std::getline(lines, fp16);
  std::getline(lines, bf16);
  CHECK(header.find("index,recipe.precision,feasible,infeasible_kind,reason,gpus") == 0);
  CHECK(fp16.find("0,fp16,1,,") == 0);
  CHECK(bf16.find("1,bf16,0,precision,") == 0);
}

TEST_CASE("a sweep file says the same as the flags; --out writes it atomically") {
  ptsim::test::TempDir dir("cli_sweep_file");
  const auto file = dir.path / "sweep.json";
  std::ofstream(file) << R"({"base": "t4-academic-cluster", "axes": [{"key": "cluster.nodes", "values": [2, 4]},
    {"key": "cluster.network", "values": ["10gbe-tcp", "ib-edr"]}], "deadline": "30d", "objective": "rental"})";
  auto from_file = run_ptsim("sweep --file " + file.string() + " --format json --no-progress");
  auto from_flags = run_ptsim(std::string(kSmallSweep) + " --deadline 30d --format json");
  REQUIRE_MESSAGE(from_file.exit_code == 0, from_file.output);
  CHECK(nlohmann::json::parse(from_file.output)["configurations"] == nlohmann::json::parse(from_flags.output)["configurations"]);
  const auto out = dir.path / "out.csv";
  auto written = run_ptsim(std::string(kSmallSweep) + " --format csv --out " + out.string());
  REQUIRE_MESSAGE(written.exit_code == 0, written.output);
  CHECK(std::filesystem::file_size(out) > 100);
}

TEST_CASE("malformed axes, constraints and contradictory flags are exit 2 before any work") {
  struct Case {
    std::string args, expected;
  };
  const std::vector<Case> cases = {
      {"sweep --vary cluster.nodes=64..8", "ends before it starts"},
      {"sweep --vary cluster.nodse=8,16", "--vary cluster.nodse"},
      {"sweep --vary cluster.network=10gbe-tcp,no-such-net", "no-such-net"},
      {"sweep --vary cluster.nodes=8 --deadline soon", "--deadline 'soon'"},
      {"sweep --vary cluster.nodes=8 --objective cheapest", "--objective 'cheapest'"},
      {"sweep --vary cluster.nodes=8 --budget-usd -5", "--budget-usd"},
      {"sweep --vary phases.0.micro_batch=8,16 --auto-recipe", "--auto-recipe chooses"},
      {"sweep --file /nonexistent/sweep.json", "/nonexistent/sweep.json"},
      {"sweep --file x.json --vary cluster.nodes=8", "--vary and --file"},
      {"sweep --vary cluster.nodes=8 --top 5 --format csv", "--top applies to --format table"},
      {"sweep", "nothing to vary"},
  };
  for (const auto& c : cases) {
    auto r = run_ptsim(c.args + " --no-progress");
    CHECK_MESSAGE(r.exit_code == 2, c.args << "\n" << r.output);
    CHECK_MESSAGE(r.output.find(c.expected) != std::string::npos, c.args << "\n" << r.output);
    CHECK(r.output.find("internal error") == std::string::npos);
  }
}

#ifdef PTSIM_MPIRUN
TEST_CASE("under mpirun, 2 ranks split the configurations and rank 0 writes the 1-rank answer") {
  const std::string args = std::string(kSmallSweep) + " --vary recipe.precision=fp16,fp32 --format json --threads 1";
  auto one = run_ptsim(args);
  REQUIRE_MESSAGE(one.exit_code == 0, one.output);
  const std::string mpirun = std::string(PTSIM_MPIRUN) + " --allow-run-as-root --oversubscribe -np 2 " + PTSIM_BINARY;
  FILE* pipe = popen((mpirun + " " + args + " 2>/dev/null").c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string two;
  char buffer[4096];
  size_t n = 0;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) two.append(buffer, n);
  CHECK(pclose(pipe) == 0);
  // Every figure is a pure function of the configuration, so the gathered answer equals the serial one.
  CHECK(nlohmann::json::parse(two) == nlohmann::json::parse(one.output));
}
#endif
