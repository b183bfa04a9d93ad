// tests/runtime/test_hf_gpt2_layout.cpp — the graph ↔ GPT2LMHeadModel conversion of GPT-2 tensors
// (runtime/checkpoint/hf_gpt2_layout): c_attn = [Wqᵀ|Wkᵀ|Wvᵀ] element by element, Conv1D = Linearᵀ, the
// rest untouched; back again bit for bit; save → load → save gives the same file; bad input is InputError.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "runtime/checkpoint/checkpoint.hpp"
#include "runtime/checkpoint/hf_gpt2_layout.hpp"
#include "tests/runtime/golden/hf_gpt2_layout.hpp"
#include "tests/support/temp_dir.hpp"

using ptsim::core::InputError;
using namespace ptsim::runtime;
namespace fs = std::filesystem;

namespace {

// One layer of a GPT-2 with hidden H = 3 and FFN I = 5 (non-square c_fc/c_proj, so a missing transpose
// changes shapes; q/k/v are square, so their transposes are checked element by element below).
constexpr int64_t kH = 3, kI = 5, kVocab = 7, kPositions = 4;

// The graph's tensors as the builder names and shapes them ([out, in] linears), every element distinct:
// value = 1000·(tensor number) + index, so any misplaced element shows.
struct GraphTensors {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<std::vector<float>> values;

  GraphTensors() {
    add("transformer.wte.weight", {kVocab, kH});
    add("transformer.wpe.weight", {kPositions, kH});
    const std::string x = "transformer.h.0";
    add(x + ".ln_1.weight", {kH});
    add(x + ".ln_1.bias", {kH});
    for (const char* qkv : {"query", "key", "value"}) {
      add(x + ".attn." + qkv + ".weight", {kH, kH});
      add(x + ".attn." + qkv + ".bias", {kH});
    }
    add(x + ".attn.c_proj.weight", {kH, kH});
    add(x + ".attn.c_proj.bias", {kH});
    add(x + ".ln_2.weight", {kH});
    add(x + ".ln_2.bias", {kH});
    add(x + ".mlp.c_fc.weight", {kI, kH});
    add(x + ".mlp.c_fc.bias", {kI});
    add(x + ".mlp.c_proj.weight", {kH, kI});
    add(x + ".mlp.c_proj.bias", {kH});
    add("transformer.ln_f.weight", {kH});
    add("transformer.ln_f.bias", {kH});
  }
  void add(const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[i] = 1000.0f * static_cast<float>(names.size() + 1) + static_cast<float>(i);
    names.push_back(name);
    shapes.push_back(std::move(shape));
    values.push_back(std::move(v));
  }
  std::vector<CheckpointTensorView> views() const {
    std::vector<CheckpointTensorView> out;
    for (size_t i = 0; i < names.size(); ++i) out.push_back({names[i], values[i], shapes[i]});
    return out;
  }
  const std::vector<float>& at(const std::string& name) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return values[i];
    throw std::logic_error("no tensor " + name);
  }
};

const CheckpointTensor& find(const std::vector<CheckpointTensor>& tensors, const std::string& name) {
  for (const CheckpointTensor& t : tensors)
    if (t.name == name) return t;
  FAIL("no tensor " << name);
  throw std::logic_error("unreachable");
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::vector<CheckpointTensorView> views_of(const std::vector<CheckpointTensor>& tensors) {
  std::vector<CheckpointTensorView> out;
  for (const CheckpointTensor& t : tensors) out.push_back({t.name, t.values, t.shape});
  return out;
}

}  // namespace

TEST_CASE("hf gpt2 layout: names and shapes are GPT2LMHeadModel's, as its module tree lists them") {
  const GraphTensors g;
  const std::vector<CheckpointTensor> hf = gpt2_tensors_to_hf(g.views());
  std::map<std::string, std::vector<int64_t>> got;
  for (const CheckpointTensor& t : hf) got[t.name] = t.shape;
  CHECK(got == ptsim::test::hf_gpt2_lm_head_model_parameters({kVocab, kH, 1, kI, kPositions}));
  CHECK(hf.size() == got.size());  // no name twice
  CHECK(is_hf_gpt2_layout(hf));
  CHECK_FALSE(is_hf_gpt2_layout(gpt2_tensors_from_hf(hf, "test")));
}

TEST_CASE("hf gpt2 layout: c_attn is [Wqᵀ|Wkᵀ|Wvᵀ], its bias [bq|bk|bv], every Conv1D the Linear transposed") {
  const GraphTensors g;
  const std::vector<CheckpointTensor> hf = gpt2_tensors_to_hf(g.views());
  const std::string x = "transformer.h.0";
  // c_attn.weight[r][j·H + c] = W_j[c][r] (W_j = query, key, value: [out = c, in = r]), written from
  // transformers' split: q, k, v = c_attn(x).split(n_embd, dim=2), Conv1D(x) = x @ weight + bias.
  const CheckpointTensor& c_attn = find(hf, x + ".attn.c_attn.weight");
  const CheckpointTensor& c_attn_bias = find(hf, x + ".attn.c_attn.bias");
  const char* qkv[] = {"query", "key", "value"};
  for (int64_t j = 0; j < 3; ++j) {
    const std::vector<float>& w = g.at(x + ".attn." + qkv[j] + ".weight");
    const std::vector<float>& b = g.at(x + ".attn." + qkv[j] + ".bias");
    for (int64_t c = 0; c < kH; ++c) {
      CHECK(c_attn_bias.values[j * kH + c] == b[c]);
      for (int64_t r = 0; r < kH; ++r) CHECK(c_attn.values[r * 3 * kH + j * kH + c] == w[c * kH + r]);
    }
  }
  // Conv1D [in, out] = Linear [out, in] transposed; biases as they are.
  struct Projection {
    const char* name;
    int64_t out, in;
  };
  for (const Projection& p : {Projection{".attn.c_proj", kH, kH}, Projection{".mlp.c_fc", kI, kH},
                              Projection{".mlp.c_proj", kH, kI}}) {
    const std::vector<float>& linear = g.at(x + p.name + ".weight");
    const CheckpointTensor& conv = find(hf, x + p.name + ".weight");
    REQUIRE(conv.shape == std::vector<int64_t>{p.in, p.out});
    for (int64_t o = 0; o < p.out; ++o)
      for (int64_t i = 0; i < p.in; ++i) CHECK(conv.values[i * p.out + o] == linear[o * p.in + i]);
    CHECK(find(hf, x + p.name + ".bias").values == g.at(x + p.name + ".bias"));
  }
  for (const char* same : {"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
                           "transformer.h.0.ln_2.bias", "transformer.ln_f.weight"})
    CHECK(find(hf, same).values == g.at(same));
}

