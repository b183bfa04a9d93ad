// tests/calibration/test_compute_model.cpp — the roofline compute model, memory fit, and the fit of the
// shipped V100/T4 profiles to the published single-GPU runs.
#include <doctest/doctest.h>

#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "models/builder.hpp"
#include "sim/calibration.hpp"
#include "sim/compute_model.hpp"
#include "sim/memory_check.hpp"

using namespace ptsim;

namespace {

hwprofiles::GpuProfile toy_gpu() {
  hwprofiles::GpuProfile g;
  g.name = "toy";
  g.peak_fp16_tensor_flops = 100e12;
  g.peak_fp32_flops = 10e12;
  g.memory_bandwidth_bytes_per_second = 1e12;
  g.memory_efficiency = 0.8;
  g.sustained_clock_fraction = 0.5;
  g.kernel_launch_seconds = 5e-6;
  g.gemm = {0.5, 1e9};
  g.batched_gemm = {0.25, 1e9};
  g.memory_bound = {1.0, 1e6};
  g.memory_bytes = 16e9;
  return g;
}

}  // namespace

TEST_CASE("op time: GEMM is compute-bound with size-dependent efficiency, plus launch overhead") {
  models::Op op;
  op.kind = models::OpKind::gemm;
  op.dtype = models::DType::f16;
  op.flops = 1e9;
  op.bytes_read = 1e3;
  // eff = 0.5 · 1e9 / (1e9 + 1e9) = 0.25; rate = 100e12 · 0.5 (clock) · 0.25 = 12.5e12 → 80 µs; + 5 µs launch.
  sim::OpCost c = sim::op_cost(op, toy_gpu());
  CHECK(c.compute_bound);
  CHECK(c.seconds == doctest::Approx(85e-6).epsilon(1e-9));
}

TEST_CASE("op time: elementwise ops are memory-bound on bytes moved") {
  models::Op op;
  op.kind = models::OpKind::gelu;
  op.dtype = models::DType::f16;
  op.flops = 1e3;
  op.bytes_read = 0.5e6;
  op.bytes_written = 0.5e6;
  // 1e6 bytes; eff_mem = 1e6/(1e6+1e6) = 0.5; bw = 1e12 · 0.8 · 0.5 = 0.4e12 → 2.5 µs; + 5 µs.
  CHECK(sim::op_cost(op, toy_gpu()).seconds == doctest::Approx(7.5e-6).epsilon(1e-9));
}

TEST_CASE("a precision the GPU lacks is a clear input error") {
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  models::Recipe r;
  r.precision = models::Precision::bf16;
  r.micro_batch = 2;
  models::TaskGraph g = models::build_task_graph(models::load_model("bert-tiny"), r);
  CHECK_THROWS_WITH_AS(sim::predict_single_device(g, hwprofiles::find_gpu(profiles, "v100-sxm2-16gb")),
                       doctest::Contains("has no bf16 tensor-core math"), core::InputError);
}

TEST_CASE("BERT-large seq 512 micro-batch 32 fp16 + LAMB is refused on a 16 GB T4; micro-batch 4 fits") {
  // The example of issue #2 (what the T4 paper ran into at phase 2).
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  const auto& t4 = hwprofiles::find_gpu(profiles, "t4");
  models::ModelSpec m = models::load_model("bert-large");
  models::Recipe r;
  r.seq_len = 512;
  r.micro_batch = 32;
  r.optimizer = models::OptimizerKind::lamb;
  models::MemoryPlan big = models::plan_memory(models::build_task_graph(m, r));
  CHECK_FALSE(sim::check_memory(big, t4).fits);
  CHECK_THROWS_WITH_AS(sim::require_fits(m, r, big, t4), doctest::Contains("--micro-batch"), core::InputError);
  CHECK_THROWS_WITH_AS(sim::require_fits(m, r, big, t4), doctest::Contains("optimizer state"), core::InputError);
  r.micro_batch = 4;
  CHECK(sim::check_memory(models::plan_memory(models::build_task_graph(m, r)), t4).fits);
  // The suggestion is the largest micro-batch that fits: it fits, and one more does not.
  r.micro_batch = 32;
  int64_t best = sim::largest_fitting_micro_batch(m, r, t4, false);
  CHECK(best >= 4);
  r.micro_batch = best + 1;
  CHECK_FALSE(sim::check_memory(models::plan_memory(models::build_task_graph(m, r)), t4).fits);
}

TEST_CASE("the shipped V100 and T4 profiles reproduce the published single-GPU runs") {
  // Published throughputs: REFERENCE.md (NVIDIA DeepLearningExamples README; T4 paper's benchmark logs).
  // Fit runs: within 5% (the fit has as many parameters as runs for T4, and two for two runs on V100).
  // Held-out DGX-1 runs (never seen by the fit): within 10% — a real extrapolation to another V100
  // variant, memory size and micro-batch.
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  sim::PublishedRunSet set = sim::load_published_runs(sim::default_published_runs_path());
  REQUIRE(set.runs.size() == 6);
  int holdouts = 0;
  for (const auto& run : set.runs) {
    double predicted = sim::predict_run(run, hwprofiles::find_gpu(profiles, run.gpu));
    CAPTURE(run.id);
    CAPTURE(predicted);
    if (run.role == "fit") {
      CHECK(predicted == doctest::Approx(run.sequences_per_second).epsilon(0.05));
    } else {
      ++holdouts;
      CHECK(predicted == doctest::Approx(run.sequences_per_second).epsilon(0.10));
    }
  }
  CHECK(holdouts == 2);
}

TEST_CASE("the fit recovers parameters it did not start from") {
  // Perturb the shipped V100 profiles' memory efficiency and refit: the objective returns to ~0.
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  for (auto& [name, gpu] : profiles.gpus)
    if (name.rfind("v100", 0) == 0) gpu.memory_efficiency *= 0.6;
  sim::PublishedRunSet set = sim::load_published_runs(sim::default_published_runs_path());
  sim::FitResult fit = sim::fit_group(set, "v100", profiles);
  for (const auto& e : fit.after)
    if (e.role == "fit") CHECK(std::abs(e.relative_error()) < 0.01);
  for (const auto& e : fit.before)
    if (e.role == "fit") CHECK(e.relative_error() < -0.05);  // the perturbation made predictions too slow
}
