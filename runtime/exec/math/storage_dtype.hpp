// runtime/exec/math/storage_dtype.hpp — which storage tag (math/storage.hpp) a tensor's dtype is read
// through: f32, bf16 and f16 have one each, every other dtype (f64, masks, ids) none. Host only
// (models::DType): the CUDA backend's native-16-bit predicates (cuda/native_16bit_elementwise.hpp,
// cuda/native_16bit_rows.hpp, cuda/bias_grad_16bit.hpp) and the step tail's gradient storage
// (cuda/cuda_device.cpp) all map a dtype through here; the tests map a tag back (dtype_of).
#pragma once
#include <optional>
#include <type_traits>

#include "models/task_graph.hpp"
#include "runtime/exec/math/storage.hpp"

namespace ptsim::runtime::math {

// The tag of `dtype`, or nothing when no kernel reads it as a float operand.
inline std::optional<Storage> storage_of(models::DType dtype) {
  switch (dtype) {
    case models::DType::f32: return Storage::f32;
    case models::DType::bf16: return Storage::bf16;
    case models::DType::f16: return Storage::f16;
    default: return std::nullopt;
  }
}

// The tag of a 16-bit float dtype (bf16 or f16), or nothing for any other.
inline std::optional<Storage> storage_of_16bit(models::DType dtype) {
  const std::optional<Storage> s = storage_of(dtype);
  if (s == Storage::f32) return std::nullopt;
  return s;
}

// The dtype a storage tag stands for (the inverse of storage_of, at compile time).
template <class S>
constexpr models::DType dtype_of() {
  if constexpr (std::is_same_v<S, Bf16Storage>) return models::DType::bf16;
  if constexpr (std::is_same_v<S, F16Storage>) return models::DType::f16;
  return models::DType::f32;
}

}  // namespace ptsim::runtime::math
