// tools/recipe_flags.hpp — the training-recipe flags shared by `graph`, `predict` and `train`.
#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "core/checked_math.hpp"
#include "models/recipe.hpp"

namespace ptsim::tools {

struct RecipeFlags {
  std::string precision = "fp16";
  int64_t micro_batch = 32;
  int64_t seq_len = 128;
  int64_t grad_accum = 1;
  std::string optimizer = "lamb";
  int64_t data_parallel = 1;
  int64_t tensor_parallel = 1;
  bool recompute = false;
  bool selective_recompute = false;
  bool sequence_parallel = false;
  double bucket_mib = 25;
  int64_t max_predictions = 0;
  bool no_dropout = false;
  bool no_clipping = false;
  std::string stack;  // software stack (hwprofiles/stacks); "" = the GPU's one stack (graph: no fusions)
};

inline void add_recipe_flags(CLI::App& app, RecipeFlags& f) {
  app.add_option("--precision", f.precision, "fp32 | tf32 | fp16 | bf16 | fp8")->capture_default_str();
  app.add_option("--stack", f.stack, "software stack (ptsim profiles list): its fitted values and the ops it fuses");
  app.add_option("--micro-batch", f.micro_batch, "sequences per micro-step per data-parallel rank")->capture_default_str();
  app.add_option("--seq-len", f.seq_len, "sequence length")->capture_default_str();
  app.add_option("--grad-accum", f.grad_accum, "micro-steps per optimizer step")->capture_default_str();
  app.add_option("--optimizer", f.optimizer, "adamw | lamb | lans | sgd")->capture_default_str();
  app.add_option("--data-parallel", f.data_parallel, "data-parallel ranks")->capture_default_str();
  app.add_option("--tensor-parallel", f.tensor_parallel, "Megatron tensor-parallel ranks")->capture_default_str();
  app.add_flag("--recompute", f.recompute, "recompute each layer's activations in backward");
  app.add_flag("--selective-recompute", f.selective_recompute,
               "recompute only attention's core (QK^T, softmax, dropout, ·V) in backward (Korthikanti et al. 2022)");
  app.add_flag("--sequence-parallel", f.sequence_parallel,
               "Megatron sequence parallelism: LayerNorm/dropout on 1/T of the sequence (needs --tensor-parallel > 1)");
  app.add_option("--bucket-mib", f.bucket_mib, "gradient all-reduce bucket size in MiB")->capture_default_str();
  app.add_option("--max-predictions", f.max_predictions, "MLM predictions per sequence (0: as data prepare, ceil(15% of seq-len) rounded up to a multiple of 4: 20 at 128, 80 at 512)")
      ->capture_default_str();
  app.add_flag("--no-dropout", f.no_dropout, "build without dropout ops");
  app.add_flag("--no-clipping", f.no_clipping, "no global-norm gradient clipping");
}

// Ranges named by flag (docs/input-ranges.md); validate_recipe repeats them for recipes from scenarios.
inline void check_recipe_flag_ranges(const RecipeFlags& f) {
  core::check_range(f.micro_batch, core::ranges::micro_batch, "--micro-batch");
  core::check_range(f.seq_len, core::ranges::seq_len, "--seq-len");
  core::check_range(f.grad_accum, core::ranges::grad_accum, "--grad-accum");
  core::check_range(f.data_parallel, core::ranges::parallel, "--data-parallel");
  core::check_range(f.tensor_parallel, core::ranges::parallel, "--tensor-parallel");
  core::check_range(f.bucket_mib, core::ranges::bucket_mib, "--bucket-mib");
  core::check_range(f.max_predictions, core::ranges::max_predictions, "--max-predictions");
}

inline models::Recipe to_recipe(const RecipeFlags& f) {
  check_recipe_flag_ranges(f);
  models::Recipe r;
  r.precision = models::parse_precision(f.precision, "--precision");
  r.optimizer = models::parse_optimizer(f.optimizer, "--optimizer");
  r.micro_batch = f.micro_batch;
  r.seq_len = f.seq_len;
  r.grad_accum = f.grad_accum;
  r.data_parallel = f.data_parallel;
  r.tensor_parallel = f.tensor_parallel;
  r.recompute_activations = f.recompute;
  r.selective_recompute = f.selective_recompute;
  r.sequence_parallel = f.sequence_parallel;
  r.bucket_bytes = f.bucket_mib * 1024 * 1024;
  r.max_predictions = f.max_predictions;
  r.include_dropout = !f.no_dropout;
  r.gradient_clipping = !f.no_clipping;
  models::validate_recipe(r);
  return r;
}

}  // namespace ptsim::tools
