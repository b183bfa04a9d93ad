// tests/runtime/exec/test_op_math.cpp — the shared per-element maths (runtime/exec/math/*.hpp, PTSIM_HD:
// what the CUDA kernels run) tested on the CPU:
//  * where the CPU backend evaluates the same formula its own way (Eigen's vectorised GELU, the
//    cross-entropy backward), the scalar functions must agree with the CPU kernels to a few float ulp;
//  * the index maps and mask rules must reproduce the CPU kernels exactly;
//  * the GELU derivatives must match central differences of the GELU functions (in double);
//  * the CUDA GEMM's row-major → column-major cuBLAS argument mapping (gemm_layout.hpp), run through a
//    column-major reference GEMM with BLAS's semantics, must give cpu::gemm_forward's results;
//  * the factory: a build with the CUDA backend but no GPU refuses --backend cuda with an InputError.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/cpu_backend.hpp"
#include "runtime/exec/cuda/gemm_layout.hpp"  // no CUDA types: the cuBLAS argument mapping
#include "runtime/exec/math/activation_math.hpp"
#include "runtime/exec/math/norm_math.hpp"
#include "tests/runtime/exec/gradcheck.hpp"
#ifdef PTSIM_HAVE_CUDA
#include "runtime/exec/cuda/cuda_backend.hpp"  // defines: cuda_device_count
#endif

using namespace ptsim::runtime;
using ptsim::test::randn;

namespace {
// |a − b| in units of the float spacing at max(|a|, |b|, tiny).
double ulps(float a, float b) {
  const float m = std::max({std::abs(a), std::abs(b), std::numeric_limits<float>::min()});
  return std::abs(static_cast<double>(a) - b) / (std::nextafter(m, INFINITY) - m);
}
// The float spacing (ulp) at |v|.
double spacing(float v) {
  const float m = std::max(std::abs(v), std::numeric_limits<float>::min());
  return std::nextafter(m, INFINITY) - m;
}
std::vector<float> floats(const std::vector<double>& v) { return {v.begin(), v.end()}; }
}  // namespace

TEST_CASE("op maths: the scalar GELU the CUDA kernels run matches the CPU's vectorised GELU") {
  // Both are float evaluations of one formula. Allowed: 8 ulp of the result (erf/tanh/exp implementations
  // differ by a few ulp: Eigen's float polynomials vs glibc), plus an absolute term for the cancellation in
  // 1 + erf(x/√2), 1 + tanh(u) and 1 − tanh²(u) at large |x|, where the result is known only to the absolute
  // error of erf/tanh near ±1: Eigen's float tanh is within ~4u = 2^-22 there and clamps to ±1 beyond
  // |u| ≈ 7.9 (observed ≤ 3u here). Forward: ½|x|·that, bounded by |x|·2^-21; backward: the x·(1 − t²)·du
  // term multiplies it by |x|·du, du = 1 + 3·0.044715·x² (the erf form's x·φ(x) term is smaller).
  const std::vector<float> x = floats(randn(4001, 11, 2.5));
  const int64_t n = static_cast<int64_t>(x.size());
  for (bool tanh_form : {false, true}) {
    std::vector<float> y(x.size()), dx(x.size()), ones(x.size(), 1.0f);
    cpu::gelu_forward<float>(y.data(), x.data(), n, tanh_form);
    cpu::gelu_backward<float>(dx.data(), ones.data(), x.data(), n, tanh_form);
    int bad_y = 0, bad_dx = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const float sy = math::gelu_value(x[i], tanh_form), sdx = math::gelu_grad(x[i], tanh_form);
      const double cancel = std::abs(x[i]) * 0x1p-21;
      const double cancel_dx = 0x1p-21 * (1 + std::abs(x[i]) * (1 + 3 * math::kGeluCubic * x[i] * x[i]));
      if (std::abs(sy - y[i]) > 8 * spacing(y[i]) + cancel) {
        ++bad_y;
        MESSAGE("forward x=" << x[i] << " scalar " << sy << " cpu " << y[i]);
      }
      if (std::abs(sdx - dx[i]) > 8 * spacing(dx[i]) + cancel_dx) {
        ++bad_dx;
        MESSAGE("backward x=" << x[i] << " scalar " << sdx << " cpu " << dx[i]);
      }
    }
    CHECK_MESSAGE(bad_y == 0, "tanh_form=" << tanh_form << ": " << bad_y << " forward values differ");
    CHECK_MESSAGE(bad_dx == 0, "tanh_form=" << tanh_form << ": " << bad_dx << " backward values differ");
  }
}

