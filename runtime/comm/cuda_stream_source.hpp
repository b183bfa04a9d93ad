// runtime/comm/cuda_stream_source.hpp — what the NCCL communicator needs from a CUDA backend beyond the
// Backend interface: the native cudaStream_t behind a ptsim Stream. A CUDA backend (runtime/exec/cuda/)
// derives from both Backend and CudaStreamSource; the communicator finds it with dynamic_cast and refuses
// any other backend. kernel_address() of such a backend must be a device pointer on the communicator's
// device (the one NcclCommunicator selected with cudaSetDevice before the backend was created).
// The communicator also installs its HostWaitGuard here (comm_deadline.hpp), so that the backend's host
// waits on its streams are bounded by the communicator's deadline (docs/nccl.md, "Host waits behind a
// collective"). Header only, no CUDA headers: the handle travels as void* (a cudaStream_t is a pointer).
#pragma once
#include <memory>

#include "runtime/comm/comm_deadline.hpp"
#include "runtime/exec/device_types.hpp"

namespace ptsim::runtime {

class CudaStreamSource {
 public:
  virtual ~CudaStreamSource() = default;
  // The cudaStream_t of `stream` (Stream{0}: the compute stream), valid while the backend lives.
  virtual void* cuda_stream(Stream stream) = 0;
  // From now on every host wait of the backend on a stream or event polls it and asks `guard` between polls
  // (await_device) while the guard lives; held weakly, so either side may be destroyed first. Without a
  // live guard (no communicator: one GPU) the waits are the plain blocking CUDA calls.
  virtual void set_host_wait_guard(std::weak_ptr<HostWaitGuard> guard) = 0;
};

}  // namespace ptsim::runtime
