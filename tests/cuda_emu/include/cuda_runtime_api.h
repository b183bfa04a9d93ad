// tests/cuda_emu/include/cuda_runtime_api.h — the emulator's CUDA runtime API (docs/cuda-emulation.md): the
// toolkit's own types (driver_types.h: cudaError_t, cudaStream_t, cudaMemcpyKind, ...) with the functions
// the project calls implemented on the CPU in runtime_api.cpp. Declared with C++ linkage, so a binary can
// hold these beside a real libcudart. Found before the toolkit's header by include order; it also defines
// the toolkit header's guard, so the toolkit's own cuda_runtime_api.h (which vector_functions.h, pulled in by
// cuda_fp16.h, includes) is never read and its C-linkage declarations never meet these.
#pragma once
#define __CUDA_RUNTIME_API_H__
#include <cstddef>
#include <memory>
#include <string>

#include "driver_types.h"
#include "library_types.h"
#include "vector_types.h"

cudaError_t cudaMalloc(void** pointer, size_t bytes);
template <class T>
cudaError_t cudaMalloc(T** pointer, size_t bytes) {
  return cudaMalloc(reinterpret_cast<void**>(pointer), bytes);
}
cudaError_t cudaFree(void* pointer);
cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream = 0);
cudaError_t cudaMemset(void* dst, int value, size_t bytes);
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t stream = 0);
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);
cudaError_t cudaStreamQuery(cudaStream_t stream);
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned flags = 0);
cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = 0);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventQuery(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaDeviceSynchronize();

cudaError_t cudaGetDevice(int* device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device);
// The fields the project reads (name, major, minor, the shared-memory and thread limits) agree with
// cudaDeviceGetAttribute; the rest are zero.
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaFuncSetAttribute(const void* function, cudaFuncAttribute attribute, int value);
template <class F>
cudaError_t cudaFuncSetAttribute(F* function, cudaFuncAttribute attribute, int value) {
  return cudaFuncSetAttribute(reinterpret_cast<const void*>(function), attribute, value);
}

cudaError_t cudaGetLastError();
cudaError_t cudaPeekAtLastError();
const char* cudaGetErrorName(cudaError_t error);
const char* cudaGetErrorString(cudaError_t error);

namespace cuda_emu {
// Records an error for the next cudaGetLastError (as a failed launch does).
void set_last_error(cudaError_t error);
// The largest dynamic shared memory a launch may ask for (the device's opt-in maximum).
size_t max_dynamic_shared_bytes();
// The dynamic shared memory a launch of `kernel` may ask for: 48 KiB (CUDA's default per kernel), or what
// cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, n) last set for it. Null: 48 KiB.
size_t dynamic_shared_limit(const void* kernel);
// How many bytes of one cudaMalloc allocation lie at and after `pointer` (0: not inside a live allocation, e.g.
// host memory or freed). The emulated NCCL's buffer check (nccl_emulated.cpp).
size_t device_bytes_from(const void* pointer);
// Events created (cudaEventCreate*) and not yet destroyed: a test's leak check.
int live_events();
// A point on a stream that the emulated device never passes until `released` (the NCCL shim's hung
// all-reduce; ncclCommAbort releases it). Events recorded on the stream after it, and streams that wait on
// such an event, are not complete either: cudaEventQuery / cudaStreamQuery say cudaErrorNotReady, and
// cudaStreamSynchronize, cudaEventSynchronize and a device-to-host cudaMemcpyAsync on such a stream (and
// cudaDeviceSynchronize while any live stream is such a one) block the host for good (printing once to stderr what they wait for), the hang they are on a GPU. Work queued on the
// stream still runs at once (the emulator has no queue): only completion is withheld.
struct StreamStall {
  bool released = false;
  std::string what;  // "the hung ncclAllReduce #3 of NCCL rank 1"
};
// Stalls `stream` (not the legacy default stream, null) from now on until the returned stall is released.
std::shared_ptr<StreamStall> stall_stream(cudaStream_t stream, std::string what);
}  // namespace cuda_emu