TEST_CASE("op maths: GELU derivatives equal central differences of the GELU functions (double)") {
  // h = 1e-5: truncation error ~h²·|f'''| ≈ 1e-10, rounding ~1e-16/h ≈ 1e-11; tolerance 1e-8.
  for (double x : {-4.0, -1.3, -0.2, 0.0, 0.4, 1.7, 3.9}) {
    const double h = 1e-5;
    CHECK(math::gelu_erf_grad(x) ==
          doctest::Approx((math::gelu_erf(x + h) - math::gelu_erf(x - h)) / (2 * h)).epsilon(1e-8));
    CHECK(math::gelu_tanh_grad(x) ==
          doctest::Approx((math::gelu_tanh(x + h) - math::gelu_tanh(x - h)) / (2 * h)).epsilon(1e-8));
  }
  // Known values: GELU(1) = Φ(1) = 0.841344746068543 (erf form; standard normal table), GELU(0) = 0.
  CHECK(math::gelu_erf(1.0) == doctest::Approx(0.841344746068543).epsilon(1e-14));
  CHECK(math::gelu_tanh(0.0) == 0.0);
}

TEST_CASE("op maths: the heads index map reproduces the CPU's split_heads and merge_heads exactly") {
  const int64_t B = 2, S = 7, nh = 3, d = 5, n = B * S * nh * d;
  std::vector<double> x(static_cast<size_t>(n)), y(x.size()), back(x.size());
  for (int64_t i = 0; i < n; ++i) x[static_cast<size_t>(i)] = static_cast<double>(i);
  cpu::split_heads<double>(y.data(), x.data(), B, S, nh, d);
  for (int64_t i = 0; i < n; ++i)
    REQUIRE(y[static_cast<size_t>(i)] == x[static_cast<size_t>(math::heads_x_index(i, S, nh, d))]);
  cpu::merge_heads<double>(back.data(), y.data(), B, S, nh, d);
  CHECK(back == x);
}

TEST_CASE("op maths: the cross-entropy gradient formula matches the CPU backward bit for bit") {
  const int64_t P = 5, C = 11, valid = 9;
  const std::vector<float> logits = floats(randn(P * C, 21, 2.0));
  const std::vector<int32_t> labels = {3, -1, 0, 8, -1};
  std::vector<float> loss(1), lse(P), dlogits(P * C);
  cpu::cross_entropy_forward<float>(loss.data(), lse.data(), logits.data(), labels.data(), P, C, valid);
  const float dloss = 0.75f;
  cpu::cross_entropy_backward<float>(dlogits.data(), &dloss, logits.data(), labels.data(), lse.data(), P, C, valid);
  const float scale = static_cast<float>(0.75 / 3.0);  // 3 labelled rows
  for (int64_t p = 0; p < P; ++p)
    for (int64_t c = 0; c < C; ++c) {
      const size_t i = static_cast<size_t>(p * C + c);
      const bool live = labels[static_cast<size_t>(p)] >= 0 && c < math::effective_classes(C, valid);
      const float want = live ? math::cross_entropy_dlogit(logits[i], lse[static_cast<size_t>(p)], scale,
                                                           c == labels[static_cast<size_t>(p)])
                              : 0.0f;
      // Eigen's vectorised expf and glibc's differ by ≤ 1 ulp; the formula is otherwise the same operations.
      CHECK(ulps(want, dlogits[i]) <= 2);
    }
}

TEST_CASE("op maths: softmax mask rules (causal limit, padding row) are the CPU's") {
  const int32_t keep[] = {1, 1, 0, 1, 0, 0};  // batch 0: keys 0,1 kept, 2 padded; batch 1: key 0 only
  // rows of (B=2 · heads=2, S=3, S=3): row 7 is batch 1 (7 / (2·3)), query 7 % 3 = 1.
  CHECK(math::softmax_keep_row(keep, 7, 2, 3) == keep + 3);
  CHECK(math::softmax_keep_row(keep, 5, 2, 3) == keep);
  CHECK(math::softmax_key_limit(7, 3, 3, true) == 2);
  CHECK(math::softmax_key_limit(7, 3, 3, false) == 3);
  CHECK(math::softmax_key_allowed(0, 2, keep + 3));
  CHECK_FALSE(math::softmax_key_allowed(1, 2, keep + 3));  // padding
  CHECK_FALSE(math::softmax_key_allowed(2, 2, nullptr));   // past the causal limit
  CHECK(math::dropout_scale<float>(1.0) == 0.0f);
  CHECK(math::dropout_apply(3.0f, true, 2.0f) == 6.0f);
  CHECK(math::dropout_apply(3.0f, false, 2.0f) == 0.0f);
}

