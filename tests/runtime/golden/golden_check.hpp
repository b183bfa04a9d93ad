// tests/runtime/golden/golden_check.hpp — the golden comparison of docs/golden-tests.md as functions of the
// backend: ptsim's results on the golden inputs (golden_run.hpp, any BackendKind) compared with a
// torch_golden.safetensors — losses, logits, every gradient, the 10-step AdamW and NVLAMB losses — under the
// stated fp32 tolerances (their numbers: tests/data/golden/tolerances.json, shared with
// tools/hf_crosscheck.py). Used by test_golden.cpp (the CPU backend, suite cpu) and
// test_golden_cuda.cpp (the CUDA backend, suite gpu). Not here: the inputs (golden_inputs.hpp).
//
// Tolerances (fp32 unit roundoff u = 2^-24 ≈ 6.0e-8). Both sides compute in fp32 with different summation
// orders (Eigen or cuBLAS vs PyTorch's CPU GEMMs; ptsim accumulates row reductions in double), so neither is
// exact and their difference is bounded by the sum of both sides' rounding. A length-K dot product has
// error ≲ √K·u (random-walk rounding) and ≤ K·u (worst case); the longest chain is ~40 ops forward and ~80
// with the backward (2 layers), with K ≤ 256 (FFN; weight gradients sum over M = 128 tokens): √K·depth·u ≈
// 4e-5 forward, 8e-5 backward. A result formed by cancellation (terms much larger than their sum) has its
// relative error amplified by Σ|terms| / |Σ terms|; the NSP bias gradient, Σ over 4 rows of p − y ≈ ±0.1
// each summing to 1e-3, is the extreme case here (~100×).
//   * losses: |Δ| ≤ 1e-5 relative. Measured worst (CPU backend) 8.8e-8 (BERT), 8.6e-8 (GPT-2).
//   * logits, per tensor: max |Δ| ≤ 1e-4 · max |ref|. Measured worst 2.1e-6 (BERT), 7.1e-7 (GPT-2).
//   * gradients, per tensor: max |Δ| ≤ 1e-3 · max |ref| and ‖Δ‖₂ ≤ 3e-4 · ‖ref‖₂ (the backward bound with
//     room for cancellation). Measured worst 3.9e-5 / 3.3e-5, on cls.seq_relationship.bias; every other
//     BERT tensor ≤ 4e-6; GPT-2's worst 1.2e-6. For scale: on that NSP bias PyTorch's own fp32 result is
//     2.3e-5 from its fp64 result, ptsim's 1.6e-5 (tools/torch_reference.py --dtype float64).
//   * attention key biases are the exception: exactly 0 in exact arithmetic (see check_key_bias).
//   * 10-step losses: |Δ| ≤ 1e-5 relative, AdamW and NVLAMB. Measured worst 3.5e-7 (BERT), 1.6e-7
//     (GPT-2). The optimizers turn gradient rounding into weight differences (Adam's m̂/√v̂ is ~sign(g) at
//     step 1, so an element whose gradient is pure noise, such as a key bias, moves by ±η either way — which
//     cannot change the loss, by softmax's shift invariance), and 10 steps accumulate the rest.
// The same bounds hold for the CUDA backend: cuBLAS in fp32 (CUBLAS_COMPUTE_32F, no TF32: the golden graph
// is fp32) is one more fp32 summation order, inside the same √K·depth·u argument.
#pragma once
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "core/data_path.hpp"
#include "core/json_reader.hpp"
#include "runtime/checkpoint/safetensors.hpp"
#include "runtime/exec/executor.hpp"
#include "runtime/optim/optimizer.hpp"
#include "tests/runtime/golden/golden_inputs.hpp"
#include "tests/runtime/golden/golden_run.hpp"

