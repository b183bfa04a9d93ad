// runtime/comm/nccl_communicator.cpp — NcclCommunicator (see the header): setup (device, unique id,
// non-blocking ncclCommInitRankConfig), all-reduces enqueued on backend streams, bounded waits through
// comm_deadline's await_collective with an NCCL probe (cudaEventQuery + ncclCommGetAsyncError), and the
// host wait guard it installs in the CUDA backend (the same deadline for the backend's own host waits).
// Built only when meson found NCCL and cudart (runtime/meson.build), which also defines PTSIM_HAVE_NCCL.
#include "runtime/comm/nccl_communicator.hpp"

#ifdef PTSIM_HAVE_NCCL

#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#ifdef PTSIM_HAVE_MPI
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include "core/error.hpp"
#include "runtime/comm/comm_deadline.hpp"
#include "runtime/comm/cuda_stream_source.hpp"
#include "runtime/comm/local_device.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/span_elements.hpp"

namespace ptsim::runtime {
namespace {

void check_cuda(cudaError_t code, const char* call) {
  if (code == cudaSuccess) return;
  throw CommFailure(fmt::format("{} failed: {} ({})", call, cudaGetErrorName(code), cudaGetErrorString(code)));
}

// ncclInProgress is not an error on a non-blocking communicator: the call finishes in the background and
// the next await_collective polls it to the end.
void check_nccl(ncclResult_t code, const char* call, ncclComm_t comm) {
  if (code == ncclSuccess || code == ncclInProgress) return;
  const char* last = comm != nullptr ? ncclGetLastError(comm) : ncclGetLastError(nullptr);
  throw CommFailure(fmt::format("{} failed: {}{}{}", call, ncclGetErrorString(code),
                                last != nullptr && *last != '\0' ? ": " : "", last != nullptr ? last : ""));
}

#ifdef PTSIM_HAVE_MPI
void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw CommFailure(fmt::format("{} failed: {}", call, std::string(text, static_cast<size_t>(length))));
}

// The rank among MPI_COMM_WORLD's processes on this node, and how many there are.
std::pair<int, int> mpi_local_rank() {
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
  int rank = 0, size = 1;
  check_mpi(MPI_Comm_rank(node, &rank), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(node, &size), "MPI_Comm_size");
  MPI_Comm_free(&node);
  return {rank, size};
}
#endif

ncclDataType_t nccl_type(models::DType dtype) {
  switch (dtype) {
    case models::DType::f32: return ncclFloat32;
    case models::DType::f64: return ncclFloat64;
    case models::DType::f16: return ncclFloat16;
    case models::DType::bf16: return ncclBfloat16;
    default: break;
  }
  throw std::invalid_argument(fmt::format("NcclCommunicator: cannot sum elements of dtype {}", models::to_string(dtype)));
}

// The communicator's outstanding work as await_collective sees it: NCCL's asynchronous state (a
// non-blocking call still in progress, or an error from any rank's failure), then, if given, whether the
// device has passed `event` (recorded after the collective).
struct NcclProbe final : CommProbe {
  ncclComm_t comm;
  cudaEvent_t event;
  bool* aborted;
  NcclProbe(ncclComm_t c, cudaEvent_t e, bool* a) : comm(c), event(e), aborted(a) {}
  CommPoll poll(std::string& why) override {
    ncclResult_t state = ncclSuccess;
    if (ncclResult_t r = ncclCommGetAsyncError(comm, &state); r != ncclSuccess) {
      why = fmt::format("ncclCommGetAsyncError: {}", ncclGetErrorString(r));
      return CommPoll::failed;
    }
    if (state == ncclInProgress) return CommPoll::pending;
    if (state != ncclSuccess) {
      const char* last = ncclGetLastError(comm);
      why = fmt::format("{}{}{}", ncclGetErrorString(state), last && *last ? ": " : "", last ? last : "");
      return CommPoll::failed;
    }
    if (event == nullptr) return CommPoll::done;
    const cudaError_t q = cudaEventQuery(event);
    if (q == cudaSuccess) return CommPoll::done;
    if (q == cudaErrorNotReady) return CommPoll::pending;
    why = fmt::format("cudaEventQuery: {} ({})", cudaGetErrorName(q), cudaGetErrorString(q));
    return CommPoll::failed;
  }
  void abort() override {
    if (*aborted) return;
    *aborted = true;
    ncclCommAbort(comm);  // frees the communicator; its result cannot change what we report
  }
};

using Clock = std::chrono::steady_clock;

// A bucket all-reduce enqueued on a backend stream and not yet seen finished.
struct InFlight {
  cudaEvent_t done = nullptr;  // recorded after it on its stream; null once waited for
  std::string what;            // "ncclAllReduce #3 (4096 bytes of bf16)", for messages
  Clock::time_point enqueued;  // its deadline: enqueued + the timeout
};

}  // namespace

