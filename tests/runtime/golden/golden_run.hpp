// tests/runtime/golden/golden_run.hpp — ptsim's side of the golden check (docs/golden-tests.md) on any
// backend: the shipped golden inputs through the executor (forward: losses and logits; backward: every
// gradient, in checkpoint shapes; 10 optimizer steps' losses), and write_ptsim_outputs, which writes them in
// torch_golden.safetensors' layout (what tools/hf_crosscheck.py compares transformers with). No doctest
// here: the comparison is golden_check.hpp; the inputs golden_inputs.hpp.
#pragma once
#include <filesystem>
#include <fstream>
#include <iterator>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "runtime/checkpoint/safetensors.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/golden/golden_inputs.hpp"
#include "tests/support/backend_under_test.hpp"  // defines: make_test_backend

namespace ptsim::test::golden {

inline const std::vector<Case>& cases() {
  static const std::vector<Case> all = {bert_case(), gpt2_case()};
  return all;
}

inline std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What ptsim computes on the golden inputs, named as in torch_golden.safetensors.
struct Forward {
  std::map<std::string, double> scalars;               // loss (+ mlm_loss, nsp_loss)
  std::map<std::string, std::vector<float>> tensors;   // logits
  std::map<std::string, std::vector<float>> grads;     // by parameter name, checkpoint shape
};

struct Inputs {
  Case c;
  runtime::SafetensorsFile model;
  Batch batch;
};

inline const Inputs& shipped_inputs(const Case& c) {
  static std::map<std::string, Inputs> loaded;
  auto it = loaded.find(c.name);
  if (it == loaded.end())
    it = loaded.emplace(c.name, Inputs{c, runtime::read_safetensors(data_dir(c) + "/model.safetensors"),
                                       read_batch(c)})
             .first;
  return it->second;
}

// Rows [0, rows) of a [.., padded vocab] logits tensor, padding classes dropped.
inline std::vector<float> logit_rows(std::span<const float> z, const std::vector<int64_t>& shape, int64_t rows, int64_t vocab) {
  std::vector<float> out;
  for (int64_t r = 0; r < rows; ++r) out.insert(out.end(), z.begin() + r * shape[1], z.begin() + r * shape[1] + vocab);
  return out;
}

struct Session {
  models::TaskGraph graph;
  std::unique_ptr<runtime::Executor> ex;
  Forward captured;
  std::map<std::string, int> loss_parts;  // "mlm_loss" / "nsp_loss" → the cross-entropy's loss tensor

