// tests/runtime/test_optimizers.cpp — AdamW, NVLAMB, LANS, SGD against steps computed by hand, run as the
// runtime runs them (Backend::optimizer_step on the CPU backend, through tests/runtime/host_optimizer.hpp).
// Every expected number below is derived in the comment above it from the formulas in
// docs/optimizers-and-checkpoints.md; the optimizer computes element-wise in
// fp32, so the tolerance is 1e-6 relative (fp32 rounding is ~6e-8 per operation).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/host_optimizer.hpp"

using ptsim::core::InputError;
using ptsim::models::OptimizerKind;
using namespace ptsim::runtime;
using ptsim::test::HostOptimizer;

namespace {

constexpr double kRel = 1e-6;

void check_rel(double got, double want, const char* what) {
  INFO(what << ": got " << got << ", want " << want);
  CHECK(std::abs(got - want) <= kRel * std::abs(want));
}

void check_all(const std::vector<float>& got, const std::vector<double>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (std::size_t k = 0; k < got.size(); ++k) check_rel(got[k], want[k], what);
}

// One tensor with its own weight and gradient buffers.
struct Tensor {
  std::string name;
  std::vector<float> w, g;
  bool decay = true;
  ptsim::test::HostTensor slot() { return {name, &w, &g, decay}; }
};

OptimizerConfig config_for(OptimizerKind kind) { return default_optimizer_config(kind); }

const std::vector<float>& state_array(const OptimizerState& s, const std::string& name) {
  for (const NamedArray& a : s.arrays)
    if (a.name == name) return a.values;
  FAIL("no state array " << name);
  static std::vector<float> none;
  return none;
}

}  // namespace

TEST_CASE("AdamW: two steps by hand (β 0.9/0.999, ε 1e-8, λ 0.01, lr 0.1)") {
  Tensor t{"w", {1.0f, -2.0f}, {0.5f, -1.0f}};
  HostOptimizer opt(config_for(OptimizerKind::adamw), {t.slot()});
  // Step 1, g = [0.5, -1]:
  //   m = 0.1·g = [0.05, -0.1];  v = 0.001·g² = [0.00025, 0.001]
  //   m̂ = m/(1−0.9) = [0.5, -1];  v̂ = v/(1−0.999) = [0.25, 1];  √v̂ = [0.5, 1]
  //   m̂/(√v̂+ε) = [0.5/0.50000001, −1/1.00000001] = [0.99999998, −0.99999999]
  //   u = that + 0.01·w = [0.99999998 + 0.01, −0.99999999 − 0.02] = [1.00999998, −1.01999999]
  //   w = w − 0.1·u = [1 − 0.100999998, −2 + 0.101999999] = [0.899000002, −1.898000001]
  opt.step(0.1);
  check_all(t.w, {0.899000002, -1.898000001}, "adamw w1");
  check_all(state_array(opt.save_state(), "w.m"), {0.05, -0.1}, "adamw m1");
  check_all(state_array(opt.save_state(), "w.v"), {0.00025, 0.001}, "adamw v1");
  // Step 2, g = [0.25, 0.5]:
  //   m = 0.9·[0.05, −0.1] + 0.1·[0.25, 0.5] = [0.045 + 0.025, −0.09 + 0.05] = [0.07, −0.04]
  //   v = 0.999·[0.00025, 0.001] + 0.001·[0.0625, 0.25] = [0.00024975 + 0.0000625, 0.000999 + 0.00025]
  //     = [0.00031225, 0.001249]
  //   bias corrections: 1 − 0.9² = 0.19, 1 − 0.999² = 0.001999
  //   m̂ = [0.07/0.19, −0.04/0.19] = [0.368421053, −0.210526316]
  //   v̂ = [0.00031225/0.001999, 0.001249/0.001999] = [0.156203102, 0.624812406]; √v̂ = [0.395225381, 0.790450761]
  //   m̂/(√v̂+ε) = [0.368421053/0.395225391, −0.210526316/0.790450771] = [0.932179615, −0.266337036]
  //   u = that + 0.01·[0.899000002, −1.898000001] = [0.941169615, −0.285317036]
  //   w = [0.899000002 − 0.0941169615, −1.898000001 + 0.0285317036] = [0.804883040, −1.869468297]
  t.g = {0.25f, 0.5f};
  opt.step(0.1);
  check_all(t.w, {0.8048830404754623, -1.8694682973699033}, "adamw w2");
  check_all(state_array(opt.save_state(), "w.m"), {0.07, -0.04}, "adamw m2");
  check_all(state_array(opt.save_state(), "w.v"), {0.00031225, 0.001249}, "adamw v2");
  CHECK(opt.step_count() == 2);
}

