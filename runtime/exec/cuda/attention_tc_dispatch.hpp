// runtime/exec/cuda/attention_tc_dispatch.hpp — which fused attention ops the CUDA backend runs on the
// tensor-core kernel (attention_tc.hpp) rather than the fp32 one (attention.hpp), decided from the graph the
// backend is given (its tensors' stored dtypes). Host code: no CUDA headers.
#pragma once
#include "models/task_graph.hpp"
#include "runtime/exec/cuda/attention_tc.hpp"

namespace ptsim::runtime::cuda {

// Whether `op` is a fused_attention (forward) or fused_attention_backward whose tensors other than lse and
// the mask (q, k, v, context; the backward's dcontext and dq, dk, dv too) are all bf16 or all f16 in
// `graph`, lse f32, head dim ≤ 128: the tensor-core kernels take it as stored, with no conversion at the op
// boundary. Meant for CudaBackend::runs_16bit_natively (read on the graph run() gets: types as stored),
// which does not call it yet: docs/cuda-backend.md, "The tensor-core kernel", "When it runs".
bool fused_attention_runs_natively(const models::TaskGraph& graph, const models::Op& op);

// The kernel's 16-bit type of an op the predicate accepts.
Attention16 attention16_of(const models::TaskGraph& graph, const models::Op& op);

}  // namespace ptsim::runtime::cuda
