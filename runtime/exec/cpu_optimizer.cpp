// runtime/exec/cpu_optimizer.cpp — the optimizers' multi-tensor passes on host memory (see the header), and
// Backend::optimizer_step's default (the same passes on host copies of a backend's buffers).
// Element arithmetic is fp32 (apex multi_tensor_lamb: MATH_T = float); norms are double sums per fixed
// chunk (16 lanes, math/lane_sums.hpp), added per tensor in chunk order.
#include "runtime/exec/cpu_optimizer.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/exec/cpu_16bit_vectors.hpp"
#include "runtime/exec/cpu_device.hpp"
#include "runtime/exec/cpu_parallel.hpp"  // defines: for_each_chunk, kChunkElements
#include "runtime/exec/cpu_vector_kernels.hpp"
#include "runtime/exec/math/lane_sums.hpp"
#include "runtime/exec/optimizer_plan.hpp"

namespace ptsim::runtime {
namespace cpu {
namespace {

using optim_math::AdamStep;
using optim_math::Hyperparameters;
using optim_math::StepScalars;

// The rule's coefficients of step s.t for tensors with and without weight decay (adam_step's bits).
struct AdamCoefficients {
  AdamStep decay, no_decay;
  AdamCoefficients(const Hyperparameters& h, const StepScalars& s)
      : decay(optim_math::with_bias_corrections(optim_math::adam_step(h, 1, true), s)),
        no_decay(optim_math::with_bias_corrections(optim_math::adam_step(h, 1, false), s)) {}
  const AdamStep& of(const HostOptimizerTensor& t) const { return t.decay ? decay : no_decay; }
};

// The plan's inputs: each tensor's size and decay flag.
std::vector<OptimizerPlanTensor> plan_inputs(std::span<const HostOptimizerTensor> tensors) {
  std::vector<OptimizerPlanTensor> inputs;
  inputs.reserve(tensors.size());
  for (const HostOptimizerTensor& t : tensors) inputs.push_back({t.n, t.decay});
  return inputs;
}

// The fp32 gradients of one chunk of t (elements [begin, begin + n)): fp32_chunk into this thread's scratch.
const float* chunk_gradients(const HostOptimizerTensor& t, float factor, size_t begin, size_t n) {
  thread_local std::vector<float> scratch;
  scratch.resize(kChunkElements);
  return fp32_chunk(t.grad, t.grad_dtype, factor, begin, n, scratch.data());
}

// The passes over one tensor list, walking its work list (optimizer_plan.hpp: every tensor cut into
// kChunkElements pieces from its first element; boundaries depend only on the sizes, so per-tensor sums over
// it are independent of threads): `apply` runs element(tensor, e, g) on every element, g its fp32 gradient
// (chunk_gradients); `sums<K>` also has it return K values whose squares are summed per chunk (in double,
// element order) and then per tensor in chunk order.
class Passes {
 public:
  Passes(std::span<const HostOptimizerTensor> tensors, int threads, float grad_factor)
      : tensors_(tensors), plan_(plan_optimizer_step(plan_inputs(tensors), kChunkElements)), threads_(threads),
        grad_factor_(grad_factor) {}

  template <class Element>
  void apply(Element&& element) const {
    for_each_chunk(plan_.chunks.size(), threads_, [&](size_t k) {
      const OptimizerChunk& ch = plan_.chunks[k];
      const HostOptimizerTensor& t = tensors_[static_cast<size_t>(ch.tensor)];
      const auto b = static_cast<size_t>(ch.begin), end = static_cast<size_t>(ch.end);
      const float* g = grads(t, ch);
      for (size_t e = b; e < end; ++e) element(t, e, g[e - b]);
    });
  }
  // The fp32 gradients of chunk ch of t, g[0] being element ch.begin's.
  const float* grads(const HostOptimizerTensor& t, const OptimizerChunk& ch) const {
    return chunk_gradients(t, grad_factor_, static_cast<size_t>(ch.begin), static_cast<size_t>(ch.end - ch.begin));
  }

