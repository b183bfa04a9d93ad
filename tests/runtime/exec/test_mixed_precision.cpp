// tests/runtime/exec/test_mixed_precision.cpp — bf16/fp16 execution (16-bit values in fp32 storage, fp32
// masters) and fp16 loss scaling on the tiny BERT of executor_test_support.hpp:
//  * the rounding is IEEE round-to-nearest-even (ties, overflow to inf, subnormals, NaN);
//  * every 16-bit tensor an op writes holds a 16-bit value; masters and optimizer state stay fp32;
//  * one bf16 and one fp16 step agree with the fp32 step within tolerances derived from the unit roundoff;
//  * an overflow (a loss scale too big for fp16) skips the step with weights, masters and optimizer state
//    bit-identical, and halves the scale; N clean steps double it (LossScaler, as torch GradScaler).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "models/builder.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/exec/precision.hpp"
#include "runtime/optim/loss_scaler.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/exec/executor_test_support.hpp"

using namespace ptsim::runtime;
using namespace ptsim::models;
using ptsim::test::fd_recipe;
using ptsim::test::fill_inputs;
using ptsim::test::tiny_bert;

namespace {

float rounded(DType t, float x) {
  std::vector<float> v{x};
  round_to_dtype(t, v);
  return v[0];
}

bool representable(DType t, float x) { return rounded(t, x) == x || std::isnan(x); }

Recipe recipe_at(Precision p) {
  Recipe r = fd_recipe();  // batch 2 × seq 16, 3 predictions/seq, padding, no dropout
  r.precision = p;
  r.optimizer = OptimizerKind::adamw;
  return r;
}

struct StepResult {
  double loss = 0;
  std::vector<std::vector<float>> grads;  // unscaled, per parameter
};

// One micro-step of the tiny BERT (init seed 7, batch 11) and the step tail without an optimizer update
// (the gradients as the tail read them, unscaled: read_gradient), at `precision` with loss scale `scale`.
StepResult one_step(Precision precision, double scale) {
  ExecutorOptions o;
  o.time_ops = false;
  Executor ex(build_task_graph(tiny_bert(), recipe_at(precision)), o);
  ex.init_parameters(7);
  fill_inputs(ex, 11, scale);
  StepResult r;
  r.loss = ex.run_micro_step(0, 0);
  auto opt = make_optimizer(ex.backend(), default_optimizer_config(OptimizerKind::adamw), ex.param_slots());
  ex.run_step_tail(nullptr, opt.get(), 0.0, scale);  // lr 0: the weights stay
  for (size_t i = 0; i < ex.graph().params.size(); ++i) r.grads.push_back(ex.read_gradient(i));
  return r;
}

// ‖a − b‖ / ‖b‖ over all parameters, and the worst of the same ratio per tensor. Per tensor only where
// ‖b‖ ≥ 10^-3 of the global norm: some gradients are analytically zero (the attention key biases: softmax
// does not change when a constant is added to every score of a row; fp32 gives ~10^-13 of the global norm,
// rounding noise) or nearly cancel at init (the NSP and pooler biases: Σ (softmax − onehot) over two
// sequences with labels 0 and 1 and near-uniform predictions), so a ratio to them measures cancellation, not
// precision. The global norm still covers them. 13 of 46 tensors are left out on this model at init.
struct GradError {
  double global = 0;
  double worst_tensor = 0;
  size_t worst_index = 0;
  size_t excluded = 0;
};
GradError grad_error(const StepResult& a, const StepResult& b) {
  double diff = 0, ref = 0;
  std::vector<double> d(b.grads.size()), r(b.grads.size());
  for (size_t p = 0; p < b.grads.size(); ++p) {
    for (size_t k = 0; k < b.grads[p].size(); ++k) {
      const double x = a.grads[p][k], y = b.grads[p][k];
      d[p] += (x - y) * (x - y);
      r[p] += y * y;
    }
    diff += d[p];
    ref += r[p];
  }
  GradError e;
  e.global = std::sqrt(diff / ref);
  for (size_t p = 0; p < b.grads.size(); ++p) {
    if (std::sqrt(r[p]) < 1e-3 * std::sqrt(ref)) {
      ++e.excluded;
      continue;
    }
    const double rel = std::sqrt(d[p] / r[p]);
    if (rel > e.worst_tensor) {
      e.worst_tensor = rel;
      e.worst_index = p;
    }
  }
  return e;
}

}  // namespace

