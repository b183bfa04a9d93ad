// tests/cuda_emu/blas_test_support.hpp — what the BLAS shim's tests (test_cublas_emulated.cpp,
// test_cublaslt_emulated.cpp) share: a column-major test matrix of fp32 / fp16 / bf16 elements in
// 256-byte-aligned memory (what cudaMalloc gives), converted with the toolkit's own functions (not the shim's),
// and the double-precision reference of op(A)·op(B) with the bound its float accumulation must meet.
#pragma once
#include <cuda_runtime_api.h>  // the emulator's, first: it keeps the toolkit's runtime API header out
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>

namespace blas_test {

// Unit roundoff of the types (half an ulp at 1, relative): fp32 2^-24, fp16 2^-11, bf16 2^-8.
inline double unit_roundoff(cudaDataType_t t) {
  return t == CUDA_R_16F ? std::ldexp(1.0, -11) : t == CUDA_R_16BF ? std::ldexp(1.0, -8) : std::ldexp(1.0, -24);
}

inline int64_t bytes_of(cudaDataType_t t) { return t == CUDA_R_32F ? 4 : 2; }

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

// batch column-major rows×cols matrices, matrix p at p·stride elements, leading dimension ld. Every
// element, padding included, starts as `fill` (NaN by default: a read of padding shows in the result).
struct Matrix {
  cudaDataType_t type;
  int64_t rows, cols, ld, batch, stride;
  std::unique_ptr<unsigned char, FreeDeleter> bytes;

  Matrix(cudaDataType_t t, int64_t r, int64_t c, int64_t ld_, int64_t batch_ = 1, int64_t stride_ = 0,
         float fill = std::numeric_limits<float>::quiet_NaN())
      : type(t), rows(r), cols(c), ld(ld_), batch(batch_), stride(stride_ ? stride_ : ld_ * c) {
    const int64_t elements = (batch - 1) * stride + ld * cols + 1;
    const size_t size = static_cast<size_t>((elements * bytes_of(t) + 255) / 256 * 256);
    bytes.reset(static_cast<unsigned char*>(std::aligned_alloc(256, size)));
    for (int64_t i = 0; i < elements; ++i) set_raw(i, fill);
  }
  void* data() const { return bytes.get(); }
  int64_t index(int64_t p, int64_t r, int64_t c) const { return p * stride + r + c * ld; }

  float raw(int64_t i) const {
    if (type == CUDA_R_16F) return __half2float(reinterpret_cast<const __half*>(data())[i]);
    if (type == CUDA_R_16BF) return __bfloat162float(reinterpret_cast<const __nv_bfloat16*>(data())[i]);
    return reinterpret_cast<const float*>(data())[i];
  }
  void set_raw(int64_t i, float v) {
    if (type == CUDA_R_16F) reinterpret_cast<__half*>(data())[i] = __float2half_rn(v);
    else if (type == CUDA_R_16BF) reinterpret_cast<__nv_bfloat16*>(data())[i] = __float2bfloat16(v);
    else reinterpret_cast<float*>(data())[i] = v;
  }
  float at(int64_t p, int64_t r, int64_t c) const { return raw(index(p, r, c)); }
  void set(int64_t p, int64_t r, int64_t c, float v) { set_raw(index(p, r, c), v); }

  // Fills the matrices (not the padding) with values in [−9/7, 9/7], none exact in binary, rounded to the type.
  void fill_pattern(int seed) {
    for (int64_t p = 0; p < batch; ++p)
      for (int64_t c = 0; c < cols; ++c)
        for (int64_t r = 0; r < rows; ++r)
          set(p, r, c, static_cast<float>((r * 7 + c * 13 + p * 5 + seed) % 19 - 9) / 7.0f);
  }
};

// The tests' shape: odd sizes, none equal, so a swapped dimension shows.
constexpr int kM = 5, kN = 3, kK = 7;

// op(A) m×k and op(B) k×n stored with ld = stored rows + 2 (padding NaN), C m×n with ld = m + 3; each filled
// with the pattern (its own seed).
inline Matrix make_a(cudaDataType_t t, bool trans, int64_t batch = 1) {
  Matrix a(t, trans ? kK : kM, trans ? kM : kK, (trans ? kK : kM) + 2, batch, 0);
  a.fill_pattern(1);
  return a;
}
inline Matrix make_b(cudaDataType_t t, bool trans, int64_t batch = 1) {
  Matrix b(t, trans ? kN : kK, trans ? kK : kN, (trans ? kN : kK) + 2, batch, 0);
  b.fill_pattern(4);
  return b;
}
inline Matrix make_c(cudaDataType_t t, int64_t batch = 1) {
  Matrix c(t, kM, kN, kM + 3, batch, 0);
  c.fill_pattern(9);
  return c;
}

// op(X)(r, c) of matrix p: X(r, c), or X(c, r) when trans.
inline double op_at(const Matrix& x, bool trans, int64_t p, int64_t r, int64_t c) {
  return trans ? x.at(p, c, r) : x.at(p, r, c);
}

// Σ_l op(A)(i, l)·op(B)(l, j) in double, with Σ|terms| for the error bound.
struct Dot {
  double value = 0, magnitude = 0;
};
inline Dot reference_dot(const Matrix& a, bool ta, const Matrix& b, bool tb, int64_t p, int64_t i, int64_t j,
                         int64_t k) {
  Dot d;
  for (int64_t l = 0; l < k; ++l) {
    const double t = op_at(a, ta, p, i, l) * op_at(b, tb, p, l, j);
    d.value += t;
    d.magnitude += std::fabs(t);
  }
  return d;
}

// How far float arithmetic of n roundings may be from the exact value, for terms of total magnitude `mag`:
// the classical bound γ_n·mag with γ_n = n·u / (1 − n·u), u = 2^-24 (Higham, "Accuracy and Stability of
// Numerical Algorithms", §3.1). A k-term dot product with one fused multiply-add per term has k roundings;
// alpha·acc and + beta·c add two.
inline double gamma_bound(int64_t n, double mag) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1 - n * u) * mag;
}

}  // namespace blas_test
