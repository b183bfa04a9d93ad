// tests/cli/test_cli_plan.cpp — `ptsim plan` through the binary: the best plan and the line that runs it,
// JSON with every layout, --out, and exit 2 for a model no layout holds (with the fix) and for bad flags.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run_command.hpp"
#include "tests/support/temp_dir.hpp"

using ptsim::test::run_ptsim;

namespace {

// GPT-2 124M on 4 A100s (the brute-forced case of tests/reports/test_plan_search.cpp).
std::string small_scenario(const std::filesystem::path& dir) {
  const auto file = dir / "small-gpt.json";
  std::ofstream(file) << R"({"name": "small-gpt", "model": "gpt2-124m",
    "cluster": {"node": "dgx-a100", "nodes": 1, "gpus_per_node": 4},
    "recipe": {"precision": "bf16", "optimizer": "adamw"},
    "phases": [{"name": "pretraining", "seq_len": 256, "micro_batch": 4, "global_batch": 16, "steps": 1000}]})";
  return file.string();
}

}  // namespace

TEST_CASE("ptsim plan: the best plan, the predict line that runs it, the runners-up") {
  ptsim::test::TempDir dir("cli_plan");
  const std::string file = small_scenario(dir.path);
  auto r = run_ptsim("plan " + file + " --top 5");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  CHECK(r.output.find("small-gpt: best plan TP ") == 0);
  CHECK(r.output.find("run it: ptsim predict --scenario " + file + " --set recipe.tensor_parallel=") != std::string::npos);
  CHECK(r.output.find("fastest that fits") != std::string::npos);
  CHECK(r.output.find("(not listed: ") != std::string::npos);
  // The printed line predicts: run it.
  const size_t at = r.output.find("run it: ptsim ") + std::string("run it: ptsim ").size();
  auto predicted = run_ptsim(r.output.substr(at, r.output.find('\n', at) - at));
  CHECK_MESSAGE(predicted.exit_code == 0, predicted.output);
}

TEST_CASE("ptsim plan --format json --out: every layout with its verdict, written atomically") {
  ptsim::test::TempDir dir("cli_plan_json");
  const std::string file = small_scenario(dir.path);
  const auto out = dir.path / "plan.json";
  auto r = run_ptsim("plan " + file + " --format json --out " + out.string());
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  std::ifstream in(out);
  const auto j = nlohmann::json::parse(in);
  CHECK(j["schema"] == "ptsim.plan.v1");
  REQUIRE(j["layouts"].size() > 10);
  CHECK(j["layouts"][0]["verdict"] == "best");
  CHECK(j["run_with"].size() >= 5);
  // Every searched axis is in each row and named in its why-not: ZeRO-3 and sequence parallelism among them
  // (4 A100s of one node: D up to 4, T up to 4).
  int zero3 = 0, sequence_parallel = 0, named = 0;
  for (const auto& row : j["layouts"]) {
    REQUIRE(row.contains("shard_group"));
    zero3 += row["zero_stage"] == 3;
    sequence_parallel += row["sequence_parallel"] == true;
    named += row["why"].get<std::string>().find("% slower") != std::string::npos;
  }
  CHECK(zero3 > 0);
  CHECK(sequence_parallel > 0);
  CHECK(named > 0);
  auto text = run_ptsim("plan " + file + " --top 1000");
  CHECK(text.output.find(", ZeRO-3, ") != std::string::npos);
  CHECK(text.output.find(", SP, ") != std::string::npos);
}

TEST_CASE("ptsim plan refuses with the fix: GPT-3 175B on one node; bad flags are exit 2") {
  auto r = run_ptsim("plan gpt3-175b-1024gpu --set cluster.nodes=1");
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(r.output.find("no plan fits gpt3-175b") != std::string::npos, r.output);
  CHECK_MESSAGE(r.output.find("fix: more GPUs") != std::string::npos, r.output);
  CHECK(run_ptsim("plan").exit_code == 2);  // the scenario is required
  CHECK(run_ptsim("plan no-such-scenario").exit_code == 2);
  auto top = run_ptsim("plan gpt3-175b-1024gpu --format json --top 3");
  CHECK(top.exit_code == 2);
  CHECK(top.output.find("--top shapes the table") != std::string::npos);
}
