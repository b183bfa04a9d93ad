// tests/runtime/golden/hf_gpt2_layout.hpp — the parameters of transformers' GPT2LMHeadModel, written out
// from its module tree (modeling_gpt2.py: GPT2Model = wte, wpe, h = GPT2Block × n_layer, ln_f; GPT2Block =
// ln_1, GPT2Attention(c_attn, c_proj), ln_2, GPT2MLP(c_fc, c_proj); lm_head tied to wte), independently of
// ptsim's builder and of runtime/checkpoint/hf_gpt2_layout: what a GPT-2 checkpoint must hold, name by
// name and shape by shape, for GPT2LMHeadModel.from_pretrained to load it with no missing and no unexpected
// key. Conv1D(nf, nx) keeps its weight as [nx, nf] = [in, out] (the transpose of nn.Linear's), so c_attn
// is [n_embd, 3·n_embd]. lm_head.weight is the same Parameter as transformer.wte.weight: named_parameters()
// lists it once, under wte, and save_pretrained drops the duplicate name from model.safetensors. The
// attention's causal-mask buffers (attn.bias, attn.masked_bias) are buffers, not parameters.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ptsim::test {

struct HfGpt2Config {
  int64_t vocab_size, n_embd, n_layer, n_inner, n_positions;
};

inline std::map<std::string, std::vector<int64_t>> hf_gpt2_lm_head_model_parameters(const HfGpt2Config& c) {
  const int64_t H = c.n_embd;
  std::map<std::string, std::vector<int64_t>> p;
  auto conv1d = [&](const std::string& name, int64_t nx, int64_t nf) {  // Conv1D(nf, nx): in nx, out nf
    p[name + ".weight"] = {nx, nf};
    p[name + ".bias"] = {nf};
  };
  auto layer_norm = [&](const std::string& name) {
    p[name + ".weight"] = {H};
    p[name + ".bias"] = {H};
  };
  p["transformer.wte.weight"] = {c.vocab_size, H};
  p["transformer.wpe.weight"] = {c.n_positions, H};
  for (int64_t l = 0; l < c.n_layer; ++l) {
    const std::string x = "transformer.h." + std::to_string(l);
    layer_norm(x + ".ln_1");
    conv1d(x + ".attn.c_attn", H, 3 * H);
    conv1d(x + ".attn.c_proj", H, H);
    layer_norm(x + ".ln_2");
    conv1d(x + ".mlp.c_fc", H, c.n_inner);
    conv1d(x + ".mlp.c_proj", c.n_inner, H);
  }
  layer_norm("transformer.ln_f");
  return p;
}

}  // namespace ptsim::test
