// runtime/optim/optimizer_math.hpp — the per-element arithmetic of AdamW, NVLAMB, LANS and SGD, once, for
// every backend: the CPU optimizer (optimizer.cpp) runs these functions over fixed chunks of the flat
// buffers, and a CUDA multi-tensor kernel includes this header (PTSIM_HD: core/host_device.hpp) and runs
// the same functions per element, so both compute the same fp32 values. The per-step inputs (learning
// rate, 1-based step t, clip divisor) arrive as StepInputs / AdamStep values: nothing here reads optimizer
// state other than the element's own weight, gradient and moments. Formulas and sources:
// docs/optimizers-and-checkpoints.md. Element arithmetic is fp32 (apex multi_tensor_lamb: MATH_T = float);
// norms are accumulated in double by the callers.
// Not here: the host driver (state arrays, step counter, checkpoints: optimizer.hpp), norms' reduction order
// (the caller's fixed chunks: runtime/exec/cpu_parallel.hpp).
#pragma once
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"  // defines: PTSIM_HD

namespace ptsim::runtime::optim_math {

// What one update step takes besides the tensors: the learning rate, the 1-based step number t (bias
// correction), and the divisor the gradients are divided by (global-norm clipping; 1 when not clipped).
struct StepInputs {
  double lr = 0.0;
  int64_t t = 1;
  double clip_divisor = 1.0;
};

// The fp32 coefficients of one Adam-style step (AdamW, LAMB, LANS), computed on the host from the config
// and StepInputs::t (adam_step in optimizer.cpp) and passed to kernels by value.
struct AdamStep {
  float b1, b2, one_minus_b1, one_minus_b2, bc1, bc2, eps, lambda;
};

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

// LANS (Zheng et al. 2020), ĝ = g·inv_g_norm. Pass 1: moments on ĝ; r + λw and c + λw into ur, uc (the
// caller sums their squares). Pass 2: w ← w − step_r·(r+λw) − step_c·(c+λw).
PTSIM_HD inline void lans_moments_and_directions(float w, float grad, float inv_g_norm, float& m, float& v,
                                                 const AdamStep& c, float& ur, float& uc) {
  const float gh = grad * inv_g_norm;
  adam_moments(gh, m, v, c);
  const float d = sqrt_f32(v / c.bc2) + c.eps;
  ur = (m / c.bc1) / d + c.lambda * w;
  uc = gh / d + c.lambda * w;
}
PTSIM_HD inline void lans_apply(float& w, float grad, float inv_g_norm, float m, float v, const AdamStep& c,
                                float step_r, float step_c) {
  const float gh = grad * inv_g_norm;
  const float d = sqrt_f32(v / c.bc2) + c.eps;
  const float ur = (m / c.bc1) / d + c.lambda * w;
  const float uc = gh / d + c.lambda * w;
  w = w - step_r * ur - step_c * uc;
}

// SGD with momentum (torch.optim.SGD, dampening 0): b ← μ·b + (g/clip + λ·w), w ← w − η·b.
PTSIM_HD inline void sgd_element(float& w, float grad, float& b, float mu, float lambda, float lr, float clip) {
  const float d = grad / clip + lambda * w;
  b = mu * b + d;
  w -= lr * b;
}

}  // namespace ptsim::runtime::optim_math
