// runtime/comm/mpi_communicator.hpp — data-parallel collectives over MPI (MPI_COMM_WORLD).
// MpiSession owns MPI_Init_thread/MPI_Finalize (RAII, one per process); MpiCommunicator sums buffers in
// place with MPI_Allreduce (MPI_IN_PLACE, MPI_FLOAT / MPI_DOUBLE with MPI_SUM, f16/bf16 bits as MPI_UINT16_T
// with the communicator's own 16-bit sum ops), or without blocking with
// MPI_Iallreduce (the gradient buckets the executor starts during backward; progress() is MPI_Testall).
// Compiled only when ptsim is built with MPI (PTSIM_HAVE_MPI; meson option `mpi`).
// Not here: NCCL (comes with the CUDA backend), sub-communicators for tensor parallelism.
#pragma once
#include <cstdlib>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/comm/communicator.hpp"

namespace ptsim::runtime {

// True when this process was started by an MPI launcher (mpirun/mpiexec/srun set these variables:
// Open MPI OMPI_COMM_WORLD_SIZE, PMIx PMIX_RANK, MPICH/Hydra PMI_SIZE). Works with or without MPI built in,
// so a binary without MPI can refuse to run as N independent copies.
inline bool launched_by_mpi() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK"})
    if (std::getenv(name) != nullptr) return true;
  return false;
}

#ifdef PTSIM_HAVE_MPI

struct MpiSumOps;  // the 16-bit sum ops (mpi_communicator.cpp)

// MPI_Init_thread(MPI_THREAD_FUNNELED) in the constructor (unless MPI is already initialised),
// MPI_Finalize in the destructor (if this session initialised it). Only the main thread calls MPI.
class MpiSession {
 public:
  MpiSession();
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  // The MPI library's version string (MPI_Get_library_version), first line.
  static std::string library_version();
  // MPI_Abort(MPI_COMM_WORLD, code): ends every rank (a rank that throws must not leave the others waiting
  // in a collective forever).
  [[noreturn]] static void abort(int code);

 private:
  bool owns_ = false;
};

// MPI_COMM_WORLD; requires a live MpiSession. Every failure throws std::runtime_error naming the call
// (MPI_ERRORS_RETURN is set on the communicator so errors come back instead of aborting).
class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator();
  ~MpiCommunicator() override;
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  using Communicator::all_reduce_sum;  // the backend-span form: the host path over these
  void all_reduce_sum(std::span<float> data) override;
  void all_reduce_sum(std::span<double> data) override;
  // f16/bf16 through a user-defined, commutative MPI_Op over MPI_UINT16_T: each pairwise add widens both
  // operands to fp32, adds and rounds to nearest even once (math/half_bits.hpp), as NCCL sums 16-bit types.
  void all_reduce_sum_16bit(std::span<uint16_t> data, models::DType dtype) override;
  bool sums_natively(models::DType dtype) const override;  // f32, f64, f16, bf16
  // MPI_Iallreduce in place on host-addressable backend memory (through a host copy otherwise, copied
  // back in wait); f32/f64 with MPI_SUM, f16/bf16 with the 16-bit ops. For 2 ranks the sum is a + b
  // whatever the algorithm, so it equals the blocking one to the bit; for more ranks Open MPI's
  // non-blocking algorithms may add in another order (and a 16-bit sum then rounds at other points).
  CommRequest start_all_reduce_sum(Backend& backend, const DeviceSpan& data, models::DType dtype,
                                   Stream stream) override;
  void wait(CommRequest request) override;
  void progress() override;
  void barrier() override;
  // Every rank's `mine`, in rank order, on rank 0 (other ranks get an empty list). For results of
  // different sizes per rank (the sweep's slices); each rank's text must be under 2 GiB.
  std::vector<std::string> gather_strings_to_root(const std::string& mine);

 private:
  struct Pending;  // one started collective (mpi_communicator.cpp)
  int rank_ = 0;
  int size_ = 1;
  std::unique_ptr<MpiSumOps> sum_ops_;
  std::vector<std::unique_ptr<Pending>> pending_;  // [request id]; null once waited for
};

#endif  // PTSIM_HAVE_MPI

}  // namespace ptsim::runtime
