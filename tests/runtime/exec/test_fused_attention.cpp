// tests/runtime/exec/test_fused_attention.cpp — the CPU fused attention (cpu_fused_attention.hpp) against
// the unfused ops the graph runs without recipe.fused_attention (batched_gemm scores → softmax with mask →
// dropout → batched_gemm context, and their backward ops), on random inputs: seq 1, 7, 128 and one 512,
// head dims 64, 128 and an odd 37, padding mask, causal, dropout; forward context and lse, backward dq,
// dk, dv. Also the per-tile maths of math/attention_math.hpp on its edge cases.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "runtime/exec/cpu_backend.hpp"
#include "runtime/exec/cpu_fused_attention.hpp"
#include "runtime/exec/math/attention_math.hpp"
#include "tests/runtime/exec/attention_test_problem.hpp"

namespace cpu = ptsim::runtime::cpu;
namespace math = ptsim::runtime::math;
using ptsim::runtime::AttentionProblem;
using ptsim::test::problem_of;

namespace {

struct Config {
  int64_t batch = 2, heads = 2, seq = 7, head_dim = 64;
  bool padded = false, causal = false;
  double dropout = 0;
  std::string label() const {
    return "S=" + std::to_string(seq) + " d=" + std::to_string(head_dim) + (padded ? " padded" : "") +
           (causal ? " causal" : "") + (dropout > 0 ? " dropout" : "");
  }
};

struct Inputs {
  std::vector<double> q, k, v, dout;
  std::vector<int32_t> mask;  // [B, S]; empty = none
};

// q, k, v, dcontext ~ N(0, 1); the mask keeps every key of batch 0 and pads batch 1's last ⌊S/3⌋ keys
// (at S = 1 none: every row keeps a key).
Inputs make_inputs(const Config& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n(0.0, 1.0);
  const auto count = static_cast<size_t>(c.batch * c.heads * c.seq * c.head_dim);
  Inputs in;
  for (auto* t : {&in.q, &in.k, &in.v, &in.dout}) {
    t->resize(count);
    for (double& x : *t) x = n(rng);
  }
  if (c.padded)
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t j = 0; j < c.seq; ++j) in.mask.push_back(b == 0 || j < c.seq - c.seq / 3 ? 1 : 0);
  return in;
}

template <class T>
std::vector<T> cast(const std::vector<double>& v) {
  return std::vector<T>(v.begin(), v.end());
}

struct Outputs {
  std::vector<double> context, lse, dq, dk, dv;
};

// The unfused ops in f64, as the graph without recipe.fused_attention runs them (models/builder.cpp:
// self_attention; the backward as models/autodiff.cpp differentiates each op).
Outputs unfused(const Config& c, const Inputs& in, const AttentionProblem& p) {
  const int64_t bh = p.batch_heads, S = c.seq, d = c.head_dim, sq = bh * S * S;
  ptsim::models::GemmAttrs g;
  g.batch = bh;
  auto gemm = [&](std::vector<double>& C, const std::vector<double>& A, const std::vector<double>& B, int64_t m,
                  int64_t n, int64_t k, bool ta, bool tb, double alpha) {
    g.m = m;
    g.n = n;
    g.k = k;
    g.trans_a = ta;
    g.trans_b = tb;
    g.alpha = alpha;
    C.assign(static_cast<size_t>(bh * m * n), 0.0);
    cpu::batched_gemm_forward<double>(C.data(), A.data(), B.data(), g);
  };
  std::vector<double> scores, probs(static_cast<size_t>(sq)), dropped(static_cast<size_t>(sq));
  std::vector<uint8_t> keep(static_cast<size_t>(sq), 1);
  gemm(scores, in.q, in.k, S, S, d, false, true, p.scale);
  cpu::SoftmaxMask mask;
  mask.keep = c.padded ? in.mask.data() : nullptr;
  mask.heads = c.heads;
  mask.seq = S;
  mask.causal = c.causal;
  cpu::softmax_forward<double>(probs.data(), scores.data(), bh * S, S, mask);
  if (c.dropout > 0)
    cpu::dropout_forward<double>(dropped.data(), keep.data(), probs.data(), sq, c.dropout, p.dropout_key);
  else
    dropped = probs;
  Outputs o;
  gemm(o.context, dropped, in.v, S, d, S, false, false, 1.0);
  o.lse.resize(static_cast<size_t>(bh * S));
  for (int64_t r = 0; r < bh * S; ++r) {  // log Σ exp over the allowed keys (+inf when none, as the fused op)
    const int32_t* keep_row = math::attention_keep_row(mask.keep, r / S, c.heads, S);
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < S; ++j)
      if (math::attention_key_allowed(r % S, j, c.causal, keep_row)) mx = std::max(mx, scores[r * S + j]);
    for (int64_t j = 0; j < S; ++j)
      if (math::attention_key_allowed(r % S, j, c.causal, keep_row)) sum += std::exp(scores[r * S + j] - mx);
    o.lse[static_cast<size_t>(r)] = sum > 0 ? mx + std::log(sum) : INFINITY;
  }
  std::vector<double> ddropped, dprobs(static_cast<size_t>(sq)), dscores(static_cast<size_t>(sq));
  gemm(ddropped, in.dout, in.v, S, S, d, false, true, 1.0);  // dcontext·vᵀ
  gemm(o.dv, dropped, in.dout, S, d, S, true, false, 1.0);   // droppedᵀ·dcontext
  if (c.dropout > 0)
    cpu::dropout_backward<double>(dprobs.data(), ddropped.data(), keep.data(), sq, c.dropout);
  else
    dprobs = ddropped;
  cpu::softmax_backward<double>(dscores.data(), dprobs.data(), probs.data(), bh * S, S);
  gemm(o.dq, dscores, in.k, S, d, S, false, false, p.scale);
  gemm(o.dk, dscores, in.q, S, d, S, true, false, p.scale);
  return o;
}

