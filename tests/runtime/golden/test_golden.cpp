// tests/runtime/golden/test_golden.cpp — ptsim against PyTorch (docs/golden-tests.md), in the manner of
// llm.c's test_gpt2: the same starting weights and batch (tests/data/golden/bert/, golden_bert.hpp) through
// ptsim's executor and optimizers and through tools/torch_reference.py, compared on
//   * the MLM loss, the NSP loss and their sum, the MLM logits of every prediction slot, the NSP logits;
//   * the gradient of every parameter tensor;
//   * the 11 losses of 10 steps of AdamW and of NVLAMB (constant learning rate);
// plus: the inputs on disk are what make_golden_inputs makes; the checkpoint names and shapes are exactly
// transformers' BertForPreTraining parameters (strict: nothing missing, nothing extra); the weight-decay
// exclusions are the HF/NVIDIA rule. With /usr/bin/python3 and torch installed, the golden is also
// regenerated live and compared (skipped with a message otherwise).
//
// Tolerances (fp32 unit roundoff u = 2^-24 ≈ 6.0e-8). Both sides compute in fp32 with different summation
// orders (Eigen vs PyTorch's CPU GEMMs; ptsim accumulates row reductions in double), so neither is exact and
// their difference is bounded by the sum of both sides' rounding. A length-K dot product has error ≲ √K·u
// (random-walk rounding) and ≤ K·u (worst case); the longest chain is ~40 ops forward and ~80 with the
// backward (2 layers), with K ≤ 256 (FFN; weight gradients sum over M = 128 tokens): √K·depth·u ≈ 4e-5
// forward, 8e-5 backward. A result formed by cancellation (terms much larger than their sum) has its
// relative error amplified by Σ|terms| / |Σ terms|; the NSP bias gradient, Σ over 4 rows of p − y ≈ ±0.1
// each summing to 1e-3, is the extreme case here (~100×).
//   * losses: |Δ| ≤ 1e-5 relative. Measured worst 8.8e-8.
//   * MLM and NSP logits, per tensor: max |Δ| ≤ 1e-4 · max |ref|. Measured worst 2.1e-6.
//   * gradients, per tensor: max |Δ| ≤ 1e-3 · max |ref| and ‖Δ‖₂ ≤ 3e-4 · ‖ref‖₂ (the backward bound with
//     room for cancellation). Measured worst 3.9e-5 / 3.3e-5, on cls.seq_relationship.bias; every other
//     tensor ≤ 4e-6. For scale: PyTorch's own fp32 result is 2.3e-5 from its fp64 result on that tensor, and
//     ptsim's 1.6e-5 (tools/torch_reference.py --dtype float64).
//   * attention key biases are the exception: exactly 0 in exact arithmetic (see check_key_bias).
//   * 10-step losses: |Δ| ≤ 1e-5 relative, AdamW and NVLAMB. Measured worst 3.5e-7. The optimizers turn
//     gradient rounding into weight differences (Adam's m̂/√v̂ is ~sign(g) at step 1, so an element whose
//     gradient is pure noise, such as a key bias, moves by ±η either way — which cannot change the loss,
//     by softmax's shift invariance), and 10 steps accumulate the rest.
// Each test prints its measured worst errors (MESSAGE); docs/golden-tests.md lists them.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "core/json_reader.hpp"
#include "runtime/checkpoint/safetensors.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/optim/optimizer.hpp"
#include "runtime/train/trainer.hpp"
#include "tests/runtime/golden/golden_bert.hpp"
#include "tests/runtime/golden/hf_bert_layout.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ptsim;
namespace golden = ptsim::test::golden;
namespace fs = std::filesystem;

