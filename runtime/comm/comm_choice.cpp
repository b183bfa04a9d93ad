// runtime/comm/comm_choice.cpp — the communicator `ptsim train` builds (see the header).
#include "runtime/comm/comm_choice.hpp"

#include <fmt/format.h>

#include "core/error.hpp"

namespace ptsim::runtime {

const char* to_string(CommKind kind) {
  switch (kind) {
    case CommKind::automatic: return "auto";
    case CommKind::single: return "single";
    case CommKind::mpi: return "mpi";
    case CommKind::nccl: return "nccl";
  }
  return "?";
}

CommKind parse_comm_kind(std::string_view name, std::string_view what) {
  if (name == "auto") return CommKind::automatic;
  if (name == "mpi") return CommKind::mpi;
  if (name == "nccl") return CommKind::nccl;
  throw core::InputError(fmt::format("{} '{}' is unknown (expected auto | mpi | nccl)", what, name));
}

namespace {

CommKind check_nccl(BackendKind backend, const CommContext& c) {
  if (backend != BackendKind::cuda)
    throw core::InputError(fmt::format("ptsim train: --comm nccl all-reduces CUDA device memory and needs --backend "
                                       "cuda; --backend {} keeps gradients in host memory: use --comm mpi or auto",
                                       to_string(backend)));
  if (!c.built_with_nccl)
    throw core::InputError("ptsim train: --comm nccl: this ptsim was built without NCCL (meson found no NCCL + "
                           "cudart; the summary's 'NCCL' line says so): install NCCL and reconfigure, or use --comm "
                           "mpi or auto");
  return CommKind::nccl;
}

CommKind check_mpi(const CommContext& c) {
  if (!c.built_with_mpi)
    throw core::InputError("ptsim train: --comm mpi: this ptsim was built without MPI (install libopenmpi-dev and "
                           "reconfigure), or use --comm auto");
  if (!c.launched_by_mpi)
    throw core::InputError("ptsim train: --comm mpi needs an MPI launcher (mpirun -np N ptsim train ...); for one "
                           "process use --comm auto");
  return CommKind::mpi;
}

}  // namespace

CommKind choose_communicator(CommKind requested, BackendKind backend, const CommContext& c) {
  switch (requested) {
    case CommKind::nccl: return check_nccl(backend, c);
    case CommKind::mpi: return check_mpi(c);
    case CommKind::single:
    case CommKind::automatic: break;
  }
  if (c.world_size <= 1) return CommKind::single;
  if (backend == BackendKind::cuda && c.built_with_nccl) return CommKind::nccl;
  return CommKind::mpi;
}

}  // namespace ptsim::runtime
