// sim/step_simulator.cpp — the training-step schedule on the event engine (see the header).
#include "sim/step_simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>

#include "core/error.hpp"
#include "sim/collective_cache.hpp"
#include "sim/compute_model.hpp"
#include "sim/event_engine.hpp"
#include "sim/network.hpp"
#include "sim/sharded_step.hpp"

namespace ptsim::sim {
namespace {

using models::OpKind;
using models::Phase;


class StepRun {
 public:
  StepRun(const models::TaskGraph& g, const ClusterConfig& c, bool record, CollectiveCache* cache)
      : g_(g), c_(c), record_(record), cache_(cache), network_(engine_) {
    if (cache_) cluster_key_ = cluster_key(c);
    tp_ = g.recipe.tensor_parallel;
    dp_ = g.recipe.data_parallel;
    micro_steps_ = static_cast<int>(g.micro_steps);
    op_seconds_.resize(g.ops.size());
    for (const auto& op : g.ops) op_seconds_[static_cast<size_t>(op.id)] = op_cost(op, c.gpu).seconds;
    build_groups();
    for (const auto& op : g.ops) {
      if (models::is_micro_step_phase(op.phase)) body_.push_back(op.id);
      else if (op.phase == Phase::communication) comm_.push_back(op.id);
      else tail_.push_back(op.id);
    }
    // For each data-parallel all-reduce: the body ops whose completion (in the last micro-step) it waits for.
    comm_done_.assign(g.ops.size(), false);
    done_in_last_.assign(g.ops.size(), false);
    for (int id : comm_) {
      std::vector<int> deps;
      for (auto [e, end] = boost::in_edges(id, g.deps); e != end; ++e) deps.push_back(static_cast<int>(boost::source(*e, g.deps)));
      comm_deps_[id] = deps;
    }
  }

  // Without tensor parallelism the gradient all-reduces are the only network traffic: one at a time on the
  // communication stream, so each runs alone and its repeated steps can be fast-forwarded.
  StepSimulation run() {
    engine_.schedule_at(0.0, [this] { compute_next(); });
    engine_.run();
    result_.iteration_seconds = finish_;
    result_.exposed_comm_seconds = std::max(0.0, finish_ - result_.compute_seconds);
    return result_;
  }

 private:
  // ---- groups ----
  void build_groups() {
    check_data_tensor_parallel_cluster(c_, dp_, tp_);
    // Tensor-parallel groups: tp consecutive ranks. Data-parallel groups: same position in every TP group.
    for (int t = 0; t < tp_; ++t) {
      std::vector<int> group;
      for (int d = 0; d < dp_; ++d) group.push_back(d * tp_ + t);
      dp_groups_.push_back(group);
    }
    for (int d = 0; d < dp_; ++d) {
      std::vector<int> group;
      for (int t = 0; t < tp_; ++t) group.push_back(d * tp_ + t);
      tp_groups_.push_back(group);
    }
  }

  int channels() const { return c_.effective_channels(); }

  // ZeRO's reduce-scatters and all-gathers run as rings (NCCL's only algorithm for them).
  static CollectiveKind collective_kind(models::OpKind kind) {
    if (kind == models::OpKind::reduce_scatter) return CollectiveKind::reduce_scatter;
    if (kind == models::OpKind::all_gather) return CollectiveKind::all_gather;
    return CollectiveKind::all_reduce;
  }

  std::shared_ptr<const PreparedCollective> prepared(const models::Op& op) {
    const bool tp = op.attrs.comm.group == models::CommGroup::tensor_parallel;
    auto& cache = tp ? tp_cache_ : dp_cache_;
    const CollectiveKind kind = collective_kind(op.kind);
    auto it = cache.find({static_cast<int>(kind), op.attrs.comm.bytes});
    if (it != cache.end()) return it->second;
    CollectiveSpec spec;
    spec.kind = kind;
    spec.bytes = op.attrs.comm.bytes;
    const auto& groups = tp ? tp_groups_ : dp_groups_;
    spec.ranks = groups.front();
    spec.concurrent_groups.assign(groups.begin() + 1, groups.end());
    spec.algorithm = tp ? CollectiveAlgorithm::ring : c_.data_parallel_algorithm;
    spec.channels = channels();
    spec.mode = c_.mode;
    if (!tp) spec.algorithm = kind == CollectiveKind::all_reduce ? data_parallel_algorithm(spec) : CollectiveAlgorithm::ring;
    auto p = prepare_collective(topology(), spec);
    if (!tp && kind != CollectiveKind::all_gather) result_.data_parallel_algorithm = to_string(p->algorithm);
    cache[{static_cast<int>(kind), op.attrs.comm.bytes}] = p;
    return p;
  }

