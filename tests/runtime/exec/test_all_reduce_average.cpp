// tests/runtime/exec/test_all_reduce_average.cpp — the values of a 16-bit gradient bucket averaged over ranks
// in its own type (Communicator::sums_natively): the executor divides each element by N before the sum
// (× fp32(1/N) in fp32, rounded once to the type), then the communicator adds the ranks' values in rank
// order, rounding once per add (docs/executor.md, "Mixed precision", data parallel). A fake communicator
// stands for N = 3 ranks: ranks 1 and 2 hand 0.75·x and −0.5·x of the bucket x this rank hands (each product
// in fp32, rounded once to the type). Checked element by element against that formula for bf16 and fp16, in
// the step tail and with the sums started from backward, and in fp16 near 65504, where summing first and
// dividing after overflows to inf and dividing first does not.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <vector>

#include "models/builder.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/exec/math/half_bits.hpp"
#include "runtime/exec/precision.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/exec/executor_test_support.hpp"

using namespace ptsim::runtime;
using namespace ptsim::models;

namespace {

constexpr int kRanks = 3;

float widen(uint16_t bits, DType dtype) {
  return dtype == DType::bf16 ? math::bf16_to_float(bits) : math::f16_to_float(bits);
}
uint16_t narrow(float value, DType dtype) {
  return dtype == DType::bf16 ? math::float_to_bf16(value) : math::float_to_f16(value);
}
// a + b of two 16-bit values: both widened, added in fp32 and rounded to nearest even once (the 16-bit sums'
// contract, Communicator::all_reduce_sum_16bit).
uint16_t add16(uint16_t a, uint16_t b, DType dtype) { return narrow(widen(a, dtype) + widen(b, dtype), dtype); }
// x · factor in fp32, rounded once (Backend::scale_16bit's contract).
uint16_t scale16(uint16_t x, float factor, DType dtype) { return narrow(widen(x, dtype) * factor, dtype); }

// The sum over the 3 ranks of what this rank hands, x: ((x + 0.75·x) + (−0.5·x)), in rank order.
uint16_t three_rank_sum(uint16_t x, DType dtype) {
  return add16(add16(x, scale16(x, 0.75f, dtype), dtype), scale16(x, -0.5f, dtype), dtype);
}

// Rank 0 of 3 that sums 16-bit types in place: the peers' values are fixed functions of this rank's.
class ThreeRankCommunicator final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return kRanks; }
  void all_reduce_sum(std::span<float>) override { throw std::logic_error("not used by this test"); }
  void all_reduce_sum(std::span<double>) override { throw std::logic_error("not used by this test"); }
  bool sums_natively(DType dtype) const override { return is_16bit_float(dtype); }
  void all_reduce_sum(Backend& backend, const DeviceSpan& data, DType dtype, Stream stream) override {
    REQUIRE(is_16bit_float(dtype));
    backend.synchronize(stream);
    std::vector<uint16_t> x(data.bytes / 2);
    backend.copy_to_host(x.data(), data);
    for (uint16_t& v : x) v = three_rank_sum(v, dtype);
    backend.copy_to_device(data, x.data());
  }
  CommRequest start_all_reduce_sum(Backend& backend, const DeviceSpan& data, DType dtype, Stream stream) override {
    all_reduce_sum(backend, data, dtype, stream);
    ++started;
    return CommRequest{0};  // summed already; wait is the default no-op
  }
  void barrier() override {}
  int started = 0;
};

TaskGraph three_rank_graph(Precision p) {
  Recipe r = ptsim::test::fd_recipe();
  r.precision = p;
  r.data_parallel = kRanks;
  r.bucket_bytes = 4096;  // several buckets of the tiny GPT-2
  return build_task_graph(ptsim::test::tiny_gpt2(), r);
}

// Every parameter's stored 16-bit gradient, in parameter order.
std::vector<std::vector<uint16_t>> read_gradients(Executor& ex) {
  std::vector<std::vector<uint16_t>> out;
  for (const ParamSlot& slot : ex.param_slots()) {
    REQUIRE(is_16bit_float(slot.grad_dtype));
    out.emplace_back(slot.n);
    ex.backend().copy_to_host(out.back().data(), slot.grad);
  }
  return out;
}
void write_gradients(Executor& ex, const std::vector<std::vector<uint16_t>>& grads) {
  const std::vector<ParamSlot> slots = ex.param_slots();
  for (size_t i = 0; i < slots.size(); ++i) ex.backend().copy_to_device(slots[i].grad, grads[i].data());
}

