// tests/cuda_emu/test_cublaslt_errors.cpp — what the emulated cuBLASLt refuses, and how: INVALID_VALUE for
// what NVIDIA's documentation forbids (ld below the rows, shapes or batch counts that do not match, an
// attribute value of the wrong size, a missing epilogue pointer, an algorithm the heuristic did not give or
// pointers less aligned than promised) and NOT_SUPPORTED for a combination the shim does not have — in
// each case D untouched. Also the heuristic's one algorithm and its workspace.
#include <doctest/doctest.h>
#include <cublasLt.h>

#include <cstring>

#include "lt_test_support.hpp"

using namespace blas_test;

namespace {

// D (ld m + 1, all NaN) is still all NaN: the refused call wrote nothing.
bool untouched(const Matrix& d) {
  for (int64_t i = 0; i < d.ld * d.cols; ++i)
    if (!std::isnan(d.raw(i))) return false;
  return true;
}

}  // namespace

TEST_CASE("emulated cuBLASLt: an ld below the rows is INVALID_VALUE in the heuristic and the matmul") {
  const Matrix b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);
  Matrix a(CUDA_R_32F, kM, kK, kM);  // a valid A, described below with ld = m − 1
  Matrix d(CUDA_R_32F, kM, kN, kM + 1);
  Lt lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_DEFAULT);
  const int64_t bad_ld = kM - 1;
  REQUIRE(cublasLtMatrixLayoutSetAttribute(lt.la, CUBLASLT_MATRIX_LAYOUT_LD, &bad_ld, sizeof(bad_ld)) ==
          CUBLAS_STATUS_SUCCESS);
  CHECK(lt.run(1.0f, 0.0f) == CUBLAS_STATUS_INVALID_VALUE);
  const float one = 1.0f, zero = 0.0f;
  CHECK(cublasLtMatmul(lt.handle, lt.desc, &one, a.data(), lt.la, b.data(), lt.lb, &zero, c.data(), lt.lc, d.data(),
                       lt.ld, nullptr, nullptr, 0, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(untouched(d));
}

TEST_CASE("emulated cuBLASLt: shapes or batch counts that do not match are INVALID_VALUE") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);
  {
    Matrix d(CUDA_R_32F, kM + 1, kN, kM + 1);  // D has one row more than op(A)
    const Matrix c6(CUDA_R_32F, kM + 1, kN, kM + 1);
    Lt lt(a, false, b, false, c6, d, CUBLASLT_EPILOGUE_DEFAULT);
    CHECK(lt.run(1.0f, 0.0f) == CUBLAS_STATUS_INVALID_VALUE);
  }
  {
    Matrix d(CUDA_R_32F, kM, kN, kM + 1);
    Lt lt(a, true, b, false, c, d, CUBLASLT_EPILOGUE_DEFAULT);  // op(A) = Aᵀ is 7×5: k ≠ op(B)'s rows
    CHECK(lt.run(1.0f, 0.0f) == CUBLAS_STATUS_INVALID_VALUE);
    CHECK(untouched(d));
  }
  Matrix d(CUDA_R_32F, kM, kN, kM + 1);
  Lt lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_DEFAULT);
  const int32_t two = 2;
  REQUIRE(cublasLtMatrixLayoutSetAttribute(lt.lb, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &two, sizeof(two)) ==
          CUBLAS_STATUS_SUCCESS);
  CHECK(lt.run(1.0f, 0.0f) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(untouched(d));
}

