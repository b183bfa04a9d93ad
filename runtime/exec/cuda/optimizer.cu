// runtime/exec/cuda/optimizer.cu — the multi-tensor optimizer step on the GPU (optimizer.hpp): every pass is
// one launch over the whole tensor list, driven by a device table of (tensor, chunk) work items
// (optimizer_plan.hpp, the CPU reference's chunks), so the per-tensor norms and every fp32 value equal the
// CPU reference's bits (runtime/exec/cpu_optimizer.cpp; contract: docs/executor.md, "The device seam").
//   * apply passes (AdamW, SGD, LAMB's and LANS's last pass): one block per chunk, threads stride the chunk;
//     each element is independent, so any schedule gives the same bits.
//   * sum passes (LAMB pass 1, LANS passes 0 and 1): one warp per chunk, 32 consecutive elements at a time
//     (coalesced); each thread computes its element and its squares in double, and the chunk's sums follow
//     the CPU's lane order (math/lane_sums.hpp): thread j < 16 is lane j and adds its own element, then
//     thread j + 16's, then the 16 lanes combine in the fixed tree — so the chunk's partial sums are the
//     CPU's bits.
//   * per-tensor kernels (one thread per tensor): the tensor's chunk partials added in chunk order, then
//     trust ratios, inverse gradient norms and step sizes in double and rounded to fp32, exactly as the CPU
//     reference forms them; they stay on the device (no host round trip).
// Compiled with --fmad=false (runtime/exec/cuda/meson.build): nvcc contracts a·b + c into one FMA by
// default, which rounds once where the CPU reference rounds twice (the default build targets x86-64's
// baseline, which has no FMA instruction), so e.g. m ← β1·m + (1−β1)·g would differ in the last bit; with
// the flag the PTX has mul.rn/add.rn and no fma (checked: 37 fma.rn.f32 without it, 0 with it). fp32
// division and sqrtf stay IEEE round-to-nearest (nvcc's defaults -prec-div=true, -prec-sqrt=true,
// -ftz=false; no --use_fast_math); double division and sqrt are always correctly rounded.
// Step scalars: every kernel reads the step's optim_math::StepScalars (lr, the bias corrections of t, clip,
// grad_factor, skip; step_scalars.hpp) from device memory, where the host wrote them on the stream; the rule's
// fixed coefficients (β, 1 − β, ε, λ) come by value.
// Gradients: every pass reads element e of a tensor's gradient as math::scaled_element (f32, f16 or bf16
// widened, times the step's fp32 grad_factor; scaled_read.hpp), the value the CPU reference's fp32_chunk
// forms, so a 16-bit gradient bucket with the loss-scale unscale on read gets the reference's bits too.
#include <cuda_runtime.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

#include "runtime/exec/cpu_parallel.hpp"  // defines: kChunkElements
#include "runtime/exec/cuda/cuda_check.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/cuda/optimizer.hpp"
#include "runtime/exec/math/lane_sums.hpp"
#include "runtime/exec/math/scaled_read.hpp"

