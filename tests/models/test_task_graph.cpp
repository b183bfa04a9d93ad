// tests/models/test_task_graph.cpp — the TaskGraph's structure and FLOP accounting against the standard
// analytic counts (Kaplan et al. 2020 "6N per token"; Narayanan et al. 2021 / Megatron-LM for attention).
#include <doctest/doctest.h>

#include <set>

#include "models/builder.hpp"
#include "models/memory_plan.hpp"

using namespace ptsim::models;

namespace {

// Body (forward + backward) GEMM FLOPs of one micro-step.
double body_gemm_flops(const TaskGraph& g) {
  double f = 0;
  for (const Op& op : g.ops)
    if ((op.phase == Phase::forward || op.phase == Phase::backward || op.phase == Phase::recompute) &&
        (op.kind == OpKind::gemm || op.kind == OpKind::batched_gemm))
      f += op.flops;
  return f;
}

Recipe recipe(int64_t batch, int64_t seq) {
  Recipe r;
  r.micro_batch = batch;
  r.seq_len = seq;
  return r;
}

}  // namespace

TEST_CASE("BERT FLOPs per step match 6·N per token + 12·L·h·s attention + heads on masked positions") {
  for (const char* name : {"bert-base", "bert-large"}) {
    for (int64_t seq : {128, 512}) {
      ModelSpec m = load_model(name);
      Recipe r = recipe(8, seq);
      TaskGraph g = build_task_graph(m, r);
      const double L = m.num_layers, h = m.hidden_size, s = seq, I = m.intermediate_size;
      const double tokens = static_cast<double>(r.micro_batch * seq);
      const double masked = static_cast<double>(r.micro_batch * r.max_predictions_per_seq());
      // Dense parameters of the encoder: Q, K, V, output (4h²) and the FFN (2·h·I) per layer.
      const double dense = L * (4 * h * h + 2 * h * I);
      // Forward + backward = 3 × forward; forward = 2 FLOPs per multiply-add.
      const double expected = 6 * dense * tokens                          // encoder GEMMs
                              + 12 * L * h * s * tokens                  // QKᵀ and PV (fwd 4·h·s per token)
                              + 6 * (h * h + h * m.padded_vocab_size()) * masked  // MLM transform + decoder
                              + 6 * (h * h + 2 * h) * r.micro_batch;      // pooler + NSP classifier
      CAPTURE(name);
      CAPTURE(seq);
      // 2%: the analytic count omits bias adds (m·n per biased GEMM), which the graph counts.
      CHECK(body_gemm_flops(g) == doctest::Approx(expected).epsilon(0.02));
    }
  }
}

TEST_CASE("GPT-2 FLOPs per step match 6·N per token + attention + LM head over every token") {
  ModelSpec m = load_model("gpt2-124m");
  Recipe r = recipe(4, 1024);
  TaskGraph g = build_task_graph(m, r);
  const double L = m.num_layers, h = m.hidden_size, s = 1024;
  const double tokens = 4 * 1024;
  const double expected = 6 * L * 12 * h * h * tokens + 12 * L * h * s * tokens + 6 * h * m.padded_vocab_size() * tokens;
  CHECK(body_gemm_flops(g) == doctest::Approx(expected).epsilon(0.02));
}

TEST_CASE("the graph is a DAG in op order; activations are SSA; every parameter gets a gradient") {
  for (const char* name : {"bert-tiny", "gpt2-124m"}) {
    Recipe r = recipe(2, 64);
    r.data_parallel = 4;
    TaskGraph g = build_task_graph(load_model(name), r);
    CHECK(g.is_acyclic_in_order());
    std::set<int> produced;
    for (const Op& op : g.ops) {
      for (int t : op.inputs) {
        const Tensor& in = g.tensor(t);
        if (in.role == TensorRole::activation) CHECK(produced.count(t) == 1);
      }
      for (int t : op.outputs)
        if (g.tensor(t).role == TensorRole::activation) CHECK(produced.insert(t).second);
    }
    for (const Parameter& p : g.params) {
      CAPTURE(p.name);
      CHECK(g.tensor(p.gradient).producer >= 0);  // written by backward, then all-reduce, read by optimizer
    }
  }
}