TEST_CASE("emulated cuBLASLt: attribute values of the wrong size are INVALID_VALUE") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1);
  Lt lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_DEFAULT);
  const int64_t op64 = CUBLAS_OP_T;  // TRANSA is an int32_t
  CHECK(cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_TRANSA, &op64, sizeof(op64)) ==
        CUBLAS_STATUS_INVALID_VALUE);
  const uint64_t ep64 = CUBLASLT_EPILOGUE_BIAS;  // EPILOGUE is a uint32_t
  CHECK(cublasLtMatmulDescSetAttribute(lt.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &ep64, sizeof(ep64)) ==
        CUBLAS_STATUS_INVALID_VALUE);
  const int32_t ld32 = kM;  // LD is an int64_t
  CHECK(cublasLtMatrixLayoutSetAttribute(lt.la, CUBLASLT_MATRIX_LAYOUT_LD, &ld32, sizeof(ld32)) ==
        CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatmulPreference_t pref = nullptr;
  REQUIRE(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
  const uint32_t ws32 = 1024;  // MAX_WORKSPACE_BYTES is a uint64_t
  CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws32, sizeof(ws32)) ==
        CUBLAS_STATUS_INVALID_VALUE);
  (void)cublasLtMatmulPreferenceDestroy(pref);
  CHECK(lt.run(1.0f, 0.0f) == CUBLAS_STATUS_SUCCESS);  // the refused values changed nothing: still N, N, DEFAULT
}

TEST_CASE("emulated cuBLASLt: combinations the shim does not have are NOT_SUPPORTED") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);
  const Matrix a16 = make_a(CUDA_R_16F, false), bbf = make_b(CUDA_R_16BF, false), b16 = make_b(CUDA_R_16F, false);
  const Matrix cbf = make_c(CUDA_R_16BF);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1), dbf(CUDA_R_16BF, kM, kN, kM + 1), bias(CUDA_R_32F, kM, 1, kM);
  CHECK(Lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_RELU_AUX).run(1.0f, 0.0f) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(Lt(a16, false, bbf, false, c, d, CUBLASLT_EPILOGUE_DEFAULT).run(1.0f, 0.0f) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(Lt(a, false, b, false, cbf, dbf, CUBLASLT_EPILOGUE_DEFAULT).run(1.0f, 0.0f) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(Lt(a16, false, b16, false, c, dbf, CUBLASLT_EPILOGUE_DEFAULT).run(1.0f, 0.0f) ==
        CUBLAS_STATUS_NOT_SUPPORTED);  // C fp32, D bf16
  CHECK(Lt(a16, false, b16, false, c, d, CUBLASLT_EPILOGUE_DEFAULT, CUBLAS_COMPUTE_32F_FAST_TF32).run(1.0f, 0.0f) ==
        CUBLAS_STATUS_NOT_SUPPORTED);  // TF32 is for fp32 operands
  Matrix bbf16 = make_b(CUDA_R_16BF, false);
  Matrix abf = make_a(CUDA_R_16BF, false);
  Lt lt(abf, false, bbf16, false, cbf, dbf, CUBLASLT_EPILOGUE_BIAS);
  lt.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data());
  lt.set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, int32_t{CUDA_R_32F});  // an fp32 bias with a bf16 D
  CHECK(lt.run(1.0f, 0.0f) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(untouched(d));
  CHECK(untouched(dbf));
}

TEST_CASE("emulated cuBLASLt: a missing bias or aux pointer, an aux ld below the rows or not a multiple of 8 are "
          "INVALID_VALUE") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1), aux(CUDA_R_32F, kM, kN, 16), bias(CUDA_R_32F, kM, 1, kM);
  CHECK(Lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_BIAS).run(1.0f, 0.0f) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(Lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_BGRADA).run(1.0f, 0.0f) == CUBLAS_STATUS_INVALID_VALUE);
  {
    Lt lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_GELU_AUX);
    lt.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64_t{8});
    CHECK(lt.run(1.0f, 0.0f) == CUBLAS_STATUS_INVALID_VALUE);  // no aux pointer
  }
  for (const cublasLtEpilogue_t ep : {CUBLASLT_EPILOGUE_GELU_AUX, CUBLASLT_EPILOGUE_DGELU}) {
    Lt lt(a, false, b, false, c, d, ep);
    lt.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux.data());
    lt.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64_t{12});  // ≥ the rows, but not a multiple of 8
    CHECK(lt.run(1.0f, 0.0f) == CUBLAS_STATUS_INVALID_VALUE);
  }
  Lt lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_GELU_AUX);
  lt.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux.data());
  lt.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64_t{0});  // a multiple of 8, below the rows
  CHECK(lt.run(1.0f, 0.0f) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(untouched(d));
}

