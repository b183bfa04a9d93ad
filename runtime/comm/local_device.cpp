// runtime/comm/local_device.cpp — a rank's local rank and GPU (see the header).
#include "runtime/comm/local_device.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <cstring>

#include "core/error.hpp"

namespace ptsim::runtime {

std::optional<int> local_rank_from_env() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) {
    const char* value = std::getenv(name);
    if (value == nullptr) continue;
    int rank = -1;
    const char* end = value + std::strlen(value);
    auto [ptr, ec] = std::from_chars(value, end, rank);
    if (ec != std::errc() || ptr != end || ptr == value || rank < 0)
      throw core::InputError(fmt::format("{}='{}': expected the process's local rank, an integer >= 0", name, value));
    return rank;
  }
  return std::nullopt;
}

int choose_local_device(int local_rank, int local_ranks, int device_count) {
  if (device_count <= 0)
    throw core::InputError("no CUDA device visible to this process (cudaGetDeviceCount gave 0; check the driver "
                           "and CUDA_VISIBLE_DEVICES)");
  if (local_rank < 0 || local_rank >= device_count)
    throw core::InputError(fmt::format("local rank {} of {} on this node, but this process sees {} GPU{}: start at "
                                       "most {} rank{} per node (one GPU per rank; NCCL refuses two ranks on one GPU)",
                                       local_rank, local_ranks, device_count, device_count == 1 ? "" : "s",
                                       device_count, device_count == 1 ? "" : "s"));
  return local_rank;
}

}  // namespace ptsim::runtime
