// tests/models/test_fp8_graph.cpp — the graph precision fp8 builds (Transformer Engine's delayed scaling,
// docs/precisions.md) against the bf16 graph of the same recipe: which ops are added, removed and changed,
// their bytes in closed form per layer, and the memory plan.
#include <doctest/doctest.h>

#include "models/build_context.hpp"
#include "models/builder.hpp"
#include "models/memory_plan.hpp"

using namespace ptsim::models;

namespace {

// bert-base at micro-batch 4, seq 128: M = 512 tokens, H = 768, FFN 3,072, 12 layers (models/specs/bert-base.json).
constexpr double M = 512, H = 768, F = 3072, L = 12;

TaskGraph bert_base(Precision precision, bool recompute = false) {
  Recipe r;
  r.micro_batch = 4;
  r.seq_len = 128;
  r.precision = precision;
  r.recompute_activations = recompute;
  return build_task_graph(load_model("bert-base"), r);
}

int count_ops(const TaskGraph& g, OpKind kind, Phase phase) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == kind && op.phase == phase ? 1 : 0;
  return n;
}

int count_kind(const TaskGraph& g, OpKind kind) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == kind ? 1 : 0;
  return n;
}

const Op& op_named(const TaskGraph& g, const std::string& name) {
  for (const Op& op : g.ops)
    if (op.name == name) return op;
  FAIL("no op named " << name);
  return g.ops.front();
}

double cast_bytes(const TaskGraph& g, Phase phase) {
  double bytes = 0;
  for (const Op& op : g.ops)
    if (op.kind == OpKind::fp8_cast_transpose && op.phase == phase) bytes += op.bytes_read + op.bytes_written;
  return bytes;
}

}  // namespace

TEST_CASE("fp8: each layer's linears become fp8 GEMMs with TE's casts; the rest of the graph stays bf16") {
  const TaskGraph bf16 = bert_base(Precision::bf16), fp8 = bert_base(Precision::fp8);
  // Casts per layer, forward: the 4 distinct linear inputs (layer input shared by Q/K/V, attention context,
  // the FFN input, the GELU output) and the 6 weights; backward: one gradient cast per linear (6).
  CHECK(count_ops(fp8, OpKind::fp8_cast_transpose, Phase::forward) == 10 * L);
  CHECK(count_ops(fp8, OpKind::fp8_cast_transpose, Phase::backward) == 6 * L);
  CHECK(count_ops(fp8, OpKind::fp8_scale_update, Phase::forward) == 1);
  CHECK(count_ops(fp8, OpKind::fp8_scale_update, Phase::backward) == 1);
  CHECK(count_kind(bf16, OpKind::fp8_cast_transpose) == 0);
  // The layers' bias gradients are summed inside the gradient casts (cast_transpose_dbias): 6 fewer
  // bias_grad ops per layer; the heads' (MLM transform, decoder, pooler, NSP) stay.
  CHECK(count_kind(bf16, OpKind::bias_grad) - count_kind(fp8, OpKind::bias_grad) == 6 * L);
  CHECK(count_kind(fp8, OpKind::bias_grad) == 4);
  CHECK(fp8.ops.size() == bf16.ops.size() + 16 * 12 + 2 - 6 * 12);
  // Same GEMMs (forward, dgrad, wgrad per linear), 18 per layer of them in fp8: E4M3 forward, E5M2 backward.
  CHECK(count_kind(fp8, OpKind::gemm) == count_kind(bf16, OpKind::gemm));
  int e4m3 = 0, e5m2 = 0;
  for (const Op& op : fp8.ops) {
    e4m3 += op.dtype == DType::f8e4m3 ? 1 : 0;
    e5m2 += op.dtype == DType::f8e5m2 ? 1 : 0;
    if (op.kind == OpKind::batched_gemm || op.kind == OpKind::softmax || op.kind == OpKind::layernorm ||
        op.kind == OpKind::optimizer_update)
      CHECK_MESSAGE(op.dtype == DType::bf16, op.name);  // attention BMMs, softmax, LayerNorm, optimizer: bf16
  }
  CHECK(e4m3 == 6 * L);
  CHECK(e5m2 == 12 * L);
  CHECK(op_named(fp8, "cls.predictions.decoder").dtype == DType::bf16);
}

