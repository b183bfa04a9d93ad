// tests/models/test_model_specs.cpp — model files, HuggingFace configs and parameter counts.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.hpp"
#include "models/builder.hpp"
#include "models/model_spec.hpp"

using namespace ptsim::models;
using ptsim::core::InputError;

namespace {

int64_t count_parameters(const std::string& model_name) {
  Recipe r;
  r.seq_len = 128;
  r.micro_batch = 1;
  TaskGraph g = build_task_graph(load_model(model_name), r);
  return g.parameter_count();
}

// Rows added by padding the vocabulary (they are not in HuggingFace's counts).
int64_t padding_parameters(const ModelSpec& m) { return (m.padded_vocab_size() - m.vocab_size) * m.hidden_size; }

int64_t parameters_without(const std::string& model_name, const std::string& prefix) {
  Recipe r;
  r.seq_len = 128;
  r.micro_batch = 1;
  ModelSpec m = load_model(model_name);
  TaskGraph g = build_task_graph(m, r);
  int64_t n = 0;
  for (const auto& p : g.params)
    if (p.name.rfind(prefix, 0) != 0) n += p.elements;
  return n;
}

std::string write_temp(const std::string& name, const std::string& text) {
  auto dir = std::filesystem::temp_directory_path() / "ptsim_test_models";
  std::filesystem::create_directories(dir);
  auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_CASE("built-in models load with their published shapes") {
  ModelSpec large = load_model("bert-large");
  CHECK(large.num_layers == 24);
  CHECK(large.hidden_size == 1024);
  CHECK(large.num_heads == 16);
  CHECK(large.vocab_size == 30522);
  CHECK(large.padded_vocab_size() == 30528);  // next multiple of 8
  ModelSpec m8 = load_model("megatron-gpt2-8.3b");
  CHECK(m8.hidden_size == 3072);
  CHECK(m8.num_layers == 72);
  CHECK(m8.num_heads == 32);
  CHECK(builtin_model_names().size() >= 6);
}

TEST_CASE("parameter counts match the known values") {
  // HuggingFace BertModel.num_parameters(): bert-large-uncased 335,141,888; bert-base-uncased 109,482,240.
  // Our BERT params = BertModel + pretraining heads (cls.*); padding rows excluded. Exact: these are counts.
  ModelSpec large = load_model("bert-large");
  CHECK(parameters_without("bert-large", "cls.") - padding_parameters(large) == 335'141'888);
  ModelSpec base = load_model("bert-base");
  CHECK(parameters_without("bert-base", "cls.") - padding_parameters(base) == 109'482'240);
  // HF GPT2LMHeadModel (tied lm_head) "gpt2": 124,439,808.
  ModelSpec gpt2 = load_model("gpt2-124m");
  CHECK(count_parameters("gpt2-124m") - padding_parameters(gpt2) == 124'439'808);
  // Megatron-LM paper Table 1 quotes 1.2B and 8.3B (rounded): within 2%.
  CHECK(count_parameters("megatron-gpt2-1.2b") == doctest::Approx(1.2e9).epsilon(0.02));
  CHECK(count_parameters("megatron-gpt2-8.3b") == doctest::Approx(8.3e9).epsilon(0.02));
}

TEST_CASE("HuggingFace config.json files are read directly") {
  // bert-base-uncased's config.json as published on the HF hub (keys we do not use are allowed).
  std::string bert = write_temp("hf_bert_config.json", R"({
    "architectures": ["BertForMaskedLM"], "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": false,
    "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 768, "initializer_range": 0.02,
    "intermediate_size": 3072, "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert",
    "num_attention_heads": 12, "num_hidden_layers": 12, "pad_token_id": 0, "position_embedding_type": "absolute",
    "transformers_version": "4.6.0.dev0", "type_vocab_size": 2, "use_cache": true, "vocab_size": 30522})");
  ModelSpec m = load_model(bert);
  CHECK(m.family == ModelFamily::bert);
  CHECK(m.hidden_size == 768);
  CHECK(m.num_layers == 12);
  CHECK(m.intermediate_size == 3072);
  // gpt2's config.json (n_inner null → 4·n_embd).
  std::string gpt = write_temp("hf_gpt2_config.json", R"({
    "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1, "embd_pdrop": 0.1,
    "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_inner": null,
    "n_layer": 12, "n_positions": 1024, "resid_pdrop": 0.1, "vocab_size": 50257})");
  ModelSpec g = load_model(gpt);
  CHECK(g.family == ModelFamily::gpt2);
  CHECK(g.intermediate_size == 3072);
  CHECK(g.max_position_embeddings == 1024);
}

