// models/zero.hpp — ZeRO's sharding of the model states (Rajbhandari et al. 2020, §5 and Fig. 1): stage 1
// (P_os) divides the optimizer state — for mixed-precision Adam the fp32 master weights and both moments,
// K = 12 bytes per parameter — over the N_d data-parallel ranks; stage 2 (P_os+g) also the gradients; stage 3
// (P_os+g+p) also the parameters. So per GPU: (2 + 2 + K)Ψ, 2Ψ + 2Ψ + KΨ/N_d, 2Ψ + (2 + K)Ψ/N_d, (2 + 2 + K)Ψ/N_d.
#pragma once
#include <cstdint>

namespace ptsim::models {

struct ModelStates {
  double weights_bytes = 0;          // parameters in compute precision (2Ψ in fp16)
  double gradients_bytes = 0;        // 2Ψ in fp16
  double master_weights_bytes = 0;   // fp32 copy: part of K
  double optimizer_state_bytes = 0;  // Adam's moments: the rest of K
  double total_bytes() const { return weights_bytes + gradients_bytes + master_weights_bytes + optimizer_state_bytes; }
};

// What one of `shards` ranks holds at ZeRO `stage` (0 = everything replicated).
inline ModelStates shard_model_states(ModelStates s, int stage, int64_t shards) {
  const double n = static_cast<double>(shards > 0 ? shards : 1);
  if (stage >= 1) {
    s.master_weights_bytes /= n;
    s.optimizer_state_bytes /= n;
  }
  if (stage >= 2) s.gradients_bytes /= n;
  if (stage >= 3) s.weights_bytes /= n;
  return s;
}

}  // namespace ptsim::models
