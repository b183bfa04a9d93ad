// tests/cuda_emu/test_nccl_shim.cpp — the NCCL shim alone, one rank, no MPI (docs/cuda-emulation.md, "The NCCL
// shim"): the non-blocking protocol (ncclInProgress, then polls), the identity all-reduce, the rank-ordered
// 16-bit sum, and each refusal NCCL would make (or that would be a bug in a caller) with its ncclGetLastError
// text. The checks only two ranks can make (a missing id broadcast, mismatched calls) are in
// nccl_emulated_mpi_check.cpp.
#include <cuda_runtime_api.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <nccl.h>
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "nccl_emulated_fault.hpp"
#include "nccl_emulated_sum.hpp"
#include "nccl_emulated_test_support.hpp"

namespace {

std::string last_error() { return ncclGetLastError(nullptr); }

// A communicator of one rank, blocking or not; a non-blocking init is polled to its end (two polls: the
// shim's first poll after a call always says ncclInProgress).
ncclComm_t one_rank(bool blocking) {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = blocking ? 1 : 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRankConfig(&comm, 1, id, 0, &config);
  REQUIRE(r == (blocking ? ncclSuccess : ncclInProgress));
  ncclResult_t state = ncclInProgress;
  for (int polls = 0; state == ncclInProgress && polls < 10; ++polls)
    REQUIRE(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
  REQUIRE(state == ncclSuccess);
  return comm;
}

struct DeviceFloats {
  float* p = nullptr;
  explicit DeviceFloats(size_t n) { REQUIRE(cudaMalloc(&p, n * sizeof(float)) == cudaSuccess); }
  ~DeviceFloats() { cudaFree(p); }
};

}  // namespace

TEST_CASE("nccl shim: a non-blocking call returns ncclInProgress and the first poll still says so") {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  CHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &config) == ncclInProgress);
  ncclResult_t state = ncclSuccess;
  CHECK(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
  CHECK(state == ncclInProgress);
  // A call before the init has finished is a caller's bug: NCCL requires polling to the end first.
  DeviceFloats x(4);
  CHECK(ncclAllReduce(x.p, x.p, 4, ncclFloat32, ncclSum, comm, nullptr) == ncclInvalidUsage);
  CHECK(last_error().find("still in progress") != std::string::npos);
  CHECK(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
  CHECK(state == ncclSuccess);
  CHECK(ncclCommFinalize(comm) == ncclInProgress);
  CHECK(ncclCommDestroy(comm) == ncclInvalidUsage);  // finalize still in progress
  for (int polls = 0; polls < 2; ++polls) CHECK(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
  CHECK(state == ncclSuccess);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

TEST_CASE("nccl shim: one rank's all-reduce is the identity, in every type, in place or not") {
  ncclComm_t comm = one_rank(true);
  const size_t n = 37;
  std::vector<uint16_t> bits(n);
  for (size_t i = 0; i < n; ++i) bits[i] = static_cast<uint16_t>(0x3c00 + 977 * i);  // 16-bit patterns, not values
  for (ncclDataType_t type : {ncclFloat16, ncclBfloat16}) {
    void* send = nullptr;
    void* recv = nullptr;
    REQUIRE(cudaMalloc(&send, n * 2) == cudaSuccess);
    REQUIRE(cudaMalloc(&recv, n * 2) == cudaSuccess);
    std::memcpy(send, bits.data(), n * 2);
    std::memset(recv, 0xff, n * 2);
    CHECK(ncclAllReduce(send, recv, n, type, ncclSum, comm, nullptr) == ncclSuccess);
    CHECK(std::memcmp(recv, bits.data(), n * 2) == 0);
    cudaFree(send);
    cudaFree(recv);
  }
  DeviceFloats x(n);
  for (size_t i = 0; i < n; ++i) x.p[i] = 0.1f * static_cast<float>(i) - 1.0f;
  std::vector<float> before(x.p, x.p + n);
  CHECK(ncclAllReduce(x.p, x.p, n, ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess);
  CHECK(std::memcmp(x.p, before.data(), n * sizeof(float)) == 0);
  CHECK(ncclAllReduce(x.p, x.p, 0, ncclFloat64, ncclSum, comm, nullptr) == ncclSuccess);  // count 0: allowed
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

TEST_CASE("nccl shim: 16-bit sums are rank-ordered, each partial rounded once to the type") {
  // Against the exact sum (a + b of two 16-bit values is exact in double) rounded once by the toolkit's
  // double conversion: the float path must agree on every pair (fp32 has >= 2p + 2 bits).
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> pattern(0, 0xffff);
  int compared = 0;
  for (int k = 0; k < 200000; ++k) {
    const uint16_t a = static_cast<uint16_t>(pattern(gen)), b = static_cast<uint16_t>(pattern(gen));
    __half ha, hb, got;
    std::memcpy(static_cast<void*>(&ha), &a, 2);
    std::memcpy(static_cast<void*>(&hb), &b, 2);
    if (__hisnan(ha) || __hisnan(hb) || __hisinf(ha) || __hisinf(hb)) continue;
    const std::vector<const void*> ranks{&ha, &hb};
    cuda_emu::nccl::sum_in_rank_order(ranks, &got, 1, ncclFloat16);
    uint16_t g;
    std::memcpy(&g, &got, 2);
    uint16_t w = cuda_emu::nccl::once_rounded_sum16(a, b, true);
    if (g != w) FAIL_CHECK("fp16 " << a << " + " << b << ": " << g << ", the once-rounded sum is " << w);
    __nv_bfloat16 ba, bb, bgot;
    std::memcpy(static_cast<void*>(&ba), &a, 2);
    std::memcpy(static_cast<void*>(&bb), &b, 2);
    if (__hisnan(ba) || __hisnan(bb) || __hisinf(ba) || __hisinf(bb)) continue;
    const std::vector<const void*> branks{&ba, &bb};
    cuda_emu::nccl::sum_in_rank_order(branks, &bgot, 1, ncclBfloat16);
    std::memcpy(&g, &bgot, 2);
    w = cuda_emu::nccl::once_rounded_sum16(a, b, false);
    if (g != w) FAIL_CHECK("bf16 " << a << " + " << b << ": " << g << ", the once-rounded sum is " << w);
    ++compared;
  }
  CHECK(compared > 150000);
  // Three ranks, in order: (2048 + 1) + 1 in fp16 is 2048 twice over (ties to even at the ulp of 2), while
  // 2048 + (1 + 1) would be 2050: the order is ranks 0, 1, 2.
  const __half x[3] = {__float2half(2048.0f), __float2half(1.0f), __float2half(1.0f)};
  __half sum;
  cuda_emu::nccl::sum_in_rank_order({&x[0], &x[1], &x[2]}, &sum, 1, ncclFloat16);
  CHECK(__half2float(sum) == 2048.0f);
  cuda_emu::nccl::sum_in_rank_order({&x[1], &x[2], &x[0]}, &sum, 1, ncclFloat16);
  CHECK(__half2float(sum) == 2050.0f);
}

TEST_CASE("nccl shim: init refuses what NCCL refuses, naming it") {
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comm = nullptr;
  CHECK(ncclCommInitRankConfig(&comm, 1, id, 1, nullptr) == ncclInvalidArgument);
  CHECK(last_error().find("rank 1 is outside [0, nranks = 1)") != std::string::npos);
  CHECK(ncclCommInitRankConfig(&comm, 0, id, 0, nullptr) == ncclInvalidArgument);
  CHECK(ncclCommInitRankConfig(&comm, 1, id, -1, nullptr) == ncclInvalidArgument);
  ncclConfig_t unset{};
  CHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &unset) == ncclInvalidArgument);
  CHECK(last_error().find("NCCL_CONFIG_INITIALIZER") != std::string::npos);
  ncclConfig_t odd = NCCL_CONFIG_INITIALIZER;
  odd.blocking = 2;
  CHECK(ncclCommInitRankConfig(&comm, 1, id, 0, &odd) == ncclInvalidArgument);
  // Two ranks need two processes: without MPI there is one.
  CHECK(ncclCommInitRankConfig(&comm, 2, id, 0, nullptr) == ncclInvalidUsage);
  CHECK(last_error().find("nranks 2") != std::string::npos);
  // An id that never came from ncclGetUniqueId (a rank that missed the broadcast keeps ncclUniqueId{}).
  ncclUniqueId missing{};
  CHECK(ncclCommInitRankConfig(&comm, 1, missing, 0, nullptr) == ncclInvalidUsage);
  CHECK(last_error().find("did not come from ncclGetUniqueId") != std::string::npos);
}

TEST_CASE("nccl shim: ncclAllReduce refuses host memory, short buffers, unknown types and ops") {
  ncclComm_t comm = one_rank(true);
  DeviceFloats x(10);
  std::vector<float> host(10);
  CHECK(ncclAllReduce(host.data(), host.data(), 10, ncclFloat32, ncclSum, comm, nullptr) == ncclInvalidArgument);
  CHECK(last_error().find("sendbuff") != std::string::npos);
  CHECK(last_error().find("not device memory") != std::string::npos);
  CHECK(ncclAllReduce(x.p, host.data(), 10, ncclFloat32, ncclSum, comm, nullptr) == ncclInvalidArgument);
  CHECK(last_error().find("recvbuff") != std::string::npos);
  CHECK(ncclAllReduce(x.p, x.p, 11, ncclFloat32, ncclSum, comm, nullptr) == ncclInvalidArgument);
  CHECK(last_error().find("has 40 bytes") != std::string::npos);
  CHECK(ncclAllReduce(x.p + 4, x.p + 4, 7, ncclFloat32, ncclSum, comm, nullptr) == ncclInvalidArgument);
  CHECK(last_error().find("has 24 bytes") != std::string::npos);
  CHECK(ncclAllReduce(x.p + 4, x.p + 4, 6, ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess);
  CHECK(ncclAllReduce(x.p, x.p, 20, ncclFloat16, ncclSum, comm, nullptr) == ncclSuccess);  // 40 bytes: fits
  CHECK(ncclAllReduce(x.p, x.p, 10, ncclInt32, ncclSum, comm, nullptr) == ncclInvalidArgument);
  CHECK(last_error().find("datatype 2 is not emulated") != std::string::npos);
  CHECK(ncclAllReduce(x.p, x.p, 10, static_cast<ncclDataType_t>(42), ncclSum, comm, nullptr) == ncclInvalidArgument);
  CHECK(ncclAllReduce(x.p, x.p, 10, ncclFloat32, ncclMax, comm, nullptr) == ncclInvalidArgument);
  CHECK(last_error().find("op 2 is not emulated") != std::string::npos);
  CHECK(ncclAllReduce(x.p, x.p, 10, ncclFloat32, static_cast<ncclRedOp_t>(9), comm, nullptr) == ncclInvalidArgument);
  void* freed = nullptr;
  REQUIRE(cudaMalloc(&freed, 64) == cudaSuccess);
  cudaFree(freed);
  CHECK(ncclAllReduce(freed, freed, 4, ncclFloat32, ncclSum, comm, nullptr) == ncclInvalidArgument);
  CHECK(ncclCommDestroy(comm) == ncclSuccess);
}

TEST_CASE("nccl shim: a destroyed or aborted communicator, or one never made, is refused") {
  ncclComm_t destroyed = one_rank(true);
  ncclComm_t aborted = one_rank(false);
  REQUIRE(ncclCommDestroy(destroyed) == ncclSuccess);
  REQUIRE(ncclCommAbort(aborted) == ncclSuccess);
  DeviceFloats x(4);
  ncclResult_t state;
  CHECK(ncclAllReduce(x.p, x.p, 4, ncclFloat32, ncclSum, destroyed, nullptr) == ncclInvalidArgument);
  CHECK(last_error().find("was destroyed") != std::string::npos);
  CHECK(ncclCommGetAsyncError(aborted, &state) == ncclInvalidArgument);
  CHECK(last_error().find("was aborted") != std::string::npos);
  CHECK(ncclCommFinalize(destroyed) == ncclInvalidArgument);
  CHECK(ncclCommDestroy(destroyed) == ncclInvalidArgument);
  CHECK(ncclCommAbort(aborted) == ncclInvalidArgument);
  int never = 0;
  CHECK(ncclAllReduce(x.p, x.p, 4, ncclFloat32, ncclSum, reinterpret_cast<ncclComm_t>(&never), nullptr) ==
        ncclInvalidArgument);
  CHECK(last_error().find("not a communicator") != std::string::npos);
  CHECK(ncclCommAbort(nullptr) == ncclSuccess);  // as NCCL: nothing to do
  CHECK(ncclCommDestroy(nullptr) == ncclSuccess);
  ncclComm_t finalized = one_rank(true);
  REQUIRE(ncclCommFinalize(finalized) == ncclSuccess);
  CHECK(ncclAllReduce(x.p, x.p, 4, ncclFloat32, ncclSum, finalized, nullptr) == ncclInvalidUsage);
  CHECK(last_error().find("finalized") != std::string::npos);
  CHECK(ncclCommDestroy(finalized) == ncclSuccess);
}

TEST_CASE("nccl shim: PTSIM_EMU_NCCL_FAULT, parsed and injected") {
  std::optional<cuda_emu::nccl::Fault> fault;
  std::string why;
  CHECK(cuda_emu::nccl::parse_fault("hang:1:3", fault, why));
  REQUIRE(fault.has_value());
  CHECK(fault->kind == cuda_emu::nccl::Fault::Kind::hang);
  CHECK((fault->rank == 1 && fault->call == 3));
  CHECK(cuda_emu::nccl::parse_fault(nullptr, fault, why));
  CHECK_FALSE(fault.has_value());
  for (const char* bad : {"hang", "hang:1", "hang:1:0", "crash:0:1", "hang:-1:1", "hang:0:1x", "async-error::1",
                          "hang:al:1", "hang:all:0"}) {
    CAPTURE(bad);
    CHECK_FALSE(cuda_emu::nccl::parse_fault(bad, fault, why));
    CHECK(why.find("KIND:RANK:N") != std::string::npos);
  }
  ncclUniqueId id;
  REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
  ncclComm_t comm = nullptr;
  {
    cuda_emu::nccl::FaultScope fault("sometimes");
    CHECK(ncclCommInitRankConfig(&comm, 1, id, 0, nullptr) == ncclInvalidArgument);
    CHECK(last_error().find("PTSIM_EMU_NCCL_FAULT='sometimes'") != std::string::npos);
  }
  {  // a rank the communicator does not have: the fault could never fire
    cuda_emu::nccl::FaultScope fault("hang:1:1");
    CHECK(ncclCommInitRankConfig(&comm, 1, id, 0, nullptr) == ncclInvalidArgument);
    CHECK(last_error().find("names NCCL rank 1, but the communicator has ranks 0 to 0") != std::string::npos);
  }
  // The second all-reduce of rank 0 fails asynchronously; the communicator then refuses new calls.
  {
    cuda_emu::nccl::FaultScope fault("async-error:0:2");
    comm = one_rank(true);
  }
  DeviceFloats x(4);
  ncclResult_t state = ncclInProgress;
  CHECK(ncclAllReduce(x.p, x.p, 4, ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess);
  CHECK(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
  CHECK(state == ncclSuccess);
  CHECK(ncclAllReduce(x.p, x.p, 4, ncclFloat32, ncclSum, comm, nullptr) == ncclSuccess);
  CHECK(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
  CHECK(state == ncclRemoteError);
  CHECK(last_error().find("rank 0's ncclAllReduce #2 failed") != std::string::npos);
  CHECK(ncclAllReduce(x.p, x.p, 4, ncclFloat32, ncclSum, comm, nullptr) == ncclInvalidUsage);
  CHECK(ncclCommAbort(comm) == ncclSuccess);
  // A hang, as on a GPU: the call and its enqueueing finish, but its stream never passes it (an event after it
  // stays not ready, a stream that waits on that event too), nor a later all-reduce's; until ncclCommAbort.
  {
    cuda_emu::nccl::FaultScope fault("hang:0:1");
    comm = one_rank(false);
  }
  cudaStream_t comm_stream = nullptr, compute = nullptr, other = nullptr;
  cudaEvent_t reduced = nullptr, later = nullptr;
  REQUIRE(cudaStreamCreate(&comm_stream) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&compute) == cudaSuccess);
  REQUIRE(cudaStreamCreate(&other) == cudaSuccess);
  REQUIRE(cudaEventCreate(&reduced) == cudaSuccess);
  REQUIRE(cudaEventCreate(&later) == cudaSuccess);
  // A non-blocking call's first poll says ncclInProgress (the shim's protocol), the next its end.
  auto enqueued = [&] {
    for (int polls = 0; polls < 2; ++polls) REQUIRE(ncclCommGetAsyncError(comm, &state) == ncclSuccess);
    return state;
  };
  CHECK(ncclAllReduce(x.p, x.p, 4, ncclFloat32, ncclSum, comm, comm_stream) == ncclInProgress);
  CHECK(enqueued() == ncclSuccess);  // the hang is on the device
  CHECK(cudaEventRecord(reduced, comm_stream) == cudaSuccess);
  CHECK(cudaStreamWaitEvent(compute, reduced, 0) == cudaSuccess);
  for (int polls = 0; polls < 100; ++polls) {
    REQUIRE(cudaEventQuery(reduced) == cudaErrorNotReady);
    REQUIRE(cudaStreamQuery(comm_stream) == cudaErrorNotReady);
    REQUIRE(cudaStreamQuery(compute) == cudaErrorNotReady);
  }
  CHECK(cudaStreamQuery(other) == cudaSuccess);
  CHECK(ncclAllReduce(x.p, x.p, 4, ncclFloat32, ncclSum, comm, other) == ncclInProgress);  // hangs behind it
  CHECK(enqueued() == ncclSuccess);
  CHECK(cudaStreamQuery(other) == cudaErrorNotReady);
  CHECK(ncclCommAbort(comm) == ncclSuccess);  // ends the hung kernels: every stream and event completes
  CHECK(cudaEventQuery(reduced) == cudaSuccess);
  CHECK(cudaStreamQuery(compute) == cudaSuccess);
  CHECK(cudaStreamSynchronize(comm_stream) == cudaSuccess);
  CHECK(cudaStreamSynchronize(other) == cudaSuccess);
  CHECK(cudaEventRecord(later, compute) == cudaSuccess);
  CHECK(cudaEventQuery(later) == cudaSuccess);
  for (cudaEvent_t e : {reduced, later}) cudaEventDestroy(e);
  for (cudaStream_t st : {comm_stream, compute, other}) cudaStreamDestroy(st);
  // RANK all: every rank's Nth all-reduce.
  CHECK(cuda_emu::nccl::parse_fault("hang:all:2", fault, why));
  REQUIRE(fault.has_value());
  CHECK((fault->strikes(0, 2) && fault->strikes(5, 2) && !fault->strikes(0, 1)));
}

TEST_CASE("nccl shim: version and error strings") {
  int version = 0;
  CHECK(ncclGetVersion(&version) == ncclSuccess);
  CHECK(version == 22809);  // NCCL_VERSION(2, 28, 9): the API version the shim follows (nccl.h)
  CHECK(std::string(ncclGetErrorString(ncclInProgress)) == "NCCL operation in progress");
  CHECK(std::string(ncclGetErrorString(ncclRemoteError)).find("remote process") != std::string::npos);
}
