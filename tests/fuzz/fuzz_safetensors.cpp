// tests/fuzz/fuzz_safetensors.cpp — libFuzzer target: a safetensors file (runtime/checkpoint/safetensors.hpp),
// parsed from memory with runtime::parse_safetensors; every F32 tensor of a file that parses is copied out.
#include <span>

#include "runtime/checkpoint/safetensors.hpp"
#include "tests/fuzz/fuzz_support.hpp"

PTSIM_FUZZ_TARGET(safetensors) {
  ptsim::fuzz::guarded([&] {
    const auto file = ptsim::runtime::parse_safetensors(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(data), size), "fuzz.safetensors");
    for (const auto& t : file.tensors) {
      if (t.dtype == ptsim::runtime::SafetensorsDtype::f32) (void)t.to_f32(file.source);
      (void)file.at(t.name);
    }
  });
  return 0;
}
