// runtime/exec/math/scalar_math.hpp — float/double overloads of the few libm functions the shared
// per-element maths needs (exp, log, erf, tanh, sqrt), callable from host and device code (PTSIM_HD): under
// nvcc the C names resolve to CUDA's device functions, for the host compiler to <cmath>'s.
// Not here: any op's formula (the sibling *_math.hpp headers).
#pragma once
#include <cmath>

#include "core/host_device.hpp"

namespace ptsim::runtime::math {

PTSIM_HD inline float exp_of(float x) { return ::expf(x); }
PTSIM_HD inline double exp_of(double x) { return ::exp(x); }
PTSIM_HD inline float log_of(float x) { return ::logf(x); }
PTSIM_HD inline double log_of(double x) { return ::log(x); }
PTSIM_HD inline float erf_of(float x) { return ::erff(x); }
PTSIM_HD inline double erf_of(double x) { return ::erf(x); }
PTSIM_HD inline float tanh_of(float x) { return ::tanhf(x); }
PTSIM_HD inline double tanh_of(double x) { return ::tanh(x); }
PTSIM_HD inline float sqrt_of(float x) { return ::sqrtf(x); }
PTSIM_HD inline double sqrt_of(double x) { return ::sqrt(x); }

}  // namespace ptsim::runtime::math
