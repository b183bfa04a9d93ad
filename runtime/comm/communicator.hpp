// runtime/comm/communicator.hpp — collective communication between data-parallel ranks.
// Implementations: SingleProcessCommunicator (size 1), MpiCommunicator (runtime/comm/mpi_communicator.*,
// when built with MPI); an NCCL one comes with the CUDA backend.
#pragma once
#include <memory>
#include <span>

namespace ptsim::runtime {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // In-place sum over all ranks.
  virtual void all_reduce_sum(std::span<float> data) = 0;
  virtual void all_reduce_sum(std::span<double> data) = 0;
  virtual void barrier() = 0;
};

}  // namespace ptsim::runtime
