// sim/step_simulator.cpp — the training-step schedule on the event engine (see the header).
#include "sim/step_simulator.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <tuple>

#include "core/error.hpp"
#include "sim/collective_cache.hpp"
#include "sim/compute_model.hpp"
#include "sim/event_engine.hpp"
#include "sim/network.hpp"
#include "sim/rank_groups.hpp"
#include "sim/sharded_step.hpp"

namespace ptsim::sim {
namespace {

using models::OpKind;
using models::Phase;

// A moment between two compute ops of a micro-step at which the network carries nothing (ZeRO stage 2's
// fast-forward, StepRun::fast_forward_repeats): the step's state then is the body position alone.
struct IdleMoment {
  int micro = 0;
  double seconds = 0;
  double compute_seconds = 0, blocking_comm_seconds = 0, data_parallel_comm_seconds = 0;
  long flows_started = 0;
  size_t timeline_spans = 0;
};

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
    shards_ = g.recipe.zero_shards();
    hybrid_ = g.recipe.zero_stage > 0 && shards_ < dp_;
    // ZeRO stage 2 keeps only its shard of the gradients, so it reduce-scatters in every micro-step.
    every_micro_step_ = g.recipe.zero_stage == 2 && dp_ > 1;
    check_data_tensor_parallel_cluster(c, dp_, tp_);
    for (const auto& op : g.ops) {
      if (models::is_micro_step_phase(op.phase)) body_.push_back(op.id);
      else if (op.phase != Phase::communication) tail_.push_back(op.id);
    }
    // The data-parallel collectives: for each, the ops whose completion it waits for. Those that read an
    // optimizer update (ZeRO's all-gathers of the updated parameters) run once, after it; the others carry
    // gradients: in the last micro-step, or in every one (ZeRO stage 2).
    for (const auto& op : g.ops) {
      if (op.phase != Phase::communication) continue;
      std::vector<int> deps;
      bool after_update = false;
      for (auto [e, end] = boost::in_edges(op.id, g.deps); e != end; ++e) {
        deps.push_back(static_cast<int>(boost::source(*e, g.deps)));
        after_update = after_update || g.op(deps.back()).phase == Phase::optimizer;
      }
      comm_deps_[op.id] = deps;
      (after_update ? after_update_comm_ : gradient_comm_).push_back(op.id);
    }
    done_micro_.assign(g.ops.size(), -1);
    idle_at_.resize(body_.size());
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
  int channels() const { return c_.effective_channels(); }

  // ZeRO's reduce-scatters and all-gathers run as rings (NCCL's only algorithm for them).
  static CollectiveKind collective_kind(models::OpKind kind) {
    if (kind == models::OpKind::reduce_scatter) return CollectiveKind::reduce_scatter;
    if (kind == models::OpKind::all_gather) return CollectiveKind::all_gather;
    return CollectiveKind::all_reduce;
  }

  // Rings, except a data-parallel all-reduce over every data-parallel rank (DDP's buckets): the scenario's
  // algorithm or `automatic`'s choice. Hybrid ZeRO's all-reduces across the replicas are rings, as ZeRO-3's.
  std::shared_ptr<const PreparedCollective> prepared(const models::Op& op) {
    const models::CommGroup group = op.attrs.comm.group;
    const bool tp = group == models::CommGroup::tensor_parallel;
    const CollectiveKind kind = collective_kind(op.kind);
    const auto key = std::make_tuple(static_cast<int>(group), static_cast<int>(kind), op.attrs.comm.bytes);
    if (auto it = prepared_.find(key); it != prepared_.end()) return it->second;
    CollectiveSpec spec;
    spec.kind = kind;
    spec.bytes = op.attrs.comm.bytes;
    const std::vector<std::vector<int>> groups =
        rank_groups(group, static_cast<int>(dp_), static_cast<int>(tp_), static_cast<int>(shards_));
    spec.ranks = groups.front();
    spec.concurrent_groups.assign(groups.begin() + 1, groups.end());
    spec.algorithm = CollectiveAlgorithm::ring;
    spec.channels = channels();
    spec.mode = c_.mode;
    const bool ddp_all_reduce = group == models::CommGroup::data_parallel && kind == CollectiveKind::all_reduce;
    if (ddp_all_reduce) {
      spec.algorithm = c_.data_parallel_algorithm;
      spec.algorithm = data_parallel_algorithm(spec);
    }
    auto p = prepare_collective(topology(), spec);
    if (!tp && kind != CollectiveKind::all_gather) result_.data_parallel_algorithm = to_string(p->algorithm);
    return prepared_[key] = p;
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
    const std::string groups = !hybrid_ ? ""
                               : fmt::format("|shards{}{}", shards_,
                                             op.attrs.comm.group == models::CommGroup::shard_replicas ? "across" : "");
    return fmt::format("{}|alone{}|{}|dp{}{}|ch{}", cluster_key_, kind, op.attrs.comm.bytes, dp_, groups, channels());
  }

