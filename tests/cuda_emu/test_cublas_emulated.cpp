// tests/cuda_emu/test_cublas_emulated.cpp — the emulated cuBLAS (cublas_emulated.cpp) against the formula
// C = alpha·op(A)·op(B) + beta·C evaluated in double (blas_test_support.hpp), on small odd shapes with
// leading dimensions above the rows: every transpose pair, strided batches, beta = 0 over a NaN C, fp16 and
// bf16 operands, and the documented INVALID_VALUE / NOT_SUPPORTED answers.
#include <doctest/doctest.h>
#include <cublas_v2.h>

#include <cmath>
#include <cstring>
#include <string>

#include "blas_test_support.hpp"

using namespace blas_test;

namespace {

struct Handle {
  cublasHandle_t h = nullptr;
  Handle() { REQUIRE(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS); }
  ~Handle() { (void)cublasDestroy(h); }
};

// Checks C against alpha·op(A)·op(B) + beta·C_before (C_before not read when beta = 0) within the float
// accumulation bound plus, for a 16-bit C, its one rounding; and that C's padding rows are untouched.
void check_product(const Matrix& c, const Matrix& before, const Matrix& a, bool ta, const Matrix& b, bool tb,
                   float alpha, float beta) {
  for (int64_t p = 0; p < c.batch; ++p)
    for (int64_t j = 0; j < kN; ++j)
      for (int64_t i = 0; i < c.ld; ++i) {
        if (i >= kM) {
          CHECK(std::isnan(c.at(p, i, j)));  // padding: was NaN, must still be
          continue;
        }
        const blas_test::Dot d = blas_test::reference_dot(a, ta, b, tb, p, i, j, kK);
        const double c0 = beta == 0 ? 0.0 : before.at(p, i, j);
        const double want = alpha * d.value + beta * c0;
        const double tol = blas_test::gamma_bound(kK + 2, std::fabs(alpha) * d.magnitude + std::fabs(beta * c0)) +
                           (c.type == CUDA_R_32F ? 0.0 : std::fabs(want) * blas_test::unit_roundoff(c.type));
        INFO("p=", p, " i=", i, " j=", j, " want=", want);
        CHECK(std::fabs(c.at(p, i, j) - want) <= tol);
      }
}

cublasOperation_t op(bool trans) { return trans ? CUBLAS_OP_T : CUBLAS_OP_N; }

cublasStatus_t gemm(const Handle& h, bool ta, bool tb, float alpha, const Matrix& a, const Matrix& b, float beta,
                    Matrix& c, cublasComputeType_t compute = CUBLAS_COMPUTE_32F) {
  return cublasGemmEx(h.h, op(ta), op(tb), kM, kN, kK, &alpha, a.data(), a.type, static_cast<int>(a.ld), b.data(),
                      b.type, static_cast<int>(b.ld), &beta, c.data(), c.type, static_cast<int>(c.ld), compute,
                      CUBLAS_GEMM_DEFAULT);
}

Matrix copy_of(const Matrix& m) {
  Matrix out(m.type, m.rows, m.cols, m.ld, m.batch, m.stride);
  std::memcpy(out.data(), m.data(), static_cast<size_t>(((m.batch - 1) * m.stride + m.ld * m.cols + 1) *
                                                        blas_test::bytes_of(m.type)));
  return out;
}

}  // namespace

TEST_CASE("emulated cublasGemmEx: fp32, every transpose pair, ld above the rows, alpha and beta") {
  Handle h;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      INFO("transa=", ta, " transb=", tb);
      const Matrix a = make_a(CUDA_R_32F, ta), b = make_b(CUDA_R_32F, tb);
      Matrix c = make_c(CUDA_R_32F);
      const Matrix before = copy_of(c);
      REQUIRE(gemm(h, ta, tb, 1.5f, a, b, -0.75f, c) == CUBLAS_STATUS_SUCCESS);
      check_product(c, before, a, ta, b, tb, 1.5f, -0.75f);
    }
}

TEST_CASE("emulated cublasGemmEx: beta = 0 does not read C (a NaN C gives no NaN)") {
  Handle h;
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, true);
  Matrix c(CUDA_R_32F, kM, kN, kM + 3);  // all NaN
  const Matrix before = copy_of(c);
  REQUIRE(gemm(h, false, true, 2.0f, a, b, 0.0f, c) == CUBLAS_STATUS_SUCCESS);
  check_product(c, before, a, false, b, true, 2.0f, 0.0f);
}

TEST_CASE("emulated cublasGemmEx: TF32 compute is computed as fp32") {
  Handle h;
  const Matrix a = make_a(CUDA_R_32F, true), b = make_b(CUDA_R_32F, false);
  Matrix c = make_c(CUDA_R_32F);
  const Matrix before = copy_of(c);
  REQUIRE(gemm(h, true, false, 1.0f, a, b, 1.0f, c, CUBLAS_COMPUTE_32F_FAST_TF32) == CUBLAS_STATUS_SUCCESS);
  check_product(c, before, a, true, b, false, 1.0f, 1.0f);
}

