// sim/network.cpp — see network.hpp. Max-min fairness by progressive filling (Bertsekas & Gallager,
// "Data Networks", 2nd ed., §6.5.2): raise every unfrozen flow's rate together until a link saturates
// or a flow reaches its cap; freeze those flows; repeat. Implemented in bottleneck order (solve()).
#include "sim/network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <stdexcept>

namespace ptsim::sim {

namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
// Flows whose finish estimates lie within this relative distance of the completion event finish
// together (symmetric flows differ only by rounding).
constexpr double kFinishTolerance = 1e-12;
}  // namespace

LinkId Network::add_link(std::string name, double bandwidth_bytes_per_second, double latency_seconds) {
  if (!(bandwidth_bytes_per_second > 0) || !(latency_seconds >= 0)) {
    throw std::invalid_argument("Network::add_link: link '" + name +
                                "' needs bandwidth > 0 and latency >= 0");
  }
  links_.push_back(Link{std::move(name), bandwidth_bytes_per_second, latency_seconds});
  link_bytes_.push_back(0);
  scratch_remaining_.push_back(0);
  scratch_weight_.push_back(0);
  scratch_used_.push_back(0);
  scratch_unfrozen_hops_.push_back(0);
  scratch_version_.push_back(0);
  scratch_flows_on_link_.emplace_back();
  scratch_touched_flag_.push_back(0);
  return static_cast<LinkId>(links_.size() - 1);
}

double Network::route_latency_seconds(const std::vector<LinkId>& route) const {
  double latency = 0;
  for (LinkId l : route) latency += link(l).latency_seconds;
  return latency;
}

FlowId Network::start_flow(FlowSpec spec, Callback on_done) {
  if (spec.link_share.empty()) spec.link_share.assign(spec.route.size(), spec.multiplicity);
  return start_flow(std::make_shared<const FlowSpec>(std::move(spec)), std::move(on_done));
}

FlowId Network::start_flow(std::shared_ptr<const FlowSpec> spec, Callback on_done) {
  if (!spec) throw std::invalid_argument("Network::start_flow: null spec");
  if (spec->link_share.empty() && !spec->route.empty()) {
    FlowSpec filled = *spec;
    return start_flow(std::move(filled), std::move(on_done));
  }
  double latency = spec->extra_latency_seconds;
  for (LinkId l : spec->route) {
    if (l < 0 || l >= link_count()) throw std::invalid_argument("Network::start_flow: bad link id");
    latency += links_[static_cast<std::size_t>(l)].latency_seconds;
  }
  if (!(spec->bytes >= 0) || !(spec->multiplicity > 0) || !(spec->rate_cap_bytes_per_second >= 0) ||
      !(spec->extra_latency_seconds >= 0)) {
    throw std::invalid_argument("Network::start_flow: bytes, cap and latency must be >= 0, multiplicity > 0");
  }
  if (spec->link_share.size() != spec->route.size()) {
    throw std::invalid_argument("Network::start_flow: link_share must have one entry per hop");
  }
  FlowId id = next_flow_id_++;
  Flow flow;
  flow.id = id;
  flow.remaining_bytes = spec->bytes;
  flow.spec = std::move(spec);
  flow.on_done = std::move(on_done);
  double at = engine_.now() + latency;
  auto [it, inserted] = pending_.try_emplace(at);
  it->second.push_back(std::move(flow));
  if (inserted) engine_.schedule_at(at, [this, at] { activate_batch(at); });
  return id;
}

void Network::activate_batch(double time_seconds) {
  auto it = pending_.find(time_seconds);
  std::vector<Flow> batch = std::move(it->second);
  pending_.erase(it);
  advance_to_now();  // rates so far apply to the time before these flows joined
  std::vector<Callback> done;
  bool joined = false;
  for (Flow& flow : batch) {
    if (flow.remaining_bytes <= 0) {  // nothing to move: done after its latency
      done.push_back(std::move(flow.on_done));
      continue;
    }
    flow.transferring = true;
    flows_.push_back(std::move(flow));
    joined = true;
  }
  if (joined) request_solve();
  for (Callback& cb : done) {
    if (cb) cb();
  }
}

void Network::request_solve() {
  if (solve_pending_) return;
  solve_pending_ = true;
  // Solving once after all same-time starts keeps a burst of k starts at O(k) solves → O(1).
  solve_event_ = engine_.schedule_after(0, [this] {
    solve_pending_ = false;
    advance_to_now();
    solve();
    schedule_completion();
  });
}

void Network::advance_to_now() {
  double dt = engine_.now() - last_advance_seconds_;
  last_advance_seconds_ = engine_.now();
  if (dt <= 0) return;
  for (Flow& f : flows_) {
    if (f.rate <= 0) continue;
    double moved = std::isinf(f.rate) ? f.remaining_bytes : std::min(f.remaining_bytes, f.rate * dt);
    f.remaining_bytes -= moved;
    for (std::size_t h = 0; h < f.spec->route.size(); ++h) {
      link_bytes_[static_cast<std::size_t>(f.spec->route[h])] += moved * f.spec->link_share[h];
    }
  }
}

