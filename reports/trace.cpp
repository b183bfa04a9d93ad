// reports/trace.cpp — StepSimulation timeline → Chrome trace events (microseconds).
#include "reports/trace.hpp"

#include <map>

namespace ptsim::reports {

nlohmann::json chrome_trace(const sim::StepSimulation& step, const models::TaskGraph& g) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", "rank 0 (all data-parallel replicas)"}}}});
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "compute stream"}}}});
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 1}, {"args", {{"name", "communication stream"}}}});
  const int last_micro = static_cast<int>(g.micro_steps) - 1;
  std::map<int, double> end_in_last_micro;  // op id → end time in the last micro-step
  for (const auto& s : step.timeline)
    if (s.stream == sim::Stream::compute && s.micro_step == last_micro) end_in_last_micro[s.op] = s.end_seconds;
  int flow_id = 0;
  for (const auto& s : step.timeline) {
    const models::Op& op = g.op(s.op);
    const int tid = s.stream == sim::Stream::compute ? 0 : 1;
    events.push_back({{"ph", "X"},
                      {"name", op.name},
                      {"cat", models::to_string(op.kind)},
                      {"pid", 0},
                      {"tid", tid},
                      {"ts", s.start_seconds * 1e6},
                      {"dur", (s.end_seconds - s.start_seconds) * 1e6},
                      {"args", {{"op", op.id}, {"phase", models::to_string(op.phase)}, {"micro_step", s.micro_step},
                                {"flops", op.flops}, {"bytes", op.bytes_read + op.bytes_written}}}});
    if (s.stream != sim::Stream::communication) continue;
    // Flow arrows from the backward ops whose gradients this all-reduce carries.
    for (auto [e, end] = boost::in_edges(op.id, g.deps); e != end; ++e) {
      auto found = end_in_last_micro.find(static_cast<int>(boost::source(*e, g.deps)));
      if (found == end_in_last_micro.end()) continue;
      ++flow_id;
      events.push_back({{"ph", "s"}, {"name", "gradients ready"}, {"cat", "flow"}, {"id", flow_id}, {"pid", 0},
                        {"tid", 0}, {"ts", found->second * 1e6 - 0.001}});
      events.push_back({{"ph", "f"}, {"bp", "e"}, {"name", "gradients ready"}, {"cat", "flow"}, {"id", flow_id},
                        {"pid", 0}, {"tid", 1}, {"ts", s.start_seconds * 1e6}});
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace ptsim::reports
