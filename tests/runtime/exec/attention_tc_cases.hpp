// tests/runtime/exec/attention_tc_cases.hpp — what the tensor-core fused attention's checks share: the
// cases (seq 1, 7, 128, 130; head dims 64, 128 and 37; padding mask, a batch with no key, causal, dropout),
// their 16-bit-rounded inputs, the CPU fused attention's fp32 result on them as the reference, and the error
// bound (derived in docs/cuda-backend.md, "The tensor-core kernel"): with P̃_ij the exact dropped
// probabilities and A_ie = Σ_j P̃_ij·|v_je|, a context element may differ from the reference by
//   u·A_ie            P̃ rounded to 16 bits before P·V (the dominant term: u = 2^-8 for bf16, 2^-11 fp16)
//   + u·|ref_ie|      the context's own rounding to 16 bits
//   + f·A_ie          fp32 rounding in both: f = 2^-24·(2·(d + 1)·(1 + α·M_i) + 2·(S + 4)),
// where α·M_i = α·max_j Σ_e |q_ie·k_je| bounds the scores' fp32 error (γ_d on each side, moved into every
// weight by exp) and S + 4 covers the sums over keys, the rescales' and the division's roundings; lse may
// differ by 2^-24·(2·(d + 1)·α·M_i + 2·(S + 4) + 2·|lse_i|) (+inf rows exactly). A and M are computed here
// in double. Users: test_attention_tc.cpp (cpu suite: the host emulation) and attention_tc_gpu_check.cpp
// (gpu suite: the CUDA kernel).
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "runtime/exec/attention_problem.hpp"
#include "runtime/exec/cpu_fused_attention.hpp"
#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/activation_math.hpp"
#include "runtime/exec/math/attention_math.hpp"
#include "runtime/exec/math/attention_tc_tiles.hpp"

namespace ptsim::test::attention_tc {

namespace tc = ptsim::runtime::math::attention_tc;
namespace math = ptsim::runtime::math;
namespace cpu = ptsim::runtime::cpu;
using ptsim::runtime::AttentionProblem;


struct Case {
  int64_t batch = 2, heads = 2, seq = 7, head_dim = 64;
  bool padded = false, batch1_all_padded = false, causal = false;
  double dropout = 0;
  std::string label() const {
    return "S=" + std::to_string(seq) + " d=" + std::to_string(head_dim) + (padded ? " padded" : "") +
           (batch1_all_padded ? " (batch 1 all padded)" : "") + (causal ? " causal" : "") +
           (dropout > 0 ? " dropout" : "");
  }
};

// q, k, v ~ N(0, 1) rounded to E; the mask keeps every key of batch 0 and pads batch 1's last ⌊S/3⌋ keys
// (or all of them).
struct Inputs {
  std::vector<float> q, k, v;  // the E values, widened (exact)
  std::vector<int32_t> mask;
};
template <class E>
Inputs make_inputs(const Case& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const auto count = static_cast<size_t>(c.batch * c.heads * c.seq * c.head_dim);
  Inputs in;
  for (auto* t : {&in.q, &in.k, &in.v}) {
    t->resize(count);
    for (float& x : *t) x = static_cast<float>(E(n(rng)));
  }
  if (c.padded)
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t j = 0; j < c.seq; ++j)
        in.mask.push_back(b == 0 || (!c.batch1_all_padded && j < c.seq - c.seq / 3) ? 1 : 0);
  return in;
}

inline AttentionProblem problem_of(const Case& c) {
  AttentionProblem p;
  p.batch_heads = c.batch * c.heads;
  p.seq = c.seq;
  p.head_dim = c.head_dim;
  p.heads = c.heads;
  p.scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  p.causal = c.causal;
  p.has_mask = c.padded;
  p.dropout_p = c.dropout;
  p.dropout_key = ptsim::runtime::dropout_key(42, 3, 1, 7);
  return p;
}

// The launcher's parameters (cuda/fused_attention_tc.cu builds the same from FusedAttentionArgs).
inline tc::OpParams params_of(const AttentionProblem& p, const int32_t* keep) {
  tc::OpParams o;
  o.seq = p.seq;
  o.head_dim = p.head_dim;
  o.heads = p.heads;
  o.scale = static_cast<float>(p.scale);
  o.causal = p.causal;
  o.keep = keep;
  o.dropout = p.dropout_p > 0;
  o.key = p.dropout_key;
  o.threshold = ptsim::runtime::dropout_threshold(std::min(p.dropout_p, 1.0));
  o.drop_scale = math::dropout_scale<float>(p.dropout_p);
  return o;
}

struct Result {
  std::vector<float> context, lse;
};

