// runtime/exec/cuda/embedding.cu — embedding forward: y[m] = table[ids[m]], one thread per element; a bad
// id gives a zero row and a device error report. The backward is row_segments.cu (deterministic).
#include "runtime/exec/cuda/gather.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"

namespace ptsim::runtime::cuda {
namespace {
__global__ void embedding_forward_kernel(float* y, const float* table, const int32_t* ids, int64_t M, int64_t H,
                                         int64_t V, DeviceError* error) {
  PTSIM_GRID_STRIDE(i, M * H) {
    const int64_t m = i / H, h = i % H;
    const int32_t id = ids[m];
    const bool ok = id >= 0 && id < V;
    if (!ok && h == 0) report_device_error(error, DeviceErrorKind::token_id, id, m, V);
    y[i] = ok ? table[static_cast<int64_t>(id) * H + h] : 0.0f;
  }
}
}  // namespace

void launch_embedding_forward(float* y, const float* table, const int32_t* ids, int64_t M, int64_t H, int64_t V,
                              DeviceError* error, cudaStream_t stream) {
  embedding_forward_kernel<<<blocks_for(M * H), kThreads, 0, stream>>>(y, table, ids, M, H, V, error);
}

}  // namespace ptsim::runtime::cuda
