// tests/runtime/exec/optimizer_backend_check.cpp — a backend's multi-tensor optimizer step
// (Backend::optimizer_step) against the CPU reference (runtime/exec/cpu_optimizer.cpp, one thread), bit for
// bit: every rule (AdamW, NVLAMB, LAMB with use_nvlamb = false, LANS, SGD), 3 steps each with new random
// gradients, each step in 3 calls (one per "bucket", as the executor calls it), on bert-tiny's parameter
// tensors (sizes and decay flags from the task graph; the first output line gives their count and sizes) plus
// edge tensors (empty, 1 element, 2^15 − 1, 2^15 + 1, an all-zero gradient, an
// all-zero weight), in one flat buffer per array with 64-byte-aligned tensors as the executor lays them out;
// then one more step on a different list (every other tensor, reversed) so a backend that caches its work
// list per tensor list must notice. Weights and both moments must be bit-identical (the contract:
// docs/executor.md, "The device seam"; why the CUDA kernels can match: docs/cuda-backend.md, "The optimizer").
//   optimizer_backend_check cpu   — A = the CPU backend's in-place pass on 2 threads (suite cpu)
//   optimizer_backend_check cuda  — A = the CUDA backend (suite gpu); exit 77 (meson: skipped) without a
//                                   CUDA build or a GPU
// Before the rules, a self-check proves the comparison can fail: one flipped low bit must be reported.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "models/builder.hpp"
#include "models/model_spec.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/cpu_optimizer.hpp"
#include "runtime/exec/cpu_parallel.hpp"  // defines: kChunkElements
#ifdef PTSIM_HAVE_CUDA
#include "runtime/exec/cuda/cuda_backend.hpp"  // defines: cuda_device_count
#endif

using namespace ptsim;
using runtime::Backend;
using runtime::DeviceBuffer;
using runtime::DeviceSpan;
namespace optim_math = runtime::optim_math;

namespace {

struct TensorShape {
  size_t elements;
  bool decay;
};

constexpr size_t kEdgeTensors = 6;  // appended after the model's tensors by tensor_list

// bert-tiny's parameters (sizes, decay flags) and the kEdgeTensors cases the chunking must get right.
std::vector<TensorShape> tensor_list() {
  models::Recipe r;
  r.precision = models::Precision::fp32;
  r.micro_batch = 2;
  r.seq_len = 32;
  r.include_dropout = false;
  const models::TaskGraph g = models::build_task_graph(models::load_model("bert-tiny"), r);
  std::vector<TensorShape> list;
  for (const models::Parameter& p : g.params) list.push_back({static_cast<size_t>(p.elements), p.decay});
  const size_t C = runtime::cpu::kChunkElements;
  for (TensorShape edge : {TensorShape{0, true}, {1, true}, {C - 1, false}, {C + 1, true}, {300, true}, {300, false}})
    list.push_back(edge);
  return list;
}

// Host values of every array, tensor by tensor (state[1] unused by SGD but kept for a uniform layout).
struct HostArrays {
  std::vector<std::vector<float>> w, g, m, v;
};

// The same tensor list on a backend: one flat buffer per array, each tensor at a 64-byte-aligned offset.
struct BackendArrays {
  Backend& backend;
  DeviceBuffer w, g, m, v;
  std::vector<size_t> offset;  // bytes, per tensor
  BackendArrays(Backend& b, const std::vector<TensorShape>& list) : backend(b) {
    size_t bytes = 0;
    for (const TensorShape& t : list) {
      offset.push_back(bytes);
      bytes += (t.elements * sizeof(float) + 63) / 64 * 64;
    }
    w = b.allocate(bytes);
    g = b.allocate(bytes);
    m = b.allocate(bytes);
    v = b.allocate(bytes);
  }
  ~BackendArrays() {
    for (DeviceBuffer x : {w, g, m, v}) backend.free(x);
  }
  BackendArrays(const BackendArrays&) = delete;
  BackendArrays& operator=(const BackendArrays&) = delete;
  DeviceSpan span(DeviceBuffer b, size_t i, size_t n) const { return {b, offset[i], n * sizeof(float)}; }
  void write(DeviceBuffer b, const std::vector<std::vector<float>>& values) {
    for (size_t i = 0; i < values.size(); ++i)
      if (!values[i].empty()) backend.copy_to_device(span(b, i, values[i].size()), values[i].data());
  }
  std::vector<std::vector<float>> read(DeviceBuffer b, const std::vector<TensorShape>& list) {
    std::vector<std::vector<float>> out(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      out[i].resize(list[i].elements);
      if (!out[i].empty()) backend.copy_to_host(out[i].data(), span(b, i, list[i].elements));
    }
    return out;
  }
  // The step's tensor list: `order` indexes the full list.
  std::vector<runtime::OptimizerTensor> tensors(const std::vector<TensorShape>& list, const std::vector<size_t>& order) {
    std::vector<runtime::OptimizerTensor> out;
    for (size_t i : order) {
      runtime::OptimizerTensor t;
      const size_t n = list[i].elements;
      t.weight = span(w, i, n);
      t.grad = span(g, i, n);
      t.state[0] = span(m, i, n);
      t.state[1] = span(v, i, n);
      t.decay = list[i].decay;
      out.push_back(t);
    }
    return out;
  }
};

// Weights ~ N(0, 0.02) (BERT's init), gradients ~ N(0, 1e-3); the edge tensors' last two: zero gradient,
// zero weight. Fresh gradients per step (`seed`).
std::vector<std::vector<float>> random_arrays(const std::vector<TensorShape>& list, uint64_t seed, double sigma) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, sigma);
  std::vector<std::vector<float>> out(list.size());
  for (size_t i = 0; i < list.size(); ++i)
    for (size_t e = 0; e < list[i].elements; ++e) out[i].push_back(static_cast<float>(normal(rng)));
  return out;
}

