// models/recipe.cpp — recipe enums and validation.
#include "models/recipe.hpp"

#include <fmt/format.h>

#include "core/checked_math.hpp"
#include "core/error.hpp"

namespace ptsim::models {
using core::InputError;

const char* to_string(Precision p) {
  switch (p) {
    case Precision::fp32: return "fp32";
    case Precision::tf32: return "tf32";
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::fp8: return "fp8";
  }
  return "?";
}

const char* to_string(OptimizerKind o) {
  switch (o) {
    case OptimizerKind::adamw: return "adamw";
    case OptimizerKind::lamb: return "lamb";
    case OptimizerKind::lans: return "lans";
    case OptimizerKind::sgd: return "sgd";
  }
  return "?";
}

const char* to_string(PipelineSchedule s) {
  switch (s) {
    case PipelineSchedule::gpipe: return "gpipe";
    case PipelineSchedule::one_f_one_b: return "1f1b";
    case PipelineSchedule::interleaved: return "interleaved";
  }
  return "?";
}

const char* to_string(RankOrder o) { return o == RankOrder::tp_pp_dp ? "tp-pp-dp" : "tp-dp-pp"; }

RankOrder parse_rank_order(const std::string& name, const std::string& what) {
  for (RankOrder o : {RankOrder::tp_dp_pp, RankOrder::tp_pp_dp})
    if (name == to_string(o)) return o;
  throw InputError(fmt::format("{}: unknown rank order '{}' (expected tp-dp-pp or tp-pp-dp)", what, name));
}

PipelineSchedule parse_pipeline_schedule(const std::string& name, const std::string& what) {
  for (PipelineSchedule s : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved})
    if (name == to_string(s)) return s;
  throw InputError(fmt::format("{}: unknown pipeline schedule '{}' (expected gpipe, 1f1b or interleaved)", what, name));
}

Precision parse_precision(const std::string& name, const std::string& what) {
  for (Precision p : {Precision::fp32, Precision::tf32, Precision::fp16, Precision::bf16, Precision::fp8})
    if (name == to_string(p)) return p;
  throw InputError(fmt::format("{}: unknown precision '{}' (expected fp32, tf32, fp16, bf16 or fp8)", what, name));
}

OptimizerKind parse_optimizer(const std::string& name, const std::string& what) {
  for (OptimizerKind o : {OptimizerKind::adamw, OptimizerKind::lamb, OptimizerKind::lans, OptimizerKind::sgd})
    if (name == to_string(o)) return o;
  throw InputError(fmt::format("{}: unknown optimizer '{}' (expected adamw, lamb, lans or sgd)", what, name));
}

// The pipeline's shape against itself (the model's layers are checked by the builder): Megatron's rules.
void validate_pipeline(const Recipe& r) {
  const int64_t P = r.pipeline_parallel, V = r.virtual_stages, M = r.grad_accum;
  if (r.pipeline_schedule == PipelineSchedule::interleaved) {
    if (P < 2)
      throw InputError(fmt::format("pipeline schedule interleaved needs pipeline_parallel >= 2 (it is {})", P));
    if (M % P != 0)
      throw InputError(fmt::format("pipeline schedule interleaved needs the micro-batches per step (grad_accum {}) "
                                   "to be a multiple of pipeline_parallel {}, as Megatron-LM requires: e.g. {}",
                                   M, P, (M / P + 1) * P));
  } else if (V != 1) {
    throw InputError(fmt::format("virtual_stages {} needs pipeline_schedule interleaved (it is {})", V,
                                 to_string(r.pipeline_schedule)));
  }
  if (!r.stage_layers.empty() && static_cast<int64_t>(r.stage_layers.size()) != P * V)
    throw InputError(fmt::format("stage_layers has {} entries, but pipeline_parallel {} × virtual_stages {} = {} "
                                 "model chunks need one each", r.stage_layers.size(), P, V, P * V));
  for (size_t i = 0; i < r.stage_layers.size(); ++i)
    if (r.stage_layers[i] < 1)
      throw InputError(fmt::format("stage_layers[{}] is {}: every model chunk needs at least one layer", i,
                                   r.stage_layers[i]));
}

// Sequence parallelism splits the tensor-parallel group's sequence (Megatron-LM's rules); selective and full
// recomputation are two granularities of one choice (Megatron's --recompute-granularity).
namespace {
void validate_sequence_parallel(const Recipe& r) {
  if (r.sequence_parallel && r.tensor_parallel < 2)
    throw InputError(fmt::format("recipe.sequence_parallel needs tensor_parallel > 1 (it is {}): sequence parallelism "
                                 "splits the sequence over the tensor-parallel ranks", r.tensor_parallel));
  if (r.sequence_parallel && r.seq_len % r.tensor_parallel != 0)
    throw InputError(fmt::format("recipe.sequence_parallel needs seq-len {} to be a multiple of tensor_parallel {} "
                                 "(each rank holds seq-len / tensor_parallel positions), e.g. {}",
                                 r.seq_len, r.tensor_parallel, (r.seq_len / r.tensor_parallel + 1) * r.tensor_parallel));
  if (r.selective_recompute && r.recompute_activations)
    throw InputError("recipe.selective_recompute and recompute (full) exclude each other: full recomputation already "
                     "re-runs attention's core; choose one");
}
}  // namespace

void validate_recipe(const Recipe& r) {
  // Names as the flags spell them: scenario fields are range-checked (with their file) before this.
  core::check_range(r.micro_batch, core::ranges::micro_batch, "micro-batch");
  core::check_range(r.seq_len, core::ranges::seq_len, "seq-len");
  core::check_range(r.grad_accum, core::ranges::grad_accum, "grad-accum");
  core::check_range(r.data_parallel, core::ranges::parallel, "data-parallel");
  core::check_range(r.tensor_parallel, core::ranges::parallel, "tensor-parallel");
  core::check_range(r.pipeline_parallel, core::ranges::parallel, "pipeline-parallel");
  core::check_range(r.virtual_stages, core::ranges::virtual_stages, "virtual stages");
  if (r.zero_stage < 0 || r.zero_stage > 3)
    throw InputError(fmt::format("zero stage {}: expected 0 (none), 1 (optimizer state), 2 (+ gradients) or 3 "
                                 "(+ parameters)", r.zero_stage));
  validate_pipeline(r);
  validate_sequence_parallel(r);
  core::check_range(r.bucket_bytes / (1024.0 * 1024.0), core::ranges::bucket_mib, "bucket size (MiB)");
  core::check_range(r.max_predictions, core::ranges::max_predictions, "max-predictions (0 = derive from seq-len)");
}

}  // namespace ptsim::models
