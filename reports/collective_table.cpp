// reports/collective_table.cpp — predicted nccl-tests tables (see the header).
#include "reports/collective_table.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "core/error.hpp"
#include "reports/prediction.hpp"

namespace ptsim::reports {
namespace {

using core::InputError;

const char* nccl_tests_name(sim::CollectiveKind kind) {
  switch (kind) {
    case sim::CollectiveKind::all_reduce: return "all_reduce";
    case sim::CollectiveKind::all_gather: return "all_gather";
    case sim::CollectiveKind::reduce_scatter: return "reduce_scatter";
    case sim::CollectiveKind::broadcast: return "broadcast";
    case sim::CollectiveKind::send_recv: return "sendrecv";
  }
  return "?";
}

// nccl-tests rounds each size down to whole elements on every rank (all_gather/reduce_scatter: p pieces).
double rounded_size(double bytes, const CollectiveTableSpec& s, int ranks) {
  const bool pieces = s.kind == sim::CollectiveKind::all_gather || s.kind == sim::CollectiveKind::reduce_scatter;
  const double unit = static_cast<double>(s.element_bytes) * (pieces ? ranks : 1);
  return std::floor(bytes / unit) * unit;
}

std::string gbps(double bytes_per_second) { return fmt::format("{:.2f}", bytes_per_second / 1e9); }

}  // namespace

double bus_bandwidth_factor(sim::CollectiveKind kind, int n) {
  switch (kind) {
    case sim::CollectiveKind::all_reduce: return 2.0 * (n - 1) / n;
    case sim::CollectiveKind::all_gather:
    case sim::CollectiveKind::reduce_scatter: return static_cast<double>(n - 1) / n;
    case sim::CollectiveKind::broadcast:
    case sim::CollectiveKind::send_recv: return 1.0;
  }
  return 1.0;
}

double parse_size_bytes(const std::string& text, const std::string& what) {
  double scale = 1;
  std::string number = text;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K': case 'k': scale = 1024.0; break;
      case 'M': case 'm': scale = 1024.0 * 1024; break;
      case 'G': case 'g': scale = 1024.0 * 1024 * 1024; break;
      default: break;
    }
    if (scale > 1) number.pop_back();
  }
  double value = 0;
  auto [ptr, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (number.empty() || ec != std::errc() || ptr != number.data() + number.size() || !(value > 0) ||
      value * scale > 1e15)
    throw InputError(fmt::format("{} '{}': expected a size in bytes such as 8, 64K, 128M or 1G (at most 10^15)", what,
                                 text));
  return value * scale;
}

sim::CollectiveKind parse_collective_kind(const std::string& name) {
  for (auto k : {sim::CollectiveKind::all_reduce, sim::CollectiveKind::all_gather, sim::CollectiveKind::reduce_scatter,
                 sim::CollectiveKind::broadcast})
    if (name == nccl_tests_name(k)) return k;
  throw InputError(fmt::format("--op '{}': expected all_reduce, all_gather, reduce_scatter or broadcast", name));
}

sim::ClusterConfig resolve_benchmark_cluster(const BenchmarkCluster& flags, const hwprofiles::ProfileSet& profiles,
                                             const std::string& who) {
  Scenario cluster_only;  // only the cluster fields are read by resolve_cluster
  cluster_only.file = who;
  cluster_only.node = flags.node;
  cluster_only.nodes = flags.nodes;
  cluster_only.gpus_per_node = flags.gpus_per_node;
  cluster_only.network = flags.network;
  cluster_only.channels = flags.channels;
  return resolve_cluster(cluster_only, profiles);
}

sim::CollectiveAlgorithm parse_collective_algorithm(const std::string& name) {
  if (name == "auto") return sim::CollectiveAlgorithm::automatic;
  if (name == "ring") return sim::CollectiveAlgorithm::ring;
  if (name == "tree") return sim::CollectiveAlgorithm::tree;
  if (name == "hierarchical") return sim::CollectiveAlgorithm::hierarchical;
  throw InputError(fmt::format("--algorithm '{}': expected auto, ring, tree or hierarchical", name));
}

void require_supported_algorithm(sim::CollectiveKind kind, sim::CollectiveAlgorithm algorithm) {
  using sim::CollectiveAlgorithm;
  if (algorithm == CollectiveAlgorithm::automatic || algorithm == CollectiveAlgorithm::ring) return;
  if (kind == sim::CollectiveKind::all_reduce) return;
  throw InputError(fmt::format("--algorithm {} with --op {}: expected auto or ring (tree and hierarchical are "
                               "modelled for all_reduce only; docs/network-model.md)",
                               sim::to_string(algorithm), nccl_tests_name(kind)));
}

