// runtime/exec/cuda/gemm_element.hpp — the element type of one GEMM matrix or vector as cuBLAS stores it
// (CUDA_R_32F, CUDA_R_16BF, CUDA_R_16F), with no dependencies so kernels (.cu) and host code share it.
// Which GEMMs use which: gemm_types.hpp.
#pragma once
#include <cstdint>

namespace ptsim::runtime::cuda {

enum class GemmElement { f32, bf16, f16 };

inline int64_t element_bytes(GemmElement e) { return e == GemmElement::f32 ? 4 : 2; }
inline const char* to_string(GemmElement e) {
  switch (e) {
    case GemmElement::f32: return "f32";
    case GemmElement::bf16: return "bf16";
    case GemmElement::f16: return "f16";
  }
  return "?";
}

}  // namespace ptsim::runtime::cuda
