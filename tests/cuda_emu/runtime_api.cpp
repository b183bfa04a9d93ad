// tests/cuda_emu/runtime_api.cpp — the CUDA runtime API on the CPU (include/cuda_runtime_api.h): "device"
// memory is host memory (256-byte aligned, as cudaMalloc's), every stream is the host thread (work runs when
// it is enqueued, so synchronising is a no-op), an event records the host clock when recorded. The one
// exception: a stream the NCCL shim stalled (a hung all-reduce, cuda_emu::stall_stream) never completes
// until released, and a host wait on it (cudaDeviceSynchronize: on any live stream) blocks for good. The device
// reports itself as one sm_80 GPU (A100's limits) so the backend's arch checks take their sm_80 paths;
// PTSIM_EMU_CUDA_DEVICES=N makes it N identical ones (all the same host memory), so N emulated NCCL ranks on one
// node each find a device of their own (docs/cuda-emulation.md, "The NCCL shim").
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

// The stalls a stream or event is behind (cuda_emu::stall_stream); complete once every one is released.
using Stalls = std::vector<std::shared_ptr<cuda_emu::StreamStall>>;

struct CUstream_st {
  Stalls stalls;
};
struct CUevent_st {
  std::chrono::steady_clock::time_point recorded{};
  bool was_recorded = false;
  Stalls stalls;  // those of its stream when recorded
};

namespace {

std::mutex allocations_mutex;
std::map<const void*, size_t> allocations;  // what cudaMalloc gave and cudaFree has not taken back: its bytes
thread_local cudaError_t last_error = cudaSuccess;
thread_local int current_device = 0;        // cudaSetDevice's, per host thread as in CUDA
std::mutex dynamic_shared_mutex;
std::map<const void*, size_t> dynamic_shared_opt_in;  // cudaFuncSetAttribute's MaxDynamicSharedMemorySize per kernel

// Whether any of `stalls` is unreleased (released ones are dropped).
bool stalled(Stalls& stalls) {
  std::erase_if(stalls, [](const std::shared_ptr<cuda_emu::StreamStall>& s) { return s->released; });
  return !stalls.empty();
}

// A blocking host wait behind an unreleased stall: on a GPU the host would wait for good, so here too (one
// line to stderr first, naming the wait and the stall). Nothing on this thread can release it.
void hang_if_stalled(Stalls& stalls, const char* call) {
  if (!stalled(stalls)) return;
  std::fprintf(stderr, "cuda_emu: %s waits behind %s, which never completes: the host hangs here, as on a GPU\n",
               call, stalls.front()->what.c_str());
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

constexpr size_t kAlignment = 256;
// The opt-in shared memory per block of the emulated device, compute capability 8.0 (an A100): 163 KiB
// (CUDA C++ Programming Guide, "Technical Specifications per Compute Capability"; an H100's is 227 KiB), so
// a kernel sized for Hopper only fails here as it would on an A100.
constexpr int kMaxDynamicSharedOptin = 163 * 1024;
// Dynamic shared memory a kernel may use without opting in (CUDA C++ Programming Guide, "Shared Memory":
// allocations above 48 KB need cudaFuncSetAttribute per kernel).
constexpr size_t kDefaultDynamicShared = 48 * 1024;
constexpr size_t kTotalMemory = size_t{80} << 30;  // what cudaMemGetInfo reports: an 80 GB A100
// cudaGetDeviceProperties' name: what a backend prints as its GPU ("GPU 0 (…)"), so logs say it was emulated.
constexpr const char* kEmulatedDeviceName = "CUDA emulator (tests/cuda_emu: sm_80 on the CPU)";

cudaError_t fail(cudaError_t e) {
  last_error = e;
  return e;
}

constexpr int kMaxEmulatedDevices = 64;
// PTSIM_EMU_CUDA_DEVICES (1..64; default 1). Anything else stops the process: it is a test's setting, and a
// silently different device count would make a rank-to-device test mean something else.
int emulated_device_count() {
  static const int count = [] {
    const char* value = std::getenv("PTSIM_EMU_CUDA_DEVICES");
    if (value == nullptr) return 1;
    char* end = nullptr;
    const long n = std::strtol(value, &end, 10);
    if (end == value || *end != '\0' || n < 1 || n > kMaxEmulatedDevices) {
      std::fprintf(stderr, "PTSIM_EMU_CUDA_DEVICES='%s': expected a device count in 1..%d (CUDA emulator)\n", value,
                   kMaxEmulatedDevices);
      std::exit(2);
    }
    return static_cast<int>(n);
  }();
  return count;
}
bool is_device(int device) { return device >= 0 && device < emulated_device_count(); }

}  // namespace

cudaError_t cudaMalloc(void** pointer, size_t bytes) {
  if (pointer == nullptr) return fail(cudaErrorInvalidValue);
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* p = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (p == nullptr) return fail(cudaErrorMemoryAllocation);
  std::lock_guard lock(allocations_mutex);
  allocations.emplace(p, bytes);
  *pointer = p;
  return cudaSuccess;
}

cudaError_t cudaFree(void* pointer) {
  if (pointer == nullptr) return cudaSuccess;
  std::lock_guard lock(allocations_mutex);
  if (allocations.erase(pointer) == 0) return fail(cudaErrorInvalidDevicePointer);
  std::free(pointer);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  if (bytes > 0 && (dst == nullptr || src == nullptr)) return fail(cudaErrorInvalidValue);
  if (bytes > 0) std::memmove(dst, src, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  // To pageable host memory the call returns once the copy completed (CUDA Runtime API, "API synchronization
  // behavior"): behind a stall, never.
  if ((kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDefault) && stream != nullptr)
    hang_if_stalled(stream->stalls, "cudaMemcpyAsync (device to host)");
  return cudaMemcpy(dst, src, bytes, kind);
}
cudaError_t cudaMemset(void* dst, int value, size_t bytes) {
  if (bytes > 0 && dst == nullptr) return fail(cudaErrorInvalidValue);
  if (bytes > 0) std::memset(dst, value, bytes);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t) { return cudaMemset(dst, value, bytes); }
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes) *free_bytes = kTotalMemory;
  if (total_bytes) *total_bytes = kTotalMemory;
  return cudaSuccess;
}

