// sim/pipeline_schedule.cpp — schedule orders and their dependency-driven execution (see the header).
#include "sim/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace ptsim::sim {
namespace {

using models::PipelineSchedule;

std::vector<PipelineTask> gpipe_order(const PipelineShape& s, int device) {
  std::vector<PipelineTask> order;
  for (int m = 0; m < s.micro_batches; ++m) order.push_back({device, m, false});
  for (int m = 0; m < s.micro_batches; ++m) order.push_back({device, m, true});
  return order;
}

std::vector<PipelineTask> one_f_one_b_order(const PipelineShape& s, int device) {
  const int M = s.micro_batches;
  const int warmup = std::min(s.stages - device - 1, M);
  std::vector<PipelineTask> order;
  for (int m = 0; m < warmup; ++m) order.push_back({device, m, false});
  for (int k = 0; k < M - warmup; ++k) {
    order.push_back({device, warmup + k, false});
    order.push_back({device, k, true});
  }
  for (int m = M - warmup; m < M; ++m) order.push_back({device, m, true});
  return order;
}

// Megatron-LM (megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_with_interleaving):
// the k-th forward (backward) of a device works on local chunk (k mod PV) div P (reversed for backward) and
// micro-batch (k div PV)·P + k mod P.
std::vector<PipelineTask> interleaved_order(const PipelineShape& s, int device) {
  const int P = s.stages, V = s.virtual_stages;
  const int total = s.micro_batches * V;
  const int warmup = s.micro_batches == P ? total : std::min(2 * (P - device - 1) + (V - 1) * P, total);
  auto task = [&](int k, bool backward) {
    int local = (k % (P * V)) / P;
    if (backward) local = V - 1 - local;
    return PipelineTask{local * P + device, (k / (P * V)) * P + k % P, backward};
  };
  std::vector<PipelineTask> order;
  for (int k = 0; k < warmup; ++k) order.push_back(task(k, false));
  for (int k = 0; k < total - warmup; ++k) {
    order.push_back(task(warmup + k, false));
    order.push_back(task(k, true));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(task(k, true));
  return order;
}

}  // namespace

PipelineShape PipelineShape::of(const models::Recipe& r) {
  PipelineShape s;
  s.schedule = r.pipeline_schedule;
  s.stages = static_cast<int>(r.pipeline_parallel);
  s.virtual_stages = static_cast<int>(r.virtual_stages);
  s.micro_batches = static_cast<int>(r.grad_accum);
  return s;
}

std::vector<PipelineTask> pipeline_order(const PipelineShape& shape, int device) {
  if (device < 0 || device >= shape.stages) throw std::invalid_argument("pipeline_order: device out of range");
  switch (shape.schedule) {
    case PipelineSchedule::gpipe: return gpipe_order(shape, device);
    case PipelineSchedule::one_f_one_b: return one_f_one_b_order(shape, device);
    case PipelineSchedule::interleaved: return interleaved_order(shape, device);
  }
  return {};
}

int peak_in_flight(const std::vector<PipelineTask>& order) {
  int live = 0, peak = 0;
  for (const auto& t : order) {
    live += t.backward ? -1 : 1;
    peak = std::max(peak, live);
  }
  return peak;
}

double PipelineRun::bubble_fraction(double start_seconds) const {
  const double span = flush_seconds - start_seconds;
  if (span <= 0 || busy_seconds.empty()) return 0;
  double busy = 0;
  for (double b : busy_seconds) busy += b;
  return std::max(0.0, 1.0 - busy / (static_cast<double>(busy_seconds.size()) * span));
}

PipelineExecutor::PipelineExecutor(EventEngine& engine, const PipelineShape& shape, std::vector<double> forward_seconds,
                                   std::vector<double> backward_seconds, PipelineTransport& transport,
                                   std::function<void(int)> on_device_done, bool record)
    : engine_(engine), shape_(shape), forward_(std::move(forward_seconds)), backward_(std::move(backward_seconds)),
      transport_(transport), on_device_done_(std::move(on_device_done)), record_(record) {
  const size_t chunks = static_cast<size_t>(shape.chunks());
  if (forward_.size() != chunks || backward_.size() != chunks)
    throw std::invalid_argument("PipelineExecutor: one forward and one backward duration per model chunk");
  for (int d = 0; d < shape.stages; ++d) orders_.push_back(pipeline_order(shape, d));
  cursor_.assign(orders_.size(), 0);
  busy_.assign(orders_.size(), false);
  activation_arrived_.assign(chunks * static_cast<size_t>(shape.micro_batches), 0);
  gradient_arrived_.assign(activation_arrived_.size(), 0);
  run_.busy_seconds.assign(orders_.size(), 0.0);
  run_.last_backward_end.assign(orders_.size(), 0.0);
}

void PipelineExecutor::start(double start_seconds) {
  run_.flush_seconds = start_seconds;
  engine_.schedule_at(start_seconds, [this] {
    for (int d = 0; d < shape_.stages; ++d) try_run(d);
  });
}

// A forward needs the previous chunk's output (the first chunk reads the data); a backward needs the next
// chunk's gradient (the last starts from the loss). A device's own forward always precedes its backward.
bool PipelineExecutor::ready(const PipelineTask& t) const {
  if (!t.backward) return t.chunk == 0 || activation_arrived_[slot(t.chunk, t.micro)];
  return t.chunk == shape_.chunks() - 1 || gradient_arrived_[slot(t.chunk, t.micro)];
}

void PipelineExecutor::try_run(int device) {
  const size_t d = static_cast<size_t>(device);
  if (busy_[d] || cursor_[d] >= orders_[d].size()) return;
  const PipelineTask task = orders_[d][cursor_[d]];
  if (!ready(task)) return;
  busy_[d] = true;
  const double start = engine_.now();
  const double seconds = (task.backward ? backward_ : forward_)[static_cast<size_t>(task.chunk)];
  FinishPass finish = [this, device, task](double busy_start) { finished(device, task, busy_start); };
  if (runner_) return runner_(device, task, start, seconds, std::move(finish));
  engine_.schedule_at(start + seconds, [finish = std::move(finish), start] { finish(start); });
}

void PipelineExecutor::finished(int device, const PipelineTask& task, double start) {
  const double end = engine_.now();
  run_.busy_seconds[static_cast<size_t>(device)] += end - start;
  if (record_) run_.spans.push_back({device, task, false, start, end});
  const int next = task.backward ? task.chunk - 1 : task.chunk + 1;
  if (next < 0 || next >= shape_.chunks()) {
    advance(device);
    return;
  }
  // The data goes to the neighbour's chunk; this device waits until it has left (synchronous p2p).
  transport_.send(task.chunk, next, task.backward, [this, device, task, next, end] {
    auto& arrived = task.backward ? gradient_arrived_ : activation_arrived_;
    arrived[slot(next, task.micro)] = 1;
    if (record_) run_.spans.push_back({device, task, true, end, engine_.now()});
    try_run(next % shape_.stages);
    advance(device);
  });
}

void PipelineExecutor::advance(int device) {
  const size_t d = static_cast<size_t>(device);
  const PipelineTask& task = orders_[d][cursor_[d]];
  if (task.backward) {
    run_.last_backward_end[d] = engine_.now();
    run_.flush_seconds = std::max(run_.flush_seconds, engine_.now());
  }
  busy_[d] = false;
  ++cursor_[d];
  if (cursor_[d] == orders_[d].size()) {
    if (on_device_done_) on_device_done_(device);
    return;
  }
  try_run(device);
}

PipelineRun simulate_pipeline_schedule(const PipelineShape& shape, const std::vector<double>& forward_seconds,
                                       const std::vector<double>& backward_seconds, bool record) {
  EventEngine engine;
  FreeTransport transport(engine);
  PipelineExecutor executor(engine, shape, forward_seconds, backward_seconds, transport, nullptr, record);
  executor.start(0);
  engine.run();
  return executor.result();
}

}  // namespace ptsim::sim
