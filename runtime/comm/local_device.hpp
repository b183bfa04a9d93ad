// runtime/comm/local_device.hpp — which GPU a rank drives: its rank among the processes on its node (the
// launcher's local-rank variable, else MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) in the NCCL communicator)
// mapped to a device index of the GPUs this process sees (CUDA_VISIBLE_DEVICES applies first). Pure
// functions, so the cpu suite tests them; the CUDA calls are in nccl_communicator.cpp.
#pragma once
#include <optional>

namespace ptsim::runtime {

// The local rank the launcher set: Open MPI OMPI_COMM_WORLD_LOCAL_RANK, MPICH/Hydra MPI_LOCALRANKID, Slurm
// SLURM_LOCALID (first found). nullopt when none is set. Throws core::InputError naming the variable when
// its value is not an integer >= 0.
std::optional<int> local_rank_from_env();

// Device `local_rank` of `device_count` visible GPUs: one GPU per local rank. Throws core::InputError when
// there is no GPU, or more local ranks than GPUs (saying how many of each, and that ranks may not share a
// GPU: NCCL refuses two ranks on one device).
int choose_local_device(int local_rank, int local_ranks, int device_count);

}  // namespace ptsim::runtime
