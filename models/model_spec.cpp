// models/model_spec.cpp — load model specs: ptsim's own JSON (strict) or a HuggingFace config.json.
#include "models/model_spec.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "core/data_path.hpp"
#include "core/json_reader.hpp"
#include "models/llama_config.hpp"

namespace ptsim::models {
namespace fs = std::filesystem;
using core::InputError;
using core::Json;
using core::JsonReader;

const char* to_string(ModelFamily family) {
  switch (family) {
    case ModelFamily::bert: return "bert";
    case ModelFamily::gpt2: return "gpt2";
    case ModelFamily::llama: return "llama";
  }
  return "?";
}

std::string models_directory() {
  return core::data_path("models/specs");
}

std::vector<std::string> builtin_model_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(models_directory(), ec))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

// What a name could have been: the built-in models, or — when the data directory holds none (a data root that
// moved or was deleted) — where they were looked for, instead of an empty list.
std::string builtin_models_hint() {
  const std::vector<std::string> names = builtin_model_names();
  if (names.empty())
    return fmt::format("no built-in models were found in {}: is PTSIM_ROOT the ptsim checkout?", models_directory());
  return fmt::format("expected one of: {}", fmt::join(names, ", "));
}

// A dropout probability in [0, 1), named by its field in the file's own format (HF names it otherwise).
double read_dropout(JsonReader& r, const std::string& key) {
  const double p = r.get_non_negative(key, 0.1);
  if (p >= 1) r.fail(key, fmt::format("a dropout probability in [0, 1), got {}", p));
  return p;
}

void check_consistency(const ModelSpec& m, const std::string& source) {
  if (m.hidden_size % m.num_heads != 0)
    throw InputError(fmt::format("{}: hidden size {} is not divisible by the number of heads {} (expected hidden = heads × head_dim)",
                                 source, m.hidden_size, m.num_heads));
  if (m.hidden_dropout < 0 || m.hidden_dropout >= 1 || m.attention_dropout < 0 || m.attention_dropout >= 1)
    throw InputError(fmt::format("{}: dropout probabilities must be in [0, 1)", source));
  if (m.family == ModelFamily::llama) check_llama_consistency(m, source);
}

// ptsim's own format: every field known, unknown ones rejected (docs/json-formats.md).
ModelSpec parse_ptsim_model(JsonReader& r) {
  ModelSpec m;
  m.name = r.require_string("name");
  const std::string family = r.require_enum("family", {"bert", "gpt2", "llama"});
  if (family == "llama") {
    read_llama_model_fields(r, m);
    r.finish();
    return m;
  }
  m.family = family == "bert" ? ModelFamily::bert : ModelFamily::gpt2;
  m.num_layers = r.require_int("num_layers", core::ranges::layers);
  m.hidden_size = r.require_int("hidden_size", core::ranges::hidden);
  m.num_heads = r.require_int("num_heads", core::ranges::heads);
  m.intermediate_size = r.get_int("intermediate_size", core::ranges::intermediate, 4 * m.hidden_size);
  m.vocab_size = r.require_int("vocab_size", core::ranges::vocab);
  m.vocab_pad_multiple = r.get_int("vocab_pad_multiple", core::ranges::vocab_pad_multiple, 8);
  m.max_position_embeddings = r.get_int("max_position_embeddings", core::ranges::positions, 512);
  m.type_vocab_size = r.get_int("type_vocab_size", core::ranges::type_vocab, m.family == ModelFamily::bert ? 2 : 0);
  m.layer_norm_eps = r.get_positive("layer_norm_eps", m.family == ModelFamily::bert ? 1e-12 : 1e-5);
  m.hidden_dropout = read_dropout(r, "hidden_dropout");
  m.attention_dropout = read_dropout(r, "attention_dropout");
  m.source = r.get_string("source", "");
  r.finish();
  return m;
}

