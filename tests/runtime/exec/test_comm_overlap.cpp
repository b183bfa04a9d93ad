// tests/runtime/exec/test_comm_overlap.cpp — bucket all-reduces started from backward (ExecutorOptions::
// overlap_comm, run_micro_step with a communicator): each bucket starts right after the body op writing
// its last gradient, on the last micro-step only, the tail waits for every one, and the step gives the
// same bits as the non-overlapped tail. A fake 2-rank communicator stands in for MPI: its sum (×2, "both
// ranks hold the same gradient") happens in wait(), so a bucket read or written between start and wait
// would show. A recording backend checks the stream order: the compute stream's averaging of bucket i waits
// on an event recorded right after bucket i's start, not after the later buckets'. The real MPI path:
// tests/runtime/train/test_train_mpi.cpp.
#include <doctest/doctest.h>

#include <cstring>
#include <map>
#include <vector>

#include "models/builder.hpp"
#include "runtime/comm/communicator.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/exec/deferred_communicator.hpp"
#include "tests/runtime/exec/executor_test_support.hpp"
#include "tests/runtime/exec/storage_16bit_support.hpp"

using namespace ptsim::runtime;
using namespace ptsim::models;

namespace {

// Two identical ranks: the sum is 2·x. Blocking calls double at once; started ones double in wait().
class DeferredTwin final : public ptsim::test::DeferredCommunicator {
 public:
  const int* ops_run = nullptr;   // body ops run so far in this step (counted by the executor's after_op)
  std::vector<int> started_at;    // ops_run at each start
  int waits = 0, blocking = 0;
  void all_reduce_sum(std::span<float> data) override {
    ++blocking;
    for (float& v : data) v *= 2;
  }
  void all_reduce_sum(std::span<double> data) override {
    ++blocking;
    for (double& v : data) v *= 2;
  }
  using Communicator::all_reduce_sum;
  CommRequest start_all_reduce_sum(Backend& backend, const DeviceSpan& data, DType type,
                                   Stream stream) override {
    started_at.push_back(ops_run ? *ops_run : -1);
    return DeferredCommunicator::start_all_reduce_sum(backend, data, type, stream);
  }
  void wait(CommRequest request) override {
    DeferredCommunicator::wait(request);
    ++waits;
  }

 private:
  void sum_started(std::span<float> data) override {
    for (float& x : data) x *= 2;
  }
};

// What the stream-order test sees: every record / stream wait of the backend, with the number of
// all-reduces started before it; every host wait of the communicator.
struct StreamLog {
  enum class Kind { record, stream_wait, host_wait };
  struct Entry {
    Kind kind;
    int event = -1, stream = -1, request = -1;
    int started = 0;  // start_all_reduce_sum calls before this entry
  };
  std::vector<Entry> entries;
  int started = 0;
};

// The CPU backend, logging the executor's event records and stream waits. The CPU backend's streams all share
// one id; this one numbers the streams it creates from 1 (the compute stream stays 0), so the log tells them
// apart, and hands the CPU backend its own.
class RecordingBackend final : public ptsim::test::CpuForwardingBackend {
 public:
  explicit RecordingBackend(StreamLog& log) : CpuForwardingBackend(false), log_(log) {}
  Stream create_stream() override {
    created_.push_back(CpuForwardingBackend::create_stream());
    return Stream{static_cast<int32_t>(created_.size())};
  }
  void record(Event e, Stream s) override {
    log_.entries.push_back({StreamLog::Kind::record, e.id, s.id, -1, log_.started});
    CpuForwardingBackend::record(e, inner(s));
  }
  void wait(Stream s, Event e) override {
    log_.entries.push_back({StreamLog::Kind::stream_wait, e.id, s.id, -1, log_.started});
    CpuForwardingBackend::wait(inner(s), e);
  }
  void synchronize(Stream s) override { CpuForwardingBackend::synchronize(inner(s)); }

 private:
  Stream inner(Stream s) const { return s.id == 0 ? s : created_.at(static_cast<size_t>(s.id - 1)); }
  StreamLog& log_;
  std::vector<Stream> created_;
};

// DeferredTwin's sums, logging each start and host wait.
class LoggingTwin final : public ptsim::test::DeferredCommunicator {
 public:
  explicit LoggingTwin(StreamLog& log) : log_(log) {}
  CommRequest start_all_reduce_sum(Backend& backend, const DeviceSpan& data, DType type, Stream stream) override {
    const CommRequest r = DeferredCommunicator::start_all_reduce_sum(backend, data, type, stream);
    ++log_.started;
    started_after[r.id] = log_.started;
    return r;
  }
  void wait(CommRequest request) override {
    DeferredCommunicator::wait(request);
    log_.entries.push_back({StreamLog::Kind::host_wait, -1, -1, request.id, log_.started});
  }
  void all_reduce_sum(std::span<float> data) override {
    for (float& v : data) v *= 2;
  }
  void all_reduce_sum(std::span<double> data) override {
    for (double& v : data) v *= 2;
  }
  using Communicator::all_reduce_sum;
  std::map<int, int> started_after;  // [request id]: log.started once it was started