// Elements whose bits differ, and the largest difference in units in the last place (as ordered integers).
struct Diff {
  size_t differing = 0, compared = 0;
  int64_t max_ulp = 0;
};
int64_t ordered(float x) {
  int32_t i = 0;
  std::memcpy(&i, &x, 4);
  return i < 0 ? -static_cast<int64_t>(i & 0x7fffffff) : i;
}
void compare(Diff& d, const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t e = 0; e < a[i].size(); ++e) {
      ++d.compared;
      if (std::memcmp(&a[i][e], &b[i][e], 4) != 0) {
        ++d.differing;
        d.max_ulp = std::max(d.max_ulp, std::abs(ordered(a[i][e]) - ordered(b[i][e])));
      }
    }
}

// The reference: the CPU passes on host arrays, one thread.
void reference_step(const optim_math::Hyperparameters& h, const optim_math::StepInputs& in,
                    const std::vector<TensorShape>& list, const std::vector<size_t>& order, HostArrays& x) {
  std::vector<runtime::cpu::HostOptimizerTensor> tensors;
  for (size_t i : order) {
    runtime::cpu::HostOptimizerTensor t;
    t.n = list[i].elements;
    t.decay = list[i].decay;
    t.weight = x.w[i].data();
    t.grad = x.g[i].data();
    t.state[0] = x.m[i].data();
    t.state[1] = x.v[i].data();
    tensors.push_back(t);
  }
  runtime::cpu::optimizer_step(h, in, tensors, 1);
}

struct RuleCase {
  const char* name;
  optim_math::Hyperparameters hyper;
};
std::vector<RuleCase> rule_cases() {
  optim_math::Hyperparameters lamb;  // BERT's LAMB: β (0.9, 0.999), ε 1e-6, λ 0.01, NVLAMB
  optim_math::Hyperparameters apex_lamb = lamb;
  apex_lamb.use_nvlamb = false;
  optim_math::Hyperparameters adamw = lamb;
  adamw.rule = optim_math::Rule::adamw;
  adamw.eps = 1e-8;
  optim_math::Hyperparameters lans = lamb;
  lans.rule = optim_math::Rule::lans;
  optim_math::Hyperparameters sgd = lamb;
  sgd.rule = optim_math::Rule::sgd;
  sgd.weight_decay = 1e-4;
  return {{"adamw", adamw}, {"lamb", lamb}, {"lamb (use_nvlamb false)", apex_lamb}, {"lans", lans}, {"sgd", sgd}};
}