TEST_CASE("emulated cuBLASLt: in place (C = D) with C's layout not D's is INVALID_VALUE") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);  // ld m + 3
  Matrix d(CUDA_R_32F, kM, kN, kM + 1);
  Lt lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_DEFAULT);
  CHECK(lt.run(1.0f, 1.0f, d.data(), d.data()) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(untouched(d));
}

TEST_CASE("emulated cuBLASLt heuristic: one algorithm, its workspace within the limit; a made-up one is refused") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1);
  Lt lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_DEFAULT);
  cublasLtMatmulHeuristicResult_t r{};
  // The shim's algorithm wants 1 MiB (cublaslt_matmul.cpp) and takes less when the limit is less.
  REQUIRE(lt.heuristic(r, uint64_t{1} << 24, 256) == CUBLAS_STATUS_SUCCESS);
  CHECK(r.workspaceSize == size_t{1} << 20);
  REQUIRE(lt.heuristic(r, 4096, 256) == CUBLAS_STATUS_SUCCESS);
  CHECK(r.workspaceSize == 4096);
  REQUIRE(lt.heuristic(r, 0, 256) == CUBLAS_STATUS_SUCCESS);  // a zero workspace limit still has the algorithm
  CHECK(r.workspaceSize == 0);
  CHECK(r.state == CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f, zero = 0.0f;
  const cublasLtMatmulAlgo_t made_up{};
  CHECK(cublasLtMatmul(lt.handle, lt.desc, &one, a.data(), lt.la, b.data(), lt.lb, &zero, c.data(), lt.lc, d.data(),
                       lt.ld, &made_up, nullptr, 0, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(untouched(d));
  int found = 0;
  cublasLtMatmulPreference_t pref = nullptr;
  REQUIRE(cublasLtMatmulPreferenceCreate(&pref) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmulAlgoGetHeuristic(lt.handle, lt.desc, lt.la, lt.lb, lt.lc, lt.ld, pref, 0, &r, &found) ==
        CUBLAS_STATUS_INVALID_VALUE);
  CHECK(cublasLtMatmulAlgoGetHeuristic(nullptr, lt.desc, lt.la, lt.lb, lt.lc, lt.ld, pref, 1, &r, &found) ==
        CUBLAS_STATUS_NOT_INITIALIZED);
  (void)cublasLtMatmulPreferenceDestroy(pref);
  CHECK(cublasLtMatmul(lt.handle, lt.desc, &one, a.data(), lt.la, b.data(), lt.lb, &zero, c.data(), lt.lc, d.data(),
                       lt.ld, nullptr, nullptr, 0, nullptr) == CUBLAS_STATUS_SUCCESS);  // null: the library picks
  CHECK(cublasLtMatmul(lt.handle, lt.desc, &one, a.data(), lt.la, b.data(), lt.lb, &zero, c.data(), lt.lc, d.data(),
                       lt.ld, &r.algo, nullptr, 0, nullptr) == CUBLAS_STATUS_SUCCESS);  // needs none: null is fine
}

TEST_CASE("emulated cuBLASLt: pointers less aligned than the heuristic was promised are INVALID_VALUE") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1);
  Lt lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_DEFAULT);
  float* d4 = static_cast<float*>(d.data()) + 1;  // 4-byte aligned only (D's buffer has room for the shift)
  const float one = 1.0f, zero = 0.0f;
  cublasLtMatmulHeuristicResult_t r{};
  REQUIRE(lt.heuristic(r, 1 << 20, 256) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmul(lt.handle, lt.desc, &one, a.data(), lt.la, b.data(), lt.lb, &zero, c.data(), lt.lc, d4, lt.ld,
                       &r.algo, lt.workspace.data(), lt.workspace.bytes, nullptr) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(untouched(d));
  REQUIRE(lt.heuristic(r, 1 << 20, 4) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasLtMatmul(lt.handle, lt.desc, &one, a.data(), lt.la, b.data(), lt.lb, &zero, c.data(), lt.lc, d4, lt.ld,
                       &r.algo, lt.workspace.data(), lt.workspace.bytes, nullptr) == CUBLAS_STATUS_SUCCESS);
  CHECK(!std::isnan(d4[0]));
}

