// tests/runtime/exec/test_lt_gemm_16bit.cpp — the CUDA backend's 16-bit GEMMs checked on the CPU (no CUDA
// types): which gemm / batched_gemm ops run natively on bf16/fp16 storage (gemm_types.hpp), the typed
// cuBLASLt plans (lt_gemm_plan.hpp: layouts' and vector's types, the documented vector types, the alignment
// promised to the heuristic), the compute-capability refusal, and the typed plans run through the
// column-major interpreter of cuBLASLt's semantics (lt_gemm_interpreter.hpp) on operands given as 16-bit
// patterns against what the CPU backend computes for the same graph through its 16-bit boundary
// (cpu_16bit_boundary.hpp: operands widened exactly, the fp32 GEMM, the output rounded once).
//
// The bound, per element of D (i, j), u32 = 2^-24, u16 = D's unit roundoff (bf16 2^-8, fp16 2^-11, 0 for an
// fp32 D), S = |alpha|·Σ_q |a_iq||b_qj| + |C_ij| + |bias_j| (the interpreter on |operands|):
//   |d_lt − d_cpu| ≤ (k + 4)·u32·S + 1.01·u16·(|d_lt| + |d_cpu|).
// Why: the CPU's fp32 GEMM is within (k + 3)·u32·S of the exact value (γ_k for the k-term dot product, one
// rounding each for alpha, + C, + bias: the harness's GEMM bound, backend_ops_cases.cpp); the interpreter
// sums the exact products (16-bit × 16-bit fits in double) in double and rounds to fp32 once (u32·|x| ≤
// u32·S), as a GPU's fp32 accumulator would end; each side then rounds to D's type once, |rn(x) − x| ≤
// u16·|rn(x)|/(1 − u16) ≤ 1.01·u16·|rn(x)|. Accumulation orders differ, so no tighter (bitwise) claim holds.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/cuda/gemm_types.hpp"
#include "runtime/exec/cuda/lt_gemm_plan.hpp"
#include "runtime/exec/precision.hpp"
#include "tests/runtime/exec/gemm_16bit_support.hpp"
#include "tests/runtime/exec/lt_gemm_interpreter.hpp"

using namespace ptsim::runtime;
using ptsim::models::DType;
using ptsim::models::OpKind;
using ptsim::models::TaskGraph;
using ptsim::test::Values;

