// tests/runtime/golden/golden_inputs.hpp — the shared inputs of the golden check against PyTorch
// (docs/golden-tests.md): two small models — a bert-tiny-shaped BertForPreTraining and a GPT-2-tiny-shaped
// LM-head model, both with a 250-token vocabulary — their starting weights and one fixed batch each, made
// deterministically by ptsim (make_golden_inputs) and read by both ptsim (test_golden.cpp) and
// tools/torch_reference.py. Files under tests/data/golden/<bert|gpt2>/:
//   config.json            HF config (BertConfig from runtime::hf_bert_config; GPT2Config), what the PyTorch
//                          model is built from and what ptsim parses the model spec from
//   model.safetensors      starting weights under ptsim's parameter names (BERT: exactly HF's), vocab rows
//                          unpadded
//   batch.safetensors      I32 tensors. BERT: input_ids, token_type_ids, attention_mask [B,S];
//                          masked_positions (within the sequence), masked_labels (-1 = unused) [B,P];
//                          nsp_labels [B]. GPT-2: input_ids, lm_labels (next token; -1 = none) [B,S]
//   torch_golden.safetensors  what PyTorch computes from them (written by tools/torch_reference.py)
// Not here: the comparison and its tolerances (test_golden.cpp).
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <numbers>
#include <list>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/data_path.hpp"
#include "core/json_reader.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "models/builder.hpp"
#include "models/model_spec.hpp"
#include "models/task_graph.hpp"
#include "runtime/checkpoint/safetensors.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/train/trainer.hpp"

namespace ptsim::test::golden {

// One model of the golden check: its spec, its HF config and where its files live.
struct Case {
  std::string name;      // "bert" | "gpt2": the subdirectory of tests/data/golden
  models::ModelSpec spec;
  core::Json hf_config;  // config.json
};

// bert-tiny's structure (2 layers, 2 heads, FFN = 4 × hidden, erf GELU, post-LN, eps 1e-12) at hidden 64
// and a 250-token vocabulary (padded to 256 rows in the graph, so the padding exclusion is exercised too):
// 129k parameters, 0.5 MB of fp32 per file.
Case bert_case();
// GPT-2's structure (pre-LN, causal attention, tanh GELU, tied LM head without bias, eps 1e-5) at the same
// size: 2 layers, hidden 64, 2 heads, FFN 256, 250 tokens (padded to 256, GPT-2's multiple of 128), 64
// positions. The spec is parsed from the HF GPT2Config written to config.json, as ptsim reads an HF config.
Case gpt2_case();

inline constexpr int64_t kBatch = 4, kSeq = 32, kPredictions = 5;
inline constexpr uint64_t kSeed = 20261201;  // weights and batch
inline constexpr int kSteps = 10;            // optimizer steps whose losses are compared
// Learning rates of the 10-step runs (constant schedule): large enough that 10 steps move the loss by
// several percent, so a wrong update rule shows.
inline constexpr double kAdamwLr = 1e-3, kLambLr = 1e-2;

inline Case bert_case() {
  Case c;
  c.name = "bert";
  c.spec = models::parse_model_json("golden bert (tests/runtime/golden/golden_inputs.hpp)", R"({
    "name": "golden-bert", "family": "bert", "num_layers": 2, "hidden_size": 64, "num_heads": 2,
    "intermediate_size": 256, "vocab_size": 250, "max_position_embeddings": 64, "type_vocab_size": 2,
    "layer_norm_eps": 1e-12})");
  c.hf_config = runtime::hf_bert_config(c.spec);  // what ptsim train writes next to its checkpoints
  return c;
}

inline Case gpt2_case() {
  Case c;
  c.name = "gpt2";
  c.hf_config = core::Json::parse(R"({
    "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "n_layer": 2, "n_embd": 64, "n_head": 2,
    "n_inner": 256, "vocab_size": 250, "n_positions": 64, "layer_norm_epsilon": 1e-05,
    "activation_function": "gelu_new", "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
    "scale_attn_weights": true, "tie_word_embeddings": true, "torch_dtype": "float32"})");
  c.spec = models::parse_model_json("golden gpt2 config.json (tests/runtime/golden/golden_inputs.hpp)",
                                    c.hf_config.dump());
  c.spec.name = "golden-gpt2";
  return c;
}

inline bool is_bert(const Case& c) { return c.spec.family == models::ModelFamily::bert; }

