// tests/models/test_fusions.cpp — what a stack's fusions (recipe.fused_attention, multi_tensor_optimizer;
// hwprofiles/stacks, docs/stacks.md) do to the graph the simulator costs and to its memory plan.
#include <doctest/doctest.h>

#include "models/builder.hpp"
#include "models/memory_plan.hpp"

using namespace ptsim::models;

namespace {

Recipe bert_recipe(bool fused_attention) {
  Recipe r;
  r.micro_batch = 4;
  r.seq_len = 128;
  r.fused_attention = fused_attention;
  return r;
}

// Planned activations shaped [B·nh, S, S]: the attention scores / probabilities (and their dropout masks).
int score_sized_activations(const TaskGraph& g, const MemoryPlan& plan, int64_t bh, int64_t s) {
  int n = 0;
  for (const Tensor& t : g.tensors)
    if (plan.offset[static_cast<size_t>(t.id)] >= 0 && t.shape == std::vector<int64_t>{bh, s, s}) ++n;
  return n;
}

int count_ops(const TaskGraph& g, OpKind kind) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == kind ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("a fused-attention graph has no S×S activation in its memory plan, and fewer ops") {
  const ModelSpec m = load_model("bert-base");  // 12 layers, 12 heads, head dim 64
  const TaskGraph plain = build_task_graph(m, bert_recipe(false));
  const TaskGraph fused = build_task_graph(m, bert_recipe(true));
  const MemoryPlan plain_plan = plan_memory(plain), fused_plan = plan_memory(fused);
  const int64_t bh = 4 * 12, s = 128;
  // Unfused: per layer at least scores, probs and the dropped-out probs are S×S (forward), the same in backward.
  CHECK(score_sized_activations(plain, plain_plan, bh, s) >= 3 * 12);
  CHECK(score_sized_activations(fused, fused_plan, bh, s) == 0);
  CHECK(count_ops(fused, OpKind::fused_attention) == 12);
  CHECK(count_ops(fused, OpKind::fused_attention_backward) == 12);
  CHECK(count_ops(fused, OpKind::softmax) == 0);
  CHECK(count_ops(fused, OpKind::batched_gemm) == 0);
  CHECK(fused.ops.size() < plain.ops.size());
  CHECK(fused_plan.activations_live_peak_bytes < plain_plan.activations_live_peak_bytes);
  // Forward FLOPs of the fused op: QKᵀ and P·V, 2 · (2·bh·S·S·d), plus 5 per score for the softmax
  // (models/op_cost.cpp); backward: 5 GEMMs (FlashAttention-2) plus 4 per score. Exact: integer-valued doubles.
  for (const Op& op : fused.ops) {
    const double scores = static_cast<double>(bh) * s * s;
    if (op.kind == OpKind::fused_attention) CHECK(op.flops == 2 * (2 * scores * 64) + 5 * scores);
    if (op.kind == OpKind::fused_attention_backward) CHECK(op.flops == 5 * (2 * scores * 64) + 4 * scores);
  }
  // The attention FLOPs the unfused graph counts in its batched GEMMs are the fused forward's GEMM part.
  double plain_batched = 0;
  for (const Op& op : plain.ops)
    if (op.kind == OpKind::batched_gemm && op.phase == Phase::forward) plain_batched += op.flops;
  CHECK(plain_batched == doctest::Approx(12 * 2 * (2.0 * bh * s * s * 64)).epsilon(1e-12));
}

TEST_CASE("without a multi-tensor optimizer every parameter tensor is its own update") {
  const ModelSpec m = load_model("bert-tiny");
  Recipe r = bert_recipe(false);
  const TaskGraph multi = build_task_graph(m, r);
  r.multi_tensor_optimizer = false;
  const TaskGraph per_tensor = build_task_graph(m, r);
  CHECK(count_ops(per_tensor, OpKind::optimizer_update) == static_cast<int>(per_tensor.params.size()));
  CHECK(count_ops(multi, OpKind::optimizer_update) < count_ops(per_tensor, OpKind::optimizer_update));
  // The same data is updated either way; each per-tensor op also reads the 4-byte global norm (< 1e-4 of it).
  double multi_bytes = 0, per_tensor_bytes = 0;
  for (const Op& op : multi.ops)
    if (op.kind == OpKind::optimizer_update) multi_bytes += op.bytes_read + op.bytes_written;
  for (const Op& op : per_tensor.ops)
    if (op.kind == OpKind::optimizer_update) per_tensor_bytes += op.bytes_read + op.bytes_written;
  CHECK(per_tensor_bytes == doctest::Approx(multi_bytes).epsilon(1e-4));
}

TEST_CASE("tf32: GEMMs run in TF32 on fp32 tensors, without master copies") {
  Recipe r = bert_recipe(false);
  r.precision = Precision::tf32;
  const TaskGraph g = build_task_graph(load_model("bert-tiny"), r);
  int gemms = 0;
  for (const Op& op : g.ops) {
    CHECK(op.dtype == DType::f32);
    if (is_gemm_like(op.kind)) {
      CHECK(op.tf32_math);
      ++gemms;
    } else {
      CHECK_FALSE(op.tf32_math);
    }
  }
  CHECK(gemms > 0);
  CHECK(plan_memory(g).master_weights_bytes == 0);
}
