// tests/cuda_emu/cublaslt_matmul.cpp — the emulated cuBLASLt's heuristic and matmul (include/cublasLt.h,
// docs/cuda-emulation.md "The BLAS shim"): D = epilogue(alpha·op(A)·op(B) + beta·C) on column-major
// layouts with batch count and strided batch offset, as NVIDIA's cuBLASLt documentation defines it, for
// fp32 / fp16 / bf16 operands with fp32 scale and accumulation. The epilogues: bias, ReLU, GELU (tanh form),
// GELU with its input kept (aux), the GELU gradient and its bias gradient, and the bias gradients of A and B.
// A combination the shim does not have is NOT_SUPPORTED (heuristic and matmul alike; BGRADA / BGRADB with
// alpha ≠ 1, which NVIDIA leaves unspecified, in the matmul), never a guess.
#include <cmath>
#include <cstring>
#include <vector>

#include "blas_core.hpp"
#include "cublaslt_problem.hpp"

namespace {

using namespace cuda_emu::blas;
using Layout = cublasLtMatrixLayoutOpaque_t;
using Desc = cublasLtMatmulDescOpaque_t;

// The GELU of cuBLASLt's epilogue table: its tanh form, 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;
float gelu(float x) {
  const float t = std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  return 0.5f * x * (1.0f + t);
}
float gelu_grad(float x) {
  const float t = std::tanh(kSqrt2OverPi * (x + kGeluCubic * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * x * x);
}


// op(A)'s columns: the inner dimension k.
int64_t op_cols_of(const Layout& l, cublasOperation_t op) {
  return static_cast<int64_t>(op == CUBLAS_OP_N ? l.cols : l.rows);
}

Operand operand(const void* p, const Layout& l, cublasOperation_t op) {
  return Operand{p, l.type, l.ld, l.batch_stride, op != CUBLAS_OP_N};
}

// One matmul's operands, with the descriptor and epilogue they are read through.
struct Call {
  const Desc& desc;
  Epilogue e;
  Operand a, b;
  const void* c;
  const Layout& cl;
  void* d;
  const Layout& dl;
  int64_t inner;  // k
  float alpha, beta;
};

bool aligned(const void* p, uint64_t bytes) { return bytes == 0 || reinterpret_cast<uintptr_t>(p) % bytes == 0; }

// The workspace the shim's algorithm asks for: 1 MiB, or what the preference allows when that is less. The
// arithmetic needs none; asking makes a caller hand over a real workspace, which the matmul checks and
// overwrites (fill_workspace), as a split-k algorithm's partial sums would.
constexpr uint64_t kWorkspaceWanted = uint64_t{1} << 20;
// NVIDIA's cublasLtMatmul documentation asks for a workspace pointer aligned to 256 bytes.
constexpr uint64_t kWorkspaceAlignment = 256;

// The bytes of workspace the call uses: its algorithm's, or with none given (the library chooses) as much of
// the caller's workspace as the heuristic would have asked for.
uint64_t workspace_needed(const cublasLtMatmulAlgo_t* algo, size_t workspace_bytes) {
  if (algo == nullptr) return workspace_bytes < kWorkspaceWanted ? workspace_bytes : kWorkspaceWanted;
  return algo->data[kWorkspace];
}

// A heuristic's algorithm is only valid for the workspace it asked for and the pointer alignment the
// preference promised; a null one lets the library choose (cuBLASLt's documented default). A workspace
// in use is there, 256-byte aligned and no smaller than needed (too small is INVALID_VALUE, as documented).
cublasStatus_t check_algo(const cublasLtMatmulAlgo_t* algo, const void* const (&pointers)[4], const void* workspace,
                          size_t workspace_bytes) {
  const uint64_t needed = workspace_needed(algo, workspace_bytes);
  if (needed > 0 && (workspace == nullptr || !aligned(workspace, kWorkspaceAlignment) || workspace_bytes < needed))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (algo == nullptr) return CUBLAS_STATUS_SUCCESS;
  if (algo->data[kTag] != kAlgoTag) return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < 4; ++i)
    if (pointers[i] != nullptr && !aligned(pointers[i], algo->data[kAlignA + i])) return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

// The used workspace is overwritten with 0xFF bytes (a NaN in every float type) before D is computed, so a
// workspace that aliases an operand, or one another stream still reads, corrupts the result visibly.
void fill_workspace(void* workspace, uint64_t bytes) {
  if (bytes > 0) std::memset(workspace, 0xFF, bytes);
}

// Every pointer the problem reads or writes is there; in place (C = D) needs C's layout to be D's.
cublasStatus_t check_pointers(const Call& k) {
  if (k.a.data == nullptr || k.b.data == nullptr || k.d == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  if (k.c == nullptr && k.beta != 0.0f) return CUBLAS_STATUS_INVALID_VALUE;
  if (k.c == k.d && (k.cl.ld != k.dl.ld || k.cl.type != k.dl.type || k.cl.batch_stride != k.dl.batch_stride))
    return CUBLAS_STATUS_INVALID_VALUE;
  if ((k.e.uses_vector() && k.desc.bias == nullptr) || (k.e.uses_aux() && k.desc.aux == nullptr))
    return CUBLAS_STATUS_INVALID_VALUE;
  return CUBLAS_STATUS_SUCCESS;
}

// D(i, j) of batch matrix p before its rounding, the aux matrix written on the way (GELU_AUX*).
float output(const Call& k, int64_t p, int64_t i, int64_t j) {
  const Desc& desc = k.desc;
  const int64_t ci = p * k.cl.batch_stride + i + j * k.cl.ld;
  float x = scale(k.alpha, dot(k.a, k.b, p, i, j, k.inner), k.beta, k.c,
                  k.cl.type, ci);
  if (k.e.bias_in) x += load(or_d(desc.bias_type, k.dl), desc.bias, p * desc.bias_batch_stride + i);
  const int64_t aux_index = p * desc.aux_batch_stride + i + j * desc.aux_ld;
  if (k.e.aux_out) store(or_d(desc.aux_type, k.dl), desc.aux, aux_index, x);
  if (k.e.relu) x = x < 0.0f ? 0.0f : x;
  if (k.e.gelu) x = gelu(x);
  if (k.e.dgelu) x *= gelu_grad(load(or_d(desc.aux_type, k.dl), desc.aux, aux_index));
  return x;
}

// Batch matrix p: D, then the bias gradient the epilogue writes (each sum in float, its index ascending).
void run_batch(const Call& k, int64_t p) {
  const Desc& desc = k.desc;
  const int64_t m = static_cast<int64_t>(k.dl.rows), n = static_cast<int64_t>(k.dl.cols);
  const cudaDataType_t vector_type = or_d(desc.bias_type, k.dl);
  std::vector<float> row_sums(k.e.bgrad_d ? m : 0, 0.0f);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      const float x = output(k, p, i, j);
      store(k.dl.type, k.d, p * k.dl.batch_stride + i + j * k.dl.ld, x);
      if (k.e.bgrad_d) row_sums[i] += x;
    }
  const int64_t v0 = p * desc.bias_batch_stride;
  for (int64_t i = 0; i < static_cast<int64_t>(row_sums.size()); ++i)
    store(vector_type, desc.bias, v0 + i, row_sums[i]);
  if (k.e.bgrad_a)
    for (int64_t i = 0; i < m; ++i) {
      float sum = 0.0f;
      for (int64_t l = 0; l < k.inner; ++l) sum += element(k.a, p, i, l);
      store(vector_type, desc.bias, v0 + i, sum);
    }
  if (k.e.bgrad_b)
    for (int64_t j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int64_t l = 0; l < k.inner; ++l) sum += element(k.b, p, l, j);
      store(vector_type, desc.bias, v0 + j, sum);
    }
}
}  // namespace

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t a_desc, cublasLtMatrixLayout_t b_desc,
                                              cublasLtMatrixLayout_t c_desc, cublasLtMatrixLayout_t d_desc,
                                              cublasLtMatmulPreference_t pref, int requested_count,
                                              cublasLtMatmulHeuristicResult_t results[], int* returned_count) {
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (pref == nullptr || requested_count < 1 || results == nullptr || returned_count == nullptr)
    return CUBLAS_STATUS_INVALID_VALUE;
  *returned_count = 0;
  if (const cublasStatus_t s = check_problem(desc, a_desc, b_desc, c_desc, d_desc); s != CUBLAS_STATUS_SUCCESS)
    return s;
  // The one algorithm takes the workspace it wants or what MAX_WORKSPACE_BYTES allows (none for 0).
  const uint64_t workspace = workspace_needed(nullptr, pref->max_workspace_bytes);
  results[0] = cublasLtMatmulHeuristicResult_t{};
  uint64_t* data = results[0].algo.data;
  data[kTag] = kAlgoTag;
  data[kWorkspace] = workspace;
  for (int i = 0; i < 4; ++i) data[kAlignA + i] = pref->min_alignment[i];
  results[0].workspaceSize = workspace;
  results[0].state = CUBLAS_STATUS_SUCCESS;
  results[0].wavesCount = 1.0f;
  *returned_count = 1;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, const void* alpha, const void* A,
                              cublasLtMatrixLayout_t a_desc, const void* B, cublasLtMatrixLayout_t b_desc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t c_desc, void* D,
                              cublasLtMatrixLayout_t d_desc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream) {
  (void)stream;  // the stream runs everything at once (as the emulator's)
  if (handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (const cublasStatus_t s = check_problem(desc, a_desc, b_desc, c_desc, d_desc); s != CUBLAS_STATUS_SUCCESS)
    return s;
  if (alpha == nullptr || beta == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  Epilogue e;
  epilogue_of(desc->epilogue, e);
  // The scale type is fp32 (check_problem): alpha and beta are host floats (the host pointer mode).
  const Call k{*desc, e, operand(A, *a_desc, desc->transa), operand(B, *b_desc, desc->transb), C, *c_desc, D, *d_desc,
               op_cols_of(*a_desc, desc->transa), *static_cast<const float*>(alpha), *static_cast<const float*>(beta)};
  if (const cublasStatus_t s = check_pointers(k); s != CUBLAS_STATUS_SUCCESS) return s;
  // NVIDIA documents BGRADA / BGRADB as the sum over k stored in the bias buffer, not whether alpha scales
  // it: with alpha ≠ 1 the answer is unspecified, so the shim refuses rather than guess.
  if ((e.bgrad_a || e.bgrad_b) && k.alpha != 1.0f) return CUBLAS_STATUS_NOT_SUPPORTED;
  const void* const pointers[4] = {A, B, C, D};
  if (const cublasStatus_t s = check_algo(algo, pointers, workspace, workspace_bytes); s != CUBLAS_STATUS_SUCCESS)
    return s;
  fill_workspace(workspace, workspace_needed(algo, workspace_bytes));
  for (int64_t p = 0; p < d_desc->batch_count; ++p) run_batch(k, p);
  return CUBLAS_STATUS_SUCCESS;
}
