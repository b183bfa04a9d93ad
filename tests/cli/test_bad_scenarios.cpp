// tests/cli/test_bad_scenarios.cpp — bad scenario files and --set overrides, through the real binary: each
// row is refused with exit 2 and a message naming the file, the field, the value and what was expected.
// The first rows are the examples of issue #9 (each once ran silently wrong or as "internal error").
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "tests/support/bad_inputs.hpp"
#include "tests/support/temp_dir.hpp"

using ptsim::test::BadInput;
using ptsim::test::check_all_refused;

namespace {

// A valid one-node scenario (8 V100s of a DGX-1, bert-base, 10 steps) with `cluster`, `recipe`, `phase`,
// `extra` spliced in: each case breaks exactly one thing.
std::string scenario(const std::string& cluster, const std::string& phase, const std::string& extra = "") {
  return R"({"model": "bert-base", "cluster": {"node": "dgx-1", )" + cluster + R"(}, "phases": [{)" + phase + "}]" +
         extra + "}";
}

std::string file_with(const std::string& name, const std::string& text) {
  const auto path = ptsim::test::process_temp_dir("bad_scenarios_" + name) / (name + ".json");
  std::ofstream(path) << text;
  return path.string();
}

BadInput file_case(const std::string& name, const std::string& text, std::vector<std::string> expected) {
  const std::string path = file_with(name, text);
  expected.insert(expected.begin(), path);  // the message names the file
  return {name, "predict --scenario " + path, std::move(expected)};
}

}  // namespace

TEST_CASE("the scenario fixture is valid, so each case below fails for its one change") {
  const auto r = ptsim::test::run_ptsim("predict --scenario " + file_with("valid", scenario(R"("nodes": 1)", R"("steps": 10)")));
  CHECK(r.exit_code == 0);
}

TEST_CASE("issue #9 examples: sizes beyond their range are exit 2 naming field, value and range") {
  check_all_refused({
      // Once ran as 8 GPUs (4294967297 narrowed to int is 1).
      file_case("nodes_beyond_int", scenario(R"("nodes": 4294967297)", R"("steps": 10)"),
                {"field 'cluster.nodes'", "expected an integer in [1, 100000]", "got 4294967297"}),
      // Once gave a global batch of -8 (the product wrapped).
      file_case("micro_batch_int64_max", scenario(R"("nodes": 1)", R"("steps": 10, "micro_batch": 9223372036854775807)"),
                {"field 'phases[0].micro_batch'", "[1, 1048576]", "got 9223372036854775807"}),
      // Once gave a negative time and cost.
      file_case("epochs_1e300", scenario(R"("nodes": 1)", R"("epochs": 1e300, "dataset_sequences": 1000)"),
                {"field 'phases[0].epochs'", "expected a number in (0, 1000000]", "got 1e+300"}),
      // Once "internal error": nlohmann's out_of_range escaped load_json_file.
      file_case("epochs_1e400", scenario(R"("nodes": 1)", R"("epochs": 1e400, "dataset_sequences": 1000)"),
                {"field 'phases[0].epochs'", "a number that does not fit a double"}),
      {"--set nodes beyond int", "predict --set cluster.nodes=4294967297",
       {"t4-academic-cluster.json: field 'cluster.nodes'", "got 4294967297"}},
      {"--set epochs 1e400", "predict --set phases.0.epochs=1e400",
       {"field 'phases[0].epochs'", "expected a number, got \"1e400\""}},
  });
}

