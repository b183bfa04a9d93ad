// tests/cuda_emu/test_backend_gemm_emulated.cpp — the CUDA backend's own GEMM code (runtime/exec/cuda/gemm.cpp
// and lt_gemm.cpp, compiled as the emulator compiles the backend's host code: `cuda` renamed) run on the
// emulated cuBLAS / cuBLASLt and kernels, against the row-major graph GEMM it stands for,
// C (m,n) (+)= alpha·op(A)·op(B) (+ bias (n)), evaluated in double: every transpose pair, with and without
// accumulation, the cuBLASLt bias epilogue and the cuBLAS + bias-kernel path, the bias-gradient epilogues
// (bias_grad_epilogue), batched GEMMs, bf16 / fp16 operands, operands at 4- and 8-byte alignment.
#include <doctest/doctest.h>
#include <cuda_runtime_api.h>  // the emulator's (tests/cuda_emu/include)
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <vector>

#include "models/task_graph.hpp"  // read before the rename: not the backend's

#define cuda ptsim_emulated_cuda
#include "runtime/exec/cuda/gemm.hpp"
#undef cuda

namespace emu = ptsim::runtime::ptsim_emulated_cuda;
using ptsim::models::GemmAttrs;

namespace {

// Host copies of device buffers of fp32 / bf16 / fp16 elements, read and written as float.
struct Buffer {
  emu::GemmElement type;
  std::vector<float> host;  // the values, as the device holds them (rounded to the type)
  void* device = nullptr;
  Buffer(emu::GemmElement t, size_t n, float fill = std::nanf("")) : type(t), host(n, fill) {
    REQUIRE(cudaMalloc(&device, bytes() + 64) == cudaSuccess);
    upload();
  }
  ~Buffer() { (void)cudaFree(device); }
  size_t bytes() const { return host.size() * (type == emu::GemmElement::f32 ? 4 : 2); }
  void upload() {
    for (size_t i = 0; i < host.size(); ++i) {
      if (type == emu::GemmElement::bf16) {
        static_cast<__nv_bfloat16*>(device)[i] = __float2bfloat16(host[i]);
        host[i] = __bfloat162float(static_cast<__nv_bfloat16*>(device)[i]);
      } else if (type == emu::GemmElement::f16) {
        static_cast<__half*>(device)[i] = __float2half_rn(host[i]);
        host[i] = __half2float(static_cast<__half*>(device)[i]);
      } else {
        static_cast<float*>(device)[i] = host[i];
      }
    }
  }
  float device_at(size_t i) const {
    if (type == emu::GemmElement::bf16) return __bfloat162float(static_cast<const __nv_bfloat16*>(device)[i]);
    if (type == emu::GemmElement::f16) return __half2float(static_cast<const __half*>(device)[i]);
    return static_cast<const float*>(device)[i];
  }
  void fill(int seed) {
    for (size_t i = 0; i < host.size(); ++i) host[i] = static_cast<float>((i * 7 + seed) % 19) / 7.0f - 9.0f / 7;
    upload();
  }
};

// γ_n = n·u / (1 − n·u), u = 2^-24: the bound on n float roundings relative to the terms' magnitude (Higham,
// "Accuracy and Stability of Numerical Algorithms", §3.1).
double gamma(int64_t n) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1 - n * u);
}

double unit_roundoff(emu::GemmElement t) {
  return t == emu::GemmElement::f16 ? std::ldexp(1.0, -11) : t == emu::GemmElement::bf16 ? std::ldexp(1.0, -8) : 0.0;
}

