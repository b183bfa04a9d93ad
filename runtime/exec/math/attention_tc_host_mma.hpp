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
#include <vector>

#include "runtime/exec/math/attention_tc_backward_tiles.hpp"
#include "runtime/exec/math/attention_tc_tiles.hpp"

namespace ptsim::runtime::math::attention_tc {

template <class E>
struct HostMma {
  using Elem = E;
  static float to_float(E x) { return static_cast<float>(x); }
  static E from_float(float x) { return E(x); }
  static void sync() {}
  static void block_product(float* C, int ldc, const E* A, int lda, Layout a_layout, const E* B, int ldb,
                            Layout b_layout, int k, bool accumulate) {
    for (int r = 0; r < 16; ++r)
      for (int c = 0; c < 16; ++c) {
        float acc = accumulate ? C[r * ldc + c] : 0.0f;
        for (int x = 0; x < k; ++x) {
          const E a = a_layout == Layout::kRowMajor ? A[r * lda + x] : A[x * lda + r];
          const E b = b_layout == Layout::kRowMajor ? B[x * ldb + c] : B[c * ldb + x];
          acc += to_float(a) * to_float(b);
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

// The backward over every problem: dq, dk, dv [B·nh, S, d] (16-bit, overwritten) from dcontext, q, k, v,
// context (16-bit) and lse (fp32); the row pass D = rowsum(dO∘O), then every key tile (dK, dV), then every
// query tile (dQ), as the two kernels.
template <class E, int kD>
void host_backward(E* dq, E* dk, E* dv, const E* dout, const E* q, const E* k, const E* v, const E* out,
                   const float* lse, int64_t batch_heads, const OpParams& o) {
  constexpr int kTile = BackwardConfig<kD>::kTile;
  auto tiles = std::make_unique<BackwardTiles<E, kD, kTile>>();
  const int64_t n = o.seq * o.head_dim;
  std::vector<float> d(static_cast<size_t>(o.seq));
  for (int64_t bh = 0; bh < batch_heads; ++bh) {
    const Problem p = problem_of(o, bh);
    for (int64_t i = 0; i < o.seq; ++i)
      d[static_cast<size_t>(i)] = row_d<HostMma<E>>(dout + bh * n + i * o.head_dim, out + bh * n + i * o.head_dim,
                                                    o.head_dim);
    for (int64_t j0 = 0; j0 < o.seq; j0 += kTile)
      backward_key_tile<HostMma<E>, kD, kTile>(dk + bh * n, dv + bh * n, dout + bh * n, q + bh * n, k + bh * n,
                                               v + bh * n, lse + bh * o.seq, d.data(), j0, p, *tiles, Lanes{});
    for (int64_t i0 = 0; i0 < o.seq; i0 += kTile)
      backward_query_tile<HostMma<E>, kD, kTile>(dq + bh * n, dout + bh * n, q + bh * n, k + bh * n, v + bh * n,
                                                 lse + bh * o.seq, d.data(), i0, p, *tiles, Lanes{});
  }
}

}  // namespace ptsim::runtime::math::attention_tc
