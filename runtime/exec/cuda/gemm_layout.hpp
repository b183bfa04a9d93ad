// runtime/exec/cuda/gemm_layout.hpp — how a row-major graph GEMM becomes one column-major BLAS call
// (cuBLAS), with no CUDA types so the CPU tests can check it (tests/runtime/exec/test_op_math.cpp runs a
// column-major reference GEMM with these arguments against cpu::gemm_forward). A row-major (r, c) matrix
// is the column-major (c, r) matrix of its transpose, so C (m,n) = op(A)·op(B) is computed as
// Cᵀ (n,m) = op(B)ᵀ·op(A)ᵀ: BLAS's first operand is B's storage (transposed iff trans_b), its second A's
// (transposed iff trans_a), with m and n swapped. Leading dimensions are the row lengths of the stored
// matrices: B (k,n) → n, or (n,k) with trans_b → k; A (m,k) → k, or (k,m) with trans_a → m; C → n.
#pragma once
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include "models/task_graph.hpp"  // defines: GemmAttrs

namespace ptsim::runtime::cuda {

// The arguments of C = alpha·op(first)·op(second) + beta·C in column-major BLAS terms (first = B, second = A).
struct ColumnMajorGemm {
  bool trans_first = false, trans_second = false;
  int64_t rows = 0, cols = 0, inner = 0;  // BLAS m, n, k
  int64_t ld_first = 0, ld_second = 0, ld_out = 0;
  // Batched: elements between consecutive matrices of B, A and C.
  int64_t stride_first = 0, stride_second = 0, stride_out = 0;
};

// A dimension, leading dimension or batch count as the int cublasGemmEx / cublasGemmStridedBatchedEx take
// (their strides are long long: those stay int64). Past INT_MAX a cast would silently wrap into another GEMM;
// this throws std::invalid_argument naming the value instead.
inline int blas_int(int64_t value, const char* what) {
  if (value < 0 || value > std::numeric_limits<int>::max())
    throw std::invalid_argument(std::string("cuBLAS GEMM: ") + what + " " + std::to_string(value) +
                                " is outside the 32-bit int cuBLAS takes (0.." +
                                std::to_string(std::numeric_limits<int>::max()) + ")");
  return static_cast<int>(value);
}

// The int arguments of one cuBLAS call (BLAS m, n, k and the leading dimensions), each checked by blas_int.
struct BlasDims {
  int rows = 0, cols = 0, inner = 0, ld_first = 0, ld_second = 0, ld_out = 0;
};

inline ColumnMajorGemm column_major_gemm(const models::GemmAttrs& a) {
  ColumnMajorGemm c;
  c.trans_first = a.trans_b;
  c.trans_second = a.trans_a;
  c.rows = a.n;
  c.cols = a.m;
  c.inner = a.k;
  c.ld_first = a.trans_b ? a.k : a.n;
  c.ld_second = a.trans_a ? a.m : a.k;
  c.ld_out = a.n;
  c.stride_first = a.k * a.n;
  c.stride_second = a.m * a.k;
  c.stride_out = a.m * a.n;
  return c;
}

inline BlasDims blas_dims(const ColumnMajorGemm& c) {
  return {blas_int(c.rows, "m (the output's columns)"), blas_int(c.cols, "n (the output's rows)"),
          blas_int(c.inner, "k"), blas_int(c.ld_first, "lda"), blas_int(c.ld_second, "ldb"),
          blas_int(c.ld_out, "ldc")};
}

}  // namespace ptsim::runtime::cuda
