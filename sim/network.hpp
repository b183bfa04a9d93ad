// sim/network.hpp — flow-level network model: links (bandwidth, latency) and flows that share them
// max-min fairly (progressive filling), re-solved whenever a flow starts or finishes.
// A flow can stand for several identical flows (multiplicity), so symmetric replicas are simulated once.
// Not here: which links exist (sim/topology) or which flows a collective makes (sim/collectives).
// Model and sources: docs/network-model.md.
#pragma once
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <map>
#include <memory>
#include <vector>

#include "sim/event_engine.hpp"

namespace ptsim::sim {

using LinkId = int;
using FlowId = std::uint64_t;

struct Link {
  std::string name;
  double bandwidth_bytes_per_second = 0;  // one direction; > 0
  double latency_seconds = 0;             // added to every flow that crosses it
};

struct FlowSpec {
  std::vector<LinkId> route;  // links crossed, in order; a link may appear twice (it is then loaded twice)
  double bytes = 0;           // bytes of ONE of the flows this spec stands for
  // How many identical flows this one stands for (they start together and get the same rate).
  double multiplicity = 1;
  // Optional, one entry per hop of `route`: how many of the `multiplicity` flows cross THIS link
  // instance (the others cross isomorphic links that are not simulated). Empty = all of them.
  // A hop's load on its link is link_share × per-flow rate.
  std::vector<double> link_share;
  double rate_cap_bytes_per_second = 0;  // per-flow cap (e.g. one TCP socket); 0 = none
  double extra_latency_seconds = 0;      // added to the route's latency (per-message software latency)
};

// Completion time of a flow = start + latency (route + extra) + time to move `bytes` at its
// (changing) max-min fair rate. During the latency phase the flow does not load any link.
class Network {
 public:
  using Callback = std::function<void()>;

  explicit Network(EventEngine& engine) : engine_(engine) {}
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  EventEngine& engine() { return engine_; }

  LinkId add_link(std::string name, double bandwidth_bytes_per_second, double latency_seconds = 0);
  const Link& link(LinkId id) const { return links_.at(static_cast<std::size_t>(id)); }
  int link_count() const { return static_cast<int>(links_.size()); }
  double route_latency_seconds(const std::vector<LinkId>& route) const;

  // Starts a flow at engine().now(); `on_done` runs (from the engine) when it completes.
  // Throws std::invalid_argument for a bad link id, negative bytes, or a link_share of the wrong length.
  FlowId start_flow(FlowSpec spec, Callback on_done);
  // Same, sharing an immutable spec (no copy: collectives start the same spec many times).
  FlowId start_flow(std::shared_ptr<const FlowSpec> spec, Callback on_done);

  // Current per-flow rate (bytes/s) of a transferring flow; 0 while in its latency phase or when done.
  // Forces a solve if one is pending, so tests can read rates right after starting flows.
  double flow_rate(FlowId id);
  std::size_t active_flow_count() const { return flows_.size(); }  // in their transfer phase
  // No flow in its latency or transfer phase.
  bool idle() const { return flows_.empty() && pending_.empty(); }
  // Flows started so far (ids are consecutive from 1).
  std::uint64_t flows_started() const { return next_flow_id_ - 1; }
  // Bytes carried by a link so far (sum over hops of link_share × bytes moved), up to the last update.
  double link_bytes_carried(LinkId id) const { return link_bytes_.at(static_cast<std::size_t>(id)); }
  std::uint64_t solve_count() const { return solve_count_; }

 private:
  struct Flow {
    FlowId id = 0;
    std::shared_ptr<const FlowSpec> spec;  // link_share filled in
    Callback on_done;
    double remaining_bytes = 0;
    double rate = 0;                 // per flow, bytes/s
    double finish_estimate = std::numeric_limits<double>::infinity();  // absolute s; set by solve()
    bool transferring = false;
    bool frozen = false;             // scratch for the solver
  };

  void activate_batch(double time_seconds);
  void request_solve();
  void advance_to_now();
  void solve();
  void schedule_completion();
  void on_completion_event();

  EventEngine& engine_;
  std::vector<Link> links_;
  std::vector<double> link_bytes_;
  std::vector<Flow> flows_;  // flows in their transfer phase, in activation order
  // Flows in their latency phase, batched by activation time: one engine event per distinct time.
  std::map<double, std::vector<Flow>> pending_;
  FlowId next_flow_id_ = 1;
  double last_advance_seconds_ = 0;
  bool solve_pending_ = false;
  EventId solve_event_ = 0;
  EventId completion_event_ = 0;
  std::uint64_t solve_count_ = 0;
  // Solver scratch, sized link_count(), reset after each solve.
  std::vector<double> scratch_remaining_;
  std::vector<double> scratch_weight_;
  std::vector<char> scratch_used_;
  std::vector<int> scratch_unfrozen_hops_;
  std::vector<std::uint64_t> scratch_version_;
  std::vector<std::vector<std::size_t>> scratch_flows_on_link_;  // flow indices (one per hop)
  std::vector<std::size_t> scratch_touched_;
  std::vector<char> scratch_touched_flag_;
};

}  // namespace ptsim::sim
