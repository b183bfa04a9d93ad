// tests/cuda_emu/nccl_emulated_mpi_check.cpp — two ranks under mpirun (one emulated GPU each,
// PTSIM_EMU_CUDA_DEVICES=2) on the NCCL shim (docs/cuda-emulation.md, "The NCCL shim"). Not a doctest program:
// a failing job must end as a whole, as ptsim train ends it (MPI_Abort).
//   sums         NcclCommunicator's bucket all-reduces of f16, bf16, f32 and f64 spans on the emulated CUDA
//                backend against a + b computed on the host (exact in double, rounded once to the type), bit
//                for bit (16-bit ones also from host memory, and through MpiCommunicator's 16-bit MPI_Op: the
//                same bits); then the shim's cross-rank refusals (an id that was not broadcast, rank 1 keeping
//                ncclUniqueId{}, one NCCL rank in two processes, mismatched all-reduce counts), each seen on
//                both ranks; then one rank alone calling wrongly (a bad config, type, op, a short buffer): both
//                ranks refuse it within 10 s. Exit 0 when all agree.
//   async-error  host all-reduces until one throws CommFailure (PTSIM_EMU_NCCL_FAULT makes one fail); the
//   hang         failing rank prints "rank R: communication failed: ..." and how long that all-reduce ran, and
//                calls MPI_Abort(1), as ptsim train does. Exit 0 only if nothing failed (run_nccl_fault_job.py
//                expects a non-zero job).
#include <cuda_runtime_api.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <fmt/format.h>
#include <nccl.h>

#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "runtime/comm/comm_deadline.hpp"
#include "runtime/comm/mpi_communicator.hpp"
#include "runtime/comm/nccl_communicator.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/cuda/cuda_backend.hpp"
#include "nccl_emulated_test_support.hpp"

using namespace ptsim;

namespace {

int failures = 0;

void expect(bool ok, const std::string& what, int rank) {
  if (ok) return;
  fmt::print(stderr, "rank {}: FAILED: {}\n", rank, what);
  ++failures;
}

// Rank r's 16-bit patterns: finite values of every magnitude (random bits, NaN and inf patterns replaced),
// led by cases whose rounding is known: 2048 + 1 (a tie in fp16: 2048), 65504 + 65504 (fp16 overflows to inf),
// 1 + 2^-24 style small additions.
std::vector<uint16_t> rank_bits(int rank, size_t n, bool is_f16) {
  std::mt19937 gen(100 + static_cast<unsigned>(rank));
  std::uniform_int_distribution<uint32_t> pattern(0, 0xffff);
  std::vector<uint16_t> v(n);
  for (uint16_t& b : v) {
    do b = static_cast<uint16_t>(pattern(gen));
    while (((b >> (is_f16 ? 10 : 7)) & (is_f16 ? 0x1f : 0xff)) == (is_f16 ? 0x1f : 0xff));  // exponent all ones
  }
  if (is_f16) {
    const uint16_t lead[2][3] = {{0x6800, 0x7bff, 0x3c00}, {0x3c00, 0x7bff, 0x0001}};  // 2048, 65504, 1 | 1, 65504, 2^-24
    std::memcpy(v.data(), lead[rank], sizeof lead[rank]);
  }
  return v;
}

void check_16bit_sums(runtime::NcclCommunicator& nccl, runtime::Backend& backend, models::DType dtype) {
  const bool is_f16 = dtype == models::DType::f16;
  const size_t n = 4099;
  const std::vector<uint16_t> mine = rank_bits(nccl.rank(), n, is_f16);
  const std::vector<uint16_t> a = rank_bits(0, n, is_f16), b = rank_bits(1, n, is_f16);
  const auto span = runtime::DeviceSpan::of(backend.allocate(n * 2));
  backend.copy_to_device(span, mine.data());
  nccl.wait(nccl.start_all_reduce_sum(backend, span, dtype, runtime::Stream{}));
  std::vector<uint16_t> got(n);
  backend.copy_to_host(got.data(), span);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i)
    if (got[i] != cuda_emu::nccl::once_rounded_sum16(a[i], b[i], is_f16) && wrong++ < 3)
      fmt::print(stderr, "rank {}: {} element {}: {:#06x} + {:#06x} gave {:#06x}, the host's sum is {:#06x}\n",
                 nccl.rank(), models::to_string(dtype), i, a[i], b[i], got[i], cuda_emu::nccl::once_rounded_sum16(a[i], b[i], is_f16));
  expect(wrong == 0, fmt::format("{} bucket sum: {} of {} elements differ from the host's", models::to_string(dtype),
                                 wrong, n), nccl.rank());
  if (is_f16 && wrong == 0)
    expect(got[0] == 0x6800 && got[1] == 0x7c00, "fp16 2048 + 1 = 2048 (tie to even), 65504 + 65504 = inf",
           nccl.rank());
  // The host-memory form, and MpiCommunicator's 16-bit MPI_Op (what `ptsim train --backend cpu` sums 16-bit
  // buckets with), give the bucket's bits: the two communicators of a 2-rank comparison sum alike.
  std::vector<uint16_t> host = mine, via_mpi = mine;
  nccl.all_reduce_sum_16bit(std::span<uint16_t>(host), dtype);
  runtime::MpiCommunicator mpi;
  mpi.all_reduce_sum_16bit(std::span<uint16_t>(via_mpi), dtype);
  expect(host == got, fmt::format("{} host-memory sum differs from the bucket sum", models::to_string(dtype)),
         nccl.rank());
  expect(via_mpi == got, fmt::format("{} MpiCommunicator sum differs from NCCL's", models::to_string(dtype)),
         nccl.rank());
  backend.free(span.buffer);
}