TEST_CASE("range and type errors in every size-like scenario field") {
  check_all_refused({
      file_case("nodes_zero", scenario(R"("nodes": 0)", R"("steps": 1)"), {"field 'cluster.nodes'", "got 0"}),
      file_case("nodes_fraction", scenario(R"("nodes": 2.5)", R"("steps": 1)"), {"field 'cluster.nodes'", "got 2.5"}),
      file_case("gpus_per_node_huge", scenario(R"("gpus_per_node": 5000)", R"("steps": 1)"),
                {"field 'cluster.gpus_per_node'", "[1, 1024]", "got 5000"}),
      file_case("nodes_per_leaf_negative", scenario(R"("fabric": {"nodes_per_leaf": -2})", R"("steps": 1)"),
                {"field 'cluster.fabric.nodes_per_leaf'", "[0, 100000]", "got -2"}),
      file_case("channels_negative", scenario(R"("nodes": 1)", R"("steps": 1)", R"(, "recipe": {"channels": -1})"),
                {"field 'recipe.channels'", "[0, 1024]", "got -1"}),
      file_case("tensor_parallel_zero", scenario(R"("nodes": 1)", R"("steps": 1)", R"(, "recipe": {"tensor_parallel": 0})"),
                {"field 'recipe.tensor_parallel'", "got 0"}),
      file_case("bucket_mib_huge", scenario(R"("nodes": 1)", R"("steps": 1)", R"(, "recipe": {"bucket_mib": 1e12})"),
                {"field 'recipe.bucket_mib'", "(0, 1048576]"}),
      file_case("checkpoint_every_negative",
                scenario(R"("nodes": 1)", R"("steps": 1)", R"(, "overheads": {"checkpoint_every_steps": -5})"),
                {"field 'overheads.checkpoint_every_steps'", "got -5"}),
      file_case("startup_huge", scenario(R"("nodes": 1)", R"("steps": 1)", R"(, "overheads": {"startup_seconds": 1e300})"),
                {"field 'overheads.startup_seconds'", "[0, 1000000000]"}),
      file_case("seq_len_huge", scenario(R"("nodes": 1)", R"("steps": 1, "seq_len": 2000000)"),
                {"field 'phases[0].seq_len'", "got 2000000"}),
      file_case("grad_accum_zero", scenario(R"("nodes": 1)", R"("steps": 1, "grad_accum": 0)"),
                {"field 'phases[0].grad_accum'", "got 0"}),
      file_case("steps_beyond_range", scenario(R"("nodes": 1)", R"("steps": 18446744073709551615)"),
                {"field 'phases[0].steps'", "got 18446744073709551615"}),
      file_case("max_predictions_negative", scenario(R"("nodes": 1)", R"("steps": 1, "max_predictions": -1)"),
                {"field 'phases[0].max_predictions'", "got -1"}),
      // In range one by one, but epochs × sequences ÷ batch = 4e18 steps: beyond the steps range.
      file_case("derived_steps_beyond_range",
                scenario(R"("nodes": 1)", R"("epochs": 1000000, "dataset_sequences": 1e15, "micro_batch": 32)"),
                {"field 'phases[0].epochs'", "steps, expected an integer in [1, 1099511627776]"}),
      // 2^20 × 2^24 × 1000 nodes × 8 GPUs = 2^44 × 8000 sequences per step: beyond the global-batch range.
      file_case("global_batch_product_beyond_range",
                scenario(R"("nodes": 1000)", R"("steps": 1, "micro_batch": 1048576, "grad_accum": 16777216)"),
                {"phases[0].micro_batch' × grad_accum × data-parallel ranks", "[1, 1099511627776]"}),
      file_case("scaling_baseline_zero", scenario(R"("nodes": 1)", R"("steps": 1)",
                                                  R"(, "scaling_baseline": {"model": "bert-base", "micro_batch": 0, "seq_len": 128})"),
                {"field 'scaling_baseline.micro_batch'", "got 0"}),
  });
}

TEST_CASE("duplicate keys are refused in scenarios and in --set values") {
  check_all_refused({
      file_case("duplicate_model", R"({"model": "bert-base", "model": "bert-large", "phases": [{"steps": 1}]})",
                {"duplicate key 'model'"}),
      file_case("duplicate_in_phase", scenario(R"("nodes": 1)", R"("steps": 1, "steps": 2)"),
                {"duplicate key 'steps'", "field 'phases[0].steps' is given twice"}),
      {"--set object with a duplicate key", R"(predict --set 'recipe={"precision": "fp16", "precision": "fp32"}')",
       {"--set", "duplicate key 'precision'"}},
  });
}

