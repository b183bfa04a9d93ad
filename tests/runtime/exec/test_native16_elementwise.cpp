// tests/runtime/exec/test_native16_elementwise.cpp — the CUDA backend's elementwise kernels on 16-bit storage
// (runtime/exec/cuda/elementwise_steps.hpp), run on the host: for every op kind the backend runs natively
// (native_16bit_elementwise.hpp), bf16 and fp16, odd sizes, NaN/inf/subnormal/overflow inputs
// (native16_elementwise_cases.hpp), the same typed steps the kernels run, in a host loop, give exactly the
// bits of the CPU backend's op boundary on the same 16-bit inputs (widen, fp32 kernel, narrow once; dbias
// widened, summed in fp32, narrowed once): 0 differing values, no tolerance, since both sides compute the
// same fp32 operations on the same fp32 values and round once with math/half_bits.hpp. GELU is the one
// exception on the CPU side: the CPU's GELU loops evaluate erf/tanh/exp through Eigen's vectorised
// functions, the kernels (and this emulation) through libm/CUDA's scalar ones (activation_math.hpp), so
// the fp32 results may differ by a few ulps and a value near a 16-bit rounding boundary land one step
// apart; GELU is compared bit for bit with the boundary carried out on the kernel's own scalar maths
// (widen_16bit, math::gelu_*, narrow_16bit) and within one 16-bit step of the CPU backend. A deliberately
// double-rounded variant (the running sum of an add, or GELU's gradient, rounded to 16 bits before the
// last operation) must differ: the comparison can fail. Also: the predicate refuses mixed operand types,
// fp32 storage, ops it lacks and adds wider than one launch.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <string>
#include <vector>

#include "runtime/exec/cpu_backend.hpp"  // defines: cpu::gelu_forward, cpu::gelu_backward
#include "runtime/exec/cuda/elementwise_steps.hpp"
#include "runtime/exec/cuda/native_16bit_elementwise.hpp"
#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/column_sum_math.hpp"  // the column sums' chunks and typed finishing step
#include "tests/runtime/exec/native16_elementwise_cases.hpp"

using namespace ptsim;
using namespace ptsim::test::native16;
using namespace ptsim::runtime::cuda;