// Per element: A_ie = Σ_j P̃_ij·|v_je| and per row α·M_i (the bound's ingredients, in double).
struct BoundTerms {
  std::vector<double> a, alpha_m;
};
inline BoundTerms bound_terms(const Inputs& in, const AttentionProblem& p, const int32_t* keep) {
  const int64_t S = p.seq, d = p.head_dim;
  const uint64_t threshold = ptsim::runtime::dropout_threshold(std::min(p.dropout_p, 1.0));
  const double drop_scale = math::dropout_scale<double>(p.dropout_p);
  BoundTerms t;
  t.a.assign(in.q.size(), 0.0);
  t.alpha_m.assign(static_cast<size_t>(p.batch_heads * S), 0.0);
  std::vector<double> s(static_cast<size_t>(S));
  for (int64_t bh = 0; bh < p.batch_heads; ++bh) {
    const int32_t* keep_row = math::attention_keep_row(keep, bh, p.heads, S);
    for (int64_t i = 0; i < S; ++i) {
      const size_t row = static_cast<size_t>(bh * S + i);
      double mx = -INFINITY, sum = 0, m = 0;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0, abs_dot = 0;
        for (int64_t e = 0; e < d; ++e) {
          const double x = double(in.q[(bh * S + i) * d + e]) * double(in.k[(bh * S + j) * d + e]);
          dot += x;
          abs_dot += std::abs(x);
        }
        s[static_cast<size_t>(j)] = p.scale * dot;
        m = std::max(m, abs_dot);
        if (math::attention_key_allowed(i, j, p.causal, keep_row)) mx = std::max(mx, s[static_cast<size_t>(j)]);
      }
      t.alpha_m[row] = p.scale * m;
      for (int64_t j = 0; j < S; ++j)
        if (math::attention_key_allowed(i, j, p.causal, keep_row)) sum += std::exp(s[static_cast<size_t>(j)] - mx);
      for (int64_t j = 0; j < S; ++j) {
        if (!math::attention_key_allowed(i, j, p.causal, keep_row)) continue;
        double prob = std::exp(s[static_cast<size_t>(j)] - mx) / sum;
        if (p.dropout_p > 0)
          prob = ptsim::runtime::dropout_keep(p.dropout_key, math::attention_dropout_index(bh, i, j, S), threshold)
                     ? prob * drop_scale
                     : 0.0;
        for (int64_t e = 0; e < d; ++e) t.a[row * d + e] += prob * std::abs(double(in.v[(bh * S + j) * d + e]));
      }
    }
  }
  return t;
}

// The comparison of one case's result with the reference: the worst error / bound over context and lse,
// how many elements broke the bound, and the first one's description.
struct Verdict {
  double worst = 0;
  int64_t failures = 0;
  std::string first_failure;
};

// The CPU fused attention's fp32 result on the case's (16-bit-valued) inputs.
inline Result reference(const Inputs& in, const AttentionProblem& p, const int32_t* keep) {
  Result r;
  r.context.resize(in.q.size());
  r.lse.resize(static_cast<size_t>(p.batch_heads * p.seq));
  cpu::fused_attention_forward<float>(r.context.data(), r.lse.data(), in.q.data(), in.k.data(), in.v.data(), keep,
                                      p, 1);
  return r;
}

inline Verdict compare(const Case& c, const Inputs& in, const Result& got, double u) {
  const AttentionProblem p = problem_of(c);
  const int32_t* keep = c.padded ? in.mask.data() : nullptr;
  const Result ref = reference(in, p, keep);
  const BoundTerms t = bound_terms(in, p, keep);
  const double eps = std::ldexp(1.0, -24);
  const auto d = static_cast<size_t>(c.head_dim);
  const auto S = static_cast<double>(c.seq);
  Verdict v;
  auto fail = [&](const std::string& what) {
    if (v.failures++ == 0) v.first_failure = c.label() + ": " + what;
  };
  for (size_t x = 0; x < ref.context.size(); ++x) {
    const double f = eps * (2 * (double(d) + 1) * (1 + t.alpha_m[x / d]) + 2 * (S + 4));
    const double bound = (u + f) * t.a[x] + u * std::abs(double(ref.context[x]));
    const double err = std::abs(double(got.context[x]) - double(ref.context[x]));
    if (!(err <= bound))  // NaN fails too
      fail("context element " + std::to_string(x) + " is " + std::to_string(got.context[x]) + ", reference " +
           std::to_string(ref.context[x]) + ", bound " + std::to_string(bound));
    else if (bound > 0)
      v.worst = std::max(v.worst, err / bound);
  }
  for (size_t r = 0; r < ref.lse.size(); ++r) {
    if (std::isinf(ref.lse[r])) {
      if (got.lse[r] != ref.lse[r]) fail("lse row " + std::to_string(r) + " is " + std::to_string(got.lse[r]) + ", expected +inf");
      continue;
    }
    const double bound = eps * (2 * (double(d) + 1) * t.alpha_m[r] + 2 * (S + 4) + 2 * std::abs(double(ref.lse[r])));
    const double err = std::abs(double(got.lse[r]) - double(ref.lse[r]));
    if (!(err <= bound))
      fail("lse row " + std::to_string(r) + " is " + std::to_string(got.lse[r]) + ", reference " +
           std::to_string(ref.lse[r]) + ", bound " + std::to_string(bound));
    else
      v.worst = std::max(v.worst, err / bound);
  }
  return v;
}

inline std::vector<Case> cases() {
  std::vector<Case> all;
  for (int64_t seq : {1, 7, 128, 130})
    for (int64_t d : {64, 128}) {
      Case c;
      c.seq = seq;
      c.head_dim = d;
      all.push_back(c);  // plain
      c.padded = true;
      all.push_back(c);  // padding mask
      c.padded = false;
      c.causal = true;
      all.push_back(c);  // causal
      c.causal = false;
      c.dropout = 0.1;
      all.push_back(c);  // dropout
      c.padded = c.causal = true;
      all.push_back(c);  // all three
    }
  Case odd;  // a head dim below 64: zero-padded columns in the 64 kernel
  odd.seq = 130;
  odd.head_dim = 37;
  odd.padded = odd.causal = true;
  odd.dropout = 0.1;
  all.push_back(odd);
  Case empty;  // batch 1 has no key: its rows' lse +inf and context 0
  empty.seq = 7;
  empty.padded = empty.batch1_all_padded = true;
  all.push_back(empty);
  return all;
}


// Each case's input seed.
inline uint64_t seed_of(const Case& c) { return 1000 + static_cast<uint64_t>(c.seq * 7 + c.head_dim); }

}  // namespace ptsim::test::attention_tc
