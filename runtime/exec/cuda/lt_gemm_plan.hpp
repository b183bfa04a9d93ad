// runtime/exec/cuda/lt_gemm_plan.hpp — how a row-major graph GEMM becomes one cuBLASLt matmul with an
// epilogue (lt_gemm.cpp runs it), with no CUDA types so the cpu suite can check it
// (tests/runtime/exec/test_lt_gemm_plan.cpp interprets a plan with cuBLASLt's documented semantics and
// compares it with cpu::gemm_forward and cpu::bias_grad). The operands are column_major_gemm's
// (gemm_layout.hpp): Lt's A is the graph's B, Lt's B is the graph's A, D (Lt rows × cols) is Cᵀ.
//
// Epilogues (cublasLt.h, cublasLtEpilogue_t):
// * bias: D = alpha·op(A)·op(B) + beta·C + bias, bias of Lt-rows = graph n elements broadcast over the
//   columns: the graph's bias (n) added to each row of C (m,n).
// * bias_grad_a (CUBLASLT_EPILOGUE_BGRADA): also writes Σ_k op(A)(i, k) for each Lt row i, i.e. the column
//   sums over k of the graph's B when B is stored (k, n) (trans_b false): dbias (n) of a dy (k, n).
// * bias_grad_b (CUBLASLT_EPILOGUE_BGRADB): writes Σ_k op(B)(k, j) for each Lt column j, i.e. the column
//   sums over k of the graph's A when A is stored (k, m) (trans_a true): the weight-gradient GEMM
//   dW (out,in) = dYᵀ·X of a linear layer reads dY (tokens, out) this way, so its bias gradient comes out of
//   the same pass over dY.
// The bias-gradient epilogues write (do not add into) their vector: the caller adds it into dbias.
//
// Types (gemm_types.hpp): A and B of the plan's ab type, C = D of its cd type, the epilogue's vector of
// vector_type; scale (alpha, beta) and accumulation fp32 (CUBLAS_COMPUTE_32F, or its TF32 form for fp32
// operands). cublasLt.h (CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, CUBLASLT_MATMUL_DESC_BIAS_POINTER) documents
// the bias vector as D's type and the bias gradient as C's type outside the IMMA and fp8 kernels, so a plan
// with any other vector type is one cuBLASLt does not document (lt_vector_type_documented).
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

#include "core/error.hpp"
#include "models/task_graph.hpp"  // defines: GemmAttrs
#include "runtime/exec/cuda/gemm_layout.hpp"
#include "runtime/exec/cuda/gemm_types.hpp"

