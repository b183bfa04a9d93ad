// reports/collective_table.hpp — `ptsim collective`: the table nccl-tests prints (size, count, type, time,
// algbw, busbw), predicted by the network model and collective algorithms for a cluster, so users can
// hold the model against the benchmark they already run. busbw = algbw × nccl-tests' factor
// (all_reduce 2(n−1)/n; all_gather, reduce_scatter (n−1)/n; broadcast 1 — nccl-tests doc/PERFORMANCE.md).
// Sizes follow nccl-tests' conventions: all_gather's size is the gathered output, reduce_scatter's the
// input; -b/-e/-f sizes accept K, M, G suffixes (powers of 1024, as nccl-tests reads them).
// Not here: reading a measured nccl-tests file or fitting the network to it (a later calibration step).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/collectives.hpp"
#include "sim/step_simulator.hpp"

namespace ptsim::reports {

struct CollectiveTableSpec {
  sim::ClusterConfig config;         // node, network, nodes, GPUs per node, channels
  sim::CollectiveKind kind = sim::CollectiveKind::all_reduce;
  sim::CollectiveAlgorithm algorithm = sim::CollectiveAlgorithm::automatic;
  double min_bytes = 8;
  double max_bytes = 1 << 30;
  double step_factor = 2;
  int element_bytes = 4;             // float, nccl-tests' default type
};

struct CollectiveRow {
  double bytes = 0;
  int64_t count = 0;                 // elements
  double seconds = 0;
  double algbw_bytes_per_second = 0; // bytes / time
  double busbw_bytes_per_second = 0; // algbw × bus factor
  std::string algorithm;             // what ran (automatic resolved)
};

struct CollectiveTable {
  CollectiveTableSpec spec;
  int ranks = 0;
  std::vector<CollectiveRow> rows;
  double average_busbw_bytes_per_second = 0;  // nccl-tests' "Avg bus bandwidth": mean over the rows
};

// The cluster a benchmark runs on, from the flags `ptsim collective` and `ptsim calibrate nccl-tests` share.
struct BenchmarkCluster {
  std::string node;
  int nodes = 1;
  int gpus_per_node = 0;  // 0 = all of the node's
  std::string network;    // "" = the node's default
  int channels = 0;       // 0 = one per NIC, at least 2
};
// Resolved as a scenario's cluster is (prediction.hpp resolve_cluster); `who` names the command in errors.
sim::ClusterConfig resolve_benchmark_cluster(const BenchmarkCluster& flags, const hwprofiles::ProfileSet& profiles,
                                             const std::string& who);

double bus_bandwidth_factor(sim::CollectiveKind kind, int ranks);
// "8", "64K", "128M", "1G" (×1024 each); InputError naming `what` otherwise.
double parse_size_bytes(const std::string& text, const std::string& what);
sim::CollectiveKind parse_collective_kind(const std::string& name);
// --algorithm: auto | ring | tree | hierarchical; InputError otherwise.
sim::CollectiveAlgorithm parse_collective_algorithm(const std::string& name);

// InputError (exit 2) when the collective model has no `algorithm` for `kind`: tree and hierarchical are
// all_reduce only, broadcast is ring only (sim/collectives.cpp); the message lists what `kind` supports.
void require_supported_algorithm(sim::CollectiveKind kind, sim::CollectiveAlgorithm algorithm);

CollectiveTable predict_collective_table(const CollectiveTableSpec& spec);
std::string collective_table_to_text(const CollectiveTable& table);
nlohmann::json collective_table_to_json(const CollectiveTable& table);

}  // namespace ptsim::reports
