// models/autodiff.cpp — backward ops from per-op-kind gradient rules (a small reverse-mode autodiff
// over the forward ops). Activation gradients are SSA tensors summed with `add` ops when a tensor has
// several consumers; parameter gradients accumulate (+=) into the parameter's gradient tensor.
// With recomputation, each layer's forward ops are re-emitted (phase recompute) right before that layer's
// backward, and the rules read the recomputed tensors, so the originals die after the forward pass.
// Selective recomputation re-runs only attention's core ops, right before the first of their backwards.
// Under sequence parallelism the sequence all-gather before a column-parallel linear is re-run before that
// linear's backward (Megatron keeps only the S/T shard, Korthikanti et al. 2022 §4.2.2).
#include <fmt/format.h>

#include <map>
#include <set>
#include <stdexcept>

#include "models/build_context.hpp"

namespace ptsim::models {
namespace {

class Autodiff {
 public:
  Autodiff(BuildContext& ctx, const BackwardOptions& o) : ctx_(ctx), g_(ctx.graph), o_(o) {}

  std::map<int, int> run() {
    std::vector<int> forward_ops;
    for (const Op& op : g_.ops)
      if (op.phase == Phase::forward) forward_ops.push_back(op.id);
    mark_requires_grad(forward_ops);
    grad_[o_.loss] = o_.loss_grad;

    int current_layer = -2;
    for (auto it = forward_ops.rbegin(); it != forward_ops.rend(); ++it) {
      Op op = g_.op(*it);  // copy: g_.ops grows while we emit
      if (o_.recompute && op.layer != current_layer && op.layer >= 0 && op.layer < g_.model.num_layers)
        recompute_layer(forward_ops, op.layer);
      if (o_.selective_recompute && is_attention_core(op) && !remap_.count(op.outputs[0]))
        recompute_attention_core(forward_ops, op.layer);
      regather_sequence_input(op);
      current_layer = op.layer;
      backward_of(op);
    }
    std::map<int, int> wanted;
    for (int t : o_.grad_inputs)
      if (auto it = grad_.find(t); it != grad_.end()) wanted[t] = it->second;
    return wanted;
  }

 private:
  // ---- which tensors need gradients ----
  static std::vector<size_t> differentiable_inputs(const Op& op) {
    switch (op.kind) {
      case OpKind::embedding: return {0};
      case OpKind::gemm: return op.attrs.gemm.has_bias ? std::vector<size_t>{0, 1, 2} : std::vector<size_t>{0, 1};
      case OpKind::batched_gemm: return {0, 1};
      case OpKind::fused_attention: return {0, 1, 2};
      case OpKind::bias_dropout_residual: return {0, 1, 2};
      case OpKind::layernorm: return {0, 1, 2};
      case OpKind::rmsnorm: return {0, 1};
      case OpKind::swiglu: return {0, 1};
      case OpKind::softmax: return {0};
      case OpKind::gather_rows: return {0};
      case OpKind::cross_entropy: return {0};
      case OpKind::add: {
        std::vector<size_t> all;
        for (size_t i = 0; i < op.inputs.size(); ++i) all.push_back(i);
        return all;
      }
      default: return {0};  // dropout, gelu, tanh, split/merge heads, all_reduce
    }
  }

  void mark_requires_grad(const std::vector<int>& forward_ops) {
    for (const Tensor& t : g_.tensors)
      if (t.role == TensorRole::weight) requires_grad_.insert(t.id);
    requires_grad_.insert(o_.grad_inputs.begin(), o_.grad_inputs.end());
    for (int id : forward_ops) {
      const Op& op = g_.op(id);
      bool any = false;
      for (size_t i : differentiable_inputs(op)) any = any || requires_grad_.count(op.inputs[i]);
      if (any) requires_grad_.insert(op.outputs[0]);  // the first output is the differentiable one
    }
  }

  // ---- recomputation ----
  void recompute_layer(const std::vector<int>& forward_ops, int layer) {
    for (int id : forward_ops)
      if (g_.op(id).layer == layer) clone_op(g_.op(id));  // incl. TP all-reduces, as Megatron recomputes them
  }

