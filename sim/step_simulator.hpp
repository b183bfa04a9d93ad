// sim/step_simulator.hpp — one optimizer step of a TaskGraph on a cluster, through the discrete-event
// engine: each rank has a compute stream (the body ops × micro-steps, then the optimizer tail; Megatron
// tensor-parallel all-reduces block it) and a communication stream (gradient-bucket all-reduces, started
// as soon as a bucket's gradients are final in the last micro-step, one at a time, overlapping the rest of
// backward; ZeRO stage 2's reduce-scatters run in every micro-step, docs/parallelism.md). Optimizer updates
// wait for their bucket's all-reduce; LAMB's global norm waits for all.
// All data-parallel replicas are identical, so one compute timeline stands for every rank; collectives run
// over every group on the flow-level network, either replicated (one flow per symmetry class, with
// multiplicity) or exact (every flow). Model: docs/cluster-simulation.md.
#pragma once
#include <algorithm>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "models/task_graph.hpp"
#include "sim/collectives.hpp"
#include "sim/pipeline_schedule.hpp"
#include "sim/topology.hpp"

namespace ptsim::sim {

struct ClusterConfig {
  ClusterSpec cluster;                 // nodes of one node profile, a network, a fabric
  hwprofiles::GpuProfile gpu;
  CollectiveAlgorithm data_parallel_algorithm = CollectiveAlgorithm::automatic;
  int channels = 0;                    // NCCL channels per collective; 0 = one per NIC (at least 2)
  SimulationMode mode = SimulationMode::replicated;
  int gpu_count() const { return cluster.nodes * cluster.node.gpus_per_node; }
  // The channels a collective uses: `channels`, or one per NIC and at least 2 (NCCL's default shape).
  int effective_channels() const { return channels > 0 ? channels : std::max(2, cluster.node.nics_per_node); }
};

enum class Stream { compute, communication };

struct TimelineSpan {
  int op = -1;
  int micro_step = 0;
  Stream stream = Stream::compute;
  double start_seconds = 0;
  double end_seconds = 0;
  int chunk = 0;   // pipeline: the model chunk's graph `op` belongs to (0 without a pipeline)
  int stage = 0;   // pipeline: the device (stage) it ran on
};

// A pipeline stage's share of the step (sim/pipeline_step.hpp).
struct StageTiming {
  int stage = 0;
  double compute_seconds = 0;            // compute ops of its forward/backward passes and its optimizer tail
  double blocking_comm_seconds = 0;      // tensor-parallel all-reduces inside its passes
  double busy_seconds = 0;               // time in forward/backward passes (compute + blocking TP)
  double idle_seconds = 0;               // its bubble: pipeline flush span − busy
  double last_backward_end_seconds = 0;
  double data_parallel_comm_seconds = 0; // gradient all-reduces (and the tied-embedding one)
  double finish_seconds = 0;             // its optimizer's end
};

struct StepSimulation {
  double iteration_seconds = 0;        // one optimizer step, first op start to last op end
  double compute_seconds = 0;          // busy time of the compute stream on compute ops
  double blocking_comm_seconds = 0;    // tensor-parallel all-reduces on the compute stream
  double data_parallel_comm_seconds = 0;  // busy time of the communication stream
  double exposed_comm_seconds = 0;     // iteration − compute: what communication adds to the step
  std::string data_parallel_algorithm; // what `automatic` resolved to ("" without data parallelism)
  long flows_started = 0;
  std::vector<TimelineSpan> timeline;  // filled when asked (for --trace)
  // Pipeline parallelism (sim/pipeline_step.hpp); one stage and no bubble without it.
  int pipeline_stages = 1;
  double pipeline_flush_seconds = 0;   // from the step's start to the last backward pass's end
  double pipeline_bubble_fraction = 0; // 1 − Σ busy ÷ (P × flush span): emerges from the schedule
  double pipeline_bubble_seconds = 0;  // bubble fraction × flush span
  double pipeline_send_seconds = 0;    // activation and gradient sends between stages, summed over all of them
  std::vector<StageTiming> stages;
  std::vector<PipelineSpan> pipeline_timeline;  // forward/backward passes and sends (when asked)
};

class CollectiveCache;

// Throws core::InputError if the graph's dp × tp does not match the cluster's GPU count or tp does not
// fit in a node. `cache` (optional) shares algorithm choices and alone-on-network all-reduce durations
// with other simulations of the same cluster (sim/collective_cache.hpp).
StepSimulation simulate_step(const models::TaskGraph& graph, const ClusterConfig& config, bool record_timeline = false,
                             CollectiveCache* cache = nullptr);

// simulate_step with ZeRO stage 2's micro-steps all simulated one after another (no fast-forward once one
// repeats): the reference the fast-forward is tested against (tests/sim/test_zero2.cpp). Other recipes: as
// simulate_step.
StepSimulation simulate_step_every_micro_step(const models::TaskGraph& graph, const ClusterConfig& config);

// Throws core::InputError when data_parallel × tensor_parallel is not the cluster's GPU count, or tensor
// parallelism does not fit in one node (it stays inside a node): the check every data × tensor-parallel
// step simulator (this one, sim/sharded_step) makes first.
void check_data_tensor_parallel_cluster(const ClusterConfig& config, int64_t data_parallel, int64_t tensor_parallel);

// One collective over every GPU of the cluster in rank order, as a benchmark runs it (nccl-tests, `ptsim
// collective`, `ptsim calibrate nccl-tests`): channels and mode from `config`; send_recv goes from the first
// rank to the last.
CollectiveSpec whole_cluster_collective(const ClusterConfig& config, CollectiveKind kind, CollectiveAlgorithm algorithm,
                                        double bytes);

}  // namespace ptsim::sim
