// tests/runtime/exec/test_cpu_kernels.cpp — every CPU kernel on its own, in fp64:
//  * forward values against numbers computed by hand (cited in each test),
//  * backward against central finite differences of L = Σ w ⊙ y(x) with random w (so dy = w),
//    tolerance from gradcheck.hpp (1e-6 relative + 1e-8 absolute, h = 1e-5),
//  * the gemm rules autodiff.cpp emits (dA, dB for all four transpose combinations) the same way.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "runtime/exec/cpu_backend.hpp"
#include "tests/runtime/exec/gradcheck.hpp"

using namespace ptsim::runtime;
using ptsim::models::GemmAttrs;
using ptsim::test::dot;
using ptsim::test::fd_check;
using ptsim::test::randn;
using ptsim::test::Vec;

TEST_CASE("embedding: gather rows by id; backward scatter-adds repeated ids into the gradient") {
  const int64_t V = 7, H = 3;
  Vec table = randn(V * H, 1);
  const std::vector<int32_t> ids = {2, 5, 2, 0, 6};  // id 2 twice: its gradient row is the sum of both
  const int64_t M = static_cast<int64_t>(ids.size());
  Vec w = randn(M * H, 2);
  Vec y(M * H);
  cpu::embedding_forward<double>(y.data(), table.data(), ids.data(), M, H, V);
  CHECK(y[1 * H + 2] == table[5 * H + 2]);
  auto loss = [&] {
    cpu::embedding_forward<double>(y.data(), table.data(), ids.data(), M, H, V);
    return dot(w, y);
  };
  Vec dtable(V * H, 0.0);
  cpu::embedding_backward<double>(dtable.data(), w.data(), ids.data(), M, H, V);
  fd_check(table, loss, dtable, "dtable");
  CHECK(dtable[2 * H] == doctest::Approx(w[0 * H] + w[2 * H]).epsilon(1e-15));
  // Accumulation: a second backward adds on top (parameter gradients are +=).
  cpu::embedding_backward<double>(dtable.data(), w.data(), ids.data(), M, H, V);
  CHECK(dtable[5 * H + 1] == doctest::Approx(2 * w[1 * H + 1]).epsilon(1e-15));
  const std::vector<int32_t> bad = {7};
  CHECK_THROWS_AS(cpu::embedding_forward<double>(y.data(), table.data(), bad.data(), 1, H, V), ptsim::core::InputError);
}

TEST_CASE("gather_rows: backward zeroes the fresh gradient, then sums repeated rows") {
  const int64_t M = 6, N = 4;
  const std::vector<int32_t> index = {1, 3, 1, 5};
  const int64_t P = static_cast<int64_t>(index.size());
  Vec x = randn(M * N, 3), w = randn(P * N, 4), y(P * N);
  auto loss = [&] {
    cpu::gather_rows_forward<double>(y.data(), x.data(), index.data(), P, M, N);
    return dot(w, y);
  };
  Vec dx(M * N, std::numeric_limits<double>::quiet_NaN());  // garbage left by an earlier tensor in the arena
  cpu::gather_rows_backward<double>(dx.data(), w.data(), index.data(), P, M, N);
  fd_check(x, loss, dx, "dx");
  CHECK(dx[0] == 0.0);  // row 0 is never gathered
  CHECK(dx[1 * N] == doctest::Approx(w[0] + w[2 * N]).epsilon(1e-15));
}

namespace {

// C = alpha·op(A)·op(B) by the definition, for comparison with Eigen.
Vec naive_gemm(const GemmAttrs& a, const Vec& A, const Vec& B) {
  Vec C(a.m * a.n, 0.0);
  for (int64_t i = 0; i < a.m; ++i)
    for (int64_t j = 0; j < a.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < a.k; ++p) {
        const double av = a.trans_a ? A[p * a.m + i] : A[i * a.k + p];
        const double bv = a.trans_b ? B[j * a.k + p] : B[p * a.n + j];
        s += av * bv;
      }
      C[i * a.n + j] = a.alpha * s;
    }
  return C;
}

