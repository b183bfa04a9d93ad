// runtime/exec/cpu_backend.cpp — the CPU reference kernels (plain loops; Eigen for GEMMs) and CpuBackend,
// which maps a TaskGraph op onto them. Reductions over a row (layernorm, softmax, cross-entropy) accumulate
// in double whatever T is; elementwise work stays in T.
#include "runtime/exec/cpu_backend.hpp"

#include <fmt/format.h>

#include <Eigen/Core>
#include <unsupported/Eigen/SpecialFunctions>  // vectorised erf
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numbers>
#include <stdexcept>
#include <type_traits>
#include <vector>


#include "core/error.hpp"
#include "runtime/exec/cpu_16bit_boundary.hpp"  // defines: OpBoundary
#include "runtime/exec/cpu_device.hpp"
#include "runtime/exec/cpu_fused_attention.hpp"  // defines: run_fused_attention_op
#include "runtime/exec/cpu_fused_dropout.hpp"  // softmax_dropout, bias_dropout_residual
#include "runtime/exec/cpu_gemm.hpp"  // defines: gemm_run, batched_gemm_run
#include "runtime/exec/cpu_vector_kernels.hpp"  // defines: dropout_keep_mask
#include "runtime/exec/math/activation_math.hpp"  // the per-element maths shared with the CUDA kernels
#include "runtime/exec/math/norm_math.hpp"
#include "runtime/exec/op_shape_checks.hpp"
#include "runtime/exec/precision.hpp"  // defines: is_16bit_float

