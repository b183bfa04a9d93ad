// models/micro_batch_ops.hpp — a graph's op costs (FLOPs, bytes read and written, collective payloads) at any
// micro-batch, from the graphs built at micro-batch 1 and 2, without building the graph at that micro-batch:
// the planner's step bound on every costed candidate (docs/planning.md, "Memory": "The bound without the
// graph"; docs/sweep.md, "Speed of --auto-recipe").
//
// Why it is exact: as for the memory (models/micro_batch_memory.hpp), the builder (models/builder.cpp) uses the
// micro-batch B only as a factor of dimensions, so every tensor's elements, and every size attribute an op's cost
// reads (GEMM batch, m, n, k; seq, head dim, rows, cols; a collective's bytes), is either constant or its value
// at micro-batch 1 times B. from() checks that on the two builds — the same structure, each tensor's dimensions
// unchanged or exactly one doubled, each size unchanged or exactly doubled, everything else the cost reads
// (dtype, TF32 math, bias, accumulation, causal mask, parameters, collective group and bucket) equal — and that
// the builder's cost function run on the recorded sizes at 1 and 2 gives both builds' own FLOPs and bytes;
// otherwise it refuses (nullopt) and the caller builds the graph. for_each_op_at(B) then runs the same cost
// function (models::assign_op_cost) on the sizes at B: the same integers through the same arithmetic, so the
// same doubles as a build at B. An op none of whose sizes, payload or tensors grows (the optimizer tail, the
// gradient collectives) keeps its built costs — the builder rescales some of them after assign_op_cost (ZeRO's
// sharded updates), and nothing they are computed from depends on B. tests/reports/test_bound_derivation.cpp compares the results with real builds.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "models/task_graph.hpp"

namespace ptsim::models {

class MicroBatchOps {
 public:
  // `at_one` and `at_two`: the same recipe's graph (or pipeline chunk) at micro-batch 1 and 2.
  static std::optional<MicroBatchOps> from(const TaskGraph& at_one, const TaskGraph& at_two);
  // Calls `visit` on every op in graph order as the builder makes it at `micro_batch`, as far as its cost goes:
  // id, kind, phase, dtype, TF32 math, inputs, outputs, the size attributes above, its collective's attributes,
  // and flops, bytes_read and bytes_written (no name, layer or other attributes). The op is a scratch object
  // reused between calls: copy what is needed.
  void for_each_op_at(int64_t micro_batch, const std::function<void(const Op&)>& visit) const;
  size_t op_count() const { return ops_.size(); }
  size_t approximate_bytes() const;

  static constexpr size_t kSizes = 8;  // GEMM batch, m, n, k; seq, head_dim, rows, cols (OpAttrs)

 private:
  struct SizedOp {
    std::array<int64_t, kSizes> sizes{};  // at micro-batch 1
    CommAttrs comm;                       // at micro-batch 1
    uint32_t ids_begin = 0;               // into ids_: the inputs, then the outputs, then the parameters
    uint32_t inputs = 0, outputs = 0, params = 0;
    uint16_t grows = 0;                   // bit s: sizes[s] at B is sizes[s] × B; bit kSizes: comm.bytes too
    double flops = 0, bytes_read = 0, bytes_written = 0;  // as built at micro-batch 1: used when `fixed`
    OpKind kind = OpKind::gemm;
    Phase phase = Phase::forward;
    DType dtype = DType::f32;
    bool tf32_math = false, has_bias = false, accumulate = false, causal = false;
    bool fixed = false;  // no size, payload or tensor of it grows: its costs are the built ones at every B
  };
  std::vector<SizedOp> ops_;
  std::vector<int> ids_;
  std::vector<int64_t> tensor_elements_;  // at micro-batch 1
  std::vector<uint8_t> tensor_grows_;     // 1: elements at B are tensor_elements_ × B
  std::vector<DType> tensor_dtypes_;
  std::vector<int64_t> param_elements_;
};

}  // namespace ptsim::models
