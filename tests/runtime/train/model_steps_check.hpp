// tests/runtime/train/model_steps_check.hpp — whole training steps of one model on a backend under test
// against the CPU backend in fp32 (the reference): the same weights (copied from the reference), the same
// batch, dropout off (or, in the fused-op cases, 0.1 with identical masks: with_fused_dropout); compared on the losses (BERT: total, MLM, NSP), the logits (MLM decoder / LM head),
// the gradient of every parameter, and the 4 losses of 3 optimizer steps (AdamW and LAMB). Used by
// test_model_steps_cuda.cpp (CUDA f32 at fp32 / tf32 / bf16, suite gpu) and test_model_steps_cpu.cpp (CPU
// f64 against CPU f32, suite cpu: the harness and its fp32 bound on this machine).
//
// Tolerances: rounding_bounds() derives them from the graph, as docs/golden-tests.md does for the golden.
// fp32 (u = 2^-24): a length-K dot product rounds by ≲ √K·u, and a value at depth D of the op chain carries
// ≲ D such errors, so forward ≈ √K·D_fwd·u, backward ≈ √K·(D_fwd + D_bwd)·u, with K the longest reduction
// (max of hidden, FFN width, tokens) and D the graph's op counts (an upper bound on the chain length). Both
// sides round (the reference is fp32 too), which the margins below cover. tf32 (the backend's GEMMs on
// tensor cores, CUBLAS_COMPUTE_32F_FAST_TF32; the CPU reference stays fp32): each GEMM rounds its inputs to
// 10 mantissa bits (u = 2^-11), a random-sign O(u) relative error per GEMM output; G GEMMs on the chain
// random-walk to √(2G)·u (two rounded inputs per product). bf16 (both sides round every op output to bf16,
// u = 2^-8, on the same graph): the sides differ only where fp32 noise moves a value across a bf16 rounding
// boundary, by one bf16 rounding; at most every op output on the chain does so: √D·u. fp16 the same with
// u = 2^-11 (below fp16's normal range a rounding is 2^-25 absolute, smaller still relative to the checks'
// max |ref| and ‖ref‖₂ scales).
// Checks, with those bounds F (forward) and B (backward):
//   * losses: relative ≤ F (|∂L/∂z| ≤ 1 per row, and the logits' error is ≤ F·max|z| with max|z| ≲ L here);
//   * logits: max |Δ| ≤ F · max |ref|;
//   * gradients: ‖Δ‖₂ ≤ 3B · ‖ref‖₂ and max |Δ| ≤ 10B · max |ref| (room for cancellation, as the golden's
//     3e-4 and 1e-3 are ~4× and ~12× its 8e-5);
//   * attention key biases: exactly 0 in exact arithmetic (docs/golden-tests.md), so both sides must only be
//     noise: max |g| ≤ max(1e-4, 10B) · max |∂L/∂W_key| of the layer;
//   * 3-step losses: relative ≤ 3F (three forwards from weights that differ by η × the update differences),
//     and the reference's loss must fall (otherwise agreement says nothing about the update).
// Each comparison returns its failures as text rather than asserting, so that the cpu test can show that a
// perturbation of twice a bound is caught and one of half a bound is not.
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/hash.hpp"
#include "models/builder.hpp"
#include "models/model_spec.hpp"
#include "models/recipe.hpp"
#include "models/task_graph.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/golden/golden_inputs.hpp"
#include "tests/support/backend_under_test.hpp"  // defines: make_test_backend

