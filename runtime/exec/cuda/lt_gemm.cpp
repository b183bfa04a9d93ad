// runtime/exec/cuda/lt_gemm.cpp — LtGemm (lt_gemm.hpp): cuBLASLt matmuls with the bias / bias-gradient
// epilogues. Per shape (the plan with its stored types, tf32, the operands' alignment) one matmul
// descriptor, the three matrix layouts (CUDA_R_32F / 16BF / 16F) and the heuristic's first algorithm are
// built once and kept; each call sets the epilogue's vector pointer on the cached descriptor and enqueues
// cublasLtMatmul with the one workspace. Scale type and accumulation fp32 whatever the storage.
#include "runtime/exec/cuda/lt_gemm.hpp"

#include <algorithm>
#include <cstdint>

#include "runtime/exec/cuda/cuda_check.hpp"

namespace ptsim::runtime::cuda {

struct LtGemmEntry {
  LtGemmPlan plan;
  bool tf32 = false;
  int alignment = 0;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic{};
  bool has_algorithm = false;
  // cublasLtMatmul answered NOT_SUPPORTED for the algorithm with these scalars, per [alpha ≠ 1][beta ≠ 0]:
  // such a refusal may depend on the scalars (cublasLt.h: "the configured operation"), so it switches the
  // fused path off only for calls of the same kind on this entry.
  bool refused[2][2] = {};
  ~LtGemmEntry() {
    if (a != nullptr) (void)cublasLtMatrixLayoutDestroy(a);
    if (b != nullptr) (void)cublasLtMatrixLayoutDestroy(b);
    if (d != nullptr) (void)cublasLtMatrixLayoutDestroy(d);
    if (desc != nullptr) (void)cublasLtMatmulDescDestroy(desc);
  }
};

namespace {

cublasLtEpilogue_t lt_epilogue(LtEpilogue e) {
  switch (e) {
    case LtEpilogue::none: return CUBLASLT_EPILOGUE_DEFAULT;
    case LtEpilogue::bias: return CUBLASLT_EPILOGUE_BIAS;
    case LtEpilogue::bias_grad_a: return CUBLASLT_EPILOGUE_BGRADA;
    case LtEpilogue::bias_grad_b: return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

cublasLtMatrixLayout_t layout(const LtMatrix& m) {
  cublasLtMatrixLayout_t l = nullptr;
  PTSIM_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&l, cuda_data_type(m.type), static_cast<uint64_t>(m.rows),
                                                static_cast<uint64_t>(m.cols), m.ld));
  return l;
}

template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& value) {
  PTSIM_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(desc, attr, &value, sizeof(value)));
}

template <class T>
void set_pref(cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const T& value) {
  PTSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, attr, &value, sizeof(value)));
}

// The largest power of two (≤ 256, cuBLASLt's default assumption) dividing every address
// (lt_common_alignment, lt_gemm_plan.hpp).
int common_alignment(const LtGemmPlan& p, const LtGemmOperands& o) {
  const uintptr_t addresses[] = {reinterpret_cast<uintptr_t>(o.d), reinterpret_cast<uintptr_t>(o.a),
                                 reinterpret_cast<uintptr_t>(o.b), reinterpret_cast<uintptr_t>(o.vector)};
  return lt_common_alignment(addresses, std::min(element_bytes(p.a.type), element_bytes(p.d.type)));
}

// The heuristic's first algorithm for this shape, epilogue and alignment, if it has any.
void choose_algorithm(cublasLtHandle_t handle, LtGemmEntry& e) {
  cublasLtMatmulPreference_t pref = nullptr;
  PTSIM_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t workspace = LtGemm::kWorkspaceBytes;
  const uint32_t align = static_cast<uint32_t>(e.alignment);
  set_pref(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, workspace);
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, align);
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, align);
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, align);
  set_pref(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, align);
  int found = 0;
  const cublasStatus_t status =
      cublasLtMatmulAlgoGetHeuristic(handle, e.desc, e.a, e.b, e.d, e.d, pref, 1, &e.heuristic, &found);
  (void)cublasLtMatmulPreferenceDestroy(pref);
  // NOT_SUPPORTED: no algorithm for this combination; the caller runs the unfused path.
  if (status != CUBLAS_STATUS_NOT_SUPPORTED) check_cublas(status, "cublasLtMatmulAlgoGetHeuristic");  // names the call
  e.has_algorithm = status == CUBLAS_STATUS_SUCCESS && found > 0;
}

}  // namespace

LtGemm::LtGemm() {
  PTSIM_CUBLAS_CHECK(cublasLtCreate(&handle_));
  PTSIM_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspaceBytes));
}

LtGemm::~LtGemm() {
  entries_.clear();
  (void)cudaFree(workspace_);
  (void)cublasLtDestroy(handle_);
}

LtGemmEntry& LtGemm::entry_for(const LtGemmPlan& plan, bool tf32, int alignment) {
  for (const auto& e : entries_)
    if (e->plan == plan && e->tf32 == tf32 && e->alignment == alignment) return *e;
  auto e = std::make_unique<LtGemmEntry>();
  e->plan = plan;
  e->tf32 = tf32;
  e->alignment = alignment;
  // fp32 scale type (alpha, beta) and accumulation; TF32 only for fp32 operands.
  const bool fast_tf32 = tf32 && plan.a.type == GemmElement::f32;
  PTSIM_CUBLAS_CHECK(cublasLtMatmulDescCreate(
      &e->desc, fast_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
  set_desc(e->desc, CUBLASLT_MATMUL_DESC_TRANSA, plan.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc(e->desc, CUBLASLT_MATMUL_DESC_TRANSB, plan.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N);
  set_desc(e->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, lt_epilogue(plan.epilogue));
  if (plan.epilogue != LtEpilogue::none)
    set_desc(e->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(cuda_data_type(plan.vector_type)));
  e->a = layout(plan.a);
  e->b = layout(plan.b);
  e->d = layout(plan.d);
  // A vector type cublasLt.h does not document for this D is not asked for: the unfused path runs.
  if (lt_vector_type_documented(plan)) choose_algorithm(handle_, *e);
  entries_.push_back(std::move(e));
  return *entries_.back();
}

bool LtGemm::run(const LtGemmPlan& plan, float alpha, float beta, bool tf32, const LtGemmOperands& ops,
                 cudaStream_t stream) {
  LtGemmEntry& e = entry_for(plan, tf32, common_alignment(plan, ops));
  bool& refused = e.refused[alpha != 1.0f ? 1 : 0][beta != 0.0f ? 1 : 0];
  if (!e.has_algorithm || refused) return false;
  if (plan.epilogue != LtEpilogue::none) set_desc(e.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, ops.vector);
  const cublasStatus_t status = cublasLtMatmul(handle_, e.desc, &alpha, ops.a, e.a, ops.b, e.b, &beta, ops.d, e.d,
                                               ops.d, e.d, &e.heuristic.algo, workspace_, kWorkspaceBytes, stream);
  // The heuristic's algorithm is no promise that the matmul takes these arguments (cublasLt.h:
  // NOT_SUPPORTED "if the configured operation cannot be run using the selected algo"): then nothing was
  // enqueued, the unfused path runs, and this entry is not asked again with scalars of the same kind.
  if (status == CUBLAS_STATUS_NOT_SUPPORTED) {
    refused = true;
    return false;
  }
  check_cublas(status, "cublasLtMatmul");
  return true;
}

}  // namespace ptsim::runtime::cuda
