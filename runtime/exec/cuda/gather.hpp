// runtime/exec/cuda/gather.hpp — launchers of the row gathers and their deterministic backward passes:
// embedding and gather_rows (one kernel, gather_rows.cu), both backward through row_segments.cu, which
// sorts the rows by target id (a stable radix sort) and lets one block add each id's rows in their
// original order: no float atomics, the CPU's summation order. Out-of-range ids are reported
// (device_error.hpp) and their rows skipped.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/exec/cuda/device_error.hpp"
#include "runtime/exec/cuda/elementwise_steps.hpp"  // defines: math::Storage
#include "runtime/exec/math/row_storage.hpp"

namespace ptsim::runtime::cuda {

// Scratch for a segmented row sum over M source rows into V target rows.
size_t row_segments_scratch_bytes(int64_t M, int64_t V);
// dst[index[m]] += src[m] for m in [0, M) (rows of H values in `storage`, math/row_storage.hpp; repeated
// targets add in m order, in fp32, each touched dst value rounded once).
void launch_row_segments_add(math::Storage storage, void* dst, const void* src, const int32_t* index, int64_t M,
                             int64_t H, int64_t V, DeviceErrorKind bad_index, void* scratch, size_t scratch_bytes,
                             DeviceError* error, cudaStream_t stream);

// y (P,N) = x (M,N)[index (P)]: embedding forward (x = the table (V,H), index = the token ids, bad_index
// token_id) and gather_rows forward (bad_index gather_index). x and y of one math::Storage.
void launch_gather_rows(void* y, const void* x, const int32_t* index, int64_t P, int64_t M, int64_t N,
                        DeviceErrorKind bad_index, DeviceError* error, math::Storage storage, cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
