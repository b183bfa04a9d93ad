// tests/runtime/exec/test_all_reduce_bytes.cpp — what the executor hands the communicator per gradient bucket
// is what the simulator costs for that all_reduce op (its `comm.bytes`, models/builder.cpp: the bucket's
// gradient tensors' bytes, 2 per element under bf16/fp16), for fp32, bf16 and fp16 gradients, with the sums
// started from backward (overlap_comm) and in the step tail: one span per bucket, in place in the gradient
// buffer, in the gradients' own dtype. A counting 2-rank communicator records each span; its sums change
// nothing (the values do not matter here; they are test_all_reduce_average.cpp's). The one exception, a communicator that cannot sum 16-bit types
// (Communicator::sums_natively false: none that ptsim train uses), gets the fp32 staging: twice the bytes.
// docs/executor.md, "Mixed precision" (data parallel).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <span>
#include <vector>

#include "models/builder.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/exec/precision.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/exec/executor_test_support.hpp"

using namespace ptsim::runtime;
using namespace ptsim::models;

namespace {

// Rank 0 of 2 whose peer adds zeros: every sum leaves the data as it is, and each backend-span sum is recorded.
class CountingCommunicator final : public Communicator {
 public:
  struct Handed {
    int32_t buffer = -1;
    size_t offset = 0, bytes = 0;
    DType dtype = DType::f32;
  };
  explicit CountingCommunicator(bool sums_16bit) : sums_16bit_(sums_16bit) {}
  std::vector<Handed> handed;
  int started = 0;

  int rank() const override { return 0; }
  int size() const override { return 2; }
  void all_reduce_sum(std::span<float>) override {}
  void all_reduce_sum(std::span<double>) override {}
  void all_reduce_sum_16bit(std::span<uint16_t>, DType) override {}
  bool sums_natively(DType dtype) const override {
    return Communicator::sums_natively(dtype) || (sums_16bit_ && is_16bit_float(dtype));
  }
  void all_reduce_sum(Backend&, const DeviceSpan& data, DType dtype, Stream) override { record(data, dtype); }
  CommRequest start_all_reduce_sum(Backend&, const DeviceSpan& data, DType dtype, Stream) override {
    record(data, dtype);
    ++started;
    return CommRequest{0};  // summed already (nothing to add); wait is the default no-op
  }
  void barrier() override {}

 private:
  void record(const DeviceSpan& s, DType dtype) { handed.push_back({s.buffer.id, s.offset, s.bytes, dtype}); }
  bool sums_16bit_;
};

TaskGraph data_parallel_graph(const ModelSpec& model, Precision p) {
  Recipe r = ptsim::test::fd_recipe();
  r.precision = p;
  r.data_parallel = 2;
  r.grad_accum = 2;
  r.bucket_bytes = 4096;  // several buckets of the tiny models
  return build_task_graph(model, r);
}

// The bytes the executor's gradient buffer places between a bucket's tensors: each tensor but the last is
// rounded up to 16 elements (the flat buffer's alignment, docs/executor.md "Memory"); 0 when every tensor but
// the last holds a multiple of 16 elements.
size_t inner_padding_bytes(const TaskGraph& g, const Op& op, size_t element_bytes) {
  size_t pad = 0;
  for (size_t k = 0; k + 1 < op.inputs.size(); ++k) {
    const auto n = static_cast<size_t>(g.tensor(op.inputs[k]).elements());
    pad += ((n + 15) / 16 * 16 - n) * element_bytes;
  }
  return pad;
}

// One optimizer step (2 micro-steps, the last one starting buckets under overlap, then the tail) over `comm`.
// Returns the fp32 all-reduce staging the executor allocated (Executor::all_reduce_staging_held).
size_t run_one_step(const TaskGraph& g, bool overlap, Communicator& comm, std::vector<ParamSlot>& slots) {
  ExecutorOptions o;
  o.overlap_comm = overlap;
  o.time_ops = false;
  Executor ex(g, o);
  ex.init_parameters(3);
  slots = ex.param_slots();
  for (int64_t micro = 0; micro < 2; ++micro) {
    ptsim::test::fill_inputs(ex, static_cast<uint64_t>(micro + 1), 0.5);
    ex.run_micro_step(0, micro, &comm);
  }
  ex.run_step_tail(&comm, nullptr, 0.0);
  return ex.all_reduce_staging_held();
}

// Per all_reduce op, the offset of its bucket in the gradient buffer: where its first gradient lies.
std::map<size_t, const Op*> buckets_by_offset(const TaskGraph& g, const std::vector<ParamSlot>& slots) {
  std::map<size_t, const Op*> at;
  for (const Op& op : g.ops) {
    if (op.kind != OpKind::all_reduce) continue;
    for (size_t i = 0; i < g.params.size(); ++i)
      if (g.params[i].gradient == op.inputs.front()) at[slots[i].grad.offset] = &op;
  }
  return at;
}

}  // namespace

