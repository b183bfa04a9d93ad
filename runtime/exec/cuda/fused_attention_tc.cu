// runtime/exec/cuda/fused_attention_tc.cu — the tensor-core fused attention (attention_tc.hpp): blocks of 4
// warps running math/attention_tc_tiles.hpp's tile algorithm with the WMMA block product
// (attention_tc_wmma.cuh). Forward: one block per (batch·head, query tile), ForwardConfig's tiles (64: 64
// query rows × 32 keys; 128: 32 × 32). Backward: a row pass for D, then one block per (batch·head, key
// tile) for dK/dV and one per (batch·head, query tile) for dQ (no float atomics), BackwardConfig's tiles
// (64: 32 × 32; 128: 16 × 16). Dynamic shared memory, every kernel under sm_75's 64 KiB opt-in. The cpu
// suite runs the same tile code on the host (tests/runtime/exec/test_attention_tc.cpp).
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "runtime/exec/cuda/attention_tc.hpp"
#include "runtime/exec/cuda/attention_tc_wmma.cuh"
#include "runtime/exec/cuda/cuda_check.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"  // defines: blocks_for, kThreads, PTSIM_GRID_STRIDE
#include "runtime/exec/math/attention_op_params.hpp"  // defines: attention_op_params

namespace ptsim::runtime::cuda {
namespace {

namespace tc = math::attention_tc;

template <class E, int kD>
using Tiles = tc::ForwardTiles<E, kD, tc::ForwardConfig<kD>::kRows, tc::ForwardConfig<kD>::kKeys>;

// sm_75's opt-in limit for one block's shared memory; the larger sm_80/sm_90 limits hold these too.
constexpr size_t kSharedLimitSm75 = 64 * 1024;
static_assert(sizeof(Tiles<__half, 64>) <= kSharedLimitSm75 && sizeof(Tiles<__half, 128>) <= kSharedLimitSm75,
              "the forward's tiles must fit sm_75's shared memory");
template <class E, int kD>
using BackTiles = tc::BackwardTiles<E, kD, tc::BackwardConfig<kD>::kTile>;
static_assert(sizeof(BackTiles<__half, 64>) <= kSharedLimitSm75 && sizeof(BackTiles<__half, 128>) <= kSharedLimitSm75,
              "the backward's tiles must fit sm_75's shared memory");

__device__ inline tc::Lanes block_lanes() {
  tc::Lanes lanes;
  lanes.thread = static_cast<int>(threadIdx.x);
  lanes.threads = static_cast<int>(blockDim.x);
  lanes.warp = lanes.thread / 32;
  lanes.warps = lanes.threads / 32;
  return lanes;
}

// What every kernel's block starts from: on an architecture that runs E, its tiles in dynamic shared memory,
// its batch·head bh and that problem's parameters, handed to body(tiles, bh, problem); elsewhere a trap
// (bf16 below sm_80: the launcher refuses it before launching). body takes its tiles as auto, so its tile
// code is instantiated only where E runs.
template <class E, class SharedTiles, class Body>
__device__ inline void run_block(const tc::OpParams& o, const Body& body) {
  if constexpr (kArchRuns<E>) {
    extern __shared__ __align__(128) unsigned char shared[];
    const int64_t bh = blockIdx.x;
    body(*reinterpret_cast<SharedTiles*>(shared), bh, tc::problem_of(o, bh));
  } else {
    __trap();
  }
}

template <class E, int kD>
__global__ void __launch_bounds__(tc::kTcThreads)
    attention_tc_forward_kernel(E* context, float* lse, const E* q, const E* k, const E* v, tc::OpParams o) {
  using Config = tc::ForwardConfig<kD>;
  run_block<E, Tiles<E, kD>>(o, [&](auto& tiles, int64_t bh, const tc::Problem& problem) {
    const int64_t n = o.seq * o.head_dim;
    tc::forward_query_tile<WmmaMma<E>, kD, Config::kRows, Config::kKeys>(
        context + bh * n, lse + bh * o.seq, q + bh * n, k + bh * n, v + bh * n,
        static_cast<int64_t>(blockIdx.y) * Config::kRows, problem, tiles, block_lanes());
  });
}

// D_i = rowsum(dO_i∘O_i) for every row of every problem.
template <class E>
__global__ void attention_tc_row_d_kernel(float* row_d, const E* dout, const E* out, int64_t rows, int64_t d) {
  PTSIM_GRID_STRIDE(r, rows) row_d[r] = tc::row_d<WmmaMma<E>>(dout + r * d, out + r * d, d);
}

template <class E, int kD>
__global__ void __launch_bounds__(tc::kTcThreads)
    attention_tc_dkdv_kernel(E* dk, E* dv, const E* dout, const E* q, const E* k, const E* v, const float* lse,
                             const float* row_d, tc::OpParams o) {
  constexpr int kTile = tc::BackwardConfig<kD>::kTile;
  run_block<E, BackTiles<E, kD>>(o, [&](auto& tiles, int64_t bh, const tc::Problem& problem) {
    const int64_t n = o.seq * o.head_dim;
    tc::backward_key_tile<WmmaMma<E>, kD, kTile>(dk + bh * n, dv + bh * n, dout + bh * n, q + bh * n, k + bh * n,
                                                 v + bh * n, lse + bh * o.seq, row_d + bh * o.seq,
                                                 static_cast<int64_t>(blockIdx.y) * kTile, problem, tiles,
                                                 block_lanes());
  });
}

template <class E, int kD>
__global__ void __launch_bounds__(tc::kTcThreads)
    attention_tc_dq_kernel(E* dq, const E* dout, const E* q, const E* k, const E* v, const float* lse,
                           const float* row_d, tc::OpParams o) {
  constexpr int kTile = tc::BackwardConfig<kD>::kTile;
  run_block<E, BackTiles<E, kD>>(o, [&](auto& tiles, int64_t bh, const tc::Problem& problem) {
    const int64_t n = o.seq * o.head_dim;
    tc::backward_query_tile<WmmaMma<E>, kD, kTile>(dq + bh * n, dout + bh * n, q + bh * n, k + bh * n, v + bh * n,
                                                   lse + bh * o.seq, row_d + bh * o.seq,
                                                   static_cast<int64_t>(blockIdx.y) * kTile, problem, tiles,
                                                   block_lanes());
  });
}

int compute_capability_major() {
  int device = 0, major = 0;
  PTSIM_CUDA_CHECK(cudaGetDevice(&device));
  PTSIM_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  return major;
}

template <class E, int kD>
void launch_forward(void* context, float* lse, const void* q, const void* k, const void* v,
                    const FusedAttentionArgs& a, cudaStream_t stream) {
  constexpr int kRows = tc::ForwardConfig<kD>::kRows;
  constexpr size_t bytes = sizeof(Tiles<E, kD>);
  auto* kernel = attention_tc_forward_kernel<E, kD>;
  PTSIM_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  const dim3 grid(static_cast<unsigned>(a.batch_heads), static_cast<unsigned>((a.seq + kRows - 1) / kRows));
  kernel<<<grid, tc::kTcThreads, bytes, stream>>>(static_cast<E*>(context), lse, static_cast<const E*>(q),
                                                  static_cast<const E*>(k), static_cast<const E*>(v),
                                                  math::attention_op_params(a, a.keep));
  check_launch("attention_tc_forward_kernel");
}

template <class E>
void launch_for_head_dim(void* context, float* lse, const void* q, const void* k, const void* v,
                         const FusedAttentionArgs& a, cudaStream_t stream) {
  if (a.head_dim <= 64)
    launch_forward<E, 64>(context, lse, q, k, v, a, stream);
  else
    launch_forward<E, 128>(context, lse, q, k, v, a, stream);
}

template <class E, int kD>
void launch_backward(void* dq, void* dk, void* dv, const void* dcontext, const void* q, const void* k,
                     const void* v, const float* lse, const float* row_d, const FusedAttentionArgs& a,
                     cudaStream_t stream) {
  constexpr int kTile = tc::BackwardConfig<kD>::kTile;
  constexpr size_t bytes = sizeof(BackTiles<E, kD>);
  auto* dkdv = attention_tc_dkdv_kernel<E, kD>;
  auto* dqk = attention_tc_dq_kernel<E, kD>;
  PTSIM_CUDA_CHECK(cudaFuncSetAttribute(dkdv, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  PTSIM_CUDA_CHECK(cudaFuncSetAttribute(dqk, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
  const dim3 grid(static_cast<unsigned>(a.batch_heads), static_cast<unsigned>((a.seq + kTile - 1) / kTile));
  const tc::OpParams o = math::attention_op_params(a, a.keep);
  auto in = [](const void* p) { return static_cast<const E*>(p); };
  dkdv<<<grid, tc::kTcThreads, bytes, stream>>>(static_cast<E*>(dk), static_cast<E*>(dv), in(dcontext), in(q), in(k),
                                                in(v), lse, row_d, o);
  check_launch("attention_tc_dkdv_kernel");
  dqk<<<grid, tc::kTcThreads, bytes, stream>>>(static_cast<E*>(dq), in(dcontext), in(q), in(k), in(v), lse, row_d, o);
  check_launch("attention_tc_dq_kernel");
}

template <class E>
void launch_backward_for_head_dim(void* dq, void* dk, void* dv, const void* dcontext, const void* q, const void* k,
                                  const void* v, const void* context, const float* lse, const FusedAttentionArgs& a,
                                  void* scratch, cudaStream_t stream) {
  auto* row_d = static_cast<float*>(scratch);
  const int64_t rows = a.batch_heads * a.seq;
  attention_tc_row_d_kernel<E><<<blocks_for(rows), kThreads, 0, stream>>>(
      row_d, static_cast<const E*>(dcontext), static_cast<const E*>(context), rows, a.head_dim);
  check_launch("attention_tc_row_d_kernel");
  if (a.head_dim <= 64)
    launch_backward<E, 64>(dq, dk, dv, dcontext, q, k, v, lse, row_d, a, stream);
  else
    launch_backward<E, 128>(dq, dk, dv, dcontext, q, k, v, lse, row_d, a, stream);
}

// The launchers' argument checks: the head dim, and bf16 only from sm_80.
void check_tc_args(Attention16 dtype, const FusedAttentionArgs& a) {
  if (a.head_dim < 1 || a.head_dim > kFusedAttentionMaxHeadDim)
    throw std::invalid_argument("the CUDA tensor-core fused attention runs head dims 1.." +
                                std::to_string(kFusedAttentionMaxHeadDim) + "; this op's head dim is " +
                                std::to_string(a.head_dim) + ": build the graph without fused attention");
  if (dtype == Attention16::bf16 && compute_capability_major() < 8)
    throw std::invalid_argument("the CUDA fused attention runs bf16 on tensor cores of sm_80 and newer only "
                                "(this GPU is sm_" + std::to_string(compute_capability_major()) +
                                "x): train with --precision fp16 or fp32 on it");
}

}  // namespace

void launch_fused_attention_tc_backward(void* dq, void* dk, void* dv, const void* dcontext, const void* q,
                                        const void* k, const void* v, const void* context, const float* lse,
                                        Attention16 dtype, const FusedAttentionArgs& a, void* scratch,
                                        cudaStream_t stream) {
  check_tc_args(dtype, a);
  if (a.batch_heads == 0 || a.seq == 0) return;
  if (dtype == Attention16::bf16)
    launch_backward_for_head_dim<__nv_bfloat16>(dq, dk, dv, dcontext, q, k, v, context, lse, a, scratch, stream);
  else
    launch_backward_for_head_dim<__half>(dq, dk, dv, dcontext, q, k, v, context, lse, a, scratch, stream);
}

void launch_fused_attention_tc_forward(void* context, float* lse, const void* q, const void* k, const void* v,
                                       Attention16 dtype, const FusedAttentionArgs& a, cudaStream_t stream) {
  check_tc_args(dtype, a);
  if (a.batch_heads == 0 || a.seq == 0) return;
  if (dtype == Attention16::bf16)
    launch_for_head_dim<__nv_bfloat16>(context, lse, q, k, v, a, stream);
  else
    launch_for_head_dim<__half>(context, lse, q, k, v, a, stream);
}

}  // namespace ptsim::runtime::cuda
