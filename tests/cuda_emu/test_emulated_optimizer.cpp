// tests/cuda_emu/test_emulated_optimizer.cpp — the CUDA optimizer step (optimizer.cu: multi-tensor AdamW,
// NVLAMB, LANS, SGD; the step tail's global norm, clip and skip verdict; the fp16 loss-scale update), compiled
// by g++ and run under the emulator, against the CPU reference (cpu_optimizer.cpp, optim_math) bit for bit, as
// docs/cuda-backend.md ("The optimizer") says the two must agree: same chunks, same lane order for the norms,
// the same fp32 element functions, no FMA contraction (-ffp-contract=off here, --fmad=false under nvcc).
// Several steps per rule, weight decay on and off, tensors of odd sizes (one of two chunks), f32 gradients
// clipped by the global norm, and fp16 gradients with a dynamic loss scale whose overflow skips a step.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "emulated_kernels.hpp"
#include "emulated_test_util.hpp"
#include "runtime/exec/cpu_16bit_vectors.hpp"
#include "runtime/exec/cpu_optimizer.hpp"
#include "runtime/exec/cpu_parallel.hpp"
#include "runtime/exec/math/half_bits.hpp"

namespace {

namespace cpu = ptsim::runtime::cpu;
namespace om = ptsim::runtime::optim_math;
using ptsim::models::DType;
using ptsim::runtime::math::Storage;
constexpr cudaStream_t kStream = nullptr;

// Sizes: a single element, less than a warp, neither a warp nor a block multiple, two chunks (the second
// ragged), and a small one after it, so chunk tables, tensor offsets and ragged tails are all exercised.
const size_t kSizes[] = {1, 31, 300, ptsim::runtime::cpu::kChunkElements + 45, 7};
const bool kDecay[] = {true, false, true, true, false};
constexpr size_t kTensors = std::size(kSizes);

template <class T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// One side's optimizer state: weights and the two moments per tensor (SGD uses only the first).
struct Side {
  std::vector<std::vector<float>> w, m, v;
  explicit Side(uint32_t seed) {
    for (size_t i = 0; i < kTensors; ++i) {
      w.push_back(emu_test::random_floats(kSizes[i], seed + static_cast<uint32_t>(i), -1.0f, 1.0f));
      m.emplace_back(kSizes[i], 0.0f);
      v.emplace_back(kSizes[i], 0.0f);
    }
  }
};

// The step's gradients, shared by both sides (read only): f32 values, or fp16 bits of value·scale.
struct Gradients {
  DType dtype;
  std::vector<std::vector<float>> f32;
  std::vector<std::vector<uint16_t>> f16;
  const void* of(size_t i) const { return dtype == DType::f32 ? static_cast<const void*>(f32[i].data()) : f16[i].data(); }
};

Gradients make_gradients(DType dtype, double scale, uint32_t seed) {
  Gradients g{dtype, {}, {}};
  for (size_t i = 0; i < kTensors; ++i) {
    std::vector<float> x = emu_test::random_floats(kSizes[i], seed * 31 + static_cast<uint32_t>(i));
    if (dtype == DType::f32) {
      g.f32.push_back(std::move(x));
      continue;
    }
    std::vector<uint16_t> h(x.size());
    for (size_t e = 0; e < x.size(); ++e) h[e] = ptsim::runtime::math::float_to_f16(static_cast<float>(x[e] * scale));
    g.f16.push_back(std::move(h));
  }
  return g;
}

std::vector<cpu::HostOptimizerTensor> host_tensors(Side& s, const Gradients& g, bool sgd) {
  std::vector<cpu::HostOptimizerTensor> t(kTensors);
  for (size_t i = 0; i < kTensors; ++i)
    t[i] = {s.w[i].data(), g.of(i), g.dtype, {s.m[i].data(), sgd ? nullptr : s.v[i].data()}, kSizes[i], kDecay[i]};
  return t;
}

std::vector<emu::OptimizerTensorAddresses> device_tensors(Side& s, const Gradients& g, bool sgd) {
  const Storage storage = g.dtype == DType::f32 ? Storage::f32 : Storage::f16;
  std::vector<emu::OptimizerTensorAddresses> t(kTensors);
  for (size_t i = 0; i < kTensors; ++i)
    t[i] = {s.w[i].data(), g.of(i), {s.m[i].data(), sgd ? nullptr : s.v[i].data()}, kSizes[i], kDecay[i], storage};
  return t;
}

// The step tail on each side: Σg² (×grad_factor) tensor after tensor, then finish_norm's verdict. Returns the
// host's scalars after checking that the device formed the same Σ and the same 64 bytes.
om::StepScalars step_tail(om::StepScalars host, const Gradients& g, double max_norm) {
  const Storage storage = g.dtype == DType::f32 ? Storage::f32 : Storage::f16;
  const size_t chunk = ptsim::runtime::cpu::kChunkElements;
  double host_sum = 0.0;
  const size_t most_chunks = ptsim::runtime::cpu::chunk_count(*std::max_element(std::begin(kSizes), std::end(kSizes)));
  emu_test::DeviceScratch device_sum(sizeof(double)), partials(sizeof(double) * most_chunks),
      scalars(sizeof(om::StepScalars));
  *static_cast<double*>(device_sum.p) = 0.0;
  std::memcpy(scalars.p, &host, sizeof host);
  for (size_t i = 0; i < kTensors; ++i) {
    host_sum += cpu::scaled_sum_of_squares_host(g.of(i), kSizes[i], g.dtype, host.grad_factor, 1);
    emu::launch_add_scaled_sum_of_squares(static_cast<double*>(device_sum.p), static_cast<double*>(partials.p), g.of(i),
                                          storage, host.grad_factor, kSizes[i], chunk, kStream);
  }
  CHECK(same_bits(*static_cast<double*>(device_sum.p), host_sum));
  om::finish_norm(host, host_sum, max_norm);
  emu::launch_finish_step_scalars(static_cast<om::StepScalars*>(scalars.p), static_cast<double*>(device_sum.p), max_norm,
                                  kStream);
  CHECK_MESSAGE(same_bits(*static_cast<om::StepScalars*>(scalars.p), host), "finish_norm's scalars differ");
  return host;
}

void check_sides_equal(const Side& cpu_side, const Side& emu_side, bool sgd, const std::string& where) {
  for (size_t i = 0; i < kTensors; ++i) {
    const int64_t w = emu_test::first_bit_difference(emu_side.w[i], cpu_side.w[i]);
    const int64_t m = emu_test::first_bit_difference(emu_side.m[i], cpu_side.m[i]);
    const int64_t v = sgd ? -1 : emu_test::first_bit_difference(emu_side.v[i], cpu_side.v[i]);
    CHECK_MESSAGE(w == -1, where << ", tensor " << i << ": weight " << w << " differs");
    CHECK_MESSAGE(m == -1, where << ", tensor " << i << ": first moment " << m << " differs");
    CHECK_MESSAGE(v == -1, where << ", tensor " << i << ": second moment " << v << " differs");
  }
}

struct RunConfig {
  om::Hyperparameters h;
  DType grad_dtype = DType::f32;
  double max_norm = 0.0;        // > 0: clip by the global norm
  int overflow_step = 0;        // > 0: that step's fp16 gradients hold an inf (loss-scale overflow)
  std::string name;
};

// Four steps of one configuration on both sides; every step's state compared bit for bit. Returns how many
// steps were clipped and skipped, so the caller can check the cases it meant to cover did happen.
std::pair<int, int> run_steps(const RunConfig& cfg) {
  const bool sgd = cfg.h.rule == om::Rule::sgd;
  Side cpu_side(100), emu_side(100);
  // The emulator's streams always finish, so the table-cache drain can be a plain synchronize here; the
  // backend's bounded wait behind a stalled collective is tested in the nccl_emulated cases.
  emu::MultiTensorOptimizer optimizer([](cudaStream_t stream, const char*) { (void)cudaStreamSynchronize(stream); });
  om::LossScaleState host_scale;
  host_scale.dynamic = cfg.grad_dtype == DType::f16 ? 1 : 0;
  host_scale.scale = cfg.grad_dtype == DType::f16 ? 1024.0 : 1.0;
  host_scale.growth_interval = 2;  // so a clean step after the skip also doubles the scale
  om::derive_step_factors(host_scale);
  om::LossScaleState device_scale = host_scale;
  int clipped = 0, skipped = 0;
  for (int64_t t = 1; t <= 4; ++t) {
    Gradients g = make_gradients(cfg.grad_dtype, host_scale.scale, static_cast<uint32_t>(t));
    if (t == cfg.overflow_step) g.f16[3][1234] = 0x7C00;  // +inf in fp16: what an overflowing backward leaves
    const om::StepInputs in{1e-2 / static_cast<double>(t), t, 1.0, host_scale.grad_factor};
    const om::StepScalars s = step_tail(om::step_scalars(cfg.h, in), g, cfg.max_norm);
    clipped += s.clip_divisor > 1.0 ? 1 : 0;
    skipped += s.skip;
    const Side before = cpu_side;
    std::vector<cpu::HostOptimizerTensor> host_list = host_tensors(cpu_side, g, sgd);
    cpu::optimizer_step(cfg.h, s, host_list, 2);
    const std::vector<emu::OptimizerTensorAddresses> device_list = device_tensors(emu_side, g, sgd);
    emu_test::DeviceScratch device_scalars(sizeof s);  // the scalars in "device" memory, as the executor leaves them
    std::memcpy(device_scalars.p, &s, sizeof s);
    optimizer.step(cfg.h, static_cast<const om::StepScalars*>(device_scalars.p), device_list, kStream);
    check_sides_equal(cpu_side, emu_side, sgd, cfg.name + ", step " + std::to_string(t));
    if (s.skip != 0) check_sides_equal(before, emu_side, sgd, cfg.name + ", skipped step " + std::to_string(t));
    om::update_loss_scale(host_scale, s.skip != 0);
    emu::launch_update_loss_scale(&device_scale, static_cast<const om::StepScalars*>(device_scalars.p), kStream);
    CHECK_MESSAGE(same_bits(device_scale, host_scale), cfg.name << ", step " << t << ": loss-scale state differs");
  }
  return {clipped, skipped};
}

om::Hyperparameters hyper(om::Rule rule, double weight_decay, bool use_nvlamb = true) {
  om::Hyperparameters h;
  h.rule = rule;
  h.weight_decay = weight_decay;
  h.use_nvlamb = use_nvlamb;
  return h;
}

}  // namespace

