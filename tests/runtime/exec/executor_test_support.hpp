// tests/runtime/exec/executor_test_support.hpp — the tiny BERT / GPT-2 and the fixed batch the executor tests
// share (test_executor.cpp, test_mixed_precision.cpp).
#pragma once
#include <cstdint>
#include <vector>

#include "models/builder.hpp"
#include "models/model_spec.hpp"
#include "runtime/exec/executor.hpp"
#include "tests/runtime/exec/gradcheck.hpp"

namespace ptsim::test {

using models::ModelSpec;
using models::Precision;
using models::Recipe;
using models::TaskGraph;
using runtime::ComputeType;
using runtime::Executor;

// Small enough for finite differences over every parameter tensor, big enough to have two layers, two
// heads, a padded vocabulary (100 → 104 rows: the cross-entropy must exclude 4 classes) and padding.
inline ModelSpec tiny_bert() {
  return models::parse_model_json("tiny-bert (test_executor.cpp)", R"({
    "name": "tiny-bert", "family": "bert", "num_layers": 2, "hidden_size": 16, "num_heads": 2,
    "intermediate_size": 32, "vocab_size": 100, "max_position_embeddings": 32, "type_vocab_size": 2,
    "layer_norm_eps": 1e-12})");
}
inline ModelSpec tiny_gpt2() {
  return models::parse_model_json("tiny-gpt2 (test_executor.cpp)", R"({
    "name": "tiny-gpt2", "family": "gpt2", "num_layers": 2, "hidden_size": 16, "num_heads": 2,
    "intermediate_size": 64, "vocab_size": 100, "max_position_embeddings": 32, "type_vocab_size": 0,
    "layer_norm_eps": 1e-5})");
}
inline Recipe fd_recipe() {
  Recipe r;
  r.precision = Precision::fp32;
  r.micro_batch = 2;
  r.seq_len = 16;
  r.max_predictions = 3;
  r.include_dropout = false;
  return r;
}

// The tiny BERT data parallel over 2 ranks, 2 micro-steps, LAMB, several gradient buckets: the graph of the
// bucket-overlap tests (exec/test_comm_overlap.cpp with a fake communicator, comm/test_mpi_staged.cpp on MPI).
inline TaskGraph two_rank_graph() {
  Recipe r = fd_recipe();
  r.data_parallel = 2;
  r.grad_accum = 2;
  r.bucket_bytes = 4096;  // several buckets of the tiny BERT
  r.optimizer = models::OptimizerKind::lamb;
  return models::build_task_graph(tiny_bert(), r);
}

inline void set_scalar(Executor& ex, int id, double v) {
  if (ex.compute() == ComputeType::f64) {
    ex.write_tensor<double>(id, std::vector<double>{v});
  } else {
    ex.write_tensor<float>(id, std::vector<float>{static_cast<float>(v)});
  }
}

// The values of a float tensor as double, whatever the executor's compute type (a copy out).
inline std::vector<double> read_as_f64(Executor& ex, int id) {
  if (ex.compute() == ComputeType::f64) return ex.read_tensor<double>(id);
  const std::vector<float> v = ex.read_tensor<float>(id);
  return {v.begin(), v.end()};
}

// Writes i32 tensor `id` element by element: value(i) for i in [0, elements).
template <class F>
void write_i32(Executor& ex, int id, F&& value) {
  std::vector<int32_t> v(static_cast<size_t>(ex.graph().tensor(id).elements()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = value(static_cast<int64_t>(i));
  ex.write_tensor<int32_t>(id, v);
}

// One batch: random tokens; sequence b has its last 3·b positions padded; MLM predictions at positions
// 1, 3, 5, … with the last prediction of the last sequence ignored (-1); NSP labels alternate; GPT-2 labels
// are the next token (-1 at the end).
inline void fill_inputs(Executor& ex, uint64_t seed, double loss_grad = 1.0) {
  const TaskGraph& g = ex.graph();
  const int64_t B = g.recipe.micro_batch, S = g.recipe.seq_len, V = g.model.vocab_size;
  const auto& in = g.inputs;
  auto token = [&](int64_t i) { return static_cast<int32_t>(test_mix64(seed * 1000003 + static_cast<uint64_t>(i)) % V); };
  write_i32(ex, in.input_ids, token);
  write_i32(ex, in.position_ids, [&](int64_t i) { return static_cast<int32_t>(i % S); });
  if (in.token_type_ids >= 0) write_i32(ex, in.token_type_ids, [&](int64_t i) { return (i % S) >= S / 2 ? 1 : 0; });
  if (in.attention_mask >= 0)
    write_i32(ex, in.attention_mask, [&](int64_t i) { return (i % S) < S - 3 * (i / S) ? 1 : 0; });
  if (in.masked_positions >= 0) {
    const int64_t per = g.recipe.max_predictions_per_seq();
    write_i32(ex, in.masked_positions, [&](int64_t i) { return static_cast<int32_t>((i / per) * S + 1 + 2 * (i % per)); });
    write_i32(ex, in.masked_labels, [&](int64_t i) { return i == B * per - 1 ? -1 : token(10000 + i); });
    write_i32(ex, in.cls_positions, [&](int64_t b) { return static_cast<int32_t>(b * S); });
    write_i32(ex, in.nsp_labels, [&](int64_t b) { return static_cast<int32_t>(b % 2); });
  }
  if (in.lm_labels >= 0) write_i32(ex, in.lm_labels, [&](int64_t i) { return (i % S) == S - 1 ? -1 : token(i + 1); });
  set_scalar(ex, in.loss_grad, loss_grad);
}

}  // namespace ptsim::test
