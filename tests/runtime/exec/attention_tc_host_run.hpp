// tests/runtime/exec/attention_tc_host_run.hpp — one case of attention_tc_cases.hpp run through the
// tensor-core tile algorithm's host instantiation (math/attention_tc_host_mma.hpp), forward and backward, on
// the case's inputs narrowed to E; results widened back to fp32 (exact). Users: test_attention_tc.cpp (cpu
// suite: checked against the bound) and attention_tc_gpu_check.cpp (gpu suite: the device's distance from it).
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "runtime/exec/math/attention_tc_host_mma.hpp"
#include "tests/runtime/exec/attention_tc_cases.hpp"

namespace ptsim::test::attention_tc {

template <class E>
std::vector<E> narrowed(const std::vector<float>& x) {
  return std::vector<E>(x.begin(), x.end());
}
template <class E>
std::vector<float> widened(const std::vector<E>& x) {
  return std::vector<float>(x.begin(), x.end());
}
// A backward's 16-bit dq, dk, dv widened to fp32 (exact).
template <class E>
Gradients widened_gradients(const std::vector<E>& dq, const std::vector<E>& dk, const std::vector<E>& dv) {
  Gradients g;
  g.dq = widened(dq);
  g.dk = widened(dk);
  g.dv = widened(dv);
  return g;
}

// The forward through the host emulation: context and lse.
template <class E>
Result run_host(const Inputs& in, const AttentionProblem& p, const int32_t* keep) {
  const std::vector<E> q = narrowed<E>(in.q), k = narrowed<E>(in.k), v = narrowed<E>(in.v);
  std::vector<E> context(q.size(), E(NAN));
  Result r;
  r.lse.assign(static_cast<size_t>(p.batch_heads * p.seq), NAN);
  const tc::OpParams o = math::attention_op_params(p, keep);
  if (p.head_dim <= 64)
    tc::host_forward<E, 64>(context.data(), r.lse.data(), q.data(), k.data(), v.data(), p.batch_heads, o);
  else
    tc::host_forward<E, 128>(context.data(), r.lse.data(), q.data(), k.data(), v.data(), p.batch_heads, o);
  r.context = widened(context);
  return r;
}

// The backward through the host emulation: dq, dk, dv.
template <class E>
Gradients run_host_backward(const Inputs& in, const BackwardInputs& b, const AttentionProblem& p, const int32_t* keep) {
  const std::vector<E> q = narrowed<E>(in.q), k = narrowed<E>(in.k), v = narrowed<E>(in.v),
                       dout = narrowed<E>(b.dout), out = narrowed<E>(b.context);
  std::vector<E> dq(q.size(), E(NAN)), dk(q.size(), E(NAN)), dv(q.size(), E(NAN));
  const tc::OpParams o = math::attention_op_params(p, keep);
  if (p.head_dim <= 64)
    tc::host_backward<E, 64>(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(), out.data(),
                             b.lse.data(), p.batch_heads, o);
  else
    tc::host_backward<E, 128>(dq.data(), dk.data(), dv.data(), dout.data(), q.data(), k.data(), v.data(),
                              out.data(), b.lse.data(), p.batch_heads, o);
  return widened_gradients(dq, dk, dv);
}

}  // namespace ptsim::test::attention_tc