// fp32, no dropout (PyTorch's reference runs in eval mode), global-norm clipping on (NVLAMB clips to 1.0;
// AdamW's default config does not clip).
inline models::Recipe recipe(const Case& c, models::OptimizerKind optimizer = models::OptimizerKind::adamw) {
  models::Recipe r;
  r.precision = models::Precision::fp32;
  r.micro_batch = kBatch;
  r.seq_len = kSeq;
  if (is_bert(c)) r.max_predictions = kPredictions;
  r.include_dropout = false;
  r.gradient_clipping = true;
  r.optimizer = optimizer;
  return r;
}

inline std::string data_dir(const Case& c) { return core::data_path("tests/data/golden/" + c.name); }

// Parameters with one row per vocabulary id: the graph stores them padded to padded_vocab_size(), the
// checkpoint (like ptsim train's, docs/training.md) with vocab_size rows.
inline bool is_vocab_parameter(const std::string& name) {
  return name == "bert.embeddings.word_embeddings.weight" || name == "cls.predictions.bias" ||
         name == "transformer.wte.weight";
}
inline std::vector<int64_t> saved_shape(const models::TaskGraph& g, const models::Parameter& p) {
  std::vector<int64_t> shape = g.tensor(p.weight).shape;
  if (is_vocab_parameter(p.name)) shape[0] = g.model.vocab_size;
  return shape;
}
inline int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

// ---- the batch ----

struct I32Tensor {
  std::vector<int64_t> shape;
  std::vector<int32_t> values;
};
using Batch = std::map<std::string, I32Tensor>;  // by name (see the file list above)

inline int32_t random_word(uint64_t i, int64_t vocab) {  // ids 5.. (0-4: [PAD] [UNK] [CLS] [SEP] [MASK])
  return static_cast<int32_t>(5 + core::mix64(kSeed * 1000003 + i) % static_cast<uint64_t>(vocab - 5));
}

// BERT-like: [CLS]=2 … [SEP]=3 … [SEP]=3 then [PAD]=0; lengths 32, 28, 20, 13; segment B after the first
// [SEP]; 5 predictions per sequence at distinct word positions (the shortest sequence uses 3, the other two
// slots are unused), their input replaced by [MASK]=4; NSP labels 0, 1, 1, 0.
inline Batch make_bert_batch(int64_t vocab) {
  const int64_t B = kBatch, S = kSeq, P = kPredictions;
  const int64_t lengths[kBatch] = {32, 28, 20, 13};
  const int64_t used[kBatch] = {5, 5, 5, 3};
  std::vector<int32_t> ids(static_cast<size_t>(B * S), 0), types(ids.size(), 0), mask(ids.size(), 0);
  std::vector<int32_t> positions(static_cast<size_t>(B * P), 0), labels(positions.size(), -1), nsp;
  for (int64_t r = 0; r < B; ++r) {
    const int64_t len = lengths[r], sep = len / 2;
    for (int64_t s = 0; s < len; ++s) {
      const size_t at = static_cast<size_t>(r * S + s);
      ids[at] = s == 0 ? 2 : (s == sep || s == len - 1) ? 3 : random_word(at, vocab);
      types[at] = s > sep ? 1 : 0;
      mask[at] = 1;
    }
    std::set<int64_t> chosen;  // distinct positions among the word tokens
    for (uint64_t k = 0; static_cast<int64_t>(chosen.size()) < used[r]; ++k) {
      const int64_t pos = 1 + static_cast<int64_t>(core::mix64(kSeed * 7 + static_cast<uint64_t>(r) * 101 + k) %
                                                   static_cast<uint64_t>(len - 2));
      if (pos != sep) chosen.insert(pos);
    }
    int64_t j = 0;
    for (int64_t pos : chosen) {  // ascending, as the data pipeline stores them
      const size_t at = static_cast<size_t>(r * S + pos);
      positions[static_cast<size_t>(r * P + j)] = static_cast<int32_t>(pos);
      labels[static_cast<size_t>(r * P + j)] = ids[at];
      ids[at] = 4;
      ++j;
    }
    nsp.push_back(r == 1 || r == 2 ? 1 : 0);
  }
  return {{"input_ids", {{B, S}, ids}},
          {"token_type_ids", {{B, S}, types}},
          {"attention_mask", {{B, S}, mask}},
          {"masked_positions", {{B, P}, positions}},
          {"masked_labels", {{B, P}, labels}},
          {"nsp_labels", {{B}, nsp}}};
}

