// models/recipe.hpp — how one training step is run: precision, batch shape, parallelism, optimizer.
#pragma once
#include <cstdint>
#include <string>

#include "core/mlm_defaults.hpp"

namespace ptsim::models {

// tf32: fp32 storage, GEMMs on tensor cores in TF32 (A100 and later); fp16/bf16: mixed precision with fp32
// master weights.
enum class Precision { fp32, tf32, fp16, bf16 };
// fp16/bf16: 16-bit activations and weights with fp32 master copies.
inline bool is_mixed_precision(Precision p) { return p == Precision::fp16 || p == Precision::bf16; }
enum class OptimizerKind { adamw, lamb, lans, sgd };

struct Recipe {
  Precision precision = Precision::fp16;
  int64_t micro_batch = 32;          // sequences per micro-step per data-parallel rank
  int64_t seq_len = 128;
  int64_t grad_accum = 1;            // micro-steps per optimizer step
  OptimizerKind optimizer = OptimizerKind::lamb;
  int64_t data_parallel = 1;
  int64_t tensor_parallel = 1;
  bool recompute_activations = false;
  double bucket_bytes = 25.0 * 1024 * 1024;  // DDP's default 25 MiB gradient buckets
  // BERT MLM: predictions per sequence. 0 = derive from seq_len as data prepare does (20 at 128, 80 at 512).
  int64_t max_predictions = 0;
  bool gradient_clipping = true;     // global-norm clipping before the update (NVLAMB clips to 1.0)
  bool include_dropout = true;       // false: no dropout ops (finite-difference checks, inference-like runs)
  // What the software stack fuses (hwprofiles/stacks, docs/stacks.md): it changes the graph that is built.
  bool fused_attention = false;         // QKᵀ, mask, softmax, dropout and ·V in one kernel: no S×S tensor
  bool multi_tensor_optimizer = true;   // one optimizer kernel per gradient bucket (else one per tensor)

  int64_t max_predictions_per_seq() const {
    // The same default as `ptsim data prepare` (core/mlm_defaults.hpp): 20 at 128, 80 at 512.
    return max_predictions > 0 ? max_predictions : core::default_max_predictions(seq_len);
  }
};

const char* to_string(Precision p);
const char* to_string(OptimizerKind o);
// Throw core::InputError naming `what` (e.g. "--precision") if the name is unknown.
Precision parse_precision(const std::string& name, const std::string& what);
OptimizerKind parse_optimizer(const std::string& name, const std::string& what);
// Checks consistency against nothing but itself (positive sizes etc.); throws InputError.
void validate_recipe(const Recipe& recipe);

}  // namespace ptsim::models
