// reports/trace.cpp — StepSimulation timeline → Chrome trace events (microseconds).
#include "reports/trace.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <map>
#include <tuple>

namespace ptsim::reports {

nlohmann::json chrome_trace(const sim::StepSimulation& step, const models::TaskGraph& g) {
  nlohmann::json events = nlohmann::json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", "rank 0 (all data-parallel replicas)"}}}});
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 0}, {"args", {{"name", "compute stream"}}}});
  events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", 1}, {"args", {{"name", "communication stream"}}}});
  std::map<std::pair<int, int>, double> end_in_micro;  // (op id, micro-step) → end time
  for (const auto& s : step.timeline)
    if (s.stream == sim::Stream::compute) end_in_micro[{s.op, s.micro_step}] = s.end_seconds;
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
    if (s.stream != sim::Stream::communication || op.kind == models::OpKind::all_gather) continue;
    // Flow arrows from the backward ops whose gradients this all-reduce (or reduce-scatter) carries, in the
    // micro-step it reduces (the last; every one under ZeRO stage 2).
    for (auto [e, end] = boost::in_edges(op.id, g.deps); e != end; ++e) {
      auto found = end_in_micro.find({static_cast<int>(boost::source(*e, g.deps)), s.micro_step});
      if (found == end_in_micro.end()) continue;
      ++flow_id;
      events.push_back({{"ph", "s"}, {"name", "gradients ready"}, {"cat", "flow"}, {"id", flow_id}, {"pid", 0},
                        {"tid", 0}, {"ts", found->second * 1e6 - 0.001}});
      events.push_back({{"ph", "f"}, {"bp", "e"}, {"name", "gradients ready"}, {"cat", "flow"}, {"id", flow_id},
                        {"pid", 0}, {"tid", 1}, {"ts", s.start_seconds * 1e6}});
    }
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

namespace {

std::string pass_name(const sim::PipelineTask& t, int stages, bool interleaved) {
  const std::string chunk = interleaved ? fmt::format("c{} ", t.chunk / stages) : "";
  return fmt::format("{}{}{}", chunk, t.backward ? "B" : "F", t.micro);
}

nlohmann::json pipeline_metadata(const std::vector<models::TaskGraph>& chunks, int stages) {
  nlohmann::json events = nlohmann::json::array();
  for (int s = 0; s < stages; ++s) {
    std::vector<std::string> layers;
    for (size_t g = static_cast<size_t>(s); g < chunks.size(); g += static_cast<size_t>(stages))
      layers.push_back(fmt::format("{}-{}", chunks[g].chunk.first_layer, chunks[g].chunk.end_layer - 1));
    events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", s},
                      {"args", {{"name", fmt::format("pipeline stage {} (layers {})", s, fmt::join(layers, ", "))}}}});
    events.push_back({{"ph", "M"}, {"name", "process_sort_index"}, {"pid", s}, {"args", {{"sort_index", s}}}});
    const char* names[] = {"compute stream", "data-parallel communication", "pipeline sends"};
    for (int tid = 0; tid < 3; ++tid)
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", s}, {"tid", tid}, {"args", {{"name", names[tid]}}}});
  }
  return events;
}

}  // namespace

nlohmann::json chrome_pipeline_trace(const sim::StepSimulation& step, const std::vector<models::TaskGraph>& chunks) {
  const int stages = step.pipeline_stages;
  const bool interleaved = static_cast<int>(chunks.size()) > stages;
  nlohmann::json events = pipeline_metadata(chunks, stages);
  std::map<std::tuple<int, int, bool>, double> pass_start;  // (chunk, micro, backward) → start
  for (const auto& s : step.pipeline_timeline)
    if (!s.send) pass_start[{s.task.chunk, s.task.micro, s.task.backward}] = s.start_seconds;
  int flow_id = 0;
  for (const auto& s : step.pipeline_timeline) {
    const std::string name = pass_name(s.task, stages, interleaved);
    events.push_back({{"ph", "X"}, {"name", s.send ? "send " + name : name},
                      {"cat", s.send ? "send" : (s.task.backward ? "backward" : "forward")},
                      {"pid", s.device}, {"tid", s.send ? 2 : 0}, {"ts", s.start_seconds * 1e6},
                      {"dur", (s.end_seconds - s.start_seconds) * 1e6},
                      {"args", {{"chunk", s.task.chunk}, {"micro_step", s.task.micro}, {"backward", s.task.backward},
                                {"phase", s.send ? "pipeline send" : (s.task.backward ? "backward" : "forward")}}}});
    if (!s.send) continue;
    const int next = s.task.backward ? s.task.chunk - 1 : s.task.chunk + 1;
    auto to = pass_start.find({next, s.task.micro, s.task.backward});
    if (to == pass_start.end()) continue;
    ++flow_id;
    const char* what = s.task.backward ? "gradient" : "activation";
    events.push_back({{"ph", "s"}, {"name", what}, {"cat", "flow"}, {"id", flow_id}, {"pid", s.device}, {"tid", 2},
                      {"ts", s.start_seconds * 1e6}});
    events.push_back({{"ph", "f"}, {"bp", "e"}, {"name", what}, {"cat", "flow"}, {"id", flow_id},
                      {"pid", next % stages}, {"tid", 0}, {"ts", to->second * 1e6}});
  }
  for (const auto& s : step.timeline) {
    const bool comm = s.stream == sim::Stream::communication;
    const models::TaskGraph& g = chunks.at(static_cast<size_t>(s.chunk));
    const std::string name = s.op >= 0 ? g.op(s.op).name : "tied embedding all_reduce";
    events.push_back({{"ph", "X"}, {"name", name}, {"cat", s.op >= 0 ? models::to_string(g.op(s.op).kind) : "all_reduce"},
                      {"pid", s.stage}, {"tid", comm ? 1 : 0}, {"ts", s.start_seconds * 1e6},
                      {"dur", (s.end_seconds - s.start_seconds) * 1e6},
                      {"args", {{"chunk", s.chunk}, {"phase", comm ? "communication" : "optimizer"}}}});
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace ptsim::reports