namespace ptsim::runtime::cpu {
namespace {

using core::InputError;
using models::OpKind;

template <class T>
using RowMajor = Eigen::Matrix<T, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// Elementwise maths through Eigen arrays: SIMD exp/erf/tanh for float (the hot loops: GELU over (M, 4H),
// the MLM cross-entropy over (P, vocab)); Eigen falls back to std:: where it has no packet version.
template <class T>
using ArrayMap = Eigen::Map<Eigen::Array<T, Eigen::Dynamic, 1>>;
template <class T>
using ConstArrayMap = Eigen::Map<const Eigen::Array<T, Eigen::Dynamic, 1>>;


}  // namespace

// ---- embeddings, gathers ----

template <class T>
void embedding_forward(T* y, const T* table, const int32_t* ids, int64_t M, int64_t H, int64_t V) {
  for (int64_t m = 0; m < M; ++m) {
    const int64_t id = ids[m];
    if (id < 0 || id >= V)
      throw InputError(fmt::format("token id {} at row {} is outside the embedding table's {} rows", id, m, V));
    std::memcpy(y + m * H, table + id * H, static_cast<size_t>(H) * sizeof(T));
  }
}

template <class T>
void embedding_backward(T* dtable, const T* dy, const int32_t* ids, int64_t M, int64_t H, int64_t V) {
  for (int64_t m = 0; m < M; ++m) {
    const int64_t id = ids[m];
    if (id < 0 || id >= V)
      throw InputError(fmt::format("token id {} at row {} is outside the embedding table's {} rows", id, m, V));
    T* out = dtable + id * H;
    const T* in = dy + m * H;
    for (int64_t h = 0; h < H; ++h) out[h] += in[h];
  }
}

template <class T>
void gather_rows_forward(T* y, const T* x, const int32_t* index, int64_t P, int64_t M, int64_t N) {
  for (int64_t p = 0; p < P; ++p) {
    const int64_t row = index[p];
    if (row < 0 || row >= M)
      throw InputError(fmt::format("gather index {} at position {} is outside [0, {})", row, p, M));
    std::memcpy(y + p * N, x + row * N, static_cast<size_t>(N) * sizeof(T));
  }
}

template <class T>
void gather_rows_backward(T* dx, const T* dy, const int32_t* index, int64_t P, int64_t M, int64_t N) {
  std::fill(dx, dx + M * N, T(0));
  for (int64_t p = 0; p < P; ++p) {
    const int64_t row = index[p];
    if (row < 0 || row >= M)
      throw InputError(fmt::format("gather index {} at position {} is outside [0, {})", row, p, M));
    for (int64_t n = 0; n < N; ++n) dx[row * N + n] += dy[p * N + n];
  }
}

// ---- matrix products ----

// Both on the build's GEMM engine (cpu_gemm.cpp: OpenBLAS when linked, else Eigen).
template <class T>
void gemm_forward(T* C, const T* A, const T* B, const T* bias, const models::GemmAttrs& a) {
  gemm_run<T>(C, A, B, bias, a, gemm_default_engine());
}

template <class T>
void batched_gemm_forward(T* C, const T* A, const T* B, const models::GemmAttrs& a) {
  batched_gemm_run<T>(C, A, B, a, gemm_default_engine());
}

template <class T>
void bias_grad(T* dbias, const T* dy, int64_t M, int64_t N) {
  Eigen::Map<const RowMajor<T>> g(dy, M, N);
  Eigen::Map<Eigen::Matrix<T, 1, Eigen::Dynamic>>(dbias, N) += g.colwise().sum();
}

// ---- elementwise ----

template <class T>
void add_forward(T* y, std::span<const T* const> xs, int64_t n) {
  if (xs.empty()) {
    std::fill(y, y + n, T(0));
    return;
  }
  std::memcpy(y, xs[0], static_cast<size_t>(n) * sizeof(T));
  for (size_t i = 1; i < xs.size(); ++i) {
    const T* x = xs[i];
    for (int64_t j = 0; j < n; ++j) y[j] += x[j];
  }
}

template <class T>
void dropout_forward(T* y, uint8_t* mask, const T* x, int64_t n, double p, uint64_t key) {
  if (p >= 1.0) {  // drop everything (the scale 1/(1-p) would be infinite)
    std::fill(y, y + n, T(0));
    std::fill(mask, mask + n, uint8_t{0});
    return;
  }
  // The mask every backend draws (dropout_mask.hpp), drawn by the ISA variant this CPU has, then applied.
  const uint64_t threshold = dropout_threshold(std::max(p, 0.0));
  const T scale = math::dropout_scale<T>(p);
  dropout_keep_mask(detected_cpu_isa(), mask, static_cast<size_t>(n), key, 0, threshold);
  for (int64_t i = 0; i < n; ++i) y[i] = math::dropout_apply(x[i], mask[i] != 0, scale);
}

template <class T>
void dropout_backward(T* dx, const T* dy, const uint8_t* mask, int64_t n, double p) {
  const T scale = math::dropout_scale<T>(p);
  for (int64_t i = 0; i < n; ++i) dx[i] = math::dropout_apply(dy[i], mask[i] != 0, scale);
}

// GELU: math::gelu_* (activation_math.hpp) evaluated through Eigen's vectorised erf/tanh/exp, with its
// constants; test_op_math.cpp checks these loops against the scalar functions the CUDA kernels run.
using math::kGeluCubic;
using math::kInvSqrt2;
using math::kInvSqrt2Pi;
using math::kSqrt2OverPi;

template <class T>
void gelu_forward(T* y, const T* x, int64_t n, bool tanh_form) {
  ConstArrayMap<T> v(x, n);
  ArrayMap<T> out(y, n);
  if (tanh_form) {  // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
    const auto u = static_cast<T>(kSqrt2OverPi) * (v + static_cast<T>(kGeluCubic) * v.cube());
    out = T(0.5) * v * (T(1) + u.tanh());
  } else {  // x·Φ(x) = 0.5·x·(1 + erf(x/√2))
    out = T(0.5) * v * (T(1) + (v * static_cast<T>(kInvSqrt2)).erf());
  }
}

template <class T>
void gelu_backward(T* dx, const T* dy, const T* x, int64_t n, bool tanh_form) {
  ConstArrayMap<T> v(x, n), g(dy, n);
  ArrayMap<T> out(dx, n);
  if (tanh_form) {  // 0.5·(1 + t) + 0.5·x·(1 − t²)·√(2/π)·(1 + 3·0.044715·x²), t = tanh(u)
    const Eigen::Array<T, Eigen::Dynamic, 1> t =
        (static_cast<T>(kSqrt2OverPi) * (v + static_cast<T>(kGeluCubic) * v.cube())).tanh();
    const auto du = static_cast<T>(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * v.square());
    out = g * (T(0.5) * (T(1) + t) + T(0.5) * v * (T(1) - t.square()) * du);
  } else {  // Φ(x) + x·φ(x)
    const auto cdf = T(0.5) * (T(1) + (v * static_cast<T>(kInvSqrt2)).erf());
    const auto pdf = static_cast<T>(kInvSqrt2Pi) * (T(-0.5) * v.square()).exp();
    out = g * (cdf + v * pdf);
  }
}

template <class T>
void tanh_forward(T* y, const T* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(x[i]);
}

template <class T>
void tanh_backward(T* dx, const T* dy, const T* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dx[i] = math::tanh_grad_from_output(dy[i], y[i]);
}

// ---- normalisation ----

template <class T>
void layernorm_forward(T* y, T* mean, T* rstd, const T* x, const T* gamma, const T* beta, int64_t M, int64_t N,
                       double eps) {
  for (int64_t m = 0; m < M; ++m) {
    const T* xr = x + m * N;
    double sum = 0;
    for (int64_t n = 0; n < N; ++n) sum += xr[n];
    const double mu = sum / static_cast<double>(N);
    double var = 0;
    for (int64_t n = 0; n < N; ++n) var += (xr[n] - mu) * (xr[n] - mu);
    var /= static_cast<double>(N);
    const T mu_t = static_cast<T>(mu), rs_t = math::layernorm_rstd<T>(var, eps);
    mean[m] = mu_t;
    rstd[m] = rs_t;
    T* yr = y + m * N;
    for (int64_t n = 0; n < N; ++n) yr[n] = math::layernorm_output(xr[n], mu_t, rs_t, gamma[n], beta[n]);
  }
}

template <class T>
void layernorm_backward(T* dx, T* dgamma, T* dbeta, const T* dy, const T* x, const T* gamma, const T* mean,
                        const T* rstd, int64_t M, int64_t N) {
  for (int64_t m = 0; m < M; ++m) {
    const T* dyr = dy + m * N;
    const T* xr = x + m * N;
    const T mu = mean[m], rs = rstd[m];
    double g_mean = 0, gx_mean = 0;
    for (int64_t n = 0; n < N; ++n) {
      const T xhat = math::layernorm_xhat(xr[n], mu, rs);
      const T g = dyr[n] * gamma[n];
      g_mean += g;
      gx_mean += g * xhat;
    }
    g_mean /= static_cast<double>(N);
    gx_mean /= static_cast<double>(N);
    const T gm = static_cast<T>(g_mean), gxm = static_cast<T>(gx_mean);
    T* dxr = dx + m * N;
    for (int64_t n = 0; n < N; ++n) {
      const T xhat = math::layernorm_xhat(xr[n], mu, rs);
      dbeta[n] += dyr[n];
      dgamma[n] += dyr[n] * xhat;
      dxr[n] = math::layernorm_dx(dyr[n], gamma[n], xhat, rs, gm, gxm);
    }
  }
}

template <class T>
void softmax_forward(T* probs, const T* scores, int64_t rows, int64_t cols, const SoftmaxMask& mask) {
  const bool masked = mask.keep != nullptr || mask.causal;
  const int64_t S = mask.seq > 0 ? mask.seq : cols;
  for (int64_t r = 0; r < rows; ++r) {
    const T* s = scores + r * cols;
    T* p = probs + r * cols;
    const int32_t* keep = math::softmax_keep_row(mask.keep, r, mask.heads, S);
    // Keys [0, limit) are candidates (causal: j ≤ i); among them, padding keys are skipped.
    const int64_t limit = math::softmax_key_limit(r, S, cols, mask.causal);
    auto allowed = [&](int64_t j) { return math::softmax_key_allowed(j, limit, keep); };
    T mx = -std::numeric_limits<T>::infinity();
    for (int64_t j = 0; j < cols; ++j)
      if (!masked || allowed(j)) mx = std::max(mx, s[j]);
    if (mx == -std::numeric_limits<T>::infinity()) {  // every key masked: attend to nothing
      std::fill(p, p + cols, T(0));
      continue;
    }
    double sum = 0;
    for (int64_t j = 0; j < cols; ++j) {
      if (masked && !allowed(j)) {
        p[j] = T(0);
        continue;
      }
      p[j] = std::exp(s[j] - mx);
      sum += p[j];
    }
    const T inv = static_cast<T>(1.0 / sum);
    for (int64_t j = 0; j < cols; ++j) p[j] *= inv;
  }
}

template <class T>
void softmax_backward(T* dscores, const T* dprobs, const T* probs, int64_t rows, int64_t cols) {
  for (int64_t r = 0; r < rows; ++r) {
    const T* dp = dprobs + r * cols;
    const T* p = probs + r * cols;
    T* ds = dscores + r * cols;
    double dot = 0;
    for (int64_t j = 0; j < cols; ++j) dot += dp[j] * p[j];
    const T d = static_cast<T>(dot);
    for (int64_t j = 0; j < cols; ++j) ds[j] = math::softmax_dscore(p[j], dp[j], d);
  }
}

// ---- heads ----

template <class T>
void split_heads(T* y, const T* x, int64_t B, int64_t S, int64_t nh, int64_t d) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t s = 0; s < S; ++s)
        std::memcpy(y + ((b * nh + h) * S + s) * d, x + (b * S + s) * nh * d + h * d, static_cast<size_t>(d) * sizeof(T));
}