TEST_CASE("NVLAMB: two steps by hand (β 0.9/0.999, ε 1e-6, λ 0.01, lr 0.1, clip 1.0)") {
  Tensor t{"w", {3.0f, 4.0f}, {0.6f, 0.8f}};
  HostOptimizer opt(config_for(OptimizerKind::lamb), {t.slot()});
  // Step 1, g = [0.6, 0.8]: ‖g‖ = 1, not > 1, so no clipping. (The norm is passed in, as the executor's
  // grad_norm op does: recomputed from the fp32 values 0.6f, 0.8f it would be 1.00000002.)
  //   m̂ = g, v̂ = g² (first step), so m̂/(√v̂+ε) = [0.6/0.600001, 0.8/0.800001] = [0.999998333, 0.999998750]
  //   u = that + 0.01·[3, 4] = [1.029998333, 1.039998750]
  //   ‖w‖ = 5;  ‖u‖ = √(1.029998333² + 1.039998750²) = √(1.060896567 + 1.081597400) = 1.463726056
  //   ratio = 5/1.463726056 = 3.415939738
  //   w = w − 0.1·3.415939738·u = [3 − 0.351841224, 4 − 0.365257306] = [2.648158776, 3.644742694]
  opt.step(0.1, 1.0);
  CHECK(opt.last_clip_divisor() == 1.0);
  CHECK(opt.last_grad_norm() == 1.0);
  check_all(t.w, {2.648158776297606, 3.644742694229095}, "lamb w1");
  // Step 2, g = [0.3, −0.4] (‖g‖ = 0.5, no clipping):
  //   m = 0.9·[0.06, 0.08] + 0.1·[0.3, −0.4] = [0.084, 0.032]
  //   v = 0.999·[0.00036, 0.00064] + 0.001·[0.09, 0.16] = [0.00044964, 0.00079936]
  //   m̂ = m/0.19 = [0.442105263, 0.168421053];  v̂ = v/0.001999 = [0.224932466, 0.399879940]
  //   √v̂ = [0.474270457, 0.632360609];  m̂/(√v̂+ε) = [0.932177673, 0.266336618]
  //   u = that + 0.01·[2.648158776, 3.644742694] = [0.958659261, 0.302784045]
  //   ‖w‖ = √(7.012744904 + 13.284149307) = 4.505207455;  ‖u‖ = √(0.919027579 + 0.091678178) = 1.005338628
  //   ratio = 4.505207455/1.005338628 = 4.481283549
  //   w = w − 0.1·4.481283549·u = [2.648158776 − 0.429602398, 3.644742694 − 0.135686116] = [2.218556379, 3.509056578]
  t.g = {0.3f, -0.4f};
  opt.step(0.1);
  check_all(t.w, {2.218556378729106, 3.5090565780654286}, "lamb w2");
  check_all(state_array(opt.save_state(), "w.m"), {0.084, 0.032}, "lamb m2");
  check_all(state_array(opt.save_state(), "w.v"), {0.00044964, 0.00079936}, "lamb v2");
}

