// tests/runtime/exec/attention_tc_cases.hpp — what the tensor-core fused attention's checks share: the
// cases (seq 1, 7, 128, 130; head dims 64, 128 and 37; padding mask, a batch with no key, causal, dropout),
// their 16-bit-rounded inputs, the CPU fused attention's fp32 result on them as the reference, and the error
// bound (derived in docs/cuda-backend.md, "The tensor-core kernel"): with P̃_ij the exact dropped
// probabilities and A_ie = Σ_j P̃_ij·|v_je|, a context element may differ from the reference by
//   u·A_ie            P̃ rounded to 16 bits before P·V (the dominant term: u = 2^-8 for bf16, 2^-11 fp16)
//   + u·|ref_ie|      the context's own rounding to 16 bits
//   + η·(Σ_j |v_je| + 1)  underflow in those roundings (Format16's η: fp16 2^-25, bf16 negligible)
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
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "runtime/exec/attention_problem.hpp"
#include "runtime/exec/cpu_fused_attention.hpp"
#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/activation_math.hpp"
#include "runtime/exec/math/attention_math.hpp"
#include "runtime/exec/math/attention_tc_tiles.hpp"
#include "tests/runtime/exec/attention_test_problem.hpp"

namespace ptsim::test::attention_tc {

// A 16-bit format's rounding: |round(x) − x| ≤ u·|x| + eta (eta: half the subnormal spacing, what underflow
// adds: fp16 2^-25 — its subnormals start below 6.1e-5, so small probabilities and gradients meet them —
// bf16 2^-134, fp32's range).
struct Format16 {
  double u, eta;
};
inline const Format16 kBf16{0x1p-8, 0x1p-134}, kFp16{0x1p-11, 0x1p-25};

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

using ptsim::test::problem_of;  // attention_test_problem.hpp

struct Result {
  std::vector<float> context, lse;
};

// Per element: A_ie = Σ_j P̃_ij·|v_je| and per row α·M_i (the bound's ingredients, in double).
struct BoundTerms {
  std::vector<double> a, alpha_m, abs_v;  // abs_v: Σ_j over allowed keys of |v_je| (the underflow term's scale)
};
inline BoundTerms bound_terms(const Inputs& in, const AttentionProblem& p, const int32_t* keep) {
  const int64_t S = p.seq, d = p.head_dim;
  const uint64_t threshold = ptsim::runtime::dropout_threshold(std::min(p.dropout_p, 1.0));
  const double drop_scale = math::dropout_scale<double>(p.dropout_p);
  BoundTerms t;
  t.a.assign(in.q.size(), 0.0);
  t.abs_v.assign(in.q.size(), 0.0);
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
        for (int64_t e = 0; e < d; ++e) t.abs_v[row * d + e] += std::abs(double(in.v[(bh * S + j) * d + e]));
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
// x in %.6g form (failure messages: std::to_string prints tiny values as 0.000000).
inline std::string sci(double x) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", x);
  return buffer;
}

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

inline Verdict compare(const Case& c, const Inputs& in, const Result& got, Format16 format) {
  const double u = format.u, eta = format.eta;
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
    const double bound = (u + f) * t.a[x] + u * std::abs(double(ref.context[x])) + eta * (t.abs_v[x] + 1);
    const double err = std::abs(double(got.context[x]) - double(ref.context[x]));
    if (!(err <= bound))  // NaN fails too
      fail("context element " + std::to_string(x) + " is " + sci(got.context[x]) + ", reference " + sci(ref.context[x]) +
           ", bound " + sci(bound));
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
      fail("lse row " + std::to_string(r) + " is " + sci(got.lse[r]) + ", reference " + sci(ref.lse[r]) +
           ", bound " + sci(bound));
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


// ---- backward ----
// The backward's extra inputs: dcontext ~ N(0, 1) and the forward's context (the CPU reference's, rounded
// to E, as a 16-bit graph stores it) and lse (fp32), the same for both implementations.
struct BackwardInputs {
  std::vector<float> dout, context, lse;
};
template <class E>
BackwardInputs make_backward_inputs(const Case& c, const Inputs& in, uint64_t seed) {
  const AttentionProblem p = problem_of(c);
  const Result fwd = reference(in, p, c.padded ? in.mask.data() : nullptr);
  BackwardInputs b;
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> n(0.0f, 1.0f);
  b.dout.resize(in.q.size());
  for (float& x : b.dout) x = static_cast<float>(E(n(rng)));
  b.context.resize(fwd.context.size());
  for (size_t x = 0; x < b.context.size(); ++x) b.context[x] = static_cast<float>(E(fwd.context[x]));
  b.lse = fwd.lse;
  return b;
}

struct Gradients {
  std::vector<float> dq, dk, dv;
};

inline Gradients reference_backward(const Inputs& in, const BackwardInputs& b, const AttentionProblem& p,
                                    const int32_t* keep) {
  Gradients g;
  g.dq.resize(in.q.size());
  g.dk.resize(in.q.size());
  g.dv.resize(in.q.size());
  cpu::fused_attention_backward<float>(g.dq.data(), g.dk.data(), g.dv.data(), b.dout.data(), in.q.data(),
                                       in.k.data(), in.v.data(), b.context.data(), b.lse.data(), keep, p, 1);
  return g;
}

// The backward's bound (docs/cuda-backend.md, "The tensor-core kernel"): with B_ij = P_ij·(δ_ij·Σ_e|dO_ie·v_je|
// + Σ_e|dO_ie·O_ie|) bounding |dS_ij| (δ the dropout's scale, 0 where dropped) and f_i the forward's fp32
// term: dq_ie ≤ α·Σ_j (u + f_i)·B_ij·|k_je| + u·|dq_ie|, dk_je ≤ α·Σ_i (u + f_i)·B_ij·|q_ie| + u·|dk_je|
// (dS rounded to 16 bits: the dominant term), dv_je ≤ Σ_i (u + f_i)·P̃_ij·|dO_ie| + u·|dv_je| (P̃ rounded).
inline Gradients backward_bounds(const Case& c, const Inputs& in, const BackwardInputs& b, const Gradients& ref,
                                 Format16 format) {
  const double u = format.u, eta = format.eta;
  const AttentionProblem p = problem_of(c);
  const int32_t* keep = c.padded ? in.mask.data() : nullptr;
  const int64_t S = p.seq, d = p.head_dim;
  const uint64_t threshold = ptsim::runtime::dropout_threshold(std::min(p.dropout_p, 1.0));
  const double drop_scale = math::dropout_scale<double>(p.dropout_p), eps = std::ldexp(1.0, -24);
  std::vector<double> bq(in.q.size(), 0.0), bk(in.q.size(), 0.0), bv(in.q.size(), 0.0), s(static_cast<size_t>(S));
  for (int64_t bh = 0; bh < p.batch_heads; ++bh) {
    const int32_t* keep_row = math::attention_keep_row(keep, bh, p.heads, S);
    auto at = [&](const std::vector<float>& m, int64_t row, int64_t e) { return double(m[static_cast<size_t>((bh * S + row) * d + e)]); };
    for (int64_t i = 0; i < S; ++i) {
      double mx = -INFINITY, sum = 0, m = 0, h = 0;
      for (int64_t e = 0; e < d; ++e) h += std::abs(at(b.dout, i, e) * at(b.context, i, e));
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0, abs_dot = 0;
        for (int64_t e = 0; e < d; ++e) {
          dot += at(in.q, i, e) * at(in.k, j, e);
          abs_dot += std::abs(at(in.q, i, e) * at(in.k, j, e));
        }
        s[static_cast<size_t>(j)] = p.scale * dot;
        m = std::max(m, abs_dot);
        if (math::attention_key_allowed(i, j, p.causal, keep_row)) mx = std::max(mx, s[static_cast<size_t>(j)]);
      }
      const double f = eps * (2 * (double(d) + 1) * (1 + p.scale * m) + 2 * (double(S) + 4));
      for (int64_t j = 0; j < S; ++j)
        if (math::attention_key_allowed(i, j, p.causal, keep_row)) sum += std::exp(s[static_cast<size_t>(j)] - mx);
      for (int64_t j = 0; j < S; ++j) {
        if (!math::attention_key_allowed(i, j, p.causal, keep_row)) continue;
        const double prob = std::exp(s[static_cast<size_t>(j)] - mx) / sum;
        double delta = 1;
        if (p.dropout_p > 0)
          delta = ptsim::runtime::dropout_keep(p.dropout_key, math::attention_dropout_index(bh, i, j, S), threshold)
                      ? drop_scale
                      : 0.0;
        double g = 0;
        for (int64_t e = 0; e < d; ++e) g += std::abs(at(b.dout, i, e) * at(in.v, j, e));
        const double bij = prob * (delta * g + h);
        for (int64_t e = 0; e < d; ++e) {  // each 16-bit dS and P̃ may also underflow by eta
          bq[static_cast<size_t>((bh * S + i) * d + e)] += p.scale * ((u + f) * bij + eta) * std::abs(at(in.k, j, e));
          bk[static_cast<size_t>((bh * S + j) * d + e)] += p.scale * ((u + f) * bij + eta) * std::abs(at(in.q, i, e));
          bv[static_cast<size_t>((bh * S + j) * d + e)] += ((u + f) * prob * delta + eta) * std::abs(at(b.dout, i, e));
        }
      }
    }
  }
  Gradients bound;
  for (size_t x = 0; x < bq.size(); ++x) {
    bound.dq.push_back(static_cast<float>(bq[x] + u * std::abs(double(ref.dq[x])) + eta));
    bound.dk.push_back(static_cast<float>(bk[x] + u * std::abs(double(ref.dk[x])) + eta));
    bound.dv.push_back(static_cast<float>(bv[x] + u * std::abs(double(ref.dv[x])) + eta));
  }
  return bound;
}

// dq, dk, dv of an implementation against the CPU reference within backward_bounds.
inline Verdict compare_backward(const Case& c, const Inputs& in, const BackwardInputs& b, const Gradients& got,
                                Format16 format) {
  const AttentionProblem p = problem_of(c);
  const Gradients ref = reference_backward(in, b, p, c.padded ? in.mask.data() : nullptr);
  const Gradients bound = backward_bounds(c, in, b, ref, format);
  Verdict v;
  auto check = [&](const char* name, const std::vector<float>& x, const std::vector<float>& r,
                   const std::vector<float>& bnd) {
    for (size_t e = 0; e < r.size(); ++e) {
      const double err = std::abs(double(x[e]) - double(r[e]));
      if (!(err <= double(bnd[e]))) {
        if (v.failures++ == 0)
          v.first_failure = c.label() + ": " + name + " element " + std::to_string(e) + " is " + sci(x[e]) +
                            ", reference " + sci(r[e]) + ", bound " + sci(bnd[e]);
      } else if (bnd[e] > 0) {
        v.worst = std::max(v.worst, err / double(bnd[e]));
      }
    }
  };
  check("dq", got.dq, ref.dq, bound.dq);
  check("dk", got.dk, ref.dk, bound.dk);
  check("dv", got.dv, ref.dv, bound.dv);
  return v;
}

// Each case's input seed.
inline uint64_t seed_of(const Case& c) { return 1000 + static_cast<uint64_t>(c.seq * 7 + c.head_dim); }

}  // namespace ptsim::test::attention_tc