  Topology& topology() {
    if (!topology_) topology_ = std::make_unique<Topology>(network_, c_.cluster);
    return *topology_;
  }

  double largest_bucket_bytes() const {
    double largest = 0;
    for (int id : gradient_comm_) largest = std::max(largest, g_.op(id).attrs.comm.bytes);
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
    if (!every_micro_step_ && cursor_ == body_.size() && micro_steps_ > 2) {
      skip_repeated_micro_steps();
      return;
    }
    done_micro_[static_cast<size_t>(id)] = micro;  // the tail's ops run once, in micro-step 0
    try_start_comm();
    if (every_micro_step_ && fast_forward_repeats()) return;
    compute_next();
  }

  // Without ZeRO stage 2 (which reduces every micro-step: fast_forward_repeats),
  // micro-steps 1 … N-2 repeat micro-step 0 exactly: the data-parallel all-reduces start only in the last
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

  // ZeRO stage 2 reduce-scatters in every micro-step, and a micro-step's last reduce-scatters run into the
  // next one's forward (and queue there behind the ones still in flight), so micro-steps are simulated one
  // after another until one repeats exactly: when the compute stream reaches body position p with the
  // network idle, the future depends on p alone; if it was idle at p in the previous micro-step too, every
  // micro-step from here repeats that one, shifted by the period between the two moments. Then the step
  // jumps to position p of the last micro-step, adding the skipped periods' busy times (and, in the trace,
  // their spans). A step whose reduce-scatters never drain between compute ops (communication-bound) is
  // simulated micro-step by micro-step, at most sim::kMaxShardedMicroSteps of them.
  bool fast_forward_repeats() {
    const size_t body_items = body_.size() * static_cast<size_t>(micro_steps_);
    if (fast_forwarded_ || cursor_ >= body_items) return false;
    const int micro = static_cast<int>(cursor_ / body_.size());
    if (micro >= kMaxShardedMicroSteps)
      throw core::InputError(fmt::format(
          "zero_stage 2 with grad_accum {}: each micro-step's reduce-scatters are still running when the next "
          "micro-step ends (the step is communication-bound), so every micro-step is simulated, and at most {} "
          "are: lower grad_accum (a larger micro_batch) or use zero_stage 1",
          micro_steps_, kMaxShardedMicroSteps));
    if (comm_busy_ || !fast_forward_) return false;
    const IdleMoment now{micro, engine_.now(), result_.compute_seconds, result_.blocking_comm_seconds,
                         result_.data_parallel_comm_seconds, result_.flows_started, result_.timeline.size()};
    std::optional<IdleMoment>& before = idle_at_[cursor_ % body_.size()];
    if (!before || before->micro != micro - 1 || micro >= micro_steps_ - 1) {
      before = now;
      return false;
    }
    const int repeats = micro_steps_ - 1 - micro;
    const double period = now.seconds - before->seconds, r = static_cast<double>(repeats);
    result_.compute_seconds += r * (now.compute_seconds - before->compute_seconds);
    result_.blocking_comm_seconds += r * (now.blocking_comm_seconds - before->blocking_comm_seconds);
    result_.data_parallel_comm_seconds += r * (now.data_parallel_comm_seconds - before->data_parallel_comm_seconds);
    result_.flows_started += static_cast<long>(repeats) * (now.flows_started - before->flows_started);
    if (record_) record_periods(repeats, period, before->timeline_spans);
    for (int& done : done_micro_)  // body ops and gradient collectives (the tail has not run yet)
      if (done >= 0) done += repeats;
    cursor_ += static_cast<size_t>(repeats) * body_.size();
    comm_cursor_ += static_cast<size_t>(repeats) * gradient_comm_.size();
    fast_forwarded_ = true;
    const double resume = now.seconds + r * period;
    finish_ = std::max(finish_, resume);
    engine_.schedule_at(resume, [this] { compute_next(); });
    return true;
  }

