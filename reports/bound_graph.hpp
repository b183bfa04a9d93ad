// reports/bound_graph.hpp — what the planner's step bound (reports/plan_bound) reads of a task graph or a
// pipeline chunk, for one GPU: each op's phase and kind with its time on that GPU (compute ops,
// sim::op_cost) or its collective (communication ops, timed per cluster by reports/plan_collectives), what
// the data-parallel collectives and the optimizer tail wait for, and which micro-step ops read what ZeRO-3's
// first gather gathers. A few dozen bytes an op instead of the graph's hundreds, so PredictionCache keeps it by
// (graph, GPU) across configurations that differ only in the network (a sweep's network axis), where the
// graph itself is evicted and was rebuilt for every network (docs/sweep.md, "Speed of --auto-recipe").
#pragma once
#include <map>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "models/micro_batch_ops.hpp"
#include "models/task_graph.hpp"

namespace ptsim::reports {

struct BoundOp {
  double compute_seconds = 0;  // sim::op_cost on the GPU; 0 for communication ops
  int id = -1;
  int comm = -1;               // communication ops: index into BoundGraph::comms
  models::OpKind kind = models::OpKind::gemm;
  models::Phase phase = models::Phase::forward;
};

struct BoundGraph {
  int64_t micro_steps = 1;
  std::vector<BoundOp> ops;                 // in graph order (ops[i].id == i)
  std::vector<models::CommAttrs> comms;     // each communication op's collective
  std::map<int, std::vector<int>> sources;  // what each op outside the micro-step (collectives, tail) waits for
  std::vector<int> first_gather_readers;    // micro-step ops that read an input of the first all-gather of the
                                            // communication phase (ZeRO-3's root unit), in op order
};

BoundGraph bound_graph(const models::TaskGraph& graph, const hwprofiles::GpuProfile& gpu);

// What does not depend on the micro-batch, the accumulation or the GPU: the ops' ids, kinds and phases, what the
// tail waits for and the first gather's readers; each collective as at the graph's micro-batch; no op times.
BoundGraph bound_structure(const models::TaskGraph& graph);
// The bound graph of the recipe's graph at `micro_batch` with `micro_steps` (its accumulation), from the
// structure of its graph at any micro-batch and its ops derived at this one (models/micro_batch_ops.hpp):
// equal to bound_graph() of the graph built at that micro-batch (tests/reports/test_bound_derivation.cpp).
BoundGraph bound_graph(const BoundGraph& structure, const models::MicroBatchOps& ops, int64_t micro_batch,
                       int64_t micro_steps, const hwprofiles::GpuProfile& gpu);
size_t approximate_bytes(const BoundGraph& bound);

}  // namespace ptsim::reports