// The backward GEMMs exactly as models/autodiff.cpp (gemm_operand_grad) builds them.
void gemm_backward_rules(const GemmAttrs& f, const double* A, const double* B, const double* dC, double* dA,
                         double* dB) {
  GemmAttrs a;
  a.batch = f.batch;
  a.alpha = f.alpha;
  if (!f.trans_a) {  // dA [m,k] = dC [m,n] · op(B)^T
    a.m = f.m, a.n = f.k, a.k = f.n;
    a.trans_b = !f.trans_b;
    cpu::batched_gemm_forward<double>(dA, dC, B, a);
  } else {  // dA stored [k,m] = op(B) · dC^T
    a.m = f.k, a.n = f.m, a.k = f.n;
    a.trans_a = f.trans_b;
    a.trans_b = true;
    cpu::batched_gemm_forward<double>(dA, B, dC, a);
  }
  GemmAttrs b;
  b.batch = f.batch;
  b.alpha = f.alpha;
  if (!f.trans_b) {  // dB [k,n] = op(A)^T · dC
    b.m = f.k, b.n = f.n, b.k = f.m;
    b.trans_a = !f.trans_a;
    cpu::batched_gemm_forward<double>(dB, A, dC, b);
  } else {  // dB stored [n,k] = dC^T · op(A)
    b.m = f.n, b.n = f.k, b.k = f.m;
    b.trans_a = true;
    b.trans_b = f.trans_a;
    cpu::batched_gemm_forward<double>(dB, dC, A, b);
  }
}

}  // namespace

TEST_CASE("gemm: all transpose combinations, alpha, bias, accumulate; autodiff's backward rules") {
  for (int combo = 0; combo < 4; ++combo) {
    GemmAttrs a;
    a.m = 3, a.n = 4, a.k = 5;
    a.trans_a = combo & 1;
    a.trans_b = combo & 2;
    a.alpha = 0.7;
    a.has_bias = true;
    CAPTURE(a.trans_a);
    CAPTURE(a.trans_b);
    Vec A = randn(a.m * a.k, 10 + combo), B = randn(a.k * a.n, 20 + combo), bias = randn(a.n, 30 + combo);
    Vec C(a.m * a.n), w = randn(a.m * a.n, 40 + combo);
    cpu::gemm_forward<double>(C.data(), A.data(), B.data(), bias.data(), a);
    Vec want = naive_gemm(a, A, B);
    for (int64_t i = 0; i < a.m * a.n; ++i) CHECK(C[i] == doctest::Approx(want[i] + bias[i % a.n]).epsilon(1e-14));
    // accumulate: C += alpha·op(A)·op(B) (+ bias)
    GemmAttrs acc = a;
    acc.accumulate = true;
    acc.has_bias = false;
    Vec C2 = C;
    cpu::gemm_forward<double>(C2.data(), A.data(), B.data(), nullptr, acc);
    for (int64_t i = 0; i < a.m * a.n; ++i) CHECK(C2[i] == doctest::Approx(C[i] + want[i]).epsilon(1e-14));

    auto loss = [&] {
      cpu::gemm_forward<double>(C.data(), A.data(), B.data(), bias.data(), a);
      return dot(w, C);
    };
    Vec dA(A.size()), dB(B.size()), dbias(a.n, 0.0);
    gemm_backward_rules(a, A.data(), B.data(), w.data(), dA.data(), dB.data());
    cpu::bias_grad<double>(dbias.data(), w.data(), a.m, a.n);
    fd_check(A, loss, dA, "dA");
    fd_check(B, loss, dB, "dB");
    fd_check(bias, loss, dbias, "dbias");
  }
}

TEST_CASE("batched_gemm: per-batch products (attention scores and context); autodiff's backward rules") {
  for (int combo = 0; combo < 4; ++combo) {
    GemmAttrs a;
    a.batch = 3;
    a.m = 4, a.n = 2, a.k = 3;
    a.trans_a = combo & 1;
    a.trans_b = combo & 2;
    a.alpha = 1.0 / std::sqrt(3.0);
    CAPTURE(combo);
    Vec A = randn(a.batch * a.m * a.k, 50 + combo), B = randn(a.batch * a.k * a.n, 60 + combo);
    Vec C(a.batch * a.m * a.n), w = randn(C.size(), 70 + combo);
    cpu::batched_gemm_forward<double>(C.data(), A.data(), B.data(), a);
    GemmAttrs one = a;
    one.batch = 1;
    for (int64_t b = 0; b < a.batch; ++b) {
      Vec Ab(A.begin() + b * a.m * a.k, A.begin() + (b + 1) * a.m * a.k);
      Vec Bb(B.begin() + b * a.k * a.n, B.begin() + (b + 1) * a.k * a.n);
      Vec want = naive_gemm(one, Ab, Bb);
      for (int64_t i = 0; i < a.m * a.n; ++i) CHECK(C[b * a.m * a.n + i] == doctest::Approx(want[i]).epsilon(1e-14));
    }
    auto loss = [&] {
      cpu::batched_gemm_forward<double>(C.data(), A.data(), B.data(), a);
      return dot(w, C);
    };
    Vec dA(A.size()), dB(B.size());
    gemm_backward_rules(a, A.data(), B.data(), w.data(), dA.data(), dB.data());
    fd_check(A, loss, dA, "dA");
    fd_check(B, loss, dB, "dB");
  }
}