namespace {


int64_t elements(const Case& c, int id) { return c.graph.tensor(id).elements(); }
int64_t last_dim(const Case& c, int id) { return c.graph.tensor(id).shape.back(); }

template <class Step>
void for_each(const Step& step, int64_t n) {
  for (int64_t i = 0; i < n; ++i) step(i);
}

// The typed steps of the case's op on host copies of its tensors, as the launchers set them up.
template <class S>
RawValues emulate(const Case& c) {
  RawValues v = c.initial;
  const models::Op& op = c.graph.ops.at(0);
  const models::OpAttrs& a = op.attrs;
  auto x = [&](size_t k) { return reinterpret_cast<const Elem<S>*>(v.at(op.inputs[k]).data()); };
  auto y = [&](size_t k) { return reinterpret_cast<Elem<S>*>(v.at(op.outputs[k]).data()); };
  auto bytes_in = [&](size_t k) { return reinterpret_cast<const uint8_t*>(v.at(op.inputs[k]).data()); };
  auto bytes_out = [&](size_t k) { return reinterpret_cast<uint8_t*>(v.at(op.outputs[k]).data()); };
  const int64_t n0 = elements(c, op.inputs.empty() ? op.outputs[0] : op.inputs[0]);
  const uint64_t key = runtime::dropout_key(0, 0, 0, a.rng_stream);  // OpContext{}: seed, step, micro-step 0
  switch (op.kind) {
    case OpKind::gelu: for_each(GeluForwardStep<S>{y(0), x(0), a.gelu_tanh}, n0); break;
    case OpKind::gelu_backward: for_each(GeluBackwardStep<S>{y(0), x(0), x(1), a.gelu_tanh}, n0); break;
    case OpKind::tanh: for_each(TanhForwardStep<S>{y(0), x(0)}, n0); break;
    case OpKind::tanh_backward: for_each(TanhBackwardStep<S>{y(0), x(0), x(1)}, n0); break;
    case OpKind::add: {
      AddStep<S> step{};
      step.y = y(0);
      for (size_t k = 0; k < op.inputs.size(); ++k) step.x[k] = x(k);
      step.count = static_cast<int>(op.inputs.size());
      for_each(step, elements(c, op.outputs[0]));
      break;
    }
    case OpKind::dropout: {
      const DropoutConstants k = dropout_constants(a.dropout_p);
      for_each(DropoutForwardStep<S>{y(0), bytes_out(1), x(0), key, k.threshold, k.scale, k.drop_all}, n0);
      break;
    }
    case OpKind::dropout_backward:
      for_each(DropoutBackwardStep<S>{y(0), x(0), bytes_in(1), dropout_constants(a.dropout_p).scale}, n0);
      break;
    case OpKind::bias_dropout_residual: {
      const bool has_mask = op.outputs.size() > 1;
      const DropoutConstants k = fused_dropout_constants(has_mask, a.dropout_p);
      for_each(BiasDropoutResidualStep<S>{y(0), has_mask ? bytes_out(1) : nullptr, x(0), x(1), x(2),
                                          last_dim(c, op.inputs[0]), key, k.threshold, k.scale, k.drop_all},
               n0);
      break;
    }
    case OpKind::bias_dropout_residual_backward: {  // column_sums.cuh: chunked fp32 partial sums, then dbias +=
      const bool has_mask = op.inputs.size() > 1;
      const int64_t N = last_dim(c, op.inputs[0]), M = n0 / N, chunks = runtime::math::column_sum_chunks(M);
      const DropoutBackwardTerm<S> term{y(0), x(0), has_mask ? bytes_in(1) : nullptr,
                                        fused_dropout_constants(has_mask, a.dropout_p).scale, N};
      std::vector<float> partial(static_cast<size_t>(chunks * N));
      for (int64_t ch = 0; ch < chunks; ++ch)
        for (int64_t n = 0; n < N; ++n)
          partial[static_cast<size_t>(ch * N + n)] = runtime::math::column_chunk_sum(term, ch, M, n);
      for (int64_t n = 0; n < N; ++n)
        y(1)[n] = runtime::math::column_finish_stored<S>(y(1)[n], partial.data(), chunks, N, n);
      break;
    }
    case OpKind::split_heads: for_each(SplitHeadsStep<S>{y(0), x(0), a.seq, a.heads, a.head_dim}, n0); break;
    case OpKind::merge_heads: for_each(MergeHeadsStep<S>{y(0), x(0), a.seq, a.heads, a.head_dim}, n0); break;
    case OpKind::gather_rows:
    case OpKind::embedding: {
      const int64_t N = last_dim(c, op.inputs[0]), P = elements(c, op.inputs[1]);
      const auto* index = reinterpret_cast<const int32_t*>(v.at(op.inputs[1]).data());
      for_each(GatherRowsStep<S>{y(0), x(0), index, n0 / N, N}, P * N);
      break;
    }
    default: FAIL("no emulation for " << models::to_string(op.kind));
  }
  return v;
}

RawValues emulate(const Case& c) {
  return c.graph.tensor(c.graph.ops.at(0).outputs.at(0)).dtype == DType::bf16 ? emulate<Bf16Storage>(c)
                                                                              : emulate<F16Storage>(c);
}

// The widened fp32 copy of a 16-bit tensor (the boundary's first step).
std::vector<float> widened(const Case& c, const RawValues& v, int id) {
  std::vector<float> f(static_cast<size_t>(elements(c, id)));
  runtime::widen_16bit(f.data(), v.at(id).data(), f.size(), c.graph.tensor(id).dtype);
  return f;
}

// GELU's fp32 result on the widened inputs: by the kernels' scalar maths (math::gelu_*), or by the CPU
// backend's Eigen loops (cpu::gelu_forward / gelu_backward).
std::vector<float> gelu_fp32(const Case& c, bool cpu_loops) {
  const models::Op& op = c.graph.ops.at(0);
  const bool tanh_form = op.attrs.gelu_tanh;
  const std::vector<float> a = widened(c, c.initial, op.inputs[0]);
  std::vector<float> r(a.size());
  const int64_t n = static_cast<int64_t>(a.size());
  if (op.kind == OpKind::gelu) {
    if (cpu_loops) runtime::cpu::gelu_forward<float>(r.data(), a.data(), n, tanh_form);
    else
      for (size_t i = 0; i < a.size(); ++i) r[i] = runtime::math::gelu_value(a[i], tanh_form);
    return r;
  }
  const std::vector<float> xs = widened(c, c.initial, op.inputs[1]);
  if (cpu_loops) runtime::cpu::gelu_backward<float>(r.data(), a.data(), xs.data(), n, tanh_form);
  else
    for (size_t i = 0; i < a.size(); ++i) r[i] = a[i] * runtime::math::gelu_grad(xs[i], tanh_form);
  return r;
}

// GELU through the boundary on the kernels' scalar maths: widen_16bit, math::gelu_* in fp32, narrow_16bit.
RawValues gelu_boundary_scalar(const Case& c) {
  RawValues v = c.initial;
  const std::vector<float> r = gelu_fp32(c, false);
  const int out = c.graph.ops.at(0).outputs.at(0);
  runtime::narrow_16bit(v.at(out).data(), r.data(), r.size(), c.graph.tensor(out).dtype);
  return v;
}

// GELU's outputs against the CPU backend's: every differing 16-bit value must sit where the two fp32
// maths differ (Eigen's erf/tanh/exp against libm's); returns {values differing, of them unexplained}.
std::pair<size_t, size_t> gelu_against_cpu(const Case& c, const RawValues& native, const RawValues& cpu) {
  const std::vector<float> scalar = gelu_fp32(c, false), eigen = gelu_fp32(c, true);
  const int out = c.graph.ops.at(0).outputs.at(0);
  const DType t = c.graph.tensor(out).dtype;
  size_t differing = 0, unexplained = 0;
  for (size_t i = 0; i < scalar.size(); ++i) {
    uint16_t a = 0, b = 0;
    std::memcpy(&a, native.at(out).data() + 2 * i, 2);
    std::memcpy(&b, cpu.at(out).data() + 2 * i, 2);
    if (a == b || (is_nan16(t, a) && is_nan16(t, b))) continue;  // NaN signs: compare_outputs' comment
    ++differing;
    const bool same_fp32 = std::bit_cast<uint32_t>(scalar[i]) == std::bit_cast<uint32_t>(eigen[i]) ||
                           (std::isnan(scalar[i]) && std::isnan(eigen[i]));
    unexplained += same_fp32;
  }
  return {differing, unexplained};
}

bool is_move(OpKind k) {
  return k == OpKind::split_heads || k == OpKind::merge_heads || k == OpKind::gather_rows || k == OpKind::embedding;
}

std::string describe(const Difference& d) {
  return std::to_string(d.differing) + " of " + std::to_string(d.values) + " values differ (" +
         std::to_string(d.nan_signs) + " NaN signs not counted, " + std::to_string(d.far) + " NaN/mask mismatches, at most " + std::to_string(d.max_steps) + " 16-bit steps" +
         (d.first.empty() ? std::string() : "; first " + d.first) + ")";
}

const Case& find_case(const std::vector<Case>& all, const std::string& label) {
  for (const Case& c : all)
    if (c.label == label) return c;
  FAIL("no case " << label);
  return all.front();
}

}  // namespace