namespace {

constexpr double kU32 = 5.9604644775390625e-8;  // 2^-24
double unit_roundoff(DType t) {
  if (t == DType::bf16) return 1.0 / 256;   // 2^-8: 8 significand bits
  if (t == DType::f16) return 1.0 / 2048;   // 2^-11: 11 significand bits
  return 0;                                 // fp32 D: no rounding beyond the fp32 result's
}
cuda::GemmElement element(DType t) { return cuda::gemm_element(t).value(); }
using ptsim::test::add_op;
using ptsim::test::add_tensor;
using ptsim::test::decode;
using ptsim::test::encode;
using ptsim::test::gemm_attrs;
using ptsim::test::random_in;

// The graph's ops on the CPU f32 backend (16-bit tensors stored as 16 bits: its op boundary).
Values run_cpu(const TaskGraph& g, const Values& initial) {
  auto backend = make_cpu_backend(ComputeType::f32, 1);
  return ptsim::test::run_graph(*backend, g, initial);
}

// The typed interpreter: A and B given as 16-bit patterns of the plan's ab type (widened exactly), the product
// accumulated in double, rounded to fp32 and then to D's type (as a GPU's fp32 accumulator is stored).
std::vector<double> run_lt_16bit(const cuda::LtGemmPlan& p, double alpha, const std::vector<std::byte>& A16,
                                 const std::vector<std::byte>& B16, DType ab, double beta, const std::vector<double>& C,
                                 const std::vector<double>& bias, DType cd) {
  REQUIRE(p.a.type == element(ab));
  REQUIRE(p.d.type == element(cd));
  const std::vector<double> d = ptsim::test::run_lt(p, alpha, decode(ab, A16), decode(ab, B16), beta, C, bias).d;
  return decode(cd, encode(cd, d));  // encode: double → float (one rounding), then → D's type (another)
}

std::vector<double> absolute(std::vector<double> v) {
  for (double& x : v) x = std::abs(x);
  return v;
}

// Every element within the header's bound; returns the worst |Δ| / bound.
double check_bound(const std::vector<double>& lt, const std::vector<double>& cpu, const std::vector<double>& S,
                   int64_t k, DType cd, const std::string& what) {
  REQUIRE(lt.size() == cpu.size());
  double worst = 0;
  for (size_t i = 0; i < lt.size(); ++i) {
    const double bound = double(k + 4) * kU32 * S[i] + 1.01 * unit_roundoff(cd) * (std::abs(lt[i]) + std::abs(cpu[i]));
    const double err = std::abs(lt[i] - cpu[i]);
    CHECK_MESSAGE(err <= bound, what << " element " << i << ": " << lt[i] << " vs CPU " << cpu[i] << " (bound " << bound
                                     << ")");
    if (bound > 0) worst = std::max(worst, err / bound);
  }
  return worst;
}

struct GemmCase {
  int64_t m, n, k;
  bool ta, tb, accumulate, bias;
  DType ab, cd, bias_type;
  double alpha;
};

// One graph GEMM on the CPU boundary against its typed plan in the interpreter; the worst |Δ| / bound.
double compare_gemm(const GemmCase& c, uint64_t seed) {
  TaskGraph g;
  const int A = add_tensor(g, "A", c.ta ? std::vector<int64_t>{c.k, c.m} : std::vector<int64_t>{c.m, c.k}, c.ab);
  const int B = add_tensor(g, "B", c.tb ? std::vector<int64_t>{c.n, c.k} : std::vector<int64_t>{c.k, c.n}, c.ab);
  const int bias = c.bias ? add_tensor(g, "bias", {c.n}, c.bias_type) : -1;
  const int C = add_tensor(g, "C", {c.m, c.n}, c.cd);
  ptsim::models::OpAttrs a;
  a.gemm.m = c.m;
  a.gemm.n = c.n;
  a.gemm.k = c.k;
  a.gemm.trans_a = c.ta;
  a.gemm.trans_b = c.tb;
  a.gemm.alpha = c.alpha;
  a.gemm.accumulate = c.accumulate;
  a.gemm.has_bias = c.bias;
  std::vector<int> inputs{A, B};
  if (c.bias) inputs.push_back(bias);
  add_op(g, OpKind::gemm, inputs, {C}, a);
  const auto types = cuda::native_16bit_gemm_types(g, g.ops[0]);
  REQUIRE(types.has_value());

  Values v;
  v[A] = random_in(c.ab, static_cast<size_t>(c.m * c.k), seed);
  v[B] = random_in(c.ab, static_cast<size_t>(c.k * c.n), seed + 1);
  v[C] = random_in(c.cd, static_cast<size_t>(c.m * c.n), seed + 2);
  std::vector<double> bias_values(static_cast<size_t>(c.n), 0.0);
  if (c.bias) v[bias] = bias_values = random_in(c.bias_type, static_cast<size_t>(c.n), seed + 3);
  const Values cpu = run_cpu(g, v);

  // Lt's A is the graph's B, its B the graph's A; D = Cᵀ column-major (ld n) is C row-major, element for element.
  const cuda::LtGemmPlan p = cuda::lt_gemm_plan(a.gemm, c.bias ? cuda::LtEpilogue::bias : cuda::LtEpilogue::none, *types);
  const double beta = c.accumulate ? 1.0 : 0.0;
  const std::vector<double> lt = run_lt_16bit(p, c.alpha, encode(c.ab, v[B]), encode(c.ab, v[A]), c.ab, beta, v[C],
                                              bias_values, c.cd);
  const std::vector<double> S =
      ptsim::test::run_lt(p, std::abs(c.alpha), absolute(v[B]), absolute(v[A]), beta, absolute(v[C]), absolute(bias_values)).d;
  const double worst = check_bound(lt, cpu.at(C), S, c.k, c.cd, "D");

  // The comparison can fail: the same plan without its bias epilogue (a dropped bias), or one element moved
  // by twice its bound, is outside the bound.
  if (c.bias) {
    cuda::LtGemmPlan no_bias = p;
    no_bias.epilogue = cuda::LtEpilogue::none;
    const std::vector<double> wrong = run_lt_16bit(no_bias, c.alpha, encode(c.ab, v[B]), encode(c.ab, v[A]), c.ab, beta,
                                                   v[C], bias_values, c.cd);
    bool outside = false;
    for (size_t i = 0; i < wrong.size(); ++i)
      outside = outside || std::abs(wrong[i] - cpu.at(C)[i]) >
                               double(c.k + 4) * kU32 * S[i] +
                                   1.01 * unit_roundoff(c.cd) * (std::abs(wrong[i]) + std::abs(cpu.at(C)[i]));
    CHECK_MESSAGE(outside, "a dropped bias passes the bound");
  }
  return worst;
}

// A gemm graph of the given stored dtypes (bias: DType::f64 = none) for the type rules.
TaskGraph typed_gemm(DType a, DType b, DType c, DType bias, OpKind kind = OpKind::gemm) {
  TaskGraph g;
  const int64_t batch = kind == OpKind::batched_gemm ? 2 : 1;
  const int A = add_tensor(g, "A", {batch, 4, 3}, a), B = add_tensor(g, "B", {batch, 3, 5}, b);
  std::vector<int> in{A, B};
  ptsim::models::OpAttrs at;
  at.gemm = gemm_attrs(4, 5, 3, false, false);
  at.gemm.batch = batch;
  if (bias != DType::f64) {
    in.push_back(add_tensor(g, "bias", {5}, bias));
    at.gemm.has_bias = true;
  }
  const int C = add_tensor(g, "C", {batch, 4, 5}, c);
  add_op(g, kind, in, {C}, at);
  return g;
}

constexpr DType kNoBias = DType::f64;

}  // namespace

