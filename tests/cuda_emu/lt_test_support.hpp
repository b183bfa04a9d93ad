// tests/cuda_emu/lt_test_support.hpp — one emulated cuBLASLt matmul set up for a test
// (test_cublaslt_emulated.cpp, test_cublaslt_errors.cpp): handle, descriptor, the four layouts of test
// matrices (blas_test_support.hpp) with their batch attributes, a workspace, the heuristic and the call.
#pragma once
#include <doctest/doctest.h>
#include <cublasLt.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "blas_test_support.hpp"

namespace blas_test {

inline cublasLtMatrixLayout_t layout(const Matrix& m) {
  cublasLtMatrixLayout_t l = nullptr;
  REQUIRE(cublasLtMatrixLayoutCreate(&l, m.type, m.rows, m.cols, m.ld) == CUBLAS_STATUS_SUCCESS);
  if (m.batch > 1) {
    const int32_t count = static_cast<int32_t>(m.batch);
    const int64_t stride = m.stride;
    REQUIRE(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)) ==
            CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                             sizeof(stride)) == CUBLAS_STATUS_SUCCESS);
  }
  return l;
}

// A 256-byte-aligned workspace (what cudaMalloc gives) of `bytes`, zeroed.
struct Workspace {
  size_t bytes;
  std::unique_ptr<unsigned char, decltype(&std::free)> storage;
  explicit Workspace(size_t n)
      : bytes(n), storage(static_cast<unsigned char*>(std::aligned_alloc(256, (n + 255) / 256 * 256)), &std::free) {
    REQUIRE(storage != nullptr);
    std::memset(storage.get(), 0, bytes);
  }
  unsigned char* data() const { return storage.get(); }
};

// One matmul: the handle, descriptor and layouts of A, B, C, D, torn down at the end.
struct Lt {
  const Matrix &a, &b, &c, &d;
  bool ta, tb;
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t la, lb, lc, ld;
  Workspace workspace{size_t{1} << 20};  // what run()'s heuristic is allowed

  Lt(const Matrix& a_, bool ta_, const Matrix& b_, bool tb_, const Matrix& c_, const Matrix& d_,
     cublasLtEpilogue_t epilogue, cublasComputeType_t compute = CUBLAS_COMPUTE_32F)
      : a(a_), b(b_), c(c_), d(d_), ta(ta_), tb(tb_), la(layout(a_)), lb(layout(b_)), lc(layout(c_)), ld(layout(d_)) {
    REQUIRE(cublasLtCreate(&handle) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS);
    set(CUBLASLT_MATMUL_DESC_TRANSA, int32_t{ta ? CUBLAS_OP_T : CUBLAS_OP_N});
    set(CUBLASLT_MATMUL_DESC_TRANSB, int32_t{tb ? CUBLAS_OP_T : CUBLAS_OP_N});
    set(CUBLASLT_MATMUL_DESC_EPILOGUE, static_cast<uint32_t>(epilogue));
  }
  ~Lt() {
    for (cublasLtMatrixLayout_t l : {la, lb, lc, ld}) (void)cublasLtMatrixLayoutDestroy(l);
    (void)cublasLtMatmulDescDestroy(desc);
    (void)cublasLtDestroy(handle);
  }
  template <class T>
  void set(cublasLtMatmulDescAttributes_t attr, const T& v) {
    REQUIRE(cublasLtMatmulDescSetAttribute(desc, attr, &v, sizeof(v)) == CUBLAS_STATUS_SUCCESS);
  }
  // The heuristic's algorithm for a workspace limit and an alignment promise for every pointer.
  cublasStatus_t heuristic(cublasLtMatmulHeuristicResult_t& r, uint64_t max_workspace, uint32_t align) {
    cublasLtMatmulPreference_t pref = nullptr;
    REQUIRE(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &max_workspace,
                                                 sizeof(max_workspace)) == CUBLAS_STATUS_SUCCESS);
    for (auto attr : {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
      REQUIRE(cublasLtMatmulPreferenceSetAttribute(pref, attr, &align, sizeof(align)) == CUBLAS_STATUS_SUCCESS);
    int found = -1;
    const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(handle, desc, la, lb, lc, ld, pref, 1, &r, &found);
    (void)cublasLtMatmulPreferenceDestroy(pref);
    CHECK(found == (s == CUBLAS_STATUS_SUCCESS ? 1 : 0));
    return s;
  }
  // The heuristic (256-byte promise, 1 MiB workspace) and the matmul with its algorithm.
  cublasStatus_t run(float alpha, float beta, const void* c_ptr = nullptr, void* d_ptr = nullptr) {
    cublasLtMatmulHeuristicResult_t r{};
    if (const cublasStatus_t s = heuristic(r, 1 << 20, 256); s != CUBLAS_STATUS_SUCCESS) return s;
    return cublasLtMatmul(handle, desc, &alpha, a.data(), la, b.data(), lb, &beta, c_ptr ? c_ptr : c.data(), lc,
                          d_ptr ? d_ptr : d.data(), ld, &r.algo, workspace.data(), workspace.bytes, nullptr);
  }
};

}  // namespace blas_test
