// tests/sim/test_zero_pipeline.cpp — ZeRO stage 1 (Megatron-LM's distributed optimizer) with pipeline
// parallelism (docs/parallelism.md, "ZeRO-1 with pipelining"): each stage shards its own optimizer state over
// its data-parallel group, against the ZeRO paper's closed forms per stage; its gradients are reduce-scattered
// and its parameters all-gathered (what an all-reduce moves); the gathers follow their buckets' updates.
#include <doctest/doctest.h>

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "sim/pipeline_step.hpp"
#include "tests/sim/zero_test_support.hpp"

using namespace ptsim;
using testing::bytes_sent_by_rank0;
using testing::dgx_a100;

namespace {

// GPT-2 124M in 2 stages × 4 data-parallel ranks on one DGX A100 (8 GPUs), mixed-precision AdamW.
models::Recipe pipeline_recipe(int zero_stage) {
  models::Recipe r;
  r.precision = models::Precision::fp16;
  r.optimizer = models::OptimizerKind::adamw;
  r.micro_batch = 4;
  r.seq_len = 512;
  r.grad_accum = 4;
  r.data_parallel = 4;
  r.pipeline_parallel = 2;
  r.zero_stage = zero_stage;
  return r;
}

double parameters(const models::TaskGraph& g) {
  double psi = 0;
  for (const auto& p : g.params) psi += static_cast<double>(p.elements);
  return psi;
}

}  // namespace

TEST_CASE("ZeRO-1 with a pipeline: each stage holds 2Ψs + 2Ψs + 12Ψs/D of model states") {
  // Rajbhandari et al. 2020 §5 (docs/references.md): P_os keeps the fp16 parameters and gradients whole and
  // shards the K = 12 bytes of fp32 masters and Adam moments over the N data-parallel ranks; per stage, Ψs
  // is that stage's parameters (its layers, plus the embeddings on the first and the tied copy on the last)
  // and N = D = 4. Exact: byte counts of the same tensors.
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const std::vector<models::TaskGraph> chunks = models::build_pipeline_graphs(m, pipeline_recipe(1));
  REQUIRE(chunks.size() == 2);
  for (const auto& g : chunks) {
    CAPTURE(g.chunk.index);
    const double psi = parameters(g);
    const models::MemoryPlan plan = models::plan_memory(g);
    CHECK(plan.weights_bytes == doctest::Approx(2 * psi));
    CHECK(plan.gradients_bytes == doctest::Approx(2 * psi));
    CHECK(plan.master_weights_bytes == doctest::Approx(4 * psi / 4));
    CHECK(plan.optimizer_state_bytes == doctest::Approx(8 * psi / 4));
  }
}

TEST_CASE("ZeRO-1 with a pipeline moves what each stage's all-reduce moves: 2(D-1)/D of its gradients") {
  // A ring reduce-scatter and a ring all-gather each send (D−1)/D of the stage's 2Ψs gradient (parameter)
  // bytes per rank (docs/network-model.md), the ring all-reduce's 2(D−1)/D; 1e-9 relative: sums of doubles.
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const sim::ClusterConfig c = dgx_a100(1);
  const std::vector<models::TaskGraph> ddp = models::build_pipeline_graphs(m, pipeline_recipe(0));
  const std::vector<models::TaskGraph> zero = models::build_pipeline_graphs(m, pipeline_recipe(1));
  for (size_t s = 0; s < zero.size(); ++s) {
    CAPTURE(s);
    const double gradient_bytes = 2 * parameters(zero[s]);
    CHECK(bytes_sent_by_rank0(ddp[s], c) == doctest::Approx(2 * 3.0 / 4 * gradient_bytes).epsilon(1e-9));
    CHECK(bytes_sent_by_rank0(zero[s], c) == doctest::Approx(2 * 3.0 / 4 * gradient_bytes).epsilon(1e-9));
  }
}

TEST_CASE("a ZeRO-1 pipeline step: reduce-scatters before the updates, each all-gather after its bucket's update") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const std::vector<models::TaskGraph> chunks = models::build_pipeline_graphs(m, pipeline_recipe(1));
  const sim::StepSimulation r = sim::simulate_pipeline_step(chunks, dgx_a100(1), true);
  for (int stage = 0; stage < 2; ++stage) {
    CAPTURE(stage);
    const models::TaskGraph& g = chunks[static_cast<size_t>(stage)];
    std::vector<double> update_end(g.ops.size(), -1);
    double first_update = r.iteration_seconds, last_scatter = 0, last_gather = 0;
    int scatters = 0, gathers = 0;
    for (const auto& span : r.timeline) {
      if (span.stage != stage || span.op < 0) continue;
      const models::OpKind kind = g.op(span.op).kind;
      if (kind == models::OpKind::optimizer_update) {
        update_end[static_cast<size_t>(span.op)] = span.end_seconds;
        first_update = std::min(first_update, span.start_seconds);
      }
      if (kind == models::OpKind::reduce_scatter) {
        ++scatters;
        last_scatter = std::max(last_scatter, span.end_seconds);
      }
    }
    for (const auto& span : r.timeline) {
      if (span.stage != stage || span.op < 0 || g.op(span.op).kind != models::OpKind::all_gather) continue;
      ++gathers;
      last_gather = std::max(last_gather, span.end_seconds);
      for (auto [e, end] = boost::in_edges(span.op, g.deps); e != end; ++e) {
        const int dep = static_cast<int>(boost::source(*e, g.deps));
        if (g.op(dep).kind != models::OpKind::optimizer_update) continue;
        const double ready = update_end[static_cast<size_t>(dep)];
        CHECK(ready >= 0);
        CHECK(span.start_seconds >= ready);
      }
    }
    CHECK(scatters > 0);
    CHECK(gathers == scatters);  // one all-gather of the updated shard per bucket
    CHECK(last_scatter <= first_update);
    CHECK(last_gather > *std::max_element(update_end.begin(), update_end.end()));
    CHECK(r.stages[static_cast<size_t>(stage)].finish_seconds == doctest::Approx(last_gather).epsilon(1e-12));
  }
}

TEST_CASE("ZeRO stages 2 and 3 with a pipeline are refused, naming the one that is simulated") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  for (int stage : {2, 3}) {
    CAPTURE(stage);
    CHECK_THROWS_WITH_AS(models::build_pipeline_graphs(m, pipeline_recipe(stage)), doctest::Contains("use zero_stage 1"),
                         core::InputError);
  }
}
