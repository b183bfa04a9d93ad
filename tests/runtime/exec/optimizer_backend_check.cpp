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
// Every rule runs in three gradient storages: f32 read as stored (factor 1), and bf16 and fp16 holding
// loss-scaled gradients (N(0, 1e-3)·3000, rounded to 16 bits) read with grad_factor 1/3000, the unscale on
// read (backend.hpp, OptimizerTensor) — the step a 16-bit training run makes.
// Then the rest of the step tail against the CPU passes (cpu_16bit_vectors.hpp), bit for bit:
// scaled_sum_of_squares over f32/f16/bf16 arrays (factor 1 and 1/3000; sizes around the 2^15-element
// chunks) must return the same double, and convert (f32 → f16/bf16 over half_bits_patterns.hpp's fp32
// sweep, f16/bf16 → f32 over all 65,536 patterns, f32 → f32) and scale_16bit (all 65,536 patterns × ½, ⅓, 3)
// must write the same bytes; the device norm
// verdict (scaled_sum_of_squares_into over several arrays, then finish_step_scalars with clipping on and off,
// and for 0, inf and NaN sums) must give the host's double and the host finish_norm's StepScalars bytes; the
// device loss scale's ops (scaled_sum_of_squares_into_by, update_loss_scale, add_to_sum) the host's bytes. In cpu mode these
// compare the CPU backend's threaded in-place passes with the one-thread host functions.
// Before the rules, a self-check proves the comparison can fail: one flipped low bit must be reported.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "models/builder.hpp"
#include "models/model_spec.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/cpu_16bit_vectors.hpp"
#include "runtime/exec/cpu_optimizer.hpp"
#include "runtime/exec/cpu_parallel.hpp"  // defines: kChunkElements
#include "runtime/optim/step_scalars.hpp"  // defines: StepScalars, finish_norm
#include "tests/runtime/exec/half_bits_patterns.hpp"
#ifdef PTSIM_HAVE_CUDA
#include "runtime/exec/cuda/cuda_backend.hpp"  // defines: cuda_device_count
#endif
#include "tests/support/backend_under_test.hpp"  // defines: make_test_backend
#include "tests/support/gpu_skip.hpp"  // defines: gpu_test_skip_status

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

// How the step's gradients are stored and read: `dtype` elements, multiplied by `factor` on read.
struct GradMode {
  const char* name;
  models::DType dtype;
  double factor;
};
// 1/3000: not a power of two, so the fp32 product rounds and a backend that skipped or reordered it differs.
constexpr double kLossScale = 3000.0;
const GradMode kGradModes[] = {{"f32 gradients", models::DType::f32, 1.0},
                               {"bf16 gradients x 1/3000", models::DType::bf16, 1.0 / kLossScale},
                               {"fp16 gradients x 1/3000", models::DType::f16, 1.0 / kLossScale}};

// Host values of every array, tensor by tensor (state[1] unused by SGD but kept for a uniform layout); the
// gradients as the bytes of their storage (GradMode::dtype).
struct HostArrays {
  std::vector<std::vector<float>> w, m, v;
  std::vector<std::vector<char>> g;
};

