// runtime/optim/step_scalars.hpp — the per-step scalars of one optimizer step as the kernels read them: a
// small POD that the host driver (optimizer.cpp) forms once per step and writes into a backend buffer (one
// asynchronous host→device copy on the compute stream, Backend::copy_to_device_async), and that every
// backend's optimizer passes read from that buffer (Backend::optimizer_step; the CPU reference
// cpu_optimizer.cpp reads the same struct from host memory, CUDA's optimizer.cu from device memory), so the
// per-step learning rate, step number, bias corrections and clip divisor no longer travel as kernel
// arguments. Every field holds the value the host expressions gave when they were passed by value
// (optimizer_math.hpp's adam_step, static_cast<float> of the doubles): same bits as before.
// Also here: with_bias_corrections (PTSIM_HD), which puts the step's bias corrections into a rule's fixed
// coefficients on either side, and finish_norm (PTSIM_HD), which forms the step's global norm, clip divisor
// and skip flag from the gradients' Σg² where that sum lies (the device step of the step tail:
// Backend::finish_step_scalars), so the host need not read the norm before the passes are queued. Not here: the element maths (optimizer_math.hpp), the host driver
// (optimizer.hpp). Layout and design: docs/cuda-backend.md, "The optimizer".
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/host_device.hpp"  // defines: PTSIM_HD
#include "runtime/optim/optimizer_math.hpp"  // defines: AdamStep, Hyperparameters, StepInputs

namespace ptsim::runtime::optim_math {

// One step's scalars (64 bytes, no padding: the device reads the bytes the host wrote).
struct StepScalars {
  double lr = 0.0;            // η in double: LAMB's and LANS's per-tensor step sizes are lr·ratio in double
  double clip_divisor = 1.0;  // the gradients are divided by this (1: not clipped), in double (logging)
  double grad_norm = 0.0;     // √Σg² of the step's (unscaled) gradients, when finish_norm formed it (logging)
  int64_t t = 1;              // the 1-based step number the bias corrections are for
  float lr_f32 = 0.0f;        // fp32(lr): AdamW's and SGD's element step
  float clip = 1.0f;          // fp32(clip_divisor): what the element maths divides by
  float grad_factor = 1.0f;   // fp32(StepInputs::grad_factor): every gradient is read as fp32(g · this)
  float bc1 = 1.0f, bc2 = 1.0f;  // fp32(1 − β1^t), fp32(1 − β2^t): adam_step's, std::pow on the host
  int32_t skip = 0;           // 1: the passes change nothing (weights, moments) this step
  float grad_norm_f32 = 0.0f; // fp32(grad_norm): what the grad_norm op's f32 output holds
  int32_t reserved = 0;       // keeps the size a multiple of 8 with no implicit padding
};
static_assert(std::is_trivially_copyable_v<StepScalars> && sizeof(StepScalars) == 64,
              "StepScalars crosses to the device as raw bytes");

// The scalars of a step from its host inputs. Host only (std::pow, via adam_step): the bias corrections
// are not formed on a device, whose double pow is not correctly rounded.
inline StepScalars step_scalars(const Hyperparameters& h, const StepInputs& in) {
  StepScalars s;
  s.lr = in.lr;
  s.clip_divisor = in.clip_divisor;
  s.t = in.t;
  s.lr_f32 = static_cast<float>(in.lr);
  s.clip = static_cast<float>(in.clip_divisor);
  s.grad_factor = static_cast<float>(in.grad_factor);
  const AdamStep c = adam_step(h, in.t, true);
  s.bc1 = c.bc1;
  s.bc2 = c.bc2;
  return s;
}

// `fixed` (adam_step of any step: its b1, b2, 1 − β, ε and λ do not depend on t) with the bias corrections
// of the step `s` is for: adam_step(h, s.t, decay) bit for bit, on the host or on a device.
PTSIM_HD inline AdamStep with_bias_corrections(AdamStep fixed, const StepScalars& s) {
  fixed.bc1 = s.bc1;
  fixed.bc2 = s.bc2;
  return fixed;
}

// IEEE double square root, correctly rounded on both sides (CUDA's double sqrt is, with or without fast
// maths, which only touches fp32).
PTSIM_HD inline double sqrt_f64(double x) {
#if defined(__CUDA_ARCH__)
  return ::sqrt(x);
#else
  return std::sqrt(x);
#endif
}

// The step's norm verdict from Σg² of its gradients (already × grad_factor): grad_norm = √sum; skip when
// that is not finite (a loss-scale overflow: inf or NaN in some gradient); clip_divisor = norm / max_norm
// when clipping is on (max_norm > 0) and norm > max_norm, else 1 (apex FusedLAMB's clipped_global_grad_norm);
// clip and grad_norm_f32 their fp32 roundings. The host driver's expressions (Optimizer::step_begin with a
// host norm, the executor's isfinite check) written once: √ and / in double are correctly rounded on a host
// and on a device, so both give the same bits. Leaves every other field as it is.
PTSIM_HD inline void finish_norm(StepScalars& s, double sum_of_squares, double max_norm) {
  const double norm = sqrt_f64(sum_of_squares);
  const bool finite = norm - norm == 0.0;  // false for ±inf and NaN (isfinite without <cmath> on a device)
  s.grad_norm = norm;
  s.grad_norm_f32 = static_cast<float>(norm);
  s.skip = finite ? 0 : 1;
  s.clip_divisor = finite && max_norm > 0.0 && norm > max_norm ? norm / max_norm : 1.0;
  s.clip = static_cast<float>(s.clip_divisor);
}

}  // namespace ptsim::runtime::optim_math
