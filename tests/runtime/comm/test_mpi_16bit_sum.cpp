// tests/runtime/comm/test_mpi_16bit_sum.cpp — `mpi` suite, run as `mpirun -np 2` and `mpirun -np 3`:
// MpiCommunicator sums bf16 and fp16 in their own type (its user-defined MPI_Op over MPI_UINT16_T, declared
// commutative): every pairwise add narrow(widen(a) + widen(b)) with math/half_bits.hpp's conversions, rounded to
// nearest even once (fp16 overflow → ±inf). How MPI associates and orders the adds of more than two ranks is its
// choice (the MPI standard lets it use associativity and commutativity), so what ptsim promises, and this test
// checks on every element, is (docs/executor.md, "Mixed precision"): the result is the correctly rounded pairwise
// sum over SOME binary tree of the ranks' values (exactly, 0 ulp: the host computes every tree's value with the
// same one-rounding add); every rank holds the same bits (data-parallel replicas must stay bit-identical:
// replicas_agree on a hash of the whole result); and the same call gives the same bits again. With 2 ranks
// there is one tree: the result is rank 0's + rank 1's, rounded once. Checked on host memory (the blocking
// all_reduce_sum_16bit) at three sizes (9 elements: the hand-picked rows, 70,000, 2^20: Open MPI picks its algorithm by size), on the
// CPU backend's memory in place (blocking and started: MPI_Iallreduce) and on a backend the host may not address
// (the host-copy path), and the refusals (a dtype that is not 16-bit, a partial element). Each rank runs the
// doctest cases; mpirun's exit code is the verdict.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "runtime/comm/mpi_communicator.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/math/half_bits.hpp"
#include "runtime/train/replica_check.hpp"
#include "tests/runtime/exec/forwarding_backend.hpp"

using namespace ptsim::runtime;
using ptsim::models::DType;

