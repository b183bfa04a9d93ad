// tests/cuda_emu/nccl_emulated_sum.hpp — the NCCL shim's reduction (docs/cuda-emulation.md, "The NCCL shim"):
// element i of the result is ((x_0 + x_1) + x_2) + … over NCCL ranks 0, 1, 2, …, each partial sum rounded to the
// element type (round to nearest even). For fp16/bf16 that is NCCL's FuncSum: an addition in the 16-bit type
// (__hadd, correctly rounded), here computed in fp32 and rounded once to the type, which gives the same bits
// because fp32's 24 bits are at least 2p + 2 for fp16's p = 11 and bf16's p = 8 (the classic condition for
// double rounding of a sum to be harmless). For two ranks every type's result is a + b rounded once.
#pragma once
#include <nccl.h>

#include <cstddef>
#include <vector>

namespace cuda_emu::nccl {

// The element size of a type the shim sums (fp16, bf16, fp32, fp64); 0 for any other.
size_t element_bytes(ncclDataType_t type);
// recv[i] = the rank-ordered sum of by_rank[r][i] for r = 0, 1, …; recv may be by_rank[0] (in place).
void sum_in_rank_order(const std::vector<const void*>& by_rank, void* recv, size_t count, ncclDataType_t type);

}  // namespace cuda_emu::nccl
