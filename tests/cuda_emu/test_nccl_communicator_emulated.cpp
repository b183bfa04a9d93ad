// tests/cuda_emu/test_nccl_communicator_emulated.cpp — NcclCommunicator (runtime/comm/nccl_communicator.cpp,
// compiled over the NCCL shim: docs/cuda-emulation.md, "The NCCL shim") on one rank and the emulated CUDA
// backend: setup with the non-blocking config and its polling, host and backend-span all-reduces (f32, f16,
// bf16: one rank returns its input, to the bit), the refusals, and the failure paths — an injected async error
// and a hang with a short timeout each throw CommFailure naming the cause within the deadline, and the
// aborted communicator then refuses work and is destroyed without hanging; every host wait of the backend behind a
// hung all-reduce (a copy to host, the optimizer's cache drain, the 16-bit boundary's scratch growth, its
// destructor) ends at the deadline. Two ranks: nccl_emulated_mpi_check.cpp.
#include <cuda_runtime_api.h>  // the emulator's: cuda_emu::live_events
#include <doctest/doctest.h>

#include <unistd.h>  // dup, dup2: stderr_of

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "runtime/comm/comm_deadline.hpp"
#include "runtime/comm/nccl_communicator.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/cuda/cuda_backend.hpp"
#include "runtime/optim/optimizer_math.hpp"  // defines: Hyperparameters
#include "runtime/optim/step_scalars.hpp"
#include "nccl_emulated_state.hpp"
#include "nccl_emulated_test_support.hpp"

using namespace ptsim;
using runtime::CommFailure;
using runtime::NcclCommunicator;
using runtime::NcclSetup;
using cuda_emu::nccl::FaultScope;