namespace {

constexpr double kLossRelTol = 1e-5;
constexpr double kLogitTol = 1e-4;        // × max |ref| of the tensor
constexpr double kGradMaxTol = 1e-3;      // × max |ref| of the tensor
constexpr double kGradL2Tol = 3e-4;       // × ‖ref‖₂ of the tensor
constexpr double kStepLossRelTol = 1e-5;

// What ptsim computes on the golden inputs.
struct Forward {
  double loss = 0, mlm = 0, nsp = 0;
  std::vector<float> mlm_logits;  // [B·P, vocab] (padding classes dropped)
  std::vector<float> nsp_logits;  // [B, 2]
  std::map<std::string, std::vector<float>> grads;  // by parameter name, checkpoint shape
};

struct Inputs {
  runtime::SafetensorsFile model;
  golden::Batch batch;
};

const Inputs& shipped_inputs() {
  static const Inputs in{runtime::read_safetensors(golden::data_dir() + "/model.safetensors"),
                         golden::read_batch(golden::data_dir() + "/batch.safetensors")};
  return in;
}

struct Session {
  models::TaskGraph graph;
  std::unique_ptr<runtime::Executor> ex;
  Forward captured;
};

// An executor on the golden graph with the weights and batch loaded, capturing the losses and logits of
// the forward pass through ExecutorOptions::after_op (the plan reuses their bytes later in the micro-step).
std::unique_ptr<Session> open_session(const Inputs& in, models::OptimizerKind kind) {
  auto s = std::make_unique<Session>();
  s->graph = models::build_task_graph(golden::bert_spec(), golden::bert_recipe(kind));
  runtime::ExecutorOptions options;
  options.time_ops = false;
  Session* raw = s.get();
  options.after_op = [raw](const models::Op& op) {
    if (op.phase != models::Phase::forward) return;
    auto& ex = *raw->ex;
    const int out = op.outputs.at(0);
    if (op.name == "cls.predictions.loss") raw->captured.mlm = ex.f32(out)[0];
    if (op.name == "cls.seq_relationship.loss") raw->captured.nsp = ex.f32(out)[0];
    if (op.name == "cls.predictions.decoder") {  // [P, padded vocab] → [P, vocab]
      const auto& shape = raw->graph.tensor(out).shape;
      const int64_t vocab = raw->graph.model.vocab_size;
      std::span<const float> z = ex.f32(out);
      raw->captured.mlm_logits.clear();
      for (int64_t r = 0; r < shape[0]; ++r)
        raw->captured.mlm_logits.insert(raw->captured.mlm_logits.end(), z.begin() + r * shape[1],
                                        z.begin() + r * shape[1] + vocab);
    }
    if (op.name == "cls.seq_relationship") {
      std::span<const float> z = ex.f32(out);
      raw->captured.nsp_logits.assign(z.begin(), z.end());
    }
  };
  s->ex = std::make_unique<runtime::Executor>(s->graph, options);
  golden::load_model(*s->ex, in.model);
  golden::fill_inputs(*s->ex, in.batch);
  return s;
}

Forward ptsim_forward(const Inputs& in) {
  auto s = open_session(in, models::OptimizerKind::adamw);
  s->captured.loss = s->ex->run_micro_step(1, 0);
  Forward f = s->captured;
  for (const models::Parameter& p : s->graph.params) {
    std::span<const float> g = s->ex->f32(p.gradient);
    f.grads[p.name].assign(g.begin(), g.begin() + golden::numel(golden::saved_shape(s->graph, p)));
  }
  return f;
}

// The loss before each of `steps` optimizer steps, then after the last (steps + 1 values).
std::vector<double> ptsim_step_losses(const Inputs& in, models::OptimizerKind kind, double lr, int steps) {
  auto s = open_session(in, kind);
  auto opt = runtime::make_optimizer(runtime::default_optimizer_config(kind), s->ex->param_slots());
  std::vector<double> losses;
  for (int step = 1; step <= steps; ++step) {
    losses.push_back(s->ex->run_micro_step(step, 0));
    s->ex->run_step_tail(nullptr, opt.get(), lr);
    REQUIRE_FALSE(s->ex->last_step_skipped());
  }
  losses.push_back(s->ex->run_micro_step(steps + 1, 0));
  return losses;
}

struct Golden {
  runtime::SafetensorsFile file;
  std::vector<float> at(const std::string& name) const { return file.at(name).to_f32(file.source); }
  double scalar(const std::string& name) const { return at(name).at(0); }
};

// Worst errors over the comparisons of one run, for the MESSAGE lines.
struct Worst {
  double loss_rel = 0, logit = 0, grad_max = 0, grad_l2 = 0, key_bias_noise = 0;
  std::string grad_max_name, grad_l2_name;
};

void check_loss(const char* what, double got, double want, double tol, double& worst) {
  const double rel = std::abs(got - want) / std::abs(want);
  worst = std::max(worst, rel);
  CHECK_MESSAGE(rel <= tol, what << ": ptsim " << got << ", torch " << want << " (relative error " << rel << ")");
}

struct TensorError {
  double max_rel = 0, l2_rel = 0;  // max |Δ| / max |ref|, ‖Δ‖₂ / ‖ref‖₂
};
TensorError tensor_error(const std::vector<float>& got, const std::vector<float>& want) {
  REQUIRE(got.size() == want.size());
  double max_ref = 0, max_diff = 0, ref2 = 0, diff2 = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double d = static_cast<double>(got[i]) - want[i];
    max_ref = std::max(max_ref, std::abs(static_cast<double>(want[i])));
    max_diff = std::max(max_diff, std::abs(d));
    ref2 += static_cast<double>(want[i]) * want[i];
    diff2 += d * d;
  }
  return {max_ref > 0 ? max_diff / max_ref : max_diff, ref2 > 0 ? std::sqrt(diff2 / ref2) : std::sqrt(diff2)};
}