namespace {

struct World {
  MpiSession session;
  MpiCommunicator comm;
};
World& world() {
  static World w;
  return w;
}

float widen(uint16_t bits, DType dtype) {
  return dtype == DType::bf16 ? math::bf16_to_float(bits) : math::f16_to_float(bits);
}
uint16_t narrow(float x, DType dtype) { return dtype == DType::bf16 ? math::float_to_bf16(x) : math::float_to_f16(x); }
// One pairwise add, rounded once: fp32 holds the exact sum to ≥ 2p + 2 bits (p = 8 for bf16, 11 for fp16), so
// rounding it again to 16 bits gives the correctly rounded sum (docs/cuda-emulation.md, "The NCCL shim", checks
// the same add against the exact double sum).
uint16_t add16(uint16_t a, uint16_t b, DType dtype) { return narrow(widen(a, dtype) + widen(b, dtype), dtype); }
bool is_nan16(uint16_t bits, DType dtype) { return std::isnan(widen(bits, dtype)); }

constexpr int kMostRanks = 4;  // the edge rows' columns; ranks beyond them hold +0 there

// Rank r's elements: first hand-picked rows (rank r holds column r; ranks past the row's end hold +0), then every
// bit pattern mixed (core/hash.hpp's splitmix64 at (r, i)): signed zeros, subnormals, ±inf and NaNs included.
std::vector<uint16_t> values(int rank, DType dtype, size_t n) {
  const bool bf16 = dtype == DType::bf16;
  const uint16_t one = bf16 ? 0x3f80 : 0x3c00, max = bf16 ? 0x7f7f : 0x7bff;
  struct Row {
    uint16_t x[kMostRanks];
  };
  const std::vector<Row> edges = {
      // Two ranks (the rest +0, which changes no sum): bf16: 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to
      // even, 1. (1 + 2^-7) + 2^-8 → 1 + 2^-6 (even). fp16: 1 + 2^-11 → 1; (1 + 2^-10) + 2^-11 → 1 + 2^-9.
      // Both: max + max → +inf (fp16 65504); max + a little → max (bf16 + 16; fp16 65504 + 8 = 65512, below
      // 65520, the halfway point to overflow).
      {{one, bf16 ? uint16_t{0x3b80} : uint16_t{0x1000}}},
      {{static_cast<uint16_t>(one + 1), bf16 ? uint16_t{0x3b80} : uint16_t{0x1000}}},
      {{max, max}},
      {{max, bf16 ? uint16_t{0x4180} : uint16_t{0x4800}}},
      {{0x8000, 0x0000}},  // -0 + +0 = +0
      {{0x0001, 0x0001}},  // the smallest subnormal, twice
      // Three ranks, where the tree matters: fp16 2048 + 1 + 1: (2048 + 1) + 1 = 2048 (each tie to even),
      // 2048 + (1 + 1) = 2050; bf16 256 + 1 + 1 the same (256 or 258). max + max − max: +inf or max.
      {{bf16 ? uint16_t{0x4380} : uint16_t{0x6800}, one, one}},
      {{max, max, static_cast<uint16_t>(max | 0x8000)}},
  };
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = i < edges.size() ? (rank < kMostRanks ? edges[i].x[rank] : uint16_t{0})
                            : static_cast<uint16_t>(ptsim::core::mix64((static_cast<uint64_t>(rank) << 40) + i));
  return v;
}

// The distinct values one subset of ranks can sum to (at most 15: the trees of 4 ranks).
struct TreeValues {
  uint16_t value[15];
  size_t count = 0;
  void add(uint16_t v) {
    if (std::find(value, value + count, v) == value + count) value[count++] = v;
  }
};

// Every value the sum of x[0..N) (one per rank) can take when each pairwise add is rounded once, over every
// binary tree of the ranks: the sums of each subset of ranks (a bit mask), built from the sums of its two parts.
TreeValues tree_sums(const uint16_t* x, size_t n, DType dtype) {
  TreeValues sums[size_t{1} << kMostRanks];
  const size_t all = (size_t{1} << n) - 1;
  for (size_t mask = 1; mask <= all; ++mask) {
    TreeValues& out = sums[mask];
    if ((mask & (mask - 1)) == 0) {  // one rank: its value
      for (size_t r = 0; r < n; ++r)
        if (mask == size_t{1} << r) out.add(x[r]);
      continue;
    }
    for (size_t part = (mask - 1) & mask; part > 0; part = (part - 1) & mask) {
      const size_t rest = mask ^ part;
      if (part < rest) continue;  // each split once (the add is commutative)
      for (size_t i = 0; i < sums[part].count; ++i)
        for (size_t j = 0; j < sums[rest].count; ++j) out.add(add16(sums[part].value[i], sums[rest].value[j], dtype));
    }
  }
  return sums[all];
}

// Elements of `got` that no tree of the ranks' values gives. A NaN result matches any NaN tree value: which
// operand's sign an fp32 add of two NaNs keeps is the compiler's and the CPU's choice, not the sum's.
// `trees_differ` counts the elements where the trees do not all agree (what makes this check bite).
size_t wrong_elements(const std::vector<uint16_t>& got, DType dtype, int ranks, size_t* trees_differ = nullptr) {
  const size_t n = got.size();
  std::vector<std::vector<uint16_t>> x;
  for (int r = 0; r < ranks; ++r) x.push_back(values(r, dtype, n));
  size_t wrong = 0, differ = 0;
  uint16_t column[kMostRanks];
  for (size_t i = 0; i < n; ++i) {
    for (int r = 0; r < ranks; ++r) column[r] = x[static_cast<size_t>(r)][i];
    const TreeValues want = tree_sums(column, static_cast<size_t>(ranks), dtype);
    differ += want.count > 1;
    const bool ok = std::any_of(want.value, want.value + want.count, [&](uint16_t w) {
      return w == got[i] || (is_nan16(w, dtype) && is_nan16(got[i], dtype));
    });
    wrong += !ok;
  }
  if (trees_differ) *trees_differ = differ;
  return wrong;
}

// Whether every rank holds these bits (one all-reduce: runtime/train/replica_check.hpp). Collective.
bool same_on_every_rank(MpiCommunicator& comm, const std::vector<uint16_t>& got) {
  return replicas_agree(comm, ptsim::core::fnv1a64(got.data(), got.size() * sizeof(uint16_t)));
}

// The CPU backend's memory behind host_addressable() == false: the communicator must copy to the host and back.
class HostCopyingBackend final : public ptsim::test::ForwardingBackend {
 public:
  explicit HostCopyingBackend(std::unique_ptr<Backend> owned) : ForwardingBackend(*owned), owned_(std::move(owned)) {}
  bool host_addressable() const override { return false; }
  int copies = 0;
  void copy_to_host(void* d, const DeviceSpan& s) override {
    ++copies;
    inner().copy_to_host(d, s);
  }

 private:
  std::unique_ptr<Backend> owned_;
};

constexpr size_t kElements = 70000;  // > 65536: every bit pattern is likely on each rank

}  // namespace

