// sim/pipeline_step.cpp — a pipeline-parallel step on the event engine (see the header).
#include "sim/pipeline_step.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <deque>
#include <map>
#include <memory>

#include "core/error.hpp"
#include "sim/collective_cache.hpp"
#include "sim/compute_model.hpp"
#include "sim/event_engine.hpp"
#include "sim/network.hpp"
#include "sim/pipeline_overlap.hpp"

namespace ptsim::sim {
namespace {

using models::OpKind;
using models::Phase;

class PipelineStep final : public PipelineTransport {
 public:
  PipelineStep(const std::vector<models::TaskGraph>& chunks, const ClusterConfig& c, bool record, CollectiveCache* cache)
      : chunks_(chunks), c_(c), record_(record), cache_(cache), network_(engine_) {
    const models::Recipe& r = chunks.front().recipe;
    shape_ = PipelineShape::of(r);
    tp_ = static_cast<int>(r.tensor_parallel);
    dp_ = static_cast<int>(r.data_parallel);
    check_cluster();
    topology_ = std::make_unique<Topology>(network_, c_.cluster);
  }

  StepSimulation run() {
    std::vector<double> forward, backward;
    for (const auto& g : chunks_) {
      forward.push_back(pass_seconds(g, false));
      backward.push_back(pass_seconds(g, true));
    }
    comm_done_.assign(static_cast<size_t>(shape_.stages), false);
    stages_.resize(static_cast<size_t>(shape_.stages));
    for (int d = 0; d < shape_.stages; ++d) stages_[static_cast<size_t>(d)].stage = d;
    PipelineExecutor executor(engine_, shape_, forward, backward, *this, [this](int d) { device_done(d); }, record_);
    prepare_overlap(executor);
    executor.start(0);
    engine_.run();
    return finish(executor.result());
  }

  // Activations forward, gradients backward: each tensor-parallel rank sends its 1/T share to the same rank of
  // the next stage, which all-gathers the whole tensor over NVLink (Megatron's scatter/gather optimisation).
  // Under sequence parallelism the sent tensor is already the rank's 1/T sequence shard, sent whole, and the
  // next stage's first LayerNorm runs on it as it is: no gather.
  void send(int from_chunk, int to_chunk, bool gradient, std::function<void()> arrived) override {
    const models::TaskGraph& g = chunks_[static_cast<size_t>(std::min(from_chunk, to_chunk))];
    const bool sequence_shard = g.recipe.sequence_parallel;
    const double bytes = static_cast<double>(g.tensor(g.chunk.send_activation).bytes());
    const int from = from_chunk % shape_.stages, to = to_chunk % shape_.stages;
    const double start = engine_.now();
    auto p2p = prepared(CollectiveKind::send_recv, sequence_shard ? bytes : bytes / tp_, pairs(from, to),
                        CollectiveAlgorithm::ring);
    result_.flows_started += run_prepared_collective(network_, p2p, start, [this, to, bytes, start, arrived, sequence_shard](const CollectiveResult& r) {
      if (tp_ == 1 || sequence_shard) return sent(start, r.finish_seconds, arrived);
      auto gather = prepared(CollectiveKind::all_gather, bytes, tp_groups(to), CollectiveAlgorithm::ring);
      result_.flows_started += run_prepared_collective(network_, gather, r.finish_seconds, [this, start, arrived](const CollectiveResult& g) {
        sent(start, g.finish_seconds, arrived);
      }).flows_started;
    }).flows_started;
    (void)gradient;
  }

 private:
  void check_cluster() const {
    const int gpus = c_.gpu_count();
    if (dp_ * tp_ * shape_.stages != gpus)
      throw core::InputError(fmt::format("data-parallel {} × tensor-parallel {} × pipeline-parallel {} = {} GPUs, but the "
                                         "cluster has {} ({} nodes × {} GPUs): make them match",
                                         dp_, tp_, shape_.stages, dp_ * tp_ * shape_.stages, gpus, c_.cluster.nodes,
                                         c_.cluster.node.gpus_per_node));
    if (tp_ > c_.cluster.node.gpus_per_node)
      throw core::InputError(fmt::format("tensor-parallel {} exceeds the {} GPUs of a {} node (tensor parallelism "
                                         "stays inside a node)", tp_, c_.cluster.node.gpus_per_node, c_.cluster.node.name));
    if (shape_.micro_batches > kMaxPipelineMicroBatches)
      throw core::InputError(fmt::format("a pipeline is simulated micro-batch by micro-batch: {} micro-batches per step "
                                         "(grad_accum) is more than the {} it runs", shape_.micro_batches,
                                         kMaxPipelineMicroBatches));
  }

