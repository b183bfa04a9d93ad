// runtime/exec/cpu_fused_attention.cpp — the CPU fused attention (see the header): per (batch·head) problem,
// query tiles × key tiles, the tile products on the backend's GEMM engine and the per-element maths of
// math/attention_math.hpp in between; the backward is FlashAttention-2's (per key tile, dV/dK accumulated
// over the query tiles and dQ accumulated in place: one thread owns a whole problem, so no reduction is
// split across threads).
#include "runtime/exec/cpu_fused_attention.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/exec/cpu_gemm.hpp"      // defines: gemm_run, gemm_default_engine
#include "runtime/exec/cpu_parallel.hpp"  // defines: for_each_chunk
#include "runtime/exec/dropout_mask.hpp"  // defines: dropout_keep, dropout_threshold
#include "runtime/exec/math/activation_math.hpp"  // defines: dropout_scale, dropout_apply
#include "runtime/exec/math/attention_math.hpp"

namespace ptsim::runtime::cpu {
namespace {

template <class T>
using Matrix = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// One problem's operands and its dropout/mask rules.
struct Rules {
  const int32_t* keep_row = nullptr;  // this problem's padding-mask row, or null
  bool causal = false;
  bool dropout = false;
  uint64_t key = 0, threshold = 0;
  int64_t bh = 0, seq = 0;
  bool allowed(int64_t i, int64_t j) const { return math::attention_key_allowed(i, j, causal, keep_row); }
  bool kept(int64_t i, int64_t j) const {
    return dropout_keep(key, math::attention_dropout_index(bh, i, j, seq), threshold);
  }
};

Rules rules_for(const AttentionProblem& p, const int32_t* keep, int64_t bh) {
  Rules r;
  r.keep_row = math::attention_keep_row(keep, bh, p.heads, p.seq);
  r.causal = p.causal;
  r.dropout = p.dropout_p > 0;
  r.key = p.dropout_key;
  r.threshold = dropout_threshold(std::min(p.dropout_p, 1.0));
  r.bh = bh;
  r.seq = p.seq;
  return r;
}

// Keys query tile [i0, i0 + rows) may see: all S, or up to its last row when causal.
int64_t key_end(const AttentionProblem& p, int64_t i0, int64_t rows) {
  return p.causal ? std::min(p.seq, i0 + rows) : p.seq;
}

// C (m,n) (+)= alpha·op(A)·op(B) on contiguous row-major operands, on the backend's GEMM engine (OpenBLAS's
// run-time-dispatched kernels where the build has it: several times Eigen's portable-build speed).
template <class T>
void tile_product(T* C, const T* A, const T* B, int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b,
                  double alpha, bool accumulate, GemmEngine engine) {
  models::GemmAttrs a;
  a.m = m;
  a.n = n;
  a.k = k;
  a.trans_a = trans_a;
  a.trans_b = trans_b;
  a.alpha = alpha;
  a.accumulate = accumulate;
  gemm_run<T>(C, A, B, nullptr, a, engine);
}

// Forward of one query tile: the online softmax over the key tiles. s holds one scores tile, then (in
// place) its dropped weights; acc the tile's unnormalised context.
template <class T>
void forward_query_tile(T* O, T* lse, const T* Q, const T* K, const T* V, const Rules& r, const AttentionProblem& p,
                        int64_t i0, int64_t rows, GemmEngine engine, Matrix<T>& s, Matrix<T>& acc) {
  const int64_t d = p.head_dim;
  const T drop_scale = math::dropout_scale<T>(p.dropout_p);
  const T neg_inf = -std::numeric_limits<T>::infinity();
  acc.setZero(rows, d);
  std::vector<T> row_max(static_cast<size_t>(rows), neg_inf), row_sum(static_cast<size_t>(rows), T(0));
  const int64_t end = key_end(p, i0, rows);
  for (int64_t j0 = 0; j0 < end; j0 += kAttentionTile) {
    const int64_t cols = std::min(kAttentionTile, end - j0);
    s.resize(rows, cols);
    tile_product<T>(s.data(), Q + i0 * d, K + j0 * d, rows, cols, d, false, true, p.scale, false, engine);
    for (int64_t a = 0; a < rows; ++a) {
      const int64_t i = i0 + a;
      T tile_max = neg_inf;
      for (int64_t c = 0; c < cols; ++c)
        if (r.allowed(i, j0 + c)) tile_max = std::max(tile_max, s(a, c));
      T& m = row_max[static_cast<size_t>(a)];
      const T new_max = math::attention_new_max(m, tile_max);
      const T factor = math::attention_rescale(m, new_max);
      m = new_max;
      T& sum = row_sum[static_cast<size_t>(a)];
      sum *= factor;
      if (factor != T(1)) acc.row(a) *= factor;
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t j = j0 + c;
        if (!r.allowed(i, j)) {
          s(a, c) = T(0);
          continue;
        }
        const T weight = math::attention_weight(s(a, c), m);
        sum += weight;
        s(a, c) = r.dropout ? math::dropout_apply(weight, r.kept(i, j), drop_scale) : weight;
      }
    }
    tile_product<T>(acc.data(), s.data(), V + j0 * d, rows, d, cols, false, false, 1.0, true, engine);
  }
  for (int64_t a = 0; a < rows; ++a) {
    const T sum = row_sum[static_cast<size_t>(a)];
    lse[i0 + a] = math::attention_lse(row_max[static_cast<size_t>(a)], sum);
    for (int64_t e = 0; e < d; ++e) O[(i0 + a) * d + e] = math::attention_output(acc(a, e), sum);
  }
}

// Backward of one (key tile, query tile) pair: recompute P, then dV, dK (this key tile's) and dQ (this query
// tile's) accumulate. 5 tile products: S, dP, dV, dK, dQ.
template <class T>
struct BackwardTile {
  Matrix<T> s, dp;
  void run(T* dQ, T* dK, T* dV, const T* dO, const T* Q, const T* K, const T* V, const T* lse, const T* row_d,
           const Rules& r, const AttentionProblem& p, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
           GemmEngine engine) {
    const int64_t d = p.head_dim;
    const T drop_scale = math::dropout_scale<T>(p.dropout_p);
    s.resize(rows, cols);
    dp.resize(rows, cols);
    tile_product<T>(s.data(), Q + i0 * d, K + j0 * d, rows, cols, d, false, true, p.scale, false, engine);
    tile_product<T>(dp.data(), dO + i0 * d, V + j0 * d, rows, cols, d, false, true, 1.0, false, engine);  // d(P̃)
    for (int64_t a = 0; a < rows; ++a) {
      const int64_t i = i0 + a;
      for (int64_t c = 0; c < cols; ++c) {
        const int64_t j = j0 + c;
        const T prob = r.allowed(i, j) ? math::attention_prob(s(a, c), lse[i]) : T(0);
        T dprob = dp(a, c);
        T dropped = prob;
        if (r.dropout) {
          const bool keep = r.kept(i, j);
          dropped = math::dropout_apply(prob, keep, drop_scale);
          dprob = math::dropout_apply(dprob, keep, drop_scale);
        }
        s(a, c) = dropped;                                         // now the dropped probabilities P̃
        dp(a, c) = math::attention_dscore(prob, dprob, row_d[i]);  // now dS
      }
    }
    tile_product<T>(dV, s.data(), dO + i0 * d, cols, d, rows, true, false, 1.0, true, engine);       // P̃ᵀ·dO
    tile_product<T>(dK, dp.data(), Q + i0 * d, cols, d, rows, true, false, p.scale, true, engine);   // α·dSᵀ·Q
    tile_product<T>(dQ + i0 * d, dp.data(), K + j0 * d, rows, d, cols, false, false, p.scale, true, engine);  // α·dS·K
  }
};

// Problems run in parallel on `threads` threads with Eigen's tile products; with OpenBLAS they run one after
// another and OpenBLAS threads each product (as the unfused batched GEMMs), since concurrent calls from
// several threads into its pool are not something the build relies on.
int problem_threads(GemmEngine engine, int threads) { return engine == GemmEngine::blas ? 1 : threads; }

}  // namespace

