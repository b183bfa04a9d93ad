// tests/runtime/comm/test_comm_choice.cpp — every combination of --comm, --backend, build (MPI, NCCL) and
// MPI world (runtime/comm/comm_choice.*) names a communicator or refuses with a message saying what is
// missing (`ptsim train` turns the refusal into exit 2).
#include <doctest/doctest.h>

#include <string>

#include "core/error.hpp"
#include "runtime/comm/comm_choice.hpp"

using namespace ptsim::runtime;

namespace {

// The InputError's message of choose_communicator, or "" when it chose.
std::string refusal(CommKind requested, BackendKind backend, const CommContext& c) {
  try {
    choose_communicator(requested, backend, c);
  } catch (const ptsim::core::InputError& e) {
    return e.what();
  }
  return {};
}

const CommContext kFullBuildOneProcess{true, true, false, 1};
const CommContext kFullBuildTwoRanks{true, true, true, 2};
const CommContext kMpiOnlyTwoRanks{true, false, true, 2};
const CommContext kNothingBuilt{false, false, false, 1};

}  // namespace

TEST_CASE("--comm auto: single for one rank, NCCL for CUDA with ranks when built, else MPI") {
  CHECK(choose_communicator(CommKind::automatic, BackendKind::cpu, kFullBuildOneProcess) == CommKind::single);
  CHECK(choose_communicator(CommKind::automatic, BackendKind::cuda, kFullBuildOneProcess) == CommKind::single);
  CHECK(choose_communicator(CommKind::automatic, BackendKind::cuda, kFullBuildTwoRanks) == CommKind::nccl);
  CHECK(choose_communicator(CommKind::automatic, BackendKind::cpu, kFullBuildTwoRanks) == CommKind::mpi);
  CHECK(choose_communicator(CommKind::automatic, BackendKind::cuda, kMpiOnlyTwoRanks) == CommKind::mpi);
  CHECK(choose_communicator(CommKind::automatic, BackendKind::cpu, kNothingBuilt) == CommKind::single);
  const CommContext mpirun_np1{true, true, true, 1};
  CHECK(choose_communicator(CommKind::automatic, BackendKind::cuda, mpirun_np1) == CommKind::single);
}

TEST_CASE("--comm nccl: CUDA backend and an NCCL build; one GPU runs without MPI") {
  CHECK(choose_communicator(CommKind::nccl, BackendKind::cuda, kFullBuildOneProcess) == CommKind::nccl);
  CHECK(choose_communicator(CommKind::nccl, BackendKind::cuda, kFullBuildTwoRanks) == CommKind::nccl);
  const CommContext nccl_without_mpi{false, true, false, 1};
  CHECK(choose_communicator(CommKind::nccl, BackendKind::cuda, nccl_without_mpi) == CommKind::nccl);
  const std::string cpu = refusal(CommKind::nccl, BackendKind::cpu, kFullBuildTwoRanks);
  CHECK(cpu.find("needs --backend cuda") != std::string::npos);
  CHECK(cpu.find("--backend cpu") != std::string::npos);
  const std::string unbuilt = refusal(CommKind::nccl, BackendKind::cuda, kMpiOnlyTwoRanks);
  CHECK(unbuilt.find("built without NCCL") != std::string::npos);
}

TEST_CASE("--comm mpi: an MPI build and an MPI launcher") {
  CHECK(choose_communicator(CommKind::mpi, BackendKind::cpu, kFullBuildTwoRanks) == CommKind::mpi);
  CHECK(choose_communicator(CommKind::mpi, BackendKind::cuda, kFullBuildTwoRanks) == CommKind::mpi);
  CHECK(refusal(CommKind::mpi, BackendKind::cpu, kNothingBuilt).find("built without MPI") != std::string::npos);
  CHECK(refusal(CommKind::mpi, BackendKind::cpu, kFullBuildOneProcess).find("needs an MPI launcher") !=
        std::string::npos);
}

TEST_CASE("parse_comm_kind: auto | mpi | nccl, anything else refused naming the flag") {
  CHECK(parse_comm_kind("auto") == CommKind::automatic);
  CHECK(parse_comm_kind("mpi") == CommKind::mpi);
  CHECK(parse_comm_kind("nccl") == CommKind::nccl);
  for (const char* bad : {"", "single", "NCCL", "gloo"}) {
    std::string message;
    try {
      parse_comm_kind(bad, "ptsim train: --comm");
    } catch (const ptsim::core::InputError& e) {
      message = e.what();
    }
    CHECK_MESSAGE(message.find("ptsim train: --comm") != std::string::npos, bad);
    CHECK_MESSAGE(message.find("expected auto | mpi | nccl") != std::string::npos, bad);
  }
}