namespace {
std::vector<CUstream_st*> live_streams;  // created and not destroyed: what cudaDeviceSynchronize waits for
}  // namespace
cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  *stream = new CUstream_st;
  live_streams.push_back(*stream);
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) { return cudaStreamCreate(stream); }
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  std::erase(live_streams, stream);
  delete stream;
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  if (stream != nullptr) hang_if_stalled(stream->stalls, "cudaStreamSynchronize");
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t stream) {
  return stream != nullptr && stalled(stream->stalls) ? cudaErrorNotReady : cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned) {
  if (stream != nullptr && event != nullptr && stalled(event->stalls))
    stream->stalls.insert(stream->stalls.end(), event->stalls.begin(), event->stalls.end());
  return cudaSuccess;
}
namespace {
int live_event_count = 0;  // created and not destroyed: cuda_emu::live_events()
}  // namespace
cudaError_t cudaEventCreate(cudaEvent_t* event) {
  *event = new CUevent_st;
  ++live_event_count;
  return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) { return cudaEventCreate(event); }
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  if (event != nullptr) --live_event_count;
  delete event;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  event->recorded = std::chrono::steady_clock::now();
  event->was_recorded = true;
  event->stalls.clear();
  if (stream != nullptr && stalled(stream->stalls)) event->stalls = stream->stalls;
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  hang_if_stalled(event->stalls, "cudaEventSynchronize");
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t event) { return stalled(event->stalls) ? cudaErrorNotReady : cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (!start->was_recorded || !end->was_recorded) return fail(cudaErrorInvalidResourceHandle);
  *ms = std::chrono::duration<float, std::milli>(end->recorded - start->recorded).count();
  return cudaSuccess;
}
// Waits for every stream of the device (CUDA Runtime API: "blocks until the device has completed all preceding
// requested tasks"): behind a stalled one, for good, as on a GPU.
cudaError_t cudaDeviceSynchronize() {
  for (CUstream_st* stream : live_streams) hang_if_stalled(stream->stalls, "cudaDeviceSynchronize");
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int* device) {
  *device = current_device;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) {
  if (!is_device(device)) return fail(cudaErrorInvalidDevice);
  current_device = device;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* count) {
  *count = emulated_device_count();
  return cudaSuccess;
}
cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
  if (!is_device(device)) return fail(cudaErrorInvalidDevice);
  switch (attribute) {
    case cudaDevAttrComputeCapabilityMajor: *value = 8; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMultiProcessorCount: *value = 108; break;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *value = kMaxDynamicSharedOptin; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    default: return fail(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (!is_device(device)) return fail(cudaErrorInvalidDevice);
  *prop = cudaDeviceProp{};
  std::snprintf(prop->name, sizeof prop->name, "%s", kEmulatedDeviceName);
  prop->major = 8;
  prop->minor = 0;
  prop->multiProcessorCount = 108;
  prop->sharedMemPerBlockOptin = static_cast<size_t>(kMaxDynamicSharedOptin);
  prop->maxThreadsPerBlock = 1024;
  prop->warpSize = 32;
  prop->totalGlobalMem = kTotalMemory;
  return cudaSuccess;
}
cudaError_t cudaFuncSetAttribute(const void* function, cudaFuncAttribute attribute, int value) {
  if (attribute != cudaFuncAttributeMaxDynamicSharedMemorySize) return cudaSuccess;
  if (value < 0 || value > kMaxDynamicSharedOptin) return fail(cudaErrorInvalidValue);
  if (function == nullptr) return fail(cudaErrorInvalidDeviceFunction);
  const std::lock_guard<std::mutex> lock(dynamic_shared_mutex);
  dynamic_shared_opt_in[function] = static_cast<size_t>(value);  // per kernel, as on a GPU
  return cudaSuccess;
}

cudaError_t cudaGetLastError() {
  const cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}
cudaError_t cudaPeekAtLastError() { return last_error; }

const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidDevicePointer: return "cudaErrorInvalidDevicePointer";
    case cudaErrorInvalidDevice: return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle: return "cudaErrorInvalidResourceHandle";
    default: return "cudaError (emulator: unnamed)";
  }
}
const char* cudaGetErrorString(cudaError_t error) {
  return error == cudaSuccess ? "no error" : "error reported by the CUDA emulator (tests/cuda_emu)";
}

