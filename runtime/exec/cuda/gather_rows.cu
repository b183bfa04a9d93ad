// runtime/exec/cuda/gather_rows.cu — the row gather y[p] = x[index[p]], one thread per element, that both
// embedding forward (x = the table, index = token ids) and gather_rows forward run, for fp32, bf16 and fp16
// storage (GatherRowsStep, elementwise_steps.hpp); a bad index gives a zero row and a device error report of
// the caller's kind. Their backward passes are row_segments.cu.
#include "runtime/exec/cuda/gather.hpp"
#include "runtime/exec/cuda/elementwise_kernel.cuh"

namespace ptsim::runtime::cuda {
namespace {
template <class S>
__global__ void gather_rows_kernel(GatherRowsStep<S> step, int64_t P, DeviceErrorKind bad_index, DeviceError* error) {
  PTSIM_GRID_STRIDE(i, P * step.N) {
    if (!step(i) && i % step.N == 0) report_device_error(error, bad_index, step.index[i / step.N], i / step.N, step.M);
  }
}
}  // namespace

void launch_gather_rows(void* y, const void* x, const int32_t* index, int64_t P, int64_t M, int64_t N,
                        DeviceErrorKind bad_index, DeviceError* error, math::Storage storage, cudaStream_t stream) {
  with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    gather_rows_kernel<S><<<blocks_for(P * N), kThreads, 0, stream>>>(
        GatherRowsStep<S>{typed<S>(y), typed<S>(x), index, M, N}, P, bad_index, error);
  });
}

}  // namespace ptsim::runtime::cuda
