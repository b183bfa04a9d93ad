// runtime/exec/cuda/attention.hpp — launchers of the fused attention kernels (fused_attention.cu): forward
// (online softmax, context + log-sum-exp) and the FlashAttention-2 backward in its deterministic two-kernel
// form (no float atomics): dK/dV by key tile, dQ by query tile, after a row pass for D = rowsum(dO∘O).
// f32 device pointers [B·nh, S, d], enqueued on `stream`. Head dims up to 128 (kernels for 64 and 128
// columns; smaller dims run zero-padded in the 64 kernel). Per-tile maths: runtime/exec/math/attention_math.hpp.
#pragma once
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "runtime/exec/math/attention_math.hpp"  // defines: kCudaFusedAttentionMaxHeadDim

namespace ptsim::runtime::cuda {

struct FusedAttentionArgs {
  int64_t batch_heads = 0, seq = 0, head_dim = 0, heads = 1;
  double scale = 1;
  bool causal = false;
  const int32_t* keep = nullptr;  // padding mask (B, S) or null
  double dropout_p = 0;           // on the probabilities, with the shared hash (dropout_mask.hpp)
  uint64_t dropout_key = 0;
};

// The largest head dim the kernels take.
inline constexpr int64_t kFusedAttentionMaxHeadDim = math::kCudaFusedAttentionMaxHeadDim;

void launch_fused_attention_forward(float* context, float* lse, const float* q, const float* k, const float* v,
                                    const FusedAttentionArgs& args, cudaStream_t stream);

// Scratch for the backward: D, one float per query row.
size_t fused_attention_backward_scratch_bytes(const FusedAttentionArgs& args);
void launch_fused_attention_backward(float* dq, float* dk, float* dv, const float* dcontext, const float* q,
                                     const float* k, const float* v, const float* context, const float* lse,
                                     const FusedAttentionArgs& args, void* scratch, cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
