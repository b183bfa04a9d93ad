// tests/runtime/exec/storage_16bit_support.hpp — what the 16-bit storage tests (test_16bit_storage.cpp,
// test_16bit_params.cpp) share: the CPU backend (fp32 compute, 1 thread), owned, behind a ForwardingBackend
// whose stores_16bit() answer is chosen; the executor options of a bit-reproducible run; the FNV-1a hash
// their runs' bits are recorded with, over the parameters' masters and weight copies.
//  * stores_16bit false: the executor keeps every f16/bf16 tensor in fp32 and rounds each 16-bit output
//    after its op (the emulation 16-bit storage replaced, still the reference it must reproduce to the bit);
//  * stores_16bit true: 16-bit storage with only the ops ForwardingBackend forwards, so every newer Backend
//    operation runs its default (host copies), the path a backend without its own kernels takes.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "runtime/exec/backend.hpp"
#include "runtime/exec/executor.hpp"
#include "tests/runtime/exec/forwarding_backend.hpp"

namespace ptsim::test {

class CpuForwardingBackend : public ForwardingBackend {
 public:
  explicit CpuForwardingBackend(bool stores_16bit)
      : CpuForwardingBackend(runtime::make_cpu_backend(runtime::ComputeType::f32, 1), stores_16bit) {}
  bool stores_16bit() const override { return stores_16bit_; }

 private:
  CpuForwardingBackend(std::unique_ptr<runtime::Backend> cpu, bool stores_16bit)
      : ForwardingBackend(*cpu), cpu_(std::move(cpu)), stores_16bit_(stores_16bit) {}
  std::unique_ptr<runtime::Backend> cpu_;
  bool stores_16bit_;
};

// Untimed, one thread: GEMM results depend on the thread count, and the tests compare bits.
inline runtime::ExecutorOptions reproducible_executor_options() {
  runtime::ExecutorOptions o;
  o.time_ops = false;
  o.threads = 1;
  return o;
}

// FNV-1a (64-bit) over the bytes of v's fp32 values, little-endian, continuing from h (start: kFnvBasis).
inline constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;
inline uint64_t fnv1a_bytes(uint64_t h, const std::vector<float>& v) {
  for (float x : v) {
    uint32_t b = std::bit_cast<uint32_t>(x);
    for (int k = 0; k < 4; ++k, b >>= 8) {
      h ^= b & 0xffu;
      h *= 0x100000001b3ull;
    }
  }
  return h;
}

// FNV-1a hashes of every fp32 master and of every weight copy read widened to fp32, parameter order.
struct ParameterHashes {
  uint64_t masters = kFnvBasis, weights = kFnvBasis;
};
inline ParameterHashes parameter_hashes(runtime::Executor& ex) {
  ParameterHashes h;
  for (size_t i = 0; i < ex.graph().params.size(); ++i) {
    h.masters = fnv1a_bytes(h.masters, ex.read_parameter(i));
    h.weights = fnv1a_bytes(h.weights, ex.read_tensor<float>(ex.graph().params[i].weight));
  }
  return h;
}

}  // namespace ptsim::test
