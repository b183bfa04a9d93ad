// runtime/exec/cuda/gemm_finish.hpp — the last step of a 16-bit GEMM whose bias cuBLASLt's epilogue does not
// add (gemm.cpp): the fp32 product alpha·op(A)·op(B) is in scratch, and one kernel (gemm_finish.cu) adds the
// stored C (accumulating GEMMs) and the bias in fp32, in the CPU's order ((product + C) + bias), and stores
// the sum in D's type, rounded once (round to nearest even), as the CPU's 16-bit boundary does.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

#include "runtime/exec/cuda/gemm_element.hpp"

namespace ptsim::runtime::cuda {

// d (m,n) of d_type = product (m,n, fp32) [+ d as stored, when accumulate] [+ bias (n) of bias_type, per
// row, unless bias is null].
void launch_gemm_finish(void* d, GemmElement d_type, const float* product, const void* bias, GemmElement bias_type,
                        bool accumulate, int64_t m, int64_t n, cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
