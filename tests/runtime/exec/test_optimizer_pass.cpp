// tests/runtime/exec/test_optimizer_pass.cpp — the optimizer as a backend operation (Backend::optimizer_step
// over the executor's flat weight and gradient buffers, moments in backend buffers) gives, bit for bit, what
// the host-pointer optimizer it replaced gave, on bert-tiny's real parameters and gradients, for every
// optimizer; and Backend's default (the reference on host copies, what a new backend starts with) equals
// the CPU backend's in-place pass.
// The host-pointer optimizer is kept here as the oracle, reduced to one thread (threads never changed its
// bits: test_optimizers.cpp): per tensor, fixed chunks of 2^15 elements, optim_math's element functions,
// norms as per-chunk double sums (16 lanes, math/lane_sums.hpp) added in chunk order. That is the loop structure of runtime/optim/
// optimizer.cpp before the optimizer moved into the backend (docs/executor.md, "The device seam").
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "models/builder.hpp"
#include "models/model_spec.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/exec/math/lane_sums.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/exec/executor_test_support.hpp"
#include "tests/runtime/exec/forwarding_backend.hpp"

using namespace ptsim::runtime;
using ptsim::models::OptimizerKind;

namespace {

constexpr size_t kChunk = size_t{1} << 15;  // the old optimizer's chunk (cpu::kChunkElements)

// The fp32 coefficients of step t, as the old optimizer.cpp formed them (adam_step).
optim_math::AdamStep old_adam_step(const OptimizerConfig& config, int64_t step, bool decay) {
  const double t = static_cast<double>(step);
  optim_math::AdamStep c{};
  c.b1 = static_cast<float>(config.beta1);
  c.b2 = static_cast<float>(config.beta2);
  c.one_minus_b1 = static_cast<float>(1.0 - config.beta1);
  c.one_minus_b2 = static_cast<float>(1.0 - config.beta2);
  c.bc1 = static_cast<float>(1.0 - std::pow(config.beta1, t));
  c.bc2 = static_cast<float>(1.0 - std::pow(config.beta2, t));
  c.eps = static_cast<float>(config.eps);
  c.lambda = decay ? static_cast<float>(config.weight_decay) : 0.0f;
  return c;
}

// Σ over tensor elements of f(e)²: per chunk in double, chunks in order; within a chunk the 16-lane order
// of math/lane_sums.hpp (element e − chunk start to lane (e − start) mod 16, lanes in element order, then the
// fixed tree), which replaced the old passes' one left-to-right sum per chunk.
template <class F>
double chunked_sum(size_t n, F&& f) {
  double total = 0.0;
  for (size_t at = 0; at < n; at += kChunk) {
    double lanes[math::kSumLanes] = {};
    for (size_t e = at; e < std::min(n, at + kChunk); ++e)
      lanes[(e - at) % math::kSumLanes] += static_cast<double>(f(e)) * f(e);
    total += math::combine_lanes(lanes);
  }
  return total;
}

// The host-pointer optimizer: host arrays, one step over every tensor.
struct OldOptimizer {
  OptimizerConfig config;
  std::vector<std::vector<float>> w, g, m, v;  // v unused for SGD (m is the momentum)
  std::vector<bool> decay;
  int64_t t = 0;

  void step(double lr, double norm) {
    ++t;
    double clip = 1.0;
    if (config.kind != OptimizerKind::lans && config.max_grad_norm > 0 && norm > config.max_grad_norm)
      clip = norm / config.max_grad_norm;
    for (size_t i = 0; i < w.size(); ++i) update(i, lr, static_cast<float>(clip));
  }

