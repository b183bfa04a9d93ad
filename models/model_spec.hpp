// models/model_spec.hpp — a transformer's architecture, loaded from models/*.json or a HuggingFace
// config.json (BertConfig, GPT2Config, LlamaConfig). Only what the TaskGraph builder needs; no weights.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace ptsim::models {

// llama: pre-RMSNorm decoder with SwiGLU, rotary embeddings and grouped-query attention, no biases and no
// position-embedding table (Touvron et al. 2023; docs/llama.md).
enum class ModelFamily { bert, gpt2, llama };

struct ModelSpec {
  std::string name;
  ModelFamily family = ModelFamily::bert;
  int64_t num_layers = 0;
  int64_t hidden_size = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;           // key/value heads (grouped-query attention); = num_heads is MHA
  int64_t intermediate_size = 0;      // FFN width (4·hidden for BERT and GPT-2; SwiGLU's gate/up width for Llama)
  int64_t vocab_size = 0;             // the tokenizer's vocabulary
  int64_t vocab_pad_multiple = 8;     // GEMM-friendly padding of the embedding/decoder rows
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;        // BERT segment embeddings; 0 for GPT-2
  double layer_norm_eps = 1e-12;      // the norm's epsilon: LayerNorm's, or RMSNorm's (rms_norm_eps) for llama
  double rope_theta = 10000;          // llama: rotary embedding base
  bool tie_word_embeddings = true;    // the LM/MLM decoder reuses the word embeddings (llama: per config)
  double hidden_dropout = 0.1;
  double attention_dropout = 0.1;
  std::string source;                 // where the numbers come from

  int64_t padded_vocab_size() const {
    return (vocab_size + vocab_pad_multiple - 1) / vocab_pad_multiple * vocab_pad_multiple;
  }
  int64_t head_dim() const { return hidden_size / num_heads; }
  int64_t kv_heads() const { return num_kv_heads > 0 ? num_kv_heads : num_heads; }
};

// `name_or_path`: a built-in name (models/<name>.json) or a path to a ptsim model JSON or an HF config.json.
ModelSpec load_model(const std::string& name_or_path);
// Parse either format from JSON already read; `source` names it in errors.
ModelSpec parse_model_json(const std::string& source, const std::string& text);
// Built-in model names (the .json files under models/).
std::vector<std::string> builtin_model_names();
// The models/ directory (PTSIM_ROOT env var, else the source tree the binary was built from).
std::string models_directory();

const char* to_string(ModelFamily family);

}  // namespace ptsim::models