TEST_CASE("add: elementwise sum of any number of inputs") {
  Vec a = {1, 2, 3}, b = {10, 20, 30}, c = {100, 200, 300}, y(3);
  std::vector<const double*> xs = {a.data(), b.data(), c.data()};
  cpu::add_forward<double>(y.data(), xs, 3);
  CHECK(y == Vec{111, 222, 333});
}

TEST_CASE("layernorm: [1,2,3] by hand; backward for x, gamma, beta by finite differences") {
  // mean 2, biased variance 2/3, rstd = 1/sqrt(2/3 + 1e-5): y = (x − 2)·rstd = [−1.2247357, 0, 1.2247357]
  // (sqrt(3/2) = 1.2247449 shrunk by the epsilon: 1/sqrt(2/3 + 1e-5) = 1.2247357).
  {
    Vec x = {1, 2, 3}, gamma = {1, 1, 1}, beta = {0, 0, 0}, y(3), mean(1), rstd(1);
    cpu::layernorm_forward<double>(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(), 1, 3, 1e-5);
    CHECK(mean[0] == doctest::Approx(2.0).epsilon(1e-15));
    CHECK(rstd[0] == doctest::Approx(1.0 / std::sqrt(2.0 / 3.0 + 1e-5)).epsilon(1e-15));
    CHECK(y[0] == doctest::Approx(-1.2247357).epsilon(1e-7));
    CHECK(y[1] == doctest::Approx(0.0));
    CHECK(y[2] == doctest::Approx(1.2247357).epsilon(1e-7));
  }
  const int64_t M = 3, N = 5;
  Vec x = randn(M * N, 80), gamma = randn(N, 81, 0.5, 1.0), beta = randn(N, 82), w = randn(M * N, 83);
  Vec y(M * N), mean(M), rstd(M);
  auto loss = [&] {
    cpu::layernorm_forward<double>(y.data(), mean.data(), rstd.data(), x.data(), gamma.data(), beta.data(), M, N, 1e-5);
    return dot(w, y);
  };
  loss();
  Vec dx(M * N), dgamma(N, 0.0), dbeta(N, 0.0);
  cpu::layernorm_backward<double>(dx.data(), dgamma.data(), dbeta.data(), w.data(), x.data(), gamma.data(),
                                  mean.data(), rstd.data(), M, N);
  fd_check(x, loss, dx, "dx");
  fd_check(gamma, loss, dgamma, "dgamma");
  fd_check(beta, loss, dbeta, "dbeta");
}

TEST_CASE("softmax: padding mask by hand; masked keys get 0; fully masked rows are 0; backward") {
  // One row [1, 2, 3, 9] with the last key padded: exp([-2, -1, 0]) / (e^-2 + e^-1 + 1)
  // = [0.09003057, 0.24472847, 0.66524096, 0] (the 9 must not count).
  {
    Vec s = {1, 2, 3, 9}, p(4);
    const std::vector<int32_t> keep = {1, 1, 1, 0};
    cpu::SoftmaxMask mask{keep.data(), 1, 4, false};
    cpu::softmax_forward<double>(p.data(), s.data(), 1, 4, mask);
    CHECK(p[0] == doctest::Approx(0.09003057).epsilon(1e-7));
    CHECK(p[1] == doctest::Approx(0.24472847).epsilon(1e-7));
    CHECK(p[2] == doctest::Approx(0.66524096).epsilon(1e-7));
    CHECK(p[3] == 0.0);
  }
  const int64_t B = 2, nh = 2, S = 4, rows = B * nh * S;
  // batch 0: last key padded; batch 1: every key padded (rows must come out all zero, gradient zero).
  const std::vector<int32_t> keep = {1, 1, 1, 0, 0, 0, 0, 0};
  for (int variant = 0; variant < 3; ++variant) {  // 0: padding mask, 1: causal, 2: none
    CAPTURE(variant);
    cpu::SoftmaxMask mask;
    mask.keep = variant == 0 ? keep.data() : nullptr;
    mask.heads = nh;
    mask.seq = S;
    mask.causal = variant == 1;
    Vec s = randn(rows * S, 90 + variant, 2.0), w = randn(rows * S, 95 + variant), p(rows * S);
    auto loss = [&] {
      cpu::softmax_forward<double>(p.data(), s.data(), rows, S, mask);
      return dot(w, p);
    };
    loss();
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0;
      for (int64_t j = 0; j < S; ++j) sum += p[r * S + j];
      const bool all_masked = variant == 0 && r >= nh * S;
      CHECK(sum == doctest::Approx(all_masked ? 0.0 : 1.0).epsilon(1e-14));
      if (variant == 0) CHECK(p[r * S + 3] == 0.0);
      if (variant == 1)
        for (int64_t j = r % S + 1; j < S; ++j) CHECK(p[r * S + j] == 0.0);  // causal: no future keys
    }
    Vec ds(rows * S);
    cpu::softmax_backward<double>(ds.data(), w.data(), p.data(), rows, S);
    fd_check(s, loss, ds, "dscores");
  }
}