TEST_CASE("native 16-bit elementwise steps (host emulation) give the CPU backend's boundary bits for every op, bf16 and fp16") {
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_backend(runtime::BackendKind::cpu, runtime::ComputeType::f32, 1);
  for (const DType t : {DType::bf16, DType::f16}) {
    for (const Case& c : cases(t)) {
      const models::Op& op = c.graph.ops.at(0);
      REQUIRE_MESSAGE(elementwise_runs_16bit_natively(c.graph, op), c.label << ": the predicate refuses it");
      const RawValues native = emulate(c);
      const RawValues boundary = run_raw(*cpu, c);
      if (op.kind != OpKind::gelu && op.kind != OpKind::gelu_backward) {
        // Moves: every bit (a NaN's sign too); arithmetic: a NaN result's sign is free (compare_outputs).
        const Difference d = compare_outputs(c, native, boundary, !is_move(op.kind));
        CHECK_MESSAGE(d.differing == 0, c.label << ", typed steps vs the CPU backend's boundary: " << describe(d));
        continue;
      }
      // GELU: bit for bit the boundary on the kernels' own scalar maths; against the CPU backend only where
      // its Eigen maths gives the same fp32 value (header comment).
      const Difference s = compare_outputs(c, native, gelu_boundary_scalar(c));
      CHECK_MESSAGE(s.differing == 0, c.label << ", typed steps vs the boundary on scalar maths: " << describe(s));
      const std::pair<size_t, size_t> vs_cpu = gelu_against_cpu(c, native, boundary);
      MESSAGE(c.label << ": " << vs_cpu.first << " of " << s.values
                      << " values differ from the CPU backend's, each where Eigen's fp32 GELU differs from libm's");
      CHECK_MESSAGE(vs_cpu.second == 0, c.label << ": " << vs_cpu.second << " values differ from the CPU backend's "
                                                << "where the two fp32 maths agree");
    }
  }
}

