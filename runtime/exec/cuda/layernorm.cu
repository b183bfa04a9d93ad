// runtime/exec/cuda/layernorm.cu — LayerNorm forward and backward, one block per row, fp32 statistics
// (two-pass mean and variance with deterministic block reductions); dgamma/dbeta as deterministic column
// sums (column_sums.cuh). Per-element maths: math/norm_math.hpp, the CPU backend's formulas.
#include "runtime/exec/cuda/column_sums.cuh"
#include "runtime/exec/cuda/rows.hpp"
#include "runtime/exec/math/norm_math.hpp"

namespace ptsim::runtime::cuda {
namespace {

__global__ void layernorm_forward_kernel(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                                         const float* beta, int64_t N, double eps) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const float* xr = x + row * N;
  float s = 0.0f;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) s += xr[n];
  const float mu = block_reduce(s, SumOp<float>{}, shared) / static_cast<float>(N);
  float v = 0.0f;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) v += (xr[n] - mu) * (xr[n] - mu);
  const float var = block_reduce(v, SumOp<float>{}, shared) / static_cast<float>(N);
  const float rs = math::layernorm_rstd<float>(var, eps);
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
  float* yr = y + row * N;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) yr[n] = math::layernorm_output(xr[n], mu, rs, gamma[n], beta[n]);
}

__global__ void layernorm_dx_kernel(float* dx, const float* dy, const float* x, const float* gamma, const float* mean,
                                    const float* rstd, int64_t N) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const float* dyr = dy + row * N;
  const float* xr = x + row * N;
  const float mu = mean[row], rs = rstd[row];
  float g = 0.0f, gx = 0.0f;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) {
    const float gi = dyr[n] * gamma[n];
    g += gi;
    gx += gi * math::layernorm_xhat(xr[n], mu, rs);
  }
  const float g_mean = block_reduce(g, SumOp<float>{}, shared) / static_cast<float>(N);
  const float gx_mean = block_reduce(gx, SumOp<float>{}, shared) / static_cast<float>(N);
  float* dxr = dx + row * N;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x)
    dxr[n] = math::layernorm_dx(dyr[n], gamma[n], math::layernorm_xhat(xr[n], mu, rs), rs, g_mean, gx_mean);
}

struct DgammaTerm {
  const float* dy;
  const float* x;
  const float* mean;
  const float* rstd;
  int64_t N;
  __device__ float operator()(int64_t m, int64_t n) const {
    return dy[m * N + n] * math::layernorm_xhat(x[m * N + n], mean[m], rstd[m]);
  }
};
struct DbetaTerm {
  const float* dy;
  int64_t N;
  __device__ float operator()(int64_t m, int64_t n) const { return dy[m * N + n]; }
};

}  // namespace

void launch_layernorm_forward(float* y, float* mean, float* rstd, const float* x, const float* gamma,
                              const float* beta, int64_t M, int64_t N, double eps, cudaStream_t stream) {
  if (M == 0) return;
  layernorm_forward_kernel<<<static_cast<unsigned>(M), kThreads, 0, stream>>>(y, mean, rstd, x, gamma, beta, N, eps);
}

void launch_layernorm_backward(float* dx, float* dgamma, float* dbeta, const float* dy, const float* x,
                               const float* gamma, const float* mean, const float* rstd, int64_t M, int64_t N,
                               void* scratch, cudaStream_t stream) {
  if (M > 0)
    layernorm_dx_kernel<<<static_cast<unsigned>(M), kThreads, 0, stream>>>(dx, dy, x, gamma, mean, rstd, N);
  float* partial = static_cast<float*>(scratch);
  column_sums_add(dgamma, partial, DgammaTerm{dy, x, mean, rstd, N}, M, N, stream);
  column_sums_add(dbeta, partial + column_sum_chunks(M) * N, DbetaTerm{dy, N}, M, N, stream);
}

}  // namespace ptsim::runtime::cuda