// C against the graph GEMM of the host copies of A, B, C0 (before) and the bias, batch matrix by matrix.
// Bound: γ_{k+3}·(|alpha|·Σ|a·b| + |c0| + |bias|) (k fused multiply-adds, alpha, + C, + bias), plus one
// rounding of C's type when it is 16-bit.
void check_gemm(const GemmAttrs& g, const Buffer& a, const Buffer& b, const std::vector<float>& c0, const Buffer& c,
                const Buffer* bias) {
  const int64_t m = g.m, n = g.n, k = g.k;
  for (int64_t p = 0; p < g.batch; ++p)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0, mag = 0;
        for (int64_t l = 0; l < k; ++l) {
          const double x = g.trans_a ? a.host[p * m * k + l * m + i] : a.host[p * m * k + i * k + l];
          const double y = g.trans_b ? b.host[p * k * n + j * k + l] : b.host[p * k * n + l * n + j];
          sum += x * y;
          mag += std::fabs(x * y);
        }
        const size_t ci = static_cast<size_t>(p * m * n + i * n + j);
        const double add = (g.accumulate ? c0[ci] : 0.0) + (bias ? bias->host[j] : 0.0);
        const double want = g.alpha * sum + add;
        const double tol = gamma(k + 3) * (std::fabs(g.alpha) * mag + (g.accumulate ? std::fabs(c0[ci]) : 0.0) +
                                           (bias ? std::fabs(bias->host[j]) : 0.0)) +
                           std::fabs(want) * unit_roundoff(c.type);
        INFO("p=", p, " i=", i, " j=", j, " got=", c.device_at(ci), " want=", want);
        CHECK(std::fabs(c.device_at(ci) - want) <= tol);
      }
}

GemmAttrs attrs(bool ta, bool tb, bool acc, bool bias, int64_t batch = 1) {
  GemmAttrs g;
  g.batch = batch;
  g.m = 5;
  g.n = 3;
  g.k = 7;
  g.trans_a = ta;
  g.trans_b = tb;
  g.alpha = 0.75;
  g.accumulate = acc;
  g.has_bias = bias;
  return g;
}

struct Blas {
  cublasHandle_t handle = nullptr;
  Blas() { REQUIRE(cublasCreate(&handle) == CUBLAS_STATUS_SUCCESS); }
  ~Blas() { (void)cublasDestroy(handle); }
};

}  // namespace

TEST_CASE("backend gemm_forward on the emulated cuBLAS: cuBLASLt bias epilogue and cublasGemmEx + bias kernel") {
  Blas blas;
  emu::LtGemm lt;
  for (const bool use_lt : {true, false})
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        for (const bool acc : {false, true}) {
          INFO("lt=", use_lt, " trans_a=", ta, " trans_b=", tb, " accumulate=", acc);
          const GemmAttrs g = attrs(ta, tb, acc, true);
          Buffer a(emu::GemmElement::f32, 35), b(emu::GemmElement::f32, 21), c(emu::GemmElement::f32, 15),
              bias(emu::GemmElement::f32, 3);
          a.fill(1), b.fill(4), c.fill(9), bias.fill(2);
          const std::vector<float> c0 = c.host;
          emu::gemm_forward(blas.handle, use_lt ? &lt : nullptr, static_cast<float*>(c.device),
                            static_cast<const float*>(a.device), static_cast<const float*>(b.device),
                            static_cast<const float*>(bias.device), g, false, nullptr);
          check_gemm(g, a, b, c0, c, &bias);
        }
  CHECK(lt.cached_shapes() == 4);  // one per transpose pair: accumulation changes only beta
}

TEST_CASE("backend gemm_with_bias_grad on the emulated cuBLASLt: BGRADB (dy = A) and BGRADA (dy = B)") {
  emu::LtGemm lt;
  for (const bool acc : {false, true})
    for (const emu::GemmOperand dy : {emu::GemmOperand::a, emu::GemmOperand::b}) {
      INFO("accumulate=", acc, " dy operand=", dy == emu::GemmOperand::a ? "a" : "b");
      // dW = dYᵀ·X reads dy (tokens 7, out) as A transposed; the other form has dy as B (k, n) untransposed.
      GemmAttrs g = attrs(true, false, acc, false);
      g.alpha = 1.0;  // bias_grad_epilogue fuses only unscaled GEMMs (whether alpha scales BGRAD is undocumented)
      const int64_t width = dy == emu::GemmOperand::a ? g.m : g.n;
      const auto ep = emu::bias_grad_epilogue(g, dy, g.k, width);
      REQUIRE(ep.has_value());
      Buffer a(emu::GemmElement::f32, 35), b(emu::GemmElement::f32, 21), c(emu::GemmElement::f32, 15),
          grad(emu::GemmElement::f32, 8);
      a.fill(3), b.fill(5), c.fill(6);
      const std::vector<float> c0 = c.host;
      REQUIRE(emu::gemm_with_bias_grad(lt, c.device, a.device, b.device, static_cast<float*>(grad.device), g, *ep,
                                       false, nullptr));
      check_gemm(g, a, b, c0, c, nullptr);
      const Buffer& d = dy == emu::GemmOperand::a ? a : b;
      for (int64_t v = 0; v < width; ++v) {  // column v of dy (k rows, `width` columns, row-major), summed
        double sum = 0, mag = 0;
        for (int64_t l = 0; l < g.k; ++l) sum += d.host[l * width + v], mag += std::fabs(d.host[l * width + v]);
        CHECK(std::fabs(grad.device_at(v) - sum) <= gamma(g.k) * mag);  // a k-term float sum
      }
      for (int64_t v = width; v < 8; ++v) CHECK(std::isnan(grad.device_at(v)));
    }
}