  // Attention's core: the two batched GEMMs (QKᵀ and ·V), the softmax, and the dropout on its probabilities
  // (or the fused softmax_dropout): the ops whose outputs are the S×S tensors.
  bool is_attention_core(const Op& op) const {
    if (op.kind == OpKind::batched_gemm || op.kind == OpKind::softmax || op.kind == OpKind::softmax_dropout) return true;
    if (op.kind != OpKind::dropout) return false;
    const int producer = g_.tensor(op.inputs[0]).producer;
    return producer >= 0 && g_.op(producer).kind == OpKind::softmax;
  }

  void recompute_attention_core(const std::vector<int>& forward_ops, int layer) {
    for (int id : forward_ops)
      if (g_.op(id).layer == layer && is_attention_core(g_.op(id))) clone_op(g_.op(id));
  }

  // A GEMM whose input is the sequence-parallel all-gather's output reads it again for its weight gradient:
  // the gather is re-run first (once per gathered tensor) rather than kept from the forward.
  void regather_sequence_input(const Op& op) {
    if (op.kind != OpKind::gemm || op.attrs.gemm.fp8 || remap_.count(op.inputs[0])) return;
    const int producer = g_.tensor(op.inputs[0]).producer;
    if (producer < 0) return;
    const Op& gather = g_.op(producer);
    if (gather.kind == OpKind::all_gather && gather.phase == Phase::forward &&
        gather.attrs.comm.group == CommGroup::tensor_parallel)
      clone_op(gather);
  }

  void clone_op(const Op original_ref) {
    const Op& original = original_ref;
    std::vector<int> outputs;
    for (int t : original.outputs) {
      Tensor copy = g_.tensor(t);
      copy.name += ".recompute";
      copy.producer = -1;
      copy.id = -1;
      int id = g_.add_tensor(copy);
      remap_[t] = id;
      outputs.push_back(id);
    }
    ctx_.emit(original.kind, original.name + ".recompute", Phase::recompute, original.layer, remapped(original.inputs),
              outputs, original.attrs);
  }

  std::vector<int> remapped(const std::vector<int>& ids) const {
    std::vector<int> out;
    for (int t : ids) {
      auto it = remap_.find(t);
      out.push_back(it == remap_.end() ? t : it->second);
    }
    return out;
  }

  // ---- gradient bookkeeping ----
  bool is_param(int t) const { return g_.tensor(t).role == TensorRole::weight; }
  int param_grad(int t) const { return g_.params[static_cast<size_t>(g_.tensor(t).param_index)].gradient; }

  // A fresh activation-gradient tensor shaped like `t`.
  int new_grad(int t) {
    const Tensor& like = g_.tensor(t);
    DType dtype = like.dtype == DType::f32 && like.shape == std::vector<int64_t>{1} ? DType::f32 : ctx_.act_dtype;
    return ctx_.activation("grad." + like.name, like.shape, like.layer, dtype);
  }

  void add_grad(int t, int g, int layer) {
    auto it = grad_.find(t);
    if (it == grad_.end()) {
      grad_[t] = g;
      return;
    }
    int sum = new_grad(t);
    ctx_.emit(OpKind::add, "grad." + g_.tensor(t).name + ".sum", Phase::backward, layer, {it->second, g}, {sum});
    it->second = sum;
  }

  int emit(OpKind kind, const std::string& name, int layer, std::vector<int> in, std::vector<int> out,
           const OpAttrs& attrs) {
    return ctx_.emit(kind, name + ".bwd", Phase::backward, layer, std::move(in), std::move(out), attrs);
  }

  bool wants(const Op& op, size_t input) const { return requires_grad_.count(op.inputs[input]) > 0; }

