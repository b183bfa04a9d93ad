// tests/cuda_emu/nccl_emulated_sum.cpp — the NCCL shim's rank-ordered sum (see the header).
#include "nccl_emulated_sum.hpp"

#include <cuda_runtime_api.h>  // the emulator's, first: it keeps the toolkit's runtime API header out
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstring>

namespace cuda_emu::nccl {
namespace {

template <class T>
T add(T a, T b) {
  return a + b;
}
template <>
__half add(__half a, __half b) {
  return __float2half_rn(__half2float(a) + __half2float(b));
}
template <>
__nv_bfloat16 add(__nv_bfloat16 a, __nv_bfloat16 b) {
  return __float2bfloat16_rn(__bfloat162float(a) + __bfloat162float(b));
}

template <class T>
void sum_typed(const std::vector<const void*>& by_rank, void* recv, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    T acc;
    std::memcpy(&acc, static_cast<const char*>(by_rank[0]) + i * sizeof(T), sizeof(T));
    for (size_t r = 1; r < by_rank.size(); ++r) {
      T x;
      std::memcpy(&x, static_cast<const char*>(by_rank[r]) + i * sizeof(T), sizeof(T));
      acc = add(acc, x);
    }
    std::memcpy(static_cast<char*>(recv) + i * sizeof(T), &acc, sizeof(T));
  }
}

}  // namespace

size_t element_bytes(ncclDataType_t type) {
  switch (type) {
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclFloat32: return 4;
    case ncclFloat64: return 8;
    default: return 0;
  }
}

void sum_in_rank_order(const std::vector<const void*>& by_rank, void* recv, size_t count, ncclDataType_t type) {
  switch (type) {
    case ncclFloat16: sum_typed<__half>(by_rank, recv, count); break;
    case ncclBfloat16: sum_typed<__nv_bfloat16>(by_rank, recv, count); break;
    case ncclFloat32: sum_typed<float>(by_rank, recv, count); break;
    case ncclFloat64: sum_typed<double>(by_rank, recv, count); break;
    default: break;  // check_call refused it
  }
}

}  // namespace cuda_emu::nccl