TEST_CASE("LANS: two steps by hand (β 0.9/0.999, ε 1e-6, λ 0.01, lr 0.1)") {
  Tensor t{"w", {3.0f, 4.0f}, {1.2f, 1.6f}};
  HostOptimizer opt(config_for(OptimizerKind::lans), {t.slot()});
  // Step 1, g = [1.2, 1.6]: ‖g‖ = 2, ĝ = [0.6, 0.8].
  //   m = 0.1·ĝ = [0.06, 0.08];  v = 0.001·ĝ² = [0.00036, 0.00064];  m̂ = ĝ, v̂ = ĝ²
  //   r = c = ĝ/(|ĝ|+ε) = [0.999998333, 0.999998750] on the first step, so both terms share one ratio:
  //   r + λw = c + λw = [1.029998333, 1.039998750]; ‖·‖ = 1.463726056; ratio = 5/1.463726056 = 3.415939738
  //   w = w − 0.1·(0.9 + 0.1)·3.415939738·(r + λw) = [2.648158776, 3.644742694]   (same as LAMB step 1)
  opt.step(0.1);
  check_all(t.w, {2.648158776297606, 3.644742694229095}, "lans w1");
  check_all(state_array(opt.save_state(), "w.m"), {0.06, 0.08}, "lans m1");
  // Step 2, g = [0.3, −0.4]: ‖g‖ = 0.5, ĝ = [0.6, −0.8].
  //   m = 0.9·[0.06, 0.08] + 0.1·[0.6, −0.8] = [0.054 + 0.06, 0.072 − 0.08] = [0.114, −0.008]
  //   v = 0.999·[0.00036, 0.00064] + 0.001·[0.36, 0.64] = [0.00071964, 0.00127936]
  //   m̂ = m/0.19 = [0.6, −0.042105263];  v̂ = v/0.001999 = [0.36, 0.64] exactly (ĝ² was the same twice)
  //   √v̂ + ε = [0.600001, 0.800001]
  //   r = [0.6/0.600001, −0.042105263/0.800001] = [0.999998333, −0.052631513]
  //   c = ĝ/(√v̂+ε) = [0.999998333, −0.999998750]
  //   λw = 0.01·[2.648158776, 3.644742694] = [0.026481588, 0.036447427]
  //   r + λw = [1.026479921, −0.016184086];  ‖r + λw‖ = 1.026607497
  //   c + λw = [1.026479921, −0.963551323];  ‖c + λw‖ = 1.407867956
  //   ‖w‖ = 4.505207455 (as LAMB step 2)
  //   ratio_r = 4.505207455/1.026607497 = 4.388441997;  ratio_c = 4.505207455/1.407867956 = 3.200021307
  //   0.09·ratio_r·(r + λw) = [0.405418284, −0.006392063];  0.01·ratio_c·(c + λw) = [0.032847576, −0.030833848]
  //   w = [2.648158776 − 0.405418284 − 0.032847576, 3.644742694 + 0.006392063 + 0.030833848]
  //     = [2.209892917, 3.681968605]
  t.g = {0.3f, -0.4f};
  opt.step(0.1);
  check_all(t.w, {2.209892916557342, 3.681968604993475}, "lans w2");
  check_all(state_array(opt.save_state(), "w.m"), {0.114, -0.008}, "lans m2");
  check_all(state_array(opt.save_state(), "w.v"), {0.00071964, 0.00127936}, "lans v2");
}

TEST_CASE("SGD with momentum: two steps by hand (μ 0.9, λ 0, lr 0.1)") {
  Tensor t{"w", {1.0f, 2.0f}, {0.5f, -0.5f}};
  HostOptimizer opt(config_for(OptimizerKind::sgd), {t.slot()});
  // Step 1: b = g = [0.5, −0.5]; w = [1 − 0.05, 2 + 0.05] = [0.95, 2.05]
  opt.step(0.1);
  check_all(t.w, {0.95, 2.05}, "sgd w1");
  // Step 2 (same g): b = 0.9·0.5 + 0.5 = 0.95 (signs as g); w = [0.95 − 0.095, 2.05 + 0.095] = [0.855, 2.145]
  opt.step(0.1);
  check_all(t.w, {0.855, 2.145}, "sgd w2");
}

