// runtime/exec/cpu_isa.cpp — which ISA variant of the CPU vector kernels this CPU runs (cpu_isa.hpp).
#include "runtime/exec/cpu_isa.hpp"

namespace ptsim::runtime::cpu {
namespace {

CpuIsa detect() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return CpuIsa::avx512;
  if (__builtin_cpu_supports("avx2")) return CpuIsa::avx2;
#endif
  return CpuIsa::baseline;
}

}  // namespace

const char* to_string(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::avx512: return "avx512";
    case CpuIsa::avx2: return "avx2";
    case CpuIsa::baseline: break;
  }
  return "baseline";
}

CpuIsa detected_cpu_isa() {
  static const CpuIsa isa = detect();
  return isa;
}

std::vector<CpuIsa> runnable_cpu_isas() {
  std::vector<CpuIsa> isas{CpuIsa::baseline};
  const CpuIsa best = detected_cpu_isa();
  if (best == CpuIsa::avx2 || best == CpuIsa::avx512) isas.push_back(CpuIsa::avx2);
  if (best == CpuIsa::avx512) isas.push_back(CpuIsa::avx512);
  return isas;
}

}  // namespace ptsim::runtime::cpu