TEST_CASE("native 16-bit elementwise: the comparison sees one extra rounding (double-rounded variants differ)") {
  const std::unique_ptr<runtime::Backend> cpu = runtime::make_backend(runtime::BackendKind::cpu, runtime::ComputeType::f32, 1);
  for (const DType t : {DType::bf16, DType::f16}) {
    const std::vector<Case> all = cases(t);
    const std::string d = models::to_string(t);
    {  // add of 3 with the running sum x0 + x1 stored (rounded) before x2 is added: what two launches would do
      const Case& c = find_case(all, "add of 3 " + d);
      RawValues v = c.initial;
      const models::Op& op = c.graph.ops.at(0);
      auto x = [&](size_t k) { return reinterpret_cast<const uint16_t*>(v.at(op.inputs[k]).data()); };
      auto* y = reinterpret_cast<uint16_t*>(v.at(op.outputs[0]).data());
      const int64_t n = elements(c, op.outputs[0]);
      auto run = [&](auto tag) {
        using S = decltype(tag);
        for_each(AddStep<S>{y, {x(0), x(1)}, 2, false}, n);
        for_each(AddStep<S>{y, {x(2)}, 1, true}, n);
      };
      if (t == DType::bf16) run(Bf16Storage{});
      else run(F16Storage{});
      const Difference diff = compare_outputs(c, v, run_raw(*cpu, c), true);
      MESSAGE(c.label << ", rounded running sum vs the boundary: " << describe(diff));
      CHECK(diff.differing > 0);
    }
    {  // gelu_backward with the gradient factor rounded to 16 bits before dy·factor
      const Case& c = find_case(all, "gelu_backward (erf form) " + d);
      RawValues v = c.initial;
      const models::Op& op = c.graph.ops.at(0);
      const auto* dy = reinterpret_cast<const uint16_t*>(v.at(op.inputs[0]).data());
      const auto* xs = reinterpret_cast<const uint16_t*>(v.at(op.inputs[1]).data());
      auto* dx = reinterpret_cast<uint16_t*>(v.at(op.outputs[0]).data());
      auto run = [&](auto tag) {
        using S = decltype(tag);
        for (int64_t i = 0; i < elements(c, op.outputs[0]); ++i) {
          uint16_t grad = 0;
          S::store(&grad, 0, runtime::math::gelu_grad(S::load(xs, i), false));
          S::store(dx, i, S::load(dy, i) * S::load(&grad, 0));
        }
      };
      if (t == DType::bf16) run(Bf16Storage{});
      else run(F16Storage{});
      const Difference diff = compare_outputs(c, v, gelu_boundary_scalar(c));
      MESSAGE(c.label << ", rounded gradient factor vs the boundary: " << describe(diff));
      CHECK(diff.differing > 0);
    }
  }
}

TEST_CASE("native 16-bit elementwise predicate: one 16-bit type for every float operand, or the boundary") {
  using models::DType;
  for (const DType t : {DType::bf16, DType::f16}) {
    for (Case c : cases(t)) {
      const models::Op& op = c.graph.ops.at(0);
      const runtime::math::Storage want = t == DType::bf16 ? runtime::math::Storage::bf16 : runtime::math::Storage::f16;
      CHECK(native_16bit_elementwise_storage(c.graph, op) == want);
      // The same op on fp32 storage: nothing to do natively.
      models::TaskGraph f32 = c.graph;
      for (auto& tensor : f32.tensors)
        if (tensor.dtype == t) tensor.dtype = DType::f32;
      CHECK_MESSAGE(!elementwise_runs_16bit_natively(f32, f32.ops.at(0)), c.label << " on fp32 storage");
      // One float operand of the other type (an fp32 bias beside bf16 activations; bf16 beside fp16): refused.
      for (const DType other : {DType::f32, t == DType::bf16 ? DType::f16 : DType::bf16}) {
        models::TaskGraph mixed = c.graph;
        mixed.tensors[static_cast<size_t>(op.outputs.at(0))].dtype = other;
        CHECK_MESSAGE(!elementwise_runs_16bit_natively(mixed, mixed.ops.at(0)),
                      c.label << " with an output of " << std::string(models::to_string(other)));
      }
    }
  }
  // An add of 9 inputs (more than one launch takes, kMaxAddInputs = 8) is refused; 8 are taken.
  for (const int inputs : {8, 9}) {
    models::TaskGraph g;
    std::vector<int> xs;
    for (int k = 0; k < inputs; ++k) xs.push_back(test::add_tensor(g, fmt::format("x{}", k), {5}, DType::bf16));
    const int y = test::add_tensor(g, "y", {5}, DType::bf16);
    test::add_op(g, OpKind::add, xs, {y}, {});
    CHECK_MESSAGE(elementwise_runs_16bit_natively(g, g.ops.at(0)) == (inputs <= kMaxAddInputs), inputs << " inputs");
  }
  // Ops outside the elementwise set (the row kernels, the GEMMs) are not this predicate's.
  models::TaskGraph g;
  const int x = test::add_tensor(g, "x", {4, 8}, DType::bf16), gamma = test::add_tensor(g, "gamma", {8}, DType::bf16);
  const int beta = test::add_tensor(g, "beta", {8}, DType::bf16), y = test::add_tensor(g, "y", {4, 8}, DType::bf16);
  const int mean = test::add_tensor(g, "mean", {4}, DType::f32), rstd = test::add_tensor(g, "rstd", {4}, DType::f32);
  test::add_op(g, OpKind::layernorm, {x, gamma, beta}, {y, mean, rstd}, {});
  CHECK(!elementwise_runs_16bit_natively(g, g.ops.at(0)));
}