namespace ptsim::test::steps {

// One model shape and the batch size it is checked at.
struct ModelCase {
  std::string name;
  models::ModelSpec spec;
  int64_t batch = 4, seq = 64;
  // The fused-op cases (with_fused_dropout): dropout on, and the recipe's fusion flags.
  bool dropout = false;
  bool fused_attention = false, fused_softmax_dropout = false, fused_bias_dropout_residual = false;
};

constexpr int64_t kVocab = 1003;  // small, so the decoder GEMM is quick; padded to 1,008 (BERT) / 1,024 (GPT-2) rows
constexpr uint64_t kSeed = 20261201;

inline ModelCase model_case(const std::string& builtin, int64_t batch, int64_t seq) {
  ModelCase c{builtin, models::load_model(builtin), batch, seq};
  c.spec.vocab_size = kVocab;
  return c;
}
// models/specs/bert-tiny.json (L2 H128 A2 FFN 512) at 4 × 64 tokens.
inline ModelCase bert_tiny() { return model_case("bert-tiny", 4, 64); }
// models/specs/bert-base.json (L12 H768 A12 FFN 3072) at 2 × 64 tokens: bert-base's depth and widths, a small
// vocabulary and sequence so that the CPU reference stays quick.
inline ModelCase bert_base_shaped() { return model_case("bert-base", 2, 64); }
// GPT-2's structure (models/specs/gpt2-124m.json: pre-LN, causal, tanh GELU, tied head) at bert-tiny's size.
inline ModelCase gpt2_tiny() {
  ModelCase c = model_case("gpt2-124m", 4, 64);
  c.name = "gpt2-tiny";
  c.spec.num_layers = 2, c.spec.hidden_size = 128, c.spec.num_heads = 2, c.spec.intermediate_size = 512;
  c.spec.max_position_embeddings = 64;
  return c;
}

// `c` with dropout 0.1 (hidden and attention) and the fused dropout ops: bias + dropout + residual, and
// either the fused attention or the fused softmax + dropout. Both backends draw the masks from the shared
// counter-based hash (dropout_mask.hpp) with the same seed, step and micro-step, so the masks are identical
// and only rounding differs.
inline ModelCase with_fused_dropout(ModelCase c, bool fused_attention) {
  c.name += fused_attention ? " (fused attention, bias+dropout+residual, dropout 0.1)"
                            : " (fused softmax+dropout, bias+dropout+residual, dropout 0.1)";
  c.dropout = true;
  c.spec.hidden_dropout = 0.1;
  c.spec.attention_dropout = 0.1;
  c.fused_attention = fused_attention;
  c.fused_softmax_dropout = !fused_attention;
  c.fused_bias_dropout_residual = true;
  return c;
}

inline bool is_bert(const ModelCase& c) { return c.spec.family == models::ModelFamily::bert; }
inline int64_t predictions(const ModelCase& c) { return std::max<int64_t>(1, c.seq / 8); }

inline models::Recipe recipe(const ModelCase& c, models::Precision precision, models::OptimizerKind optimizer) {
  models::Recipe r;
  r.precision = precision;
  r.micro_batch = c.batch;
  r.seq_len = c.seq;
  if (is_bert(c)) r.max_predictions = predictions(c);
  r.include_dropout = c.dropout;
  r.fused_attention = c.fused_attention;
  r.fused_softmax_dropout = c.fused_softmax_dropout;
  r.fused_bias_dropout_residual = c.fused_bias_dropout_residual;
  r.gradient_clipping = true;
  r.optimizer = optimizer;
  return r;
}

// A batch in golden_inputs.hpp's layout (golden::fill_inputs fills it): sequence lengths cycle through S,
// S − 3, S/2 + 1, S/3 (padding masked), two segments, predictions() masked word positions per sequence
// (fewer in short sequences: label −1 slots), NSP labels alternating; GPT-2: next-token labels.
inline golden::Batch make_batch(const ModelCase& c) {
  const int64_t B = c.batch, S = c.seq, P = predictions(c), V = c.spec.vocab_size;
  auto word = [&](uint64_t i) { return static_cast<int32_t>(5 + core::mix64(kSeed * 31 + i) % static_cast<uint64_t>(V - 5)); };
  std::vector<int32_t> ids(static_cast<size_t>(B * S), 0), types(ids.size(), 0), mask(ids.size(), 0), lm(ids.size(), -1);
  std::vector<int32_t> positions(static_cast<size_t>(B * P), 0), labels(positions.size(), -1), nsp;
  for (int64_t r = 0; r < B; ++r) {
    const std::array<int64_t, 4> lengths = {S, S - 3, S / 2 + 1, S / 3};
    const int64_t len = std::max<int64_t>(8, lengths[static_cast<size_t>(r % 4)]), sep = len / 2;
    for (int64_t s = 0; s < len; ++s) {
      const size_t at = static_cast<size_t>(r * S + s);
      ids[at] = is_bert(c) && s == 0 ? 2 : is_bert(c) && (s == sep || s == len - 1) ? 3 : word(at);
      types[at] = s > sep ? 1 : 0;
      mask[at] = 1;
    }
    for (int64_t s = 0; s + 1 < len; ++s) lm[static_cast<size_t>(r * S + s)] = ids[static_cast<size_t>(r * S + s + 1)];
    int64_t j = 0;  // every third word position after [CLS], skipping [SEP], ascending, up to P of them
    for (int64_t pos = 1; pos < len - 1 && j < P; pos += 3) {
      if (pos == sep) continue;
      const size_t at = static_cast<size_t>(r * S + pos);
      positions[static_cast<size_t>(r * P + j)] = static_cast<int32_t>(pos);
      labels[static_cast<size_t>(r * P + j)] = ids[at];
      ids[at] = 4;  // [MASK]
      ++j;
    }
    nsp.push_back(static_cast<int32_t>(r % 2));
  }
  if (!is_bert(c)) return {{"input_ids", {{B, S}, ids}}, {"lm_labels", {{B, S}, lm}}};
  return {{"input_ids", {{B, S}, ids}},           {"token_type_ids", {{B, S}, types}},
          {"attention_mask", {{B, S}, mask}},     {"masked_positions", {{B, P}, positions}},
          {"masked_labels", {{B, P}, labels}},    {"nsp_labels", {{B}, nsp}}};
}

// One side of the comparison.
struct Side {
  runtime::BackendKind backend = runtime::BackendKind::cpu;
  runtime::ComputeType compute = runtime::ComputeType::f32;
  models::Precision precision = models::Precision::fp32;
};

inline std::vector<double> read_values(runtime::Executor& ex, int tensor) {
  if (ex.compute() == runtime::ComputeType::f64) return ex.read_tensor<double>(tensor);
  const std::vector<float> v = ex.read_tensor<float>(tensor);
  return {v.begin(), v.end()};
}

// What one side computes in one micro-step.
struct StepResult {
  std::map<std::string, double> losses;                  // loss (+ mlm_loss, nsp_loss)
  std::map<std::string, std::vector<double>> logits;     // by op name
  std::map<std::string, std::vector<double>> grads;      // by parameter name
};

inline bool is_logits_op(const models::Op& op) {
  return op.phase == models::Phase::forward && (op.name == "cls.predictions.decoder" || op.name == "lm_head");
}

// An executor for `side` with the reference's starting weights: ptsim's init_parameters(kSeed) on a CPU f32
// executor, copied over as fp32 values (into the fp32 masters under bf16).
struct Session {
  models::TaskGraph graph;
  std::unique_ptr<runtime::Executor> ex;
  std::map<std::string, std::vector<double>> logits;
};
inline std::unique_ptr<Session> open_session(const ModelCase& c, const Side& side, models::OptimizerKind optimizer) {
  auto s = std::make_unique<Session>();
  s->graph = models::build_task_graph(c.spec, recipe(c, side.precision, optimizer));
  runtime::ExecutorOptions options;
  options.backend = side.backend;
  options.compute = side.compute;
  options.time_ops = false;
  Session* raw = s.get();
  options.after_op = [raw](const models::Op& op) {
    if (is_logits_op(op)) raw->logits[op.name] = read_values(*raw->ex, op.outputs.at(0));
  };
  s->ex = make_test_executor(s->graph, options);
  runtime::ExecutorOptions init_options;
  init_options.time_ops = false;
  runtime::Executor init(s->graph, init_options);
  init.init_parameters(kSeed);
  for (size_t i = 0; i < s->graph.params.size(); ++i) {
    const std::vector<float> w = init.read_parameter(i);
    if (side.compute == runtime::ComputeType::f64)
      s->ex->write_tensor<double>(s->graph.params[i].weight, std::vector<double>(w.begin(), w.end()));
    else
      s->ex->write_parameter(i, w);
  }
  golden::fill_inputs(*s->ex, make_batch(c));
  return s;
}

inline StepResult run_step(const ModelCase& c, const Side& side) {
  auto s = open_session(c, side, models::OptimizerKind::adamw);
  StepResult r;
  r.losses["loss"] = s->ex->run_micro_step(1, 0);
  for (const models::Op& op : s->graph.ops) {
    if (op.phase != models::Phase::forward || op.kind != models::OpKind::cross_entropy) continue;
    const std::string part = op.name == "cls.predictions.loss" ? "mlm_loss" : op.name == "cls.seq_relationship.loss" ? "nsp_loss" : "";
    if (!part.empty()) r.losses[part] = s->ex->scalar_output(op.outputs.at(0));
  }
  r.logits = s->logits;
  for (const models::Parameter& p : s->graph.params) r.grads[p.name] = read_values(*s->ex, p.gradient);
  return r;
}

// Learning rates of the 3-step runs: golden_inputs.hpp's (large enough that 3 steps lower the loss).
inline double step_lr(models::OptimizerKind k) { return k == models::OptimizerKind::lamb ? golden::kLambLr : golden::kAdamwLr; }
constexpr int kSteps = 3;

// The loss before each of kSteps optimizer steps, then after the last (f32 compute only).
inline std::vector<double> step_losses(const ModelCase& c, const Side& side, models::OptimizerKind kind) {
  auto s = open_session(c, side, kind);
  auto opt = runtime::make_optimizer(s->ex->backend(), runtime::default_optimizer_config(kind), s->ex->param_slots());
  std::vector<double> losses;
  for (int step = 1; step <= kSteps; ++step) {
    losses.push_back(s->ex->run_micro_step(step, 0));
    s->ex->run_step_tail(nullptr, opt.get(), step_lr(kind));
    if (s->ex->last_step_skipped()) throw std::runtime_error(c.name + ": step " + std::to_string(step) + " was skipped");
  }
  losses.push_back(s->ex->run_micro_step(kSteps + 1, 0));
  return losses;
}

// ---- the bounds ----

struct Bounds {
  double forward = 0, backward = 0;
};
// A fused op counts as the chain of unfused ops it replaces (each of them rounds once): the fused attention
// forward is QKᵀ (scale in alpha), the masked softmax, dropout and ·V (4), its backward dV, dP, dropout and
// softmax backward, dQ, dK (6); softmax + dropout 2 each way; bias + dropout + residual 3 forward (bias add,
// dropout, residual add), 2 backward (dropout backward, bias gradient). The fused attention's products are
// fp32 on both backends (no TF32), so they are not counted as GEMMs for the tf32 term.
inline int64_t unfused_depth(models::OpKind k) {
  switch (k) {
    case models::OpKind::fused_attention: return 4;
    case models::OpKind::fused_attention_backward: return 6;
    case models::OpKind::softmax_dropout:
    case models::OpKind::softmax_dropout_backward: return 2;
    case models::OpKind::bias_dropout_residual: return 3;
    case models::OpKind::bias_dropout_residual_backward: return 2;
    default: return 1;
  }
}
inline Bounds rounding_bounds(const models::TaskGraph& g, const ModelCase& c, models::Precision side_precision) {
  int64_t forward_ops = 0, backward_ops = 0, forward_gemms = 0, backward_gemms = 0;
  for (const models::Op& op : g.ops) {
    const bool gemm = op.kind == models::OpKind::gemm || op.kind == models::OpKind::batched_gemm;
    if (op.phase == models::Phase::forward) forward_ops += unfused_depth(op.kind), forward_gemms += gemm;
    if (op.phase == models::Phase::backward) backward_ops += unfused_depth(op.kind), backward_gemms += gemm;
  }
  const double k = static_cast<double>(std::max({c.spec.hidden_size, c.spec.intermediate_size, c.batch * c.seq}));
  const double u32 = std::ldexp(1.0, -24);
  Bounds b{std::sqrt(k) * forward_ops * u32, std::sqrt(k) * (forward_ops + backward_ops) * u32};
  if (side_precision == models::Precision::tf32) {
    const double u = std::ldexp(1.0, -11);
    b.forward += std::sqrt(2.0 * forward_gemms) * u;
    b.backward += std::sqrt(2.0 * (forward_gemms + backward_gemms)) * u;
  }
  if (side_precision == models::Precision::bf16 || side_precision == models::Precision::fp16) {
    const double u = std::ldexp(1.0, side_precision == models::Precision::bf16 ? -8 : -11);
    b.forward += std::sqrt(static_cast<double>(forward_ops)) * u;
    b.backward += std::sqrt(static_cast<double>(forward_ops + backward_ops)) * u;
  }
  return b;
}

// ---- the comparison ----

// Worst errors of one comparison (for the MESSAGE lines) and every failure, as text.
struct Outcome {
  double loss = 0, logits = 0, grad_l2 = 0, grad_max = 0, key_bias = 0, step_loss = 0;
  std::string grad_l2_name, grad_max_name;
  std::vector<std::string> failures;
};

inline double relative(double got, double want) { return std::abs(got - want) / std::abs(want); }

struct TensorError {
  double max_rel = 0, l2_rel = 0;  // max |Δ| / max |ref|, ‖Δ‖₂ / ‖ref‖₂
};
inline TensorError tensor_error(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) throw std::logic_error("tensor_error: sizes differ");
  double max_ref = 0, max_diff = 0, ref2 = 0, diff2 = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = got[i] - want[i];
    max_ref = std::max(max_ref, std::abs(want[i]));
    max_diff = std::max(max_diff, std::abs(d));
    ref2 += want[i] * want[i];
    diff2 += d * d;
  }
  return {max_ref > 0 ? max_diff / max_ref : max_diff, ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2)};
}

