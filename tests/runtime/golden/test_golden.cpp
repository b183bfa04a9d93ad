// tests/runtime/golden/test_golden.cpp — ptsim against PyTorch (docs/golden-tests.md), in the manner of
// llm.c's test_gpt2: the same starting weights and batch (tests/data/golden/<bert|gpt2>/, golden_inputs.hpp)
// through ptsim's executor and optimizers and through tools/torch_reference.py, compared on
//   * the losses (BERT: total, MLM, NSP; GPT-2: the LM loss) and logits (BERT: the MLM logits of every
//     prediction slot and the NSP logits; GPT-2: every position of the first sequence);
//   * the gradient of every parameter tensor;
//   * the 11 losses of 10 steps of AdamW and of NVLAMB (constant learning rate);
// plus: the inputs on disk are what make_golden_inputs makes; BERT's checkpoint names and shapes are exactly
// transformers' BertForPreTraining parameters (strict: nothing missing, nothing extra); the weight-decay
// exclusions are the HF/NVIDIA rule. With /usr/bin/python3 and torch installed, the golden is also
// regenerated live and compared (skipped with a message otherwise).
//
// The comparison and its tolerances (derived there) are golden_check.hpp, shared with the CUDA run
// (test_golden_cuda.cpp, suite gpu).
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
#include "tests/runtime/golden/golden_check.hpp"
#include "tests/runtime/golden/golden_inputs.hpp"
#include "tests/runtime/golden/hf_bert_layout.hpp"
#include "tests/support/temp_dir.hpp"

using namespace ptsim;
namespace golden = ptsim::test::golden;
namespace fs = std::filesystem;
using namespace ptsim::test::golden;  // the comparison (golden_check.hpp)

namespace {

constexpr runtime::BackendKind kCpu = runtime::BackendKind::cpu;

bool python_has_torch() {
  return std::system("/usr/bin/python3 -c 'import torch, numpy' > /dev/null 2>&1") == 0;
}

// Runs tools/torch_reference.py on DIR; returns (exit status, output).
std::pair<int, std::string> run_reference(const fs::path& dir, const fs::path& out) {
  const fs::path log = out.string() + ".log";
  const std::string cmd = "/usr/bin/python3 '" + core::data_path("tools/torch_reference.py") + "' --dir '" +
                          dir.string() + "' --out '" + out.string() + "' > '" + log.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  return {rc, read_text(log)};
}

}  // namespace

TEST_CASE("golden inputs: the shipped weights, batch and config are what make_golden_inputs writes") {
  for (const golden::Case& c : cases()) {
    CAPTURE(c.name);
    test::TempDir dir("golden_inputs");
    const models::TaskGraph g = models::build_task_graph(c.spec, golden::recipe(c));
    runtime::ExecutorOptions options;
    options.time_ops = false;
    runtime::Executor ex(g, options);
    golden::make_weights(ex);
    golden::write_model((dir.path / "model.safetensors").string(), ex);
    golden::write_batch((dir.path / "batch.safetensors").string(), golden::make_batch(c));
    // The batch is integer hashing only: byte-identical everywhere.
    CHECK_MESSAGE(read_text(dir.path / "batch.safetensors") == read_text(fs::path(golden::data_dir(c)) / "batch.safetensors"),
                  c.name << "/batch.safetensors differs from what ptsim makes now: regenerate (docs/golden-tests.md)");
    // The weights go through std::log/std::cos (Box–Muller), which another libm may round 1 ulp apart:
    // same names and shapes, values within 4 ulps (5e-7 relative) of each other. A changed init differs by O(1).
    const runtime::SafetensorsFile made = runtime::read_safetensors((dir.path / "model.safetensors").string());
    const runtime::SafetensorsFile& shipped = shipped_inputs(c).model;
    REQUIRE(made.tensors.size() == shipped.tensors.size());
    bool identical = true;
    for (size_t i = 0; i < made.tensors.size(); ++i) {
      const auto& a = made.tensors[i];
      const auto& b = shipped.tensors[i];
      REQUIRE_MESSAGE(a.name == b.name, c.name << ": tensor " << i << " is " << a.name << ", shipped " << b.name);
      REQUIRE(a.shape == b.shape);
      identical = identical && a.data == b.data;
      const std::vector<float> x = a.to_f32(made.source), y = b.to_f32(shipped.source);
      for (size_t k = 0; k < x.size(); ++k)
        if (std::abs(x[k] - y[k]) > 5e-7f * std::abs(y[k])) {
          FAIL_CHECK(c.name << ": " << a.name << "[" << k << "] is " << x[k] << ", shipped " << y[k]
                            << ": regenerate the golden (docs/golden-tests.md)");
          break;  // one line per tensor
        }
    }
    MESSAGE(c.name << ": regenerated weights are " << (identical ? "bit-identical to" : "within 4 ulps of")
                   << " the shipped ones");
    const core::Json config = core::load_json_file(golden::data_dir(c) + "/config.json");
    CHECK(config == c.hf_config);
    // ptsim reads the HF config back as the same model.
    const models::ModelSpec back = models::parse_model_json("config.json", config.dump());
    CHECK(back.num_layers == c.spec.num_layers);
    CHECK(back.hidden_size == c.spec.hidden_size);
    CHECK(back.intermediate_size == c.spec.intermediate_size);
    CHECK(back.vocab_size == c.spec.vocab_size);
    CHECK(back.layer_norm_eps == c.spec.layer_norm_eps);
  }
}

