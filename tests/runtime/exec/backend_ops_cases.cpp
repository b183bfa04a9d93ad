// tests/runtime/exec/backend_ops_cases.cpp — the backend-ops harness's cases (see the header for how
// tolerances are expressed). Each block says what its c bounds. Sizes are odd on purpose (no kernel may
// assume a multiple of a warp or a vector width); sequence lengths 1, 7 and 128.
#include <fmt/format.h>

#include "tests/runtime/exec/backend_ops_cases.hpp"

namespace ptsim::test::backend_ops {
namespace {

using Values = std::vector<std::vector<double>>;
constexpr int64_t kSeqs[] = {1, 7, 128};

uint64_t next_seed() {
  static uint64_t seed = 20240;
  return ++seed;
}

void add_embedding(std::vector<Case>& out) {
  for (int64_t M : kSeqs) {
    const int64_t V = 37, H = 13;
    {  // forward: a copy of table rows (c = 0: the same floats)
      CaseBuilder b(fmt::format("embedding M={} V={} H={}", M, V, H), next_seed());
      const int table = b.normal("table", {V, H});
      const int ids = b.integers("ids", {M}, [&](int64_t i) { return (i * 7 + 3) % V; });
      const int y = b.output("y", {M, H});
      out.push_back(b.finish(OpKind::embedding, {table, ids}, {y}, {}, {exact()}));
    }
    {  // backward: dtable += rows of dy by id; ids repeat (i mod 5), so segments of up to ⌈M/5⌉ rows plus the
       // prior value: γ_{M+1} on Σ|terms| (abs run).
      CaseBuilder b(fmt::format("embedding_backward M={} V={} H={}", M, V, H), next_seed());
      const int dy = b.normal("dy", {M, H});
      const int ids = b.integers("ids", {M}, [&](int64_t i) { return (i % 5) * 7; });
      const int dtable = b.accumulator("dtable", {V, H});
      out.push_back(b.finish(OpKind::embedding_backward, {dy, ids}, {dtable}, {}, {sum_bound(double(M + 1))}));
    }
  }
}

void add_gather_rows(std::vector<Case>& out) {
  for (int64_t P : kSeqs) {
    const int64_t M = 11, N = 9;
    {
      CaseBuilder b(fmt::format("gather_rows P={} M={} N={}", P, M, N), next_seed());
      const int x = b.normal("x", {M, N});
      const int index = b.integers("index", {P}, [&](int64_t i) { return (i * 5 + 2) % M; });
      const int y = b.output("y", {P, N});
      out.push_back(b.finish(OpKind::gather_rows, {x, index}, {y}, {}, {exact()}));
    }
    {  // backward: zero, then segment sums of up to P rows: γ_P on Σ|terms|
      CaseBuilder b(fmt::format("gather_rows_backward P={} M={} N={}", P, M, N), next_seed());
      const int dy = b.normal("dy", {P, N});
      const int index = b.integers("index", {P}, [&](int64_t i) { return (i * 3) % M; });
      const int dx = b.output("dx", {M, N});
      out.push_back(b.finish(OpKind::gather_rows_backward, {dy, index}, {dx}, {}, {sum_bound(double(P + 1))}));
    }
  }
}

// C = alpha·op(A)·op(B) (+ C) (+ bias): γ_k for the k-term dot product, plus one rounding each for alpha,
// the accumulate add and the bias add: c = k + 3 on Σ|terms| (abs run).
void add_gemms(std::vector<Case>& out) {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{7, 13, 5}, {1, 33, 17}, {128, 65, 31}};
  int variant = 0;
  for (const Shape& s : shapes)
    for (int t = 0; t < 4; ++t) {
      models::OpAttrs a;
      a.gemm.m = s.m;
      a.gemm.n = s.n;
      a.gemm.k = s.k;
      a.gemm.trans_a = (t & 1) != 0;
      a.gemm.trans_b = (t & 2) != 0;
      a.gemm.alpha = variant % 3 == 0 ? 0.125 : 1.0;
      a.gemm.accumulate = variant % 2 == 1;
      a.gemm.has_bias = variant % 3 != 1;
      ++variant;
      CaseBuilder b(fmt::format("gemm m={} n={} k={} ta={} tb={} alpha={} acc={} bias={}", s.m, s.n, s.k,
                                a.gemm.trans_a, a.gemm.trans_b, a.gemm.alpha, a.gemm.accumulate, a.gemm.has_bias),
                    next_seed());
      const int A = a.gemm.trans_a ? b.normal("A", {s.k, s.m}) : b.normal("A", {s.m, s.k});
      const int B = a.gemm.trans_b ? b.normal("B", {s.n, s.k}) : b.normal("B", {s.k, s.n});
      std::vector<int> inputs = {A, B};
      if (a.gemm.has_bias) inputs.push_back(b.normal("bias", {s.n}));
      const int C = a.gemm.accumulate ? b.accumulator("C", {s.m, s.n}) : b.output("C", {s.m, s.n});
      out.push_back(b.finish(OpKind::gemm, inputs, {C}, a, {sum_bound(double(s.k + 3))}));
    }
  // Batched (the attention products): batch 3, no bias; same bound.
  const Shape batched[] = {{7, 7, 5}, {128, 128, 16}, {1, 1, 9}};
  for (const Shape& s : batched)
    for (int t = 0; t < 4; ++t) {
      models::OpAttrs a;
      a.gemm.batch = 3;
      a.gemm.m = s.m;
      a.gemm.n = s.n;
      a.gemm.k = s.k;
      a.gemm.trans_a = (t & 1) != 0;
      a.gemm.trans_b = (t & 2) != 0;
      a.gemm.alpha = 0.25;
      CaseBuilder b(fmt::format("batched_gemm 3×(m={} n={} k={}) ta={} tb={}", s.m, s.n, s.k, a.gemm.trans_a,
                                a.gemm.trans_b),
                    next_seed());
      const int A = a.gemm.trans_a ? b.normal("A", {3, s.k, s.m}) : b.normal("A", {3, s.m, s.k});
      const int B = a.gemm.trans_b ? b.normal("B", {3, s.n, s.k}) : b.normal("B", {3, s.k, s.n});
      const int C = b.output("C", {3, s.m, s.n});
      out.push_back(b.finish(OpKind::batched_gemm, {A, B}, {C}, a, {sum_bound(double(s.k + 3))}));
    }
}

// A linear layer's weight-gradient GEMM dW (out, in) += dYᵀ·X followed by the bias_grad of the same dY
// (tokens, out): the pair the CUDA backend runs as one cuBLASLt call with the BGRADB epilogue
// (lt_gemm_plan.hpp) unless PTSIM_CUDA_GEMM_EPILOGUES=0; the CPU runs the two ops. dW: c = k + 3 as
// add_gemms. dbias: cuBLASLt's reduction order is not the CPU's, and any order of an M-term sum is within
// γ_{M−1}·Σ|dy| (Higham, Accuracy and Stability of Numerical Algorithms, 2nd ed., §4.2, eq. (4.4)); adding
// the vector into dbias is one more rounding: c = M + 1 on Σ|terms|, the unfused bias_grad's bound.
void add_weight_grad_with_bias_grad(std::vector<Case>& out) {
  const int64_t features_out = 19, features_in = 13;
  for (int64_t tokens : kSeqs) {
    CaseBuilder b(fmt::format("gemm (weight gradient) + bias_grad tokens={} out={} in={}", tokens, features_out,
                              features_in),
                  next_seed());
    const int dy = b.normal("dY", {tokens, features_out});
    const int x = b.normal("X", {tokens, features_in});
    const int dw = b.accumulator("dW", {features_out, features_in});
    const int db = b.accumulator("dbias", {features_out});
    models::OpAttrs g;
    g.gemm.m = features_out;
    g.gemm.n = features_in;
    g.gemm.k = tokens;
    g.gemm.trans_a = true;
    g.gemm.accumulate = true;
    b.leading_op(OpKind::gemm, {dy, x}, {dw}, g);
    out.push_back(b.finish(OpKind::bias_grad, {dy}, {db}, {},
                           {sum_bound(double(tokens + 3)), sum_bound(double(tokens + 1))}));
  }
}

void add_elementwise(std::vector<Case>& out) {
  for (int64_t M : kSeqs) {  // bias_grad: dbias += M-term column sums: γ_{M+1} on Σ|terms|
    CaseBuilder b(fmt::format("bias_grad M={} N=19", M), next_seed());
    const int dy = b.normal("dy", {M, 19});
    const int db = b.accumulator("dbias", {19});
    out.push_back(b.finish(OpKind::bias_grad, {dy}, {db}, {}, {sum_bound(double(M + 1))}));
  }
  for (int count : {1, 2, 3, 9}) {  // add: count − 1 additions, γ_{count−1} on Σ|x| (9 > 8: two CUDA launches)
    CaseBuilder b(fmt::format("add {} inputs n=1001", count), next_seed());
    std::vector<int> xs;
    for (int i = 0; i < count; ++i) xs.push_back(b.normal(fmt::format("x{}", i), {1001}));
    const int y = b.output("y", {1001});
    out.push_back(b.finish(OpKind::add, xs, {y}, {}, {sum_bound(double(count))}));
  }
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{4097}})
    for (double p : {0.0, 0.1, 1.0}) {
      models::OpAttrs a;
      a.dropout_p = p;
      a.rng_stream = 5;
      {  // y = x·(1/(1−p)): the scale's rounding and the product, c = 2; the mask bit for bit
        CaseBuilder b(fmt::format("dropout n={} p={}", n, p), next_seed());
        const int x = b.normal("x", {n});
        const int y = b.output("y", {n});
        const int mask = b.output("mask", {n}, DType::u8);
        out.push_back(b.finish(OpKind::dropout, {x}, {y, mask}, a, {sum_bound(2), exact()}));
      }
      {
        CaseBuilder b(fmt::format("dropout_backward n={} p={}", n, p), next_seed());
        const int dy = b.normal("dy", {n});
        const int mask = b.integers("mask", {n}, [](int64_t i) { return (i * 2654435761u >> 7) % 3 != 0; }, DType::u8);
        const int dx = b.output("dx", {n});
        out.push_back(b.finish(OpKind::dropout_backward, {dy, mask}, {dx}, a, {sum_bound(2)}));
      }
    }
  // GELU and tanh: f32 libm-level functions are accurate to a few ulp (CUDA's erff/tanhf/expf: ≤ 2 ulp,
  // CUDA C Programming Guide, "Mathematical Functions"; Eigen's vectorised float versions similar), a
  // handful of roundings around them; derivatives combine two such terms. Normwise c: 16 forward, 32 backward.
  for (bool tanh_form : {false, true}) {
    models::OpAttrs a;
    a.gelu_tanh = tanh_form;
    {
      CaseBuilder b(fmt::format("gelu tanh_form={} n=1000", tanh_form), next_seed());
      const int x = b.normal("x", {1000}, 2.0);
      const int y = b.output("y", {1000});
      out.push_back(b.finish(OpKind::gelu, {x}, {y}, a, {normwise(16)}));
    }
    {
      CaseBuilder b(fmt::format("gelu_backward tanh_form={} n=1000", tanh_form), next_seed());
      const int dy = b.normal("dy", {1000});
      const int x = b.normal("x", {1000}, 2.0);
      const int dx = b.output("dx", {1000});
      out.push_back(b.finish(OpKind::gelu_backward, {dy, x}, {dx}, a, {normwise(32)}));
    }
  }
  {
    CaseBuilder b("tanh n=999", next_seed());
    const int x = b.normal("x", {999}, 2.0);
    const int y = b.output("y", {999});
    out.push_back(b.finish(OpKind::tanh, {x}, {y}, {}, {normwise(8)}));
  }
  {  // dy·(1 − y²): three roundings
    CaseBuilder b("tanh_backward n=999", next_seed());
    const int dy = b.normal("dy", {999});
    const int y = b.uniform("y", {999}, -1.0, 1.0);
    const int dx = b.output("dx", {999});
    out.push_back(b.finish(OpKind::tanh_backward, {dy, y}, {dx}, {}, {normwise(8)}));
  }
  for (int64_t S : kSeqs) {  // split/merge heads: permutations (c = 0)
    const int64_t B = 2, nh = 3, d = 5;
    models::OpAttrs a;
    a.batch = B;
    a.seq = S;
    a.heads = nh;
    a.head_dim = d;
    {
      CaseBuilder b(fmt::format("split_heads B={} S={} nh={} d={}", B, S, nh, d), next_seed());
      const int x = b.normal("x", {B * S, nh * d});
      const int y = b.output("y", {B * nh, S, d});
      out.push_back(b.finish(OpKind::split_heads, {x}, {y}, a, {exact()}));
    }
    {
      CaseBuilder b(fmt::format("merge_heads B={} S={} nh={} d={}", B, S, nh, d), next_seed());
      const int x = b.normal("x", {B * nh, S, d});
      const int y = b.output("y", {B * S, nh * d});
      out.push_back(b.finish(OpKind::merge_heads, {x}, {y}, a, {exact()}));
    }
  }
}

