// tests/cuda_emu/cublaslt_problem.hpp — which cuBLASLt problems the emulated cuBLASLt takes
// (cublaslt_problem.cpp): the epilogue's inputs and outputs, and the documented checks of a descriptor with
// its four layouts, shared by the heuristic and the matmul (cublaslt_matmul.cpp).
#pragma once
#include "cublaslt_internal.hpp"

namespace cuda_emu::blas {

// What an epilogue reads and writes besides D.
struct Epilogue {
  bool bias_in = false;   // adds the bias vector (D's rows) before the activation
  bool relu = false, gelu = false;
  bool aux_out = false;   // keeps the activation's input in the aux matrix
  bool dgelu = false;     // multiplies by GELU'(aux), aux read
  bool bgrad_d = false;   // writes the bias gradient Σ_j D(i, j) (after the GELU gradient)
  bool bgrad_a = false;   // writes Σ_l op(A)(i, l)
  bool bgrad_b = false;   // writes Σ_l op(B)(l, j)
  bool uses_vector() const { return bias_in || bgrad_d || bgrad_a || bgrad_b; }
  bool uses_aux() const { return aux_out || dgelu; }
};

// False for an epilogue the shim does not have.
bool epilogue_of(cublasLtEpilogue_t e, Epilogue& out);

// SUCCESS; INVALID_VALUE for what the documentation forbids (a missing descriptor, a shape mismatch, an ld
// below its rows, batch counts that differ, an aux ld below D's rows or not a multiple of 8); NOT_SUPPORTED for a type or epilogue
// combination the shim does not have.
cublasStatus_t check_problem(const cublasLtMatmulDescOpaque_t* desc, const cublasLtMatrixLayoutOpaque_t* a,
                             const cublasLtMatrixLayoutOpaque_t* b, const cublasLtMatrixLayoutOpaque_t* c,
                             const cublasLtMatrixLayoutOpaque_t* d);

// The type of the epilogue's vector or aux matrix: `type`, or D's for −1 (the attributes' default).
cudaDataType_t or_d(int32_t type, const cublasLtMatrixLayoutOpaque_t& d);

}  // namespace cuda_emu::blas
