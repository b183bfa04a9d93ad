// tests/cuda_emu/nccl_emulated_test_support.hpp — helpers shared by the NCCL shim's tests (docs/cuda-emulation.md,
// "The NCCL shim"): PTSIM_EMU_NCCL_FAULT set for a scope, and the host reference of a 16-bit two-rank sum.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>

namespace cuda_emu::nccl {

// PTSIM_EMU_NCCL_FAULT for the communicators made in this scope (the shim reads it at init); unset on leaving,
// also when a failed REQUIRE leaves the scope early.
struct FaultScope {
  explicit FaultScope(const char* value) { ::setenv("PTSIM_EMU_NCCL_FAULT", value, 1); }
  ~FaultScope() { ::unsetenv("PTSIM_EMU_NCCL_FAULT"); }
  FaultScope(const FaultScope&) = delete;
  FaultScope& operator=(const FaultScope&) = delete;
};

// a + b of two fp16 (is_f16) or bf16 bit patterns, exact in double and rounded once to the type by the
// toolkit's double conversion: what the shim's rank-ordered sum must give for two ranks.
inline uint16_t once_rounded_sum16(uint16_t a, uint16_t b, bool is_f16) {
  uint16_t out;
  if (is_f16) {
    __half x, y;
    std::memcpy(static_cast<void*>(&x), &a, 2);
    std::memcpy(static_cast<void*>(&y), &b, 2);
    const __half s = __double2half(static_cast<double>(__half2float(x)) + static_cast<double>(__half2float(y)));
    std::memcpy(&out, &s, 2);
  } else {
    __nv_bfloat16 x, y;
    std::memcpy(static_cast<void*>(&x), &a, 2);
    std::memcpy(static_cast<void*>(&y), &b, 2);
    const __nv_bfloat16 s =
        __double2bfloat16(static_cast<double>(__bfloat162float(x)) + static_cast<double>(__bfloat162float(y)));
    std::memcpy(&out, &s, 2);
  }
  return out;
}

}  // namespace cuda_emu::nccl
