// tools/cmd_sweep.cpp — `ptsim sweep`: many what-ifs in one command. Flags → SweepSpec, evaluation on all
// cores (and across MPI ranks under mpirun: rank r takes configurations r, r+size, …; rank 0 gathers and
// writes), then the answer (recommended plan, frontier) as a table, JSON or CSV. A progress bar goes to
// stderr when it is a terminal (or with --progress); stdout stays clean. Model: docs/sweep.md.
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <mutex>
#include <thread>

#include "hwprofiles/profiles.hpp"
#include "reports/sweep.hpp"
#include "reports/sweep_output.hpp"
#include "core/atomic_file.hpp"
#include "runtime/comm/mpi_communicator.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

namespace ptsim::tools {
namespace {

struct SweepFlags {
  std::string scenario, file, deadline, objective, format = "table", out;
  std::vector<std::string> overrides, axes;
  bool auto_recipe = false, progress = false, no_progress = false;
  double budget_usd = 0;
  int64_t max_gpus = 0;
  int threads = 0;
  size_t top = 40;
};

reports::SweepSpec spec_from_flags(const SweepFlags& f, const CLI::App& app) {
  reports::SweepSpec spec;
  if (!f.file.empty()) {
    for (const char* flag : {"--scenario", "--set", "--vary"})
      if (app.count(flag) > 0)
        throw core::InputError(fmt::format("ptsim sweep: {} and --file both define the sweep; put it in the file", flag));
    spec = reports::load_sweep_file(f.file);
    if (app.count("--auto-recipe") > 0) spec.auto_recipe = true;
  } else {
    spec.base = reports::load_base_scenario(f.scenario, f.overrides, &spec.base_source, &spec.base_edits);
    for (const auto& a : f.axes) spec.axes.push_back(reports::parse_axis(a));
    spec.auto_recipe = f.auto_recipe;
  }
  // Constraints on the command line override the file's (docs/sweep.md).
  if (app.count("--deadline") > 0) spec.constraints.deadline_seconds = reports::parse_duration_seconds(f.deadline, "--deadline");
  if (app.count("--budget-usd") > 0) spec.constraints.budget_usd = f.budget_usd;
  if (app.count("--max-gpus") > 0) spec.constraints.max_gpus = f.max_gpus;
  if (!f.objective.empty()) spec.objective = reports::parse_objective(f.objective, "--objective");
  return spec;
}

// "[######....] 512/10000  85.3/s  ETA 1m51s", redrawn at most ten times a second after the first second.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled), start_(std::chrono::steady_clock::now()) {}
  void update(size_t done, size_t total) {
    if (!enabled_) return;
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - start_).count();
    if (elapsed < 1.0 || (done < total && now - last_ < std::chrono::milliseconds(100))) return;
    last_ = now;
    const double rate = static_cast<double>(done) / elapsed;
    const double eta = rate > 0 ? static_cast<double>(total - done) / rate : 0;
    const size_t filled = total ? 30 * done / total : 30;
    fmt::print(stderr, "\r[{}{}] {}/{}  {:.1f}/s  ETA {}m{:02d}s ", std::string(filled, '#'), std::string(30 - filled, '.'),
               done, total, rate, static_cast<int>(eta) / 60, static_cast<int>(eta) % 60);
    drawn_ = true;
    if (done == total) fmt::print(stderr, "\n");
  }
  void finish() {
    if (drawn_) fmt::print(stderr, "\n");
  }

 private:
  bool enabled_;
  bool drawn_ = false;
  std::mutex mutex_;
  std::chrono::steady_clock::time_point start_, last_{};
};

std::vector<size_t> slice(size_t total, int rank, int size) {
  std::vector<size_t> indices;
  for (size_t i = static_cast<size_t>(rank); i < total; i += static_cast<size_t>(size)) indices.push_back(i);
  return indices;
}

// Threads per rank: all cores, shared by the ranks of this host under mpirun.
int default_threads(int requested) {
  if (requested > 0) return requested;
  int local_ranks = 1;
  if (const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) local_ranks = std::max(1, std::atoi(s));
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / local_ranks);
}

std::string render(const reports::SweepSpec& spec, std::vector<reports::ConfigResult>& results, const SweepFlags& f) {
  const reports::SweepAnalysis analysis = reports::analyse_sweep(spec, results);
  if (f.format == "json") return reports::sweep_to_json(spec, results, analysis).dump(1) + "\n";
  if (f.format == "csv") return reports::sweep_to_csv(spec, results);
  return reports::sweep_to_text(spec, results, analysis, f.top);
}

void emit(const std::string& text, const std::string& out_path, const std::string& format) {
  if (out_path.empty()) {
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size() || std::fflush(stdout) != 0)
      throw std::runtime_error("ptsim sweep: writing to standard output failed");
    return;
  }
  core::write_file_atomic(out_path, text, "--out");
  fmt::print(stderr, "wrote {} ({})\n", out_path, format);
}

}  // namespace

