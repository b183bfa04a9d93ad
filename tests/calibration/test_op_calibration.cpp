// tests/calibration/test_op_calibration.cpp — calibration from per-op times (schema ptsim.op_times.v1):
// the file round-trips, and a fit started from a wrong profile recovers the profile that made the times.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "models/builder.hpp"
#include "models/op_times.hpp"
#include "sim/compute_model.hpp"
#include "sim/op_calibration.hpp"

using namespace ptsim;

namespace {

std::string write_op_times(const models::TaskGraph& g, const hwprofiles::GpuProfile& gpu, const std::string& name) {
  sim::SingleDevicePrediction p = sim::predict_single_device(g, gpu);
  std::vector<double> per_step = p.op_seconds;
  for (const auto& op : g.ops)
    if (op.phase != models::Phase::optimizer && op.phase != models::Phase::communication)
      per_step[static_cast<size_t>(op.id)] *= static_cast<double>(g.micro_steps);
  models::OpTimesInfo info;
  info.source = "measured";  // synthetic "measurement": produced by a known profile
  info.device = gpu.name;
  info.step_seconds = p.step_seconds;
  auto path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << models::op_times_json(g, per_step, info).dump();
  return path;
}

models::TaskGraph tiny_graph(int64_t micro_batch) {
  models::Recipe r;
  r.precision = models::Precision::fp32;
  r.micro_batch = micro_batch;
  r.seq_len = 64;
  r.grad_accum = 2;
  return models::build_task_graph(models::load_model("bert-tiny"), r);
}

}  // namespace

TEST_CASE("a fit to op times made by a known profile recovers that profile's step time") {
  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  const hwprofiles::GpuProfile truth = hwprofiles::find_gpu(profiles, "cpu-xeon-2c");
  std::string fit_file = write_op_times(tiny_graph(8), truth, "ptsim_optimes_fit.json");
  std::string holdout_file = write_op_times(tiny_graph(16), truth, "ptsim_optimes_holdout.json");
  sim::OpTimes fit = sim::load_op_times(fit_file);
  CHECK(fit.micro_steps == 2);
  CHECK(fit.ops.size() == tiny_graph(8).ops.size());

  hwprofiles::GpuProfile wrong = truth;
  wrong.memory_efficiency *= 0.5;
  wrong.gemm.max_efficiency *= 0.6;
  wrong.batched_gemm.max_efficiency *= 0.6;
  wrong.kernel_launch_seconds *= 3;
  sim::OpFit r = sim::fit_to_op_times({fit}, {sim::load_op_times(holdout_file)}, wrong,
                                      {"gemm_efficiency_scale", "memory_efficiency", "kernel_launch_seconds"});
  // Before: the wrong profile is clearly off; after: the step (Σ ops) within 1% on the fit and the held-out
  // micro-batch, because the three parameters are exactly what was perturbed.
  CHECK(r.fit_predicted_before > 1.2 * r.fit_measured_seconds);
  CHECK(r.fit_predicted_after == doctest::Approx(r.fit_measured_seconds).epsilon(0.01));
  CHECK(r.holdout_predicted_after == doctest::Approx(r.holdout_measured_seconds).epsilon(0.01));
  CHECK(r.values.at("memory_efficiency") == doctest::Approx(truth.memory_efficiency).epsilon(0.05));
}

TEST_CASE("a malformed op-times file is an input error naming the field") {
  auto path = (std::filesystem::temp_directory_path() / "ptsim_bad_optimes.json").string();
  std::ofstream(path) << R"({"schema": "ptsim.op_times.v1", "source": "measured", "step_seconds": 1,
    "recipe": {"grad_accum": 1}, "ops": [{"id": 0, "name": "x", "kind": "warp_drive", "phase": "forward",
    "layer": 0, "flops": 1, "bytes_read": 1, "bytes_written": 1, "dtype": "f32", "seconds": 1}]})";
  CHECK_THROWS_WITH_AS(sim::load_op_times(path), doctest::Contains("ops[0].kind"), core::InputError);
  std::ofstream(path) << R"({"schema": "other"})";
  CHECK_THROWS_WITH_AS(sim::load_op_times(path), doctest::Contains("schema"), core::InputError);
}
