// tests/runtime/exec/test_step_tail_reads.cpp — the step tail queues the gradients' norm, the clip divisor,
// the skip flag and the optimizer's passes without a host read (issue #8; docs/cuda-backend.md, "The
// optimizer"): a counting Backend wrapper around the CPU backend counts every call that reads device memory
// back on a GPU (copy_to_host, synchronize, and sum_of_squares / scaled_sum_of_squares, which return a
// double through a copy) during run_step_tail, for fp32, bf16 and fp16 (with a loss scale) and AdamW, LAMB
// and LANS on the tiny BERT; then last_grad_norm() and last_step_skipped() together make exactly one copy,
// and the optimizer's step count needs no other. An fp16 overflow (a loss scale too big) is decided on the
// device the same way: zero reads in the tail, one for the verdict, the step count not advanced.
// A whole training step (two micro-steps, the tail, the next step's loss-gradient seed) with the fp16 dynamic
// loss scale in backend memory and the losses summed there reads nothing either; the metrics line's one
// read (Executor::read_step_state) brings back the loss sums, the verdict and the scale, and the step's
// results are bit for bit those of the host path (run_micro_step's losses, run_step_tail with the host
// scale, LossScaler::update): docs/cuda-backend.md, "The loss scale on the device".
// Every expected count is exact: the design promises none in the tail and one per step for the verdict.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "models/builder.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/optim/loss_scaler.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/exec/executor_test_support.hpp"

using namespace ptsim::runtime;
using namespace ptsim::models;

namespace {

// Forwards everything to the CPU backend and counts the calls that would read device memory back.
class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(std::unique_ptr<Backend> inner) : inner_(std::move(inner)) {}
  int host_reads = 0;  // copy_to_host + synchronize + sum_of_squares + scaled_sum_of_squares
  int copies_to_host = 0;

  const char* name() const override { return "counting-cpu"; }
  ComputeType compute() const override { return inner_->compute(); }
  bool stores_16bit() const override { return inner_->stores_16bit(); }
  DeviceBuffer allocate(size_t bytes) override { return inner_->allocate(bytes); }
  void free(DeviceBuffer buffer) override { inner_->free(buffer); }
  void* kernel_address(const DeviceSpan& span) override { return inner_->kernel_address(span); }
  bool host_addressable() const override { return inner_->host_addressable(); }
  void copy_to_device(const DeviceSpan& dst, const void* src) override { inner_->copy_to_device(dst, src); }
  void copy_to_device_async(const DeviceSpan& dst, const void* src) override { inner_->copy_to_device_async(dst, src); }
  void copy_to_host(void* dst, const DeviceSpan& src) override {
    ++host_reads;
    ++copies_to_host;
    inner_->copy_to_host(dst, src);
  }
  void copy(const DeviceSpan& dst, const DeviceSpan& src) override { inner_->copy(dst, src); }
  void fill_zero(const DeviceSpan& span) override { inner_->fill_zero(span); }
  Stream create_stream() override { return inner_->create_stream(); }
  Event create_event() override { return inner_->create_event(); }
  void record(Event event, Stream stream) override { inner_->record(event, stream); }
  void wait(Stream stream, Event event) override { inner_->wait(stream, event); }
  double elapsed_seconds(Event start, Event stop) override { return inner_->elapsed_seconds(start, stop); }
  void synchronize(Stream stream) override {
    ++host_reads;
    inner_->synchronize(stream);
  }
  void run(const TaskGraph& graph, const Op& op, std::span<void* const> inputs, std::span<void* const> outputs,
           const OpContext& context) override {
    inner_->run(graph, op, inputs, outputs, context);
  }
  void round_to_dtype(const DeviceSpan& span, DType dtype) override { inner_->round_to_dtype(span, dtype); }
  void scale(const DeviceSpan& span, double factor) override { inner_->scale(span, factor); }
  double sum_of_squares(const DeviceSpan& span) override {
    ++host_reads;
    return inner_->sum_of_squares(span);
  }
  double scaled_sum_of_squares(const DeviceSpan& span, DType dtype, double factor) override {
    ++host_reads;
    return inner_->scaled_sum_of_squares(span, dtype, factor);
  }
  void scaled_sum_of_squares_into(const DeviceSpan& span, DType dtype, double factor, const DeviceSpan& sum) override {
    inner_->scaled_sum_of_squares_into(span, dtype, factor, sum);
  }
  void finish_step_scalars(const DeviceSpan& scalars, const DeviceSpan& sum, double max_grad_norm) override {
    inner_->finish_step_scalars(scalars, sum, max_grad_norm);
  }
  void scaled_sum_of_squares_into_by(const DeviceSpan& span, DType dtype, const DeviceSpan& factor,
                                     const DeviceSpan& sum) override {
    inner_->scaled_sum_of_squares_into_by(span, dtype, factor, sum);
  }
  void update_loss_scale(const DeviceSpan& state, const DeviceSpan& scalars) override {
    inner_->update_loss_scale(state, scalars);
  }
  void add_to_sum(const DeviceSpan& sum, const DeviceSpan& value) override { inner_->add_to_sum(sum, value); }
  void convert(const DeviceSpan& dst, DType dst_dtype, const DeviceSpan& src, DType src_dtype) override {
    inner_->convert(dst, dst_dtype, src, src_dtype);
  }
  void optimizer_step(const optim_math::Hyperparameters& hyper, const DeviceSpan& scalars,
                      std::span<const OptimizerTensor> tensors) override {
    inner_->optimizer_step(hyper, scalars, tensors);
  }
  bool optimizer_reads_16bit_gradients() const override { return inner_->optimizer_reads_16bit_gradients(); }

