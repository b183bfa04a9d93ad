// tests/runtime/golden/golden_bert.hpp — the shared inputs of the golden check against PyTorch
// (docs/golden-tests.md): a bert-tiny-shaped model with a small vocabulary, its starting weights and one fixed
// batch, made deterministically by ptsim (make_golden_inputs) and read by both ptsim (test_golden.cpp) and
// tools/torch_reference.py. Files under tests/data/golden/bert/:
//   config.json            HF BertConfig (runtime::hf_bert_config), what the PyTorch model is built from
//   model.safetensors      starting weights, HF BertForPreTraining names and shapes (vocab rows unpadded)
//   batch.safetensors      I32 input_ids, token_type_ids, attention_mask [B,S]; masked_positions (within
//                          the sequence), masked_labels (-1 = unused slot) [B,P]; nsp_labels [B]
//   torch_golden.safetensors  what PyTorch computes from them (written by tools/torch_reference.py)
// Not here: the comparison and its tolerances (test_golden.cpp).
#pragma once
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <numbers>
#include <set>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/data_path.hpp"
#include "core/error.hpp"
#include "core/hash.hpp"
#include "models/builder.hpp"
#include "models/model_spec.hpp"
#include "models/task_graph.hpp"
#include "runtime/checkpoint/safetensors.hpp"
#include "runtime/exec/executor.hpp"

namespace ptsim::test::golden {

// bert-tiny's structure (2 layers, 2 heads, FFN = 4 × hidden, erf GELU, post-LN, eps 1e-12) at hidden 64
// and a 250-token vocabulary (padded to 256 rows in the graph, so the padding exclusion is exercised too):
// 129k parameters, 0.5 MB of fp32 per file.
inline models::ModelSpec bert_spec() {
  return models::parse_model_json("golden bert (tests/runtime/golden/golden_bert.hpp)", R"({
    "name": "golden-bert", "family": "bert", "num_layers": 2, "hidden_size": 64, "num_heads": 2,
    "intermediate_size": 256, "vocab_size": 250, "max_position_embeddings": 64, "type_vocab_size": 2,
    "layer_norm_eps": 1e-12})");
}

inline constexpr int64_t kBatch = 4, kSeq = 32, kPredictions = 5;
inline constexpr uint64_t kSeed = 20261201;  // weights and batch
inline constexpr int kSteps = 10;            // optimizer steps whose losses are compared
// Learning rates of the 10-step runs (constant schedule): large enough that 10 steps move the loss by
// several percent, so a wrong update rule shows.
inline constexpr double kAdamwLr = 1e-3, kLambLr = 1e-2;

// fp32, no dropout (PyTorch's reference runs in eval-mode dropout), global-norm clipping on (NVLAMB clips
// to 1.0; AdamW's default config does not clip).
inline models::Recipe bert_recipe(models::OptimizerKind optimizer = models::OptimizerKind::adamw) {
  models::Recipe r;
  r.precision = models::Precision::fp32;
  r.micro_batch = kBatch;
  r.seq_len = kSeq;
  r.max_predictions = kPredictions;
  r.include_dropout = false;
  r.gradient_clipping = true;
  r.optimizer = optimizer;
  return r;
}

inline std::string data_dir() { return core::data_path("tests/data/golden/bert"); }

