// tests/support/backend_under_test.hpp — the backend (and executor) a test runs on a BackendKind. The CUDA
// backend is made by runtime::make_cuda_backend itself rather than through make_backend, so that the
// `*_emulated` executables of tests/cuda_emu, which rename make_cuda_backend to the CUDA backend compiled over
// the emulator (tests/cuda_emu/emulated_backend_names.hpp; docs/cuda-emulation.md, "The whole backend"), run
// the gpu suite's tests on that backend. In a real CUDA build the two are the same call.
#pragma once
#include <memory>

#include "models/task_graph.hpp"
#include "runtime/exec/backend.hpp"
#include "runtime/exec/executor.hpp"
#ifdef PTSIM_HAVE_CUDA
#include "runtime/exec/cuda/cuda_backend.hpp"  // defines: make_cuda_backend
#endif

namespace ptsim::test {

inline std::unique_ptr<runtime::Backend> make_test_backend(runtime::BackendKind kind, runtime::ComputeType compute,
                                                           int threads) {
#ifdef PTSIM_HAVE_CUDA
  if (kind == runtime::BackendKind::cuda) return runtime::make_cuda_backend(compute);
#endif
  return runtime::make_backend(kind, compute, threads);  // without CUDA: says it was not built
}

// An executor on options.backend (cpu: options.threads; cuda: as above).
inline std::unique_ptr<runtime::Executor> make_test_executor(const models::TaskGraph& graph,
                                                             const runtime::ExecutorOptions& options) {
  if (options.backend != runtime::BackendKind::cuda) return std::make_unique<runtime::Executor>(graph, options);
  return std::make_unique<runtime::Executor>(graph, options,
                                             make_test_backend(options.backend, options.compute, options.threads));
}

}  // namespace ptsim::test
