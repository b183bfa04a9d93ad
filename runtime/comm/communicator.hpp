// runtime/comm/communicator.hpp — collective communication between data-parallel ranks.
// Implementations: SingleProcessCommunicator (size 1), MpiCommunicator (runtime/comm/mpi_communicator.*,
// when built with MPI), NcclCommunicator (runtime/comm/nccl_communicator.*, when built with NCCL), which
// overrides the backend-span all-reduces. Which one `ptsim train` uses: runtime/comm/comm_choice.hpp.
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "models/task_graph.hpp"  // defines: DType
#include "runtime/exec/device_types.hpp"

namespace ptsim::runtime {

class Backend;  // runtime/exec/backend.hpp

// f32, f64, f16 or bf16: the types a communicator that sums 16-bit floats natively takes (MPI's 16-bit
// MPI_Ops, NCCL, one rank): what their sums_natively answers.
bool is_summable_float(models::DType dtype);

// A collective started by Communicator::start_all_reduce_sum and not yet waited for. id < 0: none.
struct CommRequest {
  int32_t id = -1;
  bool valid() const { return id >= 0; }
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In-place sum over all ranks of host memory (small values: the trainer's loss and stop flag).
  virtual void all_reduce_sum(std::span<float> data) = 0;
  virtual void all_reduce_sum(std::span<double> data) = 0;
  // In-place sum over all ranks of 16-bit host memory, elements of `dtype` (f16 or bf16 bits), summed in that
  // type: each pairwise add widens both operands to fp32, adds and rounds to nearest even once. Only for a
  // communicator whose sums_natively(dtype) is true; this default throws std::logic_error.
  virtual void all_reduce_sum_16bit(std::span<uint16_t> data, models::DType dtype);
  // Whether the backend-span sums below take elements of `dtype` and sum them in that type, in place. f32 and
  // f64: every communicator (this default). f16/bf16: one that overrides this (MpiCommunicator through its
  // 16-bit MPI_Op, NcclCommunicator natively, SingleProcessCommunicator trivially); the executor all-reduces
  // the 16-bit gradient buckets of any other communicator through fp32 staging (docs/executor.md).
  virtual bool sums_natively(models::DType dtype) const;
  // In-place sum over all ranks of `data`, elements of `dtype` (f32, f64; f16/bf16 where sums_natively), in
  // `backend`'s memory, ordered on `stream`:
  // it starts after the work queued on `stream` before the call, and work queued on `stream` after it
  // sees the sum (the executor makes `stream` wait for the compute stream's event that marks the bucket
  // ready, and the compute stream wait for the sum before the optimizer reads it). This default runs the
  // host-memory all_reduce_sum (all_reduce_sum_16bit for f16/bf16): in place when the backend is
  // host-addressable (the CPU backend), else through a host copy; it returns when the sum is done. An NCCL
  // communicator overrides it to enqueue ncclAllReduce on `stream` and return at once. A dtype the
  // communicator does not sum natively: std::invalid_argument.
  virtual void all_reduce_sum(Backend& backend, const DeviceSpan& data, models::DType dtype, Stream stream);
  // The same sum, non-blocking: started now (after the work queued on `stream`), finished by wait(). `data`
  // must not be read or written until wait(request) has returned; every request is waited for exactly once.
  // Results are those of all_reduce_sum. The executor starts each gradient bucket's sum from the last
  // micro-step's backward, as soon as the bucket's last gradient is written, and waits in the step tail.
  // This default runs the blocking all_reduce_sum at once (wait is then a no-op); MPI overrides both with
  // MPI_Iallreduce / MPI_Wait, NCCL enqueues on `stream` and makes wait a bounded host wait (docs/nccl.md).
  virtual CommRequest start_all_reduce_sum(Backend& backend, const DeviceSpan& data, models::DType dtype,
                                           Stream stream);
  virtual void wait(CommRequest request);
  // Lets started collectives advance (MPI progresses non-blocking collectives only inside MPI calls): the
  // executor calls it between the ops of backward while any is in flight. Default: nothing to do.
  virtual void progress() {}
  virtual void barrier() = 0;
};

}  // namespace ptsim::runtime
