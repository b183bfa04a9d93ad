// tests/sim/test_compute_model.cpp — the roofline compute model and the memory fit.
#include <doctest/doctest.h>

#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "models/builder.hpp"
#include "sim/compute_model.hpp"
#include "sim/memory_check.hpp"

using namespace ptsim;

namespace {

hwprofiles::GpuProfile toy_gpu() {
  hwprofiles::GpuProfile g;
  g.name = "toy";
  g.peak_fp16_tensor_flops_per_second = 100e12;
  g.peak_fp32_flops_per_second = 10e12;
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
  CHECK_THROWS_WITH_AS(sim::predict_single_device(g, hwprofiles::device_profile(profiles, "v100-sxm2-16gb", "pytorch-apex-ngc19.07")),
                       doctest::Contains("has no bf16 tensor-core math"), core::InputError);
}

TEST_CASE("BERT-large seq 512 micro-batch 32 fp16 + LAMB is refused on a 16 GB T4; micro-batch 4 fits") {
  // The example of issue #2 (what the T4 paper ran into at phase 2).
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  const auto t4 = hwprofiles::device_profile(profiles, "t4", "pytorch-apex-ngc19.07");
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

TEST_CASE("tf32 GEMMs are timed against the tensor-core TF32 peak (hand-computed roofline)") {
  hwprofiles::GpuProfile g = toy_gpu();
  g.peak_tf32_flops_per_second = 50e12;
  models::Op op;
  op.kind = models::OpKind::gemm;
  op.dtype = models::DType::f32;
  op.flops = 1e9;
  op.bytes_read = 1e3;
  // fp32 SIMT: eff 0.25, rate 10e12 · 0.5 · 0.25 = 1.25e12 → 800 µs; + 5 µs.
  CHECK(sim::op_cost(op, g).seconds == doctest::Approx(805e-6).epsilon(1e-9));
  // TF32: rate 50e12 · 0.5 · 0.25 = 6.25e12 → 160 µs; + 5 µs.
  op.tf32_math = true;
  CHECK(sim::op_cost(op, g).seconds == doctest::Approx(165e-6).epsilon(1e-9));
  // A100 datasheet: 156 TFLOP/s TF32 dense (hwprofiles/gpus/a100-40gb.json).
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  CHECK(sim::peak_precision_flops_per_second(hwprofiles::find_gpu(profiles, "a100-40gb"), models::Precision::tf32) ==
        doctest::Approx(156e12).epsilon(1e-12));
}

TEST_CASE("tf32 on a GPU without it is an input error naming the GPU and what it supports") {
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  models::Recipe r;
  r.precision = models::Precision::tf32;
  r.micro_batch = 2;
  models::TaskGraph g = models::build_task_graph(models::load_model("bert-tiny"), r);
  const auto v100 = hwprofiles::device_profile(profiles, "v100-sxm2-16gb", "pytorch-apex-ngc19.07");
  CHECK_THROWS_WITH_AS(sim::predict_single_device(g, v100), doctest::Contains("GPU 'v100-sxm2-16gb' has no tf32"),
                       core::InputError);
  CHECK_THROWS_WITH_AS(sim::predict_single_device(g, v100), doctest::Contains("it supports fp32, fp16"), core::InputError);
}
