// core/checked_math.hpp — int64 arithmetic on user-supplied sizes that cannot wrap, and the documented
// range of every size-like input field (docs/input-ranges.md). A product or sum that would overflow
// throws core::InputError naming what was being computed, so a huge size is exit 2, never a wrapped value.
#pragma once
#include <fmt/format.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "core/error.hpp"

namespace ptsim::core {

// a × b; `what` names the quantity (e.g. "tensor 'ffn.out' elements").
inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out))
    throw InputError(fmt::format("{}: {} × {} does not fit in a 64-bit integer (reduce the sizes; see docs/input-ranges.md)",
                                 what, a, b));
  return out;
}

inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out))
    throw InputError(fmt::format("{}: {} + {} does not fit in a 64-bit integer (reduce the sizes; see docs/input-ranges.md)",
                                 what, a, b));
  return out;
}

// An inclusive range of a size-like field; `why` says where the bound comes from (shown in errors).
struct IntRange {
  int64_t min;
  int64_t max;
  const char* why;
};

struct NumberRange {
  double min;          // exclusive when min_exclusive
  double max;          // inclusive
  bool min_exclusive;
  const char* why;
};

// The documented ranges (docs/input-ranges.md has the same table: keep them in step).
namespace ranges {
inline constexpr IntRange nodes{1, 100'000, "the largest clusters have ~10^5 GPUs; the simulation stays under a minute"};
inline constexpr IntRange per_node_count{1, 1'024, "per-node counts (GPUs, NICs, links) stay far below 1,024"};
inline constexpr IntRange gpus_per_node{1, 1'024, "no node holds more than 1,024 accelerators"};
inline constexpr IntRange layers{1, 10'000, "the deepest published transformers have a few hundred layers"};
inline constexpr IntRange hidden{1, 1 << 20, "hidden sizes stay far below 2^20 (GPT-3: 12,288)"};
inline constexpr IntRange heads{1, 1 << 16, "at most 65,536 attention heads"};
inline constexpr IntRange intermediate{1, 1 << 22, "FFN widths stay far below 2^22 (4 × the largest hidden sizes)"};
inline constexpr IntRange vocab{1, 1 << 24, "vocabularies stay below 16.7 M tokens (the largest: ~256 K)"};
inline constexpr IntRange vocab_pad_multiple{1, 1 << 16, "a padding multiple above 65,536 pads nothing useful"};
inline constexpr IntRange positions{1, 1 << 20, "position tables up to 2^20 (~1 M tokens)"};
inline constexpr IntRange type_vocab{0, 1 << 20, "segment vocabularies are tiny (BERT: 2)"};
inline constexpr IntRange seq_len{1, 1 << 20, "sequences up to 2^20 (~1 M tokens)"};
inline constexpr IntRange micro_batch{1, 1 << 20, "a micro-batch of 2^20 sequences is far beyond any device's memory"};
inline constexpr IntRange grad_accum{1, 1 << 24, "16.7 M micro-steps per optimizer step is far beyond any recipe"};
inline constexpr IntRange global_batch{1, int64_t{1} << 40, "2^40 sequences per step is far beyond any recipe"};
inline constexpr IntRange steps{1, int64_t{1} << 40, "2^40 optimizer steps is far beyond any run"};
inline constexpr IntRange max_predictions{0, 1 << 20, "masked positions per sequence are at most seq_len (0: derive)"};
inline constexpr IntRange parallel{1, 1 << 24, "parallel ranks up to 2^24 (nodes × GPUs per node)"};
inline constexpr IntRange virtual_stages{1, 1'024, "model chunks per pipeline device; Megatron runs 2 to 8"};
inline constexpr IntRange zero_stage{0, 3, "ZeRO's stages: 0 none, 1 optimizer state, 2 + gradients, 3 + parameters"};
inline constexpr IntRange channels{0, 1'024, "NCCL uses at most 32 channels; 0 = one per NIC"};
inline constexpr IntRange every_steps{0, int64_t{1} << 40, "0 = never; otherwise at most the steps of a run"};
inline constexpr IntRange nodes_per_leaf{0, 100'000, "0 = one switch for all nodes; at most the node count range"};
inline constexpr IntRange worker_threads{1, 1'024, "each sweep worker holds its own prediction cache (~2 MB); no machine has more cores"};
inline constexpr NumberRange op_flops{0, 1e21, false, "10^9 x the largest GEMM of a GPT-3 step (~2.5e12 FLOPs)"};
inline constexpr NumberRange op_bytes{0, 0x1p63, false, "tensor sizes are 64-bit byte counts"};
inline constexpr NumberRange epochs{0, 1e6, true, "a million passes over a dataset is far beyond any run"};
inline constexpr NumberRange dataset_sequences{0, 1e15, true, "10^15 sequences is far beyond any corpus"};
inline constexpr NumberRange bucket_mib{0, 1 << 20, true, "gradient buckets up to 1 TiB"};
inline constexpr NumberRange seconds{0, 1e9, false, "an overhead of 10^9 s (32 years) is beyond any run"};
}  // namespace ranges

}  // namespace ptsim::core

namespace ptsim::core {

// "[1, 1048576] (why; docs/input-ranges.md)" — the expectation half of a range error.
inline std::string describe(const IntRange& r) {
  return fmt::format("an integer in [{}, {}] ({}; see docs/input-ranges.md)", r.min, r.max, r.why);
}
inline std::string describe(const NumberRange& r) {
  return fmt::format("a number in {}{}, {}] ({}; see docs/input-ranges.md)", r.min_exclusive ? "(" : "[", r.min, r.max,
                     r.why);
}
inline bool in_range(double x, const NumberRange& r) {
  return (r.min_exclusive ? x > r.min : x >= r.min) && x <= r.max;
}

// For a value that did not come from JSON (a flag): `what` names it, e.g. "--micro-batch".
inline int64_t check_range(int64_t value, const IntRange& r, std::string_view what) {
  if (value < r.min || value > r.max)
    throw InputError(fmt::format("{} is {}, expected {}", what, value, describe(r)));
  return value;
}
inline double check_range(double value, const NumberRange& r, std::string_view what) {
  if (!in_range(value, r)) throw InputError(fmt::format("{} is {}, expected {}", what, value, describe(r)));
  return value;
}

}  // namespace ptsim::core
