// reports/plan_bound.cpp — the planner's lower bound on a step (see the header; each term: docs/planning.md).
#include "reports/plan_bound.hpp"

#include <algorithm>
#include <map>

#include "reports/bound_graph.hpp"

namespace ptsim::reports {
namespace {

// One micro-step of the compute stream, as every step simulator runs it: the body ops back to back, a
// tensor-parallel collective blocking the stream (timed alone). start[id], end[id]: when body op `id` starts
// and ends, from the micro-step's start; micro: the whole micro-step.
struct BodyTimes {
  std::map<int, double> start, end;
  double micro = 0;
};

// A bound op's seconds: its compute time on the GPU, or its collective alone on the cluster at `stage`.
double op_seconds(const BoundGraph& g, const BoundOp& op, const models::Recipe& r, AloneCollectives& collectives,
                  int stage) {
  return op.comm >= 0 ? collectives.op_seconds(r, op.kind, g.comms[static_cast<size_t>(op.comm)], stage)
                      : op.compute_seconds;
}

BodyTimes body_times(const BoundGraph& g, const models::Recipe& r, AloneCollectives& collectives) {
  BodyTimes out;
  for (const BoundOp& op : g.ops) {
    if (!models::is_micro_step_phase(op.phase)) continue;
    const double s = op_seconds(g, op, r, collectives, 0);
    out.start[op.id] = out.micro;
    out.micro += s;
    out.end[op.id] = out.micro;
  }
  return out;
}

// sim/step_simulator: the compute stream runs micro-steps 0 … M−2 without waiting for data-parallel traffic
// (there is none, or under ZeRO-2 their reduce-scatters run beside it), so the last starts at (M − 1) body
// times or later (ZeRO-2's earlier reduce-scatters can only delay the last one's: left out, still a bound); each data-parallel collective (one at a time, in graph order, on the communication stream)
// starts after the ops it reads have run in the last micro-step — a body op, an earlier collective, or under
// ZeRO an update — and the tail (in order, on the compute stream after the body) runs each update after the
// collectives it reads. Every start and end below is a lower bound of the simulated one, given lower bounds
// of what it waits for; iterating only raises them, so three rounds are as safe as a fixed point.
double data_parallel_step_bound(const BoundGraph& g, const models::Recipe& r, AloneCollectives& collectives) {
  const BodyTimes body = body_times(g, r, collectives);
  const double M = static_cast<double>(g.micro_steps), last_micro = (M - 1) * body.micro;
  std::map<int, double> end;  // lower bounds of when a collective or tail op ends
  double comm_end = 0, tail_end = M * body.micro;
  for (int round = 0; round < 3; ++round) {
    comm_end = 0;
    for (const BoundOp& op : g.ops) {
      if (op.phase != models::Phase::communication) continue;
      double ready = comm_end;
      for (int dep : g.sources.at(op.id)) {
        if (auto it = body.end.find(dep); it != body.end.end()) ready = std::max(ready, last_micro + it->second);
        else if (auto it2 = end.find(dep); it2 != end.end()) ready = std::max(ready, it2->second);
      }
      comm_end = end[op.id] = ready + op_seconds(g, op, r, collectives, 0);
    }
    tail_end = M * body.micro;
    for (const BoundOp& op : g.ops) {
      if (models::is_micro_step_phase(op.phase) || op.phase == models::Phase::communication) continue;
      for (int dep : g.sources.at(op.id))
        if (g.ops[static_cast<size_t>(dep)].phase == models::Phase::communication)
          tail_end = std::max(tail_end, end[dep]);
      tail_end = end[op.id] = tail_end + op.compute_seconds;  // a communication op's is 0
    }
  }
  return std::max(comm_end, tail_end);
}

// sim/sharded_step (ZeRO-3): the step's first gather has nothing to overlap — the first body op that reads
// its parameters waits for it — and then every micro-step's body and the tail follow on the compute stream;
// and the communication stream runs every gather, reduce-scatter (and hybrid replica all-reduce) of every
// micro-step one at a time.
double sharded_step_bound(const BoundGraph& g, const models::Recipe& r, AloneCollectives& collectives) {
  const BodyTimes body = body_times(g, r, collectives);
  const double M = static_cast<double>(g.micro_steps);
  double tail = 0, comm = 0, first_gather = -1, before_gate = body.micro;
  for (const BoundOp& op : g.ops) {
    if (op.phase == models::Phase::communication) {
      const double s = op_seconds(g, op, r, collectives, 0);
      comm += s;
      if (first_gather < 0 && op.kind == models::OpKind::all_gather) {
        first_gather = s;
        for (int reader : g.first_gather_readers)  // the compute before the first op that reads what it gathers
          before_gate = std::min(before_gate, body.start.at(reader));
      }
    } else if (!models::is_micro_step_phase(op.phase)) {
      tail += op.compute_seconds;  // a communication op's is 0
    }
  }
  const double first = std::max(before_gate, std::max(first_gather, 0.0)) + (body.micro - before_gate);
  return std::max(first + (M - 1) * body.micro + tail, M * comm);
}

// sim/pipeline_step, from each chunk's forward and backward pass (op times plus tensor-parallel collectives
// alone), for device k: its M passes start after micro-batch 0's forward through chunks 0 … k−1, and after
// device j's last backward (j ≥ k) that micro-batch's backward runs through chunks j−1 … k, so device k's last
// backward ends at or after Σ_{g<j} fwd(g) + passes(j) + Σ_{k≤g<j} bwd(g). Then the stage reduces its gradients
// over its data-parallel group, one bucket at a time, and runs its optimizer tail (under ZeRO-1 also its
// parameter gathers, which start after the reductions): with equal stages and no data parallelism the bound
// is (M + P − 1) passes and the tail — the pipeline bubble. With the recipe's overlap options
// (docs/parallelism.md, "Overlapping the data-parallel communication with the pipeline") the reductions and
// gathers are left out of the sum: they may hide behind the passes.
double pipeline_step_bound(const std::vector<BoundGraph>& chunks, const models::Recipe& r,
                           AloneCollectives& collectives) {
  const size_t P = static_cast<size_t>(r.pipeline_parallel);
  const double M = static_cast<double>(r.grad_accum);
  std::vector<double> fwd(chunks.size(), 0), bwd(chunks.size(), 0);
  std::vector<double> passes(P, 0), tail(P, 0), reduce(P, 0), gather(P, 0);
  for (size_t c = 0; c < chunks.size(); ++c) {
    const size_t k = c % P;
    for (const BoundOp& op : chunks[c].ops) {
      if (models::is_micro_step_phase(op.phase)) {
        (op.phase == models::Phase::forward ? fwd : bwd)[c] += op_seconds(chunks[c], op, r, collectives, 0);
      } else if (op.phase == models::Phase::communication) {
        (op.kind == models::OpKind::all_gather ? gather : reduce)[k] +=
            op_seconds(chunks[c], op, r, collectives, static_cast<int>(k));
      } else if (op.comm < 0) {
        tail[k] += op.compute_seconds;
      }
    }
    passes[k] += M * (fwd[c] + bwd[c]);
  }
  double bound = 0;
  for (size_t k = 0; k < P; ++k) {
    double last_backward = 0, forward_before = 0, backward_between = 0;
    for (size_t g = 0; g < k; ++g) forward_before += fwd[g];
    for (size_t j = k; j < P; ++j) {
      last_backward = std::max(last_backward, forward_before + passes[j] + backward_between);
      forward_before += fwd[j];
      backward_between += bwd[j];
    }
    // overlap_grad_reduce: the buckets may be reduced during the last backward (only the tail waits for its
    // end); overlap_param_gather: the gathers run before the forwards, not after the tail.
    const double reduce_after = r.overlap_grad_reduce ? 0.0 : reduce[k];
    const double tail_after = r.overlap_param_gather ? tail[k] : std::max(tail[k], gather[k]);
    bound = std::max(bound, last_backward + reduce_after + tail_after);
  }
  return bound;
}

}  // namespace

double step_lower_bound_seconds(const models::ModelSpec& model, const models::Recipe& r,
                                const sim::ClusterConfig& config, PredictionCache& cache, AloneCollectives& collectives) {
  const auto bound = cache.bound_graphs(model, r, config.gpu);
  if (r.pipeline_parallel > 1) return pipeline_step_bound(*bound, r, collectives);
  if (r.zero_stage >= 3 && r.data_parallel > 1) return sharded_step_bound(bound->front(), r, collectives);
  return data_parallel_step_bound(bound->front(), r, collectives);
}

double step_lower_bound_seconds(const models::ModelSpec& model, const models::Recipe& r,
                                const sim::ClusterConfig& config, PredictionCache& cache) {
  AloneCollectives collectives(config);
  return step_lower_bound_seconds(model, r, config, cache, collectives);
}

}  // namespace ptsim::reports
