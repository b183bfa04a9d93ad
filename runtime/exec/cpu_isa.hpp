// runtime/exec/cpu_isa.hpp — run-time ISA dispatch for the CPU backend's hot vector kernels
// (cpu_vector_kernels.hpp). The README's build is portable x86-64 (SSE2); on a CPU with AVX2 or AVX-512
// the same C++ loops are compiled a second and third time for those ISAs (GCC/clang `target` attribute)
// and the best one this CPU runs is picked once (the same CPUID rule cpu_gemm.cpp uses for OpenBLAS's
// kernels). Every variant computes the same bits: the project compiles with -ffp-contract=off (no FMA
// contraction, meson.build) and without reassociation, so vectorising only changes how many elements one
// instruction handles; tests/runtime/exec/test_cpu_isa.cpp runs each variant this CPU has and compares bits.
// Not here: the GEMMs (OpenBLAS picks its own kernels, cpu_gemm.cpp), Eigen's vectorised GELU/exp (Eigen
// selects its packets at compile time; -Dcpu_native=true is the way to widen those).
#pragma once
#include <vector>

namespace ptsim::runtime::cpu {

enum class CpuIsa { baseline, avx2, avx512 };  // baseline: the build's own target (x86-64: SSE2)

const char* to_string(CpuIsa isa);

// The widest variant this CPU runs (avx512: AVX-512 F/BW/DQ/VL; avx2: AVX2; else baseline); computed once.
// Not x86: always baseline.
CpuIsa detected_cpu_isa();

// Every variant this CPU runs, baseline first (what the bit-identity test walks).
std::vector<CpuIsa> runnable_cpu_isas();

// Calls f() compiled for `isa`: `flatten` inlines f's whole call tree into the target-specific function,
// so the loop in f is generated for that ISA. The caller must pass only an isa from runnable_cpu_isas().
// f should be a small loop over restrict pointers (no thread starts, no allocation).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
template <class F>
__attribute__((target("avx512f,avx512bw,avx512dq,avx512vl"), flatten)) inline void run_avx512(const F& f) {
  f();
}
template <class F>
__attribute__((target("avx2"), flatten)) inline void run_avx2(const F& f) {
  f();
}
template <class F>
__attribute__((flatten)) inline void run_baseline(const F& f) {
  f();
}
template <class F>
void run_for_isa(CpuIsa isa, const F& f) {
  switch (isa) {
    case CpuIsa::avx512: return run_avx512(f);
    case CpuIsa::avx2: return run_avx2(f);
    case CpuIsa::baseline: return run_baseline(f);
  }
}
#else
template <class F>
void run_for_isa(CpuIsa, const F& f) {
  f();
}
#endif

}  // namespace ptsim::runtime::cpu
