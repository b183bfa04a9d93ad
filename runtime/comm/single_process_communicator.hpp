// runtime/comm/single_process_communicator.hpp — the communicator of a run with one rank: size 1, every
// collective a no-op (the sum over one rank is the data itself), 16-bit elements included.
// Not here: threads pretending to be ranks (use mpirun -np N for real data parallelism).
#pragma once
#include "runtime/comm/communicator.hpp"

namespace ptsim::runtime {

class SingleProcessCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  using Communicator::all_reduce_sum;  // the backend-span form: the host path over these
  void all_reduce_sum(std::span<float>) override {}
  void all_reduce_sum(std::span<double>) override {}
  void all_reduce_sum_16bit(std::span<uint16_t>, models::DType) override {}
  // Every float type: the sum over one rank is the data itself, in its own type.
  bool sums_natively(models::DType dtype) const override { return is_summable_float(dtype); }
  void barrier() override {}
};

}  // namespace ptsim::runtime
