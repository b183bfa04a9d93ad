// tests/runtime/optim/test_step_scalars.cpp — the optimizer's per-step scalars (runtime/optim/step_scalars.hpp)
// against the host expressions they replaced as kernel arguments (adam_step's coefficients,
// static_cast<float> of lr and the clip divisor, fp32(grad_factor)), bit for bit; the skip flag of the CPU
// reference and of Backend's host-copy default (a skipped step changes no weight or moment); and the
// Optimizer writing the scalars into its backend buffer once per step; finish_norm (the step tail's norm
// verdict formed where Σg² lies) against the host expressions it replaced, and the two backend ops around it. Every expected value is the host
// expression itself, compared by bits (memcmp): no tolerance, because the struct must carry exactly what
// the kernels were given before.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/exec/cpu_optimizer.hpp"
#include "runtime/optim/optimizer.hpp"
#include "runtime/optim/step_scalars.hpp"

using namespace ptsim::runtime;
using optim_math::AdamStep;
using optim_math::StepInputs;
using optim_math::StepScalars;

namespace {

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same_step(const AdamStep& a, const AdamStep& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

optim_math::Hyperparameters hyper(optim_math::Rule rule) {
  optim_math::Hyperparameters h;  // BERT's LAMB values (0.9, 0.999, 1e-6, λ 0.01); the rule varies
  h.rule = rule;
  return h;
}

}  // namespace

TEST_CASE("step_scalars carries the host expressions bit for bit; with_bias_corrections gives adam_step") {
  // t = 1 (bias corrections 1 − β), mid-run, and large t where β2^t underflows towards 0 (bc → 1).
  const int64_t steps[] = {1, 2, 7, 1000, 123456, int64_t{1} << 40};
  const double lrs[] = {0.0, 1e-3, 6e-3 / 7.0, 0.1};
  const double clips[] = {1.0, 1.7, 1.0 / 3.0, 1e30};
  const double factors[] = {1.0, 1.0 / 3000.0, std::ldexp(1.0, -15)};
  for (optim_math::Hyperparameters h : {hyper(optim_math::Rule::lamb), hyper(optim_math::Rule::adamw)}) {
    h.beta2 = h.rule == optim_math::Rule::adamw ? 0.98 : 0.999;
    for (int64_t t : steps)
      for (double lr : lrs)
        for (double clip : clips)
          for (double factor : factors) {
            CAPTURE(t);
            CAPTURE(lr);
            CAPTURE(clip);
            CAPTURE(factor);
            const StepInputs in{lr, t, clip, factor};
            const StepScalars s = optim_math::step_scalars(h, in);
            CHECK(s.t == t);
            CHECK(s.skip == 0);
            CHECK(same_bits(s.lr, lr));
            CHECK(same_bits(s.clip_divisor, clip));
            CHECK(same_bits(s.lr_f32, static_cast<float>(lr)));
            CHECK(same_bits(s.clip, static_cast<float>(clip)));
            CHECK(same_bits(s.grad_factor, static_cast<float>(factor)));
            for (bool decay : {true, false}) {
              // What the kernels get now (step 1's fixed part + the step's corrections) against what they
              // got by value before (adam_step of step t).
              const AdamStep now = optim_math::with_bias_corrections(optim_math::adam_step(h, 1, decay), s);
              CHECK(same_step(now, optim_math::adam_step(h, t, decay)));
            }
          }
  }
}

TEST_CASE("a skipped step changes no weight or moment: the CPU backend's pass and Backend's host-copy default") {
  // One tensor straddling a chunk boundary (2^15 + 3 elements), all values non-zero.
  const size_t n = (size_t{1} << 15) + 3;
  auto backend = make_cpu_backend(ComputeType::f32, 2);
  for (bool host_copies : {false, true})
    for (optim_math::Rule rule :
         {optim_math::Rule::adamw, optim_math::Rule::lamb, optim_math::Rule::lans, optim_math::Rule::sgd}) {
      CAPTURE(host_copies);
      CAPTURE(static_cast<int>(rule));
      const std::vector<float> w0(n, 0.25f), g0(n, -0.5f), m0(n, 0.125f), v0(n, 0.0625f);
      DeviceBuffer buf[4], scalars = backend->allocate(sizeof(StepScalars));
      const std::vector<float>* init[4] = {&w0, &g0, &m0, &v0};
      for (int k = 0; k < 4; ++k) {
        buf[k] = backend->allocate(n * sizeof(float));
        backend->copy_to_device(DeviceSpan::of(buf[k]), init[k]->data());
      }
      const OptimizerTensor t{DeviceSpan::of(buf[0]), DeviceSpan::of(buf[1]),
                              {DeviceSpan::of(buf[2]), DeviceSpan::of(buf[3])}, true, ptsim::models::DType::f32};
      auto step = [&](int32_t skip) {
        StepScalars s = optim_math::step_scalars(hyper(rule), StepInputs{1e-2, 3, 1.0, 1.0});
        s.skip = skip;
        backend->copy_to_device_async(DeviceSpan::of(scalars), &s);
        if (host_copies) backend->Backend::optimizer_step(hyper(rule), DeviceSpan::of(scalars), {&t, 1});
        else backend->optimizer_step(hyper(rule), DeviceSpan::of(scalars), {&t, 1});
      };
      auto read = [&](int k) {
        std::vector<float> x(n);
        backend->copy_to_host(x.data(), DeviceSpan::of(buf[k]));
        return x;
      };
      step(1);
      CHECK(read(0) == w0);
      CHECK(read(2) == m0);
      CHECK(read(3) == v0);
      step(0);  // the same step not skipped changes the weights: the comparisons above can fail
      CHECK(read(0)[0] != w0[0]);
      CHECK(read(0)[n - 1] != w0[n - 1]);
      for (DeviceBuffer b : buf) backend->free(b);
      backend->free(scalars);
    }
}

TEST_CASE("Optimizer::step_begin writes this step's scalars into its backend buffer, once per step") {
  auto backend = make_cpu_backend(ComputeType::f32);
  const size_t n = 10;
  DeviceBuffer weights = backend->allocate(n * sizeof(float)), grads = backend->allocate(n * sizeof(float));
  {
    OptimizerConfig config = default_optimizer_config(ptsim::models::OptimizerKind::lamb);  // clips at 1.0
    Optimizer opt(*backend, config, {ParamSlot{"w", DeviceSpan::of(weights), DeviceSpan::of(grads), n, true}});
    auto read = [&] {
      StepScalars s;
      backend->copy_to_host(&s, opt.step_scalars_span());
      return s;
    };
    opt.step_begin(2e-3, 4.0, 0.5);  // norm 4 > max 1: divisor 4
    StepScalars s = read();
    CHECK(s.t == 1);
    CHECK(same_bits(s.lr, 2e-3));
    CHECK(same_bits(s.clip_divisor, 4.0));
    CHECK(same_bits(s.grad_factor, 0.5f));
    CHECK(same_bits(s.bc2, optim_math::adam_step(hyper(optim_math::Rule::lamb), 1, true).bc2));
    opt.update_all();
    opt.step_end();
    opt.step_begin(1e-3, 0.5);  // under the threshold: not clipped; step 2
    s = read();
    CHECK(s.t == 2);
    CHECK(same_bits(s.clip_divisor, 1.0));
    CHECK(same_bits(s.bc1, optim_math::adam_step(hyper(optim_math::Rule::lamb), 2, true).bc1));
    opt.update_all();
    opt.step_end();
  }
  backend->free(weights);
  backend->free(grads);
}

// The expressions finish_norm replaces, as the executor and Optimizer::step_begin wrote them on the host:
// norm = std::sqrt(Σg²); skip = !std::isfinite(norm); divisor = norm / max when clipping (max > 0) and
// norm > max, else 1; clip = fp32(divisor).
namespace {
struct HostVerdict {
  double norm, divisor;
  bool skip;
};
HostVerdict host_verdict(double sum_of_squares, double max_norm) {
  const double norm = std::sqrt(sum_of_squares);
  const bool skip = !std::isfinite(norm);
  const double divisor = !skip && max_norm > 0.0 && norm > max_norm ? norm / max_norm : 1.0;
  return {norm, divisor, skip};
}
}  // namespace

TEST_CASE("finish_norm gives the host's norm, clip divisor and skip flag bit for bit; Backend's default and the CPU agree") {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  // Σg²: 0, tiny, exactly max² (norm = max: not clipped), just above, irrational roots, huge, inf, NaN.
  const double sums[] = {0.0, 1e-300, 1.0, std::nextafter(1.0, 2.0), 2.0, 0.3, 46.09, 1e30, 1e308, inf, nan};
  const double maxes[] = {1.0, 0.0, -1.0, 0.5, 3.0};  // <= 0: no clipping
  auto backend = make_cpu_backend(ComputeType::f32, 1);
  DeviceBuffer scalars_buffer = backend->allocate(sizeof(StepScalars));
  DeviceBuffer sum_buffer = backend->allocate(sizeof(double));
  const DeviceSpan scalars = DeviceSpan::of(scalars_buffer), sum = DeviceSpan::of(sum_buffer);
  for (double q : sums)
    for (double max_norm : maxes) {
      CAPTURE(q);
      CAPTURE(max_norm);
      StepScalars s = optim_math::step_scalars(hyper(optim_math::Rule::lamb), StepInputs{1e-3, 5, 1.0, 0.25});
      const StepScalars before = s;
      optim_math::finish_norm(s, q, max_norm);
      const HostVerdict h = host_verdict(q, max_norm);
      CHECK(same_bits(s.grad_norm, h.norm));  // NaN stays the same NaN: std::sqrt of it
      CHECK(same_bits(s.grad_norm_f32, static_cast<float>(h.norm)));
      CHECK(s.skip == (h.skip ? 1 : 0));
      CHECK(same_bits(s.clip_divisor, h.divisor));
      CHECK(same_bits(s.clip, static_cast<float>(h.divisor)));
      // The host's part is left as step_scalars wrote it.
      CHECK(same_bits(s.lr, before.lr));
      CHECK(s.t == before.t);
      CHECK(same_bits(s.bc1, before.bc1));
      CHECK(same_bits(s.bc2, before.bc2));
      CHECK(same_bits(s.grad_factor, before.grad_factor));
      // The backend ops: the CPU backend in place and Backend's host-copy default, the same bytes.
      for (bool host_copies : {false, true}) {
        backend->copy_to_device(scalars, &before);
        backend->copy_to_device(sum, &q);
        if (host_copies) backend->Backend::finish_step_scalars(scalars, sum, max_norm);
        else backend->finish_step_scalars(scalars, sum, max_norm);
        StepScalars got;
        backend->copy_to_host(&got, scalars);
        CHECK(std::memcmp(&got, &s, sizeof s) == 0);
      }
    }
  // The named cases, spelled out: exactly at the threshold no clipping; above it norm / max.
  StepScalars at;
  optim_math::finish_norm(at, 4.0, 2.0);
  CHECK(at.clip_divisor == 1.0);
  CHECK(at.skip == 0);
  StepScalars above;
  optim_math::finish_norm(above, 16.0, 2.0);
  CHECK(above.clip_divisor == 2.0);
  StepScalars overflow;
  optim_math::finish_norm(overflow, inf, 1.0);
  CHECK(overflow.skip == 1);
  CHECK(overflow.clip_divisor == 1.0);
  backend->free(sum_buffer);
  backend->free(scalars_buffer);
}

TEST_CASE("scaled_sum_of_squares_into adds the returned double to the sum: CPU in place and Backend's default") {
  // A 16-bit-free f32 array straddling a chunk (2^15 + 5 elements) and a factor: the same double as the host
  // adding scaled_sum_of_squares' result to a running sum.
  const size_t n = (size_t{1} << 15) + 5;
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = static_cast<float>(std::sin(0.37 * static_cast<double>(i))) * 3.0f;
  auto backend = make_cpu_backend(ComputeType::f32, 2);
  DeviceBuffer xb = backend->allocate(n * sizeof(float)), sb = backend->allocate(sizeof(double));
  const DeviceSpan xs = DeviceSpan::of(xb), sum = DeviceSpan::of(sb);
  backend->copy_to_device(xs, x.data());
  for (double factor : {1.0, 1.0 / 3000.0})
    for (bool host_copies : {false, true}) {
      CAPTURE(factor);
      CAPTURE(host_copies);
      const double start = 0.1;  // a running sum that is not 0
      backend->copy_to_device(sum, &start);
      if (host_copies) backend->Backend::scaled_sum_of_squares_into(xs, ptsim::models::DType::f32, factor, sum);
      else backend->scaled_sum_of_squares_into(xs, ptsim::models::DType::f32, factor, sum);
      double got = 0.0;
      backend->copy_to_host(&got, sum);
      const double expected = start + backend->scaled_sum_of_squares(xs, ptsim::models::DType::f32, factor);
      CHECK(same_bits(got, expected));
    }
  backend->free(sb);
  backend->free(xb);
}

TEST_CASE("a skipped step_begin_on_device step does not count, whenever its verdict is read") {
  // Σg² = inf (an fp16 overflow): finish_norm sets skip, so t must not advance — whether the verdict is read
  // after step_end (lazily, by step_count) or inside the step (last_step_verdict before step_end).
  auto backend = make_cpu_backend(ComputeType::f32);
  const size_t n = 10;
  DeviceBuffer weights = backend->allocate(n * sizeof(float)), grads = backend->allocate(n * sizeof(float)),
               sum_buffer = backend->allocate(sizeof(double));
  {
    Optimizer opt(*backend, default_optimizer_config(ptsim::models::OptimizerKind::adamw),
                  {ParamSlot{"w", DeviceSpan::of(weights), DeviceSpan::of(grads), n, true}});
    const DeviceSpan sum = DeviceSpan::of(sum_buffer);
    const double overflow = std::numeric_limits<double>::infinity(), clean = 4.0;
    for (bool read_inside : {false, true}) {
      CAPTURE(read_inside);
      const int64_t serial = opt.step_serial();
      backend->copy_to_device(sum, &overflow);
      opt.step_begin_on_device(1e-3, sum, 1.0);
      if (read_inside) CHECK(opt.last_step_verdict().skipped);
      opt.update_all();
      opt.step_end();
      CHECK(opt.step_count() == 0);
      CHECK(opt.step_serial() == serial + 1);
    }
    backend->copy_to_device(sum, &clean);  // a clean step counts, read inside or not
    opt.step_begin_on_device(1e-3, sum, 1.0);
    CHECK_FALSE(opt.last_step_verdict().skipped);
    opt.update_all();
    opt.step_end();
    CHECK(opt.step_count() == 1);
  }
  backend->free(sum_buffer);
  backend->free(grads);
  backend->free(weights);
}
