// tools/commands.hpp — one entry point per `ptsim` subcommand, each in tools/cmd_<name>.cpp.
// Contract: return 0 on success; throw core::InputError (exit 2) for bad input; anything else is exit 1.
// argv[0] is the subcommand name; parse the rest with tools/cli_support.hpp.
#pragma once

namespace ptsim::tools {

int run_graph_command(int argc, char** argv);
int run_profiles_command(int argc, char** argv);
int run_predict_command(int argc, char** argv);
int run_validate_command(int argc, char** argv);
int run_data_command(int argc, char** argv);
int run_train_command(int argc, char** argv);
int run_calibrate_command(int argc, char** argv);
int run_sweep_command(int argc, char** argv);
int run_collective_command(int argc, char** argv);
int run_report_command(int argc, char** argv);
int run_serve_command(int argc, char** argv);
int run_plan_command(int argc, char** argv);

}  // namespace ptsim::tools
