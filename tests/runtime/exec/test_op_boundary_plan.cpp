// tests/runtime/exec/test_op_boundary_plan.cpp — the shared plan of the 16-bit op boundary
// (runtime/exec/op_boundary_plan.hpp), which the CPU and CUDA backends both carry out: on the tiny BERT's
// bf16 and fp16 graphs as stored, every 16-bit operand of every op has scratch inside the op's scratch,
// aligned, overlapping no other; inputs and accumulating outputs are widened, outputs narrowed; the largest
// op's scratch is boundary_scratch_bytes; fp32-stored graphs need none. A hand-made graph pins which outputs
// accumulate (a C += A·B GEMM, LayerNorm backward's dγ/dβ) independently of the plan's own table.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "models/builder.hpp"
#include "runtime/exec/executor.hpp"  // defines: storage_graph
#include "runtime/exec/op_boundary_plan.hpp"
#include "runtime/exec/precision.hpp"
#include "tests/runtime/exec/executor_test_support.hpp"

using namespace ptsim::runtime;
using namespace ptsim::models;

namespace {

TaskGraph stored_tiny_bert(Precision p, bool stores_16bit) {
  Recipe r = ptsim::test::fd_recipe();
  r.precision = p;
  r.include_dropout = true;
  return storage_graph(build_task_graph(ptsim::test::tiny_bert(), r), stores_16bit);
}

// Every way the plan of `op` can be wrong, as text (empty: none).
std::vector<std::string> plan_faults(const TaskGraph& g, const Op& op, const OpBoundaryPlan& plan) {
  std::vector<std::string> faults;
  auto fault = [&](const std::string& what) { faults.push_back(op.name + ": " + what); };
  size_t expected_operands = 0;
  for (int id : op.inputs) expected_operands += is_16bit_float(g.tensor(id).dtype);
  for (int id : op.outputs) expected_operands += is_16bit_float(g.tensor(id).dtype);
  if (plan.operands.size() != expected_operands) fault("not every 16-bit operand (and only those) is planned");
  if (plan.scratch_floats != op_scratch_floats(g, op)) fault("scratch_floats differs from op_scratch_floats");
  std::vector<std::pair<size_t, size_t>> ranges;
  for (const BoundaryOperand& o : plan.operands) {
    const std::vector<int>& ids = o.output ? op.outputs : op.inputs;
    if (o.index >= ids.size()) {
      fault("operand index out of range");
      continue;
    }
    const Tensor& t = g.tensor(ids[o.index]);
    if (!is_16bit_float(t.dtype) || t.dtype != o.dtype) fault("planned operand is not 16-bit, or has another dtype");
    if (o.elements != static_cast<size_t>(t.elements())) fault("operand element count differs from its tensor");
    if (o.offset_floats % kBoundaryAlignmentFloats != 0) fault("operand offset not aligned");
    if (o.offset_floats + o.elements > plan.scratch_floats) fault("operand runs past the scratch");
    if (!o.output && (!o.widen || o.narrow)) fault("an input must be widened and never narrowed");
    if (o.output && !o.narrow) fault("an output must be narrowed");
    ranges.emplace_back(o.offset_floats, o.offset_floats + o.elements);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i].first < ranges[i - 1].second) fault("two operands' scratch overlaps");
  return faults;
}

}  // namespace