TEST_CASE("round_to_dtype: IEEE round-to-nearest-even to bf16 and fp16") {
  // bf16 keeps 8 significand bits: 1 + 2^-8 is the tie between 1 and 1 + 2^-7 → even (1); 1 + 3·2^-8 → 1 + 2^-6.
  CHECK(rounded(DType::bf16, 1.0f + 0x1.0p-8f) == 1.0f);
  CHECK(rounded(DType::bf16, 1.0f + 3 * 0x1.0p-8f) == 1.0f + 0x1.0p-6f);
  CHECK(rounded(DType::bf16, 1.0f + 0x1.8p-8f) == 1.0f + 0x1.0p-7f);  // above the tie → up
  CHECK(rounded(DType::bf16, 3e38f) == 0x1.c4p+127f);                 // fp32's range: no overflow
  // fp16 keeps 11 bits and tops out at 65504; 65520 is the tie with 65536 (not representable) → inf.
  CHECK(rounded(DType::f16, 1.0f + 0x1.0p-11f) == 1.0f);
  CHECK(rounded(DType::f16, 1.0f + 0x1.8p-11f) == 1.0f + 0x1.0p-10f);
  CHECK(rounded(DType::f16, 65504.0f) == 65504.0f);
  CHECK(rounded(DType::f16, 65519.0f) == 65504.0f);
  CHECK(std::isinf(rounded(DType::f16, 65520.0f)));
  CHECK(std::isinf(rounded(DType::f16, -1e6f)));
  CHECK(rounded(DType::f16, 0x1.0p-24f) == 0x1.0p-24f);  // the smallest subnormal
  CHECK(rounded(DType::f16, 0x1.0p-26f) == 0.0f);       // below half of it → 0
  CHECK(std::isnan(rounded(DType::f16, std::numeric_limits<float>::quiet_NaN())));
  CHECK(std::isnan(rounded(DType::bf16, std::numeric_limits<float>::quiet_NaN())));
  CHECK(rounded(DType::f32, 1.0f + 0x1.0p-20f) == 1.0f + 0x1.0p-20f);  // other dtypes untouched
}

TEST_CASE("bf16/fp16 graphs: 16-bit tensors hold 16-bit values, masters and fp32 tensors do not have to") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    ExecutorOptions o;
    o.time_ops = false;
    const DType half = activation_dtype(p);
    int checked = 0;
    // After every op, each 16-bit output must be representable (the 16-bit store); the plan may reuse the
    // bytes later, so this is the moment to look.
    Executor* self = nullptr;
    o.after_op = [&](const Op& op) {
      for (int id : op.outputs) {
        const Tensor& t = self->graph().tensor(id);
        if (t.dtype != half) continue;
        for (float v : self->read_tensor<float>(id)) REQUIRE_MESSAGE(representable(half, v), op.name << " wrote " << v << " into " << t.name);
        ++checked;
      }
    };
    Executor ex(build_task_graph(tiny_bert(), recipe_at(p)), o);
    self = &ex;
    ex.init_parameters(7);
    fill_inputs(ex, 11, p == Precision::fp16 ? 1024.0 : 1.0);
    ex.run_micro_step(0, 0);
    CHECK(checked > 100);
    const TaskGraph& g = ex.graph();
    // The masters are the fp32 init (some values not representable in 16 bits); the weights their rounding.
    bool some_master_is_not_16bit = false;
    for (size_t i = 0; i < g.params.size(); ++i) {
      REQUIRE(g.params[i].master >= 0);
      const std::vector<float> master = ex.read_parameter(i);
      const std::vector<float> weight = ex.read_tensor<float>(g.params[i].weight);
      REQUIRE(master == ex.read_tensor<float>(g.params[i].master));  // the parameter's values are its master's
      for (size_t k = 0; k < master.size(); ++k) {
        REQUIRE(weight[k] == rounded(half, master[k]));
        some_master_is_not_16bit |= !representable(half, master[k]);
      }
    }
    CHECK(some_master_is_not_16bit);
    // An AdamW step updates the masters in fp32 and refreshes the weight copies from them.
    auto opt = make_optimizer(ex.backend(), default_optimizer_config(OptimizerKind::adamw), ex.param_slots());
    ex.run_step_tail(nullptr, opt.get(), 1e-3, p == Precision::fp16 ? 1024.0 : 1.0);
    REQUIRE_FALSE(ex.last_step_skipped());
    CHECK(opt->step_count() == 1);
    for (size_t i = 0; i < g.params.size(); ++i) {
      const std::vector<float> master = ex.read_parameter(i);
      const std::vector<float> weight = ex.read_tensor<float>(g.params[i].weight);
      for (size_t k = 0; k < master.size(); ++k) REQUIRE(weight[k] == rounded(half, master[k]));
    }
  }
}

