// tests/runtime/comm/nccl_all_reduce_check.cpp — `gpu` suite: NcclCommunicator's all-reduce on a GPU
// against MPI's (MPI_Allreduce) on the same data, fp32 and fp64, over 1 rank (no MPI) and, under
// `mpirun -np 2`, 2 ranks (one GPU each). With 1 or 2 ranks every sum is x or a + b, exact whatever the
// algorithm, so NCCL must equal MPI to the bit (and 1 rank must return its input). Exit 77 (skipped) with
// a message when there is no CUDA device, or fewer GPUs than ranks on the node (1, failed, under
// PTSIM_REQUIRE_GPU=1: tests/support/gpu_skip.hpp). Not a doctest program: a skip must be the process's exit
// code. Also built over the CUDA emulator and its NCCL shim (tests/cuda_emu, docs/cuda-emulation.md).
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <exception>
#include <vector>

#include "runtime/comm/comm_deadline.hpp"
#include "runtime/comm/local_device.hpp"
#include "runtime/comm/mpi_communicator.hpp"
#include "runtime/comm/nccl_communicator.hpp"
#include "tests/support/gpu_skip.hpp"

using namespace ptsim::runtime;

namespace {

// Rank r's element i: a multiple of 1/4 below 2^12, so every sum over 2 ranks is exact in fp32 and fp64.
template <class T>
std::vector<T> rank_data(int rank, size_t n) {
  std::vector<T> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<T>(static_cast<double>(i % 4001) * 0.25 + rank);
  return v;
}

// The NCCL sum and the reference sum (MPI's, or the input for one rank) compared to the bit.
template <class T>
int check(const char* type, Communicator& nccl, Communicator* mpi, size_t n) {
  std::vector<T> got = rank_data<T>(nccl.rank(), n);
  std::vector<T> want = got;
  nccl.all_reduce_sum(std::span<T>(got));
  if (mpi != nullptr) mpi->all_reduce_sum(std::span<T>(want));
  if (std::memcmp(got.data(), want.data(), n * sizeof(T)) != 0) {
    size_t i = 0;
    while (got[i] == want[i]) ++i;
    fmt::print(stderr, "rank {}: {} all-reduce of {} elements: element {} is {} under NCCL, {} under {}\n", nccl.rank(),
               type, n, i, static_cast<double>(got[i]), static_cast<double>(want[i]), mpi ? "MPI" : "the input");
    return 1;
  }
  fmt::print("rank {} of {}: NCCL {} all-reduce of {} elements equals {} to the bit\n", nccl.rank(), nccl.size(), type,
             n, mpi ? "MPI_Allreduce" : "the input");
  return 0;
}

int run() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    fmt::print("skipped: no CUDA device (cudaGetDeviceCount)\n");
    return ptsim::test::gpu_test_skip_status();
  }
  NcclSetup setup;
  setup.timeout = std::chrono::milliseconds(120000);  // a healthy 2-rank all-reduce of 8 MB takes well under 1 s
#ifdef PTSIM_HAVE_MPI
  std::unique_ptr<MpiSession> session;
  std::unique_ptr<MpiCommunicator> mpi;
  if (launched_by_mpi()) {
    session = std::make_unique<MpiSession>();
    mpi = std::make_unique<MpiCommunicator>();
    const int local = local_rank_from_env().value_or(0);
    float lacking = local < devices ? 0.0f : 1.0f;
    mpi->all_reduce_sum(std::span<float>(&lacking, 1));  // every rank must agree to skip
    if (lacking > 0) {
      if (mpi->rank() == 0) fmt::print("skipped: fewer GPUs than ranks on a node ({} visible)\n", devices);
      return ptsim::test::gpu_test_skip_status();
    }
    setup.use_mpi = true;
  }
#endif
  NcclCommunicator nccl(setup);
  fmt::print("rank {}: {} on device {}\n", nccl.rank(), NcclCommunicator::library_version(), nccl.device());
  Communicator* reference = nullptr;
#ifdef PTSIM_HAVE_MPI
  reference = mpi.get();
#endif
  const size_t n = 1'000'003;  // odd: no size a chunked algorithm divides evenly
  int failures = check<float>("fp32", nccl, reference, n) + check<double>("fp64", nccl, reference, n);
  nccl.barrier();
  return failures == 0 ? 0 : 1;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    fmt::print(stderr, "nccl_all_reduce_check: {}\n", e.what());
    return 1;
  }
}
