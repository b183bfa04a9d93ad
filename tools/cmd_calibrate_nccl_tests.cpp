// tools/cmd_calibrate_nccl_tests.cpp — `ptsim calibrate nccl-tests`: its flags and the calls of
// calibration/nccl_tests_calibration.hpp (read the benchmark's output, fit the network profile, print the
// before/after table, --out the fitted profile). docs/network-model.md, "Calibrating against nccl-tests".
#include <fmt/format.h>

#include <filesystem>

#include "calibration/calibrate.hpp"
#include "calibration/nccl_tests_calibration.hpp"
#include "core/atomic_file.hpp"
#include "core/error.hpp"
#include "hwprofiles/profiles.hpp"
#include "reports/collective_table.hpp"
#include "tools/calibrate_nccl_tests.hpp"

namespace ptsim::tools {

CLI::App* add_nccl_tests_subcommand(CLI::App& app, NcclTestsFlags& f) {
  CLI::App* sub = app.add_subcommand(
      "nccl-tests", "fit a network profile's latency and achieved bandwidth to a nccl-tests output file");
  sub->add_option("file", f.file, "the text a nccl-tests benchmark printed (e.g. all_reduce_perf's output)")->required();
  sub->add_option("--node", f.cluster.node, "node profile the benchmark ran on (ptsim profiles list)")->required();
  sub->add_option("--nodes", f.cluster.nodes, "number of nodes")->required()->check(CLI::Range(2, 100000));
  sub->add_option("--gpus-per-node", f.cluster.gpus_per_node, "GPUs per node (default: all)")->check(CLI::Range(1, 1024));
  sub->add_option("--network", f.cluster.network, "network profile to start from (default: the node's)");
  sub->add_option("--channels", f.cluster.channels, "NCCL channels (default: one per NIC, at least 2)")->check(CLI::Range(1, 64));
  sub->add_option("--op", f.op, "all_reduce|all_gather|reduce_scatter|broadcast: the benchmark that ran");
  sub->add_option("--algorithm", f.algorithm, "auto|ring|tree|hierarchical (as NCCL_ALGO was; default auto)");
  sub->add_option("--profiles", f.profiles_dir, "hardware profile directory")->capture_default_str();
  sub->add_option("--out", f.out, "write the fitted network profile (a copy of --network's with the fitted values) here");
  sub->add_option("--format", f.format, "table | json")->check(CLI::IsMember({"table", "json"}));
  return sub;
}

int run_nccl_tests_calibration(const NcclTestsFlags& f) {
  if (!f.out.empty()) {  // checked before the fit, so a bad --out costs nothing
    (void)core::writable_target(f.out, "--out");
    const auto dir = std::filesystem::absolute(f.out).parent_path();
    if (!std::filesystem::is_directory(dir))
      throw core::InputError(fmt::format("--out {}: the directory {} does not exist", f.out, dir.string()));
  }
  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles(f.profiles_dir);
  sim::ClusterConfig config = reports::resolve_benchmark_cluster(f.cluster, profiles, "ptsim calibrate nccl-tests");
  config.data_parallel_algorithm = reports::parse_collective_algorithm(f.algorithm);
  const sim::CollectiveKind kind = reports::parse_collective_kind(f.op);
  reports::require_supported_algorithm(kind, config.data_parallel_algorithm);
  const calibration::NcclTestsCalibration c = calibration::calibrate_nccl_tests(f.file, config, kind);
  if (f.format == "json") fmt::print("{}\n", calibration::nccl_tests_fit_json(c).dump(2));
  else fmt::print("{}", calibration::render_nccl_tests_fit(c));
  if (!f.out.empty()) {
    calibration::write_fitted_network(c, f.profiles_dir, f.out, calibration::today_utc());
    if (f.format != "json") fmt::print("wrote {}\n", f.out);
  }
  return 0;
}

}  // namespace ptsim::tools
