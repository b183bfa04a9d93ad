// runtime/exec/math/attention_tc_tiles.hpp — the tensor-core fused attention's tile algorithm (16-bit q, k,
// v; fp32 accumulation), written once (PTSIM_HD templates) for the CUDA kernel (cuda/fused_attention_tc.cu,
// over WMMA: cuda/attention_tc_wmma.cuh) and for its host emulation (math/attention_tc_host_mma.hpp, plain
// loops), which the cpu suite runs against the CPU fused attention (tests/runtime/exec/test_attention_tc.cpp).
//
// The algorithm is FlashAttention-2's forward: one block per (batch·head, query tile of kRows rows); for each
// key tile of kKeys keys: S = Q·Kᵀ (fp32), the online-softmax update per row (math/attention_math.hpp: tile
// max, new max, rescale factor, running sum of the fp32 weights), P = the (dropped) weights rounded to 16
// bits, O ← O·factor + P·V (fp32), and at the end context = O/sum (rounded to 16 bits) and lse. The backward:
// math/attention_tc_backward_tiles.hpp, over the same primitives.
//
// Work is split as a CUDA block splits it, so the same code runs there and here: element loops stride by
// Lanes::threads from Lanes::thread, 16×16 output blocks of each tile product stride by Lanes::warps from
// Lanes::warp (one warp computes one block: the Ops::block_product primitive), phases are separated by
// Ops::sync(). On the host Lanes is {0, 1, 0, 1} and sync() does nothing: the phases run one after another in
// the order the barriers impose on the device. What the host run does not check: races (a missing barrier).
//
// Ops (the policy) provides: Elem (the 16-bit storage type), to_float/from_float (exact widening; rounding to
// nearest even), sync(), and block_product(C, ldc, A, lda, a_layout, B, ldb, b_layout, k, accumulate): the
// 16×16 fp32 block C (+)= A·B with A 16×k stored row-major (kRowMajor) or as Aᵀ k×16 row-major
// (kTransposed, i.e. column-major), and B k×16 stored row-major or as Bᵀ 16×k row-major (column-major). k is a multiple of 16; every pointer is 32-byte aligned and every
// leading dimension a multiple of 8 (16-bit) or 4 (fp32) elements, WMMA's contract.
#pragma once
#include <cmath>  // INFINITY
#include <cstdint>

#include "core/host_device.hpp"
#include "runtime/exec/dropout_mask.hpp"          // defines: dropout_keep
#include "runtime/exec/math/activation_math.hpp"  // defines: dropout_apply
#include "runtime/exec/math/attention_math.hpp"
#include "runtime/exec/math/attention_op_params.hpp"  // defines: AttentionOpParams