TEST_CASE("contradictory fields are errors, not a silent choice") {
  check_all_refused({
      file_case("steps_and_epochs", scenario(R"("nodes": 1)", R"("steps": 10, "epochs": 2, "dataset_sequences": 1000)"),
                {"field 'phases[0].epochs'", "either 'steps' (10) or 'epochs' with 'dataset_sequences', not both"}),
      file_case("steps_and_dataset", scenario(R"("nodes": 1)", R"("steps": 10, "dataset_sequences": 1000)"),
                {"field 'phases[0].dataset_sequences'", "not both"}),
      // 32 × 8 GPUs = 256 sequences per micro-step; 1000 is not a multiple (this once rounded to 4 × 256).
      file_case("global_batch_unmakeable",
                scenario(R"("nodes": 1)", R"("micro_batch": 32, "global_batch": 1000, "steps": 10)"),
                {"field 'phases[0].global_batch' is 1000", "does not divide it", "e.g. 768 or 1024"}),
      file_case("global_batch_disagrees_with_grad_accum",
                scenario(R"("nodes": 1)", R"("micro_batch": 32, "grad_accum": 2, "global_batch": 1024, "steps": 10)"),
                {"field 'phases[0].global_batch' is 1024", "= 512"}),
      // gcp-t4-on-demand-2020 is a T4 gpu_hour price; a DGX-1 has V100s.
      file_case("rental_for_another_gpu", scenario(R"("nodes": 1)", R"("steps": 10)", R"(, "prices": {"rental": "gcp-t4-on-demand-2020"})"),
                {"field 'prices.rental'", "applies to GPU 't4'", "the scenario's node 'dgx-1' has GPU 'v100-sxm2-16gb'"}),
      file_case("spot_for_another_node",
                scenario(R"("nodes": 1)", R"("steps": 10)", R"(, "prices": {"spot": "aws-p3dn-24xlarge-on-demand"})"),
                {"field 'prices.spot'", "applies to node 'p3dn-24xlarge'", "the scenario's node is 'dgx-1'"}),
      file_case("purchase_for_another_node",
                scenario(R"("nodes": 1)", R"("steps": 10)", R"(, "prices": {"purchase": "dgx-2-purchase-2018"})"),
                {"field 'prices.purchase'", "applies to node 'dgx-2'"}),
      file_case("purchase_price_as_rental",
                scenario(R"("nodes": 1)", R"("steps": 10)", R"(, "prices": {"rental": "dgx-1-purchase"})"),
                {"field 'prices.rental'", "is per 'purchase'", "gpu_hour or instance_hour"}),
  });
}

TEST_CASE("a global_batch that the cluster makes exactly gives that grad_accum") {
  // 32 × 8 GPUs × 4 = 1024: the derived grad_accum is 4 and the global batch is exactly 1024.
  const auto r = ptsim::test::run_ptsim(
      "predict --format json --scenario " +
      file_with("global_batch_exact", scenario(R"("nodes": 1)", R"("micro_batch": 32, "global_batch": 1024, "steps": 10)")));
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("\"grad_accum\": 4") != std::string::npos);
  CHECK(r.output.find("\"global_batch\": 1024") != std::string::npos);
}

