// sim/collectives.cpp — see collectives.hpp. Decompositions (docs/network-model.md "Collectives"):
//   ring all_reduce: 2(p−1) steps; in each, every rank sends n/(p·C) bytes to its ring successor on
//     each of C channels (reduce-scatter then all-gather; NCCL ring, Patarasuk & Yuan 2009).
//   ring reduce_scatter / all_gather: the first / second half of that (p−1 steps).
//   broadcast: pipelined chain from the root, chunked (NCCL broadcast is a ring pipeline).
//   tree all_reduce: NCCL's double binary tree — two complementary binary trees over the nodes, an
//     intra-node chain below each node's first rank, n/2 per tree, chunks reduced up and broadcast
//     down in one pipeline.
//   hierarchical all_reduce: intra-node ring reduce-scatter, g concurrent inter-node ring
//     all-reduces of n/g (one per local rank), intra-node ring all-gather.
//   send_recv: one step, the buffer split over the channels.
#include "sim/collectives.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>

namespace ptsim::sim {

const char* to_string(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce: return "all_reduce";
    case CollectiveKind::reduce_scatter: return "reduce_scatter";
    case CollectiveKind::all_gather: return "all_gather";
    case CollectiveKind::broadcast: return "broadcast";
    case CollectiveKind::send_recv: return "send_recv";
  }
  return "?";
}

const char* to_string(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
    case CollectiveAlgorithm::automatic: return "auto";
    case CollectiveAlgorithm::ring: return "ring";
    case CollectiveAlgorithm::tree: return "tree";
    case CollectiveAlgorithm::hierarchical: return "hierarchical";
  }
  return "?";
}

