// tests/runtime/exec/lt_gemm_interpreter.hpp — a column-major interpreter of cuBLASLt's documented matmul
// semantics (cublasLt.h: layouts as cublasLtMatrixLayoutCreate takes them, transa/transb, the BIAS / BGRADA /
// BGRADB epilogues), run on the CPU in double on a plan of runtime/exec/cuda/lt_gemm_plan.hpp. Used by
// test_lt_gemm_plan.cpp (fp32 plans) and test_lt_gemm_16bit.cpp (16-bit plans: operands widened first, D
// rounded to its type after). Header-only, doctest REQUIREs on the plan's consistency.
#pragma once
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "models/task_graph.hpp"  // defines: GemmAttrs
#include "runtime/exec/cuda/lt_gemm_plan.hpp"

namespace ptsim::test {

// The graph GEMM a plan is made from: C[m, n] = op(A)·op(B) over k, alpha 1, no bias, no accumulate.
inline models::GemmAttrs gemm_attrs(int64_t m, int64_t n, int64_t k, bool trans_a, bool trans_b) {
  models::GemmAttrs a;
  a.m = m;
  a.n = n;
  a.k = k;
  a.trans_a = trans_a;
  a.trans_b = trans_b;
  return a;
}

// Element (i, j) of op(X) for a stored column-major X (element (r, c) at r + c·ld).
inline double op_at(const std::vector<double>& X, const runtime::cuda::LtMatrix& l, bool trans, int64_t i,
                    int64_t j) {
  return trans ? X[static_cast<size_t>(j + i * l.ld)] : X[static_cast<size_t>(i + j * l.ld)];
}

struct LtResult {
  std::vector<double> d, vector;
};

// cuBLASLt's D = alpha·op(A)·op(B) + beta·C (+ bias), and the bias-gradient vector of BGRADA / BGRADB.
inline LtResult run_lt(const runtime::cuda::LtGemmPlan& p, double alpha, const std::vector<double>& A,
                       const std::vector<double>& B, double beta, const std::vector<double>& C,
                       const std::vector<double>& bias) {
  using runtime::cuda::LtEpilogue;
  // The stored layouts must be consistent with op(A) m × k and op(B) k × n.
  REQUIRE(p.a.rows == (p.trans_a ? p.k : p.m));
  REQUIRE(p.a.cols == (p.trans_a ? p.m : p.k));
  REQUIRE(p.b.rows == (p.trans_b ? p.n : p.k));
  REQUIRE(p.b.cols == (p.trans_b ? p.k : p.n));
  REQUIRE(p.d.rows == p.m);
  REQUIRE(p.d.cols == p.n);
  REQUIRE(p.a.ld >= p.a.rows);
  REQUIRE(p.b.ld >= p.b.rows);
  REQUIRE(p.d.ld >= p.d.rows);
  LtResult r;
  r.d = C;
  for (int64_t j = 0; j < p.n; ++j)
    for (int64_t i = 0; i < p.m; ++i) {
      double s = 0;
      for (int64_t q = 0; q < p.k; ++q) s += op_at(A, p.a, p.trans_a, i, q) * op_at(B, p.b, p.trans_b, q, j);
      double& out = r.d[static_cast<size_t>(i + j * p.d.ld)];
      out = alpha * s + beta * out + (p.epilogue == LtEpilogue::bias ? bias[static_cast<size_t>(i)] : 0.0);
    }
  r.vector.assign(static_cast<size_t>(p.epilogue_vector), 0.0);
  if (p.epilogue == LtEpilogue::bias_grad_a)  // Σ over k of op(A)'s row i: one element per row of D
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t q = 0; q < p.k; ++q) r.vector[static_cast<size_t>(i)] += op_at(A, p.a, p.trans_a, i, q);
  if (p.epilogue == LtEpilogue::bias_grad_b)  // Σ over k of op(B)'s column j: one per column of D
    for (int64_t j = 0; j < p.n; ++j)
      for (int64_t q = 0; q < p.k; ++q) r.vector[static_cast<size_t>(j)] += op_at(B, p.b, p.trans_b, q, j);
  return r;
}

}  // namespace ptsim::test
