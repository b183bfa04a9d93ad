// tests/cli/test_bad_flags.cpp — bad recipe flags and flags that do not apply, through the real binary:
// each row is exit 2 naming the flag, the value and the range (docs/input-ranges.md), or the flag and what
// to use instead (docs/cli.md). Flags that once were silently dropped are issue #9's examples.
#include <doctest/doctest.h>

#include "tests/support/bad_inputs.hpp"

using ptsim::test::check_all_refused;

TEST_CASE("recipe flags outside their range") {
  check_all_refused({
      {"micro-batch int64 max", "graph --model bert-tiny --micro-batch 9223372036854775807",
       {"--micro-batch is 9223372036854775807", "[1, 1048576]"}},
      {"micro-batch zero", "graph --model bert-tiny --micro-batch 0", {"--micro-batch is 0"}},
      {"grad-accum negative", "graph --model bert-tiny --grad-accum -1", {"--grad-accum is -1", "[1, 16777216]"}},
      {"seq-len huge", "graph --model bert-tiny --seq-len 2000000", {"--seq-len is 2000000", "[1, 1048576]"}},
      {"bucket-mib zero", "graph --model bert-tiny --bucket-mib 0", {"--bucket-mib is 0", "(0, 1048576]"}},
      {"max-predictions negative", "graph --model bert-tiny --max-predictions -1", {"--max-predictions is -1"}},
      {"tensor-parallel zero", "graph --model bert-tiny --tensor-parallel 0", {"--tensor-parallel is 0"}},
      {"predict --gpu micro-batch", "predict --gpu t4 --model bert-tiny --micro-batch 9223372036854775807",
       {"--micro-batch is 9223372036854775807"}},
      {"--nodes beyond int", "predict --node dgx-1 --nodes 4294967297", {"--nodes"}},
      {"--nodes beyond range", "predict --node dgx-1 --nodes 2000000",
       {"--nodes is 2000000", "[1, 100000]"}},
      {"--micro-batch with --node", "predict --node dgx-1 --micro-batch 0", {"--micro-batch is 0"}},
      {"--steps zero", "predict --node dgx-1 --steps 0", {"--steps is 0", "[1, 1099511627776]"}},
      {"fp8 on an A100", "predict --gpu a100-40gb --model bert-tiny --precision fp8",
       {"GPU 'a100-40gb' has no fp8 tensor-core math", "it supports fp32, tf32, fp16, bf16"}},
      {"fp8 on a V100 node", "predict --node dgx-1 --model bert-tiny --precision fp8 --steps 10",
       {"has no fp8 tensor-core math", "it supports fp32, fp16"}},
  });
}

TEST_CASE("issue #9: flags that do not apply are errors, never silently dropped") {
  check_all_refused({
      {"--micro-batch with --scenario", "predict --scenario t4-academic-cluster --micro-batch 8",
       {"--micro-batch (use --set phases.0.micro_batch=N)"}},
      {"--model with --scenario", "predict --scenario t4-academic-cluster --model bert-base", {"--model (use --set model=NAME)"}},
      {"--precision with --scenario", "predict --scenario t4-academic-cluster --precision fp32", {"--precision"}},
      {"--steps with --scenario", "predict --scenario t4-academic-cluster --steps 5", {"--steps (use --set phases.0.steps=N)"}},
      {"several at once", "predict --scenario t4-academic-cluster --seq-len 512 --grad-accum 2",
       {"these flags are not used", "--seq-len", "--grad-accum"}},
      {"--nodes without --node", "predict --nodes 4", {"--nodes (use --set cluster.nodes=N)"}},
      {"--network without --node", "predict --network ib-edr", {"--network (use --set cluster.network=NAME)"}},
      {"--set with --gpu", "predict --gpu t4 --set cluster.nodes=2", {"ptsim predict --gpu", "--set"}},
      {"--trace with --gpu", "predict --gpu t4 --trace /tmp/never-written.json", {"--trace"}},
      {"--steps with --gpu", "predict --gpu t4 --steps 10", {"--steps (--gpu predicts one step)"}},
      {"--nodes with --gpu", "predict --gpu t4 --nodes 2", {"--nodes"}},
      {"--no-dropout with --node", "predict --node dgx-1 --no-dropout", {"--no-dropout"}},
      {"--data-parallel with --node", "predict --node dgx-1 --data-parallel 8", {"--data-parallel"}},
  });
}

TEST_CASE("flags that do apply are applied: --set with --node edits the scenario built from the flags") {
  const auto r = ptsim::test::run_ptsim("predict --node dgx-1 --model bert-base --steps 10 --set cluster.nodes=2 --format json");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("\"gpus\": 16") != std::string::npos);  // 2 DGX-1 × 8 V100
}

