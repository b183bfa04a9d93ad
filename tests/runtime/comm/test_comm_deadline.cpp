// tests/runtime/comm/test_comm_deadline.cpp — the bounded collective wait (runtime/comm/comm_deadline.*)
// against a fake communicator state and a fake clock: done returns, an async error aborts and reports, a
// collective that never finishes times out at the deadline and aborts; the timeout variable's parsing; the
// host-wait poll loop (await_device) against a fake query sequence and a fake guard.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "runtime/comm/comm_deadline.hpp"

using namespace ptsim::runtime;
using namespace std::chrono_literals;

namespace {

// A communicator whose outstanding work finishes after `pending_polls` polls, or fails at that poll, or
// never finishes (pending_polls < 0).
struct FakeProbe final : CommProbe {
  int pending_polls = 0;
  bool fail = false;
  int polls = 0;
  int aborts = 0;
  CommPoll poll(std::string& why) override {
    ++polls;
    if (pending_polls >= 0 && polls > pending_polls) {
      if (!fail) return CommPoll::done;
      why = "unhandled system error (remote process exited)";
      return CommPoll::failed;
    }
    return CommPoll::pending;
  }
  void abort() override { ++aborts; }
};

// Time moves only when await_collective sleeps.
struct FakeClock {
  std::chrono::steady_clock::time_point t{};
  int sleeps = 0;
  PollClock clock() {
    return {[this] { return t; }, [this](std::chrono::microseconds d) { t += d; ++sleeps; }};
  }
};

// A device query that says "not yet" `pending_polls` times, then "done"; and a guard that records what it was
// asked about and throws CommFailure at its `fail_at`th check (0: never), as NcclCommunicator's does past the
// deadline.
struct FakeQuery {
  int pending_polls = 0;
  int polls = 0;
  bool operator()() { return ++polls > pending_polls; }
};
struct FakeGuard final : HostWaitGuard {
  int fail_at = 0;
  std::vector<std::string> asked;
  void check(std::string_view waiting_for) override {
    asked.emplace_back(waiting_for);
    if (static_cast<int>(asked.size()) == fail_at) throw CommFailure("ncclAllReduce of 64 bytes did not finish");
  }
};

}  // namespace

TEST_CASE("await_device: a finished stream returns at the first query, without a check or a pause") {
  FakeQuery query;
  FakeGuard guard;
  FakeClock fake;
  await_device(std::ref(query), guard, "the compute stream (copy to host)", fake.clock());
  CHECK(query.polls == 1);
  CHECK(guard.asked.empty());
  CHECK(fake.sleeps == 0);  // the single-GPU cost of a wait on a finished stream: one query
}

TEST_CASE("await_device: asks the guard between polls, naming the wait, one pause of 50 µs each") {
  FakeQuery query;
  query.pending_polls = 3;
  FakeGuard guard;
  FakeClock fake;
  await_device(std::ref(query), guard, "the compute stream (synchronize)", fake.clock());
  CHECK(query.polls == 4);  // 3 "not yet", then done
  REQUIRE(guard.asked.size() == 3);
  for (const std::string& what : guard.asked) CHECK(what == "the compute stream (synchronize)");
  CHECK(fake.sleeps == 3);
  CHECK(fake.t - std::chrono::steady_clock::time_point{} == 150us);  // 3 × the default 50 µs interval
}

TEST_CASE("await_device: a guard's CommFailure ends a wait that would never finish") {
  FakeQuery query;
  query.pending_polls = 1 << 30;  // a stream behind a collective that never finishes
  FakeGuard guard;
  guard.fail_at = 5;
  FakeClock fake;
  CHECK_THROWS_AS(await_device(std::ref(query), guard, "the compute stream", fake.clock()), CommFailure);
  CHECK(query.polls == 5);  // no poll after the failing check
  CHECK(guard.asked.size() == 5);
  CHECK(fake.sleeps == 4);
}

TEST_CASE("await_collective returns when the probe reports done, without aborting") {
  FakeProbe probe;
  probe.pending_polls = 3;
  FakeClock fake;
  await_collective(probe, "ncclAllReduce", 1000ms, fake.clock(), 100us);
  CHECK(probe.polls == 4);  // 3 pending polls, then done
  CHECK(fake.sleeps == 3);  // one pause after each pending poll
  CHECK(probe.aborts == 0);
}

TEST_CASE("await_collective aborts and reports an asynchronous error") {
  FakeProbe probe;
  probe.pending_polls = 2;
  probe.fail = true;
  FakeClock fake;
  std::string message;
  try {
    await_collective(probe, "ncclAllReduce of 64 bytes", 1000ms, fake.clock(), 100us);
  } catch (const CommFailure& e) {
    message = e.what();
  }
  CHECK(probe.aborts == 1);
  CHECK(message.find("ncclAllReduce of 64 bytes failed") != std::string::npos);
  CHECK(message.find("remote process exited") != std::string::npos);
  CHECK(message.find("aborted") != std::string::npos);
}

TEST_CASE("await_collective times out at the deadline when the collective never finishes, then aborts") {
  FakeProbe probe;
  probe.pending_polls = -1;  // a peer that died: never done
  FakeClock fake;
  std::string message;
  try {
    await_collective(probe, "ncclAllReduce", 10ms, fake.clock(), 100us);
  } catch (const CommFailure& e) {
    message = e.what();
  }
  CHECK(probe.aborts == 1);
  // 10 ms at 100 µs per pause: the deadline is reached after exactly 100 pauses (fake time, no rounding).
  CHECK(fake.sleeps == 100);
  CHECK(fake.t - std::chrono::steady_clock::time_point{} == 10ms);
  CHECK(message.find("did not finish within 0.010 s") != std::string::npos);
  CHECK(message.find("PTSIM_COMM_TIMEOUT_S") != std::string::npos);
}

TEST_CASE("await_collective with the real clock ends a hung collective in bounded time") {
  FakeProbe probe;
  probe.pending_polls = -1;
  const auto start = std::chrono::steady_clock::now();
  CHECK_THROWS_AS(await_collective(probe, "ncclAllReduce", 20ms), CommFailure);
  const auto took = std::chrono::steady_clock::now() - start;
  CHECK(took >= 20ms);
  // Generous bound: the 2-core CI machine may be loaded; a hang would never return at all.
  CHECK(took < 5s);
  CHECK(probe.aborts == 1);
}

TEST_CASE("PTSIM_COMM_TIMEOUT_S: default, valid values, refusals") {
  CHECK(comm_timeout_from_env(nullptr) == 600000ms);  // kDefaultCommTimeoutSeconds = 600
  CHECK(comm_timeout_from_env("30") == 30000ms);
  CHECK(comm_timeout_from_env("0.5") == 500ms);
  CHECK(comm_timeout_from_env("86400") == 86400000ms);  // the upper limit is accepted
  for (const char* bad : {"", "abc", "10s", "0", "-5", "86401", "nan", "inf"}) {
    std::string message;
    try {
      comm_timeout_from_env(bad);
    } catch (const ptsim::core::InputError& e) {
      message = e.what();
    }
    CHECK_MESSAGE(message.find("PTSIM_COMM_TIMEOUT_S") != std::string::npos, bad);
    CHECK_MESSAGE(message.find("expected a number of seconds") != std::string::npos, bad);
  }
}
