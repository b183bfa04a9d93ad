// runtime/exec/cuda/add.cu — y = x0 + x1 + … (OpKind::add), up to 8 inputs per launch; more inputs add on
// to y in further launches, which keeps the CPU's left-to-right order ((x0 + x1) + x2 …).
#include <algorithm>

#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/kernel_common.cuh"

namespace ptsim::runtime::cuda {
namespace {

constexpr int kMaxInputs = 8;
struct Inputs {
  const float* x[kMaxInputs];
  int count;
  bool onto_y;  // y is the running sum of earlier inputs
};

__global__ void add_kernel(float* y, Inputs in, int64_t n) {
  PTSIM_GRID_STRIDE(i, n) {
    float s = in.onto_y ? y[i] : in.x[0][i];
    for (int k = in.onto_y ? 0 : 1; k < in.count; ++k) s += in.x[k][i];
    y[i] = s;
  }
}

__global__ void zero_kernel(float* y, int64_t n) {
  PTSIM_GRID_STRIDE(i, n) y[i] = 0.0f;
}

}  // namespace

void launch_add(float* y, std::span<const float* const> xs, int64_t n, cudaStream_t stream) {
  if (xs.empty()) {
    zero_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, n);
    return;
  }
  size_t done = 0;
  while (done < xs.size()) {
    Inputs in{};
    in.onto_y = done > 0;
    const size_t take = std::min<size_t>(xs.size() - done, kMaxInputs);
    for (size_t k = 0; k < take; ++k) in.x[k] = xs[done + k];
    in.count = static_cast<int>(take);
    add_kernel<<<blocks_for(n), kThreads, 0, stream>>>(y, in, n);
    done += take;
  }
}

}  // namespace ptsim::runtime::cuda
