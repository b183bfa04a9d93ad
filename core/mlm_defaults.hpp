// core/mlm_defaults.hpp — the one default for BERT's masked-LM predictions per sequence, shared by
// `ptsim predict`/`graph` (models::Recipe) and `ptsim data prepare` (runtime/data), so a prediction and
// the shards it stands for agree on how many positions are masked.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

namespace ptsim::core {

// BERT's create_pretraining_data.py recipe: ⌈seq_len × masked_lm_prob⌉ rounded up to a multiple of 4,
// at most seq_len. With masked_lm_prob 0.15 this gives NVIDIA's values, 20 at seq 128 and 80 at seq 512.
inline int64_t default_max_predictions(int64_t seq_len, double masked_lm_prob = 0.15) {
  const auto raw = static_cast<int64_t>(std::ceil(static_cast<double>(seq_len) * masked_lm_prob - 1e-9));
  const int64_t rounded = ((std::max<int64_t>(raw, 1) + 3) / 4) * 4;
  return std::min(rounded, seq_len);
}

}  // namespace ptsim::core