TEST_CASE("MPI bf16/fp16 sums on host memory: some tree of once-rounded adds, the same bits on every rank and again") {
  MpiCommunicator& comm = world().comm;
  REQUIRE_MESSAGE(comm.size() >= 2, "run as mpirun -np 2 or -np 3");
  REQUIRE_MESSAGE(comm.size() <= kMostRanks, "tree_sums tries every tree: at most 4 ranks");
  for (DType dtype : {DType::bf16, DType::f16}) {
    CHECK(comm.sums_natively(dtype));
    for (size_t n : {size_t{9}, kElements, size_t{1} << 20}) {
      CAPTURE(ptsim::models::to_string(dtype));
      CAPTURE(n);
      std::vector<uint16_t> mine = values(comm.rank(), dtype, n);
      std::vector<uint16_t> again = mine;
      comm.all_reduce_sum_16bit(std::span<uint16_t>(mine), dtype);
      comm.all_reduce_sum_16bit(std::span<uint16_t>(again), dtype);
      size_t trees_differ = 0;
      CHECK(wrong_elements(mine, dtype, comm.size(), &trees_differ) == 0);
      if (comm.size() == 2) CHECK(trees_differ == 0);                // one tree
      // The check bites: measured at 3 ranks, the trees differ on 0.19% (bf16: its wide exponent range seldom
      // puts three random values close enough) and 13% (fp16) of the random elements; 0.1% is the floor.
      if (comm.size() == 3 && n > 9) CHECK(trees_differ > n / 1000);
      CHECK(same_on_every_rank(comm, mine));
      CHECK(mine == again);
      if (comm.rank() == 0)
        MESSAGE(comm.size() << " ranks, " << std::string(ptsim::models::to_string(dtype)) << ", " << n << " elements: " << trees_differ
                            << " where the trees differ");
    }
  }
}

TEST_CASE("MPI bf16/fp16 sums of backend memory: in place (blocking and started) and through host copies") {
  MpiCommunicator& comm = world().comm;
  for (DType dtype : {DType::bf16, DType::f16}) {
    for (bool host_addressable : {true, false}) {
      for (bool started : {true, false}) {
        CAPTURE(ptsim::models::to_string(dtype));
        CAPTURE(host_addressable);
        CAPTURE(started);
        std::unique_ptr<Backend> cpu = make_cpu_backend(ComputeType::f32, 1);
        HostCopyingBackend* copying = nullptr;
        std::unique_ptr<Backend> backend = std::move(cpu);
        if (!host_addressable) {
          auto b = std::make_unique<HostCopyingBackend>(std::move(backend));
          copying = b.get();
          backend = std::move(b);
        }
        const std::vector<uint16_t> mine = values(comm.rank(), dtype, kElements);
        const DeviceBuffer buffer = backend->allocate(kElements * 2);
        backend->copy_to_device(DeviceSpan::of(buffer), mine.data());
        if (started) comm.wait(comm.start_all_reduce_sum(*backend, DeviceSpan::of(buffer), dtype, Stream{}));
        else comm.all_reduce_sum(*backend, DeviceSpan::of(buffer), dtype, Stream{});
        std::vector<uint16_t> got(kElements);
        backend->copy_to_host(got.data(), DeviceSpan::of(buffer));
        CHECK(wrong_elements(got, dtype, comm.size()) == 0);
        CHECK(same_on_every_rank(comm, got));
        if (copying) CHECK(copying->copies >= 2);  // the communicator's copy out, and this test's
        backend->free(buffer);
      }
    }
  }
}

TEST_CASE("MPI 16-bit sums refuse what is not f16/bf16 or not whole elements") {
  MpiCommunicator& comm = world().comm;
  std::vector<uint16_t> bits(4, 0);
  CHECK_THROWS_AS(comm.all_reduce_sum_16bit(std::span<uint16_t>(bits), DType::f32), std::invalid_argument);
  CHECK_FALSE(comm.sums_natively(DType::i32));
  std::unique_ptr<Backend> cpu = make_cpu_backend(ComputeType::f32, 1);
  const DeviceBuffer buffer = cpu->allocate(8);
  CHECK_THROWS_AS(comm.start_all_reduce_sum(*cpu, DeviceSpan::of(buffer).sub(0, 3), DType::bf16, Stream{}),
                  std::invalid_argument);
  CHECK_THROWS_AS(comm.start_all_reduce_sum(*cpu, DeviceSpan::of(buffer), DType::i32, Stream{}), std::invalid_argument);
  cpu->free(buffer);
}