namespace ptsim::runtime::cuda {

enum class LtEpilogue { none, bias, bias_grad_a, bias_grad_b };

// A stored column-major matrix as cublasLtMatrixLayoutCreate takes it (before any transpose).
struct LtMatrix {
  int64_t rows = 0, cols = 0, ld = 0;
  GemmElement type = GemmElement::f32;
  bool operator==(const LtMatrix&) const = default;
};

struct LtGemmPlan {
  bool trans_a = false, trans_b = false;  // Lt's transa / transb
  int64_t m = 0, n = 0, k = 0;            // Lt's D is m × n, the reduction k
  LtMatrix a, b, d;                       // stored layouts of Lt's A, B and C = D
  LtEpilogue epilogue = LtEpilogue::none;
  int64_t epilogue_vector = 0;            // elements of the bias / bias-gradient vector (0 without one)
  GemmElement vector_type = GemmElement::f32;  // its element type
  bool operator==(const LtGemmPlan&) const = default;
};

// `types`: the stored types (gemm_types.hpp); fp32 everywhere by default.
inline LtGemmPlan lt_gemm_plan(const models::GemmAttrs& g, LtEpilogue epilogue, const GemmTypes& types = {}) {
  const ColumnMajorGemm c = column_major_gemm(g);
  LtGemmPlan p;
  p.trans_a = c.trans_first;
  p.trans_b = c.trans_second;
  p.m = c.rows;
  p.n = c.cols;
  p.k = c.inner;
  p.a = c.trans_first ? LtMatrix{c.inner, c.rows, c.ld_first} : LtMatrix{c.rows, c.inner, c.ld_first};
  p.b = c.trans_second ? LtMatrix{c.cols, c.inner, c.ld_second} : LtMatrix{c.inner, c.cols, c.ld_second};
  p.d = LtMatrix{c.rows, c.cols, c.ld_out};
  p.a.type = p.b.type = types.ab;
  p.d.type = types.cd;
  p.epilogue = epilogue;
  // The forward bias has the graph's bias type; a bias gradient is written in C's type (cublasLt.h).
  p.vector_type = epilogue == LtEpilogue::bias ? types.bias : types.cd;
  switch (epilogue) {
    case LtEpilogue::none: p.epilogue_vector = 0; break;
    case LtEpilogue::bias:
    case LtEpilogue::bias_grad_a: p.epilogue_vector = p.m; break;
    case LtEpilogue::bias_grad_b: p.epilogue_vector = p.n; break;
  }
  return p;
}

// Whether cublasLt.h documents the plan's epilogue vector type for its D (= C) type: the bias has D's type,
// the bias gradient C's (no vector: true). A plan this refuses is run without the epilogue.
inline bool lt_vector_type_documented(const LtGemmPlan& p) {
  return p.epilogue == LtEpilogue::none || p.vector_type == p.d.type;
}

// The alignment (bytes) to promise cuBLASLt's heuristic (CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_*_BYTES): the
// largest power of two dividing every address (null ones skipped), at most 256 (the preference's default).
// An address not aligned to its element (`element_bytes`: 2 for bf16/fp16, 4 for fp32) is a caller bug
// (std::logic_error). Tensor-core kernels on 2-byte elements want 16 bytes (8 elements); where the addresses
// (or the leading dimensions, which cuBLASLt checks itself) give less, the heuristic offers other kernels or
// none, and the caller runs its path without cuBLASLt.
inline int lt_common_alignment(std::span<const uintptr_t> addresses, int64_t element_bytes) {
  uintptr_t bits = uintptr_t{256};
  for (uintptr_t a : addresses) bits |= a;
  const int alignment = static_cast<int>(bits & (~bits + 1));
  if (alignment < element_bytes)
    throw std::logic_error("cuBLASLt operand at an address aligned to " + std::to_string(alignment) +
                           " bytes, less than its " + std::to_string(element_bytes) + "-byte element");
  return alignment;
}

// Which graph operand of a GEMM a bias_grad's dy is.
enum class GemmOperand { a, b };

// The bias-gradient epilogue that computes bias_grad(dy (M, N)) inside this GEMM, where dy is the graph
// operand `dy_operand`, or nothing when the layout does not allow it: the sum must run over the GEMM's
// reduction (dy's M rows = k) and the GEMM must be a plain one (not batched, no bias of its own, no fp8) with
// alpha 1: cuBLASLt documents the BGRAD vector as the reduction over k without saying whether alpha scales it,
// so a scaled GEMM takes the unfused path rather than rely on undocumented behaviour.
inline std::optional<LtEpilogue> bias_grad_epilogue(const models::GemmAttrs& g, GemmOperand dy_operand, int64_t M,
                                                    int64_t N) {
  if (g.batch != 1 || g.has_bias || g.fp8 || g.alpha != 1.0 || M != g.k || M <= 0 || N <= 0) return std::nullopt;
  if (dy_operand == GemmOperand::a && g.trans_a && N == g.m) return LtEpilogue::bias_grad_b;
  if (dy_operand == GemmOperand::b && !g.trans_b && N == g.n) return LtEpilogue::bias_grad_a;
  return std::nullopt;
}

// The environment switch PTSIM_CUDA_GEMM_EPILOGUES: unset or "1" runs the forward bias and the
// weight-gradient GEMM's bias gradient in cuBLASLt epilogues; "0" keeps the deterministic path (cuBLAS GEMM,
// then the bias kernel; bias_grad by the fixed-order column sums), for bit comparisons between runs.
inline constexpr const char* kGemmEpiloguesEnv = "PTSIM_CUDA_GEMM_EPILOGUES";
inline bool gemm_epilogues_enabled(const char* value) {
  if (value == nullptr || std::string(value) == "1") return true;
  if (std::string(value) == "0") return false;
  throw core::InputError(std::string(kGemmEpiloguesEnv) + "='" + value +
                         "': expected 0 (cuBLAS GEMM + bias kernel, fixed-order bias gradient) or 1 (cuBLASLt "
                         "epilogues, the default)");
}

}  // namespace ptsim::runtime::cuda