TEST_CASE("trust ratio is 1 when the weight norm is zero, and a zero update leaves the tensor alone") {
  // LAMB, w = [0, 0], g = [1, −1]: u = [1/1.000001, −1/1.000001] + 0.01·0 = [0.999999, −0.999999];
  // ‖w‖ = 0 → ratio 1 → w = −0.1·u = [−0.0999999, 0.0999999].
  Tensor z{"z", {0.0f, 0.0f}, {1.0f, -1.0f}};
  // Zero weight and zero gradient: u = 0, ‖u‖ = 0 → ratio 1, w stays 0 (no 0/0).
  Tensor zz{"zz", {0.0f, 0.0f}, {0.0f, 0.0f}};
  HostOptimizer opt(config_for(OptimizerKind::lamb), {z.slot(), zz.slot()});
  opt.step(0.1, std::sqrt(2.0));  // global norm √2 > 1: divisor √2 (Adam's first step is nearly scale-free)
  // With clipping, g/√2 = [0.7071068, −0.7071068] → u = [0.7071068/0.7071078, …] = [0.99999859, −0.99999859]
  check_all(z.w, {-0.1 * 0.70710678 / (0.70710678 + 1e-6), 0.1 * 0.70710678 / (0.70710678 + 1e-6)}, "zero-w lamb");
  CHECK(zz.w[0] == 0.0f);
  CHECK(zz.w[1] == 0.0f);

  // LANS, same zero weight: ĝ = [0.7071068, −0.7071068]; r = c = ĝ/(|ĝ|+ε) = ±0.99999859; both ratios 1 →
  // w = −0.1·(0.9 + 0.1)·r = [−0.099999859, 0.099999859]. Zero gradient block: ĝ := 0 (no 0/0), r = c = 0 → stays 0.
  Tensor lz{"z", {0.0f, 0.0f}, {1.0f, -1.0f}};
  Tensor lzz{"zz", {0.0f, 0.0f}, {0.0f, 0.0f}, false};
  HostOptimizer lans(config_for(OptimizerKind::lans), {lz.slot(), lzz.slot()});
  lans.step(0.1);
  check_all(lz.w, {-0.1 * 0.70710678 / (0.70710678 + 1e-6), 0.1 * 0.70710678 / (0.70710678 + 1e-6)}, "zero-w lans");
  CHECK(lzz.w[0] == 0.0f);
  CHECK(lzz.w[1] == 0.0f);
}

TEST_CASE("LANS with a zero gradient block stays finite") {
  // ĝ = 0 → m = v = 0 → r = c = 0; with decay, r + λw = c + λw = λw and both ratios are ‖w‖/‖λw‖ = 1/λ,
  // so w = w − lr·(0.9 + 0.1)·(1/λ)·λw = (1 − lr)·w = 0.9·[3, 4] = [2.7, 3.6] (the trust ratio's doing).
  Tensor t{"w", {3.0f, 4.0f}, {0.0f, 0.0f}};
  HostOptimizer opt(config_for(OptimizerKind::lans), {t.slot()});
  opt.step(0.1);
  check_all(t.w, {2.7, 3.6}, "lans zero grad");
  // Without decay the update is 0, ratios are 1, and w does not move.
  Tensor nd{"b", {3.0f, 4.0f}, {0.0f, 0.0f}, false};
  HostOptimizer opt2(config_for(OptimizerKind::lans), {nd.slot()});
  opt2.step(0.1);
  CHECK(nd.w == std::vector<float>{3.0f, 4.0f});
}

