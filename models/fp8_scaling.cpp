// models/fp8_scaling.cpp — Transformer Engine's delayed-scaling bookkeeping as graph ops: after the forward
// and after the backward pass one fp8_scale_update reads the amax every fp8 cast of that pass recorded and
// updates the amax histories and scales (TE's amax_and_scale_update; docs/precisions.md).
#include <fmt/format.h>

#include "models/build_context.hpp"

namespace ptsim::models {

void append_fp8_scale_update(BuildContext& ctx, Phase phase) {
  TaskGraph& g = ctx.graph;
  std::vector<int> amaxes;
  for (const Op& op : g.ops)
    if (op.kind == OpKind::fp8_cast_transpose && op.phase == phase) amaxes.push_back(op.outputs[2]);
  if (amaxes.empty()) return;
  const auto tensors = static_cast<int64_t>(amaxes.size());
  const std::string name = fmt::format("fp8.{}.scale_update", to_string(phase));
  int scales = ctx.new_tensor(name + ".scales", {tensors}, DType::f32, TensorRole::workspace, -1);
  OpAttrs a;
  a.rows = tensors;
  a.cols = kFp8AmaxHistoryLength;
  ctx.emit(OpKind::fp8_scale_update, name, phase, -1, amaxes, {scales}, a);
}

}  // namespace ptsim::models
