// tests/runtime/golden/hf_bert_layout.hpp — the parameters of transformers' BertForPreTraining, written out
// from its module tree (modeling_bert.py: BertEmbeddings, BertLayer = BertAttention(BertSelfAttention,
// BertSelfOutput) + BertIntermediate + BertOutput, BertPooler, BertPreTrainingHeads), independently of
// ptsim's builder: what a checkpoint must hold, name by name and shape by shape, for
// BertForPreTraining.from_pretrained to load it with no missing and no unexpected key. The decoder's weight
// and bias are tied to bert.embeddings.word_embeddings.weight and cls.predictions.bias and saved once, under
// those names. nn.Linear weights are [out, in]. tools/torch_reference.py builds the same tree in PyTorch.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ptsim::test {

struct HfBertConfig {
  int64_t vocab_size, hidden_size, num_layers, intermediate_size, max_position_embeddings, type_vocab_size;
};

inline std::map<std::string, std::vector<int64_t>> hf_bert_for_pretraining_parameters(const HfBertConfig& c) {
  const int64_t H = c.hidden_size, I = c.intermediate_size;
  std::map<std::string, std::vector<int64_t>> p;
  auto linear = [&](const std::string& name, int64_t in, int64_t out) {
    p[name + ".weight"] = {out, in};
    p[name + ".bias"] = {out};
  };
  auto layer_norm = [&](const std::string& name) {
    p[name + ".weight"] = {H};
    p[name + ".bias"] = {H};
  };
  p["bert.embeddings.word_embeddings.weight"] = {c.vocab_size, H};
  p["bert.embeddings.position_embeddings.weight"] = {c.max_position_embeddings, H};
  p["bert.embeddings.token_type_embeddings.weight"] = {c.type_vocab_size, H};
  layer_norm("bert.embeddings.LayerNorm");
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string x = "bert.encoder.layer." + std::to_string(l);
    for (const char* qkv : {"query", "key", "value"}) linear(x + ".attention.self." + qkv, H, H);
    linear(x + ".attention.output.dense", H, H);
    layer_norm(x + ".attention.output.LayerNorm");
    linear(x + ".intermediate.dense", H, I);
    linear(x + ".output.dense", I, H);
    layer_norm(x + ".output.LayerNorm");
  }
  linear("bert.pooler.dense", H, H);
  linear("cls.predictions.transform.dense", H, H);
  layer_norm("cls.predictions.transform.LayerNorm");
  p["cls.predictions.bias"] = {c.vocab_size};
  linear("cls.seq_relationship", H, 2);
  return p;
}

}  // namespace ptsim::test