 private:
  void sum_started(std::span<float> data) override {
    for (float& x : data) x *= 2;
  }
  StreamLog& log_;
};

// Two LAMB steps of two micro-steps; returns every parameter after them.
std::vector<std::vector<float>> train(const TaskGraph& g, bool overlap, DeferredTwin& comm, int& ops_run) {
  ExecutorOptions o;
  o.overlap_comm = overlap;
  o.after_op = [&](const Op&) { ++ops_run; };
  Executor ex(g, o);
  ex.init_parameters(5);
  auto opt = make_optimizer(ex.backend(), default_optimizer_config(OptimizerKind::lamb), ex.param_slots());
  for (int64_t step = 1; step <= 2; ++step) {
    ops_run = 0;
    for (int64_t micro = 0; micro < 2; ++micro) {
      ptsim::test::fill_inputs(ex, static_cast<uint64_t>(10 * step + micro), 0.5);
      ex.run_micro_step(step, micro, &comm);
    }
    ex.run_step_tail(&comm, opt.get(), 1e-2);
  }
  std::vector<std::vector<float>> w;
  for (size_t i = 0; i < g.params.size(); ++i) w.push_back(ex.read_parameter(i));
  return w;
}

}  // namespace

TEST_CASE("overlapped bucket all-reduces: started from backward after their last gradient, same bits as the tail") {
  const TaskGraph g = ptsim::test::two_rank_graph();
  int buckets = 0;
  for (const Op& op : g.ops) buckets += op.kind == OpKind::all_reduce;
  REQUIRE(buckets > 2);
  size_t body = 0;
  for (const Op& op : g.ops) body += is_micro_step_phase(op.phase);

  int ops_overlap = 0, ops_tail = 0;
  DeferredTwin overlapped, in_tail;
  overlapped.ops_run = &ops_overlap;
  in_tail.ops_run = &ops_tail;
  const auto a = train(g, true, overlapped, ops_overlap);
  const auto b = train(g, false, in_tail, ops_tail);

  // Every bucket started once per step, in the last micro-step (after the first micro-step's `body` ops),
  // and at least one before backward ended; all waited for.
  CHECK(static_cast<int>(overlapped.started_at.size()) == 2 * buckets);
  CHECK(overlapped.waits == 2 * buckets);
  CHECK(overlapped.blocking == 0);
  int early = 0;
  for (int at : overlapped.started_at) {
    CHECK(at > static_cast<int>(body));
    CHECK(at <= static_cast<int>(2 * body));
    early += at < static_cast<int>(2 * body);
  }
  CHECK(early > 0);
  // Without overlap the executor runs the blocking sum per bucket, in the tail.
  CHECK(in_tail.started_at.empty());
  CHECK(in_tail.blocking == 2 * buckets);

  size_t differing = 0;
  for (size_t i = 0; i < a.size(); ++i)
    differing += a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)) != 0;
  CHECK(differing == 0);
}

TEST_CASE("overlapped all-reduces must be finished by the tail on the same communicator") {
  const TaskGraph g = ptsim::test::two_rank_graph();
  int ops = 0;
  DeferredTwin comm, other;
  comm.ops_run = &ops;
  Executor ex(g, {});
  ex.init_parameters(5);
  ptsim::test::fill_inputs(ex, 1, 0.5);
  ex.run_micro_step(1, 0, &comm);
  CHECK(comm.started_at.empty());  // not the last micro-step
  ex.run_micro_step(1, 1, &comm);
  CHECK_FALSE(comm.started_at.empty());
  CHECK_THROWS_AS(ex.run_micro_step(2, 0, &comm), std::logic_error);  // the tail has not run
  CHECK_THROWS_AS(ex.run_step_tail(&other, nullptr, 0.0), std::logic_error);
  ex.run_step_tail(&comm, nullptr, 0.0);
  CHECK(comm.waits == static_cast<int>(comm.started_at.size()));
}

TEST_CASE("overlapped bucket all-reduces: the compute stream waits on each bucket's own event, not the later ones'") {
  const TaskGraph g = ptsim::test::two_rank_graph();
  StreamLog log;
  LoggingTwin comm(log);
  ExecutorOptions o;
  o.overlap_comm = true;
  Executor ex(g, o, std::make_unique<RecordingBackend>(log));
  ex.init_parameters(5);
  for (int64_t micro = 0; micro < 2; ++micro) {
    ptsim::test::fill_inputs(ex, static_cast<uint64_t>(10 + micro), 0.5);
    ex.run_micro_step(1, micro, &comm);
  }
  ex.run_step_tail(&comm, nullptr, 0.0);
  REQUIRE(comm.started_after.size() > 2);  // several buckets (two_rank_graph), or the order shows nothing

  // After each host wait for request r, the compute stream (stream 0) waits on one event before averaging;
  // that event's last record before the wait must be bucket r's: on the communication stream, with exactly
  // the buckets up to r started (the old shared event was recorded after all of them).
  std::map<int, int> last_record_started, last_record_stream;  // [event id]
  int checked = 0, awaiting = -1;  // awaiting: the request host-waited last whose stream wait is not seen yet
  for (const StreamLog::Entry& e : log.entries) {
    if (e.kind == StreamLog::Kind::record) {
      last_record_started[e.event] = e.started;
      last_record_stream[e.event] = e.stream;
    }
    if (e.kind == StreamLog::Kind::host_wait) {
      CHECK(awaiting < 0);  // each host wait is followed by its compute-stream wait before the next one
      awaiting = e.request;
    }
    if (e.kind != StreamLog::Kind::stream_wait || e.stream != 0 || awaiting < 0) continue;
    CAPTURE(awaiting);
    CHECK(last_record_stream.at(e.event) != 0);
    CHECK(last_record_started.at(e.event) == comm.started_after.at(awaiting));
    awaiting = -1;
    ++checked;
  }
  CHECK(checked == static_cast<int>(comm.started_after.size()));  // every started bucket was waited for
}
