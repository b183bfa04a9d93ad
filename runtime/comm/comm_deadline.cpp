// runtime/comm/comm_deadline.cpp — the bounded wait for a collective and its timeout setting (see the header).
#include "runtime/comm/comm_deadline.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <thread>

#include "core/error.hpp"

namespace ptsim::runtime {

PollClock PollClock::real() {
  return {[] { return std::chrono::steady_clock::now(); },
          [](std::chrono::microseconds pause) { std::this_thread::sleep_for(pause); }};
}

std::chrono::milliseconds comm_timeout_from_env(const char* value) {
  double seconds = kDefaultCommTimeoutSeconds;
  if (value != nullptr) {
    char* end = nullptr;
    errno = 0;
    seconds = std::strtod(value, &end);
    const bool parsed = end != value && *end == '\0' && errno == 0 && std::isfinite(seconds);
    if (!parsed || !(seconds > 0) || seconds > kMaxCommTimeoutSeconds)
      throw core::InputError(fmt::format("PTSIM_COMM_TIMEOUT_S='{}': expected a number of seconds in (0, {}] "
                                         "(how long a collective may take before every rank is ended; default {})",
                                         value, kMaxCommTimeoutSeconds, kDefaultCommTimeoutSeconds));
  }
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000.0)));
}

void await_collective(CommProbe& probe, std::string_view what, std::chrono::milliseconds timeout,
                      const PollClock& clock, std::chrono::microseconds poll_interval) {
  const auto deadline = clock.now() + timeout;
  std::string why;
  for (;;) {
    switch (probe.poll(why)) {
      case CommPoll::done: return;
      case CommPoll::failed:
        probe.abort();
        throw CommFailure(fmt::format("{} failed: {} (communicator aborted)", what, why));
      case CommPoll::pending: break;
    }
    if (clock.now() >= deadline) {
      probe.abort();
      throw CommFailure(comm_timeout_message(what, timeout));
    }
    clock.sleep(poll_interval);
  }
}

std::string comm_timeout_message(std::string_view what, std::chrono::milliseconds timeout) {
  return fmt::format("{} did not finish within {:.3f} s (a rank died or hangs, or the network is down); "
                     "communicator aborted. PTSIM_COMM_TIMEOUT_S sets the limit",
                     what, static_cast<double>(timeout.count()) / 1000.0);
}

void await_device(const std::function<bool()>& ready, HostWaitGuard& guard, std::string_view what,
                  const PollClock& clock, std::chrono::microseconds poll_interval) {
  while (!ready()) {
    guard.check(what);
    clock.sleep(poll_interval);
  }
}

}  // namespace ptsim::runtime