// The same tensor list on a backend: one flat buffer per array, each tensor at a 64-byte-aligned offset.
struct BackendArrays {
  Backend& backend;
  DeviceBuffer w, g, m, v;
  DeviceBuffer scalars;        // one optim_math::StepScalars, as the Optimizer keeps it
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
    scalars = b.allocate(sizeof(optim_math::StepScalars));
  }
  ~BackendArrays() {
    for (DeviceBuffer x : {w, g, m, v, scalars}) backend.free(x);
  }
  // The step's scalars into the backend's buffer (queued on the compute stream, as Optimizer::step_begin).
  DeviceSpan write_scalars(const optim_math::StepScalars& s) {
    backend.copy_to_device_async(DeviceSpan::of(scalars), &s);
    return DeviceSpan::of(scalars);
  }
  BackendArrays(const BackendArrays&) = delete;
  BackendArrays& operator=(const BackendArrays&) = delete;
  DeviceSpan span(DeviceBuffer b, size_t i, size_t n) const { return {b, offset[i], n * sizeof(float)}; }
  // Tensor i's gradient of n elements stored as `dtype` (at the fp32 layout's offset: 16 bits fit in it).
  DeviceSpan grad_span(size_t i, size_t n, models::DType dtype) const {
    return {g, offset[i], n * runtime::cpu::tail_element_bytes(dtype)};
  }
  void write_grads(const std::vector<std::vector<char>>& bytes, models::DType dtype) {
    for (size_t i = 0; i < bytes.size(); ++i)
      if (!bytes[i].empty())
        backend.copy_to_device(grad_span(i, bytes[i].size() / runtime::cpu::tail_element_bytes(dtype), dtype),
                               bytes[i].data());
  }
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
  std::vector<runtime::OptimizerTensor> tensors(const std::vector<TensorShape>& list, const std::vector<size_t>& order,
                                                models::DType grad_dtype) {
    std::vector<runtime::OptimizerTensor> out;
    for (size_t i : order) {
      runtime::OptimizerTensor t;
      const size_t n = list[i].elements;
      t.weight = span(w, i, n);
      t.grad = grad_span(i, n, grad_dtype);
      t.grad_dtype = grad_dtype;
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

// Gradients ~ N(0, 1e-3) as the optimizer reads them: stored as mode.dtype scaled by 1/mode.factor (the loss
// scale; rounded to 16 bits by half_bits.hpp through convert_host), fresh per step (`seed`).
std::vector<std::vector<char>> random_gradients(const std::vector<TensorShape>& list, uint64_t seed,
                                                const GradMode& mode) {
  std::vector<std::vector<float>> values = random_arrays(list, seed, 1e-3 / mode.factor);
  std::vector<std::vector<char>> out(list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    out[i].resize(values[i].size() * runtime::cpu::tail_element_bytes(mode.dtype));
    runtime::cpu::convert_host(out[i].data(), mode.dtype, values[i].data(), models::DType::f32, values[i].size(), 1);
  }
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
void reference_step(const optim_math::Hyperparameters& h, const optim_math::StepScalars& in,
                    const std::vector<TensorShape>& list, const std::vector<size_t>& order, HostArrays& x,
                    models::DType grad_dtype) {
  std::vector<runtime::cpu::HostOptimizerTensor> tensors;
  for (size_t i : order) {
    runtime::cpu::HostOptimizerTensor t;
    t.n = list[i].elements;
    t.decay = list[i].decay;
    t.weight = x.w[i].data();
    t.grad = x.g[i].data();
    t.grad_dtype = grad_dtype;
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
bool check_rule(Backend& backend, const RuleCase& rc, const GradMode& mode, const std::vector<TensorShape>& list) {
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
    ref.g = random_gradients(list, 100 + static_cast<uint64_t>(step), mode);
    std::fill(ref.g[zero_grad].begin(), ref.g[zero_grad].end(), char{0});  // +0 in every storage
    dev.write_grads(ref.g, mode.dtype);
    optim_math::StepInputs in;
    in.grad_factor = mode.factor;
    in.lr = lrs[step - 1];
    in.t = step;
    in.clip_divisor = rc.hyper.rule == optim_math::Rule::lans ? 1.0 : 1.7;  // LANS does not clip (optimizer.cpp)
    const optim_math::StepScalars scalars = optim_math::step_scalars(rc.hyper, in);
    backend.record(start);
    const DeviceSpan on_backend = dev.write_scalars(scalars);
    for (const std::vector<size_t>& order : step <= 3 ? buckets : other)
      backend.optimizer_step(rc.hyper, on_backend, dev.tensors(list, order, mode.dtype));
    backend.record(stop);
    if (step <= 3) seconds += backend.elapsed_seconds(start, stop);
    for (const std::vector<size_t>& order : step <= 3 ? buckets : other)
      reference_step(rc.hyper, scalars, list, order, ref, mode.dtype);
  }
  // A skipped step (the skip flag of a step-5 scalars block set) must leave every weight and moment as the
  // reference has them after step 4: the reference does not run it.
  {
    optim_math::StepInputs in;
    in.lr = 1e-3;
    in.t = 5;
    in.grad_factor = mode.factor;
    optim_math::StepScalars skipped = optim_math::step_scalars(rc.hyper, in);
    skipped.skip = 1;
    const DeviceSpan on_backend = dev.write_scalars(skipped);
    backend.optimizer_step(rc.hyper, on_backend, dev.tensors(list, buckets[0], mode.dtype));
  }
  Diff d;
  compare(d, dev.read(dev.w, list), ref.w);
  compare(d, dev.read(dev.m, list), ref.m);
  if (rc.hyper.rule != optim_math::Rule::sgd) compare(d, dev.read(dev.v, list), ref.v);
  const bool ok = d.differing == 0;
  fmt::print("{} {}, {}: 4 steps (3 on {} tensors in 3 calls, 1 on {}) and a skipped one: {} of {} weight/moment values differ "
             "(max {} ulp); {:.3f} ms per step on the backend\n",
             ok ? "ok" : "FAIL", rc.name, mode.name, list.size(), other[0].size(), d.differing, d.compared, d.max_ulp,
             seconds / 3 * 1e3);
  return ok;
}

// ---- the rest of the step tail: scaled_sum_of_squares and convert against the CPU passes ----

// `bytes` of device memory holding `host`, freed at scope exit.
struct DeviceCopy {
  Backend& backend;
  DeviceBuffer buffer;
  DeviceCopy(Backend& b, const std::vector<char>& host) : backend(b), buffer(b.allocate(host.size())) {
    if (!host.empty()) backend.copy_to_device(span(), host.data());
  }
  ~DeviceCopy() { backend.free(buffer); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  DeviceSpan span() const { return {buffer, 0, buffer.bytes}; }
};

// n elements ~ N(0, 3) (loss-scaled gradients) stored as `dtype`, every 1000th element ±60000 (near fp16's
// largest finite value, so x·factor also covers the top of the range).
std::vector<char> random_tail_array(size_t n, models::DType dtype, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 3.0);
  std::vector<float> values(n);
  for (size_t i = 0; i < n; ++i) values[i] = i % 1000 == 999 ? (i % 2 ? 60000.0f : -60000.0f)
                                                              : static_cast<float>(normal(rng));
  std::vector<char> bytes(n * runtime::cpu::tail_element_bytes(dtype));
  runtime::cpu::convert_host(bytes.data(), dtype, values.data(), models::DType::f32, n, 1);
  return bytes;
}

// Σ (x·factor)² on the backend vs scaled_sum_of_squares_host (one thread): the same double, bit for bit, for
// every storage, factors 1 and 1/3000, sizes 0, 1, one chunk ± 1, several chunks and a ragged tail.
int check_scaled_sums(Backend& backend) {
  const size_t C = runtime::cpu::kChunkElements;
  int failed = 0, checked = 0;
  for (models::DType dtype : {models::DType::f32, models::DType::bf16, models::DType::f16})
    for (size_t n : {size_t{0}, size_t{1}, C - 1, C + 1, 7 * C + 17})
      for (double factor : {1.0, 1.0 / kLossScale}) {
        const std::vector<char> host = random_tail_array(n, dtype, 7 + n);
        const DeviceCopy dev(backend, host);
        const double got = backend.scaled_sum_of_squares(dev.span(), dtype, factor);
        const double want =
            runtime::cpu::scaled_sum_of_squares_host(host.data(), n, dtype, static_cast<float>(factor), 1);
        ++checked;
        if (std::memcmp(&got, &want, sizeof(double)) != 0) {
          ++failed;
          fmt::print("FAIL scaled_sum_of_squares {} n={} factor={}: {:.17g}, the CPU passes {:.17g}\n",
                     models::to_string(dtype), n, factor, got, want);
        }
      }
  fmt::print("{} scaled_sum_of_squares: {} of {} cases the CPU passes' double, bit for bit\n",
             failed == 0 ? "ok" : "FAIL", checked - failed, checked);
  return failed;
}

// backend.convert(src → dst_dtype) vs convert_host: the same bytes.
bool convert_matches(Backend& backend, const std::vector<char>& src, models::DType src_dtype, models::DType dst_dtype) {
  const size_t n = src.size() / runtime::cpu::tail_element_bytes(src_dtype);
  std::vector<char> want(n * runtime::cpu::tail_element_bytes(dst_dtype)), got(want.size());
  runtime::cpu::convert_host(want.data(), dst_dtype, src.data(), src_dtype, n, 1);
  const DeviceCopy in(backend, src), out(backend, std::vector<char>(want.size()));
  backend.convert(out.span(), dst_dtype, in.span(), src_dtype);
  if (!got.empty()) backend.copy_to_host(got.data(), out.span());
  size_t differing = 0;
  for (size_t i = 0; i < n; ++i) {
    const size_t b = runtime::cpu::tail_element_bytes(dst_dtype);
    differing += std::memcmp(&got[i * b], &want[i * b], b) != 0;
  }
  fmt::print("{} convert {} -> {}: {} of {} elements differ from the CPU passes\n", differing == 0 ? "ok" : "FAIL",
             models::to_string(src_dtype), models::to_string(dst_dtype), differing, n);
  return differing == 0;
}

// Narrowing over the fp32 sweep (every rounding path, ±inf, NaN), widening over every 16-bit pattern, f32 copy.
int check_converts(Backend& backend) {
  const std::vector<uint32_t> sweep = test::fp32_sweep_patterns();
  std::vector<char> fp32(sweep.size() * 4), all16(65536 * 2);
  std::memcpy(fp32.data(), sweep.data(), fp32.size());
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    std::memcpy(&all16[h * 2], &bits, 2);
  }
  int failed = 0;
  failed += convert_matches(backend, fp32, models::DType::f32, models::DType::bf16) ? 0 : 1;
  failed += convert_matches(backend, fp32, models::DType::f32, models::DType::f16) ? 0 : 1;
  failed += convert_matches(backend, all16, models::DType::bf16, models::DType::f32) ? 0 : 1;
  failed += convert_matches(backend, all16, models::DType::f16, models::DType::f32) ? 0 : 1;
  failed += convert_matches(backend, fp32, models::DType::f32, models::DType::f32) ? 0 : 1;
  failed += convert_matches(backend, {}, models::DType::f32, models::DType::bf16) ? 0 : 1;  // empty spans
  return failed;
}

// backend.scale_16bit over every 16-bit pattern (each rounding path, subnormals, ±inf, NaN) vs
// scale_16bit_host: the same bytes. Factors ½ (the 2-rank average: exact but for fp16 subnormals), ⅓ (rounds)
// and 3 (overflows fp16's large values).
int check_scale_16bit(Backend& backend) {
  std::vector<char> all16(65536 * 2);
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto bits = static_cast<uint16_t>(h);
    std::memcpy(&all16[h * 2], &bits, 2);
  }
  int failed = 0;
  for (models::DType dtype : {models::DType::bf16, models::DType::f16})
    for (double factor : {0.5, 1.0 / 3.0, 3.0}) {
      std::vector<char> want = all16, got(all16.size());
      runtime::cpu::scale_16bit_host(want.data(), 65536, dtype, static_cast<float>(factor), 1);
      const DeviceCopy x(backend, all16);
      backend.scale_16bit(x.span(), dtype, factor);
      backend.copy_to_host(got.data(), x.span());
      size_t differing = 0;
      for (size_t i = 0; i < 65536; ++i) differing += std::memcmp(&got[i * 2], &want[i * 2], 2) != 0;
      fmt::print("{} scale_16bit {} × {:.6g}: {} of 65536 elements differ from the CPU pass\n",
                 differing == 0 ? "ok" : "FAIL", models::to_string(dtype), factor, differing);
      failed += differing == 0 ? 0 : 1;
    }
  // An odd byte count is no whole number of 16-bit elements: refused (std::invalid_argument, as on the CPU).
  const DeviceCopy odd(backend, std::vector<char>(3));
  try {
    backend.scale_16bit(odd.span(), models::DType::bf16, 0.5);
    fmt::print("FAIL scale_16bit took a 3-byte span\n");
    ++failed;
  } catch (const std::invalid_argument&) {
    fmt::print("ok scale_16bit refuses a 3-byte span\n");
  }
  return failed;
}

// The step tail's device norm verdict (docs/cuda-backend.md, "The optimizer"): Σg² accumulated over several
// arrays by scaled_sum_of_squares_into from a zeroed double vs the host adding scaled_sum_of_squares_host's
// doubles in the same order (the same double), then finish_step_scalars vs optim_math::finish_norm on the
// host (the same 64 bytes), for that sum and for 0, exactly max², inf and NaN, clipping at 1, 3 and off.
int check_device_norm(Backend& backend) {
  const size_t C = runtime::cpu::kChunkElements;
  int failed = 0, checked = 0;
  const DeviceCopy sum_dev(backend, std::vector<char>(sizeof(double)));
  for (double factor : {1.0, 1.0 / kLossScale}) {
    backend.fill_zero(sum_dev.span());
    double want = 0.0;
    size_t k = 0;
    for (models::DType dtype : {models::DType::f32, models::DType::bf16, models::DType::f16})
      for (size_t n : {size_t{1}, C + 1, 3 * C + 17}) {
        const std::vector<char> host = random_tail_array(n, dtype, 101 + k++);
        const DeviceCopy dev(backend, host);
        backend.scaled_sum_of_squares_into(dev.span(), dtype, factor, sum_dev.span());
        want = want + runtime::cpu::scaled_sum_of_squares_host(host.data(), n, dtype, static_cast<float>(factor), 1);
      }
    double got = 0.0;
    backend.copy_to_host(&got, sum_dev.span());
    ++checked;
    if (std::memcmp(&got, &want, sizeof got) != 0) {
      ++failed;
      fmt::print("FAIL scaled_sum_of_squares_into factor={}: {:.17g}, the host's order {:.17g}\n", factor, got, want);
    }
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    for (double sum : {want, 0.0, 9.0, inf, nan})
      for (double max_norm : {1.0, 3.0, 0.0}) {
        optim_math::StepScalars host_scalars =
            optim_math::step_scalars(optim_math::Hyperparameters{}, optim_math::StepInputs{1e-3, 3, 1.0, factor});
        std::vector<char> bytes(sizeof host_scalars);
        std::memcpy(bytes.data(), &host_scalars, sizeof host_scalars);
        const DeviceCopy scalars_dev(backend, bytes);
        backend.copy_to_device(sum_dev.span(), &sum);
        backend.finish_step_scalars(scalars_dev.span(), sum_dev.span(), max_norm);
        optim_math::finish_norm(host_scalars, sum, max_norm);
        optim_math::StepScalars device_scalars;
        backend.copy_to_host(&device_scalars, scalars_dev.span());
        ++checked;
        if (std::memcmp(&device_scalars, &host_scalars, sizeof host_scalars) != 0) {
          ++failed;
          fmt::print("FAIL finish_step_scalars sum={:.17g} max={}: norm {:.17g} clip {:.17g} skip {}, the host's "
                     "{:.17g} {:.17g} {}\n", sum, max_norm, device_scalars.grad_norm, device_scalars.clip_divisor,
                     device_scalars.skip, host_scalars.grad_norm, host_scalars.clip_divisor, host_scalars.skip);
        }
      }
  }
  fmt::print("{} device norm verdict: {} of {} cases the host's bytes, bit for bit\n", failed == 0 ? "ok" : "FAIL",
             checked - failed, checked);
  return failed;
}

// The fp16 loss scale on the device (docs/cuda-backend.md, "The loss scale on the device"): the sum of
// squares with the factor read from backend memory (scaled_sum_of_squares_into_by) vs the host-factor call's
// double; update_loss_scale over a skip pattern that grows (interval 2), caps at 2^24, halves and
// underflows vs optim_math::update_loss_scale on the host (the same 56 bytes after every step); add_to_sum
// of fp32 values (including 0.1f, inexact in binary, and −0) vs the host's `sum += value` (the same double).
int check_device_loss_scale(Backend& backend) {
  const size_t C = runtime::cpu::kChunkElements;
  int failed = 0, checked = 0;
  const DeviceCopy sum_dev(backend, std::vector<char>(sizeof(double)));
  const float factor = static_cast<float>(1.0 / kLossScale);
  std::vector<char> factor_bytes(sizeof factor);
  std::memcpy(factor_bytes.data(), &factor, sizeof factor);
  const DeviceCopy factor_dev(backend, factor_bytes);
  for (models::DType dtype : {models::DType::f32, models::DType::bf16, models::DType::f16}) {
    const std::vector<char> host = random_tail_array(3 * C + 17, dtype, 211);
    const DeviceCopy dev(backend, host);
    double want = 0.0, got = 1.0;
    backend.fill_zero(sum_dev.span());
    backend.scaled_sum_of_squares_into(dev.span(), dtype, factor, sum_dev.span());
    backend.copy_to_host(&want, sum_dev.span());
    backend.fill_zero(sum_dev.span());
    backend.scaled_sum_of_squares_into_by(dev.span(), dtype, factor_dev.span(), sum_dev.span());
    backend.copy_to_host(&got, sum_dev.span());
    ++checked;
    if (std::memcmp(&got, &want, sizeof got) != 0) {
      ++failed;
      fmt::print("FAIL scaled_sum_of_squares_into_by {}: {:.17g}, with the host factor {:.17g}\n",
                 models::to_string(dtype), got, want);
    }
  }
  optim_math::LossScaleState host_state;
  host_state.scale = 4194304.0;  // 2^22: two growths reach the 2^24 cap
  host_state.growth_interval = 2;
  host_state.dynamic = 1;
  host_state.micro_steps = 3.0;
  optim_math::derive_step_factors(host_state);
  std::vector<char> state_bytes(sizeof host_state);
  std::memcpy(state_bytes.data(), &host_state, sizeof host_state);
  const DeviceCopy state_dev(backend, state_bytes);
  std::vector<char> scalar_bytes(sizeof(optim_math::StepScalars));
  const DeviceCopy scalars_dev(backend, scalar_bytes);
  // Clean ×6 (grows twice, then capped), then skips until below 2^-24 (~48 halvings).
  for (int k = 0; k < 60 && host_state.underflow == 0; ++k) {
    optim_math::StepScalars verdict;
    verdict.skip = k >= 6 ? 1 : 0;
    backend.copy_to_device(scalars_dev.span(), &verdict);
    backend.update_loss_scale(state_dev.span(), scalars_dev.span());
    optim_math::update_loss_scale(host_state, verdict.skip != 0);
    optim_math::LossScaleState device_state;
    backend.copy_to_host(&device_state, state_dev.span());
    ++checked;
    if (std::memcmp(&device_state, &host_state, sizeof host_state) != 0) {
      ++failed;
      fmt::print("FAIL update_loss_scale step {}: scale {} tracker {} skipped {}, the host's {} {} {}\n", k,
                 device_state.scale, device_state.growth_tracker, device_state.skipped_steps, host_state.scale,
                 host_state.growth_tracker, host_state.skipped_steps);
    }
  }
  if (host_state.underflow == 0) {
    ++failed;
    fmt::print("FAIL update_loss_scale: the skip pattern never reached the underflow\n");
  }
  const double start = 1.0 / 3.0;
  double want = start;
  backend.copy_to_device(sum_dev.span(), &start);
  for (float v : {0.1f, 2.5f, -0.0f, 1e-30f, 65504.0f}) {
    std::vector<char> value_bytes(sizeof v);
    std::memcpy(value_bytes.data(), &v, sizeof v);
    const DeviceCopy value_dev(backend, value_bytes);
    backend.add_to_sum(sum_dev.span(), value_dev.span());
    want += v;
  }
  double got = 0.0;
  backend.copy_to_host(&got, sum_dev.span());
  ++checked;
  if (std::memcmp(&got, &want, sizeof got) != 0) {
    ++failed;
    fmt::print("FAIL add_to_sum: {:.17g}, the host's {:.17g}\n", got, want);
  }
  fmt::print("{} device loss scale: {} of {} cases the host's bytes, bit for bit\n", failed == 0 ? "ok" : "FAIL",
             checked - failed, checked);
  return failed;
}

int check_step_tail(Backend& backend) {
  return check_scaled_sums(backend) + check_converts(backend) + check_scale_16bit(backend) +
         check_device_norm(backend) + check_device_loss_scale(backend);
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
  return test::make_test_backend(runtime::BackendKind::cuda, runtime::ComputeType::f32, 1);
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
      return ptsim::test::gpu_test_skip_status();
    }
#else
    fmt::print("skipped: this build has no CUDA backend (configure with -Dcuda=enabled where nvcc exists)\n");
    return ptsim::test::gpu_test_skip_status();
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
    int cases = 0;
    for (const GradMode& mode : kGradModes)
      for (const RuleCase& rc : rule_cases()) {
        failed += check_rule(*backend, rc, mode, list) ? 0 : 1;
        ++cases;
      }
    const int tail_failed = check_step_tail(*backend);
    fmt::print("optimizer_backend_check {}: {} ({} of {} rule x gradient cases bit-identical to the CPU reference; "
               "{} step-tail checks failed)\n",
               which, failed + tail_failed == 0 ? "PASSED" : "FAILED", cases - failed, cases, tail_failed);
    return failed + tail_failed == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    fmt::print("FAIL: {}\n", e.what());
    return 1;
  }
}