  // The trace shows the first kMaxTracedMicroSteps - 2 of the skipped periods: the spans recorded in the
  // period before the jump (from `first_span` on), shifted.
  void record_periods(int repeats, double period, size_t first_span) {
    const std::vector<TimelineSpan> one(result_.timeline.begin() + static_cast<long>(first_span),
                                        result_.timeline.end());
    const int shown = std::min(repeats, kMaxTracedMicroSteps - 2);
    for (int j = 1; j <= shown; ++j)
      for (TimelineSpan span : one) {
        span.micro_step += j;
        span.start_seconds += j * period;
        span.end_seconds += j * period;
        result_.timeline.push_back(span);
      }
  }

  bool tail_ready(int id) const {
    for (auto [e, end] = boost::in_edges(id, g_.deps); e != end; ++e) {
      int dep = static_cast<int>(boost::source(*e, g_.deps));
      if (g_.op(dep).phase == Phase::communication && done_micro_[static_cast<size_t>(dep)] < micro_steps_ - 1)
        return false;
    }
    return true;
  }

  // ---- communication stream ----
  // The communication stream's items in order: the gradient collectives of each micro-step that reduces
  // (every one under ZeRO stage 2, else the last), then the all-gathers after the updates. Returns false
  // past the end.
  bool comm_item(size_t index, int& id, int& micro) const {
    const size_t per_micro = gradient_comm_.size();
    const size_t reducing = every_micro_step_ ? static_cast<size_t>(micro_steps_) : 1;
    if (index < reducing * per_micro) {
      id = gradient_comm_[index % per_micro];
      micro = every_micro_step_ ? static_cast<int>(index / per_micro) : micro_steps_ - 1;
      return true;
    }
    if (index - reducing * per_micro >= after_update_comm_.size()) return false;
    id = after_update_comm_[index - reducing * per_micro];
    micro = micro_steps_ - 1;
    return true;
  }

  // An item of micro-step m waits for its body ops in m and its collectives (of m) before it; an all-gather
  // after an update, for the update (which runs once: done_micro_ 0).
  bool comm_ready(int id, int micro) const {
    for (int dep : comm_deps_.at(id)) {
      const Phase phase = g_.op(dep).phase;
      const int needed = phase == Phase::optimizer ? 0 : micro;
      if (done_micro_[static_cast<size_t>(dep)] < needed) return false;
    }
    return true;
  }

  void try_start_comm() {
    int id = 0, micro = 0;
    if (comm_busy_ || !comm_item(comm_cursor_, id, micro) || !comm_ready(id, micro)) return;
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
      engine_.schedule_at(start + *seconds,
                          [this, id, micro, start, seconds] { comm_finished(id, micro, start, start + *seconds); });
      return;
    }
    result_.flows_started += run_prepared_collective(network_, prepared(op), start,
                                                     [this, id, micro, start, key, reusable](const CollectiveResult& r) {
                                                       if (reusable) cache_->remember_alone_seconds(key, r.duration_seconds());
                                                       comm_finished(id, micro, start, r.finish_seconds);
                                                     },
                                                     /*alone_on_network=*/tp_ == 1).flows_started;
  }

  void comm_finished(int id, int micro, double start, double finish) {
    result_.data_parallel_comm_seconds += finish - start;
    record(id, micro, Stream::communication, start, finish);
    done_micro_[static_cast<size_t>(id)] = micro;
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
  int64_t tp_ = 1, dp_ = 1, shards_ = 1;
  bool hybrid_ = false, every_micro_step_ = false;

 public:
  bool fast_forward_ = true;  // false: simulate_step_every_micro_step

 private:
  int micro_steps_ = 1;
  std::vector<double> op_seconds_;
  std::vector<int> body_, tail_, gradient_comm_, after_update_comm_;
  std::map<int, std::vector<int>> comm_deps_;
  std::vector<int> done_micro_;  // per op: the last micro-step it finished in (-1: not yet)
  std::vector<std::optional<IdleMoment>> idle_at_;  // per body position: the last time the network was idle there
  bool fast_forwarded_ = false;
  std::map<std::tuple<int, int, double>, std::shared_ptr<const PreparedCollective>> prepared_;
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

StepSimulation simulate_step_every_micro_step(const models::TaskGraph& graph, const ClusterConfig& config) {
  if (graph.recipe.zero_stage >= 3 && graph.recipe.data_parallel > 1) return simulate_sharded_step(graph, config, false);
  StepRun run(graph, config, false, nullptr);
  run.fast_forward_ = false;
  return run.run();
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