TEST_CASE("golden inputs: BERT checkpoint names and shapes are exactly transformers' BertForPreTraining parameters") {
  const golden::Case c = golden::bert_case();
  const models::ModelSpec& m = c.spec;
  const auto expected = test::hf_bert_for_pretraining_parameters(
      {m.vocab_size, m.hidden_size, m.num_layers, m.intermediate_size, m.max_position_embeddings, m.type_vocab_size});
  // The graph's parameters, with the shapes a checkpoint stores.
  const models::TaskGraph g = models::build_task_graph(m, golden::recipe(c));
  std::map<std::string, std::vector<int64_t>> graph_params;
  for (const models::Parameter& p : g.params) graph_params[p.name] = golden::saved_shape(g, p);
  for (const auto& e : expected) CHECK_MESSAGE(graph_params.count(e.first) == 1, "missing " << e.first);
  for (const auto& e : graph_params) CHECK_MESSAGE(expected.count(e.first) == 1, "unexpected " << e.first);
  CHECK(graph_params == expected);
  // The shipped file, which tools/torch_reference.py loads strictly.
  std::map<std::string, std::vector<int64_t>> file;
  for (const auto& t : shipped_inputs(c).model.tensors) {
    CHECK(t.dtype == runtime::SafetensorsDtype::f32);
    file[t.name] = t.shape;
  }
  CHECK(file == expected);
  CHECK(shipped_inputs(c).model.metadata.at("format") == "pt");
}

TEST_CASE("golden inputs: weight decay skips biases and LayerNorm parameters (the HF/NVIDIA rule)") {
  // transformers' and NVIDIA's BERT scripts: no_decay = ["bias", "LayerNorm"]; GPT-2's LayerNorms are ln_*.
  // tools/torch_reference.py's no_decay() applies the same rule to the PyTorch parameters.
  for (const golden::Case& c : cases()) {
    const models::TaskGraph g = models::build_task_graph(c.spec, golden::recipe(c));
    for (const models::Parameter& p : g.params) {
      const bool no_decay = p.name.find("bias") != std::string::npos || p.name.find("LayerNorm") != std::string::npos ||
                            p.name.find(".ln_") != std::string::npos;
      CHECK_MESSAGE(p.decay == !no_decay, p.name);
    }
  }
}

TEST_CASE("golden: ptsim's losses, logits and every gradient match PyTorch") {
  for (const golden::Case& c : cases()) {
    CAPTURE(c.name);
    const Golden g = shipped_golden(c);
    CHECK(g.file.metadata.at("dtype") == "float32");
    report(c.name + ": ptsim vs shipped torch golden", compare_forward(ptsim_forward(shipped_inputs(c), kCpu), g));
  }
}

