// sim/alpha_beta.hpp — closed-form α–β times of the collective decompositions in sim/collectives,
// for an uncontended network: α = per-step latency (s), β = bandwidth of one transfer (bytes/s).
// Used by tests (the flow simulation must reproduce them) and as a fast estimate.
// Sources: Thakur, Rabenseifner & Gropp, "Optimization of Collective Communication Operations in
// MPICH" (IJHPCA 2005) for ring/pipelined forms; Sanders, Speck & Träff 2009 for double binary trees.
#pragma once

namespace ptsim::sim {

// n = bytes per rank (the full buffer), p = ranks. Ring over p ranks, steps of n/p bytes.
double ring_all_reduce_seconds(int p, double n_bytes, double alpha_seconds, double beta_bytes_per_second);
double ring_reduce_scatter_seconds(int p, double n_bytes, double alpha_seconds, double beta_bytes_per_second);
double ring_all_gather_seconds(int p, double n_bytes, double alpha_seconds, double beta_bytes_per_second);
// Pipelined chain from the root: (p − 1 + k − 1)(α + c/β) with k = ⌈n/chunk⌉ chunks of c = n/k.
double pipelined_broadcast_seconds(int p, double n_bytes, double chunk_bytes, double alpha_seconds,
                                   double beta_bytes_per_second);
double send_recv_seconds(double n_bytes, double alpha_seconds, double beta_bytes_per_second);
// Hierarchical all-reduce over `nodes` × `g` ranks: intra-node ring reduce-scatter, g concurrent
// inter-node ring all-reduces of n/g bytes, intra-node ring all-gather. beta_inter is the bandwidth
// ONE inter-node ring gets (e.g. NIC bandwidth × nics / g when g rings share the NICs).
double hierarchical_all_reduce_seconds(int nodes, int g, double n_bytes, double alpha_intra, double beta_intra,
                                       double alpha_inter, double beta_inter);
// Double-binary-tree all-reduce over p ranks, one rank per node with one NIC of bandwidth β per
// direction: NCCL's two complementary binary trees carry n/2 each, in chunks, reduce (up) and broadcast
// (down) pipelined together. Each pipeline step costs α + L·c/β where L is the largest number of
// chunk transfers that share one NIC direction in that step (the max-min rate on the bottleneck);
// the sum is evaluated step by step over the tree shapes from sim/collectives.
double tree_all_reduce_seconds(int p, double n_bytes, double chunk_bytes, double alpha_seconds,
                               double beta_bytes_per_second);

}  // namespace ptsim::sim
