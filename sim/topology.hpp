// sim/topology.hpp — builds the links of a cluster (N nodes of one NodeProfile, one NetworkProfile,
// a leaf-spine fabric) into a Network, and answers "which links does rank a → rank b cross".
// Ranks are global GPU ranks: node * gpus_per_node + local.
// Not here: how collectives use the routes (sim/collectives). Model: docs/network-model.md "Topologies".
#pragma once
#include <map>
#include <string>
#include <vector>

#include "hwprofiles/profiles.hpp"
#include "sim/network.hpp"

namespace ptsim::sim {

struct FabricConfig {
  // Nodes under one leaf switch; 0 = every node under one leaf (no leaf uplinks are modelled).
  int nodes_per_leaf = 0;
  // Leaf downlink : uplink capacity. 1 = non-blocking (uplinks are not modelled: a non-blocking
  // leaf-spine never limits a NIC-bound flow). > 1 adds one up and one down link per leaf with
  // capacity nodes_per_leaf × nics_per_node × NIC bandwidth / oversubscription.
  double oversubscription = 1.0;
};

struct ClusterSpec {
  hwprofiles::NodeProfile node;
  hwprofiles::NetworkProfile network;
  int nodes = 1;
  FabricConfig fabric;
};

// What a transfer from one rank to another crosses.
struct Route {
  std::vector<LinkId> links;
  double rate_cap_bytes_per_second = 0;  // per-flow transport cap (TCP socket), 0 = none
  double latency_seconds = 0;            // per-message latency of the path (intra-node or network)
  bool inter_node = false;
};

class Topology {
 public:
  // Adds this cluster's links to `network`. Throws core::InputError for an inconsistent spec
  // (e.g. nodes > 1 without NICs, a pcie_tree node without PCIe bandwidths).
  Topology(Network& network, ClusterSpec spec);

  Network& network() { return network_; }
  const ClusterSpec& spec() const { return spec_; }
  int node_count() const { return spec_.nodes; }
  int gpus_per_node() const { return spec_.node.gpus_per_node; }
  int gpu_count() const { return spec_.nodes * spec_.node.gpus_per_node; }
  int node_of(int rank) const { return rank / gpus_per_node(); }
  int local_of(int rank) const { return rank % gpus_per_node(); }
  int nics_per_node() const { return spec_.node.nics_per_node; }
  // The node-local NIC GPU `local` uses by default: local * nics / gpus (NCCL's GPU↔NIC affinity).
  int nic_of_local(int local) const;
  // Effective NIC bandwidth: line rate × achieved_fraction (bytes/s, one direction).
  double nic_bytes_per_second() const;

  // Route of a transfer src → dst. `channel` picks the NIC for inter-node transfers: NCCL spreads its
  // channels (rings/trees) over the node's NICs, so channel c uses NIC (nic_of_local + c) mod nics.
  Route route(int src_rank, int dst_rank, int channel = 0) const;

  // Symmetry used by replicated simulation: the link of node 0 (or leaf 0) that plays the same role
  // as `link` in its node (leaf). Node translation maps a symmetric collective onto itself.
  // Links not built by this topology map to themselves.
  LinkId canonical_link(LinkId link) const;

  // Looks a link up by name (names: "n3.gpu2.tx", "n3.nic0.rx", "n3.host_bridge", "n3.sw1.up",
  // "n3.gpu2.pcie.tx", "leaf1.up"); -1 if absent. For tests and reports.
  LinkId find_link(const std::string& name) const;

 private:
  LinkId add(int node, const std::string& local_name, double bandwidth);
  LinkId add_leaf(int leaf, const std::string& local_name, double bandwidth);
  void append_to_nic(std::vector<LinkId>& out, int node, int local, int nic) const;
  void append_from_nic(std::vector<LinkId>& out, int node, int local, int nic) const;

  Network& network_;
  ClusterSpec spec_;
  std::vector<LinkId> canonical_;  // indexed by LinkId (links of this topology only)
  LinkId first_link_ = 0;
  std::map<std::string, LinkId> by_name_;
  // Per node (index [node][i]); -1 where a link does not exist.
  std::vector<std::vector<LinkId>> gpu_tx_, gpu_rx_, pcie_tx_, pcie_rx_, switch_up_, switch_down_;
  std::vector<std::vector<LinkId>> nic_tx_, nic_rx_;
  std::vector<LinkId> host_bridge_;
  std::vector<LinkId> leaf_up_, leaf_down_;
  int gpus_per_switch_ = 1;
  int nodes_per_leaf_ = 1;
};

}  // namespace ptsim::sim
