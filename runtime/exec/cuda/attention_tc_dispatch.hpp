// runtime/exec/cuda/attention_tc_dispatch.hpp — which fused attention ops the CUDA backend runs on the
// tensor-core kernel (attention_tc.hpp) rather than the fp32 one (attention.hpp), decided from the graph the
// backend is given (its tensors' stored dtypes). Host code: no CUDA headers.
#pragma once
#include <string>

#include "models/task_graph.hpp"
#include "runtime/exec/cuda/attention_tc.hpp"

namespace ptsim::runtime::cuda {

// Whether `op` is a fused_attention (forward) or fused_attention_backward whose tensors other than lse and
// the mask (q, k, v, context; the backward's dcontext and dq, dk, dv too) are all bf16 or all f16 in
// `graph`, lse f32, head dim ≤ 128: the tensor-core kernels take it as stored, with no conversion at the op
// boundary. CudaBackend::runs_16bit_natively (read on the graph run() gets: types as stored) asks it for the
// fused attention ops when the backend was made with the tensor-core attention (BackendOptions::attention,
// ptsim train --attention-kernel tensor-core): docs/cuda-backend.md, "The tensor-core kernel", "When it runs".
bool fused_attention_runs_natively(const models::TaskGraph& graph, const models::Op& op);

// The kernel's 16-bit type of an op the predicate accepts.
Attention16 attention16_of(const models::TaskGraph& graph, const models::Op& op);

// Refuses the tensor-core attention on a 16-bit type the GPU `gpu_name` of compute capability major.minor
// cannot run: bf16 needs sm_80+ (mma.h has no bf16 fragments below; the sm_75 instantiations are traps).
// Throws core::InputError naming the GPU, its compute capability and the ways out, before the launcher's own
// check (std::invalid_argument, which ptsim would report as an internal error) is reached.
void check_attention_tc_supported(Attention16 dtype, int major, int minor, const std::string& gpu_name);

}  // namespace ptsim::runtime::cuda