TEST_CASE("no weight decay on decay=false tensors") {
  // AdamW, w = [1, −2], g = [0.5, −1], decay off: u = [0.99999998, −0.99999999] (no λw);
  // w = [1 − 0.099999998, −2 + 0.099999999] = [0.900000002, −1.900000001]
  Tensor a{"bias", {1.0f, -2.0f}, {0.5f, -1.0f}, false};
  HostOptimizer adamw(config_for(OptimizerKind::adamw), {a.slot()});
  adamw.step(0.1);
  check_all(a.w, {0.900000002, -1.900000001}, "adamw no decay");
  // LAMB, w = [3, 4], g = [0.6, 0.8], decay off: u = [0.999998333, 0.999998750], ‖u‖ = 1.414211500,
  // ratio = 5/1.414211500 = 3.535539062; 0.1·ratio·u = [0.353553317, 0.353553464]
  // → w = [2.646446683, 3.646446536] (computed below from the same expressions)
  Tensor l{"ln.gamma", {3.0f, 4.0f}, {0.6f, 0.8f}, false};
  HostOptimizer lamb(config_for(OptimizerKind::lamb), {l.slot()});
  lamb.step(0.1);
  const double u0 = 0.6 / 0.600001, u1 = 0.8 / 0.800001;
  const double ratio = 5.0 / std::sqrt(u0 * u0 + u1 * u1);
  check_all(l.w, {3.0 - 0.1 * ratio * u0, 4.0 - 0.1 * ratio * u1}, "lamb no decay");
  // apex's default (use_nvlamb = false) skips the trust ratio where λ = 0: w = w − 0.1·u
  //   = [3 − 0.0999998333, 4 − 0.0999998750] = [2.9000001667, 3.9000001250]
  OptimizerConfig apex_default = config_for(OptimizerKind::lamb);
  apex_default.use_nvlamb = false;
  Tensor l2{"ln.gamma", {3.0f, 4.0f}, {0.6f, 0.8f}, false};
  Tensor l3{"dense.w", {3.0f, 4.0f}, {0.6f, 0.8f}, true};  // decayed: the ratio still applies
  HostOptimizer lamb2(apex_default, {l2.slot(), l3.slot()});
  lamb2.step(0.1, 1.0);
  check_all(l2.w, {2.9000001667, 3.9000001250}, "lamb use_nvlamb=false, no decay");
  check_all(l3.w, {2.648158776297606, 3.644742694229095}, "lamb use_nvlamb=false, decay (= NVLAMB step 1)");
}

TEST_CASE("global-norm clipping kicks in only when the norm exceeds 1") {
  // Two tensors, g = [3, 0] and [0, 4]: global norm 5 → gradients divided by 5, so m = 0.1·g/5.
  Tensor a{"a", {1.0f, 1.0f}, {3.0f, 0.0f}};
  Tensor b{"b", {1.0f, 1.0f}, {0.0f, 4.0f}};
  HostOptimizer opt(config_for(OptimizerKind::lamb), {a.slot(), b.slot()});
  opt.step(0.1);  // norm computed by the optimizer
  check_rel(opt.last_grad_norm(), 5.0, "computed norm");
  check_rel(opt.last_clip_divisor(), 5.0, "divisor");
  OptimizerState s = opt.save_state();
  check_all(state_array(s, "a.m"), {0.1 * 3.0 / 5.0, 0.0}, "clipped m (a)");
  check_all(state_array(s, "b.m"), {0.0, 0.1 * 4.0 / 5.0}, "clipped m (b)");
  check_all(state_array(s, "b.v"), {0.0, 0.001 * 0.8 * 0.8}, "clipped v (b)");

  // g = [0.3, 0] and [0, 0.4]: norm 0.5 ≤ 1 → untouched, m = 0.1·g.
  Tensor c{"a", {1.0f, 1.0f}, {0.3f, 0.0f}};
  Tensor d{"b", {1.0f, 1.0f}, {0.0f, 0.4f}};
  HostOptimizer opt2(config_for(OptimizerKind::lamb), {c.slot(), d.slot()});
  opt2.step(0.1, 0.5);  // norm passed in, as the executor's grad_norm op does
  CHECK(opt2.last_clip_divisor() == 1.0);
  check_all(state_array(opt2.save_state(), "b.m"), {0.0, 0.04}, "unclipped m");

  // Exactly at the threshold (norm 1) nothing is scaled either.
  Tensor e{"a", {1.0f}, {1.0f}};
  HostOptimizer opt3(config_for(OptimizerKind::lamb), {e.slot()});
  opt3.step(0.1);
  CHECK(opt3.last_clip_divisor() == 1.0);

  // A precomputed norm gives the same bits as the optimizer's own computation.
  Tensor a2{"a", {1.0f, 1.0f}, {3.0f, 0.0f}};
  Tensor b2{"b", {1.0f, 1.0f}, {0.0f, 4.0f}};
  HostOptimizer opt4(config_for(OptimizerKind::lamb), {a2.slot(), b2.slot()});
  opt4.step(0.1, 5.0);
  CHECK(std::memcmp(a.w.data(), a2.w.data(), 8) == 0);
  CHECK(std::memcmp(b.w.data(), b2.w.data(), 8) == 0);

  // A non-finite norm is refused (the executor must skip the step).
  CHECK_THROWS_AS(opt4.step(0.1, std::nan("")), std::invalid_argument);
}