  // Gradient of input `i` of `op` through a gemm: either accumulate into a parameter gradient or a new tensor.
  void gemm_operand_grad(const Op& op, const Op& live, size_t i, int dC, const std::string& what) {
    if (!wants(op, i)) return;
    const GemmAttrs& f = op.attrs.gemm;
    OpAttrs a;
    a.gemm.batch = f.batch;
    a.gemm.alpha = f.alpha;
    int A = live.inputs[0], B = live.inputs[1];
    std::vector<int> in;
    if (i == 0) {
      if (!f.trans_a) {  // dA [m,k] = dC [m,n] · op(B)^T
        a.gemm.m = f.m, a.gemm.n = f.k, a.gemm.k = f.n;
        a.gemm.trans_b = !f.trans_b;
        in = {dC, B};
      } else {  // dA stored [k,m] = op(B) · dC^T
        a.gemm.m = f.k, a.gemm.n = f.m, a.gemm.k = f.n;
        a.gemm.trans_a = f.trans_b;
        a.gemm.trans_b = true;
        in = {B, dC};
      }
    } else {
      if (!f.trans_b) {  // dB [k,n] = op(A)^T · dC
        a.gemm.m = f.k, a.gemm.n = f.n, a.gemm.k = f.m;
        a.gemm.trans_a = !f.trans_a;
        in = {A, dC};
      } else {  // dB stored [n,k] = dC^T · op(A)
        a.gemm.m = f.n, a.gemm.n = f.k, a.gemm.k = f.m;
        a.gemm.trans_a = true;
        a.gemm.trans_b = f.trans_a;
        in = {dC, A};
      }
    }
    int target = op.inputs[i];
    if (is_param(target)) {
      a.gemm.accumulate = true;
      emit(op.kind, op.name + "." + what, op.layer, in, {param_grad(target)}, a);
    } else {
      int g = new_grad(target);
      emit(op.kind, op.name + "." + what, op.layer, in, {g}, a);
      add_grad(target, g, op.layer);
    }
  }

  // The transposed fp8 copy (x8ᵀ / W8ᵀ) of an fp8 cast's output, as the cast that made it wrote it.
  int fp8_transpose_of(int x8) const { return g_.op(g_.tensor(x8).producer).outputs[1]; }

  // Backward of a fp8 linear y [m,n] = x8 [m,k] · W8ᵀ (W8 [n,k]) as Transformer Engine runs it: dy is cast
  // to E5M2 with its transpose (and the bias gradient summed in the same kernel, cast_transpose_dbias), then
  // dgrad dx [m,k] = dy8 · (W8ᵀ)ᵀ and wgrad dW [n,k] += dy8ᵀ · (x8ᵀ)ᵀ — both TN, as Hopper's fp8 GEMMs need.
  // dx is the gradient of the bf16 tensor x8 was cast from (the cast's rule passes it through).
  void fp8_linear_backward(const Op& op, const Op& live, int dy) {
    const GemmAttrs& f = op.attrs.gemm;
    if (f.trans_a || !f.trans_b) throw std::logic_error("fp8 GEMM '" + op.name + "' is not a linear (x · Wᵀ)");
    const std::string y = g_.tensor(op.outputs[0]).name;
    std::vector<int> cast_out = {ctx_.activation("grad." + y + ".fp8", {f.m, f.n}, op.layer, DType::f8e5m2),
                                 ctx_.activation("grad." + y + ".fp8_t", {f.n, f.m}, op.layer, DType::f8e5m2),
                                 ctx_.activation("grad." + y + ".amax", {1}, op.layer, DType::f32)};
    if (f.has_bias && wants(op, 2)) cast_out.push_back(param_grad(op.inputs[2]));
    OpAttrs c;
    c.rows = f.m;
    c.cols = f.n;
    emit(OpKind::fp8_cast_transpose, op.name + ".grad_cast", op.layer, {dy}, cast_out, c);
    OpAttrs a;
    a.gemm.fp8 = true;
    a.gemm.trans_b = true;
    if (wants(op, 0)) {
      a.gemm.m = f.m, a.gemm.n = f.k, a.gemm.k = f.n;
      int dx = new_grad(op.inputs[0]);
      emit(OpKind::gemm, op.name + ".dgrad", op.layer, {cast_out[0], fp8_transpose_of(live.inputs[1])}, {dx}, a);
      add_grad(op.inputs[0], dx, op.layer);
    }
    if (wants(op, 1)) {
      const int weight = g_.op(g_.tensor(op.inputs[1]).producer).inputs[0];
      a.gemm.m = f.n, a.gemm.n = f.k, a.gemm.k = f.m;
      a.gemm.accumulate = true;
      emit(OpKind::gemm, op.name + ".wgrad", op.layer, {cast_out[1], fp8_transpose_of(live.inputs[0])},
           {param_grad(weight)}, a);
    }
  }

