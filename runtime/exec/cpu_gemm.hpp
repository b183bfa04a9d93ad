// runtime/exec/cpu_gemm.hpp — the CPU backend's matrix products on two engines: a BLAS (OpenBLAS's cblas,
// when the build found it: meson option `blas`) and Eigen's own product (always built; the fallback, and
// the reference the BLAS path is tested against in tests/runtime/exec/test_cpu_gemm.cpp).
// Also the one place that sets how many threads the GEMMs use (OpenBLAS's pool; Eigen's, with OpenMP).
// Not here: the op → kernel mapping (cpu_backend.cpp) and every non-GEMM kernel.
#pragma once
#include <cstdint>

#include "models/task_graph.hpp"  // defines: GemmAttrs

namespace ptsim::runtime::cpu {

enum class GemmEngine { eigen, blas };

// True when this build has OpenBLAS (PTSIM_HAVE_BLAS) and libopenblas.so.0 loaded (on first call; before
// loading, OPENBLAS_CORETYPE is set from the CPU's features unless the user set it); then GemmEngine::blas
// is the default.
bool gemm_blas_available();
// The engine gemm_forward/batched_gemm_forward use: blas when available, else eigen.
GemmEngine gemm_default_engine();
// "OpenBLAS 0.3.21 ... , SkylakeX kernels", or "eigen" (with why OpenBLAS did not load).
const char* gemm_engine_description();
// Threads for the GEMMs (OpenBLAS and Eigen alike); 0 leaves the libraries' defaults (OpenBLAS: its
// OPENBLAS_NUM_THREADS or all cores). ptsim's --threads lands here, so BLAS never oversubscribes the cores.
void gemm_set_threads(int threads);

// C (m,n) (+)= alpha · op(A) · op(B) (+ bias (n)) as cpu::gemm_forward documents (cpu_backend.hpp), on
// `engine`; GemmEngine::blas in a build without BLAS throws std::logic_error.
template <class T>
void gemm_run(T* C, const T* A, const T* B, const T* bias, const models::GemmAttrs& attrs, GemmEngine engine);
// attrs.batch independent products on contiguous (batch, ·, ·) operands; no bias.
template <class T>
void batched_gemm_run(T* C, const T* A, const T* B, const models::GemmAttrs& attrs, GemmEngine engine);

}  // namespace ptsim::runtime::cpu
