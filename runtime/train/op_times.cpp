// runtime/train/op_times.cpp — the ptsim.op_times.v1 document (see the header).
#include "runtime/train/op_times.hpp"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>
#include <thread>

namespace ptsim::runtime {

core::Json op_times_json(const models::TaskGraph& graph, std::span<const double> seconds_per_step,
                         const OpTimesInfo& info) {
  if (seconds_per_step.size() != graph.ops.size())
    throw std::invalid_argument(fmt::format("op_times_json: {} times for {} ops", seconds_per_step.size(), graph.ops.size()));
  core::Json ops = core::Json::array();
  for (const models::Op& op : graph.ops)
    ops.push_back({{"id", op.id},
                   {"name", op.name},
                   {"kind", models::to_string(op.kind)},
                   {"phase", models::to_string(op.phase)},
                   {"layer", op.layer},
                   {"flops", op.flops},
                   {"bytes_read", op.bytes_read},
                   {"bytes_written", op.bytes_written},
                   {"dtype", models::to_string(op.dtype)},
                   {"seconds", seconds_per_step[static_cast<size_t>(op.id)]}});
  const models::Recipe& r = graph.recipe;
  return {{"schema", kOpTimesSchema},
          {"source", info.source},
          {"device", info.device},
          {"step_seconds", info.step_seconds},
          {"steps", info.steps},
          {"model", graph.model.name},
          {"recipe",
           {{"precision", models::to_string(r.precision)},
            {"micro_batch", r.micro_batch},
            {"seq_len", r.seq_len},
            {"grad_accum", r.grad_accum},
            {"optimizer", models::to_string(r.optimizer)},
            {"data_parallel", r.data_parallel},
            {"tensor_parallel", r.tensor_parallel}}},
          {"ops", std::move(ops)}};
}

std::string cpu_device_description(int threads) {
  std::string model;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    auto colon = line.find(':');
    if (colon != std::string::npos) model = line.substr(colon + 1);
    while (!model.empty() && model.front() == ' ') model.erase(model.begin());
    break;
  }
  const int n = threads > 0 ? threads : static_cast<int>(std::thread::hardware_concurrency());
  if (model.empty()) return fmt::format("cpu ({} threads)", n);
  return fmt::format("cpu: {} ({} threads)", model, n);
}

}  // namespace ptsim::runtime
