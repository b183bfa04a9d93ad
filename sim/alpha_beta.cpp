// sim/alpha_beta.cpp — see alpha_beta.hpp.
#include "sim/alpha_beta.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "sim/collectives.hpp"  // binary_tree_parents: the tree shape is a definition shared with the simulator

namespace ptsim::sim {

double ring_all_reduce_seconds(int p, double n, double alpha, double beta) {
  if (p < 2) return 0;
  return 2.0 * (p - 1) * (alpha + n / (p * beta));
}

double ring_reduce_scatter_seconds(int p, double n, double alpha, double beta) {
  if (p < 2) return 0;
  return (p - 1) * (alpha + n / (p * beta));
}

double ring_all_gather_seconds(int p, double n, double alpha, double beta) {
  return ring_reduce_scatter_seconds(p, n, alpha, beta);
}

double pipelined_broadcast_seconds(int p, double n, double chunk, double alpha, double beta) {
  if (p < 2) return 0;
  double k = chunk > 0 ? std::max(1.0, std::ceil(n / chunk - 1e-9)) : 1.0;
  return (p - 1 + k - 1) * (alpha + n / k / beta);
}

double send_recv_seconds(double n, double alpha, double beta) { return alpha + n / beta; }

double hierarchical_all_reduce_seconds(int nodes, int g, double n, double alpha_intra, double beta_intra,
                                       double alpha_inter, double beta_inter) {
  double intra = ring_reduce_scatter_seconds(g, n, alpha_intra, beta_intra);  // reduce-scatter of n over g
  double inter = ring_all_reduce_seconds(nodes, n / g, alpha_inter, beta_inter);
  return intra + inter + intra;  // all-gather costs what reduce-scatter costs
}

double tree_all_reduce_seconds(int p, double n, double chunk, double alpha, double beta) {
  if (p < 2) return 0;
  double k = chunk > 0 ? std::max(1.0, std::ceil(n / 2 / chunk - 1e-9)) : 1.0;
  double c = n / 2 / k;
  auto nc = static_cast<long>(k);
  // Per tree: parent, height (leaf 0), depth (root 0).
  struct Shape { std::vector<int> parent, height, depth; int root_height = 0; };
  std::vector<Shape> trees;
  for (bool mirrored : {false, true}) {
    Shape s;
    s.parent = binary_tree_parents(p, mirrored);
    s.height.assign(static_cast<std::size_t>(p), 0);
    s.depth.assign(static_cast<std::size_t>(p), 0);
    for (int v = 0; v < p; ++v) {  // depth: walk to the root
      int d = 0;
      for (int u = s.parent[static_cast<std::size_t>(v)]; u >= 0; u = s.parent[static_cast<std::size_t>(u)]) ++d;
      s.depth[static_cast<std::size_t>(v)] = d;
      int h = 0;  // height: propagate this leaf-path length upwards
      for (int u = s.parent[static_cast<std::size_t>(v)], x = v; u >= 0; x = u, u = s.parent[static_cast<std::size_t>(u)]) {
        (void)x;
        ++h;
        s.height[static_cast<std::size_t>(u)] = std::max(s.height[static_cast<std::size_t>(u)], h);
      }
    }
    for (int v = 0; v < p; ++v) {
      if (s.parent[static_cast<std::size_t>(v)] < 0) s.root_height = s.height[static_cast<std::size_t>(v)];
    }
    trees.push_back(std::move(s));
  }
  int max_h = std::max(trees[0].root_height, trees[1].root_height);
  long steps = nc + 2L * max_h - 1;
  double total = 0;
  for (long t = 0; t < steps; ++t) {
    std::vector<int> tx(static_cast<std::size_t>(p), 0), rx(static_cast<std::size_t>(p), 0);
    for (const Shape& s : trees) {
      for (int v = 0; v < p; ++v) {
        int u = s.parent[static_cast<std::size_t>(v)];
        if (u < 0) continue;
        long up = t - s.height[static_cast<std::size_t>(v)];
        if (up >= 0 && up < nc) { ++tx[static_cast<std::size_t>(v)]; ++rx[static_cast<std::size_t>(u)]; }
        long down = t - s.root_height - s.depth[static_cast<std::size_t>(u)];
        if (down >= 0 && down < nc) { ++tx[static_cast<std::size_t>(u)]; ++rx[static_cast<std::size_t>(v)]; }
      }
    }
    int load = 0;
    for (int v = 0; v < p; ++v) load = std::max({load, tx[static_cast<std::size_t>(v)], rx[static_cast<std::size_t>(v)]});
    if (load > 0) total += alpha + load * c / beta;
  }
  return total;
}

}  // namespace ptsim::sim
