// models/task_graph.hpp — one rank's training step as a DAG of ops over tensors (the heart of ptsim).
// The simulator gives each op a duration; the runtime executes each op with real kernels. Both see the
// same op ids. Not here: how ops are built (models/builder.hpp) or timed (sim/, runtime/).
//
// Conventions every executor relies on (docs/taskgraph.md):
//  * Row-major tensors. A "[M, K]" activation is M rows of K contiguous values; M = tokens (B·S) unless noted.
//  * SSA for activations: every activation tensor has exactly one producing op.
//  * Parameter gradients (role gradient) ACCUMULATE (+=): the executor zeroes them at the start of an
//    optimizer step; several ops may add into one gradient (tied embeddings; grad accumulation).
//  * The graph body (phases forward, recompute, backward) is one micro-step; it runs `micro_steps` times
//    per optimizer step, then the tail (phases communication and optimizer) runs once.
#pragma once
#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "models/model_spec.hpp"
#include "models/recipe.hpp"

namespace ptsim::models {

// f8e4m3 / f8e5m2: the OCP 8-bit floats of Hopper's tensor cores (fp8 casts and GEMM operands only).
enum class DType { f32, f16, bf16, f64, i32, u8, f8e4m3, f8e5m2 };
int64_t dtype_bytes(DType t);
const char* to_string(DType t);
inline bool is_fp8(DType t) { return t == DType::f8e4m3 || t == DType::f8e5m2; }
DType activation_dtype(Precision p);  // f32 for fp32 and tf32, bf16 for bf16 and fp8, f16 for fp16

enum class TensorRole {
  input,            // data fed each micro-step (token ids, labels, masks)
  weight,           // parameters in compute precision (the fp32 parameters when precision is fp32)
  master_weight,    // fp32 copy of parameters under mixed precision
  gradient,         // parameter gradients (accumulated)
  optimizer_state,  // e.g. Adam/LAMB moments
  activation,       // produced and consumed within a micro-step
  workspace,        // scratch (cuBLAS workspace, norms)
};
const char* to_string(TensorRole r);

struct Tensor {
  int id = -1;
  std::string name;              // unique, e.g. "bert.encoder.layer.3.attention.self.query.weight"
  std::vector<int64_t> shape;
  DType dtype = DType::f32;
  TensorRole role = TensorRole::activation;
  int layer = -1;                // transformer layer, -1 for embeddings/head/global
  int producer = -1;             // op id producing it (activations); -1 for persistent tensors
  int param_index = -1;          // for weight/gradient/master/optimizer_state: index into TaskGraph::params
  int64_t elements() const;
  int64_t bytes() const { return elements() * dtype_bytes(dtype); }
};

enum class OpKind {
  // forward and backward compute
  embedding,            // in: [table [V,H], ids [M] i32] out: [y [M,H]]  y[m] = table[ids[m]]
  embedding_backward,   // in: [dy [M,H], ids [M]] out: [dtable (grad, +=)]
  gemm,                 // in: [A, B, (bias)] out: [C]  C = alpha·op(A)·op(B) (+ bias[n]) ; see GemmAttrs
  batched_gemm,         // in: [A, B] out: [C]  per batch index, as gemm (no bias)
  bias_grad,            // in: [dy [M,N]] out: [dbias [N] (grad, +=)]  column sums
  add,                  // in: [x0, x1, ...] same shape out: [y]
  layernorm,            // in: [x [M,N], gamma [N], beta [N]] out: [y [M,N], mean [M], rstd [M]]
  layernorm_backward,   // in: [dy, x, gamma, mean, rstd] out: [dx, dgamma (+=), dbeta (+=)]
  softmax,              // in: [scores [B·nh,S,S], (attention_mask [B,S] i32: 1 keep, 0 pad)] out: [probs]
  softmax_backward,     // in: [dprobs, probs] out: [dscores]
  // A stack's fused attention (FlashAttention / SDPA; recipe.fused_attention): scores, mask, softmax, dropout
  // and ·V in one kernel, tiled so no [B·nh,S,S] tensor is stored; backward recomputes the scores.
  fused_attention,          // in: [q, k, v [B·nh,S,d], (attention_mask [B,S])] out: [context [B·nh,S,d], lse [B·nh,S] f32]
  fused_attention_backward, // in: [dcontext, q, k, v, context, lse, (mask)] out: [dq, dk, dv]
  // A stack's fused softmax + dropout (recipe.fused_softmax_dropout): scale, mask, softmax and dropout in one
  // kernel; it writes the probabilities (kept for backward) beside the dropped ones.
  softmax_dropout,          // in: [scores, (attention_mask)] out: [dropped [B·nh,S,S], probs, mask u8]
  softmax_dropout_backward, // in: [ddropped, probs, mask] out: [dscores]
  // A stack's fused bias + dropout + residual add (recipe.fused_bias_dropout_residual; Megatron-LM's and
  // Transformer Engine's bias_dropout_add): out = residual + dropout(y + bias), y a linear's output without bias.
  bias_dropout_residual,           // in: [y, bias, residual] out: [out, (mask u8)]
  bias_dropout_residual_backward,  // in: [dout, (mask)] out: [dy, dbias (+=)]   (dresidual = dout)
  dropout,              // in: [x] out: [y, mask u8]   y = x·mask/(1-p)
  dropout_backward,     // in: [dy, mask] out: [dx]
  gelu,                 // in: [x] out: [y]   erf GELU (BERT, GPT-2 use the tanh form; attrs.gelu_tanh)
  gelu_backward,        // in: [dy, x] out: [dx]
  tanh,                 // in: [x] out: [y]
  tanh_backward,        // in: [dy, y] out: [dx]
  split_heads,          // in: [x [B·S, nh·d]] out: [y [B·nh, S, d]]
  merge_heads,          // in: [x [B·nh, S, d]] out: [y [B·S, nh·d]]
  gather_rows,          // in: [x [M,N], index [P] i32] out: [y [P,N]]
  gather_rows_backward, // in: [dy [P,N], index [P]] out: [dx [M,N]] (zeros elsewhere; rows may repeat → sum)
  cross_entropy,        // in: [logits [P,C], labels [P] i32 (-1 = ignore)] out: [loss [1] f32, logsumexp [P] f32]
  cross_entropy_backward,  // in: [dloss [1], logits, labels, logsumexp] out: [dlogits]
  // Llama (docs/llama.md): RMSNorm, SwiGLU, rotary embeddings and grouped-query attention's K/V broadcast.
  rmsnorm,              // in: [x [M,N], gamma [N]] out: [y [M,N], rstd [M] f32]   y = x·rstd·gamma
  rmsnorm_backward,     // in: [dy, x, gamma, rstd] out: [dx, dgamma (+=)]
  swiglu,               // in: [gate [M,F], up [M,F]] out: [y [M,F]]   y = silu(gate)·up
  swiglu_backward,      // in: [dy, gate, up] out: [dgate, dup]
  rotary_embedding,     // in: [x [B·n,S,d]] out: [y]   rotate pairs of x by position·θ^(−2i/d) (attrs.rope_theta)
  rotary_embedding_backward,  // in: [dy] out: [dx]   the inverse rotation
  repeat_kv,            // in: [x [B·kv,S,d]] out: [y [B·nh,S,d]]   each K/V head copied to its nh/kv query heads
  repeat_kv_backward,   // in: [dy [B·nh,S,d]] out: [dx [B·kv,S,d]]   sum over each group of query heads
  // step tail
  all_reduce,           // in: gradient tensors of the bucket (in place); attrs.comm
  reduce_scatter,
  all_gather,
  send,
  recv,
  grad_norm,            // in: all gradients out: [norm [1] f32 workspace]  (global-norm clipping)
  optimizer_update,     // in: [norm?] + the bucket's gradients; updates their params and states
  // fp8 (Transformer Engine delayed scaling, docs/precisions.md). A cast scales a bf16 tensor by its scale
  // (from the amax history), writes it in fp8 and transposed in fp8 (Hopper's fp8 GEMMs take TN operands)
  // and records its amax; on a gradient it also sums the bias gradient (TE's cast_transpose_dbias).
  fp8_cast_transpose,   // in: [x [R,C] bf16] out: [x8 [R,C], x8ᵀ [C,R], amax [1] f32, (dbias [C] (grad, +=))]
  fp8_scale_update,     // in: the pass's amax tensors out: [scales [n] f32]  TE's amax_and_scale_update
};
const char* to_string(OpKind k);
// GEMMs and the fused attention kernels built from them: timed against the tensor-core (or fp32) peak.
inline bool is_gemm_like(OpKind k) {
  return k == OpKind::gemm || k == OpKind::batched_gemm || k == OpKind::fused_attention ||
         k == OpKind::fused_attention_backward;
}
bool is_communication(OpKind k);

enum class Phase { forward, recompute, backward, communication, optimizer };
const char* to_string(Phase p);
// Forward, recompute and backward: the ops of one micro-step, run `micro_steps` times per optimizer step.
inline bool is_micro_step_phase(Phase p) { return p == Phase::forward || p == Phase::recompute || p == Phase::backward; }

// Which ranks a collective spans.
// shard_replicas: hybrid sharding's groups across the shard groups (ZeRO 2 and 3, models/builder.cpp).
enum class CommGroup { data_parallel, tensor_parallel, shard_replicas };

struct GemmAttrs {
  int64_t batch = 1;        // batched_gemm only
  int64_t m = 0, n = 0, k = 0;  // C [m,n] = op(A) [m,k] · op(B) [k,n]
  bool trans_a = false;     // A stored [k,m]
  bool trans_b = false;     // B stored [n,k] (nn.Linear weights are [out,in] → trans_b for forward)
  double alpha = 1.0;
  bool accumulate = false;  // C += ... (parameter gradients)
  bool has_bias = false;    // third input is bias [n]
  bool fp8 = false;         // A and B are fp8 casts (precision fp8): timed at the fp8 tensor-core peak
};

struct CommAttrs {
  CommGroup group = CommGroup::data_parallel;
  int64_t group_size = 1;
  double bytes = 0;         // payload per rank
  int bucket = -1;          // gradient bucket index (data-parallel all-reduce)
};

struct OpAttrs {
  GemmAttrs gemm;
  CommAttrs comm;
  int64_t rows = 0, cols = 0;       // layernorm / softmax / cross_entropy / gather geometry
  int64_t batch = 0, seq = 0, heads = 0, head_dim = 0;  // split/merge heads, softmax masks
  double dropout_p = 0;
  double epsilon = 0;               // layernorm, rmsnorm
  double rope_theta = 0;            // rotary_embedding: the frequency base (10,000 for Llama 1 and 2)
  bool causal = false;              // softmax: GPT-2's causal mask
  bool gelu_tanh = false;           // gelu: tanh approximation (GPT-2)
  int64_t valid_classes = 0;        // cross_entropy: classes >= this are padding (excluded)
  uint64_t rng_stream = 0;          // dropout: distinct random stream per op
  std::vector<int> params;          // optimizer_update: indices into TaskGraph::params
};

struct Op {
  int id = -1;
  OpKind kind = OpKind::gemm;
  std::string name;                 // e.g. "layer3.attn.query.fwd"
  Phase phase = Phase::forward;
  int layer = -1;
  std::vector<int> inputs;          // tensor ids
  std::vector<int> outputs;         // tensor ids
  double flops = 0;                 // floating-point operations (multiply-add = 2)
  double bytes_read = 0;
  double bytes_written = 0;
  DType dtype = DType::f32;         // compute dtype
  bool tf32_math = false;           // an f32 GEMM run on tensor cores in TF32 (recipe precision tf32)
  OpAttrs attrs;
};

// A trainable parameter and its companion tensors.
struct Parameter {
  std::string name;                 // HuggingFace-style name
  int weight = -1;                  // tensor ids
  int gradient = -1;
  int master = -1;                  // -1 when precision is fp32
  std::vector<int> optimizer_states;
  bool decay = true;                // weight decay applies (false for biases and LayerNorm)
  int layer = -1;
  int64_t elements = 0;             // on this rank (after tensor-parallel split)
};

// Where a TaskGraph sits in a pipeline (models/builder.hpp build_pipeline_graphs): model chunk `index` of
// `count` (P × V; chunk c runs on pipeline device c mod P), its transformer layers [first_layer, end_layer),
// and the tensors it exchanges with its neighbours each micro-step. Without pipelining: chunk 0 of 1.
struct PipelineChunk {
  int index = 0;
  int count = 1;
  int64_t first_layer = 0, end_layer = 0;
  bool first() const { return index == 0; }
  bool last() const { return index == count - 1; }
  int recv_activation = -1;  // input [B·S, H]: the previous chunk's output (not on the first chunk)
  int send_activation = -1;  // this chunk's output, sent to the next chunk (not on the last)
  int recv_gradient = -1;    // input: the gradient of send_activation, from the next chunk (not on the last)
  int send_gradient = -1;    // the gradient of recv_activation, sent to the previous chunk (not on the first)
  // The last chunk's copy of the word embeddings (tied to the LM/MLM decoder; Megatron keeps one on the first
  // and one on the last stage and all-reduces their gradients): its param index, -1 when there is none.
  int tied_embedding_param = -1;
};

using DependencyGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS>;

struct TaskGraph {
  ModelSpec model;
  Recipe recipe;
  std::vector<Op> ops;              // in a valid execution order (topological)
  std::vector<Tensor> tensors;
  std::vector<Parameter> params;
  DependencyGraph deps;             // vertex = op id; edge u→v: v needs u (data or ordering)
  int loss_tensor = -1;             // scalar training loss of one micro-step
  int64_t micro_steps = 1;          // = recipe.grad_accum
  PipelineChunk chunk;              // chunk 0 of 1 without pipeline parallelism
  // Builder bookkeeping: ops that read a persistent tensor since its last write (write-after-read edges).
  std::map<int, std::vector<int>> readers_since_write;

  // Named inputs the data pipeline fills each micro-step (tensor ids; -1 when absent).
  struct Inputs {
    int input_ids = -1, token_type_ids = -1, position_ids = -1, attention_mask = -1;
    int masked_positions = -1, masked_labels = -1, cls_positions = -1, nsp_labels = -1, lm_labels = -1;
    int loss_grad = -1;  // [1] f32: dLoss/dloss of one micro-step (1/micro_steps × loss scale)
  } inputs;

  int add_tensor(Tensor t);         // assigns the id
  int add_op(Op op);                // assigns the id, records producers, adds data edges
  void add_dependency(int before_op, int after_op);
  const Tensor& tensor(int id) const { return tensors.at(static_cast<size_t>(id)); }
  const Op& op(int id) const { return ops.at(static_cast<size_t>(id)); }

  int64_t parameter_count() const;  // elements over params (this rank)
  double flops(Phase p) const;      // sum over ops of that phase (one micro-step for body phases)
  double micro_step_flops() const;  // forward + recompute + backward of one micro-step
  double flops_per_step() const;    // body × micro_steps + tail
  bool is_acyclic_in_order() const; // every edge goes forward in `ops` order
};

}  // namespace ptsim::models
