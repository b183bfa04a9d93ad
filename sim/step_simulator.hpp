// sim/step_simulator.hpp — one optimizer step of a TaskGraph on a cluster, through the discrete-event
// engine: each rank has a compute stream (the body ops × micro-steps, then the optimizer tail; Megatron
// tensor-parallel all-reduces block it) and a communication stream (gradient-bucket all-reduces, started
// as soon as a bucket's gradients are final in the last micro-step, one at a time, overlapping the rest of
// backward). Optimizer updates wait for their bucket's all-reduce; LAMB's global norm waits for all.
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
};

class CollectiveCache;

// Throws core::InputError if the graph's dp × tp does not match the cluster's GPU count or tp does not
// fit in a node. `cache` (optional) shares algorithm choices and alone-on-network all-reduce durations
// with other simulations of the same cluster (sim/collective_cache.hpp).
StepSimulation simulate_step(const models::TaskGraph& graph, const ClusterConfig& config, bool record_timeline = false,
                             CollectiveCache* cache = nullptr);

}  // namespace ptsim::sim