 private:
  std::unique_ptr<Backend> inner_;
};

struct TailCounts {
  int tail_reads = 0;      // during run_step_tail
  int verdict_copies = 0;  // during last_grad_norm() + last_step_skipped() + step_count()
  double norm = 0;
  bool skipped = false;
  int64_t steps = 0;
};

// One micro-step of the tiny BERT at `precision` with `kind`'s graph and optimizer, then the tail with
// loss scale `scale`, counting.
// The tiny BERT of `r` on a CountingBackend over the CPU backend, parameters from seed 7.
struct CountedExecutor {
  CountingBackend* counting = nullptr;
  std::unique_ptr<Executor> executor;
  explicit CountedExecutor(const Recipe& r) {
    ExecutorOptions o;
    o.time_ops = false;
    auto owned = std::make_unique<CountingBackend>(make_cpu_backend(ComputeType::f32, 1));
    counting = owned.get();
    executor = std::make_unique<Executor>(build_task_graph(ptsim::test::tiny_bert(), r), o, std::move(owned));
    executor->init_parameters(7);
  }
};

TailCounts count_tail(Precision precision, OptimizerKind kind, double scale) {
  Recipe r = ptsim::test::fd_recipe();
  r.precision = precision;
  r.optimizer = kind;
  CountedExecutor counted(r);
  Executor& ex = *counted.executor;
  CountingBackend* counting = counted.counting;
  ptsim::test::fill_inputs(ex, 11, scale);
  ex.run_micro_step(0, 0);
  auto opt = make_optimizer(ex.backend(), default_optimizer_config(kind), ex.param_slots());
  TailCounts c;
  counting->host_reads = 0;
  ex.run_step_tail(nullptr, opt.get(), 1e-3, scale);
  c.tail_reads = counting->host_reads;
  counting->copies_to_host = 0;
  c.norm = ex.last_grad_norm();
  c.skipped = ex.last_step_skipped();
  c.steps = opt->step_count();
  c.verdict_copies = counting->copies_to_host;
  return c;
}

}  // namespace

