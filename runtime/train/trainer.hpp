// runtime/train/trainer.hpp — the training loop that executes a BERT or GPT-2 TaskGraph for real: prepared shards
// → micro-batches with gradient accumulation → executor (forward, backward, bucketed gradient all-reduce,
// optimizer) → metrics, progress, checkpoints, resume, clean stop on SIGINT/SIGTERM.
// One process per data-parallel rank (mpirun -np N); rank 0 alone writes metrics, op times and checkpoints.
// Not here: kernels and the step tail (runtime/exec/), the data format (runtime/data/), optimizer math
// (runtime/optim/), flag parsing (tools/cmd_train.cpp). Design and file formats: docs/training.md.
#pragma once
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "core/json_reader.hpp"             // defines: Json
#include "models/model_spec.hpp"
#include "models/recipe.hpp"                // defines: OptimizerKind
#include "runtime/exec/device_types.hpp"    // defines: BackendKind
#include "runtime/optim/lr_schedule.hpp"    // defines: LrScheduleKind

namespace ptsim::runtime {

class Communicator;  // runtime/comm/communicator.hpp

struct TrainConfig {
  std::string data_dir;                 // written by `ptsim data prepare` (shards, manifest.json, vocab.txt)
  std::string model = "bert-tiny";      // built-in name or JSON path; vocab_size is replaced by the dataset's
  int64_t steps = 100;                  // optimizer steps of the whole run (the schedule's total)
  int64_t stop_after = 0;               // > 0: stop after this step as if interrupted (checkpoint, exit 0)
  int64_t micro_batch = 8;              // sequences per micro-step per rank
  int64_t grad_accum = 1;               // micro-steps per optimizer step
  models::OptimizerKind optimizer = models::OptimizerKind::lamb;
  // Storage/compute precision of the graph (docs/executor.md): fp32, or bf16/fp16 with fp32 master weights.
  models::Precision precision = models::Precision::fp32;
  double loss_scale = 0;                // fp16 only: > 0 a static scale; 0 = dynamic (from 2^16)
  int64_t loss_scale_window = 0;        // fp16 dynamic only: clean steps before doubling; 0 = 2000
  double lr = 1e-3;                     // peak learning rate
  double warmup = 0.1;                  // fraction of `steps` spent warming up
  LrScheduleKind schedule = LrScheduleKind::poly_warmup;
  bool dropout = true;                  // false: graph built without dropout ops (DP equality tests)
  bool fused_attention = false;         // the graph's attention as one fused_attention op (recipe.fused_attention)
  // The CUDA backend's kernel for those ops (BackendOptions::attention): tensor_core needs backend cuda,
  // fused_attention and a bf16/fp16 precision (run_training refuses it otherwise).
  AttentionKernel attention_kernel = AttentionKernel::fp32;
  // The fused dropout ops (recipe.fused_softmax_dropout / fused_bias_dropout_residual; docs/executor.md,
  // "Fused dropout ops"): the same masks as the unfused graph, fewer passes.
  bool fused_softmax_dropout = false;
  bool fused_bias_dropout_residual = false;
  bool clipping = true;                 // global-norm clipping (LAMB/AdamW)
  bool shuffle = true;                  // per-epoch permutation of the instances
  uint64_t seed = 1234;                 // parameter init, dropout streams (seed, step, micro_step), data order
  int threads = 0;                      // compute threads per rank (0: Eigen's default)
  BackendKind backend = BackendKind::cpu;  // where the executor runs (made once: make_backend)
  bool comm_overlap = true;             // data parallel: bucket all-reduces start from backward (ExecutorOptions)
  double bucket_mib = 25;               // data parallel: gradient bucket size (DDP's default 25 MiB)
  std::string checkpoint_dir;           // empty: no checkpoints
  int64_t checkpoint_every = 0;         // > 0: also every K steps (always at the end and on a stop)
  bool resume = false;                  // continue from checkpoint_dir's latest checkpoint
  bool overwrite = false;               // checkpoint_dir holds another run: remove its checkpoints first
  std::string metrics_path;             // JSONL, one line per step (appended to on resume)
  std::string op_times_path;            // ptsim.op_times.v1 JSON, averaged over steps after the first
  int64_t progress_every = 10;          // progress line every N steps (0: none)
};

struct TrainSummary {
  int64_t first_step = 1;               // first step this run executed (1, or checkpoint step + 1)
  int64_t last_step = 0;                // last completed step
  bool stopped_early = false;           // signal or stop_after
  std::string checkpoint;               // last checkpoint directory written ("" if none)
  std::vector<double> losses;           // per executed step: mean over micro-steps and ranks
  double mean_step_seconds = 0;         // over the steps after this run's first
};

// The HuggingFace BertConfig of a model as the checkpoints' config.json (next to model.safetensors, so
// transformers' BertForPreTraining.from_pretrained can read a step directory; tools/torch_reference.py reads
// it too): vocab_size without GEMM padding, erf GELU ("gelu"), layer_norm_eps, dropout rates.
core::Json hf_bert_config(const models::ModelSpec& model);
// The HuggingFace GPT2Config of a GPT-2 model (hf_gpt2_config.cpp): n_embd, n_layer, n_head, n_inner,
// n_positions, tanh GELU ("gelu_new"), tied embeddings, vocab_size without GEMM padding; bos/eos_token_id =
// `end_of_text_id`, the vocab's [SEP] that ends each text of the token stream (transformers would otherwise
// assume GPT-2's 50256, outside a WordPiece vocabulary).
core::Json hf_gpt2_config(const models::ModelSpec& model, int32_t end_of_text_id);

// Refuses an attention kernel the run cannot use (core::InputError naming --attention-kernel, what it needs
// and what was given): tensor_core needs backend cuda, fused_attention and precision bf16 or fp16. run_training
// checks it; ptsim train also checks it before looking for a GPU, so the answer does not depend on the machine.
void validate_attention_kernel(AttentionKernel kernel, BackendKind backend, bool fused_attention,
                               models::Precision precision);

// Runs the loop. `progress` receives the progress lines (rank 0; null: silent). Throws core::InputError
// for bad input (data directory, model, flags that do not fit, a checkpoint that does not match the run).
TrainSummary run_training(const TrainConfig& config, Communicator& comm, std::FILE* progress);

// SIGINT/SIGTERM handlers that only set a flag; the loop checks it after each step, writes a checkpoint
// and returns with stopped_early. A second signal while the first is being handled kills the process.
void install_stop_signal_handlers();
bool stop_requested();
void clear_stop_request();

}  // namespace ptsim::runtime