  int channels() const { return c_.channels > 0 ? c_.channels : std::max(2, c_.cluster.node.nics_per_node); }
  int rank(int stage, int d, int t) const {
    return pipeline_rank(stage, d, t, dp_, tp_, shape_.stages, chunks_.front().recipe.rank_order);
  }

  // ---- groups: the first of a kind's groups, then the others that run the same collective at once ----
  using Groups = std::vector<std::vector<int>>;
  Groups tp_groups(int stage) const {
    Groups out(static_cast<size_t>(dp_));
    for (int d = 0; d < dp_; ++d)
      for (int t = 0; t < tp_; ++t) out[static_cast<size_t>(d)].push_back(rank(stage, d, t));
    return out;
  }
  Groups dp_groups(int stage) const {
    Groups out(static_cast<size_t>(tp_));
    for (int t = 0; t < tp_; ++t)
      for (int d = 0; d < dp_; ++d) out[static_cast<size_t>(t)].push_back(rank(stage, d, t));
    return out;
  }
  Groups pairs(int from, int to) const {
    Groups out;
    for (int d = 0; d < dp_; ++d)
      for (int t = 0; t < tp_; ++t) out.push_back({rank(from, d, t), rank(to, d, t)});
    return out;
  }

  std::shared_ptr<const PreparedCollective> prepared(CollectiveKind kind, double bytes, const Groups& groups,
                                                     CollectiveAlgorithm algorithm) {
    const std::string key = fmt::format("{}|{}|{}|{}", static_cast<int>(kind), bytes, groups.front().front(),
                                        groups.front().back());
    if (auto it = prepared_.find(key); it != prepared_.end()) return it->second;
    CollectiveSpec spec;
    spec.kind = kind;
    spec.bytes = bytes;
    spec.ranks = groups.front();
    spec.concurrent_groups.assign(groups.begin() + 1, groups.end());
    spec.channels = channels();
    spec.mode = c_.mode;
    spec.algorithm = algorithm == CollectiveAlgorithm::automatic ? data_parallel_algorithm(spec) : algorithm;
    return prepared_[key] = prepare_collective(*topology_, spec);
  }

  // `automatic` resolves once per step, on the largest gradient bucket of any stage (as sim/step_simulator).
  CollectiveAlgorithm data_parallel_algorithm(CollectiveSpec spec) {
    if (c_.data_parallel_algorithm != CollectiveAlgorithm::automatic) return c_.data_parallel_algorithm;
    if (dp_choice_ != CollectiveAlgorithm::automatic) return dp_choice_;
    for (const auto& g : chunks_)
      for (const auto& op : g.ops)
        if (op.phase == Phase::communication) spec.bytes = std::max(spec.bytes, op.attrs.comm.bytes);
    const std::string key = cache_ ? fmt::format("{}|choose|{}|dp{}|tp{}|pp{}|ch{}", cluster_key(c_), spec.bytes, dp_,
                                                 tp_, shape_.stages, spec.channels)
                                   : "";
    if (auto cached = cache_ ? cache_->algorithm(key) : std::nullopt) return dp_choice_ = *cached;
    dp_choice_ = choose_algorithm(*topology_, spec);
    if (cache_) cache_->remember_algorithm(key, dp_choice_);
    return dp_choice_;
  }

  // ---- one forward or backward pass of a chunk: its ops back to back, tensor-parallel all-reduces alone on
  // the network (the stage's D groups at once), as micro-step 0 of sim/step_simulator runs them ----
  double pass_seconds(const models::TaskGraph& g, bool backward) {
    const int stage = g.chunk.index % shape_.stages;
    StageTiming& timing = stage_timing(stage);
    double seconds = 0;
    for (const auto& op : g.ops) {
      if (!models::is_micro_step_phase(op.phase) || (op.phase == Phase::forward) == backward) continue;
      const double s = op_seconds(op);
      (models::is_communication(op.kind) ? timing.blocking_comm_seconds : timing.compute_seconds) +=
          s * static_cast<double>(shape_.micro_batches);
      seconds += s;
    }
    return seconds;
  }

  double op_seconds(const models::Op& op) {
    return models::is_communication(op.kind) ? tp_collective_seconds(op) : op_cost(op, c_.gpu).seconds;
  }