TEST_CASE("run_step_tail reads nothing back; the verdict costs one copy, shared by the executor and the optimizer") {
  for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp16})
    for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::lamb, OptimizerKind::lans}) {
      const double scale = p == Precision::fp16 ? 1024.0 : 1.0;  // fp16: a loss scale fp16 holds
      CAPTURE(std::string(to_string(p)));
      CAPTURE(std::string(to_string(kind)));
      const TailCounts c = count_tail(p, kind, scale);
      CHECK(c.tail_reads == 0);
      CHECK(c.verdict_copies == 1);
      CHECK(std::isfinite(c.norm));
      CHECK(c.norm > 0.0);
      CHECK_FALSE(c.skipped);
      CHECK(c.steps == 1);
    }
}

TEST_CASE("an fp16 overflow is decided on the device: no read in the tail, one for the verdict, t not advanced") {
  // A loss scale of 2^24 (Apex's maximum) overflows fp16's backward (max 65504), as test_mixed_precision.cpp's overflow
  // case; the norm is then inf or NaN and the step is skipped by the flag the passes obey.
  for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::lamb, OptimizerKind::lans}) {
    CAPTURE(std::string(to_string(kind)));
    const TailCounts c = count_tail(Precision::fp16, kind, 16777216.0);
    CHECK(c.tail_reads == 0);
    CHECK(c.verdict_copies == 1);
    CHECK_FALSE(std::isfinite(c.norm));
    CHECK(c.skipped);
    CHECK(c.steps == 0);
  }
}

namespace {

// One training step's results and read counts.
struct StepResult {
  std::vector<double> loss_sums;  // loss, then the cross_entropy losses the executor keeps
  double scale_used = 0, norm = 0;
  bool skipped = false;
  int step_reads = 0;     // host reads from the first micro-step's seed through the tail
  int metrics_reads = 0;  // host reads for the metrics line (loss sums, verdict, scale, step count)
};
struct RunResult {
  std::vector<StepResult> steps;
  std::vector<std::vector<float>> parameters;  // after the last step
  double final_scale = 0;
  int64_t skipped_steps = 0, optimizer_steps = 0;
};

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// `steps` training steps of the tiny BERT (grad_accum 2, AdamW) at `precision` with an fp16 dynamic scale
// from `initial_scale` (growth after 2 clean steps), as the trainer runs them: `device` = the scale in
// backend memory (fp16) and the losses summed there (every precision), read once per step; else the host
// path (run_micro_step's losses, run_step_tail with the host scale, LossScaler::update).
RunResult run_steps(Precision precision, double initial_scale, bool device, int steps) {
  Recipe r = ptsim::test::fd_recipe();
  r.precision = precision;
  r.grad_accum = 2;
  r.optimizer = OptimizerKind::adamw;
  CountedExecutor counted(r);
  Executor& ex = *counted.executor;
  CountingBackend* counting = counted.counting;
  auto opt = make_optimizer(ex.backend(), default_optimizer_config(OptimizerKind::adamw), ex.param_slots());
  LossScalerConfig sc;
  sc.enabled = precision == Precision::fp16;
  sc.initial_scale = initial_scale;
  sc.growth_interval = 2;
  LossScaler scaler(sc);
  const bool device_scale = device && sc.enabled;
  if (device_scale) {
    REQUIRE(ex.supports_device_loss_scale());
    ex.set_device_loss_scale(scaler.device_state(2));
  }
  std::vector<int> summed;  // every kept scalar: the loss, the MLM and NSP losses
  for (int id = 0; id < static_cast<int>(ex.graph().tensors.size()); ++id)
    if (ex.has_scalar_output(id)) summed.push_back(id);
  REQUIRE(summed.size() == 3);
  RunResult run;
  for (int step = 0; step < steps; ++step) {
    StepResult s;
    s.scale_used = scaler.scale();
    s.loss_sums.assign(summed.size(), 0.0);
    const int reads_before = counting->host_reads;
    for (int micro = 0; micro < 2; ++micro) {
      ptsim::test::fill_inputs(ex, 11 + static_cast<uint64_t>(10 * step + micro), scaler.scale() / 2.0);
      if (device_scale) ex.seed_loss_gradient();  // replaces the host-written seed
      if (device) {
        ex.run_micro_step_summed(step, micro, nullptr, summed);
      } else {
        ex.run_micro_step(step, micro);
        for (size_t k = 0; k < summed.size(); ++k) s.loss_sums[k] += ex.scalar_output(summed[k]);
      }
    }
    if (device_scale) ex.run_step_tail_device_scale(nullptr, opt.get(), 1e-3);
    else ex.run_step_tail(nullptr, opt.get(), 1e-3, scaler.scale());
    s.step_reads = counting->host_reads - reads_before;
    const int metrics_before = counting->host_reads;
    if (device) {
      const StepStateRecord record = ex.read_step_state();
      for (size_t k = 0; k < summed.size(); ++k) s.loss_sums[k] = record.loss_sums[k];
      if (device_scale) scaler.mirror(record.loss_scale);
      else scaler.update(ex.last_step_skipped());
    } else {
      scaler.update(ex.last_step_skipped());
    }
    s.norm = ex.last_grad_norm();
    s.skipped = ex.last_step_skipped();
    run.optimizer_steps = opt->step_count();
    s.metrics_reads = counting->host_reads - metrics_before;
    run.steps.push_back(s);
  }
  for (size_t i = 0; i < ex.graph().params.size(); ++i) run.parameters.push_back(ex.read_parameter(i));
  run.final_scale = scaler.scale();
  run.skipped_steps = scaler.skipped_steps();
  return run;
}

void check_same_run(const RunResult& got, const RunResult& want) {
  REQUIRE(got.steps.size() == want.steps.size());
  for (size_t k = 0; k < got.steps.size(); ++k) {
    CAPTURE(k);
    for (size_t j = 0; j < want.steps[k].loss_sums.size(); ++j)
      CHECK(same_bits(got.steps[k].loss_sums[j], want.steps[k].loss_sums[j]));
    CHECK(same_bits(got.steps[k].scale_used, want.steps[k].scale_used));
    CHECK(same_bits(got.steps[k].norm, want.steps[k].norm));
    CHECK(got.steps[k].skipped == want.steps[k].skipped);
  }
  CHECK(got.parameters == want.parameters);  // float ==: every master weight the same value
  CHECK(same_bits(got.final_scale, want.final_scale));
  CHECK(got.skipped_steps == want.skipped_steps);
  CHECK(got.optimizer_steps == want.optimizer_steps);
}

}  // namespace

