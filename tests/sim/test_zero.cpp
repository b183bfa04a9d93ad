// tests/sim/test_zero.cpp — ZeRO (Rajbhandari et al. 2020): the model states per GPU against the paper's
// worked example and formulas, the graph's communication against the closed form (stages 1 and 2 move what
// an all-reduce moves: a reduce-scatter of the gradients plus an all-gather of the parameters), and the step
// on the network (reduce-scatters overlapping backward, all-gathers after each bucket's update).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "models/zero.hpp"
#include "sim/collectives.hpp"
#include "sim/network.hpp"
#include "sim/step_simulator.hpp"
#include "tests/sim/zero_test_support.hpp"

using namespace ptsim;
using testing::bytes_sent_by_rank0;
using testing::dgx_a100;

namespace {

constexpr double kGB = 1e9;  // the paper's GB

models::Recipe zero_recipe(int stage, int64_t dp) {
  models::Recipe r;
  r.precision = models::Precision::fp16;
  r.optimizer = models::OptimizerKind::adamw;
  r.micro_batch = 4;
  r.seq_len = 256;
  r.data_parallel = dp;
  r.zero_stage = stage;
  return r;
}

}  // namespace

TEST_CASE("ZeRO paper, Fig. 1: 7.5B parameters, 64 GPUs, mixed-precision Adam (K = 12)") {
  // 2Ψ fp16 parameters, 2Ψ fp16 gradients, KΨ = 4Ψ fp32 masters + 8Ψ moments. The paper prints GB to one
  // decimal: 120, 31.4, 16.6, 1.9 — so 0.05 GB of tolerance.
  const double psi = 7.5e9;
  const models::ModelStates full{2 * psi, 2 * psi, 4 * psi, 8 * psi};
  CHECK(models::shard_model_states(full, 0, 64).total_bytes() / kGB == doctest::Approx(120.0).epsilon(0.05 / 120));
  CHECK(std::abs(models::shard_model_states(full, 1, 64).total_bytes() / kGB - 31.4) < 0.05);
  CHECK(std::abs(models::shard_model_states(full, 2, 64).total_bytes() / kGB - 16.6) < 0.05);
  CHECK(std::abs(models::shard_model_states(full, 3, 64).total_bytes() / kGB - 1.9) < 0.05);
  // The formulas exactly (Sec. 5): 4Ψ + KΨ/N, 2Ψ + (2+K)Ψ/N, (4+K)Ψ/N.
  CHECK(models::shard_model_states(full, 1, 64).total_bytes() == doctest::Approx(4 * psi + 12 * psi / 64));
  CHECK(models::shard_model_states(full, 2, 64).total_bytes() == doctest::Approx(2 * psi + 14 * psi / 64));
  CHECK(models::shard_model_states(full, 3, 64).total_bytes() == doctest::Approx(16 * psi / 64));
}

TEST_CASE("a ZeRO graph's memory plan holds this rank's shard of the model states") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const models::MemoryPlan base = models::plan_memory(models::build_task_graph(m, zero_recipe(0, 8)));
  for (int stage : {1, 2}) {
    CAPTURE(stage);
    const models::MemoryPlan plan = models::plan_memory(models::build_task_graph(m, zero_recipe(stage, 8)));
    const models::ModelStates expected = models::shard_model_states(
        {base.weights_bytes, base.gradients_bytes, base.master_weights_bytes, base.optimizer_state_bytes}, stage, 8);
    CHECK(plan.weights_bytes == doctest::Approx(expected.weights_bytes));
    CHECK(plan.gradients_bytes == doctest::Approx(expected.gradients_bytes));
    CHECK(plan.master_weights_bytes == doctest::Approx(base.master_weights_bytes / 8));
    CHECK(plan.optimizer_state_bytes == doctest::Approx(base.optimizer_state_bytes / 8));
    CHECK(plan.activations_peak_bytes == base.activations_peak_bytes);
  }
}

TEST_CASE("ZeRO stages 1 and 2 move what an all-reduce moves: 2(N-1)/N of the gradients per rank") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const sim::ClusterConfig c = dgx_a100(1);
  const models::TaskGraph ddp = models::build_task_graph(m, zero_recipe(0, 8));
  double gradient_bytes = 0;
  for (const auto& p : ddp.params) gradient_bytes += static_cast<double>(ddp.tensor(p.gradient).bytes());
  const double all_reduce = bytes_sent_by_rank0(ddp, c);
  // The ring all-reduce's closed form (docs/network-model.md): 2(p−1) steps of n/p.
  CHECK(all_reduce == doctest::Approx(2 * 7.0 / 8 * gradient_bytes).epsilon(1e-9));
  for (int stage : {1, 2}) {
    CAPTURE(stage);
    const models::TaskGraph g = models::build_task_graph(m, zero_recipe(stage, 8));
    int scatters = 0, gathers = 0;
    for (const auto& op : g.ops) {
      scatters += op.kind == models::OpKind::reduce_scatter;
      gathers += op.kind == models::OpKind::all_gather;
      CHECK(op.kind != models::OpKind::all_reduce);
    }
    CHECK(scatters > 0);
    CHECK(gathers == scatters);  // one all-gather of the updated parameters per bucket
    CHECK(bytes_sent_by_rank0(g, c) == doctest::Approx(all_reduce).epsilon(1e-9));
  }
}

TEST_CASE("a ZeRO step: updates of 1/N shards, parameters all-gathered after each bucket's update") {
  const models::ModelSpec m = models::load_model("gpt2-124m");
  const sim::ClusterConfig c = dgx_a100(2);
  const models::TaskGraph ddp = models::build_task_graph(m, zero_recipe(0, 16));
  const models::TaskGraph zero = models::build_task_graph(m, zero_recipe(1, 16));
  const sim::StepSimulation b = sim::simulate_step(zero, c, true);
  // The optimizer's work is divided by N = 16 (same buckets in both graphs).
  auto optimizer_flops = [](const models::TaskGraph& g) {
    double f = 0;
    for (const auto& op : g.ops) f += op.kind == models::OpKind::optimizer_update ? op.flops : 0;
    return f;
  };
  CHECK(optimizer_flops(zero) == doctest::Approx(optimizer_flops(ddp) / 16));
  CHECK(b.data_parallel_comm_seconds > 0);
  CHECK(b.iteration_seconds > 0);
  // Every all-gather starts after its bucket's update ended.
  std::vector<double> update_end(zero.ops.size(), -1);
  for (const auto& s : b.timeline)
    if (zero.op(s.op).kind == models::OpKind::optimizer_update) update_end[static_cast<size_t>(s.op)] = s.end_seconds;
  int gathers = 0;
  for (const auto& s : b.timeline) {
    if (zero.op(s.op).kind != models::OpKind::all_gather) continue;
    ++gathers;
    for (auto [e, end] = boost::in_edges(s.op, zero.deps); e != end; ++e) {
      const int dep = static_cast<int>(boost::source(*e, zero.deps));
      if (zero.op(dep).kind == models::OpKind::optimizer_update) {
        const double ready = update_end[static_cast<size_t>(dep)];
        CHECK(s.start_seconds >= ready);
      }
    }
  }
  CHECK(gathers > 0);
  // The step ends with the last all-gather: it follows the last update, so nothing hides it.
  double last_gather = 0;
  for (const auto& s : b.timeline)
    if (zero.op(s.op).kind == models::OpKind::all_gather) last_gather = std::max(last_gather, s.end_seconds);
  CHECK(last_gather == doctest::Approx(b.iteration_seconds).epsilon(1e-12));
  CHECK(last_gather > *std::max_element(update_end.begin(), update_end.end()));
}