template <class T>
void merge_heads(T* y, const T* x, int64_t B, int64_t S, int64_t nh, int64_t d) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < nh; ++h)
      for (int64_t s = 0; s < S; ++s)
        std::memcpy(y + (b * S + s) * nh * d + h * d, x + ((b * nh + h) * S + s) * d, static_cast<size_t>(d) * sizeof(T));
}

// ---- loss ----

// The MLM/NSP loss: math::cross_entropy_dlogit (norm_math.hpp) is what the backward's vectorised loop computes.
using math::effective_classes;

template <class T>
void cross_entropy_forward(T* loss, T* lse, const T* logits, const int32_t* labels, int64_t P, int64_t C,
                           int64_t valid) {
  const int64_t V = effective_classes(C, valid);
  double total = 0;
  int64_t count = 0;
  for (int64_t p = 0; p < P; ++p) {
    const T* z = logits + p * C;
    ConstArrayMap<T> row(z, V);
    const T mx = row.maxCoeff();
    const double l = static_cast<double>(mx) + std::log(static_cast<double>((row - mx).exp().sum()));
    lse[p] = static_cast<T>(l);
    const int64_t label = labels[p];
    if (label == -1) continue;
    if (label < 0 || label >= V)
      throw InputError(fmt::format("label {} at row {} is outside [0, {}) (or -1 to ignore)", label, p, V));
    total += l - static_cast<double>(z[label]);
    ++count;
  }
  loss[0] = count > 0 ? static_cast<T>(total / static_cast<double>(count)) : T(0);
}

