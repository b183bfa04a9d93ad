// tests/runtime/golden/ptsim_golden_outputs.cpp — writes ptsim's results on one shipped golden case
// (tests/data/golden/<bert|gpt2>) in torch_golden.safetensors' layout (golden_run.hpp's
// write_ptsim_outputs), run on the CPU or the CUDA backend: what tools/hf_crosscheck.py compares
// HuggingFace transformers with (tools/gpu_check.sh runs it on the GPU).
// Usage: ptsim_golden_outputs bert|gpt2 cpu|cuda OUT.safetensors
// Exit: 0 written; 2 bad arguments or inputs; 77 cuda asked for and this build or machine has no CUDA device.
#include <fmt/format.h>

#include <exception>
#include <string>

#include "core/error.hpp"
#include "runtime/exec/device_types.hpp"
#include "tests/runtime/golden/golden_run.hpp"

#ifdef PTSIM_HAVE_CUDA
#include "runtime/exec/cuda/cuda_backend.hpp"  // defines: cuda_device_count
#endif

using namespace ptsim;

int main(int argc, char** argv) {
  if (argc != 4) {
    fmt::print(stderr, "usage: ptsim_golden_outputs bert|gpt2 cpu|cuda OUT.safetensors\n");
    return 2;
  }
  const std::string model = argv[1], backend = argv[2], out = argv[3];
  if (model != "bert" && model != "gpt2") {
    fmt::print(stderr, "ptsim_golden_outputs: case '{}': expected bert or gpt2\n", model);
    return 2;
  }
  if (backend != "cpu" && backend != "cuda") {
    fmt::print(stderr, "ptsim_golden_outputs: backend '{}': expected cpu or cuda\n", backend);
    return 2;
  }
  if (backend == "cuda") {
#ifdef PTSIM_HAVE_CUDA
    if (runtime::cuda_device_count() == 0) {
      fmt::print("ptsim_golden_outputs: no CUDA device was found: nothing written\n");
      return 77;
    }
#else
    fmt::print("ptsim_golden_outputs: this build has no CUDA backend: nothing written\n");
    return 77;
#endif
  }
  try {
    const test::golden::Case c = model == "bert" ? test::golden::bert_case() : test::golden::gpt2_case();
    test::golden::write_ptsim_outputs(out, c, backend == "cuda" ? runtime::BackendKind::cuda : runtime::BackendKind::cpu);
    fmt::print("ptsim_golden_outputs: {} on {} -> {}\n", model, backend, out);
    return 0;
  } catch (const core::InputError& e) {
    fmt::print(stderr, "ptsim_golden_outputs: {}\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    fmt::print(stderr, "ptsim_golden_outputs: {}\n", e.what());
    return 1;
  }
}