TEST_CASE("emulated optimizer step equals the CPU reference bit for bit (every rule, decay on and off)") {
  const struct {
    om::Rule rule;
    bool nvlamb;
    const char* name;
  } rules[] = {{om::Rule::adamw, true, "adamw"},
               {om::Rule::lamb, true, "nvlamb"},
               {om::Rule::lamb, false, "lamb (ratio only where λ ≠ 0)"},
               {om::Rule::lans, true, "lans"},
               {om::Rule::sgd, true, "sgd"}};
  for (const auto& r : rules) {
    for (double decay : {0.0, 0.01}) {
      // f32 gradients in [−2, 2] over ~33 k elements have a global norm near 200: max_norm 50 clips every step
      RunConfig clip{hyper(r.rule, decay, r.nvlamb), DType::f32, 50.0, 0, std::string(r.name) + " f32 clipped"};
      clip.name += decay > 0 ? ", λ = 0.01" : ", λ = 0";
      const auto [clipped, skipped] = run_steps(clip);
      CHECK_MESSAGE(clipped == 4, clip.name << ": the global-norm clip should have engaged on every step");
      CHECK(skipped == 0);
    }
  }
}

TEST_CASE("emulated optimizer with fp16 gradients: loss-scale unscale on read, an overflow skips the step") {
  for (om::Rule rule : {om::Rule::adamw, om::Rule::lamb, om::Rule::lans, om::Rule::sgd}) {
    RunConfig cfg{hyper(rule, 0.01), DType::f16, 0.0, 2, "fp16 rule " + std::to_string(static_cast<int>(rule))};
    const auto [clipped, skipped] = run_steps(cfg);
    CHECK(clipped == 0);
    CHECK_MESSAGE(skipped == 1, cfg.name << ": step 2's inf should have skipped exactly that step");
  }
}
