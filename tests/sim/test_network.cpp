// tests/sim/test_network.cpp — flow-level model: max-min fair rates (progressive filling), latency,
// rate caps, multiplicity and link shares, completion times with changing rates.
// Expected rates are the textbook max-min allocations (Bertsekas & Gallager, Data Networks §6.5.2),
// worked out in each test's comment. Tolerance: 1e-9 relative (the solver is exact up to rounding).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "sim/event_engine.hpp"
#include "sim/network.hpp"

using namespace ptsim::sim;

namespace {
constexpr double kTol = 1e-9;
FlowSpec flow(std::vector<LinkId> route, double bytes) {
  FlowSpec f;
  f.route = std::move(route);
  f.bytes = bytes;
  return f;
}
}  // namespace

TEST_CASE("one flow: time = latency + bytes / bandwidth") {
  EventEngine engine;
  Network net(engine);
  LinkId a = net.add_link("a", 1e9, 1e-3);
  LinkId b = net.add_link("b", 2e9, 2e-3);
  double done = -1;
  FlowSpec f = flow({a, b}, 1e9);
  f.extra_latency_seconds = 5e-6;
  net.start_flow(f, [&] { done = engine.now(); });
  engine.run();
  // 1e-3 + 2e-3 + 5e-6 latency, then 1e9 B at the bottleneck 1e9 B/s = 1 s.
  CHECK(done == doctest::Approx(1.0 + 3e-3 + 5e-6).epsilon(kTol));
  CHECK(net.link_bytes_carried(a) == doctest::Approx(1e9).epsilon(kTol));
}

TEST_CASE("two flows on one link get half the bandwidth each") {
  EventEngine engine;
  Network net(engine);
  LinkId l = net.add_link("l", 10.0);
  std::vector<double> done;
  FlowId f1 = net.start_flow(flow({l}, 10.0), [&] { done.push_back(engine.now()); });
  FlowId f2 = net.start_flow(flow({l}, 10.0), [&] { done.push_back(engine.now()); });
  engine.run_until(0.0);
  CHECK(net.flow_rate(f1) == doctest::Approx(5.0).epsilon(kTol));  // 10 / 2
  CHECK(net.flow_rate(f2) == doctest::Approx(5.0).epsilon(kTol));
  engine.run();
  REQUIRE(done.size() == 2);
  CHECK(done[0] == doctest::Approx(2.0).epsilon(kTol));  // 10 B at 5 B/s
  CHECK(done[1] == doctest::Approx(2.0).epsilon(kTol));
}

TEST_CASE("three flows with different bottlenecks: water-filling rates") {
  // Links A (cap 10) and B (cap 4). f1 crosses A; f2 crosses A and B; f3 crosses B.
  // Fill: B saturates first at level 4/2 = 2 (f2, f3 frozen at 2); A then has 10 − 2 = 8 left for f1.
  EventEngine engine;
  Network net(engine);
  LinkId a = net.add_link("A", 10.0);
  LinkId b = net.add_link("B", 4.0);
  FlowId f1 = net.start_flow(flow({a}, 100.0), {});
  FlowId f2 = net.start_flow(flow({a, b}, 100.0), {});
  FlowId f3 = net.start_flow(flow({b}, 100.0), {});
  engine.run_until(0.0);
  CHECK(net.flow_rate(f1) == doctest::Approx(8.0).epsilon(kTol));
  CHECK(net.flow_rate(f2) == doctest::Approx(2.0).epsilon(kTol));
  CHECK(net.flow_rate(f3) == doctest::Approx(2.0).epsilon(kTol));
}

TEST_CASE("parking lot: a long flow and two short ones share two unit links equally") {
  // L1, L2 cap 1; f0 crosses both, f1 only L1, f2 only L2 → every link has 2 flows → 1/2 each.
  EventEngine engine;
  Network net(engine);
  LinkId l1 = net.add_link("L1", 1.0), l2 = net.add_link("L2", 1.0);
  FlowId f0 = net.start_flow(flow({l1, l2}, 1.0), {});
  FlowId f1 = net.start_flow(flow({l1}, 1.0), {});
  FlowId f2 = net.start_flow(flow({l2}, 1.0), {});
  engine.run_until(0.0);
  CHECK(net.flow_rate(f0) == doctest::Approx(0.5).epsilon(kTol));
  CHECK(net.flow_rate(f1) == doctest::Approx(0.5).epsilon(kTol));
  CHECK(net.flow_rate(f2) == doctest::Approx(0.5).epsilon(kTol));
}

TEST_CASE("a per-flow cap freezes that flow and the others take the rest") {
  // Link 10; f1 capped at 2 (a TCP socket limit) → f1 = 2, f2 = 10 − 2 = 8.
  EventEngine engine;
  Network net(engine);
  LinkId l = net.add_link("l", 10.0);
  FlowSpec capped = flow({l}, 100.0);
  capped.rate_cap_bytes_per_second = 2.0;
  FlowId f1 = net.start_flow(capped, {});
  FlowId f2 = net.start_flow(flow({l}, 100.0), {});
  engine.run_until(0.0);
  CHECK(net.flow_rate(f1) == doctest::Approx(2.0).epsilon(kTol));
  CHECK(net.flow_rate(f2) == doctest::Approx(8.0).epsilon(kTol));
}

