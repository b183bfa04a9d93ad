// runtime/train/trainer.cpp — the training loop (see trainer.hpp; docs/training.md).
// Determinism, which --resume relies on: parameters come from init_parameters(seed) on every rank; dropout
// masks are a function of (seed, step, micro_step, op stream) inside the executor; the data order is a
// function of (seed, epoch, cursor) in BatchLoader. A checkpoint stores weights, optimizer moments and step
// count, the loader cursor and everything the schedule needs, so a resumed run repeats the straight run's
// arithmetic exactly.
#include "runtime/train/trainer.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "core/atomic_file.hpp"
#include "core/checked_math.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/machine_memory.hpp"
#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "models/model_spec.hpp"
#include "models/op_times.hpp"
#include "models/task_graph.hpp"
#include "runtime/checkpoint/checkpoint.hpp"
#include "runtime/checkpoint/hf_gpt2_layout.hpp"  // defines: gpt2_tensors_to_hf, gpt2_tensors_from_hf
#include "runtime/comm/communicator.hpp"
#include "runtime/data/pretraining_dataset.hpp"
#include "runtime/data/tokenizer.hpp"        // defines: hash_to_hex
#include "runtime/exec/executor.hpp"
#include "runtime/exec/op_boundary_plan.hpp"  // defines: boundary_scratch_bytes
#include "runtime/optim/loss_scaler.hpp"
#include "runtime/exec/math/attention_math.hpp"  // defines: kCudaFusedAttentionMaxHeadDim
#include "runtime/optim/optimizer.hpp"
#include "runtime/train/replica_check.hpp"
#include "runtime/train/train_batches.hpp"

namespace ptsim::runtime {

namespace {

using core::InputError;
using core::write_file_atomic;
using core::Json;
namespace fs = std::filesystem;

volatile std::sig_atomic_t g_stop_signal = 0;

// The op-times file's device: "cpu: <model name from /proc/cpuinfo> (<threads> threads)"; "cpu (N threads)"
// when the model name is unknown.
std::string cpu_device_description(int threads) {
  std::string model;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon != std::string::npos) model = line.substr(colon + 1);
    while (!model.empty() && model.front() == ' ') model.erase(model.begin());
    break;
  }
  const int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  if (model.empty()) return fmt::format("cpu ({} threads)", n);
  return fmt::format("cpu: {} ({} threads)", model, n);
}

extern "C" void on_stop_signal(int sig) {
  if (g_stop_signal != 0) {  // second signal: the user means it
    std::signal(sig, SIG_DFL);
    std::raise(sig);
    return;
  }
  g_stop_signal = sig;
}

using Clock = std::chrono::steady_clock;
double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<int64_t>(std::llround(seconds));
  if (s >= 3600) return fmt::format("{}h{:02}m{:02}s", s / 3600, (s / 60) % 60, s % 60);
  if (s >= 60) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}s", s);
}

// Parameters with one row (or entry) per vocabulary id: stored padded to padded_vocab_size() in the graph,
// saved with the true vocab size (what transformers' BertForPreTraining expects).
bool is_vocab_parameter(const std::string& name) {
  return name == "bert.embeddings.word_embeddings.weight" || name == "cls.predictions.bias" ||
         name == "transformer.wte.weight";  // GPT-2's tied embedding and LM head
}

int find_tensor(const models::TaskGraph& g, const std::string& name) {
  for (const models::Tensor& t : g.tensors)
    if (t.name == name) return t.id;
  return -1;
}

}  // namespace

void validate_attention_kernel(AttentionKernel kernel, BackendKind backend, bool fused_attention,
                               models::Precision precision) {
  if (kernel != AttentionKernel::tensor_core) return;
  auto fail = [](const std::string& needs, const std::string& given) {
    throw InputError(fmt::format("ptsim train: --attention-kernel tensor-core {} (given {})", needs, given));
  };
  if (backend != BackendKind::cuda)
    fail("runs the CUDA backend's tensor-core kernels: it needs --backend cuda", fmt::format("--backend {}", to_string(backend)));
  if (!fused_attention)
    fail("chooses the kernel of the fused attention: it needs --fused-attention",
         "no --fused-attention: the unfused graph's attention is GEMMs and a softmax");
  if (precision != models::Precision::bf16 && precision != models::Precision::fp16)
    fail("runs on 16-bit q, k and v: it needs --precision bf16 or fp16",
         fmt::format("--precision {}", models::to_string(precision)));
}