TEST_CASE("a training step reads nothing back: the fp16 scale and the losses stay on the device; one read after") {
  // fp16 from 1024 (clean: the scale doubles after 2 steps, at step 2), bf16 and fp32 (scale 1), 3 steps each.
  for (Precision p : {Precision::fp16, Precision::bf16, Precision::fp32}) {
    CAPTURE(std::string(to_string(p)));
    const RunResult device = run_steps(p, 1024.0, true, 3);
    const RunResult host = run_steps(p, 1024.0, false, 3);
    for (const StepResult& s : device.steps) {
      CHECK(s.step_reads == 0);
      CHECK(s.metrics_reads == 1);
      CHECK_FALSE(s.skipped);
    }
    check_same_run(device, host);
    if (p == Precision::fp16) {
      CHECK(device.steps[2].scale_used == 2048.0);  // grew after growth_interval = 2 clean steps
      CHECK(device.final_scale == 2048.0);
    }
  }
}

TEST_CASE("an fp16 overflow at 2^24 halves the device scale with no read in the step, as the host scaler does") {
  // 2^24 overflows fp16's backward (test_mixed_precision.cpp's overflow case): step 0 is skipped and the next
  // step runs at 2^23, seeded from the device state; the host path gives the same scales, skips and weights.
  const RunResult device = run_steps(Precision::fp16, 16777216.0, true, 3);
  const RunResult host = run_steps(Precision::fp16, 16777216.0, false, 3);
  for (const StepResult& s : device.steps) {
    CHECK(s.step_reads == 0);
    CHECK(s.metrics_reads == 1);
  }
  CHECK(device.steps[0].skipped);
  CHECK(device.steps[1].scale_used == 8388608.0);
  CHECK(device.skipped_steps >= 1);
  check_same_run(device, host);
}