// Attention key biases: their exact gradient is 0 — q·b_k adds the same constant to every score of a query
// row, and softmax is invariant to that — so both sides hold only rounding noise (relative errors ~1 are
// expected and meaningless). Checked instead: on both sides |g| ≤ kKeyBiasNoise × max |∂L/∂W_k| of the same
// layer (the noise is the cancellation residue of terms of the key gradients' size, ≈ √M·u ≈ 1e-6 relative
// for M = 128 tokens; the bound leaves 100× margin and is still 1000× below a real gradient).
constexpr double kKeyBiasNoise = 1e-4;
bool is_key_bias(const std::string& name) { return name.ends_with(".attention.self.key.bias"); }
std::string key_weight_of(const std::string& bias) { return bias.substr(0, bias.size() - 4) + "weight"; }
void check_key_bias(const std::string& name, const std::vector<float>& got, const std::vector<float>& want,
                    const std::vector<float>& key_weight_grad, Worst& w) {
  double scale = 0, noise = 0;
  for (float x : key_weight_grad) scale = std::max(scale, std::abs(static_cast<double>(x)));
  for (size_t i = 0; i < got.size(); ++i) noise = std::max({noise, std::abs(static_cast<double>(got[i])), std::abs(static_cast<double>(want[i]))});
  w.key_bias_noise = std::max(w.key_bias_noise, noise / scale);
  CHECK_MESSAGE(noise <= kKeyBiasNoise * scale, "grad " << name << " (exactly 0 in exact arithmetic): max |g| = " << noise
                                                        << ", key weight gradient scale " << scale);
}

Worst compare_forward(const Forward& f, const Golden& g) {
  Worst w;
  check_loss("loss", f.loss, g.scalar("loss"), kLossRelTol, w.loss_rel);
  check_loss("MLM loss", f.mlm, g.scalar("mlm_loss"), kLossRelTol, w.loss_rel);
  check_loss("NSP loss", f.nsp, g.scalar("nsp_loss"), kLossRelTol, w.loss_rel);
  for (const char* name : {"mlm_logits", "nsp_logits"}) {
    const TensorError e = tensor_error(name == std::string("mlm_logits") ? f.mlm_logits : f.nsp_logits, g.at(name));
    w.logit = std::max(w.logit, e.max_rel);
    CHECK_MESSAGE(e.max_rel <= kLogitTol, name << ": max |Δ| / max |ref| = " << e.max_rel);
  }
  size_t grads_in_golden = 0;
  for (const auto& t : g.file.tensors) grads_in_golden += t.name.rfind("grad.", 0) == 0;
  CHECK(grads_in_golden == f.grads.size());  // every parameter's gradient is compared
  for (const auto& [name, grad] : f.grads) {
    if (is_key_bias(name)) {
      check_key_bias(name, grad, g.at("grad." + name), f.grads.at(key_weight_of(name)), w);
      continue;
    }
    const TensorError e = tensor_error(grad, g.at("grad." + name));
    if (e.max_rel > w.grad_max) w.grad_max = e.max_rel, w.grad_max_name = name;
    if (e.l2_rel > w.grad_l2) w.grad_l2 = e.l2_rel, w.grad_l2_name = name;
    CHECK_MESSAGE(e.max_rel <= kGradMaxTol, "grad " << name << ": max |Δ| / max |ref| = " << e.max_rel);
    CHECK_MESSAGE(e.l2_rel <= kGradL2Tol, "grad " << name << ": ‖Δ‖ / ‖ref‖ = " << e.l2_rel);
  }
  return w;
}