  // A tensor-parallel all-reduce, or under sequence parallelism an all-gather or reduce-scatter (all rings).
  double tp_collective_seconds(const models::Op& op) {
    const CollectiveKind kind = op.kind == OpKind::all_gather       ? CollectiveKind::all_gather
                                : op.kind == OpKind::reduce_scatter ? CollectiveKind::reduce_scatter
                                                                    : CollectiveKind::all_reduce;
    const double bytes = op.attrs.comm.bytes;
    auto it = tp_seconds_.find({static_cast<int>(kind), bytes});
    if (it != tp_seconds_.end()) return it->second;
    CollectiveSpec spec;
    spec.kind = kind;
    spec.bytes = bytes;
    const Groups groups = tp_groups(0);
    spec.ranks = groups.front();
    spec.concurrent_groups.assign(groups.begin() + 1, groups.end());
    spec.algorithm = CollectiveAlgorithm::ring;
    spec.channels = channels();
    spec.mode = c_.mode;
    return tp_seconds_[{static_cast<int>(kind), bytes}] = simulate_collective(c_.cluster, spec).duration_seconds();
  }

  StageTiming& stage_timing(int stage) {
    if (stages_.size() <= static_cast<size_t>(stage)) stages_.resize(static_cast<size_t>(shape_.stages));
    return stages_[static_cast<size_t>(stage)];
  }

  void sent(double start, double end, const std::function<void()>& arrived) {
    result_.pipeline_send_seconds += end - start;
    arrived();
  }

  // ---- after the last backward: the stage's gradient buckets, one at a time, over its data-parallel group:
  // all-reduced, or under ZeRO-1 (the distributed optimizer) reduce-scattered, and then each bucket's updated
  // parameters all-gathered after its update (`parameter_gathers`) ----
  std::vector<std::pair<int, int>> comm_ops(int stage, bool parameter_gathers) const {  // (chunk, op)
    std::vector<std::pair<int, int>> out;
    for (int g = stage; g < shape_.chunks(); g += shape_.stages)
      for (const auto& op : chunks_[static_cast<size_t>(g)].ops)
        if (op.phase == Phase::communication && (op.kind == OpKind::all_gather) == parameter_gathers)
          out.emplace_back(g, op.id);
    return out;
  }

  void start_data_parallel(int stage, size_t next) {
    const auto ops = comm_ops(stage, false);
    if (next == ops.size()) return data_parallel_done(stage);
    reduce_bucket(stage, ops[next].first, ops[next].second, [this, stage, next] { start_data_parallel(stage, next + 1); });
  }

  // One gradient bucket over the stage's data-parallel group, from now; `done` when it has finished.
  void reduce_bucket(int stage, int chunk, int id, std::function<void()> done) {
    const models::Op& op = chunks_[static_cast<size_t>(chunk)].op(id);
    const double start = engine_.now();
    const bool scatter = op.kind == OpKind::reduce_scatter;  // ZeRO's collectives run as rings (as NCCL's do)
    auto p = prepared(scatter ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce, op.attrs.comm.bytes,
                      dp_groups(stage), scatter ? CollectiveAlgorithm::ring : CollectiveAlgorithm::automatic);
    if (!scatter) result_.data_parallel_algorithm = to_string(p->algorithm);
    result_.flows_started += run_prepared_collective(network_, p, start, [=, this](const CollectiveResult& r) {
      stage_timing(stage).data_parallel_comm_seconds += r.finish_seconds - start;
      if (record_) result_.timeline.push_back({id, 0, Stream::communication, start, r.finish_seconds, chunk, stage});
      done();
    }).flows_started;
  }

  // The stage's last backward (and its send) is done: without overlap its reductions start now; with
  // overlap_grad_reduce they started as their buckets became final, and the stage goes on once they are done.
  void device_done(int stage) {
    if (!overlap_.grad_reduce) return start_data_parallel(stage, 0);
    overlap_.device_done[static_cast<size_t>(stage)] = true;
    maybe_reduced(stage);
  }

  // ---- overlap (docs/parallelism.md, "Overlapping the data-parallel communication with the pipeline") ----
  struct HeldPass {
    double start = 0, seconds = 0;
    PipelineExecutor::FinishPass finish;
  };
  struct Overlap {
    bool grad_reduce = false, param_gather = false;
    std::vector<std::vector<BucketOffset>> gradient_ready, parameter_use;  // per chunk, from its pass's start
    std::vector<std::deque<std::pair<int, int>>> final_buckets;             // per stage: (chunk, op) to reduce
    std::vector<bool> reducing, device_done, reported;
    std::vector<size_t> reduced;
    std::map<std::pair<int, int>, double> gather_end;  // (chunk, gather op) → its end
    std::vector<size_t> gathered;                      // per chunk: gathers done
    std::map<int, HeldPass> held;                      // chunk → its first forward, waiting for its gathers
  } overlap_;

