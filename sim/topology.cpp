// sim/topology.cpp — see topology.hpp. Link inventory per node (names in find_link):
//   nvswitch / nvlink_cube_mesh: gpuG.tx/.rx at nvlink_bytes_per_second (the GPU's aggregate NVLink
//     bandwidth into the node fabric); gpuG.pcie.tx/.rx at pcie_link_bytes_per_second (GPU↔NIC path
//     through its PCIe switch, GPUDirect RDMA) when that bandwidth is given.
//   pcie_tree: gpuG.tx/.rx = the GPU's PCIe link; swS.up/.down = PCIe switch uplink; host_bridge =
//     the root complex's forwarding capacity (one shared link: every pass of data between root ports
//     or to/from host memory crosses it once).
//   all: nicK.tx/.rx at line rate × achieved_fraction; host_bridge when its bandwidth is given.
//   fabric: leafL.up/.down only when oversubscription > 1 and there are several leaves.
#include "sim/topology.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/error.hpp"

namespace ptsim::sim {

using hwprofiles::IntraNodeTopology;

namespace {
// Built by appending: GCC 12 warns falsely (-Wrestrict) on "literal" + std::to_string(...).
std::string node_prefix(int node) {
  std::string s = "n";
  s += std::to_string(node);
  s += '.';
  return s;
}
}  // namespace

Topology::Topology(Network& network, ClusterSpec spec) : network_(network), spec_(std::move(spec)) {
  const auto& node = spec_.node;
  const auto& net = spec_.network;
  const std::string where = "cluster of node profile '" + node.name + "'";
  if (spec_.nodes < 1) throw core::InputError(where + ": nodes must be >= 1, got " + std::to_string(spec_.nodes));
  if (node.gpus_per_node < 1) {
    throw core::InputError(where + ": gpus_per_node must be >= 1, got " + std::to_string(node.gpus_per_node));
  }
  if (spec_.nodes > 1 && node.nics_per_node < 1) {
    throw core::InputError(where + ": a multi-node cluster needs nics_per_node >= 1");
  }
  if (spec_.nodes > 1 && !(net.link_bytes_per_second > 0 && net.achieved_fraction > 0)) {
    throw core::InputError("network profile '" + net.name +
                           "': link_bytes_per_second and achieved_fraction must be > 0");
  }
  const bool pcie_tree = node.topology == IntraNodeTopology::pcie_tree;
  if (pcie_tree && !(node.pcie_link_bytes_per_second > 0)) {
    throw core::InputError(where + ": a pcie_tree node needs pcie_link_bytes_per_second > 0");
  }
  if (!pcie_tree && node.gpus_per_node > 1 && !(node.nvlink_bytes_per_second > 0)) {
    throw core::InputError(where + ": an NVLink/NVSwitch node needs nvlink_bytes_per_second > 0");
  }
  if (!(spec_.fabric.oversubscription >= 1)) {
    throw core::InputError(where + ": fabric oversubscription must be >= 1 (1 = non-blocking)");
  }

  first_link_ = network_.link_count();
  const int g = node.gpus_per_node;
  gpus_per_switch_ = pcie_tree ? (node.gpus_per_pcie_switch > 0 ? node.gpus_per_pcie_switch : g) : g;
  const int switches = (g + gpus_per_switch_ - 1) / gpus_per_switch_;
  const int nics = std::max(node.nics_per_node, 0);
  const double gpu_bw = pcie_tree ? node.pcie_link_bytes_per_second : node.nvlink_bytes_per_second;

  auto per_node = [&](std::vector<std::vector<LinkId>>& v, int count) {
    v.assign(static_cast<std::size_t>(spec_.nodes), std::vector<LinkId>(static_cast<std::size_t>(count), -1));
  };
  per_node(gpu_tx_, g);
  per_node(gpu_rx_, g);
  per_node(pcie_tx_, g);
  per_node(pcie_rx_, g);
  per_node(switch_up_, switches);
  per_node(switch_down_, switches);
  per_node(nic_tx_, nics);
  per_node(nic_rx_, nics);
  host_bridge_.assign(static_cast<std::size_t>(spec_.nodes), -1);

  for (int n = 0; n < spec_.nodes; ++n) {
    auto un = static_cast<std::size_t>(n);
    for (int i = 0; i < g; ++i) {
      auto ui = static_cast<std::size_t>(i);
      if (gpu_bw > 0) {
        gpu_tx_[un][ui] = add(n, "gpu" + std::to_string(i) + ".tx", gpu_bw);
        gpu_rx_[un][ui] = add(n, "gpu" + std::to_string(i) + ".rx", gpu_bw);
      }
      if (!pcie_tree && node.pcie_link_bytes_per_second > 0) {
        pcie_tx_[un][ui] = add(n, "gpu" + std::to_string(i) + ".pcie.tx", node.pcie_link_bytes_per_second);
        pcie_rx_[un][ui] = add(n, "gpu" + std::to_string(i) + ".pcie.rx", node.pcie_link_bytes_per_second);
      }
    }
    if (pcie_tree) {
      for (int s = 0; s < switches; ++s) {
        switch_up_[un][static_cast<std::size_t>(s)] = add(n, "sw" + std::to_string(s) + ".up", node.pcie_link_bytes_per_second);
        switch_down_[un][static_cast<std::size_t>(s)] = add(n, "sw" + std::to_string(s) + ".down", node.pcie_link_bytes_per_second);
      }
    }
    if (node.pcie_host_bridge_bytes_per_second > 0) {
      host_bridge_[un] = add(n, "host_bridge", node.pcie_host_bridge_bytes_per_second);
    }
    if (spec_.nodes > 1) {
      for (int k = 0; k < nics; ++k) {
        nic_tx_[un][static_cast<std::size_t>(k)] = add(n, "nic" + std::to_string(k) + ".tx", nic_bytes_per_second());
        nic_rx_[un][static_cast<std::size_t>(k)] = add(n, "nic" + std::to_string(k) + ".rx", nic_bytes_per_second());
      }
    }
  }

  nodes_per_leaf_ = spec_.fabric.nodes_per_leaf > 0 ? spec_.fabric.nodes_per_leaf : spec_.nodes;
  const int leaves = (spec_.nodes + nodes_per_leaf_ - 1) / nodes_per_leaf_;
  if (leaves > 1 && spec_.fabric.oversubscription > 1) {
    double uplink = nodes_per_leaf_ * nics * nic_bytes_per_second() / spec_.fabric.oversubscription;
    for (int l = 0; l < leaves; ++l) {
      leaf_up_.push_back(add_leaf(l, "up", uplink));
      leaf_down_.push_back(add_leaf(l, "down", uplink));
    }
  }
}

LinkId Topology::add(int node, const std::string& local_name, double bandwidth) {
  LinkId id = network_.add_link(node_prefix(node) + local_name, bandwidth);
  by_name_[network_.link(id).name] = id;
  // Node 0's link with the same local name is the representative of this link's class.
  canonical_.push_back(node == 0 ? id : by_name_.at(node_prefix(0) + local_name));
  return id;
}

LinkId Topology::add_leaf(int leaf, const std::string& local_name, double bandwidth) {
  std::string name = "leaf";
  name += std::to_string(leaf);
  name += '.';
  name += local_name;
  LinkId id = network_.add_link(name, bandwidth);
  by_name_[name] = id;
  canonical_.push_back(leaf == 0 ? id : by_name_.at("leaf0." + local_name));
  return id;
}

LinkId Topology::canonical_link(LinkId link) const {
  auto i = static_cast<std::size_t>(link - first_link_);
  if (link < first_link_ || i >= canonical_.size()) return link;
  return canonical_[i];
}

LinkId Topology::find_link(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

int Topology::nic_of_local(int local) const {
  int nics = nics_per_node();
  return nics > 0 ? local * nics / gpus_per_node() : 0;
}

double Topology::nic_bytes_per_second() const {
  return spec_.network.link_bytes_per_second * spec_.network.achieved_fraction;
}

void Topology::append_to_nic(std::vector<LinkId>& out, int node, int local, int /*nic*/) const {
  auto un = static_cast<std::size_t>(node);
  auto ul = static_cast<std::size_t>(local);
  LinkId hb = host_bridge_[un];
  int host_passes = spec_.network.host_staging ? 2 : 0;  // GPU → host memory → NIC
  if (spec_.node.topology == IntraNodeTopology::pcie_tree) {
    out.push_back(gpu_tx_[un][ul]);
    out.push_back(switch_up_[un][static_cast<std::size_t>(local / gpus_per_switch_)]);
    // The NIC hangs off the root complex: GPUDirect crosses the host bridge once, staging twice.
    host_passes = std::max(host_passes, 1);
  } else if (pcie_tx_[un][ul] >= 0) {
    out.push_back(pcie_tx_[un][ul]);
  }
  if (hb >= 0) {
    for (int i = 0; i < host_passes; ++i) out.push_back(hb);
  }
}

void Topology::append_from_nic(std::vector<LinkId>& out, int node, int local, int /*nic*/) const {
  auto un = static_cast<std::size_t>(node);
  auto ul = static_cast<std::size_t>(local);
  LinkId hb = host_bridge_[un];
  const bool pcie_tree = spec_.node.topology == IntraNodeTopology::pcie_tree;
  int host_passes = spec_.network.host_staging ? 2 : (pcie_tree ? 1 : 0);
  if (hb >= 0) {
    for (int i = 0; i < host_passes; ++i) out.push_back(hb);
  }
  if (pcie_tree) {
    out.push_back(switch_down_[un][static_cast<std::size_t>(local / gpus_per_switch_)]);
    out.push_back(gpu_rx_[un][ul]);
  } else if (pcie_rx_[un][ul] >= 0) {
    out.push_back(pcie_rx_[un][ul]);
  }
}

Route Topology::route(int src_rank, int dst_rank, int channel) const {
  Route r;
  if (src_rank < 0 || dst_rank < 0 || src_rank >= gpu_count() || dst_rank >= gpu_count()) {
    throw core::InputError("rank out of range: " + std::to_string(src_rank) + " -> " + std::to_string(dst_rank) +
                           " in a cluster of " + std::to_string(gpu_count()) + " GPUs");
  }
  if (src_rank == dst_rank) return r;
  const int sn = node_of(src_rank), dn = node_of(dst_rank);
  const int sl = local_of(src_rank), dl = local_of(dst_rank);
  auto usn = static_cast<std::size_t>(sn);
  auto udn = static_cast<std::size_t>(dn);
  if (sn == dn) {
    r.latency_seconds = spec_.node.intra_node_latency_seconds;
    r.links.push_back(gpu_tx_[usn][static_cast<std::size_t>(sl)]);
    if (spec_.node.topology == IntraNodeTopology::pcie_tree) {
      int ss = sl / gpus_per_switch_, ds = dl / gpus_per_switch_;
      if (ss != ds) {  // peer-to-peer across PCIe switches goes through the root complex
        r.links.push_back(switch_up_[usn][static_cast<std::size_t>(ss)]);
        if (host_bridge_[usn] >= 0) r.links.push_back(host_bridge_[usn]);
        r.links.push_back(switch_down_[usn][static_cast<std::size_t>(ds)]);
      }
    }
    r.links.push_back(gpu_rx_[udn][static_cast<std::size_t>(dl)]);
    r.links.erase(std::remove(r.links.begin(), r.links.end(), LinkId{-1}), r.links.end());
    return r;
  }
  const int nics = nics_per_node();
  const int c = std::max(channel, 0);
  const int snic = (nic_of_local(sl) + c) % nics;
  const int dnic = (nic_of_local(dl) + c) % nics;
  r.inter_node = true;
  r.latency_seconds = spec_.network.latency_seconds;
  r.rate_cap_bytes_per_second = spec_.network.connection_cap_bytes_per_second();  // one channel's connection
  append_to_nic(r.links, sn, sl, snic);
  r.links.push_back(nic_tx_[usn][static_cast<std::size_t>(snic)]);
  if (!leaf_up_.empty()) {
    int sleaf = sn / nodes_per_leaf_, dleaf = dn / nodes_per_leaf_;
    if (sleaf != dleaf) {
      r.links.push_back(leaf_up_[static_cast<std::size_t>(sleaf)]);
      r.links.push_back(leaf_down_[static_cast<std::size_t>(dleaf)]);
    }
  }
  r.links.push_back(nic_rx_[udn][static_cast<std::size_t>(dnic)]);
  append_from_nic(r.links, dn, dl, dnic);
  r.links.erase(std::remove(r.links.begin(), r.links.end(), LinkId{-1}), r.links.end());
  return r;
}

}  // namespace ptsim::sim