template <class T>
void check_wide_sums(runtime::NcclCommunicator& nccl, runtime::Backend& backend) {
  const size_t n = 777;
  auto value = [](int rank, size_t i) { return static_cast<T>(std::sin(static_cast<double>(i * 7 + rank * 3))); };
  std::vector<T> mine(n), got(n);
  for (size_t i = 0; i < n; ++i) mine[i] = value(nccl.rank(), i);
  const auto span = runtime::DeviceSpan::of(backend.allocate(n * sizeof(T)));
  backend.copy_to_device(span, mine.data());
  const auto type = sizeof(T) == 8 ? models::DType::f64 : models::DType::f32;
  nccl.wait(nccl.start_all_reduce_sum(backend, span, type, runtime::Stream{}));
  backend.copy_to_host(got.data(), span);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += got[i] != static_cast<T>(value(0, i) + value(1, i));
  expect(wrong == 0, fmt::format("{}-byte bucket sum: {} of {} differ from a + b", sizeof(T), wrong, n), nccl.rank());
  backend.free(span.buffer);
}

// A blocking init of the 2-rank world with this rank's `id` and `rank`: every rank must get `result` and a
// last error containing `text`.
void expect_init(const ncclUniqueId& id, int rank, ncclResult_t result, const char* text, int mpi_rank) {
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRankConfig(&comm, 2, id, rank, nullptr);
  const std::string last = ncclGetLastError(nullptr);
  expect(r == result && last.find(text) != std::string::npos,
         fmt::format("init expected result {} with '{}', got {}: '{}'", int{result}, text, int{r}, last), mpi_rank);
  if (comm != nullptr) ncclCommAbort(comm);
}

void check_shim_refusals(int rank) {
  ncclUniqueId shared;
  if (rank == 0) ncclGetUniqueId(&shared);
  MPI_Bcast(&shared, sizeof shared, MPI_BYTE, 0, MPI_COMM_WORLD);
  ncclUniqueId own;
  ncclGetUniqueId(&own);  // every rank its own: the broadcast forgotten
  expect_init(own, rank, ncclInvalidUsage, "were given different unique ids", rank);
  const ncclUniqueId never{};
  expect_init(rank == 0 ? shared : never, rank, ncclInvalidUsage, "did not come from ncclGetUniqueId", rank);
  expect_init(shared, 0, ncclInvalidUsage, "rank 0 was given to two processes", rank);
  ncclComm_t comm = nullptr;
  expect(ncclCommInitRankConfig(&comm, 2, shared, rank, nullptr) == ncclSuccess, "a healthy 2-rank init", rank);
  float* x = nullptr;
  cudaMalloc(&x, 8 * sizeof(float));
  const ncclResult_t r = ncclAllReduce(x, x, rank == 0 ? 4 : 5, ncclFloat32, ncclSum, comm, nullptr);
  const std::string last = ncclGetLastError(nullptr);
  expect(r == ncclInvalidUsage && last.find("rank 0 called it with count 4") != std::string::npos &&
             last.find("rank 1 with count 5") != std::string::npos,
         fmt::format("mismatched counts: got {}: '{}'", int{r}, last), rank);
  ncclCommAbort(comm);
  cudaFree(x);
}

// Polls non-blocking `comm` until its call ends or 10 s pass (a refusal takes milliseconds; a rank left waiting
// for a peer that already returned would take forever): the call's result, ncclInProgress if it never ended.
ncclResult_t poll_for_result(ncclComm_t comm) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress && std::chrono::steady_clock::now() < end)
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclInternalError;
  return state;
}

ncclComm_t nonblocking_comm(const ncclUniqueId& id, int rank) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  ncclCommInitRankConfig(&comm, 2, id, rank, &config);
  expect(poll_for_result(comm) == ncclSuccess, "a healthy non-blocking 2-rank init", rank);
  return comm;
}