// Tolerances. Each 16-bit store rounds with relative error ≤ u (unit roundoff: 2^-8 for bf16's 8 significand
// bits, 2^-11 for fp16's 11); products of 16-bit values are exact in fp32 and sums accumulate in fp32, so
// the 16-bit stores (and the rounded weights) are the only extra errors. A gradient element depends on the
// forward chain of one tiny-BERT layer stack plus head (about 30 stores from the embedding to the loss) and
// the backward chain back (as many): 60 stores of independent rounding errors add up like a random walk,
// √60·u ≈ 8u, and LayerNorm/softmax/GELU derivatives amplify them by O(1) factors, so the gradient's relative
// error in the 2-norm is allowed 16u globally and 32u for the worst single tensor (small tensors average
// fewer errors). The loss is one forward chain: 8u. Measured (this seed; the MESSAGEs print them):
// bf16 loss 1.0e-5 (0.003u), gradients 6.7e-3 global (1.7u), 0.015 worst tensor (3.8u, layer 1's attention
// output LayerNorm gain); fp16 (loss scale 2^16) loss 3.8e-6 (0.008u), gradients 1.0e-3 (2.0u), 2.2e-3
// worst (4.5u, the same tensor).
TEST_CASE("one bf16 and one fp16 step of the tiny BERT agree with the fp32 step within the derived tolerances") {
  const StepResult f32 = one_step(Precision::fp32, 1.0);
  struct Case {
    Precision p;
    double u;
    double scale;
  };
  for (const Case& c : {Case{Precision::bf16, 0x1.0p-8, 1.0}, Case{Precision::fp16, 0x1.0p-11, 65536.0}}) {
    const StepResult half = one_step(c.p, c.scale);
    const double loss_error = std::abs(half.loss - f32.loss) / std::abs(f32.loss);
    const GradError e = grad_error(half, f32);
    const TaskGraph g = build_task_graph(tiny_bert(), recipe_at(c.p));
    MESSAGE(std::string(to_string(c.p)) << ": loss " << half.loss << " vs fp32 " << f32.loss << " (relative " << loss_error << " = "
                           << loss_error / c.u << "u); gradients relative " << e.global << " (" << e.global / c.u
                           << "u), worst tensor " << e.worst_tensor << " (" << e.worst_tensor / c.u << "u, "
                           << g.params[e.worst_index].name << "; " << e.excluded << " tensors with ~0 gradients left out)");
    CHECK(loss_error <= 8 * c.u);
    CHECK(e.global <= 16 * c.u);
    CHECK(e.worst_tensor <= 32 * c.u);
    CHECK(e.global > 0);  // the 16-bit run really rounded something
  }
}

