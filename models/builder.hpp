// models/builder.hpp — model + recipe → one rank's TaskGraph.
// Forward ops come from the architecture (BERT post-LN encoder + MLM/NSP heads, or GPT-2 pre-LN decoder +
// LM head); backward ops from per-op-kind gradient rules (models/autodiff.cpp); then gradient
// all-reduce buckets in the order gradients become ready, global-norm and optimizer ops.
// Tensor parallelism (Megatron) and activation recomputation are applied while building.
#pragma once
#include "models/model_spec.hpp"
#include "models/recipe.hpp"
#include "models/task_graph.hpp"

namespace ptsim::models {

// Throws core::InputError when the recipe does not suit the model (e.g. seq_len > max positions,
// heads not divisible by tensor-parallel size).
TaskGraph build_task_graph(const ModelSpec& model, const Recipe& recipe);

// Cost fields of an op from its kind, attributes and tensors (used by the builder; exposed for tests).
void assign_op_cost(const TaskGraph& graph, Op& op);

}  // namespace ptsim::models
