// tools/ptsim.cpp — the `ptsim` command: dispatches to one subcommand per tools/cmd_<name>.cpp.
// Exit codes (docs/cli.md): 0 success, 2 bad input (message names file/field/flag), 1 internal or I/O
// failure (a write that failed, including to stdout: `ptsim predict > /dev/full` is not a success).
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string_view>

#include "core/atomic_file.hpp"  // defines: flush_stdout_ok
#include "core/error.hpp"
#include "tools/commands.hpp"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int, char**);
  const char* summary;
};

constexpr Subcommand kSubcommands[] = {
    {"predict", ptsim::tools::run_predict_command, "predict step time, time-to-train and cost"},
    {"validate", ptsim::tools::run_validate_command, "compare predictions with published runs"},
    {"graph", ptsim::tools::run_graph_command, "build and inspect one rank's TaskGraph"},
    {"profiles", ptsim::tools::run_profiles_command, "list or show hardware profiles"},
    {"data", ptsim::tools::run_data_command, "train a WordPiece vocab; prepare BERT shards"},
    {"train", ptsim::tools::run_train_command, "execute the TaskGraph for real (CPU backend)"},
    {"calibrate", ptsim::tools::run_calibrate_command, "fit GPU profiles to measured or published runs"},
    {"plan", ptsim::tools::run_plan_command, "the fastest TP x PP x DP (x ZeRO, recompute) plan that fits, and why others lost"},
    {"sweep", ptsim::tools::run_sweep_command, "many what-ifs: time-dollar frontier, cheapest plan by a deadline"},
    {"collective", ptsim::tools::run_collective_command, "predict a collective's nccl-tests table on a cluster"},
    {"report", ptsim::tools::run_report_command, "a self-contained HTML report with charts of a scenario (and a sweep)"},
    {"serve", ptsim::tools::run_serve_command, "the what-if page in the browser, and its JSON API (local HTTP server)"},
};

void print_usage(std::FILE* out) {
  std::fprintf(out, "ptsim — predict, execute and calibrate transformer pretraining on GPU clusters\n\n");
  std::fprintf(out, "usage: ptsim <command> [flags]   (ptsim <command> --help for its flags)\n\n");
  for (const auto& c : kSubcommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  // A write past the file-size limit (ulimit -f) fails with EFBIG, which every writer reports (exit 1, the
  // file named, the old file kept, the temporary removed), instead of killing ptsim without a word.
  std::signal(SIGXFSZ, SIG_IGN);
  if (argc < 2) {
    print_usage(stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    print_usage(stdout);
    return ptsim::core::flush_stdout_ok() ? 0 : 1;
  }
  for (const auto& c : kSubcommands) {
    if (name != c.name) continue;
    int rc = 1;
    try {
      rc = c.run(argc - 1, argv + 1);
    } catch (const ptsim::core::InputError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      rc = 2;
    } catch (const ptsim::core::IoError& e) {
      fmt::print(stderr, "error: {}\n", e.what());
      rc = 1;
    } catch (const std::exception& e) {
      fmt::print(stderr, "internal error: {}\n", e.what());
      rc = 1;
    }
    if (!ptsim::core::flush_stdout_ok()) {
      fmt::print(stderr, "error: writing to standard output failed (disk full, or the reader went away?)\n");
      if (rc == 0) rc = 1;
    }
    return rc;
  }
  fmt::print(stderr, "error: unknown command '{}' (expected one of: predict, validate, graph, profiles, data, train, calibrate, plan, sweep, collective, report, serve)\n",
             name);
  return 2;
}