TEST_CASE("multiplicity and link shares load links like the flows they stand for") {
  // Link 8 carries a spec of 3 identical flows and 1 ordinary flow: 4 flows → 2 each.
  EventEngine engine;
  Network net(engine);
  LinkId l = net.add_link("l", 8.0);
  FlowSpec triple = flow({l}, 100.0);
  triple.multiplicity = 3;
  FlowId f3 = net.start_flow(triple, {});
  FlowId f1 = net.start_flow(flow({l}, 100.0), {});
  engine.run_until(0.0);
  CHECK(net.flow_rate(f3) == doctest::Approx(2.0).epsilon(kTol));
  CHECK(net.flow_rate(f1) == doctest::Approx(2.0).epsilon(kTol));

  // link_share: 4 flows of which only 1 crosses this instance of "own" (cap 1) but all 4 cross
  // "shared" (cap 100): per-flow rate = min(1/1, 100/4) = 1.
  EventEngine e2;
  Network n2(e2);
  LinkId own = n2.add_link("own", 1.0), shared = n2.add_link("shared", 100.0);
  FlowSpec rep = flow({own, shared}, 10.0);
  rep.multiplicity = 4;
  rep.link_share = {1, 4};
  FlowId fr = n2.start_flow(rep, {});
  e2.run_until(0.0);
  CHECK(n2.flow_rate(fr) == doctest::Approx(1.0).epsilon(kTol));
}

TEST_CASE("rates change when flows finish or start; completion integrates the changing rate") {
  // Link 1 B/s. A (1 B) and B (3 B) start at 0: 0.5 B/s each; A is done at 2 s, when B has moved
  // 1 B; B's last 2 B then go at 1 B/s → done at 4 s.
  EventEngine engine;
  Network net(engine);
  LinkId l = net.add_link("l", 1.0);
  double a_done = -1, b_done = -1;
  net.start_flow(flow({l}, 1.0), [&] { a_done = engine.now(); });
  net.start_flow(flow({l}, 3.0), [&] { b_done = engine.now(); });
  engine.run();
  CHECK(a_done == doctest::Approx(2.0).epsilon(kTol));
  CHECK(b_done == doctest::Approx(4.0).epsilon(kTol));

  // C (2 B) alone on [0, 1): 1 B moved. D (0.5 B) joins at 1: 0.5 each → D done at 2; C has 0.5 B
  // left at 1 B/s → done at 2.5.
  EventEngine e2;
  Network n2(e2);
  LinkId m = n2.add_link("m", 1.0);
  double c_done = -1, d_done = -1;
  n2.start_flow(flow({m}, 2.0), [&] { c_done = e2.now(); });
  e2.schedule_at(1.0, [&] { n2.start_flow(flow({m}, 0.5), [&] { d_done = e2.now(); }); });
  e2.run();
  CHECK(d_done == doctest::Approx(2.0).epsilon(kTol));
  CHECK(c_done == doctest::Approx(2.5).epsilon(kTol));
}

TEST_CASE("a flow that joins at the instant another finishes is not finished with it") {
  // B is started at 0 with 1 s latency, A at 0 with none: at t = 1 B joins (its activation event was
  // scheduled first) just before A's completion event runs. B must still move its 2 B at 1 B/s → 3 s.
  EventEngine engine;
  Network net(engine);
  LinkId l = net.add_link("l", 1.0);
  double a_done = -1, b_done = -1;
  FlowSpec b = flow({l}, 2.0);
  b.extra_latency_seconds = 1.0;
  net.start_flow(b, [&] { b_done = engine.now(); });
  net.start_flow(flow({l}, 1.0), [&] { a_done = engine.now(); });
  engine.run();
  CHECK(a_done == doctest::Approx(1.0).epsilon(kTol));
  CHECK(b_done == doctest::Approx(3.0).epsilon(kTol));
}

TEST_CASE("zero-byte flows finish after their latency; a link crossed twice is loaded twice") {
  EventEngine engine;
  Network net(engine);
  LinkId l = net.add_link("l", 10.0, 0.25);
  double done = -1;
  net.start_flow(flow({l}, 0.0), [&] { done = engine.now(); });
  engine.run();
  CHECK(done == doctest::Approx(0.25).epsilon(kTol));
  // route {l, l}: load 2 × rate ≤ 10 → rate 5; 10 B take 2 s after 2 × 0.25 s latency.
  double done2 = -1;
  net.start_flow(flow({l, l}, 10.0), [&] { done2 = engine.now(); });
  engine.run();
  CHECK(done2 == doctest::Approx(0.25 + 0.5 + 2.0).epsilon(kTol));
}

TEST_CASE("thousands of flows on random routes complete and conserve bytes") {
  EventEngine engine;
  Network net(engine);
  std::mt19937 rng(7);
  const int links = 200, flows = 2000;
  for (int i = 0; i < links; ++i) {
    std::string name = "l";  // appended, not "l" + to_string: GCC 12 -Wrestrict false positive
    name += std::to_string(i);
    net.add_link(name, 1e9 * (1 + i % 5));
  }
  std::uniform_int_distribution<int> pick(0, links - 1);
  std::uniform_real_distribution<double> size(1e6, 1e8);
  double hop_bytes = 0;
  int completed = 0;
  for (int i = 0; i < flows; ++i) {
    FlowSpec f = flow({pick(rng), pick(rng), pick(rng)}, size(rng));
    hop_bytes += 3 * f.bytes;
    double start = (i % 10) * 1e-3;
    engine.schedule_at(start, [&net, f, &completed] { net.start_flow(f, [&completed] { ++completed; }); });
  }
  engine.run();
  CHECK(completed == flows);
  double carried = 0;
  for (int i = 0; i < links; ++i) carried += net.link_bytes_carried(i);
  CHECK(carried == doctest::Approx(hop_bytes).epsilon(1e-9));
}
