// tests/runtime/comm/test_local_device.cpp — a rank's local rank from the launcher's variables and its GPU
// (runtime/comm/local_device.*): one GPU per local rank, refusals naming the counts.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "core/error.hpp"
#include "runtime/comm/local_device.hpp"

using namespace ptsim::runtime;

namespace {

// Sets the launcher variables for one test case and restores "unset" afterwards.
struct LocalRankEnv {
  LocalRankEnv() { clear(); }
  ~LocalRankEnv() { clear(); }
  static void clear() {
    for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"}) unsetenv(name);
  }
};

std::string input_error_of(int local_rank, int local_ranks, int devices) {
  try {
    choose_local_device(local_rank, local_ranks, devices);
  } catch (const ptsim::core::InputError& e) {
    return e.what();
  }
  return {};
}

}  // namespace

TEST_CASE("local_rank_from_env: Open MPI first, then MPICH, then Slurm; unset gives nullopt") {
  LocalRankEnv env;
  CHECK_FALSE(local_rank_from_env().has_value());
  setenv("SLURM_LOCALID", "3", 1);
  CHECK(local_rank_from_env() == 3);
  setenv("MPI_LOCALRANKID", "2", 1);
  CHECK(local_rank_from_env() == 2);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  CHECK(local_rank_from_env() == 1);
}

TEST_CASE("local_rank_from_env refuses a value that is not an integer >= 0") {
  LocalRankEnv env;
  for (const char* bad : {"", "x", "-1", "1.5", "2 "}) {
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", bad, 1);
    std::string message;
    try {
      local_rank_from_env();
    } catch (const ptsim::core::InputError& e) {
      message = e.what();
    }
    CHECK_MESSAGE(message.find("OMPI_COMM_WORLD_LOCAL_RANK") != std::string::npos, bad);
  }
}

TEST_CASE("choose_local_device: one GPU per local rank") {
  CHECK(choose_local_device(0, 1, 1) == 0);
  CHECK(choose_local_device(3, 8, 8) == 3);
  CHECK(input_error_of(0, 1, 0).find("no CUDA device") != std::string::npos);
  const std::string too_many = input_error_of(2, 4, 2);
  CHECK(too_many.find("local rank 2 of 4") != std::string::npos);
  CHECK(too_many.find("sees 2 GPUs") != std::string::npos);
}
