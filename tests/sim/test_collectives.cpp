// tests/sim/test_collectives.cpp — topologies and collective decompositions against closed-form α–β
// times (sim/alpha_beta.hpp), contention cases worked out by hand, and exact vs replicated mode.
// Profiles are built in code (hypothetical numbers chosen to make each case's bottleneck obvious;
// real profiles live in hwprofiles/). Tolerances: 1% against closed forms (the brief's bound; the
// uncontended cases agree to ~1e-9), 1e-6 where the expected number is a direct hand calculation.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "sim/alpha_beta.hpp"
#include "sim/collectives.hpp"
#include "sim/topology.hpp"

using namespace ptsim::sim;
using ptsim::hwprofiles::IntraNodeTopology;
using ptsim::hwprofiles::NetworkProfile;
using ptsim::hwprofiles::NodeProfile;
using ptsim::hwprofiles::Transport;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr double kAlphaNet = 5e-6;   // per-message network latency (s)
constexpr double kNicLine = 12.5e9;  // 100 Gb/s line rate (docs/references.md: 100 Gb = 12.5 GB/s)
constexpr double kAchieved = 0.8;
constexpr double kBetaNic = kNicLine * kAchieved;  // effective NIC bandwidth = 10 GB/s

NetworkProfile rdma_network() {
  NetworkProfile n;
  n.name = "test-rdma";
  n.link_bytes_per_second = kNicLine;
  n.achieved_fraction = kAchieved;
  n.latency_seconds = kAlphaNet;
  n.transport = Transport::rdma;
  return n;
}

// NVSwitch node: each GPU has one link into the switch; no PCIe links modelled → inter-node routes
// cross only the NICs.
NodeProfile nvswitch_node(int gpus, int nics, double nvlink = 100e9, double latency = 2e-6) {
  NodeProfile n;
  n.name = "test-nvswitch";
  n.gpus_per_node = gpus;
  n.topology = IntraNodeTopology::nvswitch;
  n.nvlink_bytes_per_second = nvlink;
  n.intra_node_latency_seconds = latency;
  n.nics_per_node = nics;
  return n;
}

// PCIe tree node (T4-server-like): 8 GPUs, 4 per switch, PCIe 3.0 x16 = 15.75 GB/s per direction
// (docs/references.md), a host bridge of `host_bridge` bytes/s, one NIC.
NodeProfile pcie_node(double host_bridge) {
  NodeProfile n;
  n.name = "test-pcie";
  n.gpus_per_node = 8;
  n.topology = IntraNodeTopology::pcie_tree;
  n.gpus_per_pcie_switch = 4;
  n.pcie_link_bytes_per_second = 15.75e9;
  n.pcie_host_bridge_bytes_per_second = host_bridge;
  n.intra_node_latency_seconds = 3e-6;
  n.nics_per_node = 1;
  return n;
}

ClusterSpec cluster(NodeProfile node, int nodes, NetworkProfile net = rdma_network()) {
  ClusterSpec c;
  c.node = std::move(node);
  c.network = std::move(net);
  c.nodes = nodes;
  return c;
}

std::vector<int> iota_ranks(int p, int first = 0) {
  std::vector<int> r(static_cast<std::size_t>(p));
  std::iota(r.begin(), r.end(), first);
  return r;
}

CollectiveSpec spec(CollectiveKind kind, CollectiveAlgorithm algo, double bytes, std::vector<int> ranks) {
  CollectiveSpec s;
  s.kind = kind;
  s.algorithm = algo;
  s.bytes = bytes;
  s.ranks = std::move(ranks);
  return s;
}

double seconds(const ClusterSpec& c, const CollectiveSpec& s) { return simulate_collective(c, s).duration_seconds(); }

}  // namespace

