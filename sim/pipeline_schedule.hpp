// sim/pipeline_schedule.hpp — pipeline-parallel schedules: the order each device runs its forward and
// backward passes in (GPipe, 1F1B, Megatron's interleaved 1F1B), and an executor that runs those orders on the
// event engine, each task waiting for its input to arrive from the neighbouring stage over a transport (the
// network, or nothing in tests). The bubble is what the dependencies leave idle, not a formula.
// Model chunks: P × V of them in model order; chunk g runs on device g mod P (local chunk g div P).
// Not here: how long a task takes (sim/pipeline_step.cpp gives the durations) or what a send costs.
// Model and sources: docs/parallelism.md.
#pragma once
#include <functional>
#include <vector>

#include "models/recipe.hpp"
#include "sim/event_engine.hpp"

namespace ptsim::sim {

struct PipelineShape {
  models::PipelineSchedule schedule = models::PipelineSchedule::one_f_one_b;
  int stages = 1;          // P (devices)
  int virtual_stages = 1;  // V (model chunks per device; interleaved only)
  int micro_batches = 1;   // M per optimizer step
  int chunks() const { return stages * virtual_stages; }
  static PipelineShape of(const models::Recipe& recipe);
};

struct PipelineTask {
  int chunk = 0;       // global model chunk
  int micro = 0;       // micro-batch
  bool backward = false;
};

// The order device `device` runs its 2·V·M tasks in:
//  - gpipe: every forward, then every backward (Huang et al. 2019);
//  - 1f1b: min(P − d − 1, M) warm-up forwards, then one forward and one backward alternately, then the
//    remaining backwards (PipeDream-Flush, Narayanan et al. 2021; Megatron-LM's default);
//  - interleaved: Megatron-LM's forward_backward_pipelining_with_interleaving — micro-batches in groups of P,
//    each group through local chunk 0, 1, …, V−1 forward and the reverse backward; warm-up
//    2(P − d − 1) + (V − 1)P forwards (all of them when M = P).
std::vector<PipelineTask> pipeline_order(const PipelineShape& shape, int device);

// The most (chunk, micro-batch) forwards whose backward has not yet run, over `order` — activations held at
// once: M for GPipe, P − d for 1F1B, PV + P − 1 − 2d chunks (i.e. P + (P−1)/V stage-equivalents on device 0,
// Korthikanti et al. 2022) for interleaved.
int peak_in_flight(const std::vector<PipelineTask>& order);

// Moves a chunk's output (gradient = false) to the next chunk, or an input's gradient (true) to the previous
// one; calls `arrived` from the engine when the data is there. Called at engine.now().
class PipelineTransport {
 public:
  virtual ~PipelineTransport() = default;
  virtual void send(int from_chunk, int to_chunk, bool gradient, std::function<void()> arrived) = 0;
};

// Free, instantaneous transfers (tests: the bubble of the schedule alone).
class FreeTransport final : public PipelineTransport {
 public:
  explicit FreeTransport(EventEngine& engine) : engine_(engine) {}
  void send(int, int, bool, std::function<void()> arrived) override { engine_.schedule_after(0, std::move(arrived)); }

 private:
  EventEngine& engine_;
};

struct PipelineSpan {
  int device = 0;
  PipelineTask task;
  bool send = false;   // the task's output (or input gradient) going to its neighbour; blocks the device
  double start_seconds = 0, end_seconds = 0;
};

struct PipelineRun {
  std::vector<double> busy_seconds;        // per device: time spent in its tasks
  std::vector<double> last_backward_end;   // per device
  double flush_seconds = 0;                // the last backward's end over all devices (from the start)
  std::vector<PipelineSpan> spans;         // when recorded
  // 1 − Σ busy ÷ (P × flush span): the share of the devices' time the pipeline leaves idle.
  double bubble_fraction(double start_seconds) const;
};

// Runs the schedule from `start_seconds`: device d executes pipeline_order(shape, d) one task at a time, each
// when its input has arrived; a finished task sends to its neighbour and the device waits for the send
// (Megatron's p2p calls synchronise). `on_device_done(d)` runs when device d's last backward (and its send)
// has finished. Durations are per global chunk, for one micro-batch.
class PipelineExecutor {
 public:
  PipelineExecutor(EventEngine& engine, const PipelineShape& shape, std::vector<double> forward_seconds,
                   std::vector<double> backward_seconds, PipelineTransport& transport,
                   std::function<void(int device)> on_device_done, bool record);
  void start(double start_seconds);
  const PipelineRun& result() const { return run_; }
  // How a pass runs once it has started (device free, input there) at `start` for `seconds`: by default it
  // ends at start + seconds. A runner may watch passes begin (a last backward's gradient buckets) or hold one
  // past that (a forward waiting for its parameters' gather); it calls `finish(busy_start)` when the pass
  // ends, busy_start being when the device's work on it began (end − seconds when it was held).
  using FinishPass = std::function<void(double busy_start)>;
  using PassRunner = std::function<void(int device, const PipelineTask& task, double start, double seconds, FinishPass finish)>;
  void set_pass_runner(PassRunner runner) { runner_ = std::move(runner); }

 private:
  void try_run(int device);
  void finished(int device, const PipelineTask& task, double start);
  void advance(int device);
  bool ready(const PipelineTask& task) const;
  size_t slot(int chunk, int micro) const { return static_cast<size_t>(chunk) * static_cast<size_t>(shape_.micro_batches) + static_cast<size_t>(micro); }

  EventEngine& engine_;
  PipelineShape shape_;
  std::vector<double> forward_, backward_;
  PipelineTransport& transport_;
  std::function<void(int)> on_device_done_;
  PassRunner runner_;
  bool record_;
  std::vector<std::vector<PipelineTask>> orders_;
  std::vector<size_t> cursor_;
  std::vector<bool> busy_;
  std::vector<char> activation_arrived_, gradient_arrived_;  // per (chunk, micro)
  PipelineRun run_;
};

// The pipeline alone on free transfers (tests, docs): each chunk's forward and backward durations.
PipelineRun simulate_pipeline_schedule(const PipelineShape& shape, const std::vector<double>& forward_seconds,
                                       const std::vector<double>& backward_seconds, bool record = false);

}  // namespace ptsim::sim
