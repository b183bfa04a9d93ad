// runtime/exec/cuda/lt_gemm.hpp — GEMMs with epilogues on cuBLASLt for the CUDA backend (lt_gemm.cpp):
// the forward linear's bias (CUBLASLT_EPILOGUE_BIAS: no separate pass over C) and a weight-gradient GEMM's
// bias gradient (BGRADA / BGRADB: the column sums of dY from the same pass over dY). The plan (layouts,
// epilogue) is lt_gemm_plan.hpp, tested on the CPU. One matmul descriptor, its three layouts and the
// heuristic's algorithm are cached per shape (plan, tf32, operand alignment); the workspace is allocated
// once. Host-only header (CUDA runtime types).
#pragma once
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <vector>

#include "runtime/exec/cuda/lt_gemm_plan.hpp"

namespace ptsim::runtime::cuda {

// The device pointers of one call: D (= C), Lt's A and B (the graph's B and A), and the epilogue's vector
// (the bias it adds, or the bias gradient it writes).
struct LtGemmOperands {
  float* d = nullptr;
  const float* a = nullptr;
  const float* b = nullptr;
  void* vector = nullptr;
};

struct LtGemmEntry;  // lt_gemm.cpp: the cached descriptors and algorithm of one shape

class LtGemm {
 public:
  LtGemm();
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // D = alpha·op(A)·op(B) + beta·D with plan's epilogue, enqueued on `stream`. False (nothing enqueued)
  // when cuBLASLt's heuristic offers no algorithm for this shape and epilogue: the caller runs its
  // unfused path. The answer is cached, so the heuristic is asked once per shape.
  bool run(const LtGemmPlan& plan, float alpha, float beta, bool tf32, const LtGemmOperands& ops,
           cudaStream_t stream);

  // cuBLASLt's workspace: 32 MiB, as the cuBLAS handle's (cuda_device.cpp; NVIDIA's recommendation for Hopper).
  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;
  size_t cached_shapes() const { return entries_.size(); }

 private:
  const LtGemmEntry& entry_for(const LtGemmPlan& plan, bool tf32, int alignment);
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::vector<std::unique_ptr<LtGemmEntry>> entries_;
};

}  // namespace ptsim::runtime::cuda