  void prepare_overlap(PipelineExecutor& executor) {
    const models::Recipe& r = chunks_.front().recipe;
    overlap_.grad_reduce = r.overlap_grad_reduce;
    overlap_.param_gather = r.overlap_param_gather && r.zero_stage == 1;
    if (!overlap_.grad_reduce && !overlap_.param_gather) return;
    const size_t stages = static_cast<size_t>(shape_.stages);
    overlap_.final_buckets.resize(stages);
    overlap_.reducing.assign(stages, false);
    overlap_.device_done.assign(stages, false);
    overlap_.reported.assign(stages, false);
    overlap_.reduced.assign(stages, 0);
    overlap_.gathered.assign(chunks_.size(), 0);
    const OpSeconds seconds = [this](const models::Op& op) { return op_seconds(op); };
    for (const auto& g : chunks_) {
      overlap_.gradient_ready.push_back(gradient_ready_offsets(g, seconds));
      overlap_.parameter_use.push_back(overlap_.param_gather ? parameter_use_offsets(g, seconds)
                                                             : std::vector<BucketOffset>{});
    }
    executor.set_pass_runner([this](int device, const PipelineTask& task, double start, double s,
                                    PipelineExecutor::FinishPass finish) { run_pass(device, task, start, s, std::move(finish)); });
    if (overlap_.param_gather)
      for (int stage = 0; stage < shape_.stages; ++stage) gather_for_forward(stage, 0);
  }

  void run_pass(int device, const PipelineTask& task, double start, double seconds, PipelineExecutor::FinishPass finish) {
    const size_t chunk = static_cast<size_t>(task.chunk);
    if (overlap_.grad_reduce && task.backward && task.micro == shape_.micro_batches - 1)
      for (const BucketOffset& b : overlap_.gradient_ready[chunk]) {
        const int op = b.op;
        engine_.schedule_at(start + b.offset_seconds, [this, device, task, op] { bucket_final(device, task.chunk, op); });
      }
    if (overlap_.param_gather && !task.backward && task.micro == 0 && !overlap_.parameter_use[chunk].empty()) {
      overlap_.held[task.chunk] = {start, seconds, std::move(finish)};
      return release_if_gathered(task.chunk);
    }
    engine_.schedule_at(start + seconds, [finish = std::move(finish), start] { finish(start); });
  }

  // overlap_grad_reduce: a bucket final in the last micro-batch's backward joins the stage's communication
  // stream, reduced one at a time in the order they became final.
  void bucket_final(int stage, int chunk, int op) {
    overlap_.final_buckets[static_cast<size_t>(stage)].emplace_back(chunk, op);
    if (!overlap_.reducing[static_cast<size_t>(stage)]) reduce_next(stage);
  }

  void reduce_next(int stage) {
    const size_t s = static_cast<size_t>(stage);
    if (overlap_.final_buckets[s].empty()) {
      overlap_.reducing[s] = false;
      return maybe_reduced(stage);
    }
    overlap_.reducing[s] = true;
    const std::pair<int, int> next = overlap_.final_buckets[s].front();
    overlap_.final_buckets[s].pop_front();
    reduce_bucket(stage, next.first, next.second, [this, stage, s] {
      ++overlap_.reduced[s];
      reduce_next(stage);
    });
  }

  void maybe_reduced(int stage) {
    const size_t s = static_cast<size_t>(stage);
    if (overlap_.reported[s] || !overlap_.device_done[s] || overlap_.reducing[s] ||
        overlap_.reduced[s] < comm_ops(stage, false).size())
      return;
    overlap_.reported[s] = true;
    data_parallel_done(stage);
  }

  // overlap_param_gather: the stage's buckets all-gathered from the step's start, one at a time in the order
  // its forwards first read them (local chunk 0 first) — the previous step's updated parameters, gathered
  // while this step's forward runs (one step simulated: docs/parallelism.md says why).
  std::vector<std::pair<int, int>> gathers_in_forward_order(int stage) const {
    std::vector<std::pair<int, int>> out;
    for (int g = stage; g < shape_.chunks(); g += shape_.stages)
      for (const BucketOffset& b : overlap_.parameter_use[static_cast<size_t>(g)]) out.emplace_back(g, b.op);
    return out;
  }

