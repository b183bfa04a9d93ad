// tests/runtime/comm/test_mpi_16bit_sum.cpp — `mpi` suite, run as `mpirun -np 2`: MpiCommunicator sums bf16 and
// fp16 in their own type (its user-defined MPI_Op over MPI_UINT16_T), bit for bit the host's pairwise 16-bit
// sum narrow(widen(a) + widen(b)) with math/half_bits.hpp's conversions (round to nearest even once per add;
// fp16 overflow → ±inf). With 2 ranks the reduction is that one add whatever MPI's algorithm, and the add is
// commutative, so both ranks get the same bits. Checked on host memory (the blocking all_reduce_sum_16bit),
// on the CPU backend's memory in place (blocking and started: MPI_Iallreduce) and on a backend the host may
// not address (the host-copy path), and the refusals (a dtype that is not 16-bit, a partial element). Each
// rank runs the doctest cases; mpirun's exit code is the verdict.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "core/hash.hpp"
#include "runtime/comm/mpi_communicator.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/math/half_bits.hpp"
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

// Rank r's elements: first hand-picked pairs (rank 0 holds .first, rank 1 .second), then every bit pattern
// mixed (core/hash.hpp's splitmix64 at (r, i)): signed zeros, subnormals, ±inf and NaNs included.
std::vector<uint16_t> values(int rank, DType dtype, size_t n) {
  const bool bf16 = dtype == DType::bf16;
  const std::vector<std::pair<uint16_t, uint16_t>> edges = {
      // bf16: 1 + 2^-8 is halfway between 1 and 1 + 2^-7: to even, 1. (1 + 2^-7) + 2^-8 → 1 + 2^-6 (even).
      // fp16: 1 + 2^-11 → 1; (1 + 2^-10) + 2^-11 → 1 + 2^-9. Both: max + max → +inf (fp16 65504); max + a
      // little → max (bf16 + 16; fp16 65504 + 8 = 65512, below 65520, the halfway point to overflow).
      {bf16 ? uint16_t{0x3f80} : uint16_t{0x3c00}, bf16 ? uint16_t{0x3b80} : uint16_t{0x1000}},
      {bf16 ? uint16_t{0x3f81} : uint16_t{0x3c01}, bf16 ? uint16_t{0x3b80} : uint16_t{0x1000}},
      {bf16 ? uint16_t{0x7f7f} : uint16_t{0x7bff}, bf16 ? uint16_t{0x7f7f} : uint16_t{0x7bff}},
      {bf16 ? uint16_t{0x7f7f} : uint16_t{0x7bff}, bf16 ? uint16_t{0x4180} : uint16_t{0x4800}},
      {0x8000, 0x0000},  // -0 + +0 = +0
      {0x0001, 0x0001},  // the smallest subnormal, twice
  };
  std::vector<uint16_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = i < edges.size() ? (rank == 0 ? edges[i].first : edges[i].second)
                            : static_cast<uint16_t>(ptsim::core::mix64((static_cast<uint64_t>(rank) << 40) + i));
  return v;
}

// What both ranks must hold after the sum: rank 0's + rank 1's, one rounding. NaN results compare as "a NaN"
// (which operand's payload and sign an fp32 add of two NaNs keeps depends on the order, not fixed by MPI).
size_t wrong_elements(const std::vector<uint16_t>& got, DType dtype) {
  const size_t n = got.size();
  const std::vector<uint16_t> a = values(0, dtype, n), b = values(1, dtype, n);
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint16_t want = narrow(widen(a[i], dtype) + widen(b[i], dtype), dtype);
    if (std::isnan(widen(want, dtype))) wrong += !std::isnan(widen(got[i], dtype));
    else wrong += got[i] != want;
  }
  return wrong;
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

TEST_CASE("MPI bf16/fp16 sums on host memory equal the host's pairwise 16-bit sum, bit for bit") {
  MpiCommunicator& comm = world().comm;
  REQUIRE_MESSAGE(comm.size() == 2, "run as mpirun -np 2");
  for (DType dtype : {DType::bf16, DType::f16}) {
    CAPTURE(ptsim::models::to_string(dtype));
    CHECK(comm.sums_natively(dtype));
    std::vector<uint16_t> mine = values(comm.rank(), dtype, kElements);
    comm.all_reduce_sum_16bit(std::span<uint16_t>(mine), dtype);
    CHECK(wrong_elements(mine, dtype) == 0);
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
        CHECK(wrong_elements(got, dtype) == 0);
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
