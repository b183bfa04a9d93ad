// tests/cuda_emu/test_cublaslt_emulated.cpp — the emulated cuBLASLt (cublaslt_*.cpp) against formulas in
// double (blas_test_support.hpp): D = epilogue(alpha·op(A)·op(B) + beta·C) with every transpose pair, ld
// above the rows, batches with strided offsets, beta = 0 over a NaN C, each epilogue (bias, ReLU, GELU with
// its aux output, the GELU gradient with its bias gradient, BGRADA, BGRADB), fp16 / bf16 operands, the
// heuristic's one algorithm and the documented INVALID_VALUE / NOT_SUPPORTED answers.
#include <doctest/doctest.h>
#include <cublasLt.h>

#include <cmath>
#include <cstring>
#include <numbers>
#include <vector>

#include "lt_test_support.hpp"

using namespace blas_test;

namespace {

// GELU's tanh form in double, and its derivative (the formula of cuBLASLt's epilogue table).
double gelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / std::numbers::pi) * (x + 0.044715 * x * x * x))); }
double gelu_grad(double x) {
  const double s = std::sqrt(2 / std::numbers::pi), t = std::tanh(s * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * s * (1 + 3 * 0.044715 * x * x);
}
// A float evaluation of gelu / gelu_grad (tanhf within 2 ulp, about ten roundings): 32 ulp of max(1, |x|).
double gelu_eval_bound(double x) { return 32 * std::ldexp(1.0, -24) * std::fmax(1.0, std::fabs(x)); }

// alpha·op(A)·op(B) + beta·C at (p, i, j) in double, and the bound float accumulation must meet there.
struct Expected {
  double value, tol;
};
Expected product(const Lt& lt, float alpha, float beta, int64_t p, int64_t i, int64_t j) {
  const blas_test::Dot d = blas_test::reference_dot(lt.a, lt.ta, lt.b, lt.tb, p, i, j, kK);
  const double c0 = beta == 0 ? 0.0 : lt.c.at(p, i, j);
  // k fused multiply-adds, then alpha·acc + beta·c: γ_{k+2} of the magnitudes (as for cublasGemmEx).
  const double tol = blas_test::gamma_bound(kK + 2, std::fabs(alpha) * d.magnitude + std::fabs(beta * c0));
  return {alpha * d.value + beta * c0, tol};
}

// |got − want| within tol plus, for a 16-bit result, its one rounding.
void check_near(float got, double want, double tol, cudaDataType_t type) {
  const double bound = tol + (type == CUDA_R_32F ? 0.0 : std::fabs(want) * blas_test::unit_roundoff(type));
  INFO("got=", got, " want=", want, " bound=", bound);
  CHECK(std::fabs(got - want) <= bound);
}

// D against `f` applied to the product (f gives the expected value and bound from the product's); D's
// padding rows still NaN.
template <class F>
void check_d(const Lt& lt, const Matrix& d, float alpha, float beta, F f) {
  for (int64_t p = 0; p < d.batch; ++p)
    for (int64_t j = 0; j < kN; ++j)
      for (int64_t i = 0; i < d.ld; ++i) {
        INFO("p=", p, " i=", i, " j=", j);
        if (i >= kM) {
          CHECK(std::isnan(d.at(p, i, j)));
          continue;
        }
        const Expected e = f(product(lt, alpha, beta, p, i, j), p, i, j);
        check_near(d.at(p, i, j), e.value, e.tol, d.type);
      }
}

Expected plain(Expected e, int64_t, int64_t, int64_t) { return e; }

// Adding the bias (|bias| < 2, the pattern's range) is one more rounding.
Expected plus_bias(Expected e, double bias) {
  return {e.value + bias, e.tol + blas_test::gamma_bound(1, std::fabs(e.value) + 2)};
}

}  // namespace

TEST_CASE("emulated cublasLtMatmul: fp32, every transpose pair, ld above the rows, alpha and beta") {
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      INFO("transa=", ta, " transb=", tb);
      const Matrix a = make_a(CUDA_R_32F, ta), b = make_b(CUDA_R_32F, tb), c = make_c(CUDA_R_32F);
      Matrix d(CUDA_R_32F, kM, kN, kM + 1);
      Lt lt(a, ta, b, tb, c, d, CUBLASLT_EPILOGUE_DEFAULT);
      REQUIRE(lt.run(0.75f, 1.5f) == CUBLAS_STATUS_SUCCESS);
      check_d(lt, d, 0.75f, 1.5f, plain);
    }
}

