// server/job_runner.hpp — the per-request time limit of `ptsim serve`: a request's computation runs on a
// thread of its own and the handler waits for it at most `timeout`; past that the client gets 504 (the
// computation finishes in the background and its answer is dropped: a simulation cannot be interrupted).
// At most `max_in_flight` computations run at once, counting the abandoned ones; a request beyond that
// waits for a slot within its own time limit and is answered 503 if none frees, so a client that keeps
// sending slow requests cannot pile up threads.
#pragma once
#include <chrono>
#include <functional>
#include <memory>

#include "server/api.hpp"

namespace ptsim::server {

class JobRunner {
 public:
  JobRunner(size_t max_in_flight, std::chrono::milliseconds timeout);

  ApiResponse run(std::function<ApiResponse()> job);
  size_t in_flight() const;
  // Waits until no computation runs, at most `limit`; false if some still do (the caller exits anyway).
  bool wait_idle(std::chrono::milliseconds limit) const;

 private:
  struct Counter;
  std::shared_ptr<Counter> counter_;  // shared with the job threads, which may outlive a handler
  size_t max_in_flight_;
  std::chrono::milliseconds timeout_;
};

}  // namespace ptsim::server