struct NcclCommunicator::State {
  ncclComm_t comm = nullptr;
  bool aborted = false;
  std::chrono::milliseconds timeout{};
  cudaStream_t host_stream = nullptr;  // the host all-reduces' stream
  void* scratch = nullptr;             // their device buffer
  size_t scratch_bytes = 0;
  std::vector<InFlight> requests;   // [request id]; done null once waited for
  std::vector<InFlight> unchecked;  // blocking-form all-reduces not yet seen finished
  int64_t all_reduces = 0;          // enqueued so far (bucket and host ones): #N in messages, from 1
  // The backend's host waits on its streams ask this between polls (CudaStreamSource::set_host_wait_guard):
  // installed in every backend the communicator enqueues on, held weakly there.
  struct Guard final : HostWaitGuard {
    State& state;
    explicit Guard(State& s) : state(s) {}
    void check(std::string_view waiting_for) override { state.check_in_flight(waiting_for); }
  };
  std::shared_ptr<HostWaitGuard> guard;

  // ncclCommAbort freed the communicator: no NCCL call may be given it again.
  void refuse_if_aborted(std::string_view what) const {
    if (aborted) throw CommFailure(fmt::format("{}: the NCCL communicator was aborted by an earlier failure", what));
  }
  // Bounded wait for NCCL's state (and `event`, if any); CommFailure after ncclCommAbort otherwise.
  void await(std::string_view what, cudaEvent_t event) {
    refuse_if_aborted(what);
    NcclProbe probe(comm, event, &aborted);
    await_collective(probe, what, timeout);
  }
  cudaEvent_t record_after(cudaStream_t stream) {
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    check_cuda(cudaEventRecord(event, stream), "cudaEventRecord");
    return event;
  }
  void check_unchecked() {
    for (InFlight& c : unchecked) {
      await(c.what + " (enqueued earlier)", c.done);
      cudaEventDestroy(c.done);
      c.done = nullptr;
    }
    unchecked.clear();
  }
  // Guard's check: an asynchronous error, or an in-flight all-reduce past its deadline (enqueued + timeout),
  // aborts and throws CommFailure naming it and what the host was waiting for.
  void check_in_flight(std::string_view waiting_for) {
    if (aborted) return;  // the abort released the kernels waiting on peers: the stream finishes
    NcclProbe probe(comm, nullptr, &aborted);
    std::string why;
    if (probe.poll(why) == CommPoll::failed) {
      probe.abort();
      throw CommFailure(fmt::format("NCCL failed while the host waited for {}: {} (communicator aborted)",
                                    waiting_for, why));
    }
    const Clock::time_point now = Clock::now();
    for (const std::vector<InFlight>* list : {&requests, &unchecked})
      for (const InFlight& c : *list)
        if (c.done != nullptr && now - c.enqueued >= timeout && cudaEventQuery(c.done) == cudaErrorNotReady) {
          probe.abort();
          const std::string what = fmt::format("{}, which {} waits behind,", c.what, waiting_for);
          throw CommFailure(comm_timeout_message(what, timeout));
        }
  }
  InFlight enqueued_now(cudaStream_t stream, std::string what) {
    return InFlight{record_after(stream), std::move(what), Clock::now()};
  }
  // Returns the all-reduce's number (#N, from 1, as the NCCL shim's fault injection counts them).
  int64_t enqueue_all_reduce(void* data, size_t count, ncclDataType_t type, cudaStream_t stream) {
    refuse_if_aborted("ncclAllReduce");  // before the call: an aborted communicator is freed memory
    check_nccl(ncclAllReduce(data, data, count, type, ncclSum, comm, stream), "ncclAllReduce", comm);
    ++all_reduces;
    await("ncclAllReduce (enqueue)", nullptr);  // a non-blocking call must finish enqueueing before the next
    return all_reduces;
  }
  // Host memory through the scratch buffer on host_stream; returns when the sum is back (bounded).
  template <class T>
  void host_all_reduce(std::span<T> data, ncclDataType_t type) {
      State& s = *this;
    s.check_unchecked();
    const size_t bytes = data.size_bytes();
    if (bytes == 0) return;
    if (s.scratch_bytes < bytes) {
      if (s.scratch != nullptr) check_cuda(cudaFree(s.scratch), "cudaFree");
      s.scratch = nullptr;
      s.scratch_bytes = 0;
      check_cuda(cudaMalloc(&s.scratch, bytes), "cudaMalloc");
      s.scratch_bytes = bytes;
    }
    check_cuda(cudaMemcpyAsync(s.scratch, data.data(), bytes, cudaMemcpyHostToDevice, s.host_stream), "cudaMemcpyAsync");
    s.enqueue_all_reduce(s.scratch, data.size(), type, s.host_stream);
    // The bounded wait comes before the copy back: a device-to-pageable-host cudaMemcpyAsync returns only
    // once the copy has completed (CUDA Runtime API, "API synchronization behavior"), so queued behind an
    // all-reduce that a failed peer never finishes it would block the host with no deadline.
    s.await_stream(fmt::format("ncclAllReduce of {} host bytes", bytes), s.host_stream);
    check_cuda(cudaMemcpyAsync(data.data(), s.scratch, bytes, cudaMemcpyDeviceToHost, s.host_stream), "cudaMemcpyAsync");
    // Into pinned memory the copy returns before it completes: wait for it too (at once for pageable memory).
    s.await_stream(fmt::format("the copy back of {} host bytes", bytes), s.host_stream);
  }
  // Bounded wait for everything queued on `stream` so far (an event recorded now, then await).
  void await_stream(std::string_view what, cudaStream_t stream) {
    cudaEvent_t done = record_after(stream);
    try {
      await(what, done);
    } catch (...) {
      cudaEventDestroy(done);
      throw;
    }
    cudaEventDestroy(done);
  }
};

