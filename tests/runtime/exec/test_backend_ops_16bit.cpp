// tests/runtime/exec/test_backend_ops_16bit.cpp — the 16-bit GEMM harness (suite gpu): bf16 and fp16 GEMMs
// on the CUDA backend's native path (cuBLASLt / cuBLAS on CUDA_R_16BF / 16F with fp32 accumulation,
// gemm_types.hpp) against the CPU backend's 16-bit boundary (widen exactly, fp32 GEMM, round once) on the
// same 16-bit inputs: all four transposes, odd sizes, with and without alpha, accumulation and a bias (of
// D's type: cuBLASLt's BIAS epilogue; fp32: the finishing kernel), 16-bit and fp32 C, the weight-gradient
// GEMM with the next bias_grad in BGRADB (fp32 dW and dbias), and the batched attention products.
//   test_backend_ops_16bit cuda — exit 77 (meson: skipped) without a CUDA build or a GPU
// bf16 cases on a GPU below sm_80 must be refused with the compute-capability message (they are then
// skipped); fp16 runs on sm_70+.
//
// Tolerance per element, u32 = 2^-24, u16 = D's unit roundoff (bf16 2^-8, fp16 2^-11, 0 for an fp32 D),
// S = |alpha|·Σ|a||b| + |C| + |bias| (the CPU run on |inputs|), k the reduction length:
//   |d_cuda − d_cpu| ≤ 2·(k + 3)·u32·S + 1.01·u16·(|d_cuda| + |d_cpu|)
// Each side's fp32 result is within (k + 3)·u32·S of the exact value (γ_k for the dot product in any order,
// one rounding each for alpha, + C, + bias: the fp32 harness's GEMM bound, backend_ops_cases.cpp), and each
// rounds it to D's type once (≤ 1.01·u16·|result|). dbias of the fused pair: 2·(M + 1)·u32·(Σ|dy| + |dbias|)
// (two M-term sums in different orders, one add each). The whole bound is what the CPU-side derivation in
// test_lt_gemm_16bit.cpp uses, doubled on the fp32 side because neither side here is exact.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "runtime/exec/backend.hpp"
#include "tests/runtime/exec/gemm_16bit_support.hpp"
#ifdef PTSIM_HAVE_CUDA
#include "runtime/exec/cuda/cuda_backend.hpp"  // defines: cuda_device_count
#endif
#include "tests/support/backend_under_test.hpp"  // defines: make_test_backend
#include "tests/support/gpu_skip.hpp"  // defines: gpu_test_skip_status

using namespace ptsim;
using models::DType;
using models::OpKind;
using models::TaskGraph;
using test::Values;

