// runtime/optim/step_scalars.hpp — the per-step scalars of one optimizer step as the kernels read them: a
// small POD that the host driver (optimizer.cpp) forms once per step and writes into a backend buffer (one
// asynchronous host→device copy on the compute stream, Backend::copy_to_device_async), and that every
// backend's optimizer passes read from that buffer (Backend::optimizer_step; the CPU reference
// cpu_optimizer.cpp reads the same struct from host memory, CUDA's optimizer.cu from device memory), so the
// per-step learning rate, step number, bias corrections and clip divisor no longer travel as kernel
// arguments. Every field holds the value the host expressions gave when they were passed by value
// (optimizer_math.hpp's adam_step, static_cast<float> of the doubles): same bits as before.
// Also here: with_bias_corrections (PTSIM_HD), which puts the step's bias corrections into a rule's fixed
// coefficients on either side. Not here: the element maths (optimizer_math.hpp), the host driver
// (optimizer.hpp). Layout and design: docs/cuda-backend.md, "The optimizer".
#pragma once
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/host_device.hpp"  // defines: PTSIM_HD
#include "runtime/optim/optimizer_math.hpp"  // defines: AdamStep, Hyperparameters, StepInputs

namespace ptsim::runtime::optim_math {

// One step's scalars (48 bytes, no padding: the device reads the bytes the host wrote).
struct StepScalars {
  double lr = 0.0;            // η in double: LAMB's and LANS's per-tensor step sizes are lr·ratio in double
  double clip_divisor = 1.0;  // the gradients are divided by this (1: not clipped), in double (logging)
  int64_t t = 1;              // the 1-based step number the bias corrections are for
  float lr_f32 = 0.0f;        // fp32(lr): AdamW's and SGD's element step
  float clip = 1.0f;          // fp32(clip_divisor): what the element maths divides by
  float grad_factor = 1.0f;   // fp32(StepInputs::grad_factor): every gradient is read as fp32(g · this)
  float bc1 = 1.0f, bc2 = 1.0f;  // fp32(1 − β1^t), fp32(1 − β2^t): adam_step's, std::pow on the host
  int32_t skip = 0;           // 1: the passes change nothing (weights, moments) this step
};
static_assert(std::is_trivially_copyable_v<StepScalars> && sizeof(StepScalars) == 48,
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

}  // namespace ptsim::runtime::optim_math
