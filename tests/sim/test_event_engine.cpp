// tests/sim/test_event_engine.cpp — the event engine runs in (time, scheduling order), cancels,
// refuses the past, and is deterministic.
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "sim/event_engine.hpp"

using ptsim::sim::EventEngine;

TEST_CASE("events run in time order; equal times run in the order they were scheduled") {
  EventEngine engine;
  std::vector<std::string> log;
  engine.schedule_at(2.0, [&] { log.push_back("b@2"); });
  engine.schedule_at(1.0, [&] { log.push_back("a@1"); });
  engine.schedule_at(2.0, [&] { log.push_back("c@2"); });
  engine.schedule_at(1.0, [&] {
    log.push_back("d@1");
    engine.schedule_after(0.0, [&] { log.push_back("e@1"); });  // same time, scheduled last → runs last at t=1
  });
  engine.run();
  CHECK(log == std::vector<std::string>{"a@1", "d@1", "e@1", "b@2", "c@2"});
  CHECK(engine.now() == 2.0);
  CHECK(engine.events_processed() == 5);
  CHECK(engine.pending_events() == 0);
}

TEST_CASE("cancel removes a pending event; the past is refused") {
  EventEngine engine;
  int runs = 0;
  auto id = engine.schedule_at(1.0, [&] { ++runs; });
  engine.schedule_at(3.0, [&] { ++runs; });
  CHECK(engine.cancel(id));
  CHECK_FALSE(engine.cancel(id));
  engine.run_until(2.0);
  CHECK(runs == 0);
  CHECK(engine.now() == 2.0);
  CHECK_THROWS_AS(engine.schedule_at(1.5, [] {}), std::logic_error);
  engine.run();
  CHECK(runs == 1);
  CHECK(engine.now() == 3.0);
}

TEST_CASE("two identical runs produce the identical event sequence") {
  auto trace = [] {
    EventEngine engine;
    std::vector<int> order;
    for (int i = 0; i < 100; ++i) {
      double t = (i * 37 % 11) * 0.25;  // many ties
      engine.schedule_at(t, [&order, i] { order.push_back(i); });
    }
    engine.run();
    return order;
  };
  CHECK(trace() == trace());
}
