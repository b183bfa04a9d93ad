// models/build_context.hpp — shared helpers for the forward builder and the autodiff pass (internal).
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/checked_math.hpp"
#include "models/task_graph.hpp"

namespace ptsim::models {

// Elements of a tensor shape, with checked multiplication (InputError naming the tensor on overflow).
inline int64_t shape_elements(const std::string& name, const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n = core::checked_mul(n, d, "tensor '" + name + "' elements");
  return n;
}

struct BuildContext {
  TaskGraph& graph;
  DType act_dtype;
  bool tf32_math = false;  // GEMMs emitted run in TF32 (recipe precision tf32)

  int new_tensor(const std::string& name, std::vector<int64_t> shape, DType dtype, TensorRole role, int layer) {
    // Shapes come from user sizes (model, recipe): their products must not wrap, so every later
    // elements()/bytes() of this tensor is exact.
    core::checked_mul(shape_elements(name, shape), dtype_bytes(dtype), "tensor '" + name + "' bytes");
    Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.dtype = dtype;
    t.role = role;
    t.layer = layer;
    return graph.add_tensor(std::move(t));
  }
  int activation(const std::string& name, std::vector<int64_t> shape, int layer) {
    return new_tensor(name, std::move(shape), act_dtype, TensorRole::activation, layer);
  }
  int activation(const std::string& name, std::vector<int64_t> shape, int layer, DType dtype) {
    return new_tensor(name, std::move(shape), dtype, TensorRole::activation, layer);
  }
  // Adds an op with its cost computed from kind, attrs and tensors. Returns the op id.
  int emit(OpKind kind, const std::string& name, Phase phase, int layer, std::vector<int> inputs,
           std::vector<int> outputs, OpAttrs attrs = {});
};

struct BackwardOptions {
  int loss = -1;                 // scalar loss tensor
  int loss_grad = -1;            // input tensor holding dLoss (1/micro_steps, × loss scale)
  bool recompute = false;        // re-run each layer's forward before its backward
  bool selective_recompute = false;  // re-run only attention's core (QKᵀ, softmax, dropout, ·V) before its backward
  std::set<int> tp_grad_reduce;  // activations whose gradient is all-reduced over the tensor-parallel group
  int64_t tensor_parallel = 1;
  // Non-parameter tensors whose gradient is wanted (a pipeline chunk's received activation); with `loss` a
  // non-scalar output, `loss_grad` is its received gradient.
  std::set<int> grad_inputs;
};

// Transformer Engine's delayed scaling: after a pass (forward or backward) one fp8_scale_update folds the
// amax of every fp8 cast of that pass into its history and computes next step's scales. No op when the pass
// has no fp8 cast (models/fp8_scaling.cpp).
void append_fp8_scale_update(BuildContext& ctx, Phase phase);
// TE's default amax history (DelayedScaling amax_history_len = 1024, TE 1.x–2.x; docs/precisions.md).
constexpr int64_t kFp8AmaxHistoryLength = 1024;

// Appends backward ops for every forward op, in reverse, from per-op-kind gradient rules. Returns the
// gradient tensor of each of `options.grad_inputs` that influences the loss.
std::map<int, int> append_backward(BuildContext& ctx, const BackwardOptions& options);

}  // namespace ptsim::models
