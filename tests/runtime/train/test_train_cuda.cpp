// tests/runtime/train/test_train_cuda.cpp — `ptsim train --backend cuda` end to end, the binary as a user
// runs it: the tiny BERT and dataset of train_test_support.hpp, 2 steps at each precision (fp32, tf32, bf16,
// fp16; bf16 only on sm_80 and newer), with --metrics and --op-times. Checks: exit 0, one metrics line per
// step with a finite loss, the first step's loss where an untrained model's must be, and a
// ptsim.op_times.v1 file measured on the GPU (the file `ptsim calibrate measured` fits a GPU profile from).
// The whole-model numerics are test_model_steps_cuda.cpp's; this is the CLI path around them (flags,
// dataset, loss scaling, the op-times writer). The tiny GPT-2 (gpt2_test_support.hpp: causal LM over the same
// shards) at each precision too: lm_loss and perplexity lines, the same checks. Suite gpu; exits 77 (skipped) without a CUDA build or a GPU (gpu_doctest_main.cpp).
#include <doctest/doctest.h>

#include <cmath>
#include <set>
#include <string>

#include "tests/runtime/train/gpt2_test_support.hpp"
#ifdef PTSIM_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

using namespace ptsim::test;

namespace {

int compute_capability_major() {
  int major = 0;
#ifdef PTSIM_HAVE_CUDA
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, 0) != cudaSuccess) major = 0;
#endif
  return major;
}

const TinySetup& setup() {
  static const TinySetup s = make_tiny_setup("train_cuda");
  return s;
}

void check_op_times(const fs::path& path, const std::string& precision) {
  const auto j = ptsim::core::load_json_file(path.string());
  CHECK(j.at("schema") == "ptsim.op_times.v1");
  CHECK(j.at("source") == "measured");
  CHECK(j.at("steps") == 1);  // 2 steps, the first one warm-up
  CHECK(j.at("recipe").at("precision") == precision);
  // Measured on the GPU, and the file says so (the trainer names the backend's device).
  const std::string device = j.at("device").get<std::string>();
  CHECK_MESSAGE(device.rfind("GPU", 0) == 0, "device '" << device << "'");
  const double step_seconds = j.at("step_seconds").get<double>();
  CHECK(step_seconds > 0);
  const auto& ops = j.at("ops");
  REQUIRE(ops.size() > 50);  // the tiny BERT's graph has a few hundred ops (test_train.cpp: > 50 on the CPU)
  double sum = 0;
  std::set<std::string> phases;
  for (const auto& op : ops) {
    CHECK(op.at("seconds").get<double>() >= 0);
    sum += op.at("seconds").get<double>();
    phases.insert(op.at("phase").get<std::string>());
  }
  CHECK(sum > 0);
  CHECK(phases.count("forward") == 1);
  CHECK(phases.count("backward") == 1);
  CHECK(phases.count("optimizer") == 1);
}

// 2 steps of ptsim train on the CUDA backend, metrics in dir/m.jsonl and op times in dir/ops.json.
CommandResult run_two_cuda_steps(const TinySetup& s, const std::string& precision, const fs::path& dir,
                                 const std::string& extra = "") {
  return run_ptsim("train --backend cuda --precision " + precision + " --model " + quote(s.model) + " --data " +
                   quote(s.data) + " --quiet --steps 2 --micro-batch 4 --metrics " + quote(dir / "m.jsonl") +
                   " --op-times " + quote(dir / "ops.json") + " " + extra);
}

// extra: more flags (the tensor-core attention's case below).
void check_precision(const std::string& precision, const std::string& extra = "") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("train_cuda_" + precision + (extra.empty() ? "" : "_extra"));
  const auto r = run_two_cuda_steps(s, precision, dir, extra);
  REQUIRE_MESSAGE(r.exit_code == 0, precision << ": " << r.output);
  const auto m = read_metrics(dir / "m.jsonl");
  REQUIRE(m.size() == 2);
  for (const MetricsLine& line : m) CHECK_MESSAGE(std::isfinite(line.loss), precision << " step " << line.step);
  // At init (normal(0, 0.02) weights) the logits are ~0: MLM ~ln(397) = 5.984, NSP ~ln(2) = 0.693. The 0.1
  // is test_train.cpp's (the CPU measured 6.69 at fp32); 16-bit storage moves ~0 logits by far less.
  CHECK_MESSAGE(m[0].loss == doctest::Approx(std::log(397.0) + std::log(2.0)).epsilon(0.1 / 6.68),
                precision << " first loss " << m[0].loss);
  check_op_times(dir / "ops.json", precision);
}