// LayerNorm over rows of N. Inputs N(0.5, 1) so means are not near 0.
// Forward: the mean is an N-term sum, γ_{N+1} on mean|x| (abs run); the variance's two-pass sum carries
// γ_{N+2} relative error and rstd half of it plus the sqrt and division (c = N + 8, normwise since rstd > 0);
// y = x̂·gamma + beta inherits both plus three roundings: c = 2N + 16 normwise.
// Backward: dx combines two N-term row means (γ_N each on Σ|terms| ≤ N·max|g|·max|x̂|): c = 4N + 32
// normwise; dbeta += Σ_m dy is linear (γ_{M+1}, abs run); dgamma += Σ_m dy·x̂: γ_{M+3} (x̂ adds two
// roundings) on S = max_n (|prior| + Σ_m |dy·x̂|), computed from the inputs.
void add_layernorm(std::vector<Case>& out) {
  const int64_t widths[] = {13, 768};
  for (int64_t M : kSeqs)
    for (int64_t N : widths) {
      models::OpAttrs a;
      a.epsilon = N == 13 ? 1e-5 : 1e-12;
      const double n = static_cast<double>(N), m = static_cast<double>(M);
      {
        CaseBuilder b(fmt::format("layernorm M={} N={}", M, N), next_seed());
        const int x = b.normal("x", {M, N}, 1.0, 0.5);
        const int gamma = b.normal("gamma", {N}, 0.3, 1.0);
        const int beta = b.normal("beta", {N}, 0.1);
        const int y = b.output("y", {M, N}), mean = b.output("mean", {M}), rstd = b.output("rstd", {M});
        out.push_back(b.finish(OpKind::layernorm, {x, gamma, beta}, {y, mean, rstd}, a,
                               {normwise(2 * n + 16), sum_bound(n + 1), normwise(n + 8)}));
      }
      {
        CaseBuilder b(fmt::format("layernorm_backward M={} N={}", M, N), next_seed());
        const int dy = b.normal("dy", {M, N});
        const int x = b.normal("x", {M, N}, 1.0, 0.5);
        const int gamma = b.normal("gamma", {N}, 0.3, 1.0);
        const int mean = b.normal("mean", {M}, 0.1, 0.5);
        const int rstd = b.uniform("rstd", {M}, 0.5, 2.0);
        const int dx = b.output("dx", {M, N});
        const int dgamma = b.accumulator("dgamma", {N});
        const int dbeta = b.accumulator("dbeta", {N});
        Tolerance dgamma_tol{m + 3, Scale::custom, [=](const Values& v, const Values&) {
                               double worst = 0;
                               for (int64_t c = 0; c < N; ++c) {
                                 double s = std::abs(v[dgamma][c]);
                                 for (int64_t r = 0; r < M; ++r)
                                   s += std::abs(v[dy][r * N + c] * (v[x][r * N + c] - v[mean][r]) * v[rstd][r]);
                                 worst = std::max(worst, s);
                               }
                               return worst;
                             }};
        out.push_back(b.finish(OpKind::layernorm_backward, {dy, x, gamma, mean, rstd}, {dx, dgamma, dbeta}, a,
                               {normwise(4 * n + 32), dgamma_tol, sum_bound(m + 1)}));
      }
    }
}