template <class T>
void fused_attention_forward(T* context, T* lse, const T* q, const T* k, const T* v, const int32_t* keep,
                             const AttentionProblem& p, int threads) {
  const int64_t S = p.seq, n = S * p.head_dim;
  const GemmEngine engine = gemm_default_engine();
  for_each_chunk(static_cast<size_t>(p.batch_heads), problem_threads(engine, threads), [&](size_t chunk) {
    const auto bh = static_cast<int64_t>(chunk);
    const Rules r = rules_for(p, keep, bh);
    Matrix<T> s, acc;
    for (int64_t i0 = 0; i0 < S; i0 += kAttentionTile)
      forward_query_tile<T>(context + bh * n, lse + bh * S, q + bh * n, k + bh * n, v + bh * n, r, p, i0,
                            std::min(kAttentionTile, S - i0), engine, s, acc);
  });
}

template <class T>
void fused_attention_backward(T* dq, T* dk, T* dv, const T* dcontext, const T* q, const T* k, const T* v,
                              const T* context, const T* lse, const int32_t* keep, const AttentionProblem& p,
                              int threads) {
  const int64_t S = p.seq, d = p.head_dim, n = S * d;
  const GemmEngine engine = gemm_default_engine();
  for_each_chunk(static_cast<size_t>(p.batch_heads), problem_threads(engine, threads), [&](size_t chunk) {
    const auto bh = static_cast<int64_t>(chunk);
    const T* dO = dcontext + bh * n;
    const T* O = context + bh * n;
    const Rules r = rules_for(p, keep, bh);
    // D_i = rowsum(dO∘O), accumulated in double as the CPU's other row reductions.
    std::vector<T> row_d(static_cast<size_t>(S));
    for (int64_t i = 0; i < S; ++i) {
      double dot = 0;
      for (int64_t e = 0; e < d; ++e) dot += static_cast<double>(dO[i * d + e]) * static_cast<double>(O[i * d + e]);
      row_d[static_cast<size_t>(i)] = static_cast<T>(dot);
    }
    std::fill(dq + bh * n, dq + (bh + 1) * n, T(0));
    std::fill(dk + bh * n, dk + (bh + 1) * n, T(0));
    std::fill(dv + bh * n, dv + (bh + 1) * n, T(0));
    BackwardTile<T> tile;
    for (int64_t j0 = 0; j0 < S; j0 += kAttentionTile) {
      const int64_t cols = std::min(kAttentionTile, S - j0);
      // Causal: query tiles that end before key j0 see none of this tile's keys.
      for (int64_t i0 = p.causal ? j0 / kAttentionTile * kAttentionTile : 0; i0 < S; i0 += kAttentionTile)
        tile.run(dq + bh * n, dk + bh * n + j0 * d, dv + bh * n + j0 * d, dO, q + bh * n, k + bh * n, v + bh * n,
                 lse + bh * S, row_d.data(), r, p, i0, std::min(kAttentionTile, S - i0), j0, cols, engine);
    }
  });
}

