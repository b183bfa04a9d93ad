// runtime/exec/cuda/layernorm.cu — LayerNorm forward and backward, one block per row, fp32 statistics
// (two-pass mean and variance with deterministic block reductions); dgamma/dbeta as deterministic column
// sums (column_sums.cuh). Per-element maths: math/norm_math.hpp, the CPU backend's formulas. One kernel per
// pass over the storage of x, γ, β, dy and the outputs (S: math/row_storage.hpp — fp32, or 16-bit loaded
// exactly and stored rounded once, the op boundary's bits); mean and rstd are fp32 either way.
#include "runtime/exec/cuda/column_sums.cuh"
#include "runtime/exec/cuda/rows.hpp"
#include "runtime/exec/math/norm_math.hpp"
#include "runtime/exec/math/row_storage.hpp"

namespace ptsim::runtime::cuda {
namespace {

using math::Elem;

template <class S>
__global__ void layernorm_forward_kernel(Elem<S>* y, float* mean, float* rstd, const Elem<S>* x,
                                         const Elem<S>* gamma, const Elem<S>* beta, int64_t N, double eps) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const Elem<S>* xr = x + row * N;
  float s = 0.0f;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) s += S::load(xr[n]);
  const float mu = block_reduce(s, SumOp<float>{}, shared) / static_cast<float>(N);
  float v = 0.0f;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) {
    const float xn = S::load(xr[n]);
    v += (xn - mu) * (xn - mu);
  }
  const float var = block_reduce(v, SumOp<float>{}, shared) / static_cast<float>(N);
  const float rs = math::layernorm_rstd<float>(var, eps);
  if (threadIdx.x == 0) {
    mean[row] = mu;
    rstd[row] = rs;
  }
  Elem<S>* yr = y + row * N;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x)
    yr[n] = math::layernorm_output_stored<S>(xr[n], mu, rs, gamma[n], beta[n]);
}

template <class S>
__global__ void layernorm_dx_kernel(Elem<S>* dx, const Elem<S>* dy, const Elem<S>* x, const Elem<S>* gamma,
                                    const float* mean, const float* rstd, int64_t N) {
  __shared__ float shared[32];
  const int64_t row = blockIdx.x;
  const Elem<S>* dyr = dy + row * N;
  const Elem<S>* xr = x + row * N;
  const float mu = mean[row], rs = rstd[row];
  float g = 0.0f, gx = 0.0f;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x) {
    const float gi = S::load(dyr[n]) * S::load(gamma[n]);
    g += gi;
    gx += gi * math::layernorm_xhat(S::load(xr[n]), mu, rs);
  }
  const float g_mean = block_reduce(g, SumOp<float>{}, shared) / static_cast<float>(N);
  const float gx_mean = block_reduce(gx, SumOp<float>{}, shared) / static_cast<float>(N);
  Elem<S>* dxr = dx + row * N;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x)
    dxr[n] = math::layernorm_dx_stored<S>(dyr[n], gamma[n], xr[n], mu, rs, g_mean, gx_mean);
}

template <class S>
struct DgammaTerm {
  const Elem<S>* dy;
  const Elem<S>* x;
  const float* mean;
  const float* rstd;
  int64_t N;
  __device__ float operator()(int64_t m, int64_t n) const {
    return S::load(dy[m * N + n]) * math::layernorm_xhat(S::load(x[m * N + n]), mean[m], rstd[m]);
  }
};
}  // namespace

void launch_layernorm_forward(math::Storage storage, void* y, float* mean, float* rstd, const void* x,
                              const void* gamma, const void* beta, int64_t M, int64_t N, double eps,
                              cudaStream_t stream) {
  if (M == 0) return;
  math::with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    layernorm_forward_kernel<S><<<static_cast<unsigned>(M), kThreads, 0, stream>>>(
        static_cast<Elem<S>*>(y), mean, rstd, static_cast<const Elem<S>*>(x), static_cast<const Elem<S>*>(gamma),
        static_cast<const Elem<S>*>(beta), N, eps);
  });
}

void launch_layernorm_backward(math::Storage storage, void* dx, void* dgamma, void* dbeta, const void* dy,
                               const void* x, const void* gamma, const float* mean, const float* rstd, int64_t M,
                               int64_t N, void* scratch, cudaStream_t stream) {
  math::with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    const auto* dy_s = static_cast<const Elem<S>*>(dy);
    const auto* x_s = static_cast<const Elem<S>*>(x);
    if (M > 0)
      layernorm_dx_kernel<S><<<static_cast<unsigned>(M), kThreads, 0, stream>>>(
          static_cast<Elem<S>*>(dx), dy_s, x_s, static_cast<const Elem<S>*>(gamma), mean, rstd, N);
    float* partial = static_cast<float*>(scratch);
    column_sums_add<S>(static_cast<Elem<S>*>(dgamma), partial, DgammaTerm<S>{dy_s, x_s, mean, rstd, N}, M, N, stream);
    column_sums_add<S>(static_cast<Elem<S>*>(dbeta), partial + column_sum_chunks(M) * N,
                       math::StoredColumnTerm<S>{dy_s, N}, M, N, stream);
  });
}

}  // namespace ptsim::runtime::cuda
