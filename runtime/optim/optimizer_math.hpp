// runtime/optim/optimizer_math.hpp — the per-element arithmetic of AdamW, NVLAMB, LANS and SGD, once, for
// every backend: the CPU optimizer (optimizer.cpp) runs these functions over fixed chunks of the flat
// buffers, and a CUDA multi-tensor kernel includes this header (PTSIM_HD: core/host_device.hpp) and runs
// the same functions per element, so both compute the same fp32 values. The per-step inputs (learning
// rate, 1-based step t, clip divisor) arrive as AdamStep values and floats that the passes take from the
// step's StepScalars (step_scalars.hpp, formed on the host from StepInputs): nothing here reads optimizer
// state other than the element's own weight, gradient and moments. Formulas and sources:
// docs/optimizers-and-checkpoints.md. Element arithmetic is fp32 (apex multi_tensor_lamb: MATH_T = float);
// norms are accumulated in double by the callers.
// Also here: the rule and hyperparameters a backend's optimizer pass takes (Backend::optimizer_step,
// runtime/exec/backend.hpp) and adam_step, the host function that turns them into a step's fp32
// coefficients (every backend calls it on the host, so all get the same bits).
// Not here: the host driver (state buffers, step counter, checkpoints: optimizer.hpp), the passes and the
// norms' reduction order (the CPU reference: runtime/exec/cpu_optimizer.cpp; contract: docs/executor.md).
#pragma once
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"  // defines: PTSIM_HD

