// tools/cmd_train.cpp — `ptsim train`: execute BERT pretraining for real on the CPU backend, one process
// per data-parallel rank (mpirun -np N ptsim train ...). Parses flags, sets up the communicator (MPI when
// launched by an MPI launcher, else a single process) and the signal handlers, and calls
// runtime::run_training (runtime/train/trainer.*). Flags and file formats: docs/training.md.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "core/error.hpp"
#include "runtime/comm/mpi_communicator.hpp"
#include "runtime/comm/single_process_communicator.hpp"
#include "runtime/train/trainer.hpp"
#include "tools/cli_support.hpp"
#include "tools/commands.hpp"

namespace ptsim::tools {

namespace {

runtime::LrScheduleKind parse_schedule(const std::string& name) {
  if (name == "poly") return runtime::LrScheduleKind::poly_warmup;
  if (name == "lans") return runtime::LrScheduleKind::warmup_constant_linear;
  if (name == "constant") return runtime::LrScheduleKind::constant;
  throw core::InputError(fmt::format("ptsim train: --schedule '{}' is unknown (expected poly | lans | constant)", name));
}

// --backend: the name must be known, and the backend built into this ptsim (exit 2 saying so otherwise).
runtime::BackendKind parse_backend(const std::string& name) {
  const runtime::BackendKind kind = runtime::parse_backend_kind(name, "ptsim train: --backend");
  if (!runtime::backend_available(kind))
    throw core::InputError(fmt::format("ptsim train: --backend {}: this ptsim was built without the {} backend; use "
                                       "--backend cpu",
                                       name, name));
  return kind;
}

// Threads per rank when --threads is 0 and several ranks share the machine: split the cores between them.
int default_threads(int world) {
  if (world <= 1) return 0;
  int local = world;
  if (const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) local = std::max(1, std::atoi(s));
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores / local);
}

}  // namespace