template <class T>
void cross_entropy_backward(T* dlogits, const T* dloss, const T* logits, const int32_t* labels, const T* lse,
                            int64_t P, int64_t C, int64_t valid) {
  const int64_t V = effective_classes(C, valid);
  int64_t count = 0;
  for (int64_t p = 0; p < P; ++p) {
    const int64_t label = labels[p];
    if (label == -1) continue;
    if (label < 0 || label >= V)
      throw InputError(fmt::format("label {} at row {} is outside [0, {}) (or -1 to ignore)", label, p, V));
    ++count;
  }
  const T scale = count > 0 ? static_cast<T>(static_cast<double>(dloss[0]) / static_cast<double>(count)) : T(0);
  for (int64_t p = 0; p < P; ++p) {
    T* d = dlogits + p * C;
    const int32_t label = labels[p];
    if (label == -1 || count == 0) {
      std::fill(d, d + C, T(0));
      continue;
    }
    ArrayMap<T>(d, V) = scale * (ConstArrayMap<T>(logits + p * C, V) - lse[p]).exp();
    d[label] -= scale;
    std::fill(d + V, d + C, T(0));
  }
}

// ---- explicit instantiations ----
#define PTSIM_CPU_KERNELS(T)                                                                                     \
  template void embedding_forward<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t);                   \
  template void embedding_backward<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t);                  \
  template void gather_rows_forward<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t);                 \
  template void gather_rows_backward<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t);                \
  template void gemm_forward<T>(T*, const T*, const T*, const T*, const models::GemmAttrs&);                     \
  template void batched_gemm_forward<T>(T*, const T*, const T*, const models::GemmAttrs&);                       \
  template void bias_grad<T>(T*, const T*, int64_t, int64_t);                                                    \
  template void add_forward<T>(T*, std::span<const T* const>, int64_t);                                          \
  template void dropout_forward<T>(T*, uint8_t*, const T*, int64_t, double, uint64_t);                           \
  template void dropout_backward<T>(T*, const T*, const uint8_t*, int64_t, double);                              \
  template void gelu_forward<T>(T*, const T*, int64_t, bool);                                                    \
  template void gelu_backward<T>(T*, const T*, const T*, int64_t, bool);                                         \
  template void tanh_forward<T>(T*, const T*, int64_t);                                                          \
  template void tanh_backward<T>(T*, const T*, const T*, int64_t);                                               \
  template void layernorm_forward<T>(T*, T*, T*, const T*, const T*, const T*, int64_t, int64_t, double);        \
  template void layernorm_backward<T>(T*, T*, T*, const T*, const T*, const T*, const T*, const T*, int64_t,     \
                                      int64_t);                                                                  \
  template void softmax_forward<T>(T*, const T*, int64_t, int64_t, const SoftmaxMask&);                          \
  template void softmax_backward<T>(T*, const T*, const T*, int64_t, int64_t);                                   \
  template void split_heads<T>(T*, const T*, int64_t, int64_t, int64_t, int64_t);                                \
  template void merge_heads<T>(T*, const T*, int64_t, int64_t, int64_t, int64_t);                                \
  template void cross_entropy_forward<T>(T*, T*, const T*, const int32_t*, int64_t, int64_t, int64_t);           \
  template void cross_entropy_backward<T>(T*, const T*, const T*, const int32_t*, const T*, int64_t, int64_t,    \
                                          int64_t);