double compare_steps(const Inputs& in, const Golden& g) {
  CHECK(g.file.metadata.at("steps") == std::to_string(golden::kSteps));
  CHECK(std::stod(g.file.metadata.at("adamw_lr")) == golden::kAdamwLr);
  CHECK(std::stod(g.file.metadata.at("lamb_lr")) == golden::kLambLr);
  double worst = 0;
  for (auto [kind, lr, key] : {std::tuple{models::OptimizerKind::adamw, golden::kAdamwLr, "adamw.losses"},
                               std::tuple{models::OptimizerKind::lamb, golden::kLambLr, "lamb.losses"}}) {
    const std::vector<double> got = ptsim_step_losses(in, kind, lr, golden::kSteps);
    const std::vector<float> want = g.at(key);
    REQUIRE(want.size() == got.size());
    for (size_t i = 0; i < got.size(); ++i)
      check_loss(key, got[i], want[i], kStepLossRelTol, worst);
    // The run must train, or equal losses would prove nothing about the update.
    CHECK_MESSAGE(want.back() < 0.95 * want.front(), key << ": " << want.front() << " -> " << want.back());
  }
  return worst;
}

void report(const std::string& what, const Worst& w, double steps) {
  MESSAGE(what << ": worst relative loss error " << w.loss_rel << "; logits " << w.logit << "; gradient max-norm "
               << w.grad_max << " (" << w.grad_max_name << "), L2 " << w.grad_l2 << " (" << w.grad_l2_name
               << "); key-bias noise / key-weight gradient " << w.key_bias_noise << "; 10-step losses " << steps);
}

bool python_has_torch() {
  return std::system("/usr/bin/python3 -c 'import torch, numpy' > /dev/null 2>&1") == 0;
}

}  // namespace