// One rule: 3 steps on the full list and 1 on a different list, on `backend` and on the reference.
bool check_rule(Backend& backend, const RuleCase& rc, const std::vector<TensorShape>& list) {
  HostArrays ref;
  ref.w = random_arrays(list, 1, 0.02);
  ref.m = random_arrays(list, 2, 0.0);  // zeros, the optimizer's initial state (σ = 0)
  ref.v = ref.m;
  const size_t zero_weight = list.size() - 1, zero_grad = list.size() - 2;  // the two 300-element edge tensors
  std::fill(ref.w[zero_weight].begin(), ref.w[zero_weight].end(), 0.0f);
  BackendArrays dev(backend, list);
  dev.write(dev.w, ref.w);
  dev.write(dev.m, ref.m);
  dev.write(dev.v, ref.v);
  // Steps 1-3 as the executor makes them: one call per "bucket" (three runs of the list, in order); step 4
  // one call on a list not seen before (every other tensor, reversed).
  std::vector<std::vector<size_t>> buckets(3), other(1);
  for (size_t i = 0; i < list.size(); ++i) buckets[i * 3 / list.size()].push_back(i);
  for (size_t i = list.size(); i-- > 0;)
    if (i % 2 == 0) other[0].push_back(i);
  const double lrs[] = {1e-3, 2e-3, 5e-4, 1e-3};
  runtime::Event start = backend.create_event(), stop = backend.create_event();
  double seconds = 0.0;
  for (int step = 1; step <= 4; ++step) {
    ref.g = random_arrays(list, 100 + static_cast<uint64_t>(step), 1e-3);
    std::fill(ref.g[zero_grad].begin(), ref.g[zero_grad].end(), 0.0f);
    dev.write(dev.g, ref.g);
    optim_math::StepInputs in;
    in.lr = lrs[step - 1];
    in.t = step;
    in.clip_divisor = rc.hyper.rule == optim_math::Rule::lans ? 1.0 : 1.7;  // LANS does not clip (optimizer.cpp)
    backend.record(start);
    for (const std::vector<size_t>& order : step <= 3 ? buckets : other)
      backend.optimizer_step(rc.hyper, in, dev.tensors(list, order));
    backend.record(stop);
    if (step <= 3) seconds += backend.elapsed_seconds(start, stop);
    for (const std::vector<size_t>& order : step <= 3 ? buckets : other) reference_step(rc.hyper, in, list, order, ref);
  }
  Diff d;
  compare(d, dev.read(dev.w, list), ref.w);
  compare(d, dev.read(dev.m, list), ref.m);
  if (rc.hyper.rule != optim_math::Rule::sgd) compare(d, dev.read(dev.v, list), ref.v);
  const bool ok = d.differing == 0;
  fmt::print("{} {}: 4 steps (3 on {} tensors in 3 calls, 1 on {}): {} of {} weight/moment values differ "
             "(max {} ulp); {:.3f} ms per step on the backend\n",
             ok ? "ok" : "FAIL", rc.name, list.size(), other[0].size(), d.differing, d.compared, d.max_ulp,
             seconds / 3 * 1e3);
  return ok;
}

// The comparison must see one flipped low bit.
bool self_check() {
  std::vector<std::vector<float>> a = {{1.0f, 2.0f, 3.0f}}, b = a;
  uint32_t bits = 0;
  std::memcpy(&bits, &b[0][1], 4);
  bits ^= 1u;
  std::memcpy(&b[0][1], &bits, 4);
  Diff same, flipped;
  compare(same, a, a);
  compare(flipped, a, b);
  return same.differing == 0 && flipped.differing == 1 && flipped.max_ulp == 1;
}

std::unique_ptr<Backend> backend_under_test(const std::string& which) {
  if (which == "cpu") return runtime::make_cpu_backend(runtime::ComputeType::f32, 2);
  return runtime::make_backend(runtime::BackendKind::cuda, runtime::ComputeType::f32, 1);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  if (argc != 2 || (which != "cpu" && which != "cuda")) {
    fmt::print(stderr, "usage: optimizer_backend_check cpu|cuda (got '{}')\n", which);
    return 2;
  }
  if (which == "cuda") {
#ifdef PTSIM_HAVE_CUDA
    if (runtime::cuda_device_count() == 0) {
      fmt::print("skipped: no CUDA device (cudaGetDeviceCount reports none)\n");
      return 77;
    }
#else
    fmt::print("skipped: this build has no CUDA backend (configure with -Dcuda=enabled where nvcc exists)\n");
    return 77;
#endif
  }
  try {
    if (!self_check()) {
      fmt::print("FAIL self-check: the bit comparison missed a flipped bit\n");
      return 1;
    }
    const std::vector<TensorShape> list = tensor_list();
    size_t elements = 0;
    for (const TensorShape& t : list) elements += t.elements;
    const std::unique_ptr<Backend> backend = backend_under_test(which);
    size_t largest = 0;
    for (const TensorShape& t : list) largest = std::max(largest, t.elements);
    fmt::print("{} vs the CPU reference: {} tensors ({} of them edge cases), {} elements, the largest {}\n",
               backend->name(), list.size(), kEdgeTensors, elements, largest);
    int failed = 0;
    for (const RuleCase& rc : rule_cases()) failed += check_rule(*backend, rc, list) ? 0 : 1;
    fmt::print("optimizer_backend_check {}: {} ({} of {} rules bit-identical to the CPU reference)\n", which,
               failed == 0 ? "PASSED" : "FAILED", rule_cases().size() - static_cast<size_t>(failed),
               rule_cases().size());
    return failed == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print("FAIL: {}\n", e.what());
    return 1;
  }
}