TEST_CASE("hf gpt2 layout: back to the graph's tensors bit for bit, NaN payloads and -0 too") {
  GraphTensors g;
  std::vector<float>& q = g.values[4];  // transformer.h.0.attn.query.weight
  REQUIRE(g.names[4] == "transformer.h.0.attn.query.weight");
  const uint32_t nan_bits = 0x7fc01234u;
  std::memcpy(&q[1], &nan_bits, sizeof nan_bits);
  q[2] = -0.0f;
  q[3] = std::numeric_limits<float>::denorm_min();
  const std::vector<CheckpointTensor> back = gpt2_tensors_from_hf(gpt2_tensors_to_hf(g.views()), "test");
  // Restored by name (restore_tensors), so the order is free: c_attn's parts come back as q, k, v weights.
  REQUIRE(back.size() == g.names.size());
  for (size_t i = 0; i < g.names.size(); ++i) {
    const CheckpointTensor& t = find(back, g.names[i]);
    CHECK(t.shape == g.shapes[i]);
    REQUIRE(t.values.size() == g.values[i].size());
    CHECK_MESSAGE(std::memcmp(t.values.data(), g.values[i].data(), g.values[i].size() * sizeof(float)) == 0, g.names[i]);
  }
}

TEST_CASE("hf gpt2 layout: save → load → convert back → save writes the same model.safetensors") {
  const ptsim::test::TempDir dir("hf_gpt2_layout");
  const GraphTensors g;
  const std::vector<CheckpointTensor> hf = gpt2_tensors_to_hf(g.views());
  OptimizerState optimizer;
  optimizer.kind = "adamw";
  const std::string first = save_checkpoint((dir.path / "a").string(), 1, views_of(hf), optimizer, {{"k", 1}});
  const Checkpoint loaded = load_checkpoint(first);
  const std::vector<CheckpointTensor> graph = gpt2_tensors_from_hf(loaded.tensors, first);
  std::vector<CheckpointTensorView> graph_views = views_of(graph);
  const std::string second =
      save_checkpoint((dir.path / "b").string(), 1, views_of(gpt2_tensors_to_hf(graph_views)), optimizer, {{"k", 1}});
  CHECK(slurp(fs::path(first) / "model.safetensors") == slurp(fs::path(second) / "model.safetensors"));
}

TEST_CASE("hf gpt2 layout: bad tensors are InputError naming the file and the tensor") {
  const GraphTensors g;
  std::vector<CheckpointTensor> hf = gpt2_tensors_to_hf(g.views());
  SUBCASE("c_attn not three equal parts") {
    for (CheckpointTensor& t : hf)
      if (t.name == "transformer.h.0.attn.c_attn.weight") {
        t.shape = {kH * 3 * kH / 4, 4};
      }
    CHECK_THROWS_WITH_AS(gpt2_tensors_from_hf(hf, "f.safetensors"),
                         doctest::Contains("f.safetensors: tensor 'transformer.h.0.attn.c_attn.weight' has shape [6, 4], "
                                           "expected a matrix [in, 3·out]"),
                         InputError);
  }
  SUBCASE("a file with both layouts") {
    hf.push_back({"transformer.h.0.attn.key.bias", {kH}, std::vector<float>(kH)});
    CHECK_THROWS_WITH_AS(gpt2_tensors_from_hf(hf, "f.safetensors"),
                         doctest::Contains("f.safetensors: tensor 'transformer.h.0.attn.key.bias' is in ptsim's graph "
                                           "layout, but the file is in GPT2LMHeadModel's"),
                         InputError);
  }
  SUBCASE("a graph layer without its query projection (the part a conversion meets first)") {
    std::vector<CheckpointTensorView> views = g.views();
    std::erase_if(views, [](const CheckpointTensorView& v) { return v.name == "transformer.h.0.attn.query.bias"; });
    CHECK_THROWS_WITH_AS(gpt2_tensors_to_hf(views),
                         doctest::Contains("'transformer.h.0.attn.query.bias' is missing (needed for "
                                           "'transformer.h.0.attn.c_attn.bias')"),
                         InputError);
  }
  SUBCASE("a graph layer without its value projection") {
    std::vector<CheckpointTensorView> views = g.views();
    std::erase_if(views, [](const CheckpointTensorView& v) { return v.name == "transformer.h.0.attn.value.weight"; });
    CHECK_THROWS_WITH_AS(gpt2_tensors_to_hf(views),
                         doctest::Contains("'transformer.h.0.attn.value.weight' is missing (needed for "
                                           "'transformer.h.0.attn.c_attn.weight')"),
                         InputError);
  }
}