inline double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

inline void compare_step(const StepResult& got, const StepResult& want, const Bounds& b, Outcome& o) {
  for (const auto& [name, value] : want.losses) {
    const double e = relative(got.losses.at(name), value);
    o.loss = std::max(o.loss, e);
    if (!(e <= b.forward))
      o.failures.push_back(fmt::format("{}: {} vs reference {} (relative {:.3g} > {:.3g})", name, got.losses.at(name), value, e, b.forward));
  }
  for (const auto& [name, value] : want.logits) {
    const TensorError e = tensor_error(got.logits.at(name), value);
    o.logits = std::max(o.logits, e.max_rel);
    if (!(e.max_rel <= b.forward))
      o.failures.push_back(fmt::format("{} logits: max |Δ| / max |ref| = {:.3g} > {:.3g}", name, e.max_rel, b.forward));
  }
  const double key_noise = std::max(1e-4, 10 * b.backward);
  for (const auto& [name, value] : want.grads) {
    const std::vector<double>& g = got.grads.at(name);
    if (name.ends_with(".key.bias")) {
      const double scale = max_abs(want.grads.at(name.substr(0, name.size() - 4) + "weight"));
      const double noise = std::max(max_abs(g), max_abs(value)) / scale;
      o.key_bias = std::max(o.key_bias, noise);
      if (!(noise <= key_noise))
        o.failures.push_back(fmt::format("grad {} (0 in exact arithmetic): max |g| / key-weight scale {:.3g} > {:.3g}", name, noise, key_noise));
      continue;
    }
    const TensorError e = tensor_error(g, value);
    if (e.l2_rel > o.grad_l2) o.grad_l2 = e.l2_rel, o.grad_l2_name = name;
    if (e.max_rel > o.grad_max) o.grad_max = e.max_rel, o.grad_max_name = name;
    if (!(e.l2_rel <= 3 * b.backward))
      o.failures.push_back(fmt::format("grad {}: ‖Δ‖ / ‖ref‖ = {:.3g} > {:.3g}", name, e.l2_rel, 3 * b.backward));
    if (!(e.max_rel <= 10 * b.backward))
      o.failures.push_back(fmt::format("grad {}: max |Δ| / max |ref| = {:.3g} > {:.3g}", name, e.max_rel, 10 * b.backward));
  }
}

