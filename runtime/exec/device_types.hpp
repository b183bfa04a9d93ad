// runtime/exec/device_types.hpp — the small value types of the device seam: which backend, which scalar
// type it computes in, and the handles a Backend hands out for its memory, streams and events. Handles are
// indices into the backend's own tables, never addresses: code outside a backend names memory only as
// (buffer, byte offset, byte count) and moves values in and out through the backend's copies.
// Not here: the Backend interface (backend.hpp), the executor (executor.hpp).
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ptsim::runtime {

// Scalar type the backend computes in: fp32 for training, fp64 for finite-difference checks.
// The kernels compute in this type. A graph built with precision bf16/fp16 runs with f32 only, with fp32
// master weights: its 16-bit tensors are stored as 16 bits on a backend that stores_16bit() (the CPU
// and CUDA backends: converted at the op boundary), as fp32 values rounded after every write otherwise (precision.hpp); the
// arena is planned for what is stored (Executor's storage_graph). f64 needs an fp32 graph (the arena and
// every offset are scaled by 2). See docs/executor.md.
enum class ComputeType { f32, f64 };

// Which Backend the executor runs on (make_backend, backend.hpp). cuda exists in builds with the CUDA
// backend only (backend_available).
enum class BackendKind { cpu, cuda };
const char* to_string(BackendKind kind);
// "cpu" | "cuda"; throws core::InputError naming `what` (the flag) and the accepted names otherwise.
BackendKind parse_backend_kind(std::string_view name, std::string_view what = "--backend");
// Whether this build has the backend (cpu always; cuda only when built with it).
bool backend_available(BackendKind kind);

// The kernel the CUDA backend runs a bf16/fp16 graph's fused attention ops on (ptsim train
// --attention-kernel; docs/cuda-backend.md, "The tensor-core kernel", "When it runs"). fp32 (the default): the
// fp32 kernel on the op boundary's fp32 copies (fused_attention.cu), as every backend does. tensor_core: the
// tensor-core kernels on the 16-bit q, k, v as stored (fused_attention_tc.cu; not yet run on a GPU), for the
// ops cuda::fused_attention_runs_natively accepts; the others keep the fp32 kernel.
enum class AttentionKernel { fp32, tensor_core };
// The kernel where nothing chose one. fp32 until the tensor-core kernels have passed on a GPU
// (runtime_attention_tc_gpu); making tensor_core the default is this one line (ptsim train then takes it
// wherever it applies: --backend cuda, --fused-attention, --precision bf16 or fp16).
inline constexpr AttentionKernel kDefaultAttentionKernel = AttentionKernel::fp32;
const char* to_string(AttentionKernel kernel);  // "fp32" | "tensor-core"
// "fp32" | "tensor-core"; throws core::InputError naming `what` (the flag) and the accepted names otherwise.
AttentionKernel parse_attention_kernel(std::string_view name, std::string_view what = "--attention-kernel");

// How make_backend sets up a backend beyond its kind and compute type. A setting the backend does not have
// (the tensor-core attention on the CPU backend) is a core::InputError there, not ignored.
// attention stays fp32 here whatever kDefaultAttentionKernel says, so a caller that asks for nothing (the
// tests' backends, the CPU backend) gets the kernel every backend has; ptsim train resolves the default itself.
struct BackendOptions {
  AttentionKernel attention = AttentionKernel::fp32;
};
// Whether the backend `kind` (computing in f32) stores f16/bf16 tensors as 16 bits (Backend::stores_16bit):
// what the trainer plans memory for before the backend exists. cpu and cuda: true (both convert at the op
// boundary, op_boundary_plan.hpp).
bool backend_stores_16bit(BackendKind kind);
// The memory a `kind` backend allocates its buffers in, when that is not this machine's RAM: the current
// GPU's free bytes (cudaMemGetInfo) and its name ("GPU 0 (NVIDIA H200)"). nullopt for the CPU backend (host
// memory: core::available_memory_bytes), and for cuda when no device is found (make_backend says so).
struct BackendMemory {
  uint64_t free_bytes = 0;
  std::string device;
};
std::optional<BackendMemory> backend_device_memory(BackendKind kind);

// A block of backend memory: the handle allocate() returned (id) and its size. id < 0: no buffer.
struct DeviceBuffer {
  int32_t id = -1;
  size_t bytes = 0;
  bool valid() const { return id >= 0; }
};

// Bytes [offset, offset + bytes) of a buffer: what copies, fills, reductions and collectives are given.
struct DeviceSpan {
  DeviceBuffer buffer;
  size_t offset = 0;
  size_t bytes = 0;
  bool valid() const { return buffer.valid(); }
  // The whole buffer.
  static DeviceSpan of(DeviceBuffer b) { return {b, 0, b.bytes}; }
  // Bytes [at, at + n) of this span (the caller keeps it inside).
  DeviceSpan sub(size_t at, size_t n) const { return {buffer, offset + at, n}; }
};

// An in-order queue of backend work (a CUDA stream). id 0 is the backend's compute stream.
struct Stream {
  int32_t id = 0;
};

// A point in a stream's work (a CUDA event): recorded, waited on, timed.
struct Event {
  int32_t id = -1;
};

}  // namespace ptsim::runtime