namespace ptsim::test::golden {


// The numbers live in tests/data/golden/tolerances.json, which tools/hf_crosscheck.py reads too (one place
// for both checks); read once, strictly (every field, no unknown keys).
struct Tolerances {
  double loss_rel = 0;
  double logit_max = 0;       // × max |ref| of the tensor
  double grad_max = 0;        // × max |ref| of the tensor
  double grad_l2 = 0;         // × ‖ref‖₂ of the tensor
  double key_bias_noise = 0;  // × max |∂L/∂W_key| of the layer (check_key_bias)
  double step_loss_rel = 0;
};
inline Tolerances read_tolerances(const std::string& path) {
  const core::Json j = core::load_json_file(path);
  core::JsonReader r(j, path);
  if (r.require_string("format") != "ptsim.golden_tolerances.v1")
    throw core::InputError(path + ": format must be ptsim.golden_tolerances.v1");
  (void)r.require_string("derived_in");
  Tolerances t;
  t.loss_rel = r.require_positive("loss_rel");
  t.logit_max = r.require_positive("logit_max");
  t.grad_max = r.require_positive("grad_max");
  t.grad_l2 = r.require_positive("grad_l2");
  t.key_bias_noise = r.require_positive("key_bias_noise");
  t.step_loss_rel = r.require_positive("step_loss_rel");
  r.finish();
  return t;
}
inline const Tolerances& tolerances() {
  static const Tolerances t = read_tolerances(core::data_path("tests/data/golden/tolerances.json"));
  return t;
}


struct Golden {
  runtime::SafetensorsFile file;
  std::vector<float> at(const std::string& name) const { return file.at(name).to_f32(file.source); }
  double scalar(const std::string& name) const { return at(name).at(0); }
};
inline Golden shipped_golden(const Case& c) {
  return {runtime::read_safetensors(data_dir(c) + "/torch_golden.safetensors")};
}

// Worst errors over the comparisons of one run, for the MESSAGE lines.
struct Worst {
  double loss_rel = 0, logit = 0, grad_max = 0, grad_l2 = 0, key_bias_noise = 0;
  std::string grad_max_name, grad_l2_name;
};

inline void check_loss(const std::string& what, double got, double want, double tol, double& worst) {
  const double rel = std::abs(got - want) / std::abs(want);
  worst = std::max(worst, rel);
  CHECK_MESSAGE(rel <= tol, what << ": ptsim " << got << ", torch " << want << " (relative error " << rel << ")");
}

struct TensorError {
  double max_rel = 0, l2_rel = 0;  // max |Δ| / max |ref|, ‖Δ‖₂ / ‖ref‖₂
};
inline TensorError tensor_error(const std::vector<float>& got, const std::vector<float>& want) {
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
// row, and softmax is invariant to that (PyTorch in fp64 gives ~4e-18) — so both sides hold only rounding
// noise and their relative difference is ~1 by nature. Checked instead: on both sides |g| ≤ key_bias_noise ×
// max |∂L/∂W_k| of the same layer (the noise is the cancellation residue of terms of the key gradients'
// size, ≈ √M·u ≈ 1e-6 relative for M = 128 tokens: 100× margin, and still 1000× below a real gradient).
inline bool is_key_bias(const std::string& name) { return name.ends_with(".key.bias"); }
inline std::string key_weight_of(const std::string& bias) { return bias.substr(0, bias.size() - 4) + "weight"; }
inline void check_key_bias(const std::string& name, const std::vector<float>& got, const std::vector<float>& want,
                    const std::vector<float>& key_weight_grad, Worst& w) {
  double scale = 0, noise = 0;
  for (float x : key_weight_grad) scale = std::max(scale, std::abs(static_cast<double>(x)));
  for (size_t i = 0; i < got.size(); ++i)
    noise = std::max({noise, std::abs(static_cast<double>(got[i])), std::abs(static_cast<double>(want[i]))});
  w.key_bias_noise = std::max(w.key_bias_noise, noise / scale);
  CHECK_MESSAGE(noise <= tolerances().key_bias_noise * scale, "grad " << name << " (exactly 0 in exact arithmetic): max |g| = "
                                                        << noise << ", key weight gradient scale " << scale);
}

inline Worst compare_forward(const Forward& f, const Golden& g) {
  Worst w;
  for (const auto& [name, value] : f.scalars) check_loss(name, value, g.scalar(name), tolerances().loss_rel, w.loss_rel);
  for (const auto& [tensor_name, value] : f.tensors) {
    const std::string& name = tensor_name;  // not the binding in CHECK_MESSAGE: clang 14 cannot capture one
    const TensorError e = tensor_error(value, g.at(name));
    w.logit = std::max(w.logit, e.max_rel);
    CHECK_MESSAGE(e.max_rel <= tolerances().logit_max, name << ": max |Δ| / max |ref| = " << e.max_rel);
  }
  size_t grads_in_golden = 0;
  for (const auto& t : g.file.tensors) grads_in_golden += t.name.rfind("grad.", 0) == 0;
  CHECK(grads_in_golden == f.grads.size());  // every parameter's gradient is compared
  for (const auto& [grad_name, grad] : f.grads) {
    const std::string& name = grad_name;  // not the binding in CHECK_MESSAGE: clang 14 cannot capture one
    if (is_key_bias(name)) {
      check_key_bias(name, grad, g.at("grad." + name), f.grads.at(key_weight_of(name)), w);
      continue;
    }
    const TensorError e = tensor_error(grad, g.at("grad." + name));
    if (e.max_rel > w.grad_max) w.grad_max = e.max_rel, w.grad_max_name = name;
    if (e.l2_rel > w.grad_l2) w.grad_l2 = e.l2_rel, w.grad_l2_name = name;
    CHECK_MESSAGE(e.max_rel <= tolerances().grad_max, "grad " << name << ": max |Δ| / max |ref| = " << e.max_rel);
    CHECK_MESSAGE(e.l2_rel <= tolerances().grad_l2, "grad " << name << ": ‖Δ‖ / ‖ref‖ = " << e.l2_rel);
  }
  return w;
}

inline double compare_steps(const Inputs& in, const Golden& g, runtime::BackendKind backend) {
  CHECK(g.file.metadata.at("steps") == std::to_string(kSteps));
  CHECK(std::stod(g.file.metadata.at("adamw_lr")) == kAdamwLr);
  CHECK(std::stod(g.file.metadata.at("lamb_lr")) == kLambLr);
  double worst = 0;
  for (auto [kind, lr, losses_key] : {std::tuple{models::OptimizerKind::adamw, kAdamwLr, "adamw.losses"},
                                      std::tuple{models::OptimizerKind::lamb, kLambLr, "lamb.losses"}}) {
    const char* key = losses_key;  // not the binding in CHECK_MESSAGE: clang 14 cannot capture one
    const std::vector<double> got = ptsim_step_losses(in, kind, lr, kSteps, backend);
    const std::vector<float> want = g.at(key);
    REQUIRE(want.size() == got.size());
    for (size_t i = 0; i < got.size(); ++i) check_loss(key, got[i], want[i], tolerances().step_loss_rel, worst);
    // The run must train, or equal losses would prove nothing about the update.
    CHECK_MESSAGE(want.back() < 0.95 * want.front(), key << ": " << want.front() << " -> " << want.back());
  }
  return worst;
}

inline void report(const std::string& what, const Worst& w) {
  MESSAGE(what << ": worst relative loss error " << w.loss_rel << "; logits " << w.logit << "; gradient max-norm "
               << w.grad_max << " (" << w.grad_max_name << "), L2 " << w.grad_l2 << " (" << w.grad_l2_name
               << "); key-bias noise / key-weight gradient " << w.key_bias_noise);
}

}  // namespace ptsim::test::golden