namespace {

constexpr double kU32 = 5.9604644775390625e-8;  // 2^-24
double unit_roundoff(DType t) { return t == DType::bf16 ? 1.0 / 256 : t == DType::f16 ? 1.0 / 2048 : 0.0; }

// One case: a graph, its inputs, and per checked output (tensor id) the reduction length and D's dtype.
struct Check {
  int tensor;
  int64_t terms;  // k (GEMM outputs) or M (the bias gradient)
  bool sum_only;  // a bias gradient: 2(M+1)·u32·S, no 16-bit rounding
};
struct Case16 {
  std::string label;
  TaskGraph graph;
  Values values;
  std::vector<Check> checks;
};

Values absolute(Values v) {
  for (auto& entry : v)
    for (double& x : entry.second) x = std::abs(x);
  return v;
}

Case16 gemm_case(DType t, int64_t m, int64_t n, int64_t k, int transposes, int variant, uint64_t seed) {
  models::OpAttrs a;
  a.gemm.m = m;
  a.gemm.n = n;
  a.gemm.k = k;
  a.gemm.trans_a = (transposes & 1) != 0;
  a.gemm.trans_b = (transposes & 2) != 0;
  DType cd = t, bias_type = t;
  switch (variant) {
    case 0: break;                                                                   // plain
    case 1: a.gemm.alpha = 0.125; a.gemm.accumulate = true; a.gemm.has_bias = true; break;  // bias of D's type
    case 2: a.gemm.has_bias = true; bias_type = DType::f32; break;                   // fp32 bias
    case 3: cd = DType::f32; a.gemm.accumulate = true; a.gemm.has_bias = true; bias_type = DType::f32; break;
  }
  Case16 c;
  c.label = fmt::format("{} gemm m={} n={} k={} ta={} tb={} alpha={} acc={} bias={} C={}", models::to_string(t), m, n,
                        k, a.gemm.trans_a, a.gemm.trans_b, a.gemm.alpha, a.gemm.accumulate,
                        a.gemm.has_bias ? models::to_string(bias_type) : "none", models::to_string(cd));
  TaskGraph& g = c.graph;
  const int A = test::add_tensor(g, "A", a.gemm.trans_a ? std::vector<int64_t>{k, m} : std::vector<int64_t>{m, k}, t);
  const int B = test::add_tensor(g, "B", a.gemm.trans_b ? std::vector<int64_t>{n, k} : std::vector<int64_t>{k, n}, t);
  std::vector<int> inputs{A, B};
  if (a.gemm.has_bias) inputs.push_back(test::add_tensor(g, "bias", {n}, bias_type));
  const int C = test::add_tensor(g, "C", {m, n}, cd);
  test::add_op(g, OpKind::gemm, inputs, {C}, a);
  for (const auto& tensor : g.tensors)
    c.values[tensor.id] = test::random_in(tensor.dtype, static_cast<size_t>(tensor.elements()), seed + static_cast<uint64_t>(tensor.id));
  c.checks.push_back({C, k, false});
  return c;
}

Case16 batched_case(DType t, int64_t m, int64_t n, int64_t k, int transposes, uint64_t seed) {
  models::OpAttrs a;
  a.gemm.batch = 3;
  a.gemm.m = m;
  a.gemm.n = n;
  a.gemm.k = k;
  a.gemm.trans_a = (transposes & 1) != 0;
  a.gemm.trans_b = (transposes & 2) != 0;
  a.gemm.alpha = 0.25;
  Case16 c;
  c.label = fmt::format("{} batched_gemm 3×(m={} n={} k={}) ta={} tb={}", models::to_string(t), m, n, k,
                        a.gemm.trans_a, a.gemm.trans_b);
  TaskGraph& g = c.graph;
  const int A = test::add_tensor(g, "A", a.gemm.trans_a ? std::vector<int64_t>{3, k, m} : std::vector<int64_t>{3, m, k}, t);
  const int B = test::add_tensor(g, "B", a.gemm.trans_b ? std::vector<int64_t>{3, n, k} : std::vector<int64_t>{3, k, n}, t);
  const int C = test::add_tensor(g, "C", {3, m, n}, t);
  test::add_op(g, OpKind::batched_gemm, {A, B}, {C}, a);
  for (const auto& tensor : g.tensors)
    c.values[tensor.id] = test::random_in(tensor.dtype, static_cast<size_t>(tensor.elements()), seed + static_cast<uint64_t>(tensor.id));
  c.checks.push_back({C, k, false});
  return c;
}

// dW (out, in, fp32) += dYᵀ·X with dY (tokens, out) and X 16-bit, then bias_grad(dY) into an fp32 dbias: the
// pair the CUDA backend runs as one cuBLASLt call with BGRADB.
Case16 weight_grad_case(DType t, int64_t tokens, uint64_t seed) {
  const int64_t out = 19, in = 13;
  Case16 c;
  c.label = fmt::format("{} gemm (weight gradient, fp32 dW) + bias_grad tokens={} out={} in={}", models::to_string(t),
                        tokens, out, in);
  TaskGraph& g = c.graph;
  const int dy = test::add_tensor(g, "dY", {tokens, out}, t), x = test::add_tensor(g, "X", {tokens, in}, t);
  const int dw = test::add_tensor(g, "dW", {out, in}, DType::f32), db = test::add_tensor(g, "dbias", {out}, DType::f32);
  models::OpAttrs a;
  a.gemm.m = out;
  a.gemm.n = in;
  a.gemm.k = tokens;
  a.gemm.trans_a = true;
  a.gemm.accumulate = true;
  test::add_op(g, OpKind::gemm, {dy, x}, {dw}, a);
  test::add_op(g, OpKind::bias_grad, {dy}, {db}, {});
  for (const auto& tensor : g.tensors)
    c.values[tensor.id] = test::random_in(tensor.dtype, static_cast<size_t>(tensor.elements()), seed + static_cast<uint64_t>(tensor.id));
  c.checks.push_back({dw, tokens, false});
  c.checks.push_back({db, tokens, true});
  return c;
}

std::vector<Case16> all_cases() {
  std::vector<Case16> cases;
  uint64_t seed = 7100;
  struct Shape {
    int64_t m, n, k;
  };
  // Odd sizes (no kernel may assume a multiple of 8 elements) and one tensor-core-friendly shape.
  const Shape shapes[] = {{7, 13, 5}, {1, 33, 17}, {128, 65, 31}, {64, 96, 128}};
  const Shape batched[] = {{7, 7, 5}, {128, 128, 64}, {1, 1, 9}};
  for (DType t : {DType::bf16, DType::f16}) {
    for (const Shape& s : shapes)
      for (int tr = 0; tr < 4; ++tr)
        for (int variant = 0; variant < 4; ++variant) cases.push_back(gemm_case(t, s.m, s.n, s.k, tr, variant, seed += 10));
    for (const Shape& s : batched)
      for (int tr = 0; tr < 4; ++tr) cases.push_back(batched_case(t, s.m, s.n, s.k, tr, seed += 10));
    for (int64_t tokens : {1, 7, 128}) cases.push_back(weight_grad_case(t, tokens, seed += 10));
  }
  return cases;
}

// Worst |Δ| / bound of one output (> 1: failing), printing the first failing element.
double compare(const Case16& c, const Check& check, const Values& got, const Values& ref, const Values& ref_abs) {
  const DType d = c.graph.tensor(check.tensor).dtype;
  const auto& a = got.at(check.tensor);
  const auto& b = ref.at(check.tensor);
  const auto& S = ref_abs.at(check.tensor);
  double worst = 0;
  bool reported = false;
  for (size_t i = 0; i < b.size(); ++i) {
    const double sums = 2.0 * double(check.terms + (check.sum_only ? 1 : 3)) * kU32 * S[i];
    const double bound = sums + (check.sum_only ? 0.0 : 1.01 * unit_roundoff(d) * (std::abs(a[i]) + std::abs(b[i])));
    const double err = std::isfinite(a[i]) ? std::abs(a[i] - b[i]) : INFINITY;
    const double ratio = bound > 0 ? err / bound : (err == 0 ? 0 : INFINITY);
    worst = std::max(worst, ratio);
    if (ratio > 1 && !reported) {
      fmt::print("     element {}: {} vs CPU {} (|diff| {:.3g} > bound {:.3g})\n", i, a[i], b[i], err, bound);
      reported = true;
    }
  }
  return worst;
}

// The comparison can fail: the reference with one element moved by 4× its bound is rejected.
bool self_check(const Case16& c, const Values& ref, const Values& ref_abs) {
  const Check& check = c.checks.front();
  Values moved = ref;
  std::vector<double>& v = moved.at(check.tensor);
  const size_t mid = v.size() / 2;
  const double S = ref_abs.at(check.tensor)[mid];
  const DType d = c.graph.tensor(check.tensor).dtype;
  v[mid] += 4 * (2.0 * double(check.terms + 3) * kU32 * S + 2.02 * unit_roundoff(d) * std::abs(v[mid]));
  return compare(c, check, moved, ref, ref_abs) > 1;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "cuda";
  if (which != "cuda") {
    fmt::print(stderr, "usage: test_backend_ops_16bit cuda (got '{}')\n", which);
    return 2;
  }
#ifdef PTSIM_HAVE_CUDA
  if (runtime::cuda_device_count() == 0) {
    fmt::print("test_backend_ops_16bit: no CUDA device was found: skipping the 16-bit GEMM cases\n");
    return ptsim::test::gpu_test_skip_status();
  }
#else
  fmt::print("test_backend_ops_16bit: this build has no CUDA backend: skipping\n");
  return ptsim::test::gpu_test_skip_status();
#endif
  try {
    std::unique_ptr<runtime::Backend> cuda = test::make_test_backend(runtime::BackendKind::cuda, runtime::ComputeType::f32, 1);
    std::unique_ptr<runtime::Backend> cpu = runtime::make_cpu_backend(runtime::ComputeType::f32, 1);
    int failures = 0, ran = 0, refused = 0;
    double worst_all = 0;
    bool self_checked = false;
    for (const Case16& c : all_cases()) {
      const Values ref = test::run_graph(*cpu, c.graph, c.values);
      const Values ref_abs = test::run_graph(*cpu, c.graph, absolute(c.values));
      if (!self_checked) {
        if (!self_check(c, ref, ref_abs)) {
          fmt::print("test_backend_ops_16bit: the comparison cannot tell a wrong result from a right one\n");
          return 1;
        }
        self_checked = true;
      }
      Values got;
      try {
        got = test::run_graph(*cuda, c.graph, c.values);
      } catch (const core::InputError& e) {  // bf16 below sm_80: the refusal, then the case is skipped
        if (std::string(e.what()).find("compute capability") == std::string::npos) throw;
        if (refused++ == 0) fmt::print("skip {}: {}\n", c.label, e.what());
        continue;
      }
      ++ran;
      for (const Check& check : c.checks) {
        const double worst = compare(c, check, got, ref, ref_abs);
        worst_all = std::max(worst_all, worst);
        const bool ok = worst <= 1;
        fmt::print("{:4} {}: {} [{}] worst |Δ|/bound {:.3g}\n", ok ? "ok" : "FAIL", cuda->name(), c.label,
                   c.graph.tensor(check.tensor).name, worst);
        failures += ok ? 0 : 1;
      }
    }
    fmt::print("test_backend_ops_16bit: {} cases run, {} refused for the GPU's compute capability, {} failing outputs, "
               "worst |Δ|/bound {:.3g}\n",
               ran, refused, failures, worst_all);
    return failures == 0 && ran > 0 ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "test_backend_ops_16bit: {}\n", e.what());
    return 1;
  }
}
