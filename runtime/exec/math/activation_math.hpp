// runtime/exec/math/activation_math.hpp — the per-element maths of GELU (erf form and GPT-2's tanh
// approximation), tanh and dropout, forward and backward, written once for the CPU backend and the CUDA
// kernels (PTSIM_HD). The CPU's GELU loops evaluate these same formulas with the same constants through
// Eigen's vectorised erf/tanh/exp (cpu_backend.cpp); tests/runtime/exec/test_op_math.cpp checks the two agree.
// Not here: the dropout mask itself (dropout_mask.hpp), the loops over tensors (the backends).
#pragma once
#include <cstdint>

#include "core/host_device.hpp"
#include "runtime/exec/math/scalar_math.hpp"

namespace ptsim::runtime::math {

inline constexpr double kSqrt2OverPi = 0.7978845608028654;  // √(2/π)
inline constexpr double kGeluCubic = 0.044715;              // Hendrycks & Gimpel 2016, tanh approximation
inline constexpr double kInvSqrt2 = 0.7071067811865476;     // 1/√2
inline constexpr double kInvSqrt2Pi = 0.3989422804014327;   // 1/√(2π)

// x·Φ(x) = 0.5·x·(1 + erf(x/√2)) (BERT).
template <class T>
PTSIM_HD inline T gelu_erf(T x) {
  return T(0.5) * x * (T(1) + erf_of(x * static_cast<T>(kInvSqrt2)));
}
// d/dx: Φ(x) + x·φ(x).
template <class T>
PTSIM_HD inline T gelu_erf_grad(T x) {
  const T cdf = T(0.5) * (T(1) + erf_of(x * static_cast<T>(kInvSqrt2)));
  const T pdf = static_cast<T>(kInvSqrt2Pi) * exp_of(T(-0.5) * x * x);
  return cdf + x * pdf;
}
// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) (GPT-2).
template <class T>
PTSIM_HD inline T gelu_tanh(T x) {
  const T u = static_cast<T>(kSqrt2OverPi) * (x + static_cast<T>(kGeluCubic) * x * x * x);
  return T(0.5) * x * (T(1) + tanh_of(u));
}
// d/dx: 0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²), t = tanh(u).
template <class T>
PTSIM_HD inline T gelu_tanh_grad(T x) {
  const T t = tanh_of(static_cast<T>(kSqrt2OverPi) * (x + static_cast<T>(kGeluCubic) * x * x * x));
  const T du = static_cast<T>(kSqrt2OverPi) * (T(1) + static_cast<T>(3 * kGeluCubic) * x * x);
  return T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du;
}
template <class T>
PTSIM_HD inline T gelu_value(T x, bool tanh_form) { return tanh_form ? gelu_tanh(x) : gelu_erf(x); }
template <class T>
PTSIM_HD inline T gelu_grad(T x, bool tanh_form) { return tanh_form ? gelu_tanh_grad(x) : gelu_erf_grad(x); }

// tanh backward from the forward output y: dy·(1 − y²).
template <class T>
PTSIM_HD inline T tanh_grad_from_output(T dy, T y) { return dy * (T(1) - y * y); }

// Dropout's scale 1/(1−p); 0 when p ≥ 1 (everything dropped).
template <class T>
PTSIM_HD inline T dropout_scale(double p) { return p >= 1.0 ? T(0) : static_cast<T>(1.0 / (1.0 - p)); }
// y = x·scale where kept, else 0 (forward and backward alike: the mask and scale are the same).
template <class T>
PTSIM_HD inline T dropout_apply(T x, bool keep, T scale) { return keep ? x * scale : T(0); }

}  // namespace ptsim::runtime::math
