// sim/event_engine.cpp — see event_engine.hpp.
#include "sim/event_engine.hpp"

#include <limits>
#include <stdexcept>
#include <string>

namespace ptsim::sim {

EventId EventEngine::schedule_at(double time_seconds, Callback callback) {
  if (!(time_seconds >= now_seconds_)) {  // also rejects NaN
    throw std::logic_error("EventEngine: event scheduled in the past (t=" + std::to_string(time_seconds) +
                           " s, now=" + std::to_string(now_seconds_) + " s)");
  }
  EventId id = next_id_++;
  queue_.push(Entry{time_seconds, id});
  callbacks_.emplace(id, std::move(callback));
  return id;
}

bool EventEngine::cancel(EventId id) { return callbacks_.erase(id) > 0; }

bool EventEngine::run_one(double limit_seconds) {
  while (!queue_.empty()) {
    Entry top = queue_.top();
    if (top.time_seconds > limit_seconds) return false;
    queue_.pop();
    auto it = callbacks_.find(top.id);
    if (it == callbacks_.end()) continue;  // cancelled
    Callback cb = std::move(it->second);
    callbacks_.erase(it);
    now_seconds_ = top.time_seconds;
    ++events_processed_;
    cb();
    return true;
  }
  return false;
}

void EventEngine::run() {
  while (run_one(std::numeric_limits<double>::infinity())) {
  }
}

void EventEngine::run_until(double time_seconds) {
  while (run_one(time_seconds)) {
  }
  if (time_seconds > now_seconds_) now_seconds_ = time_seconds;
}

}  // namespace ptsim::sim