  void update(size_t i, double lr, float clip) {
    const optim_math::AdamStep c = old_adam_step(config, t, decay[i]);
    float* W = w[i].data();
    const float* G = g[i].data();
    float* M = m[i].data();
    float* V = v[i].data();
    const size_t n = w[i].size();
    switch (config.kind) {
      case OptimizerKind::adamw:
        for (size_t e = 0; e < n; ++e) optim_math::adamw_element(W[e], G[e], M[e], V[e], c, static_cast<float>(lr), clip);
        return;
      case OptimizerKind::sgd: {
        const float lambda = decay[i] ? static_cast<float>(config.weight_decay) : 0.0f;
        for (size_t e = 0; e < n; ++e)
          optim_math::sgd_element(W[e], G[e], M[e], static_cast<float>(config.momentum), lambda, static_cast<float>(lr), clip);
        return;
      }
      case OptimizerKind::lamb: {
        std::vector<float> u(n);
        for (size_t e = 0; e < n; ++e) u[e] = optim_math::lamb_moments_and_direction(W[e], G[e], M[e], V[e], c, clip);
        const double u_sq = chunked_sum(n, [&](size_t e) { return u[e]; });
        const double w_sq = chunked_sum(n, [&](size_t e) { return W[e]; });
        const bool apply_ratio = config.use_nvlamb || c.lambda != 0.0f;
        const float step = static_cast<float>(lr * (apply_ratio ? optim_math::trust_ratio(std::sqrt(w_sq), std::sqrt(u_sq)) : 1.0));
        for (size_t e = 0; e < n; ++e) optim_math::lamb_apply(W[e], M[e], V[e], c, step);
        return;
      }
      case OptimizerKind::lans: {
        const double g_sq = chunked_sum(n, [&](size_t e) { return G[e]; });
        const double w_sq = chunked_sum(n, [&](size_t e) { return W[e]; });
        const float inv = g_sq > 0.0 ? static_cast<float>(1.0 / std::sqrt(g_sq)) : 0.0f;
        std::vector<float> ur(n), uc(n);
        for (size_t e = 0; e < n; ++e) optim_math::lans_moments_and_directions(W[e], G[e], inv, M[e], V[e], c, ur[e], uc[e]);
        const double r_sq = chunked_sum(n, [&](size_t e) { return ur[e]; });
        const double c_sq = chunked_sum(n, [&](size_t e) { return uc[e]; });
        const double w_norm = std::sqrt(w_sq);
        const float step_r = static_cast<float>(lr * config.beta1 * optim_math::trust_ratio(w_norm, std::sqrt(r_sq)));
        const float step_c = static_cast<float>(lr * (1.0 - config.beta1) * optim_math::trust_ratio(w_norm, std::sqrt(c_sq)));
        for (size_t e = 0; e < n; ++e) optim_math::lans_apply(W[e], G[e], inv, M[e], V[e], c, step_r, step_c);
        return;
      }
    }
  }
};

ptsim::models::TaskGraph bert_tiny_graph(OptimizerKind kind) {
  ptsim::models::Recipe r;
  r.precision = ptsim::models::Precision::fp32;
  r.micro_batch = 2;
  r.seq_len = 32;
  r.max_predictions = 5;
  r.include_dropout = false;
  r.optimizer = kind;
  return ptsim::models::build_task_graph(ptsim::models::load_model("bert-tiny"), r);
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Wraps a backend, forwarding everything but optimizer_step, so the step runs Backend's default (the
// reference on host copies) on the CPU backend's memory.
class DefaultOptimizerBackend final : public ptsim::test::ForwardingBackend {
 public:
  using ForwardingBackend::ForwardingBackend;
  const char* name() const override { return "default-optimizer"; }
  bool host_addressable() const override { return false; }
  void optimizer_step(const optim_math::Hyperparameters& h, const DeviceSpan& scalars,
                      std::span<const OptimizerTensor> tensors) override {
    Backend::optimizer_step(h, scalars, tensors);
  }
};

}  // namespace

TEST_CASE("bert-tiny: the backend optimizer pass equals the host-pointer optimizer bit for bit (every optimizer)") {
  for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::lamb, OptimizerKind::lans, OptimizerKind::sgd}) {
    CAPTURE(ptsim::models::to_string(kind));
    ExecutorOptions o;
    o.threads = 2;  // two vector-pass threads where the machine has the cores; the oracle runs on one
    Executor ex(bert_tiny_graph(kind), o);
    ex.init_parameters(1234);
    ptsim::test::fill_inputs(ex, 7);
    ex.run_micro_step(1, 0);  // real gradients (they stay as they are through the tail: no loss scale, 1 rank)
    const auto& params = ex.graph().params;
    OptimizerConfig config = default_optimizer_config(kind);
    config.max_grad_norm = kind == OptimizerKind::lans ? 0.0 : 0.5;  // clip every kind that can (divisor ≠ 1)
    OldOptimizer old{config, {}, {}, {}, {}, {}};
    for (size_t i = 0; i < params.size(); ++i) {
      old.w.push_back(ex.read_parameter(i));
      old.g.push_back(ex.read_tensor<float>(params[i].gradient));
      old.m.emplace_back(old.w.back().size(), 0.0f);
      old.v.emplace_back(old.w.back().size(), 0.0f);
      old.decay.push_back(params[i].decay);
    }
    auto opt = make_optimizer(ex.backend(), config, ex.param_slots());
    const double lrs[] = {1e-3, 2e-3, 5e-4};  // three steps: bias correction moves with t
    double backend_seconds = 0, old_seconds = 0;  // reported, not checked (a shared machine's times vary)
    for (double lr : lrs) {
      const auto t0 = std::chrono::steady_clock::now();
      ex.run_step_tail(nullptr, opt.get(), lr);
      const auto t1 = std::chrono::steady_clock::now();
      REQUIRE_FALSE(ex.last_step_skipped());
      old.step(lr, ex.last_grad_norm());
      backend_seconds += std::chrono::duration<double>(t1 - t0).count();
      old_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
    }
    MESSAGE(std::string(ptsim::models::to_string(kind)) << ": step tail (norm + backend pass) " << backend_seconds / 3 * 1e3
            << " ms, host-pointer oracle (one thread) " << old_seconds / 3 * 1e3 << " ms per step");
    // bert-tiny's gradient norm at init is far above 0.5 (MESSAGE below), so the clip divisor is an input too.
    MESSAGE(std::string(ptsim::models::to_string(kind)) << ": gradient norm " << ex.last_grad_norm() << ", clip divisor "
            << opt->last_clip_divisor());
    if (kind != OptimizerKind::lans) CHECK(opt->last_clip_divisor() > 1.0);
    const OptimizerState state = opt->save_state();
    size_t mismatched = 0;
    for (size_t i = 0; i < params.size(); ++i) {
      if (!same_bits(ex.read_parameter(i), old.w[i])) ++mismatched;
      if (!same_bits(state.arrays[i * (kind == OptimizerKind::sgd ? 1 : 2)].values, old.m[i])) ++mismatched;
      if (kind != OptimizerKind::sgd && !same_bits(state.arrays[i * 2 + 1].values, old.v[i])) ++mismatched;
    }
    CHECK(mismatched == 0);
  }
}