TEST_CASE("fp16 overflow: the step is skipped, weights, masters and optimizer state stay bit-identical, the scale halves") {
  ExecutorOptions o;
  o.time_ops = false;
  Executor ex(build_task_graph(tiny_bert(), recipe_at(Precision::fp16)), o);
  ex.init_parameters(7);
  auto opt = make_optimizer(ex.backend(), default_optimizer_config(OptimizerKind::adamw), ex.param_slots());
  const TaskGraph& g = ex.graph();
  // Two clean steps at 2^10 first, so the moments and the step counter are not trivially zero.
  LossScalerConfig sc;
  sc.enabled = true;
  sc.initial_scale = 1024.0;
  sc.growth_interval = 2000;
  LossScaler clean(sc);
  for (int step = 0; step < 2; ++step) {
    fill_inputs(ex, 11 + static_cast<uint64_t>(step), clean.scale());
    ex.run_micro_step(step, 0);
    ex.run_step_tail(nullptr, opt.get(), 1e-3, clean.scale());
    REQUIRE_FALSE(ex.last_step_skipped());
    clean.update(false);
  }
  REQUIRE(opt->step_count() == 2);
  // 2^24 (Apex's maximum scale): dlogits = scale·(softmax − onehot)/5 labelled rows reach ~3·10^6 > 65504,
  // so fp16 gradients overflow for real (inf, then NaN downstream).
  sc.initial_scale = 16777216.0;
  LossScaler scaler(sc);
  std::vector<std::vector<float>> masters, weights;
  for (size_t i = 0; i < g.params.size(); ++i) {
    masters.push_back(ex.read_parameter(i));
    weights.push_back(ex.read_tensor<float>(g.params[i].weight));
  }
  const OptimizerState state_before = opt->save_state();
  fill_inputs(ex, 13, scaler.scale());
  const double loss = ex.run_micro_step(2, 0);
  CHECK(std::isfinite(loss));  // the forward is not scaled: only the gradients overflow
  bool some_inf = false;
  for (const Parameter& p : g.params)
    for (float v : ex.read_tensor<float>(p.gradient)) some_inf |= !std::isfinite(v);
  REQUIRE(some_inf);
  ex.run_step_tail(nullptr, opt.get(), 1e-3, scaler.scale());
  CHECK(ex.last_step_skipped());
  scaler.update(ex.last_step_skipped());
  CHECK(scaler.scale() == 8388608.0);  // halved
  CHECK(scaler.skipped_steps() == 1);
  CHECK(opt->step_count() == 2);  // bias correction's t not advanced
  const OptimizerState state_after = opt->save_state();
  REQUIRE(state_after.arrays.size() == state_before.arrays.size());
  for (size_t a = 0; a < state_before.arrays.size(); ++a)
    CHECK(std::memcmp(state_after.arrays[a].values.data(), state_before.arrays[a].values.data(),
                      state_before.arrays[a].values.size() * sizeof(float)) == 0);
  for (size_t i = 0; i < g.params.size(); ++i) {
    CHECK(std::memcmp(ex.read_parameter(i).data(), masters[i].data(), masters[i].size() * sizeof(float)) == 0);
    CHECK(std::memcmp(ex.read_tensor<float>(g.params[i].weight).data(), weights[i].data(), weights[i].size() * sizeof(float)) == 0);
  }
  // The next step at a sane scale trains again.
  fill_inputs(ex, 13, 1024.0);
  ex.run_micro_step(3, 0);
  ex.run_step_tail(nullptr, opt.get(), 1e-3, 1024.0);
  CHECK_FALSE(ex.last_step_skipped());
  CHECK(opt->step_count() == 3);
  // The scalars the passes read (step_scalars.hpp) are step 3's: the skipped step did not advance t, and its
  // bias corrections are adam_step(…, 3, …)'s, bit for bit.
  optim_math::StepScalars scalars;
  ex.backend().copy_to_host(&scalars, opt->step_scalars_span());
  CHECK(scalars.t == 3);
  optim_math::Hyperparameters h;
  h.beta1 = opt->config().beta1;
  h.beta2 = opt->config().beta2;
  const optim_math::AdamStep expected = optim_math::adam_step(h, 3, true);
  CHECK(std::memcmp(&scalars.bc1, &expected.bc1, sizeof(float)) == 0);
  CHECK(std::memcmp(&scalars.bc2, &expected.bc2, sizeof(float)) == 0);
}

