// models/micro_batch_scaling.hpp — the checks shared by the two derivations from a graph's builds at micro-batch
// 1 and 2 (models/micro_batch_memory.hpp: memory totals; models/micro_batch_ops.hpp: op costs): the two graphs
// have the same structure, and how a tensor's dimensions change from one to the other.
#pragma once
#include "models/task_graph.hpp"

namespace ptsim::models {

// The same ops (ids, kinds, phases, inputs, outputs) over the same tensors (ids, roles, dtypes, producers,
// ranks): what does not depend on the micro-batch.
inline bool same_structure(const TaskGraph& a, const TaskGraph& b) {
  if (a.ops.size() != b.ops.size() || a.tensors.size() != b.tensors.size()) return false;
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const Op &x = a.ops[i], &y = b.ops[i];
    if (x.id != y.id || x.kind != y.kind || x.phase != y.phase || x.inputs != y.inputs || x.outputs != y.outputs)
      return false;
  }
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const Tensor &x = a.tensors[i], &y = b.tensors[i];
    if (x.id != y.id || x.role != y.role || x.dtype != y.dtype || x.producer != y.producer ||
        x.shape.size() != y.shape.size())
      return false;
  }
  return true;
}

// 0: the tensor's dimensions are the same at micro-batch 1 and 2; 1: exactly one of them doubles (the
// micro-batch's); -1: anything else (not derivable).
inline int micro_batch_dimensions(const Tensor& at_one, const Tensor& at_two) {
  int doubled = 0;
  for (size_t d = 0; d < at_one.shape.size(); ++d) {
    if (at_two.shape[d] == at_one.shape[d]) continue;
    if (at_two.shape[d] != 2 * at_one.shape[d]) return -1;
    ++doubled;
  }
  return doubled <= 1 ? doubled : -1;
}

}  // namespace ptsim::models
