// runtime/exec/cuda/vector_ops.cu — scale, sum of squares and 16-bit rounding over f32 device memory
// (vector_ops.hpp). The sum of squares uses the CPU backend's fixed chunks and, within a chunk, its lane
// order (math/lane_sums.hpp: 16 lanes, each a half-warp thread adding its elements in order, then the fixed
// tree as __shfl_down_sync steps), and adds the chunks' double partial sums in chunk order: the CPU's bits.
// The scaled sum of squares reads its elements through math/scaled_read.hpp (f32/f16/bf16 widened, times the
// fp32 factor), the value the CPU's fp32_chunk forms, and sums them in the same chunks and lanes.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "runtime/exec/cuda/kernel_common.cuh"
#include "runtime/exec/cuda/vector_ops.hpp"
#include "runtime/exec/math/lane_sums.hpp"
#include "runtime/exec/math/scaled_read.hpp"

namespace ptsim::runtime::cuda {
namespace {

__global__ void scale_kernel(float* x, int64_t n, float factor) {
  PTSIM_GRID_STRIDE(i, n) x[i] *= factor;
}

constexpr int kChunksPerBlock = 16;  // half-warps (chunks) per block of the sum of squares

// The elements of a plain fp32 array.
struct Fp32Read {
  const float* x;
  __device__ float operator()(int64_t i) const { return x[i]; }
};

// The elements of an f32/f16/bf16 array widened and multiplied by factor (scaled_read.hpp).
struct ScaledRead {
  const void* x;
  math::Storage kind;
  float factor;
  __device__ float operator()(int64_t i) const { return math::scaled_element(x, kind, i, factor); }
};

// ScaledRead with the factor in device memory (the loss scale's grad_factor, formed on the device): the
// same element values as ScaledRead{x, kind, *factor}.
struct DeviceScaledRead {
  const void* x;
  math::Storage kind;
  const float* factor;
  __device__ float operator()(int64_t i) const { return math::scaled_element(x, kind, i, *factor); }
};

// Half-warp h of block b takes chunk c = b·kChunksPerBlock + h; its thread j is lane j of lane_sums.hpp:
// the elements begin + j, begin + j + 16, ... in order, in double (x² of a float is exact in double, so
// contracting the add into an FMA would not change a bit either). read(i) gives element i as fp32.
template <class Read>
__global__ void chunk_squares_kernel(double* partials, Read read, int64_t n, int64_t chunk, int64_t chunks) {
  const int lane = static_cast<int>(threadIdx.x % math::kSumLanes);
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kChunksPerBlock + threadIdx.x / math::kSumLanes;
  double s = 0.0;
  if (c < chunks) {
    const int64_t begin = c * chunk, end = begin + chunk < n ? begin + chunk : n;
    for (int64_t i = begin + lane; i < end; i += math::kSumLanes) {
      const double v = read(i);
      s += v * v;
    }
  }
  // combine_lanes: lanes[j] += lanes[j + w] for w = 8, 4, 2, 1 (lanes ≥ w compute values nobody reads).
  for (int w = math::kSumLanes / 2; w >= 1; w /= 2) s += __shfl_down_sync(0xffffffffu, s, w, math::kSumLanes);
  if (lane == 0 && c < chunks) partials[c] = s;
}

// *out = Σ partials in chunk order; accumulate: *out = *out + that Σ (the host's `sum += one(...)`).
__global__ void add_in_order_kernel(double* out, const double* partials, int64_t count, bool accumulate) {
  double s = 0.0;
  for (int64_t c = 0; c < count; ++c) s += partials[c];
  *out = accumulate ? *out + s : s;
}

__global__ void round_kernel(float* x, int64_t n, bool bf16) {
  PTSIM_GRID_STRIDE(i, n) {
    x[i] = bf16 ? __bfloat162float(__float2bfloat16_rn(x[i])) : __half2float(__float2half_rn(x[i]));
  }
}

template <class Read>
void launch_chunk_squares(double* out, double* partials, Read read, size_t n, size_t chunk, cudaStream_t stream,
                          bool accumulate = false) {
  const size_t chunks = (n + chunk - 1) / chunk;
  if (chunks > 0) {
    const auto blocks = static_cast<unsigned>((chunks + kChunksPerBlock - 1) / kChunksPerBlock);
    chunk_squares_kernel<<<blocks, kChunksPerBlock * math::kSumLanes, 0, stream>>>(
        partials, read, static_cast<int64_t>(n), static_cast<int64_t>(chunk), static_cast<int64_t>(chunks));
  }
  add_in_order_kernel<<<1, 1, 0, stream>>>(out, partials, static_cast<int64_t>(chunks), accumulate);
}

}  // namespace

void launch_scale(float* x, size_t n, float factor, cudaStream_t stream) {
  scale_kernel<<<blocks_for(static_cast<int64_t>(n)), kThreads, 0, stream>>>(x, static_cast<int64_t>(n), factor);
}

void launch_sum_of_squares(double* out, double* partials, const float* x, size_t n, size_t chunk,
                           cudaStream_t stream) {
  launch_chunk_squares(out, partials, Fp32Read{x}, n, chunk, stream);
}

void launch_scaled_sum_of_squares(double* out, double* partials, const void* x, math::Storage kind, float factor,
                                  size_t n, size_t chunk, cudaStream_t stream) {
  launch_chunk_squares(out, partials, ScaledRead{x, kind, factor}, n, chunk, stream);
}

void launch_add_scaled_sum_of_squares(double* sum, double* partials, const void* x, math::Storage kind, float factor,
                                      size_t n, size_t chunk, cudaStream_t stream) {
  if (kind == math::Storage::f32 && factor == 1.0f)  // the plain sum's reads, as scaled_sum_of_squares takes it
    return launch_chunk_squares(sum, partials, Fp32Read{static_cast<const float*>(x)}, n, chunk, stream, true);
  launch_chunk_squares(sum, partials, ScaledRead{x, kind, factor}, n, chunk, stream, true);
}

void launch_add_scaled_sum_of_squares_by(double* sum, double* partials, const void* x, math::Storage kind,
                                         const float* factor, size_t n, size_t chunk, cudaStream_t stream) {
  launch_chunk_squares(sum, partials, DeviceScaledRead{x, kind, factor}, n, chunk, stream, true);
}

void launch_round_to_16bit(float* x, size_t n, bool bf16, cudaStream_t stream) {
  round_kernel<<<blocks_for(static_cast<int64_t>(n)), kThreads, 0, stream>>>(x, static_cast<int64_t>(n), bf16);
}

}  // namespace ptsim::runtime::cuda