PTSIM_CPU_KERNELS(float)
PTSIM_CPU_KERNELS(double)
#undef PTSIM_CPU_KERNELS

}  // namespace ptsim::runtime::cpu

// ---- the backend: op → kernel ----
namespace ptsim::runtime {
namespace {

using models::Op;
using models::OpKind;
using models::TaskGraph;

int64_t elements(const TaskGraph& g, int id) { return g.tensor(id).elements(); }
int64_t last_dim(const TaskGraph& g, int id) {
  const auto& s = g.tensor(id).shape;
  return s.empty() ? 1 : s.back();
}

// The masking of a softmax (and of the fused softmax + dropout) over rows of `cols` scores: the optional
// padding mask (B,S) as the op's second input, the heads and sequence it is laid out by, causal or not.
cpu::SoftmaxMask softmax_mask(std::span<void* const> in, const models::OpAttrs& a, int64_t cols) {
  cpu::SoftmaxMask mask;
  mask.keep = in.size() > 1 ? static_cast<const int32_t*>(in[1]) : nullptr;
  mask.heads = a.heads > 0 ? a.heads : 1;
  mask.seq = a.seq > 0 ? a.seq : cols;
  mask.causal = a.causal;
  return mask;
}

template <class T>
class CpuBackend final : public cpu::CpuDevice {
 public:
  explicit CpuBackend(int threads) : CpuDevice(std::is_same_v<T, double> ? ComputeType::f64 : ComputeType::f32, threads) {}
  const char* name() const override { return std::is_same_v<T, float> ? "cpu-f32" : "cpu-f64"; }

  // 16-bit operands (the graph given is the storage graph: f16/bf16 where the tensor is stored as 16 bits)
  // go through fp32 scratch around the one fp32 kernel (cpu_16bit_boundary.hpp); f64 has no 16-bit storage.
  void run(const TaskGraph& g, const Op& op, std::span<void* const> in, std::span<void* const> out,
           const OpContext& context) override {
    if constexpr (std::is_same_v<T, float>) {
      if (boundary_.prepare(g, op, in, out)) {
        run_kernel(g, op, boundary_.inputs(), boundary_.outputs(), context);
        boundary_.finish();
        return;
      }
    } else {
      auto half = [&](int id) { return is_16bit_float(g.tensor(id).dtype); };
      if (std::any_of(op.inputs.begin(), op.inputs.end(), half) || std::any_of(op.outputs.begin(), op.outputs.end(), half))
        throw std::logic_error(fmt::format("op {}: the f64 CPU backend has no 16-bit storage", op.name));
    }
    run_kernel(g, op, in, out, context);
  }

 private:
  cpu::OpBoundary boundary_;  // the fp32 scratch of 16-bit operands, reused op after op

