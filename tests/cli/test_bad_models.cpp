// tests/cli/test_bad_models.cpp — bad ptsim model JSON and HuggingFace config.json files, through the real
// binary (`graph`, `predict --gpu`): each row is exit 2 with a message naming the file, the field, the value
// and the range (docs/input-ranges.md). The first row is issue #9's example.
#include <doctest/doctest.h>

#include <fstream>
#include <string>

#include "tests/support/bad_inputs.hpp"
#include "tests/support/temp_dir.hpp"

using ptsim::test::BadInput;
using ptsim::test::check_all_refused;

namespace {

// A small valid BERT (2 layers, hidden 128, 2 heads) with `sizes` spliced in; a case that repeats a field
// is the duplicate-key case.
std::string ptsim_model(const std::string& sizes) {
  return R"({"name": "m", "family": "bert", "vocab_size": 30522, )" + sizes + "}";
}
const std::string kTinySizes = R"("num_layers": 2, "hidden_size": 128, "num_heads": 2)";

std::string hf_bert(const std::string& sizes) {
  return R"({"model_type": "bert", "vocab_size": 30522, "hidden_act": "gelu", )" + sizes + "}";
}
std::string hf_gpt2(const std::string& sizes) {
  return R"({"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, )" + sizes + "}";
}

std::string file_with(const std::string& name, const std::string& text) {
  const auto path = ptsim::test::process_temp_dir("bad_models_" + name) / "config.json";
  std::ofstream(path) << text;
  return path.string();
}

BadInput model_case(const std::string& name, const std::string& text, std::vector<std::string> expected,
                    const std::string& command = "graph") {
  const std::string path = file_with(name, text);
  expected.insert(expected.begin(), path);
  return {name, command + " --model " + path, std::move(expected)};
}

}  // namespace

TEST_CASE("the fixtures are valid models, so each case below fails for its one change") {
  for (const std::string& text : {ptsim_model(kTinySizes), hf_bert(R"("num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 2)"),
                                  hf_gpt2(R"("n_layer": 2, "n_embd": 128, "n_head": 2)")}) {
    const auto r = ptsim::test::run_ptsim("graph --format json --model " + file_with("valid", text));
    CHECK(r.exit_code == 0);
  }
}

TEST_CASE("issue #9 example: intermediate_size 2^63 - 1 is exit 2 in graph and predict") {
  // Once crashed `train` and "fit in 2.30 GiB" in `predict` (the activation bytes wrapped).
  const std::string huge = ptsim_model(kTinySizes + R"(, "intermediate_size": 9223372036854775807)");
  const std::vector<std::string> expected = {"field 'intermediate_size'", "[1, 4194304]", "got 9223372036854775807"};
  check_all_refused({model_case("intermediate_int64_max", huge, expected),
                     model_case("intermediate_int64_max_predict", huge, expected, "predict --gpu v100-sxm2-16gb")});
}

TEST_CASE("ptsim model JSON: every size field has a range") {
  check_all_refused({
      // `graph` with 10^9 layers once tried to build 10^9 layers; the range refuses it at once.
      model_case("layers_1e9", ptsim_model(R"("num_layers": 1000000000, "hidden_size": 128, "num_heads": 2)"),
                 {"field 'num_layers'", "[1, 10000]", "got 1000000000"}),
      model_case("hidden_huge", ptsim_model(R"("num_layers": 2, "hidden_size": 4294967296, "num_heads": 2)"),
                 {"field 'hidden_size'", "[1, 1048576]"}),
      model_case("heads_zero", ptsim_model(R"("num_layers": 2, "hidden_size": 128, "num_heads": 0)"),
                 {"field 'num_heads'", "got 0"}),
      model_case("vocab_negative", R"({"name": "m", "family": "bert", "vocab_size": -1, "num_layers": 2,
                                      "hidden_size": 128, "num_heads": 2})",
                 {"field 'vocab_size'", "got -1"}),
      model_case("positions_fraction", ptsim_model(kTinySizes + R"(, "max_position_embeddings": 512.5)"),
                 {"field 'max_position_embeddings'", "got 512.5"}),
      model_case("pad_multiple_huge", ptsim_model(kTinySizes + R"(, "vocab_pad_multiple": 1000000000)"),
                 {"field 'vocab_pad_multiple'", "[1, 65536]"}),
      model_case("type_vocab_negative", ptsim_model(kTinySizes + R"(, "type_vocab_size": -3)"),
                 {"field 'type_vocab_size'", "got -3"}),
      model_case("hidden_1e400", ptsim_model(R"("num_layers": 2, "hidden_size": 1e400, "num_heads": 2)"),
                 {"field 'hidden_size': a number that does not fit a double"}),
      model_case("duplicate_hidden", ptsim_model(kTinySizes + R"(, "hidden_size": 256)"),
                 {"duplicate key 'hidden_size'"}),
  });
}

