// tests/runtime/exec/backend_ops_cases.hpp — the cases of the backend-ops harness (test_backend_ops.cpp,
// after ggml's test-backend-ops): one TaskGraph op per case, every op kind the backends run, forward and
// backward, over odd sizes and sequence lengths 1, 7 and 128, each with fresh random inputs and its
// tolerance. A tolerance is c·u·S per output, u = 2^-24 (f32's unit roundoff: the backend under test
// computes in f32, the reference in f64), with c the op's rounding-error bound in units of u and S the
// scale that bound multiplies (which scale, and why c, is stated at each case). Scales:
//   * max_abs: max|reference| of that output (normwise; elementwise maths and normalised outputs),
//   * abs_run: max|reference run on |inputs||| — for outputs that are sums of products of inputs
//     (GEMMs, column and segment sums, means), the Σ|terms| of Higham's γ_k bound |fl(Σt) − Σt| ≤ γ_k·Σ|t|,
//   * custom: computed from the inputs where neither fits (LayerNorm's dgamma, softmax backward, the loss).
// c = 0 means bitwise equality (copies, gathers, the dropout mask).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "models/task_graph.hpp"

namespace ptsim::test::backend_ops {

using models::DType;
using models::Op;
using models::OpKind;
using models::TaskGraph;
using models::Tensor;
using models::TensorRole;

inline constexpr double kUnitRoundoff = 5.9604644775390625e-8;  // 2^-24

enum class Scale { max_abs, abs_run, custom };

struct Tolerance {
  double c = 0;  // the bound in units of u
  Scale scale = Scale::max_abs;
  // Scale::custom: S from the case's initial tensor values (inputs) and the reference outputs.
  std::function<double(const std::vector<std::vector<double>>& values, const std::vector<std::vector<double>>& ref)>
      custom;
};

struct Case {
  std::string label;
  TaskGraph graph;                          // its ops, run in order: one, or a GEMM and the bias_grad it may fuse
  std::vector<std::vector<double>> values;  // [tensor id]: initial values (inputs, and outputs' prior contents)
  std::vector<Tolerance> tolerances;        // [output index]
  const Op& op() const { return graph.ops.front(); }
};

// Builds one case: tensors, their values, then the op.
class CaseBuilder {
 public:
  CaseBuilder(std::string label, uint64_t seed) : rng_(seed) { case_.label = std::move(label); }

  // A float tensor of N(mean, stddev²) values, each rounded to the nearest float so both backends start
  // from identical numbers.
  int normal(const std::string& name, std::vector<int64_t> shape, double stddev = 1.0, double mean = 0.0) {
    const int id = add(name, std::move(shape), DType::f32, TensorRole::activation);
    std::normal_distribution<double> d(mean, stddev);
    for (double& v : case_.values[static_cast<size_t>(id)]) v = static_cast<float>(d(rng_));
    return id;
  }
  // Uniform floats in [lo, hi).
  int uniform(const std::string& name, std::vector<int64_t> shape, double lo, double hi) {
    const int id = add(name, std::move(shape), DType::f32, TensorRole::activation);
    std::uniform_real_distribution<double> d(lo, hi);
    for (double& v : case_.values[static_cast<size_t>(id)]) v = static_cast<float>(d(rng_));
    return id;
  }
  // An i32 (or u8) tensor with value(i) at element i.
  int integers(const std::string& name, std::vector<int64_t> shape, const std::function<int64_t(int64_t)>& value,
               DType dtype = DType::i32) {
    const int id = add(name, std::move(shape), dtype, TensorRole::input);
    auto& v = case_.values[static_cast<size_t>(id)];
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(value(static_cast<int64_t>(i)));
    return id;
  }
  // A float tensor holding `values` (each rounded to the nearest float), e.g. a forward's outputs that a
  // backward case reads.
  int given(const std::string& name, std::vector<int64_t> shape, const std::vector<double>& values) {
    const int id = add(name, std::move(shape), DType::f32, TensorRole::activation);
    auto& v = case_.values[static_cast<size_t>(id)];
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(values.at(i));
    return id;
  }
  // An output the op overwrites: filled with NaN, so an element the kernel forgets shows up.
  int output(const std::string& name, std::vector<int64_t> shape, DType dtype = DType::f32) {
    const int id = add(name, std::move(shape), dtype, TensorRole::activation);
    if (dtype == DType::u8)
      std::fill(case_.values[static_cast<size_t>(id)].begin(), case_.values[static_cast<size_t>(id)].end(), 7.0);
    else
      std::fill(case_.values[static_cast<size_t>(id)].begin(), case_.values[static_cast<size_t>(id)].end(), NAN);
    return id;
  }
  // An output the op adds into (a gradient): random prior contents.
  int accumulator(const std::string& name, std::vector<int64_t> shape) {
    const int id = normal(name, std::move(shape));
    case_.graph.tensors[static_cast<size_t>(id)].role = TensorRole::gradient;
    return id;
  }
  std::mt19937_64& rng() { return rng_; }
  // The values so far, by tensor id (e.g. to compute a forward a backward case reads).
  const std::vector<std::vector<double>>& values() const { return case_.values; }

  // An op run before the one finish() adds (its outputs come first among the case's outputs).
  void leading_op(OpKind kind, std::vector<int> inputs, std::vector<int> outputs, models::OpAttrs attrs) {
    Op op;
    op.kind = kind;
    op.name = case_.label + " (leading)";
    op.inputs = std::move(inputs);
    op.outputs = std::move(outputs);
    op.attrs = std::move(attrs);
    case_.graph.add_op(std::move(op));
  }
  Case finish(OpKind kind, std::vector<int> inputs, std::vector<int> outputs, models::OpAttrs attrs,
              std::vector<Tolerance> tolerances) {
    Op op;
    op.kind = kind;
    op.name = case_.label;
    op.inputs = std::move(inputs);
    op.outputs = std::move(outputs);
    op.attrs = std::move(attrs);
    case_.graph.add_op(std::move(op));
    case_.tolerances = std::move(tolerances);
    return std::move(case_);
  }

 private:
  int add(const std::string& name, std::vector<int64_t> shape, DType dtype, TensorRole role) {
    Tensor t;
    t.name = name;
    t.shape = std::move(shape);
    t.dtype = dtype;
    t.role = role;
    const int id = case_.graph.add_tensor(std::move(t));
    case_.values.resize(static_cast<size_t>(id) + 1);
    case_.values[static_cast<size_t>(id)].assign(static_cast<size_t>(case_.graph.tensor(id).elements()), 0.0);
    return id;
  }
  Case case_;
  std::mt19937_64 rng_;
};

inline Tolerance exact() { return {0, Scale::max_abs, {}}; }
inline Tolerance normwise(double c) { return {c, Scale::max_abs, {}}; }
inline Tolerance sum_bound(double c) { return {c, Scale::abs_run, {}}; }

// Every case of the harness.
std::vector<Case> all_cases();
// The fused attention's cases (backend_ops_attention_cases.cpp).
void add_fused_attention(std::vector<Case>& out);

}  // namespace ptsim::test::backend_ops
