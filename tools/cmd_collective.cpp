// tools/cmd_collective.cpp — `ptsim collective`: one collective over a range of sizes on a cluster, as the
// network model predicts it, in nccl-tests' table layout (reports/collective_table.hpp; docs/network-model.md).
#include <fmt/format.h>

#include "hwprofiles/profiles.hpp"
#include "reports/collective_table.hpp"
#include "reports/prediction.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

namespace ptsim::tools {

int run_collective_command(int argc, char** argv) {
  CLI::App app{"Predict a collective over a range of sizes on a cluster, in nccl-tests' table layout", "collective"};
  std::string node, network, op = "all_reduce", algorithm = "auto", min_bytes = "8", max_bytes = "1G",
              format = "table";
  int nodes = 1, gpus_per_node = 0, channels = 0;
  double step_factor = 2;
  app.add_option("--node", node, "node profile (ptsim profiles list)")->required();
  app.add_option("--nodes", nodes, "number of nodes (default 1)")->check(CLI::Range(1, 100000));
  app.add_option("--gpus-per-node", gpus_per_node, "GPUs used per node (default: all)")->check(CLI::Range(1, 1024));
  app.add_option("--network", network, "network profile between nodes (default: the node's)");
  app.add_option("--op", op, "all_reduce|all_gather|reduce_scatter|broadcast (nccl-tests' names)");
  app.add_option("--algorithm", algorithm, "auto|ring|tree|hierarchical (default auto, as NCCL's tuner)");
  app.add_option("--channels", channels, "NCCL channels (default: one per NIC, at least 2)")->check(CLI::Range(1, 64));
  app.add_option("--min-bytes,-b", min_bytes, "smallest size (nccl-tests -b; K/M/G suffixes)");
  app.add_option("--max-bytes,-e", max_bytes, "largest size (nccl-tests -e)");
  app.add_option("--step-factor,-f", step_factor, "size multiplier between rows (nccl-tests -f)");
  app.add_option("--format", format, "table|json")->check(CLI::IsMember({"table", "json"}));
  if (auto code = parse_or_exit(app, argc, argv)) return *code;

  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  reports::CollectiveTableSpec spec;
  spec.config = reports::resolve_benchmark_cluster({node, nodes, gpus_per_node, network, channels}, profiles,
                                                   "ptsim collective");
  spec.kind = reports::parse_collective_kind(op);
  spec.algorithm = reports::parse_collective_algorithm(algorithm);
  spec.min_bytes = reports::parse_size_bytes(min_bytes, "--min-bytes");
  spec.max_bytes = reports::parse_size_bytes(max_bytes, "--max-bytes");
  spec.step_factor = step_factor;
  const reports::CollectiveTable table = reports::predict_collective_table(spec);
  if (format == "json") fmt::print("{}\n", reports::collective_table_to_json(table).dump(2));
  else fmt::print("{}", reports::collective_table_to_text(table));
  return 0;
}

}  // namespace ptsim::tools
