// tests/runtime/exec/test_attention_tc.cpp — the tensor-core fused attention's tile algorithm
// (math/attention_tc_tiles.hpp) in its host instantiation (math/attention_tc_host_mma.hpp: the kernel's own
// tile loop, online-softmax rescale, masking, causal skip, dropout index, P rounded to 16 bits before P·V,
// lse) against the CPU fused attention in fp32 on the same 16-bit-rounded inputs, within the bound of
// attention_tc_cases.hpp (cases and bound shared with the gpu suite's attention_tc_gpu_check.cpp); and the
// CUDA backend's dispatch predicate (fused_attention_runs_natively) where the build has the CUDA backend.
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <vector>

#include "tests/runtime/exec/attention_tc_host_run.hpp"
#if PTSIM_HAVE_CUDA
#include "core/error.hpp"
#include "runtime/exec/cuda/attention_tc_dispatch.hpp"
#endif

using namespace ptsim::test::attention_tc;

namespace {

// Runs one case through the host emulation; returns the worst error / bound.
template <class E>
double check_case(const Case& c, Format16 format) {
  const Inputs in = make_inputs<E>(c, seed_of(c));
  const AttentionProblem p = problem_of(c);
  const Verdict v = compare(c, in, run_host<E>(in, p, c.padded ? in.mask.data() : nullptr), format);
  CHECK_MESSAGE(v.failures == 0, v.failures << " elements out of bound; first: " << v.first_failure);
  return v.worst;
}

}  // namespace

TEST_CASE("tensor-core attention tiles (host emulation, bf16) match the CPU fused attention within the bound") {
  double worst = 0;
  for (const Case& c : cases()) worst = std::max(worst, check_case<Eigen::bfloat16>(c, kBf16));
  MESSAGE("bf16: worst error / bound = " << worst);
  // The bound is dominated by P's rounding; errors of a tenth of it or more show the 16-bit rounding is real
  // (an emulation that skipped it would sit near the fp32 term, ~1/30 of u·A at these sizes).
  CHECK(worst > 0.1);
}

TEST_CASE("tensor-core attention tiles (host emulation, fp16) match the CPU fused attention within the bound") {
  double worst = 0;
  for (const Case& c : cases()) worst = std::max(worst, check_case<Eigen::half>(c, kFp16));
  MESSAGE("fp16: worst error / bound = " << worst);
}

namespace {

template <class E>
double check_backward_case(const Case& c, Format16 format) {
  const Inputs in = make_inputs<E>(c, seed_of(c));
  const BackwardInputs b = make_backward_inputs<E>(c, in, seed_of(c) + 1);
  const AttentionProblem p = problem_of(c);
  const Verdict v = compare_backward(c, in, b, run_host_backward<E>(in, b, p, c.padded ? in.mask.data() : nullptr), format);
  CHECK_MESSAGE(v.failures == 0, v.failures << " elements out of bound; first: " << v.first_failure);
  return v.worst;
}

}  // namespace

TEST_CASE("tensor-core attention backward tiles (host emulation) match the CPU fused attention within the bound") {
  double worst_bf16 = 0, worst_fp16 = 0;
  for (const Case& c : cases()) {
    worst_bf16 = std::max(worst_bf16, check_backward_case<Eigen::bfloat16>(c, kBf16));
    worst_fp16 = std::max(worst_fp16, check_backward_case<Eigen::half>(c, kFp16));
  }
  MESSAGE("backward worst error / bound: bf16 " << worst_bf16 << ", fp16 " << worst_fp16);
  CHECK(worst_bf16 > 0.1);  // dS and P̃ rounded to 16 bits are visible (as the forward's check)
}