TEST_CASE("bucket-by-bucket updates equal one-shot steps to the bit, for every optimizer") {
  for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::lamb, OptimizerKind::lans, OptimizerKind::sgd}) {
    CAPTURE(ptsim::models::to_string(kind));
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    auto make = [&](std::size_t n, const char* name, bool decay) {
      Tensor t{name, std::vector<float>(n), std::vector<float>(n), decay};
      for (auto& x : t.w) x = normal(rng);
      for (auto& x : t.g) x = normal(rng);
      return t;
    };
    std::vector<Tensor> one = {make(37, "a", true), make(5, "b", false), make(64, "c", true)};
    std::vector<Tensor> two = one;
    std::vector<ptsim::test::HostTensor> s1, s2;
    for (auto& t : one) s1.push_back(t.slot());
    for (auto& t : two) s2.push_back(t.slot());
    HostOptimizer o1(default_optimizer_config(kind), s1), o2(default_optimizer_config(kind), s2);
    for (int step = 0; step < 3; ++step) {
      o1.step(1e-2, o1.optimizer().global_grad_norm());
      o2.step_begin(1e-2, o2.optimizer().global_grad_norm());
      const std::size_t bucket1[] = {2}, bucket2[] = {0, 1};
      o2.update(bucket1);
      o2.update(bucket2);
      o2.step_end();
    }
    for (std::size_t i = 0; i < one.size(); ++i)
      CHECK(std::memcmp(one[i].w.data(), two[i].w.data(), one[i].w.size() * sizeof(float)) == 0);
    // Updating a slot twice in one step is a bug in the caller.
    o2.step_begin(1e-2, 1.0);
    const std::size_t twice[] = {0, 0};
    CHECK_THROWS_AS(o2.update(twice), std::logic_error);
  }
}

