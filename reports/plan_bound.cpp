// reports/plan_bound.cpp — the planner's lower bound on a step (see the header).
#include "reports/plan_bound.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "sim/collectives.hpp"
#include "sim/compute_model.hpp"

namespace ptsim::reports {
namespace {

// A tensor-parallel all-reduce inside a pass, alone on the network over the first stage's D groups at
// once, as sim/pipeline_step charges it (ring; ranks stage·D·T + d·T + t).
double tp_all_reduce_seconds(const models::Recipe& r, const sim::ClusterConfig& config, double bytes) {
  sim::CollectiveSpec spec;
  spec.bytes = bytes;
  for (int64_t d = 0; d < r.data_parallel; ++d) {
    std::vector<int> group;
    for (int64_t t = 0; t < r.tensor_parallel; ++t) group.push_back(static_cast<int>(d * r.tensor_parallel + t));
    if (d == 0) spec.ranks = group;
    else spec.concurrent_groups.push_back(group);
  }
  spec.algorithm = sim::CollectiveAlgorithm::ring;
  spec.channels = config.effective_channels();
  spec.mode = config.mode;
  return sim::simulate_collective(config.cluster, spec).duration_seconds();
}

}  // namespace

// Without a pipeline: the GPU's op times (no communication). With one, from the passes as
// sim/pipeline_step times them (op times plus tensor-parallel all-reduces; sends and data-parallel
// reductions left out), for every device k: its passes (M micro-batches of its chunks) cannot start before
// micro-batch 0 has gone forward through chunks 0 … k−1, and its last backward is followed by that
// micro-batch's backward through chunks k−1 … 0 — so the step is at least Σ_{g<k} (forward + backward of
// chunk g) + its own passes; and at least its own passes + its optimizer tail. For equal stages the first
// is (M + P − 1) passes: the pipeline bubble.
double step_lower_bound_seconds(const models::ModelSpec& model, const models::Recipe& r,
                                const sim::ClusterConfig& config, PredictionCache& cache) {
  if (r.pipeline_parallel == 1) return cache.single_device(model, r, config.gpu).step_seconds;
  const auto pipeline = cache.pipeline(model, r);
  const size_t P = static_cast<size_t>(r.pipeline_parallel);
  const double M = static_cast<double>(r.grad_accum);
  std::map<double, double> tp_seconds;  // by message size
  std::vector<double> passes(P, 0), tail(P, 0), chunk_pass(pipeline->chunks.size(), 0);
  for (size_t g = 0; g < pipeline->chunks.size(); ++g) {
    for (const models::Op& op : pipeline->chunks[g].ops) {
      const bool comm = models::is_communication(op.kind);
      if (models::is_micro_step_phase(op.phase)) {
        if (!comm) chunk_pass[g] += sim::op_cost(op, config.gpu).seconds;
        else if (auto it = tp_seconds.find(op.attrs.comm.bytes); it != tp_seconds.end()) chunk_pass[g] += it->second;
        else chunk_pass[g] += tp_seconds[op.attrs.comm.bytes] = tp_all_reduce_seconds(r, config, op.attrs.comm.bytes);
      } else if (!comm) {
        tail[g % P] += sim::op_cost(op, config.gpu).seconds;
      }
    }
    passes[g % P] += M * chunk_pass[g];
  }
  double bound = 0, before = 0;
  for (size_t k = 0; k < P; ++k) {
    bound = std::max({bound, before + passes[k], passes[k] + tail[k]});
    before += chunk_pass[k];
  }
  return bound;
}

}  // namespace ptsim::reports