namespace {

// Splits `total` bytes into k = ⌈total/chunk⌉ equal chunks (at least 1).
std::pair<long, double> split_chunks(double total, double chunk) {
  long k = chunk > 0 ? std::max(1L, static_cast<long>(std::ceil(total / chunk - 1e-9))) : 1L;
  return {k, total / static_cast<double>(k)};
}

// A pipeline over `edges` (src, dst, start offset): edge e carries chunk c at step c + offset_e.
// Emits steps 0 … nc + max_offset − 1, merging the steady state (every edge busy) into one repeat.
struct PipelineEdge {
  int src = 0;
  int dst = 0;
  int offset = 0;
  int channel = 0;
};
std::vector<CollectiveStep> pipeline_steps(const std::vector<PipelineEdge>& edges, long nc, double chunk) {
  std::vector<CollectiveStep> steps;
  if (edges.empty()) return steps;
  int max_offset = 0;
  for (const auto& e : edges) max_offset = std::max(max_offset, e.offset);
  long total = nc + max_offset;
  for (long t = 0; t < total;) {
    if (t >= max_offset && t < nc) {  // steady state: every edge has a chunk in flight
      CollectiveStep s;
      for (const auto& e : edges) s.transfers.push_back({e.src, e.dst, chunk, e.channel});
      s.repeat = nc - t;
      steps.push_back(std::move(s));
      t = nc;
      continue;
    }
    CollectiveStep s;
    for (const auto& e : edges) {
      long c = t - e.offset;
      if (c >= 0 && c < nc) s.transfers.push_back({e.src, e.dst, chunk, e.channel});
    }
    steps.push_back(std::move(s));
    ++t;
  }
  return steps;
}

// One ring per channel. Where the ring passes through a node on a run of L ≥ 2 consecutive ranks,
// channel c rotates that run by c·L/C so each channel enters and leaves the node through different
// GPUs (and so different PCIe paths and NICs), as NCCL's per-channel rings do; that transfer then
// uses the exit GPU's own NIC. A run of one rank cannot rotate: its channel c uses the NIC c places
// after the GPU's own (Topology::route), so channels still spread over the NICs.
std::vector<CollectiveStep> ring_steps(const Topology& topo, const std::vector<int>& ranks, double step_bytes,
                                       long repeat, int channels) {
  std::vector<CollectiveStep> steps;
  const auto p = ranks.size();
  if (p < 2 || repeat < 1) return steps;
  // Runs of consecutive ranks on the same node (the last run does not wrap around to the first).
  std::vector<std::pair<std::size_t, std::size_t>> runs;  // [begin, end)
  for (std::size_t i = 0; i < p;) {
    std::size_t j = i + 1;
    while (j < p && topo.node_of(ranks[j]) == topo.node_of(ranks[i])) ++j;
    runs.emplace_back(i, j);
    i = j;
  }
  const bool single_node = runs.size() == 1;
  CollectiveStep s;
  std::vector<int> order;
  for (int c = 0; c < channels; ++c) {
    order.clear();
    for (auto [b, e] : runs) {
      std::size_t len = e - b;
      std::size_t shift = single_node ? 0 : (static_cast<std::size_t>(c) * len / static_cast<std::size_t>(channels)) % len;
      for (std::size_t k = 0; k < len; ++k) order.push_back(ranks[b + (k + shift) % len]);
    }
    for (std::size_t i = 0; i < p; ++i) {
      int src = order[i], dst = order[(i + 1) % p];
      bool rotated = topo.node_of(src) != topo.node_of(dst) && (topo.node_of(order[(i + p - 1) % p]) == topo.node_of(src));
      s.transfers.push_back({src, dst, step_bytes, rotated ? 0 : c});
    }
  }
  s.repeat = repeat;
  steps.push_back(std::move(s));
  return steps;
}

// Ranks grouped by node, in order of first appearance; throws unless every node has the same count.
std::vector<std::vector<int>> group_by_node(const Topology& topo, const std::vector<int>& ranks) {
  std::vector<std::vector<int>> nodes;
  std::map<int, std::size_t> index;
  for (int r : ranks) {
    auto [it, inserted] = index.emplace(topo.node_of(r), nodes.size());
    if (inserted) nodes.emplace_back();
    nodes[it->second].push_back(r);
  }
  for (const auto& n : nodes) {
    if (n.size() != nodes.front().size()) {
      throw std::invalid_argument("collective: hierarchical/tree needs the same number of ranks on every node");
    }
  }
  return nodes;
}

// send_recv: one step, the buffer split over the channels.
std::vector<CollectiveStep> send_recv_steps(const CollectiveSpec& spec, const std::vector<int>& ranks, int C) {
  if (ranks.size() != 2) throw std::invalid_argument("collective: send_recv needs ranks = {src, dst}");
  CollectiveStep s;
  for (int c = 0; c < C; ++c) s.transfers.push_back({ranks[0], ranks[1], spec.bytes / C, c});
  return {std::move(s)};
}

// broadcast: a chunked pipeline along the chain root → root+1 → …, one chain per channel.
std::vector<CollectiveStep> broadcast_steps(const CollectiveSpec& spec, CollectiveAlgorithm algo,
                                            const std::vector<int>& ranks, int C) {
  const int p = static_cast<int>(ranks.size());
  if (algo != CollectiveAlgorithm::ring) throw std::invalid_argument("collective: broadcast supports ring only");
  if (spec.root_index < 0 || spec.root_index >= p) throw std::invalid_argument("collective: bad root_index");
  auto [nc, chunk] = split_chunks(spec.bytes / C, spec.chunk_bytes);
  std::vector<PipelineEdge> edges;
  for (int c = 0; c < C; ++c) {
    for (int j = 0; j + 1 < p; ++j) {
      edges.push_back({ranks[static_cast<std::size_t>((spec.root_index + j) % p)],
                       ranks[static_cast<std::size_t>((spec.root_index + j + 1) % p)], j, c});
    }
  }
  return pipeline_steps(edges, nc, chunk);
}

// Concatenates the transfers of one-step plans into one step repeated `repeat` times.
CollectiveStep merged_step(const std::vector<std::vector<CollectiveStep>>& plans, long repeat) {
  CollectiveStep merged;
  for (const auto& plan : plans)
    for (const auto& s : plan) merged.transfers.insert(merged.transfers.end(), s.transfers.begin(), s.transfers.end());
  merged.repeat = repeat;
  return merged;
}

// hierarchical all_reduce: intra-node ring reduce-scatter, g inter-node ring all-reduces, intra-node all-gather.
std::vector<CollectiveStep> hierarchical_steps(const Topology& topo, const std::vector<std::vector<int>>& nodes,
                                               const std::vector<int>& ranks, double n, int C) {
  const int N = static_cast<int>(nodes.size());
  const int g = static_cast<int>(nodes.front().size());
  const int p = static_cast<int>(ranks.size());
  if (N == 1 || g == 1) return ring_steps(topo, ranks, n / (static_cast<double>(p) * C), 2L * (p - 1), C);
  // Phase 1: intra-node reduce-scatter (every node at once), g−1 steps of n/(g·C).
  std::vector<std::vector<CollectiveStep>> local_rings;
  for (const auto& local : nodes) local_rings.push_back(ring_steps(topo, local, n / (static_cast<double>(g) * C), 1, C));
  CollectiveStep rs = merged_step(local_rings, g - 1);
  // Phase 2: g inter-node rings (local rank j of every node) all-reduce n/g: 2(N−1) steps of n/(g·N·C).
  // Ring j leaves through the NIC of local rank j (Topology::route), so the g rings spread over the NICs.
  std::vector<std::vector<CollectiveStep>> cross_rings;
  for (int j = 0; j < g; ++j) {
    std::vector<int> ring;
    for (const auto& local : nodes) ring.push_back(local[static_cast<std::size_t>(j)]);
    cross_rings.push_back(ring_steps(topo, ring, n / (static_cast<double>(g) * N * C), 1, C));
  }
  CollectiveStep ar = merged_step(cross_rings, 2L * (N - 1));
  CollectiveStep ag = rs;  // Phase 3: intra-node all-gather, same flows as phase 1.
  return {std::move(rs), std::move(ar), std::move(ag)};
}

// One tree of the double binary tree, over positions: node heads first (0..N−1), then each node's chain.
struct TreeLayout {
  std::vector<int> parent;   // position → parent position (−1 for the root)
  std::vector<int> rank_at;  // position → rank
  std::vector<int> height;   // leaves 0
  std::vector<int> depth;    // root 0
  int root_height = 0;
};

TreeLayout tree_layout(const std::vector<std::vector<int>>& nodes, int p, bool second) {
  const int N = static_cast<int>(nodes.size());
  const int g = static_cast<int>(nodes.front().size());
  const auto P = static_cast<std::size_t>(p);
  TreeLayout t{std::vector<int>(P, -1), std::vector<int>(P), std::vector<int>(P, 0), std::vector<int>(P, 0), 0};
  std::vector<int> node_parent = binary_tree_parents(N, second);
  std::size_t pos = 0;
  std::vector<int> head_pos(static_cast<std::size_t>(N));
  for (int i = 0; i < N; ++i) {
    head_pos[static_cast<std::size_t>(i)] = static_cast<int>(pos);
    t.rank_at[pos++] = nodes[static_cast<std::size_t>(i)][0];
  }
  for (int i = 0; i < N; ++i) {
    int np = node_parent[static_cast<std::size_t>(i)];
    t.parent[static_cast<std::size_t>(head_pos[static_cast<std::size_t>(i)])] = np < 0 ? -1 : head_pos[static_cast<std::size_t>(np)];
    int prev = head_pos[static_cast<std::size_t>(i)];
    for (int j = 1; j < g; ++j) {
      t.rank_at[pos] = nodes[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      t.parent[pos] = prev;
      prev = static_cast<int>(pos++);
    }
  }
  bool changed = true;
  while (changed) {  // p is small enough (≤ thousands) for this fixed point; trees are shallow
    changed = false;
    for (int v = 0; v < p; ++v) {
      int u = t.parent[static_cast<std::size_t>(v)];
      if (u < 0) continue;
      auto uu = static_cast<std::size_t>(u), uv = static_cast<std::size_t>(v);
      if (t.height[uu] < t.height[uv] + 1) { t.height[uu] = t.height[uv] + 1; changed = true; }
      if (t.depth[uv] != t.depth[uu] + 1) { t.depth[uv] = t.depth[uu] + 1; changed = true; }
    }
  }
  for (int v = 0; v < p; ++v)
    if (t.parent[static_cast<std::size_t>(v)] < 0) t.root_height = t.height[static_cast<std::size_t>(v)];
  return t;
}

// Tree: NCCL's two complementary binary trees over the nodes; below each node's first rank a chain of its
// other ranks. Tree k, channel c uses NIC channel 2c + k (NCCL gives each tree its own channel).
std::vector<CollectiveStep> tree_steps(const CollectiveSpec& spec, const std::vector<std::vector<int>>& nodes, int p,
                                       int C) {
  auto [nc, chunk] = split_chunks(spec.bytes / (2.0 * C), spec.chunk_bytes);
  std::vector<PipelineEdge> edges;
  for (int k = 0; k < 2; ++k) {
    const TreeLayout t = tree_layout(nodes, p, k == 1);
    for (int c = 0; c < C; ++c) {
      for (int v = 0; v < p; ++v) {
        int u = t.parent[static_cast<std::size_t>(v)];
        if (u < 0) continue;
        auto uu = static_cast<std::size_t>(u), uv = static_cast<std::size_t>(v);
        // Up: v sends chunk c at step c + height(v) (its children's chunks arrived the step before).
        edges.push_back({t.rank_at[uv], t.rank_at[uu], t.height[uv], 2 * c + k});
        // Down: u forwards chunk c at step c + H + depth(u) (the root has it at step c + H − 1).
        edges.push_back({t.rank_at[uu], t.rank_at[uv], t.root_height + t.depth[uu], 2 * c + k});
      }
    }
  }
  return pipeline_steps(edges, nc, chunk);
}

// The steps of one group of ranks: dispatch on the collective's kind and algorithm.
std::vector<CollectiveStep> plan_group(const Topology& topo, const CollectiveSpec& spec, CollectiveAlgorithm algo,
                                       const std::vector<int>& ranks) {
  const int p = static_cast<int>(ranks.size());
  const int C = std::max(spec.channels, 1);
  if (spec.kind == CollectiveKind::send_recv) return send_recv_steps(spec, ranks, C);
  if (p < 2) return {};
  if (spec.kind == CollectiveKind::broadcast) return broadcast_steps(spec, algo, ranks, C);
  if (algo == CollectiveAlgorithm::ring) {
    long repeat = spec.kind == CollectiveKind::all_reduce ? 2L * (p - 1) : static_cast<long>(p - 1);
    return ring_steps(topo, ranks, spec.bytes / (static_cast<double>(p) * C), repeat, C);
  }
  if (spec.kind != CollectiveKind::all_reduce) {
    throw std::invalid_argument(std::string("collective: ") + to_string(algo) + " supports all_reduce only");
  }
  auto nodes = group_by_node(topo, ranks);
  if (algo == CollectiveAlgorithm::hierarchical) return hierarchical_steps(topo, nodes, ranks, spec.bytes, C);
  return tree_steps(spec, nodes, p, C);
}

// Flows of one step, ready for the network. Replicated mode keeps one flow per symmetry class.
using PreparedStep = PreparedCollective::Step;

PreparedStep prepare_step(Topology& topo, const CollectiveStep& step, SimulationMode mode) {
  PreparedStep out;
  out.repeat = step.repeat;
  if (mode == SimulationMode::exact) {
    for (const Transfer& t : step.transfers) {
      Route r = topo.route(t.src_rank, t.dst_rank, t.channel);
      FlowSpec f;
      f.route = std::move(r.links);
      f.bytes = t.bytes;
      f.rate_cap_bytes_per_second = r.rate_cap_bytes_per_second;
      f.extra_latency_seconds = r.latency_seconds;
      f.link_share.assign(f.route.size(), 1.0);
      out.flows.push_back(std::make_shared<const FlowSpec>(std::move(f)));
    }
    return out;
  }
  // Replicated: group transfers whose routes map to the same canonical route. The groups together
  // load the instances S_L of canonical link L that the step uses; assuming that load is spread
  // evenly (exact for a symmetric step), a group of k flows puts k/|S_L| flows on each instance per
  // hop (docs/network-model.md "Exact and replicated mode").
  using Key = std::tuple<std::vector<LinkId>, double, double, double>;
  std::map<Key, double> counts;
  std::vector<const Key*> order;  // first-appearance order, for determinism
  // instances[L]: how many distinct actual links of canonical link L the step uses.
  const auto links = static_cast<std::size_t>(topo.network().link_count());
  std::vector<int> instances(links, 0);
  std::vector<char> seen(links, 0);
  for (const Transfer& t : step.transfers) {
    Route r = topo.route(t.src_rank, t.dst_rank, t.channel);
    std::vector<LinkId> canon;
    canon.reserve(r.links.size());
    for (LinkId l : r.links) {
      canon.push_back(topo.canonical_link(l));
      if (!seen[static_cast<std::size_t>(l)]) {
        seen[static_cast<std::size_t>(l)] = 1;
        ++instances[static_cast<std::size_t>(canon.back())];
      }
    }
    Key key{std::move(canon), t.bytes, r.rate_cap_bytes_per_second, r.latency_seconds};
    auto [it, inserted] = counts.try_emplace(std::move(key), 0.0);
    if (inserted) order.push_back(&it->first);
    it->second += 1;
  }
  for (const Key* key : order) {
    double k = counts.at(*key);
    FlowSpec f;
    f.route = std::get<0>(*key);
    f.bytes = std::get<1>(*key);
    f.rate_cap_bytes_per_second = std::get<2>(*key);
    f.extra_latency_seconds = std::get<3>(*key);
    f.multiplicity = k;
    for (LinkId l : f.route) f.link_share.push_back(k / static_cast<double>(instances[static_cast<std::size_t>(l)]));
    out.flows.push_back(std::make_shared<const FlowSpec>(std::move(f)));
  }
  return out;
}

struct Runner : std::enable_shared_from_this<Runner> {
  Network* network = nullptr;
  std::shared_ptr<const PreparedCollective> prepared;
  std::size_t step_index = 0;
  long repeat_done = 0;
  std::size_t outstanding = 0;
  CollectiveResult result;
  std::function<void(const CollectiveResult&)> on_done;
  // Fast-forward: the caller promises no other flows start while this collective runs. Then a repeated
  // step that ran alone on an idle network takes exactly as long every time, and the remaining repeats
  // are skipped in one event (their bytes are not added to link_bytes_carried).
  bool fast_forward = false;
  double step_start = 0;
  bool step_alone = false;
  std::uint64_t flows_before = 0;

  void finish_step() {
    ++repeat_done;
    const PreparedStep& s = prepared->steps[step_index];
    const long remaining = s.repeat - repeat_done;
    if (fast_forward && remaining > 0 && step_alone && network->idle() &&
        network->flows_started() == flows_before + s.flows.size()) {
      const double duration = network->engine().now() - step_start;
      repeat_done = s.repeat;
      result.steps += remaining;
      result.flows_started += remaining * static_cast<long>(s.flows.size());
      auto self = shared_from_this();
      network->engine().schedule_at(network->engine().now() + static_cast<double>(remaining) * duration,
                                    [self] { self->next(); });
      return;
    }
    next();
  }

  void next() {
    const auto& steps = prepared->steps;
    while (step_index < steps.size() &&
           (repeat_done >= steps[step_index].repeat || steps[step_index].flows.empty())) {
      ++step_index;
      repeat_done = 0;
    }
    if (step_index >= steps.size()) {
      result.finish_seconds = network->engine().now();
      if (on_done) on_done(result);
      return;
    }
    const PreparedStep& s = steps[step_index];
    outstanding = s.flows.size();
    result.steps += 1;
    result.flows_started += static_cast<long>(s.flows.size());
    step_start = network->engine().now();
    step_alone = network->idle();
    flows_before = network->flows_started();
    auto self = shared_from_this();
    for (const auto& f : s.flows) {
      network->start_flow(f, [self] {
        if (--self->outstanding == 0) self->finish_step();
      });
    }
  }
};

void check_ranks(const Topology& topo, const CollectiveSpec& spec) {
  auto check = [&](const std::vector<int>& ranks) {
    std::set<int> seen;
    for (int r : ranks) {
      if (r < 0 || r >= topo.gpu_count()) {
        throw std::invalid_argument("collective: rank " + std::to_string(r) + " outside the cluster's " +
                                    std::to_string(topo.gpu_count()) + " GPUs");
      }
      if (!seen.insert(r).second) throw std::invalid_argument("collective: rank " + std::to_string(r) + " repeated");
    }
    if (ranks.size() != spec.ranks.size()) throw std::invalid_argument("collective: concurrent groups differ in size");
  };
  if (spec.ranks.empty()) throw std::invalid_argument("collective: no ranks");
  if (!(spec.bytes >= 0)) throw std::invalid_argument("collective: bytes must be >= 0");
  check(spec.ranks);
  for (const auto& g : spec.concurrent_groups) check(g);
}

}  // namespace

std::vector<int> binary_tree_parents(int p, bool second) {
  std::vector<int> parents(static_cast<std::size_t>(std::max(p, 0)), -1);
  // NCCL's ncclGetBtree (src/graph/trees.cc): rank 0 is the root with one child; a rank's parent
  // flips its lowest set bit and sets the next one, or just clears it when that is out of range.
  // Odd ranks are leaves, even ranks interior.
  auto btree_parent = [p](int rank) {
    if (rank == 0) return -1;
    int bit = 1;
    while (bit < p && !(bit & rank)) bit <<= 1;
    int up = (rank ^ bit) | (bit << 1);
    if (up >= p) up = rank ^ bit;
    return up;
  };
  for (int r = 0; r < p; ++r) {
    int parent = 0;
    if (!second) {
      parent = btree_parent(r);
    } else if (p % 2 == 1) {  // ncclGetDtree: odd p → the second tree is the first shifted by one
      int u = btree_parent((r - 1 + p) % p);
      parent = u < 0 ? -1 : (u + 1) % p;
    } else {  // even p → mirrored, so the first tree's leaves are the second tree's interior ranks
      int u = btree_parent(p - 1 - r);
      parent = u < 0 ? -1 : p - 1 - u;
    }
    parents[static_cast<std::size_t>(r)] = parent;
  }
  return parents;
}

std::vector<CollectiveStep> plan_collective(const Topology& topology, const CollectiveSpec& spec,
                                            CollectiveAlgorithm algorithm) {
  if (algorithm == CollectiveAlgorithm::automatic) {
    throw std::invalid_argument("plan_collective: resolve `automatic` with choose_algorithm first");
  }
  check_ranks(topology, spec);
  std::vector<CollectiveStep> steps = plan_group(topology, spec, algorithm, spec.ranks);
  for (const auto& group : spec.concurrent_groups) {
    std::vector<CollectiveStep> more = plan_group(topology, spec, algorithm, group);
    if (more.size() != steps.size()) throw std::invalid_argument("collective: concurrent groups plan differently");
    for (std::size_t i = 0; i < steps.size(); ++i) {
      if (more[i].repeat != steps[i].repeat) throw std::invalid_argument("collective: concurrent groups plan differently");
      steps[i].transfers.insert(steps[i].transfers.end(), more[i].transfers.begin(), more[i].transfers.end());
    }
  }
  return steps;
}

std::shared_ptr<const PreparedCollective> prepare_collective(Topology& topology, const CollectiveSpec& spec) {
  auto prepared = std::make_shared<PreparedCollective>();
  prepared->algorithm = spec.algorithm == CollectiveAlgorithm::automatic ? choose_algorithm(topology, spec)
                                                                        : spec.algorithm;
  // The tree is not symmetric under node translation (root, interior and leaf ranks load their NICs
  // differently), so averaging over nodes would hide the busiest NIC: it always runs exact.
  prepared->mode = prepared->algorithm == CollectiveAlgorithm::tree ? SimulationMode::exact : spec.mode;
  for (const CollectiveStep& s : plan_collective(topology, spec, prepared->algorithm)) {
    prepared->steps.push_back(prepare_step(topology, s, prepared->mode));
  }
  return prepared;
}

CollectiveResult run_prepared_collective(Network& network, std::shared_ptr<const PreparedCollective> prepared,
                                         double start_seconds, std::function<void(const CollectiveResult&)> on_done,
                                         bool alone_on_network) {
  auto runner = std::make_shared<Runner>();
  runner->network = &network;
  runner->fast_forward = alone_on_network;
  runner->result.algorithm = prepared->algorithm;
  runner->result.start_seconds = start_seconds;
  runner->prepared = std::move(prepared);
  runner->on_done = std::move(on_done);
  network.engine().schedule_at(start_seconds, [runner] { runner->next(); });
  return runner->result;
}

CollectiveResult run_collective(Topology& topology, const CollectiveSpec& spec, double start_seconds,
                                std::function<void(const CollectiveResult&)> on_done) {
  return run_prepared_collective(topology.network(), prepare_collective(topology, spec), start_seconds,
                                 std::move(on_done));
}

CollectiveResult simulate_collective(const ClusterSpec& cluster, const CollectiveSpec& spec) {
  EventEngine engine;
  Network network(engine);
  Topology topology(network, cluster);
  CollectiveResult out;
  run_prepared_collective(network, prepare_collective(topology, spec), 0.0,
                          [&out](const CollectiveResult& r) { out = r; }, /*alone_on_network=*/true);
  engine.run();
  return out;
}

CollectiveAlgorithm choose_algorithm(const Topology& topology, const CollectiveSpec& spec) {
  if (spec.algorithm != CollectiveAlgorithm::automatic) return spec.algorithm;
  bool one_node = true;
  for (int r : spec.ranks) one_node = one_node && topology.node_of(r) == topology.node_of(spec.ranks.front());
  if (one_node || spec.kind != CollectiveKind::all_reduce) return CollectiveAlgorithm::ring;
  CollectiveAlgorithm best = CollectiveAlgorithm::ring;
  double best_seconds = std::numeric_limits<double>::infinity();
  // The tree always runs exact (not node-symmetric); beyond this many flows per pipeline step its
  // simulation is too slow for a candidate, and it is left out (docs/network-model.md "Automatic").
  constexpr double kMaxTreeFlowsPerStep = 4096;
  const double tree_flows = 4.0 * static_cast<double>(spec.ranks.size()) *
                            static_cast<double>(1 + spec.concurrent_groups.size()) * std::max(spec.channels, 1);
  for (CollectiveAlgorithm a : {CollectiveAlgorithm::ring, CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical}) {
    if (a == CollectiveAlgorithm::tree && tree_flows > kMaxTreeFlowsPerStep) continue;
    CollectiveSpec candidate = spec;
    candidate.algorithm = a;
    candidate.mode = SimulationMode::replicated;
    double seconds = 0;
    try {
      seconds = simulate_collective(topology.spec(), candidate).duration_seconds();
    } catch (const std::invalid_argument&) {
      continue;  // e.g. hierarchical over nodes with unequal rank counts
    }
    if (seconds < best_seconds * (1 - 1e-9)) {
      best_seconds = seconds;
      best = a;
    }
  }
  return best;
}

}  // namespace ptsim::sim
