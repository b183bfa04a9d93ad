// tests/sim/test_fp8_compute.cpp — fp8 (Transformer Engine) in the compute model: fp8 GEMMs at the fp8
// tensor-core peak (hand-computed roofline), a step on an H100 against bf16, and the GPUs without fp8 math.
#include <doctest/doctest.h>

#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "models/builder.hpp"
#include "sim/compute_model.hpp"

using namespace ptsim;

namespace {

hwprofiles::GpuProfile toy_gpu() {
  hwprofiles::GpuProfile g;
  g.name = "toy";
  g.peak_bf16_tensor_flops_per_second = 100e12;
  g.peak_fp8_tensor_flops_per_second = 200e12;
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

models::Recipe bert_large_recipe(models::Precision precision, const hwprofiles::StackProfile& stack) {
  models::Recipe r;
  r.precision = precision;
  r.micro_batch = 64;
  r.seq_len = 128;
  sim::apply_stack_fusions(r, stack);
  return r;
}

}  // namespace

TEST_CASE("fp8 GEMMs (E4M3 and E5M2) are timed against the fp8 tensor-core peak (hand-computed roofline)") {
  const hwprofiles::GpuProfile g = toy_gpu();
  models::Op op;
  op.kind = models::OpKind::gemm;
  op.flops = 1e9;
  op.bytes_read = 1e3;
  // bf16: eff = 0.5 · 1e9 / (1e9 + 1e9) = 0.25; rate 100e12 · 0.5 · 0.25 = 12.5e12 → 80 µs; + 5 µs.
  op.dtype = models::DType::bf16;
  CHECK(sim::op_cost(op, g).seconds == doctest::Approx(85e-6).epsilon(1e-9));
  // fp8: the same curve on the 200e12 peak: 25e12 → 40 µs; + 5 µs. E5M2 (gradients) runs at the same rate.
  op.dtype = models::DType::f8e4m3;
  CHECK(sim::op_cost(op, g).seconds == doctest::Approx(45e-6).epsilon(1e-9));
  op.dtype = models::DType::f8e5m2;
  CHECK(sim::op_cost(op, g).seconds == doctest::Approx(45e-6).epsilon(1e-9));
  // A cast is memory-bound: 4 MB at 1e12 · 0.8 · (4e6 / (4e6 + 1e6)) = 0.64e12 B/s → 6.25 µs; + 5 µs.
  models::Op cast;
  cast.kind = models::OpKind::fp8_cast_transpose;
  cast.dtype = models::DType::bf16;
  cast.flops = 4e6;
  cast.bytes_read = 2e6;
  cast.bytes_written = 2e6;
  CHECK(sim::op_cost(cast, g).seconds == doctest::Approx(11.25e-6).epsilon(1e-9));
  // Datasheets: H100 SXM and H200 1,979 TFLOP/s fp8 dense (hwprofiles/gpus/*.json).
  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  for (const char* name : {"h100-sxm", "h200"})
    CHECK(sim::peak_precision_flops_per_second(hwprofiles::find_gpu(profiles, name), models::Precision::fp8) ==
          doctest::Approx(1979e12).epsilon(1e-12));
}

TEST_CASE("an H100 fp8 step is faster than bf16, by less than the 2× GEMM peak ratio") {
  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  const hwprofiles::StackProfile& stack = hwprofiles::find_stack(profiles, "pytorch-2-sdpa");
  const hwprofiles::GpuProfile h100 = hwprofiles::device_profile(profiles, "h100-sxm", "pytorch-2-sdpa");
  const models::ModelSpec m = models::load_model("bert-large");
  const models::TaskGraph bf16 = models::build_task_graph(m, bert_large_recipe(models::Precision::bf16, stack));
  const models::TaskGraph fp8 = models::build_task_graph(m, bert_large_recipe(models::Precision::fp8, stack));
  const sim::SingleDevicePrediction p16 = sim::predict_single_device(bf16, h100);
  const sim::SingleDevicePrediction p8 = sim::predict_single_device(fp8, h100);
  const double speedup = p16.step_seconds / p8.step_seconds;
  MESSAGE("BERT-large seq 128 mb 64 on h100-sxm: bf16 " << p16.step_seconds << " s, fp8 " << p8.step_seconds
                                                       << " s, speedup " << speedup);
  // Why less than 1979/989 = 2.0: only the layers' linears run in fp8 (attention, the MLM/NSP heads, every
  // memory-bound op and the optimizer keep their bf16 time), the casts and scale updates are new ops, and each
  // op still pays its launch overhead. Why more than 1: the linears are most of the step's GEMM time.
  CHECK(speedup > 1.0);
  CHECK(speedup < 1979.0 / 989.0);
  // The linears themselves are at most 2× faster (same curve, twice the peak); the casts cost time.
  const double gemm16 = p16.seconds_by_kind.at("gemm"), gemm8 = p8.seconds_by_kind.at("gemm");
  CHECK(gemm8 < gemm16);
  CHECK(gemm16 / gemm8 < 2.0);
  CHECK(p8.seconds_by_kind.at("fp8_cast_transpose") > 0);
  CHECK(p8.seconds_by_kind.count("fp8_scale_update") == 1);
}

TEST_CASE("fp8 on a GPU without fp8 tensor cores is an input error naming the GPU and what it supports") {
  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  models::Recipe r;
  r.precision = models::Precision::fp8;
  r.micro_batch = 2;
  const models::TaskGraph g = models::build_task_graph(models::load_model("bert-tiny"), r);
  struct Case {
    const char* gpu;
    const char* stack;
    const char* supports;
  };
  for (const Case& c : {Case{"a100-40gb", "pytorch-ngc20.06", "it supports fp32, tf32, fp16, bf16)"},
                       Case{"v100-sxm2-16gb", "pytorch-apex-ngc19.07", "it supports fp32, fp16)"},
                       Case{"t4", "pytorch-apex-ngc19.07", "it supports fp32, fp16)"}}) {
    const hwprofiles::GpuProfile gpu = hwprofiles::device_profile(profiles, c.gpu, c.stack);
    const std::string named = std::string("GPU '") + c.gpu + "' has no fp8 tensor-core math";
    CHECK_THROWS_WITH_AS(sim::predict_single_device(g, gpu), doctest::Contains(named.c_str()), core::InputError);
    CHECK_THROWS_WITH_AS(sim::predict_single_device(g, gpu), doctest::Contains(c.supports), core::InputError);
  }
}