TEST_CASE("each bucket's all-reduce gets the simulator's comm.bytes, in the gradients' dtype, overlapped or not") {
  for (const ModelSpec& model : {ptsim::test::tiny_gpt2(), ptsim::test::tiny_bert()}) {
    for (Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
      const TaskGraph g = data_parallel_graph(model, p);
      const DType gradient_dtype = p == Precision::fp32 ? DType::f32 : (p == Precision::bf16 ? DType::bf16 : DType::f16);
      const size_t element_bytes = p == Precision::fp32 ? 4 : 2;  // the CPU stores 16-bit gradients as 16 bits
      for (bool overlap : {true, false}) {
        CAPTURE(model.name);
        CAPTURE(to_string(p));
        CAPTURE(overlap);
        CountingCommunicator comm(true);
        std::vector<ParamSlot> slots;
        // No staging held, and none counted by the trainer's memory check: the memory is the simulator's plan.
        CHECK(run_one_step(g, overlap, comm, slots) == 0);
        CHECK(all_reduce_staging_bytes(storage_graph(g, true), overlap, comm) == 0.0);
        const std::map<size_t, const Op*> bucket_at = buckets_by_offset(g, slots);
        REQUIRE(bucket_at.size() >= 3);  // several buckets (4 KiB each)
        CHECK(comm.handed.size() == bucket_at.size());  // one sum per bucket per step
        CHECK(comm.started == (overlap ? static_cast<int>(bucket_at.size()) : 0));
        size_t padding = 0;
        for (const CountingCommunicator::Handed& h : comm.handed) {
          CHECK(h.buffer == slots.front().grad.buffer.id);  // in place in the gradient buffer: no staging
          CHECK(h.dtype == gradient_dtype);
          const auto it = bucket_at.find(h.offset);
          REQUIRE(it != bucket_at.end());
          const Op& op = *it->second;
          const size_t pad = inner_padding_bytes(g, op, element_bytes);
          padding += pad;
          // comm.bytes is exact in double (a sum of integers < 2^53); the span adds only the alignment gaps.
          CHECK(static_cast<double>(h.bytes) == op.attrs.comm.bytes + static_cast<double>(pad));
        }
        // GPT-2's tensors all hold multiples of 16 elements (hidden 16, 3·16, 4·16, vocab 100 × 16): there the
        // bytes on the wire are exactly comm.bytes. BERT's NSP bias (2 elements) leaves a gap of 14 elements.
        if (model.family == ModelFamily::gpt2) CHECK(padding == 0);
      }
    }
  }
}

TEST_CASE("a communicator that cannot sum 16-bit types gets each 16-bit bucket widened: fp32 staging, twice the bytes") {
  const TaskGraph g = data_parallel_graph(ptsim::test::tiny_gpt2(), Precision::bf16);  // no alignment gaps
  for (bool overlap : {true, false}) {
    CAPTURE(overlap);
    CountingCommunicator comm(false);
    std::vector<ParamSlot> slots;
    const size_t held = run_one_step(g, overlap, comm, slots);
    // The staging is what the trainer's memory check adds for this communicator (and > 0).
    CHECK(static_cast<double>(held) == all_reduce_staging_bytes(storage_graph(g, true), overlap, comm));
    CHECK(all_reduce_staging_bytes(storage_graph(g, true), overlap, comm) ==
          all_reduce_staging_bytes(storage_graph(g, true), overlap));
    CHECK(held > 0);
    std::vector<double> expected, got;
    for (const Op& op : g.ops)
      if (op.kind == OpKind::all_reduce) expected.push_back(2 * op.attrs.comm.bytes);  // bf16 → fp32
    for (const CountingCommunicator::Handed& h : comm.handed) {
      CHECK(h.dtype == DType::f32);
      CHECK(h.buffer != slots.front().grad.buffer.id);  // a staging slot
      got.push_back(static_cast<double>(h.bytes));
    }
    std::sort(expected.begin(), expected.end());
    std::sort(got.begin(), got.end());
    CHECK(got == expected);
  }
}