namespace ptsim::runtime::cuda {

// One tensor as the kernels see it: addresses (v null for SGD) and its chunks in the work list.
struct DeviceTensor {
  float* weight;
  const void* grad;  // grad_storage elements
  float* m;          // SGD: the momentum
  float* v;
  int64_t first_chunk, chunks;
  int32_t decay;
  math::Storage grad_storage;
};

namespace {

using optim_math::AdamStep;
using optim_math::StepScalars;

constexpr int kSumWarps = 4;  // warps (chunks) per block of the sum passes

// Frees what cudaMalloc gave (errors ignored: see ~CudaDevice).
struct CudaFree {
  void operator()(void* p) const { (void)cudaFree(p); }
};
template <class T>
using DeviceArray = std::unique_ptr<T, CudaFree>;

template <class T>
DeviceArray<T> device_array(size_t count) {
  void* p = nullptr;
  if (count > 0) PTSIM_CUDA_CHECK(cudaMalloc(&p, count * sizeof(T)));
  return DeviceArray<T>(static_cast<T*>(p));
}

}  // namespace

// The uploaded work list and the scratch the passes write: per chunk two partial sums; per tensor LANS's
// Σg², Σw², the inverse gradient norm and the two step sizes (LAMB's step is step_r).
struct OptimizerDeviceTables {
  std::vector<OptimizerTensorAddresses> list;  // the tensor list these tables are for
  int64_t tensor_count = 0, chunk_count = 0;
  std::vector<DeviceTensor> host_tensors;  // kept: the source of the asynchronous upload
  std::vector<OptimizerChunk> host_chunks;
  DeviceArray<DeviceTensor> tensors;
  DeviceArray<OptimizerChunk> chunks;
  DeviceArray<double2> partials, grad_weight_squares;
  DeviceArray<float> inv_grad_norm, step_r, step_c;
};

namespace {

// ---- per-element work of each pass (optim_math's functions; i is the tensor's index in the list) ----

// The fp32 gradient of element e of t: widened, times the step's grad_factor (scaled_read.hpp).
__device__ float gradient(const DeviceTensor& t, int64_t e, float grad_factor) {
  return math::scaled_element(t.grad, t.grad_storage, e, grad_factor);
}

// The run's fixed Adam coefficients (adam_step of step 1, by value) for t, with the step's bias corrections
// from its scalars: adam_step(h, s.t, decay)'s bits (step_scalars.hpp).
struct AdamFixed {
  AdamStep decay, no_decay;
  __device__ AdamStep of(const DeviceTensor& t, const StepScalars& s) const {
    return optim_math::with_bias_corrections(t.decay ? decay : no_decay, s);
  }
};

// Every element functor takes (tensor, its index i in the list, element e, the step's scalars).
struct AdamWElement {
  AdamFixed c;
  __device__ void operator()(const DeviceTensor& t, int64_t, int64_t e, const StepScalars& s) const {
    optim_math::adamw_element(t.weight[e], gradient(t, e, s.grad_factor), t.m[e], t.v[e], c.of(t, s), s.lr_f32, s.clip);
  }
};

struct SgdElement {
  float mu, lambda;
  __device__ void operator()(const DeviceTensor& t, int64_t, int64_t e, const StepScalars& s) const {
    optim_math::sgd_element(t.weight[e], gradient(t, e, s.grad_factor), t.m[e], mu, t.decay ? lambda : 0.0f, s.lr_f32,
                            s.clip);
  }
};

struct LambApplyElement {
  AdamFixed c;
  const float* step;
  __device__ void operator()(const DeviceTensor& t, int64_t i, int64_t e, const StepScalars& s) const {
    optim_math::lamb_apply(t.weight[e], t.m[e], t.v[e], c.of(t, s), step[i]);
  }
};

struct LansApplyElement {
  AdamFixed c;
  const float *inv_grad_norm, *step_r, *step_c;
  __device__ void operator()(const DeviceTensor& t, int64_t i, int64_t e, const StepScalars& s) const {
    optim_math::lans_apply(t.weight[e], gradient(t, e, s.grad_factor), inv_grad_norm[i], t.m[e], t.v[e], c.of(t, s),
                           step_r[i], step_c[i]);
  }
};

// Sum passes: the two values whose squares are summed (x, y), as the CPU reference returns them.
struct LambMomentsSquares {  // pass 1: moments; u and w (the weight before the step)
  AdamFixed c;
  __device__ float2 operator()(const DeviceTensor& t, int64_t, int64_t e, const StepScalars& s) const {
    const float w = t.weight[e];
    const float u =
        optim_math::lamb_moments_and_direction(w, gradient(t, e, s.grad_factor), t.m[e], t.v[e], c.of(t, s), s.clip);
    return make_float2(u, w);
  }
};

struct LansGradWeightSquares {  // pass 0: g and w
  __device__ float2 operator()(const DeviceTensor& t, int64_t, int64_t e, const StepScalars& s) const {
    return make_float2(gradient(t, e, s.grad_factor), t.weight[e]);
  }
};

struct LansMomentsSquares {  // pass 1: moments on ĝ; r + λw and c + λw
  AdamFixed c;
  const float* inv_grad_norm;
  __device__ float2 operator()(const DeviceTensor& t, int64_t i, int64_t e, const StepScalars& s) const {
    float ur = 0.0f, uc = 0.0f;
    optim_math::lans_moments_and_directions(t.weight[e], gradient(t, e, s.grad_factor), inv_grad_norm[i], t.m[e],
                                            t.v[e], c.of(t, s), ur, uc);
    return make_float2(ur, uc);
  }
};

// ---- kernels (each reads the step's scalars once per thread and returns at once when the step is skipped;
// the flag is the same for every thread, so a warp returns whole) ----

// Block k runs element(tensor, i, e, s) on every element of chunk k.
template <class Element>
__global__ void apply_kernel(const DeviceTensor* tensors, const OptimizerChunk* chunks, const StepScalars* scalars,
                             Element element) {
  const StepScalars s = *scalars;
  if (s.skip != 0) return;
  const OptimizerChunk ch = chunks[blockIdx.x];
  const DeviceTensor t = tensors[ch.tensor];  // in registers: read once per chunk
  for (int64_t e = ch.begin + threadIdx.x; e < ch.end; e += blockDim.x) element(t, ch.tensor, e, s);
}

// Warp w of block b takes chunk k = b·kSumWarps + w: partials[k] = (Σ x², Σ y²) over its elements in the lane
// order of math/lane_sums.hpp: element begin + i goes to lane i mod 16 (thread i mod 32 computes it; threads
// 16..31 hand theirs to thread i − 16, which adds it after its own), then the fixed tree.
template <class Squares>
__global__ void chunk_sums_kernel(const DeviceTensor* tensors, const OptimizerChunk* chunks, int64_t chunk_count,
                                  const StepScalars* scalars, double2* partials, Squares squares) {
  const StepScalars s = *scalars;
  if (s.skip != 0) return;
  const int warp = static_cast<int>(threadIdx.x / 32), lane = static_cast<int>(threadIdx.x % 32);
  const int64_t k = static_cast<int64_t>(blockIdx.x) * kSumWarps + warp;
  if (k >= chunk_count) return;  // the whole warp: the shuffles below stay within full warps
  const OptimizerChunk ch = chunks[k];
  const DeviceTensor t = tensors[ch.tensor];  // in registers: read once per chunk
  double sx = 0.0, sy = 0.0;
  for (int64_t base = ch.begin; base < ch.end; base += 32) {
    const int64_t e = base + lane;
    double qx = 0.0, qy = 0.0;  // past the end: adding +0.0 to a lane's sum (≥ +0 or NaN) changes no bit
    if (e < ch.end) {
      const float2 v = squares(t, ch.tensor, e, s);
      qx = static_cast<double>(v.x) * v.x;
      qy = static_cast<double>(v.y) * v.y;
    }
    const double hx = __shfl_down_sync(0xffffffffu, qx, 16), hy = __shfl_down_sync(0xffffffffu, qy, 16);
    sx += qx;  // lane (e − begin) mod 16 = lane for threads < 16: element base + lane, then base + 16 + lane
    sy += qy;
    sx += hx;
    sy += hy;
  }
  for (int w = math::kSumLanes / 2; w >= 1; w /= 2) {  // combine_lanes on threads 0..15
    sx += __shfl_down_sync(0xffffffffu, sx, w);
    sy += __shfl_down_sync(0xffffffffu, sy, w);
  }
  if (lane == 0) partials[k] = make_double2(sx, sy);
}

// Σ of a tensor's chunk partials, in chunk order from 0 (the CPU reference's per-tensor total).
__device__ double2 tensor_total(const double2* partials, const DeviceTensor& t) {
  double x = 0.0, y = 0.0;
  for (int64_t k = t.first_chunk; k < t.first_chunk + t.chunks; ++k) {
    x += partials[k].x;
    y += partials[k].y;
  }
  return make_double2(x, y);
}

// NVLAMB: step = fp32(lr · ratio), ratio = ‖w‖/‖u‖ (1 where either is 0), or 1 where use_nvlamb is false and
// the tensor's λ is 0. partials: (Σu², Σw²); lr: the scalars' double.
__global__ void lamb_steps_kernel(const DeviceTensor* tensors, int64_t count, const double2* partials,
                                  const StepScalars* scalars, bool use_nvlamb, bool decay_lambda_nonzero, float* step) {
  if (scalars->skip != 0) return;
  const double lr = scalars->lr;
  PTSIM_GRID_STRIDE(i, count) {
    const double2 s = tensor_total(partials, tensors[i]);
    const bool apply_ratio = use_nvlamb || (tensors[i].decay != 0 && decay_lambda_nonzero);
    step[i] = static_cast<float>(lr * (apply_ratio ? optim_math::trust_ratio(sqrt(s.y), sqrt(s.x)) : 1.0));
  }
}

// LANS after pass 0: keeps (Σg², Σw²) per tensor; inv‖g‖ = fp32(1/√Σg²), 0 when Σg² = 0.
__global__ void lans_inverse_norms_kernel(const DeviceTensor* tensors, int64_t count, const double2* partials,
                                          const StepScalars* scalars, double2* grad_weight_squares,
                                          float* inv_grad_norm) {
  if (scalars->skip != 0) return;
  PTSIM_GRID_STRIDE(i, count) {
    const double2 s = tensor_total(partials, tensors[i]);
    grad_weight_squares[i] = s;
    inv_grad_norm[i] = s.x > 0.0 ? static_cast<float>(1.0 / sqrt(s.x)) : 0.0f;
  }
}

// LANS after pass 1: step_r = fp32(lr·β1·ratio_r), step_c = fp32(lr·(1−β1)·ratio_c). partials: (Σ(r+λw)²,
// Σ(c+λw)²); lr: the scalars' double.
__global__ void lans_steps_kernel(const DeviceTensor* tensors, int64_t count, const double2* partials,
                                  const double2* grad_weight_squares, const StepScalars* scalars, double beta1,
                                  float* step_r, float* step_c) {
  if (scalars->skip != 0) return;
  const double lr = scalars->lr;
  PTSIM_GRID_STRIDE(i, count) {
    const double2 s = tensor_total(partials, tensors[i]);
    const double w_norm = sqrt(grad_weight_squares[i].y);
    step_r[i] = static_cast<float>(lr * beta1 * optim_math::trust_ratio(w_norm, sqrt(s.x)));
    step_c[i] = static_cast<float>(lr * (1.0 - beta1) * optim_math::trust_ratio(w_norm, sqrt(s.y)));
  }
}

// ---- launches (the caller skips them when the list has no elements) ----

template <class Element>
void launch_apply(const OptimizerDeviceTables& d, const StepScalars* scalars, const Element& element, const char* what,
                  cudaStream_t stream) {
  apply_kernel<<<static_cast<unsigned>(d.chunk_count), kThreads, 0, stream>>>(d.tensors.get(), d.chunks.get(), scalars,
                                                                              element);
  check_launch(what);
}

template <class Squares>
void launch_sums(const OptimizerDeviceTables& d, const StepScalars* scalars, const Squares& squares, const char* what,
                 cudaStream_t stream) {
  const auto blocks = static_cast<unsigned>((d.chunk_count + kSumWarps - 1) / kSumWarps);
  chunk_sums_kernel<<<blocks, kSumWarps * 32, 0, stream>>>(d.tensors.get(), d.chunks.get(), d.chunk_count, scalars,
                                                            d.partials.get(), squares);
  check_launch(what);
}

unsigned tensor_blocks(const OptimizerDeviceTables& d) { return blocks_for(d.tensor_count); }

// The rule's t-independent coefficients (adam_step of step 1; the kernels put in the step's bias corrections).
AdamFixed adam_fixed(const optim_math::Hyperparameters& h) {
  return {optim_math::adam_step(h, 1, true), optim_math::adam_step(h, 1, false)};
}

void lamb(const optim_math::Hyperparameters& h, const StepScalars* scalars, const OptimizerDeviceTables& d,
          cudaStream_t stream) {
  const AdamFixed c = adam_fixed(h);
  launch_sums(d, scalars, LambMomentsSquares{c}, "optimizer: lamb moments", stream);
  lamb_steps_kernel<<<tensor_blocks(d), kThreads, 0, stream>>>(d.tensors.get(), d.tensor_count, d.partials.get(),
                                                                scalars, h.use_nvlamb, c.decay.lambda != 0.0f,
                                                                d.step_r.get());
  check_launch("optimizer: lamb trust ratios");
  launch_apply(d, scalars, LambApplyElement{c, d.step_r.get()}, "optimizer: lamb apply", stream);
}

void lans(const optim_math::Hyperparameters& h, const StepScalars* scalars, const OptimizerDeviceTables& d,
          cudaStream_t stream) {
  const AdamFixed c = adam_fixed(h);
  launch_sums(d, scalars, LansGradWeightSquares{}, "optimizer: lans norms", stream);
  lans_inverse_norms_kernel<<<tensor_blocks(d), kThreads, 0, stream>>>(d.tensors.get(), d.tensor_count,
                                                                        d.partials.get(), scalars,
                                                                        d.grad_weight_squares.get(),
                                                                        d.inv_grad_norm.get());
  check_launch("optimizer: lans gradient norms");
  launch_sums(d, scalars, LansMomentsSquares{c, d.inv_grad_norm.get()}, "optimizer: lans moments", stream);
  lans_steps_kernel<<<tensor_blocks(d), kThreads, 0, stream>>>(d.tensors.get(), d.tensor_count, d.partials.get(),
                                                                d.grad_weight_squares.get(), scalars, h.beta1,
                                                                d.step_r.get(), d.step_c.get());
  check_launch("optimizer: lans trust ratios");
  launch_apply(d, scalars, LansApplyElement{c, d.inv_grad_norm.get(), d.step_r.get(), d.step_c.get()},
               "optimizer: lans apply", stream);
}

// The device tables for one tensor list: its plan uploaded, its scratch allocated (enqueued on `stream`).
std::unique_ptr<OptimizerDeviceTables> build_tables(std::span<const OptimizerTensorAddresses> tensors,
                                                    cudaStream_t stream) {
  std::vector<OptimizerPlanTensor> sizes;
  sizes.reserve(tensors.size());
  for (const OptimizerTensorAddresses& t : tensors) sizes.push_back({t.elements, t.decay});
  OptimizerPlan plan = plan_optimizer_step(sizes, cpu::kChunkElements);

  auto d = std::make_unique<OptimizerDeviceTables>();
  d->list.assign(tensors.begin(), tensors.end());
  d->tensor_count = static_cast<int64_t>(tensors.size());
  d->chunk_count = static_cast<int64_t>(plan.chunks.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const OptimizerTensorAddresses& a = tensors[i];
    const OptimizerTensorRange& r = plan.tensors[i];
    d->host_tensors.push_back(
        {a.weight, a.grad, a.state[0], a.state[1], r.first_chunk, r.chunks, r.decay, a.grad_storage});
  }
  d->host_chunks = std::move(plan.chunks);
  const auto tensor_count = static_cast<size_t>(d->tensor_count), chunk_count = static_cast<size_t>(d->chunk_count);
  d->tensors = device_array<DeviceTensor>(tensor_count);
  d->chunks = device_array<OptimizerChunk>(chunk_count);
  d->partials = device_array<double2>(chunk_count);
  d->grad_weight_squares = device_array<double2>(tensor_count);
  d->inv_grad_norm = device_array<float>(tensor_count);
  d->step_r = device_array<float>(tensor_count);
  d->step_c = device_array<float>(tensor_count);
  // From pageable memory the copy has read the source when the call returns; the host vectors stay anyway.
  if (tensor_count > 0)
    PTSIM_CUDA_CHECK(cudaMemcpyAsync(d->tensors.get(), d->host_tensors.data(), tensor_count * sizeof(DeviceTensor),
                                     cudaMemcpyHostToDevice, stream));
  if (chunk_count > 0)
    PTSIM_CUDA_CHECK(cudaMemcpyAsync(d->chunks.get(), d->host_chunks.data(), chunk_count * sizeof(OptimizerChunk),
                                     cudaMemcpyHostToDevice, stream));
  return d;
}

bool same_list(const OptimizerDeviceTables& d, std::span<const OptimizerTensorAddresses> tensors) {
  return std::equal(d.list.begin(), d.list.end(), tensors.begin(), tensors.end());
}

// The step's norm verdict, one thread (optim_math::finish_norm: the host's expressions, correctly rounded √ and
// / in double on both sides).
__global__ void finish_step_scalars_kernel(StepScalars* scalars, const double* sum_of_squares, double max_grad_norm) {
  optim_math::finish_norm(*scalars, *sum_of_squares, max_grad_norm);
}

// The loss scale's step after the verdict, one thread (optim_math::update_loss_scale: LossScaler's rule).
__global__ void update_loss_scale_kernel(optim_math::LossScaleState* state, const StepScalars* scalars) {
  optim_math::update_loss_scale(*state, scalars->skip != 0);
}

// *sum = *sum + *value, one thread (the host's `loss_sum += loss`; fp32 widens exactly).
__global__ void add_to_sum_kernel(double* sum, const float* value) {
  *sum = *sum + static_cast<double>(*value);
}

}  // namespace

void launch_update_loss_scale(optim_math::LossScaleState* state, const StepScalars* scalars, cudaStream_t stream) {
  update_loss_scale_kernel<<<1, 1, 0, stream>>>(state, scalars);
}

void launch_add_to_sum(double* sum, const float* value, cudaStream_t stream) {
  add_to_sum_kernel<<<1, 1, 0, stream>>>(sum, value);
}

void launch_finish_step_scalars(StepScalars* scalars, const double* sum_of_squares, double max_grad_norm,
                                cudaStream_t stream) {
  finish_step_scalars_kernel<<<1, 1, 0, stream>>>(scalars, sum_of_squares, max_grad_norm);
}

MultiTensorOptimizer::MultiTensorOptimizer(StreamWait wait_for_stream) : wait_for_stream_(std::move(wait_for_stream)) {}

MultiTensorOptimizer::~MultiTensorOptimizer() = default;  // the owner drained the streams (see the header)

const OptimizerDeviceTables& MultiTensorOptimizer::tables_for(std::span<const OptimizerTensorAddresses> tensors,
                                                              cudaStream_t stream) {
  for (size_t k = 0; k < tables_.size(); ++k) {  // from the entry after the last one used
    const size_t at = (last_ + 1 + k) % tables_.size();
    if (same_list(*tables_[at], tensors)) {
      last_ = at;
      return *tables_[at];
    }
  }
  if (tables_.size() >= kMaxLists) {
    wait_for_stream_(stream, "the optimizer's stream (table cache drain)");  // the dropped tables' last readers ran
    tables_.clear();
  }
  tables_.push_back(build_tables(tensors, stream));
  last_ = tables_.size() - 1;
  return *tables_.back();
}

void MultiTensorOptimizer::step(const optim_math::Hyperparameters& hyper, const StepScalars* scalars,
                                std::span<const OptimizerTensorAddresses> tensors, cudaStream_t stream) {
  const OptimizerDeviceTables& d = tables_for(tensors, stream);
  if (d.chunk_count == 0) return;  // no elements: nothing to update
  switch (hyper.rule) {
    case optim_math::Rule::adamw:
      launch_apply(d, scalars, AdamWElement{adam_fixed(hyper)}, "optimizer: adamw", stream);
      return;
    case optim_math::Rule::sgd:
      launch_apply(d, scalars,
                   SgdElement{static_cast<float>(hyper.momentum), static_cast<float>(hyper.weight_decay)},
                   "optimizer: sgd", stream);
      return;
    case optim_math::Rule::lamb: return lamb(hyper, scalars, d, stream);
    case optim_math::Rule::lans: return lans(hyper, scalars, d, stream);
  }
  throw std::invalid_argument("optimizer_step: unknown rule");
}

}  // namespace ptsim::runtime::cuda
