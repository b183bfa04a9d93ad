// tests/runtime/golden/test_golden_cuda.cpp — the golden check against PyTorch (docs/golden-tests.md) on
// the CUDA backend: the shipped tests/data/golden/<bert|gpt2> inputs through ptsim's executor on the GPU,
// compared with the shipped torch_golden.safetensors on the losses, logits, every gradient and the 10-step
// AdamW and NVLAMB losses — the same comparison and the same fp32 tolerances as the CPU run
// (golden_check.hpp, which derives them; cuBLAS computes the fp32 golden graph in fp32, no TF32).
// Suite gpu; exits 77 (skipped) without a CUDA backend or a GPU (tests/support/gpu_doctest_main.cpp).
#include <doctest/doctest.h>

#include "runtime/exec/device_types.hpp"
#include "tests/runtime/golden/golden_check.hpp"

using namespace ptsim;
using namespace ptsim::test::golden;

namespace {
constexpr runtime::BackendKind kCuda = runtime::BackendKind::cuda;
}  // namespace

TEST_CASE("golden on CUDA: losses, logits and every gradient match PyTorch") {
  for (const Case& c : cases()) {
    CAPTURE(c.name);
    const Golden g = shipped_golden(c);
    REQUIRE(g.file.metadata.at("dtype") == "float32");
    report(c.name + ": ptsim CUDA vs shipped torch golden", compare_forward(ptsim_forward(shipped_inputs(c), kCuda), g));
  }
}

TEST_CASE("golden on CUDA: 10 steps of AdamW and of NVLAMB give PyTorch's losses") {
  for (const Case& c : cases()) {
    CAPTURE(c.name);
    const double worst = compare_steps(shipped_inputs(c), shipped_golden(c), kCuda);
    MESSAGE(c.name << ": ptsim CUDA vs shipped torch golden: worst relative error of the 10-step losses " << worst);
  }
}