inline void compare_step_losses(const std::string& what, const std::vector<double>& got, const std::vector<double>& want,
                                const Bounds& b, Outcome& o) {
  if (got.size() != want.size()) throw std::logic_error("compare_step_losses: lengths differ");
  for (size_t i = 0; i < got.size(); ++i) {
    const double e = relative(got[i], want[i]);
    o.step_loss = std::max(o.step_loss, e);
    if (!(e <= 3 * b.forward))
      o.failures.push_back(fmt::format("{} loss {}: {} vs reference {} (relative {:.3g} > {:.3g})", what, i, got[i], want[i], e, 3 * b.forward));
  }
  if (!(want.back() < want.front()))
    o.failures.push_back(fmt::format("{}: the reference's loss did not fall ({} -> {})", what, want.front(), want.back()));
}

inline std::string summary(const std::string& what, const Bounds& b, const Outcome& o) {
  return fmt::format("{}: bounds F {:.2g} B {:.2g}; worst: loss {:.2g}, logits {:.2g}, grad L2 {:.2g} ({}), grad max {:.2g} "
                     "({}), key-bias noise {:.2g}, step losses {:.2g}; {} failures",
                     what, b.forward, b.backward, o.loss, o.logits, o.grad_l2, o.grad_l2_name, o.grad_max, o.grad_max_name,
                     o.key_bias, o.step_loss, o.failures.size());
}

}  // namespace ptsim::test::steps
