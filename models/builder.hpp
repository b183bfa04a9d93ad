// models/builder.hpp — model + recipe → one rank's TaskGraph.
// Forward ops come from the architecture (BERT post-LN encoder + MLM/NSP heads, or GPT-2 pre-LN decoder +
// LM head); backward ops from per-op-kind gradient rules (models/autodiff.cpp); then gradient
// all-reduce buckets in the order gradients become ready, global-norm and optimizer ops.
// Tensor parallelism (Megatron) and activation recomputation are applied while building.
#pragma once
#include <vector>

#include "models/model_spec.hpp"
#include "models/recipe.hpp"
#include "models/task_graph.hpp"

namespace ptsim::models {

// Throws core::InputError when the recipe does not suit the model (e.g. seq_len > max positions,
// heads not divisible by tensor-parallel size). Without pipeline parallelism (pipeline_parallel 1).
TaskGraph build_task_graph(const ModelSpec& model, const Recipe& recipe);

// Pipeline parallelism: one graph per model chunk (P × V of them, in model order; chunk c runs on pipeline
// device c mod P), each with its layers, the embeddings on the first chunk and the heads on the last (as
// Megatron-LM places them), its own gradient buckets and optimizer tail. See TaskGraph::chunk.
std::vector<TaskGraph> build_pipeline_graphs(const ModelSpec& model, const Recipe& recipe);
// Transformer layers per model chunk: recipe.stage_layers, or the even split (InputError when the chunks
// do not divide the layers, or the list does not add up to them).
std::vector<int64_t> chunk_layers(const ModelSpec& model, const Recipe& recipe);

// Throws core::InputError when the recipe does not suit the model or what the builder simulates (what
// build_task_graph and build_pipeline_graphs check first; the planner asks it about each candidate).
void check_recipe_fits_model(const ModelSpec& model, const Recipe& recipe);

// Cost fields of an op (flops, bytes_read, bytes_written) from its kind, dtype, attributes and tensors (used by
// the builder; exposed for tests and models/micro_batch_ops.hpp).
void assign_op_cost(const TaskGraph& graph, Op& op);
// The same from the sizes alone — what the cost reads of a graph besides the op: each tensor's elements and dtype
// (by tensor id) and each parameter's elements (by index) — for a caller that knows them without the graph
// (models/micro_batch_ops.hpp: the sizes at another micro-batch). The same sizes give the same doubles.
struct OpCostSizes {
  const std::vector<int64_t>& tensor_elements;
  const std::vector<DType>& tensor_dtypes;
  const std::vector<int64_t>& param_elements;
};
void assign_op_cost(const OpCostSizes& sizes, Op& op);

}  // namespace ptsim::models
