// sim/sharded_step.cpp — a ZeRO stage 3 / FSDP FULL_SHARD step on the event engine (see the header).
#include "sim/sharded_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>

#include "core/error.hpp"
#include "sim/compute_model.hpp"
#include "sim/event_engine.hpp"
#include "sim/network.hpp"
#include "sim/rank_groups.hpp"

namespace ptsim::sim {
namespace {

using models::OpKind;
using models::Phase;

// Where a unit's parameters must be gathered: the first body op (in order) of a pass that reads them.
struct Gate {
  size_t position = 0;  // index into the body ops
  int gather = -1;      // the all-gather op
};

class ShardedStep {
 public:
  ShardedStep(const models::TaskGraph& g, const ClusterConfig& c, bool record)
      : g_(g), c_(c), record_(record), network_(engine_), topology_(network_, c.cluster) {
    tp_ = static_cast<int>(g.recipe.tensor_parallel);
    dp_ = static_cast<int>(g.recipe.data_parallel);
    micro_steps_ = static_cast<int>(g.micro_steps);
    check_cluster();
    for (const auto& op : g.ops) {
      if (models::is_micro_step_phase(op.phase)) body_.push_back(op.id);
      else if (op.phase == Phase::optimizer) tail_.push_back(op.id);
    }
    find_gates();
    find_reduce_scatters();
    rs_done_micro_.assign(g.ops.size(), -1);
    gather_done_.assign(static_cast<size_t>(micro_steps_) * gates_.size(), false);
  }

  StepSimulation run() {
    engine_.schedule_at(0.0, [this] {
      if (!gates_.empty()) enqueue(gates_.front().gather, 0, 0);
      compute_next();
    });
    engine_.run();
    result_.iteration_seconds = finish_;
    result_.exposed_comm_seconds = std::max(0.0, finish_ - result_.compute_seconds);
    result_.data_parallel_algorithm = to_string(CollectiveAlgorithm::ring);
    return result_;
  }

 private:
  void check_cluster() const {
    check_data_tensor_parallel_cluster(c_, dp_, tp_);
    if (micro_steps_ > kMaxShardedMicroSteps)
      throw core::InputError(fmt::format("a zero_stage 3 step is simulated micro-step by micro-step (every one "
                                         "gathers the parameters): grad_accum {} is more than the {} it runs",
                                         micro_steps_, kMaxShardedMicroSteps));
  }

  // A unit's first all-gather in the graph is its forward one, the second its backward one
  // (models/builder.cpp); each gates the first op of its pass that reads one of the unit's parameters.
  void find_gates() {
    std::map<int, int> seen;  // unit layer → all-gathers met so far
    std::map<int, std::pair<int, bool>> gather_of_weight;  // weight tensor → (all-gather, backward?)
    std::vector<std::pair<int, bool>> gathers;
    for (const auto& op : g_.ops) {
      if (op.phase != Phase::communication || op.kind != OpKind::all_gather) continue;
      const bool backward = seen[op.layer]++ > 0;
      gathers.emplace_back(op.id, backward);
      for (int t : op.inputs) gather_of_weight[t * 2 + (backward ? 1 : 0)] = {op.id, backward};
    }
    std::map<int, size_t> position;  // all-gather → its gate
    for (size_t i = 0; i < body_.size(); ++i) {
      const models::Op& op = g_.op(body_[i]);
      const int backward = op.phase == Phase::forward ? 0 : 1;
      for (int t : op.inputs) {
        auto it = gather_of_weight.find(t * 2 + backward);
        if (it != gather_of_weight.end() && !position.count(it->second.first)) position[it->second.first] = i;
      }
    }
    for (const auto& [gather, backward] : gathers) {
      // A unit whose parameters no op of that pass reads (none in these models) is gathered at the pass's start.
      size_t at = 0;
      if (auto it = position.find(gather); it != position.end()) at = it->second;
      else if (backward) at = first_non_forward();
      gates_.push_back({at, gather});
    }
    std::stable_sort(gates_.begin(), gates_.end(), [](const Gate& a, const Gate& b) { return a.position < b.position; });
  }

  size_t first_non_forward() const {
    size_t i = 0;
    while (i < body_.size() && g_.op(body_[i]).phase == Phase::forward) ++i;
    return i;
  }