// HuggingFace config.json: many keys we do not need, so unknown keys are allowed here.
ModelSpec parse_hf_config(JsonReader& r, const std::string& source) {
  const std::string model_type = r.require_string("model_type");
  ModelSpec m;
  m.name = fs::path(source).parent_path().filename().string();
  if (m.name.empty()) m.name = model_type;
  m.source = "HuggingFace config.json: " + source;
  if (model_type == "bert") {
    m.family = ModelFamily::bert;
    m.num_layers = r.require_int("num_hidden_layers", core::ranges::layers);
    m.hidden_size = r.require_int("hidden_size", core::ranges::hidden);
    m.num_heads = r.require_int("num_attention_heads", core::ranges::heads);
    m.intermediate_size = r.get_int("intermediate_size", core::ranges::intermediate, 4 * m.hidden_size);
    m.vocab_size = r.require_int("vocab_size", core::ranges::vocab);
    m.max_position_embeddings = r.get_int("max_position_embeddings", core::ranges::positions, 512);
    m.type_vocab_size = r.get_int("type_vocab_size", core::ranges::type_vocab, 2);
    if (m.type_vocab_size < 1) r.fail("type_vocab_size", fmt::format("at least 1 segment type for BERT, got {}", m.type_vocab_size));
    m.layer_norm_eps = r.get_positive("layer_norm_eps", 1e-12);
    m.hidden_dropout = read_dropout(r, "hidden_dropout_prob");
    m.attention_dropout = read_dropout(r, "attention_probs_dropout_prob");
    if (r.has("hidden_act") && r.require_string("hidden_act") != "gelu")
      r.fail("hidden_act", "\"gelu\" (the only BERT activation ptsim builds)");
  } else if (model_type == "gpt2") {
    m.family = ModelFamily::gpt2;
    m.num_layers = r.require_int("n_layer", core::ranges::layers);
    m.hidden_size = r.require_int("n_embd", core::ranges::hidden);
    m.num_heads = r.require_int("n_head", core::ranges::heads);
    m.intermediate_size = 4 * m.hidden_size;
    if (r.has("n_inner") && !r.raw("n_inner").is_null()) m.intermediate_size = r.require_int("n_inner", core::ranges::intermediate);
    m.vocab_size = r.require_int("vocab_size", core::ranges::vocab);
    m.vocab_pad_multiple = 128;
    m.max_position_embeddings = r.get_int("n_positions", core::ranges::positions, 1024);
    m.type_vocab_size = 0;
    m.layer_norm_eps = r.get_positive("layer_norm_epsilon", 1e-5);
    m.hidden_dropout = read_dropout(r, "resid_pdrop");
    m.attention_dropout = read_dropout(r, "attn_pdrop");
    // GPT-2 runs the tanh approximation of GELU (HF's default "gelu_new"); another activation would be
    // predicted and trained as that one without a word.
    if (r.has("activation_function")) {
      const std::string act = r.require_string("activation_function");
      if (act != "gelu_new" && act != "gelu_pytorch_tanh")
        r.fail("activation_function", fmt::format("\"gelu_new\" or \"gelu_pytorch_tanh\" (the tanh GELU, the only "
                                                  "GPT-2 activation ptsim builds), got \"{}\"", act));
    }
  } else if (model_type == "llama") {
    read_llama_hf_config(r, m);
  } else {
    r.fail("model_type", fmt::format("\"bert\", \"gpt2\" or \"llama\" (got \"{}\")", model_type));
  }
  return m;
}

}  // namespace

ModelSpec parse_model_json(const std::string& source, const std::string& text) {
  const Json j = core::parse_json_text(text, source);
  JsonReader r(j, source);
  ModelSpec m = r.has("model_type") ? parse_hf_config(r, source) : parse_ptsim_model(r);
  check_consistency(m, source);
  return m;
}

ModelSpec load_model(const std::string& name_or_path) {
  std::string path = name_or_path;
  if (!fs::exists(path)) {
    path = models_directory() + "/" + name_or_path + ".json";
    if (!fs::exists(path))
      throw InputError(fmt::format("unknown model '{}': not a file and not a built-in model ({}, or a path to a "
                                   "model JSON / HuggingFace config.json)",
                                   name_or_path, builtin_models_hint()));
  }
  Json j = core::load_json_file(path);
  return parse_model_json(path, j.dump());
}

}  // namespace ptsim::models
