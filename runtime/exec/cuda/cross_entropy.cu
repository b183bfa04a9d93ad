// runtime/exec/cuda/cross_entropy.cu — the fused cross-entropy (MLM and NSP) over the valid classes:
// forward = per-row logsumexp (one block per row) and the row's loss term, then one thread adds the terms
// in row order in double and divides by the labelled count (the CPU's order); backward = the labelled
// count, then dlogits from math::cross_entropy_dlogit. Bad labels are reported (device_error.hpp).
// The logits and dlogits in their storage (S: math/row_storage.hpp — fp32, or 16-bit loaded exactly and
// stored rounded once, the op boundary's bits); loss, lse and dloss fp32, as the graph stores them.
#include <cuda_runtime.h>

#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/cuda/rows.hpp"
#include "runtime/exec/math/norm_math.hpp"
#include "runtime/exec/math/row_storage.hpp"

namespace ptsim::runtime::cuda {
namespace {

using math::Elem;

// term[p] = lse − logit[label] (0 for an ignored or bad row); counted[p] = 1 when labelled.
template <class S>
__global__ void cross_entropy_rows_kernel(float* lse, double* term, int32_t* counted, const Elem<S>* logits,
                                          const int32_t* labels, int64_t C, int64_t V, DeviceError* error) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const Elem<S>* z = logits + row * C;
  float mx = -INFINITY;
  for (int64_t c = threadIdx.x; c < V; c += blockDim.x) mx = fmaxf(mx, S::load(z[c]));
  mx = block_reduce(mx, MaxOp<float>{}, shared);
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < V; c += blockDim.x) sum += math::exp_of(S::load(z[c]) - mx);
  sum = block_reduce(sum, SumOp<float>{}, shared);
  if (threadIdx.x != 0) return;
  const double l = static_cast<double>(mx) + math::log_of(static_cast<double>(sum));
  lse[row] = static_cast<float>(l);
  const int32_t label = labels[row];
  const bool ok = label >= -1 && label < V;
  if (!ok) report_device_error(error, DeviceErrorKind::label, label, row, V);
  const bool counts = ok && math::label_counts(label);
  term[row] = counts ? l - static_cast<double>(S::load(z[label])) : 0.0;
  counted[row] = counts ? 1 : 0;
}

__global__ void cross_entropy_mean_kernel(float* loss, const double* term, const int32_t* counted, int64_t P) {
  double total = 0.0;
  int64_t count = 0;
  for (int64_t p = 0; p < P; ++p) {
    total += term[p];
    count += counted[p];
  }
  *loss = count > 0 ? static_cast<float>(total / static_cast<double>(count)) : 0.0f;
}

// *scale = dloss / n_labelled (0 when no row is labelled); one block.
__global__ void cross_entropy_scale_kernel(float* scale, const float* dloss, const int32_t* labels, int64_t P,
                                           int64_t V, DeviceError* error) {
  __shared__ int64_t shared[32];
  int64_t count = 0;
  for (int64_t p = threadIdx.x; p < P; p += blockDim.x) {
    const int32_t label = labels[p];
    if (label < -1 || label >= V) report_device_error(error, DeviceErrorKind::label, label, p, V);
    else if (math::label_counts(label)) ++count;
  }
  count = block_reduce(count, SumOp<int64_t>{}, shared);
  if (threadIdx.x == 0)
    *scale = count > 0 ? static_cast<float>(static_cast<double>(*dloss) / static_cast<double>(count)) : 0.0f;
}

template <class S>
__global__ void cross_entropy_backward_kernel(Elem<S>* dlogits, const float* scale, const Elem<S>* logits,
                                              const int32_t* labels, const float* lse, int64_t P, int64_t C,
                                              int64_t V) {
  const float s = *scale;
  PTSIM_GRID_STRIDE(i, P * C) {
    const int64_t p = i / C, c = i % C;
    const int32_t label = labels[p];
    const bool live = s != 0.0f && label >= 0 && label < V && c < V;
    dlogits[i] = live ? math::cross_entropy_dlogit_stored<S>(logits[i], lse[p], s, c == label) : S::store(0.0f);
  }
}

}  // namespace

size_t cross_entropy_scratch_bytes(int64_t P) {
  return static_cast<size_t>(P) * (sizeof(double) + sizeof(int32_t)) + 16;
}

void launch_cross_entropy_forward(math::Storage storage, float* loss, float* lse, const void* logits,
                                  const int32_t* labels, int64_t P, int64_t C, int64_t valid, void* scratch,
                                  DeviceError* error, cudaStream_t stream) {
  const int64_t V = math::effective_classes(C, valid);
  auto* term = static_cast<double*>(scratch);
  auto* counted = reinterpret_cast<int32_t*>(term + P);
  if (P > 0)
    math::with_storage(storage, [&](auto tag) {
      using S = decltype(tag);
      cross_entropy_rows_kernel<S><<<static_cast<unsigned>(P), kThreads, 0, stream>>>(
          lse, term, counted, static_cast<const Elem<S>*>(logits), labels, C, V, error);
    });
  cross_entropy_mean_kernel<<<1, 1, 0, stream>>>(loss, term, counted, P);
}

void launch_cross_entropy_backward(math::Storage storage, void* dlogits, const float* dloss, const void* logits,
                                   const int32_t* labels, const float* lse, int64_t P, int64_t C, int64_t valid,
                                   void* scratch, DeviceError* error, cudaStream_t stream) {
  const int64_t V = math::effective_classes(C, valid);
  auto* scale = static_cast<float*>(scratch);
  cross_entropy_scale_kernel<<<1, kThreads, 0, stream>>>(scale, dloss, labels, P, V, error);
  math::with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    cross_entropy_backward_kernel<S><<<blocks_for(P * C), kThreads, 0, stream>>>(
        static_cast<Elem<S>*>(dlogits), scale, static_cast<const Elem<S>*>(logits), labels, lse, P, C, V);
  });
}

}  // namespace ptsim::runtime::cuda