TEST_CASE("emulated cublasGemmEx: fp16 and bf16 operands, C fp32 or of their type") {
  Handle h;
  for (const cudaDataType_t ab : {CUDA_R_16F, CUDA_R_16BF})
    for (const cudaDataType_t ct : {CUDA_R_32F, ab}) {
      INFO("ab=", static_cast<int>(ab), " c=", static_cast<int>(ct));
      const Matrix a = make_a(ab, true), b = make_b(ab, true);
      Matrix c = make_c(ct);
      const Matrix before = copy_of(c);
      REQUIRE(gemm(h, true, true, 0.5f, a, b, 2.0f, c) == CUBLAS_STATUS_SUCCESS);
      check_product(c, before, a, true, b, true, 0.5f, 2.0f);
    }
}

TEST_CASE("emulated cublasGemmStridedBatchedEx: three products at strides above the matrix sizes") {
  Handle h;
  for (const cudaDataType_t t : {CUDA_R_32F, CUDA_R_16BF}) {
    const Matrix a = make_a(t, false, 3), b = make_b(t, true, 3);
    Matrix c(t, kM, kN, kM + 1, 3, (kM + 1) * kN + 5, 0.0f);
    c.fill_pattern(2);
    const Matrix before = copy_of(c);
    const float alpha = 1.25f, beta = -1.0f;
    REQUIRE(cublasGemmStridedBatchedEx(h.h, CUBLAS_OP_N, CUBLAS_OP_T, kM, kN, kK, &alpha, a.data(), t,
                                       static_cast<int>(a.ld), a.stride, b.data(), t, static_cast<int>(b.ld),
                                       b.stride, &beta, c.data(), t, static_cast<int>(c.ld), c.stride, 3,
                                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    for (int64_t p = 0; p < 2; ++p)  // the gaps between the batch matrices stay as filled (0)
      for (int64_t g = (kM + 1) * kN; g < c.stride; ++g) CHECK(c.raw(p * c.stride + g) == 0.0f);
    // check_product wants NaN padding rows; this C has its padding 0, so compare the products only.
    for (int64_t p = 0; p < 3; ++p)
      for (int64_t j = 0; j < kN; ++j)
        for (int64_t i = 0; i < kM; ++i) {
          const blas_test::Dot d = blas_test::reference_dot(a, false, b, true, p, i, j, kK);
          const double want = alpha * d.value + beta * before.at(p, i, j);
          const double tol = blas_test::gamma_bound(kK + 2, alpha * d.magnitude + std::fabs(before.at(p, i, j))) +
                             (t == CUDA_R_32F ? 0.0 : std::fabs(want) * blas_test::unit_roundoff(t));
          CHECK(std::fabs(c.at(p, i, j) - want) <= tol);
        }
  }
}

TEST_CASE("emulated cublasGemmEx: k = 0 scales C by beta; m = 0 writes nothing") {
  Handle h;
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false);
  Matrix c = make_c(CUDA_R_32F);
  const Matrix before = copy_of(c);
  const float alpha = 1.0f, beta = 3.0f;
  REQUIRE(cublasGemmEx(h.h, CUBLAS_OP_N, CUBLAS_OP_N, kM, kN, 0, &alpha, a.data(), CUDA_R_32F, kM + 2, b.data(),
                       CUDA_R_32F, 1, &beta, c.data(), CUDA_R_32F, kM + 3, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
  for (int64_t j = 0; j < kN; ++j)
    for (int64_t i = 0; i < kM; ++i) CHECK(c.at(0, i, j) == 3.0f * before.at(0, i, j));  // exact: ×3 of a float
  const Matrix after_k0 = copy_of(c);
  REQUIRE(cublasGemmEx(h.h, CUBLAS_OP_N, CUBLAS_OP_N, 0, kN, kK, &alpha, a.data(), CUDA_R_32F, 1, b.data(),
                       CUDA_R_32F, kK + 2, &beta, c.data(), CUDA_R_32F, 1, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
  CHECK(std::memcmp(c.data(), after_k0.data(), sizeof(float) * (kM + 3) * kN) == 0);
}

TEST_CASE("emulated cublasGemmEx: a leading dimension below its rows is INVALID_VALUE, C untouched") {
  Handle h;
  const float alpha = 1.0f, beta = 0.0f;
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, true);
  Matrix c = make_c(CUDA_R_32F);
  const Matrix before = copy_of(c);
  const auto call = [&](cublasOperation_t ta, int lda, int ldb, int ldc) {
    return cublasGemmEx(h.h, ta, CUBLAS_OP_T, kM, kN, kK, &alpha, a.data(), CUDA_R_32F, lda, b.data(), CUDA_R_32F,
                        ldb, &beta, c.data(), CUDA_R_32F, ldc, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
  };
  CHECK(call(CUBLAS_OP_N, kM - 1, kN, kM) == CUBLAS_STATUS_INVALID_VALUE);  // A (N) stores m rows
  CHECK(call(CUBLAS_OP_T, kM, kN, kM) == CUBLAS_STATUS_INVALID_VALUE);      // A (T) stores k = 7 rows
  CHECK(call(CUBLAS_OP_N, kM, kN - 1, kM) == CUBLAS_STATUS_INVALID_VALUE);  // B (T) stores n rows
  CHECK(call(CUBLAS_OP_N, kM, kN, kM - 1) == CUBLAS_STATUS_INVALID_VALUE);  // C stores m rows
  CHECK(std::memcmp(c.data(), before.data(), sizeof(float) * (kM + 3) * kN) == 0);
  CHECK(cublasGemmEx(h.h, CUBLAS_OP_N, CUBLAS_OP_N, -1, kN, kK, &alpha, a.data(), CUDA_R_32F, kM, b.data(), CUDA_R_32F,
                     kK, &beta, c.data(), CUDA_R_32F, kM, CUBLAS_COMPUTE_32F,
                     CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_INVALID_VALUE);
}

TEST_CASE("emulated cublasGemmEx: type and compute combinations it does not have are NOT_SUPPORTED") {
  Handle h;
  Matrix c = make_c(CUDA_R_32F);
  const Matrix before = copy_of(c);
  const Matrix a16 = make_a(CUDA_R_16F, false), b16 = make_b(CUDA_R_16BF, false), b16f = make_b(CUDA_R_16F, false);
  const Matrix a32 = make_a(CUDA_R_32F, false), b32 = make_b(CUDA_R_32F, false);
  Matrix c16bf = make_c(CUDA_R_16BF);
  CHECK(gemm(h, false, false, 1.0f, a16, b16, 0.0f, c) == CUBLAS_STATUS_NOT_SUPPORTED);      // fp16 × bf16
  CHECK(gemm(h, false, false, 1.0f, a16, b16f, 0.0f, c16bf) == CUBLAS_STATUS_NOT_SUPPORTED);  // fp16 into bf16
  CHECK(gemm(h, false, false, 1.0f, a32, b32, 0.0f, c16bf) == CUBLAS_STATUS_NOT_SUPPORTED);   // fp32 into bf16
  CHECK(gemm(h, false, false, 1.0f, a16, b16f, 0.0f, c, CUBLAS_COMPUTE_32F_FAST_TF32) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(gemm(h, false, false, 1.0f, a32, b32, 0.0f, c, CUBLAS_COMPUTE_64F) == CUBLAS_STATUS_NOT_SUPPORTED);
  CHECK(std::memcmp(c.data(), before.data(), sizeof(float) * (kM + 3) * kN) == 0);
}

TEST_CASE("emulated cuBLAS handle: null handle, stream, workspace alignment") {
  const float one = 1.0f;
  CHECK(cublasGemmEx(nullptr, CUBLAS_OP_N, CUBLAS_OP_N, 1, 1, 1, &one, &one, CUDA_R_32F, 1, &one, CUDA_R_32F, 1, &one,
                     nullptr, CUDA_R_32F, 1, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_INITIALIZED);
  Handle h;
  // Any stream value: the shim keeps it and runs work at once (the emulator's streams are the host thread).
  const cudaStream_t s = reinterpret_cast<cudaStream_t>(uintptr_t{0x1000});
  CHECK(cublasSetStream(h.h, s) == CUBLAS_STATUS_SUCCESS);
  cudaStream_t got = nullptr;
  CHECK(cublasGetStream(h.h, &got) == CUBLAS_STATUS_SUCCESS);
  CHECK(got == s);
  Matrix ws(CUDA_R_32F, 1024, 1, 1024);
  CHECK(cublasSetWorkspace(h.h, ws.data(), 4096) == CUBLAS_STATUS_SUCCESS);
  CHECK(cublasSetWorkspace(h.h, static_cast<char*>(ws.data()) + 128, 1024) == CUBLAS_STATUS_INVALID_VALUE);
}

TEST_CASE("emulated cublasGetStatusName / String: each status its own name") {
  CHECK(std::string(cublasGetStatusName(CUBLAS_STATUS_SUCCESS)) == "CUBLAS_STATUS_SUCCESS");
  CHECK(std::string(cublasGetStatusName(CUBLAS_STATUS_INVALID_VALUE)) == "CUBLAS_STATUS_INVALID_VALUE");
  CHECK(std::string(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED)) == "CUBLAS_STATUS_NOT_SUPPORTED");
  CHECK(std::string(cublasGetStatusName(CUBLAS_STATUS_NOT_INITIALIZED)) == "CUBLAS_STATUS_NOT_INITIALIZED");
  CHECK(std::string(cublasGetStatusString(CUBLAS_STATUS_SUCCESS)) == "success");
  CHECK(std::string(cublasGetStatusString(CUBLAS_STATUS_NOT_SUPPORTED)).find("emulated") != std::string::npos);
}
