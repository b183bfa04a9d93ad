// tests/runtime/exec/backend_ops_attention_cases.cpp — the backend-ops harness's fused attention cases
// (OpKind::fused_attention and fused_attention_backward): B = 2, nh = 2, seq 1, 7, 128, head dims 64 and
// 128 (and an odd 37 at seq 7), padding mask, causal, and padding mask with dropout. The backward cases
// read a forward computed here in f64 (context, lse), so their inputs are a consistent forward state.
//
// Tolerances (units of u; backend_ops_cases.hpp). Let a = max over allowed (i, j) of scale·Σ_e |q_ie·k_je|
// (the scores' absolute-value bound). Each probability P_ij = exp(s_ij − max)/Σ carries a relative error
// ≤ (d + 2)·u·(1 + a) from the score's d-term dot product and the exp of its rounding, plus (S + 8)·u from
// the row sum (S terms), the online rescales (one per key tile) and the division: at most
// (S + d + 16)·(1 + a)·u. Then:
//   * lse = max + log Σ: the same absolute error: c = S + d + 16 on scale 1 + a;
//   * context_ie = Σ_j P̃_ij·v_je (P̃ dropped: ≤ P/(1 − p)): the P errors plus γ_S for the sum:
//     c = 2S + 2d + 32 on scale (1 + a)·max_ie Σ_j P̃_ij·|v_je|;
//   * dv_je = Σ_i P̃_ij·dO_ie: same c on scale (1 + a)·max_je Σ_i P̃_ij·|dO_ie|;
//   * dq, dk: dS_ij = P_ij·(dP_ij − D_i), dP the d-term dot dO_i·v_j (scaled by the dropout), D_i the d-term
//     dot dO_i·O_i: |dS| and its absolute error are bounded by A_ij = P_ij·(Σ_e |dO_ie·v_je|/(1 − p) +
//     Σ_e |dO_ie·O_ie|) times (S + 2d + 16)·(1 + a)·u; dq_ie = scale·Σ_j dS_ij·k_je adds γ_S:
//     c = 2S + 2d + 32 on scale scale·(1 + a)·max_ie Σ_j A_ij·|k_je| (dk: Σ_i A_ij·|q_ie|).
// The CUDA kernel accumulates in fp32 as the CPU's f32 path does, in a different order; the bounds are
// order-independent.
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "runtime/exec/dropout_mask.hpp"  // defines: dropout_key, dropout_keep, dropout_threshold
#include "runtime/exec/math/attention_math.hpp"
#include "tests/runtime/exec/backend_ops_cases.hpp"