const TinySetup& gpt2_setup() {
  static const TinySetup s = make_tiny_gpt2_setup("train_cuda_gpt2");
  return s;
}

void check_gpt2_precision(const std::string& precision) {
  const TinySetup& s = gpt2_setup();
  const fs::path dir = fresh_dir("train_cuda_gpt2_" + precision);
  const auto r = run_two_cuda_steps(s, precision, dir);
  REQUIRE_MESSAGE(r.exit_code == 0, precision << ": " << r.output);
  const auto m = read_jsonl(dir / "m.jsonl");
  REQUIRE(m.size() == 2);
  for (const auto& line : m) {
    const double loss = line.at("loss").get<double>();
    CHECK_MESSAGE(std::isfinite(loss), precision << ": " << line.dump());
    CHECK(line.at("lm_loss").get<double>() == loss);
    CHECK(line.at("perplexity").get<double>() == doctest::Approx(std::exp(loss)).epsilon(1e-12));
  }
  // At init the logits are ~0: the LM loss is ~ln(397) = 5.984 (test_train_gpt2.cpp's bound on the CPU).
  const double first = m[0].at("loss").get<double>();
  CHECK_MESSAGE(first == doctest::Approx(std::log(397.0)).epsilon(0.1 / std::log(397.0)), precision << " first loss " << first);
  check_op_times(dir / "ops.json", precision);
}

}  // namespace

TEST_CASE("ptsim train --backend cuda, GPT-2, fp32 / tf32 / bf16 / fp16: 2 steps, finite LM losses, GPU op times") {
  for (const char* precision : {"fp32", "tf32", "bf16", "fp16"}) {
    CAPTURE(precision);
    if (std::string(precision) == "bf16" && compute_capability_major() < 8) {
      MESSAGE("GPT-2 bf16 not run: the GPU is below sm_80");
      continue;
    }
    check_gpt2_precision(precision);
  }
}

// One test case per precision, so that a failure in one does not hide the others.
TEST_CASE("ptsim train --backend cuda --precision fp32: 2 steps, finite losses, GPU op times") { check_precision("fp32"); }
TEST_CASE("ptsim train --backend cuda --precision tf32: 2 steps, finite losses, GPU op times") { check_precision("tf32"); }
TEST_CASE("ptsim train --backend cuda --precision bf16: 2 steps, finite losses, GPU op times") {
  if (compute_capability_major() < 8) {
    MESSAGE("bf16 not run: the GPU is below sm_80");
    return;
  }
  check_precision("bf16");
}
TEST_CASE("ptsim train --backend cuda --precision fp16: 2 steps, finite losses, GPU op times") { check_precision("fp16"); }

// The fused attention on the tensor-core kernels (--attention-kernel tensor-core, docs/cuda-backend.md "When it
// runs"), through the CLI: the same checks (an untrained model's first loss, GPU op times). The kernels' own
// accuracy is runtime_attention_tc_gpu's; on sm_7x bf16 is refused with exit 2 before any kernel launches.
TEST_CASE("ptsim train --backend cuda --fused-attention --attention-kernel tensor-core --precision bf16 / fp16: 2 steps") {
  const std::string tc = "--fused-attention --attention-kernel tensor-core";
  if (compute_capability_major() >= 8) {
    check_precision("bf16", tc);
  } else {
    const fs::path dir = fresh_dir("train_cuda_tc_bf16_refused");
    const auto r = run_two_cuda_steps(setup(), "bf16", dir, tc);
    CHECK_MESSAGE(r.exit_code == 2, r.output);  // the bf16 GEMMs' refusal or the attention's: both InputErrors
    CHECK_MESSAGE(r.output.find("sm_80") != std::string::npos, r.output);
  }
  check_precision("fp16", tc);
}
