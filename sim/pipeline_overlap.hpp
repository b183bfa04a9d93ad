// sim/pipeline_overlap.hpp — where, inside one pass of a pipeline chunk, its data-parallel buckets meet the
// compute (docs/parallelism.md, "Overlapping the data-parallel communication with the pipeline"): how far into
// the chunk's backward pass each gradient bucket becomes final (Megatron-LM's --overlap-grad-reduce reduces it
// then, in the last micro-batch's backward), and how far into its forward pass the first op reads each ZeRO-1
// parameter bucket (--overlap-param-gather holds that op, not the whole pass, until the bucket is gathered).
// Offsets are from the pass's start with its ops back to back, as sim/pipeline_step times a pass.
#pragma once
#include <functional>
#include <vector>

#include "models/task_graph.hpp"

namespace ptsim::sim {

struct BucketOffset {
  int op = -1;                // the bucket's communication op in the chunk's graph
  double offset_seconds = 0;  // from the pass's start
};

// How long one micro-step op of the pass takes (compute, or a tensor-parallel collective on the compute stream).
using OpSeconds = std::function<double(const models::Op&)>;

// Every gradient bucket's reduction (all-reduce or reduce-scatter; every data-parallel op but an all-gather): when the last backward op writing one of
// its gradients ends; in the order the backward makes them final.
std::vector<BucketOffset> gradient_ready_offsets(const models::TaskGraph& chunk, const OpSeconds& seconds);

// Every ZeRO-1 parameter all-gather: when the first forward op reading one of its weights starts (the pass's
// end if none does); in the order the forward first needs them.
std::vector<BucketOffset> parameter_use_offsets(const models::TaskGraph& chunk, const OpSeconds& seconds);

// The end of a pass that began at `start` and runs `seconds` of back-to-back ops, each op after `offset` held
// until `gather_end` (one pair per bucket): max(start + seconds, gather_end + seconds − offset) over the buckets.
double gated_pass_end(double start, double seconds, const std::vector<std::pair<double, double>>& offset_and_gather_end);

}  // namespace ptsim::sim