TEST_CASE("backend LtGemm::run: a matmul that refuses the heuristic's algorithm falls back, enqueues nothing") {
  // The emulated cuBLASLt's heuristic offers an algorithm for BGRADB at alpha 0.5, and its matmul refuses it
  // (CUBLAS_STATUS_NOT_SUPPORTED: whether alpha scales the bias gradient is undocumented). A real cuBLASLt may
  // refuse a heuristic's algorithm the same way; gemm_with_bias_grad must then say false (the caller runs the
  // unfused GEMM and bias_grad) rather than throw out of the training step, and leave C and the vector as
  // they were (both calls: the second finds the cached entry).
  emu::LtGemm lt;
  GemmAttrs g = attrs(true, false, false, false);
  g.alpha = 1.0;  // bias_grad_epilogue itself pairs only unscaled GEMMs; the call below is given alpha 0.5
  const auto ep = emu::bias_grad_epilogue(g, emu::GemmOperand::a, g.k, g.m);
  REQUIRE(ep.has_value());
  g.alpha = 0.5;
  Buffer a(emu::GemmElement::f32, 35), b(emu::GemmElement::f32, 21), c(emu::GemmElement::f32, 15),
      grad(emu::GemmElement::f32, 8);
  a.fill(3), b.fill(5), c.fill(6);
  for (int call = 0; call < 2; ++call) {
    INFO("call ", call);
    CHECK_FALSE(emu::gemm_with_bias_grad(lt, c.device, a.device, b.device, static_cast<float*>(grad.device), g, *ep,
                                         false, nullptr));
    CHECK(lt.cached_shapes() == 1);
  }
  for (size_t i = 0; i < c.host.size(); ++i) CHECK(c.device_at(i) == c.host[i]);  // untouched
  for (size_t v = 0; v < 8; ++v) CHECK(std::isnan(grad.device_at(v)));           // still the NaN fill
}

TEST_CASE("backend batched_gemm_forward on the emulated cublasGemmStridedBatchedEx: batch 3, fp32 and fp16") {
  Blas blas;
  for (const bool ta : {false, true})
    for (const bool tb : {false, true}) {
      INFO("trans_a=", ta, " trans_b=", tb);
      const GemmAttrs g = attrs(ta, tb, true, false, 3);
      Buffer a(emu::GemmElement::f32, 105), b(emu::GemmElement::f32, 63), c(emu::GemmElement::f32, 45);
      a.fill(1), b.fill(2), c.fill(3);
      const std::vector<float> c0 = c.host;
      emu::batched_gemm_forward(blas.handle, static_cast<float*>(c.device), static_cast<const float*>(a.device),
                                static_cast<const float*>(b.device), g, false);
      check_gemm(g, a, b, c0, c, nullptr);
      const emu::GemmTypes t{emu::GemmElement::f16, emu::GemmElement::f16, emu::GemmElement::f16};
      Buffer a16(t.ab, 105), b16(t.ab, 63), c16(t.cd, 45);
      a16.fill(4), b16.fill(5), c16.fill(6);
      const std::vector<float> c16_0 = c16.host;
      emu::batched_gemm_forward_16bit(blas.handle, emu::GemmOperands16{c16.device, a16.device, b16.device, nullptr},
                                      t, g);
      check_gemm(g, a16, b16, c16_0, c16, nullptr);
    }
}