  // The data-parallel algorithm: the scenario's, or `automatic`'s one choice for all buckets (they are
  // about the same size), made on the largest: like NCCL's tuner, whose choice changes only across orders
  // of magnitude of message size.
  CollectiveAlgorithm data_parallel_algorithm(const CollectiveSpec& spec) {
    if (c_.data_parallel_algorithm != CollectiveAlgorithm::automatic) return c_.data_parallel_algorithm;
    if (dp_choice_ != CollectiveAlgorithm::automatic) return dp_choice_;
    CollectiveSpec largest = spec;
    largest.bytes = largest_bucket_bytes();
    const std::string key = cache_ ? fmt::format("{}|choose|{}|dp{}|tp{}|ch{}", cluster_key_, largest.bytes, dp_, tp_,
                                                 spec.channels)
                                   : "";
    if (auto cached = cache_ ? cache_->algorithm(key) : std::nullopt) return dp_choice_ = *cached;
    dp_choice_ = choose_algorithm(topology(), largest);
    if (cache_) cache_->remember_algorithm(key, dp_choice_);
    return dp_choice_;
  }

  // Key of a data-parallel all-reduce that runs alone on the network (its duration is then reusable).
  std::string alone_key(const models::Op& op) const {
    const std::string kind = op.kind == models::OpKind::all_reduce ? "" : models::to_string(op.kind);
    return fmt::format("{}|alone{}|{}|dp{}|ch{}", cluster_key_, kind, op.attrs.comm.bytes, dp_, channels());
  }

  Topology& topology() {
    if (!topology_) topology_ = std::make_unique<Topology>(network_, c_.cluster);
    return *topology_;
  }

  double largest_bucket_bytes() const {
    double largest = 0;
    for (int id : comm_) largest = std::max(largest, g_.op(id).attrs.comm.bytes);
    return largest;
  }

  void record(int op, int micro, Stream stream, double start, double end) {
    if (record_) result_.timeline.push_back({op, micro, stream, start, end});
    finish_ = std::max(finish_, end);
  }

  // ---- compute stream ----
  void compute_next() {
    while (true) {
      size_t body_items = body_.size() * static_cast<size_t>(micro_steps_);
      if (cursor_ >= body_items + tail_.size()) return;
      int micro = 0;
      int id = 0;
      if (cursor_ < body_items) {
        micro = static_cast<int>(cursor_ / body_.size());
        id = body_[cursor_ % body_.size()];
      } else {
        id = tail_[cursor_ - body_items];
        if (!tail_ready(id)) {
          waiting_ = true;  // resumed when a data-parallel all-reduce completes
          return;
        }
      }
      const models::Op& op = g_.op(id);
      const double start = engine_.now();
      if (models::is_communication(op.kind)) {  // tensor-parallel all-reduce: blocks the compute stream
        result_.flows_started += run_prepared_collective(network_, prepared(op), start,
                                                         [this, id, micro, start](const CollectiveResult& r) {
                                                           result_.blocking_comm_seconds += r.duration_seconds();
                                                           record(id, micro, Stream::compute, start, r.finish_seconds);
                                                           finish_op(id, micro);
                                                         }).flows_started;
        return;
      }
      const double end = start + op_seconds_[static_cast<size_t>(id)];
      result_.compute_seconds += end - start;
      engine_.schedule_at(end, [this, id, micro, start, end] {
        record(id, micro, Stream::compute, start, end);
        finish_op(id, micro);
      });
      return;
    }
  }

