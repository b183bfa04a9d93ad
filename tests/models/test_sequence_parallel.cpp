// tests/models/test_sequence_parallel.cpp — Megatron sequence parallelism and selective recomputation in the
// graph (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// docs/references.md, "Sequence parallelism"): the activation bytes one layer keeps for its backward against
// the paper's closed forms (§4, Table 2), the tensor-parallel collectives per layer, and the refusals.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include "core/error.hpp"
#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "tests/support/gpt_spec.hpp"

using namespace ptsim::models;

namespace {

// A GPT-2-shaped model (pre-LN, causal, 4h MLP) sized so every tensor is a multiple of the arena's 256-byte
// alignment: the plan's bytes are then exactly the tensors' bytes.
ModelSpec gpt(int64_t layers) { return ptsim::testing::gpt_shaped("gpt-sp-test", layers, 1024, 16, 1024); }

Recipe recipe(int64_t tp, bool sp, bool selective = false) {
  Recipe r;
  r.precision = Precision::fp16;
  r.optimizer = OptimizerKind::adamw;
  r.micro_batch = 2;
  r.seq_len = 512;
  r.tensor_parallel = tp;
  r.sequence_parallel = sp;
  r.selective_recompute = selective;
  return r;
}

// What one transformer layer's forward leaves for its backward: the retained bytes of a 2-layer model less
// those of a 1-layer one (embeddings and head are the same in both).
double layer_retained_bytes(const Recipe& r) {
  return plan_memory(build_task_graph(gpt(2), r)).retained_activation_bytes -
         plan_memory(build_task_graph(gpt(1), r)).retained_activation_bytes;
}

// Ops of one layer (layer 0 of the 1-layer model) by (phase, kind).
std::map<std::string, int> layer_comm_ops(const Recipe& r) {
  std::map<std::string, int> count;
  for (const Op& op : build_task_graph(gpt(1), r).ops)
    if (op.layer == 0 && is_communication(op.kind))
      ++count[std::string(to_string(op.phase)) + " " + to_string(op.kind)];
  return count;
}

double layer_comm_bytes(const Recipe& r, OpKind kind) {
  double bytes = 0;
  for (const Op& op : build_task_graph(gpt(1), r).ops)
    if (op.layer == 0 && op.kind == kind) bytes += op.attrs.comm.bytes;
  return bytes;
}

}  // namespace

TEST_CASE("per-layer activation bytes follow Korthikanti et al. 2022's closed forms") {
  // The paper (§4.1, Eq. 1–2; Table 2) counts 16-bit activations and 1-byte dropout masks per layer:
  // sbh(34 + 5as/h) without parallelism, sbh(10 + 24/t + 5as/(ht)) with tensor parallelism t, and
  // sbh/t·(34 + 5as/h) with tensor + sequence parallelism. ptsim's memory plan keeps exactly those tensors
  // plus what the paper leaves out as small: each LayerNorm's fp32 mean and rstd per row (2 LayerNorms ×
  // 8 bytes × sb rows), which sequence parallelism splits like the LayerNorm itself. Exact (tolerance 1e-12
  // relative: only floating-point sums), because every tensor is a multiple of the arena alignment.
  const double s = 512, b = 2, h = 1024, a = 16;
  const double ln_stats = 2 * 8 * s * b;
  const double attention_scores = 5 * a * s / h;
  CHECK(layer_retained_bytes(recipe(1, false)) ==
        doctest::Approx(s * b * h * (34 + attention_scores) + ln_stats).epsilon(1e-12));
  for (int64_t tp : {2, 4, 8}) {
    CAPTURE(tp);
    const double t = static_cast<double>(tp);
    CHECK(layer_retained_bytes(recipe(tp, false)) ==
          doctest::Approx(s * b * h * (10 + 24 / t + attention_scores / t) + ln_stats).epsilon(1e-12));
    CHECK(layer_retained_bytes(recipe(tp, true)) ==
          doctest::Approx(s * b * h / t * (34 + attention_scores) + ln_stats / t).epsilon(1e-12));
    // Selective recomputation drops the 5as/h term (paper §5, Table 2: sbh·34/t with both).
    CHECK(layer_retained_bytes(recipe(tp, true, true)) == doctest::Approx(s * b * h * 34 / t + ln_stats / t).epsilon(1e-12));
    CHECK(layer_retained_bytes(recipe(tp, false, true)) ==
          doctest::Approx(s * b * h * (10 + 24 / t) + ln_stats).epsilon(1e-12));
  }
}