TEST_CASE("sweep and data flags: NaN, numbers beyond 64 bits and the documented ranges (tools/cli_support.hpp)") {
  // CLI::PositiveNumber let NaN through (a "budget $nan" sweep), saturated 10^20 to INT64_MAX, and spelled
  // DBL_MAX out in full in its message; --threads 100000 started a worker per configuration (~2 MB each).
  check_all_refused({
      {"--budget-usd nan", "sweep --vary cluster.nodes=1,2 --budget-usd nan",
       {"--budget-usd: expected a positive finite number, got 'nan'"}},
      {"--budget-usd inf", "sweep --vary cluster.nodes=1,2 --budget-usd inf", {"got 'inf'"}},
      {"--max-gpus beyond 64 bits", "sweep --vary cluster.nodes=1,2 --max-gpus 99999999999999999999",
       {"--max-gpus: expected an integer >= 1, got '99999999999999999999'"}},
      {"--top zero", "sweep --vary cluster.nodes=1,2 --top 0", {"--top: expected an integer >= 1, got '0'"}},
      {"--threads huge", "sweep --vary cluster.nodes=1,2 --threads 100000",
       {"--threads: expected an integer in [1, 1024]", "got '100000'"}},
      {"--vocab-size beyond the vocab range",
       "data vocab --corpus /tmp/never-read.txt --out /tmp/never-written.txt --vocab-size 1099511627776",
       {"--vocab-size: expected an integer in [1, 16777216]", "got '1099511627776'"}},
      {"--vocab-size zero", "data vocab --corpus /tmp/never-read.txt --out /tmp/never-written.txt --vocab-size 0",
       {"--vocab-size: expected an integer in [1, 16777216]", "got '0'"}},
      {"--min-pair-count fraction",
       "data vocab --corpus /tmp/never-read.txt --out /tmp/never-written.txt --min-pair-count 1.5",
       {"--min-pair-count: expected an integer >= 1, got '1.5'"}},
      {"inspect --index negative", "data inspect /tmp/never-read --index -1", {"--index: expected an integer >= 0, got '-1'"}},
  });
}

TEST_CASE("serve --timeout nan is exit 2 before any server starts") {
  // CLI::Range(0.1, 3600) let NaN through and the server started; `timeout 10` ends it if that comes back
  // (exit 124), so a regression fails here instead of hanging the suite.
  const auto r = ptsim::test::run_command("timeout 10 " + std::string(PTSIM_BINARY) + " serve --port 0 --timeout nan 2>&1");
  INFO("output: ", r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--timeout: expected a number in [0.1, 3600], got 'nan'") != std::string::npos);
}

TEST_CASE("integer flags are decimal: a leading zero is not octal; base prefixes and wrapped signs are refused") {
  // CLI11 reads integers with base detection: --nodes 010 ran 8 nodes, --vocab-size 0100 made 64 tokens, and a
  // seed of -1 or 2^64 wrapped or saturated (the hostile pass of 2026-12-07; tools/cli_support.hpp).
  const auto r = ptsim::test::run_ptsim("predict --node dgx-1 --nodes 010 --model bert-tiny --steps 10 --format json");
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("\"gpus\": 80") != std::string::npos);  // 10 nodes × 8 V100, not 8 × 8
  check_all_refused({
      {"hex --nodes", "predict --node dgx-1 --nodes 0x10", {"--nodes", "expected a decimal integer", "'0x10'"}},
      {"seed -1", "data prepare --corpus /tmp/never-read.txt --vocab /tmp/never-read-vocab.txt --out /tmp/never-written "
                  "--seed -1",
       {"--seed: expected a decimal integer in [0, 2^64), got '-1'"}},
      {"seed 2^64", "data prepare --corpus /tmp/never-read.txt --vocab /tmp/never-read-vocab.txt --out /tmp/never-written "
                    "--seed 18446744073709551616",
       {"--seed: expected a decimal integer in [0, 2^64), got '18446744073709551616'"}},
      {"--steps with a sign inside", "predict --node dgx-1 --steps 1-0", {"--steps", "'1-0'"}},
  });
}

TEST_CASE("collective: an algorithm the model lacks for an op is exit 2 naming both (was an internal error)") {
  check_all_refused({
      {"all_gather tree", "collective --node dgx-a100 --nodes 2 --op all_gather --algorithm tree",
       {"--algorithm tree with --op all_gather: expected auto or ring"}},
      {"broadcast hierarchical", "collective --node dgx-a100 --nodes 2 --op broadcast --algorithm hierarchical",
       {"--algorithm hierarchical with --op broadcast"}},
      {"step factor inf", "collective --node dgx-a100 --nodes 2 -f inf", {"--step-factor inf"}},
  });
}

TEST_CASE("flags that were accepted and ignored, or wrapped, are exit 2 naming the flag (hostile pass, R12)") {
  check_all_refused({
      {"train --threads 100000", "train --data /tmp/never-read --model bert-tiny --threads 100000",
       {"--threads: expected an integer in [0, 1024] (0: all cores), got '100000'"}},
      {"prepare --max-predictions -1",
       "data prepare --corpus /tmp/never-read.txt --vocab /tmp/never-read-vocab.txt --out /tmp/never-written "
       "--max-predictions -1",
       {"--max-predictions: expected an integer >= 1, got '-1'"}},
      {"graph --ops without json", "graph --model bert-tiny --ops", {"--ops lists every op in the JSON", "--format json"}},
      {"sweep --deadline ''", "sweep --vary cluster.nodes=1,2 --deadline ''", {"--deadline ''"}},
      {"sweep over an unknown model", "sweep --vary model=nosuch,bert-base",
       {"--vary model: value \"nosuch\" is not usable", "nosuch"}},
  });
}
