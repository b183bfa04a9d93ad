// sim/pipeline_overlap.cpp — bucket offsets inside a pipeline chunk's passes (see the header).
#include "sim/pipeline_overlap.hpp"

#include <algorithm>
#include <set>

namespace ptsim::sim {
namespace {

using models::Phase;

bool in_pass(const models::Op& op, bool backward) {
  return models::is_micro_step_phase(op.phase) && (op.phase != Phase::forward) == backward;
}

// (start, end) of every op of the pass, from the pass's start; {-1, -1} for ops outside it.
std::vector<std::pair<double, double>> pass_times(const models::TaskGraph& g, bool backward, const OpSeconds& seconds,
                                                  double* total) {
  std::vector<std::pair<double, double>> times(g.ops.size(), {-1.0, -1.0});
  double t = 0;
  for (const auto& op : g.ops) {
    if (!in_pass(op, backward)) continue;
    const double s = seconds(op);
    times[static_cast<size_t>(op.id)] = {t, t + s};
    t += s;
  }
  *total = t;
  return times;
}

void sort_by_offset(std::vector<BucketOffset>& out) {
  std::stable_sort(out.begin(), out.end(),
                   [](const BucketOffset& a, const BucketOffset& b) { return a.offset_seconds < b.offset_seconds; });
}

}  // namespace

std::vector<BucketOffset> gradient_ready_offsets(const models::TaskGraph& g, const OpSeconds& seconds) {
  double total = 0;
  const auto times = pass_times(g, true, seconds, &total);
  std::vector<BucketOffset> out;
  for (const auto& op : g.ops) {
    // As sim/pipeline_step: every data-parallel collective but the ZeRO-1 parameter gathers reduces gradients.
    if (op.phase != Phase::communication || op.kind == models::OpKind::all_gather) continue;
    // The bucket's gradients are final when their last writer in the backward ends (its graph dependencies).
    double ready = -1;
    for (auto [e, end] = boost::in_edges(op.id, g.deps); e != end; ++e)
      ready = std::max(ready, times[boost::source(*e, g.deps)].second);
    out.push_back({op.id, ready < 0 ? total : ready});
  }
  sort_by_offset(out);
  return out;
}

std::vector<BucketOffset> parameter_use_offsets(const models::TaskGraph& g, const OpSeconds& seconds) {
  double total = 0;
  const auto times = pass_times(g, false, seconds, &total);
  std::vector<BucketOffset> out;
  for (const auto& gather : g.ops) {
    if (gather.phase != Phase::communication || gather.kind != models::OpKind::all_gather) continue;
    std::set<int> weights;
    for (int p : gather.attrs.params) weights.insert(g.params[static_cast<size_t>(p)].weight);
    double first_use = total;
    for (const auto& op : g.ops) {
      if (!in_pass(op, false)) continue;
      const bool reads = std::any_of(op.inputs.begin(), op.inputs.end(), [&](int t) { return weights.count(t) > 0; });
      if (reads) {
        first_use = times[static_cast<size_t>(op.id)].first;
        break;
      }
    }
    out.push_back({gather.id, first_use});
  }
  sort_by_offset(out);
  return out;
}

double gated_pass_end(double start, double seconds, const std::vector<std::pair<double, double>>& offset_and_gather_end) {
  double end = start + seconds;
  for (const auto& [offset, gather_end] : offset_and_gather_end) end = std::max(end, gather_end + seconds - offset);
  return end;
}

}  // namespace ptsim::sim
