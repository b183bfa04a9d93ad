// tests/cli/test_cli_predict_graph.cpp — `ptsim graph`, `predict`, `calibrate`, `validate` through the
// real binary: outputs parse, bad input exits 2 with a message naming what was wrong.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run_command.hpp"

using ptsim::test::run_ptsim;

namespace {
nlohmann::json json_of(const std::string& text) { return nlohmann::json::parse(text); }
}  // namespace

TEST_CASE("ptsim with no or an unknown command exits 2; --help exits 0") {
  CHECK(run_ptsim("").exit_code == 2);
  auto unknown = run_ptsim("frobnicate");
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.output.find("unknown command 'frobnicate'") != std::string::npos);
  CHECK(run_ptsim("--help").exit_code == 0);
  CHECK(run_ptsim("graph --help").exit_code == 0);
}

TEST_CASE("ptsim graph: table, json and dot") {
  auto table = run_ptsim("graph --model bert-tiny --micro-batch 2 --seq-len 32");
  REQUIRE(table.exit_code == 0);
  CHECK(table.output.find("memory plan") != std::string::npos);
  auto json = run_ptsim("graph --model bert-tiny --micro-batch 2 --seq-len 32 --format json");
  REQUIRE(json.exit_code == 0);
  auto j = json_of(json.output);
  CHECK(j["parameters"].get<int64_t>() > 4'000'000);  // bert-tiny ≈ 4.4 M with its 30,522-token vocab
  CHECK(j["flops_by_phase"].contains("backward"));
  CHECK(j["memory"]["total_bytes"].get<double>() > 0);
  auto dot = run_ptsim("graph --model bert-tiny --micro-batch 1 --seq-len 32 --format dot");
  REQUIRE(dot.exit_code == 0);
  CHECK(dot.output.rfind("digraph taskgraph", 0) == 0);
}

TEST_CASE("bad flags and bad model files exit 2 with a message") {
  auto zero = run_ptsim("graph --model bert-tiny --micro-batch 0");
  CHECK(zero.exit_code == 2);
  CHECK(zero.output.find("--micro-batch is 0, expected an integer in [1, 1048576]") != std::string::npos);
  auto nan = run_ptsim("graph --model bert-tiny --micro-batch abc");
  CHECK(nan.exit_code == 2);
  CHECK(nan.output.find("--micro-batch") != std::string::npos);
  auto precision = run_ptsim("graph --model bert-tiny --precision fp4");
  CHECK(precision.exit_code == 2);
  CHECK(precision.output.find("unknown precision 'fp4'") != std::string::npos);
  auto format = run_ptsim("graph --model bert-tiny --format yaml");
  CHECK(format.exit_code == 2);
  auto unknown_flag = run_ptsim("predict --modle bert-large");
  CHECK(unknown_flag.exit_code == 2);
  CHECK(unknown_flag.output.find("--modle") != std::string::npos);

  auto dir = std::filesystem::temp_directory_path() / "ptsim_cli_models";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "bad.json") << R"({"name": "bad", "family": "bert", "num_layers": -2, "hidden_size": 64,
                                         "num_heads": 2, "vocab_size": 100})";
  auto bad = run_ptsim("graph --model " + (dir / "bad.json").string());
  CHECK(bad.exit_code == 2);
  CHECK(bad.output.find("bad.json: field 'num_layers': expected an integer in [1, 10000]") != std::string::npos);
  auto missing = run_ptsim("graph --model /nonexistent/model.json");
  CHECK(missing.exit_code == 2);
  auto too_long = run_ptsim("graph --model bert-tiny --seq-len 1024");
  CHECK(too_long.exit_code == 2);
  CHECK(too_long.output.find("exceeds the model's 512 position embeddings") != std::string::npos);
}

TEST_CASE("ptsim predict on one GPU: table and json; configurations that do not fit exit 2") {
  auto table = run_ptsim("predict --model bert-large --gpu v100-sxm3-32gb --seq-len 128 --micro-batch 64 --precision fp16");
  REQUIRE(table.exit_code == 0);
  CHECK(table.output.find("sequences/s") != std::string::npos);
  CHECK(table.output.find("MFU") != std::string::npos);
  auto json = run_ptsim("predict --model bert-large --gpu v100-sxm3-32gb --seq-len 128 --micro-batch 64 --format json");
  REQUIRE(json.exit_code == 0);
  auto j = json_of(json.output);
  // Sanity bounds, not a validation: a V100 cannot exceed its 130 TFLOP/s peak, MFU is a fraction.
  CHECK(j["tflops_per_gpu"].get<double>() > 10);
  CHECK(j["tflops_per_gpu"].get<double>() < 130);
  CHECK(j["mfu"].get<double>() < 1);
  CHECK(j["seconds_by_kind"].size() > 10);

  auto refused = run_ptsim("predict --model bert-large --gpu t4 --seq-len 512 --micro-batch 32 --precision fp16 --optimizer lamb");
  CHECK(refused.exit_code == 2);
  CHECK(refused.output.find("does not fit on t4") != std::string::npos);
  CHECK(refused.output.find("try: --micro-batch") != std::string::npos);
  CHECK(run_ptsim("predict --model bert-large --gpu t4 --seq-len 512 --micro-batch 4").exit_code == 0);

  auto gpu = run_ptsim("predict --gpu no-such-gpu");
  CHECK(gpu.exit_code == 2);
  CHECK(gpu.output.find("no-such-gpu") != std::string::npos);
  auto bf16 = run_ptsim("predict --gpu t4 --precision bf16 --micro-batch 4");
  CHECK(bf16.exit_code == 2);
  CHECK(bf16.output.find("no bf16") != std::string::npos);
}

TEST_CASE("ptsim validate and calibrate print every published single-GPU run") {
  auto validate = run_ptsim("validate --format json");
  REQUIRE(validate.exit_code == 0);
  auto j = json_of(validate.output);
  CHECK(j["single_gpu_runs"].size() == 14);  // calibration/data/published_single_gpu.json: 6 V100/T4 + 8 A100 runs
  CHECK(j["stacks"].size() == 3);             // the stacks those runs fit: 2019 Apex, NGC 20.06, NGC 21.11 + LDDL
  auto calibrate = run_ptsim("calibrate published");
  REQUIRE(calibrate.exit_code == 0);
  CHECK(calibrate.output.find("holdout") != std::string::npos);
  CHECK(run_ptsim("calibrate").exit_code == 2);  // a subcommand is required
}