void Network::solve() {
  ++solve_count_;
  // Bottleneck order instead of raising a common level step by step: the link with the smallest fair
  // share (remaining capacity / unfrozen load) saturates next, and all its unfrozen flows freeze at
  // that share; a flow's cap acts as a private link. Same allocation as progressive filling, in
  // O(hops · log links) per solve (a min-heap with lazy deletion).
  struct Entry {
    double level = 0;
    bool is_cap = false;  // true: `index` is a flow reaching its cap; false: a link saturating
    std::size_t index = 0;
    std::uint64_t version = 0;
    bool operator>(const Entry& o) const {
      if (level != o.level) return level > o.level;
      if (is_cap != o.is_cap) return is_cap > o.is_cap;
      return index > o.index;
    }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  std::vector<std::size_t> used;
  for (std::size_t i = 0; i < flows_.size(); ++i) {
    Flow& f = flows_[i];
    f.frozen = false;
    f.rate = 0;
    for (std::size_t h = 0; h < f.spec->route.size(); ++h) {
      auto l = static_cast<std::size_t>(f.spec->route[h]);
      if (!scratch_used_[l]) {
        scratch_used_[l] = 1;
        scratch_remaining_[l] = links_[l].bandwidth_bytes_per_second;
        scratch_weight_[l] = 0;
        scratch_unfrozen_hops_[l] = 0;
        scratch_flows_on_link_[l].clear();
        used.push_back(l);
      }
      scratch_weight_[l] += f.spec->link_share[h];
      scratch_unfrozen_hops_[l] += 1;
      scratch_flows_on_link_[l].push_back(i);
    }
    if (f.spec->rate_cap_bytes_per_second > 0) {
      heap.push(Entry{f.spec->rate_cap_bytes_per_second, true, i, 0});
    } else if (f.spec->route.empty()) {  // crosses nothing and has no cap: instantaneous
      f.rate = kInf;
      f.frozen = true;
    }
  }
  auto share_of = [this](std::size_t l) {
    return std::max(scratch_remaining_[l], 0.0) / scratch_weight_[l];
  };
  for (std::size_t l : used) heap.push(Entry{share_of(l), false, l, scratch_version_[l]});

  double level = 0;  // levels pop in non-decreasing order; max() guards against rounding
  std::vector<std::size_t>& touched = scratch_touched_;
  std::vector<char>& touched_flag = scratch_touched_flag_;
  auto freeze = [&](std::size_t i) {
    Flow& f = flows_[i];
    f.frozen = true;
    f.rate = level;
    for (std::size_t h = 0; h < f.spec->route.size(); ++h) {
      auto l = static_cast<std::size_t>(f.spec->route[h]);
      scratch_remaining_[l] -= f.spec->link_share[h] * level;
      scratch_weight_[l] -= f.spec->link_share[h];
      scratch_unfrozen_hops_[l] -= 1;
      if (!touched_flag[l]) {
        touched_flag[l] = 1;
        touched.push_back(l);
      }
    }
  };
  // After a batch of freezes: one fresh heap entry per touched link (older entries go stale).
  auto requeue_touched = [&] {
    for (std::size_t l : touched) {
      touched_flag[l] = 0;
      ++scratch_version_[l];
      if (scratch_unfrozen_hops_[l] > 0 && scratch_weight_[l] > 0) {
        heap.push(Entry{share_of(l), false, l, scratch_version_[l]});
      }
    }
    touched.clear();
  };
  while (!heap.empty()) {
    Entry e = heap.top();
    heap.pop();
    if (e.is_cap) {
      if (flows_[e.index].frozen) continue;
      level = std::max(level, e.level);
      freeze(e.index);
      requeue_touched();
      continue;
    }
    if (e.version != scratch_version_[e.index] || scratch_unfrozen_hops_[e.index] == 0) continue;  // stale
    level = std::max(level, e.level);
    for (std::size_t i : scratch_flows_on_link_[e.index]) {
      if (!flows_[i].frozen) freeze(i);
    }
    requeue_touched();
  }
  for (std::size_t l : used) scratch_used_[l] = 0;
  double now = engine_.now();
  for (Flow& f : flows_) {
    f.finish_estimate = f.rate > 0 ? now + (std::isinf(f.rate) ? 0.0 : f.remaining_bytes / f.rate) : kInf;
  }
}

void Network::schedule_completion() {
  if (completion_event_ != 0) engine_.cancel(completion_event_);
  completion_event_ = 0;
  double earliest = kInf;
  for (const Flow& f : flows_) earliest = std::min(earliest, f.finish_estimate);
  if (std::isinf(earliest)) return;
  completion_event_ = engine_.schedule_at(std::max(earliest, engine_.now()), [this] { on_completion_event(); });
}

void Network::on_completion_event() {
  completion_event_ = 0;
  advance_to_now();
  double now = engine_.now();
  double limit = now + kFinishTolerance * std::max(std::abs(now), 1e-6);
  std::vector<Callback> done;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < flows_.size(); ++i) {
    Flow& f = flows_[i];
    if (f.finish_estimate <= limit) {
      // Credit the rounding remainder to the links so byte counts stay exact.
      for (std::size_t h = 0; h < f.spec->route.size(); ++h) {
        link_bytes_[static_cast<std::size_t>(f.spec->route[h])] += f.remaining_bytes * f.spec->link_share[h];
      }
      done.push_back(std::move(f.on_done));
    } else {
      if (kept != i) flows_[kept] = std::move(f);
      ++kept;
    }
  }
  flows_.resize(kept);
  if (!flows_.empty()) request_solve();
  for (Callback& cb : done) {
    if (cb) cb();
  }
}

double Network::flow_rate(FlowId id) {
  if (solve_pending_) {
    engine_.cancel(solve_event_);
    solve_pending_ = false;
    advance_to_now();
    solve();
    schedule_completion();
  }
  for (const Flow& f : flows_) {
    if (f.id == id) return f.rate;
  }
  return 0;
}

}  // namespace ptsim::sim