TEST_CASE("routes: NVSwitch, PCIe tree and NIC paths cross the expected links") {
  EventEngine engine;
  Network net(engine);
  ClusterSpec c = cluster(pcie_node(20e9), 2);
  c.network.host_staging = true;
  Topology topo(net, c);
  CHECK(topo.gpu_count() == 16);
  auto names = [&](const Route& r) {
    std::vector<std::string> out;
    for (LinkId l : r.links) out.push_back(net.link(l).name);
    return out;
  };
  // Same switch: GPU link out, GPU link in.
  CHECK(names(topo.route(0, 1)) == std::vector<std::string>{"n0.gpu0.tx", "n0.gpu1.rx"});
  // Across switches: through both switch uplinks and the root complex.
  CHECK(names(topo.route(3, 4)) ==
        std::vector<std::string>{"n0.gpu3.tx", "n0.sw0.up", "n0.host_bridge", "n0.sw1.down", "n0.gpu4.rx"});
  // Inter-node with host staging: GPU → host memory → NIC is two passes of the host bridge per side.
  Route r = topo.route(5, 8);
  CHECK(r.inter_node);
  CHECK(names(r) == std::vector<std::string>{"n0.gpu5.tx", "n0.sw1.up", "n0.host_bridge", "n0.host_bridge",
                                              "n0.nic0.tx", "n1.nic0.rx", "n1.host_bridge", "n1.host_bridge",
                                              "n1.sw0.down", "n1.gpu0.rx"});
  CHECK(r.latency_seconds == kAlphaNet);
  CHECK(topo.canonical_link(topo.find_link("n1.nic0.rx")) == topo.find_link("n0.nic0.rx"));
  // GPU → NIC affinity with several NICs: GPU i uses NIC i·nics/gpus; channel c shifts it by c.
  EventEngine e2;
  Network n2(e2);
  Topology dgx(n2, cluster(nvswitch_node(16, 8), 2));
  CHECK(dgx.nic_of_local(5) == 2);
  CHECK(n2.link(dgx.route(5, 16 + 5, 0).links.front()).name == "n0.nic2.tx");
  CHECK(n2.link(dgx.route(5, 16 + 5, 3).links.front()).name == "n0.nic5.tx");
}

TEST_CASE("uncontended ring collectives match their closed-form α–β times") {
  // 8 nodes × 1 GPU × 1 NIC: every ring step loads each NIC direction with exactly one flow, so
  // α = network latency, β = line rate × achieved fraction.
  const int p = 8;
  ClusterSpec c = cluster(nvswitch_node(1, 1), p);
  const double n = 64 * kMiB;
  auto ranks = iota_ranks(p);
  // T = 2(p−1)(α + n/(pβ))
  CHECK(seconds(c, spec(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, n, ranks)) ==
        doctest::Approx(ring_all_reduce_seconds(p, n, kAlphaNet, kBetaNic)).epsilon(0.01));
  // T = (p−1)(α + n/(pβ))
  CHECK(seconds(c, spec(CollectiveKind::reduce_scatter, CollectiveAlgorithm::ring, n, ranks)) ==
        doctest::Approx(ring_reduce_scatter_seconds(p, n, kAlphaNet, kBetaNic)).epsilon(0.01));
  CHECK(seconds(c, spec(CollectiveKind::all_gather, CollectiveAlgorithm::ring, n, ranks)) ==
        doctest::Approx(ring_all_gather_seconds(p, n, kAlphaNet, kBetaNic)).epsilon(0.01));
  // Pipelined chain: (p − 1 + k − 1)(α + c/β), k = n / 512 KiB = 128 chunks.
  auto bcast = spec(CollectiveKind::broadcast, CollectiveAlgorithm::ring, n, ranks);
  bcast.root_index = 3;
  CHECK(seconds(c, bcast) ==
        doctest::Approx(pipelined_broadcast_seconds(p, n, kDefaultChunkBytes, kAlphaNet, kBetaNic)).epsilon(0.01));
  // α + n/β
  CHECK(seconds(c, spec(CollectiveKind::send_recv, CollectiveAlgorithm::ring, n, {2, 6})) ==
        doctest::Approx(send_recv_seconds(n, kAlphaNet, kBetaNic)).epsilon(0.01));
  // Sanity of the closed form itself: 2·7·(5e-6 + 64 MiB/(8·10e9)) = 0.011814 s.
  CHECK(ring_all_reduce_seconds(p, n, kAlphaNet, kBetaNic) == doctest::Approx(14 * (5e-6 + n / 8e10)).epsilon(1e-12));
}

