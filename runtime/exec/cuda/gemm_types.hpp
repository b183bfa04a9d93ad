// runtime/exec/cuda/gemm_types.hpp — which GEMMs the CUDA backend runs natively on 16-bit (bf16/fp16)
// storage, with no CUDA types so the cpu suite checks the rules (tests/runtime/exec/test_lt_gemm_16bit.cpp).
// The graph given is the one run() gets (Executor's storage graph: each tensor's stored dtype).
//
// Native: A and B both bf16 or both fp16 (cuBLAS's "16BF/16F inputs, CUBLAS_COMPUTE_32F" rows), C = D of
// that type or fp32, a bias (gemm only) of that type or fp32, fp32 scale (alpha, beta) and accumulation.
// Anything else with a 16-bit operand (A and B of different types, one of them fp32, fp8) is not native: it
// goes through the op-boundary conversion (widen into fp32 scratch, the fp32 GEMM, narrow the output).
// Precision by GPU: fp16 on sm_70+, bf16 on sm_80+ only (the precision table; bf16 tensor cores
// arrive with Ampere). Why these combinations: docs/cuda-backend.md, "16-bit GEMMs".
#pragma once
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "models/task_graph.hpp"
#include "runtime/exec/cuda/gemm_element.hpp"
#include "runtime/exec/precision.hpp"

namespace ptsim::runtime::cuda {

// The GEMM element of a stored dtype; nothing for types cuBLAS GEMMs here do not take (f64, integers, fp8).
inline std::optional<GemmElement> gemm_element(models::DType t) {
  switch (t) {
    case models::DType::f32: return GemmElement::f32;
    case models::DType::bf16: return GemmElement::bf16;
    case models::DType::f16: return GemmElement::f16;
    default: return std::nullopt;
  }
}

// The stored types of one GEMM: A and B (one type), C = D, the bias (f32 when there is none).
struct GemmTypes {
  GemmElement ab = GemmElement::f32, cd = GemmElement::f32, bias = GemmElement::f32;
  bool operator==(const GemmTypes&) const = default;
  bool is_16bit() const { return ab != GemmElement::f32; }
};

// The types of a gemm / batched_gemm `op` when it runs natively on 16-bit operands (rules above); nothing
// when it has no 16-bit operand (the fp32 path) or is not native (the boundary).
inline std::optional<GemmTypes> native_16bit_gemm_types(const models::TaskGraph& g, const models::Op& op) {
  if (op.kind != models::OpKind::gemm && op.kind != models::OpKind::batched_gemm) return std::nullopt;
  if (op.attrs.gemm.fp8 || op.inputs.size() < 2 || op.outputs.empty()) return std::nullopt;
  const auto a = gemm_element(g.tensor(op.inputs[0]).dtype), b = gemm_element(g.tensor(op.inputs[1]).dtype);
  const auto c = gemm_element(g.tensor(op.outputs[0]).dtype);
  if (!a || !b || !c || *a != *b || *a == GemmElement::f32) return std::nullopt;
  GemmTypes t{*a, *c, GemmElement::f32};
  if (t.cd != GemmElement::f32 && t.cd != t.ab) return std::nullopt;  // bf16 inputs with an fp16 output, …
  if (op.kind == models::OpKind::gemm && op.attrs.gemm.has_bias) {
    if (op.inputs.size() < 3) return std::nullopt;
    const auto bias = gemm_element(g.tensor(op.inputs[2]).dtype);
    if (!bias || (*bias != GemmElement::f32 && *bias != t.ab)) return std::nullopt;
    t.bias = *bias;
  }
  return t;
}

// The GEMM half of the backend's runs_16bit_natively(op) predicate.
inline bool gemm_runs_natively(const models::TaskGraph& g, const models::Op& op) {
  return native_16bit_gemm_types(g, op).has_value();
}

// Whether op reads or writes any f16/bf16 tensor.
inline bool has_16bit_operand(const models::TaskGraph& g, const models::Op& op) {
  auto half = [&](int id) { return is_16bit_float(g.tensor(id).dtype); };
  return std::any_of(op.inputs.begin(), op.inputs.end(), half) || std::any_of(op.outputs.begin(), op.outputs.end(), half);
}

// Refuses a 16-bit GEMM type the GPU `gpu_name` with compute capability major.minor cannot run: bf16
// needs sm_80+, fp16 sm_70+. Throws core::InputError naming the GPU, its compute capability and what to
// use instead; f32 is always accepted.
inline void check_gemm_element_supported(GemmElement ab, int major, int minor, const std::string& gpu_name) {
  const int cc = major * 10 + minor;
  if (ab == GemmElement::bf16 && cc < 80)
    throw core::InputError(fmt::format(
        "bf16 GEMMs need a GPU of compute capability 8.0 or newer (sm_80+: A100, H100, …); this GPU ({}) has "
        "compute capability {}.{}: use --precision fp16 (with loss scaling) or fp32 on it",
        gpu_name, major, minor));
  if (ab == GemmElement::f16 && cc < 70)
    throw core::InputError(fmt::format(
        "fp16 GEMMs need a GPU of compute capability 7.0 or newer (sm_70+: V100, T4, …); this GPU ({}) has "
        "compute capability {}.{}: use --precision fp32 on it",
        gpu_name, major, minor));
}

}  // namespace ptsim::runtime::cuda
