// runtime/exec/math/attention_tc_host_mma.hpp — the host instantiation of the tensor-core fused attention's
// tile algorithm (math/attention_tc_tiles.hpp): a plain-loop 16×16 block product over 16-bit inputs (Eigen's
// bfloat16 / half: round-to-nearest-even conversions, as a GPU's 16-bit stores) with fp32 accumulation, and a
// driver that runs every (batch·head, query tile) of the op one after another, one "lane", so the cpu suite
// runs the kernel's own tiling code (tests/runtime/exec/test_attention_tc.cpp).
//
// What the block product pins and what it does not: a 16-bit × 16-bit product is exact in fp32 (8 × 8 or
// 11 × 11 significant bits ≤ 24), so the only freedom is the accumulation. Here it is k = 0, 1, …, k−1 into an
// fp32 accumulator starting from C (or 0), rounding after each add. An MMA's internal accumulation order and
// intermediate precision are unspecified by WMMA and mma.sync (hardware adds groups of products before
// rounding), so host and device agree within the fp32 bound γ_k·Σ|a·b| of each block entry, not to the bit.
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <memory>

#include "runtime/exec/math/attention_tc_tiles.hpp"

namespace ptsim::runtime::math::attention_tc {

template <class E>
struct HostMma {
  using Elem = E;
  static float to_float(E x) { return static_cast<float>(x); }
  static E from_float(float x) { return E(x); }
  static void sync() {}
  static void block_product(float* C, int ldc, const E* A, int lda, const E* B, int ldb, int k, BLayout layout,
                            bool accumulate) {
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 16; ++c) {
        float acc = accumulate ? C[r * ldc + c] : 0.0f;
        for (int x = 0; x < k; ++x) {
          const E b = layout == BLayout::kRowMajorB ? B[x * ldb + c] : B[c * ldb + x];
          acc += to_float(A[r * lda + x]) * to_float(b);
        }
        C[r * ldc + c] = acc;
      }
  }
};

// The forward over every problem: context [B·nh, S, d] (16-bit), lse [B·nh, S] (fp32) from q, k, v [B·nh,
// S, d], with the kernel's tiles for head dim kD (the caller picks kD ≥ head_dim, as the launcher does).
template <class E, int kD>
void host_forward(E* context, float* lse, const E* q, const E* k, const E* v, int64_t batch_heads,
                  const OpParams& o) {
  using Config = ForwardConfig<kD>;
  using Tiles = ForwardTiles<E, kD, Config::kRows, Config::kKeys>;
  auto tiles = std::make_unique<Tiles>();
  const int64_t n = o.seq * o.head_dim;
  for (int64_t bh = 0; bh < batch_heads; ++bh) {
    const Problem p = problem_of(o, bh);
    for (int64_t i0 = 0; i0 < o.seq; i0 += Config::kRows)
      forward_query_tile<HostMma<E>, kD, Config::kRows, Config::kKeys>(context + bh * n, lse + bh * o.seq,
                                                                       q + bh * n, k + bh * n, v + bh * n, i0, p,
                                                                       *tiles, Lanes{});
  }
}

}  // namespace ptsim::runtime::math::attention_tc