TEST_CASE("double binary tree all-reduce matches its step-by-step α–β time") {
  // One GPU and one NIC per node; tree_all_reduce_seconds sums α + L·c/β over the pipeline steps,
  // L = the most chunk transfers sharing one NIC direction in that step.
  for (int p : {2, 5, 8, 16}) {
    ClusterSpec c = cluster(nvswitch_node(1, 1), p);
    for (double n : {256.0 * 1024, 64 * kMiB}) {
      CAPTURE(p);
      CAPTURE(n);
      double sim = seconds(c, spec(CollectiveKind::all_reduce, CollectiveAlgorithm::tree, n, iota_ranks(p)));
      CHECK(sim == doctest::Approx(tree_all_reduce_seconds(p, n, kDefaultChunkBytes, kAlphaNet, kBetaNic)).epsilon(0.01));
    }
  }
  // The two trees are complementary (NCCL ncclGetDtree): no rank is interior in both.
  for (int p : {4, 7, 8, 16, 33}) {
    auto a = binary_tree_parents(p, false), b = binary_tree_parents(p, true);
    std::vector<int> children_a(static_cast<std::size_t>(p)), children_b(static_cast<std::size_t>(p));
    for (int v = 0; v < p; ++v) {
      if (a[static_cast<std::size_t>(v)] >= 0) ++children_a[static_cast<std::size_t>(a[static_cast<std::size_t>(v)])];
      if (b[static_cast<std::size_t>(v)] >= 0) ++children_b[static_cast<std::size_t>(b[static_cast<std::size_t>(v)])];
    }
    int both = 0;
    for (int v = 0; v < p; ++v) both += children_a[static_cast<std::size_t>(v)] > 0 && children_b[static_cast<std::size_t>(v)] > 0;
    CAPTURE(p);
    CHECK(both <= 1);  // at most the rank that is root of one tree and one-child interior of the other
  }
}

TEST_CASE("hierarchical all-reduce matches its closed form") {
  // 4 nodes × 4 GPUs on NVSwitch (β_intra 100 GB/s, α_intra 2 µs), 4 NICs: each inter-node ring
  // (one per local rank) has its own NIC → β_inter = 10 GB/s.
  const int nodes = 4, g = 4;
  ClusterSpec c = cluster(nvswitch_node(g, g), nodes);
  const double n = 128 * kMiB;
  double expected = hierarchical_all_reduce_seconds(nodes, g, n, 2e-6, 100e9, kAlphaNet, kBetaNic);
  CHECK(seconds(c, spec(CollectiveKind::all_reduce, CollectiveAlgorithm::hierarchical, n, iota_ranks(nodes * g))) ==
        doctest::Approx(expected).epsilon(0.01));
  // With one NIC the 4 inter-node rings share it: β_inter = 10/4 GB/s per ring.
  ClusterSpec one_nic = cluster(nvswitch_node(g, 1), nodes);
  double shared = hierarchical_all_reduce_seconds(nodes, g, n, 2e-6, 100e9, kAlphaNet, kBetaNic / g);
  CHECK(seconds(one_nic, spec(CollectiveKind::all_reduce, CollectiveAlgorithm::hierarchical, n, iota_ranks(nodes * g))) ==
        doctest::Approx(shared).epsilon(0.01));
}

TEST_CASE("NVLink cube-mesh: a ring over the 8 GPUs runs at the per-GPU NVLink bandwidth") {
  // DGX-1-like node: per-GPU aggregate NVLink 150 GB/s per direction (V100: 300 GB/s bidirectional,
  // docs/references.md), α = 2 µs intra-node. Ring all-reduce: 2·7·(α + n/(8·150e9)).
  NodeProfile node = nvswitch_node(8, 4, 150e9, 2e-6);
  node.topology = IntraNodeTopology::nvlink_cube_mesh;
  node.nvlink_links_per_gpu = 6;
  const double n = 256 * kMiB;
  CHECK(seconds(cluster(node, 1), spec(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, n, iota_ranks(8))) ==
        doctest::Approx(ring_all_reduce_seconds(8, n, 2e-6, 150e9)).epsilon(0.01));
}

TEST_CASE("inconsistent clusters are input errors that say what is missing") {
  EventEngine engine;
  Network net(engine);
  CHECK_THROWS_WITH_AS(Topology(net, cluster(nvswitch_node(8, 0), 2)), doctest::Contains("nics_per_node"),
                       ptsim::core::InputError);
  NodeProfile no_pcie = pcie_node(16e9);
  no_pcie.pcie_link_bytes_per_second = 0;
  CHECK_THROWS_WITH_AS(Topology(net, cluster(no_pcie, 1)), doctest::Contains("pcie_link_bytes_per_second"),
                       ptsim::core::InputError);
}

