// core/host_device.hpp — PTSIM_HD marks a function that host and device code both compile: __host__
// __device__ under nvcc/hipcc, empty for the host compiler. The per-element maths that a CUDA kernel must
// share bit for bit with the CPU backend (dropout mask, optimizer updates) is written once in headers
// with it (runtime/exec/dropout_mask.hpp, runtime/optim/optimizer_math.hpp). Such functions use only
// <cstdint>/<cmath>-level operations: no exceptions, no allocation, no std containers.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
#define PTSIM_HD __host__ __device__
#else
#define PTSIM_HD
#endif