namespace {

NcclSetup one_rank(std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  NcclSetup setup;
  setup.timeout = timeout;
  return setup;
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The message of the CommFailure `f` throws ("" if it throws nothing; another exception fails the test).
template <class F>
std::string comm_failure_of(F&& f) {
  try {
    f();
  } catch (const CommFailure& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("NcclCommunicator (emulated): one rank's setup and host all-reduces; finalized and destroyed at the end") {
  const auto before = cuda_emu::nccl::communicator_counts();
  {
    NcclCommunicator nccl(one_rank());
    CHECK(cuda_emu::nccl::communicator_counts().live == before.live + 1);
    CHECK(nccl.rank() == 0);
    CHECK(nccl.size() == 1);
    CHECK(nccl.device() == 0);
    CHECK(NcclCommunicator::library_version() == "NCCL 2.28.9");  // the shim's NCCL_VERSION_CODE, 22809
    std::vector<float> f{1.5f, -2.25f, 3.0f};
    std::vector<double> d{0.1, 1e300, -7.0};
    const auto f0 = f;
    const auto d0 = d;
    nccl.all_reduce_sum(std::span<float>(f));
    nccl.all_reduce_sum(std::span<double>(d));
    CHECK(f == f0);
    CHECK(d == d0);
    nccl.barrier();
  }
  const auto after = cuda_emu::nccl::communicator_counts();
  CHECK(after.live == before.live);
  CHECK(after.finalized_destroyed == before.finalized_destroyed + 1);  // the destructor's ncclCommFinalize, Destroy
  CHECK(after.destroyed_unfinalized == before.destroyed_unfinalized);
  CHECK(after.aborted == before.aborted);
}

TEST_CASE("NcclCommunicator (emulated): bucket all-reduces of f32, f16 and bf16 spans") {
  NcclCommunicator nccl(one_rank());
  auto backend = runtime::make_cuda_backend(runtime::ComputeType::f32);
  const size_t n = 1001;
  std::vector<uint16_t> bits(n);
  for (size_t i = 0; i < n; ++i) bits[i] = static_cast<uint16_t>(0x3800 + 37 * i);
  for (models::DType dtype : {models::DType::f16, models::DType::bf16}) {
    CAPTURE(models::to_string(dtype));
    const auto span = runtime::DeviceSpan::of(backend->allocate(n * 2));
    backend->copy_to_device(span, bits.data());
    const runtime::CommRequest request = nccl.start_all_reduce_sum(*backend, span, dtype, runtime::Stream{});
    nccl.wait(request);
    std::vector<uint16_t> got(n);
    backend->copy_to_host(got.data(), span);
    CHECK(got == bits);
    backend->free(span.buffer);
  }
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = 0.001f * static_cast<float>(i);
  const auto span = runtime::DeviceSpan::of(backend->allocate(n * 4));
  backend->copy_to_device(span, values.data());
  nccl.all_reduce_sum(*backend, span, models::DType::f32, runtime::Stream{});  // checked at the barrier
  nccl.barrier();
  std::vector<float> got(n);
  backend->copy_to_host(got.data(), span);
  CHECK(got == values);
  // Refusals: a span that is not whole elements, a dtype NCCL cannot sum, a backend that is not CUDA.
  CHECK_THROWS_WITH_AS(nccl.start_all_reduce_sum(*backend, span.sub(0, 3), models::DType::f16, runtime::Stream{}),
                       doctest::Contains("3 bytes is not a whole number of f16 elements"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(nccl.start_all_reduce_sum(*backend, span, models::DType::i32, runtime::Stream{}),
                       doctest::Contains("cannot sum elements of dtype i32"), std::invalid_argument);
  auto cpu = runtime::make_backend(runtime::BackendKind::cpu, runtime::ComputeType::f32, 1);
  const auto cpu_span = runtime::DeviceSpan::of(cpu->allocate(16));
  CHECK_THROWS_WITH_AS(nccl.start_all_reduce_sum(*cpu, cpu_span, models::DType::f32, runtime::Stream{}),
                       doctest::Contains("is not a CUDA backend"), std::invalid_argument);
  backend->free(span.buffer);
}

TEST_CASE("NcclCommunicator (emulated): an async error throws CommFailure with NCCL's text, then refuses work") {
  FaultScope fault("async-error:0:2");
  const auto before = cuda_emu::nccl::communicator_counts();
  auto nccl = std::make_unique<NcclCommunicator>(one_rank());
  float x = 1.0f;
  nccl->all_reduce_sum(std::span<float>(&x, 1));  // the first is healthy
  const auto start = std::chrono::steady_clock::now();
  const std::string what = comm_failure_of([&] { nccl->all_reduce_sum(std::span<float>(&x, 1)); });
  CHECK(seconds_since(start) < 5.0);  // an error is seen at the next poll, not at the 10 s deadline
  CHECK(what.find("ncclAllReduce (enqueue) failed: remote process exited or there was a network error") !=
        std::string::npos);
  CHECK(what.find("PTSIM_EMU_NCCL_FAULT=async-error:0:2") != std::string::npos);
  CHECK(what.find("communicator aborted") != std::string::npos);
  CHECK(comm_failure_of([&] { nccl->barrier(); }).find("aborted by an earlier failure") != std::string::npos);
  nccl.reset();  // after the abort: no finalize, no hang
  const auto after = cuda_emu::nccl::communicator_counts();
  CHECK(after.live == before.live);
  CHECK(after.aborted == before.aborted + 1);  // by the failure's probe, once; the destructor leaves it
  CHECK(after.finalized_destroyed == before.finalized_destroyed);
}

TEST_CASE("NcclCommunicator (emulated): a hang ends at PTSIM_COMM_TIMEOUT_S's deadline with CommFailure") {
  FaultScope fault("hang:0:1");
  auto nccl = std::make_unique<NcclCommunicator>(one_rank(std::chrono::milliseconds(200)));
  auto backend = runtime::make_cuda_backend(runtime::ComputeType::f32);
  const auto span = runtime::DeviceSpan::of(backend->allocate(64));
  // Enqueued as a healthy one is (the shim's hang is on the device); the wait for it hangs.
  const runtime::CommRequest bucket = nccl->start_all_reduce_sum(*backend, span, models::DType::bf16, runtime::Stream{});
  const auto start = std::chrono::steady_clock::now();
  const std::string what = comm_failure_of([&] { nccl->wait(bucket); });
  const double took = seconds_since(start);
  CHECK(took >= 0.2);  // not before the deadline
  CHECK(took < 5.0);   // and not long after it (polls every 50 µs)
  CHECK(what.find("did not finish within 0.200 s") != std::string::npos);
  CHECK(what.find("PTSIM_COMM_TIMEOUT_S") != std::string::npos);
  float x = 0.0f;
  CHECK(comm_failure_of([&] { nccl->all_reduce_sum(std::span<float>(&x, 1)); }).find("aborted") != std::string::npos);
  nccl.reset();
  backend->free(span.buffer);
}

// The backend's own host waits (docs/nccl.md, "Host waits behind a collective"): the compute stream waits on
// the comm stream's event after a hung all-reduce, as the executor's does, so the copy to host (the trainer's
// step-state read) would block for good (the emulator's stalled stream, as on a GPU); the guard the
// communicator installed ends it at the deadline, naming the all-reduce and the wait. Bounds as above.
TEST_CASE("NcclCommunicator (emulated): a host copy behind a hung all-reduce ends at the deadline, naming both") {
  FaultScope fault("hang:0:1");
  auto nccl = std::make_unique<NcclCommunicator>(one_rank(std::chrono::milliseconds(200)));
  auto backend = runtime::make_cuda_backend(runtime::ComputeType::f32);
  const auto span = runtime::DeviceSpan::of(backend->allocate(64));
  const runtime::Stream comm_stream = backend->create_stream();
  const runtime::Event reduced = backend->create_event();
  nccl->all_reduce_sum(*backend, span, models::DType::f32, comm_stream);  // the blocking form: nothing waits
  backend->record(reduced, comm_stream);
  backend->wait(runtime::Stream{}, reduced);
  std::vector<float> host(16);
  const auto start = std::chrono::steady_clock::now();
  const std::string what = comm_failure_of([&] { backend->copy_to_host(host.data(), span); });
  const double took = seconds_since(start);
  CHECK(took >= 0.2);
  CHECK(took < 5.0);
  CHECK(what.find("ncclAllReduce #1 (64 bytes of f32), which the compute stream (copy to host) waits "
                  "behind, did not finish within 0.200 s") != std::string::npos);
  // The abort ended the hung all-reduce: the streams complete, the backend's waits return again.
  CHECK_NOTHROW(backend->synchronize(runtime::Stream{}));
  CHECK_NOTHROW(backend->copy_to_host(host.data(), span));
  nccl.reset();
  backend->free(span.buffer);
}

TEST_CASE("NcclCommunicator (emulated): waiting for a bucket after a failure throws and leaks no event") {
  FaultScope fault("async-error:0:2");
  const int events_before = cuda_emu::live_events();
  {
    NcclCommunicator nccl(one_rank());
    auto backend = runtime::make_cuda_backend(runtime::ComputeType::f32);
    const auto span = runtime::DeviceSpan::of(backend->allocate(64));
    const runtime::CommRequest bucket = nccl.start_all_reduce_sum(*backend, span, models::DType::f32, runtime::Stream{});
    float x = 0.0f;
    CHECK(comm_failure_of([&] { nccl.all_reduce_sum(std::span<float>(&x, 1)); }).find("remote process") !=
          std::string::npos);
    CHECK(comm_failure_of([&] { nccl.wait(bucket); }).find("aborted by an earlier failure") != std::string::npos);
    backend->free(span.buffer);
  }
  CHECK(cuda_emu::live_events() == events_before);  // the bucket's event too, though its wait threw
}

TEST_CASE("NcclCommunicator (emulated): a setup the shim refuses is a CommFailure naming the call") {
  FaultScope fault("sometimes");
  const std::string what = comm_failure_of([] { NcclCommunicator nccl(one_rank()); });
  CAPTURE(what);
  // Refused through the cross-rank gather (so every rank refuses it): a non-blocking init's poll reports it.
  CHECK(what.find("ncclCommInitRankConfig (rank 0 of 1, device 0) failed: invalid argument: "
                  "PTSIM_EMU_NCCL_FAULT='sometimes'") != std::string::npos);
}

// The backend's remaining host waits (docs/nccl.md, "Host waits behind a collective"): each one behind the
// compute stream stuck on a hung all-reduce (set up as in the case above) ends at the deadline through the
// communicator's guard, or does not wait at all. The deadline counts from the all-reduce's enqueue; `start` is
// taken before it, so ≥ 0.2 s is strict; < 5 s as above (polls every 50 µs).
namespace {

// The compute stream waits behind `nccl`'s hung (FaultScope "hang:0:1") all-reduce of `span` on a new stream.
void stall_compute_behind_hung_all_reduce(NcclCommunicator& nccl, runtime::Backend& backend,
                                          const runtime::DeviceSpan& span) {
  const runtime::Stream comm_stream = backend.create_stream();
  const runtime::Event reduced = backend.create_event();
  nccl.all_reduce_sum(backend, span, models::DType::f32, comm_stream);
  backend.record(reduced, comm_stream);
  backend.wait(runtime::Stream{}, reduced);
}

// One SGD tensor of one fp32 element per list, at element `i` of each buffer: a list the optimizer has not seen.
runtime::OptimizerTensor sgd_tensor(const runtime::DeviceBuffer& weights, const runtime::DeviceBuffer& grads,
                                    const runtime::DeviceBuffer& momenta, size_t i) {
  runtime::OptimizerTensor t;
  t.weight = runtime::DeviceSpan::of(weights).sub(4 * i, 4);
  t.grad = runtime::DeviceSpan::of(grads).sub(4 * i, 4);
  t.state[0] = runtime::DeviceSpan::of(momenta).sub(4 * i, 4);
  return t;
}

// What `f` writes to stderr (file descriptor 2), e.g. a destructor's warning.
template <class F>
std::string stderr_of(F&& f) {
  std::fflush(stderr);
  std::FILE* capture = std::tmpfile();
  REQUIRE(capture != nullptr);
  const int saved = ::dup(2);
  ::dup2(::fileno(capture), 2);
  f();
  std::fflush(stderr);
  ::dup2(saved, 2);
  ::close(saved);
  std::string text;
  std::rewind(capture);
  for (int c; (c = std::fgetc(capture)) != EOF;) text.push_back(static_cast<char>(c));
  std::fclose(capture);
  return text;
}

}  // namespace

TEST_CASE("NcclCommunicator (emulated): the optimizer's table cache drain behind a hung all-reduce ends at the deadline") {
  FaultScope fault("hang:0:1");
  auto nccl = std::make_unique<NcclCommunicator>(one_rank(std::chrono::milliseconds(200)));
  auto backend = runtime::make_cuda_backend(runtime::ComputeType::f32);
  constexpr size_t kLists = 1025;  // MultiTensorOptimizer::kMaxLists (1024) + 1: the last one drains the cache
  const runtime::DeviceBuffer weights = backend->allocate(4 * kLists), grads = backend->allocate(4 * kLists),
                              momenta = backend->allocate(4 * kLists);
  const auto scalars = runtime::DeviceSpan::of(backend->allocate(sizeof(runtime::optim_math::StepScalars)));
  runtime::optim_math::StepScalars skip;
  skip.skip = 1;  // the passes change nothing: only the tables matter here
  backend->copy_to_device(scalars, &skip);
  runtime::optim_math::Hyperparameters sgd;
  sgd.rule = runtime::optim_math::Rule::sgd;
  for (size_t i = 0; i + 1 < kLists; ++i) {  // healthy: fills the cache, nothing waits
    const runtime::OptimizerTensor t = sgd_tensor(weights, grads, momenta, i);
    backend->optimizer_step(sgd, scalars, std::span(&t, 1));
  }
  const auto span = runtime::DeviceSpan::of(backend->allocate(64));
  const auto start = std::chrono::steady_clock::now();
  stall_compute_behind_hung_all_reduce(*nccl, *backend, span);
  const runtime::OptimizerTensor last = sgd_tensor(weights, grads, momenta, kLists - 1);
  const std::string what = comm_failure_of([&] { backend->optimizer_step(sgd, scalars, std::span(&last, 1)); });
  const double took = seconds_since(start);
  CHECK(took >= 0.2);
  CHECK(took < 5.0);
  CHECK(what.find("ncclAllReduce #1 (64 bytes of f32), which the optimizer's stream (table cache drain) waits "
                  "behind, did not finish within 0.200 s") != std::string::npos);
  CHECK_NOTHROW(backend->optimizer_step(sgd, scalars, std::span(&last, 1)));  // the abort released the stream
  nccl.reset();
}

TEST_CASE("NcclCommunicator (emulated): the 16-bit op boundary's first scratch waits for nothing; its growth behind a "
          "hung all-reduce ends at the deadline") {
  FaultScope fault("hang:0:1");
  ::setenv("PTSIM_CUDA_NATIVE_16BIT", "0", 1);  // every non-GEMM op through the boundary (native_16bit_switch.hpp)
  auto backend = runtime::make_cuda_backend(runtime::ComputeType::f32);
  ::unsetenv("PTSIM_CUDA_NATIVE_16BIT");
  // gelu on bf16 x → y: the boundary widens x and narrows y through its scratch (2 × n floats, aligned).
  auto gelu_graph = [](int64_t n) {
    models::TaskGraph g;
    for (int id : {0, 1}) {
      models::Tensor t;
      t.id = id;
      t.name = std::string(1, id == 0 ? 'x' : 'y');
      t.shape = {n};
      t.dtype = models::DType::bf16;
      g.tensors.push_back(t);
    }
    models::Op op;
    op.kind = models::OpKind::gelu;
    op.name = "gelu";
    op.inputs = {0};
    op.outputs = {1};
    g.ops.push_back(op);
    return g;
  };
  const models::TaskGraph small = gelu_graph(64), large = gelu_graph(4096);
  const runtime::DeviceBuffer x = backend->allocate(2 * 4096), y = backend->allocate(2 * 4096);
  void* in[] = {backend->kernel_address(runtime::DeviceSpan::of(x))};
  void* out[] = {backend->kernel_address(runtime::DeviceSpan::of(y))};
  auto nccl = std::make_unique<NcclCommunicator>(one_rank(std::chrono::milliseconds(200)));
  const auto span = runtime::DeviceSpan::of(backend->allocate(64));
  const auto start = std::chrono::steady_clock::now();
  stall_compute_behind_hung_all_reduce(*nccl, *backend, span);
  // The first allocation: no older scratch can be in use, so it does not wait (it would until the deadline).
  CHECK_NOTHROW(backend->run(small, small.ops[0], in, out, runtime::OpContext{}));
  CHECK(seconds_since(start) < 0.2);
  const std::string what = comm_failure_of([&] { backend->run(large, large.ops[0], in, out, runtime::OpContext{}); });
  const double took = seconds_since(start);
  CHECK(took >= 0.2);
  CHECK(took < 5.0);
  CHECK(what.find("ncclAllReduce #1 (64 bytes of f32), which the op boundary's stream (16-bit scratch growth) waits "
                  "behind, did not finish within 0.200 s") != std::string::npos);
  nccl.reset();
}

TEST_CASE("NcclCommunicator (emulated): destroying the backend behind a hung all-reduce ends at the deadline, "
          "warns and does not throw") {
  FaultScope fault("hang:0:1");
  const auto before = cuda_emu::nccl::communicator_counts();
  auto nccl = std::make_unique<NcclCommunicator>(one_rank(std::chrono::milliseconds(200)));
  auto backend = runtime::make_cuda_backend(runtime::ComputeType::f32);
  const auto span = runtime::DeviceSpan::of(backend->allocate(64));
  const auto start = std::chrono::steady_clock::now();
  stall_compute_behind_hung_all_reduce(*nccl, *backend, span);
  // As when an exception unwinds run_training on one rank while its all-reduce waits for a dead peer: the
  // backend goes first, the communicator (ptsim train's) after. A bare cudaDeviceSynchronize hangs here.
  const std::string warning = stderr_of([&] { CHECK_NOTHROW(backend.reset()); });
  const double took = seconds_since(start);
  CHECK(took >= 0.2);
  CHECK(took < 5.0);
  CHECK(warning.find("warning: cuda backend teardown: ncclAllReduce #1 (64 bytes of f32), which a stream of the "
                     "backend (teardown) waits behind, did not finish within 0.200 s") != std::string::npos);
  CHECK(warning.find("freeing its memory anyway") != std::string::npos);
  CHECK(cuda_emu::nccl::communicator_counts().aborted == before.aborted + 1);  // by the teardown's guard
  nccl.reset();
}

TEST_CASE("NcclCommunicator (emulated): freeing a buffer while a comm-stream all-reduce hangs ends at the deadline") {
  FaultScope fault("hang:0:1");
  auto nccl = std::make_unique<NcclCommunicator>(one_rank(std::chrono::milliseconds(200)));
  auto backend = runtime::make_cuda_backend(runtime::ComputeType::f32);
  const auto span = runtime::DeviceSpan::of(backend->allocate(64));
  const runtime::DeviceBuffer other = backend->allocate(64);
  const auto start = std::chrono::steady_clock::now();
  // The compute stream does not wait for it; cudaFree may wait for the whole device, so free waits for every stream.
  nccl->all_reduce_sum(*backend, span, models::DType::f32, backend->create_stream());
  const std::string what = comm_failure_of([&] { backend->free(other); });
  const double took = seconds_since(start);
  CHECK(took >= 0.2);
  CHECK(took < 5.0);
  CHECK(what.find("ncclAllReduce #1 (64 bytes of f32), which a stream of the backend (free) waits behind, did not "
                  "finish within 0.200 s") != std::string::npos);
  CHECK_NOTHROW(backend->free(other));  // the abort released the stream; the buffer is freed now
  nccl.reset();
}