TEST_CASE("emulated cublasLtMatmul: beta = 0 does not read C (a NaN C gives no NaN); in place C = D") {
  const Matrix a = make_a(CUDA_R_32F, true), b = make_b(CUDA_R_32F, false);
  const Matrix nan_c(CUDA_R_32F, kM, kN, kM + 3);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1);
  {
    Lt lt(a, true, b, false, nan_c, d, CUBLASLT_EPILOGUE_DEFAULT);
    REQUIRE(lt.run(2.0f, 0.0f) == CUBLAS_STATUS_SUCCESS);
    check_d(lt, d, 2.0f, 0.0f, plain);
  }
  Matrix cd = make_c(CUDA_R_32F);
  const Matrix before = make_c(CUDA_R_32F);  // the same pattern: C as it was
  Lt lt(a, true, b, false, before, cd, CUBLASLT_EPILOGUE_DEFAULT);
  REQUIRE(lt.run(1.0f, -2.0f, cd.data(), cd.data()) == CUBLAS_STATUS_SUCCESS);
  check_d(lt, cd, 1.0f, -2.0f, plain);
}

TEST_CASE("emulated cublasLtMatmul: batch count 3 with strided batch offsets, a bias per batch") {
  const Matrix a = make_a(CUDA_R_32F, false, 3), b = make_b(CUDA_R_32F, true, 3), c = make_c(CUDA_R_32F, 3);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1, 3, (kM + 1) * kN + 4);
  Matrix bias(CUDA_R_32F, kM, 1, kM + 2, 3, kM + 2);
  bias.fill_pattern(3);
  Lt lt(a, false, b, true, c, d, CUBLASLT_EPILOGUE_BIAS);
  lt.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data());
  lt.set(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, int64_t{kM + 2});
  REQUIRE(lt.run(1.0f, 0.5f) == CUBLAS_STATUS_SUCCESS);
  check_d(lt, d, 1.0f, 0.5f, [&](Expected e, int64_t p, int64_t i, int64_t) {
    return plus_bias(e, bias.at(p, i, 0));
  });
  for (int64_t p = 0; p < 2; ++p)  // the gap after each batch matrix of D is not written
    for (int64_t g = (kM + 1) * kN; g < d.stride; ++g) CHECK(std::isnan(d.raw(p * d.stride + g)));
}

TEST_CASE("emulated cublasLtMatmul: RELU_BIAS and GELU_BIAS") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, false), c = make_c(CUDA_R_32F);
  Matrix bias(CUDA_R_32F, kM, 1, kM);
  bias.fill_pattern(6);
  for (const cublasLtEpilogue_t ep : {CUBLASLT_EPILOGUE_RELU_BIAS, CUBLASLT_EPILOGUE_GELU_BIAS}) {
    Matrix d(CUDA_R_32F, kM, kN, kM + 1);
    Lt lt(a, false, b, false, c, d, ep);
    lt.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data());
    REQUIRE(lt.run(1.0f, 1.0f) == CUBLAS_STATUS_SUCCESS);
    check_d(lt, d, 1.0f, 1.0f, [&](Expected e, int64_t, int64_t i, int64_t) {
      const auto [x, tol] = plus_bias(e, bias.at(0, i, 0));
      if (ep == CUBLASLT_EPILOGUE_RELU_BIAS) return Expected{x > 0 ? x : 0.0, tol};
      return Expected{gelu(x), 1.2 * tol + gelu_eval_bound(x)};  // |gelu'| ≤ 1.13 carries x's error
    });
  }
}

TEST_CASE("emulated cublasLtMatmul: GELU_AUX_BIAS writes GELU's input to the aux matrix (ld 8, above the rows)") {
  const Matrix a = make_a(CUDA_R_32F, true), b = make_b(CUDA_R_32F, true), c = make_c(CUDA_R_32F);
  Matrix bias(CUDA_R_32F, kM, 1, kM);
  bias.fill_pattern(2);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1), aux(CUDA_R_32F, kM, kN, 8);
  Lt lt(a, true, b, true, c, d, CUBLASLT_EPILOGUE_GELU_AUX_BIAS);
  lt.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data());
  lt.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux.data());
  lt.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64_t{8});
  REQUIRE(lt.run(1.0f, -1.0f) == CUBLAS_STATUS_SUCCESS);
  check_d(lt, d, 1.0f, -1.0f, [&](Expected e, int64_t, int64_t i, int64_t j) {
    const auto [x, tol] = plus_bias(e, bias.at(0, i, 0));
    check_near(aux.at(0, i, j), x, tol, CUDA_R_32F);
    return Expected{gelu(x), 1.2 * tol + gelu_eval_bound(x)};
  });
  for (int64_t j = 0; j < kN; ++j)
    for (int64_t i = kM; i < 8; ++i) CHECK(std::isnan(aux.at(0, i, j)));  // aux padding untouched
}

