// runtime/exec/cuda/add.cu — y = x0 + x1 + … (OpKind::add) in fp32, up to kMaxAddInputs inputs per launch;
// on fp32 storage more inputs add on to y in further launches, which keeps the CPU's left-to-right order
// ((x0 + x1) + x2 …). On 16-bit storage one launch takes every input (more would round the running sum
// in y: native_16bit_elementwise.hpp refuses such an add, which then runs through the op boundary).
#include <algorithm>
#include <stdexcept>

#include "runtime/exec/cuda/elementwise.hpp"
#include "runtime/exec/cuda/elementwise_kernel.cuh"

namespace ptsim::runtime::cuda {

void launch_add(void* y, std::span<const void* const> xs, int64_t n, math::Storage storage, cudaStream_t stream) {
  if (storage != math::Storage::f32 && xs.size() > static_cast<size_t>(kMaxAddInputs))
    throw std::invalid_argument("launch_add: a 16-bit add takes at most 8 inputs (one rounding of the whole sum)");
  with_storage(storage, [&](auto tag) {
    using S = decltype(tag);
    size_t done = 0;
    do {
      AddStep<S> step{};
      step.y = typed<S>(y);
      step.onto_y = done > 0;
      const size_t take = std::min<size_t>(xs.size() - done, kMaxAddInputs);
      for (size_t k = 0; k < take; ++k) step.x[k] = typed<S>(xs[done + k]);
      step.count = static_cast<int>(take);
      launch_elementwise(step, n, stream);
      done += take;
    } while (done < xs.size());
  });
}

}  // namespace ptsim::runtime::cuda