  void gather_for_forward(int stage, size_t next) {
    const auto ops = gathers_in_forward_order(stage);
    if (next == ops.size()) return;
    const int chunk = ops[next].first, id = ops[next].second;
    const double start = engine_.now();
    auto p = prepared(CollectiveKind::all_gather, chunks_[static_cast<size_t>(chunk)].op(id).attrs.comm.bytes,
                      dp_groups(stage), CollectiveAlgorithm::ring);
    result_.flows_started += run_prepared_collective(network_, p, start, [=, this](const CollectiveResult& r) {
      stage_timing(stage).data_parallel_comm_seconds += r.finish_seconds - start;
      if (record_) result_.timeline.push_back({id, 0, Stream::communication, start, r.finish_seconds, chunk, stage});
      overlap_.gather_end[{chunk, id}] = r.finish_seconds;
      ++overlap_.gathered[static_cast<size_t>(chunk)];
      release_if_gathered(chunk);
      gather_for_forward(stage, next + 1);
    }).flows_started;
  }

  // The chunk's first forward ends when its ops, each held until its bucket's gather, are done.
  void release_if_gathered(int chunk) {
    auto it = overlap_.held.find(chunk);
    const auto& uses = overlap_.parameter_use[static_cast<size_t>(chunk)];
    if (it == overlap_.held.end() || overlap_.gathered[static_cast<size_t>(chunk)] < uses.size()) return;
    std::vector<std::pair<double, double>> gates;
    for (const BucketOffset& b : uses) gates.emplace_back(b.offset_seconds, overlap_.gather_end.at({chunk, b.op}));
    const HeldPass pass = std::move(it->second);
    overlap_.held.erase(it);
    const double end = gated_pass_end(pass.start, pass.seconds, gates);
    engine_.schedule_at(end, [pass, end] { pass.finish(end - pass.seconds); });
  }

  // Megatron keeps the word embeddings on the first and the last stage and all-reduces their gradients
  // between the two once both have reduced their own.
  void data_parallel_done(int stage) {
    const int last = shape_.stages - 1;
    const models::TaskGraph& tail = chunks_.back();
    const bool tied = tail.chunk.tied_embedding_param >= 0;
    if (!tied || (stage != 0 && stage != last)) return comm_finished(stage);
    if (++embedding_ready_ < 2) return;
    const models::Parameter& param = tail.params[static_cast<size_t>(tail.chunk.tied_embedding_param)];
    const double bytes = static_cast<double>(tail.tensor(param.gradient).bytes());
    const double start = engine_.now();
    auto p = prepared(CollectiveKind::all_reduce, bytes, pairs(0, last), CollectiveAlgorithm::ring);
    result_.flows_started += run_prepared_collective(network_, p, start, [=, this](const CollectiveResult& r) {
      for (int s : {0, last}) {
        stage_timing(s).data_parallel_comm_seconds += r.finish_seconds - start;
        if (record_) result_.timeline.push_back({-1, 0, Stream::communication, start, r.finish_seconds, shape_.chunks() - 1, s});
      }
      comm_finished(0);
      comm_finished(last);
    }).flows_started;
  }

  // With global-norm clipping the norm spans every stage, so no optimizer starts before every stage's
  // gradients are reduced (a scalar all-reduce, whose time is not charged).
  void comm_finished(int stage) {
    comm_done_[static_cast<size_t>(stage)] = true;
    bool global_norm = false;
    for (const auto& g : chunks_)
      for (const auto& op : g.ops) global_norm = global_norm || op.kind == models::OpKind::grad_norm;
    if (!global_norm) return run_tail(stage);
    if (std::find(comm_done_.begin(), comm_done_.end(), false) != comm_done_.end()) return;
    for (int s = 0; s < shape_.stages; ++s) run_tail(s);
  }

  void run_tail(int stage) {
    double t = engine_.now();
    StageTiming& timing = stage_timing(stage);
    for (int g = stage; g < shape_.chunks(); g += shape_.stages)
      for (const auto& op : chunks_[static_cast<size_t>(g)].ops) {
        if (op.phase != Phase::optimizer) continue;
        const double s = op_cost(op, c_.gpu).seconds;
        if (record_) result_.timeline.push_back({op.id, 0, Stream::compute, t, t + s, g, stage});
        timing.compute_seconds += s;
        t += s;
        update_end_[{g, op.id}] = t;
      }
    timing.finish_seconds = t;
    if (!overlap_.param_gather) gather_parameters(stage, 0);
  }