  void finish_op(int id, int micro) {
    ++cursor_;
    if (cursor_ == body_.size() && micro_steps_ > 2) {
      skip_repeated_micro_steps();
      return;
    }
    if (micro == micro_steps_ - 1 && models::is_micro_step_phase(g_.op(id).phase)) {
      done_in_last_[static_cast<size_t>(id)] = true;
      try_start_comm();
    } else if (g_.op(id).phase == Phase::optimizer && g_.recipe.zero_stage > 0) {
      done_in_last_[static_cast<size_t>(id)] = true;  // ZeRO: the updated shard can now be all-gathered
      try_start_comm();
    }
    compute_next();
  }

  // Micro-steps 1 … N-2 repeat micro-step 0 exactly: the data-parallel all-reduces start only in the last
  // micro-step, so before it the network carries nothing but each micro-step's own blocking tensor-parallel
  // all-reduces, and every such micro-step starts on an idle network. So micro-step 0 is simulated once and
  // the repeats are added arithmetically: --grad-accum 10^6 costs as much as 3 micro-steps, not 10^6.
  void skip_repeated_micro_steps() {
    const double micro_seconds = engine_.now();  // the step starts at 0; micro-step 0 just ended
    const int repeats = micro_steps_ - 2;
    const double r = static_cast<double>(repeats);
    result_.compute_seconds += r * result_.compute_seconds;
    result_.blocking_comm_seconds += r * result_.blocking_comm_seconds;
    result_.flows_started += static_cast<long>(repeats) * result_.flows_started;
    if (record_) record_repeats(repeats, micro_seconds);
    cursor_ += static_cast<size_t>(repeats) * body_.size();
    finish_ = std::max(finish_, micro_seconds * (1 + r));
    engine_.schedule_at(micro_seconds * (1 + r), [this] { compute_next(); });
  }

  // The trace shows at most kMaxTracedMicroSteps - 1 of the repeats (copies of micro-step 0, shifted), then
  // the last micro-step: a timeline of 10^6 identical micro-steps would only exhaust memory.
  static constexpr int kMaxTracedMicroSteps = 64;
  void record_repeats(int repeats, double micro_seconds) {
    const std::vector<TimelineSpan> first = result_.timeline;
    const int shown = std::min(repeats, kMaxTracedMicroSteps - 2);
    for (int m = 1; m <= shown; ++m)
      for (TimelineSpan span : first) {
        span.micro_step = m;
        span.start_seconds += m * micro_seconds;
        span.end_seconds += m * micro_seconds;
        result_.timeline.push_back(span);
      }
  }

  bool tail_ready(int id) const {
    for (auto [e, end] = boost::in_edges(id, g_.deps); e != end; ++e) {
      int dep = static_cast<int>(boost::source(*e, g_.deps));
      if (g_.op(dep).phase == Phase::communication && !comm_done_[static_cast<size_t>(dep)]) return false;
    }
    return true;
  }

  // ---- communication stream ----
  void try_start_comm() {
    if (comm_busy_ || comm_cursor_ >= comm_.size()) return;
    int id = comm_[comm_cursor_];
    for (int dep : comm_deps_[id]) {
      const models::Op& d = g_.op(dep);
      if (models::is_micro_step_phase(d.phase) && !done_in_last_[static_cast<size_t>(dep)]) return;
      if (d.phase == Phase::communication && !comm_done_[static_cast<size_t>(dep)]) return;
      if (d.phase == Phase::optimizer && !done_in_last_[static_cast<size_t>(dep)]) return;
    }
    comm_busy_ = true;
    const double start = engine_.now();
    const models::Op& op = g_.op(id);
    // Alone on the network (no tensor parallelism), an all-reduce takes what it took last time it ran
    // alone on this cluster: reuse the duration instead of re-running its flows.
    const bool reusable = cache_ != nullptr && tp_ == 1;
    const std::string key = reusable ? alone_key(op) : "";
    if (auto seconds = reusable ? cache_->alone_seconds(key) : std::nullopt) {
      CollectiveSpec spec;
      spec.channels = channels();
      if (op.kind == models::OpKind::all_reduce) result_.data_parallel_algorithm = to_string(data_parallel_algorithm(spec));
      engine_.schedule_at(start + *seconds, [this, id, start, seconds] { comm_finished(id, start, start + *seconds); });
      return;
    }
    result_.flows_started += run_prepared_collective(network_, prepared(op), start,
                                                     [this, id, start, key, reusable](const CollectiveResult& r) {
                                                       if (reusable) cache_->remember_alone_seconds(key, r.duration_seconds());
                                                       comm_finished(id, start, r.finish_seconds);
                                                     },
                                                     /*alone_on_network=*/tp_ == 1).flows_started;
  }