namespace {
// BLAS's column-major C = alpha·op(X)·op(Y) + beta·C (the sgemm reference semantics: element (i, j) of a
// column-major matrix with leading dimension ld is at i + j·ld), in double.
void column_major_reference(bool trans_x, bool trans_y, int64_t m, int64_t n, int64_t k, double alpha,
                            const double* X, int64_t ldx, const double* Y, int64_t ldy, double beta, double* C,
                            int64_t ldc) {
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double x = trans_x ? X[p + i * ldx] : X[i + p * ldx];
        const double y = trans_y ? Y[j + p * ldy] : Y[p + j * ldy];
        s += x * y;
      }
      C[i + j * ldc] = alpha * s + beta * C[i + j * ldc];
    }
}
}  // namespace

TEST_CASE("CUDA GEMM layout: the column-major call it makes equals cpu::gemm_forward for every transpose") {
  // Both sides in double on the same inputs: only the summation order can differ (k = 5 terms),
  // tolerance 1e-13 relative.
  for (int t = 0; t < 4; ++t) {
    ptsim::models::GemmAttrs a;
    a.m = 7;
    a.n = 4;
    a.k = 5;
    a.trans_a = (t & 1) != 0;
    a.trans_b = (t & 2) != 0;
    a.alpha = 0.5;
    a.accumulate = true;
    const std::vector<double> A = randn(a.m * a.k, 31 + t), B = randn(a.k * a.n, 41 + t), C0 = randn(a.m * a.n, 51);
    std::vector<double> want = C0, got = C0;
    cpu::gemm_forward<double>(want.data(), A.data(), B.data(), nullptr, a);
    const cuda::ColumnMajorGemm c = cuda::column_major_gemm(a);
    column_major_reference(c.trans_first, c.trans_second, c.rows, c.cols, c.inner, a.alpha, B.data(), c.ld_first,
                           A.data(), c.ld_second, 1.0, got.data(), c.ld_out);
    for (size_t i = 0; i < want.size(); ++i)
      CHECK_MESSAGE(got[i] == doctest::Approx(want[i]).epsilon(1e-13), "trans_a=" << a.trans_a << " trans_b="
                                                                                 << a.trans_b << " element " << i);
    CHECK(c.stride_first == a.k * a.n);
    CHECK(c.stride_second == a.m * a.k);
    CHECK(c.stride_out == a.m * a.n);
  }
}

TEST_CASE("gemm_layout: cuBLAS's int arguments are range-checked, not wrapped") {
  // cublasGemmEx takes m, n, k and the leading dimensions as int: the MLM head of BERT-large at seq 128 ×
  // batch 256 (m = 32,768 rows, n = 30,522 classes, k = 1,024) fits; a dimension of 2^31 would wrap to a
  // negative int (another GEMM, or a cuBLAS error naming no cause) and must be refused with its name.
  ptsim::models::GemmAttrs a;
  a.m = 32768;
  a.n = 30522;
  a.k = 1024;
  const cuda::BlasDims d = cuda::blas_dims(cuda::column_major_gemm(a));
  CHECK(d.rows == 30522);  // BLAS m is the graph's n (gemm_layout.hpp)
  CHECK(d.cols == 32768);
  CHECK(d.inner == 1024);
  CHECK(d.ld_out == 30522);
  a.m = int64_t{1} << 31;
  CHECK_THROWS_WITH_AS(cuda::blas_dims(cuda::column_major_gemm(a)),
                       doctest::Contains("n (the output's rows) 2147483648 is outside the 32-bit int"),
                       std::invalid_argument);
  CHECK(cuda::blas_int(std::numeric_limits<int>::max(), "k") == std::numeric_limits<int>::max());
  CHECK_THROWS_AS(cuda::blas_int(-1, "k"), std::invalid_argument);
}

TEST_CASE("backend factory: cuda without a GPU (or without the CUDA backend) is an InputError naming why") {
#ifdef PTSIM_HAVE_CUDA
  CHECK(backend_available(BackendKind::cuda));
  CHECK_THROWS_WITH_AS(make_backend(BackendKind::cuda, ComputeType::f64, 1),
                       doctest::Contains("f32 only"), ptsim::core::InputError);
  if (cuda_device_count() == 0) {
    CHECK_THROWS_WITH_AS(make_backend(BackendKind::cuda, ComputeType::f32, 1),
                         doctest::Contains("no CUDA device was found"), ptsim::core::InputError);
  } else {
    CHECK(std::string(make_backend(BackendKind::cuda, ComputeType::f32, 1)->name()) == "cuda-f32");
  }
#else
  CHECK_FALSE(backend_available(BackendKind::cuda));
  CHECK_THROWS_WITH_AS(make_backend(BackendKind::cuda, ComputeType::f32, 1),
                       doctest::Contains("built without the cuda backend"), ptsim::core::InputError);
#endif
}
