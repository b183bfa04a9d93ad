// runtime/exec/cuda/cuda_backend.hpp — the CUDA backend's factory, for make_backend (cpu_device.cpp) in
// builds with the CUDA backend (PTSIM_HAVE_CUDA). Host-only header: no CUDA types.
// The backend itself: cuda_device.* (memory, streams, events, step-tail vector ops) and
// cuda_backend.cpp (the compute ops on the kernels of this folder); docs/cuda-backend.md.
#pragma once
#include <memory>
#include <optional>

#include "runtime/exec/backend.hpp"

namespace ptsim::runtime {

// The number of CUDA devices the driver reports (0 when there is no driver or no device).
int cuda_device_count();
// The current device's free memory (cudaMemGetInfo) and "GPU <n> (<name>)"; nullopt without a device.
std::optional<BackendMemory> cuda_device_memory();
// A CUDA backend on the calling thread's current device (cudaGetDevice: the one NcclCommunicator or
// use_local_rank_device selected; device 0 when nothing did), computing in f32. options.attention tensor_core:
// a bf16/fp16 graph's fused attention ops run on the tensor-core kernels (docs/cuda-backend.md, "When it
// runs"). Throws core::InputError when no CUDA device was found or compute is f64 (the CUDA backend runs f32
// only; f64 is the CPU's check precision).
std::unique_ptr<Backend> make_cuda_backend(ComputeType compute, const BackendOptions& options = {});
// Selects (cudaSetDevice) the GPU of this process's launcher local rank, one GPU per local rank
// (runtime/comm/local_device.hpp), device 0 without a launcher; returns it. For data-parallel runs whose
// communicator does not choose the device itself (MPI). Throws core::InputError when the local rank has no GPU.
int use_local_rank_device();

}  // namespace ptsim::runtime
