// runtime/comm/mpi_communicator.cpp — MpiSession and MpiCommunicator (see the header).
// Built only when meson found MPI (runtime/meson.build), which also defines PTSIM_HAVE_MPI.
#include "runtime/comm/mpi_communicator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <stdexcept>

#ifdef PTSIM_HAVE_MPI
// The C API only: skip the deprecated C++ bindings (Open MPI, MPICH), which warn under -Wextra.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace ptsim::runtime {

#ifdef PTSIM_HAVE_MPI

namespace {

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(fmt::format("{} failed: {}", call, std::string(text, static_cast<size_t>(length))));
}

// MPI counts are int: split big buffers into chunks of at most INT_MAX elements.
template <class T>
void all_reduce_in_place(std::span<T> data, MPI_Datatype type) {
  size_t done = 0;
  while (done < data.size()) {
    const size_t n = std::min<size_t>(data.size() - done, static_cast<size_t>(INT_MAX));
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, data.data() + done, static_cast<int>(n), type, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    done += n;
  }
}

}  // namespace

MpiSession::MpiSession() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  owns_ = true;
  if (provided < MPI_THREAD_FUNNELED)
    throw std::runtime_error(fmt::format("MPI_Init_thread gave thread level {} (< MPI_THREAD_FUNNELED)", provided));
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

MpiSession::~MpiSession() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

std::string MpiSession::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  MPI_Get_library_version(text, &length);
  std::string s(text, static_cast<size_t>(length));
  if (auto nl = s.find('\n'); nl != std::string::npos) s.resize(nl);
  if (auto comma = s.find(','); comma != std::string::npos) s.resize(comma);
  return s;
}

void MpiSession::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; this keeps [[noreturn]] honest if it did
}

MpiCommunicator::MpiCommunicator() {
  check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &rank_), "MPI_Comm_rank");
  check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &size_), "MPI_Comm_size");
}

void MpiCommunicator::all_reduce_sum(std::span<float> data) { all_reduce_in_place(data, MPI_FLOAT); }
void MpiCommunicator::all_reduce_sum(std::span<double> data) { all_reduce_in_place(data, MPI_DOUBLE); }
void MpiCommunicator::barrier() { check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }

#endif  // PTSIM_HAVE_MPI

}  // namespace ptsim::runtime