TEST_CASE("16-bit GEMMs: which type combinations run natively, which go through the boundary") {
  using cuda::GemmElement;
  auto types = [](const TaskGraph& g) { return cuda::native_16bit_gemm_types(g, g.ops[0]); };
  // Native: A = B 16-bit, C that type or fp32, bias that type or fp32.
  CHECK(types(typed_gemm(DType::bf16, DType::bf16, DType::bf16, kNoBias)) ==
        cuda::GemmTypes{GemmElement::bf16, GemmElement::bf16, GemmElement::f32});
  CHECK(types(typed_gemm(DType::bf16, DType::bf16, DType::f32, kNoBias)) ==
        cuda::GemmTypes{GemmElement::bf16, GemmElement::f32, GemmElement::f32});
  CHECK(types(typed_gemm(DType::f16, DType::f16, DType::f16, DType::f16)) ==
        cuda::GemmTypes{GemmElement::f16, GemmElement::f16, GemmElement::f16});
  CHECK(types(typed_gemm(DType::f16, DType::f16, DType::f16, DType::f32)) ==
        cuda::GemmTypes{GemmElement::f16, GemmElement::f16, GemmElement::f32});
  CHECK(types(typed_gemm(DType::bf16, DType::bf16, DType::bf16, kNoBias, OpKind::batched_gemm)) ==
        cuda::GemmTypes{GemmElement::bf16, GemmElement::bf16, GemmElement::f32});
  // The boundary: mixed A/B types, one fp32 operand, a C or bias of the other 16-bit type.
  for (const TaskGraph& g : {typed_gemm(DType::bf16, DType::f16, DType::bf16, kNoBias),
                             typed_gemm(DType::bf16, DType::f32, DType::bf16, kNoBias),
                             typed_gemm(DType::f32, DType::bf16, DType::f32, kNoBias),
                             typed_gemm(DType::bf16, DType::bf16, DType::f16, kNoBias),
                             typed_gemm(DType::f16, DType::f16, DType::f16, DType::bf16)}) {
    CHECK(cuda::has_16bit_operand(g, g.ops[0]));
    CHECK_FALSE(cuda::gemm_runs_natively(g, g.ops[0]));
  }
  // fp8 casts and other op kinds are never this path; an all-fp32 GEMM has no 16-bit operand (the fp32 path).
  TaskGraph fp8 = typed_gemm(DType::bf16, DType::bf16, DType::bf16, kNoBias);
  fp8.ops[0].attrs.gemm.fp8 = true;
  CHECK_FALSE(cuda::gemm_runs_natively(fp8, fp8.ops[0]));
  TaskGraph add = typed_gemm(DType::bf16, DType::bf16, DType::bf16, kNoBias);
  add.ops[0].kind = OpKind::add;
  CHECK_FALSE(cuda::gemm_runs_natively(add, add.ops[0]));
  const TaskGraph f32 = typed_gemm(DType::f32, DType::f32, DType::f32, DType::f32);
  CHECK_FALSE(cuda::has_16bit_operand(f32, f32.ops[0]));
  CHECK_FALSE(cuda::gemm_runs_natively(f32, f32.ops[0]));
}

