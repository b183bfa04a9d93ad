// runtime/exec/math/lane_sums.hpp — the one summation order every backend uses for a chunk's sum of
// squares (the global gradient norm, LAMB's and LANS's per-tensor norms): element i of a chunk (counted
// from the chunk's first element) goes to lane i mod kSumLanes, each lane adds its elements in element
// order (double), and the lanes are then combined in a fixed tree (combine_lanes). The chunks' partial sums
// are added in chunk order by the callers (cpu_parallel.hpp), so the result depends on neither the thread
// count nor the ISA nor the backend: the CPU vector kernels (cpu_vector_kernels.cpp) and the CUDA kernels
// (cuda/vector_ops.cu, cuda/optimizer.cu) produce the same bits. Why lanes: one running sum per chunk is a
// chain of dependent double adds (latency-bound, ~4 cycles per element); 16 independent lanes let the CPU
// keep its adders busy at any vector width (8 SSE2 registers, 4 AVX2, 2 AVX-512) and map onto half a warp.
#pragma once
#include "core/host_device.hpp"

namespace ptsim::runtime::math {

inline constexpr int kSumLanes = 16;

// The fixed tree: for w = 8, 4, 2, 1, lanes[j] += lanes[j + w] for j < w; returns lanes[0]
// (= ((l0+l8)+(l4+l12)) + ((l2+l10)+(l6+l14)) + ... in that bracketing). A CUDA half-warp computes the same
// with __shfl_down_sync(·, w) steps. Modifies lanes.
PTSIM_HD inline double combine_lanes(double* lanes) {
  for (int w = kSumLanes / 2; w >= 1; w /= 2)
    for (int j = 0; j < w; ++j) lanes[j] += lanes[j + w];
  return lanes[0];
}

}  // namespace ptsim::runtime::math