TEST_CASE("golden inputs: the shipped weights and batch are what make_golden_inputs writes") {
  test::TempDir dir("golden_inputs");
  const models::TaskGraph g = models::build_task_graph(golden::bert_spec(), golden::bert_recipe());
  runtime::ExecutorOptions options;
  options.time_ops = false;
  runtime::Executor ex(g, options);
  golden::make_weights(ex);
  golden::write_model((dir.path / "model.safetensors").string(), ex);
  golden::write_batch((dir.path / "batch.safetensors").string(), golden::make_batch(g.model.vocab_size));
  auto bytes = [](const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  for (const char* f : {"model.safetensors", "batch.safetensors"})
    CHECK_MESSAGE(bytes(dir.path / f) == bytes(fs::path(golden::data_dir()) / f),
                  f << " differs from what ptsim makes now: regenerate the golden (docs/golden-tests.md)");
  const core::Json config = core::load_json_file(golden::data_dir() + "/config.json");
  CHECK(config == runtime::hf_bert_config(g.model));
}

TEST_CASE("golden inputs: checkpoint names and shapes are exactly transformers' BertForPreTraining parameters") {
  const models::ModelSpec m = golden::bert_spec();
  const auto expected = test::hf_bert_for_pretraining_parameters(
      {m.vocab_size, m.hidden_size, m.num_layers, m.intermediate_size, m.max_position_embeddings, m.type_vocab_size});
  // The graph's parameters, with the shapes a checkpoint stores.
  const models::TaskGraph g = models::build_task_graph(m, golden::bert_recipe());
  std::map<std::string, std::vector<int64_t>> graph_params;
  for (const models::Parameter& p : g.params) graph_params[p.name] = golden::saved_shape(g, p);
  CHECK(graph_params == expected);
  for (const auto& [name, shape] : expected) CHECK_MESSAGE(graph_params.count(name) == 1, "missing " << name);
  for (const auto& [name, shape] : graph_params) CHECK_MESSAGE(expected.count(name) == 1, "unexpected " << name);
  // The shipped file, which tools/torch_reference.py loads strictly.
  std::map<std::string, std::vector<int64_t>> file;
  for (const auto& t : shipped_inputs().model.tensors) {
    CHECK(t.dtype == runtime::SafetensorsDtype::f32);
    file[t.name] = t.shape;
  }
  CHECK(file == expected);
  CHECK(shipped_inputs().model.metadata.at("format") == "pt");
  // Weight decay: everything but biases and LayerNorm parameters (transformers' and NVIDIA's BERT
  // scripts, no_decay = ["bias", "LayerNorm"]), as tools/torch_reference.py's no_decay() applies it.
  for (const models::Parameter& p : g.params) {
    const bool hf_no_decay = p.name.find("bias") != std::string::npos || p.name.find("LayerNorm") != std::string::npos;
    CHECK_MESSAGE(p.decay == !hf_no_decay, p.name);
  }
}

TEST_CASE("golden: ptsim's losses, logits and every gradient match PyTorch") {
  const Golden g{runtime::read_safetensors(golden::data_dir() + "/torch_golden.safetensors")};
  CHECK(g.file.metadata.at("dtype") == "float32");
  const Worst w = compare_forward(ptsim_forward(shipped_inputs()), g);
  report("ptsim vs shipped torch golden (forward/backward)", w, 0);
}

TEST_CASE("golden: 10 steps of AdamW and of NVLAMB give PyTorch's losses") {
  const Golden g{runtime::read_safetensors(golden::data_dir() + "/torch_golden.safetensors")};
  const double worst = compare_steps(shipped_inputs(), g);
  MESSAGE("ptsim vs shipped torch golden: worst relative error of the 10-step losses " << worst);
}

TEST_CASE("golden live: PyTorch regenerates the golden and ptsim matches it") {
  if (!python_has_torch()) {
    MESSAGE("skipped: /usr/bin/python3 cannot import torch and numpy (Debian: apt-get install python3-torch "
            "python3-numpy); the shipped golden was still compared above");
    return;
  }
  test::TempDir dir("golden_live");
  const std::string out = (dir.path / "torch_golden.safetensors").string();
  const std::string cmd = "/usr/bin/python3 '" + core::data_path("tools/torch_reference.py") + "' --dir '" +
                          golden::data_dir() + "' --out '" + out + "' > '" + (dir.path / "log").string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  std::ifstream log(dir.path / "log");
  const std::string text((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
  REQUIRE_MESSAGE(rc == 0, "tools/torch_reference.py failed:\n" << text);
  const Golden live{runtime::read_safetensors(out)};
  const Worst w = compare_forward(ptsim_forward(shipped_inputs()), live);
  const double steps = compare_steps(shipped_inputs(), live);
  report("ptsim vs live torch", w, steps);
  // This machine's torch against the shipped file: same tolerances (another BLAS or torch version sums in
  // another order, within the same fp32 bounds).
  const Golden shipped{runtime::read_safetensors(golden::data_dir() + "/torch_golden.safetensors")};
  for (const auto& t : shipped.file.tensors) {
    if (is_key_bias(t.name)) continue;  // noise on both sides; bounded by check_key_bias above
    const bool grad = t.name.rfind("grad.", 0) == 0, logits = t.name.ends_with("_logits");
    const TensorError e = tensor_error(live.at(t.name), shipped.at(t.name));
    CHECK_MESSAGE(e.max_rel <= (grad ? kGradMaxTol : logits ? kLogitTol : kStepLossRelTol),
                  t.name << ": live torch vs shipped golden " << e.max_rel);
  }
}

TEST_CASE("golden live: tools/torch_reference.py refuses a checkpoint whose keys or shapes differ") {
  if (!python_has_torch()) {
    MESSAGE("skipped: /usr/bin/python3 cannot import torch and numpy");
    return;
  }
  const runtime::SafetensorsFile& model = shipped_inputs().model;
  auto run_with = [&](const std::vector<runtime::SafetensorsView>& views, const char* tag) {
    test::TempDir dir(tag);
    for (const char* f : {"config.json", "batch.safetensors"}) fs::copy_file(fs::path(golden::data_dir()) / f, dir.path / f);
    runtime::write_safetensors((dir.path / "model.safetensors").string(), views, {{"format", "pt"}});
    const std::string cmd = "/usr/bin/python3 '" + core::data_path("tools/torch_reference.py") + "' --dir '" +
                            dir.path.string() + "' --out '" + (dir.path / "out.safetensors").string() + "' > '" +
                            (dir.path / "log").string() + "' 2>&1";
    const int rc = std::system(cmd.c_str());
    std::ifstream log(dir.path / "log");
    return std::pair{rc, std::string((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>())};
  };
  auto views_of = [&](const std::string& skip, const std::string& rename) {
    std::vector<runtime::SafetensorsView> v;
    for (const auto& t : model.tensors) {
      if (t.name == skip) continue;
      v.push_back({t.name == rename ? t.name + "_x" : t.name, t.dtype, t.shape, t.data});
    }
    return v;
  };
  const auto [rc_missing, missing] = run_with(views_of("bert.pooler.dense.bias", ""), "golden_missing");
  CHECK(rc_missing != 0);
  CHECK_MESSAGE(missing.find("missing: bert.pooler.dense.bias") != std::string::npos, missing);
  const auto [rc_renamed, renamed] = run_with(views_of("", "cls.seq_relationship.weight"), "golden_renamed");
  CHECK(rc_renamed != 0);
  CHECK_MESSAGE(renamed.find("unexpected: cls.seq_relationship.weight_x") != std::string::npos, renamed);
}