TEST_CASE("backend gemm_forward_16bit on the emulated cuBLAS: the Lt epilogue, the finishing path, no bias") {
  Blas blas;
  emu::LtGemm lt;
  Buffer scratch(emu::GemmElement::f32, 64);
  const emu::ScratchFn scratch_fn = [&](size_t bytes) {
    REQUIRE(bytes <= scratch.bytes());
    return scratch.device;
  };
  using E = emu::GemmElement;
  // bias of D's type (the Lt epilogue), an fp32 bias on a bf16 D and a bf16 bias on an fp32 D (not
  // documented for cuBLASLt: gemm_finish), and no bias (cublasGemmEx into D's type).
  const emu::GemmTypes cases[] = {{E::bf16, E::bf16, E::bf16}, {E::f16, E::f32, E::f32}, {E::bf16, E::bf16, E::f32},
                                  {E::bf16, E::f32, E::bf16}, {E::f16, E::f16, E::f16}};
  for (const emu::GemmTypes& t : cases)
    for (const bool has_bias : {true, false}) {
      INFO("ab=", static_cast<int>(t.ab), " cd=", static_cast<int>(t.cd), " bias=", static_cast<int>(t.bias),
           " has_bias=", has_bias);
      const GemmAttrs g = attrs(false, true, true, has_bias);
      Buffer a(t.ab, 35), b(t.ab, 21), c(t.cd, 15), bias(t.bias, 3);
      a.fill(7), b.fill(8), c.fill(9), bias.fill(10);
      const std::vector<float> c0 = c.host;
      emu::gemm_forward_16bit(blas.handle, &lt, emu::GemmOperands16{c.device, a.device, b.device,
                                                                   has_bias ? bias.device : nullptr},
                              t, g, scratch_fn, nullptr);
      check_gemm(g, a, b, c0, c, has_bias ? &bias : nullptr);
    }
}

TEST_CASE("backend LtGemm on the emulated cuBLASLt: operands at 4- and 8-byte alignment still run, one entry each") {
  Blas blas;
  emu::LtGemm lt;
  const GemmAttrs g = attrs(false, true, false, true);
  Buffer a(emu::GemmElement::f32, 40), b(emu::GemmElement::f32, 30), c(emu::GemmElement::f32, 20),
      bias(emu::GemmElement::f32, 8);
  a.fill(1), b.fill(2), c.fill(3), bias.fill(4);
  for (const int offset : {1, 2, 3}) {  // elements: 4, 8, 4 bytes past cudaMalloc's 256-byte alignment
    INFO("offset=", offset);
    float* cp = static_cast<float*>(c.device) + offset;
    const float* ap = static_cast<const float*>(a.device) + offset;
    const float* bp = static_cast<const float*>(b.device) + offset;
    const float* biasp = static_cast<const float*>(bias.device) + offset;
    emu::gemm_forward(blas.handle, &lt, cp, ap, bp, biasp, g, false, nullptr);
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0, mag = 0;
        for (int64_t l = 0; l < g.k; ++l) {
          const double t = double(ap[i * g.k + l]) * bp[j * g.k + l];
          sum += t, mag += std::fabs(t);
        }
        const double want = g.alpha * sum + biasp[j];
        CHECK(std::fabs(cp[i * g.n + j] - want) <= gamma(g.k + 3) * (g.alpha * mag + std::fabs(biasp[j])));
      }
  }
  CHECK(lt.cached_shapes() == 2);  // 4-byte and 8-byte alignment
}

TEST_CASE("backend LtGemm::run takes the epilogue on the emulated cuBLASLt (the heuristic has an algorithm)") {
  // gemm_forward falls back to cuBLAS silently when LtGemm::run declines, so the fused path is asked directly.
  emu::LtGemm lt;
  using E = emu::GemmElement;
  for (const emu::GemmTypes& t : {emu::GemmTypes{}, emu::GemmTypes{E::bf16, E::bf16, E::bf16},
                                  emu::GemmTypes{E::f16, E::f32, E::f32}}) {
    INFO("ab=", static_cast<int>(t.ab), " cd=", static_cast<int>(t.cd));
    const GemmAttrs g = attrs(false, true, false, true);
    Buffer a(t.ab, 35), b(t.ab, 21), c(t.cd, 15), bias(t.bias, 3);
    a.fill(1), b.fill(2), c.fill(3), bias.fill(4);
    const std::vector<float> c0 = c.host;
    CHECK(lt.run(emu::lt_gemm_plan(g, emu::LtEpilogue::bias, t), static_cast<float>(g.alpha), 0.0f, false,
                 emu::LtGemmOperands{c.device, b.device, a.device, bias.device}, nullptr));
    check_gemm(g, a, b, c0, c, &bias);
  }
}
