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

TEST_CASE("a causal fused attention is charged only the key blocks on and below the diagonal") {
  // GPT-2 at seq 1024: n = 1024/128 = 8 blocks of FlashAttention-2's 128 keys per row of blocks, of which
  // n(n+1)/2 = 36 of 64 are computed (models/op_cost.cpp): every score term × 9/16, exact (powers of two).
  Recipe r;
  r.precision = Precision::bf16;
  r.micro_batch = 2;
  r.seq_len = 1024;
  r.fused_attention = true;
  const TaskGraph g = build_task_graph(load_model("gpt2-124m"), r);
  const double scores = 2.0 * 12 * 1024 * 1024 * (9.0 / 16.0);
  int seen = 0;
  for (const Op& op : g.ops) {
    if (op.kind == OpKind::fused_attention) CHECK(op.flops == 2 * (2 * scores * 64) + 5 * scores);
    if (op.kind == OpKind::fused_attention_backward) CHECK(op.flops == 5 * (2 * scores * 64) + 4 * scores);
    seen += op.kind == OpKind::fused_attention || op.kind == OpKind::fused_attention_backward;
  }
  CHECK(seen == 24);
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

namespace {

double total_bytes(const TaskGraph& g) {
  double bytes = 0;
  for (const Op& op : g.ops) bytes += op.bytes_read + op.bytes_written;
  return bytes;
}

}  // namespace

// bert-base at micro-batch 4, seq 128 (bert_recipe): M = 512 tokens, H = 768, 12 layers, 12 heads (bh = 48).
TEST_CASE("fused bias + dropout + residual: one op per sublayer end each way, 6·M·H fewer bytes per sublayer") {
  const ModelSpec m = load_model("bert-base");
  Recipe r = bert_recipe(false);
  const TaskGraph plain = build_task_graph(m, r);
  r.fused_bias_dropout_residual = true;
  const TaskGraph fused = build_task_graph(m, r);
  const double M = 512, H = 768, L = 12;
  CHECK(count_ops(fused, OpKind::bias_dropout_residual) == 2 * L);
  CHECK(count_ops(fused, OpKind::bias_dropout_residual_backward) == 2 * L);
  // Per layer: forward 2 dropouts + 2 adds → 2 ops; backward 2 dropout_backward + the 2 output linears'
  // bias_grad → 2 ops. The embeddings' dropout and the heads are unchanged.
  CHECK(count_ops(plain, OpKind::dropout) - count_ops(fused, OpKind::dropout) == 2 * L);
  CHECK(count_ops(plain, OpKind::bias_grad) - count_ops(fused, OpKind::bias_grad) == 2 * L);
  CHECK(fused.ops.size() == plain.ops.size() - 4 * 12);
  // Bytes per sublayer (2-byte activations, 1-byte mask, E = M·H): forward dropout 2E→2E+E and add 4E→2E
  // (11E) become one op reading y and the residual and writing the sum and the mask (7E; the bias moves from
  // the GEMM to it); backward dropout_backward (5E) + bias_grad (2E) become one op (5E). Saving: 6E.
  CHECK(total_bytes(plain) - total_bytes(fused) == 2 * L * 6 * M * H);
  // The same parameters (the output linears keep their bias, now added by the fused op), the same FLOPs ± the
  // nominal elementwise ones, and the same tensors kept for backward (the dropout masks).
  CHECK(fused.params.size() == plain.params.size());
  const MemoryPlan pp = plan_memory(plain), fp = plan_memory(fused);
  CHECK(fp.weights_bytes == pp.weights_bytes);
  CHECK(fp.retained_activation_bytes == pp.retained_activation_bytes);
  CHECK(fp.activations_live_peak_bytes <= pp.activations_live_peak_bytes);
  // GPT-2 (pre-LN) has the same two sublayer ends per layer.
  Recipe g = r;
  const TaskGraph gpt = build_task_graph(load_model("gpt2-124m"), g);
  CHECK(count_ops(gpt, OpKind::bias_dropout_residual) == 2 * 12);
}

TEST_CASE("fused softmax + dropout: one op each way per layer, 6·B·nh·S² fewer bytes per layer") {
  const ModelSpec m = load_model("bert-base");
  Recipe r = bert_recipe(false);
  const TaskGraph plain = build_task_graph(m, r);
  r.fused_softmax_dropout = true;
  const TaskGraph fused = build_task_graph(m, r);
  const double E = 48.0 * 128 * 128, L = 12;  // [B·nh, S, S] elements
  CHECK(count_ops(fused, OpKind::softmax_dropout) == L);
  CHECK(count_ops(fused, OpKind::softmax_dropout_backward) == L);
  CHECK(count_ops(fused, OpKind::softmax) == 0);
  CHECK(fused.ops.size() == plain.ops.size() - 2 * 12);
  // Forward: softmax (read 2E, write 2E) + dropout (read 2E, write 2E + E) = 9E → one op writing the dropped and
  // the kept probabilities and the mask (7E). Backward: dropout_backward (5E) + softmax_backward (6E) → one op
  // reading the gradient, probabilities and mask and writing dscores (7E). The attention mask reads are the same.
  CHECK(total_bytes(plain) - total_bytes(fused) == L * 6 * E);
  // Kept for backward either way: probabilities, mask, dropped probabilities; the intermediate gradient between
  // dropout_backward and softmax_backward is gone.
  const MemoryPlan pp = plan_memory(plain), fp = plan_memory(fused);
  CHECK(fp.retained_activation_bytes == pp.retained_activation_bytes);
  CHECK(fp.activations_live_peak_bytes <= pp.activations_live_peak_bytes);
  // Without dropout there is nothing to fuse: the graph is the unfused one.
  r.include_dropout = false;
  Recipe plain_nodrop = r;
  plain_nodrop.fused_softmax_dropout = false;
  CHECK(build_task_graph(m, r).ops.size() == build_task_graph(m, plain_nodrop).ops.size());
}