TEST_CASE("dropout out of range and an activation ptsim does not build: the field, the value, what is expected") {
  // Was "dropout probabilities must be in [0, 1)" without the field or the value, and a GPT-2 config with
  // "relu" predicted and trained as GELU (the hostile pass of 2026-12-07).
  check_all_refused({
      model_case("dropout_1_5", ptsim_model(kTinySizes + R"(, "hidden_dropout": 1.5)"),
                 {"field 'hidden_dropout'", "a dropout probability in [0, 1), got 1.5"}),
      model_case("attention_dropout_1", ptsim_model(kTinySizes + R"(, "attention_dropout": 1.0)"),
                 {"field 'attention_dropout'", "got 1"}),
      model_case("hf_bert_dropout_2",
                 hf_bert(R"("num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 2, "hidden_dropout_prob": 2.0)"),
                 {"field 'hidden_dropout_prob'", "got 2"}),
      model_case("hf_gpt2_relu", hf_gpt2(R"("n_layer": 2, "n_embd": 128, "n_head": 2, "activation_function": "relu")"),
                 {"field 'activation_function'", "got \"relu\""}),
  });
}

TEST_CASE("HuggingFace config.json: the same ranges under HF names") {
  check_all_refused({
      model_case("hf_layers_huge", hf_bert(R"("num_hidden_layers": 1000000, "hidden_size": 128, "num_attention_heads": 2)"),
                 {"field 'num_hidden_layers'", "[1, 10000]"}),
      model_case("hf_intermediate_int64_max",
                 hf_bert(R"("num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 2,
                            "intermediate_size": 9223372036854775807)"),
                 {"field 'intermediate_size'", "got 9223372036854775807"}),
      model_case("hf_type_vocab_zero",
                 hf_bert(R"("num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 2, "type_vocab_size": 0)"),
                 {"field 'type_vocab_size'", "at least 1"}),
      model_case("hf_duplicate_key",
                 hf_bert(R"("num_hidden_layers": 2, "hidden_size": 128, "num_attention_heads": 2, "num_hidden_layers": 3)"),
                 {"duplicate key 'num_hidden_layers'"}),
      model_case("gpt2_embd_huge", hf_gpt2(R"("n_layer": 2, "n_embd": 1099511627776, "n_head": 2)"),
                 {"field 'n_embd'", "[1, 1048576]"}),
      model_case("gpt2_inner_negative", hf_gpt2(R"("n_layer": 2, "n_embd": 128, "n_head": 2, "n_inner": -1)"),
                 {"field 'n_inner'", "got -1"}),
  });
}

TEST_CASE("HF LlamaConfig through the binary: a valid one builds, bad ones are exit 2 naming the field") {
  auto llama = [](const std::string& extra) {
    return std::string(R"({"model_type": "llama", "hidden_size": 256, "intermediate_size": 688, "vocab_size": 512,
                           "num_attention_heads": 8, "num_hidden_layers": 2)") + extra + "}";
  };
  const auto ok = ptsim::test::run_ptsim("graph --format json --seq-len 64 --micro-batch 1 --model " +
                                         file_with("llama_valid", llama(R"(, "num_key_value_heads": 2)")));
  CHECK_MESSAGE(ok.exit_code == 0, ok.output);
  check_all_refused({
      model_case("llama_kv_heads", llama(R"(, "num_key_value_heads": 3)"),
                 {"8 attention heads are not a multiple of the 3 key/value heads"}),
      model_case("llama_act", llama(R"(, "hidden_act": "relu")"), {"field 'hidden_act'", "silu"}),
      model_case("unknown_model_type", R"({"model_type": "mistral", "hidden_size": 256})",
                 {"field 'model_type'", "got \"mistral\""}),
  });
  // A valid GQA config whose 2 kv heads a TP of 4 cannot split (kv heads are not replicated; docs/llama.md).
  ptsim::test::check_refused({"llama_kv_tp", "graph --tensor-parallel 4 --model " +
                                                 file_with("llama_kv_tp", llama(R"(, "num_key_value_heads": 2)")),
                              {"tensor-parallel size 4 must divide the model's number of key/value heads"}});
}

TEST_CASE("sizes in range whose product overflows int64 are exit 2 naming the tensor") {
  // hidden 2^20, FFN 2^22, micro-batch 2^20, seq 2^20: the FFN activation has 2^62 elements, 2^63 bytes in
  // fp16 — beyond int64. Each size alone is in its documented range.
  const std::string big = R"({"name": "big", "family": "bert", "vocab_size": 8, "num_layers": 1,
      "hidden_size": 1048576, "num_heads": 1, "intermediate_size": 4194304, "max_position_embeddings": 1048576})";
  const std::string path = file_with("product_overflow_flags", big);
  ptsim::test::check_refused({"product overflow with flags", "graph --model " + path + " --micro-batch 1048576 --seq-len 1048576",
                              {"does not fit in a 64-bit integer", "tensor '"}});
}