TEST_CASE("contention: two rings through one NIC get half its bandwidth each") {
  // 4 nodes × 2 GPUs. Ring A over local rank 0 of every node, ring B over local rank 1, run together.
  const int nodes = 4;
  const double n = 64 * kMiB;
  std::vector<int> ring_a = {0, 2, 4, 6}, ring_b = {1, 3, 5, 7};
  auto both = [&](const ClusterSpec& c) {
    CollectiveSpec s = spec(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, n, ring_a);
    s.concurrent_groups = {ring_b};
    return seconds(c, s);
  };
  // One NIC: each ring's flows get β/2 → T = 2(p−1)(α + n/(p·β/2)).
  CHECK(both(cluster(nvswitch_node(2, 1), nodes)) ==
        doctest::Approx(ring_all_reduce_seconds(nodes, n, kAlphaNet, kBetaNic / 2)).epsilon(0.01));
  // Two NICs (GPU i → NIC i): no sharing → full β.
  CHECK(both(cluster(nvswitch_node(2, 2), nodes)) ==
        doctest::Approx(ring_all_reduce_seconds(nodes, n, kAlphaNet, kBetaNic)).epsilon(0.01));
  // One ring with 2 channels: over 2 NICs each channel (n/2) gets its own NIC → same as one ring
  // of n/2 at β; over 1 NIC the channels share it → same as one ring of n at β.
  CollectiveSpec two_ch = spec(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, n, ring_a);
  two_ch.channels = 2;
  CHECK(seconds(cluster(nvswitch_node(2, 2), nodes), two_ch) ==
        doctest::Approx(ring_all_reduce_seconds(nodes, n / 2, kAlphaNet, kBetaNic)).epsilon(0.01));
  CHECK(seconds(cluster(nvswitch_node(2, 1), nodes), two_ch) ==
        doctest::Approx(ring_all_reduce_seconds(nodes, n, kAlphaNet, kBetaNic)).epsilon(0.01));
}

TEST_CASE("ring channels leave a 16-GPU node through different GPUs and all 8 NICs") {
  // 2 nodes × 16 GPUs (NVSwitch 100 GB/s per GPU), 8 NICs, one 32-rank ring with 8 channels.
  // Channel c rotates each node's run by 2c, so it leaves through GPU 2c−1 (mod 16), i.e. NIC
  // (2c−1)·8/16: all 8 NICs, one channel each. Per channel the ring is one of n/8 at β = 10 GB/s
  // (the NIC); intra-node hops carry ≤ 8 flows per GPU link = 12.5 GB/s each, not binding.
  // T = 2(p−1)(α_net + (n/8)/(p·β)), p = 32.
  const double n = 256 * kMiB;
  CollectiveSpec s = spec(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, n, iota_ranks(32));
  s.channels = 8;
  CHECK(seconds(cluster(nvswitch_node(16, 8), 2), s) ==
        doctest::Approx(ring_all_reduce_seconds(32, n / 8, kAlphaNet, kBetaNic)).epsilon(0.01));
}

