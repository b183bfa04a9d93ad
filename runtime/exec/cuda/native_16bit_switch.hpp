// runtime/exec/cuda/native_16bit_switch.hpp — the environment switch PTSIM_CUDA_NATIVE_16BIT: whether the CUDA
// backend's non-GEMM kernels that take 16-bit operands directly (CudaBackend::runs_16bit_natively) are used,
// or every such op goes through the op-boundary conversion (widen → fp32 kernel → narrow:
// cuda_16bit_boundary.hpp). Both give the same bits by contract; "0" lets a test or a user compare the two.
// Plain C++ (no CUDA), so the cpu suite tests it. docs/cuda-backend.md, "16-bit storage".
#pragma once
#include <string>

#include "core/error.hpp"

namespace ptsim::runtime::cuda {

inline constexpr const char* kNative16bitEnv = "PTSIM_CUDA_NATIVE_16BIT";

// Unset or "1": the native 16-bit kernels run where they exist; "0": the boundary path for every non-GEMM op.
inline bool native_16bit_kernels_enabled(const char* value) {
  if (value == nullptr || std::string(value) == "1") return true;
  if (std::string(value) == "0") return false;
  throw core::InputError(std::string(kNative16bitEnv) + "='" + value +
                         "': expected 0 (every non-GEMM op through the 16-bit boundary conversion) or 1 (kernels "
                         "that read and write 16-bit storage directly, the default)");
}

}  // namespace ptsim::runtime::cuda