TEST_CASE("pipeline shapes Megatron refuses are exit 2 naming the rule") {
  // bert-base: 12 layers, 8 GPUs on a DGX-1.
  auto with_recipe = [](const std::string& name, const std::string& recipe, const std::string& phase) {
    return file_case(name, scenario(R"("nodes": 1)", phase, R"(, "recipe": {)" + recipe + "}"), {});
  };
  std::vector<BadInput> cases = {
      with_recipe("pipeline_not_dividing_layers", R"("pipeline_parallel": 8)", R"("steps": 10, "grad_accum": 8)"),
      with_recipe("pipeline_not_dividing_gpus", R"("pipeline_parallel": 3)", R"("steps": 10, "grad_accum": 8)"),
      with_recipe("interleaved_micro_batches", R"("pipeline_parallel": 4, "pipeline_schedule": "interleaved", "virtual_stages": 3)",
                  R"("steps": 10, "grad_accum": 6)"),
      with_recipe("virtual_without_interleaving", R"("pipeline_parallel": 2, "virtual_stages": 2)",
                  R"("steps": 10, "grad_accum": 4)"),
      with_recipe("stage_layers_sum", R"("pipeline_parallel": 2, "stage_layers": [5, 6])", R"("steps": 10, "grad_accum": 4)"),
      with_recipe("stage_layers_zero", R"("pipeline_parallel": 2, "stage_layers": [0, 12])", R"("steps": 10, "grad_accum": 4)"),
      with_recipe("unknown_schedule", R"("pipeline_parallel": 2, "pipeline_schedule": "zb-h1")", R"("steps": 10)"),
      with_recipe("unknown_rank_order", R"("pipeline_parallel": 2, "rank_order": "pp-dp-tp")", R"("steps": 10)"),
      with_recipe("rank_order_without_pipeline", R"("rank_order": "tp-pp-dp")", R"("steps": 10)"),
  };
  cases[0].expected = {"pipeline_parallel 8 does not divide the 12 layers of bert-base", "recipe.stage_layers"};
  cases[1].expected = {"tensor-parallel 1 × pipeline-parallel 3 = 3 does not divide the cluster's 8 GPUs"};
  cases[2].expected = {"interleaved needs the micro-batches per step (grad_accum 6) to be a multiple of pipeline_parallel 4"};
  cases[3].expected = {"virtual_stages 2 needs pipeline_schedule interleaved"};
  cases[4].expected = {"stage_layers add up to 11 layers, but bert-base has 12"};
  cases[5].expected = {"field 'recipe.stage_layers'", "entry 0 is 0"};
  cases[6].expected = {"field 'recipe.pipeline_schedule'", "zb-h1"};
  cases[7].expected = {"field 'recipe.rank_order'", "pp-dp-tp", "tp-dp-pp"};
  cases[8].expected = {"recipe.rank_order tp-pp-dp differs from tp-dp-pp only with pipeline_parallel > 1"};
  check_all_refused(cases);
}

TEST_CASE("ZeRO combinations that are not simulated, or do not apply, are exit 2 naming the field") {
  auto with_recipe = [](const std::string& name, const std::string& recipe) {
    return file_case(name, scenario(R"("nodes": 1)", R"("steps": 10, "grad_accum": 4)", R"(, "recipe": {)" + recipe + "}"), {});
  };
  std::vector<BadInput> cases = {
      with_recipe("shard_group_with_zero1", R"("zero_stage": 1, "shard_group": 4)"),
      with_recipe("shard_group_not_dividing", R"("zero_stage": 3, "shard_group": 3)"),
      with_recipe("zero_with_pipeline", R"("zero_stage": 3, "pipeline_parallel": 2)"),
  };
  cases[0].expected = {"recipe.shard_group 4 applies to zero_stage 2", "zero_stage is 1",
                       "neither DeepSpeed nor FSDP has a hybrid stage 1"};
  cases[1].expected = {"recipe.shard_group 3 must be at least 2 and divide the 8 data-parallel ranks"};
  cases[2].expected = {"zero_stage 3 with pipeline_parallel > 1 is not simulated", "use zero_stage 1"};
  check_all_refused(cases);
}

