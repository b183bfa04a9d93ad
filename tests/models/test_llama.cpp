// tests/models/test_llama.cpp — the llama family: spec loading (ptsim JSON and HF LlamaConfig), parameter
// counts against closed forms and published totals, FLOPs per token, the new ops' costs, grouped-query
// attention's bytes and memory against MHA, tensor-parallel splits and the refusals (docs/llama.md).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "models/builder.hpp"
#include "models/memory_plan.hpp"
#include "models/model_spec.hpp"

using namespace ptsim::models;
using ptsim::core::InputError;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / "ptsim_test_llama";
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

// meta-llama/Llama-2-7b-hf's config.json as published on the HF hub (docs/references.md, Llama models).
const char* kLlama2_7bConfig = R"({
  "architectures": ["LlamaForCausalLM"], "bos_token_id": 1, "eos_token_id": 2, "hidden_act": "silu",
  "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 11008, "max_position_embeddings": 4096,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 32,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": null, "tie_word_embeddings": false,
  "torch_dtype": "float16", "transformers_version": "4.31.0.dev0", "use_cache": true, "vocab_size": 32000})";

// A small GQA Llama for graph-level checks: 2 layers, hidden 256, 8 heads of 32, `kv` key/value heads.
ModelSpec small_llama(int64_t kv) {
  ModelSpec m;
  m.name = "llama-small";
  m.family = ModelFamily::llama;
  m.num_layers = 2;
  m.hidden_size = 256;
  m.num_heads = 8;
  m.num_kv_heads = kv;
  m.intermediate_size = 688;
  m.vocab_size = 512;
  m.max_position_embeddings = 1024;
  m.layer_norm_eps = 1e-5;
  m.type_vocab_size = 0;
  m.hidden_dropout = 0;
  m.attention_dropout = 0;
  m.tie_word_embeddings = false;
  return m;
}

Recipe llama_recipe(bool fused_attention, int64_t tp = 1) {
  Recipe r;
  r.precision = Precision::bf16;
  r.optimizer = OptimizerKind::adamw;
  r.micro_batch = 2;
  r.seq_len = 128;
  r.fused_attention = fused_attention;
  r.tensor_parallel = tp;
  return r;
}

// Closed form of one Llama layer's parameters: q, o [H, H]; k, v [kv·d, H]; gate, up, down H·F; two RMSNorm gains.
int64_t layer_parameters(const ModelSpec& m) {
  const int64_t H = m.hidden_size, kv_width = m.kv_heads() * m.head_dim();
  return 2 * H * H + 2 * H * kv_width + 3 * H * m.intermediate_size + 2 * H;
}

int64_t parameters_of_layer(const TaskGraph& g, int layer) {
  int64_t n = 0;
  for (const auto& p : g.params)
    if (p.layer == layer) n += p.elements;
  return n;
}

const Op& op_named(const TaskGraph& g, const std::string& name) {
  for (const Op& op : g.ops)
    if (op.name == name) return op;
  FAIL("no op named " << name);
  return g.ops.front();
}

int count_ops(const TaskGraph& g, OpKind kind) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == kind ? 1 : 0;
  return n;
}

double gemm_flops(const TaskGraph& g) {
  double f = 0;
  for (const Op& op : g.ops)
    if (op.kind == OpKind::gemm || op.kind == OpKind::batched_gemm) f += op.flops;
  return f;
}

}  // namespace