TEST_CASE("bad model files are errors that name the file and the field") {
  std::string unknown = write_temp("unknown_key.json",
                                   R"({"name": "x", "family": "bert", "num_layers": 2, "hidden_size": 128,
                                       "num_heads": 2, "vocab_size": 100, "hiden_size": 3})");
  CHECK_THROWS_WITH_AS(load_model(unknown), doctest::Contains("unknown field 'hiden_size'"), InputError);
  std::string missing = write_temp("missing.json", R"({"name": "x", "family": "bert", "num_layers": 2})");
  CHECK_THROWS_WITH_AS(load_model(missing), doctest::Contains("field 'hidden_size' is missing"), InputError);
  std::string heads = write_temp("heads.json", R"({"name": "x", "family": "bert", "num_layers": 2,
                                                   "hidden_size": 130, "num_heads": 4, "vocab_size": 100})");
  CHECK_THROWS_WITH_AS(load_model(heads), doctest::Contains("not divisible by the number of heads"), InputError);
  std::string family = write_temp("family.json", R"({"name": "x", "family": "t5", "num_layers": 2,
                                                    "hidden_size": 128, "num_heads": 2, "vocab_size": 100})");
  CHECK_THROWS_WITH_AS(load_model(family), doctest::Contains("one of [bert, gpt2, llama]"), InputError);
  std::string broken = write_temp("broken.json", R"({"name": )");
  CHECK_THROWS_WITH_AS(load_model(broken), doctest::Contains("not valid JSON"), InputError);
  CHECK_THROWS_WITH_AS(load_model("no-such-model"), doctest::Contains("unknown model 'no-such-model'"), InputError);
}

// A data root without models (one that moved or was deleted under a running test): the message says where it
// looked, not "expected one of: " with an empty list.
TEST_CASE("an unknown model under a data root with no models says where the models were looked for") {
  const std::filesystem::path empty_root = std::filesystem::temp_directory_path() / "ptsim_test_empty_root";
  std::filesystem::create_directories(empty_root);
  const char* old = std::getenv("PTSIM_ROOT");
  const std::string saved = old ? old : "";
  setenv("PTSIM_ROOT", empty_root.c_str(), 1);
  const std::string where = "no built-in models were found in " + (empty_root / "models" / "specs").string();
  CHECK_THROWS_WITH_AS(load_model("bert-base"), doctest::Contains(where.c_str()), InputError);
  if (old) setenv("PTSIM_ROOT", saved.c_str(), 1);
  else unsetenv("PTSIM_ROOT");
  CHECK_THROWS_WITH_AS(load_model("no-such-model"), doctest::Contains("expected one of: bert-base"), InputError);
}

TEST_CASE("the recipe's max-predictions default is data prepare's (core/mlm_defaults.hpp)") {
  for (int64_t seq : {16, 64, 128, 200, 384, 512, 1024}) {
    Recipe r;
    r.seq_len = seq;
    CHECK(r.max_predictions_per_seq() == ptsim::core::default_max_predictions(seq, 0.15));
  }
  Recipe given;
  given.max_predictions = 7;
  CHECK(given.max_predictions_per_seq() == 7);
}