  void run_kernel(const TaskGraph& g, const Op& op, std::span<void* const> in, std::span<void* const> out,
                  const OpContext& context) {
    auto x = [&](size_t i) { return static_cast<const T*>(in[i]); };
    auto ids = [&](size_t i) { return static_cast<const int32_t*>(in[i]); };
    auto y = [&](size_t i) { return static_cast<T*>(out[i]); };
    const models::OpAttrs& a = op.attrs;
    switch (op.kind) {
      case OpKind::embedding: {  // table (V,H), ids (M) → y (M,H)
        const auto& table = g.tensor(op.inputs[0]).shape;
        cpu::embedding_forward<T>(y(0), x(0), ids(1), elements(g, op.inputs[1]), table.at(1), table.at(0));
        break;
      }
      case OpKind::embedding_backward: {  // dy (M,H), ids (M) → dtable (V,H) +=
        const auto& table = g.tensor(op.outputs[0]).shape;
        cpu::embedding_backward<T>(y(0), x(0), ids(1), elements(g, op.inputs[1]), table.at(1), table.at(0));
        break;
      }
      case OpKind::gemm:
        check_gemm_shapes(g, op);
        cpu::gemm_forward<T>(y(0), x(0), x(1), a.gemm.has_bias ? x(2) : nullptr, a.gemm);
        break;
      case OpKind::batched_gemm:
        check_gemm_shapes(g, op);
        cpu::batched_gemm_forward<T>(y(0), x(0), x(1), a.gemm);
        break;
      case OpKind::bias_grad: {  // dy (M,N) → dbias (N) +=
        const int64_t N = elements(g, op.outputs[0]);
        cpu::bias_grad<T>(y(0), x(0), elements(g, op.inputs[0]) / N, N);
        break;
      }
      case OpKind::add: {
        std::vector<const T*> xs;
        for (size_t i = 0; i < in.size(); ++i) xs.push_back(x(i));
        cpu::add_forward<T>(y(0), xs, elements(g, op.outputs[0]));
        break;
      }
      case OpKind::layernorm: {  // x (M,N), gamma, beta → y, mean (M), rstd (M)
        const int64_t N = last_dim(g, op.inputs[0]);
        cpu::layernorm_forward<T>(y(0), y(1), y(2), x(0), x(1), x(2), elements(g, op.inputs[0]) / N, N,
                                  a.epsilon);
        break;
      }
      case OpKind::layernorm_backward: {  // dy, x, gamma, mean, rstd → dx, dgamma +=, dbeta +=
        const int64_t N = last_dim(g, op.inputs[1]);
        cpu::layernorm_backward<T>(y(0), y(1), y(2), x(0), x(1), x(2), x(3), x(4), elements(g, op.inputs[1]) / N, N);
        break;
      }
      case OpKind::softmax: {  // scores (B·nh,S,S), (mask (B,S)) → probs
        const int64_t cols = last_dim(g, op.inputs[0]);
        const cpu::SoftmaxMask mask = softmax_mask(in, a, cols);
        cpu::softmax_forward<T>(y(0), x(0), elements(g, op.inputs[0]) / cols, cols, mask);
        break;
      }
      case OpKind::softmax_backward: {  // dprobs, probs → dscores
        const int64_t cols = last_dim(g, op.inputs[1]);
        cpu::softmax_backward<T>(y(0), x(0), x(1), elements(g, op.inputs[1]) / cols, cols);
        break;
      }
      case OpKind::dropout: {  // x → y, mask (u8)
        const uint64_t key = cpu::dropout_key(context.seed, context.step, context.micro_step, a.rng_stream);
        cpu::dropout_forward<T>(y(0), static_cast<uint8_t*>(out[1]), x(0), elements(g, op.inputs[0]), a.dropout_p,
                                key);
        break;
      }
      case OpKind::dropout_backward:  // dy, mask → dx
        cpu::dropout_backward<T>(y(0), x(0), static_cast<const uint8_t*>(in[1]), elements(g, op.inputs[0]),
                                 a.dropout_p);
        break;
      case OpKind::softmax_dropout: {  // scores, (mask (B,S)) → dropped, probs, mask (u8)
        const int64_t cols = last_dim(g, op.inputs[0]);
        const cpu::SoftmaxMask mask = softmax_mask(in, a, cols);
        const uint64_t key = cpu::dropout_key(context.seed, context.step, context.micro_step, a.rng_stream);
        cpu::softmax_dropout_forward<T>(y(0), y(1), static_cast<uint8_t*>(out[2]), x(0),
                                        elements(g, op.inputs[0]) / cols, cols, mask, a.dropout_p, key);
        break;
      }
      case OpKind::softmax_dropout_backward: {  // ddropped, probs, mask → dscores
        const int64_t cols = last_dim(g, op.inputs[1]);
        cpu::softmax_dropout_backward<T>(y(0), x(0), x(1), static_cast<const uint8_t*>(in[2]),
                                         elements(g, op.inputs[1]) / cols, cols, a.dropout_p);
        break;
      }
      case OpKind::bias_dropout_residual: {  // y (M,N), bias (N), residual → out, (mask u8)
        const int64_t N = last_dim(g, op.inputs[0]);
        const uint64_t key = cpu::dropout_key(context.seed, context.step, context.micro_step, a.rng_stream);
        cpu::bias_dropout_residual_forward<T>(y(0), out.size() > 1 ? static_cast<uint8_t*>(out[1]) : nullptr, x(0),
                                              x(1), x(2), elements(g, op.inputs[0]) / N, N, a.dropout_p, key);
        break;
      }
      case OpKind::bias_dropout_residual_backward: {  // dout, (mask) → dy, dbias +=
        const int64_t N = last_dim(g, op.inputs[0]);
        cpu::bias_dropout_residual_backward<T>(y(0), y(1), x(0), in.size() > 1 ? static_cast<const uint8_t*>(in[1]) : nullptr,
                                               elements(g, op.inputs[0]) / N, N, a.dropout_p);
        break;
      }
      case OpKind::gelu: cpu::gelu_forward<T>(y(0), x(0), elements(g, op.inputs[0]), a.gelu_tanh); break;
      case OpKind::gelu_backward:
        cpu::gelu_backward<T>(y(0), x(0), x(1), elements(g, op.inputs[0]), a.gelu_tanh);
        break;
      case OpKind::tanh: cpu::tanh_forward<T>(y(0), x(0), elements(g, op.inputs[0])); break;
      case OpKind::tanh_backward: cpu::tanh_backward<T>(y(0), x(0), x(1), elements(g, op.inputs[0])); break;
      case OpKind::split_heads:
        check_heads_shapes(g, op);
        cpu::split_heads<T>(y(0), x(0), a.batch, a.seq, a.heads, a.head_dim);
        break;
      case OpKind::merge_heads:
        check_heads_shapes(g, op);
        cpu::merge_heads<T>(y(0), x(0), a.batch, a.seq, a.heads, a.head_dim);
        break;
      case OpKind::gather_rows: {  // x (M,N), index (P) → y (P,N)
        const int64_t N = last_dim(g, op.inputs[0]);
        cpu::gather_rows_forward<T>(y(0), x(0), ids(1), elements(g, op.inputs[1]), elements(g, op.inputs[0]) / N, N);
        break;
      }
      case OpKind::gather_rows_backward: {  // dy (P,N), index (P) → dx (M,N)
        const int64_t N = last_dim(g, op.outputs[0]);
        cpu::gather_rows_backward<T>(y(0), x(0), ids(1), elements(g, op.inputs[1]), elements(g, op.outputs[0]) / N,
                                     N);
        break;
      }
      case OpKind::cross_entropy: {  // logits (P,C), labels (P) → loss (1), lse (P)
        const int64_t C = last_dim(g, op.inputs[0]);
        cpu::cross_entropy_forward<T>(y(0), y(1), x(0), ids(1), elements(g, op.inputs[0]) / C, C, a.valid_classes);
        break;
      }
      case OpKind::cross_entropy_backward: {  // dloss (1), logits, labels, lse → dlogits
        const int64_t C = last_dim(g, op.inputs[1]);
        cpu::cross_entropy_backward<T>(y(0), x(0), x(1), ids(2), x(3), elements(g, op.inputs[1]) / C, C,
                                       a.valid_classes);
        break;
      }
      case OpKind::fused_attention:           // q, k, v, (mask) → context, lse
      case OpKind::fused_attention_backward:  // dcontext, q, k, v, context, lse, (mask) → dq, dk, dv
        cpu::run_fused_attention_op<T>(g, op, in, out, context, threads());
        break;
      default:
        throw std::invalid_argument(
            fmt::format("the CPU backend does not run op kind {} ({})", models::to_string(op.kind), op.name));
    }
  }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(ComputeType compute, int threads) {
  if (compute == ComputeType::f64) return std::make_unique<CpuBackend<double>>(threads);
  return std::make_unique<CpuBackend<float>>(threads);
}

}  // namespace ptsim::runtime
