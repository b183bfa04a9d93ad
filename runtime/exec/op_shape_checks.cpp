// runtime/exec/op_shape_checks.cpp — see the header.
#include "runtime/exec/op_shape_checks.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace ptsim::runtime {

void check_gemm_shapes(const models::TaskGraph& g, const models::Op& op) {
  const models::GemmAttrs& a = op.attrs.gemm;
  const int64_t batch = op.kind == models::OpKind::batched_gemm ? a.batch : 1;
  auto expect = [&](int id, int64_t want, const char* what) {
    const int64_t have = g.tensor(id).elements();
    if (have != want)
      throw std::logic_error(fmt::format("op {}: {} '{}' has {} elements, the gemm attributes need {}", op.name, what,
                                         g.tensor(id).name, have, want));
  };
  expect(op.inputs.at(0), batch * a.m * a.k, "A");
  expect(op.inputs.at(1), batch * a.k * a.n, "B");
  expect(op.outputs.at(0), batch * a.m * a.n, "C");
  if (a.has_bias) expect(op.inputs.at(2), a.n, "bias");
}

void check_heads_shapes(const models::TaskGraph& g, const models::Op& op) {
  const models::OpAttrs& a = op.attrs;
  const int64_t want = a.batch * a.seq * a.heads * a.head_dim;
  if (g.tensor(op.inputs.at(0)).elements() != want || g.tensor(op.outputs.at(0)).elements() != want)
    throw std::logic_error(fmt::format("op {}: tensors do not match batch·seq·heads·head_dim = {}", op.name, want));
}

}  // namespace ptsim::runtime