template <class T>
void run_fused_attention_op(const models::TaskGraph& g, const models::Op& op, std::span<void* const> in,
                            std::span<void* const> out, const OpContext& context, int threads) {
  const AttentionProblem p = attention_problem(g, op, context);
  auto x = [&](size_t i) { return static_cast<const T*>(in[i]); };
  auto y = [&](size_t i) { return static_cast<T*>(out[i]); };
  const int32_t* keep = p.has_mask ? static_cast<const int32_t*>(in[attention_mask_input(op)]) : nullptr;
  if (op.kind == models::OpKind::fused_attention)
    fused_attention_forward<T>(y(0), y(1), x(0), x(1), x(2), keep, p, threads);
  else
    fused_attention_backward<T>(y(0), y(1), y(2), x(0), x(1), x(2), x(3), x(4), x(5), keep, p, threads);
}

#define PTSIM_CPU_FUSED_ATTENTION(T)                                                                            \
  template void fused_attention_forward<T>(T*, T*, const T*, const T*, const T*, const int32_t*,               \
                                           const AttentionProblem&, int);                                      \
  template void fused_attention_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*,      \
                                            const T*, const int32_t*, const AttentionProblem&, int);           \
  template void run_fused_attention_op<T>(const models::TaskGraph&, const models::Op&, std::span<void* const>, \
                                          std::span<void* const>, const OpContext&, int);
PTSIM_CPU_FUSED_ATTENTION(float)
PTSIM_CPU_FUSED_ATTENTION(double)
#undef PTSIM_CPU_FUSED_ATTENTION

}  // namespace ptsim::runtime::cpu
