// tests/support/gpu_doctest_main.cpp — the doctest main of the `gpu` suite's doctest executables
// (tests/runtime/golden/test_golden_cuda.cpp, tests/runtime/train/test_model_steps_cuda.cpp): exits 77, which
// meson reports as skipped, with a message saying why, when this build has no CUDA backend or the driver
// reports no CUDA device; otherwise runs the tests as doctest's own main does.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>

#include "tests/support/gpu_skip.hpp"  // defines: gpu_test_skip_status

#ifdef PTSIM_HAVE_CUDA
#include "runtime/exec/cuda/cuda_backend.hpp"  // defines: cuda_device_count
#endif

int main(int argc, char** argv) {
#ifdef PTSIM_HAVE_CUDA
  if (ptsim::runtime::cuda_device_count() == 0) {
    std::printf("%s: no CUDA device was found: skipping (these tests run the CUDA backend)\n", argv[0]);
    return ptsim::test::gpu_test_skip_status();
  }
#else
  std::printf("%s: this build has no CUDA backend (meson -Dcuda=enabled needs nvcc and the CUDA toolkit): skipping\n",
              argv[0]);
  return ptsim::test::gpu_test_skip_status();
#endif
  doctest::Context context(argc, argv);
  return context.run();
}
