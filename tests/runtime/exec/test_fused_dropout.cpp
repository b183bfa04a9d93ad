// tests/runtime/exec/test_fused_dropout.cpp — the fused dropout kernels (cpu_fused_dropout.hpp) against the
// unfused op sequences the graph runs without the fusions, on random f32 inputs of odd sizes, dropout on
// and off: softmax → dropout (and dropout_backward → softmax_backward), bias add → dropout → residual add
// (and dropout_backward → bias_grad). Where the fused kernel does the same arithmetic in the same order the
// outputs must be equal to the bit (masks always); the bias gradient's column sums may add in another
// order than Eigen's colwise sum, so there the bound is derived (stated at the check).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/exec/cpu_backend.hpp"
#include "runtime/exec/cpu_fused_dropout.hpp"

using namespace ptsim::runtime;

namespace {

using Floats = std::vector<float>;
using Bytes = std::vector<uint8_t>;

Floats random_floats(size_t n, uint64_t seed, float stddev = 1.0f) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, stddev);
  Floats v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// Bitwise equality of two float arrays (so −0 vs +0 or a NaN would show).
bool same_bits(const Floats& a, const Floats& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

size_t count_zeros(const Bytes& mask) {
  size_t n = 0;
  for (uint8_t m : mask) n += m == 0;
  return n;
}

const uint64_t kKey = dropout_key(42, 3, 1, 7);  // any schedule position: both sides use the same key

}  // namespace

TEST_CASE("softmax_dropout equals softmax then dropout to the bit, forward and backward") {
  const int64_t B = 2, nh = 3;
  for (int64_t S : {int64_t{7}, int64_t{37}})
    for (bool causal : {false, true})
      for (double p : {0.0, 0.1, 1.0}) {
        CAPTURE(S);
        CAPTURE(causal);
        CAPTURE(p);
        const int64_t rows = B * nh * S, n = rows * S;
        const Floats scores = random_floats(static_cast<size_t>(n), 11 + S, 3.0f);
        std::vector<int32_t> keep(static_cast<size_t>(B * S), 1);
        for (int64_t j = S - S / 3; j < S; ++j) keep[static_cast<size_t>(S + j)] = 0;  // batch 1 pads its last third
        cpu::SoftmaxMask mask{keep.data(), nh, S, causal};

        Floats probs(n), dropped(n), fused_probs(n), fused_dropped(n);
        Bytes drop_mask(n), fused_mask(n);
        cpu::softmax_forward<float>(probs.data(), scores.data(), rows, S, mask);
        cpu::dropout_forward<float>(dropped.data(), drop_mask.data(), probs.data(), n, p, kKey);
        cpu::softmax_dropout_forward<float>(fused_dropped.data(), fused_probs.data(), fused_mask.data(), scores.data(),
                                            rows, S, mask, p, kKey);
        CHECK(same_bits(probs, fused_probs));
        CHECK(same_bits(dropped, fused_dropped));
        CHECK(drop_mask == fused_mask);
        if (p == 0.1 && S == 37)  // the masks compared are real draws: 10% dropped, ±5% (n = 8,214: σ ≈ 0.3%)
          CHECK(std::abs(double(count_zeros(fused_mask)) / double(n) - 0.1) < 0.05);

        const Floats ddropped = random_floats(static_cast<size_t>(n), 23 + S);
        Floats dprobs(n), dscores(n), fused_dscores(n);
        cpu::dropout_backward<float>(dprobs.data(), ddropped.data(), drop_mask.data(), n, p);
        cpu::softmax_backward<float>(dscores.data(), dprobs.data(), probs.data(), rows, S);
        cpu::softmax_dropout_backward<float>(fused_dscores.data(), ddropped.data(), fused_probs.data(),
                                             fused_mask.data(), rows, S, p);
        CHECK(same_bits(dscores, fused_dscores));
      }
}

TEST_CASE("bias_dropout_residual equals bias add, dropout, residual add; its backward dropout_backward + bias_grad") {
  for (int64_t M : {int64_t{1}, int64_t{7}, int64_t{129}})
    for (int64_t N : {int64_t{13}, int64_t{131}})
      for (double p : {0.0, 0.1, 1.0}) {
        CAPTURE(M);
        CAPTURE(N);
        CAPTURE(p);
        const bool dropout = p > 0;  // p = 0 stands for "no dropout in the graph": no mask tensor
        const int64_t n = M * N;
        const Floats y = random_floats(static_cast<size_t>(n), 31 + M), bias = random_floats(N, 37 + N, 0.5f);
        const Floats residual = random_floats(static_cast<size_t>(n), 41 + M);
        // Unfused: the GEMM's bias add (in f32, as the GEMM that adds the bias last), dropout, residual add.
        Floats with_bias(n), dropped(n), sum(n), fused(n);
        for (int64_t i = 0; i < n; ++i) with_bias[i] = y[i] + bias[i % N];
        Bytes drop_mask(n, 1), fused_mask(n, 7);
        if (dropout)
          cpu::dropout_forward<float>(dropped.data(), drop_mask.data(), with_bias.data(), n, p, kKey);
        else
          dropped = with_bias;
        const std::vector<const float*> addends = {residual.data(), dropped.data()};
        cpu::add_forward<float>(sum.data(), addends, n);
        cpu::bias_dropout_residual_forward<float>(fused.data(), dropout ? fused_mask.data() : nullptr, y.data(),
                                                  bias.data(), residual.data(), M, N, p, kKey);
        CHECK(same_bits(sum, fused));
        if (dropout) CHECK(drop_mask == fused_mask);

        const Floats dout = random_floats(static_cast<size_t>(n), 43 + M);
        const Floats prior = random_floats(N, 47 + N);  // dbias accumulates (+=)
        Floats dx(n), fused_dy(n), dbias = prior, fused_dbias = prior;
        if (dropout)
          cpu::dropout_backward<float>(dx.data(), dout.data(), drop_mask.data(), n, p);
        else
          dx = dout;
        cpu::bias_grad<float>(dbias.data(), dx.data(), M, N);
        cpu::bias_dropout_residual_backward<float>(fused_dy.data(), fused_dbias.data(), dout.data(),
                                                   dropout ? fused_mask.data() : nullptr, M, N, p);
        CHECK(same_bits(dx, fused_dy));
        // Both dbias are the prior plus an M-term f32 sum of the same dy column, perhaps in different orders:
        // each is within γ_{M+1}·(|prior| + Σ|dy|) of the exact sum (Higham, Accuracy and Stability of
        // Numerical Algorithms, 2nd ed., §4.2: |fl(Σt) − Σt| ≤ γ_{n−1}·Σ|t|), so they differ by at most twice
        // that; γ_k ≈ k·u, u = 2^-24.
        for (int64_t c = 0; c < N; ++c) {
          double magnitude = std::abs(prior[c]);
          for (int64_t r = 0; r < M; ++r) magnitude += std::abs(double(dx[r * N + c]));
          const double bound = 2.0 * double(M + 1) * 5.9604644775390625e-8 * magnitude;
          CHECK(std::abs(double(dbias[c]) - double(fused_dbias[c])) <= bound);
        }
      }
}