namespace {

void validate_config(const TrainConfig& c) {
  auto fail = [](const std::string& msg) { throw InputError("ptsim train: " + msg); };
  validate_attention_kernel(c.attention_kernel, c.backend, c.fused_attention, c.precision);
  if (c.data_dir.empty()) fail("--data DIR is required (a directory written by 'ptsim data prepare')");
  // Sizes: the ranges of docs/input-ranges.md, so step × batch counters cannot wrap.
  core::check_range(c.steps, core::ranges::steps, "ptsim train: --steps");
  core::check_range(c.stop_after, core::ranges::every_steps, "ptsim train: --stop-after");
  core::check_range(c.micro_batch, core::ranges::micro_batch, "ptsim train: --micro-batch");
  core::check_range(c.grad_accum, core::ranges::grad_accum, "ptsim train: --grad-accum");
  core::check_range(c.checkpoint_every, core::ranges::every_steps, "ptsim train: --checkpoint-every");
  core::check_range(c.progress_every, core::ranges::every_steps, "ptsim train: --progress-every");
  if (!(c.lr > 0) || !std::isfinite(c.lr)) fail(fmt::format("--lr must be a positive number, got {}", c.lr));
  if (!(c.warmup >= 0 && c.warmup <= 1)) fail(fmt::format("--warmup is a fraction of --steps in [0, 1], got {}", c.warmup));
  if (c.checkpoint_every > 0 && c.checkpoint_dir.empty()) fail("--checkpoint-every needs --checkpoint-dir");
  if (c.resume && c.checkpoint_dir.empty()) fail("--resume needs --checkpoint-dir (the directory to resume from)");
  if (c.overwrite && c.checkpoint_dir.empty()) fail("--overwrite needs --checkpoint-dir (the directory to start afresh)");
  if (c.overwrite && c.resume) fail("--overwrite and --resume contradict each other: give one (continue, or start afresh)");
  if (c.threads < 0) fail(fmt::format("--threads must be >= 0, got {}", c.threads));
  // Loss scaling exists for fp16's narrow range: with fp32 or bf16 (fp32's exponent range) the flags would
  // do nothing, so they are errors rather than silently ignored.
  const bool fp16 = c.precision == models::Precision::fp16;
  if (c.loss_scale != 0 && !fp16)
    fail(fmt::format("--loss-scale applies to --precision fp16 only (this run is {}, which needs no loss scaling)",
                     models::to_string(c.precision)));
  if (c.loss_scale_window != 0 && !fp16)
    fail(fmt::format("--loss-scale-window applies to --precision fp16 only (this run is {})",
                     models::to_string(c.precision)));
  if (c.loss_scale_window != 0 && c.loss_scale != 0)
    fail("--loss-scale-window applies to dynamic loss scaling; a static --loss-scale never changes: give one of them");
  if (c.loss_scale < 0 || !std::isfinite(c.loss_scale))
    fail(fmt::format("--loss-scale must be a positive number (a static scale), got {}", c.loss_scale));
  if (c.loss_scale_window < 0) fail(fmt::format("--loss-scale-window must be >= 1, got {}", c.loss_scale_window));
}

// fp16: dynamic scaling from 2^16 with a 2000-step window unless the flags say otherwise; else disabled.
LossScalerConfig loss_scaler_config(const TrainConfig& c) {
  LossScalerConfig s;
  s.enabled = c.precision == models::Precision::fp16;
  s.dynamic = c.loss_scale == 0;
  if (c.loss_scale != 0) s.initial_scale = c.loss_scale;
  if (c.loss_scale_window != 0) s.growth_interval = c.loss_scale_window;
  validate_loss_scaler_config(s);
  return s;
}

LrSchedule make_schedule(const TrainConfig& c) {
  LrSchedule s;
  s.kind = c.schedule;
  s.peak_lr = c.lr;
  s.total_steps = c.steps;
  s.warmup_proportion = c.warmup;
  if (c.schedule == LrScheduleKind::warmup_constant_linear) {
    s.warmup_steps = static_cast<int64_t>(std::llround(c.warmup * static_cast<double>(c.steps)));
    s.constant_steps = 0;
  }
  validate_lr_schedule(s);
  return s;
}

// Everything a resumed run must agree on, as stored in state.json's extra.run. Compared field by field.
Json run_identity(const TrainConfig& c, const models::TaskGraph& g, uint64_t vocab_hash, int world_size) {
  const models::ModelSpec& m = g.model;
  Json run = {{"model",
           {{"name", m.name},
            {"num_layers", m.num_layers},
            {"hidden_size", m.hidden_size},
            {"num_heads", m.num_heads},
            {"intermediate_size", m.intermediate_size},
            {"vocab_size", m.vocab_size},
            {"max_position_embeddings", m.max_position_embeddings}}},
          {"vocab_hash", data::hash_to_hex(vocab_hash)},
          {"seq_len", g.recipe.seq_len},
          {"micro_batch", c.micro_batch},
          {"grad_accum", c.grad_accum},
          {"world_size", world_size},
          {"optimizer", models::to_string(c.optimizer)},
          {"precision", models::to_string(c.precision)},
          {"dropout", c.dropout},
          {"fused_attention", c.fused_attention},
          {"fused_softmax_dropout", c.fused_softmax_dropout},
          {"fused_bias_dropout_residual", c.fused_bias_dropout_residual},
          {"clipping", c.clipping},
          {"shuffle", c.shuffle},
          {"seed", c.seed}};
  // What the data cursor counts and the labels are: instances (MLM + NSP, with its predictions per sequence)
  // or next-token blocks (GPT-2, a label at every position). Checkpoints written before GPT-2 existed lack
  // the key and are mlm_nsp (the resume check reads them so).
  if (m.family == models::ModelFamily::gpt2) {
    run["objective"] = "causal_lm";
  } else {
    run["objective"] = "mlm_nsp";
    run["max_predictions"] = g.recipe.max_predictions_per_seq();
  }
  return run;
}

}  // namespace

Json hf_bert_config(const models::ModelSpec& m) {
  return {{"architectures", Json::array({"BertForPreTraining"})},
          {"model_type", "bert"},
          {"vocab_size", m.vocab_size},
          {"hidden_size", m.hidden_size},
          {"num_hidden_layers", m.num_layers},
          {"num_attention_heads", m.num_heads},
          {"intermediate_size", m.intermediate_size},
          {"hidden_act", "gelu"},  // erf GELU, as the graph's BERT gelu ops (gelu_tanh = false)
          {"hidden_dropout_prob", m.hidden_dropout},
          {"attention_probs_dropout_prob", m.attention_dropout},
          {"max_position_embeddings", m.max_position_embeddings},
          {"type_vocab_size", m.type_vocab_size},
          {"layer_norm_eps", m.layer_norm_eps},
          {"initializer_range", 0.02},
          {"pad_token_id", 0},
          {"torch_dtype", "float32"}};
}

// The metrics JSONL is streamed to its target, not written to a temporary file and renamed: it is read
// while training runs (tail -f, plots), and a run killed mid-way must leave the lines of the steps it did.
// So: the target must be a regular file or absent (checked at open), every line is flushed and checked
// (a full disk is exit 1 at that step, not a silent gap), and it is fsynced at every checkpoint, so the
// lines up to a checkpoint are as durable as the checkpoint (docs/training.md).
namespace {

class MetricsLog {
 public:
  MetricsLog(const std::string& path, bool append) {
    if (!path.empty()) file_ = std::make_unique<core::CheckedAppendFile>(path, append, "--metrics");
  }
  void write(const Json& line) {
    if (file_) file_->write_line(line.dump());
  }
  void sync() {
    if (file_) file_->sync();
  }
  void close() {
    if (file_) file_->close();
  }

 private:
  std::unique_ptr<core::CheckedAppendFile> file_;
};

// On --resume: the metrics lines of steps after the checkpoint came from a run that died before its next
// checkpoint; the resumed run writes those steps again. Drop them (and a torn last line), atomically, so
// the file holds each step once. Lines that are not ptsim metrics are kept as they are.
void trim_metrics_after(const std::string& path, int64_t last_step) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return;  // absent: nothing to trim
  std::string kept, line;
  bool dropped = false;
  while (std::getline(in, line)) {
    const bool complete = !in.eof();  // a last line without "\n" is torn, or at least must get one
    if (!complete) dropped = true;     // rewrite, so the next line does not join it
    const Json j = Json::parse(line, nullptr, false);
    const bool later = j.is_object() && j.contains("step") && j["step"].is_number_integer() &&
                       j["step"].get<int64_t>() > last_step;
    if (later || (!complete && j.is_discarded())) {
      dropped = true;
      continue;
    }
    (kept += line) += '\n';
  }
  if (dropped) write_file_atomic(path, kept, "--metrics");
}

