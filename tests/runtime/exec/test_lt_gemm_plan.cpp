// tests/runtime/exec/test_lt_gemm_plan.cpp — the cuBLASLt matmul plans of the CUDA backend's GEMMs
// (runtime/exec/cuda/lt_gemm_plan.hpp, no CUDA types) checked on the CPU: a plan is run through a
// column-major interpreter (lt_gemm_interpreter.hpp) of cuBLASLt's documented semantics (layouts as cublasLtMatrixLayoutCreate takes
// them, transa/transb, the BIAS / BGRADA / BGRADB epilogues, cublasLt.h) and must give cpu::gemm_forward's C
// (bias included) and cpu::bias_grad's dbias; which bias_grad layouts can ride on a GEMM; the environment
// switches (PTSIM_CUDA_GEMM_EPILOGUES, PTSIM_CUDA_NATIVE_16BIT). Everything in double on the same inputs: only the summation order differs (k ≤ 9 terms), so the
// tolerance is 1e-13 relative (≈ 9·2^-53 ≈ 1e-15 times a margin of 100).
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "core/error.hpp"
#include "runtime/exec/cpu_backend.hpp"
#include "runtime/exec/cuda/lt_gemm_plan.hpp"
#include "runtime/exec/cuda/native_16bit_switch.hpp"
#include "tests/runtime/exec/gradcheck.hpp"
#include "tests/runtime/exec/lt_gemm_interpreter.hpp"

using namespace ptsim::runtime;
using ptsim::test::randn;

namespace {

using ptsim::test::LtResult;
using ptsim::test::gemm_attrs;
using ptsim::test::run_lt;

void check_close(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i)
    CHECK_MESSAGE(got[i] == doctest::Approx(want[i]).epsilon(1e-13), what << " element " << i);
}

}  // namespace

TEST_CASE("cuBLASLt plan with the bias epilogue equals cpu::gemm_forward with its bias, every transpose") {
  for (int t = 0; t < 4; ++t) {
    ptsim::models::GemmAttrs a = gemm_attrs(7, 4, 5, (t & 1) != 0, (t & 2) != 0);
    a.alpha = 0.5;
    a.has_bias = true;
    for (bool accumulate : {false, true}) {
      a.accumulate = accumulate;
      const std::vector<double> A = randn(35, 61 + t), B = randn(20, 71 + t), C0 = randn(28, 81), bias = randn(4, 91);
      std::vector<double> want = C0;
      cpu::gemm_forward<double>(want.data(), A.data(), B.data(), bias.data(), a);
      const cuda::LtGemmPlan p = cuda::lt_gemm_plan(a, cuda::LtEpilogue::bias);
      CHECK(p.epilogue_vector == a.n);
      // Lt's A is the graph's B and Lt's B the graph's A (gemm_layout.hpp).
      const LtResult got = run_lt(p, a.alpha, B, A, accumulate ? 1.0 : 0.0, C0, bias);
      check_close(got.d, want, "bias epilogue");
    }
  }
}

TEST_CASE("cuBLASLt bias-gradient epilogues give cpu::bias_grad of dy where bias_grad_epilogue allows them") {
  // The weight-gradient GEMM of a linear layer: dW (out=6, in=3) += dYᵀ (dY stored (tokens=9, out)) · X (9, 3).
  const int64_t tokens = 9, out = 6, in = 3;
  ptsim::models::GemmAttrs w = gemm_attrs(out, in, tokens, true, false);
  w.accumulate = true;
  const std::vector<double> dY = randn(static_cast<size_t>(tokens * out), 101), X = randn(tokens * in, 102);
  const std::vector<double> dW0 = randn(out * in, 103), dbias0 = randn(out, 104);
  {
    const auto e = cuda::bias_grad_epilogue(w, cuda::GemmOperand::a, tokens, out);
    REQUIRE(e.has_value());
    CHECK(*e == cuda::LtEpilogue::bias_grad_b);
    const cuda::LtGemmPlan p = cuda::lt_gemm_plan(w, *e);
    const LtResult got = run_lt(p, 1.0, X, dY, 1.0, dW0, {});
    std::vector<double> want_dw = dW0, want_db = dbias0, got_db = dbias0;
    cpu::gemm_forward<double>(want_dw.data(), dY.data(), X.data(), nullptr, w);
    cpu::bias_grad<double>(want_db.data(), dY.data(), tokens, out);
    check_close(got.d, want_dw, "dW");
    REQUIRE(got.vector.size() == static_cast<size_t>(out));
    for (int64_t j = 0; j < out; ++j) got_db[static_cast<size_t>(j)] += got.vector[static_cast<size_t>(j)];
    check_close(got_db, want_db, "dbias (BGRADB)");
  }
  {
    // The mirror layout: dy as the graph's B stored (k, n) — Xᵀ (in, tokens) · dY (tokens, out).
    const ptsim::models::GemmAttrs m = gemm_attrs(in, out, tokens, true, false);
    const auto e = cuda::bias_grad_epilogue(m, cuda::GemmOperand::b, tokens, out);
    REQUIRE(e.has_value());
    CHECK(*e == cuda::LtEpilogue::bias_grad_a);
    const cuda::LtGemmPlan p = cuda::lt_gemm_plan(m, *e);
    const std::vector<double> C0(static_cast<size_t>(in * out), 0.0);
    const LtResult got = run_lt(p, 1.0, dY, X, 0.0, C0, {});
    std::vector<double> want_c = C0, want_db(static_cast<size_t>(out), 0.0);
    cpu::gemm_forward<double>(want_c.data(), X.data(), dY.data(), nullptr, m);
    cpu::bias_grad<double>(want_db.data(), dY.data(), tokens, out);
    check_close(got.d, want_c, "C");
    check_close(got.vector, want_db, "dbias (BGRADA)");
  }
}