TEST_CASE("gradient buckets: all-reduce only with data parallelism, buckets of about the requested size") {
  ModelSpec m = load_model("bert-large");
  Recipe r = recipe(4, 128);
  TaskGraph single = build_task_graph(m, r);
  int all_reduces = 0;
  for (const Op& op : single.ops) all_reduces += op.kind == OpKind::all_reduce;
  CHECK(all_reduces == 0);

  r.data_parallel = 8;
  TaskGraph dp = build_task_graph(m, r);
  double total = 0;
  int buckets = 0;
  for (const Op& op : dp.ops)
    if (op.kind == OpKind::all_reduce) {
      ++buckets;
      total += op.attrs.comm.bytes;
      CHECK(op.phase == Phase::communication);
    }
  // fp16 gradients of all parameters are reduced exactly once.
  CHECK(total == doctest::Approx(2.0 * static_cast<double>(dp.parameter_count())));
  // 672 MB of fp16 gradients in 25 MiB buckets → about 26 buckets (the last one partial; a bucket can
  // overshoot by at most one tensor).
  CHECK(buckets >= 20);
  CHECK(buckets <= 27);
}

TEST_CASE("gradient accumulation repeats the body, not the step tail") {
  ModelSpec m = load_model("bert-base");
  Recipe r = recipe(8, 128);
  r.data_parallel = 2;
  TaskGraph one = build_task_graph(m, r);
  r.grad_accum = 4;
  TaskGraph four = build_task_graph(m, r);
  CHECK(four.micro_steps == 4);
  CHECK(four.ops.size() == one.ops.size());
  double body = one.flops(Phase::forward) + one.flops(Phase::backward);
  double tail = one.flops(Phase::communication) + one.flops(Phase::optimizer);
  CHECK(four.flops_per_step() == doctest::Approx(4 * body + tail));
}

TEST_CASE("recomputation re-runs the forward (≈ +1/3 GEMM FLOPs) and cuts activation memory") {
  ModelSpec m = load_model("bert-large");
  Recipe r = recipe(8, 512);
  TaskGraph plain = build_task_graph(m, r);
  r.recompute_activations = true;
  TaskGraph re = build_task_graph(m, r);
  CHECK(re.is_acyclic_in_order());
  double fwd = plain.flops(Phase::forward);
  // Every encoder layer's forward runs twice: extra FLOPs = encoder forward FLOPs (head and embeddings once).
  CHECK(re.flops(Phase::recompute) == doctest::Approx(fwd).epsilon(0.05));
  CHECK(re.flops(Phase::recompute) < fwd);
  MemoryPlan a = plan_memory(plain), b = plan_memory(re);
  CHECK(b.activations_peak_bytes < 0.35 * a.activations_peak_bytes);
}

TEST_CASE("tensor parallelism splits the layer GEMMs and puts all-reduces in every layer") {
  ModelSpec m = load_model("megatron-gpt2-8.3b");
  Recipe r = recipe(1, 1024);
  r.tensor_parallel = 8;
  TaskGraph g = build_task_graph(m, r);
  int forward_tp = 0, backward_tp = 0;
  for (const Op& op : g.ops)
    if (op.kind == OpKind::all_reduce && op.attrs.comm.group == CommGroup::tensor_parallel)
      (op.phase == Phase::forward ? forward_tp : backward_tp) += 1;
  // Megatron-LM: 2 all-reduces per layer forward (attention, MLP) and 2 backward (+ embedding/head).
  CHECK(forward_tp == 2 * 72 + 1);
  CHECK(backward_tp == 2 * 72 + 1);
  // Parameters per rank ≈ 8.3B / 8 (LayerNorms and position embeddings are replicated).
  CHECK(static_cast<double>(g.parameter_count()) == doctest::Approx(8.3e9 / 8).epsilon(0.03));
}

TEST_CASE("memory plan: BERT-large seq 512 micro-batch 32 fp16 LAMB needs far more than 16 GB; 4 fits") {
  ModelSpec m = load_model("bert-large");
  Recipe r = recipe(32, 512);
  MemoryPlan big = plan_memory(build_task_graph(m, r));
  r.micro_batch = 4;
  MemoryPlan small = plan_memory(build_task_graph(m, r));
  // Persistent state: 2 (fp16 w) + 2 (fp16 grad) + 4 (fp32 master) + 8 (two fp32 moments) = 16 bytes/param
  // (Rajbhandari et al. 2020, ZeRO §3.1).
  CHECK(small.persistent_bytes() == doctest::Approx(16.0 * 336.2e6).epsilon(0.01));
  CHECK(big.total_bytes() > 16e9);
  CHECK(small.total_bytes() < 15e9);
  // The arena is never smaller than what is live at once, and first-fit wastes little.
  CHECK(small.activations_peak_bytes >= small.activations_live_peak_bytes);
  CHECK(small.activations_peak_bytes < 1.25 * small.activations_live_peak_bytes);
}
