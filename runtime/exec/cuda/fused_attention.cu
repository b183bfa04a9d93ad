// runtime/exec/cuda/fused_attention.cu — the fused attention (OpKind::fused_attention and its backward) in
// fp32 with shared-memory tiles: one block per (batch·head, query tile) for the forward and for dQ, one
// per (batch·head, key tile) for dK/dV (FlashAttention-2's backward without float atomics: every output
// element is owned by one thread of one block, so results are the same bits on every run). Tiles are
// kTile × kTile scores over kD columns: kD = 64 with 32-row tiles, kD = 128 with 16-row tiles (static
// shared memory, ptxas on sm_90: forward 29,568 / 26,048 bytes, dK/dV 41,984 / 35,328, all under the 48 KiB
// static limit; a larger tile would need the dynamic shared-memory opt-in); head dims below a kernel's kD run zero-padded. The per-element maths
// (mask rules, online-softmax rescale, lse, P recomputed from lse, dS, the dropout element index) is
// math/attention_math.hpp's, which the CPU backend runs too. Scalar FMA loops, no tensor cores (yet).
#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "runtime/exec/cuda/attention.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/activation_math.hpp"  // defines: dropout_scale, dropout_apply
#include "runtime/exec/math/attention_math.hpp"
#include "runtime/exec/math/attention_op_params.hpp"  // defines: AttentionOpParams, attention_op_params

