// runtime/train/hf_gpt2_config.cpp — the HuggingFace GPT2Config a GPT-2 checkpoint's config.json holds
// (trainer.hpp: hf_gpt2_config; docs/training.md, "GPT-2").
#include "runtime/train/trainer.hpp"

namespace ptsim::runtime {

core::Json hf_gpt2_config(const models::ModelSpec& m, int32_t end_of_text_id) {
  return {{"architectures", core::Json::array({"GPT2LMHeadModel"})},
          {"model_type", "gpt2"},
          {"vocab_size", m.vocab_size},  // the dataset's vocabulary, without the GEMM padding rows
          {"n_embd", m.hidden_size},
          {"n_layer", m.num_layers},
          {"n_head", m.num_heads},
          {"n_inner", m.intermediate_size},
          {"n_positions", m.max_position_embeddings},
          {"activation_function", "gelu_new"},  // tanh GELU, as the graph's GPT-2 gelu ops (gelu_tanh = true)
          {"resid_pdrop", m.hidden_dropout},
          {"embd_pdrop", m.hidden_dropout},
          {"attn_pdrop", m.attention_dropout},
          {"layer_norm_epsilon", m.layer_norm_eps},
          {"initializer_range", 0.02},
          {"tie_word_embeddings", true},  // lm_head reads transformer.wte.weight
          {"bos_token_id", end_of_text_id},
          {"eos_token_id", end_of_text_id},
          {"torch_dtype", "float32"}};
}

}  // namespace ptsim::runtime