class Trainer {
 public:
  Trainer(const TrainConfig& config, Communicator& comm, std::FILE* progress)
      : c_(config), comm_(comm), progress_(comm.rank() == 0 ? progress : nullptr) {}

  TrainSummary run() {
    setup();
    if (c_.resume) resume_from_checkpoint();
    else claim_checkpoint_dir();
    loop();
    return summary_;
  }

 private:
  void setup() {
    validate_config(c_);
    rank_ = comm_.rank();
    world_ = comm_.size();
    // Output paths are checked before any work, so a bad --op-times is not found out after the last step.
    if (!c_.op_times_path.empty()) (void)core::writable_target(c_.op_times_path, "--op-times");
    if (!c_.metrics_path.empty()) (void)core::writable_target(c_.metrics_path, "--metrics");
    // DIR/vocab.txt must be the vocab the shards were made with (as 'ptsim data inspect' checks): a
    // replaced vocab.txt would train on ids that mean other tokens.
    data::DatasetOpenOptions open_options;
    open_options.vocab_path = (fs::path(c_.data_dir) / "vocab.txt").string();
    dataset_ = data::PretrainingDataset::open(c_.data_dir, open_options);

    models::ModelSpec model = models::load_model(c_.model);
    if (model.family == models::ModelFamily::llama)
      throw InputError(fmt::format("ptsim train: model '{}' is {}; ptsim train runs BERT (MLM + NSP) and GPT-2 (causal "
                                   "LM) pretraining",
                                   c_.model, models::to_string(model.family)));
    causal_lm_ = model.family == models::ModelFamily::gpt2;
    if (causal_lm_) end_of_text_id_ = data::Vocab::load(dataset_->vocab_path()).sep_id();
    if (causal_lm_ && dataset_->seq_len() > model.max_position_embeddings)
      throw InputError(fmt::format("ptsim train: dataset '{}' has seq_len {}, more than {}'s {} position embeddings "
                                   "(prepare the data with --seq-len <= {}, or a model with more positions)",
                                   c_.data_dir, dataset_->seq_len(), model.name, model.max_position_embeddings,
                                   model.max_position_embeddings));
    // The tokenizer decides the vocabulary: the model's embedding and decoder take the dataset's vocab size
    // (the shards record it; it equals the line count of DIR/vocab.txt).
    model_vocab_before_ = model.vocab_size;
    model.vocab_size = dataset_->vocab_size();

    models::Recipe recipe;
    recipe.precision = c_.precision;  // bf16/fp16: 16-bit values in fp32 storage, fp32 masters (docs/executor.md)
    recipe.micro_batch = c_.micro_batch;
    recipe.seq_len = dataset_->seq_len();
    recipe.grad_accum = c_.grad_accum;
    recipe.optimizer = c_.optimizer;
    recipe.data_parallel = world_;
    if (!causal_lm_) recipe.max_predictions = dataset_->max_predictions();  // GPT-2: a label at every position
    recipe.include_dropout = c_.dropout;
    recipe.fused_attention = c_.fused_attention;  // same maths, no S×S tensors (docs/executor.md)
    recipe.fused_softmax_dropout = c_.fused_softmax_dropout;
    recipe.fused_bias_dropout_residual = c_.fused_bias_dropout_residual;
    recipe.gradient_clipping = c_.clipping;
    recipe.bucket_bytes = c_.bucket_mib * 1024 * 1024;  // sums are elementwise: the size changes no result
    if (c_.fused_attention && c_.backend == BackendKind::cuda && model.head_dim() > math::kCudaFusedAttentionMaxHeadDim)
      throw InputError(fmt::format("ptsim train: --fused-attention on the CUDA backend takes head dims up to {} ({} has "
                                   "{}): drop --fused-attention or use more heads",
                                   math::kCudaFusedAttentionMaxHeadDim, model.name, model.head_dim()));
    graph_ = std::make_unique<models::TaskGraph>(models::build_task_graph(model, recipe));

    // The executor allocates its buffers as models::plan_memory lays them out (weights, gradients, optimizer
    // moments, inputs, the activation arena): check that total against the machine before allocating.
    // Ranks that share this machine (mpirun sets OMPI_COMM_WORLD_LOCAL_SIZE) each allocate as much.
    // Plan what the backend stores (16-bit activations as 16 bits on the CPU and CUDA backends: storage_graph).
    // The backend's fp32 scratch for 16-bit operands (op_boundary_plan.hpp; CPU and CUDA alike) comes on top of the plan.
    const bool stores_16bit = backend_stores_16bit(c_.backend);
    const models::TaskGraph stored = storage_graph(*graph_, stores_16bit);
    const models::MemoryPlan plan = models::plan_memory(stored);
    // So would fp32 staging of 16-bit gradient buckets under data parallelism, with a communicator that cannot
    // sum them in their type (all_reduce_staging_bytes: 0 for MPI, NCCL and one rank, which all can).
    const double staging = world_ > 1 ? all_reduce_staging_bytes(stored, c_.comm_overlap, comm_) : 0.0;
    const double scratch = (stores_16bit ? static_cast<double>(boundary_scratch_bytes(stored)) : 0.0) + staging;
    // A communicator without 16-bit sums still trains (the same values as fp32 gradients), at twice the bytes
    // on the wire: say so once rather than let it pass silently (docs/executor.md, "Mixed precision").
    if (staging > 0 && progress_)
      fmt::print(progress_, "this communicator cannot sum 16-bit gradients in their type: each bucket is all-reduced "
                            "through fp32 staging ({:.1f} MiB), twice the bytes\n",
                 staging / (1024.0 * 1024.0));
    const char* advice = "use a smaller --micro-batch (with --grad-accum for the same global batch) or a smaller model";
    const std::string what = fmt::format("ptsim train: {} at micro-batch {} × seq {}", graph_->model.name,
                                         c_.micro_batch, dataset_->seq_len());
    if (const std::optional<BackendMemory> device = backend_device_memory(c_.backend)) {
      // A GPU backend allocates every buffer on its own device (one per rank).
      core::require_memory(plan.total_bytes() + scratch, device->free_bytes, device->device, "cudaMemGetInfo", what,
                           advice);
    } else {
      int local_ranks = 1;
      if (const char* s = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"); s && world_ > 1) local_ranks = std::max(1, std::atoi(s));
      core::require_available_memory(
          (plan.total_bytes() + scratch) * local_ranks,
          what + (local_ranks > 1 ? fmt::format(" × {} ranks on this machine", local_ranks) : std::string()), advice);
    }

    ExecutorOptions eo;
    eo.compute = ComputeType::f32;
    eo.seed = c_.seed;
    eo.time_ops = true;
    eo.threads = c_.threads;
    eo.backend = c_.backend;
    eo.backend_options.attention = c_.attention_kernel;
    eo.overlap_comm = c_.comm_overlap;
    // One rank alone may stop between ops; with several, a rank leaving mid-step would leave the others
    // waiting in the gradient all-reduce, so they agree at the step boundary instead (the loop's all-reduce).
    if (world_ == 1) eo.stop_requested = stop_requested;
    executor_ = std::make_unique<Executor>(*graph_, eo);
    executor_->init_parameters(c_.seed);
    zero_vocab_padding();
    for (auto [name, slot] : {std::pair{"cls.predictions.loss", &mlm_tensor_}, std::pair{"cls.seq_relationship.loss", &nsp_tensor_}}) {
      if (causal_lm_) break;  // GPT-2: the loss is the LM loss, nothing to split
      const int id = find_tensor(*graph_, name);
      *slot = executor_->has_scalar_output(id) ? id : -1;  // the executor keeps every cross-entropy loss
    }

    std::vector<ParamSlot> slots = executor_->param_slots();  // slot i == graph.params[i]
    OptimizerConfig oc = default_optimizer_config(c_.optimizer);
    if (!c_.clipping) oc.max_grad_norm = 0;
    // On the executor's backend, its state next to the weights; the update passes run on the backend's
    // vector-pass threads (the cores the GEMM pool leaves free; results do not depend on the count).
    optimizer_ = make_optimizer(executor_->backend(), oc, std::move(slots));
    scaler_ = std::make_unique<LossScaler>(loss_scaler_config(c_));
    schedule_ = make_schedule(c_);

    data::BatchLoaderOptions lo;
    lo.rank = rank_;
    lo.world_size = world_;
    lo.seed = c_.seed;
    lo.shuffle = c_.shuffle;
    loader_ = std::make_unique<TrainBatches>(*dataset_, causal_lm_, lo);
    if (loader_->per_epoch() == 0)
      throw InputError(fmt::format("ptsim train: dataset '{}' has {} instances, fewer than the {} ranks", c_.data_dir,
                                   dataset_->num_instances(), world_));
  }

  // Rows >= vocab_size of the vocab-sized parameters are GEMM padding: never looked up, excluded from the
  // softmax, so their gradient is always 0. Zeroing them once keeps them 0 for ever (Adam moments stay 0,
  // u = λ·0), which makes "slice on save, pad with zeros on load" exact, and keeps them out of ‖w‖ (LAMB).
  void zero_vocab_padding() {
    const int64_t vocab = graph_->model.vocab_size;
    for (size_t i = 0; i < graph_->params.size(); ++i) {
      const models::Parameter& p = graph_->params[i];
      if (!is_vocab_parameter(p.name)) continue;
      const models::Tensor& t = graph_->tensor(p.weight);
      const int64_t row = t.elements() / t.shape.at(0);
      std::vector<float> w = executor_->read_parameter(i);
      std::fill(w.begin() + vocab * row, w.end(), 0.0f);
      executor_->write_parameter(i, w);  // also refreshes the 16-bit copy
    }
  }

  // How much of parameter p a checkpoint stores (its fp32 master under bf16/fp16): all of it, or its first
  // vocab_size rows; `shape` gets the stored shape.
  size_t saved_elements(size_t index, std::vector<int64_t>* shape) const {
    const models::Parameter& p = graph_->params[index];
    const models::Tensor& t = graph_->tensor(p.weight);
    if (shape) *shape = t.shape;
    if (!is_vocab_parameter(p.name)) return static_cast<size_t>(t.elements());
    const int64_t vocab = graph_->model.vocab_size;
    const int64_t row = t.elements() / t.shape.at(0);
    if (shape) (*shape)[0] = vocab;
    return static_cast<size_t>(vocab * row);
  }

  void resume_from_checkpoint() {
    std::optional<Checkpoint> ckpt = load_latest_checkpoint(c_.checkpoint_dir);
    if (!ckpt)
      throw InputError(fmt::format("ptsim train --resume: no checkpoint in '{}' (expected {}/latest or step_<N>/; "
                                   "drop --resume to start from step 0)",
                                   c_.checkpoint_dir, c_.checkpoint_dir));
    const Json& extra = ckpt->extra;
    auto field = [&](const char* key) -> const Json& {
      if (!extra.contains(key))
        throw InputError(fmt::format("{}/state.json: extra.{} is missing (not written by ptsim train?)", ckpt->dir, key));
      return extra.at(key);
    };
    // The run must be the same run: compare every identity field and name the first that differs.
    const Json expected = run_identity(c_, *graph_, dataset_->vocab_hash(), world_);
    // Checkpoints written before --precision existed ran fp32 without loss scaling: read them as such.
    Json saved = field("run");
    if (saved.is_object() && !saved.contains("precision")) saved["precision"] = "fp32";
    // ... and those written before the fused-op flags ran the unfused graph.
    for (const char* fused : {"fused_attention", "fused_softmax_dropout", "fused_bias_dropout_residual"})
      if (saved.is_object() && !saved.contains(fused)) saved[fused] = false;
    // ... and those written before GPT-2 training existed were BERT's.
    if (saved.is_object() && !saved.contains("objective")) saved["objective"] = "mlm_nsp";
    if (saved.is_object() && saved.at("objective") != expected.at("objective"))
      throw InputError(fmt::format("ptsim train --resume: checkpoint {} was written by a run with objective = {}, this "
                                   "run has {} (a BERT checkpoint cannot continue as a GPT-2 model, nor the reverse)",
                                   ckpt->dir, saved.at("objective").dump(), expected.at("objective").dump()));
    for (auto it = expected.begin(); it != expected.end(); ++it) {
      if (!saved.contains(it.key()) || saved.at(it.key()) != it.value())
        throw InputError(fmt::format(
            "ptsim train --resume: checkpoint {} was written by a run with {} = {}, this run has {} "
            "(resume with the same flags, data and number of ranks)",
            ckpt->dir, it.key(), saved.contains(it.key()) ? saved.at(it.key()).dump() : "(missing)", it.value().dump()));
    }
    const LrSchedule saved_schedule = lr_schedule_from_json(field("lr_schedule"), ckpt->dir + "/state.json");
    if (to_json(saved_schedule) != to_json(schedule_))
      throw InputError(fmt::format("ptsim train --resume: checkpoint {} has the schedule {}, this run has {} "
                                   "(same --steps, --lr, --warmup, --schedule needed)",
                                   ckpt->dir, to_json(saved_schedule).dump(), to_json(schedule_).dump()));

    // Restore into host copies of the parameters (padding rows keep the zeros of zero_vocab_padding()),
    // then copy them in: write_parameter also refreshes the 16-bit copies from the restored fp32 masters.
    std::vector<std::vector<float>> values(graph_->params.size());
    std::vector<CheckpointTensorTarget> targets;
    for (size_t i = 0; i < graph_->params.size(); ++i) {
      std::vector<int64_t> shape;
      const size_t n = saved_elements(i, &shape);
      values[i] = executor_->read_parameter(i);
      targets.push_back({graph_->params[i].name, std::span<float>(values[i]).first(n), shape});
    }
    if (causal_lm_) graph_layout_gpt2_tensors(*ckpt);
    require_finite_values(*ckpt);
    restore_tensors(*ckpt, targets);
    for (size_t i = 0; i < graph_->params.size(); ++i) executor_->write_parameter(i, values[i]);
    optimizer_->load_state(ckpt->optimizer, ckpt->dir + "/optimizer.safetensors");
    if (extra.contains("loss_scaler") || scaler_->config().enabled)
      scaler_->load_json(field("loss_scaler"), ckpt->dir + "/state.json: extra");

    const data::LoaderCursor lc = checked_cursor(*ckpt, field("data"));
    loader_->seek(lc);
    start_step_ = ckpt->step + 1;
    const std::string state_path = ckpt->dir + "/state.json";
    core::JsonReader er(extra, state_path, "extra");
    elapsed_before_ = er.get_non_negative("elapsed_seconds", 0.0);
    if (!std::isfinite(elapsed_before_)) er.fail("elapsed_seconds", "a finite number of seconds >= 0");
    last_checkpoint_step_ = ckpt->step;
    summary_.checkpoint = ckpt->dir;
    if (progress_)
      fmt::print(progress_, "resumed from {} (step {}, data epoch {} offset {})\n", ckpt->dir, ckpt->step, lc.epoch,
                 lc.offset);
  }

  // A GPT-2 checkpoint's model.safetensors is in GPT2LMHeadModel's layout: back to the graph's names and
  // shapes. One written before ptsim wrote that layout holds the graph's own tensors: loaded as they are.
  void graph_layout_gpt2_tensors(Checkpoint& ckpt) const {
    if (is_hf_gpt2_layout(ckpt.tensors)) {
      ckpt.tensors = gpt2_tensors_from_hf(std::move(ckpt.tensors), ckpt.dir + "/model.safetensors");
      return;
    }
    if (progress_)
      fmt::print(progress_, "{}/model.safetensors is in ptsim's older GPT-2 layout (attn.query/key/value): read as "
                 "such; the checkpoints this run writes are in GPT2LMHeadModel's layout\n", ckpt.dir);
  }

  // The saved data cursor, range-checked: every rank takes micro_batch × grad_accum instances per step from
  // a cursor that starts at (0, 0), so the cursor after step N is fixed by N; any other value is corrupt.
  data::LoaderCursor checked_cursor(const Checkpoint& ckpt, const Json& saved) {
    const std::string state_path = ckpt.dir + "/state.json";
    if (ckpt.step < 1 || ckpt.step > c_.steps)
      throw InputError(fmt::format("{}: step {} is out of range for this run (1..--steps {})", state_path, ckpt.step,
                                   c_.steps));
    if (!saved.is_object()) throw InputError(fmt::format("{}: extra.data must be an object", state_path));
    core::JsonReader r(saved, state_path, "extra.data");
    const long long epoch = r.require_int("epoch");
    const long long offset = r.require_int("offset");
    if (epoch < 0) r.fail("epoch", "an epoch count >= 0");
    if (offset < 0) r.fail("offset", "an offset >= 0 (instances, or GPT-2 blocks)");
    const uint64_t per_rank = loader_->per_epoch();
    const uint64_t taken = static_cast<uint64_t>(ckpt.step) * static_cast<uint64_t>(c_.micro_batch * c_.grad_accum);
    data::LoaderCursor expected{taken / per_rank, taken % per_rank};
    data::LoaderCursor lc{static_cast<uint64_t>(epoch), static_cast<uint64_t>(offset)};
    if (!(lc == expected))
      throw InputError(fmt::format("{}: extra.data is epoch {} offset {}, but after step {} of micro-batch {} × "
                                   "accumulation {} over {} {} per rank it must be epoch {} offset {} (corrupt "
                                   "checkpoint, or another dataset)",
                                   state_path, epoch, offset, ckpt.step, c_.micro_batch, c_.grad_accum, per_rank, loader_->unit(),
                                   expected.epoch, expected.offset));
    return lc;
  }

  // A fresh run must not mix its checkpoints with another run's (a later --resume would pick whichever
  // `latest` names, and step_<N> of the old run would survive next to the new ones): refuse unless told.
  void claim_checkpoint_dir() {
    if (c_.checkpoint_dir.empty()) return;
    const std::optional<std::string> existing = find_latest_checkpoint(c_.checkpoint_dir);
    if (!existing) return;
    if (!c_.overwrite)
      throw InputError(fmt::format("ptsim train: --checkpoint-dir '{}' already holds a run (latest checkpoint {}); "
                                   "give --resume to continue it, --overwrite to delete its checkpoints and start "
                                   "afresh, or another directory",
                                   c_.checkpoint_dir, *existing));
    if (rank_ == 0) {
      remove_checkpoints(c_.checkpoint_dir);
      if (progress_) fmt::print(progress_, "--overwrite: removed the checkpoints in {}\n", c_.checkpoint_dir);
    }
  }

  void save(int64_t step) {
    if (c_.checkpoint_dir.empty()) return;
    // Rank 0 writes the checkpoint of every rank: check first that they all hold the same state.
    std::string replica_hash;
    if (world_ > 1) {
      const uint64_t hash = replica_state_hash();
      require_replicas_agree(comm_, hash,
                             fmt::format("the state after step {} (fp32 masters, optimizer state, loss scaler, data "
                                         "cursor)",
                                         step));
      replica_hash = hash_hex(hash);
    }
    if (rank_ == 0) {
      std::vector<CheckpointTensorView> views;  // fp32 master weights whatever the precision, copied out
      std::vector<std::vector<float>> values(graph_->params.size());
      for (size_t i = 0; i < graph_->params.size(); ++i) {
        std::vector<int64_t> shape;
        const size_t n = saved_elements(i, &shape);
        values[i] = executor_->read_parameter(i);
        views.push_back({graph_->params[i].name, std::span<const float>(values[i]).first(n), shape});
      }
      // Every rank's cursor is the same (each takes B instances per micro-step), so rank 0's stands for all.
      const data::LoaderCursor lc = loader_->position();
      Json extra = {{"trainer", "ptsim train"},
                    {"step", step},
                    {"seed", c_.seed},
                    {"run", run_identity(c_, *graph_, dataset_->vocab_hash(), world_)},
                    {"lr_schedule", to_json(schedule_)},
                    {"data", {{"dir", c_.data_dir}, {"epoch", lc.epoch}, {"offset", lc.offset}, {"loader_seed", c_.seed}}},
                    {"dropout_rng", "hash(seed, step, micro_step, op stream): no state to save"},
                    {"precision", models::to_string(c_.precision)},
                    {"weights_dtype", "f32"},
                    {"loss_scaler", scaler_->to_json()},
                    {"elapsed_seconds", elapsed_before_ + seconds_between(t_start_, Clock::now())},
                    {"last_loss", last_loss_}};
      if (!replica_hash.empty()) extra["replica_state_hash"] = replica_hash;  // the same on every rank (checked)
      const Json hf_config = causal_lm_ ? hf_gpt2_config(graph_->model, end_of_text_id_) : hf_bert_config(graph_->model);
      const CheckpointExtraFile config[] = {{"config.json", hf_config.dump(2) + "\n"}};
      // GPT-2: written in GPT2LMHeadModel's layout (fused, transposed c_attn; Conv1D projections). BERT's
      // graph names and shapes are already BertForPreTraining's.
      std::vector<CheckpointTensor> hf_tensors;
      if (causal_lm_) {
        hf_tensors = gpt2_tensors_to_hf(views);
        views.clear();
        for (const CheckpointTensor& t : hf_tensors) views.push_back({t.name, t.values, t.shape});
      }
      const std::string dir = save_checkpoint(c_.checkpoint_dir, step, views, optimizer_->save_state(), extra, config);
      summary_.checkpoint = dir;
      if (progress_) fmt::print(progress_, "checkpoint {}\n", dir);
    }
    last_checkpoint_step_ = step;
  }

  // FNV-1a over what makes a rank's next steps and its checkpoint: every fp32 master (padding rows too), the
  // optimizer's step count and state arrays, the loss scaler's state and the data cursor. Ranks must agree.
  uint64_t replica_state_hash() const {
    uint64_t h = core::kFnv1aOffset;
    for (size_t i = 0; i < graph_->params.size(); ++i) {
      const std::vector<float> w = executor_->read_parameter(i);
      h = core::fnv1a64(w.data(), w.size() * sizeof(float), h);
    }
    const OptimizerState state = optimizer_->save_state();
    h = core::fnv1a64(&state.step, sizeof state.step, h);
    for (const NamedArray& a : state.arrays) {
      h = core::fnv1a64(a.name, h);
      h = core::fnv1a64(a.values.data(), a.values.size() * sizeof(float), h);
    }
    h = core::fnv1a64(scaler_->to_json().dump(), h);
    const data::LoaderCursor lc = loader_->position();
    h = core::fnv1a64(&lc.epoch, sizeof lc.epoch, h);
    return core::fnv1a64(&lc.offset, sizeof lc.offset, h);
  }

  // The next micro-batch into the graph's data inputs, and dLoss/dloss.
  void fill_inputs() {
    loader_->fill_next(static_cast<int32_t>(c_.micro_batch), *graph_, *executor_);
    if (device_loss_scale_) return executor_->seed_loss_gradient();  // fp32(scale / grad_accum), formed on the device
    const auto& in = graph_->inputs;
    // dLoss/dloss of one micro-step: the step's loss is the mean over micro-steps, times the loss scale
    // (fp16; 1 otherwise), which the step tail divides out of the gradients again.
    const float loss_grad = static_cast<float>(scaler_->scale() / static_cast<double>(c_.grad_accum));
    executor_->write_tensor<float>(in.loss_grad, std::span<const float>(&loss_grad, 1));
  }

  // "fp32", "bf16 (fp32 master weights)", "fp16 (fp32 master weights; dynamic loss scale 65536, ×2 after 2000
  // clean steps)" or "... static loss scale S".
  std::string precision_description() const {
    const char* name = models::to_string(c_.precision);
    if (c_.precision == models::Precision::fp32) return name;
    if (c_.precision == models::Precision::bf16) return fmt::format("{} (fp32 master weights)", name);
    if (c_.precision == models::Precision::tf32) return fmt::format("{} (fp32 storage, TF32 tensor-core GEMMs)", name);
    const LossScalerConfig& s = scaler_->config();
    if (!s.dynamic) return fmt::format("{} (fp32 master weights; static loss scale {})", name, s.initial_scale);
    return fmt::format("{} (fp32 master weights; dynamic loss scale {}, ×2 after {} clean steps)", name, scaler_->scale(),
                       s.growth_interval);
  }

  // The fused attention's kernel, for the header (what the benchmark's logs show of a run).
  std::string attention_description() const {
    const bool sixteen = c_.precision == models::Precision::bf16 || c_.precision == models::Precision::fp16;
    if (c_.attention_kernel == AttentionKernel::tensor_core)
      return fmt::format("tensor-core kernels on {} q, k, v (--attention-kernel tensor-core; not yet verified on a GPU)",
                         models::to_string(c_.precision));
    if (c_.backend == BackendKind::cuda && sixteen)
      return "fp32 kernel on the 16-bit operands' fp32 copies (--attention-kernel fp32)";
    return "fp32 kernel";
  }

  // The device the run computes on, for the header and the op-times file: a GPU backend's "GPU <n> (<name>)"
  // (a GPU run's times were measured on the GPU, not the host's CPU), else the CPU and its threads.
  std::string device_description() const {
    const std::optional<BackendMemory> gpu = backend_device_memory(c_.backend);
    return gpu ? gpu->device : cpu_device_description(c_.threads);
  }

  void print_header() {
    if (!progress_) return;
    const models::ModelSpec& m = graph_->model;
    fmt::print(progress_,
               "ptsim train: {} (L={} H={} A={}, vocab {} from the data{}; {:.2f}M parameters)\n"
               "  data {} {}\n"
               "  batch {} × accum {} × {} rank(s) = {} sequences/step; {} lr {} ({} schedule, warmup {}); {} steps; "
               "dropout {}; seed {}\n"
               "  precision {}\n"
               "  backend {}: {}\n",
               m.name, m.num_layers, m.hidden_size, m.num_heads, m.vocab_size,
               m.vocab_size != model_vocab_before_ ? fmt::format(", model file says {}", model_vocab_before_) : "",
               static_cast<double>(graph_->parameter_count()) / 1e6, c_.data_dir, loader_->describe(), c_.micro_batch, c_.grad_accum, world_,
               c_.micro_batch * c_.grad_accum * world_, models::to_string(c_.optimizer), c_.lr, to_string(c_.schedule),
               c_.warmup, c_.steps, c_.dropout ? "on" : "off", c_.seed, precision_description(), to_string(c_.backend),
               device_description());
    if (c_.fused_attention) fmt::print(progress_, "  attention fused: {}\n", attention_description());
    std::fflush(progress_);
  }

  void loop() {
    print_header();
    if (rank_ == 0 && c_.resume && !c_.metrics_path.empty()) trim_metrics_after(c_.metrics_path, start_step_ - 1);
    MetricsLog metrics(rank_ == 0 ? c_.metrics_path : std::string(), c_.resume);
    t_start_ = Clock::now();
    summary_.first_step = start_step_;
    const int64_t last = c_.stop_after > 0 ? std::min(c_.steps, c_.stop_after) : c_.steps;
    const double sequences_per_step = static_cast<double>(c_.micro_batch * c_.grad_accum * world_);
    Communicator* step_comm = world_ > 1 ? &comm_ : nullptr;
    // fp16 with a dynamic scale keeps the scale in backend memory (after a restore: the restored one); a static
    // scale, bf16 and fp32 (scale 1, never changing) keep the host value, with the same bits.
    const LossScalerConfig& scaling = scaler_->config();
    device_loss_scale_ = scaling.enabled && scaling.dynamic && executor_->supports_device_loss_scale();
    if (device_loss_scale_) executor_->set_device_loss_scale(scaler_->device_state(c_.grad_accum));
    std::vector<int> summed = {graph_->loss_tensor};  // the step's sums: loss, then MLM and NSP where readable
    for (int id : {mlm_tensor_, nsp_tensor_})
      if (id >= 0) summed.push_back(id);

    std::vector<double> first_step_op_seconds;
    double measured_seconds = 0;
    int64_t measured_steps = 0;
    bool stop = false;
    int64_t step = start_step_;
    for (; step <= last && !stop; ++step) {
      const auto t0 = Clock::now();
      executor_->zero_gradients();
      // A stop request between two ops abandons the step: only activations and gradients were written, so
      // rewinding the data cursor to the step's start leaves exactly the state after step - 1, which the
      // stop checkpoint below saves; a resume then repeats this step bit for bit.
      const data::LoaderCursor step_start = loader_->position();
      bool abandoned = false;
      try {
        for (int64_t micro = 0; micro < c_.grad_accum; ++micro) {
          fill_inputs();
          // Nothing read back: the losses add up on the backend (the last micro-step starts the buckets' sums).
          executor_->run_micro_step_summed(step, micro, step_comm, summed);
        }
      } catch (const MicroStepAbandoned&) {
        abandoned = true;
      }
      if (abandoned) {
        loader_->seek(step_start);
        stop = true;
        abandoned_step_ = step;
        break;  // `step` stays the abandoned one: done = step - 1 below
      }
      const double lr = schedule_.lr(step);
      const double loss_scale = scaler_->scale();  // this step's: the mirror is updated from the read below
      if (device_loss_scale_) executor_->run_step_tail_device_scale(step_comm, optimizer_.get(), lr);
      else executor_->run_step_tail(step_comm, optimizer_.get(), lr, loss_scale);
      // The step's one read: its loss sums, its verdict and (fp16 dynamic) the scale after its update. An
      // fp16 scale that fell below 2^-24 throws here, at the step that took it there, as update() did.
      const StepStateRecord record = executor_->read_step_state();
      if (device_loss_scale_) scaler_->mirror(record.loss_scale);
      else scaler_->update(executor_->last_step_skipped());
      size_t next_sum = 1;
      const double loss_sum = record.loss_sums[0];
      const double mlm_sum = mlm_tensor_ >= 0 ? record.loss_sums[next_sum++] : 0.0;
      const double nsp_sum = nsp_tensor_ >= 0 ? record.loss_sums[next_sum++] : 0.0;
      // One small all-reduce per step: the mean loss over ranks, and whether any rank was asked to stop
      // (all ranks must leave the loop after the same step, or the others would wait in the next all-reduce).
      const double accum = static_cast<double>(c_.grad_accum);
      double shared[4] = {loss_sum / accum, mlm_sum / accum, nsp_sum / accum, stop_requested() ? 1.0 : 0.0};
      if (world_ > 1) comm_.all_reduce_sum(std::span<double>(shared, 4));
      const double loss = shared[0] / world_;
      // loss = mlm + nsp (the graph's "loss" add op): whichever part is readable gives the other.
      const bool have_parts = mlm_tensor_ >= 0 || nsp_tensor_ >= 0;
      const double mlm_loss = mlm_tensor_ >= 0 ? shared[1] / world_ : loss - shared[2] / world_;
      const double nsp_loss = nsp_tensor_ >= 0 ? shared[2] / world_ : loss - shared[1] / world_;
      stop = shared[3] > 0;
      const auto t1 = Clock::now();
      const double step_seconds = seconds_between(t0, t1);
      last_loss_ = loss;
      summary_.losses.push_back(loss);
      summary_.last_step = step;

      // Op times: the first step of a run is warm-up (page faults, Eigen's first-touch); average the rest.
      if (step == start_step_) {
        first_step_op_seconds = executor_->op_seconds();
        executor_->reset_timers();
        completed_op_seconds_.assign(first_step_op_seconds.size(), 0.0);
      } else {
        measured_seconds += step_seconds;
        ++measured_steps;
        // The timers as of this completed step: a step abandoned later adds its partial ops to the
        // executor's timers, which must not reach --op-times.
        if (!c_.op_times_path.empty()) completed_op_seconds_ = executor_->op_seconds();
      }
      const double elapsed = elapsed_before_ + seconds_between(t_start_, t1);
      const double rate_seconds = measured_steps > 0 ? measured_seconds / static_cast<double>(measured_steps) : step_seconds;
      if (rank_ == 0) {
        Json line = {{"step", step}, {"loss", loss}};
        if (causal_lm_) {  // GPT-2: the loss is the LM loss (mean over every position's next token)
          line["lm_loss"] = loss;
          line["perplexity"] = std::exp(loss);
        } else {
          line["mlm_loss"] = have_parts ? Json(mlm_loss) : Json(nullptr);
          line["nsp_loss"] = have_parts ? Json(nsp_loss) : Json(nullptr);
        }
        line.update(Json{{"lr", lr},
                     {"grad_norm", executor_->last_grad_norm()},
                     {"loss_scale", loss_scale},
                     {"skipped_steps", scaler_->skipped_steps()},
                     {"seq_per_s", sequences_per_step / step_seconds},
                     {"step_seconds", step_seconds},
                     {"elapsed_seconds", elapsed}});
        if (!std::isfinite(executor_->last_grad_norm())) line["grad_norm"] = nullptr;
        if (executor_->last_step_skipped()) line["skipped"] = true;  // non-finite gradients: no update
        metrics.write(line);
      }
      if (progress_ && c_.progress_every > 0 && (step % c_.progress_every == 0 || step == start_step_ || step == last)) {
        fmt::print(progress_, "step {:>{}}/{} | loss {:.4f}{} | lr {:.3e} | {:.1f} seq/s | elapsed {} | ETA {}\n", step,
                   fmt::formatted_size("{}", c_.steps), c_.steps, loss,
                   causal_lm_   ? fmt::format(" (lm, perplexity {:.1f})", std::exp(loss))
                   : have_parts ? fmt::format(" (mlm {:.4f}, nsp {:.4f})", mlm_loss, nsp_loss)
                                : "",
                   lr,
                   sequences_per_step / step_seconds,
                   format_duration(elapsed), format_duration(rate_seconds * static_cast<double>(c_.steps - step)));
        std::fflush(progress_);
      }
      if (!std::isfinite(loss))
        throw std::runtime_error(fmt::format("loss is {} at step {} (try a lower --lr)", loss, step));
      if (c_.checkpoint_every > 0 && step % c_.checkpoint_every == 0 && step != last) {
        metrics.sync();
        save(step);
      }
    }
    const int64_t done = step - 1;
    summary_.stopped_early = done < c_.steps;
    metrics.close();
    if (done >= start_step_ && last_checkpoint_step_ != done) save(done);
    if (progress_ && abandoned_step_ > 0)
      fmt::print(progress_, "stop requested during step {}: its partial work is discarded\n", abandoned_step_);
    if (progress_ && stop)
      fmt::print(progress_, "stopped by {} after step {}{}\n",
                 g_stop_signal == SIGINT ? "SIGINT" : g_stop_signal == SIGTERM ? "SIGTERM" : "a signal on another rank", done,
                 c_.checkpoint_dir.empty() ? " (no --checkpoint-dir: nothing saved)" : "; resume with --resume");
    if (progress_ && done < start_step_) fmt::print(progress_, "nothing to do: the checkpoint is at step {}\n", done);
    summary_.mean_step_seconds = measured_steps > 0 ? measured_seconds / static_cast<double>(measured_steps) : 0;
    if (rank_ == 0 && !c_.op_times_path.empty() && done >= start_step_) write_op_times(first_step_op_seconds, measured_steps);
  }

  void write_op_times(const std::vector<double>& first_step, int64_t measured_steps) {
    std::vector<double> per_step = measured_steps > 0 ? completed_op_seconds_ : first_step;
    const double n = measured_steps > 0 ? static_cast<double>(measured_steps) : 1.0;
    for (double& s : per_step) s /= n;
    models::OpTimesInfo info;
    info.source = "measured";
    info.device = device_description();
    info.step_seconds = measured_steps > 0 ? summary_.mean_step_seconds : 0;
    info.steps = measured_steps > 0 ? measured_steps : 1;
    if (measured_steps == 0) {
      double total = 0;
      for (double s : per_step) total += s;
      info.step_seconds = total;  // only the warm-up step ran: best available
    }
    write_file_atomic(c_.op_times_path, models::op_times_json(*graph_, per_step, info).dump(1) + "\n", "--op-times");
  }

  const TrainConfig& c_;
  Communicator& comm_;
  std::FILE* progress_ = nullptr;
  int rank_ = 0;
  int world_ = 1;
  std::unique_ptr<data::PretrainingDataset> dataset_;
  std::unique_ptr<models::TaskGraph> graph_;
  std::unique_ptr<Executor> executor_;
  std::unique_ptr<Optimizer> optimizer_;
  std::unique_ptr<LossScaler> scaler_;  // fp16 loss scaling (scale 1 and no changes for fp32/bf16)
  bool device_loss_scale_ = false;      // fp16 dynamic: the scale lives in backend memory, scaler_ mirrors it
  std::unique_ptr<TrainBatches> loader_;  // BERT instances or GPT-2 blocks (the cursor checkpoints save)
  bool causal_lm_ = false;                  // GPT-2: next-token loss over blocks (no MLM / NSP)
  int32_t end_of_text_id_ = -1;             // GPT-2: the vocab's [SEP] id (config.json's bos/eos_token_id)
  LrSchedule schedule_;
  int64_t model_vocab_before_ = 0;
  // The MLM / NSP loss tensors (the executor keeps them: scalar_output); -1 when the graph has none. One readable part gives the other (loss = mlm + nsp); with neither,
  // only the total is reported.
  int mlm_tensor_ = -1;
  int nsp_tensor_ = -1;
  int64_t start_step_ = 1;
  int64_t last_checkpoint_step_ = -1;
  int64_t abandoned_step_ = 0;
  std::vector<double> completed_op_seconds_;  // executor op timers after the last completed measured step  // > 0: the step a stop request cut short (nothing of it was kept)
  double elapsed_before_ = 0;
  double last_loss_ = 0;
  Clock::time_point t_start_ = Clock::now();
  TrainSummary summary_;
};

}  // namespace

TrainSummary run_training(const TrainConfig& config, Communicator& comm, std::FILE* progress) {
  Trainer trainer(config, comm, progress);
  return trainer.run();
}

void install_stop_signal_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

bool stop_requested() { return g_stop_signal != 0; }
void clear_stop_request() { g_stop_signal = 0; }

}  // namespace ptsim::runtime