TEST_CASE("the 16-bit boundary plan: every operand of every op inside its scratch, aligned, no overlap; largest = boundary_scratch_bytes") {
  for (const Precision p : {Precision::bf16, Precision::fp16}) {
    const TaskGraph g = stored_tiny_bert(p, true);
    size_t largest = 0, planned_ops = 0, accumulating = 0;
    std::vector<std::string> faults;
    for (const Op& op : g.ops) {
      const OpBoundaryPlan plan = plan_op_boundary(g, op);
      const std::vector<std::string> f = plan_faults(g, op, plan);
      faults.insert(faults.end(), f.begin(), f.end());
      if (is_micro_step_phase(op.phase)) largest = std::max(largest, plan.scratch_floats);  // what run() gets
      planned_ops += !plan.empty();
      for (const BoundaryOperand& o : plan.operands) accumulating += o.output && o.widen;
    }
    for (const std::string& f : faults) FAIL_CHECK(std::string(to_string(p)) << ": " << f);
    // The tiny BERT's activations, weight copies and gradients are 16-bit, so most ops have 16-bit operands.
    CHECK(planned_ops > g.ops.size() / 2);
    CHECK(largest * sizeof(float) == boundary_scratch_bytes(g));
    CHECK(boundary_scratch_bytes(g) > 0);
    MESSAGE(std::string(to_string(p)) << ": " << planned_ops << " of " << g.ops.size() << " ops cross the boundary, "
                         << accumulating << " accumulating 16-bit outputs, scratch " << boundary_scratch_bytes(g)
                         << " bytes");
  }
}

TEST_CASE("the 16-bit boundary plan: graphs stored in fp32 need no scratch") {
  for (const Precision p : {Precision::fp32, Precision::bf16, Precision::fp16}) {
    const TaskGraph g = stored_tiny_bert(p, p == Precision::fp32);  // fp32 itself, or 16-bit kept in fp32
    for (const Op& op : g.ops) CHECK_MESSAGE(plan_op_boundary(g, op).empty(), op.name);
    CHECK(boundary_scratch_bytes(g) == 0);
  }
}

TEST_CASE("the 16-bit boundary plan widens what an op adds into: C += A·B, LayerNorm backward's dγ and dβ") {
  TaskGraph g;
  auto tensor = [&](std::vector<int64_t> shape, DType dtype) {
    Tensor t;
    t.id = static_cast<int>(g.tensors.size());
    t.name = "t";
    t.name += std::to_string(t.id);  // (not "t" + …: GCC 12's -Wrestrict false positive)
    t.shape = std::move(shape);
    t.dtype = dtype;
    g.tensors.push_back(t);
    return t.id;
  };
  // C [3,4] (+)= A [3,5] · B [5,4]: A and C bf16 (15 and 12 elements: neither a multiple of 16), B f32.
  const int a = tensor({3, 5}, DType::bf16), b = tensor({5, 4}, DType::f32), c = tensor({3, 4}, DType::bf16);
  Op gemm;
  gemm.kind = OpKind::gemm;
  gemm.name = "gemm";
  gemm.inputs = {a, b};
  gemm.outputs = {c};
  gemm.attrs.gemm.m = 3, gemm.attrs.gemm.n = 4, gemm.attrs.gemm.k = 5;
  for (const bool accumulate : {false, true}) {
    gemm.attrs.gemm.accumulate = accumulate;
    const OpBoundaryPlan plan = plan_op_boundary(g, gemm);
    REQUIRE(plan.operands.size() == 2);  // A and C; B is f32
    CHECK(plan.operands[0].offset_floats == 0);
    CHECK(plan.operands[1].offset_floats == 16);  // A's 15 floats, rounded up to 16
    CHECK(plan.scratch_floats == 32);             // C's 12, rounded up to 16
    CHECK(plan.operands[1].output);
    CHECK(plan.operands[1].widen == accumulate);  // C += … reads the stored C
  }
  // LayerNorm backward: dy, x, γ, mean, rstd → dx, dγ +=, dβ +=; every tensor fp16 here.
  Op ln;
  ln.kind = OpKind::layernorm_backward;
  ln.name = "layernorm_backward";
  for (int i = 0; i < 5; ++i) ln.inputs.push_back(tensor({2, 8}, DType::f16));
  for (int i = 0; i < 3; ++i) ln.outputs.push_back(tensor({8}, DType::f16));
  const OpBoundaryPlan plan = plan_op_boundary(g, ln);
  REQUIRE(plan.operands.size() == 8);
  CHECK_FALSE(plan.operands[5].widen);  // dx is overwritten
  CHECK(plan.operands[6].widen);        // dγ +=
  CHECK(plan.operands[7].widen);        // dβ +=
  CHECK(plan.scratch_floats == 8 * 16);
}