TEST_CASE("save_state / load_state round-trip bit-exactly and continue identically") {
  for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::lamb, OptimizerKind::lans, OptimizerKind::sgd}) {
    CAPTURE(ptsim::models::to_string(kind));
    Tensor a{"enc.w", {0.5f, -0.25f, 1.5f}, {0.1f, 0.2f, -0.3f}};
    Tensor b{"enc.b", {0.0f, 0.1f}, {0.05f, -0.5f}, false};
    HostOptimizer o1(default_optimizer_config(kind), {a.slot(), b.slot()});
    o1.step(0.01);
    o1.step(0.02);
    const OptimizerState saved = o1.save_state();
    CHECK(saved.step == 2);
    CHECK(saved.kind == ptsim::models::to_string(kind));

    Tensor a2 = a, b2 = b;
    HostOptimizer o2(default_optimizer_config(kind), {a2.slot(), b2.slot()});
    o2.load_state(saved);
    const OptimizerState again = o2.save_state();
    REQUIRE(again.arrays.size() == saved.arrays.size());
    for (std::size_t k = 0; k < saved.arrays.size(); ++k) {
      CHECK(again.arrays[k].name == saved.arrays[k].name);
      CHECK(std::memcmp(again.arrays[k].values.data(), saved.arrays[k].values.data(),
                        saved.arrays[k].values.size() * sizeof(float)) == 0);
    }
    o1.step(0.03);
    o2.step(0.03);
    CHECK(o2.step_count() == 3);
    CHECK(std::memcmp(a.w.data(), a2.w.data(), a.w.size() * sizeof(float)) == 0);
    CHECK(std::memcmp(b.w.data(), b2.w.data(), b.w.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("load_state rejects a state that does not fit, naming the array") {
  Tensor a{"enc.w", {0.5f, -0.25f}, {0.1f, 0.2f}};
  HostOptimizer opt(default_optimizer_config(OptimizerKind::lamb), {a.slot()});
  OptimizerState s = opt.save_state();

  OptimizerState wrong_kind = s;
  wrong_kind.kind = "adamw";
  CHECK_THROWS_WITH_AS(opt.load_state(wrong_kind, "ck/optimizer.safetensors"),
                       doctest::Contains("ck/optimizer.safetensors: optimizer state is for 'adamw'"), InputError);
  OptimizerState missing = s;
  missing.arrays.pop_back();
  CHECK_THROWS_WITH_AS(opt.load_state(missing), doctest::Contains("'enc.w.v' is missing"), InputError);
  OptimizerState short_array = s;
  short_array.arrays[0].values.pop_back();
  CHECK_THROWS_WITH_AS(opt.load_state(short_array), doctest::Contains("'enc.w.m' has 1 elements, expected 2"),
                       InputError);
  OptimizerState extra = s;
  extra.arrays.push_back(NamedArray{"dec.w.m", {1.0f}});
  CHECK_THROWS_WITH_AS(opt.load_state(extra), doctest::Contains("'dec.w.m' matches no parameter"), InputError);
}

TEST_CASE("bad configurations and slots are input errors") {
  OptimizerConfig c = default_optimizer_config(OptimizerKind::lamb);
  c.beta1 = 1.0;
  CHECK_THROWS_WITH_AS(validate_optimizer_config(c), doctest::Contains("'beta1' must be in [0, 1)"), InputError);
  c = default_optimizer_config(OptimizerKind::lamb);
  c.eps = 0.0;
  CHECK_THROWS_WITH_AS(validate_optimizer_config(c), doctest::Contains("'eps'"), InputError);
  Tensor a{"x", {1.0f}, {1.0f}};
  Tensor b{"x", {1.0f}, {1.0f}};
  CHECK_THROWS_WITH_AS(HostOptimizer(default_optimizer_config(OptimizerKind::lamb), {a.slot(), b.slot()}),
                       doctest::Contains("'x' appears twice"), InputError);
}

TEST_CASE("multi-tensor updates: threads change nothing, bit for bit (fixed chunks, chunk-order norm sums)") {
  // Tensors of 3 chunks and a bit, exactly one chunk, and odd small sizes, so chunk boundaries fall inside
  // tensors and some tensors are a single partial chunk (cpu::kChunkElements = 2^15).
  const std::vector<std::size_t> sizes = {3 * (std::size_t{1} << 15) + 17, std::size_t{1} << 15, 7, 1, 1000};
  auto make = [&](std::vector<Tensor>& ts) {
    std::mt19937 rng(42);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    ts.clear();
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      Tensor t{std::string(1, static_cast<char>('a' + i)), std::vector<float>(sizes[i]), std::vector<float>(sizes[i]), i % 2 == 0};
      for (std::size_t k = 0; k < sizes[i]; ++k) {
        t.w[k] = 0.1f * normal(rng);
        t.g[k] = 0.01f * normal(rng);
      }
      ts.push_back(std::move(t));
    }
  };
  for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::lamb, OptimizerKind::lans, OptimizerKind::sgd}) {
    CAPTURE(to_string(kind));
    std::vector<Tensor> one, four;
    make(one);
    make(four);
    OptimizerConfig config = default_optimizer_config(kind);
    config.max_grad_norm = 0.5;  // clip (a no-op for LANS) so the clip divisor is an input too
    std::vector<ptsim::test::HostTensor> s1, s4;
    for (auto& t : one) s1.push_back(t.slot());
    for (auto& t : four) s4.push_back(t.slot());
    HostOptimizer a(config, s1, 1), b(config, s4, 4);  // the backends' vector-pass threads: 1 and 4
    for (int step = 0; step < 3; ++step) {
      a.step(1e-2);
      // Bucketed on the threaded one: two updates in one step equal one over all slots.
      b.step_begin(1e-2);
      const std::size_t first[] = {3, 0}, rest[] = {1, 2, 4};
      b.update(first);
      b.update(rest);
      b.step_end();
    }
    for (std::size_t i = 0; i < one.size(); ++i)
      CHECK(std::memcmp(one[i].w.data(), four[i].w.data(), one[i].w.size() * sizeof(float)) == 0);
    const OptimizerState sa = a.save_state(), sb = b.save_state();
    REQUIRE(sa.arrays.size() == sb.arrays.size());
    for (std::size_t k = 0; k < sa.arrays.size(); ++k) CHECK(sa.arrays[k].values == sb.arrays[k].values);
  }
}