TEST_CASE("an HF LlamaConfig is read directly, and Llama-2-7B has 6.74 B parameters") {
  const ModelSpec m = load_model(write_temp("config.json", kLlama2_7bConfig));
  CHECK(m.family == ModelFamily::llama);
  CHECK(m.kv_heads() == 32);
  CHECK(m.intermediate_size == 11008);
  CHECK(m.layer_norm_eps == doctest::Approx(1e-5));
  CHECK(m.rope_theta == doctest::Approx(10000));  // LlamaConfig's default (absent from this config)
  CHECK_FALSE(m.tie_word_embeddings);
  Recipe r = llama_recipe(true);
  const TaskGraph g = build_task_graph(m, r);
  // Per layer (exact, a count): 4·4096² + 3·4096·11008 + 2·4096 = 202,383,360.
  CHECK(layer_parameters(m) == 202'383'360);
  for (int layer : {0, 31}) CHECK(parameters_of_layer(g, layer) == layer_parameters(m));
  // Total: 32 layers + embed_tokens and the untied lm_head (32,000 × 4,096 each) + the final norm =
  // 6,738,415,616, HF's LlamaForCausalLM.num_parameters() for Llama-2-7b-hf; Touvron et al. 2023b Table 1
  // rounds it to 7B and the model card to 6.74B (docs/references.md, Llama models). 32,000 is already a
  // multiple of 8, so there are no padding rows. Exact: a count.
  CHECK(g.parameter_count() == 6'738'415'616);
  // The shipped ptsim-format file is the same model.
  const TaskGraph shipped = build_task_graph(load_model("llama-2-7b"), r);
  CHECK(shipped.parameter_count() == 6'738'415'616);
}

TEST_CASE("LLaMA-65B and Llama 3 405B match their published sizes") {
  Recipe r = llama_recipe(true);
  r.micro_batch = 1;
  r.seq_len = 16;
  // LLaMA Table 2 quotes 65.2B; the closed form 80·(4·8192² + 3·8192·22016 + 2·8192) + 2·32000·8192 + 8192 =
  // 65,285,660,672 (exact). 65.2 is that rounded down: within 0.2%.
  const TaskGraph g65 = build_task_graph(load_model("llama-65b"), r);
  CHECK(g65.parameter_count() == 65'285'660'672);
  CHECK(static_cast<double>(g65.parameter_count()) == doctest::Approx(65.2e9).epsilon(0.002));
  // Llama 3 Table 3's 405B with 8 key/value heads of 128: 126·(2·16384² + 2·16384·1024 + 3·16384·53248 +
  // 2·16384) + 2·128256·16384 + 16384 = 405,853,388,800 (exact). TP 8 splits it over 8 ranks exactly
  // (every split dimension is divisible by 8), which also builds the graph 8 times smaller.
  r.tensor_parallel = 8;
  const TaskGraph g405 = build_task_graph(load_model("llama-3-405b"), r);
  CHECK(g405.parameter_count() * 8 - 126 * 2 * 16384 * 7 - 16384 * 7 == 405'853'388'800);
}

TEST_CASE("training FLOPs per token are 6N plus the attention term") {
  const ModelSpec m = small_llama(2);
  const Recipe r = llama_recipe(false);
  const TaskGraph g = build_task_graph(m, r);
  const double M = static_cast<double>(r.micro_batch * r.seq_len), S = static_cast<double>(r.seq_len);
  const double L = 2, H = 256, V = 512;
  // N: the parameters GEMMs multiply by (every linear of the layers and the lm_head; not the embedding
  // lookup nor the norms' gains).
  const double n_linear = L * static_cast<double>(layer_parameters(m) - 2 * 256) + V * H;
  // Forward 2N per token, backward 4N (dgrad and wgrad); attention's QKᵀ and P·V: 2·2·S·H per token per
  // layer forward, twice that backward → 12·L·H·S per token (Kaplan et al. 2020 / PaLM's count).
  // The wgrad GEMMs accumulate into the gradients: + N once per micro-step. Exact up to rounding.
  const double expected = 6 * n_linear * M + 12 * L * H * S * M + n_linear;
  CHECK(gemm_flops(g) == doctest::Approx(expected).epsilon(1e-12));
}

TEST_CASE("RMSNorm, SwiGLU and rotary embeddings cost their closed forms, forward and backward") {
  const ModelSpec m = small_llama(2);
  const TaskGraph g = build_task_graph(m, llama_recipe(true));
  const double M = 256, H = 256, F = 688, bytes = 2;  // bf16 activations; rstd in f32
  const Op& norm = op_named(g, "model.layers.0.input_layernorm");
  CHECK(norm.kind == OpKind::rmsnorm);
  CHECK(norm.flops == doctest::Approx(4 * M * H));
  CHECK(norm.bytes_read == doctest::Approx(M * H * bytes + H * bytes));  // x and gamma
  CHECK(norm.bytes_written == doctest::Approx(M * H * bytes + M * 4));   // y and rstd
  const Op& norm_bwd = op_named(g, "model.layers.0.input_layernorm.bwd");
  CHECK(norm_bwd.kind == OpKind::rmsnorm_backward);
  // dy, x, gamma, rstd read; dx written; dgamma read-modify-write.
  CHECK(norm_bwd.bytes_read == doctest::Approx(2 * M * H * bytes + H * bytes + M * 4 + H * bytes));
  CHECK(norm_bwd.bytes_written == doctest::Approx(M * H * bytes + H * bytes));
  const Op& act = op_named(g, "model.layers.0.mlp.act_fn");
  CHECK(act.kind == OpKind::swiglu);
  CHECK(act.flops == doctest::Approx(5 * M * F));
  CHECK(act.bytes_read == doctest::Approx(2 * M * F * bytes));
  CHECK(act.bytes_written == doctest::Approx(M * F * bytes));
  const Op& act_bwd = op_named(g, "model.layers.0.mlp.act_fn.bwd");
  CHECK(act_bwd.kind == OpKind::swiglu_backward);
  CHECK(act_bwd.bytes_read == doctest::Approx(3 * M * F * bytes));  // dy, gate, up
  CHECK(act_bwd.bytes_written == doctest::Approx(2 * M * F * bytes));  // dgate, dup
  // q's rotation: [B·nh, S, d] = 256·256 elements read and written, plus the cos and sin tables [S, d].
  const Op& rope = op_named(g, "model.layers.0.self_attn.q_rotary");
  CHECK(rope.kind == OpKind::rotary_embedding);
  CHECK(rope.flops == doctest::Approx(3 * M * H));
  CHECK(rope.bytes_read == doctest::Approx(M * H * bytes + 2 * 128 * 32 * bytes));
  const Op& krope = op_named(g, "model.layers.0.self_attn.k_rotary");
  CHECK(krope.bytes_written == doctest::Approx(M * 2 * 32 * bytes));  // 2 kv heads of 32
  CHECK(count_ops(g, OpKind::rotary_embedding_backward) == 2 * 2);
  CHECK(count_ops(g, OpKind::layernorm) == 0);
  // Every parameter's gradient is written by some backward op (no parameter is left out of autodiff).
  for (const auto& p : g.params) CHECK_MESSAGE(g.tensor(p.gradient).producer >= 0, p.name);
}

TEST_CASE("grouped-query attention: K/V bytes and retained memory shrink by kv/nh against MHA") {
  const Recipe r = llama_recipe(true);
  const TaskGraph mha = build_task_graph(small_llama(8), r), gqa = build_task_graph(small_llama(2), r);
  const double B = 2, S = 128, d = 32, bytes = 2, nh = 8, kv = 2;
  // The fused kernel reads q (nh heads) and K, V once each (kv heads, broadcast to their groups) and writes
  // the context and the f32 log-sum-exp.
  const Op& fa = op_named(gqa, "model.layers.0.self_attn.fused_attention");
  CHECK(fa.bytes_read == doctest::Approx(B * S * d * (nh + 2 * kv) * bytes));
  CHECK(fa.bytes_written == doctest::Approx(B * S * d * nh * bytes + B * nh * S * 4));
  // The same FLOPs as MHA: every query head still attends over S keys.
  CHECK(fa.flops == doctest::Approx(op_named(mha, "model.layers.0.self_attn.fused_attention").flops));
  CHECK(op_named(gqa, "model.layers.0.self_attn.k_proj").flops ==
        doctest::Approx(op_named(mha, "model.layers.0.self_attn.k_proj").flops * kv / nh));
  // Retained for backward per layer: the rotated K and the split V (the fused backward reads both); each
  // is B·S·kv·d instead of B·S·nh·d. Two layers; sizes are multiples of the 256-byte alignment. Exact.
  const double saved = plan_memory(mha).retained_activation_bytes - plan_memory(gqa).retained_activation_bytes;
  CHECK(saved == doctest::Approx(2 * 2 * B * S * (nh - kv) * d * bytes));
  CHECK(count_ops(gqa, OpKind::repeat_kv) == 0);
}

TEST_CASE("an unfused stack copies K and V to every query head (HF's repeat_kv) and sums back in backward") {
  const TaskGraph g = build_task_graph(small_llama(2), llama_recipe(false));
  CHECK(count_ops(g, OpKind::repeat_kv) == 2 * 2);
  CHECK(count_ops(g, OpKind::repeat_kv_backward) == 2 * 2);
  const Op& rep = op_named(g, "model.layers.0.self_attn.k_proj.repeat_kv");
  const double B = 2, S = 128, d = 32, bytes = 2;
  CHECK(rep.bytes_read == doctest::Approx(B * 2 * S * d * bytes));
  CHECK(rep.bytes_written == doctest::Approx(B * 8 * S * d * bytes));
  const Op& sum = op_named(g, "model.layers.0.self_attn.k_proj.repeat_kv.bwd");
  CHECK(sum.flops == doctest::Approx(B * 8 * S * d));  // one add per query-head gradient element
  // MHA needs no copy.
  CHECK(count_ops(build_task_graph(small_llama(8), llama_recipe(false)), OpKind::repeat_kv) == 0);
}

TEST_CASE("tensor parallelism splits query and key/value heads; kv heads must divide by TP") {
  const TaskGraph g = build_task_graph(small_llama(2), llama_recipe(true, 2));
  // Column-parallel q/k/v/gate/up, row-parallel o/down (Megatron-LM): per rank 4 of 8 query heads and 1 of 2 kv heads.
  int64_t k_rows = 0, gate_rows = 0, down_cols = 0;
  for (const auto& p : g.params) {
    const auto& shape = g.tensor(p.weight).shape;
    if (p.name == "model.layers.0.self_attn.k_proj.weight") k_rows = shape[0];
    if (p.name == "model.layers.0.mlp.gate_proj.weight") gate_rows = shape[0];
    if (p.name == "model.layers.0.mlp.down_proj.weight") down_cols = shape[1];
  }
  CHECK(k_rows == 32);
  CHECK(gate_rows == 344);
  CHECK(down_cols == 344);
  CHECK(count_ops(g, OpKind::all_reduce) > 0);
  CHECK_THROWS_WITH_AS(build_task_graph(small_llama(2), llama_recipe(true, 4)),
                       doctest::Contains("must divide the model's number of key/value heads"), InputError);
}

TEST_CASE("Llama builds with recomputation and as pipeline stages (untied head: no embedding copy)") {
  Recipe r = llama_recipe(true);
  r.recompute_activations = true;
  const TaskGraph g = build_task_graph(small_llama(2), r);
  CHECK(g.flops(Phase::recompute) > 0);
  CHECK(g.is_acyclic_in_order());
  Recipe p = llama_recipe(true);
  p.pipeline_parallel = 2;
  p.grad_accum = 4;
  const auto chunks = build_pipeline_graphs(small_llama(2), p);
  REQUIRE(chunks.size() == 2);
  CHECK(chunks[1].chunk.tied_embedding_param == -1);
  ModelSpec tied = small_llama(2);
  tied.tie_word_embeddings = true;
  const auto tied_chunks = build_pipeline_graphs(tied, p);
  CHECK(tied_chunks[1].chunk.tied_embedding_param >= 0);
}

TEST_CASE("bad Llama configs are exit-2 errors naming the field") {
  auto config = [](const std::string& extra) {
    return std::string(R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 688,
      "num_attention_heads": 8, "num_hidden_layers": 2, "vocab_size": 512)") + extra + "}";
  };
  CHECK_THROWS_WITH_AS(load_model(write_temp("kv.json", config(R"(, "num_key_value_heads": 3)"))),
                       doctest::Contains("not a multiple of the 3 key/value heads"), InputError);
  CHECK_THROWS_WITH_AS(load_model(write_temp("kv16.json", config(R"(, "num_key_value_heads": 16)"))),
                       doctest::Contains("key/value heads"), InputError);
  CHECK_THROWS_WITH_AS(load_model(write_temp("act.json", config(R"(, "hidden_act": "gelu")"))),
                       doctest::Contains("hidden_act"), InputError);
  CHECK_THROWS_WITH_AS(load_model(write_temp("bias.json", config(R"(, "attention_bias": true)"))),
                       doctest::Contains("attention_bias"), InputError);
  CHECK_THROWS_WITH_AS(load_model(write_temp("hd.json", config(R"(, "head_dim": 64)"))),
                       doctest::Contains("head_dim"), InputError);
  CHECK_THROWS_WITH_AS(load_model(write_temp("theta.json", config(R"(, "rope_theta": -1)"))),
                       doctest::Contains("rope_theta"), InputError);
  CHECK_THROWS_WITH_AS(load_model(write_temp("mistral.json", R"({"model_type": "mistral", "hidden_size": 256})")),
                       doctest::Contains("got \"mistral\""), InputError);
  // ptsim's own format: the SwiGLU width has no default, and BERT/GPT-2 fields are unknown to a llama.
  CHECK_THROWS_WITH_AS(load_model(write_temp("own.json", R"({"name": "x", "family": "llama", "num_layers": 2,
      "hidden_size": 256, "num_heads": 8, "vocab_size": 512, "max_position_embeddings": 128})")),
                       doctest::Contains("intermediate_size"), InputError);
  CHECK_THROWS_WITH_AS(load_model(write_temp("own2.json", R"({"name": "x", "family": "llama", "num_layers": 2,
      "hidden_size": 256, "num_heads": 8, "intermediate_size": 688, "vocab_size": 512,
      "max_position_embeddings": 128, "layer_norm_eps": 1e-5})")),
                       doctest::Contains("unknown field 'layer_norm_eps'"), InputError);
}