TEST_CASE("PCIe host bridge shared by eight GPUs") {
  const double n = 64 * kMiB;
  SUBCASE("eight GPUs sending off-node through one host bridge get a 1/8 share each") {
    // Host bridge 16 GB/s, a fast NIC (200 GB/s, so it is not the bottleneck): 8 concurrent send_recv
    // GPU i (node 0) → GPU i (node 1). Each crosses node 0's host bridge once (GPUDirect) →
    // 16/8 = 2 GB/s; switch uplinks carry 4 flows (15.75/4 = 3.9 GB/s) and GPU links 1 — not binding.
    NetworkProfile fast = rdma_network();
    fast.link_bytes_per_second = 200e9;
    fast.achieved_fraction = 1.0;
    ClusterSpec c = cluster(pcie_node(16e9), 2, fast);
    CollectiveSpec s = spec(CollectiveKind::send_recv, CollectiveAlgorithm::ring, n, {0, 8});
    for (int i = 1; i < 8; ++i) s.concurrent_groups.push_back({i, 8 + i});
    CHECK(seconds(c, s) == doctest::Approx(kAlphaNet + n / 2e9).epsilon(1e-6));
    // Socket transport staging through host memory: two passes per byte → 16/(8·2) = 1 GB/s.
    c.network.host_staging = true;
    CHECK(seconds(c, s) == doctest::Approx(kAlphaNet + n / 1e9).epsilon(1e-6));
  }
  SUBCASE("an intra-node ring over 8 PCIe GPUs is limited by the two flows crossing the host bridge") {
    // Ring 0→1→…→7→0 on 2 switches: 3→4 and 7→0 cross the root complex (16 GB/s / 2 = 8 GB/s), below
    // the 15.75 GB/s GPU links → β = 8 GB/s, α = 3 µs intra-node: T = 2·7·(α + n/(8·8e9)).
    ClusterSpec c = cluster(pcie_node(16e9), 1);
    CHECK(seconds(c, spec(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, n, iota_ranks(8))) ==
          doctest::Approx(ring_all_reduce_seconds(8, n, 3e-6, 8e9)).epsilon(0.01));
  }
}

TEST_CASE("a TCP connection's cap is the per-socket cap × NCCL's sockets per connection") {
  // Two 1-GPU nodes over a 100 Gb/s NIC achieving 0.8 (10 GB/s), one channel: one connection. Each socket is
  // capped at 1 GB/s. A send of n bytes: α + n / min(sockets × 1 GB/s, 10 GB/s).
  NetworkProfile tcp = rdma_network();
  tcp.transport = Transport::tcp_socket;
  tcp.per_flow_bytes_per_second = 1e9;
  const double n = 64 * kMiB;
  for (int sockets : {1, 4, 16}) {
    tcp.sockets_per_connection = sockets;
    ClusterSpec c = cluster(nvswitch_node(1, 1), 2, tcp);
    CollectiveSpec s = spec(CollectiveKind::send_recv, CollectiveAlgorithm::ring, n, {0, 1});
    s.channels = 1;
    CAPTURE(sockets);
    CHECK(seconds(c, s) == doctest::Approx(kAlphaNet + n / std::min(sockets * 1e9, kBetaNic)).epsilon(1e-6));
  }
}

TEST_CASE("exact and replicated simulation agree within 1% with contention (≤ 64 GPUs)") {
  // 8 nodes × 8 PCIe GPUs, 10 GbE-like TCP (staging, per-socket cap), oversubscribed fabric
  // (2 nodes per leaf, 2:1) — every kind of shared link is in play.
  NetworkProfile tcp = rdma_network();
  tcp.link_bytes_per_second = 1.25e9;
  tcp.achieved_fraction = 0.7;
  tcp.transport = Transport::tcp_socket;
  tcp.host_staging = true;
  tcp.per_flow_bytes_per_second = 0.3e9;
  tcp.latency_seconds = 30e-6;
  ClusterSpec c = cluster(pcie_node(12e9), 8, tcp);
  c.fabric.nodes_per_leaf = 2;
  c.fabric.oversubscription = 2.0;
  const double n = 32 * kMiB;
  auto compare = [&](CollectiveSpec s) {
    s.mode = SimulationMode::exact;
    CollectiveResult exact = simulate_collective(c, s);
    s.mode = SimulationMode::replicated;
    CollectiveResult rep = simulate_collective(c, s);
    std::string algorithm = to_string(s.algorithm);
    CAPTURE(algorithm);
    CHECK(rep.duration_seconds() == doctest::Approx(exact.duration_seconds()).epsilon(0.01));
    if (s.algorithm == CollectiveAlgorithm::tree) {
      CHECK(rep.flows_started == exact.flows_started);  // the tree is not node-symmetric: always exact
    } else {
      CHECK(rep.flows_started * 4 < exact.flows_started);  // at least 4× fewer flows simulated
    }
    return exact.duration_seconds();
  };
  compare(spec(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, n, iota_ranks(64)));
  compare(spec(CollectiveKind::all_reduce, CollectiveAlgorithm::hierarchical, n, iota_ranks(64)));
  compare(spec(CollectiveKind::reduce_scatter, CollectiveAlgorithm::ring, n, iota_ranks(64)));
  // Eight data-parallel groups (local rank j of every node) at once, 2 channels: the replicas share
  // switch uplinks, host bridges, NICs and leaf uplinks.
  CollectiveSpec dp = spec(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, n, {});
  for (int node = 0; node < 8; ++node) dp.ranks.push_back(node * 8);
  for (int j = 1; j < 8; ++j) {
    std::vector<int> group;
    for (int node = 0; node < 8; ++node) group.push_back(node * 8 + j);
    dp.concurrent_groups.push_back(group);
  }
  dp.channels = 2;
  compare(dp);
  CollectiveSpec tree = dp;
  tree.algorithm = CollectiveAlgorithm::tree;
  compare(tree);
}