// Softmax over rows of S keys, padding mask (batch 1 pads its last third of keys) and causal variants.
// Forward: p_j = exp(s_j − max)/Σ exp: the positive-term sum has relative error γ_S, exp and the division a
// few ulp: c = S + 8 normwise (p ≤ 1). Backward: ds_j = p_j·(dp_j − Σ_k dp_k·p_k): γ_S on the dot's
// Σ|dp·p| plus two roundings, on S = max_j p_j·(|dp_j| + Σ_k |dp_k·p_k|) from the inputs: c = S + 4.
void add_softmax(std::vector<Case>& out) {
  for (int64_t S : kSeqs)
    for (bool causal : {false, true}) {
      const int64_t B = 2, nh = 3, rows = B * nh * S;
      models::OpAttrs a;
      a.batch = B;
      a.heads = nh;
      a.seq = S;
      a.causal = causal;
      {
        CaseBuilder b(fmt::format("softmax B={} nh={} S={} causal={} padded", B, nh, S, causal), next_seed());
        const int scores = b.normal("scores", {B * nh, S, S}, 3.0);
        const int mask = b.integers("mask", {B, S}, [&](int64_t i) { return i / S == 0 || i % S < S - S / 3; });
        const int probs = b.output("probs", {B * nh, S, S});
        out.push_back(b.finish(OpKind::softmax, {scores, mask}, {probs}, a, {normwise(double(S + 8))}));
      }
      if (causal) continue;  // the backward does not depend on the mask
      CaseBuilder b(fmt::format("softmax_backward rows={} S={}", rows, S), next_seed());
      const int dprobs = b.normal("dprobs", {B * nh, S, S});
      const int probs = b.uniform("probs", {B * nh, S, S}, 0.0, 1.0);
      const int ds = b.output("dscores", {B * nh, S, S});
      Tolerance t{double(S + 4), Scale::custom, [=](const Values& v, const Values&) {
                    double worst = 0;
                    for (int64_t r = 0; r < rows; ++r) {
                      double dot = 0;
                      for (int64_t j = 0; j < S; ++j) dot += std::abs(v[dprobs][r * S + j] * v[probs][r * S + j]);
                      for (int64_t j = 0; j < S; ++j)
                        worst = std::max(worst, v[probs][r * S + j] * (std::abs(v[dprobs][r * S + j]) + dot));
                    }
                    return worst;
                  }};
      out.push_back(b.finish(OpKind::softmax_backward, {dprobs, probs}, {ds}, a, {t}));
    }
}

