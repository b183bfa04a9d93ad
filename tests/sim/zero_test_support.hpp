// tests/sim/zero_test_support.hpp — what the ZeRO tests (test_zero.cpp, test_zero2.cpp, test_zero3.cpp)
// share: a cluster of DGX A100 nodes with the GPU's fitted stack, and the bytes rank 0 sends in a graph's
// data-parallel collectives as the network model decomposes them (ring, 2 channels), the measure their
// volume checks use.
#pragma once
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "models/task_graph.hpp"
#include "sim/collectives.hpp"
#include "sim/event_engine.hpp"
#include "sim/network.hpp"
#include "sim/step_simulator.hpp"
#include "sim/topology.hpp"

namespace ptsim::testing {

// `nodes` DGX A100 nodes on their default network; the GPU with its one fitted software stack applied
// (docs/stacks.md), as a prediction without recipe.stack.
inline sim::ClusterConfig dgx_a100(int nodes) {
  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  sim::ClusterConfig c;
  c.cluster.node = hwprofiles::find_node(profiles, "dgx-a100");
  c.cluster.network = hwprofiles::find_network(profiles, c.cluster.node.default_network);
  c.cluster.nodes = nodes;
  c.gpu = hwprofiles::device_profile(profiles, c.cluster.node.gpu, hwprofiles::default_stack_for(profiles, c.cluster.node.gpu));
  return c;
}

// Bytes rank 0 sends in one communication-phase collective (over ranks 0 … its group size − 1), as the ring
// decomposition of the network model counts them.
inline double bytes_sent_by_rank0(const models::Op& op, sim::Topology& topology) {
  std::vector<int> ranks(static_cast<size_t>(op.attrs.comm.group_size));
  for (size_t i = 0; i < ranks.size(); ++i) ranks[i] = static_cast<int>(i);
  sim::CollectiveSpec spec;
  spec.kind = op.kind == models::OpKind::reduce_scatter ? sim::CollectiveKind::reduce_scatter
              : op.kind == models::OpKind::all_gather   ? sim::CollectiveKind::all_gather
                                                        : sim::CollectiveKind::all_reduce;
  spec.bytes = op.attrs.comm.bytes;
  spec.ranks = ranks;
  spec.channels = 2;
  double sent = 0;
  for (const auto& step : sim::plan_collective(topology, spec, sim::CollectiveAlgorithm::ring))
    for (const auto& t : step.transfers)
      if (t.src_rank == 0) sent += t.bytes * static_cast<double>(step.repeat);
  return sent;
}

// The same summed over the graph's communication-phase collectives, each once.
inline double bytes_sent_by_rank0(const models::TaskGraph& g, const sim::ClusterConfig& c) {
  sim::EventEngine engine;
  sim::Network network(engine);
  sim::Topology topology(network, c.cluster);
  double sent = 0;
  for (const auto& op : g.ops)
    if (op.phase == models::Phase::communication) sent += bytes_sent_by_rank0(op, topology);
  return sent;
}

}  // namespace ptsim::testing