namespace ptsim::runtime::optim_math {

// Which update rule a pass runs (models::OptimizerKind without the models/ dependency, for device code).
enum class Rule : uint8_t { adamw, lamb, lans, sgd };

// The hyperparameters of a rule, fixed for a run (runtime::OptimizerConfig minus clipping, which reaches
// the pass as StepInputs::clip_divisor). `weight_decay` (λ) applies to tensors with decay = true only.
struct Hyperparameters {
  Rule rule = Rule::lamb;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-6;
  double weight_decay = 0.01;
  double momentum = 0.9;  // sgd
  bool use_nvlamb = true;  // lamb: trust ratio on every tensor (false: only where λ != 0, apex's default)
};

// What one update step takes besides the tensors: the learning rate, the 1-based step number t (bias
// correction), and the divisor the gradients are divided by (global-norm clipping; 1 when not clipped).
struct StepInputs {
  double lr = 0.0;
  int64_t t = 1;
  double clip_divisor = 1.0;
  // Each gradient element is read as fp32(g · fp32(grad_factor)) before the update (the loss-scale unscale,
  // 1/scale, applied on read: the gradients stay as backward stored them, e.g. 16 bits). 1: read as stored.
  double grad_factor = 1.0;
};

// The fp32 coefficients of one Adam-style step (AdamW, LAMB, LANS), computed on the host from the
// hyperparameters and StepInputs::t (adam_step). Kernels get the t-independent fields by value and the bias
// corrections from the step's StepScalars (with_bias_corrections, step_scalars.hpp).
struct AdamStep {
  float b1, b2, one_minus_b1, one_minus_b2, bc1, bc2, eps, lambda;
};

// The coefficients of step t (1-based) for a tensor with or without weight decay. Host only (std::pow):
// a GPU backend calls it on the host and passes the result to its kernel.
inline AdamStep adam_step(const Hyperparameters& h, int64_t step, bool decay) {
  const double t = static_cast<double>(step);
  AdamStep c{};
  c.b1 = static_cast<float>(h.beta1);
  c.b2 = static_cast<float>(h.beta2);
  // 1 − β in double, then rounded: 1.0f − 0.999f would carry 0.999f's rounding error (1.3e-5 relative).
  c.one_minus_b1 = static_cast<float>(1.0 - h.beta1);
  c.one_minus_b2 = static_cast<float>(1.0 - h.beta2);
  c.bc1 = static_cast<float>(1.0 - std::pow(h.beta1, t));
  c.bc2 = static_cast<float>(1.0 - std::pow(h.beta2, t));
  c.eps = static_cast<float>(h.eps);
  c.lambda = decay ? static_cast<float>(h.weight_decay) : 0.0f;
  return c;
}

PTSIM_HD inline float sqrt_f32(float x) {
#if defined(__CUDA_ARCH__)
  return sqrtf(x);  // IEEE correctly rounded without -use_fast_math, as std::sqrt on the host
#else
  return std::sqrt(x);
#endif
}

// m ← β1·m + (1−β1)·g, v ← β2·v + (1−β2)·g².
PTSIM_HD inline void adam_moments(float g, float& m, float& v, const AdamStep& c) {
  m = c.b1 * m + c.one_minus_b1 * g;
  v = c.b2 * v + c.one_minus_b2 * g * g;
}

// u = m̂/(√v̂ + ε) + λ·w (the Adam direction with decoupled weight decay).
PTSIM_HD inline float adam_direction(float m, float v, float w, const AdamStep& c) {
  return (m / c.bc1) / (sqrt_f32(v / c.bc2) + c.eps) + c.lambda * w;
}

// AdamW: w ← w − η·u with g = grad / clip.
PTSIM_HD inline void adamw_element(float& w, float grad, float& m, float& v, const AdamStep& c, float lr, float clip) {
  const float g = grad / clip;
  adam_moments(g, m, v, c);
  w -= lr * adam_direction(m, v, w, c);
}

// LAMB pass 1 (apex stage 1): the moments; returns u (from the old weight). The caller sums u² and w².
PTSIM_HD inline float lamb_moments_and_direction(float w, float grad, float& m, float& v, const AdamStep& c, float clip) {
  const float g = grad / clip;
  adam_moments(g, m, v, c);
  return adam_direction(m, v, w, c);
}
// LAMB pass 2 (apex stage 2): w ← w − step·u, step = η·trust ratio, u recomputed from the updated moments.
PTSIM_HD inline void lamb_apply(float& w, float m, float v, const AdamStep& c, float step) {
  const float u = adam_direction(m, v, w, c);
  w -= step * u;
}

// Trust ratio ‖w‖/‖u‖, 1 where either norm is 0 (apex multi_tensor_lamb stage 2).
PTSIM_HD inline double trust_ratio(double w_norm, double u_norm) {
  return (w_norm > 0.0 && u_norm > 0.0) ? w_norm / u_norm : 1.0;
}

// LANS (Zheng et al. 2020), ĝ = g·inv_g_norm: r + λw and c + λw from the moments and the old weight.
PTSIM_HD inline void lans_directions(float w, float gh, float m, float v, const AdamStep& c, float& ur, float& uc) {
  const float d = sqrt_f32(v / c.bc2) + c.eps;
  ur = (m / c.bc1) / d + c.lambda * w;
  uc = gh / d + c.lambda * w;
}
// Pass 1: moments on ĝ; r + λw and c + λw into ur, uc (the caller sums their squares).
PTSIM_HD inline void lans_moments_and_directions(float w, float grad, float inv_g_norm, float& m, float& v,
                                                 const AdamStep& c, float& ur, float& uc) {
  const float gh = grad * inv_g_norm;
  adam_moments(gh, m, v, c);
  lans_directions(w, gh, m, v, c, ur, uc);
}
// Pass 2: w ← w − step_r·(r+λw) − step_c·(c+λw), the directions recomputed from the updated moments.
PTSIM_HD inline void lans_apply(float& w, float grad, float inv_g_norm, float m, float v, const AdamStep& c,
                                float step_r, float step_c) {
  float ur = 0.0f, uc = 0.0f;
  lans_directions(w, grad * inv_g_norm, m, v, c, ur, uc);
  w = w - step_r * ur - step_c * uc;
}

// SGD with momentum (torch.optim.SGD, dampening 0): b ← μ·b + (g/clip + λ·w), w ← w − η·b.
PTSIM_HD inline void sgd_element(float& w, float grad, float& b, float mu, float lambda, float lr, float clip) {
  const float d = grad / clip + lambda * w;
  b = mu * b + d;
  w -= lr * b;
}

}  // namespace ptsim::runtime::optim_math