TEST_CASE("BERT's post-LN layer keeps the same closed forms under tensor and sequence parallelism") {
  // BERT-large's shape (h 1024, a 16) at s 512, b 2: the LayerNorms sit after the residual adds, but a layer
  // still keeps two LayerNorm inputs, the inputs of QKV and of the first MLP linear (the previous LayerNorms'
  // outputs), and the same attention and MLP tensors: the paper's count holds as for GPT (exact, as above).
  auto bert = [](int64_t layers) {
    ModelSpec m = load_model("bert-large");
    m.num_layers = layers;
    return m;
  };
  auto retained = [&](const Recipe& r) {
    return plan_memory(build_task_graph(bert(2), r)).retained_activation_bytes -
           plan_memory(build_task_graph(bert(1), r)).retained_activation_bytes;
  };
  const double s = 512, b = 2, h = 1024, a = 16, t = 4, ln_stats = 2 * 8 * s * b;
  Recipe r = recipe(4, false);
  r.optimizer = OptimizerKind::lamb;
  CHECK(retained(r) == doctest::Approx(s * b * h * (10 + 24 / t + 5 * a * s / (h * t)) + ln_stats).epsilon(1e-12));
  r.sequence_parallel = true;
  CHECK(retained(r) == doctest::Approx(s * b * h / t * (34 + 5 * a * s / h) + ln_stats / t).epsilon(1e-12));
}

TEST_CASE("sequence parallelism turns each layer's two all-reduces into all-gathers and reduce-scatters") {
  // Megatron without SP: forward g (all-reduce) after attention and after the MLP, backward f (all-reduce of
  // the gradient) before each. With SP (paper §4.2.2, Fig. 5): forward all-gather before the column-parallel
  // linears and reduce-scatter after the row-parallel ones; backward their mirrors, plus the re-gather of the
  // LayerNorm output's shard before the QKV and first MLP linears' weight gradients (recompute phase).
  const std::map<std::string, int> tp = layer_comm_ops(recipe(4, false));
  CHECK(tp == std::map<std::string, int>{{"forward all_reduce", 2}, {"backward all_reduce", 2}});
  const std::map<std::string, int> sp = layer_comm_ops(recipe(4, true));
  CHECK(sp == std::map<std::string, int>{{"forward all_gather", 2},
                                         {"forward reduce_scatter", 2},
                                         {"backward reduce_scatter", 2},
                                         {"backward all_gather", 2},
                                         {"recompute all_gather", 2}});
  // Each moves the whole [B·S, H] fp16 tensor in ring terms: a ring all-gather plus a ring reduce-scatter
  // send (t−1)/t of it each, what one ring all-reduce sends (2(t−1)/t), so the forward volume is unchanged.
  const double tensor = 2.0 * 512 * 1024 * 2;
  CHECK(layer_comm_bytes(recipe(4, false), OpKind::all_reduce) == doctest::Approx(4 * tensor));
  CHECK(layer_comm_bytes(recipe(4, true), OpKind::reduce_scatter) == doctest::Approx(4 * tensor));
  CHECK(layer_comm_bytes(recipe(4, true), OpKind::all_gather) == doctest::Approx(6 * tensor));
}

TEST_CASE("sequence parallelism splits LayerNorm, dropout and residual work by t") {
  // Those ops run on B·S/t rows under SP, so their FLOPs and activation bytes shrink by t (LayerNorm's γ and β
  // are read whole: its FLOPs are compared); attention's dropout and the GEMMs are unchanged. Exact.
  struct Cost {
    double flops = 0, bytes = 0;
  };
  auto sums = [](const Recipe& r) {
    std::map<std::string, Cost> cost;
    for (const Op& op : build_task_graph(gpt(1), r).ops) {
      if (op.layer != 0 || op.phase != Phase::forward) continue;
      const bool hidden_dropout = op.kind == OpKind::dropout && op.name.find("attn_dropout") == std::string::npos;
      const std::string key = hidden_dropout ? "hidden dropout" : to_string(op.kind);
      cost[key].flops += op.flops;
      cost[key].bytes += op.bytes_read + op.bytes_written;
    }
    return cost;
  };
  const std::map<std::string, Cost> tp = sums(recipe(4, false)), sp = sums(recipe(4, true));
  CHECK(sp.at("layernorm").flops == doctest::Approx(tp.at("layernorm").flops / 4));
  for (const char* k : {"add", "hidden dropout"}) {
    CAPTURE(k);
    CHECK(sp.at(k).flops == doctest::Approx(tp.at(k).flops / 4));
    CHECK(sp.at(k).bytes == doctest::Approx(tp.at(k).bytes / 4));
  }
  for (const char* k : {"gemm", "batched_gemm", "softmax", "dropout"}) {
    CAPTURE(k);
    CHECK(sp.at(k).flops == doctest::Approx(tp.at(k).flops));
  }
}