// Cross-entropy over C = 37 classes of which 33 are valid; labels −1 on every third row (ignored).
// Forward: lse = max + log Σ exp over V classes: the sum's relative error γ_V becomes an absolute error
// γ_V in the log, lse ≈ 4 here, so c = V + 8 normwise; the loss is the mean over ≤ P rows of lse − z[label]
// (each ≤ (V + 8)u·|lse| + one rounding), added in double: c = V + 10 on S = max|lse| + max|z|.
// Backward: scale·exp(z − lse): exp's error grows with |z − lse| (≤ 8 here) in units of u, plus the scale
// and subtraction: c = 32 normwise.
void add_cross_entropy(std::vector<Case>& out) {
  for (int64_t P : kSeqs)
    for (bool none_labelled : {false, true}) {
      if (none_labelled && P != 7) continue;
      const int64_t C = 37, V = 33;
      models::OpAttrs a;
      a.valid_classes = V;
      auto label = [&](int64_t i) -> int64_t { return none_labelled || i % 3 == 1 ? -1 : (i * 11) % V; };
      {
        CaseBuilder b(fmt::format("cross_entropy P={} C={} valid={}{}", P, C, V, none_labelled ? " unlabelled" : ""),
                      next_seed());
        const int logits = b.normal("logits", {P, C}, 2.0);
        const int labels = b.integers("labels", {P}, label);
        const int loss = b.output("loss", {1}), lse = b.output("lse", {P});
        Tolerance loss_tol{double(V + 10), Scale::custom, [=](const Values& v, const Values& ref) {
                             double s = 0;
                             for (double l : ref[1]) s = std::max(s, std::abs(l));
                             double z = 0;
                             for (double l : v[logits]) z = std::max(z, std::abs(l));
                             return s + z;
                           }};
        out.push_back(b.finish(OpKind::cross_entropy, {logits, labels}, {loss, lse}, a,
                               {loss_tol, normwise(double(V + 8))}));
      }
      {
        CaseBuilder b(fmt::format("cross_entropy_backward P={} C={} valid={}{}", P, C, V,
                                  none_labelled ? " unlabelled" : ""),
                      next_seed());
        const int dloss = b.uniform("dloss", {1}, 0.5, 2.0);
        const int logits = b.normal("logits", {P, C}, 2.0);
        const int labels = b.integers("labels", {P}, label);
        const int lse = b.normal("lse", {P}, 0.1, 4.0);
        const int dlogits = b.output("dlogits", {P, C});
        out.push_back(b.finish(OpKind::cross_entropy_backward, {dloss, logits, labels, lse}, {dlogits}, a,
                               {normwise(32)}));
      }
    }
}

