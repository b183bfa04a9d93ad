// tools/calibrate_nccl_tests.hpp — the `ptsim calibrate nccl-tests` subcommand, added to `ptsim calibrate`
// by tools/cmd_calibrate.cpp (tools/cmd_calibrate_nccl_tests.cpp).
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "hwprofiles/profiles.hpp"
#include "reports/collective_table.hpp"

namespace ptsim::tools {

struct NcclTestsFlags {
  std::string file;
  reports::BenchmarkCluster cluster;
  std::string op = "all_reduce", algorithm = "auto", format = "table", out;
  std::string profiles_dir = hwprofiles::hwprofiles_directory();
};

CLI::App* add_nccl_tests_subcommand(CLI::App& app, NcclTestsFlags& flags);
int run_nccl_tests_calibration(const NcclTestsFlags& flags);

}  // namespace ptsim::tools
