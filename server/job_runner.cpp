// server/job_runner.cpp — one detached thread per computation, a shared in-flight count, and a handler
// that waits on its job's result with a deadline (see the header).
#include "server/job_runner.hpp"

#include <fmt/format.h>

#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

namespace ptsim::server {

struct JobRunner::Counter {
  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  size_t running = 0;
};

namespace {

struct Slot {  // one job's answer, shared by the job's thread and the waiting handler
  std::mutex mutex;
  std::condition_variable done;
  std::optional<ApiResponse> result;
};

}  // namespace

JobRunner::JobRunner(size_t max_in_flight, std::chrono::milliseconds timeout)
    : counter_(std::make_shared<Counter>()), max_in_flight_(max_in_flight), timeout_(timeout) {}

ApiResponse JobRunner::run(std::function<ApiResponse()> job) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  {
    // A request waits for a free slot within its own time limit: a burst queues, a flood is refused.
    std::unique_lock lock(counter_->mutex);
    if (!counter_->changed.wait_until(lock, deadline, [&] { return counter_->running < max_in_flight_; }))
      return {503, error_body(fmt::format("the server is busy: {} computations are running (at most {}) and none "
                                          "finished within {:g} s; try again later",
                                          counter_->running, max_in_flight_, static_cast<double>(timeout_.count()) / 1e3))};
    ++counter_->running;
  }
  auto slot = std::make_shared<Slot>();
  std::thread([slot, counter = counter_, job = std::move(job)] {
    ApiResponse answer;
    try {
      answer = job();
    } catch (const std::exception& e) {
      answer = error_response(e);
    }
    {
      std::lock_guard lock(slot->mutex);
      slot->result = std::move(answer);
    }
    slot->done.notify_all();
    std::lock_guard lock(counter->mutex);
    --counter->running;
    counter->changed.notify_all();
  }).detach();
  std::unique_lock lock(slot->mutex);
  if (!slot->done.wait_until(lock, deadline, [&] { return slot->result.has_value(); }))
    return {504, error_body(fmt::format("the computation took longer than the server's limit of {:g} s per request "
                                        "(ptsim serve --timeout SECONDS raises it; ptsim predict and ptsim sweep have "
                                        "none)", static_cast<double>(timeout_.count()) / 1e3))};
  return std::move(*slot->result);
}

size_t JobRunner::in_flight() const {
  std::lock_guard lock(counter_->mutex);
  return counter_->running;
}

bool JobRunner::wait_idle(std::chrono::milliseconds limit) const {
  std::unique_lock lock(counter_->mutex);
  return counter_->changed.wait_for(lock, limit, [&] { return counter_->running == 0; });
}

}  // namespace ptsim::server
