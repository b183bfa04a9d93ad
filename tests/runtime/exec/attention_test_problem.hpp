// tests/runtime/exec/attention_test_problem.hpp — the AttentionProblem of a fused-attention test case: any
// struct with batch, heads, seq, head_dim, padded, causal and dropout (test_fused_attention.cpp's Config,
// attention_tc_cases.hpp's Case): scale 1/√d, the padding mask when padded, and one fixed dropout key
// (seed 42, step 3, micro-step 1, stream 7) so every check draws the same mask.
#pragma once
#include <cmath>

#include "runtime/exec/attention_problem.hpp"
#include "runtime/exec/dropout_mask.hpp"

namespace ptsim::test {

template <class TestCase>
runtime::AttentionProblem problem_of(const TestCase& c) {
  runtime::AttentionProblem p;
  p.batch_heads = c.batch * c.heads;
  p.seq = c.seq;
  p.head_dim = c.head_dim;
  p.heads = c.heads;
  p.scale = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
  p.causal = c.causal;
  p.has_mask = c.padded;
  p.dropout_p = c.dropout;
  p.dropout_key = runtime::dropout_key(42, 3, 1, 7);
  return p;
}

}  // namespace ptsim::test