TEST_CASE("typed cuBLASLt plans: the layouts and the epilogue vector carry the stored types") {
  using cuda::GemmElement;
  const cuda::GemmTypes bf16_out{GemmElement::bf16, GemmElement::bf16, GemmElement::bf16};
  const cuda::LtGemmPlan p = cuda::lt_gemm_plan(gemm_attrs(7, 4, 5, false, true), cuda::LtEpilogue::bias, bf16_out);
  CHECK(p.a.type == GemmElement::bf16);
  CHECK(p.b.type == GemmElement::bf16);
  CHECK(p.d.type == GemmElement::bf16);
  CHECK(p.vector_type == GemmElement::bf16);
  CHECK(cuda::lt_vector_type_documented(p));
  // The same shape in fp32 is a different plan (its own cache entry).
  CHECK_FALSE(p == cuda::lt_gemm_plan(gemm_attrs(7, 4, 5, false, true), cuda::LtEpilogue::bias));
  // cublasLt.h: the bias has D's type; an fp32 bias with a bf16 D is not documented (the finishing kernel adds it).
  const cuda::LtGemmPlan f32_bias = cuda::lt_gemm_plan(gemm_attrs(7, 4, 5, false, true), cuda::LtEpilogue::bias,
                                                       {GemmElement::bf16, GemmElement::bf16, GemmElement::f32});
  CHECK(f32_bias.vector_type == GemmElement::f32);
  CHECK_FALSE(cuda::lt_vector_type_documented(f32_bias));
  // The bias gradient is written in C's type: fp32 for a 16-bit GEMM with an fp32 dW.
  const cuda::LtGemmPlan bgrad = cuda::lt_gemm_plan(gemm_attrs(6, 3, 9, true, false), cuda::LtEpilogue::bias_grad_b,
                                                    {GemmElement::f16, GemmElement::f32, GemmElement::f16});
  CHECK(bgrad.vector_type == GemmElement::f32);
  CHECK(cuda::lt_vector_type_documented(bgrad));
  CHECK(cuda::lt_vector_type_documented(cuda::lt_gemm_plan(gemm_attrs(6, 3, 9, true, false), cuda::LtEpilogue::none,
                                                           {GemmElement::f16, GemmElement::f16, GemmElement::f32})));
}

TEST_CASE("the alignment promised to cuBLASLt's heuristic: the addresses' common power of two, ≥ the element") {
  const uintptr_t aligned[] = {0x10000, 0x20100, 0};  // null (no vector) does not lower it
  CHECK(cuda::lt_common_alignment(aligned, 2) == 256);
  const uintptr_t sixteen[] = {0x10000, 0x20010};
  CHECK(cuda::lt_common_alignment(sixteen, 2) == 16);
  const uintptr_t odd_element[] = {0x10000, 0x20002};  // a bf16 tensor at an odd element of an aligned buffer
  CHECK(cuda::lt_common_alignment(odd_element, 2) == 2);
  CHECK_THROWS_AS(cuda::lt_common_alignment(odd_element, 4), std::logic_error);  // fp32 at a 2-byte address
  const uintptr_t odd_byte[] = {0x10001};
  CHECK_THROWS_AS(cuda::lt_common_alignment(odd_byte, 2), std::logic_error);
}

TEST_CASE("bf16 GEMMs are refused below sm_80 and fp16 below sm_70, naming the GPU's compute capability") {
  using cuda::GemmElement;
  CHECK_THROWS_WITH_AS(cuda::check_gemm_element_supported(GemmElement::bf16, 7, 5, "Tesla T4"),
                       doctest::Contains("this GPU (Tesla T4) has compute capability 7.5"), ptsim::core::InputError);
  CHECK_THROWS_WITH_AS(cuda::check_gemm_element_supported(GemmElement::bf16, 7, 0, "Tesla V100"),
                       doctest::Contains("compute capability 8.0 or newer"), ptsim::core::InputError);
  CHECK_NOTHROW(cuda::check_gemm_element_supported(GemmElement::bf16, 8, 0, "A100"));
  CHECK_NOTHROW(cuda::check_gemm_element_supported(GemmElement::bf16, 9, 0, "H200"));
  CHECK_NOTHROW(cuda::check_gemm_element_supported(GemmElement::f16, 7, 0, "Tesla V100"));
  CHECK_NOTHROW(cuda::check_gemm_element_supported(GemmElement::f16, 7, 5, "Tesla T4"));
  CHECK_THROWS_WITH_AS(cuda::check_gemm_element_supported(GemmElement::f16, 6, 1, "GTX 1080"),
                       doctest::Contains("compute capability 6.1"), ptsim::core::InputError);
  CHECK_NOTHROW(cuda::check_gemm_element_supported(GemmElement::f32, 6, 0, "P100"));
}

