// models/recipe.hpp — how one training step is run: precision, batch shape, parallelism, optimizer.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/mlm_defaults.hpp"

namespace ptsim::models {

// tf32: fp32 storage, GEMMs on tensor cores in TF32 (A100 and later); fp16/bf16: mixed precision with fp32
// master weights; fp8: Transformer Engine on Hopper — bf16 storage and fp32 masters as bf16, the transformer
// layers' linears as E4M3 (forward) / E5M2 (gradient) GEMMs with delayed per-tensor scaling (docs/precisions.md).
enum class Precision { fp32, tf32, fp16, bf16, fp8 };
// fp16/bf16/fp8: 16-bit activations and weights with fp32 master copies.
inline bool is_mixed_precision(Precision p) {
  return p == Precision::fp16 || p == Precision::bf16 || p == Precision::fp8;
}
enum class OptimizerKind { adamw, lamb, lans, sgd };
// Pipeline schedules (docs/parallelism.md): GPipe (all forwards, then all backwards), 1F1B (PipeDream-Flush,
// Megatron's default) and interleaved 1F1B with `virtual_stages` model chunks per device (Narayanan et al. 2021).
enum class PipelineSchedule { gpipe, one_f_one_b, interleaved };
// How (pipeline stage s, data-parallel index d, tensor-parallel index t) map to global ranks, innermost first
// (docs/parallelism.md): tp-dp-pp, Megatron-LM's default, rank = (s·D + d)·T + t; tp-pp-dp, rank = (d·P + s)·T + t
// (neighbouring stages on neighbouring GPUs, data parallelism outermost).
enum class RankOrder { tp_dp_pp, tp_pp_dp };

struct Recipe {
  Precision precision = Precision::fp16;
  int64_t micro_batch = 32;          // sequences per micro-step per data-parallel rank
  int64_t seq_len = 128;
  int64_t grad_accum = 1;            // micro-steps per optimizer step
  OptimizerKind optimizer = OptimizerKind::lamb;
  int64_t data_parallel = 1;
  int64_t tensor_parallel = 1;
  // Pipeline parallelism: stages P; micro-batches per step = grad_accum (Megatron's num_microbatches).
  int64_t pipeline_parallel = 1;
  PipelineSchedule pipeline_schedule = PipelineSchedule::one_f_one_b;
  int64_t virtual_stages = 1;         // model chunks per device (interleaved only)
  std::vector<int64_t> stage_layers;  // transformer layers per model chunk (P × V entries); empty = even split
  RankOrder rank_order = RankOrder::tp_dp_pp;
  // With a pipeline (docs/parallelism.md, "Overlapping the data-parallel communication with the pipeline"):
  // Megatron-LM's --overlap-grad-reduce — each stage reduces a gradient bucket as soon as its last micro-batch's
  // backward has made it final, instead of after the stage's last backward; and --overlap-param-gather (ZeRO-1)
  // — the updated parameters' all-gathers overlap the next step's forward, each forward waiting for its
  // buckets only. Without a pipeline the buckets already overlap the backward (DDP), and both are ignored.
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  // Sharded data parallel (ZeRO, Rajbhandari et al. 2020): 1 shards optimizer state (incl. fp32 masters),
  // 2 also gradients, 3 also parameters; over `shard_group` data-parallel ranks.
  int zero_stage = 0;
  // ZeRO 2/3's shard group: 0 = all data-parallel ranks (FSDP FULL_SHARD, SHARD_GRAD_OP); S = groups of S
  // consecutive DP ranks, replicated across the D/S groups (HYBRID_SHARD, _HYBRID_SHARD_ZERO2; S = a node).
  int64_t shard_group = 0;
  bool recompute_activations = false;
  // Megatron sequence parallelism (Korthikanti et al. 2022, docs/parallelism.md): LayerNorm, dropout and the
  // residual adds run on this rank's 1/T of the sequence; each TP all-reduce becomes an all-gather before the
  // column-parallel linear and a reduce-scatter after the row-parallel one. Needs tensor_parallel > 1.
  bool sequence_parallel = false;
  // Selective recomputation (Korthikanti et al. 2022 §5): only attention's core (QKᵀ, softmax, dropout, ·V) is
  // re-run before its backward, so its S×S tensors are not kept. Exclusive with recompute_activations (full).
  bool selective_recompute = false;
  double bucket_bytes = 25.0 * 1024 * 1024;  // DDP's default 25 MiB gradient buckets
  // BERT MLM: predictions per sequence. 0 = derive from seq_len as data prepare does (20 at 128, 80 at 512).
  int64_t max_predictions = 0;
  bool gradient_clipping = true;     // global-norm clipping before the update (NVLAMB clips to 1.0)
  bool include_dropout = true;       // false: no dropout ops (finite-difference checks, inference-like runs)
  // What the software stack fuses (hwprofiles/stacks, docs/stacks.md): it changes the graph that is built.
  bool fused_attention = false;         // QKᵀ, mask, softmax, dropout and ·V in one kernel: no S×S tensor
  bool multi_tensor_optimizer = true;   // one optimizer kernel per gradient bucket (else one per tensor)
  bool fused_softmax_dropout = false;   // scale, mask, softmax and dropout of attention in one kernel
  bool fused_bias_dropout_residual = false;  // x + dropout(y + b) after each sublayer's output linear, one kernel

  // The ranks one ZeRO shard spans: the shard group, else every data-parallel rank.
  int64_t zero_shards() const { return shard_group > 0 ? shard_group : data_parallel; }

  int64_t max_predictions_per_seq() const {
    // The same default as `ptsim data prepare` (core/mlm_defaults.hpp): 20 at 128, 80 at 512.
    return max_predictions > 0 ? max_predictions : core::default_max_predictions(seq_len);
  }
};

const char* to_string(Precision p);
const char* to_string(OptimizerKind o);
const char* to_string(PipelineSchedule s);
const char* to_string(RankOrder o);
PipelineSchedule parse_pipeline_schedule(const std::string& name, const std::string& what);
RankOrder parse_rank_order(const std::string& name, const std::string& what);
// Throw core::InputError naming `what` (e.g. "--precision") if the name is unknown.
Precision parse_precision(const std::string& name, const std::string& what);
OptimizerKind parse_optimizer(const std::string& name, const std::string& what);
// Checks consistency against nothing but itself (positive sizes etc.); throws InputError.
void validate_recipe(const Recipe& recipe);

}  // namespace ptsim::models
