// runtime/exec/cuda/stream_wait.hpp — how the CUDA backend's helpers that reuse device memory (the multi-tensor
// optimizer's table cache, the 16-bit op boundary's scratch) wait on the host until a stream has run what was
// queued on it: through the backend's own host wait (CudaDevice::await_stream), never a bare
// cudaStreamSynchronize, so that behind a communicator's collective that never finishes the wait ends at the
// collective's deadline with CommFailure (docs/nccl.md, "Host waits behind a collective"). `what` names the
// wait in that message ("the optimizer's stream (table cache drain)"). Host-only header.
#pragma once
#include <cuda_runtime_api.h>

#include <functional>

namespace ptsim::runtime::cuda {

using StreamWait = std::function<void(cudaStream_t stream, const char* what)>;

}  // namespace ptsim::runtime::cuda