TEST_CASE("dropout: rate, scaling, determinism per (seed, step, micro-step, stream); backward") {
  const int64_t n = 20000;
  const double p = 0.3;
  Vec x = randn(n, 100), y(n), y2(n);
  std::vector<uint8_t> mask(n), mask2(n);
  const uint64_t key = cpu::dropout_key(1234, 5, 1, 7);
  cpu::dropout_forward<double>(y.data(), mask.data(), x.data(), n, p, key);
  int64_t kept = 0, wrong = 0;
  for (int64_t i = 0; i < n; ++i) {
    kept += mask[i];
    wrong += std::abs(y[i] - (mask[i] ? x[i] / 0.7 : 0.0)) > 1e-15 * std::abs(x[i]) * 2;
  }
  CHECK(wrong == 0);
  // Binomial(20000, 0.7): sd = sqrt(20000·0.21) ≈ 65; allow 5 sd.
  CHECK(std::abs(static_cast<double>(kept) - 0.7 * n) < 5 * 65);
  cpu::dropout_forward<double>(y2.data(), mask2.data(), x.data(), n, p, key);
  CHECK(mask == mask2);  // recompute regenerates the same mask
  // The kernel draws the shared header's mask (what a CUDA kernel that includes dropout_mask.hpp draws);
  // the key is a constexpr function of (seed, step, micro-step, stream), as device code needs.
  static_assert(ptsim::runtime::dropout_key(1234, 5, 1, 7) != ptsim::runtime::dropout_key(1234, 5, 1, 8));
  const uint64_t threshold = ptsim::runtime::dropout_threshold(p);
  for (int64_t i = 0; i < n; ++i)
    REQUIRE(mask[static_cast<size_t>(i)] == (ptsim::runtime::dropout_keep(key, static_cast<uint64_t>(i), threshold) ? 1 : 0));
  for (auto other : {cpu::dropout_key(1234, 5, 1, 8), cpu::dropout_key(1234, 5, 2, 7), cpu::dropout_key(1234, 6, 1, 7),
                     cpu::dropout_key(1235, 5, 1, 7)}) {
    cpu::dropout_forward<double>(y2.data(), mask2.data(), x.data(), n, p, other);
    CHECK(mask != mask2);
  }
  // Backward is the same linear map: check by finite differences on a small slice.
  const int64_t m = 50;
  Vec xs(x.begin(), x.begin() + m), w = randn(m, 101), ys(m), dx(m);
  auto loss = [&] {
    cpu::dropout_forward<double>(ys.data(), mask.data(), xs.data(), m, p, key);
    return dot(w, ys);
  };
  loss();
  cpu::dropout_backward<double>(dx.data(), w.data(), mask.data(), m, p);
  fd_check(xs, loss, dx, "dx");
}

