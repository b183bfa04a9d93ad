// runtime/comm/comm_deadline.hpp — bounded waits for collectives that may never finish: a peer rank died, a
// network link broke, or the collective library reported an asynchronous error. await_collective polls a
// CommProbe (the NCCL communicator's: the stream's event + ncclCommGetAsyncError) until it reports done;
// on an error, or when the deadline passes first, it aborts the communicator (ncclCommAbort) and throws
// CommFailure naming the collective, the cause and the timeout. The probe and the clock are interfaces so
// the cpu suite drives this logic with a fake communicator state and a fake clock (no GPU, no real waits).
// The timeout: PTSIM_COMM_TIMEOUT_S (seconds), default kDefaultCommTimeoutSeconds; docs/nccl.md says why.
// Also the other half of that bound: await_device, the poll loop of a backend's host waits on a stream (a
// synchronize, a copy to host) while a communicator's collectives are in flight on the device, which asks the
// communicator's HostWaitGuard between polls, so a compute stream stuck behind a collective that never
// finishes ends with CommFailure too (docs/nccl.md, "Host waits behind a collective").
// Not here: the NCCL calls themselves (nccl_communicator.cpp).
#pragma once
#include <chrono>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace ptsim::runtime {

// What a probe sees when polled once.
enum class CommPoll { done, pending, failed };

// The state of one communicator's outstanding work, as await_collective polls it.
class CommProbe {
 public:
  virtual ~CommProbe() = default;
  // Looks once, without blocking. On `failed`, `why` says what the library reported.
  virtual CommPoll poll(std::string& why) = 0;
  // Ends the communicator's outstanding work so no later call blocks on it (ncclCommAbort). Called once,
  // on failure or timeout, before CommFailure is thrown.
  virtual void abort() = 0;
};

// A collective failed or did not finish in time; the communicator was aborted. The trainer's caller ends
// every rank (tools/cmd_train.cpp: MPI_Abort, exit 1).
class CommFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The clock await_collective reads and the pause between polls (real: steady_clock and sleep_for).
struct PollClock {
  std::function<std::chrono::steady_clock::time_point()> now;
  std::function<void(std::chrono::microseconds)> sleep;
  static PollClock real();
};

// Why 600 s: the default collective timeout of PyTorch's NCCL process group (10 minutes), long enough for
// NCCL's first-call connection setup across nodes and for rank 0 writing a checkpoint while the others
// wait in the next all-reduce; a hung job still ends within 10 minutes (docs/nccl.md).
inline constexpr double kDefaultCommTimeoutSeconds = 600.0;
inline constexpr double kMaxCommTimeoutSeconds = 86400.0;  // one day: larger values are a typo, refused

// The timeout from the value of PTSIM_COMM_TIMEOUT_S (null: not set → the default). Throws core::InputError
// naming the variable, the value and the accepted range for anything but a number in (0, 86400].
std::chrono::milliseconds comm_timeout_from_env(const char* value);

// Polls `probe` until done. Between polls it sleeps `poll_interval`. Throws CommFailure (after
// probe.abort()) when the probe fails, or when `timeout` has passed since the call without done.
// `what` names the collective in the message ("ncclAllReduce of 4194304 bytes").
void await_collective(CommProbe& probe, std::string_view what, std::chrono::milliseconds timeout,
                      const PollClock& clock = PollClock::real(),
                      std::chrono::microseconds poll_interval = std::chrono::microseconds(50));

// "<what> did not finish within <timeout> s (...); communicator aborted. PTSIM_COMM_TIMEOUT_S sets the
// limit": the message of every timed-out collective.
std::string comm_timeout_message(std::string_view what, std::chrono::milliseconds timeout);

// What a backend's host wait on the device asks while it waits: a communicator's view of its collectives in
// flight on that device (installed by the communicator: CudaStreamSource::set_host_wait_guard).
class HostWaitGuard {
 public:
  virtual ~HostWaitGuard() = default;
  // Called between polls of a host wait for `waiting_for` ("the compute stream (copy to host)") that has not
  // finished. Throws CommFailure, after aborting the communicator (which releases the device work waiting on
  // the collective, so the stream then finishes), when the library reported an error or a collective in
  // flight has run past the timeout; returns otherwise.
  virtual void check(std::string_view waiting_for) = 0;
};

// Polls `ready` (a cudaStreamQuery / cudaEventQuery: true once the device has passed the point; it throws on
// a device error) until it says true. Returns at once, without a check or a sleep, when the first poll says
// true; otherwise calls guard.check(what) and then sleeps `poll_interval` between polls. Why 50 µs: well
// under a step's smallest host wait (a copy of a few bytes costs ~10 µs on a GPU, a step 100s of ms), so the
// wait ends at most ~one interval (plus the OS's wake-up, ~50 µs more) after the device finished, and one
// cudaStreamQuery (~1 µs) per interval keeps the polling thread mostly asleep.
void await_device(const std::function<bool()>& ready, HostWaitGuard& guard, std::string_view what,
                  const PollClock& clock = PollClock::real(),
                  std::chrono::microseconds poll_interval = std::chrono::microseconds(50));

}  // namespace ptsim::runtime
