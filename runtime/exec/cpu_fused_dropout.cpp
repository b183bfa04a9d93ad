// runtime/exec/cpu_fused_dropout.cpp — the CPU kernels of softmax_dropout and bias_dropout_residual,
// forward and backward (contracts: cpu_fused_dropout.hpp). Each makes one pass over a row: the softmax row
// and its dropout while the row is in cache; the bias add, dropout and residual add per element; the dropout
// backward inside the softmax backward's two loops, or beside the bias gradient's column sums.
#include "runtime/exec/cpu_fused_dropout.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/exec/cpu_vector_kernels.hpp"  // defines: dropout_keep_mask
#include "runtime/exec/dropout_mask.hpp"
#include "runtime/exec/math/fused_dropout_math.hpp"

namespace ptsim::runtime::cpu {
namespace {

// The dropout of one op: whether anything is kept, the keep threshold, the scale (dropout_forward's rules).
template <class T>
struct DropoutRule {
  bool drop_all;
  uint64_t threshold;
  T scale;
  explicit DropoutRule(double p)
      : drop_all(p >= 1.0),
        threshold(p >= 1.0 ? 0 : dropout_threshold(std::max(p, 0.0))),
        scale(math::dropout_scale<T>(p)) {}
  // mask[i] = keep(first + i) for i in [0, n): the draws by the ISA variant this CPU has (same bits).
  void draw(uint8_t* mask, size_t n, uint64_t key, uint64_t first) const {
    if (drop_all)
      std::fill(mask, mask + n, uint8_t{0});
    else
      dropout_keep_mask(detected_cpu_isa(), mask, n, key, first, threshold);
  }
};

// One softmax row, exactly as softmax_forward computes it (cpu_backend.cpp): max, exp in T, sum in double.
template <class T>
void softmax_row(T* p, const T* s, int64_t row, int64_t cols, int64_t S, const SoftmaxMask& mask) {
  const bool masked = mask.keep != nullptr || mask.causal;
  const int32_t* keep = math::softmax_keep_row(mask.keep, row, mask.heads, S);
  const int64_t limit = math::softmax_key_limit(row, S, cols, mask.causal);
  auto allowed = [&](int64_t j) { return !masked || math::softmax_key_allowed(j, limit, keep); };
  T mx = -std::numeric_limits<T>::infinity();
  for (int64_t j = 0; j < cols; ++j)
    if (allowed(j)) mx = std::max(mx, s[j]);
  if (mx == -std::numeric_limits<T>::infinity()) {  // every key masked: attend to nothing
    std::fill(p, p + cols, T(0));
    return;
  }
  double sum = 0;
  for (int64_t j = 0; j < cols; ++j) {
    p[j] = allowed(j) ? std::exp(s[j] - mx) : T(0);
    sum += p[j];
  }
  const T inv = static_cast<T>(1.0 / sum);
  for (int64_t j = 0; j < cols; ++j) p[j] *= inv;
}

}  // namespace

template <class T>
void softmax_dropout_forward(T* dropped, T* probs, uint8_t* mask, const T* scores, int64_t rows, int64_t cols,
                             const SoftmaxMask& softmax_mask, double p, uint64_t key) {
  const int64_t S = softmax_mask.seq > 0 ? softmax_mask.seq : cols;
  const DropoutRule<T> rule(p);
  for (int64_t r = 0; r < rows; ++r) {
    T* pr = probs + r * cols;
    softmax_row(pr, scores + r * cols, r, cols, S, softmax_mask);
    T* dr = dropped + r * cols;
    uint8_t* mr = mask + r * cols;
    rule.draw(mr, static_cast<size_t>(cols), key, static_cast<uint64_t>(r * cols));
    for (int64_t j = 0; j < cols; ++j) dr[j] = math::dropout_apply(pr[j], mr[j] != 0, rule.scale);
  }
}

template <class T>
void softmax_dropout_backward(T* dscores, const T* ddropped, const T* probs, const uint8_t* mask, int64_t rows,
                              int64_t cols, double p) {
  const T scale = math::dropout_scale<T>(p);
  for (int64_t r = 0; r < rows; ++r) {
    const T* dd = ddropped + r * cols;
    const T* pr = probs + r * cols;
    const uint8_t* mr = mask + r * cols;
    double dot = 0;  // Σ dp·p with dp = dropout_backward(dd): softmax_backward's sum
    for (int64_t j = 0; j < cols; ++j) dot += math::dropout_apply(dd[j], mr[j] != 0, scale) * pr[j];
    const T d = static_cast<T>(dot);
    T* ds = dscores + r * cols;
    for (int64_t j = 0; j < cols; ++j) ds[j] = math::softmax_dropout_dscore(pr[j], dd[j], mr[j] != 0, scale, d);
  }
}

template <class T>
void bias_dropout_residual_forward(T* out, uint8_t* mask, const T* y, const T* bias, const T* residual, int64_t M,
                                   int64_t N, double p, uint64_t key) {
  if (mask == nullptr) {  // no dropout in this graph: keep everything, scale 1 (x·1 is x exactly)
    for (int64_t i = 0; i < M * N; ++i)
      out[i] = math::bias_dropout_residual_value(y[i], bias[i % N], residual[i], true, T(1));
    return;
  }
  const DropoutRule<T> rule(p);
  rule.draw(mask, static_cast<size_t>(M * N), key, 0);
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t i = m * N + n;
      out[i] = math::bias_dropout_residual_value(y[i], bias[n], residual[i], mask[i] != 0, rule.scale);
    }
}

template <class T>
void bias_dropout_residual_backward(T* dy, T* dbias, const T* dout, const uint8_t* mask, int64_t M, int64_t N,
                                    double p) {
  const T scale = mask == nullptr ? T(1) : math::dropout_scale<T>(p);
  std::vector<T> column_sums(static_cast<size_t>(N), T(0));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const int64_t i = m * N + n;
      dy[i] = math::dropout_apply(dout[i], mask == nullptr || mask[i] != 0, scale);
      column_sums[static_cast<size_t>(n)] += dy[i];
    }
  for (int64_t n = 0; n < N; ++n) dbias[n] += column_sums[static_cast<size_t>(n)];
}

#define PTSIM_FUSED_DROPOUT_KERNELS(T)                                                                          \
  template void softmax_dropout_forward<T>(T*, T*, uint8_t*, const T*, int64_t, int64_t, const SoftmaxMask&,    \
                                           double, uint64_t);                                                   \
  template void softmax_dropout_backward<T>(T*, const T*, const T*, const uint8_t*, int64_t, int64_t, double);  \
  template void bias_dropout_residual_forward<T>(T*, uint8_t*, const T*, const T*, const T*, int64_t, int64_t,  \
                                                 double, uint64_t);                                             \
  template void bias_dropout_residual_backward<T>(T*, T*, const T*, const uint8_t*, int64_t, int64_t, double);
PTSIM_FUSED_DROPOUT_KERNELS(float)
PTSIM_FUSED_DROPOUT_KERNELS(double)
#undef PTSIM_FUSED_DROPOUT_KERNELS

}  // namespace ptsim::runtime::cpu