  // Per tensor: Σ over its elements of value², for each of the K values element(tensor, e) returns: per
  // chunk in the lane order of math/lane_sums.hpp (element e − chunk begin goes to lane (e − begin) mod 16),
  // the CUDA sum passes' order too.
  template <size_t K, class Element>
  std::vector<std::array<double, K>> sums(Element&& element) const {
    return chunk_sums<K>([&](const HostOptimizerTensor& t, const OptimizerChunk& ch) {
      std::array<std::array<double, math::kSumLanes>, K> lanes{};
      const float* g = grads(t, ch);
      for (auto e = static_cast<size_t>(ch.begin); e < static_cast<size_t>(ch.end); ++e) {
        const std::array<float, K> x = element(t, e, g[e - static_cast<size_t>(ch.begin)]);
        const size_t lane = (e - static_cast<size_t>(ch.begin)) % math::kSumLanes;
        for (size_t j = 0; j < K; ++j) lanes[j][lane] += static_cast<double>(x[j]) * x[j];
      }
      std::array<double, K> part{};
      for (size_t j = 0; j < K; ++j) part[j] = math::combine_lanes(lanes[j].data());
      return part;
    });
  }

  // The same per-tensor totals from chunk(tensor, chunk), which returns the chunk's K sums (already in the
  // lane order: a vector kernel, cpu_vector_kernels.hpp).
  template <size_t K, class Chunk>
  std::vector<std::array<double, K>> chunk_sums(Chunk&& chunk) const {
    std::vector<std::array<double, K>> part(plan_.chunks.size());
    for_each_chunk(plan_.chunks.size(), threads_, [&](size_t k) {
      const OptimizerChunk& ch = plan_.chunks[k];
      part[k] = chunk(tensors_[static_cast<size_t>(ch.tensor)], ch);
    });
    std::vector<std::array<double, K>> total(tensors_.size(), std::array<double, K>{});
    for (size_t i = 0; i < total.size(); ++i) {
      const OptimizerTensorRange& r = plan_.tensors[i];
      for (int64_t k = r.first_chunk; k < r.first_chunk + r.chunks; ++k)
        for (size_t j = 0; j < K; ++j) total[i][j] += part[static_cast<size_t>(k)][j];
    }
    return total;
  }

  size_t size() const { return tensors_.size(); }
  const OptimizerPlan& plan() const { return plan_; }
  int threads() const { return threads_; }

