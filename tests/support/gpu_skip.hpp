// tests/support/gpu_skip.hpp — the exit status of a gpu-suite test that cannot run (no CUDA build, no device):
// 77, which meson reports as skipped; or 1 (failed) when PTSIM_REQUIRE_GPU=1. The emulated executables of
// tests/cuda_emu set it (docs/cuda-emulation.md, "The whole backend"): there the emulated device is always present,
// so a skip would mean the test is not running on the backend it names, and must not look green.
#pragma once
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace ptsim::test {

inline int gpu_test_skip_status() {
  const char* required = std::getenv("PTSIM_REQUIRE_GPU");
  if (required != nullptr && std::string_view(required) == "1") {
    std::fprintf(stderr, "PTSIM_REQUIRE_GPU=1: a test that skips fails here\n");
    return 1;
  }
  return 77;
}

}  // namespace ptsim::test