namespace ptsim::runtime::cuda {
namespace {

constexpr int kAttentionThreads = 128;

using Params = math::AttentionOpParams;

// Query i may attend to key j (both inside the sequence: tiles run past its end).
__device__ inline bool allowed(const Params& p, const int32_t* keep_row, int64_t i, int64_t j) {
  return i < p.seq && j < p.seq && math::attention_key_allowed(i, j, p.causal, keep_row);
}
__device__ inline bool kept(const Params& p, int64_t bh, int64_t i, int64_t j) {
  return dropout_keep(p.key, math::attention_dropout_index(bh, i, j, p.seq), p.threshold);
}

// rows [row0, row0 + kTile) of an [S, d] matrix into tile (zero past S and d).
template <int kD, int kTile>
__device__ void load_rows(float (*tile)[kD + 1], const float* m, int64_t row0, const Params& p) {
  for (int t = threadIdx.x; t < kTile * kD; t += blockDim.x) {
    const int r = t / kD, e = t % kD;
    const int64_t row = row0 + r;
    tile[r][e] = row < p.seq && e < p.head_dim ? m[row * p.head_dim + e] : 0.0f;
  }
}

template <int kD>
__device__ inline float row_dot(const float* a, const float* b) {
  float acc = 0.0f;
#pragma unroll 16
  for (int e = 0; e < kD; ++e) acc = fmaf(a[e], b[e], acc);
  return acc;
}

// The accumulator layout every kernel uses: thread t owns column t mod kD of rows t/kD + a·(threads/kD).
template <int kD, int kTile>
struct Owned {
  static constexpr int kStride = kAttentionThreads / kD;
  static constexpr int kCount = kTile * kD / kAttentionThreads;
  static_assert(kAttentionThreads % kD == 0 && kCount > 0, "kD must divide the block size");
  __device__ static int column() { return threadIdx.x % kD; }
  __device__ static int row(int a) { return static_cast<int>(threadIdx.x) / kD + a * kStride; }
};

template <int kD, int kTile>
__global__ void __launch_bounds__(kAttentionThreads)
    attention_forward_kernel(float* context, float* lse, const float* q, const float* k, const float* v, Params p) {
  using O = Owned<kD, kTile>;
  __shared__ float qs[kTile][kD + 1], ks[kTile][kD + 1], vs[kTile][kD + 1], ss[kTile][kTile + 1];
  __shared__ float row_max[kTile], row_sum[kTile], row_factor[kTile];
  const int64_t bh = blockIdx.x, i0 = static_cast<int64_t>(blockIdx.y) * kTile, n = p.seq * p.head_dim;
  q += bh * n;
  k += bh * n;
  v += bh * n;
  const int32_t* keep_row = math::attention_keep_row(p.keep, bh, p.heads, p.seq);
  load_rows<kD, kTile>(qs, q, i0, p);
  if (threadIdx.x < kTile) {
    row_max[threadIdx.x] = -INFINITY;
    row_sum[threadIdx.x] = 0.0f;
  }
  float acc[O::kCount] = {};
  const int64_t end = p.causal ? (p.seq < i0 + kTile ? p.seq : i0 + kTile) : p.seq;
  for (int64_t j0 = 0; j0 < end; j0 += kTile) {
    __syncthreads();  // the previous tile's ks, vs, ss are no longer read
    load_rows<kD, kTile>(ks, k, j0, p);
    load_rows<kD, kTile>(vs, v, j0, p);
    __syncthreads();
    for (int t = threadIdx.x; t < kTile * kTile; t += blockDim.x)
      ss[t / kTile][t % kTile] = p.scale * row_dot<kD>(qs[t / kTile], ks[t % kTile]);
    __syncthreads();
    if (threadIdx.x < kTile) {  // one thread per query row: the online-softmax update
      const int r = threadIdx.x;
      const int64_t i = i0 + r;
      float tile_max = -INFINITY;
      for (int c = 0; c < kTile; ++c)
        if (allowed(p, keep_row, i, j0 + c)) tile_max = fmaxf(tile_max, ss[r][c]);
      const float new_max = math::attention_new_max(row_max[r], tile_max);
      const float factor = math::attention_rescale(row_max[r], new_max);
      float sum = row_sum[r] * factor;
      for (int c = 0; c < kTile; ++c) {
        const int64_t j = j0 + c;
        if (!allowed(p, keep_row, i, j)) {
          ss[r][c] = 0.0f;
          continue;
        }
        const float w = math::attention_weight(ss[r][c], new_max);
        sum += w;
        ss[r][c] = p.dropout ? math::dropout_apply(w, kept(p, bh, i, j), p.drop_scale) : w;
      }
      row_max[r] = new_max;
      row_sum[r] = sum;
      row_factor[r] = factor;
    }
    __syncthreads();
    const int e = O::column();
#pragma unroll
    for (int a = 0; a < O::kCount; ++a) {
      const int r = O::row(a);
      float x = acc[a] * row_factor[r];
      for (int c = 0; c < kTile; ++c) x = fmaf(ss[r][c], vs[c][e], x);
      acc[a] = x;
    }
  }
  __syncthreads();
  const int e = O::column();
#pragma unroll
  for (int a = 0; a < O::kCount; ++a) {
    const int64_t i = i0 + O::row(a);
    if (i < p.seq && e < p.head_dim) context[bh * n + i * p.head_dim + e] = math::attention_output(acc[a], row_sum[O::row(a)]);
  }
  if (threadIdx.x < kTile && i0 + threadIdx.x < p.seq)
    lse[bh * p.seq + i0 + threadIdx.x] = math::attention_lse(row_max[threadIdx.x], row_sum[threadIdx.x]);
}

// D_i = rowsum(dO_i∘O_i), one thread per row (fp32, in column order).
__global__ void attention_row_dot_kernel(float* row_d, const float* dout, const float* out, int64_t rows, int64_t d) {
  PTSIM_GRID_STRIDE(r, rows) {
    float acc = 0.0f;
    for (int64_t e = 0; e < d; ++e) acc = fmaf(dout[r * d + e], out[r * d + e], acc);
    row_d[r] = acc;
  }
}

// The backward's tile: ps = the dropped probabilities, ds = dS, for queries i0.. and keys j0.. (qs, dos hold
// the query tile, ks, vs the key tile; lse_s and d_s the query rows' lse and D).
template <int kD, int kTile>
__device__ void backward_scores(float (*ps)[kTile + 1], float (*ds)[kTile + 1], const float (*qs)[kD + 1],
                                const float (*dos)[kD + 1], const float (*ks)[kD + 1], const float (*vs)[kD + 1],
                                const float* lse_s, const float* d_s, const Params& p, const int32_t* keep_row,
                                int64_t bh, int64_t i0, int64_t j0) {
  for (int t = threadIdx.x; t < kTile * kTile; t += blockDim.x) {
    const int r = t / kTile, c = t % kTile;
    const int64_t i = i0 + r, j = j0 + c;
    const bool ok = allowed(p, keep_row, i, j);
    const float prob = ok ? math::attention_prob(p.scale * row_dot<kD>(qs[r], ks[c]), lse_s[r]) : 0.0f;
    float dprob = ok ? row_dot<kD>(dos[r], vs[c]) : 0.0f;
    float dropped = prob;
    if (p.dropout && ok) {
      const bool keep = kept(p, bh, i, j);
      dropped = math::dropout_apply(prob, keep, p.drop_scale);
      dprob = math::dropout_apply(dprob, keep, p.drop_scale);
    }
    ps[r][c] = dropped;
    ds[r][c] = math::attention_dscore(prob, dprob, d_s[r]);
  }
}

// lse and D of query rows [i0, i0 + kTile) (past S: +inf and 0, so those rows contribute nothing).
template <int kTile>
__device__ void load_row_stats(float* lse_s, float* d_s, const float* lse, const float* row_d, int64_t i0,
                               const Params& p) {
  if (threadIdx.x < kTile) {
    const int64_t i = i0 + threadIdx.x;
    lse_s[threadIdx.x] = i < p.seq ? lse[i] : INFINITY;
    d_s[threadIdx.x] = i < p.seq ? row_d[i] : 0.0f;
  }
}

template <int kD, int kTile>
__global__ void __launch_bounds__(kAttentionThreads)
    attention_dkdv_kernel(float* dk, float* dv, const float* dout, const float* q, const float* k, const float* v,
                          const float* lse, const float* row_d, Params p) {
  using O = Owned<kD, kTile>;
  __shared__ float ks[kTile][kD + 1], vs[kTile][kD + 1], qs[kTile][kD + 1], dos[kTile][kD + 1];
  __shared__ float ps[kTile][kTile + 1], ds[kTile][kTile + 1], lse_s[kTile], d_s[kTile];
  const int64_t bh = blockIdx.x, j0 = static_cast<int64_t>(blockIdx.y) * kTile, n = p.seq * p.head_dim;
  const int32_t* keep_row = math::attention_keep_row(p.keep, bh, p.heads, p.seq);
  load_rows<kD, kTile>(ks, k + bh * n, j0, p);
  load_rows<kD, kTile>(vs, v + bh * n, j0, p);
  float acc_dk[O::kCount] = {}, acc_dv[O::kCount] = {};
  for (int64_t i0 = p.causal ? j0 : 0; i0 < p.seq; i0 += kTile) {  // causal: earlier query tiles see none of it
    __syncthreads();
    load_rows<kD, kTile>(qs, q + bh * n, i0, p);
    load_rows<kD, kTile>(dos, dout + bh * n, i0, p);
    load_row_stats<kTile>(lse_s, d_s, lse + bh * p.seq, row_d + bh * p.seq, i0, p);
    __syncthreads();
    backward_scores<kD, kTile>(ps, ds, qs, dos, ks, vs, lse_s, d_s, p, keep_row, bh, i0, j0);
    __syncthreads();
    const int e = O::column();
#pragma unroll
    for (int a = 0; a < O::kCount; ++a) {
      const int c = O::row(a);  // a key of this tile
      float x = acc_dv[a], y = acc_dk[a];
      for (int r = 0; r < kTile; ++r) {
        x = fmaf(ps[r][c], dos[r][e], x);
        y = fmaf(ds[r][c], qs[r][e], y);
      }
      acc_dv[a] = x;
      acc_dk[a] = y;
    }
  }
  const int e = O::column();
#pragma unroll
  for (int a = 0; a < O::kCount; ++a) {
    const int64_t j = j0 + O::row(a);
    if (j < p.seq && e < p.head_dim) {
      dk[bh * n + j * p.head_dim + e] = p.scale * acc_dk[a];
      dv[bh * n + j * p.head_dim + e] = acc_dv[a];
    }
  }
}

template <int kD, int kTile>
__global__ void __launch_bounds__(kAttentionThreads)
    attention_dq_kernel(float* dq, const float* dout, const float* q, const float* k, const float* v,
                        const float* lse, const float* row_d, Params p) {
  using O = Owned<kD, kTile>;
  __shared__ float qs[kTile][kD + 1], dos[kTile][kD + 1], ks[kTile][kD + 1], vs[kTile][kD + 1];
  __shared__ float ps[kTile][kTile + 1], ds[kTile][kTile + 1], lse_s[kTile], d_s[kTile];
  const int64_t bh = blockIdx.x, i0 = static_cast<int64_t>(blockIdx.y) * kTile, n = p.seq * p.head_dim;
  const int32_t* keep_row = math::attention_keep_row(p.keep, bh, p.heads, p.seq);
  load_rows<kD, kTile>(qs, q + bh * n, i0, p);
  load_rows<kD, kTile>(dos, dout + bh * n, i0, p);
  load_row_stats<kTile>(lse_s, d_s, lse + bh * p.seq, row_d + bh * p.seq, i0, p);
  float acc[O::kCount] = {};
  const int64_t end = p.causal ? (p.seq < i0 + kTile ? p.seq : i0 + kTile) : p.seq;
  for (int64_t j0 = 0; j0 < end; j0 += kTile) {
    __syncthreads();
    load_rows<kD, kTile>(ks, k + bh * n, j0, p);
    load_rows<kD, kTile>(vs, v + bh * n, j0, p);
    __syncthreads();
    backward_scores<kD, kTile>(ps, ds, qs, dos, ks, vs, lse_s, d_s, p, keep_row, bh, i0, j0);
    __syncthreads();
    const int e = O::column();
#pragma unroll
    for (int a = 0; a < O::kCount; ++a) {
      const int r = O::row(a);
      float x = acc[a];
      for (int c = 0; c < kTile; ++c) x = fmaf(ds[r][c], ks[c][e], x);
      acc[a] = x;
    }
  }
  const int e = O::column();
#pragma unroll
  for (int a = 0; a < O::kCount; ++a) {
    const int64_t i = i0 + O::row(a);
    if (i < p.seq && e < p.head_dim) dq[bh * n + i * p.head_dim + e] = p.scale * acc[a];
  }
}

void check_head_dim(const FusedAttentionArgs& a) {
  if (a.head_dim < 1 || a.head_dim > kFusedAttentionMaxHeadDim)
    throw std::invalid_argument("the CUDA fused attention runs head dims 1.." +
                                std::to_string(kFusedAttentionMaxHeadDim) + " (kernels for 64 and 128 columns); "
                                "this op's head dim is " + std::to_string(a.head_dim) +
                                ": build the graph without fused attention");
}

dim3 grid_of(const FusedAttentionArgs& a, int tile) {
  return dim3(static_cast<unsigned>(a.batch_heads), static_cast<unsigned>((a.seq + tile - 1) / tile));
}

}  // namespace

void launch_fused_attention_forward(float* context, float* lse, const float* q, const float* k, const float* v,
                                    const FusedAttentionArgs& a, cudaStream_t stream) {
  check_head_dim(a);
  if (a.batch_heads == 0 || a.seq == 0) return;
  const Params p = math::attention_op_params(a, a.keep);
  if (a.head_dim <= 64)
    attention_forward_kernel<64, 32><<<grid_of(a, 32), kAttentionThreads, 0, stream>>>(context, lse, q, k, v, p);
  else
    attention_forward_kernel<128, 16><<<grid_of(a, 16), kAttentionThreads, 0, stream>>>(context, lse, q, k, v, p);
}

size_t fused_attention_backward_scratch_bytes(const FusedAttentionArgs& a) {
  return static_cast<size_t>(a.batch_heads * a.seq) * sizeof(float);
}

void launch_fused_attention_backward(float* dq, float* dk, float* dv, const float* dcontext, const float* q,
                                     const float* k, const float* v, const float* context, const float* lse,
                                     const FusedAttentionArgs& a, void* scratch, cudaStream_t stream) {
  check_head_dim(a);
  if (a.batch_heads == 0 || a.seq == 0) return;
  const Params p = math::attention_op_params(a, a.keep);
  auto* row_d = static_cast<float*>(scratch);
  const int64_t rows = a.batch_heads * a.seq;
  attention_row_dot_kernel<<<blocks_for(rows), kThreads, 0, stream>>>(row_d, dcontext, context, rows, a.head_dim);
  if (a.head_dim <= 64) {
    attention_dkdv_kernel<64, 32><<<grid_of(a, 32), kAttentionThreads, 0, stream>>>(dk, dv, dcontext, q, k, v, lse,
                                                                                     row_d, p);
    attention_dq_kernel<64, 32><<<grid_of(a, 32), kAttentionThreads, 0, stream>>>(dq, dcontext, q, k, v, lse, row_d, p);
  } else {
    attention_dkdv_kernel<128, 16><<<grid_of(a, 16), kAttentionThreads, 0, stream>>>(dk, dv, dcontext, q, k, v, lse,
                                                                                      row_d, p);
    attention_dq_kernel<128, 16><<<grid_of(a, 16), kAttentionThreads, 0, stream>>>(dq, dcontext, q, k, v, lse, row_d,
                                                                                    p);
  }
}

}  // namespace ptsim::runtime::cuda