TEST_CASE("fp16 dynamic scale: doubles after N clean steps through the executor, halves on overflow") {
  ExecutorOptions o;
  o.time_ops = false;
  Executor ex(build_task_graph(tiny_bert(), recipe_at(Precision::fp16)), o);
  ex.init_parameters(7);
  auto opt = make_optimizer(ex.backend(), default_optimizer_config(OptimizerKind::adamw), ex.param_slots());
  LossScalerConfig sc;
  sc.enabled = true;
  sc.initial_scale = 256.0;  // far below overflow for this model (gradients ≤ ~1 × 256)
  sc.growth_interval = 3;
  LossScaler scaler(sc);
  std::vector<double> scales;
  for (int step = 0; step < 7; ++step) {
    scales.push_back(scaler.scale());
    fill_inputs(ex, 20 + static_cast<uint64_t>(step), scaler.scale());
    ex.run_micro_step(step, 0);
    ex.run_step_tail(nullptr, opt.get(), 1e-3, scaler.scale());
    REQUIRE_FALSE(ex.last_step_skipped());
    scaler.update(false);
  }
  CHECK(scales == std::vector<double>{256, 256, 256, 512, 512, 512, 1024});
  CHECK(scaler.clean_steps_in_a_row() == 1);
  scaler.update(true);  // an overflow restarts the count
  CHECK(scaler.scale() == 512.0);
  CHECK(scaler.clean_steps_in_a_row() == 0);
}

TEST_CASE("LossScaler: static scales never change, disabled is 1, JSON round-trips and is checked") {
  LossScalerConfig off;
  LossScaler none(off);
  none.update(true);
  CHECK(none.scale() == 1.0);
  CHECK(none.skipped_steps() == 1);
  LossScalerConfig st;
  st.enabled = true;
  st.dynamic = false;
  st.initial_scale = 128.0;
  LossScaler fixed(st);
  for (int i = 0; i < 5; ++i) fixed.update(i == 2);
  CHECK(fixed.scale() == 128.0);
  CHECK(fixed.skipped_steps() == 1);
  // The cap: Apex's 2^24.
  LossScalerConfig big;
  big.enabled = true;
  big.initial_scale = 16777216.0;
  big.growth_interval = 1;
  LossScaler capped(big);
  capped.update(false);
  CHECK(capped.scale() == 16777216.0);
  // Round trip, and a mismatching configuration is an InputError naming the field.
  LossScalerConfig dyn;
  dyn.enabled = true;
  dyn.growth_interval = 4;
  LossScaler a(dyn);
  a.update(false);
  a.update(true);
  a.update(false);
  LossScaler b(dyn);
  b.load_json(a.to_json(), "test");
  CHECK(b.to_json() == a.to_json());
  CHECK(b.scale() == 32768.0);
  LossScalerConfig other = dyn;
  other.growth_interval = 5;
  LossScaler c(other);
  CHECK_THROWS_WITH_AS(c.load_json(a.to_json(), "test"), doctest::Contains("growth_interval"), ptsim::core::InputError);
  auto j = a.to_json();
  j["growth_tracker"] = 9;
  CHECK_THROWS_WITH_AS(b.load_json(j, "test"), doctest::Contains("growth_tracker"), ptsim::core::InputError);
  // Out-of-range configurations.
  LossScalerConfig bad = dyn;
  bad.initial_scale = 0.0;
  CHECK_THROWS_AS(LossScaler{bad}, ptsim::core::InputError);
  bad = dyn;
  bad.growth_interval = 0;
  CHECK_THROWS_AS(LossScaler{bad}, ptsim::core::InputError);
  // Halving below 2^-24 means the forward itself is inf/NaN: an error, not an endless loop of skips.
  LossScalerConfig tiny = dyn;
  tiny.initial_scale = 0x1.0p-24;
  LossScaler t(tiny);
  CHECK_THROWS_AS(t.update(true), std::runtime_error);
}