TEST_CASE("fp8: cast and GEMM bytes in closed form per layer") {
  const TaskGraph bf16 = bert_base(Precision::bf16), fp8 = bert_base(Precision::fp8);
  // A cast of E elements reads E bf16 (2E bytes), writes the fp8 copy and its transpose (E + E) and a 4-byte
  // amax: 4E + 4. Forward per layer: inputs [M,H] ×3 and [M,F]; weights [H,H] ×4, [F,H], [H,F].
  const double forward_elements = 3 * M * H + M * F + 4 * H * H + 2 * H * F;
  CHECK(cast_bytes(fp8, Phase::forward) == L * (4 * forward_elements + 10 * 4));
  // Backward per layer: the output gradients [M,H] ×5 (Q, K, V, attention output, FFN2) and [M,F] (FFN1), each
  // also reading and writing its bias gradient [n] bf16 (+4n bytes).
  const double grad_elements = 5 * M * H + M * F, bias_elements = 5 * H + F;
  CHECK(cast_bytes(fp8, Phase::backward) == L * (4 * grad_elements + 6 * 4 + 4 * bias_elements));
  // The query linear: the same FLOPs, operands read in 1 byte instead of 2 (the bias and output stay bf16).
  const Op& q8 = op_named(fp8, "bert.encoder.layer.0.attention.self.query");
  const Op& q16 = op_named(bf16, "bert.encoder.layer.0.attention.self.query");
  CHECK(q8.flops == q16.flops);
  CHECK(q16.bytes_read == 2 * M * H + 2 * H * H + 2 * H);
  CHECK(q8.bytes_read == M * H + H * H + 2 * H);
  CHECK(q8.bytes_written == q16.bytes_written);
  // Scale updates: per fp8 tensor of the pass read amax + history (4 + 4·1024), write history + scale +
  // scale_inv (4·1024 + 8); 10 tensors per layer forward, 6 backward.
  const Op& fwd = op_named(fp8, "fp8.forward.scale_update");
  const double history = static_cast<double>(kFp8AmaxHistoryLength);
  CHECK(fwd.bytes_read == 10 * L * (4 + 4 * history));
  CHECK(fwd.bytes_written == 10 * L * (4 * history + 8));
  CHECK(op_named(fp8, "fp8.backward.scale_update").attrs.rows == 6 * L);
  // FLOPs: the GEMMs' are unchanged; the casts add 4 per element (the fused bias gradient does the column
  // sums the removed bias_grad ops did), the scale updates 1 per history entry + 4 per tensor. All exact.
  CHECK(fp8.micro_step_flops() - bf16.micro_step_flops() ==
        L * 4 * (forward_elements + grad_elements) + 16 * L * (history + 4));
}

TEST_CASE("fp8: memory plan keeps bf16 weights and fp32 masters; backward keeps fp8 transposes, not bf16 inputs") {
  const TaskGraph bf16 = bert_base(Precision::bf16), fp8 = bert_base(Precision::fp8);
  const MemoryPlan p16 = plan_memory(bf16), p8 = plan_memory(fp8);
  CHECK(p8.weights_bytes == p16.weights_bytes);  // TE keeps the parameters in bf16 …
  CHECK(p8.master_weights_bytes == p16.master_weights_bytes);  // … and the optimizer an fp32 master
  CHECK(p8.master_weights_bytes == 2 * p8.weights_bytes);
  CHECK(p8.gradients_bytes == p16.gradients_bytes);
  CHECK(p8.optimizer_state_bytes == p16.optimizer_state_bytes);
  // Kept from forward to backward, per layer: bf16 keeps the 4 linear inputs for the weight gradients
  // (2 bytes each: 3·M·H + M·F elements); fp8 keeps their fp8 transposes (1 byte) and the 6 weights' fp8
  // transposes for the input gradients (4·H² + 2·H·F bytes). All sizes are multiples of the 256-byte alignment.
  const double delta = L * ((4 * H * H + 2 * H * F) - (3 * M * H + M * F));
  CHECK(p8.retained_activation_bytes - p16.retained_activation_bytes == delta);
}

TEST_CASE("fp8 with recomputation re-casts a layer's inputs and weights before its backward") {
  const TaskGraph g = bert_base(Precision::fp8, true);
  CHECK(count_ops(g, OpKind::fp8_cast_transpose, Phase::recompute) == 10 * L);
  CHECK(count_ops(g, OpKind::fp8_cast_transpose, Phase::forward) == 10 * L);
  // Recomputed GEMMs run in E4M3 like the forward; the scale update folds only the forward's amaxes.
  for (const Op& op : g.ops)
    if (op.phase == Phase::recompute && op.kind == OpKind::gemm && op.layer >= 0 && op.layer < 12)
      CHECK_MESSAGE(op.dtype == DType::f8e4m3, op.name);
  CHECK(op_named(g, "fp8.forward.scale_update").attrs.rows == 10 * L);
  CHECK(g.is_acyclic_in_order());
}