#if PTSIM_HAVE_CUDA
namespace {
// A graph with one fused attention op (forward or backward): its tensors of `t` with head dim d, lse of
// `lse_type`, the backward's dv of `dv_type`.
ptsim::models::TaskGraph attention_graph(ptsim::models::DType t, int64_t d, ptsim::models::DType lse_type,
                                         ptsim::models::OpKind kind, ptsim::models::DType dv_type) {
  using namespace ptsim::models;
  TaskGraph g;
  auto tensor = [&](const char* name, std::vector<int64_t> shape, DType dtype) {
    Tensor x;
    x.name = name;
    x.shape = std::move(shape);
    x.dtype = dtype;
    x.role = TensorRole::activation;
    return g.add_tensor(std::move(x));
  };
  const int q = tensor("q", {4, 7, d}, t), k = tensor("k", {4, 7, d}, t), v = tensor("v", {4, 7, d}, t);
  const int context = tensor("context", {4, 7, d}, t), lse = tensor("lse", {4, 7}, lse_type);
  Op op;
  op.kind = kind;
  op.name = "attention";
  if (kind == OpKind::fused_attention) {
    op.inputs = {q, k, v};
    op.outputs = {context, lse};
  } else {  // dcontext, q, k, v, context, lse → dq, dk, dv
    const int dcontext = tensor("dcontext", {4, 7, d}, t), dq = tensor("dq", {4, 7, d}, t);
    const int dk = tensor("dk", {4, 7, d}, t), dv = tensor("dv", {4, 7, d}, dv_type);
    op.inputs = {dcontext, q, k, v, context, lse};
    op.outputs = {dq, dk, dv};
  }
  g.add_op(std::move(op));
  return g;
}
}  // namespace

TEST_CASE("fused_attention_runs_natively: all-16-bit ops with fp32 lse and head dims up to 128 only") {
  using ptsim::models::DType;
  using ptsim::models::OpKind;
  using ptsim::runtime::cuda::fused_attention_runs_natively;
  auto natively = [](DType t, int64_t d, DType lse, OpKind kind, DType dv_type) {
    const ptsim::models::TaskGraph g = attention_graph(t, d, lse, kind, dv_type);
    return fused_attention_runs_natively(g, g.ops.front());
  };
  const OpKind fwd = OpKind::fused_attention, bwd = OpKind::fused_attention_backward;
  CHECK(natively(DType::bf16, 64, DType::f32, fwd, DType::bf16));
  CHECK(natively(DType::f16, 128, DType::f32, fwd, DType::f16));
  CHECK(natively(DType::bf16, 128, DType::f32, bwd, DType::bf16));
  CHECK(natively(DType::f16, 37, DType::f32, bwd, DType::f16));
  CHECK_FALSE(natively(DType::f32, 64, DType::f32, fwd, DType::f32));     // the fp32 kernel's
  CHECK_FALSE(natively(DType::f32, 64, DType::f32, bwd, DType::f32));
  CHECK_FALSE(natively(DType::bf16, 256, DType::f32, fwd, DType::bf16));  // wider than the kernels
  CHECK_FALSE(natively(DType::bf16, 256, DType::f32, bwd, DType::bf16));
  CHECK_FALSE(natively(DType::bf16, 64, DType::bf16, fwd, DType::bf16));  // lse must be fp32
  CHECK_FALSE(natively(DType::bf16, 64, DType::f32, bwd, DType::f32));    // mixed: dv f32
  CHECK_FALSE(natively(DType::bf16, 64, DType::f32, bwd, DType::f16));    // mixed: dv f16
}

// The refusal CudaBackend makes before the tensor-core launcher (whose own std::invalid_argument ptsim would
// report as an internal error): bf16 below sm_80 is a core::InputError naming the GPU, its compute capability
// and the ways out; fp16 and sm_80+ pass.
TEST_CASE("check_attention_tc_supported: bf16 below sm_80 is an InputError naming the GPU and the ways out") {
  using ptsim::runtime::cuda::Attention16;
  using ptsim::runtime::cuda::check_attention_tc_supported;
  CHECK_THROWS_WITH_AS(check_attention_tc_supported(Attention16::bf16, 7, 5, "Tesla T4"),
                       doctest::Contains("this GPU (Tesla T4) has compute capability 7.5: use --precision fp16, or "
                                         "--attention-kernel fp32"),
                       ptsim::core::InputError);
  CHECK_NOTHROW(check_attention_tc_supported(Attention16::f16, 7, 5, "Tesla T4"));
  CHECK_NOTHROW(check_attention_tc_supported(Attention16::bf16, 8, 0, "A100"));
  CHECK_NOTHROW(check_attention_tc_supported(Attention16::bf16, 9, 0, "H200"));
}
#endif