namespace ptsim::test::backend_ops {
namespace {

using Values = std::vector<std::vector<double>>;

struct Shape {
  int64_t batch = 2, heads = 2, seq = 7, head_dim = 64;
  bool padded = false, causal = false;
  double dropout = 0;
  int64_t bh() const { return batch * heads; }
  double scale() const { return 1.0 / std::sqrt(static_cast<double>(head_dim)); }
};

constexpr uint64_t kRngStream = 9;

uint64_t next_attention_seed() {  // its own series (backend_ops_cases.cpp's starts at 20241)
  static uint64_t seed = 40960;
  return ++seed;
}

// The harness's OpContext (test_backend_ops.cpp: seed 42, step 3, micro-step 1) and this op's stream.
uint64_t harness_dropout_key() { return runtime::dropout_key(42, 3, 1, kRngStream); }

// The f64 forward: probabilities P [bh, S, S] (undropped), their dropped values, context and lse.
struct Forward {
  std::vector<double> probs, dropped, context, lse;
  double score_bound = 0;  // a: max scale·Σ|q·k| over allowed pairs
};

Forward forward_f64(const Shape& s, const std::vector<double>& q, const std::vector<double>& k,
                    const std::vector<double>& v, const std::vector<double>& mask) {
  const int64_t S = s.seq, d = s.head_dim;
  const uint64_t threshold = runtime::dropout_threshold(s.dropout), key = harness_dropout_key();
  const double keep_scale = 1.0 / (1.0 - s.dropout);
  Forward f;
  f.probs.assign(static_cast<size_t>(s.bh() * S * S), 0.0);
  f.dropped = f.probs;
  f.context.assign(static_cast<size_t>(s.bh() * S * d), 0.0);
  f.lse.assign(static_cast<size_t>(s.bh() * S), INFINITY);
  std::vector<int32_t> keep;
  for (double m : mask) keep.push_back(static_cast<int32_t>(m));
  for (int64_t bh = 0; bh < s.bh(); ++bh) {
    const int32_t* keep_row = runtime::math::attention_keep_row(s.padded ? keep.data() : nullptr, bh, s.heads, S);
    for (int64_t i = 0; i < S; ++i) {
      std::vector<double> score(static_cast<size_t>(S), 0.0);
      double mx = -INFINITY;
      for (int64_t j = 0; j < S; ++j) {
        if (!runtime::math::attention_key_allowed(i, j, s.causal, keep_row)) continue;
        double dot = 0, abs_dot = 0;
        for (int64_t e = 0; e < d; ++e) {
          dot += q[(bh * S + i) * d + e] * k[(bh * S + j) * d + e];
          abs_dot += std::abs(q[(bh * S + i) * d + e] * k[(bh * S + j) * d + e]);
        }
        score[static_cast<size_t>(j)] = s.scale() * dot;
        f.score_bound = std::max(f.score_bound, s.scale() * abs_dot);
        mx = std::max(mx, score[static_cast<size_t>(j)]);
      }
      if (mx == -INFINITY) continue;
      double sum = 0;
      for (int64_t j = 0; j < S; ++j)
        if (runtime::math::attention_key_allowed(i, j, s.causal, keep_row)) sum += std::exp(score[j] - mx);
      f.lse[static_cast<size_t>(bh * S + i)] = mx + std::log(sum);
      for (int64_t j = 0; j < S; ++j) {
        if (!runtime::math::attention_key_allowed(i, j, s.causal, keep_row)) continue;
        const size_t at = static_cast<size_t>((bh * S + i) * S + j);
        f.probs[at] = std::exp(score[j] - mx) / sum;
        const bool kept = s.dropout == 0 || runtime::dropout_keep(key, at, threshold);
        f.dropped[at] = kept ? f.probs[at] * (s.dropout > 0 ? keep_scale : 1.0) : 0.0;
        for (int64_t e = 0; e < d; ++e) f.context[(bh * S + i) * d + e] += f.dropped[at] * v[(bh * S + j) * d + e];
      }
    }
  }
  return f;
}

std::vector<double> mask_values(const Shape& s) {
  std::vector<double> m;
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t j = 0; j < s.seq; ++j) m.push_back(b == 0 || j < s.seq - s.seq / 3 ? 1 : 0);
  return m;
}

models::OpAttrs attrs_of(const Shape& s) {
  models::OpAttrs a;
  a.batch = s.batch;
  a.heads = s.heads;
  a.seq = s.seq;
  a.head_dim = s.head_dim;
  a.causal = s.causal;
  a.gemm.alpha = s.scale();
  a.dropout_p = s.dropout;
  a.rng_stream = kRngStream;
  return a;
}

std::string label_of(const char* op, const Shape& s) {
  return fmt::format("{} B={} nh={} S={} d={}{}{}{}", op, s.batch, s.heads, s.seq, s.head_dim,
                     s.padded ? " padded" : "", s.causal ? " causal" : "", s.dropout > 0 ? " dropout" : "");
}

// Σ over the other index of weights·|x|, maximised: max_{r,e} Σ_t w(r, t)·|x[(bh·S + t)·d + e]|.
double max_weighted_sum(const Shape& s, const std::function<double(int64_t, int64_t, int64_t)>& w,
                        const std::vector<double>& x) {
  const int64_t S = s.seq, d = s.head_dim;
  double worst = 0;
  for (int64_t bh = 0; bh < s.bh(); ++bh)
    for (int64_t r = 0; r < S; ++r)
      for (int64_t e = 0; e < d; ++e) {
        double sum = 0;
        for (int64_t t = 0; t < S; ++t) sum += w(bh, r, t) * std::abs(x[(bh * S + t) * d + e]);
        worst = std::max(worst, sum);
      }
  return worst;
}

void add_forward_case(std::vector<Case>& out, const Shape& s) {
  CaseBuilder b(label_of("fused_attention", s), next_attention_seed());
  const std::vector<int64_t> shape = {s.bh(), s.seq, s.head_dim};
  const int q = b.normal("q", shape), k = b.normal("k", shape), v = b.normal("v", shape);
  std::vector<int> inputs = {q, k, v};
  if (s.padded) {
    const std::vector<double> m = mask_values(s);
    inputs.push_back(b.integers("attention_mask", {s.batch, s.seq}, [&](int64_t i) { return static_cast<int64_t>(m[static_cast<size_t>(i)]); }));
  }
  const int context = b.output("context", shape), lse = b.output("lse", {s.bh(), s.seq});
  const double c = double(2 * s.seq + 2 * s.head_dim + 32);
  const size_t mask_id = s.padded ? static_cast<size_t>(inputs[3]) : 0;
  auto fwd = [=](const Values& val) {
    return forward_f64(s, val[q], val[k], val[v], s.padded ? val[mask_id] : std::vector<double>{});
  };
  Tolerance context_tol{c, Scale::custom, [=](const Values& val, const Values&) {
                          const Forward f = fwd(val);
                          auto w = [&](int64_t bh, int64_t i, int64_t j) { return f.dropped[(bh * s.seq + i) * s.seq + j]; };
                          return (1 + f.score_bound) * max_weighted_sum(s, w, val[v]);
                        }};
  Tolerance lse_tol{double(s.seq + s.head_dim + 16), Scale::custom,
                    [=](const Values& val, const Values&) { return 1 + fwd(val).score_bound; }};
  out.push_back(b.finish(OpKind::fused_attention, inputs, {context, lse}, attrs_of(s), {context_tol, lse_tol}));
}

void add_backward_case(std::vector<Case>& out, const Shape& s) {
  CaseBuilder b(label_of("fused_attention_backward", s), next_attention_seed());
  const std::vector<int64_t> shape = {s.bh(), s.seq, s.head_dim};
  const int dout = b.normal("dcontext", shape);
  const int q = b.normal("q", shape), k = b.normal("k", shape), v = b.normal("v", shape);
  const Values& seeded = b.values();
  const std::vector<double> m = s.padded ? mask_values(s) : std::vector<double>{};
  const Forward f0 = forward_f64(s, seeded[q], seeded[k], seeded[v], m);
  const int context = b.given("context", shape, f0.context), lse = b.given("lse", {s.bh(), s.seq}, f0.lse);
  std::vector<int> inputs = {dout, q, k, v, context, lse};
  if (s.padded) inputs.push_back(b.integers("attention_mask", {s.batch, s.seq}, [&](int64_t i) { return static_cast<int64_t>(m[static_cast<size_t>(i)]); }));
  const int dq = b.output("dq", shape), dk = b.output("dk", shape), dv = b.output("dv", shape);
  const double c = double(2 * s.seq + 2 * s.head_dim + 32);
  const double keep_scale = 1.0 / (1.0 - s.dropout);
  // A_ij = P_ij·(Σ_e |dO_ie·v_je|/(1 − p) + Σ_e |dO_ie·O_ie|): dS's magnitude-and-error bound (header).
  auto abs_ds = [=](const Values& val, const Forward& f, int64_t bh, int64_t i, int64_t j) {
    const int64_t S = s.seq, d = s.head_dim;
    double dp = 0, dd = 0;
    for (int64_t e = 0; e < d; ++e) {
      dp += std::abs(val[dout][(bh * S + i) * d + e] * val[v][(bh * S + j) * d + e]);
      dd += std::abs(val[dout][(bh * S + i) * d + e] * val[context][(bh * S + i) * d + e]);
    }
    return f.probs[(bh * S + i) * S + j] * (dp * keep_scale + dd);
  };
  auto fwd = [=](const Values& val) { return forward_f64(s, val[q], val[k], val[v], m); };
  Tolerance dq_tol{c, Scale::custom, [=](const Values& val, const Values&) {
                     const Forward f = fwd(val);
                     auto w = [&](int64_t bh, int64_t i, int64_t j) { return abs_ds(val, f, bh, i, j); };
                     return s.scale() * (1 + f.score_bound) * max_weighted_sum(s, w, val[k]);
                   }};
  Tolerance dk_tol{c, Scale::custom, [=](const Values& val, const Values&) {
                     const Forward f = fwd(val);
                     auto w = [&](int64_t bh, int64_t j, int64_t i) { return abs_ds(val, f, bh, i, j); };
                     return s.scale() * (1 + f.score_bound) * max_weighted_sum(s, w, val[q]);
                   }};
  Tolerance dv_tol{c, Scale::custom, [=](const Values& val, const Values&) {
                     const Forward f = fwd(val);
                     auto w = [&](int64_t bh, int64_t j, int64_t i) { return f.dropped[(bh * s.seq + i) * s.seq + j]; };
                     return (1 + f.score_bound) * max_weighted_sum(s, w, val[dout]);
                   }};
  out.push_back(b.finish(OpKind::fused_attention_backward, inputs, {dq, dk, dv}, attrs_of(s), {dq_tol, dk_tol, dv_tol}));
}

}  // namespace

void add_fused_attention(std::vector<Case>& out) {
  std::vector<Shape> shapes;
  for (int64_t S : {1, 7, 128})
    for (int64_t d : {64, 128})
      for (int variant = 0; variant < 3; ++variant) {
        Shape s;
        s.seq = S;
        s.head_dim = d;
        s.padded = variant != 1;
        s.causal = variant == 1;
        s.dropout = variant == 2 ? 0.1 : 0.0;
        shapes.push_back(s);
      }
  Shape odd;  // an odd head dim: the kernels may not assume 64 or 128 columns
  odd.head_dim = 37;
  odd.padded = true;
  shapes.push_back(odd);
  for (const Shape& s : shapes) {
    add_forward_case(out, s);
    add_backward_case(out, s);
  }
}

}  // namespace ptsim::test::backend_ops
