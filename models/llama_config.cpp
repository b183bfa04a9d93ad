// models/llama_config.cpp — read and check the llama family's fields (RMSNorm epsilon, rotary base,
// grouped-query heads, SwiGLU width, untied embeddings) from ptsim's JSON or HF's LlamaConfig.
#include "models/llama_config.hpp"

#include <fmt/format.h>

#include "core/checked_math.hpp"
#include "core/error.hpp"

namespace ptsim::models {
using core::InputError;

namespace {

// What a Llama has and BERT/GPT-2 differ in: no segment embeddings, no dropout on the residual stream.
void set_llama_constants(ModelSpec& m) {
  m.family = ModelFamily::llama;
  m.type_vocab_size = 0;
  m.hidden_dropout = 0;
}

}  // namespace

void read_llama_model_fields(core::JsonReader& r, ModelSpec& m) {
  set_llama_constants(m);
  m.num_layers = r.require_int("num_layers", core::ranges::layers);
  m.hidden_size = r.require_int("hidden_size", core::ranges::hidden);
  m.num_heads = r.require_int("num_heads", core::ranges::heads);
  m.num_kv_heads = r.get_int("num_kv_heads", core::ranges::heads, m.num_heads);
  m.intermediate_size = r.require_int("intermediate_size", core::ranges::intermediate);
  m.vocab_size = r.require_int("vocab_size", core::ranges::vocab);
  m.vocab_pad_multiple = r.get_int("vocab_pad_multiple", core::ranges::vocab_pad_multiple, 8);
  m.max_position_embeddings = r.require_int("max_position_embeddings", core::ranges::positions);
  m.layer_norm_eps = r.get_positive("rms_norm_eps", 1e-6);
  m.rope_theta = r.get_positive("rope_theta", 10000);
  m.tie_word_embeddings = r.get_bool("tie_word_embeddings", false);
  m.attention_dropout = r.get_non_negative("attention_dropout", 0);
  m.source = r.get_string("source", "");
}

void read_llama_hf_config(core::JsonReader& r, ModelSpec& m) {
  set_llama_constants(m);
  m.num_layers = r.require_int("num_hidden_layers", core::ranges::layers);
  m.hidden_size = r.require_int("hidden_size", core::ranges::hidden);
  m.num_heads = r.require_int("num_attention_heads", core::ranges::heads);
  m.num_kv_heads = m.num_heads;  // LlamaConfig: num_key_value_heads None (or absent) means MHA
  if (r.has("num_key_value_heads") && !r.raw("num_key_value_heads").is_null())
    m.num_kv_heads = r.require_int("num_key_value_heads", core::ranges::heads);
  m.intermediate_size = r.require_int("intermediate_size", core::ranges::intermediate);
  m.vocab_size = r.require_int("vocab_size", core::ranges::vocab);
  m.max_position_embeddings = r.get_int("max_position_embeddings", core::ranges::positions, 2048);
  m.layer_norm_eps = r.get_positive("rms_norm_eps", 1e-6);  // LlamaConfig's defaults
  m.rope_theta = r.get_positive("rope_theta", 10000);
  m.tie_word_embeddings = r.get_bool("tie_word_embeddings", false);
  m.attention_dropout = r.get_non_negative("attention_dropout", 0);
  if (r.has("hidden_act") && r.require_string("hidden_act") != "silu")
    r.fail("hidden_act", "\"silu\" (SwiGLU, the only Llama MLP ptsim builds)");
  for (const char* bias : {"attention_bias", "mlp_bias"})
    if (r.has(bias) && r.require_bool(bias)) r.fail(bias, "false (ptsim builds Llama's linears without biases)");
  if (r.has("head_dim") && !r.raw("head_dim").is_null()) {
    const long long head_dim = r.require_int("head_dim", core::ranges::hidden);
    if (m.num_heads * head_dim != m.hidden_size)
      r.fail("head_dim", fmt::format("hidden_size / num_attention_heads = {} (ptsim builds q/o projections of hidden × "
                                     "hidden), got {}", m.hidden_size / m.num_heads, head_dim));
  }
}

void check_llama_consistency(const ModelSpec& m, const std::string& source) {
  if (m.num_kv_heads > m.num_heads || m.num_heads % m.num_kv_heads != 0)
    throw InputError(fmt::format("{}: {} attention heads are not a multiple of the {} key/value heads (expected heads "
                                 "= groups × kv heads, grouped-query attention; kv heads = heads is MHA, 1 is MQA)",
                                 source, m.num_heads, m.num_kv_heads));
  if (m.attention_dropout >= 1)
    throw InputError(fmt::format("{}: attention_dropout {} must be in [0, 1)", source, m.attention_dropout));
}

}  // namespace ptsim::models