TEST_CASE("emulated cublasLtMatmul: DGELU_BGRAD multiplies by GELU'(aux) and writes the row sums") {
  const Matrix a = make_a(CUDA_R_32F, false), b = make_b(CUDA_R_32F, true), c = make_c(CUDA_R_32F);
  Matrix aux(CUDA_R_32F, kM, kN, 16);
  aux.fill_pattern(5);
  Matrix d(CUDA_R_32F, kM, kN, kM + 1), bias(CUDA_R_32F, kM, 1, kM);
  Lt lt(a, false, b, true, c, d, CUBLASLT_EPILOGUE_DGELU_BGRAD);
  lt.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data());
  lt.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, aux.data());
  lt.set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, int64_t{16});
  REQUIRE(lt.run(1.0f, 0.0f) == CUBLAS_STATUS_SUCCESS);
  std::vector<double> sums(kM, 0.0), sum_tols(kM, 0.0);
  check_d(lt, d, 1.0f, 0.0f, [&](Expected e, int64_t, int64_t i, int64_t j) {
    // x·GELU'(aux): x's error carried by |GELU'| ≤ 1.13, GELU'(aux)'s own evaluation, one rounding of ×.
    const double g = gelu_grad(aux.at(0, i, j));
    const Expected out{e.value * g, 1.2 * e.tol + std::fabs(e.value) * gelu_eval_bound(aux.at(0, i, j)) +
                                        blas_test::gamma_bound(1, std::fabs(e.value * g))};
    sums[i] += out.value;  // a float sum of kN such terms: their errors plus γ_kN of their magnitude
    sum_tols[i] += out.tol + blas_test::gamma_bound(kN, std::fabs(out.value));
    return out;
  });
  for (int64_t i = 0; i < kM; ++i) check_near(bias.at(0, i, 0), sums[i], sum_tols[i], CUDA_R_32F);
}

TEST_CASE("emulated cublasLtMatmul: BGRADA writes Σ_k op(A)(i, k), BGRADB Σ_k op(B)(k, j); alpha ≠ 1 refused") {
  for (const bool t : {false, true}) {
    INFO("transposed=", t);
    const Matrix a = make_a(CUDA_R_32F, t), b = make_b(CUDA_R_32F, !t), c = make_c(CUDA_R_32F);
    for (const cublasLtEpilogue_t ep : {CUBLASLT_EPILOGUE_BGRADA, CUBLASLT_EPILOGUE_BGRADB}) {
      const bool of_a = ep == CUBLASLT_EPILOGUE_BGRADA;
      Matrix d(CUDA_R_32F, kM, kN, kM + 1), bias(CUDA_R_32F, of_a ? kM : kN, 1, 8);
      Lt lt(a, t, b, !t, c, d, ep);
      lt.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data());
      CHECK(lt.run(1.5f, 1.0f) == CUBLAS_STATUS_NOT_SUPPORTED);  // alpha ≠ 1: NVIDIA leaves the vector's scale open
      for (int64_t i = 0; i < d.ld * d.cols; ++i) CHECK(std::isnan(d.raw(i)));  // refused: D untouched
      for (int64_t v = 0; v < 8; ++v) CHECK(std::isnan(bias.at(0, v, 0)));     // and the vector too
      REQUIRE(lt.run(1.0f, 1.0f) == CUBLAS_STATUS_SUCCESS);
      check_d(lt, d, 1.0f, 1.0f, plain);
      for (int64_t v = 0; v < (of_a ? kM : kN); ++v) {
        double want = 0, mag = 0;
        for (int64_t l = 0; l < kK; ++l) {
          const double x = of_a ? blas_test::op_at(a, t, 0, v, l) : blas_test::op_at(b, !t, 0, l, v);
          want += x;
          mag += std::fabs(x);
        }
        check_near(bias.at(0, v, 0), want, blas_test::gamma_bound(kK, mag), CUDA_R_32F);
      }
      for (int64_t v = of_a ? kM : kN; v < 8; ++v) CHECK(std::isnan(bias.at(0, v, 0)));
    }
  }
}

TEST_CASE("emulated cublasLtMatmul: fp16 / bf16 operands into fp32 or their type, bias of D's type") {
  for (const cudaDataType_t ab : {CUDA_R_16F, CUDA_R_16BF})
    for (const cudaDataType_t dt : {CUDA_R_32F, ab}) {
      INFO("ab=", static_cast<int>(ab), " d=", static_cast<int>(dt));
      const Matrix a = make_a(ab, true), b = make_b(ab, false), c = make_c(dt);
      Matrix d(dt, kM, kN, kM + 1), bias(dt, kM, 1, kM);
      bias.fill_pattern(7);
      Lt lt(a, true, b, false, c, d, CUBLASLT_EPILOGUE_BIAS);
      lt.set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, bias.data());
      lt.set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, static_cast<int32_t>(dt));
      REQUIRE(lt.run(1.0f, 1.0f) == CUBLAS_STATUS_SUCCESS);
      check_d(lt, d, 1.0f, 1.0f, [&](Expected e, int64_t, int64_t i, int64_t) {
        return plus_bias(e, bias.at(0, i, 0));
      });
    }
}