  // A reduce-scatter starts once the last body op writing its gradients has run, every micro-step (the
  // communication stream runs it after what was issued before).
  void find_reduce_scatters() {
    std::map<int, size_t> position;
    for (size_t i = 0; i < body_.size(); ++i) position[body_[i]] = i;
    rs_after_.assign(body_.size(), {});
    for (const auto& op : g_.ops) {
      if (op.phase != Phase::communication || op.kind != OpKind::reduce_scatter) continue;
      size_t last = 0;
      for (auto [e, end] = boost::in_edges(op.id, g_.deps); e != end; ++e)
        if (auto it = position.find(static_cast<int>(boost::source(*e, g_.deps))); it != position.end())
          last = std::max(last, it->second);
      rs_after_[last].push_back(op.id);
      // Hybrid sharding: the replicas' all-reduce of the shard follows its reduce-scatter (models/builder.cpp).
      const size_t next = static_cast<size_t>(op.id) + 1;
      if (next < g_.ops.size() && g_.ops[next].attrs.comm.group == models::CommGroup::shard_replicas)
        rs_after_[last].push_back(g_.ops[next].id);
    }
  }

  // ---- compute stream ----
  void compute_next() {
    if (micro_ < micro_steps_) {
      if (!pass_gates()) return;
      run_body_op(body_[pos_]);
      return;
    }
    if (tail_pos_ == tail_.size()) return;
    const int id = tail_[tail_pos_];
    if (!tail_ready(id)) {
      waiting_tail_ = true;
      return;
    }
    const double start = engine_.now(), end = start + op_cost(g_.op(id), c_.gpu).seconds;
    result_.compute_seconds += end - start;
    engine_.schedule_at(end, [this, id, start, end] {
      record(id, 0, Stream::compute, start, end);  // the tail, as sim/step_simulator records it
      ++tail_pos_;
      compute_next();
    });
  }

  // Waits for the all-gathers gating the next op; as each gate passes, the next unit's all-gather is issued.
  bool pass_gates() {
    while (next_gate_ < gates_.size() && gates_[next_gate_].position == pos_) {
      const size_t j = static_cast<size_t>(micro_) * gates_.size() + next_gate_;
      if (!gather_done_[j]) {
        waiting_gather_ = static_cast<long>(j);
        return false;
      }
      ++next_gate_;
      if (j + 1 < gather_done_.size()) {
        const size_t k = (j + 1) % gates_.size();
        enqueue(gates_[k].gather, static_cast<int>((j + 1) / gates_.size()), static_cast<long>(j + 1));
      }
    }
    return true;
  }

  void run_body_op(int id) {
    const models::Op& op = g_.op(id);
    const double start = engine_.now();
    const int micro = micro_;
    if (models::is_communication(op.kind)) {  // tensor-parallel all-reduce: blocks the compute stream
      result_.flows_started += run_prepared_collective(network_, prepared(op), start, [this, id, micro, start](const CollectiveResult& r) {
        result_.blocking_comm_seconds += r.duration_seconds();
        body_op_done(id, micro, start, r.finish_seconds);
      }).flows_started;
      return;
    }
    const double end = start + op_cost(op, c_.gpu).seconds;
    result_.compute_seconds += end - start;
    engine_.schedule_at(end, [this, id, micro, start, end] { body_op_done(id, micro, start, end); });
  }

  void body_op_done(int id, int micro, double start, double end) {
    record(id, micro, Stream::compute, start, end);
    for (int rs : rs_after_[pos_]) enqueue(rs, micro, -1);
    if (++pos_ == body_.size()) {
      pos_ = 0;
      next_gate_ = 0;
      ++micro_;
    }
    compute_next();
  }

  bool tail_ready(int id) const {
    for (auto [e, end] = boost::in_edges(id, g_.deps); e != end; ++e) {
      const int dep = static_cast<int>(boost::source(*e, g_.deps));
      const models::Op& d = g_.op(dep);
      const bool gradients = d.phase == Phase::communication && d.kind != OpKind::all_gather;
      if (gradients && rs_done_micro_[static_cast<size_t>(dep)] != micro_steps_ - 1) return false;
    }
    return true;
  }