TEST_CASE("gelu (erf and tanh forms) and tanh: values and finite differences") {
  // PyTorch: F.gelu(1.0) = 0.8413447460685429 (= Φ(1)); F.gelu(1.0, approximate='tanh') = 0.8411919906082768.
  Vec one = {1.0}, out(1);
  cpu::gelu_forward<double>(out.data(), one.data(), 1, false);
  CHECK(out[0] == doctest::Approx(0.8413447460685429).epsilon(1e-14));
  cpu::gelu_forward<double>(out.data(), one.data(), 1, true);
  CHECK(out[0] == doctest::Approx(0.8411919906082768).epsilon(1e-14));
  const int64_t n = 40;
  for (int form = 0; form < 3; ++form) {
    CAPTURE(form);
    Vec x = randn(n, 110 + form, 2.0), w = randn(n, 120 + form), y(n), dx(n);
    auto forward = [&] {
      if (form == 2) cpu::tanh_forward<double>(y.data(), x.data(), n);
      else cpu::gelu_forward<double>(y.data(), x.data(), n, form == 1);
    };
    auto loss = [&] {
      forward();
      return dot(w, y);
    };
    forward();
    if (form == 2) cpu::tanh_backward<double>(dx.data(), w.data(), y.data(), n);
    else cpu::gelu_backward<double>(dx.data(), w.data(), x.data(), n, form == 1);
    fd_check(x, loss, dx, form == 2 ? "tanh dx" : "gelu dx");
  }
}

TEST_CASE("split_heads / merge_heads: layout, inverse, adjoint") {
  const int64_t B = 2, S = 3, nh = 2, d = 4;
  Vec x = randn(B * S * nh * d, 130), y(x.size()), back(x.size());
  cpu::split_heads<double>(y.data(), x.data(), B, S, nh, d);
  // y[b=1, h=1, s=2, e=3] = x[row 1·3+2 = 5, col 1·4+3 = 7]
  CHECK(y[((1 * nh + 1) * S + 2) * d + 3] == x[5 * nh * d + 7]);
  cpu::merge_heads<double>(back.data(), y.data(), B, S, nh, d);
  CHECK(back == x);
  // merge is split's adjoint (the backward rule autodiff uses): <split(x), g> = <x, merge(g)>.
  Vec g = randn(x.size(), 131), mg(x.size());
  cpu::merge_heads<double>(mg.data(), g.data(), B, S, nh, d);
  CHECK(dot(y, g) == doctest::Approx(dot(x, mg)).epsilon(1e-14));
}

TEST_CASE("cross_entropy: uniform logits by hand; ignored rows, padded classes; backward") {
  // Zero logits over 5 valid classes (6th is padding): every labelled row costs ln 5 = 1.6094379124341003.
  {
    const int64_t P = 2, C = 6;
    Vec z(P * C, 0.0), lse(P), loss(1);
    z[5] = 50.0;  // a padded class: must not enter the logsumexp
    const std::vector<int32_t> labels = {1, -1};
    cpu::cross_entropy_forward<double>(loss.data(), lse.data(), z.data(), labels.data(), P, C, 5);
    CHECK(loss[0] == doctest::Approx(1.6094379124341003).epsilon(1e-14));
    const std::vector<int32_t> none = {-1, -1};
    cpu::cross_entropy_forward<double>(loss.data(), lse.data(), z.data(), none.data(), P, C, 5);
    CHECK(loss[0] == 0.0);
    Vec dz(P * C, 1.0), dloss = {1.0};
    cpu::cross_entropy_backward<double>(dz.data(), dloss.data(), z.data(), none.data(), lse.data(), P, C, 5);
    for (double v : dz) CHECK(v == 0.0);
    const std::vector<int32_t> bad = {5, -1};  // class 5 is padding
    CHECK_THROWS_AS(cpu::cross_entropy_forward<double>(loss.data(), lse.data(), z.data(), bad.data(), P, C, 5),
                    ptsim::core::InputError);
  }
  const int64_t P = 4, C = 6, valid = 5;
  const std::vector<int32_t> labels = {1, -1, 4, 0};
  Vec z = randn(P * C, 140, 2.0), lse(P), loss(1);
  const double dloss_value = 0.37;  // e.g. 1/micro_steps
  auto f = [&] {
    cpu::cross_entropy_forward<double>(loss.data(), lse.data(), z.data(), labels.data(), P, C, valid);
    return dloss_value * loss[0];
  };
  f();
  Vec dz(P * C), dloss = {dloss_value};
  cpu::cross_entropy_backward<double>(dz.data(), dloss.data(), z.data(), labels.data(), lse.data(), P, C, valid);
  fd_check(z, f, dz, "dlogits");
  for (int64_t c = 0; c < C; ++c) CHECK(dz[1 * C + c] == 0.0);       // ignored row
  for (int64_t p = 0; p < P; ++p) CHECK(dz[p * C + valid] == 0.0);   // padded class
}