TEST_CASE("emulated cuBLASLt: a null handle is NOT_INITIALIZED") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1);
  Lt lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_DEFAULT);
  const float one = 1.0f, zero = 0.0f;
  CHECK(cublasLtMatmul(nullptr, lt.desc, &one, a.data(), lt.la, b.data(), lt.lb, &zero, c.data(), lt.lc, d.data(),
                       lt.ld, nullptr, nullptr, 0, nullptr) == CUBLAS_STATUS_NOT_INITIALIZED);
  CHECK(untouched(d));
}

TEST_CASE("emulated cuBLASLt: a workspace missing, misaligned or too small is INVALID_VALUE; the used one is 0xFF") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1);
  Lt lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_DEFAULT);
  const size_t need = 4096;  // the heuristic's limit below, under the 1 MiB the algorithm wants
  cublasLtMatmulHeuristicResult_t r{};
  REQUIRE(lt.heuristic(r, need, 256) == CUBLAS_STATUS_SUCCESS);
  REQUIRE(r.workspaceSize == need);
  Workspace ws(need + 512);
  const float one = 1.0f, zero = 0.0f;
  const auto call = [&](void* w, size_t bytes) {
    return cublasLtMatmul(lt.handle, lt.desc, &one, a.data(), lt.la, b.data(), lt.lb, &zero, c.data(), lt.lc,
                          d.data(), lt.ld, &r.algo, w, bytes, nullptr);
  };
  CHECK(call(nullptr, need) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(call(ws.data() + 128, need) == CUBLAS_STATUS_INVALID_VALUE);  // 128-byte aligned only
  CHECK(call(ws.data(), need - 1) == CUBLAS_STATUS_INVALID_VALUE);
  CHECK(untouched(d));
  for (size_t i = 0; i < ws.bytes; ++i) REQUIRE(ws.data()[i] == 0);  // the refused calls wrote none of it
  REQUIRE(call(ws.data(), ws.bytes) == CUBLAS_STATUS_SUCCESS);  // more than needed is fine
  CHECK(!std::isnan(d.at(0, 0, 0)));
  size_t filled = 0, beyond = 0;
  for (size_t i = 0; i < ws.bytes; ++i) (i < need ? filled : beyond) += ws.data()[i] == 0xFF;
  CHECK(filled == need);  // every byte it asked for, and nothing past it
  CHECK(beyond == 0);
}

TEST_CASE("emulated cuBLASLt: a workspace aliasing an operand shows in D (the used workspace is overwritten)") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1);
  Lt lt(a, false, b, false, c, d, CUBLASLT_EPILOGUE_DEFAULT);
  const size_t a_bytes = static_cast<size_t>(a.ld * a.cols) * sizeof(float);  // A (256-byte aligned) as workspace
  cublasLtMatmulHeuristicResult_t r{};
  REQUIRE(lt.heuristic(r, a_bytes, 256) == CUBLAS_STATUS_SUCCESS);
  const float one = 1.0f, zero = 0.0f;
  REQUIRE(cublasLtMatmul(lt.handle, lt.desc, &one, a.data(), lt.la, b.data(), lt.lb, &zero, c.data(), lt.lc,
                         d.data(), lt.ld, &r.algo, a.data(), a_bytes, nullptr) == CUBLAS_STATUS_SUCCESS);
  for (int64_t j = 0; j < kN; ++j)
    for (int64_t i = 0; i < kM; ++i) CHECK(std::isnan(d.at(0, i, j)));  // A read as 0xFF bytes: NaN
}
