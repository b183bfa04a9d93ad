// runtime/comm/nccl_communicator.hpp — data-parallel collectives over NCCL on CUDA device memory.
// One rank per GPU: the rank's local rank (launcher variable, else MPI_Comm_split_type shared) picks the
// device (cudaSetDevice, before the CUDA backend is created); rank 0's ncclUniqueId is broadcast through MPI
// (MPI_COMM_WORLD) and every rank calls ncclCommInitRankConfig with a non-blocking config. Without MPI the
// communicator has one rank (one GPU, no launcher). The backend-span all-reduce enqueues ncclAllReduce on
// the given stream's cudaStream_t and returns at once; wait(request) and the small host all-reduces (loss,
// stop flag) wait with a deadline (comm_deadline.hpp): an NCCL error, or a collective not done within
// PTSIM_COMM_TIMEOUT_S, aborts the communicator (ncclCommAbort) and throws CommFailure.
// Compiled only when meson found NCCL and cudart (PTSIM_HAVE_NCCL). The header has no CUDA includes.
// Not here: the CUDA backend (runtime/exec/cuda/), sub-communicators for tensor parallelism.
#pragma once
#include <chrono>
#include <memory>
#include <span>
#include <string>

#include "models/task_graph.hpp"
#include "runtime/comm/communicator.hpp"

namespace ptsim::runtime {

#ifdef PTSIM_HAVE_NCCL

struct NcclSetup {
  // Exchange the unique id and find the local rank through MPI_COMM_WORLD (needs a live MpiSession). False:
  // one rank, device 0.
  bool use_mpi = false;
  std::chrono::milliseconds timeout{600000};  // comm_timeout_from_env
};

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(const NcclSetup& setup);
  ~NcclCommunicator() override;
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int device() const { return device_; }
  // "NCCL 2.28.x" (ncclGetVersion).
  static std::string library_version();

  // Host memory, summed through a device scratch buffer on the communicator's own stream; returns when the
  // sum is back in `data` (bounded by the timeout).
  void all_reduce_sum(std::span<float> data) override;
  void all_reduce_sum(std::span<double> data) override;
  void all_reduce_sum_16bit(std::span<uint16_t> data, models::DType dtype) override;  // f16 or bf16
  // f32, f64, f16 and bf16: NCCL sums each in its own type (a 16-bit sum rounds at every add, as DDP's).
  bool sums_natively(models::DType dtype) const override;
  // ncclAllReduce in place on `stream`, returning at once; f32 → ncclFloat32, f64 → ncclFloat64, f16 →
  // ncclFloat16, bf16 → ncclBfloat16 (the executor hands 16-bit gradient buckets over as they are stored,
  // as DDP does). The next wait(), host all-reduce or barrier checks that it finished (bounded by the timeout).
  void all_reduce_sum(Backend& backend, const DeviceSpan& data, models::DType dtype, Stream stream) override;
  CommRequest start_all_reduce_sum(Backend& backend, const DeviceSpan& data, models::DType dtype,
                                   Stream stream) override;
  // Host-waits (with the deadline) until the request's all-reduce has run on the device; the executor then
  // orders the compute stream after the comm stream with events.
  void wait(CommRequest request) override;
  void barrier() override;

 private:
  struct State;  // CUDA and NCCL handles (nccl_communicator.cpp)
  std::unique_ptr<State> state_;
  int rank_ = 0;
  int size_ = 1;
  int device_ = 0;
};

#endif  // PTSIM_HAVE_NCCL

}  // namespace ptsim::runtime