  // The forward's loss parts and logits, read right after their ops (the plan reuses their bytes later).
  void capture(const models::Op& op) {
    if (op.phase != models::Phase::forward) return;
    const int out = op.outputs.at(0);
    const auto& shape = graph.tensor(out).shape;
    const int64_t vocab = graph.model.vocab_size;
    // The loss parts come back as the executor's scalar outputs after the micro-step (loss_parts below).
    if (op.name == "cls.predictions.loss") loss_parts["mlm_loss"] = out;
    if (op.name == "cls.seq_relationship.loss") loss_parts["nsp_loss"] = out;
    if (op.name == "cls.predictions.decoder")
      captured.tensors["mlm_logits"] = logit_rows(ex->read_tensor<float>(out), shape, shape[0], vocab);
    if (op.name == "cls.seq_relationship")
      captured.tensors["nsp_logits"] = logit_rows(ex->read_tensor<float>(out), shape, shape[0], 2);
    if (op.name == "lm_head") captured.tensors["logits"] = logit_rows(ex->read_tensor<float>(out), shape, kSeq, vocab);
  }
};

// An executor on the golden graph with the weights and batch loaded.
inline std::unique_ptr<Session> open_session(const Inputs& in, models::OptimizerKind kind, runtime::BackendKind backend) {
  auto s = std::make_unique<Session>();
  s->graph = models::build_task_graph(in.c.spec, recipe(in.c, kind));
  runtime::ExecutorOptions options;
  options.backend = backend;
  options.time_ops = false;
  Session* raw = s.get();
  options.after_op = [raw](const models::Op& op) { raw->capture(op); };
  s->ex = make_test_executor(s->graph, options);
  load_model(*s->ex, in.model);
  fill_inputs(*s->ex, in.batch);
  return s;
}

inline Forward ptsim_forward(const Inputs& in, runtime::BackendKind backend) {
  auto s = open_session(in, models::OptimizerKind::adamw, backend);
  s->captured.scalars["loss"] = s->ex->run_micro_step(1, 0);
  for (const auto& part : s->loss_parts) s->captured.scalars[part.first] = s->ex->scalar_output(part.second);
  Forward f = s->captured;
  for (const models::Parameter& p : s->graph.params) {
    const std::vector<float> g = s->ex->read_tensor<float>(p.gradient);
    f.grads[p.name].assign(g.begin(), g.begin() + numel(saved_shape(s->graph, p)));
  }
  return f;
}

// The loss before each of `steps` optimizer steps, then after the last (steps + 1 values).
inline std::vector<double> ptsim_step_losses(const Inputs& in, models::OptimizerKind kind, double lr, int steps,
                                      runtime::BackendKind backend) {
  auto s = open_session(in, kind, backend);
  auto opt = runtime::make_optimizer(s->ex->backend(), runtime::default_optimizer_config(kind), s->ex->param_slots());
  std::vector<double> losses;
  for (int step = 1; step <= steps; ++step) {
    losses.push_back(s->ex->run_micro_step(step, 0));
    s->ex->run_step_tail(nullptr, opt.get(), lr);
    if (s->ex->last_step_skipped())
      throw std::runtime_error(in.c.name + ": golden step " + std::to_string(step) + " was skipped (non-finite norm)");
  }
  losses.push_back(s->ex->run_micro_step(steps + 1, 0));
  return losses;
}

// ptsim's results on case `c`'s shipped inputs, run on `backend`, written as tools/torch_reference.py writes
// PyTorch's (F32; loss [+ mlm_loss, nsp_loss], logits, grad.<parameter>, adamw.losses, lamb.losses; metadata
// steps, lrs, dtype float32, backend), so that a PyTorch-side file and ptsim's compare name for name.
inline void write_ptsim_outputs(const std::string& path, const Case& c, runtime::BackendKind backend) {
  const Inputs& in = shipped_inputs(c);
  const Forward f = ptsim_forward(in, backend);
  std::list<std::vector<float>> values;  // alive until written (stable addresses)
  std::vector<runtime::SafetensorsView> views;
  auto add = [&](const std::string& name, std::vector<float> v) {
    values.push_back(std::move(v));
    views.push_back(runtime::safetensors_f32_view(name, values.back(), {static_cast<int64_t>(values.back().size())}));
  };
  for (const auto& s : f.scalars) add(s.first, {static_cast<float>(s.second)});
  for (const auto& t : f.tensors) add(t.first, t.second);
  for (const auto& g : f.grads) add("grad." + g.first, g.second);
  for (const auto kind : {models::OptimizerKind::adamw, models::OptimizerKind::lamb}) {
    const bool adamw = kind == models::OptimizerKind::adamw;
    const std::vector<double> losses = ptsim_step_losses(in, kind, adamw ? kAdamwLr : kLambLr, kSteps, backend);
    add(adamw ? "adamw.losses" : "lamb.losses", std::vector<float>(losses.begin(), losses.end()));
  }
  runtime::write_safetensors(path, views,
                             {{"ptsim_golden", "ptsim"}, {"model_type", c.name}, {"dtype", "float32"},
                              {"backend", backend == runtime::BackendKind::cuda ? "cuda" : "cpu"},
                              {"steps", std::to_string(kSteps)}, {"adamw_lr", std::to_string(kAdamwLr)},
                              {"lamb_lr", std::to_string(kLambLr)}});
}

}  // namespace ptsim::test::golden
