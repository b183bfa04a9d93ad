// runtime/exec/attention_problem.cpp — see the header.
#include "runtime/exec/attention_problem.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>  // fmt::join

#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/exec/dropout_mask.hpp"  // defines: dropout_key

namespace ptsim::runtime {
namespace {

void expect_shape(const models::TaskGraph& g, const models::Op& op, int id, const std::vector<int64_t>& want,
                  const char* what) {
  const std::vector<int64_t>& have = g.tensor(id).shape;
  if (have != want)
    throw std::logic_error(fmt::format("op {}: {} '{}' has shape [{}], the fused attention needs [{}]", op.name, what,
                                       g.tensor(id).name, fmt::join(have, ", "), fmt::join(want, ", ")));
}

}  // namespace

AttentionProblem attention_problem(const models::TaskGraph& g, const models::Op& op, const OpContext& context) {
  const bool forward = op.kind == models::OpKind::fused_attention;
  if (!forward && op.kind != models::OpKind::fused_attention_backward)
    throw std::logic_error(fmt::format("op {}: not a fused attention op", op.name));
  const size_t tensors = forward ? 3 : 6;  // q, k, v | dcontext, q, k, v, context, lse
  if (op.inputs.size() != tensors && op.inputs.size() != tensors + 1)
    throw std::logic_error(fmt::format("op {}: {} inputs, the fused attention takes {} (+ the padding mask)", op.name,
                                       op.inputs.size(), tensors));
  if (op.outputs.size() != (forward ? 2u : 3u))
    throw std::logic_error(fmt::format("op {}: {} outputs, the fused attention writes {}", op.name, op.outputs.size(),
                                       forward ? 2 : 3));
  const int q = op.inputs[forward ? 0 : 1];
  const std::vector<int64_t>& qs = g.tensor(q).shape;
  if (qs.size() != 3) throw std::logic_error(fmt::format("op {}: q must be [B·nh, S, d]", op.name));
  AttentionProblem p;
  p.batch_heads = qs[0];
  p.seq = qs[1];
  p.head_dim = qs[2];
  p.heads = op.attrs.heads > 0 ? op.attrs.heads : 1;
  p.scale = op.attrs.gemm.alpha;
  p.causal = op.attrs.causal;
  p.has_mask = op.inputs.size() == tensors + 1;
  if (p.batch_heads % p.heads != 0)
    throw std::logic_error(fmt::format("op {}: {} heads do not divide B·nh = {}", op.name, p.heads, p.batch_heads));
  for (size_t i = 0; i < (forward ? 3u : 5u); ++i) expect_shape(g, op, op.inputs[i], qs, "input");
  if (!forward) expect_shape(g, op, op.inputs[5], {p.batch_heads, p.seq}, "lse");
  if (p.has_mask) expect_shape(g, op, op.inputs[tensors], {p.batch_heads / p.heads, p.seq}, "attention_mask");
  expect_shape(g, op, op.outputs[0], qs, "output");
  if (forward) {
    expect_shape(g, op, op.outputs[1], {p.batch_heads, p.seq}, "lse");
  } else {
    expect_shape(g, op, op.outputs[1], qs, "output");
    expect_shape(g, op, op.outputs[2], qs, "output");
  }
  p.dropout_p = op.attrs.dropout_p > 0 ? op.attrs.dropout_p : 0;
  if (p.dropout_p > 0) p.dropout_key = dropout_key(context.seed, context.step, context.micro_step, op.attrs.rng_stream);
  return p;
}

}  // namespace ptsim::runtime
