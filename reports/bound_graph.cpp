// reports/bound_graph.cpp — a task graph reduced to what the step bound reads (see the header).
#include "reports/bound_graph.hpp"

#include <algorithm>

#include "sim/compute_model.hpp"

namespace ptsim::reports {
namespace {

std::vector<int> readers_of_first_gather(const models::TaskGraph& g) {
  for (const models::Op& op : g.ops) {
    if (op.phase != models::Phase::communication || op.kind != models::OpKind::all_gather) continue;
    std::vector<int> readers;
    for (const models::Op& reader : g.ops)
      if (models::is_micro_step_phase(reader.phase))
        for (int t : reader.inputs)
          if (std::find(op.inputs.begin(), op.inputs.end(), t) != op.inputs.end()) {
            readers.push_back(reader.id);
            break;
          }
    return readers;
  }
  return {};
}

// The op's time on the GPU (compute ops) or its collective (communication ops), into the bound op `op.id`.
void set_op_cost(BoundGraph& out, const models::Op& op, const hwprofiles::GpuProfile& gpu) {
  BoundOp& b = out.ops[static_cast<size_t>(op.id)];
  if (b.comm >= 0) out.comms[static_cast<size_t>(b.comm)] = op.attrs.comm;
  else b.compute_seconds = sim::op_cost(op, gpu).seconds;
}

}  // namespace

BoundGraph bound_structure(const models::TaskGraph& g) {
  BoundGraph out;
  out.micro_steps = g.micro_steps;
  out.ops.reserve(g.ops.size());
  for (const models::Op& op : g.ops) {
    BoundOp b;
    b.id = op.id;
    b.kind = op.kind;
    b.phase = op.phase;
    if (models::is_communication(op.kind)) {
      b.comm = static_cast<int>(out.comms.size());
      out.comms.push_back(op.attrs.comm);
    }
    if (!models::is_micro_step_phase(op.phase)) {
      std::vector<int>& sources = out.sources[op.id];
      for (auto [e, e_end] = boost::in_edges(op.id, g.deps); e != e_end; ++e)
        sources.push_back(static_cast<int>(boost::source(*e, g.deps)));
    }
    out.ops.push_back(b);
  }
  out.first_gather_readers = readers_of_first_gather(g);
  return out;
}

BoundGraph bound_graph(const models::TaskGraph& g, const hwprofiles::GpuProfile& gpu) {
  BoundGraph out = bound_structure(g);
  for (const models::Op& op : g.ops) set_op_cost(out, op, gpu);
  return out;
}

BoundGraph bound_graph(const BoundGraph& structure, const models::MicroBatchOps& ops, int64_t micro_batch,
                       int64_t micro_steps, const hwprofiles::GpuProfile& gpu) {
  BoundGraph out = structure;
  out.micro_steps = micro_steps;
  ops.for_each_op_at(micro_batch, [&](const models::Op& op) { set_op_cost(out, op, gpu); });
  return out;
}

size_t approximate_bytes(const BoundGraph& b) {
  size_t bytes = sizeof(BoundGraph) + b.ops.capacity() * sizeof(BoundOp) + b.comms.capacity() * sizeof(models::CommAttrs) +
                 b.first_gather_readers.capacity() * sizeof(int);
  for (const auto& [id, sources] : b.sources) bytes += 64 + sources.capacity() * sizeof(int);  // a map node and its vector
  return bytes;
}

}  // namespace ptsim::reports