// Only MPI rank 1 calls ncclAllReduce wrongly (`bad`: its type, op or count); both ranks must get `result`, the
// rank named and `text`, within the poll's 10 s.
void expect_one_rank_refusal(const ncclUniqueId& id, int rank, ncclDataType_t type, ncclRedOp_t op, size_t count,
                             const char* text) {
  ncclComm_t comm = nonblocking_comm(id, rank);
  float* x = nullptr;
  cudaMalloc(&x, 8 * sizeof(float));
  ncclAllReduce(x, x, rank == 1 ? count : 8, rank == 1 ? type : ncclFloat32, rank == 1 ? op : ncclSum, comm, nullptr);
  const ncclResult_t r = poll_for_result(comm);
  const std::string last = ncclGetLastError(nullptr);
  expect(r == ncclInvalidArgument && last.find("(MPI rank 1's ncclAllReduce; refused on every rank)") != std::string::npos &&
             last.find(text) != std::string::npos,
         fmt::format("rank 1 alone calling with '{}': got {}: '{}'", text, int{r}, last), rank);
  ncclCommAbort(comm);
  cudaFree(x);
}

// Only MPI rank 1 passes a bad config (blocking = 2, refused on the spot); rank 0, non-blocking, must get the
// refusal from its poll within 10 s.
void expect_one_rank_init_refusal(const ncclUniqueId& id, int rank) {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = rank == 1 ? 2 : 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t started = ncclCommInitRankConfig(&comm, 2, id, rank, &config);
  const ncclResult_t r = rank == 1 ? started : poll_for_result(comm);
  const std::string last = ncclGetLastError(nullptr);
  expect(r == ncclInvalidArgument && last.find("(MPI rank 1's ncclCommInitRankConfig; refused on every rank)") != std::string::npos &&
             last.find("config.blocking is 2") != std::string::npos,
         fmt::format("rank 1 alone with config.blocking 2: got {}: '{}'", int{r}, last), rank);
  if (comm != nullptr) ncclCommAbort(comm);
}

void check_one_rank_refusals(int rank) {
  ncclUniqueId shared;
  if (rank == 0) ncclGetUniqueId(&shared);
  MPI_Bcast(&shared, sizeof shared, MPI_BYTE, 0, MPI_COMM_WORLD);
  expect_one_rank_init_refusal(shared, rank);
  expect_one_rank_refusal(shared, rank, ncclInt32, ncclSum, 8, "datatype 2 is not emulated");
  expect_one_rank_refusal(shared, rank, ncclFloat32, ncclMax, 8, "op 2 is not emulated");
  expect_one_rank_refusal(shared, rank, ncclFloat32, ncclSum, 9, "the all-reduce needs 36");
}

int run_sums() {
  runtime::NcclSetup setup;
  setup.use_mpi = true;
  setup.timeout = std::chrono::milliseconds(60000);
  runtime::NcclCommunicator nccl(setup);
  expect(nccl.size() == 2 && nccl.device() == nccl.rank(), "2 ranks, each on its own emulated device", nccl.rank());
  auto backend = runtime::make_cuda_backend(runtime::ComputeType::f32);
  check_16bit_sums(nccl, *backend, models::DType::f16);
  check_16bit_sums(nccl, *backend, models::DType::bf16);
  check_wide_sums<float>(nccl, *backend);
  check_wide_sums<double>(nccl, *backend);
  check_shim_refusals(nccl.rank());
  check_one_rank_refusals(nccl.rank());
  nccl.barrier();
  if (failures == 0) fmt::print("rank {}: every emulated NCCL sum and refusal as expected\n", nccl.rank());
  return failures == 0 ? 0 : 1;
}

// Host all-reduces until one fails; a CommFailure ends the job like ptsim train's (MPI_Abort).
int run_until_failure() {
  runtime::NcclSetup setup;
  setup.use_mpi = true;
  setup.timeout = runtime::comm_timeout_from_env(std::getenv("PTSIM_COMM_TIMEOUT_S"));
  runtime::NcclCommunicator nccl(setup);
  for (int i = 0; i < 5; ++i) {
    float x = 1.0f;
    const auto start = std::chrono::steady_clock::now();
    try {
      nccl.all_reduce_sum(std::span<float>(&x, 1));
    } catch (const runtime::CommFailure& e) {
      const double ran_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      fmt::print(stderr, "rank {}: communication failed: {}\n", nccl.rank(), e.what());
      fmt::print(stderr, "rank {}: the failing all-reduce ran {:.3f} s\n", nccl.rank(), ran_s);  // for the script
      std::fflush(stderr);
      runtime::MpiSession::abort(1);
    }
  }
  fmt::print("rank {}: no all-reduce failed\n", nccl.rank());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode != "sums" && mode != "async-error" && mode != "hang") {
    fmt::print(stderr, "usage: nccl_emulated_mpi_check sums|async-error|hang (under mpirun -np 2)\n");
    return 2;
  }
  try {
    runtime::MpiSession session;
    return mode == "sums" ? run_sums() : run_until_failure();
  } catch (const std::exception& e) {
    fmt::print(stderr, "nccl_emulated_mpi_check: {}\n", e.what());
    return 1;
  }
}