// Parameters with one row per vocabulary id: the graph stores them padded to padded_vocab_size(), the
// checkpoint (like ptsim train's, docs/training.md) with vocab_size rows.
inline bool is_vocab_parameter(const std::string& name) {
  return name == "bert.embeddings.word_embeddings.weight" || name == "cls.predictions.bias";
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

struct Batch {
  std::vector<int32_t> input_ids, token_type_ids, attention_mask;  // [B,S]
  std::vector<int32_t> masked_positions, masked_labels;            // [B,P]; unused slot: position 0, label -1
  std::vector<int32_t> nsp_labels;                                 // [B]
};

// Deterministic and BERT-like: [CLS]=2 … [SEP]=3 … [SEP]=3 then [PAD]=0; lengths 32, 28, 20, 13; segment B
// after the first [SEP]; 5 predictions per sequence at distinct positions (the shortest sequence uses 3,
// the other two slots are unused), their input replaced by [MASK]=4; NSP labels 0, 1, 1, 0.
inline Batch make_batch(int64_t vocab) {
  const int64_t B = kBatch, S = kSeq, P = kPredictions;
  const int64_t lengths[kBatch] = {32, 28, 20, 13};
  const int64_t used[kBatch] = {5, 5, 5, 3};
  Batch b;
  b.input_ids.assign(static_cast<size_t>(B * S), 0);
  b.token_type_ids.assign(static_cast<size_t>(B * S), 0);
  b.attention_mask.assign(static_cast<size_t>(B * S), 0);
  b.masked_positions.assign(static_cast<size_t>(B * P), 0);
  b.masked_labels.assign(static_cast<size_t>(B * P), -1);
  auto word = [&](uint64_t i) { return static_cast<int32_t>(5 + core::mix64(kSeed * 1000003 + i) % static_cast<uint64_t>(vocab - 5)); };
  for (int64_t r = 0; r < B; ++r) {
    const int64_t len = lengths[r], sep = len / 2;
    for (int64_t s = 0; s < len; ++s) {
      const size_t at = static_cast<size_t>(r * S + s);
      b.input_ids[at] = s == 0 ? 2 : (s == sep || s == len - 1) ? 3 : word(static_cast<uint64_t>(at));
      b.token_type_ids[at] = s > sep ? 1 : 0;
      b.attention_mask[at] = 1;
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
      b.masked_positions[static_cast<size_t>(r * P + j)] = static_cast<int32_t>(pos);
      b.masked_labels[static_cast<size_t>(r * P + j)] = b.input_ids[at];
      b.input_ids[at] = 4;
      ++j;
    }
    b.nsp_labels.push_back(r == 1 || r == 2 ? 1 : 0);
  }
  return b;
}

inline runtime::SafetensorsView i32_view(std::string name, const std::vector<int32_t>& v, std::vector<int64_t> shape) {
  return {std::move(name), runtime::SafetensorsDtype::i32, std::move(shape),
          std::as_bytes(std::span<const int32_t>(v))};
}

inline void write_batch(const std::string& path, const Batch& b) {
  const std::vector<runtime::SafetensorsView> views = {
      i32_view("input_ids", b.input_ids, {kBatch, kSeq}),
      i32_view("token_type_ids", b.token_type_ids, {kBatch, kSeq}),
      i32_view("attention_mask", b.attention_mask, {kBatch, kSeq}),
      i32_view("masked_positions", b.masked_positions, {kBatch, kPredictions}),
      i32_view("masked_labels", b.masked_labels, {kBatch, kPredictions}),
      i32_view("nsp_labels", b.nsp_labels, {kBatch})};
  runtime::write_safetensors(path, views, {{"ptsim_golden", "batch"}});
}

inline std::vector<int32_t> read_i32(const runtime::SafetensorsFile& f, const std::string& name,
                                     const std::vector<int64_t>& shape) {
  const runtime::SafetensorsTensor& t = f.at(name);
  if (t.dtype != runtime::SafetensorsDtype::i32 || t.shape != shape)
    throw core::InputError(fmt::format("{}: {} must be I32 of {} elements", f.source, name, numel(shape)));
  std::vector<int32_t> v(static_cast<size_t>(t.numel()));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

inline Batch read_batch(const std::string& path) {
  const runtime::SafetensorsFile f = runtime::read_safetensors(path);
  if (f.tensors.size() != 6) throw core::InputError(fmt::format("{}: expected the 6 batch tensors", path));
  Batch b;
  b.input_ids = read_i32(f, "input_ids", {kBatch, kSeq});
  b.token_type_ids = read_i32(f, "token_type_ids", {kBatch, kSeq});
  b.attention_mask = read_i32(f, "attention_mask", {kBatch, kSeq});
  b.masked_positions = read_i32(f, "masked_positions", {kBatch, kPredictions});
  b.masked_labels = read_i32(f, "masked_labels", {kBatch, kPredictions});
  b.nsp_labels = read_i32(f, "nsp_labels", {kBatch});
  return b;
}

// The graph's inputs from a batch, as runtime/train/trainer.cpp fills them: positions 0..S-1, [CLS] rows
// b·S, masked positions made flat (b·S + pos; unused slots point at the row's own [CLS] with label -1).
inline void fill_inputs(runtime::Executor& ex, const Batch& b) {
  const auto& in = ex.graph().inputs;
  auto copy = [&](int tensor, const std::vector<int32_t>& v) {
    std::span<int32_t> dst = ex.i32(tensor);
    if (dst.size() != v.size()) throw std::logic_error("golden batch does not fit the graph");
    std::copy(v.begin(), v.end(), dst.begin());
  };
  copy(in.input_ids, b.input_ids);
  copy(in.token_type_ids, b.token_type_ids);
  copy(in.attention_mask, b.attention_mask);
  copy(in.masked_labels, b.masked_labels);
  copy(in.nsp_labels, b.nsp_labels);
  for (int64_t r = 0; r < kBatch; ++r) {
    for (int64_t s = 0; s < kSeq; ++s) ex.i32(in.position_ids)[static_cast<size_t>(r * kSeq + s)] = static_cast<int32_t>(s);
    ex.i32(in.cls_positions)[static_cast<size_t>(r)] = static_cast<int32_t>(r * kSeq);
    for (int64_t j = 0; j < kPredictions; ++j) {
      const size_t at = static_cast<size_t>(r * kPredictions + j);
      ex.i32(in.masked_positions)[at] = static_cast<int32_t>(r * kSeq + b.masked_positions[at]);
    }
  }
  ex.f32(in.loss_grad)[0] = 1.0f;
}

// ---- the weights ----

// Normal(0, stddev) from a counter hash (Box–Muller), independent of everything but (key, i).
inline double hashed_normal(uint64_t key, uint64_t i) {
  auto uniform = [](uint64_t bits) { return (static_cast<double>(bits >> 11) + 0.5) * 0x1.0p-53; };
  const double u1 = uniform(core::mix64(key + 2 * i)), u2 = uniform(core::mix64(key + 2 * i + 1));
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// ptsim's init (init_parameters: N(0, 0.02) matrices, LayerNorm 1/0, biases 0), then moved off it so that
// attention, GELU, tanh and both softmaxes work away from their linear range and no bias or gain gradient
// is trivially structured: matrices ×5 (std 0.1), biases N(0, 0.05), LayerNorm gains 1 + N(0, 0.1).
// The padded vocabulary rows stay 0 (docs/executor.md).
inline void make_weights(runtime::Executor& ex) {
  ex.init_parameters(kSeed);
  const models::TaskGraph& g = ex.graph();
  std::set<int> gains;
  for (const models::Op& op : g.ops)
    if (op.kind == models::OpKind::layernorm) gains.insert(op.inputs.at(1));
  for (const models::Parameter& p : g.params) {
    std::span<float> w = ex.f32(p.weight);
    const bool matrix = g.tensor(p.weight).shape.size() >= 2;
    const uint64_t key = core::mix64(kSeed ^ core::fnv1a64(p.name) ^ 0x5eedULL);
    const size_t valid = static_cast<size_t>(numel(saved_shape(g, p)));
    for (size_t i = 0; i < valid; ++i) {
      if (matrix) w[i] *= 5.0f;
      else if (gains.count(p.weight)) w[i] = static_cast<float>(1.0 + 0.1 * hashed_normal(key, i));
      else w[i] = static_cast<float>(0.05 * hashed_normal(key, i));
    }
  }
}

// Write the weights under their HF names with the checkpoint's shapes (vocab rows unpadded).
inline void write_model(const std::string& path, runtime::Executor& ex) {
  const models::TaskGraph& g = ex.graph();
  std::vector<runtime::SafetensorsView> views;
  for (const models::Parameter& p : g.params) {
    const std::vector<int64_t> shape = saved_shape(g, p);
    std::span<const float> w = ex.f32(p.weight).first(static_cast<size_t>(numel(shape)));
    views.push_back(runtime::safetensors_f32_view(p.name, w, shape));
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
    if (t.shape != saved_shape(g, p))
      throw core::InputError(fmt::format("{}: {} has the wrong shape", f.source, p.name));
    std::span<float> w = ex.f32(p.weight);
    std::fill(w.begin(), w.end(), 0.0f);
    t.copy_f32_to(w.first(static_cast<size_t>(t.numel())), f.source);
  }
}

}  // namespace ptsim::test::golden
