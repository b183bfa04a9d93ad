// tools/cmd_train.cpp — `ptsim train`: execute BERT pretraining for real on the CPU backend, one process
// per data-parallel rank (mpirun -np N ptsim train ...). Parses flags, sets up the communicator (--comm:
// NCCL, MPI or a single process, runtime/comm/comm_choice.hpp) and the signal handlers, and calls
// runtime::run_training (runtime/train/trainer.*). Flags and file formats: docs/training.md.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "core/checked_math.hpp"  // defines: check_range, ranges::bucket_mib
#include "core/error.hpp"
#include "runtime/comm/comm_choice.hpp"
#include "runtime/comm/comm_deadline.hpp"
#ifdef PTSIM_HAVE_CUDA
#include "runtime/exec/cuda/cuda_backend.hpp"  // defines: cuda_device_count
#endif
#include "runtime/comm/mpi_communicator.hpp"
#include "runtime/comm/nccl_communicator.hpp"
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

// --backend: the name must be known, the backend built into this ptsim, and for cuda a GPU present (exit 2
// saying so otherwise).
runtime::BackendKind parse_backend(const std::string& name) {
  const runtime::BackendKind kind = runtime::parse_backend_kind(name, "ptsim train: --backend");
  if (!runtime::backend_available(kind))
    throw core::InputError(fmt::format("ptsim train: --backend {}: this ptsim was built without the {} backend; use "
                                       "--backend cpu",
                                       name, name));
#ifdef PTSIM_HAVE_CUDA
  if (kind == runtime::BackendKind::cuda && runtime::cuda_device_count() == 0)
    throw core::InputError("ptsim train: --backend cuda: no CUDA device was found (the driver reports none); use "
                           "--backend cpu");
#endif
  return kind;
}

// --attention-kernel: the named kernel, checked against the flags it needs (runtime::validate_attention_kernel);
// not given, runtime::kDefaultAttentionKernel where it applies (cuda, fused, 16-bit), else fp32.
runtime::AttentionKernel attention_kernel_of(const std::string& name, runtime::BackendKind backend, bool fused,
                                             models::Precision precision) {
  if (name.empty()) {
    const runtime::AttentionKernel preferred = runtime::kDefaultAttentionKernel;
    const bool applies = backend == runtime::BackendKind::cuda && fused &&
                         (precision == models::Precision::bf16 || precision == models::Precision::fp16);
    return applies ? preferred : runtime::AttentionKernel::fp32;
  }
  const runtime::AttentionKernel kernel = runtime::parse_attention_kernel(name, "ptsim train: --attention-kernel");
  if (!fused)
    throw core::InputError(fmt::format("ptsim train: --attention-kernel {} chooses the kernel of the fused attention: "
                                       "it needs --fused-attention (given no --fused-attention)",
                                       name));
  runtime::validate_attention_kernel(kernel, backend, fused, precision);
  return kernel;
}

// Threads per rank when --threads is 0 and several ranks share the machine: split the cores between them.
int default_threads(int world) {
  if (world <= 1) return 0;
  int local = world;
  if (const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE")) local = std::max(1, std::atoi(s));
  const int cores = static_cast<int>(std::thread::hardware_concurrency());
  return std::max(1, cores / local);
}

// One rank failing must not leave the others blocked in a collective: report and end them all (MPI_Abort).
// An input error exits 2, a communication failure or internal error 1. Returns when there is one rank.
void end_all_ranks_if_parallel(const std::exception& e, int rank, int world) {
#ifdef PTSIM_HAVE_MPI
  if (world <= 1) return;
  const bool input = dynamic_cast<const core::InputError*>(&e) != nullptr;
  const bool comm_failure = dynamic_cast<const runtime::CommFailure*>(&e) != nullptr;
  fmt::print(stderr, "{}rank {}: {}\n",
             input ? "error: " : comm_failure ? "error: communication failed: " : "internal error: ", rank, e.what());
  std::fflush(stderr);
  runtime::MpiSession::abort(input ? 2 : 1);
#else
  (void)e;
  (void)rank;
  (void)world;
#endif
}

// The communicator `kind` (comm_choice.hpp); have_mpi_session: an MpiSession is live (launched by MPI).
std::unique_ptr<runtime::Communicator> make_communicator(runtime::CommKind kind, bool have_mpi_session) {
  switch (kind) {
#ifdef PTSIM_HAVE_MPI
    case runtime::CommKind::mpi: return std::make_unique<runtime::MpiCommunicator>();
#endif
#ifdef PTSIM_HAVE_NCCL
    case runtime::CommKind::nccl: {
      runtime::NcclSetup setup;
      setup.use_mpi = have_mpi_session;
      setup.timeout = runtime::comm_timeout_from_env(std::getenv("PTSIM_COMM_TIMEOUT_S"));
      return std::make_unique<runtime::NcclCommunicator>(setup);
    }
#endif
    case runtime::CommKind::single: return std::make_unique<runtime::SingleProcessCommunicator>();
    default: break;
  }
  (void)have_mpi_session;
  throw std::logic_error(fmt::format("ptsim train: communicator {} is not in this build", runtime::to_string(kind)));
}

}  // namespace