// The documented average of what this rank held before the all-reduce: × fp32(1/3) rounded once, then the sum.
std::vector<std::vector<uint16_t>> expected_average(std::vector<std::vector<uint16_t>> grads, DType dtype) {
  const float third = static_cast<float>(1.0 / kRanks);
  for (auto& g : grads)
    for (uint16_t& v : g) v = three_rank_sum(scale16(v, third, dtype), dtype);
  return grads;
}

// One optimizer step's micro-step (grad_accum 1), the all-reduces left to the tail unless `overlap`.
std::unique_ptr<Executor> micro_step(const TaskGraph& g, bool overlap, ThreeRankCommunicator& comm) {
  ExecutorOptions o;
  o.overlap_comm = overlap;
  o.time_ops = false;
  auto ex = std::make_unique<Executor>(g, o);
  ex->init_parameters(3);
  ptsim::test::fill_inputs(*ex, 1, 0.5);
  ex->run_micro_step(0, 0, &comm);
  return ex;
}

// Bit patterns compared as bits (a NaN would fail), with the element's position on failure.
void check_same_bits(const std::vector<std::vector<uint16_t>>& got, const std::vector<std::vector<uint16_t>>& want) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    REQUIRE(got[i].size() == want[i].size());
    for (size_t k = 0; k < got[i].size(); ++k) {
      CAPTURE(i);
      CAPTURE(k);
      CHECK(got[i][k] == want[i][k]);
    }
  }
}

}  // namespace

TEST_CASE("a 16-bit bucket summed in its type is divided by N first, then summed: bf16 and fp16, tail and overlap") {
  for (Precision p : {Precision::bf16, Precision::fp16}) {
    const DType dtype = p == Precision::bf16 ? DType::bf16 : DType::f16;
    CAPTURE(to_string(p));
    const TaskGraph g = three_rank_graph(p);
    ThreeRankCommunicator tail_comm;
    const auto tail = micro_step(g, false, tail_comm);
    const std::vector<std::vector<uint16_t>> before = read_gradients(*tail);  // this rank's gradients, final
    tail->run_step_tail(&tail_comm, nullptr, 0.0);
    // Exact: the expected bits are the formula's, computed here with the same roundings (tolerance none).
    check_same_bits(read_gradients(*tail), expected_average(before, dtype));
    CHECK(tail_comm.started == 0);
    // Started from backward: the same gradients (the same seed and inputs), so the same bits.
    ThreeRankCommunicator overlap_comm;
    const auto overlapped = micro_step(g, true, overlap_comm);
    overlapped->run_step_tail(&overlap_comm, nullptr, 0.0);
    CHECK(overlap_comm.started > 0);
    check_same_bits(read_gradients(*overlapped), expected_average(before, dtype));
  }
}

TEST_CASE("fp16 near 65504: dividing first keeps a finite mean that summing first would overflow to inf") {
  const TaskGraph g = three_rank_graph(Precision::fp16);
  ThreeRankCommunicator comm;
  const auto ex = micro_step(g, false, comm);
  std::vector<std::vector<uint16_t>> grads = read_gradients(*ex);
  // Large gradients (exactly representable in fp16): x + 0.75·x ≥ 65520 rounds to inf in fp16, while the
  // 3-rank mean, (x + 0.75·x − 0.5·x)/3 ≈ 0.42·x, fits.
  const std::vector<float> large = {65504.0f, -65504.0f, 60000.0f, 40000.0f, -40000.0f, 38000.0f};
  for (size_t k = 0; k < large.size(); ++k) grads.front()[k] = math::float_to_f16(large[k]);
  write_gradients(*ex, grads);
  ex->run_step_tail(&comm, nullptr, 0.0);
  const std::vector<std::vector<uint16_t>> got = read_gradients(*ex);
  check_same_bits(got, expected_average(grads, DType::f16));
  for (size_t k = 0; k < large.size(); ++k) {
    CAPTURE(large[k]);
    CHECK(std::isfinite(math::f16_to_float(got.front()[k])));
    // The order this replaced: the 3-rank sum of the undivided value already overflows.
    CHECK(std::isinf(math::f16_to_float(three_rank_sum(math::float_to_f16(large[k]), DType::f16))));
  }
}