int run_train_command(int argc, char** argv) {
  CLI::App app{"Execute BERT pretraining for real (CPU backend): micro-batches with gradient accumulation, "
               "LR schedule, MLM + NSP loss, metrics, checkpoints, --resume; data parallel under mpirun.",
               "train"};
  runtime::TrainConfig c;
  std::string backend = "cpu";
  std::string optimizer = "lamb";
  std::string precision = "fp32";
  std::string schedule = "poly";
  bool no_dropout = false, no_clipping = false, no_shuffle = false, quiet = false;
  app.add_option("--backend", backend, "cpu | cuda (cuda: builds with the CUDA backend only)")->capture_default_str();
  app.add_option("--model", c.model, "built-in model name or JSON path; vocab_size is taken from the data")
      ->capture_default_str();
  app.add_option("--data", c.data_dir, "dataset directory written by 'ptsim data prepare'")->required();
  app.add_option("--steps", c.steps, "optimizer steps of the whole run (the LR schedule's length)")->capture_default_str();
  app.add_option("--stop-after", c.stop_after, "stop after this step as if interrupted (checkpoint, exit 0); 0 = never")
      ->capture_default_str();
  app.add_option("--micro-batch", c.micro_batch, "sequences per micro-step per rank")->capture_default_str();
  app.add_option("--grad-accum", c.grad_accum, "micro-steps per optimizer step")->capture_default_str();
  app.add_option("--optimizer", optimizer, "lamb | adamw | lans | sgd")->capture_default_str();
  app.add_option("--precision", precision,
                 "fp32 | bf16 | fp16: 16-bit activations and weight copies, fp32 master weights and accumulation")
      ->capture_default_str();
  app.add_option("--loss-scale", c.loss_scale, "fp16 only: a static loss scale S (default: dynamic from 2^16)");
  app.add_option("--loss-scale-window", c.loss_scale_window,
                 "fp16 dynamic loss scaling only: clean steps before the scale doubles (default 2000)");
  app.add_option("--lr", c.lr, "peak learning rate")->capture_default_str();
  app.add_option("--warmup", c.warmup, "warm-up as a fraction of --steps")->capture_default_str();
  app.add_option("--schedule", schedule, "poly (NVIDIA PolyWarmUp, degree 0.5) | lans (warmup + linear decay) | constant")
      ->capture_default_str();
  app.add_option("--seed", c.seed, "parameter init, dropout and data order")->capture_default_str();
  app.add_option("--threads", c.threads, "compute threads per rank (0: all cores, split between local ranks)")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", c.checkpoint_dir, "write checkpoints here (step_<N>/, latest)");
  app.add_option("--checkpoint-every", c.checkpoint_every, "also checkpoint every K steps (0: only at the end/stop)")
      ->capture_default_str();
  app.add_flag("--resume", c.resume, "continue from --checkpoint-dir's latest checkpoint (same flags needed)");
  app.add_flag("--overwrite", c.overwrite,
               "--checkpoint-dir holds another run: delete its checkpoints and start afresh (without it: refused)");
  app.add_option("--metrics", c.metrics_path, "JSONL metrics, one line per step (appended to with --resume)");
  app.add_option("--op-times", c.op_times_path, "per-op measured seconds per step (ptsim.op_times.v1 JSON)");
  app.add_option("--progress-every", c.progress_every, "progress line every N steps (0: none)")->capture_default_str();
  app.add_flag("--no-dropout", no_dropout, "build the graph without dropout (exact comparisons)");
  app.add_flag("--no-clipping", no_clipping, "no global-norm gradient clipping");
  app.add_flag("--no-shuffle", no_shuffle, "read instances in dataset order (no per-epoch permutation)");
  app.add_flag("--quiet", quiet, "no progress lines");
  if (auto code = parse_or_exit(app, argc, argv)) return *code;

  c.backend = parse_backend(backend);
  c.optimizer = models::parse_optimizer(optimizer, "--optimizer");
  c.precision = models::parse_precision(precision, "ptsim train: --precision");
  if (c.precision == models::Precision::tf32 || c.precision == models::Precision::fp8)
    throw core::InputError(fmt::format("ptsim train: --precision {} is tensor-core math on {} GPUs; the CPU backend "
                                       "computes fp32, fp16 or bf16 (emulated): choose one of those",
                                       models::to_string(c.precision),
                                       c.precision == models::Precision::fp8 ? "H100/H200 (Hopper)" : "A100 and later"));
  // Given but zero would read as "not given" below (0 = dynamic / default window): refuse it here.
  if (app.count("--loss-scale") > 0 && !(c.loss_scale > 0))
    throw core::InputError(fmt::format("ptsim train: --loss-scale must be a positive number, got {}", c.loss_scale));
  if (app.count("--loss-scale-window") > 0 && c.loss_scale_window < 1)
    throw core::InputError(
        fmt::format("ptsim train: --loss-scale-window must be an integer >= 1, got {}", c.loss_scale_window));
  c.schedule = parse_schedule(schedule);
  c.dropout = !no_dropout;
  c.clipping = !no_clipping;
  c.shuffle = !no_shuffle;

  std::unique_ptr<runtime::Communicator> comm;
#ifdef PTSIM_HAVE_MPI
  std::unique_ptr<runtime::MpiSession> mpi;
  if (runtime::launched_by_mpi()) {
    mpi = std::make_unique<runtime::MpiSession>();
    comm = std::make_unique<runtime::MpiCommunicator>();
  }
#else
  if (runtime::launched_by_mpi() && std::getenv("PTSIM_IGNORE_MPI") == nullptr)
    throw core::InputError("ptsim train: started by an MPI launcher, but this ptsim was built without MPI "
                           "(install libopenmpi-dev and rebuild; or set PTSIM_IGNORE_MPI=1 to run independent copies)");
#endif
  if (!comm) comm = std::make_unique<runtime::SingleProcessCommunicator>();
  if (c.threads == 0) c.threads = default_threads(comm->size());

  runtime::install_stop_signal_handlers();
  runtime::TrainSummary s;
  try {
    s = runtime::run_training(c, *comm, quiet ? nullptr : stderr);
  } catch (const std::exception& e) {
#ifdef PTSIM_HAVE_MPI
    // One rank failing must not leave the others blocked in an all-reduce: report and end them all.
    if (comm->size() > 1) {
      const bool input = dynamic_cast<const core::InputError*>(&e) != nullptr;
      fmt::print(stderr, "{}rank {}: {}\n", input ? "error: " : "internal error: ", comm->rank(), e.what());
      std::fflush(stderr);
      runtime::MpiSession::abort(input ? 2 : 1);
    }
#endif
    throw;
  }
  if (comm->rank() == 0 && !quiet) {
    const int64_t ran = s.last_step - s.first_step + 1;
    if (ran > 0)
      fmt::print(stderr, "{} steps {}..{}{}; final loss {:.4f}; {:.3f} s/step{}\n", s.stopped_early ? "stopped after" : "trained",
                 s.first_step, s.last_step, s.stopped_early ? fmt::format(" (of {})", c.steps) : "", s.losses.back(),
                 s.mean_step_seconds, s.checkpoint.empty() ? "" : fmt::format("; checkpoint {}", s.checkpoint));
  }
  return 0;
}

}  // namespace ptsim::tools