namespace cuda_emu {
void set_last_error(cudaError_t error) { last_error = error; }
size_t max_dynamic_shared_bytes() { return kMaxDynamicSharedOptin; }
size_t dynamic_shared_limit(const void* kernel) {
  if (kernel == nullptr) return kDefaultDynamicShared;
  const std::lock_guard<std::mutex> lock(dynamic_shared_mutex);
  const auto it = dynamic_shared_opt_in.find(kernel);
  return it == dynamic_shared_opt_in.end() ? kDefaultDynamicShared : it->second;
}
int live_events() { return live_event_count; }
std::shared_ptr<StreamStall> stall_stream(cudaStream_t stream, std::string what) {
  auto stall = std::make_shared<StreamStall>();
  stall->what = std::move(what);
  if (stream != nullptr) stream->stalls.push_back(stall);
  return stall;
}
size_t device_bytes_from(const void* pointer) {
  std::lock_guard lock(allocations_mutex);
  auto after = allocations.upper_bound(pointer);  // the first allocation starting above `pointer`
  if (after == allocations.begin()) return 0;
  const auto& [start, bytes] = *std::prev(after);
  const auto offset = static_cast<size_t>(static_cast<const char*>(pointer) - static_cast<const char*>(start));
  return offset < bytes ? bytes - offset : 0;
}
}  // namespace cuda_emu
