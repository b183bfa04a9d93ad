// runtime/exec/cuda/attention_tc.hpp — the tensor-core fused attention's launchers (fused_attention_tc.cu):
// the forward (context + lse) and the backward (dq, dk, dv) on 16-bit q, k, v — bf16 on sm_80 and newer, fp16 on sm_75 and newer — with
// fp32 accumulation, FlashAttention-2's tiles over WMMA (math/attention_tc_tiles.hpp). Same semantics as the
// fp32 kernel (attention.hpp, docs/executor.md "Fused attention"); the differences in rounding are P and the
// context rounded to 16 bits (docs/cuda-backend.md, "The tensor-core kernel").
// When the CUDA backend runs it: attention_tc_dispatch.hpp (fused_attention_runs_natively).
#pragma once
#include <cuda_runtime_api.h>

#include "runtime/exec/cuda/attention.hpp"  // defines: FusedAttentionArgs, kFusedAttentionMaxHeadDim

namespace ptsim::runtime::cuda {

// The 16-bit storage type of q, k, v and context.
enum class Attention16 { bf16, f16 };

// context [B·nh, S, d] (16-bit), lse [B·nh, S] (fp32) from q, k, v [B·nh, S, d] (16-bit, `dtype`), on the
// current device, enqueued on `stream`. Throws std::invalid_argument naming the head dim above 128, and for
// bf16 on a device older than sm_80 (no bf16 tensor cores: train at fp16 or fp32 there).
void launch_fused_attention_tc_forward(void* context, float* lse, const void* q, const void* k, const void* v,
                                       Attention16 dtype, const FusedAttentionArgs& args, cudaStream_t stream);

// dq, dk, dv [B·nh, S, d] (16-bit, overwritten) from dcontext, q, k, v, context (16-bit) and lse (fp32):
// FlashAttention-2's backward in the fp32 kernel's deterministic form (a row pass for D into `scratch`,
// fused_attention_backward_scratch_bytes(args) bytes; dK/dV by key tile; dQ by query tile). Throws as the
// forward does.
void launch_fused_attention_tc_backward(void* dq, void* dk, void* dv, const void* dcontext, const void* q,
                                        const void* k, const void* v, const void* context, const float* lse,
                                        Attention16 dtype, const FusedAttentionArgs& args, void* scratch,
                                        cudaStream_t stream);

}  // namespace ptsim::runtime::cuda
