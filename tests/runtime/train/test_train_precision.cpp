// tests/runtime/train/test_train_precision.cpp — `ptsim train --precision bf16|fp16` end to end on the tiny
// BERT (hidden 32, 2 layers) and the small test corpus: 200 bf16 steps track the fp32 loss curve within a
// stated band; the metrics carry the loss scale and the skipped-step count; an fp16 checkpoint holds fp32
// master weights and records the precision; N steps straight equal N/2 + --resume + N/2 to the bit with
// dynamic loss scaling changing the scale on the way, and at bf16; flags that do not apply are exit 2.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>

#include "core/json_reader.hpp"
#include "runtime/checkpoint/safetensors.hpp"
#include "runtime/exec/precision.hpp"
#include "tests/runtime/train/train_test_support.hpp"

using namespace ptsim::test;
namespace rt = ptsim::runtime;

namespace {

std::string base_flags(const TinySetup& s) {
  return "train --model " + quote(s.model) + " --data " + quote(s.data) + " --threads 1 --quiet";
}

const TinySetup& setup() {
  static const TinySetup s = make_tiny_setup("tiny-precision");
  return s;
}

std::vector<ptsim::core::Json> read_json_lines(const fs::path& path) {
  std::vector<ptsim::core::Json> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(ptsim::core::Json::parse(line));
  return out;
}

// Mean of the losses of steps [from, to) (0-based indices into the metrics).
double mean_loss(const std::vector<MetricsLine>& m, size_t from, size_t to) {
  double s = 0;
  for (size_t i = from; i < to; ++i) s += m[i].loss;
  return s / static_cast<double>(to - from);
}

// Trains `flags` straight (checkpoints in dir/straight, metrics dir/a.jsonl) and split (dir/split, dir/b.jsonl:
// --stop-after `stop_after`, then --resume), requiring each run to succeed.
void run_straight_and_resumed(const std::string& flags, const fs::path& dir, int stop_after) {
  auto r = run_ptsim(flags + " --checkpoint-dir " + quote(dir / "straight") + " --metrics " + quote(dir / "a.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const std::string split = flags + " --checkpoint-dir " + quote(dir / "split") + " --metrics " + quote(dir / "b.jsonl");
  r = run_ptsim(split + " --stop-after " + std::to_string(stop_after));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = run_ptsim(split + " --resume");
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
}

}  // namespace

TEST_CASE("train --precision bf16: 200 steps track the fp32 loss curve") {
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("bf16-curve");
  const std::string flags = base_flags(s) + " --steps 200 --micro-batch 8 --lr 5e-2 --no-dropout";
  auto r = run_ptsim(flags + " --precision fp32 --metrics " + quote(dir / "fp32.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  r = run_ptsim(flags + " --precision bf16 --metrics " + quote(dir / "bf16.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  const auto a = read_metrics(dir / "fp32.jsonl");
  const auto b = read_metrics(dir / "bf16.jsonl");
  REQUIRE(a.size() == 200);
  REQUIRE(b.size() == 200);
  // The band. Step 1 runs the same batch from the same fp32 init (the bf16 weights are its rounding), so the
  // losses differ only by rounding: a few u = 2^-8 relative at most (the single-step test in
  // tests/runtime/exec/test_mixed_precision.cpp measures 0.05u on its model) → 3% (8u) of 6.7 nats.
  // Afterwards the runs take different paths (bf16 gradients differ by ~6u per step, and LAMB's update
  // follows them), so single steps differ by the batch-to-batch noise of the loss; the curves are compared
  // as means over windows of 20 steps: within 0.1 nats in every window (measured: 0.017 at worst; the
  // MESSAGE prints it), and the bf16 run must learn as the fp32 run does (its last window at least 0.3 nats
  // below its first; measured 6.70 → 5.96 for both).
  CHECK(std::abs(b[0].loss - a[0].loss) <= 8 * 0x1.0p-8 * a[0].loss);
  double worst = 0;
  for (size_t w = 0; w < 200; w += 20) {
    const double d = std::abs(mean_loss(a, w, w + 20) - mean_loss(b, w, w + 20));
    worst = std::max(worst, d);
    CHECK_MESSAGE(d <= 0.1, "steps " << w + 1 << ".." << w + 20 << ": fp32 " << mean_loss(a, w, w + 20) << ", bf16 "
                                      << mean_loss(b, w, w + 20));
  }
  MESSAGE("bf16 vs fp32, 200 steps: step 1 " << b[0].loss << " vs " << a[0].loss << "; worst 20-step window difference "
                                             << worst << " nats; last window fp32 " << mean_loss(a, 180, 200) << ", bf16 "
                                             << mean_loss(b, 180, 200));
  CHECK(mean_loss(b, 180, 200) < mean_loss(b, 0, 20) - 0.3);
  // No loss scaling outside fp16: scale 1 on every line, no step skipped.
  for (const auto& j : read_json_lines(dir / "bf16.jsonl")) {
    CHECK(j.at("loss_scale") == 1.0);
    CHECK(j.at("skipped_steps") == 0);
  }
}

TEST_CASE("train --precision fp16: checkpoints keep fp32 masters and the precision; resume is bit-identical") {
  // --loss-scale-window 2 doubles the scale every two clean steps from 2^16, so over 16 steps it rises until
  // the fp16 gradients overflow, then halves: the resumed run must continue that sequence exactly.
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("fp16-resume");
  const std::string flags = base_flags(s) +
                            " --steps 16 --micro-batch 4 --grad-accum 2 --lr 5e-2 --precision fp16 --loss-scale-window 2";
  run_straight_and_resumed(flags, dir, 8);

  const auto a = read_json_lines(dir / "a.jsonl");
  const auto b = read_json_lines(dir / "b.jsonl");
  REQUIRE(a.size() == 16);
  REQUIRE(b.size() == 16);
  CHECK(a[0].at("loss_scale") == 65536.0);
  CHECK(a[2].at("loss_scale") == 131072.0);  // two clean steps → ×2
  std::vector<double> scales;
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(b[i].at("step") == a[i].at("step"));
    CHECK(b[i].at("loss").get<double>() == a[i].at("loss").get<double>());  // exact
    CHECK(b[i].at("loss_scale") == a[i].at("loss_scale"));
    CHECK(b[i].at("skipped_steps") == a[i].at("skipped_steps"));
    scales.push_back(a[i].at("loss_scale").get<double>());
  }
  // The scale went up and, after an overflow, came down again (the test's point: state to restore).
  const int64_t skipped = a.back().at("skipped_steps").get<int64_t>();
  MESSAGE("fp16 loss scales: " << [&] {
    std::string t;
    for (double x : scales) t += std::to_string(static_cast<int64_t>(x)) + " ";
    return t;
  }() << "; skipped " << skipped);
  CHECK(skipped >= 1);
  for (size_t i = 1; i < a.size(); ++i) {
    const bool was_skipped = a[i - 1].contains("skipped") && a[i - 1].at("skipped") == true;
    if (was_skipped) CHECK(scales[i] == scales[i - 1] / 2);
  }
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    const auto x = rt::read_safetensors((dir / "straight" / "step_16" / file).string());
    const auto y = rt::read_safetensors((dir / "split" / "step_16" / file).string());
    REQUIRE(x.tensors.size() == y.tensors.size());
    for (size_t i = 0; i < x.tensors.size(); ++i) CHECK(x.tensors[i].data == y.tensors[i].data);
  }
  // state.json records the precision and the scaler; the saved weights are fp32 masters: F32 tensors with
  // values a 16-bit copy could not hold.
  const auto state = ptsim::core::Json::parse(read_file(dir / "straight" / "step_16" / "state.json"));
  const auto& extra = state.at("extra");
  CHECK(extra.at("precision") == "fp16");
  CHECK(extra.at("weights_dtype") == "f32");
  CHECK(extra.at("run").at("precision") == "fp16");
  {  // the scale for step 17: step 16's, halved (overflow), doubled (window complete) or unchanged
    const double next = extra.at("loss_scaler").at("scale").get<double>(), last = scales.back();
    CHECK((next == last || next == last / 2 || next == last * 2));
  }
  CHECK(extra.at("loss_scaler").at("skipped_steps") == skipped);
  const auto model = rt::read_safetensors((dir / "straight" / "step_16" / "model.safetensors").string());
  size_t not_fp16 = 0, total = 0;
  for (const auto& t : model.tensors) {
    CHECK(t.dtype == rt::SafetensorsDtype::f32);
    const std::vector<float> v = t.to_f32("model.safetensors");
    std::vector<float> r16 = v;
    rt::round_to_dtype(ptsim::models::DType::f16, r16);
    for (size_t k = 0; k < v.size(); ++k) not_fp16 += r16[k] != v[k];
    total += v.size();
  }
  MESSAGE(not_fp16 << " of " << total << " saved weights are not fp16 values (fp32 masters)");
  CHECK(not_fp16 > total / 2);
  // Resuming at another precision is refused (the run identity includes it).
  const auto r = run_ptsim(base_flags(s) + " --steps 16 --micro-batch 4 --grad-accum 2 --lr 5e-2 --precision bf16 --checkpoint-dir " +
                quote(dir / "split") + " --resume");
  CHECK(r.exit_code == 2);
  CHECK_MESSAGE(r.output.find("precision") != std::string::npos, r.output);
}

TEST_CASE("train --precision bf16: N steps straight equal N/2 + --resume + N/2, byte for byte") {
  // Dropout on and grad-accum 2, as the fp32 resume test in test_train.cpp: the resumed run must restore the
  // fp32 masters and refresh the bf16 weight copies from them (write_parameter), or step 5 would read
  // other copies. The 2-rank bf16 resume: tests/runtime/train/test_train_mpi_precision.cpp.
  const TinySetup& s = setup();
  const fs::path dir = fresh_dir("bf16-resume");
  const std::string flags = base_flags(s) + " --steps 8 --micro-batch 4 --grad-accum 2 --lr 5e-2 --precision bf16";
  run_straight_and_resumed(flags, dir, 4);
  const auto a = read_metrics(dir / "a.jsonl");
  const auto b = read_metrics(dir / "b.jsonl");
  REQUIRE(a.size() == 8);
  REQUIRE(b.size() == 8);
  for (size_t i = 0; i < a.size(); ++i) CHECK_MESSAGE(b[i].loss == a[i].loss, "step " << a[i].step);  // exact
  for (const char* file : {"model.safetensors", "optimizer.safetensors"}) {
    const std::string x = read_file(dir / "straight" / "step_8" / file);
    CHECK_MESSAGE(!x.empty(), std::string(file));
    CHECK_MESSAGE(x == read_file(dir / "split" / "step_8" / file), std::string(file) << " differs after the resume");
  }
}

TEST_CASE("train: precision flags that do not apply are exit 2 naming the flag") {
  const TinySetup& s = setup();
  const std::string ok = base_flags(s) + " --steps 2";
  struct Case {
    std::string args;
    std::string expect;
  };
  const std::vector<Case> cases = {
      {ok + " --precision fp4", "--precision: unknown precision 'fp4' (expected fp32, tf32, fp16, bf16 or fp8)"},
      {ok + " --precision fp8", "--precision fp8 is tensor-core math on H100/H200 (Hopper) GPUs"},
      {ok + " --precision tf32", "--precision tf32 is tensor-core math on A100 and later GPUs"},
      {ok + " --precision bf16 --loss-scale 1024", "--loss-scale applies to --precision fp16 only"},
      {ok + " --loss-scale 1024", "--loss-scale applies to --precision fp16 only"},
      {ok + " --precision bf16 --loss-scale-window 100", "--loss-scale-window applies to --precision fp16 only"},
      {ok + " --precision fp16 --loss-scale 1024 --loss-scale-window 100", "a static --loss-scale never changes"},
      {ok + " --precision fp16 --loss-scale 0", "--loss-scale must be a positive number"},
      {ok + " --precision fp16 --loss-scale 1e30", "--loss-scale is 1e+30"},
      {ok + " --precision fp16 --loss-scale-window 0", "--loss-scale-window must be an integer >= 1"},
  };
  for (const Case& c : cases) {
    const auto r = run_ptsim(c.args);
    CHECK_MESSAGE(r.exit_code == 2, c.args << "\n" << r.output);
    CHECK_MESSAGE(r.output.find(c.expect) != std::string::npos, c.args << "\nexpected '" << c.expect << "' in:\n" << r.output);
  }
  // A static scale is accepted and reported on every metrics line.
  const fs::path dir = fresh_dir("static-scale");
  const auto r = run_ptsim(ok + " --precision fp16 --loss-scale 512 --metrics " + quote(dir / "m.jsonl"));
  REQUIRE_MESSAGE(r.exit_code == 0, r.output);
  for (const auto& j : read_json_lines(dir / "m.jsonl")) CHECK(j.at("loss_scale") == 512.0);
}