template <class T>
Outputs fused(const Config& c, const Inputs& in, const AttentionProblem& p, int threads) {
  const auto n = in.q.size(), rows = static_cast<size_t>(p.batch_heads * c.seq);
  const std::vector<T> q = cast<T>(in.q), k = cast<T>(in.k), v = cast<T>(in.v), dout = cast<T>(in.dout);
  const int32_t* keep = c.padded ? in.mask.data() : nullptr;
  std::vector<T> context(n, T(NAN)), lse(rows, T(NAN)), dq(n, T(NAN)), dk(n, T(NAN)), dv(n, T(NAN));
  cpu::fused_attention_forward<T>(context.data(), lse.data(), q.data(), k.data(), v.data(), keep, p, threads);
  cpu::fused_attention_backward<T>(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(),
                                   context.data(), lse.data(), keep, p, threads);
  auto wide = [](const std::vector<T>& x) { return std::vector<double>(x.begin(), x.end()); };
  return {wide(context), wide(lse), wide(dq), wide(dk), wide(dv)};
}

// max |a − b| / max |b| over the finite reference elements; a non-finite reference must be matched exactly.
double relative_error(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i)
    if (std::isfinite(b[i])) scale = std::max(scale, std::abs(b[i]));
  for (size_t i = 0; i < b.size(); ++i) {
    if (!std::isfinite(b[i])) {
      if (a[i] != b[i]) return INFINITY;
      continue;
    }
    worst = std::max(worst, std::abs(a[i] - b[i]));
  }
  return scale > 0 ? worst / scale : worst;
}

// Normwise tolerances (relative to max|reference| of each output). Rounding-error bound of the fused and
// unfused paths against the exact result: each probability carries a relative error of about
// (d + 2)·u·(1 + |s|) from the score's d-term dot product and its exp, plus (S + 8)·u from the row sum and
// normalisation; the outputs add S- or d-term sums: c ≤ (2S + 2d + 32)·(1 + max|s|) in units of u. With
// N(0, 1) inputs, |s| = |q·k|/√d stays below 8 here, and S ≤ 512, d ≤ 128: c ≤ 1312·9 ≈ 1.2e4.
// f64 (u = 2^-53 ≈ 1.1e-16): 1.3e-12 → 1e-11 allowed. f32 fused against the f64 reference (u = 2^-24 ≈
// 6e-8): 7e-4 → 1e-3 allowed. The dot D_i = dO_i·O_i appears in dS as a difference with dP_ij: its error
// counts relative to max|dS|, covered by the same c. (Measured errors are ~100× below these bounds.)
constexpr double kF64Tolerance = 1e-11;
constexpr double kF32Tolerance = 1e-3;

void check_against_unfused(const Config& c, int threads = 2) {
  const Inputs in = make_inputs(c, 1000 + static_cast<uint64_t>(c.seq * 131 + c.head_dim));
  const AttentionProblem p = problem_of(c);
  const Outputs want = unfused(c, in, p);
  const Outputs got64 = fused<double>(c, in, p, threads), got32 = fused<float>(c, in, p, threads);
  const char* names[] = {"context", "lse", "dq", "dk", "dv"};
  const std::vector<double>* w[] = {&want.context, &want.lse, &want.dq, &want.dk, &want.dv};
  const std::vector<double>* g64[] = {&got64.context, &got64.lse, &got64.dq, &got64.dk, &got64.dv};
  const std::vector<double>* g32[] = {&got32.context, &got32.lse, &got32.dq, &got32.dk, &got32.dv};
  for (size_t o = 0; o < 5; ++o) {
    const double e64 = relative_error(*g64[o], *w[o]), e32 = relative_error(*g32[o], *w[o]);
    CHECK_MESSAGE(e64 <= kF64Tolerance, c.label() << " f64 " << names[o] << ": relative error " << e64);
    CHECK_MESSAGE(e32 <= kF32Tolerance, c.label() << " f32 " << names[o] << ": relative error " << e32);
  }
}

}  // namespace

