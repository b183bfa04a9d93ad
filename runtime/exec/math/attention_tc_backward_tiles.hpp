// runtime/exec/math/attention_tc_backward_tiles.hpp — the tensor-core fused attention's backward tile
// algorithm (PTSIM_HD templates over math/attention_tc_tiles.hpp's policy, Lanes and tile_product; the same
// device/host split): the fp32 kernel's deterministic two-pass form of FlashAttention-2's backward — a row
// pass D = rowsum(dO∘O), dK/dV per key tile over the query tiles, dQ per query tile over the key tiles, no
// float atomics. Per (query tile, key tile): S = Q·Kᵀ and dP = dO·Vᵀ on the block product, P = exp(α·S −
// lse), the dropout mask at the forward's element index, dS = P∘(dP̃ − D), then P̃ and dS rounded to 16 bits
// as the A operands of dV += P̃ᵀ·dO, dK += dSᵀ·Q, dQ += dS·K.
#pragma once
#include <cmath>  // INFINITY
#include <cstdint>

#include "core/host_device.hpp"
#include "runtime/exec/math/attention_tc_tiles.hpp"

namespace ptsim::runtime::math::attention_tc {

// Tiles: kTile query rows × kTile keys; head dim 64: 32, 128: 16 (shared memory under sm_75's 64 KiB).
template <int kD>
struct BackwardConfig;
template <>
struct BackwardConfig<64> {
  static constexpr int kTile = 32;
};
template <>
struct BackwardConfig<128> {
  static constexpr int kTile = 16;
};

template <class E, int kD, int kTile>
struct BackwardTiles {
  static_assert(kD % 16 == 0 && kTile % 16 == 0, "tiles are made of 16×16 blocks");
  static constexpr int kLdE = kD + 8, kLdS = kTile + 4, kLdP = kTile + 8, kLdO = kD + 4;
  alignas(32) E q[kTile * kLdE];
  alignas(32) E dout[kTile * kLdE];
  alignas(32) E k[kTile * kLdE];
  alignas(32) E v[kTile * kLdE];
  alignas(32) float s[kTile * kLdS];   // scores q·kᵀ (unscaled)
  alignas(32) float dp[kTile * kLdS];  // dO·vᵀ
  alignas(32) E p[kTile * kLdP];       // P̃ (dropped probabilities), 16-bit
  alignas(32) E ds[kTile * kLdP];      // dS, 16-bit
  alignas(32) float acc1[kTile * kLdO];  // dV (key pass) or dQ (query pass)
  alignas(32) float acc2[kTile * kLdO];  // dK (key pass)
  float lse[kTile], d[kTile];
};

// D_i = rowsum(dO_i∘O_i) of one row, in fp32 in column order (the backward's row pass).
template <class Ops>
PTSIM_HD float row_d(const typename Ops::Elem* dout_row, const typename Ops::Elem* out_row, int64_t d) {
  float acc = 0.0f;
  for (int64_t e = 0; e < d; ++e) acc += Ops::to_float(dout_row[e]) * Ops::to_float(out_row[e]);
  return acc;
}

// The backward's pair (query tile i0, key tile j0), tiles loaded: S and dP on tensor cores, then per
// element P = exp(α·s − lse) (0 masked), the dropout mask, dS = P∘(dP̃ − D); P̃ and dS rounded to 16 bits.
template <class Ops, int kD, int kTile>
PTSIM_HD void backward_scores(BackwardTiles<typename Ops::Elem, kD, kTile>& t, int64_t i0, int64_t j0,
                              const Problem& p, const Lanes& l) {
  using Tiles = BackwardTiles<typename Ops::Elem, kD, kTile>;
  tile_product<Ops>(t.s, Tiles::kLdS, t.q, Tiles::kLdE, Layout::kRowMajor, t.k, Tiles::kLdE, Layout::kTransposed,
                    kTile, kTile, kD, false, l);
  tile_product<Ops>(t.dp, Tiles::kLdS, t.dout, Tiles::kLdE, Layout::kRowMajor, t.v, Tiles::kLdE,
                    Layout::kTransposed, kTile, kTile, kD, false, l);
  Ops::sync();
  for (int x = l.thread; x < kTile * kTile; x += l.threads) {
    const int r = x / kTile, c = x % kTile;
    const int64_t i = i0 + r, j = j0 + c;
    const bool ok = tc_allowed(p, i, j);
    const float prob = ok ? attention_prob(p.scale * t.s[r * Tiles::kLdS + c], t.lse[r]) : 0.0f;
    float dprob = ok ? t.dp[r * Tiles::kLdS + c] : 0.0f, dropped = prob;
    if (p.dropout && ok) {
      const bool keep = dropout_keep(p.key, attention_dropout_index(p.bh, i, j, p.seq), p.threshold);
      dropped = dropout_apply(prob, keep, p.drop_scale);
      dprob = dropout_apply(dprob, keep, p.drop_scale);
    }
    t.p[r * Tiles::kLdP + c] = Ops::from_float(dropped);
    t.ds[r * Tiles::kLdP + c] = Ops::from_float(attention_dscore(prob, dprob, t.d[r]));
  }
  Ops::sync();
}

// lse and D of query rows [i0, i0 + kTile) (past S: +inf and 0, so those rows contribute nothing).
template <int kTile, class Tiles>
PTSIM_HD void load_row_stats(Tiles& t, const float* lse, const float* row_d_values, int64_t i0, const Problem& p,
                             const Lanes& l) {
  for (int r = l.thread; r < kTile; r += l.threads) {
    const int64_t i = i0 + r;
    t.lse[r] = i < p.seq ? lse[i] : INFINITY;
    t.d[r] = i < p.seq ? row_d_values[i] : 0.0f;
  }
}

// acc [kTile, kD] (fp32) × factor into rows [row0, row0 + kTile) of a 16-bit [S, d] matrix.
template <class Ops, int kD, int kTile, int kLdO>
PTSIM_HD void store_rows(typename Ops::Elem* m, const float* acc, float factor, int64_t row0, const Problem& p,
                         const Lanes& l) {
  for (int x = l.thread; x < kTile * kD; x += l.threads) {
    const int r = x / kD, e = x % kD;
    if (row0 + r < p.seq && e < p.head_dim) m[(row0 + r) * p.head_dim + e] = Ops::from_float(factor * acc[r * kLdO + e]);
  }
}

// dK and dV of key tile [j0, j0 + kTile) of one problem, over the query tiles that see it.
template <class Ops, int kD, int kTile>
PTSIM_HD void backward_key_tile(typename Ops::Elem* dk, typename Ops::Elem* dv, const typename Ops::Elem* dout,
                                const typename Ops::Elem* q, const typename Ops::Elem* k,
                                const typename Ops::Elem* v, const float* lse, const float* row_d_values,
                                int64_t j0, const Problem& p, BackwardTiles<typename Ops::Elem, kD, kTile>& t,
                                const Lanes& l) {
  using Tiles = BackwardTiles<typename Ops::Elem, kD, kTile>;
  load_rows<Ops, kD>(t.k, Tiles::kLdE, k, j0, kTile, p, l);
  load_rows<Ops, kD>(t.v, Tiles::kLdE, v, j0, kTile, p, l);
  for (int x = l.thread; x < kTile * Tiles::kLdO; x += l.threads) t.acc1[x] = t.acc2[x] = 0.0f;
  for (int64_t i0 = p.causal ? j0 : 0; i0 < p.seq; i0 += kTile) {  // causal: earlier query tiles see none of it
    Ops::sync();
    load_rows<Ops, kD>(t.q, Tiles::kLdE, q, i0, kTile, p, l);
    load_rows<Ops, kD>(t.dout, Tiles::kLdE, dout, i0, kTile, p, l);
    load_row_stats<kTile>(t, lse, row_d_values, i0, p, l);
    Ops::sync();
    backward_scores<Ops, kD, kTile>(t, i0, j0, p, l);
    // dV += P̃ᵀ·dO, dK += dSᵀ·Q (A stored transposed: P̃ and dS are [query][key])
    tile_product<Ops>(t.acc1, Tiles::kLdO, t.p, Tiles::kLdP, Layout::kTransposed, t.dout, Tiles::kLdE,
                      Layout::kRowMajor, kTile, kD, kTile, true, l);
    tile_product<Ops>(t.acc2, Tiles::kLdO, t.ds, Tiles::kLdP, Layout::kTransposed, t.q, Tiles::kLdE,
                      Layout::kRowMajor, kTile, kD, kTile, true, l);
  }
  Ops::sync();
  store_rows<Ops, kD, kTile, Tiles::kLdO>(dv, t.acc1, 1.0f, j0, p, l);
  store_rows<Ops, kD, kTile, Tiles::kLdO>(dk, t.acc2, p.scale, j0, p, l);
}

// dQ of query tile [i0, i0 + kTile) of one problem, over the key tiles it sees.
template <class Ops, int kD, int kTile>
PTSIM_HD void backward_query_tile(typename Ops::Elem* dq, const typename Ops::Elem* dout,
                                  const typename Ops::Elem* q, const typename Ops::Elem* k,
                                  const typename Ops::Elem* v, const float* lse, const float* row_d_values,
                                  int64_t i0, const Problem& p, BackwardTiles<typename Ops::Elem, kD, kTile>& t,
                                  const Lanes& l) {
  using Tiles = BackwardTiles<typename Ops::Elem, kD, kTile>;
  load_rows<Ops, kD>(t.q, Tiles::kLdE, q, i0, kTile, p, l);
  load_rows<Ops, kD>(t.dout, Tiles::kLdE, dout, i0, kTile, p, l);
  load_row_stats<kTile>(t, lse, row_d_values, i0, p, l);
  for (int x = l.thread; x < kTile * Tiles::kLdO; x += l.threads) t.acc1[x] = 0.0f;
  const int64_t end = tc_key_end(p, i0, kTile);
  for (int64_t j0 = 0; j0 < end; j0 += kTile) {
    Ops::sync();
    load_rows<Ops, kD>(t.k, Tiles::kLdE, k, j0, kTile, p, l);
    load_rows<Ops, kD>(t.v, Tiles::kLdE, v, j0, kTile, p, l);
    Ops::sync();
    backward_scores<Ops, kD, kTile>(t, i0, j0, p, l);
    tile_product<Ops>(t.acc1, Tiles::kLdO, t.ds, Tiles::kLdP, Layout::kRowMajor, t.k, Tiles::kLdE,
                      Layout::kRowMajor, kTile, kD, kTile, true, l);  // dQ += dS·K
  }
  Ops::sync();
  store_rows<Ops, kD, kTile, Tiles::kLdO>(dq, t.acc1, p.scale, i0, p, l);
}

}  // namespace ptsim::runtime::math::attention_tc