TEST_CASE("automatic choice: tree for small inter-node messages, bandwidth-optimal for large") {
  // 32 nodes × 1 GPU, α = 5 µs: at 64 KiB the ring pays 2·31 latencies, the tree about 2·log2(32).
  ClusterSpec c = cluster(nvswitch_node(1, 1), 32);
  auto ranks = iota_ranks(32);
  EventEngine engine;
  Network net(engine);
  Topology topo(net, c);
  CHECK(choose_algorithm(topo, spec(CollectiveKind::all_reduce, CollectiveAlgorithm::automatic, 64 * 1024.0, ranks)) ==
        CollectiveAlgorithm::tree);
  CHECK(choose_algorithm(topo, spec(CollectiveKind::all_reduce, CollectiveAlgorithm::automatic, 1024 * kMiB, ranks)) ==
        CollectiveAlgorithm::ring);
  // One node: always ring.
  CHECK(choose_algorithm(topo, spec(CollectiveKind::all_reduce, CollectiveAlgorithm::automatic, 1024.0, {0})) ==
        CollectiveAlgorithm::ring);
  // The automatic result is the fastest of the candidates it simulated.
  auto s = spec(CollectiveKind::all_reduce, CollectiveAlgorithm::automatic, 4 * kMiB, ranks);
  double chosen = seconds(c, s);
  for (auto a : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree}) {
    s.algorithm = a;
    CHECK(chosen <= seconds(c, s) * (1 + 1e-9));
  }
}

TEST_CASE("collectives run on a shared network from a given start time and report through the callback") {
  EventEngine engine;
  Network net(engine);
  Topology topo(net, cluster(nvswitch_node(1, 1), 4));
  const double n = 16 * kMiB;
  std::vector<CollectiveResult> done;
  // Two all-reduces over the same 4 ranks started together share every NIC → each takes as long as
  // one of 2n (β/2 each); their finish times are equal.
  for (int i = 0; i < 2; ++i) {
    run_collective(topo, spec(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, n, iota_ranks(4)), 1.0,
                   [&](const CollectiveResult& r) { done.push_back(r); });
  }
  engine.run();
  REQUIRE(done.size() == 2);
  double expected = ring_all_reduce_seconds(4, n, kAlphaNet, kBetaNic / 2);
  for (const auto& r : done) {
    CHECK(r.start_seconds == 1.0);
    CHECK(r.duration_seconds() == doctest::Approx(expected).epsilon(0.01));
    CHECK(r.steps == 6);  // 2(p − 1)
  }
  // A prepared collective can be run again (same bucket, next step) and takes the same time alone.
  auto prepared = prepare_collective(topo, spec(CollectiveKind::all_reduce, CollectiveAlgorithm::ring, n, iota_ranks(4)));
  std::vector<double> durations;
  for (double start : {10.0, 20.0}) {
    run_prepared_collective(net, prepared, start, [&](const CollectiveResult& r) { durations.push_back(r.duration_seconds()); });
  }
  engine.run();
  REQUIRE(durations.size() == 2);
  CHECK(durations[0] == doctest::Approx(ring_all_reduce_seconds(4, n, kAlphaNet, kBetaNic)).epsilon(0.01));
  CHECK(durations[1] == doctest::Approx(durations[0]).epsilon(1e-12));
  CHECK_THROWS_AS(plan_collective(topo, spec(CollectiveKind::reduce_scatter, CollectiveAlgorithm::tree, n, iota_ranks(4)),
                                  CollectiveAlgorithm::tree),
                  std::invalid_argument);
}