  // ZeRO-1: each bucket's updated shard is all-gathered over the stage's data-parallel group as soon as its
  // update is done and the previous gather has finished (one communication stream), overlapping the other
  // buckets' updates as in sim/step_simulator; the stage is done when its last gather is.
  void gather_parameters(int stage, size_t next) {
    const auto ops = comm_ops(stage, true);
    if (next == ops.size()) return;
    const int chunk = ops[next].first, id = ops[next].second;
    const models::TaskGraph& g = chunks_[static_cast<size_t>(chunk)];
    double ready = engine_.now();
    for (auto [e, end] = boost::in_edges(id, g.deps); e != end; ++e)
      if (auto it = update_end_.find({chunk, static_cast<int>(boost::source(*e, g.deps))}); it != update_end_.end())
        ready = std::max(ready, it->second);
    engine_.schedule_at(ready, [this, stage, next, chunk, id, &g] {
      const double start = engine_.now();
      auto p = prepared(CollectiveKind::all_gather, g.op(id).attrs.comm.bytes, dp_groups(stage), CollectiveAlgorithm::ring);
      result_.flows_started += run_prepared_collective(network_, p, start, [=, this](const CollectiveResult& r) {
        StageTiming& timing = stage_timing(stage);
        timing.data_parallel_comm_seconds += r.finish_seconds - start;
        timing.finish_seconds = std::max(timing.finish_seconds, r.finish_seconds);
        if (record_) result_.timeline.push_back({id, 0, Stream::communication, start, r.finish_seconds, chunk, stage});
        gather_parameters(stage, next + 1);
      }).flows_started;
    });
  }

  StepSimulation finish(const PipelineRun& run) {
    StepSimulation& r = result_;
    r.pipeline_stages = shape_.stages;
    r.pipeline_flush_seconds = run.flush_seconds;
    r.pipeline_bubble_fraction = run.bubble_fraction(0);
    r.pipeline_bubble_seconds = r.pipeline_bubble_fraction * run.flush_seconds;
    const StageTiming* busiest = &stages_.front();
    for (auto& s : stages_) {
      s.busy_seconds = run.busy_seconds[static_cast<size_t>(s.stage)];
      s.idle_seconds = run.flush_seconds - s.busy_seconds;
      s.last_backward_end_seconds = run.last_backward_end[static_cast<size_t>(s.stage)];
      r.iteration_seconds = std::max(r.iteration_seconds, s.finish_seconds);
      r.data_parallel_comm_seconds = std::max(r.data_parallel_comm_seconds, s.data_parallel_comm_seconds);
      if (s.compute_seconds + s.blocking_comm_seconds > busiest->compute_seconds + busiest->blocking_comm_seconds)
        busiest = &s;
    }
    r.compute_seconds = busiest->compute_seconds;
    r.blocking_comm_seconds = busiest->blocking_comm_seconds;
    r.exposed_comm_seconds = std::max(0.0, r.iteration_seconds - r.compute_seconds - r.pipeline_bubble_seconds);
    r.stages = stages_;
    if (record_) r.pipeline_timeline = run.spans;
    return r;
  }

  const std::vector<models::TaskGraph>& chunks_;
  const ClusterConfig& c_;
  bool record_;
  CollectiveCache* cache_;
  EventEngine engine_;
  Network network_;
  std::unique_ptr<Topology> topology_;
  PipelineShape shape_;
  int tp_ = 1, dp_ = 1;
  std::map<std::string, std::shared_ptr<const PreparedCollective>> prepared_;
  std::map<std::pair<int, double>, double> tp_seconds_;  // (collective kind, bytes) → seconds
  CollectiveAlgorithm dp_choice_ = CollectiveAlgorithm::automatic;
  std::vector<StageTiming> stages_;
  std::vector<bool> comm_done_;
  std::map<std::pair<int, int>, double> update_end_;  // (chunk, optimizer op) → when its update ended
  int embedding_ready_ = 0;
  StepSimulation result_;
};

}  // namespace

StepSimulation simulate_pipeline_step(const std::vector<models::TaskGraph>& chunks, const ClusterConfig& config,
                                      bool record_timeline, CollectiveCache* cache) {
  if (chunks.empty()) throw std::invalid_argument("simulate_pipeline_step: no model chunks");
  return PipelineStep(chunks, config, record_timeline, cache).run();
}

}  // namespace ptsim::sim