// Causal LM: lengths 32, 30, 24, 17 of random words, then [PAD]=0; lm_labels[s] = input_ids[s + 1] while
// s + 1 is inside the sequence, else -1 (no loss on the last token and on padding).
inline Batch make_gpt2_batch(int64_t vocab) {
  const int64_t B = kBatch, S = kSeq;
  const int64_t lengths[kBatch] = {32, 30, 24, 17};
  std::vector<int32_t> ids(static_cast<size_t>(B * S), 0), labels(ids.size(), -1);
  for (int64_t r = 0; r < B; ++r)
    for (int64_t s = 0; s < lengths[r]; ++s) ids[static_cast<size_t>(r * S + s)] = random_word(static_cast<uint64_t>(r * S + s), vocab);
  for (int64_t r = 0; r < B; ++r)
    for (int64_t s = 0; s + 1 < lengths[r]; ++s) labels[static_cast<size_t>(r * S + s)] = ids[static_cast<size_t>(r * S + s + 1)];
  return {{"input_ids", {{B, S}, ids}}, {"lm_labels", {{B, S}, labels}}};
}

inline Batch make_batch(const Case& c) {
  return is_bert(c) ? make_bert_batch(c.spec.vocab_size) : make_gpt2_batch(c.spec.vocab_size);
}

inline void write_batch(const std::string& path, const Batch& b) {
  std::vector<runtime::SafetensorsView> views;
  for (const auto& [name, t] : b)
    views.push_back({name, runtime::SafetensorsDtype::i32, t.shape, std::as_bytes(std::span<const int32_t>(t.values))});
  runtime::write_safetensors(path, views, {{"ptsim_golden", "batch"}});
}

// Exactly the tensors make_batch makes (names, I32, shapes); InputError otherwise.
inline Batch read_batch(const Case& c) {
  const std::string path = data_dir(c) + "/batch.safetensors";
  const runtime::SafetensorsFile f = runtime::read_safetensors(path);
  Batch expected = make_batch(c), b;
  if (f.tensors.size() != expected.size())
    throw core::InputError(fmt::format("{}: {} tensors, expected {}", path, f.tensors.size(), expected.size()));
  for (const auto& [name, want] : expected) {
    const runtime::SafetensorsTensor& t = f.at(name);
    if (t.dtype != runtime::SafetensorsDtype::i32 || t.shape != want.shape)
      throw core::InputError(fmt::format("{}: {} must be I32 of shape {}", path, name, fmt::join(want.shape, "×")));
    I32Tensor& got = b[name];
    got.shape = t.shape;
    got.values.resize(static_cast<size_t>(t.numel()));
    std::memcpy(got.values.data(), t.data.data(), t.data.size());
  }
  return b;
}

// The graph's inputs from a batch, as runtime/train/trainer.cpp fills them: positions 0..S-1; BERT: [CLS]
// rows b·S, masked positions made flat (b·S + pos; unused slots point at the row's own [CLS], label -1).
// The sizes (B, S, P) are the batch's own (input_ids [B,S], masked_positions [B,P]), so any batch of this
// layout that fits the graph can be filled (the golden's, or tests/runtime/train/model_steps_check.hpp's).
inline void fill_inputs(runtime::Executor& ex, const Batch& b) {
  const auto& in = ex.graph().inputs;
  auto copy = [&](int tensor, const std::string& name) {
    const std::vector<int32_t>& v = b.at(name).values;
    if (static_cast<size_t>(ex.graph().tensor(tensor).elements()) != v.size())
      throw std::logic_error("golden batch does not fit the graph: " + name);
    ex.write_tensor<int32_t>(tensor, v);
  };
  const int64_t batch = b.at("input_ids").shape.at(0), seq = b.at("input_ids").shape.at(1);
  copy(in.input_ids, "input_ids");
  std::vector<int32_t> position_ids(static_cast<size_t>(batch * seq));
  for (int64_t r = 0; r < batch; ++r)
    for (int64_t s = 0; s < seq; ++s) position_ids[static_cast<size_t>(r * seq + s)] = static_cast<int32_t>(s);
  ex.write_tensor<int32_t>(in.position_ids, position_ids);
  if (in.lm_labels >= 0) copy(in.lm_labels, "lm_labels");
  if (in.masked_positions >= 0) {
    copy(in.token_type_ids, "token_type_ids");
    copy(in.attention_mask, "attention_mask");
    copy(in.masked_labels, "masked_labels");
    copy(in.nsp_labels, "nsp_labels");
    const std::vector<int32_t>& positions = b.at("masked_positions").values;
    const int64_t predictions = b.at("masked_positions").shape.at(1);
    std::vector<int32_t> cls(static_cast<size_t>(batch)), flat(static_cast<size_t>(batch * predictions));
    for (int64_t r = 0; r < batch; ++r) {
      cls[static_cast<size_t>(r)] = static_cast<int32_t>(r * seq);
      for (int64_t j = 0; j < predictions; ++j) {
        const size_t at = static_cast<size_t>(r * predictions + j);
        flat[at] = static_cast<int32_t>(r * seq + positions[at]);
      }
    }
    ex.write_tensor<int32_t>(in.cls_positions, cls);
    ex.write_tensor<int32_t>(in.masked_positions, flat);
  }
  if (ex.compute() == runtime::ComputeType::f64) ex.write_tensor<double>(in.loss_grad, std::vector<double>{1.0});
  else ex.write_tensor<float>(in.loss_grad, std::vector<float>{1.0f});
}

