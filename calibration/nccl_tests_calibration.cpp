// calibration/nccl_tests_calibration.cpp — see nccl_tests_calibration.hpp.
#include "calibration/nccl_tests_calibration.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "core/error.hpp"
#include "hwprofiles/profile_writer.hpp"

namespace ptsim::calibration {

namespace {

using core::InputError;

void check_cluster(const NcclTestsOutput& out, const sim::ClusterConfig& config) {
  if (out.ranks.empty()) return;  // an excerpt without the device list: the flags alone describe the cluster
  const int nodes = static_cast<int>(out.hosts().size());
  const int per_host = out.ranks_per_host();
  if (nodes != config.cluster.nodes || per_host != config.cluster.node.gpus_per_node)
    throw InputError(fmt::format("{}: the benchmark ran {} ranks on {} host(s), {} per host, but the flags describe {} "
                                 "node(s) × {} GPUs: give --nodes {} --gpus-per-node {}",
                                 out.source, out.ranks.size(), nodes, per_host, config.cluster.nodes,
                                 config.cluster.node.gpus_per_node, nodes, per_host));
}

void check_kind(const NcclTestsOutput& out, sim::CollectiveKind kind) {
  const bool reduces = kind == sim::CollectiveKind::all_reduce || kind == sim::CollectiveKind::reduce_scatter;
  for (const auto& r : out.rows)
    if (!r.redop.empty() && (r.redop == "none") == reduces)
      throw InputError(fmt::format("{} line {}: redop '{}' does not fit --op {} ({}): is this another benchmark's output?",
                                   out.source, r.line, r.redop, sim::to_string(kind),
                                   reduces ? "a reduction needs sum, prod, max, min or avg" : "it reduces nothing: 'none'"));
}

std::string percent(double x) { return fmt::format("{:+.1f}%", 100 * x); }

}  // namespace

NcclTestsCalibration calibrate_nccl_tests(const std::string& path, const sim::ClusterConfig& config,
                                          sim::CollectiveKind kind) {
  NcclTestsCalibration c;
  c.output = read_nccl_tests_file(path);
  c.config = config;
  c.kind = kind;
  check_cluster(c.output, config);
  check_kind(c.output, kind);
  c.fit = fit_network(config, kind, c.output.rows);
  return c;
}

std::string render_nccl_tests_fit(const NcclTestsCalibration& c) {
  const auto& f = c.fit;
  const auto& cl = c.config.cluster;
  std::string out = fmt::format(
      "calibrate nccl-tests: {} — {} on {} × {} ({} GPUs each) over {}, {} ranks, {} rows\n"
      "  latency            {:.2f} us -> {:.2f} us\n"
      "  achieved fraction  {:.3f} -> {:.3f} of {:.1f} Gb/s line rate\n"
      "  typical error      {:.1f}% -> {:.1f}%   (exp(rms ln(predicted / measured)) − 1; {} evaluations)\n\n",
      c.output.source, sim::to_string(c.kind), cl.nodes, cl.node.name, cl.node.gpus_per_node, cl.network.name,
      c.config.gpu_count(), f.rows.size(), f.latency_before_seconds * 1e6, f.latency_after_seconds * 1e6,
      f.fraction_before, f.fraction_after, cl.network.link_bytes_per_second * 8 / 1e9, 100 * f.typical_error_before,
      100 * f.typical_error_after, f.evaluations);
  if (!f.kept_because.empty()) out += fmt::format("  note: {}\n\n", f.kept_because);
  out += fmt::format("{:>13} {:>12} {:>12} {:>8} {:>12} {:>8}  {}\n", "size (B)", "measured us", "before us", "error",
                     "after us", "error", "algorithm");
  for (const auto& r : f.rows)
    out += fmt::format("{:>13.0f} {:>12.2f} {:>12.2f} {:>8} {:>12.2f} {:>8}  {}\n", r.bytes, r.measured_seconds * 1e6,
                       r.before_seconds * 1e6, percent(r.before_seconds / r.measured_seconds - 1), r.after_seconds * 1e6,
                       percent(r.after_seconds / r.measured_seconds - 1), r.algorithm);
  return out;
}

nlohmann::json nccl_tests_fit_json(const NcclTestsCalibration& c) {
  const auto& f = c.fit;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : f.rows)
    rows.push_back({{"bytes", r.bytes}, {"measured_seconds", r.measured_seconds}, {"before_seconds", r.before_seconds},
                    {"after_seconds", r.after_seconds}, {"algorithm", r.algorithm}});
  return {{"file", c.output.source},
          {"op", sim::to_string(c.kind)},
          {"node", c.config.cluster.node.name},
          {"nodes", c.config.cluster.nodes},
          {"gpus_per_node", c.config.cluster.node.gpus_per_node},
          {"network", c.config.cluster.network.name},
          {"latency_seconds", {{"before", f.latency_before_seconds}, {"after", f.latency_after_seconds}}},
          {"achieved_fraction", {{"before", f.fraction_before}, {"after", f.fraction_after}}},
          {"typical_error", {{"before", f.typical_error_before}, {"after", f.typical_error_after}}},
          {"fitted", {{"latency", f.latency_fitted}, {"achieved_fraction", f.fraction_fitted}}},
          {"note", f.kept_because},
          {"rows", rows}};
}

void write_fitted_network(const NcclTestsCalibration& c, const std::string& profiles_dir, const std::string& out_path,
                          const std::string& date) {
  const auto& cl = c.config.cluster;
  const std::string from = (std::filesystem::path(profiles_dir) / "networks" / (cl.network.name + ".json")).string();
  const std::string provenance = fmt::format(
      "fitted by ptsim calibrate nccl-tests on {} ({} rows of {} on {} × {} with {} GPUs each; typical error {:.1f}% "
      "before, {:.1f}% after; {}), starting from the {} profile",
      std::filesystem::path(c.output.source).filename().string(), c.fit.rows.size(), sim::to_string(c.kind), cl.nodes,
      cl.node.name, cl.node.gpus_per_node, 100 * c.fit.typical_error_before, 100 * c.fit.typical_error_after, date,
      cl.network.name);
  std::vector<hwprofiles::QuantityUpdate> updates;
  if (c.fit.fraction_fitted) updates.push_back({{"achieved_fraction"}, c.fit.fraction_after, "fraction", provenance});
  if (c.fit.latency_fitted) updates.push_back({{"latency"}, c.fit.latency_after_seconds * 1e6, "us", provenance});
  hwprofiles::write_quantities(from, out_path, updates);
}

}  // namespace ptsim::calibration
