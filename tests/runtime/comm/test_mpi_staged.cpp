// tests/runtime/comm/test_mpi_staged.cpp — `mpi` suite, run as `mpirun -np 2`: the data-parallel path for a
// backend whose memory the host may not dereference (what a GPU backend is), on the CPU. StagedBackend
// forwards to the CPU backend but says host_addressable() == false and hands out kernel addresses the host
// cannot use (a high bit flipped: a non-canonical x86-64 address, so any host read or write through one
// faults), translating them back only inside run(). Training bert-tiny for 2 LAMB steps of 2 micro-steps
// through MpiCommunicator must then (a) not crash — no code outside the backend dereferenced storage, the
// communicator staged every bucket through host copies — and (b) give the CPU backend's weights to the bit,
// with the bucket all-reduces overlapped with backward and in the tail. With 2 ranks an MPI sum is a + b
// whatever the algorithm, so bit equality is the right bar (docs/executor.md, "Overlapping the bucket
// all-reduces"). Each rank runs the doctest case; mpirun's exit code is the verdict.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/comm/mpi_communicator.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/exec/executor_test_support.hpp"
#include "tests/runtime/exec/forwarding_backend.hpp"

using namespace ptsim::runtime;
using namespace ptsim::models;

namespace {

constexpr uintptr_t kScramble = uintptr_t{1} << 62;

void* scramble(void* p) { return reinterpret_cast<void*>(reinterpret_cast<uintptr_t>(p) ^ kScramble); }

class StagedBackend final : public ptsim::test::ForwardingBackend {
 public:
  explicit StagedBackend(std::unique_ptr<Backend> owned) : ForwardingBackend(*owned), owned_(std::move(owned)) {}
  const char* name() const override { return "staged-cpu (test)"; }
  bool host_addressable() const override { return false; }
  void* kernel_address(const DeviceSpan& s) override { return scramble(inner().kernel_address(s)); }
  void run(const TaskGraph& g, const Op& op, std::span<void* const> in, std::span<void* const> out,
           const OpContext& c) override {
    std::vector<void*> real_in(in.begin(), in.end()), real_out(out.begin(), out.end());
    for (void*& p : real_in) p = scramble(p);
    for (void*& p : real_out) p = scramble(p);
    inner().run(g, op, real_in, real_out, c);
  }
  void copy_to_host(void* d, const DeviceSpan& s) override {
    ++to_host;
    inner().copy_to_host(d, s);
  }
  void copy_to_device(const DeviceSpan& d, const void* s) override {
    ++to_device;
    inner().copy_to_device(d, s);
  }
  int to_host = 0, to_device = 0;

 private:
  std::unique_ptr<Backend> owned_;
};

struct Run {
  std::vector<float> weights;  // every parameter, concatenated
  int to_host = 0;             // staged backend only: host copies made (by the communicator and the tail)
};

// Two LAMB steps of two micro-steps on this rank's batches (they differ per rank, so the sum matters).
Run train(const TaskGraph& g, Communicator& comm, bool staged, bool overlap) {
  ExecutorOptions o;
  o.overlap_comm = overlap;
  o.threads = 1;
  std::unique_ptr<Backend> cpu = make_cpu_backend(ComputeType::f32, 1);
  StagedBackend* staged_backend = nullptr;
  std::unique_ptr<Backend> backend = std::move(cpu);
  if (staged) {
    auto s = std::make_unique<StagedBackend>(std::move(backend));
    staged_backend = s.get();
    backend = std::move(s);
  }
  Executor ex(g, o, std::move(backend));
  ex.init_parameters(5);
  auto opt = make_optimizer(ex.backend(), default_optimizer_config(OptimizerKind::lamb), ex.param_slots());
  for (int64_t step = 1; step <= 2; ++step) {
    for (int64_t micro = 0; micro < 2; ++micro) {
      ptsim::test::fill_inputs(ex, static_cast<uint64_t>(100 * comm.rank() + 10 * step + micro), 0.5);
      ex.run_micro_step(step, micro, &comm);
    }
    ex.run_step_tail(&comm, opt.get(), 1e-2);
  }
  Run r;
  for (size_t i = 0; i < g.params.size(); ++i) {
    const std::vector<float> w = ex.read_parameter(i);
    r.weights.insert(r.weights.end(), w.begin(), w.end());
  }
  if (staged_backend != nullptr) r.to_host = staged_backend->to_host;
  return r;
}

bool same_bits(const Run& a, const Run& b) {
  return a.weights.size() == b.weights.size() &&
         std::memcmp(a.weights.data(), b.weights.data(), a.weights.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("MPI data parallel over a backend the host may not dereference: staged, same bits as the CPU's") {
  MpiSession session;
  MpiCommunicator comm;
  REQUIRE_MESSAGE(comm.size() == 2, "run as mpirun -np 2");
  CAPTURE(comm.rank());
  const TaskGraph g = ptsim::test::two_rank_graph();
  int buckets = 0;
  for (const Op& op : g.ops) buckets += op.kind == OpKind::all_reduce;
  REQUIRE(buckets > 2);
  const Run cpu = train(g, comm, false, true);
  const Run overlapped = train(g, comm, true, true);
  const Run in_tail = train(g, comm, true, false);
  CHECK(same_bits(overlapped, cpu));
  CHECK(same_bits(in_tail, cpu));
  // The communicator staged every bucket through a host copy, once per step (the executor's own small
  // copies of losses and norms add more).
  CHECK(overlapped.to_host >= 2 * buckets);
  CHECK(in_tail.to_host >= 2 * buckets);
  // Both ranks end with the same weights (the averaged gradients were the same on both), and the batches
  // differed, so the sum was needed: a rank's own gradients alone would give other weights.
  std::vector<double> mine(cpu.weights.begin(), cpu.weights.end()), sum = mine;
  comm.all_reduce_sum(std::span<double>(sum));
  size_t differing = 0;
  for (size_t i = 0; i < mine.size(); ++i) differing += sum[i] != 2 * mine[i];
  CHECK(differing == 0);
}