namespace ptsim::runtime::math::attention_tc {

// How a block product's operand is stored: as itself row-major, or as its transpose row-major.
enum class Layout { kRowMajor, kTransposed };

// Which part of the block's work this caller does (see the header comment).
struct Lanes {
  int thread = 0, threads = 1, warp = 0, warps = 1;
};

// One (batch·head) problem's parameters, as the kernel receives them.
struct Problem {
  int64_t seq = 0, head_dim = 0;
  float scale = 1;
  bool causal = false;
  const int32_t* keep_row = nullptr;  // this problem's padding-mask row, or null
  bool dropout = false;
  uint64_t key = 0, threshold = 0;
  float drop_scale = 1;
  int64_t bh = 0;  // the dropout index's batch·head
};

// The whole op's parameters (every problem's): what the kernel is launched with (attention_op_params.hpp).
using OpParams = AttentionOpParams;
PTSIM_HD inline Problem problem_of(const OpParams& o, int64_t bh) {
  Problem p;
  p.seq = o.seq;
  p.head_dim = o.head_dim;
  p.scale = o.scale;
  p.causal = o.causal;
  p.keep_row = attention_keep_row(o.keep, bh, o.heads, o.seq);
  p.dropout = o.dropout;
  p.key = o.key;
  p.threshold = o.threshold;
  p.drop_scale = o.drop_scale;
  p.bh = bh;
  return p;
}

// The kernels' tiles per head dim (the widest head each runs; narrower heads run zero-padded): 4 warps, a
// query tile of kRows rows and key tiles of kKeys keys. Shared memory: sizeof(ForwardTiles), docs/cuda-backend.md.
inline constexpr int kTcThreads = 128, kTcWarps = 4;
template <int kD>
struct ForwardConfig;
template <>
struct ForwardConfig<64> {
  static constexpr int kRows = 64, kKeys = 32;
};
template <>
struct ForwardConfig<128> {
  static constexpr int kRows = 32, kKeys = 32;
};

PTSIM_HD inline bool tc_allowed(const Problem& p, int64_t i, int64_t j) {
  return i < p.seq && j < p.seq && attention_key_allowed(i, j, p.causal, p.keep_row);
}
// The last key (exclusive) query tile [i0, i0 + rows) may see.
PTSIM_HD inline int64_t tc_key_end(const Problem& p, int64_t i0, int64_t rows) {
  return p.causal ? (p.seq < i0 + rows ? p.seq : i0 + rows) : p.seq;
}

// The block's shared memory for the forward. Leading dimensions padded (+8 16-bit, +4 fp32 elements: rows
// start in different banks) and kept multiples of 8 / 4; every array 32-byte aligned (WMMA's pointers).
template <class E, int kD, int kRows, int kKeys>
struct ForwardTiles {
  static_assert(kD % 16 == 0 && kRows % 16 == 0 && kKeys % 16 == 0, "tiles are made of 16×16 blocks");
  static constexpr int kLdE = kD + 8, kLdS = kKeys + 4, kLdP = kKeys + 8, kLdO = kD + 4;
  alignas(32) E q[kRows * kLdE];
  alignas(32) E k[kKeys * kLdE];
  alignas(32) E v[kKeys * kLdE];
  alignas(32) float s[kRows * kLdS];  // scores (unscaled q·k)
  alignas(32) E p[kRows * kLdP];      // the 16-bit (dropped) weights
  alignas(32) float o[kRows * kLdO];  // the unnormalised context
  float row_max[kRows], row_sum[kRows], row_factor[kRows];
};

// rows [row0, row0 + count) of an [S, d] 16-bit matrix into a tile with leading dimension ld (zero past S
// and past d).
template <class Ops, int kD>
PTSIM_HD void load_rows(typename Ops::Elem* tile, int ld, const typename Ops::Elem* m, int64_t row0, int count,
                        const Problem& p, const Lanes& l) {
  for (int t = l.thread; t < count * kD; t += l.threads) {
    const int r = t / kD, e = t % kD;
    const int64_t row = row0 + r;
    tile[r * ld + e] = row < p.seq && e < p.head_dim ? m[row * p.head_dim + e] : Ops::from_float(0.0f);
  }
}

// C[rows × cols] (+)= A·B over k, as 16×16 blocks spread over the warps. A: rows × k, stored per a_layout
// (row-major, or as Aᵀ k × rows row-major), leading dimension lda; B: k × cols per b_layout (row-major, or
// as Bᵀ cols × k row-major), leading dimension ldb.
template <class Ops>
PTSIM_HD void tile_product(float* C, int ldc, const typename Ops::Elem* A, int lda, Layout a_layout,
                           const typename Ops::Elem* B, int ldb, Layout b_layout, int rows, int cols, int k,
                           bool accumulate, const Lanes& l) {
  const int blocks_across = cols / 16, blocks = rows / 16 * blocks_across;
  for (int b = l.warp; b < blocks; b += l.warps) {
    const int r = b / blocks_across * 16, c = b % blocks_across * 16;
    const typename Ops::Elem* a_block = a_layout == Layout::kRowMajor ? A + r * lda : A + r;
    const typename Ops::Elem* b_block = b_layout == Layout::kRowMajor ? B + c : B + c * ldb;
    Ops::block_product(C + r * ldc + c, ldc, a_block, lda, a_layout, b_block, ldb, b_layout, k, accumulate);
  }
}

// The online-softmax update of one query row r against key tile j0 (scores in t.s): the new running max and
// sum, the rescale factor for O, and the row's 16-bit dropped weights in t.p (0 for a masked key).
template <class Ops, class Tiles, int kKeys>
PTSIM_HD void softmax_row(Tiles& t, int r, int64_t i0, int64_t j0, const Problem& p) {
  const int64_t i = i0 + r;
  float* s = t.s + r * Tiles::kLdS;
  typename Ops::Elem* prow = t.p + r * Tiles::kLdP;
  float tile_max = -INFINITY;
  for (int c = 0; c < kKeys; ++c) {
    s[c] *= p.scale;
    if (tc_allowed(p, i, j0 + c)) tile_max = s[c] > tile_max ? s[c] : tile_max;
  }
  const float new_max = attention_new_max(t.row_max[r], tile_max);
  const float factor = attention_rescale(t.row_max[r], new_max);
  float sum = t.row_sum[r] * factor;
  for (int c = 0; c < kKeys; ++c) {
    const int64_t j = j0 + c;
    float w = 0.0f;
    if (tc_allowed(p, i, j)) {
      w = attention_weight(s[c], new_max);
      sum += w;  // the fp32 weight, before dropout and before rounding (FlashAttention-2's rowsum)
      if (p.dropout)
        w = dropout_apply(w, dropout_keep(p.key, attention_dropout_index(p.bh, i, j, p.seq), p.threshold),
                          p.drop_scale);
    }
    prow[c] = Ops::from_float(w);
  }
  t.row_max[r] = new_max;
  t.row_sum[r] = sum;
  t.row_factor[r] = factor;
}

// The forward of one query tile [i0, i0 + kRows) of one problem: q, k, v, context [S, d] of this problem,
// lse [S]. Every lane of the block calls it with its own Lanes.
template <class Ops, int kD, int kRows, int kKeys>
PTSIM_HD void forward_query_tile(typename Ops::Elem* context, float* lse, const typename Ops::Elem* q,
                                 const typename Ops::Elem* k, const typename Ops::Elem* v, int64_t i0,
                                 const Problem& p, ForwardTiles<typename Ops::Elem, kD, kRows, kKeys>& t,
                                 const Lanes& l) {
  using Tiles = ForwardTiles<typename Ops::Elem, kD, kRows, kKeys>;
  load_rows<Ops, kD>(t.q, Tiles::kLdE, q, i0, kRows, p, l);
  for (int x = l.thread; x < kRows * Tiles::kLdO; x += l.threads) t.o[x] = 0.0f;
  for (int r = l.thread; r < kRows; r += l.threads) {
    t.row_max[r] = -INFINITY;
    t.row_sum[r] = 0.0f;
  }
  const int64_t end = tc_key_end(p, i0, kRows);  // causal: key tiles past the query tile are skipped
  for (int64_t j0 = 0; j0 < end; j0 += kKeys) {
    Ops::sync();  // the previous tile's k, v, p are no longer read
    load_rows<Ops, kD>(t.k, Tiles::kLdE, k, j0, kKeys, p, l);
    load_rows<Ops, kD>(t.v, Tiles::kLdE, v, j0, kKeys, p, l);
    Ops::sync();
    tile_product<Ops>(t.s, Tiles::kLdS, t.q, Tiles::kLdE, Layout::kRowMajor, t.k, Tiles::kLdE, Layout::kTransposed,
                      kRows, kKeys, kD, false, l);
    Ops::sync();
    for (int r = l.thread; r < kRows; r += l.threads) softmax_row<Ops, Tiles, kKeys>(t, r, i0, j0, p);
    Ops::sync();
    for (int x = l.thread; x < kRows * kD; x += l.threads) t.o[x / kD * Tiles::kLdO + x % kD] *= t.row_factor[x / kD];
    Ops::sync();
    tile_product<Ops>(t.o, Tiles::kLdO, t.p, Tiles::kLdP, Layout::kRowMajor, t.v, Tiles::kLdE, Layout::kRowMajor,
                      kRows, kD, kKeys, true, l);
  }
  Ops::sync();
  for (int x = l.thread; x < kRows * kD; x += l.threads) {
    const int r = x / kD, e = x % kD;
    const int64_t i = i0 + r;
    if (i < p.seq && e < p.head_dim)
      context[i * p.head_dim + e] = Ops::from_float(attention_output(t.o[r * Tiles::kLdO + e], t.row_sum[r]));
  }
  for (int r = l.thread; r < kRows; r += l.threads)
    if (i0 + r < p.seq) lse[i0 + r] = attention_lse(t.row_max[r], t.row_sum[r]);
}

}  // namespace ptsim::runtime::math::attention_tc