// The fused dropout ops (softmax_dropout, bias_dropout_residual): their masks bit for bit (c = 0, the
// shared hash at the unfused op's indices); values as the unfused ops' bounds composed.
// softmax_dropout: probs as softmax (c = S + 8 normwise); dropped = probs·scale adds the scale's and the
// product's roundings (c = S + 10) on S = scale·max|probs| (the kept elements' bound; max|dropped| would be
// smaller when the largest probability is dropped). Backward: softmax_backward's bound plus the dropout
// product's rounding in each dp (c = S + 6) on max_j p_j·(|dp_j| + Σ_k |dp_k·p_k|), dp = ddropped·mask·scale.
void add_softmax_dropout(std::vector<Case>& out) {
  for (int64_t S : kSeqs)
    for (double p : {0.1, 1.0}) {
      if (p >= 1.0 && S != 7) continue;
      const int64_t B = 2, nh = 3, rows = B * nh * S;
      const double scale = p >= 1.0 ? 0.0 : 1.0 / (1.0 - p);
      models::OpAttrs a;
      a.batch = B;
      a.heads = nh;
      a.seq = S;
      a.causal = S == 7;
      a.dropout_p = p;
      a.rng_stream = 9;
      {
        CaseBuilder b(fmt::format("softmax_dropout B={} nh={} S={} causal={} p={} padded", B, nh, S, a.causal, p),
                      next_seed());
        const int scores = b.normal("scores", {B * nh, S, S}, 3.0);
        const int mask = b.integers("mask", {B, S}, [&](int64_t i) { return i / S == 0 || i % S < S - S / 3; });
        const int dropped = b.output("dropped", {B * nh, S, S});
        const int probs = b.output("probs", {B * nh, S, S});
        const int keep = b.output("keep", {B * nh, S, S}, DType::u8);
        Tolerance dropped_tol{double(S + 10), Scale::custom, [=](const Values&, const Values& ref) {
                                double m = 0;
                                for (double v : ref[1]) m = std::max(m, std::abs(v));
                                return scale * m;
                              }};
        out.push_back(b.finish(OpKind::softmax_dropout, {scores, mask}, {dropped, probs, keep}, a,
                               {dropped_tol, normwise(double(S + 8)), exact()}));
      }
      if (p >= 1.0) continue;
      CaseBuilder b(fmt::format("softmax_dropout_backward rows={} S={} p={}", rows, S, p), next_seed());
      const int ddropped = b.normal("ddropped", {B * nh, S, S});
      const int probs = b.uniform("probs", {B * nh, S, S}, 0.0, 1.0);
      const int keep = b.integers("keep", {B * nh, S, S}, [](int64_t i) { return (i * 2654435761u >> 7) % 5 != 0; },
                                  DType::u8);
      const int ds = b.output("dscores", {B * nh, S, S});
      Tolerance t{double(S + 6), Scale::custom, [=](const Values& v, const Values&) {
                    double worst = 0;
                    auto dp = [&](int64_t i) { return v[keep][i] != 0 ? v[ddropped][i] * scale : 0.0; };
                    for (int64_t r = 0; r < rows; ++r) {
                      double dot = 0;
                      for (int64_t j = 0; j < S; ++j) dot += std::abs(dp(r * S + j) * v[probs][r * S + j]);
                      for (int64_t j = 0; j < S; ++j)
                        worst = std::max(worst, v[probs][r * S + j] * (std::abs(dp(r * S + j)) + dot));
                    }
                    return worst;
                  }};
      out.push_back(b.finish(OpKind::softmax_dropout_backward, {ddropped, probs, keep}, {ds}, a, {t}));
    }
}

