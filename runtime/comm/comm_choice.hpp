// runtime/comm/comm_choice.hpp — which communicator `ptsim train` builds from --comm, --backend, the MPI
// world and what this ptsim was built with. Every combination either names a communicator that works or
// throws core::InputError saying what is missing (exit 2). Pure, so the cpu suite tests every combination;
// tools/cmd_train.cpp creates the communicator it names. Rules: docs/nccl.md, "Choosing the communicator".
#pragma once
#include <string_view>

#include "runtime/exec/device_types.hpp"

namespace ptsim::runtime {

// --comm: auto (the default) | mpi | nccl; single is what auto gives one rank (never requested).
enum class CommKind { automatic, single, mpi, nccl };
const char* to_string(CommKind kind);
// "auto" | "mpi" | "nccl"; throws core::InputError naming `what` and the accepted names otherwise.
CommKind parse_comm_kind(std::string_view name, std::string_view what = "--comm");

// What this ptsim was built with (PTSIM_HAVE_MPI, PTSIM_HAVE_NCCL) and how it was started.
struct CommContext {
  bool built_with_mpi = false;
  bool built_with_nccl = false;
  bool launched_by_mpi = false;  // mpirun / srun started this process
  int world_size = 1;            // MPI_COMM_WORLD's size when launched and built with MPI, else 1
};

// The communicator to create (never automatic). auto: NCCL for --backend cuda with more than one rank when
// built with NCCL; else MPI for more than one rank (host all-reduces; a CUDA backend's buffers go through
// host copies); else single. nccl: needs --backend cuda and an NCCL build (with one rank it runs without
// MPI). mpi: needs an MPI build and an MPI launcher.
CommKind choose_communicator(CommKind requested, BackendKind backend, const CommContext& context);

}  // namespace ptsim::runtime
