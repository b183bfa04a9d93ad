// runtime/exec/cpu_gemm.cpp — GEMMs for the CPU backend: OpenBLAS's cblas_{s,d}gemm when the build found
// OpenBLAS (PTSIM_HAVE_BLAS) and the library loads at run time, Eigen's product otherwise and as the
// reference. Why a BLAS: Eigen's product is compiled for the build's baseline ISA (SSE2 in a portable
// build) and runs on one thread without OpenMP; OpenBLAS picks AVX2/AVX-512 kernels at run time for the
// CPU it finds and threads the product, so a portable binary gets the machine's speed
// (docs/cpu-performance.md has the measurements).
// Why dlopen rather than linking: OpenBLAS chooses its kernels once, when it loads, from the CPU model
// it knows; a CPU newer than the OpenBLAS release (Debian 12's 0.3.21 on Emerald Rapids, model 207) gets the
// generic SSE3 "Prescott" kernels, ~2× slower here. Loading it ourselves lets us name the kernel family
// from the CPU's features first (OPENBLAS_CORETYPE, OpenBLAS's documented override; a user's own setting
// wins), and lets a binary without OpenBLAS installed fall back to Eigen instead of failing to start.
#include "runtime/exec/cpu_gemm.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

#ifdef PTSIM_HAVE_BLAS
#include <cblas.h>  // defines: the cblas enums and the signatures of cblas_sgemm, cblas_dgemm, openblas_*
#include <dlfcn.h>
#endif

namespace ptsim::runtime::cpu {
namespace {

template <class T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

// The C rows' bias: C (m,n) += bias (n) broadcast over rows.
template <class T>
void add_bias_rows(T* C, const T* bias, int64_t m, int64_t n) {
  Eigen::Map<RowMajor<T>>(C, m, n).rowwise() += Eigen::Map<const Eigen::Matrix<T, 1, Eigen::Dynamic>>(bias, n);
}

template <class T>
void gemm_eigen(T* C, const T* A, const T* B, const T* bias, const models::GemmAttrs& a) {
  Eigen::Map<RowMajor<T>> c(C, a.m, a.n);
  Eigen::Map<const RowMajor<T>> ma(A, a.trans_a ? a.k : a.m, a.trans_a ? a.m : a.k);
  Eigen::Map<const RowMajor<T>> mb(B, a.trans_b ? a.n : a.k, a.trans_b ? a.k : a.n);
  const T alpha = static_cast<T>(a.alpha);
  auto product = [&](const auto& opa, const auto& opb) {
    if (a.accumulate)
      c.noalias() += alpha * opa * opb;
    else
      c.noalias() = alpha * opa * opb;
  };
  if (!a.trans_a && !a.trans_b) product(ma, mb);
  else if (!a.trans_a && a.trans_b) product(ma, mb.transpose());
  else if (a.trans_a && !a.trans_b) product(ma.transpose(), mb);
  else product(ma.transpose(), mb.transpose());
  if (a.has_bias) add_bias_rows(C, bias, a.m, a.n);
}

#ifdef PTSIM_HAVE_BLAS
// The OpenBLAS entry points we use, resolved from the library once (first use; thread-safe static init).
struct OpenBlas {
  decltype(&cblas_sgemm) sgemm = nullptr;
  decltype(&cblas_dgemm) dgemm = nullptr;
  decltype(&openblas_set_num_threads) set_num_threads = nullptr;
  std::string description = "eigen";  // "openblas <config>, <core> kernels" once loaded
  bool loaded = false;
};

// OpenBLAS's kernel family for this CPU by its features: what OpenBLAS 0.3.21 would pick if it knew the
// model (AVX-512 F/BW/DQ/VL: SkylakeX; AVX2 + FMA: Haswell); null leaves OpenBLAS's own detection.
const char* openblas_coretype_for_cpu() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return "SkylakeX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
  return nullptr;
}

OpenBlas load_openblas() {
  OpenBlas lib;
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr)
    if (const char* core = openblas_coretype_for_cpu()) setenv("OPENBLAS_CORETYPE", core, 0);
  // The pkg-config libdir the build found first (Debian: the pthread variant), then the loader's search path.
  void* handle = dlopen(PTSIM_OPENBLAS_LIBDIR "/libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) handle = dlopen("libopenblas.so.0", RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = dlerror();
    lib.description = std::string("eigen (OpenBLAS did not load: ") + (why ? why : "unknown") + ")";
    return lib;
  }
  lib.sgemm = reinterpret_cast<decltype(lib.sgemm)>(dlsym(handle, "cblas_sgemm"));
  lib.dgemm = reinterpret_cast<decltype(lib.dgemm)>(dlsym(handle, "cblas_dgemm"));
  lib.set_num_threads = reinterpret_cast<decltype(lib.set_num_threads)>(dlsym(handle, "openblas_set_num_threads"));
  auto config = reinterpret_cast<decltype(&openblas_get_config)>(dlsym(handle, "openblas_get_config"));
  auto corename = reinterpret_cast<decltype(&openblas_get_corename)>(dlsym(handle, "openblas_get_corename"));
  if (!lib.sgemm || !lib.dgemm || !lib.set_num_threads || !config || !corename) {
    lib.description = "eigen (the loaded libopenblas.so.0 lacks cblas_sgemm/dgemm or openblas_* entry points)";
    return lib;
  }
  lib.description = std::string(config()) + ", " + corename() + " kernels";
  lib.loaded = true;
  return lib;
}