int run_train_command(int argc, char** argv) {
  CLI::App app{"Execute pretraining for real (CPU or CUDA backend): BERT (MLM + NSP loss) or GPT-2 (next-token "
               "loss) with micro-batches and gradient accumulation, LR schedule, metrics, checkpoints, --resume; "
               "data parallel under mpirun.",
               "train"};
  runtime::TrainConfig c;
  std::string backend = "cpu";
  std::string optimizer = "lamb";
  std::string precision = "fp32";
  std::string schedule = "poly";
  std::string comm_name = "auto";
  std::string attention_kernel;  // empty: runtime::kDefaultAttentionKernel where it applies
  bool no_dropout = false, no_clipping = false, no_shuffle = false, quiet = false, no_comm_overlap = false;
  app.add_option("--backend", backend, "cpu | cuda (cuda: builds with the CUDA backend only)")->capture_default_str();
  app.add_option("--comm", comm_name,
                 "auto | mpi | nccl: the data-parallel communicator (auto: NCCL for --backend cuda under mpirun "
                 "when built with NCCL, else MPI under mpirun, else none; docs/nccl.md)")
      ->capture_default_str();
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
      ->capture_default_str()
      ->check(integer_between(0, 1024, "an integer in [0, 1024] (0: all cores)"));  // 100000 claimed, 64 ran
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
  app.add_flag("--fuse-softmax-dropout", c.fused_softmax_dropout,
               "attention's softmax and its dropout as one op (recipe.fused_softmax_dropout; same masks)");
  app.add_flag("--fuse-bias-dropout-residual", c.fused_bias_dropout_residual,
               "each sublayer's output bias, dropout and residual add as one op (recipe.fused_bias_dropout_residual)");
  app.add_flag("--no-clipping", no_clipping, "no global-norm gradient clipping");
  app.add_flag("--fused-attention", c.fused_attention,
               "attention as one fused kernel per layer (online softmax, no S×S scores kept; docs/executor.md)");
  app.add_option("--attention-kernel", attention_kernel,
                 "fp32 | tensor-core: the fused attention's kernel on --backend cuda at --precision bf16/fp16 "
                 "(tensor-core: not yet verified on a GPU; default fp32; docs/cuda-backend.md)");
  app.add_option("--bucket-mib", c.bucket_mib, "data parallel: gradient all-reduce bucket size in MiB")
      ->capture_default_str();
  app.add_flag("--no-comm-overlap", no_comm_overlap,
               "data parallel: all-reduce the gradient buckets after backward, not during it (--op-times then "
               "gives each all-reduce's whole time)");
  app.add_flag("--no-shuffle", no_shuffle, "read instances (GPT-2: blocks) in dataset order (no per-epoch permutation)");
  app.add_flag("--quiet", quiet, "no progress lines");
  if (auto code = parse_or_exit(app, argc, argv)) return *code;

  c.precision = models::parse_precision(precision, "ptsim train: --precision");
  // --attention-kernel depends on the flags alone: checked before --backend cuda looks for a GPU.
  c.attention_kernel = attention_kernel_of(attention_kernel,
                                           runtime::parse_backend_kind(backend, "ptsim train: --backend"),
                                           c.fused_attention, c.precision);
  c.backend = parse_backend(backend);
  c.optimizer = models::parse_optimizer(optimizer, "--optimizer");
  // tf32 runs on the CUDA backend (the graph's GEMMs on TF32 tensor cores, docs/cuda-backend.md); fp8 nowhere yet.
  if ((c.precision == models::Precision::tf32 && c.backend != runtime::BackendKind::cuda) ||
      c.precision == models::Precision::fp8)
    throw core::InputError(fmt::format("ptsim train: --precision {} is tensor-core math on {} GPUs; the CPU backend "
                                       "computes fp32, fp16 or bf16 (emulated): choose one of those (--backend cuda "
                                       "also runs tf32)",
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
  if (c.fused_softmax_dropout && no_dropout)
    throw core::InputError("ptsim train: --fuse-softmax-dropout fuses attention's dropout into its softmax; with "
                           "--no-dropout there is no dropout to fuse (drop one of the two flags)");
  if (c.fused_attention && c.fused_softmax_dropout)
    throw core::InputError("ptsim train: --fused-attention already runs attention's softmax and dropout inside one "
                           "kernel; --fuse-softmax-dropout fuses them in the unfused graph (drop one of the two flags)");
  c.clipping = !no_clipping;
  c.shuffle = !no_shuffle;

  const runtime::CommKind requested_comm = runtime::parse_comm_kind(comm_name, "ptsim train: --comm");
  runtime::CommContext context;
  context.launched_by_mpi = runtime::launched_by_mpi();
  std::unique_ptr<runtime::Communicator> comm;
  bool have_mpi_session = false;
  int world_rank = 0;
#ifdef PTSIM_HAVE_MPI
  context.built_with_mpi = true;
  std::unique_ptr<runtime::MpiSession> mpi;
  if (context.launched_by_mpi) {
    mpi = std::make_unique<runtime::MpiSession>();
    have_mpi_session = true;
    const runtime::MpiCommunicator world;
    context.world_size = world.size();
    world_rank = world.rank();
  }
#else
  if (context.launched_by_mpi && std::getenv("PTSIM_IGNORE_MPI") == nullptr)
    throw core::InputError("ptsim train: started by an MPI launcher, but this ptsim was built without MPI "
                           "(install libopenmpi-dev and rebuild; or set PTSIM_IGNORE_MPI=1 to run independent copies)");
#endif
#ifdef PTSIM_HAVE_NCCL
  context.built_with_nccl = true;
#endif
  try {
    const runtime::CommKind comm_kind = runtime::choose_communicator(requested_comm, c.backend, context);
    comm = make_communicator(comm_kind, have_mpi_session);
#ifdef PTSIM_HAVE_CUDA
    // NCCL picked this rank's GPU; with any other communicator the local rank picks it here.
    if (c.backend == runtime::BackendKind::cuda && comm_kind != runtime::CommKind::nccl) runtime::use_local_rank_device();
#endif
  } catch (const std::exception& e) {
    end_all_ranks_if_parallel(e, world_rank, context.world_size);
    throw;
  }
  if (no_comm_overlap && comm->size() == 1)
    throw core::InputError("ptsim train: --no-comm-overlap applies to data-parallel runs (mpirun -np N, N > 1); "
                           "with one rank there is no gradient all-reduce");
  c.comm_overlap = !no_comm_overlap;
  if (app.count("--bucket-mib") > 0) {
    if (comm->size() == 1)
      throw core::InputError("ptsim train: --bucket-mib applies to data-parallel runs (mpirun -np N, N > 1); with one "
                             "rank there is no gradient all-reduce");
    core::check_range(c.bucket_mib, core::ranges::bucket_mib, "ptsim train: --bucket-mib");
  }
  if (c.backend == runtime::BackendKind::cuda && app.count("--threads") > 0)
    throw core::InputError("ptsim train: --threads sets the cpu backend's compute threads; --backend cuda runs on "
                           "its GPU and takes no thread count");
  if (c.threads == 0) c.threads = default_threads(comm->size());

  runtime::install_stop_signal_handlers();
  runtime::TrainSummary s;
  try {
    s = runtime::run_training(c, *comm, quiet ? nullptr : stderr);
  } catch (const std::exception& e) {
    end_all_ranks_if_parallel(e, comm->rank(), comm->size());
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