  // Single-input elementwise rule: dx = kind(dy, saved...) into a new gradient of input 0.
  void unary(const Op& op, OpKind kind, std::vector<int> inputs) {
    if (!wants(op, 0)) return;
    int g = new_grad(op.inputs[0]);
    emit(kind, op.name, op.layer, std::move(inputs), {g}, op.attrs);
    add_grad(op.inputs[0], g, op.layer);
  }

  // ---- the rules ----
  void backward_of(const Op& op) {
    auto found = grad_.find(op.outputs[0]);
    if (found == grad_.end()) return;  // output does not influence the loss
    int dy = found->second;
    if (o_.tp_grad_reduce.count(op.outputs[0]) && o_.tensor_parallel > 1) {
      // Megatron "f": the gradient entering the tensor-parallel region is summed over the TP group.
      OpAttrs a;
      a.comm.group = CommGroup::tensor_parallel;
      a.comm.group_size = o_.tensor_parallel;
      a.comm.bytes = static_cast<double>(g_.tensor(dy).bytes());
      int reduced = new_grad(op.outputs[0]);
      emit(OpKind::all_reduce, g_.tensor(op.outputs[0]).name + ".tp_grad_all_reduce", op.layer, {dy}, {reduced}, a);
      dy = reduced;
    }
    Op live = op;  // the tensors to read: recomputed copies where they exist
    live.inputs = remapped(op.inputs);
    live.outputs = remapped(op.outputs);

    switch (op.kind) {
      case OpKind::gemm:
        if (op.attrs.gemm.fp8) {
          fp8_linear_backward(op, live, dy);
          break;
        }
        [[fallthrough]];
      case OpKind::batched_gemm:
        gemm_operand_grad(op, live, 0, dy, "dA");
        gemm_operand_grad(op, live, 1, dy, "dB");
        if (op.attrs.gemm.has_bias && wants(op, 2)) {
          OpAttrs a;
          a.rows = op.attrs.gemm.m;
          a.cols = op.attrs.gemm.n;
          emit(OpKind::bias_grad, op.name + ".dbias", op.layer, {dy}, {param_grad(op.inputs[2])}, a);
        }
        break;
      case OpKind::embedding:
        emit(OpKind::embedding_backward, op.name, op.layer, {dy, live.inputs[1]}, {param_grad(op.inputs[0])}, op.attrs);
        break;
      case OpKind::add:
        for (size_t i = 0; i < op.inputs.size(); ++i)
          if (wants(op, i)) add_grad(op.inputs[i], dy, op.layer);
        break;
      case OpKind::layernorm: {
        int dx = new_grad(op.inputs[0]);
        emit(OpKind::layernorm_backward, op.name, op.layer,
             {dy, live.inputs[0], live.inputs[1], live.outputs[1], live.outputs[2]},
             {dx, param_grad(op.inputs[1]), param_grad(op.inputs[2])}, op.attrs);
        add_grad(op.inputs[0], dx, op.layer);
        break;
      }
      case OpKind::rmsnorm: {
        int dx = new_grad(op.inputs[0]);
        emit(OpKind::rmsnorm_backward, op.name, op.layer, {dy, live.inputs[0], live.inputs[1], live.outputs[1]},
             {dx, param_grad(op.inputs[1])}, op.attrs);
        add_grad(op.inputs[0], dx, op.layer);
        break;
      }
      case OpKind::swiglu: {  // one kernel writes both: dgate = dy·up·silu'(gate), dup = dy·silu(gate)
        const std::vector<int> grads = {new_grad(op.inputs[0]), new_grad(op.inputs[1])};
        emit(OpKind::swiglu_backward, op.name, op.layer, {dy, live.inputs[0], live.inputs[1]}, grads, op.attrs);
        for (size_t i = 0; i < 2; ++i)
          if (wants(op, i)) add_grad(op.inputs[i], grads[i], op.layer);
        break;
      }
      case OpKind::rotary_embedding: unary(op, OpKind::rotary_embedding_backward, {dy}); break;
      case OpKind::repeat_kv: unary(op, OpKind::repeat_kv_backward, {dy}); break;
      case OpKind::softmax: unary(op, OpKind::softmax_backward, {dy, live.outputs[0]}); break;
      case OpKind::fused_attention: {
        std::vector<int> inputs = {dy, live.inputs[0], live.inputs[1], live.inputs[2], live.outputs[0], live.outputs[1]};
        if (op.inputs.size() > 3) inputs.push_back(live.inputs[3]);
        const std::vector<int> grads = {new_grad(op.inputs[0]), new_grad(op.inputs[1]), new_grad(op.inputs[2])};
        emit(OpKind::fused_attention_backward, op.name, op.layer, inputs, grads, op.attrs);
        for (size_t i = 0; i < 3; ++i) add_grad(op.inputs[i], grads[i], op.layer);
        break;
      }
      case OpKind::dropout: unary(op, OpKind::dropout_backward, {dy, live.outputs[1]}); break;
      case OpKind::softmax_dropout:  // one kernel: through the dropout mask, then the softmax's Jacobian
        unary(op, OpKind::softmax_dropout_backward, {dy, live.outputs[1], live.outputs[2]});
        break;
      case OpKind::bias_dropout_residual: {  // dresidual = dout; dy = dout · mask / (1 − p) and its column sums
        std::vector<int> inputs = {dy};
        if (op.outputs.size() > 1) inputs.push_back(live.outputs[1]);
        const int dx = new_grad(op.inputs[0]);
        emit(OpKind::bias_dropout_residual_backward, op.name, op.layer, inputs, {dx, param_grad(op.inputs[1])}, op.attrs);
        add_grad(op.inputs[0], dx, op.layer);
        if (wants(op, 2)) add_grad(op.inputs[2], dy, op.layer);
        break;
      }
      case OpKind::gelu: unary(op, OpKind::gelu_backward, {dy, live.inputs[0]}); break;
      case OpKind::tanh: unary(op, OpKind::tanh_backward, {dy, live.outputs[0]}); break;
      case OpKind::split_heads: unary(op, OpKind::merge_heads, {dy}); break;
      case OpKind::merge_heads: unary(op, OpKind::split_heads, {dy}); break;
      case OpKind::gather_rows: unary(op, OpKind::gather_rows_backward, {dy, live.inputs[1]}); break;
      case OpKind::cross_entropy:
        unary(op, OpKind::cross_entropy_backward, {dy, live.inputs[0], live.inputs[1], live.outputs[1]});
        break;
      case OpKind::fp8_cast_transpose:  // straight through: the GEMMs' gradients are w.r.t. the bf16 source
        if (wants(op, 0)) add_grad(op.inputs[0], dy, op.layer);
        break;
      case OpKind::all_reduce:  // Megatron "g": all-reduce forward, identity backward
        if (wants(op, 0)) add_grad(op.inputs[0], dy, op.layer);
        break;
      case OpKind::all_gather:      // sequence parallel: all-gather forward, reduce-scatter backward
      case OpKind::reduce_scatter:  // and the mirror
        sequence_collective_backward(op, dy);
        break;
      default:
        throw std::logic_error(fmt::format("no gradient rule for op kind {}", to_string(op.kind)));
    }
  }

  // The gradient of a sequence-parallel all-gather is the reduce-scatter of its output's gradient, and of a
  // reduce-scatter the all-gather; the same bytes (attrs.comm), the input's shape.
  void sequence_collective_backward(const Op& op, int dy) {
    if (!wants(op, 0)) return;
    const int dx = new_grad(op.inputs[0]);
    const OpKind mirror = op.kind == OpKind::all_gather ? OpKind::reduce_scatter : OpKind::all_gather;
    emit(mirror, g_.tensor(op.inputs[0]).name + (mirror == OpKind::all_gather ? ".tp_grad_all_gather" : ".tp_grad_reduce_scatter"),
         op.layer, {dy}, {dx}, op.attrs);
    add_grad(op.inputs[0], dx, op.layer);
  }

  BuildContext& ctx_;
  TaskGraph& g_;
  const BackwardOptions& o_;
  std::set<int> requires_grad_;
  std::map<int, int> grad_;   // forward tensor id → its (current, complete once all consumers ran) gradient
  std::map<int, int> remap_;  // forward tensor id → recomputed copy
};

}  // namespace

std::map<int, int> append_backward(BuildContext& ctx, const BackwardOptions& options) {
  return Autodiff(ctx, options).run();
}

}  // namespace ptsim::models