TEST_CASE("golden: 10 steps of AdamW and of NVLAMB give PyTorch's losses") {
  for (const golden::Case& c : cases()) {
    CAPTURE(c.name);
    const double worst = compare_steps(shipped_inputs(c), shipped_golden(c), kCpu);
    MESSAGE(c.name << ": ptsim vs shipped torch golden: worst relative error of the 10-step losses " << worst);
  }
}

TEST_CASE("golden live: PyTorch regenerates the golden and ptsim matches it") {
  if (!python_has_torch()) {
    MESSAGE("skipped: /usr/bin/python3 cannot import torch and numpy (Debian: apt-get install python3-torch "
            "python3-numpy); the shipped golden was still compared above");
    return;
  }
  for (const golden::Case& c : cases()) {
    CAPTURE(c.name);
    test::TempDir dir("golden_live");
    const fs::path out = dir.path / "torch_golden.safetensors";
    const auto reference = run_reference(golden::data_dir(c), out);
    REQUIRE_MESSAGE(reference.first == 0, "tools/torch_reference.py failed:\n" << reference.second);
    const Golden live{runtime::read_safetensors(out.string())};
    report(c.name + ": ptsim vs live torch", compare_forward(ptsim_forward(shipped_inputs(c), kCpu), live));
    MESSAGE(c.name << ": 10-step losses vs live torch, worst relative error " << compare_steps(shipped_inputs(c), live, kCpu));
    // This machine's torch against the shipped file: same tolerances (another BLAS or torch version sums in
    // another order, within the same fp32 bounds).
    const Golden shipped = shipped_golden(c);
    for (const auto& t : shipped.file.tensors) {
      if (is_key_bias(t.name)) continue;  // noise on both sides; bounded by check_key_bias above
      const bool grad = t.name.rfind("grad.", 0) == 0, logits = t.name.ends_with("logits");
      const TensorError e = tensor_error(live.at(t.name), shipped.at(t.name));
      CHECK_MESSAGE(e.max_rel <= (grad ? tolerances().grad_max : logits ? tolerances().logit_max : tolerances().step_loss_rel),
                    t.name << ": live torch vs shipped golden " << e.max_rel);
    }
  }
}

TEST_CASE("golden live: tools/torch_reference.py refuses a checkpoint whose keys or shapes differ") {
  if (!python_has_torch()) {
    MESSAGE("skipped: /usr/bin/python3 cannot import torch and numpy");
    return;
  }
  for (const golden::Case& c : cases()) {
    CAPTURE(c.name);
    const runtime::SafetensorsFile& model = shipped_inputs(c).model;
    auto run_with = [&](const std::string& skip, const std::string& rename, const std::string& reshape) {
      test::TempDir dir("golden_strict");
      for (const char* f : {"config.json", "batch.safetensors"}) fs::copy_file(fs::path(golden::data_dir(c)) / f, dir.path / f);
      std::vector<runtime::SafetensorsView> views;
      for (const auto& t : model.tensors) {
        if (t.name == skip) continue;
        std::vector<int64_t> shape = t.shape;
        if (t.name == reshape) shape = {golden::numel(shape)};  // same bytes, flattened
        views.push_back({t.name == rename ? t.name + "_x" : t.name, t.dtype, shape, t.data});
      }
      runtime::write_safetensors((dir.path / "model.safetensors").string(), views, {{"format", "pt"}});
      return run_reference(dir.path, dir.path / "out.safetensors");
    };
    const std::string victim = model.tensors.at(3).name, other = model.tensors.at(5).name,
                      matrix = model.tensors.at(0).name;
    // (exit status, log) pairs, not structured bindings: clang 14 cannot capture a binding in CHECK_MESSAGE.
    const auto missing = run_with(victim, "", "");
    CHECK(missing.first != 0);
    CHECK_MESSAGE(missing.second.find("missing: " + victim) != std::string::npos, missing.second);
    const auto renamed = run_with("", other, "");
    CHECK(renamed.first != 0);
    CHECK_MESSAGE(renamed.second.find("unexpected: " + other + "_x") != std::string::npos, renamed.second);
    const auto reshaped = run_with("", "", matrix);
    CHECK(reshaped.first != 0);
    CHECK_MESSAGE(reshaped.second.find("shape: " + matrix) != std::string::npos, reshaped.second);
  }
}
