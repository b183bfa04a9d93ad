// runtime/exec/cpu_fused_attention.hpp — the CPU backend's fused attention (OpKind::fused_attention and
// its backward): FlashAttention-2's tiled online softmax, so no [S, S] scores tensor exists — each thread
// holds one query tile × key tile of scores at a time. The tile products run on the backend's GEMM engine
// (cpu_gemm.hpp): with OpenBLAS the B·nh independent problems run in turn and OpenBLAS threads each product;
// with Eigen they are split over `threads` threads (cpu_parallel.hpp's fixed chunks, one problem each).
// Either way an element's summation order does not depend on the thread count.
// Formulas: math/attention_math.hpp (shared with the CUDA kernels); what the op is: attention_problem.hpp.
#pragma once
#include <cstdint>
#include <span>

#include "models/task_graph.hpp"
#include "runtime/exec/attention_problem.hpp"

namespace ptsim::runtime::cpu {

// Query rows and keys per tile (the scores tile is kAttentionTile × kAttentionTile).
inline constexpr int64_t kAttentionTile = 64;

// context [B·nh, S, d] = dropout(softmax(scale·q·kᵀ, masked))·v and lse [B·nh, S] = the rows' log-sum-exp
// of the masked scaled scores (+inf for a row with no allowed key; its context is 0). keep: the padding
// mask [B, S] or null.
template <class T>
void fused_attention_forward(T* context, T* lse, const T* q, const T* k, const T* v, const int32_t* keep,
                             const AttentionProblem& p, int threads);
// dq, dk, dv [B·nh, S, d] (overwritten) from dcontext and the forward's q, k, v, context and lse: P is
// recomputed tile by tile from lse (and the dropout mask from its hash), D = rowsum(dcontext∘context).
template <class T>
void fused_attention_backward(T* dq, T* dk, T* dv, const T* dcontext, const T* q, const T* k, const T* v,
                              const T* context, const T* lse, const int32_t* keep, const AttentionProblem& p,
                              int threads);

// The op on CpuBackend's pointers (inputs and outputs in op order); checks shapes (attention_problem).
template <class T>
void run_fused_attention_op(const models::TaskGraph& graph, const models::Op& op, std::span<void* const> in,
                            std::span<void* const> out, const OpContext& context, int threads);

}  // namespace ptsim::runtime::cpu