TEST_CASE("typed cuBLASLt plans in the interpreter match the CPU's 16-bit boundary within the stated bound") {
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{7, 13, 5}, {33, 17, 64}};
  uint64_t seed = 500;
  double worst = 0;
  for (DType t : {DType::bf16, DType::f16})
    for (const Shape& s : shapes)
      for (int tr = 0; tr < 4; ++tr)
        for (int variant = 0; variant < 4; ++variant) {
          GemmCase c{s.m, s.n, s.k, (tr & 1) != 0, (tr & 2) != 0, false, false, t, t, t, 1.0};
          switch (variant) {
            case 0: break;                                                 // plain, D 16-bit
            case 1: c.bias = true; c.accumulate = true; c.alpha = 0.5; break;  // bias of D's type, C +=
            case 2: c.bias = true; c.bias_type = DType::f32; break;        // fp32 bias (finishing kernel)
            case 3: c.cd = DType::f32; c.accumulate = true; c.bias = true; c.bias_type = DType::f32; break;  // fp32 C
          }
          INFO(ptsim::models::to_string(t) << " m=" << s.m << " n=" << s.n << " k=" << s.k << " transposes " << tr
                                           << " variant " << variant);
          worst = std::max(worst, compare_gemm(c, seed));
          seed += 10;
        }
  MESSAGE("worst |Δ| / bound over the 16-bit interpreter-vs-boundary GEMMs: " << worst);
}

TEST_CASE("a 16-bit weight-gradient GEMM with an fp32 dW and BGRADB equals the CPU's gemm + bias_grad") {
  // dW (out, in) += dYᵀ·X, dY (tokens, out) and X 16-bit; dbias (out) fp32 += Σ dY.
  const int64_t tokens = 9, out = 6, in = 3;
  for (DType t : {DType::bf16, DType::f16}) {
    TaskGraph g;
    const int dy = add_tensor(g, "dY", {tokens, out}, t), x = add_tensor(g, "X", {tokens, in}, t);
    const int dw = add_tensor(g, "dW", {out, in}, DType::f32), db = add_tensor(g, "dbias", {out}, DType::f32);
    ptsim::models::OpAttrs a;
    a.gemm = gemm_attrs(out, in, tokens, true, false);
    a.gemm.accumulate = true;
    add_op(g, OpKind::gemm, {dy, x}, {dw}, a);
    add_op(g, OpKind::bias_grad, {dy}, {db}, {});
    const auto types = cuda::native_16bit_gemm_types(g, g.ops[0]);
    REQUIRE(types.has_value());
    const auto e = cuda::bias_grad_epilogue(a.gemm, cuda::GemmOperand::a, tokens, out);
    REQUIRE(e.has_value());
    const cuda::LtGemmPlan p = cuda::lt_gemm_plan(a.gemm, *e, *types);
    REQUIRE(p.vector_type == cuda::GemmElement::f32);
    Values v;
    v[dy] = random_in(t, static_cast<size_t>(tokens * out), 900);
    v[x] = random_in(t, static_cast<size_t>(tokens * in), 901);
    v[dw] = random_in(DType::f32, static_cast<size_t>(out * in), 902);
    v[db] = random_in(DType::f32, static_cast<size_t>(out), 903);
    const Values cpu = run_cpu(g, v);
    const ptsim::test::LtResult lt = ptsim::test::run_lt(p, 1.0, v[x], v[dy], 1.0, v[dw], {});
    const std::vector<double> S = ptsim::test::run_lt(p, 1.0, absolute(v[x]), absolute(v[dy]), 1.0, absolute(v[dw]), {}).d;
    check_bound(decode(DType::f32, encode(DType::f32, lt.d)), cpu.at(dw), S, tokens, DType::f32, "dW");
    // dbias: an M-term fp32 sum plus the add into dbias, (M + 2)·u32·(Σ|dy| + |dbias|) (the harness's
    // bias_grad bound, one rounding more for the interpreter's fp32 result).
    const ptsim::test::LtResult abs_lt = ptsim::test::run_lt(p, 1.0, absolute(v[x]), absolute(v[dy]), 1.0, absolute(v[dw]), {});
    for (int64_t j = 0; j < out; ++j) {
      const size_t i = static_cast<size_t>(j);
      const double want = static_cast<float>(v[db][i] + lt.vector[i]);
      const double bound = double(tokens + 2) * kU32 * (abs_lt.vector[i] + std::abs(v[db][i]));
      CHECK_MESSAGE(std::abs(want - cpu.at(db)[i]) <= bound, "dbias " << j);
    }
  }
}