// ---- the weights ----

// Normal(0, 1) from a counter hash (Box–Muller), independent of everything but (key, i).
inline double hashed_normal(uint64_t key, uint64_t i) {
  auto uniform = [](uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; };
  const double u1 = uniform(core::mix64(key + 2 * i)), u2 = uniform(core::mix64(key + 2 * i + 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// ptsim's init (init_parameters: N(0, 0.02) matrices, LayerNorm 1/0, biases 0), then moved off it so that
// attention, GELU, tanh and the softmaxes work away from their linear range and no bias or gain gradient is
// trivially structured: matrices ×5 (std 0.1), biases N(0, 0.05), LayerNorm gains 1 + N(0, 0.1). The padded
// vocabulary rows stay 0 (docs/executor.md).
inline void make_weights(runtime::Executor& ex) {
  ex.init_parameters(kSeed);
  const models::TaskGraph& g = ex.graph();
  std::set<int> gains;
  for (const models::Op& op : g.ops)
    if (op.kind == models::OpKind::layernorm) gains.insert(op.inputs.at(1));
  for (const models::Parameter& p : g.params) {
    std::vector<float> w = ex.read_tensor<float>(p.weight);
    const bool matrix = g.tensor(p.weight).shape.size() >= 2;
    const uint64_t key = core::mix64(kSeed ^ core::fnv1a64(p.name) ^ 0x5eedULL);
    const size_t valid = static_cast<size_t>(numel(saved_shape(g, p)));
    for (size_t i = 0; i < valid; ++i) {
      if (matrix) w[i] *= 5.0f;
      else if (gains.count(p.weight)) w[i] = static_cast<float>(1.0 + 0.1 * hashed_normal(key, i));
      else w[i] = static_cast<float>(0.05 * hashed_normal(key, i));
    }
    ex.write_tensor<float>(p.weight, w);
  }
}

// Write the weights under their names with the checkpoint's shapes (vocab rows unpadded).
inline void write_model(const std::string& path, runtime::Executor& ex) {
  const models::TaskGraph& g = ex.graph();
  std::vector<runtime::SafetensorsView> views;
  std::list<std::vector<float>> values;  // copies out of the executor, alive until written (stable addresses)
  for (const models::Parameter& p : g.params) {
    const std::vector<int64_t> shape = saved_shape(g, p);
    values.push_back(ex.read_tensor<float>(p.weight));
    views.push_back(runtime::safetensors_f32_view(
        p.name, std::span<const float>(values.back()).first(static_cast<size_t>(numel(shape))), shape));
  }
  runtime::write_safetensors(path, views, {{"format", "pt"}, {"ptsim_golden", "model"}});
}

// Load weights strictly: the file holds exactly the graph's parameters (by name), each F32 with the
// checkpoint shape; padded vocabulary rows are set to 0. InputError naming the tensor otherwise.
inline void load_model(runtime::Executor& ex, const runtime::SafetensorsFile& f) {
  const models::TaskGraph& g = ex.graph();
  if (f.tensors.size() != g.params.size())
    throw core::InputError(fmt::format("{}: {} tensors, the model has {} parameters", f.source, f.tensors.size(),
                                       g.params.size()));
  for (const models::Parameter& p : g.params) {
    const runtime::SafetensorsTensor& t = f.at(p.name);
    if (t.shape != saved_shape(g, p)) throw core::InputError(fmt::format("{}: {} has the wrong shape", f.source, p.name));
    std::vector<float> w(static_cast<size_t>(g.tensor(p.weight).elements()), 0.0f);
    t.copy_f32_to(std::span<float>(w).first(static_cast<size_t>(t.numel())), f.source);
    ex.write_tensor<float>(p.weight, w);
  }
}

}  // namespace ptsim::test::golden
