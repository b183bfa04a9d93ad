// runtime/exec/cpu_vector_kernels.hpp — the CPU backend's hot vector loops of the step tail, each with an
// explicit ISA variant (cpu_isa.hpp: run-time dispatch, every variant the same bits): the sum of squares
// of one chunk in the lane order of math/lane_sums.hpp, scaling, AdamW's and NVLAMB's element passes, and
// the dropout mask's draws (integer hashing: AVX-512 multiplies 8 64-bit words at once).
// The callers cut the work into chunks and threads (cpu_parallel.hpp); these run on one range.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>

#include "runtime/exec/cpu_isa.hpp"
#include "runtime/optim/optimizer_math.hpp"

namespace ptsim::runtime::cpu {

// Σ x[i]² over [0, n) in double: lane i mod 16 in element order, then math::combine_lanes.
double chunk_sum_of_squares(CpuIsa isa, const float* x, size_t n);
double chunk_sum_of_squares(CpuIsa isa, const double* x, size_t n);

// x[i] *= factor over [0, n).
void scale_range(CpuIsa isa, float* x, size_t n, float factor);
void scale_range(CpuIsa isa, double* x, size_t n, double factor);

// optim_math::adamw_element on every i in [0, n); the four arrays must not overlap.
void adamw_range(CpuIsa isa, float* weight, const float* grad, float* m, float* v, size_t n,
                 const optim_math::AdamStep& c, float lr, float clip);

// NVLAMB pass 1 over one optimizer chunk: optim_math::lamb_moments_and_direction on every i in [0, n), and
// {Σu², Σw²} (w before the step) in the lane order of math/lane_sums.hpp, lanes counted from weight[0].
std::array<double, 2> lamb_moments_chunk(CpuIsa isa, const float* weight, const float* grad, float* m, float* v,
                                         size_t n, const optim_math::AdamStep& c, float clip);
// NVLAMB pass 2: optim_math::lamb_apply on every i in [0, n).
void lamb_apply_range(CpuIsa isa, float* weight, const float* m, const float* v, size_t n,
                      const optim_math::AdamStep& c, float step);

// mask[i] = dropout_keep(key, first + i, threshold) ? 1 : 0 for i in [0, n) (dropout_mask.hpp's draw).
void dropout_keep_mask(CpuIsa isa, uint8_t* mask, size_t n, uint64_t key, uint64_t first, uint64_t threshold);

}  // namespace ptsim::runtime::cpu