CollectiveTable predict_collective_table(const CollectiveTableSpec& s) {
  require_supported_algorithm(s.kind, s.algorithm);
  if (!std::isfinite(s.step_factor))
    throw InputError(fmt::format("--step-factor {}: expected a finite factor > 1", s.step_factor));
  if (!(s.min_bytes > 0) || s.max_bytes < s.min_bytes)
    throw InputError(fmt::format("--min-bytes {} and --max-bytes {}: expected 0 < min ≤ max", s.min_bytes, s.max_bytes));
  if (!(s.step_factor > 1)) throw InputError(fmt::format("--step-factor {}: expected a factor > 1", s.step_factor));
  if (std::log(s.max_bytes / s.min_bytes) / std::log(s.step_factor) > 1000)
    throw InputError("--min-bytes/--max-bytes/--step-factor make more than 1,000 sizes: raise the step factor");
  CollectiveTable table;
  table.spec = s;
  table.ranks = s.config.gpu_count();
  if (table.ranks < 2) throw InputError("ptsim collective: one GPU has nothing to communicate (give --nodes or more GPUs)");
  double busbw_sum = 0;
  for (double size = s.min_bytes; size <= s.max_bytes * (1 + 1e-12); size *= s.step_factor) {
    const double bytes = rounded_size(size, s, table.ranks);
    if (bytes <= 0) continue;
    const sim::CollectiveResult r = sim::simulate_collective(
        s.config.cluster, sim::whole_cluster_collective(s.config, s.kind, s.algorithm, bytes));
    CollectiveRow row;
    row.bytes = bytes;
    row.count = static_cast<int64_t>(bytes / s.element_bytes);
    row.seconds = r.duration_seconds();
    row.algbw_bytes_per_second = bytes / row.seconds;
    row.busbw_bytes_per_second = row.algbw_bytes_per_second * bus_bandwidth_factor(s.kind, table.ranks);
    row.algorithm = sim::to_string(r.algorithm);
    busbw_sum += row.busbw_bytes_per_second;
    table.rows.push_back(row);
  }
  if (!table.rows.empty()) table.average_busbw_bytes_per_second = busbw_sum / static_cast<double>(table.rows.size());
  return table;
}

std::string collective_table_to_text(const CollectiveTable& t) {
  const auto& c = t.spec.config;
  std::string out = fmt::format(
      "# ptsim collective: {} predicted on {} × {} ({} GPUs each) over {} — {} ranks, {} channel(s)\n"
      "# the layout of nccl-tests' out-of-place columns (in-place predicts the same); #wrong is not simulated\n"
      "#\n#{:>12} {:>13} {:>9} {:>7} {:>7} {:>10} {:>7} {:>7} {:>13}\n#{:>12} {:>13} {:>9} {:>7} {:>7} {:>10} {:>7} {:>7}\n",
      nccl_tests_name(t.spec.kind), c.cluster.nodes, c.cluster.node.name, c.cluster.node.gpus_per_node,
      c.cluster.network.name, t.ranks, c.effective_channels(), "size",
      "count", "type", "redop", "root", "time", "algbw", "busbw", "algorithm", "(B)", "(elements)", "", "", "", "(us)",
      "(GB/s)", "(GB/s)");
  const bool reduces = t.spec.kind == sim::CollectiveKind::all_reduce || t.spec.kind == sim::CollectiveKind::reduce_scatter;
  for (const auto& r : t.rows)
    out += fmt::format(" {:>12.0f} {:>13} {:>9} {:>7} {:>7} {:>10.2f} {:>7} {:>7} {:>13}\n", r.bytes, r.count, "float",
                       reduces ? "sum" : "none", t.spec.kind == sim::CollectiveKind::broadcast ? "0" : "-1",
                       r.seconds * 1e6, gbps(r.algbw_bytes_per_second), gbps(r.busbw_bytes_per_second), r.algorithm);
  out += fmt::format("# Avg bus bandwidth    : {:.4f}\n", t.average_busbw_bytes_per_second / 1e9);
  return out;
}

nlohmann::json collective_table_to_json(const CollectiveTable& t) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : t.rows)
    rows.push_back({{"bytes", r.bytes}, {"count", r.count}, {"seconds", r.seconds},
                    {"algbw_gb_per_second", r.algbw_bytes_per_second / 1e9},
                    {"busbw_gb_per_second", r.busbw_bytes_per_second / 1e9}, {"algorithm", r.algorithm}});
  const auto& c = t.spec.config;
  return {{"schema", "ptsim.collective.v1"},
          {"op", nccl_tests_name(t.spec.kind)},
          {"node", c.cluster.node.name},
          {"nodes", c.cluster.nodes},
          {"gpus_per_node", c.cluster.node.gpus_per_node},
          {"network", c.cluster.network.name},
          {"ranks", t.ranks},
          {"bus_bandwidth_factor", bus_bandwidth_factor(t.spec.kind, t.ranks)},
          {"average_busbw_gb_per_second", t.average_busbw_bytes_per_second / 1e9},
          {"rows", rows}};
}

}  // namespace ptsim::reports
