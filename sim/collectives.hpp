// sim/collectives.hpp — NCCL-style collectives decomposed into steps of concurrent flows on a
// Topology's network: ring (one ring per channel), double binary tree (chunked, pipelined),
// hierarchical (intra-node reduce-scatter → inter-node all-reduce → intra-node all-gather),
// pipelined broadcast, send/recv; and `automatic`, which simulates the candidates on an idle copy of
// the cluster and picks the fastest. Exact mode simulates every flow; replicated mode simulates one
// flow per symmetry class (node translation) with multiplicity — exact for ring, hierarchical,
// broadcast and send/recv on symmetric clusters; the tree is not node-symmetric and always runs
// exact. Model: docs/network-model.md.
// Not here: when collectives run in a training step (the schedule), or link sharing (sim/network).
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "sim/topology.hpp"

namespace ptsim::sim {

enum class CollectiveKind { all_reduce, reduce_scatter, all_gather, broadcast, send_recv };
enum class CollectiveAlgorithm { automatic, ring, tree, hierarchical };
enum class SimulationMode { exact, replicated };

// NCCL's Simple protocol moves data in slots of NCCL_BUFFSIZE / NCCL_STEPS = 4 MiB / 8 = 512 KiB.
inline constexpr double kDefaultChunkBytes = 512.0 * 1024.0;

struct CollectiveSpec {
  CollectiveKind kind = CollectiveKind::all_reduce;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic;
  // Buffer size per rank in bytes, NCCL's convention: all_reduce / broadcast / send_recv: the buffer;
  // reduce_scatter: the input (each rank keeps bytes/p); all_gather: the output (each gives bytes/p).
  double bytes = 0;
  // Global GPU ranks in ring order (send_recv: {src, dst}; broadcast: the root is ranks[root_index]).
  std::vector<int> ranks;
  // Other groups running the same collective at the same time (e.g. the data-parallel groups of the
  // other tensor-parallel slices); same size as `ranks`. They share links with `ranks`.
  std::vector<std::vector<int>> concurrent_groups;
  int channels = 1;  // NCCL channels: one ring (or tree pair) each, spread over the node's NICs
  double chunk_bytes = kDefaultChunkBytes;  // pipelining unit for tree and broadcast
  int root_index = 0;
  SimulationMode mode = SimulationMode::exact;
};

struct CollectiveResult {
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;  // the one that ran (automatic resolved)
  double start_seconds = 0;
  double finish_seconds = 0;
  double duration_seconds() const { return finish_seconds - start_seconds; }
  long steps = 0;            // pipeline steps, counting repeats
  long flows_started = 0;    // flow objects given to the network (replicated: one per class)
};

// One transfer of a step: src → dst, `bytes`, over NIC channel `channel`.
struct Transfer {
  int src_rank = 0;
  int dst_rank = 0;
  double bytes = 0;
  int channel = 0;
};
// A step: transfers that run concurrently; the next step starts when all have completed.
// `repeat` identical steps run back to back (a ring's 2(p−1) steps, a pipeline's steady state).
struct CollectiveStep {
  std::vector<Transfer> transfers;
  long repeat = 1;
};

// The decomposition of `spec` with a concrete algorithm (not automatic), over all its groups.
// Throws std::invalid_argument for an unsupported combination (e.g. tree reduce_scatter) or bad ranks.
std::vector<CollectiveStep> plan_collective(const Topology& topology, const CollectiveSpec& spec,
                                            CollectiveAlgorithm algorithm);

// A collective decomposed into flow specs, ready to run many times (e.g. the same gradient bucket
// every step): preparing costs route lookups and, in replicated mode, the symmetry grouping; running
// costs only the simulation. Valid on the Topology (and Network) it was prepared for.
struct PreparedCollective {
  struct Step {
    std::vector<std::shared_ptr<const FlowSpec>> flows;
    long repeat = 1;
  };
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::ring;  // automatic already resolved
  SimulationMode mode = SimulationMode::exact;                // what ran (the tree is always exact)
  std::vector<Step> steps;
};
std::shared_ptr<const PreparedCollective> prepare_collective(Topology& topology, const CollectiveSpec& spec);
// `alone_on_network`: the caller guarantees that no other flow starts on `network` until this collective
// finishes; repeated steps that ran on an idle network are then fast-forwarded (same result, fewer events).
CollectiveResult run_prepared_collective(Network& network, std::shared_ptr<const PreparedCollective> prepared,
                                         double start_seconds, std::function<void(const CollectiveResult&)> on_done,
                                         bool alone_on_network = false);

// Starts the collective at `start_seconds` (>= engine now) on topology.network(); `on_done` runs from
// the engine when the last step completes. Returns at once; the returned result has the algorithm
// and start time (finish is known only in `on_done`). Run the engine to make progress.
CollectiveResult run_collective(Topology& topology, const CollectiveSpec& spec, double start_seconds,
                                std::function<void(const CollectiveResult&)> on_done);

// Convenience: builds an idle engine + network + topology for `cluster`, runs one collective from
// t = 0, and returns its result.
CollectiveResult simulate_collective(const ClusterSpec& cluster, const CollectiveSpec& spec);

// `automatic`: ranks within one node, or a kind other than all_reduce → ring; otherwise the fastest
// of ring, tree and hierarchical (over whole nodes), each simulated alone on an idle copy of the
// cluster in replicated mode. The tree is a candidate only up to 4,096 flows per pipeline step
// (≈ 4 · ranks · groups · channels), because it cannot be replicated. Not cached: a caller that
// asks often for the same shape should keep the answer (or a PreparedCollective).
CollectiveAlgorithm choose_algorithm(const Topology& topology, const CollectiveSpec& spec);

const char* to_string(CollectiveKind kind);
const char* to_string(CollectiveAlgorithm algorithm);

// Tree shapes used by the tree algorithm (exposed for alpha_beta and tests): the parent position of
// each of p positions (-1 for the root) in NCCL's double binary tree (ncclGetDtree): the first tree,
// or the second (mirror of the first for even p, shifted by one for odd p).
std::vector<int> binary_tree_parents(int p, bool second);

}  // namespace ptsim::sim
