// models/op_cost.cpp — FLOPs and bytes moved per op, from its kind, attributes and tensors.
// FLOP conventions (docs/taskgraph.md): a multiply-add is 2 FLOPs; elementwise costs are nominal
// (these ops are memory-bound, so their bytes, not FLOPs, set their time in the compute model).
#include <algorithm>

#include "models/build_context.hpp"
#include "models/builder.hpp"

namespace ptsim::models {
namespace {

// What the cost reads of the graph besides the op, from a graph or from OpCostSizes: a tensor's elements and
// dtype, a parameter's elements.
struct GraphSizes {
  const TaskGraph& g;
  int64_t elements(int t) const { return g.tensor(t).elements(); }
  DType dtype(int t) const { return g.tensor(t).dtype; }
  int64_t param_elements(int p) const { return g.params[static_cast<size_t>(p)].elements; }
};
struct GivenSizes {
  const OpCostSizes& s;
  int64_t elements(int t) const { return s.tensor_elements.at(static_cast<size_t>(t)); }
  DType dtype(int t) const { return s.tensor_dtypes.at(static_cast<size_t>(t)); }
  int64_t param_elements(int p) const { return s.param_elements.at(static_cast<size_t>(p)); }
};

// Tensor::bytes() and Tensor::elements(), as doubles.
template <typename Sizes>
double tensor_bytes(const Sizes& g, int t) { return static_cast<double>(g.elements(t) * dtype_bytes(g.dtype(t))); }
template <typename Sizes>
double tensor_elements(const Sizes& g, int t) { return static_cast<double>(g.elements(t)); }

// Nominal FLOPs per output element of elementwise/normalisation ops.
double elementwise_flops_per_element(OpKind kind) {
  switch (kind) {
    case OpKind::add: return 1;
    case OpKind::dropout: return 2;           // compare + scale
    case OpKind::dropout_backward: return 2;
    case OpKind::gelu: return 10;             // erf/tanh polynomial
    case OpKind::gelu_backward: return 14;
    case OpKind::tanh: return 6;
    case OpKind::tanh_backward: return 3;
    case OpKind::layernorm: return 8;         // mean, variance, normalise, scale, shift
    case OpKind::layernorm_backward: return 14;
    case OpKind::softmax: return 5;           // max, exp, sum, divide (+ mask/scale)
    case OpKind::softmax_backward: return 4;
    case OpKind::softmax_dropout: return 7;            // softmax 5 + dropout 2, one pass
    case OpKind::softmax_dropout_backward: return 6;   // dropout backward 2 + softmax backward 4
    case OpKind::bias_dropout_residual: return 4;      // + bias, compare + scale, + residual
    case OpKind::bias_dropout_residual_backward: return 3;  // compare + scale, column sum
    case OpKind::cross_entropy: return 4;
    case OpKind::cross_entropy_backward: return 3;
    case OpKind::rmsnorm: return 4;           // square-accumulate, scale by rstd, × gamma (+ rsqrt per row)
    case OpKind::rmsnorm_backward: return 8;  // dy·gamma, its dot with x per row, dx, dgamma accumulate
    case OpKind::swiglu: return 5;            // sigmoid (exp, add, reciprocal), × gate, × up
    case OpKind::swiglu_backward: return 10;  // sigmoid again, silu, dup = dy·silu, silu' = s(1 + g(1 − s)), dgate
    case OpKind::rotary_embedding: return 3;  // x·cos + rotate_half(x)·sin
    case OpKind::rotary_embedding_backward: return 3;
    default: return 0;
  }
}

// The share of the S×S scores a fused attention kernel computes. Causal: the kernel skips the key blocks
// wholly above the diagonal — of n = ⌈S/128⌉ blocks per row of blocks (FlashAttention-2's 128-wide blocks,
// Dao 2023; docs/references.md, "FlashAttention-2") it computes n(n + 1)/2 of n², i.e. (n + 1)/(2n).
double causal_tile_fraction(const Op& op) {
  if (!op.attrs.causal) return 1.0;
  constexpr int64_t kBlock = 128;
  const double n = static_cast<double>((op.attrs.gemm.m + kBlock - 1) / kBlock);
  return (n + 1) / (2 * n);
}

template <typename Sizes>
void assign_cost(const Sizes& g, Op& op) {
  double read = 0, written = 0, flops = 0;
  for (int t : op.inputs) read += tensor_bytes(g, t);
  for (int t : op.outputs) written += tensor_bytes(g, t);
  const GemmAttrs& gm = op.attrs.gemm;
  switch (op.kind) {
    case OpKind::fused_attention:
    case OpKind::fused_attention_backward: {
      // Forward: QKᵀ and P·V (2 batched GEMMs of 2·S·S·d per head) plus the softmax (5 per score);
      // backward recomputes QKᵀ and runs dV, dP, dQ, dK: 5 GEMMs (FlashAttention-2, Dao 2023).
      const double score_elements = static_cast<double>(gm.batch) * gm.m * gm.n * causal_tile_fraction(op);
      const double gemm_flops = 2.0 * score_elements * gm.k;
      flops = op.kind == OpKind::fused_attention ? 2 * gemm_flops + 5 * score_elements : 5 * gemm_flops + 4 * score_elements;
      break;
    }
    case OpKind::gemm:
    case OpKind::batched_gemm: {
      double batch = op.kind == OpKind::batched_gemm ? static_cast<double>(gm.batch) : 1.0;
      flops = 2.0 * batch * gm.m * gm.n * gm.k;
      if (gm.has_bias) flops += batch * gm.m * gm.n;
      if (gm.accumulate) {
        flops += batch * gm.m * gm.n;
        read += written;  // C is read and written
      }
      break;
    }
    case OpKind::embedding: {
      // Only the looked-up rows of the table are read.
      read = tensor_bytes(g, op.inputs[1]) + tensor_bytes(g, op.outputs[0]);
      break;
    }
    case OpKind::embedding_backward: {
      // Scatter-add of M rows into the table gradient: read dy, ids and the touched rows, write them.
      double rows_bytes = tensor_bytes(g, op.inputs[0]);
      read = rows_bytes + tensor_bytes(g, op.inputs[1]) + rows_bytes;
      written = rows_bytes;
      flops = tensor_elements(g, op.inputs[0]);
      break;
    }
    case OpKind::gather_rows: break;
    case OpKind::gather_rows_backward: break;
    case OpKind::bias_grad:
      flops = tensor_elements(g, op.inputs[0]);
      read += written;
      break;
    case OpKind::split_heads:
    case OpKind::merge_heads: break;
    case OpKind::repeat_kv: break;  // a copy: reads the K/V heads once, writes every query head's copy
    case OpKind::repeat_kv_backward:  // each K/V head's gradient sums its group's nh/kv query-head gradients
      flops = tensor_elements(g, op.inputs[0]);
      break;
    case OpKind::rotary_embedding:
    case OpKind::rotary_embedding_backward: {
      // HF's LlamaRotaryEmbedding: cos and sin tables [S, d] in the activation dtype, read beside x.
      flops = 3 * tensor_elements(g, op.inputs[0]);
      read += 2.0 * static_cast<double>(op.attrs.seq * op.attrs.head_dim) * static_cast<double>(dtype_bytes(g.dtype(op.inputs[0])));
      break;
    }
    case OpKind::all_reduce:
    case OpKind::reduce_scatter:
    case OpKind::all_gather:
    case OpKind::send:
    case OpKind::recv:
      read = op.attrs.comm.bytes;
      written = op.attrs.comm.bytes;
      flops = op.kind == OpKind::all_reduce || op.kind == OpKind::reduce_scatter
                  ? op.attrs.comm.bytes / dtype_bytes(op.dtype)
                  : 0;
      break;
    case OpKind::fp8_cast_transpose: {
      // Per element: |x|, running max (the amax), × scale, saturating convert (4); with a fused bias gradient
      // (a 4th output) one more add per element, and the bias gradient is read-modify-write.
      flops = 4 * tensor_elements(g, op.inputs[0]);
      if (op.outputs.size() > 3) {
        flops += tensor_elements(g, op.inputs[0]);
        read += tensor_bytes(g, op.outputs[3]);
      }
      break;
    }
    case OpKind::fp8_scale_update: {
      // For each of the pass's fp8 tensors (attrs.rows): read its new amax and its amax history
      // (attrs.cols fp32 entries), write the rolled history, the scale and its inverse; the max over the
      // history is one compare per entry plus ~4 FLOPs for the scale (docs/precisions.md).
      const double tensors = static_cast<double>(op.attrs.rows), history = static_cast<double>(op.attrs.cols);
      read = tensors * (4 + 4 * history);
      written = tensors * (4 * history + 8);
      flops = tensors * (history + 4);
      break;
    }
    case OpKind::grad_norm:
      for (int t : op.inputs) flops += 2 * tensor_elements(g, t);
      break;
    case OpKind::optimizer_update: {
      // Per element: read gradient, weight, master, states; write weight, master, states.
      // ~12 FLOPs per element for Adam-style updates (moments, bias correction, sqrt, divide, decay) plus
      // 4 for the per-tensor norms of LAMB/LANS trust ratios.
      double elements = 0;
      for (int p : op.attrs.params) elements += static_cast<double>(g.param_elements(p));
      flops = 16 * elements;
      read += written;  // outputs (weights, masters, states) are read-modify-write
      break;
    }
    default: {
      // Largest operand: the output for most ops, the logits for cross_entropy.
      double elements = 0;
      for (int t : op.outputs) elements = std::max(elements, tensor_elements(g, t));
      for (int t : op.inputs) elements = std::max(elements, tensor_elements(g, t));
      flops = elementwise_flops_per_element(op.kind) * elements;
      if (op.kind == OpKind::layernorm_backward) read += tensor_bytes(g, op.outputs[1]) + tensor_bytes(g, op.outputs[2]);
      if (op.kind == OpKind::rmsnorm_backward) read += tensor_bytes(g, op.outputs[1]);  // dgamma +=
      if (op.kind == OpKind::bias_dropout_residual_backward) read += tensor_bytes(g, op.outputs[1]);  // dbias +=
      break;
    }
  }
  op.flops = flops;
  op.bytes_read = read;
  op.bytes_written = written;
}

}  // namespace

void assign_op_cost(const TaskGraph& g, Op& op) { assign_cost(GraphSizes{g}, op); }
void assign_op_cost(const OpCostSizes& sizes, Op& op) { assign_cost(GivenSizes{sizes}, op); }

int BuildContext::emit(OpKind kind, const std::string& name, Phase phase, int layer, std::vector<int> inputs,
                       std::vector<int> outputs, OpAttrs attrs) {
  Op op;
  op.kind = kind;
  op.name = name;
  op.phase = phase;
  op.layer = layer;
  op.inputs = std::move(inputs);
  op.outputs = std::move(outputs);
  op.attrs = std::move(attrs);
  // An fp8 GEMM's math is E4M3 × E4M3 in forward (and recompute), E5M2 gradient × E4M3 in backward (TE's
  // HYBRID format); both run at the fp8 tensor-core peak.
  op.dtype = op.attrs.gemm.fp8 && kind == OpKind::gemm ? (phase == Phase::backward ? DType::f8e5m2 : DType::f8e4m3)
                                                        : act_dtype;
  op.tf32_math = tf32_math && is_gemm_like(kind);
  assign_op_cost(graph, op);
  return graph.add_op(std::move(op));
}

}  // namespace ptsim::models