const OpenBlas& openblas() {
  static const OpenBlas lib = load_openblas();
  return lib;
}

// cblas takes int sizes: a product beyond them goes to Eigen rather than overflow.
bool fits_blas_int(const models::GemmAttrs& a) {
  constexpr int64_t kMax = 2147483647;
  return a.m <= kMax && a.n <= kMax && a.k <= kMax && a.m * a.n <= kMax && a.m * a.k <= kMax && a.k * a.n <= kMax;
}

// Row-major cblas call. The bias is folded into the product where it can be: C is pre-filled with the
// bias rows and the product accumulates onto them (beta = 1), one pass over C instead of two.
template <class T>
void gemm_blas(T* C, const T* A, const T* B, const T* bias, const models::GemmAttrs& a) {
  if (a.m == 0 || a.n == 0) return;
  const bool bias_first = a.has_bias && !a.accumulate;
  if (bias_first)  // (element loops, not std::copy: inlined into batched_gemm_run's bias-less calls, g++ 12
                   // warns -Wnonnull about the memmove of a null bias it cannot see is never reached)
    for (int64_t i = 0; i < a.m; ++i)
      for (int64_t j = 0; j < a.n; ++j) C[i * a.n + j] = bias[j];
  const T beta = (a.accumulate || bias_first) ? T(1) : T(0);
  // Leading dimensions of the stored (row-major) operands; BLAS wants ≥ 1 even for empty ones.
  const auto lda = static_cast<int>(std::max<int64_t>(1, a.trans_a ? a.m : a.k));
  const auto ldb = static_cast<int>(std::max<int64_t>(1, a.trans_b ? a.k : a.n));
  const auto ldc = static_cast<int>(a.n);
  const CBLAS_TRANSPOSE ta = a.trans_a ? CblasTrans : CblasNoTrans;
  const CBLAS_TRANSPOSE tb = a.trans_b ? CblasTrans : CblasNoTrans;
  const auto m = static_cast<int>(a.m), n = static_cast<int>(a.n), k = static_cast<int>(a.k);
  if constexpr (std::is_same_v<T, float>)
    openblas().sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(a.alpha), A, lda, B, ldb, beta, C, ldc);
  else
    openblas().dgemm(CblasRowMajor, ta, tb, m, n, k, a.alpha, A, lda, B, ldb, beta, C, ldc);
  if (a.has_bias && a.accumulate) add_bias_rows(C, bias, a.m, a.n);
}
#endif

}  // namespace

bool gemm_blas_available() {
#ifdef PTSIM_HAVE_BLAS
  return openblas().loaded;
#else
  return false;
#endif
}

GemmEngine gemm_default_engine() { return gemm_blas_available() ? GemmEngine::blas : GemmEngine::eigen; }

const char* gemm_engine_description() {
#ifdef PTSIM_HAVE_BLAS
  return openblas().description.c_str();
#else
  return "eigen";
#endif
}

void gemm_set_threads(int threads) {
  if (threads <= 0) return;
  Eigen::setNbThreads(threads);  // effective only in an OpenMP build of Eigen; harmless otherwise
#ifdef PTSIM_HAVE_BLAS
  if (openblas().loaded) openblas().set_num_threads(threads);
#endif
}

template <class T>
void gemm_run(T* C, const T* A, const T* B, const T* bias, const models::GemmAttrs& attrs, GemmEngine engine) {
  if (engine == GemmEngine::blas) {
    if (!gemm_blas_available())
      throw std::logic_error(std::string("GemmEngine::blas requested, but this ptsim has no BLAS: ") +
                             gemm_engine_description());
#ifdef PTSIM_HAVE_BLAS
    if (fits_blas_int(attrs)) return gemm_blas<T>(C, A, B, bias, attrs);
#endif
  }
  gemm_eigen<T>(C, A, B, bias, attrs);
}

template <class T>
void batched_gemm_run(T* C, const T* A, const T* B, const models::GemmAttrs& attrs, GemmEngine engine) {
  models::GemmAttrs one = attrs;
  one.batch = 1;
  one.has_bias = false;
  const int64_t sa = attrs.m * attrs.k, sb = attrs.k * attrs.n, sc = attrs.m * attrs.n;
  for (int64_t b = 0; b < attrs.batch; ++b) gemm_run<T>(C + b * sc, A + b * sa, B + b * sb, nullptr, one, engine);
}

template void gemm_run<float>(float*, const float*, const float*, const float*, const models::GemmAttrs&, GemmEngine);
template void gemm_run<double>(double*, const double*, const double*, const double*, const models::GemmAttrs&,
                               GemmEngine);
template void batched_gemm_run<float>(float*, const float*, const float*, const models::GemmAttrs&, GemmEngine);
template void batched_gemm_run<double>(double*, const double*, const double*, const models::GemmAttrs&, GemmEngine);

}  // namespace ptsim::runtime::cpu