TEST_CASE("bias_grad_epilogue refuses layouts whose reduction is not dy's rows, and GEMMs it cannot fuse") {
  const int64_t tokens = 9, out = 6, in = 3;
  // The input-gradient GEMM dX (tokens, in) = dY (tokens, out) · W (out, in): its k is `out`, not the tokens.
  CHECK_FALSE(cuda::bias_grad_epilogue(gemm_attrs(tokens, in, out, false, false), cuda::GemmOperand::a, tokens, out));
  // dy as A but not transposed, or as B but transposed: the sum would run over the wrong index.
  CHECK_FALSE(cuda::bias_grad_epilogue(gemm_attrs(out, in, tokens, false, false), cuda::GemmOperand::a, tokens, out));
  CHECK_FALSE(cuda::bias_grad_epilogue(gemm_attrs(in, out, tokens, false, true), cuda::GemmOperand::b, tokens, out));
  // Shapes that do not match dy (M, N).
  CHECK_FALSE(cuda::bias_grad_epilogue(gemm_attrs(out, in, tokens, true, false), cuda::GemmOperand::a, tokens + 1, out));
  CHECK_FALSE(cuda::bias_grad_epilogue(gemm_attrs(out, in, tokens, true, false), cuda::GemmOperand::a, tokens, out + 1));
  ptsim::models::GemmAttrs batched = gemm_attrs(out, in, tokens, true, false);
  batched.batch = 2;
  CHECK_FALSE(cuda::bias_grad_epilogue(batched, cuda::GemmOperand::a, tokens, out));
  ptsim::models::GemmAttrs with_bias = gemm_attrs(out, in, tokens, true, false);
  with_bias.has_bias = true;
  CHECK_FALSE(cuda::bias_grad_epilogue(with_bias, cuda::GemmOperand::a, tokens, out));
  // a scaled GEMM: whether alpha scales the BGRAD vector is not documented
  ptsim::models::GemmAttrs scaled = gemm_attrs(out, in, tokens, true, false);
  scaled.alpha = 0.5;
  CHECK_FALSE(cuda::bias_grad_epilogue(scaled, cuda::GemmOperand::a, tokens, out));
  CHECK(cuda::bias_grad_epilogue(gemm_attrs(out, in, tokens, true, false), cuda::GemmOperand::a, tokens, out));
}

TEST_CASE("PTSIM_CUDA_GEMM_EPILOGUES: unset or 1 enables, 0 disables, anything else is an InputError") {
  CHECK(cuda::gemm_epilogues_enabled(nullptr));
  CHECK(cuda::gemm_epilogues_enabled("1"));
  CHECK_FALSE(cuda::gemm_epilogues_enabled("0"));
  CHECK_THROWS_WITH_AS(cuda::gemm_epilogues_enabled("yes"), doctest::Contains("expected 0"), ptsim::core::InputError);
  CHECK_THROWS_AS(cuda::gemm_epilogues_enabled(""), ptsim::core::InputError);
}

// The other CUDA environment switch, parsed the same way (native_16bit_switch.hpp).
TEST_CASE("PTSIM_CUDA_NATIVE_16BIT: unset or 1 enables, 0 forces the boundary, anything else is an InputError") {
  CHECK(cuda::native_16bit_kernels_enabled(nullptr));
  CHECK(cuda::native_16bit_kernels_enabled("1"));
  CHECK_FALSE(cuda::native_16bit_kernels_enabled("0"));
  CHECK_THROWS_WITH_AS(cuda::native_16bit_kernels_enabled("on"), doctest::Contains("expected 0"),
                       ptsim::core::InputError);
  CHECK_THROWS_AS(cuda::native_16bit_kernels_enabled(""), ptsim::core::InputError);
}