  // ---- communication stream: one collective at a time, in the order issued ----
  struct Issued {
    int op = -1;
    int micro = 0;
    long gather_index = -1;  // into gather_done_ (-1: a reduce-scatter)
  };

  void enqueue(int op, int micro, long gather_index) {
    queue_.push_back({op, micro, gather_index});
    try_start_comm();
  }

  void try_start_comm() {
    if (comm_busy_ || queue_.empty()) return;
    const Issued next = queue_.front();
    queue_.pop_front();
    comm_busy_ = true;
    const double start = engine_.now();
    result_.flows_started += run_prepared_collective(network_, prepared(g_.op(next.op)), start,
                                                     [this, next, start](const CollectiveResult& r) {
                                                       comm_finished(next, start, r.finish_seconds);
                                                     },
                                                     /*alone_on_network=*/tp_ == 1).flows_started;
  }

  void comm_finished(const Issued& done, double start, double finish) {
    result_.data_parallel_comm_seconds += finish - start;
    record(done.op, done.micro, Stream::communication, start, finish);
    comm_busy_ = false;
    if (done.gather_index >= 0) gather_done_[static_cast<size_t>(done.gather_index)] = true;
    else rs_done_micro_[static_cast<size_t>(done.op)] = done.micro;
    try_start_comm();
    if (waiting_gather_ >= 0 && done.gather_index == waiting_gather_) {
      waiting_gather_ = -1;
      compute_next();
    } else if (waiting_tail_) {
      waiting_tail_ = false;
      compute_next();
    }
  }

  // ---- collectives: all rings, over the groups of sim/rank_groups.hpp ----
  std::vector<std::vector<int>> groups(models::CommGroup group) const {
    return rank_groups(group, dp_, tp_, static_cast<int>(g_.recipe.zero_shards()));
  }

  std::shared_ptr<const PreparedCollective> prepared(const models::Op& op) {
    const CollectiveKind kind = op.kind == OpKind::reduce_scatter ? CollectiveKind::reduce_scatter
                                : op.kind == OpKind::all_gather   ? CollectiveKind::all_gather
                                                                  : CollectiveKind::all_reduce;
    const auto key = std::make_tuple(static_cast<int>(op.attrs.comm.group), static_cast<int>(kind), op.attrs.comm.bytes);
    if (auto it = prepared_.find(key); it != prepared_.end()) return it->second;
    const std::vector<std::vector<int>> groups = this->groups(op.attrs.comm.group);
    CollectiveSpec spec;
    spec.kind = kind;
    spec.bytes = op.attrs.comm.bytes;
    spec.ranks = groups.front();
    spec.concurrent_groups.assign(groups.begin() + 1, groups.end());
    spec.algorithm = CollectiveAlgorithm::ring;
    spec.channels = c_.effective_channels();
    spec.mode = c_.mode;
    return prepared_[key] = prepare_collective(topology_, spec);
  }

  void record(int op, int micro, Stream stream, double start, double end) {
    if (record_) result_.timeline.push_back({op, micro, stream, start, end});
    finish_ = std::max(finish_, end);
  }

  const models::TaskGraph& g_;
  const ClusterConfig& c_;
  bool record_;
  EventEngine engine_;
  Network network_;
  Topology topology_;
  int tp_ = 1, dp_ = 1, micro_steps_ = 1;
  std::vector<int> body_, tail_;
  std::vector<Gate> gates_;
  std::vector<std::vector<int>> rs_after_;  // per body position: reduce-scatters it makes ready
  std::vector<bool> gather_done_;           // per (micro-step, gate)
  std::vector<int> rs_done_micro_;          // per op: the last micro-step its reduce-scatter finished
  std::deque<Issued> queue_;
  std::map<std::tuple<int, int, double>, std::shared_ptr<const PreparedCollective>> prepared_;
  int micro_ = 0;
  size_t pos_ = 0, next_gate_ = 0, tail_pos_ = 0;
  long waiting_gather_ = -1;
  bool waiting_tail_ = false, comm_busy_ = false;
  double finish_ = 0;
  StepSimulation result_;
};

}  // namespace

StepSimulation simulate_sharded_step(const models::TaskGraph& graph, const ClusterConfig& config, bool record_timeline) {
  return ShardedStep(graph, config, record_timeline).run();
}

}  // namespace ptsim::sim