// bias_dropout_residual: out = r + (y + b)·scale: the bias add, the scale, the product and the residual add,
// c = 4 on Σ|terms| (abs run: |r| + (|y| + |b|)·scale); with p = 1 everything is dropped (out = r exactly
// within the same bound), without dropout no mask output. Backward: dy = dout·scale (c = 2, abs run);
// dbias += M-row column sums of dy: γ_{M+1} plus dy's two roundings, c = M + 3 on Σ|terms| (abs run).
void add_bias_dropout_residual(std::vector<Case>& out) {
  const int64_t N = 19;
  for (int64_t M : kSeqs)
    for (double p : {0.1, 1.0, 0.0}) {
      if (p >= 1.0 && M != 7) continue;
      const bool dropout = p > 0;
      models::OpAttrs a;
      a.rows = M;
      a.cols = N;
      a.dropout_p = p;
      a.rng_stream = dropout ? 4 : 0;
      {
        CaseBuilder b(fmt::format("bias_dropout_residual M={} N={} p={}{}", M, N, p, dropout ? "" : " (no mask)"),
                      next_seed());
        const int y = b.normal("y", {M, N});
        const int bias = b.normal("bias", {N}, 0.5);
        const int residual = b.normal("residual", {M, N});
        std::vector<int> outputs = {b.output("out", {M, N})};
        std::vector<Tolerance> tolerances = {sum_bound(4)};
        if (dropout) {
          outputs.push_back(b.output("mask", {M, N}, DType::u8));
          tolerances.push_back(exact());
        }
        out.push_back(b.finish(OpKind::bias_dropout_residual, {y, bias, residual}, outputs, a, tolerances));
      }
      if (p >= 1.0) continue;
      CaseBuilder b(fmt::format("bias_dropout_residual_backward M={} N={} p={}{}", M, N, p,
                                dropout ? "" : " (no mask)"),
                    next_seed());
      std::vector<int> inputs = {b.normal("dout", {M, N})};
      if (dropout)
        inputs.push_back(b.integers("mask", {M, N}, [](int64_t i) { return (i * 2654435761u >> 7) % 7 != 0; },
                                    DType::u8));
      const int dy = b.output("dy", {M, N});
      const int dbias = b.accumulator("dbias", {N});
      out.push_back(b.finish(OpKind::bias_dropout_residual_backward, inputs, {dy, dbias}, a,
                             {sum_bound(2), sum_bound(double(M + 3))}));
    }
}

}  // namespace

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  add_embedding(cases);
  add_gather_rows(cases);
  add_gemms(cases);
  add_weight_grad_with_bias_grad(cases);
  add_elementwise(cases);
  add_layernorm(cases);
  add_softmax(cases);
  add_softmax_dropout(cases);
  add_bias_dropout_residual(cases);
  add_cross_entropy(cases);
  add_fused_attention(cases);
  return cases;
}

}  // namespace ptsim::test::backend_ops
