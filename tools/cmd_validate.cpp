// tools/cmd_validate.cpp — `ptsim validate`: published value, prediction and error for every validation
// target, from the one shipped profile set (no per-scenario factors). Runs used by the fit are marked.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "hwprofiles/profiles.hpp"
#include "reports/text_table.hpp"
#include "sim/calibration.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

namespace ptsim::tools {

int run_validate_command(int argc, char** argv) {
  CLI::App app{"Compare ptsim's predictions with published results; print the error of each", "validate"};
  std::string format = "table";
  std::string profiles_dir = hwprofiles::hwprofiles_directory();
  std::string runs_path = sim::default_published_runs_path();
  app.add_option("--format", format, "table | json")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  app.add_option("--profiles", profiles_dir, "hardware profile directory")->capture_default_str();
  app.add_option("--runs", runs_path, "published single-GPU runs")->capture_default_str();
  if (auto code = parse_or_exit(app, argc, argv)) return *code;

  hwprofiles::ProfileSet profiles = hwprofiles::load_profiles(profiles_dir);
  sim::PublishedRunSet set = sim::load_published_runs(runs_path);

  nlohmann::json single = nlohmann::json::array();
  reports::TextTable table({"single-GPU run", "used in fit", "published seq/s", "predicted", "error"});
  for (const auto& run : set.runs) {
    double predicted = sim::predict_run(run, hwprofiles::find_gpu(profiles, run.gpu));
    double error = predicted / run.sequences_per_second - 1;
    single.push_back({{"id", run.id}, {"gpu", run.gpu}, {"role", run.role}, {"published", run.sequences_per_second},
                      {"predicted", predicted}, {"relative_error", error}, {"source", run.source}});
    table.add_row({run.id, run.role == "fit" ? "yes" : "held out", fmt::format("{:.2f}", run.sequences_per_second),
                   fmt::format("{:.2f}", predicted), fmt::format("{:+.1f}%", 100 * error)});
  }
  if (format == "json") {
    fmt::print("{}\n", nlohmann::json{{"single_gpu_runs", single}}.dump(2));
    return 0;
  }
  fmt::print("Published single-GPU throughputs (BERT-large pretraining; {}):\n{}", set.path, table.render());
  return 0;
}

}  // namespace ptsim::tools