NcclCommunicator::NcclCommunicator(const NcclSetup& setup) : state_(std::make_unique<State>()) {
  state_->timeout = setup.timeout;
  state_->guard = std::make_shared<State::Guard>(*state_);
  int local_rank = 0, local_ranks = 1;
  ncclUniqueId id{};
  if (setup.use_mpi) {
#ifdef PTSIM_HAVE_MPI
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
    auto [mpi_local, mpi_locals] = mpi_local_rank();
    local_rank = local_rank_from_env().value_or(mpi_local);
    local_ranks = mpi_locals;
#else
    throw std::logic_error("NcclCommunicator: use_mpi in a build without MPI");
#endif
  }
  int devices = 0;
  if (cudaError_t e = cudaGetDeviceCount(&devices); e != cudaSuccess && e != cudaErrorNoDevice)
    check_cuda(e, "cudaGetDeviceCount");
  device_ = choose_local_device(local_rank, local_ranks, devices);
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  if (rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId", nullptr);
#ifdef PTSIM_HAVE_MPI
  if (setup.use_mpi) check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast (ncclUniqueId)");
#endif
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;  // calls return ncclInProgress; await() polls them with the deadline
  check_nccl(ncclCommInitRankConfig(&state_->comm, size_, id, rank_, &config), "ncclCommInitRankConfig", nullptr);
  state_->await(fmt::format("ncclCommInitRankConfig (rank {} of {}, device {})", rank_, size_, device_), nullptr);
  check_cuda(cudaStreamCreateWithFlags(&state_->host_stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}

NcclCommunicator::~NcclCommunicator() {
  State& s = *state_;
  s.guard.reset();  // the backends' host waits block plainly again
  for (const std::vector<InFlight>* list : {&s.requests, &s.unchecked})
    for (const InFlight& c : *list)
      if (c.done != nullptr) cudaEventDestroy(c.done);
  if (s.scratch != nullptr) cudaFree(s.scratch);
  if (s.host_stream != nullptr) cudaStreamDestroy(s.host_stream);
  if (s.comm == nullptr || s.aborted) return;
  try {  // flush, then free; on any failure abort instead (a destructor never throws or hangs)
    check_nccl(ncclCommFinalize(s.comm), "ncclCommFinalize", s.comm);
    s.await("ncclCommFinalize", nullptr);
    ncclCommDestroy(s.comm);
  } catch (const std::exception&) {
    if (!s.aborted) ncclCommAbort(s.comm);
  }
}

std::string NcclCommunicator::library_version() {
  int code = 0;
  if (ncclGetVersion(&code) != ncclSuccess) return "NCCL (version unknown)";
  return fmt::format("NCCL {}.{}.{}", code / 10000, code / 100 % 100, code % 100);
}

CommRequest NcclCommunicator::start_all_reduce_sum(Backend& backend, const DeviceSpan& data, models::DType dtype,
                                                   Stream stream) {
  auto* streams = dynamic_cast<CudaStreamSource*>(&backend);
  if (streams == nullptr)
    throw std::invalid_argument(fmt::format("NcclCommunicator reduces CUDA device memory; backend '{}' is not a "
                                            "CUDA backend",
                                            backend.name()));
  const size_t count = whole_element_count(data, dtype, "NcclCommunicator");
  auto cuda = static_cast<cudaStream_t>(streams->cuda_stream(stream));
  streams->set_host_wait_guard(state_->guard);  // the backend's host waits now see this deadline too
  const int64_t nth = state_->enqueue_all_reduce(backend.kernel_address(data), count, nccl_type(dtype), cuda);
  state_->requests.push_back(state_->enqueued_now(
      cuda, fmt::format("ncclAllReduce #{} ({} bytes of {})", nth, data.bytes, models::to_string(dtype))));
  return CommRequest{static_cast<int32_t>(state_->requests.size() - 1)};
}

bool NcclCommunicator::sums_natively(models::DType dtype) const { return is_summable_float(dtype); }

void NcclCommunicator::all_reduce_sum(Backend& backend, const DeviceSpan& data, models::DType dtype, Stream stream) {
  const CommRequest r = start_all_reduce_sum(backend, data, dtype, stream);
  // Not waited for here: queued work on `stream` after this sees the sum; the next host-side check bounds it.
  auto& requests = state_->requests;
  state_->unchecked.push_back(std::move(requests[static_cast<size_t>(r.id)]));
  requests[static_cast<size_t>(r.id)].done = nullptr;
  // The entry was the last one pushed; drop it (and any waited ones before it) so the table does not grow by
  // one per bucket per step when nothing ever waits (--no-comm-overlap).
  while (!requests.empty() && requests.back().done == nullptr) requests.pop_back();
}

void NcclCommunicator::wait(CommRequest request) {
  auto& requests = state_->requests;
  const auto id = static_cast<size_t>(request.id);
  if (!request.valid() || id >= requests.size() || requests[id].done == nullptr)
    throw std::logic_error(fmt::format("NcclCommunicator::wait: request {} was not started or was waited for already",
                                       request.id));
  cudaEvent_t event = requests[id].done;
  requests[id].done = nullptr;
  try {
    state_->await(requests[id].what, event);
  } catch (...) {
    cudaEventDestroy(event);  // no longer in `requests`: the destructor would not see it
    throw;
  }
  cudaEventDestroy(event);
  if (std::all_of(requests.begin(), requests.end(), [](const InFlight& c) { return c.done == nullptr; }))
    requests.clear();
}

void NcclCommunicator::all_reduce_sum(std::span<float> data) { state_->host_all_reduce(data, ncclFloat32); }
void NcclCommunicator::all_reduce_sum(std::span<double> data) { state_->host_all_reduce(data, ncclFloat64); }
void NcclCommunicator::all_reduce_sum_16bit(std::span<uint16_t> data, models::DType dtype) {
  if (dtype != models::DType::f16 && dtype != models::DType::bf16)
    throw std::invalid_argument(fmt::format("NcclCommunicator::all_reduce_sum_16bit: dtype {} is not f16 or bf16",
                                            models::to_string(dtype)));
  state_->host_all_reduce(data, nccl_type(dtype));
}

void NcclCommunicator::barrier() {
  float one = 1.0f;  // an all-reduce every rank must join: a barrier with the deadline
  all_reduce_sum(std::span<float>(&one, 1));
}

}  // namespace ptsim::runtime

#endif  // PTSIM_HAVE_NCCL