int run_sweep_command(int argc, char** argv) {
  CLI::App app{"Evaluate many cluster and recipe choices at once: the time-dollar frontier, the cheapest plan that "
               "meets a deadline, the fastest within a budget (docs/sweep.md)", "sweep"};
  SweepFlags f;
  app.add_option("--scenario", f.scenario, "base scenario: a shipped name or a file")->default_str("t4-academic-cluster");
  app.add_option("--file", f.file, "a sweep file (JSON: base, set, axes, constraints, objective) instead of the flags");
  app.add_option("--set", f.overrides, "edit the base scenario: key=value (repeatable)");
  app.add_option("--vary", f.axes, "an axis: KEY=V1,V2,... or KEY=A..B, A..B+STEP, A..BxFACTOR (repeatable)");
  app.add_flag("--auto-recipe", f.auto_recipe, "plan each cluster: TP x PP x DP, schedule, ZeRO stage, recomputation, micro-batch (docs/planning.md)");
  app.add_option("--deadline", f.deadline, "time to train at most this (21d, 36h, 90min, seconds)");
  app.add_option("--budget-usd", f.budget_usd, "dollars at most this, on the objective's price basis (rental otherwise)")
      ->check(positive_number());
  app.add_option("--max-gpus", f.max_gpus, "skip configurations with more GPUs")->check(integer_at_least(1));
  app.add_option("--objective", f.objective, "what the recommended plan minimises: time|rental|spot|ownership|gpu_hours (default rental)");
  app.add_option("--format", f.format, "table|json|csv")->check(CLI::IsMember({"table", "json", "csv"}));
  app.add_option("--out", f.out, "write the output to FILE (atomically) instead of stdout");
  app.add_option("--threads", f.threads, "worker threads per process (default: all cores)")
      ->check(integer_in(core::ranges::worker_threads));
  app.add_option("--top", f.top, "table format: configurations listed (default 40)")->check(integer_at_least(1));
  app.add_flag("--progress", f.progress, "draw the progress bar even when stderr is not a terminal");
  app.add_flag("--no-progress", f.no_progress, "never draw the progress bar");
  if (auto code = parse_or_exit(app, argc, argv)) return *code;
  if (f.scenario.empty()) f.scenario = "t4-academic-cluster";
  if (f.top != 40 && f.format != "table") throw core::InputError("ptsim sweep: --top applies to --format table only");
  if (f.progress && f.no_progress) throw core::InputError("ptsim sweep: --progress and --no-progress contradict");

  const hwprofiles::ProfileSet profiles = hwprofiles::load_profiles();
  const reports::SweepSpec spec = spec_from_flags(f, app);
  reports::validate_sweep(spec, profiles);  // malformed axes are exit 2 before any work
  const size_t total = reports::configuration_count(spec);

  int rank = 0, size = 1;
#ifdef PTSIM_HAVE_MPI
  std::unique_ptr<runtime::MpiSession> mpi;
  std::unique_ptr<runtime::MpiCommunicator> comm;
  if (runtime::launched_by_mpi()) {
    mpi = std::make_unique<runtime::MpiSession>();
    comm = std::make_unique<runtime::MpiCommunicator>();
    rank = comm->rank();
    size = comm->size();
  }
#else
  if (runtime::launched_by_mpi() && std::getenv("PTSIM_IGNORE_MPI") == nullptr)
    throw core::InputError("ptsim sweep: started by an MPI launcher, but this ptsim was built without MPI "
                           "(install libopenmpi-dev and rebuild, or run one process with --threads)");
#endif
  ProgressBar bar(rank == 0 && !f.no_progress && (f.progress || isatty(STDERR_FILENO)));
  // Under MPI, rank 0 shows its own slice's progress (the slices are interleaved, so it tracks the whole).
  reports::SweepProgress progress{[&](size_t done, size_t n) { bar.update(done, n); }};
  std::vector<reports::ConfigResult> results =
      reports::evaluate_configurations(spec, slice(total, rank, size), profiles, default_threads(f.threads), progress);
  bar.finish();
#ifdef PTSIM_HAVE_MPI
  if (comm && size > 1) {
    nlohmann::json mine = nlohmann::json::array();
    for (const auto& r : results) mine.push_back(reports::config_result_to_json(r));
    const std::vector<std::string> all = comm->gather_strings_to_root(mine.dump());
    if (rank != 0) return 0;
    results.assign(total, {});
    for (const auto& text : all)
      for (const auto& j : nlohmann::json::parse(text)) {
        reports::ConfigResult r = reports::config_result_from_json(j);
        results[r.index] = std::move(r);
      }
  }
#endif
  emit(render(spec, results, f), f.out, f.format);
  return 0;
}

}  // namespace ptsim::tools
