// runtime/exec/cuda/lt_gemm.hpp — GEMMs with epilogues on cuBLASLt for the CUDA backend (lt_gemm.cpp):
// the forward linear's bias (CUBLASLT_EPILOGUE_BIAS: no separate pass over C) and a weight-gradient GEMM's
// bias gradient (BGRADA / BGRADB: the column sums of dY from the same pass over dY). The plan (layouts,
// epilogue) is lt_gemm_plan.hpp, tested on the CPU. One matmul descriptor, its three layouts and the
// heuristic's algorithm are cached per shape (plan with its stored types, tf32, operand alignment); the
// workspace is allocated once. A/B and C/D fp32, or bf16/fp16 with fp32 accumulation (gemm_types.hpp).
// Host-only header (CUDA runtime types).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/exec/cuda/lt_gemm_plan.hpp"

namespace ptsim::runtime::cuda {

// The device pointers of one call: D (= C), Lt's A and B (the graph's B and A), and the epilogue's vector
// (the bias it adds, or the bias gradient it writes), each of its plan's type.
struct LtGemmOperands {
  void* d = nullptr;
  const void* a = nullptr;
  const void* b = nullptr;
  void* vector = nullptr;
};

// cuBLAS's data type of a GEMM element (CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F).
inline cudaDataType_t cuda_data_type(GemmElement e) {
  switch (e) {
    case GemmElement::f32: return CUDA_R_32F;
    case GemmElement::bf16: return CUDA_R_16BF;
    case GemmElement::f16: return CUDA_R_16F;
  }
  return CUDA_R_32F;
}

struct LtGemmEntry;  // lt_gemm.cpp: the cached descriptors and algorithm of one shape

class LtGemm {
 public:
  LtGemm();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // D = alpha·op(A)·op(B) + beta·D with plan's epilogue, enqueued on `stream`. False (nothing enqueued)
  // when cuBLASLt's heuristic offers no algorithm for this shape, types and epilogue, when cublasLtMatmul
  // refuses that algorithm for these arguments (CUBLAS_STATUS_NOT_SUPPORTED), or cublasLt.h does not
  // document the plan's vector type (lt_vector_type_documented): the caller runs its unfused path.
  // The answers are cached: the heuristic's once per (plan, tf32, alignment); a refusal per those and whether
  // alpha ≠ 1 and beta ≠ 0. tf32 applies to fp32 operands only.
  bool run(const LtGemmPlan& plan, float alpha, float beta, bool tf32, const LtGemmOperands& ops,
           cudaStream_t stream);

  // cuBLASLt's workspace: 32 MiB, as the cuBLAS handle's (cuda_device.cpp; NVIDIA's recommendation for Hopper).
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;
  size_t cached_shapes() const { return entries_.size(); }

 private:
  LtGemmEntry& entry_for(const LtGemmPlan& plan, bool tf32, int alignment);
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::vector<std::unique_ptr<LtGemmEntry>> entries_;
};

}  // namespace ptsim::runtime::cuda
