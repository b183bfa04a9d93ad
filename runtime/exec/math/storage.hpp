// runtime/exec/math/storage.hpp — the one storage tag of every CUDA kernel that reads a float tensor in its
// stored dtype (fp32, bfloat16 or IEEE binary16 bits): the elementwise steps (cuda/elementwise_steps.hpp),
// the row kernels (math/row_storage.hpp), bias_grad's column sums (math/column_sum_math.hpp) and the step
// tail's gradient reads (math/scaled_read.hpp). A load is the exact widening and a store the one
// round-to-nearest-even narrowing of math/half_bits.hpp (the functions the op boundary's conversion kernels
// call), so a kernel on 16-bit storage computes what the boundary computes: widen, the fp32 maths, narrow
// once. PTSIM_HD: the cpu suite runs the same loads and stores (tests/runtime/exec/test_native16_*.cpp,
// test_column_sum_math.cpp, test_scaled_read.cpp). Which dtype maps to which tag: math/storage_dtype.hpp
// (host only). docs/cuda-backend.md, "16-bit storage".
#pragma once
#include <cstdint>

#include "core/host_device.hpp"  // defines: PTSIM_HD
#include "runtime/exec/math/half_bits.hpp"

namespace ptsim::runtime::math {

// The stored type of a kernel's float operands (models::DType is host-only).
enum class Storage : int32_t { f32 = 0, bf16 = 1, f16 = 2 };

// The typed load/store structs: a value (load(v), store(v)) or element i of an array (load(p, i),
// store(p, i, v)).
struct F32Storage {
  using Elem = float;
  PTSIM_HD static float load(float v) { return v; }
  PTSIM_HD static float store(float v) { return v; }
  PTSIM_HD static float load(const float* p, int64_t i) { return p[i]; }
  PTSIM_HD static void store(float* p, int64_t i, float v) { p[i] = v; }
};
struct Bf16Storage {
  using Elem = uint16_t;
  PTSIM_HD static float load(uint16_t v) { return bf16_to_float(v); }
  PTSIM_HD static uint16_t store(float v) { return float_to_bf16(v); }
  PTSIM_HD static float load(const uint16_t* p, int64_t i) { return load(p[i]); }
  PTSIM_HD static void store(uint16_t* p, int64_t i, float v) { p[i] = store(v); }
};
struct F16Storage {
  using Elem = uint16_t;
  PTSIM_HD static float load(uint16_t v) { return f16_to_float(v); }
  PTSIM_HD static uint16_t store(float v) { return float_to_f16(v); }
  PTSIM_HD static float load(const uint16_t* p, int64_t i) { return load(p[i]); }
  PTSIM_HD static void store(uint16_t* p, int64_t i, float v) { p[i] = store(v); }
};

template <class S>
using Elem = typename S::Elem;

// Calls f(tag) with the storage tag of `s` (one instantiation per stored type).
template <class F>
inline void with_storage(Storage s, F&& f) {
  switch (s) {
    case Storage::f32: f(F32Storage{}); return;
    case Storage::bf16: f(Bf16Storage{}); return;
    case Storage::f16: f(F16Storage{}); return;
  }
}

// Element i of x (storage `s`, tag chosen at run time) as fp32: exact for every storage.
PTSIM_HD inline float load_element(const void* x, Storage s, int64_t i) {
  if (s == Storage::f32) return F32Storage::load(static_cast<const float*>(x), i);
  const uint16_t* h = static_cast<const uint16_t*>(x);
  return s == Storage::bf16 ? Bf16Storage::load(h, i) : F16Storage::load(h, i);
}

}  // namespace ptsim::runtime::math