  void comm_finished(int id, double start, double finish) {
    result_.data_parallel_comm_seconds += finish - start;
    record(id, 0, Stream::communication, start, finish);
    comm_done_[static_cast<size_t>(id)] = true;
    comm_busy_ = false;
    ++comm_cursor_;
    try_start_comm();
    if (waiting_) {
      waiting_ = false;
      compute_next();
    }
  }

  const models::TaskGraph& g_;
  const ClusterConfig& c_;
  bool record_;
  CollectiveCache* cache_ = nullptr;
  std::string cluster_key_;
  EventEngine engine_;
  Network network_;
  std::unique_ptr<Topology> topology_;  // built on first use: cached collectives need none
  int64_t tp_ = 1, dp_ = 1;
  int micro_steps_ = 1;
  std::vector<double> op_seconds_;
  std::vector<std::vector<int>> dp_groups_, tp_groups_;
  std::vector<int> body_, comm_, tail_;
  std::map<int, std::vector<int>> comm_deps_;
  std::vector<bool> comm_done_, done_in_last_;
  std::map<std::pair<int, double>, std::shared_ptr<const PreparedCollective>> dp_cache_, tp_cache_;
  CollectiveAlgorithm dp_choice_ = CollectiveAlgorithm::automatic;
  size_t cursor_ = 0, comm_cursor_ = 0;
  bool comm_busy_ = false, waiting_ = false;
  double finish_ = 0;
  StepSimulation result_;
};

}  // namespace

void check_data_tensor_parallel_cluster(const ClusterConfig& c, int64_t dp, int64_t tp) {
  const int gpus = c.gpu_count();
  if (dp * tp != gpus)
    throw core::InputError(fmt::format("data-parallel {} × tensor-parallel {} = {} GPUs, but the cluster has {} "
                                       "({} nodes × {} GPUs): make them match",
                                       dp, tp, dp * tp, gpus, c.cluster.nodes, c.cluster.node.gpus_per_node));
  if (tp > c.cluster.node.gpus_per_node)
    throw core::InputError(fmt::format("tensor-parallel {} exceeds the {} GPUs of a {} node (tensor parallelism "
                                       "stays inside a node)", tp, c.cluster.node.gpus_per_node, c.cluster.node.name));
}

StepSimulation simulate_step(const models::TaskGraph& graph, const ClusterConfig& config, bool record_timeline,
                             CollectiveCache* cache) {
  if (graph.recipe.zero_stage >= 3 && graph.recipe.data_parallel > 1)  // parameters gathered per unit
    return simulate_sharded_step(graph, config, record_timeline);
  return StepRun(graph, config, record_timeline, cache).run();
}

CollectiveSpec whole_cluster_collective(const ClusterConfig& config, CollectiveKind kind, CollectiveAlgorithm algorithm,
                                        double bytes) {
  CollectiveSpec c;
  c.kind = kind;
  c.algorithm = algorithm;
  c.bytes = bytes;
  const int ranks = config.gpu_count();
  if (kind == CollectiveKind::send_recv) c.ranks = {0, ranks - 1};
  else
    for (int r = 0; r < ranks; ++r) c.ranks.push_back(r);
  c.channels = config.effective_channels();
  c.mode = config.mode;
  return c;
}

}  // namespace ptsim::sim