TEST_CASE("fused attention equals the unfused ops: seq 1, 7, 128; d 64, 128, 37; mask, causal, dropout") {
  for (int64_t S : {1, 7, 128})
    for (int64_t d : {64, 128, 37})
      for (int variant = 0; variant < 4; ++variant) {
        Config c;
        c.seq = S;
        c.head_dim = d;
        c.padded = variant == 1 || variant == 3;
        c.causal = variant == 2;
        c.dropout = variant == 3 ? 0.1 : 0.0;
        check_against_unfused(c);
      }
}

TEST_CASE("fused attention equals the unfused ops at seq 512 (8 key tiles), padded, dropout, 1 and 3 threads") {
  Config c;
  c.batch = 1;
  c.heads = 2;
  c.seq = 512;
  c.padded = true;
  c.dropout = 0.1;
  check_against_unfused(c, 1);
  c.causal = true;
  c.padded = false;
  check_against_unfused(c, 3);
}

TEST_CASE("fused attention: a row whose keys are all padding attends to nothing (context 0, lse +inf, no gradient)") {
  Config c;
  c.seq = 7;
  c.padded = true;
  Inputs in = make_inputs(c, 5);
  std::fill(in.mask.begin() + c.seq, in.mask.end(), 0);  // batch 1: every key is padding
  const AttentionProblem p = problem_of(c);
  const Outputs want = unfused(c, in, p), got = fused<double>(c, in, p, 1);
  const size_t half = got.context.size() / 2;
  for (size_t i = half; i < got.context.size(); ++i) {
    REQUIRE(got.context[i] == 0.0);
    REQUIRE(got.dq[i] == 0.0);
    REQUIRE(got.dk[i] == 0.0);
    REQUIRE(got.dv[i] == 0.0);
  }
  for (size_t r = got.lse.size() / 2; r < got.lse.size(); ++r) CHECK(got.lse[r] == INFINITY);
  CHECK(relative_error(got.context, want.context) <= kF64Tolerance);
  CHECK(relative_error(got.dq, want.dq) <= kF64Tolerance);
}

TEST_CASE("attention_math: online-softmax rescale, lse and dS edge cases") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(math::attention_rescale(-inf, 2.0) == 0.0);  // nothing accumulated yet: no NaN from −inf − (−inf)
  CHECK(math::attention_rescale(-inf, -inf) == 1.0);
  CHECK(math::attention_rescale(1.0, 3.0) == doctest::Approx(std::exp(-2.0)));
  CHECK(math::attention_new_max(1.0, -inf) == 1.0);
  CHECK(math::attention_lse(2.0, 0.0) == inf);
  CHECK(math::attention_lse(2.0, std::exp(1.0)) == doctest::Approx(3.0));
  CHECK(math::attention_prob(0.5, inf) == 0.0);  // an empty row's probabilities recompute to 0
  CHECK(math::attention_output(3.0, 0.0) == 0.0);
  CHECK(math::attention_dscore(0.25, 2.0, 0.5) == doctest::Approx(0.375));  // 0.25·(2 − 0.5)
  // Online over two tiles = one pass: weights {e^1, e^3} → sum with max 3 is e^-2 + 1.
  double m = -inf, sum = 0;
  for (double tile_max : {1.0, 3.0}) {
    const double nm = math::attention_new_max(m, tile_max);
    sum = sum * math::attention_rescale(m, nm) + math::attention_weight(tile_max, nm);
    m = nm;
  }
  CHECK(math::attention_lse(m, sum) == doctest::Approx(std::log(std::exp(1.0) + std::exp(3.0))));
  // The dropout index is the unfused probabilities tensor's flat index.
  CHECK(math::attention_dropout_index(2, 3, 4, 7) == static_cast<uint64_t>((2 * 7 + 3) * 7 + 4));
  // Causal and padding rules are the unfused softmax's.
  const int32_t keep_row[] = {1, 0, 1};
  CHECK(math::attention_key_allowed(0, 0, true, nullptr));
  CHECK_FALSE(math::attention_key_allowed(0, 1, true, nullptr));
  CHECK_FALSE(math::attention_key_allowed(2, 1, false, keep_row));
  CHECK(math::attention_key_allowed(0, 2, false, keep_row));
}
