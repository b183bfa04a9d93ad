// models/task_graph.cpp — TaskGraph bookkeeping: ids, producers, dependency edges, FLOP totals.
#include "models/task_graph.hpp"

#include <stdexcept>

namespace ptsim::models {

int64_t dtype_bytes(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f16: return 2;
    case DType::bf16: return 2;
    case DType::f64: return 8;
    case DType::i32: return 4;
    case DType::u8: return 1;
    case DType::f8e4m3: return 1;
    case DType::f8e5m2: return 1;
  }
  return 0;
}

const char* to_string(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f16: return "f16";
    case DType::bf16: return "bf16";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::u8: return "u8";
    case DType::f8e4m3: return "f8e4m3";
    case DType::f8e5m2: return "f8e5m2";
  }
  return "?";
}

DType activation_dtype(Precision p) {
  switch (p) {
    case Precision::fp32: return DType::f32;
    case Precision::tf32: return DType::f32;
    case Precision::fp16: return DType::f16;
    case Precision::bf16: return DType::bf16;
    case Precision::fp8: return DType::bf16;  // storage; only the fp8 GEMMs' operands are 8-bit
  }
  return DType::f32;
}

const char* to_string(TensorRole r) {
  switch (r) {
    case TensorRole::input: return "input";
    case TensorRole::weight: return "weight";
    case TensorRole::master_weight: return "master_weight";
    case TensorRole::gradient: return "gradient";
    case TensorRole::optimizer_state: return "optimizer_state";
    case TensorRole::activation: return "activation";
    case TensorRole::workspace: return "workspace";
  }
  return "?";
}

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::embedding: return "embedding";
    case OpKind::embedding_backward: return "embedding_backward";
    case OpKind::gemm: return "gemm";
    case OpKind::batched_gemm: return "batched_gemm";
    case OpKind::bias_grad: return "bias_grad";
    case OpKind::add: return "add";
    case OpKind::layernorm: return "layernorm";
    case OpKind::layernorm_backward: return "layernorm_backward";
    case OpKind::softmax: return "softmax";
    case OpKind::softmax_backward: return "softmax_backward";
    case OpKind::fused_attention: return "fused_attention";
    case OpKind::fused_attention_backward: return "fused_attention_backward";
    case OpKind::softmax_dropout: return "softmax_dropout";
    case OpKind::softmax_dropout_backward: return "softmax_dropout_backward";
    case OpKind::bias_dropout_residual: return "bias_dropout_residual";
    case OpKind::bias_dropout_residual_backward: return "bias_dropout_residual_backward";
    case OpKind::dropout: return "dropout";
    case OpKind::dropout_backward: return "dropout_backward";
    case OpKind::gelu: return "gelu";
    case OpKind::gelu_backward: return "gelu_backward";
    case OpKind::tanh: return "tanh";
    case OpKind::tanh_backward: return "tanh_backward";
    case OpKind::split_heads: return "split_heads";
    case OpKind::merge_heads: return "merge_heads";
    case OpKind::gather_rows: return "gather_rows";
    case OpKind::gather_rows_backward: return "gather_rows_backward";
    case OpKind::cross_entropy: return "cross_entropy";
    case OpKind::cross_entropy_backward: return "cross_entropy_backward";
    case OpKind::rmsnorm: return "rmsnorm";
    case OpKind::rmsnorm_backward: return "rmsnorm_backward";
    case OpKind::swiglu: return "swiglu";
    case OpKind::swiglu_backward: return "swiglu_backward";
    case OpKind::rotary_embedding: return "rotary_embedding";
    case OpKind::rotary_embedding_backward: return "rotary_embedding_backward";
    case OpKind::repeat_kv: return "repeat_kv";
    case OpKind::repeat_kv_backward: return "repeat_kv_backward";
    case OpKind::all_reduce: return "all_reduce";
    case OpKind::reduce_scatter: return "reduce_scatter";
    case OpKind::all_gather: return "all_gather";
    case OpKind::send: return "send";
    case OpKind::recv: return "recv";
    case OpKind::grad_norm: return "grad_norm";
    case OpKind::optimizer_update: return "optimizer_update";
    case OpKind::fp8_cast_transpose: return "fp8_cast_transpose";
    case OpKind::fp8_scale_update: return "fp8_scale_update";
  }
  return "?";
}

bool is_communication(OpKind k) {
  return k == OpKind::all_reduce || k == OpKind::reduce_scatter || k == OpKind::all_gather || k == OpKind::send ||
         k == OpKind::recv;
}

const char* to_string(Phase p) {
  switch (p) {
    case Phase::forward: return "forward";
    case Phase::recompute: return "recompute";
    case Phase::backward: return "backward";
    case Phase::communication: return "communication";
    case Phase::optimizer: return "optimizer";
  }
  return "?";
}

int64_t Tensor::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int TaskGraph::add_tensor(Tensor t) {
  t.id = static_cast<int>(tensors.size());
  tensors.push_back(std::move(t));
  return tensors.back().id;
}

void TaskGraph::add_dependency(int before_op, int after_op) {
  if (before_op < 0 || before_op == after_op) return;
  if (!boost::edge(before_op, after_op, deps).second) boost::add_edge(before_op, after_op, deps);
}

int TaskGraph::add_op(Op op) {
  op.id = static_cast<int>(ops.size());
  boost::add_vertex(deps);
  for (int t : op.inputs) {
    const Tensor& in = tensors.at(static_cast<size_t>(t));
    add_dependency(in.producer, op.id);
    if (in.role != TensorRole::activation && in.role != TensorRole::workspace) readers_since_write[t].push_back(op.id);
  }
  for (int t : op.outputs) {
    Tensor& out = tensors.at(static_cast<size_t>(t));
    if (out.role == TensorRole::activation || out.role == TensorRole::workspace) {
      if (out.producer >= 0) throw std::logic_error("tensor '" + out.name + "' produced twice (activations are SSA)");
      out.producer = op.id;
    } else {
      // Accumulated/in-place tensors (gradients, weights): order after the previous writer.
      add_dependency(out.producer, op.id);
      auto readers = readers_since_write.find(t);
      if (readers != readers_since_write.end()) {
        for (int r : readers->second) add_dependency(r, op.id);
        readers->second.clear();
      }
      out.producer = op.id;  // "last writer" for persistent tensors
    }
  }
  ops.push_back(std::move(op));
  return ops.back().id;
}

int64_t TaskGraph::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : params) n += p.elements;
  return n;
}

double TaskGraph::flops(Phase p) const {
  double total = 0;
  for (const auto& op : ops)
    if (op.phase == p) total += op.flops;
  return total;
}

double TaskGraph::micro_step_flops() const {
  return flops(Phase::forward) + flops(Phase::recompute) + flops(Phase::backward);
}

double TaskGraph::flops_per_step() const {
  return micro_step_flops() * static_cast<double>(micro_steps) + flops(Phase::communication) + flops(Phase::optimizer);
}

bool TaskGraph::is_acyclic_in_order() const {
  auto [begin, end] = boost::edges(deps);
  for (auto it = begin; it != end; ++it)
    if (boost::source(*it, deps) >= boost::target(*it, deps)) return false;
  return true;
}

}  // namespace ptsim::models