TEST_CASE("Backend's default optimizer_step (host copies) equals the CPU backend's in-place pass bit for bit") {
  for (OptimizerKind kind : {OptimizerKind::adamw, OptimizerKind::lamb, OptimizerKind::lans, OptimizerKind::sgd}) {
    CAPTURE(ptsim::models::to_string(kind));
    Executor ex(bert_tiny_graph(kind), {});
    ex.init_parameters(99);
    ptsim::test::fill_inputs(ex, 3);
    ex.run_micro_step(1, 0);
    std::vector<std::vector<float>> start;
    for (size_t i = 0; i < ex.graph().params.size(); ++i) start.push_back(ex.read_parameter(i));
    const OptimizerConfig config = default_optimizer_config(kind);
    // Two optimizers over the same storage: the in-place one first, then the weights are reset and the
    // default one (on the wrapper, which allocates its own state in the same backend) runs the same steps.
    std::vector<std::vector<float>> in_place;
    OptimizerState in_place_state;
    {
      auto opt = make_optimizer(ex.backend(), config, ex.param_slots());
      opt->step(1e-3);
      opt->step(1e-3);
      in_place_state = opt->save_state();
      for (size_t i = 0; i < start.size(); ++i) in_place.push_back(ex.read_parameter(i));
    }
    for (size_t i = 0; i < start.size(); ++i) ex.write_parameter(i, start[i]);
    DefaultOptimizerBackend wrapper(ex.backend());
    auto opt = make_optimizer(wrapper, config, ex.param_slots());
    opt->step(1e-3);
    opt->step(1e-3);
    const OptimizerState state = opt->save_state();
    size_t mismatched = 0;
    for (size_t i = 0; i < start.size(); ++i)
      if (!same_bits(ex.read_parameter(i), in_place[i])) ++mismatched;
    for (size_t k = 0; k < state.arrays.size(); ++k)
      if (!same_bits(state.arrays[k].values, in_place_state.arrays[k].values)) ++mismatched;
    CHECK(mismatched == 0);
  }
}