 private:
  std::span<const HostOptimizerTensor> tensors_;
  OptimizerPlan plan_;
  int threads_;
  float grad_factor_;
};

// Index of a tensor inside the list (the element callbacks get a reference into it).
size_t index_of(std::span<const HostOptimizerTensor> tensors, const HostOptimizerTensor& t) {
  return static_cast<size_t>(&t - tensors.data());
}

// The element update through cpu_vector_kernels.hpp's ISA variants (same bits as adamw_element one by one).
void adamw(const Hyperparameters& h, const StepScalars& s, std::span<const HostOptimizerTensor> tensors,
           const Passes& passes) {
  const OptimizerPlan& plan = passes.plan();
  const AdamCoefficients c(h, s);
  const float lr = s.lr_f32, clip = s.clip;
  const CpuIsa isa = detected_cpu_isa();
  for_each_chunk(plan.chunks.size(), passes.threads(), [&](size_t k) {
    const OptimizerChunk& ch = plan.chunks[k];
    const HostOptimizerTensor& t = tensors[static_cast<size_t>(ch.tensor)];
    const auto b = static_cast<size_t>(ch.begin);
    adamw_range(isa, t.weight + b, passes.grads(t, ch), t.state[0] + b, t.state[1] + b, static_cast<size_t>(ch.end - ch.begin),
                c.of(t), lr, clip);
  });
}

void sgd(const Hyperparameters& h, const StepScalars& s, const Passes& passes) {
  const float mu = static_cast<float>(h.momentum), lambda = static_cast<float>(h.weight_decay);
  const float lr = s.lr_f32, clip = s.clip;
  passes.apply([&](const HostOptimizerTensor& t, size_t e, float g) {
    optim_math::sgd_element(t.weight[e], g, t.state[0][e], mu, t.decay ? lambda : 0.0f, lr, clip);
  });
}

// NVLAMB: pass 1 (apex stage 1) moments and Σu², Σw² with the weights unchanged; per tensor
// step = η·ratio (ratio on every tensor, or with use_nvlamb = false only where λ ≠ 0: apex
// `if (use_nvlamb || decay != 0)`); pass 2 (apex stage 2) w ← w − step·u.
void lamb(const Hyperparameters& h, const StepScalars& s, std::span<const HostOptimizerTensor> tensors,
          const Passes& passes) {
  const AdamCoefficients c(h, s);
  const float clip = s.clip;
  const CpuIsa isa = detected_cpu_isa();
  const auto sq = passes.chunk_sums<2>([&](const HostOptimizerTensor& t, const OptimizerChunk& ch) {
    const auto b = static_cast<size_t>(ch.begin);
    return lamb_moments_chunk(isa, t.weight + b, passes.grads(t, ch), t.state[0] + b, t.state[1] + b,
                              static_cast<size_t>(ch.end - ch.begin), c.of(t), clip);
  });
  std::vector<float> step(passes.size());
  for (size_t i = 0; i < step.size(); ++i) {
    const bool apply_ratio = h.use_nvlamb || c.of(tensors[i]).lambda != 0.0f;
    step[i] = static_cast<float>(
        s.lr * (apply_ratio ? optim_math::trust_ratio(std::sqrt(sq[i][1]), std::sqrt(sq[i][0])) : 1.0));
  }
  for_each_chunk(passes.plan().chunks.size(), passes.threads(), [&](size_t k) {
    const OptimizerChunk& ch = passes.plan().chunks[k];
    const HostOptimizerTensor& t = tensors[static_cast<size_t>(ch.tensor)];
    const auto b = static_cast<size_t>(ch.begin);
    lamb_apply_range(isa, t.weight + b, t.state[0] + b, t.state[1] + b, static_cast<size_t>(ch.end - ch.begin),
                     c.of(t), step[static_cast<size_t>(ch.tensor)]);
  });
}

// LANS: pass 0 Σg², Σw² (‖g‖ = 0 gives ĝ = 0: the moments just decay); pass 1 moments on ĝ and
// Σ(r+λw)², Σ(c+λw)² with the weights unchanged; pass 2 w ← w − η·β1·ratio_r·(r+λw) − η·(1−β1)·ratio_c·(c+λw).
void lans(const Hyperparameters& h, const StepScalars& s, std::span<const HostOptimizerTensor> tensors,
          const Passes& passes) {
  const AdamCoefficients c(h, s);
  const auto gw = passes.sums<2>(
      [](const HostOptimizerTensor& t, size_t e, float g) { return std::array<float, 2>{g, t.weight[e]}; });
  std::vector<float> inv_g_norm(passes.size());
  for (size_t i = 0; i < inv_g_norm.size(); ++i)
    inv_g_norm[i] = gw[i][0] > 0.0 ? static_cast<float>(1.0 / std::sqrt(gw[i][0])) : 0.0f;
  const auto rc = passes.sums<2>([&](const HostOptimizerTensor& t, size_t e, float g) {
    std::array<float, 2> u{};
    optim_math::lans_moments_and_directions(t.weight[e], g, inv_g_norm[index_of(tensors, t)], t.state[0][e],
                                            t.state[1][e], c.of(t), u[0], u[1]);
    return u;
  });
  std::vector<float> step_r(passes.size()), step_c(passes.size());
  for (size_t i = 0; i < step_r.size(); ++i) {
    const double w_norm = std::sqrt(gw[i][1]);
    step_r[i] = static_cast<float>(s.lr * h.beta1 * optim_math::trust_ratio(w_norm, std::sqrt(rc[i][0])));
    step_c[i] = static_cast<float>(s.lr * (1.0 - h.beta1) * optim_math::trust_ratio(w_norm, std::sqrt(rc[i][1])));
  }
  passes.apply([&](const HostOptimizerTensor& t, size_t e, float g) {
    const size_t i = index_of(tensors, t);
    optim_math::lans_apply(t.weight[e], g, inv_g_norm[i], t.state[0][e], t.state[1][e],
                           c.of(t), step_r[i], step_c[i]);
  });
}

}  // namespace

void optimizer_step(const Hyperparameters& hyper, const StepScalars& s, std::span<const HostOptimizerTensor> tensors,
                    int threads) {
  if (s.skip != 0) return;  // the step was skipped (non-finite gradients): weights and moments stay
  const Passes passes(tensors, threads, s.grad_factor);
  switch (hyper.rule) {
    case optim_math::Rule::adamw: return adamw(hyper, s, tensors, passes);
    case optim_math::Rule::lamb: return lamb(hyper, s, tensors, passes);
    case optim_math::Rule::lans: return lans(hyper, s, tensors, passes);
    case optim_math::Rule::sgd: return sgd(hyper, s, passes);
  }
  throw std::invalid_argument("optimizer_step: unknown rule");
}

}  // namespace cpu

// The reference on host copies: the scalars and every array of every tensor come over, the step runs on the
// calling thread's cores, and the weights and state go back (the gradients are only read).
void Backend::optimizer_step(const optim_math::Hyperparameters& hyper, const DeviceSpan& scalars,
                             std::span<const OptimizerTensor> tensors) {
  optim_math::StepScalars s;
  check_step_scalars(scalars);
  copy_to_host(&s, scalars);
  if (s.skip != 0) return;  // nothing would change: no copies
  const int states = optimizer_state_arrays(hyper.rule);
  std::vector<std::vector<float>> host;  // per tensor: weight, state 0, state 1
  std::vector<std::vector<char>> grads;  // per tensor: the gradient's bytes
  std::vector<cpu::HostOptimizerTensor> list;
  host.reserve(tensors.size() * 3);
  grads.reserve(tensors.size());
  for (const OptimizerTensor& t : tensors) {
    check_optimizer_tensor(t, states);
    const size_t n = t.weight.bytes / sizeof(float);
    cpu::HostOptimizerTensor h;
    h.n = n;
    h.decay = t.decay;
    auto fetch = [&](const DeviceSpan& span) {
      host.emplace_back(n);
      copy_to_host(host.back().data(), span);
      return host.back().data();
    };
    h.weight = fetch(t.weight);
    h.grad_dtype = t.grad_dtype;
    grads.emplace_back(t.grad.bytes);  // as stored (f32 or 16-bit), widened chunk by chunk by the passes
    copy_to_host(grads.back().data(), t.grad);
    h.grad = grads.back().data();
    for (int k = 0; k < states; ++k) h.state[k] = fetch(t.state[k]);
    list.push_back(h);
  }
  cpu::optimizer_step(hyper, s, list, 1);
  for (size_t i = 0; i < tensors.size(); ++i) {
    copy_to_device(tensors[i].weight, list[i].weight);
    for (int k = 0; k < states; ++k) copy_to_device(tensors[i].state[k], list[i].state[k]);
  }
}

void cpu::CpuDevice::optimizer_step(const optim_math::Hyperparameters& hyper, const DeviceSpan& scalars,
                                    std::span<const OptimizerTensor> tensors) {
  if (compute() != ComputeType::f32) throw std::logic_error("cpu backend: the optimizer needs f32 storage");
  check_step_scalars(scalars);
  optim_math::StepScalars s;  // a copy: the buffer is host memory, written when copy_to_device_async ran
  std::memcpy(&s, kernel_address(scalars), sizeof(s));
  const int states = optimizer_state_arrays(hyper.rule);
  std::vector<cpu::HostOptimizerTensor> list;
  list.reserve(tensors.size());
  for (const OptimizerTensor& t : tensors) {
    check_optimizer_tensor(t, states);
    cpu::HostOptimizerTensor h;
    h.n = t.weight.bytes / sizeof(float);
    h.decay = t.decay;
    h.weight = static_cast<float*>(kernel_address(t.weight));
    h.grad = kernel_address(t.grad);
    h.grad_dtype = t.grad_dtype;
    for (int k = 0; k < states; ++k) h.state[k] = static_cast<float*>(kernel_address(t.state[k]));
    list.push_back(h);
  }
  cpu::optimizer_step(hyper, s, list, threads());
}

}  // namespace ptsim::runtime