TEST_CASE("ZeRO-3, hybrid sharding (stages 2 and 3) and the distributed optimizer predict through the CLI") {
  // The scaling-efficiency baseline runs the recipe on one rank: the shard group must not follow it there.
  for (const std::string recipe : {R"("zero_stage": 3)", R"("zero_stage": 3, "shard_group": 4)",
                                   R"("zero_stage": 2, "shard_group": 4)", R"("distributed_optimizer": true)"}) {
    CAPTURE(recipe);
    const auto r = ptsim::test::run_ptsim(
        "predict --format json --scenario " +
        file_with("zero_ok", scenario(R"("nodes": 1)", R"("micro_batch": 8, "grad_accum": 2, "steps": 10)",
                                      R"(, "recipe": {)" + recipe + "}")));
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("\"scaling_efficiency\"") != std::string::npos);
  }
}

TEST_CASE("a pipeline that fits predicts its bubble and stages") {
  const auto r = ptsim::test::run_ptsim(
      "predict --format json --scenario " +
      file_with("pipeline_ok", scenario(R"("nodes": 1)", R"("micro_batch": 8, "grad_accum": 8, "steps": 10)",
                                        R"(, "recipe": {"pipeline_parallel": 4})")));
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("\"bubble_fraction\"") != std::string::npos);
  CHECK(r.output.find("\"in_flight_micro_batches\": 4.0") != std::string::npos);
}

TEST_CASE("GPT-3 175B needs the pipeline: refused without it, naming the pipeline that fits") {
  // 175B parameters × 16 bytes (bf16 + fp32 master + Adam) ÷ TP 8 ≈ 330 GiB per A100-40GB without a pipeline;
  // ZeRO 1 or 2 over 128 ranks still leaves 4 bytes per parameter ÷ 8 ≈ 81 GiB; ZeRO 3 leaves 16 bytes ÷ 8 ÷ 128
  // ≈ 2.5 GiB plus the gathered units; 16 stages of 6 layers fit.
  check_all_refused({{"gpt3 without pipeline", "predict --scenario gpt3-175b-1024gpu --set recipe.pipeline_parallel=1",
                      {"does not fit on a100-40gb", "try: recipe.zero_stage=3 (ZeRO over 128 data-parallel ranks",
                       "try: recipe.pipeline_parallel=16 (data-parallel 8) fits"}},
                     {"gpt3 4 stages", "predict --scenario gpt3-175b-1024gpu --set recipe.pipeline_parallel=4",
                      {"4-stage 1f1b pipeline does not fit", "stage 0 needs",
                       "try: recipe.pipeline_parallel=16 (data-parallel 8) fits"}}});
  const auto r = ptsim::test::run_ptsim("predict --scenario gpt3-175b-1024gpu");
  CHECK(r.exit_code == 0);
  CHECK(r.output.find("16-stage 1f1b pipeline, 192 micro-batches per step") != std::string::npos);
}

TEST_CASE("overlap_grad_reduce and overlap_param_gather where they do not apply are exit 2 naming the field") {
  auto with_recipe = [](const std::string& name, const std::string& recipe) {
    return file_case(name, scenario(R"("nodes": 1)", R"("steps": 10, "grad_accum": 4)", R"(, "recipe": {)" + recipe + "}"), {});
  };
  std::vector<BadInput> cases = {
      with_recipe("overlap_grad_reduce_without_pipeline", R"("overlap_grad_reduce": true)"),
      with_recipe("overlap_param_gather_without_zero1", R"("pipeline_parallel": 2, "overlap_param_gather": true)"),
      with_recipe("overlap_param_gather_without_pipeline", R"("zero_stage": 1, "overlap_param_gather": true)"),
  };
  cases[0].expected = {"field 'recipe.overlap_grad_reduce'", "pipeline_parallel > 1"};
  cases[1].expected = {"field 'recipe.overlap_param_gather'", "zero_stage 1 or distributed_optimizer", "zero_stage is 0"};
  cases[2].expected = {"field 'recipe.overlap_param_gather'", "pipeline_parallel > 1"};
  check_all_refused(cases);
}