TEST_CASE("sequence parallelism and selective recomputation refuse what they cannot be") {
  CHECK_THROWS_WITH_AS(build_task_graph(gpt(1), recipe(1, true)), doctest::Contains("needs tensor_parallel > 1"),
                       ptsim::core::InputError);
  Recipe odd = recipe(4, true);
  odd.seq_len = 510;
  CHECK_THROWS_WITH_AS(build_task_graph(gpt(1), odd), doctest::Contains("multiple of tensor_parallel 4"),
                       ptsim::core::InputError);
  Recipe both = recipe(4, true, true);
  both.recompute_activations = true;
  CHECK_THROWS_WITH_AS(build_task_graph(gpt(1), both), doctest::Contains("exclude each other"), ptsim::core::InputError);
}

TEST_CASE("a Llama layer under sequence parallelism: the same collectives as GPT, RMSNorm and residuals on S/t rows") {
  // Llama's pre-RMSNorm layer has the same two tensor-parallel regions as GPT-2's (attention, SwiGLU MLP), so
  // the collective pattern must be the GPT test's above; RMSNorm and the residual adds run on B·S/t rows
  // (their FLOPs ÷ t, exact), the GEMMs and the attention core are unchanged. Grouped-query (kv 4 of 16).
  auto llama = [](int64_t layers) {
    ModelSpec m = gpt(layers);
    m.name = "llama-sp-test";
    m.family = ModelFamily::llama;
    m.num_kv_heads = 4;
    m.intermediate_size = 2816;
    m.rope_theta = 10000;
    m.tie_word_embeddings = false;
    return m;
  };
  auto layer_ops = [&](const Recipe& r) {
    std::map<std::string, int> comm;
    std::map<std::string, double> flops;
    for (const Op& op : build_task_graph(llama(1), r).ops) {
      if (op.layer != 0) continue;
      if (is_communication(op.kind)) ++comm[std::string(to_string(op.phase)) + " " + to_string(op.kind)];
      else if (op.phase == Phase::forward) flops[to_string(op.kind)] += op.flops;
    }
    return std::make_pair(comm, flops);
  };
  const auto tp = layer_ops(recipe(4, false)), sp = layer_ops(recipe(4, true));
  CHECK(tp.first == std::map<std::string, int>{{"forward all_reduce", 2}, {"backward all_reduce", 2}});
  CHECK(sp.first == std::map<std::string, int>{{"forward all_gather", 2},
                                               {"forward reduce_scatter", 2},
                                               {"backward reduce_scatter", 2},
                                               {"backward all_gather", 2},
                                               {"recompute all_gather", 2}});
  for (const char* k : {"rmsnorm", "add"}) {
    CAPTURE(k);
    CHECK(sp.second.at(k) == doctest::Approx(tp.second.at(k) / 4));
  }
  for (const char* k : {"gemm", "batched_gemm", "softmax", "swiglu", "rotary_embedding"}) {
    CAPTURE(k);
    CHECK(sp.second.at(k) == doctest::Approx(tp.second.at(k)));
  }
  // And it keeps less for backward: the residual stream's activations are split.
  const double kept_tp = plan_memory(build_task_graph(llama(2), recipe(4, false))).retained_activation_bytes -
                         plan_memory(build_task_graph(llama(1), recipe(4, false))).retained_activation_bytes;
  const double kept_sp = plan_memory(build_task_graph(llama(2), recipe(4, true))).retained_activation_bytes -
                         plan_memory(build_task_graph(llama(1), recipe(4, true))).retained_activation_bytes;
  CHECK(kept_sp < kept_tp);
}
