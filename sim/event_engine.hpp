// sim/event_engine.hpp — the discrete-event engine: a clock in seconds and a queue of callbacks.
// Equal timestamps run in the order they were scheduled (a sequence number breaks ties), so a run is
// deterministic. Not here: what the events mean (sim/network, the schedule) — only when they run.
#pragma once
#include <cstdint>
#include <functional>
#include <queue>
#include <unordered_map>
#include <vector>

namespace ptsim::sim {

using EventId = std::uint64_t;

class EventEngine {
 public:
  using Callback = std::function<void()>;

  double now() const { return now_seconds_; }

  // Schedules `callback` at absolute time `time_seconds` (>= now(); earlier times throw
  // std::logic_error). Returns an id usable with cancel().
  EventId schedule_at(double time_seconds, Callback callback);
  EventId schedule_after(double delay_seconds, Callback callback) {
    return schedule_at(now_seconds_ + delay_seconds, std::move(callback));
  }
  // Cancels a pending event; returns false if it already ran or was cancelled.
  bool cancel(EventId id);

  // Runs events in (time, sequence) order until the queue is empty.
  void run();
  // Runs events with time <= `time_seconds`, then sets now() to `time_seconds` (if it is later).
  void run_until(double time_seconds);

  std::size_t pending_events() const { return callbacks_.size(); }
  std::uint64_t events_processed() const { return events_processed_; }

 private:
  struct Entry {
    double time_seconds = 0;
    EventId id = 0;  // also the sequence number: ids grow monotonically
    bool operator>(const Entry& other) const {
      return time_seconds != other.time_seconds ? time_seconds > other.time_seconds : id > other.id;
    }
  };
  bool run_one(double limit_seconds);

  double now_seconds_ = 0;
  EventId next_id_ = 1;
  std::uint64_t events_processed_ = 0;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> queue_;
  std::unordered_map<EventId, Callback> callbacks_;  // pending (not cancelled) events
};

}  // namespace ptsim::sim
